"""Decode-shape variants of the norm family's row kernels (csrc/ops/norm/norm_rows.cuh):
threads per row, weight/bias held in registers, register cap, fp16, launched directly.

    python dev/time_decode.py [--out PATH.json] [--rows 1,8,32,256,4096] [--ns 4096,8192]

Per op (rms_norm_rows, gemma_rms_norm with a weight; layer_norm, fused_add_layer_norm with
weight and bias; fused_add_rms_norm with a weight) and shape, the variants are
  rule        cuda_rows.specialisation's build
  rt*2, rt*4  2x / 4x the rule's threads per row (fewer groups per thread)
  no smem     the rule without weight/bias staged in shared memory (TILEOPS_WB_SMEM=0)
  wb8         the rule with weight + bias up to 8 groups per thread in registers
  rt*2 wb8    both
each timed hot (CUDA graph of 50 calls) and cold (256 MB written before each call), 2
interleaved rounds, min reported. The question: which change removes the 2-18 % the
kit's ops lose to Liger / torch.compile at 1-256 tokens (dev/NOTES.md, session 4)."""
from __future__ import annotations

import argparse
import sys

import torch

from lab import common, default_out, min_rows, time_interleaved

tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops.kernels.norm import cuda_rows as R  # noqa: E402

DT = 1
OPS = (("rms_norm_rows", True, False), ("gemma_rms_norm", True, False), ("layer_norm", True, True),
       ("fused_add_rms_norm", True, False), ("fused_add_layer_norm", True, True))


def _with(opts, **defs):
    keys = tuple(f"-DTILEOPS_{k}=" for k in defs)
    return [o for o in opts if not o.startswith(keys)] + [f"-DTILEOPS_{k}={v}" for k, v in defs.items()]


def variants(op, n, hw, hb):
    """name -> (options, threads, rows_per_block)"""
    src, kname, opts, threads, rpb, _, cap = R.specialisation(op, DT, n, hw, hb, R.vec_for(DT, n, True), 132)
    d = dict(o[2:].split("=") for o in opts)
    out = {"rule": (list(opts), threads, rpb)}
    if d.get("TILEOPS_KERNEL") != "0":
        return src, kname, out
    rt = int(d["TILEOPS_ROW_THREADS"])
    ng = n // 8
    for mul in (2, 4):
        r = rt * mul
        if r > 1024 or r > ng:
            continue
        t = max(r, 128)
        out[f"rt*{mul}"] = (_with(opts, THREADS=t, ROW_THREADS=r, MIN_BLOCKS=max(1, 1024 // t)), t, t // r)
    out["no smem"] = (_with(opts, WB_SMEM=0), threads, rpb)
    out["wb8"] = (_with(opts, WB_REG_GROUPS=8), threads, rpb)
    if "rt*2" in out:
        o, t, p = out["rt*2"]
        out["rt*2 wb8"] = (_with(o, WB_REG_GROUPS=8), t, p)
    return src, kname, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--rows", default="1,8,32,256,4096")
    p.add_argument("--ns", default="4096,8192")
    p.add_argument("--ops", default=",".join(o[0] for o in OPS))
    p.add_argument("--variants", default="", help="comma-separated variant names to keep (default: all)")
    a = p.parse_args(argv)
    keep_ops = a.ops.split(",")
    keep_variants = [v for v in a.variants.split(",") if v]
    stream_of = torch._C._cuda_getCurrentRawStream
    results = []
    for n in (int(v) for v in a.ns.split(",")):
        for rows in (int(v) for v in a.rows.split(",")):
            gen = torch.Generator(device="cpu").manual_seed(0)
            x = torch.randn(rows, n, generator=gen).to("cuda", torch.float16)
            r = torch.randn(rows, n, generator=gen).to("cuda", torch.float16)
            w = (1 + 0.1 * torch.randn(n, generator=gen)).to("cuda", torch.float16)
            b = (0.1 * torch.randn(n, generator=gen)).to("cuda", torch.float16)
            y, ro = torch.empty_like(x), torch.empty_like(x)
            fns = {"copy": lambda: y.copy_(x)}
            for op, hw, hb in (o for o in OPS if o[0] in keep_ops):
                src, kname, vs = variants(op, n, hw, hb)
                vs = {k: v for k, v in vs.items() if not keep_variants or k in keep_variants}
                res = op.startswith("fused")
                args = (x.data_ptr(), r.data_ptr() if res else 0, w.data_ptr(), b.data_ptr() if hb else 0,
                        y.data_ptr(), ro.data_ptr() if res else 0, rows, 1e-5)
                for vname, (opts, threads, rpb) in vs.items():
                    try:
                        h = runtime.build(0, src, kname, opts, R.ARG_FORMAT)
                    except Exception as ex:
                        print(f"skip {op} {vname}: {str(ex).splitlines()[0][:120]}")
                        continue
                    grid = -(-rows // rpb) if rpb else rows

                    def fn(h=h, grid=grid, threads=threads, args=args):
                        _C.cuda_launch(h, min(grid, 2**31 - 1), 1, 1, threads, 1, 1, 0, stream_of(0), *args)
                    fns[f"{op} {vname}"] = fn
            results += min_rows(time_interleaved(fns), f"{rows}x{n}", f"{rows:5d}x{n:<5d}", 34, digits=7)
            del fns, x, r, w, b, y, ro
    out = a.out or str(default_out("decode_variants.json"))
    common.write_results(out, results, common.metadata("cuda", timing="norm rows decode variants"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
