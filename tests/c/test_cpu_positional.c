/* tests/c/test_cpu_positional.c: the CPU kernels of the positional tables against their
 * references at every SIMD level this CPU has.
 *   rope_cos_sin_cache, sinusoidal: the fast kernel (tileops_sincos in double, vectorised)
 *     within one float32 ulp of the reference (libm sin / cos in double, rounded once), and
 *     equal to it almost everywhere; every level gives the same bits; the layouts (cos half
 *     then sin half; sin / cos interleaved, an odd width ending with a sine); rows of more
 *     than one chunk of 64 pairs; the three rope types.
 *   tileops_sincos itself over angles up to 2^49 against libm.
 *   alibi: the fast kernel (rows copied from one diagonal per head) equal to the reference
 *     bit for bit; the slopes of 8 and 12 heads.
 *   Bad arguments are refused naming the kernel, with nothing written. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/simd.h"
#include "tileops/kernel_table.h"
#include "ops/positional/tables.cuh"

/* distance in float32 ulps (both finite) */
static int64_t ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    const int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

static int handle(const char *name) {
    int h = -1;
    CHECK(tileops_cpu_kernel_lookup(name, &h) == TILEOPS_OK, "lookup %s", name);
    return h;
}

static tileops_status_t run_rope(int h, float *out, int64_t P, int64_t R, double base, int type, double factor,
                                 double low, double high, double orig) {
    tileops_arg_t a[9];
    a[0].p = (uintptr_t)out;
    a[1].q = P;
    a[2].q = R;
    a[3].d = base;
    a[4].i = type;
    a[5].d = factor;
    a[6].d = low;
    a[7].d = high;
    a[8].d = orig;
    return tileops_cpu_kernel_launch(h, a, 9);
}

static tileops_status_t run_sin(int h, float *out, int64_t S, int64_t D, double base) {
    tileops_arg_t a[4];
    a[0].p = (uintptr_t)out;
    a[1].q = S;
    a[2].q = D;
    a[3].d = base;
    return tileops_cpu_kernel_launch(h, a, 4);
}

static tileops_status_t run_alibi(int h, float *out, int64_t H, int64_t S) {
    tileops_arg_t a[3];
    a[0].p = (uintptr_t)out;
    a[1].q = H;
    a[2].q = S;
    return tileops_cpu_kernel_launch(h, a, 3);
}

/* fast (each level) vs reference: max ulps <= 1, few differ, the levels agree bit for bit */
static void compare(const char *what, const float *ref, float *const *fast, int levels, int64_t n) {
    for (int l = 0; l < levels; l++) {
        int64_t worst = 0, differ = 0;
        for (int64_t i = 0; i < n; i++) {
            const int64_t u = ulps(fast[l][i], ref[i]);
            worst = u > worst ? u : worst;
            differ += u != 0;
        }
        CHECK(worst <= 1, "%s level %d: %lld ulps from the reference", what, l, (long long)worst);
        CHECK(differ * 1000 <= n, "%s level %d: %lld of %lld values differ from the reference", what, l,
              (long long)differ, (long long)n);
        CHECK(memcmp(fast[l], fast[0], (size_t)n * sizeof(float)) == 0, "%s: level %d differs from level 0", what,
              l);
    }
}

