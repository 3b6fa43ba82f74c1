"""tileops.nn modules: state_dict keys as torch's and Hugging Face's modules have them,
`.to()` moves, interned op instances (one per distinct params; frozen; copies and pickles
take the same one), and regional compilation: 32 equal layers each `.compile()`d compile
once, and so does `torch.compile` of the whole model."""
import copy
import io

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
import torch.nn.functional as F

import tileops.nn as tnn
from tileops.errors import InputValueError
from tileops.reference.positional import rope, rope_cos_sin_cache


def test_state_dict_keys_match_torch_modules():
    assert list(tnn.RMSNorm(8).state_dict()) == list(torch.nn.RMSNorm(8).state_dict()) == ["weight"]
    assert list(tnn.RMSNorm(8, elementwise_affine=False).state_dict()) == []
    assert list(tnn.LayerNorm(8).state_dict()) == list(torch.nn.LayerNorm(8).state_dict()) == ["weight", "bias"]
    assert list(tnn.LayerNorm(8, bias=False).state_dict()) == list(torch.nn.LayerNorm(8, bias=False).state_dict())
    assert list(tnn.Embedding(5, 8).state_dict()) == list(torch.nn.Embedding(5, 8).state_dict()) == ["weight"]
    assert list(tnn.FusedAddRMSNorm(8).state_dict()) == ["weight"]
    assert list(tnn.GemmaRMSNorm(8).state_dict()) == ["weight"]
    assert list(tnn.RotaryEmbedding(8, max_position=4).state_dict()) == []     # the cache is not persistent
    assert list(tnn.SiluAndMul().state_dict()) == []


def test_a_torch_state_dict_loads_and_the_outputs_agree():
    torch.manual_seed(0)
    ref = torch.nn.LayerNorm(64)
    torch.nn.init.normal_(ref.weight)
    torch.nn.init.normal_(ref.bias)
    mine = tnn.LayerNorm(64)
    mine.load_state_dict(ref.state_dict())
    x = torch.randn(5, 64)
    torch.testing.assert_close(mine(x), ref(x), rtol=1e-5, atol=1e-5)
    ref = torch.nn.RMSNorm(64, eps=1e-6)
    torch.nn.init.normal_(ref.weight)
    mine = tnn.RMSNorm(64, eps=1e-6)
    mine.load_state_dict(ref.state_dict())
    torch.testing.assert_close(mine(x), ref(x), rtol=1e-5, atol=1e-5)
    emb = torch.nn.Embedding(30, 16)
    mine = tnn.Embedding(30, 16)
    mine.load_state_dict(emb.state_dict())
    ids = torch.tensor([[1, 29], [0, 7]])
    assert torch.equal(mine(ids), emb(ids))


def test_modules_follow_dtype_moves_and_the_rope_cache_stays_float32():
    m = tnn.RMSNorm(16).to(torch.bfloat16)
    x = torch.randn(3, 16, dtype=torch.bfloat16)
    assert m.weight.dtype == torch.bfloat16 and m(x).dtype == torch.bfloat16
    r = tnn.RotaryEmbedding(16, max_position=8)
    cache = r.cos_sin_cache.clone()
    r.to(torch.float16)
    assert r.cos_sin_cache.dtype == torch.float32 and torch.equal(r.cos_sin_cache, cache)
    q, k = torch.randn(4, 2, 16, dtype=torch.float16), torch.randn(4, 1, 16, dtype=torch.float16)
    pos = torch.tensor([0, 3, 7, 1])
    want = rope(q, k, pos, cache, head_size=16, rotary_dim=16, is_neox=True)
    got = r(pos, q, k)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-3, atol=2 ** -11)


def test_rope_module_takes_flat_heads_and_writes_in_place():
    r = tnn.RotaryEmbedding(8, rotary_dim=4, max_position=16, base=500.0, is_neox=False)
    torch.testing.assert_close(r.cos_sin_cache, rope_cos_sin_cache(base=500.0, rotary_dim=4, max_position=16),
                               rtol=0, atol=0)
    q, k = torch.randn(3, 2 * 8), torch.randn(3, 8)
    pos = torch.tensor([5, 0, 15])
    want = rope(q.view(3, 2, 8), k.view(3, 1, 8), pos, r.cos_sin_cache, head_size=8, rotary_dim=4, is_neox=False)
    qo, ko = r(pos, q, k)
    assert qo.shape == q.shape and ko.shape == k.shape
    torch.testing.assert_close(qo.view(3, 2, 8), want[0], rtol=1e-5, atol=1e-5)
    q2, k2 = q.clone(), k.clone()
    a, b = r(pos, q2, k2, inplace=True)
    assert a is q2 and b is k2 and torch.equal(q2, qo) and torch.equal(k2, ko)


