"""The sampler chain of a decode step: tileops' sampling ops against the torch composition
vLLM's sampler runs, eager and under torch.compile, each chain captured in a CUDA graph.

    python benchmarks/sampler_chain.py --device cuda|cpu [--out X.json] [--plot X.png] [--no-plot]
        [--batch 1,32,128,256] [--vocab 128256,152064] [--dtypes float32,bfloat16]
        [--chains vllm,fused] [--impls tileops,torch,torch.compile,...] [--fast] [--quick]

The chain turns logits [B, V] into one token per row, as vLLM's Sampler does for a batch
whose rows each carry a temperature, a top-k and a top-p (a row of temperature < 1e-5
takes the greedy token). Given, drawn before the chain and not timed: the logits (3 x
standard normal, in the case's dtype), temperature float32 [B] (uniform in [0.25, 2), 0
on every 8th row), k int32 [B] (uniform in [1, 1024], V -- off -- on every 4th row),
p float32 [B] (uniform in [0.5, 1), 1.0 -- off -- on every 3rd row) and q float32 [B, V]
exponential noise (vLLM draws it inside its sampler; here it is an input, as the op
takes it, so every impl draws the same tokens).

  chain "vllm" (the default; vLLM's order):
      greedy  = argmax(logits)
      x       = logits / t[:, None]            in float32, t = temperature, 1 where < 1e-5
      x       = top-k / top-p mask of x        (vLLM's apply_top_k_top_p)
      probs   = softmax(x) in float32
      sampled = argmax(probs / q)
      token   = where(temperature < 1e-5, greedy, sampled)
  chain "fused": the mask on the logits themselves and the temperature inside the
      softmax (tileops' SoftmaxFwdOp takes it): probs = softmax(mask(logits) / t). Top-k
      does not depend on a positive temperature; top-p does, so this chain keeps a
      different nucleus from vLLM's where t != 1 -- a chain of its own, not vLLM's.

Impls (each computes the same chain):
  tileops          ArgmaxFwdOp, TopKTopPMaskFwdOp (in place on x in "vllm"), SoftmaxFwdOp
                   (float32 probs; the temperature in "fused"), SampleFromProbsFwdOp; the
                   division by t (chain "vllm") and the final where are torch ops
  torch            the composition written with torch as vLLM writes it: a sort, a gather of
                   the k-th value, softmax, cumsum, a scatter (forward_native), softmax,
                   probs.div_(q).argmax(-1)
  torch.compile    that composition under torch.compile(fullgraph=True, dynamic=False),
                   compiled afresh per case
  torch.compile(dynamic)  the same with dynamic=True, one compiled function per chain and
                   dtype shared by the cases (a compile for B = 1, one for the rest): run
                   where torch.compile failed for the case, so that a number stands beside
                   the failure, or for every case when --impls names it
  torch.compile(rewritten)  the same composition with one rewrite (below), under
                   torch.compile(fullgraph=True, dynamic=False), compiled afresh per case
  torch.compile(rewritten/dynamic)  that with dynamic=True, run where torch.compile(rewritten)
                   failed or when --impls names it (as torch.compile(dynamic) above)
  tileops+compile  (only when --impls names it) tileops' chain under torch.compile: each op
                   one opaque node, the torch ops around them fused by inductor

An impl that raises is recorded with its error (JSON and table) and the run goes on.

The rewrite, and why. Inductor 2.11 cannot compile vLLM's composition for CUDA at 2 <= B <
2 x SMs (264 on the H200) with V > 8192: ``srt.softmax(-1).cumsum(-1)``, the top-p
cumulative sum, becomes a split scan (one row's scan spread over many CTAs: inductor splits
a scan longer than 8192 when there are fewer rows than 2 x SMs), and the Triton codegen of a
split scan raises "TypeError: list indices must be integers or slices, not NoneType" on any
value it loads once per row (the softmax's row max and sum, the k-th value, the 1 - p of the
comparison fused after it): TritonSymbols.get_block_shape indexes a block shape with the
row tree's tensor_dim, None in a split scan (pytorch/pytorch issue 180221, fixed by PR
180369, in torch 2.13's source). Inductor's CPU backend has no split scan and compiles it.
torch.compile(rewritten) replaces that one ``.cumsum(-1)`` with :func:`chunked_cumsum`: the
same sums in two levels of scans no longer than SCAN_CHUNK (4096), the cumulative sum
within each chunk of the row, then the chunks' totals' cumulative sum, the total before a
chunk added to its values. Inductor splits no scan of 8192 or fewer, so neither level is a
split scan; every other op is vLLM's, in vLLM's order. Only the association of the float32
additions differs, as it differs between any two scans (CUB's in eager CUDA, inductor's, a
CPU loop); the tokens are checked against torch eager's like every impl's.
(dev/probes/inductor_codegen_nogpu.py reproduces the error without a GPU, and compiles the
rewritten chain's Triton kernels to sm_90 cubins.)

Check, before timing: every impl's tokens against torch eager's. Greedy rows must be the
same; a sampled row may differ only where the two float32 computations round a near-tie
differently (probs / q of two tokens, or an element at the nucleus' edge): up to B // 100
rows. Beyond that the impl is flagged (tileops: not timed, the run exits 1).

Timing, CUDA (the chain captured in a CUDA graph in every metric but eager_us):
  cold_us   a graph of one chain, replayed with a 256 MB buffer written before each replay
            (:func:`tileops.bench.cuda_cold_us`)
  hot_us    a graph of back-to-back chains, replayed (:func:`tileops.bench.cuda_hot_us`)
  eager_us  wall time per call of an eager loop, synchronised only around it (the host's
            launch cost included: what a caller without a CUDA graph pays)
in interleaved rounds (3; --fast and --quick: 1), the order rotated each round, the median
kept. CPU: ``us``, the per-call wall time of interleaved perf_counter loops.
--quick: B = 4, the first vocabulary, float32, quick timers (the smoke test,
tests/test_sampler_chain.py). The target of issue 14: tileops' hot_us below
torch.compile's at B = 128, V = 128256 (``metadata.target``; ``target_result`` names the
torch.compile impl it was held against: the fastest that ran).

Output: benchmarks/results/<cpu|h200|gpu name>/sampler_chain.json (+ .png): rows, one per
case and impl, ``{workload, chain, B, V, dtype, impl, <metric>, <metric>_rounds,
tileops_over_impl: {metric: ratio}, tokens_differing, error}``.
"""
from __future__ import annotations

