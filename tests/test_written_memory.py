"""What a call writes may be written, and shares no memory with what it reads (the
generated boundary's _apart, in C for the common case: _C.apart; the CPU plans' out= replay
too). Each case here gave a wrong result with no error before session 48: a kernel that
reads an element another thread (or the same loop, later) has already overwritten. torch's
rules are the model: a partial overlap of a written tensor with an input is refused, an
out= that is exactly an input is allowed (filled through a temporary here, so every op
gets it right), an inference tensor is not updated outside inference mode, and an
expanded tensor (several elements at one address) is not written. Also the messages of
found-by-review inputs: 1-d logits, an empty embedding table, a rope call of no token."""
import pytest
import torch
import torch.nn.functional as F

import tileops.functional as TF
from tileops.attention import KVCacheWriteFwdOp
from tileops.embedding import EmbeddingFwdOp
from tileops.errors import InputTypeError, InputValueError
from tileops.ops import plans
from tileops.positional import RopeCosSinCacheFwdOp
from tileops.reference.positional import rope as rope_ref
from tileops.sampling import ArgmaxFwdOp, SampleFromProbsFwdOp, SoftmaxFwdOp, TopKFwdOp, TopKTopPMaskFwdOp

OVERLAP = r"overlaps argument|shares memory with argument"


@pytest.mark.parametrize("fn", [TF.fused_add_rms_norm, TF.fused_add_layer_norm])
def test_a_fused_add_in_place_refuses_x_and_residual_sharing_memory(fn):
    w = torch.randn(16)
    x = torch.randn(4, 16)
    with pytest.raises(InputValueError, match=r"'x': it shares memory with argument 'residual'"):
        fn(x, x, w, inplace=True)
    buf = torch.randn(5, 16)
    before = buf.clone()
    with pytest.raises(InputValueError, match=OVERLAP):
        fn(buf[:4], buf[1:], w, inplace=True)   # rows overlapping by three
    assert torch.equal(buf, before)             # refused before anything is written
    with pytest.raises(InputValueError, match=r"'x': it overlaps argument 'weight'"):
        fn(buf[:1], buf[1:2], buf[0], inplace=True)


def test_a_fused_add_out_of_place_still_takes_the_same_tensor_twice():
    """Nothing is written in place: x + x is read twice and both outputs are new."""
    x, w = torch.randn(4, 16), torch.randn(16)
    y, h = TF.fused_add_rms_norm(x, x, w, 1e-6)
    assert torch.equal(h, x + x)
    torch.testing.assert_close(y, F.rms_norm(x + x, (16,), w, 1e-6))


def _cache(rotary_dim=8, max_position=16):
    return RopeCosSinCacheFwdOp(base=10000.0, rotary_dim=rotary_dim, max_position=max_position)()


def test_rope_in_place_refuses_q_and_k_sharing_memory():
    cs, pos = _cache(), torch.tensor([1, 2, 3])
    q = torch.randn(3, 2, 8)
    before = q.clone()
    with pytest.raises(InputValueError, match=r"'q': it shares memory with argument 'k'"):
        TF.rope(q, q, pos, cs, 8, 8, inplace=True)
    packed = torch.randn(3, 4, 8)
    with pytest.raises(InputValueError, match=OVERLAP):
        TF.rope(packed[:, :3], packed[:, 2:], pos, cs, 8, 8, inplace=True)   # head 2 in both
    # distinct heads of one packed tensor are fine, and written through the views
    qs, ks = packed[:, :2], packed[:, 2:]
    want_q, want_k = rope_ref(qs.clone(), ks.clone(), pos, cs, head_size=8, rotary_dim=8, is_neox=True)
    TF.rope(qs, ks, pos, cs, 8, 8, inplace=True)
    torch.testing.assert_close(packed[:, :2], want_q)
    torch.testing.assert_close(packed[:, 2:], want_k)
    assert torch.equal(q, before)


def _overlapping_out_cases():
    buf = torch.randn(80)
    yield "rms_norm", lambda: TF.rms_norm(buf[:64].view(4, 16), None, out=buf[16:].view(4, 16))
    buf2 = torch.randn(120)
    yield "silu_and_mul", lambda: TF.silu_and_mul(buf2[:80].view(5, 16), out=buf2[40:80].view(5, 8))
    buf3 = torch.randn(40)
    yield "softmax", lambda: SoftmaxFwdOp()(buf3[:30].view(3, 10), out=buf3[10:].view(3, 10))
    table = torch.randn(8, 4)
    yield "embedding", lambda: EmbeddingFwdOp()(torch.tensor([0, 1, 2, 3]), table, out=table[4:])


