"""The attention family on a GPU beyond the generic driver (tests/gpu/test_gpu_ops.py).

KVCacheWriteFwdOp: the vector and scalar builds (k and v as views into a packed qkv
tensor, with and without strides that break 16-byte rows; caches off 16-byte alignment)
write exactly vLLM's rows, as the CPU kernel does, at the manifest's shapes; a slot out of
range is skipped (the documented GPU outcome: nothing written outside the caches, which
lie between guard bytes here, the token's rows left as they were); a CUDA graph replays
with new slot_mapping values and new keys.

MergeAttnStatesFwdOp: against the float64 reference and the CPU kernel, vector and scalar
builds; the lse edges exact as on the CPU; out= o_a in place; a CUDA graph replays with
new states. Skipped without CUDA (tests/gpu/conftest.py)."""
import pytest
import torch

from tileops.attention import KVCacheWriteFwdOp, MergeAttnStatesFwdOp
from tileops.reference.attention import merge_attn_states as merge_reference

DEV = "cuda"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
INF, NAN = float("inf"), float("nan")


def vllm_style(k, v, key_cache, value_cache, slot_mapping):
    """What reshape_and_cache_flash writes, token by token, on CPU copies of the caches
    (a slot outside [0, num_slots) skipped, as the GPU kernel documents)."""
    kc, vc = key_cache.cpu().clone(), value_cache.cpu().clone()
    k, v = k.cpu(), v.cpu()
    bs, n = kc.shape[1], kc.shape[0] * kc.shape[1]
    for t, s in enumerate(slot_mapping.tolist()):
        if 0 <= s < n:
            kc[s // bs, s % bs] = k[t]
            vc[s // bs, s % bs] = v[t]
    return kc, vc


def packed_kv(T, H, Hk, D, dtype, pad, seed=0):
    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn(T, (H + 2 * Hk) * D + pad, generator=g).to(DEV, dtype)
    return qkv[:, H * D:(H + Hk) * D].view(T, Hk, D), qkv[:, (H + Hk) * D:(H + 2 * Hk) * D].view(T, Hk, D)


def slots_for(T, num_slots, dtype, seed=1):
    s = torch.randperm(num_slots, generator=torch.Generator().manual_seed(seed))[:T]
    s[::7] = -1
    return s.to(DEV, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slot_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("Hk,D", [(8, 128), (4, 128), (2, 128), (3, 64), (1, 7)])
@pytest.mark.parametrize("bs", [16, 64])
@pytest.mark.parametrize("pad", [0, 1])   # pad 1: token strides off 16 bytes -> the scalar build
def test_writes_vllm_rows_like_the_cpu_kernel(dtype, slot_dtype, Hk, D, bs, pad):
    T, H, nb = 37, 4, 8
    k, v = packed_kv(T, H, Hk, D, dtype, pad)
    g = torch.Generator().manual_seed(2)
    kc = torch.randn(nb, bs, Hk, D, generator=g).to(DEV, dtype)
    vc = torch.randn(nb, bs, Hk, D, generator=g).to(DEV, dtype)
    slots = slots_for(T, nb * bs, slot_dtype)
    want_k, want_v = vllm_style(k, v, kc, vc, slots)
    ck, cv = kc.cpu(), vc.cpu()
    KVCacheWriteFwdOp()(k.cpu(), v.cpu(), ck, cv, slots.cpu())
    KVCacheWriteFwdOp()(k, v, kc, vc, slots)
    torch.cuda.synchronize()
    assert torch.equal(kc.cpu(), want_k) and torch.equal(vc.cpu(), want_v)
    assert torch.equal(ck, want_k) and torch.equal(cv, want_v)


@pytest.mark.parametrize("Hk,bs", [(8, 16), (4, 64), (2, 16)])
def test_the_manifest_shapes_at_2048_tokens(Hk, bs):
    T, D, nb = 2048, 128, 32768 // bs
    k, v = packed_kv(T, 32, Hk, D, torch.bfloat16, 0)
    kc = torch.zeros(nb, bs, Hk, D, device=DEV, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    slots = slots_for(T, nb * bs, torch.int64)
    KVCacheWriteFwdOp()(k, v, kc, vc, slots)
    want_k, want_v = vllm_style(k, v, kc, vc, slots)
    assert torch.equal(kc.cpu(), want_k) and torch.equal(vc.cpu(), want_v)


def test_misaligned_caches_take_the_scalar_build():
    T, Hk, D, nb, bs = 9, 2, 64, 4, 16
    k, v = packed_kv(T, 4, Hk, D, torch.float16, 0)
    n = nb * bs * Hk * D
    buf = torch.zeros(2 * n + 2, device=DEV, dtype=torch.float16)
    kc, vc = buf[1:n + 1].view(nb, bs, Hk, D), buf[n + 1:2 * n + 1].view(nb, bs, Hk, D)   # 2 bytes off
    assert kc.is_contiguous() and kc.data_ptr() % 16
    slots = slots_for(T, nb * bs, torch.int64)
    KVCacheWriteFwdOp()(k, v, kc, vc, slots)
    want_k, want_v = vllm_style(k, v, kc, vc, slots)
    assert torch.equal(kc.cpu(), want_k) and torch.equal(vc.cpu(), want_v)
    assert buf[0] == 0 and buf[-1] == 0


@pytest.mark.parametrize("slot_dtype", [torch.int64, torch.int32])
def test_a_slot_out_of_range_is_skipped_and_nothing_is_written_outside_the_caches(slot_dtype):
    T, Hk, D, nb, bs = 6, 2, 128, 4, 16
    k, v = packed_kv(T, 4, Hk, D, torch.float16, 0)
    n, guard = nb * bs * Hk * D, 4096
    buf = torch.full((2 * n + 3 * guard,), 7.0, device=DEV, dtype=torch.float16)
    kc = buf[guard:guard + n].view(nb, bs, Hk, D)
    vc = buf[2 * guard + n:2 * guard + 2 * n].view(nb, bs, Hk, D)
    kc.normal_()
    vc.normal_()
    bad = [nb * bs, 2**31 - 1 if slot_dtype is torch.int32 else 2**40, -3]
    slots = torch.tensor([5, bad[0], 17, bad[1], bad[2], nb * bs - 1], device=DEV, dtype=slot_dtype)
    want_k, want_v = vllm_style(k, v, kc, vc, slots)   # the bad tokens skipped
    KVCacheWriteFwdOp()(k, v, kc, vc, slots)
    torch.cuda.synchronize()
    assert torch.equal(kc.cpu(), want_k) and torch.equal(vc.cpu(), want_v)
    for a, b in ((0, guard), (guard + n, 2 * guard + n), (2 * guard + 2 * n, 3 * guard + 2 * n)):
        assert (buf[a:b] == 7.0).all(), "a write landed outside the caches"


def test_a_cuda_graph_replays_with_new_slots_and_keys():
    T, Hk, D, nb, bs = 8, 8, 128, 16, 16
    k, v = packed_kv(T, 32, Hk, D, torch.bfloat16, 0)
    kc = torch.zeros(nb, bs, Hk, D, device=DEV, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    slots = torch.arange(T, device=DEV)
    op = KVCacheWriteFwdOp()
    op(k, v, kc, vc, slots)                # warm up: builds outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op(k, v, kc, vc, slots)
    for step in range(3):
        kc.zero_()
        vc.zero_()
        slots.copy_(torch.randperm(nb * bs, generator=torch.Generator().manual_seed(step))[:T].to(DEV))
        slots[step] = -1
        k.normal_()
        v.normal_()
        graph.replay()
        torch.cuda.synchronize()
        want_k, want_v = vllm_style(k, v, torch.zeros_like(kc), torch.zeros_like(vc), slots)
        assert torch.equal(kc.cpu(), want_k) and torch.equal(vc.cpu(), want_v), f"replay {step}"


# ---- MergeAttnStatesFwdOp -----------------------------------------------------------------

# The fp32 weights come from ex2.approx / lg2.approx and the rows from two fp32 roundings:
# a few units of 2^-24 of the terms (4e-6 covers cancellation between terms of up to ~4);
# a 16-bit output may then round one unit (of the dtype) away from the float64 value.
ULP = {torch.float32: 4e-6, torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}


def states(T, H, D, dtype, seed=0, offset=0):
    g = torch.Generator().manual_seed(seed)
    n = T * H * D
    bufs = [torch.randn(n + offset, generator=g).to(DEV, dtype) for _ in range(2)]
    o_a, o_b = (b[offset:].view(T, H, D) for b in bufs)
    lse_a, lse_b = (3 * torch.randn(T, H, generator=g)).to(DEV), (3 * torch.randn(T, H, generator=g)).to(DEV)
    return o_a, lse_a, o_b, lse_b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,H,D", [(37, 5, 128), (1, 32, 128), (300, 8, 64), (33, 3, 7), (17, 4, 130), (5, 2, 512)])
@pytest.mark.parametrize("offset", [0, 1])   # offset 1: the states off 16-byte alignment -> the scalar build
def test_merge_matches_the_float64_reference_and_the_cpu_kernel(dtype, T, H, D, offset):
    o_a, lse_a, o_b, lse_b = states(T, H, D, dtype, offset=offset)
    o, lse = MergeAttnStatesFwdOp()(o_a, lse_a, o_b, lse_b)
    torch.cuda.synchronize()
    want_o, want_lse = merge_reference(o_a.double(), lse_a.double(), o_b.double(), lse_b.double())
    u = ULP[dtype]
    torch.testing.assert_close(o.double(), want_o, rtol=u, atol=u)
    torch.testing.assert_close(lse.double(), want_lse, rtol=2e-6, atol=2e-6)
    co, clse = MergeAttnStatesFwdOp()(o_a.cpu(), lse_a.cpu(), o_b.cpu(), lse_b.cpu())
    torch.testing.assert_close(o.cpu(), co, rtol=u, atol=u)   # one rounding apart at most
    torch.testing.assert_close(lse.cpu(), clse, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_merge_edges_are_exact_on_the_gpu(dtype):
    T, H, D = 6, 1, 128
    o_a, _, o_b, _ = states(T, H, D, dtype)
    o_a[0] = NAN
    o_b[1] = INF
    lse_a = torch.tensor([[-INF], [0.5], [-INF], [INF], [NAN], [2.0]], device=DEV)
    lse_b = torch.tensor([[1.25], [-INF], [-INF], [-0.75], [1.0], [-200.0]], device=DEV)
    o, lse = MergeAttnStatesFwdOp()(o_a, lse_a, o_b, lse_b)
    torch.cuda.synchronize()
    assert torch.equal(o[0], o_b[0]) and lse[0, 0] == 1.25
    assert torch.equal(o[1], o_a[1]) and lse[1, 0] == 0.5
    assert not o[2].any() and lse[2, 0] == -INF
    assert torch.equal(o[3], o_b[3]) and lse[3, 0] == -0.75
    assert o[4].isnan().all() and lse[4].isnan().all()
    assert torch.equal(o[5], o_a[5]) and lse[5, 0] == 2.0          # e^-202 underflows: a alone
    co, clse = MergeAttnStatesFwdOp()(o_a.cpu(), lse_a.cpu(), o_b.cpu(), lse_b.cpu())
    assert torch.equal(o.cpu().nan_to_num(7.0), co.nan_to_num(7.0)) and torch.equal(lse.cpu().nan_to_num(7.0),
                                                                                    clse.nan_to_num(7.0))


def test_merge_in_place_into_o_a():
    o_a, lse_a, o_b, lse_b = states(64, 8, 128, torch.float16, seed=3)
    op = MergeAttnStatesFwdOp()
    want_o, want_lse = op(o_a, lse_a, o_b, lse_b)
    got_o, got_lse = op(o_a, lse_a, o_b, lse_b, out=o_a)
    torch.cuda.synchronize()
    assert got_o is o_a and torch.equal(o_a, want_o) and torch.equal(got_lse, want_lse)


def test_merge_in_a_cuda_graph_replays_with_new_states():
    o_a, lse_a, o_b, lse_b = states(16, 32, 128, torch.bfloat16, seed=4)
    op = MergeAttnStatesFwdOp()
    out = torch.empty_like(o_a)
    op(o_a, lse_a, o_b, lse_b, out=out)     # warm up: builds outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _, lse = op(o_a, lse_a, o_b, lse_b, out=out)
    for _ in range(2):
        for t in (o_a, o_b, lse_a, lse_b):
            t.normal_()
        graph.replay()
        torch.cuda.synchronize()
        want_o, want_lse = merge_reference(o_a.double(), lse_a.double(), o_b.double(), lse_b.double())
        torch.testing.assert_close(out.double(), want_o, rtol=2 ** -7, atol=2 ** -7)
        torch.testing.assert_close(lse.double(), want_lse, rtol=2e-6, atol=2e-6)
