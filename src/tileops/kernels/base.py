"""Kernels: the implementations an op's interfaces select from.

A Kernel class is one implementation of an interface (e.g. "rms_norm"). It answers three
questions, all from a KernelCall (metadata only, never data):
  refusal(call)      why it cannot serve this call, or None
  entry_for(call)    its build identity: everything the built code depends on (hashable)
  build(identity)    the launchable; may compile; runs only on a miss in the op's table
A kernel never validates user input (the op layer did)."""
from __future__ import annotations

import dataclasses
from typing import Any

import torch


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    dtype: torch.dtype
    shape: tuple
    device: torch.device
    aligned16: bool

    @staticmethod
    def of(t: torch.Tensor) -> "TensorSpec":
        return TensorSpec(t.dtype, tuple(t.shape), t.device, (t.data_ptr() & 15) == 0)


@dataclasses.dataclass(frozen=True)
class KernelCall:
    op: Any                 # the op instance (for its params and name)
    device: torch.device
    inputs: dict            # input name -> TensorSpec or None
    params: dict            # constructor params by name

    def shapes(self) -> dict:
        """Each input's shape (None where absent), for messages."""
        return {n: (s.shape if s else None) for n, s in self.inputs.items()}


class KernelInterface:
    """The call an implementation serves.

    An op maps each interface name it uses to a KernelInterface subclass; the subclass
    names the keys (in the op's `kernel_types`) of the kernels implementing it, and says
    what their launchables take and return. `op.kernel_for(name, ...)` selects among
    exactly these."""

    name: str = ""
    implementations: tuple = ()     # keys into the op's kernel_types
    launchable: str = ""            # what a built launchable is called with and returns

    @classmethod
    def of(cls, name: str, *implementations: str, launchable: str = ""):
        """A KernelInterface subclass, for ops whose interface needs no docstring of its own."""
        return type(f"{name.title().replace('_', '')}Interface", (cls,),
                    {"name": name, "implementations": tuple(implementations), "launchable": launchable})


class Kernel:
    """One implementation of an interface. Subclasses set `interface` and `specialised`,
    and define (or inherit from a shared base of their own) the classmethods
    `entry_for(call) -> Hashable` (the build identity) and `build(identity)` (the
    launchable); a class that sets `interface` without both is refused when defined."""

    interface: str = ""
    specialised: bool = False   # a specialised implementation wins over a general one
    devices: tuple = ("cpu", "cuda")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.interface:
            missing = [m for m in ("entry_for", "build") if not callable(getattr(cls, m, None))]
            if missing:
                raise TypeError(f"kernel {cls.__name__} implements {cls.interface!r} but defines no {', '.join(missing)}")

    @classmethod
    def refusal(cls, call: KernelCall) -> str | None:
        if call.device.type not in cls.devices:
            return f"{cls.__name__} serves {', '.join(cls.devices)} tensors, not {call.device.type}"
        return None


def select(op, name: str, call: KernelCall):
    """The one implementation of op.interfaces[name] that serves `call`: a specialised one
    over the general one; none, or two at the same level, is an error."""
    from ..errors import KernelSelectionError
    impls = [op.kernel_types[k] for k in op.interfaces[name].implementations]
    refusals, accepting = [], []
    for k in impls:
        why = k.refusal(call)
        (refusals if why else accepting).append((k, why))
    spec = [k for k, _ in accepting if k.specialised]
    general = [k for k, _ in accepting if not k.specialised]
    chosen = spec or general
    if len(chosen) == 1:
        return chosen[0]
    shapes = call.shapes()
    if not chosen:
        detail = "; ".join(f"{k.__name__}: {why}" for k, why in refusals)
        raise KernelSelectionError(f"{type(op).__name__}: no implementation of '{name}' serves {shapes}: {detail}")
    raise KernelSelectionError(
        f"{type(op).__name__}: implementations {[k.__name__ for k in chosen]} of '{name}' all accept {shapes}; exactly one must")
