/* status.c: the thread-local error message behind tileops_fail / tileops_last_error.
 *
 * The message lives in static thread-local storage, so recording a failure never
 * allocates (it must work when the failure being reported is an out-of-memory) and
 * nothing has to be freed when a thread ends. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tileops/status.h"

/* Two buffers, used in turn: callers often wrap an earlier message, as in
 * tileops_fail(st, "loading x: %s", tileops_last_error()), and vsnprintf into the
 * buffer it is reading from would be undefined behaviour. Formatting into the other
 * buffer and then switching keeps that pattern safe. */
static _Thread_local char tl_msg[2][TILEOPS_ERROR_MAX];
static _Thread_local int tl_cur;
static _Thread_local char tl_arg[TILEOPS_ARGUMENT_MAX];

const char *tileops_last_error(void) { return tl_msg[tl_cur & 1]; }

const char *tileops_last_error_argument(void) { return tl_arg; }

const char *tileops_status_name(tileops_status_t status) {
    switch (status) {
    case TILEOPS_OK: return "TILEOPS_OK";
    case TILEOPS_ERR_INVALID_ARGUMENT: return "TILEOPS_ERR_INVALID_ARGUMENT";
    case TILEOPS_ERR_UNSUPPORTED: return "TILEOPS_ERR_UNSUPPORTED";
    case TILEOPS_ERR_OUT_OF_MEMORY: return "TILEOPS_ERR_OUT_OF_MEMORY";
    case TILEOPS_ERR_LIBRARY: return "TILEOPS_ERR_LIBRARY";
    case TILEOPS_ERR_COMPILE: return "TILEOPS_ERR_COMPILE";
    case TILEOPS_ERR_CUDA: return "TILEOPS_ERR_CUDA";
    case TILEOPS_ERR_CACHE: return "TILEOPS_ERR_CACHE";
    case TILEOPS_ERR_CAPTURING: return "TILEOPS_ERR_CAPTURING";
    case TILEOPS_ERR_INTERNAL: return "TILEOPS_ERR_INTERNAL";
    case TILEOPS_STATUS_COUNT_: break;
    }
    return "TILEOPS_ERR_UNKNOWN";
}

/* the message of fmt and its arguments into the buffer not in use, then that buffer current */
static void record(tileops_status_t status, const char *fmt, va_list ap) {
    /* Callers may still want errno from the call that failed after reporting it. */
    int saved_errno = errno;
    int next = (tl_cur & 1) ^ 1;
    char *buf = tl_msg[next];
    buf[0] = '\0';
    if (fmt != NULL) {
        int len = vsnprintf(buf, TILEOPS_ERROR_MAX, fmt, ap);
        if (len < 0) /* an encoding error leaves the buffer unspecified */
            snprintf(buf, TILEOPS_ERROR_MAX, "%s (the message could not be formatted)",
                     tileops_status_name(status));
    }
    tl_cur = next;
    errno = saved_errno;
}

tileops_status_t tileops_fail(tileops_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(status, fmt, ap);
    va_end(ap);
    tl_arg[0] = '\0';
    return status;
}

tileops_status_t tileops_fail_arg(tileops_status_t status, const char *argument, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(status, fmt, ap);
    va_end(ap);
    if (argument != tl_arg) /* a failure passed on with its own argument keeps it */
        snprintf(tl_arg, sizeof tl_arg, "%s", argument != NULL ? argument : "");
    return status;
}

void tileops_clear_error(void) {
    tl_msg[0][0] = '\0';
    tl_msg[1][0] = '\0';
    tl_arg[0] = '\0';
}
