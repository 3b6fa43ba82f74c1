/* test_cpu_norm.c: checks the CPU side of the core - status messages, the half-precision
 * conversions, the thread pool and the RMSNorm kernels (every variant, dtype and SIMD
 * path against the double-precision reference).
 *
 * Prints one line per failed check and ends with "N passed, M failed"; exits 1 if any
 * check failed. Inputs come from a fixed xorshift generator, so a failure reproduces. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tileops/cpu.h"
#include "ops/norm/rms_norm.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "tileops/status.h"
#include "cpu/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TEST_X86 1
#else
#define TEST_X86 0
#endif

static long g_passed, g_failed;

/* Records one check; on failure prints the details given. */
static int check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int check(int ok, const char *fmt, ...) {
    if (ok) {
        g_passed++;
        return 1;
    }
    g_failed++;
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void) {
    uint64_t x = g_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return g_rng = x;
}

/* Uniform in [lo, hi). */
static double urand(double lo, double hi) {
    return lo + (hi - lo) * (double)(xorshift() >> 11) * (1.0 / 9007199254740992.0);
}

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int is_nan16(uint16_t h, int dt) {
    if (dt == TILEOPS_FLOAT16)
        return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
}

/* Maps a 16-bit float pattern onto integers in value order, so that adjacent
 * representable values differ by one (and +0 / -0 coincide). */
static int32_t ordered16(uint16_t h) { return (h & 0x8000) ? -(int32_t)(h & 0x7fff) : (int32_t)h; }

