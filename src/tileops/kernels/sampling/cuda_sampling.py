"""The CUDA side of the sampling kernels: how a row is split (`row_plan`), each kernel's
specialisation (pure functions of the build identity: the tests compile every kind with
nvcc, no GPU needed) and its launch.

Launch rules (csrc/ops/sampling/sampling_common.cuh says what the kernels take):
  softmax, argmax, sample_from_probs: a row over a cluster of `cluster` CTAs (sm_90 and
    later; 1 before; argmax and sample, whose result does not depend on the split, take one
    CTA per row from sm_count / 2 rows on): cluster = min(8, pow2ceil(V / 16384)), so a CTA takes at most 16384
    elements where 8 CTAs suffice (128256: 8 CTAs of 16032; 152064: 8 of 19008). Softmax
    keeps its CTA's elements on chip (OPT x THREADS slots of 8 floats: 64 KiB and 80 KiB
    for those two) when they fit, and reads the row once; else three times; its `threads`:
    the power of two at or above CHUNK / 32 (4 octets a thread) in [128, 512] (1024 when
    read three times). grid.x = rows x cluster (in pieces below 2^31); argmax's and
    sample's `threads`: the power of two at or above CHUNK / 64 (8 octets), in [128, 1024].
  top_k, top_k_top_p_mask: a row over a cluster of `selection_cluster(rows, ...)` CTAs of
    1024 threads (a batch too small to fill the SMs spreads each row's passes over up to
    8 SMs), grid.x = rows x cluster; their histograms hold integer counts and masses, so
    the result is the same whatever the cluster.
Softmax's every choice depends on V, the dtypes and the device's architecture, never on
the number of rows: a row's bits are the same whatever else is in the batch. Argmax's and
sample's result is an index, and the selections' the exact top-k / mask, the same under
every split."""
from __future__ import annotations

from typing import NamedTuple

import torch

from ... import _C
from ..._dtypes import DTYPE

TOP_K_MAX = 16384            # k of a CUDA top-k build: the selected are sorted in shared memory
CLUSTER_MAX = 8              # portable cluster size
CLUSTER_ELEMS = 16384        # a cluster's CTA takes at most this many elements, when 8 CTAs suffice
SEL_THREADS = 1024           # the selection kernels' CTA
GRID_MAX = 2**31 - 1
SMEM_RESERVE = 2048          # static shared memory and slack beside a staged chunk


class RowPlan(NamedTuple):
    cluster: int             # CTAs per row
    chunk: int               # elements per CTA (a multiple of 8)
    threads: int
    opt: int                 # octets per thread
    stage: int               # softmax: 0 read three times, 1 z kept in shared memory, 2 the words in registers
    smem: int                # dynamic shared memory, bytes
    min_blocks: int          # __launch_bounds__' second argument


def _pow2ceil(v: int) -> int:
    return 1 << max(0, (int(v) - 1).bit_length())


def arch(device_index: int) -> int:
    """The device's compute capability as one number (90 for sm_90)."""
    from ... import runtime
    major, minor = runtime.device_attributes(device_index)["arch"]
    return 10 * major + minor


