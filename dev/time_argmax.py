"""Times ArgmaxFwdOp on a GPU against issue 14's goal (run on the H200): argmax within 1.1x
of the copy floor at B >= 32.

    PYTHONPATH=src python3 dev/time_argmax.py [--quick] [--batch-bytes N] [--whole-split C:T]
        [--cluster-split C:T] [--flush write|read] [--sample] [--patches A.patch,B.patch]
        [--rounds N] [--out argmax_timing.json]

For B in {1, 32, 128, 256} x V in {128256, 152064} x dtype {bfloat16, float32}: hot (tileops.bench.cuda_hot_us: 50 calls in a CUDA graph, the median of 20
replays, microseconds per call) and cold (tileops.bench.cuda_cold_us: a 256 MiB write
before each call, CUDA events around it, the median over 100 ms of calls) times of tileops, of torch.argmax and of the copy floor (dst.copy_(src) moving the same
bytes: half of them read, half written; timed the same way); GB/s of the logits read and tileops over the copy (the goal:
<= 1.1 cold at B >= 32). Before timing a case its result is checked equal to
torch.argmax's (random normal logits; a bfloat16 tie goes to the lowest index in both), so a
wrong kernel cannot be timed as fast.
B = 1, 32 run a row over a cluster of CTAs, B = 128, 256 a CTA per row
(kernels/sampling/cuda_sampling.py). --batch-bytes: the bytes of loads in flight per thread
of the argmax kernel (-DTILEOPS_BATCH, csrc/ops/sampling/argmax.cu; default 64);
--sample: SampleFromProbsFwdOp too, next to (probs / q).argmax(-1) (--masked F: a fraction F
of the logits -inf before the softmax, zero probabilities as a mask leaves them);
--patches (session 43): each dev/patches file named (A.patch+B.patch: B over A; its csrc/ops
hunks applied to a copy of the source, lab.patched_source) built with the op's options (a
spec's @-DX=v replacing or adding one: A.patch@-DTILEOPS_BATCH=8) and
launched by the op's own launcher (the cluster below sm_count / 2 rows, a CTA a row from
there), checked equal to torch's, timed beside the op as "+<stem>"; --rounds N: every
function of a case in N interleaved rounds (lab.time_interleaved; the minimum kept), else
one. Prints a table, writes JSON."""
from __future__ import annotations

import argparse
import json

import torch

import lab  # dev/lab.py: the cold timer's flush (--flush)
from tileops.bench import cuda_cold_us as cold_us, cuda_hot_us as hot_us
from tileops.sampling import ArgmaxFwdOp, SampleFromProbsFwdOp

BS = (1, 32, 128, 256)
VS = (128256, 152064)
DTYPES = (torch.bfloat16, torch.float32)


