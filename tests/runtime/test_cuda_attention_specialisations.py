"""The attention family's CUDA builds compile with nvcc (sm_90a, no GPU needed) without
spills, from the text the runtime hands NVRTC; the launch geometry the kernels assume.
Compile checks skip where nvcc is not installed."""

import pytest
from helpers import nvcc, nvcc_build

from tileops.kernels.attention import kv_cache_write as KV
from tileops.kernels.attention import merge_attn_states as MG

NVCC = nvcc()


def test_kv_units_tokens_per_block_and_the_vector_path():
    # Llama-3-8B fp16: 2 x 8 heads x 16 groups = 256 units, one token a block of 256
    assert KV.cuda_specialisation(1, 4, 8, 128, 8)[3:] == (256, 1)
    # Llama-3-70B over 4 GPUs: 2 x 2 x 16 = 64 units, four tokens a block
    assert KV.cuda_specialisation(2, 4, 2, 128, 8)[3:] == (64, 4)
    # fp32, 8 heads: 512 units, one token a block (the block loops)
    assert KV.cuda_specialisation(0, 3, 8, 128, 4)[3:] == (512, 1)
    assert KV.cuda_vec(1, 128, True) == 8 and KV.cuda_vec(0, 128, True) == 4
    assert KV.cuda_vec(1, 7, True) == 1 and KV.cuda_vec(1, 128, False) == 1
    assert "-DTILEOPS_SLOT64=0" in KV.cuda_specialisation(1, 3, 8, 128, 8)[2]


def test_merge_groups_rows_per_block_and_the_vector_path():
    assert MG.cuda_specialisation(1, 128, True)[3:] == (16, 16)
    assert "-DTILEOPS_VEC=8" in MG.cuda_specialisation(1, 128, True)[2]
    assert "-DTILEOPS_VEC=1" in MG.cuda_specialisation(1, 130, True)[2]
    assert "-DTILEOPS_VEC=1" in MG.cuda_specialisation(2, 128, False)[2]
    assert MG.cuda_specialisation(0, 4096, True)[3:] == (1024, 1)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,sdt,H,D,vec", [(1, 4, 8, 128, 8), (2, 4, 4, 128, 8), (0, 3, 2, 128, 4), (1, 4, 3, 64, 1),
                                            (0, 4, 1, 7, 1), (2, 3, 8, 256, 8)])
def test_kv_builds_compile_without_spills(tmp_path, dt, sdt, H, D, vec):
    source, kernel, opts, _, _ = KV.cuda_specialisation(dt, sdt, H, D, vec)
    nvcc_build(tmp_path, source, kernel, opts)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,D,aligned", [(1, 128, True), (2, 128, True), (0, 128, True), (1, 7, True),
                                          (0, 130, False), (2, 4096, True)])
def test_merge_builds_compile_without_spills(tmp_path, dt, D, aligned):
    source, kernel, opts, _, _ = MG.cuda_specialisation(dt, D, aligned)
    nvcc_build(tmp_path, source, kernel, opts)
