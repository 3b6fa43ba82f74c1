"""The main job (what `make demo` runs) exits 0 and shows the one-node graph."""
import subprocess
import sys


def test_demo_runs_and_captures_one_node():
    r = subprocess.run([sys.executable, "-m", "tileops", "demo", "--rows", "64", "--n", "512"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "call nodes: ['tileops.norm_rms_norm_fwd.default']" in r.stdout
    assert "torch.compile(F.rms_norm)" in r.stdout
