"""The positional tables, the ops without a call-time tensor input (RopeCosSinCacheFwdOp,
AlibiFwdOp, SinusoidalFwdOp), beyond the generic driver: their numerics against float64
math written here independently and against the conventions users compare with (Hugging
Face's and vLLM's rope init, Llama-3.1's config, BLOOM's ALiBi, the Transformer tutorial's
sinusoids), the device a call names, the param checks, and the compile contract of an op
without a boundary: torch.compile(fullgraph=True) with the eager, aot_eager and inductor
backends, no graph break and no tileops node, bit for bit what eager returns, a new tensor
on every call, a new trace (not a stale constant) after a param is assigned."""
import copy
import math

import pytest
import torch

import tileops
from tileops.errors import InputTypeError, InputValueError
from tileops.positional import AlibiFwdOp, RopeCosSinCacheFwdOp, RopeFwdOp, SinusoidalFwdOp
from tileops.reference import positional as ref

from compile_contract import graph_targets
from helpers import assert_one_rounding, hf_llama3_inv_freq

# Llama-3.1-8B's config.json: "rope_theta": 500000.0, "max_position_embeddings": 131072
LLAMA31_ROPE_SCALING = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 8192, "rope_type": "llama3"}


# ---- RopeCosSinCacheFwdOp -------------------------------------------------------------------

