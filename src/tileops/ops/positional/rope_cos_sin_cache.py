"""RopeCosSinCacheFwdOp: vLLM's cos/sin cache, the table RopeFwdOp rotates by."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.positional.tables import RopeCosSinCacheInterface, RopeCosSinCacheKernel
from ..op import Op


class RopeCosSinCacheFwdOp(Op):
    """vLLM's rotary cos/sin cache: float32 [max_position, rotary_dim], row p = cos(p inv_i)
    for i < rotary_dim / 2, then sin(p inv_i), inv_i = 1 / base^(2i / rotary_dim) under
    Hugging Face's `rope_type`: exactly the `cos_sin_cache` RopeFwdOp takes.

    Parameters
    ----------
    base : float
        rope_theta, >= 1.
    rotary_dim : int
        Channels rotated, even, >= 2 (the table's width).
    max_position : int
        Rows (positions 0 .. max_position - 1).
    rope_type, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings
        A config's `rope_scaling`, by the names Hugging Face gives them, so that
        ``RopeCosSinCacheFwdOp(base=cfg.rope_theta, rotary_dim=head_dim,
        max_position=cfg.max_position_embeddings, **cfg.rope_scaling)`` takes a Llama-3.1
        config as it is (an older config's ``"type"`` key is ``rope_type``).
        "default" (factor unused); "linear": inv_i / factor (vLLM divides the positions
        instead: the same angles up to one rounding in double); "llama3": wavelengths
        2 pi / inv_i above original_max_position_embeddings / low_freq_factor divided by
        factor, below original_max_position_embeddings / high_freq_factor kept, the band
        between blended (smooth = (orig / wavelength - low) / (high - low); an empty band
        when low == high, as vLLM has it). factor > 0; for llama3
        0 < low_freq_factor <= high_freq_factor.
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(*, device=None)``: the cache on `device` (a torch.device, "cuda:1", an int;
    None: the CPU), a new tensor on every call, eager or compiled. There is no tensor
    input, so no compile boundary (``compile_op_names == ()``): eager calls run the C
    kernel (CPU) or the CUDA C kernel; under ``torch.compile(fullgraph=True)`` the cache
    is computed by the same kernel once when the call is traced and kept in the graph as
    a constant, and each compiled call returns a copy of it (bit for bit what eager
    returns; a caller may write into it). The trace is guarded on the params: assigning
    one makes the next compiled call trace again with the new cache.

    Numerics: the angle p * inv_i in double (inv_i from libm's / CUDA's pow, the scaling
    in double), its sine and cosine in double (tileops_sincos, within ~1 ulp of double),
    rounded once to float32: within one float32 rounding of the float64 reference
    (|error| <= 2^-24 + 1e-9 for the positions a table holds); the CPU and the GPU differ
    by at most one float32 ulp, where pow's last bit differs. vLLM and Hugging Face
    compute the angles in float32, which at position 10^5 is off by up to ~1e-2 rad: their
    caches differ from this one (and from float64 math) by that much.
    """

    kernel_types = {"rope_cos_sin_cache": RopeCosSinCacheKernel}
    interfaces = {"rope_cos_sin_cache": RopeCosSinCacheInterface}

    def __init__(self, base: float, rotary_dim: int, max_position: int, rope_type: str = "default",
                 factor: float = 1.0, low_freq_factor: float = 1.0, high_freq_factor: float = 4.0,
                 original_max_position_embeddings: int = 8192, *, target: str | None = None) -> None:
        self.base = base
        self.rotary_dim = rotary_dim
        self.max_position = max_position
        self.rope_type = rope_type
        self.factor = factor
        self.low_freq_factor = low_freq_factor
        self.high_freq_factor = high_freq_factor
        self.original_max_position_embeddings = original_max_position_embeddings
        super().__init__(target=target)

    def forward(self, *, device: torch.device | str | int | None = None) -> Tensor:
        cache = self.allocate(device=device)
        self._kernel_for("rope_cos_sin_cache", cache)(cache)
        return cache
