"""The softmax kernel's division (csrc/ops/sampling/sampling_common.cuh, smp_div_by): a / b
from the row's reciprocal y = RN(1/b) by a multiply and four fmas, claimed to round exactly
as the IEEE division (div.rn.f32, the C kernel's `/`) wherever it does not fall back to
that division. Checked here against exact rational arithmetic: float32 rounding (nearest,
ties to even) of Fractions, the fma a single rounding of the exact a b + c, the same
range checks as the kernel. Cases: softmax's (e in (0, 1], sums up to 2e5), temperature
divisions (logits over t in [0.05, 3]), and random significands over the whole exponent
range, a third of them just below a power of two (where RN(a y) is 2 ulps off)."""
import random
from fractions import Fraction as F

import numpy as np
import pytest

TWO = F(2)
LO, HI = 2.0 ** -100, 2.0 ** 100


def rn32(x: F) -> np.float32:
    """x rounded to the nearest float32, ties to even (overflow to inf, below half the
    smallest subnormal to 0)."""
    if x == 0:
        return np.float32(0.0)
    if abs(x) >= TWO ** 128:
        return np.float32(np.inf if x > 0 else -np.inf)
    with np.errstate(over="ignore"):
        c = np.float32(float(x))
    best = None
    for cand in (np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))):
        if not np.isfinite(cand):
            continue
        d = abs(F(float(cand)) - x)
        even = (int(np.array(cand, dtype=np.float32).view(np.uint32)) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, cand)
    return np.float32(best[1])


def fma(a, b, c) -> np.float32:
    return rn32(F(float(a)) * F(float(b)) + F(float(c)))


def moderate(v) -> bool:
    return LO <= abs(float(v)) <= HI


def div_by(a, b, y):
    """smp_div_by, step by step."""
    q0 = rn32(F(float(a)) * F(float(y)))
    if moderate(q0) and moderate(a) and moderate(y):
        q1 = fma(fma(-q0, b, a), y, q0)
        r = fma(-q1, b, a)
        assert F(float(r)) == F(float(a)) - F(float(q1)) * F(float(b)), "the residual must be exact"
        return fma(r, y, q1), True
    if a == 0:                          # the kernel's q0 = mul.rn(a, y): a signed zero
        return np.multiply(a, y, dtype=np.float32), False
    return rn32(F(float(a)) / F(float(b))), False


def cases(n, seed):
    rnd = random.Random(seed)
    for i in range(n):
        kind = i % 3
        if kind == 0:      # softmax: e / S
            a = rnd.random() ** rnd.choice([1, 5, 20, 60])
            b = 1 + rnd.random() * rnd.choice([1, 100, 2e5])
        elif kind == 1:    # logits / temperature
            a = rnd.gauss(0, rnd.choice([1, 10, 1e3]))
            b = rnd.uniform(0.05, 3)
        else:              # anything
            a = rnd.uniform(1, 2) * 2.0 ** rnd.randint(-126, 126)
            b = rnd.uniform(1, 2) * 2.0 ** rnd.randint(-126, 126)
            if rnd.random() < 0.3:
                a = float(np.nextafter(np.float32(2.0 ** rnd.randint(-60, 60)), np.float32(0)))
        a, b = np.float32(a), np.float32(b)
        if a != 0 and 2.0 ** -148 < abs(float(a)) / abs(float(b)) < 2.0 ** 127:
            yield a, b


@pytest.mark.parametrize("seed", [1, 2])
def test_the_corrected_product_rounds_as_the_division(seed):
    fast = 0
    for a, b in cases(5000, seed):
        y = rn32(1 / F(float(b)))
        got, took = div_by(a, b, y)
        assert got == rn32(F(float(a)) / F(float(b))), (a, b)
        fast += took
    assert fast > 4000        # the corrected product, not the fallback, answered nearly all


def test_without_the_first_correction_the_residual_is_not_exact():
    """RN(a y) can be 2 ulps off a/b (a significand near 2, y's own error): Markstein's
    precondition fails and a - b RN(a y) is not a float32 (why the sequence corrects twice)."""
    a, b = np.float32(7.696229e12), np.float32(7.469254e-06)
    y = rn32(1 / F(float(b)))
    q0 = rn32(F(float(a)) * F(float(y)))
    exact = F(float(a)) - F(float(q0)) * F(float(b))
    assert F(float(rn32(exact))) != exact
    assert div_by(a, b, y) == (rn32(F(float(a)) / F(float(b))), True)


def test_zero_and_the_edges_fall_back():
    for a, b in [(0.0, 3.0), (-0.0, 3.0), (1e-35, 3.0), (3e38, 0.5), (1.0, 1e-38)]:
        a, b = np.float32(a), np.float32(b)
        y = rn32(1 / F(float(b)))
        got, took = div_by(a, b, y)
        with np.errstate(over="ignore"):
            want = np.divide(a, b, dtype=np.float32)     # numpy's float32 division is IEEE's
        assert not took and got == want and np.signbit(got) == np.signbit(want)
