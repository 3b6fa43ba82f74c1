"""Targets: which set of kernels serves an op instance.

  builtin   in-tree: C kernels for CPU tensors, CUDA C kernels (NVRTC) for CUDA tensors
  aten      shipped reference: every op built from torch operations; runs wherever torch runs
  plugins   packages registering under the entry-point group `tileops.targets`

Selection, for an instance on its first call (inside the node): `target=` given to the
constructor, else `set_default_target(...)`, else detection: the one target whose detector
claims the input's device (two claiming one device is an error asking for `target=`; none
claiming falls back to `aten`). The compiled graph is the same whichever target serves: the
node belongs to the op, not to the target."""
from __future__ import annotations

import importlib.metadata
import threading

import torch

from ..errors import TargetError
from .base import Target
from .builtin import BuiltinTarget
from .aten import AtenTarget

ENTRY_POINT_GROUP = "tileops.targets"

_lock = threading.RLock()
_targets: dict[str, Target] = {}
_failures: list[tuple[str, str]] = []
_plugins_loaded = False
_default: str | None = None


def _register_builtin():
    for t in (BuiltinTarget(), AtenTarget()):
        _targets[t.name] = t


_register_builtin()


def register(target: Target):
    """Registers a target object (plugins do this through their entry point)."""
    with _lock:
        if target.name in _targets and _targets[target.name] is not target:
            raise TargetError(f"a target named {target.name!r} is already registered")
        _targets[target.name] = target


def unregister(name: str):
    """Removes a target registered with register() (the shipped ones stay)."""
    with _lock:
        if name in ("builtin", "aten"):
            raise TargetError(f"the shipped target {name!r} cannot be removed")
        _targets.pop(name, None)


def _load_plugins():
    global _plugins_loaded
    with _lock:
        if _plugins_loaded:
            return
        _plugins_loaded = True
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                obj = ep.load()
                target = obj() if isinstance(obj, type) else obj
                if callable(target) and not isinstance(target, Target) and not hasattr(target, "detect"):
                    target = target()
                target = PluginTarget.wrap(target, ep.name)
                register(target)
            except Exception as e:  # recorded and reported, never fatal to the others
                _failures.append((ep.name, f"{type(e).__name__}: {e}"))


def load_failures() -> list[tuple[str, str]]:
    """(entry point name, error) for each plugin that failed to load."""
    _load_plugins()
    return list(_failures)


def names() -> list[str]:
    _load_plugins()
    return sorted(_targets)


def all_targets() -> list[Target]:
    _load_plugins()
    return [_targets[n] for n in sorted(_targets)]


def get(name: str) -> Target:
    _load_plugins()
    t = _targets.get(name)
    if t is None:
        raise TargetError(f"unknown target {name!r}; known targets: {', '.join(sorted(_targets))}")
    return t


def set_default_target(name: str | None):
    """Target for instances constructed without `target=` (None: detect from the device).
    Takes effect for instances not yet resolved."""
    global _default
    if name is not None:
        get(name)
    _default = name


def default_target() -> str | None:
    return _default


def detect(device: torch.device) -> Target:
    _load_plugins()
    claiming = [t for t in _targets.values() if t.claims(device)]
    if len(claiming) > 1:
        raise TargetError(
            f"targets {sorted(t.name for t in claiming)} all claim device {device}; "
            f"choose one with target=... or tileops.set_default_target(...)")
    if claiming:
        return claiming[0]
    return _targets["aten"]


def resolve(op, device: torch.device) -> Target:
    name = op._target_request or _default
    target = get(name) if name else detect(device)
    if not target.serves(type(op)):
        raise TargetError(f"target {target.name!r} has no implementation of {type(op).__name__}")
    return target


class PluginTarget(Target):
    """Adapts a plugin object: `name`, `detect(device) -> bool`, `builders` {op name: builder}."""

    def __init__(self, obj, ep_name):
        self.obj = obj
        self.name = getattr(obj, "name", ep_name)
        builders = getattr(obj, "builders", None)
        if not isinstance(builders, dict):
            raise TargetError(f"plugin {ep_name}: expected a dict attribute `builders`")
        self.builders = builders

    @staticmethod
    def wrap(obj, ep_name):
        return obj if isinstance(obj, Target) else PluginTarget(obj, ep_name)

    def claims(self, device):
        detect = getattr(self.obj, "detect", None)
        return bool(detect(device)) if detect else False

    def serves(self, op_cls):
        return op_cls.__name__ in self.builders or any(k.startswith(op_cls.__name__ + ".") for k in self.builders)

    def kernel_for(self, op, name, call):
        builder = self.builders.get(f"{type(op).__name__}.{name}") or self.builders.get(type(op).__name__)
        if builder is None:
            raise TargetError(f"target {self.name!r} has no builder for {type(op).__name__}")
        table_key = ("plugin", name, call.device, tuple(call.inputs.items()))
        fn = op._kernels.get(table_key)
        if fn is None:
            fn = builder(dict(call.inputs), dict(call.params))
            if not callable(fn):
                raise TargetError(f"target {self.name!r}: builder for {type(op).__name__} returned {fn!r}, not a callable")
            fn = checked_outputs(fn, self.name, type(op).__name__, call.device)
            op._kernels[table_key] = fn
        return fn


def checked_outputs(fn, target_name, op_name, device):
    """Wraps an external builder's callable: every tensor it returns must be contiguous and
    on the inputs' device, as the manifest's fake declares (the compiled graph relies on
    it); a target that breaks this fails loudly, naming itself."""
    def run(*args, **kwargs):
        res = fn(*args, **kwargs)
        for t in (res if isinstance(res, tuple) else (res,)):
            if isinstance(t, torch.Tensor) and (not t.is_contiguous() or t.device != device):
                raise TargetError(
                    f"target {target_name!r} returned for {op_name} a tensor with strides {t.stride()} on "
                    f"{t.device}; outputs must be contiguous on {device}, as the manifest declares")
        return res
    return run


__all__ = ["Target", "register", "unregister", "load_failures", "names", "get", "set_default_target",
           "default_target", "detect", "resolve", "all_targets", "ENTRY_POINT_GROUP"]