static double elem(const void *p, int64_t i, int dt) {
    if (dt == TILEOPS_FLOAT16)
        return tileops_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == TILEOPS_BFLOAT16)
        return tileops_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static void put(void *p, int64_t i, int dt, float v) {
    if (dt == TILEOPS_FLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_f16(v);
    else if (dt == TILEOPS_BFLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* A signalling NaN per dtype: no kernel output for finite input can equal it. */
static void poison(void *p, int64_t count, int dt) {
    for (int64_t i = 0; i < count; i++) {
        if (dt == TILEOPS_FLOAT32)
            ((uint32_t *)p)[i] = 0x7fa5a5a5u;
        else if (dt == TILEOPS_FLOAT16)
            ((uint16_t *)p)[i] = 0x7d5a;
        else
            ((uint16_t *)p)[i] = 0x7fa5;
    }
}

static int is_poison(const void *p, int64_t i, int dt) {
    if (dt == TILEOPS_FLOAT32)
        return ((const uint32_t *)p)[i] == 0x7fa5a5a5u;
    if (dt == TILEOPS_FLOAT16)
        return ((const uint16_t *)p)[i] == 0x7d5a;
    return ((const uint16_t *)p)[i] == 0x7fa5;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        printf("FAIL: out of memory allocating %zu bytes\n", n);
        exit(1);
    }
    return p;
}

/* ---- status ------------------------------------------------------------------------- */

static void test_status(void) {
    tileops_clear_error();
    check(strcmp(tileops_last_error(), "") == 0, "last_error after clear is '%s'",
          tileops_last_error());
    tileops_status_t st = tileops_fail(TILEOPS_ERR_COMPILE, "kernel %s: %d errors", "k", 3);
    check(st == TILEOPS_ERR_COMPILE, "tileops_fail returned %d", (int)st);
    check(strcmp(tileops_last_error(), "kernel k: 3 errors") == 0, "message is '%s'",
          tileops_last_error());
    /* Wrapping the previous message must work (the buffer is read while formatting). */
    tileops_fail(TILEOPS_ERR_INTERNAL, "outer: %s", tileops_last_error());
    check(strcmp(tileops_last_error(), "outer: kernel k: 3 errors") == 0,
          "wrapped message is '%s'", tileops_last_error());
    /* Truncation to the buffer size, never overflow. */
    char *big = xmalloc(TILEOPS_ERROR_MAX + 100);
    memset(big, 'a', TILEOPS_ERROR_MAX + 99);
    big[TILEOPS_ERROR_MAX + 99] = '\0';
    tileops_fail(TILEOPS_ERR_INTERNAL, "%s", big);
    check(strlen(tileops_last_error()) == TILEOPS_ERROR_MAX - 1, "long message length %zu",
          strlen(tileops_last_error()));
    free(big);
    check(strcmp(tileops_status_name(TILEOPS_OK), "TILEOPS_OK") == 0, "status name of OK");
    check(strcmp(tileops_status_name(TILEOPS_ERR_CAPTURING), "TILEOPS_ERR_CAPTURING") == 0,
          "status name of CAPTURING");
    check(strcmp(tileops_status_name((tileops_status_t)77), "TILEOPS_ERR_UNKNOWN") == 0,
          "status name of 77 is %s", tileops_status_name((tileops_status_t)77));
    tileops_clear_error();
    check(tileops_last_error()[0] == '\0', "clear_error");
    static const struct { int code; size_t size; const char *name; int is_float; } dts[] = {
        {TILEOPS_FLOAT32, 4, "float32", 1}, {TILEOPS_FLOAT16, 2, "float16", 1},
        {TILEOPS_BFLOAT16, 2, "bfloat16", 1}, {TILEOPS_INT32, 4, "int32", 0},
        {TILEOPS_INT64, 8, "int64", 0}, {TILEOPS_UINT8, 1, "uint8", 0},
        {TILEOPS_BOOL, 1, "bool", 0},
    };
    check(sizeof dts / sizeof dts[0] == TILEOPS_DTYPE_COUNT_, "every dtype code is tested");
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++)
        check(dts[i].code == (int)i && tileops_dtype_size(dts[i].code) == dts[i].size &&
                  strcmp(tileops_dtype_name(dts[i].code), dts[i].name) == 0 &&
                  tileops_dtype_is_float(dts[i].code) == dts[i].is_float,
              "dtype %d: size %zu, name %s", dts[i].code, tileops_dtype_size(dts[i].code),
              tileops_dtype_name(dts[i].code));
    check(tileops_dtype_size(TILEOPS_DTYPE_COUNT_) == 0 && tileops_dtype_size(-1) == 0 &&
              strcmp(tileops_dtype_name(TILEOPS_DTYPE_COUNT_), "unknown") == 0 &&
              !tileops_dtype_is_float(-1) && !tileops_dtype_is_float(TILEOPS_DTYPE_COUNT_),
          "unknown dtype codes");
}

/* Messages are per thread. */
static void *status_thread(void *arg) {
    (void)arg;
    tileops_fail(TILEOPS_ERR_CUDA, "from the other thread");
    return NULL;
}

static void test_status_threads(void) {
    tileops_fail(TILEOPS_ERR_CACHE, "main thread");
    pthread_t t;
    if (!check(pthread_create(&t, NULL, status_thread, NULL) == 0, "pthread_create"))
        return;
    pthread_join(t, NULL);
    check(strcmp(tileops_last_error(), "main thread") == 0, "thread-local message is '%s'",
          tileops_last_error());
    tileops_clear_error();
}

/* ---- conversions -------------------------------------------------------------------- */

/* Exact value of a half pattern, computed independently of the library. */
static double half_value(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

/* Correctly rounded (nearest, ties to even) half of a non-NaN float, by search over the
 * ordered positive half patterns. */
static uint16_t half_of(float f) {
    double a = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (a >= 65520.0)
        return sign | 0x7c00;
    unsigned lo = 0, hi = 0x7bff; /* largest h with value <= a */
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (half_value((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    double below = half_value((uint16_t)lo);
    double above = lo == 0x7bff ? 65536.0 : half_value((uint16_t)(lo + 1));
    unsigned pick;
    if (a - below < above - a)
        pick = lo;
    else if (a - below > above - a)
        pick = lo + 1;
    else
        pick = (lo & 1) ? lo + 1 : lo;
    return (uint16_t)(sign | pick);
}

#if TEST_X86
__attribute__((target("f16c"))) static uint16_t f16c_convert(float f) {
    return (uint16_t)_mm_extract_epi16(
        _mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0);
}
__attribute__((target("f16c"))) static float f16c_widen(uint16_t h) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
#endif

static void test_half_conversions(void) {
    int has_f16c = 0;
#if TEST_X86
    __builtin_cpu_init();
    has_f16c = __builtin_cpu_supports("f16c");
#endif
    /* Every half pattern: exact widening, and back again. */
    long bad_val = 0, bad_trip = 0, bad_nan = 0, bad_hw = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tileops_f16_to_f32((uint16_t)h);
        uint16_t back = tileops_f32_to_f16(f);
        if (is_nan16((uint16_t)h, TILEOPS_FLOAT16)) {
            /* NaN stays NaN with its sign; the quiet bit gets set, the payload is kept. */
            if (!isnan(f) || back != (uint16_t)(h | 0x200))
                if (bad_nan++ < 3)
                    printf("  half NaN %04x -> %08x -> %04x\n", h, f2u(f), back);
        } else {
            double want = half_value((uint16_t)h);
            if ((double)f != want || !!signbit(f) != ((h & 0x8000) != 0))
                if (bad_val++ < 3)
                    printf("  half %04x widened to %a, want %a\n", h, (double)f, want);
            if (back != h && bad_trip++ < 3)
                printf("  half %04x round trip gave %04x\n", h, back);
        }
#if TEST_X86
        if (has_f16c && !is_nan16((uint16_t)h, TILEOPS_FLOAT16) &&
            f2u(f16c_widen((uint16_t)h)) != f2u(f))
            bad_hw++;
#endif
    }
    check(bad_val == 0, "f16_to_f32: %ld half patterns widened to a wrong value", bad_val);
    check(bad_trip == 0, "f32_to_f16(f16_to_f32(h)) != h for %ld half patterns", bad_trip);
    check(bad_nan == 0, "f16 NaN round trip wrong for %ld patterns", bad_nan);
    check(bad_hw == 0, "f16_to_f32 differs from F16C for %ld patterns", bad_hw);

    /* Known roundings. */
    static const struct {
        float f;
        uint16_t h;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},
        {65519.99f, 0x7bff},
        {65520.0f, 0x7c00}, /* the tie above the largest half goes to infinity */
        {1e10f, 0x7c00},
        {-1e10f, 0xfc00},
        {INFINITY, 0x7c00},
        {-INFINITY, 0xfc00},
        {1.0f + 0x1p-11f, 0x3c00},        /* tie, down to even */
        {1.0f + 3 * 0x1p-11f, 0x3c02},    /* tie, up to even */
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, /* just above the tie */
        {0x1p-14f, 0x0400},               /* smallest normal */
        {0x1p-14f - 0x1p-25f, 0x0400},    /* tie between largest subnormal and it */
        {0x1p-24f, 0x0001},               /* smallest subnormal */
        {0x1p-25f, 0x0000},               /* tie with zero, to even */
        {0x1p-25f * 1.0000001f, 0x0001},
        {3 * 0x1p-25f, 0x0002},           /* tie between 1 and 2 units */
        {5 * 0x1p-25f, 0x0002},           /* tie between 2 and 3 units */
        {-0x1p-26f, 0x8000},
        {1e-30f, 0x0000},
        {0x1p-149f, 0x0000},
        {0.1f, 0x2e66},
        {3.14159265f, 0x4248},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = tileops_f32_to_f16(cases[i].f);
        check(got == cases[i].h, "f32_to_f16(%a) = %04x, want %04x", (double)cases[i].f, got,
              cases[i].h);
    }
    check(tileops_f32_to_f16(NAN) == 0x7e00, "f32_to_f16(NaN) = %04x", tileops_f32_to_f16(NAN));
    check(tileops_f32_to_f16(u2f(0xff800001u)) == 0xfe00, "f32_to_f16(-sNaN) = %04x",
          tileops_f32_to_f16(u2f(0xff800001u)));

    /* Many floats against the independent rounding (and F16C where present): random bit
     * patterns, and a dense sweep over the range where halves live. */
    long bad = 0, bad_f16c = 0;
    /* Ties: the exact midpoint between each pair of neighbouring halves, and the floats
     * just either side of it. */
    const long nrand = 1L << 20, nsweep = 600000, nties = 0x7c00L * 3;
    for (long k = 0; k < nrand + nsweep + nties; k++) {
        float f;
        if (k < nrand) {
            f = u2f((uint32_t)xorshift());
        } else if (k < nrand + nsweep) {
            /* 2^-26 .. 2^17: every exponent the halves use, and a little beyond */
            uint32_t bits = 0x32800000u + (uint32_t)(k - nrand) * 601u;
            f = u2f(bits | ((k & 1) ? 0x80000000u : 0));
        } else {
            long t = k - nrand - nsweep;
            uint16_t h = (uint16_t)(t / 3);
            double mid = (half_value(h) + (h == 0x7bff ? 65536.0 : half_value((uint16_t)(h + 1)))) / 2;
            f = (float)mid; /* exact: a midpoint needs 12 significant bits */
            if (t % 3 == 1)
                f = nextafterf(f, 0.0f);
            else if (t % 3 == 2)
                f = nextafterf(f, INFINITY);
            if (h & 1)
                f = -f;
        }
        uint16_t got = tileops_f32_to_f16(f);
        if (isnan(f)) {
            if (!is_nan16(got, TILEOPS_FLOAT16) || ((got >> 15) != (f2u(f) >> 31)))
                if (bad++ < 3)
                    printf("  f32_to_f16(NaN %08x) = %04x\n", f2u(f), got);
        } else {
            uint16_t want = half_of(f);
            if (got != want && bad++ < 3)
                printf("  f32_to_f16(%a) = %04x, want %04x\n", (double)f, got, want);
        }
#if TEST_X86
        if (has_f16c && f16c_convert(f) != got && bad_f16c++ < 3)
            printf("  f32_to_f16(%08x) = %04x, F16C gives %04x\n", f2u(f), got, f16c_convert(f));
#endif
    }
    check(bad == 0, "f32_to_f16 wrong for %ld floats", bad);
    check(bad_f16c == 0, "f32_to_f16 differs from F16C for %ld floats", bad_f16c);

    /* bfloat16: the header's inline conversions. */
    long bb = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tileops_bf16_to_f32((uint16_t)h);
        uint16_t back = tileops_f32_to_bf16(f);
        if (is_nan16((uint16_t)h, TILEOPS_BFLOAT16)) {
            if (!isnan(f) || back != (uint16_t)(h | 0x40))
                bb++;
        } else if (back != h || f2u(f) != h << 16) {
            bb++;
        }
    }
    check(bb == 0, "bf16 round trip wrong for %ld patterns", bb);
    static const struct {
        uint32_t f;
        uint16_t h;
    } bcases[] = {
        {0x3f808000u, 0x3f80}, /* 1 + 2^-8: tie, to even */
        {0x3f818000u, 0x3f82}, /* 1 + 3 * 2^-8: tie, to even */
        {0x3f808001u, 0x3f81},
        {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to infinity */
        {0x7f7f7fffu, 0x7f7f},
        {0x00008000u, 0x0000}, /* subnormal tie to even zero */
        {0x00018000u, 0x0002},
        {0x80000000u, 0x8000},
        {0x7f800000u, 0x7f80},
        {0x7f800001u, 0x7fc0}, /* signalling NaN gets quieted */
        {0xffc00000u, 0xffc0},
    };
    for (size_t i = 0; i < sizeof bcases / sizeof bcases[0]; i++) {
        uint16_t got = tileops_f32_to_bf16(u2f(bcases[i].f));
        check(got == bcases[i].h, "f32_to_bf16(%08x) = %04x, want %04x", bcases[i].f, got,
              bcases[i].h);
    }
}

/* ---- thread pool -------------------------------------------------------------------- */

typedef struct cover {
    atomic_int *hits;
    atomic_int calls;
    atomic_int bad_range;
    int64_t count;
    int nested;        /* each index also runs an inner parallel_for over NESTED items */
    atomic_int *inner; /* count * NESTED counters */
} cover_t;

#define NESTED 5

static void inner_fn(void *ctx, int64_t b, int64_t e) {
    atomic_int *slot = ctx;
    for (int64_t i = b; i < e; i++)
        atomic_fetch_add(&slot[i], 1);
}

static void cover_fn(void *ctx, int64_t b, int64_t e) {
    cover_t *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    if (b < 0 || e > c->count || b >= e)
        atomic_fetch_add(&c->bad_range, 1);
    for (int64_t i = b; i < e && i < c->count; i++) {
        if (i < 0)
            continue;
        atomic_fetch_add(&c->hits[i], 1);
        if (c->nested)
            tileops_cpu_parallel_for(NESTED, 1, inner_fn, &c->inner[i * NESTED]);
    }
}

/* Zeroed counters for a parallel_for over `count` indices. */
static void cover_init(cover_t *c, int64_t count, int nested) {
    c->count = count;
    c->nested = nested;
    c->hits = xmalloc(sizeof(atomic_int) * (size_t)count);
    c->inner = xmalloc(sizeof(atomic_int) * (size_t)(count * NESTED));
    for (int64_t i = 0; i < count; i++)
        atomic_init(&c->hits[i], 0);
    for (int64_t i = 0; i < count * NESTED; i++)
        atomic_init(&c->inner[i], 0);
    atomic_init(&c->calls, 0);
    atomic_init(&c->bad_range, 0);
}

/* Runs one parallel_for and checks coverage; returns 1 if all good. */
static int run_cover(int64_t count, int64_t min_per, int threads, int nested, const char *tag) {
    cover_t c;
    cover_init(&c, count, nested);
    tileops_cpu_parallel_for(count, min_per, cover_fn, &c);
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < count; i++)
        if (atomic_load(&c.hits[i]) != 1 && wrong++ == 0)
            first = i;
    int64_t wrong_inner = 0;
    if (nested)
        for (int64_t i = 0; i < count * NESTED; i++)
            wrong_inner += atomic_load(&c.inner[i]) != 1;
    int calls = atomic_load(&c.calls);
    int64_t mp = min_per < 1 ? 1 : min_per;
    int64_t max_calls = count / mp < threads ? count / mp : threads;
    if (max_calls < 1)
        max_calls = 1;
    int ok = check(wrong == 0 && wrong_inner == 0 && atomic_load(&c.bad_range) == 0 &&
                       (count == 0 ? calls == 0 : calls >= 1 && calls <= max_calls),
                   "parallel_for %s count=%lld min_per_thread=%lld threads=%d nested=%d: "
                   "%lld indices not hit once (first %lld), %lld inner wrong, %d bad ranges, "
                   "%d calls (max %lld)",
                   tag, (long long)count, (long long)min_per, threads, nested, (long long)wrong,
                   (long long)first, (long long)wrong_inner, atomic_load(&c.bad_range), calls,
                   (long long)max_calls);
    free(c.hits);
    free(c.inner);
    return ok;
}

typedef struct concurrent {
    int rounds;
    atomic_int failures;
} concurrent_t;

static void *concurrent_thread(void *arg) {
    concurrent_t *cc = arg;
    for (int r = 0; r < cc->rounds; r++) {
        cover_t c;
        int64_t count = 1000 + r;
        cover_init(&c, count, r & 1);
        tileops_cpu_parallel_for(count, 10, cover_fn, &c);
        for (int64_t i = 0; i < count; i++)
            if (atomic_load(&c.hits[i]) != 1) {
                atomic_fetch_add(&cc->failures, 1);
                break;
            }
        if (c.nested)
            for (int64_t i = 0; i < count * NESTED; i++)
                if (atomic_load(&c.inner[i]) != 1) {
                    atomic_fetch_add(&cc->failures, 1);
                    break;
                }
        free(c.hits);
        free(c.inner);
    }
    return NULL;
}

static void test_pool(void) {
    int def = tileops_cpu_num_threads();
    check(def >= 1, "default num_threads %d", def);
    tileops_clear_error();
    tileops_status_t st = tileops_cpu_set_num_threads(0);
    check(st == TILEOPS_ERR_INVALID_ARGUMENT && tileops_last_error()[0] != '\0',
          "set_num_threads(0) gave %s, message '%s'", tileops_status_name(st),
          tileops_last_error());
    st = tileops_cpu_set_num_threads(-3);
    check(st == TILEOPS_ERR_INVALID_ARGUMENT, "set_num_threads(-3) gave %s",
          tileops_status_name(st));

    static const int64_t counts[] = {0, 1, 2, 3, 5, 7, 8, 16, 63, 100, 1000, 4097, 100003};
    static const int64_t mins[] = {0, 1, 3, 64, 1000};
    static const int threads[] = {1, 2, 3, 4, 8, 17};
    int bad = 0;
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        tileops_cpu_set_num_threads(threads[t]);
        check(tileops_cpu_num_threads() == threads[t], "num_threads %d after set %d",
              tileops_cpu_num_threads(), threads[t]);
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (size_t m = 0; m < sizeof mins / sizeof mins[0]; m++)
                for (int nested = 0; nested < 2; nested++) {
                    if (nested && counts[c] > 5000)
                        continue;
                    bad += !run_cover(counts[c], mins[m], threads[t], nested, "");
                }
    }
    (void)bad;

    /* Two user threads at once, each also nesting: nobody may deadlock or lose work. */
    tileops_cpu_set_num_threads(3);
    concurrent_t cc = {.rounds = 200};
    atomic_init(&cc.failures, 0);
    pthread_t th[3];
    int started = 0;
    for (int i = 0; i < 3; i++)
        started += pthread_create(&th[i], NULL, concurrent_thread, &cc) == 0;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    check(started == 3 && atomic_load(&cc.failures) == 0,
          "concurrent parallel_for from %d threads: %d failures", started,
          atomic_load(&cc.failures));

    /* A forked child must get working workers of its own, not wait on the parent's. */
    tileops_cpu_set_num_threads(3);
    run_cover(1000, 1, 3, 0, "before fork");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long f0 = g_failed;
        for (int r = 0; r < 20; r++)
            run_cover(1000 + r, 1, 3, r & 1, "in forked child");
        fflush(stdout);
        _exit(g_failed == f0 ? 0 : 1);
    }
    if (check(pid > 0, "fork failed")) {
        int status = 0, done = 0;
        for (int waited = 0; waited < 3000 && !done; waited++) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid)
                done = 1;
            else
                usleep(10000);
        }
        if (!done) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        check(done && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "parallel_for in a forked child: %s",
              done ? "child reported failures" : "child hung (killed after 30 s)");
    }
    run_cover(1000, 1, 3, 0, "after fork, in the parent");
    tileops_cpu_set_num_threads(def);
}

