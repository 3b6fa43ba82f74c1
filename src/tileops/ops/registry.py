"""Instance keys: "<Class>#<n>", strings (a constant under tracing, where an int would become
a SymInt), never reused within a process, held in a weak registry so an op that is dropped
frees its kernels.

The registry is a plain dict of weak references, each removing its own entry when its op
dies: the operator body recovers its instance with one dict lookup and one call, where a
WeakValueDictionary would run a Python-level `get` on every call."""
import itertools
import threading
import weakref

INSTANCES: "dict[str, weakref.ref]" = {}
_counter = itertools.count()
_lock = threading.Lock()


def _forget(key: str, _pop=INSTANCES.pop):
    # keys are never reused, so the entry popped is always this dead op's own (`_pop` is
    # bound here: the callback may run at interpreter exit, after module globals are gone)
    return lambda _ref: _pop(key, None)


def new_key(obj) -> str:
    with _lock:
        key = f"{type(obj).__name__}#{next(_counter)}"
        INSTANCES[key] = weakref.ref(obj, _forget(key))
    return key


def NO_REF():
    """Stands in for the weak reference of a key with no entry: `INSTANCES.get(key,
    NO_REF)()` is the live instance with that key, or None."""
    return None
