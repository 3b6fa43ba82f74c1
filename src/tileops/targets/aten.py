"""The `aten` target: every op served by its reference (the manifest's `ref_api`, written
with torch operations in tileops.reference). It runs on any device torch supports (CPU,
CUDA, MPS, ...); what it computes is what the generic tests compare every target with."""
from __future__ import annotations

import functools

from ..reference import resolve
from .base import BuilderTarget


def _build_reference(ref):
    def build(inputs, params):
        return functools.partial(ref, **params)
    return build


class AtenTarget(BuilderTarget):
    """Chosen by name only (or when no target claims a device). Serves every implemented
    entry with a ref_api; nothing is written per op."""

    def __init__(self):
        super().__init__("aten", {})

    def serves(self, op_cls):
        entry = getattr(op_cls, "_entry", None)
        return entry is not None and bool(entry.ref_api)

    def builder_for(self, op_name, name):
        from ..manifest.loader import package_entries
        entry = package_entries().get(op_name)
        if entry is None or not entry.ref_api:
            return None
        return _build_reference(resolve(entry.ref_api))
