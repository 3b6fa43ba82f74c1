"""Attention ops written with torch: what users compare tileops with.

The KV cache is vLLM's flash layout (FlashInfer's NHD pages): key_cache and value_cache
[num_blocks, block_size, H_kv, head_size], contiguous, so slot s = block * block_size +
offset is row s of the cache seen as [num_blocks * block_size, H_kv, head_size]. The write
is what vLLM's reshape_and_cache_flash does: each token's key k and value v go to the row of
its slot; a negative slot (vLLM pads with -1) writes nothing. It writes the caches in place
and returns nothing (an empty tuple: no output).

A partial attention state is (o, lse): o the softmax-weighted values of a query head over
some keys, lse the natural-log logsumexp of its scores over those keys (vLLM's convention;
FlashInfer's lse is base 2). Merging two, with m = max(lse_a, lse_b),
wa = exp(lse_a - m), wb = exp(lse_b - m):
    o = (wa o_a + wb o_b) / (wa + wb),   lse = m + log(wa + wb)
computed in float32 for 16-bit o (in the inputs' dtype when wider, float64 in the tests)
and rounded once to o's dtype. The edges, as vLLM's kernel takes them:
  * lse = +inf is an empty partial, as -inf is (FlashAttention gives +inf for a query row
    that saw no key);
  * one side empty: o and lse are the other side's, exactly (the empty side's o does not
    matter: it may hold anything, NaN included);
  * both sides empty: o = 0 and lse = -inf;
  * a NaN lse: that row's o and lse are NaN."""
import torch
import torch.nn.functional as F


def kv_cache_write(k, v, key_cache, value_cache, slot_mapping):
    """Writes k[t] and v[t] (a token's key and value) at slot_mapping[t] of the caches;
    returns ()."""
    slots = slot_mapping.long()
    keep = slots >= 0
    rows = slots[keep]
    key_cache.view(-1, *key_cache.shape[2:])[rows] = k[keep].to(key_cache.dtype)
    value_cache.view(-1, *value_cache.shape[2:])[rows] = v[keep].to(value_cache.dtype)
    return ()


def merge_attn_states(o_a, lse_a, o_b, lse_b):
    """(o, lse) of the union of the two partial states (the module docstring's rules)."""
    acc = torch.promote_types(torch.promote_types(o_a.dtype, lse_a.dtype), torch.float32)
    inf = float("inf")
    la = lse_a.to(acc)
    lb = lse_b.to(acc)
    la = torch.where(la == inf, -inf, la)
    lb = torch.where(lb == inf, -inf, lb)
    empty_a, empty_b = la == -inf, lb == -inf
    m = torch.maximum(la, lb)
    both = empty_a & empty_b
    m = torch.where(both, 0.0, m)
    wa, wb = torch.exp(la - m), torch.exp(lb - m)
    s = wa + wb
    lse = torch.where(both, -inf, m + torch.log(s))
    s = torch.where(both, 1.0, s)
    xa, xb = o_a.to(acc), o_b.to(acc)
    o = (wa / s).unsqueeze(-1) * xa + (wb / s).unsqueeze(-1) * xb
    o = torch.where(empty_a.unsqueeze(-1), xb, o)
    o = torch.where(empty_b.unsqueeze(-1), xa, o)
    o = torch.where(both.unsqueeze(-1), 0.0, o)
    nan = la.isnan() | lb.isnan()
    o = torch.where(nan.unsqueeze(-1), float("nan"), o)
    lse = torch.where(nan, float("nan"), lse)
    return o.to(o_a.dtype), lse.to(lse_a.dtype)



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
