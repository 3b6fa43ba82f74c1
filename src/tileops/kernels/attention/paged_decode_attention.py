"""PagedDecodeAttentionFwdOp's kernels: the C table entry "paged_decode_attention"
(csrc/ops/attention/paged_decode_attention.c) on the CPU and the CUDA C kernels
tileops_paged_decode_attention and tileops_paged_decode_attention_merge
(csrc/ops/attention/paged_decode_attention.cu) on a GPU.

Identities: the CPU build is a C function, so (dtype, head_size, block_size, scale); a
CUDA build is specialised at compile time on the dtype, head_size, the group size G =
H / H_kv, the query heads per CTA, the block size, the compute path (tensor cores for the
16-bit dtypes, fp32 FMAs for float32) and the depth of each warp's copy ring, per device;
scale is a launch argument. The interface declares q and key_cache shape-dependent (G is
their head counts' ratio).

Launch rule (CUDA), from shapes only (CUDA-graph safe: nothing reads seq_lens or
block_table on the host): one CTA per (sequence, KV head, head slice of <= 16 query heads
(8 for head_size 256)), of one chunk group (4 warps, two CTAs an SM) or two (8 warps, one
CTA an SM: two of the sequence's 256-token chunks at a time); when a sequence may hold
several chunks it may be split along the sequence into S CTAs of `cpc` chunks (launch_plan:
the groups and S that minimise an estimate of waves x a CTA's time), which write each
chunk's partial state to a float32 workspace of B x H x max_chunks x (head_size + 2) taken
per call from torch's caching allocator (stream-ordered, so capture-safe: a graph keeps its
allocation), and a second kernel folds them (in builds of superchunks with up to
MERGE_GROUPS groups of threads where its B x H CTAs leave SMs idle, else one group:
merge_launch_groups; a two-level fold of one group is a build of its own, made on first
use, the groups' build serving during capture before then: the same bits); where the split is small (S <= CLUSTER_MAX
CTAs a sequence on at most half the SMs, sm_90+) its S CTAs run as one thread block
cluster that folds them itself after the cluster's barrier (one launch; a build per S,
made on first use; during capture without it, the merge kernel's path: the same bits).
Both kernels are launched with programmatic dependent launch on sm_90+, as every op
kernel is (runtime.build(pdl=True): the merge is scheduled while the first kernel runs and
waits for it on the GPU; TILEOPS_PDL=0 / runtime.set_pdl(False) launches them plainly, the
same bits). The result is bitwise the
same whichever way (see the .cu); each of the two variants is built on the first call that
takes it (during capture, where nothing may be built, a call takes the other if that one is
built).

A CUDA build needs q, the caches and o 16-byte aligned (cp.async, 16-byte stores): a call
with another alignment is refused (KernelSelectionError naming the tensor); tensors from
torch's allocator are. block_table and seq_lens are read a value at a time: any view of
them (one sequence's row of a batch's table) is taken."""
from __future__ import annotations

import math

import torch

from ... import _C
from ..._dtypes import CODE, DTYPE
from ...errors import InputValueError
from ..base import Kernel, KernelInterface, checked, cpu_runner, identity_type, launch_argument_error, overlaps

CpuBuild = identity_type("CpuPagedDecodeAttentionBuild", "dtype head_size block_size scale")
CudaBuild = identity_type("CudaPagedDecodeAttentionBuild",
                          "device dtype head_size group heads_per_cta block_size mma stages scale ctas_per_sm sm_count")

