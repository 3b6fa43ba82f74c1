"""The `aten` target: every op built from torch operations only. It runs on any device torch
supports (CPU, CUDA, MPS, ...) and is the reference the in-tree kernels are compared with.

Builders follow the plugin contract: builder(inputs, params) -> callable, where inputs maps
each input name to a TensorSpec (device, dtype, shape) or None, params the op's constructor
params by name; the callable takes the op's (contiguous) inputs and returns its outputs."""
from __future__ import annotations

import torch

from .base import Target


def _rms_norm(inputs, params):
    ns = tuple(params["normalized_shape"])
    eps = params["eps"]
    dims = tuple(range(-len(ns), 0))

    def run(x, weight=None):
        xf = x.float()
        e = torch.finfo(x.dtype).eps if eps is None else eps
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + e)
        if weight is not None:
            y = y * weight.float()
        return y.to(x.dtype).contiguous()
    return run


BUILDERS = {"RMSNormFwdOp": _rms_norm}


class AtenTarget(Target):
    name = "aten"
    builders = BUILDERS

    def claims(self, device):
        return False  # explicit only (or the fallback when no target claims a device)

    def serves(self, op_cls):
        return op_cls.__name__ in self.builders

    def kernel_for(self, op, name, call):
        key = ("aten", name, call.device, tuple(call.inputs.items()))
        fn = op._kernels.get(key)
        if fn is None:
            fn = self.builders[type(op).__name__](dict(call.inputs), dict(call.params))
            op._kernels[key] = fn
        return fn
