"""PagedAttention: a layer's attention past the projections and the rotary embedding, on a
paged KV cache in vLLM's flash layout (key_cache / value_cache [num_blocks, block_size,
H_kv, head_size], a token's slot = block * block_size + offset).

A call writes the new tokens' keys and values into the cache (KVCacheWriteFwdOp, at the
slots `slot_mapping` gives), then attends:

  decode   one query token per sequence (S == 1): PagedDecodeAttentionFwdOp over each
           sequence's seq_lens[b] tokens, found through its block_table row (the new token
           included: its key and value were just written).
  prefill  S > 1 tokens per sequence, the whole sequence so far (positions 0 .. S - 1):
           torch's scaled_dot_product_attention(is_causal=True, enable_gqa=True) on the
           prompt's own keys and values, as they came in (not read back from the cache).
           tileops has no prefill attention op yet; a prefill that continues a sequence
           already in the cache (chunked prefill, prefix caching) is not served here.

Both ops are interned (tileops.nn._intern): every PagedAttention with equal head_size,
block_size and scale calls the same instances, so N equal layers compile once. Under
torch.compile a decode call is two nodes (the cache write, the decode attention), a
prefill call the cache write and torch's attention; PagedAttention itself has no boundary
(a composite, as the seed says: dynamo traces its forward)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import InputValueError
from ..ops.attention.kv_cache_write import KVCacheWriteFwdOp
from ..ops.attention.paged_decode_attention import PagedDecodeAttentionFwdOp
from . import _intern
from ._base import OpModule


class PagedAttention(OpModule):
    """Attention of q against the keys and values of a paged KV cache, writing the new
    tokens' k and v into it first (module docstring: decode and prefill).

    Parameters: num_heads, head_size (a multiple of 16 in [16, 256]: the decode op's
    rule), num_kv_heads (None: num_heads; num_heads a multiple of it: GQA, query head h
    reads KV head h // (num_heads / num_kv_heads)), block_size (tokens per cache block:
    the caches' dimension 1), scale (None: 1 / sqrt(head_size)), target. No parameters of
    its own (state_dict empty).

    forward(query, key, value, kv_cache, slot_mapping, block_table=None, seq_lens=None)
      query [B, S, num_heads, head_size] or [B, S, num_heads * head_size]; key and value
      [B, S, num_kv_heads, head_size] or flat likewise (views with a unit last stride, e.g.
      slices of a packed qkv, are read in place); kv_cache (key_cache, value_cache), each
      [num_blocks, block_size, num_kv_heads, head_size], contiguous, of query's dtype,
      written in place; slot_mapping int64 or int32 [B, S] or [B * S] (a negative slot
      writes nothing). Decode (S == 1) needs block_table int32 [B, max_blocks] and
      seq_lens int32 [B] (the tokens of each sequence, the new one included), their types
      and shapes checked before the cache write; prefill (S > 1) refuses them. Returns the attention output in query's layout ([B, S,
      num_heads, head_size] or flat), a new tensor."""

    op_class = PagedDecodeAttentionFwdOp
    op_params = (("head_size", "head_size"), ("block_size", "block_size"), ("scale", "scale"))

    def __init__(self, num_heads, head_size, num_kv_heads=None, block_size=16, scale=None, *, target=None):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if num_heads < 1 or num_kv_heads < 1 or num_heads % num_kv_heads:
            raise InputValueError(f"PagedAttention: num_heads ({num_heads}) must be a positive multiple of "
                                  f"num_kv_heads ({num_kv_heads})")
        if head_size % 16 or not 16 <= head_size <= 256:   # the decode op's rule, here before any call
            raise InputValueError(f"PagedAttention: head_size: expected a multiple of 16 in [16, 256] (the decode "
                                  f"attention's), got {head_size}")
        self.num_heads = int(num_heads)
        self.num_kv_heads = int(num_kv_heads)
        self.target = target
        self.head_size = int(head_size)
        self.block_size = int(block_size)
        self.scale = None if scale is None else float(scale)

    def _refresh_op(self):
        super()._refresh_op()
        if "target" in self.__dict__:
            object.__setattr__(self, "_write_op", _intern.lookup(KVCacheWriteFwdOp, self.target))

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_write_op", None)
        return state

    @property
    def write_op(self):
        """The interned KVCacheWriteFwdOp this module calls (shared)."""
        return self._write_op

    def new_kv_cache(self, num_blocks, *, device=None, dtype=None):
        """(key_cache, value_cache): zeros [num_blocks, block_size, num_kv_heads, head_size]."""
        shape = (int(num_blocks), self.block_size, self.num_kv_heads, self.head_size)
        return (torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))

    def _heads(self, t, name, heads):
        """t as [B, S, heads, head_size] (a view)."""
        d = self.head_size
        if t.dim() == 3 and t.shape[-1] == heads * d:
            return t.view(t.shape[0], t.shape[1], heads, d)
        if t.dim() == 4 and t.shape[2] == heads and t.shape[3] == d:
            return t
        raise InputValueError(f"PagedAttention: argument '{name}': expected [B, S, {heads}, {d}] or "
                              f"[B, S, {heads * d}], got {list(t.shape)}")

    def forward(self, query, key, value, kv_cache, slot_mapping, block_table=None, seq_lens=None):
        q = self._heads(query, "query", self.num_heads)
        k = self._heads(key, "key", self.num_kv_heads)
        v = self._heads(value, "value", self.num_kv_heads)
        b, s = q.shape[0], q.shape[1]
        if tuple(k.shape[:2]) != (b, s) or tuple(v.shape[:2]) != (b, s):
            raise InputValueError(f"PagedAttention: key and value must have query's [B, S] = [{b}, {s}], got "
                                  f"{list(k.shape[:2])} and {list(v.shape[:2])}")
        key_cache, value_cache = kv_cache
        if key_cache.dim() != 4 or key_cache.shape[1] != self.block_size:
            raise InputValueError(f"PagedAttention: argument 'kv_cache': expected caches [num_blocks, "
                                  f"{self.block_size}, {self.num_kv_heads}, {self.head_size}] (block_size "
                                  f"{self.block_size}), got {list(key_cache.shape)}")
        if s == 1:
            self._check_decode_tables(block_table, seq_lens, b, query.device)
        elif block_table is not None or seq_lens is not None:
            raise InputValueError("PagedAttention: a prefill call (S > 1 tokens per sequence: the whole sequence "
                                  "so far) reads neither block_table nor seq_lens; a prefill that continues a "
                                  "sequence already in the cache is not served here (module docstring)")
        kt = k.reshape(b * s, self.num_kv_heads, self.head_size)
        vt = v.reshape(b * s, self.num_kv_heads, self.head_size)
        self._write_op(kt, vt, key_cache, value_cache, slot_mapping.reshape(-1))
        if s == 1:
            o = self._op(q.reshape(b, self.num_heads, self.head_size), key_cache, value_cache, block_table,
                         seq_lens)
            o = o.view(b, 1, self.num_heads, self.head_size)
        else:
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True, scale=self.scale,
                                               enable_gqa=self.num_heads != self.num_kv_heads)
            o = o.transpose(1, 2).contiguous()
        return o if query.dim() == 4 else o.view(b, s, -1)

    @staticmethod
    def _check_decode_tables(block_table, seq_lens, b, device):
        """What the decode attention would refuse of its tables' types and shapes, checked
        before the cache write (found by review: a bad table raised after the write).
        Their values (block ids, lengths) are the decode's to check (on the CPU; a GPU's
        outcome is documented by PagedDecodeAttentionFwdOp), after the new tokens' keys and
        values are in their slots."""
        for name, t, dims in (("block_table", block_table, 2), ("seq_lens", seq_lens, 1)):
            if not isinstance(t, torch.Tensor):
                raise InputValueError(f"PagedAttention: a decode call (one query token per sequence) needs {name}, "
                                      f"an int32 tensor, got {type(t).__name__}")
            if t.dtype != torch.int32 or t.dim() != dims or t.shape[0] != b or t.device != device:
                raise InputValueError(f"PagedAttention: argument '{name}': expected an int32 tensor of {dims} "
                                      f"dimension{'s' if dims > 1 else ''} and {b} rows on {device}, got "
                                      f"{t.dtype} {list(t.shape)} on {t.device}")

    def extra_repr(self):
        return (f"num_heads={self.num_heads}, head_size={self.head_size}, num_kv_heads={self.num_kv_heads}, "
                f"block_size={self.block_size}" + ("" if self.scale is None else f", scale={self.scale}"))
