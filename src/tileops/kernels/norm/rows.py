"""What the norm family's row kernels share: one build per op and device.

Every op of the family after RMSNorm (LayerNorm, the fused residual adds, Gemma's RMSNorm)
is one C table entry `<op>` (csrc/ops/norm/<op>.c, over the family driver norm_rows.c)
and one CUDA C source `norm/<op>.cu` (over norm_rows.cuh). Both take the family's six
pointers (x, residual, weight, bias, y, residual_out; 0 for one the op does not have), so
an op's file only names its op: `family_kernel("layer_norm", doc)` gives its interface
and kernel class.

Identities: on the CPU the build is a C function, so (op, dtype, n, eps, cast); on CUDA an
NVRTC build per device, so the device, the weight/bias presence the source is specialised
on and the vector width the pointers' alignment allows join it. `cast` is the op's
cast_before_weight param (Hugging Face's rounding; False for the ops without it): the C
table entry "<op>_cast", the CUDA define TILEOPS_CAST_BEFORE_WEIGHT."""
from __future__ import annotations

from ... import _C
from ..._dtypes import CODE
from ..base import Kernel, KernelCall, KernelInterface, identity_type

SLOTS = ("x", "residual", "weight", "bias", "y", "residual_out")

CpuBuild = identity_type("CpuNormRowsBuild", "op tensors dtype n eps cast")
CudaBuild = identity_type("CudaNormRowsBuild", "device op tensors dtype n has_weight has_bias vec eps cast")


def row_length(call: KernelCall) -> int:
    n = 1
    for d in call.params["normalized_shape"]:
        n *= int(d)
    return n


def _slot_mapper(tensors: tuple):
    """A function taking the interface's tensors and returning the six slots' data
    pointers (0 for a slot the op lacks or an absent optional tensor), generated once per
    interface: no dict or loop per call."""
    exprs = []
    for s in SLOTS:
        if s in tensors:
            v = f"t{tensors.index(s)}"
            exprs.append(f"(0 if {v} is None else {v}.data_ptr())")
        else:
            exprs.append("0")
    args = ", ".join(f"t{i}" for i in range(len(tensors)))
    ns = {}
    exec(f"def pointers({args}):\n    return ({', '.join(exprs)},)\n", ns)
    return ns["pointers"]


# ---- what a launchable checks before it hands pointers to C ---------------------------
# A launchable is public (Op.kernel_for returns it), so it checks, on every call, what the
# C and CUDA kernels rely on and cannot check themselves, in O(1) attribute reads: each
# tensor is present where the build reads it (absent where it does not), of the build's
# dtype, on its device, contiguous, not a lazy negative view, and of the extent the kernel
# walks (x, residual, y, residual_out: rows * n elements, rows = y.numel() // n; weight,
# bias: n); an output overlaps no row-sized tensor except the input it replaces in place
# (exactly). It returns the data pointers, so the launch reads each tensor once. Each
# build's launchable carries `.unchecked`, the launch without these checks, which only the
# op's body reaches (Op._kernel_for), after the generated checks guaranteed the same.
ROW_SIZED = ("x", "residual", "y", "residual_out")
ALIAS = {"y": "x", "residual_out": "residual"}     # an output that may be its input exactly
OUTPUTS = ("y", "residual_out")


