/* tileops._C: the CPython binding of the C core. The only file that includes Python.h.
 *
 * Everything crosses as plain integers and floats (data pointers, sizes, strides, dtype
 * codes, stream handles): the core never sees a torch object, so this module builds with a
 * C compiler alone and serves every torch version. Functions use METH_FASTCALL (no tuple
 * or dict is built per call); CPU kernels run with the GIL released. Kernels of either
 * kind are found once by name and launched by handle through one generic entry each
 * (cpu_launch, cuda_launch), their arguments converted by the kernel's format, so this
 * file does not change when an op is added; plan_call replays an eager CPU call from a
 * plan of data (kernel handle, argument recipes), generic too. A failing core call becomes an exception of
 * the class the Python layer registered for its status code (tileops.errors), carrying
 * the core's message. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "tileops/notes.h"
#include "tileops/runtime.h"
#include "tileops/status.h"

/* Exception classes indexed by status; set by tileops.errors at import. */
static PyObject *error_classes[TILEOPS_STATUS_COUNT_];

static PyObject *raise_status(tileops_status_t st) {
    PyObject *cls = NULL;
    if ((int)st > 0 && (int)st < TILEOPS_STATUS_COUNT_)
        cls = error_classes[st];
    if (cls == NULL)
        cls = PyExc_RuntimeError;
    const char *msg = tileops_last_error(), *arg = tileops_last_error_argument();
    PyObject *exc = PyObject_CallFunction(cls, "s", (msg && msg[0]) ? msg : tileops_status_name(st));
    if (!exc) return NULL;
    if (arg && arg[0]) { /* the argument the core named: the exception's `argument` */
        PyObject *name = PyUnicode_FromString(arg);
        if (!name || PyObject_SetAttrString(exc, "argument", name)) PyErr_Clear(); /* the message stands */
        Py_XDECREF(name);
    }
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- argument checks -------------------------------------------------------------
 * Every function checks its argument count, then the type and range of each argument,
 * before it does anything, and names itself and the argument in the error:
 *   TypeError      a wrong type: an int argument takes an int or an object with __index__,
 *                  never a float or a bool (True is no pointer, size or device); a float
 *                  argument takes a float or an int (not a bool); a str argument a str;
 *   OverflowError  an int outside the C type it is stored into, never a value truncated
 *                  into a narrower type that happens to be valid (2**32 + 1 is not 1);
 *   ValueError     a str with a NUL character (C would silently stop at it), or one that
 *                  cannot be encoded as UTF-8.
 * Strings a function uses with the GIL released are copied into memory it owns first
 * (dup_str): another thread may drop or replace the caller's objects meanwhile. What
 * the values mean (a device that exists, n >= 1, a pointer that may be NULL) is the core's
 * to check; it answers with a status that raise_status turns into an exception. */

static int check_nargs(const char *fn, Py_ssize_t got, Py_ssize_t want) {
    if (got != want) {
        PyErr_Format(PyExc_TypeError, "tileops._C.%s takes %zd argument%s, got %zd", fn, want,
                     want == 1 ? "" : "s", got);
        return -1;
    }
    return 0;
}

/* How an error names an argument: `what`, or for a kernel argument (index >= 0)
 * "kernel argument <index> (format '<kind>')". */
typedef struct argname {
    const char *what;
    Py_ssize_t index;
    char kind;
} argname_t;
#define ARG(what) (&(const argname_t){(what), -1, 0})

/* The error of argument `a`: a TypeError shows the type it got, any other class the
 * value (its first 200 characters; an int too long for repr() by its type). Returns -1. */
static int arg_fail(PyObject *cls, const char *fn, const argname_t *a, const char *want, PyObject *o) {
    char name[96];
    if (a->index >= 0)
        snprintf(name, sizeof name, "kernel argument %zd (format '%c')", a->index, a->kind);
    else
        snprintf(name, sizeof name, "%s", a->what);
    PyObject *r = cls == PyExc_TypeError ? NULL : PyObject_Repr(o);
    if (r == NULL) {
        PyErr_Clear();
        PyErr_Format(cls, "tileops._C.%s: %s must be %s, got %s", fn, name, want, Py_TYPE(o)->tp_name);
    } else {
        PyErr_Format(cls, "tileops._C.%s: %s must be %s, got %.200U", fn, name, want, r);
        Py_DECREF(r);
    }
    return -1;
}

/* An int argument as a new reference to a Python int: an int (not a bool) or an object
 * with __index__. NULL with a TypeError naming the argument otherwise. */
static PyObject *index_of(const char *fn, const argname_t *a, const char *want,
                          PyObject *o) {
    if (PyLong_CheckExact(o)) {
        Py_INCREF(o);
        return o;
    }
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        arg_fail(PyExc_TypeError, fn, a, want, o);
        return NULL;
    }
    return PyNumber_Index(o);
}

/* An int in [lo, hi]. Returns 0, or -1 with the exception set. */
static int as_ll(const char *fn, const argname_t *a, PyObject *o, long long lo, long long hi,
                 long long *out) {
    PyObject *i = index_of(fn, a, "an int", o);
    if (i == NULL)
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (v == -1 && !overflow && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        char want[80];
        snprintf(want, sizeof want, "an int in [%lld, %lld]", lo, hi);
        return arg_fail(PyExc_OverflowError, fn, a, want, o);
    }
    *out = v;
    return 0;
}

/* A C int (device ordinals, thread counts, handles). */
static int as_int(const char *fn, const char *what, PyObject *o, int *out) {
    long long v = 0;
    if (as_ll(fn, ARG(what), o, INT_MIN, INT_MAX, &v))
        return -1;
    *out = (int)v;
    return 0;
}

/* A pointer or CUstream: an int in [0, 2**64) that fits uintptr_t, never a negative one
 * wrapped around to the top of the address space. */
static int as_uptr(const char *fn, const argname_t *a, PyObject *o, uintptr_t *out) {
    static const char want[] = "an int in [0, 2**64)";
    PyObject *i = index_of(fn, a, want, o);
    if (i == NULL)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return arg_fail(PyExc_OverflowError, fn, a, want, o);
    }
#if UINTPTR_MAX < ULLONG_MAX
    if (v > UINTPTR_MAX)
        return arg_fail(PyExc_OverflowError, fn, a, "a pointer of this machine", o);
#endif
    *out = (uintptr_t)v;
    return 0;
}

/* A float32: a float or an int (not a bool), within float32's range. NaN and infinities
 * pass: the op layer validates eps, and no kernel reads or writes memory differently for
 * them (the outputs are NaN). A finite value beyond float32's range is an OverflowError,
 * not an infinity. */
static int as_f32(const char *fn, const argname_t *a, PyObject *o, float *out) {
    static const char want[] = "a float (or int) within float32 range";
    double d;
    if (PyFloat_Check(o)) {
        d = PyFloat_AS_DOUBLE(o);
    } else if (PyLong_Check(o) && !PyBool_Check(o)) {
        d = PyLong_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            return arg_fail(PyExc_OverflowError, fn, a, want, o);
        }
    } else {
        return arg_fail(PyExc_TypeError, fn, a, want, o);
    }
    if (isfinite(d) && fabs(d) > FLT_MAX)
        return arg_fail(PyExc_OverflowError, fn, a, want, o);
    *out = (float)d;
    return 0;
}

/* A float64 argument: a Python float as it is, or an int converted to the nearest double
 * (an int beyond double range is an OverflowError). */
static int as_f64(const char *fn, const argname_t *a, PyObject *o, double *out) {
    static const char want[] = "a float (or int)";
    if (PyFloat_Check(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (!PyLong_Check(o) || PyBool_Check(o))
        return arg_fail(PyExc_TypeError, fn, a, want, o);
    const double d = PyLong_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return arg_fail(PyExc_OverflowError, fn, a, want, o);
    }
    *out = d;
    return 0;
}

/* A str as UTF-8 without NUL characters, borrowed from `o` (valid while `o` lives, so
 * only with the GIL held). *len may be NULL. */
static const char *as_str(const char *fn, const char *what, PyObject *o, Py_ssize_t *len) {
    if (!PyUnicode_Check(o)) {
        arg_fail(PyExc_TypeError, fn, ARG(what), "a str", o);
        return NULL;
    }
    Py_ssize_t n = 0;
    const char *s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s == NULL) {
        PyErr_Clear();
        arg_fail(PyExc_ValueError, fn, ARG(what), "a str encodable as UTF-8", o);
        return NULL;
    }
    if (memchr(s, '\0', (size_t)n) != NULL) {
        arg_fail(PyExc_ValueError, fn, ARG(what), "a str without NUL characters", o);
        return NULL;
    }
    if (len)
        *len = n;
    return s;
}

/* as_str, copied into memory the caller owns (PyMem_Free it): for what the core reads
 * with the GIL released. */
static char *dup_str(const char *fn, const char *what, PyObject *o, Py_ssize_t *len) {
    Py_ssize_t n = 0;
    const char *s = as_str(fn, what, o, &n);
    if (s == NULL)
        return NULL;
    char *copy = PyMem_Malloc((size_t)n + 1);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(copy, s, (size_t)n + 1);
    if (len)
        *len = n;
    return copy;
}

