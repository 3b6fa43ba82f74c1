"""What the dev/ tools share: benchmarks/common.py (timers, inputs, results I/O) on the
import path, the lab kernel source, where their results go (dev/results/<device>/), and
the variant timers' loop (time_interleaved, min_rows).

    import lab
    common = lab.common
    runtime.build(0, lab.LAB_SOURCE, name, opts, arg_format)

The lab source is dev/cuda/rms_norm_lab.cu (every experiment build; its default builds are
the shipped csrc/ops/norm/rms_norm.cu's cubins), passed to tileops.runtime by its absolute
path."""
from __future__ import annotations

import sys
from pathlib import Path

DEV_DIR = Path(__file__).resolve().parent
_BENCH = str(DEV_DIR.parent / "benchmarks")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)

import common  # noqa: E402  (benchmarks/common.py)

LAB_SOURCE = str(DEV_DIR / "cuda" / "rms_norm_lab.cu")
RESULTS_DIR = DEV_DIR / "results"


def appended_source(shipped: str, lab_file: str) -> str:
    """The path of a temporary .cu: the shipped source `shipped` (a name tileops.runtime
    knows, e.g. "sampling/softmax.cu") as spliced for NVRTC, then dev/cuda/`lab_file`, a lab
    kernel that uses the shipped file's helpers and defines (the softmax rows and register
    labs, the RoPE persistent lab). runtime.build takes the path."""
    import tempfile

    from tileops import runtime
    text = runtime.source(shipped) + "\n" + (DEV_DIR / "cuda" / lab_file).read_text()
    path = Path(tempfile.mkdtemp(prefix="lab_")) / lab_file
    path.write_text(text)
    return str(path)


def default_out(filename: str) -> Path:
    """dev/results/<device dir>/<filename> (the device dir as benchmarks/common.py names it)."""
    return RESULTS_DIR / common.results_subdir("cuda") / filename


def time_interleaved(fns: dict, rounds: int = 2) -> dict:
    """{name: {"hot": [us, one per round], "cold": [...]}} of each callable of `fns` (name ->
    fn): hot, common.cuda_hot_us (a CUDA graph of 50 calls), and cold, common.cuda_cold_us
    (10 warm-up calls, 40 timed, 256 MB written before each), in `rounds` interleaved rounds
    (every other one in reverse order, so no name always runs first)."""
    names = list(fns)
    times = {k: {"hot": [], "cold": []} for k in names}
    for rnd in range(rounds):
        for k in (names if rnd % 2 == 0 else names[::-1]):
            times[k]["hot"].append(common.cuda_hot_us(fns[k]))
            times[k]["cold"].append(common.cuda_cold_us(fns[k], warmup=10, rep=40))
    return times


def min_rows(times: dict, workload: str, label: str, width: int, digits: int = 8) -> list:
    """One result row per name of `times` (time_interleaved's): workload, dtype float16,
    impl, and the minimum over the rounds hot and cold, each printed as "<label> <impl>
    hot <us> cold <us>" (the impl padded to `width`, the times to `digits`)."""
    rows = []
    for k, t in times.items():
        row = {"workload": workload, "dtype": "float16", "impl": k, "hot_us": min(t["hot"]), "cold_us": min(t["cold"])}
        rows.append(row)
        print(f"{label} {k:{width}s} hot {row['hot_us']:{digits}.2f}  cold {row['cold_us']:{digits}.2f}", flush=True)
    return rows
