"""Process settings read from the environment at `import tileops`:

  TILEOPS_LOG_LEVEL    DEBUG, INFO, WARNING, ERROR, CRITICAL (or a number): the level of
                       the "tileops" logger, which then writes to stderr on its own handler
                       (kernel builds and disk-cache loads at INFO, each op's kernel
                       selection and instance rebuilds at DEBUG/INFO). Unset: logging as the
                       application configures it.
  TILEOPS_NUM_THREADS  a fixed thread count for the CPU kernels' pool (read by the C core).
                       Unset: the pool follows torch.get_num_threads(), so
                       torch.set_num_threads(n) takes effect on the next CPU call."""
from __future__ import annotations

import logging
import os
import sys
import warnings

from . import _C
from .errors import TileOpsWarning

LOGGER = logging.getLogger("tileops")
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_handler: logging.Handler | None = None


def log_level_from(value: str | None) -> int | None:
    """The logging level a TILEOPS_LOG_LEVEL value names, or None (unset or empty).
    Raises ValueError for anything else."""
    v = (value or "").strip()
    if not v:
        return None
    if v.upper() in _LEVELS:
        return getattr(logging, v.upper())
    if v.isascii() and v.isdigit():   # (str.isdigit takes '²', which int() refuses)
        return int(v)
    raise ValueError(f"TILEOPS_LOG_LEVEL={value!r} is not a level ({', '.join(_LEVELS)} or a number)")


_SWITCHES = ("TILEOPS_PDL", "TILEOPS_CPU_HUGEPAGES")   # on unless 0


def check_switches() -> None:
    """One TileOpsWarning for each on/off setting that is neither 0 nor 1 (nor unset or
    blank): such a value leaves it on, as unset does (found by review: 'off' or 'false'
    silently kept it on)."""
    for name in _SWITCHES:
        v = os.environ.get(name, "").strip(" \t\n")
        if v not in ("", "0", "1"):
            warnings.warn(f"tileops: {name}={os.environ[name]!r} is neither 0 (off) nor 1 (on); it stays on, as "
                          f"unset", TileOpsWarning, stacklevel=3)


def configure_logging(value: str | None = None) -> int | None:
    """Applies TILEOPS_LOG_LEVEL (or `value`): sets the level of the "tileops" logger and
    gives it one stderr handler of its own. A value that is no level is one TileOpsWarning
    and changes nothing. Returns the level set, or None."""
    global _handler
    raw = os.environ.get("TILEOPS_LOG_LEVEL") if value is None else value
    try:
        level = log_level_from(raw)
    except ValueError as e:
        warnings.warn(f"tileops: {e}; ignored", TileOpsWarning, stacklevel=3)
        return None
    if level is None:
        return None
    LOGGER.setLevel(level)
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        LOGGER.addHandler(_handler)
        LOGGER.propagate = False   # asked for on stderr: not a second time through the root logger
    return level


def _num_threads_fixed() -> bool:
    """Whether TILEOPS_NUM_THREADS fixes the count: a whole number >= 1 (a huge one is
    capped by the core). Unset, blank or anything else (the core says so at import) leaves
    the count following torch."""
    import re
    # strtol's leading blanks and sign, the core's trailing ones
    value = os.environ.get("TILEOPS_NUM_THREADS", "")
    return re.fullmatch(r"[ \t\n\v\f\r]*\+?0*[1-9][0-9]*[ \t\n]*", value, re.ASCII) is not None


def configure_threads() -> str:
    """The CPU kernels' thread count follows torch.get_num_threads() unless
    TILEOPS_NUM_THREADS is set (the core reads it, and says at import if it cannot honour
    it). Returns where the count comes from."""
    if _num_threads_fixed():
        _C.cpu_follow_threads(None)
        return "TILEOPS_NUM_THREADS"
    import torch
    _C.cpu_follow_threads(torch.get_num_threads)
    return "torch.get_num_threads()"


def thread_source() -> str:
    """Where the CPU kernels' thread count comes from now."""
    if _C.cpu_threads_followed() is not None:
        return "torch.get_num_threads()"
    if _num_threads_fixed():
        return "TILEOPS_NUM_THREADS"
    return "set by hand (tileops._C.cpu_set_num_threads)"
