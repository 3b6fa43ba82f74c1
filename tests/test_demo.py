"""The main job (what `make demo` runs) exits 0 and shows the one-node graph."""
import subprocess
import sys


def test_demo_runs_and_captures_one_node():
    r = subprocess.run([sys.executable, "-m", "tileops", "demo", "--rows", "64", "--n", "512"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "call nodes: ['tileops.norm_rms_norm_fwd.default']" in r.stdout
    assert "torch.compile(F.rms_norm)" in r.stdout


def test_info_reports_the_cpu_path_and_cuda_state():
    r = subprocess.run([sys.executable, "-m", "tileops", "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "CPU kernels: SIMD" in r.stdout and "CUDA:" in r.stdout and "targets: " in r.stdout