/* Converts a kernel's Python arguments into packed values by its arg format: the one
 * conversion both cpu_launch and cuda_launch use. n must equal strlen(fmt) (checked by
 * the caller, which knows how to word the count error). Pointers may be 0 here: whether
 * a kernel takes a NULL is the kernel's contract, and it checks it. Returns 0, or -1 with
 * an exception naming the argument ("kernel argument 3 (format 'q')"). */
static int pack_args(const char *fn, const char *fmt, PyObject *const *objs, Py_ssize_t n,
                     tileops_arg_t *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = objs[i];
        const argname_t a = {NULL, i, fmt[i]};
        switch (fmt[i]) {
        case 'p':
            if (as_uptr(fn, &a, o, &out[i].p) < 0)
                return -1;
            break;
        case 'q': {
            long long v = 0;
            if (as_ll(fn, &a, o, INT64_MIN, INT64_MAX, &v) < 0)
                return -1;
            out[i].q = (int64_t)v;
            break;
        }
        case 'i': {
            long long v = 0;
            if (as_ll(fn, &a, o, INT32_MIN, INT32_MAX, &v) < 0)
                return -1;
            out[i].i = (int32_t)v;
            break;
        }
        case 'f':
            if (as_f32(fn, &a, o, &out[i].f) < 0)
                return -1;
            break;
        case 'd':
            if (as_f64(fn, &a, o, &out[i].d) < 0)
                return -1;
            break;
        default: /* formats are validated when a kernel is registered or built */
            PyErr_Format(PyExc_SystemError, "tileops._C.%s: bad format character '%c' in '%s'", fn,
                         fmt[i], fmt);
            return -1;
        }
    }
    return 0;
}

/* A kernel handle argument: a non-negative C int. */
static int as_handle(const char *fn, PyObject *o, int *handle) {
    if (as_int(fn, "the kernel handle", o, handle))
        return -1;
    if (*handle < 0) {
        PyErr_Format(PyExc_ValueError, "tileops._C.%s: no kernel with handle %d", fn, *handle);
        return -1;
    }
    return 0;
}

/* (classes): one exception class (or None: RuntimeError) per status code. All are checked
 * before any is taken, so a bad sequence leaves the registered classes as they were. */
static PyObject *py_set_error_classes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("set_error_classes", nargs, 1)) return NULL;
    if (!PyList_Check(args[0]) && !PyTuple_Check(args[0]))
        return arg_fail(PyExc_TypeError, "set_error_classes", ARG("the classes"), "a list or tuple",
                        args[0]), NULL;
    PyObject *seq = args[0];
    if (PySequence_Fast_GET_SIZE(seq) != TILEOPS_STATUS_COUNT_) {
        PyErr_Format(PyExc_ValueError,
                     "tileops._C.set_error_classes: the classes must be %d (one per status code), got %zd",
                     TILEOPS_STATUS_COUNT_, PySequence_Fast_GET_SIZE(seq));
        return NULL;
    }
    PyObject *fresh[TILEOPS_STATUS_COUNT_];
    for (int i = 0; i < TILEOPS_STATUS_COUNT_; i++) {
        PyObject *c = PySequence_Fast_GET_ITEM(seq, i);
        if (c != Py_None && !PyExceptionClass_Check(c)) {
            PyErr_Format(PyExc_TypeError,
                         "tileops._C.set_error_classes: class %d must be an exception class or None, got %R",
                         i, c);
            return NULL;
        }
        fresh[i] = c == Py_None ? NULL : c;
    }
    /* Every new reference is taken before any old one is dropped: a dropped class's
     * destructor may run Python code that changes the caller's list. */
    for (int i = 0; i < TILEOPS_STATUS_COUNT_; i++)
        Py_XINCREF(fresh[i]);
    for (int i = 0; i < TILEOPS_STATUS_COUNT_; i++)
        Py_XSETREF(error_classes[i], fresh[i]);
    Py_RETURN_NONE;
}

/* ---- CPU ------------------------------------------------------------------------- */

/* (name) -> (handle, arg_format): looked up once when a kernel class builds, so the hot
 * path passes a small integer, as for CUDA kernels. */
static PyObject *py_cpu_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cpu_kernel", nargs, 1)) return NULL;
    const char *name = as_str("cpu_kernel", "the kernel name", args[0], NULL);
    if (!name) return NULL;
    int handle = -1;
    tileops_status_t st = tileops_cpu_kernel_lookup(name, &handle);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("(is)", handle, tileops_cpu_kernel_get(handle)->arg_format);
}

/* () -> names of every registered CPU kernel, in handle order. */
static PyObject *py_cpu_kernels(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    int n = tileops_cpu_kernel_count();
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *name = PyUnicode_FromString(tileops_cpu_kernel_get(i)->name);
        if (!name) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

/* The thread count the CPU kernels follow: a callable returning it (tileops passes
 * torch.get_num_threads unless TILEOPS_NUM_THREADS is set), asked before each CPU launch
 * (a call of a C function, about 0.1 us) so torch.set_num_threads takes effect on the
 * next call; NULL when the count is fixed (TILEOPS_NUM_THREADS, or cpu_set_num_threads).
 * Read and written with the GIL held. */
static PyObject *g_thread_source;
static long g_thread_followed = -1;

static int follow_threads(void) {
    /* held across the call: the callable may let another thread run and replace it */
    PyObject *fn = Py_NewRef(g_thread_source);
    PyObject *r = PyObject_CallNoArgs(fn);
    Py_DECREF(fn);
    if (!r) return -1;
    long n = PyLong_Check(r) ? PyLong_AsLong(r) : -1;
    Py_DECREF(r);
    if (n < 1) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "tileops._C.cpu_launch: the thread count source "
                            "(cpu_follow_threads) did not return an int >= 1");
        }
        return -1;
    }
    if (n != g_thread_followed) {
        tileops_status_t st = tileops_cpu_set_num_threads(n > INT_MAX ? INT_MAX : (int)n);
        if (st != TILEOPS_OK) { raise_status(st); return -1; }
        g_thread_followed = n;
    }
    return 0;
}

/* (handle, *kernel_args): the CPU hot path, the twin of cuda_launch without the grid. */
static PyObject *py_cpu_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "tileops._C.cpu_launch takes (handle, *kernel_args), got no arguments");
        return NULL;
    }
    int handle = -1;
    if (as_handle("cpu_launch", args[0], &handle)) return NULL;
    const tileops_cpu_kernel_t *k = tileops_cpu_kernel_get(handle);
    if (!k) {
        PyErr_Format(PyExc_ValueError, "tileops._C.cpu_launch: no CPU kernel with handle %d", handle);
        return NULL;
    }
    Py_ssize_t nk = nargs - 1;
    size_t want = strlen(k->arg_format);
    if ((size_t)nk != want) {
        PyErr_Format(PyExc_TypeError, "tileops._C.cpu_launch: kernel '%s' takes %zu arguments (format '%s'), got %zd",
                     k->name, want, k->arg_format, nk);
        return NULL;
    }
    tileops_arg_t kargs[TILEOPS_MAX_KERNEL_ARGS];
    if (pack_args("cpu_launch", k->arg_format, args + 1, nk, kargs)) return NULL;
    if (g_thread_source && follow_threads()) return NULL;
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cpu_kernel_launch(handle, kargs, (int)nk);
    Py_END_ALLOW_THREADS
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cpu_num_threads(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    /* the count the next launch uses: a followed source is asked now, as a launch asks it
     * (before the first launch the pool's count is its default's) */
    if (g_thread_source && follow_threads() < 0) return NULL;
    return PyLong_FromLong(tileops_cpu_num_threads());
}

static PyObject *py_cpu_set_num_threads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cpu_set_num_threads", nargs, 1)) return NULL;
    int n = 0;
    if (as_int("cpu_set_num_threads", "the thread count", args[0], &n)) return NULL;
    tileops_status_t st = tileops_cpu_set_num_threads(n);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_CLEAR(g_thread_source); /* a count set by hand is kept: no longer followed */
    g_thread_followed = -1;
    Py_RETURN_NONE;
}

static PyObject *py_cpu_follow_threads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cpu_follow_threads", nargs, 1)) return NULL;
    PyObject *fn = args[0];
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "tileops._C.cpu_follow_threads: expected a callable or None, got %s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    PyObject *old = g_thread_source;
    g_thread_source = fn == Py_None ? NULL : Py_NewRef(fn);
    g_thread_followed = -1;
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

static PyObject *py_cpu_threads_followed(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return Py_NewRef(g_thread_source ? g_thread_source : Py_None);
}

static PyObject *py_cpu_simd_level(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyUnicode_FromString(tileops_cpu_simd_level());
}

