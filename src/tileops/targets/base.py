"""The Target interface, and BuilderTarget: a target made of per-op builders (the shipped
`aten` target and every plugin).

A target serves an op instance through the instance's KernelTable: the op's
implementations and the builds made so far. It never sees the op itself."""
from __future__ import annotations

import abc

import torch

from ..errors import TargetError


class Target(abc.ABC):
    name: str = ""
    # True when what the target builds depends only on what the interface declares (the
    # in-tree kernels' build identities); builders that see whole input specs do not.
    honours_memo_key: bool = False

    def claims(self, device: torch.device) -> bool:
        """Whether detection should pick this target for tensors on `device` (by default
        it is chosen only by name)."""
        return False

    @abc.abstractmethod
    def serves(self, op_cls) -> bool:
        """Whether this target has an implementation of the op class."""

    @abc.abstractmethod
    def kernel_for(self, table, name: str, call):
        """The launchable for interface `name` at `call` (builds on a miss, into `table`)."""

    def __repr__(self):
        return f"<tileops target {self.name}>"


def _fill(target_name, op_name, call, iface, fn):
    """Adapts a builder's callable (inputs -> outputs) to the launchable protocol (inputs
    and allocated outputs -> writes the outputs). Each output the builder returns must
    have exactly the shape, dtype and device the op allocated from the manifest (the fake
    declares the same, and the compiled graph relies on it): anything else raises,
    naming the target, the op and the output, in eager and compiled calls alike."""
    in_names = set(call.inputs)
    n_in = sum(1 for t in iface.tensors if t in in_names)
    out_names = [t for t in iface.tensors if t not in in_names]

    def launch(*tensors):
        outs = tensors[n_in:]
        res = fn(*tensors[:n_in])
        got = res if isinstance(res, tuple) else (res,)
        if len(got) != len(outs):
            raise TargetError(f"target {target_name!r} returned {len(got)} outputs for {op_name}; "
                              f"the manifest declares {len(outs)} ({', '.join(out_names)})")
        for name, want, r in zip(out_names, outs, got):
            if want is None:
                continue
            if not isinstance(r, torch.Tensor) or r.shape != want.shape or r.dtype != want.dtype \
                    or r.device != want.device:
                desc = (f"shape {tuple(r.shape)}, dtype {r.dtype}, device {r.device}" if isinstance(r, torch.Tensor)
                        else type(r).__name__)
                raise TargetError(
                    f"target {target_name!r} returned for {op_name} output '{name}' {desc}; the manifest "
                    f"declares shape {tuple(want.shape)}, dtype {want.dtype}, device {want.device}")
            if r is not want:
                want.copy_(r)
    return launch


class BuilderTarget(Target):
    """Per-op builders: builders[op class name] (or "<op>.<interface>") is called as
    builder(inputs, params), with each input's TensorSpec (dtype, device, shape) or None
    and the op's params by name (defaults resolved), and returns a callable taking the
    op's inputs and returning its outputs (a tuple when there are several). For an op
    with no call-time tensor input, params also hold `device`, where the outputs go (the
    callable takes no argument). A build is kept in the instance's table per interface
    and input and output specs."""

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

    def builder_for(self, op_name: str, name: str):
        return self.builders.get(f"{op_name}.{name}") or self.builders.get(op_name)

    def kernel_for(self, table, name, call):
        op_name = table.op_name
        key = (self.name, name, call.device, tuple(call.inputs.items()), tuple(call.outputs.items()), call.written)
        fn = table.get(key)
        if fn is None:
            builder = self.builder_for(op_name, name)
            if builder is None:
                raise TargetError(f"target {self.name!r} has no builder for {op_name}")
            params = dict(call.params)
            if not call.inputs:   # an op without tensor inputs: where its outputs go
                params["device"] = call.device
            built = builder(dict(call.inputs), params)
            if not callable(built):
                raise TargetError(f"target {self.name!r}: builder for {op_name} returned {built!r}, not a callable")
            fn = table.put(key, _fill(self.name, op_name, call, table.interfaces[name], built))
        return fn
