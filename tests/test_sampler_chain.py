"""benchmarks/sampler_chain.py: the sampler chain (issue 14) as vLLM runs it, tileops' ops
against the torch composition; a quick CPU run, the chain's definition against float64,
the rewritten composition (the chunked cumulative sum inductor 2.11 can compile for CUDA)
against the same definition, eager and compiled, and a baseline that fails recorded while
the run goes on."""
import json
import os
import subprocess
import sys

import pytest
import torch

from helpers import load_script
from tileops.reference import sampling as ref

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sampler_chain.py")


@pytest.fixture(scope="module")
def sc():
    return load_script(_PATH, "sampler_chain")


def test_quick_cpu_run(tmp_path):
    out = tmp_path / "chain.json"
    r = subprocess.run([sys.executable, _PATH, "--device", "cpu", "--quick", "--vocab", "3000", "--impls",
                        "tileops,torch", "--chains", "vllm,fused", "--out", str(out), "--no-plot"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    meta, rows = data["metadata"], data["rows"]
    assert meta["status"] == "ok" and meta["timing"] == "quick" and meta["metrics"] == ["us"]
    assert {(x["chain"], x["impl"], x["B"], x["V"], x["dtype"]) for x in rows} == {
        (c, i, 4, 3000, "float32") for c in ("vllm", "fused") for i in ("tileops", "torch")}
    for x in rows:
        assert x["us"] > 0 and x["tokens_differing"] == 0 and "error" not in x, x
        assert x["tileops_over_impl"]["us"] > 0
    assert "vllm B=4 V=3000 float32" in r.stdout and "t/torch" in r.stdout


def _float64_tokens(logits, temperature, k, p, q, chain):
    """The chain by its definition, in float64, row by row."""
    x = logits.double()
    greedy = x.argmax(-1)
    t = torch.where(temperature < 1e-5, 1.0, temperature.double())
    if chain == "vllm":
        probs = torch.softmax(ref.top_k_top_p_mask(x / t[:, None], k, p.double()), -1)
    else:
        probs = torch.softmax(ref.top_k_top_p_mask(x, k, p.double()) / t[:, None], -1)
    return torch.where(temperature < 1e-5, greedy, (probs / q.double()).argmax(-1))


@pytest.mark.parametrize("chain", ["vllm", "fused"])
def test_every_impl_computes_the_chain(sc, chain):
    """torch's composition (vLLM's forward_native) and tileops' ops give the tokens of the
    chain's float64 definition (the two chains' definitions differ in 2 of these rows);
    greedy rows (temperature 0) take the argmax."""
    B, V = 16, 5000
    inputs = sc.make_inputs(B, V, torch.float32, "cpu", seed=3)
    logits, temperature, k, p, q = inputs
    assert (temperature == 0).sum() == 2 and (k == V).sum() == 4 and (p == 1).sum() == 5
    want = _float64_tokens(*inputs, chain)
    fns = sc.build(chain, ["tileops", "torch"], inputs, "t")
    for impl, fn in fns.items():
        got = fn()
        assert got.dtype == torch.int64 and torch.equal(got, want), (impl, got, want)
    assert torch.equal(want[temperature == 0], logits.argmax(-1)[temperature == 0])


@pytest.mark.parametrize("V", [1, 511, 512, 513, 3000, 4096])
def test_the_chunked_cumsum_is_the_cumulative_sum(sc, monkeypatch, V):
    """chunked_cumsum gives x.cumsum(-1) (float64 reference) for rows shorter than a chunk,
    a whole number of chunks and a partial last chunk; its dtype, shape and device are x's."""
    monkeypatch.setattr(sc, "SCAN_CHUNK", 512)
    g = torch.Generator().manual_seed(V)
    x = torch.rand(3, V, generator=g)
    got = sc.chunked_cumsum(x)
    want = x.double().cumsum(-1)
    assert got.shape == x.shape and got.dtype == x.dtype
    assert torch.allclose(got.double(), want, rtol=1e-6, atol=1e-6), (got.double() - want).abs().max()


@pytest.mark.parametrize("chain", ["vllm", "fused"])
def test_the_rewritten_composition_computes_the_chain(sc, monkeypatch, chain):
    """The rewritten composition (vLLM's with its cumulative sum chunked: 10 chunks of 512 here,
    the last partial) gives the tokens of the chain's float64 definition, and vLLM's
    composition's (the rows whose top-p nucleus the rewrite changed would differ)."""
    monkeypatch.setattr(sc, "SCAN_CHUNK", 512)
    B, V = 32, 5000
    inputs = sc.make_inputs(B, V, torch.float32, "cpu", seed=5)
    want = _float64_tokens(*inputs, chain)
    got = sc.REWRITTEN_FNS[chain](*inputs)
    assert got.dtype == torch.int64 and torch.equal(got, want), (got, want)
    assert torch.equal(got, sc.CHAIN_FNS[chain](*inputs))


def test_the_rewritten_composition_compiles_to_the_chain(sc, monkeypatch):
    """torch.compile(rewritten) (fullgraph, static) on the CPU: the float64 definition's tokens."""
    monkeypatch.setattr(sc, "SCAN_CHUNK", 512)
    B, V = 16, 5000
    inputs = sc.make_inputs(B, V, torch.float32, "cpu", seed=3)
    fns = sc.build("vllm", ["torch.compile(rewritten)"], inputs, "test_rewritten")
    with torch.no_grad():
        got = fns["torch.compile(rewritten)"]()
    assert torch.equal(got, _float64_tokens(*inputs, "vllm")), got


def test_the_native_mask_is_vllms_rule(sc):
    """The bench's transcription of forward_native keeps what the reference's rule keeps
    (values without ties, k in 1..V, p in (0, 1])."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 700, generator=g, dtype=torch.float64) * 3
    k = torch.randint(1, 701, (64,), generator=g)
    p = torch.rand(64, generator=g, dtype=torch.float64) * 0.9 + 0.1
    p[::5] = 1.0
    got = sc.top_k_top_p_native(x, k, p)
    want = ref.top_k_top_p_mask(x, k, p)
    assert torch.equal(got == float("-inf"), want == float("-inf"))
    assert 0 < (got == float("-inf")).float().mean() < 1


def test_a_baseline_that_fails_is_recorded_and_the_run_goes_on(sc, tmp_path, monkeypatch, capsys):
    """torch.compile of vLLM's composition raising (inductor 2.11 for CUDA at 2 <= B < 2 x SMs)
    is recorded with its text; the dynamic-shape compile is tried beside it (and fails here
    too); the rewritten composition compiles (here: runs eager), gets its number and no
    dynamic fallback; tileops and torch are timed; the run is ok."""
    def fake_compile(fn, **kw):
        if "rewritten" in fn.__name__:
            return fn

        def compiled(*a, **k):
            raise TypeError("list indices must be integers or slices, not tuple")
        return compiled
    monkeypatch.setattr(torch, "compile", fake_compile)
    out = tmp_path / "chain.json"
    rc = sc.main(["--device", "cpu", "--quick", "--vocab", "2000", "--impls",
                  "tileops,torch,torch.compile,torch.compile(rewritten)", "--out", str(out), "--no-plot"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    rows = {r["impl"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"tileops", "torch", "torch.compile", "torch.compile(dynamic)", "torch.compile(rewritten)"}
    for impl in ("torch.compile", "torch.compile(dynamic)"):
        assert rows[impl]["error"] == "TypeError: list indices must be integers or slices, not tuple"
        assert "us" not in rows[impl]
    for impl in ("tileops", "torch", "torch.compile(rewritten)"):
        assert rows[impl]["us"] > 0 and rows[impl]["tokens_differing"] == 0 and "error" not in rows[impl], rows[impl]
    assert "torch.compile: TypeError: list indices must be integers" in printed


def test_the_target_is_held_against_the_fastest_compile_that_ran(sc):
    """target_summary: vLLM's composition failed to compile, the rewritten one ran: tileops
    is held against the rewritten one (and against vLLM's where both ran, the faster)."""
    case = {"chain": "vllm", "dtype": "float32", "B": 128, "V": 128256}
    rows = [dict(case, impl="tileops", hot_us=485.0), dict(case, impl="torch", hot_us=2775.0),
            dict(case, impl="torch.compile", error="InductorError: TypeError: list indices ..."),
            dict(case, impl="torch.compile(dynamic)", error="InductorError: TypeError: list indices ..."),
            dict(case, impl="torch.compile(rewritten)", hot_us=600.0),
            dict(case, impl="tileops", hot_us=1.0, B=4)]
    e = sc.target_summary(rows, "hot_us")["vllm float32"]
    assert e["against"] == "torch.compile(rewritten)" and e["met"] is True and e["tileops"] == 485.0
    assert e["torch.compile"].startswith("failed: InductorError") and "torch" not in e
    rows[2] = dict(case, impl="torch.compile", hot_us=400.0)
    e = sc.target_summary(rows, "hot_us")["vllm float32"]
    assert e["against"] == "torch.compile" and e["met"] is False
