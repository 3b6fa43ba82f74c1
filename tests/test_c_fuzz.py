"""Fuzz of the private binding tileops._C: every function of its method table, called
with wrong argument counts, wrong types and hostile values, must raise an Exception of a
clear class (TypeError / ValueError / OverflowError naming the function, or the class of
a core status) or return - never crash, never take a truncated value, never raise
SystemError (a misuse of the C API).

Each group runs in a subprocess of its own (`python tests/test_c_fuzz.py <group>`), so a
crash fails that group with its exit status and the tail of its output instead of taking
pytest down. The workers load the extension file directly, without importing the tileops
package or torch: `TILEOPS_C_EXT_PATH` names the file (`make check-fuzz` points it at a
build with AddressSanitizer + UndefinedBehaviorSanitizer, preloading libasan), and by
default it is the _C of the installed package. Pointers handed to kernels are 0 or point
into small buffers from the C allocator: C cannot know a raw pointer's extent (the Python layer checks
tensors), so a kernel is only ever called with sizes that either fit the buffers or that
its contract rejects - and those it must reject before touching memory."""
import ctypes
import importlib.machinery
import importlib.util
import math
import os
import random
import subprocess
import sys
import tempfile
import threading

import pytest

GROUPS = ("surface", "cpu_launch", "cuda", "threads")
INT_MIN, INT_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
SEED = int(os.environ.get("TILEOPS_FUZZ_SEED", "1717"))


# ---- the parent: one pytest test per group, each in its own process ---------------------

@pytest.mark.parametrize("group", GROUPS)
def test_c_fuzz_group(group):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), group], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ))
    out = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, (f"fuzz group '{group}' failed (exit status {r.returncode}"
                               f"{', a crash' if r.returncode < 0 or r.returncode > 1 else ''}; "
                               f"TILEOPS_FUZZ_SEED={SEED}):\n{out}")
    assert f"ok {group}" in r.stdout, out


# ---- the workers ----------------------------------------------------------------------------

