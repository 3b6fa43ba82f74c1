"""The benchmark driver (`python -m tileops bench`): a quick CPU run writes the JSON the
README describes, every impl timed; peers are called as the manifest describes them."""
import dataclasses
import json
import subprocess
import sys

import pytest
import torch

import tileops
from tileops import bench

META_KEYS = {"device", "device_name", "torch_version", "tileops_version", "git_commit",
             "source_digest", "date", "command", "metrics", "status", "failures", "op"}
ROW_KEYS = {"op", "case", "label", "dims", "dtype", "shapes", "params", "bytes", "correct",
            "impls", "ratios", "winner"}


def test_quick_cpu_run_writes_every_impl_time(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "tileops", "bench", "--op", "RMSNormFwdOp",
                        "--device", "cpu", "--quick", "--out", str(out), "--no-plot"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    meta, rows = data["metadata"], data["rows"]
    assert META_KEYS <= set(meta), sorted(META_KEYS - set(meta))
    assert meta["status"] == "ok" and meta["metrics"] == ["us"] and meta["op"] == "RMSNormFwdOp"
    assert meta["command"].split()[1:5] == ["-m", "tileops", "bench", "--op"]
    assert len(rows) == 1
    row = rows[0]
    assert ROW_KEYS <= set(row), sorted(ROW_KEYS - set(row))
    assert row["correct"] is True and row["bytes"] > 0
    assert set(row["impls"]) == {"tileops", "torch", "torch.compile", "copy"}  # liger: CUDA only
    for impl, r_ in row["impls"].items():
        assert isinstance(r_["us"], float) and r_["us"] > 0, (impl, r_)
        assert r_["gbps"] > 0 and all(t > 0 for t in r_["us_rounds"])
    assert set(row["ratios"]["us"]) == {"tileops/torch", "tileops/torch.compile", "tileops/copy"}
    assert all(v > 0 for v in row["ratios"]["us"].values())
    assert row["winner"]["us"] in ("tileops", "torch", "torch.compile")
    assert row["impls"]["tileops"]["scaled_err"] <= bench.TOLERANCE[row["dtype"]]
    assert "liger" in meta["peers"]  # named by the manifest, noted as not run on the CPU


def test_peer_call_described_by_data():
    """A peer spec (call, args) maps the op's inputs and resolved params onto a call."""
    cls = tileops.all_op_classes()["RMSNormFwdOp"]
    entry = cls._entry
    case = bench.select_cases(cls, dtypes=["float32"], keep=bench.case_filter("32x4096"))[0]
    assert case.shapes["x"] == (32, 4096)
    inputs = bench.make_inputs(entry, case, "cpu")
    op = cls(**case.params)
    params = bench.resolved_params(op)
    spec = {"call": "torch.nn.functional.rms_norm", "args": ["x", "normalized_shape", "weight", "eps"]}
    got = bench.peer_callable(entry, spec, inputs, params)()
    want = torch.nn.functional.rms_norm(inputs[0], (4096,), inputs[1], torch.finfo(torch.float32).eps)
    assert torch.equal(got, want)
    assert bench.resolve_dotted("torch.autograd.Function.apply") == torch.autograd.Function.apply


def test_cpu_size_cap_and_filter():
    cls = tileops.all_op_classes()["RMSNormFwdOp"]
    every = bench.select_cases(cls)
    capped = bench.select_cases(cls, max_input_bytes=64 << 20)
    assert capped and len(capped) < len(every)
    assert all(bench.input_bytes(c) <= 64 << 20 for c in capped)
    only = bench.select_cases(cls, keep=bench.case_filter("2048x16384"), dtypes=["bfloat16"])
    assert [c.shapes["x"] for c in only] == [(2048, 16384)]


def test_manifest_peers_are_checked():
    from tileops.errors import ManifestError
    from tileops.manifest.schema import parse_entry
    raw = {"family": "norm", "status": "spec-only", "signature": {"inputs": {"x": {"dtype": "float32"}}}}
    ok = parse_entry("P", {**raw, "peers": {"lib": {"call": "pkg.mod.Fn.apply", "args": ["x", 1.0]}}}, "t.yaml")
    assert ok.peers == {"lib": {"call": "pkg.mod.Fn.apply", "args": ["x", 1.0], "devices": ["cuda"]}}
    assert parse_entry("P", raw, "t.yaml").peers is None
    half = {"expr": "x[..., :x.shape[-1] // 2]"}
    assert parse_entry("P", {**raw, "peers": {"lib": {"call": "m.f", "args": [half]}}}, "t.yaml").peers
    for bad in ({"lib": {"call": "not a path"}}, {"lib": {"call": "m.f", "args": "x"}},
                {"lib": {"call": "m.f", "extra": 1}}, {"lib": "m.f"},
                {"lib": {"call": "m.f", "args": [{"expr": "x[..."}]}}, {"lib": {"call": "m.f", "args": [{"e": "x"}]}},
                {"lib": {"call": "m.f", "devices": ["tpu"]}}, {"lib": {"call": "m.f", "devices": []}},
                {"lib": {"call": "m.f", "devices": "cpu"}}):
        with pytest.raises(ManifestError, match="peers"):
            parse_entry("P", {**raw, "peers": bad}, "t.yaml")


def test_a_peer_runs_on_the_devices_its_entry_lists(tmp_path):
    """torch.topk, the call a user makes on any device, is timed beside TopKFwdOp on the CPU
    (devices: [cpu, cuda]); a peer library's GPU kernel (the default devices) is not."""
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "tileops", "bench", "--op", "TopKFwdOp", "--device", "cpu", "--quick",
                        "--impls", "tileops,torch.topk", "--out", str(out), "--no-plot"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    row = json.loads(out.read_text())["rows"][0]
    assert set(row["impls"]) == {"tileops", "torch.topk"} and row["impls"]["torch.topk"]["us"] > 0
    assert row["ratios"]["us"]["tileops/torch.topk"] > 0
    assert tileops.all_op_classes()["RMSNormFwdOp"]._entry.peers["liger"]["devices"] == ["cuda"]


def test_a_peer_argument_may_be_an_expression_over_the_inputs():
    """A peer that takes the halves of x (Liger's SiLU-mul) gets views of the case's input."""
    import torch
    cls = tileops.all_op_classes()["SiluAndMulFwdOp"]
    spec = {"call": "torch.mul", "args": [{"expr": "x[..., :x.shape[-1] // 2]"}, {"expr": "x[..., x.shape[-1] // 2:]"}]}
    x = torch.arange(8.0).view(2, 4)
    assert torch.equal(bench.peer_callable(cls._entry, spec, [x], {})(), x[:, :2] * x[:, 2:])


def test_an_op_that_writes_its_inputs_is_checked_on_what_it_wrote(monkeypatch):
    """KVCacheWriteFwdOp returns nothing: the bench compares the caches each impl wrote
    (from the same starting caches) with the reference's, and a wrong write is caught."""
    cls = tileops.all_op_classes()["KVCacheWriteFwdOp"]
    case = bench.select_cases(cls, dtypes=["float16"], keep=bench.case_filter("T=8"))[0]
    cfg = bench.Config("cpu", impls=["tileops", "torch"], quick=True)
    row = bench.run_case(cls, case, cfg, {}, [])
    assert row["correct"] is True and "error" not in row, row
    k_bytes = 8 * case.dims["HK"] * 128 * 2
    assert row["bytes"] == 4 * k_bytes + 8 * 8          # k and v read, two rows written, the slots
    real = cls._forward

    def wrong(self, k, v, key_cache, value_cache, slot_mapping):
        return real(self, v, k, key_cache, value_cache, slot_mapping)   # k and v swapped
    monkeypatch.setattr(cls, "_forward", wrong)
    failures = []
    row = bench.run_case(cls, case, cfg, {}, failures)
    assert row["correct"] is False and failures, row


def test_case_filter_terms_and_their_parts():
    """--workloads: terms are alternatives; the parts of a term joined by '&' must all match."""
    from tileops.attention import PagedDecodeAttentionFwdOp
    names = lambda f: {c.name for c in bench.select_cases(PagedDecodeAttentionFwdOp, dtypes=["float16"],  # noqa: E731
                                                          keep=bench.case_filter(f))}
    one = names("llama-3-8b&b=1&bs=16&ctx=4096")
    assert one == {"Llama-3-8B[B=1,BS=16,CTX=4096,D=128,H=32,HK=8]-float16"}, one
    two = names("llama-3-8b&b=1&bs=16&ctx=4096,qwen2.5-7b&b=8&bs=64&ctx=1024")
    assert two == one | {"Qwen2.5-7B[B=8,BS=64,CTX=1024,D=128,H=28,HK=4]-float16"}, two
    assert not names("llama-3-8b&no-such-part")


def _compile_that_fails(monkeypatch, after=0):
    """torch.compile replaced by one whose compiled function raises what inductor 2.11
    raised on vLLM's forward_native at B = 128, on its first call (after=0) or once it has
    run `after` times (a baseline that breaks while timed)."""
    calls = {"n": 0}

    def fake_compile(fn, **kw):
        def compiled(*a, **k):
            calls["n"] += 1
            if calls["n"] > after:
                raise TypeError("list indices must be integers or slices, not tuple")
            return fn(*a, **k)
        return compiled
    monkeypatch.setattr(torch, "compile", fake_compile)


@pytest.mark.parametrize("after", [0, 1])
def test_a_failing_baseline_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch, capsys, after):
    """torch.compile raising (at its first call, or later while timed) is recorded with its
    text in the row and the table; tileops and torch are still timed; the run is ok."""
    _compile_that_fails(monkeypatch, after)
    out = tmp_path / "r.json"
    rc = bench.main(["--op", "ArgmaxFwdOp", "--device", "cpu", "--quick", "--out", str(out), "--no-plot"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    data = json.loads(out.read_text())
    assert data["metadata"]["status"] == "ok" and data["metadata"]["complete"] is True
    row, = data["rows"]
    failed = row["impls"]["torch.compile"]
    assert failed["error"] == "TypeError: list indices must be integers or slices, not tuple"
    assert "us" not in failed and row["impl_errors"] == {"torch.compile": failed["error"]}
    assert row["impls"]["tileops"]["us"] > 0 and row["impls"]["torch"]["us"] > 0 and row["correct"] is True
    assert "torch.compile: TypeError: list indices must be integers" in printed
    table = printed[printed.index("tileops µs"):]
    assert table.splitlines()[2].rstrip().endswith("torch.compile")   # the row's `failed` column


def test_a_dynamic_compile_that_fails_gets_the_static_build_for_that_case(tmp_path, monkeypatch, capsys):
    """--compile dynamic: where inductor fails on the dynamic build (2.11: the mask's sort at
    B = 32), the case is timed with torch.compile's static build and its row says so; a
    static build that fails too is recorded as the failure."""
    seen = []

    def fake_compile(fn, dynamic=None, **kw):
        seen.append(dynamic)

        def compiled(*a, **k):
            if dynamic:
                raise TypeError("list indices must be integers or slices, not NoneType")
            return fn(*a, **k)
        return compiled
    monkeypatch.setattr(torch, "compile", fake_compile)
    out = tmp_path / "r.json"
    rc = bench.main(["--op", "ArgmaxFwdOp", "--device", "cpu", "--quick", "--compile", "dynamic",
                     "--out", str(out), "--no-plot"])
    assert rc == 0, capsys.readouterr().out
    row, = json.loads(out.read_text())["rows"]
    tc = row["impls"]["torch.compile"]
    assert seen == [True, False]
    assert "error" not in tc and tc["us"] > 0 and tc["correct"] is True
    assert tc["compile"].startswith("static (the dynamic compile raised TypeError: list indices")
    assert "dynamic compile failed, compiled static" in capsys.readouterr().err

    _compile_that_fails(monkeypatch)   # the static build fails as well: recorded, the run goes on
    rc = bench.main(["--op", "ArgmaxFwdOp", "--device", "cpu", "--quick", "--compile", "dynamic",
                     "--out", str(out), "--no-plot"])
    row, = json.loads(out.read_text())["rows"]
    assert rc == 0 and row["impls"]["torch.compile"]["error"].startswith("TypeError: list indices")
    assert "us" not in row["impls"]["torch.compile"] and row["impls"]["tileops"]["us"] > 0


def test_hot_timer_shrinks_for_slow_calls():
    assert bench.hot_plan(50, 20, est_us=5.0, budget_ms=300) == (50, 20)
    assert bench.hot_plan(50, 20, est_us=4000.0, budget_ms=300) == (3, 20)     # 240 ms of replays
    assert bench.hot_plan(50, 20, est_us=40000.0, budget_ms=300) == (1, 7)     # a 40 ms reference
    assert bench.hot_plan(20, 5, est_us=1e6, budget_ms=30) == (1, 3)
    assert bench.hot_plan(50, 20) == (50, 20)


def test_the_cold_spin_is_twice_the_host_time_within_its_floor_and_cap():
    """cuda_cold_us's spin after each flush: a raw launch's few µs of host time get the
    floor (the host's jitter between the spin and the call must not reach the GPU idle), a
    slow host path twice its median, a given spin as given; none past the cap."""
    assert bench.cold_spin_us([3e-6, 2e-6, 40e-6]) == bench.SPIN_MIN_US == 50.0
    assert bench.cold_spin_us([30e-6, 31e-6, 29e-6]) == pytest.approx(60.0)
    assert bench.cold_spin_us([1.0]) == bench.SPIN_MAX_US
    assert bench.cold_spin_us([3e-6], spin_us=100.0) == 100.0 and bench.cold_spin_us([3e-6], spin_us=1.0) == 1.0
    assert bench.cold_spin_us([3e-6], spin_us=1e9) == bench.SPIN_MAX_US


def test_a_budget_stops_an_op_between_cases_and_says_so(tmp_path):
    out = tmp_path / "r.json"
    rc = bench.main(["--op", "ArgmaxFwdOp", "--device", "cpu", "--fast", "--budget-s", "1e-6", "--impls",
                     "tileops,torch", "--dtypes", "float32", "--workloads", "llama-3", "--out", str(out), "--no-plot"])
    assert rc == 0
    data = json.loads(out.read_text())
    meta = data["metadata"]
    assert len(data["rows"]) == 1 and meta["complete"] is False and meta["cases"] == 3   # B = 256: over the cap
    assert len(meta["cases_skipped"]) == 2 and "--budget-s" in meta["stopped"]
    assert meta["timing"] == "fast" and data["rows"][0]["impls"]["tileops"]["us"] > 0


def test_inputs_follow_the_manifests_draws_on_the_device():
    """Paged decode attention's inputs: block tables a distinct choice of the cache's
    blocks, every sequence at its table's full length, K/V drawn in the case's dtype on
    the device asked for; the same seed gives the same inputs."""
    from tileops.attention import PagedDecodeAttentionFwdOp
    case, = bench.select_cases(PagedDecodeAttentionFwdOp, dtypes=["bfloat16"],
                               keep=bench.case_filter("qwen2.5-7b&b=8&bs=64&ctx=1024"))
    q, kc, vc, bt, sl = bench.make_inputs(PagedDecodeAttentionFwdOp._entry, case, "cpu")
    assert q.shape == (8, 28, 128) and kc.shape == vc.shape == (8 * 16, 64, 4, 128)
    assert kc.dtype == vc.dtype == q.dtype == torch.bfloat16 and all(t.device.type == "cpu" for t in (q, kc, bt, sl))
    assert bt.dtype == sl.dtype == torch.int32 and bt.shape == (8, 16)
    assert sorted(bt.flatten().tolist()) == list(range(128))          # distinct blocks, all of them
    assert sl.tolist() == [1024] * 8                                   # draws: max
    assert 0.9 < kc.float().std().item() < 1.1 and not torch.equal(kc, vc)
    again = bench.make_inputs(PagedDecodeAttentionFwdOp._entry, case, "cpu")
    assert all(torch.equal(a, b) for a, b in zip((q, kc, vc, bt, sl), again))


def test_paged_decode_workloads_are_issue_13s():
    """Three models, D = 128, B 1/8/32/128 at 1K and 4K, B 1/8/32 at 32K (128 x 32K left
    out for the device budget), pages of 16 and 64, fp16 and bf16."""
    from tileops.attention import PagedDecodeAttentionFwdOp
    cases = bench.select_cases(PagedDecodeAttentionFwdOp)
    got = {(c.label, c.dims["H"], c.dims["HK"], c.dims["B"], c.dims["CTX"], c.dims["BS"], c.dims["D"],
            str(c.dtype)) for c in cases}
    want = {(m, h, hk, b, ctx, bs, 128, dt)
            for m, h, hk in (("Llama-3-8B", 32, 8), ("Qwen2.5-7B", 28, 4), ("Llama-3-70B TP4", 16, 2))
            for b in (1, 8, 32, 128) for ctx in (1024, 4096, 32768) for bs in (16, 64)
            for dt in ("torch.float16", "torch.bfloat16") if not (ctx == 32768 and b == 128)}
    assert got == want and len(cases) == len(want) == 132


def test_quick_takes_the_smallest_case_when_the_cap_leaves_none():
    cls = tileops.all_op_classes()["EmbeddingFwdOp"]
    assert not bench.select_cases(cls, max_input_bytes=64 << 20)
    one, = bench.select_cases(cls, max_input_bytes=64 << 20, quick=True)
    assert one.dims["V"] == 128256 and one.dims["H"] == 4096


def _nucleus_edge_case(monkeypatch):
    """TopKTopPMaskFwdOp on bfloat16 logits with p placed a few float32 ulps either side of
    a row's nucleus edge: the reference (softmax and cumsum of the bf16 logits in float32)
    decides the edge element otherwise than the same reference in float64 on some rows --
    what Qwen's vocabulary does to ~1.5% of random rows. The bench's inputs are these."""
    from tileops.manifest.workloads import cases
    from tileops.reference import sampling as ref
    cls = tileops.all_op_classes()["TopKTopPMaskFwdOp"]
    V = 4096
    row = torch.randn(V, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    cum = row.double().sort().values.softmax(-1).cumsum(-1)
    base = torch.tensor(1 - cum[V - 40].item(), dtype=torch.float32)
    p = base + torch.arange(-64, 64, dtype=torch.float32) * torch.finfo(torch.float32).eps * base
    logits = row.expand(len(p), V).contiguous()
    low, high = ref.top_k_top_p_mask(logits, None, p), ref.top_k_top_p_mask(logits.double(), None, p.double())
    assert ((low == -torch.inf) != (high == -torch.inf)).any(), "no row where float32 and float64 decide otherwise"
    monkeypatch.setattr(bench, "make_inputs", lambda entry, case, device, seed=0: [logits.clone(), None, p.clone()])
    case = next(c for c in cases(cls._entry, dtypes=["bfloat16"]))
    case = dataclasses.replace(case, shapes={"logits": (len(p), V), "p": (len(p),)}, dims={"B": len(p), "V": V})
    return cls, case, bench.Config("cpu", impls=["tileops", "torch"], quick=True)


@pytest.mark.parametrize("peer_indices,accepted", [([[4, 2]], True), ([[2, 1]], True), ([[0, 2]], False),
                                                    ([[2, 2]], False)])
def test_a_peer_s_top_k_indices_may_break_ties_another_way(monkeypatch, peer_indices, accepted):
    """TopKFwdOp's indices are `index_of: logits`: a peer whose indices pick the same values
    as the reference's (ties at 3.0 in another order) is correct, its check saying so; one
    that picks another value, or one tied value twice, is flagged. tileops (ties to the
    lower index) matches exactly."""
    from tileops.manifest.workloads import cases
    cls = tileops.all_op_classes()["TopKFwdOp"]
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0]])
    monkeypatch.setattr(bench, "make_inputs", lambda entry, case, device, seed=0: [logits.clone()])
    idx = torch.tensor(peer_indices)
    monkeypatch.setattr(bench, "peer_callable",
                        lambda entry, spec, inputs, params: lambda: (logits.gather(-1, idx), idx))
    case = next(c for c in cases(cls._entry, dtypes=["float32"]))
    case = dataclasses.replace(case, shapes={"logits": (1, 5)}, dims={"B": 1, "V": 5, "K": 2}, params={"k": 2})
    row = bench.run_case(cls, case, bench.Config("cpu", impls=["tileops", "torch.topk"], quick=True), {}, [])
    tile, peer = row["impls"]["tileops"], row["impls"]["torch.topk"]
    assert tile["correct"] is True and tile["check"] == "reference" and tile["us"] > 0
    assert peer["correct"] is accepted
    if accepted:
        assert peer["check"] == "reference, ties in another order" and "error" not in peer and peer["us"] > 0
    else:
        assert peer["error"].startswith("output differs from the reference") and peer["us"] > 0
        assert row["winner"]["us"] == "tileops"   # a peer flagged as differing is timed, never the winner


