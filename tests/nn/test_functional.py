"""tileops.functional: each function equals its reference eagerly, compiles under
torch.compile(fullgraph=True) as one node per call, and goes through the instance
interned for its params (the modules' too), so a cold compile needs no eager call first
and interning more instances later does not recompile a graph."""
import pytest
import torch
import torch._dynamo
import torch.nn.functional as F

import tileops.functional as TF
import tileops.nn as tnn
from tileops.reference.positional import rope as rope_ref
from tileops.reference.positional import rope_cos_sin_cache

from test_modules import GraphCounter  # noqa: E402  (tests/nn is on sys.path under pytest's rootdir rules)


def _inputs():
    torch.manual_seed(3)
    x = torch.randn(5, 48)
    return x, torch.randn(48), torch.randn(48), torch.randn(5, 48)


CASES = {
    "rms_norm": (lambda x, w, b, r: TF.rms_norm(x, w, 1e-6), lambda x, w, b, r: F.rms_norm(x, (48,), w, 1e-6),
                 ["tileops.norm_rms_norm_fwd.default"]),
    "rms_norm_hf": (lambda x, w, b, r: TF.rms_norm(x, w, 1e-6, cast_before_weight=True),
                    lambda x, w, b, r: w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)),
                    ["tileops.norm_rms_norm_fwd.default"]),
    "layer_norm": (lambda x, w, b, r: TF.layer_norm(x, w, b), lambda x, w, b, r: F.layer_norm(x, (48,), w, b, 1e-5),
                   ["tileops.norm_layer_norm_fwd.default"]),
    "fused_add_rms_norm": (lambda x, w, b, r: TF.fused_add_rms_norm(x, r, w, 1e-6),
                           lambda x, w, b, r: (F.rms_norm(x + r, (48,), w, 1e-6), x + r),
                           ["tileops.norm_fused_add_rms_norm_fwd.default"]),
    "fused_add_layer_norm": (lambda x, w, b, r: TF.fused_add_layer_norm(x, r, w, b),
                             lambda x, w, b, r: (F.layer_norm(x + r, (48,), w, b, 1e-5), x + r),
                             ["tileops.norm_fused_add_layer_norm_fwd.default"]),
    "gemma_rms_norm": (lambda x, w, b, r: TF.gemma_rms_norm(x, w),
                       lambda x, w, b, r: F.rms_norm(x, (48,), None, 1e-6) * (1 + w),
                       ["tileops.norm_gemma_rms_norm_fwd.default"]),
    "silu_and_mul": (lambda x, w, b, r: TF.silu_and_mul(x), lambda x, w, b, r: F.silu(x[:, :24]) * x[:, 24:],
                     ["tileops.activation_silu_and_mul_fwd.default"]),
    "gelu_and_mul": (lambda x, w, b, r: TF.gelu_and_mul(x), lambda x, w, b, r: F.gelu(x[:, :24]) * x[:, 24:],
                     ["tileops.activation_gelu_and_mul_fwd.default"]),
    "gelu_tanh_and_mul": (lambda x, w, b, r: TF.gelu_tanh_and_mul(x),
                          lambda x, w, b, r: F.gelu(x[:, :24], approximate="tanh") * x[:, 24:],
                          ["tileops.activation_gelu_tanh_and_mul_fwd.default"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_equals_reference_and_compiled_is_one_node(name):
    fn, ref, nodes = CASES[name]
    args = _inputs()
    want = ref(*args)
    got = fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    cnt = GraphCounter()
    compiled = torch.compile(fn, backend=cnt, fullgraph=True)
    out = compiled(*args)
    for g, e in zip(out if isinstance(out, tuple) else (out,), got if isinstance(got, tuple) else (got,)):
        assert torch.equal(g, e)
    assert cnt.frame_count == 1 and cnt.tileops_nodes == [nodes]


def test_rope_and_embedding():
    torch.manual_seed(4)
    cache = rope_cos_sin_cache(base=10000.0, rotary_dim=8, max_position=32)
    q, k, pos = torch.randn(6, 4, 16), torch.randn(6, 2, 16), torch.tensor([0, 31, 2, 3, 9, 9])
    want = rope_ref(q, k, pos, cache, head_size=16, rotary_dim=8, is_neox=True)
    got = TF.rope(q, k, pos, cache, 16, 8)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    q2, k2 = q.clone(), k.clone()
    a, b = TF.rope(q2, k2, pos, cache, 16, 8, inplace=True)
    assert a is q2 and torch.equal(q2, got[0]) and torch.equal(k2, got[1])
    table = torch.randn(40, 16)
    ids = torch.tensor([[3, 39], [0, 0]])
    assert torch.equal(TF.embedding(ids, table), F.embedding(ids, table))
    torch._dynamo.reset()
    cnt = GraphCounter()
    f = torch.compile(lambda q, k, p, c, ids, t: (TF.rope(q, k, p, c, 16, 8), TF.embedding(ids, t)), backend=cnt,
                      fullgraph=True)
    (qo, ko), e = f(q, k, pos, cache, ids, table)
    assert torch.equal(qo, got[0]) and torch.equal(e, F.embedding(ids, table))
    assert cnt.tileops_nodes == [["tileops.positional_rope_fwd.default", "tileops.embedding_fwd.default"]]


def test_functional_and_modules_share_instances():
    w = torch.randn(40)
    x = torch.randn(2, 40)
    TF.rms_norm(x, w, 1e-6)
    m = tnn.RMSNorm(40, eps=1e-6)
    from tileops.nn._intern import lookup
    from tileops.norm import RMSNormFwdOp
    assert lookup(RMSNormFwdOp, None, (40,), 1e-6, False) is m.op


def test_a_cold_compile_interns_outside_the_trace_and_new_instances_do_not_recompile():
    torch._dynamo.reset()
    cnt = GraphCounter()
    f = torch.compile(lambda x, w: TF.rms_norm(x, w, 1e-4) * 2, backend=cnt, fullgraph=True)
    x, w = torch.randn(3, 56), torch.randn(56)
    y = f(x, w)                                    # no eager call before: interned at trace time
    torch.testing.assert_close(y, F.rms_norm(x, (56,), w, 1e-4) * 2, rtol=1e-5, atol=1e-5)
    for eps in (1e-3, 2e-3, 3e-3):                 # more instances interned afterwards
        TF.rms_norm(x, w, eps)
    f(x, w)
    assert cnt.frame_count == 1


def test_compiled_out_and_inplace_branches():
    torch._dynamo.reset()
    x, w, r = torch.randn(4, 24), torch.randn(24), torch.randn(4, 24)

    def fn(x, w, r, out):
        TF.rms_norm(x, w, 1e-6, out=out)
        return TF.fused_add_rms_norm(x, r, w, 1e-6, inplace=True)
    want_out = F.rms_norm(x, (24,), w, 1e-6)
    want = (F.rms_norm(x + r, (24,), w, 1e-6), x + r)
    out = torch.empty(4, 24)
    xc, rc = x.clone(), r.clone()
    torch.compile(fn, fullgraph=True, backend="eager")(xc, w, rc, out)
    torch.testing.assert_close(out, want_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(xc, want[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rc, want[1], rtol=0, atol=0)
