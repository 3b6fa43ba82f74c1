"""tileops.attention: attention (every implemented entry of manifest/attention.yaml)."""
from .ops import family_namespace

__getattr__, __dir__, __all__ = family_namespace("attention", __name__)
