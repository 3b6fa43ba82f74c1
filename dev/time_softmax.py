"""Times SoftmaxFwdOp on a GPU against issue 14's goal (run on the H200): softmax within 1.1x
of the copy floor of its bytes at B >= 32.

    PYTHONPATH=src python3 dev/time_softmax.py [--quick] [--temperature] [--rows] [--staged] [--divrn]
        [--patches A.patch,B.patch] [--rounds 1] [--vocabs 128256,152064] [--batches 32,128]
        [--out softmax_timing.json]

For B in {1, 32, 128, 256} x V in {128256, 152064} x logits {bfloat16, float32}, probabilities
float32 out (as samplers keep them; --out-dtype same: the logits' dtype, the op's default, then
checked against float64 to the output's own eps); --temperature: a per-row temperature too; --quick: B =
128, 256, V = 128256, bfloat16 only. Hot (tileops.bench.cuda_hot_us: 50 calls in a CUDA graph, the median of 20
replays, microseconds per call) and cold (tileops.bench.cuda_cold_us: a 256 MiB write
before each call, CUDA events around it, the median over 100 ms of calls) times of tileops, of
torch.softmax(x.float() / t) (the samplers' expression; then .to() a 16-bit output), of torch.compile of it and of the
copy floor (dst.copy_(src) moving the same bytes: a copy of half the bytes read + written);
tileops over the copy (the goal: <= 1.1 at B >= 32). Before timing, a case's result is
checked against float64 (rtol 1e-5, tests/gpu/test_gpu_sampling.py's tolerance) and
torch's float32 result, so a wrong kernel cannot be timed as fast. "convert": x.to(the output's
dtype) (torch's streaming conversion or copy: the op's bytes, less the temperature's).
--floor (session 38): dev/time_floor.py's floor of the op's own mix of reads and writes beside
it (the copy above moves the same total bytes read and written alike; bf16 -> float32 writes
twice what it reads). Prints a table, writes JSON.

--staged (session 14): beside the op's registers build (16-bit logits without a
temperature: TILEOPS_STAGE 2, the chunk's raw words kept in registers, converted and
exponentiated again in passes 2 and 3; session 13's lab kernel, shipped), the staged build
(TILEOPS_STAGE 1: z then e through shared memory, the kernel before), timed as "staged"
and checked bit for bit against the op.
--divrn (written in session 26, shipped in session 27): the op's own build with
-DSMX_FASTDIV=0, every element of pass 3 divided by div.rn inline (MUFU.RCP an element)
instead of by the row's reciprocal made once, timed as "divrn" and checked bit for bit
against the op (session 27, bf16 -> float32 128256: the shipped build 0.87-0.94x its time).
--patches (session 30): each dev/patches file named (its csrc/ops hunks applied to a copy of
the source, lab.patched_source) built with the op's options and launch shape, timed beside
the op as the file's stem; A.patch+B.patch applies B over A; FILE@-DX=1@-DY=2 adds (or
replaces) those options; @smem=slots (the staged slots, OPT x THREADS x 32 bytes) or
@smem=N sets the launch's dynamic shared memory (the plan's by default). Its bits against
the op's and its largest error against float64 are reported, not asserted: an ablation
patch (smx_ablate_*) computes wrong values by design. --rounds: time every function of a
case this many times, alternating the order, and keep each one's minimum.
--rows (a lab variant, session 11, not a build the launch rules select): dev/cuda/
softmax_rows_lab.cu appended to the shipped source, tileops_softmax_rows: one CTA of 1024
threads per row whose halves take the row's 8 chunks two at a time, exactly as the
cluster's CTAs do (the same slots, order, trees: the same bits, checked here against the
op), reading the row three times (the second and third from L2); timed beside the op as
"rows". --batches: the B values instead of the default (and --quick's).

Lab variants timed with this script, kept in git history, not here (the
shipped kernel is the cluster kernel, a cluster of CTAs per row; dev/NOTES.md, sessions 10 and 11):
  e x RN(1/S) in pass 3 instead of the division (session 10's --rcp, commit cac1daf):
    44.45 vs 41.76 µs hot at 128 x 128256 bf16: the division does not bound it;
  persistent clusters looping over rows, with or without the next row's first batch
    prefetched (session 11's --persist, commit 8a197ce): 45-54 µs hot against the
    shipped kernel's 41.8 at the same size in the session's earlier run (p1@49 45.2, p2@28 46.9);
  one cluster exchange of each CTA's (max, sum of exp(z - its max)) instead of two
    (session 18's --pairs, -DSMX_PAIRS=1, commit e75dd78): 1.01-1.05x the shipped
    kernel's time at B = 32 / 128 / 256 x 128256 bf16 (cold 18.37 / 43.46 / 75.71 against
    17.60 / 41.38 / 72.38): the exchange it saves is not on the critical path;
  persistent clusters whose next row's chunk the copy engine brings in (cp.async.bulk)
    while the row is computed (session 22's --tma, dev/cuda/softmax_tma_lab.cu, commit
    09d2270): the same bits, 1.1-1.5x the shipped kernel's time (B = 128 cold 46.6-50.7
    against 41.4 with 24-64 clusters): a row's chain, not its loads, bounds it."""
