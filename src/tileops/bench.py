"""One benchmark for every op, driven by the manifest: ``python -m tileops bench``.

    python -m tileops bench [--op NAME[,NAME...]] [--device cpu|cuda] [--out PATH] [--plot PATH]
                            [--no-plot] [--workloads FILTER] [--dtypes ...] [--impls ...]
                            [--max-input-mib N] [--quick] [--fast] [--compile static|dynamic]
                            [--budget-s S]

For every implemented op (``tileops.all_op_classes()``, or ``--op``) and every case of its
manifest workloads (``tileops.manifest.workloads.cases``), the impls of the case are timed
in interleaved rounds (the order rotated each round, the median round kept):

  tileops        ``op = cls(**case.params)``; ``op(*inputs)`` (inputs in the manifest's order,
                 an optional input present when the case gives its shape)
  torch          the entry's ``ref_api`` (tileops.reference) with ``op.resolved_params()``
  torch.compile  the same, ``torch.compile(fullgraph=True, dynamic=False)``, compiled per case
  <peer>         a peer library's kernel the entry names under ``peers`` (e.g.
                 ``liger``), when it imports; how to call it is data in the manifest (see
                 :func:`peer_callable`)
  copy           the memory floor: a device copy of half the bytes the entry's ``roofline``
                 says one call moves (read + write = the same bytes)

Nothing here knows an op: inputs are seeded standard normals of the case's shapes and
dtype, drawn directly on the device the run is for (index inputs and inputs with
`values` as the manifest's rules and the workloads' `draws` say); outputs are named by
the manifest; bytes come from the roofline rule. A baseline that raises is recorded
with its error and the run goes on.

Timing. CPU: wall time of a ``perf_counter`` loop (:func:`loop_times_us`). CUDA: L2-cold
(:func:`cuda_cold_us`: CUDA events around each call, a 256 MB buffer written between
calls and L2's persisting lines demoted, since session 39) and L2-hot (:func:`cuda_hot_us`:
back-to-back calls captured in a CUDA graph, replayed; a hot time above the impl's own
L2-cold time is flagged, :func:`flag_suspect_hot`). Before timing, every impl's output is
compared with the reference's (scaled max abs error within :data:`TOLERANCE`, indices exactly); one that differs is compared again
with the reference computed on the inputs upcast to float64 and accepted when it agrees
with that (the row's ``check``: ``float64``); a tileops mismatch is flagged in the JSON and
tileops is not timed on that case (a broken kernel cannot produce a number), the run exits 1.

Output: ``{"metadata": {...}, "rows": [...]}`` JSON, one row per case (see
benchmarks/README.md for the fields), a PNG of each impl's time over the copy floor, and
a printed table.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import hashlib
import importlib
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

PKG_DIR = Path(__file__).resolve().parent
REPO_ROOT = PKG_DIR.parents[1]          # the checkout, when tileops runs from src/
RESULTS_DIR = (REPO_ROOT if (REPO_ROOT / "benchmarks").is_dir() else Path.cwd()) / "benchmarks" / "results"

# Tolerances on max|impl - reference| / max(1, max|reference|), per dtype.
TOLERANCE = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 2e-2, "float64": 1e-8}
REFERENCE = "torch"
COPY = "copy"
BASE_IMPLS = ("tileops", "torch", "torch.compile")
# tileops with programmatic dependent launch off (runtime.pdl(False) around each call, so a
# graph captured from it holds plain launches): on CUDA, only when --impls names it, for an
# A/B of PDL in one interleaved run
PLAIN = "tileops.plain"
CPU_MAX_INPUT_MIB = 64

# Timing budgets per level: "full" (the default), "fast" (--fast: one round of short
# timers, for a run of many cases on a short device budget), "quick" (--quick, the smoke
# test). The hot timer's calls and replays shrink for slow calls (budget_ms of replays).
CPU_LOOP = {"full": {"rounds": 7, "round_s": 0.1, "warmup": 3},
            "fast": {"rounds": 3, "round_s": 0.03, "warmup": 1},
            "quick": {"rounds": 3, "round_s": 0.01, "warmup": 1}}
# A CPU loss is measured again before it stands (not under --quick): tileops and each impl
# that beat it, interleaved, with these longer timers (see recheck_cpu_losses).
CPU_RECHECK = {"rounds": 11, "round_s": 0.1, "warmup": 3}
CUDA_ROUNDS = {"full": 3, "fast": 1, "quick": 1}
CUDA_COLD = {"full": {"warmup": 25, "rep": 100},        # milliseconds
             "fast": {"warmup": 5, "rep": 25},
             "quick": {"warmup": 5, "rep": 10}}
CUDA_HOT = {"full": {"calls": 50, "replays": 20, "budget_ms": 300},
            "fast": {"calls": 20, "replays": 5, "budget_ms": 30},
            "quick": {"calls": 10, "replays": 3, "budget_ms": 10}}
COMPILE_MODES = ("static", "dynamic")
FLUSH_BYTES = 256 * 1024 * 1024
# A lab knob (dev/time_floor.py --flush read): the cold timer's flush reads its buffer instead
# of writing it, leaving L2 full of clean lines, so a call's misses evict without writing back
FLUSH_READS = False


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


def loop_times_us(fns, *, sync=None, warmup=3, rounds=7, round_s=0.1, max_calls=100_000,
                  keep_rounds=False):
    """Per-call wall time of several callables, timed in interleaved rounds, in µs.

    Each round runs every callable's loop once, one after the other, so that slow drift
    and bursts of load from elsewhere on the host hit all of them alike and their ratios
    stay fair. The order rotates by one place each round, so that every callable takes
    every place in a round equally often.

    Parameters
    ----------
    fns : dict of str -> callable
        Called with no arguments.
    sync : callable, optional
        Drains the device (``torch.cuda.synchronize``); called before each loop and once at
        its end -- never between calls. None for CPU work.
    warmup : int
        Calls of each callable made (and synchronised) before calibration.
    rounds : int
        Number of timed rounds; the median round is reported.
    round_s : float
        Target duration of one loop in seconds; sets each callable's calls per loop.
    max_calls : int
        Upper bound on calls per loop.
    keep_rounds : bool
        Also return every round's per-call time.

    Returns
    -------
    dict of str -> float
        For each callable, the median over rounds of (loop wall time / calls), in µs; with
        ``keep_rounds``, a pair (that dict, dict of str -> list of µs per round).
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
    med = {name: statistics.median(v) * 1e6 for name, v in samples.items()}
    if keep_rounds:
        return med, {name: [s * 1e6 for s in v] for name, v in samples.items()}
    return med


_FLUSH = {}  # device index -> the 256 MB buffer written between cold calls
_SPIN_RATE = {}  # device index -> torch.cuda._sleep's cycles per µs, measured once
SPIN_MAX_US = 5000.0   # the longest spin cuda_cold_us runs before a call
SPIN_MIN_US = 50.0   # the shortest: the host's jitter between queuing the spin and the call


def cold_spin_us(host_seconds, spin_us=None) -> float:
    """The spin (µs) cuda_cold_us runs after each flush: ``spin_us`` when given, else twice
    the median of the call's host times ``host_seconds`` (seconds), at least
    :data:`SPIN_MIN_US`; at most :data:`SPIN_MAX_US` either way."""
    if spin_us is None:
        spin_us = max(2e6 * statistics.median(host_seconds), SPIN_MIN_US)
    return min(spin_us, SPIN_MAX_US)


def _spin_cycles_per_us(dev):
    """How many cycles of ``torch.cuda._sleep`` take a microsecond on the current device
    (measured once per device with CUDA events around a 10^6-cycle spin)."""
    import torch
    rate = _SPIN_RATE.get(dev)
    if rate is None:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        s.record()
        torch.cuda._sleep(1_000_000)
        e.record()
        torch.cuda.synchronize()
        rate = _SPIN_RATE[dev] = 1_000_000 / max(s.elapsed_time(e) * 1e3, 1.0)
    return rate


