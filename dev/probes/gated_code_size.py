"""The gated activations' kernels compiled as the launcher builds them (nvcc -cubin sm_90a,
no GPU): registers, spills and instructions per build, fp16 / bf16 / fp32 at n = 14336, the
group build and the element build, to compare an arithmetic change's code on this machine.

    PATH=/usr/local/cuda/bin:$PATH .venv/bin/python dev/probes/gated_code_size.py [--defines=-DX=1]

--defines: extra nvcc options for a second column (e.g. -DTILEOPS_GATED_PLAIN=1, the
arithmetic as written); --sass: each build's most frequent SASS opcodes (as pda_code_size)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pda_code_size  # noqa: E402
from pda_code_size import size  # noqa: E402
from tileops import runtime  # noqa: E402
from tileops.kernels.activation import cuda_gated  # noqa: E402

OPS = ("silu_and_mul", "gelu_tanh_and_mul", "gelu_and_mul")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--defines", default="", help="extra nvcc options of the second column, space separated")
    ap.add_argument("--sass", action="store_true")
    a = ap.parse_args()
    pda_code_size.SASS = a.sass
    extra = tuple(a.defines.split())
    for op in OPS:
        for code, vec in ((1, 8), (2, 8), (0, 4)):
            for elems in (False, True):
                src, kernel, opts, _, _ = cuda_gated.specialisation(op, code, 14336, vec, elems=elems)
                text = runtime.source(src)
                line = f"{op:18s} dtype {code} {'elems' if elems else 'group'}: regs / spill / instr"
                r = size(text, opts, kernel)
                line += f" {r[0]}/{r[1]}/{r[2]}"
                if extra:
                    r2 = size(text, tuple(opts) + extra, kernel)
                    line += f"   {' '.join(extra)}: {r2[0]}/{r2[1]}/{r2[2]}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
