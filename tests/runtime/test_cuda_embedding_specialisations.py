"""EmbeddingFwdOp's CUDA builds compile with nvcc (sm_90a, no GPU needed) without spills,
from the text the runtime hands NVRTC. Skipped where nvcc is not installed."""

import pytest
from helpers import nvcc, nvcc_build

from tileops.kernels.embedding import embedding as K

NVCC = nvcc()


def test_the_vector_path_needs_aligned_rows_of_whole_groups():
    assert "-DTILEOPS_VEC=8" in K.cuda_specialisation(1, 4, 4096, True)[2]
    assert "-DTILEOPS_VEC=1" in K.cuda_specialisation(1, 4, 4096, False)[2]
    assert "-DTILEOPS_VEC=1" in K.cuda_specialisation(1, 4, 4097, True)[2]
    assert "-DTILEOPS_ID64=0" in K.cuda_specialisation(0, 3, 64, True)[2]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,idt,H,aligned", [(1, 4, 4096, True), (2, 3, 3584, True), (0, 4, 4097, True),
                                              (1, 3, 7, False), (0, 4, 64, True)])
@pytest.mark.parametrize("unroll", sorted({1, K.UNROLL}))
def test_builds_compile_without_spills(tmp_path, dt, idt, H, aligned, unroll):
    source, kernel, opts, groups = K.cuda_specialisation(dt, idt, H, aligned, unroll)
    assert f"-DTILEOPS_UNROLL={unroll}" in opts
    nvcc_build(tmp_path, source, kernel, opts)