/* ---- RMSNorm ------------------------------------------------------------------------ */

typedef struct shape {
    int64_t rows, n, xpad, ypad;
    double wscale; /* weights are uniform in [-2, 2] * wscale */
} shape_t;

static const char *variant_name(int v) {
    return v == 0 ? "ROW" : v == 1 ? "ON_CHIP" : "STREAMING";
}

static const char *level_name(int l) { return l == 2 ? "avx512" : l == 1 ? "avx2" : "scalar"; }

/* Compares one output to the reference; returns the number of bad elements and describes
 * the first. */
static int64_t compare_out(const void *got, const void *ref, const shape_t *s, int dt,
                           char *why, size_t why_len) {
    int64_t bad = 0;
    int64_t ys = s->n + s->ypad;
    for (int64_t r = 0; r < s->rows; r++) {
        for (int64_t i = 0; i < ys; i++) {
            int64_t k = r * ys + i;
            const char *problem = NULL;
            if (i >= s->n) {
                if (!is_poison(got, k, dt))
                    problem = "padding written";
            } else if (is_poison(got, k, dt)) {
                problem = "not written";
            } else if (dt == TILEOPS_FLOAT32) {
                double a = ((const float *)got)[k], b = ((const float *)ref)[k];
                if (!(fabs(a - b) <= 1e-5 * fabs(b) + 1e-30))
                    problem = "fp32 rel err > 1e-5";
            } else {
                uint16_t a = ((const uint16_t *)got)[k], b = ((const uint16_t *)ref)[k];
                int32_t d = ordered16(a) - ordered16(b);
                if (is_nan16(a, dt) || d > 1 || d < -1)
                    problem = "more than 1 ulp off";
            }
            if (problem != NULL && bad++ == 0)
                snprintf(why, why_len, "row %lld col %lld: %s (got %.9g, ref %.9g)",
                         (long long)r, (long long)i, problem, elem(got, k, dt),
                         elem(ref, k, dt));
        }
    }
    return bad;
}

