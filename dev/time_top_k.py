"""Times the selection kernels (TopKFwdOp's tileops_top_k, TopKTopPMaskFwdOp's
tileops_top_k_top_p_mask) in lab variants on a GPU, against torch in the same process
(run on the H200): where a row's time goes at small B (issue 14: top-k lost 3x to
torch.topk at B = 1).

    PYTHONPATH=src python3 dev/time_top_k.py [--batches 1,8,32,128] [--dtypes bfloat16,float32]
        [--variants c1,c2,c4,c8] [--ops top_k,mask] [--out top_k_lab.json] [--phases]
        [--vocab 128256]

A variant cC: the row over a cluster of C CTAs of 1024 threads (cuda_sampling's
selection_plan(V, C)), the shipped kernel (C = 16: a non-portable cluster, which the
runtime allows on every sm_90 kernel it loads; measured in session 21, the shipped rule
stops at 8); cCn: with no words kept in registers between the passes (-DSMP_KEEP=0: each pass loads; session 18's lab variant cCr, the words kept,
shipped in session 19); (Session 19's cCm, the mask's masses added by one 64-bit red.shared.add each, measured
1.45x slower: removed.)
cCk, cCp: the mask with top-k alone, top-p alone (its result not compared: where the time goes);
cC...+NAME[+NAME2]: the kernels with the parked patches dev/patches/NAME.patch (then NAME2)
applied, compared bit for bit (session 22's sel_double_sums: the mask's histogram sums
double-buffered, one cluster barrier a pass instead of two; c8+sel_double_sums; session 19's u, the histograms' cluster sums pulled by
ld.shared::cluster, measured 1.1-1.5x slower in session 20: gone, git history has it; its z,
the mask's top-p Z from the first pass, shipped in session 20);
cCl, cCnl: top-k by the phases lab kernel (the shipped
kernel's steps, marked; the mask runs the shipped kernel for l). (Session 18's cCs, the histograms summed by reduce-scatter,
measured no gain: commit 0b73e5f has it.) (Session 17's cCf0, without a floor under the
k-th key from the threads' largest keys, measured the floor slower: commit ab57afc has
it; its cCuU, the passes unrolled 4 times, measured no faster: the knob, TILEOPS_SEL_UNROLL, is gone.)
--phases: top-k only, where the time of a call goes, CTA by CTA
(dev/cuda/top_k_phases_lab.cu). (Session 15's variants cCa1, the histograms' adds warp-aggregated
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
import re

import torch

import lab as dev_lab
from tileops import _C, runtime
from tileops._dtypes import CODE
from tileops.bench import cuda_cold_us as cold_us, cuda_hot_us as hot_us
from tileops.kernels.sampling import cuda_sampling as K

V = 128256


PHASES_LAB = ("top_k_phases_lab.cu", "tileops_top_k_phases")
# (patch, kernel) -> the factor on the plan's dynamic shared memory: the mask's histogram
# sums double-buffered (sel_double_sums.patch: SMP_SUMS twice cuda_sampling's SEL_SUMS_BYTES)
PATCH_SMEM = {("sel_double_sums.patch", "tileops_top_k_top_p_mask"): 2}


def parse_variant(v: str):
    """c<C>[n][k|p][l][+NAME...]: (cluster, extra defines: n, no words kept; whether top-k
    runs the phases lab kernel: l). k / p: the mask's build with that filter alone
    (mask_part); +NAME: the parked patch dev/patches/NAME.patch applied (variant_patches)."""
    m = VARIANT.fullmatch(v)
    if m is None:
        raise SystemExit(f"time_top_k: variant {v!r}: expected c<C>[n][k|p][l][+NAME...]")
    c = int(m.group(1))
    extra = ("-DSMP_KEEP=0",) if m.group(2) else ()
    return c, extra, bool(m.group(4))


VARIANT = re.compile(r"c(\d+)(n?)([kp]?)(l?)((?:\+[\w.-]+)*)")


def variant_patches(v: str) -> tuple:
    """The dev/patches files a variant's build applies, in the order named."""
    return tuple(name + ".patch" for name in VARIANT.fullmatch(v).group(5).split("+")[1:])


