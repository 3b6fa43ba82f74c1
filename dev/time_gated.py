"""Launch variants of the gated activations' CUDA kernel (csrc/ops/activation/gated_act.cuh):
groups per thread (TILEOPS_UNROLL) and the grid (one wave of resident threads striding, or
a block per tile of threads x UNROLL groups) and the block size, fp16, launched directly;
--elems adds the element build (a thread per element, -DTILEOPS_GATED_ELEMS=1: one copy of
the activation's code instead of 8; parked in session 21, shipped in session 22 for the
erf GELU's small calls, up to cuda_gated.ELEMS_MAX outputs).

    python dev/time_gated.py [--out PATH.json] [--rows 1,32,256,4096] [--ns 14336,18944,28672]
                             [--unrolls 1,2,4,8] [--threads 256] [--grids wave,full]
                             [--op silu_and_mul|gelu_and_mul|gelu_tanh_and_mul] [--cast] [--elems]
                             [--defines=-DTILEOPS_GATED_PLAIN=1] [--dtype float16|bfloat16]
                             [--patches A.patch[+B.patch][@-DX=v],...]

Per shape: the variants "u<U> t<threads> wave" / "... full" (and "elems t<threads>"),
torch.compile of the reference (tileops.reference.activation's, with --cast Hugging Face's
rounding) and a copy of the same bytes (torch's copy of a 1.5x buffer: x read, y written),
hot (CUDA graph of 50 calls) and cold (256 MB written before each call), 2 interleaved
rounds, min reported; every variant's y checked bit for bit against the first's (a
--patches variant's bits and its largest error against float64 are reported instead: an
ablation's are wrong by design; its label ends in +NAME, lab.variant_name). The
questions: what closes the 8-15 % the op lost to torch.compile at 4096 tokens (dev/NOTES.md,
session 5), and whether less code closes the one-token L2-cold gap (session 21: the erf
kernel's 5.8 KB of code, +0.4 µs over torch.compile L2-cold, silu's 3.5 KB level).
The lab's session 21 runs: `--op gelu_and_mul --rows 1,32,4096 --ns 14336 --unrolls 1
--threads 128 --grids full --elems` (and --op silu_and_mul, the control)."""
from __future__ import annotations

import argparse
import sys

import torch

import lab
from lab import common, default_out, min_rows, time_interleaved

tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops.kernels.activation import cuda_gated as G  # noqa: E402
from tileops.reference import activation as R  # noqa: E402

