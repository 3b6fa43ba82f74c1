#!/usr/bin/env bash
# The README's "Measured" table in one device call (after the kit's build, Liger carried):
#   KIT_STEPS=none KIT_DEV="bash dev/readme_bench.sh" bash tests/gpu/run_on_device.sh kit
# then, on this machine: tar xzf <files_at>/readme.tar.gz -C /tmp && python benchmarks/summary.py /tmp/readme --readme
# Each op of benchmarks/summary.py's README_ROWS is benched on exactly the table's fp16 cases
# (`summary.py --readme-workloads`), every impl interleaved, into readme/<op>.json, packed
# into $OUT/readme.tar.gz after each op: the device tool returns only a few files a call
# (session 22 got 8 of 15 JSON files back when they lay in $OUT/readme/ one by one), and
# a run cut by the time limit keeps the ops it finished.
# README_BENCH_ARGS (default "--fast --compile dynamic"), README_SECONDS_PER_OP (default 60);
# README_OPS, an extended regex, keeps only the ops it matches (e.g. '^Rope');
# README_DRY=1 prints the commands instead of running them.
set -uo pipefail
out=${OUT:-/tmp/tileops-out}
work=/tmp/tileops-readme
dir=$work/readme
rm -rf "$work"; mkdir -p "$dir" "$out"
python3 benchmarks/summary.py --readme-workloads | grep -E -- "${README_OPS:-.}" | while read -r op terms; do
    cmd=(timeout "${README_SECONDS_PER_OP:-60}" python3 -m tileops bench --device cuda --op "$op" --workloads "$terms"
         --dtypes float16 ${README_BENCH_ARGS:---fast --compile dynamic} --out "$dir/$op.json" --no-plot)
    if [ -n "${README_DRY:-}" ]; then
        printf '%q ' "${cmd[@]}"; echo
    else
        echo "--- $op"
        "${cmd[@]}" 2>&1 | tail -3
        tar czf "$out/readme.tar.gz" -C "$work" readme
    fi
done