def test_picked_values_refuses_indices_out_of_range():
    cls = tileops.all_op_classes()["TopKFwdOp"]
    logits = torch.tensor([[1.0, 3.0, 2.0]])
    assert torch.equal(bench.picked_values(cls._entry, [logits], (logits[:, :1], torch.tensor([[2]])))[1],
                       torch.tensor([[2.0]]))
    assert bench.picked_values(cls._entry, [logits], (logits[:, :1], torch.tensor([[3]]))) is None
    assert bench.picked_values(tileops.all_op_classes()["ArgmaxFwdOp"]._entry, [logits], (torch.tensor([1]),)) is None


def test_a_result_the_float64_reference_confirms_is_accepted(monkeypatch):
    """Where the reference computed in low precision decides the nucleus' edge otherwise,
    the bench asks the reference again on float64 inputs: tileops agrees with it exactly,
    is accepted, timed, and the row says the float64 opinion decided."""
    cls, case, cfg = _nucleus_edge_case(monkeypatch)
    failures = []
    row = bench.run_case(cls, case, cfg, {}, failures)
    tile = row["impls"]["tileops"]
    assert tile["scaled_err"] > bench.TOLERANCE["bfloat16"], tile          # the first opinion disagrees
    assert tile["float64_scaled_err"] == tile["float64_max_abs_err"] == 0, tile
    assert row["correct"] is True and row["check"] == tile["check"] == "float64", row
    assert not failures and "error" not in row and tile["us"] > 0
    assert row["impls"]["torch"].get("check") is None                      # the reference is not checked


