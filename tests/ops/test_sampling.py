"""The sampling family on the CPU beyond the generic driver (tests/test_ops.py runs every
target, dtype, branch and layout against the float64 references): what users compare with
(torch.softmax, torch.argmax, torch.topk, vLLM's forward_native and draw), the documented
outcome of NaN, infinities and "off" values, ties, bitwise batch invariance, rows longer
than one chunk of the C kernels, and the launchables' checks."""
import pytest
import torch

import sampling_checks as sc
from tileops.errors import InputTypeError, InputValueError
from tileops.reference import sampling as ref
from tileops.sampling import ArgmaxFwdOp, SampleFromProbsFwdOp, SoftmaxFwdOp, TopKFwdOp, TopKTopPMaskFwdOp

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
NAN, INF = float("nan"), float("inf")
# rows of one chunk, of several (the CPU kernels split rows in chunks of 8192 / 16384), odd
VS = [7, 300, 20000, 40001]


def temperatures(B, seed=3):
    return torch.rand(B, generator=torch.Generator().manual_seed(seed)) * 1.5 + 0.3


# ---- softmax ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_softmax_is_torchs_float32_softmax(dtype, V):
    x = sc.logits_like(5, V, dtype)
    t = temperatures(5)
    for out_dtype in (None, torch.float32):
        for temp in (None, t):
            got = SoftmaxFwdOp(out_dtype)(x, temp)
            z = x.float() if temp is None else x.float() / temp[:, None]
            want = torch.softmax(z, -1)
            assert got.dtype == (out_dtype or dtype)
            if got.dtype == torch.float32:
                # within 6e-6 of the exact softmax of the float32 z; torch's own is within
                # 1.5e-5 of it at these lengths (a float32 sum of 40001 terms)
                torch.testing.assert_close(got.double(), torch.softmax(z.double(), -1), rtol=6e-6, atol=0)
                torch.testing.assert_close(got, want, rtol=3e-5, atol=1e-9)
                torch.testing.assert_close(got.double().sum(-1), torch.ones(5, dtype=torch.float64), rtol=1e-5,
                                           atol=0)
            else:   # one rounding of a value within 2e-6 of torch's
                torch.testing.assert_close(got.float(), want, rtol=2 ** -7, atol=1e-6)


def test_softmax_rows_torch_gives_nan_are_nan_and_minus_inf_is_zero():
    x = torch.randn(6, 50)
    x[0, 3] = NAN
    x[1, 7] = INF
    x[2] = -INF
    x[3, :40] = -INF                       # finite elsewhere: zeros where -inf
    x[4, 0] = INF
    x[4, 1] = INF
    got = SoftmaxFwdOp()(x)
    want = torch.softmax(x, -1)
    assert torch.equal(got.isnan(), want.isnan()) and got[:3].isnan().all() and got[4].isnan().all()
    assert torch.equal(got[3, :40], torch.zeros(40)) and not got[3].isnan().any()
    torch.testing.assert_close(got[3], want[3], rtol=1e-5, atol=0)
    torch.testing.assert_close(got[5], want[5], rtol=1e-5, atol=0)
    # a temperature of 0 or NaN: what torch makes of logits / t (NaN rows)
    t = torch.tensor([0.0, NAN, 1.0, 1.0, 1.0, -1.0])
    got = SoftmaxFwdOp()(torch.randn(6, 9), t)
    assert got[:2].isnan().all() and not got[5].isnan().any()


def test_softmax_out_is_filled_and_a_wrong_out_refused():
    x = sc.logits_like(3, 100, torch.bfloat16)
    out = torch.empty(3, 100)
    op = SoftmaxFwdOp(torch.float32)
    assert op(x, out=out) is out and torch.equal(out, op(x))
    with pytest.raises(InputTypeError, match=r"SoftmaxFwdOp: argument 'out': expected dtype torch.float32"):
        op(x, out=torch.empty(3, 100, dtype=torch.bfloat16))
    with pytest.raises(InputValueError, match=r"SoftmaxFwdOp: shape rule `temperature is None or "):
        op(x, torch.ones(4))
    with pytest.raises(InputValueError, match=r"SoftmaxFwdOp: param 'out_dtype'"):
        SoftmaxFwdOp(torch.float64)


