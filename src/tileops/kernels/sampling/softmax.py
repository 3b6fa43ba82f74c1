"""SoftmaxFwdOp's kernels: the C table entry "softmax" (csrc/ops/sampling/softmax.c) and
the CUDA C kernel tileops_softmax (csrc/ops/sampling/softmax.cu).

Identities: the CPU build is a C function, so (the logits' dtype, the output's dtype); a
CUDA build is specialised on those, V, whether there is a temperature, and the split of a
row (cuda_rows.plan: the cluster size, whether the row is staged on chip), per device."""
from __future__ import annotations

from ..._dtypes import CODE, DTYPE
from ..base import Kernel, KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuSoftmaxBuild", "dtype out_dtype")
CudaBuild = identity_type("CudaSoftmaxBuild", "device dtype out_dtype V temperature arch")
FLOATS = tuple(DTYPE[c] for c in (0, 1, 2))


class SoftmaxInterface(KernelInterface):
    """launch(logits, temperature, probs): writes probs (temperature may be None)."""
    name = "softmax"
    implementations = ("softmax",)
    shape_dependent = ("logits",)
    launchable = "launch(logits, temperature, probs): writes probs = softmax(logits / temperature)"


def _guard(b, device_index):
    """check(logits, temperature, probs): what the kernels rely on, in O(1) attribute reads."""
    g = common.Guard(f"softmax (launch of the {common.dtype_name(b.dtype)} -> {common.dtype_name(b.out_dtype)} "
                     f"build on {common.where(device_index)})", device_index)
    dt, odt, V = DTYPE[b.dtype], DTYPE[b.out_dtype], getattr(b, "V", None)

    def check(logits, temperature, probs):
        B, V_ = g.rows("logits", logits, (dt,), V)
        g.present("temperature", temperature, getattr(b, "temperature", None))
        g.tensor("temperature", temperature, DTYPE[0], (B,), optional=True)
        g.tensor("probs", probs, odt, (B, V_))
        g.apart("probs", probs, (logits, temperature))
    return check


def _build_cpu(b):
    handle, run = common.cpu_kernel("softmax")
    dtype, odtype = b.dtype, b.out_dtype

    def launch(logits, temperature, probs):
        run(handle, logits.data_ptr(), common.ptr(temperature), probs.data_ptr(), logits.shape[0], logits.shape[1],
            dtype, odtype)
    return common.guarded(_guard(b, -1), launch)


class SoftmaxKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "softmax"

    @classmethod
    def entry_for(cls, call):
        dtype, odtype = CODE[call.dtype("logits")], CODE[call.dtype("probs")]
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype, out_dtype=odtype)
        from . import cuda_rows
        dev = call.device.index or 0
        return CudaBuild(device=dev, dtype=dtype, out_dtype=odtype, V=int(call.inputs["logits"].shape[1]),
                         temperature=call.inputs["temperature"] is not None, arch=cuda_rows.arch(dev))

    @classmethod
    def build(cls, identity):
        if isinstance(identity, CpuBuild):
            return _build_cpu(identity)
        from . import cuda_rows
        return common.guarded(_guard(identity, identity.device), cuda_rows.build_softmax(identity))
