"""KVCacheWriteFwdOp beyond the generic driver: vLLM's convention written out (block
s // block_size, offset s % block_size), negative slots skipped, a slot out of range on
the CPU (a clear error naming the token and the value, nothing written), the caches never
copied (written where they lie, also as the two halves of one [2, ...] tensor; a
non-contiguous or overlapping cache refused), a block shared by several tokens' writes, k
and v as views into a packed qkv tensor, a compiled function that writes the cache and
then reads it, and the launchable kernel_for returns checking what C relies on."""
import pytest
import torch

from tileops.attention import KVCacheWriteFwdOp
from tileops.errors import InputTypeError, InputValueError

from helpers import compile_keeping_graphs
from compile_contract import graph_targets

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def vllm_style(k, v, key_cache, value_cache, slot_mapping):
    """What reshape_and_cache_flash does, token by token, on copies of the caches."""
    kc, vc = key_cache.clone(), value_cache.clone()
    bs = kc.shape[1]
    for t, s in enumerate(slot_mapping.tolist()):
        if s < 0:
            continue
        kc[s // bs, s % bs] = k[t]
        vc[s // bs, s % bs] = v[t]
    return kc, vc


def caches(nb, bs, h, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(nb, bs, h, d, generator=g).to(dtype), torch.randn(nb, bs, h, d, generator=g).to(dtype))


def kv(t, h, d, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(t, h, d, generator=g).to(dtype), torch.randn(t, h, d, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slot_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("bs", [16, 3])
def test_matches_vllm_block_and_offset_and_skips_negative_slots(dtype, slot_dtype, bs):
    nb, h, d = 6, 2, 24
    kc, vc = caches(nb, bs, h, d, dtype)
    k, v = kv(9, h, d, dtype)
    slots = torch.randperm(nb * bs, generator=torch.Generator().manual_seed(2))[:9]
    slots[[1, 4]] = torch.tensor([-1, -5])
    slots = slots.to(slot_dtype)
    want_k, want_v = vllm_style(k, v, kc, vc, slots)
    assert KVCacheWriteFwdOp()(k, v, kc, vc, slots) is None
    assert torch.equal(kc, want_k) and torch.equal(vc, want_v)


def test_a_slot_out_of_range_is_an_error_that_writes_nothing_on_the_cpu():
    kc, vc = caches(4, 16, 2, 8, torch.float16)
    before_k, before_v = kc.clone(), vc.clone()
    k, v = kv(4, 2, 8, torch.float16)
    op = KVCacheWriteFwdOp()
    for bad in (64, 2**40):
        slots = torch.tensor([3, 0, bad, 7])
        with pytest.raises(InputValueError,
                           match=rf"KVCacheWriteFwdOp: argument 'slot_mapping'.*slot_mapping\[2\] = {bad} is outside "
                                 rf"\[0, 64\)"):
            op(k, v, kc, vc, slots)
        assert torch.equal(kc, before_k) and torch.equal(vc, before_v)   # token 0 not written either
    op(k, v, kc, vc, torch.tensor([3, 0, 63, 7]))   # the last slot is fine
    assert torch.equal(kc[3, 15], k[2])


def test_caches_of_no_slot_skip_negative_slots_and_refuse_the_others():
    """Caches of zero blocks (found by review: the CPU kernel called their NULL pointer an
    error): a negative slot skips its token, as on any cache, and any other is out of range."""
    kc, vc = caches(0, 16, 1, 8, torch.float32)
    k, v = kv(2, 1, 8, torch.float32)
    for target in ("builtin", "aten"):
        KVCacheWriteFwdOp(target=target)(k, v, kc, vc, torch.tensor([-1, -1]))
    with pytest.raises(InputValueError, match=r"slot_mapping\[1\] = 0 is outside \[0, 0\)"):
        KVCacheWriteFwdOp()(k, v, kc, vc, torch.tensor([-1, 0]))


def test_the_caches_are_written_in_place_never_copied():
    kv_cache = torch.zeros(2, 5, 16, 4, 32, dtype=torch.bfloat16)   # vLLM's flash layout: [2, num_blocks, ...]
    kc, vc = kv_cache[0], kv_cache[1]
    ptrs, versions = (kc.data_ptr(), vc.data_ptr()), (kc._version, vc._version)
    k, v = kv(3, 4, 32, torch.bfloat16)
    KVCacheWriteFwdOp()(k, v, kc, vc, torch.tensor([0, 17, 79]))
    assert (kc.data_ptr(), vc.data_ptr()) == ptrs and kc._version > versions[0] and vc._version > versions[1]
    assert torch.equal(kv_cache[0, 0, 0], k[0]) and torch.equal(kv_cache[0, 1, 1], k[1])
    assert torch.equal(kv_cache[1, 4, 15], v[2])
    assert int((kv_cache != 0).sum()) == 2 * 3 * 4 * 32 - int((k == 0).sum() + (v == 0).sum())


@pytest.mark.parametrize("which", ["key_cache", "value_cache"])
def test_a_non_contiguous_cache_is_refused_and_nothing_written(which):
    kc, vc = caches(4, 8, 2, 16, torch.float32)
    wide = torch.zeros(4, 8, 2, 32)
    strided = wide[..., :16]                       # a view of every other half row: not contiguous
    args = {"key_cache": kc, "value_cache": vc, which: strided}
    other = "value_cache" if which == "key_cache" else "key_cache"
    before = args[other].clone()
    k, v = kv(2, 2, 16, torch.float32)
    with pytest.raises(InputValueError, match=rf"KVCacheWriteFwdOp: argument '{which}': expected a contiguous tensor "
                                              rf"\(the op never copies it\)"):
        KVCacheWriteFwdOp()(k, v, args["key_cache"], args["value_cache"], torch.tensor([1, 2]))
    assert not wide.any() and torch.equal(args[other], before)


def test_overlapping_caches_are_refused():
    kc, _ = caches(4, 8, 2, 16, torch.float32)
    k, v = kv(2, 2, 16, torch.float32)
    with pytest.raises(InputValueError,
                       match="KVCacheWriteFwdOp: argument 'key_cache': it shares memory with argument 'value_cache'"):
        KVCacheWriteFwdOp()(k, v, kc, kc, torch.tensor([1, 2]))


def test_a_block_shared_by_several_tokens_keeps_its_other_offsets():
    bs = 16
    kc, vc = caches(3, bs, 2, 8, torch.float16)
    before_k, before_v = kc.clone(), vc.clone()
    k, v = kv(5, 2, 8, torch.float16)
    slots = torch.tensor([bs + 3, bs + 4, bs + 0, bs + 15, 2 * bs + 7])   # four tokens into block 1
    KVCacheWriteFwdOp()(k, v, kc, vc, slots)
    for t, off in enumerate([3, 4, 0, 15]):
        assert torch.equal(kc[1, off], k[t]) and torch.equal(vc[1, off], v[t])
    untouched = [o for o in range(bs) if o not in (3, 4, 0, 15)]
    assert torch.equal(kc[1, untouched], before_k[1, untouched]) and torch.equal(vc[1, untouched], before_v[1, untouched])
    assert torch.equal(kc[0], before_k[0]) and torch.equal(kc[2, 7], k[4])


def test_k_and_v_as_views_into_a_packed_qkv_tensor():
    T, H, Hk, D = 5, 4, 2, 16
    qkv = torch.randn(T, (H + 2 * Hk) * D + 3)
    k = qkv[:, H * D:(H + Hk) * D].view(T, Hk, D)
    v = qkv[:, (H + Hk) * D:(H + 2 * Hk) * D].view(T, Hk, D)
    assert not k.is_contiguous() and k.stride(-1) == 1
    kc, vc = caches(2, 8, Hk, D, torch.float32)
    slots = torch.tensor([0, 9, 3, -1, 15])
    want_k, want_v = vllm_style(k, v, kc, vc, slots)
    KVCacheWriteFwdOp()(k, v, kc, vc, slots)
    assert torch.equal(kc, want_k) and torch.equal(vc, want_v)
    kt = k.transpose(1, 2).contiguous().transpose(1, 2)   # channel stride != 1: copied, still right
    KVCacheWriteFwdOp()(kt, v, kc, vc, slots)
    assert torch.equal(kc, want_k)


def test_a_compiled_write_then_read_sees_the_new_rows_one_node_per_write():
    torch._dynamo.reset()
    op = KVCacheWriteFwdOp()

    def step(k, v, kc, vc, slots):
        op(k, v, kc, vc, slots)
        op(v, k, kc, vc, slots + 1)   # a second write, then a read of what both wrote
        return kc.sum(dim=(-1, -2)) + vc.sum(dim=(-1, -2))

    kc, vc = caches(2, 8, 2, 16, torch.float32)
    k, v = kv(3, 2, 16, torch.float32)
    slots = torch.tensor([0, 4, 10])
    e_kc, e_vc = kc.clone(), vc.clone()
    expected = step(k, v, e_kc, e_vc, slots)
    compiled, graphs = compile_keeping_graphs(step)
    got = compiled(k, v, kc, vc, slots)
    torch.testing.assert_close(got, expected)   # (inductor sums in another order)
    assert torch.equal(kc, e_kc) and torch.equal(vc, e_vc)
    names = [n for g in graphs for n in graph_targets(g) if n.startswith("tileops::")]
    assert names == ["tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache"] * 2


def test_the_launchable_checks_what_the_kernel_relies_on():
    op = KVCacheWriteFwdOp()
    kc, vc = caches(2, 4, 2, 8, torch.float32)
    k, v = kv(3, 2, 8, torch.float32)
    slots = torch.tensor([0, 5, 7])
    launch = op.kernel_for("kv_cache_write", k, v, kc, vc, slots)
    launch(k, v, kc, vc, slots)
    assert torch.equal(kc.view(-1, 2, 8)[5], k[1])
    with pytest.raises(InputValueError, match="'slot_mapping'"):
        launch(k, v, kc, vc, slots.int())
    with pytest.raises(InputValueError, match="'k'"):
        launch(k[:2], v, kc, vc, slots)
    with pytest.raises(InputValueError, match="'value_cache'"):
        launch(k, v, kc, vc[:1], slots)
    with pytest.raises(InputValueError, match="'key_cache'"):
        launch(k, v, kc.transpose(0, 1), vc, slots)
    with pytest.raises(InputTypeError, match="'v'"):
        launch(k, "v", kc, vc, slots)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(kc.view(-1, 2, 8)[:3], v, kc, vc, slots)


@pytest.mark.parametrize("halves", [False, True])
def test_compiled_the_caches_are_not_copied_either(halves):
    """Inductor's code calls the operator on the caches themselves (or on views of the one
    [2, ...] tensor), with no clone or copy of a cache around it."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    op = KVCacheWriteFwdOp()
    kv_cache = torch.zeros(2, 8, 16, 2, 32)
    k, v = kv(3, 2, 32, torch.float32)
    slots = torch.tensor([1, 70, 127])
    if halves:
        def f(k, v, kv_cache, slots):
            op(k, v, kv_cache[0], kv_cache[1], slots)
        args = (k, v, kv_cache, slots)
    else:
        def f(k, v, kc, vc, slots):
            op(k, v, kc, vc, slots)
        kc, vc = kv_cache[0].clone(), kv_cache[1].clone()
        args = (k, v, kc, vc, slots)
    _, codes = run_and_get_code(torch.compile(f, fullgraph=True), *args)
    code = "\n".join(codes)
    assert "attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache" in code
    assert "clone" not in code and "copy_" not in code, code
    written = kv_cache if halves else torch.stack(args[2:4])
    assert torch.equal(written[0].view(-1, 2, 32)[70], k[1]) and torch.equal(written[1].view(-1, 2, 32)[127], v[2])
