"""RopeFwdOp on a GPU beyond the generic driver (tests/gpu/test_gpu_ops.py): views into a
packed qkv tensor written in place, the vector and scalar builds (strides that break
16-byte rows) against the CPU kernel, the documented outcome of a position out of range
(that token's rotated channels NaN, nothing read out of bounds, the others exact), a
CUDA graph replaying with new positions, and a prefill on the prefill kernel
(tileops_rope_persistent) and the 128-thread build, bit for bit. Skipped without CUDA
(tests/gpu/conftest.py)."""
import pytest
import torch

from tileops.positional import RopeFwdOp
from tileops.reference.positional import rope as reference
from tileops.reference.positional import rope_cos_sin_cache

DEV = "cuda"
ULP = {torch.float32: 2 ** -22, torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}


def packed(T, H, Hk, D, dtype, pad=0, seed=0):
    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn(T, (H + 2 * Hk) * D + pad, generator=g).to(DEV, dtype)
    return qkv, qkv[:, :H * D].view(T, H, D), qkv[:, H * D:(H + Hk) * D].view(T, Hk, D)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("is_neox,R", [(True, 128), (False, 128), (True, 64), (False, 32)])
@pytest.mark.parametrize("pad", [0, 1])   # pad 1: token strides off 16 bytes -> the scalar build
def test_in_place_views_match_the_reference_and_the_cpu_kernel(dtype, is_neox, R, pad):
    T, H, Hk, D, P = 37, 8, 2, 128, 4096
    qkv, q, k = packed(T, H, Hk, D, dtype, pad)
    before = qkv.clone()
    cs = rope_cos_sin_cache(base=500000.0, rotary_dim=R, max_position=P).to(DEV)
    positions = torch.randint(0, P, (T,), generator=torch.Generator().manual_seed(1)).to(DEV)
    op = RopeFwdOp(D, R, is_neox)
    rq, rk = op(q, k, positions, cs, inplace=True)
    torch.cuda.synchronize()
    assert rq is q and rk is k
    bq, bk = before[:, :H * D].view(T, H, D), before[:, H * D:(H + Hk) * D].view(T, Hk, D)
    want_q, want_k = reference(bq.double(), bk.double(), positions, cs, head_size=D, rotary_dim=R, is_neox=is_neox)
    torch.testing.assert_close(q.double(), want_q, rtol=ULP[dtype], atol=ULP[dtype])
    torch.testing.assert_close(k.double(), want_k, rtol=ULP[dtype], atol=ULP[dtype])
    assert torch.equal(qkv[:, (H + Hk) * D:], before[:, (H + Hk) * D:])    # v untouched
    cq, ck = RopeFwdOp(D, R, is_neox)(bq.cpu(), bk.cpu(), positions.cpu(), cs.cpu())
    torch.testing.assert_close(q.cpu(), cq, rtol=ULP[dtype], atol=ULP[dtype])   # the same formulas
    torch.testing.assert_close(k.cpu(), ck, rtol=ULP[dtype], atol=ULP[dtype])


@pytest.mark.parametrize("inplace", [False, True])
def test_a_position_out_of_range_gives_nan_rotated_channels_and_reads_nothing_outside(inplace):
    T, H, Hk, D, R, P = 4, 2, 1, 64, 32, 16
    qkv, q, k = packed(T, H, Hk, D, torch.float16)
    before = qkv.clone()
    cs = rope_cos_sin_cache(base=10000.0, rotary_dim=R, max_position=P).to(DEV)
    positions = torch.tensor([3, P, -5, 2**40], dtype=torch.int64, device=DEV)
    qo, ko = RopeFwdOp(D, R)(q, k, positions, cs, inplace=inplace)
    torch.cuda.synchronize()
    for got, src in ((qo, before[:, :H * D].view(T, H, D)), (ko, before[:, H * D:(H + Hk) * D].view(T, Hk, D))):
        assert not got[0].isnan().any()
        assert got[1:, :, :R].isnan().all()                      # the bad tokens' rotated channels
        assert torch.equal(got[1:, :, R:], src[1:, :, R:])        # the rest as it was
    ok_q, _ = RopeFwdOp(D, R)(before[:1, :H * D].view(1, H, D).clone(), before[:1, H * D:(H + Hk) * D].view(1, Hk, D)
                              .clone(), positions[:1], cs)
    assert torch.equal(qo[:1], ok_q)


