"""ArgmaxFwdOp: greedy decoding's token, argmax over the vocabulary."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.sampling.argmax import ArgmaxInterface, ArgmaxKernel
from ..op import Op


class ArgmaxFwdOp(Op):
    """The index of each row's largest logit, as ``torch.argmax(logits, -1)`` gives it:
    the lowest index of the maximum; a NaN counts as the maximum (the first NaN of a row
    that has one); -0.0 equals 0.0.

    Call ``op(logits)``: logits [B, V] (float32, float16, bfloat16), V >= 1. Returns token
    int64 [B], the same for a row whatever else is in the batch.
    """

    kernel_types = {"argmax": ArgmaxKernel}
    interfaces = {"argmax": ArgmaxInterface}

    def forward(self, logits: Tensor) -> Tensor:
        token = self.allocate(logits)
        self._kernel_for("argmax", logits, token)(logits, token)
        return token
