/* test_cpu_sampling.c: checks the sampling family's CPU kernels (softmax, argmax, top_k,
 * top_k_top_p_mask, sample_from_probs; csrc/ops/sampling/), reached through the kernel table
 * as the binding reaches them.
 *
 * 1. Every kernel x dtype x row length (one chunk and several: the kernels split rows in
 *    chunks of 8192 / 16384) with random rows and rows of special values: the fast kernel
 *    gives the same bytes at every SIMD level this CPU has and at 1 and 4 threads, and a
 *    row the same bytes alone as in its batch (batch invariance).
 * 2. The fast kernels against their references: argmax, top_k and sample_from_probs
 *    exactly; softmax (float32 output) within 1e-5 relative of the double reference (which
 *    divides by the temperature in double: the float32 z = x / t alone moves exp(z) by up
 *    to |z| 2^-24); top_k_top_p_mask exactly but at the nucleus' edge, where an
 *    element's mass before may be within 1e-5 of p (the fast kernel's float32 weights).
 * 3. Bad arguments are refused with TILEOPS_ERR_INVALID_ARGUMENT.
 * Inputs come from a fixed xorshift generator, so a failure reproduces. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "tileops/status.h"

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))
enum { SOFTMAX, ARGMAX, TOP_K, TKP, SAMPLE, N_OPS };
static const char *const k_names[N_OPS] = {"softmax", "argmax", "top_k", "top_k_top_p_mask", "sample_from_probs"};
static int g_fast[N_OPS], g_ref[N_OPS];
static const int64_t k_vs[] = {1, 7, 300, 8193, 20001};
#define B 4

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(double lo, double hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (hi - lo) * (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

static void *xcalloc(size_t bytes) {
    void *p = calloc(bytes > 0 ? bytes : 1, 1);
    if (p == NULL) {
        printf("FAIL: out of memory for %zu bytes in the test itself\n", bytes);
        exit(1);
    }
    return p;
}

/* One call's arguments and outputs. */
typedef struct call {
    int op, dt;
    int64_t rows, V, k; /* k: top_k's k */
    void *x;            /* logits or probs [rows, V] */
    float *t, *p, *q;   /* temperature / p [rows], q [rows, V] */
    int32_t *kk;        /* top_k_top_p_mask's k [rows] */
    void *y;            /* probs / masked [rows, V] */
    void *values;       /* top_k [rows, k] */
    int64_t *idx;       /* top_k [rows, k], token [rows] */
} call_t;

static size_t es(int dt) { return tileops_dtype_size(dt); }

static tileops_status_t run(const call_t *c, int reference) {
    const int h = reference ? g_ref[c->op] : g_fast[c->op];
    tileops_arg_t a[8];
    int n = 0;
    switch (c->op) {
    case SOFTMAX: /* pppqqii */
        a[0].p = (uintptr_t)c->x, a[1].p = (uintptr_t)c->t, a[2].p = (uintptr_t)c->y;
        a[3].q = c->rows, a[4].q = c->V, a[5].i = c->dt, a[6].i = TILEOPS_FLOAT32, n = 7;
        break;
    case ARGMAX: /* ppqqi */
        a[0].p = (uintptr_t)c->x, a[1].p = (uintptr_t)c->idx, a[2].q = c->rows, a[3].q = c->V, a[4].i = c->dt, n = 5;
        break;
    case TOP_K: /* pppqqqi */
        a[0].p = (uintptr_t)c->x, a[1].p = (uintptr_t)c->values, a[2].p = (uintptr_t)c->idx;
        a[3].q = c->rows, a[4].q = c->V, a[5].q = c->k, a[6].i = c->dt, n = 7;
        break;
    case TKP: /* ppppqqii */
        a[0].p = (uintptr_t)c->x, a[1].p = (uintptr_t)c->kk, a[2].p = (uintptr_t)c->p, a[3].p = (uintptr_t)c->y;
        a[4].q = c->rows, a[5].q = c->V, a[6].i = c->dt, a[7].i = TILEOPS_INT32, n = 8;
        break;
    default: /* SAMPLE: pppqqi */
        a[0].p = (uintptr_t)c->x, a[1].p = (uintptr_t)c->q, a[2].p = (uintptr_t)c->idx;
        a[3].q = c->rows, a[4].q = c->V, a[5].i = c->dt, n = 6;
        break;
    }
    return tileops_cpu_kernel_launch(h, a, n);
}

