"""Does a norm's time on the GPU depend on how its inputs were made? (session 38)

On an H100 the README's bench (`python -m tileops bench --op RMSNormFwdOp`) had Liger's
RMSNorm at 4096 x 4096 fp16 at 21.99 / 25.97 µs hot / L2-cold against tileops' 23.70 /
27.81, while dev/sweep_norm.py, by the same timers minutes later, had Liger at 24.58 / 28.32
and the shipped tileops build at 24.08 / 27.74. The two harnesses differ in the inputs:
the bench draws x and the weight on the GPU (standard normals, fp16), the sweep draws them
on the CPU (weight 1 + 0.1 N(0, 1)) and moves them. This times tileops, Liger and the copy
on both sets of inputs (the bench's by tileops.bench.make_inputs from the manifest case,
the op made from the case's params, eps the bench's for both), interleaved, several rounds
(lab.time_interleaved with the bench's cold defaults). The other suspect is where the output
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lab  # noqa: E402  (dev/lab.py: benchmarks/common.py on the path, the interleaved timer)

common = lab.common
tileops = common.import_tileops()
from tileops.bench import make_inputs, resolved_params  # noqa: E402
from tileops.manifest import workloads  # noqa: E402

import sweep_norm  # noqa: E402  (dev/sweep_norm.py: the manifest's Liger peer)


def bench_case(rows, n):
    """RMSNormFwdOp's fp16 manifest case of x [rows, n] (the first, if several): the op as
    the bench makes it, its inputs as the bench draws them, eps as the bench passes Liger."""
    entry = tileops.manifest.package_entries()["RMSNormFwdOp"]
    for case in workloads.cases(entry, dtypes=(torch.float16,)):
        if tuple(case.shapes["x"]) == (rows, n):
            op = tileops.all_op_classes()["RMSNormFwdOp"](**case.params)
            x, w = make_inputs(entry, case, "cuda")
            return op, (x, w), float(resolved_params(op)["eps"])
    raise SystemExit(f"norm_inputs_ab: no fp16 RMSNormFwdOp case of x {rows}x{n} in the manifest")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096,4096x8192")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--offsets", default="0,4096,65536,1048576,4194304,16777216",
                   help="byte offsets of y in one buffer (multiples of 16); empty: none")
    a = p.parse_args(argv)
    liger = sweep_norm.liger_rms_norm(tileops.manifest.package_entries()["RMSNormFwdOp"])
    if liger is None:   # not carried (.whl): the placements still say what they say
        print("liger_kernel does not import: Liger not timed (carry .whl)")
    for shape in a.shapes.split(","):
        rows, n = (int(v) for v in shape.split("x"))
        op, bench_xw, eps = bench_case(rows, n)   # eps held at the bench's for both input sets
        fns = {}
        for kind, (x, w) in (("bench", bench_xw), ("sweep", common.norm_inputs((rows, n), torch.float16, "cuda"))):
            y = torch.empty_like(x)
            fns[f"tileops/{kind}"] = (lambda x=x, w=w: op(x, w))
            if liger is not None:
                fns[f"liger/{kind}"] = (lambda x=x, w=w: liger(x, w, eps))
            fns[f"copy/{kind}"] = (lambda x=x, y=y: y.copy_(x))
        offsets = [int(v) for v in a.offsets.split(",") if v]
        if offsets:
            x, w = bench_xw
            buf = torch.empty(max(offsets) // 2 + rows * n, device="cuda", dtype=torch.float16)
            for off in offsets:
                assert off % 16 == 0, f"--offsets: {off} is not a multiple of 16"
                y = buf[off // 2: off // 2 + rows * n].view(rows, n)
                fns[f"tileops@{off}"] = (lambda x=x, w=w, y=y: op(x, w, out=y))
                fns[f"copy@{off}"] = (lambda x=x, y=y: y.copy_(x))
        # the bench's cold defaults (25 warm-up calls, 100 timed), rounds in alternating order
        times = lab.time_interleaved(fns, a.rounds, cold_warmup=25, cold_rep=100)
        for k, t in times.items():
            print(f"{shape} {k:18s} cold {statistics.median(t['cold']):7.2f} hot {statistics.median(t['hot']):7.2f} "
                  f"(rounds cold {' '.join(f'{v:.2f}' for v in t['cold'])}; "
                  f"hot {' '.join(f'{v:.2f}' for v in t['hot'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
