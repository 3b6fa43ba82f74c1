"""The three implementations of the `rms_norm` interface.

  RMSNormKernel           rows short enough to live in registers (CUDA) / in L1-L2 (CPU)
  RMSNormOnChipKernel     longer rows staged in shared memory (CUDA) / an fp32 scratch (CPU)
  RMSNormStreamingKernel  any row: two passes over memory; the general implementation

The two specialised ones split the row lengths between them with no overlap, so exactly
one implementation serves any call (Kernel selection: specialised over general). CPU
builds are C functions of the core (identity: dtype, row length, weight, eps); CUDA builds
are NVRTC compiles of csrc/cuda/norm.cu specialised by -D defines (identity adds the device,
the vector width the pointers' alignment allows, and the block size)."""
from __future__ import annotations

import torch

from ... import _C, runtime
from ..._dtypes import CODE
from ..base import Kernel, KernelCall

# CPU: rows whose bytes fit comfortably in L2 take the two-pass ROW kernel; longer rows
# convert once into an fp32 scratch (ON_CHIP) while the scratch fits in L2; beyond that,
# STREAMING. (C enum tileops_rms_norm_variant_t.)
CPU_ROW, CPU_ON_CHIP, CPU_STREAMING = 0, 1, 2
CPU_ROW_MAX_BYTES = 64 * 1024
CPU_SCRATCH_MAX_BYTES = 1024 * 1024

# CUDA (see the launch-shape comment at the top of csrc/cuda/norm.cu).
CUDA_SOURCE = "norm.cu"
CUDA_ARG_FORMAT = "pppqqqf"
CUDA_REGISTER_MAX_BYTES = 32 * 1024     # row bytes the register kernel holds
CUDA_SMEM_RESERVE = 1024                # bytes of static shared memory the kernels use


def _row_length(call: KernelCall) -> int:
    n = 1
    for d in call.params["normalized_shape"]:
        n *= int(d)
    return n


def _eps(call: KernelCall) -> float:
    eps = call.params["eps"]
    return float(torch.finfo(call.inputs["x"].dtype).eps) if eps is None else float(eps)


def _row_bytes(call: KernelCall) -> int:
    return _row_length(call) * call.inputs["x"].dtype.itemsize


def _cuda_smem_limit(call: KernelCall) -> int:
    return runtime.device_attributes(call.device.index or 0)["max_shared_per_block"] - CUDA_SMEM_RESERVE


def _cpu_identity(kind: int, call: KernelCall):
    return ("cpu", kind, CODE[call.inputs["x"].dtype], _row_length(call),
            call.inputs["weight"] is not None, _eps(call))


def _build_cpu(identity):
    _, variant, dtype, n, _has_weight, eps = identity
    run = _C.cpu_rms_norm

    def launch(x, weight=None):
        y = torch.empty_like(x)
        rows = x.numel() // n if n else 0
        run(x.data_ptr(), 0 if weight is None else weight.data_ptr(), y.data_ptr(),
            rows, n, n, n, eps, dtype, variant)
        return y
    return launch


def _cuda_identity(kernel_name: str, call: KernelCall):
    x, w = call.inputs["x"], call.inputs["weight"]
    n = _row_length(call)
    size = x.dtype.itemsize
    aligned = x.aligned16 and (w is None or w.aligned16) and (n * size) % 16 == 0
    vec = 16 // size if aligned else 1
    return ("cuda", call.device.index or 0, kernel_name, CODE[x.dtype], n, w is not None, vec, _eps(call))


