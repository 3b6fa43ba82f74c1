"""RopeFwdOp's kernels: the C table entry "rope" (csrc/ops/positional/rope.c) on the CPU and
the CUDA C kernel tileops_rope (csrc/ops/positional/rope.cu), both taking q, k and their
outputs with any token and head strides (unit channel stride): a view into a packed qkv
tensor is read, and written in place, where it lies.

Identities: the CPU build is a C function, so (dtype, positions' dtype, head_size,
rotary_dim, is_neox); a CUDA build is specialised on the same at compile time, per device,
and on whether the 16-byte vector path is possible (`vec`: alignment and group sizes); a
call whose strides break 16-byte rows takes the scalar build of the same identity.

Launch rule (CUDA, `cuda_launch_shape`): a thread takes one 16-byte unit of a head (a
rotated group, or a pass-through group when written out of place) for HEADS_PER_THREAD
heads (one on the scalar path), reading the token's cos/sin values once for all of them and loading them all before
its first store; a token gets min(units x ceil(heads / that), B) threads, a block as many
tokens as fill B threads (grid-stride past 2^31 - 1), B = 256, or 128 from 4 x sm_count
tokens on (prefill: blocks of 128, each token's units looped over by 128 threads, measured
1.04-1.12x the copy floor hot at 4096 tokens against 256's 1.11-1.39x; 256 stays faster at
256 tokens: dev/NOTES.md, session 11; a separate build, TILEOPS_THREADS being the kernel's
bound too); while the tokens do not fill the SMs, a token's heads are split over several
blocks (grid.y). From 4 x sm_count tokens on, a vector build of two heads a thread takes
the prefill kernel tileops_rope_persistent instead (`persistent_launch_shape`): blocks of
one token's units, PERSISTENT_BLOCKS_PER_SM x sm_count of them at most, each walking tokens
with the next token's loads in flight while one is stored (H200, 4096 tokens, L2-cold:
1.06-1.13x the copy floor against the 128-thread build's 1.12-1.23x; dev/NOTES.md, session
13). It is built per block size on first use, as the others are; during CUDA graph capture
without it, the 128-thread build serves (the same bits)."""
from __future__ import annotations

import torch

from ... import _C
from ..._dtypes import CODE, DTYPE
from ..base import (Apart, Arg, Kernel, KernelInterface, LaunchGuard, checked, cpu_runner, identity_type,
                    launch_head, launch_where)

# cast: the op's cast_cos_sin (the C entry "rope_cast", the CUDA define TILEOPS_CAST_COS_SIN)
CpuBuild = identity_type("CpuRopeBuild", "dtype pos_dtype head_size rotary_dim is_neox cast")
CudaBuild = identity_type("CudaRopeBuild", "device dtype pos_dtype head_size rotary_dim is_neox vec cast")

ARG_FORMAT_CUDA = "ppppppqqqqqqqqqqqq"
MAX_THREADS = 256           # B, the block bound (TILEOPS_THREADS) below PREFILL_TOKENS_PER_SM x sm_count tokens
PREFILL_THREADS = 128       # B from there on
PREFILL_TOKENS_PER_SM = 4
HEADS_PER_THREAD = 2        # TILEOPS_HB of the vector builds: heads a thread loads before its first store
DECODE_BLOCK_THREADS = 64   # a decode launch splits a token's heads into blocks of at least this
PERSISTENT_BLOCKS_PER_SM = 4  # the prefill kernel's grid: this many blocks an SM at most (session 13's best of 2-8)
PERSISTENT_MAX_BLOCK = 512  # a token needing more threads takes tileops_rope (ptxas keeps ~96 registers a thread
                            # at HB 2 under this block's launch bound: 65536 / 512 = 128)
GRID_MAX = 2**31 - 1
TENSORS = ("q", "k", "positions", "cos_sin_cache", "q_out", "k_out")


class RopeInterface(KernelInterface):
    """launch(q, k, positions, cos_sin_cache, q_out, k_out): writes q_out and k_out (which
    may be q and k themselves: in place)."""
    name = "rope"
    implementations = ("rope",)
    launchable = "launch(q, k, positions, cos_sin_cache, q_out, k_out): writes q_out and k_out"