import statistics
import sys
import time
import traceback
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from tileops.bench import CUDA_COLD, CUDA_HOT, CUDA_ROUNDS, CPU_LOOP, clip  # noqa: E402

EPS = 1e-5              # vLLM's _SAMPLING_EPS: a temperature below it means greedy
CHAINS = ("vllm", "fused")
DEFAULT_IMPLS = ("tileops", "torch", "torch.compile", "torch.compile(rewritten)")
COMPILED = {   # impl -> (the rewritten composition?, dynamic shapes?)
    "torch.compile": (False, False), "torch.compile(dynamic)": (False, True),
    "torch.compile(rewritten)": (True, False), "torch.compile(rewritten/dynamic)": (True, True)}
DYNAMIC_FALLBACK = {"torch.compile": "torch.compile(dynamic)",   # tried where the static compile fails
                    "torch.compile(rewritten)": "torch.compile(rewritten/dynamic)"}
IMPLS = DEFAULT_IMPLS + ("torch.compile(dynamic)", "torch.compile(rewritten/dynamic)", "tileops+compile")
REFERENCE = "torch"
TARGET = {"B": 128, "V": 128256}


# ---------------------------------------------------------------------------------------
# the chain, written with torch as vLLM writes it, and with tileops' ops
# ---------------------------------------------------------------------------------------
SCAN_CHUNK = 4096   # chunked_cumsum's chunk: inductor splits no scan of 8192 or fewer


