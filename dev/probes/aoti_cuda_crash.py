"""Where the AOTInductor CUDA package's loader process dies (session 9: SIGSEGV in the
process that loads tests/test_saved_programs.py's package on cuda, with PDL on or off).

Saves the test's program once, then loads it in fresh processes under variants that each
remove one suspect, every one with faulthandler on (the Python frame at the fault) and, where
the machine has gdb, a native backtrace:
  other      the test as it is (another RMSNormFwdOp takes '#0' first)
  none       no tileops instance before loading
  warm       a tileops CUDA call runs eagerly before loading (the runtime's first use is
             not inside AOTInductor's run)
  torchonly  a package of the same block without tileops ops (torch.nn.functional.rms_norm
             and silu): does AOTInductor alone survive here?

    python3 dev/probes/aoti_cuda_crash.py [--out DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from test_saved_programs import LOAD, MAKE  # noqa: E402  (the test's own scripts)

WARM = "import torch, tileops\nfrom tileops.norm import RMSNormFwdOp\n" \
       "_w = RMSNormFwdOp((64,))(torch.randn(2, 64, device='cuda'), torch.ones(64, device='cuda'))\n" \
       "torch.cuda.synchronize()\nprint('warm ok')\n"

TORCH_ONLY = textwrap.dedent("""
    import sys, torch
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(64))
        def forward(self, x):
            h = torch.cat([torch.nn.functional.rms_norm(x, (64,), self.w, eps=0.25), x], dim=-1)
            return torch.nn.functional.silu(h[..., :64]) * h[..., 64:]
    torch.manual_seed(0)
    m = Block().eval().cuda()
    x = torch.randn(8, 64, device="cuda")
    ep = torch.export.export(m, (x,))
    path = sys.argv[1]
    torch._inductor.aoti_compile_and_package(ep, package_path=path)
    run = torch._inductor.aoti_load_package(path)   # same process: the package itself works?
    with torch.no_grad():
        print("same-process max_err", (run(x) - m(x)).abs().max().item())
""")
TORCH_ONLY_LOAD = textwrap.dedent("""
    import sys, torch
    run = torch._inductor.aoti_load_package(sys.argv[1])
    with torch.no_grad():
        y = run(torch.randn(8, 64, device="cuda"))
    torch.cuda.synchronize()
    print("torch-only new-process ok", tuple(y.shape))
""")


def run(label, argv, env=None, timeout=600):
    print(f"\n===== {label}: {' '.join(argv[:3])} ...", flush=True)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONWARNINGS="ignore", **(env or {})))
    print(f"exit {r.returncode}")
    print("--- stdout\n" + r.stdout[-3000:])
    print("--- stderr\n" + r.stderr[-6000:], flush=True)
    return r.returncode


def gdb_argv(argv):
    gdb = shutil.which("gdb")
    if not gdb:
        return None
    return [gdb, "-q", "-batch", "-ex", "set pagination off", "-ex", "run", "-ex", "bt 40",
            "-ex", "info sharedlibrary", "--args", *argv]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    d = args.out or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    py = [sys.executable, "-X", "faulthandler"]
    path = os.path.join(d, "block_aoti.pt2")
    if run("make (tileops block, aoti, cuda)", py + ["-c", MAKE, path, "aoti", "cuda"]) != 0:
        return
    for first in ("other", "none"):
        run(f"load first={first}", py + ["-c", LOAD, path, "aoti", first, "cuda"])
    run("load after a warm eager tileops call",
        py + ["-c", WARM + LOAD.replace("import sys, torch\n", "import sys\n", 1),
              path, "aoti", "none", "cuda"])
    run("load with TORCH_SHOW_CPP_STACKTRACES", py + ["-c", LOAD, path, "aoti", "none", "cuda"],
        env={"TORCH_SHOW_CPP_STACKTRACES": "1", "TILEOPS_PDL": "0"})
    g = gdb_argv([sys.executable, "-c", LOAD, path, "aoti", "none", "cuda"])
    if g:
        run("load under gdb", g)
    else:
        print("\n(no gdb on this machine)")
    tpath = os.path.join(d, "torch_only.pt2")
    if run("torch-only make", py + ["-c", TORCH_ONLY, tpath]) == 0:
        run("torch-only load in a new process", py + ["-c", TORCH_ONLY_LOAD, tpath])


if __name__ == "__main__":
    main()
