"""Benchmark tileops' RMSNormFwdOp against PyTorch on the manifest's workloads.

    python benchmarks/bench_norm.py --device cuda|cpu [--out PATH.json] [--plot PATH.png]
                                    [--no-plot] [--workloads 2048x4096,...] [--dtypes ...]
                                    [--side-stream]

Impls, per workload (x shape; normalised over the last dimension) and dtype:
  tileops        RMSNormFwdOp((n,), eps) built once per workload/dtype; ``op(x, w)``
  torch          ``F.rms_norm(x, (n,), w, eps)``
  torch.compile  ``torch.compile(lambda x, w: F.rms_norm(...), fullgraph=True,
                 dynamic=False)``, compiled fresh for each workload/dtype and warmed up
  copy           ``y.copy_(x)`` into a preallocated y: the practical memory floor
``eps = torch.finfo(dtype).eps`` for both tileops and torch, so both compute the same.

CUDA: workloads and dtypes from the manifest (``tileops.manifest.package_entries()``).
Each impl gets ``cold_us`` (triton do_bench median, L2 flushed between calls), ``hot_us``
(per call in a 50-call CUDA graph, L2-hot, no launch overhead), each the median of 3
rounds in which every impl of the case is timed in turn (order rotated each round; the
rounds are in ``cold_us_rounds`` / ``hot_us_rounds``), and ``tbps`` (bytes moved /
cold_us; read x + write y + read w for the norms, read x + write y for copy). The 1 GiB
device copy bandwidth goes into the metadata as ``copy_tbps``.

Everything runs on torch's current stream -- the legacy default stream unless
``--side-stream`` puts it all on one fresh ``torch.cuda.Stream()``.

CPU: the 2048x4096 and 1x4096 workloads in float32, bfloat16 and float16; ``us`` is the
median over rounds of a perf_counter loop's per-call time (torch's default thread count).

Before timing a workload, tileops' output is compared with torch's; beyond tolerance
(scaled max abs error: 1e-4 float32, 2e-2 half) tileops is not timed there, the JSON
records the failure and the script exits 1 -- a broken kernel cannot produce a number.

Default output: benchmarks/results/<h200|cpu|device name>/norm.json, and a PNG beside it.
"""
from __future__ import annotations

import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

OP = "RMSNormFwdOp"
CPU_SHAPES = ((2048, 4096), (1, 4096))
CPU_DTYPES = ("float32", "bfloat16", "float16")
IMPLS = ("tileops", "torch", "torch.compile", "copy")


def workloads(device, only=None, dtypes=None):
    """(shape, dtype names) pairs to run.

    Parameters
    ----------
    device : str
        "cuda": the manifest's workloads; "cpu": those among :data:`CPU_SHAPES`, with
        :data:`CPU_DTYPES`.
    only : set of str, optional
        Keep these workload names ("2048x4096") only.
    dtypes : list of str, optional
        Override the dtypes.

    Returns
    -------
    list of (tuple, list)
    """
    from tileops.manifest import package_entries
    out = []
    for wl in package_entries()[OP].workloads:
        shape = tuple(int(d) for d in wl["x"])
        dts = list(wl.get("dtypes", ()))
        if device == "cpu":
            if shape not in CPU_SHAPES:
                continue
            dts = list(CPU_DTYPES)
        if only and common.workload_name(shape) not in only:
            continue
        out.append((shape, list(dtypes) if dtypes else dts))
    if device == "cpu":  # keep CPU_SHAPES' order; fall back to it if the manifest changed
        have = {s for s, _ in out}
        out = sorted(out, key=lambda p: CPU_SHAPES.index(p[0]))
        for s in CPU_SHAPES:
            if s not in have and (not only or common.workload_name(s) in only):
                out.append((s, list(dtypes) if dtypes else list(CPU_DTYPES)))
    return out


def make_case(shape, dtype_name, device):
    """Inputs and the impls' zero-argument callables for one workload/dtype.

    Returns
    -------
    dict
        ``x, w, eps, n, fns`` (impl name -> callable), ``bytes`` (impl name -> bytes moved).
    """
    import torch
    import torch.nn.functional as F
    from tileops.norm import RMSNormFwdOp

    dtype = getattr(torch, dtype_name)
    n = shape[-1]
    eps = torch.finfo(dtype).eps
    x, w = common.norm_inputs(shape, dtype, device)
    y = torch.empty_like(x)

    op = RMSNormFwdOp((n,), eps=eps)
    torch._dynamo.reset()  # fresh compile per case: no recompile limit, no dynamic shapes
    compiled = torch.compile(lambda a, b: F.rms_norm(a, (n,), b, eps), fullgraph=True,
                             dynamic=False)

    es = x.element_size()
    norm_bytes = 2 * x.numel() * es + w.numel() * es
    return {
        "x": x, "w": w, "eps": eps, "n": n,
        "fns": {
            "tileops": lambda: op(x, w),
            "torch": lambda: F.rms_norm(x, (n,), w, eps),
            "torch.compile": lambda: compiled(x, w),
            "copy": lambda: y.copy_(x),
        },
        "bytes": {"tileops": norm_bytes, "torch": norm_bytes, "torch.compile": norm_bytes,
                  "copy": 2 * x.numel() * es},
    }


