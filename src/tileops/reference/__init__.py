"""References: each op written with torch operations, as a user would write it.

The manifest's `ref_api` names one of these functions. They are what the generic test
driver compares every target with (run in float64), what the `aten` target serves, and
what the benchmark times as "torch" and compiles as "torch.compile". Each takes the op's
inputs in the manifest's order and its constructor params (defaults resolved) by keyword,
and returns the op's outputs in the manifest's order."""
import importlib


def resolve(path: str):
    """The function a dotted `ref_api` path names."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)
