"""Do loads marked L2::evict_last keep a tensor in L2 through the bench's flush? (session 39)

dev/probes/alloc_placement.py: after torch.compile ran F.rms_norm on x0, copies *from x0*
took 20.84 µs hot / 24.77 L2-cold on an H100 and copies from three other buffers of the
same data 24.0 / 27.7. Inductor's reductions load their input with
eviction_policy="evict_last" (read twice: for the sum, then to scale). Suspect: lines
loaded with that priority stay in L2 (H100: 50 MB; x 33.5 MB) through the 256 MB the cold
timer writes, so later reads of x0 hit L2. This touches x1 once with a Triton load marked
evict_last and x2 with evict_first, times copies from x0 (untouched), x1, x2, then resets
the context's persisting lines (cuCtxResetPersistingL2Cache) and times again:

    python3 dev/probes/l2_evict_last.py [--shape 4096x4096]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lab  # noqa: E402

common = lab.common
common.import_tileops()
from tileops import runtime  # noqa: E402

BLOCK = 4096


@triton.jit
def _touch(x_ptr, out_ptr, n, BLOCK: tl.constexpr, POLICY: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0, eviction_policy=POLICY)
    tl.store(out_ptr + tl.program_id(0), tl.sum(v.to(tl.float32), axis=0))


def touch(x, policy):
    out = torch.empty(triton.cdiv(x.numel(), BLOCK), device=x.device, dtype=torch.float32)
    _touch[(out.numel(),)](x, out, x.numel(), BLOCK=BLOCK, POLICY=policy)
    torch.cuda.synchronize()


def times(tag, fns):
    t = lab.time_interleaved(fns, 2, cold_warmup=25, cold_rep=100)
    for k, v in t.items():
        print(f"[{tag}] {k:12s} hot {min(v['hot']):7.2f} cold {min(v['cold']):7.2f} us", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="4096x4096")
    a = p.parse_args(argv)
    rows, n = (int(v) for v in a.shape.split("x"))
    xs = [common.norm_inputs((rows, n), torch.float16, "cuda")[0] for _ in range(3)]
    y = torch.empty_like(xs[0])
    print(f"persisting L2 limit: {lab.persisting_l2_limit()} bytes; L2 "
          f"{torch.cuda.get_device_properties(0).L2_cache_size >> 20} MiB")
    fns = {f"copy x{i}": (lambda x=x: y.copy_(x)) for i, x in enumerate(xs)}
    times("before", fns)
    touch(xs[1], "evict_last")
    touch(xs[2], "evict_first")
    times("x1 evict_last, x2 evict_first", fns)
    torch.cuda.synchronize()
    runtime.reset_persisting_l2(0)   # cuCtxResetPersistingL2Cache (raises on failure)
    times("after reset", fns)
    for _ in range(3):
        touch(xs[1], "evict_last")
    times("x1 evict_last x3", fns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
