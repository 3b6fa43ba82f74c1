"""RopeFwdOp's CUDA builds (src/tileops/kernels/positional/rope.py over
csrc/ops/positional/rope.cu): the vector path only where the kernel's constraints allow
it, and every kind of specialisation compiles with nvcc (sm_90a, no GPU needed) without
local-memory spills, from the text the runtime hands NVRTC (includes spliced in).
Skipped where nvcc is not installed."""

import pytest
from helpers import nvcc, nvcc_build

from tileops.kernels.positional import rope as K

NVCC = nvcc()


def test_the_vector_path_needs_aligned_rows_and_whole_groups():
    assert K.cuda_vec(1, 128, 128, True, True) == 8 and K.cuda_vec(0, 128, 128, False, True) == 4
    assert K.cuda_vec(1, 128, 128, True, False) == 1          # a pointer off 16 bytes
    assert K.cuda_vec(1, 128, 8, True, True) == 1             # R/2 = 4 < 8 channels of a group
    assert K.cuda_vec(1, 128, 8, False, True) == 8            # GPT-J: R = 8, one group
    assert K.cuda_vec(2, 100, 64, True, True) == 1            # 200-byte rows


CASES = [(dt, pdt, D, R, neox, vec) for dt in (0, 1, 2) for pdt in (3, 4)
         for D, R in ((128, 128), (128, 64), (64, 16), (80, 32), (6, 2))
         for neox in (True, False)
         for vec in sorted({1, K.cuda_vec(dt, D, R, neox, True)})]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,pdt,D,R,neox,vec", [c for c in CASES if c[1] == 4 or c[2] == 128])
def test_every_kind_of_build_compiles_without_spills(tmp_path, dt, pdt, D, R, neox, vec):
    source, kernel, opts, rot, passing = K.cuda_specialisation(dt, pdt, D, R, neox, vec)
    nvcc_build(tmp_path, source, kernel, opts)
    g = vec if vec != 1 else 16 // (4 if dt == 0 else 2)
    assert rot == (-(-(R // 2) // g) if neox else -(-R // g)) and passing == -(-(D - R) // g)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,neox,vec", [(0, True, 4), (1, True, 8), (2, True, 8), (2, True, 1), (1, False, 8)])
def test_cast_cos_sin_builds_compile_without_spills(tmp_path, dt, neox, vec):
    """cast_cos_sin adds one define to the same build (Hugging Face's arithmetic in the dtype)."""
    plain = K.cuda_specialisation(dt, 4, 128, 128, neox, vec)
    source, kernel, opts, rot, passing = K.cuda_specialisation(dt, 4, 128, 128, neox, vec, cast=True)
    assert opts == plain[2] + ("-DTILEOPS_CAST_COS_SIN=1",) and (rot, passing) == plain[3:]
    nvcc_build(tmp_path, source, kernel, opts)
