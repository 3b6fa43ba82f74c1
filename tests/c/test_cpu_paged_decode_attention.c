/* tests/c/test_cpu_paged_decode_attention.c: the "paged_decode_attention" CPU kernel against
 * "paged_decode_attention_reference" (double, rounded once) at every SIMD level this CPU
 * has: the three dtypes, group sizes 1, 4 and 7, head sizes 16, 64 and 128, blocks of 16
 * and 5 tokens, lengths 0, mid-block and over several 256-token chunks, shared blocks;
 * every level gives the same bits, and so do one thread (sequence units) and many
 * (chunk units and their fold); lse without o's rounding; a bad length or block id is an
 * error naming it that writes nothing; bad sizes are refused. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/simd.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

static int g_fast, g_ref;
static uint32_t g_rng = 2024u;

static uint32_t next(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}
static float rnd(void) { return (float)(next() & 0xffffff) / (float)(1 << 23) - 1.0f; } /* [-1, 1) */

static float get(const void *p, int64_t i, int dt) {
    if (dt == TILEOPS_FLOAT16) return tileops_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == TILEOPS_BFLOAT16) return tileops_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}
static void put(void *p, int64_t i, int dt, float v) {
    if (dt == TILEOPS_FLOAT16) ((uint16_t *)p)[i] = tileops_f32_to_f16(v);
    else if (dt == TILEOPS_BFLOAT16) ((uint16_t *)p)[i] = tileops_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

typedef struct cfg {
    int64_t B, H, Hkv, D, BS, MB, N;
    int dt;
    float scale;
} cfg_t;

typedef struct bufs {
    void *q, *kc, *vc, *o;
    int32_t *bt, *sl;
    float *lse;
} bufs_t;

static tileops_status_t run(int h, const cfg_t *c, const bufs_t *b, void *o, float *lse) {
    tileops_arg_t a[16];
    a[0].p = (uintptr_t)b->q; a[1].p = (uintptr_t)b->kc; a[2].p = (uintptr_t)b->vc;
    a[3].p = (uintptr_t)b->bt; a[4].p = (uintptr_t)b->sl; a[5].p = (uintptr_t)o; a[6].p = (uintptr_t)lse;
    a[7].q = c->B; a[8].q = c->H; a[9].q = c->Hkv; a[10].q = c->D; a[11].q = c->N; a[12].q = c->BS;
    a[13].q = c->MB; a[14].f = c->scale; a[15].i = c->dt;
    return tileops_cpu_kernel_launch(h, a, 16);
}

/* inputs for `c` and the lengths `lens` (B of them): each sequence's blocks distinct, the
 * last sequence's first block shared with the first's, the table's tails garbage */
static bufs_t make(const cfg_t *c, const int64_t *lens) {
    bufs_t b;
    const int64_t es = (int64_t)tileops_dtype_size(c->dt), qn = c->B * c->H * c->D,
                  cn = c->N * c->BS * c->Hkv * c->D;
    b.q = malloc((size_t)(qn * es + 1));
    b.kc = malloc((size_t)(cn * es + 1));
    b.vc = malloc((size_t)(cn * es + 1));
    b.o = malloc((size_t)(qn * es + 1));
    b.bt = malloc(sizeof(int32_t) * (size_t)(c->B * c->MB + 1));
    b.sl = malloc(sizeof(int32_t) * (size_t)(c->B + 1));
    b.lse = malloc(sizeof(float) * (size_t)(c->B * c->H + 1));
    for (int64_t i = 0; i < qn; i++) put(b.q, i, c->dt, 2.0f * rnd());
    for (int64_t i = 0; i < cn; i++) put(b.kc, i, c->dt, 2.0f * rnd());
    for (int64_t i = 0; i < cn; i++) put(b.vc, i, c->dt, rnd());
    int64_t next_block = 0;
    for (int64_t s = 0; s < c->B; s++) {
        b.sl[s] = (int32_t)lens[s];
        for (int64_t j = 0; j < c->MB; j++)
            b.bt[s * c->MB + j] = (int32_t)(next() | 0x40000000u);   /* garbage */
        for (int64_t j = 0; j < (lens[s] + c->BS - 1) / c->BS; j++)
            b.bt[s * c->MB + j] = (int32_t)(next_block++ % c->N);
    }
    if (c->B > 1 && lens[0] > 0 && lens[c->B - 1] > 0)
        b.bt[(c->B - 1) * c->MB] = b.bt[0];
    return b;
}

static void drop(bufs_t *b) {
    free(b->q); free(b->kc); free(b->vc); free(b->o); free(b->bt); free(b->sl); free(b->lse);
}

static void check_cfg(const cfg_t *c, const int64_t *lens) {
    bufs_t b = make(c, lens);
    const int64_t es = (int64_t)tileops_dtype_size(c->dt), on = c->B * c->H * c->D;
    const char *dn = tileops_dtype_name(c->dt);
    void *ref = malloc((size_t)(on * es + 1)), *lvl0 = malloc((size_t)(on * es + 1));
    float *ref_lse = malloc(sizeof(float) * (size_t)(c->B * c->H + 1)), *lse0 = malloc(sizeof(float) * (size_t)(c->B * c->H + 1));
    CHECK(run(g_ref, c, &b, ref, ref_lse) == TILEOPS_OK, "reference ran: %s", tileops_last_error());
    /* fp32: 1e-5 relative to the output's scale (|v| <= 1); 16-bit: one rounding of the
     * output (2 ulp for the fp32 arithmetic before it) */
    const double tol = c->dt == TILEOPS_FLOAT32 ? 2e-6 : c->dt == TILEOPS_FLOAT16 ? 1.0 / 1024 : 1.0 / 128;
    const int threads = tileops_cpu_num_threads();
    for (int level = 0; level <= tileops_cpu_simd_detect(); level++) {
        if (tileops_cpu_simd_override(level) != TILEOPS_OK)
            continue;
        for (int t = 0; t < 2; t++) {
            tileops_cpu_set_num_threads(t == 0 ? 1 : 64);   /* sequence units; chunk units and the fold */
            memset(b.o, 0xff, (size_t)(on * es));
            CHECK(run(g_fast, c, &b, b.o, b.lse) == TILEOPS_OK, "fast ran: %s", tileops_last_error());
            double worst = 0.0, worst_lse = 0.0;
            for (int64_t i = 0; i < on; i++) {
                const double e = fabs((double)get(b.o, i, c->dt) - (double)get(ref, i, c->dt));
                if (!(e <= worst))
                    worst = e;
            }
            for (int64_t i = 0; i < c->B * c->H; i++) {
                const double e = b.lse[i] == ref_lse[i] ? 0.0 : fabs((double)b.lse[i] - (double)ref_lse[i]);
                if (!(e <= worst_lse))
                    worst_lse = e;
            }
            CHECK(worst <= tol, "%s G=%lld D=%lld BS=%lld level %d threads %d: |o - ref| %.3g > %.3g", dn,
                  (long long)(c->H / c->Hkv), (long long)c->D, (long long)c->BS, level, t, worst, tol);
            CHECK(worst_lse <= 1e-5, "%s G=%lld D=%lld level %d: |lse - ref| %.3g", dn, (long long)(c->H / c->Hkv),
                  (long long)c->D, level, worst_lse);
            if (level == 0 && t == 0) {
                memcpy(lvl0, b.o, (size_t)(on * es));
                memcpy(lse0, b.lse, sizeof(float) * (size_t)(c->B * c->H));
            } else {
                CHECK(!memcmp(lvl0, b.o, (size_t)(on * es)) &&
                          !memcmp(lse0, b.lse, sizeof(float) * (size_t)(c->B * c->H)),
                      "%s G=%lld D=%lld: level %d with %s gives level 0's one-thread bits", dn,
                      (long long)(c->H / c->Hkv), (long long)c->D, level, t ? "chunk units" : "one thread");
            }
        }
    }
    tileops_cpu_simd_override(-1);
    tileops_cpu_set_num_threads(threads);
    /* length 0: o = 0, lse = -inf */
    for (int64_t s = 0; s < c->B; s++)
        if (lens[s] == 0)
            for (int64_t h = 0; h < c->H; h++) {
                CHECK(isinf(b.lse[s * c->H + h]) && b.lse[s * c->H + h] < 0, "length 0: lse -inf");
                CHECK(get(b.o, (s * c->H + h) * c->D, c->dt) == 0.0f, "length 0: o = 0");
            }
    free(ref); free(lvl0); free(ref_lse); free(lse0);
    drop(&b);
}

static void check_errors(void) {
    const cfg_t c = {.B = 3, .H = 4, .Hkv = 2, .D = 16, .BS = 4, .MB = 3, .N = 9, .dt = TILEOPS_FLOAT32, .scale = 0.25f};
    const int64_t lens[3] = {5, 12, 1};
    bufs_t b = make(&c, lens);
    const size_t on = (size_t)(c.B * c.H * c.D) * sizeof(float);
    memset(b.o, 0x5a, on);
    void *before = malloc(on);
    memcpy(before, b.o, on);
    b.sl[1] = 13;
    tileops_status_t st = run(g_fast, &c, &b, b.o, b.lse);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "seq_lens[1] = 13 is outside [0, 12]"),
          "a length past the table: %s", tileops_last_error());
    b.sl[1] = -1;
    st = run(g_ref, &c, &b, b.o, b.lse);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "seq_lens[1] = -1"), "negative: %s",
          tileops_last_error());
    b.sl[1] = 12;
    b.bt[1 * c.MB + 2] = 9;
    st = run(g_fast, &c, &b, b.o, b.lse);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "block_table[1, 2] = 9 is outside [0, 9)"),
          "a block past the cache: %s", tileops_last_error());
    b.bt[1 * c.MB + 2] = -4;
    st = run(g_fast, &c, &b, b.o, b.lse);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "= -4"), "negative block: %s",
          tileops_last_error());
    CHECK(!memcmp(before, b.o, on), "nothing was written");
    b.bt[1 * c.MB + 2] = 2;
    b.bt[2 * c.MB + 1] = -77;   /* sequence 2 holds one block: entry 1 is never read */
    CHECK(run(g_fast, &c, &b, b.o, b.lse) == TILEOPS_OK, "an unused entry is not read: %s", tileops_last_error());
    cfg_t d = c;
    d.D = 40;
    CHECK(run(g_fast, &d, &b, b.o, b.lse) == TILEOPS_ERR_INVALID_ARGUMENT, "D = 40 refused");
    d = c;
    d.H = 3;
    CHECK(run(g_fast, &d, &b, b.o, b.lse) == TILEOPS_ERR_INVALID_ARGUMENT, "H_kv not dividing H refused");
    d = c;
    d.BS = 0;
    CHECK(run(g_fast, &d, &b, b.o, b.lse) == TILEOPS_ERR_INVALID_ARGUMENT, "block_size 0 refused");
    d = c;
    d.dt = TILEOPS_INT32;
    CHECK(run(g_fast, &d, &b, b.o, b.lse) == TILEOPS_ERR_INVALID_ARGUMENT, "int32 data refused");
    CHECK(run(g_fast, &c, &(bufs_t){.q = b.q, .kc = b.kc, .vc = b.vc, .bt = b.bt, .sl = NULL}, b.o, b.lse) ==
              TILEOPS_ERR_INVALID_ARGUMENT, "NULL seq_lens refused");
    d = c;
    d.B = 0;
    CHECK(run(g_fast, &d, &(bufs_t){0}, NULL, NULL) == TILEOPS_OK, "B = 0 touches nothing");
    free(before);
    drop(&b);
}

int main(void) {
    CHECK(tileops_cpu_kernel_lookup("paged_decode_attention", &g_fast) == TILEOPS_OK, "fast kernel registered");
    CHECK(tileops_cpu_kernel_lookup("paged_decode_attention_reference", &g_ref) == TILEOPS_OK, "reference registered");
    const int dts[3] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16};
    const int64_t lens[4] = {0, 37, 600, 300};
    for (int k = 0; k < 3; k++) {
        cfg_t c = {.B = 4, .H = 8, .Hkv = 2, .D = 64, .BS = 16, .MB = 40, .N = 100, .dt = dts[k], .scale = 0.125f};
        check_cfg(&c, lens);
        c.H = 7; c.Hkv = 1; c.D = 16; c.BS = 5; c.MB = 128; c.N = 300; c.scale = 0.3f;  /* G 7, 5-token blocks */
        check_cfg(&c, lens);
        c.H = 2; c.Hkv = 2; c.D = 128; c.BS = 16; c.MB = 40; c.N = 100; c.scale = 0.088f; /* MHA, D 128 */
        check_cfg(&c, lens);
    }
    check_errors();
    return check_summary();
}
