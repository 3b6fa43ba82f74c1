"""PagedDecodeAttentionFwdOp on the CPU beyond the generic driver (tests/test_ops.py):
numerics against the float64 reference and against what users compare with (torch's
scaled_dot_product_attention on the keys and values gathered contiguous, vLLM's
convention of a per-sequence gather), group sizes 1, 4, 7, 8, head sizes 64 and 128,
lengths ending mid-block and spanning several 256-token chunks; batch invariance (a
sequence's output bitwise the same alone, in other batches, and whether the kernel
splits it into chunk units or not); length 0 (o = 0, lse = -inf); block tables with
garbage in their unused tails; blocks shared by sequences; bad lengths and block ids
(an error naming the op, the argument, the index and the value, nothing written); a
cache that is not contiguous (refused, never copied); scale; the launchable's checks."""
import math

import pytest
import torch
import torch.nn.functional as F

import tileops._C as C
from tileops.attention import PagedDecodeAttentionFwdOp
from tileops.errors import InputTypeError, InputValueError
from tileops.reference.attention import gather_paged

import paged_decode_inputs as inputs
from paged_decode_inputs import make

TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def ref64(q, kc, vc, bt, sl, op):
    return inputs.ref64(op, q, kc, vc, bt, sl)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("H,Hkv", [(8, 8), (32, 8), (28, 4), (16, 2)])
@pytest.mark.parametrize("D,BS", [(128, 16), (64, 5)])
def test_matches_the_float64_reference_and_sdpa_on_gathered_keys(dtype, H, Hkv, D, BS):
    lens = [1, 37, 600, 256, 513]          # one token, mid-block, several chunks, a chunk's edge
    q, kc, vc, bt, sl = make(len(lens), H, Hkv, D, BS, lens, dtype)
    op = PagedDecodeAttentionFwdOp(D, BS)
    o, lse = op(q, kc, vc, bt, sl, return_lse=True)
    want_o, want_lse = ref64(q, kc, vc, bt, sl, op)
    tol = TOL[dtype]
    torch.testing.assert_close(o.double(), want_o, rtol=tol, atol=tol)
    torch.testing.assert_close(lse.double(), want_lse, rtol=2e-5, atol=2e-5)
    # torch's own attention, per sequence on its gathered keys and values (what users compare with)
    k = gather_paged(kc, bt, sl, BS)
    v = gather_paged(vc, bt, sl, BS)
    for b, n in enumerate(lens):
        s = F.scaled_dot_product_attention(q[b:b + 1, :, None].float(), k[b:b + 1, :n].transpose(1, 2).float(),
                                           v[b:b + 1, :n].transpose(1, 2).float(), enable_gqa=True)
        torch.testing.assert_close(o[b].float(), s[0, :, 0], rtol=tol, atol=tol)


