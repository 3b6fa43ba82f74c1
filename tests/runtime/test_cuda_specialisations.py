"""Every CUDA specialisation the RMSNorm selection rules can produce compiles (nvcc, sm_90a,
no GPU needed) without local-memory spills, and its launch shape obeys the constraints
documented at the top of csrc/ops/norm/rms_norm.cu; the lab's tuning defines
(dev/cuda/rms_norm_lab.cu) compile too. Skipped where nvcc is not installed."""
import os
import re
import shutil
import subprocess

import pytest
import torch

from tileops.kernels.base import KernelCall, TensorSpec
from tileops.kernels.norm import rms_norm as K
from tileops.norm import RMSNormFwdOp

H200 = {"sm_count": 132, "max_shared_per_block": 232448, "l2_bytes": 60 * 2**20, "arch": (9, 0)}
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SOURCE = os.path.join(ROOT, "csrc", "ops", "norm", "rms_norm.cu")
LAB_SOURCE = os.path.join(ROOT, "dev", "cuda", "rms_norm_lab.cu")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
CASES = [(dt, n, w, aligned) for dt in (torch.float32, torch.float16, torch.bfloat16)
         for n in (1, 7, 2304, 3584, 4095, 4096, 8192, 14336, 16384, 32768, 40000, 131072)
         for w in (True, False) for aligned in (True, False)]


def _specialisation(monkeypatch, dtype, n, with_weight, aligned):
    monkeypatch.setattr(K.runtime, "device_attributes", lambda index: H200)
    op = RMSNormFwdOp((n,))
    dev = torch.device("cuda", 0)
    spec = TensorSpec(dtype, dev)
    call = KernelCall(op_name="RMSNormFwdOp", device=dev, inputs={"x": spec, "weight": spec if with_weight else None},
                      outputs={"y": spec}, params=op.resolved_params(), aligned16=aligned, written=())
    kernel = op._kernels.select("rms_norm", call)
    b = kernel.entry_for(call)
    name, code, nn, has_w, vec = b.kernel_name, b.dtype, b.n, b.has_weight, b.vec
    return name, K.cuda_specialisation(name, code, nn, has_w, vec, H200["sm_count"])


@pytest.mark.parametrize("dtype,n,with_weight,aligned", CASES)
def test_launch_shape_obeys_the_kernel_constraints(monkeypatch, dtype, n, with_weight, aligned):
    name, (opts, threads, rpb, shared, cap) = _specialisation(monkeypatch, dtype, n, with_weight, aligned)
    assert 32 <= threads <= 1024 and threads % 32 == 0
    d = dict(o[2:].split("=") for o in opts)
    g = 16 // dtype.itemsize
    ng = -(-n // g)
    assert int(d["TILEOPS_VEC"]) in (1, g)
    if name == "tileops_rms_norm":
        rt = int(d["TILEOPS_ROW_THREADS"])
        assert threads % rt == 0 and rpb == threads // rt
        assert (rt <= 32 and rt & (rt - 1) == 0) or rt % 32 == 0
        assert -(-ng // rt) <= (16 if threads <= 256 else (8 if g == 4 else 4))
        # as many blocks as fit 1024 threads resident per SM: the register cap the H200 sweep
        # chose; an exact split's block (not a power of two) as many more as leave 56
        # registers a thread (224 threads: 5 blocks, not 4)
        fit, mb = max(1, 1024 // threads), int(d["TILEOPS_MIN_BLOCKS"])
        if threads & (threads - 1) == 0:
            assert mb == fit
        else:
            assert mb >= fit and mb * threads <= 2048 and 65536 // (mb * threads) >= 56
            assert mb == fit or 65536 // ((mb + 1) * threads) < 56
        assert rt & (rt - 1) == 0 or ng % rt == 0   # a power of two, or an exact split
    elif name == "tileops_rms_norm_on_chip":
        assert shared == ng * 16 and shared + threads // 4 <= H200["max_shared_per_block"]
    else:
        assert cap == H200["sm_count"] and shared == 0


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dtype,n,with_weight,aligned",
                         [c for c in CASES if c[1] in (7, 2304, 3584, 4096, 14336, 40000, 131072) and c[2]])
def test_specialisation_compiles_without_spills(monkeypatch, tmp_path, dtype, n, with_weight, aligned):
    name, (opts, *_rest) = _specialisation(monkeypatch, dtype, n, with_weight, aligned)
    r = subprocess.run([NVCC, "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o",
                        str(tmp_path / "k.cubin"), SOURCE], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    info = [ln for ln in r.stderr.splitlines() if name in ln or "spill" in ln]
    spills = [int(v) for v in re.findall(r"(\d+) bytes spill", r.stderr)]
    assert not any(spills), "\n".join(info)


# The tuning defines the lab (dev/cuda/rms_norm_lab.cu) accepts besides those the selection
# rules set (dev/sweep_norm.py --mode policies measures them): each value compiles, and an
# out-of-range value is a compile error naming the define.
KNOBS = [("TILEOPS_LD_POLICY", v) for v in range(7)] + [("TILEOPS_ST_POLICY", v) for v in range(4)] + \
        [("TILEOPS_PREFETCH", 1), ("TILEOPS_MIN_BLOCKS", 8)]
BASE_OPTS = ["-DTILEOPS_KERNEL=0", "-DTILEOPS_DTYPE=1", "-DTILEOPS_N=4096", "-DTILEOPS_HAS_WEIGHT=1",
             "-DTILEOPS_VEC=8", "-DTILEOPS_THREADS=128", "-DTILEOPS_ROW_THREADS=128"]


def _nvcc(tmp_path, opts):
    return subprocess.run([NVCC, "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o",
                           str(tmp_path / "k.cubin"), LAB_SOURCE], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("define,value", KNOBS)
def test_tuning_define_compiles_without_spills(tmp_path, define, value):
    r = _nvcc(tmp_path, BASE_OPTS + [f"-D{define}={value}"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes spill", r.stderr)), r.stderr[-2000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("define,value", [("TILEOPS_LD_POLICY", 7), ("TILEOPS_ST_POLICY", 4),
                                          ("TILEOPS_MIN_BLOCKS", 17)])
def test_out_of_range_tuning_define_is_a_compile_error_naming_it(tmp_path, define, value):
    r = _nvcc(tmp_path, BASE_OPTS + [f"-D{define}={value}"])
    assert r.returncode != 0 and define in r.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed: the check reads the cubin")
@pytest.mark.parametrize("dtype,n", [(torch.bfloat16, 3584), (torch.float16, 4096), (torch.float32, 7)])
def test_the_ops_builds_take_the_row_strides_at_compile_time(monkeypatch, tmp_path, dtype, n):
    """RMSNormFwdOp's rows are contiguous, so its builds say so (TILEOPS_CONTIGUOUS=1) and the
    register kernel computes row addresses from the compile-time N: less machine code than the
    same build reading the stride arguments (session 46: bf16 3584 hot 1.81 -> 1.66 us, H100)."""
    from helpers import nvcc_text
    name, (opts, *_rest) = _specialisation(monkeypatch, dtype, n, True, True)
    assert name == "tileops_rms_norm" and "-DTILEOPS_CONTIGUOUS=1" in opts
    strided = [o for o in opts if o != "-DTILEOPS_CONTIGUOUS=1"] + ["-DTILEOPS_CONTIGUOUS=0"]
    contiguous_code = nvcc_text(tmp_path, "norm/rms_norm.cu", name, opts)
    strided_code = nvcc_text(tmp_path, "norm/rms_norm.cu", name, strided)
    assert len(contiguous_code) < len(strided_code)
