#!/usr/bin/env bash
# The norm bench's L2-cold gap (dev/NOTES.md, sessions 18-20): RMSNormFwdOp's bench at decode
# sizes run with every impl, then with subsets of them, one run after another, then
# dev/time_norm_cold.py's harness, so one device call says whether the other impls' runs
# open the gap. Run from the repository root on the GPU machine; JSON under ${OUT:-/tmp}.
#   bash dev/norm_bench_subsets.sh [IMPLS ...]   (each a --impls list, or "all"; default:
#   all tileops,liger tileops liger,tileops,tileops.plain,copy)
set -u
OUT=${OUT:-/tmp}
WL='llama-3-8b[&t=32,llama-3-8b[&t=256,qwen2.5-7b[&t=32'
[ $# -gt 0 ] || set -- all tileops,liger tileops liger,tileops,tileops.plain,copy
for impls in "$@"; do
    args=()
    [ "$impls" = all ] || args=(--impls "$impls")
    echo "=== impls: $impls"
    python3 -m tileops bench --device cuda --op RMSNormFwdOp --workloads "$WL" --dtypes float16 \
        --compile dynamic --no-plot "${args[@]}" --out "$OUT/norm_subsets_${impls//,/_}.json" 2>&1 \
        | grep -E "^(Llama|Qwen|cold_us|hot_us|case)" 
done
cd dev && timeout 150 python3 time_norm_cold.py --harness --rows 32,256 --ns 4096 --out "$OUT/norm_harness.json" 2>&1 | grep -v bitwise
