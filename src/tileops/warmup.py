"""`python -m tileops warmup --config <HF config.json> [--dtype ...] [--max-batch ...]
[--device cuda]`: compiles every CUDA kernel a model patched by `tileops.patch` will need into
the disk cache ($TILEOPS_CACHE_DIR, `python -m tileops info` names it), with a progress
bar, so that a serving process starts with zero NVRTC compiles.

What a patched Llama / Qwen2 (or any model with their config fields) runs per layer, from the
config alone (`plan`): the RMSNorm of the input and the final norm and the fused residual
add + RMSNorm, all in Hugging Face's rounding (hidden_size, rms_norm_eps), the gated MLP
activation (2 x intermediate_size; silu, gelu or gelu-tanh by hidden_act) and RoPE (head_dim
of num_attention_heads and num_key_value_heads, int64 positions, the float32 cache of
max_position_embeddings rows), and that cache itself as tileops.nn.RotaryEmbedding makes it
on the device (RopeCosSinCacheFwdOp). A CUDA build depends on those sizes and the dtype, not on
the token count: each call runs at 1 token and at --max-batch tokens (the launch paths of
decode and prefill), on 16-byte aligned tensors as the model's are (the vector builds; the
RoPE build makes its scalar twin too).

Without CUDA there is nothing to compile into (a CUDA build is made and loaded for the card
in hand): the command says so and exits with status 2. On the CPU the C kernels are built
with the package: `--device cpu` has nothing to do and says so."""
from __future__ import annotations

import json
import sys
from typing import NamedTuple

import torch

from .errors import InputValueError

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
_GATED = {"silu": "SiluAndMulFwdOp", "swish": "SiluAndMulFwdOp", "gelu": "GeluAndMulFwdOp",
          "gelu_pytorch_tanh": "GeluTanhAndMulFwdOp"}


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


# what the plan reads besides the required sizes: (field, check, what it expects); each may
# be absent or null (the plan's default), never of another kind
_OPTIONAL = (("num_key_value_heads", _count, "an int >= 1"), ("head_dim", _count, "an int >= 1"),
             ("rms_norm_eps", _number, "a number >= 0"), ("max_position_embeddings", _count, "an int >= 1"),
             ("rope_theta", _number, "a number >= 0"), ("partial_rotary_factor", _number, "a number >= 0"),
             ("hidden_act", lambda v: isinstance(v, str), "a string"),
             ("rope_scaling", lambda v: isinstance(v, dict), "an object"),
             ("rope_parameters", lambda v: isinstance(v, dict), "an object"),
             ("torch_dtype", lambda v: isinstance(v, str), "a string"),
             ("dtype", lambda v: isinstance(v, str), "a string"))


class Call(NamedTuple):
    """One op call a patched model makes: the op, its params, and its tensors as
    (name, shape with "T" for the token count, dtype)."""
    op: str
    params: tuple
    tensors: tuple

    def label(self) -> str:
        ps = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.op}({ps})"


def read_config(path: str) -> dict:
    """A Hugging Face config.json as a dict, with what the plan needs checked (a missing or
    malformed field raises InputValueError naming it)."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as e:
        raise InputValueError(f"tileops warmup: --config {path!r}: cannot read it ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise InputValueError(f"tileops warmup: --config {path!r}: not JSON ({e})") from None
    except UnicodeDecodeError as e:
        raise InputValueError(f"tileops warmup: --config {path!r}: not UTF-8 text ({e.reason} at byte "
                              f"{e.start})") from None
    if not isinstance(cfg, dict):
        raise InputValueError(f"tileops warmup: --config {path!r}: expected a JSON object, got {type(cfg).__name__}")
    if isinstance(cfg.get("text_config"), dict):   # multimodal wrappers keep the LM's config inside
        cfg = {**cfg["text_config"], "torch_dtype": cfg.get("torch_dtype", cfg["text_config"].get("torch_dtype"))}
    for field in ("hidden_size", "intermediate_size", "num_attention_heads"):
        v = cfg.get(field)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputValueError(f"tileops warmup: --config {path!r}: field {field!r}: expected an int >= 1, "
                                  f"got {v!r}")
    for field, ok, expected in _OPTIONAL:
        v = cfg.get(field)
        if v is not None and not ok(v):
            raise InputValueError(f"tileops warmup: --config {path!r}: field {field!r}: expected {expected} "
                                  f"(or no such field), got {v!r}")
    return cfg


def plan(cfg: dict, dtype: torch.dtype) -> list:
    """The calls (Call) a model of this config makes once patched by tileops.patch."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or h // heads
    eps = float(cfg.get("rms_norm_eps", 1e-6))
    max_pos = int(cfg.get("max_position_embeddings", 2048))
    act = cfg.get("hidden_act", "silu")
    calls = [
        Call("RMSNormFwdOp", (("normalized_shape", (h,)), ("eps", eps), ("cast_before_weight", True)),
             (("x", ("T", h), dtype), ("weight", (h,), dtype))),
        Call("FusedAddRMSNormFwdOp", (("normalized_shape", (h,)), ("eps", eps), ("cast_before_weight", True)),
             (("x", ("T", h), dtype), ("residual", ("T", h), dtype), ("weight", (h,), dtype))),
    ]
    if act in _GATED:
        calls.append(Call(_GATED[act], (("cast_before_mul", True),),
                          (("x", ("T", 2 * cfg["intermediate_size"]), dtype),)))
    rope_type = (cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}).get("rope_type", "default")
    if rope_type not in ("dynamic", "longrope") and not cfg.get("partial_rotary_factor"):
        calls.append(Call("RopeFwdOp", (("head_size", head_dim), ("rotary_dim", head_dim), ("is_neox", True),
                                        ("cast_cos_sin", True)),
                          (("q", ("T", heads, head_dim), dtype), ("k", ("T", kv, head_dim), dtype),
                           ("positions", ("T",), torch.int64), ("cos_sin_cache", (max_pos, head_dim), torch.float32))))
        # the float32 cos/sin table itself, as tileops.nn.RotaryEmbedding computes it on the
        # device (its CUDA build depends on no size: one kernel whatever the scaling)
        calls.append(Call("RopeCosSinCacheFwdOp", (("base", float(cfg.get("rope_theta", 10000.0))),
                                                   ("rotary_dim", head_dim), ("max_position", max_pos)), ()))
    return calls


