"""The CUDA launch rules of the norm family's row ops (src/tileops/kernels/norm/cuda_rows.py)
obey the constraints documented at the top of csrc/ops/norm/norm_rows.cuh, and every kind
of specialisation they produce compiles with nvcc (sm_90a, no GPU needed) without
local-memory spills, from the source file and from the text the runtime hands NVRTC (its
includes spliced in). The compile checks are skipped where nvcc is not installed."""
import os
import re
import shutil
import subprocess

import pytest

from tileops import runtime
from tileops.kernels.norm import cuda_rows as R

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
SM_COUNT = 132   # H200
NS = (1, 7, 100, 1000, 4095, 4096, 4097, 8192, 12345, 16384, 16385, 32768, 32769, 40000, 131072)


def _cases(ns):
    """(op, dtype code, n, has_weight, has_bias, vec) for the vectors widths a call can get
    (vec_for: the vector path only where rows start 16-byte aligned)."""
    out = []
    for op in R.ops():
        for dt in (0, 1, 2):
            for n in ns:
                for w, b in R.weight_bias_choices(op):
                    for vec in sorted({R.vec_for(dt, n, False), R.vec_for(dt, n, True)}):
                        out.append((op, dt, n, w, b, vec))
    return out


@pytest.mark.parametrize("op", R.ops())
def test_launch_shapes_obey_the_kernel_constraints(op):
    for case in _cases(NS):
        if case[0] == op:
            _check_shape(*case)


