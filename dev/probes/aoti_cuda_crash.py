"""Where the AOTInductor CUDA package's loader process dies (session 9: SIGSEGV in the
process that loads tests/test_saved_programs.py's package on cuda, with PDL on or off;
session 10's first run: inside `aoti_load_package` itself, before any op runs, whether a
tileops instance exists first or not and after a warm eager tileops call alike).

For each model below: package it in one process, load and run it in a fresh one with
dev/probes/segv_backtrace.c preloaded (a native backtrace at the fault, symbolized here
from the shared objects' dynamic symbols, as the machine has no gdb):
  torch   the block's math in torch ops only (rms_norm, cat, silu * mul): AOTInductor alone
  silu    SiluAndMulFwdOp alone (one extern node, no constant tensor argument)
  block   the test's block (RMSNormFwdOp with its weight, cat, SiluAndMulFwdOp)
The package's wrapper.json (the extern nodes the proxy executor parses at load) is printed.

    python3 dev/probes/aoti_cuda_crash.py [--out DIR] [--models torch,silu,block] [--libstdcxx]

Outcome (session 10, H200 image, torch 2.11): the torch-only package dies too, inside the
package's own code: AOTInductorModel's constructor -> parse_device_str -> std::regex's
compiler (an AOTInductor/toolchain defect of that machine, not tileops').
"""
import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))

MAKE = textwrap.dedent("""
    import sys, torch
    path, model = sys.argv[1:3]
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(64))
            if model != "torch":
                import tileops
                from tileops.norm import RMSNormFwdOp
                from tileops.activation import SiluAndMulFwdOp
                self.norm = RMSNormFwdOp((64,), eps=0.25)
                self.act = SiluAndMulFwdOp()
        def forward(self, x):
            if model == "torch":
                h = torch.cat([torch.nn.functional.rms_norm(x, (64,), self.w, eps=0.25), x], dim=-1)
                return torch.nn.functional.silu(h[..., :64]) * h[..., 64:]
            if model == "silu":
                return self.act(torch.cat([x, x * 2], dim=-1))
            return self.act(torch.cat([self.norm(x, self.w), x], dim=-1))
    torch.manual_seed(0)
    m = Block().eval().cuda()
    x = torch.randn(8, 64, device="cuda")
    with torch.no_grad():
        y = m(x)
    ep = torch.export.export(m, (x,))
    torch._inductor.aoti_compile_and_package(ep, package_path=path)
    torch.save({"x": x, "y": y}, path + ".io")
    print("packaged", path)
""")
LOAD = textwrap.dedent("""
    import sys, torch
    path, model = sys.argv[1:3]
    if model != "torch":
        import tileops
    io = torch.load(path + ".io", map_location="cuda")
    print("loading", flush=True)
    run = torch._inductor.aoti_load_package(path)
    print("loaded", flush=True)
    with torch.no_grad():
        y = run(io["x"])
    torch.cuda.synchronize()
    print("max_err", (y - io["y"]).abs().max().item(), flush=True)
""")

_FRAME = re.compile(r"^(\S+?)\(([^)+]*)\+0x([0-9a-f]+)\)\[0x[0-9a-f]+\]$")
_symbols = {}


def _table(lib):
    """(sorted addresses, names) of lib's defined dynamic and static function symbols."""
    if lib not in _symbols:
        rows = []
        for flag in ("-D", ""):
            r = subprocess.run(["nm", *([flag] if flag else []), "-C", "--defined-only", lib],
                               capture_output=True, text=True)
            for line in r.stdout.splitlines():
                parts = line.split(" ", 2)
                if len(parts) == 3 and parts[1] in "TtWw":
                    rows.append((int(parts[0], 16), parts[2]))
        rows.sort()
        _symbols[lib] = ([a for a, _ in rows], [n for _, n in rows])
    return _symbols[lib]


def symbolize(stderr):
    """The preloaded handler's frames, each with the nearest preceding symbol of its object."""
    out = []
    for line in stderr.splitlines():
        m = _FRAME.match(line.strip())
        if not m:
            continue
        lib, sym, off = m.group(1), m.group(2), int(m.group(3), 16)
        if not sym and os.path.exists(lib):
            addrs, names = _table(lib)
            i = bisect.bisect_right(addrs, off) - 1
            sym = f"{names[i]}+{off - addrs[i]:#x}" if i >= 0 else "?"
        out.append(f"  {os.path.basename(lib)} +{off:#x}  {sym[:200]}")
    return "\n".join(out)


def run(label, argv, env=None, timeout=300):
    print(f"\n===== {label}", flush=True)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, PYTHONWARNINGS="ignore", **(env or {})))
    except subprocess.TimeoutExpired:
        print(f"timed out after {timeout} s", flush=True)
        return None
    print(f"exit {r.returncode}")
    print("--- stdout\n" + r.stdout[-2000:])
    err = r.stderr
    if "[segv_backtrace]" in err:
        print("--- native frames (symbolized)\n" + symbolize(err))
        err = err[:err.index("[segv_backtrace]")]
    print("--- stderr\n" + err[-3000:], flush=True)
    return r.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--models", default="torch,silu,block")
    ap.add_argument("--libstdcxx", action="store_true",
                    help="load again with the C++ compiler's libstdc++ preloaded (the one the package was built against)")
    args = ap.parse_args()
    d = args.out or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, "segv_backtrace.so")
    subprocess.run(["gcc", "-std=c11", "-O1", "-g", "-shared", "-fPIC", "-o", so,
                    os.path.join(HERE, "segv_backtrace.c")], check=True)
    for model in args.models.split(","):
        path = os.path.join(d, f"{model}.pt2")
        if run(f"{model}: package", [sys.executable, "-c", MAKE, path, model]) != 0:
            continue
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                if name.endswith("wrapper.json"):
                    print(f"--- {name}\n{z.read(name).decode()[:2000]}")
        run(f"{model}: load and run in a new process (native backtrace preloaded)",
            [sys.executable, "-c", LOAD, path, model], env={"LD_PRELOAD": so})
        if args.libstdcxx:
            lib = subprocess.run(["g++", "-print-file-name=libstdc++.so.6"], capture_output=True,
                                 text=True).stdout.strip()
            run(f"{model}: the same with the compiler's own {lib} preloaded",
                [sys.executable, "-c", LOAD, path, model], env={"LD_PRELOAD": f"{lib} {so}"})


if __name__ == "__main__":
    main()