def test_a_wrong_result_is_flagged_by_both_opinions(monkeypatch):
    """A genuinely wrong result (each row's largest logit masked) disagrees with the float64
    reference too: flagged, not timed, the run fails."""
    cls, case, cfg = _nucleus_edge_case(monkeypatch)
    real = cls._forward

    def wrong(self, logits, k=None, p=None, **kw):
        out = real(self, logits, k, p, **kw)
        return out.scatter(-1, logits.argmax(-1, keepdim=True), float("-inf"))
    monkeypatch.setattr(cls, "_forward", wrong)
    failures = []
    row = bench.run_case(cls, case, cfg, {}, failures)
    tile = row["impls"]["tileops"]
    assert row["correct"] is False and row["check"] == "float64" and failures, row
    assert tile["float64_scaled_err"] > bench.TOLERANCE["bfloat16"] and "us" not in tile
    assert "and from the float64 reference" in row["error"], row["error"]


def test_a_reference_that_cannot_run_in_float64_keeps_the_first_opinion(monkeypatch):
    """No float64 opinion (the reference refuses float64): the first opinion stands, and
    the row says why there was no second one."""
    cls, case, cfg = _nucleus_edge_case(monkeypatch)
    from tileops import reference
    real = reference.resolve

    def resolve(path):
        fn = real(path)

        def no_float64(*a, **kw):
            if any(isinstance(t, torch.Tensor) and t.dtype == torch.float64 for t in a):
                raise TypeError("float64 not supported")
            return fn(*a, **kw)
        return no_float64
    monkeypatch.setattr(reference, "resolve", resolve)
    failures = []
    row = bench.run_case(cls, case, cfg, {}, failures)
    assert row["correct"] is False and row["check"] == "reference" and failures, row
    assert row["check_note"] == "no float64 opinion: the reference raised TypeError: float64 not supported"
    assert "float64_scaled_err" not in row["impls"]["tileops"] and row["check_note"] in row["error"]