def cuda_cold_us(fn, warmup=25, rep=100, estimates=5, spin_us=None):
    """L2-cold device time of one call of ``fn``, in microseconds.

    The recipe of ``triton.testing.do_bench``, without triton: a first call, up to
    ``estimates`` (flush + call) iterations to estimate one (a single one when it already
    takes more than a tenth of ``rep``), ``warmup`` ms of calls, then ``rep`` ms of calls
    (at least one) each preceded by a 256 MB ``zero_()`` (which evicts the 50-60 MB L2 of
    an H100/H200) and timed with CUDA events around the call alone; the median is returned.

    The interval starts when the GPU reaches the start event, so a GPU left idle while
    the host launches the call would count the launch: where the host's cost of a call
    (torch.compile's guards, a Python op layer) exceeds the flush's device time, the
    queue drains and the time includes it (an H200 saw torch.compile's 1.7 µs-hot RMSNorm
    at 50-77 µs cold). So the GPU is kept busy until the call is queued: after each flush
    a spin kernel (``torch.cuda._sleep``) of twice the call's median host time (measured
    in the estimate; at least :data:`SPIN_MIN_US`, at most :data:`SPIN_MAX_US`:
    :func:`cold_spin_us`) runs before the start event. The rep budget counts it. The floor:
    a call whose host path takes 2-5 µs (a raw launch, a tensor's ``copy_``) got a spin of
    4-10 µs, which the host's own jitter between queuing the spin, the start event and the
    call outlasted; on an H100 host (session 45) such calls' cold times scattered from 4
    to 18 µs across rounds (median of each round) while Liger's RMSNorm, ~20 µs of host
    time and so a longer spin, held 4.45-4.61.

    The flush alone does not empty L2: lines held with persisting priority (the set-aside:
    9.4 MiB on an H100) outlive any amount of ordinary writes, and a kernel torch.compile
    made leaves part of its input so, so a tensor an earlier call pinned stays part
    L2-resident (on an H100 a 67 MB copy from a tensor torch.compile's RMSNorm had read
    took 24.8 µs against 27.9 from another buffer; session 39). So after each flush the
    host waits for the GPU and demotes those lines (:func:`tileops.runtime.reset_persisting_l2`)
    before the spin.

    Parameters
    ----------
    fn : callable
        Launches the work on the current CUDA stream.
    warmup, rep : float
        Warm-up and measurement budgets in milliseconds.
    estimates : int
        Most (flush + call) iterations of the first estimate.
    spin_us : float, optional
        The spin before each call, in microseconds, instead of twice the call's median host
        time (dev/time_norm_cold.py --harness: whether the spin's length moves a cold time).
    """
    import torch

    from . import runtime
    dev = torch.cuda.current_device()
    flush = _FLUSH.get(dev)
    if flush is None:
        flush = _FLUSH[dev] = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    done, total, hosts = 0, 0.0, []
    flush_now = (lambda: flush.max()) if FLUSH_READS else flush.zero_
    while done < max(1, estimates):
        s.record()
        flush_now()
        t0 = time.perf_counter()
        fn()
        hosts.append(time.perf_counter() - t0)
        e.record()
        torch.cuda.synchronize()
        done, total = done + 1, total + s.elapsed_time(e)
        if total / done > rep / 10:   # a slow call: one estimate is enough
            break
    est = max(total / done, 1e-3)
    spin_us = cold_spin_us(hosts, spin_us)
    spin = int(spin_us * _spin_cycles_per_us(dev))
    for _ in range(max(1, int(warmup / est))):
        fn()
    n_rep = max(1, int(rep / (est + spin_us / 1e3)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for i in range(n_rep):
        flush_now()
        torch.cuda.synchronize()   # the reset acts when it returns, not in stream order
        runtime.reset_persisting_l2(dev)
        torch.cuda._sleep(spin)   # the GPU stays busy while the host queues the call
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(starts, ends)) * 1e3


def hot_plan(calls, replays, est_us=None, budget_ms=None):
    """(calls, replays) of :func:`cuda_hot_us` that keep the device time of the timed
    replays (``replays`` x ``calls`` x ``est_us``) within ``budget_ms``: fewer calls per
    graph first (down to 1), then fewer replays (down to 3). Unchanged without an estimate
    or a budget."""
    if not est_us or not budget_ms:
        return calls, replays
    budget_us = budget_ms * 1e3
    calls = max(1, min(calls, int(budget_us / (replays * est_us))))
    replays = max(3, min(replays, int(budget_us / (calls * est_us))))
    return calls, replays


def cuda_hot_us(fn, calls=50, replays=20, warmup=3, est_us=None, budget_ms=None):
    """L2-hot per-call device time of ``fn``, launch overhead removed by a CUDA graph.

    Warm-up calls on a side stream, then ``calls`` back-to-back calls captured into one
    ``torch.cuda.CUDAGraph``, replayed ``replays`` times (each timed with CUDA events). Before the
    timed replays, L2's persisting lines are demoted (:func:`tileops.runtime.reset_persisting_l2`):
    what an earlier impl pinned there is not ``fn``'s to read; what ``fn`` pins itself is.
    Given an estimate of one call (``est_us``, e.g. its cold time) and ``budget_ms``, the
    calls and replays shrink (:func:`hot_plan`) so that a call of milliseconds (a
    reference over gigabytes) does not take a thousand calls' time.

    Parameters
    ----------
    fn : callable
        Launches the work on the current CUDA stream; must be capturable (no host syncs,
        its kernels already compiled -- the warm-up takes care of lazy compilation).

    Returns
    -------
    float
        Median replay time / ``calls``, in µs.
    """
    import torch

    from . import runtime
    calls, replays = hot_plan(calls, replays, est_us, budget_ms)
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
        graph.replay()  # the first replay uploads the graph
        torch.cuda.synchronize()
        runtime.reset_persisting_l2(torch.cuda.current_device())   # what an earlier impl pinned is not fn's
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


# ---------------------------------------------------------------------------------------
# correctness
# ---------------------------------------------------------------------------------------
def check_close(actual, expected, dtype_name):
    """Compare a result with its reference, scaled by the reference's magnitude.

    Parameters
    ----------
    actual, expected : torch.Tensor, or tuples of them
        Compared pairwise; the worst pair counts. Floating-point pairs are compared in
        float32 (float64 when either is float64), equal infinities and NaN in the same
        place as no error, scaled by the largest finite magnitude of the reference (a
        masked logit's -inf does not hide the error of the kept ones); an integer or
        bool pair (indices, tokens, masks) must be equal element for element: its error
        is the largest difference, unscaled.
    dtype_name : str
        Picks the tolerance of a floating-point pair from :data:`TOLERANCE`.

    Returns
    -------
    (float, float, bool)
        max_abs_err, scaled error (max_abs_err / max(1, max finite |expected|)), and
        whether the scaled error is within tolerance (False too for NaN/inf or a shape or
        count mismatch).
    """
    import torch
    a_all, e_all = as_tuple(actual), as_tuple(expected)
    if len(a_all) != len(e_all):
        return float("inf"), float("inf"), False
    worst = (0.0, 0.0, True)
    for a, e in zip(a_all, e_all):
        if a.shape != e.shape:
            return float("inf"), float("inf"), False
        if not (a.is_floating_point() or e.is_floating_point()):   # indices, tokens, masks: exact
            err = float((a.long() - e.long()).abs().max().item()) if a.numel() else 0.0
            scaled, ok = err, err == 0
        else:
            wide = torch.float64 if torch.float64 in (a.dtype, e.dtype) else torch.float32
            a, e = a.to(wide), e.to(wide)
            same = (a == e) | (a.isnan() & e.isnan())   # inf == inf, NaN where the reference has NaN: no error
            err = (a - e).abs().masked_fill_(same, 0).max().item() if a.numel() else 0.0
            scale = max(1.0, e.abs().masked_fill_(~e.isfinite(), 0).max().item() if e.numel() else 1.0)
            scaled = err / scale
            ok = math.isfinite(err) and scaled <= TOLERANCE.get(dtype_name, 2e-2)
        if not ok or scaled > worst[1]:
            worst = (err, scaled, ok and worst[2])
        if not ok:
            break
    return worst


def float64_inputs(inputs, written=()):
    """The case's inputs with every floating-point tensor upcast to float64 (new tensors;
    integer ones as they are, cloned where the op writes them): the second opinion's
    inputs. None when no input is floating-point (nothing to upcast) or all already are
    float64 (the second opinion would be the first)."""
    import torch
    floats = [t for t in inputs if t is not None and t.is_floating_point()]
    if not floats or all(t.dtype == torch.float64 for t in floats):
        return None
    return [None if t is None else t.to(torch.float64, copy=True) if t.is_floating_point()
            else t.clone() if k in written else t for k, t in enumerate(inputs)]


def as_tuple(out):
    """An op's result as a tuple of tensors (none for None)."""
    return tuple(out) if isinstance(out, (tuple, list)) else () if out is None else (out,)


# ---------------------------------------------------------------------------------------
# metadata and output
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


def git_commit():
    """The checkout's commit, ``git describe --always --dirty``: the short hash, with
    ``-dirty`` when the tracked files differ from it (a copy of a working tree over an older
    .git, as on the lent GPU machine, once reported its stale commit as the code's; the
    source digest names the code either way), or None."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=5)
        return (out.stdout.strip() or None) if out.returncode == 0 else None
    except Exception:
        return None


SOURCE_DIRS = ("csrc", "src/tileops")
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".py", ".yaml")


def source_digest():
    """sha256 (first 12 hex digits) of the library's sources: every file under csrc/ and
    src/tileops/ ending in .c .h .cu .py .yaml, by relative path and content, sorted. It
    names the code a result came from where ``git rev-parse`` cannot (a copy of the tree
    with a stale .git); ``python benchmarks/common.py digest`` prints it for a checkout."""
    h = hashlib.sha256()
    for d in SOURCE_DIRS:
        for path in sorted((REPO_ROOT / d).rglob("*")):
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


def command_line():
    """This process's command line, ``python -m tileops ...`` when run that way."""
    argv = list(sys.argv)
    if argv and argv[0].endswith(os.path.join("tileops", "__main__.py")):
        argv = ["-m", "tileops"] + argv[1:]
    return " ".join(shlex.quote(a) for a in [os.path.basename(sys.executable)] + argv)


def metadata(device, **extra):
    """Run metadata: device, library versions, git commit, source digest, date (UTC),
    command line, host CPUs and load, plus ``extra`` (added as is)."""
    import torch
    import tileops
    meta = {
        "device": str(device),
        "device_name": device_name(device),
        "torch_version": torch.__version__,
        "tileops_version": getattr(tileops, "__version__", None),
        "git_commit": git_commit(),
        "source_digest": source_digest(),
        "python_version": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command_line(),
        "host_cpus": os.cpu_count(),
        "host_loadavg_1m_end": host_loadavg(),
    }
    if str(device).startswith("cuda"):
        from . import runtime
        meta["cuda_version"] = torch.version.cuda
        meta["pdl"] = runtime.pdl_enabled()   # the kernels launched with programmatic dependent launch
    else:
        meta["torch_threads"] = torch.get_num_threads()
        # the instruction sets each side ran (TILEOPS_CPU_SIMD and ATEN_CPU_CAPABILITY cap them)
        meta["tileops_cpu_simd"] = tileops._C.cpu_simd_level()
        meta["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    meta.update(extra)
    return meta


def write_results(path, rows, meta):
    """Write ``{"metadata": meta, "rows": rows}`` as JSON, creating parent folders;
    returns the path."""
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
    left : int
        How many leading columns are left-aligned (the rest are right-aligned).
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


def ratio(a, b):
    """``a / b``, or None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


# ---------------------------------------------------------------------------------------
# what the manifest says about a case
# ---------------------------------------------------------------------------------------
def resolve_dotted(path):
    """The object a dotted path names: the longest importable module prefix, then
    attributes (``pkg.mod.Class.apply`` works)."""
    parts = path.split(".")
    missing = None
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as e:
            if e.name is None or not ".".join(parts[:i]).startswith(e.name):
                raise  # the module exists but fails to import something else
            missing = e  # the last one names the shortest prefix: the package that is absent
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise missing


def resolved_params(op):
    """The op's constructor params with defaults resolved (``Op.resolved_params``; an op
    layer without it: ``params()`` with each None replaced by the param's manifest
    ``none_means``, eps by float32's eps)."""
    if hasattr(op, "resolved_params"):
        return op.resolved_params()
    import torch
    out = dict(op.params())
    for p in op._entry.params:
        if out.get(p.name) is None:
            means = getattr(p, "none_means", None)
            if means is None and p.name == "eps":
                means = torch.finfo(torch.float32).eps
            if means is not None:
                out[p.name] = means
    return out


def make_inputs(entry, case, device, seed=0):
    """The case's inputs in the manifest's order, each drawn directly on ``device`` with a
    generator of that device seeded from ``seed`` (nothing drawn on the host and moved: a
    paged KV cache of gigabytes is drawn in milliseconds on a GPU): standard normals of
    each present input's shape and dtype rule, an index input's integers in [0, its bound)
    drawn as the case's ``draws`` say (uniform, distinct, max), an input with `values`
    uniform in [low, high), None for an input the case gives no shape."""
    import torch

    from .manifest.workloads import drawn_values, input_dtype
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    made = {}
    for k, spec in sorted(enumerate(entry.inputs), key=lambda kv: kv[1].bounded):
        shape = case.shapes.get(spec.name)
        if shape is None:
            made[spec.name] = None
            continue
        dt = input_dtype(spec, case.dtype, made)
        if spec.bounded:   # in [0, the bound its rule gives) as the workloads draw it, or in [low, high) of `values`
            made[spec.name] = drawn_values(spec, shape, dt, made, case.params, seed + k,
                                           case.draws.get(spec.name, "uniform"), device=dev)
        elif dt.is_floating_point:
            made[spec.name] = torch.randn(tuple(shape), generator=gen, device=dev, dtype=dt)
        else:
            made[spec.name] = torch.randn(tuple(shape), generator=gen, device=dev).to(dt)
    return [made[spec.name] for spec in entry.inputs]


def output_names(entry, n):
    """Names of the ``n`` outputs an op call returned: the outputs that are not optional,
    in manifest order (all outputs when the count says optional ones came too)."""
    names = [o.name for o in entry.outputs if not o.optional]
    return names if len(names) == n else [o.name for o in entry.outputs][:n]


def default_output_specs(entry):
    """The manifest's outputs less the optional ones a call with the call-time defaults
    omits (PagedDecodeAttentionFwdOp's lse without return_lse=True): what ``op(*inputs)``
    returns, in order."""
    defaults = {c.name: c.default for c in entry.call_params}
    return [o for o in entry.outputs if not (o.optional and not defaults.get(o.when))]


def default_outputs(entry, outs):
    """The reference's outputs (all of the manifest's) less those default_output_specs
    omits: what ``op(*inputs)`` returns, to compare with."""
    kept_specs = default_output_specs(entry)
    kept = tuple(t for o, t in zip(entry.outputs, as_tuple(outs)) if o in kept_specs)
    return kept[0] if len(kept) == 1 else kept


def picked_values(entry, inputs, outs):
    """``outs`` (what ``op(*inputs)`` returns, then the inputs it wrote) with each output the
    manifest marks ``index_of: <input>`` replaced by that input's values at those indices
    (along its last dim): two impls that break ties differently pick the same values. None
    when no output is so marked, or an index is out of range or repeated within its row
    (picking one of two tied values twice is no top-k): then only the indices speak."""
    outs = as_tuple(outs)
    kept = default_output_specs(entry)
    names = [i.name for i in entry.inputs]
    if not any(o.index_of for o in kept):
        return None
    res = list(outs)
    for k, o in enumerate(kept[:len(outs)]):
        if o.index_of:
            src, idx = inputs[names.index(o.index_of)], outs[k].long()
            if idx.numel() and not bool(((idx >= 0) & (idx < src.shape[-1])).all()):
                return None
            ordered = idx.sort(dim=-1).values
            if bool((ordered[..., 1:] == ordered[..., :-1]).any()):
                return None
            res[k] = src.gather(-1, idx)
    return tuple(res)


def call_bytes(entry, inputs, outputs):
    """Bytes one call moves, by the entry's roofline rule (None without one)."""
    from .manifest.workloads import roofline_bytes
    tensors = {spec.name: t for spec, t in zip(entry.inputs, inputs)}
    outs = as_tuple(outputs)
    tensors.update(zip(output_names(entry, len(outs)), outs))
    for o in entry.outputs:
        tensors.setdefault(o.name, None)
    return roofline_bytes(entry, tensors)


def peer_specs(entry):
    """The entry's ``peers`` (name -> {call, args, kwargs}); {} without any."""
    return dict(getattr(entry, "peers", None) or {})


def peer_callable(entry, spec, inputs, params):
    """A zero-argument callable running a peer library's kernel on the case.

    ``spec`` is the manifest's description of the call: ``call``, a dotted path (an
    autograd Function's ``.apply`` included); ``args``, a list; ``kwargs``, a mapping. An
    argument that is a string naming one of the entry's inputs or params stands for that
    input (None when absent) or that param's resolved value; a mapping ``{expr: ...}`` for
    that expression evaluated over the inputs and params, once, before timing; anything
    else is passed as is. The peer must return the op's outputs in the manifest's order."""
    fn = resolve_dotted(spec["call"])
    by_name = {s.name: t for s, t in zip(entry.inputs, inputs)}
    by_name.update(params)

    def value(a):
        if isinstance(a, dict):
            return eval(compile(a["expr"], "<peer arg>", "eval"), {"__builtins__": {}}, dict(by_name))
        return by_name[a] if isinstance(a, str) and a in by_name else a

    args = [value(a) for a in spec.get("args") or ()]
    kwargs = {k: value(v) for k, v in (spec.get("kwargs") or {}).items()}
    return lambda: fn(*args, **kwargs)


def case_filter(terms):
    """A predicate on cases from ``--workloads``: comma-separated terms, each matched
    case-insensitively as a substring of the case's name (``Llama-3-8B[H=4096,T=1]-float16``)
    or equal to its first input's shape written ``4096x4096``; a term of parts joined by
    ``&`` matches where every part does, a part ``dim=value`` matching the case's dim
    exactly (``llama-3-8b&b=1&ctx=4096``: B = 1, not 128); None keeps every case."""
    if not terms:
        return None
    terms = [t.strip().lower() for t in terms.split(",") if t.strip()]

    def keep(case):
        name = case.name.lower()
        first = next(iter(case.shapes.values()), ())
        shape = "x".join(str(int(d)) for d in first)
        dims = {str(k).lower(): str(v) for k, v in (case.dims or {}).items()}

        def part(p, alone):
            k, eq, v = p.partition("=")
            if eq and k in dims and not alone:
                return dims[k] == v
            return p in name or p == shape
        return any(all(part(p, "&" not in t) for p in t.split("&")) for t in terms)
    return keep


def input_bytes(case):
    """Total bytes of the case's inputs."""
    import torch
    es = torch.empty((), dtype=case.dtype).element_size()
    return sum(math.prod(s) * es for s in case.shapes.values())


def select_cases(cls, *, dtypes=None, keep=None, max_input_bytes=None, quick=False):
    """The cases of ``cls``'s workloads to run, after ``--dtypes``, ``--workloads`` and the
    input-size cap; ``quick``: the first of them only, or, when the cap leaves none (an
    embedding table of 1 GB on the CPU), the smallest case the filters keep."""
    from .manifest.workloads import cases
    kept = [c for c in cases(cls._entry, dtypes=dtypes) if keep is None or keep(c)]
    out = [c for c in kept if max_input_bytes is None or input_bytes(c) <= max_input_bytes]
    if quick and not out and kept:
        out = [min(kept, key=input_bytes)]
        print(f"[bench] {cls.__name__}: no case under the input cap of {max_input_bytes / 2**20:g} MiB; "
              f"--quick runs the smallest, {out[0].name} ({input_bytes(out[0]) / 2**20:.0f} MiB)", file=sys.stderr)
    return out[:1] if quick else out


# ---------------------------------------------------------------------------------------
# running a case
# ---------------------------------------------------------------------------------------
class Config:
    """What one run does: device, impls asked for, timing level (quick, fast or full) and
    how torch.compile compiles the reference.

    compile: "static" compiles the reference afresh for each case (``dynamic=False``, the
    dynamo caches reset: torch.compile's best case, a compile per case); "dynamic"
    compiles it once per op with ``dynamic=True`` and keeps it over the op's cases (a
    compile per dtype and param set: for ops of many cases on a short device budget)."""

    def __init__(self, device, impls=None, quick=False, fast=False, compile="static", recheck=True):
        if compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {COMPILE_MODES}, not {compile!r}")
        self.device = device
        self.cuda = device == "cuda"
        self.quick = quick
        self.impls = impls  # None: every impl that applies
        self.level = "quick" if quick else "fast" if fast else "full"
        self.compile = compile
        self.loop = CPU_LOOP[self.level]
        self.recheck = recheck and not quick
        self.rounds = CUDA_ROUNDS[self.level]
        self.cold = CUDA_COLD[self.level]
        self.hot = CUDA_HOT[self.level]
        self.metrics = ("cold_us", "hot_us") if self.cuda else ("us",)

    def wants(self, impl):
        return self.impls is None or impl in self.impls


def gbps_key(metric):
    """``us`` -> ``gbps``, ``cold_us`` -> ``cold_gbps``."""
    return metric[:-2] + "gbps"


def without_pdl(fn):
    """fn with programmatic dependent launch off around each call (runtime.pdl(False)), so a
    CUDA graph captured from it holds plain launches: the `tileops.plain` impl, and the dev
    scripts' A/B of PDL."""
    from . import runtime

    def plain(*args, **kwargs):
        with runtime.pdl(False):
            return fn(*args, **kwargs)
    return plain


def compiled_reference(ref, dynamic):
    """The `torch.compile` impl: the reference compiled whole (fullgraph), dynamic or not."""
    import torch
    return torch.compile(ref, fullgraph=True, dynamic=dynamic)


def build_impls(cls, case, cfg, notes):
    """Inputs, the op, the reference and every impl's zero-argument callable for a case.

    Returns
    -------
    dict
        ``inputs, op, params, ref`` (the reference callable taking the inputs) and ``fns``
        (impl -> callable); a peer that cannot be called is noted in ``notes``.
    """
    import torch
    from . import reference
    entry = cls._entry
    inputs = make_inputs(entry, case, cfg.device)
    op = cls(**case.params)
    params = resolved_params(op)
    ref_fn = reference.resolve(entry.ref_api)
    # an op without tensor inputs makes its outputs on the device its call names (and its
    # reference takes the same keyword)
    where = {entry.device_param.name: torch.device(cfg.device)} if entry.device_param else {}

    def ref(*a):
        return ref_fn(*a, **params, **where)

    fns = {}
    if cfg.wants("tileops"):
        fns["tileops"] = lambda: op(*inputs, **where)
    if cfg.cuda and cfg.impls is not None and PLAIN in cfg.impls:
        fns[PLAIN] = without_pdl(lambda: op(*inputs, **where))
    if cfg.wants("torch"):
        fns["torch"] = lambda: ref(*inputs)
    if cfg.wants("torch.compile"):
        if cfg.compile == "static":
            torch._dynamo.reset()  # fresh per case: no recompile limit, no dynamic shapes
        # "dynamic": the op's earlier cases' code is kept (dynamo's cache on the code of
        # `ref`, guarded on the params and dtype); run() reset it when the op began
        compiled = compiled_reference(ref, cfg.compile == "dynamic")
        fns["torch.compile"] = lambda: compiled(*inputs)
    for peer, spec in peer_specs(entry).items():
        if not cfg.wants(peer):
            continue
        if ("cuda" if cfg.cuda else "cpu") not in spec["devices"]:
            notes.setdefault(peer, f"not run on the {'GPU' if cfg.cuda else 'CPU'} (its manifest devices: "
                                   f"{', '.join(spec['devices'])})")
            continue
        try:
            fns[peer] = peer_callable(entry, spec, inputs, params)
        except Exception as e:  # not installed, or no such kernel in this version
            notes.setdefault(peer, f"{spec['call']}: {type(e).__name__}: {e}")
    return {"inputs": inputs, "op": op, "params": params, "ref": ref, "fns": fns}


COPY_ROUND = 4096   # CUDA: the copy's size is rounded up to a multiple of this, from COPY_ROUND_FROM bytes
COPY_ROUND_FROM = 1 << 16
COPY_KERNEL_FROM = 1 << 28   # CUDA: from this copied half on, the floor is a copy kernel, not copy_
COPY_KERNEL_THREADS = 256    # csrc/ops/common/stream_copy.cu: one 16-byte word a thread


def copy_half_bytes(nbytes, cuda):
    """The bytes :func:`add_copy` reads (and writes) for an op moving ``nbytes``: half of
    them, rounded up to a multiple of :data:`COPY_ROUND` on CUDA from :data:`COPY_ROUND_FROM`."""
    half = nbytes // 2
    if cuda and half >= COPY_ROUND_FROM:
        half = -(-half // COPY_ROUND) * COPY_ROUND
    return half


def copy_by_kernel(half, cuda):
    """Whether the CUDA copy floor of ``half`` bytes is the copy kernel (else ``copy_``)."""
    return cuda and half >= COPY_KERNEL_FROM


def add_copy(fns, nbytes, dtype, device):
    """The copy floor: ``dst.copy_(src)`` of half ``nbytes`` (read + write = ``nbytes``), in
    the case's dtype; returns the bytes it moves.

    On CUDA, a same-dtype ``copy_`` is the driver's cudaMemcpyAsync, and its speed depends
    on the size: on an H100, 32 MiB + 0 / 4 / 8 / 64 KiB took 24.2 µs hot and 32 MiB + 16 B
    to 2 KiB 29.3 (session 39, dev/time_floor.py --cases; a plain copy kernel 24.0 at every
    size). So from 64 KiB up the copied half is rounded up to a multiple of 4 KiB: the floor
    moves at most 8 KiB more than the op, never a slow path's time. And captured in the hot
    timer's CUDA graph, a memcpy of 512 MiB or more ran 1.22-1.24x its own L2-cold time
    (session 41: 536.9 MB 440.7 against 361.4 µs): from :data:`COPY_KERNEL_FROM` bytes a
    half, the floor is csrc/ops/common/stream_copy.cu's plain copy kernel instead (355.2
    hot, 358.5 L2-cold at that size; within 0.5 % of copy_ below it)."""
    import torch
    es = torch.empty((), dtype=dtype).element_size()
    cuda = str(device).startswith("cuda")
    half = copy_half_bytes(nbytes, cuda)
    numel = max(1, half // es)
    src = torch.ones(numel, dtype=dtype, device=device)
    dst = torch.empty_like(src)
    if copy_by_kernel(half, cuda):
        fns[COPY] = kernel_copy(src, dst)
    else:
        fns[COPY] = lambda: dst.copy_(src)
    return 2 * numel * es


def kernel_copy(src, dst):
    """A launcher copying ``src`` into ``dst`` (CUDA tensors of the same bytes, a multiple of
    16 and 16-byte aligned) with csrc/ops/common/stream_copy.cu, on torch's current stream
    at call time (so that a graph capture records it)."""
    from tileops import _C, runtime
    nbytes = src.numel() * src.element_size()
    if nbytes % 16 or src.data_ptr() % 16 or dst.data_ptr() % 16 or dst.numel() * dst.element_size() != nbytes:
        raise ValueError(f"bench kernel_copy: expected two 16-byte aligned buffers of the same bytes, a multiple "
                         f"of 16; got {nbytes} and {dst.numel() * dst.element_size()} bytes")
    device = src.device.index if src.device.index is not None else 0
    handle = runtime.build(device, "common/stream_copy.cu", "tileops_stream_copy", (), "ppq")
    groups = nbytes // 16
    grid = -(-groups // COPY_KERNEL_THREADS)

    def launch():
        _C.cuda_launch(handle, grid, 1, 1, COPY_KERNEL_THREADS, 1, 1, 0, runtime.current_stream(device),
                       src.data_ptr(), dst.data_ptr(), groups)
    return launch


def impl_failed(r, impl, label, e, cfg):
    """Records that ``impl`` raised ``e`` in its row ``r`` (``error``: the exception's type
    and text) and says so on stderr with the traceback; on CUDA the memory it held is
    given back. The impl is not timed further; the run goes on."""
    traceback.print_exc()
    r["error"] = f"{type(e).__name__}: {e}"
    print(f"[bench] {label} {impl} failed: {clip(r['error'], 300)}", file=sys.stderr, flush=True)
    if cfg.cuda:
        import torch
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:   # a sticky CUDA error: what follows will say so
            pass


def clip(text, width):
    """The first line of ``text`` cut to ``width`` characters (with an ellipsis)."""
    text = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def time_cpu(ready, cfg, impl_rows, label):
    """Per-call times of every ready impl on the CPU, interleaved (:func:`loop_times_us`);
    when one raises, each is timed alone so that the others still get their numbers."""
    try:
        med, rounds = loop_times_us(ready, keep_rounds=True, **cfg.loop)
    except Exception:
        med, rounds = {}, {}
        for impl, fn in ready.items():
            try:
                m, r = loop_times_us({impl: fn}, keep_rounds=True, **cfg.loop)
                med.update(m)
                rounds.update(r)
            except Exception as e:
                impl_failed(impl_rows[impl], impl, label, e, cfg)
    for impl in med:
        impl_rows[impl].update(us=med[impl], us_rounds=rounds[impl])
    if cfg.recheck:
        recheck_cpu_losses(ready, impl_rows, label)


def recheck_cpu_losses(ready, impl_rows, label):
    """A second opinion on a CPU loss: on a shared host short timers misjudge (a burst of
    load in tileops' rounds and not in a peer's). Where an impl beat tileops, tileops, each
    impl that beat it and the copy floor are timed again together, interleaved, with the
    longer timers of :data:`CPU_RECHECK`; those numbers stand, the first
    pass is kept as ``us_first`` / ``us_first_rounds`` and the impl's row says
    ``rechecked``. A loss the second pass confirms is reported as measured."""
    tile = impl_rows.get("tileops", {})
    t = tile.get("us")
    if t is None or "error" in tile:
        return
    beat = [i for i, r in impl_rows.items()
            if i not in ("tileops", COPY) and i in ready and "error" not in r and r.get("us") and r["us"] < t]
    if not beat:
        return
    names = ["tileops"] + beat + ([COPY] if COPY in ready and impl_rows.get(COPY, {}).get("us") else [])
    try:
        med, rounds = loop_times_us({i: ready[i] for i in names}, keep_rounds=True, **CPU_RECHECK)
    except Exception as e:   # the first pass timed every impl once: keep it, and say so
        print(f"[bench] {label}: the recheck of a loss raised {type(e).__name__}: {e}; first pass kept",
              file=sys.stderr)
        return
    for i in names:
        r = impl_rows[i]
        r.update(us_first=r["us"], us_first_rounds=r.pop("us_rounds", None), us=med[i], us_rounds=rounds[i],
                 rechecked=True)
    kept = [i for i in beat if impl_rows[i]["us"] < impl_rows["tileops"]["us"]]
    print(f"[bench] {label}: tileops {t:.2f} us behind {', '.join(beat)} in the first pass; rechecked: tileops "
          f"{impl_rows['tileops']['us']:.2f} us" + (f", still behind {', '.join(kept)}" if kept else ", not behind"),
          file=sys.stderr)


HOT_OVER_COLD = 1.05   # a hot time above the same impl's L2-cold time by more than this is suspect


def flag_suspect_hot(impl_rows):
    """Marks each impl whose hot time exceeds its own L2-cold time by more than
    HOT_OVER_COLD (``impl_rows[impl]["suspect"]``, a sentence) and returns {impl: sentence}.
    Replays of a CUDA graph with L2 warm and no launch gaps should never be slower than
    calls after a flush: where they are, the hot number measured something else (session
    40, H100: paged decode at B = 32, 32K tokens, one ``--fast`` round had tileops at
    1617 µs hot against 1374 L2-cold, and full timers 1408 / 1415; torch's copy of 4.3 GB,
    a memcpy node in the graph, 1758 hot against 1424 with full timers too). Such a hot time is kept and
    shown, flagged: the table and summary.py say so, and its ratios are not to be cited."""
    flagged = {}
    for impl, r in impl_rows.items():
        hot, cold = r.get("hot_us"), r.get("cold_us")
        if hot and cold and hot > HOT_OVER_COLD * cold:
            r["suspect"] = (f"hot {hot:.2f} µs is {hot / cold:.2f}x its own L2-cold {cold:.2f} µs "
                            f"(above {HOT_OVER_COLD:g}x): the hot timer measured something else")
            flagged[impl] = r["suspect"]
    return flagged


def time_cuda(ready, cfg, impl_rows, label):
    """Cold and hot times of every ready impl, in ``cfg.rounds`` interleaved rounds (the
    order rotated each round); each number the median over the rounds, every round kept."""
    import torch
    samples = {impl: {"cold_us": [], "hot_us": []} for impl in ready}
    order = list(ready)
    for r in range(cfg.rounds):
        k = r % len(order)
        for impl in order[k:] + order[:k]:
            row = impl_rows[impl]
            if "error" in row:
                continue
            fn = ready[impl]
            try:
                torch.cuda.synchronize()
                cold = cuda_cold_us(fn, **cfg.cold)
                samples[impl]["cold_us"].append(cold)
            except Exception as e:
                impl_failed(row, impl, label, e, cfg)
                continue
            if "hot_error" in row:
                continue
            try:
                samples[impl]["hot_us"].append(cuda_hot_us(fn, est_us=cold, **cfg.hot))
            except Exception as e:  # not capturable: keep the cold numbers
                row["hot_error"] = f"{type(e).__name__}: {e}"
                print(f"[bench] {label} {impl}: CUDA-graph capture failed: {row['hot_error']}",
                      file=sys.stderr)
    for impl, s in samples.items():
        for metric, v in s.items():
            if v and "error" not in impl_rows[impl]:
                impl_rows[impl][metric] = statistics.median(v)
                impl_rows[impl][metric + "_rounds"] = v


def run_case(cls, case, cfg, notes, failures):
    """Check and time every impl of one case; returns its row (see benchmarks/README.md)."""
    import torch
    entry = cls._entry
    dt = str(case.dtype).replace("torch.", "")
    label = f"{cls.__name__} {case.name}"
    row = {"op": cls.__name__, "case": case.name, "label": case.label, "dims": dict(case.dims),
           "dtype": dt, "shapes": {k: list(v) for k, v in case.shapes.items()}}
    try:
        built = build_impls(cls, case, cfg, notes)
    except Exception as e:  # the op refused its params, or the inputs could not be made
        traceback.print_exc()
        row["error"] = f"tileops: {type(e).__name__}: {e}"
        failures.append(f"{label}: {row['error']}")
        return row
    row["params"] = built["params"]
    sync = torch.cuda.synchronize if cfg.cuda else (lambda: None)
    impl_rows = {impl: {} for impl in built["fns"]}

    inputs = built["inputs"]
    written = [k for k, i in enumerate(entry.inputs) if i.name in entry.in_place]
    pristine = {k: inputs[k].clone() for k in written}

    def result(out):
        """The call's outputs, then (copies of) the inputs it wrote in place, which are
        then reset for the next impl's call."""
        res = as_tuple(out) + tuple(inputs[k].clone() for k in written)
        for k in written:
            inputs[k].copy_(pristine[k])
        return res
    try:
        out = default_outputs(entry, built["ref"](*inputs))
        row["bytes"] = call_bytes(entry, inputs, out)
        expected = result(out)
    except Exception as e:
        traceback.print_exc()
        row["error"] = f"reference raised {type(e).__name__}: {e}"
        failures.append(f"{label}: {row['error']}")
        return row
    if row["bytes"] and cfg.wants(COPY):
        impl_rows[COPY] = {"bytes": add_copy(built["fns"], row["bytes"], case.dtype, cfg.device)}

    second = {}   # the float64 reference's outputs, made (once) when a result differs from the reference

    def float64_expected():
        """The reference's outputs on the inputs upcast to float64 (and what the op wrote
        into its copies of them), or None and why not."""
        if "out" not in second:
            second["out"], second["why"] = None, None
            try:
                ins = float64_inputs(inputs, written)
                if ins is None:
                    second["why"] = "no input to upcast (none is floating-point or all are float64)"
                else:
                    out64 = default_outputs(entry, built["ref"](*ins))
                    second["out"] = as_tuple(out64) + tuple(ins[k] for k in written)
            except Exception as e:   # a reference that cannot run in float64, or no memory for it
                second["why"] = f"the reference raised {type(e).__name__}: {clip(e, 200)}"
        return second["out"], second["why"]

    ready, got = {}, None
    tol = TOLERANCE.get(dt, 2e-2)

    def first_call(impl, fn, r):
        """The impl's first call (it compiles: NVRTC, inductor, triton, outside the timers),
        its outputs checked; returns (ok, scaled error)."""
        got = fn()
        sync()
        # the reference's outputs as op(*inputs) returns them (compiled too: lse dropped)
        got = result(got if impl in ("tileops", PLAIN) else default_outputs(entry, got))
        if impl in (REFERENCE, COPY):
            return True, 0.0
        err, scaled, ok = check_close(got, expected, dt)
        r.update(max_abs_err=err, scaled_err=scaled, correct=ok, check="reference")
        if not ok:   # indices (index_of) that differ only where values tie: the same picks
            mine, theirs = picked_values(entry, inputs, got), picked_values(entry, inputs, expected)
            if mine is not None and theirs is not None:
                err, scaled, ok = check_close(mine, theirs, dt)
                if ok:
                    r.update(max_abs_err=err, scaled_err=scaled, correct=True, check="reference, ties in another order")
                    return ok, scaled
        if not ok:   # a second opinion: the reference computed in float64
            want, why = float64_expected()
            if want is None:
                r["check_note"] = f"no float64 opinion: {why}"
            else:
                err64, scaled64, ok = check_close(got, want, dt)
                r.update(float64_max_abs_err=err64, float64_scaled_err=scaled64, correct=ok, check="float64")
        return ok, scaled

    for impl in list(built["fns"]):
        r = impl_rows[impl]
        try:
            ok, scaled = first_call(impl, built["fns"][impl], r)
        except Exception as e:  # a baseline that fails (torch.compile's crash) is recorded; the run goes on
            if impl == "torch.compile" and cfg.compile == "dynamic":
                # inductor may fail on a shape it compiled dynamically: the case gets
                # torch.compile's static build instead, and its row says so; the op's later
                # cases compile dynamically again. (2.11 fails on the top-k/top-p mask at
                # B >= 32 both ways, session 22: the row records both failures.)
                traceback.print_exc()
                r["compile"] = f"static (the dynamic compile raised {type(e).__name__}: {clip(e, 160)})"
                print(f"[bench] {label} torch.compile: dynamic compile failed, compiled static", file=sys.stderr)
                torch._dynamo.reset()
                static = compiled_reference(built["ref"], False)
                built["fns"][impl] = lambda: static(*inputs)
                try:
                    ok, scaled = first_call(impl, built["fns"][impl], r)
                except Exception as e2:
                    impl_failed(r, impl, label, e2, cfg)
                    continue
            else:
                impl_failed(r, impl, label, e, cfg)
                continue
        fn = built["fns"][impl]
        if impl not in (REFERENCE, COPY):
            if not ok:
                r["error"] = f"output differs from the reference: scaled error {scaled:.3g} > {tol:g}"
                r["error"] += (f", and from the float64 reference: {r['float64_scaled_err']:.3g}"
                               if r["check"] == "float64" else f" ({r['check_note']})")
                print(f"[bench] {label} {impl}: {r['error']}", file=sys.stderr)
                if impl == "tileops":
                    continue  # a broken kernel produces no number; peers are timed and flagged
            elif r["check"] == "float64":
                print(f"[bench] {label} {impl}: differs from the reference (scaled error {scaled:.3g} > {tol:g}) "
                      f"but agrees with the float64 reference ({r['float64_scaled_err']:.3g}): accepted",
                      file=sys.stderr)
        ready[impl] = fn
    del expected, got
    second.clear()   # the float64 outputs are not kept while timing
    tile = impl_rows.get("tileops", {})
    row["correct"] = tile.get("correct")
    for key in ("check", "check_note"):
        if key in tile:
            row[key] = tile[key]
    if "error" in tile:
        row["error"] = f"tileops: {tile['error']}"
        failures.append(f"{label}: {row['error']}")

    if ready and cfg.cuda:
        time_cuda(ready, cfg, impl_rows, label)
        suspect = flag_suspect_hot(impl_rows)
        if suspect:
            row["suspect"] = suspect
    elif ready:
        time_cpu(ready, cfg, impl_rows, label)
    if "error" in tile and "error" not in row:   # tileops failed while timed
        row["error"] = f"tileops: {tile['error']}"
        failures.append(f"{label}: {row['error']}")
    errors = {i: r.get("error") or f"not capturable in a CUDA graph: {r['hot_error']}"
              for i, r in impl_rows.items() if r.get("error") or r.get("hot_error")}
    if errors:
        row["impl_errors"] = errors
    for impl, r in impl_rows.items():
        nbytes = r.get("bytes", row.get("bytes"))
        for metric in cfg.metrics:
            if r.get(metric) and nbytes:
                r[gbps_key(metric)] = nbytes / r[metric] / 1e3
    row["impls"] = impl_rows
    row["ratios"], row["winner"] = {}, {}
    for metric in cfg.metrics:
        t = impl_rows.get("tileops", {}).get(metric)
        row["ratios"][metric] = {f"tileops/{i}": ratio(t, r.get(metric))
                                 for i, r in impl_rows.items() if i != "tileops"}
        # the winner: the fastest impl that agreed with the reference (one flagged as
        # differing is timed and shown, never the winner)
        timed = {i: r[metric] for i, r in impl_rows.items()
                 if i != COPY and r.get(metric) and r.get("correct") is not False}
        row["winner"][metric] = min(timed, key=timed.get) if timed else None
    del built
    if cfg.cuda:
        torch.cuda.empty_cache()
    return row


# ---------------------------------------------------------------------------------------
# the printed table and the plot
# ---------------------------------------------------------------------------------------
def impl_order(rows):
    """Impls in the rows, tileops first, copy last."""
    seen = []
    for r in rows:
        for i in r.get("impls", {}):
            if i not in seen:
                seen.append(i)
    head = [i for i in BASE_IMPLS if i in seen]
    return head + [i for i in seen if i not in head and i != COPY] + ([COPY] if COPY in seen else [])


def print_table(rows, metric):
    """One line per case: each impl's time, tileops' ratios, GB/s, the winner."""
    impls = impl_order(rows)
    others = [i for i in impls if i != "tileops"]
    gk = gbps_key(metric)
    cols = [("case", "case", "")]
    cols += [(f"{i} µs", (lambda r, i=i: r.get("impls", {}).get(i, {}).get(metric)), ".2f") for i in impls]
    cols += [(f"t/{i}", (lambda r, i=i: r.get("ratios", {}).get(metric, {}).get(f"tileops/{i}")), ".3f")
             for i in others]
    cols += [("GB/s", (lambda r: r.get("impls", {}).get("tileops", {}).get(gk)), ".1f"),
             ("copy GB/s", (lambda r: r.get("impls", {}).get(COPY, {}).get(gk)), ".1f"),
             ("%copy", (lambda r: percent(r.get("ratios", {}).get(metric, {}).get(f"tileops/{COPY}"))), ".0f"),
             ("won", (lambda r: r.get("winner", {}).get(metric)), ""),
             ("ok", (lambda r: {True: "ok64" if r.get("check") == "float64" else "ok", False: "MISMATCH"}.get(
                 r.get("correct"), r.get("error") and "ERROR")), ""),
             ("failed", (lambda r: ",".join(r.get("impl_errors", {})) or None), "")]
    print(format_table(rows, cols, left=1))


def percent(t_over_copy):
    """tileops' bandwidth as a percentage of the copy floor's (100 = the floor) from the
    ratio tileops time / copy time; None without one."""
    return 100.0 / t_over_copy if t_over_copy else None


def print_impl_notes(rows, key, heading, width=300):
    """One line per (case, impl) of each row's ``key`` dict (impl -> text), under
    ``heading``; nothing when no row has one."""
    lines = [f"  {r['case']}  {impl}: {clip(text, width)}" for r in rows for impl, text in r.get(key, {}).items()]
    if lines:
        print(f"\n{heading}:")
        print("\n".join(lines))


def print_failed_impls(rows, width=300):
    """One line per impl that failed in a case (a baseline's crash included: what it
    raised, its first line); nothing when none did."""
    print_impl_notes(rows, "impl_errors", "impls that failed (raised: not timed; a mismatch: flagged and timed; not "
                     "capturable: no hot time; the full text in the JSON's impl_errors)", width)


def print_suspect(rows, width=300):
    """One line per impl whose hot time is above its own L2-cold time (flag_suspect_hot);
    nothing when none is."""
    print_impl_notes(rows, "suspect", "suspect hot times (kept in the table and the JSON, flagged there; not to "
                     "be cited)", width)


def plot_results(data, out_path):
    """Each impl's time over the copy floor (log scale), per case, one panel per metric
    and op; a line at 1 marks the floor. Returns False (with a printed note) when
    matplotlib is missing or nothing can be plotted."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        print(f"[bench] matplotlib is not installed: no plot written ({out_path})")
        return False
    rows = [r for r in data.get("rows", []) if r.get("impls")]
    meta = data.get("metadata", {})
    metrics = meta.get("metrics") or ["us"]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    panels = [(op, m) for op in ops for m in metrics]
    if not panels:
        print("[bench] nothing to plot")
        return False
    n_cases = max(sum(1 for r in rows if r["op"] == op) for op in ops)
    fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                             figsize=(max(8.0, 0.28 * n_cases + 3.5), 4.2 * len(panels)))
    cmap = plt.get_cmap("tab10")
    for ax, (op, metric) in zip(axes[:, 0], panels):
        op_rows = [r for r in rows if r["op"] == op]
        xs = range(len(op_rows))
        for j, impl in enumerate(i for i in impl_order(op_rows) if i != COPY):
            ys = [ratio(r["impls"].get(impl, {}).get(metric), r["impls"].get(COPY, {}).get(metric))
                  for r in op_rows]
            pts = [(x, y) for x, y in zip(xs, ys) if y]
            if pts:
                ax.plot(*zip(*pts), marker="o", ms=3, lw=0.8, label=impl, color=cmap(j % 10))
        ax.axhline(1.0, color="k", lw=0.8, ls="--", label="copy floor")
        ax.set_yscale("log")
        plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.tick_params(axis="y", which="minor", labelsize=6)
        ax.set_ylabel(f"{metric} / copy's")
        ax.set_title(f"{op}: {metric} over the copy of the same bytes (1 = the copy floor)", fontsize=9)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["case"] for r in op_rows], rotation=90, fontsize=6)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"{meta.get('device_name', '')} -- torch {meta.get('torch_version', '')}, "
                 f"tileops {meta.get('tileops_version', '')} ({meta.get('source_digest', '')})", fontsize=9)
    return save_figure(fig, out_path, "bench", dpi=110)


def save_figure(fig, out_path, tag, dpi):
    """Lay out, write (creating folders) and close a matplotlib figure; returns True."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=dpi)
    plt.close(fig)
    print(f"[{tag}] wrote {out_path}")
    return True


# ---------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------
def add_arguments(ap):
    """The arguments of ``python -m tileops bench``."""
    ap.add_argument("--op", help="op class name(s), comma-separated (default: every implemented op)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default=None,
                    help="default: cuda when torch sees a GPU, else cpu")
    ap.add_argument("--out", help="results JSON (default benchmarks/results/<device>/<op>.json; with "
                                  "several ops and --out, one file holds them all)")
    ap.add_argument("--plot", help="PNG to draw (default: the JSON's path with .png)")
    ap.add_argument("--no-plot", action="store_true", help="write no PNG")
    ap.add_argument("--workloads", help="comma-separated filter: substrings of case names "
                                        "(Llama-3-8B, T=4096, float16) or shapes (2048x4096)")
    ap.add_argument("--dtypes", help="comma-separated dtypes instead of the manifest's (of each op's data input: "
                                     "an embedding's table); one no op takes is refused, one only some take "
                                     "skips the others")
    ap.add_argument("--impls", help="comma-separated subset of tileops,torch,torch.compile,<peer>,copy; "
                                    "on CUDA also tileops.plain (tileops launched without programmatic "
                                    "dependent launch: named here only)")
    ap.add_argument("--max-input-mib", type=float, default=None,
                    help=f"skip cases whose inputs total more (default {CPU_MAX_INPUT_MIB} on cpu, "
                         "no limit on cuda; 0: no limit)")
    ap.add_argument("--quick", action="store_true", help="one case per op, few iterations (smoke test)")
    ap.add_argument("--fast", action="store_true",
                    help="short timers (CUDA: one round, 25 ms of cold calls, 5 replays of a graph of <= 20 "
                         "calls; CPU: 3 rounds of 0.03 s): many cases on a short device budget")
    ap.add_argument("--no-recheck", action="store_true",
                    help="CPU: report the first pass as it is (by default a case where an impl beat tileops "
                         f"is timed again, tileops, those impls and the copy, {CPU_RECHECK['rounds']} rounds of "
                         f"{CPU_RECHECK['round_s']} s, and those numbers stand; never under --quick)")
    ap.add_argument("--compile", choices=COMPILE_MODES, default="static",
                    help="torch.compile of the reference: static (default) compiles it afresh per case, "
                         "dynamic=False; dynamic compiles it once per op with dynamic=True, kept over the "
                         "op's cases (a compile per dtype and param set instead of one per case)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="per op: start no case (but the first) after this many seconds; the cases left "
                         "are listed in metadata.cases_skipped. The JSON is rewritten after every case either way")
    return ap


def _names(dts):
    return ", ".join(str(d).replace("torch.", "") for d in dts)


def parse_dtypes(text, takes):
    """``--dtypes`` as a list of names (None when not given); a usage error raises
    InputValueError saying it. ``takes``: the dtypes each op to run accepts
    (workloads.accepted_dtypes: its data input's, an embedding's table, not its ids).

    Treated as ``--impls`` is: a name that is no dtype, or that none of the ops asked for
    accepts, is a usage error before any case runs; one that only some of them accept runs
    where accepted and is skipped, with a one-line note, for the others (run), as a peer
    runs only for the ops that name it. Never a case at a dtype its op does not accept:
    the input would be made in the first dtype it accepts and labelled with the other."""
    from ._dtypes import BY_NAME
    from .errors import InputValueError
    if not text:
        return None
    names = [d.strip() for d in text.split(",")]
    bad = [d for d in names if d not in BY_NAME]
    if bad:
        raise InputValueError(f"[bench] --dtypes {', '.join(map(repr, bad))}: not a dtype; "
                              f"known: {', '.join(BY_NAME)}")
    untaken = [d for d in names if takes and all(BY_NAME[d] not in t for t in takes.values())]
    if untaken:
        if len(takes) == 1:
            (name, t), = takes.items()
            raise InputValueError(f"[bench] --dtypes {','.join(untaken)}: {name} takes {_names(t)}")
        every = dict.fromkeys(d for t in takes.values() for d in t)
        raise InputValueError(f"[bench] --dtypes {','.join(untaken)}: none of the {len(takes)} ops takes it; "
                              f"they take {_names(every)}")
    return names


def unwritable(path):
    """Why a results file cannot be written at ``path`` (None when it can): a folder, a
    parent that is a file, a place without write access. Makes its parent folders, as
    write_results would, and leaves no file behind."""
    path = Path(path)
    if path.is_dir():
        return "it is a folder"
    up = path.parent
    while not up.exists() and up != up.parent:
        up = up.parent
    if not up.is_dir():
        return f"{str(up)!r} is not a folder"
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
        if not existed:
            path.unlink()
    except OSError as e:
        return e.strerror or str(e)
    return None


def default_out(device, name):
    """``benchmarks/results/<results_subdir(device)>/<name>.json``."""
    return RESULTS_DIR / results_subdir(device) / f"{name}.json"


def run(args):
    """Run the benchmark the parsed ``args`` describe; returns the exit status (0 ok, 1 a
    tileops failure, 2 a usage problem)."""
    import torch
    import tileops

    from ._dtypes import BY_NAME
    from .errors import InputValueError
    from .manifest.workloads import accepted_dtypes, data_input
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if prepare_device(device, "bench") is None:
        return 2
    classes = tileops.all_op_classes()
    if args.op:
        unknown = [o for o in args.op.split(",") if o not in classes]
        if unknown:
            print(f"[bench] no op {', '.join(map(repr, unknown))}; implemented: {', '.join(classes)}", file=sys.stderr)
            return 2
        classes = {o: classes[o] for o in args.op.split(",")}
    cap = args.max_input_mib if args.max_input_mib is not None else (CPU_MAX_INPUT_MIB if device == "cpu" else 0)
    impls = args.impls.split(",") if args.impls else None
    known = set(BASE_IMPLS) | {COPY, PLAIN} | {p for c in classes.values() for p in peer_specs(c._entry)}
    if impls and not set(impls) <= known:
        print(f"[bench] unknown impl(s) {sorted(set(impls) - known)}; known: {sorted(known)}", file=sys.stderr)
        return 2
    cfg = Config(device, impls, args.quick, fast=args.fast, compile=args.compile, recheck=not args.no_recheck)
    keep = case_filter(args.workloads)
    takes = {name: accepted_dtypes(cls._entry) for name, cls in classes.items()
             if cls._entry.workloads is not None and cls._entry.ref_api}
    try:
        dtypes = parse_dtypes(args.dtypes, takes)
    except InputValueError as e:
        print(e, file=sys.stderr)
        return 2
    for flag, path in (("--out", args.out), ("--plot", None if args.no_plot else args.plot)):
        why = path and unwritable(path)
        if why:    # checked now: a bad path must not fail the run after its first case
            print(f"[bench] {flag} {path!r}: cannot write it ({why})", file=sys.stderr)
            return 2
    if cfg.compile == "dynamic":   # one op's cases share dynamo's cache: a compile per dtype and param set
        import torch._dynamo.config as dynamo_config
        dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 256)

    results = []  # (name, rows, meta), the op being run last
    for name, cls in classes.items():
        if cls._entry.workloads is None or not cls._entry.ref_api:
            print(f"[bench] {name}: no workloads or no ref_api in the manifest; skipped", file=sys.stderr)
            continue
        op_dtypes = dtypes and [d for d in dtypes if BY_NAME[d] in takes[name]]
        if dtypes and op_dtypes != dtypes:
            left = [d for d in dtypes if d not in op_dtypes]
            print(f"[bench] {name}: --dtypes {','.join(left)}: its {data_input(cls._entry).name!r} takes "
                  f"{_names(takes[name])}; {'those cases' if op_dtypes else 'the op'} skipped", file=sys.stderr)
            if not op_dtypes:
                continue
        t0 = time.perf_counter()
        rows, failures, notes = [], [], {}
        selected = select_cases(cls, dtypes=op_dtypes, keep=keep, quick=args.quick,
                                max_input_bytes=int(cap * 2**20) if cap else None)
        meta = metadata(device, op=name, metrics=list(cfg.metrics), quick=args.quick, timing=cfg.level,
                        compile=cfg.compile, budget_s=args.budget_s, max_input_mib=cap or None, peers=notes,
                        host_loadavg_1m_start=host_loadavg(), timer=timer_description(cfg), tolerance=TOLERANCE,
                        failures=failures, cases=len(selected))
        results.append((name, rows, meta))
        if cfg.compile == "dynamic":
            torch._dynamo.reset()   # this op's compiled references only
        with torch.no_grad():
            for n, case in enumerate(selected):
                if n and args.budget_s and time.perf_counter() - t0 > args.budget_s:   # at least one case
                    meta["cases_skipped"] = [c.name for c in selected[n:]]
                    meta["stopped"] = f"--budget-s {args.budget_s:g} s reached after {n} of {len(selected)} cases"
                    print(f"[bench] {name}: {meta['stopped']}; {len(selected) - n} cases not run", file=sys.stderr)
                    break
                tc = time.perf_counter()
                rows.append(run_case(cls, case, cfg, notes, failures))
                print(f"[bench] {name} {case.name}: {time.perf_counter() - tc:.1f} s", file=sys.stderr, flush=True)
                update_status(meta, t0, done=False)
                write_outputs(results, args, device, quiet=True)  # a run cut short keeps the cases done
        update_status(meta, t0, done=True)
        print(f"\n{name} on {meta['device_name']} (torch {meta['torch_version']}): "
              f"{len(rows)} cases, ratio < 1 = tileops faster, %copy = tileops' GB/s / the copy's")
        for metric in cfg.metrics:
            print(f"\n{metric}:")
            print_table(rows, metric)
        print_failed_impls(rows)
        print_suspect(rows)
        for peer, why in notes.items():
            print(f"[bench] {peer}: {why}")
    if not results:
        return 2
    status = 0
    for path, rows, meta in write_outputs(results, args, device):
        print(f"\n[bench] wrote {path} ({meta['elapsed_s']} s)")
        if not args.no_plot:
            plot_results({"metadata": meta, "rows": rows},
                         Path(args.plot) if args.plot and len(results) == 1 else path.with_suffix(".png"))
        if meta.get("stopped"):
            print(f"[bench] incomplete: {meta['stopped']}", file=sys.stderr)
        if meta["failures"]:
            print("[bench] FAILED: " + "; ".join(meta["failures"]), file=sys.stderr)
            status = 1
    return status


def update_status(meta, t0, done):
    """The op's metadata after a case (``done`` False: the file says the run is still
    going, which a run killed by its time limit leaves behind) or at its end."""
    if not done:
        meta["stopped"] = "running: the file is rewritten after each case"
    elif meta.get("stopped", "").startswith("running"):
        del meta["stopped"]
    meta.update(elapsed_s=round(time.perf_counter() - t0, 1), status="FAILED" if meta["failures"] else "ok",
                host_loadavg_1m_end=host_loadavg(), complete=done and not meta.get("stopped"))


def write_outputs(results, args, device, quiet=False):
    """Writes the results so far: one JSON per op (``--out`` for a single op, else
    benchmarks/results/<device>/<op>.json), or all of them in ``--out`` when several ops
    run. Returns [(path, rows, meta)] as written."""
    if args.out and (len(results) > 1 or "," in (args.op or "") or not args.op):
        metas = [m for _, _, m in results]
        merged = dict(metas[0], op=[n for n, _, _ in results],
                      status="FAILED" if any(m["status"] != "ok" for m in metas) else "ok",
                      failures=[f for m in metas for f in m["failures"]],
                      complete=all(m.get("complete") for m in metas),
                      elapsed_s=round(sum(m.get("elapsed_s", 0) for m in metas), 1))
        merged.pop("stopped", None)
        stopped = [f"{m['op']}: {m['stopped']}" for m in metas if m.get("stopped")]
        if stopped:
            merged["stopped"] = "; ".join(stopped)
        outputs = [(Path(args.out), [r for _, rows, _ in results for r in rows], merged)]
    else:
        outputs = [(Path(args.out) if args.out else default_out(device, name), rows, meta)
                   for name, rows, meta in results]
    for path, rows, meta in outputs:
        write_results(path, rows, meta)
    return outputs


def prepare_device(device, tag):
    """Readies torch for a run on ``device`` and returns it, or None (with a message) when
    ``cuda`` finds no GPU. On the CPU, inductor compiles in this process: no compile-worker
    pool spinning beside the timed loops on a small host."""
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        print(f"[{tag}] --device cuda: no CUDA device visible to torch", file=sys.stderr)
        return None
    if device == "cpu":
        import torch._inductor.config as inductor_config
        inductor_config.compile_threads = 1
    return torch


def timer_description(cfg):
    """How this run timed, for the metadata."""
    if cfg.cuda:
        return {"cold": f"CUDA events around each call, {FLUSH_BYTES >> 20} MB buffer written between "
                        f"calls and L2's persisting lines demoted, then a spin of twice the call's host time "
                        f"(at least {SPIN_MIN_US:g} us), median over {cfg.cold['rep']} ms of calls",
                "hot": f"CUDA graph of {cfg.hot['calls']} calls, median of {cfg.hot['replays']} replays / calls "
                       f"(fewer calls, then replays, when they would take over {cfg.hot['budget_ms']} ms at the "
                       f"cold time), L2's persisting lines demoted before the timed replays",
                "rounds": cfg.rounds}
    return {"loop": f"perf_counter loop of ~{cfg.loop['round_s']} s per impl, impls interleaved, "
                    f"median of {cfg.loop['rounds']} rounds",
            "rounds": cfg.loop["rounds"],
            "recheck": (f"where an impl beat tileops: tileops, those impls and the copy timed again, "
                        f"~{CPU_RECHECK['round_s']} s loops, median of {CPU_RECHECK['rounds']} rounds; those "
                        f"numbers stand (the first pass: us_first)") if cfg.recheck else None}


def main(argv=None):
    """``python -m tileops.bench`` (the same as ``python -m tileops bench``)."""
    ap = add_arguments(argparse.ArgumentParser(prog="python -m tileops bench",
                                               description=__doc__.splitlines()[0]))
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
