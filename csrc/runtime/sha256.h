/* runtime/sha256.h: the bottom layer of the CUDA runtime - SHA-256 (FIPS 180-4) and
 * HMAC-SHA256 (RFC 2104), written for the disk cache: an entry is bound to its key by a
 * SHA-256 of the key and authenticated by an HMAC made with the cache's secret. Depends
 * on nothing; pure computation over bytes. */
#ifndef TILEOPS_RUNTIME_SHA256_H
#define TILEOPS_RUNTIME_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define TILEOPS_SHA256_BYTES 32
#define TILEOPS_SHA256_BLOCK 64

typedef struct tileops_sha256 {
    uint32_t h[8];
    uint64_t total;                          /* bytes absorbed so far */
    unsigned char buf[TILEOPS_SHA256_BLOCK]; /* a partial block */
    size_t used;                             /* bytes in buf */
} tileops_sha256_t;

void tileops_sha256_init(tileops_sha256_t *s);
void tileops_sha256_update(tileops_sha256_t *s, const void *data, size_t len);
void tileops_sha256_final(tileops_sha256_t *s, unsigned char out[TILEOPS_SHA256_BYTES]);
void tileops_sha256(const void *data, size_t len, unsigned char out[TILEOPS_SHA256_BYTES]);

/* HMAC-SHA256 over the concatenation of up to `n` pieces (a NULL piece with length 0 is
 * allowed), so a caller can MAC a header and a payload without joining them. */
typedef struct tileops_hmac_piece {
    const void *data;
    size_t len;
} tileops_hmac_piece_t;
void tileops_hmac_sha256(const void *key, size_t key_len, const tileops_hmac_piece_t *pieces,
                         int n, unsigned char out[TILEOPS_SHA256_BYTES]);

/* 1 when the two byte strings are equal, in time that depends only on len. */
int tileops_equal_ct(const void *a, const void *b, size_t len);

#endif /* TILEOPS_RUNTIME_SHA256_H */
