"""The compile contract: every implemented op with a compile boundary registers a cold
compile test here, and test_compile_contract.py fails if one has none.

The package's ops register theirs from the manifest, with nothing written per op
(register_manifest_ops: the smallest workload test case, every optional input present, the
branch that writes nothing); the test-only toy ops of tests/manifest/toy.yaml, which have no
workloads, register theirs by hand below. A hand-written registration wins over the
generated one.

A cold test: torch._dynamo.reset(), a fresh instance, torch.compile(op, fullgraph=True) with
inductor; the compiled result equals eager; the captured graph's call targets are non-empty
and every one of them is in the class's compile_op_names."""
from __future__ import annotations

import torch

from helpers import assert_outputs_match, clone, compile_keeping_graphs

CONTRACT: dict = {}   # op class name -> factory() returning (op, args, kwargs)


def cold_compile_test(op_cls):
    def register(factory):
        CONTRACT[op_cls.__name__] = (op_cls, factory)
        return factory
    return register


def graph_targets(gm) -> list[str]:
    """Operator names of the graph's call nodes (tuple unpacking, operator.getitem, is
    structure, not a call)."""
    import operator
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is not operator.getitem:
            t = n.target
            name = getattr(t, "_schema", None)
            out.append(f"{t._schema.name}" if name is not None else str(t))
    return out


def run_cold(name: str):
    op_cls, factory = CONTRACT[name]
    torch._dynamo.reset()
    op, args, kwargs = factory()
    expected = op(*[clone(a) for a in args], **kwargs)
    compiled, graphs = compile_keeping_graphs(op)
    got = compiled(*args, **kwargs)
    assert_outputs_match(expected, got, lambda e, g: torch.testing.assert_close(g, e))
    targets = [t for g in graphs for t in graph_targets(g)]
    assert targets, f"{name}: the compiled graph has no call node"
    assert all(t in op_cls.compile_op_names for t in targets), (targets, op_cls.compile_op_names)
    return targets


# ---- registrations ---------------------------------------------------------------------

def register_manifest_ops():
    """A cold compile test for every implemented op of the package with a compile
    boundary, from its manifest entry (tests/driver.py: small_case)."""
    import tileops
    for name, cls in tileops.all_op_classes().items():
        if cls._entry.status != "implemented" or not cls._entry.has_boundary or name in CONTRACT:
            continue
        cold_compile_test(cls)(_manifest_factory(cls))


def _manifest_factory(cls):
    def factory():
        import driver  # imports this module: only when a factory runs
        case, inputs = driver.small_case(cls)
        op = cls(**case.params)
        return op, tuple(inputs[i.name] for i in cls._entry.inputs), {}
    factory.__name__ = f"manifest_case_{cls.__name__}"
    return factory


def _register_all():
    import toy_ops

    @cold_compile_test(toy_ops.ToyScaleOp)
    def _scale():
        return toy_ops.ToyScaleOp(3.0), (torch.randn(4, 5), 0.5), {}

    @cold_compile_test(toy_ops.ToyAccumulateOp)
    def _acc():
        return toy_ops.ToyAccumulateOp(), (torch.randn(4, 5), torch.randn(4, 5)), {}

    @cold_compile_test(toy_ops.ToyAddOp)
    def _add():
        return toy_ops.ToyAddOp(), (torch.randn(4, 5), torch.randn(4, 5)), {}

    @cold_compile_test(toy_ops.ToyNormStatsOp)
    def _stats():
        return toy_ops.ToyNormStatsOp(), (torch.randn(4, 5),), {"return_rstd": True}

    @cold_compile_test(toy_ops.ToySwapOp)
    def _swap():
        return toy_ops.ToySwapOp(), (torch.randn(4, 5), torch.randn(4, 5)), {}

    @cold_compile_test(toy_ops.ScaleRowsOp)
    def _rows():
        return toy_ops.ScaleRowsOp(), (torch.randn(4, 5),), {}

    @cold_compile_test(toy_ops.ToyCastOp)
    def _cast():
        return toy_ops.ToyCastOp(torch.float16), (torch.randn(4, 5),), {}


_register_all()
register_manifest_ops()
