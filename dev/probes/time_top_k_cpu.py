"""Times TopKFwdOp and TopKTopPMaskFwdOp on the CPU against torch.topk, each op called alone
(not interleaved with torch's calls: an allocator state left by other work must not help),
best of 7 rounds, microseconds (session 16: one row of 128256, one thread; then B = 32 on
two threads).

    PYTHONPATH=src python dev/probes/time_top_k_cpu.py"""
import time

import torch

from tileops.sampling import TopKFwdOp, TopKTopPMaskFwdOp


def best_us(fn, n=50):
    fn()
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for dt in (torch.float32, torch.bfloat16):
        x = torch.randn(1, 128256, dtype=dt)
        for k in (1, 50, 1024):
            op = TopKFwdOp(k=k)
            mine = best_us(lambda: op(x))
            theirs = best_us(lambda: torch.topk(x, k, dim=-1))
            print(f"{str(dt)[6:]:9s} B=1 top-{k:<5d} tileops {mine:8.1f}  torch.topk {theirs:8.1f}")
        mask = TopKTopPMaskFwdOp()
        kk, pp = torch.tensor([50]), torch.tensor([0.9])
        print(f"{str(dt)[6:]:9s} B=1 mask k=50 p=0.9 tileops {best_us(lambda: mask(x, kk, pp), 20):8.1f}")
    torch.set_num_threads(2)
    x = torch.randn(32, 128256)
    op = TopKFwdOp(k=50)
    print(f"float32   B=32 top-50 (2 threads) tileops {best_us(lambda: op(x), 10):8.1f}  "
          f"torch.topk {best_us(lambda: torch.topk(x, 50, dim=-1), 10):8.1f}")


if __name__ == "__main__":
    main()
