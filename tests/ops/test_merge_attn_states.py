"""MergeAttnStatesFwdOp beyond the generic driver: merging the states of two halves of the
keys gives attention over all of them (what cascade and split-KV attention rely on), the
edges of the lse (an empty side as -inf or +inf gives the other side exactly, whatever
the empty side's o holds; both empty give o = 0 and lse = -inf; a NaN lse gives NaN), on
the builtin CPU kernel and the reference alike, out= (also o_a itself), vLLM's [H, T]
lse through a transposed view, and the launchable's checks."""
import math

import pytest
import torch

from tileops.attention import MergeAttnStatesFwdOp
from tileops.errors import InputValueError

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TARGETS = ["builtin", "aten"]
INF, NAN = float("inf"), float("nan")


def attention_state(q, keys, values):
    """(o, lse) of softmax attention of q [T, H, D] over keys and values [S, H, D], in float64."""
    scores = torch.einsum("thd,shd->ths", q.double(), keys.double()) / math.sqrt(q.shape[-1])
    lse = torch.logsumexp(scores, dim=-1)
    o = torch.einsum("ths,shd->thd", torch.softmax(scores, dim=-1), values.double())
    return o, lse


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_merging_two_halves_of_the_keys_is_attention_over_all_of_them(dtype, target):
    g = torch.Generator().manual_seed(0)
    T, H, D, S = 5, 3, 64, 40
    q, keys, values = (torch.randn(n, H, D, generator=g) for n in (T, S, S))
    o_full, lse_full = attention_state(q, keys, values)
    o_a, lse_a = attention_state(q, keys[:13], values[:13])
    o_b, lse_b = attention_state(q, keys[13:], values[13:])
    o, lse = MergeAttnStatesFwdOp(target=target)(o_a.to(dtype), lse_a.float(), o_b.to(dtype), lse_b.float())
    assert o.dtype == dtype and lse.dtype == torch.float32
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(o.double(), o_full, rtol=tol, atol=tol)
    torch.testing.assert_close(lse.double(), lse_full, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_the_edges_of_the_lse(dtype, target):
    T, H, D = 6, 1, 24
    g = torch.Generator().manual_seed(1)
    o_a, o_b = torch.randn(T, H, D, generator=g).to(dtype), torch.randn(T, H, D, generator=g).to(dtype)
    o_a[0] = NAN            # an empty partial's o may hold anything: it is not read
    o_b[1] = INF
    lse_a = torch.tensor([[-INF], [0.5], [-INF], [INF], [NAN], [2.0]])
    lse_b = torch.tensor([[1.25], [-INF], [-INF], [-0.75], [1.0], [2.0]])
    o, lse = MergeAttnStatesFwdOp(target=target)(o_a, lse_a, o_b, lse_b)
    assert torch.equal(o[0], o_b[0]) and lse[0, 0] == 1.25                 # a empty: b exactly
    assert torch.equal(o[1], o_a[1]) and lse[1, 0] == 0.5                  # b empty: a exactly
    assert not o[2].any() and lse[2, 0] == -INF                            # both empty: 0, -inf
    assert torch.equal(o[3], o_b[3]) and lse[3, 0] == -0.75                # +inf is empty too (FlashAttention)
    assert o[4].isnan().all() and lse[4].isnan().all()                     # a NaN lse: NaN
    # equal lse: the mean of the two, lse + ln 2
    torch.testing.assert_close(o[5].float(), ((o_a[5].float() + o_b[5].float()) / 2).to(dtype).float(),
                               rtol=0, atol=0 if dtype == torch.float32 else 2 ** -7)
    torch.testing.assert_close(lse[5, 0], torch.tensor(2.0 + math.log(2.0)))


@pytest.mark.parametrize("target", TARGETS)
def test_a_head_size_of_zero_still_merges_each_rows_lse(target):
    """D = 0 (found by review: the CPU kernel refused the empty o's NULL pointer): o is
    empty, and the lse merges by the reference's rules, the lse edges included."""
    from tileops.reference.attention import merge_attn_states as reference
    lse_a = torch.tensor([[0.0, -INF], [NAN, 1.0], [2.0, 3.0]])
    lse_b = torch.tensor([[1.0, -INF], [0.0, -INF], [INF, 3.0]])
    o, lse = MergeAttnStatesFwdOp(target=target)(torch.empty(3, 2, 0), lse_a, torch.empty(3, 2, 0), lse_b)
    assert o.shape == (3, 2, 0)
    want = reference(torch.empty(3, 2, 0), lse_a, torch.empty(3, 2, 0), lse_b)[1]
    torch.testing.assert_close(lse, want, rtol=0, atol=0, equal_nan=True)
    assert lse[0, 0] == 1.0 + math.log1p(math.exp(-1.0))


def test_far_apart_lse_gives_the_larger_side():
    o_a, o_b = torch.randn(2, 1, 8), torch.randn(2, 1, 8)
    o, lse = MergeAttnStatesFwdOp()(o_a, torch.tensor([[0.0], [-200.0]]), o_b, torch.tensor([[-200.0], [0.0]]))
    assert torch.equal(o[0], o_a[0]) and torch.equal(o[1], o_b[1]) and torch.equal(lse, torch.zeros(2, 1))


@pytest.mark.parametrize("target", TARGETS)
def test_out_is_filled_and_may_be_o_a_itself(target):
    g = torch.Generator().manual_seed(2)
    o_a, o_b = torch.randn(4, 2, 16, generator=g).half(), torch.randn(4, 2, 16, generator=g).half()
    lse_a, lse_b = torch.randn(4, 2, generator=g), torch.randn(4, 2, generator=g)
    op = MergeAttnStatesFwdOp(target=target)
    want_o, want_lse = op(o_a, lse_a, o_b, lse_b)
    out = torch.empty_like(o_a)
    got_o, got_lse = op(o_a, lse_a, o_b, lse_b, out=out)
    assert got_o is out and torch.equal(out, want_o) and torch.equal(got_lse, want_lse)
    got_o, _ = op(o_a, lse_a, o_b, lse_b, out=o_a)
    assert got_o is o_a and torch.equal(o_a, want_o)


def test_vllm_head_major_lse_through_a_transposed_view():
    g = torch.Generator().manual_seed(3)
    o_a, o_b = torch.randn(7, 3, 8, generator=g), torch.randn(7, 3, 8, generator=g)
    lse_a_ht, lse_b_ht = torch.randn(3, 7, generator=g), torch.randn(3, 7, generator=g)   # vLLM: [H, T]
    op = MergeAttnStatesFwdOp()
    o, lse = op(o_a, lse_a_ht.t(), o_b, lse_b_ht.t())
    want_o, want_lse = op(o_a, lse_a_ht.t().contiguous(), o_b, lse_b_ht.t().contiguous())
    assert torch.equal(o, want_o) and torch.equal(lse.t(), want_lse.t())


def test_the_launchable_checks_what_the_kernel_relies_on():
    op = MergeAttnStatesFwdOp()
    o_a, o_b, o = torch.randn(3, 2, 8), torch.randn(3, 2, 8), torch.empty(3, 2, 8)
    lse_a, lse_b, lse = torch.randn(3, 2), torch.randn(3, 2), torch.empty(3, 2)
    launch = op.kernel_for("merge_attn_states", o_a, lse_a, o_b, lse_b, o, lse)
    launch(o_a, lse_a, o_b, lse_b, o, lse)
    want = op(o_a, lse_a, o_b, lse_b)
    assert torch.equal(o, want[0]) and torch.equal(lse, want[1])
    with pytest.raises(InputValueError, match="'o_b'"):
        launch(o_a, lse_a, o_b[:2], lse_b, o, lse)
    with pytest.raises(InputValueError, match="'lse_b'"):
        launch(o_a, lse_a, o_b, lse_b.double(), o, lse)
    with pytest.raises(InputValueError, match="'o'"):
        launch(o_a, lse_a, o_b, lse_b, o.transpose(0, 1), lse)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(o_a, lse_a, o_b, lse_b, o, o_a.view(-1)[:6].view(3, 2))
    buf = torch.randn(3 * 2 * 8 + 8)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(buf[:48].view(3, 2, 8), lse_a, o_b, lse_b, buf[8:].view(3, 2, 8), lse)
