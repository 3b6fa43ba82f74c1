"""python -m tileops [--version] demo [--device cpu|cuda] | ops [--json] | info [--json] |
cache {info,clear} | boundary OP | bench [...]

demo: the seed's example. Constructs RMSNormFwdOp once, compiles a function calling it with
fullgraph=True, prints the captured graph (one node: tileops::norm_rms_norm_fwd), checks
the result against torch, and prints per-call times of the op eager and compiled next to
F.rms_norm and torch.compile(F.rms_norm), measured in the same run.

bench: every op's manifest workloads timed against torch, torch.compile, peers and the copy
floor (tileops/bench.py; `python -m tileops bench --help`)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

DISTRIBUTION = "tileops-c"   # the name on PyPI; the import package is tileops (README, "Install")
ENV_VARS = ("TILEOPS_CACHE_DIR", "TILEOPS_NVRTC", "TILEOPS_NUM_THREADS", "TILEOPS_CPU_SIMD", "TILEOPS_CPU_HUGEPAGES",
            "TILEOPS_LOG_LEVEL", "TILEOPS_PDL", "XDG_CACHE_HOME")


def _fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _compare(name: str, t: float, base_name: str, base: float) -> str:
    """'tileops 4.4 ms, F.rms_norm 26 ms: 6.0x faster' (or slower): read one way only."""
    ratio = base / t if t <= base else t / base
    return (f"{name} {_fmt_time(t)}, {base_name} {_fmt_time(base)}: "
            f"{ratio:.1f}x {'faster' if t <= base else 'slower'}")


def _time_per_call(fn, *args, sync=None, budget=0.6, rounds=5):
    """Seconds per call: the median of `rounds` rounds, each of as many calls as fit in
    budget / rounds seconds (at least one), after two warm-up calls."""
    for _ in range(2):
        fn(*args)
    if sync:
        sync()
    t0 = time.perf_counter()
    fn(*args)
    if sync:
        sync()
    one = max(time.perf_counter() - t0, 1e-7)
    iters = max(1, int(budget / rounds / one))
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        if sync:
            sync()
        per.append((time.perf_counter() - t0) / iters)
    return statistics.median(per)


def _step(msg: str):
    print(msg, flush=True)


def demo(device: str, rows: int, n: int, dtype_name: str) -> int:
    t_start = time.perf_counter()
    _step("tileops demo: importing torch and tileops ...")
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
    _step(f"[1/4] {op!r}\n      compiling block(x, w) = op(x, w) with torch.compile(fullgraph=True), "
          f"x {tuple(x.shape)} {dtype_name} on {device} ...")
    t0 = time.perf_counter()
    y = block(x, w)
    _step(f"      compiled and ran in {time.perf_counter() - t0:.1f} s")
    print(f"compile_op_names: {RMSNormFwdOp.compile_op_names}")
    print("captured graph:")
    print(graphs[0].code.strip())
    targets = [str(nd.target) for g in graphs for nd in g.graph.nodes if nd.op == "call_function"]
    print(f"call nodes: {targets}")

    _step("[2/4] checking against F.rms_norm in float64 ...")
    ref = F.rms_norm(x.double(), (n,), w.double(), eps=torch.finfo(torch.float32).eps).to(dtype)
    y_eager = op(x, w)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    err_c = (y.double() - ref.double()).abs().max().item()
    err_e = (y_eager.double() - ref.double()).abs().max().item()
    ok = err_c <= tol and err_e <= tol and targets == ["tileops.norm_rms_norm_fwd.default"]
    print(f"      max |compiled - reference| = {err_c:.3g}, max |eager - reference| = {err_e:.3g} "
          f"(tolerance {tol}): {'✓' if ok else '✗'}")

    sync = torch.cuda.synchronize if device == "cuda" else None
    f_ref = lambda a, b: F.rms_norm(a, (n,), b)  # noqa: E731
    f_ref_c = torch.compile(f_ref, fullgraph=True)
    _step("[3/4] compiling torch.compile(F.rms_norm) for comparison ...")
    t0 = time.perf_counter()
    f_ref_c(x, w)
    _step(f"      compiled in {time.perf_counter() - t0:.1f} s")
    _step(f"[4/4] timing, {rows}x{n} {dtype_name} on {device} (median of 5 rounds, ~0.6 s each impl):")
    times = {}
    for name, fn in (("tileops eager", op), ("F.rms_norm", f_ref), ("tileops compiled", block),
                     ("torch.compile(F.rms_norm)", f_ref_c)):
        times[name] = _time_per_call(fn, x, w, sync=sync)
        _step(f"      {name:27s} {_fmt_time(times[name]):>10s} per call")
    print()
    print(_compare("tileops", times["tileops eager"], "F.rms_norm", times["F.rms_norm"]) + "  (eager)")
    print(_compare("tileops", times["tileops compiled"], "torch.compile(F.rms_norm)",
                   times["torch.compile(F.rms_norm)"]) + "  (compiled)")
    print(f"demo finished in {time.perf_counter() - t_start:.0f} s")
    return 0 if ok else 1


def ops(as_json: bool) -> int:
    import tileops
    from tileops import targets
    from tileops.manifest import package_entries
    from tileops.manifest.workloads import accepted_dtypes

    classes = tileops.all_op_classes()
    rows = []
    for name, entry in package_entries().items():
        cls = classes.get(name)
        # the data input's dtypes (an embedding's table, not its ids; bench --dtypes reads the
        # same); an op without inputs: its first output's
        dtypes = [str(d).replace("torch.", "") for d in accepted_dtypes(entry)]
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
        w = max(18, *(len(r["op"]) for r in rows))   # the longest name: the columns line up
        print(f"{'op':{w}s} {'family':10s} {'status':12s} {'compile_op_names':32s} {'dtypes':28s} {'devices':10s} targets")
        for r in rows:
            print(f"{r['op']:{w}s} {r['family']:10s} {r['status']:12s} {','.join(r['compile_op_names']) or '()':32s} "
                  f"{','.join(r['dtypes']) or '-':28s} {','.join(r['devices']) or '-':10s} {','.join(r['targets']) or '-'}")
        fails = targets.load_failures()
        for name, why in fails:
            print(f"plugin {name} failed to load: {why}")
    return 0


def info_dict() -> dict:
    """What this process would run on: versions, CPU SIMD path and threads, CUDA driver,
    NVRTC and devices (or why not), the disk cache folder (and why it is off), the
    targets, the settings read from the environment."""
    import platform

    import torch
    import tileops
    from tileops import _C, _settings, cache, runtime, targets
    d = {"tileops": tileops.__version__, "distribution": DISTRIBUTION, "torch": torch.__version__,
         "python": platform.python_version(), "platform": platform.platform(),
         "cpu": {"simd": _C.cpu_simd_level(), "threads": _C.cpu_num_threads(),
                 "threads_from": _settings.thread_source(), "torch_threads": torch.get_num_threads()}}
    cuda = {"available": False, "reason": None, "nvrtc": None, "devices": [], "pdl": runtime.pdl_enabled()}
    try:
        runtime.ensure_loaded()
        nv = _C.nvrtc_version()
        cuda.update(available=True, nvrtc=f"{nv[0]}.{nv[1]}")
        for i in range(_C.cuda_device_count()):
            a = runtime.device_attributes(i)
            cuda["devices"].append({"index": i, "arch": f"sm_{a['arch'][0]}{a['arch'][1]}",
                                    "sm_count": a["sm_count"],
                                    "max_shared_per_block": a["max_shared_per_block"]})
    except tileops.TileOpsError as e:
        cuda["reason"] = str(e)
    d["cuda"] = cuda
    on, folder, reason = cache.state()
    d["kernel_cache"] = {"folder": folder, "on": on, "reason": reason}
    d["targets"] = {"names": targets.names(), "default": targets.default_target(),
                    "plugin_failures": [{"name": n, "error": why} for n, why in targets.load_failures()]}
    d["environment"] = {k: os.environ.get(k) for k in ENV_VARS}
    return d


def info(as_json: bool) -> int:
    d = info_dict()
    if as_json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"tileops {d['tileops']} (distribution {d['distribution']}), torch {d['torch']}, Python {d['python']}")
    c = d["cpu"]
    print(f"CPU kernels: SIMD {c['simd']}, {c['threads']} threads (from {c['threads_from']})")
    cu = d["cuda"]
    if cu["available"]:
        print(f"CUDA: driver loaded, NVRTC {cu['nvrtc']}, {len(cu['devices'])} device(s); programmatic dependent "
              f"launch {'on (sm_90+)' if cu['pdl'] else 'off'}")
        for dev in cu["devices"]:
            print(f"  cuda:{dev['index']} {dev['arch']}, {dev['sm_count']} SMs, "
                  f"{dev['max_shared_per_block'] // 1024} KiB shared/block")
    else:
        print(f"CUDA: not available ({cu['reason']})")
    k = d["kernel_cache"]
    print(f"kernel cache: {k['folder'] or '(none)'}" + ("" if k["on"] else f" -- OFF: {k['reason']}"))
    t = d["targets"]
    print(f"targets: {', '.join(t['names'])}; default: {t['default'] or 'detect'}")
    for f in t["plugin_failures"]:
        print(f"  plugin {f['name']} failed to load: {f['error']}")
    set_vars = {k: v for k, v in d["environment"].items() if v is not None}
    print("environment: " + (", ".join(f"{k}={v}" for k, v in set_vars.items()) or "no TILEOPS_* setting"))
    return 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def cache_cmd(action: str, as_json: bool, all_versions: bool) -> int:
    from tileops import TileOpsError, cache
    if action == "info":
        ci = cache.info()
        if as_json:
            print(json.dumps(ci.as_dict(), indent=2))
            return 0
        if not ci.on:
            print(f"kernel cache: {ci.folder or '(none)'} -- OFF: {ci.reason}")
            return 0
        print(f"kernel cache: {ci.folder}")
        print(f"  {ci.entries} entries, {_size(ci.bytes)}")
        for arch, a in sorted(ci.by_arch.items()):
            print(f"  {arch}: {a['entries']} entries, {_size(a['bytes'])}")
        for v, b in sorted(ci.other_versions.items()):
            print(f"  other version {v}: {_size(b)} (cache clear --all-versions removes it)")
        return 0
    try:
        n, nbytes, folders = cache.clear(all_versions)
    except TileOpsError as e:
        print(f"cache clear: {e}", file=sys.stderr)
        return 1
    print(f"removed {n} entries ({_size(nbytes)}) from {', '.join(folders)}")
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


def _version_text() -> str:
    import platform

    import torch
    import tileops
    return (f"tileops {tileops.__version__} (distribution {DISTRIBUTION}), torch {torch.__version__}, "
            f"Python {platform.python_version()}")


def _count(text: str) -> int:
    """An argparse type: an int >= 1."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return v


