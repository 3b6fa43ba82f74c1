"""PagedDecodeAttentionFwdOp's CUDA builds (src/tileops/kernels/attention/
paged_decode_attention.py over csrc/ops/attention/paged_decode_attention.cu): the launch
plan (shared memory, ring depth, the split along the sequence) as pure functions, and
every kind of specialisation compiled with nvcc (sm_90a, no GPU needed) without
local-memory spills, from the text the runtime hands NVRTC (includes spliced in): both
compute paths (tensor cores for float16 / bfloat16, fp32 FMAs), head sizes 64, 128, 256
and odd ones, group sizes 1, 4, 7, 8 (Qwen2.5-7B's 28 / 4 is 7) and a 20-head group in
slices, block sizes 16, 64 and ones that do not divide a tile. Skipped where nvcc is not
installed."""

import os
import subprocess

import pytest
from helpers import nvcc, nvcc_build

from tileops.kernels.attention import paged_decode_attention as K

NVCC = nvcc()


def test_heads_per_cta_and_shared_memory():
    assert K.heads_per_cta(128, 4) == 4 and K.heads_per_cta(128, 7) == 7 and K.heads_per_cta(128, 20) == 16
    assert K.heads_per_cta(256, 8) == 8 and K.heads_per_cta(256, 16) == 8
    # fp16, D 128, 8 heads: 4 warps x stages x (K + V) x 16 rows x 256 bytes, the warps' states, the fold
    assert K.smem_bytes(1, 128, 8, 2, True) == 4 * 2 * 2 * 16 * 256 + 4 * 4 * 8 * 130   # rings, the warps' states
    assert K.smem_bytes(0, 128, 8, 1, False) > K.smem_bytes(1, 128, 8, 1, True)   # fp32 rows, q and P
    for dt in (0, 1, 2):
        for D in (16, 64, 128, 256):
            for G in (1, 4, 7, 8, 16):
                heads = K.heads_per_cta(D, G)
                st, per_sm = K.choose_stages(dt, D, heads, dt != 0)
                assert 1 <= st <= 3 and per_sm >= 1
                assert K.smem_bytes(dt, D, heads, st, dt != 0) <= K.PER_BLOCK_SHARED
    assert K.choose_stages(1, 128, 8, True) == (2, 2)       # Llama-3-8B: two CTAs of a 2-deep ring per SM
    assert K.choose_stages(1, 64, 8, True)[0] == 2


def test_the_split_depends_on_shapes_only_and_covers_every_chunk():
    slots = 132 * 2
    assert K.split_plan(1024, 128, slots) == (1, 128)       # B = 128, 8 KV heads: a full wave, no split
    assert K.split_plan(256, 128, slots) == (1, 128)        # B = 32, 8 KV heads, 32K: one wave of whole sequences
    assert K.split_plan(128, 128, slots) == (2, 64)         # Qwen2.5 (4 KV heads): two CTAs a sequence, one wave
    assert K.split_plan(8, 4, slots) == (4, 1)              # B = 1, 1K tokens: one chunk per CTA
    assert K.split_plan(8, 1, slots) == (1, 1)              # one chunk: nothing to split
    for ctas in (1, 2, 7, 8, 64, 200, 263):
        for chunks in (2, 3, 16, 128, 1000):
            s, cpc = K.split_plan(ctas, chunks, slots)
            assert s >= 1 and (s - 1) * cpc < chunks <= s * cpc       # every chunk, no empty CTA column
            assert s <= K.SPLIT_MAX


def test_a_table_of_more_chunks_than_a_superchunk_takes_the_build_of_superchunks(monkeypatch):
    assert K.fold_of(8, 8) == 1 and K.fold_of(9, 8) == 8 and K.fold_of(128, 8) == 8 and K.fold_of(1, 8) == 1
    assert K.fold_of(128, 1) == 1
    monkeypatch.setattr(K, "SUPERCHUNK", 4)
    assert K.fold_of(4) == 1 and K.fold_of(5) == 4
    # a superchunk divides the merge's batch of 16 partials (the .cu's PDA_MB)
    with pytest.raises(ValueError, match="must divide 16"):
        K.cuda_specialisation(1, 128, 4, 4, 16, True, 2, superchunk=3)


