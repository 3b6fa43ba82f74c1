"""Launch-shape and register sweep of RoPE's CUDA kernel (csrc/ops/positional/rope.cu) on one
GPU, against issue 12's goal: within 1.05x of the copy floor where 16 MB or more move.

    PYTHONPATH=src python3 dev/time_rope.py [--quick] [--models M,..] [--variants HB:T:MB,..]
        [--persistent HB:TPB:BPS,..] [--out rope_sweep.json]

Session 10's reading: at 4096 tokens RoPE runs at 1.34x the copy. ptxas gives the shipped
vector build (fp16, D = R = 128, NeoX, two heads a thread) 80 registers, so a 160-thread
block (one token of Llama-3-8B's 40 heads) fits 5 times an SM: 800 threads with 64 bytes
in flight each, against the copy's full SM; and each token waits on two dependent loads
(its position, then its cos/sin row) before its first store. Prediction: capping the
registers (TILEOPS_MIN_BLOCKS: more resident threads) or more heads a thread (more bytes
in flight each) moves it toward the copy, if resident bytes bound it; if neither does, the
chain of latencies per token does.

Variants: (HB heads a thread, block threads, TILEOPS_MIN_BLOCKS), each built through the
runtime with the shipped defines but those, launched with the launch rule's shape for
that block size (kernels/positional/rope.py cuda_launch_shape), checked bit for bit
against RopeFwdOp's output, then timed hot (tileops.bench.cuda_hot_us: a CUDA graph) and
L2-cold (cuda_cold_us) beside the op and the copy floor of the same bytes
(in place: q and k read and written; out of place: read, and outputs written).

--persistent: the prefill kernel tileops_rope_persistent (session 12's lab kernel, shipped
in session 13 at HB 2, one token a block, 4 blocks an SM: the op's "tileops" row from 4 x
sm_count tokens on), blocks that walk tokens with the next token's loads in flight while
one is stored, at HB heads a thread, TPB tokens a block and BPS blocks an SM at most;
checked bit for bit against the op like the others. ptxas: 96 registers at HB 2, 148 at HB
4 (fp16, D = R = 128, NeoX), no spills. The shipped 128-thread prefill build of
tileops_rope, which the op took before, is the variant 2:128:0."""
from __future__ import annotations

import argparse
import json

import torch
from time_argmax import _copy_pair, time_fns   # dev/: tileops.bench's timers

from tileops import _C, runtime
from tileops._dtypes import CODE
from tileops.kernels.positional import rope as R
from tileops.positional import RopeFwdOp

MODELS = {"Llama-3-8B": (32, 8), "Llama-3-70B": (64, 8), "Qwen2.5-7B": (28, 4)}
# (HB, block threads, min blocks): the shipped (2, 256, 0) first
VARIANTS = [(2, 256, 0), (1, 256, 0), (4, 256, 0), (2, 128, 0), (2, 512, 0), (2, 256, 4), (1, 256, 4),
            (2, 256, 6), (4, 256, 3), (2, 1024, 0)]


def variant_launcher(q, k, positions, cache, q_out, k_out, hb, threads, min_blocks):
    dev = q.device.index or 0
    src, kernel, opts, rot, passing = R.cuda_specialisation(CODE[q.dtype], CODE[positions.dtype], q.shape[2],
                                                            cache.shape[1], True, 16 // q.element_size(),
                                                            threads=threads)
    opts = tuple(o for o in opts if not o.startswith("-DTILEOPS_HB=")) + (f"-DTILEOPS_HB={hb}",) + (
        (f"-DTILEOPS_MIN_BLOCKS={min_blocks}",) if min_blocks else ())
    handle = runtime.build(dev, src, kernel, opts, R.ARG_FORMAT_CUDA, pdl=True)
    saved = R.block_bound
    R.block_bound = lambda T, sm_count: threads    # the launch shape for this block bound
    try:
        gx, gy, nt = R.cuda_launch_shape(q.shape[0], q.shape[1], k.shape[1], rot + (passing if q_out is not q else 0),
                                         rot + (passing if k_out is not k else 0), hb,
                                         runtime.device_attributes(dev)["sm_count"])
    finally:
        R.block_bound = saved
    a = R._args(q, k, positions, cache, q_out, k_out)
    stream = torch._C._cuda_getCurrentRawStream

    keep = (q, k, positions, cache, q_out, k_out)   # the pointers' tensors live as long as the launch

    def launch():
        _C.cuda_launch(handle, gx, gy, 1, nt, 1, 1, 0, stream(dev), *a)
        return keep
    return launch, (gx, gy, nt)