def _check_shape(op, dt, n, w, b, vec):
    source, kernel, opts, threads, rpb, shared, cap = R.specialisation(op, dt, n, w, b, vec, SM_COUNT)
    d = dict(o[2:].split("=") for o in opts)
    elem = 4 if dt == 0 else 2
    g = 16 // elem
    ng = -(-n // g)
    assert source == f"norm/{op}.cu" and os.path.exists(os.path.join(ROOT, "csrc", "ops", source))
    assert 32 <= threads <= 1024 and threads % 32 == 0 and int(d["TILEOPS_THREADS"]) == threads
    assert (int(d["TILEOPS_DTYPE"]), int(d["TILEOPS_N"]), int(d["TILEOPS_VEC"])) == (dt, n, vec)
    assert (int(d["TILEOPS_HAS_WEIGHT"]), int(d["TILEOPS_HAS_BIAS"])) == (int(w), int(b))
    assert shared == 0
    if kernel == f"tileops_{op}":
        rt = int(d["TILEOPS_ROW_THREADS"])
        assert d["TILEOPS_KERNEL"] == "0" and threads % rt == 0 and rpb == threads // rt
        assert (rt <= 32 and rt & (rt - 1) == 0) or rt % 32 == 0
        assert -(-ng // rt) <= 4 and cap is None
        assert 1024 <= int(d["TILEOPS_MIN_BLOCKS"]) * threads <= 2048
        assert n <= (16384 if dt == 0 else 32768)
    else:
        assert kernel == f"tileops_{op}_long" and d["TILEOPS_KERNEL"] == "1"
        assert rpb == 1 and cap == SM_COUNT and threads == 1024
        assert n > (16384 if dt == 0 else 32768)


def test_the_rule_never_depends_on_the_row_count_and_is_the_shipped_one_for_rms_norm():
    """specialisation takes no row count, so a row alone and in a batch run one build; the
    plain RMSNorm's register shape is rms_norm.cu's launch rule (RT = pow2ceil(NG / 4), or
    the exact split where that leaves a partial share: 3584)."""
    from tileops.kernels.norm import rms_norm as K
    for dt, n, rt in ((1, 4096, 128), (1, 8192, 256), (0, 4096, 256), (2, 1, 1), (1, 32768, 1024),
                      (1, 3584, 224), (0, 3584, 224), (2, 2304, 96)):
        _, _, opts, threads, rpb, _, _ = R.specialisation("rms_norm_rows", dt, n, True, False, 1, SM_COUNT)
        assert f"-DTILEOPS_ROW_THREADS={rt}" in opts and threads == R.block_threads(rt) and rpb == threads // rt
        shipped, s_threads, s_rpb, _, _ = K.cuda_specialisation("tileops_rms_norm", dt, n, True, 1, SM_COUNT)
        same = ("-DTILEOPS_ROW_THREADS", "-DTILEOPS_THREADS", "-DTILEOPS_MIN_BLOCKS")
        assert {o for o in shipped if o.startswith(same)} == {o for o in opts if o.startswith(same)}, n
        assert (s_threads, s_rpb) == (threads, rpb)


@pytest.mark.parametrize("groups,vpt,rt", [(448, 4, 224), (896, 4, 224), (448, 2, 224), (288, 4, 96),
                                           (1792, 4, 448), (512, 4, 128), (500, 4, 128), (4, 4, 1), (17, 4, 8)])
def test_row_threads_splits_a_row_exactly_where_a_power_of_two_leaves_a_partial_share(groups, vpt, rt):
    """Powers of two where they divide the row's groups (or no multiple of 32 does); else
    the exact split with the most groups per thread over a multiple of 32 threads."""
    assert R.row_threads(groups, vpt) == rt
    assert R.row_threads(groups, vpt, exact=False) == min(1024, 1 << (-(-groups // vpt) - 1).bit_length())
    assert R.block_threads(rt) % rt == 0 and R.block_threads(rt) >= min(rt, 128)


def test_the_ops_with_a_residual_take_two_groups_per_thread_and_the_others_four():
    """The fused adds hold x's and the residual's groups: RT = pow2ceil(NG / 2) (the H200
    measurements in dev/NOTES.md, session 5); register rows still reach 4 groups per
    thread at 1024 threads, so the register kernel covers the same N for every op."""
    for op in R.ops():
        w, b = _heaviest(op)
        two = op.startswith("fused_add")
        assert R.has_residual(op) == two
        for dt, n, rt2, rt4 in ((1, 4096, 256, 128), (1, 8192, 512, 256), (1, 32768, 1024, 1024), (0, 16384, 1024, 1024)):
            _, kernel, opts, threads, rpb, _, _ = R.specialisation(op, dt, n, w, b, 1, SM_COUNT)
            assert kernel == f"tileops_{op}" and f"-DTILEOPS_ROW_THREADS={rt2 if two else rt4}" in opts, (op, n)
        # 3584 half: 448 groups; the fused adds keep 256 threads, the others split exactly
        _, _, opts, *_ = R.specialisation(op, 1, 3584, w, b, 8, SM_COUNT)
        assert f"-DTILEOPS_ROW_THREADS={256 if two else 224}" in opts, op


@pytest.mark.parametrize("args,match", [
    (("layer_norm", 1, 64, True, True, 4), "vec 4"),
    (("layer_norm", 3, 64, True, True, 1), "dtype code 3"),
    (("layer_norm", 1, 0, True, True, 1), "n >= 1")])
def test_what_no_source_can_build_is_refused_before_compiling(args, match):
    with pytest.raises(ValueError, match=match):
        R.specialisation(*args, SM_COUNT)


def test_vec_for_takes_the_vector_path_only_for_aligned_rows():
    assert R.vec_for(1, 4096, True) == 8 and R.vec_for(0, 4096, True) == 4 and R.vec_for(2, 8, True) == 8
    assert R.vec_for(1, 4096, False) == 1
    assert R.vec_for(1, 4100, True) == 1   # 8200-byte rows: row 1 starts off a 16-byte boundary
    assert R.vec_for(0, 4, True) == 4 and R.vec_for(0, 6, True) == 1


def _nvcc(tmp_path, opts, src):
    return subprocess.run([NVCC, "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", str(tmp_path / "k.cubin"),
                           src], capture_output=True, text=True, timeout=300)


def _heaviest(op):
    return R.weight_bias_choices(op)[0]


# each kind of build: scalar and vector paths, sub-warp / one-warp / multi-warp rows, the
# partial tail group, the largest register rows and the long-row kernel, with the most
# parameters the op takes (the most registers)
COMPILE_CASES = [c for c in _cases((1, 7, 2304, 3584, 4096, 12345, 16384, 32768, 40000)) if (c[3], c[4]) == _heaviest(c[0])]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op,dt,n,w,b,vec", COMPILE_CASES)
def test_specialisation_compiles_without_spills(tmp_path, op, dt, n, w, b, vec):
    source, kernel, opts, *_ = R.specialisation(op, dt, n, w, b, vec, SM_COUNT)
    r = _nvcc(tmp_path, opts, os.path.join(ROOT, "csrc", "ops", source))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert r.stderr.count("Compiling entry function") == 1   # TILEOPS_KERNEL names one kernel
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]


def test_a_decode_build_exists_only_where_weight_and_bias_miss_the_registers():
    """LayerNorm with weight and bias at 4 groups per thread stages them in shared memory
    for small grids; where the parameters sit in registers, on the scalar path and for the
    long-row kernel there is no second build."""
    def decode(op, dt, n, w, b, vec):
        _, _, opts, threads, rpb, _, _ = R.specialisation(op, dt, n, w, b, vec, SM_COUNT)
        return R.decode_options(opts, w, b, vec, rpb)
    assert decode("layer_norm", 1, 4096, True, True, 8)[-1] == "-DTILEOPS_WB_SMEM=1"
    assert decode("layer_norm", 1, 3584, True, True, 8) is None   # 224 threads of 2 groups: registers
    assert decode("layer_norm", 1, 6144, True, True, 8) is not None   # 768 groups: 256 threads of 3
    assert decode("layer_norm", 1, 4096, True, False, 8) is None       # 4 groups: registers
    assert decode("layer_norm", 1, 4096, True, True, 1) is None        # scalar path
    assert decode("layer_norm", 0, 8192, True, True, 4) is None        # 64 KB to stage
    assert decode("layer_norm", 1, 40000, True, True, 8) is None       # long-row kernel
    assert decode("rms_norm_rows", 1, 4096, True, False, 8) is None
    assert decode("fused_add_layer_norm", 1, 4096, True, True, 8) is None   # 2 groups per thread


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,n", [(1, 4096), (1, 6144), (2, 8192), (0, 4096), (1, 2048), (1, 256)])
def test_the_decode_build_compiles_without_spills_and_stages_in_shared_memory(tmp_path, dt, n):
    vec = R.vec_for(dt, n, True)
    source, kernel, opts, threads, rpb, *_ = R.specialisation("layer_norm", dt, n, True, True, vec, SM_COUNT)
    decode = R.decode_options(opts, True, True, vec, rpb)
    assert decode is not None
    r = _nvcc(tmp_path, decode, os.path.join(ROOT, "csrc", "ops", source))
    assert r.returncode == 0, r.stderr[-3000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]
    smem = max(int(v) for v in re.findall(r"(\d+) bytes smem", r.stderr))
    assert rpb * (n // vec) * 16 * 2 <= smem <= 32768 + 1024, r.stderr[-2000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op", R.ops())
def test_the_text_nvrtc_gets_compiles_alone(tmp_path, op):
    """runtime.source splices norm_rows.cuh and common/rows_common.cuh in: the text compiles from a
    folder with no other file in it (as NVRTC sees it: no include path)."""
    text = runtime.source(f"norm/{op}.cu")
    assert "#include" not in "".join(ln for ln in text.splitlines() if ln.lstrip().startswith("#"))
    src = tmp_path / "alone.cu"
    src.write_text(text)
    w, b = _heaviest(op)
    _, kernel, opts, *_ = R.specialisation(op, 1, 4096, w, b, 8, SM_COUNT)
    r = _nvcc(tmp_path, opts, str(src))
    assert r.returncode == 0 and f"'{kernel}'" in r.stderr, r.stderr[-3000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op,defines,match", [
    ("fused_add_rms_norm", {"TILEOPS_HAS_BIAS": 1}, "has no bias"),
    ("gemma_rms_norm", {"TILEOPS_HAS_WEIGHT": 0}, "needs its weight"),
    ("layer_norm", {"TILEOPS_KERNEL": 0, "TILEOPS_N": 40000, "TILEOPS_ROW_THREADS": 1024, "TILEOPS_THREADS": 1024},
     "too long for the register kernel"),
    ("layer_norm", {"TILEOPS_ROW_THREADS": 96}, "TILEOPS_ROW_THREADS must be"),
    ("layer_norm", {"TILEOPS_VEC": 2}, "TILEOPS_VEC must be")])
def test_a_build_the_source_cannot_serve_is_a_compile_error_naming_why(tmp_path, op, defines, match):
    base = {"TILEOPS_DTYPE": 1, "TILEOPS_N": 4096, "TILEOPS_HAS_WEIGHT": 1, "TILEOPS_HAS_BIAS": 0, "TILEOPS_VEC": 8,
            "TILEOPS_THREADS": 128, "TILEOPS_KERNEL": 0, "TILEOPS_ROW_THREADS": 128}
    base.update(defines)
    r = _nvcc(tmp_path, [f"-D{k}={v}" for k, v in base.items()], os.path.join(ROOT, "csrc", "ops", "norm", f"{op}.cu"))
    assert r.returncode != 0 and match in r.stderr, r.stderr[-2000:]


# Hugging Face's rounding (cast_before_weight): the ops whose manifest entry has the param
CAST_OPS = [op for op in R.ops() if True in R.cast_choices(op)]


def test_the_cast_builds_are_the_rms_ops_and_add_only_their_define():
    assert sorted(CAST_OPS) == ["fused_add_rms_norm", "rms_norm_rows"]
    for op in CAST_OPS:
        plain = R.specialisation(op, 1, 4096, True, False, 8, SM_COUNT)
        cast = R.specialisation(op, 1, 4096, True, False, 8, SM_COUNT, cast=True)
        assert cast[2] == plain[2] + ("-DTILEOPS_CAST_BEFORE_WEIGHT=1",) and cast[3:] == plain[3:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op", CAST_OPS)
@pytest.mark.parametrize("dt,n,vec", [(1, 4096, 8), (2, 4096, 8), (2, 7, 1), (0, 4096, 4), (1, 40000, 8)])
def test_cast_builds_compile_without_spills(tmp_path, op, dt, n, vec):
    source, kernel, opts, *_ = R.specialisation(op, dt, n, True, False, vec, SM_COUNT, cast=True)
    r = _nvcc(tmp_path, opts, os.path.join(ROOT, "csrc", "ops", source))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
def test_a_cast_build_of_a_norm_with_a_mean_is_a_compile_error(tmp_path):
    _, _, opts, *_ = R.specialisation("layer_norm", 1, 4096, True, False, 8, SM_COUNT)
    r = _nvcc(tmp_path, list(opts) + ["-DTILEOPS_CAST_BEFORE_WEIGHT=1"],
              os.path.join(ROOT, "csrc", "ops", "norm", "layer_norm.cu"))
    assert r.returncode != 0 and "TILEOPS_CAST_BEFORE_WEIGHT is RMSNorm's" in r.stderr, r.stderr[-2000:]
