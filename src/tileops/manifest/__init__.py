"""The manifest: one YAML file per family, the single source of truth for each op's
signature. `python -m tileops.manifest validate` checks every implemented entry against
its op class."""
from .loader import find_entry, load_file, package_entries
from .schema import Entry

__all__ = ["Entry", "find_entry", "load_file", "package_entries"]
