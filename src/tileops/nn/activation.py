"""The gated MLP activations: y = act(a) * b for x = [a, b], the halves of x's last
dimension (vLLM's SiluAndMul / GeluAndMul convention). No parameters.

`cast_before_mul=True` is torch eager's arithmetic in the input dtype, as Hugging Face's
MLP computes `act_fn(gate) * up`: act(a) rounded to the dtype, then the product rounded
again. The default rounds once, from float32."""
from __future__ import annotations

from ..ops.activation.gelu_and_mul import GeluAndMulFwdOp
from ..ops.activation.gelu_tanh_and_mul import GeluTanhAndMulFwdOp
from ..ops.activation.silu_and_mul import SiluAndMulFwdOp
from ._base import OpModule


class SiluAndMul(OpModule):
    """y = silu(a) * b for x = [a, b] (SwiGLU's gate: Llama, Qwen2, Mistral)."""

    op_class = SiluAndMulFwdOp
    op_params = (("cast_before_mul", "cast_before_mul"),)

    def __init__(self, *, cast_before_mul=False, target=None):
        super().__init__()
        self.target = target
        self.cast_before_mul = cast_before_mul

    def forward(self, x, *, out=None):
        return self._op(x, out=out)

    def extra_repr(self):
        return "cast_before_mul=True" if self.cast_before_mul else ""


class GeluAndMul(OpModule):
    """y = gelu(a) * b for x = [a, b] (GeGLU); approximate "none" (erf) or "tanh", as
    torch.nn.GELU takes it."""

    op_params = (("cast_before_mul", "cast_before_mul"),)

    def __init__(self, approximate="none", *, cast_before_mul=False, target=None):
        super().__init__()
        self.approximate = approximate
        self.target = target
        self.cast_before_mul = cast_before_mul

    def __setattr__(self, name, value):
        if name == "approximate":   # picks the op: assigned later, it takes the other op (as torch.nn.GELU does)
            if value not in ("none", "tanh"):
                from ..errors import InputValueError
                raise InputValueError(f"GeluAndMul: approximate: expected 'none' or 'tanh', got {value!r}")
            object.__setattr__(self, "op_class", GeluAndMulFwdOp if value == "none" else GeluTanhAndMulFwdOp)
            object.__setattr__(self, "approximate", value)
            self._refresh_op()
            return
        super().__setattr__(name, value)

    def forward(self, x, *, out=None):
        return self._op(x, out=out)

    def extra_repr(self):
        return f"approximate={self.approximate!r}" + (", cast_before_mul=True" if self.cast_before_mul else "")
