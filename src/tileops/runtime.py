"""The Python face of the C CUDA runtime: loading, sources, builds with logging, streams.

libcuda and libnvrtc are opened by the C core on first CUDA use. NVRTC is looked for in
the NVIDIA wheel that a CUDA build of torch installs (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib),
which we hand to the core as a hint; $TILEOPS_NVRTC overrides it. What the core could not
honour (a TILEOPS_NVRTC it passed over, a disk cache folder it refused) is turned into one
TileOpsWarning each (errors.warn_core_notes)."""
from __future__ import annotations

import contextlib
import functools
import glob
import logging
import os
import re
import threading

import torch

from . import _C, __version__
from .errors import NotReadyDuringCaptureError, warn_core_notes

log = logging.getLogger("tileops.runtime")

CUDA_SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda")
_lock = threading.Lock()


_pdl_on = True   # set_pdl's setting (the core's launch mask is written only by set_pdl)


def set_pdl(on: bool) -> bool:
    """Whether the kernels built with pdl=True are launched with programmatic dependent
    launch (process-wide, from the next launch on; they compute the same bits either way).
    Returns the previous setting. TILEOPS_PDL=0 in the environment turns it off at import."""
    global _pdl_on
    _pdl_on = bool(on)
    return bool(_C.cuda_set_launch_mask(_C.LAUNCH_PDL if on else 0) & _C.LAUNCH_PDL)


def pdl_enabled() -> bool:
    """set_pdl's current setting."""
    return _pdl_on


@contextlib.contextmanager
def pdl(on: bool):
    """set_pdl(on) for the block, the previous setting restored after it (a CUDA graph
    captured inside keeps the block's launches)."""
    was = set_pdl(on)
    try:
        yield
    finally:
        set_pdl(was)


if os.environ.get("TILEOPS_PDL", "1").strip(" \t\n") == "0":
    set_pdl(False)
_loaded = False


def nvrtc_hint() -> str | None:
    """The lib folder of an installed NVIDIA NVRTC wheel, if any."""
    try:
        import nvidia  # namespace package of the NVIDIA wheels
    except ImportError:
        return None
    for root in list(getattr(nvidia, "__path__", [])):
        for sub in ("cu13/lib", "cuda_nvrtc/lib", "cu12/lib"):
            d = os.path.join(root, sub)
            if glob.glob(os.path.join(d, "libnvrtc.so*")):
                return d
    return None


def ensure_loaded():
    """Opens libcuda and libnvrtc once; raises LibraryError naming what is missing."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        _C.cuda_set_version(__version__)
        try:
            _C.cuda_load(nvrtc_hint())
        finally:
            warn_core_notes(stacklevel=3)
        _C.cuda_cache_state()  # opens and checks the disk cache folder: a refused one says so now
        warn_core_notes(stacklevel=3)
        _loaded = True


# The CUDA C sources of a source checkout: csrc/ops/<family>/<file>. An installed package
# carries a copy of them under CUDA_SOURCE_DIR/<family>/<file> (setup.py makes it).
CHECKOUT_SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "csrc", "ops")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*(?://.*|/\*.*\*/[ \t]*)?$')


def source_path(name: str) -> str:
    """Where the source `name` is read from: "<family>/<file>" (e.g. "norm/rms_norm.cu")
    from csrc/ops/ in a source checkout (the truth there: the package copy is made at
    install time and may be older), else from the package copy; an absolute path (the
    lab kernels and probes under dev/) as it is."""
    if os.path.isabs(name):
        return name
    path = os.path.normpath(os.path.join(CHECKOUT_SOURCE_DIR, name))
    if os.path.exists(path):
        return path
    return os.path.join(CUDA_SOURCE_DIR, name)


def _splice(path: str, seen: set, chain: tuple) -> list:
    """The lines of `path` with each `#include "<file>"` line replaced by that file's lines
    (from path's folder, or "../common/<file>" from the family-neutral sibling folder
    common/, recursively); a file already spliced is left out the second time."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        where = f" (included from {chain[-1]})" if chain else ""
        raise FileNotFoundError(f"CUDA source {path} not found{where}") from None
    seen.add(path)
    folder, here = os.path.dirname(path), os.path.basename(path)
    out = []
    for i, line in enumerate(lines):
        m = _INCLUDE.match(line)
        if not m:
            out.append(line)
            continue
        inc = os.path.normpath(os.path.join(folder, m.group(1)))
        if os.path.dirname(inc) not in (folder, os.path.join(os.path.dirname(folder), "common")) \
                or not os.path.isfile(inc):
            raise FileNotFoundError(f'{path}:{i + 1}: #include "{m.group(1)}": no such file in '
                                    f"{folder} or ../common (a CUDA source includes only files of its own "
                                    f"folder and of the family-neutral common/)")
        if inc in seen:
            out.append(f"// {line.strip()} (spliced above)")
            continue
        # #line keeps NVRTC's messages pointing at the file and line they come from
        out.append(f'#line 1 "{m.group(1)}"')
        out.extend(_splice(inc, seen, chain + (path,)))
        out.append(f'#line {i + 2} "{here}"')
    return out


