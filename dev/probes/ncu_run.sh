#!/usr/bin/env bash
# Nsight Compute over dev/probes/ncu_cases.py (on the lent GPU, after the kit's build):
#   NCU_CASES="pda_b128:pda --B 128 --ctx 4096;softmax:softmax --B 128" bash dev/probes/ncu_run.sh
#   NCU_CASES="rms32:rmsnorm --T 32;liger32:ligerrms --T 32;rope4k:rope --T 4096" bash dev/probes/ncu_run.sh
#   NCU_CASES="gelu1:gated --T 1;gelu1c:gatedc --T 1" bash dev/probes/ncu_run.sh   (gatedc: torch.compile's Triton kernel)
#   NCU_CASES="pda8:pda --B 8 --ctx 4096;sdpa8:sdpa --B 8 --ctx 4096" bash dev/probes/ncu_run.sh   (sdpa: torch's SDPA on the gathered K / V)
# Each NAME:ARGS profiles one launch of the case's main kernel (--set full, clocks left alone)
# and writes NAME.details.txt (every section) and NAME.source.csv (per-SASS-instruction
# samples) into $OUT/ncu/, tarred into $OUT/ncu.tar.gz.
set -uo pipefail
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu"; exit 1; }
mkdir -p /tmp/ncu
declare -A KERNEL=([pda]='regex:paged_decode_attention$' [softmax]='regex:tileops_softmax$' [argmax]='regex:tileops_argmax$'
                   [rmsnorm]='regex:tileops_rms_norm' [rope]='regex:tileops_rope$' [ligerrms]='regex:rms_norm'
                   [pdaall]='regex:paged_decode_attention' [mask]='regex:tileops_top_k_top_p_mask$'
                   [gated]='regex:tileops_(gelu|silu|gelu_tanh)_and_mul$' [gatedc]='regex:^triton_'
                   [sdpa]='regex:(flash|fmha|attention|attn)')
# pdaall: the main kernel and the merge kernel of one call (a split call launches both)
# sdpa: torch's SDPA on the gathered K / V (pda's shapes; its kernels, whichever backend it takes)
declare -A SKIP=([pdaall]=6 [sdpa]=2) COUNT=([pdaall]=2 [sdpa]=2)
IFS=';' read -ra CASES <<<"${NCU_CASES}"
for spec in "${CASES[@]}"; do
    name=${spec%%:*}; args=${spec#*:}; kind=${args%% *}
    echo "--- ncu $name ($args)"
    pyargs=${args/#pdaall/pda}
    pyargs=${pyargs/#ligerrms/rmsnorm --liger}
    pyargs=${pyargs/#gatedc/gated --compiled}
    pyargs=${pyargs/#sdpa/pda --sdpa}
    timeout 150 "$NCU" --clock-control none --set full --import-source yes -k "${KERNEL[$kind]}" \
        --launch-skip "${SKIP[$kind]:-3}" --launch-count "${COUNT[$kind]:-1}" -f -o "/tmp/ncu/$name" \
        python3 dev/probes/ncu_cases.py $pyargs >"/tmp/ncu/$name.log" 2>&1 \
        || { echo "ncu failed"; tail -20 "/tmp/ncu/$name.log"; continue; }
    "$NCU" --import "/tmp/ncu/$name.ncu-rep" --page details --print-details all >"/tmp/ncu/$name.details.txt" 2>&1
    "$NCU" --import "/tmp/ncu/$name.ncu-rep" --page source --csv --print-source sass >"/tmp/ncu/$name.source.csv" 2>&1
    grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|Eligible" \
        "/tmp/ncu/$name.details.txt" | head -40
done
rm -f /tmp/ncu/*.ncu-rep
tar czf "$OUT/ncu.tar.gz" -C /tmp ncu
