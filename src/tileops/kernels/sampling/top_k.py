"""TopKFwdOp's kernels: the C table entry "top_k" (csrc/ops/sampling/top_k.c) and the CUDA
C kernel tileops_top_k (csrc/ops/sampling/top_k.cu).

Identities: the CPU build is a C function, so the logits' dtype (k and V are arguments);
a CUDA build is specialised on it, V, k, whether the values are written and the
alignment, per device. A CUDA build sorts the k selected in shared memory:
k <= cuda_sampling.TOP_K_MAX (the refusal names the limit)."""
from __future__ import annotations

import torch

from ..._dtypes import CODE, DTYPE
from ..base import KernelInterface, identity_type
from . import common

CpuBuild = identity_type("CpuTopKBuild", "dtype")
CudaBuild = identity_type("CudaTopKBuild", "device dtype V k values arch vec")


class TopKInterface(KernelInterface):
    """launch(logits, values, indices): writes indices and (unless None) values."""
    name = "top_k"
    implementations = ("top_k",)
    shape_dependent = ("logits",)
    launchable = "launch(logits, values, indices): writes the k largest of each row and their indices"


class TopKKernel(common.RowsKernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "top_k"
    cpu_build, cuda_build, cuda_builder = CpuBuild, CudaBuild, "build_top_k"

    @classmethod
    def refusal(cls, call):
        why = super().refusal(call)
        if why is None and call.device.type == "cuda":
            from .cuda_sampling import TOP_K_MAX
            k = int(call.params["k"])
            if k > TOP_K_MAX:
                why = f"the CUDA kernel sorts the k selected in shared memory: k <= {TOP_K_MAX}, got k = {k}"
        return why

    @classmethod
    def cpu_entry(cls, call):
        return CpuBuild(dtype=CODE[call.dtype("logits")])

    @classmethod
    def cuda_entry(cls, call, **common_fields):
        return CudaBuild(dtype=CODE[call.dtype("logits")], k=int(call.params["k"]),
                         values=call.outputs["values"] is not None, **common_fields)

    @staticmethod
    def guard(b, device_index):
        """check(logits, values, indices): what the kernels rely on, in O(1) attribute reads."""
        g = common.Guard(f"top_k (launch of the {common.dtype_name(b.dtype)} build on "
                         f"{common.where(device_index)})", device_index)
        dt, V, K = DTYPE[b.dtype], getattr(b, "V", None), getattr(b, "k", None)

        def check(logits, values, indices):
            B, V_ = g.rows("logits", logits, (dt,), V)
            k = K
            if k is None:   # the CPU build takes any k <= V: the indices' width
                ok = isinstance(indices, torch.Tensor) and indices.dim() == 2 and indices.shape[1] <= V_
                k = indices.shape[1] if ok else f"k <= {V_}"
            g.tensor("indices", indices, torch.int64, (B, k))
            g.present("values", values, getattr(b, "values", None))
            g.tensor("values", values, dt, (B, k), optional=True)
            g.apart("indices", indices, (logits, values))
            if values is not None:
                g.apart("values", values, (logits,))
        return check

    @staticmethod
    def launch_cpu(b):
        handle, run = common.cpu_kernel("top_k")

        def launch(logits, values, indices):
            run(handle, logits.data_ptr(), common.ptr(values), indices.data_ptr(), logits.shape[0], logits.shape[1],
                indices.shape[1], b.dtype)
        return launch
