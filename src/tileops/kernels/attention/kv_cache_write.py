"""KVCacheWriteFwdOp's kernels: the C table entry "kv_cache_write"
(csrc/ops/attention/kv_cache_write.c) on the CPU and the CUDA C kernel
tileops_kv_cache_write (csrc/ops/attention/kv_cache_write.cu), both taking the keys k and
values v with any token and head strides (unit channel stride: views into a packed qkv tensor are
read where they lie) and writing the contiguous caches in place.

Identities: the CPU build is a C function, so (dtype, slot dtype); a CUDA build is
specialised per device on the same, on H_kv and D (the interface declares the caches'
shape: num_blocks and block_size are arguments, not defines) and on the 16-byte vector
path the alignment allows; a call whose strides break 16-byte rows takes the scalar
build of the same identity.

Launch rule (CUDA): a token is 2 H_kv ceil(D / G) units (16-byte groups of k, then of v); a block takes as many whole tokens as 256 units hold (at least one), block.x those
units rounded up to a warp (at most 256), enough blocks for every token (grid-stride past
2^31 - 1)."""
from __future__ import annotations

import torch

from ... import _C
from ..._dtypes import CODE, DTYPE
from ..base import (Apart, Arg, Kernel, KernelInterface, LaunchGuard, checked, cpu_runner, identity_type,
                    launch_head, launch_where)

CpuBuild = identity_type("CpuKVCacheWriteBuild", "dtype slot_dtype")
CudaBuild = identity_type("CudaKVCacheWriteBuild", "device dtype slot_dtype H D vec")

ARG_FORMAT_CUDA = "pppppqqqqqq"
THREADS = 256
GRID_MAX = 2**31 - 1


class KVCacheWriteInterface(KernelInterface):
    """launch(k, v, key_cache, value_cache, slot_mapping): writes the caches."""
    name = "kv_cache_write"
    implementations = ("kv_cache_write",)
    shape_dependent = ("key_cache",)
    launchable = "launch(k, v, key_cache, value_cache, slot_mapping): writes key_cache and value_cache"


