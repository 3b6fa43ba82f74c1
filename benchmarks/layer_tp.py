"""The tensor-parallel Llama decoder layer (tileops.nn.TensorParallelLlamaDecoderLayer) over N
GPUs against the same layer on one GPU: equality, timings, and each rank's compiled graph.

    python benchmarks/layer_tp.py --device cuda [--nproc 2] [--quick] [--out PATH.json]
                                  [--batches 1,32,128] [--context 4096] [--prefill 2048]
    torchrun --nproc-per-node 2 benchmarks/layer_tp.py --device cuda      (the same, launched by torchrun)
    python benchmarks/layer_tp.py --device cpu --quick                     (gloo, 2 processes: the smoke test)

Without torchrun's environment the script starts --nproc processes itself (mp.spawn); NCCL
on CUDA (rank r on cuda:r), gloo on the CPU. Shapes as benchmarks/layer.py (Llama-3-8B,
bfloat16, pages of 16; --quick: the tiny layer). Every rank builds the same full layer
(seed 0) and a tensor-parallel one from its state_dict (each rank slices its shards: 16
query heads, 4 KV heads, 7168 MLP channels of Llama-3-8B at N = 2), and the same random KV
cache; the TP rank's cache holds its KV heads of it.

Per decode batch size B (context 4096, the last token's step, as layer.py) and for the
prefill (one sequence of 2048 tokens):
  1 GPU (CUDA graph)   the full layer on each rank's GPU alone, captured in a CUDA graph
  TP eager             the TP layer, eager (two NCCL all-reduces per step)
  TP (CUDA graph)      the TP layer captured in a CUDA graph (NCCL all-reduces captured;
                       reported as an error where capture fails)
  TP torch.compile     torch.compile(fullgraph=True, dynamic=False) of the TP layer
                       (inductor, default mode); its dynamo graph is kept and each rank
                       reports the graph's tileops nodes and collective nodes: one node per
                       tileops call, two all-reduces, no graph break (fullgraph)
Prefill: 1 GPU eager, TP eager, TP torch.compile. Equality: each TP impl's output against the
1-GPU layer's on the same inputs (max abs error / max(1, max |1 GPU|) within 2e-2 in
bfloat16: the row-parallel partial products are rounded to bfloat16 before their sum); a
mismatch flags the row and exits 1.

Timing: layer.py's Timer (CUDA events around rounds of back-to-back calls, rounds interleaved,
the median), every rank timing at once with the same calls per round, a barrier before each
timed loop; the JSON has rank 0's times and the slowest rank's. Output: {"metadata", "rows"} (--out, default
benchmarks/results/<device>/layer_tp.json) and a table."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import layer as single  # noqa: E402

ONE_GRAPH, ONE_EAGER = "1 GPU (CUDA graph)", "1 GPU eager"
TP_EAGER, TP_GRAPH, TP_COMPILE = "TP eager", "TP (CUDA graph)", "TP torch.compile"


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    single.add_arguments(ap, "layer_tp.json")
    ap.add_argument("--nproc", type=int, default=2, help="ranks to start without torchrun (default 2)")
    return single.finish_args(ap.parse_args(argv))


def node_names(gm):
    """The graph's tileops and collective nodes, in order."""
    import operator
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is not operator.getitem:
            schema = getattr(n.target, "_schema", None)
            name = schema.name if schema is not None else str(n.target)
            if name.startswith("tileops") or "c10d" in name:
                out.append(name)
    return out


def compile_recording(layer, backend_name):
    """torch.compile(layer, fullgraph=True, dynamic=False) with `backend_name`, keeping each
    dynamo graph (a list the graphs are appended to)."""
    import torch
    graphs = []
    if backend_name == "inductor":
        from torch._inductor.compile_fx import compile_fx as inner
    else:
        from torch._dynamo.backends.debugging import aot_eager as inner

    def backend(gm, example_inputs):
        graphs.append(gm)
        return inner(gm, example_inputs)
    return torch.compile(layer, backend=backend, fullgraph=True, dynamic=False), graphs


