"""Every effect branch: eager semantics, alias storage, compiled == eager, the fake matches
the real output, and torch.library.opcheck passes for every operator."""
import pytest
import torch

import toy_ops
from compile_contract import graph_targets
from dispatch_spy import Spy
from helpers import assert_outputs_match, clone, clone_call, compile_keeping_graphs
from tileops.norm import RMSNormFwdOp


def test_input_written_only_when_asked():
    op = toy_ops.ToyScaleOp(2.0)
    x = torch.randn(3, 4)
    x0 = x.clone()
    y = op(x, 0.5)
    torch.testing.assert_close(y, x0 * 1.0)
    assert torch.equal(x, x0), "the non-inplace branch wrote its input"
    r = op(x, 0.5, inplace=True)
    assert r is x and r.data_ptr() == x.data_ptr()
    torch.testing.assert_close(x, x0 * 1.0)


def test_input_written_every_call_and_alias_returned():
    op = toy_ops.ToyAccumulateOp()
    acc, x = torch.zeros(2, 3) + 1, torch.randn(2, 3)
    before = acc.clone()
    r = op(acc, x)
    assert r is acc
    torch.testing.assert_close(acc, before + x)


def test_out_branch_writes_out_and_returns_it():
    op = toy_ops.ToyAddOp()
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    out = torch.full((4, 5), float("nan"))
    r = op(a, b, out=out)
    assert r is out
    torch.testing.assert_close(out, a + b)


def test_out_must_match_the_output_and_nothing_is_written_on_error():
    op = toy_ops.ToyAddOp()
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    out = torch.full((4, 6), 7.0)
    with pytest.raises(ValueError, match="ToyAddOp: argument 'out': expected shape"):
        op(a, b, out=out)
    assert torch.all(out == 7.0)
    with pytest.raises(TypeError, match="argument 'out': expected dtype"):
        op(a, b, out=torch.zeros(4, 5, dtype=torch.float16))


def test_omittable_output():
    op = toy_ops.ToyNormStatsOp()
    x = torch.randn(3, 8)
    y = op(x)
    assert isinstance(y, torch.Tensor)
    y2, rstd = op(x, return_rstd=True)
    torch.testing.assert_close(y, y2)
    assert rstd.shape == (3,) and rstd.dtype == torch.float32


def test_two_written_inputs():
    op = toy_ops.ToySwapOp()
    a, b = torch.randn(3), torch.randn(3)
    a0, b0 = a.clone(), b.clone()
    assert op(a, b) is None
    assert torch.equal(a, b0) and torch.equal(b, a0)


def test_composite_graph_holds_its_sub_ops_nodes_only():
    op = toy_ops.ToyScaleAddOp(3.0)
    x, b = torch.randn(4, 4), torch.randn(4, 4)
    torch._dynamo.reset()
    f, graphs = compile_keeping_graphs(op)
    torch.testing.assert_close(f(x, b), op(x, b))
    targets = [t for g in graphs for t in graph_targets(g)]
    assert targets == ["tileops::toy_scale", "tileops::toy_add"]
    assert toy_ops.ToyScaleAddOp.compile_op_names == ()


def test_op_without_tensor_input_has_no_boundary_and_compiles_inline():
    op = toy_ops.ToyIotaOp(5)
    assert toy_ops.ToyIotaOp.compile_op_names == ()
    torch._dynamo.reset()
    f, graphs = compile_keeping_graphs(lambda: op())
    torch.testing.assert_close(f(), torch.arange(5, dtype=torch.float32))
    assert not any(t.startswith("tileops::") for g in graphs for t in graph_targets(g))


BRANCH_CALLS = [
    (toy_ops.ToyScaleOp, lambda: ((torch.randn(3, 4), 0.5), {})),
    (toy_ops.ToyScaleOp, lambda: ((torch.randn(3, 4), 0.5), {"inplace": True})),
    (toy_ops.ToyAccumulateOp, lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {})),
    (toy_ops.ToyAddOp, lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {})),
    (toy_ops.ToyAddOp, lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {"out": torch.empty(3, 4)})),
    (toy_ops.ToyNormStatsOp, lambda: ((torch.randn(3, 4),), {})),
    (toy_ops.ToyNormStatsOp, lambda: ((torch.randn(3, 4),), {"return_rstd": True})),
    (toy_ops.ToySwapOp, lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {})),
    (toy_ops.ScaleRowsOp, lambda: ((torch.randn(3, 4),), {})),
    (RMSNormFwdOp, lambda: ((torch.randn(3, 64), torch.randn(64)), {})),
    (RMSNormFwdOp, lambda: ((torch.randn(3, 64), None), {})),
]


def _make(cls):
    return cls(normalized_shape=(64,)) if cls is RMSNormFwdOp else cls()


@pytest.mark.parametrize("cls,make", BRANCH_CALLS)
def test_compiled_equals_eager_for_every_branch(cls, make):
    args, kwargs = make()
    op = _make(cls)
    e_args, e_kwargs = clone_call(args, kwargs)
    expected = op(*e_args, **e_kwargs)
    torch._dynamo.reset()
    f, graphs = compile_keeping_graphs(op)
    got = f(*args, **kwargs)
    assert_outputs_match(expected, got, lambda e, g: torch.testing.assert_close(g, e))
    for a, ea in zip(args, e_args):  # written inputs were written the same way
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, ea)
    targets = [t for g in graphs for t in graph_targets(g)]
    assert len(set(targets)) == 1 and targets[0] in cls.compile_op_names


def _operator_calls(cls, make):
    """(operator, args) for the branch this call takes, by running it through the operator path."""
    args, kwargs = make()
    op = _make(cls)
    with Spy(keep_args=True) as s:
        op(*args, **kwargs)
    assert len(s.calls) == 1
    return s.calls[0], s.args[0]


@pytest.mark.parametrize("cls,make", BRANCH_CALLS)
def test_opcheck_every_operator(cls, make):
    func, args = _operator_calls(cls, make)
    keep = _make(cls)  # opcheck needs a live instance behind the key
    args = args[:-1] + (keep._key,)
    torch.library.opcheck(func, args)


@pytest.mark.parametrize("cls,make", BRANCH_CALLS)
def test_fake_metadata_equals_real_metadata(cls, make):
    from torch._subclasses.fake_tensor import FakeTensorMode
    func, args = _operator_calls(cls, make)
    keep = _make(cls)
    args = args[:-1] + (keep._key,)
    real = func(*[clone(a) for a in args])
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        fake = func(*fargs)
    assert_outputs_match(real, fake, _same_metadata)


def _same_metadata(r, f):
    assert (tuple(r.shape), r.dtype, r.stride(), r.device) == (tuple(f.shape), f.dtype, f.stride(), f.device)
