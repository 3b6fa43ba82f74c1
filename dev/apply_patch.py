"""Applies dev/patches files to this tree's csrc/ops by dev/lab.py's applier (each hunk's
old lines must occur exactly once), for a device call that times a parked change beside the
op and then runs the GPU tests on it: the device has no git promised. CUDA C is compiled at
run time (NVRTC, its cache keyed by the source), so no rebuild is needed after it.

    python3 dev/apply_patch.py smx_whole_sectors.patch [more.patch ...]"""
import sys

import lab

ROOT = lab.DEV_DIR.parent


def main(names):
    for f in lab.write_patched(ROOT, names):
        print(f"written: {f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