/* ---- plans: an eager CPU call replayed in C -----------------------------------------
 * The op layer's eager fast path (tileops/ops/boundary.py) is Python: per call it tests
 * the tensors, reads their signature, checks it once, allocates the outputs and launches
 * through a memo; ~10 µs at one token. A plan records, for one call signature of one op
 * instance, what that path did when it was a plain "allocate the outputs like an input,
 * then launch one CPU kernel over the inputs and outputs": the kernel (handle), each
 * argument's recipe, and each output's allocation. plan_call replays it: the same tests
 * of the same tensors (what the fast path tests, plus contiguity and the CPU), the
 * signature as the plan's key, the outputs (torch.empty_like of the input an output is
 * shaped like, else of a template of the shape recorded: a plan is one signature), the
 * launch. Anything it cannot replay exactly answers a sentinel (MISS: no plan for this key; SKIP: these
 * tensors, or this call, are not for a plan), and the caller takes the Python path, which
 * raises what is to be raised; no exception ever leaves plan_call. The plans live in the
 * instance's memo, so whatever drops the memo (a param assigned, the target undone)
 * drops them. */

enum { PLAN_CONST = 0, PLAN_PTR = 1, PLAN_NUMEL_DIV = 2, PLAN_ZERO = 3 };
#define PLAN_MAX_TENSORS 8
#define PLAN_MAX_TYPES 4

/* What plan_replay reads of a tensor: properties, then methods (called without arguments). */
enum { TA_LAYOUT, TA_IS_CPU, TA_REQUIRES_GRAD, TA_SHAPE, TA_DTYPE, TA_NBYTES, TA_IS_NEG, TA_IS_CONTIGUOUS,
       TA_DATA_PTR, TA_IS_INFERENCE, TA_COUNT };
#define TA_FIRST_METHOD TA_IS_NEG
static const char *const k_tensor_attrs[TA_COUNT] = {"layout", "is_cpu", "requires_grad", "shape", "dtype",
                                                     "nbytes", "is_neg", "is_contiguous", "data_ptr",
                                                     "is_inference"};

typedef struct {
    int handle;
    int nargs;
    int n_in, n_out;
    int out_align;                       /* (OR of the outputs' data pointers) & 15 */
    unsigned char kind[TILEOPS_MAX_KERNEL_ARGS];
    char format[TILEOPS_MAX_KERNEL_ARGS + 1];   /* the kernel's arg format */
    int tensor[TILEOPS_MAX_KERNEL_ARGS]; /* PTR, NUMEL_DIV: index over inputs then outputs */
    int64_t div[TILEOPS_MAX_KERNEL_ARGS];
    tileops_arg_t value[TILEOPS_MAX_KERNEL_ARGS]; /* CONST */
} plan_t;

static const char PLAN_CAPSULE[] = "tileops.plan";

static void plan_free(PyObject *cap) { free(PyCapsule_GetPointer(cap, PLAN_CAPSULE)); }

/* What plan_call needs of torch, given once by tileops (plan_setup). */
static struct {
    int ready;
    PyObject *tensor_types;  /* tuple: the exact types taken (torch.Tensor, nn.Parameter) */
    PyObject *strided;       /* torch.strided */
    PyObject *falsy;         /* tuple of callables that must return a false value */
    PyObject *nones;         /* tuple of callables that must return None */
    PyObject *grad_enabled;  /* torch.is_grad_enabled */
    PyObject *empty_like;    /* torch.empty_like */
    PyObject *contiguous;    /* torch.contiguous_format */
    PyObject *miss, *skip;   /* the sentinels */
    PyObject *out_tag;       /* the first item of an out= call's key */
    PyObject *bump;          /* torch.autograd.graph.increment_version: out='s version bump */
    PyObject *inference;     /* torch.is_inference_mode_enabled: an inference out= is written only in it */
    PyObject *kwnames;       /* ("dtype", "memory_format") */
    PyObject *kwnames_mf;    /* ("memory_format",): an output of its input's dtype (a third faster) */
    PyObject *s_attr[TA_COUNT];  /* k_tensor_attrs, interned */
    PyObject *s_stride;          /* "stride", interned (apart) */
    /* desc[j][a]: attribute a as tensor_types[j] defines it (a data descriptor for a
     * property, a callable for a method), read once here so a call skips the attribute
     * lookup (the type's MRO, the instance dict); NULL: looked up per call */
    PyObject *desc[PLAN_MAX_TYPES][TA_COUNT];
} P;

/* (tensor_types, strided, falsy, nones, grad_enabled, empty_like, contiguous_format, miss, skip, out_tag,
 *  bump, inference_mode_enabled) */
static PyObject *py_plan_setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("plan_setup", nargs, 12)) return NULL;
    const int tuples[] = {0, 2, 3};
    for (int i = 0; i < 3; i++)
        if (!PyTuple_Check(args[tuples[i]]))
            return arg_fail(PyExc_TypeError, "plan_setup", ARG("argument tensor_types, falsy or nones"), "a tuple",
                            args[tuples[i]]), NULL;
    if (!PyCallable_Check(args[4]) || !PyCallable_Check(args[5]) || !PyCallable_Check(args[10]) ||
        !PyCallable_Check(args[11])) {
        PyErr_SetString(PyExc_TypeError,
                        "tileops._C.plan_setup: grad_enabled, empty_like, bump and inference_mode_enabled must be callable");
        return NULL;
    }
    const Py_ssize_t n_types = PyTuple_GET_SIZE(args[0]);
    if (n_types > PLAN_MAX_TYPES) {
        PyErr_Format(PyExc_ValueError, "tileops._C.plan_setup: expected at most %d tensor types, got %zd",
                     PLAN_MAX_TYPES, n_types);
        return NULL;
    }
    /* each made once; a failed call leaves the rest for the next one */
    for (int a = 0; a < TA_COUNT; a++)
        if (!P.s_attr[a] && !(P.s_attr[a] = PyUnicode_InternFromString(k_tensor_attrs[a]))) return NULL;
    if (!P.s_stride && !(P.s_stride = PyUnicode_InternFromString("stride"))) return NULL;
    if (!P.kwnames && !(P.kwnames = Py_BuildValue("(ss)", "dtype", "memory_format"))) return NULL;
    if (!P.kwnames_mf && !(P.kwnames_mf = Py_BuildValue("(s)", "memory_format"))) return NULL;
    PyObject *desc[PLAN_MAX_TYPES][TA_COUNT] = {{NULL}};
    for (Py_ssize_t j = 0; j < n_types; j++)
        for (int a = 0; a < TA_COUNT && PyType_Check(PyTuple_GET_ITEM(args[0], j)); a++) {
            PyObject *d = PyObject_GetAttr(PyTuple_GET_ITEM(args[0], j), P.s_attr[a]);
            if (!d) { /* not on the type: looked up per call, where it fails and the call is skipped */
                PyErr_Clear();
                continue;
            }
            const PyTypeObject *dt = Py_TYPE(d);
            const int data = dt->tp_descr_get && dt->tp_descr_set;
            if (a < TA_FIRST_METHOD ? data : !data && PyCallable_Check(d))
                desc[j][a] = d;
            else
                Py_DECREF(d);
        }
    PyObject **slots[] = {&P.tensor_types, &P.strided, &P.falsy, &P.nones, &P.grad_enabled, &P.empty_like,
                          &P.contiguous, &P.miss, &P.skip, &P.out_tag, &P.bump, &P.inference};
    for (int i = 0; i < 12; i++)
        Py_XSETREF(*slots[i], Py_NewRef(args[i]));
    for (int j = 0; j < PLAN_MAX_TYPES; j++)
        for (int a = 0; a < TA_COUNT; a++)
            Py_XSETREF(P.desc[j][a], desc[j][a]);
    P.ready = 1;
    Py_RETURN_NONE;
}

/* (handle, items, n_in, n_out, out_align) -> a plan (a capsule). items: one per kernel
 * argument, in the kernel's order: (0, value) a constant, converted by the argument's
 * format character now; (1, i) tensor i's data pointer (0 for None); (2, i, d) tensor i's
 * numel // d; (3,) a null pointer. Tensors count inputs, then outputs. */
