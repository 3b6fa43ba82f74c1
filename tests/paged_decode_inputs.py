"""Inputs of PagedDecodeAttentionFwdOp for its tests (tests/ops, tests/gpu): a paged KV
cache whose sequences hold distinct random blocks, block tables with garbage in their
unused tails, and the float64 reference."""
import torch

from tileops.reference.attention import paged_decode_attention as reference

GARBAGE = 2**31 - 1     # an unused block table entry: dereferenced, it would fault


def make(B, H, Hkv, D, BS, lens, dtype=torch.float32, seed=0, spare=3, max_blocks=None, device="cpu"):
    """(q, key_cache, value_cache, block_table, seq_lens): each sequence's blocks distinct
    and random among the cache's (`spare` more than needed), the table `max_blocks` wide
    (default: the longest sequence's blocks), its entries past a sequence's blocks huge or
    negative."""
    g = torch.Generator().manual_seed(seed)
    nb = [-(-n // BS) if n > 0 else 0 for n in lens]
    mb = max_blocks if max_blocks is not None else max(nb + [1])
    N = sum(nb) + spare
    q = torch.randn(B, H, D, generator=g).to(dtype)
    kc = torch.randn(N, BS, Hkv, D, generator=g).to(dtype)
    vc = torch.randn(N, BS, Hkv, D, generator=g).to(dtype)
    perm = torch.randperm(N, generator=g)
    bt = torch.where(torch.rand(B, mb, generator=g) < 0.5, GARBAGE, -GARBAGE - 1).to(torch.int32)
    k = 0
    for b, n in enumerate(nb):
        bt[b, :n] = perm[k:k + n].to(torch.int32)
        k += n
    sl = torch.tensor(lens, dtype=torch.int32)
    return tuple(t.to(device) for t in (q, kc, vc, bt, sl))


def ref64(op, q, kc, vc, bt, sl):
    """(o, lse) of the reference in float64 on the CPU."""
    q, kc, vc, bt, sl = (t.cpu() for t in (q, kc, vc, bt, sl))
    return reference(q.double(), kc.double(), vc.double(), bt, sl, **op.resolved_params())
