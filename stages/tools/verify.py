"""Correctness: fresh random inputs, a poisoned output with guard zones, a float64 reference.

The one judge and the one sweep: `verify`, `bench`, the tests and the sanitizer script all call
`check` / `sweep` here, so a verdict means the same thing everywhere.

For every check: inputs are drawn fresh from N(0, 1) (never zeros), the output buffer is filled
with NaN and surrounded by guard zones of the same NaN bit pattern, the stage runs, and then
  * every output element must have been written (no NaN left),
  * the guard zones must be untouched (no write outside C),
  * the relative Frobenius error ||C - ref|| / ||ref|| must stay under REL_FRO_FAIL, and
  * every element must satisfy |C - ref| <= ELEM_ULPS * 2^-11 * |ref| + ACC_EPS * (|A| |B|^T),
i.e. about one fp16 rounding of the result plus an fp32-accumulation term that grows with K
through sum_k |a_ik b_jk|. Each criterion can fail on its own: rounding to fp16 is at most 2^-11
(4.9e-4) relative per element, so a right result stays under REL_FRO_FAIL = 6e-4, while an
output that uses the per-element bound's full two half-ulps everywhere (up to 1e-3) does not.
The reference is float64: on the host for small shapes, on the GPU (cupy float64) for large ones.
"""
from __future__ import annotations

import itertools
import math
import secrets
from dataclasses import asdict, dataclass

import numpy as np

from stages.core import contract, gpu

from . import inspect

CHECKLIST = (1, 3, 17, 32, 64, 128, 129, 1024)  # every M, N, K combination the stage supports
QUICK = (1, 17, 128, 129)
LARGE_K = ((64, 64, 16384), (128, 128, 16384), (129, 129, 16384), (256, 256, 16384))
REL_FRO_EXPECT = 3e-4  # fp16 output rounding alone gives ~2.8e-4 for random data
REL_FRO_FAIL = 6e-4    # above the worst case of rounding alone (2^-11 = 4.9e-4)
REL_FRO_MIN_ELEMENTS = 64  # below this a near-zero reference makes the aggregate meaningless
ELEM_ULPS = 2.0        # in units of fp16's relative half-ulp at the reference value (2^-11)
ACC_EPS = 16 * 2.0**-24  # 16 fp32 roundings of the running sum, per unit of sum |a*b|
ACT_SLOPE = 1.13       # the steepest slope of the activations (GELU's), applied to the bound
HOST_REF_MAX_MACS = 2**28  # float64 reference on the host below this many multiply-adds
GUARD = 64 * 1024      # elements of guard zone on each side of the output
POISON = {np.dtype(np.float16): (np.uint16, 0x7FFF), np.dtype(np.float32): (np.uint32, 0x7FFFFFFF)}


# ---- shapes -------------------------------------------------------------------------------------
def tile_shapes(constraints) -> list[tuple[int, int, int]]:
    """Multiples of a stage's tiles that the checklist grid misses: several blocks in each
    direction, odd block counts, one K tile and many, a grid longer than one group of blocks,
    more blocks than the SMs hold at once."""
    bm, bn, bk = constraints.m_multiple, constraints.n_multiple, constraints.k_multiple
    if (bm, bn, bk) == (1, 1, 1):
        return []
    # The last two have more blocks than a 132-SM GPU holds at once, so a persistent grid ends on a
    # partial wave (144 = 132 + 12 and 208 = 132 + 76 blocks), which v4 splits by stream-K (their
    # K is long enough for it to pay).
    return [(bm, bn, bk), (2 * bm, bn, 3 * bk), (3 * bm, 2 * bn, 7 * bk), (bm, 5 * bn, 16 * bk),
            (9 * bm, 3 * bn, 2 * bk), (17 * bm, 3 * bn, 5 * bk), (5 * bm, 11 * bn, 33 * bk),
            (12 * bm, 12 * bn, 16 * bk), (16 * bm, 13 * bn, 32 * bk)]


def checklist_shapes(constraints=None, quick: bool = False) -> list[tuple[int, int, int]]:
    """The articles' checklist: all (M, N, K) in CHECKLIST^3 plus large K, filtered by what the
    stage supports, plus multiples of its tiles (which the grid alone would barely touch)."""
    sizes = QUICK if quick else CHECKLIST
    shapes = list(itertools.product(sizes, repeat=3)) + list(LARGE_K)
    if constraints is not None:
        shapes = [s for s in shapes if constraints.supports(*s)]
        shapes += [s for s in tile_shapes(constraints) if s not in shapes]
    return shapes


