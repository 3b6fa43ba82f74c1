"""`python -m tileops warmup` on a GPU: a first process compiles the kernels of a config into
a fresh disk cache; a second process that builds the model's layer from tileops.nn modules
(not through the warm-up's plan) and runs it at other token counts compiles nothing and
loads everything from that cache; so does a patched transformers model where transformers
is installed. Skipped without CUDA (tests/gpu/conftest.py)."""
import json
import os
import subprocess
import sys

import pytest

CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 8,
          "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "max_position_embeddings": 512, "hidden_act": "silu",
          "vocab_size": 512, "num_hidden_layers": 2, "torch_dtype": "bfloat16"}

SECOND = r"""
import json, sys, torch
import tileops.nn as tnn
from tileops import runtime
cfg = json.load(open(sys.argv[1]))
h, i, heads, kv = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
d, dev, dt = h // heads, "cuda", torch.bfloat16
norm = tnn.RMSNorm(h, eps=cfg["rms_norm_eps"], cast_before_weight=True, device=dev, dtype=dt)
add_norm = tnn.FusedAddRMSNorm(h, eps=cfg["rms_norm_eps"], cast_before_weight=True, device=dev, dtype=dt)
act = tnn.SiluAndMul(cast_before_mul=True)
rope = tnn.RotaryEmbedding(d, max_position=cfg["max_position_embeddings"], cast_cos_sin=True, device=dev)
with torch.no_grad():
    for t in (3, 40):
        x = torch.randn(t, h, device=dev, dtype=dt)
        y = norm(x)
        q, k = torch.randn(t, heads * d, device=dev, dtype=dt), torch.randn(t, kv * d, device=dev, dtype=dt)
        rope(torch.arange(t, device=dev), q, k, inplace=True)
        y, r = add_norm(y, x)
        act(torch.randn(t, 2 * i, device=dev, dtype=dt))
        norm(r)
    if len(sys.argv) > 2:   # and a patched transformers model of that config
        import tileops, transformers
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**{k: v for k, v in cfg.items()
                                                                         if k != "model_type"})).to(dev, dt).eval()
        tileops.patch(model)
        ids = torch.randint(0, cfg["vocab_size"], (2, 7), device=dev)
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False)
torch.cuda.synchronize()
print(json.dumps(runtime.stats()))
"""


def _run(args, cache):
    env = dict(os.environ, TILEOPS_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, env=env)


def test_a_second_process_compiles_nothing(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG))
    cache = tmp_path / "cache"
    r = _run(["-m", "tileops", "warmup", "--config", str(cfg), "--max-batch", "64"], cache)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "kernels compiled" in r.stderr and "[" in r.stderr, r.stderr[-2000:]   # the summary and the bar
    script = tmp_path / "second.py"
    script.write_text(SECOND)
    try:
        import transformers  # noqa: F401
        extra = ["hf"]
    except ImportError:
        extra = []
    r = _run([str(script), str(cfg), *extra], cache)
    assert r.returncode == 0, r.stderr[-3000:]
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    assert stats["nvrtc_compiles"] == 0, stats
    assert stats["disk_hits"] > 0, stats
    # warming up again compiles nothing either
    r = _run(["-m", "tileops", "warmup", "--config", str(cfg), "--max-batch", "64"], cache)
    assert r.returncode == 0 and " 0 kernels compiled" in r.stderr, r.stderr[-2000:]