def test_rope_scaling_types():
    r = tnn.RotaryEmbedding(8, max_position=16, rope_scaling={"rope_type": "linear", "factor": 2.0})
    # RopeCosSinCacheFwdOp's values: the float64 reference's within one float32 rounding
    torch.testing.assert_close(r.cos_sin_cache, rope_cos_sin_cache(base=10000.0, rotary_dim=8, max_position=16,
                                                                    rope_type="linear", factor=2.0), rtol=2e-7, atol=1e-7)
    with pytest.raises(InputValueError, match="rope_scaling type 'yarn'"):
        tnn.RotaryEmbedding(8, max_position=16, rope_scaling={"rope_type": "yarn", "factor": 2.0})


def test_rope_attributes_assigned_later_compute_the_cache_again_or_are_refused():
    """Found by review: base and rope_scaling assigned after construction were shown by the
    repr and ignored by the cache. Every attribute the cache is computed from now computes
    it again (on its device); a refused value leaves the module as it was; a module over a
    given cache refuses; bad dims and incomplete llama3 scalings fail at construction."""
    q, k, pos = torch.randn(3, 2, 16), torch.randn(3, 2, 16), torch.tensor([1, 5, 9])
    r = tnn.RotaryEmbedding(16, max_position=32)
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8}
    for name, value, kw in (("base", 500.0, dict(base=500.0)),
                            ("rope_scaling", llama3, dict(base=500.0, rope_scaling=llama3)),
                            ("max_position", 48, dict(base=500.0, rope_scaling=llama3, max_position=48)),
                            ("rotary_dim", 8, dict(base=500.0, rope_scaling=llama3, max_position=48, rotary_dim=8))):
        setattr(r, name, value)
        fresh = tnn.RotaryEmbedding(16, **dict(dict(max_position=32), **kw))
        assert torch.equal(r.cos_sin_cache, fresh.cos_sin_cache), name
        assert all(torch.equal(a, b) for a, b in zip(r(pos, q, k), fresh(pos, q, k))), name
    for name, value, match in (("rotary_dim", 18, "even rotary_dim in \\[2, head_size\\]"),
                               ("rotary_dim", 7, "even rotary_dim"),
                               ("rope_scaling", {"rope_type": "llama3", "factor": 8.0}, "missing \\['low_freq_factor'"),
                               ("head_size", 4, "got head_size 4, rotary_dim 8")):
        with pytest.raises(InputValueError, match=rf"RotaryEmbedding: .*{match}"):
            setattr(r, name, value)
    assert r.rotary_dim == 8 and r.rope_scaling == llama3 and r.cos_sin_cache.shape == (48, 8)
    with pytest.raises(InputValueError, match="RotaryEmbedding: expected an even rotary_dim"):
        tnn.RotaryEmbedding(16, rotary_dim=32)
    with pytest.raises(InputValueError, match="rope_scaling of type 'llama3': expected the keys"):
        tnn.RotaryEmbedding(16, rope_scaling={"rope_type": "llama3", "factor": 8.0})
    given = tnn.RotaryEmbedding.from_cos_sin_cache(r.cos_sin_cache, 16)
    with pytest.raises(InputValueError, match="RotaryEmbedding: base: this module rotates by a cos/sin cache it was "
                                              "given"):
        given.base = 3.0
    assert copy.deepcopy(r).base == 500.0


