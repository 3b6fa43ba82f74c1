/* bench_cpu_norm.c: times the CPU RMSNorm kernels at the shapes the project compares
 * against torch.nn.functional.rms_norm (2048 x 4096 and 1 x 4096, fp32 / bf16 / fp16).
 * Not a test (the name does not start with test_), so `make test-c` skips it.
 *
 * Build: the way the Makefile builds a C test (all of csrc/core, csrc/cpu linked in),
 *        with -O2, e.g. into /tmp/bench.
 * Run:   /tmp/bench [rows n ...]   (default: 2048 4096 1 4096)
 *        BENCH_SIMD=avx2 or BENCH_SIMD=scalar times a lower SIMD path.
 * Prints the median (and minimum) microseconds per call of each variant and dtype. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tileops/cpu.h"
#include "ops/norm/rms_norm.h"
#include "tileops/dtype.h"
#include "cpu/simd.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of reps timed calls; *best gets the fastest (the machine may be shared, and
 * the minimum shows what the kernel does when nothing else runs). */
static double median_us(const tileops_rms_norm_args_t *a, int variant, int reps, double *best) {
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (t == NULL)
        return -1;
    for (int i = 0; i < reps / 10 + 3; i++) /* warm caches, pool and page tables */
        tileops_cpu_rms_norm(a, variant);
    for (int i = 0; i < reps; i++) {
        double t0 = now_us();
        tileops_cpu_rms_norm(a, variant);
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    double m = t[reps / 2];
    *best = t[0];
    free(t);
    return m;
}

int main(int argc, char **argv) {
    int64_t shapes[16][2] = {{2048, 4096}, {1, 4096}};
    int nshapes = 2;
    if (argc > 2) {
        nshapes = 0;
        for (int i = 1; i + 1 < argc && nshapes < 16; i += 2, nshapes++) {
            shapes[nshapes][0] = atoll(argv[i]);
            shapes[nshapes][1] = atoll(argv[i + 1]);
        }
    }
    const char *force = getenv("BENCH_SIMD");
    if (force != NULL) {
        int lvl = strcmp(force, "avx2") == 0 ? TILEOPS_SIMD_AVX2
                  : strcmp(force, "scalar") == 0 ? TILEOPS_SIMD_SCALAR : TILEOPS_SIMD_AVX512;
        if (tileops_cpu_simd_override(lvl) != TILEOPS_OK)
            printf("cannot force %s: %s\n", force, tileops_last_error());
    }
    printf("simd %s, %d threads\n", tileops_cpu_simd_level(), tileops_cpu_num_threads());
    const int dts[] = {TILEOPS_FLOAT32, TILEOPS_BFLOAT16, TILEOPS_FLOAT16};
    const char *vname[] = {"ROW", "ON_CHIP", "STREAMING"};
    for (int s = 0; s < nshapes; s++) {
        int64_t rows = shapes[s][0], n = shapes[s][1];
        for (int d = 0; d < 3; d++) {
            int dt = dts[d];
            size_t es = tileops_dtype_size(dt);
            char *x = malloc(es * (size_t)(rows * n)), *y = malloc(es * (size_t)(rows * n));
            char *w = malloc(es * (size_t)n);
            if (!x || !y || !w)
                return 1;
            uint32_t r = 12345;
            for (int64_t i = 0; i < rows * n; i++) {
                r = r * 1664525u + 1013904223u;
                float v = (float)((int32_t)(r >> 8) - (1 << 23)) / (float)(1 << 23);
                if (dt == TILEOPS_FLOAT32)
                    ((float *)x)[i] = v;
                else if (dt == TILEOPS_BFLOAT16)
                    ((uint16_t *)x)[i] = tileops_f32_to_bf16(v);
                else
                    ((uint16_t *)x)[i] = tileops_f32_to_f16(v);
                if (i < n)
                    memcpy(w + (size_t)i * es, x + (size_t)i * es, es);
            }
            memset(y, 0, es * (size_t)(rows * n));
            tileops_rms_norm_args_t a = {x, w, y, rows, n, n, n, 1e-6f, dt};
            int reps = rows * n >= (1 << 20) ? 200 : 20000;
            printf("%5lld x %-6lld %-8s", (long long)rows, (long long)n, tileops_dtype_name(dt));
            for (int v = 0; v < 3; v++) {
                double best = 0, med = median_us(&a, v, reps, &best);
                printf("  %s %8.2f us (min %8.2f)", vname[v], med, best);
            }
            printf("\n");
            free(x);
            free(y);
            free(w);
        }
    }
    return 0;
}
