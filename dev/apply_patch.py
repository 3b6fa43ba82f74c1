"""Applies dev/patches files to this tree's csrc/ops, src/tileops and tests/gpu (a kernel, its
launch side and its GPU tests) by dev/lab.py's applier (each hunk's old lines must occur exactly once), for a device
call that times a parked change beside the op and then runs the GPU tests on it: the device
has no git promised. CUDA C is compiled at run time (NVRTC, its cache keyed by the source)
and the package is installed editable, so no rebuild is needed after it.

    python3 dev/apply_patch.py smx_whole_sectors.patch [more.patch ...]

The names applied are appended to the tree's .applied_patches (git ignores it), so a later
call may apply a patch over them (one whose header says "Applies over: ...")."""
import sys

import lab

ROOT = lab.DEV_DIR.parent
RECORD = ".applied_patches"
PREFIXES = ("csrc/ops/", "src/tileops/", "tests/gpu/")   # a patch's GPU tests come with it


def main(names):
    record = ROOT / RECORD
    applied = tuple(record.read_text().split()) if record.exists() else ()
    for name in names:   # recorded one by one: a later name's failure leaves the earlier ones' record
        for f in lab.write_patched(ROOT, [name], applied, PREFIXES):
            print(f"written: {f}")
        applied += (name,)
        record.write_text("".join(f"{n}\n" for n in applied))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
