"""SoftmaxFwdOp: a sampler's probabilities, softmax(logits / temperature)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.sampling.softmax import SoftmaxInterface, SoftmaxKernel
from ..op import Op


class SoftmaxFwdOp(Op):
    """Softmax over the vocabulary of each row, after an optional per-row temperature, as
    ``torch.softmax(logits.float() / temperature[:, None], -1)`` computes it.

    Parameters
    ----------
    out_dtype : torch.dtype, optional
        The probabilities' dtype (float32, float16 or bfloat16); None: the logits' dtype.
        Samplers keep float32 probabilities of bfloat16 logits: ``out_dtype=torch.float32``.
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(logits, temperature=None, *, out=None)``: logits [B, V] (float32, float16,
    bfloat16), temperature float32 [B] or None. Returns probs [B, V] in out_dtype (new and
    contiguous, or `out` filled). Computed in float32: z = logits / temperature (the IEEE
    division torch makes), exp(z - max z) / sum (exp: a polynomial within 1.1 ulp on the
    CPU, ex2.approx on a GPU, which flushes an exp(z - max z) below 2^-126 to 0, so a
    probability under ~1.2e-38 may come out 0 there; within 1e-5 of the exact softmax of z
    either way): a row's
    bits do not depend on the other rows of the batch. On a GPU a row of a real vocabulary
    is split over a cluster of 8 CTAs that keep it on chip, so the logits are read once
    and the probabilities written once (csrc/ops/sampling/softmax.cu). A row holding a NaN or a +inf, or of -inf only, is NaN throughout,
    as torch gives it; any temperature is taken as torch takes it (0 or NaN give NaN rows:
    greedy rows belong to ArgmaxFwdOp).
    """

    kernel_types = {"softmax": SoftmaxKernel}
    interfaces = {"softmax": SoftmaxInterface}

    def __init__(self, out_dtype: torch.dtype | str | None = None, *, target: str | None = None) -> None:
        super().__init__(target=target)
        self.out_dtype = out_dtype

    def forward(self, logits: Tensor, temperature: Tensor | None = None, *, out: Tensor | None = None) -> Tensor:
        probs = self.allocate(logits, temperature, out=out)
        self._kernel_for("softmax", logits, temperature, probs)(logits, temperature, probs)
        return probs