def test_check_close_compares_indices_exactly_and_ignores_masked_infinities():
    """An index one off is a mismatch however large the indices; a -inf of a masked logit
    neither hides the error of the kept values nor counts where both have it."""
    idx = torch.tensor([100000, 5])
    assert bench.check_close(idx, idx.clone(), "bfloat16") == (0.0, 0.0, True)
    assert bench.check_close(idx + torch.tensor([1, 0]), idx, "bfloat16") == (1.0, 1.0, False)
    ref = torch.tensor([-torch.inf, 2.0, 3.0, torch.nan])
    assert bench.check_close(ref.clone(), ref, "float32")[2]
    err, scaled, ok = bench.check_close(torch.tensor([-torch.inf, 2.0, 3.5, torch.nan]), ref, "float32")
    assert (err, scaled, ok) == (0.5, 0.5 / 3.0, False)
    assert not bench.check_close(torch.tensor([0.0, 2.0, 3.0, torch.nan]), ref, "float32")[2]


def _fake_loop(passes, seen):
    """A stand-in for loop_times_us: the k-th call returns passes[k] for the names it is
    given (and records them), so the recheck's decisions can be tested without timing."""
    def loop(fns, keep_rounds=False, **kw):
        got = {n: passes[len(seen)][n] for n in fns}
        seen.append((sorted(fns), kw))
        return (got, {n: [v] for n, v in got.items()}) if keep_rounds else got
    return loop


