"""Host cost of an eager call with programmatic dependent launch on and off (run on a GPU):
RMSNormFwdOp 1x4096 fp16 and a paged decode attention call (B = 1, 1K), each a loop of
back-to-back eager calls (synchronised only around the loop), PDL on / off interleaved over
rounds; the median round's µs per call.

    PYTHONPATH=src python3 dev/probes/pdl_eager.py"""
import statistics
import sys
import time

import torch

sys.path.insert(0, "tests")
from paged_decode_inputs import make  # noqa: E402

from tileops import runtime  # noqa: E402
from tileops.attention import PagedDecodeAttentionFwdOp  # noqa: E402
from tileops.norm import RMSNormFwdOp  # noqa: E402


def per_call_us(fn, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    x = torch.randn(1, 4096, device="cuda", dtype=torch.float16)
    w = torch.randn(4096, device="cuda", dtype=torch.float16)
    norm = RMSNormFwdOp((4096,))
    pda = PagedDecodeAttentionFwdOp(128, 16)
    args = make(1, 32, 8, 128, 16, [1024], torch.float16, device="cuda")
    cases = {"rms_norm 1x4096": lambda: norm(x, w), "paged decode B=1 1K": lambda: pda(*args)}
    for name, fn in cases.items():
        fn()
        res = {True: [], False: []}
        for r in range(7):
            for on in (True, False) if r % 2 == 0 else (False, True):
                runtime.set_pdl(on)
                res[on].append(per_call_us(fn, 2000))
        runtime.set_pdl(True)
        print(f"{name}: PDL on {statistics.median(res[True]):.2f} us/call, off {statistics.median(res[False]):.2f} "
              f"(rounds on {[round(v, 1) for v in res[True]]}, off {[round(v, 1) for v in res[False]]})")


if __name__ == "__main__":
    main()
