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
