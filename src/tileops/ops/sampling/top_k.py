"""TopKFwdOp: the k largest logits of each row and their indices."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.sampling.top_k import TopKInterface, TopKKernel
from ..op import Op


class TopKFwdOp(Op):
    """The k largest logits of each row, largest first, as ``torch.topk(logits, k)``
    gives them, with the order among equal values defined: the lower index first (a
    stable descending sort cut at k; torch.topk leaves it unspecified). NaN is the
    largest value, -0.0 equals 0.0; values are copied bit for bit.

    Parameters
    ----------
    k : int
        How many per row, 0 <= k <= V. On a GPU, k <= 16384 (the selected are sorted in
        shared memory; a larger k is refused naming the limit).
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(logits, *, return_values=True)``: logits [B, V] (float32, float16,
    bfloat16). Returns (values [B, k] of the logits' dtype, indices int64 [B, k]); with
    return_values=False, the indices alone (the values are not written at all).
    """

    kernel_types = {"top_k": TopKKernel}
    interfaces = {"top_k": TopKInterface}

    def __init__(self, k: int, *, target: str | None = None) -> None:
        super().__init__(target=target)
        self.k = k

    def forward(self, logits: Tensor, *, return_values: bool = True) -> Tensor | tuple[Tensor, Tensor]:
        values, indices = self.allocate(logits, return_values=return_values)
        self._kernel_for("top_k", logits, values, indices)(logits, values, indices)
        return values, indices
