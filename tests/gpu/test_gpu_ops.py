"""tests/test_ops.py's generic driver (tests/driver.py) on CUDA: every implemented op x
target x dtype x effect branch over the manifest's test cases, opcheck, a cold compile and
the backward check, with the tensors on the GPU. Skipped, with the reason, without one."""
import pytest
import torch

import driver

DEVICE = "cuda"

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU driver runs on the lent GPU")


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
