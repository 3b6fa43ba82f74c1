"""OpModule: what every tileops.nn module shares - the interned op it calls, refreshed when
one of the module's op params is assigned, and re-interned after a copy or unpickling."""
from __future__ import annotations

import torch

from . import _intern


class OpModule(torch.nn.Module):
    """A module calling one interned op instance, `self._op`.

    A subclass names its op class (`op_class`) and the module attributes that are that
    op's params (`op_params`, manifest order: ((op param, module attribute), ...)). Assigning
    one of those attributes takes the interned instance for the new values (the shared
    instance is never written). `target` picks who serves the op (None: by device)."""

    op_class = None
    op_params: tuple = ()

    def _op_raw(self) -> tuple:
        return tuple(getattr(self, attr) for _, attr in self.op_params)

    def _refresh_op(self):
        if all(attr in self.__dict__ for _, attr in self.op_params) and "target" in self.__dict__:
            object.__setattr__(self, "_op", _intern.lookup(self.op_class, self.target, *self._op_raw()))

    def __setattr__(self, name, value):
        if name != "target" and all(name != attr for _, attr in self.op_params):
            super().__setattr__(name, value)
            return
        missing = object()
        old = self.__dict__.get(name, missing)
        super().__setattr__(name, value)
        try:
            self._refresh_op()
        except BaseException:   # a refused value leaves the module as it was (found by review)
            if old is missing:
                self.__dict__.pop(name, None)
            else:
                object.__setattr__(self, name, old)
            raise

    @property
    def op(self):
        """The interned op instance this module calls (shared: do not assign its params)."""
        return self._op

    # copies and pickles carry the params, not the op: the copy takes the interned instance
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_op", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._refresh_op()

