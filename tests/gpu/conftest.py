"""GPU tests run only where torch sees a CUDA device (the lent H200, through
tests/gpu/run_on_device.sh); elsewhere every test here is skipped with that reason.

TILEOPS_TEST_SHARD=i/N keeps the i-th of N shards of the collected tests and deselects the
rest: run_on_device.sh's TEST_JOBS runs N such processes side by side, so that the whole GPU
suite (~1750 tests, most of their time spent compiling on the CPU) fits one device call.
The shards are balanced by each test's expected seconds (SLOW_TESTS; 1 for any other):
the slowest first, each to the shard with the least so far (the lowest index on a tie),
each shard then run in collection order. With no slow test that deals the tests round
robin; session 38's plain round robin left the AOTInductor test (~200 s alone) at the end
of a shard that the call's cap then cut."""
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


# seconds a test took alone on an H100 (session 38), by its name without parameters; the
# kit's log lists the slowest of a run (pytest --durations) for keeping this up to date
SLOW_TESTS = {
    "test_gpu_aotinductor_package_in_a_new_process_runs_with_its_own_params": 200,
}


def shard_items(names, i, n, slow=SLOW_TESTS):
    """Indices into names (test names, parameters allowed) that shard i of n runs, in
    collection order: longest-expected first, each to the least-loaded shard."""
    cost = [slow.get(name.split("[")[0], 1) for name in names]
    load, owner = [0] * n, [0] * len(names)
    for k in sorted(range(len(names)), key=lambda k: -cost[k]):   # stable: ties keep collection order
        s = min(range(n), key=lambda j: (load[j], j))
        owner[k] = s
        load[s] += cost[k]
    return [k for k in range(len(names)) if owner[k] == i]


def pytest_configure(config):
    spec = os.environ.get("TILEOPS_TEST_SHARD")
    config._tileops_shard = shard_of(spec) if spec else None   # a bad spec stops the run here


@pytest.hookimpl(trylast=True)   # after -k / -m deselect: the shards split what will run
def pytest_collection_modifyitems(config, items):
    if config._tileops_shard:
        i, n = config._tileops_shard
        keep = set(shard_items([t.name for t in items], i, n))
        config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k not in keep])
        items[:] = [t for k, t in enumerate(items) if k in keep]
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: GPU tests run on the lent GPU via tests/gpu/run_on_device.sh")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