# ---- argmax ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_argmax_is_torch_argmax_with_ties_nan_and_signed_zeros(dtype, V):
    x = sc.logits_like(12, V, dtype)
    x[1] = 0.0
    x[2, V // 2:] = x[2].max() + 1           # a tie over half the row: the lowest index
    x[3, V - 1] = NAN
    x[3, V // 3] = NAN                        # the first NaN
    x[4] = -INF
    x[5, 0] = -0.0                            # -0.0 == 0.0: the first of them
    x[5, 1:] = -1.0
    x[5, V // 2] = 0.0
    x[6] = x[6].round()                       # many ties everywhere
    x[7, -1] = INF
    got = ArgmaxFwdOp()(x)
    assert got.dtype == torch.int64 and torch.equal(got, torch.argmax(x, -1)), (got, torch.argmax(x, -1))


# ---- top-k -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V,k", [(7, 7), (300, 1), (300, 50), (20000, 1024), (40001, 37)])
def test_top_k_values_are_torch_topks_and_ties_go_to_the_lower_index(dtype, V, k):
    x = sc.logits_like(6, V, dtype)
    x[1] = x[1].round()                       # ties across the k-th value
    x[2, :V // 2] = NAN                       # NaN the largest
    x[3, 5 % V] = -0.0
    values, indices = TopKFwdOp(k)(x)
    tv, ti = torch.topk(x, k)
    assert torch.equal(values.isnan(), tv.isnan()) and torch.equal(values[~values.isnan()], tv[~tv.isnan()])
    rv, ri = ref.top_k(x, k=k)                # the stable sort: equal values by index
    assert torch.equal(indices, ri)
    bits = torch.int16 if dtype != torch.float32 else torch.int32      # values copied bit for bit
    assert torch.equal(values.view(bits), x.view(bits).gather(1, indices))
    assert (indices.sort(-1).values.diff(dim=-1) > 0).all()   # k distinct indices
    only = TopKFwdOp(k)(x, return_values=False)
    assert isinstance(only, torch.Tensor) and torch.equal(only, indices)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("k", [1, 40, 1000])
def test_top_k_whatever_the_sample_of_the_row_sees(dtype, k):
    """The CPU kernel keeps, for a small k, only the elements above a floor found on a
    sample of every 16th element (sampling_candidates); a row that fools the sample must
    give the same k largest as one that does not."""
    V = 40000
    x = sc.logits_like(8, V, dtype)
    x[0, 0::16] += 50.0                        # the largest where the sample does not look
    x[1, 8::16] += 50.0                        # ... and where it looks (the floor is high)
    x[2] = torch.arange(V, dtype=dtype)        # increasing: ties in 16-bit, the top at the end
    x[3] = -torch.arange(V, dtype=torch.float32).to(dtype)
    x[4] = 1.0                                 # one value: every element ties
    x[5, ::2] = -0.0
    x[5, 1::2] = 0.0                           # signed zeros are equal
    x[6, 8::16] = NAN                          # the sample sees NaN (the largest) only
    x[7, 3::16] = INF
    values, indices = TopKFwdOp(k)(x)
    assert torch.equal(indices, ref.top_k(x, k=k)[1])
    bits = torch.int16 if dtype != torch.float32 else torch.int32
    assert torch.equal(values.view(bits), x.view(bits).gather(1, indices))


def test_top_k_of_zero_and_a_k_above_v():
    x = torch.randn(3, 10)
    v, i = TopKFwdOp(0)(x)
    assert v.shape == (3, 0) and i.shape == (3, 0)
    with pytest.raises(InputValueError, match=r"TopKFwdOp: shape rule `k <= logits.shape\[1\]`"):
        TopKFwdOp(11)(x)
    with pytest.raises(InputValueError, match=r"TopKFwdOp: param 'k'"):
        TopKFwdOp(-1)


# ---- top-k / top-p -----------------------------------------------------------------------

def _kp(B, V, seed=5):
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(1, V, (B,), generator=g, dtype=torch.int32)
    p = torch.rand(B, generator=g) * 0.95 + 0.02
    return k, p


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [7, 300, 20000])
def test_top_k_top_p_is_vllms_rule_in_float64(dtype, V):
    x = sc.logits_like(16, V, dtype)
    k, p = _kp(16, V)
    k[0], k[1], k[2] = V, 0, -3                 # top-k off
    p[3], p[4], p[5] = 1.0, 1.5, NAN            # top-p off
    p[6], p[7] = 0.0, -0.5                      # the largest alone
    x[8] = x[8].round()                         # ties at the edges
    for kk, pp in ((k, p), (k, None), (None, p), (None, None)):
        got = TopKTopPMaskFwdOp()(x, kk, pp)
        sc.check_mask(got, x, kk, pp)
    got = TopKTopPMaskFwdOp()(x, None, p)
    assert (got[6] != -INF).sum() == 1 and (got[7] != -INF).sum() == 1
    assert torch.equal(got[3:6], x[3:6])
    assert torch.equal(TopKTopPMaskFwdOp()(x), x)


def test_top_k_top_p_matches_vllms_forward_native_as_written():
    """On float32 logits without ties, vLLM's own code (an unstable sort, float32 sums):
    the same mask but for elements at the nucleus' edge within float32 rounding."""
    x = sc.logits_like(32, 5000, torch.float32, seed=11)
    k, p = _kp(32, 5000, seed=12)
    got = TopKTopPMaskFwdOp()(x, k, p)
    want = sc.vllm_forward_native(x.clone(), k, p)
    before = sc.mass_before(x, k, p)
    differ = (got == -INF) != (want == -INF)
    assert not (differ & ~((before - p[:, None].double()).abs() < 1e-5)).any()


def test_top_k_top_p_special_rows():
    x = torch.randn(5, 40)
    x[0, 3] = NAN                              # all NaN out
    x[1, :] = -INF                             # nothing finite: left alone
    x[2, 7] = INF                              # +inf: top-p leaves it, top-k applies
    x[3, 5] = -INF                             # a masked logit stays -inf
    k = torch.tensor([3, 3, 3, 40, 2], dtype=torch.int64)
    p = torch.tensor([0.5, 0.5, 0.5, 0.9, 0.3])
    got = TopKTopPMaskFwdOp()(x, k, p)
    assert got[0].isnan().all()
    assert torch.equal(got[1], x[1])
    assert got[2, 7] == INF and (got[2] != -INF).sum() == 3
    sc.check_mask(got, x, k, p)


def test_top_k_top_p_in_place_writes_only_masked_logits():
    x = sc.logits_like(4, 300, torch.bfloat16)
    x[:, 0] = -0.0
    k, p = _kp(4, 300)
    want = TopKTopPMaskFwdOp()(x, k, p)
    y = x.clone()
    ptr = y.data_ptr()
    got = TopKTopPMaskFwdOp()(y, k, p, inplace=True)
    assert got is y and y.data_ptr() == ptr and torch.equal(got.view(torch.int16), want.view(torch.int16))


# ---- sampling ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_sample_is_vllms_draw(dtype, V):
    g = torch.Generator().manual_seed(7)
    probs = torch.softmax(torch.randn(9, V, generator=g) * 2, -1).to(dtype)
    q = torch.empty(9, V).exponential_(generator=g)
    got = SampleFromProbsFwdOp()(probs, q)
    assert torch.equal(got, (probs.float() / q).argmax(-1))
    # rows without a ratio > 0: -1; NaN and zero ratios never win; ties: the lower index
    probs[0] = 0
    probs[1] = NAN
    probs[2, :] = 0
    probs[2, V // 2] = -1.0
    probs[3, :] = NAN
    probs[3, V - 1] = 0.5
    probs[4, :] = 0.25
    q[4] = 1.0
    got = SampleFromProbsFwdOp()(probs, q)
    assert got[:3].tolist() == [-1, -1, -1] and got[3] == V - 1 and got[4] == 0
    assert torch.equal(got, ref.sample_from_probs(probs, q))


def test_sample_draws_with_the_probabilities():
    probs = torch.tensor([[0.5, 0.25, 0.125, 0.125, 0.0]]).expand(40000, 5).contiguous()
    q = torch.empty(40000, 5).exponential_(generator=torch.Generator().manual_seed(1))
    tokens = SampleFromProbsFwdOp()(probs, q)
    freq = torch.bincount(tokens, minlength=5).double() / 40000
    torch.testing.assert_close(freq, probs[0].double(), rtol=0, atol=0.01)   # 4 sigma: 0.01


# ---- batch invariance -----------------------------------------------------------------------

def _others(V, dtype):
    def make(n):
        g = torch.Generator().manual_seed(n)
        x = (torch.randn(n, V, generator=g) * 4).to(dtype)
        return x, g
    return make


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [300, 20000])
def test_every_op_gives_a_row_the_same_bits_whatever_the_batch(dtype, V):
    x = sc.logits_like(3, V, dtype, seed=21)
    x[1, 5] = NAN
    make = _others(V, dtype)

    def other_logits(n):
        return {"logits": make(n)[0]}

    def other_temp(n):
        o, g = make(n)
        return {"logits": o, "temperature": torch.rand(n, generator=g) + 0.5}

    sc.batch_invariant(lambda logits: SoftmaxFwdOp(torch.float32)(logits), {"logits": x}, other_logits)
    sc.batch_invariant(lambda logits, temperature: SoftmaxFwdOp()(logits, temperature),
                       {"logits": x, "temperature": temperatures(3)}, other_temp)
    sc.batch_invariant(lambda logits: ArgmaxFwdOp()(logits), {"logits": x}, other_logits)
    sc.batch_invariant(lambda logits: TopKFwdOp(20)(logits), {"logits": x}, other_logits)
    k, p = _kp(3, V)

    def other_kp(n):
        o, g = make(n)
        return {"logits": o, "k": torch.randint(0, V + 1, (n,), generator=g, dtype=torch.int32),
                "p": torch.rand(n, generator=g)}
    sc.batch_invariant(lambda logits, k, p: TopKTopPMaskFwdOp()(logits, k, p), {"logits": x, "k": k, "p": p},
                       other_kp)
    probs = torch.softmax(x.float(), -1).to(dtype)
    q = torch.empty(3, V).exponential_(generator=torch.Generator().manual_seed(2))

    def other_q(n):
        o, g = make(n)
        return {"probs": torch.softmax(o.float(), -1).to(dtype), "q": torch.empty(n, V).exponential_(generator=g)}
    sc.batch_invariant(lambda probs, q: SampleFromProbsFwdOp()(probs, q), {"probs": probs, "q": q}, other_q)


# ---- the launchables check what C relies on ------------------------------------------------

def test_the_launchables_check_what_the_kernels_rely_on():
    x = torch.randn(3, 50)
    op = SoftmaxFwdOp()
    probs = torch.empty(3, 50)
    launch = op.kernel_for("softmax", x, None, probs)
    launch(x, None, probs)
    torch.testing.assert_close(probs, torch.softmax(x, -1), rtol=1e-5, atol=0)
    with pytest.raises(InputValueError, match="'probs'"):
        launch(x, None, torch.empty(3, 49))
    with pytest.raises(InputValueError, match="'temperature'"):
        launch(x, torch.ones(2), probs)
    with pytest.raises(InputTypeError, match="'logits'"):
        launch(x.half(), None, probs)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(x, None, x)
    tok = torch.empty(3, dtype=torch.int64)
    launch = ArgmaxFwdOp().kernel_for("argmax", x, tok)
    with pytest.raises(InputValueError, match="'token'"):
        launch(x, torch.empty(2, dtype=torch.int64))
    with pytest.raises(InputTypeError, match="'token'"):
        launch(x, torch.empty(3, dtype=torch.int32))
    values, indices = torch.empty(3, 4), torch.empty(3, 4, dtype=torch.int64)
    launch = TopKFwdOp(4).kernel_for("top_k", x, values, indices)
    with pytest.raises(InputValueError, match="'indices'"):
        launch(x, values, torch.empty(3, 51, dtype=torch.int64))
    with pytest.raises(InputValueError, match="'values'"):
        launch(x, torch.empty(3, 5), indices)
    launch = TopKTopPMaskFwdOp().kernel_for("top_k_top_p_mask", x, None, None, x)
    with pytest.raises(InputValueError, match="'k'"):
        launch(x, torch.ones(2, dtype=torch.int32), None, x)     # a k per row
    launch = SampleFromProbsFwdOp().kernel_for("sample_from_probs", x, x, tok)
    with pytest.raises(InputTypeError, match="'q'"):
        launch(x, x.double(), tok)
