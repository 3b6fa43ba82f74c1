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
from ..._dtypes import CODE, DTYPE
from ..base import Kernel, KernelCall, KernelInterface

# CPU: rows whose bytes fit comfortably in L2 take the two-pass ROW kernel; longer rows
# convert once into an fp32 scratch (ON_CHIP) while the scratch fits in L2; beyond that,
# STREAMING. (C enum tileops_rms_norm_variant_t.)
CPU_ROW, CPU_ON_CHIP, CPU_STREAMING = 0, 1, 2
CPU_ROW_MAX_BYTES = 64 * 1024
CPU_SCRATCH_MAX_BYTES = 1024 * 1024

# CUDA: launch shapes follow the comment at the top of csrc/cuda/norm.cu.
CUDA_SOURCE = "norm.cu"
CUDA_ARG_FORMAT = "pppqqqf"
CUDA_REGISTER_MAX_N = 32768             # the register kernel holds rows up to this length
CUDA_KERNEL_CODE = {"tileops_rms_norm": 0, "tileops_rms_norm_on_chip": 1, "tileops_rms_norm_streaming": 2}
GRID_MAX = 2**31 - 1
# Outputs get the strides the fake declares (torch.empty's): empty_like alone would copy
# odd strides of size-1 dimensions from a contiguous x.
_CONTIGUOUS = torch.contiguous_format
# The allocators inductor's generated wrappers call (plain-tuple size and stride, dtype;
# CUDA: on the current device): no dispatcher round trip, ~0.4 us less per call than
# empty_like on this CPU machine. Used for x of shape (rows, n) (strides (n, 1), the
# build's dtype); other shapes, other current devices and torch builds without them take
# empty_like.
_guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
_EMPTY_CPU = getattr(_guards, "_empty_strided_cpu", None)
_EMPTY_CUDA = getattr(_guards, "_empty_strided_cuda", None)
_CURRENT_CUDA_DEVICE = getattr(torch._C, "_cuda_getDevice", None)


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


