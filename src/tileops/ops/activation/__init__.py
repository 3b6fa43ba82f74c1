"""The activation family's ops, one file each (found by name: <snake op without Fwd>.py).

The gated ops (silu_and_mul.py, gelu_and_mul.py, gelu_tanh_and_mul.py) differ only in the
activation: each class takes its docstring from `gated_doc` and its kernel tables,
`__init__` and `forward` from `gated_members`. Their one constructor param,
cast_before_mul, is torch eager's arithmetic in the dtype (Hugging Face's
`act_fn(gate) * up`: act(a) rounded to x's dtype, then the product rounded again)."""
from __future__ import annotations

from torch import Tensor

from ...kernels.activation.gated import gated_kernel
from ..op import Op

_CALL = """,
    for x = [a, b] split in halves along the last dimension (vLLM's and FlashInfer's
    convention: the first half goes through the activation).

    Parameters
    ----------
    cast_before_mul : bool, default False
        Round act(a) to x's dtype before the product, as torch eager computes
        ``act(a) * b`` in a 16-bit dtype (Hugging Face's MLP); False rounds once.
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(x, *, out=None)``: x of float32, float16 or bfloat16, at least one dimension,
    the last even (2N); y is x.shape[:-1] + (N,), computed in float32 and rounded once to
    x's dtype (twice with cast_before_mul). y is new and contiguous, unless the call writes it into `out`.
    """


def gated_doc(formula: str) -> str:
    """The docstring of a gated op whose activation `formula` gives."""
    return formula + _CALL


def gated_members(op: str, doc: str):
    """(kernel_types, interfaces, __init__, forward) of the gated op `op` (its C and CUDA C
    name): forward(x, *, out=None) allocates y and launches."""
    interface, kernel = gated_kernel(op, doc)

    def __init__(self, cast_before_mul: bool = False, *, target: str | None = None) -> None:
        Op.__init__(self, target=target)
        self.cast_before_mul = cast_before_mul

    def forward(self, x: Tensor, *, out: Tensor | None = None) -> Tensor:
        y = self.allocate(x, out=out)
        self._kernel_for(op, x, y)(x, y)
        return y
    return {op: kernel}, {op: interface}, __init__, forward