def test_a_cpu_loss_is_timed_again_and_the_second_pass_stands(monkeypatch, capsys):
    """tileops behind torch in the first pass: tileops, torch (which beat it) and the copy
    are timed again with the longer timers; torch.compile (slower) is not; the recheck's
    numbers stand and the first pass is kept."""
    seen = []
    first = {"tileops": 10.0, "torch": 8.0, "torch.compile": 12.0, "copy": 5.0}
    monkeypatch.setattr(bench, "loop_times_us", _fake_loop([first, {"tileops": 7.0, "torch": 9.0, "copy": 5.5}], seen))
    ready = {i: (lambda: None) for i in first}
    rows = {i: {} for i in first}
    bench.time_cpu(ready, bench.Config("cpu", fast=True), rows, "case")
    assert [names for names, _ in seen] == [sorted(first), ["copy", "tileops", "torch"]]
    assert seen[1][1] == bench.CPU_RECHECK
    assert rows["tileops"]["us"] == 7.0 and rows["tileops"]["us_first"] == 10.0 and rows["tileops"]["rechecked"]
    assert rows["torch"]["us"] == 9.0 and rows["torch"]["us_first_rounds"] == [8.0]
    assert rows["copy"]["us"] == 5.5
    assert rows["torch.compile"] == {"us": 12.0, "us_rounds": [12.0]}      # did not beat tileops: not rechecked
    assert "not behind" in capsys.readouterr().err