def test_gelu_and_mul_follows_approximate_assigned_later():
    """Found by review: approximate assigned after construction kept the erf op."""
    x = torch.randn(4, 2 * 24)
    m = tnn.GeluAndMul()
    compiled = torch.compile(m, fullgraph=True)
    m.approximate = "tanh"
    want = F.gelu(x[:, :24], approximate="tanh") * x[:, 24:]
    torch.testing.assert_close(m(x), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(compiled(x), want, rtol=1e-5, atol=1e-5)
    assert type(m.op).__name__ == "GeluTanhAndMulFwdOp" and type(copy.deepcopy(m).op) is type(m.op)
    with pytest.raises(InputValueError, match="approximate"):
        m.approximate = "fast"
    assert m.approximate == "tanh"


def test_gated_modules_and_fused_add():
    torch.manual_seed(1)
    x = torch.randn(4, 2 * 24)
    torch.testing.assert_close(tnn.SiluAndMul()(x), F.silu(x[:, :24]) * x[:, 24:], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(tnn.GeluAndMul("tanh")(x), F.gelu(x[:, :24], approximate="tanh") * x[:, 24:],
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(InputValueError, match="approximate"):
        tnn.GeluAndMul("fast")
    m = tnn.FusedAddRMSNorm(24, eps=1e-6)
    a, r = torch.randn(3, 24), torch.randn(3, 24)
    y, h = m(a, r)
    torch.testing.assert_close(h, a + r, rtol=0, atol=0)
    torch.testing.assert_close(y, F.rms_norm(a + r, (24,), m.weight, 1e-6), rtol=1e-5, atol=1e-5)


def test_equal_params_share_one_frozen_instance():
    a, b = tnn.RMSNorm(32, eps=1e-6), tnn.RMSNorm(32, eps=1e-6)
    c = tnn.RMSNorm((32,), eps=1e-6)                       # the same params, spelt otherwise
    assert a.op is b.op is c.op
    assert tnn.RMSNorm(32, eps=1e-5).op is not a.op
    assert tnn.RMSNorm(32, eps=1e-6, cast_before_weight=True).op is not a.op
    with pytest.raises(InputValueError, match="interned instance cannot be assigned"):
        a.op.eps = 1e-3
    assert a.op.eps == 1e-6
    b.eps = 1e-3                                          # a module takes another instance
    assert b.op is not a.op and b.op.eps == 1e-3 and a.op.eps == 1e-6
    assert b.op is tnn.instance(type(a.op), normalized_shape=(32,), eps=1e-3)
    assert copy.deepcopy(a).op is a.op
    buf = io.BytesIO()
    torch.save(a, buf)
    buf.seek(0)
    assert torch.load(buf, weights_only=False).op is a.op


class Block(torch.nn.Module):
    """A pre-norm MLP block: norm, gate/up matmul, SiLU-and-mul, down matmul, then the
    residual add fused with the next block's norm."""

    def __init__(self, h=32, i=64):
        super().__init__()
        self.norm = tnn.RMSNorm(h, eps=1e-6)
        self.gate_up = torch.nn.Linear(h, 2 * i, bias=False)
        self.act = tnn.SiluAndMul()
        self.down = torch.nn.Linear(i, h, bias=False)
        self.add_norm = tnn.FusedAddRMSNorm(h, eps=1e-6)

    def forward(self, x):
        y = self.down(self.act(self.gate_up(self.norm(x))))
        y, h = self.add_norm(y, x)
        return y + h


def _model(n=32):
    torch.manual_seed(0)
    return torch.nn.Sequential(*[Block() for _ in range(n)])


class GraphCounter(torch._dynamo.testing.CompileCounter):
    """Counts compiles and keeps each graph's tileops nodes (their operator names)."""

    def __init__(self):
        super().__init__()
        self.tileops_nodes = []

    def __call__(self, gm, example_inputs):
        self.tileops_nodes.append([str(n.target) for n in gm.graph.nodes
                                   if n.op == "call_function" and str(n.target).startswith("tileops.")])
        return super().__call__(gm, example_inputs)


def _eager(model, x):
    with torch.no_grad():
        return model(x)


def compile_regions(model, x):
    """Compiles each layer of `model` (layer.compile, a counting backend), runs it twice
    and checks the result equals eager; returns the counter."""
    torch._dynamo.reset()
    want = _eager(model, x)
    cnt = GraphCounter()
    for layer in model:
        layer.compile(backend=cnt, fullgraph=True)
    torch._dynamo.utils.counters.clear()
    with torch.no_grad():
        assert torch.equal(model(x), want) and torch.equal(model(x), want)
    assert not torch._dynamo.utils.counters["recompiles"] and not torch._dynamo.utils.counters["recompile_limit"]
    return cnt


def test_32_layers_compiled_region_by_region_compile_once():
    cnt = compile_regions(_model(), torch.randn(3, 32))
    assert cnt.frame_count == 1, f"{cnt.frame_count} compiles for 32 equal layers"
    # the one graph: each tileops call one node
    assert cnt.tileops_nodes == [["tileops.norm_rms_norm_fwd.default", "tileops.activation_silu_and_mul_fwd.default",
                                  "tileops.norm_fused_add_rms_norm_fwd.default"]], cnt.tileops_nodes


def test_the_whole_model_compiles_once_with_one_node_per_call():
    torch._dynamo.reset()
    model = _model(8)
    x = torch.randn(3, 32)
    want = _eager(model, x)
    cnt = GraphCounter()
    compiled = torch.compile(model, backend=cnt, fullgraph=True)
    with torch.no_grad():
        assert torch.equal(compiled(x), want)
        assert torch.equal(compiled(x), want)
    assert cnt.frame_count == 1 and len(cnt.tileops_nodes[0]) == 8 * 3


def test_layers_with_other_params_compile_once_per_distinct_set():
    """Two norm eps values among 32 layers: two compiles, the rest hit the cache."""
    model = _model()
    for layer in model[::2]:
        layer.norm.eps = 1e-5
    assert compile_regions(model, torch.randn(3, 32)).frame_count == 2
