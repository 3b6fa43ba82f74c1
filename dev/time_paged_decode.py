"""Times PagedDecodeAttentionFwdOp on a GPU against issue 13's goals (run on the H200):

  * B = 1, 32 / 8 heads, head_size 128, 1K context, float16: <= 8 us;
  * context >= 4K: >= 85 % of copy bandwidth (the bytes: the K and V rows read, q, o).

    PYTHONPATH=src python3 dev/time_paged_decode.py [--quick] [--stages N] [--pdl-ab] [--cluster-ab] [--flush read] [--out paged_decode_timing.json]

For each case: hot (tileops.bench.cuda_hot_us: 50 calls captured in a CUDA graph, the
median of 20 replays; microseconds per call) and cold (tileops.bench.cuda_cold_us: L2
flushed by a 256 MiB write before each call (a read with --flush read: L2 left clean, as
Nsight's cache control leaves it), CUDA events around it, the GPU kept busy by a
spin while the host queues the call; before session 9 this script had a timer of its own
that synchronised before each call, so a slow host path landed in its cold times) of
tileops, of the copy floor (dst.copy_(src) of the same bytes, timed the same way) and, where
the gathered keys and values fit in memory, of torch's scaled_dot_product_attention
(enable_gqa) on K and V gathered contiguous beforehand (the gather not timed); GB/s and
the fraction of the copy floor. Inputs are drawn on the GPU; each sequence's blocks are a
random permutation of the cache's, every sequence at full length. Prints a table, writes
JSON."""
from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F

import lab  # dev/lab.py: the cold timer's flush (--flush)
from tileops.attention import PagedDecodeAttentionFwdOp
from tileops.bench import cuda_cold_us as cold_us, cuda_hot_us as hot_us   # noqa: F401 (time_argmax's too)
from tileops.bench import without_pdl

MODELS = {"Llama-3-8B": (32, 8), "Qwen2.5-7B": (28, 4), "Llama-3-70B TP4": (16, 2)}

PDL_AB = False   # --pdl-ab: each case also timed with every kernel launched plainly (tileops_plain)
CLUSTER_AB = False   # --cluster-ab: each case also timed with the merge kernel (tileops_merge_kernel:
                     # K.CLUSTER_MAX = 0, no split merged inside its cluster)


SWEEP = ()      # --sweep CPC:GROUPS,..: each case also timed with the split plan forced (c{cpc}g{groups})


def with_knobs(fn, **knobs):
    """fn with the kernel module's knobs (CLUSTER_MAX, SPLIT_CPC, CHUNK_GROUPS) set during each
    call: the merge kernel's A/B (CLUSTER_MAX=0) and the split sweep."""
    from tileops.kernels.attention import paged_decode_attention as K

    def call():
        saved = {k: getattr(K, k) for k in knobs}
        for k, v in knobs.items():
            setattr(K, k, v)
        try:
            return fn()
        finally:
            for k, v in saved.items():
                setattr(K, k, v)
    return call


PROFILE = False   # --profile: each case's kernels timed one by one (torch.profiler, hot: caches warm)


