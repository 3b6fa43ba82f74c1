"""Launch-shape sweep of the three RMSNorm CUDA kernels (csrc/cuda/norm.cu) on one GPU.

    python benchmarks/sweep_norm.py [--out PATH.json] [--dtype float16]

For each manifest workload, every valid launch shape of each kernel is built through the
tileops runtime with explicit defines (TILEOPS_KERNEL, TILEOPS_THREADS, TILEOPS_ROW_THREADS)
and launched directly, checked against F.rms_norm (fp32 math) and timed L2-cold
(do_bench median) and hot (CUDA-graph replay), next to a plain copy of the same tensor.
This is the evidence behind the launch rules in src/tileops/kernels/norm/rms_norm.py
(`_cuda_launch_shape`): the table printed last gives, per workload, the fastest shape."""
from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

import common

tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops._dtypes import CODE  # noqa: E402


def pow2ceil(v):
    return 1 << max(0, (v - 1).bit_length())


def configs(n, elem, rows, sm_count, smem_limit):
    g = 16 // elem
    ng = -(-n // g)
    out = []
    rt = pow2ceil(-(-ng // 16))     # norm.cu: up to 16 groups per thread in blocks <= 256
    while rt <= 1024:
        if rt >= 32 or rt & (rt - 1) == 0:
            for rpb in (1, 2, 4, 8):
                threads = rt * rpb
                max_vpt = 16 if threads <= 256 else (8 if elem == 4 else 4)
                if 32 <= threads <= 1024 and threads % 32 == 0 and -(-ng // rt) <= max_vpt:
                    out.append(("tileops_rms_norm", threads, rt, 0, -(-rows // rpb)))
        rt *= 2
    for threads in (256, 512, 1024):
        if ng * 16 + threads // 4 <= smem_limit:
            out.append(("tileops_rms_norm_on_chip", threads, None, ng * 16, rows))
    for threads in (512, 1024):
        for mult in (1, 2, 4):
            out.append(("tileops_rms_norm_streaming", threads, None, 0, min(rows, sm_count * mult)))
    return out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--dtype", default="float16")
    a = p.parse_args(argv)
    dtype = getattr(torch, a.dtype)
    elem = dtype.itemsize
    attrs = runtime.device_attributes(0)
    sm, smem = attrs["sm_count"], attrs["max_shared_per_block"]
    entry = tileops.manifest.package_entries()["RMSNormFwdOp"]
    rows_out, best = [], []
    for wl in entry.workloads:
        rows, n = wl["x"]
        x = torch.randn(rows, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        eps = float(torch.finfo(dtype).eps)
        ref = F.rms_norm(x.float(), (n,), w.float(), eps)
        copy_cold = common.cuda_cold_us(lambda: y.copy_(x))
        copy_hot = common.cuda_hot_us(lambda: y.copy_(x))
        results = []
        for name, threads, rt, shared, grid in configs(n, elem, rows, sm, smem):
            opts = [f"-DTILEOPS_KERNEL={ {'tileops_rms_norm': 0, 'tileops_rms_norm_on_chip': 1, 'tileops_rms_norm_streaming': 2}[name] }",
                    f"-DTILEOPS_DTYPE={CODE[dtype]}", f"-DTILEOPS_N={n}", "-DTILEOPS_HAS_WEIGHT=1",
                    f"-DTILEOPS_VEC={16 // elem}", f"-DTILEOPS_THREADS={threads}"]
            if rt is not None:
                opts.append(f"-DTILEOPS_ROW_THREADS={rt}")
            try:
                h = runtime.build(0, "norm.cu", name, opts, "pppqqqf")
            except Exception as e:  # an invalid shape is a compile error: skip it, say so
                print(f"skip {name} threads={threads} rt={rt}: {str(e).splitlines()[0][:100]}")
                continue

            def launch(h=h, threads=threads, shared=shared, grid=grid):
                _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, shared, runtime.current_stream(0),
                               x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, eps)
            y.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            err = (y.float() - ref).abs().max().item()
            ok = err <= 2e-2 * max(1.0, ref.abs().max().item())
            cold = common.cuda_cold_us(launch) if ok else None
            hot = common.cuda_hot_us(launch) if ok else None
            row = {"workload": f"{rows}x{n}", "dtype": a.dtype, "kernel": name, "threads": threads,
                   "row_threads": rt, "grid": grid, "shared": shared, "max_abs_err": err, "ok": ok,
                   "cold_us": cold, "hot_us": hot, "copy_cold_us": copy_cold, "copy_hot_us": copy_hot}
            results.append(row)
            print(f"{rows}x{n} {name:28s} threads={threads:5d} rt={str(rt):5s} grid={grid:6d} "
                  f"cold={cold if cold is None else round(cold, 2)} hot={hot if hot is None else round(hot, 2)} "
                  f"copy={copy_cold:.2f}/{copy_hot:.2f} err={err:.3g}")
        rows_out.extend(results)
        good = [r for r in results if r["ok"]]
        if good:
            bc = min(good, key=lambda r: r["cold_us"])
            bh = min(good, key=lambda r: r["hot_us"])
            best.append((f"{rows}x{n}", bc, bh, copy_cold, copy_hot))
        del x, w, y, ref
        torch.cuda.empty_cache()
    print("\nbest per workload (cold | hot), ratio to copy:")
    for wl, bc, bh, cc, ch in best:
        print(f"{wl:11s} cold {bc['kernel']:28s} t={bc['threads']} rt={bc['row_threads']} grid={bc['grid']} "
              f"{bc['cold_us']:.2f} ({bc['cold_us'] / cc:.3f}x) | hot {bh['kernel']} t={bh['threads']} "
              f"rt={bh['row_threads']} {bh['hot_us']:.2f} ({bh['hot_us'] / ch:.3f}x)")
    out = a.out or str(common.default_out("cuda", "sweep_norm.json"))
    common.write_results(out, rows_out, common.metadata("cuda", sweep="rms_norm launch shapes"))
    return 0 if all(r["ok"] for r in rows_out) else 1


if __name__ == "__main__":
    sys.exit(main())
