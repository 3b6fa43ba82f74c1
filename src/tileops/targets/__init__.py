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
from .base import BuilderTarget, Target
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
                register(_plugin_target(ep.load(), ep.name))
            except Exception as e:  # recorded and reported, never fatal to the others
                _failures.append((ep.name, f"{type(e).__name__}: {e}"))


def _plugin_target(obj, ep_name) -> Target:
    """An entry point names a Target, or an object (or class) with `name`, `builders`
    ({op class name: builder}) and optionally `detect(device) -> bool`."""
    if isinstance(obj, type):
        obj = obj()
    if isinstance(obj, Target):
        return obj
    return BuilderTarget(getattr(obj, "name", ep_name), getattr(obj, "builders", None), getattr(obj, "detect", None))


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
    if not isinstance(name, str):
        raise TargetError(f"a target is named by a str, got {type(name).__name__} {name!r}; known targets: "
                          f"{', '.join(sorted(_targets))}")
    t = _targets.get(name)
    if t is None:
        failed = dict(_failures).get(name)
        if failed is not None:   # an installed plugin that did not load: not a typo
            raise TargetError(f"target {name!r} failed to load: {failed}")
        raise TargetError(f"unknown target {name!r}; known targets: {', '.join(sorted(_targets))}")
    return t


def set_default_target(name: str | None) -> None:
    """Target for instances constructed without `target=` (None: detect from the device).
    Takes effect for instances not yet resolved."""
    global _default
    if name is not None:
        get(name)
    _default = name


def default_target() -> str | None:
    return _default


def detect(device: torch.device, op_cls=None) -> Target:
    """The target claiming `device` (of those serving `op_cls`, when given: a plugin of one
    op does not take part for the others), else aten."""
    _load_plugins()
    claiming = []
    for t in _targets.values():
        if op_cls is not None and not t.serves(op_cls):
            continue
        try:
            claims = t.claims(device)
        except Exception as e:   # a plugin's detect
            raise TargetError(f"target {t.name!r}: asked whether it claims {device}"
                              f"{'' if op_cls is None else ' for ' + op_cls.__name__}, its detect raised "
                              f"{type(e).__name__}: {e}") from e
        if claims:
            claiming.append(t)
    if len(claiming) > 1:
        raise TargetError(
            f"targets {sorted(t.name for t in claiming)} all claim device {device}"
            f"{'' if op_cls is None else ' for ' + op_cls.__name__}; "
            f"choose one with target=... or tileops.set_default_target(...)")
    if claiming:
        return claiming[0]
    return _targets["aten"]


def resolve(op, device: torch.device) -> Target:
    name = op._target_request or _default
    target = get(name) if name else detect(device, type(op))
    if not target.serves(type(op)):
        raise TargetError(f"target {target.name!r} has no implementation of {type(op).__name__}")
    return target


__all__ = ["Target", "BuilderTarget", "register", "unregister", "load_failures", "names", "get", "set_default_target",
           "default_target", "detect", "resolve", "all_targets", "ENTRY_POINT_GROUP"]
