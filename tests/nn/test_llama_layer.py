"""tileops.nn.LlamaDecoderLayer on the CPU (tiny random configs built here, no download):
Hugging Face's state_dict loads and comes back under the same keys; a prefill and then
several decode steps equal transformers' LlamaDecoderLayer with its DynamicCache, in
float32 and bfloat16 (HF's roundings: hf_numerics); in bfloat16 the layer is as close to
the float64 layer as Hugging Face's own bfloat16 layer is; under torch.compile
(fullgraph=True) the graph holds one tileops node per tileops call (a composite: no node
of its own) and N equal layers compile once region by region. transformers is an optional
dependency: the tests that compare with it skip without it."""
import pytest
import torch
import torch._dynamo.testing

import tileops.nn as tnn
from tileops.errors import InputValueError

from compile_contract import graph_targets

CFG = dict(hidden_size=64, intermediate_size=176, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
           max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0)
BS = 4
HF_KEYS = ["self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
           "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight",
           "post_attention_layernorm.weight"]
DECODE_NODES = ["tileops::norm_fused_add_rms_norm_fwd", "tileops::positional_rope_fwd",
                "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache",
                "tileops::attention_paged_decode_attention_fwd_without_lse", "tileops::norm_fused_add_rms_norm_fwd",
                "tileops::activation_silu_and_mul_fwd"]
PREFILL_NODES = ["tileops::norm_rms_norm_fwd", "tileops::positional_rope_fwd",
                 "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache",
                 "tileops::norm_fused_add_rms_norm_fwd", "tileops::activation_silu_and_mul_fwd"]