static void test_tables(void) {
    const int hr = handle("rope_cos_sin_cache"), hrr = handle("rope_cos_sin_cache_reference");
    const int hs = handle("sinusoidal"), hsr = handle("sinusoidal_reference");
    const int levels = tileops_cpu_simd_detect() + 1;
    const struct { int64_t P, R; double base; int type; double factor, low, high, orig; } rope[] = {
        {300, 130, 10000.0, TILEOPS_ROPE_DEFAULT, 1.0, 1.0, 4.0, 8192.0},
        {2049, 128, 500000.0, TILEOPS_ROPE_LLAMA3, 8.0, 1.0, 4.0, 8192.0},
        {77, 2, 10000.0, TILEOPS_ROPE_LINEAR, 4.0, 1.0, 4.0, 8192.0},
        {513, 64, 1000000.0, TILEOPS_ROPE_LLAMA3, 32.0, 2.0, 2.0, 4096.0},
    };
    for (size_t t = 0; t < sizeof rope / sizeof rope[0]; t++) {
        const int64_t n = rope[t].P * rope[t].R;
        float *ref = malloc((size_t)n * sizeof(float)), *fast[3];
        CHECK(run_rope(hrr, ref, rope[t].P, rope[t].R, rope[t].base, rope[t].type, rope[t].factor, rope[t].low,
                       rope[t].high, rope[t].orig) == TILEOPS_OK, "rope reference %zu: %s", t, tileops_last_error());
        for (int l = 0; l < levels; l++) {
            fast[l] = malloc((size_t)n * sizeof(float));
            CHECK(tileops_cpu_simd_override(l) == TILEOPS_OK, "level %d", l);
            CHECK(run_rope(hr, fast[l], rope[t].P, rope[t].R, rope[t].base, rope[t].type, rope[t].factor,
                           rope[t].low, rope[t].high, rope[t].orig) == TILEOPS_OK, "rope %zu: %s", t,
                  tileops_last_error());
        }
        tileops_cpu_simd_override(-1);
        compare("rope_cos_sin_cache", ref, fast, levels, n);
        /* the layout: row p = cos of the angles, then their sin (default: p / base^(2i / R)) */
        if (rope[t].type == TILEOPS_ROPE_DEFAULT) {
            const int64_t p = rope[t].P - 1, R = rope[t].R, i = R / 2 - 1;
            const double x = (double)p * (1.0 / pow(rope[t].base, (double)(2 * i) / (double)R));
            CHECK(ulps(ref[p * R + i], (float)cos(x)) == 0 && ulps(ref[p * R + R / 2 + i], (float)sin(x)) == 0,
                  "rope layout: row %lld", (long long)p);
        }
        free(ref);
        for (int l = 0; l < levels; l++)
            free(fast[l]);
    }
    const struct { int64_t S, D; double base; } sins[] = {{33, 7, 10000.0}, {1000, 512, 10000.0}, {40, 129, 1.0}};
    for (size_t t = 0; t < sizeof sins / sizeof sins[0]; t++) {
        const int64_t n = sins[t].S * sins[t].D;
        float *ref = malloc((size_t)n * sizeof(float)), *fast[3];
        CHECK(run_sin(hsr, ref, sins[t].S, sins[t].D, sins[t].base) == TILEOPS_OK, "sinusoidal reference: %s",
              tileops_last_error());
        for (int l = 0; l < levels; l++) {
            fast[l] = malloc((size_t)n * sizeof(float));
            tileops_cpu_simd_override(l);
            CHECK(run_sin(hs, fast[l], sins[t].S, sins[t].D, sins[t].base) == TILEOPS_OK, "sinusoidal: %s",
                  tileops_last_error());
        }
        tileops_cpu_simd_override(-1);
        compare("sinusoidal", ref, fast, levels, n);
        /* channel 2i = sin, 2i + 1 = cos of p / base^(2i / D); an odd D ends with a sine */
        const int64_t p = sins[t].S - 1, D = sins[t].D, last = D - 1, i = last / 2;
        const double x = (double)p * (1.0 / pow(sins[t].base, (double)(2 * i) / (double)D));
        CHECK(ulps(ref[p * D + last], (float)(last % 2 ? cos(x) : sin(x))) == 0, "sinusoidal layout, D %lld",
              (long long)D);
        free(ref);
        for (int l = 0; l < levels; l++)
            free(fast[l]);
    }
}

/* tileops_sincos against libm, rounded to float32, over angles of every magnitude */
static void test_sincos(void) {
    int64_t worst = 0, differ = 0, n = 0;
    uint32_t rng = 7u;
    for (int e = -30; e < 49; e++) {
        for (int k = 0; k < 4000; k++) {
            rng = rng * 1664525u + 1013904223u;
            const double x = ldexp(1.0 + (double)(rng >> 8) / 16777216.0, e);
            double s, c;
            tileops_sincos(x, &s, &c);
            const int64_t us = ulps((float)s, (float)sin(x)), uc = ulps((float)c, (float)cos(x));
            worst = us > worst ? us : worst;
            worst = uc > worst ? uc : worst;
            differ += (us != 0) + (uc != 0);
            n += 2;
            /* in double: within a few ulps of libm */
            CHECK(fabs(s - sin(x)) <= 4e-16 && fabs(c - cos(x)) <= 4e-16, "sincos(%.17g): %.17g %.17g vs %.17g %.17g",
                  x, s, c, sin(x), cos(x));
        }
    }
    CHECK(worst <= 1 && differ * 10000 <= n, "sincos: %lld ulps at worst, %lld of %lld differ", (long long)worst,
          (long long)differ, (long long)n);
    double s, c;
    tileops_sincos(0.0, &s, &c);
    CHECK(s == 0.0 && c == 1.0, "sincos(0) = %g, %g", s, c);
}

