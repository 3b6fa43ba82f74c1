"""The sampling family on a GPU beyond the generic driver (tests/gpu/test_gpu_ops.py): the
CUDA kernels at the real vocabularies (Llama-3 128256, Qwen2.5 152064; rows over a cluster
of CTAs) and at short and unaligned rows, against float64 references and what users
compare with (torch.softmax, torch.argmax, torch.topk, vLLM's forward_native and draw),
against the CPU kernels where both are exact (argmax, top-k, the draw: the same tokens),
the documented outcome of NaN, infinities and "off" values, bitwise batch invariance
(B = 1, 32, 128, 256, a row among others), and CUDA-graph capture and replay with new
inputs. Skipped without CUDA (tests/gpu/conftest.py)."""
import pytest
import torch

import sampling_checks as sc
from tileops.errors import KernelSelectionError
from tileops.reference import sampling as ref
from tileops.sampling import ArgmaxFwdOp, SampleFromProbsFwdOp, SoftmaxFwdOp, TopKFwdOp, TopKTopPMaskFwdOp

DEV = "cuda"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
NAN, INF = float("nan"), float("inf")
# the real vocabularies (a cluster of 8 CTAs per row), one CTA's rows, unaligned rows
VS = [128256, 152064, 20000, 4100, 301, 7]


def on_gpu(t):
    return None if t is None else t.to(DEV)


def temperatures(B, seed=3):
    return torch.rand(B, generator=torch.Generator().manual_seed(seed)) * 1.5 + 0.3


def _sync(x):
    torch.cuda.synchronize()
    return x


# ---- softmax ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_softmax_against_float64_and_torch(dtype, V):
    x = sc.logits_like(5, V, dtype, DEV)
    t = temperatures(5).to(DEV)
    for out_dtype in (None, torch.float32):
        for temp in (None, t):
            got = _sync(SoftmaxFwdOp(out_dtype)(x, temp))
            z = x.float() if temp is None else x.float() / temp[:, None]
            exact = torch.softmax(z.double(), -1)
            assert got.dtype == (out_dtype or dtype)
            if got.dtype == torch.float32:   # ex2.approx and a float32 sum: within 1e-5 of exact
                torch.testing.assert_close(got.double(), exact, rtol=1e-5, atol=1e-12)
                torch.testing.assert_close(got, torch.softmax(z, -1), rtol=3e-5, atol=1e-9)
            else:                            # one rounding more
                torch.testing.assert_close(got.double(), exact, rtol=2 ** -7, atol=1e-6)
            cpu = SoftmaxFwdOp(out_dtype)(x.cpu(), None if temp is None else temp.cpu())
            # float16 probabilities below 2^-14 are subnormal, a unit of 2^-24 apart: a float32
            # that differs in its last bits may round to the next one
            torch.testing.assert_close(got.cpu().double(), cpu.double(), rtol=2e-5 if got.dtype == torch.float32
                                       else 2 ** -7, atol=2 ** -24 if got.dtype == torch.float16 else 1e-9)


def test_softmax_rows_torch_gives_nan_are_nan():
    for V in (128256, 300):
        x = torch.randn(6, V, device=DEV)
        x[0, 3] = NAN
        x[1, V - 1] = INF
        x[2] = -INF
        x[3, : V - 40] = -INF
        got = _sync(SoftmaxFwdOp()(x))
        want = torch.softmax(x, -1)
        assert got[:3].isnan().all() and not got[3:].isnan().any()
        assert torch.equal(got[3, : V - 40], torch.zeros(V - 40, device=DEV))
        torch.testing.assert_close(got[3:], want[3:], rtol=3e-5, atol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [128256, 152064, 20000])