def case(args, rank, timer, full, tp, batch, n_tokens, decode, failures):
    import torch
    import torch.distributed as dist
    dev = f"cuda:{rank}" if args.device == "cuda" else "cpu"
    dtype = getattr(torch, args.dtype)
    ctx, bs = (args.context, args.block_size) if decode else (n_tokens, args.block_size)
    kv, table = single.paged_cache(full, batch, ctx, dev, dtype, seed=batch if decode else 7)
    hk = tp.num_kv_heads
    kv_tp = tuple(t[:, :, rank * hk:(rank + 1) * hk].contiguous() for t in kv)
    g = torch.Generator(device=dev).manual_seed(1000 + batch if decode else 2000)
    s = 1 if decode else n_tokens
    a = torch.randn(batch, s, full.hidden_size, generator=g, device=dev, dtype=dtype)
    r = torch.randn(batch, s, full.hidden_size, generator=g, device=dev, dtype=dtype)
    pos = (torch.full((batch, 1), ctx - 1, device=dev, dtype=torch.long) if decode
           else torch.arange(n_tokens, device=dev)[None])
    slots = single.slots_of(table, pos, bs)
    extra = (table, torch.full((batch,), ctx, device=dev, dtype=torch.int32)) if decode else ()
    row = {"phase": "decode" if decode else "prefill", "batch": batch, "context": ctx, "dtype": args.dtype,
           "impls": {}, "checks": {}}

    def one():
        return full(a, r, pos, kv, slots, *extra)

    def tp_step():
        return tp(a, r, pos, kv_tp, slots, *extra)
    with torch.no_grad():
        out, res = one()
        want = out + res
        out, res = tp_step()
        row["checks"][TP_EAGER] = single.check(out + res, want, args.dtype)
        fns = {ONE_EAGER if args.device != "cuda" or not decode else ONE_GRAPH: one, TP_EAGER: tp_step}
        if args.device == "cuda" and decode:
            g1, _ = single.capture(one)
            fns[ONE_GRAPH] = g1.replay
            try:
                gt, (o, rr) = single.capture(tp_step)
                row["checks"][TP_GRAPH] = single.check(o + rr, want, args.dtype)
                error = None
            except Exception as e:      # NCCL capture refused: reported, the eager TP still timed
                error = f"{type(e).__name__}: {str(e)[:300]}"
                torch.cuda.synchronize()
            # every rank replays its graph or none does (a graph's all-reduce waits for the others')
            errors = [None] * dist.get_world_size()
            dist.all_gather_object(errors, error)
            if any(errors):
                row["impls"][TP_GRAPH] = {"error": next(e for e in errors if e)}
                row["checks"].pop(TP_GRAPH, None)
            else:
                fns[TP_GRAPH] = gt.replay
        if not args.no_compile:
            torch._dynamo.reset()
            t0 = time.perf_counter()
            compiled, graphs = compile_recording(tp, args.compile_backend)

            def tp_compiled():
                return compiled(a, r, pos, kv_tp, slots, *extra)
            o, rr = tp_compiled()
            row["checks"][TP_COMPILE] = single.check(o + rr, want, args.dtype)
            row["compile_s"] = round(time.perf_counter() - t0, 1)
            row["graph_nodes"] = [node_names(gm) for gm in graphs]
            fns[TP_COMPILE] = tp_compiled
        bad = [k for k, c in row["checks"].items() if not c["ok"]]
        for k in bad:
            fns.pop(k, None)
            failures.append(f"{row['phase']} B={batch}: {k} differs from the 1-GPU layer")
        dist.barrier()
        times = timer.times_us(fns)
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, (times, row.get("graph_nodes")))
    for name, us in times.items():
        row["impls"][name] = {"us": us, "us_slowest_rank": max(t[0][name] for t in gathered)}
    if row.get("graph_nodes") is not None:
        row["graph_nodes_by_rank"] = [t[1] for t in gathered]
        row.pop("graph_nodes")
    one_us = row["impls"].get(ONE_GRAPH, row["impls"].get(ONE_EAGER, {})).get("us")
    row["speedup_vs_1gpu"] = {k: common.ratio(one_us, v.get("us")) for k, v in row["impls"].items()
                              if k.startswith("TP") and v.get("us")}
    return row


def expected_nodes(decode):
    first = "tileops::norm_fused_add_rms_norm_fwd"
    attn = (["tileops::attention_paged_decode_attention_fwd_without_lse"] if decode else [])
    return ([first, "tileops::positional_rope_fwd",
             "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache"] + attn
            + ["tileops::norm_fused_add_rms_norm_fwd", "tileops::activation_silu_and_mul_fwd"])


