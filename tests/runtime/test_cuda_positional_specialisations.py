"""The CUDA builds of the positional tables (src/tileops/kernels/positional/tables.py over
csrc/ops/positional/{rope_cos_sin_cache,sinusoidal,alibi}.cu and angle_table.cuh,
tables.cuh): which store width a call gets, the launch shapes, and every kind of
specialisation compiles with nvcc (sm_90a, no GPU needed) without local-memory spills or a
stack frame, from the text the runtime hands NVRTC (includes spliced in). Skipped where
nvcc is not installed."""

import pytest
from helpers import nvcc, nvcc_build

from tileops.kernels.positional import tables as K

NVCC = nvcc()
ROPE = {"base": 500000.0, "rotary_dim": 128, "max_position": 8192, "rope_type": "llama3", "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


def test_store_widths_need_alignment_and_whole_groups():
    assert K.SinusoidalKernel.cuda_opts({"dim": 512}, True) == ("-DTILEOPS_LAYOUT=1", "-DTILEOPS_PAIR2=1")
    assert K.SinusoidalKernel.cuda_opts({"dim": 7}, True)[1] == "-DTILEOPS_PAIR2=0"     # odd: no pairs
    assert K.SinusoidalKernel.cuda_opts({"dim": 512}, False)[1] == "-DTILEOPS_PAIR2=0"  # not aligned
    assert K.AlibiKernel.cuda_opts({"seq_len": 2048}, True) == ("-DTILEOPS_VEC=4",)
    assert K.AlibiKernel.cuda_opts({"seq_len": 33}, True) == ("-DTILEOPS_VEC=1",)
    assert K.AlibiKernel.cuda_opts({"seq_len": 2048}, False) == ("-DTILEOPS_VEC=1",)


def test_launch_shapes():
    args = K.RopeCosSinCacheKernel.args(ROPE)
    assert args == (8192, 128, 500000.0, 2, 8.0, 1.0, 4.0, 8192.0)
    assert K.RopeCosSinCacheKernel.launch_shape(args, ()) == (8192, 64)
    assert K.SinusoidalKernel.launch_shape((100000, 7, 1e4), ()) == (K.ANGLE_BLOCKS, 32)
    assert K.SinusoidalKernel.launch_shape((3, 1024, 1e4), ()) == (3, 256)
    assert K.AlibiKernel.launch_shape((32, 2048), ("-DTILEOPS_VEC=4",)) == (32 * 2048, 256)
    assert K.AlibiKernel.launch_shape((3, 33), ("-DTILEOPS_VEC=1",)) == (99, 64)


CASES = [(K.RopeCosSinCacheKernel, K.RopeCosSinCacheKernel.cuda_opts(ROPE, True)),
         (K.SinusoidalKernel, K.SinusoidalKernel.cuda_opts({"dim": 512}, True)),
         (K.SinusoidalKernel, K.SinusoidalKernel.cuda_opts({"dim": 7}, True)),
         (K.AlibiKernel, K.AlibiKernel.cuda_opts({"seq_len": 2048}, True)),
         (K.AlibiKernel, K.AlibiKernel.cuda_opts({"seq_len": 33}, True))]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("kernel,opts", CASES, ids=[f"{k.name}{''.join(o)}" for k, o in CASES])
def test_every_kind_of_build_compiles_without_spills(tmp_path, kernel, opts):
    err = nvcc_build(tmp_path, f"positional/{kernel.name}.cu", f"tileops_{kernel.name}", opts)
    assert "0 bytes stack frame" in err, err[-2000:]
