"""Attention written with torch: what users compare tileops with."""
import torch
import torch.nn.functional as F


# ---- PagedDecodeAttentionFwdOp ----------------------------------------------------------

def gather_paged(cache, block_table, seq_lens, block_size):
    """Each sequence's rows of a paged cache [num_blocks, block_size, H_kv, D], gathered
    through its block table into [B, max_blocks * block_size, H_kv, D]. Only a sequence's
    first seq_lens[b] rows are taken: the rest (the end of its last block, the blocks of
    the unused tail of its block table, which may hold any value) come out as zeros."""
    B, nb = block_table.shape
    L = nb * block_size
    if cache.shape[0] == 0:   # no block at all: only sequences of length 0
        return cache.new_zeros((B, L) + tuple(cache.shape[2:]))
    valid = torch.arange(L, device=block_table.device) < seq_lens.to(torch.int64)[:, None]     # [B, L]
    used = valid[:, ::block_size]                                                               # [B, nb]
    rows = cache[torch.where(used, block_table.to(torch.int64), 0)].flatten(1, 2)               # [B, L, H_kv, D]
    return torch.where(valid[:, :, None, None], rows, torch.zeros((), dtype=cache.dtype, device=cache.device))


def paged_decode_attention(q, key_cache, value_cache, block_table, seq_lens, *, head_size, block_size, scale):
    """o, lse of one query token per sequence (q [B, H, D]) against its seq_lens[b] tokens
    of a paged KV cache (vLLM's layout), as vLLM's tests write it: gather each sequence's
    keys and values through its block table, softmax(q k^T * scale) v per query head,
    query head h reading KV head h // (H / H_kv). Scores, softmax and the weighted sum in
    float32 (float64 for float64 inputs); o rounded once to q's dtype, lse (the natural
    log-sum-exp of the scaled scores) in float32. A sequence of length 0: o = 0, lse = -inf."""
    B, H, D = q.shape
    h_kv = key_cache.shape[2]
    acc = torch.promote_types(q.dtype, torch.float32)
    k = gather_paged(key_cache, block_table, seq_lens, block_size).to(acc)     # [B, L, H_kv, D]
    v = gather_paged(value_cache, block_table, seq_lens, block_size).to(acc)
    L = k.shape[1]
    qg = q.to(acc).view(B, h_kv, H // max(h_kv, 1), D)
    scores = torch.einsum("bkgd,blkd->bkgl", qg, k) * scale                     # [B, H_kv, G, L]
    valid = torch.arange(L, device=q.device) < seq_lens.to(torch.int64)[:, None]   # [B, L]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)                                       # [B, H_kv, G]
    nonempty = (seq_lens > 0)[:, None, None, None]
    p = torch.where(nonempty, torch.exp(scores - lse[..., None]), 0.0)          # length 0: all zeros
    o = torch.einsum("bkgl,blkd->bkgd", p, v)
    return o.reshape(B, H, D).to(q.dtype), lse.reshape(B, H).to(torch.promote_types(torch.float32, q.dtype))


def sdpa_decode(q, k, v, *, scale):
    """torch's scaled_dot_product_attention of one query token per sequence (q [B, H, 1, D])
    against keys and values already gathered contiguous ([B, H_kv, L, D]), GQA by
    enable_gqa: the benchmark's peer (every sequence at the full length L)."""
    return F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True).squeeze(2)