def row_plan(V: int, arch_: int, smem_optin: int, stage_bytes: int = 0, one_cta: bool = False,
             registers: bool = False) -> RowPlan:
    """How a row of V elements is split over CTAs; stage_bytes: bytes per element a CTA
    would keep on chip (softmax's float32 z; 0: nothing kept); one_cta: a CTA per row
    whatever V (the exact kernels' batch build); registers: softmax may keep the chunk's
    words in registers instead of z in shared memory (16-bit logits, no temperature)."""
    cluster = min(CLUSTER_MAX, _pow2ceil(-(-V // CLUSTER_ELEMS))) if arch_ >= 90 and not one_cta else 1
    chunk = -(-(-(-V // cluster)) // 8) * 8
    octets = chunk // 8
    if stage_bytes:
        return _softmax_plan(cluster, chunk, octets, stage_bytes, smem_optin, registers)
    threads = min(1024, max(128, _pow2ceil(-(-octets // 8))))
    # CTAs per SM the registers must allow: 1024 threads (64 registers each: the batch of
    # loads a thread keeps in flight, sampling_common.cuh, fits)
    return RowPlan(cluster, chunk, threads, -(-octets // threads), False, 0, max(1, 1024 // threads))


def _softmax_plan(cluster: int, chunk: int, octets: int, stage_bytes: int, smem_optin: int,
                  registers: bool) -> RowPlan:
    """Softmax: 4 octets a thread where they fit (threads: the power of two at or above
    octets / 4, in [128, 512]; 1024 when the row is read three times), so a thread's loads of a 16-bit chunk are one batch, all in flight; the
    chunk kept on chip in OPT x THREADS slots of 8 floats (the pads' z -inf) when they fit.
    Registers for 1536 threads per SM (40 each) where the staged chunks' shared memory allows
    as many CTAs, 1024 when read three times. Where z would be staged, a registers build
    (stage 2) keeps the raw words in registers instead, with no shared memory and the same
    CTAs per SM (the occupancy measured: 3 at 128256, 16 bytes spilled; at 2, no spill, it
    was slower)."""
    threads = min(512, max(128, _pow2ceil(-(-octets // 4))))
    opt = -(-octets // threads)
    smem = opt * threads * 8 * stage_bytes
    stage = smem + SMEM_RESERVE <= smem_optin
    if not stage:   # read three times: 1024 threads where the row is that long
        threads = min(1024, max(128, _pow2ceil(-(-octets // 4))))
        opt = -(-octets // threads)
    if stage:
        per_sm = min(1536 // threads, (smem_optin + 1024) // (smem + SMEM_RESERVE))
    else:
        smem, per_sm = 0, 1024 // threads
    if stage and registers:
        return RowPlan(cluster, chunk, threads, opt, 2, 0, max(1, per_sm))
    return RowPlan(cluster, chunk, threads, opt, int(stage), smem, max(1, per_sm))


def selection_plan(V: int, cluster: int = 1) -> RowPlan:
    """A row of top_k, top_k_top_p_mask over `cluster` CTAs of 1024 threads: V / cluster
    elements each, rounded up to octets."""
    chunk = -(-V // (8 * cluster)) * 8
    return RowPlan(cluster, chunk, SEL_THREADS, -(-(chunk // 8) // SEL_THREADS), False, 0, 1)


SEL_MIN_CHUNK = 8 * SEL_THREADS   # a selection CTA of a cluster takes at least an octet a thread


def selection_cluster(rows: int, V: int, arch_: int, sm_count: int) -> int:
    """The cluster of a selection kernel's row: the largest of 8, 4, 2 whose CTAs (rows x
    cluster) fill at most half the SMs (clusters of 1024-thread CTAs past that queue in a
    second wave: B = 32 in clusters of 4 took 140 µs against 124 in clusters of 2, H200)
    with at least SEL_MIN_CHUNK elements each (sm_90 and later); else 1. A row's CTA alone
    makes every radix pass over the row: at B = 1 one SM did the work in ~110 µs where
    torch.topk took 33 (H200, session 14). Since the histograms' sums are pushed (session
    17) a cluster of 8 is the fastest at B = 1 for both kernels (the mask: 48.6 µs against
    71.7 in clusters of 4, bf16)."""
    if arch_ < 90:
        return 1
    for c in (8, 4, 2):
        if 2 * rows * c <= sm_count and V >= c * SEL_MIN_CHUNK:
            return c
    return 1


def vec(dtype, V: int, aligned16: bool) -> int:
    """TILEOPS_VEC: G = 16 / element size when the rows are 16-byte aligned, else 1."""
    e = dtype.itemsize
    return 16 // e if aligned16 and (V * e) % 16 == 0 else 1


def _row_opts(dtype_code: int, V: int, v: int, plan: RowPlan) -> list:
    return [f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={V}", f"-DTILEOPS_VEC={v}",
            f"-DTILEOPS_THREADS={plan.threads}", f"-DTILEOPS_CLUSTER={plan.cluster}", f"-DTILEOPS_CHUNK={plan.chunk}",
            f"-DTILEOPS_OPT={plan.opt}", f"-DTILEOPS_MIN_BLOCKS={plan.min_blocks}"]


# ---- specialisations: (source, kernel, options, plan) --------------------------------------

def softmax_specialisation(dtype_code, out_dtype_code, V, temperature, aligned16, arch_, smem_optin):
    plan = row_plan(V, arch_, smem_optin, stage_bytes=4,
                    registers=not temperature and DTYPE[dtype_code].itemsize == 2)
    opts = _row_opts(dtype_code, V, vec(DTYPE[dtype_code], V, aligned16), plan) + [
        f"-DTILEOPS_ODTYPE={out_dtype_code}", f"-DTILEOPS_OVEC={int(vec(DTYPE[out_dtype_code], V, aligned16) > 1)}",
        f"-DTILEOPS_TEMP={int(bool(temperature))}", f"-DTILEOPS_STAGE={int(plan.stage)}"]
    return "sampling/softmax.cu", "tileops_softmax", tuple(opts), plan


def argmax_specialisation(dtype_code, V, aligned16, arch_, smem_optin, one_cta=False):
    plan = row_plan(V, arch_, smem_optin, one_cta=one_cta)
    return "sampling/argmax.cu", "tileops_argmax", tuple(_row_opts(dtype_code, V, vec(DTYPE[dtype_code], V, aligned16),
                                                                    plan)), plan


def sample_specialisation(dtype_code, V, aligned16, arch_, smem_optin, one_cta=False):
    plan = row_plan(V, arch_, smem_optin, one_cta=one_cta)   # q's float32 rows are aligned when probs' are
    v = vec(DTYPE[dtype_code], V, aligned16)
    return "sampling/sample_from_probs.cu", "tileops_sample_from_probs", tuple(_row_opts(dtype_code, V, v, plan)), plan


def top_k_specialisation(dtype_code, V, k, values, aligned16, cluster=1):
    plan = selection_plan(V, cluster)
    kp = _pow2ceil(k)
    plan = plan._replace(smem=kp * 8)
    opts = _row_opts(dtype_code, V, vec(DTYPE[dtype_code], V, aligned16), plan) + [
        f"-DTILEOPS_K={k}", f"-DTILEOPS_KP={kp}", f"-DTILEOPS_VALUES={int(bool(values))}"]
    return "sampling/top_k.cu", "tileops_top_k", tuple(opts), plan


SEL_SUMS_BYTES = 2048 * 12  # sampling_common.cuh SMP_SUMS: a mask cluster's sums of its histograms


def top_k_top_p_mask_specialisation(dtype_code, V, has_k, k_dtype_code, has_p, aligned16, cluster=1):
    plan = selection_plan(V, cluster)
    plan = plan._replace(smem=SEL_SUMS_BYTES if cluster > 1 else 0)
    opts = _row_opts(dtype_code, V, vec(DTYPE[dtype_code], V, aligned16), plan) + [
        f"-DTILEOPS_HAS_K={int(bool(has_k))}", f"-DTILEOPS_HAS_P={int(bool(has_p))}",
        f"-DTILEOPS_K64={int(DTYPE[k_dtype_code] is torch.int64)}"]
    return "sampling/top_k_top_p_mask.cu", "tileops_top_k_top_p_mask", tuple(opts), plan


# ---- builds and launches -------------------------------------------------------------------

def _device_limits(device_index: int):
    from ... import runtime
    a = runtime.device_attributes(device_index)
    return a["max_shared_per_block"]


def _rows_launcher(b, spec, arg_format: str):
    """launch(rows, tensors_and_row_bytes): the kernel over `rows` rows, in pieces of at most
    GRID_MAX CTAs; each pointer advanced by its row bytes per piece (0 for a null one)."""
    from ... import runtime
    source, kernel, opts, plan = spec
    handle = runtime.build(b.device, source, kernel, opts, arg_format, pdl=True)
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream
    device = b.device
    per = GRID_MAX // plan.cluster

    def launch(rows, ptrs):
        for r0 in range(0, rows, per):
            n = min(per, rows - r0)
            launch_raw(handle, n * plan.cluster, 1, 1, plan.threads, 1, 1, plan.smem, stream_of(device),
                       *[0 if p == 0 else p + r0 * rb for p, rb in ptrs])
    return launch


def _ptr(t, row_bytes):
    return (0, 0) if t is None else (t.data_ptr(), row_bytes)


def build_softmax(b):
    spec = softmax_specialisation(b.dtype, b.out_dtype, b.V, b.temperature, b.vec, b.arch, _device_limits(b.device))
    run = _rows_launcher(b, spec, "ppp")
    e, oe = DTYPE[b.dtype].itemsize, DTYPE[b.out_dtype].itemsize

    def launch(logits, temperature, probs):
        if logits.shape[0]:
            run(logits.shape[0], (_ptr(logits, b.V * e), _ptr(temperature, 4), _ptr(probs, b.V * oe)))
    return launch


def _exact_rows_launcher(b, specialisation, arg_format: str):
    """The launcher of an exact kernel (argmax, sample: a row's result is one index, the
    same whatever the split, so the split may follow the batch): the V rule's cluster while
    the rows leave SMs idle, one CTA per row (no cluster barrier, a CTA streams its row)
    from sm_count / 2 rows on, where the clusters' short CTAs queued in waves. Each build
    made on its first use (the warm-up rule: a call at the shape before a capture)."""
    from ... import runtime
    sm_count = runtime.device_attributes(b.device)["sm_count"]
    launchers = {}

    def launch(rows, ptrs):
        whole = 2 * rows >= sm_count
        run = launchers.get(whole)
        if run is None:
            run = launchers[whole] = _rows_launcher(
                b, specialisation(b.dtype, b.V, b.vec, b.arch, _device_limits(b.device), one_cta=whole), arg_format)
        run(rows, ptrs)
    return launch


def build_argmax(b):
    run = _exact_rows_launcher(b, argmax_specialisation, "pp")
    e = DTYPE[b.dtype].itemsize

    def launch(logits, token):
        if logits.shape[0]:
            run(logits.shape[0], (_ptr(logits, b.V * e), _ptr(token, 8)))
    return launch


def build_sample(b):
    run = _exact_rows_launcher(b, sample_specialisation, "ppp")
    e = DTYPE[b.dtype].itemsize

    def launch(probs, q, token):
        if probs.shape[0]:
            run(probs.shape[0], (_ptr(probs, b.V * e), _ptr(q, b.V * 4), _ptr(token, 8)))
    return launch


def _selection_launcher(b, specialisation, arg_format: str):
    """The launcher of a selection kernel: each row over selection_cluster(rows, ...) CTAs,
    each cluster's build made on its first use (the warm-up rule: a call at the shape
    before a capture). The result does not depend on the cluster, so while a stream
    captures, a cluster not built yet falls back to one that is (the nearest)."""
    from ... import runtime
    from ...errors import NotReadyDuringCaptureError
    sm_count = runtime.device_attributes(b.device)["sm_count"]
    launchers = {}

    def launch(rows, ptrs):
        c = selection_cluster(rows, b.V, b.arch, sm_count)
        run = launchers.get(c)
        if run is None:
            try:
                run = launchers[c] = _rows_launcher(b, specialisation(c), arg_format)
            except NotReadyDuringCaptureError:
                if not launchers:
                    raise
                run = launchers[min(launchers, key=lambda have: abs(have - c))]
        run(rows, ptrs)
    return launch


def build_top_k(b):
    if b.k == 0:
        return lambda logits, values, indices: None
    run = _selection_launcher(b, lambda c: top_k_specialisation(b.dtype, b.V, b.k, b.values, b.vec, c), "ppp")
    e = DTYPE[b.dtype].itemsize

    def launch(logits, values, indices):
        if logits.shape[0]:
            run(logits.shape[0], (_ptr(logits, b.V * e), _ptr(values, b.k * e), _ptr(indices, b.k * 8)))
    return launch


def build_top_k_top_p_mask(b):
    run = _selection_launcher(
        b, lambda c: top_k_top_p_mask_specialisation(b.dtype, b.V, b.has_k, b.k_dtype, b.has_p, b.vec, c), "pppp")
    e, ke = DTYPE[b.dtype].itemsize, DTYPE[b.k_dtype].itemsize

    def launch(logits, k, p, masked):
        if logits.shape[0]:
            run(logits.shape[0], (_ptr(logits, b.V * e), _ptr(k, ke), _ptr(p, 4), _ptr(masked, b.V * e)))
    return launch
