"""PagedDecodeAttentionFwdOp on a GPU beyond the generic driver (tests/gpu/test_gpu_ops.py).

  * numerics against the float64 reference (o and lse) for the manifest's models (group
    sizes 4, 7, 8), MHA, head sizes 64, 128, 256, a 20-head group (served in slices),
    block sizes 16, 64 and 5, lengths 0, 1, mid-block, a chunk's edge and many chunks,
    both launch plans (split along the sequence with the merge kernel, and not), float16
    and bfloat16 on tensor cores, float32 (and float16) on the FMA path; against torch's
    scaled_dot_product_attention on the gathered keys and values, and the CPU kernel;
  * batch invariance: a sequence's o and lse bitwise the same alone, among others, in a
    batch large enough not to split, with a wider block table;
  * a CUDA graph captured once and replayed with new seq_lens (0 and 1 to the table's
    full length) and new block tables, against eager calls and the reference;
  * the documented outcome of bad input: a block id outside [0, num_blocks) among a
    sequence's blocks, or a length outside [0, max_blocks * block_size], gives that
    sequence NaN (o and lse), nothing read out of bounds (unused and bad entries are
    2^31 - 1 or negative: dereferenced, they would fault), the others bitwise unchanged;
  * a misaligned tensor is refused naming the alignment;
  * a small split merged inside its thread block cluster (sm_90+, one launch) gives the
    merge kernel's bits: S of 2 to 8, one or two chunk groups, empty CTAs, bad input, a
    CUDA graph replayed with new lengths;
  * superchunks (the SUPERCHUNK knob at 8): one result whatever the split stores, and a
    short sequence's from the plain build (a narrow table) and the build of superchunks.
Skipped without CUDA (tests/gpu/conftest.py)."""
import pytest
import torch
import torch.nn.functional as F

import paged_decode_inputs as inputs
from paged_decode_inputs import make, ref64
from tileops.attention import PagedDecodeAttentionFwdOp
from tileops.errors import KernelSelectionError
from tileops.kernels.attention import paged_decode_attention as K
from tileops.reference.attention import gather_paged

DEV = "cuda"
# o against float64: the output's rounding, and (tensor cores) p rounded to the dtype for P V
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
LENS = [0, 1, 37, 256, 257, 1000, 4100]


def run(op, q, kc, vc, bt, sl):
    o, lse = op(q, kc, vc, bt, sl, return_lse=True)
    torch.cuda.synchronize()
    return o, lse


def check_close(op, args, o, lse, dtype):
    want_o, want_lse = ref64(op, *args)
    tol = TOL[dtype]
    torch.testing.assert_close(o.cpu().double(), want_o, rtol=tol, atol=tol)
    torch.testing.assert_close(lse.cpu().double(), want_lse, rtol=1e-4, atol=1e-4)


@pytest.fixture
def fma_path(monkeypatch):
    """Every dtype on the fp32-FMA path (the tensor-core path's fallback)."""
    monkeypatch.setattr(K, "MMA_DTYPES", frozenset())