/* Runs `a` with `variant` over a poisoned a->y and compares that with ref: the number of
 * bad elements (the first described in why), or -1 when the call failed (*st says how). */
static int64_t run_compare(const tileops_rms_norm_args_t *a, int variant, const void *ref,
                           const shape_t *s, tileops_status_t *st, char *why, size_t why_len) {
    poison(a->y, s->rows * (s->n + s->ypad), a->dtype);
    *st = tileops_cpu_rms_norm(a, variant);
    return *st == TILEOPS_OK ? compare_out(a->y, ref, s, a->dtype, why, why_len) : -1;
}

static void fill_input(void *x, const shape_t *s, int dt, int64_t stride) {
    for (int64_t r = 0; r < s->rows; r++) {
        /* Rows of very different magnitudes; never all zero. */
        double mag = pow(10.0, urand(-3.0, 3.0));
        for (int64_t i = 0; i < stride; i++)
            put(x, r * stride + i, dt, i < s->n ? (float)(urand(-2.0, 2.0) * mag) : 1e4f);
    }
}

static void test_rms_norm_shape(const shape_t *s, const int *levels, int nlevels) {
    const int dts[] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16};
    const int thread_counts[] = {1, 2, 3};
    int64_t xs = s->n + s->xpad, ys = s->n + s->ypad;
    for (int d = 0; d < 3; d++) {
        int dt = dts[d];
        size_t es = tileops_dtype_size(dt);
        void *x = xmalloc(es * (size_t)(s->rows * xs));
        void *w = xmalloc(es * (size_t)s->n);
        void *ref = xmalloc(es * (size_t)(s->rows * ys));
        void *y = xmalloc(es * (size_t)(s->rows * ys));
        void *first = xmalloc(es * (size_t)(s->rows * ys));
        fill_input(x, s, dt, xs);
        for (int64_t i = 0; i < s->n; i++)
            put(w, i, dt, (float)(urand(-2.0, 2.0) * s->wscale));
        for (int has_w = 0; has_w < 2; has_w++) {
            tileops_rms_norm_args_t a = {
                .x = x,
                .weight = has_w ? w : NULL,
                .y = NULL,
                .rows = s->rows,
                .n = s->n,
                .x_row_stride = xs,
                .y_row_stride = ys,
                .eps = 1e-6f,
                .dtype = dt,
            };
            poison(ref, s->rows * ys, dt);
            a.y = ref;
            tileops_status_t st = tileops_cpu_rms_norm_reference(&a);
            check(st == TILEOPS_OK, "reference failed: %s", tileops_last_error());
            /* First the dispatch a user gets (no forced level); every vector path
             * must then reproduce its bits. */
            tileops_cpu_simd_override(-1);
            tileops_cpu_set_num_threads(3);
            a.y = y;
            char why0[256] = "";
            int64_t bad0 = run_compare(&a, TILEOPS_RMS_NORM_ROW, ref, s, &st, why0, sizeof why0);
            check(bad0 == 0,
                  "rms_norm default dispatch (%s) ROW %s rows=%lld n=%lld weight=%d: status %s, "
                  "%lld bad elements; first: %s",
                  tileops_cpu_simd_level(), tileops_dtype_name(dt), (long long)s->rows,
                  (long long)s->n, has_w, tileops_status_name(st), (long long)bad0, why0);
            memcpy(first, y, es * (size_t)(s->rows * ys));
            int have_first = 1;
            for (int li = 0; li < nlevels; li++) {
                tileops_cpu_simd_override(levels[li]);
                /* The vector paths share one arithmetic; the scalar fallback keeps the
                 * order but does not fuse, so it is only compared with itself. */
                if (levels[li] == TILEOPS_SIMD_SCALAR)
                    have_first = 0;
                for (int v = 0; v < 3; v++) {
                    for (int t = 0; t < 3; t++) {
                        tileops_cpu_set_num_threads(thread_counts[t]);
                        char why[256] = "";
                        int64_t bad = run_compare(&a, v, ref, s, &st, why, sizeof why);
                        check(bad == 0,
                              "rms_norm %s %s %s rows=%lld n=%lld xs=%lld ys=%lld weight=%d "
                              "threads=%d: status %s, %lld bad elements; first: %s",
                              level_name(levels[li]), variant_name(v), tileops_dtype_name(dt),
                              (long long)s->rows, (long long)s->n, (long long)xs, (long long)ys,
                              has_w, thread_counts[t], tileops_status_name(st), (long long)bad,
                              why);
                        /* Every variant, thread count and vector path adds the same
                         * numbers in the same order: demand identical bits. */
                        if (!have_first) {
                            memcpy(first, y, es * (size_t)(s->rows * ys));
                            have_first = 1;
                        } else {
                            check(memcmp(first, y, es * (size_t)(s->rows * ys)) == 0,
                                  "rms_norm %s %s %s rows=%lld n=%lld weight=%d threads=%d: "
                                  "output bits differ from the default dispatch's (or, for scalar, its own first run)",
                                  level_name(levels[li]), variant_name(v),
                                  tileops_dtype_name(dt), (long long)s->rows, (long long)s->n,
                                  has_w, thread_counts[t]);
                        }
                    }
                    /* Batch invariance: a row computed alone equals the same row in the
                     * full call, bit for bit. */
                    if (s->rows > 1) {
                        int64_t pick[3] = {0, s->rows / 2, s->rows - 1};
                        int64_t bad_rows = 0;
                        void *one = xmalloc(es * (size_t)ys);
                        for (int p = 0; p < 3; p++) {
                            tileops_rms_norm_args_t b = a;
                            b.x = (const char *)x + (size_t)(pick[p] * xs) * es;
                            b.y = one;
                            b.rows = 1;
                            poison(one, ys, dt);
                            tileops_cpu_rms_norm(&b, v);
                            if (memcmp(one, (char *)y + (size_t)(pick[p] * ys) * es,
                                       es * (size_t)s->n) != 0)
                                bad_rows++;
                        }
                        free(one);
                        check(bad_rows == 0,
                              "batch invariance %s %s %s rows=%lld n=%lld weight=%d: %lld of 3 "
                              "rows differ when computed alone",
                              level_name(levels[li]), variant_name(v), tileops_dtype_name(dt),
                              (long long)s->rows, (long long)s->n, has_w, (long long)bad_rows);
                    }
                }
            }
            tileops_cpu_simd_override(-1);
        }
        free(x);
        free(w);
        free(ref);
        free(y);
        free(first);
    }
}

