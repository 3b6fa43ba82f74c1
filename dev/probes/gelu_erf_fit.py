"""The erf GELU's polynomial for the GPU kernel (csrc/ops/activation/gated_act.cuh): fit and
check on this machine, no GPU.

The kernel forms Phi(a) from erfc(z) = exp(-z^2) R(z), z = |a| / sqrt 2, with R(z) = erfc(z)
exp(z^2) taken as a polynomial P in t = 1 / (1 + k |a|) (one FMA and MUFU.RCP). This script
fits P's coefficients by iteratively reweighted least squares towards the least largest
relative error over |a| in [0, A_MAX] (A_MAX: past it exp(-a^2 / 2) is below 2^-126 and
ex2.approx.ftz gives 0, so P's value there never shows), then evaluates the kernel's
float32 arithmetic step by step (FMA and products rounded once; MUFU.EX2 and MUFU.RCP taken
as correctly rounded, which the hardware is not: ~2 and ~1 ulp) against mpmath, in float32
ulps of a Phi(a), for the degree-10 form (the GPU kernel's before session 37,
the CPU kernel's R) and for the fitted one:

    .venv/bin/python dev/probes/gelu_erf_fit.py [--degree 8] [--k 0.295] [--points 4000] [--bits16]

It prints the coefficients as the kernel writes them (halved: s = e P(t) is erfc / 2).
--bits16: the fitted arithmetic with and without the correction for sq's rounding (a
16-bit build's question), vectorised, rounded to float16 / bfloat16: every finite 16-bit a
below 30 in magnitude (b = 1), then 2M pairs a ~ 3 N(0, 1), b ~ N(0, 1), y = act(a) b
rounded once; the outputs that differ from float64's a Phi(a) b correctly rounded are
counted, and whether the two forms differ anywhere."""
import argparse

import mpmath
import numpy as np

mpmath.mp.dps = 40
F = np.float32
LD = np.longdouble          # 64-bit significand: a product of two floats is exact in it
A_MAX = 9.4 * 2 ** 0.5      # z = 9.4: exp(-z^2) = 2^-127.5
LOG2E = F(1.44269504)


def fma(a, b, c):
    return F(LD(a) * LD(b) + LD(c))


def mul(a, b):
    return F(LD(a) * LD(b))


def add(a, b):
    return F(LD(a) + LD(b))


def ex2(x):   # ex2.approx.ftz: 0 below 2^-126
    return F(0) if x < -126 else F(mpmath.mpf(2) ** mpmath.mpf(float(x)))


def select(a, s):
    return mul(a, s if np.signbit(a) else add(F(1), -s))


# the degree-10 R (the GPU kernel's until session 37): a polynomial in t = 2 / (2 + z), t^10's coefficient first
DEGREE10 = [2.777090482e-02, -2.099794745e-01, 6.407496929e-01, -9.664225578e-01, 6.837153435e-01,
           -2.515510917e-01, 2.851417363e-01, 2.234304249e-01, 2.852924764e-01, 2.818439603e-01,
           8.578265806e-06]


def act_degree10(a):
    m = min(abs(a), F(20))
    z = mul(m, F(0.707106781))
    sq = mul(m, m)
    lo = mul(fma(m, m, -sq), F(0.5))
    e = ex2(mul(sq, F(-0.5) * LOG2E))
    r = F(LD(1) / LD(add(F(2), z)))
    e = fma(-lo, e, e)
    p = F(DEGREE10[0] * 2 ** 10)
    for j, c in enumerate(DEGREE10[1:]):
        p = fma(p, r, F(c * 2 ** (9 - j)))
    return select(a, mul(mul(e, p), F(0.5)))


def fit(degree, k, points):
    m = np.linspace(0.0, A_MAX, points)
    want = np.array([float(mpmath.erfc(v / mpmath.sqrt(2)) * mpmath.exp(v * v / 2)) for v in m])
    V = np.vander(1.0 / (1.0 + k * m), degree + 1)
    w = np.ones_like(m)
    for _ in range(60):
        coef, *_ = np.linalg.lstsq(V * (w / want)[:, None], w, rcond=None)
        err = np.abs(V @ coef / want - 1)
        w = w * (err / err.max() + 1e-4) ** 0.5
        w /= w.max()
    return err.max(), coef


