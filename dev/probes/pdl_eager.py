"""Host cost of an eager call with programmatic dependent launch on and off (run on a GPU):
RMSNormFwdOp 1x4096 fp16 and a paged decode attention call (B = 1, 1K), timed by
tileops.bench.loop_times_us (loops of back-to-back eager calls, the device synchronised only
around each loop, PDL on / off interleaved over 7 rounds, the median). Each call sets PDL
first (a C call, the same on both sides). Session 9's numbers (dev/NOTES.md) came from the
first version of this probe (commit fc3359e), which had its own loop of 2000 calls.

    PYTHONPATH=src python3 dev/probes/pdl_eager.py"""
import sys

import torch

sys.path.insert(0, "tests")
from paged_decode_inputs import make  # noqa: E402

from tileops import runtime  # noqa: E402
from tileops.attention import PagedDecodeAttentionFwdOp  # noqa: E402
from tileops.bench import loop_times_us  # noqa: E402
from tileops.norm import RMSNormFwdOp  # noqa: E402


def main():
    x = torch.randn(1, 4096, device="cuda", dtype=torch.float16)
    w = torch.randn(4096, device="cuda", dtype=torch.float16)
    norm = RMSNormFwdOp((4096,))
    pda = PagedDecodeAttentionFwdOp(128, 16)
    args = make(1, 32, 8, 128, 16, [1024], torch.float16, device="cuda")
    cases = {"rms_norm 1x4096": lambda: norm(x, w), "paged decode B=1 1K": lambda: pda(*args)}
    for name, fn in cases.items():
        def with_pdl(on, fn=fn):
            runtime.set_pdl(on)
            fn()
        us = loop_times_us({"on": lambda: with_pdl(True), "off": lambda: with_pdl(False)},
                           sync=torch.cuda.synchronize)
        runtime.set_pdl(True)
        print(f"{name}: PDL on {us['on']:.2f} us/call, off {us['off']:.2f}")


if __name__ == "__main__":
    main()
