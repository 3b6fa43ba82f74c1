"""Shared helpers for the tileops benchmarks: timers, correctness check, results I/O.

What is measured, and how
-------------------------
* CPU (and any host-bound loop): :func:`loop_times_us` -- warm-up calls first, then
  ``rounds`` rounds of a ``time.perf_counter`` loop of ``n`` back-to-back calls (``n``
  calibrated so one loop lasts about ``round_s``); the result is the median over rounds of
  the per-call time, in microseconds. Several callables are timed in interleaved rounds,
  their order rotated each round, so that load from elsewhere on a shared host hits them
  alike. With ``sync`` (e.g. ``torch.cuda.synchronize``) the device is drained before
  each loop starts and once at its end, never between calls.
* GPU, L2-cold: :func:`cuda_cold_us` -- ``triton.testing.do_bench(fn, warmup=25, rep=100,
  return_mode="median")``, which writes a 256 MB buffer before every call so that the call
  starts with a cold L2. Without triton it falls back to the same recipe by hand: CUDA events
  around each call, a 256 MB ``zero_()`` between calls.
* GPU, L2-hot, no launch overhead: :func:`cuda_hot_us` -- warm-up on a side stream, then
  ``calls`` back-to-back calls captured into one ``torch.cuda.CUDAGraph``; the graph is
  replayed ``replays`` times, each replay timed with CUDA events; per-call time is the
  median replay time divided by ``calls``.
* Copy bandwidth: :func:`copy_bandwidth_tbps` -- a 1 GiB (CUDA) device-to-device
  ``dst.copy_(src)`` timed with events; bytes read plus bytes written, in TB/s (1e12 B/s).

Results are written as ``{"metadata": {...}, "rows": [...]}`` by :func:`write_results`.
"""
from __future__ import annotations

import datetime as _dt
import gc
import json
import hashlib
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

# Tolerances on max|tileops - torch| / max(1, max|torch|): a broken kernel must not
# produce a number.
TOLERANCE = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 2e-2}


def import_tileops():
    """Import tileops, adding ``<repo>/src`` to ``sys.path`` when it is not installed.

    Returns
    -------
    module
        The ``tileops`` package.
    """
    try:
        import tileops
    except ModuleNotFoundError as e:
        if e.name != "tileops":
            raise
        sys.path.insert(0, str(REPO_ROOT / "src"))
        import tileops
    return tileops


# ---------------------------------------------------------------------------------------
# timers
# ---------------------------------------------------------------------------------------
def _calibrate(fn, sync, round_s, max_calls):
    """Calls per round so that one round of ``fn`` lasts about ``round_s``."""
    n = 1
    while True:  # grow n until a loop takes at least a fifth of a round
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= round_s / 5 or n >= max_calls:
            break
        n *= 4
    return int(min(max_calls, max(1, math.ceil(n * round_s / max(dt, 1e-9)))))


def loop_times_us(fns, *, sync=None, warmup=3, rounds=7, round_s=0.1, max_calls=100_000):
    """Per-call wall time of several callables, timed in interleaved rounds, in µs.

    Each round runs every callable's loop once, one after the other, so that slow drift
    and bursts of load from elsewhere on the host hit all of them alike and their ratios
    stay fair. The order rotates by one place each round, so that every callable takes
    every place in a round equally often (none always runs first, say).

    Parameters
    ----------
    fns : dict of str -> callable
        Called with no arguments.
    sync : callable, optional
        Drains the device (``torch.cuda.synchronize``); called before each loop and once at
        its end -- never between calls -- so a loop measures host or device throughput,
        whichever is slower. None for CPU work.
    warmup : int
        Calls of each callable made (and synchronised) before calibration.
    rounds : int
        Number of timed rounds; the median round is reported.
    round_s : float
        Target duration of one loop in seconds; sets each callable's calls per loop.
    max_calls : int
        Upper bound on calls per loop.

    Returns
    -------
    dict of str -> float
        For each callable, the median over rounds of (loop wall time / calls), in µs.
    """
    sync = sync or (lambda: None)
    counts = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        sync()
        counts[name] = _calibrate(fn, sync, round_s, max_calls)
    samples = {name: [] for name in fns}
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        order = list(fns.items())
        for r in range(rounds):
            k = r % len(order)
            for name, fn in order[k:] + order[:k]:
                n = counts[name]
                sync()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                sync()
                samples[name].append((time.perf_counter() - t0) / n)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: statistics.median(v) * 1e6 for name, v in samples.items()}