def test_a_plan_of_superchunks_counts_a_whole_superchunk_s_one_store(monkeypatch):
    slots1, slots2 = 132 * 2, 132
    for ctas in (1, 8, 64, 263):
        for chunks in (2, 9, 16, 20, 128, 1000):
            s, cpc = K.split_plan(ctas, chunks, slots1, 1, 8)
            assert (s - 1) * cpc < chunks <= s * cpc and s <= K.SPLIT_MAX
    # Llama-3-8B B = 8, 32K: whole superchunks already (32 chunks a CTA); B = 1, 32K: 8 chunks
    # of two groups a CTA, one store, against 4 chunks of one group, four stores
    assert K.launch_plan(64, 128, slots1, slots2, True, 1) == (1, 4, 32)
    assert K.launch_plan(64, 128, slots1, slots2, True, 8) == (1, 4, 32)
    assert K.launch_plan(8, 128, slots1, slots2, True, 1) == (1, 32, 4)
    assert K.launch_plan(8, 128, slots1, slots2, True, 8) == (2, 16, 8)
    # 8 chunks a CTA forced over 20: S = 3, and the CTAs keep whole superchunks (8, 8, 4)
    # where the fewest chunks for S = 3 (7) would store every chunk
    monkeypatch.setattr(K, "SPLIT_CPC", 8)
    assert K.split_plan(1, 20, slots1, 1, 8) == (3, 8) and K.split_plan(1, 20, slots1, 1, 1) == (3, 7)
    assert K.split_plan(1, 16, slots1, 1, 8) == K.split_plan(1, 16, slots1, 1, 1) == (2, 8)


# (dtype, D, G, block_size): the manifest's models (G 4, 7, 8 at D 128, block sizes 16 and 64),
# MHA (G 1), D 64 and 256, a 20-head group (slices of 16), a 5-token block, the fp32 path
CASES = [(1, 128, 4, 16), (2, 128, 4, 64), (1, 128, 7, 16), (2, 128, 7, 64), (1, 128, 8, 16), (2, 128, 8, 64),
         (1, 128, 1, 16), (1, 64, 8, 16), (2, 256, 8, 16), (1, 256, 4, 64), (1, 128, 20, 16), (2, 16, 7, 5),
         (1, 80, 6, 32), (0, 128, 4, 16), (0, 256, 8, 64), (0, 64, 7, 5)]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,D,G,BS", CASES)
def test_every_kind_of_build_compiles_without_spills(tmp_path, dt, D, G, BS):
    heads = K.heads_per_cta(D, G)
    mma = dt != 0
    stages, _ = K.choose_stages(dt, D, heads, mma)
    source, kernel, merge, opts = K.cuda_specialisation(dt, D, G, heads, BS, mma, stages)
    log = nvcc_build(tmp_path, source, kernel, opts)
    assert f"Compiling entry function '{merge}'" in log


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,D,G,BS", [c for c in CASES
                                       if K.groups_allowed(c[1], K.heads_per_cta(c[1], c[2]), c[0], c[0] != 0)])
def test_every_two_group_build_compiles_without_spills(tmp_path, dt, D, G, BS):
    """The launch rule's second variant: two chunk groups, 8 warps a CTA, one CTA an SM."""
    heads = K.heads_per_cta(D, G)
    mma = dt != 0
    stages, per_sm = K.choose_stages(dt, D, heads, mma, groups=2)
    assert per_sm >= 1 and K.smem_bytes(dt, D, heads, stages, mma, 2) <= K.PER_BLOCK_SHARED
    source, kernel, merge, opts = K.cuda_specialisation(dt, D, G, heads, BS, mma, stages, 2)
    assert "-DPDA_CG=2" in opts and "-DTILEOPS_THREADS=256" in opts
    nvcc_build(tmp_path, source, kernel, opts)