def test_scale_none_is_inverse_sqrt_head_size_and_a_scale_is_used():
    assert PagedDecodeAttentionFwdOp(128, 16).resolved_params()["scale"] == 1.0 / math.sqrt(128)
    q, kc, vc, bt, sl = make(2, 4, 2, 64, 16, [40, 9])
    o1 = PagedDecodeAttentionFwdOp(64, 16)(q, kc, vc, bt, sl)
    o2 = PagedDecodeAttentionFwdOp(64, 16, scale=0.125)(q, kc, vc, bt, sl)
    assert torch.equal(o1, o2)                       # 1 / sqrt(64) = 0.125 exactly
    op = PagedDecodeAttentionFwdOp(64, 16, scale=0.3)
    o3 = op(q, kc, vc, bt, sl)
    torch.testing.assert_close(o3.double(), ref64(q, kc, vc, bt, sl, op)[0], rtol=2e-5, atol=2e-5)
    assert not torch.allclose(o1, o3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_sequence_gives_the_same_bits_whatever_else_is_in_the_batch(dtype):
    """Sequence 0 alone, among others (different lengths, other blocks), and in a batch
    of 40, with the pool's threads set so that the kernel runs it as (sequence, KV head)
    units or as (sequence, KV head, chunk) units: bitwise the same output and lse."""
    H, Hkv, D, BS = 8, 2, 64, 16
    lens = [700, 5, 300, 0, 1000]
    q, kc, vc, bt, sl = make(len(lens), H, Hkv, D, BS, lens, dtype, seed=3)
    op = PagedDecodeAttentionFwdOp(D, BS)
    threads = C.cpu_num_threads()
    try:
        results = []
        for n_threads in (1, 2, 64):              # 64 > pairs: the chunk units and their fold
            C.cpu_set_num_threads(n_threads)
            results.append(op(q[:1], kc, vc, bt[:1, :-(-lens[0] // BS)], sl[:1], return_lse=True))
            results.append(op(q, kc, vc, bt, sl, return_lse=True))
            big = torch.cat([bt] * 8)
            results.append(op(torch.cat([q] * 8), kc, vc, big, torch.cat([sl] * 8), return_lse=True))
    finally:
        C.cpu_set_num_threads(threads)
    o0, l0 = results[0]
    for o, lse in results[1:]:
        assert torch.equal(o[0], o0[0]) and torch.equal(lse[0], l0[0])
    for o, lse in results[1:]:                  # every copy of every sequence in the big batch too
        for b in range(o.shape[0]):
            assert torch.equal(o[b], results[1][0][b % len(lens)])


def test_length_zero_gives_zero_output_and_minus_infinite_lse():
    q, kc, vc, bt, sl = make(3, 4, 4, 64, 16, [0, 20, 0])
    o, lse = PagedDecodeAttentionFwdOp(64, 16)(q, kc, vc, bt, sl, return_lse=True)
    assert torch.equal(o[0], torch.zeros_like(o[0])) and torch.equal(o[2], torch.zeros_like(o[2]))
    assert torch.isneginf(lse[0]).all() and torch.isneginf(lse[2]).all() and torch.isfinite(lse[1]).all()
    # no cache at all: only sequences of length 0
    empty = torch.empty(0, 16, 4, 64)
    o, lse = PagedDecodeAttentionFwdOp(64, 16)(q, empty, empty, torch.zeros(3, 0, dtype=torch.int32),
                                               torch.zeros(3, dtype=torch.int32), return_lse=True)
    assert torch.equal(o, torch.zeros_like(o)) and torch.isneginf(lse).all()


def test_unused_block_table_entries_are_never_read_and_blocks_may_be_shared():
    H, Hkv, D, BS = 4, 2, 64, 16
    q, kc, vc, bt, sl = make(2, H, Hkv, D, BS, [20, 33], max_blocks=6)
    op = PagedDecodeAttentionFwdOp(D, BS)
    o = op(q, kc, vc, bt, sl)
    tidy = bt.clone()
    tidy[0, 2:] = 0
    tidy[1, 3:] = 0
    assert torch.equal(o, op(q, kc, vc, tidy, sl))
    assert (bt[0, 2:] == inputs.GARBAGE).any() or (bt[0, 2:] < 0).any()   # the garbage was there
    # sequence 1 shares sequence 0's first block (a common prefix)
    shared = bt.clone()
    shared[1, 0] = bt[0, 0]
    o2 = op(q, kc, vc, shared, sl)
    torch.testing.assert_close(o2.double(), ref64(q, kc, vc, shared, sl, op)[0], rtol=2e-5, atol=2e-5)
    assert torch.equal(o2[0], o[0])


def test_bad_lengths_and_block_ids_raise_naming_them_and_write_nothing():
    H, Hkv, D, BS = 4, 2, 64, 16
    q, kc, vc, bt, sl = make(3, H, Hkv, D, BS, [20, 33, 5], spare=0)
    op = PagedDecodeAttentionFwdOp(D, BS)
    out = torch.full_like(q, 7.0)
    mb = bt.shape[1]
    for b, bad in ((1, mb * BS + 1), (2, -3)):
        lens = sl.clone()
        lens[b] = bad
        with pytest.raises(InputValueError, match=rf"PagedDecodeAttentionFwdOp: argument 'seq_lens': "
                                                  rf".*seq_lens\[{b}\] = {bad} is outside \[0, {mb * BS}\]"):
            op(q, kc, vc, bt, lens, out=out)
        assert torch.equal(out, torch.full_like(q, 7.0))
    N = kc.shape[0]
    for bad in (N, -1, 2**31 - 1):
        table = bt.clone()
        table[1, 2] = bad                                          # sequence 1 holds 3 blocks
        with pytest.raises(InputValueError, match=rf"PagedDecodeAttentionFwdOp: argument 'block_table': "
                                                  rf".*block_table\[1, 2\] = {bad} is outside \[0, {N}\)"):
            op(q, kc, vc, table, sl, out=out)
        assert torch.equal(out, torch.full_like(q, 7.0))


def test_a_cache_that_is_not_contiguous_is_refused_not_copied():
    q, kc, vc, bt, sl = make(2, 4, 2, 64, 16, [20, 3])
    op = PagedDecodeAttentionFwdOp(64, 16)
    wide = torch.cat([kc, kc], dim=-1)[..., :64]
    with pytest.raises(InputValueError, match=r"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a "
                                              r"contiguous tensor \(the op never copies it\)"):
        op(q, wide, vc, bt, sl)
    with pytest.raises(InputValueError, match="'value_cache'"):
        op(q, kc, wide, bt, sl)


def test_shape_rules_name_the_op():
    q, kc, vc, bt, sl = make(2, 6, 4, 64, 16, [20, 3])
    with pytest.raises(InputValueError, match="PagedDecodeAttentionFwdOp: shape rule"):
        PagedDecodeAttentionFwdOp(64, 16)(q, kc, vc, bt, sl)          # 6 query heads over 4 KV heads
    q, kc, vc, bt, sl = make(2, 4, 2, 40, 16, [20, 3])
    with pytest.raises(InputValueError, match="head_size % 16 == 0"):
        PagedDecodeAttentionFwdOp(40, 16)(q, kc, vc, bt, sl)
    q, kc, vc, bt, sl = make(2, 4, 2, 64, 16, [20, 3])
    with pytest.raises(InputValueError, match="block_size"):
        PagedDecodeAttentionFwdOp(64, 8)(q, kc, vc, bt, sl)           # the cache's blocks hold 16


def test_the_launchable_checks_what_the_kernel_relies_on():
    q, kc, vc, bt, sl = make(2, 4, 2, 64, 16, [20, 3])
    op = PagedDecodeAttentionFwdOp(64, 16)
    o = torch.empty_like(q)
    launch = op.kernel_for("paged_decode_attention", q, kc, vc, bt, sl, o, None)
    launch(q, kc, vc, bt, sl, o, None)
    assert torch.equal(o, op(q, kc, vc, bt, sl))
    with pytest.raises(InputValueError, match="'o'"):
        launch(q, kc, vc, bt, sl, torch.empty(2, 4, 32), None)
    with pytest.raises(InputValueError, match="'block_table'"):
        launch(q, kc, vc, bt.long(), sl, o, None)
    with pytest.raises(InputValueError, match="'seq_lens'"):
        launch(q, kc, vc, bt, sl[:1], o, None)
    with pytest.raises(InputValueError, match="'key_cache'"):
        launch(q, kc[:, :8], vc, bt, sl, o, None)
    with pytest.raises(InputValueError, match="'lse'"):
        launch(q, kc, vc, bt, sl, o, torch.empty(2, 4, dtype=torch.float16))
    with pytest.raises(InputTypeError, match="'q'"):
        launch("q", kc, vc, bt, sl, o, None)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(q, kc, vc, bt, sl, kc.view(-1)[:q.numel()].view(q.shape), None)


def test_lse_merges_partial_attentions_into_the_whole():
    """lse is the natural log-sum-exp: attention over a sequence's first blocks and over
    the rest, merged by their lse (as cascade / split-KV serving does), is the attention
    over the whole."""
    D, BS = 64, 16
    q, kc, vc, bt, sl = make(1, 8, 2, D, BS, [300])
    op = PagedDecodeAttentionFwdOp(D, BS)
    whole = op(q, kc, vc, bt, sl)
    first = torch.tensor([160], dtype=torch.int32)
    o1, l1 = op(q, kc, vc, bt[:, :10].contiguous(), first, return_lse=True)
    o2, l2 = op(q, kc, vc, bt[:, 10:].contiguous(), sl - first, return_lse=True)
    w1, w2 = torch.sigmoid((l1 - l2)).unsqueeze(-1), torch.sigmoid((l2 - l1)).unsqueeze(-1)
    torch.testing.assert_close(o1 * w1 + o2 * w2, whole, rtol=1e-5, atol=1e-6)
