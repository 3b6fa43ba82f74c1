"""RMSNormFwdOp: y = x * rsqrt(mean(x^2 over normalized_shape) + eps) * weight."""
from __future__ import annotations

from ...kernels.norm.rms_norm import (RMSNormFwdInterface, RMSNormKernel, RMSNormOnChipKernel,
                                     RMSNormStreamingKernel)
from ..op import Op


class RMSNormFwdOp(Op):
    """Root-mean-square normalisation over the trailing `normalized_shape` dimensions.

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The trailing dimensions normalised together (one "row").
    eps : float, optional
        Added to the mean square; None takes ``torch.finfo(x.dtype).eps`` like
        ``torch.nn.functional.rms_norm``.
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, weight=None)``: x is (..., *normalized_shape) in float32, float16 or
    bfloat16; weight is normalized_shape in x's dtype. Returns a new contiguous tensor of
    x's shape and dtype.
    """

    kernel_types = {
        "rms_norm": RMSNormKernel,
        "rms_norm_on_chip": RMSNormOnChipKernel,
        "rms_norm_streaming": RMSNormStreamingKernel,
    }
    interfaces = {"rms_norm": RMSNormFwdInterface}

    def __init__(self, normalized_shape, eps=None, *, target=None):
        super().__init__(target=target)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps = None if eps is None else float(eps)

    def forward(self, x, weight=None):
        # What selection and the build identity depend on, beyond the params: dtype,
        # device, whether there is a weight, and the inputs' 16-byte alignment (not the
        # number of rows, which only sizes the grid).
        if weight is None:
            key = (x.dtype, x.device, False, x.data_ptr() & 15)
        else:
            key = (x.dtype, x.device, True, (x.data_ptr() | weight.data_ptr()) & 15)
        return self.kernel_for("rms_norm", x, weight, memo_key=key)(x, weight)