# ---- inputs, output, reference ------------------------------------------------------------------
def random_operands(m: int, n: int, k: int, seed: int, xp, scale: float = 1.0):
    """Fresh N(0, scale^2) float16 operands a (M, K), b (N, K) on the host (numpy) or GPU."""
    rng = np.random.default_rng(seed) if xp is np else xp.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=xp.float32)
    b = rng.standard_normal((n, k), dtype=xp.float32)
    if scale != 1.0:
        a, b = a * scale, b * scale
    return a.astype(xp.float16), b.astype(xp.float16)


def guarded_output(m: int, n: int, xp, dtype=np.float16):
    """A NaN-poisoned (M, N) output inside a poisoned buffer; returns (buffer, out view)."""
    bits, poison = POISON[np.dtype(dtype)]
    buf = xp.full(GUARD + m * n + GUARD, poison, dtype=bits).view(dtype)
    return buf, buf[GUARD:GUARD + m * n].reshape(m, n)


def guard_damage(buf, m: int, n: int, xp) -> int:
    """How many guard elements no longer hold the poison: writes outside C."""
    bits, poison = POISON[np.dtype(buf.dtype)]
    raw = buf.view(bits)
    return int((raw[:GUARD] != poison).sum() + (raw[GUARD + m * n:] != poison).sum())


def _erf(x, xp):
    if xp is np:
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    from cupyx.scipy.special import erf  # noqa: PLC0415  (optional GPU dependency)

    return erf(x)


def activate(x, activation: str | None, xp):
    """The epilogue's activations in float64, as torch defines them."""
    if activation is None:
        return x
    if activation == "relu":
        return xp.maximum(x, 0.0)
    if activation == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0), xp))
    if activation == "gelu_tanh":
        return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    if activation == "silu":
        # x / (1 + e^-x), written with e^-|x| so that no exp overflows (x < -709 would, with a
        # RuntimeWarning, though the quotient came out right)
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, x, x * e) / (1.0 + e)
    raise ValueError(f"unknown activation {activation!r}")


def reference(a, b, xp, epilogue: contract.Epilogue = contract.PLAIN):
    """float64 act(alpha * a @ b.T + bias) and the bound's magnitude term, on host or GPU."""
    return _reference_and_pre(a, b, xp, epilogue)[:2]


def _reference_and_pre(a, b, xp, epilogue: contract.Epilogue):
    """reference()'s (ref, mag) and the pre-activation they came from (ref itself without one)."""
    pre, mag = _affine(a, b, xp, epilogue)
    if epilogue.activation is None:
        return pre, mag, pre
    return activate(pre, epilogue.activation, xp), mag * ACT_SLOPE, pre


def _affine(a, b, xp, epilogue: contract.Epilogue):
    """float64 alpha * a @ b.T + bias (the pre-activation) and its magnitude term."""
    a64, b64 = a.astype(xp.float64), b.astype(xp.float64)
    pre = a64 @ b64.T
    mag = xp.abs(a64) @ xp.abs(b64).T
    if epilogue is not contract.PLAIN:
        pre = pre * epilogue.alpha
        mag = mag * abs(epilogue.alpha)
        if epilogue.bias is not None:
            bias = xp.asarray(epilogue.bias).astype(xp.float64)
            pre = pre + bias[None, :]
            mag = mag + xp.abs(bias)[None, :] * 2.0**-11  # the bias's own fp32 rounding, generous
    return pre, mag


def compare(c, ref, mag, xp, slack=0.0) -> dict:
    """Error figures of c against the float64 reference (all arrays on the same device). `slack`
    (absolute, per element or one number) widens the bound for a form known to be less accurate
    than it: see check()'s `form_error`."""
    c64 = c.astype(xp.float64)
    holes = xp.isnan(c64)
    unwritten = int(holes.sum())
    # Unwritten elements are counted above and nowhere else: each criterion judges on its own.
    diff = xp.abs(xp.where(holes, ref, c64) - ref)
    ref_norm = float(xp.linalg.norm(ref))
    rel = float(xp.linalg.norm(diff)) / ref_norm if ref_norm > 0 else float(xp.linalg.norm(diff))
    bound = ELEM_ULPS * 2.0**-11 * xp.abs(ref) + ACC_EPS * mag + 2.0**-24 + slack  # + fp16 subnormal floor
    return {"unwritten": unwritten, "rel_fro": rel, "max_abs": float(diff.max()),
            "worst_bound_ratio": float((diff / bound).max())}