def chunked_cumsum(x):
    """``x.cumsum(-1)`` of ``x`` [B, V] in two levels of scans no longer than SCAN_CHUNK:
    within each chunk of SCAN_CHUNK values (the row padded with zeros to whole chunks), then
    over the chunks' totals; the total before a chunk is added to its values. The same sums,
    associated differently (module docstring: the rewrite)."""
    import torch
    B, V = x.shape
    n = -(-V // SCAN_CHUNK)
    inner = torch.nn.functional.pad(x, (0, n * SCAN_CHUNK - V)).view(B, n, SCAN_CHUNK).cumsum(dim=-1)
    before = torch.nn.functional.pad(inner[:, :-1, -1].cumsum(dim=-1), (1, 0))
    return (inner + before.unsqueeze(-1)).view(B, n * SCAN_CHUNK)[:, :V]


def top_k_top_p_native(x, k, p, cumsum=None):
    """vLLM's apply_top_k_top_p (forward_native) on float32 logits ``x`` [B, V], per-row
    k (1..V; V keeps every value) and p (1.0 keeps every value): sort each row ascending,
    mask the values below its k-th largest, then the values whose cumulative probability
    (from the smallest up) is at most 1 - p, the largest always kept; scatter back.
    ``cumsum``: None, vLLM's ``.cumsum(dim=-1)``; else the function taking its place (the
    rewrite: :func:`chunked_cumsum`)."""
    import torch
    srt, order = x.sort(dim=-1, descending=False)
    kth = srt.gather(1, (x.shape[1] - k.to(torch.long)).unsqueeze(1))
    srt.masked_fill_(srt < kth, float("-inf"))
    probs = srt.softmax(dim=-1)
    cum = probs.cumsum(dim=-1) if cumsum is None else cumsum(probs)
    drop = cum <= (1 - p).unsqueeze(1)
    drop[:, -1] = False
    srt.masked_fill_(drop, float("-inf"))
    return srt.scatter(1, order, srt)


def torch_vllm(logits, temperature, k, p, q, cumsum=None):
    """Chain "vllm" in torch (see the module docstring); ``cumsum``: top_k_top_p_native's."""
    import torch
    greedy = logits.argmax(dim=-1)
    t = torch.where(temperature < EPS, 1.0, temperature)
    x = torch.div(logits, t.unsqueeze(1)).to(torch.float32)
    x = top_k_top_p_native(x, k, p, cumsum)
    probs = x.softmax(dim=-1, dtype=torch.float32)
    sampled = probs.div_(q).argmax(dim=-1)
    return torch.where(temperature < EPS, greedy, sampled)


def torch_fused(logits, temperature, k, p, q, cumsum=None):
    """Chain "fused" in torch: the mask on the logits, the temperature in the softmax."""
    import torch
    greedy = logits.argmax(dim=-1)
    t = torch.where(temperature < EPS, 1.0, temperature)
    x = top_k_top_p_native(logits.to(torch.float32), k, p, cumsum)
    probs = torch.softmax(x / t.unsqueeze(1), dim=-1)
    sampled = probs.div_(q).argmax(dim=-1)
    return torch.where(temperature < EPS, greedy, sampled)


def torch_vllm_rewritten(logits, temperature, k, p, q):
    """Chain "vllm" in torch with the rewrite (module docstring): vLLM's cumulative sum chunked."""
    return torch_vllm(logits, temperature, k, p, q, cumsum=chunked_cumsum)


def torch_fused_rewritten(logits, temperature, k, p, q):
    """Chain "fused" in torch with the rewrite (module docstring)."""
    return torch_fused(logits, temperature, k, p, q, cumsum=chunked_cumsum)


CHAIN_FNS = {"vllm": torch_vllm, "fused": torch_fused}
REWRITTEN_FNS = {"vllm": torch_vllm_rewritten, "fused": torch_fused_rewritten}


class TileopsChain:
    """The chain with tileops' ops, constructed once (as a serving engine holds them)."""

    def __init__(self, chain):
        import torch
        from tileops.sampling import ArgmaxFwdOp, SampleFromProbsFwdOp, SoftmaxFwdOp, TopKTopPMaskFwdOp
        self.chain = chain
        self.argmax = ArgmaxFwdOp()
        self.mask = TopKTopPMaskFwdOp()
        self.softmax = SoftmaxFwdOp(out_dtype=torch.float32)
        self.sample = SampleFromProbsFwdOp()

    def __call__(self, logits, temperature, k, p, q):
        import torch
        greedy = self.argmax(logits)
        t = torch.where(temperature < EPS, 1.0, temperature)
        if self.chain == "vllm":
            x = torch.div(logits, t.unsqueeze(1)).to(torch.float32)
            probs = self.softmax(self.mask(x, k, p, inplace=True))
        else:
            probs = self.softmax(self.mask(logits, k, p), t)
        return torch.where(temperature < EPS, greedy, self.sample(probs, q))


def own_code(fn, tag):
    """A copy of ``fn`` with a code object of its own named after ``tag``: dynamo keeps
    compiled code per code object, so each case compiles once, beside the others."""
    code = fn.__code__
    name = f"{code.co_name}_{tag}"
    code = code.replace(co_name=name, co_qualname=f"{code.co_qualname}_{tag}")
    return types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)