def _threads_for(n: int, vec: int, kernel_name: str) -> int:
    """Block size: enough threads that each holds a few vectors of the row."""
    if kernel_name == "tileops_rms_norm":
        per_thread_target = 4  # vectors per thread kept in registers
        t = -(-n // (vec * per_thread_target))
        t = max(32, min(1024, ((t + 31) // 32) * 32))
        return t
    return 1024 if n >= 16384 else 512


def _build_cuda(identity):
    _, dev, kernel_name, dtype, n, has_weight, vec, eps = identity
    threads = _threads_for(n, vec, kernel_name)
    elem = {0: 4, 1: 2, 2: 2}[dtype]
    shared = n * 4 if kernel_name == "tileops_rms_norm_on_chip" and dtype == 0 else (
        n * elem if kernel_name == "tileops_rms_norm_on_chip" else 0)
    options = (f"-DTILEOPS_DTYPE={dtype}", f"-DTILEOPS_N={n}", f"-DTILEOPS_HAS_WEIGHT={int(has_weight)}",
               f"-DTILEOPS_VEC={vec}", f"-DTILEOPS_THREADS={threads}")
    handle = runtime.build(dev, CUDA_SOURCE, kernel_name, options, CUDA_ARG_FORMAT)
    sm_count = runtime.device_attributes(dev)["sm_count"]
    launch_raw = _C.cuda_launch
    stream_of = runtime.current_stream
    max_grid = sm_count * (32 if kernel_name == "tileops_rms_norm" else 8)

    def launch(x, weight=None):
        y = torch.empty_like(x)
        rows = x.numel() // n
        if rows:
            launch_raw(handle, min(rows, max_grid), 1, 1, threads, 1, 1, shared, stream_of(dev),
                       x.data_ptr(), 0 if weight is None else weight.data_ptr(), y.data_ptr(),
                       rows, n, n, eps)
        return y
    return launch


class RMSNormKernel(Kernel):
    """Row in registers (CUDA) / row in cache, two passes (CPU)."""
    interface = "rms_norm"
    specialised = True

    @classmethod
    def refusal(cls, call):
        why = super().refusal(call)
        if why:
            return why
        limit = CPU_ROW_MAX_BYTES if call.device.type == "cpu" else CUDA_REGISTER_MAX_BYTES
        if _row_bytes(call) > limit:
            return f"row of {_row_bytes(call)} bytes exceeds {limit}"
        return None

    @classmethod
    def entry_for(cls, call):
        if call.device.type == "cpu":
            return _cpu_identity(CPU_ROW, call)
        return _cuda_identity("tileops_rms_norm", call)

    @classmethod
    def build(cls, identity):
        return _build_cpu(identity) if identity[0] == "cpu" else _build_cuda(identity)


class RMSNormOnChipKernel(Kernel):
    """Row staged once in shared memory (CUDA) / in an fp32 scratch (CPU)."""
    interface = "rms_norm"
    specialised = True

    @classmethod
    def refusal(cls, call):
        why = super().refusal(call)
        if why:
            return why
        b = _row_bytes(call)
        if call.device.type == "cpu":
            if b <= CPU_ROW_MAX_BYTES:
                return f"row of {b} bytes is served by RMSNormKernel"
            if _row_length(call) * 4 > CPU_SCRATCH_MAX_BYTES:
                return f"fp32 scratch of {_row_length(call) * 4} bytes exceeds {CPU_SCRATCH_MAX_BYTES}"
            return None
        if b <= CUDA_REGISTER_MAX_BYTES:
            return f"row of {b} bytes is served by RMSNormKernel"
        if b > _cuda_smem_limit(call):
            return f"row of {b} bytes exceeds the shared memory of {call.device}"
        return None

    @classmethod
    def entry_for(cls, call):
        if call.device.type == "cpu":
            return _cpu_identity(CPU_ON_CHIP, call)
        return _cuda_identity("tileops_rms_norm_on_chip", call)

    @classmethod
    def build(cls, identity):
        return _build_cpu(identity) if identity[0] == "cpu" else _build_cuda(identity)


class RMSNormStreamingKernel(Kernel):
    """Any row length: sum of squares, then the scaled write, each a pass over memory."""
    interface = "rms_norm"
    specialised = False

    @classmethod
    def entry_for(cls, call):
        if call.device.type == "cpu":
            return _cpu_identity(CPU_STREAMING, call)
        return _cuda_identity("tileops_rms_norm_streaming", call)

    @classmethod
    def build(cls, identity):
        return _build_cpu(identity) if identity[0] == "cpu" else _build_cuda(identity)
