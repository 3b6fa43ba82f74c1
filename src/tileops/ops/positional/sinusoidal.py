"""SinusoidalFwdOp: the Transformer's sinusoidal positional table."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.positional.tables import SinusoidalInterface, SinusoidalKernel
from ..op import Op


class SinusoidalFwdOp(Op):
    """The positional table of Vaswani et al.: float32 [seq_len, dim], channel 2i of row p
    = sin(p / base^(2i / dim)), channel 2i + 1 = cos of the same angle (an odd dim ends
    with a sine). This is the paper's interleaved layout, as the PyTorch tutorial's
    `PositionalEncoding` and DistilBERT's `create_sinusoidal_embeddings` build it, not the
    concatenated [sin | cos] halves of fairseq's `SinusoidalPositionalEmbedding` (whose
    frequencies also differ: base^(-i / (dim/2 - 1))).

    Parameters
    ----------
    seq_len : int
        Rows (positions 0 .. seq_len - 1), <= 2^50.
    dim : int
        Channels.
    base : float, default 10000.0
        >= 1.
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(*, device=None)``: the table on `device` (None: the CPU), a new tensor on
    every call. No tensor input, so no compile boundary: under
    ``torch.compile(fullgraph=True)`` the table is computed by the kernel once when the
    call is traced, kept in the graph as a constant, and each compiled call returns a copy
    (bit for bit the eager result; guarded on the params). Numerics as
    RopeCosSinCacheFwdOp's: the angle and its sine and cosine in double, rounded once to
    float32 (within one float32 rounding of float64 math; CPU and GPU within one ulp).
    """

    kernel_types = {"sinusoidal": SinusoidalKernel}
    interfaces = {"sinusoidal": SinusoidalInterface}

    def __init__(self, seq_len: int, dim: int, base: float = 10000.0, *, target: str | None = None) -> None:
        self.seq_len = seq_len
        self.dim = dim
        self.base = base
        super().__init__(target=target)

    def forward(self, *, device: torch.device | str | int | None = None) -> Tensor:
        table = self.allocate(device=device)
        self._kernel_for("sinusoidal", table)(table)
        return table
