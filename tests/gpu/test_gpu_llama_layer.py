"""tileops.nn.PagedAttention and LlamaDecoderLayer on a GPU (heads of 128, as Llama's):
  * PagedAttention decode against float64 math over each sequence's gathered tokens
    (lengths across the decode kernel's 256-token chunks), prefill against float64 causal
    attention;
  * the layer against transformers' LlamaDecoderLayer with its DynamicCache, prefill then
    decode steps, bfloat16: within the benchmark's check (tileops.bench.check_close) and, as
    on the CPU, no further from the float64 layer than Hugging Face's own bfloat16 layer
    (RMS error within a quarter more: on tensor cores the decode kernel rounds the softmax
    weights to bfloat16 before P V, which SDPA's kernels also do in their way);
  * the decode step captured once in a CUDA graph and replayed with new tokens, positions,
    slots and lengths: bit for bit the eager step;
  * torch.compile (inductor, fullgraph) of the decode step: one node per tileops call, equal
    to eager within one bfloat16 rounding of the matmuls' epilogues;
  * the documented outcome of a bad length on a GPU (no synchronisation to check it): that
    sequence's output NaN, the others bit for bit unchanged.
Skipped without CUDA (tests/gpu/conftest.py); the Hugging Face comparisons skip without
transformers."""
import copy
import os
import sys

import pytest
import torch

import tileops.nn as tnn
from tileops.bench import check_close

from compile_contract import graph_targets

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "nn"))
from test_llama_layer import DECODE_NODES, _randomise_norms  # noqa: E402
from test_paged_attention import _attention64  # noqa: E402

DEV = "cuda"
CFG = dict(hidden_size=512, intermediate_size=1024, num_attention_heads=8, num_key_value_heads=2, head_dim=128,
           max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=500000.0)
TOL_BF16 = dict(rtol=1.6e-2, atol=1.6e-2)


BS = 16


