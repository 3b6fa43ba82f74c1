/* cpu/memory.c: the fresh-output probe and huge-page advice every CPU kernel shares
 * (cpu/memory.h says why). */
#include "cpu/memory.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* TILEOPS_CPU_HUGEPAGES=0 turns the huge-page advice off; read once. */
static int huge_pages_allowed(void) {
    static atomic_int allowed = -1;
    int v = atomic_load_explicit(&allowed, memory_order_relaxed);
    if (v < 0) {
        const char *env = getenv("TILEOPS_CPU_HUGEPAGES");
        /* "0", blanks around it allowed (as the Python layer, which warns of other values, reads it) */
        while (env != NULL && (*env == ' ' || *env == '\t' || *env == '\n'))
            env++;
        v = env == NULL || env[0] != '0' || strspn(env + 1, " \t\n") != strlen(env + 1);
        atomic_store_explicit(&allowed, v, memory_order_relaxed);
    }
    return v;
}

int tileops_cpu_fresh_output(void *p, int64_t bytes, int64_t advise_min_bytes) {
#if defined(__linux__)
    if (p == NULL || bytes <= 0)
        return 0;
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return 0;
    const uintptr_t begin = (uintptr_t)p, end = begin + (uintptr_t)bytes;
    const uintptr_t probe[3] = {begin, begin + (uintptr_t)bytes / 2, end - 1};
    int resident = 1;
    for (int k = 0; k < 3 && resident; k++) {
        unsigned char in_memory = 0;
        if (mincore((void *)(probe[k] & ~(uintptr_t)(page - 1)), 1, &in_memory) != 0)
            return 0; /* not a mapping we can tell anything about */
        resident = in_memory & 1u;
    }
    if (resident)
        return 0;
#if defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    const uintptr_t lo = (begin + huge - 1) & ~(huge - 1), hi = end & ~(huge - 1);
    if (bytes >= advise_min_bytes && hi > lo && huge_pages_allowed())
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#endif
    return 1;
#else
    (void)p;
    (void)bytes;
    (void)advise_min_bytes;
    return 0;
#endif
}

/* ---- a thread's scratch ------------------------------------------------------------- */
static _Thread_local struct {
    void *p;
    size_t cap;
} tl_scratch;
static pthread_key_t g_scratch_key; /* its destructor frees a thread's buffer when the thread exits */
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static int g_scratch_key_ok;

static void scratch_key_make(void) { g_scratch_key_ok = pthread_key_create(&g_scratch_key, free) == 0; }

void *tileops_cpu_scratch(size_t bytes) {
    if (bytes <= tl_scratch.cap)
        return tl_scratch.p;
    pthread_once(&g_scratch_once, scratch_key_make);
    void *p = malloc(bytes); /* not realloc: nothing to keep */
    if (p == NULL)
        return NULL;
    free(tl_scratch.p);
    tl_scratch.p = p;
    tl_scratch.cap = bytes;
    if (g_scratch_key_ok)
        (void)pthread_setspecific(g_scratch_key, p);
    return p;
}
