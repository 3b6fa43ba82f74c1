#!/usr/bin/env bash
# The README's "Measured" table in one device call (after the kit's build, Liger carried):
#   KIT_STEPS=none KIT_DEV="bash dev/readme_bench.sh" bash tests/gpu/run_on_device.sh kit
# then, on this machine: python benchmarks/summary.py <files_at>/readme --readme
# Each op of benchmarks/summary.py's README_ROWS is benched on exactly the table's fp16 cases
# (`summary.py --readme-workloads`), every impl interleaved, into $OUT/readme/<op>.json.
# README_BENCH_ARGS (default "--fast --compile dynamic"), README_SECONDS_PER_OP (default 60);
# README_DRY=1 prints the commands instead of running them.
set -uo pipefail
dir=${OUT:-/tmp/tileops-out}/readme
mkdir -p "$dir"
python3 benchmarks/summary.py --readme-workloads | while read -r op terms; do
    cmd=(timeout "${README_SECONDS_PER_OP:-60}" python3 -m tileops bench --device cuda --op "$op" --workloads "$terms"
         --dtypes float16 ${README_BENCH_ARGS:---fast --compile dynamic} --out "$dir/$op.json" --no-plot)
    if [ -n "${README_DRY:-}" ]; then
        printf '%q ' "${cmd[@]}"; echo
    else
        echo "--- $op"
        "${cmd[@]}" 2>&1 | tail -3
    fi
done