# ---------------------------------------------------------------------------------------
# a case: inputs, impls, check, timing
# ---------------------------------------------------------------------------------------
def make_inputs(B, V, dtype, device, seed=0):
    """The chain's inputs (module docstring), drawn on ``device`` with its own generator."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    rows = torch.arange(B, device=device)
    logits = (torch.randn(B, V, generator=gen, device=device) * 3.0).to(dtype)
    temperature = torch.rand(B, generator=gen, device=device) * 1.75 + 0.25
    temperature = torch.where(rows % 8 == 7, 0.0, temperature)
    k = torch.randint(1, min(V, 1024) + 1, (B,), generator=gen, device=device)
    k = torch.where(rows % 4 == 3, V, k).to(torch.int32)
    p = torch.rand(B, generator=gen, device=device) * 0.5 + 0.5
    p = torch.where(rows % 3 == 2, 1.0, p)
    q = torch.empty(B, V, device=device).exponential_(generator=gen)
    return logits, temperature, k, p, q


_SHARED = {}   # (chain, dtype, rewritten) -> the function whose dynamic-shape compile the cases share


def compiled(chain, impl, dtype, tag):
    """One of the COMPILED impls: the chain's torch composition (vLLM's or the rewritten one)
    under torch.compile(fullgraph=True). A static compile gets a code object of its own
    (``tag``: the case), so each case compiles once, whatever was compiled before; a
    dynamic-shape compile shares one code object per chain, dtype and composition over the
    cases (a compile for B = 1 and one for the others)."""
    import torch
    rewritten, dynamic = COMPILED[impl]
    ref = (REWRITTEN_FNS if rewritten else CHAIN_FNS)[chain]
    if not dynamic:
        return torch.compile(own_code(ref, tag), fullgraph=True, dynamic=False)
    shared = (chain, dtype, rewritten)
    if shared not in _SHARED:
        _SHARED[shared] = own_code(ref, f"{chain}_{str(dtype).replace('torch.', '')}_dynamic")
    return torch.compile(_SHARED[shared], fullgraph=True, dynamic=True)


def build(chain, impls, inputs, tag):
    """impl -> zero-argument callable running the chain on ``inputs``."""
    import torch
    fns = {}
    for impl in impls:
        if impl == "tileops":
            fn = TileopsChain(chain)
        elif impl == "torch":
            fn = CHAIN_FNS[chain]
        elif impl in COMPILED:
            fn = compiled(chain, impl, inputs[0].dtype, tag)
        elif impl == "tileops+compile":
            tc = TileopsChain(chain)
            fn = torch.compile(own_code(lambda *a: tc(*a), tag + "_tileops"), fullgraph=True, dynamic=False)
        else:
            raise ValueError(f"unknown impl {impl!r}")
        fns[impl] = (lambda f=fn: f(*inputs))
    return fns


def check_tokens(got, want, temperature, V):
    """(rows differing in total, greedy rows differing, first rows differing) between two
    impls' tokens; a token outside [0, V) counts as differing."""
    greedy = temperature < EPS
    bad = (got != want) | (got < 0) | (got >= V)
    rows = bad.nonzero().flatten()[:8].tolist()
    return int(bad.sum()), int((bad & greedy).sum()), rows


