"""Correctness: fresh random inputs, a poisoned output with guard zones, a float64 reference.

For every check: inputs are drawn fresh from N(0, 1) (never zeros), the output buffer is filled
with NaN and surrounded by guard zones of a NaN bit pattern, the stage runs, and then
  * every output element must have been written (no NaN left),
  * the guard zones must be untouched (no write outside C),
  * the relative Frobenius error ||C - ref|| / ||ref|| must stay under REL_FRO_FAIL, and
  * every element must satisfy |C - ref| <= ELEM_ULPS * ulp16(|ref|) + ACC_EPS * (|A| |B|^T),
i.e. about one fp16 rounding of the result plus a fp32-accumulation term that grows with K
through sum_k |a_ik b_jk|. The reference is float64: on the host for small shapes, cuBLAS
(cupy float64 matmul) for large ones.
"""
from __future__ import annotations

import itertools
import secrets
from dataclasses import asdict, dataclass

import numpy as np

from . import gpu

CHECKLIST = (1, 3, 17, 32, 64, 128, 129, 1024)  # every M, N, K combination the stage supports
LARGE_K = ((64, 64, 16384), (128, 128, 16384), (129, 129, 16384), (256, 256, 16384))
REL_FRO_EXPECT = 3e-4  # fp16 output rounding alone gives ~2.8e-4 for random data
REL_FRO_FAIL = 2e-3
REL_FRO_MIN_ELEMENTS = 64  # below this a near-zero reference makes the aggregate meaningless
ELEM_ULPS = 2.0        # in units of fp16's relative half-ulp at the reference value (2^-11)
ACC_EPS = 16 * 2.0**-24  # 16 fp32 roundings of the running sum, per unit of sum |a*b|
HOST_REF_MAX_MACS = 2**28  # float64 reference on the host below this many multiply-adds
GUARD = 64 * 1024      # fp16 elements of guard zone on each side of the output (128 KiB)
POISON = 0x7FFF        # an fp16 NaN bit pattern


def tile_shapes(constraints) -> list[tuple[int, int, int]]:
    """Multiples of a stage's tiles that the checklist grid misses: several blocks in each
    direction, odd block counts, one K tile and many, a grid longer than one group of blocks."""
    bm, bn, bk = constraints.m_multiple, constraints.n_multiple, constraints.k_multiple
    if (bm, bn, bk) == (1, 1, 1):
        return []
    return [(bm, bn, bk), (2 * bm, bn, 3 * bk), (3 * bm, 2 * bn, 7 * bk), (bm, 5 * bn, 16 * bk),
            (9 * bm, 3 * bn, 2 * bk), (17 * bm, 3 * bn, 5 * bk), (5 * bm, 11 * bn, 33 * bk)]


def checklist_shapes(constraints=None, quick: bool = False) -> list[tuple[int, int, int]]:
    """The articles' checklist: all (M, N, K) in CHECKLIST^3 plus large K, filtered by what the
    stage supports, plus multiples of its tiles (which the grid alone would barely touch)."""
    sizes = (1, 17, 128, 129) if quick else CHECKLIST
    shapes = list(itertools.product(sizes, repeat=3)) + list(LARGE_K)
    if constraints is not None:
        shapes = [s for s in shapes if constraints.supports(*s)]
        shapes += [s for s in tile_shapes(constraints) if s not in shapes]
    return shapes


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

    def as_dict(self) -> dict:
        return asdict(self)


def random_operands(m: int, n: int, k: int, seed: int, xp):
    """Fresh N(0, 1) float16 operands a (M, K), b (N, K) on the host (numpy) or GPU (cupy)."""
    if xp is np:
        rng = np.random.default_rng(seed)
        return (rng.standard_normal((m, k), dtype=np.float32).astype(np.float16),
                rng.standard_normal((n, k), dtype=np.float32).astype(np.float16))
    rng = xp.random.default_rng(seed)
    return (rng.standard_normal((m, k), dtype=xp.float32).astype(xp.float16),
            rng.standard_normal((n, k), dtype=xp.float32).astype(xp.float16))


def guarded_output(m: int, n: int, xp):
    """A poisoned (M, N) float16 output inside a poisoned buffer; returns (buffer, out view)."""
    buf = xp.full(GUARD + m * n + GUARD, POISON, dtype=xp.uint16).view(xp.float16)
    return buf, buf[GUARD:GUARD + m * n].reshape(m, n)


def reference(a, b, xp):
    """float64 a @ b.T and |a| @ |b|.T (for the per-element bound), on the host or the GPU."""
    a64, b64 = a.astype(xp.float64), b.astype(xp.float64)
    return a64 @ b64.T, xp.abs(a64) @ xp.abs(b64).T


def compare(c, ref, mag, xp) -> dict:
    """Error figures of c against the float64 reference (all arrays on the same device)."""
    c64 = c.astype(xp.float64)
    unwritten = int(xp.isnan(c64).sum())
    diff = xp.abs(xp.nan_to_num(c64, nan=0.0) - ref)
    ref_norm = float(xp.linalg.norm(ref))
    rel = float(xp.linalg.norm(diff)) / ref_norm if ref_norm > 0 else float(xp.linalg.norm(diff))
    bound = ELEM_ULPS * 2.0**-11 * xp.abs(ref) + ACC_EPS * mag + 2.0**-24  # + fp16 subnormal floor
    return {"unwritten": unwritten, "rel_fro": rel, "max_abs": float(diff.max()),
            "worst_bound_ratio": float((diff / bound).max())}


def judge(chk: Check) -> Check:
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


def check_gpu_stage(stage, m: int, n: int, k: int, seed: int | None = None) -> Check:
    """Run a GPU stage (or cuBLAS) once on fresh inputs and check every element."""
    cp = gpu.cupy()
    seed = secrets.randbits(63) if seed is None else seed
    chk = Check(stage.name, m, n, k, seed)
    a, b = random_operands(m, n, k, seed, cp)
    buf, out = guarded_output(m, n, cp)
    stage.gemm(a, b, out=out)
    cp.cuda.get_current_stream().synchronize()  # a launch or memory fault surfaces here, raised
    bits = buf.view(cp.uint16)
    chk.guard_damaged = int((bits[:GUARD] != POISON).sum() + (bits[GUARD + m * n:] != POISON).sum())
    if m * n * k <= HOST_REF_MAX_MACS:
        ref, mag = reference(a.get(), b.get(), np)
        figures = compare(out.get(), ref, mag, np)
    else:
        ref, mag = reference(a, b, cp)
        figures = compare(out, ref, mag, cp)
    for key, val in figures.items():
        setattr(chk, key, val)
    return judge(chk)


def check_cpu_stage(stage, m: int, n: int, k: int, seed: int | None = None) -> Check:
    """The numba baseline on the same checklist: float16 inputs, float32 result."""
    seed = secrets.randbits(63) if seed is None else seed
    chk = Check(stage.name, m, n, k, seed)
    a, b = random_operands(m, n, k, seed, np)
    out = np.full((m, n), np.nan, dtype=np.float32)
    stage.gemm(a, b, out=out)
    ref, mag = reference(a, b, np)
    for key, val in compare(out, ref, mag, np).items():
        setattr(chk, key, val)
    return judge(chk)


def check(stage, m: int, n: int, k: int, seed: int | None = None) -> Check:
    if getattr(stage, "kind", "gpu") == "cpu":
        return check_cpu_stage(stage, m, n, k, seed)
    return check_gpu_stage(stage, m, n, k, seed)
