"""The CUDA side of the norm family's row ops: which kernel of csrc/ops/norm/<op>.cu (over
norm_rows.cuh) a build compiles, with which defines and launch shape, and the launch.

    specialisation(op, dtype_code, n, has_weight, has_bias, vec, sm_count, cast=False)  pure: no GPU
    vec_for(dtype_code, n, aligned16)                                        vector width
    build(device_index, op, dtype_code, n, has_weight, has_bias, vec, eps, cast=False) -> launch
    launch(x, residual, weight, bias, y, residual_out)   tensors or None, contiguous, allocated

Launch rules (norm_rows.cuh's top comment says why): rows whose 16-byte groups fit 4 per
thread of at most 1024 threads (N <= 16384 float32, 32768 float16/bfloat16) take the
register kernel, RT = min(1024, pow2ceil(ceil(NG / V))) threads per row with V = 4 groups
per thread, or V = 2 for the ops with a residual (the fused adds: two rows in registers
per thread; measured on the H200, dev/NOTES.md session 5: 1x4096 fp16 1.92 -> 1.74 us hot,
4096x8192 68.4 -> 66.3); with V = 4, where RT leaves some threads a partial share, the
exact split of row_threads instead; block_threads(RT) threads per block, a register cap
of 1024 resident threads per SM, grid = ceil(rows / rows per block); longer rows take the
long-row kernel, 1024 threads, one row per block, grid = min(rows, sm_count). Neither depends on the row
count, so a row's bits never do. Where weight and bias do not fit in registers (LayerNorm
with both), a second build of the register kernel stages them in shared memory
(`decode_options`: the same bits) and serves grids of at most one block per SM: 1x3584
fp16 LayerNorm 2.31 -> 1.96 us hot on the H200 at 128 threads of 3.5 groups (since the
exact split, 224 threads of 2 hold both in registers at 3584; 4096 keeps the decode build)."""
from __future__ import annotations

import functools

ARG_FORMAT = "ppppppqf"          # x, residual, weight, bias, y, residual_out, rows, eps
REGISTER_MAX_VPT = 4             # most groups per thread the launch rule gives the register kernel
RESIDUAL_VPT = 2                 # the rule's groups per thread for the ops with a residual
MAX_THREADS = 1024
LONG_THREADS = 1024
GRID_MAX = 2**31 - 1
KERNEL_REGISTER, KERNEL_LONG = 0, 1


def ops() -> tuple:
    """The row ops: every csrc/ops/norm/<op>.cu over norm_rows.cuh (nothing listed by hand)."""
    import os
    from ... import runtime
    folder = os.path.dirname(runtime.source_path("norm/norm_rows.cuh"))
    return tuple(sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".cu")
                        and '#include "norm_rows.cuh"' in open(os.path.join(folder, f), encoding="utf-8").read()))


@functools.lru_cache(maxsize=None)
def _entry_of(op: str):
    """The manifest entry of the row op `op`: the entry whose module is <stem>, for the op
    `<stem>` or `<stem>_rows`."""
    from ...manifest.loader import package_entries
    from ...ops import module_of
    stem = op[:-5] if op.endswith("_rows") else op
    return next(e for n, e in package_entries().items() if module_of(n, e.family).endswith("." + stem))


def has_residual(op: str) -> bool:
    """Whether the op adds a residual (its manifest entry has a `residual` input)."""
    return any(i.name == "residual" for i in _entry_of(op).inputs)


def weight_bias_choices(op: str):
    """The (has_weight, has_bias) pairs an op's build takes, from its manifest entry: a
    weight and a bias where the entry has them, absent where they are optional. Most
    registers first."""
    inputs = {i.name: i for i in _entry_of(op).inputs}
    w = [True] + ([False] if inputs["weight"].optional else [])
    b = ([True] + ([False] if inputs["bias"].optional else [])) if "bias" in inputs else [False]
    return [(hw, hb) for hw in w for hb in b]


def cast_choices(op: str):
    """The cast_before_weight values an op's build takes: [False, True] where its manifest
    entry has that param (Hugging Face's rounding, norm_rows.cuh), else [False]."""
    return [False, True] if any(p.name == "cast_before_weight" for p in _entry_of(op).params) else [False]


def _elem(dtype_code: int) -> int:
    if dtype_code not in (0, 1, 2):
        raise ValueError(f"dtype code {dtype_code}: the row kernels take 0 (float32), 1 (float16), 2 (bfloat16)")
    return 4 if dtype_code == 0 else 2


