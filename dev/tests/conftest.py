"""dev/tests: the lab's GPU tests. They reuse the GPU tests' helpers (tests/gpu), the
reference (tests/) and dev/lab.py, so those folders go on the import path; without a CUDA
device every test here is skipped."""
import os
import sys

import pytest
import torch

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _d in (os.path.join(_ROOT, "dev"), os.path.join(_ROOT, "tests"), os.path.join(_ROOT, "tests", "gpu"),
           os.path.join(_ROOT, "src")):
    if _d not in sys.path:
        sys.path.insert(0, _d)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: the lab's tests run on the lent GPU (tests/gpu/run_on_device.sh experiments)")
    for item in items:   # only this folder's: run beside tests/, the rest must still run
        if "dev/tests/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
