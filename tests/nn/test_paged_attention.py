"""tileops.nn.PagedAttention on the CPU: the cache write and the decode attention against
float64 math (softmax over each sequence's gathered keys) and torch's
scaled_dot_product_attention, the prefill against SDPA run in float64 and a float64 causal
softmax, prefill then decode equal to attention over the whole sequence, interning, bad
input, and the compiled graph (a decode call: two tileops nodes, the write and the decode
attention; a prefill call: the write and torch's attention)."""
import copy
import pickle

import pytest
import torch
import torch.nn.functional as F

import tileops.nn as tnn
from tileops.errors import InputValueError

from compile_contract import graph_targets
from paged_decode_inputs import make

H, HK, D, BS = 4, 2, 16, 4
WRITE = "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache"
DECODE = "tileops::attention_paged_decode_attention_fwd_without_lse"
# float32: the kernel's float32 softmax and sums against float64 (outputs of magnitude ~1);
# bfloat16: the output rounded once to bfloat16 (2^-8 relative) from float32, both sides.
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2)}


def _attention64(q, k, v, causal, scale=D ** -0.5):
    """float64 softmax(q k^T * scale) v per query head; q [B, S, H, D], k, v [B, L, HK, D]
    (query head h reads KV head h // (H / HK)); causal: query i of S sees keys up to
    L - S + i."""
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2)
    s = torch.einsum("bshd,blhd->bhsl", q, k) * scale
    if causal:
        S, L = q.shape[1], k.shape[1]
        allowed = torch.arange(L)[None, :] <= (L - S + torch.arange(S))[:, None]
        s = s.masked_fill(~allowed, float("-inf"))
    return torch.einsum("bhsl,blhd->bshd", s.softmax(-1), v)