def _pow2ceil(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def row_threads(groups: int, vpt: int, exact: bool = True) -> int:
    """The register kernels' threads per row (both rules: RMSNormFwdOp's and the row ops'):
    pow2ceil(ceil(groups / vpt)), at most 1024; where that leaves some threads a partial
    share of the row (groups not a multiple of it: Qwen2.5's 3584, 448 half groups, gave 128
    threads of 3.5), the exact split with the most groups per thread (<= vpt) over a
    multiple of 32 threads instead: 3584 half -> 224 threads of 2, float32 -> 224 of 4.
    Measured on an H100 (dev/NOTES.md session 46), the rows kernel at 1 / 32 / 256 x 3584
    hot: fp16 1.69 / 1.80 / 2.38 -> 1.63 / 1.75 / 2.29 us, bf16 1.66 / 1.77 / 2.35 ->
    1.62 / 1.74 / 2.30; LayerNorm (224 threads with weight and bias in registers, against
    128 with them staged in shared memory) fp16 2.01 / 2.18 / 3.13 -> 1.98 / 2.09 / 2.65.
    exact=False: the power of two alone (the fused adds)."""
    rt = min(MAX_THREADS, _pow2ceil(-(-groups // vpt)))
    if exact and groups % rt:
        for v in range(vpt, 1, -1):
            if groups % v == 0 and (groups // v) % 32 == 0 and groups // v <= MAX_THREADS:
                return groups // v
    return rt


def block_threads(rt: int) -> int:
    """A register-kernel build's block: at least 128 threads, a multiple of RT (an exact
    split's RT is a multiple of 32 that need not divide 128: its block is one row)."""
    return max(rt, 128) if rt & (rt - 1) == 0 else rt


REGISTER_FLOOR = 56   # the registers a register-kernel build of 4 groups a thread holds (nvcc 13: 54-59)


def min_blocks(threads: int) -> int:
    """TILEOPS_MIN_BLOCKS of a register-kernel build: as many blocks as fit 1024 threads
    resident per SM (a register cap of 64 for power-of-two blocks), or, for a block that
    does not divide 1024 (an exact split's), as many as leave each thread REGISTER_FLOOR
    registers, if more: 224 threads take 5 (cap 56) where 1024 // 224 = 4 let LayerNorm's
    Chan merge hold 59 registers and lose a resident block (4096 x 3584 fp16 on an H100:
    22.99 us hot at 4 blocks, 21.95 at 5, against the two-sum's 22.47; session 49)."""
    fit = max(1, 1024 // threads)
    if threads & (threads - 1) == 0:
        return fit
    return max(fit, 65536 // (threads * REGISTER_FLOOR))   # <= 1170 threads an SM: within 2048


def vec_for(dtype_code: int, n: int, aligned16: bool) -> int:
    """TILEOPS_VEC: 16 / element size (16-byte loads) when every pointer is 16-byte aligned
    and each row starts on a 16-byte boundary (n * element size a multiple of 16); else 1."""
    elem = _elem(dtype_code)
    return 16 // elem if aligned16 and (n * elem) % 16 == 0 else 1


def specialisation(op: str, dtype_code: int, n: int, has_weight: bool, has_bias: bool, vec: int, sm_count: int,
                   cast: bool = False):
    """(source_name, kernel_name, options, threads, rows_per_block, shared_bytes, grid_cap or
    None) of one build. Pure: tests compile every specialisation the rules produce with
    nvcc, without a GPU. grid.x = min(ceil(rows / rows_per_block), grid_cap or 2^31 - 1).
    cast: Hugging Face's rounding (-DTILEOPS_CAST_BEFORE_WEIGHT=1; the same launch shape)."""
    # (an op's own source rejects a weight/bias combination it does not take: #error)
    if n < 1:
        raise ValueError(f"row length {n}: the kernels need n >= 1 (an empty row needs no launch)")
    elem = _elem(dtype_code)
    if vec not in (1, 16 // elem):
        raise ValueError(f"vec {vec}: 1 or {16 // elem} for this dtype")
    groups = -(-n // (16 // elem))
    options = [f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={n}", f"-DTILEOPS_HAS_WEIGHT={int(has_weight)}",
               f"-DTILEOPS_HAS_BIAS={int(has_bias)}", f"-DTILEOPS_VEC={vec}"]
    cast_option = ("-DTILEOPS_CAST_BEFORE_WEIGHT=1",) if cast else ()
    if groups <= MAX_THREADS * REGISTER_MAX_VPT:
        vpt = RESIDUAL_VPT if has_residual(op) else REGISTER_MAX_VPT
        # the exact split only for 4 groups a thread: the fused adds' 2 a thread at 3584 (256
        # threads of 1.75 -> 224 of 2) lost at 1 / 32 rows (1.77 / 1.92 -> 1.81 / 1.98 us hot,
        # fp16, H100, session 46) and won only at 256 (2.66 -> 2.61)
        rt = row_threads(groups, vpt, exact=not has_residual(op))
        threads = block_threads(rt)
        options += [f"-DTILEOPS_KERNEL={KERNEL_REGISTER}", f"-DTILEOPS_THREADS={threads}",
                    f"-DTILEOPS_ROW_THREADS={rt}", f"-DTILEOPS_MIN_BLOCKS={min_blocks(threads)}"]
        return f"norm/{op}.cu", f"tileops_{op}", tuple(options) + cast_option, threads, threads // rt, 0, None
    options += [f"-DTILEOPS_KERNEL={KERNEL_LONG}", f"-DTILEOPS_THREADS={LONG_THREADS}"]
    return f"norm/{op}.cu", f"tileops_{op}_long", tuple(options) + cast_option, LONG_THREADS, 1, 0, sm_count


def decode_options(options, has_weight: bool, has_bias: bool, vec: int, rows_per_block: int):
    """The options of the register kernel's decode build (weight and bias staged in shared
    memory: TILEOPS_WB_SMEM in norm_rows.cuh), or None where it would compile the same
    kernel as `options`: the long-row kernel, the scalar path, weight and bias already held
    in registers, or more than 32 KB to stage. It computes the same bits; the launch takes
    it while the grid fits one block per SM (its shared memory costs resident blocks)."""
    d = dict(o[2:].split("=", 1) for o in options)
    if d.get("TILEOPS_KERNEL") != str(KERNEL_REGISTER) or vec == 1:
        return None
    ng = -(-int(d["TILEOPS_N"]) // vec)
    vpt = -(-ng // int(d["TILEOPS_ROW_THREADS"]))
    params = int(has_weight) + int(has_bias)
    if params * vpt <= 4 or rows_per_block * ng * 16 * params > 32768:
        return None
    return tuple(options) + ("-DTILEOPS_WB_SMEM=1",)


def build(device_index: int, op: str, dtype_code: int, n: int, has_weight: bool, has_bias: bool, vec: int,
          eps: float, cast: bool = False):
    """Compiles (or finds) the op's kernel for device `device_index` and returns
    launch(x, residual, weight, bias, y, residual_out): tensors (None for what the op or
    call lacks) already allocated and contiguous, rows = y.numel() // n; it launches on
    torch's current stream of that device, allocates nothing, does nothing for 0 rows.
    eps is fixed per build (a kernel argument, not a define). The returned launch and its
    `.raw` (the same on data pointers) check nothing: this is the kernel layer under the
    op's launchable (rows._build_cuda), which checks the tensors (rows.pointer_guard)
    before it calls `.raw`; tests and dev tools call it with tensors they made."""
    import torch

    from ... import _C, runtime
    sm_count = runtime.device_attributes(device_index)["sm_count"]
    source, kernel, options, threads, rows_per_block, shared, grid_cap = specialisation(
        op, dtype_code, n, has_weight, has_bias, vec, sm_count, cast)
    handle = runtime.build(device_index, source, kernel, options, ARG_FORMAT, pdl=True)
    decode = decode_options(options, has_weight, has_bias, vec, rows_per_block)
    # grids up to this many blocks take the decode build (the same handle when there is none)
    decode_grid = sm_count if decode else 0
    decode_handle = runtime.build(device_index, source, kernel, decode, ARG_FORMAT, pdl=True) if decode else handle
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream   # what runtime.current_stream calls
    cap = min(grid_cap or GRID_MAX, GRID_MAX)
    eps = float(eps)

    def raw(px, presidual, pweight, pbias, py, presidual_out, rows):
        """The launch on data pointers (0 for an absent tensor) the caller has checked
        (rows.pointer_guard): what the op's launchable calls."""
        if rows:
            grid = min(-(-rows // rows_per_block), cap)
            launch_raw(decode_handle if grid <= decode_grid else handle, grid, 1, 1, threads, 1, 1, shared,
                       stream_of(device_index), px, presidual, pweight, pbias, py, presidual_out, rows, eps)

    def launch(x, residual, weight, bias, y, residual_out):
        ptr = lambda t: 0 if t is None else t.data_ptr()   # noqa: E731
        raw(x.data_ptr(), ptr(residual), ptr(weight), ptr(bias), y.data_ptr(), ptr(residual_out), y.numel() // n)
    launch.raw = raw
    return launch
