"""CPU paged decode attention (B = 1, 32/8 heads, D = 128, 4K context, pages of 16) against
torch SDPA on the same K/V gathered contiguous: `python dev/probes/time_paged_decode_cpu.py`
(session 7: the software prefetch of a KV head's rows, dev/NOTES.md)."""
import time, torch, sys
sys.path.insert(0, 'tests')
from tileops.attention import PagedDecodeAttentionFwdOp
torch.manual_seed(0)
B, H, Hk, D, ctx, bs = 1, 32, 8, 128, 4096, 16
for dt in (torch.float32, torch.bfloat16):
    nb = ctx // bs * B
    kc = torch.randn(nb, bs, Hk, D).to(dt); vc = torch.randn(nb, bs, Hk, D).to(dt)
    q = torch.randn(B, H, D).to(dt)
    bt = torch.arange(nb, dtype=torch.int32).view(B, -1); sl = torch.full((B,), ctx, dtype=torch.int32)
    op = PagedDecodeAttentionFwdOp(head_size=D, block_size=bs)
    k = kc.view(B, ctx, Hk, D).transpose(1, 2); v = vc.view(B, ctx, Hk, D).transpose(1, 2)
    k = k.contiguous(); v = v.contiguous()
    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(q[:, :, None], k, v, enable_gqa=True)
    def ours():
        return op(q, kc, vc, bt, sl)
    o = ours(); o = o[0] if isinstance(o, tuple) else o
    print("maxerr", (o.float() - sdpa()[:, :, 0].float()).abs().max().item())
    for name, f in (("tileops", ours), ("sdpa(gathered)", sdpa)) * 2:
        for _ in range(3): f()
        t = time.perf_counter(); n = 50
        for _ in range(n): f()
        print(dt, name, "%.1f us" % ((time.perf_counter() - t) / n * 1e6))
