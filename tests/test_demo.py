"""The main job (what `make demo` runs) exits 0, shows the one-node graph, says what it is
doing at each step and gives ratios that read one way."""
import re
import subprocess
import sys


def test_demo_runs_and_captures_one_node():
    r = subprocess.run([sys.executable, "-m", "tileops", "demo", "--rows", "64", "--n", "512"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "call nodes: ['tileops.norm_rms_norm_fwd.default']" in r.stdout
    assert "torch.compile(F.rms_norm)" in r.stdout
    # a line per step, so a slow machine never looks hung
    for step in ("[1/4]", "[2/4]", "[3/4]", "[4/4]"):
        assert step in r.stdout, r.stdout
    # ratios read one way: "tileops 4.4 ms, F.rms_norm 26 ms: 6.0x faster" (or slower), each
    # consistent with the two times it names
    unit = {"ms": 1e-3, "µs": 1e-6}
    pat = re.compile(r"^tileops ([\d.]+) (ms|µs), (F\.rms_norm|torch\.compile\(F\.rms_norm\)) ([\d.]+) (ms|µs): "
                     r"([\d.]+)x (faster|slower)", re.M)
    found = pat.findall(r.stdout)
    assert [f[2] for f in found] == ["F.rms_norm", "torch.compile(F.rms_norm)"], r.stdout
    for t, tu, _name, b, bu, ratio, word in found:
        t, b = float(t) * unit[tu], float(b) * unit[bu]
        assert word == ("faster" if t <= b else "slower")
        assert abs(float(ratio) - max(t, b) / min(t, b)) <= 0.06 * float(ratio) + 0.05, (t, b, ratio)


def test_info_reports_the_cpu_path_and_cuda_state():
    r = subprocess.run([sys.executable, "-m", "tileops", "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "CPU kernels: SIMD" in r.stdout and "CUDA:" in r.stdout and "targets: " in r.stdout