def mask_part(v: str):
    """A mask variant's filters: "kp" (both), "k" (top-k alone: cCk) or "p" (top-p alone: cCp)."""
    return VARIANT.fullmatch(v).group(3) or "kp"


def launcher(specialisation, fmt, rows, variant, ptrs, lab=None):
    """A raw launch of specialisation(cluster) (cuda_sampling's); lab: (file, kernel) of
    dev/cuda appended to the shipped source instead of the shipped kernel."""
    cluster, extra, _ = parse_variant(variant)
    source, kernel, opts, plan = specialisation(cluster)
    patches = variant_patches(variant)
    if lab is not None:
        if patches:
            raise SystemExit(f"time_top_k: variant {variant!r}: the phases lab takes no patch")
        source, kernel = dev_lab.appended_source(source, lab[0]), lab[1]
    elif patches:
        source = dev_lab.patched_source(source, patches)
    handle = runtime.build(0, source, kernel, tuple(opts) + extra, fmt, pdl=True)
    stream = torch._C._cuda_getCurrentRawStream
    smem = plan.smem
    for p in patches:   # a patch that grows a kernel's dynamic shared memory (PATCH_SMEM)
        smem *= PATCH_SMEM.get((p, kernel), 1) if cluster > 1 else 1

    def launch():
        _C.cuda_launch(handle, rows * cluster, 1, 1, plan.threads, 1, 1, smem, stream(0), *ptrs)
    return launch


def top_k_case(B, dtype, k, variants):
    torch.manual_seed(0)
    x = torch.randn(B, V, device="cuda", dtype=dtype)
    ref_v, ref_i = torch.topk(x, k, dim=-1)
    vals = torch.empty_like(ref_v)
    idx = torch.empty_like(ref_i)
    spec = lambda c: K.top_k_specialisation(CODE[dtype], V, k, True, True, c)  # noqa: E731
    row = {"op": "top_k", "case": f"top-{k} B={B} {str(dtype)[6:]}"}
    keep = []
    fns = {"torch": lambda: torch.topk(x, k, dim=-1)}
    first = None
    for v in variants:
        C, _, in_lab = parse_variant(v)
        if in_lab:   # the phases lab kernel (its marks into a buffer of its own)
            ph = torch.zeros(B, C, 24, dtype=torch.int64, device="cuda")
            keep.append(ph)
            fn = launcher(spec, "pppp", B, v, (x.data_ptr(), vals.data_ptr(), idx.data_ptr(), ph.data_ptr()),
                          lab=PHASES_LAB)
        else:
            fn = launcher(spec, "ppp", B, v, (x.data_ptr(), vals.data_ptr(), idx.data_ptr()))
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


PHASES = ["init"] + [f"pass {p} {w}" for p in range(3) for w in ("clear", "count", "sum", "pick")] + [
    "collect", "last barrier", "sort+write"]
T0, T1, CLOCK1, ORDERED = 17, 18, 19, 21   # top_k_phases_lab.cu's slots


