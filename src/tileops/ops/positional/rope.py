"""RopeFwdOp: rotary position embeddings of q and k, vLLM's layout."""
from __future__ import annotations

from torch import Tensor

from ...kernels.positional.rope import RopeInterface, RopeKernel
from ..op import Op


class RopeFwdOp(Op):
    """Rotates the first `rotary_dim` channels of every head of q and k by the cos/sin row
    of each token's position (the rest pass through), as vLLM's rotary embedding does.

    Parameters
    ----------
    head_size : int
        Channels per head (q's and k's last dimension).
    rotary_dim : int
        Channels rotated, even, 2 <= rotary_dim <= head_size (partial rotary below it).
    is_neox : bool, default True
        NeoX style (the two halves of the rotated channels rotate against each other) or,
        False, GPT-J style (interleaved pairs 2i, 2i + 1).
    cast_cos_sin : bool, default False
        Compute in q's dtype as torch eager computes Hugging Face's
        ``q * cos + rotate_half(q) * sin`` with cos and sin cast to that dtype: the cache's
        values rounded to the dtype, each product rounded, then the sum. False: float32,
        one rounding (vLLM's arithmetic).
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(q, k, positions, cos_sin_cache, *, inplace=False)``: q [T, H, head_size] and
    k [T, H_kv, head_size] of one dtype (float32, float16, bfloat16; any token and head
    strides with unit channel stride: views into a packed qkv tensor are read in place),
    positions int32 or int64 [T], cos_sin_cache float32 [max_position, rotary_dim] (cos
    half, then sin half). Returns (q_out, k_out), new and contiguous; with inplace=True,
    q and k themselves, written through their views. A position outside
    [0, max_position) raises on the CPU (nothing written); on a GPU, where checking costs
    a synchronisation, that token's rotated channels come out NaN.
    """

    kernel_types = {"rope": RopeKernel}
    interfaces = {"rope": RopeInterface}

    def __init__(self, head_size: int, rotary_dim: int, is_neox: bool = True, cast_cos_sin: bool = False, *,
                 target: str | None = None) -> None:
        super().__init__(target=target)
        self.head_size = head_size
        self.rotary_dim = rotary_dim
        self.is_neox = is_neox
        self.cast_cos_sin = cast_cos_sin

    def forward(self, q: Tensor, k: Tensor, positions: Tensor, cos_sin_cache: Tensor, *,
                inplace: bool = False) -> tuple[Tensor, Tensor]:
        q_out, k_out = self.allocate(q, k, positions, cos_sin_cache, inplace=inplace)
        self._kernel_for("rope", q, k, positions, cos_sin_cache, q_out, k_out)(q, k, positions, cos_sin_cache,
                                                                             q_out, k_out)
        return q_out, k_out
