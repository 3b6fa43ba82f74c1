"""KVCacheWriteFwdOp: a layer's new keys and values written into its paged KV cache."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.attention.kv_cache_write import KVCacheWriteInterface, KVCacheWriteKernel
from ..op import Op


class KVCacheWriteFwdOp(Op):
    """Writes each token's key and value into the cache slot `slot_mapping` gives it, as
    vLLM's ``reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping)``
    does, in place; returns nothing.

    Call ``op(k, v, key_cache, value_cache, slot_mapping)``: the keys k and values v
    [T, H_kv, D] of one dtype (float32, float16, bfloat16; any token and head strides with
    unit channel stride: views into a packed qkv tensor are read in place), key_cache and
    value_cache [num_blocks, block_size, H_kv, D] of that dtype, contiguous (vLLM's flash
    layout, FlashInfer's NHD pages; a non-contiguous cache is refused: the op never copies
    it), slot_mapping int64 or int32 [T]. Token t goes to block s // block_size, offset
    s % block_size, s = slot_mapping[t]; a negative slot (vLLM pads with -1) writes
    nothing. A slot >= num_blocks * block_size raises on the CPU (naming the token and the
    value; nothing written); on a GPU, where checking costs a synchronisation, that token
    is skipped as a negative slot is (nothing is written outside the caches). Two tokens
    with one slot: one of the two is written (which one is not specified). The caches
    must not overlap each other, k or v (the boundary refuses it, as for every op's
    written tensors).
    """

    kernel_types = {"kv_cache_write": KVCacheWriteKernel}
    interfaces = {"kv_cache_write": KVCacheWriteInterface}

    def forward(self, k: Tensor, v: Tensor, key_cache: Tensor, value_cache: Tensor, slot_mapping: Tensor) -> None:
        self._kernel_for("kv_cache_write", k, v, key_cache, value_cache, slot_mapping)(
            k, v, key_cache, value_cache, slot_mapping)