def pointer_guard(label: str, names: tuple, dtype_code: int, n: int, device_index: int, presence: dict):
    """prep(*tensors) -> (each tensor's data pointer (0 for None), in `names` order, rows),
    raising InputValueError / InputTypeError (naming `label`, the argument, expected and
    given) unless the tensors are what this build's kernel reads and writes. `presence`:
    name -> True (required), False (must be None) or None (either); `device_index` -1 for
    the CPU. Generated once per build: no loop or dict per call."""
    from ..._dtypes import DTYPE
    ns = {"_dt": DTYPE[dtype_code], "_di": device_index, "_n": n, "_slow": None}
    args = [f"t{i}" for i in range(len(names))]
    y = f"t{names.index('y')}"
    conds, ptrs = [], []
    for i, name in enumerate(names):
        v = f"t{i}"
        size = "_m" if name in ROW_SIZED else "_n"
        ok = (f"{v}.dtype is _dt and {v}.get_device() == _di and {v}.is_contiguous() and not {v}.is_neg() "
              f"and {v}.numel() == {size}")
        want = presence.get(name, True)
        if want is None:
            conds.append(f"({v} is None or ({ok}))")
            ptrs.append(f"(0 if {v} is None else {v}.data_ptr())")
        elif want:
            conds.append(f"({ok})")
            ptrs.append(f"{v}.data_ptr()")
        else:
            conds.append(f"{v} is None")
            ptrs.append("0")
    lines = [f"def prep({', '.join(args)}):",
             "    try:",
             f"        _m = {y}.numel()",
             f"        _ok = _m % _n == 0 and {' and '.join(conds)}",
             "    except AttributeError:",
             "        _ok = False",
             "    if not _ok:",
             f"        _slow(({', '.join(args)},))",
             f"    _p = ({', '.join(ptrs)},)"]
    # overlaps: an output against every other row-sized tensor (bytes = _m * itemsize)
    rowed = [(i, nm) for i, nm in enumerate(names) if nm in ROW_SIZED and presence.get(nm, True) is not False]
    pairs = []
    for i, nm in rowed:
        if nm not in OUTPUTS:
            continue
        for j, other in rowed:
            if j == i or (other in OUTPUTS and j < i):
                continue
            exact_ok = ALIAS.get(nm) == other
            a, b = f"_p[{i}]", f"_p[{j}]"
            c = f"{a} < {b} + _b and {b} < {a} + _b"
            if exact_ok:
                c = f"{a} != {b} and {c}"
            if presence.get(other, True) is None:
                c = f"{b} and {c}"
            pairs.append(c)
    if pairs:
        lines.append(f"    _b = _m * {ns['_dt'].itemsize}")
        lines.append(f"    if _m and ({' or '.join('(' + c + ')' for c in pairs)}):")
        lines.append(f"        _slow(({', '.join(args)},), overlap=True)")
    lines.append("    return _p + (_m // _n,)")
    src = "\n".join(lines) + "\n"
    exec(src, ns)

    def slow(tensors, overlap=False):
        raise _launch_error(label, names, tensors, ns["_dt"], device_index, n, presence, overlap)
    ns["_slow"] = slow
    return ns["prep"]


def _launch_error(label, names, tensors, dtype, device_index, n, presence, overlap):
    import torch

    from ...errors import InputTypeError, InputValueError
    where = "cpu" if device_index < 0 else f"cuda:{device_index}"
    head = f"{label} (launch of the {dtype} build for rows of {n} on {where})"
    if overlap:
        return InputValueError(f"{head}: an output overlaps another tensor in memory (only an output equal to the "
                               f"input it replaces in place may share its memory); shapes "
                               f"{[None if t is None else tuple(t.shape) for t in tensors]}")
    y = tensors[names.index("y")]
    m = y.numel() if isinstance(y, torch.Tensor) else None
    for name, t in zip(names, tensors):
        want = presence.get(name, True)
        if t is None:
            if want:
                return InputValueError(f"{head}: argument '{name}': expected a tensor (this build reads it), got None")
            continue
        if want is False:
            return InputValueError(f"{head}: argument '{name}': expected None (this build does not read it), got a "
                                   f"tensor")
        if not isinstance(t, torch.Tensor):
            return InputTypeError(f"{head}: argument '{name}': expected a Tensor, got {type(t).__name__}")
        if t.dtype is not dtype:
            return InputTypeError(f"{head}: argument '{name}': expected dtype {dtype}, got {t.dtype}")
        if t.get_device() != device_index:
            return InputValueError(f"{head}: argument '{name}': expected a tensor on {where}, got {t.device}")
        if not t.is_contiguous():
            return InputValueError(f"{head}: argument '{name}': expected a contiguous tensor (no expanded or "
                                   f"permuted strides), got shape {tuple(t.shape)}, strides {t.stride()}")
        if t.is_neg():
            return InputValueError(f"{head}: argument '{name}': expected a materialised tensor, got a lazily "
                                   f"negated view (resolve_neg() it)")
        if m is not None and m % n:
            return InputValueError(f"{head}: argument 'y': expected a whole number of rows of {n} elements, got "
                                   f"{m} elements (shape {tuple(y.shape)})")
        size = m if name in ROW_SIZED else n
        if t.numel() != size:
            what = f"{size // n} rows of {n}" if name in ROW_SIZED else f"{n}"
            return InputValueError(f"{head}: argument '{name}': expected {what} elements (as "
                                   f"{'y' if name in ROW_SIZED else 'the row'}), got {t.numel()} (shape "
                                   f"{tuple(t.shape)})")
    return InputValueError(f"{head}: arguments {list(names)} are not what the kernel takes")


