#!/usr/bin/env bash
# tests/gpu/compile_check_kernels.sh: compile-checks the RMSNorm kernels of
# csrc/cuda/norm.cu with nvcc (no GPU needed) over dtype x weight x vector/scalar path x
# row lengths, for each of the three kernels, with the launch shapes the comment at the
# top of norm.cu recommends, and the register kernel as a 2-block cluster
# (TILEOPS_CLUSTER=2, sm_90a), and the TMA bulk-copy kernel tileops_rms_norm_bulk
# (TILEOPS_KERNEL=3, TILEOPS_STAGES 2..4, sm_90a). Fails (exit 1) when a specialisation does not compile, when
# ptxas reports a stack frame or spills (local memory) for any kernel, or when a
# specialisation that must be refused (register kernel past its maximum N, a bad
# TILEOPS_VEC, a bad cluster build, a bad bulk build) compiles. Prints one line per specialisation with its
# register count.
#
#   tests/gpu/compile_check_kernels.sh            # sm_90a (H100/H200), plus sm_80/sm_75 spot checks
#   NVCC=/path/to/nvcc JOBS=8 tests/gpu/compile_check_kernels.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

NVCC=${NVCC:-nvcc}
if ! command -v "$NVCC" >/dev/null 2>&1; then
    for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
        [ -x "$d/nvcc" ] && NVCC="$d/nvcc" && break
    done
fi
command -v "$NVCC" >/dev/null 2>&1 || { echo "nvcc not found (set NVCC)"; exit 1; }
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
SRC=csrc/cuda/norm.cu
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- the register kernel's recommended shape (mirrors norm.cu's comment) -----------------
# RT = min(1024, pow2ceil(ceil(NG / 4))); THREADS = max(RT, 128)
plan_rt() { # N G -> RT
    local ng=$(( ($1 + $2 - 1) / $2 )) rt=1
    local want=$(( (ng + 3) / 4 ))
    while [ "$rt" -lt "$want" ] && [ "$rt" -lt 1024 ]; do rt=$((rt * 2)); done
    echo "$rt"
}

# one line per specialisation: expect kernel dtype N weight vec threads rowthreads arch [cluster]
CONFIGS="$TMP/configs"
: >"$CONFIGS"
add() { echo "$*" >>"$CONFIGS"; }
for dtype in 0 1 2; do
    if [ "$dtype" = 0 ]; then G=4; else G=8; fi
    for w in 0 1; do
        for vec in 1 "$G"; do
            # tileops_rms_norm (registers)
            for n in 1 7 100 4095 4096 8192 16384 32768; do
                rt=$(plan_rt "$n" "$G"); t=$(( rt > 128 ? rt : 128 ))
                add ok 0 "$dtype" "$n" "$w" "$vec" "$t" "$rt" sm_90a
            done
            # other row-thread choices (sub-warp, one warp, several warps per block)
            add ok 0 "$dtype" 4096 "$w" "$vec" 256 256 sm_90a
            add ok 0 "$dtype" 4096 "$w" "$vec" 512 512 sm_90a
            add ok 0 "$dtype" 1000 "$w" "$vec" 256 32 sm_90a
            add ok 0 "$dtype" 33 "$w" "$vec" 128 8 sm_90a
            # tileops_rms_norm_on_chip (shared memory)
            for n in 1 7 4095 4096 8192 16384 32768 65536; do
                t=$(( n > 4096 * G ? 1024 : 512 ))
                add ok 1 "$dtype" "$n" "$w" "$vec" "$t" "$t" sm_90a
            done
            if [ "$dtype" = 0 ]; then maxn=58048; else maxn=116096; fi
            add ok 1 "$dtype" "$maxn" "$w" "$vec" 1024 1024 sm_90a
            # tileops_rms_norm_streaming (two passes)
            for n in 1 7 4095 4096 16384 65536 131072 1000003; do
                add ok 2 "$dtype" "$n" "$w" "$vec" 1024 1024 sm_90a
            done
            add ok 2 "$dtype" 4096 "$w" "$vec" 256 256 sm_90a
        done
        # older architectures: the fallbacks (no cp.async / cvt.rn.bf16x2 on sm_75)
        for arch in sm_80 sm_75; do
            add ok 0 "$dtype" 4096 "$w" "$G" 256 128 "$arch"
            add ok 1 "$dtype" 4099 "$w" "$G" 512 512 "$arch"
            add ok 2 "$dtype" 65536 "$w" "$G" 1024 1024 "$arch"
        done
        # all three kernels in one program (TILEOPS_KERNEL unset)
        add ok all "$dtype" 4096 "$w" "$G" 256 128 sm_90a
    done
    # the register kernel as a 2-block cluster: rowthreads = threads, 2 x threads per row;
    # the per-block limit on groups per thread (16 up to 256 threads, else 8 / 4)
    for w in 0 1; do
        for vec in 1 "$G"; do
            for n in 4096 8192 16384 12345; do
                for t in 128 256 512; do
                    vpt=$(( ( (n + G - 1) / G + 2 * t - 1) / (2 * t) ))
                    max=$(( t <= 256 ? 16 : (G == 4 ? 8 : 4) ))
                    [ "$vpt" -le "$max" ] && add ok 0 "$dtype" "$n" "$w" "$vec" "$t" "$t" sm_90a 2
                done
            done
        done
    done
    add ok 0 "$dtype" 8200 1 1 256 256 sm_90a 2          # odd N, scalar path
    add ok 0 "$dtype" 8200 1 "$G" 256 256 sm_90a 2       # odd N, vector path (tail group)
    add ok 0 "$dtype" 3000 1 "$G" 96 96 sm_90a 2         # 6 per-warp sums (3 per block)
    add ok 0 "$dtype" 4096 1 "$G" 128 128 sm_90a 2 -DTILEOPS_PREFETCH=1
    # small blocks holding 16 groups per thread (one or two warps per row)
    add ok 0 "$dtype" $(( 16 * 32 * G )) 1 "$G" 32 32 sm_90a
    add ok 0 "$dtype" $(( 16 * 32 * G )) 0 "$G" 128 32 sm_90a
    add ok 0 "$dtype" $(( 16 * 64 * G )) 1 "$G" 256 64 sm_90a
    add ok 0 "$dtype" $(( 16 * 32 * G - 1 )) 1 1 64 32 sm_90a
    # must be refused at compile time
    if [ "$dtype" = 0 ]; then big=32772; else big=32776; fi
    add fail 0 "$dtype" "$big" 1 "$G" 1024 1024 sm_90a   # past the register kernel's max N
    add fail 0 "$dtype" 4096 1 2 256 128 sm_90a          # TILEOPS_VEC neither 1 nor G
    add fail 0 "$dtype" 4096 1 "$G" 256 96 sm_90a        # ROW_THREADS does not divide THREADS
