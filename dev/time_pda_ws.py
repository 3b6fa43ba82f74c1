"""Is a split's per-chunk partial store what slows paged decode attention's split launches?
(Session 13: a split of the same work ran 8-14 % slower than no split, with the same
occupancy and stalls; Nsight showed DRAM idle 13 % of the time against 6 %. The answer was
yes: without the stores the split ran at the unsplit kernel's speed. The partial rows of
D + 2 floats leave 32-byte sectors written in part, but rows of D + 8 floats with every
sector written whole ran no faster (277 against 277 µs at Llama-3-8B B = 8, 32K, in the op:
benchmarks/results/h200/session13/pda_sectors.json); fewer stores is what is left to try.)

    cd dev && python3 time_pda_ws.py [--cases 8B:8:32768:4,8B:32:32768:2] [--out pda_ws_lab.json]

Times the shipped main kernel alone (no merge kernel; launched plainly) on Llama-3-8B-like
inputs for each case MODEL:B:CTX:S, built from the shipped source with its partial stores
rewritten:
  plain    the shipped stores (rows of D + 2 floats; m and l stored by one thread each);
  none     no stores (timing only: the partials are never written);
  sectors  rows of D + 8 floats, every 32-byte sector written whole by one instruction;
  every8   only every 8th chunk's partial stored (timing only: what a fold that stores one
           partial per 8 chunks would store);
  sc8      the shipped source built with superchunks of 8 chunks (-DPDA_SC=8, the
           SUPERCHUNK knob: one partial stored a superchunk where cpc is a multiple of 8);
and the same inputs without a split (S = 1, every chunk folded in the CTA) as the floor,
also with superchunks of 8 (nosplit_sc8: the cost of the second fold state).
Hot (CUDA graph) and cold (L2 flushed) microseconds, interleaved rounds (lab.time_interleaved)."""
from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import torch

import lab
from tileops import _C, runtime
from tileops._dtypes import CODE
from tileops.kernels.attention import paged_decode_attention as K

MODELS = {"8B": (32, 8), "Qwen": (28, 4), "70B": (16, 2)}
ML_STORE = """if (split && fu == 0 && PDA_HEAD_OK(fg)) {
                P[PDA_D] = cm;
                P[PDA_D + 1] = cl;
            }"""
# kind -> ((shipped text, its replacement), ...)
EDITS = {
    "plain": (),
    "none": (("P[d] = ca;", "(void)ca;"), (ML_STORE, "(void)P;")),
    "sectors": (("const float *Q = P + (c0 + j) * (PDA_D + 2);", "const float *Q = P + (c0 + j) * (PDA_D + 8);"),
                ("const float *P = ws + bh * max_chunks * (PDA_D + 2);",
                 "const float *P = ws + bh * max_chunks * (PDA_D + 8);"),
                ("ws + ((b * H + hbase + fg) * max_chunks + c) * (PDA_D + 2)",
                 "ws + ((b * H + hbase + fg) * max_chunks + c) * (PDA_D + 8)"),
                (ML_STORE, "if (split && fu < 8 && PDA_HEAD_OK(fg)) P[PDA_D + fu] = fu == 0 ? cm : fu == 1 ? cl : 0.0f;")),
    "every8": (("P[d] = ca;", "if ((c & 7) == 7) P[d] = ca;"),
               ("if (split && fu == 0 && PDA_HEAD_OK(fg)) {", "if (split && fu == 0 && PDA_HEAD_OK(fg) && (c & 7) == 7) {")),
}
EDITS["sc8"] = ()            # the shipped source built with superchunks of 8 chunks: one store a superchunk
SUPERCHUNKS = {"sc8": 8}     # chunks a superchunk of a kind's build (else 1: chunk by chunk)
WS_FLOATS = {"sectors": 8}   # a row's floats past D (else 2, the shipped rows)