static PyObject *py_plan_make(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("plan_make", nargs, 5)) return NULL;
    int handle = -1, n_in = 0, n_out = 0, out_align = 0;
    if (as_handle("plan_make", args[0], &handle) || as_int("plan_make", "n_in", args[2], &n_in) ||
        as_int("plan_make", "n_out", args[3], &n_out) || as_int("plan_make", "out_align", args[4], &out_align))
        return NULL;
    const tileops_cpu_kernel_t *k = tileops_cpu_kernel_get(handle);
    if (!k) {
        PyErr_Format(PyExc_ValueError, "tileops._C.plan_make: no CPU kernel with handle %d", handle);
        return NULL;
    }
    if (n_in < 0 || n_out < 1 || n_in > PLAN_MAX_TENSORS || n_out > PLAN_MAX_TENSORS ||
        n_in + n_out > PLAN_MAX_TENSORS || out_align < 0 || out_align > 15) {
        PyErr_Format(PyExc_ValueError, "tileops._C.plan_make: expected 0 <= n_in, 1 <= n_out, n_in + n_out <= %d, "
                     "0 <= out_align <= 15, got %d, %d, %d", PLAN_MAX_TENSORS, n_in, n_out, out_align);
        return NULL;
    }
    PyObject *items = args[1];
    size_t want = strlen(k->arg_format);
    if (!PyTuple_Check(items) || (size_t)PyTuple_GET_SIZE(items) != want) {
        PyErr_Format(PyExc_TypeError, "tileops._C.plan_make: kernel '%s' takes %zu arguments (format '%s'): expected "
                     "a tuple of as many items", k->name, want, k->arg_format);
        return NULL;
    }
    plan_t *p = calloc(1, sizeof *p);
    if (!p) return PyErr_NoMemory();
    p->handle = handle; p->nargs = (int)want; p->n_in = n_in; p->n_out = n_out; p->out_align = out_align;
    memcpy(p->format, k->arg_format, want + 1);
    for (Py_ssize_t i = 0; i < (Py_ssize_t)want; i++) {
        PyObject *it = PyTuple_GET_ITEM(items, i);
        char f = k->arg_format[i];
        int kind = -1, ok = PyTuple_Check(it) && PyTuple_GET_SIZE(it) >= 1;
        if (ok) {
            long kv = PyLong_AsLong(PyTuple_GET_ITEM(it, 0));
            if (kv == -1 && PyErr_Occurred()) { PyErr_Clear(); ok = 0; }
            kind = (int)kv;
        }
        Py_ssize_t len = ok ? PyTuple_GET_SIZE(it) : 0;
        if (ok && kind == PLAN_CONST && len == 2)
            ok = pack_args("plan_make", &k->arg_format[i], &PyTuple_GET_ITEM(it, 1), 1, &p->value[i]) == 0;
        else if (ok && kind == PLAN_PTR && len == 2 && f == 'p')
            ok = as_int("plan_make", "a tensor index", PyTuple_GET_ITEM(it, 1), &p->tensor[i]) == 0 &&
                 p->tensor[i] >= 0 && p->tensor[i] < n_in + n_out;
        else if (ok && kind == PLAN_NUMEL_DIV && len == 3 && (f == 'q' || f == 'i')) {
            long long d = 0;
            ok = as_int("plan_make", "a tensor index", PyTuple_GET_ITEM(it, 1), &p->tensor[i]) == 0 &&
                 p->tensor[i] >= 0 && p->tensor[i] < n_in + n_out &&
                 as_ll("plan_make", ARG("a divisor"), PyTuple_GET_ITEM(it, 2), 1, INT64_MAX, &d) == 0;
            p->div[i] = (int64_t)d;
        } else if (ok && kind == PLAN_ZERO && len == 1 && f == 'p')
            ok = 1;
        else
            ok = 0;
        if (!ok) {
            free(p);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "tileops._C.plan_make: item %zd %R does not fit kernel '%s' argument "
                             "%zd (format '%c')", i, it, k->name, i, f);
            return NULL;
        }
        p->kind[i] = (unsigned char)kind;
    }
    PyObject *cap = PyCapsule_New(p, PLAN_CAPSULE, plan_free);
    if (!cap) free(p);
    return cap;
}

/* r = fn(); *truth its truth value, or -1 on an error (cleared) */
static int call_truth(PyObject *fn, int want_none) {
    PyObject *r = PyObject_CallNoArgs(fn);
    if (!r) { PyErr_Clear(); return -1; }
    int t = want_none ? r != Py_None : PyObject_IsTrue(r);
    Py_DECREF(r);
    if (t < 0) PyErr_Clear();
    return t;
}

/* The index of t's type in tensor_types, or -1. */
static int type_index(PyObject *t) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(P.tensor_types); j++)
        if ((PyObject *)Py_TYPE(t) == PyTuple_GET_ITEM(P.tensor_types, j))
            return (int)j;
    return -1;
}

/* Attribute a of t (a new reference; NULL with an exception set), t of tensor_types[tj]:
 * through the descriptor plan_setup read of that type (the function torch's attribute
 * lookup would find, called directly), else by name. An attribute set on one tensor's
 * __dict__ shadows none of these: the properties are data descriptors, which take
 * precedence over the instance dict, and a method put there is not torch's. */
static PyObject *tensor_attr(PyObject *t, int tj, int a) {
    PyObject *d = tj >= 0 ? P.desc[tj][a] : NULL;
    if (a < TA_FIRST_METHOD)
        return d ? Py_TYPE(d)->tp_descr_get(d, t, (PyObject *)Py_TYPE(t)) : PyObject_GetAttr(t, P.s_attr[a]);
    return d ? PyObject_Vectorcall(d, &t, 1, NULL) : PyObject_CallMethodNoArgs(t, P.s_attr[a]);
}

/* 1 when attribute a of t is True, 0 when False, -1 otherwise (cleared) */
static int flag(PyObject *t, int tj, int a) {
    PyObject *r = tensor_attr(t, tj, a);
    if (!r) { PyErr_Clear(); return -1; }
    int v = r == Py_True ? 1 : r == Py_False ? 0 : -1;
    Py_DECREF(r);
    return v;
}

static int as_ptr_of(PyObject *t, int tj, uintptr_t *out) {
    PyObject *r = tensor_attr(t, tj, TA_DATA_PTR);
    if (!r) { PyErr_Clear(); return -1; }
    unsigned long long v = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    *out = (uintptr_t)v;
    return 0;
}

/* The bytes of an element of torch dtype `dtype` (its itemsize, read once a dtype: they
 * are singletons), or 0 when unknown. */
static long long dtype_size(PyObject *dtype) {
    static PyObject *seen[16];
    static long long size[16];
    int i = 0;
    for (; i < 16 && seen[i]; i++)
        if (seen[i] == dtype) return size[i];
    PyObject *r = PyObject_GetAttrString(dtype, "itemsize");
    const long long v = r ? PyLong_AsLongLong(r) : -1;
    Py_XDECREF(r);
    if (v <= 0 || PyErr_Occurred()) { PyErr_Clear(); return 0; }
    if (i < 16) {
        seen[i] = Py_NewRef(dtype);
        size[i] = v;
    }
    return v;
}

/* ---- apart: the boundary's test that a call's written tensors may be written ----------- */
#define APART_MAX_DIMS 16
/* Where a tensor's bytes lie: [p0, p1) (p1 = p0 for no element), and its dims of more than
 * one element sorted by stride, largest first (strides in bytes); es its element's bytes;
 * self_overlap when two of its elements may share an address (a stride 0 over such a dim,
 * or strides that nest too tightly to tell). */
typedef struct {
    uintptr_t p0, p1;
    long long es;
    int nd, self_overlap;
    long long size[APART_MAX_DIMS], stride[APART_MAX_DIMS];
} apart_layout_t;

/* L: `bytes` contiguous bytes from p, of elements of L->es bytes (set) */
static void apart_contiguous(apart_layout_t *L, uintptr_t p, long long bytes) {
    L->nd = L->self_overlap = 0;
    L->p0 = p;
    L->p1 = p + (uintptr_t)bytes;
    if (bytes > L->es) {
        L->nd = 1;
        L->size[0] = bytes / L->es;
        L->stride[0] = L->es;
    }
}

/* t's layout; -1 when t cannot be read as a tensor (the caller answers "look again") */
static int apart_layout(PyObject *t, apart_layout_t *L) {
    const int tj = type_index(t);
    PyObject *dt = tensor_attr(t, tj, TA_DTYPE);
    L->es = dt ? dtype_size(dt) : 0;
    Py_XDECREF(dt);
    if (!L->es) { PyErr_Clear(); return -1; }
    L->nd = L->self_overlap = 0;
    uintptr_t p = 0;
    const int contiguous = flag(t, tj, TA_IS_CONTIGUOUS);
    if (contiguous < 0) return -1;
    if (contiguous) { /* one dim of unit stride: numel elements from the data pointer */
        PyObject *nb = tensor_attr(t, tj, TA_NBYTES);
        const long long n = nb ? PyLong_AsLongLong(nb) : -1;
        Py_XDECREF(nb);
        if (n < 0 || PyErr_Occurred() || (n && as_ptr_of(t, tj, &p))) { PyErr_Clear(); return -1; }
        apart_contiguous(L, p, n);
        return 0;
    }
    PyObject *shape = tensor_attr(t, tj, TA_SHAPE);
    PyObject *stride = shape ? PyObject_CallMethodNoArgs(t, P.s_stride) : NULL;
    int bad = !stride || !PyTuple_Check(shape) || !PyTuple_Check(stride) ||
              PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(stride);
    long long extent = 0, numel = 1;
    for (Py_ssize_t d = 0; !bad && d < PyTuple_GET_SIZE(shape); d++) {
        const long long n = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
        const long long st = PyLong_AsLongLong(PyTuple_GET_ITEM(stride, d));
        long long sb, span;
        bad = PyErr_Occurred() || n < 0 || st < 0 || __builtin_mul_overflow(st, L->es, &sb) ||
              __builtin_mul_overflow(numel, n, &numel);
        if (bad || n <= 1) continue;
        bad = __builtin_mul_overflow(n - 1, sb, &span) || __builtin_add_overflow(extent, span, &extent) ||
              L->nd == APART_MAX_DIMS;
        if (bad) continue;
        L->self_overlap |= st == 0;
        int k = L->nd++; /* insertion by stride, largest first */
        for (; k > 0 && L->stride[k - 1] < sb; k--) {
            L->size[k] = L->size[k - 1];
            L->stride[k] = L->stride[k - 1];
        }
        L->size[k] = n;
        L->stride[k] = sb;
    }
    Py_XDECREF(shape);
    Py_XDECREF(stride);
    if (bad || (numel && as_ptr_of(t, tj, &p))) { PyErr_Clear(); return -1; }
    /* distinct addresses for sure when each stride, smallest first, passes the extent of
     * the dims inside it; else two elements may share one (rows of a head-sized stride
     * over heads of more bytes, say): self_overlap, and the Python test looks exactly */
    long long inner = L->es;
    for (int k = L->nd - 1; k >= 0 && !L->self_overlap; k--) {
        L->self_overlap = L->stride[k] < inner;
        inner += (L->size[k] - 1) * L->stride[k]; /* <= extent + es: no overflow */
    }
    L->p0 = p;
    L->p1 = numel ? p + (uintptr_t)(extent + L->es) : p;
    if (!numel) L->nd = L->self_overlap = 0; /* no element: none shares */
    return 0;
}

