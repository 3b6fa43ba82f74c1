"""Does a kernel's time on the GPU depend on which allocation its buffers got? (session 39)

On an H100, every 67 MB streaming kernel (tileops' RMSNorm, Liger's, torch's copy_) ran
~12 % faster in a process where torch.compile had run first (dev/probes/liger_state.py:
copy 21.14 against 23.92 µs hot, in four processes alternating), with the same x. This
allocates one x and several outputs, each its own caching-allocator segment (and several
inputs), and times torch's copy and tileops' RMSNorm (out=) for each pair, with each
buffer's address; optional: a pad allocated first, held, or torch.compile run first.

    python3 dev/probes/alloc_placement.py [--pad-mib 0] [--compile-first] [--buffers 4]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lab  # noqa: E402

common = lab.common
tileops = common.import_tileops()


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--tag", default="")
    p.add_argument("--pad-mib", type=int, default=0, help="allocate and hold this many MiB first")
    p.add_argument("--compile-first", action="store_true")
    p.add_argument("--buffers", type=int, default=4)
    p.add_argument("--shape", default="4096x4096")
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args(argv)
    rows, n = (int(v) for v in a.shape.split("x"))
    pad = torch.empty(a.pad_mib << 20, dtype=torch.uint8, device="cuda") if a.pad_mib else None
    eps = torch.finfo(torch.float32).eps
    xs = [common.norm_inputs((rows, n), torch.float16, "cuda")[0] for _ in range(a.buffers)]
    w = torch.ones(n, dtype=torch.float16, device="cuda")
    if a.compile_first:
        ref = torch.compile(lambda x, w: F.rms_norm(x, (n,), w, eps), fullgraph=True, dynamic=True)
        ref(xs[0], w)
    ys = [torch.empty_like(xs[0]) for _ in range(a.buffers)]
    torch.cuda.synchronize()
    op = tileops.all_op_classes()["RMSNormFwdOp"](normalized_shape=(n,), eps=eps)
    fns = {}
    for i, y in enumerate(ys):
        fns[f"copy x0->y{i}"] = (lambda y=y: y.copy_(xs[0]))
        fns[f"rms x0->y{i}"] = (lambda y=y: op(xs[0], w, out=y))
    for j, x in enumerate(xs[1:], 1):
        fns[f"copy x{j}->y0"] = (lambda x=x: ys[0].copy_(x))
    times = lab.time_interleaved(fns, a.rounds, cold_warmup=25, cold_rep=100)
    tag = a.tag or f"pad{a.pad_mib}{'+compile' if a.compile_first else ''}"
    alloc = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    print(f"[{tag}] alloc conf {alloc!r}; x: {' '.join(hex(x.data_ptr()) for x in xs)}; "
          f"y: {' '.join(hex(y.data_ptr()) for y in ys)}" + (f"; pad {hex(pad.data_ptr())}" if pad is not None else ""))
    for k, t in times.items():
        print(f"[{tag}] {k:14s} hot {min(t['hot']):7.2f} cold {min(t['cold']):7.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
