"""Behaviour found missing in review, each with a test that fails without its fix."""
import copy
import gc
import pickle

import pytest
import torch

import toy_ops
from dispatch_spy import Spy
from tileops import TileOpsError, targets
from tileops.errors import ManifestError, TargetError
from tileops.manifest.schema import parse_entry
from tileops.norm import RMSNormFwdOp


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))])
def test_a_copy_is_a_new_instance_with_a_new_key(how):
    op = RMSNormFwdOp((8,), eps=1e-6)
    x = torch.randn(3, 8)
    op(x)
    op2 = how(op)
    assert op2._key != op._key and op2.target is None and len(op2._kernels) == 0
    op2.eps = 10.0
    fast = op2(x)
    with Spy():
        slow = op2(x)
    assert torch.equal(fast, slow)
    del op
    gc.collect()
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(lambda t: op2(t), fullgraph=True)(x), fast)


def test_deepcopy_of_a_composite_gives_its_sub_ops_new_keys_too():
    op = toy_ops.ToyScaleAddOp(2.0)
    op2 = copy.deepcopy(op)
    assert {op2._key, op2.scale._key, op2.add._key}.isdisjoint({op._key, op.scale._key, op.add._key})


def test_jit_trace_records_the_operator_not_the_kernels_allocation():
    op = RMSNormFwdOp((8,))
    x = torch.randn(3, 8)
    tr = torch.jit.trace(lambda t: op(t), x, check_trace=False)
    assert "tileops::norm_rms_norm_fwd" in str(tr.graph)
    x2 = torch.randn(3, 8)
    torch.testing.assert_close(tr(x2), op(x2))


@pytest.mark.parametrize("alpha", [2, torch.tensor(2.0).item()])
def test_scalars_are_normalised_the_same_on_both_paths(alpha):
    import numpy as np
    for a in (alpha, np.float32(alpha), np.int64(int(alpha))):
        op = toy_ops.ToyScaleOp(3.0)
        x = torch.randn(4)
        fast = op(x, a)
        with Spy() as s:
            slow = op(x, a)
        assert s.calls and torch.equal(fast, slow)
        torch.testing.assert_close(fast, x * 3.0 * float(alpha))


@pytest.mark.parametrize("bad", ["s", None, torch.tensor(2.0), True])
def test_bad_scalars_fail_the_same_on_both_paths(bad):
    op = toy_ops.ToyScaleOp(3.0)
    x = torch.randn(4)
    with pytest.raises(TypeError) as fast:
        op(x, bad)
    with pytest.raises(TypeError) as slow:
        with Spy():
            op(x, bad)
    assert str(fast.value) == str(slow.value) and "ToyScaleOp: argument 'alpha'" in str(fast.value)


def test_external_builder_is_asked_again_for_a_new_shape():
    seen = []

    def builder(inputs, params):
        shape = inputs["x"].shape
        seen.append(shape)

        def run(x, weight=None):
            assert tuple(x.shape) == shape, f"built for {shape}, called with {tuple(x.shape)}"
            return torch.nn.functional.rms_norm(x, tuple(params["normalized_shape"]), weight)
        return run
    t = targets.BuilderTarget("shape_checking_test_target", {"RMSNormFwdOp": builder})
    targets.register(t)
    try:
        op = RMSNormFwdOp((8,), target=t.name)
        op(torch.randn(3, 8))
        op(torch.randn(5, 8))
    finally:
        targets.unregister(t.name)
    assert seen == [(3, 8), (5, 8)]


def test_external_target_returning_a_non_contiguous_output_gives_the_contiguous_output():
    """The op allocates its outputs from the manifest (contiguous) and a builder's result
    is copied into them: a non-contiguous result of the right shape and dtype is fine, and
    the caller still gets the layout the fake declares (a wrong shape or dtype raises:
    tests/test_kit_defects.py)."""
    t = targets.BuilderTarget("non_contiguous_test_target", {
        "RMSNormFwdOp": lambda inputs, params: (lambda x, weight=None: x.t().contiguous().t())})
    targets.register(t)
    try:
        op = RMSNormFwdOp((8,), target=t.name)
        x = torch.randn(3, 8)
        y = op(x)
        assert y.is_contiguous() and torch.equal(y, x)
    finally:
        targets.unregister(t.name)


def test_resolution_is_undone_when_forward_returns_the_wrong_number_of_outputs(monkeypatch):
    op = toy_ops.ToyNormStatsOp()
    monkeypatch.setattr(toy_ops.ToyNormStatsOp, "_forward", lambda self, x, *, return_rstd=False: (x,))
    with pytest.raises(TileOpsError, match="must return a tuple of 2 outputs"):
        op(torch.randn(2, 3))
    assert op.target is None


def test_an_optional_input_cannot_be_written():
    raw = {"family": "toy", "status": "spec-only", "signature": {
        "inputs": {"x": {"dtype": "float32"}, "buf": {"dtype": "float32", "optional": True, "mutated": True}},
        "outputs": {"y": {"dtype": "float32", "shape": "x.shape"}}}}
    with pytest.raises(ManifestError, match="buf.*cannot be optional"):
        parse_entry("OptWriteOp", raw, "<t>")


def test_output_strides_are_the_fakes_even_for_size_one_dimensions():
    from torch._subclasses.fake_tensor import FakeTensorMode
    x = torch.randn(8, 1).t()          # contiguous, strides (1, 1)
    assert x.is_contiguous()
    op = RMSNormFwdOp((8,))
    y = op(x)
    with FakeTensorMode() as m:
        f = op(m.from_tensor(x))
    assert y.stride() == f.stride() == (8, 1)