/* The reference itself, against a direct double computation in this file. */
static void test_reference_sanity(void) {
    const int64_t rows = 3, n = 1000;
    float *x = xmalloc(sizeof(float) * rows * n), *w = xmalloc(sizeof(float) * n);
    float *y = xmalloc(sizeof(float) * rows * n);
    uint16_t *xb = xmalloc(2 * rows * n), *wb = xmalloc(2 * n), *yb = xmalloc(2 * rows * n);
    for (int64_t i = 0; i < rows * n; i++) {
        x[i] = (float)urand(-3, 3);
        xb[i] = tileops_f32_to_f16(x[i]);
    }
    for (int64_t i = 0; i < n; i++) {
        w[i] = (float)urand(-1, 1);
        wb[i] = tileops_f32_to_f16(w[i]);
    }
    tileops_rms_norm_args_t a = {x, w, y, rows, n, n, n, 1e-5f, TILEOPS_FLOAT32};
    tileops_cpu_rms_norm_reference(&a);
    tileops_rms_norm_args_t b = {xb, wb, yb, rows, n, n, n, 1e-5f, TILEOPS_FLOAT16};
    tileops_cpu_rms_norm_reference(&b);
    int64_t bad32 = 0, bad16 = 0;
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0, ssh = 0;
        for (int64_t i = 0; i < n; i++) {
            ss += (double)x[r * n + i] * x[r * n + i];
            double h = tileops_f16_to_f32(xb[r * n + i]);
            ssh += h * h;
        }
        double sc = 1.0 / sqrt(ss / n + 1e-5f), sch = 1.0 / sqrt(ssh / n + 1e-5f);
        for (int64_t i = 0; i < n; i++) {
            double want = (double)x[r * n + i] * sc * w[i];
            bad32 += fabs(y[r * n + i] - want) > 1e-7 * fabs(want) + 1e-30;
            double wanth = tileops_f16_to_f32(xb[r * n + i]) * sch * tileops_f16_to_f32(wb[i]);
            /* Correctly rounded: no other half is nearer to the exact value. */
            uint16_t got = yb[r * n + i];
            double err = fabs(tileops_f16_to_f32(got) - wanth);
            uint16_t up = (uint16_t)(got + 1), down = (uint16_t)(got - 1);
            if (fabs(tileops_f16_to_f32(up) - wanth) < err ||
                ((got & 0x7fff) != 0 && fabs(tileops_f16_to_f32(down) - wanth) < err))
                bad16++;
        }
    }
    check(bad32 == 0, "reference fp32: %lld elements off the double computation", (long long)bad32);
    check(bad16 == 0, "reference fp16: %lld elements not correctly rounded", (long long)bad16);
    free(x), free(w), free(y), free(xb), free(wb), free(yb);
}

