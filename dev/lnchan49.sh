#!/usr/bin/env bash
# Session 49's first device call: LayerNorm 3584's Chan builds (chain, tree, each at the
# rule's TILEOPS_MIN_BLOCKS=4 and at 5) beside the rule and Liger, fp16 then bf16 (only
# 3584: 4096 / 8192 were level in session 48), then normfull's fused-add ops.
#   KIT_STEPS=tests TEST_PATHS=tests/gpu/test_gpu_norm_rows.py TEST_K=centres \
#   KIT_DEV="bash dev/lnchan49.sh" bash tests/gpu/run_on_device.sh kit     (carry .whl)
S="nr_chan_equal.patch,nr_chan_equal.patch+nr_chan_tree.patch,nr_chan_equal.patch@-DTILEOPS_MIN_BLOCKS=5,nr_chan_equal.patch+nr_chan_tree.patch@-DTILEOPS_MIN_BLOCKS=5"
for dt in ${LN_DTYPES:-float16 bfloat16}; do
    (cd dev && timeout 110 python3 time_norm_rows.py --dtype $dt --ns 3584 --rows 1,32,256,4096 --rt-op layer_norm \
        --no-sweep --liger --patches "$S" --out "$OUT/lnchan49_$dt.json") > "$OUT/lnchan49_$dt.log" 2>&1
    tail -30 "$OUT/lnchan49_$dt.log"
done
NEXT_SECONDS=${NORM_SECONDS:-200} NORM_OPS='FusedAddRMSNormFwdOp FusedAddLayerNormFwdOp' bash dev/next_run.sh normfull