def persistent_launcher(q, k, positions, cache, q_out, k_out, hb, tokens_per_block, blocks_per_sm):
    """launch(): tileops_rope_persistent (the shipped prefill kernel, csrc/ops/positional/rope.cu;
    session 12's lab kernel) at HB heads a thread, blocks of
    tokens_per_block x TT threads (TT = UPH x slots, rounded up to 32), blocks_per_sm x
    sm_count blocks at most (fewer when the tokens do not need them)."""
    dev = q.device.index or 0
    T, H, D = q.shape
    Hk = k.shape[1]
    slots = -(-(H + Hk) // hb)
    _, _, _, rot, passing = R.cuda_specialisation(CODE[q.dtype], CODE[positions.dtype], D, cache.shape[1], True,
                                                  16 // q.element_size())
    uph = max(rot + (passing if q_out is not q else 0), rot + (passing if k_out is not k else 0))
    tt = uph * slots
    threads = -(-(tt * tokens_per_block) // 32) * 32
    src, kernel, opts, _, _ = R.cuda_specialisation(CODE[q.dtype], CODE[positions.dtype], D, cache.shape[1], True,
                                                    16 // q.element_size(), threads=threads, persistent=True)
    opts = tuple(o for o in opts if not o.startswith("-DTILEOPS_HB=")) + (f"-DTILEOPS_HB={hb}",)
    handle = runtime.build(dev, src, kernel, opts, R.ARG_FORMAT_CUDA, pdl=True)
    grid = min(-(-T // tokens_per_block), blocks_per_sm * runtime.device_attributes(dev)["sm_count"])
    a = R._args(q, k, positions, cache, q_out, k_out)
    stream = torch._C._cuda_getCurrentRawStream
    keep = (q, k, positions, cache, q_out, k_out)

    def launch():
        _C.cuda_launch(handle, grid, 1, 1, threads, 1, 1, 0, stream(dev), *a)
        return keep
    return launch, (grid, 1, threads)


def rope_case(model, T, inplace, dtype=torch.float16, variants=VARIANTS, persistent=()):
    H, Hk = MODELS[model]
    D = 128
    g = torch.Generator(device="cuda").manual_seed(T + H)
    q0 = torch.randn(T, H, D, device="cuda", generator=g).to(dtype)
    k0 = torch.randn(T, Hk, D, device="cuda", generator=g).to(dtype)
    P = 8192
    positions = torch.randint(0, P, (T,), device="cuda", generator=g, dtype=torch.int64)
    cache = torch.randn(P, D, device="cuda", generator=g)
    op = RopeFwdOp(D, D, True)
    want_q, want_k = op(q0.clone(), k0.clone(), positions, cache)
    nbytes = 2 * (q0.numel() + k0.numel()) * q0.element_size() + T * D * 4 + T * 8
    src, dst = _copy_pair(nbytes)
    name = f"{model} T={T} {'in place' if inplace else 'out of place'}"
    row = {"case": name, "bytes": nbytes, "variants": []}
    q, k = q0.clone(), k0.clone()
    if inplace:
        fns = {"tileops": lambda: op(q, k, positions, cache, inplace=True)}
    else:
        fns = {"tileops": lambda: op(q0, k0, positions, cache)}
    fns["copy"] = lambda: dst.copy_(src)
    # (name, launcher, its shape arguments): tileops_rope's variants, then the prefill kernel's
    launches = [(f"hb{hb}_t{threads}_mb{mb}", variant_launcher, (hb, threads, mb)) for hb, threads, mb in variants]
    launches += [(f"persist_hb{hb}_tpb{tpb}_bps{bps}", persistent_launcher, (hb, tpb, bps))
                 for hb, tpb, bps in persistent]
    for vname, launcher, shape_args in launches:
        qv, kv = q0.clone(), k0.clone()
        qo, ko = (qv, kv) if inplace else (torch.empty_like(q0), torch.empty_like(k0))
        try:
            fn, shape = launcher(qv, kv, positions, cache, qo, ko, *shape_args)
        except Exception as e:   # a build that does not compile (a register cap below need), a block too large
            row[vname + "_error"] = str(e)[:300]
            continue
        fn()
        torch.cuda.synchronize()
        assert torch.equal(qo, want_q) and torch.equal(ko, want_k), f"{name} {vname}: not the op's bits"
        if inplace:   # time it on fresh copies: rotating in place again and again is the same traffic
            qv.copy_(q0), kv.copy_(k0)
        fns[vname] = fn
        row["variants"].append(vname)
        row[vname + "_shape"] = shape
    row.update(time_fns(fns))
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="Llama-3-8B at 4096 tokens only (in place, out of place)")
    ap.add_argument("--out", default="rope_sweep.json")
    ap.add_argument("--variants", default=None,
                    help="HB:threads:min_blocks,... instead of the default list (e.g. 2:160:0,4:80:0: blocks "
                         "of exactly one token's units; session 12)")
    ap.add_argument("--models", default=None, help="model names, comma-separated (with --quick's cases: all three)")
    ap.add_argument("--persistent", default=None,
                    help="HB:tokens_per_block:blocks_per_sm,... of the prefill kernel tileops_rope_persistent "
                         "(blocks walking tokens, the next token's loads in flight while one is stored), timed "
                         "beside the variants")
    args = ap.parse_args()
    def triples(text):   # "a:b:c,d:e:f" -> [(a, b, c), (d, e, f)]
        return [tuple(int(v) for v in spec.split(":")) for spec in text.split(",")]
    persistent = () if args.persistent is None else triples(args.persistent)
    variants = VARIANTS if args.variants is None else triples(args.variants)
    cases = [("Llama-3-8B", 4096, True), ("Llama-3-8B", 4096, False)]
    if args.models:
        cases = [(m, 4096, inplace) for m in args.models.split(",") for inplace in (True, False)]
    elif not args.quick:
        cases += [("Llama-3-70B", 4096, True), ("Qwen2.5-7B", 4096, True), ("Llama-3-8B", 256, True)]
    rows = []
    for model, T, inplace in cases:
        r = rope_case(model, T, inplace, variants=variants, persistent=persistent)
        rows.append(r)
        print(f"\n{r['case']} ({r['bytes'] / 1e6:.1f} MB): hot / cold µs, over the copy "
              f"(copy {r['copy_hot_us']:.2f} / {r['copy_cold_us']:.2f})", flush=True)
        for v in ["tileops"] + r["variants"]:
            print(f"  {v:16s} {r[v + '_hot_us']:8.2f} {r[v + '_cold_us']:8.2f}   "
                  f"{r[v + '_hot_us'] / r['copy_hot_us']:.3f} / {r[v + '_cold_us'] / r['copy_cold_us']:.3f}"
                  f"   {r.get(v + '_shape', '')}")
        for key in r:
            if key.endswith("_error"):
                print(f"  {key}: {r[key][:160]}")
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
