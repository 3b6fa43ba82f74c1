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
rows' strides are 2n and n. `cast` (the op's cast_before_mul: act(a) rounded to the dtype
before the product) joins both identities: the C entry "<op>_cast", the CUDA define
TILEOPS_CAST_BEFORE_MUL."""
from __future__ import annotations

import torch

from ... import _C
from ..._dtypes import CODE, DTYPE
from ...errors import InputTypeError, InputValueError
from ..base import Kernel, KernelInterface, checked, identity_type, launch_argument_error, overlaps

CpuBuild = identity_type("CpuGatedBuild", "op dtype n cast")
CudaBuild = identity_type("CudaGatedBuild", "device op dtype n vec cast")


# ---- what a launchable checks before it hands pointers to C ----------------------------
# A launchable is public (Op.kernel_for returns it): on every call it checks, in O(1)
# attribute reads, what the kernels rely on: x and y tensors of the build's dtype on its
# device, contiguous, not lazily negated, x rows of 2n and y rows of n elements (as many
# rows), y not overlapping x. `.unchecked` skips this for the op's body, whose generated
# checks guaranteed the same.

def guarded(raw, op: str, n: int, dtype_code: int, device_index: int):
    dt = DTYPE[dtype_code]
    where = "cpu" if device_index < 0 else f"cuda:{device_index}"
    head = f"{op} (launch of the {dt} build for halves of {n} on {where})"

    def fail(name, t, expected):
        if isinstance(t, torch.Tensor) and t.dtype is not dt:
            raise InputTypeError(f"{head}: argument '{name}': expected dtype {dt}, got {t.dtype}")
        raise launch_argument_error(head, name, t, expected)

    def check(x, y):
        for name, t, want in (("x", x, f"a contiguous tensor on {where} with rows of {2 * n} elements"),
                              ("y", y, f"a contiguous tensor on {where} with rows of {n} elements, as many as x")):
            if not (isinstance(t, torch.Tensor) and t.dtype is dt and t.get_device() == device_index
                    and t.is_contiguous() and not t.is_neg()):
                fail(name, t, want + " (not negated)")
        if not (x.dim() >= 1 and x.shape[-1] == 2 * n):
            fail("x", x, f"rows of {2 * n} elements")
        if y.numel() * 2 != x.numel():
            fail("y", y, f"{x.numel() // 2} elements (rows of {n}, as many as x)")
        if overlaps(y, (x,)):
            raise InputValueError(f"{head}: argument 'y': it overlaps x in memory")
    return checked(check, raw)


def _build_cpu(b):
    handle = _C.cpu_kernel(b.op + "_cast" if b.cast else b.op)[0]
    run = _C.cpu_launch
    n, dtype = b.n, b.dtype

    def launch(x, y):
        run(handle, x.data_ptr(), y.data_ptr(), y.numel() // n, n, 2 * n, n, dtype)
    if n:   # the same launch as data, for a plan (ops/plans.py): rows = y.numel() // n
        launch.plan_recipe = (handle, ((1, 0), (1, 1), (2, 1, n), (0, n), (0, 2 * n), (0, n), (0, dtype)))
    return guarded(launch, b.op, n, dtype, -1)


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
        cast = bool(call.params.get("cast_before_mul", False))
        if call.device.type == "cpu":
            return CpuBuild(op=cls.op, dtype=dtype, n=n, cast=cast)
        from . import cuda_gated
        return CudaBuild(device=call.device.index or 0, op=cls.op, dtype=dtype, n=n,
                         vec=cuda_gated.vec_for(dtype, n, call.aligned16), cast=cast)

    @classmethod
    def build(cls, identity):
        if identity.n == 0:  # empty halves: nothing to compute (n >= 1 in C)
            return _nothing
        if isinstance(identity, CpuBuild):
            return _build_cpu(identity)
        from . import cuda_gated
        return guarded(cuda_gated.build(identity.device, identity.op, identity.dtype, identity.n, identity.vec,
                                        identity.cast),
                       identity.op, identity.n, identity.dtype, identity.device)


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