THREADS = 128
WARPS = 4
CHUNK = 256                 # tokens per chunk (PDA_CH in the .cu, PDA_CH in the .c)
TILE = 16
ARG_FORMAT_CUDA = "ppppppppqqqqqqqf"
ARG_FORMAT_MERGE = "ppppqqq"   # + "q" (cpc) in builds of superchunks (merge_arg_format)
GRID_MAX = 2**31 - 1
SPLIT_MAX = 65535           # gridDim.y
SM_SHARED = 233472          # shared memory per SM on sm_90 (228 KiB); a CTA also takes 1 KiB
PER_BLOCK_SHARED = 232448   # the opt-in limit per CTA on sm_90 (227 KiB)
START = 0.25                # split_plan's cost model, in chunks of one CTA's streaming: a CTA's start,
WS_COST = 0.05              # a chunk's partial written and read back (a split), the merge kernel
MERGE_COST = 0.5
SPLIT_CPC = None            # a dev knob (dev/time_paged_decode.py --cpc): chunks per CTA, forced
CHUNK_GROUPS = None         # a dev knob (--groups): 1 or 2 chunk groups a CTA for every call; None: the rule
# A split of S <= CLUSTER_MAX CTAs a sequence that holds at most half the SMs, on sm_90+:
# the S CTAs run as one thread block cluster (-DPDA_CS=S) whose CTAs fold the partials
# after the cluster's barrier (the merge kernel's operations: the same bits), so no merge
# kernel is launched. 0 turns it off (dev/time_paged_decode.py --cluster-ab: the A/B).
CLUSTER_MAX = 8
# Chunks a superchunk (-DPDA_SC; the .cu's "Superchunks"): 1 folds a sequence's chunks in
# order; > 1 folds superchunks of that many chunks, each from empty, so that a split whose
# CTAs take whole superchunks stores one partial a superchunk instead of one a chunk (a
# split's per-chunk stores cost 8-14 % at 32K tokens: dev/time_pda_ws.py, session 13). A
# call folds by superchunks only where its block table holds more than SUPERCHUNK chunks
# (fold_of: the same bits for every sequence whatever the batch). 8 since session 18 (H200,
# benchmarks/results/h200/session18/pda_sc1_quick.json against pda_sc8_quick2.json, fp16
# hot): Llama-3-8B B = 1 32K 42.7 -> 38.1 µs (SDPA on gathered K/V 37.2; cold 52.5 -> 49.1,
# SDPA 50.3), B = 1 4K 7.65 -> 8.28 (SDPA 9.25), B = 1 1K 6.32 either way (the plain build),
# B = 32 within 1 %. A dev knob too (dev/time_paged_decode.py --superchunk): set it before an
# op's first call.
SUPERCHUNK = 8
MERGE_BATCH = 16            # partials the merge folds at once (PDA_MB): a superchunk must divide it
MERGE_GROUPS = 4            # builds of superchunks: the merge kernel's groups of a thread a channel (PDA_MG),
MERGE_THREADS_MAX = 512     # at most this many threads in all (merge_groups)