def _build_cpu(b):
    handle = _C.cpu_kernel(b.op + "_cast" if b.cast else b.op)[0]
    # the C family driver takes NULL for an absent weight or bias
    prep = pointer_guard(b.op, b.tensors, b.dtype, b.n, -1, {"weight": None, "bias": None})
    launch = _reordering_launch(b.tensors, prep, _C.cpu_launch, (handle,), (b.n, b.eps, b.dtype))
    run = _C.cpu_launch
    pointers = _slot_mapper(b.tensors)
    y_at = b.tensors.index("y")
    n, eps, dtype = b.n, b.eps, b.dtype

    def unchecked(*tensors):
        run(handle, *pointers(*tensors), tensors[y_at].numel() // n, n, eps, dtype)
    # the same launch as data, for a plan (ops/plans.py): each slot's pointer (a tensor of
    # the interface, or none), rows = y.numel() // n, then the constants
    unchecked.plan_recipe = (handle, tuple((1, b.tensors.index(s)) if s in b.tensors else (3,) for s in SLOTS)
                             + ((2, y_at, n), (0, n), (0, eps), (0, dtype)))
    launch.unchecked = unchecked
    return launch


def _reordering_launch(names, prep, fn, lead=(), trail=()):
    """launch(*tensors): fn(*lead, <prep's pointers in SLOTS order, 0 for a slot the op
    lacks>, rows, *trail); generated once, no loop per call."""
    order = [names.index(s) if s in names else None for s in SLOTS]
    args = ", ".join(f"t{i}" for i in range(len(names)))
    ns = {"prep": prep, "fn": fn}
    ns.update({f"_l{k}": v for k, v in enumerate(lead)})
    ns.update({f"_t{k}": v for k, v in enumerate(trail)})
    call = ([f"_l{k}" for k in range(len(lead))] + ["0" if i is None else f"_p[{i}]" for i in order]
            + ["_p[-1]"] + [f"_t{k}" for k in range(len(trail))])
    exec(f"def launch({args}):\n    _p = prep({args})\n    fn({', '.join(call)})\n", ns)
    return ns["launch"]


def _build_cuda(b):
    from . import cuda_rows
    run = cuda_rows.build(b.device, b.op, b.dtype, b.n, b.has_weight, b.has_bias, b.vec, b.eps, b.cast)
    # the build is specialised on the weight's and bias's presence
    prep = pointer_guard(b.op, b.tensors, b.dtype, b.n, b.device,
                         {"weight": b.has_weight, "bias": b.has_bias})
    launch = _reordering_launch(b.tensors, prep, run.raw)
    names = b.tensors
    order = [names.index(s) if s in names else None for s in SLOTS]
    args = ", ".join(f"t{i}" for i in range(len(names)))
    slots = ", ".join("None" if i is None else f"t{i}" for i in order)
    ns = {"run": run}
    exec(f"def unchecked({args}):\n    run({slots})\n", ns)
    launch.unchecked = ns["unchecked"]
    return launch


class NormRowsKernel(Kernel):
    """The one implementation of a family op (the CUDA side picks its register or
    long-row kernel inside the build, from the row length)."""
    op: str = ""

    @classmethod
    def _tensors(cls, call):
        return tuple(call.inputs) + tuple(call.outputs)

    @classmethod
    def entry_for(cls, call):
        n = row_length(call)
        dtype = call.dtype("x")
        eps = float(call.params["eps"])
        cast = bool(call.params.get("cast_before_weight", False))
        if call.device.type == "cpu":
            return CpuBuild(op=cls.op, tensors=cls._tensors(call), dtype=CODE[dtype], n=n, eps=eps, cast=cast)
        from . import cuda_rows
        return CudaBuild(device=call.device.index or 0, op=cls.op, tensors=cls._tensors(call), dtype=CODE[dtype], n=n,
                         has_weight=call.inputs.get("weight") is not None, has_bias=call.inputs.get("bias") is not None,
                         vec=cuda_rows.vec_for(CODE[dtype], n, call.aligned16), eps=eps, cast=cast)

    @classmethod
    def build(cls, identity):
        if identity.n == 0:  # empty rows: nothing to compute (n >= 1 in C)
            return _nothing
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)


def _nothing(*tensors):
    return None


def family_kernel(op: str, doc: str):
    """(interface, kernel class) of a family op: one implementation named like the op,
    taking the op's inputs then outputs in manifest order (the interface's default)."""
    iface = type(f"{op.title().replace('_', '')}Interface", (KernelInterface,),
                 {"__doc__": doc, "name": op, "implementations": (op,),
                  "launchable": "launch(*inputs, *outputs): writes the outputs"})
    kernel = type(f"{op.title().replace('_', '')}Kernel", (NormRowsKernel,),
                  {"__doc__": doc, "interface": op, "op": op, "__module__": __name__})
    return iface, kernel
