"""The lab kernels of dev/cuda that dev scripts append to a shipped source (dev/time_softmax.py
--rows) still compile against that source as NVRTC is handed it (includes spliced in), with
the defines the scripts give them: a change to a shipped kernel's helpers that breaks a lab
kernel shows here, not on a device run. Skipped where nvcc is not installed."""
import os
import subprocess

import pytest
import torch
from helpers import nvcc

from tileops import runtime
from tileops._dtypes import CODE
from tileops.kernels.sampling import cuda_sampling

NVCC = nvcc()
LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "dev", "cuda")
NEEDS_NVCC = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")


def _nvcc(tmp_path, shipped, lab, opts):
    """nvcc -cubin (ptxas -v) of the shipped source's spliced text, then the lab file (a
    self-contained lab file alone when shipped is None); the completed process."""
    text = "" if shipped is None else runtime.source(shipped) + "\n"
    src = tmp_path / "lab.cu"
    src.write_text(text + runtime.source(os.path.join(LAB, lab)))
    return subprocess.run([NVCC, "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", str(tmp_path / "lab.cubin"),
                           str(src)], capture_output=True, text=True, timeout=300)


def _compile(tmp_path, shipped, lab, kernel, opts):
    """nvcc's ptxas report of `kernel` (_nvcc's build, which must succeed)."""
    r = _nvcc(tmp_path, shipped, lab, opts)
    assert r.returncode == 0, r.stderr[-3000:]
    report = r.stderr.split(f"Compiling entry function '{kernel}'")
    assert len(report) == 2, r.stderr[-2000:]
    return report[1].split("Compiling entry function")[0]


@NEEDS_NVCC
def test_the_softmax_rows_lab_kernel_compiles(tmp_path):
    source, _, opts, _ = cuda_sampling.softmax_specialisation(CODE[torch.bfloat16], CODE[torch.float32], 128256, False,
                                                              True, 90, 232448)
    _compile(tmp_path, source, "softmax_rows_lab.cu", "tileops_softmax_rows", opts)


@NEEDS_NVCC
@pytest.mark.parametrize("n,pdl,nc", [(4096, 0, 1), (8192, 1, 0)])
def test_the_smallest_rms_norm_lab_kernel_compiles(tmp_path, n, pdl, nc):
    """dev/time_norm_cold.py's builds of dev/cuda/rms_norm_min_lab.cu (256 threads a row,
    with and without the PDL prologue, w by either load) against rms_norm.cu: no spills."""
    from tileops.kernels.norm import rms_norm as K
    opts, *_ = K.cuda_specialisation("tileops_rms_norm", CODE[torch.float16], n, True, 8, 132)
    base = [o for o in opts if not o.startswith(("-DTILEOPS_THREADS", "-DTILEOPS_ROW_THREADS", "-DTILEOPS_MIN"))]
    report = _compile(tmp_path, "norm/rms_norm.cu", "rms_norm_min_lab.cu", "lab_rms_norm_min",
                      base + ["-DTILEOPS_THREADS=256", "-DTILEOPS_ROW_THREADS=256", "-DTILEOPS_MIN_BLOCKS=4",
                              f"-DLAB_PDL={pdl}", f"-DLAB_W_NC={nc}"])
    assert "0 bytes spill stores" in report


@pytest.mark.parametrize("dt,cluster,keep", [(CODE[torch.bfloat16], 8, ""), (CODE[torch.float32], 8, "0"),
                                             (CODE[torch.float32], 4, "")])
@NEEDS_NVCC
def test_the_top_k_phases_lab_kernel_compiles(tmp_path, dt, cluster, keep):
    """dev/time_top_k.py --phases: dev/cuda/top_k_phases_lab.cu over top_k.cu, with the words
    kept in registers as the shipped kernel keeps them (SMP_KEEP) or not (variant cCnl)."""
    source, _, opts, _ = cuda_sampling.top_k_specialisation(dt, 128256, 50, True, True, cluster)
    _compile(tmp_path, source, "top_k_phases_lab.cu", "tileops_top_k_phases",
             list(opts) + ([f"-DSMP_KEEP={keep}"] if keep else []))


@NEEDS_NVCC
@pytest.mark.parametrize("reads,writes", [(1, 1), (1, 2), (2, 1), (1, 0)])
@pytest.mark.parametrize("unroll", [1, 2, 4, 16])
def test_the_stream_floor_lab_kernel_compiles_without_spills(tmp_path, reads, writes, unroll):
    """dev/time_floor.py's builds of dev/cuda/stream_floor_lab.cu (self-contained: no shipped
    source before it), every mix and unroll it times."""
    report = _compile(tmp_path, None, "stream_floor_lab.cu", "tileops_stream_floor",
                      [f"-DTILEOPS_READS={reads}", f"-DTILEOPS_WRITES={writes}", "-DTILEOPS_THREADS=256",
                       f"-DTILEOPS_UNROLL={unroll}"])
    assert "0 bytes spill stores" in report, report


