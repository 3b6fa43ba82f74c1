"""Embedding on this CPU: EmbeddingFwdOp (fresh output and out=) against F.embedding and
torch.index_select(out=), Llama-3-8B table bf16, T = 1 / 32 / 256 / 4096; the best of 5
rounds, microseconds per call.

    PYTHONPATH=src python dev/probes/time_embedding_cpu.py"""
import time

import torch
import torch.nn.functional as F

from tileops.embedding import EmbeddingFwdOp


def best_us(fn, n):
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def main():
    torch.manual_seed(0)
    V, H = 128256, 4096
    w = torch.randn(V, H, dtype=torch.bfloat16)
    op = EmbeddingFwdOp()
    for T in (1, 32, 256, 4096):
        ids = torch.randint(0, V, (T,))
        out = torch.empty(T, H, dtype=torch.bfloat16)
        n = 200 if T < 1000 else 10
        print(f"T={T}: op {best_us(lambda: op(ids, w), n):.1f}  op out= {best_us(lambda: op(ids, w, out=out), n):.1f}  "
              f"F.embedding {best_us(lambda: F.embedding(ids, w), n):.1f}  "
              f"index_select out= {best_us(lambda: torch.index_select(w, 0, ids, out=out), n):.1f}")


if __name__ == "__main__":
    main()
