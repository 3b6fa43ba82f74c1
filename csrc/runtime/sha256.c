/* runtime/sha256.c: SHA-256 as FIPS 180-4 section 6.2 describes it, and HMAC (RFC 2104)
 * on top. Big-endian words, 64 rounds per 64-byte block, the message padded with 0x80,
 * zeros and its bit length as a 64-bit big-endian number. Known answers are checked in
 * tests/c/test_disk_cache_attacks.c (FIPS 180-4 examples, RFC 4231 cases). */
#include "runtime/sha256.h"

#include <string.h>

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32u - n)); }

/* FIPS 180-4 6.2.2: one 512-bit block into the hash state. */
static void compress(uint32_t h[8], const unsigned char *block) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
               (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t big1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + big1 + ch + K[t] + w[t];
        uint32_t big0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = big0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void tileops_sha256_init(tileops_sha256_t *s) {
    /* FIPS 180-4 5.3.3: the fractional parts of the square roots of the first 8 primes */
    static const uint32_t H0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(s->h, H0, sizeof H0);
    s->total = 0;
    s->used = 0;
}

void tileops_sha256_update(tileops_sha256_t *s, const void *data, size_t len) {
    const unsigned char *p = data;
    if (len == 0)
        return;
    s->total += len;
    if (s->used) {
        size_t take = TILEOPS_SHA256_BLOCK - s->used;
        if (take > len)
            take = len;
        memcpy(s->buf + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used < TILEOPS_SHA256_BLOCK)
            return;
        compress(s->h, s->buf);
        s->used = 0;
    }
    while (len >= TILEOPS_SHA256_BLOCK) {
        compress(s->h, p);
        p += TILEOPS_SHA256_BLOCK;
        len -= TILEOPS_SHA256_BLOCK;
    }
    if (len) {
        memcpy(s->buf, p, len);
        s->used = len;
    }
}

void tileops_sha256_final(tileops_sha256_t *s, unsigned char out[TILEOPS_SHA256_BYTES]) {
    uint64_t bits = s->total * 8u;
    /* FIPS 180-4 5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, the 64-bit length */
    s->buf[s->used++] = 0x80;
    if (s->used > 56) {
        memset(s->buf + s->used, 0, TILEOPS_SHA256_BLOCK - s->used);
        compress(s->h, s->buf);
        s->used = 0;
    }
    memset(s->buf + s->used, 0, 56 - s->used);
    for (int i = 0; i < 8; i++)
        s->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    compress(s->h, s->buf);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
    memset(s, 0, sizeof *s);
}

void tileops_sha256(const void *data, size_t len, unsigned char out[TILEOPS_SHA256_BYTES]) {
    tileops_sha256_t s;
    tileops_sha256_init(&s);
    tileops_sha256_update(&s, data, len);
    tileops_sha256_final(&s, out);
}

void tileops_hmac_sha256(const void *key, size_t key_len, const tileops_hmac_piece_t *pieces,
                         int n, unsigned char out[TILEOPS_SHA256_BYTES]) {
    /* RFC 2104: H((K ^ opad) || H((K ^ ipad) || message)), K hashed first when longer
     * than a block and zero-padded to a block */
    unsigned char k[TILEOPS_SHA256_BLOCK], pad[TILEOPS_SHA256_BLOCK], inner[TILEOPS_SHA256_BYTES];
    tileops_sha256_t s;
    memset(k, 0, sizeof k);
    if (key_len > TILEOPS_SHA256_BLOCK)
        tileops_sha256(key, key_len, k);
    else if (key_len)
        memcpy(k, key, key_len);
    for (int i = 0; i < TILEOPS_SHA256_BLOCK; i++)
        pad[i] = (unsigned char)(k[i] ^ 0x36);
    tileops_sha256_init(&s);
    tileops_sha256_update(&s, pad, sizeof pad);
    for (int i = 0; i < n; i++)
        if (pieces[i].len)
            tileops_sha256_update(&s, pieces[i].data, pieces[i].len);
    tileops_sha256_final(&s, inner);
    for (int i = 0; i < TILEOPS_SHA256_BLOCK; i++)
        pad[i] = (unsigned char)(k[i] ^ 0x5c);
    tileops_sha256_init(&s);
    tileops_sha256_update(&s, pad, sizeof pad);
    tileops_sha256_update(&s, inner, sizeof inner);
    tileops_sha256_final(&s, out);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}

int tileops_equal_ct(const void *a, const void *b, size_t len) {
    const unsigned char *x = a, *y = b;
    unsigned char diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= (unsigned char)(x[i] ^ y[i]);
    return diff == 0;
}
