"""What in torch.compile makes later reads of its input faster? (session 39)

dev/probes/alloc_placement.py: after torch.compile(F.rms_norm, dynamic=True) ran on x0,
copies from x0 took 20.84 µs hot on an H100 and from other buffers of the same data 24.0;
dev/probes/l2_evict_last.py: a Triton load marked evict_last does not do it. Each variant
runs one thing on x0 (or x1), then times copies from x0 and x1 (hot and L2-cold), resets
the context's persisting L2 lines and times again; the persisting L2 limit before and
after is printed. One variant a process:

    python3 dev/probes/compile_side_effect.py --variant inductor|static|aot_eager|eager_backend|eager|inductor_x1
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lab  # noqa: E402

common = lab.common
common.import_tileops()
from tileops import runtime  # noqa: E402
VARIANTS = ("inductor", "static", "aot_eager", "eager_backend", "eager", "inductor_x1")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--variant", choices=VARIANTS, required=True)
    a = p.parse_args(argv)
    v = a.variant
    rows, n = 4096, 4096
    x0, w = common.norm_inputs((rows, n), torch.float16, "cuda")
    x1 = x0.clone()
    y = torch.empty_like(x0)
    before = lab.persisting_l2_limit()
    eps = torch.finfo(torch.float32).eps
    f = lambda x, w: F.rms_norm(x, (n,), w, eps)   # noqa: E731
    if v == "eager":
        f(x0, w)
    else:
        kw = {"inductor": dict(dynamic=True), "inductor_x1": dict(dynamic=True), "static": dict(dynamic=False),
              "aot_eager": dict(backend="aot_eager", dynamic=True), "eager_backend": dict(backend="eager", dynamic=True)}[v]
        torch.compile(f, fullgraph=True, **kw)(x1 if v == "inductor_x1" else x0, w)
    torch.cuda.synchronize()
    print(f"[{v}] persisting L2 limit {before} -> {lab.persisting_l2_limit()} bytes")
    fns = {"copy x0": lambda: y.copy_(x0), "copy x1": lambda: y.copy_(x1)}
    for tag in ("", " after reset"):
        if tag:
            torch.cuda.synchronize()
            runtime.reset_persisting_l2(0)
        t = lab.time_interleaved(fns, 2, cold_warmup=25, cold_rep=100)
        print(f"[{v}{tag}] " + "; ".join(f"{k} hot {min(s['hot']):.2f} cold {min(s['cold']):.2f}" for k, s in t.items()),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
