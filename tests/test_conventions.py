"""The seed's five calling conventions and three guarantees, on the CPU."""
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import toy_ops
from helpers import compile_keeping_graphs
from tileops.norm import RMSNormFwdOp

N = 64


def test_reused_instance_compiles_once_and_a_new_instance_compiles_again():
    torch._dynamo.reset()
    op = RMSNormFwdOp((N,))
    holder = {"op": op}

    def block(x):
        return holder["op"](x)
    f, graphs = compile_keeping_graphs(block)
    x = torch.randn(4, N)
    for _ in range(5):
        f(x)
    assert len(graphs) == 1
    holder["op"] = RMSNormFwdOp((N,))
    f(x)
    assert len(graphs) == 2
    keys = [a for g in graphs for n in g.graph.nodes if n.op == "call_function" for a in n.args if isinstance(a, str)]
    assert len(set(keys)) == 2, "each instance must bake its own key into its graph"


def test_instance_keys_are_strings_and_never_reused():
    keys = set()
    for _ in range(50):
        op = RMSNormFwdOp((N,))
        assert isinstance(op._key, str) and op._key.startswith("RMSNormFwdOp#")
        assert op._key not in keys
        keys.add(op._key)
        del op


def _noncontig(rows=6):
    base = torch.randn(N, rows)
    x = base.t()              # (rows, N), strides (1, rows)
    assert not x.is_contiguous()
    return x


def test_non_contiguous_input_gives_contiguous_output_eager_compiled_fake():
    op = RMSNormFwdOp((N,))
    x, w = _noncontig(), torch.randn(N)
    y = op(x, w)
    assert y.is_contiguous() and y.shape == x.shape
    ref = torch.nn.functional.rms_norm(x, (N,), w, eps=torch.finfo(torch.float32).eps)
    torch.testing.assert_close(y, ref)
    torch._dynamo.reset()
    yc = torch.compile(op, fullgraph=True)(x, w)
    assert yc.is_contiguous()
    torch.testing.assert_close(yc, ref)
    with FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        fy = op(fx, mode.from_tensor(w))
    assert fy.is_contiguous() and fy.stride() == (N, 1)


def test_written_input_and_out_keep_the_callers_storage_even_non_contiguous():
    op = toy_ops.ToyScaleOp(2.0)
    x = torch.randn(5, 3).t()
    x0 = x.clone()
    ptr = x.data_ptr()
    r = op(x, 1.0, inplace=True)
    assert r is x and x.data_ptr() == ptr and x.stride() == (1, 3)
    torch.testing.assert_close(x, x0 * 2)
    add = toy_ops.ToyAddOp()
    out = torch.zeros(5, 3).t()
    a, b = torch.randn(3, 5), torch.randn(3, 5)
    r = add(a, b, out=out)
    assert r is out and out.stride() == (1, 3)
    torch.testing.assert_close(out, a + b)
    # compiled: the same storage is written
    torch._dynamo.reset()
    x2 = torch.randn(5, 3).t()
    x20 = x2.clone()
    r2 = torch.compile(lambda t: op(t, 1.0, inplace=True), fullgraph=True)(x2)
    torch.testing.assert_close(x2, x20 * 2)
    assert r2.data_ptr() == x2.data_ptr()


def test_meta_and_fake_calls_return_shapes_and_build_nothing():
    op = RMSNormFwdOp((N,))
    y = op(torch.empty(3, N, device="meta"), torch.empty(N, device="meta"))
    assert y.device.type == "meta" and y.shape == (3, N)
    with FakeTensorMode() as mode:
        fy = op(mode.from_tensor(torch.randn(7, N)))
    assert fy.shape == (7, N)
    assert len(op._kernels) == 0 and op._memo == {} and op.target is None


def test_fake_metadata_matches_real_for_rms_norm_dtypes():
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        op = RMSNormFwdOp((N,))
        x = torch.randn(2, 3, N, dtype=dtype)
        real = op(x)
        with FakeTensorMode() as mode:
            fake = op(mode.from_tensor(x))
        assert (real.shape, real.dtype, real.stride(), real.device) == (fake.shape, fake.dtype, fake.stride(), fake.device)


def test_torch_logs_graph_code_shows_the_single_node():
    script = textwrap.dedent(f"""
        import torch
        from tileops.norm import RMSNormFwdOp
        op = RMSNormFwdOp(normalized_shape=({N},))
        @torch.compile(fullgraph=True)
        def block(x, weight):
            return op(x, weight)
        block(torch.randn(8, {N}), torch.randn({N}))
    """)
    env = dict(os.environ, TORCH_LOGS="graph_code")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    calls = [ln for ln in r.stderr.splitlines() if "torch.ops." in ln]
    assert len(calls) == 1 and "torch.ops.tileops.norm_rms_norm_fwd.default" in calls[0], r.stderr[-3000:]


def test_graph_is_the_same_under_two_targets():
    def graph_of(target):
        torch._dynamo.reset()
        op = RMSNormFwdOp((N,), target=target)
        f, graphs = compile_keeping_graphs(op)
        y = f(torch.randn(4, N), torch.randn(N))
        code = graphs[0].code.replace(op._key, "<key>")
        return code, y, op
    code_b, y_b, op_b = graph_of("builtin")
    code_a, y_a, op_a = graph_of("aten")
    assert code_b == code_a
    assert op_b.target.name == "builtin" and op_a.target.name == "aten"


