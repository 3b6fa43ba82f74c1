"""Plans (tileops/ops/plans.py): an eager CPU call of an op that declares plan_kernel is
replayed in C from the plan its first call of that signature recorded. The replay must be
the Python path exactly: the same bits, the same outputs (new, contiguous, of the same
dtype), and every call the fast path would not take (autograd, a subclass, meta or lazy
tensors, modes, a tracer) or that it would copy (non-contiguous inputs) goes the Python
way, as does anything that changes what the plan was recorded for (a param, the target,
the shapes, the dtype, the alignment)."""
import pytest
import torch
import torch.nn.functional as F

from tileops.errors import BackwardError, InputTypeError, InputValueError
from tileops.activation import GeluAndMulFwdOp, GeluTanhAndMulFwdOp, SiluAndMulFwdOp
from tileops.embedding import EmbeddingFwdOp
from tileops.norm import FusedAddLayerNormFwdOp, FusedAddRMSNormFwdOp, GemmaRMSNormFwdOp, LayerNormFwdOp, RMSNormFwdOp
from tileops.ops import plans


def _inputs(name, T, H, dtype, g):
    x = torch.randn(T, H, generator=g).to(dtype)
    w = (torch.rand(H, generator=g) + 0.5).to(dtype)
    b = torch.randn(H, generator=g).to(dtype)
    r = torch.randn(T, H, generator=g).to(dtype)
    return {"layer_norm": (x, w, b), "fused_add_layer_norm": (x, r, w, b), "fused_add_rms_norm": (x, r, w),
            "gemma_rms_norm": (x, w), "rms_norm": (x, w)}[name]


OPS = [(LayerNormFwdOp, "layer_norm"), (FusedAddLayerNormFwdOp, "fused_add_layer_norm"),
       (FusedAddRMSNormFwdOp, "fused_add_rms_norm"), (GemmaRMSNormFwdOp, "gemma_rms_norm"),
       (RMSNormFwdOp, "rms_norm")]


def _as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def _planned(op, inputs):
    """The plan's replay of these inputs (not a sentinel), or the sentinel."""
    return plans.plan_call(op._memo, *inputs)


