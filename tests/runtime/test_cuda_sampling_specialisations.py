"""The sampling family's CUDA builds (src/tileops/kernels/sampling/cuda_sampling.py over
csrc/ops/sampling/*.cu): the launch rule's row split (a cluster of CTAs per row on sm_90,
a function of V only), and every kind of build compiles with nvcc (sm_90a, no GPU needed)
without local-memory spills from the text the runtime hands NVRTC, also with no CUDA
header at all (as NVRTC --minimal compiles it). Skipped where nvcc is not installed."""
import pytest
from helpers import nvcc, nvcc_bare, nvcc_build

from tileops.kernels.sampling import cuda_sampling as K

NVCC = nvcc()
OPTIN = 232448          # an H200's opt-in shared memory per block (227 KiB)
NEEDS_NVCC = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")


def test_the_row_split_of_the_real_vocabularies():
    # Llama-3: 8 CTAs of 16032 elements, 512 threads of 4 octets (2048 slots of 8 floats kept
    # on chip: 64 KiB each), 3 CTAs per SM
    assert K.row_plan(128256, 90, OPTIN, 4) == K.RowPlan(8, 16032, 512, 4, True, 65536, 3)
    # Qwen2.5: 8 CTAs of 19008, 512 threads of 5 octets (80 KiB each), 2 per SM
    assert K.row_plan(152064, 90, OPTIN, 4) == K.RowPlan(8, 19008, 512, 5, True, 81920, 2)
    # nothing kept on chip (argmax, sample): the same split, registers for 1024 threads per SM
    assert K.row_plan(128256, 90, OPTIN) == K.RowPlan(8, 16032, 256, 8, False, 0, 4)
    # before sm_90 a row is one CTA: too long to keep on chip, read three times
    assert K.row_plan(128256, 80, 166912, 4) == K.RowPlan(1, 128256, 1024, 16, False, 0, 1)
    # short rows: one CTA (softmax: registers for 1536 threads per SM, 40 each)
    assert K.row_plan(7, 90, OPTIN, 4) == K.RowPlan(1, 8, 128, 1, True, 4096, 12)
    assert K.row_plan(7, 90, OPTIN) == K.RowPlan(1, 8, 128, 1, False, 0, 8)
    assert K.row_plan(20000, 90, OPTIN, 4).cluster == 2


@pytest.mark.parametrize("V", [1, 7, 8, 300, 4100, 16384, 16385, 20000, 128256, 152064, 1 << 20, 2**31 - 1])
@pytest.mark.parametrize("arch", [80, 90])
def test_a_plan_covers_the_row_and_depends_on_v_alone(V, arch):
    p = K.row_plan(V, arch, OPTIN, 4)
    assert p.cluster in (1, 2, 4, 8) and (arch >= 90 or p.cluster == 1)
    assert p.chunk % 8 == 0 and p.cluster * p.chunk >= V and p.cluster * p.chunk - V < 8 * p.cluster
    assert p.opt * p.threads * 8 >= p.chunk and p.threads in (128, 256, 512, 1024)
    assert not p.stage or p.smem + K.SMEM_RESERVE <= OPTIN
    assert p == K.row_plan(V, arch, OPTIN, 4)
    s = K.selection_plan(V)
    assert s.cluster == 1 and s.threads == 1024 and s.chunk >= V and s.opt * 1024 * 8 >= s.chunk


def test_the_vector_path_needs_aligned_rows_of_whole_groups():
    import torch
    assert K.vec(torch.bfloat16, 128256, True) == 8 and K.vec(torch.float32, 128256, True) == 4
    assert K.vec(torch.float16, 300, True) == 1 and K.vec(torch.float32, 128256, False) == 1
    # sample_from_probs: q's float32 rows are aligned when probs' are (twice or as many bytes)
    assert "-DTILEOPS_VEC=8" in K.sample_specialisation(1, 1000, True, 90, OPTIN)[2]
    assert "-DTILEOPS_VEC=1" in K.sample_specialisation(1, 1004, True, 90, OPTIN)[2]


SOFTMAX = [(dt, odt, V, temp, aligned, arch)
           for dt, odt in ((0, 0), (1, 1), (2, 2), (2, 0), (0, 2), (1, 0))
           for V, aligned, arch in ((128256, True, 90), (152064, True, 90), (301, False, 90), (20000, True, 90),
                                    (128256, True, 80))
           for temp in (0, 1)
           if (temp == 1 or V == 128256)]


