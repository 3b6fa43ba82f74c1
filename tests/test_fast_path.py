"""The eager fast path (the body run directly, no dispatcher) is indistinguishable from the
operator path: same outputs, same errors and messages, same writes and version counters;
and it is not taken where it must not be."""
import contextlib

import pytest
import torch

import toy_ops
from dispatch_spy import Spy
from helpers import as_tuple, assert_outputs_match, clone_call
from tileops.norm import RMSNormFwdOp


def forced_operator_path(fn):
    """Runs fn with a no-op dispatch mode active, which rules the fast path out."""
    with Spy() as s:
        out = fn()
    assert s.calls, "the call did not go through the operator"
    return out


@contextlib.contextmanager
def operator_calls(cls):
    """The list of the calls that cls's generated `_call_boundary` makes to its operators
    (`_op_<branch>`) while the block runs: empty where every call took the fast path."""
    ns = cls._boundary
    saved = {k: v for k, v in ns.items() if k.startswith("_op_")}
    seen = []

    def recording(name, operator):
        return lambda *a: seen.append(name) or operator(*a)
    ns.update({k: recording(k, v) for k, v in saved.items()})
    try:
        yield seen
    finally:
        ns.update(saved)


CASES = [
    ("scale", lambda: toy_ops.ToyScaleOp(3.0), lambda: ((torch.randn(3, 4), 0.5), {})),
    ("scale_inplace", lambda: toy_ops.ToyScaleOp(3.0), lambda: ((torch.randn(3, 4), 0.5), {"inplace": True})),
    ("scale_inplace_noncontig", lambda: toy_ops.ToyScaleOp(3.0), lambda: ((torch.randn(4, 3).t(), 0.5), {"inplace": True})),
    ("accumulate", lambda: toy_ops.ToyAccumulateOp(), lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {})),
    ("add", lambda: toy_ops.ToyAddOp(), lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {})),
    ("add_out", lambda: toy_ops.ToyAddOp(), lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {"out": torch.empty(3, 4)})),
    ("add_out_noncontig", lambda: toy_ops.ToyAddOp(), lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {"out": torch.empty(4, 3).t()})),
    ("stats", lambda: toy_ops.ToyNormStatsOp(), lambda: ((torch.randn(3, 4),), {})),
    ("stats_rstd", lambda: toy_ops.ToyNormStatsOp(), lambda: ((torch.randn(3, 4),), {"return_rstd": True})),
    ("swap", lambda: toy_ops.ToySwapOp(), lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {})),
    ("rms_norm", lambda: RMSNormFwdOp((64,)), lambda: ((torch.randn(3, 64), torch.randn(64)), {})),
    ("rms_norm_bf16", lambda: RMSNormFwdOp((64,)), lambda: ((torch.randn(3, 64, dtype=torch.bfloat16), None), {})),
    ("rms_norm_noncontig", lambda: RMSNormFwdOp((64,)), lambda: ((torch.randn(64, 3).t(),), {})),
    # contiguous by is_contiguous(), strides not torch.empty's (a size-1 dim's stride is free)
    ("rms_norm_unit_rows", lambda: RMSNormFwdOp((64,)),
     lambda: ((torch.randn(64).as_strided((1, 64), (1, 1)), torch.randn(64)), {})),
]


def _tensors(args, kwargs):
    return [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]


@pytest.mark.parametrize("name,make_op,make_args", CASES, ids=[c[0] for c in CASES])
def test_fast_path_equals_operator_path(name, make_op, make_args):
    torch.manual_seed(0)
    args, kwargs = make_args()
    args2, kwargs2 = clone_call(args, kwargs)
    op1, op2 = make_op(), make_op()
    v1 = [t._version for t in _tensors(args, kwargs)]
    with operator_calls(type(op1)) as seen:
        fast = op1(*args, **kwargs)
    assert not seen, "a plain eager call went through the operator"
    slow = forced_operator_path(lambda: op2(*args2, **kwargs2))
    assert_outputs_match(fast, slow, _identical)
    fo, so = as_tuple(fast), as_tuple(slow)
    t1, t2 = _tensors(args, kwargs), _tensors(args2, kwargs2)
    for a, b in zip(t1, t2):
        assert torch.equal(a, b), "written inputs differ between the paths"
    assert [t._version for t in t1] == [t._version for t in t2], "version counters differ"
    # alias results are the caller's tensors in both paths
    for f, s_ in zip(fo, so):
        if f is not None:
            assert any(f is t for t in t1) == any(s_ is t for t in t2)
    assert any(v != t._version for v, t in zip(v1, t1)) == any(
        n in name for n in ("inplace", "accumulate", "out", "swap"))


