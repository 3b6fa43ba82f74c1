"""tests/gpu/run_on_device.sh's kit budget (kit_cap): every kit step's timeout is capped by
what is left of KIT_SECONDS, keeping 20 s to pack the logs, so a kit run on the device ends
with its logs instead of being cut by the device tool's limit (session 20 lost a test log
so). The function is taken from the script itself and run by bash."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "gpu", "run_on_device.sh")
BASH = shutil.which("bash")


def kit_cap(asked: int, kit_seconds, elapsed: int) -> int:
    with open(SCRIPT) as f:
        fn = re.search(r"^kit_cap\(\) \{.*?^\}", f.read(), re.S | re.M).group(0)
    env = {"PATH": os.environ.get("PATH", "")}
    if kit_seconds is not None:
        env["KIT_SECONDS"] = str(kit_seconds)
    r = subprocess.run([BASH, "-c", f"{fn}\nSECONDS={elapsed}\nkit_cap {asked}"], env=env,
                       capture_output=True, text=True, check=True)
    return int(r.stdout)


@pytest.mark.skipif(BASH is None, reason="bash is not installed: the script's function needs it")
def test_a_kit_step_never_runs_past_the_kit_budget():
    assert kit_cap(240, None, 0) == 240          # the default budget, 570 s, leaves room
    assert kit_cap(600, None, 0) == 550          # capped: 570 - 0 - 20
    assert kit_cap(520, None, 60) == 490         # session 20's case: after a 60 s build
    assert kit_cap(240, 100, 30) == 50
    assert kit_cap(240, 100, 95) == 1            # past the budget: still a valid timeout


def test_the_kit_steps_take_their_timeouts_from_kit_cap():
    with open(SCRIPT) as f:
        text = f.read()
    assert re.search(r'timeout "\$\(kit_cap "\$\{BENCH_SECONDS_PER_OP', text)
    # the tests' shards share one cap, taken once before the first starts
    assert re.search(r'cap=\$\(kit_cap "\$\{TEST_SECONDS', text)
    assert re.search(r'TILEOPS_TEST_SHARD=\S+ timeout "\$cap" python3 -m pytest', text)
    assert 'timeout "$(kit_cap 600)" bash -c "$KIT_DEV"' in text


def collected(env_shard, *paths):
    """The node ids pytest collects (and keeps) from paths under TILEOPS_TEST_SHARD."""
    env = dict(os.environ)
    env.pop("TILEOPS_TEST_SHARD", None)
    if env_shard is not None:
        env["TILEOPS_TEST_SHARD"] = env_shard
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        *paths], cwd=ROOT, env=env, capture_output=True, text=True)
    return r, [line for line in r.stdout.splitlines() if "::" in line]


GPU_FILES = ("tests/gpu/test_gpu_rope.py", "tests/gpu/test_gpu_embedding.py")


def test_the_gpu_tests_shards_split_the_suite_into_disjoint_even_parts():
    r, whole = collected(None, *GPU_FILES)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(whole) > 20
    parts = []
    for i in range(3):
        r, part = collected(f"{i}/3", *GPU_FILES)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"{len(whole) - len(part)} deselected" in r.stdout
        parts.append(part)
    assert sorted(sum(parts, [])) == sorted(whole)            # every test in one shard, once
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert parts[0] == whole[0::3] and parts[1] == whole[1::3]  # collection order kept


def test_the_shards_split_what_k_keeps():
    """-k deselects first, then the shards split the rest evenly (the hook runs last). The
    -k here keeps one dtype of three, every third test of the file: sharded before -k, one
    shard would get them all."""
    k = ("-k", "in_place_views and dtype0")
    r, whole = collected(None, GPU_FILES[0], *k)
    assert r.returncode == 0 and len(whole) >= 6, r.stdout + r.stderr
    sizes = [len(collected(f"{i}/3", GPU_FILES[0], *k)[1]) for i in range(3)]
    assert sum(sizes) == len(whole) and max(sizes) - min(sizes) <= 1, (sizes, len(whole))


@pytest.mark.parametrize("spec", ["3/3", "-1/2", "a/b", "1", "0/0"])
def test_a_bad_shard_is_a_usage_error_naming_the_variable(spec):
    r, kept = collected(spec, GPU_FILES[1])
    assert r.returncode != 0 and not kept
    assert "TILEOPS_TEST_SHARD" in r.stdout + r.stderr and repr(spec) in r.stdout + r.stderr


def gpu_conftest():
    import importlib.util
    spec = importlib.util.spec_from_file_location("tileops_gpu_conftest", os.path.join(ROOT, "tests", "gpu", "conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_slow_test_gets_a_lighter_shard_and_every_test_one_shard():
    shard_items = gpu_conftest().shard_items
    names = [f"test_fast[{k}]" for k in range(10)] + ["test_slow[a]"] + [f"test_fast[{k}]" for k in range(10, 20)]
    slow = {"test_slow": 8}
    shards = [shard_items(names, i, 3, slow) for i in range(3)]
    assert sorted(sum(shards, [])) == list(range(len(names)))   # a partition
    (heavy,) = [s for s in shards if 10 in s]
    assert heavy == sorted(heavy)                               # collection order within a shard
    loads = [sum(8 if names[k].startswith("test_slow") else 1 for k in s) for s in shards]
    assert max(loads) - min(loads) <= 1, loads                  # 28 seconds over 3: 10 / 9 / 9
    assert len(heavy) == 1 + loads[shards.index(heavy)] - 8 and len(heavy) < min(len(s) for s in shards if s is not heavy)
    # without a slow test: round robin
    assert [shard_items(names, i, 3, {}) for i in range(3)] == [list(range(i, len(names), 3)) for i in range(3)]
