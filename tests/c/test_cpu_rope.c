/* tests/c/test_cpu_rope.c: the "rope" CPU kernel against "rope_reference" (double,
 * rounded once) at every SIMD level this CPU has: NeoX and GPT-J styles, full and partial
 * rotary, odd head counts and dims, the three dtypes, int32 and int64 positions, in place
 * and out of place, q and k as views into one packed qkv buffer (token stride > heads x D),
 * no key; every level gives the same bits; a bad position is an error that writes nothing;
 * bad sizes and strides are refused. "rope_cast" (Hugging Face's arithmetic in the dtype)
 * gives its reference's bits exactly at every level: each product of two values of the
 * dtype is exact in fp32, so rounding it to the dtype from fp32 or from double is one
 * rounding of the same number, and so is the sum's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "elems.h"
#include "cpu/simd.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

static int g_fast, g_ref, g_cast, g_cast_ref;
static uint32_t g_rng = 12345u;

static float rnd(void) { /* uniform in [-2, 2) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((g_rng >> 8) & 0xffffff) / (float)(1 << 22) - 2.0f;
}

typedef struct layout {
    int64_t T, H, Hk, D, R, P;
    int neox, dt, pdt, with_k, inplace;
} layout_t;

/* runs kernel `h` over a packed qkv buffer (token stride (H + 2 Hk) D + 3): q at 0, k at
 * H D; out of place into separate contiguous outputs */
static tileops_status_t run(int h, const layout_t *L, void *qkv, void *qo, void *ko, const void *pos,
                            const float *cache) {
    const int64_t es = (int64_t)tileops_dtype_size(L->dt), row = (L->H + 2 * L->Hk) * L->D + 3;
    char *q = qkv, *k = (char *)qkv + L->H * L->D * es;
    tileops_arg_t a[23];
    a[0].p = (uintptr_t)q;
    a[1].p = L->with_k ? (uintptr_t)k : 0;
    a[2].p = (uintptr_t)pos;
    a[3].p = (uintptr_t)cache;
    a[4].p = L->inplace ? (uintptr_t)q : (uintptr_t)qo;
    a[5].p = !L->with_k ? 0 : L->inplace ? (uintptr_t)k : (uintptr_t)ko;
    a[6].q = L->T; a[7].q = L->H; a[8].q = L->Hk; a[9].q = L->D; a[10].q = L->R; a[11].q = L->P;
    a[12].q = row; a[13].q = L->D; a[14].q = row; a[15].q = L->D;
    a[16].q = L->inplace ? row : L->H * L->D; a[17].q = L->D;
    a[18].q = L->inplace ? row : L->Hk * L->D; a[19].q = L->D;
    a[20].i = L->neox; a[21].i = L->dt; a[22].i = L->pdt;
    return tileops_cpu_kernel_launch(h, a, 23);
}

typedef struct bufs {
    void *qkv, *qo, *ko, *pos;
    float *cache;
    size_t qkv_bytes, qo_bytes, ko_bytes;
} bufs_t;

static bufs_t make(const layout_t *L) {
    bufs_t b;
    const int64_t es = (int64_t)tileops_dtype_size(L->dt), row = (L->H + 2 * L->Hk) * L->D + 3;
    b.qkv_bytes = (size_t)(L->T * row * es + 1);
    b.qo_bytes = (size_t)(L->T * L->H * L->D * es + 1);
    b.ko_bytes = (size_t)(L->T * L->Hk * L->D * es + 1);
    b.qkv = calloc(1, b.qkv_bytes);
    b.qo = calloc(1, b.qo_bytes);
    b.ko = calloc(1, b.ko_bytes);
    b.pos = malloc((size_t)(L->T * 8 + 8));
    b.cache = malloc((size_t)(L->P * L->R) * sizeof(float));
    for (int64_t i = 0; i < L->T * row; i++)
        elem_put(b.qkv, i, L->dt, rnd());
    for (int64_t i = 0; i < L->P * L->R; i++)
        b.cache[i] = rnd() * 0.5f;
    for (int64_t t = 0; t < L->T; t++) {
        int64_t p = (t * 7 + 3) % L->P;
        if (L->pdt == TILEOPS_INT32) ((int32_t *)b.pos)[t] = (int32_t)p;
        else ((int64_t *)b.pos)[t] = p;
    }
    return b;
}

static void drop(bufs_t *b) {
    free(b->qkv); free(b->qo); free(b->ko); free(b->pos); free(b->cache);
}

/* the rotated q (or k) value of token t, head h, channel i from the run's outputs */
static float out_at(const layout_t *L, const bufs_t *b, int which_k, int64_t t, int64_t h, int64_t i) {
    const int64_t row = (L->H + 2 * L->Hk) * L->D + 3;
    if (L->inplace)
        return elem_get(b->qkv, t * row + (which_k ? L->H * L->D : 0) + h * L->D + i, L->dt);
    const int64_t heads = which_k ? L->Hk : L->H;
    return elem_get(which_k ? b->ko : b->qo, (t * heads + h) * L->D + i, L->dt);
}