@NEEDS_NVCC
@pytest.mark.parametrize("unroll", [4, 8, 16])
def test_the_read_only_floor_in_clusters_compiles_with_its_barrier(tmp_path, unroll):
    """dev/time_floor.py --cluster 8: the read-only build launched in clusters of 8, each
    thread through a release / acquire cluster barrier (argmax's exchange) before its store;
    a mix with writes is refused."""
    opts = ["-DTILEOPS_READS=1", "-DTILEOPS_THREADS=256", f"-DTILEOPS_UNROLL={unroll}", "-DTILEOPS_CLUSTER=8"]
    report = _compile(tmp_path, None, "stream_floor_lab.cu", "tileops_stream_floor", opts + ["-DTILEOPS_WRITES=0"])
    assert "0 bytes spill stores" in report, report
    r = _nvcc(tmp_path, None, "stream_floor_lab.cu", opts + ["-DTILEOPS_WRITES=1"])
    assert r.returncode != 0 and "with the read-only mix (1 / 0) only" in r.stderr


@NEEDS_NVCC
def test_the_stream_floor_lab_kernel_refuses_a_mix_it_has_no_code_for(tmp_path):
    r = _nvcc(tmp_path, None, "stream_floor_lab.cu",
              ["-DTILEOPS_READS=2", "-DTILEOPS_WRITES=2", "-DTILEOPS_THREADS=256", "-DTILEOPS_UNROLL=1"])
    assert r.returncode != 0 and "must be 1 / 1, 1 / 2, 2 / 1 or 1 / 0" in r.stderr


def test_the_stream_floor_kernels_arithmetic_is_torchs_result_of_its_mix():
    """The words stream_floor_lab.cu writes, emulated here from its source's formulas (the bf16
    words shifted / masked, the two streams XORed), equal time_floor.torch_result, the result
    its GPU builds are checked against before timing: a wrong lane mapping shows before a
    device call. Needs no nvcc."""
    import sys
    dev = os.path.dirname(LAB)
    if dev not in sys.path:
        sys.path.insert(0, dev)
    import time_floor
    g = torch.Generator().manual_seed(0)
    src = torch.randint(-2**31, 2**31 - 1, (4 * 37 * 2,), generator=g, dtype=torch.int32)
    u = src.view(-1, 4).to(torch.int64) & 0xffffffff          # group g's 4 words, unsigned
    widened = torch.stack([u << 16 & 0xffffffff, u & 0xffff0000], -1).reshape(-1, 8)   # float 2k + h of the group
    as_i32 = lambda t: (t - (t >> 31 << 32)).to(torch.int32).reshape(-1)
    assert torch.equal(as_i32(widened), time_floor.torch_result(src, 1, 2))
    half = u.shape[0] // 2
    assert torch.equal(as_i32(u[:half] ^ u[half:]), time_floor.torch_result(src, 2, 1))
    assert torch.equal(time_floor.torch_result(src, 1, 1), src)
    # 1 : 0 over a grid rounded up to whole clusters: the extra blocks' threads write 0
    ro = time_floor.torch_result(src, 1, 0, 4)
    padded = time_floor.torch_result(src, 1, 0, 4, blocks=8)
    assert padded.numel() == 8 * 256 and torch.equal(padded[:ro.numel()], ro) and not padded[ro.numel():].any()
    assert time_floor.mix_of(32 * 16, 64 * 16) == (1, 2, 32)
    with pytest.raises(ValueError, match="1 : 1, 1 : 2, 2 : 1 or 1 : 0"):
        time_floor.mix_of(48, 16)
    # 1 : 0: thread t of block b XORs the words of its groups (b U + u) T + t, u < U (0 past
    # the end), one word a thread; 37 x 2 groups, so the last block is mostly past the end
    assert time_floor.mix_of(64, 0) == (1, 0, 4)
    T = time_floor.THREADS
    for unroll in (1, 4):
        got = time_floor.torch_result(src, 1, 0, unroll)
        groups = src.numel() // 4
        blocks = -(-groups // (T * unroll))
        want = torch.zeros(blocks * T, dtype=torch.int64)
        for b in range(blocks):
            for t in range(T):
                for uu in range(unroll):
                    gg = (b * unroll + uu) * T + t
                    if gg < groups:
                        for k in range(4):
                            want[b * T + t] ^= int(u[gg, k])
        assert torch.equal(got, as_i32(want)), unroll