def cuda_vec(dtype_code: int, head_size: int, rotary_dim: int, is_neox: bool, aligned16: bool) -> int:
    """TILEOPS_VEC: 16 / element size when the pointers are 16-byte aligned, rows of
    head_size elements are whole 16-byte groups and a group divides the rotated unit
    (R/2 for NeoX, R for GPT-J); else 1. (Strides are checked per call.)"""
    e = DTYPE[dtype_code].itemsize
    g = 16 // e
    unit = rotary_dim // 2 if is_neox else rotary_dim
    return g if aligned16 and (head_size * e) % 16 == 0 and unit % g == 0 else 1


def heads_per_thread(vec: int, cast: bool = False) -> int:
    """TILEOPS_HB: HEADS_PER_THREAD on the vector path; 1 on the scalar path, whose partial
    groups would spill registers with more (it serves only views off 16-byte rows), and
    in the cast_cos_sin builds (its 16-bit cos/sin copies spill with two heads)."""
    return HEADS_PER_THREAD if vec != 1 and not cast else 1


def block_bound(T: int, sm_count: int) -> int:
    """B, the threads a token and a block take at most, for T tokens (the module's rule)."""
    return PREFILL_THREADS if T >= PREFILL_TOKENS_PER_SM * sm_count else MAX_THREADS