@pytest.mark.parametrize("name,call", list(_overlapping_out_cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_an_out_that_partly_overlaps_an_input_is_refused(name, call):
    with pytest.raises(InputValueError, match=r"argument 'out': it overlaps argument"):
        call()


def test_an_overlapping_out_is_refused_after_a_plan_was_recorded_for_its_signature():
    """The CPU plan of an out= call replays in C without the Python path: it must not
    write an out that shares memory with an input either (it leaves the call to Python)."""
    x, o = torch.randn(4, 16), torch.empty(4, 16)
    for _ in range(3):
        TF.rms_norm(x, None, out=o)   # recorded, then replayed
    buf = torch.randn(80)
    xs = buf[:64].view(4, 16)
    assert plans.key((xs, None), buf[16:].view(4, 16)) == plans.key((x, None), o)   # the plan's signature
    with pytest.raises(InputValueError, match=r"argument 'out': it overlaps argument 'x'"):
        TF.rms_norm(xs, None, out=buf[16:].view(4, 16))


def test_an_out_that_is_exactly_an_input_is_filled_correctly():
    torch.manual_seed(0)
    x = torch.randn(4, 1000)
    want = torch.softmax(x, -1)
    SoftmaxFwdOp()(x, out=x)
    torch.testing.assert_close(x, want)
    x = torch.randn(4, 1000)
    want = F.rms_norm(x, (1000,))
    TF.rms_norm(x, None, out=x)
    torch.testing.assert_close(x, want)
    table, ids = torch.randn(8, 4), torch.tensor([7, 6, 5, 4, 3, 2, 1, 0])
    want = table[ids]
    EmbeddingFwdOp()(ids, table, out=table)
    assert torch.equal(table, want)


def test_a_kv_cache_write_refuses_keys_that_are_a_view_of_the_cache():
    kc, vc = torch.zeros(2, 4, 1, 16), torch.zeros(2, 4, 1, 16)
    k = kc.view(8, 1, 16)[1:4]
    k.copy_(torch.randn(3, 1, 16))
    before = kc.clone()
    with pytest.raises(InputValueError, match=r"'key_cache': it overlaps argument 'k'"):
        KVCacheWriteFwdOp()(k, torch.randn(3, 1, 16), kc, vc, torch.tensor([2, 3, 4]))
    assert torch.equal(kc, before)


def test_an_inference_tensor_is_written_only_in_inference_mode():
    with torch.inference_mode():
        x, r, o = torch.randn(3, 8), torch.randn(3, 8), torch.empty(3, 8)
    with pytest.raises(InputValueError, match=r"'x': the call writes it, but it is an inference tensor"):
        TF.fused_add_rms_norm(x, r, None, inplace=True)
    plain = torch.randn(3, 8)
    for _ in range(3):
        TF.rms_norm(plain, None, out=torch.empty(3, 8))   # a plan for the signature
    with pytest.raises(InputValueError, match=r"'out': the call writes it, but it is an inference tensor"):
        TF.rms_norm(plain, None, out=o)
    with torch.inference_mode():   # where it may
        y, h = TF.fused_add_rms_norm(x, r, None, inplace=True)
        assert y is x and h is r
        for _ in range(3):
            TF.rms_norm(x, None, out=o)
        torch.testing.assert_close(o, F.rms_norm(x, (8,)))


def test_a_leaf_requiring_grad_is_not_written_and_nothing_is():
    """torch refuses to update a leaf that requires grad (or a view of one) in place; so
    does every writing branch, before its kernel writes anything (found by review: the
    caches and the logits were written, then torch's bare RuntimeError raised)."""
    from tileops.errors import BackwardError
    kc, vc = torch.zeros(2, 4, 1, 8, requires_grad=True), torch.zeros(2, 4, 1, 8)
    with pytest.raises(BackwardError, match=r"KVCacheWriteFwdOp: argument 'key_cache': the call writes it in "
                                            r"place, but it is a leaf tensor that requires grad"):
        KVCacheWriteFwdOp()(torch.ones(1, 1, 8), torch.ones(1, 1, 8), kc, vc, torch.tensor([0]))
    assert not kc.detach().any() and not vc.any()
    logits = torch.randn(2, 10, requires_grad=True)
    before = logits.detach().clone()
    with pytest.raises(BackwardError, match=r"TopKTopPMaskFwdOp: argument 'logits': .* a leaf tensor that requires"):
        TopKTopPMaskFwdOp()(logits, torch.tensor([2, 2]), None, inplace=True)
    assert torch.equal(logits.detach(), before)
    base = torch.randn(4, 16, requires_grad=True)
    before = base.detach().clone()
    with pytest.raises(BackwardError, match=r"FusedAddRMSNormFwdOp: argument 'x': .* a view of a leaf tensor"):
        TF.fused_add_rms_norm(base[:2], torch.randn(2, 16), None, inplace=True)
    assert torch.equal(base.detach(), before)
    with torch.no_grad():   # where torch allows it, so does the op
        TopKTopPMaskFwdOp()(logits, torch.tensor([2, 2]), None, inplace=True)
    assert int(torch.isinf(logits.detach()).sum()) == 2 * 8


def test_an_expanded_tensor_is_not_written():
    x, r = torch.randn(1, 16).expand(4, 16), torch.randn(4, 16)
    before = r.clone()
    with pytest.raises(InputValueError, match=r"'x': the call writes it, but several of its elements share memory"):
        TF.fused_add_rms_norm(x, r, None, inplace=True)
    assert torch.equal(r, before)


def test_c_apart_tells_apart_strided_views_and_defers_the_rest():
    a, b, c = torch.randn(4, 8), torch.randn(4, 8), torch.randn(8)
    assert plans.apart((a, b), (c, None)) is False
    assert plans.apart((a,), (a,)) is True                    # the same tensor: Python decides
    assert plans.apart((a[:2],), (a[1:],)) is True            # rows shared
    assert plans.apart((a[:2],), (a[2:],)) is False           # adjacent, apart
    assert plans.apart((a.t(),), (b,)) is False               # strided, apart
    packed = torch.randn(5, 6, 8)                              # [T, q heads 0-3 | k heads 4-5, D]
    assert plans.apart((packed[:, :4], packed[:, 4:]), ()) is False   # views of one qkv row, apart
    assert plans.apart((packed[:, :4],), (packed[:, 3:5],)) is True   # head 3 in both
    assert plans.apart((packed[:, :4, :4],), (packed[:, :4, 4:],)) is True   # interleaved: not told apart
    assert plans.apart((torch.empty(0),), (a,)) is False
    assert plans.apart((torch.randn(1, 8).expand(3, 8),), ()) is True       # written, expanded
    assert plans.apart((), (torch.randn(1, 8).expand(3, 8),)) is False      # read, expanded: fine
    with torch.inference_mode():
        i = torch.randn(3)
        assert plans.apart((i,), ()) is False                 # in inference mode it may be written
    assert plans.apart((i,), ()) is True


@pytest.mark.parametrize("call", [
    lambda x: SoftmaxFwdOp()(x), lambda x: ArgmaxFwdOp()(x), lambda x: TopKFwdOp(k=2)(x),
    lambda x: TopKTopPMaskFwdOp()(x), lambda x: SampleFromProbsFwdOp()(x.abs(), x.abs())])
@pytest.mark.parametrize("shape", [(10,), ()])
def test_the_sampling_ops_name_the_rank_of_1d_or_0d_logits(call, shape):
    with pytest.raises(InputValueError, match=r"shape rule `(logits|probs)\.ndim == 2` does not hold"):
        call(torch.randn(shape))


def test_the_found_messages_name_the_argument_at_fault():
    with pytest.raises(InputValueError, match=r"argument 'ids': .*ids\[0\] = 0 is outside \[0, 0\)"):
        TF.embedding(torch.tensor([0]), torch.randn(0, 4))
    q, k = TF.rope(torch.randn(0, 1, 8), torch.randn(0, 1, 8), torch.arange(0), torch.randn(0, 8), 8, 8)
    assert q.shape == (0, 1, 8) and k.shape == (0, 1, 8)   # no token: nothing to look up
    with pytest.raises(InputValueError, match=r"argument 'positions': .*positions\[0\] = 0 is outside \[0, 0\)"):
        TF.rope(torch.randn(1, 1, 8), torch.randn(1, 1, 8), torch.tensor([0]), torch.randn(0, 8), 8, 8)
    with pytest.raises(InputValueError, match=r"argument 'q'"):
        TF.rope(torch.randn(1, 2, 8).expand(3, 2, 8), torch.randn(3, 1, 8), torch.tensor([0, 1, 2]),
                _cache(), 8, 8, inplace=True)
    with pytest.raises(InputTypeError, match=r"RMSNormFwdOp: argument 'x': expected a Tensor, got list"):
        TF.rms_norm([[1.0] * 8], None)
    with pytest.raises(InputTypeError, match=r"LayerNormFwdOp: argument 'weight': expected a Tensor or None"):
        TF.layer_norm(torch.randn(2, 8), [1.0] * 8)


def test_the_modules_check_their_arguments():
    import tileops.nn as tnn
    for bad in (-5, 4, 1.5):
        with pytest.raises(InputValueError, match=r"Embedding: argument 'padding_idx': expected an int in \[-4, 4\)"):
            tnn.Embedding(4, 3, padding_idx=bad)
    assert tnn.Embedding(4, 3, padding_idx=-1).padding_idx == 3
    rot = tnn.RotaryEmbedding(8, max_position=16)
    with pytest.raises(InputValueError, match=r"RotaryEmbedding: argument 'query': expected \[T, H, 8\]"):
        rot(torch.arange(3), torch.randn(3, 12), torch.randn(3, 8))


def test_an_overlap_is_refused_under_torch_compile_too():
    op = TF.fused_add_rms_norm
    compiled = torch.compile(lambda x, r, w: op(x, r, w, inplace=True), fullgraph=True, backend="eager")
    x, w = torch.randn(4, 16), torch.randn(16)
    r = torch.randn(4, 16)
    compiled(x, r, w)   # traced and run once
    with pytest.raises(InputValueError, match=r"shares memory with argument 'residual'"):
        compiled(x, x, w)


def _bytes_of(t, base):
    """The set of byte offsets (from base's first) that t's elements occupy."""
    off = t.data_ptr() - base.data_ptr()
    es = t.element_size()
    idx = torch.zeros((), dtype=torch.long)
    for n, st in zip(t.shape, t.stride()):
        idx = (idx.unsqueeze(-1) + torch.arange(n) * st).reshape(-1)
    return {off + es * int(i) + b for i in idx.reshape(-1).tolist() for b in range(es)}


def _nested(t) -> bool:
    """Whether each stride of t, smallest first, passes the extent of the dims inside it
    (so no two elements share an address: _C.apart's fast test); an empty t: True."""
    if not t.numel():
        return True
    inner = 1
    for st, n in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n > 1):
        if st < inner:
            return False
        inner += (n - 1) * st
    return True


def test_c_apart_never_calls_views_that_share_a_byte_apart():
    """Random strided views of one float32 buffer (sizes 0-4 in up to 3 dims, strides 0-40,
    random offsets; the written one with strides nested: no two elements at one address;
    one whose strides do not nest is always looked at again, by the exact Python test): wherever
    _C.apart answers False, the two views' bytes are disjoint (brute force); and views
    apart by span are always told apart."""
    g = torch.Generator().manual_seed(48)
    base = torch.zeros(4096)
    told_apart = 0
    for _ in range(3000):
        views = []
        for _ in range(2):
            nd = int(torch.randint(1, 4, (), generator=g))
            shape = torch.randint(0, 5, (nd,), generator=g).tolist()
            stride = torch.randint(0, 41, (nd,), generator=g).tolist()
            off = int(torch.randint(0, 300, (), generator=g))
            views.append(base.as_strided(shape, stride, off))
        a, b = views
        if not _nested(a):   # two of its elements may share an address: always looked at again (Python)
            assert plans.apart((a,), ())
            continue
        apart = plans.apart((a,), (b,))
        sa, sb = _bytes_of(a, base), _bytes_of(b, base)
        if not apart:
            told_apart += 1
            assert not (sa & sb), (a.shape, a.stride(), a.storage_offset(), b.shape, b.stride(), b.storage_offset())
        if sa and sb and (max(sa) < min(sb) or max(sb) < min(sa)):
            assert not apart
    assert told_apart > 300
