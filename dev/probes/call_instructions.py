"""Instructions per eager call of an op on the CPU, counted by valgrind's callgrind: a
measure of the op layer's per-call cost that a shared, noisy host does not blur (wall
timers on the 2-core dev VM varied 2x between runs of the same loop).

    PYTHONPATH=src python dev/probes/call_instructions.py [--calls 20000] [--top 25] CASE...

CASE is one of the names in CASES (e.g. embedding_out F.embedding). For each, two
processes run under callgrind: one that sets the case up and calls it 50 times, one that
then makes --calls more calls; (instructions of the second - of the first) / calls is the
per-call count, and the functions whose own instructions grew the most are listed (C
functions only: the Python interpreter's share appears as _PyEval_EvalFrameDefault).
Each process takes ~2.5 minutes under valgrind (the import of torch)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SETUP = {
    "embedding": "import torch\nfrom tileops.embedding import EmbeddingFwdOp\nop = EmbeddingFwdOp()\n"
                 "w = torch.randn(1000, 4096, dtype=torch.bfloat16)\nids = torch.randint(0, 1000, (1,))\n"
                 "out = torch.empty(1, 4096, dtype=torch.bfloat16)\n",
    "rms_norm": "import torch\nfrom tileops.norm import RMSNormFwdOp\nop = RMSNormFwdOp((4096,), eps=1e-6)\n"
                "x = torch.randn(1, 4096)\nw = torch.randn(4096)\n",
}
CASES = {   # name -> (setup, the call)
    "embedding_out": (SETUP["embedding"], "op(ids, w, out=out)"),
    "embedding": (SETUP["embedding"], "op(ids, w)"),
    "F.embedding": (SETUP["embedding"], "torch.nn.functional.embedding(ids, w)"),
    "index_select_out": (SETUP["embedding"], "torch.index_select(w, 0, ids, out=out)"),
    "rms_norm": (SETUP["rms_norm"], "op(x, w)"),
    "F.rms_norm": (SETUP["rms_norm"], "torch.nn.functional.rms_norm(x, (4096,), w, 1e-6)"),
}
_LINE = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)")


def counted(setup, call, calls, folder, tag):
    """(total instructions, {function: own instructions}) of one process under callgrind."""
    script = os.path.join(folder, f"{tag}.py")
    with open(script, "w") as f:
        f.write(f"{setup}for _ in range(50):\n    {call}\nfor _ in range({calls}):\n    {call}\n")
    out = os.path.join(folder, f"{tag}.cg")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, script],
                   check=True, capture_output=True)
    text = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True, capture_output=True,
                          text=True).stdout
    own, total = {}, None
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            n, name = int(m.group(1).replace(",", "")), m.group(2).strip()
            if name.startswith("PROGRAM TOTALS"):
                total = n
            else:
                own[name] = own.get(name, 0) + n
    if total is None:   # callgrind_annotate prints the total on a line of its own
        total = int(re.search(r"([\d,]+)\s+\(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
    return total, own


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name in args.cases:
            setup, call = CASES[name]
            base, own0 = counted(setup, call, 0, folder, "base")
            total, own1 = counted(setup, call, args.calls, folder, "run")
            print(f"{name}: {(total - base) / args.calls:,.0f} instructions per call ({call})")
            grown = sorted(((own1.get(k, 0) - own0.get(k, 0)) / args.calls, k) for k in set(own0) | set(own1))
            for n, k in reversed(grown[-args.top:]):
                print(f"  {n:9,.0f}  {k[:140]}")


if __name__ == "__main__":
    main()