def test_a_cuda_graph_replays_with_new_positions():
    T, H, Hk, D, P = 8, 4, 2, 128, 64
    qkv, q, k = packed(T, H, Hk, D, torch.bfloat16)
    cs = rope_cos_sin_cache(base=10000.0, rotary_dim=D, max_position=P).to(DEV)
    positions = torch.arange(T, device=DEV, dtype=torch.int32)
    op = RopeFwdOp(D, D)
    qo, ko = op(q, k, positions, cs)            # warm up: builds outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        qo, ko = op(q, k, positions, cs)
    positions.copy_(torch.arange(T, device=DEV, dtype=torch.int32) * 5)
    graph.replay()
    torch.cuda.synchronize()
    want_q, _ = reference(q.double(), k.double(), positions, cs, head_size=D, rotary_dim=D, is_neox=True)
    torch.testing.assert_close(qo.double(), want_q, rtol=2 ** -7, atol=2 ** -7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("is_neox,R", [(True, 128), (False, 64)])
def test_a_prefill_gives_the_bits_of_fewer_tokens(dtype, is_neox, R):
    """From 4 x sm_count tokens on the launch takes the prefill kernel (vector builds) or the
    build of 128-thread blocks (kernels/positional/rope.py); each token's values are those
    of the 256-thread build that serves fewer tokens, bit for bit, and the float64
    reference's."""
    from tileops import runtime
    from tileops.kernels.positional import rope as K
    sms = runtime.device_attributes(0)["sm_count"]
    T, H, Hk, D, P = K.PREFILL_TOKENS_PER_SM * sms + 5, 32, 8, 128, 8192
    assert K.block_bound(T, sms) == K.PREFILL_THREADS and K.block_bound(T // 2, sms) == K.MAX_THREADS
    qkv, q, k = packed(T, H, Hk, D, dtype)
    cs = rope_cos_sin_cache(base=500000.0, rotary_dim=R, max_position=P).to(DEV)
    positions = torch.randint(0, P, (T,), generator=torch.Generator().manual_seed(3)).to(DEV)
    op = RopeFwdOp(D, R, is_neox)
    whole_q, whole_k = op(q, k, positions, cs)
    half = T // 2
    parts = [op(q[a:b], k[a:b], positions[a:b], cs) for a, b in ((0, half), (half, T))]
    torch.cuda.synchronize()
    assert torch.equal(whole_q, torch.cat([p[0] for p in parts]))
    assert torch.equal(whole_k, torch.cat([p[1] for p in parts]))
    want_q, want_k = reference(q.double(), k.double(), positions, cs, head_size=D, rotary_dim=R, is_neox=is_neox)
    torch.testing.assert_close(whole_q.double(), want_q, rtol=ULP[dtype], atol=ULP[dtype])
    torch.testing.assert_close(whole_k.double(), want_k, rtol=ULP[dtype], atol=ULP[dtype])
    rq, rk = op(q, k, positions, cs, inplace=True)       # in place: the same values where q and k lie
    torch.cuda.synchronize()
    assert rq is q and torch.equal(q, whole_q) and torch.equal(k, whole_k)


def _without_prefill_kernel(fn):
    """fn() with tileops_rope's 128-thread build serving prefills (persistent_launch_shape
    answering None), as before session 13"""
    from tileops.kernels.positional import rope as K
    saved = K.persistent_launch_shape
    K.persistent_launch_shape = lambda *a, **k: None
    try:
        return fn()
    finally:
        K.persistent_launch_shape = saved


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("is_neox,R", [(True, 128), (False, 128), (True, 64)])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("pos_dtype", [torch.int32, torch.int64])
def test_the_prefill_kernel_gives_the_128_thread_build_s_bits_on_packed_views(dtype, is_neox, R, inplace, pos_dtype):
    """tileops_rope_persistent (blocks walking tokens: T > its grid, so every block walks
    several) against tileops_rope's 128-thread build on the same views into a packed qkv
    tensor: the same bits, v untouched, written views still views; and the float64
    reference."""
    from tileops import runtime
    from tileops.kernels.positional import rope as K
    sms = runtime.device_attributes(0)["sm_count"]
    T, H, Hk, D, P = 3 * K.PERSISTENT_BLOCKS_PER_SM * sms + 7, 32, 8, 128, 8192
    assert K.persistent_launch_shape(T, H, Hk, 8, 8, K.HEADS_PER_THREAD, sms) is not None
    cs = rope_cos_sin_cache(base=500000.0, rotary_dim=R, max_position=P).to(DEV)
    positions = torch.randint(0, P, (T,), generator=torch.Generator().manual_seed(5)).to(DEV, pos_dtype)
    op = RopeFwdOp(D, R, is_neox)
    results = []
    for run in (lambda f: f(), _without_prefill_kernel):
        qkv, q, k = packed(T, H, Hk, D, dtype, seed=7)
        before = qkv.clone()
        rq, rk = run(lambda: op(q, k, positions, cs, inplace=inplace))
        torch.cuda.synchronize()
        if inplace:
            assert rq is q and rk is k and rq.data_ptr() == qkv.data_ptr()
        assert torch.equal(qkv[:, (H + Hk) * D:], before[:, (H + Hk) * D:])          # v untouched
        results.append((rq.clone(), rk.clone(), before))
    (q1, k1, before), (q2, k2, _) = results
    assert torch.equal(q1, q2) and torch.equal(k1, k2)
    bq, bk = before[:, :H * D].view(T, H, D), before[:, H * D:(H + Hk) * D].view(T, Hk, D)
    want_q, want_k = reference(bq.double(), bk.double(), positions, cs, head_size=D, rotary_dim=R, is_neox=is_neox)
    torch.testing.assert_close(q1.double(), want_q, rtol=ULP[dtype], atol=ULP[dtype])
    torch.testing.assert_close(k1.double(), want_k, rtol=ULP[dtype], atol=ULP[dtype])


@pytest.mark.parametrize("inplace", [False, True])
def test_the_prefill_kernel_gives_nan_rotated_channels_for_a_bad_position(inplace):
    from tileops import runtime
    from tileops.kernels.positional import rope as K
    sms = runtime.device_attributes(0)["sm_count"]
    T, H, Hk, D, R, P = K.PERSISTENT_BLOCKS_PER_SM * sms * 2 + 3, 8, 2, 128, 64, 64
    qkv, q, k = packed(T, H, Hk, D, torch.bfloat16, seed=9)
    before = qkv.clone()
    cs = rope_cos_sin_cache(base=10000.0, rotary_dim=R, max_position=P).to(DEV)
    positions = torch.randint(0, P, (T,), generator=torch.Generator().manual_seed(2))
    bad = torch.tensor([1, 600, T - 1])
    positions[bad] = torch.tensor([P, -1, 2**40])
    positions = positions.to(DEV)
    qo, ko = RopeFwdOp(D, R)(q, k, positions, cs, inplace=inplace)
    torch.cuda.synchronize()
    good = torch.ones(T, dtype=torch.bool)
    good[bad] = False
    for got, src in ((qo, before[:, :H * D].view(T, H, D)), (ko, before[:, H * D:(H + Hk) * D].view(T, Hk, D))):
        assert got[bad.to(DEV), :, :R].isnan().all() and not got[good.to(DEV)].isnan().any()
        assert torch.equal(got[:, :, R:], src[:, :, R:])


def test_a_prefill_captured_before_the_prefill_kernel_is_built_replays_tileops_rope_s_bits():
    """Capture a prefill on an op whose prefill kernel was never built (only decode-sized
    calls before): the 128-thread build serves inside the capture (built before it, at the
    warm-up), the same bits as the prefill kernel's outside it."""
    from tileops import runtime
    from tileops.kernels.positional import rope as K
    sms = runtime.device_attributes(0)["sm_count"]
    T, H, Hk, D, P = K.PERSISTENT_BLOCKS_PER_SM * sms + 11, 28, 4, 128, 4096
    qkv, q, k = packed(T, H, Hk, D, torch.float16, seed=11)
    cs = rope_cos_sin_cache(base=1000000.0, rotary_dim=D, max_position=P).to(DEV)
    positions = torch.randint(0, P, (T,), generator=torch.Generator().manual_seed(4)).to(DEV)
    op = RopeFwdOp(D, D, True, cast_cos_sin=False)
    _without_prefill_kernel(lambda: op(q, k, positions, cs))      # warm-up: the 128-thread build only
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        qo, ko = op(q, k, positions, cs)
    graph.replay()
    torch.cuda.synchronize()
    wq, wk = op(q, k, positions, cs)          # outside: builds and takes the prefill kernel
    torch.cuda.synchronize()
    assert torch.equal(qo, wq) and torch.equal(ko, wk)
