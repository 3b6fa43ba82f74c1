"""FusedAddRMSNormFwdOp: residual_out = x + residual (in x's dtype); y = rms_norm(residual_out)
* weight. Returns (y, residual_out); inplace=True writes them into x and residual (vLLM's
convention)."""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from ...kernels.norm.rows import family_kernel
from ..op import Op

_Interface, _Kernel = family_kernel("fused_add_rms_norm", __doc__)


class FusedAddRMSNormFwdOp(Op):
    """residual_out = x + residual (in x's dtype); y = rms_norm(residual_out) * weight.
    Returns (y, residual_out); inplace=True writes them into x and residual (vLLM's
    convention).

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The trailing dimensions normalised together (one "row").
    eps : float, optional: None is torch.finfo(torch.float32).eps
    cast_before_weight : bool, default False
        Hugging Face's arithmetic for the norm (RMSNormFwdOp's parameter of that name).
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, residual, weight=None, *, inplace=False)``: tensors of one dtype (float32,
    float16, bfloat16) and device; x is
    (..., *normalized_shape), weight and bias are normalized_shape. Outputs are new and
    contiguous, unless the call writes them into its inputs or `out`.
    """

    kernel_types = {"fused_add_rms_norm": _Kernel}
    plan_kernel = "fused_add_rms_norm"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
    interfaces = {"fused_add_rms_norm": _Interface}

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 cast_before_weight: bool = False, *, target: str | None = None) -> None:
        super().__init__(target=target)
        self.normalized_shape = normalized_shape
        self.eps = eps
        self.cast_before_weight = cast_before_weight

    def forward(self, x: Tensor, residual: Tensor, weight: Tensor | None = None, *,
                inplace: bool = False) -> tuple[Tensor, Tensor]:
        outs = self.allocate(x, residual, weight, inplace=inplace)
        tensors = (x, residual, weight, *outs)
        self._kernel_for("fused_add_rms_norm", *tensors)(*tensors)
        return outs
