"""Op: the base class of every tileops operator.

An op writes `__init__` (store its params, call `super().__init__(target=target)`) and
`forward` (fetch the kernel, launch it). Everything else is generated at class definition
from the op's manifest entry (see boundary.py): the custom operators, their fakes, the
checks, `_call_boundary` and `compile_op_names`.

Phases: construction stores params and takes an instance key and touches no device; the
target is resolved inside the node on the first call (and undone if that call fails);
kernels are built on the first call at a new build identity and reused after; the
generated checks run on the first call at a new call signature (the inputs' shapes, dtypes
and devices). Assigning a param makes the next call check and select its kernel again."""
from __future__ import annotations

import inspect

import torch

from ..errors import KernelSelectionError, ManifestError
from ..kernels.base import KernelCall, TensorSpec
from ..manifest.loader import find_entry
from . import boundary, registry

_MEMO_LIMIT = 4096


class Op:
    """Base class. Subclass per manifest entry; the class name is the entry's key."""

    compile_op_names: tuple = ()
    kernel_types: dict = {}
    interfaces: dict = {}
    _entry = None
    _param_names: frozenset = frozenset()

    def __init_subclass__(cls, manifest: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        entry = find_entry(cls.__name__, manifest)
        cls._entry = entry
        cls.family = entry.family
        cls._param_names = frozenset(p.name for p in entry.params)
        if "forward" not in cls.__dict__:
            raise ManifestError(f"{cls.__name__}: an op defines forward")
        if entry.has_boundary:
            ns = boundary.generate(cls, entry, inspect.signature(cls.forward))
            cls._boundary = ns
            cls.compile_op_names = ns["_names"]
            cls._call_boundary = ns["_call_boundary"]
            cls.__call__ = ns["_call_boundary"]
        else:
            cls._boundary = None
            cls.compile_op_names = ()
            cls._call_boundary = None
            cls.__call__ = cls.forward

    def __init__(self, *, target: str | None = None):
        from .. import targets
        if target is not None:
            targets.get(target)  # an unknown name fails here, listing the known ones
        self._target_request = target
        self._start_runtime_state()

    def _start_runtime_state(self):
        """Unresolved, nothing built, selected or checked yet, and a key of its own: a new
        instance, or a copy."""
        self._target = None
        self._kernels: dict = {}    # build identity -> launchable
        self._memo: dict = {}       # call signature -> launchable (skips selection)
        self._checked: set = set()  # inputs' metadata the generated checks passed for
        self._key = registry.new_key(self)

    # ---- params -------------------------------------------------------------------
    # Which signatures passed the checks, which launchable the memo holds and what the
    # table has built were decided under the params' values (an external builder's build
    # is not keyed by them); assigning a param after construction drops all three, so the
    # next call checks, selects and builds again under the new value.
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name in self._param_names:
            d = self.__dict__
            for cache in ("_checked", "_memo", "_kernels"):
                if cache in d:
                    d[cache].clear()

    def _note_checked(self, sig):
        """Records that the generated checks passed for inputs with this metadata (the
        body's call signature), so that later calls with the same metadata skip them."""
        checked = self._checked
        if len(checked) >= _MEMO_LIMIT:
            checked.clear()
        checked.add(sig)

    # ---- copies -------------------------------------------------------------------
    # A copy (copy.copy, copy.deepcopy, pickle) is a new instance: it takes a new key
    # (keys are never reused) and starts unresolved, with no kernels of its own yet.
    _RUNTIME_STATE = ("_key", "_target", "_kernels", "_memo", "_checked")

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in self._RUNTIME_STATE}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._start_runtime_state()

    # ---- targets (called from inside the node) ----------------------------------
    @property
    def target(self):
        """The resolved target, or None before the first call."""
        return self._target

    def _resolve_target(self, device: torch.device):
        from .. import targets
        self._target = target = targets.resolve(self, device)
        return target

    def _unresolve_target(self):
        self._target = None
        self._kernels.clear()
        self._memo.clear()

    # ---- kernels ---------------------------------------------------------------
    def kernel_for(self, name: str, *tensors, memo_key=None):
        """The launchable serving interface `name` for these (contiguous) inputs, given in
        the manifest's input order. Steady calls hit the memo; a miss asks the target to
        select an implementation and build it (or find its build identity in the table).

        memo_key: an op that knows exactly what its selection and build identity depend on
        (beyond the instance's params) may pass that as a cheaper memo key than the default,
        which covers every input's dtype, device, shape and 16-byte alignment."""
        target = self._target
        if memo_key is not None and target is not None and target.honours_memo_key:
            sig = (name, memo_key)
        else:  # external builders may specialise on anything in the call, shapes included
            sig = (name,) + tuple(None if t is None else (t.dtype, t.device, t.shape, t.data_ptr() & 15)
                                  for t in tensors)
        fn = self._memo.get(sig)
        if fn is not None:
            return fn
        call = self._make_call(tensors)
        target = self._target  # one read: another thread's failed call may reset it
        if target is None:
            target = self._resolve_target(call.device)
        fn = target.kernel_for(self, name, call)
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[sig] = fn
        return fn

    def _make_call(self, tensors) -> KernelCall:
        names = [i.name for i in self._entry.inputs]
        if len(tensors) != len(names):
            raise KernelSelectionError(
                f"{type(self).__name__}.kernel_for: expected the {len(names)} inputs {names}, got {len(tensors)} tensors")
        specs = {n: (None if t is None else TensorSpec.of(t)) for n, t in zip(names, tensors)}
        first = next(t for t in tensors if t is not None)
        return KernelCall(op=self, device=first.device, inputs=specs, params=self.params())

    def params(self) -> dict:
        """The constructor parameters by name, as the op stored them."""
        return {p.name: getattr(self, p.name) for p in self._entry.params}

    def __repr__(self):
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({ps})  # {self._key}"
