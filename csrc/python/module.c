/* tileops._C: the CPython binding of the C core. The only file that includes Python.h.
 *
 * Everything crosses as plain integers and floats (data pointers, sizes, strides, dtype
 * codes, stream handles): the core never sees a torch object, so this module builds with a
 * C compiler alone and serves every torch version. Functions use METH_FASTCALL (no tuple
 * or dict is built per call); CPU kernels run with the GIL released. Kernels of either
 * kind are found once by name and launched by handle through one generic entry each
 * (cpu_launch, cuda_launch), their arguments converted by the kernel's format, so this
 * file does not change when an op is added. A failing core call becomes an exception of
 * the class the Python layer registered for its status code (tileops.errors), carrying
 * the core's message. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
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
    const char *msg = tileops_last_error();
    PyErr_Format(cls, "%s", (msg && msg[0]) ? msg : tileops_status_name(st));
    return NULL;
}

static int check_nargs(const char *fn, Py_ssize_t got, Py_ssize_t want) {
    if (got != want) {
        PyErr_Format(PyExc_TypeError, "tileops._C.%s takes %zd arguments, got %zd", fn, want, got);
        return -1;
    }
    return 0;
}

/* A pointer: any int in [0, 2**64), or an object with __index__. A negative one is an
 * OverflowError, never an address wrapped around to the top of the address space. On
 * error returns (uintptr_t)-1 with the exception set. */
static uintptr_t as_ptr(PyObject *o) {
    if (PyLong_Check(o))
        return (uintptr_t)PyLong_AsUnsignedLongLong(o);
    PyObject *i = PyNumber_Index(o);
    if (!i)
        return (uintptr_t)-1;
    uintptr_t v = (uintptr_t)PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    return v;
}

/* A C int (device ordinals, thread counts): out of range is an OverflowError, never a
 * truncated value that happens to be valid. Returns 0, or -1 with the exception set. */
static int as_int(const char *fn, const char *what, PyObject *o, int *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_OverflowError, "tileops._C.%s: %s must fit a C int, got %lld", fn, what, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Re-raises the conversion error of kernel argument `index` with the argument named, so
 * a caller sees which of a dozen integers was wrong. Keeps the error's class (an
 * OverflowError stays one, so does a TypeError). Returns -1. */
static int arg_error(const char *fn, Py_ssize_t index, char kind, PyObject *o) {
    const char *want = kind == 'p' ? "a pointer in [0, 2**64)"
                     : kind == 'q' ? "an int64"
                     : kind == 'i' ? "an int32"
                                   : "a float";
    PyObject *cls = PyErr_ExceptionMatches(PyExc_OverflowError) ? PyExc_OverflowError : PyExc_TypeError;
    PyErr_Clear();
    PyErr_Format(cls, "tileops._C.%s: kernel argument %zd (format '%c') must be %s, got %R", fn,
                 index, kind, want, o);
    return -1;
}

/* Converts a kernel's Python arguments into packed values by its arg format: the one
 * conversion both cpu_launch and cuda_launch use. n must equal strlen(fmt) (checked by
 * the caller, which knows how to word the count error). Returns 0, or -1 with an
 * exception naming the argument. */
