"""GemmaRMSNormFwdOp: y = x * rsqrt(mean(x^2) + eps) * (1 + weight) over the trailing dims
(Gemma's RMSNorm)."""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from ...kernels.norm.rows import family_kernel
from ..op import Op

_Interface, _Kernel = family_kernel("gemma_rms_norm", __doc__)


class GemmaRMSNormFwdOp(Op):
    """y = x * rsqrt(mean(x^2) + eps) * (1 + weight) over the trailing dims (Gemma's RMSNorm).

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The trailing dimensions normalised together (one "row").
    eps : float, default 1e-6
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, weight, *, out=None)``: tensors of one dtype (float32, float16, bfloat16)
    and device; x is
    (..., *normalized_shape), weight and bias are normalized_shape. Outputs are new and
    contiguous, unless the call writes them into its inputs or `out`.
    """

    kernel_types = {"gemma_rms_norm": _Kernel}
    plan_kernel = "gemma_rms_norm"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
    interfaces = {"gemma_rms_norm": _Interface}

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-6, *,
                 target: str | None = None) -> None:
        super().__init__(target=target)
        self.normalized_shape = normalized_shape
        self.eps = eps

    def forward(self, x: Tensor, weight: Tensor, *, out: Tensor | None = None) -> Tensor:
        outs = self.allocate(x, weight, out=out)
        self._kernel_for("gemma_rms_norm", x, weight, outs)(x, weight, outs)
        return outs