def test_a_confirmed_loss_is_reported_as_measured(monkeypatch, capsys):
    seen = []
    first = {"tileops": 10.0, "torch": 8.0}
    monkeypatch.setattr(bench, "loop_times_us", _fake_loop([first, {"tileops": 10.5, "torch": 8.2}], seen))
    rows = {i: {} for i in first}
    bench.time_cpu({i: (lambda: None) for i in first}, bench.Config("cpu"), rows, "case")
    assert rows["tileops"]["us"] == 10.5 and rows["torch"]["us"] == 8.2 and len(seen) == 2
    assert "still behind torch" in capsys.readouterr().err


@pytest.mark.parametrize("cfg,first", [
    (bench.Config("cpu", fast=True), {"tileops": 7.0, "torch": 8.0, "copy": 5.0}),     # tileops ahead
    (bench.Config("cpu", quick=True), {"tileops": 10.0, "torch": 8.0}),                # the smoke test
    (bench.Config("cpu", recheck=False), {"tileops": 10.0, "torch": 8.0}),            # --no-recheck
])
def test_no_recheck_where_tileops_leads_under_quick_or_when_turned_off(monkeypatch, cfg, first):
    seen = []
    monkeypatch.setattr(bench, "loop_times_us", _fake_loop([first], seen))
    rows = {i: {} for i in first}
    bench.time_cpu({i: (lambda: None) for i in first}, cfg, rows, "case")
    assert len(seen) == 1 and all("rechecked" not in r for r in rows.values())


def test_a_recheck_that_raises_keeps_the_first_pass(monkeypatch, capsys):
    first = {"tileops": 10.0, "torch": 8.0}
    calls = []

    def loop(fns, keep_rounds=False, **kw):
        calls.append(sorted(fns))
        if len(calls) > 1:
            raise RuntimeError("out of memory")
        return dict(first), {n: [v] for n, v in first.items()}
    monkeypatch.setattr(bench, "loop_times_us", loop)
    rows = {i: {} for i in first}
    bench.time_cpu({i: (lambda: None) for i in first}, bench.Config("cpu"), rows, "case")
    assert rows["tileops"] == {"us": 10.0, "us_rounds": [10.0]} and len(calls) == 2
    assert "first pass kept" in capsys.readouterr().err


def test_the_no_recheck_flag_parses():
    ap = bench.add_arguments(__import__("argparse").ArgumentParser())
    assert ap.parse_args(["--no-recheck"]).no_recheck and not ap.parse_args([]).no_recheck


