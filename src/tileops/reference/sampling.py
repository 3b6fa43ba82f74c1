"""The sampling family written with torch: what a sampler does to the last position's
logits, as users write it (vLLM's sampler, `forward_native` of its top-k / top-p).

Each op's definition, where torch leaves something open, is written here and the kernels
follow it:
  softmax      torch.softmax of logits / temperature[:, None] in float32 (the promoted
               dtype of the logits and float32: float64 for float64), rounded once to
               out_dtype (None: the logits' dtype). Rows torch gives NaN stay NaN: a row
               with a NaN or a +inf, and a row of -inf only.
  argmax       torch.argmax: the lowest index of the maximum, a NaN the maximum.
  top_k        the k largest, largest first, equal values by lower index first, NaN the
               largest (-0.0 equals 0.0): a stable descending sort, cut at k. torch.topk
               gives the same values; its order among equal values is unspecified.
  top_k_top_p_mask
               vLLM's apply_top_k_top_p: sort ascending, mask below the k-th largest value
               (every value equal to it kept), softmax, cumulative sum, mask where it is
               <= 1 - p, the largest always kept, scatter back; masked logits become -inf,
               the others keep their exact values. Where vLLM leaves it open: equal
               values sort by descending index in the ascending order, so a lower index is
               kept first at the nucleus' edge; k <= 0 or k >= V keeps the top-k filter off
               for the row, p >= 1 (or NaN) the top-p filter; k or p absent (None) turns
               it off for every row; a row with a NaN comes out all NaN.
  sample_from_probs
               vLLM's draw: argmax(probs / q) with q exponential noise, in float32; only
               ratios > 0 compete (a NaN, zero or negative one never wins); a row with
               none gives -1 (a row of zeros, of NaN: e.g. the softmax of a row of -inf)."""
import torch


def _acc(dtype):
    return torch.promote_types(dtype, torch.float32)


def softmax(logits, temperature=None, *, out_dtype):
    x = logits.to(_acc(logits.dtype))
    if temperature is not None:
        x = x / temperature.to(x.dtype).unsqueeze(-1)
    return torch.softmax(x, dim=-1).to(out_dtype or logits.dtype)


def argmax(logits):
    return torch.argmax(logits, dim=-1)


def top_k(logits, *, k):
    values, indices = torch.sort(logits, dim=-1, descending=True, stable=True)
    return values[:, :k], indices[:, :k]


def top_k_top_p_mask(logits, k=None, p=None):
    V = logits.shape[-1]
    # ascending, equal values by descending index: sort the reversed row stably
    srt, order = logits.flip(-1).to(_acc(logits.dtype)).sort(dim=-1, stable=True)
    idx = V - 1 - order
    if k is not None:
        kk = k.to(torch.long)
        kk = torch.where((kk >= 1) & (kk < V), kk, V)          # off: keep every value
        kth = srt.gather(-1, (V - kk).unsqueeze(-1))
        srt = srt.masked_fill(srt < kth, float("-inf"))
    if p is not None:
        cum = srt.softmax(dim=-1).cumsum(dim=-1)
        mask = cum <= 1 - p.to(srt.dtype).unsqueeze(-1)
        mask[:, -1] = False
        mask &= (p < 1).unsqueeze(-1)                          # off: p >= 1 or NaN
        srt = srt.masked_fill(mask, float("-inf"))
    out = torch.empty_like(srt).scatter_(-1, idx, srt).to(logits.dtype)
    return out.masked_fill_(logits.isnan().any(dim=-1, keepdim=True), float("nan"))


def sample_from_probs(probs, q):
    r = probs.to(_acc(probs.dtype)) / q.to(_acc(probs.dtype))
    valid = r > 0
    token = torch.where(valid, r, -1.0).argmax(dim=-1)
    return torch.where(valid.any(dim=-1), token, -1)
