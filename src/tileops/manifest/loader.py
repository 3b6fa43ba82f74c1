"""Loads manifest files (YAML, one per family) into Entry objects, once per file."""
from __future__ import annotations

import functools
import os

import yaml

from ..errors import ManifestError
from .schema import Entry, parse_entry

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def load_file(path: str) -> dict[str, Entry]:
    path = os.path.abspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ManifestError(f"manifest {path}: cannot read: {e}") from None
    if not isinstance(raw, dict):
        raise ManifestError(f"manifest {path}: expected a mapping of op class names to entries")
    # Top-level keys starting with "_" hold YAML anchors shared by entries, not entries.
    return {name: parse_entry(name, body, path) for name, body in raw.items() if not str(name).startswith("_")}


def package_files() -> list[str]:
    return sorted(os.path.join(PACKAGE_DIR, f) for f in os.listdir(PACKAGE_DIR) if f.endswith(".yaml"))


@functools.lru_cache(maxsize=None)
def package_entries() -> dict[str, Entry]:
    """Every entry of the package's own manifest files; a name defined twice is an error."""
    out: dict[str, Entry] = {}
    for path in package_files():
        for name, entry in load_file(path).items():
            if name in out:
                raise ManifestError(f"manifest: {name} is defined in both {out[name].source} and {path}")
            out[name] = entry
    return out


def find_entry(class_name: str, manifest: str | None = None) -> Entry:
    entries = load_file(manifest) if manifest else package_entries()
    if class_name not in entries:
        where = manifest or "the package manifest"
        raise ManifestError(f"manifest: no entry for op class {class_name} in {where}")
    return entries[class_name]
