"""The Python face of the C CUDA runtime: loading, sources, builds with logging, streams.

libcuda and libnvrtc are opened by the C core on first CUDA use. NVRTC is looked for in
the NVIDIA wheel that a CUDA build of torch installs (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib),
which we hand to the core as a hint; $TILEOPS_NVRTC overrides it."""
from __future__ import annotations

import functools
import glob
import logging
import os
import threading

import torch

from . import _C, __version__

log = logging.getLogger("tileops.runtime")

CUDA_SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda")
_lock = threading.Lock()
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
        _C.cuda_load(nvrtc_hint())
        _loaded = True


@functools.lru_cache(maxsize=None)
def source(name: str) -> str:
    """Text of a CUDA C source shipped with the package (csrc/cuda/<name>)."""
    # In a source checkout (editable install) csrc/cuda is the truth: the package copy is
    # made at install time and may be older.
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "csrc", "cuda", name)
    if not os.path.exists(path):
        path = os.path.join(CUDA_SOURCE_DIR, name)
    with open(path, encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def device_attributes(index: int) -> dict:
    ensure_loaded()
    attrs = dict(_C.cuda_device_attributes(index))
    attrs["arch"] = _C.cuda_device_arch(index)
    return attrs


def current_stream(index: int) -> int:
    """torch's current stream on device `index`, as a raw CUstream handle."""
    return torch._C._cuda_getCurrentRawStream(index)


def build(device_index: int, source_name: str, kernel_name: str, options, arg_format: str) -> int:
    """Compiles (or finds) a kernel; logs compiles at INFO so a first call never looks hung.
    Refuses (NotReadyDuringCaptureError) when a build is needed while torch's current stream
    on that device is capturing."""
    ensure_loaded()
    stream = current_stream(device_index)
    handle, info = _C.cuda_build(device_index, source(source_name), kernel_name, tuple(options),
                                 arg_format, stream)
    if info["nvrtc_ran"]:
        log.info("tileops: compiled %s (%s) for cuda:%d in %.1f ms", kernel_name, " ".join(options),
                 device_index, info["compile_ms"])
    elif info["disk_hit"]:
        log.info("tileops: loaded %s from the disk cache for cuda:%d in %.1f ms", kernel_name,
                 device_index, info["total_ms"])
    return handle


def stats() -> dict:
    return dict(_C.cuda_stats())
