"""GPU tests run only where torch sees a CUDA device (the lent H200, through
tests/gpu/run_on_device.sh); elsewhere every test here is skipped with that reason.

TILEOPS_TEST_SHARD=i/N keeps the i-th of N shards of the collected tests (every N-th test
from the i-th, in collection order) and deselects the rest: run_on_device.sh's TEST_JOBS
runs N such processes side by side, so that the whole GPU suite (~1750 tests, most of their
time spent compiling on the CPU) fits one device call."""
import os

import pytest
import torch


def shard_of(spec):
    """(i, n) from "i/N", 0 <= i < N; a clear error for anything else."""
    try:
        i, n = (int(p) for p in spec.split("/"))
    except ValueError:
        raise pytest.UsageError(f"TILEOPS_TEST_SHARD: expected 'i/N' with integers, got {spec!r}") from None
    if n < 1 or not 0 <= i < n:
        raise pytest.UsageError(f"TILEOPS_TEST_SHARD: expected 0 <= i < N, got {spec!r}")
    return i, n


def pytest_configure(config):
    spec = os.environ.get("TILEOPS_TEST_SHARD")
    config._tileops_shard = shard_of(spec) if spec else None   # a bad spec stops the run here


def pytest_collection_modifyitems(config, items):
    if config._tileops_shard:
        i, n = config._tileops_shard
        config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k % n != i])
        items[:] = items[i::n]
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: GPU tests run on the lent GPU via tests/gpu/run_on_device.sh")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
