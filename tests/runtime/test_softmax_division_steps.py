"""The arithmetic behind softmax.cu's divisions by a reciprocal made once (smx_recip_of /
smx_divn for e / S in pass 3, smx_tdiv_of / smx_tdiv8 for x / t), in exact rational
arithmetic with float32 round-to-nearest-even after every step: MUFU.RCP's r0 (taken as the
correctly rounded 1 / d), one Newton step r = r0 + r0 (1 - d r0), then q0 = n r, the
residual n - d q0 and q0 + r x residual (each an FMA or a multiply, one rounding each), the
sequence of div.rn's own fast path. Over the ranges where the kernel takes these steps no
step overflows or rounds below the normal range (pass 3's residual may be subnormal, and is
then exact), and the result is the correctly rounded n / d, div.rn's value. The second tier
of pass 3 (session 37: an octet with an e below 2^-96, each e 0 or at least S 2^-126, one
below 2^-96 scaled by 2^64 and back) gives div.rn's value too. The GPU tests
compare the kernel's bits, with the hardware's r0, against the div.rn build
(tests/gpu/test_gpu_sampling.py); this checks the ranges' claim itself, on the CPU."""
import random
import struct
from fractions import Fraction as Q

import pytest


def rn32(q: Q) -> Q:
    """q rounded to the nearest float32 (ties to even), subnormals on their 2^-149 grid; a
    step that overflows, or rounds in the subnormal range (gradual underflow: an error the
    kernel's ranges must not allow), is an error here."""
    if q == 0:
        return Q(0)
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e += (Q(2) ** (e + 1) <= a) - (Q(2) ** e > a)
    assert e <= 127, f"a step overflowed: 2^{e}"
    ulp = Q(2) ** (max(e, -126) - 23)
    whole, rest = divmod(a / ulp, 1)
    assert e >= -126 or rest == 0, f"a step rounded below the normal range: 2^{e}"
    whole += rest > Q(1, 2) or (rest == Q(1, 2) and whole % 2 == 1)
    return (1 if q > 0 else -1) * whole * ulp


def rn32_gradual(q: Q) -> Q:
    """q rounded to the nearest float32 with gradual underflow (div.rn's value for a quotient
    among the subnormals): the reference for the second tier's quotients, never a step's"""
    if q == 0:
        return Q(0)
    ulp = Q(1, 2 ** 149)
    whole, rest = divmod(abs(q) / ulp, 1)
    if whole >= 2 ** 24:   # a normal quotient: rn32's own rounding
        return rn32(q)
    whole += rest > Q(1, 2) or (rest == Q(1, 2) and whole % 2 == 1)
    return (1 if q > 0 else -1) * whole * ulp


def f32(v: float) -> Q:
    return Q(struct.unpack("f", struct.pack("f", v))[0])


def neighbour(v: Q, k: int) -> Q:
    """the float32 k ulps from the positive float32 v"""
    bits = struct.unpack("I", struct.pack("f", float(v)))[0] + k
    return Q(struct.unpack("f", struct.pack("I", bits))[0])


def steps(n: Q, d: Q, r0: Q) -> Q:
    u = rn32(1 - d * r0)
    r = rn32(r0 + r0 * u)
    q0 = rn32(n * r)
    res = rn32(n - d * q0)
    return rn32(q0 + r * res)


def draw(rng, lo: float, hi: float) -> Q:
    """a float32 of either sign with its binary exponent uniform in [lo, hi)"""
    v = f32((1.0 + rng.random()) * 2.0 ** rng.uniform(lo, hi))
    return v if rng.random() < 0.5 else -v


def check(pairs):
    for n, d in pairs:
        assert steps(n, d, rn32(1 / d)) == rn32(n / d), (float(n), float(d))


# x / t: |x| in [2^-64, 2^64), t in [2^-32, 2^32] (smx_tdiv8's fast octets)
X_LO, X_HI, T_LO, T_HI = 2.0 ** -64, 1.8446742e19, 2.0 ** -32, 2.0 ** 32
# e / S: e in [2^-96, 1], S in [1, 2^24] (smx_divn's fast octets)
E_LO, S_HI = 2.0 ** -96, 2.0 ** 24


@pytest.mark.parametrize("seed", [1, 2])
def test_x_over_t_in_the_fast_range_is_div_rn(seed):
    rng = random.Random(seed)
    check((draw(rng, -64, 64), abs(draw(rng, -32, 32))) for _ in range(1500))


