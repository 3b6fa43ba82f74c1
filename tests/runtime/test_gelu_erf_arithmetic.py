"""The erf GELU's GPU arithmetic (csrc/ops/activation/gated_act.cuh, TILEOPS_ACT 1) checked on
the CPU, where CI runs: the kernel's steps emulated in float32 by dev/probes/gelu_erf_fit.py
(each product and FMA rounded once; MUFU.EX2 and MUFU.RCP taken as correctly rounded, which
the hardware is within ~2 ulps of) with the polynomial's coefficients and k read from the
source, against float64's a Phi(a). A mistyped coefficient or a wrong k shows here, not only
on a GPU. The bounds are what the probe measured when the coefficients were fitted (7.9
ulps for |a| <= 4, 59 in the tail, from the rounding of ex2's argument) with a margin."""
import os
import re
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F = np.float32
sys.path.insert(0, os.path.join(ROOT, "dev", "probes"))
import gelu_erf_fit  # noqa: E402
sys.path.pop(0)


def _constants():
    with open(os.path.join(ROOT, "csrc", "ops", "activation", "gated_act.cuh")) as f:
        src = f.read()
    k = float(re.search(r"#define GATED_ERF_K ([0-9.eE+-]+)f", src).group(1))
    start = src.index("#elif TILEOPS_ACT == 1")
    body = src[start:src.index("#else\n    const float c = ", start)]   # up to GeLU(tanh)'s branch
    first = re.search(r"float p = ([0-9.eE+-]+)f;", body).group(1)
    rest = re.findall(r"p = tileops_fma\(p, t, ([0-9.eE+-]+)f\);", body)
    return F(k), [F(float(c)) for c in [first, *rest]]


def act(a, correct):
    """the kernel's steps with its constants (dev/probes/gelu_erf_fit.py's emulation, the
    one the coefficients were fitted with); correct: the float32 build's correction"""
    k, coef = _constants()
    return gelu_erf_fit.act_vec(a, k, coef, correct)


def _want(a):
    x = torch.from_numpy(a.astype(np.float64))
    return (x * torch.special.erfc(-x / 2 ** 0.5) / 2).numpy()


def _ulps(got, want):
    keep = np.abs(want) >= 2.0 ** -126
    got, want = got[keep].astype(np.float64), want[keep]
    return np.abs(got - want) / np.exp2(np.floor(np.log2(np.abs(want))) - 23)


def test_the_kernel_reads_nine_coefficients_and_k():
    k, coef = _constants()
    assert len(coef) == 9 and 0.2 < k < 0.4


@pytest.mark.parametrize("lo, hi, bound", [(-4.0, 6.0, 10.0), (-13.2, -4.0, 70.0)])
def test_the_float32_builds_error_in_ulps_of_a_phi(lo, hi, bound):
    rng = np.random.default_rng(3)
    a = np.concatenate([np.linspace(lo, hi, 20001), rng.uniform(lo, hi, 20000)]).astype(F)
    worst = _ulps(act(a, True), _want(a)).max()
    assert worst <= bound, worst


def test_large_inputs_zeros_and_the_sign_bit():
    a = np.array([0.0, -0.0, 14.0, -14.0, 60.0, -60.0, 65504.0, -65504.0], dtype=F)
    got = act(a, True)
    assert np.array_equal(got, np.array([0.0, -0.0, 14.0, -0.0, 60.0, -0.0, 65504.0, -0.0], dtype=F))
    assert np.signbit(got[1]) and np.signbit(got[3])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_16_bit_build_rounds_as_the_correct_build_and_near_always_correctly(dtype):
    """16-bit builds skip the correction for m^2's rounding: over every finite 16-bit a (b =
    1) and 200k random products a b, rounded to the dtype, the two builds agree everywhere,
    and at most 0.02 % of the products (5 of the single a: the subnormal edge) are off the
    correctly rounded a Phi(a) b"""
    every = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype).float()
    every = every[torch.isfinite(every) & (every.abs() < 30)]
    g = torch.Generator().manual_seed(0)
    pairs = ((3 * torch.randn(200_000, generator=g)).to(dtype).float(), torch.randn(200_000, generator=g).to(dtype).float())
    for x, y, most in ((every, torch.ones_like(every), 8), (*pairs, 40)):
        want = torch.from_numpy(_want(x.numpy())).mul(y.double()).to(dtype).view(torch.int16)
        corrected, plain = ((torch.from_numpy(act(x.numpy(), c)) * y).to(dtype).view(torch.int16) for c in (True, False))
        assert torch.equal(corrected, plain)
        assert int((plain != want).sum()) <= most