static void test_alibi(void) {
    const int h = handle("alibi"), hr = handle("alibi_reference");
    const int64_t cases[][2] = {{8, 33}, {12, 17}, {1, 1}, {3, 64}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const int64_t H = cases[t][0], S = cases[t][1], n = H * S * S;
        float *a = malloc((size_t)n * sizeof(float)), *b = malloc((size_t)n * sizeof(float));
        CHECK(run_alibi(h, a, H, S) == TILEOPS_OK && run_alibi(hr, b, H, S) == TILEOPS_OK, "alibi %lld x %lld: %s",
              (long long)H, (long long)S, tileops_last_error());
        CHECK(memcmp(a, b, (size_t)n * sizeof(float)) == 0, "alibi %lld x %lld: fast != reference", (long long)H,
              (long long)S);
        /* bias[h, i, j] = slope_h (j - i): row 0 of head 0 against the slope */
        if (S > 1)
            CHECK(a[1] == (float)tileops_alibi_slope(0, H) && a[S] == -a[1], "alibi %lld heads: slope", (long long)H);
        free(a);
        free(b);
    }
    /* 8 heads: 2^-1 .. 2^-8; 12 heads: those of 8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 */
    for (int k = 0; k < 8; k++)
        CHECK(tileops_alibi_slope(k, 8) == ldexp(1.0, -(k + 1)), "slope %d of 8", k);
    for (int k = 0; k < 4; k++)
        CHECK(fabs(tileops_alibi_slope(8 + k, 12) - pow(2.0, -0.5 - k)) <= 2e-16, "slope %d of 12", 8 + k);
}

static void test_refusals(void) {
    const int hr = handle("rope_cos_sin_cache"), hs = handle("sinusoidal"), ha = handle("alibi");
    float buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = -7.0f;
    struct { tileops_status_t st; const char *what; } r[] = {
        {run_rope(hr, buf, 4, 3, 10000.0, 0, 1.0, 1.0, 4.0, 8192.0), "odd rotary_dim"},
        {run_rope(hr, buf, 4, 8, 0.5, 0, 1.0, 1.0, 4.0, 8192.0), "base < 1"},
        {run_rope(hr, buf, 4, 8, NAN, 0, 1.0, 1.0, 4.0, 8192.0), "base NaN"},
        {run_rope(hr, buf, 4, 8, 10000.0, 3, 1.0, 1.0, 4.0, 8192.0), "rope_type 3"},
        {run_rope(hr, buf, 4, 8, 10000.0, 1, 0.0, 1.0, 4.0, 8192.0), "linear factor 0"},
        {run_rope(hr, buf, 4, 8, 10000.0, 2, 8.0, 4.0, 1.0, 8192.0), "llama3 low > high"},
        {run_rope(hr, buf, 4, 8, 10000.0, 2, 8.0, 1.0, 4.0, INFINITY), "llama3 orig inf"},
        {run_rope(hr, buf, 4, 8, 10000.0, 1, 1e-40, 1.0, 4.0, 8192.0), "angles past 2^50"},
        {run_rope(hr, NULL, 4, 8, 10000.0, 0, 1.0, 1.0, 4.0, 8192.0), "NULL out"},
        {run_rope(hr, buf, INT64_MAX / 2, 8, 10000.0, 0, 1.0, 1.0, 4.0, 8192.0), "bytes past int64"},
        {run_sin(hs, buf, -1, 8, 10000.0), "negative seq_len"},
        {run_sin(hs, buf, 4, 8, -INFINITY), "base -inf"},
        {run_alibi(ha, buf, -1, 4), "negative heads"},
        {run_alibi(ha, NULL, 2, 4), "NULL bias"},
        {run_alibi(ha, buf, 4, INT64_MAX / 8), "bias bytes past int64"},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        CHECK(r[i].st == TILEOPS_ERR_INVALID_ARGUMENT, "%s: status %d", r[i].what, (int)r[i].st);
    int untouched = 1;
    for (int i = 0; i < 64; i++)
        untouched &= buf[i] == -7.0f;
    CHECK(untouched, "a refused call wrote its output");
    CHECK(run_rope(hr, buf, 4, 8, 10000.0, 1, 1e-40, 1.0, 4.0, 8192.0) == TILEOPS_ERR_INVALID_ARGUMENT &&
              strstr(tileops_last_error(), "rope_cos_sin_cache: ") == tileops_last_error(),
          "the message names the kernel: %s", tileops_last_error());
    /* nothing to write: accepted with no pointer */
    CHECK(run_rope(hr, NULL, 0, 8, 10000.0, 0, 1.0, 1.0, 4.0, 8192.0) == TILEOPS_OK, "0 rows");
    CHECK(run_sin(hs, NULL, INT64_MAX, 0, 10000.0) == TILEOPS_OK, "0 channels");
    CHECK(run_alibi(ha, NULL, INT64_MAX, 0) == TILEOPS_OK, "0 positions");
}

int main(void) {
    test_tables();
    test_sincos();
    test_alibi();
    test_refusals();
    return check_summary();
}
