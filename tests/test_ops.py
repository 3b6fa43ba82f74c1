"""Every implemented op, driven by its manifest entry alone (tests/driver.py): nothing here
is written per op. For each op x target x dtype x effect branch, every workload test case
(0 rows included), each optional input present and absent, contiguous and strided inputs
(and out), through the eager fast path and the operator: numerics against the reference in
float64 and in the op's dtype, what the branch writes and returns, and the outputs' shape,
dtype, device and contiguity from the manifest. Once per op x target x branch, with one
small case: torch.library.opcheck, a cold torch.compile(fullgraph=True) holding exactly one
tileops node, and a backward that raises naming the op.

A target that does not serve an op is a skip that says so."""
import pytest

import driver

DEVICE = "cpu"


@pytest.mark.parametrize("cls,target,dtype,branch", driver.item_params(DEVICE))
def test_op(cls, target, dtype, branch):
    driver.run_item(cls, target, dtype, branch, DEVICE)


@pytest.mark.parametrize("cls,target,branch", driver.branch_params())
def test_opcheck(cls, target, branch):
    driver.run_opcheck(cls, target, branch, DEVICE)


@pytest.mark.parametrize("cls,target,branch", driver.branch_params())
def test_compile(cls, target, branch):
    driver.run_compile(cls, target, branch, DEVICE)


@pytest.mark.parametrize("cls,target,branch", driver.branch_params())
def test_backward_raises_naming_the_op(cls, target, branch):
    driver.run_backward(cls, target, branch, DEVICE)


def test_every_implemented_op_is_driven():
    """The driver found ops, and every one has at least the two shipped targets serving it
    (an op the aten target does not serve has no reference to serve it with)."""
    classes = driver.op_classes()
    assert "RMSNormFwdOp" in classes
    names = {t.name for t in driver.targets()}
    assert {"builtin", "aten"} <= names
    for name, cls in classes.items():
        serving = {t.name for t in driver.targets() if t.serves(cls)}
        assert {"builtin", "aten"} <= serving, f"{name} is served only by {sorted(serving)}"
