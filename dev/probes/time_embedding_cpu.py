"""Embedding on this CPU: EmbeddingFwdOp (fresh output and out=) against F.embedding and
torch.index_select(out=), Llama-3-8B table bf16, T = 1 / 32 / 256 / 4096; best of 5 rounds.

    PYTHONPATH=src python dev/probes/time_embedding_cpu.py"""
import time, torch, torch.nn.functional as F
from tileops.embedding import EmbeddingFwdOp
torch.manual_seed(0)
V, H = 128256, 4096
w = torch.randn(V, H, dtype=torch.bfloat16)
op = EmbeddingFwdOp()
def t(fn, n=200):
    fn(); best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n): fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6
for T in (1, 32, 256, 4096):
    ids = torch.randint(0, V, (T,))
    out = torch.empty(T, H, dtype=torch.bfloat16)
    n = 200 if T < 1000 else 10
    print(T, "op %.1f" % t(lambda: op(ids, w), n), "op out= %.1f" % t(lambda: op(ids, w, out=out), n),
          "F.embedding %.1f" % t(lambda: F.embedding(ids, w), n), "index_select out= %.1f" % t(lambda: torch.index_select(w, 0, ids, out=out), n))
