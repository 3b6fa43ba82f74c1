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
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")


def _compile(tmp_path, shipped, lab, kernel, opts):
    """nvcc's ptxas report of `kernel`: the shipped source's spliced text, then the lab file."""
    with open(os.path.join(LAB, lab)) as f:
        text = runtime.source(shipped) + "\n" + f.read()
    src = tmp_path / "lab.cu"
    src.write_text(text)
    r = subprocess.run([NVCC, "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", str(tmp_path / "lab.cubin"),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = r.stderr.split(f"Compiling entry function '{kernel}'")
    assert len(report) == 2, r.stderr[-2000:]
    return report[1].split("Compiling entry function")[0]


def test_the_softmax_rows_lab_kernel_compiles(tmp_path):
    source, _, opts, _ = cuda_sampling.softmax_specialisation(CODE[torch.bfloat16], CODE[torch.float32], 128256, False,
                                                              True, 90, 232448)
    _compile(tmp_path, source, "softmax_rows_lab.cu", "tileops_softmax_rows", opts)