/* the bytes a call writes, for comparisons */
static size_t out_bytes(const call_t *c) {
    switch (c->op) {
    case SOFTMAX: return (size_t)(c->rows * c->V) * 4;
    case TKP: return (size_t)(c->rows * c->V) * es(c->dt);
    case TOP_K: return (size_t)(c->rows * c->k) * (8 + es(c->dt));
    default: return (size_t)c->rows * 8;
    }
}
static void copy_out(const call_t *c, unsigned char *dst) {
    if (c->op == SOFTMAX || c->op == TKP)
        memcpy(dst, c->y, out_bytes(c));
    else if (c->op == TOP_K) {
        memcpy(dst, c->idx, (size_t)(c->rows * c->k) * 8);
        memcpy(dst + (size_t)(c->rows * c->k) * 8, c->values, (size_t)(c->rows * c->k) * es(c->dt));
    } else
        memcpy(dst, c->idx, (size_t)c->rows * 8);
}

static call_t make(int op, int dt, int64_t rows, int64_t V, int special) {
    call_t c = {.op = op, .dt = dt, .rows = rows, .V = V, .k = V < 37 ? V : 37};
    c.x = xcalloc((size_t)(rows * V) * es(dt));
    c.y = xcalloc((size_t)(rows * V) * 4);
    c.values = xcalloc((size_t)(rows * c.k) * 4);
    c.idx = xcalloc((size_t)(rows * (c.k > 1 ? c.k : 1)) * 8);
    c.t = xcalloc((size_t)rows * 4);
    c.p = xcalloc((size_t)rows * 4);
    c.kk = xcalloc((size_t)rows * 4);
    c.q = xcalloc((size_t)(rows * V) * 4);
    for (int64_t r = 0; r < rows; r++) {
        c.t[r] = (float)urand(0.3, 2.0);
        c.p[r] = (float)urand(-0.1, 1.2);
        c.kk[r] = (int32_t)urand(-1.0, (double)V + 2.0);
        for (int64_t i = 0; i < V; i++) {
            double v = op == SAMPLE ? urand(0.0, 1.0) : urand(-8.0, 8.0);
            if (special && i % 97 == 3)
                v = (i / 97) % 2 ? -INFINITY : round(v); /* ties and -inf */
            vec16_store1(c.x, r * V + i, dt, (float)v);
            c.q[r * V + i] = (float)-log(urand(1e-12, 1.0));
        }
    }
    if (special && rows > 1) /* a NaN in row 1 */
        vec16_store1(c.x, 1 * V + V / 2, dt, NAN);
    return c;
}

static void drop(call_t *c) {
    free(c->x), free(c->y), free(c->values), free(c->idx), free(c->t), free(c->p), free(c->kk), free(c->q);
}

/* the float64 mass before element i of row r in top_k_top_p_mask's order, over what top-k
 * keeps, as a fraction of the total; -1 where top-p does not apply */