@NEEDS_NVCC
@pytest.mark.parametrize("dt,odt,V,temp,aligned,arch", SOFTMAX)
def test_softmax_builds_compile_bare_within_their_spill_bound(tmp_path, dt, odt, V, temp, aligned, arch):
    source, kernel, opts, plan = K.softmax_specialisation(dt, odt, V, temp, aligned, arch, OPTIN)
    if arch < 90:   # a one-CTA build: compiled for sm_90a here, the same text
        assert "-DTILEOPS_CLUSTER=1" in opts and "-DTILEOPS_STAGE=0" in opts
    # the registers build (stage 2) at 128256 keeps 3 CTAs an SM at 40 registers with up to
    # a few spilled words (16 bytes stored, 32 loaded at bf16 -> float32): measured faster
    # (session 13, H200) than 2 CTAs an SM without a spill
    nvcc_bare(tmp_path, source, kernel, opts, max_spill=32 if plan.stage == 2 else 0)


@pytest.mark.parametrize("dt,temp,stage", [(1, 0, 2), (2, 0, 2), (0, 0, 1), (1, 1, 1), (2, 1, 1)])
def test_softmax_keeps_16_bit_words_in_registers_only_without_a_temperature(dt, temp, stage):
    """Stage 2 repeats pass 1's conversion and exp in passes 2 and 3: exact for a plain
    conversion, but a temperature's IEEE divisions (and float32 words, twice the registers)
    stay staged in shared memory."""
    source, kernel, opts, plan = K.softmax_specialisation(dt, 0, 128256, temp, True, 90, OPTIN)
    assert plan.stage == stage and f"-DTILEOPS_STAGE={stage}" in opts
    assert plan.smem == (65536 if stage == 1 else 0) and plan.min_blocks == 3
    # where the chunk cannot be staged (a row over one CTA before sm_90), it is read three times
    assert K.softmax_specialisation(dt, 0, 128256, temp, True, 80, 166912)[3].stage == 0


@NEEDS_NVCC
@pytest.mark.parametrize("op", ["softmax", "argmax", "sample", "top_k", "top_k_top_p_mask"])
def test_each_kernel_compiles_with_the_cuda_headers_too(tmp_path, op):
    spec = {"softmax": lambda: K.softmax_specialisation(2, 0, 128256, 1, True, 90, OPTIN),
            "argmax": lambda: K.argmax_specialisation(2, 152064, True, 90, OPTIN),
            "sample": lambda: K.sample_specialisation(0, 128256, True, 90, OPTIN),
            "top_k": lambda: K.top_k_specialisation(2, 128256, 50, True, True),
            "top_k_top_p_mask": lambda: K.top_k_top_p_mask_specialisation(0, 152064, True, 4, True, True)}[op]()
    nvcc_build(tmp_path, *spec[:3])


@NEEDS_NVCC
@pytest.mark.parametrize("dt,V,aligned", [(0, 128256, True), (1, 152064, True), (2, 7, False), (2, 300, True),
                                          (0, 1, True)])
@pytest.mark.parametrize("one_cta", [False, True])
def test_argmax_and_sample_builds_compile_bare_without_spills(tmp_path, dt, V, aligned, one_cta):
    nvcc_bare(tmp_path, *K.argmax_specialisation(dt, V, aligned, 90, OPTIN, one_cta=one_cta)[:3])
    nvcc_bare(tmp_path, *K.sample_specialisation(dt, V, aligned, 90, OPTIN, one_cta=one_cta)[:3])


@NEEDS_NVCC
@pytest.mark.parametrize("dt,V", [(0, 128256), (2, 128256), (1, 152064)])
@pytest.mark.parametrize("one_cta", [False, True])
def test_argmax_builds_with_the_lab_batch_knob_compile_bare_without_spills(tmp_path, dt, V, one_cta):
    # dev/time_argmax.py --batch-bytes 128: -DTILEOPS_BATCH, twice the default loads in flight
    source, kernel, opts, plan = K.argmax_specialisation(dt, V, True, 90, OPTIN, one_cta=one_cta)
    nvcc_bare(tmp_path, source, kernel, opts + (f"-DTILEOPS_BATCH={16 // (2 if dt else 4)}",))


def test_the_exact_kernels_batch_build_is_one_cta_per_row():
    # argmax / sample from sm_count / 2 rows: a CTA of 1024 threads streams a row
    assert K.row_plan(128256, 90, OPTIN, one_cta=True) == K.RowPlan(1, 128256, 1024, 16, False, 0, 1)
    assert K.argmax_specialisation(2, 152064, True, 90, OPTIN, one_cta=True)[3].cluster == 1
    assert K.argmax_specialisation(2, 152064, True, 90, OPTIN)[3].cluster == 8