def test_new_outputs_have_torch_empty_strides_whatever_the_inputs():
    """The kit allocates an output shaped as an input with empty_like(contiguous_format)
    (half torch.empty's cost): the result is contiguous with torch.empty's strides, in the
    output's own dtype, never a view of the input, whatever the input's strides."""
    from tileops.sampling import SoftmaxFwdOp
    x = torch.empty_strided((1, 64), (1, 1)).normal_()
    y = RMSNormFwdOp((64,))(x)
    assert y.stride() == (64, 1) and y.data_ptr() != x.data_ptr()
    logits = torch.randn(8, 3, dtype=torch.bfloat16).t()          # not contiguous: copied first
    p = SoftmaxFwdOp(torch.float32)(logits)
    assert p.dtype == torch.float32 and p.shape == (3, 8) and p.stride() == (8, 1)
    torch.testing.assert_close(p, torch.softmax(logits.float(), -1))


ERRORS = [
    (lambda: RMSNormFwdOp((64,)), lambda: (torch.zeros(2, 64, dtype=torch.int32),)),
    (lambda: RMSNormFwdOp((64,)), lambda: (torch.zeros(2, 63),)),
    (lambda: RMSNormFwdOp((64,)), lambda: (torch.zeros(2, 64), torch.zeros(64, dtype=torch.float64))),
    (lambda: toy_ops.ToyAddOp(), lambda: (torch.zeros(2, 3), torch.zeros(2, 4))),
]


@pytest.mark.parametrize("make_op,make_args", ERRORS)
def test_same_exceptions_and_messages(make_op, make_args):
    args = make_args()
    with pytest.raises(Exception) as fast:
        make_op()(*args)
    with pytest.raises(Exception) as slow:
        forced_operator_path(lambda: make_op()(*args))
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)


def _identical(f, s):
    assert torch.equal(f, s) and f.stride() == s.stride() and f.dtype == s.dtype


def test_fast_path_skips_the_dispatcher_in_plain_eager():
    op = RMSNormFwdOp((64,))
    x = torch.randn(2, 64)
    # a plain call never reaches the operator: its impl runs directly
    with operator_calls(RMSNormFwdOp) as seen:
        op(x)
        assert not seen
        with torch.enable_grad():
            op(x.requires_grad_())
        assert len(seen) == 1, "autograd recording must go through the operator"


def test_fast_path_not_taken_under_modes_meta_subclasses_and_transforms():
    op = RMSNormFwdOp((64,))
    with operator_calls(RMSNormFwdOp) as seen:
        x = torch.randn(2, 64)
        op(torch.empty(2, 64, device="meta"))                 # meta tensors
        assert len(seen) == 1
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as m:                            # dispatch mode
            op(m.from_tensor(x))
        assert len(seen) == 2
        from torch.overrides import TorchFunctionMode

        class TF(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        with TF():                                             # function mode
            op(x)
        assert len(seen) == 3
        with torch.enable_grad():                              # autograd recording
            op(torch.randn(2, 64, requires_grad=True))
        assert len(seen) == 4

        class Sub(torch.Tensor):
            pass
        op(x.as_subclass(Sub))                                 # tensor subclass
        assert len(seen) == 5
        try:                                                   # functorch transform
            torch.func.grad(lambda t: op(t).sum())(torch.randn(2, 64))
        except Exception:
            pass
        assert len(seen) == 6