def merge_threads(head_size: int) -> int:
    """Threads of one group of the merge kernel: a thread a channel, a whole warp's worth."""
    return max(32, -(-head_size // 32) * 32)


def merge_groups(head_size: int, superchunk: int) -> int:
    """The most thread groups the merge kernel may launch with (-DPDA_MG, given to builds of
    superchunks; it bounds the block): in builds of superchunks MERGE_GROUPS, fewer where that
    many groups would pass MERGE_THREADS_MAX threads (head_size 256: 2); else 1."""
    if superchunk <= 1:
        return 1
    return max(1, min(MERGE_GROUPS, MERGE_THREADS_MAX // merge_threads(head_size)))


def merge_launch_groups(head_size: int, superchunk: int, two_level: bool, merge_ctas: int, sm_count: int) -> int:
    """The merge kernel's thread groups G for one launch: merge_groups (the build of
    -DPDA_MG = merge_groups) where the partials are folded in two levels (each chunk's
    partial stored: the only fold the groups serve) and the merge's B x H CTAs leave SMs
    idle; else 1 (for two levels the build of -DPDA_MG = 1: the one-group fold, its loads
    overlapping its fold). H100, Llama-3-70B TP4: B = 32 32K, the merge 12.48 us with 4
    groups, 5.19 with 1; B = 1, 128 partials, 4.27 against 5.73. Shapes only, never
    values; the same bits whatever G."""
    if not two_level or merge_ctas >= sm_count:
        return 1
    return merge_groups(head_size, superchunk)


def _superchunk(superchunk):
    """superchunk, or the SUPERCHUNK knob for None."""
    return SUPERCHUNK if superchunk is None else superchunk
# The dtypes (codes) the tensor-core path serves; the others take the fp32-FMA path, which
# serves every dtype: empty this set (before an op's first call) to run float16 and
# bfloat16 on the FMA path too (tests/gpu compare the two).
MMA_DTYPES = frozenset({1, 2})
# A ring depth for every build (1 .. 4), instead of choose_stages's: a tuning knob for
# dev/time_paged_decode.py --stages (set before an op's first call); None: choose_stages.
STAGES = None


class PagedDecodeAttentionInterface(KernelInterface):
    """launch(q, key_cache, value_cache, block_table, seq_lens, o, lse): writes o (and lse,
    None when not asked for)."""
    name = "paged_decode_attention"
    implementations = ("paged_decode_attention",)
    shape_dependent = ("q", "key_cache")
    launchable = "launch(q, key_cache, value_cache, block_table, seq_lens, o, lse): writes o and lse"


# ---- the CUDA build: pure functions of the identity (tests compile every kind with nvcc) ----

def heads_per_cta(head_size: int, group: int) -> int:
    """Query heads one CTA serves: the whole group up to 16 (8 for head_size > 128: the
    registers of the O^T fragments); a larger group is served in slices of that many."""
    return min(group, 16 if head_size <= 128 else 8)


def smem_bytes(dtype_code: int, head_size: int, heads: int, stages: int, mma: bool, groups: int = 1) -> int:
    """Dynamic shared memory of the main kernel (PDA_SMEM in the .cu): each warp's ring of
    `stages` K and V tiles of 16 rows, the warps' states (the running fold is in registers),
    and for the FMA path q and P in fp32; a CTA has 4 x `groups` warps."""
    e = DTYPE[dtype_code].itemsize
    g8 = -(-heads // 8) * 8
    warps = WARPS * groups
    rows = warps * stages * 2 * TILE * head_size * e
    fold = 4 * warps * g8 * (head_size + 2)
    extra = 0 if mma else 4 * g8 * head_size + 4 * warps * g8 * TILE
    return rows + fold + extra


def groups_allowed(head_size: int, heads: int, dtype_code: int = 1, mma: bool = True,
                   per_block: int = PER_BLOCK_SHARED) -> bool:
    """Two chunk groups (8 warps): each of the fold's 256 threads takes whole channels
    (head_size a multiple of 256 / (heads rounded up to 8)), and a 2-deep ring fits a CTA's
    shared memory."""
    return (head_size % (2 * THREADS // (-(-heads // 8) * 8)) == 0
            and smem_bytes(dtype_code, head_size, heads, 2, mma, 2) <= per_block)


def choose_stages(dtype_code: int, head_size: int, heads: int, mma: bool,
                  per_block: int = PER_BLOCK_SHARED, per_sm: int = SM_SHARED, groups: int = 1) -> tuple:
    """(stages, CTAs per SM): one chunk group: a 2-deep ring where two CTAs share an SM, else
    the deepest ring (<= 3) one CTA can hold; two groups (8 warps, one CTA an SM): a 2-deep
    ring (groups_allowed says it fits)."""
    def size(st):
        return smem_bytes(dtype_code, head_size, heads, st, mma, groups)

    def fits(st):
        return per_sm // (size(st) + 1024)
    if STAGES is not None and size(STAGES) <= per_block:
        return STAGES, max(1, fits(STAGES))
    if groups == 1:
        for st in (2,):   # H200: 2 CTAs of 2 stages beat 2 CTAs of 3 (dev/NOTES.md, session 8)
            if fits(st) >= 2 and size(st) <= per_block:
                return st, fits(st)
    for st in ((3, 2, 1) if groups == 1 else (2,)):
        if size(st) <= per_block:
            return st, max(1, fits(st))
    raise ValueError(f"paged_decode_attention: no ring fits {per_block} bytes of shared memory "
                     f"(head_size {head_size}, {heads} heads per CTA, {groups} chunk groups)")


def cuda_specialisation(dtype_code, head_size, group, heads, block_size, mma, stages, groups=1, cluster=1,
                        superchunk=None, merge_groups_=None):
    """(source, kernel, merge kernel, options): pure, no GPU. cluster > 1: the build whose
    grid.y (the split) is one cluster, whose CTAs merge the partials themselves;
    superchunk: chunks a superchunk (None: SUPERCHUNK); merge_groups_: the merge kernel's
    groups in builds of superchunks (None: merge_groups; 1: the one-group merge)."""
    sc = _superchunk(superchunk)
    if sc < 1 or MERGE_BATCH % sc:
        raise ValueError(f"paged_decode_attention: SUPERCHUNK must divide {MERGE_BATCH} (the merge's batch of "
                         f"partials), got {sc}")
    e = DTYPE[dtype_code].itemsize
    opts = (f"-DTILEOPS_DTYPE={dtype_code}", f"-DTILEOPS_N={head_size}", f"-DTILEOPS_VEC={16 // e}",
            f"-DTILEOPS_THREADS={THREADS * groups}", f"-DPDA_D={head_size}", f"-DPDA_G={group}",
            f"-DPDA_GS={heads}", f"-DPDA_BS={block_size}", f"-DPDA_MMA={int(bool(mma))}",
            f"-DPDA_STAGES={stages}", f"-DPDA_CG={groups}") + ((f"-DPDA_CS={cluster}",) if cluster > 1 else ()) + (
        (f"-DPDA_MG={merge_groups(head_size, sc) if merge_groups_ is None else merge_groups_}", f"-DPDA_SC={sc}")
        if sc > 1 else ())
    return ("attention/paged_decode_attention.cu", "tileops_paged_decode_attention",
            "tileops_paged_decode_attention_merge", opts)


def merge_arg_format(superchunk: int) -> str:
    """The merge kernel's argument format: cpc follows in builds of superchunks (the merge
    reads how the partials were stored from it)."""
    return ARG_FORMAT_MERGE + ("q" if superchunk > 1 else "")


def split_plan(ctas: int, max_chunks: int, slots: int, groups: int = 1, superchunk: int = None) -> tuple:
    """(S, cpc): CTAs per (sequence, KV head, slice) along the sequence and chunks per CTA,
    from shapes only. Every CTA streams cpc chunks, so the time is about the number of waves
    of `slots` CTAs times a CTA's time: cpc chunks plus START (a CTA's first copies and its
    fold, in chunks); a split (S > 1) also writes and reads each chunk's partial (WS_COST per
    chunk) and launches the merge (MERGE_COST). The plan minimises that estimate over cpc
    (the fewer CTAs on a tie): one wave of long CTAs where ctas x S fills it (a last wave a
    fifth full costs a whole wave), short CTAs when a sequence's chunks must spread over
    idle SMs. A CTA of `groups` chunk groups streams that many chunks at once
    (ceil(cpc / groups) rounds). In builds of superchunks (superchunk: chunks a superchunk,
    None: SUPERCHUNK), a CTA of whole superchunks stores one partial a superchunk: WS_COST
    divided by it. SPLIT_CPC (a dev knob) forces cpc."""
    return _plan(ctas, max_chunks, slots, groups, _superchunk(superchunk))[1:]


def _plan(ctas: int, max_chunks: int, slots: int, groups: int, sc: int) -> tuple:
    """(estimated cost, S, cpc) of split_plan."""
    if max_chunks < 2:
        return (-(-ctas // slots) * (1 + START), 1, max_chunks)
    best = None
    for cpc in ([SPLIT_CPC] if SPLIT_CPC else range(1, max_chunks + 1)):
        s = -(-max_chunks // cpc)
        if s > SPLIT_MAX:
            continue
        fewest = -(-max_chunks // s)             # the same S with the fewest chunks per CTA,
        if sc == 1 or cpc % sc or fewest % sc == 0:   # unless that breaks whole superchunks
            cpc = fewest
        waves = -(-ctas * s // slots)
        rounds = -(-cpc // groups)
        ws = WS_COST / sc if cpc % sc == 0 else WS_COST
        cost = waves * (rounds * (1 + (ws if s > 1 else 0)) + START) + (MERGE_COST if s > 1 else 0)
        if best is None or cost < best[0] - 1e-9 or (cost < best[0] + 1e-9 and s < best[1]):
            best = (cost, s, cpc)
    return best


def launch_plan(ctas: int, max_chunks: int, slots1: int, slots2: int, allowed: bool,
                superchunk: int = None) -> tuple:
    """(groups, S, cpc): one chunk group a CTA (4 warps, `slots1` CTAs a wave) or two (8
    warps, `slots2`), whichever split_plan's estimate finds cheaper (one on a tie): two
    where one group would need a split's workspace to fill the GPU and two need none (few
    (sequence, KV head) pairs, long sequences: Qwen2.5's 4 KV heads at B = 32). Both give
    the same bits. CHUNK_GROUPS (a dev knob) forces the groups; superchunk: split_plan's."""
    sc = _superchunk(superchunk)
    plans = {1: _plan(ctas, max_chunks, slots1, 1, sc)}
    if allowed and CHUNK_GROUPS != 1:
        plans[2] = _plan(ctas, max_chunks, slots2, 2, sc)
    if CHUNK_GROUPS in plans:
        g = CHUNK_GROUPS
    else:
        g = min(plans, key=lambda k: (plans[k][0] - (1e-9 if k == 1 else 0), k))
    return (g,) + plans[g][1:]


# ---- what a launchable checks before it hands pointers to C ---------------------------------

def _guard(b, device_index: int):
    dt = DTYPE[b.dtype]
    D, BS = b.head_size, b.block_size
    where = "cpu" if device_index < 0 else f"cuda:{device_index}"
    head = f"paged_decode_attention (launch of the {dt} build, head_size {D}, block_size {BS}, on {where})"
    group = getattr(b, "group", None)

    def fail(name, t, expected):
        raise launch_argument_error(head, name, t, expected)

    def ok(t, dtype, ndim):
        return (isinstance(t, torch.Tensor) and t.dtype is dtype and t.get_device() == device_index
                and t.dim() == ndim and t.is_contiguous() and not t.is_neg())

    def check(q, key_cache, value_cache, block_table, seq_lens, o, lse):
        if not (ok(q, dt, 3) and q.shape[2] == D):
            fail("q", q, f"a contiguous {dt} tensor [B, H, {D}] on {where}")
        B, H = q.shape[0], q.shape[1]
        if not (ok(key_cache, dt, 4) and key_cache.shape[1] == BS and key_cache.shape[3] == D
                and key_cache.shape[2] >= 1 and H % key_cache.shape[2] == 0
                and (group is None or H == group * key_cache.shape[2])):
            fail("key_cache", key_cache, f"a contiguous {dt} tensor [N, {BS}, H_kv, {D}] on {where}, H_kv dividing "
                                         f"H = {H}" + (f" by {group}" if group else ""))
        if not (ok(value_cache, dt, 4) and value_cache.shape == key_cache.shape):
            fail("value_cache", value_cache, f"a contiguous {dt} tensor of key_cache's shape on {where}")
        if not (ok(block_table, torch.int32, 2) and block_table.shape[0] == B):
            fail("block_table", block_table, f"a contiguous int32 tensor [{B}, max_blocks] on {where}")
        if not (ok(seq_lens, torch.int32, 1) and seq_lens.shape[0] == B):
            fail("seq_lens", seq_lens, f"a contiguous int32 tensor [{B}] on {where}")
        if not (ok(o, dt, 3) and o.shape == q.shape):
            fail("o", o, f"a contiguous {dt} tensor of q's shape on {where}")
        if lse is not None and not (ok(lse, torch.float32, 2) and tuple(lse.shape) == (B, H)):
            fail("lse", lse, f"None or a contiguous float32 tensor [{B}, {H}] on {where}")
        ins = (q, key_cache, value_cache, block_table, seq_lens)
        if overlaps(o, ins + ((lse,) if lse is not None else ())) or (lse is not None and overlaps(lse, ins)):
            raise InputValueError(f"{head}: argument 'o' or 'lse': it overlaps another tensor in memory")
        if device_index >= 0 and any(t.data_ptr() % 16 for t in (q, key_cache, value_cache, o)):
            raise InputValueError(f"{head}: the CUDA kernel takes 16-byte aligned q, key_cache, value_cache and o")
        if device_index >= 0 and math.prod(key_cache.shape[1:]) * key_cache.element_size() >= 2**31:
            fail("key_cache", key_cache, "cache blocks of less than 2 GiB each (the CUDA kernel's row offsets are 32-bit)")
    return check


def _build_cpu(b):
    # a length or block id out of range: found before any write
    run, _ = cpu_runner("paged_decode_attention", "PagedDecodeAttentionFwdOp")
    D, BS, scale, dtype = b.head_size, b.block_size, b.scale, b.dtype

    def unchecked(q, key_cache, value_cache, block_table, seq_lens, o, lse):
        B, H, _ = q.shape
        run(q.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(), block_table.data_ptr(), seq_lens.data_ptr(),
            o.data_ptr(), 0 if lse is None else lse.data_ptr(), B, H, key_cache.shape[2], D, key_cache.shape[0], BS,
            block_table.shape[1], scale, dtype)
    return checked(_guard(b, -1), unchecked)


def fold_of(max_chunks: int, superchunk: int = None) -> int:
    """The superchunk a call's build folds by: SUPERCHUNK (None: the knob) where the block
    table holds more than SUPERCHUNK chunks, else 1 (the plain build). Batch invariant: a
    sequence of at most SUPERCHUNK chunks gets the same bits from both builds (its one
    superchunk, folded from empty, is folded into an empty state: merge(empty, x) is x
    exactly), and a longer one only ever lives in a table of more than SUPERCHUNK chunks, so
    it always takes the build of superchunks. The plain build where every sequence is short
    keeps its speed there (a build of superchunks is 0.4-1.1 µs slower where a split's CTAs
    take one chunk: H200, session 14)."""
    sc = _superchunk(superchunk)
    return sc if max_chunks > sc else 1


def _build_cuda(b):
    """The launchable. Its variants (one chunk group a CTA or two; folded by superchunks or
    not, fold_of) are built on the first call that takes them. The two chunk groups compute
    the same bits: during CUDA graph capture, where nothing may be built, a call takes the
    other if that one exists (never a build of another fold)."""
    from ... import runtime
    from ...errors import NotReadyDuringCaptureError
    D, BS, device = b.head_size, b.block_size, b.device
    per_block = runtime.device_attributes(device)["max_shared_per_block"]
    allowed = groups_allowed(D, b.heads_per_cta, b.dtype, b.mma, per_block)
    zs = -(-b.group // b.heads_per_cta)
    scale_log2 = b.scale * math.log2(math.e)
    superchunk = SUPERCHUNK   # read once: the launchable's calls fold by it (fold_of) or by 1
    launch_raw = _C.cuda_launch
    stream_of = torch._C._cuda_getCurrentRawStream
    empty = torch.empty
    f32 = torch.float32
    # groups -> (stages, CTAs per SM): the identity's ring for one group, choose_stages' for two
    rings = {1: (b.stages, b.ctas_per_sm)}
    if allowed:
        rings[2] = choose_stages(b.dtype, D, b.heads_per_cta, b.mma, per_block=per_block, groups=2)
    variants = {}   # (groups, fold) -> (handle, merge, smem, slots)
    one_group = {}  # fold -> the one-group merge of a build of superchunks (merge_for), made on first use
    clustered = {}  # (groups, S, fold) -> the cluster build's handle, made on first use
    clusters_ok = tuple(runtime.device_attributes(device)["arch"]) >= (9, 0)
    plans = {}      # (ctas, max_chunks, the dev knobs) -> (fold_of, launch_plan's groups, S, cpc): shapes only

    def variant(g, sc):
        v = variants.get((g, sc))
        if v is not None:
            return g, v
        stages, per_sm = rings[g]
        src, kernel, merge_kernel, opts = cuda_specialisation(b.dtype, D, b.group, b.heads_per_cta, BS, b.mma,
                                                              stages, g, superchunk=sc)
        merge_format = merge_arg_format(sc)
        try:
            v = (runtime.build(device, src, kernel, opts, ARG_FORMAT_CUDA, pdl=True),
                 runtime.build(device, src, merge_kernel, opts, merge_format, pdl=True),
                 smem_bytes(b.dtype, D, b.heads_per_cta, stages, b.mma, g), b.sm_count * per_sm)
        except NotReadyDuringCaptureError as e:
            for (g2, sc2), v2 in variants.items():
                if sc2 == sc:   # the other chunk groups, the same fold: the same bits
                    return g2, v2
            raise NotReadyDuringCaptureError(
                f"PagedDecodeAttentionFwdOp: the {DTYPE[b.dtype]} build for head_size {D}, group {b.group}, "
                f"block_size {BS}{f', superchunks of {sc} chunks' if sc > 1 else ''} on cuda:{device} is not "
                f"built and the stream is being captured into a CUDA graph. Building (compile, load) is not "
                f"allowed during capture: call the op once at this batch size and block-table width before "
                f"capture (warm-up). [{e}]") from None
        variants[(g, sc)] = v
        return g, v

    def cluster_build(g, s, sc):
        """The (groups, S) cluster build, made on first use; None while capturing before it
        was made (the merge kernel's path serves: the same bits)."""
        key = (g, s, sc)
        if key in clustered:
            return clustered[key]
        opts = cuda_specialisation(b.dtype, D, b.group, b.heads_per_cta, BS, b.mma, rings[g][0], g, s, sc)[3]
        h = runtime.build_unless_capturing(device, "attention/paged_decode_attention.cu",
                                           "tileops_paged_decode_attention", opts, ARG_FORMAT_CUDA, pdl=True)
        if h is not None:
            clustered[key] = h
        return h

    def merge_for(sc, merge, two_level, merge_ctas):
        """(merge kernel, block) for a launch: the build of merge_launch_groups' G. A one-level
        fold is group 0's alone in either build: the variant's (groups') build with one
        group's block (more groups would load batches they never fold). A two-level fold of
        one group where the groups' build has more takes the one-group merge (its code
        depends on neither the chunk groups nor the ring: one build a fold, made on first
        use; while capturing before it was made, the groups' build serves: the same bits)."""
        g = merge_launch_groups(D, sc, two_level, merge_ctas, b.sm_count)
        mg = merge_groups(D, sc)
        if g == mg or not two_level:
            return merge, merge_threads(D) * g
        h = one_group.get(sc)
        if h is None:
            opts = cuda_specialisation(b.dtype, D, b.group, b.heads_per_cta, BS, b.mma, rings[1][0], 1,
                                       superchunk=sc, merge_groups_=1)[3]
            h = runtime.build_unless_capturing(device, "attention/paged_decode_attention.cu",
                                               "tileops_paged_decode_attention_merge", opts, merge_arg_format(sc),
                                               pdl=True)
            if h is None:
                return merge, merge_threads(D) * mg
            one_group[sc] = h
        return h, merge_threads(D)

    variant(1, 1)   # the one-group plain build: made with the op's first call, as before
    slots1 = variants[(1, 1)][3]
    slots2 = b.sm_count * rings[2][1] if allowed else slots1

    def plan(ctas, max_chunks):
        """(fold, groups, S, cpc): fold_of and launch_plan, once per (ctas, max_chunks): the
        search over cpc is ~0.2 ms of Python at 32K tokens, too much for every call."""
        key = (ctas, max_chunks, CHUNK_GROUPS, SPLIT_CPC)
        p = plans.get(key)
        if p is None:
            sc = fold_of(max_chunks, superchunk)
            p = plans[key] = (sc,) + launch_plan(ctas, max_chunks, slots1, slots2, allowed, sc)
        return p

    def unchecked(q, key_cache, value_cache, block_table, seq_lens, o, lse):
        B, H, _ = q.shape
        h_kv, mb = key_cache.shape[2], block_table.shape[1]
        if B == 0 or H == 0:
            return
        max_chunks = -(-mb * BS // CHUNK)
        ctas = B * h_kv * zs
        if ctas > GRID_MAX or B * H > GRID_MAX:
            raise InputValueError(f"PagedDecodeAttentionFwdOp: {B} sequences x {H} heads exceed the CUDA grid")
        sc, g, s, cpc = plan(ctas, max_chunks)
        g2, (handle, merge, smem, slots) = variant(g, sc)
        if g2 != g:   # capturing, the other variant built: its own plan (the same bits)
            g, (s, cpc) = g2, split_plan(ctas, max_chunks, slots, g2, sc)
        ws = empty(B * H * max_chunks * (D + 2), dtype=f32, device=q.device) if s > 1 else None
        stream = stream_of(device)
        lse_p = 0 if lse is None else lse.data_ptr()
        fused = None
        if 1 < s <= CLUSTER_MAX and clusters_ok and 2 * ctas * s <= b.sm_count:
            # the cluster's merge where the split holds at most half the SMs (H200: B = 1 and
            # 2 at 1K tokens 0.5-1.1 µs faster hot, 1.2-1.9 cold; a wave of 128 CTAs in
            # clusters of 4 was 0.3 µs slower hot than the merge kernel; dev/NOTES.md session 12)
            fused = cluster_build(g, s, sc)
        launch_raw(handle if fused is None else fused, ctas, s, 1, THREADS * g, 1, 1, smem, stream, q.data_ptr(),
                   key_cache.data_ptr(), value_cache.data_ptr(), block_table.data_ptr(), seq_lens.data_ptr(),
                   o.data_ptr(), lse_p, 0 if ws is None else ws.data_ptr(), H, h_kv, key_cache.shape[0], mb,
                   max_chunks, cpc, zs, scale_log2)
        if ws is not None and fused is None:
            merge, block = merge_for(sc, merge, sc > 1 and cpc % sc != 0, B * H)
            launch_raw(merge, B * H, 1, 1, block, 1, 1, 0, stream,
                       ws.data_ptr(), seq_lens.data_ptr(),
                       o.data_ptr(), lse_p, H, mb, max_chunks, *((cpc,) if sc > 1 else ()))
    return checked(_guard(b, b.device), unchecked)


VECTOR_TENSORS = frozenset(("q", "key_cache", "value_cache", "o"))   # read / written in 16-byte groups


class PagedDecodeAttentionKernel(Kernel):
    """The one implementation (C on the CPU, CUDA C on a GPU)."""
    interface = "paged_decode_attention"

    @classmethod
    def refusal(cls, call):
        why = super().refusal(call)
        bad = sorted(call.unaligned16 & VECTOR_TENSORS)
        if why is None and call.device.type == "cuda" and bad:
            why = (f"the CUDA kernel copies 16-byte groups (cp.async) of q, the caches and o, which must be 16-byte "
                   f"aligned; {', '.join(bad)} is not (a view at an offset?)")
        return why

    @classmethod
    def entry_for(cls, call):
        p = call.params
        dtype = CODE[call.dtype("q")]
        D, BS, scale = int(p["head_size"]), int(p["block_size"]), float(p["scale"])
        if call.device.type == "cpu":
            return CpuBuild(dtype=dtype, head_size=D, block_size=BS, scale=scale)
        from ... import runtime
        device = call.device.index or 0
        h, h_kv = call.inputs["q"].shape[1], call.inputs["key_cache"].shape[2]
        group = max(1, h // max(h_kv, 1))
        heads = heads_per_cta(D, group)
        mma = dtype in MMA_DTYPES and DTYPE[dtype].itemsize == 2
        stages, per_sm = choose_stages(dtype, D, heads, mma,
                                       per_block=runtime.device_attributes(device)["max_shared_per_block"])
        return CudaBuild(device=device, dtype=dtype, head_size=D, group=group, heads_per_cta=heads, block_size=BS,
                         mma=mma, stages=stages, scale=scale, ctas_per_sm=per_sm,
                         sm_count=runtime.device_attributes(device)["sm_count"])

    @classmethod
    def build(cls, identity):
        return _build_cpu(identity) if isinstance(identity, CpuBuild) else _build_cuda(identity)
