"""One Llama decoder layer, tileops (tileops.nn.LlamaDecoderLayer) against Hugging Face's
LlamaDecoderLayer, eager and compiled: a decode step and a prefill.

    python benchmarks/layer.py --device cuda|cpu [--quick] [--out PATH.json]
                               [--batches 1,32,128] [--context 4096] [--prefill 2048]
                               [--no-hf] [--no-compile] [--compile-backend inductor]

Shapes: Llama-3-8B (hidden 4096, 32 query and 8 KV heads of 128, intermediate 14336, RMSNorm
eps 1e-5, rope_theta 500000), bfloat16, KV cache pages of 16 tokens. `--quick`: a tiny
layer (hidden 64, 4 / 2 heads of 16, intermediate 176), context 64, prefill 32, batches 1
and 3, few iterations (the smoke test, tests/test_bench_layer.py).

Both layers hold the same weights (Hugging Face's layer, random-init, norm weights 1 + 0.1
N(0, 1), loaded into tileops' with `LlamaDecoderLayer.from_hf`, its cos/sin from the
model's rotary module), run on the same inputs, and are checked against each other before
timing (max abs error / max(1, max |HF eager|) within tileops.bench.TOLERANCE: 2e-2 in
bfloat16); a mismatch flags the row, tileops is not timed there, the run exits 1.

Decode step: B sequences of `--context` tokens; the step is the last token's (position
context - 1), so the cache holds context - 1 earlier tokens (random keys and values, drawn
on the device) and the step writes the last slot. The layer's input is the previous layer's
(MLP output, residual) pair: tileops takes both (its first op is the fused add + norm);
Hugging Face's layer takes their sum (computed beforehand: the previous HF layer's final
add). Impls:
  tileops (CUDA graph)   the eager layer captured once in a torch.cuda.CUDAGraph; replays
  tileops eager          the layer's forward, op by op (host-bound at small B)
  hf eager               LlamaDecoderLayer with sdpa attention and a StaticCache of
                         `context` slots (Hugging Face's compile-ready cache: in-place
                         index_copy_ of the new key/value, attention over all slots); no
                         attention mask, since at the last slot every key is visible (SDPA's
                         fastest path: the most favourable setting for it)
  hf torch.compile       the same under torch.compile(mode="reduce-overhead", fullgraph=True,
                         dynamic=False): inductor + CUDA graphs (cudagraph trees), compiled
                         fresh per batch size, warmed up (3 calls) before timing
The cos/sin of Hugging Face's rotary embedding are computed once outside (a model does that
once per step for all layers); tileops' RoPE reads its cos/sin cache by position. Every
decode call of every impl is preceded by one 1-element `fill_` (Hugging Face's StaticCache
advances its write position on every update and must be put back; the others fill a dummy
of the same size), so all impls pay the same.

Prefill: one sequence of `--prefill` tokens (positions 0 ..), written into the cache (paged
for tileops, a StaticCache of as many slots for Hugging Face), causal attention (tileops:
torch's SDPA, it has no prefill attention op yet); impls tileops eager, hf eager, hf
torch.compile (default mode, fullgraph=True, dynamic=False).

Timing: each impl's calls back to back in rounds of `iters` calls (calibrated to ~50 ms)
between two CUDA events (CPU: perf_counter), the rounds interleaved across impls, the median
round / iters: the per-step time a serving loop sees, host overhead included where the impl
has it. Where the time goes: each sub-op of the tileops decode step
(the norms, the three matmuls... each op) timed alone in a CUDA graph of `calls` calls,
each call after a 256 MB write that evicts L2 (the write timed alone and subtracted): their
sum against the whole step shows what the step costs beyond its kernels. `bytes` of a
decode step = weights + the K/V rows read; `floor_us` = bytes / the device's copy bandwidth
(measured here: a 1 GiB device-to-device copy).

Output: {"metadata", "rows"} JSON (--out, default benchmarks/results/<device>/layer.json) and
a table. Memory: the KV caches are drawn on the device (B = 128 at 4096: 2 GiB per impl).
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                 head_dim=128, rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=8192)
TINY = dict(hidden_size=64, intermediate_size=176, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=256)
TILEOPS_GRAPH, TILEOPS_EAGER = "tileops (CUDA graph)", "tileops eager"
HF_EAGER, HF_COMPILE = "hf eager", "hf torch.compile"


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(ap, "layer.json")
    ap.add_argument("--no-hf", action="store_true", help="time tileops alone")
    ap.add_argument("--no-subops", action="store_true", help="no per-sub-op timing")
    return finish_args(ap.parse_args(argv))


def add_arguments(ap, results_name):
    """The arguments layer.py and layer_tp.py share."""
    ap.add_argument("--device", choices=("cuda", "cpu"), required=True)
    ap.add_argument("--out", help=f"results JSON (default benchmarks/results/<device>/{results_name})")
    ap.add_argument("--quick", action="store_true", help="tiny layer, short context, few iterations")
    ap.add_argument("--batches", help="decode batch sizes (default 1,32,128; --quick: 1,3)")
    ap.add_argument("--context", type=int, help="decode context in tokens (default 4096; --quick: 64)")
    ap.add_argument("--prefill", type=int, help="prefill tokens (default 2048; --quick: 32; 0: no prefill)")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    ap.add_argument("--no-compile", action="store_true", help="no torch.compile impl")
    ap.add_argument("--compile-backend", default="inductor",
                    help="torch.compile backend (inductor; aot_eager: the CPU smoke tests; a backend other "
                         "than inductor takes no mode)")


def finish_args(args):
    """The defaults that depend on --quick."""
    quick = args.quick
    args.batches = [int(b) for b in (args.batches or ("1,3" if quick else "1,32,128")).split(",")]
    args.context = args.context or (64 if quick else 4096)
    args.prefill = (32 if quick else 2048) if args.prefill is None else args.prefill
    args.shape = TINY if quick else LLAMA3_8B
    return args


# ---- timers ---------------------------------------------------------------------------------

class Timer:
    """Per-call times of several callables, interleaved in rounds (module docstring).
    layer_tp.py's ranks: `agree` maps each callable's calls per round, as this process
    calibrated them, to the counts every rank uses (ranks calling collectives must make
    the same number of calls), `barrier` lines the ranks up before each timed loop (a rank
    would otherwise time its wait for the others)."""

    def __init__(self, device, quick, agree=None, barrier=None):
        import torch
        self.torch = torch
        self.cuda = device == "cuda"
        self.rounds = 3 if quick else 7
        self.round_s = 0.01 if quick else 0.05
        self.agree = agree or (lambda iters: iters)
        self.barrier = barrier

    def _sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()
        if self.barrier is not None:
            self.barrier()
            if self.cuda:
                self.torch.cuda.synchronize()

    def times_us(self, fns):
        torch = self.torch
        iters = {}
        for name, fn in fns.items():
            for _ in range(3):
                fn()
            self._sync()
            t0 = time.perf_counter()
            fn()
            self._sync()
            one = max(time.perf_counter() - t0, 1e-6)
            iters[name] = max(3, min(200, int(self.round_s / one)))
        iters = self.agree(iters)
        samples = {name: [] for name in fns}
        order = list(fns.items())
        for r in range(self.rounds):
            k = r % len(order)
            for name, fn in order[k:] + order[:k]:
                self._sync()
                if self.cuda:
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                t0 = time.perf_counter()
                for _ in range(iters[name]):
                    fn()
                if self.cuda:
                    end.record()
                    torch.cuda.synchronize()
                    us = start.elapsed_time(end) * 1e3
                else:
                    us = (time.perf_counter() - t0) * 1e6
                samples[name].append(us / iters[name])
        return {name: statistics.median(v) for name, v in samples.items()}

    def cold_us(self, fns, calls=20, replays=5):
        """Each callable's device time after an L2-evicting write (CUDA graphs of `calls`
        (write, call) pairs, minus a graph of `calls` writes); CPU: plain loops. Before each
        replay L2's persisting lines are demoted (the write does not evict them; see
        tileops.bench.cuda_cold_us): what one callable pinned is not the next one's; what a
        callable pins within its own graph stays its own."""
        if not self.cuda:
            return common.loop_times_us(fns, rounds=self.rounds, round_s=self.round_s)
        torch = self.torch
        from tileops.runtime import reset_persisting_l2
        flush = torch.empty(256 * 2 ** 20, dtype=torch.uint8, device="cuda")

        def graph_us(body):
            def calls_of_body():
                for _ in range(calls):
                    body()
            g, _ = capture(calls_of_body)
            out = []
            for _ in range(replays):
                torch.cuda.synchronize()
                reset_persisting_l2(torch.cuda.current_device())
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                g.replay()
                e.record()
                torch.cuda.synchronize()
                out.append(s.elapsed_time(e) * 1e3 / calls)
            del g
            return statistics.median(out)

        base = graph_us(lambda: flush.zero_())
        res = {}
        for name, fn in fns.items():
            def body(fn=fn):
                flush.zero_()
                fn()
            res[name] = max(0.0, graph_us(body) - base)
        return res


def capture(fn):
    """(graph, fn's outputs): fn run once on a side stream (its kernels built: a capture
    may not compile), then captured in a torch.cuda.CUDAGraph, replayed once."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    g.replay()
    torch.cuda.synchronize()
    return g, out