def test_dynamic_batch_compiles_once_for_eight_sizes():
    torch._dynamo.reset()
    op = RMSNormFwdOp((N,))
    f, graphs = compile_keeping_graphs(op, dynamic=True)
    w = torch.randn(N)
    # from 2 up: torch specialises sizes 0 and 1 for every op, ours or not
    for b in (2, 3, 5, 8, 13, 21, 34, 55):
        x = torch.randn(b, N)
        torch.testing.assert_close(f(x, w), op(x, w))
    assert len(graphs) == 1


def test_target_is_resolved_inside_the_node_on_the_first_compiled_call():
    torch._dynamo.reset()
    op = RMSNormFwdOp((N,), target="aten")
    assert op.target is None
    torch.compile(op, fullgraph=True)(torch.randn(2, N))
    assert op.target is not None and op.target.name == "aten"


def test_failed_resolution_is_undone_so_the_next_call_resolves_again():
    op = toy_ops.ToyScaleOp(2.0)
    calls = {"n": 0}
    orig = toy_ops.ScaleKernel.build.__func__

    def flaky(cls, identity):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("first build fails")
        return orig(cls, identity)
    toy_ops.ScaleKernel.build = classmethod(flaky)
    try:
        with pytest.raises(RuntimeError, match="first build fails"):
            op(torch.randn(3))
        assert op.target is None and len(op._kernels) == 0
        torch._dynamo.reset()
        y = torch.compile(op, fullgraph=True)(torch.ones(3))
        torch.testing.assert_close(y, torch.full((3,), 2.0))
        assert op.target is not None
    finally:
        toy_ops.ScaleKernel.build = classmethod(orig)


def test_bad_input_errors_name_op_argument_expectation_and_value():
    op = RMSNormFwdOp((N,))
    with pytest.raises(TypeError, match=r"RMSNormFwdOp: argument 'x': expected dtype float32 \| float16 \| bfloat16, got torch.int32"):
        op(torch.zeros(2, N, dtype=torch.int32))
    with pytest.raises(TypeError, match=r"argument 'weight': expected dtype same as 'x' \(torch.float32\), got torch.float16"):
        op(torch.zeros(2, N), torch.zeros(N, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"RMSNormFwdOp: shape rule .* does not hold: .*x.shape=\(2, 63\)"):
        op(torch.zeros(2, N - 1))
    with pytest.raises(ValueError, match=r"weight.shape=\(3,\)"):
        op(torch.zeros(2, N), torch.zeros(3))
    with pytest.raises(TypeError, match=r"argument 'x': expected a Tensor, got list"):
        op([1.0] * N)
    from tileops import InputError
    with pytest.raises(InputError):
        op(torch.zeros(2, N - 1))
    # the same errors come out of the compiled path
    torch._dynamo.reset()
    f = torch.compile(op, fullgraph=True)
    with pytest.raises(Exception, match=r"argument 'x': expected dtype"):
        f(torch.zeros(2, N, dtype=torch.int32))


def test_a_selecting_bool_must_be_a_bool():
    """inplace= / return_lse= / return_values= pick the effect branch by their truth: a
    string "False" or a 1 once picked one silently (the logits written in place); now
    anything but True or False is refused, naming the op and the argument, before a write."""
    from tileops.errors import InputTypeError
    from tileops.norm import FusedAddRMSNormFwdOp
    from tileops.sampling import TopKFwdOp, TopKTopPMaskFwdOp
    logits = torch.randn(2, 10)
    before = logits.clone()
    for bad in ("False", 1, None, torch.tensor(False)):
        with pytest.raises(InputTypeError, match=r"TopKTopPMaskFwdOp: argument 'inplace': expected True or False, "
                                                 r"got " + re.escape(repr(bad))):
            TopKTopPMaskFwdOp()(logits, torch.tensor([2, 2]), None, inplace=bad)
    assert torch.equal(logits, before)
    with pytest.raises(InputTypeError, match=r"TopKFwdOp: argument 'return_values': expected True or False, got 'no'"):
        TopKFwdOp(k=2)(logits, return_values="no")
    x, r = torch.randn(2, N), torch.randn(2, N)
    with pytest.raises(InputTypeError, match=r"FusedAddRMSNormFwdOp: argument 'inplace'"):
        FusedAddRMSNormFwdOp((N,))(x, r, None, inplace=0)
    # the bools themselves, eager and compiled
    torch._dynamo.reset()
    op = TopKTopPMaskFwdOp()
    f = torch.compile(lambda t, flag: op(t, torch.tensor([2, 2]), None, inplace=flag), fullgraph=True)
    assert torch.equal(f(logits, False), op(logits, torch.tensor([2, 2]), None, inplace=False))
    assert torch.equal(logits, before)
    with pytest.raises(Exception, match=r"argument 'inplace': expected True or False"):
        f(logits, "yes")


def test_a_call_of_the_wrong_arity_names_the_op():
    """Python's own TypeError for a missing or extra argument names the function: the
    generated one is named after the op (found by review: '_call_boundary() missing ...')."""
    from tileops.norm import GemmaRMSNormFwdOp
    from tileops.positional import AlibiFwdOp
    with pytest.raises(TypeError, match=r"^GemmaRMSNormFwdOp\.__call__\(\) missing 1 required positional argument: "
                                        r"'weight'"):
        GemmaRMSNormFwdOp((N,))(torch.randn(2, N))
    with pytest.raises(TypeError, match=r"^RMSNormFwdOp\.__call__\(\) got an unexpected keyword argument 'bogus'"):
        RMSNormFwdOp((N,))(torch.randn(2, N), bogus=1)
    with pytest.raises(TypeError, match=r"^AlibiFwdOp\.__call__\(\) takes 1 positional argument"):
        AlibiFwdOp(4, 8)(1)
