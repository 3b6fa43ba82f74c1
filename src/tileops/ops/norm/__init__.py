from .rms_norm import RMSNormFwdOp

__all__ = ["RMSNormFwdOp"]
