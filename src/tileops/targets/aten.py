"""The `aten` target: every op built from torch operations only. It runs on any device torch
supports (CPU, CUDA, MPS, ...) and is the reference the in-tree kernels are compared with.

Builders follow the plugin contract: builder(inputs, params) -> callable, where inputs maps
each input name to a TensorSpec (device, dtype, shape) or None, params the op's constructor
params by name; the callable takes the op's (contiguous) inputs and returns its outputs."""
from __future__ import annotations

import torch

from .base import BuilderTarget


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


class AtenTarget(BuilderTarget):
    """Chosen by name only (or when no target claims a device)."""

    def __init__(self):
        super().__init__("aten", BUILDERS)
