"""RotaryEmbedding: rotary position embeddings of q and k (vLLM's layout and call), owning
its cos/sin cache.

The cache is a float32 buffer [max_position, rotary_dim] (the cos half, then the sin half;
not in the state_dict, as vLLM keeps it), computed at construction on the module's device.
It stays float32 through `.to(dtype)` (RopeFwdOp reads float32) and follows device moves.
"""
from __future__ import annotations

import torch

from ..ops.positional.rope import RopeFwdOp
from ..ops.positional.rope_cos_sin_cache import RopeCosSinCacheFwdOp
from ._base import OpModule


class RotaryEmbedding(OpModule):
    """Rotates the first `rotary_dim` channels of every head of q and k by the cos/sin row
    of each token's position (NeoX halves, or GPT-J pairs with is_neox=False).

    Parameters: head_size, rotary_dim (None: head_size), max_position (the cache's rows),
    base (rope_theta), is_neox, rope_scaling (None, or {"rope_type": "linear", "factor": f}
    or {"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
    "original_max_position_embeddings"}, Hugging Face's keys), cast_cos_sin (Hugging Face's
    arithmetic: cos/sin cast to q's dtype, the rotation in that dtype; RopeFwdOp's param),
    device, target.

    forward(positions, query, key, *, inplace=False) -> (query, key): positions int32/int64
    [T]; query [T, H, head_size] or [T, H * head_size] (key likewise, its own head count),
    views with a unit last stride read in place; the results have the inputs' shapes
    (inplace=True writes query and key and returns them)."""

    op_class = RopeFwdOp
    op_params = (("head_size", "head_size"), ("rotary_dim", "rotary_dim"), ("is_neox", "is_neox"),
                 ("cast_cos_sin", "cast_cos_sin"))

    # what the cos/sin cache is computed from: assigned after construction, the cache is
    # computed again (a module over a given cache refuses: it has nothing to compute from)
    _CACHE_ATTRS = {"rotary_dim": int, "max_position": int, "base": float,   # and how each is typed
                    "rope_scaling": lambda v: dict(v) if v else None}

    def __init__(self, head_size, rotary_dim=None, max_position=8192, base=10000.0, is_neox=True,
                 rope_scaling=None, *, cast_cos_sin=False, device=None, target=None, cos_sin_cache=None):
        super().__init__()
        self.target = target
        self.head_size = int(head_size)
        self.is_neox = bool(is_neox)
        self.cast_cos_sin = bool(cast_cos_sin)
        given = {"rotary_dim": head_size if rotary_dim is None else rotary_dim, "max_position": max_position,
                 "base": base, "rope_scaling": rope_scaling}
        for name, typed in self._CACHE_ATTRS.items():
            setattr(self, name, typed(given[name]))
        self._check_dims(self.head_size, self.rotary_dim)
        given = cos_sin_cache is not None
        if not given:
            cos_sin_cache = self._compute_cache(device)
        self.register_buffer("cos_sin_cache", cos_sin_cache.to(device=device, dtype=torch.float32), persistent=False)
        self._cache_given = given

    @staticmethod
    def _check_dims(head_size, rotary_dim):
        if not (head_size >= 2 and rotary_dim % 2 == 0 and 2 <= rotary_dim <= head_size):
            from ..errors import InputValueError
            raise InputValueError(f"RotaryEmbedding: expected an even rotary_dim in [2, head_size], got head_size "
                                  f"{head_size}, rotary_dim {rotary_dim}")

    def __setattr__(self, name, value):
        built = "_cache_given" in self.__dict__
        if built and name in self._CACHE_ATTRS:
            if self._cache_given:
                from ..errors import InputValueError
                raise InputValueError(f"RotaryEmbedding: {name}: this module rotates by a cos/sin cache it was given "
                                      f"(from_cos_sin_cache), so it cannot compute one for a new {name}; build a new "
                                      f"module")
            value = self._CACHE_ATTRS[name](value)
            if name == "rotary_dim":
                self._check_dims(self.head_size, value)
            old = self.__dict__[name]
            object.__setattr__(self, name, value)
            try:
                cache = self._compute_cache(self.cos_sin_cache.device)
            except BaseException:
                object.__setattr__(self, name, old)   # a refused value leaves the module as it was
                raise
            if name == "rotary_dim":
                super().__setattr__(name, value)       # the op param: takes the op for it
            self.cos_sin_cache = cache
            return
        if built and name == "head_size":
            self._check_dims(int(value), self.rotary_dim)
        super().__setattr__(name, value)

    @classmethod
    def from_cos_sin_cache(cls, cos_sin_cache, head_size, is_neox=True, *, cast_cos_sin=False, target=None):
        """A module over a cache someone else computed (float32 [max_position, rotary_dim]),
        e.g. Hugging Face's own cos/sin values (tileops.nn.hf)."""
        return cls(head_size, cos_sin_cache.shape[1], cos_sin_cache.shape[0], is_neox=is_neox, target=target,
                   cast_cos_sin=cast_cos_sin, cos_sin_cache=cos_sin_cache, device=cos_sin_cache.device)

    def _compute_cache(self, device):
        kw = {}
        s = self.rope_scaling
        if s:
            kind = s.get("rope_type", s.get("type"))
            if kind not in ("default", "linear", "llama3"):
                from ..errors import InputValueError
                raise InputValueError(f"RotaryEmbedding: rope_scaling type {kind!r}: expected 'default', 'linear' or "
                                      f"'llama3'")
            need = {"default": (), "linear": ("factor",),
                    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}
            missing = [key for key in need[kind] if key not in s]
            if missing:
                from ..errors import InputValueError
                raise InputValueError(f"RotaryEmbedding: rope_scaling of type {kind!r}: expected the keys "
                                      f"{list(need[kind])}, missing {missing} in {s!r}")
            if kind != "default":
                kw = {"rope_type": kind, "factor": float(s["factor"])}
            if kind == "llama3":
                kw.update(low_freq_factor=float(s["low_freq_factor"]), high_freq_factor=float(s["high_freq_factor"]),
                          original_max_position_embeddings=int(s["original_max_position_embeddings"]))
        op = RopeCosSinCacheFwdOp(float(self.base), self.rotary_dim, self.max_position, **kw)
        return op(device=device)

    def _apply(self, fn, recurse=True):
        before = self.cos_sin_cache
        super()._apply(fn, recurse)
        if self.cos_sin_cache.dtype != torch.float32:
            # a dtype move: the cache stays float32 (from the float32 values, not the cast ones)
            self.cos_sin_cache = before.to(self.cos_sin_cache.device)
        return self

    def forward(self, positions, query, key, *, inplace=False):
        d = self.head_size
        for name, t in (("query", query), ("key", key)):
            if isinstance(t, torch.Tensor) and t.dim() == 2 and t.shape[1] % d:
                from ..errors import InputValueError
                raise InputValueError(f"RotaryEmbedding: argument '{name}': expected [T, H, {d}] or [T, H * {d}] "
                                      f"(head_size {d}), got shape {tuple(t.shape)}")
        q = query if query.dim() == 3 else query.view(query.shape[0], -1, d)
        k = key if key.dim() == 3 else key.view(key.shape[0], -1, d)
        q_out, k_out = self._op(q, k, positions, self.cos_sin_cache, inplace=inplace)
        if inplace:
            return query, key
        return q_out.view(query.shape), k_out.view(key.shape)

    def extra_repr(self):
        return (f"head_size={self.head_size}, rotary_dim={self.rotary_dim}, max_position={self.max_position}, "
                f"base={self.base}, is_neox={self.is_neox}"
                + (f", rope_scaling={self.rope_scaling}" if self.rope_scaling else "")
                + (", cast_cos_sin=True" if self.cast_cos_sin else ""))
