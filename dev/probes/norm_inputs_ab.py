"""Does a norm's time on the GPU depend on how its inputs were made? (session 38)

On an H100 the README's bench (`python -m tileops bench --op RMSNormFwdOp`) had Liger's
RMSNorm at 4096 x 4096 fp16 at 21.99 / 25.97 µs hot / L2-cold against tileops' 23.70 /
27.81, while dev/sweep_norm.py, by the same timers minutes later, had Liger at 24.58 / 28.32
and the shipped tileops build at 24.08 / 27.74. The two harnesses differ in the inputs:
the bench draws x and the weight on the GPU (standard normals, fp16), the sweep draws them
on the CPU (weight 1 + 0.1 N(0, 1)) and moves them. This times tileops, Liger and the copy
on both sets of inputs, interleaved, several rounds. The other suspect is where the output
lies against x (HBM channels are interleaved by address, so x and y at some offsets may
contend): --offsets also times tileops (out=) and the copy writing y into one large buffer
at each byte offset given, x fixed:

    python3 dev/probes/norm_inputs_ab.py [--shapes 4096x4096,4096x8192] [--rounds 3]
        [--offsets 0,4096,65536,1048576,4194304,16777216]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import common  # noqa: E402  (benchmarks/common.py: the import path, the timers)

from tileops.norm import RMSNormFwdOp  # noqa: E402
from tileops.bench import cuda_cold_us, cuda_hot_us  # noqa: E402


def inputs(kind, rows, n):
    if kind == "bench":   # as tileops.bench.make_inputs draws them
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn((rows, n), generator=gen, device="cuda", dtype=torch.float16)
        w = torch.randn((n,), generator=gen, device="cuda", dtype=torch.float16)
        return x, w
    return common.norm_inputs((rows, n), torch.float16, "cuda")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096,4096x8192")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--offsets", default="0,4096,65536,1048576,4194304,16777216",
                   help="byte offsets of y in one buffer (multiples of 16); empty: none")
    a = p.parse_args(argv)
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except ImportError:   # not carried (.whl): the placements still say what they say
        LigerRMSNormFunction = None
        print("liger_kernel does not import: Liger not timed (carry .whl)")
    eps = float(torch.finfo(torch.float32).eps)
    for shape in a.shapes.split(","):
        rows, n = (int(v) for v in shape.split("x"))
        op = RMSNormFwdOp(normalized_shape=(n,), eps=eps)
        fns = {}
        for kind in ("bench", "sweep"):
            x, w = inputs(kind, rows, n)
            y = torch.empty_like(x)
            fns[f"tileops/{kind}"] = (lambda x=x, w=w: op(x, w))
            if LigerRMSNormFunction is not None:
                fns[f"liger/{kind}"] = (lambda x=x, w=w: LigerRMSNormFunction.apply(x, w, eps))
            fns[f"copy/{kind}"] = (lambda x=x, y=y: y.copy_(x))
        offsets = [int(v) for v in a.offsets.split(",") if v]
        if offsets:
            x, w = inputs("bench", rows, n)
            buf = torch.empty(max(offsets) // 2 + rows * n, device="cuda", dtype=torch.float16)
            for off in offsets:
                assert off % 16 == 0, f"--offsets: {off} is not a multiple of 16"
                y = buf[off // 2: off // 2 + rows * n].view(rows, n)
                fns[f"tileops@{off}"] = (lambda x=x, w=w, y=y: op(x, w, out=y))
                fns[f"copy@{off}"] = (lambda x=x, y=y: y.copy_(x))
        got = {k: ([], []) for k in fns}
        for r in range(a.rounds):
            order = list(fns)[r % len(fns):] + list(fns)[:r % len(fns)]
            for k in order:
                got[k][0].append(cuda_cold_us(fns[k]))
                got[k][1].append(cuda_hot_us(fns[k]))
        for k, (cold, hot) in got.items():
            print(f"{shape} {k:18s} cold {statistics.median(cold):7.2f} hot {statistics.median(hot):7.2f} "
                  f"(rounds cold {' '.join(f'{v:.2f}' for v in cold)}; hot {' '.join(f'{v:.2f}' for v in hot)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
