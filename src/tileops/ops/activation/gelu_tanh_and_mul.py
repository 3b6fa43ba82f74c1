"""GeluTanhAndMulFwdOp: y = gelu_tanh(a) * b, the tanh approximation, for x = [a, b] the halves of the last dimension."""
from __future__ import annotations

from ..op import Op
from . import gated_doc, gated_members


class GeluTanhAndMulFwdOp(Op):
    __doc__ = gated_doc("""y = gelu_tanh(a) * b: 0.5 a (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3))) * b""")
    kernel_types, interfaces, __init__, forward = gated_members("gelu_tanh_and_mul", __doc__)
    plan_kernel = "gelu_tanh_and_mul"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