def time_case(ready, cuda, level, label):
    """impl -> {metric: µs, metric_rounds: [...]} or {"error": ...} for the ready impls."""
    import torch
    res = {impl: {} for impl in ready}
    if not cuda:
        try:
            med, rounds = common.loop_times_us(ready, keep_rounds=True, **CPU_LOOP[level])
        except Exception:   # one of them raises: each alone
            med, rounds = {}, {}
            for impl, fn in ready.items():
                try:
                    m, r = common.loop_times_us({impl: fn}, keep_rounds=True, **CPU_LOOP[level])
                    med.update(m)
                    rounds.update(r)
                except Exception as e:
                    failed(res[impl], impl, label, e)
        for impl in med:
            res[impl].update(us=med[impl], us_rounds=rounds[impl])
        return res
    graphs = {}
    for impl, fn in ready.items():   # one chain per graph, for the cold replays
        try:
            graphs[impl] = capture(fn)
        except Exception as e:
            failed(res[impl], impl, label, e, "capture: ")
    samples = {impl: {"cold_us": [], "hot_us": []} for impl in graphs}
    order = list(graphs)
    for r in range(CUDA_ROUNDS[level]):
        k = r % max(1, len(order))
        for impl in order[k:] + order[:k]:
            if "error" in res[impl]:
                continue
            try:
                cold = common.cuda_cold_us(graphs[impl].replay, **CUDA_COLD[level])
                samples[impl]["cold_us"].append(cold)
                samples[impl]["hot_us"].append(common.cuda_hot_us(ready[impl], est_us=cold, **CUDA_HOT[level]))
            except Exception as e:
                failed(res[impl], impl, label, e)
    graphs.clear()
    torch.cuda.synchronize()
    alive = {i: ready[i] for i in samples if "error" not in res[i]}
    try:
        eager = common.loop_times_us(alive, sync=torch.cuda.synchronize, keep_rounds=True,
                                     **CPU_LOOP["quick" if level == "quick" else "fast"]) if alive else ({}, {})
    except Exception as e:   # already run many times above: not expected
        eager = ({}, {})
        print(f"[sampler_chain] {label}: eager loop failed: {e}", file=sys.stderr)
    for impl, s in samples.items():
        if "error" in res[impl]:
            continue
        for metric, v in s.items():
            if v:
                res[impl][metric] = statistics.median(v)
                res[impl][metric + "_rounds"] = v
        if impl in eager[0]:
            res[impl]["eager_us"] = eager[0][impl]
            res[impl]["eager_us_rounds"] = eager[1][impl]
    return res


