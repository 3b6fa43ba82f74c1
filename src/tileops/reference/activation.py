"""The activation family written with torch.nn.functional: what users compare tileops with.

x = [a, b] split in halves along the last dimension, y = act(a) * b (vLLM's and
FlashInfer's convention: the first half goes through the activation), as users write it in
torch: `act(a) * b` in the input dtype, which rounds act(a) before the product. That is
the ops' cast_before_mul=True order of roundings; the activation itself is computed in
float32 by each side's own exp / erf / tanh, so a rounded act(a) may differ by a unit in
the last place (GeLU: a few percent of 16-bit elements; SiLU: a few in ten thousand).
The default (one rounding, from float32) differs from it by that intermediate rounding,
inside the tests' tolerance."""
import torch.nn.functional as F


def silu_and_mul(x, *, cast_before_mul=False):
    n = x.shape[-1] // 2
    return F.silu(x[..., :n]) * x[..., n:]


def gelu_and_mul(x, *, cast_before_mul=False):
    n = x.shape[-1] // 2
    return F.gelu(x[..., :n], approximate="none") * x[..., n:]


def gelu_tanh_and_mul(x, *, cast_before_mul=False):
    n = x.shape[-1] // 2
    return F.gelu(x[..., :n], approximate="tanh") * x[..., n:]
