"""The coefficients of v5's gelu (kernel.cu `gelu_tail`): q(a) ~ log2 Phi(-a) on a in [0, 6.5], a
polynomial of degree d, so that gelu(x) = relu(x) - a 2^q(a) with a = min(|x|, 6.5).

The fit is weighted minimax (Lawson's iteration of weighted least squares) in the error that
matters: where gelu's small side a Phi(-a) is above 2^-25 its relative error (ln 2 times q's
error), below it the absolute error against 1e-9, the tolerances tests/test_v5.py
(`test_the_lean_activations_match_float64`) judges the kernel's form by. The coefficients are then
rounded to float32 and the form evaluated as kernel.cu does (Horner by fmaf, float32), against
float64 on 2,000,000 points of [-40, 40]. CPU only (numpy), a few seconds per degree:

    python3 scripts/gelu_fit.py 9 8 7 6

Printed for degree 7 (shipped since 2026-12-02; degree 9 before): relative error 5.5e-6,
absolute 2.6e-10 below 2^-25; degree 6: 3.5e-5, over the 1e-5 asked.
"""
import math
import sys

import numpy as np

CLAMP = 6.5  # a = min(|x|, 6.5): past it, a Phi(-a) < 2.6e-10
_erfc = np.vectorize(math.erfc)


def phi_minus(a):
    return 0.5 * _erfc(np.asarray(a, np.float64) / math.sqrt(2))


def _f32(v):
    return np.asarray(v, np.float64).astype(np.float32)


def _fma(a, b, c):  # one rounding, as fmaf
    return _f32(np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64))


def fit(degree: int, points: int = 60_001, iterations: int = 400) -> np.ndarray:
    """float32 coefficients, highest power first (kernel.cu's Horner order)."""
    a = np.linspace(0, CLAMP, points)
    q = np.log2(phi_minus(a))
    small = a * phi_minus(a)
    # q's error allowed, relative to the 1e-5 where gelu's small side is above 2^-25: 1, and below
    # it what keeps the absolute error under 1e-9 (capped: the far end needs only a few digits)
    allowed = np.where(small > 2.0**-25, 1.0, np.minimum(1e-9 / (small * math.log(2) + 1e-300) / 1e-5, 1e6))
    weight = 1 / allowed
    scale = CLAMP ** np.arange(degree, -1, -1)  # monomials of a / 6.5: a well-conditioned solve
    v = np.vander(a, degree + 1) / scale
    lw = np.full_like(a, 1 / len(a))
    for _ in range(iterations):
        sw = np.sqrt(lw) * weight
        c, *_ = np.linalg.lstsq(v * sw[:, None], q * sw, rcond=None)
        e = np.abs(v @ c - q) * weight
        lw = lw * e
        lw /= lw.sum()
    return _f32(c / scale)


def gelu_f32(coef, x):
    """kernel.cu's gelu in float32 (ex2 taken as exactly rounded: MUFU.EX2 is within 2 ulp)."""
    x = _f32(x)
    a = np.minimum(np.abs(x), np.float32(CLAMP))
    q = np.full_like(a, coef[0])
    for c in coef[1:]:
        q = _fma(q, a, c)
    return _fma(-a, _f32(np.exp2(q.astype(np.float64))), np.maximum(x, 0))


def errors(coef):
    """(max relative error where |gelu| > 2^-25, max absolute error below) against float64."""
    x = np.linspace(-40, 40, 2_000_000, dtype=np.float32)
    y = gelu_f32(coef, x).astype(np.float64)
    x64 = x.astype(np.float64)
    truth = x64 * 0.5 * _erfc(-x64 / math.sqrt(2))
    err = np.abs(y - truth)
    big = np.abs(truth) > 2.0**-25
    return float((err[big] / np.abs(truth[big])).max()), float(err[~big].max())


if __name__ == "__main__":
    for d in [int(v) for v in sys.argv[1:]] or [7]:
        coef = fit(d)
        rel, absolute = errors(coef)
        print(f"degree {d}: relative {rel:.2e}, absolute {absolute:.2e}")
        print("  " + ", ".join(f"{c:.8g}f" for c in coef))
