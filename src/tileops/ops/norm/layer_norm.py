"""LayerNormFwdOp: y = (x - mean) * rsqrt(var + eps) * weight + bias over the trailing dims
(torch.nn.functional.layer_norm)."""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from ...kernels.norm.rows import family_kernel
from ..op import Op

_Interface, _Kernel = family_kernel("layer_norm", __doc__)


class LayerNormFwdOp(Op):
    """y = (x - mean) * rsqrt(var + eps) * weight + bias over the trailing dims
    (torch.nn.functional.layer_norm).

    Parameters
    ----------
    normalized_shape : int or tuple of int
        The trailing dimensions normalised together (one "row").
    eps : float, default 1e-5
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, weight=None, bias=None, *, out=None)``: tensors of one dtype (float32,
    float16, bfloat16) and device; x is
    (..., *normalized_shape), weight and bias are normalized_shape. Outputs are new and
    contiguous, unless the call writes them into its inputs or `out`.
    """

    kernel_types = {"layer_norm": _Kernel}
    plan_kernel = "layer_norm"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
    interfaces = {"layer_norm": _Interface}

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, *,
                 target: str | None = None) -> None:
        super().__init__(target=target)
        self.normalized_shape = normalized_shape
        self.eps = eps

    def forward(self, x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, *,
                out: Tensor | None = None) -> Tensor:
        outs = self.allocate(x, weight, bias, out=out)
        self._kernel_for("layer_norm", x, weight, bias, outs)(x, weight, bias, outs)
        return outs