def lab_source(kind: str) -> str:
    text = runtime.source("attention/paged_decode_attention.cu")
    for old, new in EDITS[kind]:
        if old not in text:
            raise SystemExit(f"time_pda_ws: the shipped source no longer has '{old}'")
        text = text.replace(old, new)
    path = Path(tempfile.mkdtemp(prefix="lab_pda_")) / f"pda_{kind}.cu"
    path.write_text(text)
    return str(path)


def launcher(handle, smem, grid, s, cpc, t, ws):
    args = (t["q"].data_ptr(), t["kc"].data_ptr(), t["vc"].data_ptr(), t["bt"].data_ptr(), t["sl"].data_ptr(),
            t["o"].data_ptr(), 0, 0 if ws is None else ws.data_ptr(), t["H"], t["Hkv"], t["kc"].shape[0],
            t["bt"].shape[1], t["max_chunks"], cpc, 1, t["scale_log2"])
    stream = torch._C._cuda_getCurrentRawStream

    keep = (t, ws)   # the tensors behind the pointers live as long as the launch

    def launch():
        _C.cuda_launch(handle, grid, s, 1, K.THREADS, 1, 1, smem, stream(0), *args)
        return keep
    return launch


def case(model, B, ctx, S, D=128, BS=16, dtype=torch.float16):
    H, Hkv = MODELS[model]
    nb = ctx // BS
    kc = torch.randn(B * nb, BS, Hkv, D, device="cuda", dtype=dtype)
    t = {"kc": kc, "vc": torch.randn_like(kc), "q": torch.randn(B, H, D, device="cuda", dtype=dtype),
         "bt": torch.randperm(B * nb, device="cuda").view(B, nb).to(torch.int32),
         "sl": torch.full((B,), ctx, dtype=torch.int32, device="cuda"),
         "o": torch.empty(B, H, D, device="cuda", dtype=dtype), "H": H, "Hkv": Hkv,
         "max_chunks": -(-ctx // K.CHUNK), "scale_log2": D ** -0.5 * math.log2(math.e)}
    G = H // Hkv
    heads = K.heads_per_cta(D, G)
    assert heads == G, "one head slice a KV head (zs = 1) in this lab"
    stages, _ = K.choose_stages(CODE[dtype], D, heads, True)
    _, kernel, _, _ = K.cuda_specialisation(CODE[dtype], D, G, heads, BS, True, stages, 1)
    smem = K.smem_bytes(CODE[dtype], D, heads, stages, True, 1)
    cpc = -(-t["max_chunks"] // S)
    ctas = B * Hkv
    fns = {}
    for kind in EDITS:
        ws = torch.empty(B * H * t["max_chunks"] * (D + WS_FLOATS.get(kind, 2)), dtype=torch.float32, device="cuda")
        opts = K.cuda_specialisation(CODE[dtype], D, G, heads, BS, True, stages, 1,
                                     superchunk=SUPERCHUNKS.get(kind, 1))[3]
        h = runtime.build(0, lab_source(kind), kernel, opts, K.ARG_FORMAT_CUDA, pdl=False)
        fns[f"split{S}_{kind}"] = launcher(h, smem, ctas, S, cpc, t, ws)
        if kind in ("plain", "sc8"):
            fns["nosplit" + ("_sc8" if kind == "sc8" else "")] = launcher(h, smem, ctas, 1, t["max_chunks"], t, None)
    times = lab.time_interleaved(fns)
    row = {"case": f"{model} B={B} ctx={ctx} S={S} cpc={cpc}"}
    for k, v in times.items():
        row[k] = {m: min(x) for m, x in v.items()}
    print(row["case"], "  ".join(f"{k} {v['hot']:.1f}/{v['cold']:.1f}" for k, v in row.items() if k != "case"),
          flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="8B:8:32768:4,8B:32:32768:2,70B:32:32768:4,8B:1:32768:32")
    ap.add_argument("--out", default="pda_ws_lab.json")
    a = ap.parse_args()
    rows = []
    for spec in a.cases.split(","):
        m, B, ctx, S = spec.split(":")
        rows.append(case(m, int(B), int(ctx), int(S)))
    with open(a.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