DTYPES = {"float16": (1, torch.float16), "bfloat16": (2, torch.bfloat16)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--rows", default="1,32,256,4096")
    p.add_argument("--ns", default="14336,18944,28672")
    p.add_argument("--unrolls", default="1,2,4,8")
    p.add_argument("--threads", default="256")
    p.add_argument("--grids", default="wave,full")
    p.add_argument("--op", default="silu_and_mul", choices=("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"))
    p.add_argument("--cast", action="store_true", help="Hugging Face's rounding (act(a) rounded before the product)")
    p.add_argument("--elems", action="store_true", help="also the parked build of a thread per element")
    p.add_argument("--defines", default="",
                   help="also each launch variant built with these space-separated -D options (labelled '+D'), "
                        "e.g. --defines=-DTILEOPS_GATED_PLAIN=1")
    p.add_argument("--dtype", default="float16", choices=tuple(DTYPES))
    p.add_argument("--patches", default="",
                   help="also each launch variant built from the source with these dev/patches applied "
                        "(comma-separated specs A.patch[+B.patch][@-DX=v...], labelled '+NAME')")
    a = p.parse_args(argv)
    dt, torch_dt = DTYPES[a.dtype]
    specs = [v for v in a.patches.split(",") if v]
    for spec in specs:
        lab.parse_spec(spec)   # a bad spec stops here, before any timing
    reference = lambda x: getattr(R, a.op)(x, cast_before_mul=a.cast)  # noqa: E731
    stream_of = torch._C._cuda_getCurrentRawStream
    sm = runtime.device_attributes(0)["sm_count"]
    compiled = torch.compile(reference)
    results = []
    for n in (int(v) for v in a.ns.split(",")):
        for rows in (int(v) for v in a.rows.split(",")):
            gen = torch.Generator(device="cpu").manual_seed(0)
            x = torch.randn(rows, 2 * n, generator=gen).to("cuda", torch_dt)
            y = torch.empty(rows, n, device="cuda", dtype=torch_dt)
            c_src = torch.empty(rows, 3 * n, device="cuda", dtype=torch_dt)
            c_dst = torch.empty_like(c_src)
            fns = {"copy 1.5x": lambda: c_dst.copy_(c_src), "torch.compile": lambda: compiled(x)}
            ng = G.groups(dt, n)
            patched_labels = set()   # the --patches variants: their bits reported, not asserted
            for u in (int(v) for v in a.unrolls.split(",")):
                for threads in (int(v) for v in a.threads.split(",")):
                    src, kname, opts, threads, _ = G.specialisation(a.op, dt, n, 8, u, threads, cast=a.cast)
                    need = -(-(rows * ng) // (threads * u))
                    grids = {"wave": min(need, sm * 2048 // threads), "full": min(need, G.GRID_MAX)}
                    builds = [(src, (), "")] + ([(src, tuple(a.defines.split()), " +D")] if a.defines else [])
                    for spec in specs:
                        files, defines, _ = lab.parse_spec(spec)
                        builds.append((lab.patched_source(src, files), defines, " +" + lab.variant_name(spec)))
                    for source, extra, tag in builds:
                        h = runtime.build(0, source, kname, lab.with_defines(opts, extra), G.ARG_FORMAT)
                        for label in a.grids.split(","):
                            def fn(h=h, grid=grids[label], threads=threads):
                                _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, 0, stream_of(0), x.data_ptr(),
                                               y.data_ptr(), rows)
                            fns[f"u{u} t{threads} {label}{tag}"] = fn
                            if source != src:
                                patched_labels.add(f"u{u} t{threads} {label}{tag}")
            for threads in (int(v) for v in a.threads.split(",")) if a.elems else ():
                src, kname, opts, threads, _ = G.specialisation(a.op, dt, n, 8, 1, threads, cast=a.cast, elems=True)
                h = runtime.build(0, src, kname, opts, G.ARG_FORMAT)

                def fn(h=h, grid=min(-(-(rows * n) // threads), G.GRID_MAX), threads=threads):
                    _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, 0, stream_of(0), x.data_ptr(), y.data_ptr(), rows)
                fns[f"elems t{threads}"] = fn
            names = list(fns)
            ref, exact = None, reference(x.double())
            patched = {}
            for k in names:   # every variant gives the same bits (a patched one: reported)
                if k[0] == "u" or k.startswith("elems"):
                    y.zero_()
                    fns[k]()
                    torch.cuda.synchronize()
                    if ref is None:
                        ref = y.clone()
                    if k in patched_labels:
                        patched[k] = (torch.equal(y, ref), (y.double() - exact).abs().max().item())
                    else:
                        assert torch.equal(y, ref), k
            results += min_rows(time_interleaved(fns), f"{rows}x{n}", f"{rows:5d}x{n:<5d}", 16, dtype=a.dtype)
            err = (ref.double() - exact).abs().max().item()
            print(f"  max |y - float64 reference| {err:.3g}")
            for k, (same, e) in patched.items():
                print(f"  {k}: {'the same bits' if same else 'bits DIFFER'}, max |y - float64 reference| {e:.3g}")
            del fns, x, y, c_src, c_dst
    out = a.out or str(default_out("gated_variants.json"))
    what = f"gated activation launch variants, {a.op}{' cast' if a.cast else ''}"
    common.write_results(out, results, common.metadata("cuda", timing=what))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