def kernel_times(fn, calls=20):
    """{kernel name: mean microseconds a call} of fn's GPU kernels, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = lambda e: getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0)   # noqa: E731
    return {e.key: total(e) / calls for e in prof.key_averages() if total(e) > 0}


def case(label, H, Hkv, B, ctx, BS=16, D=128, dtype=torch.float16, sdpa=True):
    nb = ctx // BS
    N = B * nb
    kc = torch.randn(N, BS, Hkv, D, device="cuda", dtype=dtype)
    vc = torch.randn(N, BS, Hkv, D, device="cuda", dtype=dtype)
    q = torch.randn(B, H, D, device="cuda", dtype=dtype)
    bt = torch.randperm(N, device="cuda").view(B, nb).to(torch.int32)
    sl = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
    op = PagedDecodeAttentionFwdOp(D, BS)
    nbytes = 2 * B * ctx * Hkv * D * kc.element_size() + 2 * q.nbytes
    src = torch.ones(nbytes // 2 // kc.element_size(), dtype=dtype, device="cuda")
    dst = torch.empty_like(src)
    fns = {"tileops": lambda: op(q, kc, vc, bt, sl), "copy": lambda: dst.copy_(src)}
    if PDL_AB:   # the same call launched plainly (no programmatic dependent launch)
        fns["tileops_plain"] = without_pdl(fns["tileops"])
    if CLUSTER_AB:
        fns["tileops_merge_kernel"] = with_knobs(fns["tileops"], CLUSTER_MAX=0)
    for cpc, g in SWEEP:
        if cpc <= -(-ctx // 256):
            fns[f"c{cpc}g{g}"] = with_knobs(fns["tileops"], SPLIT_CPC=cpc, CHUNK_GROUPS=g)
    if sdpa and 2 * nbytes < torch.cuda.mem_get_info()[0] * 0.8:
        k = kc[bt.long()].flatten(1, 2).transpose(1, 2).contiguous()
        v = vc[bt.long()].flatten(1, 2).transpose(1, 2).contiguous()
        q4 = q.unsqueeze(2)
        fns["sdpa_gathered"] = lambda: F.scaled_dot_product_attention(q4, k, v, enable_gqa=True)
    row = {"case": f"{label} B={B} ctx={ctx} bs={BS} {str(dtype)[6:]}", "bytes": nbytes}
    if PROFILE:
        row["kernels_us"] = kernel_times(without_pdl(fns["tileops"]))   # with PDL a merge kernel's time
        # would include its wait for the main kernel (session 13: 264 "µs" of a 277 µs call)
    for name, fn in fns.items():
        row[name + "_hot_us"] = hot_us(fn)
        row[name + "_cold_us"] = cold_us(fn)
    for m in ("hot", "cold"):
        row[f"tileops_{m}_gbps"] = nbytes / row[f"tileops_{m}_us"] / 1e3
        row[f"of_copy_{m}"] = row[f"copy_{m}_us"] / row[f"tileops_{m}_us"]
    del kc, vc, fns
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the latency case and Llama-3-8B at 4K and 32K only")
    ap.add_argument("--out", default="paged_decode_timing.json")
    ap.add_argument("--cases", default=None, help="comma list of MODEL:B:CTX[:BS] (MODEL 8B, Qwen or 70B), "
                                                   "instead of the default set")
    ap.add_argument("--stages", type=int, default=None, help="each warp's ring depth (1 .. 4; default: the kernel's "
                                                              "choice, kernels/attention/paged_decode_attention.py)")
    ap.add_argument("--cpc", type=int, default=None, help="chunks per CTA, forced (the split plan's knob)")
    ap.add_argument("--groups", type=int, default=None, help="chunk groups a CTA (1 or 2), forced")
    ap.add_argument("--superchunk", type=int, default=None, help="chunks a superchunk (the SUPERCHUNK knob; with "
                                                                  "--cpc a multiple of it a split stores one "
                                                                  "partial a superchunk)")
    ap.add_argument("--pdl-ab", action="store_true", help="also time each case with every kernel launched plainly "
                                                           "(tileops_plain: programmatic dependent launch off)")
    ap.add_argument("--cluster-ab", action="store_true", help="also time each case with the merge kernel instead "
                                                               "of the cluster's merge (tileops_merge_kernel)")
    ap.add_argument("--sweep", default="", help="CPC:GROUPS,..: also time each case with the split plan forced "
                                                 "(chunks per CTA, chunk groups a CTA), e.g. 4:1,8:1,8:2")
    ap.add_argument("--profile", action="store_true", help="also each case's kernels one by one (torch.profiler)")
    lab.add_flush_option(ap)
    args = ap.parse_args()
    lab.use_flush(args.flush)
    global PDL_AB, CLUSTER_AB, SWEEP, PROFILE
    PDL_AB, CLUSTER_AB = args.pdl_ab, args.cluster_ab
    PROFILE = args.profile
    SWEEP = tuple(tuple(int(v) for v in p.split(":")) for p in args.sweep.split(",") if p)
    from tileops.kernels.attention import paged_decode_attention as K
    for knob, value in (("CHUNK_GROUPS", args.groups), ("SUPERCHUNK", args.superchunk), ("SPLIT_CPC", args.cpc),
                        ("STAGES", args.stages)):
        if value is not None:   # the kernel module's dev knobs, set before the first call
            setattr(K, knob, value)
    if args.cases:
        short = {"8B": "Llama-3-8B", "Qwen": "Qwen2.5-7B", "70B": "Llama-3-70B TP4"}
        rows = []
        for spec in args.cases.split(","):
            m, B, ctx, *bs = spec.split(":")
            H, Hkv = MODELS[short[m]]
            rows.append(case(short[m], H, Hkv, int(B), int(ctx), BS=int(bs[0]) if bs else 16))
            print(rows[-1]["case"], flush=True)
        return report(rows, args.out)
    rows = [case("Llama-3-8B", 32, 8, 1, 1024)]
    for label, (H, Hkv) in MODELS.items():
        if args.quick and label != "Llama-3-8B":
            continue
        for ctx in (4096, 32768):
            for B in (1, 8, 32, 128):
                if args.quick and B not in (1, 32):
                    continue
                rows.append(case(label, H, Hkv, B, ctx))
                print(rows[-1]["case"], flush=True)
    rows.append(case("Llama-3-8B", 32, 8, 8, 4096, BS=64))
    rows.append(case("Llama-3-8B", 32, 8, 8, 4096, dtype=torch.bfloat16))
    report(rows, args.out)


def report(rows, out):
    hdr = f"{'case':44s} {'hot us':>9s} {'cold us':>9s} {'GB/s':>7s} {'of copy':>8s} {'sdpa hot':>9s} {'sdpa cold':>9s} {'copy cold':>9s}"
    print(hdr)
    for r in rows:
        plain = (f"  plain {r['tileops_plain_hot_us']:.2f} / {r['tileops_plain_cold_us']:.2f}"
                 if "tileops_plain_hot_us" in r else "")
        plain += (f"  merge kernel {r['tileops_merge_kernel_hot_us']:.2f} / {r['tileops_merge_kernel_cold_us']:.2f}"
                  if "tileops_merge_kernel_hot_us" in r else "")
        plain += "".join(f"  {k[:-7]} {r[k]:.2f} / {r[k[:-7] + '_cold_us']:.2f}" for k in r
                         if k.startswith("c") and k.endswith("_hot_us") and k[1].isdigit())
        if "kernels_us" in r:
            plain += "  kernels: " + ", ".join(f"{k[-24:]} {v:.2f}" for k, v in r["kernels_us"].items())
        print(f"{r['case']:44s} {r['tileops_hot_us']:9.2f} {r['tileops_cold_us']:9.2f} {r['tileops_cold_gbps']:7.0f} "
              f"{r['of_copy_cold']:8.2f} {r.get('sdpa_gathered_hot_us', float('nan')):9.2f} "
              f"{r.get('sdpa_gathered_cold_us', float('nan')):9.2f} {r['copy_cold_us']:9.2f}{plain}")
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