def test_two_groups_where_one_group_would_need_a_split():
    slots1, slots2 = 132 * 2, 132
    assert K.launch_plan(128, 128, slots1, slots2, True) == (2, 1, 128)   # Qwen2.5 B = 32, 32K: no split
    assert K.split_plan(128, 128, slots1) == (2, 64)                        # (one group would split)
    assert K.launch_plan(1024, 16, slots1, slots2, True) == (1, 1, 16)     # Llama-3-8B B = 128, 4K
    assert K.launch_plan(256, 128, slots1, slots2, True) == (1, 1, 128)    # B = 32, 32K: one wave of one group
    assert K.launch_plan(8, 4, slots1, slots2, True) == (1, 4, 1)          # B = 1, 1K: a tie keeps one group
    assert K.launch_plan(128, 128, slots1, slots2, False)[0] == 1          # a head size 256 threads can't split
    assert K.groups_allowed(128, 4) and K.groups_allowed(16, 16) and not K.groups_allowed(48, 7)
    assert not K.groups_allowed(256, 8)                                     # no ring fits 8 warps' shared memory


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,D,G,groups,cluster", [(1, 128, 4, 1, 2), (2, 128, 8, 1, 4), (1, 128, 7, 2, 8),
                                                    (0, 64, 4, 1, 8), (2, 256, 1, 1, 3)])
def test_every_cluster_build_compiles_without_spills(tmp_path, dt, D, G, groups, cluster):
    """A split whose S CTAs run as one cluster (-DPDA_CS = S), the first merging the partials
    after the cluster's barrier: the attribute and the barrier are in the cubin."""
    heads = K.heads_per_cta(D, G)
    mma = dt != 0
    stages, _ = K.choose_stages(dt, D, heads, mma, groups=groups)
    source, kernel, _, opts = K.cuda_specialisation(dt, D, G, heads, 16, mma, stages, groups, cluster)
    assert f"-DPDA_CS={cluster}" in opts
    nvcc_build(tmp_path, source, kernel, opts)
    r = subprocess.run([NVCC, "-ptx", "-arch=sm_90a", *opts, "-o", str(tmp_path / "k.ptx"), str(tmp_path / "k.cu")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    ptx = (tmp_path / "k.ptx").read_text()
    assert f".reqnctapercluster 1, {cluster}, 1" in ptx and "barrier.cluster.arrive.release" in ptx
    # cluster 1: the same defines but PDA_CS
    assert K.cuda_specialisation(dt, D, G, heads, 16, mma, stages, groups)[3] == tuple(
        o for o in opts if not o.startswith("-DPDA_CS="))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,D,G", [(1, 128, 8), (2, 64, 4)])
def test_the_fma_path_compiles_for_16_bit_dtypes_too(tmp_path, dt, D, G):
    """The fp32-FMA path serves every dtype (a fallback for the tensor-core one), with one
    chunk group a CTA or two (its shared memory holds them for 16-bit dtypes)."""
    heads = K.heads_per_cta(D, G)
    for groups in (1, 2):
        assert groups == 1 or K.groups_allowed(D, heads, dt, False)
        stages, _ = K.choose_stages(dt, D, heads, False, groups=groups)
        source, kernel, merge, opts = K.cuda_specialisation(dt, D, G, heads, 16, False, stages, groups)
        nvcc_build(tmp_path, source, kernel, opts)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("stages", [1, 4])
def test_every_ring_depth_compiles(tmp_path, stages):
    """K.STAGES (dev/time_paged_decode.py --stages) may set any depth 1 .. 4 that fits."""
    assert K.smem_bytes(1, 128, 8, stages, True) <= K.PER_BLOCK_SHARED
    source, kernel, merge, opts = K.cuda_specialisation(1, 128, 8, 8, 16, True, stages)
    nvcc_build(tmp_path, source, kernel, opts)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,D,G,groups,cluster", [(1, 128, 4, 1, 1), (2, 128, 7, 2, 1), (1, 128, 16, 1, 1),
                                                    (0, 64, 4, 1, 1), (2, 256, 8, 1, 1), (1, 128, 8, 1, 4)])
