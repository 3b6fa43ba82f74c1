/* pool.c: the core's own thread pool (pthreads) behind tileops_cpu_parallel_for.
 *
 * Workers are created on the first parallel call that needs them and then live for
 * the process, sleeping between jobs (after a short spin, so back-to-back kernel calls
 * do not pay a futex wake-up each). The calling thread always runs the first share of
 * a job itself, then takes any share no worker has claimed yet: a worker that the OS
 * has not scheduled (a busy machine) then costs nothing instead of a whole time
 * slice. One job runs at a time: a parallel_for that finds the pool taken -
 * a nested call from inside a job, or a second user thread - runs its whole range on
 * its own thread, which can never deadlock. A fork handler makes a child process start
 * from an empty pool, and a destructor joins the workers so nothing is left for
 * LeakSanitizer to find. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tileops/cpu.h"
#include "tileops/notes.h"

/* A fixed upper bound lets the worker table live in static storage, so workers can read
 * their own slot without any lock and there is no heap block to leak or free. */
#define POOL_MAX_THREADS 1024

/* Polls of the generation counter before a worker (or a waiting caller) goes to sleep.
 * With a pause of a few dozen cycles each this is some tens of microseconds: long
 * enough to cover the gap between the kernel calls of one model step, short enough
 * not to burn a core that another runtime (torch's OpenMP) wants. */
#define POOL_SPIN 4000

typedef struct worker_slot {
    pthread_t thread;
    unsigned start_gen; /* the generation already current when the worker was made */
} worker_slot_t;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* workers: a new generation (job) or shutdown */
    pthread_cond_t done; /* the caller: pending reached 0 */
    int nworkers;        /* workers alive; touched only by the holder of `busy` */
    int sleepers;        /* workers inside pthread_cond_wait (under mu) */
    int shutdown;        /* under mu */
    atomic_uint gen;     /* bumped (under mu) once per job */
    atomic_int pending;  /* shares of the current job, other than share 0, not finished */
    /* (generation << 32) | next unclaimed share. Claiming through one word that also
     * names the job means a worker that wakes late can never claim a share of a newer
     * job with the fields of an older one. */
    _Atomic uint64_t claim;
    atomic_int busy;     /* 1 while a caller owns the pool */
    atomic_int spin;     /* polls before sleeping; 0 when threads outnumber CPUs */
    /* The current job, written under mu before gen is bumped, read under mu. */
    tileops_range_fn fn;
    void *ctx;
    int64_t count;
    int nchunks;
    worker_slot_t slots[POOL_MAX_THREADS];
} pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static atomic_int g_num_threads; /* 0 until first asked for */
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static _Thread_local int tl_owns_pool;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* ---- thread count ----------------------------------------------------------------- */

static int clamp_threads(long n) {
    if (n < 1)
        return 1;
    if (n > POOL_MAX_THREADS)
        return POOL_MAX_THREADS;
    return (int)n;
}

static int affinity_cpus(void) {
    /* The fixed-size cpu_set_t covers 1024 CPUs; a bigger machine makes the call fail
     * with EINVAL, in which case a dynamically sized set is tried. */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0)
            return c;
    }
    for (int ncpu = 2048; ncpu <= 65536; ncpu *= 2) {
        cpu_set_t *dyn = CPU_ALLOC(ncpu);
        if (dyn == NULL)
            break;
        size_t sz = CPU_ALLOC_SIZE(ncpu);
        int c = 0;
        int rc = sched_getaffinity(0, sz, dyn);
        if (rc == 0)
            c = CPU_COUNT_S(sz, dyn);
        CPU_FREE(dyn);
        if (rc == 0 && c > 0)
            return c;
        if (rc != 0 && errno != EINVAL)
            break;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)(c < INT_MAX ? c : INT_MAX) : 1;
}

static int g_cpus; /* CPUs this process may use, found with the first workers */

int tileops_cpu_parse_num_threads(const char *value, int cpus, int *out, char *why,
                                  size_t why_size) {
    if (cpus < 1)
        cpus = 1;
    *out = clamp_threads(cpus);
    if (why && why_size)
        why[0] = '\0';
    const char *p = value;
    while (p != NULL && (*p == ' ' || *p == '\t' || *p == '\n'))
        p++;
    if (p == NULL || *p == '\0') /* unset, empty or blank: not set (the Python layer's reading too) */
        return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    while (end != NULL && (*end == ' ' || *end == '\t' || *end == '\n'))
        end++;
    const int too_big = errno == ERANGE && v == LONG_MAX; /* a whole number, only huge */
    if ((errno != 0 && !too_big) || end == value || end == NULL || *end != '\0' || v < 1) {
        if (why) /* ignored: the Python layer then follows torch.get_num_threads() */
            snprintf(why, why_size, "TILEOPS_NUM_THREADS=%.64s is not a whole number >= 1; ignored", value);
        return 1;
    }
    int cap = clamp_threads(cpus);
    if (v > cap) {
        if (why)
            snprintf(why, why_size, "TILEOPS_NUM_THREADS=%.64s is more than the %d CPUs this "
                     "process may run on; using %d threads", value, cpus, cap);
        *out = cap;
        return 1;
    }
    *out = (int)v;
    return 0;
}

