#!/usr/bin/env bash
# tests/gpu/run_c_smoke.sh: builds tests/c/gpu_runtime_smoke.c with cc and runs it twice
# over one fresh cache folder, on a machine with a GPU. The first run compiles every
# kernel with NVRTC and stores the CUBINs; the second (--expect-disk) must take all of
# them from disk. Prints both runs' counters and exits non-zero if either run failed.
#
#   bash tests/gpu/run_c_smoke.sh            # correctness, twice
#   bash tests/gpu/run_c_smoke.sh --bench    # ... and timings (second run)
# NVRTC: $TILEOPS_NVRTC (a full path) if set; else the loader's libnvrtc.so.13; else the
# script looks in the CUDA toolkit and in python3's nvidia wheels and passes the folder
# as TILEOPS_NVRTC_HINT.
set -uo pipefail
cd "$(dirname "$0")/../.."

CC=${CC:-cc}
BIN_DIR=${BIN_DIR:-build/gpu-smoke}
mkdir -p "$BIN_DIR"
BIN="$BIN_DIR/gpu_runtime_smoke"
if ! $CC -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Icsrc/include -Icsrc -pthread \
    -o "$BIN" tests/c/gpu_runtime_smoke.c csrc/core/*.c csrc/cpu/*.c csrc/runtime/*.c csrc/ops/*/*.c \
    -ldl -lpthread -lm; then
    echo "BUILD FAILED"
    exit 1
fi

if [ -z "${TILEOPS_NVRTC:-}" ] && [ -z "${TILEOPS_NVRTC_HINT:-}" ] &&
    ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13 '; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13.0/lib64 \
        $(python3 - 2>/dev/null <<'EOF'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for p in glob.glob(os.path.join(r, "nvidia", "**", "libnvrtc.so.1[23]"), recursive=True):
        print(os.path.dirname(p))
EOF
        ); do
        if [ -e "$d/libnvrtc.so.13" ] || [ -e "$d/libnvrtc.so.12" ]; then
            export TILEOPS_NVRTC_HINT="$d"
            break
        fi
    done
fi
echo "NVRTC: TILEOPS_NVRTC=${TILEOPS_NVRTC:-} TILEOPS_NVRTC_HINT=${TILEOPS_NVRTC_HINT:-(loader)}"

CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
export TILEOPS_CACHE_DIR="$CACHE"
status=0

echo "=== run 1: fresh cache $CACHE"
"$BIN" >"$BIN_DIR/run1.log" 2>&1 || status=1
grep -E "^(FAIL|skip|device|info)" "$BIN_DIR/run1.log"
tail -2 "$BIN_DIR/run1.log"
echo "cache entries: $(find "$CACHE" -name '*.cubin' | wc -l), temp files left: $(find "$CACHE" -name '*.tmp.*' | wc -l)"

echo "=== run 2: same cache, every CUBIN must come from disk"
"$BIN" --expect-disk "$@" >"$BIN_DIR/run2.log" 2>&1 || status=1
grep -E "^(FAIL|device|info)" "$BIN_DIR/run2.log"
sed -n '/^bench/,/^stats/p' "$BIN_DIR/run2.log"
tail -2 "$BIN_DIR/run2.log"

echo "run_c_smoke: status $status (logs in $BIN_DIR/run1.log, run2.log)"
exit $status