class _Version(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version_text())
        parser.exit()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tileops")
    p.add_argument("--version", action=_Version, help="print the versions of tileops, torch and Python")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="the seed's example: one node under torch.compile, checked and timed")
    d.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    d.add_argument("--rows", type=_count, default=2048, help="rows of x (default 2048)")
    d.add_argument("--n", type=_count, default=4096, help="the normalized size, x's last dim (default 4096)")
    d.add_argument("--dtype", default=None, choices=["float32", "float16", "bfloat16"],
                   help="default: float32 on cpu, float16 on cuda")
    o = sub.add_parser("ops", help="list every op")
    o.add_argument("--json", action="store_true")
    i = sub.add_parser("info", help="versions, CPU SIMD path, CUDA driver/NVRTC/devices, cache, targets")
    i.add_argument("--json", action="store_true")
    c = sub.add_parser("cache", help="the compiled-kernel disk cache: info, or clear its entries")
    c.add_argument("action", choices=["info", "clear"])
    c.add_argument("--json", action="store_true", help="info as JSON")
    c.add_argument("--all-versions", action="store_true",
                   help="clear: every tileops version's folder beside this one's (default folder only)")
    b = sub.add_parser("boundary", help="print the Python source generated for an op from its manifest entry")
    b.add_argument("op")
    from . import warmup
    warmup.add_arguments(sub.add_parser("warmup", help="compile every CUDA kernel a model patched by tileops.patch "
                                                       "needs into the disk cache (a Hugging Face config.json)"))
    from . import bench
    bench.add_arguments(sub.add_parser("bench", help="time every op's manifest workloads against torch, "
                                                     "torch.compile, peers and the copy floor"))
    a = p.parse_args(argv)
    try:
        code = _dispatch(a, bench, warmup)
        sys.stdout.flush()   # here, not at exit: a reader gone away is caught below
        return code
    except BrokenPipeError:
        # stdout's reader went away (`| head`): Python's documented idiom (the signal module's
        # "Note on SIGPIPE"): stdout pointed at devnull so that the flush at exit cannot raise
        # again, and status 1, as Python itself exits on EPIPE; no traceback
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):   # a stdout without a descriptor (captured in-process)
            pass
        return 1


def _dispatch(a, bench, warmup) -> int:
    if a.cmd == "bench":
        return bench.run(a)
    if a.cmd == "warmup":
        return warmup.warmup(a.config, a.dtype, a.max_batch, a.device)
    if a.cmd == "info":
        return info(a.json)
    if a.cmd == "cache":
        return cache_cmd(a.action, a.json, a.all_versions)
    if a.cmd == "boundary":
        return boundary(a.op)
    if a.cmd == "demo":
        return demo(a.device, a.rows, a.n, a.dtype or ("float32" if a.device == "cpu" else "float16"))
    return ops(a.json)


if __name__ == "__main__":
    sys.exit(main())
