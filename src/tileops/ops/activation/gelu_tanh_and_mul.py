"""GeluTanhAndMulFwdOp: y = gelu_tanh(a) * b, the tanh approximation, for x = [a, b] the halves of the last dimension."""
from __future__ import annotations

from ...kernels.activation.gated import gated_kernel
from ..op import Op

_Interface, _Kernel = gated_kernel("gelu_tanh_and_mul", __doc__)


class GeluTanhAndMulFwdOp(Op):
    """y = gelu_tanh(a) * b: 0.5 a (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3))) * b,
    for x = [a, b] split in halves along the last dimension (vLLM's and FlashInfer's
    convention: the first half goes through the activation).

    Parameters
    ----------
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, *, out=None)``: x of float32, float16 or bfloat16, at least one dimension,
    the last even (2N); y is x.shape[:-1] + (N,), computed in float32 and rounded once to
    x's dtype. y is new and contiguous, unless the call writes it into `out`.
    """

    kernel_types = {"gelu_tanh_and_mul": _Kernel}
    interfaces = {"gelu_tanh_and_mul": _Interface}

    def __init__(self, *, target=None):
        super().__init__(target=target)

    def forward(self, x, *, out=None):
        y = self.allocate(x, out=out)
        self.kernel_for("gelu_tanh_and_mul", x, y)(x, y)
        return y