def phases_case(B, dtype, k, variants, runs=30):
    """Where a call's time goes, by CTA: dev/cuda/top_k_phases_lab.cu's marks (cycles of the
    SM, converted by the CTA's own globaltimer over cycles), the median over `runs` calls
    (the first dropped), µs from the CTA's start; the values checked against torch.topk."""
    torch.manual_seed(0)
    x = torch.randn(B, V, device="cuda", dtype=dtype)
    ref_v, _ = torch.topk(x, k, dim=-1)
    vals, idx = torch.empty_like(ref_v), torch.empty(B, k, dtype=torch.int64, device="cuda")
    spec = lambda c: K.top_k_specialisation(CODE[dtype], V, k, True, True, c)  # noqa: E731
    rows = []
    for v in variants:
        C = parse_variant(v)[0]
        ph = torch.zeros(B, C, 24, dtype=torch.int64, device="cuda")
        fn = launcher(spec, "pppp", B, v, (x.data_ptr(), vals.data_ptr(), idx.data_ptr(), ph.data_ptr()),
                      lab=PHASES_LAB)
        samples = []
        for r in range(runs + 1):
            fn()
            torch.cuda.synchronize()
            if r:
                samples.append(ph.clone())
        assert torch.equal(vals, ref_v), f"{v}: the phases build's top-{k} differs from torch.topk"
        s = torch.stack(samples).cpu()          # [runs, B, C, 24]
        ns_per_cycle = (s[..., T1] - s[..., T0]).double() / (s[..., CLOCK1] - s[..., 0]).double()
        n = len(PHASES) + 1
        us = (s[..., :n] - s[..., :1]).double() * ns_per_cycle[..., None] / 1e3   # from the CTA's start
        start = (s[..., T0] - s[..., T0].amin(dim=2, keepdim=True)).double() / 1e3  # CTA start skew in the row
        med = us.median(dim=0).values[0]        # row 0: [C, n]
        skew = start.median(dim=0).values[0]
        row = {"op": "top_k_phases", "case": f"top-{k} B={B} {str(dtype)[6:]}", "variant": v,
               "ghz": float(1 / ns_per_cycle.median()), "start_skew_us": skew.tolist(),
               "ordered": bool(s[0, 0, 0, ORDERED]),
               "marks_us": {name: med[:, i + 1].tolist() for i, name in enumerate(PHASES)}}
        rows.append(row)
        print(f"{row['case']} {v}: GHz {row['ghz']:.2f}, CTA start skew (us) {[round(t, 2) for t in row['start_skew_us']]}"
              f"{', ordered collection' if row['ordered'] else ''}")
        prev = torch.zeros(C, dtype=torch.float64)
        for i, name in enumerate(PHASES):
            cur = med[:, i + 1]
            print(f"  {name:16s} at {cur.max().item():7.2f} us  (+{(cur - prev).max().item():6.2f} max over CTAs; "
                  f"rank 0 +{(cur - prev)[0].item():6.2f})")
            prev = cur
    return rows


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
    row = {"op": "mask", "case": f"mask {'k50 p0.9' if fixed else 'drawn'} B={B} {str(dtype)[6:]}"}
    first = None
    fns = {}
    for v in variants:
        part = mask_part(v)
        spec = lambda c, part=part: K.top_k_top_p_mask_specialisation(  # noqa: E731
            CODE[dtype], V, "k" in part, CODE[torch.int64], "p" in part, True, c)
        fn = launcher(spec, "pppp", B, v, (x.data_ptr(), k.data_ptr() if "k" in part else 0,
                                           p.data_ptr() if "p" in part else 0, out.data_ptr()))
        out.fill_(7.0)
        fn()
        torch.cuda.synchronize()
        if part != "kp":   # one filter alone: where the time goes, not compared
            fns[v] = fn
            continue
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
    ap.add_argument("--phases", action="store_true", help="dev/cuda/top_k_phases_lab.cu's marks instead of times")
    ap.add_argument("--vocab", type=int, default=128256, help="the rows' length (Qwen2.5: 152064)")
    a = ap.parse_args()
    global V
    V = a.vocab
    variants = a.variants.split(",")
    rows = []
    if a.phases:
        for dt in [getattr(torch, d) for d in a.dtypes.split(",")]:
            for B in [int(b) for b in a.batches.split(",")]:
                for k in [int(k) for k in a.ks.split(",")]:
                    rows += phases_case(B, dt, k, variants)
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "V": V, "rows": rows}, f, indent=1)
        return
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
