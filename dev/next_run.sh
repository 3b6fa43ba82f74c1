#!/usr/bin/env bash
# The next device call's plan (dev/NOTES.md, "The next device run"), as one script so that a
# call does all of it within its budget and the plan is tested here (tests/runtime/
# test_dev_patches.py reads its specs):
#   KIT_STEPS=none KIT_DEV="bash dev/next_run.sh softmax" bash tests/gpu/run_on_device.sh kit
# (one plan a call fits its budget; several may be named, each step then capped shorter)
# Each plan named times the shipped op beside its parked patches first (nothing applied:
# every timing sees the shipped tree), then runs its GPU tests, the timings of every plan
# before any plan's tests. Every step's timeout is capped by what is left of NEXT_SECONDS
# (default 480: KIT_SECONDS' 570 less the build, ~60 s); results land in $OUT as JSON, each
# step's output in $OUT/next_<step>.log. NEXT_DRY=1 prints the steps without running them;
# NEXT_TESTS_FIRST=1 runs every plan's tests before the timings (a change not yet run on a GPU).
# Session 33 ran every plan on an H100 (the whole-sectors softmax, fewer instructions over
# it and the gated ops' 32-bit indices shipped then); what the H200 still has to say:
#   softmax  issue 14: the shipped op on the H200 beside the no-exchange ablation (what the
#            cluster exchanges still cost: 1-2 % on the H100), bf16 -> float32 at 128256 /
#            152064, B = 32 / 128 / 256, two rounds, with a temperature, and bf16 -> bf16
#            (--out-dtype same: the README's fp16 row was 1.34x the copy L2-cold on the H100
#            at B = 128, though a warp's 16-bit stores are 512 whole bytes already); the
#            softmax GPU tests.
#   gated    issue 12: the wide build (blocks of 256 threads from 2^17 groups, shipped in
#            session 35 on the H100's sweep: SiLU 256 x 14336 fp16 hot 5.01 -> 3.91 us,
#            torch.compile 4.34-5.88, L2-cold level) against 128-thread blocks on the H200,
#            SiLU, GeLU(tanh) and GeLU(erf) at 32 / 64 / 128 / 256 / 1024 tokens x 14336 and
#            28672 (is 2^17 groups the H200's bound too?); the activation GPU tests.
#   norm     issue 11: RMSNorm's launch shapes at QK-norm's rows of 128 (4096 tokens x 32 / 8
#            heads; the widest miss against Liger): 8 threads a row (shipped in session 34,
#            norm_rt8_rows16.patch, after the H100's sweep and GPU tests) against the others,
#            on the H200; and at one token (32 / 8 rows: session 39's H200 had QK-norm of 32
#            heads at one token 3.97 us L2-cold against Liger's 3.87, the shipped shape 16
#            rows a block, so 2 blocks); then test_gpu_rms_norm.py.
#   tsoftmax issue 14: the op beside smx_tdiv_rn.patch (div.rn an element for x / t).
#   placement issue 11 (session 38): the bench had Liger's RMSNorm 7-9 % ahead at 4096 tokens
#            on an H100, dev/sweep_norm.py by the same timers 2 % behind; tileops, Liger and
#            the copy on the bench's and the sweep's inputs, and tileops / the copy writing
#            y at several offsets of one buffer (dev/probes/norm_inputs_ab.py; carry .whl).
#   floor    issue 14 (session 38): the floor of an op's own read / write mix
#            (dev/cuda/stream_floor_lab.cu through dev/time_floor.py: softmax's 1 : 2 at B =
#            32 / 128 / 256 and the gated ops' 2 : 1) beside the copy of the same total bytes,
#            then the op over it (time_softmax.py --floor, bf16 -> float32 and bf16 -> bf16);
#            the floor's GPU test (dev/tests/test_stream_floor.py).
#   harness  issue 11 (session 39): the placement probe had tileops ahead of Liger at 4096
#            tokens on both input sets (23.63 against 24.72 us hot), the README's bench had
#            Liger 7 % ahead: the bench itself on RMSNorm's two 67 MB cases as the README ran
#            it (--fast --compile dynamic), without torch / torch.compile, and with full
#            timers; then torch's copy_ (a cudaMemcpyAsync) of 32 MiB + k bytes beside the
#            floor kernel's copy (the bench's copy took 24.20 or 29.18 us hot by the size).
#   pdafull  issue 13 (session 40): paged decode against SDPA on K/V gathered with full timers
#            (three interleaved rounds), every manifest workload of one dtype per call
#            (PDA_DTYPE, default float16; ~8 min): session 40's one --fast round on an H100
#            had tileops 1.13-1.27x SDPA at B = 1 32K and 1.2x at B = 32 32K, but full timers
#            on 24 of those cases 0.98-1.05x (the --fast hot of B = 32 32K, 1617 us, was
#            above its own L2-cold 1374: the row's `suspect`); torch eager and torch.compile
#            of the reference left out (their ratios are in the --fast runs).
#   pdaprof  issue 13 (sessions 40-41): the B = 1 32K cases' (and Llama-3-8B B = 1 4K's) kernels one by
#            one (torch.profiler, PDL off): the main kernel against the merge of its partials
#            (session 41, H100, with the merge's superchunk groups: Llama-3-70B TP4 pages of 64
#            main 9.22 us, merge 4.19; Qwen2.5-7B 27.72 / 4.56).
#   readfloor issue 14 (session 41): argmax stays 1.23-1.27x the copy L2-cold at B = 128 whatever its
#            loads in flight or split (H100); the floor of its own mix, reads only (dev/time_floor.py's
#            1 : 0 build, 4 / 8 / 16 groups a thread XORed into one word), beside the copy of the
#            same bytes (the bench's floor) at B = 32 / 128 x 128256 bf16, then argmax itself:
#            is a read-only stream slower L2-cold than a copy of the same bytes on this card?
#            The floor's GPU test (dev/tests/test_stream_floor.py) first.
#   lnwave  issue 11 (session 41): LayerNorm L2-cold at 256 tokens is Liger's worst lead (H100,
#            Qwen2.5 fp16 6.75 against 5.95 us): its weight and bias (8 groups a thread, not
#            in registers) are staged in shared memory only where the grid fits one block an SM
#            (the decode build); at 256 rows the grid is 2 blocks an SM but one wave (8 blocks
#            an SM resident). The decode build at 256 / 512 / 1024 / 4096 rows beside the
#            launch rule's build (dev/time_norm_rows.py --smem-any-grid): if it wins up to a
#            wave, the rule becomes "one wave" instead of "one block an SM".
#   cleanflush issue 14 (session 42): on an H100 a read-only stream of 32.8 MB took 19.17 us
#            L2-cold, a copy moving the same bytes 15.78, argmax B = 128 bf16 19.10 (at the
#            read-only floor). The cold timer's flush writes 256 MB, leaving L2 dirty: the same
#            floor, copy and argmax with a flush that reads (--flush read). Then B = 32, where
#            argmax is 1.31x the read-only floor L2-cold (10.43 against 7.94) and 2x hot (4.49
#            against 2.28): its clusters of 8 x 256 threads against 4 x 512, 2 x 1024, 8 x 512,
#            8 x 128, 4 x 256 (dev/time_argmax.py --cluster-split, new).
#   normfull issue 11 (session 39): the norm family's L2-cold times at 1 / 32 / 256 tokens with
#            full timers (three interleaved rounds; session 39 had one --fast round: another
#            impl ahead in 35 of 77 cases, mostly by under 0.4 us), fp16 and bf16, every
#            manifest workload of the five ops, with Liger carried (.whl).
#   rmsrt    issue 11 (session 46): RMSNorm's remaining hot gap to Liger at 1 / 32 rows of
#            3584 / 4096 (fp16 1 x 3584 1.69 against 1.64 us on the H100, after the
#            compile-time strides closed bf16's): the generic rows kernel at every threads per
#            row (time_norm_rows.py's sweep: is the rule's RT = pow2ceil(NG / 4) the best at
#            decode rows, where Liger runs 256 threads of 2 groups?), fp16 and bf16, beside
#            the shipped build and Liger; then the RMSNorm, rows-kernel and bench GPU tests
#            (the shipped TILEOPS_CONTIGUOUS builds, the cold timer's spin floor).
#   lnocc    issue 11 (session 47): LayerNorm's residency at many rows (4096 x 3584: 1.05 / 1.07x
#            the copy hot on the H100, where RMSNorm is at 0.99x): its 3584 build holds 56
#            registers (5 blocks of 224 an SM); with the weight and bias loaded where they
#            are used (TILEOPS_WB_REG_GROUPS=0) and TILEOPS_MIN_BLOCKS=6 it compiles to 40
#            without spills (7 blocks). Both beside the rule's build and Liger at 1 / 256 /
#            4096 rows, fp16 and bf16; the fused add + LayerNorm's likewise at 3584 / 4096
#            (6 blocks of 256 instead of 5). No tests: define changes of the shipped source.
#   lnchan   issue 11 (sessions 47-49): LayerNorm's two row sums as one Chan merge of equal
#            counts (shipped in session 49 with 5 blocks of 224 an SM at 3584: min_blocks'
#            register floor). Session 49 (H100, fp16, hot / cold us): 1 x 3584 1.99 / 4.54 ->
#            1.81 / 4.35 (Liger 1.84 / 4.38), 4096 x 3584 22.47 / 25.22 -> 21.95 / 24.67 (Liger
#            22.61 / 25.34); its GPU tests had run with the patch (session 48) but not with
#            the 5-block cap: the LayerNorm GPU tests (the rows kernels' and the ops') on the
#            shipped tree first, then the shipped build beside Liger at 3584 / 4096 / 8192,
#            fp16 and bf16 (on an H200: the H100's numbers only so far).
#   pdaclean issue 13 (session 43): B = 1 1K L2-cold with L2 left clean (--flush read, as
#            Nsight's cache control leaves it; issue 13's 8 us is quoted at locked clocks)
#            beside the bench's dirty flush.
#   pda70    issue 13 (session 50): Llama-3-70B TP4 at B = 32 (64 (sequence, KV head) pairs)
#            is paged decode's widest loss to SDPA on K/V gathered (H100, fp16: 1K 12.26 /
#            27.20 us hot / cold against 11.15 / 25.54; 4K 52.41 / 65.31 against 50.46 /
#            62.94, 0.74 of the copy's bandwidth cold, where Llama-3-8B's B = 32 4K is at
#            0.97): the plan against forced splits (chunks a CTA, one or two chunk groups),
#            the merge kernel against the cluster's merge, then each case's kernels one by
#            one (torch.profiler): is it the split, the merge, or the short CTAs?
#   clusterfloor issue 14 (session 43): the read-only floor (dev/time_floor.py) launched in
#            clusters of 8 with a release cluster barrier before its stores (argmax's B = 32
#            shape: 8.2 MB over ~256 CTAs of 256 threads) beside the plain floor and the copy:
#            whether a cluster launch and its barrier are argmax's 1.8x-the-copy hot cost at
#            B = 32 (the barrier's membar alone was not: smp_async_gather, session 43).
#   measure  no patch: the H100's measurements again on the H200, by priority. Nsight
#            Compute on paged decode at B = 1 1K (issue 13's 8 us; $OUT/ncu.tar.gz; 8.83
#            on the H100, 8.35 on the H200 in session 26); GeLU(erf)-and-mul at 4096 tokens
#            with full timers (0.99-1.00x the copy on the H100); the README's RoPE and
#            softmax rows (dev/readme_bench.sh; $OUT/readme.tar.gz; RoPE 1.03-1.05x the
#            copy at 4096 tokens on the H100).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export OUT=${OUT:-/tmp/tileops-out}   # ncu_run.sh and readme_bench.sh write there too
mkdir -p "$OUT"
BUDGET=${NEXT_SECONDS:-480}

