"""EmbeddingFwdOp's kernels: the C table entry "embedding" (csrc/ops/embedding/embedding.c)
and the CUDA C kernel tileops_embedding (csrc/ops/embedding/embedding.cu).

Identities: the CPU build is a C function, so (dtype, ids' dtype, H); a CUDA build is
specialised on the same per device, and on the 16-byte vector path the alignment allows.
H is the table's row length, the one shape the builds depend on: the interface declares
the table shape-dependent (its V is an argument, not a define, so any V shares a build).

Launch rule (CUDA): a call of at least 2^20 16-byte groups of y takes UNROLL = 4 groups
per thread (their ids loaded first, then their rows: four groups in flight behind one id
latency; H200 fp16 4096 x 4096: 18.1 us against 19.6 with one), a smaller one a group per
thread (more blocks: 32 x 4096 1.43 us against 1.67 with four); 256 threads per block,
enough blocks for every group (grid-stride past 2^31 - 1). Both builds give the same bits;
each is compiled on the first call that takes it (during CUDA graph capture, where nothing
may be compiled, a call takes the other build if that one exists)."""
from __future__ import annotations

import torch

from ... import _C
from ..._dtypes import CODE, DTYPE
from ..base import (Apart, Arg, Kernel, KernelInterface, LaunchGuard, checked, cpu_runner, identity_type,
                    launch_head, launch_where)

CpuBuild = identity_type("CpuEmbeddingBuild", "dtype id_dtype H")
CudaBuild = identity_type("CudaEmbeddingBuild", "device dtype id_dtype H vec")

THREADS = 256
UNROLL = 4        # 16-byte groups per thread per step (TILEOPS_UNROLL) of a large call
UNROLL_FROM = 1 << 20   # groups of y from which a call takes the UNROLL build (the other: 1)
GRID_MAX = 2**31 - 1


class EmbeddingInterface(KernelInterface):
    """launch(ids, weight, y): writes y (contiguous, ids.shape + (H,))."""
    name = "embedding"
    implementations = ("embedding",)
    shape_dependent = ("weight",)
    launchable = "launch(ids, weight, y): writes y"


def cuda_specialisation(dtype_code, id_dtype_code, H, aligned16, unroll=UNROLL):
    """(source, kernel, options, groups per row): pure, no GPU."""
    e = DTYPE[dtype_code].itemsize
    vec = 16 // e if aligned16 and (H * e) % 16 == 0 else 1
    g = 16 // e
    opts = (f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={H}", f"-DTILEOPS_VEC={vec}", f"-DTILEOPS_THREADS={THREADS}",
            f"-DTILEOPS_ID64={int(DTYPE[id_dtype_code] is torch.int64)}", f"-DTILEOPS_UNROLL={unroll}")
    return "embedding/embedding.cu", "tileops_embedding", opts, -(-H // g)


def _guard(b, device_index):
    """check(ids, weight, y): what the kernels rely on, in O(1) attribute reads."""
    dt, idt = DTYPE[b.dtype], DTYPE[b.id_dtype]
    where = launch_where(device_index)
    return LaunchGuard(
        launch_head("embedding", dt, device_index, f", rows of {b.H}"), device_index, ("ids", "weight", "y"),
        (Arg("ids", idt, None, f"a contiguous {idt} tensor on {where}"),
         Arg("weight", dt, lambda t, a: t.dim() == 2 and t.shape[1] == b.H,
             f"a contiguous {dt} tensor [V, {b.H}] on {where}"),
         Arg("y", dt, lambda t, a: t.numel() == a["ids"].numel() * b.H,
             lambda a: f"a contiguous {dt} tensor of {a['ids'].numel()} rows of {b.H} on {where}")),
        (Apart("y", ("weight", "ids"), note=" (the table or the ids)"),))


def _build_cpu(b):
    run, handle = cpu_runner("embedding", "EmbeddingFwdOp")   # an id out of range: found before any write
    H, dtype, idt = b.H, b.dtype, b.id_dtype

    def unchecked(ids, weight, y):
        run(ids.data_ptr(), weight.data_ptr(), y.data_ptr(), ids.numel(), weight.shape[0], H, dtype, idt)
    if H:   # the same launch as data, for a plan (ops/plans.py): n = ids.numel(), V = weight.numel() // H
        unchecked.plan_recipe = (handle, ((1, 0), (1, 1), (1, 2), (2, 0, 1), (2, 1, H), (0, H), (0, dtype),
                                          (0, idt)))
    return checked(_guard(b, -1), unchecked)


def _build_cuda(b):
    """The launchable; it compiles each of the two builds (UNROLL and 1) on the first call
    that takes it, so a build only calls of one size need is never compiled for the other."""
    from ... import runtime
    from ...errors import NotReadyDuringCaptureError
    src, kernel, _, groups = cuda_specialisation(b.dtype, b.id_dtype, b.H, b.vec)
    builds = {}   # unroll -> handle, made on first use
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream
    device = b.device

    def build_for(u):
        """(unroll, handle) for a call that takes the `u` build. While torch's stream is being
        captured into a CUDA graph nothing may be built: the other build serves if there is
        one (both give the same bits), else the error says to call the op once first."""
        h = builds.get(u)
        if h is not None:
            return u, h
        opts = cuda_specialisation(b.dtype, b.id_dtype, b.H, b.vec, u)[2]
        try:
            h = builds[u] = runtime.build(device, src, kernel, opts, "pppqq", pdl=True)
        except NotReadyDuringCaptureError as e:
            built = list(builds.items())
            if built:
                return built[0]
            raise NotReadyDuringCaptureError(
                f"EmbeddingFwdOp: the {DTYPE[b.dtype]} build for rows of {b.H} on cuda:{device} is not built and the "
                f"stream is being captured into a CUDA graph. Building (compile, load) is not allowed during "
                f"capture: call the op once at this shape before capture (warm-up). [{e}]") from None
        return u, h

    def unchecked(ids, weight, y):
        n = ids.numel()
        if n:
            u, h = build_for(UNROLL if n * groups >= UNROLL_FROM else 1)
            grid = min(-(-n * groups // (THREADS * u)), GRID_MAX)
            launch_raw(h, grid, 1, 1, THREADS, 1, 1, 0, stream_of(device), ids.data_ptr(), weight.data_ptr(),
                       y.data_ptr(), n, weight.shape[0])
    return checked(_guard(b, b.device), unchecked)


class EmbeddingKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "embedding"

    @classmethod
    def entry_for(cls, call):
        dtype, idt = CODE[call.dtype("weight")], CODE[call.dtype("ids")]
        H = int(call.inputs["weight"].shape[1])
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype, id_dtype=idt, H=H)
        return CudaBuild(device=call.device.index or 0, dtype=dtype, id_dtype=idt, H=H, vec=bool(call.aligned16))

    @classmethod
    def build(cls, identity):
        if identity.H == 0:
            return checked(lambda ids, weight, y: None, lambda ids, weight, y: None)
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)