@pytest.mark.parametrize("superchunk", [2, 8])
def test_every_superchunk_build_compiles_without_spills(tmp_path, dt, D, G, groups, cluster, superchunk):
    """Builds of superchunks (-DPDA_SC, the SUPERCHUNK knob): the main kernel keeps a second
    fold state, the merge takes cpc and folds in -DPDA_MG thread groups (merge_groups); the
    defines only where the knob is above 1, and the
    merge's argument format grows by the cpc it reads."""
    heads = K.heads_per_cta(D, G)
    mma = dt != 0
    stages, _ = K.choose_stages(dt, D, heads, mma, groups=groups)
    source, kernel, merge, opts = K.cuda_specialisation(dt, D, G, heads, 16, mma, stages, groups, cluster,
                                                        superchunk=superchunk)
    assert opts[-2:] == (f"-DPDA_MG={K.merge_groups(D, superchunk)}", f"-DPDA_SC={superchunk}")
    assert K.cuda_specialisation(dt, D, G, heads, 16, mma, stages, groups, cluster, superchunk=1)[3] == opts[:-2]
    assert K.merge_arg_format(superchunk) == K.ARG_FORMAT_MERGE + "q" and K.merge_arg_format(1) == K.ARG_FORMAT_MERGE
    log = nvcc_build(tmp_path, source, kernel, opts)
    assert f"Compiling entry function '{merge}'" in log
    # the one-group merge (merge_launch_groups' G = 1 for two-level folds), no spills either
    one = K.cuda_specialisation(dt, D, G, heads, 16, mma, stages, groups, cluster, superchunk=superchunk,
                                merge_groups_=1)[3]
    assert one == opts[:-2] + ("-DPDA_MG=1", f"-DPDA_SC={superchunk}")
    (tmp_path / "one").mkdir()
    assert f"Compiling entry function '{merge}'" in nvcc_build(tmp_path / "one", source, kernel, one)