# ---- the judge ----------------------------------------------------------------------------------
@dataclass
class Check:
    stage: str
    m: int
    n: int
    k: int
    seed: int
    passed: bool = False
    rel_fro: float = float("nan")
    max_abs: float = float("nan")
    worst_bound_ratio: float = float("nan")  # max over elements of |C - ref| / bound
    unwritten: int = 0
    guard_damaged: int = 0
    reason: str = ""
    epilogue: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def judge(chk: Check) -> Check:
    """The verdict: every criterion alone can fail a check (see the module docstring)."""
    if chk.reason:  # set before judging: the call itself raised, there is no output to judge
        chk.passed = False
        return chk
    problems = []
    if chk.unwritten:
        problems.append(f"{chk.unwritten} output elements never written (still NaN)")
    if chk.guard_damaged:
        problems.append(f"{chk.guard_damaged} guard elements overwritten (writes outside C)")
    # The aggregate criterion needs enough elements: a 1 x 1 result whose reference happens to be
    # near zero (cancellation in one dot product) has a huge *relative* error even when it is
    # right to the last bit of fp32 accumulation. The per-element bound judges those alone.
    if chk.m * chk.n >= REL_FRO_MIN_ELEMENTS and not chk.rel_fro <= REL_FRO_FAIL:
        problems.append(f"relative Frobenius error {chk.rel_fro:.2e} > {REL_FRO_FAIL:.0e}")
    if not chk.worst_bound_ratio <= 1.0:
        problems.append(f"an element is {chk.worst_bound_ratio:.1f}x over its error bound")
    chk.passed, chk.reason = not problems, "; ".join(problems)
    return chk


def judge_output(chk: Check, out, ref, mag, xp, buf=None, slack=0.0) -> Check:
    """Fill `chk` from an output (and its guarded buffer, if any) and judge it."""
    if buf is not None:
        chk.guard_damaged = guard_damage(buf, chk.m, chk.n, xp)
    for key, val in compare(out, ref, mag, xp, slack).items():
        setattr(chk, key, val)
    return judge(chk)


def describe_epilogue(epi: contract.Epilogue) -> str:
    """"alpha=0.5, bias float32, gelu": how a check's epilogue is named in reports ("" plain)."""
    parts = []
    if epi.alpha != 1.0:
        parts.append(f"alpha={epi.alpha:g}")
    if epi.bias is not None:
        parts.append(f"bias {epi.bias.dtype}")
    if epi.activation:
        parts.append(epi.activation)
    return ", ".join(parts)


def check(stage, m: int, n: int, k: int, seed: int | None = None, *, bias_dtype=None,
          alpha: float = 1.0, activation: str | None = None, xp=None, form_error: float = 0.0) -> Check:
    """Run `stage` once on fresh inputs into a guarded, poisoned output and judge every element.

    GPU stages (and cuBLAS) run on CuPy arrays with an fp16 output; the CPU baseline on numpy
    with an fp32 output. `xp=numpy` runs any stage-like object on the host (how the tests drive
    the judge with deliberately broken writers, no GPU needed).

    `form_error` (0 for every shipped build) widens each element's bound by form_error times
    |its pre-activation| (alpha * a @ b.T + bias): the error an activation form is known to make
    beyond the bound, stated where it is used (v5's ACT_MATH=0 knob: CUDA's 0.5 x (1 + erff(x /
    sqrt 2)) loses the small side to 1 + erf ~ 0, tests/test_v5.py).
    """
    cpu = getattr(stage, "kind", "gpu") == "cpu"
    xp = xp or (np if cpu else gpu.cupy())
    seed = secrets.randbits(63) if seed is None else seed
    chk = Check(stage.name, m, n, k, seed)
    a, b = random_operands(m, n, k, seed, xp)
    bias = None
    if bias_dtype is not None:
        rng = np.random.default_rng(seed + 1) if xp is np else xp.random.default_rng(seed + 1)
        bias = rng.standard_normal(n, dtype=xp.float32).astype(bias_dtype)
    buf, out = guarded_output(m, n, xp, np.float32 if cpu else np.float16)
    kwargs = {}
    if bias is not None or alpha != 1.0 or activation is not None:
        kwargs = {"bias": bias, "alpha": alpha, "activation": activation}
    epi = contract.Epilogue(bias, float(alpha), activation) if kwargs else contract.PLAIN
    chk.epilogue = describe_epilogue(epi)
    stage.gemm(a, b, out=out, **kwargs)
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()  # a launch or memory fault surfaces here, raised
    if xp is not np and m * n * k <= HOST_REF_MAX_MACS:  # small: reference on the host
        host_epi = epi if epi is contract.PLAIN else contract.Epilogue(
            None if bias is None else bias.get(), epi.alpha, epi.activation)
        chk.guard_damaged = guard_damage(buf, m, n, xp)
        ref, mag, slack = _judged_reference(a.get(), b.get(), np, host_epi, form_error)
        return judge_output(chk, out.get(), ref, mag, np, slack=slack)
    ref, mag, slack = _judged_reference(a, b, xp, epi, form_error)
    return judge_output(chk, out, ref, mag, xp, buf, slack=slack)