def test_softmax_of_masked_logits_where_most_ctas_hold_only_minus_inf(dtype, V):
    # the sampler's chain: top-k / top-p masked logits (a few finite values, the rest -inf)
    # into softmax, with and without a temperature. Rows: the mask's survivors where they
    # fall (k 1, 5, 50), all in one CTA's chunk (the others -inf only: they add nothing to
    # the sum), one survivor at the row's last element, survivors at the first element of
    # every chunk (one each), a row masked to -inf but one element whose value is -1e4
    from tileops.kernels.sampling import cuda_sampling as K
    plan = K.row_plan(V, K.arch(torch.cuda.current_device()), 232448, 4)
    x = sc.logits_like(8, V, dtype, DEV, seed=V + 21)
    k = torch.tensor([1, 5, 50, V, V, V, V, V], dtype=torch.int32, device=DEV)
    masked = TopKTopPMaskFwdOp()(x, k, None)
    c = plan.chunk if plan.chunk + 40 < V else 0   # rank 1's chunk (rank 0's where one CTA takes the row)
    masked[3:] = -INF
    masked[3, c + 3: c + 40] = x[3, c + 3: c + 40]
    masked[4, V - 1] = 2.5
    masked[5, :: plan.chunk] = x[5, :: plan.chunk]
    masked[6, V // 3] = -1e4
    masked[7, 17] = 0.0
    t = temperatures(8).to(DEV)
    for temp in (None, t):
        got = _sync(SoftmaxFwdOp(torch.float32)(masked, temp))
        z = masked.double() if temp is None else masked.double() / temp.double()[:, None]
        exact = torch.softmax(z, -1)
        assert not got.isnan().any() and torch.equal(got[masked == -INF], torch.zeros_like(got[masked == -INF]))
        torch.testing.assert_close(got.double(), exact, rtol=1e-5, atol=1e-12)
        for r, q in ((4, V - 1), (6, V // 3), (7, 17)):   # a lone survivor: exactly 1
            assert got[r, q].item() == 1.0 and got[r].sum().item() == 1.0, (r, temp is None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [128256, 152064, 20000, 16385, 301])
def test_softmax_peaks_in_every_cta_and_pads_under_negative_temperature(dtype, V):
    # the row's peak at the first and at the last element of each CTA's chunk (the cluster
    # exchange: every rank's max and sum), temperatures of both signs (a pad slot past the
    # chunk's octets, or past V in the last octet, stays -inf: x / t of its fill would be
    # +inf under t < 0); a NaN in each rank's chunk gives that row NaN, the others none
    from tileops.kernels.sampling import cuda_sampling as K
    plan = K.row_plan(V, K.arch(torch.cuda.current_device()), 232448, 4)
    pos = sorted({min(V - 1, r * plan.chunk + d) for r in range(plan.cluster) for d in (0, plan.chunk - 1)} | {V - 1})
    x = sc.logits_like(len(pos), V, dtype, DEV, seed=V)
    for i, q in enumerate(pos):
        x[i, q] = 12.0
    t = torch.tensor([(-0.7 if i % 2 else 1.3) for i in range(len(pos))], device=DEV)
    got = _sync(SoftmaxFwdOp(torch.float32)(x, t))
    exact = torch.softmax(x.double() / t.double()[:, None], -1)
    torch.testing.assert_close(got.double(), exact, rtol=1e-5, atol=1e-12)
    plain = _sync(SoftmaxFwdOp(torch.float32)(x))
    torch.testing.assert_close(plain.double(), torch.softmax(x.double(), -1), rtol=1e-5, atol=1e-12)
    y = x.clone()
    for i, q in enumerate(pos):
        y[i, q] = NAN
    got = _sync(SoftmaxFwdOp(torch.float32)(torch.cat([y, x]), torch.cat([t, t])))
    assert got[: len(pos)].isnan().all() and not got[len(pos):].isnan().any()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("V", VS)
def test_softmax_kept_in_registers_gives_the_staged_builds_bits(dtype, V):
    # 16-bit logits without a temperature take the build that keeps the chunk's words in
    # registers (TILEOPS_STAGE 2); the same build staging z in shared memory, and the op
    # under a temperature of ones (the staged build: x / 1 = x exactly, by the reciprocal
    # made once as by div.rn), take the same values in the same order, so the same bits,
    # NaN rows included; both output dtypes; an offset view (unaligned rows: the scalar path)
    x = sc.logits_like(7, V + 1, dtype, DEV, seed=V + 5)
    x[2, 3] = NAN
    x[3, V // 2] = INF
    for logits in (x[:, :V].contiguous(), x[:, 1:].contiguous(), x.flatten()[1: 1 + 7 * V].view(7, V)):
        ones = torch.ones(7, device=DEV)
        for out_dtype in (torch.float32, dtype):
            kept = _sync(SoftmaxFwdOp(out_dtype)(logits))
            for staged in (_sync(SoftmaxFwdOp(out_dtype)(logits, ones)),
                           _softmax_build(logits, None, out_dtype, (), staged=True)):
                assert torch.equal(kept.isnan(), staged.isnan()) and kept[2:4].isnan().all()
                assert torch.equal(kept.nan_to_num(), staged.nan_to_num())


def _softmax_build(x, t, out_dtype, defines, staged=False):
    """The op's build for x (and t) with `defines` (each replacing the shipped option of its
    name, or added), launched with the shipped plan's shape (staged: the plan that stages z
    in shared memory, -DTILEOPS_STAGE=1, where the shipped one keeps 16-bit words in
    registers): -DSMX_FASTDIV=0 divides every element of pass 3 by div.rn inline (the
    division before the row's reciprocal was made once), -DSMX_TFASTDIV=0 every x / t (the
    temperature's division before session 34)"""
    from tileops import _C, runtime
    from tileops._dtypes import CODE
    from tileops.kernels.sampling import cuda_sampling as K
    dev = x.device.index or 0
    B, V = x.shape
    probs = torch.empty(B, V, dtype=out_dtype, device=x.device)
    aligned = all(p % 16 == 0 for p in (x.data_ptr(), probs.data_ptr()))
    source, kernel, opts, plan = K.softmax_specialisation(CODE[x.dtype], CODE[out_dtype], V, t is not None, aligned,
                                                          K.arch(dev), K._device_limits(dev))
    if staged:
        plan = K.row_plan(V, K.arch(dev), K._device_limits(dev), stage_bytes=4)
        assert plan.stage == 1, plan
        defines = ("-DTILEOPS_STAGE=1",) + tuple(defines)
    names = tuple(d.split("=")[0] + "=" for d in defines)
    opts = tuple(o for o in opts if not o.startswith(names)) + tuple(defines)
    handle = runtime.build(dev, source, kernel, opts, "ppp", pdl=True)
    _C.cuda_launch(handle, B * plan.cluster, 1, 1, plan.threads, 1, 1, plan.smem, torch.cuda.current_stream().cuda_stream,
                   x.data_ptr(), 0 if t is None else t.data_ptr(), probs.data_ptr())
    return _sync(probs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [128256, 20000, 301])
def test_softmax_s_reciprocal_made_once_gives_div_rn_s_bits(dtype, V):
    # pass 3 divides by S through its reciprocal made once where every element of an octet
    # is in [2^-96, 1] and S in [1, 2^24] (the same RCP, Newton step and FFMAs as div.rn's
    # fast path), an octet whose e are 0 or at least S 2^-126 by a second tier (those below
    # 2^-96 scaled by 2^64 and back), by div.rn elsewhere: the same bits as div.rn everywhere. Rows: moderate logits (every octet fast),
    # logits spread over 150 (e below 2^-96: octets of every kind), -inf and a lone finite
    # value (e = 0), a NaN row, logits evenly over [-100, 0] (every e from 1 down through
    # [2^-126, 2^-96), the second tier's band, to 0); every stage (16-bit without a
    # temperature: the registers build; float32 or a temperature: staged), both output dtypes
    x = sc.logits_like(7, V, dtype, DEV, seed=V + 11)
    x[1] = (torch.randn(V, device=DEV) * 40).to(dtype)
    x[2, V // 3:] = -INF
    x[3] = -INF
    x[3, V - 1] = 1.0
    x[4, 5] = NAN
    x[6] = torch.linspace(-100, 0, V, device=DEV)[torch.randperm(V, device=DEV)].to(dtype)
    t = temperatures(7).to(DEV)
    for temp in (None, t):
        for out_dtype in (torch.float32, dtype):
            got = _sync(SoftmaxFwdOp(out_dtype)(x, temp))
            want = _softmax_build(x, temp, out_dtype, ("-DSMX_FASTDIV=0",))
            assert torch.equal(got.isnan(), want.isnan()) and got[4].isnan().all() and not got[5].isnan().any()
            assert torch.equal(got.nan_to_num(), want.nan_to_num())
            if out_dtype == torch.float32:
                assert (got[1] < 2.0 ** -96).any() and (got[1] > 2.0 ** -10).any()   # both kinds of octet
                if temp is None:   # quotients in [2^-126, 2^-96), and of 0
                    assert ((got[6] >= 2.0 ** -126) & (got[6] < 2.0 ** -96)).any() and (got[6] == 0).any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [128256, 20000, 301])
def test_softmax_t_reciprocal_made_once_gives_div_rn_s_bits(dtype, V):
    # x / t through t's reciprocal made once where every element of an octet is in
    # [2^-64, 2^64) in magnitude and t in [2^-32, 2^32] (div.rn's fast-path steps), an
    # octet of infinities as it is, an octet's zeros and infinities as they are where its
    # other elements are in that range, div.rn elsewhere: the
    # same bits as div.rn for every x / t (-DSMX_TFASTDIV=0). Rows: ordinary logits with
    # temperatures in range (the second with a -inf every 7 and a zero of each sign among
    # them), then zeros of
    # both signs, an infinity, a NaN, subnormals and logits past 2^64 (float32 and bfloat16
    # hold them) in octets of ordinary ones, a row masked to -inf but for its last 50, under
    # temperatures in range and out of it (2^-40, 2^40), negative, zero, NaN and +inf
    B = 12
    x = sc.logits_like(B, V, dtype, DEV, seed=V + 13)
    x[1, ::7] = -INF                               # zeros and infinities beside in-range logits only
    x[1, 2], x[1, 3] = 0.0, -0.0
    tiny = torch.finfo(dtype).tiny / 4             # a subnormal of the dtype
    big = 3e25 if dtype != torch.float16 else 6e4  # past 2^64 where the dtype reaches it
    for r in range(2, B):
        x[r, 1], x[r, 9], x[r, V // 2] = 0.0, -0.0, tiny
        x[r, V - 2] = -INF
        x[r, 17] = big if r % 2 else -big
    x[3, : V - 50] = -INF
    x[5, 4] = INF
    x[6, 3] = NAN
    t = torch.tensor([0.7, 1.9, 0.3, 1.0, 2.0 ** -40, 0.5, 1.1, 2.0 ** 40, -0.8, 0.0, NAN, INF], device=DEV)
    for out_dtype in (torch.float32, dtype):
        got = _sync(SoftmaxFwdOp(out_dtype)(x, t))
        want = _softmax_build(x, t, out_dtype, ("-DSMX_TFASTDIV=0",))
        assert torch.equal(got.isnan(), want.isnan()) and got[6].isnan().all() and not got[:2].isnan().any()
        assert torch.equal(got.nan_to_num(), want.nan_to_num()), out_dtype
    # the rows in range against torch's own division: the probabilities of x.float() / t
    got = _sync(SoftmaxFwdOp(torch.float32)(x[:4], t[:4]))
    torch.testing.assert_close(got, torch.softmax(x[:4].float() / t[:4, None], -1), rtol=3e-5, atol=1e-9)


# ---- argmax and the draw: the same tokens as torch and as the CPU ---------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_argmax_is_torch_argmax_and_the_cpu_kernels(dtype, V):
    x = sc.logits_like(12, V, dtype, DEV)
    x[1] = 0.0
    x[2, V // 2:] = x[2].max() + 1
    x[3, V - 1] = NAN
    x[3, V // 3] = NAN
    x[4] = -INF
    x[5, 0] = -0.0
    x[5, 1:] = -1.0
    x[5, V // 2] = 0.0
    x[6] = x[6].round()
    x[7, -1] = INF
    got = _sync(ArgmaxFwdOp()(x))
    assert torch.equal(got, torch.argmax(x, -1)) and torch.equal(got.cpu(), ArgmaxFwdOp()(x.cpu()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_the_draw_is_vllms_and_the_cpu_kernels(dtype, V):
    g = torch.Generator().manual_seed(7)
    probs = torch.softmax(torch.randn(9, V, generator=g) * 2, -1).to(dtype)
    q = torch.empty(9, V).exponential_(generator=g)
    probs[0] = 0
    probs[1] = NAN
    probs[2, : V // 2] = NAN
    probs[3] = 0.25
    q[3] = 1.0
    # a row as a top-k / top-p mask leaves it: 50 probabilities kept, the rest zeros of both
    # signs, some over a q of 0 (0 / 0: NaN, never the draw) or of -1 (-0 / -1 = +0: not > 0)
    keep = torch.randperm(V, generator=g)[:50]
    kept = probs[4, keep].clone()
    probs[4] = 0.0
    probs[4, 1::3] = -0.0
    probs[4, keep] = kept
    zero = (probs[4] == 0).nonzero().flatten()
    q[4, zero[:5]] = 0.0
    q[4, zero[5:10]] = -1.0
    probs[5, V // 2], q[5, V // 2] = 1e-3, 0.0   # a probability over a q of 0: +inf, the draw
    got = _sync(SampleFromProbsFwdOp()(probs.to(DEV), q.to(DEV)))
    assert got[0] == -1 and got[1] == -1 and got[3] == 0 and got[5] == V // 2
    assert int(got[4]) in set(keep.tolist()) and probs[4, int(got[4])] > 0
    assert torch.equal(got.cpu(), ref.sample_from_probs(probs, q))
    assert torch.equal(got.cpu(), SampleFromProbsFwdOp()(probs, q))
    ok = ~probs.isnan().any(-1) & (probs > 0).any(-1)
    ok[4] = False   # torch's argmax takes 0 / 0's NaN
    assert torch.equal(got.cpu()[ok], (probs.float() / q).argmax(-1)[ok])


# ---- argmax and the draw at the kernels' seams, under both launch shapes ------------------

def _launch_shapes(V, rows):
    """(B, plan) of each launch shape of the exact kernels at V on this GPU
    (cuda_sampling._exact_rows_launcher): `rows` rows (a row over the V rule's cluster of
    CTAs) and sm_count / 2 rows or more (one CTA per row)."""
    from tileops import runtime
    from tileops.kernels.sampling import cuda_sampling as K
    a, sms = K.arch(0), runtime.device_attributes(0)["sm_count"]
    assert 2 * rows < sms
    return [(rows, K.row_plan(V, a, 0)), (max(rows, -(-sms // 2)), K.row_plan(V, a, 0, one_cta=True))]


def _seams(V, plan):
    """pos(c, t, j, k): the element of CTA c's thread t, its j-th octet (-1: its last), k-th
    element (sampling_common.cuh's split); None where that is past the row."""
    def pos(c, t, j, k):
        n = min(plan.chunk, V - c * plan.chunk)
        no = -(-n // 8)
        if n <= 0 or t >= no:
            return None
        if j < 0:
            j = (no - 1 - t) // plan.threads
        e = c * plan.chunk + 8 * (j * plan.threads + t) + k
        return e if 8 * (j * plan.threads + t) < no * 8 and e < min(V, (c + 1) * plan.chunk) else None
    return pos


def _put(row, positions, value):
    for e in positions:
        if e is not None:
            row[e] = value


def _first_best(x):
    """torch.argmax's rule in float64, row by row: the first NaN, else the first maximum
    (-0.0 equal to 0.0)."""
    out = []
    for r in x.double():
        nan = r.isnan().nonzero()
        out.append(int(nan[0]) if len(nan) else int((r == r.max()).nonzero()[0]))
    return torch.tensor(out)


def _seam_rows(V, plan, dtype):
    """Rows whose maximum (or first NaN) is tied across the seams of the split: two
    threads, two batches of one thread, two octets of a batch, two CTAs, the row's last
    partial octet, the octets of a CTA's last thread (its last batch partial where the
    CTA's octets do not fill every thread's: argmax.cu loads its whole octets together);
    -0.0 and 0.0; NaN after +inf; rows of -inf."""
    pos, T, C = _seams(V, plan), plan.threads, plan.chunk
    x = sc.logits_like(15, V, dtype, "cpu", seed=31)
    top = 64.0
    _put(x[0], [pos(0, 5, -1, 0), pos(0, 6, 0, 2)], top)                    # two threads
    _put(x[1], [pos(0, 3, 0, 7), pos(0, 3, -1, 0), pos(0, 3, 1, 0)], top)   # one thread's batches
    _put(x[2], [pos(0, 2, 2, 1), pos(0, 2, 1, 6), pos(0, 2, 1, 4)], top)    # octets of a batch
    _put(x[3], [V - 1, V // 2] + [e for e in (C - 1, C, C + 8 * T) if e < V], top)   # CTAs
    x[4] = -1.0
    _put(x[4], [pos(0, 4, -1, 1)], -0.0)
    _put(x[4], [pos(0, 9, 0, 5), pos(0, 1, 1, 3)], 0.0)
    x[5] = -1.0
    _put(x[5], [pos(0, 4, -1, 1), pos(1, 0, 0, 0)], 0.0)
    _put(x[5], [pos(0, 9, 0, 5), pos(0, 1, 1, 3)], -0.0)
    x[6, 0] = INF
    _put(x[6], [pos(0, 5, -1, 3), pos(0, 6, 0, 1)], NAN)                    # NaN: two threads
    _put(x[7], [pos(0, 3, 0, 0)], INF)
    _put(x[7], [pos(0, 3, -1, 2), pos(0, 3, 0, 6), pos(0, 3, 1, 1)], NAN)   # a thread's first NaN
    _put(x[8], [e for e in (C + 3, C - 1, V - 1) if e < V], NAN)            # NaN: two CTAs
    x[9] = -INF
    x[10] = -INF
    x[10, V - 1] = NAN
    x[11] = -INF
    x[11, V - 1] = -5.0                                                      # the partial octet
    x[12] = 1.0
    _put(x[13], [8 * T * j + 8 for j in range(plan.opt) if 8 * T * j + 8 < V] + [V - 1], top)   # thread 1
    _put(x[14], [pos(0, T - 1, -1, 6), pos(0, T - 1, -1, 2), pos(1, T - 1, 0, 0)], top)   # a CTA's last thread
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_argmax_ties_and_nans_across_threads_batches_and_ctas_in_both_launch_shapes(dtype, V):
    for B, plan in _launch_shapes(V, 15):
        rows = _seam_rows(V, plan, dtype)
        x = torch.cat([rows, sc.logits_like(B - 15, V, dtype, "cpu", seed=32)]) if B > 15 else rows
        want = _first_best(x)
        got = _sync(ArgmaxFwdOp()(x.to(DEV)))
        assert torch.equal(got.cpu(), want), (plan, (got.cpu() != want).nonzero().flatten().tolist())
        assert torch.equal(got, torch.argmax(x.to(DEV), -1)) and torch.equal(got.cpu(), ArgmaxFwdOp()(x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_the_draw_ties_across_threads_batches_and_ctas_in_both_launch_shapes(dtype, V):
    for B, plan in _launch_shapes(V, 8):
        pos, T, C = _seams(V, plan), plan.threads, plan.chunk
        probs = torch.full((B, V), 2.0 ** -20).to(dtype)
        q = torch.ones(B, V)
        ties = [[pos(0, 5, -1, 0), pos(0, 6, 0, 2)], [pos(0, 3, 0, 7), pos(0, 3, -1, 0)],
                [pos(0, 2, 2, 1), pos(0, 2, 1, 4)], [V - 1] + [e for e in (C - 1, C) if e < V]]
        for r, at in enumerate(ties):
            _put(probs[r], at, 2.0 ** -10)
        probs[4, : V - 1] = NAN                  # a NaN ratio never wins: the last element does
        probs[5] = 0.0
        probs[5, V // 2] = NAN                   # none > 0: -1
        q[6] = INF                               # every ratio 0: -1
        probs[7] = 2.0 ** -10                    # every ratio equal: the first
        want = torch.tensor([min([e for e in at if e is not None] or [0]) for at in ties] + [V - 1, -1, -1, 0])
        got = _sync(SampleFromProbsFwdOp()(probs.to(DEV), q.to(DEV))).cpu()
        assert torch.equal(got[:8], want), (plan, got[:8].tolist(), want.tolist())
        assert torch.equal(got, ref.sample_from_probs(probs, q)) and torch.equal(got, SampleFromProbsFwdOp()(probs, q))


# ---- top-k -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V,k", [(128256, 50), (152064, 20), (128256, 1024), (20000, 16384), (301, 301),
                                 (7, 1), (4100, 4099)])
def test_top_k_is_torch_topk_with_ties_to_the_lower_index(dtype, V, k):
    x = sc.logits_like(6, V, dtype, DEV)
    x[1] = x[1].round()
    x[2, : V // 2] = NAN
    x[3, 5 % V] = -0.0
    values, indices = _sync(TopKFwdOp(k)(x))
    tv, _ = torch.topk(x, k)
    assert torch.equal(values.isnan(), tv.isnan()) and torch.equal(values[~values.isnan()], tv[~tv.isnan()])
    assert torch.equal(indices, ref.top_k(x, k=k)[1])
    bits = torch.int16 if dtype != torch.float32 else torch.int32
    assert torch.equal(values.view(bits), x.view(bits).gather(1, indices))
    cv, ci = TopKFwdOp(k)(x.cpu())
    assert torch.equal(ci, indices.cpu()) and torch.equal(cv.view(bits), values.cpu().view(bits))
    only = _sync(TopKFwdOp(k)(x, return_values=False))
    assert torch.equal(only, indices)


def test_top_k_above_the_cuda_limit_is_refused_naming_it():
    x = torch.randn(2, 40000, device=DEV)
    with pytest.raises(KernelSelectionError, match=r"TopKFwdOp.*k <= 16384, got k = 16385"):
        TopKFwdOp(16385)(x)


# ---- top-k / top-p -----------------------------------------------------------------------

def _kp(B, V, seed=5):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, V, (B,), generator=g, dtype=torch.int32), torch.rand(B, generator=g) * 0.95 + 0.02


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", VS)
def test_top_k_top_p_is_vllms_rule_in_float64(dtype, V):
    x = sc.logits_like(16, V, dtype, DEV)
    k, p = _kp(16, V)
    k[0], k[1], k[2] = V, 0, -3
    p[3], p[4], p[5] = 1.0, 1.5, NAN
    p[6], p[7] = 0.0, -0.5
    x[8] = x[8].round()
    x[9, V // 2] = NAN
    k, p = k.to(DEV), p.to(DEV)
    edges = 0
    for kk, pp in ((k, p), (k, None), (None, p), (k.long(), p)):
        got = _sync(TopKTopPMaskFwdOp()(x, kk, pp))
        edges += sc.check_mask(got.cpu(), x.cpu(), None if kk is None else kk.cpu(), None if pp is None else pp.cpu())
        cpu = TopKTopPMaskFwdOp()(x.cpu(), None if kk is None else kk.cpu(), None if pp is None else pp.cpu())
        assert ((got.cpu() == -INF) != (cpu == -INF)).sum() <= edges + 2   # the two kernels' exps differ
    y = x.clone()
    got = _sync(TopKTopPMaskFwdOp()(y, k, p, inplace=True))
    assert got is y
    sc.check_mask(y.cpu(), x.cpu(), k.cpu(), p.cpu())


def test_top_k_top_p_matches_vllms_forward_native_as_written():
    x = sc.logits_like(32, 128256, torch.float32, DEV, seed=11)
    k, p = _kp(32, 128256, seed=12)
    k, p = k.to(DEV), p.to(DEV)
    got = _sync(TopKTopPMaskFwdOp()(x, k, p))
    want = sc.vllm_forward_native(x.clone(), k, p)
    before = sc.mass_before(x.cpu(), k.cpu(), p.cpu()).to(DEV)
    differ = (got == -INF) != (want == -INF)
    assert not (differ & ~((before - p[:, None].double()).abs() < 1e-5)).any()


# ---- the selections over a cluster ---------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [128256, 65537])
def test_every_cluster_of_the_selections_gives_the_same_bits(dtype, V, monkeypatch):
    """top-k and the top-k / top-p mask over 1, 2, 4, 8 and 16 CTAs a row
    (cuda_sampling.selection_cluster forced): ties spread over every CTA's chunk are ranked
    by index across the chunks; every cluster gives one CTA's bits, which are the
    reference's (at 128256 clusters of 4 and 8 keep a thread's words in registers, one CTA
    loads them each pass: sampling_common.cuh SMP_KEEP). 16 is a non-portable cluster the
    launch rule never picks (session 21 measured it): it launches only because the runtime
    allows non-portable clusters on every sm_90 kernel it loads, which this locks."""
    from tileops.kernels.sampling import cuda_sampling as K
    x = sc.logits_like(7, V, dtype, DEV, seed=8)
    x[1] = x[1].round()                          # a few dozen values: ties across every chunk
    x[2] = 0.5
    x[2, V - 1] = 1.0                            # all equal but the last
    x[3, V // 2] = NAN
    x[4] = (x[4] / 8).round()                    # ties of the edge larger than k, split over CTAs
    x[5, : V // 3] = -INF
    k = torch.tensor([50, 1000, 1000, 7, 3, V, 1], dtype=torch.int32, device=DEV)
    p = torch.tensor([0.9, 0.5, 0.3, 0.9, 0.99, 0.0, 1.0], device=DEV)
    bits = torch.int16 if dtype != torch.float32 else torch.int32
    got = {}
    for c in (1, 2, 4, 8, 16):
        monkeypatch.setattr(K, "selection_cluster", lambda rows, V_, arch_, sms, c=c: c)
        values, indices = _sync(TopKFwdOp(1000)(x))
        got[c] = (values.view(bits), indices, _sync(TopKTopPMaskFwdOp()(x, k, p)).view(bits),
                  _sync(TopKTopPMaskFwdOp()(x, None, p)).view(bits))
        y = x.clone()                            # in place: the words kept in registers are read before
        TopKTopPMaskFwdOp()(y, k, p, inplace=True)   # any write (clusters of 4 and 8 keep them)
        assert torch.equal(_sync(y).view(bits), got[c][2]), c
    for c in (2, 4, 8, 16):
        for a, b in zip(got[c], got[1]):
            assert torch.equal(a, b), c
    assert torch.equal(got[1][1].cpu(), ref.top_k(x.cpu(), k=1000)[1])
    sc.check_mask(got[1][2].view(dtype).cpu(), x.cpu(), k.cpu(), p.cpu())
    sc.check_mask(got[1][3].view(dtype).cpu(), x.cpu(), None, p.cpu())


def _distinct_above(dtype, n, device):
    """n distinct values of `dtype`, each above 2.0 (consecutive bit patterns from 2.0's)."""
    bits, two = (torch.int32, 0x40000000) if dtype == torch.float32 else (torch.int16, 0x4000)
    return (torch.arange(n, device=device, dtype=torch.int32) + two).to(bits).view(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_top_k_collects_rows_of_every_shape_of_top(dtype, monkeypatch):
    """How top-k gathers the selected (top_k.cu step 2): every key >= the k-th at slots
    taken from a counter when they fit the sort, else in index order. Rows that make each
    path and its edge: the k largest packed side by side, all in one thread's octets of
    each CTA, one per octet, -inf but for a few, two values only, and ties at the k-th
    that just fit the sort (990 above + 34 equal = 1024) and just do not (35); every
    cluster gives the reference's result, and the mask's."""
    from tileops.kernels.sampling import cuda_sampling as K
    V, k = 128256, 1000
    x = sc.logits_like(8, V, dtype, DEV, seed=9)
    x[0, 5000:5000 + k] = 100.0 + torch.arange(k, device=DEV, dtype=dtype) / 64
    for c in (1, 8):                            # thread 0's octets of each CTA, for clusters of c
        chunk = K.selection_plan(V, c).chunk
        at = torch.tensor([r * chunk + 8 * j * K.SEL_THREADS + e for r in range(c) for j in range(4) for e in range(8)
                           if r * chunk + 8 * j * K.SEL_THREADS + e < V], device=DEV)
        x[1 + (c == 8), at] = 200.0
    x[3, ::8] = x[3, ::8].abs() + 50.0          # one large key an octet
    x[4] = -INF
    x[4, 7:V:4099] = 1.0
    x[5] = torch.where(torch.arange(V, device=DEV) % 3 == 0, 2.0, 1.0).to(dtype)
    for r, ties in ((6, 34), (7, 35)):
        x[r] = x[r].clamp(-1.0, 1.0)
        x[r, 0:3960:4] = _distinct_above(dtype, 990, DEV)
        x[r, 2:V:4 * (V // (4 * ties))][:ties] = 1.5   # the k-th value, over every CTA: 10 of its ties taken
    kk = torch.tensor([k, 60, 300, 2000, 20, k, k, k], dtype=torch.int32, device=DEV)
    p = torch.tensor([0.9, 0.5, 1.0, 0.99, 0.7, 0.2, 0.9, 0.95], device=DEV)
    bits = torch.int16 if dtype != torch.float32 else torch.int32
    want_v, _ = torch.topk(x.cpu(), k)
    want_i = ref.top_k(x.cpu(), k=k)[1]
    for c in (1, 2, 8):
        monkeypatch.setattr(K, "selection_cluster", lambda rows, V_, arch_, sms, c=c: c)
        values, indices = _sync(TopKFwdOp(k)(x))
        assert torch.equal(indices.cpu(), want_i), c
        assert torch.equal(values.cpu().view(bits), want_v.view(bits)), c
        for r, kr in enumerate(kk.tolist()[:5]):
            small = _sync(TopKFwdOp(kr)(x[r:r + 1]))[1].cpu()
            assert torch.equal(small, ref.top_k(x[r:r + 1].cpu(), k=kr)[1]), (c, r, kr)
        sc.check_mask(_sync(TopKTopPMaskFwdOp()(x, kk, p)).cpu(), x.cpu(), kk.cpu(), p.cpu())


# ---- batch invariance ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("V", [128256, 152064, 300])
def test_every_op_gives_a_row_the_same_bits_whatever_the_batch(dtype, V):
    x = sc.logits_like(3, V, dtype, DEV, seed=21)
    x[1, 5] = NAN

    def make(n):
        g = torch.Generator().manual_seed(n)
        return (torch.randn(n, V, generator=g) * 4).to(DEV, dtype), g

    def other_logits(n):
        return {"logits": make(n)[0]}

    def other_temp(n):
        o, g = make(n)
        return {"logits": o, "temperature": (torch.rand(n, generator=g) + 0.5).to(DEV)}

    sc.batch_invariant(lambda logits: SoftmaxFwdOp(torch.float32)(logits), {"logits": x}, other_logits)
    sc.batch_invariant(lambda logits, temperature: SoftmaxFwdOp()(logits, temperature),
                       {"logits": x, "temperature": temperatures(3).to(DEV)}, other_temp)
    sc.batch_invariant(lambda logits: ArgmaxFwdOp()(logits), {"logits": x}, other_logits)
    sc.batch_invariant(lambda logits: TopKFwdOp(20)(logits), {"logits": x}, other_logits)
    k, p = _kp(3, V)

    def other_kp(n):
        o, g = make(n)
        return {"logits": o, "k": torch.randint(0, V + 1, (n,), generator=g, dtype=torch.int32).to(DEV),
                "p": torch.rand(n, generator=g).to(DEV)}
    sc.batch_invariant(lambda logits, k, p: TopKTopPMaskFwdOp()(logits, k, p),
                       {"logits": x, "k": k.to(DEV), "p": p.to(DEV)}, other_kp)
    probs = torch.softmax(x.float(), -1).to(dtype)
    q = torch.empty(3, V).exponential_(generator=torch.Generator().manual_seed(2)).to(DEV)

    def other_q(n):
        o, g = make(n)
        return {"probs": torch.softmax(o.float(), -1).to(dtype), "q": torch.empty(n, V).exponential_(generator=g)
                .to(DEV)}
    sc.batch_invariant(lambda probs, q: SampleFromProbsFwdOp()(probs, q), {"probs": probs, "q": q}, other_q)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_manifest_batches_give_each_row_its_bits(dtype):
    """B = 1, 32, 128, 256 at the Llama-3 vocabulary: row r of every batch equals row r of
    the largest, for every op (the launch rule never depends on B)."""
    V = 128256
    x = sc.logits_like(256, V, dtype, DEV, seed=4)
    t = temperatures(256).to(DEV)
    k, p = (v.to(DEV) for v in _kp(256, V))
    probs = SoftmaxFwdOp(torch.float32)(x, t)
    q = torch.empty(256, V, device=DEV).exponential_()
    ops = [lambda n: SoftmaxFwdOp(torch.float32)(x[:n], t[:n]), lambda n: SoftmaxFwdOp()(x[:n]),
           lambda n: ArgmaxFwdOp()(x[:n]), lambda n: TopKFwdOp(50)(x[:n]),
           lambda n: TopKTopPMaskFwdOp()(x[:n], k[:n], p[:n]), lambda n: SampleFromProbsFwdOp()(probs[:n], q[:n])]
    for fn in ops:
        full = fn(256)
        full = full if isinstance(full, tuple) else (full,)
        for n in (1, 32, 128):
            part = fn(n)
            part = part if isinstance(part, tuple) else (part,)
            for a, b in zip(part, full):
                assert torch.equal(a, b[:n])


# ---- CUDA graphs -------------------------------------------------------------------------

def test_every_op_captures_in_a_cuda_graph_and_replays_with_new_inputs():
    V, B = 128256, 4
    x = sc.logits_like(B, V, torch.bfloat16, DEV, seed=1)
    t = temperatures(B).to(DEV)
    k, p = (v.to(DEV) for v in _kp(B, V))
    q = torch.empty(B, V, device=DEV).exponential_()
    softmax, argmax, topk, mask, sample = (SoftmaxFwdOp(torch.float32), ArgmaxFwdOp(), TopKFwdOp(50),
                                           TopKTopPMaskFwdOp(), SampleFromProbsFwdOp())

    def step():
        masked = mask(x, k, p)
        probs = softmax(masked, t)
        return argmax(x), topk(x), masked, probs, sample(probs, q)
    step()                              # warm up: every build outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = step()
    x.copy_(sc.logits_like(B, V, torch.bfloat16, DEV, seed=2))
    q.exponential_()
    graph.replay()
    torch.cuda.synchronize()
    want = step()
    torch.cuda.synchronize()
    flat = lambda o: [u for v in o for u in (v if isinstance(v, tuple) else (v,))]   # noqa: E731
    for a, b in zip(flat(outs), flat(want)):
        assert torch.equal(a, b)
    assert torch.equal(outs[0], torch.argmax(x, -1))
