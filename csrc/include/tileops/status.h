/* tileops/status.h: status codes and the thread-local error message.
 *
 * Every fallible function of the C core returns a tileops_status_t. On failure it
 * also stores a message in a thread-local buffer that tileops_last_error() returns;
 * the CPython binding turns (status, message) into a typed Python exception.
 * The core never exits, aborts or prints. */
#ifndef TILEOPS_STATUS_H
#define TILEOPS_STATUS_H

#ifdef __cplusplus
#error "tileops is a C library: compile it as C11"
#endif

typedef enum tileops_status {
    TILEOPS_OK = 0,
    TILEOPS_ERR_INVALID_ARGUMENT = 1, /* bad sizes, strides, null pointers, unknown dtype code */
    TILEOPS_ERR_UNSUPPORTED = 2,      /* a valid request this build or machine cannot serve */
    TILEOPS_ERR_OUT_OF_MEMORY = 3,
    TILEOPS_ERR_LIBRARY = 4,          /* libcuda / libnvrtc missing, or a symbol missing in it */
    TILEOPS_ERR_COMPILE = 5,          /* NVRTC rejected a program; the message holds the full log */
    TILEOPS_ERR_CUDA = 6,             /* a driver call failed; the message names the call and error */
    TILEOPS_ERR_CACHE = 7,            /* the disk cache could not be read or written */
    TILEOPS_ERR_CAPTURING = 8,        /* a build was needed while the stream is being captured */
    TILEOPS_ERR_INTERNAL = 9,
    TILEOPS_STATUS_COUNT_ = 10
} tileops_status_t;

/* The message of the last failure on this thread ("" if none). Valid until the next
 * failing call on the same thread. */
const char *tileops_last_error(void);

/* A short constant name of a status, e.g. "TILEOPS_ERR_COMPILE". */
const char *tileops_status_name(tileops_status_t status);

/* Records a failure: formats the message into the thread-local buffer (truncated to its
 * size, TILEOPS_ERROR_MAX bytes) and returns status, so callers write
 * `return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "rms_norm: n must be > 0, got %lld", n);` */
#define TILEOPS_ERROR_MAX 65536
tileops_status_t tileops_fail(tileops_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* tileops_fail, naming the argument the failure is about (its name in the kernel's
 * argument list, at most TILEOPS_ARGUMENT_MAX - 1 bytes; NULL for none), which
 * tileops_last_error_argument() returns: the binding hands it to Python as the exception's
 * `argument`, so the op names its own argument without reading the message. */
#define TILEOPS_ARGUMENT_MAX 64
tileops_status_t tileops_fail_arg(tileops_status_t status, const char *argument, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The argument the last failure on this thread named ("" if none: tileops_fail names none). */
const char *tileops_last_error_argument(void);

/* Clears the thread-local message and argument. */
void tileops_clear_error(void);

#endif /* TILEOPS_STATUS_H */
