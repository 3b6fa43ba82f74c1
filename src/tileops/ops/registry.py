"""Instance keys: strings (a constant under tracing, where an int would become a SymInt),
never reused within a process, held in a weak registry so an op that is dropped frees its
kernels.

A key names the instance and everything its computation depends on:

    RMSNormFwdOp#0(normalized_shape=(4096,), eps=None)
    <class>#<n>(<each constructor param, in manifest order, as repr>[, target='<name>'])

`n` makes it unique within the process (two instances with equal params are still two
instances: each has its own target and kernel table); the params make it mean the same
thing in every process. A saved or compiled program carries the key as a constant, so in a
process where no live instance has that key (another process, or the instance is gone) the
operator rebuilds the op from the key's own params (`rebuild`), registers it under that
key and keeps it; it never runs an instance constructed with other params. An op whose
param is assigned after construction takes a new key (its old key no longer names it), so
a program saved before the assignment keeps the params it was saved with, and code
compiled before it recompiles (dynamo guards the key) and sees the new ones.

The registry is a plain dict of weak references, each removing its own entry when its op
dies: the operator body recovers its instance with one dict lookup and one call, where a
WeakValueDictionary would run a Python-level `get` on every call."""
from __future__ import annotations

import ast
import itertools
import logging
import re
import threading
import weakref

INSTANCES: "dict[str, weakref.ref]" = {}
# keys adopted from programs (rebuilt instances, held for the process: a loaded program
# has no other owner for them); never issued to a new instance
_ADOPTED: "dict[str, object]" = {}
_counter = itertools.count()
_lock = threading.RLock()
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)#([0-9]+)\((.*)\)", re.S)
_MAX_KEY = 4096
log = logging.getLogger("tileops.registry")


def _forget(key: str, _get=INSTANCES.get, _pop=INSTANCES.pop):
    # pops the entry only while it is still this op's own (a rebuilt op may hold the key
    # since); `_get`/`_pop` are bound here: the callback may run at interpreter exit, after
    # module globals are gone
    def forget(ref):
        if _get(key) is ref:
            _pop(key, None)
    return forget


def _literal(value):
    """A param as a literal the key can carry: a torch dtype by its name ("float32", which
    the dtype params take), anything else as it is."""
    import torch
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else value


def params_text(obj) -> str:
    """The params part of obj's key: each constructor param as repr, in manifest order, and
    the target asked for at construction, if any."""
    parts = [f"{p.name}={_literal(getattr(obj, p.name))!r}" for p in type(obj)._entry.params]
    target = obj.__dict__.get("_target_request")
    if target is not None:
        parts.append(f"target={target!r}")
    return ", ".join(parts)


def _register(obj, key: str):
    old = obj.__dict__.get("_key")
    if old is not None and old != key:
        ref = INSTANCES.get(old)
        if ref is not None and ref() is obj:
            del INSTANCES[old]
    object.__setattr__(obj, "_key", key)
    INSTANCES[key] = weakref.ref(obj, _forget(key))


def issue_key(obj) -> str:
    """Gives obj a new key of its current params (its previous key, if any, stops naming
    it) and registers it."""
    text = params_text(obj)
    name = type(obj).__name__
    with _lock:
        while True:
            key = f"{name}#{next(_counter)}({text})"
            if key not in INSTANCES and key not in _ADOPTED:
                break
        _register(obj, key)
    return key


def _parse_params(text: str) -> dict:
    """`a=(1,), b=None` -> {'a': (1,), 'b': None}: keyword literals only (never evaluated)."""
    call = ast.parse(f"f({text})", mode="eval").body
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        raise ValueError("not a list of name=literal")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def rebuild(cls, key: str):
    """The instance of `cls` a key names where no live instance has it: constructed from
    the key's params, checked to have exactly them, registered under the key and kept for
    the process. Raises TileOpsError, naming the key and why, if it cannot be."""
    from ..errors import TileOpsError
    opname = cls.__name__
    head = (f"{opname}: no live instance with key {key!r}, and it cannot be rebuilt from the key: ")
    m = _KEY.fullmatch(key) if isinstance(key, str) and len(key) <= _MAX_KEY else None
    if m is None:
        raise TileOpsError(head + f"a key reads '{opname}#<n>(<params>)' (a program saved by tileops before "
                           f"0.2 names no params: export it again)")
    if m.group(1) != opname:
        raise TileOpsError(head + f"it names a {m.group(1)}, not a {opname}")
    with _lock:
        ref = INSTANCES.get(key)
        obj = ref() if ref is not None else None
        if obj is not None:       # another thread rebuilt it meanwhile
            return obj
        try:
            kwargs = _parse_params(m.group(3))
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as e:
            raise TileOpsError(head + f"its params are not name=literal pairs ({type(e).__name__})") from None
        known = [p.name for p in cls._entry.params]
        missing = [n for n in known if n not in kwargs]
        unknown = [n for n in kwargs if n not in known and n != "target"]
        if missing or unknown:
            raise TileOpsError(head + f"this tileops' {opname} takes the params {known}; the key "
                               + (f"lacks {missing}" if missing else "") + (" and " if missing and unknown else "")
                               + (f"has {unknown}, which it does not know" if unknown else "")
                               + " (saved by another version of tileops?)")
        try:
            obj = cls(**kwargs)
        except Exception as e:
            raise TileOpsError(head + f"{opname}(**{kwargs!r}) raised {type(e).__name__}: {e}") from None
        if params_text(obj) != m.group(3):
            raise TileOpsError(head + f"{opname}(**{kwargs!r}) holds ({params_text(obj)}), not exactly the "
                               f"saved ({m.group(3)})")
        _register(obj, key)
        _ADOPTED[key] = obj
    log.info("tileops: rebuilt %s for key %r (no live instance had it: a program saved in another process, "
             "or compiled for an instance since dropped or changed)", opname, key)
    return obj


def NO_REF():
    """Stands in for the weak reference of a key with no entry: `INSTANCES.get(key,
    NO_REF)()` is the live instance with that key, or None."""
    return None
