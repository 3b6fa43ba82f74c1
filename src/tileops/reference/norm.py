"""The norm family written with torch.nn.functional: what users compare tileops with.

Arithmetic follows the modules people use: torch's own functions where one exists
(F.rms_norm, F.layer_norm); the fused residual add rounds `x + residual` to the inputs'
dtype before normalising it, as Hugging Face decoder layers and vLLM's fused kernel do;
Gemma's RMSNorm multiplies by (1 + weight) in the accumulation dtype, as Hugging Face's
GemmaRMSNorm does; cast_before_weight=True is Hugging Face's LlamaRMSNorm written as it is
(float32 mean square, + eps, rsqrt, the normalised value cast to the input dtype, then
times the weight in that dtype)."""
import torch
import torch.nn.functional as F


def rms_norm(x, weight=None, *, normalized_shape, eps, cast_before_weight=False):
    if not cast_before_weight:
        return F.rms_norm(x, tuple(normalized_shape), weight, eps)
    h = x.to(torch.promote_types(x.dtype, torch.float32))
    variance = h.pow(2).mean(tuple(range(-len(normalized_shape), 0)), keepdim=True)
    h = (h * torch.rsqrt(variance + eps)).to(x.dtype)
    return h if weight is None else weight * h


def layer_norm(x, weight=None, bias=None, *, normalized_shape, eps):
    return F.layer_norm(x, tuple(normalized_shape), weight, bias, eps)


def gemma_rms_norm(x, weight, *, normalized_shape, eps):
    acc = torch.promote_types(x.dtype, torch.float32)
    y = F.rms_norm(x.to(acc), tuple(normalized_shape), None, eps) * (1.0 + weight.to(acc))
    return y.to(x.dtype)


def fused_add_rms_norm(x, residual, weight=None, *, normalized_shape, eps, cast_before_weight=False):
    h = x + residual
    return rms_norm(h, weight, normalized_shape=normalized_shape, eps=eps, cast_before_weight=cast_before_weight), h


def fused_add_layer_norm(x, residual, weight=None, bias=None, *, normalized_shape, eps):
    h = x + residual
    return F.layer_norm(h, tuple(normalized_shape), weight, bias, eps), h
