"""Hugging Face patching: `patch(model)` swaps a `transformers` Llama or Qwen2 model's norms,
gated MLP activation, rotary application and post-attention residual add for tileops, in
place; `unpatch(model)` undoes it. `transformers` is an optional dependency: this module
imports nothing of it (it reads the model's own modules).

What is swapped, per decoder layer (the checkpoint format is unchanged: every state_dict
key and tensor stays where it was, the swapped modules share the original Parameters):

  norms      each LlamaRMSNorm / Qwen2RMSNorm (input, post-attention, final) becomes a
             tileops.nn.RMSNorm(cast_before_weight=True) holding the same `weight`: Hugging
             Face's arithmetic (float32 scale, normalised value cast to the input dtype
             before the weight multiply), not F.rms_norm's.
  residual   the post-attention `residual + attn_out` and the norm after it become one
             FusedAddRMSNorm call (the decoder layer's class is swapped for a subclass whose
             forward makes that call; the module stays `post_attention_layernorm`). The
             MLP's residual add is left to torch: fusing it with the next layer's input norm
             crosses the layer boundary (the model's forward), which the patch leaves alone.
  MLP        `down_proj(act_fn(gate_proj(x)) * up_proj(x))` becomes
             `down_proj(silu_and_mul(cat(gate_proj(x), up_proj(x))))` (the MLP's class is
             swapped). gate_proj and up_proj stay two Linear modules, so the checkpoint
             loads as it is; the price is one concatenation (a copy of 2 x intermediate
             per token) instead of a fused gate_up matmul. cast_before_mul=True: the
             activation rounded to the dtype before the product, as torch eager computes
             it. silu (Llama, Qwen2), gelu and gelu-tanh MLPs are swapped; others stay.
  RoPE       Hugging Face computes cos/sin per call (the model's rotary_emb) and rotates q
             and k with apply_rotary_pos_emb inside the attention's forward. The patch
             computes the model's own cos/sin once, for positions 0 .. max_position_embeddings
             - 1 (the same module, so the same float32 values), into a cos/sin cache, and
             swaps the attention's class for a subclass whose forward rotates q and k in
             place with RopeFwdOp (positions from the layer's position_ids) before the
             transposes, and is otherwise Hugging Face's forward (projections, KV cache
             update, the configured attention function, o_proj). Rope types whose
             frequencies change with the sequence (dynamic, longrope) are left to Hugging
             Face; a call without position_ids falls back to Hugging Face's rotation. A
             position at or past max_position_embeddings is outside the cache: an error on
             the CPU, a NaN row on a GPU. The attention kernel itself stays Hugging
             Face's: its cache is contiguous, tileops' attention reads a paged one
             (PagedAttention, attention.py; the decoder layer of llama.py holds both).

Numerics: in float16 and bfloat16 the swapped modules compute what Hugging Face's compute,
in the same roundings (cast_before_weight, cast_before_mul, cast_cos_sin: the rotation in
the dtype with cos/sin cast to it, each product rounded, as `q * cos + rotate_half(q) * sin`
is), bit for bit up to the order of the float32 row sum (norm) and the float32 exp (SiLU),
which can move a rare element by one unit in the last place: tests/nn/test_hf_patch.py
compares every swapped module's output and the logits bit for bit, and greedy tokens.

A patched model is a model of subclasses made here: unpatch it before pickling the whole
module (state_dict is unaffected)."""
from __future__ import annotations

import sys

import torch

from .. import functional as TF
from .norm import FusedAddRMSNorm, RMSNorm
from .positional import RotaryEmbedding

_STATE = "_tileops_patch"           # on the model: what unpatch undoes
_SUPPORTED = ("llama", "qwen2")
_NORM_CLASSES = ("LlamaRMSNorm", "Qwen2RMSNorm")
_ATTENTION_CLASSES = ("LlamaAttention", "Qwen2Attention")
_MLP_CLASSES = ("LlamaMLP", "Qwen2MLP")
_LAYER_CLASSES = ("LlamaDecoderLayer", "Qwen2DecoderLayer")
_STATIC_ROPE = ("default", "linear", "llama3", "yarn")


def patch(model, *, norms=True, residual=True, mlp=True, rope=True, target=None):
    """Swaps tileops into a transformers Llama or Qwen2 model, in place (module docstring);
    returns the model. Each keyword turns one kind of swap off; target picks who serves the
    ops (None: by device). Patching a patched model raises; unpatch(model) undoes it."""
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in _SUPPORTED:
        from ..errors import InputValueError
        raise InputValueError(f"tileops.patch: expected a transformers model of type {' or '.join(_SUPPORTED)} "
                              f"(model.config.model_type), got {kind!r}")
    if getattr(model, _STATE, None) is not None:
        from ..errors import InputValueError
        raise InputValueError("tileops.patch: this model is patched already (tileops.unpatch(model) undoes it)")
    undo = {"modules": [], "classes": [], "attrs": []}
    object.__setattr__(model, _STATE, undo)
    rope_module = _rope_module(model, target) if rope else None
    for name, module in list(model.named_modules()):
        cls = type(module).__name__
        if residual and cls in _LAYER_CLASSES and type(module.post_attention_layernorm).__name__ in _NORM_CLASSES:
            old = module.post_attention_layernorm
            _replace(undo, module, "post_attention_layernorm", _fused_from(old, target))
            _swap_class(undo, module, _layer_forward)
        if mlp and cls in _MLP_CLASSES:
            act = _gated_for(module.act_fn)
            if act is not None:
                _swap_class(undo, module, _mlp_forward)
                _set(undo, module, "_tileops_act", act)
        if rope_module is not None and cls in _ATTENTION_CLASSES:
            _swap_class(undo, module, _attention_forward)
            _set(undo, module, "_tileops_rope", rope_module)
    if norms:
        for name, module in list(model.named_modules()):
            for child_name, child in list(module.named_children()):
                if type(child).__name__ in _NORM_CLASSES:
                    _replace(undo, module, child_name, _norm_from(child, target))
    return model