static double mass_before(const call_t *c, int64_t r, int64_t i) {
    const int64_t V = c->V;
    double m = -INFINITY;
    for (int64_t j = 0; j < V; j++) {
        const double v = vec16_load1(c->x, r * V + j, c->dt);
        if (v != v)
            return -1;
        m = v > m ? v : m;
    }
    if (!(c->p[r] < 1.0f) || !isfinite(m))
        return -1;
    /* the k-th largest, by counting */
    double kth = -INFINITY;
    if (c->kk[r] >= 1 && c->kk[r] < V) {
        double *s = xcalloc((size_t)V * sizeof(double));
        for (int64_t j = 0; j < V; j++)
            s[j] = vec16_load1(c->x, r * V + j, c->dt);
        for (int64_t a = 0; a < c->kk[r]; a++) /* partial selection: the kk largest to the front */
            for (int64_t b2 = a + 1; b2 < V; b2++)
                if (s[b2] > s[a]) {
                    const double t = s[a];
                    s[a] = s[b2], s[b2] = t;
                }
        kth = s[c->kk[r] - 1];
        free(s);
    }
    const double xi = vec16_load1(c->x, r * V + i, c->dt);
    double z = 0, before = 0;
    for (int64_t j = 0; j < V; j++) {
        const double v = vec16_load1(c->x, r * V + j, c->dt);
        if (v < kth)
            continue;
        z += exp(v - m);
        if (v > xi || (v == xi && j < i))
            before += exp(v - m);
    }
    return before / z;
}

static void check_op(int op, int dt, int64_t V, int special) {
    call_t c = make(op, dt, B, V, special);
    const size_t nb = out_bytes(&c);
    unsigned char *first = xcalloc(nb), *got = xcalloc(nb);
    /* 1. every SIMD level and thread count: the same bytes */
    int have = 0;
    for (int level = 0; level <= TILEOPS_SIMD_AVX512; level++) {
        if (tileops_cpu_simd_override(level) != TILEOPS_OK)
            continue;
        for (int threads = 1; threads <= 4; threads += 3) {
            tileops_cpu_set_num_threads(threads);
            CHECK(run(&c, 0) == TILEOPS_OK, "%s dt %d V %lld: the fast kernel failed", k_names[op], dt, (long long)V);
            copy_out(&c, have ? got : first);
            if (have)
                CHECK(memcmp(first, got, nb) == 0, "%s dt %d V %lld: level %d, %d threads: other bytes", k_names[op],
                      dt, (long long)V, level, threads);
            have = 1;
        }
    }
    tileops_cpu_simd_override(-1);
    tileops_cpu_set_num_threads(4);
    /* batch invariance: each row alone gives its bytes in the batch */
    for (int64_t r = 0; r < B; r++) {
        call_t one = c;
        one.rows = 1;
        one.x = (char *)c.x + (size_t)(r * V) * es(dt);
        one.t = c.t + r, one.p = c.p + r, one.kk = c.kk + r, one.q = c.q + r * V;
        one.y = xcalloc((size_t)V * 4), one.values = xcalloc((size_t)c.k * 4), one.idx = xcalloc((size_t)(c.k + 1) * 8);
        CHECK(run(&one, 0) == TILEOPS_OK, "one row");
        const size_t ob = out_bytes(&one);
        unsigned char *o = xcalloc(ob);
        copy_out(&one, o);
        if (op == TOP_K)
            CHECK(memcmp(o, first + (size_t)(r * c.k) * 8, (size_t)c.k * 8) == 0 &&
                      memcmp(o + (size_t)c.k * 8, first + (size_t)(B * c.k) * 8 + (size_t)(r * c.k) * es(dt),
                             (size_t)c.k * es(dt)) == 0,
                  "top_k dt %d V %lld: row %lld alone differs", dt, (long long)V, (long long)r);
        else
            CHECK(memcmp(o, first + r * ob, ob) == 0, "%s dt %d V %lld: row %lld alone differs", k_names[op], dt,
                  (long long)V, (long long)r);
        free(o), free(one.y), free(one.values), free(one.idx);
    }
    /* 2. against the reference */
    call_t rc = make(op, dt, 0, 0, 0);
    drop(&rc);
    rc = c;
    rc.y = xcalloc((size_t)(B * V) * 4), rc.values = xcalloc((size_t)(B * c.k) * 4);
    rc.idx = xcalloc((size_t)(B * (c.k > 1 ? c.k : 1)) * 8);
    CHECK(run(&rc, 1) == TILEOPS_OK, "%s: the reference failed", k_names[op]);
    unsigned char *want = xcalloc(nb);
    copy_out(&rc, want);
    if (op == SOFTMAX) {
        const float *g = (const float *)first, *w = (const float *)want;
        int bad = 0;
        double worst = 0;
        for (int64_t i = 0; i < B * V; i++) {
            const double err = fabs((double)g[i] - (double)w[i]) / (fabs((double)w[i]) + 1e-30);
            const int ok = (g[i] != g[i] && w[i] != w[i]) || err <= 1e-5;
            worst = ok && w[i] == w[i] && err > worst ? err : worst;
            bad += !ok;
        }
        CHECK(bad == 0, "softmax dt %d V %lld: %d elements off the reference", dt, (long long)V, bad);
        if (V == 20001 && special)
            printf("  softmax dt %d V %lld: largest relative error %.2e\n", dt, (long long)V, worst);
    } else if (op == TKP) {
        int bad = 0, edge = 0;
        const size_t e = es(dt);
        for (int64_t i = 0; i < B * V; i++) {
            if (memcmp(first + (size_t)i * e, want + (size_t)i * e, e) == 0)
                continue;
            const double mb = mass_before(&c, i / V, i % V);
            if (mb >= 0 && fabs(mb - (double)c.p[i / V]) < 1e-5)
                edge++;
            else
                bad++;
        }
        CHECK(bad == 0, "top_k_top_p_mask dt %d V %lld: %d elements off the reference (%d at the edge)", dt,
              (long long)V, bad, edge);
    } else {
        CHECK(memcmp(first, want, nb) == 0, "%s dt %d V %lld: not the reference's", k_names[op], dt, (long long)V);
    }
    free(want), free(rc.y), free(rc.values), free(rc.idx);
    free(first), free(got);
    drop(&c);
}

