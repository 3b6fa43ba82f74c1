"""tileops.norm: normalisation ops."""
from .ops.norm import RMSNormFwdOp

__all__ = ["RMSNormFwdOp"]
