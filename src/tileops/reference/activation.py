"""The activation family written with torch.nn.functional: what users compare tileops with.

x = [a, b] split in halves along the last dimension, y = act(a) * b (vLLM's and
FlashInfer's convention: the first half goes through the activation)."""
import torch.nn.functional as F


def silu_and_mul(x):
    n = x.shape[-1] // 2
    return F.silu(x[..., :n]) * x[..., n:]


def gelu_and_mul(x):
    n = x.shape[-1] // 2
    return F.gelu(x[..., :n], approximate="none") * x[..., n:]


def gelu_tanh_and_mul(x):
    n = x.shape[-1] // 2
    return F.gelu(x[..., :n], approximate="tanh") * x[..., n:]