def test_tileops_plain_is_accepted_and_is_cuda_only(capsys):
    """`--impls tileops.plain` (PDL off around each call: an A/B of programmatic dependent
    launch on a GPU) passes the argument check; on the CPU, where nothing launches with
    PDL, it is not built."""
    from tileops.norm import RMSNormFwdOp
    case = bench.select_cases(RMSNormFwdOp, dtypes=["float32"], keep=bench.case_filter("llama-3-8b[h=4096&t=1"))[0]
    row = bench.run_case(RMSNormFwdOp, case, bench.Config("cpu", impls=["tileops", bench.PLAIN], quick=True), {}, [])
    assert set(row["impls"]) == {"tileops"} and row["correct"] is True, row
    assert bench.main(["--op", "RMSNormFwdOp", "--device", "cpu", "--impls", "tileops,tileops.plain,nope"]) == 2
    assert "unknown impl(s) ['nope']" in capsys.readouterr().err


def test_without_pdl_turns_pdl_off_around_each_call_only():
    """bench.without_pdl(fn) (the tileops.plain impl and dev/time_paged_decode.py --pdl-ab):
    fn runs with PDL off, gets its arguments and returns its result; the setting is back
    after each call, also when fn raises."""
    from tileops import runtime
    seen = []
    plain = bench.without_pdl(lambda a, k=None: seen.append((runtime.pdl_enabled(), a, k)) or a)
    assert plain(3, k=4) == 3 and seen == [(False, 3, 4)] and runtime.pdl_enabled() is True

    def boom():
        raise KeyError("inside")
    with pytest.raises(KeyError):
        bench.without_pdl(boom)()
    assert runtime.pdl_enabled() is True


def test_the_commit_recorded_says_when_the_code_differs_from_it(tmp_path, monkeypatch):
    """git_commit names the checkout's commit, with -dirty once a tracked file differs: a
    copy of a working tree over an older .git must not pass for that commit."""
    import shutil
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    run = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, capture_output=True, text=True, check=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / "f.c").write_text("int a;\n")
    run("add", "f.c")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    head = run("rev-parse", "--short=7", "HEAD").stdout.strip()
    monkeypatch.setattr(bench, "REPO_ROOT", tmp_path)
    assert bench.git_commit() == head
    (tmp_path / "f.c").write_text("int b;\n")
    assert bench.git_commit() == head + "-dirty"
    monkeypatch.setattr(bench, "REPO_ROOT", tmp_path / "nowhere")
    assert bench.git_commit() is None


def test_the_copy_floor_takes_a_size_the_drivers_copy_runs_fast_at():
    """On CUDA the copy floor's half is rounded up to a multiple of 4 KiB from 64 KiB (an
    H100's cudaMemcpyAsync took 29.3 µs for 32 MiB + 128 B and 24.2 for 32 MiB + 4 KiB):
    never fewer bytes than the op's half, at most 4 KiB more; the CPU's copy and small
    copies are the op's half exactly."""
    half = 32 * 2**20 + 128
    assert bench.copy_half_bytes(2 * half, cuda=True) == 32 * 2**20 + 4096
    assert bench.copy_half_bytes(2 * half, cuda=False) == half
    assert bench.copy_half_bytes(2 * 2**25, cuda=True) == 2**25            # already a multiple
    assert bench.copy_half_bytes(2 * 1000, cuda=True) == 1000             # below COPY_ROUND_FROM
    for nbytes in (2 * bench.COPY_ROUND_FROM, 2 * bench.COPY_ROUND_FROM + 2, 3 * 10**7 + 6, 2**31 + 10):
        got = bench.copy_half_bytes(nbytes, cuda=True)
        assert got % bench.COPY_ROUND == 0 and nbytes // 2 <= got < nbytes // 2 + bench.COPY_ROUND, (nbytes, got)
    fns = {}
    moved = bench.add_copy(fns, 2 * half, torch.float16, "cpu")
    assert moved == 2 * half and set(fns) == {bench.COPY}


def test_the_cuda_copy_floor_is_a_kernel_from_the_size_a_graphs_memcpy_slows_at():
    """copy_ below COPY_KERNEL_FROM bytes a half (and always on the CPU), the copy kernel
    from it on."""
    assert not bench.copy_by_kernel(bench.COPY_KERNEL_FROM - 4096, cuda=True)
    assert bench.copy_by_kernel(bench.COPY_KERNEL_FROM, cuda=True)
    assert not bench.copy_by_kernel(bench.COPY_KERNEL_FROM, cuda=False)
    fns = {}
    assert bench.add_copy(fns, 2 * 4096, torch.float16, "cpu") == 2 * 4096
    fns[bench.COPY]()


def test_a_cuda_runs_metadata_says_its_timers_demote_persisting_l2_lines():
    """Results from before session 39 (L2-cold with the flush alone) and after can be told
    apart from their JSON: the timer description names the reset, cold and hot."""
    timers = bench.timer_description(bench.Config("cuda", fast=True))
    assert "persisting lines demoted" in timers["cold"] and "persisting lines demoted" in timers["hot"], timers
    assert "(at least 50 us)" in timers["cold"], timers   # and those from after session 45's spin floor


