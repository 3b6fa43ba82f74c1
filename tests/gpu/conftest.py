"""GPU tests run only where torch sees a CUDA device (the lent H200, through
tests/gpu/run_on_device.sh); elsewhere every test here is skipped with that reason."""
import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: GPU tests run on the lent GPU via tests/gpu/run_on_device.sh")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
