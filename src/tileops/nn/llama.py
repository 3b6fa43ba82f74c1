"""A Llama-style decoder layer built from tileops ops and torch matmuls, and the same layer
tensor-parallel over the ranks of a process group.

    input norm        RMSNormFwdOp (first layer) or FusedAddRMSNormFwdOp (the previous
                      layer's MLP output added to the residual stream, then normalised)
    qkv projection    one torch matmul (q, k and v weights stacked: [q; k; v] rows)
    rotary embedding  RopeFwdOp (q and k, out of place: new contiguous q and k)
    attention         PagedAttention: KVCacheWriteFwdOp, then PagedDecodeAttentionFwdOp
                      (decode) or torch's scaled_dot_product_attention (prefill: tileops
                      has no prefill attention op yet; tileops.nn.attention)
    o projection      torch matmul (+ all-reduce over the group when tensor-parallel)
    post norm         FusedAddRMSNormFwdOp (attention output + residual, normalised)
    gate/up           one torch matmul ([gate; up] rows)
    activation        SiluAndMulFwdOp
    down projection   torch matmul (+ all-reduce when tensor-parallel)

forward(hidden_states, residual, positions, kv_cache, slot_mapping, block_table=None,
seq_lens=None) -> (hidden_states, residual), vLLM's convention: the layer returns its MLP
output and the residual stream apart, and the next layer's input norm adds them (fused); the
layer's output in Hugging Face's sense is their sum. residual None: the first layer (the
input is the residual stream itself).

A composite, as the seed has it: the layer has no compile boundary of its own, dynamo
traces its forward, and each tileops call in it is one node of the graph: a decode step
has six (fused_add_rms_norm, or rms_norm without a residual; rope; kv_cache_write;
paged_decode_attention; fused_add_rms_norm; silu_and_mul), a prefill five (torch's SDPA in
place of the decode attention), beside torch's matmuls (and, tensor-parallel, two
all-reduces). Every op instance is interned (tileops.nn._intern), so N equal layers
compile once region by region.

State dict: Hugging Face's LlamaDecoderLayer keys (self_attn.{q,k,v,o}_proj.weight,
mlp.{gate,up,down}_proj.weight, input_layernorm.weight, post_attention_layernorm.weight;
biases where the config has attention_bias / mlp_bias), so `load_state_dict(hf_layer.
state_dict())` works and state_dict() gives the same keys back (q/k/v and gate/up as views
of the stacked weights: torch.save takes them as they are; safetensors refuses tensors that
share storage, `.clone()` them first). Numerics: hf_numerics=True (the default) rounds as
Hugging Face's modules do (RMSNorm cast_before_weight, RoPE cast_cos_sin, SiLU-and-mul
cast_before_mul; tileops.nn.hf); False: one rounding per op from float32 (vLLM's).

Tensor parallelism (tp_size > 1, Megatron's split): q/k/v and gate/up are column-parallel
(each rank holds num_heads / tp_size query heads, num_kv_heads / tp_size KV heads and
intermediate_size / tp_size MLP channels: its rows of the stacked weights), o and down are
row-parallel (each rank holds the matching input columns), and each of the two matmul
pairs ends in one all-reduce (sum) of the row-parallel output over the group, through
torch.distributed's functional collectives (`_c10d_functional.all_reduce` and
`wait_tensor`: ops torch.compile traces as graph nodes, eager calls run as they are). A
row-parallel bias is added once, after the sum. Each rank's KV cache holds its own KV
heads. state_dict() gives the rank's shards under Hugging Face's names;
load_state_dict takes either the full Hugging Face tensors (each rank slices its shard)
or a rank's own shards.

What a larger deployment would need from tileops (not built here):
  * vLLM (TP x PP): vLLM owns the weights, the KV cache allocation, the scheduler's
    slot_mapping / block tables and the collectives (its custom all-reduce, NCCL
    symmetric memory); what it needs from tileops is ops in its CustomOp form: its
    RMSNorm / fused add (in place), rotary_embedding (in place on the qkv views),
    reshape_and_cache_flash and an attention backend that takes its metadata (varlen
    prefill over the cache with query_start_loc, prefix caching, chunked prefill, cascade
    attention, FP8 KV cache with scales) and is CUDA-graph safe at every captured batch
    size. tileops has the decode kernel and the cache write; the varlen/chunked prefill
    attention and FP8 caches are missing. Pipeline parallelism needs nothing of the ops
    (a stage is a range of layers; the residual stream crosses ranks as two tensors,
    which the (hidden, residual) convention already gives).
  * DTensor / torch's tensor parallel API (parallelize_module with ColwiseParallel /
    RowwiseParallel on the Linear modules): the matmuls are torch's, so DTensor shards
    them; the tileops ops in between would receive DTensors. A custom op receiving a
    DTensor needs a sharding strategy registered for it (torch.distributed.tensor's
    register_sharding / op strategies): the norms replicate over the hidden dimension
    (Replicate in, Replicate out), RoPE, the cache write, the decode attention and
    SiLU-and-mul are shard-local along the head (or intermediate) dimension
    (Shard(-2)/Shard(-1) in, the same out). tileops could register those strategies
    from the manifest (an input's "head" or "channel" dimension would need naming
    there); until then this module holds local tensors and calls the collectives itself.
  * Sequence parallelism (norms on a sequence shard, reduce-scatter + all-gather instead
    of all-reduce) needs the norms to accept a token shard (they do: rows are
    independent) and a fused reduce-scatter + residual add + norm to pay off; tileops has
    no communication kernels and no fused all-reduce + norm (vLLM's and FlashInfer's
    all-reduce fusions), which is where a TP layer's remaining time goes at decode."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import functional as TF
from ..errors import InputValueError
from .activation import SiluAndMul
from .attention import PagedAttention
from .norm import FusedAddRMSNorm
from .positional import RotaryEmbedding

_MISSING = object()


def _get(config, name, default=_MISSING):
    """config.name (an object's attribute or a mapping's key); default when absent or None."""
    v = config.get(name) if isinstance(config, dict) else getattr(config, name, None)
    if v is None:
        if default is _MISSING:
            raise InputValueError(f"LlamaDecoderLayer: the config has no '{name}'")
        return default
    return v


def _rope_args(config):
    """(base, rope_scaling) from Hugging Face 5's rope_parameters or 4's rope_theta / rope_scaling."""
    params = _get(config, "rope_parameters", None)
    if params:
        params = dict(params)
        base = float(params.get("rope_theta", _get(config, "rope_theta", 10000.0)))
        kind = params.get("rope_type", params.get("type", "default"))
        return base, (None if kind == "default" else params)
    return float(_get(config, "rope_theta", 10000.0)), _get(config, "rope_scaling", None)


def all_reduce(x, group):
    """The sum of x over the group's ranks: torch.distributed's functional all-reduce and
    its wait (graph nodes under torch.compile; plain calls eagerly)."""
    y = torch.ops._c10d_functional.all_reduce(x, "sum", group.group_name)
    return torch.ops._c10d_functional.wait_tensor(y)


class _Parallel:
    """The tensor-parallel split a layer was built for."""

    def __init__(self, tp_rank, tp_size, group):
        self.rank, self.size, self.group = int(tp_rank), int(tp_size), group
        if not 0 <= self.rank < self.size:
            raise InputValueError(f"LlamaDecoderLayer: tp_rank {tp_rank} outside [0, tp_size = {tp_size})")

    def local(self, n, what):
        if n % self.size:
            raise InputValueError(f"LlamaDecoderLayer: {what} ({n}) is not a multiple of tp_size ({self.size})")
        return n // self.size

    def reduce(self, y):
        return y if self.size == 1 else all_reduce(y, self.group)


class LlamaAttention(torch.nn.Module):
    """The attention block of the layer: qkv matmul, RoPE, PagedAttention, o matmul (and its
    all-reduce). Weights: qkv_proj (stacked [q; k; v] rows of this rank's heads), o_proj
    (this rank's input columns); no persistent state of its own beyond them."""

    def __init__(self, hidden, heads, kv_heads, head_dim, bias, rope, block_size, scale, parallel, *, hf_numerics,
                 device, dtype, target):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = heads, kv_heads, head_dim
        self._tp = parallel
        self.qkv_proj = torch.nn.Linear(hidden, (heads + 2 * kv_heads) * head_dim, bias=bias, device=device,
                                        dtype=dtype)
        self.o_proj = torch.nn.Linear(heads * head_dim, hidden, bias=bias, device=device, dtype=dtype)
        base, scaling, max_position = rope
        # on the weights' device (a `with torch.device(...)` context included, which the
        # Linear modules follow and the cache's op, taking a device argument, would not)
        self.rotary_emb = RotaryEmbedding(head_dim, max_position=max_position, base=base, rope_scaling=scaling,
                                          cast_cos_sin=hf_numerics, device=self.qkv_proj.weight.device,
                                          target=target)
        self.attn = PagedAttention(heads, head_dim, kv_heads, block_size=block_size, scale=scale, target=target)

    def forward(self, x, positions, kv_cache, slot_mapping, block_table, seq_lens):
        b, s = x.shape[0], x.shape[1]
        if s > 1 and positions.device.type == "cpu" and not torch.compiler.is_compiling():
            # a prefill attends to its own tokens only: one that continues a sequence (a
            # chunked prefill) would silently miss the cached ones. Checked where it costs
            # no sync (CPU positions, eager); on a GPU it is the caller's to keep.
            first = positions.reshape(b, s)[:, 0]
            if bool((first != 0).any()):
                raise InputValueError(f"LlamaDecoderLayer: argument 'positions': a prefill (S = {s} > 1) takes "
                                      f"whole sequences, positions 0 .. S - 1; got first positions "
                                      f"{first.tolist()[:8]} (a chunked prefill is not served)")
        d, h, hk = self.head_dim, self.num_heads, self.num_kv_heads
        q, k, v = self.qkv_proj(x).split((h * d, hk * d, hk * d), dim=-1)
        q, k = self.rotary_emb(positions.reshape(-1), q.reshape(b * s, h, d), k.reshape(b * s, hk, d))
        o = self.attn(q.view(b, s, h, d), k.view(b, s, hk, d), v, kv_cache, slot_mapping, block_table, seq_lens)
        return _row_parallel(self.o_proj, o.view(b, s, h * d), self._tp)


class LlamaMLP(torch.nn.Module):
    """The gated MLP: gate_up matmul (stacked [gate; up] rows of this rank's channels),
    SiLU-and-mul, down matmul (this rank's input columns) and its all-reduce."""

    def __init__(self, hidden, intermediate, bias, parallel, *, hf_numerics, device, dtype, target):
        super().__init__()
        self._tp = parallel
        self.gate_up_proj = torch.nn.Linear(hidden, 2 * intermediate, bias=bias, device=device, dtype=dtype)
        self.down_proj = torch.nn.Linear(intermediate, hidden, bias=bias, device=device, dtype=dtype)
        self.act_fn = SiluAndMul(cast_before_mul=hf_numerics, target=target)

    def forward(self, x):
        return _row_parallel(self.down_proj, self.act_fn(self.gate_up_proj(x)), self._tp)


def _row_parallel(linear, x, tp):
    if tp.size == 1:
        return linear(x)
    y = tp.reduce(F.linear(x, linear.weight))
    return y if linear.bias is None else y + linear.bias


class LlamaDecoderLayer(torch.nn.Module):
    """A Llama decoder layer of tileops ops and torch matmuls (module docstring).

    Parameters: config (a transformers LlamaConfig, or any object or dict with its fields:
    hidden_size, intermediate_size, num_attention_heads, num_key_value_heads, head_dim,
    rms_norm_eps, max_position_embeddings, rope_parameters or rope_theta / rope_scaling
    (default, linear, llama3), attention_bias, mlp_bias, hidden_act "silu"), block_size
    (the KV cache's tokens per block), hf_numerics, tp_rank / tp_size / tp_group (tensor
    parallelism; group None: the default group), device, dtype, target.

    forward(hidden_states, residual, positions, kv_cache, slot_mapping, block_table=None,
    seq_lens=None) -> (hidden_states, residual):
      hidden_states [B, S, hidden_size] (residual the same, or None for the first layer);
      positions int32/int64 [B, S] (each token's position: < max_position_embeddings);
      kv_cache (key_cache, value_cache) of this layer ([num_blocks, block_size,
      num_key_value_heads / tp_size, head_dim], new_kv_cache() makes them), written at
      slot_mapping [B, S]; S == 1 is a decode step (block_table int32 [B, max_blocks],
      seq_lens int32 [B], the new token included), S > 1 a prefill of whole prompts
      (positions 0 .. S - 1, checked for CPU positions outside torch.compile; block_table
      and seq_lens refused: a chunked prefill is not served). Nothing the caller passes is
      written but the caches."""

    def __init__(self, config, *, block_size=16, hf_numerics=True, tp_rank=0, tp_size=1, tp_group=None, device=None,
                 dtype=None, target=None):
        super().__init__()
        if _get(config, "hidden_act", "silu") != "silu":
            raise InputValueError(f"LlamaDecoderLayer: hidden_act {_get(config, 'hidden_act')!r}: only 'silu' "
                                  f"(SiLU-and-mul) is built")
        if tp_size > 1 and tp_group is None:
            import torch.distributed as dist
            tp_group = dist.group.WORLD
        tp = _Parallel(tp_rank, tp_size, tp_group)
        self._tp = tp
        self.hidden_size = int(_get(config, "hidden_size"))
        heads = int(_get(config, "num_attention_heads"))
        kv_heads = int(_get(config, "num_key_value_heads", heads))
        self.head_dim = int(_get(config, "head_dim", self.hidden_size // heads))
        self.intermediate_size = int(_get(config, "intermediate_size"))
        self.num_heads = tp.local(heads, "num_attention_heads")
        self.num_kv_heads = tp.local(kv_heads, "num_key_value_heads")
        intermediate = tp.local(self.intermediate_size, "intermediate_size")
        eps = float(_get(config, "rms_norm_eps", 1e-6))
        base, scaling = _rope_args(config)
        rope = (base, scaling, int(_get(config, "max_position_embeddings", 8192)))
        self.hf_numerics = bool(hf_numerics)
        self.target = target
        kw = dict(hf_numerics=self.hf_numerics, device=device, dtype=dtype, target=target)
        self.self_attn = LlamaAttention(self.hidden_size, self.num_heads, self.num_kv_heads, self.head_dim,
                                        bool(_get(config, "attention_bias", False)), rope, block_size,
                                        self.head_dim ** -0.5, tp, **kw)
        self.mlp = LlamaMLP(self.hidden_size, intermediate, bool(_get(config, "mlp_bias", False)), tp, **kw)
        norm = dict(eps=eps, cast_before_weight=self.hf_numerics, device=device, dtype=dtype, target=target)
        self.input_layernorm = FusedAddRMSNorm(self.hidden_size, **norm)
        self.post_attention_layernorm = FusedAddRMSNorm(self.hidden_size, **norm)
        self.register_state_dict_post_hook(_split_state_dict)
        self.register_load_state_dict_pre_hook(_stack_state_dict)

    @property
    def tp_rank(self):
        return self._tp.rank

    @property
    def tp_size(self):
        return self._tp.size

    @classmethod
    def from_hf(cls, hf_layer, *, rotary_emb=None, **kw):
        """The layer with a transformers LlamaDecoderLayer's weights (its config, device and
        dtype; keywords as the constructor's). rotary_emb: the model's LlamaRotaryEmbedding,
        whose own cos/sin values are then used (otherwise computed from the config, in
        float64 angles rounded once: Hugging Face's float32 angles differ from them by more
        than a float32 unit at large positions, ~1e-4 at 8K)."""
        attn = hf_layer.self_attn
        w = attn.q_proj.weight
        kw.setdefault("device", w.device)
        kw.setdefault("dtype", w.dtype)
        layer = cls(attn.config, **kw)
        layer.load_state_dict(hf_layer.state_dict())
        if rotary_emb is not None:
            from .hf import cos_sin_cache_of
            cache = cos_sin_cache_of(rotary_emb, layer.self_attn.rotary_emb.max_position, layer.head_dim)
            layer.self_attn.rotary_emb.cos_sin_cache = cache.to(layer.self_attn.rotary_emb.cos_sin_cache.device)
        return layer

    def new_kv_cache(self, num_blocks, *, device=None, dtype=None):
        """(key_cache, value_cache) for this layer: zeros [num_blocks, block_size,
        this rank's KV heads, head_dim], on the layer's device and dtype by default."""
        w = self.self_attn.qkv_proj.weight
        return self.self_attn.attn.new_kv_cache(num_blocks, device=w.device if device is None else device,
                                                dtype=w.dtype if dtype is None else dtype)

    def forward(self, hidden_states, residual, positions, kv_cache, slot_mapping, block_table=None, seq_lens=None):
        if hidden_states.dim() != 3 or hidden_states.shape[-1] != self.hidden_size:
            raise InputValueError(f"LlamaDecoderLayer: argument 'hidden_states': expected [B, S, "
                                  f"{self.hidden_size}], got {list(hidden_states.shape)}")
        norm = self.input_layernorm
        if residual is None:
            residual = hidden_states
            x = TF.rms_norm(hidden_states, norm.weight, norm.eps, cast_before_weight=norm.cast_before_weight,
                            target=norm.target)
        else:
            x, residual = norm(hidden_states, residual)
        x = self.self_attn(x, positions, kv_cache, slot_mapping, block_table, seq_lens)
        x, residual = self.post_attention_layernorm(x, residual)
        return self.mlp(x), residual

    def extra_repr(self):
        return (f"hidden_size={self.hidden_size}, heads={self.num_heads}, kv_heads={self.num_kv_heads}, "
                f"head_dim={self.head_dim}, intermediate_size={self.intermediate_size}, hf_numerics={self.hf_numerics}"
                + (f", tp_rank={self.tp_rank}, tp_size={self.tp_size}" if self.tp_size > 1 else ""))


class TensorParallelLlamaDecoderLayer(LlamaDecoderLayer):
    """LlamaDecoderLayer over the ranks of a process group (group None: the default one;
    this process's rank and the group's size from it). Arguments as LlamaDecoderLayer's
    without tp_rank / tp_size; `from_hf(hf_layer, group=...)` takes this rank's shards of
    a full Hugging Face layer."""

    def __init__(self, config, group=None, **kw):
        import torch.distributed as dist
        group = dist.group.WORLD if group is None else group
        super().__init__(config, tp_rank=dist.get_rank(group), tp_size=dist.get_world_size(group), tp_group=group,
                         **kw)


# ---- Hugging Face's state_dict keys over the stacked weights -------------------------------
# (key of the stacked Linear, the Hugging Face keys stacked in it)
_STACKED = (("self_attn.qkv_proj", ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")),
            ("mlp.gate_up_proj", ("mlp.gate_proj", "mlp.up_proj")))
_ROW_PARALLEL = ("self_attn.o_proj", "mlp.down_proj")


def _parts(layer):
    """The row counts of each stacked weight's parts, on this rank."""
    d = layer.head_dim
    i = layer.mlp.down_proj.weight.shape[1]
    return {"self_attn.qkv_proj": (layer.num_heads * d, layer.num_kv_heads * d, layer.num_kv_heads * d),
            "mlp.gate_up_proj": (i, i)}


def _split_state_dict(layer, state_dict, prefix, local_metadata):
    parts = _parts(layer)
    items = [(k, state_dict.pop(k)) for k in [k for k in state_dict if k.startswith(prefix)]]
    stacked = {prefix + f"{name}.{what}": (name, hf, what) for name, hf in _STACKED for what in ("weight", "bias")}
    for key, value in items:
        if key not in stacked:
            state_dict[key] = value
            continue
        name, hf, what = stacked[key]
        for part, piece in zip(hf, value.split(parts[name], dim=0)):
            state_dict[prefix + f"{part}.{what}"] = piece


def _stack_state_dict(layer, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
    parts = _parts(layer)
    tp = layer._tp
    for name, hf in _STACKED:
        for what in ("weight", "bias"):
            keys = [prefix + f"{part}.{what}" for part in hf]
            if not all(k in state_dict for k in keys):
                continue            # absent (or some absent: strict loading reports them)
            pieces = []
            for k, rows in zip(keys, parts[name]):
                t = state_dict.pop(k)
                if tp.size > 1 and t.shape[0] == rows * tp.size:      # the full tensor: this rank's rows
                    t = t.narrow(0, rows * tp.rank, rows)
                pieces.append(t)
            state_dict[prefix + f"{name}.{what}"] = torch.cat(pieces, dim=0)
    if tp.size > 1:
        for name in _ROW_PARALLEL:
            k = prefix + f"{name}.weight"
            cols = layer.get_submodule(name).weight.shape[1]
            t = state_dict.get(k)
            if t is not None and t.dim() == 2 and t.shape[1] == cols * tp.size:
                state_dict[k] = t.narrow(1, cols * tp.rank, cols)
