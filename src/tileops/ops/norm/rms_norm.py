"""RMSNormFwdOp: y = x * rsqrt(mean(x^2 over normalized_shape) + eps) * weight."""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from ...kernels.norm.rms_norm import (RMSNormCastKernel, RMSNormFwdInterface, RMSNormKernel, RMSNormOnChipKernel,
                                     RMSNormStreamingKernel)
from ..op import Op


class RMSNormFwdOp(Op):
    """Root-mean-square normalisation over the trailing `normalized_shape` dimensions.

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The trailing dimensions normalised together (one "row").
    eps : float, optional
        Added to the mean square; None takes ``torch.finfo(torch.float32).eps``, as
        ``torch.nn.functional.rms_norm`` does for float32, float16 and bfloat16 inputs.
    cast_before_weight : bool, default False
        Hugging Face's arithmetic (LlamaRMSNorm, Qwen2RMSNorm): the mean square, + eps and
        the reciprocal square root in float32 steps as torch eager takes them, the
        normalised value rounded to x's dtype, then multiplied by the weight and rounded
        again (``weight * hidden.to(input_dtype)``). False: F.rms_norm's single rounding.
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, weight=None, *, out=None)``: x is (..., *normalized_shape) in float32,
    float16 or bfloat16; weight is normalized_shape in x's dtype. Returns a new contiguous
    tensor of x's shape and dtype, or `out` filled.
    """

    kernel_types = {
        "rms_norm": RMSNormKernel,
        "rms_norm_on_chip": RMSNormOnChipKernel,
        "rms_norm_streaming": RMSNormStreamingKernel,
        "rms_norm_cast": RMSNormCastKernel,
    }
    plan_kernel = "rms_norm"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
    interfaces = {"rms_norm": RMSNormFwdInterface}

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 cast_before_weight: bool = False, *, target: str | None = None) -> None:
        super().__init__(target=target)
        self.normalized_shape = normalized_shape
        self.eps = eps
        self.cast_before_weight = cast_before_weight

    def forward(self, x: Tensor, weight: Tensor | None = None, *, out: Tensor | None = None) -> Tensor:
        y = self.allocate(x, weight, out=out)
        self._kernel_for("rms_norm", x, weight, y)(x, weight, y)
        return y