class Paging:
    """Block tables of B sequences (distinct blocks, shuffled) and their slots."""

    def __init__(self, B, max_len, seed=0):
        nb = -(-max_len // BS)
        g = torch.Generator().manual_seed(seed)
        self.num_blocks = B * nb + 2
        self.block_table = torch.randperm(self.num_blocks, generator=g)[:B * nb].view(B, nb).to(torch.int32)

    def slots(self, positions):
        bt = self.block_table.long()
        return bt.gather(1, positions // BS) * BS + positions % BS

    def seq_lens(self, n, B):
        return torch.full((B,), n, dtype=torch.int32)


def _randomise_norms(layer):
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "layernorm" in name:
                p.normal_(1.0, 0.1)


def test_state_dict_keys_are_hugging_faces_and_round_trip():
    torch.manual_seed(0)
    a = tnn.LlamaDecoderLayer(CFG, block_size=BS)
    _randomise_norms(a)
    sd = a.state_dict()
    assert list(sd) == HF_KEYS
    assert sd["self_attn.q_proj.weight"].shape == (64, 64) and sd["self_attn.k_proj.weight"].shape == (32, 64)
    assert sd["mlp.gate_proj.weight"].shape == (176, 64) and sd["mlp.down_proj.weight"].shape == (64, 176)
    # the stacked weights are [q; k; v] and [gate; up]
    w = a.self_attn.qkv_proj.weight
    assert torch.equal(torch.cat([sd[k] for k in HF_KEYS[:3]]), w)
    assert torch.equal(torch.cat([sd["mlp.gate_proj.weight"], sd["mlp.up_proj.weight"]]), a.mlp.gate_up_proj.weight)
    b = tnn.LlamaDecoderLayer(CFG, block_size=BS)
    b.load_state_dict(sd)
    assert all(torch.equal(x, y) for x, y in zip(b.state_dict().values(), sd.values()))
    # strict loading still names what is missing
    del sd["self_attn.v_proj.weight"]
    with pytest.raises(RuntimeError, match="self_attn.qkv_proj.weight"):
        b.load_state_dict(sd)
    biased = tnn.LlamaDecoderLayer(dict(CFG, attention_bias=True), block_size=BS)
    assert [k for k in biased.state_dict() if k.endswith("bias")] == [
        "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias"]


def test_config_errors():
    with pytest.raises(InputValueError, match="hidden_act 'gelu'"):
        tnn.LlamaDecoderLayer(dict(CFG, hidden_act="gelu"))
    with pytest.raises(InputValueError, match="no 'hidden_size'"):
        tnn.LlamaDecoderLayer({k: v for k, v in CFG.items() if k != "hidden_size"})
    with pytest.raises(InputValueError, match="num_key_value_heads \\(2\\) is not a multiple of tp_size \\(4\\)"):
        tnn.LlamaDecoderLayer(CFG, tp_rank=0, tp_size=4, tp_group=object())
    layer = tnn.LlamaDecoderLayer(CFG, block_size=BS)
    with pytest.raises(InputValueError, match="'hidden_states': expected \\[B, S, 64\\]"):
        layer(torch.randn(3, 64), None, torch.zeros(3, dtype=torch.long), layer.new_kv_cache(2),
              torch.zeros(3, dtype=torch.long))
    # a prefill continuing a sequence (chunked) attends to its own tokens only: refused
    # (found by review: silently wrong), as are decode tables passed to a prefill
    kv = layer.new_kv_cache(2)
    x, pos = torch.randn(1, 3, 64), torch.arange(5, 8)[None]
    with pytest.raises(InputValueError, match=r"LlamaDecoderLayer: argument 'positions': a prefill \(S = 3 > 1\) "
                                              r"takes whole sequences.* got first positions \[5\]"):
        layer(x, None, pos, kv, pos)
    with pytest.raises(InputValueError, match="a prefill call .* reads neither block_table nor seq_lens"):
        layer(x, None, pos - 5, kv, pos - 5, torch.zeros(1, 2, dtype=torch.int32), torch.tensor([3], dtype=torch.int32))
    assert not kv[0].any() and not kv[1].any()
    with pytest.raises(InputValueError, match=r"PagedAttention: head_size: expected a multiple of 16"):
        tnn.LlamaDecoderLayer(dict(CFG, head_dim=24), block_size=BS)


# ---- against transformers ---------------------------------------------------------------

def _hf():
    return pytest.importorskip("transformers", reason="transformers is not installed (pip install 'tileops[hf]'; "
                               "the Makefile's test set-up installs it)")


def _hf_layer(dtype, **extra):
    transformers = _hf()
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    config = transformers.LlamaConfig(num_hidden_layers=1, **dict(CFG, **extra))
    config._attn_implementation = "sdpa"        # what from_pretrained picks on torch >= 2.1
    torch.manual_seed(0)
    hf = LlamaDecoderLayer(config, layer_idx=0)
    _randomise_norms(hf)
    return config, hf.to(dtype).eval(), LlamaRotaryEmbedding(config)


def _ulps(got, want):
    """|got - want| in units of the last place of want's dtype at |want|, or at the mean
    |want| where |want| is smaller (an output near 0 is a sum of terms ~1 that cancel: its
    error is theirs, not relative to it)."""
    mant = {torch.bfloat16: 7, torch.float16: 10, torch.float32: 23}[want.dtype]
    w = want.double().abs()
    e = torch.floor(torch.log2(w.clamp_min(float(w.mean()))))
    return (got.double() - want.double()).abs() / torch.exp2(e - mant)


# How far the layer's output may be from Hugging Face's on the same weights and inputs, in
# units of the output's last place (_ulps). Both round the same intermediates to the dtype;
# they differ where the arithmetic inside a step differs: the stacked q/k/v and gate/up
# matmuls against three and two (another blocking of the same dot products), the norms'
# float32 row sums and the SiLU's float32 exp (tests/nn/test_hf_patch.py), and at decode the
# paged kernel's float32 softmax (256-token chunks) against SDPA's. An intermediate one unit
# off moves the output through the next matmul by about a unit. Measured here: bfloat16 at
# most 2 units (prefill bit for bit; up to 18% of the decode outputs off by a unit), float32
# at most 7 units (the cached keys and values: one float32 matmul against another).
MAX_ULPS = {torch.float32: 16, torch.bfloat16: 4}
MAX_SHARE = {torch.float32: 1.0, torch.bfloat16: 0.35}     # share of elements not bit-equal


def _check_close(got, want, what):
    u = _ulps(got, want)
    share = float((got != want).float().mean())
    assert float(u.max()) <= MAX_ULPS[want.dtype], f"{what}: {float(u.max())} units in the last place"
    assert share <= MAX_SHARE[want.dtype], f"{what}: {share:.2f} of the elements differ"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_prefill_then_decode_equals_hugging_faces_layer_with_its_cache(dtype):
    DynamicCache = _hf().DynamicCache
    config, hf, rotary = _hf_layer(dtype)
    mine = tnn.LlamaDecoderLayer.from_hf(hf, rotary_emb=rotary, block_size=BS)
    assert mine.self_attn.qkv_proj.weight.dtype == dtype
    B, S, steps = 3, 11, 5
    paging = Paging(B, S + steps)
    kv = mine.new_kv_cache(paging.num_blocks)
    cache = DynamicCache(config=config)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(B, S, 64, generator=g).to(dtype)
    pos = torch.arange(S)[None].expand(B, S)
    seen = []
    hf.self_attn.register_forward_hook(lambda mod, args, out: seen.append(out[0]))
    with torch.no_grad():
        want = hf(x, position_ids=pos, past_key_values=cache, use_cache=True, position_embeddings=rotary(x, pos))
        out, res = mine(x, None, pos, kv, paging.slots(pos))
    _check_close(out + res, want, f"{dtype} prefill")
    _check_close(res, x + seen[-1], f"{dtype} prefill residual")    # the stream after attention
    for t in range(S, S + steps):
        # the next layer's view: (MLP output, residual) whose sum Hugging Face's layer takes
        a = torch.randn(B, 1, 64, generator=g).to(dtype)
        r = torch.randn(B, 1, 64, generator=g).to(dtype)
        pos = torch.full((B, 1), t)
        with torch.no_grad():
            want = hf(a + r, position_ids=pos, past_key_values=cache, use_cache=True,
                      position_embeddings=rotary(a, pos))
            out, res = mine(a, r, pos, kv, paging.slots(pos), paging.block_table, paging.seq_lens(t + 1, B))
        _check_close(out + res, want, f"{dtype} decode at {t}")
        _check_close(res, (a + r) + seen[-1], f"{dtype} decode residual at {t}")
    # the paged cache holds Hugging Face's keys and values (rotated keys), token by token
    k_hf, v_hf = cache.layers[0].keys, cache.layers[0].values          # [B, HK, L, D]
    all_pos = torch.arange(S + steps)[None].expand(B, -1)
    rows = paging.slots(all_pos)
    k_mine = kv[0].view(-1, 2, 16)[rows].transpose(1, 2)
    v_mine = kv[1].view(-1, 2, 16)[rows].transpose(1, 2)
    _check_close(k_mine, k_hf, f"{dtype} cached keys")
    _check_close(v_mine, v_hf, f"{dtype} cached values")


def test_biased_projections_and_llama3_rope_scaling_equal_hugging_faces():
    DynamicCache = _hf().DynamicCache
    scaling = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    config, hf, rotary = _hf_layer(torch.float32, attention_bias=True, mlp_bias=True, rope_parameters=scaling)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith("bias"):
                p.normal_()
    mine = tnn.LlamaDecoderLayer.from_hf(hf, block_size=BS)     # its own cos/sin, from the config
    assert mine.self_attn.rotary_emb.rope_scaling["rope_type"] == "llama3"
    B, S = 2, 13
    paging = Paging(B, S + 1)
    kv = mine.new_kv_cache(paging.num_blocks)
    cache = DynamicCache(config=config)
    x = torch.randn(B, S, 64)
    pos = torch.arange(S)[None].expand(B, S)
    with torch.no_grad():
        want = hf(x, position_ids=pos, past_key_values=cache, use_cache=True, position_embeddings=rotary(x, pos))
        out, res = mine(x, None, pos, kv, paging.slots(pos))
        torch.testing.assert_close(out + res, want, rtol=1e-5, atol=1e-5)
        x = torch.randn(B, 1, 64)
        pos = torch.full((B, 1), S)
        want = hf(x, position_ids=pos, past_key_values=cache, use_cache=True, position_embeddings=rotary(x, pos))
        out, res = mine(x, None, pos, kv, paging.slots(pos), paging.block_table, paging.seq_lens(S + 1, B))
        torch.testing.assert_close(out + res, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("hf_numerics", [True, False])
def test_bfloat16_layer_is_as_close_to_float64_as_hugging_faces(hf_numerics):
    """Against the float64 Hugging Face layer (same weights, rounded to bfloat16 first):
    tileops' bfloat16 layer's error is no larger than Hugging Face's own bfloat16 layer's
    (within a tenth more, measured per step as the RMS error; measured: at most 4% more)."""
    import copy
    DynamicCache = _hf().DynamicCache
    config, hf, rotary = _hf_layer(torch.bfloat16)
    hf64 = copy.deepcopy(hf).double()
    mine = tnn.LlamaDecoderLayer.from_hf(hf, rotary_emb=rotary, block_size=BS, hf_numerics=hf_numerics)
    B, S = 2, 24
    paging = Paging(B, S + 3)
    kv = mine.new_kv_cache(paging.num_blocks)
    c16, c64 = DynamicCache(config=config), DynamicCache(config=config)
    g = torch.Generator().manual_seed(7)
    for t0, n in ((0, S), (S, 1), (S + 1, 1), (S + 2, 1)):
        x = torch.randn(B, n, 64, generator=g).to(torch.bfloat16)
        pos = torch.arange(t0, t0 + n)[None].expand(B, n)
        with torch.no_grad():
            cos, sin = rotary(x.double(), pos)
            ref = hf64(x.double(), position_ids=pos, past_key_values=c64, use_cache=True,
                       position_embeddings=(cos.double(), sin.double()))
            theirs = hf(x, position_ids=pos, past_key_values=c16, use_cache=True, position_embeddings=rotary(x, pos))
            args = (paging.block_table, paging.seq_lens(t0 + 1, B)) if n == 1 else ()
            out, res = mine(x, None, pos, kv, paging.slots(pos), *args)
        err_mine = float(((out + res).double() - ref).pow(2).mean().sqrt())
        err_hf = float((theirs.double() - ref).pow(2).mean().sqrt())
        assert err_mine <= 1.1 * err_hf, (t0, err_mine, err_hf)


# ---- torch.compile ------------------------------------------------------------------------

class Recorder:
    """A backend keeping each graph (run as captured)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def _tileops_nodes(gm):
    return [t for t in graph_targets(gm) if t.startswith("tileops")]


def test_compiled_layer_has_one_node_per_tileops_call_and_no_break():
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = tnn.LlamaDecoderLayer(CFG, block_size=BS).to(torch.bfloat16)
    B, S = 2, 6
    paging = Paging(B, S + 1)
    kv, kv2 = layer.new_kv_cache(paging.num_blocks), layer.new_kv_cache(paging.num_blocks)
    rec = Recorder()
    f = torch.compile(layer, backend=rec, fullgraph=True)
    x = torch.randn(B, S, 64, dtype=torch.bfloat16)
    pos = torch.arange(S)[None].expand(B, S)
    with torch.no_grad():
        want = layer(x, None, pos, kv, paging.slots(pos))
        got = f(x, None, pos, kv2, paging.slots(pos))
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and torch.equal(kv[0], kv2[0])
    assert _tileops_nodes(rec.graphs[0]) == PREFILL_NODES
    a, r = torch.randn(B, 1, 64, dtype=torch.bfloat16), torch.randn(B, 1, 64, dtype=torch.bfloat16)
    pos = torch.full((B, 1), S)
    with torch.no_grad():
        want = layer(a, r, pos, kv, paging.slots(pos), paging.block_table, paging.seq_lens(S + 1, B))
        got = f(a, r, pos, kv2, paging.slots(pos), paging.block_table, paging.seq_lens(S + 1, B))
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and torch.equal(kv[1], kv2[1])
    assert len(rec.graphs) == 2 and _tileops_nodes(rec.graphs[1]) == DECODE_NODES
    assert not any(t.startswith("tileops") and "decoder" in t for g in rec.graphs for t in graph_targets(g))


def test_equal_layers_compile_once_region_by_region():
    """8 equal layers, each `.compile()`d: one compile of the decode step serves all."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    layers = [tnn.LlamaDecoderLayer(CFG, block_size=BS) for _ in range(8)]
    cnt = torch._dynamo.testing.CompileCounter()
    for layer in layers:
        layer.compile(backend=cnt, fullgraph=True)
    B = 3
    paging = Paging(B, 8)
    caches = [layer.new_kv_cache(paging.num_blocks) for layer in layers]
    torch._dynamo.utils.counters.clear()
    h, r = torch.randn(B, 1, 64), None
    pos = torch.full((B, 1), 4)
    with torch.no_grad():
        for layer, kv in zip(layers, caches):
            h, r = layer(h, torch.zeros_like(h) if r is None else r, pos, kv, paging.slots(pos), paging.block_table,
                         paging.seq_lens(5, B))
    assert cnt.frame_count == 1, f"{cnt.frame_count} compiles for 8 equal layers"
    assert not torch._dynamo.utils.counters["recompiles"]
