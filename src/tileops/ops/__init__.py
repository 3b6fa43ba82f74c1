"""The op layer: the Op base class, the generated boundary, one file per op.

Ops are found from the manifest, never from a hand-kept list: entry `<Name>Op` of family
`<family>` lives in `tileops.ops.<family>.<module>`, where <module> is snake(<Name>) less
a trailing "_fwd" (RMSNormFwdOp -> tileops.ops.norm.rms_norm)."""
import importlib

from .boundary import snake
from .op import Op


def module_of(name: str, family: str) -> str:
    stem = snake(name[:-2] if name.endswith("Op") else name)
    if stem.endswith("_fwd"):
        stem = stem[:-4]
    return f"{__name__}.{family}.{stem}"


def implemented(family: str | None = None) -> list:
    """Names of the implemented entries of the package manifest (of one family)."""
    from ..manifest.loader import package_entries
    return [n for n, e in package_entries().items()
            if e.status == "implemented" and (family is None or e.family == family)]


def load(name: str):
    """The op class of entry `name`, importing its module."""
    from ..manifest.loader import package_entries
    entry = package_entries()[name]
    cls = getattr(importlib.import_module(module_of(name, entry.family)), name, None)
    if cls is None:
        raise ImportError(f"tileops: {module_of(name, entry.family)} defines no {name} (manifest {entry.source})")
    return cls


def family_namespace(family: str, module_name: str):
    """`__getattr__`, `__dir__` and `__all__` of a public family module (tileops.norm):
    its implemented ops, imported on first use."""
    names = implemented(family)

    def __getattr__(attr):
        if attr in names:
            return load(attr)
        raise AttributeError(f"module {module_name!r} has no attribute {attr!r}")

    def __dir__():
        return sorted(names)
    return __getattr__, __dir__, list(names)


__all__ = ["Op", "module_of", "implemented", "load", "family_namespace"]
