"""python -m tileops demo [--device cpu|cuda] | ops [--json] | info | bench [...]

demo: the seed's example. Constructs RMSNormFwdOp once, compiles a function calling it with
fullgraph=True, prints the captured graph (one node: tileops::norm_rms_norm_fwd), checks
the result against torch, and prints per-call times of the op eager and compiled next to
F.rms_norm and torch.compile(F.rms_norm), measured in the same run.

bench: every op's manifest workloads timed against torch, torch.compile, peers and the copy
floor (tileops/bench.py; `python -m tileops bench --help`)."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def _time_per_call(fn, *args, sync=None, iters=200, rounds=7):
    for _ in range(10):
        fn(*args)
    if sync:
        sync()
    best = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        if sync:
            sync()
        best.append((time.perf_counter() - t0) / iters)
    return statistics.median(best) * 1e6


def demo(device: str, rows: int, n: int, dtype_name: str) -> int:
    import torch
    import torch.nn.functional as F
    from tileops.norm import RMSNormFwdOp

    if device == "cuda" and not torch.cuda.is_available():
        print("demo: --device cuda asked for, but torch sees no CUDA device", file=sys.stderr)
        return 2
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    op = RMSNormFwdOp(normalized_shape=(n,))          # construct once, reuse
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs)

    @torch.compile(fullgraph=True, backend=backend)
    def block(x, weight):
        return op(x, weight)

    x = torch.randn(rows, n, device=device, dtype=dtype)
    w = torch.randn(n, device=device, dtype=dtype)
    y = block(x, w)
    print(f"tileops demo: RMSNormFwdOp(normalized_shape=({n},)) on {device}, x {tuple(x.shape)} {dtype_name}")
    print(f"compile_op_names: {RMSNormFwdOp.compile_op_names}")
    print("captured graph:")
    print(graphs[0].code.strip())
    targets = [str(nd.target) for g in graphs for nd in g.graph.nodes if nd.op == "call_function"]
    print(f"call nodes: {targets}")
    ref = F.rms_norm(x.double(), (n,), w.double(), eps=torch.finfo(dtype).eps).to(dtype)
    y_eager = op(x, w)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    err_c = (y.double() - ref.double()).abs().max().item()
    err_e = (y_eager.double() - ref.double()).abs().max().item()
    ok = err_c <= tol and err_e <= tol and targets == ["tileops.norm_rms_norm_fwd.default"]
    print(f"max |compiled - torch| = {err_c:.3g}, max |eager - torch| = {err_e:.3g} (tolerance {tol}): "
          f"{'✓' if ok else '✗'}")

    sync = torch.cuda.synchronize if device == "cuda" else None
    f_ref = lambda a, b: F.rms_norm(a, (n,), b)  # noqa: E731
    f_ref_c = torch.compile(f_ref, fullgraph=True)
    rows_out = [
        ("tileops eager", _time_per_call(op, x, w, sync=sync)),
        ("tileops compiled", _time_per_call(block, x, w, sync=sync)),
        ("F.rms_norm eager", _time_per_call(f_ref, x, w, sync=sync)),
        ("torch.compile(F.rms_norm)", _time_per_call(f_ref_c, x, w, sync=sync)),
    ]
    base = rows_out[2][1]
    print(f"\nper call, {rows}x{n} {dtype_name} on {device} (median of 7 rounds):")
    for name, us in rows_out:
        print(f"  {name:28s} {us:9.2f} µs   {us / base:5.2f}x F.rms_norm")
    return 0 if ok else 1


def ops(as_json: bool) -> int:
    import tileops
    from tileops import targets
    from tileops.manifest import package_entries

    classes = tileops.all_op_classes()
    rows = []
    for name, entry in package_entries().items():
        cls = classes.get(name)
        x = entry.inputs[0] if entry.inputs else None
        dtypes = [] if x is None or x.dtype.same_as else [str(d).replace("torch.", "") for d in x.dtype.allowed]
        serving = [t.name for t in targets.all_targets() if cls is not None and t.serves(cls)]
        devices = []
        if cls is not None and cls.kernel_types:
            devices = sorted({d for k in cls.kernel_types.values() for d in k.devices})
        rows.append({"op": name, "family": entry.family, "status": entry.status,
                     "compile_op_names": list(cls.compile_op_names) if cls else [],
                     "dtypes": dtypes, "devices": devices, "targets": serving})
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'op':18s} {'family':10s} {'status':12s} {'compile_op_names':32s} {'dtypes':28s} {'devices':10s} targets")
        for r in rows:
            print(f"{r['op']:18s} {r['family']:10s} {r['status']:12s} {','.join(r['compile_op_names']) or '()':32s} "
                  f"{','.join(r['dtypes']) or '-':28s} {','.join(r['devices']) or '-':10s} {','.join(r['targets']) or '-'}")
        fails = targets.load_failures()
        for name, why in fails:
            print(f"plugin {name} failed to load: {why}")
    return 0


def info() -> int:
    """What this process would run on: versions, CPU SIMD path and threads, CUDA driver,
    NVRTC and devices (or why not), the disk cache folder (and why it is off), the targets."""
    import torch
    import tileops
    from tileops import _C, runtime, targets
    print(f"tileops {tileops.__version__}, torch {torch.__version__}")
    print(f"CPU kernels: SIMD {_C.cpu_simd_level()}, {_C.cpu_num_threads()} threads (TILEOPS_NUM_THREADS)")
    try:
        runtime.ensure_loaded()
        n = _C.cuda_device_count()
        nv = _C.nvrtc_version()
        print(f"CUDA: driver loaded, NVRTC {nv[0]}.{nv[1]}, {n} device(s)")
        for i in range(n):
            a = runtime.device_attributes(i)
            print(f"  cuda:{i} sm_{a['arch'][0]}{a['arch'][1]}, {a['sm_count']} SMs, "
                  f"{a['max_shared_per_block'] // 1024} KiB shared/block")
    except tileops.TileOpsError as e:
        print(f"CUDA: not available ({e})")
    _C.cuda_set_version(tileops.__version__)  # the default folder is named by it
    on, folder, reason = _C.cuda_cache_state()
    _C.take_notes()  # a refused folder's note: the line below says it
    print(f"kernel cache: {folder or '(none)'}" + ("" if on else f" -- OFF: {reason}"))
    print(f"targets: {', '.join(targets.names())}; default: {targets.default_target() or 'detect'}")
    for name, why in targets.load_failures():
        print(f"  plugin {name} failed to load: {why}")
    return 0


def boundary(name: str) -> int:
    """Prints the source generated for op class `name` (its boundary and its kit)."""
    import tileops
    classes = tileops.all_op_classes()
    if name not in classes:
        print(f"no implemented op named {name!r}; ops: {', '.join(classes)}", file=sys.stderr)
        return 2
    print(classes[name].generated_source(), end="")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tileops")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="the seed's example: one node under torch.compile, checked and timed")
    d.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    d.add_argument("--rows", type=int, default=2048)
    d.add_argument("--n", type=int, default=4096)
    d.add_argument("--dtype", default=None, help="float32 | float16 | bfloat16 (default: float32 on cpu, float16 on cuda)")
    o = sub.add_parser("ops", help="list every op")
    o.add_argument("--json", action="store_true")
    sub.add_parser("info", help="versions, CPU SIMD path, CUDA driver/NVRTC/devices, cache, targets")
    b = sub.add_parser("boundary", help="print the Python source generated for an op from its manifest entry")
    b.add_argument("op")
    from . import warmup
    warmup.add_arguments(sub.add_parser("warmup", help="compile every CUDA kernel a model patched by tileops.patch "
                                                       "needs into the disk cache (a Hugging Face config.json)"))
    from . import bench
    bench.add_arguments(sub.add_parser("bench", help="time every op's manifest workloads against torch, "
                                                     "torch.compile, peers and the copy floor"))
    a = p.parse_args(argv)
    if a.cmd == "bench":
        return bench.run(a)
    if a.cmd == "warmup":
        return warmup.warmup(a.config, a.dtype, a.max_batch, a.device)
    if a.cmd == "info":
        return info()
    if a.cmd == "boundary":
        return boundary(a.op)
    if a.cmd == "demo":
        return demo(a.device, a.rows, a.n, a.dtype or ("float32" if a.device == "cpu" else "float16"))
    return ops(a.json)


if __name__ == "__main__":
    sys.exit(main())
