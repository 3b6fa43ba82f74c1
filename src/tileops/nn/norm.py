"""Normalisation modules over the norm family's ops: RMSNorm, LayerNorm, their fused
residual-add forms, Gemma's RMSNorm.

Each owns its parameters under torch's / Hugging Face's names (`weight`, `bias`), so
state_dicts load unchanged, and calls one interned op instance shared by every module with
equal params (tileops.nn._intern): 32 equal layers compile once, region by region or whole.

`cast_before_weight=True` (RMSNorm, FusedAddRMSNorm) is Hugging Face's arithmetic
(LlamaRMSNorm, Qwen2RMSNorm): the mean square, its eps and the reciprocal square root in
float32 steps, the normalised value rounded to the input dtype and then multiplied by the
weight in that dtype (`weight * hidden.to(input_dtype)`). The default is torch's
F.rms_norm (one rounding, after the weight)."""
from __future__ import annotations

import torch

from ..ops.norm.fused_add_layer_norm import FusedAddLayerNormFwdOp
from ..ops.norm.fused_add_rms_norm import FusedAddRMSNormFwdOp
from ..ops.norm.gemma_rms_norm import GemmaRMSNormFwdOp
from ..ops.norm.layer_norm import LayerNormFwdOp
from ..ops.norm.rms_norm import RMSNormFwdOp
from ._base import OpModule


def _shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(d) for d in normalized_shape)


def _ones_weight(shape, affine, device, dtype):
    return torch.nn.Parameter(torch.ones(shape, device=device, dtype=dtype)) if affine else None


class RMSNorm(OpModule):
    """y = x * rsqrt(mean(x^2) + eps) * weight over the trailing `normalized_shape` dims
    (torch.nn.RMSNorm's arguments and state: `weight`, absent without
    elementwise_affine; eps None is torch.finfo(torch.float32).eps as in F.rms_norm).
    `cast_before_weight=True`: Hugging Face's rounding (module docstring). `variance_epsilon`
    is `eps` (Hugging Face's name)."""

    op_class = RMSNormFwdOp
    op_params = (("normalized_shape", "normalized_shape"), ("eps", "eps"),
                 ("cast_before_weight", "cast_before_weight"))

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, *, cast_before_weight=False,
                 device=None, dtype=None, target=None):
        super().__init__()
        self.target = target
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.cast_before_weight = cast_before_weight
        self.register_parameter("weight", _ones_weight(self.normalized_shape, elementwise_affine, device, dtype))

    @property
    def variance_epsilon(self):
        return self.eps

    @variance_epsilon.setter
    def variance_epsilon(self, value):
        self.eps = value

    def forward(self, x, *, out=None):
        return self._op(x, self.weight, out=out)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
                + (", cast_before_weight=True" if self.cast_before_weight else ""))


class FusedAddRMSNorm(RMSNorm):
    """h = x + residual (rounded to the dtype), y = rms_norm(h) * weight; forward(x,
    residual, *, inplace=False) returns (y, h), or with inplace=True writes y into x and h
    into residual (vLLM's convention) and returns them. The residual add of a pre-norm
    decoder layer fused with the next norm. Arguments and state as RMSNorm."""

    op_class = FusedAddRMSNormFwdOp

    def forward(self, x, residual, *, inplace=False):
        return self._op(x, residual, self.weight, inplace=inplace)


class LayerNorm(OpModule):
    """y = (x - mean) * rsqrt(var + eps) * weight + bias over the trailing dims
    (torch.nn.LayerNorm's arguments and state: `weight`, `bias`)."""

    op_class = LayerNormFwdOp
    op_params = (("normalized_shape", "normalized_shape"), ("eps", "eps"))

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, *, device=None,
                 dtype=None, target=None):
        super().__init__()
        self.target = target
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", _ones_weight(self.normalized_shape, elementwise_affine, device, dtype))
        if elementwise_affine and bias:
            self.bias = torch.nn.Parameter(torch.zeros(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x, *, out=None):
        return self._op(x, self.weight, self.bias, out=out)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class FusedAddLayerNorm(LayerNorm):
    """h = x + residual (rounded to the dtype), y = layer_norm(h); forward(x, residual, *,
    inplace=False) returns (y, h) (inplace=True: written into x and residual). State:
    `weight`, `bias`."""

    op_class = FusedAddLayerNormFwdOp

    def forward(self, x, residual, *, inplace=False):
        return self._op(x, residual, self.weight, self.bias, inplace=inplace)


class GemmaRMSNorm(OpModule):
    """y = x * rsqrt(mean(x^2) + eps) * (1 + weight), in float32 then rounded once (Hugging
    Face's GemmaRMSNorm: weight stored as an offset from 1, initialised to zeros; state
    `weight`)."""

    op_class = GemmaRMSNormFwdOp
    op_params = (("normalized_shape", "normalized_shape"), ("eps", "eps"))

    def __init__(self, normalized_shape, eps=1e-6, *, device=None, dtype=None, target=None):
        super().__init__()
        self.target = target
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.zeros(self.normalized_shape, device=device, dtype=dtype))

    def forward(self, x, *, out=None):
        return self._op(x, self.weight, out=out)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"