static int pack_args(const char *fn, const char *fmt, PyObject *const *objs, Py_ssize_t n,
                     tileops_arg_t *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = objs[i];
        switch (fmt[i]) {
        case 'p':
            out[i].p = as_ptr(o);
            if (out[i].p == (uintptr_t)-1 && PyErr_Occurred())
                return arg_error(fn, i, 'p', o);
            break;
        case 'q':
            out[i].q = (int64_t)PyLong_AsLongLong(o);
            if (out[i].q == -1 && PyErr_Occurred())
                return arg_error(fn, i, 'q', o);
            break;
        case 'i': {
            long long v = PyLong_AsLongLong(o);
            if (v == -1 && PyErr_Occurred())
                return arg_error(fn, i, 'i', o);
            if (v < INT32_MIN || v > INT32_MAX) {
                PyErr_Format(PyExc_OverflowError,
                             "tileops._C.%s: kernel argument %zd (format 'i') must be an int32, got %lld",
                             fn, i, v);
                return -1;
            }
            out[i].i = (int32_t)v;
            break;
        }
        case 'f': {
            double d = PyFloat_AsDouble(o);
            if (d == -1.0 && PyErr_Occurred())
                return arg_error(fn, i, 'f', o);
            out[i].f = (float)d;
            break;
        }
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

static PyObject *py_set_error_classes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("set_error_classes", nargs, 1)) return NULL;
    PyObject *seq = PySequence_Fast(args[0], "set_error_classes expects a sequence");
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != TILEOPS_STATUS_COUNT_) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "set_error_classes expects %d classes", TILEOPS_STATUS_COUNT_);
        return NULL;
    }
    for (int i = 0; i < TILEOPS_STATUS_COUNT_; i++) {
        PyObject *c = PySequence_Fast_GET_ITEM(seq, i);
        Py_XINCREF(c == Py_None ? NULL : c);
        Py_XSETREF(error_classes[i], c == Py_None ? NULL : c);
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

/* ---- CPU ------------------------------------------------------------------------- */

/* (name) -> (handle, arg_format): looked up once when a kernel class builds, so the hot
 * path passes a small integer, as for CUDA kernels. */
static PyObject *py_cpu_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cpu_kernel", nargs, 1)) return NULL;
    const char *name = PyUnicode_AsUTF8(args[0]);
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

/* (handle, *kernel_args): the CPU hot path, the twin of cuda_launch without the grid. */
static PyObject *py_cpu_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "tileops._C.cpu_launch: (handle, *args)");
        return NULL;
    }
    int handle;
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
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cpu_kernel_launch(handle, kargs, (int)nk);
    Py_END_ALLOW_THREADS
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cpu_num_threads(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(tileops_cpu_num_threads());
}

static PyObject *py_cpu_set_num_threads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cpu_set_num_threads", nargs, 1)) return NULL;
    int n;
    if (as_int("cpu_set_num_threads", "the thread count", args[0], &n)) return NULL;
    tileops_status_t st = tileops_cpu_set_num_threads(n);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cpu_simd_level(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyUnicode_FromString(tileops_cpu_simd_level());
}

/* ---- CUDA runtime ---------------------------------------------------------------- */