@pytest.mark.parametrize("cls,name", OPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("T,H", [(1, 4096), (3, 100), (0, 64)])
def test_the_second_call_replays_the_first_bit_for_bit(cls, name, dtype, T, H):
    assert cls.plan_kernel == name
    g = torch.Generator().manual_seed(T * 7 + H)
    inputs = _inputs(name, T, H, dtype, g)
    op = cls((H,))
    assert _planned(op, inputs) is plans.MISS              # nothing recorded yet
    first = _as_tuple(op(*inputs))                         # the Python path, which records
    again = _planned(op, inputs)
    assert again is not plans.MISS and again is not plans.SKIP
    again = _as_tuple(again)
    third = _as_tuple(op(*inputs))                         # through the boundary: the plan
    fresh = _as_tuple(cls((H,))(*inputs))                  # another instance's Python path
    for a, b, c, d in zip(first, again, third, fresh):
        assert a.dtype == b.dtype == c.dtype == d.dtype == dtype and a.shape == b.shape == c.shape
        assert b.is_contiguous() and c.is_contiguous()
        assert torch.equal(a, b) and torch.equal(a, c) and torch.equal(a, d)
        if a.numel():                                      # new outputs each call
            assert b.data_ptr() != a.data_ptr() and c.data_ptr() != b.data_ptr()
    for t in inputs:                                       # the inputs are read, not written
        assert t.is_contiguous()


def test_a_plan_is_the_reference_s_layer_norm():
    g = torch.Generator().manual_seed(1)
    x, w, b = _inputs("layer_norm", 2, 4096, torch.float32, g)
    op = LayerNormFwdOp((4096,))
    op(x, w, b)
    y = _planned(op, (x, w, b))
    torch.testing.assert_close(y.double(), F.layer_norm(x.double(), (4096,), w.double(), b.double(), 1e-5),
                               rtol=1e-5, atol=1e-5)
    # optional inputs absent: their own signature, their own plan
    y0 = op(x, None, None)
    assert _planned(op, (x, None, None)) is not plans.MISS
    assert torch.equal(op(x, None, None), y0)


def test_what_the_fast_path_would_not_take_goes_the_python_way():
    g = torch.Generator().manual_seed(2)
    x, w, b = _inputs("layer_norm", 2, 64, torch.float32, g)
    op = LayerNormFwdOp((64,))
    want = op(x, w, b)
    assert _planned(op, (x, w, b)) is not plans.MISS
    # autograd records: SKIP, and the Python path gives the output whose backward raises
    wg = w.clone().requires_grad_()
    assert _planned(op, (x, wg, b)) is plans.SKIP
    y = op(x, wg, b)
    assert y.requires_grad and torch.equal(y.detach(), want)
    with pytest.raises(BackwardError):
        y.sum().backward()
    with torch.no_grad():      # grad mode off: a plain call, replayed
        assert torch.equal(_planned(op, (x, wg, b)), want)
    # a subclass, a meta tensor, a lazily negated view, a non-contiguous input
    class Sub(torch.Tensor):
        pass
    assert _planned(op, (x.as_subclass(Sub), w, b)) is plans.SKIP
    assert _planned(op, (x.to("meta"), w, b)) is plans.SKIP
    assert _planned(op, (x, torch._neg_view(w), b)) is plans.SKIP
    assert _planned(op, (x, torch._efficientzerotensor(64), b)) is plans.SKIP   # no memory to read
    assert torch.equal(op(x, torch._efficientzerotensor(64), b), op(x, torch.zeros(64), b))
    xt = torch.randn(64, 2, generator=g).t()
    assert _planned(op, (xt, w, b)) is plans.SKIP
    assert torch.equal(op(xt, w, b), op(xt.contiguous(), w, b))
    # a torch-function mode is active: SKIP
    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    with Mode():
        assert _planned(op, (x, w, b)) is plans.SKIP


def test_a_param_the_shapes_the_dtype_or_the_alignment_change_the_plan():
    g = torch.Generator().manual_seed(3)
    x, w, b = _inputs("layer_norm", 4, 64, torch.float32, g)
    op = LayerNormFwdOp((64,))
    op(x, w, b)
    assert _planned(op, (x, w, b)) is not plans.MISS
    op.eps = 0.5                                           # a param assigned: the memo and its plans dropped
    assert _planned(op, (x, w, b)) is plans.MISS
    y = op(x, w, b)
    torch.testing.assert_close(y, F.layer_norm(x, (64,), w, b, 0.5), rtol=1e-5, atol=1e-5)
    assert torch.equal(_planned(op, (x, w, b)), y)
    assert _planned(op, (x[:2], w, b)) is plans.MISS      # other shapes
    assert _planned(op, (x.double(), w.double(), b.double())) is plans.MISS
    buf = torch.empty(4 * 64 + 1)
    xs = buf[1:].view(4, 64)                               # contiguous, 4 bytes off 16
    xs.copy_(x)
    assert xs.data_ptr() % 16 and _planned(op, (xs, w, b)) is plans.MISS
    assert torch.equal(op(xs, w, b), y) and torch.equal(_planned(op, (xs, w, b)), y)


def test_a_failing_call_records_nothing_and_raises_as_before():
    g = torch.Generator().manual_seed(4)
    x, w, b = _inputs("layer_norm", 2, 64, torch.float32, g)
    op = LayerNormFwdOp((64,))
    with pytest.raises(InputValueError, match="LayerNormFwdOp"):
        op(x, w[:32], b)
    assert not any(k[0] is plans.MISS for k in op._memo if isinstance(k, tuple) and k)
    assert _planned(op, (x, w[:32], b)) is plans.MISS


def test_the_in_place_branch_is_never_planned_and_out_gets_its_own_plan():
    g = torch.Generator().manual_seed(5)
    x, r, w = _inputs("fused_add_rms_norm", 2, 64, torch.float32, g)
    op = FusedAddRMSNormFwdOp((64,))
    y, ro = op(x, r, w)
    assert _planned(op, (x, r, w)) is not plans.MISS
    x2, r2 = x.clone(), r.clone()
    op(x2, r2, w, inplace=True)                            # the in-place branch: its own Python path
    assert torch.equal(x2, y) and torch.equal(r2, ro)
    ln = LayerNormFwdOp((64,))
    x, w, b = _inputs("layer_norm", 2, 64, torch.float32, g)
    out = torch.empty(2, 64)
    assert ln(x, w, b, out=out) is out
    assert _planned(ln, (x, w, b)) is plans.MISS           # an out= call records no allocating plan
    assert plans.plan_call_out(ln._memo, out, x, w, b) is out   # but its own
    assert torch.equal(ln(x, w, b), out)


@pytest.mark.parametrize("cls,name", [(LayerNormFwdOp, "layer_norm"), (GemmaRMSNormFwdOp, "gemma_rms_norm")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_an_out_call_replays_into_out_with_one_version_bump(cls, name, dtype):
    g = torch.Generator().manual_seed(11)
    inputs = _inputs(name, 3, 100, dtype, g)
    op = cls((100,))
    want = op(*inputs)
    out = torch.full((3, 100), float("nan"), dtype=dtype)
    assert plans.plan_call_out(op._memo, out, *inputs) is plans.MISS
    for i in range(3):                                     # the Python path records, then the plan
        out.fill_(float("nan"))
        v = out._version
        assert op(*inputs, out=out) is out
        assert torch.equal(out, want) and out._version == v + 1   # the op's one bump
    out.fill_(float("nan"))
    assert plans.plan_call_out(op._memo, out, *inputs) is out and torch.equal(out, want)
    other = torch.empty(3, 100, dtype=dtype)               # another out of the same signature: the same plan
    assert plans.plan_call_out(op._memo, other, *inputs) is other and torch.equal(other, want)


def test_an_out_the_plan_cannot_take_goes_the_python_way():
    g = torch.Generator().manual_seed(12)
    x, w, b = _inputs("layer_norm", 4, 64, torch.float32, g)
    op = LayerNormFwdOp((64,))
    want = op(x, w, b)
    out = torch.empty(4, 64)
    op(x, w, b, out=out)
    assert plans.plan_call_out(op._memo, out, x, w, b) is out
    wide = torch.empty(4, 128)[:, :64]                     # not contiguous: the Python path's copy back
    assert plans.plan_call_out(op._memo, wide, x, w, b) is plans.SKIP
    assert op(x, w, b, out=wide) is wide and torch.equal(wide, want)
    with pytest.raises(InputValueError, match="argument 'out'"):   # another shape: a MISS, then the error
        op(x, w, b, out=torch.empty(5, 64))
    with pytest.raises(InputTypeError, match="argument 'out'"):
        op(x, w, b, out=torch.empty(4, 64, dtype=torch.float16))
    xx = x.clone()                                          # out is an input: not for the plan
    assert plans.plan_call_out(op._memo, xx, xx, w, b) is plans.SKIP
    assert op(xx, w, b, out=xx) is xx and torch.equal(xx, want)
    leaf = torch.empty(4, 64, requires_grad=True)          # autograd: the Python path's error
    with pytest.raises(BackwardError):
        op(x, w, b, out=leaf)
    with torch.no_grad():                                  # no grad mode: written, as the Python path does
        assert op(x, w, b, out=leaf) is leaf and torch.equal(leaf, want)


def test_a_plan_never_outlives_its_launchable_s_recipe():
    # an instance on another target (the aten target: launchables of torch ops, no recipe)
    g = torch.Generator().manual_seed(6)
    x, w, b = _inputs("layer_norm", 2, 64, torch.float32, g)
    op = LayerNormFwdOp((64,), target="aten")
    y = op(x, w, b)
    assert _planned(op, (x, w, b)) is plans.SKIP           # recorded as "not for a plan"
    assert torch.equal(op(x, w, b), y)


def test_compiled_calls_never_reach_the_plan():
    g = torch.Generator().manual_seed(7)
    x, w, b = _inputs("layer_norm", 2, 64, torch.float32, g)
    op = LayerNormFwdOp((64,))
    eager = op(x, w, b)
    op(x, w, b)   # replayed

    @torch.compile(fullgraph=True, backend="eager")
    def f(x, w, b):
        return op(x, w, b) * 2
    torch.testing.assert_close(f(x, w, b), eager * 2, rtol=0, atol=0)


def test_plan_make_refuses_what_does_not_fit_the_kernel():
    from tileops import _C
    handle, fmt = _C.cpu_kernel("layer_norm")
    good = tuple((1, 0) if c == "p" else (0, 1) for c in fmt)
    assert _C.plan_make(handle, good, 3, 1, 0) is not None
    with pytest.raises(TypeError, match="plan_make.*takes"):
        _C.plan_make(handle, good[:-1], 3, 1, 0)                       # one item short
    with pytest.raises(ValueError, match="plan_make: item 0"):
        _C.plan_make(handle, ((2, 0, 1),) + good[1:], 3, 1, 0)        # a numel into a pointer
    with pytest.raises(ValueError, match="plan_make: item 0"):
        _C.plan_make(handle, ((1, 4),) + good[1:], 3, 1, 0)           # tensor 4 of 4
    with pytest.raises(ValueError, match="plan_make: item 0"):
        _C.plan_make(handle, ((7,),) + good[1:], 3, 1, 0)             # no such kind
    with pytest.raises(ValueError, match="plan_make: expected"):
        _C.plan_make(handle, good, 3, 0, 0)                            # no output
    with pytest.raises(ValueError, match="no CPU kernel"):
        _C.plan_make(10**6, good, 3, 1, 0)
    assert plans.plan_call({}, None) is plans.MISS                     # an empty memo: no plan


# ---- outputs not shaped like an input: the embedding and the gated activations ---------------

GATED = [(SiluAndMulFwdOp, "silu_and_mul", lambda a, b: F.silu(a) * b),
         (GeluAndMulFwdOp, "gelu_and_mul", lambda a, b: F.gelu(a) * b),
         (GeluTanhAndMulFwdOp, "gelu_tanh_and_mul", lambda a, b: F.gelu(a, approximate="tanh") * b)]


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("ids_shape", [(1,), (3,), (2, 5), (0,)])
def test_an_embedding_plan_allocates_its_recorded_shape(id_dtype, dtype, ids_shape):
    assert EmbeddingFwdOp.plan_kernel == "embedding"
    g = torch.Generator().manual_seed(11)
    w = torch.randn(50, 24, generator=g).to(dtype)
    ids = torch.randint(0, 50, ids_shape, generator=g, dtype=id_dtype)
    op = EmbeddingFwdOp()
    assert _planned(op, (ids, w)) is plans.MISS
    first = op(ids, w)                                      # the Python path, which records
    again = _planned(op, (ids, w))
    assert isinstance(again, torch.Tensor)
    third = op(ids, w)
    want = F.embedding(ids.long(), w)
    for y in (first, again, third):
        assert y.shape == ids_shape + (24,) and y.dtype == dtype and y.is_contiguous()
        assert torch.equal(y, want)
    if ids.numel():
        assert again.data_ptr() != first.data_ptr() and third.data_ptr() != again.data_ptr()
    assert _planned(op, (ids.new_zeros(7), w)) is plans.MISS                        # another shape
    assert _planned(op, (ids, w[:10])) is plans.MISS                                  # another table


def test_an_embedding_plan_leaves_a_bad_id_to_the_python_path_which_raises():
    w = torch.randn(10, 8)
    op = EmbeddingFwdOp()
    ok = torch.tensor([1, 2])
    op(ok, w)
    assert isinstance(_planned(op, (ok, w)), torch.Tensor)
    bad = torch.tensor([1, 10])                             # same signature, an id out of range
    assert _planned(op, (bad, w)) is plans.SKIP              # the kernel refused: nothing returned
    with pytest.raises(InputValueError, match=r"EmbeddingFwdOp: argument 'ids'.*= 10"):
        op(bad, w)
    assert torch.equal(op(ok, w), w[ok])                     # the plan still serves good ids


@pytest.mark.parametrize("cls,name,ref", GATED)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cast", [False, True])
def test_a_gated_plan_replays_the_python_path_bit_for_bit(cls, name, ref, dtype, cast):
    assert cls.plan_kernel == name
    g = torch.Generator().manual_seed(12)
    x = torch.randn(3, 2, 2 * 40, generator=g).to(dtype)
    op = cls(cast_before_mul=cast)
    first = op(x)
    again = _planned(op, (x,))
    assert isinstance(again, torch.Tensor) and again.shape == (3, 2, 40) and again.dtype == dtype
    assert torch.equal(first, again) and torch.equal(op(x), first)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(again.double(), ref(x[..., :40].double(), x[..., 40:].double()), rtol=tol, atol=tol)
    op.cast_before_mul = not cast                            # a param assigned: the plan dropped
    assert _planned(op, (x,)) is plans.MISS
    # a view with an odd last dimension's half: the Python path (non-contiguous), no plan
    xv = torch.randn(2, 2 * 40 + 2, generator=g).to(dtype)[:, 2:]
    assert _planned(op, (xv,)) is plans.SKIP
    assert torch.equal(op(xv), cls(cast_before_mul=not cast)(xv.contiguous()))