def cuda_specialisation(dtype_code, slot_dtype_code, H, D, vec):
    """(source, kernel, options, units per token, tokens per block): pure, no GPU (tests
    compile every kind with nvcc). vec: the 16-byte vector path (16 / E) or 1."""
    g = 16 // DTYPE[dtype_code].itemsize
    opts = (f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={D}", f"-DTILEOPS_HK={H}", f"-DTILEOPS_VEC={vec}",
            f"-DTILEOPS_THREADS={THREADS}", f"-DTILEOPS_SLOT64={int(DTYPE[slot_dtype_code] is torch.int64)}")
    units = 2 * H * -(-D // g)
    return "attention/kv_cache_write.cu", "tileops_kv_cache_write", opts, units, max(1, THREADS // units)


def cuda_vec(dtype_code, D, aligned16) -> int:
    """16 / E when every pointer is 16-byte aligned and a head's D elements are whole
    16-byte groups, else 1 (the strides are checked per call)."""
    e = DTYPE[dtype_code].itemsize
    return 16 // e if aligned16 and (D * e) % 16 == 0 else 1


# ---- what a launchable checks before it hands pointers to C --------------------------------

def _guard(b, device_index: int, H=None, D=None):
    """check(k, v, key_cache, value_cache, slot_mapping), in O(1) attribute reads.
    H, D: the build's (CUDA), or None (the CPU build takes any)."""
    dt, sdt = DTYPE[b.dtype], DTYPE[b.slot_dtype]
    where = launch_where(device_index)

    def shape(a):
        return tuple(a["key_cache"].shape)

    def token_rows(t, a):
        return t.dim() == 3 and tuple(t.shape) == (a["slot_mapping"].shape[0],) + shape(a)[2:] and t.stride(2) == 1

    def token_rows_expected(a):
        return (f"a {dt} tensor [T={a['slot_mapping'].shape[0]}, {shape(a)[2]}, {shape(a)[3]}] on {where} "
                f"with unit channel stride")

    heads = "H_kv, D" if H is None else f"{H}, {D}"
    return LaunchGuard(
        launch_head("kv_cache_write", dt, device_index, "" if H is None else f", H_kv {H}, D {D}"), device_index,
        ("k", "v", "key_cache", "value_cache", "slot_mapping"),
        (Arg("slot_mapping", sdt, lambda t, a: t.dim() == 1, f"a contiguous 1-d {sdt} tensor on {where}"),
         Arg("key_cache", dt, lambda t, a: t.dim() == 4 and (H is None or tuple(t.shape[2:]) == (H, D)),
             f"a contiguous {dt} tensor [num_blocks, block_size, {heads}] on {where}"),
         Arg("value_cache", dt, lambda t, a: tuple(t.shape) == shape(a),
             lambda a: f"a contiguous {dt} tensor of key_cache's shape {shape(a)} on {where}"),
         Arg("k", dt, token_rows, token_rows_expected, contiguous=False),
         Arg("v", dt, token_rows, token_rows_expected, contiguous=False)),
        (Apart("key_cache", ("value_cache", "k", "v", "slot_mapping")),
         Apart("value_cache", ("k", "v", "slot_mapping"))))


def _strides(k, v):
    return k.stride(0), k.stride(1), v.stride(0), v.stride(1)


def _build_cpu(b):
    run, _ = cpu_runner("kv_cache_write", "KVCacheWriteFwdOp")   # a slot out of range: found before any write
    dtype, sdt = b.dtype, b.slot_dtype

    def unchecked(k, v, key_cache, value_cache, slot_mapping):
        if not k.numel():
            return
        _, bs, H, D = key_cache.shape
        run(k.data_ptr(), v.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(), slot_mapping.data_ptr(),
            k.shape[0], H, D, key_cache.shape[0] * bs, *_strides(k, v), dtype, sdt)
    return checked(_guard(b, -1), unchecked)


def _build_cuda(b):
    from ... import runtime
    src, kernel, opts, units, tpb = cuda_specialisation(b.dtype, b.slot_dtype, b.H, b.D, b.vec)
    vec_h = runtime.build(b.device, src, kernel, opts, ARG_FORMAT_CUDA, pdl=True)
    scalar_h = vec_h if b.vec == 1 else runtime.build(b.device, src, kernel,
                                                      cuda_specialisation(b.dtype, b.slot_dtype, b.H, b.D, 1)[2],
                                                      ARG_FORMAT_CUDA, pdl=True)
    step = 16 // DTYPE[b.dtype].itemsize
    block = min(THREADS, -(-tpb * units // 32) * 32)
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream
    device = b.device

    def unchecked(k, v, key_cache, value_cache, slot_mapping):
        T = k.shape[0]
        if not T:
            return
        st = _strides(k, v)
        h = vec_h if all(s % step == 0 for s in st) else scalar_h
        launch_raw(h, min(-(-T // tpb), GRID_MAX), 1, 1, block, 1, 1, 0, stream_of(device), k.data_ptr(),
                   v.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(), slot_mapping.data_ptr(), T,
                   key_cache.shape[0] * key_cache.shape[1], *st)
    return checked(_guard(b, b.device, b.H, b.D), unchecked)


class KVCacheWriteKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "kv_cache_write"

    @classmethod
    def entry_for(cls, call):
        dtype, sdt = CODE[call.dtype("k")], CODE[call.dtype("slot_mapping")]
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype, slot_dtype=sdt)
        _, _, H, D = call.inputs["key_cache"].shape
        return CudaBuild(device=call.device.index or 0, dtype=dtype, slot_dtype=sdt, H=int(H), D=int(D),
                         vec=cuda_vec(dtype, int(D), call.aligned16))

    @classmethod
    def build(cls, identity):
        if isinstance(identity, CudaBuild) and identity.H * identity.D == 0:
            return checked(lambda *t: None, lambda *t: None)
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)