static PyObject *py_cuda_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_load", nargs, 1)) return NULL;
    const char *hint = NULL;
    if (args[0] != Py_None) {
        hint = PyUnicode_AsUTF8(args[0]);
        if (!hint) return NULL;
    }
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cuda_load(hint);
    Py_END_ALLOW_THREADS
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
    int dev;
    if (as_int("cuda_device_arch", "the device", args[0], &dev)) return NULL;
    int major = 0, minor = 0;
    tileops_status_t st = tileops_cuda_device_arch(dev, &major, &minor);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *py_cuda_device_attributes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_device_attributes", nargs, 1)) return NULL;
    int dev;
    if (as_int("cuda_device_attributes", "the device", args[0], &dev)) return NULL;
    int sms = 0, smem = 0, l2 = 0;
    tileops_status_t st = tileops_cuda_device_attributes(dev, &sms, &smem, &l2);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("{s:i,s:i,s:i}", "sm_count", sms, "max_shared_per_block", smem, "l2_bytes", l2);
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
        dir = PyUnicode_AsUTF8(args[0]);
        if (!dir) return NULL;
    }
    tileops_status_t st = tileops_cuda_set_cache_dir(dir);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cuda_set_version(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_set_version", nargs, 1)) return NULL;
    const char *v = PyUnicode_AsUTF8(args[0]);
    if (!v) return NULL;
    tileops_status_t st = tileops_cuda_set_version(v);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

/* (device, source: str, kernel_name: str, options: tuple[str], arg_format: str,
 *  capture_stream: int) -> (handle, info dict) */
static PyObject *py_cuda_build(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_build", nargs, 6)) return NULL;
    int dev;
    if (as_int("cuda_build", "the device", args[0], &dev)) return NULL;
    Py_ssize_t src_len = 0;
    const char *src = PyUnicode_AsUTF8AndSize(args[1], &src_len);
    if (!src) return NULL;
    const char *name = PyUnicode_AsUTF8(args[2]);
    if (!name) return NULL;
    PyObject *opts = PySequence_Fast(args[3], "cuda_build: options must be a sequence of str");
    if (!opts) return NULL;
    Py_ssize_t nopts = PySequence_Fast_GET_SIZE(opts);
    if (nopts > 256) {
        Py_DECREF(opts);
        PyErr_SetString(PyExc_ValueError, "cuda_build: at most 256 options");
        return NULL;
    }
    const char *optv[256];
    for (Py_ssize_t i = 0; i < nopts; i++) {
        optv[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(opts, i));
        if (!optv[i]) { Py_DECREF(opts); return NULL; }
    }
    const char *fmt = PyUnicode_AsUTF8(args[4]);
    if (!fmt) { Py_DECREF(opts); return NULL; }
    uintptr_t cap = as_ptr(args[5]);
    if (PyErr_Occurred()) { Py_DECREF(opts); return NULL; }
    int handle = -1;
    tileops_build_info_t info;
    memset(&info, 0, sizeof info);
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tileops_cuda_build(dev, src, (size_t)src_len, name, optv, (int)nopts, fmt, cap, &handle, &info);
    Py_END_ALLOW_THREADS
    Py_DECREF(opts);
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
        PyErr_SetString(PyExc_TypeError, "tileops._C.cuda_launch: (handle, gx, gy, gz, bx, by, bz, shared_bytes, stream, *args)");
        return NULL;
    }
    int handle;
    if (as_handle("cuda_launch", args[0], &handle)) return NULL;
    unsigned long dims[7];
    for (int i = 0; i < 7; i++)
        dims[i] = PyLong_AsUnsignedLong(args[1 + i]); /* negative: OverflowError */
    uintptr_t stream = as_ptr(args[8]);
    if (PyErr_Occurred()) return NULL;
    for (int i = 0; i < 7; i++) {
        if (dims[i] > UINT_MAX) {
            PyErr_Format(PyExc_OverflowError, "tileops._C.cuda_launch: grid/block/shared value %lu exceeds %u",
                         dims[i], UINT_MAX);
            return NULL;
        }
    }
    unsigned grid[3] = {(unsigned)dims[0], (unsigned)dims[1], (unsigned)dims[2]};
    unsigned block[3] = {(unsigned)dims[3], (unsigned)dims[4], (unsigned)dims[5]};
    unsigned smem = (unsigned)dims[6];
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

static PyObject *py_cuda_stream_is_capturing(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_stream_is_capturing", nargs, 1)) return NULL;
    uintptr_t s = as_ptr(args[0]);
    if (PyErr_Occurred()) return NULL;
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
    const char *path = PyUnicode_AsUTF8(args[0]);
    if (!path) return NULL;
    char *buf; Py_ssize_t len;
    if (PyBytes_AsStringAndSize(args[1], &buf, &len) < 0) return NULL;
    tileops_status_t st = tileops_cache_store(path, buf, (size_t)len);
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cache_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cache_load", nargs, 1)) return NULL;
    const char *path = PyUnicode_AsUTF8(args[0]);
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
    return Py_BuildValue("(Oss)", on ? Py_True : Py_False, dir, reason);
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
    {"cpu_set_num_threads", (PyCFunction)(void (*)(void))py_cpu_set_num_threads, METH_FASTCALL, "Set the CPU kernels' thread count."},
    {"cpu_simd_level", py_cpu_simd_level, METH_NOARGS, "SIMD path of the CPU kernels."},
    {"cuda_load", (PyCFunction)(void (*)(void))py_cuda_load, METH_FASTCALL, "cuda_load(nvrtc_dir or None)"},
    {"cuda_device_count", py_cuda_device_count, METH_NOARGS, "Number of CUDA devices."},
    {"cuda_device_arch", (PyCFunction)(void (*)(void))py_cuda_device_arch, METH_FASTCALL, "(major, minor)"},
    {"cuda_device_attributes", (PyCFunction)(void (*)(void))py_cuda_device_attributes, METH_FASTCALL, "SMs, smem, L2"},
    {"nvrtc_version", py_nvrtc_version, METH_NOARGS, "(major, minor)"},
    {"cuda_set_cache_dir", (PyCFunction)(void (*)(void))py_cuda_set_cache_dir, METH_FASTCALL, "Disk cache folder."},
    {"cuda_set_version", (PyCFunction)(void (*)(void))py_cuda_set_version, METH_FASTCALL, "Version in the cache key."},
    {"cuda_build", (PyCFunction)(void (*)(void))py_cuda_build, METH_FASTCALL,
     "cuda_build(device, source, kernel_name, options, arg_format, capture_stream) -> (handle, info)"},
    {"cuda_launch", (PyCFunction)(void (*)(void))py_cuda_launch, METH_FASTCALL,
     "cuda_launch(handle, gx, gy, gz, bx, by, bz, shared_bytes, stream, *args)"},
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
        PyModule_AddStringConstant(m, "ARG_FORMAT_CHARS", TILEOPS_ARG_FORMAT_CHARS) < 0) {
        Py_XDECREF(codes);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