def capture(fn):
    """A CUDA graph of one call of ``fn`` (warmed up on a side stream first)."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def failed(r, impl, label, e, prefix=""):
    """Records the exception ``e`` of ``impl`` in its result ``r`` and says so."""
    traceback.print_exc()
    r["error"] = f"{prefix}{type(e).__name__}: {e}"
    print(f"[sampler_chain] {label} {impl} failed: {clip(r['error'], 300)}", file=sys.stderr, flush=True)


def run_case(chain, B, V, dtype_name, impls, device, level, failures):
    """Rows (one per impl) of one case."""
    import torch
    dtype = getattr(torch, dtype_name)
    cuda = device == "cuda"
    workload = f"{chain} B={B} V={V}"
    label = f"{workload} {dtype_name}"
    base = {"workload": workload, "chain": chain, "B": B, "V": V, "dtype": dtype_name}
    inputs = make_inputs(B, V, dtype, device)
    tag = f"{chain}_{B}_{V}_{dtype_name}"
    fns = build(chain, impls, inputs, tag)
    rows = {impl: dict(base, impl=impl) for impl in fns}
    want = CHAIN_FNS[chain](*inputs)
    ready, pending = {}, list(fns)
    while pending:
        impl = pending.pop(0)
        r, fn = rows[impl], fns[impl]
        try:
            got = fn()   # compiles here, outside the timers
            if cuda:
                torch.cuda.synchronize()
            n_bad, n_greedy, where = check_tokens(got, want, inputs[1], V)
        except Exception as e:
            failed(r, impl, label, e)
            if impl == "tileops":
                failures.append(f"{label}: tileops raised {r['error']}")
            fallback = DYNAMIC_FALLBACK.get(impl)
            if fallback and fallback not in fns:
                # a number beside the failure: the same chain compiled with dynamic shapes
                fns.update(build(chain, [fallback], inputs, tag))
                rows[fallback] = dict(base, impl=fallback)
                pending.append(fallback)
            if cuda:
                torch.cuda.empty_cache()
            continue
        r.update(tokens_differing=n_bad, greedy_differing=n_greedy)
        if n_greedy or n_bad > B // 100:
            r["error"] = f"tokens differ from torch eager's in {n_bad} of {B} rows ({n_greedy} greedy; rows {where})"
            print(f"[sampler_chain] {label} {impl}: {r['error']}", file=sys.stderr)
            if impl == "tileops":   # a wrong chain produces no number; a baseline is flagged and timed
                failures.append(f"{label}: tileops: {r['error']}")
                continue
        ready[impl] = fn
    for impl, res in time_case(ready, cuda, level, label).items():
        rows[impl].update(res)
        if impl == "tileops" and "error" in res:
            failures.append(f"{label}: tileops: {res['error']}")
    metrics = ("cold_us", "hot_us", "eager_us") if cuda else ("us",)
    t = rows.get("tileops", {})
    for r in rows.values():
        r["tileops_over_impl"] = {m: common.ratio(t.get(m), r.get(m)) for m in metrics if r.get(m)}
    del inputs, fns, ready
    if cuda:
        torch.cuda.empty_cache()
    return list(rows.values())


# ---------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------
def parse_args(argv):
    ap = common.bench_parser(__doc__.splitlines()[0], "sampler_chain.json")
    ap.add_argument("--batch", default="1,32,128,256", help="comma-separated B (default 1,32,128,256)")
    ap.add_argument("--vocab", default="128256,152064", help="comma-separated V (default 128256,152064)")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="logits dtypes (default float32,bfloat16)")
    ap.add_argument("--chains", default="vllm", help=f"comma-separated of {','.join(CHAINS)} (default vllm)")
    ap.add_argument("--impls", default=",".join(DEFAULT_IMPLS),
                    help=f"comma-separated of {','.join(IMPLS)} (default {','.join(DEFAULT_IMPLS)})")
    ap.add_argument("--fast", action="store_true", help="one round of short timers")
    ap.add_argument("--quick", action="store_true",
                    help="B = 4, the first vocabulary, float32, quick timers (smoke test)")
    args = ap.parse_args(argv)
    ints = lambda s: [int(v) for v in s.split(",") if v]   # noqa: E731
    args.batch, args.vocab = ints(args.batch), ints(args.vocab)
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    args.chains = [c for c in args.chains.split(",") if c]
    args.impls = [i for i in args.impls.split(",") if i]
    if args.quick:
        args.batch, args.vocab, args.dtypes = [4], args.vocab[:1], ["float32"]
    for what, got, known in (("chain", args.chains, CHAINS), ("impl", args.impls, IMPLS),
                             ("dtype", args.dtypes, ("float32", "bfloat16", "float16"))):
        bad = [g for g in got if g not in known]
        if bad:
            ap.error(f"unknown {what}(s) {bad}; known: {', '.join(known)}")
    return args


def print_tables(rows, metrics):
    """One line per case and metric: each impl's µs, tileops / impl, the winner."""
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    cases = list(dict.fromkeys((r["workload"], r["dtype"]) for r in rows))
    by = {(r["workload"], r["dtype"], r["impl"]): r for r in rows}
    for metric in metrics:
        table = []
        for wl, dt in cases:
            line = {"case": f"{wl} {dt}"}
            timed = {}
            for i in impls:
                v = by.get((wl, dt, i), {}).get(metric)
                line[i] = v
                if v:
                    timed[i] = v
                line["t/" + i] = by.get((wl, dt, i), {}).get("tileops_over_impl", {}).get(metric)
            line["won"] = min(timed, key=timed.get) if timed else None
            line["failed"] = ",".join(i for i in impls if by.get((wl, dt, i), {}).get("error")) or None
            table.append(line)
        cols = [("case", "case", "")] + [(f"{i} µs", i, ".2f") for i in impls]
        cols += [(f"t/{i}", "t/" + i, ".3f") for i in impls if i != "tileops"]
        cols += [("won", "won", ""), ("failed", "failed", "")]
        print(f"\n{metric}:")
        print(common.format_table(table, cols, left=1))
    errs = [f"  {r['workload']} {r['dtype']}  {r['impl']}: {clip(r['error'], 300)}" for r in rows if r.get("error")]
    if errs:
        print("\nimpls that failed (the full text in the JSON's rows):")
        print("\n".join(errs))


