/* tests/c/test_cpu_attention.c: the attention family's CPU kernels against their
 * references.
 *
 * "kv_cache_write" equals "kv_cache_write_reference" byte for byte, and both equal the
 * rows they were given: the three dtypes, int32 and int64 slots, k and v as views into
 * one packed qkv buffer and contiguous, negative slots skipped, enough tokens to spread
 * over the pool; rows no slot names are untouched; a slot out of range is an error naming
 * the token and the value that writes nothing; bad sizes, strides and dtypes are refused.
 *
 * "merge_attn_states" at every SIMD level this CPU has, against the double-precision
 * "merge_attn_states_reference": within fp32 rounding of the weighted terms plus one unit
 * of the output's rounding; every level gives level 0's bits; the edges (an empty side,
 * -inf or +inf; both empty; a NaN lse) are exact; in place (o is o_a) gives the same bits;
 * bad sizes and dtypes are refused. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "elems.h"
#include "cpu/simd.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "tileops/status.h"

static uint32_t g_rng = 4242u;

static uint32_t rnd_u(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

static float rnd(void) { /* uniform in [-2, 2) */
    return (float)(rnd_u() & 0xffffff) / (float)(1 << 22) - 2.0f;
}

static int lookup(const char *name) {
    int h = -1;
    tileops_status_t st = tileops_cpu_kernel_lookup(name, &h);
    CHECK(st == TILEOPS_OK && h >= 0, "kernel %s registered", name);
    return h;
}

/* ---- kv_cache_write -------------------------------------------------------------------- */

typedef struct kv_case {
    int64_t T, H, D, num_slots, st, sh; /* k's and v's strides (elements) */
    int dt, sdt;
} kv_case_t;

static tileops_status_t kv_run(int h, const kv_case_t *c, const void *k, const void *v, void *kc, void *vc,
                               const void *slots) {
    tileops_arg_t a[15];
    a[0].p = (uintptr_t)k; a[1].p = (uintptr_t)v; a[2].p = (uintptr_t)kc; a[3].p = (uintptr_t)vc;
    a[4].p = (uintptr_t)slots;
    a[5].q = c->T; a[6].q = c->H; a[7].q = c->D; a[8].q = c->num_slots;
    a[9].q = c->st; a[10].q = c->sh; a[11].q = c->st; a[12].q = c->sh;
    a[13].i = c->dt; a[14].i = c->sdt;
    return tileops_cpu_kernel_launch(h, a, 15);
}

