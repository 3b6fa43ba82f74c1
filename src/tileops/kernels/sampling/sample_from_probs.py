"""SampleFromProbsFwdOp's kernels: the C table entry "sample_from_probs"
(csrc/ops/sampling/sample_from_probs.c) and the CUDA C kernel tileops_sample_from_probs
(csrc/ops/sampling/sample_from_probs.cu).

Identities: the CPU build is a C function, so probs' dtype; a CUDA build is specialised
on it, V, the alignment and the split of a row (cuda_sampling.row_plan), per device."""
from __future__ import annotations

import torch

from ..._dtypes import CODE, DTYPE
from ..base import KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuSampleBuild", "dtype")
CudaBuild = identity_type("CudaSampleBuild", "device dtype V arch vec")


class SampleFromProbsInterface(KernelInterface):
    """launch(probs, q, token): writes token."""
    name = "sample_from_probs"
    implementations = ("sample_from_probs",)
    shape_dependent = ("probs",)
    launchable = "launch(probs, q, token): writes token = argmax(probs / q, -1) (-1: none > 0)"


class SampleFromProbsKernel(common.RowsKernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "sample_from_probs"
    data = "probs"
    cpu_build, cuda_build, cuda_builder = CpuBuild, CudaBuild, "build_sample"

    @classmethod
    def cpu_entry(cls, call):
        return CpuBuild(dtype=CODE[call.dtype("probs")])

    @classmethod
    def cuda_entry(cls, call, **common_fields):
        return CudaBuild(dtype=CODE[call.dtype("probs")], **common_fields)

    @staticmethod
    def guard(b, device_index):
        """check(probs, q, token): what the kernels rely on, in O(1) attribute reads."""
        g = common.Guard(f"sample_from_probs (launch of the {common.dtype_name(b.dtype)} build on "
                         f"{common.where(device_index)})", device_index)
        dt, V = DTYPE[b.dtype], getattr(b, "V", None)

        def check(probs, q, token):
            B, V_ = g.rows("probs", probs, (dt,), V)
            g.tensor("q", q, torch.float32, (B, V_))
            g.tensor("token", token, torch.int64, (B,))
            g.apart("token", token, (probs, q))
        return check

    @staticmethod
    def launch_cpu(b):
        handle, run = common.cpu_kernel("sample_from_probs")

        def launch(probs, q, token):
            run(handle, probs.data_ptr(), q.data_ptr(), token.data_ptr(), probs.shape[0], probs.shape[1], b.dtype)
        return launch
