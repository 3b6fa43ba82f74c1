"""Instance keys: "<Class>#<n>", strings (a constant under tracing, where an int would become
a SymInt), never reused within a process, held in a weak registry so an op that is dropped
frees its kernels."""
import itertools
import threading
import weakref

INSTANCES: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()
_counter = itertools.count()
_lock = threading.Lock()


def new_key(obj) -> str:
    with _lock:
        key = f"{type(obj).__name__}#{next(_counter)}"
        INSTANCES[key] = obj
    return key
