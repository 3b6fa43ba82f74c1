"""Per-call host overhead of RMSNormFwdOp, eager and under torch.compile.

    python benchmarks/overhead.py --device cpu|cuda [--out PATH.json] [--plot PATH.png]
                                  [--no-plot] [--side-stream]

Shapes 1x4096 (host-bound: the time is almost all dispatch) and 2048x4096, float32 on CPU
and float16 on CUDA, normalised over the last dimension. Impls:
  tileops eager                    ``op(x, w)``
  F.rms_norm eager                 ``F.rms_norm(x, (n,), w, eps)``
  custom_op(F.rms_norm) eager      a bare ``torch.library.custom_op("bench::rms_norm_ref")``
                                   wrapping F.rms_norm (register_fake: ``torch.empty``): the
                                   cost of any opaque custom op, the floor for tileops' own
  ... compile                      each of the three in ``torch.compile(fullgraph=True)``
                                   (default mode), compiled fresh per shape (each shape's
                                   functions have code objects of their own), warmed up

Per-call time = wall time of a loop of n back-to-back calls / n, synchronising the device
only before and after the loop (on CUDA the 1x4096 loop is host-bound, so this is the host
cost per call; at 2048x4096 the GPU may be the bound). Every impl at every shape is built,
compiled and checked first; then all of them are timed together in 15 rounds of ~0.05 s
per impl, round-robin, the order rotated each round, and each reports its median round:
slow drift of the host (clock, load from elsewhere, a compile worker pool still starting)
hits every impl and both shapes alike. Everything runs on torch's current stream (the
legacy default stream unless ``--side-stream``). The table gives each impl's µs and its
ratio to "F.rms_norm eager" at the same shape.

tileops' results (eager and compiled) are checked against F.rms_norm first; beyond
tolerance the script exits 1 without timing tileops.

Default output: benchmarks/results/<cpu|h200|device name>/overhead.json (+ .png).
"""
from __future__ import annotations

import sys
import time
import traceback
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SHAPES = ((1, 4096), (2048, 4096))
BASE = "F.rms_norm eager"
ROUNDS, ROUND_S = 15, 0.05
IMPLS = ("tileops eager", "F.rms_norm eager", "custom_op(F.rms_norm) eager",
         "tileops compile", "F.rms_norm compile", "custom_op(F.rms_norm) compile")

_REF_OP = None


def ref_custom_op():
    """``bench::rms_norm_ref``: F.rms_norm behind a bare torch.library.custom_op."""
    global _REF_OP
    if _REF_OP is None:
        import torch
        import torch.nn.functional as F

        # schema given explicitly: `from __future__ import annotations` leaves the
        # annotations as strings that infer_schema cannot resolve in a local scope
        @torch.library.custom_op("bench::rms_norm_ref", mutates_args=(),
                                 schema="(Tensor x, Tensor w, float eps) -> Tensor")
        def rms_norm_ref(x, w, eps):
            return F.rms_norm(x, (x.shape[-1],), w, eps)

        @rms_norm_ref.register_fake
        def _(x, w, eps):
            return torch.empty(x.shape, dtype=x.dtype, device=x.device)

        _REF_OP = rms_norm_ref
    return _REF_OP


def own_code(fn, tag):
    """A copy of `fn` with a code object of its own, named after `tag`. Dynamo keeps
    compiled code per code object, and the sizes it has seen (for automatic dynamic
    shapes) per code name: each shape's copy compiles once, statically, beside the other
    shapes' copies, with no reset between them."""
    code = fn.__code__
    name = f"{code.co_name}_{tag}"
    code = code.replace(co_name=name, co_qualname=f"{code.co_qualname}_{tag}")
    return types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)


def make_impls(shape, dtype, device):
    """x, w and the six impls' zero-argument callables for one shape."""
    import torch
    import torch.nn.functional as F
    from tileops.norm import RMSNormFwdOp

    n = shape[-1]
    eps = torch.finfo(dtype).eps
    x, w = common.norm_inputs(shape, dtype, device)
    op = RMSNormFwdOp((n,), eps=eps)
    ref = ref_custom_op()

    def t_fn(a, b):
        return op(a, b)

    def f_fn(a, b):
        return F.rms_norm(a, (n,), b, eps)

    def c_fn(a, b):
        return ref(a, b, eps)

    tag = common.workload_name(shape)
    tc, fc, cc = (torch.compile(own_code(f, tag), fullgraph=True) for f in (t_fn, f_fn, c_fn))
    return x, w, {
        "tileops eager": lambda: t_fn(x, w),
        "F.rms_norm eager": lambda: f_fn(x, w),
        "custom_op(F.rms_norm) eager": lambda: c_fn(x, w),
        "tileops compile": lambda: tc(x, w),
        "F.rms_norm compile": lambda: fc(x, w),
        "custom_op(F.rms_norm) compile": lambda: cc(x, w),
    }, (lambda: f_fn(x, w))