/* 1 when no byte of a is a byte of b: their spans apart, or, for views of one packed
 * tensor (q and k heads of one qkv row, say), rows of one stride S whose inner extents lie
 * apart modulo S; 0 otherwise (a share, or a layout this does not tell apart) */
static int apart_disjoint(const apart_layout_t *a, const apart_layout_t *b) {
    if (a->p0 == a->p1 || b->p0 == b->p1 || a->p1 <= b->p0 || b->p1 <= a->p0) return 1;
    if (!a->nd || !b->nd || a->stride[0] != b->stride[0] || a->stride[0] <= 0) return 0;
    const long long S = a->stride[0];
    long long ea = a->es, eb = b->es; /* the inner dims' extents, in bytes */
    for (int d = 1; d < a->nd; d++) ea += (a->size[d] - 1) * a->stride[d];
    for (int d = 1; d < b->nd; d++) eb += (b->size[d] - 1) * b->stride[d];
    if (ea > S || eb > S) return 0;
    const long long ra = (long long)(a->p0 % (uintptr_t)S), rb = (long long)(b->p0 % (uintptr_t)S);
    return ((rb - ra) % S + S) % S >= ea && ((ra - rb) % S + S) % S >= eb;
}

/* Whether out= (tensor n of a call's scan: contiguous, like the inputs before it) shares
 * a byte with any input, or its size cannot be told: such a call is not for a plan (the
 * Python path refuses a partial overlap and fills an out that is an input through a
 * temporary). `key` holds each tensor's dtype at 2 i + 2. The boundary's own test
 * (apart_disjoint) over the contiguous spans. */
static int out_shares_memory(PyObject *key, const uintptr_t *ptr, const long long *numel, int n) {
    apart_layout_t o = {0}, in = {0}; /* zeroed: gcc cannot see nd guard the sizes */
    long long bytes;
    o.es = dtype_size(PyTuple_GET_ITEM(key, 2 * n + 2));
    if (!o.es || __builtin_mul_overflow(numel[n], o.es, &bytes)) return 1;
    apart_contiguous(&o, ptr[n], bytes);
    for (int i = 0; i < n; i++) {
        if (!ptr[i]) continue; /* absent, or empty */
        in.es = dtype_size(PyTuple_GET_ITEM(key, 2 * i + 2));
        if (!in.es || __builtin_mul_overflow(numel[i], in.es, &bytes)) return 1;
        apart_contiguous(&in, ptr[i], bytes);
        if (!apart_disjoint(&o, &in)) return 1;
    }
    return 0;
}

/* A plan's replay for the n inputs `in` and, in an out= call, `out` (else NULL): the
 * outputs (out itself in an out= call), or the sentinel MISS / SKIP. Never raises. An out=
 * call's out is tested as the inputs are and keyed after them (the key's first item
 * out_tag); its plan has one output, out, which is written in place of an allocation and
 * gets the version bump the Python path gives it; an out sharing a byte with an input is
 * not for a plan (out_shares_memory). */
static PyObject *plan_replay(PyObject *memo, PyObject *const *in, const int n, PyObject *out) {
    const int m = n + (out != NULL); /* tensors scanned: the inputs, then out */
    if (n < 1 || m > PLAN_MAX_TENSORS || !PyDict_Check(memo))
        return Py_NewRef(P.skip);
    /* a CUDA (or meta) call leaves at once: its first input is not on the CPU */
    const int tj0 = in[0] != Py_None ? type_index(in[0]) : -1; /* its type's index, read once */
    if (in[0] != Py_None && flag(in[0], tj0, TA_IS_CPU) != 1) return Py_NewRef(P.skip);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(P.falsy); i++)
        if (call_truth(PyTuple_GET_ITEM(P.falsy, i), 0) != 0) return Py_NewRef(P.skip);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(P.nones); i++)
        if (call_truth(PyTuple_GET_ITEM(P.nones, i), 1) != 0) return Py_NewRef(P.skip);
    const int grad = call_truth(P.grad_enabled, 0);
    if (grad < 0) return Py_NewRef(P.skip);
    /* the key: (MISS, shape_0, dtype_0, ..., shape_m-1, dtype_m-1, alignment), flat (no
     * tuple a tensor: fewer allocations a call); None, None for an absent input; out_tag
     * first and out's shape and dtype last in an out= call */
    PyObject *key = PyTuple_New(2 * m + 2);
    if (!key) { PyErr_Clear(); return Py_NewRef(P.skip); }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(out ? P.out_tag : P.miss));
    uintptr_t ptr[PLAN_MAX_TENSORS];
    long long numel[PLAN_MAX_TENSORS]; /* from the shape read for the key: no numel() call */
    PyObject *outs[PLAN_MAX_TENSORS] = {NULL};
    PyObject *result = P.skip;
    unsigned align = 0;
    for (int i = 0; i < m; i++) {
        PyObject *t = i < n ? in[i] : out;
        ptr[i] = 0;
        numel[i] = 0;
        if (t == Py_None) {
            PyTuple_SET_ITEM(key, 2 * i + 1, Py_NewRef(Py_None));
            PyTuple_SET_ITEM(key, 2 * i + 2, Py_NewRef(Py_None));
            continue;
        }
        const int tj = i == 0 ? tj0 : type_index(t);
        if (tj < 0) goto done;
        PyObject *layout = tensor_attr(t, tj, TA_LAYOUT);
        if (!layout) { PyErr_Clear(); goto done; }
        Py_DECREF(layout);
        if (layout != P.strided || (i > 0 && flag(t, tj, TA_IS_CPU) != 1) || /* input 0's: read above */
            (grad && flag(t, tj, TA_REQUIRES_GRAD) != 0) ||
            flag(t, tj, TA_IS_NEG) != 0 || flag(t, tj, TA_IS_CONTIGUOUS) != 1)
            goto done;
        PyObject *shape = tensor_attr(t, tj, TA_SHAPE), *dtype = shape ? tensor_attr(t, tj, TA_DTYPE) : NULL;
        long long count = 1;
        int bad = !dtype || !PyTuple_Check(shape);
        for (Py_ssize_t d = 0; !bad && d < PyTuple_GET_SIZE(shape); d++) {
            const long long dim = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
            bad = dim < 0 || __builtin_mul_overflow(count, dim, &count);
        }
        if (bad || PyErr_Occurred()) { Py_XDECREF(shape); Py_XDECREF(dtype); PyErr_Clear(); goto done; }
        PyTuple_SET_ITEM(key, 2 * i + 1, shape); /* the key owns them now */
        PyTuple_SET_ITEM(key, 2 * i + 2, dtype);
        numel[i] = count;
        if (as_ptr_of(t, tj, &ptr[i])) goto done;
        /* a ZeroTensor has no memory (data pointer 0; _is_zerotensor() would cost more
         * than this test): a tensor with elements at address 0 is one */
        if (ptr[i] == 0 && count) goto done;
        align |= (unsigned)(ptr[i] & 15u);
    }
    PyObject *al = PyLong_FromUnsignedLong(align);
    if (!al) { PyErr_Clear(); goto done; }
    PyTuple_SET_ITEM(key, 2 * m + 1, al);
    PyObject *entry = PyDict_GetItemWithError(memo, key); /* borrowed */
    if (!entry) {
        if (PyErr_Occurred()) PyErr_Clear();
        else result = P.miss;
        goto done;
    }
    /* entry: (capsule, allocs, dtypes), or None: this signature is not for a plan. An
     * output's alloc is the index of the input it is shaped like, or (template, numel): a
     * tensor of its shape and dtype (a 0-dim one expanded: no memory) and its size; an
     * out= call's allocs is None (its one output is out) */
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) goto done;
    Py_INCREF(entry);   /* the memo may change while torch runs Python below */
    const plan_t *p = PyCapsule_GetPointer(PyTuple_GET_ITEM(entry, 0), PLAN_CAPSULE);
    PyObject *allocs = PyTuple_GET_ITEM(entry, 1), *dtypes = PyTuple_GET_ITEM(entry, 2);
    if (!p || p->n_in != n || !PyTuple_Check(dtypes) || PyTuple_GET_SIZE(dtypes) != p->n_out ||
        (out ? allocs != Py_None || p->n_out != 1
             : !PyTuple_Check(allocs) || PyTuple_GET_SIZE(allocs) != p->n_out)) {
        PyErr_Clear();
        Py_DECREF(entry);
        goto done;
    }
    unsigned out_align = out ? (unsigned)(ptr[n] & 15u) : 0;
    /* out sharing an input's memory, or an inference tensor outside inference mode (torch
     * refuses to update one in place): the Python path, which says why */
    if (out && (out_shares_memory(key, ptr, numel, n) ||
                (flag(out, type_index(out), TA_IS_INFERENCE) != 0 && call_truth(P.inference, 0) != 1))) {
        Py_DECREF(entry);
        goto done;
    }
    for (int j = 0; !out && j < p->n_out; j++) {
        PyObject *alloc = PyTuple_GET_ITEM(allocs, j), *dt = PyTuple_GET_ITEM(dtypes, j);
        if (PyTuple_Check(alloc)) { /* (template, numel): empty_like(template), a new contiguous tensor */
            const long long count = PyTuple_GET_SIZE(alloc) == 2 ? PyLong_AsLongLong(PyTuple_GET_ITEM(alloc, 1)) : -1;
            if (count < 0) { PyErr_Clear(); Py_DECREF(entry); goto done; }
            numel[n + j] = count;
            PyObject *cargs[2] = {PyTuple_GET_ITEM(alloc, 0), P.contiguous};
            outs[j] = PyObject_Vectorcall(P.empty_like, cargs, 1, P.kwnames_mf);
        } else {
            long like = PyLong_AsLong(alloc);
            if (like < 0 || like >= n || in[like] == Py_None) { PyErr_Clear(); Py_DECREF(entry); goto done; }
            numel[n + j] = numel[like]; /* shaped like its input */
            const int same = PyTuple_GET_ITEM(key, 2 * like + 2) == dt; /* the input's dtype */
            PyObject *cargs[3] = {in[like], same ? P.contiguous : dt, P.contiguous};
            outs[j] = PyObject_Vectorcall(P.empty_like, cargs, 1, same ? P.kwnames_mf : P.kwnames);
        }
        if (!outs[j] || as_ptr_of(outs[j], type_index(outs[j]), &ptr[n + j])) {
            PyErr_Clear();
            Py_DECREF(entry);
            goto done;
        }
        out_align |= (unsigned)(ptr[n + j] & 15u);
    }
    if ((int)out_align != p->out_align) { /* recorded for other alignments: the Python path records anew */
        result = P.miss;
        Py_DECREF(entry);
        goto done;
    }
    tileops_arg_t kargs[TILEOPS_MAX_KERNEL_ARGS];
    for (int a = 0; a < p->nargs; a++) {
        switch (p->kind[a]) {
        case PLAN_CONST: kargs[a] = p->value[a]; break;
        case PLAN_PTR: kargs[a].p = ptr[p->tensor[a]]; break;
        case PLAN_ZERO: kargs[a].p = 0; break;
        default: /* PLAN_NUMEL_DIV (0 for an absent tensor) */
            if (p->format[a] == 'q') kargs[a].q = (int64_t)(numel[p->tensor[a]] / p->div[a]);
            else kargs[a].i = (int32_t)(numel[p->tensor[a]] / p->div[a]);
        }
    }
    if (g_thread_source && follow_threads()) { PyErr_Clear(); Py_DECREF(entry); goto done; }
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cpu_kernel_launch(p->handle, kargs, p->nargs);
    Py_END_ALLOW_THREADS
    const int n_out = p->n_out;
    Py_DECREF(entry);
    if (st != TILEOPS_OK) goto done; /* the Python path runs it again and raises its error */
    if (out) { /* out's version bump, as the Python path's; should it fail, the Python path
                * runs the call again (out is no input: the same values) and bumps it */
        PyObject *r = PyObject_CallOneArg(P.bump, out);
        if (!r) { PyErr_Clear(); goto done; }
        Py_DECREF(r);
        result = out;
        goto done;
    }
    if (n_out == 1) {
        result = outs[0];
        outs[0] = NULL;
    } else {
        result = PyTuple_New(n_out);
        if (!result) { PyErr_Clear(); result = P.skip; goto done; }
        for (int j = 0; j < n_out; j++) {
            PyTuple_SET_ITEM(result, j, outs[j]);
            outs[j] = NULL;
        }
    }
    Py_DECREF(key);
    return result;