def worst_ulps(act, avals):
    worst, at = 0.0, None
    for a in avals:
        a = F(a)
        want = mpmath.mpf(float(a)) * mpmath.erfc(-mpmath.mpf(float(a)) / mpmath.sqrt(2)) / 2
        if abs(want) < 2.0 ** -126:
            continue
        ulp = mpmath.mpf(2) ** (mpmath.floor(mpmath.log(abs(want), 2)) - 23)
        e = float(abs(mpmath.mpf(float(act(a))) - want) / ulp)
        if e > worst:
            worst, at = e, float(a)
    return worst, at


def act_vec(a, k, halved, correct):
    """the kernel's arithmetic (t = 1 / (1 + k |a|), the halved coefficients; correct: the
    float32 build's correction for m^2's rounding) over a float32 array (FMA: the float64
    sum of an exact product, rounded to float32, which can round twice; rare). Also what
    tests/runtime/test_gelu_erf_arithmetic.py runs with the kernel's own constants."""
    def vfma(x, y, z):
        return (x.astype(np.float64) * y + z).astype(F)
    m = np.minimum(np.abs(a), F(20))
    sq = m * m
    e = np.exp2((sq * (F(-0.5) * LOG2E)).astype(np.float64)).astype(F)
    e[e < 2.0 ** -126] = 0
    t = (1.0 / vfma(m, F(k), F(1)).astype(np.float64)).astype(F)
    p = np.full_like(m, F(halved[0]))
    for c in halved[1:]:
        p = vfma(p, t, F(c))
    s = e * p
    if correct:
        lo = vfma(m, m, -sq) * F(0.5)
        s = vfma(-lo, s, s)
    return a * np.where(np.signbit(a), s, F(1) - s)


def bits16(k, halved):
    import torch
    g = torch.Generator().manual_seed(0)
    for dt in (torch.float16, torch.bfloat16):
        every = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dt).float()
        every = every[torch.isfinite(every) & (every.abs() < 30)]
        pairs = ((3 * torch.randn(2_000_000, generator=g)).to(dt).float(),
                 torch.randn(2_000_000, generator=g).to(dt).float())
        for name, (x, y) in (("every a, b = 1", (every, torch.ones_like(every))), ("2M pairs", pairs)):
            x64 = x.double()
            want = (x64 * torch.special.erfc(-x64 / 2 ** 0.5) / 2 * y.double()).to(dt).view(torch.int16)
            got = [(torch.from_numpy(act_vec(x.numpy(), k, halved, c)) * y).to(dt).view(torch.int16)
                   for c in (True, False)]
            print(f"{str(dt)[6:]} {name}: outputs off the correctly rounded one: corrected "
                  f"{int((got[0] != want).sum())}, uncorrected {int((got[1] != want).sum())} of {x.numel()}; "
                  f"the two differ in {int((got[0] != got[1]).sum())}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--degree", type=int, default=8)
    ap.add_argument("--k", type=float, default=0.295)
    ap.add_argument("--points", type=int, default=4000)
    ap.add_argument("--bits16", action="store_true")
    a = ap.parse_args()
    err, coef = fit(a.degree, a.k, a.points)
    halved = [float(F(c / 2)) for c in coef]
    print(f"degree {a.degree}, k {a.k}: fit's largest relative error {err:.3g} ({err / 2 ** -24:.2f} ulp)")
    print("halved coefficients, t^degree's first:", ", ".join(f"{c:.9e}" for c in halved))
    rng = np.random.default_rng(1)
    parts = {"body |a| <= 4": np.concatenate([np.linspace(-4, 6, 3000), rng.normal(0, 1.5, 3000)]),
             "tail a in [-13.2, -4]": np.linspace(-13.2, -4, 3000)}
    def fitted(x):   # one element through act_vec
        return act_vec(np.array([x], dtype=F), a.k, halved, True)[0]
    if a.bits16:
        bits16(a.k, halved)
        return
    for name, avals in parts.items():
        s, f = worst_ulps(act_degree10, avals), worst_ulps(fitted, avals)
        print(f"{name}: largest error in ulps of a Phi(a): degree 10 {s[0]:.2f} (a = {s[1]:.5g}), "
              f"fitted {f[0]:.2f} (a = {f[1]:.5g})")


if __name__ == "__main__":
    main()
