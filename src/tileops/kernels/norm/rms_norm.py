"""The three implementations of the `rms_norm` interface.

  RMSNormKernel           rows short enough to live in registers (CUDA) / in L1-L2 (CPU)
  RMSNormOnChipKernel     longer rows staged in shared memory (CUDA) / an fp32 scratch (CPU)
  RMSNormStreamingKernel  any row: two passes over memory; the general implementation
  RMSNormCastKernel       cast_before_weight=True only (Hugging Face's rounding, any row):
                          the norm family's row driver (CPU "rms_norm_rows_cast", CUDA
                          rms_norm_rows.cu with -DTILEOPS_CAST_BEFORE_WEIGHT=1)

The two specialised ones split the row lengths between them with no overlap, so exactly
one implementation serves any call (Kernel selection: specialised over general); a call
with cast_before_weight=True is refused by all three and served by the fourth. CPU
builds are C functions of the core (identity: dtype, row length, weight, eps); CUDA builds
are NVRTC compiles of csrc/ops/norm/rms_norm.cu specialised by -D defines (identity adds the device,
the vector width the pointers' alignment allows, and the block size)."""
from __future__ import annotations

import torch

from ... import _C, runtime
from ..._dtypes import CODE, DTYPE
from ..base import Kernel, KernelCall, KernelInterface, identity_type
from .cuda_rows import block_threads, min_blocks, row_threads
from .rows import NormRowsKernel, pointer_guard, row_length

# CPU: rows whose bytes fit comfortably in L2 take the two-pass ROW kernel; longer rows
# convert once into an fp32 scratch (ON_CHIP) while the scratch fits in L2; beyond that,
# STREAMING. (C enum tileops_rms_norm_variant_t, csrc/ops/norm/rms_norm.h.)
CPU_ROW, CPU_ON_CHIP, CPU_STREAMING = 0, 1, 2
CPU_ROW_MAX_BYTES = 64 * 1024
CPU_SCRATCH_MAX_BYTES = 1024 * 1024

# CUDA: launch shapes follow the comment at the top of csrc/ops/norm/rms_norm.cu.
CUDA_SOURCE = "norm/rms_norm.cu"
CUDA_ARG_FORMAT = "pppqqqf"
CUDA_REGISTER_MAX_N = 32768             # the register kernel holds rows up to this length
CUDA_KERNEL_CODE = {"tileops_rms_norm": 0, "tileops_rms_norm_on_chip": 1, "tileops_rms_norm_streaming": 2}
GRID_MAX = 2**31 - 1

# Build identities: everything the built code depends on, read back by name.
CpuBuild = identity_type("CpuRMSNormBuild", "variant dtype n has_weight eps")
CudaBuild = identity_type("CudaRMSNormBuild", "device kernel_name dtype n has_weight vec eps")


def _row_bytes(call: KernelCall) -> int:
    return row_length(call) * call.inputs["x"].dtype.itemsize