def _slots(block_table, positions):
    """slot of token p of sequence b: block_table[b, p // BS] * BS + p % BS."""
    bt = block_table.long()
    return bt.gather(1, positions // BS) * BS + positions % BS


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decode_writes_the_new_token_and_attends_to_each_sequence(dtype):
    lens = [1, 6, 13]
    q, kc, vc, bt, _ = make(3, H, HK, D, BS, lens, dtype=dtype, seed=1)
    g = torch.Generator().manual_seed(2)
    k_new = torch.randn(3, 1, HK, D, generator=g).to(dtype)
    v_new = torch.randn(3, 1, HK, D, generator=g).to(dtype)
    pos = torch.tensor(lens)[:, None] - 1            # the new token is each sequence's last
    slots = _slots(bt, pos)
    kc0, vc0 = kc.clone(), vc.clone()
    m = tnn.PagedAttention(H, D, HK, block_size=BS)
    o = m(q.view(3, 1, H * D), k_new, v_new, (kc, vc), slots, bt, torch.tensor(lens, dtype=torch.int32))
    assert o.shape == (3, 1, H * D) and o.dtype == dtype
    # the write: exactly the new tokens' rows, nothing else
    rows = slots.view(-1)
    want_kc, want_vc = kc0.view(-1, HK, D).clone(), vc0.view(-1, HK, D).clone()
    want_kc[rows], want_vc[rows] = k_new.view(3, HK, D), v_new.view(3, HK, D)
    assert torch.equal(kc.view(-1, HK, D), want_kc) and torch.equal(vc.view(-1, HK, D), want_vc)
    # the attention, per sequence, over its gathered tokens: float64 math and torch's SDPA
    for b, n in enumerate(lens):
        idx = _slots(bt[b:b + 1], torch.arange(n)[None]).view(-1)
        k_seq, v_seq = kc.view(-1, HK, D)[idx][None], vc.view(-1, HK, D)[idx][None]
        want = _attention64(q[b:b + 1, None], k_seq, v_seq, causal=False).view(1, 1, H * D)
        torch.testing.assert_close(o[b:b + 1].double(), want, **TOL[dtype])
        sdpa = F.scaled_dot_product_attention(q[b:b + 1, :, None].float(), k_seq.transpose(1, 2).float(),
                                              v_seq.transpose(1, 2).float(), enable_gqa=True)
        torch.testing.assert_close(o[b:b + 1].float(), sdpa.transpose(1, 2).reshape(1, 1, H * D).to(dtype).float(),
                                   **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_prefill_is_causal_attention_over_the_prompt_then_decode_continues_it(dtype):
    B, S, steps = 2, 9, 3
    g = torch.Generator().manual_seed(3)
    n = S + steps
    q = torch.randn(B, n, H, D, generator=g).to(dtype)
    k = torch.randn(B, n, HK, D, generator=g).to(dtype)
    v = torch.randn(B, n, HK, D, generator=g).to(dtype)
    m = tnn.PagedAttention(H, D, HK, block_size=BS)
    kc, vc = m.new_kv_cache(10, dtype=dtype)
    bt = torch.tensor([[7, 2, 9, 0], [1, 8, 3, 5]], dtype=torch.int32)
    pos = torch.arange(S)[None].expand(B, S)
    o = m(q[:, :S], k[:, :S], v[:, :S], (kc, vc), _slots(bt, pos))
    assert o.shape == (B, S, H, D)
    want = _attention64(q[:, :S], k[:, :S], v[:, :S], causal=True)
    torch.testing.assert_close(o.double(), want, **TOL[dtype])
    sdpa = F.scaled_dot_product_attention(q[:, :S].double().transpose(1, 2), k[:, :S].double().transpose(1, 2),
                                          v[:, :S].double().transpose(1, 2), is_causal=True, enable_gqa=True)
    torch.testing.assert_close(o.double(), sdpa.transpose(1, 2), **TOL[dtype])
    for t in range(S, n):
        p = torch.full((B, 1), t)
        o = m(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], (kc, vc), _slots(bt, p), bt,
              torch.full((B,), t + 1, dtype=torch.int32))
        want = _attention64(q[:, t:t + 1], k[:, :t + 1], v[:, :t + 1], causal=False)
        torch.testing.assert_close(o.double(), want, **TOL[dtype])
    # the cache holds every token written, in its slot
    all_pos = torch.arange(n)[None].expand(B, n)
    idx = _slots(bt, all_pos)
    assert torch.equal(kc.view(-1, HK, D)[idx], k) and torch.equal(vc.view(-1, HK, D)[idx], v)


def test_equal_modules_share_interned_ops_and_have_no_state():
    a, b = tnn.PagedAttention(H, D, HK, block_size=BS), tnn.PagedAttention(8, D, 1, block_size=BS)
    assert a.op is b.op and a.write_op is b.write_op      # num_heads is no op param
    assert tnn.PagedAttention(H, D, HK, block_size=8).op is not a.op
    assert list(a.state_dict()) == []
    for c in (copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert c.op is a.op and c.write_op is a.write_op
    a.scale = 0.5
    assert a.op is not b.op and a.op.scale == 0.5 and b.op.scale is None


def test_bad_input_names_the_argument():
    m = tnn.PagedAttention(H, D, HK, block_size=BS)
    q, k, v = torch.randn(2, 1, H, D), torch.randn(2, 1, HK, D), torch.randn(2, 1, HK, D)
    kc, vc = m.new_kv_cache(4)
    slots = torch.tensor([0, 5])
    kc0 = kc.clone()
    with pytest.raises(InputValueError, match="decode call .* needs block_table, an int32 tensor, got NoneType"):
        m(q, k, v, (kc, vc), slots)
    bt, sl = torch.zeros(2, 3, dtype=torch.int32), torch.tensor([1, 6], dtype=torch.int32)
    # the decode's tables refused before the cache write (found by review: after it)
    for bad_bt, bad_sl, match in ((bt.long(), sl, r"'block_table': expected an int32 tensor of 2 dimensions and 2 "
                                                  r"rows on cpu, got torch.int64 \[2, 3\]"),
                                  (bt, sl[:1], r"'seq_lens': expected an int32 tensor of 1 dimension and 2 rows"),
                                  (bt[0], sl, r"'block_table'")):
        with pytest.raises(InputValueError, match="PagedAttention: argument " + match):
            m(q, k, v, (kc, vc), slots, bad_bt, bad_sl)
    q2, k2, v2 = torch.randn(2, 3, H, D), torch.randn(2, 3, HK, D), torch.randn(2, 3, HK, D)
    with pytest.raises(InputValueError, match="a prefill call .* reads neither block_table nor seq_lens"):
        m(q2, k2, v2, (kc, vc), torch.arange(6), bt, sl)
    with pytest.raises(InputValueError, match=r"PagedAttention: head_size: expected a multiple of 16 in \[16, 256\]"):
        tnn.PagedAttention(H, 24, HK)
    with pytest.raises(InputValueError, match="'kv_cache'.*block_size 4"):
        m(q, k, v, (torch.zeros(4, 8, HK, D), torch.zeros(4, 8, HK, D)), slots)
    with pytest.raises(InputValueError, match="'key'.*expected \\[B, S, 2, 16\\]"):
        m(q, torch.randn(2, 1, 3, D), v, (kc, vc), slots)
    with pytest.raises(InputValueError, match="num_heads .* multiple of num_kv_heads"):
        tnn.PagedAttention(4, D, 3)
    assert torch.equal(kc, kc0)        # refused before anything was written (bad key; bad cache)


def test_compiled_calls_hold_one_node_per_tileops_call():
    torch._dynamo.reset()
    m = tnn.PagedAttention(H, D, HK, block_size=BS)
    q, kc, vc, bt, sl = make(2, H, HK, D, BS, [5, 8], seed=4)
    k, v = torch.randn(2, 1, HK, D), torch.randn(2, 1, HK, D)
    slots = _slots(bt, (sl.long() - 1)[:, None])
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    f = torch.compile(m, backend=backend, fullgraph=True)
    kc2, vc2 = kc.clone(), vc.clone()
    want = m(q[:, None], k, v, (kc, vc), slots, bt, sl)
    got = f(q[:, None], k, v, (kc2, vc2), slots, bt, sl)
    assert torch.equal(got, want) and torch.equal(kc2, kc) and torch.equal(vc2, vc)
    assert [t for t in graph_targets(graphs[0]) if t.startswith("tileops")] == [WRITE, DECODE]
    qp, kp, vp = torch.randn(2, 6, H, D), torch.randn(2, 6, HK, D), torch.randn(2, 6, HK, D)
    slots = _slots(bt, torch.arange(6)[None].expand(2, 6))
    want = m(qp, kp, vp, (kc, vc), slots)
    got = f(qp, kp, vp, (kc2, vc2), slots)
    assert torch.equal(got, want) and torch.equal(kc2, kc)
    targets = graph_targets(graphs[-1])
    assert [t for t in targets if t.startswith("tileops")] == [WRITE]
    assert any("scaled_dot_product_attention" in t for t in targets)
