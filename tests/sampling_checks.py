"""What the sampling family's own tests (tests/ops/test_sampling.py on the CPU,
tests/gpu/test_gpu_sampling.py on a GPU) check alike: the top-k / top-p mask against the
float64 transcription of vLLM's rule, allowing a different verdict only at the nucleus'
edge within rounding; vLLM's forward_native as it is written (unstable sort, float32);
batch invariance; logits with ties, NaN and infinities."""
import torch

from tileops.reference import sampling as ref

NAN, INF = float("nan"), float("inf")


def logits_like(B, V, dtype, device="cpu", seed=0, scale=3.0):
    """Standard normal logits times `scale` (a peaked softmax, as real logits give)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, V, generator=g) * scale).to(device=device, dtype=dtype)


def vllm_forward_native(logits, k, p):
    """vLLM's apply_top_k_top_p (forward_native) as vLLM writes it: an unstable ascending
    sort, a gather of the k-th value, softmax, cumsum, scatter. What users compare with."""
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    if k is not None:
        top_k_mask = logits_sort.size(1) - k.to(torch.long)
        top_k_mask = logits_sort.gather(1, top_k_mask.unsqueeze(dim=1))
        top_k_mask = logits_sort < top_k_mask
        logits_sort.masked_fill_(top_k_mask, -INF)
    if p is not None:
        probs_sort = logits_sort.softmax(dim=-1)
        probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
        top_p_mask = probs_sum <= 1 - p.unsqueeze(dim=1)
        top_p_mask[:, -1] = False
        logits_sort.masked_fill_(top_p_mask, -INF)
    return logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)


def mass_before(logits, k=None, p=None):
    """The float64 probability mass before each element in the order larger value first,
    equal values by lower index first, over what top-k keeps (NaN where top-p does not
    apply to the row or top-k masked the element): where it is within rounding of p, a
    kernel may decide the element either way."""
    x = logits.double()
    B, V = x.shape
    vals, order = torch.sort(x, dim=-1, descending=True, stable=True)
    keep = torch.ones_like(vals, dtype=torch.bool)
    if k is not None:
        kk = k.long().cpu()
        for r in range(B):
            if 1 <= kk[r] < V:
                keep[r] = vals[r] >= vals[r, kk[r] - 1]
    m = vals[:, :1]
    w = torch.where(keep, torch.exp(vals - m), torch.zeros((), dtype=torch.float64, device=x.device))
    z = w.sum(-1, keepdim=True)
    before = (torch.cumsum(w, -1) - w) / z
    before = torch.where(keep, before, NAN)
    out = torch.empty_like(before).scatter_(-1, order, before)
    if p is not None:
        off = ~(p.double() < 1) | ~torch.isfinite(m.squeeze(-1))
        out[off] = NAN
    else:
        out[:] = NAN
    return out


def check_mask(got, logits, k, p, tol=1e-5):
    """got: the op's masked logits. Rows with a NaN: all NaN. Otherwise each element is the
    logit (bit for bit) or -inf, and kept exactly where the float64 transcription keeps it,
    except where its mass before is within `tol` of p. Returns how many were at an edge."""
    assert got.shape == logits.shape and got.dtype == logits.dtype
    nan_rows = logits.isnan().any(-1)
    assert got[nan_rows].isnan().all(), "a row with a NaN must come out all NaN"
    g, x = got[~nan_rows], logits[~nan_rows]
    kept = g != -INF
    assert torch.equal(g[kept].view(torch.int16 if g.element_size() == 2 else torch.int32),
                       x[kept].view(torch.int16 if x.element_size() == 2 else torch.int32)), "a kept logit changed bits"
    want = ref.top_k_top_p_mask(logits.double(), k, None if p is None else p.double())
    want_kept = (want != -INF)[~nan_rows] | (x == -INF)
    kept = kept | (x == -INF)
    before = mass_before(logits, k, p)[~nan_rows]
    edge = (before - (p.double()[~nan_rows].unsqueeze(-1) if p is not None else 0)).abs() <= tol
    differ = kept != want_kept
    assert not (differ & ~edge).any(), (
        f"{int((differ & ~edge).sum())} elements decided otherwise than vLLM's rule, away from the nucleus' edge; "
        f"first at {(differ & ~edge).nonzero()[:3].tolist()}")
    return int(differ.sum())


def batch_invariant(op_fn, inputs: dict, other_fn):
    """op_fn(**inputs) -> per-row results (a tensor, or a tuple of them, rows first), the
    inputs' tensors rows first (None: absent); other_fn(n) -> inputs of n other rows. Each
    row gives the same bits alone, and first or in the middle of larger batches of other
    rows, as in its own batch."""
    def as_tuple(r):
        return r if isinstance(r, tuple) else (r,)

    def same(a, b):
        return torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                     and torch.equal(a[~a.isnan()], b[~b.isnan()]))

    def cat(parts):
        return {k: (None if parts[0][k] is None else torch.cat([q[k] for q in parts])) for k in parts[0]}

    def rows(d, lo, hi):
        return {k: (None if v is None else v[lo:hi]) for k, v in d.items()}
    whole = as_tuple(op_fn(**inputs))
    B = next(v for v in inputs.values() if v is not None).shape[0]
    for r in range(B):
        alone = as_tuple(op_fn(**rows(inputs, r, r + 1)))
        assert all(same(a[0], w[r]) for a, w in zip(alone, whole)), f"row {r}: alone != in its batch"
        for n_other in (2, 33):
            other = other_fn(n_other)
            mixed = cat([rows(other, 0, 1), rows(inputs, r, r + 1), rows(other, 1, n_other)])
            got = as_tuple(op_fn(**mixed))
            assert all(same(a[1], w[r]) for a, w in zip(got, whole)), \
                f"row {r}: among {n_other} other rows != in its own batch"
