"""GeluAndMulFwdOp: y = gelu(a) * b, the exact (erf) gelu, for x = [a, b] the halves of the last dimension."""
from __future__ import annotations

from ..op import Op
from . import gated_doc, gated_members


class GeluAndMulFwdOp(Op):
    __doc__ = gated_doc("""y = gelu(a) * b with the exact (erf) gelu: 0.5 a (1 + erf(a / sqrt 2)) * b""")
    kernel_types, interfaces, __init__, forward = gated_members("gelu_and_mul", __doc__)
    plan_kernel = "gelu_and_mul"   # forward: allocate, then this one launch (eager CPU calls replay a plan)