static void check_bad_arguments(void) {
    float x[8] = {0};
    int64_t tok[2];
    call_t c = {.op = ARGMAX, .dt = TILEOPS_FLOAT32, .rows = 1, .V = 8, .x = x, .idx = tok};
    CHECK(run(&c, 0) == TILEOPS_OK, "argmax of a row of zeros");
    CHECK(tok[0] == 0, "argmax of zeros: the first, got %lld", (long long)tok[0]);
    c.V = 0;
    CHECK(run(&c, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "V = 0 refused");
    c.V = 8, c.dt = TILEOPS_INT32;
    CHECK(run(&c, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "an integer dtype refused");
    c.dt = TILEOPS_FLOAT32, c.idx = NULL;
    CHECK(run(&c, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "a NULL token refused");
    c.rows = 0;
    CHECK(run(&c, 0) == TILEOPS_OK, "no rows: nothing read or written");
    call_t k = {.op = TOP_K, .dt = TILEOPS_FLOAT32, .rows = 1, .V = 8, .k = 9, .x = x, .idx = tok};
    CHECK(run(&k, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "k > V refused");
    call_t s = {.op = SOFTMAX, .dt = TILEOPS_BFLOAT16, .rows = 1, .V = 8, .x = x, .y = NULL};
    CHECK(run(&s, 0) == TILEOPS_ERR_INVALID_ARGUMENT, "a NULL output refused");
}

int main(void) {
    for (int op = 0; op < N_OPS; op++) {
        char ref[64];
        snprintf(ref, sizeof ref, "%s_reference", k_names[op]);
        if (tileops_cpu_kernel_lookup(k_names[op], &g_fast[op]) != TILEOPS_OK ||
            tileops_cpu_kernel_lookup(ref, &g_ref[op]) != TILEOPS_OK) {
            printf("FAIL: kernel %s or its reference is not registered\n", k_names[op]);
            return 1;
        }
    }
    printf("sampling kernels, SIMD level %s\n", tileops_cpu_simd_level());
    const int dts[3] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16};
    for (int op = 0; op < N_OPS; op++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < COUNT(k_vs); v++)
                for (int special = 0; special < 2; special++)
                    check_op(op, dts[d], k_vs[v], special);
    check_bad_arguments();
    return check_summary();
}