def check_case(case, dtype_name):
    """tileops vs torch (same dtype): (max_abs_err, scaled_err, ok, error message)."""
    import torch.nn.functional as F
    try:
        got = case["fns"]["tileops"]()
        ref = F.rms_norm(case["x"], (case["n"],), case["w"], case["eps"])
        err, scaled, ok = common.check_close(got, ref, dtype_name)
        if got.dtype != ref.dtype:
            return err, scaled, False, f"dtype {got.dtype} != {ref.dtype}"
        if not got.is_contiguous():
            return err, scaled, False, "output is not contiguous"
        return err, scaled, ok, None if ok else (
            f"scaled error {scaled:.3g} > tolerance {common.TOLERANCE[dtype_name]:g}")
    except Exception as e:
        traceback.print_exc()
        return None, None, False, f"raised {type(e).__name__}: {e}"


CUDA_ROUNDS = 3


def time_cuda_rounds(ready, case_rows, nbytes, wl, dt, failures):
    """Cold and hot times of every impl of one case, in CUDA_ROUNDS interleaved rounds
    (the order rotated each round), each number the median over the rounds: a drift of
    the card's state during the case (clocks, the memory system) then hits every impl
    alike, and tileops/copy compares like with like. The rounds go into the rows."""
    import torch
    cold = {impl: [] for impl in ready}
    hot = {impl: [] for impl in ready}
    row_of = {row["impl"]: row for row in case_rows}
    order = list(ready)
    for r in range(CUDA_ROUNDS):
        k = r % len(order)
        for impl in order[k:] + order[:k]:
            row = row_of[impl]
            if "error" in row:
                continue
            fn = ready[impl]
            try:
                torch.cuda.synchronize()
                cold[impl].append(common.cuda_cold_us(fn))
            except Exception as e:
                traceback.print_exc()
                row["error"] = f"{type(e).__name__}: {e}"
                if impl == "tileops":
                    failures.append(f"{wl} {dt}: tileops raised {row['error']}")
                continue
            if "hot_error" in row:
                continue
            try:
                hot[impl].append(common.cuda_hot_us(fn))
            except Exception as e:  # not capturable: keep the cold numbers
                row["hot_error"] = f"{type(e).__name__}: {e}"
                print(f"[bench_norm] {wl} {dt} {impl}: CUDA-graph capture failed: "
                      f"{row['hot_error']}", file=sys.stderr)
    for impl, row in row_of.items():
        if impl not in ready or "error" in row:
            continue
        row["cold_us"] = statistics.median(cold[impl])
        row["cold_us_rounds"] = cold[impl]
        row["hot_us"] = statistics.median(hot[impl]) if hot[impl] and "hot_error" not in row else None
        row["hot_us_rounds"] = hot[impl]
        row["tbps"] = nbytes[impl] / row["cold_us"] / 1e6


def run(device, only=None, dtypes=None):
    """Time every impl on every workload/dtype.

    Returns
    -------
    (list of dict, list of str)
        The rows, and failure messages (tileops disagreeing with torch, or errors).
    """
    import torch
    cuda = device == "cuda"
    rows, failures = [], []
    for shape, dts in workloads(device, only, dtypes):
        wl = common.workload_name(shape)
        for dt in dts:
            t_case = time.perf_counter()
            case = make_case(shape, dt, device)
            err, scaled, ok, why = check_case(case, dt)
            if not ok:
                failures.append(f"{wl} {dt}: tileops check failed: {why}")
                print(f"[bench_norm] FAIL {failures[-1]}", file=sys.stderr)
            case_rows, ready = [], {}
            for impl in IMPLS:
                row = {"op": OP, "workload": wl, "dtype": dt, "impl": impl}
                case_rows.append(row)
                if impl == "tileops":
                    row.update(max_abs_err=err, scaled_err=scaled, correct=ok)
                    if not ok:
                        row["error"] = why
                        continue
                fn = case["fns"][impl]
                try:
                    fn()  # first call: compiles (NVRTC, inductor) outside the timers
                    if cuda:
                        torch.cuda.synchronize()
                    ready[impl] = fn
                except Exception as e:
                    traceback.print_exc()
                    row["error"] = f"{type(e).__name__}: {e}"
                    if impl == "tileops":
                        failures.append(f"{wl} {dt}: tileops raised {row['error']}")
            if ready and cuda:
                time_cuda_rounds(ready, case_rows, case["bytes"], wl, dt, failures)
            elif ready:  # CPU: all impls of the case in interleaved rounds
                times = common.loop_times_us(ready)
                for row in case_rows:
                    if row["impl"] in times:
                        row["us"] = times[row["impl"]]
                        row["gbps"] = case["bytes"][row["impl"]] / row["us"] / 1e3
            rows.extend(case_rows)
            print(f"[bench_norm] {wl} {dt}: {time.perf_counter() - t_case:.1f} s",
                  file=sys.stderr, flush=True)
            del case
            if cuda:
                torch.cuda.empty_cache()
    return rows, failures


