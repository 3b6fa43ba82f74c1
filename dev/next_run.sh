#!/usr/bin/env bash
# The next device call's plan (dev/NOTES.md, "The next device run"), as one script so that a
# call does all of it within its budget and the plan is tested here (tests/runtime/
# test_dev_patches.py reads its specs):
#   KIT_STEPS=none KIT_DEV="bash dev/next_run.sh softmax" bash tests/gpu/run_on_device.sh kit
# (one plan a call fits its budget; several may be named, each step then capped shorter)
# Each plan named times its parked patches beside the op first (nothing applied: every
# timing sees the shipped tree), then applies them (dev/apply_patch.py) and runs its GPU
# tests, the timings of every plan before any plan's tests. Every step's timeout is capped by
# what is left of NEXT_SECONDS (default 480: KIT_SECONDS' 570 less the build, ~60 s); results
# land in $OUT as JSON, each step's output in $OUT/next_<step>.log. NEXT_DRY=1 prints the
# steps without running them.
#   softmax  issue 14: the whole-sectors stores, one exchange over them, fewer instructions
#            and no exchanges over them (bf16 -> float32, 128256 / 152064, B = 32 / 128 /
#            256, two rounds), the staged builds with a temperature; the softmax GPU tests
#            on the whole-sectors patch, then with one exchange over it.
#   softmax_short  the first two timings of softmax at 128256 only, then softmax's tests:
#            for a call with less device time left than a full one needs.
#   gated    issue 12: 32-bit group indices and the no-activation ablation (256 and 4096
#            tokens, 14336 / 18944, fp16; two groups a thread too: at 256 tokens one wave
#            of blocks instead of 1.7); the activation GPU tests on the index change.
#   measure  no patch: what dev/NOTES.md's list asks measured again, by priority. Nsight
#            Compute on paged decode at B = 1 1K (issue 13's 8 us; $OUT/ncu.tar.gz);
#            RMSNorm's launch shapes at QK-norm's rows of 128 (4096 tokens x 32 / 8 heads;
#            L2-cold 22.18 us against Liger's 20.32 and the copy's 23.68 in session 24: issue
#            11's widest miss); GeLU(erf)-and-mul at 4096 tokens with full timers (not
#            --fast: over 1.05x the copy L2-cold by 0.5-2 % in one --fast round, session 29);
#            the README's RoPE rows (dev/readme_bench.sh, README_OPS=^Rope; $OUT/readme.tar.gz).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export OUT=${OUT:-/tmp/tileops-out}   # ncu_run.sh and readme_bench.sh write there too
mkdir -p "$OUT"
BUDGET=${NEXT_SECONDS:-480}

# the specs each plan times (--patches of dev/time_softmax.py and dev/time_gated.py)
SOFTMAX_SPECS="smx_whole_sectors.patch,smx_whole_sectors.patch+smx_one_exchange.patch,smx_whole_sectors.patch+smx_fewer_on_whole.patch,smx_whole_sectors.patch+smx_ablate_noexch.patch"
SOFTMAX_PAIR_SPECS="smx_whole_sectors.patch,smx_whole_sectors.patch+smx_one_exchange.patch"
GATED_SPECS="gact_idx32.patch,gact_ablate_noact.patch,gact_idx32.patch+gact_ablate_noact.patch"
# what each plan applies before its tests, in order, a call to dev/apply_patch.py each (a
# group of tests after each call)
SOFTMAX_APPLY="smx_whole_sectors.patch smx_one_exchange.patch"
GATED_APPLY="gact_idx32.patch"
PYTEST="python3 -m pytest -q -p no:cacheprovider"
SOFTMAX_TESTS="$PYTEST tests/gpu/test_gpu_sampling.py -k 'softmax or same_bits_whatever or captures_in_a_cuda_graph or manifest_batches'"
GATED_TESTS="$PYTEST tests/gpu/test_gpu_activation.py"

