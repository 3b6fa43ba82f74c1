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

import functools
import inspect
import itertools
import logging
import math
import operator
import weakref
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..errors import InputTypeError, InputValueError, KernelSelectionError, ManifestError
from ..kernels.base import KernelCall, KernelTable, TensorSpec
from ..manifest.loader import find_entry
from ..manifest.schema import DerivedDefault
from . import boundary, kit, plans, registry

if TYPE_CHECKING:
    from ..targets.base import Target

_MEMO_LIMIT = 4096
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)   # float params beyond it: refused (_coerce_param)
_log = logging.getLogger("tileops.ops")


class Op:
    """Base class. Subclass per manifest entry; the class name is the entry's key."""

    compile_op_names: tuple[str, ...] = ()
    kernel_types: dict[str, type] = {}
    interfaces: dict[str, type] = {}
    family: str
    _entry = None
    _param_names: frozenset = frozenset()
    _check_params = None    # an op without tensor inputs: its generated param rules
    # The interface an op's forward launches once, after allocating every output shaped
    # like an input, when that is all forward does: its eager CPU calls are then replayed
    # from a plan in C (plans.py). None: no plan.
    plan_kernel: str | None = None
    _plan_likes = None      # plans.likes of the entry, for an op with plan_kernel

    if TYPE_CHECKING:
        # What a type checker sees of any op: the constructor takes the op's params (the
        # concrete class's __init__ names them), a call runs its boundary (the concrete
        # class's forward gives the types).
        def __init__(self, *args: Any, target: str | None = None, **params: Any) -> None: ...

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def __init_subclass__(cls, manifest: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        entry = find_entry(cls.__name__, manifest)
        cls._entry = entry
        cls.family = entry.family
        cls._param_names = frozenset(p.name for p in entry.params)
        _issue_key_after_init(cls)
        if "forward" not in cls.__dict__:
            raise ManifestError(f"{cls.__name__}: an op defines forward")
        cls._kit = kit.generate(cls, entry)
        if cls.plan_kernel is not None:
            if cls.plan_kernel not in cls.interfaces:
                raise ManifestError(f"{cls.__name__}: plan_kernel {cls.plan_kernel!r} is not one of its interfaces "
                                    f"{sorted(cls.interfaces)}")
            cls._plan_likes = plans.likes(entry)
        cls.allocate = cls._kit["_allocate"]
        cls._memo_fns = {name: (cls._kit[f"_memo_{name}"], cls._kit[f"_full_{name}"], iface)
                         for name, iface in cls.interfaces.items()}
        if entry.has_boundary:
            # The forward the op writes becomes `_forward`: its computation, unchecked (it
            # trusts the generated body to have run the checks and made the inputs
            # contiguous); private, reached only through the generated body. The public
            # `forward` is the generated `_call_boundary`, so that no public name
            # computes without the checks: `op.forward(...)` is `op(...)`.
            fwd = cls.__dict__["forward"]
            cls._forward = fwd
            ns = boundary.generate(cls, entry, inspect.signature(fwd))
            cls._boundary = ns
            cls.compile_op_names = ns["_names"]
            cls._call_boundary = ns["_call_boundary"]
            # a call of the wrong arity names the op, not the generated function
            cls._call_boundary.__qualname__ = f"{cls.__name__}.__call__"
            cls.__call__ = ns["_call_boundary"]
            cls.forward = ns["_call_boundary"]
        elif not entry.inputs and not entry.composition:
            # No call-time tensor input, so no boundary (the seed): the outputs depend on the
            # params and the device alone. The public call is the generated `_call`: eager,
            # it checks the params and runs forward (its kernels, new outputs on every
            # call); traced by dynamo, it returns clones of outputs computed once at trace
            # time (`_traced_outputs`), so a compiled graph holds no tileops node.
            fwd = cls.__dict__["forward"]
            cls._forward = fwd
            cls._boundary = None
            cls.compile_op_names = ()
            cls._call_boundary = None
            cls._check_params = cls._kit["_check_params"]
            cls.__call__ = cls._kit["_call"]
            cls.__call__.__qualname__ = f"{cls.__name__}.__call__"
            cls.forward = cls._kit["_call"]
        else:
            cls._boundary = None
            cls.compile_op_names = ()
            cls._call_boundary = None
            cls.__call__ = cls.forward

    @classmethod
    def generated_source(cls) -> str:
        """The Python source generated for this class: the boundary (if any), then the kit."""
        parts = []
        if cls._boundary is not None:
            parts.append(cls._boundary["_source"])
        parts.append(cls._kit["_source"])
        return "\n".join(parts)

    if not TYPE_CHECKING:
        def __init__(self, *, target: str | None = None) -> None:
            from .. import targets
            if target is not None:
                targets.get(target)  # an unknown name fails here, listing the known ones
            self._target_request = target
            self._start_runtime_state()
            if self._check_params is not None and all(p.name in self.__dict__ for p in self._entry.params):
                # an op without tensor inputs fails at construction on params its rules refuse
                # (checked again on a call after a param is assigned)
                self._check_params()
                self._checked.add(())

    def _start_runtime_state(self):
        """Unresolved, nothing built, selected or checked yet, no key yet: a new instance
        takes its key once its constructor has stored the params (the key names them,
        registry.py), a copy in __setstate__."""
        self._target = None
        self._kernels = KernelTable(type(self).__name__, self.kernel_types, self.interfaces)
        self._memo: dict = {}       # (interface, memo key) -> launchable (skips selection)
        self._checked: set = set()  # inputs' metadata the generated checks passed for
        self._key = None
        self._params_version = _version_of(self)
        if self._check_params is not None:   # an op without tensor inputs: see _traced_functions
            self._traced = _traced_functions(self)

    # ---- params -------------------------------------------------------------------
    # Which signatures passed the checks, which launchable the memo holds and what the
    # table has built were decided under the params' values (an external builder's build
    # is not keyed by them); assigning a param after construction drops all three, so the
    # next call checks, selects and builds again under the new value. The key names the
    # params, so the instance takes a new one (code compiled for the old key recompiles:
    # dynamo guards it; a saved program keeps the params it was saved with).
    def __setattr__(self, name, value):
        if name not in self._param_names:
            object.__setattr__(self, name, value)
            return
        if self.__dict__.get("_interned"):
            # shared by every module and functional call with these params (tileops.nn)
            raise InputValueError(f"{type(self).__name__}: param '{name}' of an interned instance cannot be "
                                  f"assigned (it is shared); take tileops.nn.instance({type(self).__name__}, "
                                  f"...) with the new value instead")
        value = _coerce_param(type(self).__name__, self._entry, name, value)
        d = self.__dict__
        if name in d and type(d[name]) is type(value) and d[name] == value:
            return   # the value it has: nothing changes (no new key: compiled code keeps its guard)
        object.__setattr__(self, name, value)
        for cache in ("_checked", "_memo", "_kernels"):
            if cache in d:
                d[cache].clear()
        # the string a compiled call of an op without tensor inputs guards on: new values
        # of the params make the next compiled call trace again, with the new outputs
        object.__setattr__(self, "_params_version", _version_of(self))
        if d.get("_key") is not None:
            registry.issue_key(self)

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
    _RUNTIME_STATE = ("_key", "_target", "_kernels", "_memo", "_checked", "_params_version", "_traced", "_interned")

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in self._RUNTIME_STATE}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._start_runtime_state()
        registry.issue_key(self)

    # ---- ops without tensor inputs (no boundary) -----------------------------------
    def _run_no_boundary(self, device: torch.device, kwargs: dict):
        """The eager call of an op with no call-time tensor input, on `device`: the param
        rules (once per value of the params), the target (resolved on the first call for
        `device` and undone if that call fails, as the boundary's body does), then forward,
        whose outputs are new tensors."""
        if not self._checked:
            self._check_params()
            self._checked.add(())
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        resolved = self._target is None and bool(self.interfaces)   # a forward of torch ops needs none
        if resolved:
            self._resolve_target(device)
        try:
            return self._forward(device=device, **kwargs)
        except BaseException:
            if resolved:
                self._unresolve_target()
            raise

    # ---- targets (called from inside the node) ----------------------------------
    @property
    def target(self) -> Target | None:
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
    def kernel_for(self, name: str, *tensors: torch.Tensor | None) -> Callable[..., Any]:
        """The launchable serving interface `name` for these tensors: the interface's
        `tensors`, inputs then the outputs `allocate` returned, contiguous. It checks, on
        every call, what its kernel relies on (the in-tree kernels: each tensor's extent,
        dtype, device, contiguity; see kernels/norm/rows.pointer_guard), so calling it
        with other tensors raises rather than reading out of bounds. Steady calls hit the
        memo, whose key the interface's declaration derives (kit.memo_source); a miss asks
        the target to select an implementation and build it (or find its build identity
        in the table)."""
        memo, full, iface = self._memo_fns[name]
        target = self._target
        try:
            sig = (name, memo(*tensors) if target is not None and target.honours_memo_key else full(*tensors))
        except (AttributeError, TypeError):
            raise InputTypeError(f"{type(self).__name__}.kernel_for: '{name}' takes the tensors {list(iface.tensors)} "
                                 f"(None for an absent optional one), got {[type(t).__name__ for t in tensors]}") \
                from None
        pair = self._memo.get(sig)
        if pair is None:
            pair = self._kernel_miss(name, tensors)
        return pair[1]

    def _kernel_for(self, name: str, *tensors):
        """kernel_for's launchable without its per-call checks (the same where a kernel
        has no unchecked form). Private and unchecked: for an op's `_forward` only, whose
        inputs the generated body has checked (`_check`, once per call signature), made
        contiguous and whose outputs `allocate` made, so that a steady call checks once."""
        memo, full, iface = self._memo_fns[name]
        target = self._target
        sig = (name, memo(*tensors) if target is not None and target.honours_memo_key else full(*tensors))
        pair = self._memo.get(sig)
        if pair is None:
            pair = self._kernel_miss(name, tensors)
        return pair[0]

    def _kernel_miss(self, name, tensors):
        """(unchecked, checked) launchables for a memo miss, selected and built (or found
        in the table), and memoised."""
        memo, full, iface = self._memo_fns[name]
        if len(tensors) != len(iface.tensors):
            raise KernelSelectionError(
                f"{type(self).__name__}.kernel_for: '{name}' takes the {len(iface.tensors)} tensors "
                f"{list(iface.tensors)}, got {len(tensors)}")
        target = self._target
        if target is None:
            present = [t for t in tensors if t is not None]
            if not present or not all(isinstance(t, torch.Tensor) for t in present):
                raise InputTypeError(f"{type(self).__name__}.kernel_for: '{name}' takes tensors (None for an absent "
                                     f"optional one), got {[type(t).__name__ for t in tensors]}")
            target = self._resolve_target(present[0].device)
        honours = target.honours_memo_key
        sig = (name, memo(*tensors) if honours else full(*tensors))
        call = self._make_call(iface, tensors, whole_shapes=not honours)
        fn = target.kernel_for(self._kernels, name, call)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("%s: target %s serves '%s' for %s on %s (a memo miss; %d launchables memoised)",
                       self._key, target.name, name,
                       ", ".join(f"{k} {str(v.dtype).replace('torch.', '')}{list(v.shape) if v.shape else ''}"
                                 for k, v in call.inputs.items() if v is not None),
                       call.device, len(self._memo) + 1)
        pair = (getattr(fn, "unchecked", fn), fn)
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[sig] = pair
        return pair

    def _make_call(self, iface, tensors, whole_shapes: bool) -> KernelCall:
        entry = self._entry
        in_names = {i.name for i in entry.inputs}
        by_name = dict(zip(iface.tensors, tensors))
        shaped = set(iface.shape_dependent)

        def spec(n, t):
            if t is None:
                return None
            return TensorSpec(t.dtype, t.device, tuple(t.shape) if whole_shapes or n in shaped else None)
        inputs = {n: spec(n, t) for n, t in by_name.items() if n in in_names}
        outputs = {n: spec(n, t) for n, t in by_name.items() if n not in in_names}
        written = tuple(o.alias_of for o in entry.outputs
                        if o.alias_of and by_name.get(o.name) is not None and by_name.get(o.name) is by_name.get(o.alias_of))
        present = [t for t in tensors if t is not None]
        return KernelCall(op_name=type(self).__name__, device=present[0].device, inputs=inputs, outputs=outputs,
                          params=self.resolved_params(), aligned16=all(t.data_ptr() % 16 == 0 for t in present),
                          written=written,
                          unaligned16=frozenset(n for n, t in by_name.items() if t is not None and t.data_ptr() % 16))

    def params(self) -> dict[str, Any]:
        """The constructor parameters by name, as the op stored them."""
        return {p.name: getattr(self, p.name) for p in self._entry.params}

    def resolved_params(self) -> dict[str, Any]:
        """The constructor parameters with defaults resolved, in one place: a param the
        manifest gives `none_means` takes that value when it is None (eps=None is
        torch.finfo(torch.float32).eps, as torch.nn.functional.rms_norm takes it); a
        derived one (attention's scale=None: 1 / sqrt(head_size)) is computed from the
        other params once they are resolved."""
        out, derived = {}, []
        for p in self._entry.params:
            v = getattr(self, p.name)
            if v is None and isinstance(p.none_means, DerivedDefault):
                derived.append(p)
            out[p.name] = p.none_means if v is None and p.none_means is not None else v
        for p in derived:
            out[p.name] = p.none_means(out)
        return out

    def __repr__(self) -> str:
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({ps})  # {self._key}"


