"""What the dev/ tools share: benchmarks/common.py (timers, inputs, results I/O) on the
import path, the lab kernel source, and where their results go (dev/results/<device>/).

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


def default_out(filename: str) -> Path:
    """dev/results/<device dir>/<filename> (the device dir as benchmarks/common.py names it)."""
    return RESULTS_DIR / common.results_subdir("cuda") / filename
