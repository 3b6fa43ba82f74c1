"""The CUDA side of the activation family's gated ops: which kernel of
csrc/ops/activation/<op>.cu (over gated_act.cuh) a build compiles, with which defines and
launch shape, and the launch.

    specialisation(op, dtype_code, n, vec[, unroll, threads, cast=False, elems=False])   pure: no GPU
    vec_for(dtype_code, n, aligned16)                  vector width
    elems_for(op, rows, n)                             the element build for this call?
    wide_for(rows, ng)                                 the wide build (WIDE_THREADS) for this call?
    build(device_index, op, dtype_code, n, vec, cast=False) -> launch
(cast: the op's cast_before_mul, -DTILEOPS_CAST_BEFORE_MUL=1; elems: a thread per element,
-DTILEOPS_GATED_ELEMS=1)
    launch(x, y)   contiguous, y allocated: rows = y.numel() // n

Launch rule: one thread per 16-byte group of y (G = 16 / element size outputs), THREADS =
128 per block, a block per THREADS x UNROLL groups (grid-stride only past 2^31 - 1
blocks). Measured on the H200 (dev/time_gated.py, dev/NOTES.md session 6): this full grid
beats one wave of resident threads striding (81.9 vs 90.5 us at 4096 x 14336 fp16, equal
to torch.compile), UNROLL 2-8 gains nothing, and 128-thread blocks beat 256 at one row
(1.28 vs 1.37 us at 1 x 14336, equal at 32 rows). The kernel is elementwise, so a row's
bits never depend on the grid, the block size or the row count.

A call of WIDE_MIN_GROUPS groups or more takes the wide build instead: the same kernel in
blocks of WIDE_THREADS = 256 (half the blocks to schedule). H100, fp16 SiLU, one group a
thread, hot / L2-cold us, 128 against 256 threads a block (dev/time_gated.py, session 35):
128 x 14336 2.86 / 8.74 against 2.64 / 8.77, 256 x 14336 5.01 / 12.67 against 3.91 / 12.67
(torch.compile 5.88 / 13.76; 4.34 / 12.90 in another run), 64 x 28672 2.86 / 7.10 against
2.58 / 7.10, 128 x 28672 5.20 / 10.53 against 4.05 / 10.53; equal from 1024 tokens and at
32-64 x 14336 (below the bound), 256 a little behind at 1-8 tokens (1.31 against 1.37 hot
at 1 x 14336). It is made on the first call that takes it; during a capture, until then,
the 128-thread build serves (the same bits).

A small call (rows x n <= ELEMS_MAX outputs) of an op in ELEMS_OPS takes the element
build instead (a thread per element, grid ceil(rows n / THREADS)): the same arithmetic,
so the same bits, in a third of the code. L2-cold, a one-token call fetches its kernel's
code from DRAM line by line, and the erf GELU's group build holds 5.8 KB of it (H200,
fp16, dev/time_gated.py --elems, session 22, L2-cold / hot us, element build against group
build): 1 x 14336 4.74 / 1.30 against 5.15 / 1.50 (torch.compile 4.64 / 1.24); with Hugging
Face's rounding 1 x 14336 4.51 / 1.32 against 5.15 / 1.69, 2 x 28672 4.32 / 1.40 against
4.70 / 1.75, 4 x 14336 4.70 / 1.40 against 5.31 / 1.74, 4 x 28672 even (4.80 / 1.77
against 4.80 / 1.81). silu's group build (3.5 KB) and gelu_tanh's (4.1 KB) gain nothing
(1 x 14336 L2-cold 4.80 against 4.74; 4.74 against 4.74). The element build is slow past
a few rows (a thread's element loads): never a large call's."""
from __future__ import annotations

ARG_FORMAT = "ppq"          # x, y, rows
THREADS = 128
WIDE_THREADS = 256          # ... a call of WIDE_MIN_GROUPS 16-byte groups of y or more
WIDE_MIN_GROUPS = 1 << 17
UNROLL = 1                  # 16-byte groups of y per thread per step (TILEOPS_UNROLL)
GRID_MAX = 2**31 - 1
ELEMS_OPS = ("gelu_and_mul",)   # ops whose small calls take the element build
ELEMS_MAX = 65536               # ... up to this many outputs (rows x n)


def ops() -> tuple:
    """The gated ops: every csrc/ops/activation/<op>.cu over gated_act.cuh."""
    import os
    from ... import runtime
    folder = os.path.dirname(runtime.source_path("activation/gated_act.cuh"))
    return tuple(sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".cu")
                        and '#include "gated_act.cuh"' in open(os.path.join(folder, f), encoding="utf-8").read()))


def _elem(dtype_code: int) -> int:
    if dtype_code not in (0, 1, 2):
        raise ValueError(f"dtype code {dtype_code}: the gated kernels take 0 (float32), 1 (float16), 2 (bfloat16)")
    return 4 if dtype_code == 0 else 2


