"""TopKTopPMaskFwdOp's kernels: the C table entry "top_k_top_p_mask"
(csrc/ops/sampling/top_k_top_p_mask.c) and the CUDA C kernel tileops_top_k_top_p_mask
(csrc/ops/sampling/top_k_top_p_mask.cu). Neither sorts: a radix selection finds the
k-th largest value and a radix search over the values with each digit's probability mass
finds the nucleus' edge (the C file says how).

Identities: the CPU build is a C function, so the logits' and k's dtypes; a CUDA build is
specialised on those, V, which of k and p are given and the alignment, per device."""
from __future__ import annotations

import torch

from ..._dtypes import CODE, DTYPE
from ..base import KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuTopKTopPBuild", "dtype k_dtype")
CudaBuild = identity_type("CudaTopKTopPBuild", "device dtype k_dtype V has_k has_p arch vec")
INT32 = CODE[torch.int32]


class TopKTopPMaskInterface(KernelInterface):
    """launch(logits, k, p, masked): writes masked (which may be logits: in place)."""
    name = "top_k_top_p_mask"
    implementations = ("top_k_top_p_mask",)
    shape_dependent = ("logits",)
    launchable = "launch(logits, k, p, masked): writes masked (the logits themselves: in place)"


def _k_dtype(call):
    spec = call.inputs["k"]
    return INT32 if spec is None else CODE[spec.dtype]


class TopKTopPMaskKernel(common.RowsKernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "top_k_top_p_mask"
    cpu_build, cuda_build, cuda_builder = CpuBuild, CudaBuild, "build_top_k_top_p_mask"

    @classmethod
    def cpu_entry(cls, call):
        return CpuBuild(dtype=CODE[call.dtype("logits")], k_dtype=_k_dtype(call))

    @classmethod
    def cuda_entry(cls, call, **common_fields):
        return CudaBuild(dtype=CODE[call.dtype("logits")], k_dtype=_k_dtype(call), has_k=call.inputs["k"] is not None,
                         has_p=call.inputs["p"] is not None, **common_fields)

    @staticmethod
    def guard(b, device_index):
        """check(logits, k, p, masked): what the kernels rely on, in O(1) attribute reads."""
        g = common.Guard(f"top_k_top_p_mask (launch of the {common.dtype_name(b.dtype)} build on "
                         f"{common.where(device_index)})", device_index)
        dt, kdt, V = DTYPE[b.dtype], DTYPE[b.k_dtype], getattr(b, "V", None)

        def check(logits, k, p, masked):
            B, V_ = g.rows("logits", logits, (dt,), V)
            g.present("k", k, getattr(b, "has_k", None))
            g.present("p", p, getattr(b, "has_p", None))
            g.tensor("k", k, kdt, (B,), optional=True)
            g.tensor("p", p, torch.float32, (B,), optional=True)
            if masked is not logits:
                g.tensor("masked", masked, dt, (B, V_))
                g.apart("masked", masked, (logits, k, p))
        return check

    @staticmethod
    def launch_cpu(b):
        handle, run = common.cpu_kernel("top_k_top_p_mask")

        def launch(logits, k, p, masked):
            run(handle, logits.data_ptr(), common.ptr(k), common.ptr(p), masked.data_ptr(), logits.shape[0],
                logits.shape[1], b.dtype, b.k_dtype)
        return launch