def patch_llama(model, **kw):
    """patch() for a transformers Llama model (LlamaForCausalLM, LlamaModel)."""
    return _patch_kind(model, "llama", kw)


def patch_qwen2(model, **kw):
    """patch() for a transformers Qwen2 model (Qwen2ForCausalLM, Qwen2Model)."""
    return _patch_kind(model, "qwen2", kw)


def _patch_kind(model, kind, kw):
    got = getattr(getattr(model, "config", None), "model_type", None)
    if got != kind:
        from ..errors import InputValueError
        raise InputValueError(f"tileops.patch_{kind}: expected a {kind} model, got model_type {got!r}")
    return patch(model, **kw)


def unpatch(model):
    """Undoes patch(model): the original modules (holding the current Parameters), classes
    and attributes come back. Returns the model."""
    undo = getattr(model, _STATE, None)
    if undo is None:
        from ..errors import InputValueError
        raise InputValueError("tileops.unpatch: this model is not patched")
    for module, name in reversed(undo["attrs"]):
        module.__dict__.pop(name, None)
        module._modules.pop(name, None)
    for module, original in reversed(undo["classes"]):
        module.__class__ = original
    for parent, name, original in reversed(undo["modules"]):
        current = getattr(parent, name)
        for pname, p in current.named_parameters(recurse=False):
            setattr(original, pname, p)           # the Parameter as it is now (moved, loaded)
        setattr(parent, name, original)
    object.__delattr__(model, _STATE)
    return model


def is_patched(model) -> bool:
    return getattr(model, _STATE, None) is not None


# ---- the swaps --------------------------------------------------------------------------

def _replace(undo, parent, name, new):
    undo["modules"].append((parent, name, getattr(parent, name)))
    setattr(parent, name, new)


def _set(undo, module, name, value):
    undo["attrs"].append((module, name))
    if isinstance(value, torch.nn.Module):
        module.add_module(name, value)
    else:
        object.__setattr__(module, name, value)


_CLASSES: dict = {}


def _swap_class(undo, module, forward):
    original = type(module)
    key = (original, forward)
    cls = _CLASSES.get(key)
    if cls is None:
        cls = _CLASSES[key] = type(f"TileOps{original.__name__}", (original,),
                                   {"forward": forward, "__module__": __name__, "_tileops_original": original})
    undo["classes"].append((module, original))
    module.__class__ = cls


def _norm_from(hf, target):
    m = RMSNorm(tuple(hf.weight.shape), eps=float(hf.variance_epsilon), cast_before_weight=True, target=target,
                device="meta")
    m.weight = hf.weight
    return m


def _fused_from(hf, target):
    m = FusedAddRMSNorm(tuple(hf.weight.shape), eps=float(hf.variance_epsilon), cast_before_weight=True,
                        target=target, device="meta")
    m.weight = hf.weight
    return m


def _gated_for(act_fn):
    """The functional gated op equal to `act_fn(a) * b`, or None for another activation."""
    import functools
    name = type(act_fn).__name__
    if isinstance(act_fn, torch.nn.SiLU) or name == "SiLUActivation":
        return functools.partial(TF.silu_and_mul, cast_before_mul=True)
    inner = getattr(act_fn, "act", None)
    if name == "GELUActivation" and inner is torch.nn.functional.gelu:
        return functools.partial(TF.gelu_and_mul, cast_before_mul=True)
    if (name == "GELUTanh" and isinstance(inner, functools.partial) and inner.func is torch.nn.functional.gelu
            and inner.keywords == {"approximate": "tanh"}):
        return functools.partial(TF.gelu_tanh_and_mul, cast_before_mul=True)
    return None