/* slot t of T: a random permutation of [0, num_slots) with every fifth token -1 */
static void make_slots(void *slots, int64_t T, int64_t num_slots, int sdt) {
    int64_t *perm = malloc((size_t)num_slots * sizeof *perm);
    for (int64_t i = 0; i < num_slots; i++) perm[i] = i;
    for (int64_t i = num_slots - 1; i > 0; i--) {
        const int64_t j = (int64_t)(rnd_u() % (uint32_t)(i + 1)), x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (int64_t t = 0; t < T; t++) {
        const int64_t s = t % 5 == 4 ? -1 : perm[t];
        if (sdt == TILEOPS_INT32) ((int32_t *)slots)[t] = (int32_t)s;
        else ((int64_t *)slots)[t] = s;
    }
    free(perm);
}

static int64_t slot_of(const void *slots, int64_t t, int sdt) {
    return sdt == TILEOPS_INT32 ? ((const int32_t *)slots)[t] : ((const int64_t *)slots)[t];
}

static void kv_case(int fast, int ref, kv_case_t c, int packed) {
    const int64_t es = (int64_t)tileops_dtype_size(c.dt), row = c.H * c.D;
    /* packed: k at 0, v at H D of rows of (2 H + 2) D + 3 elements (a qkv buffer with q after) */
    c.sh = c.D;
    c.st = packed ? (2 * c.H + 2) * c.D + 3 : row;
    const int64_t src_elems = c.T > 0 ? (c.T - 1) * c.st + (packed ? 2 * row : row) : 0;
    char *src = malloc((size_t)((src_elems + 1) * es)), *src_v = malloc((size_t)((src_elems + 1) * es));
    for (int64_t i = 0; i < src_elems; i++) {
        elem_put(src, i, c.dt, rnd());
        elem_put(src_v, i, c.dt, rnd());
    }
    const char *k = src, *v = packed ? src + row * es : src_v;
    const size_t cache_bytes = (size_t)(c.num_slots * row * es);
    char *kc[2], *vc[2], *init = malloc(cache_bytes + 1);
    for (size_t i = 0; i < cache_bytes; i++) init[i] = (char)rnd_u();
    for (int w = 0; w < 2; w++) {
        kc[w] = malloc(cache_bytes + 1);
        vc[w] = malloc(cache_bytes + 1);
        memcpy(kc[w], init, cache_bytes);
        memcpy(vc[w], init, cache_bytes);
    }
    void *slots = malloc((size_t)(c.T + 1) * 8);
    make_slots(slots, c.T, c.num_slots, c.sdt);
    CHECK(kv_run(fast, &c, k, v, kc[0], vc[0], slots) == TILEOPS_OK, "kv_cache_write ran: %s", tileops_last_error());
    CHECK(kv_run(ref, &c, k, v, kc[1], vc[1], slots) == TILEOPS_OK, "reference ran: %s", tileops_last_error());
    CHECK(!memcmp(kc[0], kc[1], cache_bytes) && !memcmp(vc[0], vc[1], cache_bytes),
          "fast == reference (dt %d sdt %d T %lld H %lld D %lld packed %d)", c.dt, c.sdt, (long long)c.T,
          (long long)c.H, (long long)c.D, packed);
    /* each written row is its token's; every other row as it was */
    char *seen = calloc((size_t)c.num_slots + 1, 1);
    int rows_ok = 1;
    for (int64_t t = 0; t < c.T; t++) {
        const int64_t s = slot_of(slots, t, c.sdt);
        if (s < 0)
            continue;
        seen[s] = 1;
        for (int64_t hh = 0; hh < c.H; hh++)
            rows_ok &= !memcmp(kc[0] + (s * row + hh * c.D) * es, k + (t * c.st + hh * c.sh) * es, (size_t)(c.D * es))
                       && !memcmp(vc[0] + (s * row + hh * c.D) * es, v + (t * c.st + hh * c.sh) * es,
                                  (size_t)(c.D * es));
    }
    for (int64_t s = 0; s < c.num_slots; s++)
        if (!seen[s])
            rows_ok &= !memcmp(kc[0] + s * row * es, init + s * row * es, (size_t)(row * es))
                       && !memcmp(vc[0] + s * row * es, init + s * row * es, (size_t)(row * es));
    CHECK(rows_ok, "rows written where their slots say, the others untouched (T %lld H %lld D %lld)", (long long)c.T,
          (long long)c.H, (long long)c.D);
    free(seen);
    free(slots);
    for (int w = 0; w < 2; w++) {
        free(kc[w]);
        free(vc[w]);
    }
    free(init);
    free(src);
    free(src_v);
}

static void kv_refusals(int fast) {
    const int64_t H = 2, D = 8, T = 4, num_slots = 12;
    float k[4 * 2 * 8] = {0}, kc[12 * 2 * 8], vc[12 * 2 * 8], before[12 * 2 * 8];
    for (int i = 0; i < 12 * 2 * 8; i++) before[i] = kc[i] = vc[i] = (float)i;
    int64_t slots[4] = {3, -1, 12, 5};
    kv_case_t c = {T, H, D, num_slots, H * D, D, TILEOPS_FLOAT32, TILEOPS_INT64};
    tileops_status_t st = kv_run(fast, &c, k, k, kc, vc, slots);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "slot_mapping[2] = 12") != NULL,
          "a slot out of range names the token and value: %s", tileops_last_error());
    CHECK(!memcmp(kc, before, sizeof kc) && !memcmp(vc, before, sizeof vc), "nothing was written");
    slots[2] = -7; /* any negative slot skips */
    CHECK(kv_run(fast, &c, k, k, kc, vc, slots) == TILEOPS_OK, "a negative slot is skipped");
    struct { kv_case_t c; const char *what; } bad[] = {
        {{T, H, D, num_slots, H * D, D, 3, TILEOPS_INT64}, "int32 data"},
        {{T, H, D, num_slots, H * D, D, TILEOPS_FLOAT32, TILEOPS_FLOAT32}, "float slots"},
        {{-1, H, D, num_slots, H * D, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "T = -1"},
        {{T, 0, D, num_slots, H * D, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "H = 0"},
        {{T, H, 0, num_slots, H * D, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "D = 0"},
        {{T, H, D, -1, H * D, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "num_slots = -1"},
        {{T, H, D, num_slots, -1, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "a negative stride"},
        {{T, H, D, INT64_MAX / 2, H * D, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "caches beyond int64 bytes"},
        {{T, H, D, num_slots, INT64_MAX / 2, D, TILEOPS_FLOAT32, TILEOPS_INT64}, "k beyond int64 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(kv_run(fast, &bad[i].c, k, k, kc, vc, slots) == TILEOPS_ERR_INVALID_ARGUMENT, "%s refused", bad[i].what);
    CHECK(kv_run(fast, &c, k, k, kc, vc, NULL) == TILEOPS_ERR_INVALID_ARGUMENT, "NULL slots refused");
    CHECK(kv_run(fast, &c, NULL, k, kc, vc, slots) == TILEOPS_ERR_INVALID_ARGUMENT, "NULL k refused");
    c.T = 0;
    CHECK(kv_run(fast, &c, NULL, NULL, NULL, NULL, NULL) == TILEOPS_OK, "T = 0 touches nothing");
}

/* ---- merge_attn_states ------------------------------------------------------------------- */

static tileops_status_t merge_run(int h, const void *oa, const float *la, const void *ob, const float *lb, void *o,
                                  float *lse, int64_t rows, int64_t D, int dt) {
    tileops_arg_t a[9];
    a[0].p = (uintptr_t)oa; a[1].p = (uintptr_t)la; a[2].p = (uintptr_t)ob; a[3].p = (uintptr_t)lb;
    a[4].p = (uintptr_t)o; a[5].p = (uintptr_t)lse;
    a[6].q = rows; a[7].q = D; a[8].i = dt;
    return tileops_cpu_kernel_launch(h, a, 9);
}

static int same_float(float a, float b) { return a == b || (a != a && b != b); }

/* rows 0..4 take the edges: a empty (-inf), b empty (+inf), both empty, NaN in a, NaN in
 * b with a empty; the rest random lse in [-8, 8) */
static void make_lse(float *la, float *lb, int64_t rows) {
    for (int64_t r = 0; r < rows; r++) {
        la[r] = 4.0f * rnd();
        lb[r] = 4.0f * rnd();
    }
    const float edges[5][2] = {{-INFINITY, 1.5f}, {0.25f, INFINITY}, {-INFINITY, INFINITY}, {NAN, 1.0f},
                               {-INFINITY, NAN}};
    for (int64_t r = 0; r < rows && r < 5; r++) {
        la[r] = edges[r][0];
        lb[r] = edges[r][1];
    }
}

static void merge_case(int fast, int ref, int64_t rows, int64_t D, int dt) {
    const int64_t n = rows * D, es = (int64_t)tileops_dtype_size(dt);
    char *oa = malloc((size_t)(n * es + 1)), *ob = malloc((size_t)(n * es + 1));
    char *o_ref = malloc((size_t)(n * es + 1)), *o0 = malloc((size_t)(n * es + 1)), *o = malloc((size_t)(n * es + 1));
    float *la = malloc((size_t)(rows + 1) * 4), *lb = malloc((size_t)(rows + 1) * 4);
    float *l_ref = malloc((size_t)(rows + 1) * 4), *l0 = malloc((size_t)(rows + 1) * 4), *l = malloc((size_t)(rows + 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        elem_put(oa, i, dt, rnd());
        elem_put(ob, i, dt, rnd());
    }
    make_lse(la, lb, rows);
    CHECK(merge_run(ref, oa, la, ob, lb, o_ref, l_ref, rows, D, dt) == TILEOPS_OK, "reference ran");
    /* the reference itself on the edges: exact */
    int edges_ok = 1;
    for (int64_t r = 0; r < rows && r < 5; r++)
        for (int64_t i = 0; i < D; i++) {
            const float got = elem_get(o_ref, r * D + i, dt);
            const float want = r == 0 ? elem_get(ob, r * D + i, dt) : r == 1 ? elem_get(oa, r * D + i, dt) : r == 2 ? 0.0f : NAN;
            edges_ok &= same_float(got, want);
        }
    if (rows >= 5)
        edges_ok &= l_ref[0] == 1.5f && l_ref[1] == 0.25f && l_ref[2] == -INFINITY && l_ref[3] != l_ref[3] &&
                    l_ref[4] != l_ref[4];
    CHECK(edges_ok, "the reference's edges (dt %d D %lld)", dt, (long long)D);
    const double unit = dt == TILEOPS_FLOAT32 ? 0.0 : dt == TILEOPS_FLOAT16 ? 1.0 / 1024 : 1.0 / 128;
    for (int level = 0; level <= tileops_cpu_simd_detect(); level++) {
        if (tileops_cpu_simd_override(level) != TILEOPS_OK)
            continue;
        CHECK(merge_run(fast, oa, la, ob, lb, o, l, rows, D, dt) == TILEOPS_OK, "fast ran");
        double worst = 0.0;
        int lse_ok = 1;
        for (int64_t r = 0; r < rows; r++) {
            const double a = la[r], b = lb[r], m = a > b ? a : b;
            const double wa = isfinite(a) && isfinite(b) ? exp(a - m) : 0.0, wb = isfinite(a) && isfinite(b) ? exp(b - m) : 0.0;
            lse_ok &= same_float(l[r], l_ref[r]) || fabs((double)l[r] - l_ref[r]) <= 4e-7 * fabs((double)l_ref[r]) + 1e-7;
            for (int64_t i = 0; i < D; i++) {
                const double got = elem_get(o, r * D + i, dt), want = elem_get(o_ref, r * D + i, dt);
                if (r < 5 || !isfinite(a) || !isfinite(b)) {
                    worst = same_float((float)got, (float)want) ? worst : INFINITY;
                    continue;
                }
                /* fp32: pa, pb, pb y and the fma each round once; then the output's unit */
                const double terms = (wa * fabs((double)elem_get(oa, r * D + i, dt)) + wb * fabs((double)elem_get(ob, r * D + i, dt))) /
                                     (wa + wb);
                const double bound = 4.0 * ldexp(terms, -24) + unit * fabs(want) + 1e-30;
                const double e = fabs(got - want) / bound;
                worst = e > worst ? e : worst;
            }
        }
        CHECK(worst <= 1.0, "dt %d rows %lld D %lld level %d: error %.3g of the bound", dt, (long long)rows,
              (long long)D, level, worst);
        CHECK(lse_ok, "lse (dt %d D %lld level %d)", dt, (long long)D, level);
        if (level == 0) {
            memcpy(o0, o, (size_t)(n * es));
            memcpy(l0, l, (size_t)(rows * 4));
        } else {
            CHECK(!memcmp(o0, o, (size_t)(n * es)) && !memcmp(l0, l, (size_t)(rows * 4)),
                  "level %d gives level 0's bits (dt %d D %lld)", level, dt, (long long)D);
        }
        /* in place: o is o_a */
        char *io = malloc((size_t)(n * es + 1));
        memcpy(io, oa, (size_t)(n * es));
        CHECK(merge_run(fast, io, la, ob, lb, io, l, rows, D, dt) == TILEOPS_OK && !memcmp(io, o, (size_t)(n * es)),
              "in place gives the same bits (dt %d D %lld level %d)", dt, (long long)D, level);
        free(io);
    }
    tileops_cpu_simd_override(-1);
    free(oa); free(ob); free(o_ref); free(o0); free(o);
    free(la); free(lb); free(l_ref); free(l0); free(l);
}

static void merge_refusals(int fast) {
    float buf[64] = {0}, lse[4] = {0};
    CHECK(merge_run(fast, buf, lse, buf, lse, buf, lse, 2, 8, 3) == TILEOPS_ERR_INVALID_ARGUMENT, "int32 refused");
    CHECK(merge_run(fast, buf, lse, buf, lse, buf, lse, -1, 8, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "rows -1 refused");
    CHECK(merge_run(fast, buf, lse, buf, lse, buf, lse, 2, -1, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "D -1 refused");
    CHECK(merge_run(fast, buf, lse, buf, lse, buf, lse, INT64_MAX / 8, 8, 0) == TILEOPS_ERR_INVALID_ARGUMENT,
          "rows beyond int64 bytes refused");
    CHECK(merge_run(fast, buf, NULL, buf, lse, buf, lse, 2, 8, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "NULL lse_a refused");
    CHECK(merge_run(fast, NULL, NULL, NULL, NULL, NULL, NULL, 0, 8, 0) == TILEOPS_OK, "rows = 0 touches nothing");
    float lb[2] = {1.0f, -INFINITY}, la[2] = {-INFINITY, 2.0f}, out_l[2];
    CHECK(merge_run(fast, buf, la, buf, lb, buf + 32, out_l, 2, 0, 0) == TILEOPS_OK && out_l[0] == 1.0f &&
          out_l[1] == 2.0f, "D = 0 still merges each row's lse");
}

int main(void) {
    const int kv = lookup("kv_cache_write"), kv_ref = lookup("kv_cache_write_reference");
    const int mg = lookup("merge_attn_states"), mg_ref = lookup("merge_attn_states_reference");
    const int dts[3] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 2; s++) {
            const int sdt = s ? TILEOPS_INT32 : TILEOPS_INT64;
            const int64_t shapes[][4] = {{0, 2, 8, 12}, {1, 1, 7, 3}, {5, 3, 7, 40}, {37, 8, 128, 48}, {37, 2, 64, 64}};
            for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
                for (int packed = 0; packed < 2; packed++) {
                    kv_case_t c = {shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 0, 0, dts[d], sdt};
                    kv_case(kv, kv_ref, c, packed);
                }
        }
    /* enough tokens for several workers: 2048 tokens of 8 x 128 fp16 (4 KiB a token) */
    kv_case_t big = {2048, 8, 128, 4096, 0, 0, TILEOPS_FLOAT16, TILEOPS_INT64};
    kv_case(kv, kv_ref, big, 1);
    kv_refusals(kv);

    const int64_t Ds[] = {1, 7, 16, 128, 130};
    for (int d = 0; d < 3; d++)
        for (size_t i = 0; i < sizeof Ds / sizeof Ds[0]; i++) {
            merge_case(mg, mg_ref, 0, Ds[i], dts[d]);
            merge_case(mg, mg_ref, 5, Ds[i], dts[d]);
            merge_case(mg, mg_ref, 300, Ds[i], dts[d]);
        }
    merge_case(mg, mg_ref, 4096, 128, TILEOPS_BFLOAT16); /* several workers */
    merge_refusals(mg);
    return check_summary();
}