from __future__ import annotations

import argparse
import json
import types

import lab
import torch

from tileops import _C, runtime
from tileops._dtypes import CODE
from tileops.kernels.sampling import cuda_sampling
from tileops.sampling import SoftmaxFwdOp


BS = (1, 32, 128, 256)
VS = (128256, 152064)
DTYPES = (torch.bfloat16, torch.float32)


def reference(x, t):
    return torch.softmax(x.float() if t is None else x.float() / t[:, None], -1)


def _specialised(x, t, out_dtype):
    """(dev, B, probs, source, kernel, opts, plan): a new output for x and the shipped
    build's specialisation for x's V, dtype, temperature and alignment"""
    dev = x.device.index or 0
    B, V = x.shape
    probs = torch.empty(B, V, dtype=out_dtype, device=x.device)
    aligned = all(p % 16 == 0 for p in (x.data_ptr(), probs.data_ptr()))
    source, kernel, opts, plan = cuda_sampling.softmax_specialisation(
        CODE[x.dtype], CODE[out_dtype], V, t is not None, aligned, cuda_sampling.arch(dev),
        cuda_sampling._device_limits(dev))
    return dev, B, probs, source, kernel, opts, plan


def rows_launcher(x, t, out_dtype):
    """launch(): tileops_softmax_rows into a new output: the shipped build's defines for x's
    V, dtype and alignment (cuda_sampling.softmax_specialisation), the shipped source's
    spliced text with the lab kernel appended, grid min(B, sm_count) (rows grid-strided),
    blocks of 2 x the plan's threads."""
    dev, B, probs, source, _, opts, plan = _specialised(x, t, out_dtype)
    handle = runtime.build(dev, lab.appended_source(source, "softmax_rows_lab.cu"), "tileops_softmax_rows", opts,
                           "pppq", pdl=True)
    grid = min(B, runtime.device_attributes(dev)["sm_count"])
    args = (x.data_ptr(), 0 if t is None else t.data_ptr(), probs.data_ptr(), B)
    stream = torch._C._cuda_getCurrentRawStream
    keep = types.SimpleNamespace(x=x, t=t)   # the pointers' tensors live as long as the launch

    def launch():
        _C.cuda_launch(handle, grid, 1, 1, 2 * plan.threads, 1, 1, 0, stream(dev), *args)
        return probs if keep else None
    return launch


def build_launcher(x, t, out_dtype, defines=(), patches=(), smem=None):
    """launch(): the op's build for x (and t) into a new output, the shipped plan's launch
    shape: `defines` each replacing the shipped option of its name, or added; `patches`
    (dev/patches files) applied in turn to the source (lab.patched_source); the dynamic
    shared memory the plan's, or smem ("slots": the staged slots, OPT x THREADS x 32 bytes,
    or a byte count)."""
    dev, B, probs, source, kernel, opts, plan = _specialised(x, t, out_dtype)
    opts = lab.with_defines(opts, defines)
    smem = plan.smem if smem is None else plan.opt * plan.threads * 32 if smem == "slots" else int(smem)
    handle = runtime.build(dev, lab.patched_source(source, tuple(patches)) if patches else source, kernel, opts,
                           "ppp", pdl=True)
    args = (x.data_ptr(), 0 if t is None else t.data_ptr(), probs.data_ptr())
    stream = torch._C._cuda_getCurrentRawStream
    keep = types.SimpleNamespace(x=x, t=t)   # the pointers' tensors live as long as the launch

    def launch():
        _C.cuda_launch(handle, B * plan.cluster, 1, 1, plan.threads, 1, 1, smem, stream(dev), *args)
        return probs if keep else None
    return launch


