"""MergeAttnStatesFwdOp's kernels: the C table entry "merge_attn_states"
(csrc/ops/attention/merge_attn_states.c) and the CUDA C kernel tileops_merge_attn_states
(csrc/ops/attention/merge_attn_states.cu), over contiguous rows: o_a, o_b, o [T, H, D],
lse_a, lse_b, lse float32 [T, H].

Identities: the CPU build is a C function, so (dtype); a CUDA build is specialised per
device on the dtype, D (the interface declares o_a's shape: T and H are arguments, and
each new shape only misses the memo, never the table) and the 16-byte vector path the
alignment allows.

Launch rule (CUDA): one thread per 16-byte group of a row; a block takes as many whole
rows as 256 groups hold (at least one), block.x those groups rounded up to a warp (at
most 256), enough blocks for every row (grid-stride past 2^31 - 1)."""
from __future__ import annotations

import torch

from ... import _C
from ..._dtypes import CODE, DTYPE
from ..base import (Apart, Arg, Kernel, KernelInterface, LaunchGuard, checked, identity_type, launch_head,
                    launch_where)

CpuBuild = identity_type("CpuMergeAttnStatesBuild", "dtype")
CudaBuild = identity_type("CudaMergeAttnStatesBuild", "device dtype D vec")

ARG_FORMAT_CUDA = "ppppppq"
THREADS = 256
GRID_MAX = 2**31 - 1


class MergeAttnStatesInterface(KernelInterface):
    """launch(o_a, lse_a, o_b, lse_b, o, lse): writes o and lse."""
    name = "merge_attn_states"
    implementations = ("merge_attn_states",)
    shape_dependent = ("o_a",)
    launchable = "launch(o_a, lse_a, o_b, lse_b, o, lse): writes o and lse"


def cuda_specialisation(dtype_code, D, aligned16):
    """(source, kernel, options, groups per row, rows per block): pure, no GPU."""
    e = DTYPE[dtype_code].itemsize
    g = 16 // e
    vec = g if aligned16 and (D * e) % 16 == 0 else 1
    opts = (f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={D}", f"-DTILEOPS_VEC={vec}", f"-DTILEOPS_THREADS={THREADS}")
    groups = -(-D // g)
    return "attention/merge_attn_states.cu", "tileops_merge_attn_states", opts, groups, max(1, THREADS // groups)


def _guard(b, device_index: int, D=None):
    """check(o_a, lse_a, o_b, lse_b, o, lse): what the kernels rely on, in O(1) attribute reads."""
    dt = DTYPE[b.dtype]
    where = launch_where(device_index)

    def shape(a):
        return tuple(a["o_a"].shape)

    return LaunchGuard(
        launch_head("merge_attn_states", dt, device_index, "" if D is None else f", D {D}"), device_index,
        ("o_a", "lse_a", "o_b", "lse_b", "o", "lse"),
        (Arg("o_a", dt, lambda t, a: t.dim() == 3 and (D is None or t.shape[2] == D),
             f"a contiguous {dt} tensor [T, H, {'D' if D is None else D}] on {where}"),
         *(Arg(name, dt, lambda t, a: tuple(t.shape) == shape(a),
               lambda a: f"a contiguous {dt} tensor of shape {shape(a)} on {where}") for name in ("o_b", "o")),
         *(Arg(name, torch.float32, lambda t, a: tuple(t.shape) == shape(a)[:2],
               lambda a: f"a contiguous float32 tensor of shape {shape(a)[:2]} on {where}")
           for name in ("lse_a", "lse_b", "lse"))),
        (Apart("o", ("o_a", "o_b", "lse_a", "lse_b", "lse"), may_be=("o_a", "o_b"),
               note=" (only o_a or o_b itself may be written in place)"),
         Apart("lse", ("o_a", "o_b", "o", "lse_a", "lse_b"))))


def _build_cpu(b):
    handle = _C.cpu_kernel("merge_attn_states")[0]
    run = _C.cpu_launch
    dtype = b.dtype

    def unchecked(o_a, lse_a, o_b, lse_b, o, lse):
        if lse.numel():
            run(handle, o_a.data_ptr(), lse_a.data_ptr(), o_b.data_ptr(), lse_b.data_ptr(), o.data_ptr(),
                lse.data_ptr(), lse_a.numel(), o_a.shape[2], dtype)
    return checked(_guard(b, -1), unchecked)


def _build_cuda(b):
    from ... import runtime
    src, kernel, opts, groups, rpb = cuda_specialisation(b.dtype, b.D, b.vec)
    handle = runtime.build(b.device, src, kernel, opts, ARG_FORMAT_CUDA, pdl=True)
    block = min(THREADS, -(-rpb * groups // 32) * 32)
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream
    device = b.device

    def unchecked(o_a, lse_a, o_b, lse_b, o, lse):
        rows = lse_a.numel()
        if rows:
            launch_raw(handle, min(-(-rows // rpb), GRID_MAX), 1, 1, block, 1, 1, 0, stream_of(device),
                       o_a.data_ptr(), lse_a.data_ptr(), o_b.data_ptr(), lse_b.data_ptr(), o.data_ptr(),
                       lse.data_ptr(), rows)
    return checked(_guard(b, b.device, b.D), unchecked)


class MergeAttnStatesKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "merge_attn_states"

    @classmethod
    def entry_for(cls, call):
        dtype = CODE[call.dtype("o_a")]
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype)
        return CudaBuild(device=call.device.index or 0, dtype=dtype, D=int(call.inputs["o_a"].shape[2]),
                         vec=bool(call.aligned16))

    @classmethod
    def build(cls, identity):
        if isinstance(identity, CudaBuild) and identity.D == 0:
            return checked(_guard(identity, identity.device, 0), _empty_rows)
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)


def _empty_rows(o_a, lse_a, o_b, lse_b, o, lse):
    """D = 0 on a GPU (a CUDA build needs D >= 1): no element of o; each row's lse still
    merges, by the reference's rules."""
    if lse.numel():
        from ...reference.attention import merge_attn_states
        lse.copy_(merge_attn_states(o_a, lse_a, o_b, lse_b)[1])
