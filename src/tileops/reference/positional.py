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

The tables without tensor inputs (RopeCosSinCacheFwdOp, AlibiFwdOp, SinusoidalFwdOp) are
computed in float64 on `device` (default the CPU) and returned in `dtype` (float32, the
ops' output; the test driver asks for float64 to compare with unrounded values):

  rope_cos_sin_cache  vLLM's cache (`RotaryEmbedding._compute_cos_sin_cache`: cos of the
                      angles p * inv_i, then their sin) with Hugging Face's inverse
                      frequencies (`ROPE_INIT_FUNCTIONS`): inv_i = 1 / base^(2i / d);
                      rope_type "linear" divides them by `factor` (Hugging Face's form;
                      vLLM divides the positions, the same angles up to one rounding);
                      "llama3" divides the long wavelengths by `factor` and blends the
                      band between `low_freq_factor` and `high_freq_factor` of
                      `original_max_position_embeddings` (with low == high the band is
                      empty, as vLLM takes it, where Hugging Face would divide by 0).
                      The names are those of a config's `rope_scaling`.
  alibi               bias[h, i, j] = slope_h * (j - i): Press et al.'s slopes
                      2^(-8 (h + 1) / n) for n heads a power of two; otherwise those of
                      the largest power of two c below n, then every other slope of 2c
                      heads (the paper's code and BLOOM's `build_alibi_tensor`).
  sinusoidal          Vaswani et al.: channel 2i = sin(p / base^(2i / dim)), channel
                      2i + 1 = cos of the same angle (the PyTorch tutorial's
                      `PositionalEncoding`, DistilBERT's `create_sinusoidal_embeddings`);
                      an odd dim ends with a sine."""
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


def inverse_frequencies(base, width, rope_type="default", factor=1.0, low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position_embeddings=8192, device=None):
    """float64 [ceil(width / 2)]: 1 / base^(2i / width), scaled as `rope_type` says."""
    inv = 1.0 / (base ** (torch.arange(0, width, 2, dtype=torch.float64, device=device) / width))
    if rope_type == "linear":
        inv = inv / factor
    elif rope_type == "llama3":
        old = original_max_position_embeddings
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / low_freq_factor, inv / factor, inv)
        if low_freq_factor == high_freq_factor:
            smooth = torch.zeros_like(inv)
        else:
            smooth = (old / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / high_freq_factor) & (wavelen <= old / low_freq_factor)
        inv = torch.where(medium, blended, scaled)
    elif rope_type != "default":
        raise ValueError(f"rope_type {rope_type!r}: expected default, linear or llama3")
    return inv


def rope_cos_sin_cache(*, base, rotary_dim, max_position, rope_type="default", factor=1.0, low_freq_factor=1.0,
                       high_freq_factor=4.0, original_max_position_embeddings=8192, device=None,
                       dtype=torch.float32):
    inv = inverse_frequencies(base, rotary_dim, rope_type, factor, low_freq_factor, high_freq_factor,
                              original_max_position_embeddings, device)
    freqs = torch.outer(torch.arange(max_position, dtype=torch.float64, device=device), inv)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(dtype)


def alibi_slopes(num_heads, device=None):
    """float64 [num_heads]: the ALiBi slope of each head."""
    if num_heads == 0:
        return torch.zeros(0, dtype=torch.float64, device=device)
    c = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * (h + 1) / c) for h in range(c)]
    slopes += [2.0 ** (-8.0 * (2 * k + 1) / (2 * c)) for k in range(num_heads - c)]
    return torch.tensor(slopes, dtype=torch.float64, device=device)


def alibi(*, num_heads, seq_len, device=None, dtype=torch.float32):
    pos = torch.arange(seq_len, dtype=torch.float64, device=device)
    distance = pos[None, :] - pos[:, None]   # [i, j] = j - i
    return (alibi_slopes(num_heads, device)[:, None, None] * distance).to(dtype)


def sinusoidal(*, seq_len, dim, base=10000.0, device=None, dtype=torch.float32):
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device),
                         inverse_frequencies(base, dim, device=device))
    table = torch.empty(seq_len, dim, dtype=torch.float64, device=device)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles.cos()[:, :dim // 2]
    return table.to(dtype)