def load_extension():
    """tileops._C from TILEOPS_C_EXT_PATH, else the package's own file, imported on its own
    (the package's __init__, which imports torch, does not run)."""
    path = os.environ.get("TILEOPS_C_EXT_PATH")
    if not path:
        spec = importlib.util.find_spec("tileops")  # a top-level spec: found, not imported
        assert spec is not None and spec.submodule_search_locations, "tileops is not installed"
        for folder in spec.submodule_search_locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                if os.path.exists(os.path.join(folder, "_C" + suffix)):
                    path = os.path.join(folder, "_C" + suffix)
                    break
        assert path, f"no tileops/_C extension in {spec.submodule_search_locations}"
    loader = importlib.machinery.ExtensionFileLoader("tileops._C", path)
    spec = importlib.util.spec_from_file_location("tileops._C", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    assert "torch" not in sys.modules
    return module


class StatusError(Exception):
    """What a core status raises in the workers: one subclass per status code."""
    code = -1


STATUS = [None] + [type(f"Status{i}", (StatusError,), {"code": i}) for i in range(1, 64)]


class Index:
    """An int by __index__ (as numpy's integers are)."""
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v

    def __repr__(self):
        return f"Index({self.v})"


class BadIndex:
    def __index__(self):
        raise ZeroDivisionError("__index__ fails")

    def __repr__(self):
        return "BadIndex()"


class Str(str):
    pass


HOSTILE = [None, "x", "", "a\0b", "\udc80", Str("s"), b"x", bytearray(b"x"), 1.5, -0.0,
           float("nan"), float("inf"), float("-inf"), 1e39, [], ["x"], (), {}, object(), True,
           False, 0, 1, -1, 3, INT_MAX, INT_MAX + 1, INT_MIN, INT_MIN - 1, 2**32, 2**32 + 1,
           2**32 + 3, I64_MAX, I64_MAX + 1, I64_MIN, I64_MIN - 1, 2**64 - 1, 2**64, 2**70,
           -2**70, 10**400, 10**5000, Index(2), Index(-1), Index(2**64), BadIndex()]


def _is_int(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, (Index, BadIndex))


def _int_value(v):
    return v.v if isinstance(v, Index) else v


def want_for(kind, v):
    """The outcome a conversion of value v for an argument of `kind` must have: an
    exception class, or None for a value that converts (the function may then still
    raise a core status, or return)."""
    kind = "ptr" if kind == "p" else kind
    if kind in ("int", "u32", "handle", "ptr", "q", "i"):
        if not _is_int(v):
            return TypeError
        if isinstance(v, BadIndex):
            return ZeroDivisionError
        x = _int_value(v)
        lo, hi = {"int": (INT_MIN, INT_MAX), "u32": (0, 2**32 - 1), "handle": (INT_MIN, INT_MAX),
                  "ptr": (0, 2**64 - 1), "q": (I64_MIN, I64_MAX), "i": (INT_MIN, INT_MAX)}[kind]
        if not lo <= x <= hi:
            return OverflowError
        if kind == "handle" and x < 0:
            return ValueError
        return None
    if kind in ("f", "d"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return TypeError
        try:
            d = float(v)
        except OverflowError:
            return OverflowError
        return OverflowError if kind == "f" and math.isfinite(d) and abs(d) > 3.4028234663852886e38 else None
    if kind in ("str", "str_or_none"):
        if v is None and kind == "str_or_none":
            return None
        if not isinstance(v, str):
            return TypeError
        if "\0" in v:
            return ValueError
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return ValueError
        return None
    if kind == "bytes":
        return None if isinstance(v, bytes) else TypeError
    if kind == "callable_or_none":
        return None if v is None or callable(v) else TypeError
    if kind == "str_seq":
        if not isinstance(v, (list, tuple)):
            return TypeError
        return next((w for w in (want_for("str", s) for s in v) if w is not None), None)
    if kind == "classes":
        if not isinstance(v, (list, tuple)):
            return TypeError
        return ValueError  # every hostile list or tuple has the wrong length
    raise AssertionError(kind)


def _short(v):
    """repr(v), except for an int too long for it (also inside a tuple)."""
    if isinstance(v, int) and v.bit_length() > 256:
        return f"<int of {v.bit_length()} bits>"
    if type(v) is tuple:
        return "(" + "".join(_short(x) + ", " for x in v) + ")"
    return repr(v)


class Fuzz:
    def __init__(self, C):
        self.C = C
        self.calls = 0

    def expect(self, name, args, want, *, status=None, returns=None):
        """Calls C.<name>(*args). want: an exception class the call must raise, or None:
        it may return (then `returns`, if given, checks the value) or raise a core status
        (`status`: the codes allowed, None for any)."""
        self.calls += 1
        f = getattr(self.C, name)
        label = f"_C.{name}({', '.join(map(_short, args))})"[:300]
        try:
            r = f(*args)
        except Exception as e:  # noqa: BLE001 - the class is what is checked
            assert not isinstance(e, SystemError), f"{label}: SystemError (a C API misuse): {e}"
            if want is None:
                assert isinstance(e, StatusError), (
                    f"{label}: raised {type(e).__name__}: {e}; want a return or a core status")
                assert status is None or e.code in status, f"{label}: status {e.code} ({e}), want {status}"
                assert str(e), f"{label}: a core status without a message"
                return e
            assert isinstance(e, want), f"{label}: raised {type(e).__name__}: {e}; want {want.__name__}"
            if want in (TypeError, OverflowError, ValueError) and not isinstance(e, StatusError):
                assert name in str(e), f"{label}: the message does not name the function: {e}"
            return e
        assert want is None, f"{label}: returned {r!r}; want {want.__name__}"
        if returns is not None:
            assert returns(r), f"{label}: returned {r!r}"
        return r


_libc = ctypes.CDLL(None)
_libc.calloc.restype = ctypes.c_void_p
_libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]


def _malloc_buffer(nbytes):
    """The address of nbytes of zeroed memory from the C allocator (not Python's: under
    AddressSanitizer a kernel reading or writing past it is then a report), freed at exit."""
    p = _libc.calloc(1, nbytes)
    assert p, "calloc failed"
    _BUFFERS.append(p)
    return p


_BUFFERS = []


# ---- group: surface ---------------------------------------------------------------------------

def signatures(C, tmp):
    """name -> (kinds of the arguments, baseline values of those kinds). A function
    missing here fails the coverage check: a new _C function must be fuzzed too."""
    path = os.path.join(tmp, "entry.bin")
    return {
        "set_error_classes": (["classes"], [tuple(STATUS[:C.STATUS_COUNT])]),
        "cpu_kernel": (["str"], ["rms_norm"]),
        "cpu_kernels": ([], []),
        "cpu_launch": None,  # variadic: group cpu_launch
        "cpu_num_threads": ([], []),
        "cpu_set_num_threads": (["int"], [1]),
        "cpu_follow_threads": (["callable_or_none"], [None]),
        "cpu_threads_followed": ([], []),
        "cpu_simd_level": ([], []),
        "cuda_load": (["str_or_none"], [None]),
        "cuda_device_count": ([], []),
        "cuda_device_arch": (["int"], [0]),
        "cuda_device_attributes": (["int"], [0]),
        "cuda_reset_persisting_l2": (["int"], [0]),
        "nvrtc_version": ([], []),
        "cuda_set_cache_dir": (["str_or_none"], [os.path.join(tmp, "cache")]),
        "cuda_set_version": (["str"], ["0.0-fuzz"]),
        "cuda_build": (["int", "str", "str", "str_seq", "str", "ptr"],
                       [0, "extern \"C\" __global__ void k(float *p) {}", "k", ("-DX=1",), "p", 0]),
        "cuda_launch": None,  # variadic: group cuda
        "cuda_stream_is_capturing": (["ptr"], [0]),
        "cuda_kernel_set_launch_flags": (["handle", "u32"], [12345, 1]),   # no such kernel: a core status
        "cuda_set_launch_mask": (["u32"], [1]),
        "cuda_stats": ([], []),
        "cache_store": (["str", "bytes"], [path, b"payload"]),
        "cache_load": (["str"], [path]),
        "cuda_cache_state": ([], []),
        "take_notes": ([], []),
        "plan_setup": None,  # group surface, fuzz_plans
        "plan_make": None,
        "plan_call": None,
        "plan_call_out": None,
        "apart": None,   # group surface, fuzz_plans
    }


def group_surface(C):
    fz = Fuzz(C)
    with tempfile.TemporaryDirectory() as tmp:
        sigs = signatures(C, tmp)
        exported = sorted(n for n in dir(C) if callable(getattr(C, n)) and not n.startswith("__"))
        assert sorted(sigs) == exported, (
            f"the fuzz does not cover every _C function: missing {sorted(set(exported) - set(sigs))}, "
            f"stale {sorted(set(sigs) - set(exported))}")
        classes = tuple(STATUS[:C.STATUS_COUNT])
        for name, sig in sigs.items():
            if sig is None:
                continue
            kinds, base = sig
            # wrong counts
            for k in range(0, len(kinds) + 3):
                if k != len(kinds):
                    fz.expect(name, (base + [0] * k)[:k], TypeError)
            # each argument in turn, every hostile value; the others valid
            for i, kind in enumerate(kinds):
                for v in HOSTILE:
                    args = list(base)
                    args[i] = v
                    fz.expect(name, args, want_for(kind, v))
                    if name == "set_error_classes":
                        C.set_error_classes(classes)
            fz.expect(name, base, None)
        # what the values mean, past the conversion
        fz.expect("set_error_classes", [list(classes)], None)
        fz.expect("set_error_classes", [classes[:-1]], ValueError)
        fz.expect("set_error_classes", [classes[:-1] + (int,)], TypeError)
        fz.expect("set_error_classes", [classes[:-1] + (ValueError(),)], TypeError)
        # a rejected sequence left the classes as they were
        fz.expect("cpu_set_num_threads", [0], None, status={1})
        fz.expect("set_error_classes", [(None,) * C.STATUS_COUNT], None)
        try:
            C.cpu_set_num_threads(0)
        except RuntimeError as e:  # no class registered: RuntimeError with the core's message
            assert not isinstance(e, StatusError) and "thread" in str(e), e
        else:
            raise AssertionError("cpu_set_num_threads(0) returned")
        C.set_error_classes(classes)
        fz.expect("cpu_set_num_threads", [2**32 + 3], OverflowError)
        fz.expect("cpu_set_num_threads", [-1], None, status={1})
        fz.expect("cpu_set_num_threads", [2], None, returns=lambda r: r is None)
        assert C.cpu_num_threads() == 2
        # a thread count source: kept (a reference) until replaced; a count set by hand drops it
        source = (lambda: 3)
        fz.expect("cpu_follow_threads", [source], None, returns=lambda r: r is None)
        fz.expect("cpu_threads_followed", [], None, returns=lambda r: r is source)
        fz.expect("cpu_set_num_threads", [2], None)
        fz.expect("cpu_threads_followed", [], None, returns=lambda r: r is None)
        fz.expect("cpu_follow_threads", [None], None)
        fz.expect("cpu_kernel", ["no_such_kernel"], None, status={1})
        fz.expect("cpu_kernel", ["rms_norm\0"], ValueError)
        fz.expect("cpu_kernel", ["rms_norm"], None, returns=lambda r: r[1] == "pppqqqqfii")
        fz.expect("cpu_kernels", [], None, returns=lambda r: isinstance(r, tuple) and "rms_norm" in r)
        fz.expect("cpu_simd_level", [], None, returns=lambda r: r in ("avx512_bf16", "avx512", "avx2", "scalar"))
        path = os.path.join(tmp, "entry.bin")
        fz.expect("cache_store", [path, b"\0" * 100], None)
        fz.expect("cache_load", [path], None, returns=lambda r: r == b"\0" * 100)
        fz.expect("cache_load", [os.path.join(tmp, "missing")], None, status={7})
        fz.expect("cache_store", [os.path.join(tmp, "no", "such", "dir"), b"x"], None, status={7})
        fuzz_plans(fz, C)
    return fz.calls


def fuzz_plans(fz, C):
    """plan_call never raises once set up (it answers MISS / SKIP for anything it cannot
    replay) and raises RuntimeError before; plan_setup and plan_make raise TypeError /
    ValueError / OverflowError (naming the function) on what they cannot take. No torch
    here: every "tensor" is some other object, so no plan ever launches."""
    def tolerant(name, args):
        fz.calls += 1
        try:
            return getattr(C, name)(*args)
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
            assert not isinstance(e, SystemError), f"_C.{name}: SystemError: {e}"
            assert isinstance(e, ZeroDivisionError) or name in str(e), f"_C.{name}: {e}"
            return e
    miss, skip, out_tag = object(), object(), object()
    fz.expect("plan_call", [{}, None], RuntimeError)            # before plan_setup
    fz.expect("plan_call_out", [{}, None, None], RuntimeError)
    fz.expect("apart", [(), ()], RuntimeError)
    setup = [(), None, (), (), len, len, None, miss, skip, out_tag, len, len]
    for k in range(15):
        if k != 12:
            fz.expect("plan_setup", (setup + [0] * k)[:k], TypeError)
    for i in range(12):
        for v in HOSTILE:
            args = list(setup)
            args[i] = v
            want = (TypeError if (i in (0, 2, 3) and not isinstance(v, tuple))
                    or (i in (4, 5, 10, 11) and not callable(v)) else None)
            fz.expect("plan_setup", args, want)
    # a harmless setup: the "state functions" return false / None, grad off; "empty_like"
    # is len, which fails on the arguments plan_call gives it (a SKIP, never an exception)
    fz.expect("plan_setup", [(int,), None, (bool,), (lambda: None,), bool, len, None, miss, skip, out_tag, len, bool],
              None)
    # apart never raises once set up: False only for nothing written, True (look again in
    # Python) for anything it cannot read as a tensor of the types given
    assert fz.expect("apart", [(), ()], None) is False
    for v in HOSTILE:
        for args in ([v, ()], [(), v], [(v,), ()], [(), (v,)], [(v, v), (None, v)], [v], [v, v, v]):
            assert fz.expect("apart", args, None) in (True, False)
    handle, fmt = C.cpu_kernel("layer_norm")
    items = tuple((1, 0) if c == "p" else (0, 1) for c in fmt)
    base = [handle, items, 3, 1, 0]
    plan = fz.expect("plan_make", base, None)
    for k in range(8):
        if k != 5:
            fz.expect("plan_make", (base + [0] * k)[:k], TypeError)
    for i in range(5):
        for v in HOSTILE:
            args = list(base)
            args[i] = v
            tolerant("plan_make", args)
    for bad in [((9,),), ((1,),), ((1, 0, 0),), ((2, 0, 0),), ((2, 0),), ((0,),), ((0, "x"),), ((3, 1),), ("x",),
                ((1, 99),), ((1, -1),)]:
        tolerant("plan_make", [handle, bad + items[1:], 3, 1, 0])
    # plan_call over hostile inputs and memos: always a value, never an exception (plan1,
    # of one input, reaches the outputs' allocation for an input of None: templates)
    plan1 = fz.expect("plan_make", [handle, items, 1, 1, 0], None)
    # (the key of one absent input: (miss, None, None, alignment 0))
    k1 = (miss, None, None, 0)
    memos = [{}, {k1: None}, {k1: (plan, (0,), (None,))},
             {k1: (plan, (5,), ())}, {k1: ("x", 1, 2)},
             {k1: (plan1, (("x", 3),), (None,))}, {k1: (plan1, ((None, -1),), (None,))},
             {k1: (plan1, ((None, 2**64),), (None,))}, {k1: (plan1, ((None, "x"),), (None,))},
             {k1: (plan1, ((None,),), (None,))}, {k1: (plan1, (0,), (None,))}, {k1: (plan1, None, (None,))}]
    for memo in memos:
        for v in HOSTILE + [None]:
            for args in ([memo, v], [memo, None, v], [memo, v, v, v], [memo] + [None] * 9):
                fz.calls += 1
                r = C.plan_call(*args)
                assert r is not None, f"_C.plan_call{tuple(map(_short, args))[:3]}: returned None"
                fz.calls += 1
                r = C.plan_call_out(args[0], v, *args[1:])
                assert r is not None, f"_C.plan_call_out{tuple(map(_short, args))[:3]}: returned None"
    fz.calls += 1
    assert C.plan_call(memos[0]) is skip and C.plan_call(None, None) is skip
    assert C.plan_call_out(memos[0], None) is skip and C.plan_call_out(memos[0], None, None) is skip


# ---- group: cpu_launch --------------------------------------------------------------------------

# The contracts of the kernels the fuzz knows (csrc/ops/norm): which calls must be rejected.
# (residual, bias, weight_required) per op of the norm_rows family ("ppppppqqfi").
NORM_ROWS_OPS = {"layer_norm": (0, 1, 0), "fused_add_rms_norm": (1, 0, 0),
                 "fused_add_layer_norm": (1, 1, 0), "gemma_rms_norm": (0, 0, 1),
                 "fused_add_rms_norm_cast": (1, 0, 0), "rms_norm_rows_cast": (0, 0, 0)}
ES = {0: 4, 1: 2, 2: 2}
BUF = 4096


def _extent_ok(p, nbytes, es):
    return p % es == 0 and (nbytes == 0 or p + nbytes - 1 <= 2**64 - 1)


def norm_rows_verdict(op, args, bufs):
    """(valid by the contract, fits the buffers) for a norm_rows kernel's arguments."""
    residual_op, bias_op, weight_required = op
    x, r, w, b, y, ro, rows, n, _eps, dt = args
    if not residual_op and (r or ro):
        return False, False
    if not bias_op and b:
        return False, False
    if dt not in ES or rows < 0 or n < 1 or bool(r) != bool(ro):
        return False, False
    if rows == 0:
        return True, True
    es = ES[dt]
    if not x or not y or (residual_op and not r) or (weight_required and not w):
        return False, False
    if n > I64_MAX // 4 or rows > I64_MAX // es // n:
        return False, False
    extents = [(x, rows * n * es), (r, rows * n * es), (w, n * es), (b, n * es), (y, rows * n * es),
               (ro, rows * n * es)]
    if not all(_extent_ok(p, nb, es) for p, nb in extents if p):
        return False, False
    return True, all(_in_buffers(p, nb, bufs) for p, nb in extents if p)


def rms_norm_verdict(reference, args, bufs):
    x, w, y, rows, n, xs, ys, _eps, dt, variant = args
    if dt not in ES or rows < 0 or n < 1:
        return False, False
    if not reference and variant not in (0, 1, 2):
        return False, False
    if rows == 0:
        return True, True
    es = ES[dt]
    if not x or not y or xs < n or ys < n:
        return False, False
    if max(xs, ys) > I64_MAX // es // rows:
        return False, False
    extents = [(x, ((rows - 1) * xs + n) * es), (w, n * es), (y, ((rows - 1) * ys + n) * es)]
    if not all(_extent_ok(p, nb, es) for p, nb in extents if p):
        return False, False
    return True, all(_in_buffers(p, nb, bufs) for p, nb in extents if p)


# The positional tables (csrc/ops/positional): out, then sizes and doubles.
TABLE_KERNELS = ("rope_cos_sin_cache", "sinusoidal", "alibi")


def table_verdict(base, args, bufs):
    """(valid by the contract, fits the buffers) for a positional table kernel's arguments
    (rope_cos_sin_cache: default and linear types only, whose largest inverse frequency
    is 1 or 1 / factor)."""
    out = args[0]
    if base == "alibi":
        H, S = args[1], args[2]
        if H < 0 or S < 0:
            return False, False
        if H == 0 or S == 0:
            return True, True
        if S > I64_MAX // 4 // S or H > I64_MAX // 4 // S // S or not out or out % 4:
            return False, False
        return True, _in_buffers(out, H * S * S * 4, bufs)
    rows, width, b = args[1], args[2], args[3]
    rope = base == "rope_cos_sin_cache"
    if rows < 0 or width < 0 or (rope and (width < 2 or width % 2)):
        return False, False
    if width > 0 and rows > I64_MAX // 4 // width:
        return False, False
    if not (math.isfinite(b) and b >= 1.0):
        return False, False
    most = 1.0
    if rope:
        rtype, factor = args[4], args[5]
        if rtype not in (0, 1):
            return False, False
        if rtype == 1:
            if not (math.isfinite(factor) and factor > 0):
                return False, False
            most = 1.0 / factor
    if rows == 0 or width == 0:
        return True, True
    if not out or out % 4 or not float(rows - 1) * most < 2.0 ** 50:
        return False, False
    return True, _in_buffers(out, rows * width * 4, bufs)


def _contract_call(C, fz, stats, h, name, base, args, valid, fits, label=None, untouched=()):
    """One call of the contract fuzz: a valid call within the buffers must run, an invalid
    one must be rejected with INVALID_ARGUMENT naming the kernel (`name`, or `base` for a
    reference that reports its op's name) and leave the `untouched` (address, bytes) spans
    as they were; a valid call past the buffers is skipped (memory C cannot see: the
    Python layer's check). `label`: how a failure names the call (default: name and args)."""
    if valid and not fits:
        stats["skipped"] += 1
        return
    label = label or f"{name}{tuple(args)}"
    before = [ctypes.string_at(p, n) for p, n in untouched]
    try:
        C.cpu_launch(h, *args)
    except StatusError as e:
        assert not valid, f"{label}: a valid call was rejected: {e}"
        assert e.code == 1 and str(e).startswith((name + ":", base + ":")), f"{label}: {type(e).__name__}: {e}"
        assert [ctypes.string_at(p, n) for p, n in untouched] == before, f"{label}: rejected, but wrote"
        stats["rejected"] += 1
    else:
        assert valid, f"{label}: an invalid call ran"
        stats["ran"] += 1
    fz.calls += 1


# The sampling kernels (csrc/ops/sampling): their arguments' meaning, for the verdict.
SAMPLING_OPS = ("softmax", "argmax", "top_k", "top_k_top_p_mask", "sample_from_probs")


def sampling_verdict(base, args, bufs):
    """(valid by the contract, fits the buffers) for a sampling kernel's arguments: a float
    dtype, B >= 0, 1 <= V < 2^31, B V 8 bytes within int64, the op's own scalars; with rows,
    each required pointer given, each given one aligned to its element size."""
    if base == "softmax":
        x, t, y, B, V, dt, odt = args
        bufs_of = lambda e: [(x, B * V * e, e, 0), (t, B * 4, 4, 1), (y, B * V * ES.get(odt, 1), ES.get(odt, 1), 0)]  # noqa: E731
        extra = odt in ES
    elif base == "argmax":
        x, tok, B, V, dt = args
        bufs_of = lambda e: [(x, B * V * e, e, 0), (tok, B * 8, 8, 0)]  # noqa: E731
        extra = True
    elif base == "top_k":
        x, vals, idx, B, V, k, dt = args
        bufs_of = lambda e: [(x, B * V * e, e, 0), (vals, B * k * e, e, 1), (idx, B * k * 8, 8, 0)]  # noqa: E731
        extra = 0 <= k <= V
    elif base == "top_k_top_p_mask":
        x, kk, pp, y, B, V, dt, kdt = args
        ke = 4 if kdt == 3 else 8
        bufs_of = lambda e: [(x, B * V * e, e, 0), (kk, B * ke, ke, 1), (pp, B * 4, 4, 1), (y, B * V * e, e, 0)]  # noqa: E731
        extra = kdt in (3, 4)
    else:
        pr, q, tok, B, V, dt = args
        bufs_of = lambda e: [(pr, B * V * e, e, 0), (q, B * V * 4, 4, 0), (tok, B * 8, 8, 0)]  # noqa: E731
        extra = True
    if dt not in ES or B < 0 or not 1 <= V <= 2**31 - 1 or B > I64_MAX // 8 // V or not extra:
        return False, False
    if B == 0 or (base == "top_k" and k == 0):
        return True, True
    extents = bufs_of(ES[dt])
    for p, nb, align, optional in extents:
        if p == 0 and not optional:
            return False, False
        if p and not _extent_ok(p, nb, align):
            return False, False
    return True, all(_in_buffers(p, nb, bufs) for p, nb, _, _ in extents if p)


def _in_buffers(p, nbytes, bufs):
    return any(base <= p and p + nbytes <= base + BUF for base in bufs)


def _hostile_size(rng, small):
    return rng.choice([rng.randint(0, small), rng.randint(0, small), rng.randint(1, small), -1, 0, 1,
                       -rng.randint(1, 2**40), I64_MIN, I64_MAX, I64_MAX // 2, I64_MAX // 4 + 1,
                       2**31, 2**32 + 1, 2**40, 2**62, rng.randint(0, I64_MAX)])


def _kernels_of(C, names, bases):
    """(name, base, handle) of each table entry among `names` whose op (the name less
    "_reference") is one of `bases`."""
    for name in names:
        base = name[:-len("_reference")] if name.endswith("_reference") else name
        if base in bases:
            yield name, base, C.cpu_kernel(name)[0]


def group_cpu_launch(C):
    C.set_error_classes(tuple(STATUS[:C.STATUS_COUNT]))
    fz = Fuzz(C)
    rng = random.Random(SEED)
    names = C.cpu_kernels()
    for known in list(NORM_ROWS_OPS) + ["rms_norm"]:
        assert known in names and known + "_reference" in names, f"kernel {known} is gone: {names}"
    bufs = [_malloc_buffer(BUF) for _ in range(6)]
    hostile_ptrs = [0, 8, 2**64 - 16, 2**64 - 1, 2**63, 2**47 - 4096]

    # the handle, and the argument count by the format
    n_kernels = len(names)
    fz.expect("cpu_launch", [], TypeError)
    for h in (n_kernels, 2**31 - 1, -1, INT_MIN):
        fz.expect("cpu_launch", [h], ValueError)
    for h in (2**31, 2**64, -2**40):
        fz.expect("cpu_launch", [h], OverflowError)
    for h in (None, 1.0, "0", True):
        fz.expect("cpu_launch", [h], TypeError)

    for name in names:
        h, fmt = C.cpu_kernel(name)
        assert set(fmt) <= set(C.ARG_FORMAT_CHARS) and len(fmt) <= C.MAX_KERNEL_ARGS, (name, fmt)
        zero = [{"p": 0, "q": 0, "i": 0, "f": 1e-5, "d": 1e-5}[c] for c in fmt]
        for k in range(0, len(fmt) + 3):
            if k != len(fmt):
                e = fz.expect("cpu_launch", [h] + (zero + [0, 0])[:k], TypeError)
                assert f"takes {len(fmt)} arguments" in str(e), e
        # one hostile value at a time, the other arguments 0 (no pointer: rows > 0 must
        # then be rejected, rows == 0 touches nothing)
        for i, c in enumerate(fmt):
            for v in HOSTILE:
                args = list(zero)
                args[i] = v
                want = want_for(c, v)
                if want is None and c == "p" and _int_value(v) not in (0,):
                    continue  # a non-zero pointer with other sizes 0: see the contract fuzz
                e = fz.expect("cpu_launch", [h] + args, want, status={1})
                if want is not None and not isinstance(e, ZeroDivisionError):
                    assert f"kernel argument {i} (format '{c}')" in str(e), e
        # generic: random hostile sizes, no pointers; a kernel may accept only what it can do
        # without memory (rows == 0), and must reject the rest with INVALID_ARGUMENT
        for _ in range(300):
            args = [0 if c == "p" else _hostile_size(rng, 8) if c == "q"
                    else rng.choice([0, 1, 2, 3, -1, INT_MAX, INT_MIN, rng.randint(INT_MIN, INT_MAX)]) if c == "i"
                    else rng.choice([1e-5, 0.0, -1.0, float("nan"), float("inf"), 3e38])
                    if c == "f" else rng.choice([1e-5, 0.0, 1.0, -1.0, 1e4, float("nan"), float("-inf"), 1e308, 5e-324])
                    for c in fmt]
            fz.expect("cpu_launch", [h] + args, None, status={1})

    # the contracts: random arguments, valid or not; an invalid call must be rejected with
    # INVALID_ARGUMENT naming the kernel, a valid one within the buffers must run
    def pick(good, bad):  # mostly in contract, so that valid calls run too
        return rng.choice(good) if rng.random() < 0.85 else rng.choice(bad)

    def ptr(slot, optional=False):  # buffer `slot` (or at 64 bytes in, or 0 where optional), else a bad one
        good = [bufs[slot], bufs[slot] + 64] + ([0] if optional else [])
        return pick(good, [0, bufs[slot] + 1, bufs[slot] + 2, bufs[slot] + 4] + hostile_ptrs)

    stats = {"rejected": 0, "ran": 0, "skipped": 0}
    for name, base, h in _kernels_of(C, names, set(NORM_ROWS_OPS) | {"rms_norm"}):
        for _ in range(1500):
            dt = pick([0, 1, 2], [-1, 3, 6, 99, INT_MAX, INT_MIN])
            eps = rng.choice([1e-5, 1e-6, 0.0, -1.0, float("nan"), float("inf")])
            rows = pick(range(0, 5), [_hostile_size(rng, 4)])
            n = pick(range(1, 17), [_hostile_size(rng, 16)])
            if base == "rms_norm":
                def stride():
                    s = pick([n, n + rng.randint(0, 4)],
                             [n - 1, -1, 0, I64_MAX, rng.randint(0, I64_MAX), n + 2**40])
                    return min(max(s, I64_MIN), I64_MAX)
                args = [ptr(0), rng.choice([0, ptr(1)]), ptr(2), rows, n, stride(), stride(), eps, dt,
                        pick([0, 1, 2], [-1, 3, INT_MAX, INT_MIN])]
                valid, fits = rms_norm_verdict(name != base, args, bufs)
            else:
                residual_op, bias_op, _ = op = NORM_ROWS_OPS[base]

                def opt(slot, used):  # a pointer the op takes, or 0 (mostly) where it takes none
                    return ptr(slot) if used else pick([0], [bufs[slot], 8])
                args = [ptr(0), opt(1, residual_op), rng.choice([0, ptr(2)]),
                        rng.choice([0, ptr(3)]) if bias_op else opt(3, 0), ptr(4),
                        opt(5, residual_op), rows, n, eps, dt]
                valid, fits = norm_rows_verdict(op, args, bufs)
            _contract_call(C, fz, stats, h, name, base, args, valid, fits)
    assert stats["rejected"] > 2000 and stats["ran"] > 2000, stats
    print("contract fuzz:", stats)

    # the positional tables: sizes around the buffers' 4096 bytes, hostile doubles
    stats = {"rejected": 0, "ran": 0, "skipped": 0}
    for name, base, h in _kernels_of(C, names, TABLE_KERNELS):
        for _ in range(600):
            out = pick([bufs[0], bufs[1] + 16], [0, bufs[0] + 1, bufs[0] + 2] + hostile_ptrs)
            if base == "alibi":
                args = [out, pick(range(0, 9), [_hostile_size(rng, 8)]), pick(range(0, 33), [_hostile_size(rng, 32)])]
            else:
                args = [out, pick(range(0, 40), [_hostile_size(rng, 40)]),
                        pick([2, 4, 8, 10, 130] if base == "rope_cos_sin_cache" else range(0, 40),
                             [_hostile_size(rng, 40), 3, 7]),
                        pick([1.0, 10.0, 10000.0, 5e5], [0.5, 0.0, -1.0, float("nan"), float("inf"), 1e308])]
                if base == "rope_cos_sin_cache":
                    args += [pick([0, 1], [2 ** 31 - 1, -1, INT_MIN]),
                             pick([1.0, 4.0, 0.5], [0.0, -2.0, float("nan"), 1e-300, float("inf")]), 1.0, 4.0, 8192.0]
            valid, fits = table_verdict(base, args, bufs)
            _contract_call(C, fz, stats, h, name, base, args, valid, fits)
    assert stats["rejected"] > 300 and stats["ran"] > 300, stats
    print("table contract fuzz:", stats)

    # the sampling kernels' contracts, the same way
    sstats = {"rejected": 0, "ran": 0, "skipped": 0}
    for name, base, h in _kernels_of(C, names, SAMPLING_OPS):
        for _ in range(600):
            dt = pick([0, 1, 2], [-1, 3, 6, 99, INT_MAX, INT_MIN])
            B = pick(range(0, 5), [_hostile_size(rng, 4)])
            V = pick(range(1, 17), [0, _hostile_size(rng, 16)])
            if base == "softmax":
                args = [ptr(0), ptr(1, True), ptr(2), B, V, dt, pick([0, 1, 2], [-1, 4, INT_MAX])]
            elif base == "argmax":
                args = [ptr(0), ptr(1), B, V, dt]
            elif base == "top_k":
                args = [ptr(0), ptr(1, True), ptr(2), B, V, pick(range(0, 17), [-1, _hostile_size(rng, 16)]), dt]
            elif base == "top_k_top_p_mask":
                x = ptr(0)
                args = [x, ptr(1, True), ptr(2, True), rng.choice([x, ptr(3)]), B, V, dt, pick([3, 4], [0, 2, -1])]
            else:
                args = [ptr(0), ptr(1), ptr(2), B, V, dt]
            args = [min(max(a, I64_MIN), I64_MAX) if isinstance(a, int) else a for a in args]
            _contract_call(C, fz, sstats, h, name, base, args, *sampling_verdict(base, args, bufs))
    assert sstats["rejected"] > 1000 and sstats["ran"] > 1000, sstats
    print("sampling contract fuzz:", sstats)

    kv_cache_write_contract(C, fz, rng, bufs, hostile_ptrs)
    return fz.calls


def kv_cache_write_verdict(args, slots, bufs):
    """(valid by the contract, fits the buffers) for kv_cache_write's arguments; `slots`:
    the values the slot buffer holds (the first T of them are read)."""
    k, v, kc, vc, sp, T, H, D, n, kst, ksh, vst, vsh, dt, sdt = args
    if dt not in ES or sdt not in (3, 4) or T < 0 or H < 1 or D < 1 or n < 0:
        return False, False
    es, ss = ES[dt], 4 if sdt == 3 else 8
    if H > I64_MAX // es // D or n > I64_MAX // es // D // H:
        return False, False
    if T == 0:
        return True, True
    # caches of no slot may be NULL: every slot is then skipped or refused
    if not (k and v and sp and (n == 0 or (kc and vc))) or min(kst, ksh, vst, vsh) < 0:
        return False, False
    extents = []
    for st, sh in ((kst, ksh), (vst, vsh)):
        last = (T - 1) * st + (H - 1) * sh + D
        if last > I64_MAX // es:
            return False, False
        extents.append(last * es)
    # the pointers themselves are what C cannot check (their extent, their alignment): a
    # call with one outside the buffers or misaligned is skipped (the slots are read next)
    spans = [(k, extents[0], es), (v, extents[1], es), (sp, T * ss, ss)]
    if n:
        spans += [(kc, n * H * D * es, es), (vc, n * H * D * es, es)]
    if not all(p % a == 0 and _in_buffers(p, nb, bufs) for p, nb, a in spans):
        return True, False
    return not any(s >= n for s in slots[:T]), True


def kv_cache_write_contract(C, fz, rng, bufs, hostile_ptrs):
    """kv_cache_write (and its reference) with random arguments, valid or not, and random
    slot values (in range, negative, past num_slots): an invalid call is rejected with
    INVALID_ARGUMENT naming the kernel before it writes anything; a valid one within the
    buffers runs (under the sanitizers: touching only its rows)."""
    stats = {"rejected": 0, "ran": 0, "skipped": 0}
    for name in ("kv_cache_write", "kv_cache_write_reference"):
        h, fmt = C.cpu_kernel(name)
        assert fmt == "pppppqqqqqqqqii", fmt
        for _ in range(2500):
            def pick(good, bad):
                return rng.choice(good) if rng.random() < 0.85 else rng.choice(bad)

            def ptr(slot):
                return pick([bufs[slot]], [0, bufs[slot] + 1, bufs[slot] + 2] + hostile_ptrs)
            T, H, D = pick(range(0, 5), [_hostile_size(rng, 4)]), pick(range(1, 4), [_hostile_size(rng, 3)]), \
                pick(range(1, 9), [_hostile_size(rng, 8)])
            n = pick(range(0, 9), [_hostile_size(rng, 8)])
            hd = max(1, min(H, 2**20)) * max(1, min(D, 2**20))
            st = [pick([hd, hd + rng.randint(0, 3)], [-1, I64_MAX, rng.randint(0, I64_MAX)]) for _ in range(2)]
            sh = [pick([max(1, min(D, 2**20)), rng.randint(0, 9)], [-1, I64_MAX]) for _ in range(2)]
            sdt = pick([3, 4], [0, 1, 2, -1, INT_MAX])
            slots = [pick([rng.randint(-2, max(0, min(n, 64) - 1))], [n, n + 1, 2**31 - 1, 2**40]) for _ in range(8)]
            if sdt in (3, 4):   # the slot values in their buffer (5)
                for i, s_ in enumerate(slots):
                    width = 4 if sdt == 3 else 8
                    s_ = max(min(s_, 2**(8 * width - 1) - 1), -2**(8 * width - 1))
                    slots[i] = s_
                    ctypes.memmove(bufs[5] + i * width, s_.to_bytes(width, "little", signed=True), width)
            args = [ptr(0), ptr(1), ptr(2), ptr(3), ptr(5), T, H, D, n, st[0], sh[0], st[1], sh[1],
                    pick([0, 1, 2], [3, -1, 99]), sdt]
            valid, fits = kv_cache_write_verdict(args, slots, bufs)
            _contract_call(C, fz, stats, h, name, name, args, valid, fits,
                           label=f"{name}{tuple(args)} slots {slots[:max(0, min(T, 8))]}",
                           untouched=[(bufs[2], BUF), (bufs[3], BUF)])
    assert stats["rejected"] > 1000 and stats["ran"] > 600, stats
    print("kv_cache_write contract fuzz:", stats)


# ---- group: cuda -------------------------------------------------------------------------------

def _driver_present():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def group_cuda(C):
    C.set_error_classes(tuple(STATUS[:C.STATUS_COUNT]))
    fz = Fuzz(C)
    no_driver = not _driver_present()
    lib = {4} if no_driver else None  # TILEOPS_ERR_LIBRARY
    for _ in range(2):  # the outcome of the first load is remembered, and still clean
        fz.expect("cuda_load", [None], None, status=lib)
        fz.expect("cuda_load", ["/nonexistent/nvrtc"], None, status=lib)
    if no_driver:
        for name, args in [("cuda_device_count", []), ("cuda_device_arch", [0]),
                           ("cuda_device_attributes", [0]), ("cuda_reset_persisting_l2", [0]), ("nvrtc_version", []),
                           ("cuda_stream_is_capturing", [0]),
                           ("cuda_build", [0, "x", "k", (), "p", 0])]:
            e = fz.expect(name, args, None, status=lib)
            assert isinstance(e, StatusError) and "libcuda" in str(e), (name, e)
    e = fz.expect("cuda_kernel_set_launch_flags", [12345, C.LAUNCH_PDL], None)
    assert isinstance(e, StatusError) and "bad kernel handle 12345" in str(e), e
    fz.expect("cuda_set_launch_mask", [0xFFFFFFFF], None, returns=lambda r: r == C.LAUNCH_PDL)  # the fuzz's last: 1
    fz.expect("cuda_set_launch_mask", [C.LAUNCH_PDL], None, returns=lambda r: r == C.LAUNCH_PDL)  # unknown bits dropped
    fz.expect("cuda_stats", [], None, returns=lambda r: set(r) >= {"launches", "nvrtc_compiles"}
              and all(isinstance(v, int) for v in r.values()))
    fz.expect("cuda_cache_state", [], None, returns=lambda r: isinstance(r, tuple) and len(r) == 3
              and isinstance(r[0], bool) and all(isinstance(v, str) for v in r[1:]))
    fz.expect("take_notes", [], None, returns=lambda r: isinstance(r, tuple) and all(isinstance(v, str) for v in r))
    fz.expect("cuda_set_version", ["fuzz"], None)
    fz.expect("cuda_set_cache_dir", [""], None)
    fz.expect("cuda_set_cache_dir", [None], None)

    # cuda_build: every argument's checks come before the driver is needed
    good = [0, "x", "k", ("-DA=1",), "p", 0]
    for opts, want in [(["a", 1], TypeError), (("a\0b",), ValueError), (["x"] * 257, ValueError),
                       (["x"] * 256, None), ({"a"}, TypeError), ("abc", TypeError), (iter(["a"]), TypeError)]:
        args = list(good)
        args[3] = opts
        fz.expect("cuda_build", args, want, status=lib)
    for i, v, want in [(1, "x\0y", ValueError), (2, "", None), (4, "pz", None), (4, "p" * 100, None)]:
        args = list(good)
        args[i] = v
        fz.expect("cuda_build", args, want, status={1} | lib if no_driver else {1, 4, 5, 6})

    # cuda_launch: counts, the handle, the 7 launch dimensions, the stream, in that order
    for k in range(9):
        fz.expect("cuda_launch", [0] * k, TypeError)
    dims = [1, 1, 1, 1, 1, 1, 0, 0]
    fz.expect("cuda_launch", [12345] + dims, ValueError)
    fz.expect("cuda_launch", [12345] + dims + [1, 2.0, "x"], ValueError)  # the handle decides first
    for h in HOSTILE:
        fz.expect("cuda_launch", [h] + dims, want_for("handle", h) or ValueError)
    for i in range(8):
        for v in HOSTILE:
            args = list(dims)
            args[i] = v
            want = want_for("u32" if i < 7 else "ptr", v) or ValueError  # then: no such handle
            e = fz.expect("cuda_launch", [7] + args, want)
            if want in (TypeError, OverflowError):
                what = ["grid x", "grid y", "grid z", "block x", "block y", "block z", "shared_bytes",
                        "the stream"][i]
                assert what in str(e), e
    return fz.calls


# ---- group: threads ----------------------------------------------------------------------------

def group_threads(C):
    """What runs with the GIL released reads nothing the caller owns: cuda_build's options
    list is emptied and refilled with fresh strings by another thread while builds run (under
    AddressSanitizer a kept pointer into a freed string is a report), and CPU kernels run
    while other threads change the thread count or its source."""
    C.set_error_classes(tuple(STATUS[:C.STATUS_COUNT]))
    calls = [0]
    opts = ["-DA=%d" % i for i in range(64)]
    stop = threading.Event()
    errors = []

    def mutate():
        i = 0
        while not stop.is_set():
            opts.clear()
            opts.extend("-DOPT_%d_%s=1" % (i, "x" * (i % 50)) for _ in range(32))
            i += 1

    def build():
        try:
            for _ in range(300):
                try:
                    C.cuda_build(0, "extern \"C\" __global__ void k() {}" + " " * (calls[0] % 7), "k", opts,
                                 "", 0)
                except (StatusError, TypeError):
                    pass
                calls[0] += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def set_threads():
        for i in range(200):
            C.cpu_set_num_threads(1 + i % 4)

    def follow():
        # thread count sources replaced (and freed) while launches call them
        for i in range(200):
            C.cpu_follow_threads((lambda k=i: 1 + k % 3) if i % 2 == 0 else None)
        C.cpu_follow_threads(None)

    def launch():
        try:
            addr = _malloc_buffer(64 * 64 * 4)
            h = C.cpu_kernel("rms_norm")[0]
            for i in range(200):
                C.cpu_launch(h, addr, 0, addr, 64, 64, 64, 64, 1e-6, 0, i % 3)
                calls[0] += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    m = threading.Thread(target=mutate)
    m.start()
    workers = [threading.Thread(target=f) for f in (build, build, set_threads, follow, launch, launch)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    m.join()
    assert not errors, errors
    return calls[0]


def main(group):
    C = load_extension()
    run = {"surface": group_surface, "cpu_launch": group_cpu_launch, "cuda": group_cuda,
           "threads": group_threads}[group]
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # hostile str paths ("x") land here, not in the checkout
        n = run(C)
        os.chdir("/")
    for p in _BUFFERS:
        _libc.free(p)
    print(f"ok {group}: {n} calls")


if __name__ == "__main__":
    main(sys.argv[1])
