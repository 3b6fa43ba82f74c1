"""torch.export of a module that calls an op: the exported graph holds the op's one node
with the instance key as a constant, runs like eager (dynamic batch included); an exported
program whose instance is gone or changed runs with the params it was exported with (the key
names them: the op is rebuilt from it), and a key that cannot be rebuilt fails naming why.
Across processes: tests/test_saved_programs.py."""
import gc
import types

import driver
import pytest
import torch
from helpers import op_key

from tileops import TileOpsError
from tileops.norm import LayerNormFwdOp, RMSNormFwdOp
from tileops.ops import registry


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = RMSNormFwdOp((n,))
        self.w = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return self.norm(x, self.w) * 2


def _calls(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_export_has_the_one_node_with_the_key_and_matches_eager():
    torch.manual_seed(0)
    m = Block(64)
    x = torch.randn(8, 64)
    ep = torch.export.export(m, (x,))
    calls = _calls(ep.graph_module)
    assert torch.ops.tileops.norm_rms_norm_fwd.default in calls
    node = next(n for n in ep.graph_module.graph.nodes if n.target == torch.ops.tileops.norm_rms_norm_fwd.default)
    assert node.args[-1] == m.norm._key
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(x), m(x), rtol=0, atol=0)


def test_export_with_a_dynamic_batch_runs_other_batch_sizes():
    torch.manual_seed(0)
    m = Block(64)
    ep = torch.export.export(m, (torch.randn(8, 64),),
                             dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=1024)}})
    for b in (1, 5, 300):
        x = torch.randn(b, 64)
        with torch.no_grad():
            torch.testing.assert_close(ep.module()(x), m(x), rtol=0, atol=0)


def test_exported_program_whose_instance_is_gone_rebuilds_it_from_the_key():
    torch.manual_seed(0)
    m = Block(64)
    key = m.norm._key
    x = torch.randn(8, 64)
    with torch.no_grad():
        expected = m(x)
    ep = torch.export.export(m, (x,))
    run = ep.module()
    m.norm = None          # the exported graph refers to the instance by key only
    del m
    gc.collect()
    assert key not in registry.INSTANCES
    with torch.no_grad():
        torch.testing.assert_close(run(x), expected, rtol=0, atol=0)
    rebuilt = registry.INSTANCES[key]()
    assert type(rebuilt) is RMSNormFwdOp and rebuilt.normalized_shape == (64,) and rebuilt.eps is None


def test_a_param_assigned_after_export_leaves_the_program_with_the_saved_params():
    torch.manual_seed(0)
    m = Block(64)
    x = torch.randn(8, 64)
    with torch.no_grad():
        before = m(x)
    ep = torch.export.export(m, (x,))
    old = m.norm._key
    m.norm.eps = 0.5       # the instance takes a new key; the program keeps the old one
    assert m.norm._key != old and "eps=0.5" in m.norm._key
    with torch.no_grad():
        after = m(x)
        assert (after - before).abs().max() > 1e-2
        torch.testing.assert_close(ep.module()(x), before, rtol=0, atol=0)
        torch.testing.assert_close(m(x), after, rtol=0, atol=0)


def test_a_compiled_call_sees_a_param_assigned_after_compiling():
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = Block(64)
    x = torch.randn(8, 64)
    f = torch.compile(m, fullgraph=True, backend="eager")
    with torch.no_grad():
        f(x)
        m.norm.eps = 0.5   # the key changes, dynamo's guard on it recompiles
        torch.testing.assert_close(f(x), m(x), rtol=0, atol=0)
        ref = torch.nn.functional.rms_norm(x, (64,), m.w, eps=0.5) * 2
        torch.testing.assert_close(f(x), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("key, why", [
    ("RMSNormFwdOp#0", "names no params"),
    (op_key(RMSNormFwdOp, 0, normalized_shape=(64,), momentum=0.1), "momentum"),
    (op_key(RMSNormFwdOp, 0, normalized_shape=(64,), drop=("eps",)), "lacks ['eps']"),
    ("RMSNormFwdOp#0(normalized_shape=(64,), eps=__import__('os').getpid())", "not name=literal"),
    (op_key(RMSNormFwdOp, 0, normalized_shape=(64,), eps=1), "not exactly the saved"),
    (op_key(RMSNormFwdOp, 0, normalized_shape=(-64,)), "InputValueError"),
    (op_key(RMSNormFwdOp, 0, normalized_shape=(64,), target="nosuchtarget"), "raised"),
    (op_key(LayerNormFwdOp, 0, normalized_shape=(64,), eps=1e-05), "names a LayerNormFwdOp"),
])
def test_a_key_that_cannot_be_rebuilt_fails_naming_the_key_and_why(key, why):
    with pytest.raises(TileOpsError, match="no live instance with key") as e:
        torch.ops.tileops.norm_rms_norm_fwd(torch.randn(2, 64), None, key)
    assert key in str(e.value) and why in str(e.value), str(e.value)
    assert key not in registry.INSTANCES


@pytest.mark.parametrize("name", sorted(n for n, c in driver.op_classes().items() if c._entry.has_boundary))
@pytest.mark.parametrize("target", [None, "aten"])
def test_every_op_rebuilds_from_its_key_with_the_same_params_and_results(name, target):
    """For each op (its test params from the manifest's workloads): an instance dropped, its
    key alone rebuilds one that holds the same params and target and computes the same."""
    cls = driver.op_classes()[name]
    case, inputs = driver.small_case(cls)
    op = cls(**case.params, target=target)
    key, params = op._key, op.params()
    branch = driver.branches_of(cls)[0]
    overload, args = driver.operator_args(cls, branch, op, driver.clone_all(inputs))
    expected = overload(*args)
    del op
    gc.collect()
    assert key not in registry.INSTANCES
    _, args = driver.operator_args(cls, branch, types.SimpleNamespace(_key=key), driver.clone_all(inputs))
    got = overload(*args)
    rebuilt = registry.INSTANCES[key]()
    assert type(rebuilt) is cls and rebuilt.params() == params and rebuilt._target_request == target
    for e, g in zip(expected if isinstance(expected, tuple) else (expected,), got if isinstance(got, tuple) else (got,)):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
