"""The activation family's ops, one file each (found by name: <snake op without Fwd>.py).

The gated ops (silu_and_mul.py, gelu_and_mul.py, gelu_tanh_and_mul.py) differ only in the
activation: each class takes its docstring from `gated_doc` and its kernel tables,
`forward` from `gated_members`. They have no constructor params: Op.__init__ (target=
only) is theirs."""
from __future__ import annotations

from torch import Tensor

from ...kernels.activation.gated import gated_kernel

_CALL = """,
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


def gated_doc(formula: str) -> str:
    """The docstring of a gated op whose activation `formula` gives."""
    return formula + _CALL


def gated_members(op: str, doc: str):
    """(kernel_types, interfaces, forward) of the gated op `op` (its C and CUDA C name):
    forward(x, *, out=None) allocates y and launches."""
    interface, kernel = gated_kernel(op, doc)

    def forward(self, x: Tensor, *, out: Tensor | None = None) -> Tensor:
        y = self.allocate(x, out=out)
        self._kernel_for(op, x, y)(x, y)
        return y
    return {op: kernel}, {op: interface}, forward