def vec_for(dtype_code: int, n: int, aligned16: bool) -> int:
    """TILEOPS_VEC: 16 / element size (16-byte loads and stores) when x and y are 16-byte
    aligned and a half row is a multiple of 16 bytes (so b's rows and y's rows start
    aligned too); else 1."""
    elem = _elem(dtype_code)
    return 16 // elem if aligned16 and (n * elem) % 16 == 0 else 1


def groups(dtype_code: int, n: int) -> int:
    """NG: 16-byte groups per row of y (the last may be partial)."""
    return -(-n // (16 // _elem(dtype_code)))


def elems_for(op: str, rows: int, n: int) -> bool:
    """Whether a call of `rows` rows of n outputs takes the element build (the launch rule
    above)."""
    return op in ELEMS_OPS and 0 < rows * n <= ELEMS_MAX


def specialisation(op: str, dtype_code: int, n: int, vec: int, unroll: int = UNROLL, threads: int = THREADS, *,
                   cast: bool = False, elems: bool = False):
    """(source_name, kernel_name, options, threads, unroll) of one build. Pure: tests
    compile every kind with nvcc, without a GPU. grid.x = min(ceil(rows * NG / (threads *
    unroll)), GRID_MAX), or with elems (TILEOPS_GATED_ELEMS: a thread per element)
    min(ceil(rows * n / threads), GRID_MAX). cast: TILEOPS_CAST_BEFORE_MUL (Hugging Face's
    arithmetic)."""
    if n < 1:
        raise ValueError(f"half width {n}: the kernels need n >= 1 (an empty row needs no launch)")
    elem = _elem(dtype_code)
    if vec not in (1, 16 // elem):
        raise ValueError(f"vec {vec}: 1 or {16 // elem} for this dtype")
    options = (f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={n}", f"-DTILEOPS_VEC={vec}",
               f"-DTILEOPS_THREADS={threads}", f"-DTILEOPS_UNROLL={unroll}")
    options += ("-DTILEOPS_CAST_BEFORE_MUL=1",) if cast else ()
    options += ("-DTILEOPS_GATED_ELEMS=1",) if elems else ()
    return f"activation/{op}.cu", f"tileops_{op}", options, threads, unroll


def wide_for(rows: int, ng: int) -> bool:
    """Whether a call of `rows` rows of ng 16-byte groups (groups()) takes the wide build
    (the launch rule above). A call that takes the element build never does: its outputs,
    and so its groups, number at most ELEMS_MAX < WIDE_MIN_GROUPS."""
    return rows * ng >= WIDE_MIN_GROUPS


def build(device_index: int, op: str, dtype_code: int, n: int, vec: int, cast: bool = False):
    """Compiles (or finds) the op's kernel for device `device_index` and returns
    launch(x, y): contiguous tensors, y allocated; it launches on torch's current stream of
    that device, allocates nothing, does nothing for 0 rows. The element build of a
    small call (elems_for) and the wide build of a large one (wide_for) are each made on
    the first call that takes it; during CUDA graph capture, where nothing may be built,
    the 128-thread group build serves until then (the same bits)."""
    import torch

    from ... import _C, runtime
    source, kernel, options, threads, unroll = specialisation(op, dtype_code, n, vec, cast=cast)
    handle = runtime.build(device_index, source, kernel, options, ARG_FORMAT, pdl=True)
    made = {}   # the element and the wide build, once made
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream   # what runtime.current_stream calls
    ng = groups(dtype_code, n)
    rows_max = (2 ** 31 - 1) // ng            # a group launch's rows: 32-bit group indices (gated_act.cuh)
    esize = _elem(dtype_code)

    def made_build(kind):
        """The element ("elems") or wide build, made on its first call outside a capture;
        None while it is not made and the stream is captured."""
        if kind not in made:
            opts = (specialisation(op, dtype_code, n, vec, cast=cast, elems=True) if kind == "elems"
                    else specialisation(op, dtype_code, n, vec, threads=WIDE_THREADS, cast=cast))[2]
            h = runtime.build_unless_capturing(device_index, source, kernel, opts, ARG_FORMAT, pdl=True)
            if h is None:
                return None
            made[kind] = h
        return made[kind]

    def launch(x, y):
        rows = y.numel() // n
        if not rows:
            return
        if elems_for(op, rows, n):
            h = made_build("elems")
            if h is not None:
                launch_raw(h, min(-(-(rows * n) // threads), GRID_MAX), 1, 1, threads, 1, 1, 0,
                           stream_of(device_index), x.data_ptr(), y.data_ptr(), rows)
                return
        h, t = handle, threads
        if wide_for(rows, ng):
            wide = made_build("wide")
            if wide is not None:
                h, t = wide, WIDE_THREADS
        per_block = t * unroll
        for r0 in range(0, rows, rows_max):
            r = min(rows_max, rows - r0)
            launch_raw(h, min(-(-(r * ng) // per_block), GRID_MAX), 1, 1, t, 1, 1, 0,
                       stream_of(device_index), x.data_ptr() + r0 * 2 * n * esize,
                       y.data_ptr() + r0 * n * esize, r)
    return launch
