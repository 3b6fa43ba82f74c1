"""RopeFwdOp beyond the generic driver (tests/test_ops.py runs every target, dtype, branch
and layout against the float64 reference): q and k as views into one packed qkv tensor,
written in place through the views (no copy, v untouched); Hugging Face's rotation;
int64 positions; an out-of-range position on the CPU (a clear error, nothing written);
GPT-J pairs and partial rotary against a hand-written rotation."""

import pytest
import torch

from tileops.errors import InputValueError
from tileops.positional import RopeFwdOp
from tileops.reference.positional import rope as reference
from tileops.reference.positional import rope_cos_sin_cache

from helpers import hf_llama3_inv_freq


def packed(T, H, Hk, D, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn(T, (H + 2 * Hk) * D, generator=g).to(dtype)
    q = qkv[:, :H * D].view(T, H, D)
    k = qkv[:, H * D:(H + Hk) * D].view(T, Hk, D)
    return qkv, q, k


def cache(P, R, base=10000.0):
    return rope_cos_sin_cache(base=base, rotary_dim=R, max_position=P)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("is_neox", [True, False])
def test_in_place_on_views_of_a_packed_qkv_writes_through_the_views(dtype, is_neox):
    T, H, Hk, D, P = 5, 4, 2, 64, 40
    qkv, q, k = packed(T, H, Hk, D, dtype)
    assert not q.is_contiguous() and q.stride(-1) == 1
    before = qkv.clone()
    positions = torch.tensor([0, 3, 39, 7, 3], dtype=torch.int32)
    cs = cache(P, D)
    want_q, want_k = reference(before[:, :H * D].view(T, H, D), before[:, H * D:(H + Hk) * D].view(T, Hk, D),
                               positions, cs, head_size=D, rotary_dim=D, is_neox=is_neox)
    op = RopeFwdOp(D, D, is_neox)
    ptr = qkv.data_ptr()
    rq, rk = op(q, k, positions, cs, inplace=True)
    assert rq is q and rk is k and qkv.data_ptr() == ptr
    # one rounding to the dtype on both sides, from fp32 values formed in another order
    ulp = {torch.float32: 2 ** -22, torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}[dtype]
    torch.testing.assert_close(q, want_q, rtol=ulp, atol=ulp)
    torch.testing.assert_close(k, want_k, rtol=ulp, atol=ulp)
    assert torch.equal(qkv[:, (H + Hk) * D:], before[:, (H + Hk) * D:])   # v untouched


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("target", ["builtin", "aten"])
def test_in_place_on_head_major_views(is_neox, target):
    """q and k [T, H, D] as transposes of [H, T, D] (token stride D, head stride T x D): no
    two head vectors share memory, so in place is allowed (found by review: the C kernel
    took only token-major strides and called these 'overlapping'); heads that do overlap
    are still refused, nothing written."""
    T, H, Hk, D, P = 5, 3, 2, 16, 9
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(H, T, D, generator=g).transpose(0, 1), torch.randn(Hk, T, D, generator=g).transpose(0, 1)
    positions = torch.tensor([0, 8, 2, 2, 5])
    cs = cache(P, D)
    want_q, want_k = reference(q.clone(), k.clone(), positions, cs, head_size=D, rotary_dim=D, is_neox=is_neox)
    rq, rk = RopeFwdOp(D, D, is_neox, target=target)(q, k, positions, cs, inplace=True)
    assert rq is q and rk is k and q.stride() == (D, T * D, 1)
    torch.testing.assert_close(q, want_q, rtol=2 ** -22, atol=2 ** -22)
    torch.testing.assert_close(k, want_k, rtol=2 ** -22, atol=2 ** -22)
    base = torch.randn(T * D + D, generator=g)
    q_bad = base.as_strided((T, 2, D), (D, D // 2, 1))   # a head's second half is the next head's first
    before = base.clone()
    with pytest.raises(InputValueError, match=r"RopeFwdOp: argument 'q'"):
        RopeFwdOp(D, D, is_neox, target=target)(q_bad, k, positions, cs, inplace=True)
    assert torch.equal(base, before)


def test_matches_hugging_face_rotate_half():
    """Llama's apply_rotary_pos_emb (q * cos + rotate_half(q) * sin, cos and sin of the
    concatenated frequencies), written out here as transformers writes it."""
    T, H, Hk, D = 7, 3, 1, 32
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(T, H, D, generator=g), torch.randn(T, Hk, D, generator=g)
    positions = torch.arange(T) * 3
    inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    freqs = positions.float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]

    def rotate_half(x):
        return torch.cat((-x[..., D // 2:], x[..., :D // 2]), dim=-1)
    want_q, want_k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    got_q, got_k = RopeFwdOp(D, D)(q, k, positions, cache(64, D))
    torch.testing.assert_close(got_q, want_q, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_k, want_k, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("is_neox", [True, False])
def test_partial_rotary_and_gpt_j_pairs_by_hand(is_neox):
    T, H, Hk, D, R = 3, 2, 1, 12, 8
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(T, H, D, generator=g, dtype=torch.float64), torch.randn(T, Hk, D, generator=g, dtype=torch.float64)
    positions = torch.tensor([5, 0, 2], dtype=torch.int64)
    cs = cache(8, R)
    got_q, got_k = RopeFwdOp(D, R, is_neox)(q.float(), k.float(), positions, cs)
    for x, got in ((q, got_q), (k, got_k)):
        want = x.clone()
        for t in range(T):
            c, s = cs[positions[t], :R // 2].double(), cs[positions[t], R // 2:].double()
            for i in range(R // 2):
                ia, ib = (i, i + R // 2) if is_neox else (2 * i, 2 * i + 1)
                a, b = x[t, :, ia], x[t, :, ib]
                want[t, :, ia], want[t, :, ib] = a * c[i] - b * s[i], b * c[i] + a * s[i]
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
        assert torch.equal(got[..., R:].double(), x[..., R:].float().double())   # passed through


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("R", [2, 14, 16, 18, 32, 34, 64, 96, 128])
@pytest.mark.parametrize("cast", [False, True])
def test_gpt_j_pairs_give_neox_bits_on_the_deinterleaved_channels(dtype, R, cast):
    """A GPT-J rotation is NeoX's on the channels (0, 2, ..., 1, 3, ...): the CPU kernel
    rotates the same values with the same operations, so the same bits, whatever the
    tail of R / 2 pairs a vector step leaves (the pairs convert by vector loads and
    stores since session 19)."""
    T, H, Hk, D = 4, 3, 2, 128
    g = torch.Generator().manual_seed(R)
    q, k = (torch.randn(T, h, D, generator=g).to(dtype) for h in (H, Hk))
    positions = torch.tensor([7, 0, 3, 15])
    cs = cache(16, R)
    perm = torch.cat([torch.arange(0, R, 2), torch.arange(1, R, 2), torch.arange(R, D)])
    inv = torch.argsort(perm)
    gq, gk = RopeFwdOp(D, R, is_neox=False, cast_cos_sin=cast)(q, k, positions, cs)
    nq, nk = RopeFwdOp(D, R, is_neox=True, cast_cos_sin=cast)(q[..., perm].contiguous(), k[..., perm].contiguous(),
                                                              positions, cs)
    bits = torch.int32 if dtype == torch.float32 else torch.int16
    assert torch.equal(gq.view(bits), nq[..., inv].contiguous().view(bits))
    assert torch.equal(gk.view(bits), nk[..., inv].contiguous().view(bits))


def test_a_position_out_of_range_is_an_error_that_writes_nothing_on_the_cpu():
    T, H, Hk, D = 4, 2, 1, 16
    qkv, q, k = packed(T, H, Hk, D, torch.float16)
    before = qkv.clone()
    op = RopeFwdOp(D, D)
    for bad in (17, -1):
        positions = torch.tensor([1, 2, bad, 3], dtype=torch.int64)
        with pytest.raises(InputValueError, match=rf"RopeFwdOp.*positions.*positions\[2\] = {bad} is outside \[0, 17\)"):
            op(q, k, positions, cache(17, D), inplace=True)
        assert torch.equal(qkv, before)


def test_int64_and_int32_positions_agree():
    T, H, Hk, D = 6, 2, 2, 32
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(T, H, D, generator=g).half(), torch.randn(T, Hk, D, generator=g).half()
    p = torch.tensor([9, 0, 4, 4, 1, 30])
    op = RopeFwdOp(D, D)
    a = op(q, k, p.to(torch.int32), cache(31, D))
    b = op(q, k, p.to(torch.int64), cache(31, D))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_the_cache_matches_hugging_face_llama3_rope_init():
    """rope_type "llama3" of Llama-3.1's config, as transformers computes it (in float32)."""
    base, D, factor, lo, hi, old = 500000.0, 128, 8.0, 1.0, 4.0, 8192
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    llama, _ = hf_llama3_inv_freq(inv, factor, lo, hi, old)
    t = torch.arange(300).float()
    freqs = torch.outer(t, llama)
    want = torch.cat((freqs.cos(), freqs.sin()), dim=-1)
    got = rope_cos_sin_cache(base=base, rotary_dim=D, max_position=300, rope_type="llama3", factor=factor,
                             low_freq_factor=lo, high_freq_factor=hi, original_max_position_embeddings=old)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_the_launchable_kernel_for_returns_checks_what_the_kernel_relies_on():
    from tileops.errors import InputTypeError
    T, H, Hk, D = 3, 2, 1, 16
    g = torch.Generator().manual_seed(4)
    q, k = torch.randn(T, H, D, generator=g), torch.randn(T, Hk, D, generator=g)
    p, cs = torch.tensor([0, 5, 2]), cache(8, D)
    op = RopeFwdOp(D, D)
    qo, ko = torch.empty_like(q), torch.empty_like(k)
    launch = op.kernel_for("rope", q, k, p, cs, qo, ko)
    launch(q, k, p, cs, qo, ko)
    want = reference(q, k, p, cs, head_size=D, rotary_dim=D, is_neox=True)
    torch.testing.assert_close((qo, ko), want, rtol=1e-5, atol=1e-5)
    bad = {
        "k": (q, k[:2], p, cs, qo, ko),                                  # another token count
        "q": (torch.randn(T, H, 2 * D)[..., ::2], k, p, cs, qo, ko),     # channel stride 2
        "positions": (q, k, p.float(), cs, qo, ko),
        "cos_sin_cache": (q, k, p, cache(8, D // 2), qo, ko),
        "q_out": (q, k, p, cs, torch.empty(T, H, D - 1), ko),
    }
    for name, args in bad.items():
        with pytest.raises(InputValueError, match=f"argument '{name}'"):
            launch(*args)
    with pytest.raises(InputValueError, match="'q'"):
        launch(torch._neg_view(q), k, p, cs, qo, ko)
    with pytest.raises(InputTypeError, match="'q'"):
        launch("q", k, p, cs, qo, ko)
    buf = torch.empty(T * H * D + T * Hk * D)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(q, k, p, cs, buf[:T * H * D].view(T, H, D), buf[T * H * D - 1:-1].view(T, Hk, D))



def test_the_launchable_refuses_a_lazily_negated_cache_and_takes_outputs_in_place():
    """The launch guard reads the cache's negation bit (C would read the un-negated values:
    a silent wrong rotation) and lets an output be its input itself (in place)."""
    T, H, Hk, D = 3, 2, 1, 16
    g = torch.Generator().manual_seed(6)
    q, k = torch.randn(T, H, D, generator=g), torch.randn(T, Hk, D, generator=g)
    p, cs = torch.tensor([0, 5, 2]), cache(8, D)
    op = RopeFwdOp(D, D)
    launch = op.kernel_for("rope", q, k, p, cs, q, k)
    with pytest.raises(InputValueError, match="'cos_sin_cache': expected a contiguous float32 .* lazily negated"):
        launch(q, k, p, torch._neg_view(cs), q, k)
    want = reference(q, k, p, cs, head_size=D, rotary_dim=D, is_neox=True)
    launch(q, k, p, cs, q, k)
    torch.testing.assert_close((q, k), want, rtol=1e-5, atol=1e-5)

# ---- cast_cos_sin: Hugging Face's arithmetic in the dtype ------------------------------------
# (not a manifest workload: against float64 its error is the dtype's, by design, larger than
# the generic driver's bound where a rotation cancels)

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("target", ["builtin", "aten"])
def test_cast_cos_sin_is_the_rotation_in_the_dtype_bit_for_bit(dtype, is_neox, target):
    g = torch.Generator().manual_seed(5)
    T, H, Hk, D, R = 33, 3, 2, 64, 48
    cache = rope_cos_sin_cache(base=10000.0, rotary_dim=R, max_position=40)
    q, k = (torch.randn(T, H, D, generator=g) * 3).to(dtype), (torch.randn(T, Hk, D, generator=g) * 3).to(dtype)
    pos = torch.randint(0, 40, (T,), generator=g)
    op = RopeFwdOp(D, R, is_neox, cast_cos_sin=True, target=target)
    got = op(q, k, pos, cache)
    want = reference(q, k, pos, cache, head_size=D, rotary_dim=R, is_neox=is_neox, cast_cos_sin=True)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    if is_neox:   # Hugging Face's own expression, with cos/sin repeated over both halves
        c, s = cache[pos, :R // 2].to(dtype), cache[pos, R // 2:].to(dtype)
        cos, sin = torch.cat((c, c), -1)[:, None], torch.cat((s, s), -1)[:, None]
        x = q[..., :R]
        hf = x * cos + torch.cat((-x[..., R // 2:], x[..., :R // 2]), -1) * sin
        assert torch.equal(got[0][..., :R], hf) and torch.equal(got[0][..., R:], q[..., R:])
    plain = RopeFwdOp(D, R, is_neox)(q, k, pos, cache)
    if dtype != torch.float32:
        assert not torch.equal(plain[0], got[0])      # the single rounding differs somewhere
