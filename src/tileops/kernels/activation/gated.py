"""What the activation family's gated ops share: y = act(a) * b for x = [a, b], the halves
of x's last dimension, one build per op, dtype, half width and (CUDA) device.

Every gated op is one C table entry `<op>` (csrc/ops/activation/<op>.c over the family
driver gated_act.c; arguments x, y, rows, n, x_stride, y_stride, dtype) and one CUDA C
source `activation/<op>.cu` (over gated_act.cuh), so an op's file only names its op:
`gated_kernel("silu_and_mul", doc)` gives its interface and kernel class.

Identities: on the CPU the build is a C function, so (op, dtype, n); on CUDA an NVRTC
build per device, specialised on n and the vector width the pointers' alignment allows.
n is the half width x.shape[-1] // 2: the interface declares x shape-dependent. The op
layer hands the launchable contiguous tensors (the boundary makes x contiguous), so the
rows' strides are 2n and n."""
from __future__ import annotations

from ... import _C
from ..._dtypes import CODE
from ..base import Kernel, KernelInterface, identity_type

CpuBuild = identity_type("CpuGatedBuild", "op dtype n")
CudaBuild = identity_type("CudaGatedBuild", "device op dtype n vec")


def _build_cpu(b):
    handle = _C.cpu_kernel(b.op)[0]
    run = _C.cpu_launch
    n, dtype = b.n, b.dtype

    def launch(x, y):
        run(handle, x.data_ptr(), y.data_ptr(), y.numel() // n, n, 2 * n, n, dtype)
    return launch


def _nothing(x, y):
    return None


class GatedActKernel(Kernel):
    """The one implementation of a gated op (CPU: the C driver picks its SIMD level; CUDA:
    gated_act.cuh's elementwise kernel)."""
    op: str = ""

    @classmethod
    def entry_for(cls, call):
        n = call.inputs["x"].shape[-1] // 2
        dtype = CODE[call.dtype("x")]
        if call.device.type == "cpu":
            return CpuBuild(op=cls.op, dtype=dtype, n=n)
        from . import cuda_gated
        return CudaBuild(device=call.device.index or 0, op=cls.op, dtype=dtype, n=n,
                         vec=cuda_gated.vec_for(dtype, n, call.aligned16))

    @classmethod
    def build(cls, identity):
        if identity.n == 0:  # empty halves: nothing to compute (n >= 1 in C)
            return _nothing
        if isinstance(identity, CpuBuild):
            return _build_cpu(identity)
        from . import cuda_gated
        return cuda_gated.build(identity.device, identity.op, identity.dtype, identity.n, identity.vec)


def gated_kernel(op: str, doc: str):
    """(interface, kernel class) of a gated op: one implementation named like the op,
    launched as launch(x, y)."""
    stem = op.title().replace("_", "")
    iface = type(f"{stem}Interface", (KernelInterface,),
                 {"__doc__": doc, "name": op, "implementations": (op,), "tensors": ("x", "y"),
                  "shape_dependent": ("x",), "launchable": "launch(x, y): writes y = act(a) * b"})
    kernel = type(f"{stem}Kernel", (GatedActKernel,),
                  {"__doc__": doc, "interface": op, "op": op, "__module__": __name__})
    return iface, kernel
