"""TopKTopPMaskFwdOp: vLLM's top-k / top-p filter of the logits, without a sort."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.sampling.top_k_top_p_mask import TopKTopPMaskInterface, TopKTopPMaskKernel
from ..op import Op


class TopKTopPMaskFwdOp(Op):
    """The logits outside each row's top-k and outside its top-p nucleus become -inf, as
    vLLM's ``apply_top_k_top_p`` (forward_native) makes them: sort ascending, mask below
    the k-th largest value (every value equal to it kept), softmax of what is left,
    cumulative sum, mask where it is <= 1 - p, the largest always kept. Kept logits keep
    their exact bits.

    Where vLLM leaves it open, defined: at the nucleus' edge, of equal values the lower
    index is kept first; k[r] <= 0 or k[r] >= V turns top-k off for row r, p[r] >= 1 (or
    NaN) turns top-p off (p <= 0 keeps the largest alone); k or p None turns the filter
    off for every row; a row holding a NaN comes out all NaN; top-p leaves a row alone
    whose largest kept logit is +inf or -inf (its softmax is undefined, and vLLM's
    comparisons with NaN mask nothing either).

    Call ``op(logits, k=None, p=None, *, inplace=False)``: logits [B, V] (float32,
    float16, bfloat16), k int32 or int64 [B], p float32 [B]. Returns the masked logits, new
    and contiguous; with inplace=True, the logits themselves (only masked elements are
    written). Neither kernel sorts: a radix selection finds the k-th largest value, a
    radix search over the values with each digit's probability mass (integer weights, so
    sums are exact in any order and a row's result does not depend on the batch) finds the
    nucleus' edge.
    """

    kernel_types = {"top_k_top_p_mask": TopKTopPMaskKernel}
    interfaces = {"top_k_top_p_mask": TopKTopPMaskInterface}

    def forward(self, logits: Tensor, k: Tensor | None = None, p: Tensor | None = None, *,
                inplace: bool = False) -> Tensor:
        masked = self.allocate(logits, k, p, inplace=inplace)
        self._kernel_for("top_k_top_p_mask", logits, k, p, masked)(logits, k, p, masked)
        return masked