def cuda_specialisation(dtype_code, pos_dtype_code, head_size, rotary_dim, is_neox, vec, cast=False,
                        threads=MAX_THREADS, persistent=False):
    """(source, kernel, options, rotated units per head, pass-through units per head):
    pure, no GPU (tests compile every kind with nvcc). cast: cast_cos_sin's define;
    threads: B (block_bound), which the kernel reads as TILEOPS_THREADS; persistent: the
    prefill kernel tileops_rope_persistent (threads: its block) instead of tileops_rope."""
    hb = heads_per_thread(vec, cast)
    g = vec if vec != 1 else 16 // DTYPE[dtype_code].itemsize
    opts = (f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={head_size}", f"-DTILEOPS_RD={rotary_dim}",
            f"-DTILEOPS_NEOX={int(bool(is_neox))}", f"-DTILEOPS_POS64={int(DTYPE[pos_dtype_code] is torch.int64)}",
            f"-DTILEOPS_VEC={vec}", f"-DTILEOPS_THREADS={threads}", f"-DTILEOPS_HB={hb}") + (("-DTILEOPS_CAST_COS_SIN=1",) if cast else ())
    rot = -(-(rotary_dim // 2) // g) if is_neox else -(-rotary_dim // g)
    kernel = "tileops_rope_persistent" if persistent else "tileops_rope"
    opts += ("-DTILEOPS_PERSISTENT=1",) if persistent else ()
    return "positional/rope.cu", kernel, opts, rot, -(-(head_size - rotary_dim) // g)


# ---- what a launchable checks before it hands pointers to C --------------------------------
# A launchable is public (Op.kernel_for returns it): on every call it checks what the kernels
# rely on and cannot see themselves, in O(1) attribute reads; `.unchecked` skips this for the
# op's body, whose generated checks guaranteed the same.

def _guard(b, device_index: int):
    """check(q, k, positions, cos_sin_cache, q_out, k_out). q, k and their outputs take any
    token and head strides (unit channel stride); an output that is not its input itself
    is new and contiguous, and shares no memory with the other tensors."""
    dt, pdt = DTYPE[b.dtype], DTYPE[b.pos_dtype]
    D, R = b.head_size, b.rotary_dim
    where = launch_where(device_index)

    def heads(t, a):
        return t.dim() == 3 and t.shape[0] == a["positions"].shape[0] and t.shape[2] == D and t.stride(2) == 1

    def heads_expected(kind):
        return lambda a: f"a {dt} tensor [T={a['positions'].shape[0]}, {kind}, {D}] on {where} with unit channel stride"

    def output(i):
        return Arg(i + "_out", dt,
                   lambda t, a: t is a[i] or (heads(t, a) and t.shape == a[i].shape and t.is_contiguous()),
                   lambda a: f"the input it replaces or a new contiguous {dt} tensor of shape {tuple(a[i].shape)}",
                   contiguous=False)

    shared = " (only an output that is the input it replaces may share its memory)"
    return LaunchGuard(
        launch_head("rope", dt, device_index, f", head_size {D}, rotary_dim {R}"), device_index, TENSORS,
        (Arg("positions", pdt, lambda t, a: t.dim() == 1, f"a contiguous 1-d {pdt} tensor on {where}"),
         Arg("q", dt, heads, heads_expected("H"), contiguous=False),
         Arg("k", dt, heads, heads_expected("H_kv"), contiguous=False),
         Arg("cos_sin_cache", torch.float32, lambda t, a: t.dim() == 2 and t.shape[1] == R
             and (a["positions"].shape[0] == 0 or t.shape[0] >= 1),
             f"a contiguous float32 tensor [max_position >= 1, {R}] on {where}"),
         output("q"), output("k")),
        (Apart("q_out", ("q", "k", "positions", "cos_sin_cache"), may_be=("q",), note=shared),
         Apart("k_out", ("q", "k", "positions", "cos_sin_cache", "q_out"), may_be=("k",), note=shared)))


def _args(q, k, positions, cache, q_out, k_out):
    """(pointers..., sizes and strides...) in the kernels' shared order."""
    return (q.data_ptr(), k.data_ptr(), positions.data_ptr(), cache.data_ptr(), q_out.data_ptr(), k_out.data_ptr(),
            positions.shape[0], q.shape[1], k.shape[1], cache.shape[0], q.stride(0), q.stride(1), k.stride(0),
            k.stride(1), q_out.stride(0), q_out.stride(1), k_out.stride(0), k_out.stride(1))


def cuda_launch_shape(T: int, H: int, Hk: int, uq: int, uk: int, hb: int, sm_count: int = 132):
    """(grid_x, grid_y, threads) of a launch (rope.cu's kernel comment) with the build of
    bound B = block_bound(T, sm_count). UPH = max(uq, uk) units per head, S = ceil((H +
    Hk) / hb) head slots per token. While the tokens do not fill the SMs (decode), grid.y
    splits a token's slots over up to sm_count // T blocks of at least
    DECODE_BLOCK_THREADS threads each. TT = min(UPH ceil(S / grid_y), B) threads per token,
    as many tokens per block as fill B (at least one, at most T), the block rounded up to
    a warp. (0, 0, 0) when there is nothing to do."""
    uph, nh = max(uq, uk), H + Hk
    if not T or not uph or not nh:
        return 0, 0, 0
    slots = -(-nh // hb)
    per_block = max(1, -(-DECODE_BLOCK_THREADS // uph))          # slots a decode block takes at least
    gy = max(1, min(-(-slots // per_block), sm_count // T))
    ys = -(-slots // gy)
    gy = -(-slots // ys)                                           # no block without a slot
    bound = block_bound(T, sm_count)
    tt = min(uph * ys, bound)
    tpb = max(1, min(bound // tt, T))
    threads = min(bound, -(-(tt * tpb) // 32) * 32)
    return min(-(-T // tpb), GRID_MAX), gy, threads


def persistent_launch_shape(T: int, H: int, Hk: int, uq: int, uk: int, hb: int, sm_count: int = 132):
    """(grid_x, threads) of the prefill kernel tileops_rope_persistent, or None where
    tileops_rope serves: fewer than PREFILL_TOKENS_PER_SM x sm_count tokens, a build of
    other than HEADS_PER_THREAD heads a thread (the scalar and cast_cos_sin builds), or a
    token needing more than PERSISTENT_MAX_BLOCK threads. A block is one token's TT = UPH x S threads
    (S = ceil((H + Hk) / hb) slots) rounded up to a warp; min(T, PERSISTENT_BLOCKS_PER_SM x
    sm_count) blocks walk the tokens."""
    uph, nh = max(uq, uk), H + Hk
    if T < PREFILL_TOKENS_PER_SM * sm_count or hb != HEADS_PER_THREAD or not uph or not nh:
        return None
    tt = uph * -(-nh // hb)
    if tt > PERSISTENT_MAX_BLOCK:
        return None
    return min(T, PERSISTENT_BLOCKS_PER_SM * sm_count), -(-tt // 32) * 32


def _build_cpu(b):
    # a position out of range (found before any write), or a layout; in place, q_out is q
    run, _ = cpu_runner("rope_cast" if b.cast else "rope", "RopeFwdOp", {"q_out": "q", "k_out": "k"})
    D, R, neox, dtype, pdt = b.head_size, b.rotary_dim, int(bool(b.is_neox)), b.dtype, b.pos_dtype

    def unchecked(q, k, positions, cache, q_out, k_out):
        a = _args(q, k, positions, cache, q_out, k_out)
        # (T, H, Hk, P, strides...) -> the C order (T, H, Hk, D, R, P, strides...)
        run(*a[:6], a[6], a[7], a[8], D, R, a[9], *a[10:], neox, dtype, pdt)
    return checked(_guard(b, -1), unchecked)


def _build_cuda(b):
    import torch

    from ... import runtime
    from ...errors import NotReadyDuringCaptureError
    handles = {}

    def handle(vec, threads, persistent=False):
        """the build of (vec, B) or the prefill kernel's of block `threads`, made on its first
        use (the warm-up rule: a call at the shape before a capture); the vector build's
        scalar twin serves calls whose strides break 16-byte rows"""
        key = (vec, threads, persistent)
        h = handles.get(key)
        if h is None:
            source, name, opts = cuda_specialisation(b.dtype, b.pos_dtype, b.head_size, b.rotary_dim, b.is_neox, vec,
                                                     b.cast, threads, persistent)[:3]
            h = handles[key] = runtime.build(b.device, source, name, opts, ARG_FORMAT_CUDA, pdl=True)
        return h

    rot, passing = cuda_specialisation(b.dtype, b.pos_dtype, b.head_size, b.rotary_dim, b.is_neox, b.vec,
                                       b.cast)[3:]
    handle(b.vec, MAX_THREADS)
    handle(1, MAX_THREADS)
    vec_hb = heads_per_thread(b.vec, b.cast)
    sm_count = runtime.device_attributes(b.device)["sm_count"]
    step = 16 // DTYPE[b.dtype].itemsize
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream
    device = b.device

    def unchecked(q, k, positions, cache, q_out, k_out):
        a = _args(q, k, positions, cache, q_out, k_out)
        T = a[6]
        if not T:
            return
        vec = all(s % step == 0 for s in a[10:])
        uq, uk = rot + (passing if q_out is not q else 0), rot + (passing if k_out is not k else 0)
        hb = vec_hb if vec else 1
        walk = persistent_launch_shape(T, a[7], a[8], uq, uk, hb, sm_count)
        if walk is not None:
            try:
                h = handle(b.vec, walk[1], True)
            except NotReadyDuringCaptureError:   # capturing before its first use: tileops_rope (the same bits)
                pass
            else:
                launch_raw(h, walk[0], 1, 1, walk[1], 1, 1, 0, stream_of(device), *a)
                return
        gx, gy, threads = cuda_launch_shape(T, a[7], a[8], uq, uk, hb, sm_count)
        if gx:
            launch_raw(handle(b.vec if vec else 1, block_bound(T, sm_count)), gx, gy, 1, threads, 1, 1, 0,
                       stream_of(device), *a)
    return checked(_guard(b, b.device), unchecked)


class RopeKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "rope"

    @classmethod
    def entry_for(cls, call):
        p = call.params
        dtype, pdt = CODE[call.dtype("q")], CODE[call.dtype("positions")]
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype, pos_dtype=pdt, head_size=int(p["head_size"]), rotary_dim=int(p["rotary_dim"]),
                            is_neox=bool(p["is_neox"]), cast=bool(p.get("cast_cos_sin", False)))
        return CudaBuild(device=call.device.index or 0, dtype=dtype, pos_dtype=pdt, head_size=int(p["head_size"]),
                         rotary_dim=int(p["rotary_dim"]), is_neox=bool(p["is_neox"]),
                         vec=cuda_vec(dtype, int(p["head_size"]), int(p["rotary_dim"]), bool(p["is_neox"]),
                                      call.aligned16), cast=bool(p.get("cast_cos_sin", False)))

    @classmethod
    def build(cls, identity):
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)
