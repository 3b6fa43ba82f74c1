"""tests/test_ops.py's generic driver (tests/driver.py) on CUDA: every implemented op x
target x dtype x effect branch over the manifest's test cases, opcheck, a cold compile and
the backward check, with the tensors on the GPU. Skipped, with the reason, without one."""
import pytest
import torch

import driver

DEVICE = "cuda"

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU driver runs on the lent GPU")


test_op, test_opcheck, test_compile, test_backward_raises_naming_the_op = driver.tests_for(DEVICE)
