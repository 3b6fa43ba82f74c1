"""The op layer: the Op base class, the generated boundary, one file per op."""
from .op import Op

__all__ = ["Op"]
