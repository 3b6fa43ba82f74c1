"""What the norm family's row kernels share: one build per op and device.

Every op of the family after RMSNorm (LayerNorm, the fused residual adds, Gemma's RMSNorm)
is one C table entry `<op>` (csrc/ops/norm/<op>.c, over the family driver norm_rows.c)
and one CUDA C source `norm/<op>.cu` (over norm_rows.cuh). Both take the family's six
pointers (x, residual, weight, bias, y, residual_out; 0 for one the op does not have), so
an op's file only names its op: `family_kernel("layer_norm", doc)` gives its interface
and kernel class.

Identities: on the CPU the build is a C function, so (op, dtype, n, eps); on CUDA an
NVRTC build per device, so the device, the weight/bias presence the source is specialised
on and the vector width the pointers' alignment allows join it."""
from __future__ import annotations

from ... import _C
from ..._dtypes import CODE
from ..base import Kernel, KernelCall, KernelInterface, identity_type

SLOTS = ("x", "residual", "weight", "bias", "y", "residual_out")

CpuBuild = identity_type("CpuNormRowsBuild", "op tensors dtype n eps")
CudaBuild = identity_type("CudaNormRowsBuild", "device op tensors dtype n has_weight has_bias vec eps")


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


def _build_cpu(b):
    handle = _C.cpu_kernel(b.op)[0]
    run = _C.cpu_launch
    pointers = _slot_mapper(b.tensors)
    y_at = b.tensors.index("y")
    n, eps, dtype = b.n, b.eps, b.dtype

    def launch(*tensors):
        rows = tensors[y_at].numel() // n
        run(handle, *pointers(*tensors), rows, n, eps, dtype)
    return launch


def _build_cuda(b):
    from . import cuda_rows
    run = cuda_rows.build(b.device, b.op, b.dtype, b.n, b.has_weight, b.has_bias, b.vec, b.eps)
    names = b.tensors
    order = [names.index(s) if s in names else None for s in SLOTS]
    args = ", ".join(f"t{i}" for i in range(len(names)))
    slots = ", ".join("None" if i is None else f"t{i}" for i in order)
    ns = {"run": run}
    exec(f"def launch({args}):\n    run({slots})\n", ns)
    return ns["launch"]


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
        if call.device.type == "cpu":
            return CpuBuild(op=cls.op, tensors=cls._tensors(call), dtype=CODE[dtype], n=n, eps=eps)
        from . import cuda_rows
        return CudaBuild(device=call.device.index or 0, op=cls.op, tensors=cls._tensors(call), dtype=CODE[dtype], n=n,
                         has_weight=call.inputs.get("weight") is not None, has_bias=call.inputs.get("bias") is not None,
                         vec=cuda_rows.vec_for(CODE[dtype], n, call.aligned16), eps=eps)

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