static void expect_invalid(const tileops_rms_norm_args_t *a, int variant, const char *what,
                           const char *mention) {
    tileops_clear_error();
    tileops_status_t st = tileops_cpu_rms_norm(a, variant);
    const char *msg = tileops_last_error();
    check(st == TILEOPS_ERR_INVALID_ARGUMENT && strncmp(msg, "rms_norm: ", 10) == 0 &&
              strstr(msg, mention) != NULL,
          "rms_norm with %s: status %s, message '%s' (want INVALID_ARGUMENT naming '%s')", what,
          tileops_status_name(st), msg, mention);
    if (variant == 0) {
        tileops_clear_error();
        st = tileops_cpu_rms_norm_reference(a);
        msg = tileops_last_error();
        check(st == TILEOPS_ERR_INVALID_ARGUMENT && strncmp(msg, "rms_norm: ", 10) == 0 &&
                  strstr(msg, mention) != NULL,
              "reference with %s: status %s, message '%s'", what, tileops_status_name(st), msg);
    }
}

static void test_rms_norm_errors(void) {
    float x[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, y[16];
    tileops_rms_norm_args_t good = {x, NULL, y, 2, 8, 8, 8, 1e-6f, TILEOPS_FLOAT32};
    tileops_rms_norm_args_t a;
    expect_invalid(NULL, 0, "args NULL", "args");
    a = good, a.x = NULL;
    expect_invalid(&a, 0, "x NULL", "x must");
    a = good, a.y = NULL;
    expect_invalid(&a, 0, "y NULL", "y must");
    a = good, a.n = 0;
    expect_invalid(&a, 0, "n = 0", "n must be >= 1, got 0");
    a = good, a.n = -4;
    expect_invalid(&a, 1, "n = -4", "got -4");
    a = good, a.rows = -1;
    expect_invalid(&a, 0, "rows = -1", "rows must be >= 0, got -1");
    a = good, a.dtype = TILEOPS_INT32; /* a valid code, but not a float type */
    expect_invalid(&a, 0, "dtype = int32", "got 3");
    a = good, a.dtype = TILEOPS_BOOL;
    expect_invalid(&a, 1, "dtype = bool", "got 6");
    a = good, a.dtype = TILEOPS_DTYPE_COUNT_;
    expect_invalid(&a, 0, "dtype = count", "dtype");
    a = good, a.dtype = -1;
    expect_invalid(&a, 2, "dtype = -1", "got -1");
    a = good, a.x_row_stride = 7;
    expect_invalid(&a, 0, "x_row_stride < n", "x_row_stride must be >= n (8), got 7");
    a = good, a.y_row_stride = -8;
    expect_invalid(&a, 1, "y_row_stride < 0", "y_row_stride");
    expect_invalid(&good, 3, "variant = 3", "variant");
    expect_invalid(&good, -1, "variant = -1", "variant");
    /* What C can check of a raw address: alignment, and no wrap around the address space
     * over the extent the sizes give (rows 2, stride 8: 64 bytes of fp32). */
    a = good, a.x = (const char *)x + 2;
    expect_invalid(&a, 0, "x misaligned", "x (address");
    a = good, a.weight = (const char *)x + 1;
    expect_invalid(&a, 1, "weight misaligned", "weight (address");
    a = good, a.y = (void *)(UINTPTR_MAX - 31);
    expect_invalid(&a, 0, "y past the top", "y (address");
    a = good, a.y = (void *)(UINTPTR_MAX - 31);
    expect_invalid(&a, 2, "y past the top", "64 bytes) runs past the end of the address space");
    a = good, a.x = (const void *)(UINTPTR_MAX - 63); /* exactly at the top: fits, reads none */
    a.x_row_stride = 16;                                /* but a wider stride does not */
    expect_invalid(&a, 0, "x past the top with its stride", "96 bytes) runs past the end");
    /* rows == 0 is a no-op, pointers unused. */
    a = good, a.rows = 0, a.x = NULL, a.y = NULL;
    for (int v = 0; v < 3; v++)
        check(tileops_cpu_rms_norm(&a, v) == TILEOPS_OK, "rows = 0 with NULL pointers, variant %d",
              v);
    check(tileops_cpu_rms_norm_reference(&a) == TILEOPS_OK, "reference rows = 0");
    const char *lvl = tileops_cpu_simd_level();
    check(strcmp(lvl, "avx512_bf16") == 0 || strcmp(lvl, "avx512") == 0 || strcmp(lvl, "avx2") == 0 ||
              strcmp(lvl, "scalar") == 0,
          "simd level '%s'", lvl);
}

/* A NaN in a row makes that row NaN; an infinity makes its scale 0 (so inf * 0 = NaN and
 * the rest +-0), as in the reference; other rows are unaffected. */
static void test_rms_norm_special(void) {
    const int64_t rows = 3, n = 100;
    const int dts[] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16};
    for (int d = 0; d < 3; d++) {
        int dt = dts[d];
        size_t es = tileops_dtype_size(dt);
        void *x = xmalloc(es * rows * n), *w = xmalloc(es * n);
        void *y = xmalloc(es * rows * n), *ref = xmalloc(es * rows * n);
        for (int64_t i = 0; i < rows * n; i++)
            put(x, i, dt, (float)urand(-1.5, 1.5));
        for (int64_t i = 0; i < n; i++)
            put(w, i, dt, (float)urand(-1.5, 1.5));
        put(x, n + 5, dt, NAN);
        put(x, 2 * n + 7, dt, INFINITY);
        for (int has_w = 0; has_w < 2; has_w++) {
            tileops_rms_norm_args_t a = {x, has_w ? w : NULL, ref, rows, n, n, n, 1e-6f, dt};
            tileops_cpu_rms_norm_reference(&a);
            a.y = y;
            for (int l = tileops_cpu_simd_detect(); l >= 0; l--) {
                tileops_cpu_simd_override(l);
                for (int v = 0; v < 3; v++) {
                    poison(y, rows * n, dt);
                    tileops_cpu_rms_norm(&a, v);
                    int64_t bad = 0, first = -1;
                    for (int64_t i = 0; i < rows * n; i++) {
                        double g = elem(y, i, dt), r = elem(ref, i, dt);
                        int ok = is_poison(y, i, dt)          ? 0
                                 : isnan(r)                    ? isnan(g)
                                 : i < n                       ? fabs(g - r) <= 0.01 * fabs(r) + 1e-30
                                                               : g == r;
                        if (!ok && bad++ == 0)
                            first = i;
                    }
                    check(bad == 0,
                          "rms_norm with NaN / inf input, %s %s %s weight=%d: %lld elements "
                          "differ from the reference, first at %lld (got %g, ref %g)",
                          level_name(l), variant_name(v), tileops_dtype_name(dt), has_w,
                          (long long)bad, (long long)first,
                          first >= 0 ? elem(y, first, dt) : 0.0,
                          first >= 0 ? elem(ref, first, dt) : 0.0);
                }
            }
            tileops_cpu_simd_override(-1);
        }
        free(x), free(w), free(y), free(ref);
    }
}

