"""One case per process for Nsight Compute: warm up (NVRTC compile, module load), then the
calls ncu profiles (it is told to skip the warm-up launches by --launch-skip).

    ncu --clock-control none --set full -k regex:paged_decode_attention$ --launch-skip 3 \\
        --launch-count 1 python3 dev/probes/ncu_cases.py pda --B 128 --ctx 4096

Cases: pda (PagedDecodeAttentionFwdOp, Llama-3-8B heads unless --H/--Hkv), softmax,
argmax (bf16 logits [B, V]), rmsnorm (--dtype x [--T, --N], weight [--N]), rope (fp16 q [--T,
--H, 128], k [--T, --Hkv, 128], in place, int64 positions below 8192), mask
(TopKTopPMaskFwdOp, --dtype logits [B, V] N(0, 3), k in [1, V), p in [0.5, 0.95)), gated
(--act gelu | silu | gelu_tanh and mul, fp16 x [--T, 2 x --I]; --compiled: torch.compile of
the same math, Triton's kernel, for the one-token L2-cold gap of session 21); argmax
--batch-bytes N: its builds with N bytes of loads in flight a thread (session 43: a thread's
second batch issues after its first is folded at B = 32). Each case makes 3
warm-up calls, then 2 more. ncu flushes the caches before each profiled launch by default
(--cache-control all): L2-cold profiles, as the bench's cold timer. rmsnorm --liger runs
Liger-Kernel's LigerRMSNormFunction on the same tensors instead (its wheel carried to the
device; ncu_run.sh's kind "ligerrms" selects its Triton kernel)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # dev/: time_argmax's knobs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=("pda", "softmax", "argmax", "rmsnorm", "rope", "mask", "gated"))
    ap.add_argument("--B", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--H", type=int, default=32)
    ap.add_argument("--Hkv", type=int, default=8)
    ap.add_argument("--V", type=int, default=128256)
    ap.add_argument("--stages", type=int, default=None)
    ap.add_argument("--cpc", type=int, default=None, help="pda: chunks per CTA, forced (the split plan's knob)")
    ap.add_argument("--groups", type=int, default=None, help="pda: chunk groups a CTA (1 or 2), forced")
    ap.add_argument("--sdpa", action="store_true", help="pda: torch's SDPA (enable_gqa) on the gathered K and V "
                                                         "instead of tileops")
    ap.add_argument("--T", type=int, default=32)
    ap.add_argument("--N", type=int, default=4096)
    ap.add_argument("--liger", action="store_true", help="rmsnorm: Liger-Kernel's instead of tileops'")
    ap.add_argument("--dtype", default="bfloat16", help="mask, softmax, argmax: the logits' dtype; rmsnorm: x's")
    ap.add_argument("--temperature", action="store_true", help="softmax: a per-row temperature in [0.25, 2)")
    ap.add_argument("--out-dtype", default="float32", help="softmax: the probabilities' dtype")
    ap.add_argument("--act", default="gelu", choices=("gelu", "silu", "gelu_tanh"), help="gated: the activation")
    ap.add_argument("--I", type=int, default=14336, help="gated: the intermediate size (x is [T, 2 I])")
    ap.add_argument("--compiled", action="store_true", help="gated: torch.compile of the math instead of tileops")
    ap.add_argument("--batch-bytes", type=int, default=None,
                    help="argmax: bytes of loads in flight a thread (dev/time_argmax.py's knob; the kernel's 64)")
    a = ap.parse_args()
    dev = "cuda"
    if a.case == "pda":
        from tileops.attention import PagedDecodeAttentionFwdOp
        if a.stages is not None:
            from tileops.kernels.attention import paged_decode_attention as K
            K.STAGES = a.stages
        from tileops.kernels.attention import paged_decode_attention as K
        K.SPLIT_CPC, K.CHUNK_GROUPS = a.cpc, a.groups
        BS, D, dt = 16, 128, torch.float16
        nb = a.ctx // BS
        kc = torch.randn(a.B * nb, BS, a.Hkv, D, device=dev, dtype=dt)
        vc = torch.randn_like(kc)
        q = torch.randn(a.B, a.H, D, device=dev, dtype=dt)
        bt = torch.randperm(a.B * nb, device=dev).view(a.B, nb).to(torch.int32)
        sl = torch.full((a.B,), a.ctx, dtype=torch.int32, device=dev)
        op = PagedDecodeAttentionFwdOp(D, BS)
        fn = lambda: op(q, kc, vc, bt, sl)   # noqa: E731
        if a.sdpa:   # the bench's peer: K and V gathered contiguous beforehand, SDPA on them
            from tileops.reference.attention import gather_paged, sdpa_decode
            k, v = (gather_paged(c, bt, sl, BS).transpose(1, 2).contiguous() for c in (kc, vc))
            fn = lambda: sdpa_decode(q.unsqueeze(2), k, v, scale=D ** -0.5)   # noqa: E731
    elif a.case == "rmsnorm":
        from tileops.norm import RMSNormFwdOp
        x = torch.randn(a.T, a.N, device=dev, dtype=getattr(torch, a.dtype))
        w = torch.randn(a.N, device=dev, dtype=x.dtype)
        op = RMSNormFwdOp((a.N,))
        fn = lambda: op(x, w)   # noqa: E731
        if a.liger:
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction
            fn = lambda: LigerRMSNormFunction.apply(x, w, 1e-6)   # noqa: E731
    elif a.case == "rope":
        from tileops.positional import RopeFwdOp
        q = torch.randn(a.T, a.H, 128, device=dev, dtype=torch.float16)
        k = torch.randn(a.T, a.Hkv, 128, device=dev, dtype=torch.float16)
        pos = torch.randint(0, 8192, (a.T,), device=dev)
        cache = torch.randn(8192, 128, device=dev)
        op = RopeFwdOp(128, 128)
        fn = lambda: op(q, k, pos, cache, inplace=True)   # noqa: E731
    elif a.case == "gated":
        import torch.nn.functional as F

        from tileops.activation import GeluAndMulFwdOp, GeluTanhAndMulFwdOp, SiluAndMulFwdOp
        x = torch.randn(a.T, 2 * a.I, device=dev, dtype=torch.float16)
        op = {"gelu": GeluAndMulFwdOp, "silu": SiluAndMulFwdOp, "gelu_tanh": GeluTanhAndMulFwdOp}[a.act]()
        fn = lambda: op(x)   # noqa: E731
        if a.compiled:
            act = {"gelu": F.gelu, "silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[a.act]
            fn = torch.compile(lambda t: act(t[..., :a.I]) * t[..., a.I:], fullgraph=True, dynamic=False)
            fn = (lambda f: lambda: f(x))(fn)
    elif a.case == "mask":
        from tileops.sampling import TopKTopPMaskFwdOp
        g = torch.Generator(device="cpu").manual_seed(1)
        x = (3 * torch.randn(a.B, a.V, generator=g)).to(dev, getattr(torch, a.dtype))
        k = torch.randint(1, a.V, (a.B,), generator=g).to(dev)
        p = (0.5 + 0.45 * torch.rand(a.B, generator=g)).to(dev)
        op = TopKTopPMaskFwdOp()
        fn = lambda: op(x, k, p)   # noqa: E731
    else:
        from tileops.sampling import ArgmaxFwdOp, SoftmaxFwdOp
        x = (3 * torch.randn(a.B, a.V, device=dev)).to(getattr(torch, a.dtype))
        t = 0.25 + 1.75 * torch.rand(a.B, device=dev) if a.temperature else None
        if a.case == "softmax":
            op = SoftmaxFwdOp(out_dtype=getattr(torch, a.out_dtype))
            fn = lambda: op(x, t)   # noqa: E731
        else:
            if a.batch_bytes is not None:
                import time_argmax   # dev/ (on the path above)
                time_argmax.set_batch_bytes(a.batch_bytes)
            op = ArgmaxFwdOp()
            fn = lambda: op(x)   # noqa: E731
    for _ in range(5):
        fn()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
