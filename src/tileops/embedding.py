"""tileops.embedding: embedding lookup (every implemented entry of manifest/embedding.yaml)."""
from .ops import family_namespace

__getattr__, __dir__, __all__ = family_namespace("embedding", __name__)
