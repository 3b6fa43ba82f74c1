"""A dispatch mode that records the tileops operators a call reaches. Any active dispatch
mode also rules the eager fast path out, so running a call under it forces the operator."""
from torch.utils._python_dispatch import TorchDispatchMode

from helpers import clone


class Spy(TorchDispatchMode):
    """`calls`: each tileops operator reached; with keep_args, `args`: a copy of the
    arguments of each, taken before it runs."""

    def __init__(self, keep_args=False):
        super().__init__()
        self.calls = []
        self.args = []
        self.keep_args = keep_args

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "tileops":
            self.calls.append(func)
            if self.keep_args:
                self.args.append(tuple(clone(a) for a in args))
        return func(*args, **(kwargs or {}))