def _slots(block_table, positions):
    return block_table.long().gather(1, positions // BS) * BS + positions % BS


class _Paging:
    """Block tables of B sequences (distinct shuffled blocks of BS tokens), on the device."""

    def __init__(self, B, max_len):
        nb = -(-max_len // BS)
        self.num_blocks = B * nb + 2
        g = torch.Generator().manual_seed(0)
        self.block_table = torch.randperm(self.num_blocks, generator=g)[:B * nb].view(B, nb).to(DEV, torch.int32)

    def slots(self, positions):
        return _slots(self.block_table, positions)


def _paging(B, max_len):
    return _Paging(B, max_len)


def _seq_lens(n, B):
    return torch.full((B,), n, dtype=torch.int32, device=DEV)


def test_paged_attention_decode_and_prefill_against_float64():
    H, HK, D = 8, 2, 128
    m = tnn.PagedAttention(H, D, HK, block_size=BS)
    B, S = 2, 300                       # the prompt crosses the decode kernel's 256-token chunks
    n = S + 3
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, n, H, D, generator=g).to(DEV, torch.bfloat16)
    k = torch.randn(B, n, HK, D, generator=g).to(DEV, torch.bfloat16)
    v = torch.randn(B, n, HK, D, generator=g).to(DEV, torch.bfloat16)
    nb = -(-n // BS)
    table = torch.randperm(B * nb + 1, generator=g)[:B * nb].view(B, nb).to(DEV, torch.int32)
    kc, vc = m.new_kv_cache(B * nb + 1, device=DEV, dtype=torch.bfloat16)
    pos = torch.arange(S, device=DEV)[None].expand(B, S)
    o = m(q[:, :S], k[:, :S], v[:, :S], (kc, vc), _slots(table, pos))
    want = _attention64(q[:, :S].cpu(), k[:, :S].cpu(), v[:, :S].cpu(), causal=True, scale=D ** -0.5)
    torch.testing.assert_close(o.cpu().double(), want, **TOL_BF16)
    for t in range(S, n):
        p = torch.full((B, 1), t, device=DEV)
        o = m(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], (kc, vc), _slots(table, p), table, _seq_lens(t + 1, B))
        want = _attention64(q[:, t:t + 1].cpu(), k[:, :t + 1].cpu(), v[:, :t + 1].cpu(), causal=False,
                             scale=D ** -0.5)
        torch.testing.assert_close(o.cpu().double(), want, **TOL_BF16)


def _hf_layer():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    config = transformers.LlamaConfig(num_hidden_layers=1, **CFG)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    hf = LlamaDecoderLayer(config, layer_idx=0)
    _randomise_norms(hf)
    return config, hf.to(DEV, torch.bfloat16).eval(), LlamaRotaryEmbedding(config).to(DEV)


def test_layer_prefill_then_decode_against_hugging_face_and_float64():
    from transformers import DynamicCache
    config, hf, rotary = _hf_layer()
    hf64 = copy.deepcopy(hf).double()
    mine = tnn.LlamaDecoderLayer.from_hf(hf, rotary_emb=rotary, block_size=BS)
    B, S, steps = 3, 300, 4
    paging = _paging(B, S + steps)
    kv = mine.new_kv_cache(paging.num_blocks)
    c16, c64 = DynamicCache(config=config), DynamicCache(config=config)
    g = torch.Generator().manual_seed(1)
    for t0, n in [(0, S)] + [(S + i, 1) for i in range(steps)]:
        x = torch.randn(B, n, CFG["hidden_size"], generator=g).to(DEV, torch.bfloat16)
        pos = torch.arange(t0, t0 + n, device=DEV)[None].expand(B, n)
        with torch.no_grad():
            cos, sin = rotary(x.double(), pos)
            ref = hf64(x.double(), position_ids=pos, past_key_values=c64, use_cache=True,
                       position_embeddings=(cos.double(), sin.double()))
            theirs = hf(x, position_ids=pos, past_key_values=c16, use_cache=True, position_embeddings=rotary(x, pos))
            extra = (paging.block_table, _seq_lens(t0 + 1, B)) if n == 1 else ()
            out, res = mine(x, None, pos, kv, paging.slots(pos), *extra)
        got = out + res
        err, scaled, ok = check_close(got, theirs, "bfloat16")
        assert ok, (t0, err, scaled)
        err_mine = float((got.double() - ref).pow(2).mean().sqrt())
        err_hf = float((theirs.double() - ref).pow(2).mean().sqrt())
        assert err_mine <= 1.25 * err_hf, (t0, err_mine, err_hf)


def _decode_inputs(layer, paging, B, t, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(B, 1, CFG["hidden_size"], generator=g).to(DEV, torch.bfloat16)
    r = torch.randn(B, 1, CFG["hidden_size"], generator=g).to(DEV, torch.bfloat16)
    pos = torch.tensor(t, device=DEV).view(B, 1)
    seq_lens = (pos.view(-1) + 1).to(torch.int32)
    return a, r, pos, paging.slots(pos), seq_lens


def _filled_layer(B, max_len):
    torch.manual_seed(0)
    with torch.device(DEV):             # the default-device context: the cos/sin cache follows it too
        layer = tnn.LlamaDecoderLayer(CFG, block_size=BS, dtype=torch.bfloat16)
    assert layer.self_attn.rotary_emb.cos_sin_cache.device.type == layer.self_attn.qkv_proj.weight.device.type
    _randomise_norms(layer)
    paging = _paging(B, max_len)
    kv = layer.new_kv_cache(paging.num_blocks)
    g = torch.Generator(device=DEV).manual_seed(2)
    for c in kv:
        c.copy_(torch.randn(c.shape, generator=g, device=DEV, dtype=c.dtype))
    return layer, paging, kv


def _captured_step(layer, paging, kv, static):
    """(graph, out, residual, a copy of kv taken before the capture): the decode step on the
    `static` inputs, run once on a side stream (which builds the kernels: a capture may not
    compile), then captured into a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layer(*static[:2], static[2], kv, static[3], paging.block_table, static[4])
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    kv_copy = tuple(c.clone() for c in kv)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, res = layer(*static[:2], static[2], kv, static[3], paging.block_table, static[4])
    return graph, out, res, kv_copy


def test_decode_step_captured_in_a_cuda_graph_replays_bit_for_bit():
    B = 4
    layer, paging, kv = _filled_layer(B, 600)
    static = list(_decode_inputs(layer, paging, B, [5, 100, 257, 511], seed=3))
    with torch.no_grad():
        graph, out, res, kv_eager = _captured_step(layer, paging, kv, static)
        for step, t in enumerate(([6, 101, 258, 512], [0, 1, 16, 599], [300, 2, 40, 17])):
            new = _decode_inputs(layer, paging, B, t, seed=10 + step)
            for s, n in zip(static, new):
                s.copy_(n)
            graph.replay()
            want = layer(*new[:2], new[2], kv_eager, new[3], paging.block_table, new[4])
            assert torch.equal(out, want[0]) and torch.equal(res, want[1])
            assert torch.equal(kv[0], kv_eager[0]) and torch.equal(kv[1], kv_eager[1])


def test_compiled_decode_step_has_one_node_per_tileops_call():
    torch._dynamo.reset()
    B = 3
    layer, paging, kv = _filled_layer(B, 300)
    kv2 = tuple(c.clone() for c in kv)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs)
    f = torch.compile(layer, backend=backend, fullgraph=True)
    a, r, pos, slots, seq_lens = _decode_inputs(layer, paging, B, [3, 200, 299], seed=4)
    with torch.no_grad():
        want = layer(a, r, pos, kv, slots, paging.block_table, seq_lens)
        got = f(a, r, pos, kv2, slots, paging.block_table, seq_lens)
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, **TOL_BF16)
    assert torch.equal(kv[0], kv2[0]) and torch.equal(kv[1], kv2[1])
    assert len(graphs) == 1 and [t for t in graph_targets(graphs[0]) if t.startswith("tileops")] == DECODE_NODES


def test_a_length_past_the_block_table_gives_that_sequence_nan_only():
    B = 3
    layer, paging, kv = _filled_layer(B, 100)
    a, r, pos, slots, seq_lens = _decode_inputs(layer, paging, B, [10, 20, 30], seed=5)
    with torch.no_grad():
        want = layer(a, r, pos, kv, slots, paging.block_table, seq_lens)
        bad = seq_lens.clone()
        bad[1] = paging.block_table.shape[1] * BS + 1           # outside [0, max_blocks * block_size]
        out, res = layer(a, r, pos, kv, slots, paging.block_table, bad)
    torch.cuda.synchronize()
    assert bool(out[1].isnan().all())
    assert torch.equal(out[0], want[0][0]) and torch.equal(out[2], want[0][2])
    assert torch.equal(res[0], want[1][0]) and torch.equal(res[2], want[1][2])


def test_the_decode_step_with_pdl_in_a_graph_gives_the_bits_of_plain_launches():
    """Every tileops kernel of the step (norms, RoPE, the KV write, paged decode attention and
    its merge, SiLU-and-mul) launched with programmatic dependent launch, captured in a CUDA
    graph (programmatic edges between them), replayed with new inputs: bit for bit the eager
    step with every kernel launched plainly. Lengths past 256 tokens: the attention splits
    and its merge runs."""
    from tileops import runtime
    B = 4
    layer, paging, kv = _filled_layer(B, 1200)
    static = list(_decode_inputs(layer, paging, B, [5, 700, 257, 1100], seed=5))
    with torch.no_grad(), runtime.pdl(True):
        graph, out, res, kv_plain = _captured_step(layer, paging, kv, static)
        for step, t in enumerate(([6, 701, 258, 1101], [300, 1, 1000, 17])):
            new = _decode_inputs(layer, paging, B, t, seed=20 + step)
            for s, n in zip(static, new):
                s.copy_(n)
            graph.replay()
            with runtime.pdl(False):
                want = layer(*new[:2], new[2], kv_plain, new[3], paging.block_table, new[4])
            torch.cuda.synchronize()
            assert torch.equal(out, want[0]) and torch.equal(res, want[1]), step
            assert torch.equal(kv[0], kv_plain[0]) and torch.equal(kv[1], kv_plain[1]), step
