"""Times the norm family's row kernels (csrc/ops/norm/norm_rows.cuh) against the shipped
RMSNorm register kernel (csrc/ops/norm/rms_norm.cu) and a copy of the same bytes, fp16.

    python dev/time_norm_rows.py [--out PATH.json] [--rows 1,8,32,256,4096] [--ns 4096,8192]
                                 [--rt-op rms_norm_rows|layer_norm|...] [--no-sweep]
                                 [--patches A.patch[+B.patch][@-DX=v],...]

Per shape: `copy` (y.copy_(x)), `shipped` (tileops_rms_norm, the launch rule's build),
`rms_norm_rows` (the generic kernel, launch rule of cuda_rows.py: the same threads per
row), `rms_norm_rows rt=R` (the generic kernel at other threads per row: the decode-shape
question; with --rt-op OP, that op's builds instead), and the other ops at their rule
(layer_norm and fused_add_layer_norm with weight and bias, the RMS ones with weight), and
for each of those builds with a decode form its `... smem` row (weight and bias staged in
shared memory, cuda_rows.decode_options: what the op launches for grids of at most one
block an SM). The
other threads per row: the powers of two 32-1024 and the multiples of 32 that divide the
row's 16-byte groups (3584 fp16: 448 groups, so 224 and 448: no thread with a partial
share, the Qwen2.5 width's tail gone; a rule by n alone keeps a row's bits independent of
the row count). Session 22's lead (dev/NOTES.md): the 3584 builds carry the most code
(layer_norm's decode build 12 KB against 8 KB at 4096) and the largest one-token L2-cold
gap to Liger (0.45 us); `--ns 3584 --rows 1,32,4096 --rt-op layer_norm` asks whether
another threads-per-row closes it without a loss at 4096 rows.
--patches adds `--rt-op`'s rule build from the source with parked dev/patches applied
("<op> +NAME", and its "smem" form), a patch that touches rms_norm.cu also gives "shipped +NAME"
(the shipped RMSNorm's build from the patched source); --no-sweep drops the other threads per row and the
other ops (session 39's LayerNorm ablation: `--ns 3584 --rt-op layer_norm --no-sweep
--patches nr_ablate_mean_sum.patch`; timed in session 40 and deleted, git history).
--liger (session 44; its wheel installed) adds Liger-Kernel's RMSNorm on the same x and
weight ("liger rms_norm"), and its LayerNorm with the bias ("liger layer_norm") when
--rt-op is layer_norm: the peer the bench compares with, in the same rounds.
Each is timed hot (CUDA graph of 50 calls, L2-hot) and cold (a 256 MB buffer written before every call), in 2 interleaved rounds
(order reversed in the second); the rows give both rounds and their minimum. Kernels are
launched directly (runtime.build + _C.cuda_launch): no op layer, no allocation."""
from __future__ import annotations

import argparse
import json
import sys

import torch

import lab
from lab import common, default_out, time_interleaved

tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops.kernels.norm import cuda_rows as R  # noqa: E402
from tileops.kernels.norm import rms_norm as rms_norm_kernels  # noqa: E402

DT = 1   # float16; --dtype bfloat16: 2
SMS = 132   # the H200's SMs: the launch rule's grid cap, and the largest grid its decode build serves
OPS = (("layer_norm", True, True), ("fused_add_rms_norm", True, False), ("fused_add_layer_norm", True, True),
       ("gemma_rms_norm", True, False))


def _launcher(h, grid, threads, args):
    """A launch on torch's current stream at call time (the capturing stream in a graph)."""
    stream_of = torch._C._cuda_getCurrentRawStream

    def fn():
        _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, 0, stream_of(0), *args)
    return fn


SMEM_ANY_GRID = False   # --smem-any-grid: the decode form at every grid, not only where the launch takes it