def copy_gbps():
    """Device-to-device copy bandwidth (bytes read + written per second), 1 GiB."""
    import torch
    src = torch.empty(2 ** 29, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        dst.copy_(src)
    e.record()
    torch.cuda.synchronize()
    return 2 * src.numel() * 10 / (s.elapsed_time(e) * 1e-3) / 1e9


# ---- the layers -------------------------------------------------------------------------------

def hf_module():
    try:
        import transformers  # noqa: F401
        from transformers.models.llama import modeling_llama
        return modeling_llama
    except ImportError as e:
        return str(e)


def build_layers(shape, dtype, device, block_size, want_hf, seed=0, **tileops_kw):
    """(tileops layer, HF layer or None, HF rotary module or None, HF config or None, note)."""
    import torch

    import tileops.nn as tnn
    torch.manual_seed(seed)
    hf_mod = hf_module() if want_hf else "--no-hf"
    if isinstance(hf_mod, str):
        mine = tnn.LlamaDecoderLayer(shape, block_size=block_size, device=device, dtype=dtype, **tileops_kw)
        with torch.no_grad():
            mine.input_layernorm.weight.normal_(1.0, 0.1)
            mine.post_attention_layernorm.weight.normal_(1.0, 0.1)
        return mine, None, None, None, f"no Hugging Face baseline: {hf_mod}"
    import transformers
    config = transformers.LlamaConfig(num_hidden_layers=1, **shape)
    config._attn_implementation = "sdpa"
    with torch.device(device):
        hf = hf_mod.LlamaDecoderLayer(config, layer_idx=0).to(dtype).eval()
        rotary = hf_mod.LlamaRotaryEmbedding(config)
    with torch.no_grad():
        hf.input_layernorm.weight.normal_(1.0, 0.1)
        hf.post_attention_layernorm.weight.normal_(1.0, 0.1)
    mine = tnn.LlamaDecoderLayer.from_hf(hf, rotary_emb=rotary, block_size=block_size, **tileops_kw)
    return mine, hf, rotary, config, None


def paged_cache(layer, batch, context, device, dtype, seed):
    """(kv_cache, block_table): `batch` sequences of `context` slots each, distinct shuffled
    blocks, random keys and values (drawn on the device)."""
    import torch
    bs = layer.self_attn.attn.block_size
    nblk = -(-context // bs)
    g = torch.Generator(device=device).manual_seed(seed)
    shape = (batch * nblk, bs, layer.num_kv_heads, layer.head_dim)
    kc = torch.randn(shape, generator=g, device=device, dtype=dtype)
    vc = torch.randn(shape, generator=g, device=device, dtype=dtype)
    table = torch.randperm(batch * nblk, generator=g, device=device).view(batch, nblk).to(torch.int32)
    return (kc, vc), table


def slots_of(table, positions, block_size):
    return table.long().gather(1, positions // block_size) * block_size + positions % block_size


def hf_static_cache(config, kv, table, context, batch, device, dtype):
    """A StaticCache of `context` slots holding the paged cache's first `context` tokens."""
    import torch
    from transformers import StaticCache
    cache = StaticCache(config=config, max_cache_len=context)
    cache.early_initialization(batch, config.num_key_value_heads, config.head_dim, dtype, torch.device(device))
    layer = cache.layers[0]
    bs = kv[0].shape[1]
    with torch.no_grad():
        for b in range(batch):       # one sequence at a time: no GB-sized temporaries
            rows = kv[0][table[b].long()].flatten(0, 1)[:context]            # [context, H_kv, D]
            layer.keys[b].copy_(rows.transpose(0, 1))
            rows = kv[1][table[b].long()].flatten(0, 1)[:context]
            layer.values[b].copy_(rows.transpose(0, 1))
    del bs
    return cache


def hf_call(hf, cache, x, pos, cos_sin):
    return hf(x, attention_mask=None, position_ids=pos, past_key_values=cache, use_cache=True,
              position_embeddings=cos_sin)


def compiled_hf(hf, args, mode):
    import torch
    torch._dynamo.reset()
    if args.compile_backend == "inductor":
        return torch.compile(hf, mode=mode, fullgraph=True, dynamic=False)
    return torch.compile(hf, backend=args.compile_backend, fullgraph=True, dynamic=False)


def hf_impls(args, layers, cache, start, x, pos, mine_out, mode, row, fns):
    """Adds Hugging Face's eager and compiled (torch.compile `mode`) calls on `cache` to
    `fns`, each putting the cache's write position back to `start` first, and checks
    tileops' output (mine_out) against the eager one, the compiled one against eager."""
    import torch
    _, hf, rotary, _, _ = layers
    position = cache.layers[0].cumulative_length
    cos_sin = rotary(x, pos)

    def call(module):
        def step():
            position.fill_(start)
            return hf_call(module, cache, x, pos, cos_sin)
        return step
    with torch.no_grad():
        want = call(hf)()
    row["checks"][TILEOPS_EAGER] = check(mine_out, want, args.dtype)
    fns[HF_EAGER] = call(hf)
    if args.no_compile:
        return
    t0 = time.perf_counter()
    compiled = call(compiled_hf(hf, args, mode))
    try:
        with torch.no_grad():
            for _ in range(3):          # cudagraph trees record on a later call than the first
                got = compiled()
        row["checks"][HF_COMPILE] = check(got, want, args.dtype)
        fns[HF_COMPILE] = compiled
    except Exception as e:              # a baseline that fails is reported, not fatal
        row["impls"][HF_COMPILE] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    row["compile_s"] = round(time.perf_counter() - t0, 1)


# ---- where the decode step's time goes ---------------------------------------------------------

def decode_subops(layer, a, r, pos, kv, slots, table, seq_lens):
    """Each tileops decode sub-op as a callable on its own (static) inputs, in step order
    (the layer's forward, taken apart)."""
    import torch
    att, mlp = layer.self_attn, layer.mlp
    b, d, h, hk = a.shape[0], layer.head_dim, layer.num_heads, layer.num_kv_heads
    with torch.no_grad():
        x, res = layer.input_layernorm(a, r)
        qkv = att.qkv_proj(x)
        q, k, v = qkv.split((h * d, hk * d, hk * d), dim=-1)
        qr, kr = att.rotary_emb(pos.reshape(-1), q.reshape(b, h, d), k.reshape(b, hk, d))
        vr = v.reshape(b, hk, d)
        o = att.attn.op(qr, kv[0], kv[1], table, seq_lens)
        y = att.o_proj(o.view(b, 1, h * d))
        x2, res2 = layer.post_attention_layernorm(y, res)
        gu = mlp.gate_up_proj(x2)
        act = mlp.act_fn(gu)
    flat = slots.reshape(-1)
    return {
        "input fused_add_rms_norm": lambda: layer.input_layernorm(a, r),
        "qkv matmul": lambda: att.qkv_proj(x),
        "rope": lambda: att.rotary_emb(pos.reshape(-1), q.reshape(b, h, d), k.reshape(b, hk, d)),
        "kv_cache_write": lambda: att.attn.write_op(kr, vr, kv[0], kv[1], flat),
        "paged_decode_attention": lambda: att.attn.op(qr, kv[0], kv[1], table, seq_lens),
        "o matmul": lambda: att.o_proj(o.view(b, 1, h * d)),
        "post fused_add_rms_norm": lambda: layer.post_attention_layernorm(y, res),
        "gate_up matmul": lambda: mlp.gate_up_proj(x2),
        "silu_and_mul": lambda: mlp.act_fn(gu),
        "down matmul": lambda: mlp.down_proj(act),
    }


# ---- the cases ---------------------------------------------------------------------------------

def check(got, want, dtype_name):
    err, scaled, ok = common.check_close(got, want, dtype_name)
    return {"max_abs_err": err, "scaled_err": scaled, "ok": bool(ok)}


def decode_row(args, timer, layers, batch, dtype, failures):
    import torch
    mine, hf, _, config, _ = layers
    dev, ctx, bs = args.device, args.context, args.block_size
    kv, table = paged_cache(mine, batch, ctx, dev, dtype, seed=batch)
    g = torch.Generator(device=dev).manual_seed(1000 + batch)
    a = torch.randn(batch, 1, mine.hidden_size, generator=g, device=dev, dtype=dtype)
    r = torch.randn(batch, 1, mine.hidden_size, generator=g, device=dev, dtype=dtype)
    x_sum = a + r                               # the previous HF layer's final add
    pos = torch.full((batch, 1), ctx - 1, device=dev, dtype=torch.long)
    slots = slots_of(table, pos, bs)
    seq_lens = torch.full((batch,), ctx, device=dev, dtype=torch.int32)
    weights = sum(p.numel() * p.element_size() for p in mine.parameters())
    kv_read = batch * ctx * mine.num_kv_heads * mine.head_dim * 2 * kv[0].element_size()
    row = {"phase": "decode", "batch": batch, "context": ctx, "tokens": batch, "dtype": args.dtype,
           "bytes": weights + kv_read, "impls": {}, "checks": {}}
    dummy = torch.zeros(1, dtype=torch.long, device=dev)

    def step():
        return mine(a, r, pos, kv, slots, table, seq_lens)
    with torch.no_grad():
        out, res = step()                        # builds the kernels (before any capture)
        mine_out = out + res
    fns = {}
    if hf is not None:
        cache = hf_static_cache(config, kv, table, ctx, batch, dev, dtype)
        hf_impls(args, layers, cache, ctx - 1, x_sum, pos, mine_out, "reduce-overhead", row, fns)
    ok = all(c["ok"] for k, c in row["checks"].items() if k.startswith("tileops"))
    if ok:
        def mine_eager():
            dummy.fill_(ctx - 1)
            return step()
        fns[TILEOPS_EAGER] = mine_eager
        if args.device == "cuda":
            with torch.no_grad():
                graph, (g_out, g_res) = capture(step)
            row["checks"][TILEOPS_GRAPH] = check(g_out + g_res, mine_out, args.dtype)

            def mine_graph():
                dummy.fill_(ctx - 1)
                graph.replay()
            fns[TILEOPS_GRAPH] = mine_graph
    else:
        failures.append(f"decode B={batch}: tileops differs from Hugging Face's layer")
    with torch.no_grad():
        for name, us in timer.times_us(fns).items():
            row["impls"][name] = {"us": us, "gbps": row["bytes"] / us / 1e3}
        if ok and not args.no_subops:
            subs = timer.cold_us(decode_subops(mine, a, r, pos, kv, slots, table, seq_lens))
            row["subops_us"] = subs
            row["subops_sum_us"] = sum(subs.values())
    return row


def prefill_row(args, timer, layers, dtype, failures):
    import torch
    mine, hf, _, config, _ = layers
    dev, n, bs = args.device, args.prefill, args.block_size
    kv, table = paged_cache(mine, 1, n, dev, dtype, seed=7)
    g = torch.Generator(device=dev).manual_seed(2000)
    a = torch.randn(1, n, mine.hidden_size, generator=g, device=dev, dtype=dtype)
    r = torch.randn(1, n, mine.hidden_size, generator=g, device=dev, dtype=dtype)
    x_sum = a + r
    pos = torch.arange(n, device=dev)[None]
    slots = slots_of(table, pos, bs)
    row = {"phase": "prefill", "batch": 1, "context": n, "tokens": n, "dtype": args.dtype, "impls": {},
           "checks": {}}
    dummy = torch.zeros(1, dtype=torch.long, device=dev)

    def step():
        dummy.fill_(0)
        return mine(a, r, pos, kv, slots)
    with torch.no_grad():
        out, res = step()
        mine_out = out + res
    fns = {}
    if hf is not None:
        from transformers import StaticCache
        cache = StaticCache(config=config, max_cache_len=n)
        cache.early_initialization(1, config.num_key_value_heads, config.head_dim, dtype, torch.device(dev))
        hf_impls(args, layers, cache, 0, x_sum, pos, mine_out, "default", row, fns)
    if all(c["ok"] for k, c in row["checks"].items() if k.startswith("tileops")):
        fns[TILEOPS_EAGER] = step
    else:
        failures.append(f"prefill {n}: tileops differs from Hugging Face's layer")
    with torch.no_grad():
        for name, us in timer.times_us(fns).items():
            row["impls"][name] = {"us": us, "tokens_per_s": n / us * 1e6}
    return row


def add_ratios(row):
    us = {k: v.get("us") for k, v in row["impls"].items()}
    best_mine = min((us[k] for k in (TILEOPS_GRAPH, TILEOPS_EAGER) if us.get(k)), default=None)
    row["ratios"] = {f"tileops/{k}": common.ratio(best_mine, us.get(k)) for k in (HF_EAGER, HF_COMPILE)
                     if us.get(k)}
    timed = {k: v for k, v in us.items() if v}
    row["winner"] = min(timed, key=timed.get) if timed else None


def print_table(rows):
    impls = [TILEOPS_GRAPH, TILEOPS_EAGER, HF_EAGER, HF_COMPILE]
    cols = [("phase", "phase", ""), ("B", "batch", "d"), ("ctx/tokens", "context", "d")]
    cols += [(f"{i} µs", (lambda r, i=i: r["impls"].get(i, {}).get("us")), ".1f") for i in impls]
    cols += [("best tileops / hf compile", lambda r: r.get("ratios", {}).get(f"tileops/{HF_COMPILE}"), ".2f"),
             ("floor µs", "floor_us", ".1f"),
             ("ok", lambda r: all(c["ok"] for c in r["checks"].values()) if r["checks"] else None, "")]
    print(common.format_table(rows, cols, left=1))
    for r in rows:
        if r.get("subops_us"):
            graph = r["impls"].get(TILEOPS_GRAPH, r["impls"].get(TILEOPS_EAGER, {})).get("us")
            print(f"\n{r['phase']} B={r['batch']}: where the tileops step goes (each sub-op alone, L2 cold; "
                  f"sum {r['subops_sum_us']:.1f} µs, the step {graph:.1f} µs)")
            for name, us in r["subops_us"].items():
                print(f"  {name:26s} {us:9.1f} µs")


def main(argv=None):
    args = parse_args(argv)
    torch = common.prepare_device(args.device, "layer")
    if torch is None:
        return 2
    t_start = time.perf_counter()
    dtype = getattr(torch, args.dtype)
    failures, rows = [], []
    timer = Timer(args.device, args.quick)
    layers = build_layers(args.shape, dtype, args.device, args.block_size, not args.no_hf)
    gbps = copy_gbps() if args.device == "cuda" else None
    for batch in args.batches:
        t0 = time.perf_counter()
        row = decode_row(args, timer, layers, batch, dtype, failures)
        if gbps:
            row["floor_us"] = row["bytes"] / gbps / 1e3
        row["elapsed_s"] = round(time.perf_counter() - t0, 1)
        add_ratios(row)
        rows.append(row)
        if args.device == "cuda":
            torch.cuda.empty_cache()
    if args.prefill:
        t0 = time.perf_counter()
        row = prefill_row(args, timer, layers, dtype, failures)
        row["elapsed_s"] = round(time.perf_counter() - t0, 1)
        add_ratios(row)
        rows.append(row)
    meta = common.metadata(args.device, bench="layer", shape=args.shape, dtype=args.dtype,
                           block_size=args.block_size, hf_numerics=layers[0].hf_numerics,
                           hf_baseline=layers[4] or "transformers LlamaDecoderLayer, sdpa, StaticCache",
                           copy_gbps=gbps, status="FAILED" if failures else "ok", failures=failures,
                           elapsed_s=round(time.perf_counter() - t_start, 1))
    try:
        import transformers
        meta["transformers_version"] = transformers.__version__
    except ImportError:
        pass
    return write(args, "layer", rows, meta, print_table)


def write(args, tag, rows, meta, table):
    """Writes the JSON (--out or the default path), prints the table and the failures;
    returns the exit status."""
    out = Path(args.out) if args.out else common.default_out(args.device, f"{tag}.json")
    common.write_results(out, rows, meta)
    table(rows)
    print(f"\n[{tag}] wrote {out} ({meta['elapsed_s']} s)")
    if meta["failures"]:
        print(f"[{tag}] FAILED: " + "; ".join(meta["failures"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
