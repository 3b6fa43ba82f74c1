"""EmbeddingFwdOp: y[i] = weight[ids[i]]."""
from __future__ import annotations

from torch import Tensor

from ...kernels.embedding.embedding import EmbeddingInterface, EmbeddingKernel
from ..op import Op


class EmbeddingFwdOp(Op):
    """Rows of `weight` gathered by token id, as ``torch.nn.functional.embedding``.

    Call ``op(ids, weight, *, out=None)``: ids int32 or int64 of any shape, weight
    [V, H] in float32, float16 or bfloat16. Returns a new contiguous tensor
    ids.shape + (H,) of weight's dtype, or `out` filled. An id outside [0, V) raises on
    the CPU (naming the index and the value; nothing written); on a GPU, where checking
    costs a synchronisation, that id's output row is NaN.
    """

    kernel_types = {"embedding": EmbeddingKernel}
    interfaces = {"embedding": EmbeddingInterface}
    plan_kernel = "embedding"   # forward: allocate, then this one launch (eager CPU calls replay a plan)

    def forward(self, ids: Tensor, weight: Tensor, *, out: Tensor | None = None) -> Tensor:
        y = self.allocate(ids, weight, out=out)
        self._kernel_for("embedding", ids, weight, y)(ids, weight, y)
        return y
