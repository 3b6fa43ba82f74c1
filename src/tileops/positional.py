"""tileops.positional: positional encodings (every implemented entry of manifest/positional.yaml)."""
from .ops import family_namespace

__getattr__, __dir__, __all__ = family_namespace("positional", __name__)
