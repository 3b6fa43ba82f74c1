"""Does where y lies relative to x change the copy floor? (H200 probe, fp16.)

    python dev/probe_placement.py [--only 2048x8192,...] [--out PATH.json]

bench_norm's copy writes into a y allocated once; the op writes into a y the caching
allocator hands it per call; sweep_norm's copy into yet another. Their copies differ by
5-10 % at 8K-16K rows from one script to the other while tileops does not move. This
probe carves x and several y's out of one buffer at chosen gaps after x's end and times,
L2-cold (do_bench median) and in the same loop, the plain copy and the shipped tileops
build (launched directly, same x, same y) at each placement: if the copy moves with the
placement and the kernel does not (or the other way round), "tileops / copy" depends on
where the allocator put y, and both must be timed into the same y."""
from __future__ import annotations

import argparse
import sys

import torch

from lab import common

tileops = common.import_tileops()
from tileops import runtime  # noqa: E402
from tileops._dtypes import CODE  # noqa: E402
from tileops.kernels.norm.rms_norm import (CUDA_ARG_FORMAT, CUDA_SOURCE,  # noqa: E402
                                           cuda_specialisation)

GAPS = (0, 4096, 65536, 2 << 20, 3 << 20, 16 << 20)   # bytes between x's end and y
ROUNDS = 3


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="2048x4096,2048x8192,2048x16384,16384x4096")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    dtype = torch.float16
    elem = dtype.itemsize
    sm = runtime.device_attributes(0)["sm_count"]
    rows_out = []
    for wl in a.only.split(","):
        rows, n = (int(v) for v in wl.split("x"))
        nbytes = rows * n * elem
        pool = torch.empty(2 * nbytes + max(GAPS) + 4096, dtype=torch.uint8, device="cuda")
        x = pool[:nbytes].view(dtype).view(rows, n)
        x.copy_(torch.randn(rows, n, device="cuda", dtype=dtype))
        w = torch.randn(n, device="cuda", dtype=dtype)
        eps = float(torch.finfo(dtype).eps)
        opts, threads, rpb, shared, cap = cuda_specialisation("tileops_rms_norm", CODE[dtype], n, True,
                                                              16 // elem, sm)
        h = runtime.build(0, CUDA_SOURCE, "tileops_rms_norm", opts, CUDA_ARG_FORMAT)
        grid = -(-rows // rpb)
        ys = {g: pool[nbytes + g: 2 * nbytes + g].view(dtype).view(rows, n) for g in GAPS}
        ys["separate"] = torch.empty_like(x)

        def kernel(y):
            return common.norm_launch(h, threads, shared, grid, x, w, y, eps)
        ref = torch.nn.functional.rms_norm(x.float(), (n,), w.float(), eps).to(dtype)
        times = {g: {"copy": [], "tileops": []} for g in ys}
        for _ in range(ROUNDS):          # interleaved rounds: drift hits every placement
            for g, y in ys.items():
                times[g]["copy"].append(common.cuda_cold_us(lambda y=y: y.copy_(x)))
                y.fill_(float("nan"))
                times[g]["tileops"].append(common.cuda_cold_us(kernel(y)))
                assert (y.float() - ref.float()).abs().max().item() < 0.02, (wl, g)
        for g in ys:
            c = sorted(times[g]["copy"])[ROUNDS // 2]
            t = sorted(times[g]["tileops"])[ROUNDS // 2]
            row = {"workload": wl, "dtype": "float16", "y_gap_bytes": g, "copy_cold_us": c,
                   "tileops_cold_us": t, "ratio": t / c,
                   "copy_all": times[g]["copy"], "tileops_all": times[g]["tileops"]}
            rows_out.append(row)
            print(f"{wl:11s} gap={str(g):>9s}  copy {c:7.2f}  tileops {t:7.2f}  ratio {t / c:.3f}", flush=True)
    if a.out:
        common.write_results(a.out, rows_out, common.metadata("cuda", probe="placement", gaps=list(GAPS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