# the specs each plan times (--patches of dev/time_softmax.py and dev/time_gated.py)
SOFTMAX_SPECS="smx_ablate_noexch.patch"
# the temperature's division before session 34 (div.rn an element)
# (lost and deleted: smx_tregs.patch in session 35; smx_regs3.patch, the registers build at
# 3 CTAs an SM at 152064, 1.02-1.04x the op's time at B >= 128, and smx_zkeep.patch, z
# kept through pass 3, 0.98x with float32 logits and a temperature but 1.05x bf16 -> bf16,
# in session 36)
TSOFTMAX_SPECS="smx_tdiv_rn.patch"
GATED_SPECS="gact_ablate_noact.patch"   # the no-activation ablation (dev/time_gated.py --patches), for a later plan
# what a plan applies before its tests, in order, a call to dev/apply_patch.py each (its
# tests after each call)
NORM_APPLY=""   # norm_rt8_rows16.patch shipped in session 34
PYTEST="python3 -m pytest -q -p no:cacheprovider"
SOFTMAX_TESTS="$PYTEST tests/gpu/test_gpu_sampling.py -k 'softmax or same_bits_whatever or captures_in_a_cuda_graph or manifest_batches'"
GATED_TESTS="$PYTEST tests/gpu/test_gpu_activation.py"
NORM_TESTS="$PYTEST tests/gpu/test_gpu_rms_norm.py"

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
    time_softmax softmax_op 200 "$SOFTMAX_SPECS" --vocabs 128256,152064 --rounds 2
    time_softmax softmax_op_temp 100 "$SOFTMAX_SPECS" --temperature --vocabs 128256
    time_softmax softmax_op16 80 "$SOFTMAX_SPECS" --out-dtype same --vocabs 128256
}
tsoftmax_time() {   # issue 14: the divisions (sessions 34, 36), the widest gap first
    time_softmax tsoftmax_t16 100 "$TSOFTMAX_SPECS" --temperature --out-dtype same --vocabs 128256
    # logits 90 % -inf (as a top-k / top-p mask leaves them): e = 0 in most octets
    time_softmax tsoftmax_mask 100 "$TSOFTMAX_SPECS" --temperature --masked 0.9 --vocabs 128256
    time_softmax tsoftmax_t 240 "$TSOFTMAX_SPECS" --temperature --vocabs 128256,152064 --rounds 2
    # float32 logits: the staged build with or without a temperature
    time_softmax tsoftmax_f32 100 "$TSOFTMAX_SPECS" --temperature --dtypes float32 --vocabs 128256
}
tsoftmax_test() { softmax_test; }
gated_time() {   # fp16 (bf16's times tracked fp16's in session 29): 128 against 256 threads a block
    local op
    for op in silu_and_mul gelu_tanh_and_mul gelu_and_mul; do
        run "gated_$op" 100 bash -c "cd dev && python3 time_gated.py --op $op --dtype float16 \
            --rows 32,64,128,256,1024 --ns 14336,28672 --unrolls 1 --threads 128,256 --grids full \
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
softmax_test() { run softmax_tests 150 bash -c "$SOFTMAX_TESTS"; }
gated_test() { run gated_tests 100 bash -c "$GATED_TESTS"; }
measure_time() {   # by priority: what the issues' targets need first, the README's rows last
    run ncu_pda1 150 env NCU_CASES='pda1:pda --B 1 --ctx 1024' bash dev/probes/ncu_run.sh
    run gelu_4096 150 python3 -m tileops bench --device cuda --op GeluAndMulFwdOp --workloads T=4096 \
        --dtypes float16,bfloat16 --compile dynamic --out "$OUT/gelu_4096.json" --no-plot
    run readme_rows 150 env README_OPS='^(Rope|Softmax)' README_SECONDS_PER_OP=70 bash dev/readme_bench.sh
}
measure_test() { :; }   # nothing applied
floor_time() {
    run time_floor 100 bash -c "cd dev && python3 time_floor.py --out $OUT/time_floor.json"
    time_softmax softmax_floor 150 "$SOFTMAX_SPECS" --vocabs 128256,152064 --floor --rounds 2
    time_softmax softmax_floor16 80 "$SOFTMAX_SPECS" --vocabs 128256 --floor --out-dtype same
}
floor_test() { run floor_tests 100 bash -c "$PYTEST dev/tests/test_stream_floor.py"; }
NORM_OPS=${NORM_OPS:-"RMSNormFwdOp LayerNormFwdOp GemmaRMSNormFwdOp FusedAddRMSNormFwdOp FusedAddLayerNormFwdOp"}   # normfull: some of them by the environment
normfull_time() {
    local op
    for op in $NORM_OPS; do
        run "normfull_$op" "$([ "$op" = RMSNormFwdOp ] && echo 150 || echo 80)" python3 -m tileops bench --device cuda --op "$op" --workloads 't=1],t=32],t=256]' \
            --dtypes float16,bfloat16 --compile dynamic --no-plot --out "$OUT/normfull_$op.json"
    done
}
normfull_test() { :; }   # nothing applied
LNOCC_SPECS="shipped@-DTILEOPS_WB_REG_GROUPS=0,shipped@-DTILEOPS_WB_REG_GROUPS=0@-DTILEOPS_MIN_BLOCKS=6"
lnocc_time() {
    local dt
    for dt in float16 bfloat16; do
        run "lnocc_ln_$dt" 100 bash -c "cd dev && python3 time_norm_rows.py --dtype $dt --ns 3584 --rows 1,256,4096 \
            --rt-op layer_norm --no-sweep --liger --patches $LNOCC_SPECS --out $OUT/lnocc_ln_$dt.json"
    done
    run lnocc_faln 100 bash -c "cd dev && python3 time_norm_rows.py --dtype float16 --ns 3584,4096 --rows 256,4096 \
        --rt-op fused_add_layer_norm --no-sweep --patches ${LNOCC_SPECS#*,} --out $OUT/lnocc_faln.json"
}
lnocc_test() { :; }   # nothing applied
lnchan_time() {
    local dt
    for dt in float16 bfloat16; do
        run "lnchan_ln_$dt" 100 bash -c "cd dev && python3 time_norm_rows.py --dtype $dt --ns 3584,4096,8192 \
            --rows 1,32,256,4096 --rt-op layer_norm --no-sweep --liger --out $OUT/lnchan_ln_$dt.json"
    done
}
lnchan_test() {   # nothing applied: the shipped merge's tests
    run lnchan_tests 150 bash -c "$PYTEST tests/gpu/test_gpu_norm_rows.py tests/gpu/test_gpu_ops.py -k 'LayerNorm or layer_norm'"
}
pdafull_time() {
    local dt=${PDA_DTYPE:-float16}
    run "pdafull_$dt" 470 python3 -m tileops bench --device cuda --op PagedDecodeAttentionFwdOp \
        --dtypes "$dt" --impls tileops,sdpa_gathered,copy --no-plot --out "$OUT/pdafull_$dt.json"
}
pdafull_test() { :; }   # nothing applied
PDA_PROF_CASES="70B:1:32768:64,8B:1:32768:16,Qwen:1:32768:16,8B:1:4096:16"
pdaprof_time() {   # the B = 1 32K cases' kernels one by one: the main kernel against the merge of 32-128 partials
    run pdaprof 150 python3 dev/time_paged_decode.py --cases "$PDA_PROF_CASES" --profile --out "$OUT/pdaprof.json"
}
pdaprof_test() { :; }   # nothing applied
PDA70_CASES="70B:32:1024,70B:32:4096,70B:32:1024:64,70B:32:4096:64"
pda70_time() {
    run pda70_sweep 200 python3 dev/time_paged_decode.py --cases "$PDA70_CASES" \
        --sweep 1:1,2:1,4:1,8:1,16:1,1:2,2:2,4:2,8:2 --cluster-ab --out "$OUT/pda70_sweep.json"
    run pda70_prof 90 python3 dev/time_paged_decode.py --cases 70B:32:1024,70B:32:4096 --profile \
        --out "$OUT/pda70_prof.json"
}
pda70_test() { :; }   # nothing applied
pdaclean_time() {
    run pdaclean 90 python3 dev/time_paged_decode.py --cases 8B:1:1024,8B:1:1024:64,Qwen:1:1024,70B:1:1024 \
        --flush read --out "$OUT/pdaclean_read.json"
    run pdaclean_write 50 python3 dev/time_paged_decode.py --cases 8B:1:1024,Qwen:1:1024 --out "$OUT/pdaclean_write.json"
}
pdaclean_test() { :; }   # nothing applied
clusterfloor_time() {
    run clusterfloor_test 60 bash -c "$PYTEST dev/tests/test_stream_floor.py"
    run clusterfloor 150 bash -c "cd dev && python3 time_floor.py --rounds 3 --cluster 8 --out $OUT/clusterfloor.json \
        --cases 8208384:0,32833536:0"
}
clusterfloor_test() { :; }   # nothing applied
readfloor_time() {
    run readfloor_test 60 bash -c "$PYTEST dev/tests/test_stream_floor.py"
    run readfloor 120 bash -c "cd dev && python3 time_floor.py --rounds 3 --out $OUT/readfloor.json --cases \
        8208384:0,32833536:0,16416768:16416768"
    run readfloor_argmax 60 python3 dev/time_argmax.py --quick --out "$OUT/readfloor_argmax.json"
}
readfloor_test() { :; }   # nothing applied
cleanflush_time() {
    run cleanflush 120 bash -c "cd dev && python3 time_floor.py --rounds 3 --flush read --out $OUT/cleanflush.json \
        --cases 8208384:0,32833536:0,16416768:16416768"
    run cleanflush_argmax 60 python3 dev/time_argmax.py --quick --flush read --out "$OUT/cleanflush_argmax.json"
    local cs
    for cs in 4:512 2:1024 8:512 8:128 4:256; do
        run "argmax_cs${cs/:/x}" 50 python3 dev/time_argmax.py --quick --cluster-split $cs \
            --out "$OUT/argmax_cs${cs/:/x}.json"
    done
}
cleanflush_test() { :; }   # nothing applied
lnwave_time() {
    run lnwave 200 bash -c "cd dev && python3 time_norm_rows.py --ns 3584,4096,8192 --rows 256,512,1024,4096 \
        --rt-op layer_norm --no-sweep --smem-any-grid --out $OUT/lnwave.json"
}
lnwave_test() { :; }   # nothing applied
placement_time() { run norm_placement 150 python3 dev/probes/norm_inputs_ab.py --rounds 3; }
placement_test() { :; }   # nothing applied
HARNESS_CASES="4096x4096,4096x32x128"   # RMSNorm's 67 MB cases: Llama-3-8B 4096 tokens, QK-norm 32 heads
COPY_SIZES="33554432,33554448,33554560,33554944,33555456,33556480,33558528,33562624,33619968"   # 32 MiB + 0 / 16 / 128 / 512 / 1 Ki / 2 Ki / 4 Ki / 8 Ki / 64 Ki
harness_time() {
    local args="--device cuda --op RMSNormFwdOp --workloads $HARNESS_CASES --dtypes float16 --no-plot"
    run bench_readme 100 python3 -m tileops bench $args --fast --compile dynamic --out "$OUT/bench_readme.json"
    run bench_nocompile 60 python3 -m tileops bench $args --fast --impls tileops,liger,copy --out "$OUT/bench_nocompile.json"
    run bench_full 120 python3 -m tileops bench $args --impls tileops,liger,copy --out "$OUT/bench_full.json"
    run copy_sizes 100 bash -c "cd dev && python3 time_floor.py --rounds 2 --out $OUT/copy_sizes.json --cases \
        $(echo $COPY_SIZES | sed 's/\([0-9]*\)/\1:\1/g')"
}
harness_test() { :; }   # nothing applied
RMSRT_ARGS="--ns 3584,4096 --rows 1,32,256 --liger"
rmsrt_time() {
    run rmsrt_fp16 150 bash -c "cd dev && python3 time_norm_rows.py --dtype float16 $RMSRT_ARGS --out $OUT/rmsrt_fp16.json"
    run rmsrt_bf16 150 bash -c "cd dev && python3 time_norm_rows.py --dtype bfloat16 $RMSRT_ARGS --out $OUT/rmsrt_bf16.json"
}
rmsrt_test() {   # nothing applied: the shipped change's tests
    run rmsrt_tests 150 bash -c "$PYTEST tests/gpu/test_gpu_rms_norm.py tests/gpu/test_gpu_norm_rows.py tests/gpu/test_gpu_bench.py"
}
norm_time() {   # RMSNorm's launch shapes at QK-norm's rows of 128 (the rule's 4 threads a row against 8, 16)
    run sweep_qknorm 130 python3 dev/sweep_norm.py --mode shapes --only 131072x128,32768x128,32x128,8x128 \
        --out "$OUT/sweep_qknorm.json"
}
norm_test() { apply_and_test norm "$NORM_APPLY" "$NORM_TESTS" && run norm_tests 150 bash -c "$NORM_TESTS"; }

plans=("$@")
[ ${#plans[@]} -eq 0 ] && plans=(softmax gated norm)
for p in "${plans[@]}"; do
    declare -F "${p}_time" >/dev/null ||
        { echo "next_run: no plan '$p' ($(declare -F | sed -n 's/.* \(.*\)_time$/\1/p' | paste -sd ' '))"; exit 2; }
done
if [ -n "${NEXT_TESTS_FIRST:-}" ]; then   # a change not yet run on a GPU: its tests before any timing
    for p in "${plans[@]}"; do "${p}_test"; done
    for p in "${plans[@]}"; do "${p}_time"; done
else
    for p in "${plans[@]}"; do "${p}_time"; done
    for p in "${plans[@]}"; do "${p}_test"; done
fi
echo; echo "next_run: done in ${SECONDS} s"
