"""Embedding on this CPU: EmbeddingFwdOp (fresh output and out=) against F.embedding and
torch.index_select(out=), Llama-3-8B table bf16, T = 1 / 32 / 256 / 4096; microseconds per
call, tileops.bench.loop_times_us (the four interleaved, median of 7 rounds of ~0.1 s).

    PYTHONPATH=src python dev/probes/time_embedding_cpu.py"""
import torch
import torch.nn.functional as F

from tileops.bench import loop_times_us
from tileops.embedding import EmbeddingFwdOp


def main():
    torch.manual_seed(0)
    V, H = 128256, 4096
    w = torch.randn(V, H, dtype=torch.bfloat16)
    op = EmbeddingFwdOp()
    for T in (1, 32, 256, 4096):
        ids = torch.randint(0, V, (T,))
        out = torch.empty(T, H, dtype=torch.bfloat16)
        us = loop_times_us({"op": lambda: op(ids, w), "op out=": lambda: op(ids, w, out=out),
                            "F.embedding": lambda: F.embedding(ids, w),
                            "index_select out=": lambda: torch.index_select(w, 0, ids, out=out)})
        print(f"T={T}: " + "  ".join(f"{k} {v:.1f}" for k, v in us.items()))


if __name__ == "__main__":
    main()