def _pick(rows, wl, dt, impl, key):
    for r in rows:
        if (r["workload"], r["dtype"], r["impl"]) == (wl, dt, impl):
            return r.get(key)
    return None


def summary(rows, key):
    """Per workload/dtype: each impl's ``key`` and tileops' ratio to the others."""
    out = []
    for wl, dt in dict.fromkeys((r["workload"], r["dtype"]) for r in rows):
        s = {"workload": wl, "dtype": dt}
        for impl in IMPLS:
            s[impl] = _pick(rows, wl, dt, impl, key)
        for other in IMPLS[1:]:
            s["tileops/" + other] = common.ratio(s["tileops"], s[other])
        out.append(s)
    return out


def print_tables(rows, device):
    """Print the raw rows and the ratio tables (ratio < 1: tileops is faster)."""
    cols = [("workload", "workload", ""), ("dtype", "dtype", ""), ("impl", "impl", "")]
    if device == "cuda":
        cols += [("cold µs", "cold_us", ".2f"), ("hot µs", "hot_us", ".2f"),
                 ("TB/s(cold)", "tbps", ".3f")]
        keys = (("cold_us", "L2-cold µs"), ("hot_us", "L2-hot µs (CUDA graph)"))
    else:
        cols += [("µs", "us", ".2f"), ("GB/s", "gbps", ".1f")]
        keys = (("us", "µs per call"),)
    cols += [("max_abs_err", "max_abs_err", ".3g"),
             ("error", lambda r: common.clip(r.get("error") or r.get("hot_error")), "")]
    print(common.format_table(rows, cols, left=3))
    for key, label in keys:
        print(f"\n{label}: tileops vs the others (ratio < 1 = tileops faster)")
        scols = [("workload", "workload", ""), ("dtype", "dtype", "")]
        scols += [(impl, impl, ".2f") for impl in IMPLS]
        scols += [("tileops/" + o, "tileops/" + o, ".3f") for o in IMPLS[1:]]
        print(common.format_table(summary(rows, key), scols))


def main(argv=None):
    ap = common.bench_parser(__doc__.splitlines()[0], "norm.json")
    ap.add_argument("--workloads", help="comma-separated subset, e.g. 2048x4096,1x4096")
    ap.add_argument("--dtypes", help="comma-separated dtypes overriding the defaults")
    args = ap.parse_args(argv)
    if common.prepare_device(args.device, "bench_norm") is None:
        return 2
    only = set(args.workloads.split(",")) if args.workloads else None
    dtypes = args.dtypes.split(",") if args.dtypes else None

    t0 = time.perf_counter()
    extra = {"op": OP, "impls": list(IMPLS), "host_loadavg_1m_start": common.host_loadavg()}
    if args.device == "cuda":
        extra["stream"] = "side" if args.side_stream else "default"
        extra["cold_timer"] = common.cold_timer_name()
        extra["hot_timer"] = "cuda-graph replay, 50 calls/graph, median of 20 replays"
    else:
        extra["timer"] = ("perf_counter loop, impls interleaved, median of 7 rounds of "
                          "~0.1 s per impl")
    with common.stream_context(args.device, args.side_stream):
        extra["copy_tbps"] = common.copy_bandwidth_tbps(args.device)
        rows, failures = run(args.device, only, dtypes)
    extra["elapsed_s"] = round(time.perf_counter() - t0, 1)
    extra["status"] = "FAILED" if failures else "ok"
    extra["failures"] = failures
    meta = common.metadata(args.device, **extra)

    out = Path(args.out) if args.out else common.default_out(args.device, "norm.json")
    common.write_results(out, rows, meta)
    print(f"\n{OP} on {meta['device_name']} (torch {meta['torch_version']}, copy "
          f"{meta['copy_tbps']:.3f} TB/s)")
    print_tables(rows, args.device)
    return common.finish("bench_norm", out, meta, args, failures)


if __name__ == "__main__":
    sys.exit(main())