static int default_threads(void) {
    char why[256];
    int n;
    if (tileops_cpu_parse_num_threads(getenv("TILEOPS_NUM_THREADS"), affinity_cpus(), &n, why,
                                      sizeof why))
        tileops_note("tileops: %s", why);
    return n;
}

int tileops_cpu_num_threads(void) {
    int n = atomic_load_explicit(&g_num_threads, memory_order_relaxed);
    if (n > 0)
        return n;
    int expected = 0;
    atomic_compare_exchange_strong(&g_num_threads, &expected, default_threads());
    return atomic_load(&g_num_threads);
}

tileops_status_t tileops_cpu_set_num_threads(int n) {
    if (n < 1)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "set_num_threads: n must be >= 1, got %d", n);
    /* Above the pool's table size the extra threads could never be made; asking for
     * them is not an error, it just gets all there are. */
    atomic_store(&g_num_threads, clamp_threads(n));
    return TILEOPS_OK;
}

/* ---- fork ------------------------------------------------------------------------- */

static void atfork_prepare(void) { pthread_mutex_lock(&pool.mu); }

static void atfork_parent(void) { pthread_mutex_unlock(&pool.mu); }

static void atfork_child(void) {
    /* Only the forking thread exists in the child: the workers are gone and whoever
     * owned the pool too, unless it is this thread. Condition variables may still count
     * waiters that no longer exist, so they are made afresh. */
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.nworkers = 0;
    pool.sleepers = 0;
    pool.shutdown = 0;
    if (tl_owns_pool) {
        /* fork() from inside this thread's own share of a job: it will still run the
         * shares nobody had claimed, but those the parent's workers held are lost here,
         * so do not let it wait for them forever. */
        atomic_store(&pool.pending, 0);
    } else {
        atomic_store(&pool.busy, 0);
    }
}

static void register_atfork(void) {
    /* Failure (ENOMEM) only loses fork safety, which cannot be reported from here. */
    (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- workers ---------------------------------------------------------------------- */

static void chunk_bounds(int64_t count, int nchunks, int i, int64_t *b, int64_t *e) {
    /* Written without count * i, which could overflow int64. */
    int64_t q = count / nchunks, r = count % nchunks;
    *b = (int64_t)i * q + (i < r ? i : r);
    *e = *b + q + (i < r ? 1 : 0);
}

/* Returns the index of an unclaimed share of job `gen`, or -1 when there is none left
 * or the pool has moved on to another job. */
static int claim_share(unsigned gen, int nchunks) {
    uint64_t cur = atomic_load(&pool.claim);
    for (;;) {
        if ((unsigned)(cur >> 32) != gen || (int64_t)(cur & 0xffffffffu) >= nchunks)
            return -1;
        if (atomic_compare_exchange_weak(&pool.claim, &cur, cur + 1))
            return (int)(cur & 0xffffffffu);
    }
}

/* Runs shares of job `gen` until none is left. Once pending reaches 0 the caller may
 * return and its ctx die, so nothing here touches ctx after the last decrement. */
static void run_shares(unsigned gen, tileops_range_fn fn, void *ctx, int64_t count,
                       int nchunks) {
    int c;
    while ((c = claim_share(gen, nchunks)) >= 0) {
        int64_t b, e;
        chunk_bounds(count, nchunks, c, &b, &e);
        if (b < e)
            fn(ctx, b, e);
        if (atomic_fetch_sub(&pool.pending, 1) == 1) {
            /* Taking the lock orders this signal after the caller's check of pending
             * under the same lock, so the wake-up cannot be lost. */
            pthread_mutex_lock(&pool.mu);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.mu);
        }
    }
}

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned seen = pool.slots[id].start_gen;
    for (;;) {
        int spins = atomic_load_explicit(&pool.spin, memory_order_relaxed);
        for (int spin = 0; spin < spins; spin++) {
            if (atomic_load_explicit(&pool.gen, memory_order_relaxed) != seen)
                break;
            cpu_relax();
        }
        pthread_mutex_lock(&pool.mu);
        while (atomic_load_explicit(&pool.gen, memory_order_relaxed) == seen &&
               !pool.shutdown) {
            pool.sleepers++;
            pthread_cond_wait(&pool.wake, &pool.mu);
            pool.sleepers--;
        }
        if (pool.shutdown) {
            pthread_mutex_unlock(&pool.mu);
            return NULL;
        }
        seen = atomic_load_explicit(&pool.gen, memory_order_relaxed);
        tileops_range_fn fn = pool.fn;
        void *ctx = pool.ctx;
        int64_t count = pool.count;
        int nchunks = pool.nchunks;
        pthread_mutex_unlock(&pool.mu);

        run_shares(seen, fn, ctx, count, nchunks);
    }
}

