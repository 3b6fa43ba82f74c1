"""tileops.functional: the ops as functions, for users who hold their own weights.

    rms_norm(x, weight, eps=None, out=None, *, cast_before_weight=False)
    layer_norm(x, weight=None, bias=None, eps=1e-5, out=None, *, normalized_shape=None)
    fused_add_rms_norm(x, residual, weight, eps=None, inplace=False, *, cast_before_weight=False)
    fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5, inplace=False, *, normalized_shape=None)
    gemma_rms_norm(x, weight, eps=1e-6, out=None)
    silu_and_mul(x, out=None, *, cast_before_mul=False)        (gelu_and_mul, gelu_tanh_and_mul alike)
    rope(q, k, positions, cos_sin_cache, head_size, rotary_dim, is_neox=True, inplace=False, *, cast_cos_sin=False)
    embedding(ids, weight, out=None)

Each call goes through the op instance interned for its params (tileops.nn._intern): the
same instance for every call with equal params, eagerly and under torch.compile, where each
call is one node (fullgraph=True works). The norms' normalized_shape is the weight's shape
(x's last dimension without a weight, or `normalized_shape=` where given); an op's params
are constants of its graph, so a dynamic size there is specialised. `target=` picks who
serves (None: by device)."""
from __future__ import annotations

import torch

from .errors import InputTypeError
from .nn._intern import lookup, static_shape
from .ops.activation.gelu_and_mul import GeluAndMulFwdOp
from .ops.activation.gelu_tanh_and_mul import GeluTanhAndMulFwdOp
from .ops.activation.silu_and_mul import SiluAndMulFwdOp
from .ops.embedding.embedding import EmbeddingFwdOp
from .ops.norm.fused_add_layer_norm import FusedAddLayerNormFwdOp
from .ops.norm.fused_add_rms_norm import FusedAddRMSNormFwdOp
from .ops.norm.gemma_rms_norm import GemmaRMSNormFwdOp
from .ops.norm.layer_norm import LayerNormFwdOp
from .ops.norm.rms_norm import RMSNormFwdOp
from .ops.positional.rope import RopeFwdOp


def _norm_shape(x, weight, normalized_shape, op):
    """The norm's normalized_shape: given, else weight's shape, else x's last dimension (a
    non-tensor x or weight is named here, before its shape is read: the op's own message)."""
    if normalized_shape is not None:
        return static_shape((normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape)
    for name, t in (("weight", weight), ("x", x)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise InputTypeError(f"{op.__name__}: argument '{name}': expected a Tensor"
                                 f"{' or None' if name == 'weight' else ''}, got {type(t).__name__}")
    if weight is not None:
        return static_shape(weight.shape)
    return static_shape(x.shape[-1:])


def rms_norm(x, weight, eps=None, out=None, *, cast_before_weight=False, target=None):
    """y = x * rsqrt(mean(x^2) + eps) * weight over weight's dims (x's last without a
    weight); eps None is torch.finfo(torch.float32).eps (F.rms_norm's). cast_before_weight:
    Hugging Face's rounding (tileops.nn.RMSNorm)."""
    op = lookup(RMSNormFwdOp, target, _norm_shape(x, weight, None, RMSNormFwdOp), eps, cast_before_weight)
    return op(x, weight, out=out)


def layer_norm(x, weight=None, bias=None, eps=1e-5, out=None, *, normalized_shape=None, target=None):
    """y = (x - mean) * rsqrt(var + eps) * weight + bias over weight's dims (or bias's, or
    `normalized_shape`, or x's last)."""
    ref = weight if weight is not None else bias
    op = lookup(LayerNormFwdOp, target, _norm_shape(x, ref, normalized_shape, LayerNormFwdOp), eps)
    return op(x, weight, bias, out=out)


def fused_add_rms_norm(x, residual, weight, eps=None, inplace=False, *, cast_before_weight=False, target=None):
    """(y, h): h = x + residual rounded to the dtype, y = rms_norm(h) * weight; inplace=True
    writes y into x and h into residual and returns them."""
    op = lookup(FusedAddRMSNormFwdOp, target, _norm_shape(x, weight, None, FusedAddRMSNormFwdOp), eps,
                cast_before_weight)
    return op(x, residual, weight, inplace=inplace)


def fused_add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5, inplace=False, *, normalized_shape=None,
                         target=None):
    """(y, h): h = x + residual rounded to the dtype, y = layer_norm(h); inplace as
    fused_add_rms_norm."""
    ref = weight if weight is not None else bias
    op = lookup(FusedAddLayerNormFwdOp, target, _norm_shape(x, ref, normalized_shape, FusedAddLayerNormFwdOp), eps)
    return op(x, residual, weight, bias, inplace=inplace)


def gemma_rms_norm(x, weight, eps=1e-6, out=None, *, target=None):
    """y = x * rsqrt(mean(x^2) + eps) * (1 + weight), in float32, rounded once."""
    op = lookup(GemmaRMSNormFwdOp, target, _norm_shape(x, weight, None, GemmaRMSNormFwdOp), eps)
    return op(x, weight, out=out)


def silu_and_mul(x, out=None, *, cast_before_mul=False, target=None):
    """y = silu(a) * b for x = [a, b] along the last dimension."""
    return lookup(SiluAndMulFwdOp, target, cast_before_mul)(x, out=out)


def gelu_and_mul(x, out=None, *, cast_before_mul=False, target=None):
    """y = gelu(a) * b (erf gelu) for x = [a, b] along the last dimension."""
    return lookup(GeluAndMulFwdOp, target, cast_before_mul)(x, out=out)


def gelu_tanh_and_mul(x, out=None, *, cast_before_mul=False, target=None):
    """y = gelu_tanh(a) * b for x = [a, b] along the last dimension."""
    return lookup(GeluTanhAndMulFwdOp, target, cast_before_mul)(x, out=out)


def rope(q, k, positions, cos_sin_cache, head_size, rotary_dim, is_neox=True, inplace=False, *, cast_cos_sin=False,
         target=None):
    """(q_out, k_out): q [T, H, head_size] and k [T, H_kv, head_size] rotated by
    cos_sin_cache[positions] (float32 [max_position, rotary_dim], cos half then sin half),
    vLLM's layout; inplace=True writes q and k. cast_cos_sin: Hugging Face's arithmetic
    in q's dtype (RopeFwdOp)."""
    op = lookup(RopeFwdOp, target, head_size, rotary_dim, is_neox, cast_cos_sin)
    return op(q, k, positions, cos_sin_cache, inplace=inplace)


def embedding(ids, weight, out=None, *, target=None):
    """y = weight[ids] (ids of any shape, int32 or int64)."""
    return lookup(EmbeddingFwdOp, target)(ids, weight, out=out)


__all__ = ["rms_norm", "layer_norm", "fused_add_rms_norm", "fused_add_layer_norm", "gemma_rms_norm",
           "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", "rope", "embedding"]
