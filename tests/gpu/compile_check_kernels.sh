#!/usr/bin/env bash
# tests/gpu/compile_check_kernels.sh: compile-checks the norm kernels with nvcc (no GPU
# needed), each source from its place:
#   ship  csrc/ops/norm/rms_norm.cu (what the RMSNorm launch rules select): dtype x weight x
#         vector/scalar path x row lengths, for each of its three kernels, with the launch
#         shapes the comment at its top recommends, other row-thread choices, sm_80/sm_75
#         spot checks;
#   lab   dev/cuda/rms_norm_lab.cu (the experiments, built separately): the register kernel
#         as a 2-block cluster (TILEOPS_CLUSTER=2, sm_90a), prefetching, and the TMA
#         bulk-copy kernel tileops_rms_norm_bulk (TILEOPS_KERNEL=3, TILEOPS_STAGES 2..4);
#   rows  csrc/ops/norm/<op>.cu over norm_rows.cuh (layer_norm, fused_add_rms_norm,
#         fused_add_layer_norm, gemma_rms_norm, rms_norm_rows): every op x dtype x
#         weight/bias x vector width x row length, with the defines the launch rules of
#         src/tileops/kernels/norm/cuda_rows.py give (read from that file, by path: no
#         tileops import, no torch).
# Fails (exit 1) when a specialisation does not compile, when ptxas reports a stack frame or
# spills (local memory) for any kernel, or when a specialisation that must be refused
# (register kernel past its maximum N, a bad TILEOPS_VEC, a bad cluster build, a bad bulk
# build, an op's forbidden weight/bias) compiles. Prints one line per specialisation with
# its register count.
#
#   tests/gpu/compile_check_kernels.sh            # everything (sm_90a, plus sm_80/sm_75 spot checks)
#   tests/gpu/compile_check_kernels.sh ship lab   # some of the three parts
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
SHIP_SRC=csrc/ops/norm/rms_norm.cu
LAB_SRC=dev/cuda/rms_norm_lab.cu
PARTS=${*:-ship lab rows}
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
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

# one line per specialisation: expect source kernel dtype N weight vec threads rowthreads arch [cluster [define]]
CONFIGS="$TMP/configs"
: >"$CONFIGS"
add() { want ship && echo "$1 ship ${*:2}" >>"$CONFIGS"; return 0; }   # the shipped source
lab() { want lab && echo "$1 lab ${*:2}" >>"$CONFIGS"; return 0; }     # the lab's experiments
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
                    [ "$vpt" -le "$max" ] && lab ok 0 "$dtype" "$n" "$w" "$vec" "$t" "$t" sm_90a 2
                done
            done
        done
    done
    lab ok 0 "$dtype" 8200 1 1 256 256 sm_90a 2          # odd N, scalar path
    lab ok 0 "$dtype" 8200 1 "$G" 256 256 sm_90a 2       # odd N, vector path (tail group)
    lab ok 0 "$dtype" 3000 1 "$G" 96 96 sm_90a 2         # 6 per-warp sums (3 per block)
    lab ok 0 "$dtype" 4096 1 "$G" 128 128 sm_90a 2 -DTILEOPS_PREFETCH=1
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
                        lab ok 3 "$dtype" "$n" "$w" "$G" "$t" "$t" sm_90a 1 "-DTILEOPS_STAGES=$s"
                done
            done
        done
    done
done
lab ok 3 1 4104 1 8 128 128 sm_90a 1 -DTILEOPS_STAGES=2     # NG = 513: a partial last step
lab ok 3 0 3000 1 4 96 96 sm_90a 1 -DTILEOPS_STAGES=3       # 3 per-warp sums
# bulk builds that must be refused
lab fail 3 1 8192 1 1 256 256 sm_90a 1 -DTILEOPS_STAGES=2     # scalar path
lab fail 3 1 4100 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=2     # 8200-byte rows: a partial group
lab fail 3 0 4097 1 4 256 256 sm_90a 1 -DTILEOPS_STAGES=2     # a partial group (float32)
lab fail 3 1 8192 1 8 256 256 sm_80 1 -DTILEOPS_STAGES=2      # no bulk copies before sm_90
lab fail 3 1 8192 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=5     # STAGES neither 2, 3 nor 4
lab fail 3 1 8192 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=1
lab fail 3 1 32768 1 8 256 256 sm_90a 1 -DTILEOPS_STAGES=4    # 256 KiB of row buffers
lab fail 3 1 8192 1 8 256 256 sm_90a 2 -DTILEOPS_STAGES=2     # not with TILEOPS_CLUSTER=2
# cluster builds that must be refused
lab fail 0 1 8192 1 8 256 128 sm_90a 2      # ROW_THREADS != THREADS
lab fail 0 1 16384 1 8 1024 1024 sm_90a 2   # more than 32 warps per row
lab fail 1 1 8192 1 8 256 256 sm_90a 2      # not the register kernel
lab fail all 1 8192 1 8 256 256 sm_90a 2    # TILEOPS_KERNEL unset
lab fail 0 1 8192 1 8 256 256 sm_80 2       # no clusters before sm_90
lab fail 0 1 8192 1 8 256 256 sm_90a 3      # TILEOPS_CLUSTER neither 1 nor 2
lab fail 0 1 32776 1 8 512 512 sm_90a 2     # 5 groups per thread in a 512-thread block

# ---- the row ops: the launch rules' own defines (cuda_rows.py, loaded by path) -------------
# one line per specialisation: expect rows <source> <kernel> <defines...>
if want rows; then
    python3 - >>"$CONFIGS" <<'PY'