def staged_launcher(x, out_dtype):
    """tileops_softmax's staged build (TILEOPS_STAGE 1, its shared memory) for x without a
    temperature: the shipped plan's launch shape otherwise."""
    return build_launcher(x, None, out_dtype, ("-DTILEOPS_STAGE=1",), smem="slots")


# lab builds of the op's own source: the shipped options, these replaced or added. divrn:
# -DSMX_FASTDIV=0 (every element divided by div.rn inline, the division before the
# reciprocal was made once a row)
DEFINES = {"divrn": ("-DSMX_FASTDIV=0",)}


def parse_spec(spec):
    """--patches' PATCH[+PATCH...][@-DX=v...][@smem=slots|N] -> (patches, defines, smem or None)"""
    patches, defines, opts = lab.parse_spec(spec, ("smem",))
    return patches, defines, opts.get("smem")


def variant_name(spec):
    """A.patch[+B.patch...][@-DX=v...][@smem=...] -> the patches' stems joined by +, then @X=v
    for each option (and smem)"""
    return lab.variant_name(spec, ("smem",))


def time_rounds(fns, rounds):
    """lab.time_interleaved with tileops.bench's cold defaults (25 warm-up calls, 100 timed):
    each function's minimum over the rounds, as {name_hot_us, name_cold_us}"""
    times = lab.time_interleaved(fns, rounds, cold_warmup=25, cold_rep=100)
    return {f"{k}_{m}_us": min(v[m]) for k, v in times.items() for m in ("hot", "cold")}