run() {   # run NAME CAP COMMAND...: the command under the lesser of CAP and what is left
    local name=$1 cap=$2; shift 2
    local left=$(( BUDGET - SECONDS - 10 ))
    [ "$left" -lt "$cap" ] && cap=$left
    echo; echo "=== next_run $name (cap ${cap} s, ${SECONDS} s in) ==="
    if [ -n "${NEXT_DRY:-}" ]; then echo "$*"; return 0; fi
    if [ "$cap" -lt 15 ]; then echo "skipped: the budget is spent"; return 1; fi
    timeout "$cap" "$@" > "$OUT/next_$name.log" 2>&1
    local rc=$?
    tail -40 "$OUT/next_$name.log"
    echo "--- $name: exit $rc"
    return $rc
}

time_softmax() {   # time_softmax NAME CAP SPECS ARGS...: dev/time_softmax.py at B = 32 / 128 / 256, $OUT/NAME.json
    local name=$1 cap=$2 specs=$3; shift 3
    run "$name" "$cap" bash -c "cd dev && python3 time_softmax.py --quick --batches 32,128,256 $* \
        --patches $specs --out $OUT/$name.json"
}
softmax_time() {
    time_softmax softmax_xpose 260 "$SOFTMAX_SPECS" --vocabs 128256,152064 --rounds 2
    time_softmax softmax_xpose_temp 120 "$SOFTMAX_PAIR_SPECS" --temperature --vocabs 128256
}
gated_time() {   # fp16 (bf16's times tracked fp16's in session 29); u2: one wave at 256 tokens
    local op
    for op in silu_and_mul gelu_and_mul gelu_tanh_and_mul; do
        run "gated_$op" 90 bash -c "cd dev && python3 time_gated.py --op $op --dtype float16 --rows 256,4096 \
            --ns 14336,18944 --unrolls 1,2 --threads 128 --grids full --patches $GATED_SPECS \
            --out $OUT/gated_$op.json"
    done
}
apply_and_test() {   # apply_and_test PLAN "PATCHES" "TESTS": each patch applied in turn, the tests after each
    local plan=$1 patches=$2 tests=$3 p
    for p in $patches; do
        run "${plan}_apply_${p%.patch}" 20 python3 dev/apply_patch.py "$p" || return 1
        run "${plan}_tests_${p%.patch}" 150 bash -c "$tests" \
            || { echo "(tests failed with $p: the rest of $plan's patches not applied)"; return 1; }
    done
}
softmax_test() { apply_and_test softmax "$SOFTMAX_APPLY" "$SOFTMAX_TESTS"; }
# softmax_short: what a call with less than a full budget needs to ship the fix (its timing
# beside one exchange over it, at Llama-3's vocabulary only, then the same tests)
softmax_short_time() { time_softmax softmax_short 150 "$SOFTMAX_PAIR_SPECS" --vocabs 128256 --rounds 2; }
softmax_short_test() { softmax_test; }
gated_test() { apply_and_test gated "$GATED_APPLY" "$GATED_TESTS"; }
measure_time() {   # by priority: what the issues' targets need first, the README's rows last
    run ncu_pda1 150 env NCU_CASES='pda1:pda --B 1 --ctx 1024' bash dev/probes/ncu_run.sh
    run sweep_qknorm 130 python3 dev/sweep_norm.py --mode shapes --only 131072x128,32768x128 \
        --out "$OUT/sweep_qknorm.json"
    run gelu_4096 150 python3 -m tileops bench --device cuda --op GeluAndMulFwdOp --workloads T=4096 \
        --dtypes float16,bfloat16 --compile dynamic --out "$OUT/gelu_4096.json" --no-plot
    run readme_rope 150 env README_OPS='^Rope' README_SECONDS_PER_OP=70 bash dev/readme_bench.sh
}
measure_test() { :; }   # nothing applied

plans=("$@")
[ ${#plans[@]} -eq 0 ] && plans=(softmax gated)
for p in "${plans[@]}"; do
    declare -F "${p}_time" >/dev/null ||
        { echo "next_run: no plan '$p' ($(declare -F | sed -n 's/.* \(.*\)_time$/\1/p' | paste -sd ' '))"; exit 2; }
done
for p in "${plans[@]}"; do "${p}_time"; done
for p in "${plans[@]}"; do "${p}_test"; done
echo; echo "next_run: done in ${SECONDS} s"
