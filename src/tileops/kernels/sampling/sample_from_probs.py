"""SampleFromProbsFwdOp's kernels: the C table entry "sample_from_probs"
(csrc/ops/sampling/sample_from_probs.c) and the CUDA C kernel tileops_sample_from_probs
(csrc/ops/sampling/sample_from_probs.cu).

Identities: the CPU build is a C function, so probs' dtype; a CUDA build is specialised
on it and V (and the split of a row, cuda_rows.plan), per device."""
from __future__ import annotations

import torch

from ..._dtypes import CODE, DTYPE
from ..base import Kernel, KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuSampleBuild", "dtype")
CudaBuild = identity_type("CudaSampleBuild", "device dtype V arch")


class SampleFromProbsInterface(KernelInterface):
    """launch(probs, q, token): writes token."""
    name = "sample_from_probs"
    implementations = ("sample_from_probs",)
    shape_dependent = ("probs",)
    launchable = "launch(probs, q, token): writes token = argmax(probs / q, -1) (-1: none > 0)"


def _guard(b, device_index):
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


def _build_cpu(b):
    handle, run = common.cpu_kernel("sample_from_probs")
    dtype = b.dtype

    def launch(probs, q, token):
        run(handle, probs.data_ptr(), q.data_ptr(), token.data_ptr(), probs.shape[0], probs.shape[1], dtype)
    return common.guarded(_guard(b, -1), launch)


class SampleFromProbsKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "sample_from_probs"

    @classmethod
    def entry_for(cls, call):
        dtype = CODE[call.dtype("probs")]
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype)
        from . import cuda_rows
        dev = call.device.index or 0
        return CudaBuild(device=dev, dtype=dtype, V=int(call.inputs["probs"].shape[1]), arch=cuda_rows.arch(dev))

    @classmethod
    def build(cls, identity):
        if isinstance(identity, CpuBuild):
            return _build_cpu(identity)
        from . import cuda_rows
        return common.guarded(_guard(identity, identity.device), cuda_rows.build_sample(identity))
