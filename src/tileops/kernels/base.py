"""Kernels: the implementations an op's interfaces select from, and the table of builds.

A KernelInterface names the launchable every implementation of it returns: the tensors it
takes (`tensors`, inputs then outputs, in the op's manifest order) and what the build may
depend on beyond the op's params (`shape_dependent`: inputs whose shapes matter). From
that declaration alone the op derives, per call, the memo key that skips selection on
steady calls (Op.kernel_for) and, on a miss, the KernelCall the kernel sees: the two are
made from the same declaration, so a kernel cannot read what the memo key does not cover.

A Kernel class is one implementation of an interface. It answers three questions, all from
a KernelCall (metadata only, never data):
  refusal(call)      why it cannot serve this call, or None
  entry_for(call)    its build identity: a NamedTuple of everything the built code depends on
  build(identity)    the launchable; may compile; runs only on a miss in the kernel table
A launchable takes the interface's tensors (outputs already allocated, contiguous) and
writes the outputs; it returns nothing. A kernel never validates user input (the op layer
did) and never allocates an output (Op.allocate did)."""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, NamedTuple

import torch

from ..errors import KernelSelectionError


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """What a kernel may know of one tensor: its dtype and device; its shape only where the
    interface declares the build shape-dependent (else None), or for a builder target."""
    dtype: torch.dtype
    device: torch.device
    shape: tuple | None = None


@dataclasses.dataclass(frozen=True)
class KernelCall:
    """One call as a kernel sees it (built on a memo miss only)."""
    op_name: str
    device: torch.device
    inputs: dict            # input name -> TensorSpec or None (absent optional input)
    outputs: dict           # output name -> TensorSpec or None (omitted output)
    params: dict            # constructor params by name, defaults resolved
    aligned16: bool         # every tensor's data pointer is 16-byte aligned
    written: tuple          # names of inputs this call writes (an output is that input)
    unaligned16: frozenset = frozenset()   # names of the tensors whose data pointer is not 16-byte aligned

    def shapes(self) -> dict:
        """Each input's shape as far as the call knows it, for messages."""
        return {n: (s.shape if s else None) for n, s in self.inputs.items()}

    def dtype(self, name: str) -> torch.dtype:
        spec = self.inputs.get(name) or self.outputs.get(name)
        return spec.dtype


class KernelInterface:
    """The call an implementation serves.

    An op maps each interface name it uses to a KernelInterface subclass; the subclass
    names the keys (in the op's `kernel_types`) of the kernels implementing it, and the
    tensors its launchables take: `launch(*tensors)`, inputs (None where an optional one
    is absent) then outputs, all contiguous, outputs allocated by the op."""

    name: str = ""
    implementations: tuple = ()     # keys into the op's kernel_types
    tensors: tuple = ()             # the launchable's tensors, inputs then outputs (default: all, in manifest order)
    shape_dependent: tuple = ()     # inputs whose whole shape the build depends on
    launchable: str = ""            # what a built launchable is called with

    @classmethod
    def of(cls, name: str, *implementations: str, tensors: tuple = (), shape_dependent: tuple = (),
           launchable: str = ""):
        """A KernelInterface subclass, for ops whose interface needs no docstring of its own."""
        return type(f"{name.title().replace('_', '')}Interface", (cls,),
                    {"name": name, "implementations": tuple(implementations), "tensors": tuple(tensors),
                     "shape_dependent": tuple(shape_dependent), "launchable": launchable})


class Kernel:
    """One implementation of an interface. Subclasses set `interface` and `specialised`,
    and define (or inherit from a shared base of their own) the classmethods
    `entry_for(call) -> NamedTuple` (the build identity, read back by field name) and
    `build(identity)` (the launchable); a class that sets `interface` without both is
    refused when defined."""

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


class KernelTable:
    """What a target gets to serve one op instance: the op's implementations (never the
    op itself) and the builds made for it so far, keyed by build identity. Owned by the
    instance; cleared when a param changes or a failed first call undoes its target."""

    def __init__(self, op_name: str, kernel_types: dict, interfaces: dict):
        self.op_name = op_name
        self.kernel_types = kernel_types
        self.interfaces = interfaces
        self._built: dict = {}
        self._lock = threading.Lock()

    def get(self, key):
        return self._built.get(key)

    def put(self, key, launchable):
        with self._lock:
            return self._built.setdefault(key, launchable)

    def clear(self):
        with self._lock:
            self._built.clear()

    def __len__(self):
        return len(self._built)

    def __iter__(self):
        """The keys of the builds: (kernel class, identity) for in-tree kernels."""
        return iter(list(self._built))

    def select(self, name: str, call: KernelCall):
        """The one implementation of interface `name` that serves `call`: a specialised
        one over the general one; none, or two at the same level, is an error."""
        impls = [self.kernel_types[k] for k in self.interfaces[name].implementations]
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
            raise KernelSelectionError(f"{self.op_name}: no implementation of '{name}' serves {shapes}: {detail}")
        raise KernelSelectionError(
            f"{self.op_name}: implementations {[k.__name__ for k in chosen]} of '{name}' all accept {shapes}; "
            f"exactly one must")


def identity_type(name: str, fields: str) -> type:
    """A NamedTuple class for build identities (`fields` space-separated)."""
    return NamedTuple(name, [(f, Any) for f in fields.split()])


