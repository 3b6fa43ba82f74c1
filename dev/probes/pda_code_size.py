"""Paged decode attention's main kernel, compiled as the launcher builds it (nvcc -cubin
sm_90a, no GPU): registers, spills and the machine code's size in instructions (the
.text section over 16 bytes, from readelf) per build, to compare a .cu change's code on
this machine. Session 25's copy-issue change: 136-144 fewer in the 16-bit D 128 builds, 352 in
the fp32 one, 400 at D 256.

    PATH=/usr/local/cuda/bin:$PATH .venv/bin/python dev/probes/pda_code_size.py [--source OLD.cu]

--source: another copy of paged_decode_attention.cu (e.g. `git show HEAD~1:csrc/ops/attention/
paged_decode_attention.cu > /tmp/old.cu`) compiled with the same options, its sizes beside.
--sass: also each build's most frequent SASS opcodes (cuobjdump and nvdisasm on PATH: PyPI's
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels, `pip download --no-deps` each and
unzip, their nvidia/cu13/bin; dev/NOTES.md, session 26)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))
from tileops import runtime  # noqa: E402
from tileops.kernels.attention import paged_decode_attention as K  # noqa: E402

# (dtype code, head size, group, chunk groups, cluster): fp16 / bf16 / fp32, the models' groups
BUILDS = [(1, 128, 4, 1, 1), (1, 128, 4, 2, 1), (1, 128, 4, 1, 4), (2, 128, 7, 1, 1), (1, 128, 8, 2, 1),
          (0, 128, 4, 1, 1), (1, 64, 8, 1, 1), (1, 256, 1, 1, 1)]


def opcodes(cubin, kernel, top=12):
    """The `top` most frequent SASS opcodes of `kernel` in `cubin` (cuobjdump -sass)."""
    out = subprocess.run(["cuobjdump", "-sass", "-fun", kernel, cubin], capture_output=True, text=True,
                         check=True).stdout
    ops, mine = {}, False
    for ln in out.splitlines():
        if "Function : " in ln:   # the exact kernel's block only (-fun may list the merge kernel too)
            mine = ln.split("Function : ", 1)[1].strip() == kernel
        m = mine and re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]+ )?([A-Z0-9_]+)", ln)
        if m:
            ops[m.group(1)] = ops.get(m.group(1), 0) + 1
    return " ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:top])


SASS = False   # --sass


def size(text, opts, kernel):
    """(registers, spill bytes, instructions) of `kernel` in `text` compiled with opts (--sass:
    and its opcode counts, printed)."""
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.cu"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", cubin, src],
                           capture_output=True, text=True, check=True)
        info = r.stderr[r.stderr.index(f"Compiling entry function '{kernel}'"):]
        regs = int(re.search(r"Used (\d+) registers", info).group(1))
        spill = int(re.search(r"(\d+) bytes spill stores", info).group(1))
        sections = subprocess.run(["readelf", "-SW", cubin], capture_output=True, text=True, check=True).stdout
        line = next(ln for ln in sections.splitlines() if f"] .text.{kernel} " in ln + " ")
        if SASS:
            print("   ", opcodes(cubin, kernel))
        return regs, spill, int(line.split("]")[1].split()[4], 16) // 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", help="another paged_decode_attention.cu to compare (its includes spliced in "
                                     "as the shipped one's)")
    ap.add_argument("--sass", action="store_true", help="also each build's most frequent SASS opcodes (cuobjdump)")
    a = ap.parse_args()
    global SASS
    SASS = a.sass
    name = "attention/paged_decode_attention.cu"
    shipped = runtime.source(name)
    other = None
    if a.source:
        with open(a.source) as f:
            raw = f.read()
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "csrc", "ops", name)) as f:
            own = f.read()
        inc = '#include "../common/rows_common.cuh"\n'   # the text after the include, which the runtime splices
        other = shipped.replace(own[own.index(inc) + len(inc):], raw[raw.index(inc) + len(inc):])
        assert other != shipped or raw == own, "--source: the kernel's text was not found in the spliced source"
    for dt, D, G, groups, cluster in BUILDS:
        heads, mma = K.heads_per_cta(D, G), dt != 0
        stages, _ = K.choose_stages(dt, D, heads, mma, groups=groups)
        _, kernel, _, opts = K.cuda_specialisation(dt, D, G, heads, 16, mma, stages, groups, cluster)
        row = f"dtype {dt} D {D} G {G} groups {groups} cluster {cluster}: regs / spill / instructions " \
              f"{'/'.join(map(str, size(shipped, opts, kernel)))}"
        if other is not None:
            row += f"  (--source: {'/'.join(map(str, size(other, opts, kernel)))})"
        print(row)


if __name__ == "__main__":
    main()
