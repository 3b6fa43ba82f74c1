"""benchmarks/layer.py on the CPU with a tiny layer (--quick): it checks tileops' layer against
Hugging Face's before timing, times every impl it can on the CPU, the torch.compile baseline
through the compile path (aot_eager: dynamo + AOT autograd without inductor's C++ build,
for speed), and writes the JSON the integrator reads; the sub-op breakdown names every op of
the decode step."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBOPS = ["input fused_add_rms_norm", "qkv matmul", "rope", "kv_cache_write", "paged_decode_attention", "o matmul",
          "post fused_add_rms_norm", "gate_up matmul", "silu_and_mul", "down matmul"]


def _run(tmp_path, *extra):
    out = tmp_path / "layer.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "layer.py"), "--device", "cpu", "--quick",
                        "--out", str(out), *extra], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text()), r.stdout


def test_quick_cpu_run_checks_against_hugging_face_and_times_every_impl(tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed: the baseline is Hugging Face's layer")
    data, stdout = _run(tmp_path, "--compile-backend", "aot_eager")
    meta, rows = data["metadata"], data["rows"]
    assert meta["status"] == "ok" and meta["bench"] == "layer" and meta["shape"]["hidden_size"] == 64
    assert [(r["phase"], r["batch"]) for r in rows] == [("decode", 1), ("decode", 3), ("prefill", 1)]
    for r in rows:
        assert set(r["impls"]) == {"tileops eager", "hf eager", "hf torch.compile"}, r["impls"]   # no graphs on CPU
        assert all(v["us"] > 0 for v in r["impls"].values())
        assert r["checks"]["tileops eager"]["ok"] and r["checks"]["tileops eager"]["scaled_err"] <= 2e-2
        assert r["checks"]["hf torch.compile"]["ok"]
        assert set(r["ratios"]) == {"tileops/hf eager", "tileops/hf torch.compile"}
    decode = rows[0]
    assert list(decode["subops_us"]) == SUBOPS and decode["subops_sum_us"] > 0
    weights = 2 * (64 * 128 + 64 * 64 + 2 * 176 * 64 + 176 * 64 + 2 * 64)      # bfloat16 weights
    assert decode["bytes"] == weights + 1 * 64 * 2 * 16 * 2 * 2                  # + the K/V rows read
    assert "where the tileops step goes" in stdout


def test_quick_cpu_run_without_hugging_face(tmp_path):
    data, _ = _run(tmp_path, "--no-hf", "--batches", "2", "--no-subops")
    rows = data["rows"]
    assert data["metadata"]["status"] == "ok" and data["metadata"]["hf_baseline"].startswith("no Hugging Face")
    assert [set(r["impls"]) for r in rows] == [{"tileops eager"}, {"tileops eager"}]


def test_tp_script_on_two_gloo_processes(tmp_path):
    """benchmarks/layer_tp.py --device cpu --quick: 2 gloo ranks started by the script, the
    TP layer equal to the 1-process layer, each rank's compiled graph (aot_eager) one graph
    with one node per tileops call and two all-reduces."""
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available in this torch build")
    out = tmp_path / "layer_tp.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "layer_tp.py"), "--device", "cpu", "--quick",
                        "--batches", "2", "--compile-backend", "aot_eager", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert data["metadata"]["status"] == "ok" and data["metadata"]["world_size"] == 2
    rows = data["rows"]
    assert [(x["phase"], x["batch"]) for x in rows] == [("decode", 2), ("prefill", 1)]
    for x in rows:
        assert set(x["impls"]) == {"1 GPU eager", "TP eager", "TP torch.compile"}
        assert all(c["ok"] for c in x["checks"].values()) and x["graph_ok"] is True
        assert len(x["graph_nodes_by_rank"]) == 2
    decode_nodes = rows[0]["graph_nodes_by_rank"][0][0]
    assert [n for n in decode_nodes if n.startswith("tileops")] == [
        "tileops::norm_fused_add_rms_norm_fwd", "tileops::positional_rope_fwd",
        "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache",
        "tileops::attention_paged_decode_attention_fwd_without_lse", "tileops::norm_fused_add_rms_norm_fwd",
        "tileops::activation_silu_and_mul_fwd"]
    assert sum("all_reduce" in n for n in decode_nodes) == 2