/* bf16 outputs down into the subnormal range (weights 2^-100 .. 2^-140): every vector
 * path, and AVX-512 with AVX512_BF16's converts on and off, give the AVX2 path's bits
 * (the converts read a subnormal as 0, so a vector holding one must not use them). */
static void test_rms_norm_bf16_subnormal(void) {
    const int64_t rows = 4, n = 256;
    const int dt = TILEOPS_BFLOAT16;
    void *x = xmalloc(2 * rows * n), *w = xmalloc(2 * n), *y0 = xmalloc(2 * rows * n), *y = xmalloc(2 * rows * n);
    for (int64_t i = 0; i < rows * n; i++)
        put(x, i, dt, (float)urand(-2.0, 2.0));
    for (int64_t i = 0; i < n; i++)
        put(w, i, dt, ldexpf((float)urand(1.0, 2.0), -100 - (int)(i % 41)));
    if (tileops_cpu_simd_detect() < TILEOPS_SIMD_AVX2) {
        printf("no AVX2 here: bf16 subnormal outputs not compared\n");
        free(x), free(w), free(y0), free(y);
        return;
    }
    tileops_rms_norm_args_t a = {x, w, y0, rows, n, n, n, 1e-6f, dt};
    tileops_cpu_simd_override(TILEOPS_SIMD_AVX2);
    tileops_cpu_rms_norm(&a, 0);
    int64_t sub = 0;
    for (int64_t i = 0; i < rows * n; i++)
        sub += elem(y0, i, dt) != 0.0 && fabs(elem(y0, i, dt)) < 0x1p-126;
    check(sub > rows * n / 8, "bf16 subnormal outputs: %lld of %lld, expected many", (long long)sub,
          (long long)(rows * n));
    a.y = y;
    for (int cvt = 0; cvt < 2 && tileops_cpu_simd_detect() == TILEOPS_SIMD_AVX512; cvt++) {
        if (tileops_cpu_simd_bf16_cvt_override(cvt) != TILEOPS_OK)
            continue;
        tileops_cpu_simd_override(TILEOPS_SIMD_AVX512);
        for (int v = 0; v < 3; v++) {
            poison(y, rows * n, dt);
            tileops_cpu_rms_norm(&a, v);
            check(memcmp(y, y0, 2 * rows * n) == 0, "bf16 subnormal outputs: avx512 (converts %s) %s differs from avx2",
                  cvt ? "on" : "off", variant_name(v));
        }
    }
    tileops_cpu_simd_bf16_cvt_override(-1);
    tileops_cpu_simd_override(-1);
    free(x), free(w), free(y0), free(y);
}

/* An output of >= 8 MiB is written with non-temporal stores when its pages are in memory
 * and with plain stores when they are not yet (a fresh mapping, as glibc gives a new
 * output of 32 MiB or more): both must give the same bits, into every byte. */
