"""AlibiFwdOp: the ALiBi attention bias."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.positional.tables import AlibiInterface, AlibiKernel
from ..op import Op


class AlibiFwdOp(Op):
    """ALiBi's attention bias (Press et al.): float32 [num_heads, seq_len, seq_len],

        bias[h, i, j] = slope_h * (j - i)     (i the query's position, j the key's)

    so a key d positions behind its query is biased by -slope_h * d (the paper's
    m * [-(i - 1), ..., -1, 0]); keys ahead get +slope_h * d, which a causal mask removes.
    Add it to the attention scores q_i . k_j. slope_h = 2^(-8 (h + 1) / n) for n heads a
    power of two; otherwise the slopes of the largest power of two c below n, then every
    other slope of 2c heads, 2^(-8 (2k + 1) / (2c)) (the paper's code and BLOOM's
    `build_alibi_tensor`). BLOOM's tensor is slope_h * j over the keys alone, [heads, 1,
    seq_len]: it differs from row i of this one by slope_h * i, a constant per row that
    softmax ignores; MPT's symmetric -slope_h * |j - i| equals this one where j <= i.

    Parameters
    ----------
    num_heads : int
    seq_len : int
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(*, device=None)``: the bias on `device` (None: the CPU), a new tensor on
    every call. No tensor input, so no compile boundary: under
    ``torch.compile(fullgraph=True)`` the bias is computed by the kernel once when the call
    is traced, kept in the graph as a constant, and each compiled call returns a copy
    (bit for bit the eager result; guarded on the params).

    Numerics: slope_h in double (exact for num_heads a power of two up to 8; libm's or
    CUDA's exp2 otherwise), the product in double, rounded once to float32: within one
    float32 rounding of float64 math. BLOOM computes the slopes in float32 (a float32 base
    raised to integer powers), off by up to ~2e-6 relative for 32 heads.
    """

    kernel_types = {"alibi": AlibiKernel}
    interfaces = {"alibi": AlibiInterface}

    def __init__(self, num_heads: int, seq_len: int, *, target: str | None = None) -> None:
        self.num_heads = num_heads
        self.seq_len = seq_len
        super().__init__(target=target)

    def forward(self, *, device: torch.device | str | int | None = None) -> Tensor:
        bias = self.allocate(device=device)
        self._kernel_for("alibi", bias)(bias)
        return bias
