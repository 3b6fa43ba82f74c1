"""Why is Liger's RMSNorm faster after torch.compile ran in the same process? (session 39)

On an H100, `python -m tileops bench --op RMSNormFwdOp` at 4096 x 4096 fp16 timed Liger at
21.95 / 25.38 µs hot / L2-cold when the torch.compile impl ran before it in the process
(the README's `--compile dynamic`), and at 24.99 / 28.40 with `--impls tileops,liger,copy`
(tileops 23.85 / 27.55 both times, the copy 24.16 / 27.9 both times). So something the
compile leaves behind changes Liger's Triton kernel, not the GPU. This runs Liger in one
process, after a torch.compile of F.rms_norm or not, and prints what the compile changed
(environment variables, triton.knobs), Liger's, tileops' and the copy's times, and the
compiled Liger kernel's metadata; its PTX and cubin go to $OUT/liger_<tag>_<i>.{ptx,cubin}, for a diff of
the two processes:

    python3 dev/probes/liger_state.py --tag plain
    python3 dev/probes/liger_state.py --tag compiled --compile-first
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ENV_BEFORE = dict(os.environ)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import lab  # noqa: E402

common = lab.common
tileops = common.import_tileops()
import sweep_norm  # noqa: E402  (the manifest's Liger peer)

KERNEL = "_rms_norm_forward_kernel"


def knobs() -> dict:
    """triton.knobs' settings as strings ({} on a Triton without knobs)."""
    try:
        from triton import knobs as k
    except ImportError:
        return {}
    out = {}
    for group in ("compilation", "nvidia", "runtime", "cache", "build", "language"):
        g = getattr(k, group, None)
        for name in dir(g) if g is not None else ():
            if not name.startswith("_"):
                try:
                    out[f"{group}.{name}"] = repr(getattr(g, name))[:160]
                except Exception as e:   # a knob whose getter needs a device or a path
                    out[f"{group}.{name}"] = f"<{type(e).__name__}>"
    return out


def compiled_kernels():
    """(metadata, ptx, cubin) of every compiled Liger forward kernel the JIT function holds."""
    from liger_kernel.ops import rms_norm
    fn = getattr(rms_norm, KERNEL)
    found = []
    for caches in (getattr(fn, "device_caches", None) or {}).values():
        cache = caches[0] if isinstance(caches, tuple) else caches
        for ck in cache.values():
            meta = getattr(ck, "metadata", None)
            meta = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta)) if meta is not None else {}
            found.append(({k: v for k, v in meta.items() if isinstance(v, (int, float, str, bool, list, tuple))},
                          ck.asm.get("ptx", ""), ck.asm.get("cubin", b"")))
    return found


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--tag", required=True)
    p.add_argument("--compile-first", action="store_true", help="torch.compile F.rms_norm (dynamic) and run it first")
    p.add_argument("--shape", default="4096x4096")
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args(argv)
    rows, n = (int(v) for v in a.shape.split("x"))
    liger = sweep_norm.liger_rms_norm(tileops.manifest.package_entries()["RMSNormFwdOp"])
    if liger is None:
        raise SystemExit("liger_state: liger_kernel does not import (carry .whl)")
    x, w = common.norm_inputs((rows, n), torch.float16, "cuda")
    eps = torch.finfo(torch.float32).eps
    knobs_before = knobs()
    if a.compile_first:
        ref = torch.compile(lambda x, w: F.rms_norm(x, (n,), w, eps), fullgraph=True, dynamic=True)
        ref(x, w)
        torch.cuda.synchronize()
    env = {k: v for k, v in os.environ.items() if ENV_BEFORE.get(k) != v}
    gone = sorted(set(ENV_BEFORE) - set(os.environ))
    kn = knobs()
    kn_changed = {k: (knobs_before.get(k), v) for k, v in kn.items() if knobs_before.get(k) != v}
    print(f"[{a.tag}] environment set or changed since start: {json.dumps(env, indent=1)}; removed: {gone}")
    print(f"[{a.tag}] triton.knobs changed by the compile: {json.dumps(kn_changed, indent=1)}")
    op = tileops.all_op_classes()["RMSNormFwdOp"](normalized_shape=(n,), eps=eps)
    y = torch.empty_like(x)
    fns = {"liger": lambda: liger(x, w, eps), "tileops": lambda: op(x, w), "copy": lambda: y.copy_(x)}
    times = lab.time_interleaved(fns, a.rounds, cold_warmup=25, cold_rep=100)
    for k, t in times.items():
        print(f"[{a.tag}] {a.shape} {k:8s} hot {min(t['hot']):7.2f} cold {min(t['cold']):7.2f} us")
    out = Path(os.environ.get("OUT", "/tmp"))
    for i, (meta, ptx, cubin) in enumerate(compiled_kernels()):
        print(f"[{a.tag}] compiled {KERNEL} #{i}: {json.dumps(meta, default=str)[:1500]}")
        (out / f"liger_{a.tag}_{i}.ptx").write_text(ptx)
        (out / f"liger_{a.tag}_{i}.cubin").write_bytes(cubin)
    (out / f"liger_{a.tag}_knobs.json").write_text(json.dumps(kn, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
