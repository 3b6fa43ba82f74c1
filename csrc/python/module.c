/* tileops._C: the CPython binding of the C core. The only file that includes Python.h.
 *
 * Everything crosses as plain integers and floats (data pointers, sizes, strides, dtype
 * codes, stream handles): the core never sees a torch object, so this module builds with a
 * C compiler alone and serves every torch version. Functions use METH_FASTCALL (no tuple
 * or dict is built per call); CPU kernels run with the GIL released. A failing core call
 * becomes an exception of the class the Python layer registered for its status code
 * (tileops.errors), carrying the core's message. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "tileops/cpu.h"
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

/* Integer conversions that fail with a Python error (checked with PyErr_Occurred once per
 * call, not per argument, to keep the hot path short). */
static inline int64_t as_i64(PyObject *o) { return (int64_t)PyLong_AsLongLong(o); }
static inline uintptr_t as_ptr(PyObject *o) { return (uintptr_t)PyLong_AsUnsignedLongLongMask(o); }

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

/* (x, weight, y, rows, n, x_row_stride, y_row_stride, eps, dtype, variant) */
static int parse_rms_norm(PyObject *const *a, Py_ssize_t nargs, const char *fn,
                          tileops_rms_norm_args_t *r, int *variant) {
    if (check_nargs(fn, nargs, 10)) return -1;
    r->x = (const void *)as_ptr(a[0]);
    r->weight = (const void *)as_ptr(a[1]);
    r->y = (void *)as_ptr(a[2]);
    r->rows = as_i64(a[3]);
    r->n = as_i64(a[4]);
    r->x_row_stride = as_i64(a[5]);
    r->y_row_stride = as_i64(a[6]);
    r->eps = (float)PyFloat_AsDouble(a[7]);
    r->dtype = (int)PyLong_AsLong(a[8]);
    *variant = (int)PyLong_AsLong(a[9]);
    return PyErr_Occurred() ? -1 : 0;
}

/* Both CPU entry points; the reference ignores the variant. */
static PyObject *run_rms_norm(PyObject *const *args, Py_ssize_t nargs, const char *fn, int reference) {
    tileops_rms_norm_args_t r;
    int variant;
    if (parse_rms_norm(args, nargs, fn, &r, &variant)) return NULL;
    tileops_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = reference ? tileops_cpu_rms_norm_reference(&r) : tileops_cpu_rms_norm(&r, variant);
    Py_END_ALLOW_THREADS
    if (st != TILEOPS_OK) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_cpu_rms_norm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return run_rms_norm(args, nargs, "cpu_rms_norm", 0);
}

static PyObject *py_cpu_rms_norm_reference(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return run_rms_norm(args, nargs, "cpu_rms_norm_reference", 1);
}

static PyObject *py_cpu_num_threads(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(tileops_cpu_num_threads());
}

static PyObject *py_cpu_set_num_threads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cpu_set_num_threads", nargs, 1)) return NULL;
    long n = PyLong_AsLong(args[0]);
    if (PyErr_Occurred()) return NULL;
    tileops_status_t st = tileops_cpu_set_num_threads((int)n);
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
    int dev = (int)PyLong_AsLong(args[0]);
    if (PyErr_Occurred()) return NULL;
    int major = 0, minor = 0;
    tileops_status_t st = tileops_cuda_device_arch(dev, &major, &minor);
    if (st != TILEOPS_OK) return raise_status(st);
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *py_cuda_device_attributes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (check_nargs("cuda_device_attributes", nargs, 1)) return NULL;
    int dev = (int)PyLong_AsLong(args[0]);
    if (PyErr_Occurred()) return NULL;
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
    int dev = (int)PyLong_AsLong(args[0]);
    if (PyErr_Occurred()) return NULL;
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
    long handle_l = PyLong_AsLong(args[0]);
    unsigned long dims[7];
    for (int i = 0; i < 7; i++)
        dims[i] = PyLong_AsUnsignedLong(args[1 + i]); /* negative: OverflowError */
    uintptr_t stream = as_ptr(args[8]);
    if (PyErr_Occurred()) return NULL;
    if (handle_l < 0 || handle_l > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "tileops._C.cuda_launch: no kernel with handle %ld", handle_l);
        return NULL;
    }
    for (int i = 0; i < 7; i++) {
        if (dims[i] > UINT_MAX) {
            PyErr_Format(PyExc_OverflowError, "tileops._C.cuda_launch: grid/block/shared value %lu exceeds %u",
                         dims[i], UINT_MAX);
            return NULL;
        }
    }
    int handle = (int)handle_l;
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
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *o = args[9 + i];
        switch (fmt[i]) {
        case 'p': kargs[i].p = as_ptr(o); break;
        case 'q': kargs[i].q = as_i64(o); break;
        case 'i': kargs[i].i = (int32_t)PyLong_AsLong(o); break;
        case 'f': kargs[i].f = (float)PyFloat_AsDouble(o); break;
        default:
            PyErr_Format(PyExc_ValueError, "tileops._C.cuda_launch: bad format character '%c'", fmt[i]);
            return NULL;
        }
    }
    if (PyErr_Occurred()) return NULL;
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

static PyMethodDef methods[] = {
    {"set_error_classes", (PyCFunction)(void (*)(void))py_set_error_classes, METH_FASTCALL, "Exception classes by status code."},
    {"cpu_rms_norm", (PyCFunction)(void (*)(void))py_cpu_rms_norm, METH_FASTCALL,
     "cpu_rms_norm(x, weight, y, rows, n, x_row_stride, y_row_stride, eps, dtype, variant)"},
    {"cpu_rms_norm_reference", (PyCFunction)(void (*)(void))py_cpu_rms_norm_reference, METH_FASTCALL,
     "Scalar double-precision reference; same arguments as cpu_rms_norm."},
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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tileops._C", "The C core of tileops (kernels and CUDA runtime).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "FLOAT32", TILEOPS_FLOAT32) < 0 ||
        PyModule_AddIntConstant(m, "FLOAT16", TILEOPS_FLOAT16) < 0 ||
        PyModule_AddIntConstant(m, "BFLOAT16", TILEOPS_BFLOAT16) < 0 ||
        PyModule_AddIntConstant(m, "STATUS_COUNT", TILEOPS_STATUS_COUNT_) < 0 ||
        PyModule_AddIntConstant(m, "MAX_KERNEL_ARGS", TILEOPS_MAX_KERNEL_ARGS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
