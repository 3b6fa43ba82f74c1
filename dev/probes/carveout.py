"""Does the SM's L1 / shared-memory split cost RMSNorm its L2-cold launches? (issue 11's
cold gap to Liger-Kernel at 32-256 tokens; run on the H200 with the Liger wheel carried)

    PYTHONPATH=src python3 dev/probes/carveout.py [--out carveout.json]

Nsight Compute (session 12, dev/probes/ncu_run.sh rms32 / liger32) gave tileops'
RMSNorm at 32 x 4096 fp16 3.30 µs and Liger's 2.78, with the same SM-active cycles per SM
(~2.5k): the 0.5 µs are spent outside the blocks. One difference in the launch
statistics: the driver ran tileops' kernel with a 32 KB shared-memory configuration and
Liger's with 16 KB; the spin and flush kernels before a cold call run with yet another,
and a change of the split makes the SM drain and reconfigure. This probe sets the
context's cache preference (cuCtxSetCacheConfig: none, prefer shared, prefer L1, equal),
which the driver consults when it picks the split, and times both kernels hot
(tileops.bench.cuda_hot_us) and cold (cuda_cold_us) under each, interleaved."""
from __future__ import annotations

import argparse
import ctypes
import json

import torch

from tileops.bench import cuda_cold_us, cuda_hot_us

CONFIGS = {"none": 0, "prefer_shared": 1, "prefer_l1": 2, "equal": 3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="carveout.json")
    ap.add_argument("--tokens", default="1,32,256")
    a = ap.parse_args()
    from tileops.norm import RMSNormFwdOp
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except ImportError:
        LigerRMSNormFunction = None
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.zeros(1, device="cuda")   # the primary context is current
    N = 4096
    op = RMSNormFwdOp((N,))
    rows = []
    for T in (int(t) for t in a.tokens.split(",")):
        x = torch.randn(T, N, device="cuda", dtype=torch.float16)
        w = torch.randn(N, device="cuda", dtype=torch.float16)
        fns = {"tileops": lambda: op(x, w)}
        if LigerRMSNormFunction is not None:
            fns["liger"] = lambda: LigerRMSNormFunction.apply(x, w, 1e-6)
        for rnd in range(2):   # interleaved rounds: the min per config
            for cname, code in CONFIGS.items():
                rc = cuda.cuCtxSetCacheConfig(ctypes.c_int(code))
                assert rc == 0, f"cuCtxSetCacheConfig({cname}) = {rc}"
                row = {"T": T, "N": N, "config": cname, "round": rnd}
                for name, fn in fns.items():
                    row[name + "_hot_us"] = cuda_hot_us(fn)
                    row[name + "_cold_us"] = cuda_cold_us(fn)
                rows.append(row)
                print(row, flush=True)
    cuda.cuCtxSetCacheConfig(ctypes.c_int(0))
    print(f"\n{'T':>4s} {'config':14s} " + " ".join(f"{n + ' ' + k:>14s}" for n in ("tileops", "liger") for k in ("hot", "cold")))
    for T in sorted({r["T"] for r in rows}):
        for cname in CONFIGS:
            sel = [r for r in rows if r["T"] == T and r["config"] == cname]
            vals = [min(r.get(f"{n}_{k}_us", float("nan")) for r in sel) for n in ("tileops", "liger") for k in ("hot", "cold")]
            print(f"{T:4d} {cname:14s} " + " ".join(f"{v:14.2f}" for v in vals))
    with open(a.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