def worker(rank, world, args, init):
    import torch
    import torch.distributed as dist

    import tileops.nn as tnn
    if args.device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo", init_method=init, rank=rank,
                            world_size=world)
    try:
        dev = f"cuda:{rank}" if args.device == "cuda" else "cpu"
        dtype = getattr(torch, args.dtype)
        full, _, _, _, _ = single.build_layers(args.shape, dtype, dev, args.block_size, want_hf=False)
        tp = tnn.TensorParallelLlamaDecoderLayer(args.shape, block_size=args.block_size, device=dev, dtype=dtype)
        tp.load_state_dict(full.state_dict())
        def agree(iters):       # every rank makes the same number of calls (each call all-reduces)
            seen = [None] * world
            dist.all_gather_object(seen, iters)
            return {k: max(d[k] for d in seen) for k in iters}
        timer = single.Timer(args.device, args.quick, agree, dist.barrier)
        failures, rows = [], []
        t_start = time.perf_counter()
        for batch in args.batches:
            rows.append(case(args, rank, timer, full, tp, batch, 1, True, failures))
            if args.device == "cuda":
                torch.cuda.empty_cache()
        if args.prefill:
            rows.append(case(args, rank, timer, full, tp, 1, args.prefill, False, failures))
        for row in rows:
            for nodes in row.get("graph_nodes_by_rank") or []:
                tileops_nodes = [n for gm in nodes for n in gm if n.startswith("tileops")]
                reduces = [n for gm in nodes for n in gm if "all_reduce" in n]
                row.setdefault("graph_ok", True)
                if len(nodes) != 1 or tileops_nodes != expected_nodes(row["phase"] == "decode") or len(reduces) != 2:
                    row["graph_ok"] = False
                    failures.append(f"{row['phase']} B={row['batch']}: a rank's compiled graph is not one graph "
                                    f"with one node per tileops call and two all-reduces: {nodes}")
        all_failures = [None] * world
        dist.all_gather_object(all_failures, failures)
        if rank == 0:
            failures = sorted(set(f for fs in all_failures for f in fs))
            meta = common.metadata(args.device, bench="layer_tp", world_size=world, shape=args.shape,
                                   dtype=args.dtype, block_size=args.block_size,
                                   backend="nccl" if args.device == "cuda" else "gloo",
                                   status="FAILED" if failures else "ok", failures=failures,
                                   elapsed_s=round(time.perf_counter() - t_start, 1))
            single.write(args, "layer_tp", rows, meta, print_table)
        dist.barrier()
        return 1 if failures else 0
    finally:
        dist.destroy_process_group()


def print_table(rows):
    impls = [ONE_GRAPH, ONE_EAGER, TP_EAGER, TP_GRAPH, TP_COMPILE]
    cols = [("phase", "phase", ""), ("B", "batch", "d"), ("ctx", "context", "d")]
    cols += [(f"{i} µs", (lambda r, i=i: r["impls"].get(i, {}).get("us")), ".1f") for i in impls]
    cols += [("graph ok", "graph_ok", ""), ("equal", lambda r: all(c["ok"] for c in r["checks"].values()), "")]
    print(common.format_table(rows, cols, left=1))
    for r in rows:
        for i, v in r["impls"].items():
            if "error" in v:
                print(f"{r['phase']} B={r['batch']} {i}: {v['error']}")


def _spawned(rank, world, args, init):
    code = worker(rank, world, args, init)
    # The rank's work is done and its process group destroyed: leave without the
    # interpreter's finalization, where a gloo rank's worker threads, still winding down,
    # have aborted the process ("terminate called without an active exception", SIGABRT:
    # twice in full make test runs on a 2-core machine, never alone).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None):
    args = parse_args(argv)
    torch = common.prepare_device(args.device, "layer_tp")
    if torch is None:
        return 2
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:          # torchrun
        return worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, "env://")
    world = args.nproc
    if args.device == "cuda" and torch.cuda.device_count() < world:
        print(f"[layer_tp] {world} ranks need {world} GPUs; {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    import torch.multiprocessing as mp
    fd, path = tempfile.mkstemp(prefix="layer_tp_")
    os.close(fd)
    os.unlink(path)
    try:
        mp.spawn(_spawned, args=(world, args, f"file://{path}"), nprocs=world, join=True)
    except Exception as e:      # a rank exited non-zero: its message is above
        print(f"[layer_tp] {type(e).__name__}: {str(e)[:2000]}", file=sys.stderr)
        return 1
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