done:
    for (int j = 0; j < PLAN_MAX_TENSORS; j++)
        Py_XDECREF(outs[j]);
    Py_DECREF(key);
    return Py_NewRef(result);
}

static int plan_ready(const char *fn) {
    if (P.ready) return 1;
    PyErr_Format(PyExc_RuntimeError, "tileops._C.%s: plan_setup has not been called", fn);
    return 0;
}

/* (memo, *inputs) -> the outputs, or the sentinel MISS / SKIP. Never raises once set up
 * (a RuntimeError before). */
static PyObject *py_plan_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!plan_ready("plan_call")) return NULL;
    if (nargs < 2 || nargs - 1 > PLAN_MAX_TENSORS) return Py_NewRef(P.skip);
    return plan_replay(args[0], args + 1, (int)(nargs - 1), NULL);
}

/* (memo, out, *inputs) -> out, written, or the sentinel MISS / SKIP: an out= call. Never
 * raises once set up (a RuntimeError before). */
/* apart(writes, reads) -> False when every tensor of the tuple `writes` (those a call
 * writes) is not an inference tensor outside inference mode, has no two elements at one
 * address, and shares no
 * byte with another of `writes` or with any tensor of `reads` (None skipped): the common
 * case, answered in C (the Python test took ~4 µs a call of three tensors). True
 * otherwise, or when anything cannot be read: the boundary's Python test (_apart) then
 * raises naming the arguments, or allows an out= that is exactly an input. Never raises
 * once plan_setup ran. */
static PyObject *py_apart(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!plan_ready("apart")) return NULL;
    if (nargs != 2 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1])) Py_RETURN_TRUE;
    const Py_ssize_t nw = PyTuple_GET_SIZE(args[0]), nr = PyTuple_GET_SIZE(args[1]);
    if (nw > PLAN_MAX_TENSORS || nr > PLAN_MAX_TENSORS) Py_RETURN_TRUE;
    apart_layout_t w[PLAN_MAX_TENSORS], r;
    const int inference = call_truth(P.inference, 0); /* once: in inference mode any tensor may be written */
    for (Py_ssize_t i = 0; i < nw; i++) {
        PyObject *t = PyTuple_GET_ITEM(args[0], i);
        if (apart_layout(t, &w[i]) || w[i].self_overlap ||
            (inference != 1 && flag(t, type_index(t), TA_IS_INFERENCE) != 0))
            Py_RETURN_TRUE;
        for (Py_ssize_t k = 0; k < i; k++)
            if (!apart_disjoint(&w[i], &w[k])) Py_RETURN_TRUE;
    }
    for (Py_ssize_t j = 0; j < nr; j++) {
        PyObject *t = PyTuple_GET_ITEM(args[1], j);
        if (t == Py_None) continue;
        if (apart_layout(t, &r)) Py_RETURN_TRUE;
        for (Py_ssize_t i = 0; i < nw; i++)
            if (!apart_disjoint(&r, &w[i])) Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyObject *py_plan_call_out(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!plan_ready("plan_call_out")) return NULL;
    if (nargs < 3 || nargs - 2 > PLAN_MAX_TENSORS || args[1] == Py_None) return Py_NewRef(P.skip);
    return plan_replay(args[0], args + 2, (int)(nargs - 2), args[1]);
}

/* ---- CUDA runtime ---------------------------------------------------------------- */

static PyObject *py_cuda_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_load", nargs, 1)) return NULL;
    char *hint = NULL; /* owned: read with the GIL released */
    if (args[0] != Py_None) {
        hint = dup_str("cuda_load", "the NVRTC folder (a str or None)", args[0], NULL);
        if (!hint) return NULL;
    }
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cuda_load(hint);
    Py_END_ALLOW_THREADS
    PyMem_Free(hint);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cuda_device_count(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    int n = 0;
    tileops_status_t st = tileops_cuda_device_count(&n);
    if (st != TILEOPS_OK) return raise_status(st);
    return PyLong_FromLong(n);
}

static PyObject *py_cuda_device_arch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_device_arch", nargs, 1)) return NULL;
    int dev = 0;
    if (as_int("cuda_device_arch", "the device", args[0], &dev)) return NULL;
    int major = 0, minor = 0;
    tileops_status_t st = tileops_cuda_device_arch(dev, &major, &minor);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *py_cuda_device_attributes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_device_attributes", nargs, 1)) return NULL;
    int dev = 0;
    if (as_int("cuda_device_attributes", "the device", args[0], &dev)) return NULL;
    int sms = 0, smem = 0, l2 = 0;
    tileops_status_t st = tileops_cuda_device_attributes(dev, &sms, &smem, &l2);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("{s:i,s:i,s:i}", "sm_count", sms, "max_shared_per_block", smem, "l2_bytes", l2);
}