done
# the TMA bulk-copy kernel (TILEOPS_KERNEL=3): vector path, whole 16-byte groups per row,
# STAGES row buffers within 227 KiB of shared memory (232448 bytes, with the mbarriers and
# the reduction scratch)
for dtype in 0 1 2; do
    if [ "$dtype" = 0 ]; then G=4; E=4; ns="4096 8192 16384"; else G=8; E=2; ns="4096 8192 16384 32768"; fi
    for n in $ns; do
        for w in 0 1; do
            for t in 256 512 1024; do
                for s in 2 3 4; do
                    [ $(( s * n * E + 8 * s + t / 4 )) -le 232448 ] && \
                        add ok 3 "$dtype" "$n" "$w" "$G" "$t" "$t" sm_90a 1 "-DTILEOPS_STAGES=$s"
                done
            done
        done
    done
done
add ok 3 1 4104 1 8 128 128 sm_90a 1 -DTILEOPS_STAGES=2     # NG = 513: a partial last step
add ok 3 0 3000 1 4 96 96 sm_90a 1 -DTILEOPS_STAGES=3       # 3 per-warp sums
# bulk builds that must be refused
add fail 3 1 8192 1 1 256 256 sm_90a 1 -DTILEOPS_STAGES=2     # scalar path
add fail 3 1 4100 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=2     # 8200-byte rows: a partial group
add fail 3 0 4097 1 4 256 256 sm_90a 1 -DTILEOPS_STAGES=2     # a partial group (float32)
add fail 3 1 8192 1 8 256 256 sm_80 1 -DTILEOPS_STAGES=2      # no bulk copies before sm_90
add fail 3 1 8192 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=5     # STAGES neither 2, 3 nor 4
add fail 3 1 8192 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=1
add fail 3 1 32768 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=4    # 256 KiB of row buffers
add fail 3 1 8192 1 8 256 256 sm_90a 2 -DTILEOPS_STAGES=2     # not with TILEOPS_CLUSTER=2
# cluster builds that must be refused
add fail 0 1 8192 1 8 256 128 sm_90a 2      # ROW_THREADS != THREADS
add fail 0 1 16384 1 8 1024 1024 sm_90a 2   # more than 32 warps per row
add fail 1 1 8192 1 8 256 256 sm_90a 2      # not the register kernel
add fail all 1 8192 1 8 256 256 sm_90a 2    # TILEOPS_KERNEL unset
add fail 0 1 8192 1 8 256 256 sm_80 2       # no clusters before sm_90
add fail 0 1 8192 1 8 256 256 sm_90a 3      # TILEOPS_CLUSTER neither 1 nor 2
add fail 0 1 32776 1 8 512 512 sm_90a 2     # 5 groups per thread in a 512-thread block