def test_x_over_t_at_the_range_edges_is_div_rn():
    xs = [f32(X_LO), f32(X_HI), neighbour(f32(X_LO), 1), neighbour(f32(X_HI), -1), f32(1.0), f32(3.0)]
    ts = [f32(T_LO), f32(T_HI), neighbour(f32(T_LO), 1), neighbour(f32(T_HI), -1), f32(0.7), f32(1.0), f32(1.9)]
    assert float(f32(X_HI)) < 2.0 ** 64
    check((s * x, t) for x in xs for t in ts for s in (1, -1))


@pytest.mark.parametrize("seed", [1, 2])
def test_e_over_s_in_the_fast_range_is_div_rn(seed):
    rng = random.Random(seed)
    check((abs(draw(rng, -96, 0)), abs(draw(rng, 0, 24))) for _ in range(1500))
    edges_e = [f32(E_LO), f32(1.0), neighbour(f32(1.0), -1), neighbour(f32(E_LO), 1)]
    edges_s = [f32(1.0), f32(S_HI), neighbour(f32(1.0), 1), neighbour(f32(S_HI), -1)]
    check((e, s) for e in edges_e for s in edges_s)


def second_tier(e: Q, S: Q):
    """smx_divn's second tier for one element: None where its check sends the octet to div.rn
    (e neither 0 nor in [S 2^-126, 1]), else the quotient it takes: e below 2^-96 scaled by
    2^64 (exact), the steps, scaled back by 2^-64 (a multiply, rounded once)"""
    lim = rn32(S * Q(1, 2 ** 126))
    assert lim == S * Q(1, 2 ** 126)   # the row's bound is exact: S in [1, 2^24]
    if e != 0 and not lim <= e <= 1:
        return None
    scale = Q(2 ** 64) if e < E_LO else Q(1)
    return rn32(steps(e * scale, S, rn32(1 / S)) / scale)


@pytest.mark.parametrize("seed", [1, 2])
def test_e_over_s_in_the_second_tier_is_div_rn(seed):
    # e below 2^-96 (an underflowing exp: a low temperature, a masked logit's 0) scaled by
    # 2^64 and back gives div.rn's value wherever the check lets it through, quotients down
    # to the least normal included; every e the check lets through below 2^-96 is at least
    # 2^-126, so scaled it is in the fast range
    rng = random.Random(seed)
    taken = 0
    for _ in range(1500):
        S = abs(draw(rng, 0, 24))
        e = abs(draw(rng, -127, -95)) if rng.random() < 0.9 else abs(draw(rng, -96, 0))
        q = second_tier(e, S)
        if q is not None:
            taken += 1
            assert q == rn32_gradual(e / S), (float(e), float(S))
    assert taken > 800
    for S in (f32(1.0), f32(3.0), f32(128255.0), f32(S_HI), neighbour(f32(S_HI), -1)):
        lim = S * Q(1, 2 ** 126)
        assert second_tier(Q(0), S) == 0
        for e in (lim, neighbour(lim, 1), neighbour(lim, 7), neighbour(f32(E_LO), -1), f32(E_LO), f32(1.0)):
            assert second_tier(e, S) == rn32_gradual(e / S) and rn32_gradual(e / S) >= Q(1, 2 ** 126)
        # below the bound the exact quotient is below the least normal (rounded among the
        # subnormals, or up to it): the check sends it to div.rn
        assert second_tier(neighbour(lim, -1), S) is None and neighbour(lim, -1) / S < Q(1, 2 ** 126)


def test_the_checks_own_rounding_and_cases_out_of_range():
    # rn32 is float32's rounding (ties to even; an exact subnormal kept), and the steps do
    # leave the range where the kernel takes div.rn instead: a quotient past 2^127, one
    # rounded among the subnormals
    assert rn32(Q(1) + Q(1, 2 ** 24)) == 1 and rn32(Q(1) + Q(3, 2 ** 24)) == 1 + Q(2, 2 ** 23)
    assert rn32(Q(1, 3)) == f32(1 / 3) and rn32(Q(3, 2 ** 149)) == Q(3, 2 ** 149)
    with pytest.raises(AssertionError, match="overflowed"):
        steps(f32(2.0 ** 100), f32(2.0 ** -40), rn32(1 / f32(2.0 ** -40)))
    with pytest.raises(AssertionError, match="below the normal range"):
        steps(f32(2.0 ** -100), f32(3.0 * 2.0 ** 40), rn32(1 / f32(3.0 * 2.0 ** 40)))
