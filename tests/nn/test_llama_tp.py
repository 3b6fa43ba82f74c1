"""tileops.nn.TensorParallelLlamaDecoderLayer over 2 CPU processes (gloo, mp.spawn, tiny
shapes): each rank loads its shards from the full layer's state_dict; a prefill and decode
steps equal the single-process layer's; torch.compile(fullgraph=True) of the rank's layer
gives the same result with one node per tileops call and the two all-reduces as
torch.distributed functional collective nodes.

The compile here uses the aot_eager backend: dynamo's trace and AOT autograd's
functionalization, where the collectives and the ops' cache writes become graph nodes, run
as captured. Inductor compiles the same graph with gloo on the CPU too (checked by hand,
about a minute on two shared cores: too slow for the suite); benchmarks/layer_tp.py
compiles it with inductor on two GPUs with NCCL."""
import os
import sys
import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from compile_contract import graph_targets

CFG = dict(hidden_size=64, intermediate_size=176, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
           max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0, attention_bias=True)
BS, WORLD = 4, 2
# float32: the row-parallel matmuls sum each half of the dot product apart and add the two
# (the all-reduce), against one sum over the whole: a reordering of float32 sums over at
# most 176 terms, ~sqrt(176) * 2^-24 ~ 1e-6 relative on outputs of magnitude ~1 (measured
# 2.4e-7 absolute)
TOL = dict(rtol=1e-5, atol=1e-5)
DECODE_NODES = ["tileops::norm_fused_add_rms_norm_fwd", "tileops::positional_rope_fwd",
                "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache",
                "tileops::attention_paged_decode_attention_fwd_without_lse", "_c10d_functional.all_reduce",
                "_c10d_functional.wait_tensor", "tileops::norm_fused_add_rms_norm_fwd",
                "tileops::activation_silu_and_mul_fwd", "_c10d_functional.all_reduce",
                "_c10d_functional.wait_tensor"]


def _names(gm):
    """The graph's tileops and collective nodes, in order."""
    return [t for t in graph_targets(gm) if t.startswith(("tileops", "_c10d_functional"))]


def _worker(rank, init_file):
    from torch._dynamo.backends.debugging import aot_eager

    import tileops.nn as tnn
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        torch.manual_seed(0)      # the same full layer on every rank
        full = tnn.LlamaDecoderLayer(CFG, block_size=BS)
        with torch.no_grad():
            for name, p in full.named_parameters():
                if "layernorm" in name:
                    p.normal_(1.0, 0.1)
                elif name.endswith("bias"):
                    p.normal_()
        tp = tnn.TensorParallelLlamaDecoderLayer(CFG, block_size=BS)
        assert (tp.tp_rank, tp.tp_size, tp.num_heads, tp.num_kv_heads) == (rank, WORLD, 2, 1)
        tp.load_state_dict(full.state_dict())               # full tensors: each rank slices its shard
        sd = tp.state_dict()
        assert list(sd) == list(full.state_dict())
        assert sd["self_attn.q_proj.weight"].shape == (32, 64) and sd["self_attn.o_proj.weight"].shape == (64, 32)
        assert torch.equal(sd["self_attn.k_proj.weight"], full.state_dict()["self_attn.k_proj.weight"][16 * rank:][:16])
        assert torch.equal(sd["mlp.down_proj.weight"], full.state_dict()["mlp.down_proj.weight"][:, 88 * rank:][:, :88])
        again = tnn.TensorParallelLlamaDecoderLayer(CFG, block_size=BS)
        again.load_state_dict(sd)                            # a rank's own shards load as they are
        assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), sd.values()))

        B, S = 3, 7
        bt = (torch.arange(B * 3).view(B, 3) * 5 % (B * 3)).to(torch.int32)   # distinct, shuffled blocks

        def slots(p):
            return bt.long().gather(1, p // BS) * BS + p % BS
        kv_full, kv_tp = full.new_kv_cache(B * 3), tp.new_kv_cache(B * 3)
        assert kv_tp[0].shape == (B * 3, BS, 1, 16)
        g = torch.Generator().manual_seed(1)
        x = torch.randn(B, S, 64, generator=g)
        pos = torch.arange(S)[None].expand(B, S)
        rec = []

        def backend(gm, example_inputs):
            rec.append(gm)
            return aot_eager(gm, example_inputs)
        compiled = torch.compile(tp, backend=backend, fullgraph=True)
        kv_c = tp.new_kv_cache(B * 3)
        with torch.no_grad():
            want = full(x, None, pos, kv_full, slots(pos))
            got = tp(x, None, pos, kv_tp, slots(pos))
            got_c = compiled(x, None, pos, kv_c, slots(pos))
            for a, b, c in zip(got, want, got_c):
                torch.testing.assert_close(a, b, **TOL)
                assert torch.equal(c, a)
            # this rank's KV heads of the full layer's cache
            torch.testing.assert_close(kv_tp[0], kv_full[0][:, :, rank:rank + 1], **TOL)
            r = torch.randn(B, 1, 64, generator=g)      # the residual stream of the next token
            for t in range(S, S + 3):
                pos = torch.full((B, 1), t)
                h1 = torch.randn(B, 1, 64, generator=g)
                seq_lens = torch.full((B,), t + 1, dtype=torch.int32)
                want = full(h1, r, pos, kv_full, slots(pos), bt, seq_lens)
                got = tp(h1, r, pos, kv_tp, slots(pos), bt, seq_lens)
                got_c = compiled(h1, r, pos, kv_c, slots(pos), bt, seq_lens)
                for a, b, c in zip(got, want, got_c):
                    torch.testing.assert_close(a, b, **TOL)
                    assert torch.equal(c, a)
                r = got[1]
        assert torch.equal(kv_c[0], kv_tp[0]) and torch.equal(kv_c[1], kv_tp[1])
        assert len(rec) == 2, f"{len(rec)} graphs: a prefill and a decode step expected"
        assert _names(rec[1]) == DECODE_NODES, _names(rec[1])
        prefill = _names(rec[0])
        assert prefill.count("_c10d_functional.all_reduce") == 2
        assert [n for n in prefill if n.startswith("tileops")] == [
            "tileops::norm_rms_norm_fwd", "tileops::positional_rope_fwd",
            "tileops::attention_kv_cache_write_fwd_writes_key_cache_writes_value_cache",
            "tileops::norm_fused_add_rms_norm_fwd", "tileops::activation_silu_and_mul_fwd"]
        # both ranks done with every collective before either tears gloo down: without it one
        # rank's destroy_process_group could race the other's last all_reduce (a gloo thread
        # aborted at teardown, seen once in session 27)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _spawned(rank, init_file):
    """_worker, then out without the interpreter's finalization (a failure propagates as
    mp.spawn reports it): a gloo rank's threads still winding down there have aborted a
    process (benchmarks/layer_tp.py's rank, twice in full make test runs)."""
    _worker(rank, init_file)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                    reason="torch.distributed with the gloo backend is not available in this torch build")
def test_two_ranks_equal_the_single_process_layer_eager_and_compiled():
    fd, init_file = tempfile.mkstemp(prefix="tileops_tp_")
    os.close(fd)
    os.unlink(init_file)           # the file store creates it
    try:
        mp.spawn(_spawned, args=(init_file,), nprocs=WORLD, join=True)
    finally:
        if os.path.exists(init_file):
            os.unlink(init_file)
