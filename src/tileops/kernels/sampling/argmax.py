"""ArgmaxFwdOp's kernels: the C table entry "argmax" (csrc/ops/sampling/argmax.c) and the
CUDA C kernel tileops_argmax (csrc/ops/sampling/argmax.cu).

Identities: the CPU build is a C function, so the logits' dtype; a CUDA build is
specialised on it and V (and the split of a row, cuda_rows.plan), per device."""
from __future__ import annotations

import torch

from ..._dtypes import CODE, DTYPE
from ..base import Kernel, KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuArgmaxBuild", "dtype")
CudaBuild = identity_type("CudaArgmaxBuild", "device dtype V arch")


class ArgmaxInterface(KernelInterface):
    """launch(logits, token): writes token."""
    name = "argmax"
    implementations = ("argmax",)
    shape_dependent = ("logits",)
    launchable = "launch(logits, token): writes token = argmax(logits, -1)"


def _guard(b, device_index):
    """check(logits, token): what the kernels rely on, in O(1) attribute reads."""
    g = common.Guard(f"argmax (launch of the {common.dtype_name(b.dtype)} build on {common.where(device_index)})",
                     device_index)
    dt, V = DTYPE[b.dtype], getattr(b, "V", None)

    def check(logits, token):
        B, _ = g.rows("logits", logits, (dt,), V)
        g.tensor("token", token, torch.int64, (B,))
        g.apart("token", token, (logits,))
    return check


def _build_cpu(b):
    handle, run = common.cpu_kernel("argmax")
    dtype = b.dtype

    def launch(logits, token):
        run(handle, logits.data_ptr(), token.data_ptr(), logits.shape[0], logits.shape[1], dtype)
    return common.guarded(_guard(b, -1), launch)


class ArgmaxKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "argmax"

    @classmethod
    def entry_for(cls, call):
        dtype = CODE[call.dtype("logits")]
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype)
        from . import cuda_rows
        dev = call.device.index or 0
        return CudaBuild(device=dev, dtype=dtype, V=int(call.inputs["logits"].shape[1]), arch=cuda_rows.arch(dev))

    @classmethod
    def build(cls, identity):
        if isinstance(identity, CpuBuild):
            return _build_cpu(identity)
        from . import cuda_rows
        return common.guarded(_guard(identity, identity.device), cuda_rows.build_argmax(identity))
