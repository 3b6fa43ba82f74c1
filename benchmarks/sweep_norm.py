"""Launch-shape sweep of the three RMSNorm CUDA kernels (csrc/cuda/norm.cu) on one GPU.

    python benchmarks/sweep_norm.py [--mode shapes|policies] [--only 2048x4096,...] [--out PATH.json]
                                    [--dtype float16]

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
from tileops.kernels.norm.rms_norm import (CUDA_ARG_FORMAT, CUDA_REGISTER_MAX_N, CUDA_SOURCE,  # noqa: E402
                                           _cuda_launch_shape, _groups, _pow2ceil, cuda_options)


def shape_configs(n, elem, rows, sm_count, smem_limit):
    """Every valid launch shape of each kernel: (kernel, threads, rt, shared, grid, defines)."""
    ng = _groups(n, elem)
    out = []
    rt = _pow2ceil(-(-ng // 16))     # norm.cu: up to 16 groups per thread in blocks <= 256
    while rt <= 1024:
        if rt >= 32 or rt & (rt - 1) == 0:
            for rpb in (1, 2, 4, 8):
                threads = rt * rpb
                max_vpt = 16 if threads <= 256 else (8 if elem == 4 else 4)
                if 32 <= threads <= 1024 and threads % 32 == 0 and -(-ng // rt) <= max_vpt:
                    # with the register cap the launch rule gives every register build
                    out.append(("tileops_rms_norm", threads, rt, 0, -(-rows // rpb),
                                {"TILEOPS_MIN_BLOCKS": max(1, 1024 // threads)}))
        rt *= 2
    for threads in (256, 512, 1024):
        if ng * 16 + threads // 4 <= smem_limit:
            out.append(("tileops_rms_norm_on_chip", threads, None, ng * 16, rows, {}))
    for threads in (512, 1024):
        for mult in (1, 2, 4):
            out.append(("tileops_rms_norm_streaming", threads, None, 0, min(rows, sm_count * mult), {}))
    return out


def policy_configs(n, elem, rows, sm_count, smem_limit):
    """The shipped launch shape under each of norm.cu's tuning defines (cache policies,
    register cap, prefetching persistent grid), register-kernel shapes with fewer groups
    per thread, and the on-chip kernel in small blocks and persistent grids; the shipped
    shape first and last (their spread is the noise)."""
    if n > CUDA_REGISTER_MAX_N:
        return []
    extras, threads, rpb, shared, _cap = _cuda_launch_shape("tileops_rms_norm", n, elem, sm_count)
    shipped = {k: int(v) for k, v in (e[2:].split("=") for e in extras)}
    rt = shipped.pop("TILEOPS_ROW_THREADS")
    full = -(-rows // rpb)

    def variant(grid=full, **defines):   # the shipped defines, some changed
        return ("tileops_rms_norm", threads, rt, shared, grid, {**shipped, **defines})
    out = [variant()]
    for ld in range(1, 7):
        out.append(variant(TILEOPS_LD_POLICY=ld))
    for st in range(1, 4):
        out.append(variant(TILEOPS_ST_POLICY=st))
    out.append(variant(TILEOPS_LD_POLICY=3, TILEOPS_ST_POLICY=2))
    out.append(variant(TILEOPS_LD_POLICY=4, TILEOPS_ST_POLICY=3))
    out.append(variant(RK_W_IN_REGS=0))
    for mb in sorted({0, max(1, 1024 // threads), 2048 // threads}):   # 0: no register cap
        out.append(variant(TILEOPS_MIN_BLOCKS=mb))
        out.append(variant(TILEOPS_MIN_BLOCKS=mb, RK_W_IN_REGS=0))
    for mult in (1, 2, 4, 8):
        if sm_count * mult < full:
            out.append(variant(grid=sm_count * mult, TILEOPS_PREFETCH=1))
    ng = _groups(n, elem)
    for t2 in (2 * threads, 4 * threads):   # fewer groups per thread: fewer registers
        if t2 <= 1024 and rt == threads:
            out.append(("tileops_rms_norm", t2, t2, 0, rows, {"TILEOPS_MIN_BLOCKS": max(1, 1024 // t2)}))
    # the row in shared memory: small blocks (more rows resident than registers allow),
    # and persistent grids (the next row's copy overlaps the stores)
    for t in (64, 128, 256, 512, 1024):
        if ng * 16 + t // 4 <= smem_limit:
            if t <= 256:
                out.append(("tileops_rms_norm_on_chip", t, None, ng * 16, rows, {}))
            for mult in (1, 2, 4):
                if sm_count * mult < rows and mult * t <= 2048 and t >= 256:
                    out.append(("tileops_rms_norm_on_chip", t, None, ng * 16, sm_count * mult, {}))
    out.append(variant())
    return out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--only", default=None, help="comma-separated workloads, e.g. 2048x4096,1x4096")
    p.add_argument("--mode", choices=("shapes", "policies"), default="shapes",
                   help="shapes: every launch shape; policies: norm.cu's tuning defines "
                        "(cache policies, register cap, prefetch) on the shipped shape")
    a = p.parse_args(argv)
    dtype = getattr(torch, a.dtype)
    elem = dtype.itemsize
    attrs = runtime.device_attributes(0)
    sm, smem = attrs["sm_count"], attrs["max_shared_per_block"]
    entry = tileops.manifest.package_entries()["RMSNormFwdOp"]
    make_configs = shape_configs if a.mode == "shapes" else policy_configs
    rows_out, best = [], []
    for wl in entry.workloads:
        rows, n = wl["x"]
        if a.only and f"{rows}x{n}" not in a.only.split(","):
            continue
        x, w = common.norm_inputs((rows, n), dtype, "cuda")
        y = torch.empty_like(x)
        eps = float(torch.finfo(dtype).eps)
        ref = F.rms_norm(x.float(), (n,), w.float(), eps)
        copy_cold = common.cuda_cold_us(lambda: y.copy_(x))
        copy_hot = common.cuda_hot_us(lambda: y.copy_(x))
        results = []
        for name, threads, rt, shared, grid, defines in make_configs(n, elem, rows, sm, smem):
            opts = list(cuda_options(name, CODE[dtype], n, True, 16 // elem, threads))
            if rt is not None:
                opts.append(f"-DTILEOPS_ROW_THREADS={rt}")
            opts += [f"-D{k}={v}" for k, v in defines.items()]
            try:
                h = runtime.build(0, CUDA_SOURCE, name, opts, CUDA_ARG_FORMAT)
            except Exception as e:  # an invalid shape is a compile error: skip it, say so
                print(f"skip {name} threads={threads} rt={rt} {defines}: {str(e).splitlines()[0][:100]}")
                continue

            def launch(h=h, threads=threads, shared=shared, grid=grid):
                _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, shared, runtime.current_stream(0),
                               x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, eps)
            y.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            err, _, ok = common.check_close(y, ref, "float16")   # the half tolerance, any dtype
            cold = common.cuda_cold_us(launch) if ok else None
            hot = common.cuda_hot_us(launch) if ok else None
            row = {"workload": f"{rows}x{n}", "dtype": a.dtype, "kernel": name, "threads": threads,
                   "row_threads": rt, "grid": grid, "shared": shared, "defines": defines,
                   "max_abs_err": err, "ok": ok,
                   "cold_us": cold, "hot_us": hot, "copy_cold_us": copy_cold, "copy_hot_us": copy_hot}
            results.append(row)
            print(f"{rows}x{n} {name:28s} threads={threads:5d} rt={str(rt):5s} grid={grid:6d} {defines} "
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
        print(f"{wl:11s} cold {bc['kernel']:17s} t={bc['threads']} rt={bc['row_threads']} grid={bc['grid']} "
              f"{bc['defines']} {bc['cold_us']:.2f} ({bc['cold_us'] / cc:.3f}x) | hot t={bh['threads']} "
              f"rt={bh['row_threads']} grid={bh['grid']} {bh['defines']} {bh['hot_us']:.2f} ({bh['hot_us'] / ch:.3f}x)")
    out = a.out or str(common.default_out("cuda", f"sweep_norm{'' if a.mode == 'shapes' else '_policies'}.json"))
    common.write_results(out, rows_out, common.metadata("cuda", sweep=f"rms_norm {a.mode}"))
    return 0 if all(r["ok"] for r in rows_out) else 1


if __name__ == "__main__":
    sys.exit(main())
