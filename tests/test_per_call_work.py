"""What a steady call does and does not redo: the guards of a compiled call read no mutable
state of the op; the generated checks run once per call signature (and again after a param
changes); the instance registry forgets a dropped op."""
import gc

import pytest
import torch
import torch._dynamo.testing

import toy_ops
from dispatch_spy import Spy
from helpers import op_key
from tileops import TileOpsError
from tileops.norm import RMSNormFwdOp
from tileops.ops import registry

N = 64


@pytest.fixture
def check_calls(monkeypatch):
    """Counts the calls of RMSNormFwdOp's generated `_check` made by its operator bodies
    (the fake's are left out: it is not a real call)."""
    ns = RMSNormFwdOp._boundary
    orig = ns["_check"]
    calls = []

    def counting(self, *args):
        if not any(isinstance(a, torch._subclasses.FakeTensor) for a in args):
            calls.append(tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args))
        return orig(self, *args)
    monkeypatch.setitem(ns, "_check", counting)
    return calls


def test_compiled_call_guards_only_the_instance_key():
    torch._dynamo.reset()
    op = RMSNormFwdOp((N,))

    def f(x, w):
        return op(x, w)
    x, w = torch.randn(2, N), torch.randn(N)
    f(x, w)  # the instance resolves its target and fills its caches first
    out = torch._dynamo.explain(f)(x, w)
    assert out.graph_count == 1 and out.graph_break_count == 0
    # (the op is a closure variable of f: dynamo names it L['op'])
    on_op = sorted({g.name[len("L['op']"):] for g in out.out_guards if g.name.startswith("L['op'].")})
    # the key is the only attribute of the instance a compiled call reads: the target,
    # the kernel tables, the checked signatures and the params are not guarded, so a
    # steady call does not re-check them and filling them does not recompile
    assert on_op == ["._key"], on_op
    torch._dynamo.reset()
    be = torch._dynamo.testing.CompileCounter()
    g = torch.compile(f, fullgraph=True, backend=be)
    g(x, w)
    op._unresolve_target()
    op._checked.clear()
    g(x, w)
    g(torch.randn(2, N), w)
    assert be.frame_count == 1


def test_checks_run_once_per_call_signature_on_both_paths(check_calls):
    op = RMSNormFwdOp((N,))
    x, w = torch.randn(3, N), torch.randn(N)
    op(x, w)
    op(torch.randn(3, N), torch.randn(N))
    with Spy() as s:
        op(x, w)
    assert s.calls  # the operator path shares the instance's record
    assert check_calls == [((3, N), (N,), None)]   # (x, weight, out)
    op(torch.randn(5, N), w)          # another shape
    op(x)                             # no weight: another signature
    op(x.to(torch.float16), w.half())  # another dtype
    assert len(check_calls) == 4
    # a non-contiguous input of a checked shape skips the checks and is still made contiguous
    xt = torch.randn(N, 3).t()
    torch.testing.assert_close(op(xt, w), op(xt.contiguous(), w))
    assert len(check_calls) == 4


def test_a_failing_check_is_not_remembered(check_calls):
    op = RMSNormFwdOp((N,))
    for _ in range(2):
        with pytest.raises(ValueError, match="shape rule"):
            op(torch.randn(2, N - 1))
        with pytest.raises(TypeError, match="expected dtype same as 'x'"):
            op(torch.randn(2, N), torch.randn(N, dtype=torch.float64))
    assert len(check_calls) == 4
    op(torch.randn(2, N))
    assert len(check_calls) == 5


@pytest.mark.parametrize("target", ["builtin", "aten"])
def test_assigning_a_param_checks_selects_and_builds_again(target):
    x = torch.randn(3, N)
    op = RMSNormFwdOp((N,), target=target)
    y0 = op(x)
    op.eps = 0.5  # the launchable kept for this call was built for the default eps
    torch.testing.assert_close(op(x), torch.nn.functional.rms_norm(x, (N,), eps=0.5))
    assert not torch.allclose(op(x), y0)
    op.normalized_shape = (N // 2,)  # x passed the checks under the old value
    with pytest.raises(ValueError, match="shape rule"):
        op(x)
    with Spy(), pytest.raises(ValueError, match="shape rule"):
        op(x)


def test_a_copy_starts_with_no_checked_signatures():
    import copy
    op = toy_ops.ToyAddOp()
    op(torch.randn(2, 3), torch.randn(2, 3))
    assert op._checked
    assert copy.deepcopy(op)._checked == set()


def test_out_is_part_of_the_signature():
    op = toy_ops.ToyAddOp()
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    op(a, b)
    op(a, b, out=torch.empty(2, 3))
    with pytest.raises(ValueError, match="argument 'out': expected shape"):
        op(a, b, out=torch.empty(3, 2))
    with pytest.raises(TypeError, match="argument 'out': expected dtype"):
        op(a, b, out=torch.empty(2, 3, dtype=torch.float64))
    assert len(op._checked) == 2


def test_a_dropped_op_leaves_the_registry_and_its_key_rebuilds_an_equal_op():
    op = RMSNormFwdOp((N,), eps=1e-3)
    key = op._key
    assert registry.INSTANCES[key]() is op
    x = torch.randn(2, N)
    y = op(x)
    del op
    gc.collect()
    assert key not in registry.INSTANCES
    # the key names the params: the operator rebuilds the op from them (and keeps it)
    torch.testing.assert_close(torch.ops.tileops.norm_rms_norm_fwd(x, None, key), y, rtol=0, atol=0)
    again = registry.INSTANCES[key]()
    assert again.eps == 1e-3 and again.normalized_shape == (N,)


def test_a_key_adopted_from_a_program_is_never_issued_to_a_new_instance():
    n = int(RMSNormFwdOp((N,))._key.split("#")[1].split("(")[0])
    # the key the next construction would take, adopted first (as from another process)
    adopted = op_key(RMSNormFwdOp, n + 1, normalized_shape=(N,), eps=0.001)
    torch.ops.tileops.norm_rms_norm_fwd(torch.randn(2, N), None, adopted)
    op = RMSNormFwdOp((N,), eps=1e-3)
    assert op._key != adopted and registry.INSTANCES[adopted]() is not op
    assert op._key == f"RMSNormFwdOp#{n + 2}(normalized_shape=({N},), eps=0.001, cast_before_weight=False)"
    # the format's pin above is literal; tests elsewhere spell keys with helpers.op_key
    assert op._key == op_key(RMSNormFwdOp, n + 2, normalized_shape=(N,), eps=0.001)


def test_a_required_input_given_none_fails_alike_on_both_paths():
    op = RMSNormFwdOp((N,))
    with pytest.raises(TypeError) as fast:
        op(None)
    with Spy(), pytest.raises(TypeError) as slow:
        op(None)
    assert str(fast.value) == str(slow.value) == "RMSNormFwdOp: argument 'x': expected a Tensor, got NoneType"
