"""SoftmaxFwdOp's kernels: the C table entry "softmax" (csrc/ops/sampling/softmax.c) and
the CUDA C kernel tileops_softmax (csrc/ops/sampling/softmax.cu).

Identities: the CPU build is a C function, so (the logits' dtype, the output's dtype); a
CUDA build is specialised on those, V, whether there is a temperature, the alignment and
the split of a row (cuda_sampling.row_plan: the cluster, whether the row is kept on
chip: a function of V, the dtypes and the architecture), per device."""
from __future__ import annotations

from ..._dtypes import CODE, DTYPE
from ..base import KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuSoftmaxBuild", "dtype out_dtype")
CudaBuild = identity_type("CudaSoftmaxBuild", "device dtype out_dtype V temperature arch vec")


class SoftmaxInterface(KernelInterface):
    """launch(logits, temperature, probs): writes probs (temperature may be None)."""
    name = "softmax"
    implementations = ("softmax",)
    shape_dependent = ("logits",)
    launchable = "launch(logits, temperature, probs): writes probs = softmax(logits / temperature)"


class SoftmaxKernel(common.RowsKernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "softmax"
    cpu_build, cuda_build, cuda_builder = CpuBuild, CudaBuild, "build_softmax"

    @classmethod
    def cpu_entry(cls, call):
        return CpuBuild(dtype=CODE[call.dtype("logits")], out_dtype=CODE[call.dtype("probs")])

    @classmethod
    def cuda_entry(cls, call, **common_fields):
        return CudaBuild(dtype=CODE[call.dtype("logits")], out_dtype=CODE[call.dtype("probs")],
                         temperature=call.inputs["temperature"] is not None, **common_fields)

    @staticmethod
    def guard(b, device_index):
        """check(logits, temperature, probs): what the kernels rely on, in O(1) attribute reads."""
        g = common.Guard(f"softmax (launch of the {common.dtype_name(b.dtype)} -> "
                         f"{common.dtype_name(b.out_dtype)} build on {common.where(device_index)})", device_index)
        dt, odt, V = DTYPE[b.dtype], DTYPE[b.out_dtype], getattr(b, "V", None)

        def check(logits, temperature, probs):
            B, V_ = g.rows("logits", logits, (dt,), V)
            g.present("temperature", temperature, getattr(b, "temperature", None))
            g.tensor("temperature", temperature, DTYPE[0], (B,), optional=True)
            g.tensor("probs", probs, odt, (B, V_))
            g.apart("probs", probs, (logits, temperature))
        return check

    @staticmethod
    def launch_cpu(b):
        handle, run = common.cpu_kernel("softmax")

        def launch(logits, temperature, probs):
            run(handle, logits.data_ptr(), common.ptr(temperature), probs.data_ptr(), logits.shape[0],
                logits.shape[1], b.dtype, b.out_dtype)
        return launch
