"""RMSNorm fp16 L2-cold and hot, the shipped kernel beside its variants and Liger, to find
the 0.3-0.8 µs L2-cold gap to Liger at 32-256 rows (dev/NOTES.md, session 18):

    python dev/time_norm_cold.py [--out PATH.json] [--rows 1,32,256] [--ns 4096,8192] [--harness]

Per shape: `copy` (y.copy_(x)); `shipped` (tileops_rms_norm, the launch rule's build,
launched with PDL as the op does); `shipped plain` (the same, launched without PDL);
`shipped rt=256` (256 threads a row, Liger's block); `min`, `min pdl`, `min w plain`
(dev/cuda/rms_norm_min_lab.cu: one row a block, no loop, 256 threads; with the PDL
prologue; w by plain loads); `op` (RMSNormFwdOp's eager call, out=); `liger` (LigerRMSNormFunction, when
it imports); `op alloc` (the eager call allocating y, as the bench calls it). Kernels are
launched directly (runtime.build + _C.cuda_launch) except `op`
and `liger`; times as dev/lab.py's time_interleaved (2 rounds, reversed in the second), or
with --harness as `python -m tileops bench` times them (its timers and their parameters, 3
rotated rounds, the median), each cold time also with a fixed 100 µs spin before every call:
session 18 found the kernels level with Liger L2-cold here and 0.35-0.8 µs behind in the
bench, so the question is what in the bench's run makes the difference."""
from __future__ import annotations

import argparse
import sys

import torch

import lab
from lab import common, default_out, time_interleaved

tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops.kernels.norm import cuda_rows as R  # noqa: E402
from tileops.kernels.norm import rms_norm as K  # noqa: E402
from tileops.norm import RMSNormFwdOp  # noqa: E402

DT = 1   # float16


def _launcher(h, grid, threads, args, pdl_on=True):
    stream_of = torch._C._cuda_getCurrentRawStream

    def fn():
        with runtime.pdl(pdl_on):
            _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, 0, stream_of(0), *args)
    return fn


def impls(rows, n, min_src):
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(rows, n, generator=gen).to("cuda", torch.float16)
    w = (1 + 0.1 * torch.randn(n, generator=gen)).to("cuda", torch.float16)
    y = torch.empty_like(x)
    out = {"copy": lambda: y.copy_(x)}
    vec = R.vec_for(DT, n, True)
    sm_count = runtime.device_attributes(0)["sm_count"]
    shipped, threads, rpb, _, _ = K.cuda_specialisation("tileops_rms_norm", DT, n, True, vec, sm_count)
    args = (x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, 1e-6)
    h = runtime.build(0, "norm/rms_norm.cu", "tileops_rms_norm", shipped, "pppqqqf", pdl=True)
    out["shipped"] = _launcher(h, -(-rows // rpb), threads, args)
    out["shipped plain"] = _launcher(h, -(-rows // rpb), threads, args, pdl_on=False)
    base = [o for o in shipped if not o.startswith(("-DTILEOPS_THREADS", "-DTILEOPS_ROW_THREADS",
                                                     "-DTILEOPS_MIN", "-DTILEOPS_KERNEL"))]
    o256 = base + ["-DTILEOPS_THREADS=256", "-DTILEOPS_ROW_THREADS=256", "-DTILEOPS_MIN_BLOCKS=4"]
    h = runtime.build(0, "norm/rms_norm.cu", "tileops_rms_norm", o256 + ["-DTILEOPS_KERNEL=0"], "pppqqqf", pdl=True)
    out["shipped rt=256"] = _launcher(h, rows, 256, args)
    for name, pdl, nc in (("min", 0, 1), ("min pdl", 1, 1), ("min w plain", 0, 0)):
        h = runtime.build(0, min_src, "lab_rms_norm_min",
                          o256 + ["-DTILEOPS_KERNEL=0", f"-DLAB_PDL={pdl}", f"-DLAB_W_NC={nc}"], "pppqqqf", pdl=bool(pdl))
        out[name] = _launcher(h, rows, 256, args)
    op = RMSNormFwdOp((n,), eps=1e-6)
    yo = torch.empty_like(x)
    out["op"] = lambda: op(x, w, out=yo)
    out["op alloc"] = lambda: op(x, w)   # as the bench calls it: y allocated a call
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        out["liger"] = lambda: LigerRMSNormFunction.apply(x, w, 1e-6)
    except ImportError as ex:
        print(f"liger not importable: {ex}")
    return out, (x, w, y, yo)


def harness_times(fns: dict, rounds: int = 3) -> dict:
    """{name: {"hot": [...], "cold": [...], "cold_spin100": [...]}}: tileops.bench's timers
    with the bench's parameters, rounds in rotated order (as bench.time_cuda)."""
    from tileops.bench import cuda_cold_us, cuda_hot_us
    names = list(fns)
    times = {k: {"hot": [], "cold": [], "cold_spin100": []} for k in names}
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            torch.cuda.synchronize()
            times[k]["cold"].append(cuda_cold_us(fns[k]))
            times[k]["cold_spin100"].append(cuda_cold_us(fns[k], spin_us=100.0))
            times[k]["hot"].append(cuda_hot_us(fns[k]))
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--rows", default="1,32,256")
    p.add_argument("--ns", default="4096,8192")
    p.add_argument("--harness", action="store_true",
                   help="the bench's cold timer as the bench runs it (25 ms warm-up, 100 ms of calls, 3 rounds in "
                        "rotated order, the median) over copy, shipped, op, op alloc and liger, each also with a "
                        "fixed spin of 100 µs before every call")
    a = p.parse_args(argv)
    min_src = lab.appended_source("norm/rms_norm.cu", "rms_norm_min_lab.cu")
    results = []
    for n in (int(v) for v in a.ns.split(",")):
        for rows in (int(v) for v in a.rows.split(",")):
            fns, keep = impls(rows, n, min_src)
            x, w, y, yo = keep
            fns["shipped"]()
            ref = y.clone()
            for k in ("min", "min pdl", "min w plain", "shipped rt=256"):
                y.zero_()
                fns[k]()
                torch.cuda.synchronize()
                print(f"{rows}x{n} {k}: bitwise equal to shipped: {torch.equal(y, ref)}")
            if a.harness:
                times = harness_times({k: fns[k] for k in ("copy", "shipped", "op", "op alloc", "liger") if k in fns})
            else:
                times = time_interleaved(fns)
            for k in times:   # --harness times a subset
                row = {"workload": f"{rows}x{n}", "dtype": "float16", "impl": k, "hot_us": min(times[k]["hot"]),
                       "cold_us": min(times[k]["cold"]), "hot_us_rounds": times[k]["hot"],
                       "cold_us_rounds": times[k]["cold"]}
                if a.harness:
                    import statistics
                    for m in ("hot", "cold", "cold_spin100"):
                        row[m + "_us"] = statistics.median(times[k][m])
                    row["cold_spin100_us_rounds"] = times[k]["cold_spin100"]
                results.append(row)
                print(f"{rows:5d}x{n:<5d} {k:16s} hot {row['hot_us']:7.2f}  cold {row['cold_us']:7.2f}  "
                      + (f"cold, 100 µs spin {row['cold_spin100_us']:7.2f}  " if a.harness else "")
                      + f"rounds cold {' '.join(f'{v:.2f}' for v in times[k]['cold'])}", flush=True)
            del fns, keep
    out = a.out or str(default_out("norm_cold_harness.json" if a.harness else "norm_cold.json"))
    common.write_results(out, results, common.metadata("cuda", timing="rmsnorm cold gap variants"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