def _add_decode(out, name, src, kname, opts, hw, hb, vec, rpb, rows, threads, args, nbytes):
    """out[name + " smem"]: the build's decode form (weight and bias staged in shared memory,
    cuda_rows.decode_options: the same bits), where it has one and the grid fits one block
    an SM (where the op's launch takes it), or at any grid with --smem-any-grid."""
    d = R.decode_options(opts, hw, hb, vec, rpb)
    if d is not None and (SMEM_ANY_GRID or -(-rows // rpb) <= SMS):
        out[name + " smem"] = (_launcher(runtime.build(0, src, kname, d, R.ARG_FORMAT), -(-rows // rpb), threads,
                                         args), nbytes)


def _op_args(op, keep, rows):
    """(launch arguments, bytes moved, has weight, has bias) of `op`'s row kernel on the
    tensors `keep` (impls' second result)."""
    x, r, w, b, y, ro = keep
    hw, hb = next(((w_, b_) for o_, w_, b_ in OPS if o_ == op), (True, False))
    res = op.startswith("fused")
    args = (x.data_ptr(), r.data_ptr() if res else 0, w.data_ptr(), b.data_ptr() if hb else 0, y.data_ptr(),
            ro.data_ptr() if res else 0, rows, 1e-5)
    return args, ((4 if res else 2) * rows + (1 + hb)) * x.shape[1] * x.element_size(), hw, hb


def add_patched(out, keep, rows, n, op, specs):
    """out["<op> +<variant>"] (and its decode form, "... smem"): `op`'s build by the launch
    rule from the source with each spec's dev/patches applied (PATCH[+PATCH...][@-DX=v...])."""
    args, nbytes, hw, hb = _op_args(op, keep, rows)
    vec = R.vec_for(DT, n, True)
    src, kname, opts, threads, rpb, _, cap = R.specialisation(op, DT, n, hw, hb, vec, SMS)
    for spec in specs:
        patches, defines, _ = lab.parse_spec(spec)
        psrc, o = lab.patched_source(src, patches), lab.with_defines(opts, defines)
        name = f"{op} +{lab.variant_name(spec)}"
        out[name] = (_launcher(runtime.build(0, psrc, kname, o, R.ARG_FORMAT), min(-(-rows // rpb), cap or 2**31 - 1),
                               threads, args), nbytes)
        _add_decode(out, name, psrc, kname, o, hw, hb, vec, rpb, rows, threads, args, nbytes)
        if any("csrc/ops/norm/rms_norm.cu" in lab.files_of((lab.DEV_DIR / "patches" / f).read_text()) for f in patches):
            out[f"shipped +{lab.variant_name(spec)}"] = _shipped(
                keep, rows, n, lab.patched_source("norm/rms_norm.cu", patches), defines)


def _shipped(keep, rows, n, source="norm/rms_norm.cu", defines=()):
    """(launch, bytes moved) of the shipped RMSNorm register kernel's build by RMSNormFwdOp's
    launch rule (tileops.kernels.norm.rms_norm) from `source`, with `defines` replacing options."""
    x, _, w, _, y, _ = keep
    vec = R.vec_for(DT, n, True)
    opts, threads, rpb, _, _ = rms_norm_kernels.cuda_specialisation("tileops_rms_norm", DT, n, True, vec, SMS)
    shipped = lab.with_defines(opts, defines)
    h = runtime.build(0, source, "tileops_rms_norm", shipped, "pppqqqf")
    return (_launcher(h, -(-rows // rpb), threads, (x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, 1e-6)),
            (2 * rows + 1) * n * x.element_size())


def add_liger(out, keep, rt_op):
    """out["liger rms_norm"] (and "liger layer_norm" when rt_op is layer_norm): Liger-Kernel's
    functions on the same tensors (its wheel must be installed)."""
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    x, _, w, b, y, _ = keep
    e = x.element_size()
    out["liger rms_norm"] = (lambda: LigerRMSNormFunction.apply(x, w, 1e-6), (2 * x.numel() + x.shape[1]) * e)
    if rt_op == "layer_norm":
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        out["liger layer_norm"] = (lambda: LigerLayerNormFunction.apply(x, w, b, 1e-5),
                                   (2 * x.numel() + 2 * x.shape[1]) * e)


def impls(rows, n, rt_op="rms_norm_rows", sweep=True):
    """name -> (callable, bytes moved); sweep=False: the copy, the shipped RMSNorm and
    `rt_op`'s rule build alone (no other threads per row, no other op)."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    dt = torch.bfloat16 if DT == 2 else torch.float16
    x = torch.randn(rows, n, generator=gen).to("cuda", dt)
    r = torch.randn(rows, n, generator=gen).to("cuda", dt)
    w = (1 + 0.1 * torch.randn(n, generator=gen)).to("cuda", dt)
    b = (0.1 * torch.randn(n, generator=gen)).to("cuda", dt)
    y, ro = torch.empty_like(x), torch.empty_like(x)
    e = 2
    out = {"copy": (lambda: y.copy_(x), 2 * rows * n * e)}
    vec = R.vec_for(DT, n, True)
    src, kname, opts, threads, rpb, _, cap = R.specialisation("rms_norm_rows", DT, n, True, False, vec, SMS)
    out["shipped"] = _shipped((x, r, w, b, y, ro), rows, n)
    rows_args = (x.data_ptr(), 0, w.data_ptr(), 0, y.data_ptr(), 0, rows, 1e-6)
    h = runtime.build(0, src, kname, opts, R.ARG_FORMAT)
    out["rms_norm_rows"] = (_launcher(h, -(-rows // rpb), threads, rows_args), (2 * rows + 1) * n * e)
    op_args, op_bytes, hw, hb = _op_args(rt_op, (x, r, w, b, y, ro), rows)
    src, kname, opts, threads, rpb, _, cap = R.specialisation(rt_op, DT, n, hw, hb, vec, SMS)
    rule_rt = int(dict(o[2:].split("=") for o in opts)["TILEOPS_ROW_THREADS"])
    ng = n // 8
    divisors = {d for d in range(32, min(ng, 1024) + 1, 32) if ng % d == 0}
    for rt in sorted({32, 64, 128, 256, 512, 1024} | divisors) if sweep else ():
        if rt == rule_rt or -(-ng // rt) > 16 or rt > ng:
            continue
        t = max(rt, 128) if rt & (rt - 1) == 0 else rt   # a block a multiple of rt
        mb = max(1, 1024 // t) if -(-ng // rt) <= 4 else 0   # no register cap for fat threads
        o = [d for d in opts if not d.startswith(("-DTILEOPS_THREADS", "-DTILEOPS_ROW_THREADS", "-DTILEOPS_MIN"))]
        o += [f"-DTILEOPS_THREADS={t}", f"-DTILEOPS_ROW_THREADS={rt}", f"-DTILEOPS_MIN_BLOCKS={mb}"]
        try:
            hh = runtime.build(0, src, kname, o, R.ARG_FORMAT)
        except Exception as ex:  # a shape the source refuses: say so, go on
            print(f"skip rt={rt}: {str(ex).splitlines()[0][:100]}")
            continue
        out[f"{rt_op} rt={rt}"] = (_launcher(hh, -(-rows // (t // rt)), t, op_args), op_bytes)
        _add_decode(out, f"{rt_op} rt={rt}", src, kname, o, hw, hb, vec, t // rt, rows, t, op_args, op_bytes)
    for op, _, _ in (OPS if sweep else [o for o in OPS if o[0] == rt_op]):
        args, nbytes, hw, hb = _op_args(op, (x, r, w, b, y, ro), rows)
        src, kname, opts, threads, rpb, _, cap = R.specialisation(op, DT, n, hw, hb, vec, SMS)
        hh = runtime.build(0, src, kname, opts, R.ARG_FORMAT)
        out[op] = (_launcher(hh, min(-(-rows // rpb), cap or 2**31 - 1), threads, args), nbytes)
        _add_decode(out, op, src, kname, opts, hw, hb, vec, rpb, rows, threads, args, nbytes)
    return out, (x, r, w, b, y, ro)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--rows", default="1,8,32,256,4096")
    p.add_argument("--ns", default="4096,8192")
    p.add_argument("--rt-op", default="rms_norm_rows", choices=R.ops(),
                   help="the op whose builds at other threads per row are timed")
    p.add_argument("--patches", default="",
                   help="also --rt-op's rule build from the source with these dev/patches applied "
                        "(comma-separated specs A.patch[+B.patch][@-DX=v], labelled '+NAME')")
    p.add_argument("--smem-any-grid", action="store_true",
                   help="time each build's decode form (weight and bias staged in shared memory) at every row "
                        "count, not only where the grid fits one block an SM (session 41: LayerNorm's L2-cold "
                        "loss to Liger at 256 tokens, a grid of one wave but more than one block an SM)")
    p.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"), help="every tensor's dtype")
    p.add_argument("--liger", action="store_true",
                   help="also Liger-Kernel's RMSNorm (and LayerNorm with --rt-op layer_norm) on the same tensors")
    p.add_argument("--no-sweep", action="store_true",
                   help="only the copy, the shipped RMSNorm, --rt-op's rule build and the --patches variants")
    a = p.parse_args(argv)
    global SMEM_ANY_GRID, DT
    SMEM_ANY_GRID = a.smem_any_grid
    DT = 2 if a.dtype == "bfloat16" else 1
    specs = [v for v in a.patches.split(",") if v]
    for spec in specs:
        lab.parse_spec(spec)   # a bad spec stops the run before any build
    results = []
    for n in (int(v) for v in a.ns.split(",")):
        for rows in (int(v) for v in a.rows.split(",")):
            fns, keep = impls(rows, n, a.rt_op, sweep=not a.no_sweep)
            add_patched(fns, keep, rows, n, a.rt_op, specs)
            if a.liger:
                add_liger(fns, keep, a.rt_op)
            times = time_interleaved({k: f[0] for k, f in fns.items()})
            for k in fns:
                row = {"workload": f"{rows}x{n}", "dtype": a.dtype, "impl": k, "bytes": fns[k][1],
                       "hot_us": min(times[k]["hot"]), "cold_us": min(times[k]["cold"]),
                       "hot_us_rounds": times[k]["hot"], "cold_us_rounds": times[k]["cold"]}
                results.append(row)
                print(f"{rows:5d}x{n:<5d} {k:24s} hot {row['hot_us']:8.2f}  cold {row['cold_us']:8.2f}  "
                      f"rounds hot {' '.join(f'{v:.2f}' for v in times[k]['hot'])} "
                      f"cold {' '.join(f'{v:.2f}' for v in times[k]['cold'])}", flush=True)
            del fns, keep
            torch.cuda.empty_cache()
    out = a.out or str(default_out("norm_rows_timing.json"))
    common.write_results(out, results, common.metadata("cuda", timing="norm rows vs shipped rms_norm"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
