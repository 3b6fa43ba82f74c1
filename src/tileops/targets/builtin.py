"""The in-tree target: the op's own Kernel classes (C on the CPU, CUDA C on NVIDIA GPUs)."""
from __future__ import annotations

import torch

from ..errors import NotReadyDuringCaptureError
from .base import Target


class BuiltinTarget(Target):
    name = "builtin"
    honours_memo_key = True

    def claims(self, device: torch.device) -> bool:
        return device.type in ("cpu", "cuda")

    def serves(self, op_cls) -> bool:
        return bool(op_cls.interfaces)

    def kernel_for(self, table, name, call):
        kernel = table.select(name, call)
        identity = kernel.entry_for(call)
        key = (kernel, identity)
        fn = table.get(key)
        if fn is None:
            try:
                fn = kernel.build(identity)
            except NotReadyDuringCaptureError as e:
                raise NotReadyDuringCaptureError(
                    f"{table.op_name}: kernel {kernel.__name__} is not built for {call.shapes()} "
                    f"(params {call.params}, dtype {next(s.dtype for s in call.inputs.values() if s)}, {call.device}) "
                    f"and the stream is being captured into a CUDA graph. Building (compile, load) is not allowed "
                    f"during capture: call the op once at this shape before capture (warm-up). [{e}]") from None
            fn = table.put(key, fn)
        return fn