_TRITON = None  # the triton.testing module, False when it cannot be imported


def _triton_testing():
    global _TRITON
    if _TRITON is None:
        try:
            import triton.testing as tt  # lazily: CPU runs never need triton
            _TRITON = tt
        except Exception as e:  # ImportError, or a triton that fails to initialise
            print(f"[bench] triton unavailable ({type(e).__name__}: {e}); cold timing falls "
                  "back to CUDA events with a 256 MB L2 flush between calls", file=sys.stderr)
            _TRITON = False
    return _TRITON or None


def cold_timer_name():
    """Which cold timer :func:`cuda_cold_us` uses on this machine (for the metadata)."""
    return "triton.testing.do_bench" if _triton_testing() else "cuda-events+256MB-flush"


def _cold_events_ms(fn, warmup_ms=25.0, rep_ms=100.0):
    """do_bench's recipe without triton: events around each call, L2 flushed in between."""
    import torch
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    # estimate one (flush + call) iteration
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5):
        flush.zero_()
        fn()
    e.record()
    torch.cuda.synchronize()
    est = max(s.elapsed_time(e) / 5, 1e-3)
    n_warm = max(1, int(warmup_ms / est))
    n_rep = max(1, int(rep_ms / est))
    for _ in range(n_warm):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for i in range(n_rep):
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(starts, ends))


def cuda_cold_us(fn, warmup=25, rep=100):
    """L2-cold device time of one call of ``fn``, in microseconds.

    Parameters
    ----------
    fn : callable
        Launches the work on the current CUDA stream.
    warmup, rep : int
        Warm-up and measurement budgets in milliseconds (do_bench's meaning).

    Returns
    -------
    float
        ``triton.testing.do_bench(fn, warmup, rep, return_mode="median")`` in µs; without
        triton, the median of event-timed calls each preceded by a 256 MB buffer write.
    """
    tt = _triton_testing()
    if tt is not None:
        ms = tt.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    else:
        ms = _cold_events_ms(fn, warmup, rep)
    return float(ms) * 1e3


def cuda_hot_us(fn, calls=50, replays=20, warmup=3):
    """L2-hot per-call device time of ``fn``, launch overhead removed by a CUDA graph.

    Parameters
    ----------
    fn : callable
        Launches the work on the current CUDA stream; must be capturable (no host syncs,
        its kernels already compiled -- the warm-up takes care of lazy compilation).
    calls : int
        Back-to-back calls captured into the one graph.
    replays : int
        Timed replays; the median is reported.
    warmup : int
        Eager calls on a side stream before capture.

    Returns
    -------
    float
        Median replay time / ``calls``, in µs.
    """
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        graph.replay()  # first replay uploads the graph
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        for i in range(replays):
            starts[i].record()
            graph.replay()
            ends[i].record()
        torch.cuda.synchronize()
        ms = statistics.median(a.elapsed_time(b) for a, b in zip(starts, ends))
    finally:
        del graph
        torch.cuda.synchronize()
    return float(ms) * 1e3 / calls


def copy_bandwidth_tbps(device="cuda", nbytes=None, reps=10):
    """Achieved ``dst.copy_(src)`` bandwidth, bytes read + bytes written, in TB/s.

    Parameters
    ----------
    device : str
        "cuda" (1 GiB buffers, timed with CUDA events) or "cpu" (256 MiB, perf_counter).
    nbytes : int, optional
        Buffer size; defaults as above.
    reps : int
        Timed copies; the median is used.

    Returns
    -------
    float
        ``2 * nbytes / median_seconds / 1e12``.
    """
    import torch
    cuda = str(device).startswith("cuda")
    nbytes = nbytes or ((1 << 30) if cuda else (256 << 20))
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src.fill_(1)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    if cuda:
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            starts[i].record()
            dst.copy_(src)
            ends[i].record()
        torch.cuda.synchronize()
        sec = statistics.median(a.elapsed_time(b) for a, b in zip(starts, ends)) / 1e3
    else:
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            dst.copy_(src)
            times.append(time.perf_counter() - t0)
        sec = statistics.median(times)
    del src, dst
    return 2 * nbytes / sec / 1e12


