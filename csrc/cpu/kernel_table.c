/* kernel_table.c: the table of CPU kernels that op files fill at load time and the binding
 * reads by name and launches by handle.
 *
 * The table is a fixed array: registration runs in constructors, before main and before
 * any import can look a kernel up, so it never needs to grow and never allocates. A
 * registration cannot report an error to anyone (no caller sees a constructor's result),
 * so the first problem is remembered and every later lookup fails with it: a broken build
 * then stops at the first kernel a test or an op asks for, never silently runs without
 * the kernel that lost. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>

#include "tileops/kernel_table.h"

#define TABLE_SIZE 256
#define REG_ERROR_MAX 512

static tileops_cpu_kernel_t g_kernels[TABLE_SIZE];
static int g_nargs[TABLE_SIZE]; /* strlen(arg_format), so a launch does not count it */
/* Released after an entry is complete, so a reader that sees the count sees the entry
 * (matters only for a library dlopen'ed while another thread looks kernels up). */
static atomic_int g_count;
static pthread_mutex_t g_register_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_reg_error[REG_ERROR_MAX]; /* first registration problem, "" if none */
static atomic_int g_reg_failed;

/* Keeps the first problem only: later ones are usually its consequences. */
__attribute__((format(printf, 1, 2))) static void remember(const char *fmt, ...) {
    if (atomic_load_explicit(&g_reg_failed, memory_order_relaxed))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_reg_error, sizeof g_reg_error, fmt, ap);
    va_end(ap);
    atomic_store_explicit(&g_reg_failed, 1, memory_order_release);
}

/* 1 when fmt is usable; else remembers why, naming the kernel. */
static int format_ok(const char *name, const char *fmt) {
    if (fmt == NULL) {
        remember("cpu kernel table: kernel '%s' has a NULL arg format", name);
        return 0;
    }
    size_t len = strlen(fmt);
    if (len > TILEOPS_MAX_KERNEL_ARGS) {
        remember("cpu kernel table: kernel '%s' has %zu arguments, at most %d allowed", name, len,
                 TILEOPS_MAX_KERNEL_ARGS);
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (strchr(TILEOPS_ARG_FORMAT_CHARS, fmt[i]) == NULL) {
            remember("cpu kernel table: kernel '%s' has arg format '%s': character %zu is not one "
                     "of \"" TILEOPS_ARG_FORMAT_CHARS "\"", name, fmt, i);
            return 0;
        }
    }
    return 1;
}

void tileops_cpu_kernel_register(const tileops_cpu_kernel_t *kernel) {
    pthread_mutex_lock(&g_register_lock);
    int n = atomic_load_explicit(&g_count, memory_order_relaxed);
    int dup = -1;
    for (int i = 0; kernel != NULL && kernel->name != NULL && i < n; i++)
        if (strcmp(g_kernels[i].name, kernel->name) == 0)
            dup = i;
    if (kernel == NULL) {
        remember("cpu kernel table: a NULL kernel was registered");
    } else if (kernel->name == NULL || kernel->name[0] == '\0') {
        remember("cpu kernel table: a kernel without a name was registered");
    } else if (kernel->fn == NULL) {
        remember("cpu kernel table: kernel '%s' has no function", kernel->name);
    } else if (!format_ok(kernel->name, kernel->arg_format)) {
        /* remembered by format_ok */
    } else if (dup >= 0) {
        remember("cpu kernel table: kernel '%s' is registered twice (arg formats '%s' and '%s')",
                 kernel->name, g_kernels[dup].arg_format, kernel->arg_format);
    } else if (n >= TABLE_SIZE) {
        remember("cpu kernel table: full (%d kernels), cannot add '%s'", TABLE_SIZE, kernel->name);
    } else {
        g_kernels[n] = *kernel;
        g_nargs[n] = (int)strlen(kernel->arg_format);
        atomic_store_explicit(&g_count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_register_lock);
}

int tileops_cpu_kernel_count(void) { return atomic_load_explicit(&g_count, memory_order_acquire); }

const tileops_cpu_kernel_t *tileops_cpu_kernel_get(int handle) {
    if (handle < 0 || handle >= tileops_cpu_kernel_count())
        return NULL;
    return &g_kernels[handle];
}

tileops_status_t tileops_cpu_kernel_lookup(const char *name, int *handle) {
    if (handle != NULL)
        *handle = -1;
    if (atomic_load_explicit(&g_reg_failed, memory_order_acquire))
        return tileops_fail(TILEOPS_ERR_INTERNAL, "%s", g_reg_error);
    if (name == NULL || handle == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "cpu_kernel_lookup: name and handle must be non-NULL");
    int n = tileops_cpu_kernel_count();
    for (int i = 0; i < n; i++) {
        if (strcmp(g_kernels[i].name, name) == 0) {
            *handle = i;
            return TILEOPS_OK;
        }
    }
    /* Naming what exists turns a typo into a one-look fix. */
    char known[1024];
    size_t used = 0;
    known[0] = '\0';
    for (int i = 0; i < n && used < sizeof known; i++) {
        int w = snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", g_kernels[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= sizeof known)
        memcpy(known + sizeof known - 4, "...", 4);
    return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                        "no CPU kernel named '%s' (registered: %s)", name, n ? known : "none");
}

tileops_status_t tileops_cpu_kernel_launch(int handle, const tileops_arg_t *args, int num_args) {
    const tileops_cpu_kernel_t *k = tileops_cpu_kernel_get(handle);
    if (k == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "cpu_kernel_launch: no CPU kernel with handle %d (%d registered)",
                            handle, tileops_cpu_kernel_count());
    if (num_args != g_nargs[handle])
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "cpu_kernel_launch: kernel '%s' takes %d arguments (format '%s'), got %d",
                            k->name, g_nargs[handle], k->arg_format, num_args);
    if (num_args > 0 && args == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "cpu_kernel_launch: kernel '%s': args must be non-NULL", k->name);
    return k->fn(args);
}
