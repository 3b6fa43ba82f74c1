"""Positional encodings written with torch: what users compare tileops with.

Rotary embeddings follow vLLM's layout and native path (`RotaryEmbedding.forward_native`):
`cos_sin_cache` is float32 [max_position, rotary_dim], the cos half then the sin half of
each row; the first `rotary_dim` channels of every head rotate, the rest pass through;
NeoX style rotates the two halves of those channels against each other, GPT-J style the
interleaved pairs (2i, 2i + 1). The rotation is computed in the promoted dtype of the
input and the cache (float32 for half inputs: one rounding, as the kernels do) and
returned in the input's dtype. cast_cos_sin=True is Hugging Face's arithmetic instead: cos
and sin cast to the input's dtype and the rotation computed in that dtype
(`q * cos + rotate_half(q) * sin`, each product and the sum rounded).

The cos/sin cache follows Hugging Face's rope initialisation (`rope_type` "default",
"linear" and "llama3" of `ROPE_INIT_FUNCTIONS`): inverse frequencies base^(-2i / d),
linear scaling divides the positions by `factor`, llama3 scaling divides the low
frequencies by `factor` and blends the band between `low_freq_factor` and
`high_freq_factor` of the original context length."""
import math

import torch


def _rotate(x, cos, sin, rotary_dim, is_neox):
    acc = torch.promote_types(x.dtype, cos.dtype)
    xr = x[..., :rotary_dim].to(acc)
    c = cos.unsqueeze(-2).to(acc)
    s = sin.unsqueeze(-2).to(acc)
    if is_neox:
        x1, x2 = torch.chunk(xr, 2, dim=-1)
        rotated = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
    else:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        rotated = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(-2)
    return torch.cat((rotated.to(x.dtype), x[..., rotary_dim:]), dim=-1)


def rope(q, k, positions, cos_sin_cache, *, head_size, rotary_dim, is_neox, cast_cos_sin=False):
    cos, sin = cos_sin_cache.index_select(0, positions.long()).chunk(2, dim=-1)
    if cast_cos_sin:
        cos, sin = cos.to(q.dtype), sin.to(q.dtype)
    return _rotate(q, cos, sin, rotary_dim, is_neox), _rotate(k, cos, sin, rotary_dim, is_neox)


def inverse_frequencies(base, rotary_dim, scaling=None, factor=1.0, low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position=8192):
    inv = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim))
    if scaling == "llama3":
        low_wavelen = original_max_position / low_freq_factor
        high_wavelen = original_max_position / high_freq_factor
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (original_max_position / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        inv = torch.where(medium, blended, scaled)
    return inv


def rope_cos_sin_cache(*, base, rotary_dim, max_position, scaling=None, factor=1.0, low_freq_factor=1.0,
                       high_freq_factor=4.0, original_max_position=8192):
    inv = inverse_frequencies(base, rotary_dim, scaling, factor, low_freq_factor, high_freq_factor,
                              original_max_position)
    t = torch.arange(max_position, dtype=torch.float64)
    if scaling == "linear":
        t = t / factor
    freqs = torch.outer(t, inv)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(torch.float32)
