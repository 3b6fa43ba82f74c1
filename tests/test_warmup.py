"""`python -m tileops warmup`: the config it reads, the calls it would make (the kernels a
patched model needs), each call runnable through the interned instances (on the CPU here),
and, without CUDA, a clear refusal with status 2. That a second process then compiles
nothing needs a GPU: tests/gpu/test_gpu_warmup.py."""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from tileops import warmup as W
from tileops.errors import InputValueError

LLAMA3_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
             "num_key_value_heads": 8, "rms_norm_eps": 1e-5, "max_position_embeddings": 8192, "hidden_act": "silu",
             "torch_dtype": "bfloat16", "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}


def _write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return str(p)


def test_the_plan_of_llama3_8b_is_the_patched_models_ops():
    calls = W.plan(LLAMA3_8B, torch.bfloat16)
    assert [c.op for c in calls] == ["RMSNormFwdOp", "FusedAddRMSNormFwdOp", "SiluAndMulFwdOp", "RopeFwdOp",
                                     "RopeCosSinCacheFwdOp"]
    norm, fused, act, rope, table = calls
    assert dict(norm.params) == {"normalized_shape": (4096,), "eps": 1e-5, "cast_before_weight": True}
    assert dict(fused.params) == dict(norm.params)
    assert dict(act.params) == {"cast_before_mul": True} and act.tensors == (("x", ("T", 28672), torch.bfloat16),)
    assert dict(rope.params) == {"head_size": 128, "rotary_dim": 128, "is_neox": True, "cast_cos_sin": True}
    assert rope.tensors == (("q", ("T", 32, 128), torch.bfloat16), ("k", ("T", 8, 128), torch.bfloat16),
                            ("positions", ("T",), torch.int64), ("cos_sin_cache", (8192, 128), torch.float32))
    # the table tileops.nn.RotaryEmbedding computes on the device: no call-time tensor
    assert dict(table.params) == {"base": 500000.0, "rotary_dim": 128, "max_position": 8192} and table.tensors == ()


def test_qwen2_gelu_and_dynamic_rope_configs():
    qwen = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
            "num_key_value_heads": 4, "rms_norm_eps": 1e-6, "max_position_embeddings": 32768, "hidden_act": "silu"}
    rope = W.plan(qwen, torch.float16)[-2]
    assert rope.op == "RopeFwdOp" and rope.tensors[1] == ("k", ("T", 4, 128), torch.float16)
    gelu = dict(qwen, hidden_act="gelu_pytorch_tanh", rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    assert [c.op for c in W.plan(gelu, torch.float16)] == ["RMSNormFwdOp", "FusedAddRMSNormFwdOp",
                                                           "GeluTanhAndMulFwdOp"]
    assert [c.op for c in W.plan(dict(qwen, hidden_act="relu"), torch.float16)] == [
        "RMSNormFwdOp", "FusedAddRMSNormFwdOp", "RopeFwdOp", "RopeCosSinCacheFwdOp"]


def test_read_config_checks_what_the_plan_needs(tmp_path):
    assert W.read_config(_write(tmp_path, LLAMA3_8B))["hidden_size"] == 4096
    nested = {"model_type": "llava", "torch_dtype": "float16", "text_config": dict(LLAMA3_8B, torch_dtype=None)}
    assert W.read_config(_write(tmp_path, nested))["torch_dtype"] == "float16"
    with pytest.raises(InputValueError, match="field 'intermediate_size': expected an int >= 1, got None"):
        W.read_config(_write(tmp_path, {k: v for k, v in LLAMA3_8B.items() if k != "intermediate_size"}))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputValueError, match="not JSON"):
        W.read_config(str(tmp_path / "bad.json"))
    with pytest.raises(InputValueError, match="cannot read it"):
        W.read_config(str(tmp_path / "missing.json"))


def test_every_planned_call_runs_through_the_interned_instances_on_the_cpu():
    small = dict(LLAMA3_8B, hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                 max_position_embeddings=16)
    for dtype in (torch.bfloat16, torch.float16):
        for call in W.plan(small, dtype):
            for tokens in (1, 5):
                W.run_call(call, tokens, torch.device("cpu"))


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tileops", "warmup", *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **(env or {})))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: tests/gpu/test_gpu_warmup.py covers it")
def test_without_cuda_the_command_says_so_and_fails(tmp_path):
    r = _cli("--config", _write(tmp_path, LLAMA3_8B))
    assert r.returncode == 2 and "no CUDA device here" in r.stderr, r.stderr
    r = _cli("--config", _write(tmp_path, LLAMA3_8B), "--device", "cpu")
    assert r.returncode == 0 and "nothing to compile for the CPU" in r.stderr + r.stdout


def test_bad_arguments_are_refused(tmp_path):
    r = _cli("--config", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read it" in r.stderr
    r = _cli("--config", _write(tmp_path, LLAMA3_8B), "--dtype", "int8")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = _cli("--config", _write(tmp_path, LLAMA3_8B), "--max-batch", "0")
    assert r.returncode == 2 and "--max-batch 0" in r.stderr


@pytest.mark.parametrize("field, value, expected", [
    ("rms_norm_eps", "abc", "a number >= 0"), ("rms_norm_eps", True, "a number >= 0"),
    ("max_position_embeddings", "x", "an int >= 1"), ("num_key_value_heads", 0, "an int >= 1"),
    ("rope_scaling", "linear", "an object"), ("hidden_act", ["silu"], "a string"),
    ("torch_dtype", ["x"], "a string")])
def test_a_malformed_field_is_named_not_a_traceback(tmp_path, capsys, field, value, expected):
    path = _write(tmp_path, dict(LLAMA3_8B, **{field: value}))
    with pytest.raises(InputValueError, match=re.escape(f"field '{field}': expected {expected} (or no such field), "
                                                       f"got {value!r}")):
        W.read_config(path)
    assert W.warmup(path, None, 256, "cpu") == 2
    assert f"field '{field}': expected {expected}" in capsys.readouterr().err


def test_a_config_that_is_not_utf8_is_refused(tmp_path):
    (tmp_path / "c.json").write_bytes(b'{"hidden_size": "\xff\xfe"}')
    with pytest.raises(InputValueError, match="not UTF-8 text"):
        W.read_config(str(tmp_path / "c.json"))


def test_a_bad_dtype_from_the_config_names_its_field_not_the_flag(tmp_path, capsys):
    path = _write(tmp_path, dict(LLAMA3_8B, torch_dtype="float64"))
    assert W.warmup(path, None, 256, "cpu") == 2
    err = capsys.readouterr().err
    assert f"--config {path!r}: field 'torch_dtype': expected one of float16, bfloat16, float32, got 'float64'" in err
    assert "--dtype 'float64'" not in err
    assert W.warmup(path, "float16", 256, "cpu") == 0, "--dtype overrides the config's"
