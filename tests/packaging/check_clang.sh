#!/usr/bin/env bash
# The C core and the extension built by clang (the wheel's build and the C tests take GCC's
# flags; clang must take them too, with -Werror in the project's own builds). clang is the
# one on PATH if any, else zig's (the PyPI package ziglang carries a clang: `zig cc`),
# installed into .venv; if neither can be had the step says so and is skipped.
# `make check-clang`; builds go to $OUT (default build/clang).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${PY:-.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")   # absolute: used from other folders
OUT=${OUT:-build/clang}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
t0=$SECONDS

if command -v clang > /dev/null; then
    CLANG=$(command -v clang)
else
    echo "== no clang on PATH: zig's clang (PyPI package ziglang) into .venv"
    if ! "$PY" -m pip install -q ziglang; then
        echo "check-clang: SKIPPED (no clang on PATH, and the ziglang package could not be installed)"
        exit 0
    fi
    CLANG=$OUT/zig-cc
    printf '#!/bin/sh\nexec "%s" -m ziglang cc "$@"\n' "$PY" > "$CLANG"
    chmod +x "$CLANG"
fi
echo "== compiler: $CLANG ($("$CLANG" --version | head -1))"

echo "== the C core and its C tests (-Werror)"
make --no-print-directory test-c CC="$CLANG" BUILD="$OUT/tests" 2>&1 | grep -Ev "^$CLANG |^/" || { echo "C tests failed"; exit 1; }

echo "== the extension (setup.py with TILEOPS_WERROR=1) built from the sdist by clang"
rm -rf "$OUT/dist" "$OUT/site"
# PyPA's build, and pyelftools for the symbol check below (check_dist.sh installs both, the
# latter with auditwheel; this runs alone as well: `make check-clang` on a fresh clone)
"$PY" -m pip install -q build pyelftools
CC="$CLANG" TILEOPS_WERROR=1 "$PY" -m build -o "$OUT/dist" . > "$OUT/build.log" 2>&1 \
    || { tail -40 "$OUT/build.log"; exit 1; }
"$PY" -m zipfile -e "$OUT"/dist/*.whl "$OUT/site"
"$PY" - "$OUT"/site/tileops/_C*.so <<'PYEOF'
import sys
from elftools.elf.elffile import ELFFile
with open(sys.argv[1], "rb") as f:
    s = ELFFile(f).get_section_by_name(".comment")
    comment = s.data().decode(errors="replace").replace("\0", " ").strip() if s else ""
print(f"_C .comment: {comment}")
sys.exit(0 if "clang" in comment else f"_C was not built by clang: {comment!r}")
PYEOF
(cd "$OUT" && PYTHONPATH="$OUT/site" "$PY" "$ROOT/tests/packaging/smoke.py" "$ROOT/README.md" --from "$OUT/site")
echo "check-clang: done in $((SECONDS - t0)) s"