def run(device):
    """Build, check and time every impl at every shape. Returns (rows, failures)."""
    import torch
    cuda = device == "cuda"
    dtype_name = "float16" if cuda else "float32"
    dtype = getattr(torch, dtype_name)
    sync = torch.cuda.synchronize if cuda else None
    rows, failures, ready = [], [], {}
    torch._dynamo.reset()
    for shape in SHAPES:
        t_case = time.perf_counter()
        wl = common.workload_name(shape)
        x, w, fns, ref_fn = make_impls(shape, dtype, device)
        ref = ref_fn()
        for impl in IMPLS:
            row = {"op": "RMSNormFwdOp", "workload": wl, "dtype": dtype_name, "impl": impl}
            rows.append(row)
            fn = fns[impl]
            try:
                out = fn()  # first call: builds / compiles outside the timer
                if impl.startswith("tileops"):
                    err, scaled, ok = common.check_close(out, ref, dtype_name)
                    row.update(max_abs_err=err, correct=ok)
                    if not ok:
                        row["error"] = f"scaled error {scaled:.3g} > tolerance"
                        failures.append(f"{wl} {impl}: {row['error']}")
                        continue
                ready[(wl, impl)] = fn
            except Exception as e:
                traceback.print_exc()
                row["error"] = f"{type(e).__name__}: {e}"
                if impl.startswith("tileops"):
                    failures.append(f"{wl} {impl}: raised {row['error']}")
        print(f"[overhead] {wl}: built and checked in {time.perf_counter() - t_case:.1f} s",
              file=sys.stderr, flush=True)
    t_time = time.perf_counter()
    times = common.loop_times_us(ready, sync=sync, rounds=ROUNDS, round_s=ROUND_S) if ready else {}
    print(f"[overhead] timed {len(ready)} impls in {time.perf_counter() - t_time:.1f} s",
          file=sys.stderr, flush=True)
    for row in rows:
        us = times.get((row["workload"], row["impl"]))
        if us is not None:
            row["us"] = us
    for shape in SHAPES:
        wl = common.workload_name(shape)
        base = next((r.get("us") for r in rows if r["workload"] == wl and r["impl"] == BASE), None)
        for r in rows:
            if r["workload"] == wl:
                r["ratio_vs_eager"] = common.ratio(r.get("us"), base)
    return rows, failures


def main(argv=None):
    args = common.bench_parser(__doc__.splitlines()[0], "overhead.json").parse_args(argv)
    if common.prepare_device(args.device, "overhead") is None:
        return 2

    t0 = time.perf_counter()
    load0 = common.host_loadavg()
    with common.stream_context(args.device, args.side_stream):
        rows, failures = run(args.device)
    if args.device == "cuda":
        extra = {"stream": "side" if args.side_stream else "default"}
    else:
        extra = {}
    meta = common.metadata(
        args.device, op="RMSNormFwdOp", impls=list(IMPLS), baseline=BASE,
        timer="wall time of a loop of n calls / n, device synced only around the loop; "
              f"every impl at every shape interleaved (order rotated each round), median "
              f"of {ROUNDS} rounds of ~{ROUND_S} s per impl",
        host_loadavg_1m_start=load0,
        elapsed_s=round(time.perf_counter() - t0, 1),
        status="FAILED" if failures else "ok", failures=failures, **extra)
    out = Path(args.out) if args.out else common.default_out(args.device, "overhead.json")
    common.write_results(out, rows, meta)

    print(f"\nPer-call time, RMSNormFwdOp on {meta['device_name']} (torch "
          f"{meta['torch_version']}); ratio = impl / {BASE}")
    print(common.format_table(rows, [
        ("workload", "workload", ""), ("dtype", "dtype", ""), ("impl", "impl", ""),
        ("µs", "us", ".2f"), ("ratio", "ratio_vs_eager", ".2f"),
        ("error", lambda r: common.clip(r.get("error")), "")], left=3))
    return common.finish("overhead", out, meta, args, failures)


if __name__ == "__main__":
    sys.exit(main())
