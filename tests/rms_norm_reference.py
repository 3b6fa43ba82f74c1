"""What RMSNormFwdOp is checked against on the CPU (tests/ops) and on the GPU (tests/gpu):
a float64 torch reference, and the tolerances per dtype."""
import torch

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float16: dict(atol=2e-3, rtol=2e-3),
       torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}


def reference(x, ns, w, eps=None):
    """RMS norm of x over its trailing dimensions `ns`, in float64, returned in x's dtype;
    eps None: float32's machine epsilon, as F.rms_norm takes it for float32, float16 and
    bfloat16 inputs (torch.rms_norm: the epsilon of the accumulation type)."""
    xd = x.double()
    dims = tuple(range(-len(ns), 0))
    e = torch.finfo(torch.float32).eps if eps is None else eps
    y = xd * torch.rsqrt(xd.pow(2).mean(dim=dims, keepdim=True) + e)
    if w is not None:
        y = y * w.double()
    return y.to(x.dtype)
