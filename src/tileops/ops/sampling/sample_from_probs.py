"""SampleFromProbsFwdOp: vLLM's draw of a token, argmax(probs / q) with exponential noise q."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.sampling.sample_from_probs import SampleFromProbsInterface, SampleFromProbsKernel
from ..op import Op


class SampleFromProbsFwdOp(Op):
    """One token per row drawn from probs with the noise the caller gives, as vLLM's
    sampler draws it: ``(probs / q).argmax(-1)`` with ``q = torch.empty_like(probs,
    dtype=torch.float32).exponential_()`` (a token i with probability probs[i] / sum
    probs). Deterministic given q: the same q gives the same tokens, and a row's token
    does not depend on the other rows.

    Call ``op(probs, q)``: probs [B, V] (float32, float16, bfloat16; need not sum to 1),
    q float32 [B, V]. Returns token int64 [B]: the lowest index of the largest probs / q
    (an IEEE float32 division) among the ratios > 0; a NaN, zero or negative ratio never
    wins (unlike torch.argmax, for which NaN is the maximum); -1 for a row where no ratio
    is > 0 (probabilities all zero or NaN, e.g. the softmax of a row of -inf).
    """

    kernel_types = {"sample_from_probs": SampleFromProbsKernel}
    interfaces = {"sample_from_probs": SampleFromProbsInterface}

    def forward(self, probs: Tensor, q: Tensor) -> Tensor:
        token = self.allocate(probs, q)
        self._kernel_for("sample_from_probs", probs, q, token)(probs, q, token)
        return token
