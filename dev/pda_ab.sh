# Paged decode A/B on the shipped tree: time_paged_decode.py over one case list once a
# variant, one process each, in the order given, JSON under $OUT (pda_<label>.json); the
# shipped-tree case of dev/pda_variants.sh, which runs it.
#   PDA_AB    ';'-separated LABEL:ARGS, e.g. "new:;old:--states 4" (ARGS: time_paged_decode.py's)
#   PDA_CASES its --cases (default below: B = 1-32 at 1K-32K, Llama-3-8B and Qwen2.5-7B)
# Run through: KIT_STEPS=none KIT_DEV="bash dev/pda_ab.sh" bash tests/gpu/run_on_device.sh kit
set -u
steps=""
IFS=';' read -ra variants <<<"${PDA_AB:-shipped:}"
for v in "${variants[@]}"; do
    steps+="${steps:+;}. time ${v%%:*} ${v#*:}"
done
PDA_CASES=${PDA_CASES:-8B:1:1024,Qwen:1:1024,8B:1:4096,8B:4:4096,8B:8:4096,8B:16:4096,8B:32:4096,8B:8:1024,8B:1:32768,8B:8:32768} \
    PDA_TREES="" PDA_STEPS="$steps" bash "$(dirname "$0")/pda_variants.sh"