def _groups(n: int, elem: int) -> int:
    """16-byte groups in a row of n elements of elem bytes (the last may be partial)."""
    return -(-n // (16 // elem))


def _on_chip_threads(groups: int) -> int:
    return 512 if groups <= 4096 else 1024


def _on_chip_fits(call: KernelCall) -> bool:
    g = _groups(row_length(call), call.inputs["x"].dtype.itemsize)
    limit = runtime.device_attributes(call.device.index or 0)["max_shared_per_block"]
    return g * 16 + _on_chip_threads(g) // 4 <= limit


def _cpu_identity(variant: int, call: KernelCall):
    return CpuBuild(variant=variant, dtype=CODE[call.dtype("x")], n=row_length(call),
                    has_weight=call.inputs["weight"] is not None, eps=float(call.params["eps"]))


def _build_cpu(b):
    handle = _C.cpu_kernel("rms_norm")[0]
    run = _C.cpu_launch
    n, eps, dtype, variant = b.n, b.eps, b.dtype, b.variant
    # checks what the C kernel relies on (rows.pointer_guard), returns the pointers
    prep = pointer_guard("rms_norm", ("x", "weight", "y"), dtype, n, -1, {"weight": b.has_weight})

    def launch(x, weight, y):
        px, pw, py, rows = prep(x, weight, y)
        run(handle, px, pw, py, rows, n, n, n, eps, dtype, variant)

    def unchecked(x, weight, y):
        run(handle, x.data_ptr(), 0 if weight is None else weight.data_ptr(), y.data_ptr(),
            y.numel() // n, n, n, n, eps, dtype, variant)
    # the same launch as data, for a plan (ops/plans.py): x's, weight's (0 when absent) and
    # y's pointers, rows = y.numel() // n, then the constants
    unchecked.plan_recipe = (handle, ((1, 0), (1, 1), (1, 2), (2, 2, n), (0, n), (0, n), (0, n), (0, eps),
                                      (0, dtype), (0, variant)))
    launch.unchecked = unchecked
    return launch


def _cuda_identity(kernel_name: str, call: KernelCall):
    n = row_length(call)
    size = call.dtype("x").itemsize
    vec = 16 // size if call.aligned16 and (n * size) % 16 == 0 else 1
    return CudaBuild(device=call.device.index or 0, kernel_name=kernel_name, dtype=CODE[call.dtype("x")], n=n,
                     has_weight=call.inputs["weight"] is not None, vec=vec, eps=float(call.params["eps"]))


def _cuda_launch_shape(kernel_name: str, n: int, elem: int, sm_count: int):
    """(defines, threads, rows per block or None for a capped grid, dynamic shared bytes)."""
    groups = _groups(n, elem)
    if kernel_name == "tileops_rms_norm":
        rt = row_threads(groups, 4)
        if groups >= 16:
            # at least 8 threads a row, so a warp's load covers whole 128-byte lines: QK-norm's
            # rows of 128 fp16 (16 groups) take 8 threads of 2 groups, not 4 of 4; measured on
            # an H100 (dev/NOTES.md sessions 33 and 34), 4096 x 8 heads L2-cold 11.36 -> 10.88
            # us, hot 4.24 -> 3.99; 4096 x 32 heads 28.67 -> 28.03, 24.58 -> 24.32
            rt = max(rt, 8)
        threads = block_threads(rt)
        # as many blocks as fit 1024 threads resident per SM (<= 64 registers for power-of-two
        # blocks; an exact split's 224: 4 blocks, 72): measured on the H200, 2048x8192 cold
        # 22.2 -> 21.0 us, hot 18.3 -> 16.1 (dev/NOTES.md)
        return (f"-DTILEOPS_ROW_THREADS={rt}", f"-DTILEOPS_MIN_BLOCKS={min_blocks(threads)}"), \
            threads, threads // rt, 0, None
    if kernel_name == "tileops_rms_norm_on_chip":
        return (), _on_chip_threads(groups), 1, groups * 16, None
    return (), 1024, 1, 0, sm_count


def cuda_options(kernel_name: str, dtype: int, n: int, has_weight: bool, vec: int, threads: int) -> tuple:
    """The defines every rms_norm.cu build takes (the register kernel adds its row threads and
    register cap; dev/sweep_norm.py and the GPU tests add tuning defines)."""
    return (f"-DTILEOPS_KERNEL={CUDA_KERNEL_CODE[kernel_name]}", f"-DTILEOPS_DTYPE={dtype}",
            f"-DTILEOPS_N={n}", f"-DTILEOPS_HAS_WEIGHT={int(has_weight)}", f"-DTILEOPS_VEC={vec}",
            f"-DTILEOPS_THREADS={threads}", "-DTILEOPS_CONTIGUOUS=1")


def cuda_specialisation(kernel_name: str, dtype: int, n: int, has_weight: bool, vec: int, sm_count: int):
    """The NVRTC defines and launch shape of one build: (options, threads, rows per block,
    dynamic shared bytes, grid cap or None). Pure, so tests can compile every
    specialisation the selection rules can produce with nvcc, without a GPU."""
    elem = DTYPE[dtype].itemsize
    extra, threads, rows_per_block, shared, grid_cap = _cuda_launch_shape(kernel_name, n, elem, sm_count)
    options = cuda_options(kernel_name, dtype, n, has_weight, vec, threads) + extra
    return options, threads, rows_per_block, shared, grid_cap


def _build_cuda(b):
    dev, n = b.device, b.n
    sm_count = runtime.device_attributes(dev)["sm_count"]
    options, threads, rows_per_block, shared, grid_cap = cuda_specialisation(
        b.kernel_name, b.dtype, n, b.has_weight, b.vec, sm_count)
    handle = runtime.build(dev, CUDA_SOURCE, b.kernel_name, options, CUDA_ARG_FORMAT, pdl=True)
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream   # what runtime.current_stream calls
    cap = min(grid_cap or GRID_MAX, GRID_MAX)
    eps = b.eps
    prep = pointer_guard("rms_norm", ("x", "weight", "y"), b.dtype, n, dev, {"weight": b.has_weight})

    def launch(x, weight, y):
        px, pw, py, rows = prep(x, weight, y)
        if rows:
            grid = min(-(-rows // rows_per_block), cap)
            launch_raw(handle, grid, 1, 1, threads, 1, 1, shared, stream_of(dev), px, pw, py, rows, n, n, eps)

    def unchecked(x, weight, y):
        rows = y.numel() // n
        if rows:
            grid = min(-(-rows // rows_per_block), cap)
            launch_raw(handle, grid, 1, 1, threads, 1, 1, shared, stream_of(dev),
                       x.data_ptr(), 0 if weight is None else weight.data_ptr(), y.data_ptr(), rows, n, n, eps)
    launch.unchecked = unchecked
    return launch


class RMSNormFwdInterface(KernelInterface):
    """rms_norm: y = x * rsqrt(mean(x^2 over the row) + eps) * weight, rows of
    prod(normalized_shape) elements, x and weight contiguous."""
    name = "rms_norm"
    implementations = ("rms_norm", "rms_norm_on_chip", "rms_norm_streaming", "rms_norm_cast")
    tensors = ("x", "weight", "y")
    launchable = "launch(x, weight or None, y): writes y"


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
        if call.params.get("cast_before_weight"):
            return "cast_before_weight=True is served by RMSNormCastKernel"
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
        if identity.n == 0:  # empty rows: nothing to compute, no kernel to build (N >= 1 in C)
            return _nothing
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)


def _nothing(*tensors):
    return None


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
        if row_length(call) > CUDA_REGISTER_MAX_N:
            return f"row of {row_length(call)} elements exceeds the register kernel's {CUDA_REGISTER_MAX_N}"
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
        if row_length(call) * 4 > CPU_SCRATCH_MAX_BYTES:
            return f"fp32 scratch of {row_length(call) * 4} bytes exceeds {CPU_SCRATCH_MAX_BYTES}"
        return None

    @classmethod
    def _cuda_refusal(cls, call):
        if row_length(call) <= CUDA_REGISTER_MAX_N:
            return f"row of {row_length(call)} elements is served by RMSNormKernel"
        if not _on_chip_fits(call):
            return f"row of {_row_bytes(call)} bytes exceeds the shared memory of {call.device}"
        return None


class RMSNormStreamingKernel(_RMSNormImplementation):
    """Any row length: sum of squares, then the scaled write, each a pass over memory."""
    specialised = False


class RMSNormCastKernel(NormRowsKernel):
    """cast_before_weight=True (Hugging Face's LlamaRMSNorm arithmetic: the normalised value
    rounded to the dtype, then times the weight), any row length: the norm family's row
    driver, built as the row op "rms_norm_rows" with its cast flag."""
    interface = "rms_norm"
    op = "rms_norm_rows"
    specialised = True

    @classmethod
    def refusal(cls, call):
        why = super().refusal(call)
        if why:
            return why
        if not call.params.get("cast_before_weight"):
            return "served by the plain RMSNorm kernels (cast_before_weight=False)"
        return None