static PyObject *py_cuda_reset_persisting_l2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_reset_persisting_l2", nargs, 1)) return NULL;
    int dev = 0;
    if (as_int("cuda_reset_persisting_l2", "the device", args[0], &dev)) return NULL;
    tileops_status_t st = tileops_cuda_reset_persisting_l2(dev);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_nvrtc_version(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    int major = 0, minor = 0;
    tileops_status_t st = tileops_nvrtc_version(&major, &minor);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *py_cuda_set_cache_dir(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_set_cache_dir", nargs, 1)) return NULL;
    const char *dir = NULL;
    if (args[0] != Py_None) {
        dir = as_str("cuda_set_cache_dir", "the cache folder (a str or None)", args[0], NULL);
        if (!dir) return NULL;
    }
    tileops_status_t st = tileops_cuda_set_cache_dir(dir);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cuda_set_version(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_set_version", nargs, 1)) return NULL;
    const char *v = as_str("cuda_set_version", "the version", args[0], NULL);
    if (!v) return NULL;
    tileops_status_t st = tileops_cuda_set_version(v);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

/* (device, source: str, kernel_name: str, options: tuple[str], arg_format: str,
 *  capture_stream: int) -> (handle, info dict)
 * The build runs with the GIL released (NVRTC can take seconds), so every string it reads
 * - the source, the name, each option, the format - is first copied into memory this call
 * owns: meanwhile another thread may empty the caller's options list and free its
 * strings. */
#define CUDA_BUILD_MAX_OPTIONS 256

typedef struct build_strings {
    char *src, *name, *fmt;
    char *opt[CUDA_BUILD_MAX_OPTIONS];
    Py_ssize_t src_len, nopts;
} build_strings_t;

static void build_strings_free(build_strings_t *b) {
    PyMem_Free(b->src);
    PyMem_Free(b->name);
    PyMem_Free(b->fmt);
    for (Py_ssize_t i = 0; i < b->nopts; i++)
        PyMem_Free(b->opt[i]);
}

/* Fills b (zeroed by the caller) from the arguments; on failure what it copied so far is
 * still freed by build_strings_free. */
static int build_strings_copy(PyObject *const *args, build_strings_t *b) {
    static const char fn[] = "cuda_build";
    if (!(b->src = dup_str(fn, "the source", args[1], &b->src_len))) return -1;
    if (!(b->name = dup_str(fn, "the kernel name", args[2], NULL))) return -1;
    PyObject *opts = args[3];
    if (!PyList_Check(opts) && !PyTuple_Check(opts))
        return arg_fail(PyExc_TypeError, fn, ARG("the options"), "a list or tuple of str", opts);
    /* No Python code runs in this loop (dup_str only reads str objects), so the list
     * cannot change under it. */
    Py_ssize_t n = PySequence_Fast_GET_SIZE(opts);
    if (n > CUDA_BUILD_MAX_OPTIONS) {
        PyErr_Format(PyExc_ValueError, "tileops._C.cuda_build: at most %d options, got %zd",
                     CUDA_BUILD_MAX_OPTIONS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(b->opt[i] = dup_str(fn, "each option", PySequence_Fast_GET_ITEM(opts, i), NULL)))
            return -1;
        b->nopts = i + 1;
    }
    if (!(b->fmt = dup_str(fn, "the arg format", args[4], NULL))) return -1;
    return 0;
}

static PyObject *py_cuda_build(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_build", nargs, 6)) return NULL;
    int dev = 0;
    if (as_int("cuda_build", "the device", args[0], &dev)) return NULL;
    uintptr_t cap = 0;
    if (as_uptr("cuda_build", ARG("the capture stream"), args[5], &cap)) return NULL;
    build_strings_t b;
    memset(&b, 0, sizeof b);
    if (build_strings_copy(args, &b)) {
        build_strings_free(&b);
        return NULL;
    }
    int handle = -1;
    tileops_build_info_t info;
    memset(&info, 0, sizeof info);
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cuda_build(dev, b.src, (size_t)b.src_len, b.name, (const char *const *)b.opt,
                            (int)b.nopts, b.fmt, cap, &handle, &info);
    Py_END_ALLOW_THREADS
    build_strings_free(&b);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("(i{s:O,s:O,s:O,s:d,s:d})", handle,
                         "nvrtc_ran", info.nvrtc_ran ? Py_True : Py_False,
                         "disk_hit", info.disk_hit ? Py_True : Py_False,
                         "memory_hit", info.memory_hit ? Py_True : Py_False,
                         "compile_ms", info.compile_ms, "total_ms", info.total_ms);
}

/* (handle, gx, gy, gz, bx, by, bz, shared_bytes, stream, *kernel_args): the hot path.
 * Arguments are converted by the format fixed at build and packed on the stack. */
static PyObject *py_cuda_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 9) {
        PyErr_Format(PyExc_TypeError,
                     "tileops._C.cuda_launch takes (handle, gx, gy, gz, bx, by, bz, shared_bytes, "
                     "stream, *kernel_args), got %zd arguments", nargs);
        return NULL;
    }
    int handle = -1;
    if (as_handle("cuda_launch", args[0], &handle)) return NULL;
    static const char *const dim_names[7] = {"grid x", "grid y", "grid z", "block x",
                                             "block y", "block z", "shared_bytes"};
    unsigned dims[7];
    for (int i = 0; i < 7; i++) {
        long long v = 0;
        if (as_ll("cuda_launch", ARG(dim_names[i]), args[1 + i], 0, UINT_MAX, &v)) return NULL;
        dims[i] = (unsigned)v;
    }
    uintptr_t stream = 0;
    if (as_uptr("cuda_launch", ARG("the stream"), args[8], &stream)) return NULL;
    unsigned grid[3] = {dims[0], dims[1], dims[2]};
    unsigned block[3] = {dims[3], dims[4], dims[5]};
    unsigned smem = dims[6];
    const char *fmt = tileops_cuda_kernel_arg_format(handle);
    if (fmt == NULL) {
        PyErr_Format(PyExc_ValueError, "tileops._C.cuda_launch: no kernel with handle %d", handle);
        return NULL;
    }
    Py_ssize_t nk = nargs - 9;
    if (nk > TILEOPS_MAX_KERNEL_ARGS || (size_t)nk != strlen(fmt)) {
        PyErr_Format(PyExc_TypeError, "tileops._C.cuda_launch: kernel takes %zu arguments (format '%s'), got %zd",
                     strlen(fmt), fmt, nk);
        return NULL;
    }
    tileops_arg_t kargs[TILEOPS_MAX_KERNEL_ARGS];
    if (pack_args("cuda_launch", fmt, args + 9, nk, kargs)) return NULL;
    tileops_status_t st = tileops_cuda_launch(handle, grid, block, smem, stream, kargs, (int)nk);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

/* (handle, flags) -> the flags in force (TILEOPS_LAUNCH_PDL dropped where the device or
 * driver cannot launch with it). */
static PyObject *py_cuda_kernel_set_launch_flags(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_kernel_set_launch_flags", nargs, 2)) return NULL;
    int handle = -1;
    if (as_handle("cuda_kernel_set_launch_flags", args[0], &handle)) return NULL;
    long long flags = 0;
    if (as_ll("cuda_kernel_set_launch_flags", ARG("the flags"), args[1], 0, UINT_MAX, &flags)) return NULL;
    unsigned applied = 0;
    tileops_status_t st = tileops_cuda_kernel_set_launch_flags(handle, (unsigned)flags, &applied);
    if (st != TILEOPS_OK) return raise_status(st);
    return PyLong_FromUnsignedLong(applied);
}

/* (mask) -> the previous mask of the launch flags honoured process-wide. */
static PyObject *py_cuda_set_launch_mask(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_set_launch_mask", nargs, 1)) return NULL;
    long long mask = 0;
    if (as_ll("cuda_set_launch_mask", ARG("the mask"), args[0], 0, UINT_MAX, &mask)) return NULL;
    return PyLong_FromUnsignedLong(tileops_cuda_set_launch_mask((unsigned)mask));
}

static PyObject *py_cuda_stream_is_capturing(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_stream_is_capturing", nargs, 1)) return NULL;
    uintptr_t s = 0;
    if (as_uptr("cuda_stream_is_capturing", ARG("the stream"), args[0], &s)) return NULL;
    int cap = 0;
    tileops_status_t st = tileops_cuda_stream_is_capturing(s, &cap);
    if (st != TILEOPS_OK) return raise_status(st);
    return PyBool_FromLong(cap);
}

static PyObject *py_cuda_stats(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    tileops_cuda_stats_t s;
    tileops_cuda_get_stats(&s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L}",
                         "nvrtc_compiles", (long long)s.nvrtc_compiles, "disk_hits", (long long)s.disk_hits,
                         "disk_rejects", (long long)s.disk_rejects, "memory_hits", (long long)s.memory_hits,
                         "modules_loaded", (long long)s.modules_loaded, "launches", (long long)s.launches);
}

/* (path, bytes) / (path) -> bytes: the disk-cache entry format, for tests. */
static PyObject *py_cache_store(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cache_store", nargs, 2)) return NULL;
    const char *path = as_str("cache_store", "the path", args[0], NULL);
    if (!path) return NULL;
    if (!PyBytes_Check(args[1]))
        return arg_fail(PyExc_TypeError, "cache_store", ARG("the payload"), "bytes", args[1]), NULL;
    char *buf = PyBytes_AS_STRING(args[1]);
    Py_ssize_t len = PyBytes_GET_SIZE(args[1]);
    tileops_status_t st = tileops_cache_store(path, buf, (size_t)len);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cache_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cache_load", nargs, 1)) return NULL;
    const char *path = as_str("cache_load", "the path", args[0], NULL);
    if (!path) return NULL;
    void *data = NULL; size_t len = 0;
    tileops_status_t st = tileops_cache_load(path, &data, &len);
    if (st != TILEOPS_OK) return raise_status(st);
    PyObject *r = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)len);
    free(data);
    return r;
}