static int same_bytes(const bufs_t *a, const bufs_t *b) {
    return !memcmp(a->qkv, b->qkv, a->qkv_bytes) && !memcmp(a->qo, b->qo, a->qo_bytes) &&
           !memcmp(a->ko, b->ko, a->ko_bytes);
}

static void one_case(const layout_t *L) {
    const char *dn = tileops_dtype_name(L->dt);
    /* the reference */
    g_rng = 777u;
    bufs_t ref = make(L);
    CHECK(run(g_ref, L, ref.qkv, ref.qo, ref.ko, ref.pos, ref.cache) == TILEOPS_OK, "reference ran");
    bufs_t level0 = {0};
    int have0 = 0;
    for (int level = 0; level <= tileops_cpu_simd_detect(); level++) {
        if (tileops_cpu_simd_override(level) != TILEOPS_OK)
            continue;
        g_rng = 777u;
        bufs_t f = make(L);
        CHECK(run(g_fast, L, f.qkv, f.qo, f.ko, f.pos, f.cache) == TILEOPS_OK, "fast ran");
        /* within one unit of the output's last place of the double result */
        double worst = 0;
        for (int which = 0; which <= (L->with_k ? 1 : 0); which++)
            for (int64_t t = 0; t < L->T; t++)
                for (int64_t h = 0; h < (which ? L->Hk : L->H); h++)
                    for (int64_t i = 0; i < L->D; i++) {
                        const float got = out_at(L, &f, which, t, h, i), want = out_at(L, &ref, which, t, h, i);
                        const double ulp = L->dt == TILEOPS_FLOAT32 ? ldexp(1.0, -23)
                                           : L->dt == TILEOPS_FLOAT16 ? ldexp(1.0, -10) : ldexp(1.0, -7);
                        /* one unit in the last place of the output, plus the fp32 rounding of the
                         * products (|a c|, |b s| <= 2: 2^-22 absolute) an output near 0 shows */
                        const double err = fabs((double)got - want) / (ulp * fabs(want) + 2.5e-7);
                        if (i >= L->R) /* passed through: exactly */
                            CHECK(got == want || (got != got && want != want), "%s pass-through t%lld h%lld i%lld", dn,
                                  (long long)t, (long long)h, (long long)i);
                        else if (err > worst)
                            worst = err;
                    }
        CHECK(worst <= 1.0, "%s neox=%d T=%lld H=%lld Hk=%lld D=%lld R=%lld inplace=%d level %d: %.3f ulp", dn,
              L->neox, (long long)L->T, (long long)L->H, (long long)L->Hk, (long long)L->D, (long long)L->R,
              L->inplace, level, worst);
        if (!have0) {
            level0 = f;
            have0 = 1;
        } else {
            CHECK(same_bytes(&f, &level0), "%s level %d gives level 0's bits (neox=%d D=%lld R=%lld inplace=%d)", dn, level, L->neox,
                  (long long)L->D, (long long)L->R, L->inplace);
            drop(&f);
        }
    }
    tileops_cpu_simd_override(-1);
    if (have0)
        drop(&level0);
    drop(&ref);
}

/* rope_cast: the fast kernel's bits are the reference's, at every level, and differ from
 * the plain kernel's somewhere in the 16-bit dtypes (the intermediate roundings) */
static void cast_case(const layout_t *L) {
    g_rng = 777u;
    bufs_t ref = make(L);
    CHECK(run(g_cast_ref, L, ref.qkv, ref.qo, ref.ko, ref.pos, ref.cache) == TILEOPS_OK, "rope_cast_reference ran");
    for (int level = 0; level <= tileops_cpu_simd_detect(); level++) {
        if (tileops_cpu_simd_override(level) != TILEOPS_OK)
            continue;
        g_rng = 777u;
        bufs_t f = make(L);
        CHECK(run(g_cast, L, f.qkv, f.qo, f.ko, f.pos, f.cache) == TILEOPS_OK, "rope_cast ran");
        CHECK(same_bytes(&f, &ref), "rope_cast %s neox=%d T=%lld D=%lld R=%lld inplace=%d level %d: not the reference's bits",
              tileops_dtype_name(L->dt), L->neox, (long long)L->T, (long long)L->D, (long long)L->R, L->inplace, level);
        drop(&f);
    }
    tileops_cpu_simd_override(-1);
    if (L->dt != TILEOPS_FLOAT32 && L->T * L->H * L->R >= 256) {
        g_rng = 777u;
        bufs_t plain = make(L);
        (void)run(g_fast, L, plain.qkv, plain.qo, plain.ko, plain.pos, plain.cache);
        CHECK(!same_bytes(&plain, &ref), "rope_cast %s T=%lld D=%lld: no element shows the dtype's roundings",
              tileops_dtype_name(L->dt), (long long)L->T, (long long)L->D);
        drop(&plain);
    }
    drop(&ref);
}