def _tensors(call: Call, tokens: int, device):
    out = []
    for name, shape, dt in call.tensors:
        shape = tuple(tokens if d == "T" else d for d in shape)
        if dt == torch.int64:
            out.append(torch.zeros(shape, dtype=dt, device=device))
        else:
            out.append(torch.randn(shape, device=device).to(dt))
    return out


def run_call(call: Call, tokens: int, device) -> None:
    """Runs one call at `tokens` tokens through the instance tileops.nn interns for its
    params (the one a patched model calls)."""
    from .nn import instance
    from .ops import load
    op = instance(load(call.op), **dict(call.params))
    if call.tensors:
        op(*_tensors(call, tokens, device))
    else:                       # no call-time tensor (a table): made on the device
        op(device=device)


def _bar(done: int, total: int, label: str, stream) -> None:
    width = 30
    filled = width * done // max(total, 1)
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:70]:<70}")
    stream.flush()


def warmup(config_path: str, dtype_name: str | None, max_batch: int, device: str, stream=sys.stderr) -> int:
    """The command: returns the exit status."""
    try:
        cfg = read_config(config_path)
    except InputValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    where = "--dtype"
    if dtype_name is None:
        field = "torch_dtype" if cfg.get("torch_dtype") else "dtype"
        dtype_name = cfg.get(field) or "bfloat16"
        if cfg.get(field):   # the config's: name its field, not a flag that was not given
            where = f"--config {config_path!r}: field {field!r}"
    if dtype_name not in DTYPES:
        print(f"tileops warmup: {where}: expected one of {', '.join(DTYPES)}, got {dtype_name!r}"
              + ("" if where == "--dtype" else " (--dtype overrides it)"), file=sys.stderr)
        return 2
    if max_batch < 1:
        print(f"tileops warmup: --max-batch {max_batch}: expected >= 1", file=sys.stderr)
        return 2
    calls = plan(cfg, DTYPES[dtype_name])
    if device == "cpu":
        print("tileops warmup: nothing to compile for the CPU (its C kernels are built with the package); "
              f"a patched model of this config runs {len(calls)} ops there", file=stream)
        return 0
    if not torch.cuda.is_available():
        print("tileops warmup: no CUDA device here (torch.cuda.is_available() is False): CUDA kernels are compiled "
              "and loaded for the card in hand, so warm-up runs on the serving machine", file=sys.stderr)
        return 2
    from . import _C, runtime
    dev = torch.device(device)
    runtime.ensure_loaded()
    before = runtime.stats()
    steps = [(c, t) for c in calls for t in (sorted({1, max_batch}) if c.tensors else (1,))]
    for i, (call, tokens) in enumerate(steps):
        _bar(i, len(steps), f"{call.label()} x {tokens}", stream)
        run_call(call, tokens, dev)
    torch.cuda.synchronize(dev)
    _bar(len(steps), len(steps), "done", stream)
    stream.write("\n")
    after = runtime.stats()
    on, folder, reason = _C.cuda_cache_state()
    compiled = after["nvrtc_compiles"] - before["nvrtc_compiles"]
    found = after["disk_hits"] - before["disk_hits"]
    print(f"tileops warmup: {len(calls)} ops at 1 and {max_batch} tokens ({dtype_name}, {dev}): {compiled} kernels "
          f"compiled, {found} already in the disk cache; cache folder {folder or '(none)'}"
          + ("" if on else f" -- OFF ({reason}): nothing was kept for another process"), file=stream)
    return 0 if on else 1


def add_arguments(p) -> None:
    p.add_argument("--config", required=True, help="a Hugging Face config.json (Llama, Qwen2, Mistral-like)")
    p.add_argument("--dtype", default=None, choices=sorted(DTYPES),
                   help="the model's dtype (default: the config's torch_dtype, else bfloat16)")
    p.add_argument("--max-batch", type=int, default=256, help="the most tokens one call carries (default 256)")
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu")