def _groups(n: int, elem: int) -> int:
    """16-byte groups in a row of n elements of elem bytes (the last may be partial)."""
    return -(-n // (16 // elem))


def _on_chip_threads(groups: int) -> int:
    return 512 if groups <= 4096 else 1024


def _on_chip_fits(call: KernelCall) -> bool:
    g = _groups(_row_length(call), call.inputs["x"].dtype.itemsize)
    limit = runtime.device_attributes(call.device.index or 0)["max_shared_per_block"]
    return g * 16 + _on_chip_threads(g) // 4 <= limit


def _cpu_identity(kind: int, call: KernelCall):
    return ("cpu", kind, CODE[call.inputs["x"].dtype], _row_length(call),
            call.inputs["weight"] is not None, _eps(call))


def _build_cpu(identity):
    _, variant, dtype, n, _has_weight, eps = identity
    run = _C.cpu_rms_norm
    y_dtype = DTYPE[dtype]   # x's: the dtype is part of the identity
    stride2 = (n, 1)

    def launch(x, weight=None):
        shape = x.shape
        if _EMPTY_CPU is not None and len(shape) == 2 and shape[1] == n:
            rows = shape[0]
            y = _EMPTY_CPU((rows, n), stride2, y_dtype)
        else:
            rows = x.numel() // n
            y = torch.empty_like(x, memory_format=_CONTIGUOUS)
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


def _pow2ceil(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _cuda_launch_shape(kernel_name: str, n: int, elem: int, sm_count: int):
    """(defines, threads, rows per block or None for a capped grid, dynamic shared bytes)."""
    groups = _groups(n, elem)
    if kernel_name == "tileops_rms_norm":
        rt = min(1024, _pow2ceil(-(-groups // 4)))
        threads = max(rt, 128)
        # at least 1024 threads resident per SM (<= 64 registers): measured on the H200,
        # 2048x8192 cold 22.2 -> 21.0 us, hot 18.3 -> 16.1 (benchmarks/NOTES.md)
        return (f"-DTILEOPS_ROW_THREADS={rt}", f"-DTILEOPS_MIN_BLOCKS={max(1, 1024 // threads)}"), \
            threads, threads // rt, 0, None
    if kernel_name == "tileops_rms_norm_on_chip":
        return (), _on_chip_threads(groups), 1, groups * 16, None
    return (), 1024, 1, 0, sm_count


def cuda_options(kernel_name: str, dtype: int, n: int, has_weight: bool, vec: int, threads: int) -> tuple:
    """The defines every norm.cu build takes (the register kernel adds its row threads and
    register cap; benchmarks/sweep_norm.py and the GPU tests add tuning defines)."""
    return (f"-DTILEOPS_KERNEL={CUDA_KERNEL_CODE[kernel_name]}", f"-DTILEOPS_DTYPE={dtype}",
            f"-DTILEOPS_N={n}", f"-DTILEOPS_HAS_WEIGHT={int(has_weight)}", f"-DTILEOPS_VEC={vec}",
            f"-DTILEOPS_THREADS={threads}")


def cuda_specialisation(kernel_name: str, dtype: int, n: int, has_weight: bool, vec: int, sm_count: int):
    """The NVRTC defines and launch shape of one build: (options, threads, rows per block,
    dynamic shared bytes, grid cap or None). Pure, so tests can compile every
    specialisation the selection rules can produce with nvcc, without a GPU."""
    elem = DTYPE[dtype].itemsize
    extra, threads, rows_per_block, shared, grid_cap = _cuda_launch_shape(kernel_name, n, elem, sm_count)
    options = cuda_options(kernel_name, dtype, n, has_weight, vec, threads) + extra
    return options, threads, rows_per_block, shared, grid_cap


def _build_cuda(identity):
    _, dev, kernel_name, dtype, n, has_weight, vec, eps = identity
    sm_count = runtime.device_attributes(dev)["sm_count"]
    options, threads, rows_per_block, shared, grid_cap = cuda_specialisation(
        kernel_name, dtype, n, has_weight, vec, sm_count)
    handle = runtime.build(dev, CUDA_SOURCE, kernel_name, options, CUDA_ARG_FORMAT)
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream   # what runtime.current_stream calls
    cap = min(grid_cap or GRID_MAX, GRID_MAX)
    y_dtype = DTYPE[dtype]   # x's: the dtype is part of the identity
    stride2 = (n, 1)
    current_device = _CURRENT_CUDA_DEVICE if _EMPTY_CUDA is not None else None

    def launch(x, weight=None):
        shape = x.shape
        if current_device is not None and len(shape) == 2 and shape[1] == n and current_device() == dev:
            rows = shape[0]
            y = _EMPTY_CUDA((rows, n), stride2, y_dtype)
        else:
            rows = x.numel() // n
            y = torch.empty_like(x, memory_format=_CONTIGUOUS)
        if rows:
            grid = min(-(-rows // rows_per_block), cap)
            launch_raw(handle, grid, 1, 1, threads, 1, 1, shared, stream_of(dev),
                       x.data_ptr(), 0 if weight is None else weight.data_ptr(), y.data_ptr(),
                       rows, n, n, eps)
        return y
    return launch


class RMSNormFwdInterface(KernelInterface):
    """rms_norm: y = x * rsqrt(mean(x^2 over the row) + eps) * weight, rows of
    prod(normalized_shape) elements, x and weight contiguous."""
    name = "rms_norm"
    implementations = ("rms_norm", "rms_norm_on_chip", "rms_norm_streaming")
    launchable = "launch(x, weight=None) -> y (new, contiguous, x's shape and dtype)"


class _RMSNormImplementation(Kernel):
    """What the three share: the device check, the identity and the build, per device.
    Each implementation states the row lengths it serves in _cpu_refusal / _cuda_refusal."""
    interface = "rms_norm"
    cpu_variant = CPU_STREAMING
    cuda_kernel = "tileops_rms_norm_streaming"

    @classmethod
    def refusal(cls, call):
        why = super().refusal(call)
        if why:
            return why
        return cls._cpu_refusal(call) if call.device.type == "cpu" else cls._cuda_refusal(call)

    @classmethod
    def _cpu_refusal(cls, call):
        return None

    @classmethod
    def _cuda_refusal(cls, call):
        return None

    @classmethod
    def entry_for(cls, call):
        if call.device.type == "cpu":
            return _cpu_identity(cls.cpu_variant, call)
        return _cuda_identity(cls.cuda_kernel, call)

    @classmethod
    def build(cls, identity):
        n = identity[3] if identity[0] == "cpu" else identity[4]
        if n == 0:  # empty rows: nothing to compute, no kernel to build (N >= 1 in C)
            return _empty_rows
        return _build_cpu(identity) if identity[0] == "cpu" else _build_cuda(identity)


def _empty_rows(x, weight=None):
    return torch.empty_like(x, memory_format=_CONTIGUOUS)


class RMSNormKernel(_RMSNormImplementation):
    """Row in registers (CUDA) / row in cache, two passes (CPU)."""
    specialised = True
    cpu_variant = CPU_ROW
    cuda_kernel = "tileops_rms_norm"

    @classmethod
    def _cpu_refusal(cls, call):
        if _row_bytes(call) > CPU_ROW_MAX_BYTES:
            return f"row of {_row_bytes(call)} bytes exceeds {CPU_ROW_MAX_BYTES}"
        return None

    @classmethod
    def _cuda_refusal(cls, call):
        if _row_length(call) > CUDA_REGISTER_MAX_N:
            return f"row of {_row_length(call)} elements exceeds the register kernel's {CUDA_REGISTER_MAX_N}"
        return None


class RMSNormOnChipKernel(_RMSNormImplementation):
    """Row staged once in shared memory (CUDA) / in an fp32 scratch (CPU)."""
    specialised = True
    cpu_variant = CPU_ON_CHIP
    cuda_kernel = "tileops_rms_norm_on_chip"

    @classmethod
    def _cpu_refusal(cls, call):
        if _row_bytes(call) <= CPU_ROW_MAX_BYTES:
            return f"row of {_row_bytes(call)} bytes is served by RMSNormKernel"
        if _row_length(call) * 4 > CPU_SCRATCH_MAX_BYTES:
            return f"fp32 scratch of {_row_length(call) * 4} bytes exceeds {CPU_SCRATCH_MAX_BYTES}"
        return None

    @classmethod
    def _cuda_refusal(cls, call):
        if _row_length(call) <= CUDA_REGISTER_MAX_N:
            return f"row of {_row_length(call)} elements is served by RMSNormKernel"
        if not _on_chip_fits(call):
            return f"row of {_row_bytes(call)} bytes exceeds the shared memory of {call.device}"
        return None


class RMSNormStreamingKernel(_RMSNormImplementation):
    """Any row length: sum of squares, then the scaled write, each a pass over memory."""
    specialised = False