def launch_argument_error(head: str, name: str, t, expected: str) -> Exception:
    """The error a launchable raises for its argument `name` that is not what its kernel
    takes: InputTypeError for a non-tensor, else InputValueError showing the tensor's
    dtype, shape, strides and device (`head` names the kernel and its build)."""
    from ..errors import InputTypeError, InputValueError
    if not isinstance(t, torch.Tensor):
        return InputTypeError(f"{head}: argument '{name}': expected {expected}, got {type(t).__name__}")
    return InputValueError(f"{head}: argument '{name}': expected {expected}, got {t.dtype} {tuple(t.shape)} "
                           f"strides {t.stride()} on {t.device}{', lazily negated' if t.is_neg() else ''}")


def launch_where(device_index: int) -> str:
    """Where a build runs, as its messages say it: "cpu" (device_index < 0) or "cuda:<i>"."""
    return "cpu" if device_index < 0 else f"cuda:{device_index}"


class Arg(NamedTuple):
    """One tensor a LaunchGuard checks: of `dtype` on the build's device, not lazily negated,
    contiguous unless `contiguous` is False, and `test(t, args)` true (args: the call's
    tensors by name; the tests run in the guard's order, so a test may read the arguments
    checked before it). `expected`: the message's "expected ..." text, or expected(args)."""
    name: str
    dtype: Any
    test: Any = None
    expected: Any = ""
    contiguous: bool = True


class Apart(NamedTuple):
    """An output that shares no byte with `others` (names), unless it is one of `may_be`
    itself (written in place); `note` follows the overlap message."""
    name: str
    others: tuple
    may_be: tuple = ()
    note: str = ""


class LaunchGuard:
    """A launchable's checks, declared: check(*tensors) (the interface's order, `names`)
    tests each Arg in the order given, then each Apart, and raises with `head` (the kernel
    and its build, launch_head) naming the argument: launch_argument_error for an Arg,
    InputValueError "it overlaps another tensor in memory" for an Apart. O(1) attribute
    reads and the byte-span comparisons of the Aparts; `checked(guard, unchecked)`."""

    def __init__(self, head: str, device_index: int, names: tuple, args: tuple, apart: tuple = ()):
        self.head, self.device_index, self.names = head, device_index, tuple(names)
        self.args, self.apart = tuple(args), tuple(apart)

    def __call__(self, *tensors):
        got = dict(zip(self.names, tensors))
        dev = self.device_index
        for a in self.args:
            t = got[a.name]
            if not (isinstance(t, torch.Tensor) and t.dtype is a.dtype and t.get_device() == dev and not t.is_neg()
                    and (not a.contiguous or t.is_contiguous()) and (a.test is None or a.test(t, got))):
                expected = a.expected(got) if callable(a.expected) else a.expected
                raise launch_argument_error(self.head, a.name, t, expected)
        for o in self.apart:
            out = got[o.name]
            if any(out is got[n] for n in o.may_be):
                continue
            if overlaps(out, tuple(got[n] for n in o.others)):
                from ..errors import InputValueError
                raise InputValueError(f"{self.head}: argument '{o.name}': it overlaps another tensor in memory"
                                      f"{o.note}")


def launch_head(kernel: str, dtype, device_index: int, detail: str = "") -> str:
    """How a launchable's messages name its build: "<kernel> (launch of the <dtype>
    build<detail>, on <where>)"."""
    return f"{kernel} (launch of the {dtype} build{detail}, on {launch_where(device_index)})"


def kernel_input_error(op: str, e, names: dict = None):
    """The C core's InputValueError `e` (bad values found before anything was written: an
    index out of range, a layout) as op's own: it names the argument the core named
    (`e.argument`, its kernel's argument name, mapped through `names` where the op's name
    differs: rope's q_out is q), else the op alone."""
    from ..errors import InputValueError
    arg = getattr(e, "argument", None)
    arg = (names or {}).get(arg, arg)
    return InputValueError(f"{op}: argument '{arg}': {e}" if arg else f"{op}: {e}")


def cpu_runner(kernel: str, op: str, names: dict = None):
    """(run, handle): `run(*args)` launches C kernel `kernel` of the CPU table
    (`_C.cpu_launch(handle, *args)`); a value the C kernel refuses before writing anything (an
    index out of range, a layout) raises the op's InputValueError through kernel_input_error,
    naming the argument the core named (mapped through `names`). The one place a CPU kernel
    turns the core's errors into its op's."""
    from .. import _C
    from ..errors import InputValueError
    handle = _C.cpu_kernel(kernel)[0]
    launch = _C.cpu_launch

    def run(*args):
        try:
            launch(handle, *args)
        except InputValueError as e:
            raise kernel_input_error(op, e, names) from None
    return run, handle


def checked(check, unchecked):
    """The public launchable: `check(*tensors)` (raises on what the kernel cannot take),
    then `unchecked(*tensors)`; `.unchecked` is the launch the op's body calls after its
    generated checks guaranteed the same (Op._kernel_for)."""
    def launch(*tensors):
        check(*tensors)
        unchecked(*tensors)
    launch.unchecked = unchecked
    return launch


def byte_span(t) -> tuple:
    """[first, last + 1) bytes a strided tensor's elements occupy (non-negative strides)."""
    start = t.data_ptr()
    return start, start + t.element_size() * (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())))


def overlaps(out, others) -> bool:
    """Whether a non-empty `out` shares a byte span with any non-empty tensor of `others`."""
    if out.numel() == 0:
        return False
    a0, a1 = byte_span(out)
    for t in others:
        if t.numel():
            b0, b1 = byte_span(t)
            if a0 < b1 and b0 < a1:
                return True
    return False
