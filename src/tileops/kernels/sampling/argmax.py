"""ArgmaxFwdOp's kernels: the C table entry "argmax" (csrc/ops/sampling/argmax.c) and the
CUDA C kernel tileops_argmax (csrc/ops/sampling/argmax.cu).

Identities: the CPU build is a C function, so the logits' dtype; a CUDA build is
specialised on it, V, the alignment and the split of a row (cuda_sampling.row_plan), per
device."""
from __future__ import annotations

import torch

from ..._dtypes import CODE, DTYPE
from ..base import KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuArgmaxBuild", "dtype")
CudaBuild = identity_type("CudaArgmaxBuild", "device dtype V arch vec")


class ArgmaxInterface(KernelInterface):
    """launch(logits, token): writes token."""
    name = "argmax"
    implementations = ("argmax",)
    shape_dependent = ("logits",)
    launchable = "launch(logits, token): writes token = argmax(logits, -1)"


class ArgmaxKernel(common.RowsKernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "argmax"
    cpu_build, cuda_build, cuda_builder = CpuBuild, CudaBuild, "build_argmax"

    @classmethod
    def cpu_entry(cls, call):
        return CpuBuild(dtype=CODE[call.dtype("logits")])

    @classmethod
    def cuda_entry(cls, call, **common_fields):
        return CudaBuild(dtype=CODE[call.dtype("logits")], **common_fields)

    @staticmethod
    def guard(b, device_index):
        """check(logits, token): what the kernels rely on, in O(1) attribute reads."""
        g = common.Guard(f"argmax (launch of the {common.dtype_name(b.dtype)} build on "
                         f"{common.where(device_index)})", device_index)
        dt, V = DTYPE[b.dtype], getattr(b, "V", None)

        def check(logits, token):
            B, _ = g.rows("logits", logits, (dt,), V)
            g.tensor("token", token, torch.int64, (B,))
            g.apart("token", token, (logits,))
        return check

    @staticmethod
    def launch_cpu(b):
        handle, run = common.cpu_kernel("argmax")

        def launch(logits, token):
            run(handle, logits.data_ptr(), token.data_ptr(), logits.shape[0], logits.shape[1], b.dtype)
        return launch