def _rope_module(model, target):
    """A RotaryEmbedding over the model's own cos/sin for positions 0 .. max - 1, or None
    where the model's rope changes with the sequence (left to Hugging Face)."""
    rotary = next((m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")
                   and hasattr(m, "inv_freq")), None)
    if rotary is None or getattr(rotary, "rope_type", "default") not in _STATIC_ROPE:
        return None
    config = model.config
    head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if rotary.inv_freq.numel() * 2 != head:
        return None                                   # partial rotary: not Llama's or Qwen2's layout
    cache = cos_sin_cache_of(rotary, config.max_position_embeddings, head)
    rope = RotaryEmbedding.from_cos_sin_cache(cache, head, is_neox=True, cast_cos_sin=True, target=target)
    # the source of the cache, not a submodule: a model moved to another dtype after the
    # patch has Hugging Face's inv_freq cast, and so its cos/sin changed (_follow_rotary)
    object.__setattr__(rope, "_tileops_rotary", rotary)
    object.__setattr__(rope, "_tileops_inv_freq", (rotary.inv_freq.dtype, rotary.inv_freq.device))
    return rope


def _follow_rotary(rope):
    """The patched rotation's cache computed again where Hugging Face's inv_freq has moved to
    another dtype or device since (model.to(torch.bfloat16) after tileops.patch casts it,
    and Hugging Face's cos/sin with it): the patched model keeps giving Hugging Face's bits
    whichever order the patch and the cast came in."""
    rotary = rope._tileops_rotary
    now = (rotary.inv_freq.dtype, rotary.inv_freq.device)
    if now != rope._tileops_inv_freq:
        rope.cos_sin_cache = cos_sin_cache_of(rotary, rope.cos_sin_cache.shape[0], rope.head_size)
        object.__setattr__(rope, "_tileops_inv_freq", now)


def cos_sin_cache_of(rotary, max_position, head):
    """A Hugging Face rotary module's own cos/sin for positions 0 .. max_position - 1, as a
    float32 cos/sin cache [max_position, head] (RopeFwdOp's layout)."""
    positions = torch.arange(max_position, device=rotary.inv_freq.device)[None]
    probe = torch.zeros(1, dtype=torch.float32, device=rotary.inv_freq.device)
    with torch.no_grad():
        cos, sin = rotary(probe, position_ids=positions)
    half = head // 2
    # Hugging Face's cos/sin repeat their halves (emb = cat(freqs, freqs)): keep one
    return torch.cat((cos[0, :, :half], sin[0, :, :half]), dim=-1).float().contiguous()


# ---- the forwards of the swapped classes --------------------------------------------------
# Each is Hugging Face's forward of that class (transformers 5.x) with the one swap.

def _layer_forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_values=None,
                   use_cache=False, position_embeddings=None, **kwargs):
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    hidden_states, _ = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask,
                                      position_ids=position_ids, past_key_values=past_key_values, use_cache=use_cache,
                                      position_embeddings=position_embeddings, **kwargs)
    # residual + attention output, rounded, and the post-attention norm of it: one call
    hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
    hidden_states = self.mlp(hidden_states)
    return residual + hidden_states


def _mlp_forward(self, x):
    return self.down_proj(self._tileops_act(torch.cat((self.gate_proj(x), self.up_proj(x)), dim=-1)))


def _attention_forward(self, hidden_states, position_embeddings=None, attention_mask=None, past_key_values=None,
                       **kwargs):
    hf = sys.modules[self._tileops_original.__module__]
    input_shape = hidden_states.shape[:-1]
    hidden_shape = (*input_shape, -1, self.head_dim)
    query = self.q_proj(hidden_states).view(hidden_shape)
    key = self.k_proj(hidden_states).view(hidden_shape)
    value = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    position_ids = kwargs.get("position_ids")
    if position_ids is not None and query.dim() == 4:
        # [B, S, H, D] as [B * S, H, D] (fresh matmul outputs, contiguous): rotated in place
        # (out of place where autograd records: it cannot take an in-place write of a view
        # from a node returning two tensors)
        b, s = query.shape[0], query.shape[1]
        positions = position_ids.expand(b, s).reshape(-1)
        _follow_rotary(self._tileops_rope)
        q_out, k_out = self._tileops_rope(positions, query.view(b * s, -1, self.head_dim),
                                          key.view(b * s, -1, self.head_dim), inplace=not torch.is_grad_enabled())
        # [B, H, S, D] contiguous, as Hugging Face's rotation returns them: the attention
        # kernels' results depend on the layout (CPU SDPA: a transposed view sums otherwise)
        query = q_out.view(b, s, -1, self.head_dim).transpose(1, 2).contiguous()
        key = k_out.view(b, s, -1, self.head_dim).transpose(1, 2).contiguous()
    else:
        cos, sin = position_embeddings
        query, key = hf.apply_rotary_pos_emb(query.transpose(1, 2), key.transpose(1, 2), cos, sin)
    if past_key_values is not None:
        key, value = past_key_values.update(key, value, self.layer_idx)
    attention_interface = hf.ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation,
                                                                   hf.eager_attention_forward)
    if hasattr(self, "sliding_window"):
        kwargs["sliding_window"] = self.sliding_window      # Qwen2's (Llama has none)
    attn_output, attn_weights = attention_interface(
        self, query, key, value, attention_mask, dropout=0.0 if not self.training else self.attention_dropout,
        scaling=self.scaling, **kwargs)
    attn_output = attn_output.reshape(*input_shape, -1).contiguous()
    return self.o_proj(attn_output), attn_weights