# (H, H_kv, head_size, block_size): Llama-3-8B, Qwen2.5-7B, Llama-3-70B TP4, MHA, D 64 with 5-token
# blocks, D 256, a 20-head group (two slices), D 80 (rows of 10 segments: the last 2 unswizzled)
MODELS = [(32, 8, 128, 16), (28, 4, 128, 64), (16, 2, 128, 16), (8, 8, 128, 16), (8, 1, 64, 5), (16, 2, 256, 16),
          (40, 2, 128, 16), (12, 2, 80, 16)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("H,Hkv,D,BS", MODELS)
def test_matches_the_float64_reference(dtype, H, Hkv, D, BS):
    op = PagedDecodeAttentionFwdOp(D, BS)
    args = make(len(LENS), H, Hkv, D, BS, LENS, dtype, device=DEV)        # few CTAs: split + merge kernel
    o, lse = run(op, *args)
    check_close(op, args, o, lse, dtype)
    assert torch.isneginf(lse[0]).all() and torch.equal(o[0], torch.zeros_like(o[0]))
    many = [LENS[i % 6] for i in range(300 // Hkv + 1)]                   # >= 300 CTAs: no split
    args = make(len(many), H, Hkv, D, BS, many, dtype, seed=1, device=DEV)
    o, lse = run(op, *args)
    check_close(op, args, o, lse, dtype)
    cpu_o = PagedDecodeAttentionFwdOp(D, BS)(*(t.cpu() for t in args))
    torch.testing.assert_close(o.cpu(), cpu_o, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_fma_path_matches_the_reference_for_16_bit_dtypes(fma_path, dtype):
    op = PagedDecodeAttentionFwdOp(128, 16)
    args = make(len(LENS), 32, 8, 128, 16, LENS, dtype, device=DEV)
    o, lse = run(op, *args)
    check_close(op, args, o, lse, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_matches_sdpa_on_the_gathered_keys_and_values(dtype):
    H, Hkv, D, BS = 32, 8, 128, 16
    lens = [4096, 4096]
    op = PagedDecodeAttentionFwdOp(D, BS)
    q, kc, vc, bt, sl = make(2, H, Hkv, D, BS, lens, dtype, device=DEV)
    o = op(q, kc, vc, bt, sl)
    k = gather_paged(kc, bt, sl, BS).transpose(1, 2)
    v = gather_paged(vc, bt, sl, BS).transpose(1, 2)
    want = F.scaled_dot_product_attention(q.unsqueeze(2), k, v, enable_gqa=True).squeeze(2)
    torch.testing.assert_close(o, want, rtol=TOL[dtype], atol=TOL[dtype])


def _invariance(dtype, H=32, Hkv=8, D=128, BS=16):
    lens = [5000, 37, 0, 256, 1, 700]
    op = PagedDecodeAttentionFwdOp(D, BS)
    q, kc, vc, bt, sl = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=7, device=DEV)
    full = run(op, q, kc, vc, bt, sl)                                          # split
    alone = [run(op, q[i:i + 1], kc, vc, bt[i:i + 1], sl[i:i + 1]) for i in range(len(lens))]
    wide = run(op, q, kc, vc, torch.cat([bt, bt], dim=1), sl)                  # a wider table, more chunks
    reps = 300 // Hkv + 1
    big = run(op, q.repeat(reps, 1, 1), kc, vc, bt.repeat(reps, 1), sl.repeat(reps))   # no split
    assert K.split_plan(len(lens) * Hkv, -(-bt.shape[1] * BS // K.CHUNK), 132)[0] > 1   # the first two split
    for i in range(len(lens)):
        for o, lse in (full, wide):
            assert torch.equal(o[i], alone[i][0][0]) and torch.equal(lse[i], alone[i][1][0]), i
        for r in range(reps):
            j = r * len(lens) + i
            assert torch.equal(big[0][j], alone[i][0][0]) and torch.equal(big[1][j], alone[i][1][0]), (i, r)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_a_sequence_gives_the_same_bits_whatever_else_is_in_the_batch(dtype):
    _invariance(dtype)


def test_the_same_bits_on_the_fma_path_too(fma_path):
    _invariance(torch.float16, H=28, Hkv=4)


@pytest.mark.parametrize("B,Hkv", [(4, 8), (48, 8)])     # split + merge kernel; one CTA per (sequence, KV head)
def test_a_cuda_graph_replays_with_new_lengths_and_block_tables(B, Hkv):
    H, D, BS, dtype = 4 * Hkv, 128, 16, torch.float16
    mb = 80                                                # up to 1280 tokens: 5 chunks
    lens = [mb * BS] * B
    op = PagedDecodeAttentionFwdOp(D, BS)
    q, kc, vc, bt, sl = make(B, H, Hkv, D, BS, lens, dtype, spare=40, device=DEV)
    N = kc.shape[0]
    o, lse = op(q, kc, vc, bt, sl, return_lse=True)        # warm up: builds outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, lse = op(q, kc, vc, bt, sl, return_lse=True)
    g = torch.Generator().manual_seed(5)
    for step in range(6):
        new_lens = torch.randint(1, mb * BS + 1, (B,), generator=g, dtype=torch.int32)
        new_lens[0] = [0, 1, mb * BS, 17, 256, 1000][step]
        table = torch.randperm(N, generator=g)[:B * mb].view(B, mb).to(torch.int32)
        sl.copy_(new_lens)
        bt.copy_(table)
        graph.replay()
        torch.cuda.synchronize()
        eager_o, eager_lse = op(q, kc, vc, bt, sl, return_lse=True)
        assert torch.equal(o, eager_o) and torch.equal(lse, eager_lse), step
        check_close(op, (q, kc, vc, bt, sl), o, lse, dtype)


@pytest.mark.parametrize("B", [6, 60])                      # split (merge kernel writes the NaNs) and not
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_bad_block_ids_and_lengths_give_that_sequence_nan_and_read_nothing_outside(B, dtype):
    H, Hkv, D, BS = 16, 4, 64, 16
    lens = [(300 + 97 * i) % 900 + 1 for i in range(B)]
    op = PagedDecodeAttentionFwdOp(D, BS)
    q, kc, vc, bt, sl = make(B, H, Hkv, D, BS, lens, dtype, device=DEV)
    good = run(op, q, kc, vc, bt, sl)
    N, mb = kc.shape[0], bt.shape[1]
    bad_bt, bad_sl = bt.clone(), sl.clone()
    bad_bt[1, (lens[1] - 1) // BS] = N                      # the last block of sequence 1
    bad_bt[2, 0] = -1
    bad_bt[3, 0] = inputs.GARBAGE
    bad_sl[4] = mb * BS + 1                                 # past the table
    bad_sl[5] = -2**31
    o, lse = run(op, q, kc, vc, bad_bt, bad_sl)             # a fault here would fail the sync
    for b in range(B):
        if 1 <= b <= 5:
            assert o[b].isnan().all() and lse[b].isnan().all(), b
        else:
            assert torch.equal(o[b], good[0][b]) and torch.equal(lse[b], good[1][b]), b


def test_a_misaligned_tensor_is_refused_naming_the_alignment():
    q, kc, vc, bt, sl = make(2, 8, 2, 64, 16, [20, 3], torch.float16, device=DEV)
    buf = torch.empty(q.numel() + 1, dtype=q.dtype, device=DEV)
    shifted = buf[1:].view(q.shape)
    shifted.copy_(q)
    with pytest.raises(KernelSelectionError, match="16-byte aligned"):
        PagedDecodeAttentionFwdOp(64, 16)(shifted, kc, vc, bt, sl)


# (H, H_kv, head_size, block_size): the models two chunk groups serve (G 4, 7, 8; a 20-head group's
# slices; D 64 with 5-token blocks) -- every build groups_allowed admits
GROUP_MODELS = [(32, 8, 128, 16), (28, 4, 128, 64), (16, 2, 128, 16), (40, 2, 128, 16), (8, 1, 64, 5)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("H,Hkv,D,BS", GROUP_MODELS)
def test_two_chunk_groups_give_one_groups_bits(monkeypatch, dtype, H, Hkv, D, BS):
    """A CTA of two chunk groups (8 warps, two chunks a round, folded in chunk order) gives
    the one-group kernel's o and lse bit for bit, split or not: odd chunk counts (a round with
    one group idle), a split's last CTA with a partial round, length 0 and 1."""
    _groups_same_bits(monkeypatch, dtype, H, Hkv, D, BS, mma=True)


def test_two_chunk_groups_give_one_groups_bits_on_the_fma_path(monkeypatch, fma_path):
    """The same on the fp32-FMA path (float16 on it: its q and P staging in shared memory
    for 8 warps)."""
    _groups_same_bits(monkeypatch, torch.float16, 28, 4, 128, 64, mma=False)


def _groups_same_bits(monkeypatch, dtype, H, Hkv, D, BS, mma):
    code = {torch.float16: 1, torch.bfloat16: 2}[dtype]
    assert K.groups_allowed(D, K.heads_per_cta(D, H // Hkv), code, mma)   # the knob takes effect
    lens = [4100, 0, 1, 257, 1000, 513]
    op = PagedDecodeAttentionFwdOp(D, BS)
    args = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=11, device=DEV)
    got = {}
    for groups in (1, 2):
        for cpc in (None, 3):            # the plan's split (or none), and 3 chunks a CTA
            monkeypatch.setattr(K, "CHUNK_GROUPS", groups)
            monkeypatch.setattr(K, "SPLIT_CPC", cpc)
            got[groups, cpc] = run(op, *args)
    for cpc in (None, 3):
        assert torch.equal(got[1, cpc][0], got[2, cpc][0]) and torch.equal(got[1, cpc][1], got[2, cpc][1]), cpc
    check_close(op, args, *got[2, None], dtype)


def test_the_merge_kernel_is_launched_with_pdl_on_hopper():
    """The merge kernel asks for programmatic dependent launch (runtime.build(pdl=True)):
    on sm_90+ the core applies the flag."""
    from tileops import _C, runtime
    src, _, merge, opts = K.cuda_specialisation(1, 128, 4, 4, 16, True, 2, 1)
    h = runtime.build(0, src, merge, opts, K.ARG_FORMAT_MERGE, pdl=True)
    applied = _C.cuda_kernel_set_launch_flags(h, _C.LAUNCH_PDL)
    assert applied == (_C.LAUNCH_PDL if torch.cuda.get_device_capability(0)[0] >= 9 else 0), applied


@pytest.mark.parametrize("B,ctx", [(1, 32768), (3, 4100), (64, 1000)])
def test_pdl_gives_the_bits_of_a_plain_launch_eager_and_in_a_graph(monkeypatch, B, ctx):
    """The merge kernel launched with PDL (scheduled while the attention kernel still writes
    the partials; it waits for it on the GPU) gives the bits of a plain launch: eager, and
    in a CUDA graph replayed with new lengths. B = 1 at 32K tokens: a long first kernel, so
    a merge that read the partials early would read them unwritten."""
    from tileops import runtime
    H, Hkv, D, BS, dtype = 32, 8, 128, 16, torch.float16
    lens = [ctx] * B
    op = PagedDecodeAttentionFwdOp(D, BS)
    args = make(B, H, Hkv, D, BS, lens, dtype, seed=3, device=DEV)
    q, kc, vc, bt, sl = args
    monkeypatch.setattr(K, "SPLIT_CPC", 2)   # every call split: the merge kernel runs
    with runtime.pdl(False):
        plain = run(op, *args)
    with runtime.pdl(True):
        pdl = run(op, *args)
        assert torch.equal(plain[0], pdl[0]) and torch.equal(plain[1], pdl[1])
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            o, lse = op(q, kc, vc, bt, sl, return_lse=True)
        g = torch.Generator().manual_seed(9)
        for step in range(4):
            sl.copy_(torch.randint(1, ctx + 1, (B,), generator=g, dtype=torch.int32))
            graph.replay()
            torch.cuda.synchronize()
            with runtime.pdl(False):
                want = run(op, q, kc, vc, bt, sl)
            assert torch.equal(o, want[0]) and torch.equal(lse, want[1]), step
    check_close(op, args, o, lse, dtype)


# ---- a split merged inside its cluster (CLUSTER_MAX: no merge kernel) -----------------------

PRE_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability(0)[0] < 9


def _launches():
    from tileops import _C
    return _C.cuda_stats()["launches"]


@pytest.mark.skipif(PRE_HOPPER, reason="thread block clusters need sm_90+")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("H,Hkv,D,BS", GROUP_MODELS)
def test_a_split_merged_in_its_cluster_gives_the_merge_kernel_s_bits(monkeypatch, dtype, H, Hkv, D, BS):
    """A split of S <= 8 CTAs a sequence on at most half the SMs runs as one thread block
    cluster whose CTAs fold the partials (one launch, no merge kernel): o and lse bit for bit
    the merge kernel's, for S of 2 to 8 (forced chunks a CTA), one or two chunk groups,
    lengths 0, 1, mid-chunk and ones whose last CTAs hold no chunk (those CTAs still arrive
    at the cluster's barrier: a missing arrival would hang the call). Two sequences a batch
    (the launch rule takes the cluster's merge only for few CTAs)."""
    for lens in ([1800, 37], [0, 257], [1, 1000]):
        _cluster_same_bits(monkeypatch, dtype, H, Hkv, D, BS, lens)


def _cluster_same_bits(monkeypatch, dtype, H, Hkv, D, BS, lens):
    op = PagedDecodeAttentionFwdOp(D, BS)
    args = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=5, device=DEV)
    fused_seen = 0
    for groups in (1, 2):
        code = {torch.float16: 1, torch.bfloat16: 2}[dtype]
        if groups == 2 and not K.groups_allowed(D, K.heads_per_cta(D, H // Hkv), code, True):
            continue
        for cpc in (1, 2, 3, 4):
            monkeypatch.setattr(K, "CHUNK_GROUPS", groups)
            monkeypatch.setattr(K, "SPLIT_CPC", cpc)
            monkeypatch.setattr(K, "CLUSTER_MAX", 0)
            n0 = _launches()
            want = run(op, *args)
            plain_launches = _launches() - n0
            monkeypatch.setattr(K, "CLUSTER_MAX", 8)
            n0 = _launches()
            got = run(op, *args)
            fused = plain_launches == 2 and _launches() - n0 == 1
            fused_seen += fused
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), (groups, cpc, fused)
    assert fused_seen or max(lens) <= 256, "no call took the cluster's merge"   # one chunk: no split
    check_close(op, args, *got, dtype)


@pytest.mark.skipif(PRE_HOPPER, reason="thread block clusters need sm_90+")
def test_a_cluster_merge_on_the_fma_path_and_with_bad_input(monkeypatch, fma_path):
    """The same on the fp32-FMA path (float32), and the documented outcome of bad input when
    the cluster's first CTA writes it: a bad length or block id gives that sequence NaN,
    the others the merge kernel's bits."""
    H, Hkv, D, BS, dtype = 16, 4, 64, 16, torch.float32
    lens = [700, 300, 900]
    op = PagedDecodeAttentionFwdOp(D, BS)
    q, kc, vc, bt, sl = make(len(lens), H, Hkv, D, BS, lens, dtype, device=DEV)
    N, mb = kc.shape[0], bt.shape[1]
    bt[1, (lens[1] - 1) // BS] = N
    sl[2] = mb * BS + 1
    monkeypatch.setattr(K, "SPLIT_CPC", 1)
    monkeypatch.setattr(K, "CLUSTER_MAX", 0)
    want = run(op, q, kc, vc, bt, sl)
    monkeypatch.setattr(K, "CLUSTER_MAX", 8)
    n0 = _launches()
    got = run(op, q, kc, vc, bt, sl)
    assert _launches() - n0 == 1
    assert got[0][1:3].isnan().all() and got[1][1:3].isnan().all()
    assert torch.equal(got[0][0], want[0][0]) and torch.equal(got[1][0], want[1][0])


@pytest.mark.skipif(PRE_HOPPER, reason="thread block clusters need sm_90+")
def test_a_cluster_merge_replays_in_a_cuda_graph_with_new_lengths(monkeypatch):
    """Captured once (the cluster build made before capture by the warm-up call), replayed
    with new lengths and tables: the merge kernel's bits each step."""
    H, Hkv, D, BS, dtype, B, mb = 32, 8, 128, 16, torch.float16, 2, 64
    op = PagedDecodeAttentionFwdOp(D, BS)
    q, kc, vc, bt, sl = make(B, H, Hkv, D, BS, [mb * BS] * B, dtype, spare=20, device=DEV)
    N = kc.shape[0]
    n0 = _launches()
    run(op, q, kc, vc, bt, sl)                                # warm-up
    assert _launches() - n0 == 1                             # B = 2, 1K tokens: a split, merged in the cluster
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, lse = op(q, kc, vc, bt, sl, return_lse=True)
    g = torch.Generator().manual_seed(8)
    for step in range(5):
        new_lens = torch.randint(1, mb * BS + 1, (B,), generator=g, dtype=torch.int32)
        new_lens[0] = [0, 1, mb * BS, 300, 17][step]
        sl.copy_(new_lens)
        bt.copy_(torch.randperm(N, generator=g)[:B * mb].view(B, mb).to(torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        monkeypatch.setattr(K, "CLUSTER_MAX", 0)
        want = run(op, q, kc, vc, bt, sl)
        monkeypatch.setattr(K, "CLUSTER_MAX", 8)
        assert torch.equal(o, want[0]) and torch.equal(lse, want[1]), step


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("groups", [1, 2])
def test_superchunks_give_one_result_whatever_the_split(monkeypatch, dtype, groups):
    """SUPERCHUNK = 8 (the knob, read when a launchable is built: an op of its own scale, so
    an identity of its own): a sequence is the fold of its superchunks of 8 chunks. Plans
    that store each chunk (cpc 1, 3: the merge folds both levels), whole superchunks (cpc 8,
    16: one store each; 8 is a cluster of 3 at B = 1), the plan's own, one or two chunk
    groups, the sequence alone or in a batch too large to split: the same bits, and the
    float64 reference's values."""
    monkeypatch.setattr(K, "SUPERCHUNK", 8)
    monkeypatch.setattr(K, "CHUNK_GROUPS", groups)
    H, Hkv, D, BS = 32, 8, 128, 16
    lens = [5000, 2048, 2049, 37, 0, 4100]      # 20 chunks (3 superchunks), exactly one, one and a token
    op = PagedDecodeAttentionFwdOp(D, BS, scale=0.0883)
    args = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=13, device=DEV)
    q, kc, vc, bt, sl = args
    got = {}
    for cpc in (None, 1, 3, 8, 16):
        monkeypatch.setattr(K, "SPLIT_CPC", cpc)
        got[cpc] = run(op, *args)
        if cpc == 8:
            got["alone"] = [run(op, q[i:i + 1], kc, vc, bt[i:i + 1], sl[i:i + 1]) for i in range(len(lens))]
    monkeypatch.setattr(K, "SPLIT_CPC", None)
    reps = 300 // Hkv + 1
    big = run(op, q.repeat(reps, 1, 1), kc, vc, bt.repeat(reps, 1), sl.repeat(reps))     # no split
    o, lse = got[None]
    for cpc in (1, 3, 8, 16):
        assert torch.equal(got[cpc][0], o) and torch.equal(got[cpc][1], lse), cpc
    for i in range(len(lens)):
        assert torch.equal(got["alone"][i][0][0], o[i]) and torch.equal(got["alone"][i][1][0], lse[i]), i
        for r in range(reps):
            j = r * len(lens) + i
            assert torch.equal(big[0][j], o[i]) and torch.equal(big[1][j], lse[i]), (i, r)
    check_close(op, args, o, lse, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_short_sequence_gets_one_result_from_both_folds(monkeypatch, dtype):
    """SUPERCHUNK = 8: a call whose block table holds at most 8 chunks (2048 tokens) takes
    the plain build, a wider one the build of superchunks (K.fold_of). A sequence of at most
    8 chunks gets the same bits from both (its one superchunk folded into an empty state):
    in a narrow table, and in a wide one beside a long sequence, split or not; so every
    sequence's bits stay independent of the rest of the batch."""
    monkeypatch.setattr(K, "SUPERCHUNK", 8)
    H, Hkv, D, BS = 32, 8, 128, 16
    lens = [2048, 1000, 257, 37, 0, 5000]       # 8, 4, 2, 1 and 0 chunks; 20
    op = PagedDecodeAttentionFwdOp(D, BS, scale=0.0884)
    q, kc, vc, bt, sl = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=17, device=DEV)
    narrow = bt[:5, :2048 // BS].contiguous()
    assert K.fold_of(-(-narrow.shape[1] * BS // K.CHUNK)) == 1 and K.fold_of(-(-bt.shape[1] * BS // K.CHUNK)) == 8
    want = run(op, q[:5], kc, vc, narrow, sl[:5])
    check_close(op, (q[:5], kc, vc, narrow, sl[:5]), want[0], want[1], dtype)
    for cpc in (None, 1, 3, 8):
        monkeypatch.setattr(K, "SPLIT_CPC", cpc)
        for got in (run(op, q, kc, vc, bt, sl), run(op, q[:5], kc, vc, bt[:5], sl[:5])):
            assert torch.equal(got[0][:5], want[0]) and torch.equal(got[1][:5], want[1]), cpc


@pytest.mark.parametrize("dtype,D", [(torch.float16, 128), (torch.bfloat16, 128), (torch.float16, 256)])
def test_the_merge_kernels_thread_groups_give_one_result(monkeypatch, dtype, D):
    """Builds of superchunks fold two-level partials with the merge kernel's groups (4, 2 at
    head_size 256) where the merge's B x H CTAs leave SMs idle, and with the one-group build
    (-DPDA_MG=1, made on first use) where they fill them (merge_launch_groups); a one-level
    fold takes the groups' build with one group's block. Each gives the same bits and the
    float64 reference's values at up to 128 partials a head, a length ending mid-window, a
    short one and an empty one."""
    monkeypatch.setattr(K, "SUPERCHUNK", 8)
    monkeypatch.setattr(K, "CLUSTER_MAX", 0)
    H, Hkv, BS = 16, 2, 16
    lens = [32768, 20000, 5000, 300, 0]
    op = PagedDecodeAttentionFwdOp(D, BS, scale=0.07)
    args = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=23, device=DEV)
    most = min(K.MERGE_GROUPS, K.MERGE_THREADS_MAX // K.merge_threads(D))
    assert K.merge_groups(D, 8) == most > 1 and K.merge_groups(D, 1) == 1
    assert K.merge_launch_groups(D, 8, True, len(lens) * H, 132) == most
    assert K.merge_launch_groups(D, 8, True, 132, 132) == K.merge_launch_groups(D, 8, False, 1, 132) == 1
    got = {}
    for cpc in (1, 8):   # two levels (each chunk's partial stored), one (superchunks stored)
        monkeypatch.setattr(K, "SPLIT_CPC", cpc)
        for g in (1, most):
            monkeypatch.setattr(K, "merge_launch_groups", lambda *a, g=g: g)
            got[cpc, g] = run(op, *args)
    o, lse = got[1, 1]
    for key, (og, lg) in got.items():
        assert torch.equal(og, o) and torch.equal(lg, lse), key
    check_close(op, args, o, lse, dtype)
