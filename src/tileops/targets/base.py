"""The Target interface, and BuilderTarget: a target made of per-op builders (the shipped
`aten` target and every plugin)."""
from __future__ import annotations

import abc

import torch

from ..errors import TargetError


class Target(abc.ABC):
    name: str = ""
    # True when what the target builds depends only on what the op's own memo key covers
    # (the in-tree kernels' build identities); builders that see whole input specs do not.
    honours_memo_key: bool = False

    def claims(self, device: torch.device) -> bool:
        """Whether detection should pick this target for tensors on `device` (by default
        it is chosen only by name)."""
        return False

    @abc.abstractmethod
    def serves(self, op_cls) -> bool:
        """Whether this target has an implementation of the op class."""

    @abc.abstractmethod
    def kernel_for(self, op, name: str, call):
        """The launchable for interface `name` of `op` at `call` (builds on a miss)."""

    def __repr__(self):
        return f"<tileops target {self.name}>"


def checked_outputs(fn, target_name, op_name, device):
    """Wraps a builder's callable: every tensor it returns must be contiguous and on the
    inputs' device, as the manifest's fake declares (the compiled graph relies on it); a
    target that breaks this fails loudly, naming itself."""
    def run(*args, **kwargs):
        res = fn(*args, **kwargs)
        for t in (res if isinstance(res, tuple) else (res,)):
            if isinstance(t, torch.Tensor) and (not t.is_contiguous() or t.device != device):
                raise TargetError(
                    f"target {target_name!r} returned for {op_name} a tensor with strides {t.stride()} on "
                    f"{t.device}; outputs must be contiguous on {device}, as the manifest declares")
        return res
    return run


class BuilderTarget(Target):
    """Per-op builders: builders[op class name] (or "<op>.<interface>") is called as
    builder(inputs, params), with each input's TensorSpec (device, dtype, shape) or None
    and the op's params by name, and returns a callable taking the op's inputs. A build
    is kept in the instance's table per interface and input specs."""

    def __init__(self, name: str, builders: dict, detect=None):
        if not isinstance(builders, dict):
            raise TargetError(f"target {name!r}: expected a dict of builders, got {type(builders).__name__}")
        self.name = name
        self.builders = builders
        self._detect = detect

    def claims(self, device):
        return bool(self._detect(device)) if self._detect else False

    def serves(self, op_cls):
        return op_cls.__name__ in self.builders or any(k.startswith(op_cls.__name__ + ".") for k in self.builders)

    def kernel_for(self, op, name, call):
        op_name = type(op).__name__
        key = (self.name, name, call.device, tuple(call.inputs.items()))
        fn = op._kernels.get(key)
        if fn is None:
            builder = self.builders.get(f"{op_name}.{name}") or self.builders.get(op_name)
            if builder is None:
                raise TargetError(f"target {self.name!r} has no builder for {op_name}")
            built = builder(dict(call.inputs), dict(call.params))
            if not callable(built):
                raise TargetError(f"target {self.name!r}: builder for {op_name} returned {built!r}, not a callable")
            fn = op._kernels[key] = checked_outputs(built, self.name, op_name, call.device)
        return fn
