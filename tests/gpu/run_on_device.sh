#!/usr/bin/env bash
# Runs on the lent GPU machine (the `device` tool), from the repository root:
#   bash tests/gpu/run_on_device.sh [full|bench|quick|kit|sweep|experiments]
#     kit: GPU tests (bounded by TEST_SECONDS; TEST_JOBS=N runs them in N shards side by side,
#     TEST_PATHS / TEST_K narrow them) and `python -m tileops bench` for every op
#     (filtered by BENCH_OPS / BENCH_WORKLOADS / BENCH_DTYPES; BENCH_ARGS adds options, e.g.
#     "--fast --compile dynamic --budget-s 75"; each op's run is cut at BENCH_SECONDS_PER_OP,
#     its JSON rewritten after every case; KIT_STEPS=tests or bench runs one of the two;
#     KIT_DEV: lab commands after them; KIT_PATCHES: dev/patches files applied before the tests,
#     a parked change's kernel, launch side and GPU tests), logs and bench JSON in $OUT/logs.tar.gz; every
#     step's timeout capped so the whole run ends by KIT_SECONDS (default 570) with its logs
#     full: everything but the sweeps (~7 min); bench: all but the C smoke test and the CPU
#     suite; quick: GPU tests; sweep: GPU tests and the two sweeps of dev/sweep_norm.py;
#     experiments: GPU tests, the lab's bit-for-bit tests (dev/tests), the cluster / bulk /
#     register-cap sweeps, dev/probe_placement.py and dev/time_norm_rows.py (dev/NOTES.md;
#     ~5 min)
# Builds tileops in place with the image's python3 (no network there: nothing is
# installed but our own extension and the test plugin), then runs the C smoke test, the
# GPU tests, the whole suite, the demo and the benchmarks. Everything lands in $OUT:
#   norm.json norm.png overhead.json build_times.json sweep_norm.json sweep_norm_policies.json
#   sweep_cluster.json sweep_bulk.json sweep_regcap.json probe_placement.json
#   norm_rows_timing.json (results),
#   logs.tar.gz (every log)
set -uo pipefail
export OUT=${OUT:-/tmp/tileops-out}
mkdir -p "$OUT"
LOGS=/tmp/tileops-logs
rm -rf "$LOGS"; mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src:/tmp/tileops-plugin${PYTHONPATH:+:$PYTHONPATH}"
export TILEOPS_CACHE_DIR=/tmp/tileops-cache
MODE=${1:-full}
status=0
step() { echo; echo "=== $* ==="; }
# A kit call must end, logs packed, before the device tool's limit cuts it (a cut script
# packs nothing: session 20 lost a test run's log so). Each kit step's timeout is capped by
# what is left of KIT_SECONDS (default 570; the script's whole run, start-up and build
# included), keeping 20 s for the packing.
kit_cap() {   # kit_cap SECONDS: SECONDS, or what is left of the kit's budget if less (>= 1)
    local left=$(( ${KIT_SECONDS:-570} - SECONDS - 20 ))
    [ "$left" -lt 1 ] && left=1
    [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}

step "GPU"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv | tee "$LOGS/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' | tee -a "$LOGS/gpu.txt"

# Peers carried as wheels (device tool: carry .whl; e.g. liger-kernel, a pure-Python
# Triton wheel): installed into /tmp/site, never into the image.
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH="$PYTHONPATH:/tmp/site" && echo "peers: $(ls .whl)"
fi

step "build (python3 setup.py build_ext --inplace)"
if ! TILEOPS_WERROR=1 python3 setup.py -q build_ext --inplace >"$LOGS/build.log" 2>&1; then
    tail -40 "$LOGS/build.log"; echo "BUILD FAILED"; exit 1
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-compile --target /tmp/tileops-plugin \
    ./tests/plugins/tileops-testplugin >>"$LOGS/build.log" 2>&1 || echo "(test plugin not installed)"

if [ -n "${KIT_PATCHES:-}" ]; then   # parked changes tested and timed as if shipped (dev/apply_patch.py)
    step "patches: $KIT_PATCHES"
    # shellcheck disable=SC2086
    python3 dev/apply_patch.py $KIT_PATCHES || { echo "PATCHES FAILED TO APPLY"; exit 1; }
fi

step "C runtime smoke test"
if [ "$MODE" = full ] && [ -f tests/gpu/run_c_smoke.sh ]; then
    bash tests/gpu/run_c_smoke.sh >"$LOGS/c_smoke.log" 2>&1 && tail -5 "$LOGS/c_smoke.log" || { echo "FAILED"; tail -30 "$LOGS/c_smoke.log"; status=1; }
fi

step "GPU tests"
if [ "$MODE" = kit ]; then   # a short device budget: bounded steps; KIT_STEPS picks tests and/or bench
    if [[ "${KIT_STEPS:-tests,bench}" == *tests* ]]; then
        # -v: each test's name and outcome reach the log as it ends, so a run cut by the
        # time limit still names its failures (printed below from the log)
        # TEST_JOBS=N: N pytest processes side by side, shard i of N each (tests/gpu/conftest.py's
        # TILEOPS_TEST_SHARD; the tests' time is mostly NVRTC and inductor on the CPU), their logs
        # tests_gpu.<i>.log joined into tests_gpu.log; the disk cache is shared (its writes are
        # renames: tests/gpu/test_gpu_rms_norm.py's racing-threads test)
        jobs=${TEST_JOBS:-1} cap=$(kit_cap "${TEST_SECONDS:-240}") pids=()
        for ((i = 0; i < jobs; i++)); do
            shard=""; [ "$jobs" -gt 1 ] && shard="$i/$jobs"
            TILEOPS_TEST_SHARD=$shard timeout "$cap" python3 -m pytest -v -p no:cacheprovider -rfs --durations=15 \
                ${TEST_PATHS:-tests/gpu} ${TEST_K:+-k "$TEST_K"} >"$LOGS/tests_gpu.$i.log" 2>&1 &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || status=1; done
        for ((i = 0; i < jobs; i++)); do echo "=== shard $i of $jobs"; cat "$LOGS/tests_gpu.$i.log"; done >"$LOGS/tests_gpu.log"
        rm -f "$LOGS"/tests_gpu.[0-9]*.log
        grep -E "^tests/.* (FAILED|ERROR)" "$LOGS/tests_gpu.log" | head -60
        echo "passed: $(grep -c ' PASSED' "$LOGS/tests_gpu.log")  failed: $(grep -c ' FAILED' "$LOGS/tests_gpu.log")  skipped: $(grep -c ' SKIPPED' "$LOGS/tests_gpu.log")"
        grep -E "^=+ .*(passed|failed|skipped|error).* =+$" "$LOGS/tests_gpu.log"
    fi
else
    python3 -m pytest -q -p no:cacheprovider tests/gpu -x -rs 2>&1 | tee "$LOGS/tests_gpu.log" | tail -25
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$MODE" = full ]; then
    step "whole suite on the GPU machine"
    python3 -m pytest -q -p no:cacheprovider tests --ignore=tests/gpu -rs 2>&1 | tee "$LOGS/tests_all.log" | tail -15
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$MODE" = kit ] && [[ "${KIT_STEPS:-tests,bench}" == *bench* ]]; then
    step "python -m tileops bench --device cuda (BENCH_OPS, BENCH_WORKLOADS, BENCH_DTYPES filter)"
    mkdir -p "$LOGS/bench"
    for op in ${BENCH_OPS:-$(python3 -c 'import tileops; print(" ".join(tileops.all_op_classes()))')}; do
        timeout "$(kit_cap "${BENCH_SECONDS_PER_OP:-300}")" python3 -m tileops bench --device cuda --op "$op" \
            ${BENCH_WORKLOADS:+--workloads "$BENCH_WORKLOADS"} ${BENCH_DTYPES:+--dtypes "$BENCH_DTYPES"} \
            ${BENCH_ARGS:-} --out "$LOGS/bench/$op.json" --no-plot 2>&1 | tee "$LOGS/bench_$op.log" | tail -${BENCH_TAIL:-40}
    done
fi
if [ "$MODE" = full ] || [ "$MODE" = bench ]; then
    step "demo --device cuda"
    python3 -m tileops demo --device cuda 2>&1 | tee "$LOGS/demo.log" | tail -12

    step "python -m tileops bench --device cuda (every op's manifest workloads; BENCH_WORKLOADS filters)"
    mkdir -p "$OUT/bench"
    for op in $(python3 -c 'import tileops; print(" ".join(tileops.all_op_classes()))'); do
        python3 -m tileops bench --device cuda --op "$op" ${BENCH_WORKLOADS:+--workloads "$BENCH_WORKLOADS"} \
            --out "$OUT/bench/$op.json" --plot "$OUT/bench/$op.png" 2>&1 | tee "$LOGS/bench_$op.log" | tail -60
    done

    step "build_times (NVRTC compile, disk-cache hit in a second process)"
    python3 benchmarks/build_times.py --out "$OUT/build_times.json" 2>&1 | tee "$LOGS/build_times.log" | tail -4
    [ "${PIPESTATUS[0]}" = 0 ] || status=1

    step "overhead --device cuda"
    python3 benchmarks/overhead.py --device cuda --out "$OUT/overhead.json" 2>&1 | tee "$LOGS/overhead.log" | tail -20
fi
if [ "$MODE" = sweep ]; then
    step "sweep_norm --mode shapes / policies"
    python3 dev/sweep_norm.py --mode shapes --out "$OUT/sweep_norm.json" >"$LOGS/sweep_shapes.log" 2>&1 || status=1
    grep -A6 "best per" "$LOGS/sweep_shapes.log"
    python3 dev/sweep_norm.py --mode policies --out "$OUT/sweep_norm_policies.json" >"$LOGS/sweep_policies.log" 2>&1 || status=1
    grep -A6 "best per" "$LOGS/sweep_policies.log"
fi
if [ "$MODE" = experiments ]; then
    step "the lab's GPU tests (dev/tests: experiment builds bit for bit against the shipped kernels)"
    python3 -m pytest -q -p no:cacheprovider dev/tests -x -rs 2>&1 | tee "$LOGS/tests_lab.log" | tail -10
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    for m in cluster bulk regcap; do
        step "sweep_norm --mode $m"
        python3 dev/sweep_norm.py --mode $m --out "$OUT/sweep_$m.json" >"$LOGS/sweep_$m.log" 2>&1 || status=1
        grep -A5 "best .*per workload" "$LOGS/sweep_$m.log"
    done
    step "probe_placement"
    python3 dev/probe_placement.py --out "$OUT/probe_placement.json" 2>&1 | tee "$LOGS/probe_placement.log" | tail -30
    step "time_norm_rows (row ops vs the shipped RMSNorm kernel and a copy)"
    python3 dev/time_norm_rows.py --out "$OUT/norm_rows_timing.json" 2>&1 | tee "$LOGS/time_norm_rows.log" | tail -80
fi
if [ "$MODE" = kit ] && [ -n "${KIT_DEV:-}" ]; then   # lab scripts, ';'-separated, e.g. "python3 dev/time_gated.py"
    step "dev: $KIT_DEV"
    mkdir -p "$LOGS/dev"
    # its own process group under timeout, so every command of the list stops at the cap
    timeout "$(kit_cap 600)" bash -c "$KIT_DEV" 2>&1 | tee "$LOGS/dev/dev.log" | tail -80
fi
cp "$OUT"/*.json "$LOGS"/ 2>/dev/null
tar czf "$OUT/logs.tar.gz" -C "$LOGS" .   # one file: the device tool returns few per call
echo; echo "run_on_device: status $status"
exit $status