# ---------------------------------------------------------------------------------------
# inputs and correctness
# ---------------------------------------------------------------------------------------
def norm_launch(handle, threads, shared, grid, x, w, y, eps):
    """A closure that launches a norm.cu build (``runtime.build`` handle) directly, on
    torch's current stream: x (rows, n) and w (n,) into y, contiguous rows, one block of
    ``threads`` per grid entry. For sweeps and probes that time builds the op would not
    pick."""
    from tileops import _C, runtime
    rows, n = x.shape
    dev = x.device.index or 0

    def launch():
        _C.cuda_launch(handle, grid, 1, 1, threads, 1, 1, shared, runtime.current_stream(dev),
                       x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, eps)
    return launch


def workload_name(shape):
    """``(2048, 4096)`` -> ``"2048x4096"``."""
    return "x".join(str(int(d)) for d in shape)


def norm_inputs(shape, dtype, device):
    """x and the weight of a row norm over the last dimension of ``shape``.

    x is standard normal and the weight 1 + 0.1 * standard normal, drawn on the CPU from a
    generator seeded 0 (the same numbers in every script and run), then moved to
    ``device`` in ``dtype`` (a torch dtype).
    """
    import torch
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    w = (1.0 + 0.1 * torch.randn(shape[-1], generator=gen)).to(device=device, dtype=dtype)
    return x, w


def check_close(actual, expected, dtype_name):
    """Compare a result with its reference, scaled by the reference's magnitude.

    Parameters
    ----------
    actual, expected : torch.Tensor
        Same shape; compared in float32.
    dtype_name : str
        "float32", "float16" or "bfloat16"; picks the tolerance from :data:`TOLERANCE`.

    Returns
    -------
    (float, float, bool)
        max_abs_err, scaled error (max_abs_err / max(1, max|expected|)), and whether the
        scaled error is within tolerance (False too for NaN/inf or a shape mismatch).
    """
    a, e = actual.float(), expected.float()
    if a.shape != e.shape:
        return float("inf"), float("inf"), False
    err = (a - e).abs().max().item() if a.numel() else 0.0
    scale = max(1.0, e.abs().max().item() if e.numel() else 1.0)
    scaled = err / scale
    ok = math.isfinite(err) and scaled <= TOLERANCE.get(dtype_name, 2e-2)
    return err, scaled, ok


# ---------------------------------------------------------------------------------------
# metadata, paths, output
# ---------------------------------------------------------------------------------------
def sanitize(name):
    """Lower-case ``name`` with every run of non-alphanumerics turned into one '_'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "unknown"


def device_name(device):
    """Human-readable name of the GPU (``torch.cuda.get_device_name``) or the CPU model."""
    if str(device).startswith("cuda"):
        import torch
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def results_subdir(device):
    """``cpu`` on CPU; ``h200`` when the GPU name contains H200; else the sanitised name."""
    if not str(device).startswith("cuda"):
        return "cpu"
    name = device_name(device)
    return "h200" if "H200" in name.upper() else sanitize(name)


def default_out(device, filename):
    """``benchmarks/results/<results_subdir(device)>/<filename>``."""
    return RESULTS_DIR / results_subdir(device) / filename


def _git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        return out.stdout.strip() or None
    except Exception:
        return None


SOURCE_DIRS = ("csrc", "src/tileops")
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".py", ".yaml")


def source_digest():
    """sha256 (first 12 hex digits) of the library's sources: every file under csrc/ and
    src/tileops/ ending in .c .h .cu .py .yaml, by relative path and content, sorted. It
    names the code a result came from where ``git rev-parse`` cannot (the GPU machine's
    copy of the tree carries a stale .git); ``python benchmarks/common.py digest`` prints it
    for a checkout."""
    h = hashlib.sha256()
    for d in SOURCE_DIRS:
        base = REPO_ROOT / d
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def host_loadavg():
    """The host's 1-minute load average (None where unavailable)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def metadata(device, **extra):
    """Run metadata: device, library versions, date, command line, plus ``extra``.

    Parameters
    ----------
    device : str
        "cpu" or "cuda".
    **extra
        Added as is (e.g. ``copy_tbps``, ``cold_timer``).

    Returns
    -------
    dict
    """
    import torch
    tileops = import_tileops()
    meta = {
        "device": str(device),
        "device_name": device_name(device),
        "torch_version": torch.__version__,
        "tileops_version": getattr(tileops, "__version__", None),
        "git_commit": _git_commit(),
        "source_digest": source_digest(),
        "python_version": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [os.path.basename(sys.executable)] + sys.argv),
        "host_cpus": os.cpu_count(),
        "host_loadavg_1m_end": host_loadavg(),
    }
    if str(device).startswith("cuda"):
        meta["cuda_version"] = torch.version.cuda
        try:
            import triton
            meta["triton_version"] = triton.__version__
        except Exception:
            meta["triton_version"] = None
    else:
        meta["torch_threads"] = torch.get_num_threads()
    meta.update(extra)
    return meta


