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
@pytest.mark.parametrize("threads", [K.MAX_THREADS, K.PREFILL_THREADS])
def test_every_kind_of_build_compiles_without_spills(tmp_path, dt, pdt, D, R, neox, vec, threads):
    source, kernel, opts, rot, passing = K.cuda_specialisation(dt, pdt, D, R, neox, vec, threads=threads)
    assert f"-DTILEOPS_HB={K.heads_per_thread(vec)}" in opts and f"-DTILEOPS_THREADS={threads}" in opts
    nvcc_build(tmp_path, source, kernel, opts)
    g = vec if vec != 1 else 16 // (4 if dt == 0 else 2)
    assert rot == (-(-(R // 2) // g) if neox else -(-R // g)) and passing == -(-(D - R) // g)


def test_launch_shape_covers_every_token_and_head_within_the_block_bound():
    """cuda_launch_shape: grid.y blocks split a token's S = ceil(NH / hb) slots (only while
    the tokens leave SMs idle), TT = min(UPH ceil(S / grid.y), B) threads per token (B = 256,
    128 from 4 x sm_count tokens on: block_bound), whole
    tokens per block, enough blocks for every token (the kernel grid-strides beyond)."""
    for T, hb in ((1, 1), (1, 2), (3, 2), (32, 2), (132, 2), (4096, 2), (4096, 1), (2**31 + 5, 2)):
        for H, Hk, uq, uk in ((32, 8, 8, 8), (28, 4, 16, 16), (64, 8, 8, 8), (1, 1, 1, 1), (300, 300, 64, 64),
                              (4, 2, 8, 0)):
            gx, gy, threads = K.cuda_launch_shape(T, H, Hk, uq, uk, hb, 132)
            slots = -(-(H + Hk) // hb)
            ys = -(-slots // gy)
            assert 1 <= gy <= slots and (gy - 1) * ys < slots           # every block has a slot
            assert gy == 1 or T * gy <= 132                               # split only while SMs idle
            bound = K.block_bound(T, 132)
            tt = min(max(uq, uk) * ys, bound)
            assert threads % 32 == 0 and tt <= threads <= bound
            tpb = threads // tt
            assert 1 <= gx <= K.GRID_MAX and (gx * tpb >= T or gx == K.GRID_MAX)
            assert gx * tpb < T + tpb * 2 or gx == K.GRID_MAX             # no block with nothing to do
    assert K.cuda_launch_shape(0, 32, 8, 8, 8, 2) == (0, 0, 0) and K.cuda_launch_shape(5, 32, 8, 0, 0, 2) == (0, 0, 0)
    assert K.cuda_launch_shape(1, 32, 8, 8, 8, 2, 132) == (1, 3, 64)     # decode: 20 slots over 3 blocks of 7
    assert K.cuda_launch_shape(256, 32, 8, 8, 8, 2, 132) == (256, 1, 160)      # a token's 160 units, a block
    # prefill (>= 4 x sm_count tokens): blocks of 128, a token's 160 units looped over by 128 threads
    assert K.cuda_launch_shape(4096, 32, 8, 8, 8, 2, 132) == (4096, 1, 128)
    assert K.cuda_launch_shape(528, 32, 8, 8, 8, 2, 132) == (528, 1, 128)
    assert K.cuda_launch_shape(527, 32, 8, 8, 8, 2, 132) == (527, 1, 160)
    assert K.block_bound(527, 132) == K.MAX_THREADS and K.block_bound(528, 132) == K.PREFILL_THREADS
    assert K.heads_per_thread(8) == K.HEADS_PER_THREAD and K.heads_per_thread(1) == 1 == K.heads_per_thread(8, True)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,neox,vec", [(0, True, 4), (1, True, 8), (2, True, 8), (2, True, 1), (1, False, 8)])
def test_cast_cos_sin_builds_compile_without_spills(tmp_path, dt, neox, vec):
    """cast_cos_sin adds one define to the same build (Hugging Face's arithmetic in the dtype)."""
    plain = K.cuda_specialisation(dt, 4, 128, 128, neox, vec)
    source, kernel, opts, rot, passing = K.cuda_specialisation(dt, 4, 128, 128, neox, vec, cast=True)
    # one define more, and one head per thread (two spill with the 16-bit cos/sin copies)
    assert [o for o in opts if not o.startswith("-DTILEOPS_HB=")] == \
        [o for o in plain[2] if not o.startswith("-DTILEOPS_HB=")] + ["-DTILEOPS_CAST_COS_SIN=1"]
    assert "-DTILEOPS_HB=1" in opts and (rot, passing) == plain[3:]
    nvcc_build(tmp_path, source, kernel, opts)


def test_the_prefill_kernel_takes_the_vector_builds_from_four_tokens_an_sm():
    """persistent_launch_shape: tileops_rope_persistent from PREFILL_TOKENS_PER_SM x sm_count
    tokens on, for builds of HEADS_PER_THREAD heads a thread whose token fits its block bound: one
    token's TT = UPH x ceil(NH / 2) threads rounded up to a warp, min(T, 4 x sm_count)
    blocks; None (tileops_rope serves) elsewhere."""
    sms, hb = 132, K.HEADS_PER_THREAD
    assert K.persistent_launch_shape(4096, 32, 8, 8, 8, hb, sms) == (528, 160)      # Llama-3-8B fp16: 8 x 20
    assert K.persistent_launch_shape(4096, 64, 8, 8, 8, hb, sms) == (528, 288)      # Llama-3-70B: 8 x 36
    assert K.persistent_launch_shape(4096, 28, 4, 8, 8, hb, sms) == (528, 128)      # Qwen2.5-7B: 8 x 16
    assert K.persistent_launch_shape(4096, 32, 8, 16, 16, hb, sms) == (528, 320)    # float32: 16 units a head
    assert K.persistent_launch_shape(4096, 28, 4, 12, 8, hb, sms) == (528, 192)     # out of place, R < D: 12 x 16
    assert K.persistent_launch_shape(600, 32, 8, 8, 8, hb, sms) == (528, 160)
    assert K.persistent_launch_shape(528, 3, 0, 5, 0, hb, sms) == (528, 32)         # rounded up to a warp
    assert K.persistent_launch_shape(527, 32, 8, 8, 8, hb, sms) is None              # decode-sized: tileops_rope
    assert K.persistent_launch_shape(4096, 32, 8, 8, 8, 1, sms) is None              # the scalar / cast builds
    assert K.persistent_launch_shape(4096, 300, 300, 8, 8, hb, sms) is None          # 2400 threads a token
    assert K.persistent_launch_shape(4096, 64, 8, 16, 16, hb, sms) is None           # float32 70B: 576
    assert K.persistent_launch_shape(4096, 32, 8, 0, 0, hb, sms) is None
    for T in (528, 529, 1000, 4096, 2**31 + 5):
        for H, Hk, uq, uk in ((32, 8, 8, 8), (64, 8, 8, 8), (28, 4, 16, 16), (1, 1, 1, 1), (40, 24, 16, 12)):
            gx, threads = K.persistent_launch_shape(T, H, Hk, uq, uk, hb, sms)
            tt = max(uq, uk) * -(-(H + Hk) // hb)
            assert threads % 32 == 0 and tt <= threads < tt + 32 and threads <= K.PERSISTENT_MAX_BLOCK
            assert gx == min(T, K.PERSISTENT_BLOCKS_PER_SM * sms)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,pdt,D,R,neox", [(1, 4, 128, 128, True), (2, 3, 128, 128, True), (0, 4, 128, 128, True),
                                             (1, 4, 128, 64, False), (2, 4, 64, 16, True), (1, 3, 80, 32, False)])
@pytest.mark.parametrize("threads", [128, 160, 288, K.PERSISTENT_MAX_BLOCK])
def test_the_prefill_kernel_compiles_without_spills(tmp_path, dt, pdt, D, R, neox, threads):
    vec = K.cuda_vec(dt, D, R, neox, True)
    assert vec != 1
    source, kernel, opts, _, _ = K.cuda_specialisation(dt, pdt, D, R, neox, vec, threads=threads, persistent=True)
    assert kernel == "tileops_rope_persistent" and f"-DTILEOPS_HB={K.HEADS_PER_THREAD}" in opts
    assert f"-DTILEOPS_THREADS={threads}" in opts and "-DTILEOPS_PERSISTENT=1" in opts
    err = nvcc_build(tmp_path, source, kernel, opts)
    assert "Compiling entry function 'tileops_rope'" not in err   # the build holds the one kernel