def target_summary(rows, metric):
    """tileops' and each torch.compile impl's ``metric`` at the target case (B = 128,
    V = 128256) per chain and dtype; ``against``: the fastest torch.compile impl that ran
    (vLLM's composition or the rewritten one, static or dynamic); ``met``: tileops faster."""
    out = {}
    for r in rows:
        if r["B"] == TARGET["B"] and r["V"] == TARGET["V"] and (r["impl"] == "tileops" or r["impl"] in COMPILED):
            e = out.setdefault(f"{r['chain']} {r['dtype']}", {})
            e[r["impl"]] = r.get(metric) if not r.get("error") else f"failed: {clip(r['error'], 120)}"
    for e in out.values():
        t = e.get("tileops")
        timed = {i: v for i, v in e.items() if i in COMPILED and isinstance(v, float)}
        e["against"] = min(timed, key=timed.get) if timed else None
        e["met"] = (t < timed[e["against"]]) if isinstance(t, float) and timed else None
    return out


def main(argv=None):
    args = parse_args(argv)
    if common.prepare_device(args.device, "sampler_chain") is None:
        return 2
    import torch
    cuda = args.device == "cuda"
    level = "quick" if args.quick else "fast" if args.fast else "full"
    metrics = ("cold_us", "hot_us", "eager_us") if cuda else ("us",)
    t0, load0 = time.perf_counter(), common.host_loadavg()
    rows, failures = [], []
    torch._dynamo.reset()
    import torch._dynamo.config as dynamo_config   # one code object per static case: no recompiles
    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 64)
    with common.stream_context(args.device, args.side_stream), torch.no_grad():
        for chain in args.chains:
            for V in args.vocab:
                for B in args.batch:
                    for dt in args.dtypes:
                        tc = time.perf_counter()
                        rows += run_case(chain, B, V, dt, args.impls, args.device, level, failures)
                        print(f"[sampler_chain] {chain} B={B} V={V} {dt}: {time.perf_counter() - tc:.1f} s",
                              file=sys.stderr, flush=True)
    meta = common.metadata(
        args.device, op="sampler chain", chains=args.chains, impls=args.impls, metrics=list(metrics),
        timing=level, quick=args.quick, host_loadavg_1m_start=load0,
        timer=("cold_us: a CUDA graph of one chain replayed after a 256 MB write; hot_us: a CUDA graph of "
               "back-to-back chains; eager_us: an eager loop's wall time per call; rounds interleaved, "
               f"{CUDA_ROUNDS[level]} of them, median kept") if cuda else
              f"perf_counter loops, impls interleaved, median of {CPU_LOOP[level]['rounds']} rounds",
        target=(f"tileops hot_us < the fastest torch.compile impl's hot_us at B={TARGET['B']}, V={TARGET['V']}"
                if cuda else None),
        target_result=target_summary(rows, "hot_us") if cuda else None,
        elapsed_s=round(time.perf_counter() - t0, 1),
        status="FAILED" if failures else "ok", failures=failures,
        **({"stream": "side" if args.side_stream else "default"} if cuda else {}))
    out = Path(args.out) if args.out else common.default_out(args.device, "sampler_chain.json")
    common.write_results(out, rows, meta)
    print(f"\nThe sampler chain on {meta['device_name']} (torch {meta['torch_version']}); "
          "t/impl = tileops / impl, < 1: tileops faster")
    print_tables(rows, metrics)
    if meta.get("target_result"):
        print(f"\ntarget ({meta['target']}): {meta['target_result']}")
    return common.finish("sampler_chain", out, meta, args, failures)


if __name__ == "__main__":
    sys.exit(main())
