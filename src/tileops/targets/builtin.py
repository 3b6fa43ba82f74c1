"""The in-tree target: the op's own Kernel classes (C on the CPU, CUDA C on NVIDIA GPUs)."""
from __future__ import annotations

import torch

from ..errors import NotReadyDuringCaptureError
from ..kernels.base import select
from .base import Target


class BuiltinTarget(Target):
    name = "builtin"
    honours_memo_key = True

    def claims(self, device: torch.device) -> bool:
        return device.type in ("cpu", "cuda")

    def serves(self, op_cls) -> bool:
        return bool(op_cls.interfaces)

    def kernel_for(self, op, name, call):
        kernel = select(op, name, call)
        identity = kernel.entry_for(call)
        fn = op._kernels.get(identity)
        if fn is None:
            try:
                fn = kernel.build(identity)
            except NotReadyDuringCaptureError as e:
                raise NotReadyDuringCaptureError(
                    f"{type(op).__name__}: kernel {kernel.__name__} is not built for {call.shapes()} "
                    f"(dtype {next(s.dtype for s in call.inputs.values() if s)}, {call.device}) and the stream is "
                    f"being captured into a CUDA graph. Building (compile, load) is not allowed during capture: "
                    f"call the op once at this shape before capture (warm-up). [{e}]") from None
            op._kernels[identity] = fn
        return fn
