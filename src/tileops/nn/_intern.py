"""One op instance per distinct (op class, params, target): what modules and the functional
API call through.

Why: an op instance's key is a compile-time constant of every graph that calls it (the
seed: "Construct the op instance once and reuse it"), so N layers holding N equal instances
compile N times under regional compilation and hit dynamo's recompile limit after 8. Every
module and functional call with equal params gets the same instance from here, so N equal
layers compile once.

An interned instance is frozen: assigning one of its params raises (a module whose eps
changes takes another interned instance; it never writes the shared one's params).

Under torch.compile the instance is found by a name (`_name_for`, which dynamo calls at
trace time as a constant function: it constructs a missing instance there, outside the
trace, and returns the name) and one attribute read of that name on `_HOLDER`, a module
object holding every interned instance as an attribute. Dynamo reads a module attribute
when it meets it (an instance interned earlier in the same trace is there) and guards on
that attribute alone, so interning a new instance later does not recompile graphs that use
other ones. (A dict would not do: dynamo snapshots a dict at its first read in a frame.)"""
from __future__ import annotations

import operator
import threading
import types

import torch

from .. import targets as _targets
from ..ops.op import _coerce_param

_BY_KEY: dict = {}     # "<Class>(params...)" -> op instance (never dropped: instances are few)
_FAST: dict = {}       # (cls, *raw params) -> op instance: the eager path skips coercion and repr
_NAMES: dict = {}      # registry key -> attribute name on _HOLDER
_HOLDER = types.ModuleType("tileops.nn._interned_ops")   # every interned instance, as an attribute
_lock = threading.Lock()


def canonical_params(cls, params: dict) -> tuple:
    """The params of `cls` in manifest order, coerced as the op types them (an int shape
    becomes a 1-tuple, floats become Python floats), defaults filled in: equal op
    configurations give equal tuples."""
    import inspect
    entry = cls._entry
    sig = inspect.signature(cls.__init__)
    out = []
    for p in entry.params:
        if p.name in params:
            v = params[p.name]
        else:
            d = sig.parameters.get(p.name)
            v = d.default if d is not None and d.default is not inspect.Parameter.empty else p.default
        out.append((p.name, _coerce_param(cls.__name__, entry, p.name, v)))
    unknown = set(params) - {p.name for p in entry.params}
    if unknown:
        from ..errors import InputTypeError
        raise InputTypeError(f"{cls.__name__}: unknown param(s) {sorted(unknown)}; the op takes "
                             f"{[p.name for p in entry.params]}")
    return tuple(out)


def _key(cls, canon: tuple, target) -> str:
    return f"{cls.__name__}{canon!r}" + ("" if target is None else f"@{target}")


def _interned(cls, target, params: dict):
    """(the interned instance of `cls` with these params, its registry key)."""
    canon = canonical_params(cls, params)
    key = _key(cls, canon, target)
    op = _BY_KEY.get(key)
    if op is None:
        with _lock:
            op = _BY_KEY.get(key)
            if op is None:
                op = cls(**dict(canon), target=target)
                op._interned = True     # Op.__setattr__ refuses to assign its params
                name = f"op{len(_BY_KEY)}_{cls.__name__}"
                setattr(_HOLDER, name, op)
                _NAMES[key] = name
                _BY_KEY[key] = op
    return op, key


def instance(cls, target=None, **params):
    """The interned instance of `cls` with these params (constructed on first use)."""
    return _interned(cls, target, params)[0]


def _param_names(cls) -> tuple:
    return tuple(p.name for p in cls._entry.params)


@torch._dynamo.assume_constant_result
def _name_for(cls, target, raw: tuple) -> str:
    """Called by dynamo at trace time as a constant function (not traced): interns the
    instance for the raw params (manifest order) and returns its name on _HOLDER."""
    return _NAMES[_interned(cls, target, dict(zip(_param_names(cls), raw)))[1]]


def lookup(cls, target, *raw):
    """The interned instance for the raw params `raw` (in manifest order): eager calls hit a
    dict keyed by the raw values; under torch.compile the instance's name is a trace-time
    constant and the instance one attribute of _HOLDER, guarded on that name alone. No
    target: tileops.set_default_target's, when one is set (so a module or function call
    made after it follows it, as a new op does, and the instance's key names it)."""
    if target is None:
        target = _targets.default_target()
    if torch.compiler.is_compiling():
        return getattr(_HOLDER, _name_for(cls, target, raw))
    op = _FAST.get((cls, target, *raw))
    if op is None:
        op = instance(cls, target, **dict(zip(_param_names(cls), raw)))
        if len(_FAST) < 65536:
            try:
                _FAST[(cls, target, *raw)] = op
            except TypeError:   # an unhashable raw param (a list shape): no fast entry
                pass
    return op


def static_shape(shape) -> tuple:
    """A shape as Python ints (a dynamic size under torch.compile is specialised: an op's
    params are constants of its graph)."""
    return tuple(operator.index(d) for d in shape)


def interned() -> dict:
    """The interned instances, by registry key (a copy)."""
    return dict(_BY_KEY)
