"""Every implemented boundary op passes a cold torch.compile(op, fullgraph=True)."""
import pytest

import tileops
import toy_ops
from compile_contract import CONTRACT, run_cold
from tileops.manifest import package_entries


def _boundary_classes():
    classes = dict(tileops.all_op_classes())
    classes.update(toy_ops.TOY_CLASSES)
    return {n: c for n, c in classes.items() if c._entry.status == "implemented" and c._entry.has_boundary}


def test_every_implemented_boundary_op_registers_a_cold_compile_test():
    missing = sorted(set(_boundary_classes()) - set(CONTRACT))
    assert not missing, f"ops with a compile boundary but no cold compile test in tests/compile_contract.py: {missing}"
    assert "RMSNormFwdOp" in _boundary_classes()
    assert all(package_entries()[n].has_boundary for n in _boundary_classes() if n in package_entries())


def test_package_ops_register_from_the_manifest():
    """The package's ops take their cold compile test from the manifest (nothing written
    per op): each one registered is the generated factory, and its case runs."""
    package = {n for n in _boundary_classes() if n in package_entries()}
    assert package, "no package op with a compile boundary"
    for name in sorted(package):
        cls, factory = CONTRACT[name]
        assert factory.__name__ == f"manifest_case_{name}", \
            f"{name}: cold compile test written by hand ({factory.__name__}); the manifest's workloads give it"
        op, args, kwargs = factory()
        assert isinstance(op, cls) and args


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_cold_compile(name):
    targets = run_cold(name)
    assert len(targets) >= 1
