"""A dispatch mode that records the tileops operators a call reaches. Any active dispatch
mode also rules the eager fast path out, so running a call under it forces the operator."""
from torch.utils._python_dispatch import TorchDispatchMode


class Spy(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "tileops":
            self.calls.append(func)
        return func(*args, **(kwargs or {}))