def test_the_launcher_takes_the_fold_of_the_table_s_width(monkeypatch):
    """SUPERCHUNK = 8, no GPU (runtime.build and the launches recorded): a call whose table
    holds at most 8 chunks takes the plain build (no -DPDA_SC, the merge without cpc), a
    wider one the build of superchunks (its merge given cpc), each built once; while
    capturing, a call whose fold is not built raises NotReadyDuringCaptureError instead of
    taking the other fold's build (other bits past 8 chunks), and takes the other chunk
    groups' build of its own fold when that one is missing."""
    import torch

    from tileops import NotReadyDuringCaptureError, runtime
    monkeypatch.setattr(K, "SUPERCHUNK", 8)
    builds, launches, capturing = {}, [], [False]

    def build(device, src, kernel, opts, fmt, pdl=False):
        if capturing[0]:
            raise NotReadyDuringCaptureError(f"kernel {kernel} is not built; capturing")
        return builds.setdefault((kernel, opts, fmt), 100 + len(builds))
    attrs = {"max_shared_per_block": K.PER_BLOCK_SHARED, "arch": (9, 0), "sm_count": 132}
    monkeypatch.setattr(runtime, "build", build)
    monkeypatch.setattr(runtime, "device_attributes", lambda device: attrs)
    monkeypatch.setattr(K._C, "cuda_launch", lambda h, gx, gy, gz, bx, by, bz, smem, stream, *args:
                        launches.append((h, gx, gy, args, bx)))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    D, BS, G = 128, 16, 4
    heads = K.heads_per_cta(D, G)
    stages, per_sm = K.choose_stages(1, D, heads, True)
    b = K.CudaBuild(device=0, dtype=1, head_size=D, group=G, heads_per_cta=heads, block_size=BS, mma=True,
                    stages=stages, scale=0.088, ctas_per_sm=per_sm, sm_count=132)
    launch = K._build_cuda(b).unchecked
    assert [k for k, o, f in builds] == ["tileops_paged_decode_attention", "tileops_paged_decode_attention_merge"]
    assert not any("-DPDA_SC" in " ".join(o) for _, o, _ in builds)

    def call(B, width):
        q = torch.zeros(B, 8 * G, D, dtype=torch.float16)
        kc = torch.zeros(4, BS, 8, D, dtype=torch.float16)
        launch(q, kc, kc, torch.zeros(B, width, dtype=torch.int32), torch.zeros(B, dtype=torch.int32),
               torch.empty_like(q), None)
    call(1, 2048 // BS)                                  # 8 chunks: the plain build
    assert len(builds) == 2 + 1                          # (and the cluster build of its split)
    assert all("-DPDA_SC" not in " ".join(k[1]) for k in builds)
    capturing[0] = True                                  # 16 chunks, nothing of that fold built
    with pytest.raises(NotReadyDuringCaptureError, match="superchunks of 8 chunks"):
        call(1, 4096 // BS)
    capturing[0] = False
    call(1, 4096 // BS)                                  # the build of superchunks, made now
    new = [k for k in builds if "-DPDA_SC=8" in k[1]]
    assert {k[0] for k in new} == {"tileops_paged_decode_attention", "tileops_paged_decode_attention_merge"}
    assert all(k[2] == K.merge_arg_format(8) for k in new if k[0].endswith("_merge"))
    merge = builds[next(k for k in new if k[0].endswith("_merge"))]
    # B = 1, 16 chunks: S = 16, one chunk a CTA, the merge kernel: given cpc after its 7 arguments
    assert launches[-2][2] == 16 and launches[-1][0] == merge and launches[-1][3][6:] == (16, 1)
    n = len(builds)
    call(1, 4096 // BS)
    call(1, 2048 // BS)
    assert len(builds) == n                              # each built once
    main8 = builds[next(k for k in new if not k[0].endswith("_merge"))]
    capturing[0] = True            # B = 1, 32K: the plan takes two chunk groups, not built: the one
    call(1, 32768 // BS)           # group build of the same fold serves (the same bits)
    assert launches[-2][0] == main8 and len(builds) == n
    # B x H = 256 merge CTAs fill the 132 SMs: a two-level fold (cpc = 1) takes the one-group
    # merge (-DPDA_MG=1), made on first use; while capturing before then, the groups' build
    # with all its groups' threads (the same bits); a one-level fold (cpc = 8), the groups'
    # build with one group's threads
    monkeypatch.setattr(K, "SPLIT_CPC", 1)
    capturing[0] = True
    call(8, 4096 // BS)
    assert launches[-1][0] == merge and launches[-1][4] == 128 * K.merge_groups(D, 8) and len(builds) == n
    capturing[0] = False
    call(8, 4096 // BS)
    one = [k for k in builds if "-DPDA_MG=1" in k[1]]
    assert len(builds) == n + 1 and [k[0] for k in one] == ["tileops_paged_decode_attention_merge"]
    assert launches[-1][0] == builds[one[0]] and launches[-1][4] == 128
    call(1, 4096 // BS)            # B x H = 32: the groups
    assert launches[-1][0] == merge and launches[-1][4] == 128 * K.merge_groups(D, 8)
    monkeypatch.setattr(K, "SPLIT_CPC", 8)
    call(8, 4096 // BS)
    built = {h: k for k, h in builds.items()}[launches[-1][0]]
    assert built[0].endswith("_merge") and f"-DPDA_MG={K.merge_groups(D, 8)}" in built[1] and launches[-1][4] == 128


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
def test_the_launcher_s_shared_memory_is_the_kernel_s(tmp_path):
    """smem_bytes (the launch's dynamic shared memory) equals the .cu's PDA_SMEM for every
    kind of build, one chunk group or two, in clusters, of superchunks (the kernel's #error
    under -DPDA_SMEM_EXPECT); one byte off fails."""
    from tileops import runtime
    src = tmp_path / "k.cu"
    src.write_text(runtime.source("attention/paged_decode_attention.cu"))
    kinds = [(dt, D, G, BS, groups, cluster, sc) for dt, D, G, BS in CASES for groups in (1, 2)
             for cluster, sc in ((1, 1), (4, 1), (1, 8))
             if groups == 1 or K.groups_allowed(D, K.heads_per_cta(D, G), dt, dt != 0)]

    def preprocess(opts, expect):
        return subprocess.run([NVCC, "-E", "-arch=sm_90a", *opts, f"-DPDA_SMEM_EXPECT={expect}", str(src)],
                              capture_output=True, text=True, timeout=120)
    for dt, D, G, BS, groups, cluster, sc in kinds:
        heads, mma = K.heads_per_cta(D, G), dt != 0
        stages, _ = K.choose_stages(dt, D, heads, mma, groups=groups)
        opts = K.cuda_specialisation(dt, D, G, heads, BS, mma, stages, groups, cluster, superchunk=sc)[3]
        want = K.smem_bytes(dt, D, heads, stages, mma, groups)
        r = preprocess(opts, want)
        assert r.returncode == 0, (dt, D, G, BS, groups, cluster, sc, r.stderr[-1500:])
    r = preprocess(opts, want + 1)
    assert r.returncode != 0 and "PDA_SMEM differs" in r.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
def test_the_fold_s_heads_are_the_emulator_s():
    """The .cu's PDA_FH (the heads the round's fold covers: the CTA's heads rounded up to a
    power of two where each thread keeps whole channels) is the numpy emulator's fold_heads,
    whose run asserts that the fold covers every real (head, channel) once, for every kind
    of build, one chunk group or two (the kernel's #error under -DPDA_FH_EXPECT); and it is
    below the 8 padded heads where a group of 4 leaves half of them empty."""
    from helpers import load_script
    from tileops import runtime
    emu = load_script(os.path.join(os.path.dirname(__file__), "..", "..", "dev", "emulate_paged_decode_attention.py"),
                      "emulate_paged_decode_attention")
    src = runtime.source("attention/paged_decode_attention.cu")
    seen = set()
    for dt, D, G, BS in CASES + [(1, 64, 2, 16), (1, 32, 4, 16), (1, 64, 1, 16)]:
        heads, mma = K.heads_per_cta(D, G), dt != 0
        for groups in (1, 2):
            if groups == 2 and not K.groups_allowed(D, heads, dt, mma):
                continue
            stages, _ = K.choose_stages(dt, D, heads, mma, groups=groups)
            opts = K.cuda_specialisation(dt, D, G, heads, BS, mma, stages, groups)[3]
            want = emu.Config(D, G, heads, BS, stages).fold_heads(128 * groups)
            seen.add(want)
            r = subprocess.run([NVCC, "-E", "-arch=sm_90a", *opts, f"-DPDA_FH_EXPECT={want}", "-x", "cu", "-"],
                               input=src, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, (dt, D, G, BS, groups, want, r.stderr[-1500:])
    r = subprocess.run([NVCC, "-E", "-arch=sm_90a", *opts, f"-DPDA_FH_EXPECT={want + 1}", "-x", "cu", "-"],
                       input=src, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "PDA_FH differs" in r.stderr
    assert {1, 2, 4} <= seen and emu.Config(128, 4, 4, 16, 2).fold_heads(128) == 4
