"""tileops.sampling: the sampler's ops (every implemented entry of manifest/sampling.yaml)."""
from .ops import family_namespace

__getattr__, __dir__, __all__ = family_namespace("sampling", __name__)
