"""Programmatic dependent launch is safe only for a kernel that waits for the kernel before
it (griddepcontrol.wait) before it touches memory: a kernel launched with PDL is scheduled
while that one still runs. Every op kernel is built with runtime.build(pdl=True) and starts
with TILEOPS_PDL_PROLOGUE() (the wait, then its own dependents let in); the positional
tables' kernels and the bench's copy floor are built plainly. This reads the sources and the builders (no GPU)."""
import glob
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
OPS = os.path.join(ROOT, "csrc", "ops")
KERNELS = os.path.join(ROOT, "src", "tileops", "kernels")
# tables.py builds these plainly, and tileops.bench its copy floor (common/stream_copy.cu)
PLAIN = {"tileops_alibi", "tileops_sinusoidal", "tileops_rope_cos_sin_cache", "tileops_stream_copy"}
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s[^{;]*?\b(\w+)\s*\([^)]*\)\s*\{', re.S)


def kernels():
    """{kernel name (or the macro naming it): (file, the text of its body's start)}."""
    found = {}
    for path in glob.glob(os.path.join(OPS, "*", "*.cu")) + glob.glob(os.path.join(OPS, "*", "*.cuh")):
        text = open(path, encoding="utf-8").read()
        for m in _KERNEL.finditer(text):
            found[m.group(1)] = (os.path.relpath(path, OPS), text[m.end():m.end() + 400])
    return found


def _first_statement(body):
    """The body's first statement, past comments, blank lines and __shared__ declarations."""
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    for line in body.split("\n"):
        s = line.strip()
        if not s or s.startswith("//") or s.startswith("#") or s.startswith("__shared__") \
                or s.startswith("extern __shared__"):
            continue
        return s
    return ""


def test_every_op_kernel_waits_first_and_the_tables_kernels_are_plain():
    found = kernels()
    assert len(found) >= 17 and PLAIN <= set(found), sorted(found)
    for name, (path, body) in found.items():
        first = _first_statement(body)
        if name in PLAIN:
            assert "TILEOPS_PDL_PROLOGUE" not in body, (path, name)
        else:
            assert first == "TILEOPS_PDL_PROLOGUE();", f"{path}: kernel {name} starts with {first!r}"


def test_every_op_kernels_builder_asks_for_pdl_and_the_tables_do_not():
    builds = {}
    for path in glob.glob(os.path.join(KERNELS, "*", "*.py")):
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"runtime\.build\((.*?)\)\s*(?:,|\n|$)", text, re.S):
            builds.setdefault(os.path.relpath(path, KERNELS), []).append("pdl=True" in m.group(1))
    assert builds.pop(os.path.join("positional", "tables.py")) == [False]
    assert len(builds) >= 8 and all(all(v) for v in builds.values()), builds