check_one() { # expect kernel dtype n w vec t rt arch [cluster [extra define]]
    local expect=$1 k=$2 dtype=$3 n=$4 w=$5 vec=$6 t=$7 rt=$8 arch=$9 cl=${10:-1} extra=${11:-}
    local tag="$k-$dtype-$n-$w-$vec-$t-$rt-$arch-$cl${extra//[^A-Z0-9]/}"
    local log="$TMP/$tag.log" kdef="" lrt=$rt
    [ "$k" != all ] && kdef="-DTILEOPS_KERNEL=$k"
    if [ "$cl" != 1 ]; then
        kdef="$kdef -DTILEOPS_CLUSTER=$cl"
        lrt=$(( 2 * rt ))   # a row's threads: both blocks of the cluster
    fi
    kdef="$kdef $extra"
    # the register kernel, at the rule's <= 4 groups per thread, is launched with the
    # rule's register cap (longer per-thread rows are checked uncapped)
    local g=$(( dtype == 0 ? 4 : 8 ))
    if [ "$k" = 0 ] && [ $(( ( (n + g - 1) / g + lrt - 1) / lrt )) -le 4 ]; then
        kdef="$kdef -DTILEOPS_MIN_BLOCKS=$(( t >= 1024 ? 1 : 1024 / t ))"
    fi
    local rc=0
    "$NVCC" -cubin -arch="$arch" -Xptxas -v -diag-suppress 177 $kdef -DTILEOPS_DTYPE="$dtype" \
        -DTILEOPS_N="$n" -DTILEOPS_HAS_WEIGHT="$w" -DTILEOPS_VEC="$vec" -DTILEOPS_THREADS="$t" \
        -DTILEOPS_ROW_THREADS="$rt" -o "$TMP/$tag.cubin" "$SRC" >"$log" 2>&1 || rc=$?
    local desc
    desc=$(printf 'kernel=%-3s dtype=%s N=%-7s w=%s vec=%s threads=%-4s rt=%-4s %-6s' \
        "$k" "$dtype" "$n" "$w" "$vec" "$t" "$rt" "$arch")
    [ "$cl" != 1 ] && desc="$desc cluster=$cl"
    [ -n "$extra" ] && desc="$desc $extra"
    if [ "$expect" = fail ]; then
        if [ "$rc" -ne 0 ] && grep -q "#error\|error" "$log"; then
            echo "OK   $desc refused as expected"
        else
            echo "FAIL $desc compiled but must be refused"
        fi
        return 0
    fi
    if [ "$rc" -ne 0 ]; then
        echo "FAIL $desc nvcc failed:"
        sed 's/^/     /' "$log" | head -20
        return 0
    fi
    local nfun nclean regs
    nfun=$(grep -c "Function properties for" "$log" || true)
    nclean=$(grep -c "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" "$log" || true)
    regs=$(grep -o "Used [0-9]* registers" "$log" | awk '{print $2}' | paste -sd/ -)
    local want=1
    [ "$k" = all ] && want=3
    if [ "$nfun" -ne "$want" ]; then   # "all": the three kernels, never the bulk one
        echo "FAIL $desc expected $want kernel(s), ptxas compiled $nfun"
    elif [ "$nclean" -ne "$nfun" ]; then
        echo "FAIL $desc local memory used: $(grep -E 'stack frame' "$log" | tr -s ' ' | paste -sd';' -)"
    else
        echo "OK   $desc regs=$regs stack=0 spill=0"
    fi
}
export -f check_one
export NVCC SRC TMP

xargs -P "$JOBS" -L 1 bash -c 'check_one "$@"' _ <"$CONFIGS" | sort >"$TMP/results"
cat "$TMP/results"
total=$(wc -l <"$TMP/results")
failed=$(grep -c '^FAIL' "$TMP/results" || true)
echo "$((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