def rope_math(base, R, P, inv=None):
    """The cache in float64, computed here: cos then sin of p / base^(2i / R)."""
    if inv is None:
        inv = torch.tensor([1.0 / base ** (2 * i / R) for i in range(R // 2)], dtype=torch.float64)
    x = torch.arange(P, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat((x.cos(), x.sin()), dim=1)


@pytest.mark.parametrize("base,R,P", [(10000.0, 128, 4096), (500000.0, 64, 32768), (1e6, 2, 131072)])
def test_rope_cache_is_float64_math_rounded_once(base, R, P):
    got = RopeCosSinCacheFwdOp(base, R, P)()
    worst = assert_one_rounding(got, rope_math(base, R, P), 1e-10, "rope cache")
    assert worst <= 2 ** -24
    # and the correctly rounded value almost everywhere
    assert (got != rope_math(base, R, P).float()).double().mean().item() < 1e-3


def test_rope_cache_takes_a_llama31_config_and_matches_hugging_face_llama3_init():
    """**config.rope_scaling as it is; Hugging Face's `_compute_llama3_parameters` formula
    written here in float64: the cache is that, rounded once."""
    op = RopeCosSinCacheFwdOp(base=500000.0, rotary_dim=128, max_position=8192, **LLAMA31_ROPE_SCALING)
    base, D, s = 500000.0, 128, LLAMA31_ROPE_SCALING
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    llama, medium = hf_llama3_inv_freq(inv, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                                       s["original_max_position_embeddings"])
    assert medium.any() and (llama != inv).any() and (llama == inv).any()   # all three bands present
    assert_one_rounding(op(), rope_math(base, D, 8192, llama), 1e-10, "llama3 cache")
    # Hugging Face computes in float32: at position 8191 its angles are off by up to ~1e-3
    inv32 = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    assert (inv32.double() - inv).abs().div(inv).max() < 1e-6


def test_rope_cache_linear_scaling_is_vllm_s_positions_over_factor():
    """vLLM's LinearScalingRotaryEmbedding divides the positions by the factor; the op
    divides the inverse frequencies (Hugging Face's form): the same angles up to a rounding
    in double, so within one float32 rounding of vLLM's math done in float64."""
    base, R, P, factor = 10000.0, 64, 16384, 4.0
    got = RopeCosSinCacheFwdOp(base, R, P, rope_type="linear", factor=factor)()
    inv = torch.tensor([1.0 / base ** (2 * i / R) for i in range(R // 2)], dtype=torch.float64)
    x = (torch.arange(P, dtype=torch.float64) / factor)[:, None] * inv[None, :]
    assert_one_rounding(got, torch.cat((x.cos(), x.sin()), dim=1), 1e-11, "linear cache")


def test_rope_cache_llama3_with_an_empty_band_as_vllm_takes_it():
    """low == high: vLLM takes smooth = 0 (Hugging Face would divide by 0)."""
    got = RopeCosSinCacheFwdOp(10000.0, 64, 300, rope_type="llama3", factor=4.0, low_freq_factor=2.0,
                               high_freq_factor=2.0, original_max_position_embeddings=64)()
    want = ref.rope_cos_sin_cache(base=10000.0, rotary_dim=64, max_position=300, rope_type="llama3", factor=4.0,
                                  low_freq_factor=2.0, high_freq_factor=2.0, original_max_position_embeddings=64,
                                  dtype=torch.float64)
    assert torch.isfinite(got).all()
    assert_one_rounding(got, want, 1e-12, "llama3, empty band")


def test_rope_fwd_op_consumes_the_cache():
    T, H, D = 9, 4, 64
    cache = RopeCosSinCacheFwdOp(10000.0, D, 1000)()
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(T, H, D, generator=g), torch.randn(T, 2, D, generator=g)
    pos = torch.randint(0, 1000, (T,), generator=g)
    got = RopeFwdOp(D, D)(q, k, pos, cache)
    want = ref.rope(q.double(), k.double(), pos, rope_math(10000.0, D, 1000), head_size=D, rotary_dim=D,
                    is_neox=True)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.double(), b, rtol=1e-6, atol=1e-6)


# ---- AlibiFwdOp -------------------------------------------------------------------------------

def paper_slopes(n):
    """Press et al.'s get_slopes, written here: a geometric sequence from 2^(-8/n); for n
    not a power of two, the largest power of two's, then every other one of twice that."""
    def power_of_2(m):
        start = 2 ** (-2 ** -(math.log2(m) - 3))
        return [start * start ** i for i in range(m)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    c = 2 ** math.floor(math.log2(n))
    return power_of_2(c) + paper_slopes(2 * c)[0::2][:n - c]


@pytest.mark.parametrize("heads", [1, 3, 8, 12, 16, 32, 40, 112])
def test_alibi_is_slope_times_key_minus_query_position(heads):
    S = 37
    got = AlibiFwdOp(heads, S)()
    slopes = torch.tensor(paper_slopes(heads), dtype=torch.float64)
    pos = torch.arange(S, dtype=torch.float64)
    want = slopes[:, None, None] * (pos[None, None, :] - pos[None, :, None])
    assert_one_rounding(got, want, 1e-15 * S, f"alibi {heads} heads")
    assert (got[:, torch.arange(S), torch.arange(S)] == 0).all()          # the diagonal
    assert (got[:, 5, :5] < 0).all() and (got[:, 5, 6:] > 0).all()         # past keys negative
    if heads in (1, 8):   # slopes powers of two: every value exact
        assert torch.equal(got.double(), want)


def test_alibi_matches_bloom_up_to_a_constant_per_row():
    """BLOOM's build_alibi_tensor (written here as it computes it, in float32: a float32
    base raised to integer powers) gives slope_h * j over the keys; this op's row i is
    that minus slope_h * i, which softmax ignores: the attention weights agree."""
    heads, S = 12, 40
    c = 2 ** math.floor(math.log2(heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(c) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + c, dtype=torch.int32))
    extra = torch.tensor(2 ** (-(2 ** -(math.log2(2 * c) - 3))), dtype=torch.float32)
    slopes = torch.cat([slopes, torch.pow(extra, torch.arange(1, 1 + 2 * (heads - c), 2, dtype=torch.int32))])
    bloom = slopes[:, None] * torch.arange(S, dtype=torch.float32)[None, :]          # [heads, S]
    got = AlibiFwdOp(heads, S)()
    torch.testing.assert_close(got, bloom[:, None, :] - bloom[:, :, None], rtol=4e-6, atol=1e-5)
    scores = torch.randn(heads, S, S, generator=torch.Generator().manual_seed(3))
    causal = torch.full((S, S), -math.inf).triu(1)
    a = torch.softmax(scores + got + causal, dim=-1)
    b = torch.softmax(scores + bloom[:, None, :] + causal, dim=-1)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# ---- SinusoidalFwdOp ----------------------------------------------------------------------------

@pytest.mark.parametrize("S,D", [(100, 512), (33, 7), (1, 1), (4096, 64)])
def test_sinusoidal_is_the_papers_interleaved_table(S, D):
    got = SinusoidalFwdOp(S, D)()
    want = torch.empty(S, D, dtype=torch.float64)
    for c in range(D):
        x = torch.arange(S, dtype=torch.float64) / 10000.0 ** (2 * (c // 2) / D)
        want[:, c] = x.sin() if c % 2 == 0 else x.cos()
    assert_one_rounding(got, want, 1e-11, "sinusoidal")


def test_sinusoidal_matches_the_pytorch_tutorial_positional_encoding():
    """The tutorial's PositionalEncoding computes in float32 (exp of a float32 log): it
    agrees to its own float32 error, which grows with the position."""
    S, D = 200, 512
    position = torch.arange(S).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
    pe = torch.zeros(S, D)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    torch.testing.assert_close(SinusoidalFwdOp(S, D)(), pe, rtol=0, atol=1e-4)


# ---- calls: device, fresh tensors, params ----------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: RopeCosSinCacheFwdOp(10000.0, 8, 5), lambda: AlibiFwdOp(3, 4),
                                  lambda: SinusoidalFwdOp(5, 6)])
def test_the_device_argument(make):
    op = make()
    a = op()
    assert a.device.type == "cpu" and a.is_contiguous() and a.dtype == torch.float32
    for dev in ("cpu", torch.device("cpu")):
        assert torch.equal(op(device=dev), a)
    name = type(op).__name__
    with pytest.raises(InputValueError, match=rf"{name}: argument 'device': expected a device, got 'gpu9'"):
        op(device="gpu9")
    with pytest.raises(InputTypeError, match=rf"{name}: argument 'device': expected a torch.device"):
        op(device=1.5)
    with pytest.raises(TypeError):
        op(torch.zeros(1))   # no tensor input: keyword-only
    if not torch.cuda.is_available():   # torch's own is a bare AssertionError (found by review)
        for dev in ("cuda", torch.device("cuda", 1)):
            with pytest.raises(InputValueError, match=rf"{name}: argument 'device': cuda(:[01])? asked for, but "
                                                      rf"CUDA is not available"):
                op(device=dev)


def test_every_call_returns_a_new_tensor():
    op = SinusoidalFwdOp(6, 4)
    a = op()
    want = a.clone()
    a.fill_(7.0)
    b = op()
    assert torch.equal(b, want) and b.data_ptr() != a.data_ptr()


def test_params_are_checked_at_construction_and_on_the_call_after_an_assignment():
    with pytest.raises(InputValueError, match=r"RopeCosSinCacheFwdOp: param rule `rotary_dim % 2 == 0 and "
                                              r"rotary_dim >= 2` does not hold: rotary_dim=3"):
        RopeCosSinCacheFwdOp(10000.0, 3, 8)
    with pytest.raises(InputValueError, match=r"param rule `base >= 1` does not hold: base=0.5"):
        SinusoidalFwdOp(4, 4, base=0.5)
    with pytest.raises(InputValueError, match="low_freq_factor <= high_freq_factor"):
        RopeCosSinCacheFwdOp(10000.0, 8, 8, rope_type="llama3", factor=8.0, low_freq_factor=4.0,
                             high_freq_factor=1.0)
    with pytest.raises(InputValueError, match=r"max_position <= 2 \*\* 50"):
        RopeCosSinCacheFwdOp(10000.0, 8, 2 ** 20, rope_type="linear", factor=2.0 ** -40)
    with pytest.raises(InputValueError, match="param 'factor': expected a finite float"):
        RopeCosSinCacheFwdOp(10000.0, 8, 8, factor=math.nan)
    op = RopeCosSinCacheFwdOp(10000.0, 8, 8)
    op.rotary_dim = 5
    with pytest.raises(InputValueError, match="rotary_dim=5"):
        op()
    op.rotary_dim = 6
    assert op().shape == (8, 6)


def test_aten_target_gives_the_reference_and_a_copy_is_a_new_instance():
    op = AlibiFwdOp(5, 9, target="aten")
    torch.testing.assert_close(op(), ref.alibi(num_heads=5, seq_len=9), rtol=0, atol=0)
    assert op.target.name == "aten"
    c = copy.deepcopy(RopeCosSinCacheFwdOp(10000.0, 8, 8))
    assert torch.equal(c(), RopeCosSinCacheFwdOp(10000.0, 8, 8)())


def test_the_launchable_checks_its_output():
    op = SinusoidalFwdOp(4, 6)
    launch = op.kernel_for("sinusoidal", torch.empty(4, 6))
    with pytest.raises(InputValueError, match=r"sinusoidal .*argument 'out': expected a contiguous float32 tensor "
                                              r"\(4, 6\)"):
        launch(torch.empty(4, 5))
    with pytest.raises(InputValueError, match="argument 'out'"):
        launch(torch.empty(6, 4).t())
    with pytest.raises(InputTypeError, match="argument 'out'"):
        launch(None)
    out = torch.empty(4, 6)
    launch(out)
    assert torch.equal(out, op())


def test_the_ops_are_listed_and_exported():
    for cls in (RopeCosSinCacheFwdOp, AlibiFwdOp, SinusoidalFwdOp):
        assert cls.compile_op_names == () and cls.__name__ in tileops.positional.__all__
        assert cls._entry.status == "implemented" and not cls._entry.has_boundary


# ---- torch.compile: no boundary, no node, no break, no stale constant ---------------------------

OPS = [pytest.param(lambda: RopeCosSinCacheFwdOp(500000.0, 64, 300, **LLAMA31_ROPE_SCALING), id="rope_cache"),
       pytest.param(lambda: AlibiFwdOp(12, 33), id="alibi"),
       pytest.param(lambda: SinusoidalFwdOp(33, 7), id="sinusoidal")]


class Counting:
    """A backend that keeps each captured graph and runs it through `inner`."""

    def __init__(self, inner):
        self.inner, self.graphs = inner, []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        if self.inner == "inductor":
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        if self.inner == "aot_eager":
            from torch._dynamo.backends.debugging import aot_eager
            return aot_eager(gm, example_inputs)
        return gm.forward


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("make", OPS)
def test_compiled_fullgraph_equals_eager_bit_for_bit(make, backend):
    torch._dynamo.reset()
    op = make()
    x = torch.randn(3)
    eager = op()
    counting = Counting(backend)

    @torch.compile(fullgraph=True, backend=counting)
    def f(x):
        return op(device=x.device), x * 2

    got, _ = f(x)
    again, _ = f(x)
    assert torch.equal(got, eager) and got.dtype == eager.dtype and got.is_contiguous()
    assert len(counting.graphs) == 1
    assert not [t for g in counting.graphs for t in graph_targets(g) if t.startswith("tileops::")]
    # a new tensor on every call: writing into one leaves the next call's intact
    assert got.data_ptr() != again.data_ptr()
    got.fill_(float("nan"))
    assert torch.equal(f(x)[0], eager)
    assert len(counting.graphs) == 1   # no recompile for that


@pytest.mark.parametrize("make", OPS)
def test_no_graph_break(make):
    torch._dynamo.reset()
    op = make()
    x = torch.randn(4)
    explained = torch._dynamo.explain(lambda x: (op(device=x.device) * 2).sum() + x)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained


def test_assigning_a_param_traces_again_with_the_new_values():
    torch._dynamo.reset()
    op = RopeCosSinCacheFwdOp(10000.0, 8, 16)
    counting = Counting("eager")
    f = torch.compile(lambda: op(), fullgraph=True, backend=counting)
    first = f()
    assert torch.equal(first, op())
    op.base = 500000.0                      # same shape, other values: no stale constant
    assert torch.equal(f(), RopeCosSinCacheFwdOp(500000.0, 8, 16)()) and len(counting.graphs) == 2
    op.rope_type, op.factor = "linear", 4.0
    assert torch.equal(f(), RopeCosSinCacheFwdOp(500000.0, 8, 16, rope_type="linear", factor=4.0)())
    op.max_position = 20
    assert f().shape == (20, 8)
    traces = len(counting.graphs)
    op.rope_type, op.factor, op.base, op.max_position = "default", 1.0, 10000.0, 16
    assert torch.equal(f(), first)
    # back to earlier values, or a param assigned its own value: the earlier trace serves
    op.base = op.base
    for _ in range(10):
        op.base = 500000.0
        f()
        op.base = 10000.0
        assert torch.equal(f(), first)
    assert len(counting.graphs) == traces


def test_two_instances_one_of_them_called_twice_in_one_graph():
    """Each call's constant has a source of its own instance (AOT autograd refuses two of
    one name); a repeated call within a trace shares its instance's constant."""
    torch._dynamo.reset()
    a, b = SinusoidalFwdOp(5, 4), SinusoidalFwdOp(5, 4, base=100.0)
    counting = Counting("inductor")
    f = torch.compile(lambda x: (x + a(device=x.device) + b(device=x.device), a(device=x.device)), fullgraph=True,
                      backend=counting)
    x = torch.randn(5, 4)
    y, again = f(x)
    torch.testing.assert_close(y, x + a() + b(), rtol=0, atol=0)
    assert torch.equal(again, a()) and len(counting.graphs) == 1


def test_a_bad_param_assigned_before_a_compiled_call_is_refused_when_traced():
    """Under torch.compile the param rules run when the call is traced; dynamo reports the
    op's error in its own exception class, with the op's message."""
    torch._dynamo.reset()
    op = SinusoidalFwdOp(4, 4)
    op.base = 0.5
    f = torch.compile(lambda: op(), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match=r"SinusoidalFwdOp: param rule `base >= 1` does not hold: base=0.5"):
        f()