_stems = itertools.count()


def _version_of(op) -> str:
    """The params' values as one string (a string: dynamo guards on its value and never
    makes it symbolic, as it may an int). A compiled call traces once per distinct value:
    assigning a param its current value, or returning to earlier values, traces nothing
    new."""
    return repr(tuple(op.__dict__.get(p.name) for p in op._entry.params))


_CPU = torch.device("cpu")


def _as_device(device, opname: str, arg: str) -> torch.device:
    """The device a call without tensor inputs puts its outputs on: None is the CPU; a
    torch.device, a str ("cuda:1") or an int (a CUDA index) as torch takes them."""
    if device is None:
        return _CPU
    if not isinstance(device, torch.device):
        if isinstance(device, bool) or not isinstance(device, (str, int)):
            raise InputTypeError(f"{opname}: argument '{arg}': expected a torch.device, a str or an int (or None: "
                                 f"the CPU), got {type(device).__name__}")
        try:
            device = torch.device(device)
        except (RuntimeError, ValueError):
            raise InputValueError(f"{opname}: argument '{arg}': expected a device, got {device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():   # torch's own: a bare AssertionError
        raise InputValueError(f"{opname}: argument '{arg}': {device} asked for, but CUDA is not available "
                              f"(torch {torch.__version__}, CUDA {torch.version.cuda})")
    return device


def _traced_functions(op) -> tuple:
    """One function per output of `op` (an op without tensor inputs), marked as a constant
    result (torch.compiler.assume_constant_result): when dynamo traces `op(...)` it runs
    the function once, with the values the trace sees, and puts the tensor it returns in
    the graph as a constant (a get_attr), not a node; the traced call returns a clone of
    it, a new tensor on every call. Its arguments are constants only (the version, the
    device, the call-time values: dynamo refuses an object there), the op is the
    function's own. The trace is guarded on `version` (op._params_version, the params'
    values, renewed whenever one is assigned), on the op's identity and on the device and
    call-time values it read, so a changed param traces again instead of returning a stale
    constant (once per distinct set of values: torch's recompile limit, 8 by default,
    bounds how many one compiled function serves; past it, fullgraph=True raises).

    Dynamo names a constant's source after the function, and two sources of one name in
    a graph are refused (AOT autograd): so each instance has functions of its own name,
    and a call repeated within a trace gets the tensor of the first (held weakly here, by
    the graph itself)."""
    stem = f"tileops_{type(op).__name__}_{next(_stems)}"   # the key comes later (registry.issue_key)
    made = weakref.WeakValueDictionary()
    op_ref = weakref.ref(op)   # not an argument: dynamo takes only constants there (torch 2.11)

    def output(k):
        def traced(version, device, kwargs):
            key = (version, device, tuple(sorted(kwargs.items())), k)
            t = made.get(key)
            if t is None:
                res = op_ref()._run_no_boundary(device, dict(kwargs))
                for j, r in enumerate(res if isinstance(res, tuple) else (res,)):
                    made[key[:3] + (j,)] = r
                t = made[key]
            return t
        # dynamo takes the name from the code object (UserFunctionVariable.get_name)
        traced.__code__ = traced.__code__.replace(co_name=f"{stem}_{k}")
        traced.__name__ = traced.__qualname__ = f"{stem}_{k}"
        return torch.compiler.assume_constant_result(traced)
    return tuple(output(k) for k in range(len(op._entry.outputs)))


def _issue_key_after_init(cls):
    """Wraps cls's constructor (its own, or the one it inherits) so that the instance takes
    its key once the outermost constructor has returned, its params stored."""
    init = cls.__dict__.get("__init__") or super(cls, cls).__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if type(self).__init__ is __init__:
            registry.issue_key(self)
    cls.__init__ = __init__


def _coerce_param(opname: str, entry, name: str, value):
    """A constructor param as the manifest types it, in one place for every op: sizes are
    Python ints (an int is a one-dimensional shape; bools, strings and floats are
    refused, not truncated), floats are finite Python floats (a bool, NaN or infinity is
    refused; a negative eps is taken, as torch takes it), dtypes are torch dtypes among the
    param's `dtypes` (a name such as "float32" is taken for its dtype). A value that
    is not of the type raises, naming the op, the param, the type and the value."""
    spec = next(p for p in entry.params if p.name == name)
    kind = spec.type.replace(" ", "")
    if value is None and (kind.endswith("|None") or spec.default is None):
        return None
    kind = kind.replace("|None", "")

    def bad(expected):
        return InputTypeError(f"{opname}: param '{name}': expected {expected}, got {value!r}")

    def size(v):
        if isinstance(v, bool) or isinstance(v, (str, bytes, float)):
            raise bad("a size (int >= 0)")
        try:
            v = operator.index(v)
        except TypeError:
            raise bad("a size (int >= 0)") from None
        if v < 0 or v >= 2**62:
            raise InputValueError(f"{opname}: param '{name}': expected sizes in [0, 2**62), got {value!r}")
        return v

    if kind == "tuple[int,...]":
        if isinstance(value, (list, tuple, torch.Size)):
            shape = tuple(size(v) for v in value)
        else:
            shape = (size(value),)
        if not shape:
            raise InputValueError(f"{opname}: param '{name}': expected at least one dimension, got {value!r}")
        return shape
    if kind == "int":
        return size(value)
    if kind == "float":
        if isinstance(value, (bool, str, bytes)) or isinstance(value, torch.Tensor):
            raise bad("a float")
        try:
            f = float(value)
        except (TypeError, ValueError, OverflowError):
            raise bad("a float") from None
        if not math.isfinite(f):   # a NaN or infinite param makes every output NaN (or 0)
            raise InputValueError(f"{opname}: param '{name}': expected a finite float, got {value!r}")
        if abs(f) > _FLOAT32_MAX:   # the kernels take their float params as float32
            raise InputValueError(f"{opname}: param '{name}': expected a float within float32's range "
                                  f"(|value| <= {_FLOAT32_MAX:.8g}: the kernels compute in float32), got {value!r}")
        return f
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("a bool")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise bad("a str" if spec.choices is None else f"one of {list(spec.choices)}")
        if spec.choices is not None and value not in spec.choices:
            raise InputValueError(f"{opname}: param '{name}': expected one of {list(spec.choices)}, got {value!r}")
        return value
    if kind == "dtype":   # a torch dtype, or its name as the manifest writes it ("float32")
        from .._dtypes import BY_NAME
        allowed = " | ".join(str(d).replace("torch.", "") for d in spec.dtypes)
        dt = BY_NAME.get(value) if isinstance(value, str) else value
        if not isinstance(dt, torch.dtype):
            raise bad(f"a torch dtype ({allowed})")
        if dt not in spec.dtypes:
            raise InputValueError(f"{opname}: param '{name}': expected one of {allowed}, got {value!r}")
        return dt
    return value