def set_batch_bytes(nbytes):
    """Every argmax build from now on with -DTILEOPS_BATCH = nbytes / 8 elements' bytes."""
    from tileops.kernels.sampling import cuda_sampling as K
    from tileops._dtypes import DTYPE
    plain = K.argmax_specialisation

    def spec(dtype_code, V, aligned16, arch_, smem_optin, one_cta=False):
        source, kernel, opts, plan = plain(dtype_code, V, aligned16, arch_, smem_optin, one_cta=one_cta)
        octets = max(1, nbytes // (8 * DTYPE[dtype_code].itemsize))
        return source, kernel, opts + (f"-DTILEOPS_BATCH={octets}",), plan
    K.argmax_specialisation = spec


def set_row_split(cluster, threads, one_cta=True):
    """Every argmax build for a row a CTA (the launcher's rule from sm_count / 2 rows on;
    one_cta=False: every build of a row over a cluster, the rule below that) is instead a row
    over `cluster` CTAs of `threads` threads (a lab knob, session 41: more loads in flight an
    SM than one CTA of 1024 threads a row on 128 of 132 SMs; session 42: B = 32's clusters
    of 8 x 256 threads ran 1.3x the read-only floor L2-cold, 2x hot)."""
    from tileops.kernels.sampling import cuda_sampling as K
    from tileops._dtypes import DTYPE
    plain = K.argmax_specialisation

    def spec(dtype_code, V, aligned16, arch_, smem_optin, one_cta=False, _which=one_cta):
        source, kernel, opts, plan = plain(dtype_code, V, aligned16, arch_, smem_optin, one_cta=one_cta)
        if one_cta != _which:
            return source, kernel, opts, plan
        chunk = -(-V // (8 * cluster)) * 8
        plan = plan._replace(cluster=cluster, chunk=chunk, threads=threads, opt=-(-(chunk // 8) // threads),
                             min_blocks=max(1, 2048 // threads))
        return source, kernel, tuple(K._row_opts(dtype_code, V, K.vec(DTYPE[dtype_code], V, aligned16), plan)), plan
    K.argmax_specialisation = spec


PATCHES = ()   # --patches: the specs timed beside the op
ROUNDS = 1     # --rounds


def time_fns(fns):
    row = {}
    if ROUNDS > 1:
        for name, t in lab.time_interleaved(fns, rounds=ROUNDS).items():
            row[name + "_hot_us"], row[name + "_cold_us"] = min(t["hot"]), min(t["cold"])
        return row
    for name, fn in fns.items():
        row[name + "_hot_us"] = hot_us(fn)
        row[name + "_cold_us"] = cold_us(fn)
    return row


def patched_launch(builder, specialisation, tensors, spec):
    """launch(*tensors) of cuda_sampling's `builder` ("build_argmax" or "build_sample") for
    the logits' (tensors[0]) dtype and V, its alignment the op's (every pointer 16-byte
    aligned: cuda_sampling.vec adds the rows' check), with every build's source the
    dev/patches files of `spec` applied (lab.patched_source) and its defines (@-DX=v)
    replacing the options of their names: the op's launcher and options, the kernel patched."""
    from types import SimpleNamespace

    from tileops._dtypes import CODE
    from tileops.kernels.sampling import cuda_sampling as K
    patches, defines, _ = lab.parse_spec(spec)
    logits = tensors[0]
    dev = logits.device.index or 0
    b = SimpleNamespace(device=dev, dtype=CODE[logits.dtype], V=logits.shape[1], arch=K.arch(dev),
                        vec=all(t.data_ptr() % 16 == 0 for t in tensors))
    plain = getattr(K, specialisation)

    def patched(*args, **kw):
        source, kernel, opts, plan = plain(*args, **kw)
        return lab.patched_source(source, patches), kernel, lab.with_defines(opts, defines), plan
    setattr(K, specialisation, patched)   # the builder looks it up when called
    try:
        return getattr(K, builder)(b)
    finally:
        setattr(K, specialisation, plain)


def variant_fns(builder, specialisation, tensors, want):
    """{"+<stem>": fn} for each --patches spec: fn launches the patched kernel on `tensors`
    (its inputs, then its output: the token), each checked equal to `want` first."""
    fns = {}
    for spec in PATCHES:
        launch = patched_launch(builder, specialisation, tensors, spec)
        launch(*tensors)   # the launcher builds on first use: once here, for the check
        torch.cuda.synchronize()
        assert torch.equal(tensors[-1], want), f"{spec}: {int((tensors[-1] != want).sum())} rows differ from torch"
        fns["+" + lab.variant_name(spec)] = (lambda launch=launch: launch(*tensors))
    return fns


def _copy_pair(nbytes):
    """The copy floor's buffers: a copy of nbytes / 2 reads and writes nbytes in all, the
    traffic of a kernel that reads nbytes (the project's convention: same bytes moved)."""
    src = torch.ones(nbytes // 2, dtype=torch.uint8, device="cuda")
    return src, torch.empty_like(src)


def argmax_case(B, V, dtype):
    x = torch.randn(B, V, device="cuda").to(dtype)
    op = ArgmaxFwdOp()
    got, want = op(x), torch.argmax(x, -1)
    torch.cuda.synchronize()
    assert torch.equal(got, want), f"argmax B={B} V={V} {dtype}: {int((got != want).sum())} rows differ from torch"
    nbytes = x.numel() * x.element_size()
    src, dst = _copy_pair(nbytes)
    row = {"case": f"argmax B={B} V={V} {str(dtype)[6:]}", "B": B, "V": V, "dtype": str(dtype)[6:], "bytes": nbytes}
    token = torch.empty(B, dtype=torch.int64, device="cuda")
    row.update(time_fns({"tileops": lambda: op(x),
                         **variant_fns("build_argmax", "argmax_specialisation", (x, token), want),
                         "torch": lambda: torch.argmax(x, -1), "copy": lambda: dst.copy_(src)}))
    return row


def sample_case(B, V, dtype, masked=0.0):
    x = torch.randn(B, V, device="cuda") * 3
    if masked:   # -inf where a top-k / top-p mask would leave it: those probabilities are 0
        x[torch.rand(B, V, device="cuda") < masked] = -float("inf")
        x[:, 0] = 1.0
    probs = torch.softmax(x, -1).to(dtype)
    q = torch.empty(B, V, device="cuda").exponential_()
    op = SampleFromProbsFwdOp()
    got, want = op(probs, q), (probs.float() / q).argmax(-1)
    torch.cuda.synchronize()
    assert torch.equal(got, want), f"sample B={B} V={V} {dtype}: {int((got != want).sum())} rows differ from torch"
    nbytes = probs.numel() * probs.element_size() + q.numel() * 4
    src, dst = _copy_pair(nbytes)
    row = {"case": f"sample B={B} V={V} {str(dtype)[6:]}{' m' if masked else ''}", "B": B, "V": V,
           "dtype": str(dtype)[6:], "masked": masked, "bytes": nbytes}
    token = torch.empty(B, dtype=torch.int64, device="cuda")
    row.update(time_fns({"tileops": lambda: op(probs, q),
                         **variant_fns("build_sample", "sample_specialisation", (probs, q, token), want),
                         "torch": lambda: (probs.float() / q).argmax(-1), "copy": lambda: dst.copy_(src)}))
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="B = 32, 128 and V = 128256 only")
    ap.add_argument("--batch-bytes", type=int, default=None,
                    help="bytes of loads in flight per thread of the argmax kernel (default: the kernel's 64)")
    ap.add_argument("--whole-split", default=None, metavar="CLUSTER:THREADS",
                    help="rows a CTA each (B >= sm_count / 2) split over CLUSTER CTAs of THREADS threads instead")
    ap.add_argument("--cluster-split", default=None, metavar="CLUSTER:THREADS",
                    help="rows over a cluster (B < sm_count / 2) split over CLUSTER CTAs of THREADS threads instead "
                         "of the rule's (8 x 256 at 128256)")
    lab.add_flush_option(ap)
    ap.add_argument("--sample", action="store_true", help="time SampleFromProbsFwdOp too")
    ap.add_argument("--masked", type=float, default=0.0,
                    help="--sample: this fraction of the logits -inf before the softmax (as a top-k / top-p mask "
                         "leaves them: zero probabilities; case names end in m)")
    ap.add_argument("--patches", default="", help="comma-separated dev/patches files (A.patch+B.patch: B over A), "
                                                   "each timed beside the op")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds of every function of a case")
    ap.add_argument("--out", default="argmax_timing.json")
    args = ap.parse_args()
    global PATCHES, ROUNDS
    PATCHES, ROUNDS = tuple(p for p in args.patches.split(",") if p), max(1, args.rounds)
    if args.batch_bytes is not None:
        set_batch_bytes(args.batch_bytes)
    if args.whole_split:
        c, t = (int(v) for v in args.whole_split.split(":"))
        set_row_split(c, t)
    if args.cluster_split:
        c, t = (int(v) for v in args.cluster_split.split(":"))
        set_row_split(c, t, one_cta=False)
    lab.use_flush(args.flush)
    rows = []
    for dtype in DTYPES:
        for V in VS:
            for B in BS:
                if args.quick and (B not in (32, 128) or V != 128256):
                    continue
                rows.append(argmax_case(B, V, dtype))
                if args.sample:
                    rows.append(sample_case(B, V, dtype, args.masked))
                print(rows[-1]["case"], flush=True)
    for r in rows:
        for m in ("hot", "cold"):
            r[f"tileops_{m}_gbps"] = r["bytes"] / r[f"tileops_{m}_us"] / 1e3
            r[f"over_copy_{m}"] = r[f"tileops_{m}_us"] / r[f"copy_{m}_us"]
            r[f"over_torch_{m}"] = r[f"tileops_{m}_us"] / r[f"torch_{m}_us"]
    hdr = (f"{'case':34s} {'hot us':>8s} {'cold us':>8s} {'GB/s':>6s} {'copy hot':>9s} {'copy cold':>9s} "
           f"{'/copy h':>8s} {'/copy c':>8s} {'torch hot':>9s} {'torch cold':>10s}")
    print(hdr)
    for r in rows:
        goal = "" if r["B"] < 32 or not r["case"].startswith("argmax") else (
            "  ok" if r["over_copy_cold"] <= 1.1 else "  > 1.1x copy")
        print(f"{r['case']:34s} {r['tileops_hot_us']:8.2f} {r['tileops_cold_us']:8.2f} {r['tileops_cold_gbps']:6.0f} "
              f"{r['copy_hot_us']:9.2f} {r['copy_cold_us']:9.2f} {r['over_copy_hot']:8.2f} {r['over_copy_cold']:8.2f} "
              f"{r['torch_hot_us']:9.2f} {r['torch_cold_us']:10.2f}{goal}"
              + "".join(f"  {k[:-7]} {r[k]:.2f} / {r[k[:-7] + '_cold_us']:.2f}" for k in r
                        if k.startswith("+") and k.endswith("_hot_us")))
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "batch_bytes": args.batch_bytes or 64,
                   "whole_split": args.whole_split, "cluster_split": args.cluster_split, "flush": args.flush,
                   "patches": PATCHES, "rounds": ROUNDS, "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()