/* Makes sure `want` workers exist (called by the pool's owner only); returns how many
 * do, which is fewer if the system refuses threads. */
static int ensure_workers(int want) {
    if (want > POOL_MAX_THREADS - 1)
        want = POOL_MAX_THREADS - 1;
    if (pool.nworkers >= want)
        return pool.nworkers;
    pthread_once(&g_atfork_once, register_atfork);
    if (g_cpus == 0)
        g_cpus = affinity_cpus();
    /* Workers inherit a fully blocked signal mask, so process signals (Ctrl-C in
     * Python) keep going to the application's own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    unsigned gen = atomic_load(&pool.gen);
    while (pool.nworkers < want) {
        int id = pool.nworkers;
        pool.slots[id].start_gen = gen;
        if (pthread_create(&pool.slots[id].thread, NULL, worker_main, (void *)(intptr_t)id) != 0)
            break;
        pool.nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* Every worker spins after every job, taking part or not. A spinning thread with no
     * core of its own only delays the ones doing the work, so once threads outnumber
     * CPUs everyone sleeps at once. */
    atomic_store(&pool.spin, pool.nworkers + 1 <= g_cpus ? POOL_SPIN : 0);
    return pool.nworkers;
}

/* ---- parallel_for ----------------------------------------------------------------- */

void tileops_cpu_parallel_for(int64_t count, int64_t min_per_thread, tileops_range_fn fn,
                              void *ctx) {
    if (count <= 0 || fn == NULL)
        return;
    if (min_per_thread < 1)
        min_per_thread = 1;
    int threads = tileops_cpu_num_threads();
    int64_t want = count / min_per_thread;
    if (want > threads)
        want = threads;
    int expected = 0;
    if (want <= 1 || !atomic_compare_exchange_strong(&pool.busy, &expected, 1)) {
        fn(ctx, 0, count);
        return;
    }
    tl_owns_pool = 1;
    int nchunks = ensure_workers((int)want - 1) + 1;
    if (nchunks > want)
        nchunks = (int)want;
    if (nchunks <= 1) {
        tl_owns_pool = 0;
        atomic_store(&pool.busy, 0);
        fn(ctx, 0, count);
        return;
    }

    pthread_mutex_lock(&pool.mu);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.count = count;
    pool.nchunks = nchunks;
    atomic_store(&pool.pending, nchunks - 1);
    unsigned gen = atomic_load(&pool.gen) + 1u;
    atomic_store(&pool.claim, ((uint64_t)gen << 32) | 1u); /* share 0 is ours */
    atomic_store(&pool.gen, gen);
    if (pool.sleepers > 0)
        pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    int64_t b, e;
    chunk_bounds(count, nchunks, 0, &b, &e);
    fn(ctx, b, e);
    run_shares(gen, fn, ctx, count, nchunks);

    int spins = atomic_load_explicit(&pool.spin, memory_order_relaxed);
    for (int spin = 0; spin < spins && atomic_load(&pool.pending) > 0; spin++)
        cpu_relax();
    if (atomic_load(&pool.pending) > 0) {
        pthread_mutex_lock(&pool.mu);
        while (atomic_load(&pool.pending) > 0)
            pthread_cond_wait(&pool.done, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
    tl_owns_pool = 0;
    atomic_store(&pool.busy, 0);
}

/* ---- process exit ----------------------------------------------------------------- */

__attribute__((destructor)) static void pool_shutdown(void) {
    /* If a job is still running on another thread at exit, the workers are left alone:
     * joining could wait on that job. Otherwise the pool is taken for good, so any
     * parallel_for from a later destructor runs serially instead of posting a job
     * nobody will pick up. */
    int expected = 0;
    if (!atomic_compare_exchange_strong(&pool.busy, &expected, 1))
        return;
    pthread_mutex_lock(&pool.mu);
    pool.shutdown = 1;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.nworkers; i++)
        pthread_join(pool.slots[i].thread, NULL);
    pool.nworkers = 0;
}