/* () -> (on: bool, folder: str, reason: str): the disk cache of the current setting. */
static PyObject *py_cuda_cache_state(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    char dir[4096], reason[1100];
    int on;
    Py_BEGIN_ALLOW_THREADS
    on = tileops_cuda_cache_state(dir, sizeof dir, reason, sizeof reason);
    Py_END_ALLOW_THREADS
    /* the folder as the file system spells it (bytes that are not UTF-8 escaped, as
     * os.fsdecode does); the reason may end inside a character its length cut: replaced */
    PyObject *d = PyUnicode_DecodeFSDefault(dir);
    PyObject *r = d ? PyUnicode_DecodeUTF8(reason, (Py_ssize_t)strlen(reason), "replace") : NULL;
    PyObject *t = r ? PyTuple_Pack(3, on ? Py_True : Py_False, d, r) : NULL;
    Py_XDECREF(d);
    Py_XDECREF(r);
    return t;
}

/* () -> tuple[str]: the core's pending notes (tileops/notes.h), oldest first, taken. */
static PyObject *py_take_notes(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    char note[TILEOPS_NOTE_MAX];
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    while (tileops_take_note(note, sizeof note)) {
        PyObject *s = PyUnicode_DecodeUTF8(note, (Py_ssize_t)strlen(note), "replace");
        if (!s || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}

static PyMethodDef methods[] = {
    {"set_error_classes", (PyCFunction)(void (*)(void))py_set_error_classes, METH_FASTCALL, "Exception classes by status code."},
    {"cpu_kernel", (PyCFunction)(void (*)(void))py_cpu_kernel, METH_FASTCALL,
     "cpu_kernel(name) -> (handle, arg_format): a CPU kernel of the table, by name"},
    {"cpu_kernels", py_cpu_kernels, METH_NOARGS, "Names of every registered CPU kernel, in handle order."},
    {"cpu_launch", (PyCFunction)(void (*)(void))py_cpu_launch, METH_FASTCALL,
     "cpu_launch(handle, *args): runs a CPU kernel (GIL released); args follow its arg_format"},
    {"cpu_num_threads", py_cpu_num_threads, METH_NOARGS, "Threads the CPU kernels use."},
    {"cpu_set_num_threads", (PyCFunction)(void (*)(void))py_cpu_set_num_threads, METH_FASTCALL,
     "Set the CPU kernels' thread count (and stop following a source)."},
    {"cpu_follow_threads", (PyCFunction)(void (*)(void))py_cpu_follow_threads, METH_FASTCALL,
     "cpu_follow_threads(fn or None): each CPU launch first sets the thread count to fn()"},
    {"cpu_threads_followed", py_cpu_threads_followed, METH_NOARGS,
     "The callable the thread count follows, or None."},
    {"cpu_simd_level", py_cpu_simd_level, METH_NOARGS, "SIMD path of the CPU kernels."},
    {"plan_setup", (PyCFunction)(void (*)(void))py_plan_setup, METH_FASTCALL,
     "plan_setup(tensor_types, strided, falsy, nones, grad_enabled, empty_like, contiguous_format, miss, skip, "
     "out_tag, bump)"},
    {"plan_make", (PyCFunction)(void (*)(void))py_plan_make, METH_FASTCALL,
     "plan_make(handle, items, n_in, n_out, out_align) -> a plan of one CPU launch"},
    {"plan_call", (PyCFunction)(void (*)(void))py_plan_call, METH_FASTCALL,
     "plan_call(memo, *inputs) -> the outputs of the memo's plan for these inputs, or MISS / SKIP"},
    {"apart", (PyCFunction)(void (*)(void))py_apart, METH_FASTCALL,
     "apart(writes, reads) -> False when the written tensors are contiguous, writable and share no memory with "
     "any other (else True: look again in Python)"},
    {"plan_call_out", (PyCFunction)(void (*)(void))py_plan_call_out, METH_FASTCALL,
     "plan_call_out(memo, out, *inputs) -> out, written by the memo's plan of this out= call, or MISS / SKIP"},
    {"cuda_load", (PyCFunction)(void (*)(void))py_cuda_load, METH_FASTCALL, "cuda_load(nvrtc_dir or None)"},
    {"cuda_device_count", py_cuda_device_count, METH_NOARGS, "Number of CUDA devices."},
    {"cuda_device_arch", (PyCFunction)(void (*)(void))py_cuda_device_arch, METH_FASTCALL, "(major, minor)"},
    {"cuda_device_attributes", (PyCFunction)(void (*)(void))py_cuda_device_attributes, METH_FASTCALL, "SMs, smem, L2"},
    {"cuda_reset_persisting_l2", (PyCFunction)(void (*)(void))py_cuda_reset_persisting_l2, METH_FASTCALL,
     "Demote the device's persisting L2 lines (the L2-cold timer)."},
    {"nvrtc_version", py_nvrtc_version, METH_NOARGS, "(major, minor)"},
    {"cuda_set_cache_dir", (PyCFunction)(void (*)(void))py_cuda_set_cache_dir, METH_FASTCALL, "Disk cache folder."},
    {"cuda_set_version", (PyCFunction)(void (*)(void))py_cuda_set_version, METH_FASTCALL, "Version in the cache key."},
    {"cuda_build", (PyCFunction)(void (*)(void))py_cuda_build, METH_FASTCALL,
     "cuda_build(device, source, kernel_name, options, arg_format, capture_stream) -> (handle, info)"},
    {"cuda_launch", (PyCFunction)(void (*)(void))py_cuda_launch, METH_FASTCALL,
     "cuda_launch(handle, gx, gy, gz, bx, by, bz, shared_bytes, stream, *args)"},
    {"cuda_kernel_set_launch_flags", (PyCFunction)(void (*)(void))py_cuda_kernel_set_launch_flags, METH_FASTCALL,
     "cuda_kernel_set_launch_flags(handle, flags) -> the flags in force (LAUNCH_PDL)"},
    {"cuda_set_launch_mask", (PyCFunction)(void (*)(void))py_cuda_set_launch_mask, METH_FASTCALL,
     "cuda_set_launch_mask(mask) -> the previous mask of the launch flags honoured"},
    {"cuda_stream_is_capturing", (PyCFunction)(void (*)(void))py_cuda_stream_is_capturing, METH_FASTCALL, "bool"},
    {"cuda_stats", py_cuda_stats, METH_NOARGS, "Runtime counters."},
    {"cache_store", (PyCFunction)(void (*)(void))py_cache_store, METH_FASTCALL, "Write a disk-cache entry."},
    {"cache_load", (PyCFunction)(void (*)(void))py_cache_load, METH_FASTCALL, "Read and verify a disk-cache entry."},
    {"cuda_cache_state", py_cuda_cache_state, METH_NOARGS, "(on, folder, reason) of the disk cache."},
    {"take_notes", py_take_notes, METH_NOARGS, "The core's pending notes (settings it could not honour)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tileops._C", "The C core of tileops (kernels and CUDA runtime).",
    -1, methods, NULL, NULL, NULL, NULL,
};

/* {name: code} of every dtype code, names as torch spells them: the Python layer maps
 * torch dtypes from this, so a code added in dtype.h needs no Python edit. */
static PyObject *dtype_codes(void) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int code = 0; code < TILEOPS_DTYPE_COUNT_; code++) {
        PyObject *v = PyLong_FromLong(code);
        if (!v || PyDict_SetItemString(d, tileops_dtype_name(code), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *codes = dtype_codes();
    if (!codes ||
        PyModule_AddObject(m, "DTYPE_CODES", codes) < 0 || /* steals codes on success only */
        PyModule_AddIntConstant(m, "FLOAT32", TILEOPS_FLOAT32) < 0 ||
        PyModule_AddIntConstant(m, "FLOAT16", TILEOPS_FLOAT16) < 0 ||
        PyModule_AddIntConstant(m, "BFLOAT16", TILEOPS_BFLOAT16) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_COUNT", TILEOPS_STATUS_COUNT_) < 0 ||
        PyModule_AddIntConstant(m, "MAX_KERNEL_ARGS", TILEOPS_MAX_KERNEL_ARGS) < 0 ||
        PyModule_AddIntConstant(m, "LAUNCH_PDL", TILEOPS_LAUNCH_PDL) < 0 ||
        PyModule_AddStringConstant(m, "ARG_FORMAT_CHARS", TILEOPS_ARG_FORMAT_CHARS) < 0) {
        Py_XDECREF(codes);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