static void bad_position(void) {
    layout_t L = {.T = 5, .H = 2, .Hk = 1, .D = 8, .R = 8, .P = 4, .neox = 1, .dt = TILEOPS_FLOAT16,
                  .pdt = TILEOPS_INT64, .with_k = 1, .inplace = 1};
    bufs_t b = make(&L);
    ((int64_t *)b.pos)[3] = 4; /* == P */
    unsigned char *before = malloc(b.qkv_bytes);
    memcpy(before, b.qkv, b.qkv_bytes);
    tileops_status_t st = run(g_fast, &L, b.qkv, b.qo, b.ko, b.pos, b.cache);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "positions[3] = 4") != NULL,
          "an out-of-range position is refused, naming it: %s", tileops_last_error());
    CHECK(!memcmp(before, b.qkv, b.qkv_bytes), "nothing was written");
    ((int64_t *)b.pos)[3] = -1;
    st = run(g_fast, &L, b.qkv, b.qo, b.ko, b.pos, b.cache);
    CHECK(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "= -1") != NULL, "negative: %s",
          tileops_last_error());
    free(before);
    drop(&b);
}

static void bad_sizes(void) {
    layout_t L = {.T = 2, .H = 2, .Hk = 1, .D = 8, .R = 8, .P = 4, .neox = 1, .dt = TILEOPS_FLOAT32,
                  .pdt = TILEOPS_INT32, .with_k = 1, .inplace = 0};
    bufs_t b = make(&L);
    const int64_t rs[] = {0, 3, 10};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        layout_t M = L;
        M.R = rs[i];
        CHECK(run(g_fast, &M, b.qkv, b.qo, b.ko, b.pos, b.cache) == TILEOPS_ERR_INVALID_ARGUMENT &&
                  strstr(tileops_last_error(), "rotary_dim") != NULL,
              "rotary_dim %lld refused: %s", (long long)rs[i], tileops_last_error());
    }
    layout_t M = L;
    M.dt = TILEOPS_INT32;
    CHECK(run(g_fast, &M, b.qkv, b.qo, b.ko, b.pos, b.cache) == TILEOPS_ERR_INVALID_ARGUMENT, "int32 data refused");
    M = L;
    M.pdt = TILEOPS_FLOAT32;
    CHECK(run(g_fast, &M, b.qkv, b.qo, b.ko, b.pos, b.cache) == TILEOPS_ERR_INVALID_ARGUMENT, "float positions refused");
    M = L;
    M.T = -1;
    CHECK(run(g_fast, &M, b.qkv, b.qo, b.ko, b.pos, b.cache) == TILEOPS_ERR_INVALID_ARGUMENT, "T = -1 refused");
    CHECK(run(g_fast, &L, b.qkv, b.qo, b.ko, NULL, b.cache) == TILEOPS_ERR_INVALID_ARGUMENT, "NULL positions refused");
    drop(&b);
}

int main(void) {
    CHECK(tileops_cpu_kernel_lookup("rope", &g_fast) == TILEOPS_OK, "rope registered");
    CHECK(tileops_cpu_kernel_lookup("rope_reference", &g_ref) == TILEOPS_OK, "rope_reference registered");
    CHECK(tileops_cpu_kernel_lookup("rope_cast", &g_cast) == TILEOPS_OK, "rope_cast registered");
    CHECK(tileops_cpu_kernel_lookup("rope_cast_reference", &g_cast_ref) == TILEOPS_OK,
          "rope_cast_reference registered");
    const int dts[] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16};
    const int64_t shapes[][4] = {{1, 1, 1, 2}, {3, 4, 2, 8}, {5, 3, 1, 64}, {2, 2, 2, 128}, {33, 4, 2, 40}};
    for (int d = 0; d < 3; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int neox = 0; neox <= 1; neox++)
                for (int partial = 0; partial <= 1; partial++)
                    for (int inplace = 0; inplace <= 1; inplace++) {
                        const int64_t D = shapes[s][3];
                        const int64_t R = partial ? (D >= 4 ? (D / 2) & ~(int64_t)1 : D) : D;
                        layout_t L = {.T = shapes[s][0], .H = shapes[s][1], .Hk = shapes[s][2], .D = D, .R = R,
                                      .P = 17, .neox = neox, .dt = dts[d],
                                      .pdt = (s % 2) ? TILEOPS_INT32 : TILEOPS_INT64, .with_k = s != 2,
                                      .inplace = inplace};
                        one_case(&L);
                        cast_case(&L);
                    }
    bad_position();
    bad_sizes();
    return check_summary();
}