def softmax_case(B, V, dtype, temperature, rows_lab=False, staged_lab=False, divrn_lab=False, patches=(), rounds=1,
                 out_dtype=torch.float32, masked=0.0, floor=False):
    g = torch.Generator(device="cuda").manual_seed(B * 7 + V)
    x = (torch.randn(B, V, device="cuda", generator=g) * 3).to(dtype)
    t = (torch.rand(B, device="cuda", generator=g) * 1.75 + 0.25) if temperature else None
    if masked:   # -inf where a top-k / top-p mask would leave it: e = 0 there, -inf / t beside finite x / t
        x[torch.rand(B, V, device="cuda", generator=g) < masked] = -float("inf")
        x[:, 0] = 1.0   # no row masked whole
    od = out_dtype or dtype          # None: the logits' dtype (the op's default)
    op = SoftmaxFwdOp(od)
    got = op(x, t)
    z = x.double() if t is None else x.double() / t.double()[:, None]
    exact = torch.softmax(z, -1)
    # float32 out: rtol 1e-5 (the GPU tests'); 16-bit out: one rounding of that, half an ulp
    rtol = 1e-5 if od == torch.float32 else torch.finfo(od).eps
    torch.testing.assert_close(got.double(), exact, rtol=rtol, atol=1e-12)
    torch.testing.assert_close(got.float(), reference(x, t), rtol=max(3e-5, rtol), atol=1e-9)
    ref = reference if od == torch.float32 else lambda x, t: reference(x, t).to(od)
    compiled = torch.compile(ref)
    compiled(x, t)
    nbytes = x.numel() * x.element_size() + got.numel() * got.element_size() + (0 if t is None else t.numel() * 4)
    src = torch.ones(nbytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    out_name = "" if od == torch.float32 else f" -> {str(od)[6:]}"
    name = f"softmax B={B} V={V} {str(dtype)[6:]}{out_name}{' t' if temperature else ''}{' m' if masked else ''}"
    row = {"case": name, "B": B, "V": V, "dtype": str(dtype)[6:], "out_dtype": str(od)[6:],
           "temperature": temperature, "masked": masked, "bytes": nbytes}
    fns = {"tileops": lambda: op(x, t), "torch": lambda: ref(x, t), "compile": lambda: compiled(x, t),
           "copy": lambda: dst.copy_(src), "convert": lambda: x.to(od, copy=True)}
    if rows_lab:
        fns["rows"] = rows_launcher(x, t, od)
        p = fns["rows"]()
        torch.cuda.synchronize()
        # its construction says the op's bits; a value off float64 fails, bits that differ are reported
        torch.testing.assert_close(p.double(), exact, rtol=rtol, atol=1e-12)
        row["rows_bitwise"] = bool(torch.equal(p, got))
    words = not temperature and dtype != torch.float32   # the registers builds' cases
    labs = (("staged",) if staged_lab and words else ()) + (("divrn",) if divrn_lab else ())
    for variant in labs:
        fns[variant] = staged_launcher(x, od) if variant == "staged" else build_launcher(
            x, t, od, DEFINES[variant])
        p = fns[variant]()
        torch.cuda.synchronize()
        torch.testing.assert_close(p.double(), exact, rtol=rtol, atol=1e-12)
        row[variant + "_bitwise"] = bool(torch.equal(p, got))
    for spec in patches:
        name = variant_name(spec)
        files, defines, smem = parse_spec(spec)
        fns[name] = build_launcher(x, t, od, defines, files, smem)
        p = fns[name]()
        torch.cuda.synchronize()
        row[name + "_bitwise"] = bool(torch.equal(p, got))
        row[name + "_max_rel_err"] = float(((p.double() - exact).abs() / exact.clamp_min(1e-30)).max())
    if floor:   # the floor of the op's own reads and writes (dev/time_floor.py), the temperature's aside
        import time_floor
        fns.update(time_floor.floor_launchers(x.numel() * x.element_size(), got.numel() * got.element_size()))
    row.update(time_rounds(fns, rounds))
    if floor:
        for m in ("hot", "cold"):
            row[f"floor_{m}_us"] = min(row[f"floor u{u}_{m}_us"] for u in time_floor.UNROLLS)
    return row


def variant_table(rows, name):
    """A variant's times beside the op's and the copy's, its bits against the op's (and its
    largest error against float64 where measured), for each case that timed it."""
    print(f"\n{name}\n{'case':36s} {'hot':>9s} {'cold':>9s} {'/copy h':>8s} {'/copy c':>8s} {'/op h':>7s} "
          f"{'/op c':>7s}  bits     max rel err")
    for r in rows:
        if name + "_hot_us" not in r:
            continue
        hot, cold = r[name + "_hot_us"], r[name + "_cold_us"]
        bits = "the op's" if r[name + "_bitwise"] else "DIFFER"
        err = f" {r[name + '_max_rel_err']:.2e}" if name + "_max_rel_err" in r else ""
        print(f"{r['case']:36s} {hot:9.2f} {cold:9.2f} {hot / r['copy_hot_us']:8.2f} {cold / r['copy_cold_us']:8.2f} "
              f"{hot / r['tileops_hot_us']:7.2f} {cold / r['tileops_cold_us']:7.2f}  {bits:8s}{err}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="B = 128, 256, V = 128256, bfloat16 (unless --dtypes)")
    ap.add_argument("--temperature", action="store_true", help="with a per-row temperature too")
    ap.add_argument("--rows", action="store_true", help="time the lab kernel tileops_softmax_rows beside the op")
    ap.add_argument("--staged", action="store_true", help="time the staged build (z in shared memory) beside the "
                                                           "op's registers build (16-bit logits, no temperature)")
    ap.add_argument("--divrn", action="store_true", help="time the op's build with -DSMX_FASTDIV=0 (div.rn an "
                                                          "element) beside it: the same bits")
    ap.add_argument("--vocabs", default=None, help="comma-separated V values (default 128256,152064; --quick 128256)")
    ap.add_argument("--batches", default=None, help="comma-separated B values (default 1,32,128,256; --quick 128,256)")
    ap.add_argument("--patches", default="", help="comma-separated dev/patches files, each timed beside the op")
    ap.add_argument("--rounds", type=int, default=1, help="timing rounds (alternating order), the minimum kept")
    ap.add_argument("--out-dtype", choices=("float32", "same"), default="float32",
                    help="the probabilities' dtype: float32 (as samplers keep them) or the logits' own")
    ap.add_argument("--dtypes", default=None,
                    help="comma-separated logits dtypes (default bfloat16,float32; --quick bfloat16)")
    ap.add_argument("--masked", type=float, default=0.0,
                    help="this fraction of the logits -inf, at random (as a top-k / top-p mask leaves them; "
                         "case names end in m)")
    ap.add_argument("--floor", action="store_true",
                    help="time dev/cuda/stream_floor_lab.cu in the op's own mix of reads and writes (1 : 2 for "
                         "bf16 -> float32) beside it: the op over that floor, a table of its own")
    ap.add_argument("--out", default="softmax_timing.json")
    args = ap.parse_args()
    names = ("float32", "float16", "bfloat16")
    if args.dtypes and not set(args.dtypes.split(",")) <= set(names):
        ap.error(f"--dtypes {args.dtypes}: expected a comma-separated subset of {','.join(names)}")
    dtypes = tuple(getattr(torch, d) for d in args.dtypes.split(",")) if args.dtypes else \
        (torch.bfloat16,) if args.quick else DTYPES
    rows = []
    patches = tuple(p for p in args.patches.split(",") if p)
    batches = tuple(int(b) for b in args.batches.split(",")) if args.batches else (128, 256) if args.quick else BS
    vocabs = tuple(int(v) for v in args.vocabs.split(",")) if args.vocabs else (128256,) if args.quick else VS
    for temperature in ((False, True) if args.temperature else (False,)):
        for dtype in dtypes:
            for V in vocabs:
                for B in batches:
                    rows.append(softmax_case(B, V, dtype, temperature, args.rows, args.staged, args.divrn, patches,
                                             args.rounds, None if args.out_dtype == "same" else torch.float32,
                                             args.masked, args.floor))
                    print(rows[-1]["case"], flush=True)
    for r in rows:
        for m in ("hot", "cold"):
            r[f"tileops_{m}_gbps"] = r["bytes"] / r[f"tileops_{m}_us"] / 1e3
            r[f"over_copy_{m}"] = r[f"tileops_{m}_us"] / r[f"copy_{m}_us"]
    hdr = (f"{'case':36s} {'hot us':>8s} {'cold us':>8s} {'GB/s':>6s} {'copy hot':>9s} {'copy cold':>9s} "
           f"{'/copy h':>8s} {'/copy c':>8s} {'torch hot':>9s} {'compile hot':>11s} {'compile cold':>12s} "
           f"{'convert h':>9s} {'convert c':>9s}")
    print(hdr)
    for r in rows:
        goal = "" if r["B"] < 32 else ("  ok" if max(r["over_copy_hot"], r["over_copy_cold"]) <= 1.1
                                      else "  > 1.1x copy")
        print(f"{r['case']:36s} {r['tileops_hot_us']:8.2f} {r['tileops_cold_us']:8.2f} {r['tileops_cold_gbps']:6.0f} "
              f"{r['copy_hot_us']:9.2f} {r['copy_cold_us']:9.2f} {r['over_copy_hot']:8.2f} {r['over_copy_cold']:8.2f} "
              f"{r['torch_hot_us']:9.2f} {r['compile_hot_us']:11.2f} {r['compile_cold_us']:12.2f} "
              f"{r['convert_hot_us']:9.2f} {r['convert_cold_us']:9.2f}{goal}")
    if args.floor:
        print(f"\n{'case':36s} {'floor hot':>9s} {'floor cold':>10s} {'/floor h':>8s} {'/floor c':>8s} "
              f"{'copy/floor c':>12s}")
        for r in rows:
            print(f"{r['case']:36s} {r['floor_hot_us']:9.2f} {r['floor_cold_us']:10.2f} "
                  f"{r['tileops_hot_us'] / r['floor_hot_us']:8.2f} {r['tileops_cold_us'] / r['floor_cold_us']:8.2f} "
                  f"{r['copy_cold_us'] / r['floor_cold_us']:12.2f}")
    names = ((("staged",) if args.staged else ()) + (("divrn",) if args.divrn else ()) +
             tuple(variant_name(p) for p in patches) + (("rows",) if args.rows else ()))
    for name in names:
        variant_table(rows, name)
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
