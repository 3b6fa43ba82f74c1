"""The positional tables on a GPU beyond the generic driver (tests/gpu/test_gpu_ops.py):
the CUDA kernels against the CPU kernels and float64 math, at model sizes (Llama-3.1's
131072 x 128 llama3 cache), every store width (ALiBi rows of a multiple of 4 or not, even
and odd sinusoidal widths), the ways to name a device, torch.compile on the GPU (bit for
bit eager, new tensors), a CUDA graph replaying a warmed-up call, a second card.

The bound, stated: each value is its double-precision angle's sine or cosine (the same
tileops_sincos text on both sides) rounded once to float32, so CPU and GPU agree bit for
bit wherever their pow (inverse frequencies) or exp2 (ALiBi slopes) agree, and where
those differ in their last bit (CUDA's double pow is within 2 ulp, glibc's within 1) the
angle p * inv moves by ~p * 2^-52 rad (3e-11 at p = 131072): one float32 ulp where that
flips a rounding, or, for values near zero (a tiny ulp), at most 1e-10 absolute; on a small
fraction of the values (measured: 1.8e-4 of Llama-3.1's table for a 2-ulp pow). Skipped without
CUDA (tests/gpu/conftest.py)."""
import pytest
import torch

from tileops.positional import AlibiFwdOp, RopeCosSinCacheFwdOp, SinusoidalFwdOp
from tileops.reference import resolve

from helpers import assert_one_rounding, float32_ulps

DEV = "cuda"
LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}

CASES = [
    pytest.param(lambda: RopeCosSinCacheFwdOp(500000.0, 128, 131072, **LLAMA31), id="llama3.1-131072x128"),
    pytest.param(lambda: RopeCosSinCacheFwdOp(10000.0, 64, 4099), id="rope-default-4099x64"),
    pytest.param(lambda: RopeCosSinCacheFwdOp(10000.0, 2, 33, rope_type="linear", factor=4.0), id="rope-linear-33x2"),
    pytest.param(lambda: RopeCosSinCacheFwdOp(1e6, 130, 1000), id="rope-130-wide"),
    pytest.param(lambda: SinusoidalFwdOp(4096, 1024), id="sinusoidal-even"),
    pytest.param(lambda: SinusoidalFwdOp(333, 7), id="sinusoidal-odd"),
    pytest.param(lambda: AlibiFwdOp(32, 2048), id="alibi-32x2048"),
    pytest.param(lambda: AlibiFwdOp(12, 33), id="alibi-12x33"),
    pytest.param(lambda: AlibiFwdOp(112, 257), id="alibi-112x257"),
]


def reference64(op):
    return resolve(op._entry.ref_api)(**op.resolved_params(), dtype=torch.float64)


@pytest.mark.parametrize("make", CASES)
def test_cuda_matches_the_cpu_kernel_and_float64_math(make):
    op = make()
    cpu = op()
    gpu = op(device=DEV)
    torch.cuda.synchronize()
    assert gpu.device.type == "cuda" and gpu.dtype == torch.float32 and gpu.is_contiguous() and gpu.shape == cpu.shape
    ulps = float32_ulps(gpu.cpu(), cpu)
    # one ulp, or (values near zero, whose ulp is tiny) the angle's own double error
    near = (gpu.cpu().double() - cpu.double()).abs() <= 1e-10
    assert bool(((ulps <= 1) | near).all()), f"GPU vs CPU: {int(ulps[~near].max())} ulps"
    assert (ulps != 0).double().mean().item() <= 1e-3, f"GPU vs CPU: {int((ulps != 0).sum())} values differ"
    assert_one_rounding(gpu.cpu(), reference64(op), 1e-10, "GPU vs float64")
    if isinstance(op, AlibiFwdOp) and op.num_heads in (1, 2, 4, 8):   # slopes powers of two: exact
        assert torch.equal(gpu.cpu(), cpu)


def test_every_way_to_name_the_device():
    op = SinusoidalFwdOp(17, 6)
    want = op(device="cuda:0")
    for dev in ("cuda", 0, torch.device("cuda"), torch.device("cuda", 0)):
        got = op(device=dev)
        assert got.device == torch.device("cuda", 0) and torch.equal(got, want)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU: the second-card test needs two")
def test_a_second_card_while_the_first_is_current():
    op = AlibiFwdOp(12, 64)
    with torch.cuda.device(0):
        got = op(device="cuda:1")
    assert got.device == torch.device("cuda", 1) and torch.equal(got.cpu(), op(device="cuda:0").cpu())


@pytest.mark.parametrize("make", CASES[1:3] + CASES[5:6] + CASES[7:8])
def test_compiled_on_the_gpu_equals_eager_bit_for_bit(make):
    torch._dynamo.reset()
    op = make()
    x = torch.randn(3, device=DEV)
    eager = op(device=DEV)
    f = torch.compile(lambda x: op(device=x.device), fullgraph=True)
    a, b = f(x), f(x)
    assert torch.equal(a, eager) and a.data_ptr() != b.data_ptr()
    a.fill_(float("nan"))
    assert torch.equal(f(x), eager)


def test_a_warmed_up_call_replays_in_a_cuda_graph():
    op = RopeCosSinCacheFwdOp(500000.0, 128, 8192, **LLAMA31)
    want = op(device=DEV)            # warm-up: builds the kernel
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(g, stream=stream):
            out = op(device=DEV)
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)