def _judged_reference(a, b, xp, epi: contract.Epilogue, form_error: float):
    """reference()'s (ref, mag) and check()'s widening of the bound: form_error times |the
    pre-activation| (0 without either), from one float64 product."""
    ref, mag, pre = _reference_and_pre(a, b, xp, epi)
    return ref, mag, (form_error * xp.abs(pre) if form_error and epi.activation is not None else 0.0)


# ---- epilogue cases -------------------------------------------------------------------------------
# What `verify --epilogue all` runs on every shape for a stage that fuses an epilogue: every
# activation, with and without a bias, fp16 and fp32 biases, alpha != 1 (check()'s keywords).
EPILOGUE_CASES = {
    "plain": {},
    "alpha": {"alpha": -0.75},
    "bias16": {"bias_dtype": np.float16},
    "bias32+relu": {"bias_dtype": np.float32, "activation": "relu"},
    "bias16+gelu": {"bias_dtype": np.float16, "activation": "gelu"},
    "alpha+bias32+gelu_tanh": {"alpha": 0.5, "bias_dtype": np.float32, "activation": "gelu_tanh"},
    "bias16+silu": {"bias_dtype": np.float16, "activation": "silu"},
    "gelu": {"activation": "gelu"},
    "alpha+silu": {"alpha": 1.5, "activation": "silu"},
}


def epilogue_cases(stage, which: str = "all") -> dict[str, dict]:
    """The EPILOGUE_CASES `stage` fuses ("all"), or the one named, or only "plain"."""
    fused = set(getattr(stage, "epilogue", ()))

    def needs(kw):
        return {f for f, used in (("bias", "bias_dtype" in kw), ("alpha", "alpha" in kw),
                                  ("activation", "activation" in kw)) if used}

    if which == "all":
        return {name: kw for name, kw in EPILOGUE_CASES.items() if needs(kw) <= fused}
    if which not in EPILOGUE_CASES:
        raise ValueError(f"unknown epilogue case {which!r}; choose all or one of: {', '.join(EPILOGUE_CASES)}")
    if not needs(EPILOGUE_CASES[which]) <= fused:
        raise ValueError(f"{stage.name} does not fuse {', '.join(sorted(needs(EPILOGUE_CASES[which]) - fused))}")
    return {which: EPILOGUE_CASES[which]}


# ---- the sweep ----------------------------------------------------------------------------------
def sweep(stage, shapes, repeat: int = 1, seed: int | None = None, on_check=None, xp=None,
          **epilogue) -> list[Check]:
    """`check` over `shapes` (those the stage supports), `repeat` times with fresh inputs.

    A call that raises (a launch failure, a CUDA error) becomes a failed Check with the reason.
    `on_check(i, total, chk)` is called after each check (progress).
    """
    supported = [s for s in shapes if stage.constraints.supports(*s)]
    total = len(supported) * repeat
    results = []
    for i, (m, n, k) in enumerate(supported * repeat):
        try:
            chk = check(stage, m, n, k, seed=seed, xp=xp, **epilogue)
        except (RuntimeError, ValueError, TypeError, MemoryError) as exc:  # launch failures, CUDA errors
            chk = judge(Check(stage.name, m, n, k, -1 if seed is None else seed,
                              reason=f"{type(exc).__name__}: {exc}"))
        results.append(chk)
        if on_check:
            on_check(i, total, chk)
    return results


def overrides_not_built(stage, overrides: dict, shapes, cases, dev=None) -> list[tuple]:
    """The calls of a sweep (each supported shape with each epilogue case, as `sweep` takes them)
    whose build does not hold every define of `overrides`: a stage that decides part of its build
    per call (`defines_for`, aligned operands: inspect.call_defines) drops a knob where the call
    cannot take it, so that `verify --set` would check another build there. [(shape, case, {define:
    the value built})]; [] for a stage with one build for every call."""
    if not getattr(stage, "defines_for", None) or not overrides:
        return []
    out = []
    for shape in (s for s in shapes if stage.constraints.supports(*s)):
        for case in cases:
            bias = np.zeros(1, case["bias_dtype"]) if case.get("bias_dtype") is not None else None
            epi = contract.Epilogue(bias, float(case.get("alpha", 1.0)), case.get("activation"))
            built = {**stage.defines, **inspect.call_defines(stage, *shape, epi, dev)}
            other = {key: built.get(key) for key, val in overrides.items() if built.get(key) != val}
            if other:
                out.append((tuple(shape), case, other))
    return out


def failures(checks: list[Check]) -> list[str]:
    """One line per failed check: what a test asserts is empty."""
    return [f"{c.stage} {c.m}x{c.n}x{c.k}{' [' + c.epilogue + ']' if c.epilogue else ''} seed={c.seed}: {c.reason}"
            for c in checks if not c.passed]