@NEEDS_NVCC
@pytest.mark.parametrize("dt,V,k,values,aligned", [(0, 128256, 50, True, True), (1, 152064, 20, False, True),
                                                   (2, 128256, 1024, True, True), (0, 7, 7, True, False),
                                                   (2, 300, 1, True, False), (1, 20000, K.TOP_K_MAX, True, True)])
def test_top_k_builds_compile_bare_without_spills(tmp_path, dt, V, k, values, aligned):
    source, kernel, opts, plan = K.top_k_specialisation(dt, V, k, values, aligned)
    assert plan.smem == 8 * (1 << (k - 1).bit_length()) and plan.smem + 8192 + 512 <= OPTIN
    nvcc_bare(tmp_path, source, kernel, opts)


def test_a_selection_row_spreads_over_a_cluster_while_the_batch_leaves_sms_idle():
    # the largest of 8, 4, 2 CTAs a row with rows x cluster <= SMs / 2 and >= 8192 elements a CTA
    assert [K.selection_cluster(B, 128256, 90, 132) for B in (1, 8, 9, 16, 17, 33, 34, 128, 256)] == \
        [8, 8, 4, 4, 2, 2, 1, 1, 1]
    assert K.selection_cluster(1, 40000, 90, 132) == 4 and K.selection_cluster(1, 16384, 90, 132) == 2
    assert K.selection_cluster(1, 16383, 90, 132) == 1 and K.selection_cluster(1, 300, 90, 132) == 1
    assert K.selection_cluster(1, 128256, 80, 108) == 1                      # no clusters before sm_90
    for c in (1, 2, 4, 8):
        p = K.selection_plan(128256, c)
        assert p.cluster == c and p.chunk % 8 == 0 and c * p.chunk >= 128256 > (c - 1) * p.chunk
        assert p.opt * 1024 * 8 >= p.chunk and p.threads == 1024
        assert f"-DTILEOPS_CLUSTER={c}" in K.top_k_specialisation(2, 128256, 50, True, True, c)[2]


@NEEDS_NVCC
@pytest.mark.parametrize("cluster", [2, 4, 8, 16])
@pytest.mark.parametrize("dt,V", [(0, 152064), (0, 128256), (2, 128256), (1, 65537)])
def test_selection_cluster_builds_compile_bare_without_spills(tmp_path, cluster, dt, V):
    # clusters of 4 and 8 at the real vocabularies keep a thread's first octets in registers
    # (sampling_common.cuh SMP_KEEP: 2 octets, 1 in float32 at 4 a thread) without a spill;
    # 16, non-portable, the rule never picks (dev/time_top_k.py's c16, the GPU test of every cluster)
    nvcc_bare(tmp_path, *K.top_k_specialisation(dt, V, 1024, True, True, cluster)[:3])
    nvcc_bare(tmp_path, *K.top_k_top_p_mask_specialisation(dt, V, True, 4, True, V % 8 == 0, cluster)[:3])


@NEEDS_NVCC
@pytest.mark.parametrize("dt,V,has_k,kdt,has_p,aligned", [(0, 128256, True, 3, True, True),
                                                          (1, 152064, True, 4, True, True),
                                                          (2, 128256, False, 3, True, True),
                                                          (2, 300, True, 3, False, False),
                                                          (0, 7, True, 4, True, False)])
def test_top_k_top_p_mask_builds_compile_bare_without_spills(tmp_path, dt, V, has_k, kdt, has_p, aligned):
    nvcc_bare(tmp_path, *K.top_k_top_p_mask_specialisation(dt, V, has_k, kdt, has_p, aligned)[:3])


def test_a_mask_cluster_gets_the_dynamic_shared_memory_its_sums_index():
    """A cluster's sums of the mask's histograms live in dynamic shared memory
    (sampling_common.cuh SMP_SUMS bytes: SMP_BINS masses of 8 bytes and counts of 4); the
    launch gives cuda_sampling.SEL_SUMS_BYTES, which must be that size. One CTA has none."""
    import re

    from tileops import runtime
    text = runtime.source("sampling/top_k_top_p_mask.cu")
    bins = int(re.search(r"#define SMP_BINS (\d+)", text).group(1))
    per_bin = int(re.search(r"#define SMP_SUMS \(SMP_BINS \* (\d+)\)", text).group(1))
    assert per_bin == 8 + 4 and K.SEL_SUMS_BYTES == bins * per_bin
    for c in (2, 4, 8):
        assert K.top_k_top_p_mask_specialisation(2, 128256, True, 3, True, True, c)[3].smem == K.SEL_SUMS_BYTES
    assert K.top_k_top_p_mask_specialisation(2, 128256, True, 3, True, True, 1)[3].smem == 0
