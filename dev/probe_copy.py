"""How fast can the bytes of a row op move at all? A copy written the way the RMSNorm kernels move
bytes (dev/probes/copy_probe.cu) against torch's ``y.copy_(x)`` and tileops'
RMSNorm, timed the same way (L2-cold do_bench median, hot CUDA-graph replay).

    python dev/probe_copy.py [--out PATH.json] [--only 2048x4096,...]

For each manifest workload (fp16): torch copy; probe_copy for several block sizes and
vectors in flight per thread; probe_read (x only, the DRAM read floor); tileops. If the
best hand-written copy is no faster than torch's, the copy is the floor and a norm
cannot go much under it; the table printed last says so per workload."""
from __future__ import annotations

import argparse
import os
import sys

import torch

from lab import common, default_out

tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops.norm import RMSNormFwdOp  # noqa: E402

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes", "copy_probe.cu")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--only", default=None)
    a = p.parse_args(argv)
    dtype = torch.float16
    entry = tileops.manifest.package_entries()["RMSNormFwdOp"]
    rows_out, summary = [], []
    for wl in entry.workloads:
        rows, n = wl["x"]
        name = f"{rows}x{n}"
        if a.only and name not in a.only.split(","):
            continue
        x, w = common.norm_inputs((rows, n), dtype, "cuda")
        y = torch.empty_like(x)
        n16 = x.numel() * x.element_size() // 16
        res = {}

        def record(impl, fn, **extra):
            fn()
            torch.cuda.synchronize()
            cold, hot = common.cuda_cold_us(fn), common.cuda_hot_us(fn)
            res[impl] = (cold, hot)
            rows_out.append({"workload": name, "dtype": "float16", "impl": impl, "cold_us": cold,
                             "hot_us": hot, **extra})
            print(f"{name:11s} {impl:34s} cold {cold:7.2f}  hot {hot:7.2f}")

        record("torch copy", lambda: y.copy_(x))
        for threads in (128, 256, 512):
            for unroll in (1, 2, 4, 8):
                opts = [f"-DPROBE_THREADS={threads}", f"-DPROBE_UNROLL={unroll}"]
                grid = -(-n16 // (threads * unroll))
                for kernel in ("probe_copy",) + (("probe_read",) if (threads, unroll) == (256, 4) else ()):
                    h = runtime.build(0, PROBE, kernel, opts, "ppq")

                    def launch(h=h, threads=threads, grid=grid):
                        _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, 0, runtime.current_stream(0),
                                       x.data_ptr(), y.data_ptr(), n16)
                    if kernel == "probe_copy":
                        y.zero_()
                        launch()
                        torch.cuda.synchronize()
                        assert torch.equal(y, x), f"probe_copy {threads}x{unroll} is wrong"
                    record(f"{kernel} t={threads} u={unroll}", launch, threads=threads, unroll=unroll)
        op = RMSNormFwdOp((n,))
        record("tileops rms_norm", lambda: op(x, w))
        copies = {k: v for k, v in res.items() if k.startswith("probe_copy")}
        best = min(copies, key=lambda k: copies[k][0])
        summary.append((name, res["torch copy"], best, copies[best], res["probe_read t=256 u=4"],
                        res["tileops rms_norm"]))
        del x, w, y
        torch.cuda.empty_cache()
    print("\nworkload    torch copy cold/hot | best probe copy cold/hot | read only cold | tileops cold/hot")
    for name, tc, best, bc, rd, to in summary:
        print(f"{name:11s} {tc[0]:6.2f}/{tc[1]:6.2f} | {best:22s} {bc[0]:6.2f}/{bc[1]:6.2f} | "
              f"{rd[0]:6.2f} | {to[0]:6.2f}/{to[1]:6.2f}")
    out = a.out or str(default_out("probe_copy.json"))
    common.write_results(out, rows_out, common.metadata("cuda", probe="copy floor"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
