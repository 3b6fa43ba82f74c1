"""SiluAndMulFwdOp: y = silu(a) * b, for x = [a, b] the halves of the last dimension."""
from __future__ import annotations

from ..op import Op
from . import gated_doc, gated_members


class SiluAndMulFwdOp(Op):
    __doc__ = gated_doc("""y = silu(a) * b = a / (1 + exp(-a)) * b""")
    kernel_types, interfaces, __init__, forward = gated_members("silu_and_mul", __doc__)
    plan_kernel = "silu_and_mul"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