@functools.lru_cache(maxsize=None)
def source(name: str) -> str:
    """Text of a CUDA C source ("<family>/<file>", see source_path), its `#include "x.cuh"`
    lines replaced by those files' text, so NVRTC needs no include path and the build's
    cache key (a hash of this text) covers every included file."""
    return "\n".join(_splice(source_path(name), set(), ()))


@functools.lru_cache(maxsize=None)
def device_attributes(index: int) -> dict:
    ensure_loaded()
    attrs = dict(_C.cuda_device_attributes(index))
    attrs["arch"] = _C.cuda_device_arch(index)
    return attrs


def reset_persisting_l2(index: int) -> None:
    """Demotes the L2 lines device `index` holds with persisting priority (a kernel
    torch.compile made leaves part of its input so, session 39; they outlive any amount
    of ordinary writes). Takes effect when it returns, not in stream order: synchronize first.
    The bench's timers call it so that no impl reads what an earlier one pinned."""
    ensure_loaded()
    _C.cuda_reset_persisting_l2(index)


def current_stream(index: int) -> int:
    """torch's current stream on device `index`, as a raw CUstream handle."""
    return torch._C._cuda_getCurrentRawStream(index)


def build(device_index: int, source_name: str, kernel_name: str, options, arg_format: str, *,
          pdl: bool = False) -> int:
    """Compiles (or finds) a kernel; logs compiles at INFO so a first call never looks hung.
    Refuses (NotReadyDuringCaptureError) when a build is needed while torch's current stream
    on that device is capturing.

    pdl: the kernel is launched with programmatic dependent launch (it may start while the
    stream's previous kernel runs: its launch overlaps that kernel's tail) where the device
    (sm_90+) and driver can, unless set_pdl(False) (TILEOPS_PDL=0); only for a kernel that executes
    griddepcontrol.wait (csrc/ops/common: tileops_grid_wait) before it touches anything an
    earlier kernel of the stream writes or reads."""
    ensure_loaded()
    stream = current_stream(device_index)
    handle, info = _C.cuda_build(device_index, source(source_name), kernel_name, tuple(options),
                                 arg_format, stream)
    if pdl:
        _C.cuda_kernel_set_launch_flags(handle, _C.LAUNCH_PDL)
    warn_core_notes(stacklevel=3)  # e.g. an arch folder of the disk cache refused
    if info["nvrtc_ran"]:
        log.info("tileops: compiled %s (%s) for cuda:%d in %.1f ms", kernel_name, " ".join(options),
                 device_index, info["compile_ms"])
    elif info["disk_hit"]:
        log.info("tileops: loaded %s from the disk cache for cuda:%d in %.1f ms", kernel_name,
                 device_index, info["total_ms"])
    return handle


def build_unless_capturing(device_index: int, source_name: str, kernel_name: str, options, arg_format: str, *,
                           pdl: bool = False):
    """build(), or None where it refuses because torch's stream on that device is being
    captured (NotReadyDuringCaptureError): for an optional build, a faster one of the same
    bits, whose caller launches the build it already has until this one is made outside a
    capture (the gated activations' element build, paged decode's cluster build)."""
    try:
        return build(device_index, source_name, kernel_name, options, arg_format, pdl=pdl)
    except NotReadyDuringCaptureError:
        return None


def stats() -> dict:
    return dict(_C.cuda_stats())