import importlib.util
spec = importlib.util.spec_from_file_location("cuda_rows", "src/tileops/kernels/norm/cuda_rows.py")
R = importlib.util.module_from_spec(spec)
spec.loader.exec_module(R)
NS = (1, 7, 100, 1000, 4095, 4096, 4097, 12345, 16384, 16385, 32768, 40000, 131072)
for op in R.OPS:
    for dt in (0, 1, 2):
        for n in NS:
            for w, b in R.weight_bias_choices(op):
                for vec in sorted({R.vec_for(dt, n, False), R.vec_for(dt, n, True)}):
                    src, kernel, opts, *_ = R.specialisation(op, dt, n, w, b, vec, 132)
                    print("ok rows", "csrc/ops/" + src, kernel, *opts)
base = "-DTILEOPS_DTYPE=1 -DTILEOPS_N=4096 -DTILEOPS_VEC=8 -DTILEOPS_THREADS=128 -DTILEOPS_ROW_THREADS=128"
print("fail rows csrc/ops/norm/fused_add_rms_norm.cu bias -DTILEOPS_KERNEL=0", base, "-DTILEOPS_HAS_WEIGHT=1 -DTILEOPS_HAS_BIAS=1")
print("fail rows csrc/ops/norm/gemma_rms_norm.cu no-weight -DTILEOPS_KERNEL=0", base, "-DTILEOPS_HAS_WEIGHT=0 -DTILEOPS_HAS_BIAS=0")
print("fail rows csrc/ops/norm/layer_norm.cu too-long -DTILEOPS_KERNEL=0 -DTILEOPS_DTYPE=1 -DTILEOPS_N=40000 -DTILEOPS_VEC=8",
      "-DTILEOPS_THREADS=1024 -DTILEOPS_ROW_THREADS=1024 -DTILEOPS_HAS_WEIGHT=1 -DTILEOPS_HAS_BIAS=1")
print("fail rows csrc/ops/norm/layer_norm.cu row-threads -DTILEOPS_KERNEL=0 -DTILEOPS_DTYPE=1 -DTILEOPS_N=4096",
      "-DTILEOPS_VEC=8 -DTILEOPS_THREADS=128 -DTILEOPS_ROW_THREADS=96 -DTILEOPS_HAS_WEIGHT=1 -DTILEOPS_HAS_BIAS=1")
print("fail rows csrc/ops/norm/layer_norm.cu vec -DTILEOPS_KERNEL=1 -DTILEOPS_DTYPE=1 -DTILEOPS_N=4096 -DTILEOPS_VEC=2",
      "-DTILEOPS_THREADS=1024 -DTILEOPS_HAS_WEIGHT=1 -DTILEOPS_HAS_BIAS=1")
PY
fi

# the ptxas verdict of one compile: OK with the register counts, or FAIL with why
verdict() { # expect rc log want_kernels desc
    local expect=$1 rc=$2 log=$3 want=$4 desc=$5
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
    if [ "$nfun" -ne "$want" ]; then
        echo "FAIL $desc expected $want kernel(s), ptxas compiled $nfun"
    elif [ "$nclean" -ne "$nfun" ]; then
        echo "FAIL $desc local memory used: $(grep -E 'stack frame' "$log" | tr -s ' ' | paste -sd';' -)"
    else
        echo "OK   $desc regs=$regs stack=0 spill=0"
    fi
}

check_rows() { # expect rows source kernel defines...
    local expect=$1 src=$3 kernel=$4
    shift 4
    local tag log rc=0
    tag=rows-$(echo "$src $kernel $*" | md5sum | cut -c1-16)
    log="$TMP/$tag.log"
    "$NVCC" -cubin -arch=sm_90a -Xptxas -v "$@" -o "$TMP/$tag.cubin" "$src" >"$log" 2>&1 || rc=$?
    verdict "$expect" "$rc" "$log" 1 "rows $kernel $(echo "$*" | sed 's/-DTILEOPS_//g')"
}

check_one() { # expect source kernel dtype n w vec t rt arch [cluster [extra define]]
    local expect=$1 src=$2
    shift 2
    local k=$1 dtype=$2 n=$3 w=$4 vec=$5 t=$6 rt=$7 arch=$8 cl=${9:-1} extra=${10:-}
    local path=$SHIP_SRC
    [ "$src" = lab ] && path=$LAB_SRC
    local tag="$src-$k-$dtype-$n-$w-$vec-$t-$rt-$arch-$cl${extra//[^A-Z0-9]/}"
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
        -DTILEOPS_ROW_THREADS="$rt" -o "$TMP/$tag.cubin" "$path" >"$log" 2>&1 || rc=$?
    local desc
    desc=$(printf '%-4s kernel=%-3s dtype=%s N=%-7s w=%s vec=%s threads=%-4s rt=%-4s %-6s' \
        "$src" "$k" "$dtype" "$n" "$w" "$vec" "$t" "$rt" "$arch")
    [ "$cl" != 1 ] && desc="$desc cluster=$cl"
    [ -n "$extra" ] && desc="$desc $extra"
    # "all": the three kernels, never the bulk one
    verdict "$expect" "$rc" "$log" "$([ "$k" = all ] && echo 3 || echo 1)" "$desc"
}
dispatch() { if [ "$2" = rows ]; then check_rows "$@"; else check_one "$@"; fi; }
export -f verdict check_rows check_one dispatch
export NVCC SHIP_SRC LAB_SRC TMP

xargs -P "$JOBS" -L 1 bash -c 'dispatch "$@"' _ <"$CONFIGS" | sort >"$TMP/results"
cat "$TMP/results"
total=$(wc -l <"$TMP/results")
failed=$(grep -c '^FAIL' "$TMP/results" || true)
echo "$((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
