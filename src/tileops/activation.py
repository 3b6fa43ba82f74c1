"""tileops.activation: gated activation ops (every implemented entry of manifest/activation.yaml)."""
from .ops import family_namespace

__getattr__, __dir__, __all__ = family_namespace("activation", __name__)
