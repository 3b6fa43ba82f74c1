"""PagedDecodeAttentionFwdOp: decode attention over a paged KV cache (vLLM's layout)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.attention.paged_decode_attention import PagedDecodeAttentionInterface, PagedDecodeAttentionKernel
from ..op import Op


class PagedDecodeAttentionFwdOp(Op):
    """One query token per sequence attending to that sequence's tokens in a paged KV
    cache, as vLLM's paged attention: o[b, h] = softmax(q[b, h] K_b^T * scale) V_b over
    the seq_lens[b] tokens of sequence b, token t stored in block block_table[b, t //
    block_size] at row t % block_size; query head h reads KV head h // (H / H_kv) (GQA).

    Parameters
    ----------
    head_size : int
        Channels per head (D): a multiple of 16 in [16, 256].
    block_size : int
        Tokens per cache block.
    scale : float, optional
        Multiplies the scores; None: 1 / sqrt(head_size) (as scaled_dot_product_attention).
    target : str, optional
        Which target serves this instance ("builtin", "aten", or a plugin's name).

    Call ``op(q, key_cache, value_cache, block_table, seq_lens, *, return_lse=False,
    out=None)``: q [B, H, D], key_cache and value_cache [num_blocks, block_size, H_kv, D]
    of q's dtype (float32, float16, bfloat16; contiguous, never copied), block_table int32
    [B, max_blocks], seq_lens int32 [B] (each in [0, max_blocks * block_size]). Returns o
    [B, H, D] (new, or `out` filled), and with return_lse=True (o, lse), lse float32
    [B, H] the natural log-sum-exp of each head's scaled scores (to merge with other
    partial attentions). A sequence of length 0 gives o = 0 and lse = -inf. Block table
    entries past a sequence's blocks are never used (any value, out of range too), and blocks
    may be shared.

    A length outside [0, max_blocks * block_size] or a block id outside [0, num_blocks)
    among a sequence's blocks raises on the CPU (naming the argument, the index and the
    value; nothing written); on a GPU, where checking costs a synchronisation, nothing is
    read out of bounds and that sequence's o and lse come out NaN (the others exact).

    Serving: the GPU launch depends on shapes only (CUDA-graph safe: capture once, replay
    with new seq_lens and block tables); a sequence's output is bitwise the same whatever
    else is in the batch (a fixed 256-token chunking folded in one fixed order, on the CPU
    and on a GPU); a split along the sequence (few sequences x KV heads) takes a float32
    workspace from torch's caching allocator per call.
    """

    kernel_types = {"paged_decode_attention": PagedDecodeAttentionKernel}
    interfaces = {"paged_decode_attention": PagedDecodeAttentionInterface}

    def __init__(self, head_size: int, block_size: int, scale: float | None = None, *,
                 target: str | None = None) -> None:
        super().__init__(target=target)
        self.head_size = head_size
        self.block_size = block_size
        self.scale = scale

    def forward(self, q: Tensor, key_cache: Tensor, value_cache: Tensor, block_table: Tensor, seq_lens: Tensor, *,
                return_lse: bool = False, out: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        o, lse = self.allocate(q, key_cache, value_cache, block_table, seq_lens, return_lse=return_lse, out=out)
        self._kernel_for("paged_decode_attention", q, key_cache, value_cache, block_table, seq_lens, o, lse)(
            q, key_cache, value_cache, block_table, seq_lens, o, lse)
        return o, lse
