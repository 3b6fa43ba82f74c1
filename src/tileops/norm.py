"""tileops.norm: normalisation ops (every implemented entry of manifest/norm.yaml)."""
from .ops import family_namespace

__getattr__, __dir__, __all__ = family_namespace("norm", __name__)
