"""tileops.positional: positional encodings (every implemented entry of manifest/positional.yaml)."""
from typing import TYPE_CHECKING

from .ops import family_namespace

if TYPE_CHECKING:  # the ops are found from the manifest: a type checker sees op classes
    from .ops import Op

    def __getattr__(name: str) -> type[Op]: ...
else:
    __getattr__, __dir__, __all__ = family_namespace("positional", __name__)