def write_results(path, rows, meta):
    """Write ``{"metadata": meta, "rows": rows}`` as JSON, creating parent folders.

    Parameters
    ----------
    path : str or Path
    rows : list of dict
    meta : dict

    Returns
    -------
    Path
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump({"metadata": meta, "rows": rows}, f, indent=1, default=str)
        f.write("\n")
    return path


def _fmt(v, spec):
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    try:
        return format(v, spec) if spec else str(v)
    except (TypeError, ValueError):
        return str(v)


def format_table(rows, columns, left=2):
    """Render rows as a fixed-width text table.

    Parameters
    ----------
    rows : list of dict
    columns : list of (header, key, format_spec)
        ``key`` is a dict key or a callable(row) -> value; ``format_spec`` as for
        ``format`` ("" for str). Missing values print as "-".

    Returns
    -------
    str
    """
    cells = [[h for h, _, _ in columns]]
    for r in rows:
        cells.append([_fmt(k(r) if callable(k) else r.get(k), s) for _, k, s in columns])
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = []
    for j, c in enumerate(cells):
        lines.append("  ".join(x.ljust(w) if i < left else x.rjust(w)
                               for i, (x, w) in enumerate(zip(c, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def clip(text, width=60):
    """``text`` cut to ``width`` characters (with an ellipsis), None kept as None."""
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def stream_context(device, side_stream):
    """A context that makes a fresh non-default CUDA stream current, or does nothing.

    Parameters
    ----------
    device : str
    side_stream : bool
        True on CUDA: everything inside runs on one ``torch.cuda.Stream()`` instead of the
        legacy default stream.
    """
    import contextlib
    if side_stream and str(device).startswith("cuda"):
        import torch
        return torch.cuda.stream(torch.cuda.Stream())
    return contextlib.nullcontext()


def ratio(a, b):
    """``a / b``, or None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def finish(tag, out, meta, args, failures):
    """The end of a run of a script built on :func:`bench_parser`: says where the results
    went, draws the PNG unless --no-plot, reports the failures. Returns the exit status."""
    print(f"\n[{tag}] wrote {out} ({meta['elapsed_s']} s)")
    if not args.no_plot:
        import plot
        plot.plot_file(out, Path(args.plot) if args.plot else out.with_suffix(".png"))
    if failures:
        print(f"\n[{tag}] FAILED: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


def bench_parser(description, results_name):
    """The arguments every benchmark takes: --device, --out, --plot, --no-plot,
    --side-stream. Scripts add their own to the parser returned."""
    import argparse
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--device", choices=("cuda", "cpu"), required=True)
    ap.add_argument("--out", help=f"results JSON (default benchmarks/results/<device>/{results_name})")
    ap.add_argument("--plot", help="PNG to draw (default: the JSON's path with .png)")
    ap.add_argument("--no-plot", action="store_true", help="write no PNG")
    ap.add_argument("--side-stream", action="store_true",
                    help="cuda: run everything on a fresh non-default stream instead of the "
                         "legacy default stream (recorded in the metadata)")
    return ap


def prepare_device(device, tag):
    """Imports tileops and torch for a run on `device`; returns torch, or None (with a
    message) when --device cuda finds no GPU."""
    if device == "cpu":
        # no inductor compile-worker pool spinning beside the timed loops on a small host
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import_tileops()
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        print(f"[{tag}] --device cuda: no CUDA device visible to torch", file=sys.stderr)
        return None
    return torch


if __name__ == "__main__":
    if sys.argv[1:] == ["digest"]:
        print(source_digest())
    else:
        sys.exit("usage: python benchmarks/common.py digest")