static void test_rms_norm_fresh_output(void) {
    const int64_t rows = 600, n = 4096; /* 9.4 MiB of float32 */
    const size_t bytes = (size_t)(rows * n) * 4;
    float *x = xmalloc(bytes), *w = xmalloc((size_t)n * 4), *y_res = xmalloc(bytes);
    for (int64_t i = 0; i < rows * n; i++)
        x[i] = (float)urand(-2.0, 2.0);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)urand(0.5, 1.5);
    for (int v = 0; v < 2; v++) { /* ROW and ON_CHIP: the variants that choose */
        poison(y_res, rows * n, TILEOPS_FLOAT32); /* touched: every page resident */
        tileops_rms_norm_args_t a = {x, w, y_res, rows, n, n, n, 1e-6f, TILEOPS_FLOAT32};
        tileops_status_t st = tileops_cpu_rms_norm(&a, v);
        void *fresh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!check(fresh != MAP_FAILED, "fresh output: mmap of %zu bytes failed", bytes))
            break;
        unsigned char page_in = 1;
        (void)mincore((char *)fresh + bytes / 2, 1, &page_in);
        check(!(page_in & 1u), "fresh output: a new mapping's middle page is not in memory yet");
        a.y = fresh;
        tileops_status_t st2 = tileops_cpu_rms_norm(&a, v);
        check(st == TILEOPS_OK && st2 == TILEOPS_OK, "fresh output %s: status %d / %d", variant_name(v),
              (int)st, (int)st2);
        check(memcmp(fresh, y_res, bytes) == 0,
              "fresh output %s: a new mapping and a resident buffer got different bits",
              variant_name(v));
        munmap(fresh, bytes);
    }
    free(x), free(w), free(y_res);
}

static void test_rms_norm(void) {
    int levels[3], nlevels = 0;
    int best = tileops_cpu_simd_detect();
    /* Best first, so the bit-identity checks compare everything against it. */
    for (int l = best; l >= 0; l--)
        levels[nlevels++] = l;
    printf("simd: %s (testing", tileops_cpu_simd_level());
    for (int i = 0; i < nlevels; i++)
        printf(" %s", level_name(levels[i]));
    printf(")\n");
    static const shape_t shapes[] = {
        {0, 4096, 0, 0, 1},   {1, 1, 0, 0, 1},       {5, 1, 0, 0, 1},
        {1, 3, 0, 0, 1},      {4, 3, 0, 0, 1},       {3, 127, 0, 0, 1},
        {1, 4095, 0, 0, 1},   {1, 4096, 0, 0, 1},    {1, 4097, 0, 0, 1},
        {37, 4096, 0, 0, 1},  {37, 4097, 0, 0, 1},   {37, 127, 0, 0, 1},
        {37, 64, 0, 0, 1},    {37, 4096, 5, 3, 1},   {37, 4097, 64, 1, 1},
        {7, 127, 1, 64, 1},   {3, 1, 2, 7, 1},       {9, 33, 3, 0, 1},
        {2, 100003, 0, 0, 1}, {2, 12289, 0, 17, 1},  {1100, 64, 0, 0, 1},
        {300, 256, 1, 1, 1},  {640, 4096, 0, 0, 1},  {41, 1000, 0, 0, 1e-5},
        {64, 4096, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        test_rms_norm_shape(&shapes[i], levels, nlevels);
}

/* The table entries are what Python calls: they must be registered with the documented
 * format and give exactly what the C entry points give, argument for argument. */
static void test_rms_norm_table_entries(void) {
    enum { ROWS = 5, N = 77 };
    float x[ROWS * N], w[N], y_direct[ROWS * N], y_table[ROWS * N];
    for (int i = 0; i < ROWS * N; i++)
        x[i] = (float)urand(-3, 3);
    for (int i = 0; i < N; i++)
        w[i] = (float)urand(-2, 2);
    static const char *const names[2] = {"rms_norm", "rms_norm_reference"};
    for (int ref = 0; ref < 2; ref++) {
        int h = -1;
        tileops_status_t st = tileops_cpu_kernel_lookup(names[ref], &h);
        const tileops_cpu_kernel_t *k = tileops_cpu_kernel_get(h);
        check(st == TILEOPS_OK && k && strcmp(k->arg_format, "pppqqqqfii") == 0,
              "table entry %s: %s, format '%s'", names[ref], tileops_last_error(),
              k ? k->arg_format : "(none)");
        if (!k)
            continue;
        for (int variant = 0; variant < 3; variant++) {
            tileops_rms_norm_args_t a = {x, w, y_direct, ROWS, N, N, N, 1e-5f, TILEOPS_FLOAT32};
            st = ref ? tileops_cpu_rms_norm_reference(&a) : tileops_cpu_rms_norm(&a, variant);
            tileops_arg_t args[10];
            args[0].p = (uintptr_t)x;
            args[1].p = (uintptr_t)w;
            args[2].p = (uintptr_t)y_table;
            args[3].q = ROWS;
            args[4].q = N;
            args[5].q = N;
            args[6].q = N;
            args[7].f = 1e-5f;
            args[8].i = TILEOPS_FLOAT32;
            args[9].i = variant;
            tileops_status_t st2 = tileops_cpu_kernel_launch(h, args, 10);
            check(st == TILEOPS_OK && st2 == TILEOPS_OK &&
                      memcmp(y_direct, y_table, sizeof y_direct) == 0,
                  "%s through the table, variant %d: same bits as the C entry point", names[ref],
                  variant);
        }
        /* the kernel's own checks still run behind the table */
        tileops_arg_t bad[10];
        memset(bad, 0, sizeof bad);
        bad[3].q = 4; /* rows = 4, n = 0 */
        st = tileops_cpu_kernel_launch(h, bad, 10);
        check(st == TILEOPS_ERR_INVALID_ARGUMENT && strstr(tileops_last_error(), "n must be >= 1"),
              "%s through the table with n = 0: %s '%s'", names[ref], tileops_status_name(st),
              tileops_last_error());
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_status();
    test_status_threads();
    test_half_conversions();
    test_pool();
    test_reference_sanity();
    test_rms_norm_errors();
    test_rms_norm_table_entries();
    test_rms_norm_special();
    test_rms_norm_bf16_subnormal();
    test_rms_norm_fresh_output();
    test_rms_norm();
    printf("%ld passed, %ld failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