def test_a_hot_time_above_its_own_l2_cold_time_is_flagged_suspect(capsys):
    """Session 40's H100 run: paged decode at B = 32, 32K tokens, one --fast round, had
    tileops hot 1617.3 µs against its own L2-cold 1373.7 (full timers: 1407.9 / 1414.5) and
    torch's 4.3 GB copy 1758.0 / 1424.0. A hot time more than HOT_OVER_COLD above the
    impl's own cold time is flagged in its row, in the case's row and under the table;
    one within it (the noise of equal times at gigabytes) is not."""
    impls = {"tileops": {"hot_us": 1617.3, "cold_us": 1373.7},
             "sdpa_gathered": {"hot_us": 1340.7, "cold_us": 1349.7},
             "copy": {"hot_us": 1758.0, "cold_us": 1424.0},
             "torch": {"hot_us": 1.04 * 100.0, "cold_us": 100.0},
             "torch.compile": {"cold_us": 50.0, "hot_error": "not capturable"}}
    flagged = bench.flag_suspect_hot(impls)
    assert set(flagged) == {"tileops", "copy"}
    assert "1.18x its own L2-cold 1373.70" in flagged["tileops"]
    assert impls["tileops"]["suspect"] == flagged["tileops"]
    assert "suspect" not in impls["sdpa_gathered"] and "suspect" not in impls["torch"]
    bench.print_suspect([{"case": "B=32 32K", "suspect": flagged}, {"case": "clean"}])
    out = capsys.readouterr().out
    assert "suspect hot times" in out and "B=32 32K  tileops: hot 1617.30" in out and "clean" not in out
    bench.print_suspect([{"case": "clean"}])
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("dtypes, said", [("int32", "--dtypes int32: RMSNormFwdOp takes float32, float16, bfloat16"),
                                          ("float64", "--dtypes float64: RMSNormFwdOp takes float32, float16, "),
                                          ("foo", "--dtypes 'foo': not a dtype; known: float32, float16,"),
                                          ("float16,foo", "--dtypes 'foo': not a dtype")])
def test_a_dtype_the_op_does_not_take_is_a_usage_error_before_any_case(tmp_path, monkeypatch, capsys, dtypes, said):
    """Not a case of float32 inputs labelled -int32 (the input's first dtype taken instead),
    nor a KeyError: one line, status 2, nothing run or written."""
    monkeypatch.setattr(bench, "run_case", lambda *a: pytest.fail("a case ran"))
    out = tmp_path / "r.json"
    assert bench.main(["--op", "RMSNormFwdOp", "--device", "cpu", "--quick", "--dtypes", dtypes,
                       "--out", str(out), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_dtype_only_some_ops_take_skips_the_others_with_a_note(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = bench.main(["--op", "RMSNormFwdOp,AlibiFwdOp", "--device", "cpu", "--quick", "--impls", "tileops",
                     "--dtypes", "float16", "--out", str(out), "--no-plot"])
    assert rc == 0
    assert "[bench] AlibiFwdOp: --dtypes float16: its 'bias' takes float32; the op skipped" in capsys.readouterr().err
    rows = json.loads(out.read_text())["rows"]
    assert [(r["op"], r["dtype"]) for r in rows] == [("RMSNormFwdOp", "float16")]
    assert bench.main(["--op", "RMSNormFwdOp,AlibiFwdOp", "--device", "cpu", "--dtypes", "int32"]) == 2
    assert "--dtypes int32: none of the 2 ops takes it; they take float32, float16, bfloat16" in capsys.readouterr().err


def test_an_embeddings_dtypes_are_its_tables_not_its_ids(capsys):
    """--dtypes of EmbeddingFwdOp names its table's dtype (the ids keep int32): float16 runs,
    int32 (an id's dtype, not a table's) is refused."""
    from tileops.manifest.workloads import accepted_dtypes
    cls = tileops.all_op_classes()["EmbeddingFwdOp"]
    assert accepted_dtypes(cls._entry) == (torch.float32, torch.float16, torch.bfloat16)
    case = dataclasses.replace(bench.select_cases(cls, dtypes=["float16"])[0], shapes={"ids": (3,), "weight": (10, 8)})
    ids, weight = bench.make_inputs(cls._entry, case, "cpu")
    assert weight.dtype == torch.float16 and ids.dtype == torch.int32 and case.name.endswith("-float16")
    assert bench.main(["--op", "EmbeddingFwdOp", "--device", "cpu", "--dtypes", "int32"]) == 2
    assert "--dtypes int32: EmbeddingFwdOp takes float32, float16, bfloat16" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["folder", "under a file", "/proc"])
def test_an_out_that_cannot_be_written_is_refused_before_any_case(tmp_path, monkeypatch, capsys, where):
    (tmp_path / "f").write_text("")
    out = {"folder": tmp_path, "under a file": tmp_path / "f" / "r.json", "/proc": "/proc/tileops-r.json"}[where]
    monkeypatch.setattr(bench, "run_case", lambda *a: pytest.fail("a case ran"))
    assert bench.main(["--op", "RMSNormFwdOp", "--device", "cpu", "--quick", "--out", str(out), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"[bench] --out {str(out)!r}: cannot write it (") and len(err.strip().splitlines()) == 1, err
    assert bench.unwritable(tmp_path / "new" / "r.json") is None and not (tmp_path / "new" / "r.json").exists()
