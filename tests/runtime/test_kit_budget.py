"""tests/gpu/run_on_device.sh's kit budget (kit_cap): every kit step's timeout is capped by
what is left of KIT_SECONDS, keeping 20 s to pack the logs, so a kit run on the device ends
with its logs instead of being cut by the device tool's limit (session 20 lost a test log
so). The function is taken from the script itself and run by bash."""
import os
import re
import shutil
import subprocess

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
    for step in ("TEST_SECONDS", "BENCH_SECONDS_PER_OP"):
        assert re.search(r'timeout "\$\(kit_cap "\$\{' + step, text), step
    assert 'timeout "$(kit_cap 600)" bash -c "$KIT_DEV"' in text
