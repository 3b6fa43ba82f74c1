"""Times the selection kernels (TopKFwdOp's tileops_top_k, TopKTopPMaskFwdOp's
tileops_top_k_top_p_mask) in lab variants on a GPU, against torch in the same process
(run on the H200): where a row's time goes at small B (issue 14: top-k lost 3x to
torch.topk at B = 1).

    PYTHONPATH=src python3 dev/time_top_k.py [--batches 1,8,32,128] [--dtypes bfloat16,float32]
        [--variants c1,c2,c4,c8] [--ops top_k,mask] [--out top_k_lab.json]

A variant cC: the row over a cluster of C CTAs of 1024 threads (cuda_sampling's
selection_plan(V, C)). (Session 15's variants cCa1, the histograms' adds warp-aggregated
by match.any, measured slower and left the kernels in session 16: commit 75f5deb has
them.) Each variant is
launched raw (runtime.build + _C.cuda_launch, as the op's launcher does) and its result
checked bit for bit: top-k's values against torch.topk's (its indices against the logits
and the first variant's: torch.topk does not promise ties' order), the mask against the
first variant's, before it is timed: hot (CUDA graph) and cold (L2
flushed), microseconds. Cases: V = 128256, top-50 and top-1024; the mask with the
manifest's draws of k in [-1, V + 2) and p in [-0.1, 1.2) (as `python -m tileops bench`
draws them) and with k = 50, p = 0.9 on every row. Prints a table, writes JSON."""
from __future__ import annotations

import argparse
import json

import torch

from tileops import _C, runtime
from tileops._dtypes import CODE
from tileops.bench import cuda_cold_us as cold_us, cuda_hot_us as hot_us
from tileops.kernels.sampling import cuda_sampling as K

V = 128256


def parse_variant(v: str) -> int:
    return int(v[1:])


def launcher(specialisation, fmt, rows, cluster, ptrs):
    """A raw launch of specialisation(cluster) (cuda_sampling's)."""
    source, kernel, opts, plan = specialisation(cluster)
    handle = runtime.build(0, source, kernel, tuple(opts), fmt, pdl=True)
    stream = torch._C._cuda_getCurrentRawStream

    def launch():
        _C.cuda_launch(handle, rows * cluster, 1, 1, plan.threads, 1, 1, plan.smem, stream(0), *ptrs)
    return launch


def top_k_case(B, dtype, k, variants):
    torch.manual_seed(0)
    x = torch.randn(B, V, device="cuda", dtype=dtype)
    ref_v, ref_i = torch.topk(x, k, dim=-1)
    vals = torch.empty_like(ref_v)
    idx = torch.empty_like(ref_i)
    spec = lambda c: K.top_k_specialisation(CODE[dtype], V, k, True, True, c)  # noqa: E731
    row = {"op": "top_k", "case": f"top-{k} B={B} {str(dtype)[6:]}"}
    fns = {"torch": lambda: torch.topk(x, k, dim=-1)}
    first = None
    for v in variants:
        fn = launcher(spec, "ppp", B, parse_variant(v), (x.data_ptr(), vals.data_ptr(), idx.data_ptr()))
        vals.fill_(0), idx.fill_(-1)
        fn()
        torch.cuda.synchronize()
        assert torch.equal(vals, ref_v) and torch.equal(x.gather(1, idx), vals), f"{v}: top-{k} differs from torch.topk"
        if first is None:
            first = idx.clone()
        assert torch.equal(idx, first), f"{v}: top-{k}'s indices differ from {variants[0]}'s"
        fns[v] = fn
    for name, fn in fns.items():
        row[name + "_hot_us"] = hot_us(fn)
        row[name + "_cold_us"] = cold_us(fn)
    return row


def mask_case(B, dtype, fixed, variants):
    torch.manual_seed(1)
    x = torch.randn(B, V, device="cuda", dtype=dtype)
    if fixed:
        k = torch.full((B,), 50, dtype=torch.int64, device="cuda")
        p = torch.full((B,), 0.9, dtype=torch.float32, device="cuda")
    else:
        k = torch.randint(-1, V + 2, (B,), dtype=torch.int64, device="cuda")
        p = torch.rand(B, device="cuda") * 1.3 - 0.1
    out = torch.empty_like(x)
    spec = lambda c: K.top_k_top_p_mask_specialisation(CODE[dtype], V, True, CODE[torch.int64], True, True, c)  # noqa: E731
    row = {"op": "mask", "case": f"mask {'k50 p0.9' if fixed else 'drawn'} B={B} {str(dtype)[6:]}"}
    first = None
    fns = {}
    for v in variants:
        fn = launcher(spec, "pppp", B, parse_variant(v), (x.data_ptr(), k.data_ptr(), p.data_ptr(), out.data_ptr()))
        out.fill_(7.0)
        fn()
        torch.cuda.synchronize()
        if first is None:
            first = out.clone()
        else:
            assert torch.equal(out.view(torch.int16 if dtype != torch.float32 else torch.int32),
                               first.view(torch.int16 if dtype != torch.float32 else torch.int32)), \
                f"{v}: the mask differs from {variants[0]}'s"
        fns[v] = fn
    for name, fn in fns.items():
        row[name + "_hot_us"] = hot_us(fn)
        row[name + "_cold_us"] = cold_us(fn)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--variants", default="c1,c2,c4,c8")
    ap.add_argument("--ops", default="top_k,mask")
    ap.add_argument("--ks", default="50,1024")
    ap.add_argument("--out", default="top_k_lab.json")
    a = ap.parse_args()
    variants = a.variants.split(",")
    rows = []
    for dt in [getattr(torch, d) for d in a.dtypes.split(",")]:
        for B in [int(b) for b in a.batches.split(",")]:
            if "top_k" in a.ops:
                for k in [int(k) for k in a.ks.split(",")]:
                    rows.append(top_k_case(B, dt, k, variants))
                    print(rows[-1], flush=True)
            if "mask" in a.ops:
                for fixed in (False, True):
                    rows.append(mask_case(B, dt, fixed, variants))
                    print(rows[-1], flush=True)
    names = (["torch"] if "top_k" in a.ops else []) + variants
    print(f"{'case':32s} " + " ".join(f"{n + ' hot/cold':>20s}" for n in names))
    for r in rows:
        cells = []
        for n in names:
            h, c = r.get(n + "_hot_us"), r.get(n + "_cold_us")
            cells.append(f"{h:9.2f}/{c:9.2f}" if h is not None else f"{'-':>19s}")
        print(f"{r['case']:32s} " + " ".join(cells))
    with open(a.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "V": V, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
