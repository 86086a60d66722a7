"""Reliability under stress (issue 14): every GPU stage through random shapes, compute-sanitizer,
repeated calls, two streams and two host threads, inf/nan/overflow/subnormal inputs beside
cuBLAS, a table of hostile calls, 10,000 calls for leaks, and deliberately broken kernels; one
JSON record of kind "stress" (results/runs/, or results/ with --publish).

    python -m stages stress [STAGE ...] [--shapes N] [--quick] [--no-sanitizers]
                            [--leak-calls N] [--seed S] [--budget SECONDS] [--publish | --out PATH]
    python -m stages.tools.stress ...       (the same, without the CLI)

Wiring into stages/tools/cli.py (four lines):
    from . import bench, ceilings, newstage, profile, records, report, stress, verify   # the import line
      stress    races, memory errors, hostile inputs, concurrency, leaks (one "stress" record)   # docstring
    stress.add_parser(sub)                 # in parser(), before `return p`
    "stress": stress.cmd_stress,           # in main()'s `commands` dict

Sections (each a function returning the fields it adds to the stage's entry; the judge is always
verify.py's: float64 reference, NaN-poisoned output inside guard zones, every element bounded):
  random_shapes  `random_shapes(constraints, count, rng)`: sizes 1..4096 within the stage's
                 constraints, biased to odd sizes (odd tile counts for tiled stages), tails
                 (16..256-multiples +-1..3), tiny dimensions, a few large ones; total work capped
                 in multiply-adds. Inputs N(0, 1) at three scales (1e-3 on A: subnormal inputs,
                 1, and up to 30 within fp16's range); stages that fuse an epilogue cycle every
                 activation x bias (none, fp16, fp32) x alpha.
  repeat         the same inputs 100 times: bitwise-identical outputs (and the first one right).
  concurrency    two CUDA streams at once; two host threads at once on a fresh copy of the stage
                 compiling into an empty kernel cache (compile, module and tensor-map caches);
                 gemm captured into a CUDA graph on a non-default stream: nothing runs until the
                 graph does, then the result is right (it launched on the caller's current stream).
  values         nan, +-inf, inf-inf, inf*0, fp16 overflow, large finite, subnormal inputs, beside
                 cuBLAS and the IEEE float64 result: a finite wrong value (or a non-finite one
                 where both cuBLAS and float64 are finite) is a failure; other differences text.
  hostile        `hostile_table()`: >= 20 bad calls, each refused with TypeError/ValueError naming
                 the rule, before any launch (a poisoned output stays poisoned), and a right call
                 after each.
  leaks          10,000 calls cycling 50 shapes x 3 input sets: device memory in use returns to its
                 level, the pool does not grow, compiled functions and loaded modules stay at the
                 number of configurations, geometries <= 4097, tensor maps <= tma._MAX_ENTRIES.
  fault          child processes: a launch the driver refuses, a kernel that stores C one row
                 down (the judge sees unwritten elements and guard damage), the BREAK_* exercises
                 a stage defines (races), an operand in unmapped memory (an exception, not a
                 silent result).
  sanitizers     compute-sanitizer memcheck, racecheck and synccheck over scripts/sanitize_probe.py
                 on a small, an odd and a large shape (in the background, while the rest runs);
                 a count that could not be read is null with the reason, never 0.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import glob
import itertools
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import stages
from stages.core import compiler, contract, gpu, tma
from stages.core.stage import Call, Launch

from . import records, verify
from .bench import Progress
from .profile import parse_spec

# ---- the shape generator -------------------------------------------------------------------
MAX_DIM = 4096
TAIL_TILES = (16, 32, 64, 128, 256)      # tails: a multiple of one of these, +-1..3
TAIL_OFFSETS = (-3, -2, -1, 1, 2, 3)
ODD_BIAS = 0.6                           # chance an even draw is moved to an odd neighbour
EDGE_SHARE = 0.15                        # chance a large dimension is the largest there is (4096)
SHAPE_MAX_MACS = 2**32                   # one shape: at most 4.3 G multiply-adds (2048 x 2048 x 1024)
MACS_PER_SHAPE = 2**27                   # all shapes: at most count x 134 M multiply-adds
BIG_EVERY = 250                          # one shape in 250 (at least one) is large in every dimension
# Shares of the other shapes; the first kinds take the remainder of the rounding.
SHAPE_KINDS = (("small", 0.30), ("medium", 0.25), ("tail", 0.15), ("tiny", 0.10), ("large", 0.12),
               ("mixed", 0.08))
_RANGES = {"small": (1, 64), "medium": (65, 640), "large": (2049, MAX_DIM)}


def _units(constraints) -> tuple[int, int, int]:
    return constraints.m_multiple, constraints.n_multiple, constraints.k_multiple


def _odd_neighbour(v: int, lo: int, hi: int) -> int:
    if v % 2:
        return v
    return v + 1 if v + 1 <= hi else v - 1 if v - 1 >= lo else v


def _dim(kind: str, unit: int, rng) -> int:
    """One dimension of `kind` that is a multiple of `unit` within 1..MAX_DIM."""
    top = MAX_DIM // unit  # the most tiles that fit
    if unit == 1:
        if kind == "tiny":
            return int(rng.integers(1, 4))
        if kind == "tail":
            tile = int(rng.choice(TAIL_TILES))
            v = tile * int(rng.integers(1, 9)) + int(rng.choice(TAIL_OFFSETS))
            return min(max(v, 1), MAX_DIM)
        lo, hi = _RANGES[kind]
        if kind == "large" and rng.random() < EDGE_SHARE:
            return MAX_DIM
        v = int(rng.integers(lo, hi + 1))
        return _odd_neighbour(v, lo, hi) if rng.random() < ODD_BIAS else v
    # a tiled dimension: a number of tiles; odd counts stand in for odd sizes
    if kind == "tiny":
        return unit
    if kind == "tail":  # no tails to take: odd tile counts, every one of 1, 3, 5, 7 that fits
        odd = [t for t in (1, 3, 5, 7) if t <= top]
        return unit * int(rng.choice(odd))
    if kind == "large" and rng.random() < EDGE_SHARE:
        return unit * top
    lo_t, hi_t = {"small": (1, min(2, top)), "medium": (1, max(1, min(top, 640 // unit))),
                  "large": (max(1, min(top, 2048 // unit + 1)), top)}[kind]
    t = int(rng.integers(lo_t, hi_t + 1))
    if rng.random() < ODD_BIAS:
        t = _odd_neighbour(t, lo_t, hi_t)
    return unit * t


def _kinds_of(kind: str, rng) -> list[str]:
    """What each of (M, N, K) is drawn as, for a shape of `kind`."""
    if kind in ("small", "medium", "tail"):
        return [kind] * 3
    if kind == "big":
        return ["large"] * 3
    if kind == "tiny":  # one or two tiny dimensions beside anything: GEMV-like shapes
        out = [str(rng.choice(("small", "medium", "large"), p=(0.4, 0.45, 0.15))) for _ in range(3)]
        for i in rng.choice(3, size=1 + int(rng.random() < 0.3), replace=False):
            out[int(i)] = "tiny"
        return out
    if kind == "large":  # one dimension up to 4096, the others small or medium
        out = [str(rng.choice(("small", "medium"), p=(0.7, 0.3))) for _ in range(3)]
        out[int(rng.integers(0, 3))] = "large"
        return out
    return [str(rng.choice(("tiny", "small", "medium", "tail", "large"), p=(0.1, 0.35, 0.3, 0.15, 0.1)))
            for _ in range(3)]  # mixed


def _quota(count: int) -> list[tuple[str, int]]:
    big = max(1, count // BIG_EVERY) if count >= 10 else 0
    minimal = 1 if count >= 10 else 0  # the smallest shape the stage takes (1 x 1 x 1, or one tile)
    rest = count - big - minimal
    n = {kind: int(share * rest) for kind, share in SHAPE_KINDS}
    order = [kind for kind, _ in SHAPE_KINDS]
    for i in range(rest - sum(n.values())):
        n[order[i % len(order)]] += 1
    return [("big", big), ("minimal", minimal)] + [(kind, n[kind]) for kind in order]


def _shrink(dims: list[int], units, allowed: int) -> list[int]:
    """Halve the largest dimension that can shrink (in whole tiles) until the shape fits `allowed`
    multiply-adds."""
    dims = list(dims)
    while dims[0] * dims[1] * dims[2] > allowed:
        can = [j for j in range(3) if dims[j] // units[j] > 1]
        if not can:
            break
        i = max(can, key=lambda j: dims[j])
        dims[i] = units[i] * (dims[i] // units[i] // 2)
    return dims


def random_shapes(constraints, count: int, rng, *, max_shape_macs: int = SHAPE_MAX_MACS,
                  max_total_macs: int | None = None) -> list[tuple[int, int, int]]:
    """`count` shapes (M, N, K) that `constraints` supports, every size in 1..4096, drawn from
    `rng` (a numpy Generator; the same seed gives the same list): small, medium, tails, tiny
    dimensions, one large dimension, and one shape in 250 large in all three; odd sizes (odd
    tile counts) favoured. No shape exceeds `max_shape_macs` multiply-adds and all together stay
    within `max_total_macs` (default count x MACS_PER_SHAPE): the naive stage and the float64
    reference pay for every one of them."""
    units = _units(constraints)
    if any(u < 1 or u > MAX_DIM for u in units):
        raise ValueError(f"no size in 1..{MAX_DIM} is a multiple of {units} ({constraints.describe()})")
    if count <= 0:
        return []
    min_macs = units[0] * units[1] * units[2]
    total_cap = count * MACS_PER_SHAPE if max_total_macs is None else max_total_macs
    if count * min_macs > total_cap or min_macs > max_shape_macs:
        raise ValueError(f"{count} shapes of at least {min_macs} multiply-adds do not fit {total_cap} "
                         f"(at most {max_shape_macs} each)")
    plan = [kind for kind, n in _quota(count) for _ in range(n)]
    rest = [kind for kind in plan if kind != "big"]  # the big ones first: the budget is theirs
    plan = ["big"] * (len(plan) - len(rest)) + [rest[i] for i in rng.permutation(len(rest))]
    shapes, used = [], 0
    for i, kind in enumerate(plan):
        if kind == "minimal":
            dims = list(units)
        else:
            dims = [_dim(dk, u, rng) for dk, u in zip(_kinds_of(kind, rng), units)]
        left = count - i - 1
        allowed = min(max_shape_macs, total_cap - used - left * min_macs)
        dims = _shrink(dims, units, allowed)
        shapes.append(tuple(dims))
        used += dims[0] * dims[1] * dims[2]
    return [shapes[i] for i in rng.permutation(len(shapes))]


def is_tail(v: int) -> bool:
    """A size just off a multiple of one of TAIL_TILES (what a tiled kernel's edge handling sees)."""
    return any(v > t and v % t in {o % t for o in TAIL_OFFSETS} for t in TAIL_TILES)


# ---- inputs, epilogues, the check ----------------------------------------------------------
SCALES = ("1e-3", "1", "large")  # A's scale / both: 1e-3 on A alone (subnormal inputs), 1, up to 30
EPILOGUE_ALPHAS = (1.0, 0.5, -1.5)


def scales_for(kind: str, k: int) -> tuple[float, float]:
    """(scale of A, scale of B): the results stay within fp16 (std <= 5000, alpha up to 2)."""
    if kind == "1e-3":
        return 1e-3, 1.0
    if kind == "1":
        return 1.0, 1.0
    s = min(30.0, math.sqrt(5000.0 / math.sqrt(k)))
    return s, s


def epilogue_combos(features) -> list[dict]:
    """Every combination of the epilogue operands a stage fuses: activation x bias x alpha."""
    acts = (None, *contract.ACTIVATIONS) if "activation" in features else (None,)
    biases = (None, "float16", "float32") if "bias" in features else (None,)
    alphas = EPILOGUE_ALPHAS if "alpha" in features else (1.0,)
    return [{"activation": act, "bias": bias, "alpha": alpha}
            for act, bias, alpha in itertools.product(acts, biases, alphas)]


@dataclass
class Case:
    """One call's inputs on the GPU, its guarded output and what it is judged against."""
    m: int
    n: int
    k: int
    seed: int
    a: Any
    b: Any
    kwargs: dict
    epi: Any
    buf: Any
    out: Any
    desc: str = ""


def make_case(m, n, k, seed, scale_a=1.0, scale_b=1.0, epilogue: dict | None = None) -> Case:
    """Fresh N(0, scale^2) fp16 operands (cupy), the epilogue's bias, a poisoned guarded output."""
    cp = gpu.cupy()
    rng = cp.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=cp.float32)
    b = rng.standard_normal((n, k), dtype=cp.float32)
    a = (a * scale_a if scale_a != 1.0 else a).astype(cp.float16)
    b = (b * scale_b if scale_b != 1.0 else b).astype(cp.float16)
    spec = epilogue or {}
    bias = None
    if spec.get("bias"):
        size = max(scale_a * scale_b * math.sqrt(k), 1e-3)  # of the order of the product's entries
        bias = (rng.standard_normal(n, dtype=cp.float32) * size).astype(spec["bias"])
    alpha, act = float(spec.get("alpha", 1.0)), spec.get("activation")
    kwargs = {}
    if bias is not None or alpha != 1.0 or act is not None:
        kwargs = {"bias": bias, "alpha": alpha, "activation": act}
    epi = contract.Epilogue(bias, alpha, act) if kwargs else contract.PLAIN
    buf, out = verify.guarded_output(m, n, cp)
    return Case(m, n, k, seed, a, b, kwargs, epi, buf, out, verify.describe_epilogue(epi))


def judge_case(st, case: Case, error: str = "") -> verify.Check:
    """verify's verdict on a case's output (or on the exception its call raised)."""
    cp = gpu.cupy()
    chk = verify.Check(st.name, case.m, case.n, case.k, case.seed, epilogue=case.desc)
    if error:
        chk.reason = error
        return verify.judge(chk)
    try:
        ref, mag = verify.reference(case.a, case.b, cp, case.epi)
        return verify.judge_output(chk, case.out, ref, mag, cp, case.buf)
    except Exception as exc:  # noqa: BLE001  a CUDA error while judging is a failure too
        chk.reason = f"judging raised {type(exc).__name__}: {exc}"[:400]
        return verify.judge(chk)


def run_case(st, case: Case) -> verify.Check:
    """Call the stage on the case (current stream), synchronize, judge."""
    cp = gpu.cupy()
    try:
        st.gemm(case.a, case.b, out=case.out, **case.kwargs)
        cp.cuda.get_current_stream().synchronize()  # a launch or memory fault surfaces here
    except Exception as exc:  # noqa: BLE001  anything raised is a failed check, with its reason
        return judge_case(st, case, f"{type(exc).__name__}: {exc}"[:400])
    return judge_case(st, case)


def _line(chk: verify.Check) -> str:
    return verify.failures([chk])[0] if not chk.passed else ""


# ---- section: random shapes ----------------------------------------------------------------
def _macs_per_second(st) -> float:
    """A stage's multiply-adds per second at a mid-size shape it takes (one warm call timed)."""
    cp = gpu.cupy()
    u = _units(st.constraints)
    m, n, k = (max(unit, 256 // unit * unit) for unit in u)
    a, b = verify.random_operands(m, n, k, 1, cp)
    st.gemm(a, b)
    cp.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    st.gemm(a, b)
    cp.cuda.get_current_stream().synchronize()
    return m * n * k / max(time.perf_counter() - t0, 1e-6)


def section_random_shapes(st, count: int, seed: int, bar=None, deadline: float | None = None) -> dict:
    rng = np.random.default_rng(seed)
    total = None
    if deadline is not None:
        # A slow stage (the naive one: ~0.25 T multiply-adds/s on the H200) gets smaller shapes, so
        # that all `count` fit its share of the budget: a third of it for its own kernels, the rest
        # for the references and the judge. Measured: at the default work cap it managed 292 of
        # 1,000 shapes in its share.
        rate = _macs_per_second(st)
        total = min(count * MACS_PER_SHAPE, int(rate * max(0.0, deadline - time.monotonic()) / 3))
        u = _units(st.constraints)
        total = max(total, count * u[0] * u[1] * u[2])
    # the large-in-every-dimension shapes come first and may take at most a tenth of it each
    per_shape = SHAPE_MAX_MACS if total is None else max(min(SHAPE_MAX_MACS, total // 10), u[0] * u[1] * u[2])
    shapes = random_shapes(st.constraints, count, rng, max_shape_macs=per_shape, max_total_macs=total)
    combos = epilogue_combos(st.epilogue)
    fails, tried, rel, bound = [], 0, 0.0, 0.0
    per_scale = {s: 0 for s in SCALES}
    epilogues = set()
    stopped = ""
    for i, (m, n, k) in enumerate(shapes):
        if deadline is not None and time.monotonic() > deadline:
            stopped = f"stopped after {i} of {len(shapes)} shapes: the time budget ran out"
            break
        scale = SCALES[i % len(SCALES)]
        spec = combos[(i // len(SCALES)) % len(combos)]
        sa, sb = scales_for(scale, k)
        case = make_case(m, n, k, int(rng.integers(0, 2**62)), sa, sb, spec)
        chk = run_case(st, case)
        tried += 1
        per_scale[scale] += 1
        epilogues.add(case.desc or "plain")
        if chk.rel_fro == chk.rel_fro:
            rel = max(rel, chk.rel_fro)
        if chk.worst_bound_ratio == chk.worst_bound_ratio:
            bound = max(bound, chk.worst_bound_ratio)
        if not chk.passed:
            fails.append(_line(chk) + f" [scale {scale}]")
        del case
        if bar is not None:
            bar.update()
            if (i + 1) % 100 == 0:
                bar.set_description_str(f"{st.name}: random shapes {i + 1}/{len(shapes)}, {len(fails)} failed")
    macs = [m * n * k for m, n, k in shapes[:tried]]
    return {"shapes_tried": tried, "random_failures": len(fails), "random_failure_examples": fails[:5],
            "random_shapes": {"requested": count, "tried": tried, "failed": len(fails), "per_scale": per_scale,
                              "epilogues": sorted(epilogues), "max_rel_fro": rel, "max_bound_ratio": bound,
                              "total_macs": int(sum(macs)), "largest_macs": int(max(macs, default=0)),
                              "odd_sizes": sum(1 for s in shapes[:tried] for d in s if d % 2),
                              "note": stopped}}


# ---- section: repeatability ----------------------------------------------------------------
REPEAT_CALLS = 100


def mid_shape(constraints) -> tuple[int, int, int]:
    mm, nm, km = _units(constraints)
    if (mm, nm, km) == (1, 1, 1):
        return 333, 257, 1031
    return 3 * mm, 3 * nm, 5 * km if km > 1 else 5 * 64


def section_repeat(st, seed: int, calls: int = REPEAT_CALLS) -> dict:
    """The same inputs `calls` times (out allocated each call): every output bitwise identical."""
    cp = gpu.cupy()
    m, n, k = mid_shape(st.constraints)
    specs = [{}]
    if st.epilogue:
        full = {"bias": "float32", "alpha": 0.5, "activation": contract.ACTIVATIONS[1]}
        specs.append({key: val for key, val in full.items() if key in st.epilogue})
    rows = []
    for j, spec in enumerate(specs):
        case = make_case(m, n, k, seed + j, epilogue=spec)
        chk = run_case(st, case)
        first = case.out.view(cp.uint16).copy()
        mismatching = 0
        for _ in range(calls - 1):
            out = st.gemm(case.a, case.b, **case.kwargs)
            mismatching += int(not bool(cp.array_equal(out.view(cp.uint16), first)))
        rows.append({"shape": [m, n, k], "epilogue": case.desc or "plain", "calls": calls,
                     "mismatching_calls": mismatching, "first_call_right": chk.passed,
                     "first_call_reason": chk.reason})
    ok = all(r["mismatching_calls"] == 0 and r["first_call_right"] for r in rows)
    return {"repeat_bitwise_ok": ok, "repeat": rows}


# ---- section: concurrency ------------------------------------------------------------------
def two_shapes(constraints) -> list[tuple[int, int, int]]:
    mm, nm, km = _units(constraints)
    if (mm, nm, km) == (1, 1, 1):
        return [(1000, 900, 1201), (515, 1031, 777)]
    return [(4 * mm, 4 * nm, 16 * km), (3 * mm, 5 * nm, 9 * km)]


def _epilogue_for(st, i: int) -> dict:
    combos = epilogue_combos(st.epilogue)
    return combos[(7 * i + 1) % len(combos)] if len(combos) > 1 else {}


def _streams(st, seed: int, rounds: int = 4) -> dict:
    cp = gpu.cupy()
    shapes = two_shapes(st.constraints)
    cases = [make_case(*shapes[i % 2], seed + i, epilogue=_epilogue_for(st, i)) for i in range(2 * rounds)]
    cp.cuda.Device().synchronize()  # the inputs exist before the non-blocking streams read them
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    error = ""
    try:
        for i, case in enumerate(cases):
            with streams[i % 2]:
                st.gemm(case.a, case.b, out=case.out, **case.kwargs)
        for s in streams:
            s.synchronize()
    except Exception as exc:  # noqa: BLE001
        error = f"{type(exc).__name__}: {exc}"[:400]
    checks = [judge_case(st, c, error) for c in cases]
    bad = verify.failures(checks)
    return {"ok": not bad, "calls": len(cases), "failed": len(bad), "examples": bad[:3],
            "detail": f"{len(cases)} calls alternating on two non-blocking streams, shapes "
                      f"{' and '.join('x'.join(map(str, s)) for s in shapes)}"}


def _current_stream(st, seed: int) -> dict:
    """gemm inside a CUDA graph capture on a non-default stream: if it launched anywhere but the
    current stream it would run at once (or break the capture); captured, nothing runs until
    the graph is launched, and then the result is right."""
    cp = gpu.cupy()
    m, n, k = two_shapes(st.constraints)[1]
    case = make_case(m, n, k, seed, epilogue=_epilogue_for(st, 3))
    st.gemm(case.a, case.b, out=case.out, **case.kwargs)  # warm: compile, load, geometry, tensor maps
    bits, poison = verify.POISON[np.dtype(np.float16)]
    case.buf.view(bits).fill(poison)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    try:
        with stream:
            stream.begin_capture()
            try:
                st.gemm(case.a, case.b, out=case.out, **case.kwargs)
            finally:
                graph = stream.end_capture()
        cp.cuda.Device().synchronize()
        untouched = bool(cp.isnan(case.out).all())
        graph.launch(stream=stream)
        stream.synchronize()
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "detail": f"capture on the current stream failed: {type(exc).__name__}: {exc}"[:400]}
    chk = judge_case(st, case)
    return {"ok": untouched and chk.passed, "output_untouched_until_graph_launch": untouched,
            "graph_result_right": chk.passed, "reason": chk.reason,
            "detail": "gemm captured into a CUDA graph on a non-blocking stream: "
                      + ("nothing ran before the graph did" if untouched else "the output was written during capture "
                         "(the launch went to another stream)")}


def _threads(st, seed: int, rounds: int = 6) -> dict:
    """Two host threads, each on its own stream, on a fresh copy of the stage (empty function and
    geometry caches) compiling into an empty kernel cache; new arrays every call (new tensor maps)."""
    cp = gpu.cupy()
    fresh = st.variant()
    shapes = two_shapes(st.constraints)
    cases = [[make_case(*shapes[(t + r) % 2], seed + 100 * t + r, epilogue=_epilogue_for(st, t + 2 * r))
              for r in range(rounds)] for t in range(2)]
    cp.cuda.Device().synchronize()
    dev_id = gpu.current_device_id()
    errors = [None, None]
    barrier = threading.Barrier(2)
    maps_before = tma.stats["encoded"]

    def work(t):
        try:
            with cp.cuda.Device(dev_id):
                stream = cp.cuda.Stream(non_blocking=True)
                with stream:
                    barrier.wait(timeout=120)
                    for case in cases[t]:
                        fresh.gemm(case.a, case.b, out=case.out, **case.kwargs)
                    stream.synchronize()
        except BaseException as exc:  # noqa: BLE001  reported, never lost in the thread
            errors[t] = f"{type(exc).__name__}: {exc}"[:400]

    cache = tempfile.mkdtemp(prefix="gemm-stress-cache-")
    old = os.environ.get("GEMM_STAGES_CACHE")
    os.environ["GEMM_STAGES_CACHE"] = cache  # both threads compile and load from scratch
    try:
        threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=600)
        hung = [i for i, th in enumerate(threads) if th.is_alive()]
    finally:
        if old is None:
            os.environ.pop("GEMM_STAGES_CACHE", None)
        else:
            os.environ["GEMM_STAGES_CACHE"] = old
    if hung:
        return {"ok": False, "detail": f"thread(s) {hung} still running after 600 s (a deadlock?)"}
    shutil.rmtree(cache, ignore_errors=True)
    checks = [judge_case(st, c, errors[t] or "") for t in range(2) for c in cases[t]]
    bad = verify.failures(checks)
    return {"ok": not bad and not any(errors), "calls": len(checks), "failed": len(bad), "examples": bad[:3],
            "thread_errors": [e for e in errors if e], "functions_compiled": len(fresh._functions),
            "tensor_maps_encoded": tma.stats["encoded"] - maps_before,
            "detail": "two host threads at once, one stream each, one fresh copy of the stage compiling "
                      "into an empty kernel cache, new arrays on every call"}


def section_concurrency(st, seed: int) -> dict:
    parts = {"two_streams": _streams(st, seed), "current_stream": _current_stream(st, seed + 50),
             "two_threads": _threads(st, seed + 100)}
    failed = sum(p.get("failed", 0 if p["ok"] else 1) for p in parts.values())
    examples = [e for p in parts.values() for e in p.get("examples", [])]
    examples += [f"current stream: {parts['current_stream']['detail']}"] if not parts["current_stream"]["ok"] else []
    return {"concurrency_ok": all(p["ok"] for p in parts.values()), "concurrency": parts,
            "concurrency_failures": failed, "concurrency_failure_examples": examples[:3]}


# ---- section: special values beside cuBLAS -------------------------------------------------
FP16_MAX = 65504.0
FP16_OVERFLOW = 65520.0     # round-to-nearest sends |x| >= this to inf
_FIN, _NAN, _PINF, _NINF, _EITHER = 0, 1, 2, 3, -1
_CLASS = {_FIN: "finite", _NAN: "nan", _PINF: "+inf", _NINF: "-inf"}


def values_shape(constraints) -> tuple[int, int, int]:
    mm, nm, km = _units(constraints)
    if (mm, nm, km) == (1, 1, 1):
        return 67, 45, 129
    return 2 * mm, 2 * nm, 2 * km if km > 1 else 128


def value_inputs(m: int, n: int, k: int, rng) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, a, b) host fp16 operands with special values; m, n >= 4 and k >= 2."""
    def normal(shape, scale=1.0):
        return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float16)

    def nonzero(x):
        return np.where(x == 0, np.float16(1), x)

    i0, i1, i2, i3 = (int(i) for i in rng.choice(m, 4, replace=False))
    j0, j3 = (int(j) for j in rng.choice(n, 2, replace=False))
    k0, k1 = (int(x) for x in rng.choice(k, 2, replace=False))
    cases = []
    a, b = normal((m, k)), normal((n, k))
    a[i0, k0] = np.nan
    cases.append(("nan in a", a, b))
    a, b = normal((m, k)), normal((n, k))
    a[:, k0] = nonzero(a[:, k0])
    b[j0, k0] = np.inf
    cases.append(("+inf in b", a, b))
    a, b = normal((m, k)), normal((n, k))
    b[:, k1] = nonzero(b[:, k1])
    a[i1, k1] = -np.inf
    cases.append(("-inf in a", a, b))
    a, b = normal((m, k)), normal((n, k))
    b[:, k0], b[:, k1] = 1, -1
    a[i2, k0] = a[i2, k1] = np.inf
    cases.append(("inf - inf in one dot product", a, b))
    a, b = normal((m, k)), normal((n, k))
    b[:, k0] = nonzero(b[:, k0])
    b[j3, k0] = 0
    a[i3, k0] = np.inf
    cases.append(("inf * 0", a, b))
    cases.append(("results past fp16's range (overflow)", normal((m, k), 200.0), normal((n, k), 200.0)))
    s = math.sqrt(6000.0 / math.sqrt(k))
    cases.append(("large finite results (up to ~30000)", normal((m, k), s), normal((n, k), s)))
    cases.append(("subnormal a (|a| ~ 2^-20)", normal((m, k), 2.0**-20), normal((n, k))))
    cases.append(("subnormal a and b (results underflow)", normal((m, k), 2.0**-16), normal((n, k), 2.0**-16)))
    return cases


def ieee_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 a @ b.T with IEEE special values (elementwise products and sums wherever an
    operand row holds inf or nan), and the magnitude term of the error bound."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fa, fb = np.isfinite(a64), np.isfinite(b64)
    a0, b0 = np.where(fa, a64, 0.0), np.where(fb, b64, 0.0)
    ref, mag = a0 @ b0.T, np.abs(a0) @ np.abs(b0).T
    with np.errstate(invalid="ignore", over="ignore"):
        for i in np.nonzero(~fa.all(1))[0]:
            ref[i, :] = (a64[i][None, :] * b64).sum(1)
        for j in np.nonzero(~fb.all(1))[0]:
            ref[:, j] = (a64 * b64[j][None, :]).sum(1)
    return ref, mag


def classify(x: np.ndarray) -> np.ndarray:
    cls = np.full(x.shape, _FIN, dtype=np.int8)
    cls[np.isnan(x)] = _NAN
    cls[np.isposinf(x)] = _PINF
    cls[np.isneginf(x)] = _NINF
    return cls


def expected_class(ref: np.ndarray) -> np.ndarray:
    """What an fp16 result must be: the float64 class, with fp16 overflow (and a band around the
    overflow threshold where fp32 rounding may go either way)."""
    cls = classify(ref)
    fin = cls == _FIN
    big = np.where(fin, np.abs(np.where(fin, ref, 0.0)), 0.0)
    over = fin & (big >= FP16_OVERFLOW * (1 + 1e-3))
    cls[over] = np.where(ref[over] > 0, _PINF, _NINF)
    cls[fin & (big > FP16_OVERFLOW * (1 - 1e-3)) & ~over] = _EITHER
    return cls


def _pairs(x: np.ndarray, y: np.ndarray) -> list[tuple[tuple[int, int], int]]:
    """((x value, y value), how many) for every pair that occurs, in order."""
    if x.size == 0:
        return []
    pairs, counts = np.unique(np.stack([x.astype(np.int64), y.astype(np.int64)], 1), axis=0, return_counts=True)
    return [((int(p[0]), int(p[1])), int(c)) for p, c in zip(pairs, counts)]


def compare_values(name: str, c: np.ndarray, r: np.ndarray, ref: np.ndarray, mag: np.ndarray) -> dict:
    """Judge a stage's output `c` against the IEEE float64 result and cuBLAS's `r` (host arrays)."""
    c64, r64 = c.astype(np.float64), r.astype(np.float64)
    cc, rc, ec = classify(c64), classify(r64), expected_class(ref)
    with np.errstate(invalid="ignore", over="ignore"):
        bound = verify.ELEM_ULPS * 2.0**-11 * np.abs(ref) + verify.ACC_EPS * mag + 2.0**-24
        off = np.abs(c64 - ref) > bound
    fails, notes = [], []

    def count(mask):
        return int(mask.sum())

    finite_wrong = (ec == _FIN) & (cc == _FIN) & off
    if count(finite_wrong):
        i, j = np.argwhere(finite_wrong)[0]
        fails.append(f"{count(finite_wrong)} finite values outside the error bound (e.g. ({i}, {j}): "
                     f"{c64[i, j]!r} against {ref[i, j]!r})")
    hides = (ec != _FIN) & (ec != _EITHER) & (cc == _FIN) & (rc != _FIN)
    if count(hides):
        i, j = np.argwhere(hides)[0]
        fails.append(f"{count(hides)} finite values where IEEE gives {_CLASS[int(ec[i, j])]} and so does cuBLAS "
                     f"(e.g. ({i}, {j}): {c64[i, j]!r})")
    spurious = (ec == _FIN) & (cc != _FIN) & (rc == _FIN)
    if count(spurious):
        i, j = np.argwhere(spurious)[0]
        fails.append(f"{count(spurious)} {_CLASS[int(cc[i, j])]} where the result is finite (cuBLAS too; "
                     f"e.g. ({i}, {j}) should be {ref[i, j]!r})")
    shared = (ec != _EITHER) & (cc != ec) & (cc == rc)
    for (e_cls, s_cls), n_el in _pairs(ec[shared], cc[shared]):
        notes.append(f"{name}: stage and cuBLAS both give {_CLASS[s_cls]} where IEEE float64 gives "
                     f"{_CLASS[e_cls]} ({n_el} elements)")
    mismatch = (ec != _EITHER) & (cc != rc)
    for (s_cls, r_cls), n_el in _pairs(cc[mismatch], rc[mismatch]):
        notes.append(f"{name}: stage gives {_CLASS[s_cls]} where cuBLAS gives {_CLASS[r_cls]} ({n_el} elements)")
    return {"case": name, "elements": int(c.size), "stage_classes": {_CLASS[x]: count(cc == x) for x in _CLASS},
            "cublas_classes": {_CLASS[x]: count(rc == x) for x in _CLASS},
            "ambiguous_at_overflow": count(ec == _EITHER), "failures": fails, "differences": notes}


def section_values(st, seed: int) -> dict:
    cp = gpu.cupy()
    cublas = stages.get("cublas")
    m, n, k = values_shape(st.constraints)
    rng = np.random.default_rng(seed)
    rows = []
    for name, a_host, b_host in value_inputs(m, n, k, rng):
        a, b = cp.asarray(a_host), cp.asarray(b_host)
        try:
            c = st.gemm(a, b)
            r = cublas.gemm(a, b)
            cp.cuda.Device().synchronize()
        except Exception as exc:  # noqa: BLE001
            rows.append({"case": name, "failures": [f"raised {type(exc).__name__}: {exc}"[:300]], "differences": []})
            continue
        ref, mag = ieee_reference(a_host, b_host)
        rows.append(compare_values(name, c.get(), r.get(), ref, mag))
    diffs = [d for row in rows for d in row["differences"]]
    fails = [f"values {m}x{n}x{k} {row['case']}: {f}" for row in rows for f in row["failures"]]
    return {"values_differences": diffs, "values_failures": len([r for r in rows if r["failures"]]),
            "values_failure_examples": fails[:5], "values": {"shape": [m, n, k], "cases": rows}}


# ---- section: hostile calls ----------------------------------------------------------------
class Skip(Exception):
    """A hostile call this machine cannot build (a second GPU, 4 GiB of rows): skipped, with why."""


@dataclass(frozen=True)
class Hostile:
    name: str
    expected: type              # TypeError or ValueError
    match: str                  # the message names the rule (regex)
    build: Callable[[Any], dict]  # maker -> {"a", "b", "out", "bias", "alpha", "activation"} to override
    applies: Callable[[Any], bool] = lambda st: True


def hostile_shape(constraints) -> tuple[int, int, int]:
    mm, nm, km = _units(constraints)
    return (mm if mm > 1 else 5), (nm if nm > 1 else 3), max(km, 8)


def misalign_bytes(constraints) -> int:
    """An offset that breaks the stage's base alignment: one fp16 element, or one byte where a
    2-byte alignment is all a stage needs."""
    return 2 if constraints.alignment > 2 else 1


def _off_tiles(mk) -> dict:
    m, n, k = mk.shape
    mm, nm, km = mk.units
    if mm > 1:
        return {"a": mk.array((m + 1, k))}
    if nm > 1:
        return {"b": mk.array((n + 1, k))}
    return {"a": mk.array((m, k + 1)), "b": mk.array((n, k + 1))}


def hostile_table() -> list[Hostile]:
    """The bad calls, each with the exception and the message it must raise. `build(mk)` makes
    the bad operand(s) with a maker (real CuPy arrays on a GPU; stand-ins without one)."""
    f16, f32 = "float16", "float32"
    not_fused = {feat: (lambda st, f=feat: f not in st.epilogue) for feat in contract.EPILOGUE_FEATURES}
    return [
        Hostile("a float32", TypeError, r"a must be float16", lambda mk: {"a": mk.array(mk.a_shape, f32)}),
        Hostile("b float64", TypeError, r"b must be float16", lambda mk: {"b": mk.array(mk.b_shape, "float64")}),
        Hostile("a int8", TypeError, r"a must be float16", lambda mk: {"a": mk.array(mk.a_shape, "int8")}),
        Hostile("a 3-D", ValueError, r"a must be 2-D", lambda mk: {"a": mk.array((1, *mk.a_shape))}),
        Hostile("b 1-D", ValueError, r"b must be 2-D", lambda mk: {"b": mk.array((mk.b_shape[0] * mk.b_shape[1],))}),
        Hostile("K mismatch (b is (N, 2K))", ValueError, r"K mismatch",
                lambda mk: {"b": mk.array((mk.shape[1], 2 * mk.shape[2]))}),
        Hostile("zero-size a (M = 0)", ValueError, r"empty dimension", lambda mk: {"a": mk.array((0, mk.shape[2]))}),
        Hostile("zero-size K (a and b with K = 0)", ValueError, r"empty dimension",
                lambda mk: {"a": mk.array((mk.shape[0], 0)), "b": mk.array((mk.shape[1], 0))}),
        Hostile("a Fortran-ordered", ValueError, r"a must be C-contiguous", lambda mk: {"a": mk.fortran(mk.a_shape)}),
        Hostile("b a strided view", ValueError, r"b must be C-contiguous", lambda mk: {"b": mk.strided(mk.b_shape)}),
        Hostile("a an offset view breaking alignment", ValueError, r"a must start on a \d+-byte boundary",
                lambda mk: {"a": mk.offset(mk.a_shape, mk.misalign)}),
        Hostile("b an offset view breaking alignment", ValueError, r"b must start on a \d+-byte boundary",
                lambda mk: {"b": mk.offset(mk.b_shape, mk.misalign)}),
        Hostile("out an offset view breaking alignment", ValueError, r"out must start on a \d+-byte boundary",
                lambda mk: {"out": mk.offset(mk.out_shape, mk.misalign)}),
        Hostile("a a host (numpy) array", TypeError, r"a is a host array", lambda mk: {"a": mk.host(mk.a_shape)}),
        Hostile("b a Python list", TypeError, r"b must be a GPU array",
                lambda mk: {"b": [[0.0] * mk.shape[2] for _ in range(mk.shape[1])]}),
        Hostile("a on another GPU", ValueError, r"a is on GPU \d+ but the current device is GPU \d+",
                lambda mk: {"a": mk.other_device(mk.a_shape)}),
        Hostile("out of the wrong shape", ValueError, r"out must have shape",
                lambda mk: {"out": mk.array((mk.shape[0], mk.shape[1] + 1))}),
        Hostile("out float32", TypeError, r"out must be float16", lambda mk: {"out": mk.array(mk.out_shape, f32)}),
        Hostile("out aliasing a", ValueError, r"out overlaps a or b",
                lambda mk: dict(zip(("a", "out"), mk.overlapping(mk.a_shape, mk.out_shape)))),
        Hostile("out aliasing b", ValueError, r"out overlaps a or b",
                lambda mk: dict(zip(("b", "out"), mk.overlapping(mk.b_shape, mk.out_shape)))),
        Hostile("out a host array", TypeError, r"out is a host array", lambda mk: {"out": mk.host(mk.out_shape)}),
        Hostile("out a transposed view", ValueError, r"out must be C-contiguous",
                lambda mk: {"out": mk.transposed(mk.out_shape)}),
        Hostile("bias of the wrong length (N + 1)", ValueError, r"bias must have shape \(N,\)",
                lambda mk: {"bias": mk.array((mk.shape[1] + 1,), f32)}),
        Hostile("bias float64", TypeError, r"bias must be float16 or float32",
                lambda mk: {"bias": mk.array((mk.shape[1],), "float64")}),
        Hostile("bias int32", TypeError, r"bias must be float16 or float32",
                lambda mk: {"bias": mk.array((mk.shape[1],), "int32")}),
        Hostile("bias 2-D (1, N)", ValueError, r"bias must have shape \(N,\)",
                lambda mk: {"bias": mk.array((1, mk.shape[1]), f32)}),
        Hostile("bias a host array", TypeError, r"bias is a host array", lambda mk: {"bias": mk.host((mk.shape[1],), f32)}),
        Hostile("bias overlapping out", ValueError, r"bias overlaps out",
                lambda mk: dict(zip(("out", "bias"), mk.overlapping(mk.out_shape, (mk.shape[1],))))),
        Hostile("unknown activation 'tanh'", ValueError, r"unknown activation 'tanh'", lambda mk: {"activation": "tanh"}),
        Hostile("activation in the wrong case 'ReLU'", ValueError, r"unknown activation 'ReLU'",
                lambda mk: {"activation": "ReLU"}),
        Hostile("alpha nan", ValueError, r"alpha must be finite", lambda mk: {"alpha": float("nan")}),
        Hostile("alpha inf", ValueError, r"alpha must be finite", lambda mk: {"alpha": float("inf")}),
        Hostile("alpha a string", TypeError, r"alpha must be a real number", lambda mk: {"alpha": "2"}),
        Hostile("alpha complex", TypeError, r"alpha must be a real number", lambda mk: {"alpha": 1 + 1j}),
        Hostile("alpha a bool", TypeError, r"alpha must be a real number", lambda mk: {"alpha": True}),
        Hostile("a shape off the stage's tiles", ValueError, r"needs [MNK] to be a multiple of \d+", _off_tiles,
                applies=lambda st: max(_units(st.constraints)) > 1),
        Hostile("M beyond int32 (2^31 rows)", ValueError, r"M=2147483648 does not fit the kernels' 32-bit int",
                lambda mk: {"a": mk.huge((2**31, mk.shape[2]))}),
        Hostile("bias on a stage that does not fuse bias", ValueError, r"does not fuse bias",
                lambda mk: {"bias": mk.array((mk.shape[1],), f32)}, applies=not_fused["bias"]),
        Hostile("activation on a stage that does not fuse it", ValueError, r"does not fuse activation",
                lambda mk: {"activation": "relu"}, applies=not_fused["activation"]),
        Hostile("alpha != 1 on a stage that does not fuse alpha", ValueError, r"does not fuse alpha",
                lambda mk: {"alpha": 2.0}, applies=not_fused["alpha"]),
    ]


class GpuMaker:
    """Builds hostile operands as real CuPy arrays (kept alive here until the maker goes)."""

    def __init__(self, constraints, seed: int = 0):
        self.cp = gpu.cupy()
        self.units = _units(constraints)
        self.shape = hostile_shape(constraints)
        m, n, k = self.shape
        self.a_shape, self.b_shape, self.out_shape = (m, k), (n, k), (m, n)
        self.misalign = misalign_bytes(constraints)
        self.a, self.b = verify.random_operands(m, n, k, seed, self.cp)
        self._keep = []

    def _hold(self, x):
        self._keep.append(x)
        return x

    def array(self, shape, dtype="float16"):
        return self._hold(self.cp.zeros(shape, dtype=dtype))

    def fortran(self, shape):
        return self._hold(self.cp.asfortranarray(self.cp.zeros(shape, dtype="float16")))

    def strided(self, shape):
        return self._hold(self.cp.zeros((shape[0], 2 * shape[1]), dtype="float16"))[:, ::2]

    def transposed(self, shape):
        return self._hold(self.cp.zeros((shape[1], shape[0]), dtype="float16")).T

    def offset(self, shape, nbytes: int, dtype="float16"):
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        raw = self._hold(self.cp.zeros(size + 256, dtype=self.cp.uint8))
        return self._hold(self.cp.ndarray(shape, dtype, memptr=raw.data + nbytes))

    def overlapping(self, shape1, shape2):
        base = self._hold(self.cp.zeros(max(int(np.prod(shape1)), int(np.prod(shape2))), dtype="float16"))
        return base[:int(np.prod(shape1))].reshape(shape1), base[:int(np.prod(shape2))].reshape(shape2)

    def host(self, shape, dtype="float16"):
        return np.zeros(shape, dtype=dtype)

    def other_device(self, shape):
        count = self.cp.cuda.runtime.getDeviceCount()
        if count < 2:
            raise Skip("one GPU here (runs on a machine with two, and without a GPU in CI)")
        other = (gpu.current_device_id() + 1) % count
        with self.cp.cuda.Device(other):
            return self._hold(self.cp.zeros(shape, dtype="float16"))

    def huge(self, shape):
        raise Skip(f"{shape[0]} x {shape[1]} fp16 is not allocated for a check (runs without a GPU in CI)")


def try_hostile(row: Hostile, call: Callable, mk, default_out=None) -> dict:
    """Make the row's operands with `mk`, make the call, and say whether it raised what it must."""
    base = {"name": row.name, "expected": row.expected.__name__}
    try:
        parts = row.build(mk)
    except Skip as why:
        return {**base, "status": "skipped", "reason": str(why), "ok": None}
    except Exception as exc:  # noqa: BLE001  the array library refused to build the bad operand
        return {**base, "status": "skipped", "reason": f"could not build it: {type(exc).__name__}: {exc}"[:300],
                "ok": None}
    a, b = parts.get("a", mk.a), parts.get("b", mk.b)
    out = parts.get("out", default_out)
    kwargs = {key: parts[key] for key in ("bias", "alpha", "activation") if key in parts}
    try:
        call(a, b, out, **kwargs)
        raised, message = None, "accepted: no exception"
    except Exception as exc:  # noqa: BLE001  any other type is a failure of the row
        raised, message = exc, str(exc)
    ok = isinstance(raised, row.expected) and bool(re.search(row.match, message))
    return {**base, "status": "ok" if ok else "failed", "raised": type(raised).__name__ if raised else None,
            "message": message[:240], "ok": ok, "used_sentinel_out": "out" not in parts}


def section_hostile(st, seed: int) -> dict:
    cp = gpu.cupy()
    mk = GpuMaker(st.constraints, seed)
    m, n, k = mk.shape
    rows = []
    for row in hostile_table():
        if not row.applies(st):
            continue
        buf, sentinel = verify.guarded_output(m, n, cp)
        res = try_hostile(row, st.gemm, mk, default_out=sentinel)
        if res["status"] == "skipped":
            rows.append(res)
            continue
        try:
            cp.cuda.Device().synchronize()  # a launch that slipped through would fault or write here
            untouched = verify.guard_damage(buf, m, n, cp) == 0 and bool(cp.isnan(sentinel).all())
        except Exception as exc:  # noqa: BLE001
            untouched, res["message"] = False, f"{res['message']} | then: {type(exc).__name__}: {exc}"[:400]
        good = verify.check(st, m, n, k)
        res["nothing_written"] = untouched if res["used_sentinel_out"] else None
        res["gpu_usable_after"] = good.passed
        res["ok"] = bool(res["ok"] and untouched and good.passed)
        res["status"] = "ok" if res["ok"] else "failed"
        rows.append(res)
    ran = [r for r in rows if r["status"] != "skipped"]
    bad = [f"hostile '{r['name']}': expected {r['expected']}, got {r.get('raised')}: {r.get('message', '')}"[:300]
           for r in ran if not r["ok"]]
    return {"hostile_calls": len(ran), "hostile_ok": not bad and len(ran) >= 20, "hostile_table": rows,
            "hostile_failure_examples": bad[:5]}


# ---- section: leaks ------------------------------------------------------------------------
LEAK_SHAPES = 50
LEAK_INPUT_SETS = 3          # per shape: 150 distinct arrays of A and B, > tma._MAX_ENTRIES maps
LEAK_SHAPE_MACS = 2**24
GEOMETRY_SHAPES = 5000       # distinct shapes pushed through the geometry cache (no launches)
LAUNCH_CACHE_BOUND = 4097    # stage.py clears the cache once it holds more than 4096


def _snapshot(st, pool, cp) -> dict:
    return {"device_bytes_in_use": pool.used_bytes(), "pool_bytes": pool.total_bytes(),
            "driver_free_bytes": cp.cuda.runtime.memGetInfo()[0], "functions": len(st._functions),
            "launch_geometries": len(st._launches), "tensor_maps": len(tma._cache),
            "modules": compiler._module.cache_info().currsize}


def leak_checks(before: dict, after: dict, peak: dict, geo_peak: int, max_out: int) -> dict:
    """The leak section's verdicts from its snapshots (name -> passed)."""
    return {
        # no growth: it may drop (an array still referenced before the loop freed meanwhile)
        "device memory in use back to its level": after["device_bytes_in_use"] <= before["device_bytes_in_use"],
        "memory pool grew by at most two outputs": after["pool_bytes"] <= before["pool_bytes"] + 2 * max_out,
        "no function compiled after the warm-up": after["functions"] == before["functions"],
        "no module loaded after the warm-up": after["modules"] == before["modules"],
        f"geometries <= {LAUNCH_CACHE_BOUND}": max(peak["launch_geometries"], geo_peak) <= LAUNCH_CACHE_BOUND,
        f"tensor maps <= {tma._MAX_ENTRIES}": peak["tensor_maps"] <= tma._MAX_ENTRIES,
    }


def section_leaks(st, calls: int, seed: int, bar=None) -> dict:
    if calls <= 0:
        return {"leak_bounds": {"ok": True, "note": "not run (--leak-calls 0)"}}
    cp = gpu.cupy()
    pool = cp.get_default_memory_pool()
    rng = np.random.default_rng(seed)
    shapes = random_shapes(st.constraints, LEAK_SHAPES, rng, max_shape_macs=LEAK_SHAPE_MACS,
                           max_total_macs=LEAK_SHAPES * LEAK_SHAPE_MACS)
    combos = epilogue_combos(st.epilogue)
    plans = []
    for j, (m, n, k) in enumerate(shapes * LEAK_INPUT_SETS):
        case = make_case(m, n, k, seed + j, epilogue=combos[j % len(combos)])
        plans.append((case.a, case.b, case.kwargs))
        del case
    max_out = max(m * n * 2 for m, n, _ in shapes)

    def call(i):
        a, b, kw = plans[i % len(plans)]
        return st.gemm(a, b, **kw)

    out = None
    for i in range(len(plans)):  # warm-up: every configuration compiled, every geometry planned
        out = call(i)
    out = None
    cp.cuda.Device().synchronize()
    before = _snapshot(st, pool, cp)
    peak = {"device_bytes_in_use": 0, "launch_geometries": 0, "tensor_maps": 0}
    t0 = time.perf_counter()
    for i in range(calls):
        out = call(i)
        if i % 250 == 0 or i == calls - 1:
            cp.cuda.Device().synchronize()
            for key, val in (("device_bytes_in_use", pool.used_bytes()), ("launch_geometries", len(st._launches)),
                             ("tensor_maps", len(tma._cache))):
                peak[key] = max(peak[key], val)
            if bar is not None and i % 2500 == 0:
                bar.set_description_str(f"{st.name}: leaks {i}/{calls} calls")
    out = None
    cp.cuda.Device().synchronize()
    seconds = time.perf_counter() - t0
    after = _snapshot(st, pool, cp)
    # the geometry cache past its bound: GEOMETRY_SHAPES distinct shapes, geometry only (on a
    # copy of the stage, whose caches start empty: the registry's stage is left as it was)
    probe = st.variant()
    dev = probe._device()
    mm, nm, km = _units(probe.constraints)
    geo_peak = 0
    for i in range(GEOMETRY_SHAPES):
        probe._launch(mm * (1 + i % 32), nm * (1 + (i // 32) % 32), km * (1 + i // 1024), dev, {}, ())
        geo_peak = max(geo_peak, len(probe._launches))
    checks = leak_checks(before, after, peak, geo_peak, max_out)
    bounds = {
        "calls": calls, "shapes": len(shapes), "input_sets": len(plans), "seconds": round(seconds, 2),
        "before": before, "after": after, "peak": peak, "geometry_peak_over_distinct_shapes": geo_peak,
        "stated_bounds": {
            "device_bytes_in_use": "no higher after than before (every output freed)",
            "pool_bytes": f"<= before + 2 x the largest output ({2 * max_out} B)",
            "functions": f"= the configurations used ({before['functions']}): one per set of defines",
            "modules": "= cubins loaded (one per configuration and device)",
            "launch_geometries": f"<= {LAUNCH_CACHE_BOUND} (cleared past 4096; {GEOMETRY_SHAPES} distinct shapes pushed)",
            "tensor_maps": f"<= {tma._MAX_ENTRIES} (least recently used dropped)",
        },
        "checks": checks, "ok": all(checks.values()),
    }
    return {"leak_bounds": bounds}


# ---- section: deliberately broken kernels (child processes) --------------------------------
PROBE_TAG = "STRESS-PROBE "
BAD_ADDRESS = 4096           # 16-byte aligned, never mapped on the device: page 1 of the address space
# The BREAK_* exercise defines, by define (shared code names no stage): overrides that go with it
# where the stage has them, repeats, whether it must show, what it breaks.
EXERCISES = {
    "BREAK_SYNC": ({}, 2, True, "drops the barrier between K tiles: a shared-memory race"),
    "BREAK_WAIT": ({"STAGES": 2}, 3, True, "waits for one cp.async group too few, with one buffer of slack "
                                           "(with three it hides behind timing)"),
    "BREAK_FULL_WAIT": ({}, 1, True, "reads the first tile before its full barrier"),
    "BREAK_EMPTY_WAIT": ({}, 2, False, "refills a buffer without its empty barrier: a narrow window that "
                                       "rarely shows (recorded, not required)"),
    "BREAK_FENCE": None,     # the compiler repairs it (inserts the fence): the answer stays right
}
RACECHECK_VISIBLE = ("BREAK_SYNC",)  # plain shared-memory races racecheck can see


def probe_shape(constraints) -> tuple[int, int, int]:
    mm, nm, km = _units(constraints)
    if (mm, nm, km) == (1, 1, 1):
        return 67, 45, 129
    return 2 * mm, 2 * nm, 4 * km


def exercises_of(st) -> list[tuple[dict, int, bool, str]]:
    """(overrides, repeats, must show, what it breaks) for every BREAK_* define of the stage."""
    out = []
    for define in sorted(d for d in st.defines if d.startswith("BREAK_")):
        if define in EXERCISES and EXERCISES[define] is None:
            continue
        extra, repeat, must, what = EXERCISES.get(define, ({}, 1, False, "not in the table: recorded, not required"))
        overrides = {define: 1, **{key: val for key, val in extra.items() if key in st.defines}}
        out.append((overrides, repeat, must, what))
    return out


def _emit(name: str, expected: bool, detected, detail: str) -> None:
    print(PROBE_TAG + json.dumps({"probe": name, "expected": expected, "detected": detected,
                                  "detail": str(detail)[:500]}), flush=True)


def _child_fault(spec: str) -> int:
    """The in-process probes of one stage's broken variants (run in a child: a race may hang or
    poison the context)."""
    st = parse_spec(spec)
    cp = gpu.cupy()
    m, n, k = probe_shape(st.constraints)
    a, b = verify.random_operands(m, n, k, 7, cp)

    broken = dataclasses.replace(st, geometry=lambda m_, n_, k_, c, dev: Launch((1, 1, 1), (4096, 1, 1)),
                                 name=st.name + "[4096-thread block]")
    try:
        broken.gemm(a, b)
        cp.cuda.get_current_stream().synchronize()
        _emit("a launch the driver refuses", True, False, "no exception: the result was never written")
    except Exception as exc:  # noqa: BLE001
        _emit("a launch the driver refuses", True, True, f"{type(exc).__name__}: {exc}")

    buf, out = verify.guarded_output(m, n, cp)
    shifted = buf[verify.GUARD + n: verify.GUARD + n + m * n].reshape(m, n)
    original = st.arguments

    def shift(call):
        return Call(call.a, call.b, shifted, call.m, call.n, call.k, call.cfg, call.dev, call.epilogue)

    changes = {"arguments": lambda call: original(shift(call)), "name": st.name + "[C stored one row down]"}
    if getattr(st, "plan", None) is not None:  # a stage whose call is several steps gets them for C moved
        original_plan = st.plan
        changes["plan"] = lambda call, kernels: original_plan(shift(call), kernels)
    broken = dataclasses.replace(st, **changes)
    chk = verify.Check(broken.name, m, n, k, 7)
    try:
        broken.gemm(a, b, out=out)
        cp.cuda.get_current_stream().synchronize()
        ref, mag = verify.reference(a, b, cp)
        verify.judge_output(chk, out, ref, mag, cp, buf)
        _emit("C stored one row down (a write past the end of C)", True, not chk.passed,
              f"the judge: {chk.reason or 'passed'}")
    except Exception as exc:  # noqa: BLE001
        _emit("C stored one row down (a write past the end of C)", True, True, f"{type(exc).__name__}: {exc}")

    for overrides, repeat, must, what in exercises_of(st):
        name = ",".join(f"{key}={val}" for key, val in overrides.items())
        try:
            variant = st.variant(**overrides)
            shapes = verify.checklist_shapes(variant.constraints, quick=True)
            checks = verify.sweep(variant, shapes, repeat=repeat)
            bad = verify.failures(checks)
            _emit(f"{name}: {what}", must, bool(bad),
                  f"{len(bad)} of {len(checks)} checks failed" + (f"; first: {bad[0]}" if bad else ""))
        except Exception as exc:  # noqa: BLE001
            _emit(f"{name}: {what}", must, True, f"raised {type(exc).__name__}: {exc}")
    return 0


def _child_illegal(spec: str) -> int:
    """A operand whose memory is not mapped: the kernel faults and the call (or the next
    synchronize) raises. Last thing this process does: the context is dead afterwards."""
    st = parse_spec(spec)
    cp = gpu.cupy()
    m, n, k = probe_shape(st.constraints)
    a, b = verify.random_operands(m, n, k, 9, cp)
    mem = cp.cuda.UnownedMemory(BAD_ADDRESS, a.nbytes, None, gpu.current_device_id())
    bad = cp.ndarray(a.shape, cp.float16, cp.cuda.MemoryPointer(mem, 0))
    name = "A in unmapped device memory (an illegal address)"
    try:
        st.gemm(bad, b)
        cp.cuda.get_current_stream().synchronize()
        _emit(name, True, False, "no exception: the kernel read unmapped memory and returned")
    except Exception as exc:  # noqa: BLE001
        _emit(name, True, True, f"{type(exc).__name__}: {exc}")
    sys.stdout.flush()
    os._exit(0)  # the context is poisoned: skip teardown, which could only add noise


def _child_probe(spec: str, shapes: list[tuple[int, int, int]]) -> int:
    """What compute-sanitizer wraps for a variant (scripts/sanitize_probe.py takes registry names)."""
    st = parse_spec(spec)
    bad = 0
    for chk in verify.sweep(st, shapes):
        print(f"{st.name} {chk.m}x{chk.n}x{chk.k}: {'ok' if chk.passed else 'FAIL ' + chk.reason}", flush=True)
        bad += not chk.passed
    return 1 if bad else 0


def parse_probes(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith(PROBE_TAG):
            try:
                out.append(json.loads(line[len(PROBE_TAG):]))
            except json.JSONDecodeError:
                pass
    return out


# ---- subprocesses: children and compute-sanitizer ------------------------------------------
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
SANITIZER_FIELDS = {"memcheck": "memcheck_errors", "racecheck": "racecheck_hazards", "synccheck": "synccheck_errors"}
SANITIZER_TIMEOUT_S = 420
CHILD_TIMEOUT_S = 300
SANITIZER_JOBS = 6
PROBE_SCRIPT = records.REPO / "scripts" / "sanitize_probe.py"


def child_env(base: dict | None = None) -> dict:
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(records.REPO), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


_LIVE: set = set()  # child processes running now (killed with their groups if the run is terminated)


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_child(cmd: list[str], timeout_s: float, env: dict) -> dict:
    """Run a command in its own process group; on timeout the whole group is killed."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=records.REPO, env=env, start_new_session=True)
    _LIVE.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            out = ""
        timed_out = True
    finally:
        _LIVE.discard(proc)
    return {"rc": proc.returncode, "output": out or "", "seconds": round(time.monotonic() - t0, 1),
            "timed_out": timed_out}


def _terminated(signum, _frame):
    """SIGTERM (a `timeout` around the run): take the children down too, then exit."""
    for proc in list(_LIVE):
        _kill_group(proc)
    raise SystemExit(128 + signum)


def find_sanitizer() -> str | None:
    hit = shutil.which("compute-sanitizer")
    if hit:
        return hit
    for pattern in ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda-*/bin/compute-sanitizer",
                    "/opt/nvidia/compute-sanitizer/compute-sanitizer"):
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return compiler.tool("compute-sanitizer")


def sanitizer_version(exe: str) -> str | None:
    try:
        res = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in res.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else None


_SUMMARY = {"error": re.compile(r"ERROR SUMMARY:\s*(\d+)\s+errors?"),
            "race": re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazards?")}


def parse_sanitizer_summary(tool: str, text: str) -> int | None:
    """The count compute-sanitizer reports: racecheck's hazards (its RACECHECK SUMMARY, else its
    ERROR SUMMARY), the other tools' errors. None when no summary is printed (it crashed, was
    killed, never ran): an unread count is never 0."""
    if tool == "racecheck":
        hits = _SUMMARY["race"].findall(text)
        if hits:
            return sum(int(h) for h in hits)
    hits = _SUMMARY["error"].findall(text)
    return sum(int(h) for h in hits) if hits else None


def sanitizer_shapes(constraints, quick: bool = False) -> list[tuple[int, int, int]]:
    """A small, an odd (odd tile counts) and a large (about 1024^3) shape the stage takes."""
    mm, nm, km = _units(constraints)
    if (mm, nm, km) == (1, 1, 1):
        shapes = [(5, 3, 7), (67, 45, 129), (1023, 1025, 1031)]
    else:
        def up(v, u):
            return -(-v // u) * u
        shapes = [(mm, nm, km), (3 * mm, 3 * nm, 3 * km), (up(1024, mm), up(1024, nm), up(1024, km))]
    return shapes[:1] if quick else shapes


def sanitizer_command(exe: str, tool: str, spec: str, shapes, registry_name: bool) -> list[str]:
    # --report-api-errors no: cuda-bindings probes driver entry points (cuGetProcAddress), which
    # the tools would otherwise count as errors; none of them comes from a kernel.
    cmd = [exe, "--tool", tool, "--report-api-errors", "no"]
    shape_args = [x for s in shapes for x in ("--shape", "x".join(map(str, s)))]
    if registry_name:
        return cmd + [sys.executable, str(PROBE_SCRIPT), spec, *shape_args]
    return cmd + [sys.executable, "-m", "stages.tools.stress", "--child", "probe", spec, *shape_args]


def sanitizer_job(exe: str, tool: str, spec: str, shapes, registry_name: bool, timeout_s: float, env: dict) -> dict:
    if timeout_s < 10:
        return {"tool": tool, "shapes": [list(s) for s in shapes], "count": None,
                "reason": "not run: the time budget ran out"}
    res = run_child(sanitizer_command(exe, tool, spec, shapes, registry_name), timeout_s, env)
    count = parse_sanitizer_summary(tool, res["output"])
    verdicts = [line for line in res["output"].splitlines() if re.search(r"\d+x\d+x\d+: (ok|FAIL)", line)]
    failed = [line for line in verdicts if ": FAIL" in line]
    reason = ""
    if res["timed_out"]:
        reason = f"timed out after {timeout_s:.0f} s"
    elif count is None:
        reason = f"no summary in the output (rc={res['rc']}): " + " | ".join(res["output"].strip().splitlines()[-4:])[-400:]
    elif failed:
        reason = f"{len(failed)} wrong results under the tool: {failed[0]}"
    elif len(verdicts) < len(shapes):
        reason = f"only {len(verdicts)} of {len(shapes)} shapes ran (rc={res['rc']})"
    findings = [line for line in res["output"].splitlines() if line.startswith("=========") and
                re.search(r"(Invalid|Race|hazard|Barrier|error)", line, re.I) and "SUMMARY" not in line]
    return {"tool": tool, "shapes": [list(s) for s in shapes], "count": None if res["timed_out"] else count,
            "rc": res["rc"], "seconds": res["seconds"], "probe_failures": len(failed), "reason": reason,
            "first_findings": findings[:5]}


# ---- the run -------------------------------------------------------------------------------
SECTIONS = ("repeat", "concurrency", "values", "hostile", "leaks")


def _resolve(x):
    return stages.get(x) if isinstance(x, str) else x


def _registry_name(st) -> bool:
    return "[" not in st.name and st.name in stages.names()


def _stage_seed(seed: int, i: int) -> int:
    return int(np.random.default_rng([seed, i]).integers(0, 2**62))


def _job_summary(fut) -> str:
    try:
        res = fut.result()
    except Exception as exc:  # noqa: BLE001
        return f"raised {type(exc).__name__}: {exc}"[:200]
    if "tool" in res:
        return f"{res['tool']}: {res.get('count')} ({res.get('seconds', 0)} s){' ' + res['reason'] if res.get('reason') else ''}"[:300]
    return (f"{len(res.get('probes', []))} probes ({res.get('seconds', 0)} s)"
            + (f" {res['reason']}" if res.get("reason") else ""))[:300]


class _Jobs:
    """The background work of a run: compute-sanitizer and the fault children, a few at a time."""

    def __init__(self, workers: int, deadline: float | None, env: dict, progress: bool = True):
        self.pool = cf.ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="stress-job")
        self.deadline, self.env, self.progress = deadline, env, progress
        self.futures: dict[str, list] = {}

    def timeout(self, limit: float) -> float:
        return limit if self.deadline is None else min(limit, self.deadline - time.monotonic())

    def submit(self, key: str, kind: str, fn, *args):
        fut = self.pool.submit(fn, *args)
        if self.progress:
            fut.add_done_callback(lambda f: print(f"[background] {key}: {kind} {_job_summary(f)}",
                                                  file=sys.stderr, flush=True))
        self.futures.setdefault(key, []).append((kind, fut))

    def results(self, key: str) -> list[tuple[str, Any]]:
        out = []
        for kind, fut in self.futures.get(key, []):
            try:
                out.append((kind, fut.result()))
            except Exception as exc:  # noqa: BLE001  a job that broke is reported, not raised
                out.append((kind, {"error": f"{type(exc).__name__}: {exc}"[:400]}))
        return out

    def close(self):
        self.pool.shutdown(wait=True)


def _fault_job(jobs: _Jobs, spec: str, which: str, limit: float) -> dict:
    timeout_s = jobs.timeout(limit)
    if timeout_s < 10:
        return {"probes": [], "reason": "not run: the time budget ran out"}
    cmd = [sys.executable, "-m", "stages.tools.stress", "--child", which, spec]
    res = run_child(cmd, timeout_s, jobs.env)
    probes = parse_probes(res["output"])
    reason = ""
    if res["timed_out"]:
        reason = f"the child was killed after {timeout_s:.0f} s (a hang)"
    elif not probes:
        reason = f"no probe reported (rc={res['rc']}): " + " | ".join(res["output"].strip().splitlines()[-4:])[-400:]
    return {"probes": probes, "reason": reason, "seconds": res["seconds"], "rc": res["rc"]}


def _submit_background(jobs: _Jobs, st, exe: str | None, sanitizers: bool, quick: bool, timeouts: dict):
    spec = st.name
    jobs.submit(st.name, "fault", lambda: _fault_job(jobs, spec, "fault", timeouts["child"]))
    jobs.submit(st.name, "fault", lambda: _fault_job(jobs, spec, "illegal", timeouts["child"] / 2))
    if not (sanitizers and exe):
        return
    shapes = sanitizer_shapes(st.constraints, quick)
    reg = _registry_name(st)
    for tool in SANITIZER_TOOLS:
        jobs.submit(st.name, "sanitizer",
                    lambda tool=tool: sanitizer_job(exe, tool, spec, shapes, reg, jobs.timeout(timeouts["sanitizer"]),
                                                    jobs.env))
    if reg:  # the racecheck that sees a plain shared-memory race (recorded with the fault probes)
        for overrides, _, _, _ in exercises_of(st):
            if any(d in overrides for d in RACECHECK_VISIBLE):
                vspec = f"{st.name}[{','.join(f'{key}={val}' for key, val in overrides.items())}]"
                m, n, k = probe_shape(st.constraints)
                jobs.submit(st.name, "racecheck-exercise",
                            lambda vspec=vspec, shape=(m, n, k): {
                                "spec": vspec, **sanitizer_job(exe, "racecheck", vspec, [shape], False,
                                                               jobs.timeout(timeouts["sanitizer"]), jobs.env)})


def _section(entry: dict, name: str, fn, *args) -> None:
    t0 = time.perf_counter()
    try:
        entry.update(fn(*args))
    except Exception as exc:  # noqa: BLE001  a section that breaks is a failure of the stage, reported
        entry.setdefault("section_errors", []).append(f"{name}: {type(exc).__name__}: {exc}"[:400])
    entry.setdefault("section_seconds", {})[name] = round(time.perf_counter() - t0, 2)


def _empty_entry(st) -> dict:
    return {"stage": st.name, "shapes_tried": 0, "failures": 0, "failure_examples": [],
            "memcheck_errors": None, "racecheck_hazards": None, "synccheck_errors": None,
            "repeat_bitwise_ok": None, "concurrency_ok": None, "hostile_calls": 0, "hostile_ok": None,
            "values_differences": [], "leak_bounds": None, "fault_detected": None, "seconds": 0.0}


def _merge_background(entry: dict, results: list, sanitizers: bool, exe: str | None) -> None:
    probes, notes = [], []
    runs = []
    for kind, res in results:
        if kind == "fault":
            probes += res.get("probes", [])
            if res.get("reason") or res.get("error"):
                notes.append(res.get("reason") or res.get("error"))
        elif kind == "racecheck-exercise":
            count = res.get("count")
            probes.append({"probe": f"racecheck over {res.get('spec')}", "expected": False,
                           "detected": None if count is None else count > 0,
                           "detail": f"{count} hazards" if count is not None else res.get("reason", "")})
        elif kind == "sanitizer":
            runs.append(res)
    expected = [p for p in probes if p.get("expected")]
    entry["fault_probes"] = probes
    entry["fault_notes"] = notes
    entry["fault_detected"] = bool(expected) and all(p.get("detected") is True for p in expected) and not notes
    entry["sanitizer_runs"] = runs
    if not sanitizers:
        entry["sanitizer_note"] = "not run (--no-sanitizers)"
    elif not exe:
        entry["sanitizer_note"] = "compute-sanitizer not found on PATH or under /usr/local/cuda/bin"
    for run in runs:
        if "error" in run:
            entry.setdefault("section_errors", []).append(f"sanitizer job: {run['error']}")
            continue
        entry[SANITIZER_FIELDS[run["tool"]]] = run["count"]
        if run.get("reason"):
            entry.setdefault("sanitizer_problems", []).append(f"{run['tool']}: {run['reason']}")


def _finish(entry: dict) -> dict:
    entry["failures"] = sum(entry.get(key, 0) or 0 for key in
                            ("random_failures", "values_failures", "concurrency_failures"))
    entry["failure_examples"] = (entry.get("random_failure_examples", []) + entry.get("values_failure_examples", [])
                                 + entry.get("concurrency_failure_examples", []))[:8]
    problems = []
    if entry["failures"]:
        problems.append(f"{entry['failures']} failed checks")
    for field in SANITIZER_FIELDS.values():
        if (entry.get(field) or 0) > 0:
            problems.append(f"{field}={entry[field]}")
    problems += entry.get("sanitizer_problems", [])
    if entry.get("repeat_bitwise_ok") is False:
        problems.append("repeated calls differ")
    if entry.get("concurrency_ok") is False:
        problems.append("concurrency")
    if entry.get("hostile_ok") is False:
        problems.append("hostile calls: " + "; ".join(entry.get("hostile_failure_examples", [])[:2]))
    if entry.get("leak_bounds") and entry["leak_bounds"].get("ok") is False:
        failed = [name for name, ok in entry["leak_bounds"].get("checks", {}).items() if not ok]
        problems.append("leaks: " + ", ".join(failed))
    if entry.get("fault_detected") is False:
        missed = [p["probe"] for p in entry.get("fault_probes", []) if p.get("expected") and p.get("detected") is not True]
        problems.append("faults not detected: " + ", ".join(missed + entry.get("fault_notes", [])))
    problems += entry.get("section_errors", [])
    entry["status"] = "failed" if problems else "ok"
    entry["reason"] = "; ".join(problems)[:1500]
    return entry


def run_stress(stage_names=None, shapes_per_stage: int = 1000, seed: int | None = None, sanitizers: bool = True,
               leak_calls: int = 10000, progress: bool = True, *, quick: bool = False,
               budget_s: float | None = None, jobs: int = SANITIZER_JOBS) -> dict:
    """Stress every stage in `stage_names` (names or stage objects; default: every GPU stage) and
    return the record (kind "stress"). No GPU: every entry skipped, with the reason."""
    objs = [_resolve(x) for x in (stage_names or stages.names())]
    seed = secrets.randbits(32) if seed is None else int(seed)
    exe = find_sanitizer() if sanitizers else None
    t_start = time.monotonic()
    deadline = None if budget_s is None else t_start + budget_s
    record = records.new_record("stress", settings={
        "shapes_per_stage": shapes_per_stage, "seed": seed, "quick": quick, "leak_calls": leak_calls,
        "sanitizers": sanitizers, "compute_sanitizer": exe,
        "compute_sanitizer_version": sanitizer_version(exe) if exe else None,
        "budget_s": budget_s, "repeat_calls": REPEAT_CALLS, "scales": list(SCALES),
        "max_shape_macs": SHAPE_MAX_MACS, "max_total_macs_per_shape": MACS_PER_SHAPE,
        "leak_shapes": LEAK_SHAPES, "leak_input_sets": LEAK_INPUT_SETS,
        "judge": "verify.judge: float64 reference, NaN-poisoned output in guard zones, per-element bound"})
    ok, why = gpu.available()
    if not ok:
        record["results"] = [{"stage": st.name, "status": "skipped", "reason": why} for st in objs]
        return record
    runnable = []
    for st in objs:
        can, reason = st.runnable()
        if can:
            runnable.append(st)
        else:
            record["results"].append({"stage": st.name, "status": "skipped", "reason": reason})
    job_runner = _Jobs(jobs, deadline, child_env(), progress)
    timeouts = {"sanitizer": SANITIZER_TIMEOUT_S, "child": CHILD_TIMEOUT_S}
    entries = []
    try:
        # In-process sections first, alone on the GPU; the sanitizers and child probes after them.
        # Run at the same time (all submitted up front), the naive stage's shapes ran 10x+ slower
        # beside compute-sanitizer and got through 153 of 1,000 in its share (H200).
        for i, st in enumerate(runnable):
            entry = _empty_entry(st)
            entries.append(entry)
            sseed = _stage_seed(seed, i)
            bar = Progress(shapes_per_stage + len(SECTIONS), enabled=progress)
            bar.set_description_str(f"{st.name}: random shapes")
            t0 = time.perf_counter()
            stage_deadline = None
            if deadline is not None:
                left = deadline - time.monotonic()
                stage_deadline = time.monotonic() + max(0.0, left - 30) / (len(runnable) - i) * 0.6
            _section(entry, "random_shapes", section_random_shapes, st, shapes_per_stage, sseed, bar, stage_deadline)
            for name, fn, args in (("repeat", section_repeat, (st, sseed + 1)),
                                   ("concurrency", section_concurrency, (st, sseed + 2)),
                                   ("values", section_values, (st, sseed + 3)),
                                   ("hostile", section_hostile, (st, sseed + 4)),
                                   ("leaks", section_leaks, (st, leak_calls, sseed + 5, bar))):
                bar.set_description_str(f"{st.name}: {name}")
                _section(entry, name, fn, *args)
                bar.update()
            bar.close()
            entry["seconds"] = round(time.perf_counter() - t0, 1)
            if progress:
                print(f"{st.name}: in-process sections done in {entry['seconds']:.0f} s "
                      f"({entry.get('shapes_tried', 0)} shapes, {entry.get('random_failures', 0)} failed); "
                      f"(sanitizers and child probes follow)", file=sys.stderr, flush=True)
        for st in runnable:
            _submit_background(job_runner, st, exe, sanitizers, quick, timeouts)
        for st, entry in zip(runnable, entries):
            _merge_background(entry, job_runner.results(st.name), sanitizers, exe)
            record["results"].append(_finish(entry))
    finally:
        job_runner.close()
    record["settings"]["seconds"] = round(time.monotonic() - t_start, 1)
    order = {st.name: i for i, st in enumerate(objs)}
    record["results"].sort(key=lambda e: order.get(e["stage"], len(order)))
    return record


# ---- the command ---------------------------------------------------------------------------
QUICK_SHAPES, QUICK_LEAK_CALLS = 50, 500


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("stages", nargs="*", help="stages to stress (default: every GPU stage)")
    p.add_argument("--shapes", type=int, default=None, help="random shapes per stage (default: 1000)")
    p.add_argument("--quick", action="store_true",
                   help=f"a smoke run: {QUICK_SHAPES} shapes, {QUICK_LEAK_CALLS} leak calls, sanitizers on the small shape only")
    p.add_argument("--no-sanitizers", action="store_true", help="skip compute-sanitizer")
    p.add_argument("--leak-calls", type=int, default=None, help="calls of each stage for leaks (default: 10000)")
    p.add_argument("--seed", type=int, default=None, help="seed of the shapes and inputs (default: fresh)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds for the whole run: random shapes stop early (and say so) to finish in time")
    p.add_argument("--jobs", type=int, default=SANITIZER_JOBS, help="sanitizer/child processes at once")
    p.add_argument("--publish", action="store_true", help="write the record to results/")
    p.add_argument("--out", help="write the record to this path instead")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("stress", help="races, memory errors, hostile inputs, concurrency, leaks: one 'stress' record")
    _add_options(p)
    return p


def _fmt(val) -> str:
    if val is None:
        return "–"
    if isinstance(val, bool):
        return "ok" if val else "FAIL"
    return str(val)


def summary_rows(record: dict) -> list[list[str]]:
    rows = []
    for e in record["results"]:
        if e["status"] == "skipped":
            rows.append([e["stage"], "skipped", "", "", "", "", "", "", "", "", "", e.get("reason", "")[:60]])
            continue
        leak = e.get("leak_bounds") or {}
        rows.append([e["stage"], e["status"], f"{e['shapes_tried']}/{e['failures']}", _fmt(e["memcheck_errors"]),
                     _fmt(e["racecheck_hazards"]), _fmt(e["synccheck_errors"]), _fmt(e["repeat_bitwise_ok"]),
                     _fmt(e["concurrency_ok"]), f"{e['hostile_calls']} {_fmt(e['hostile_ok'])}",
                     str(len(e["values_differences"])), _fmt(leak.get("ok")), _fmt(e["fault_detected"])])
    return rows


HEADER = ["stage", "status", "shapes/failed", "memcheck", "racecheck", "synccheck", "repeat", "concurrency",
          "hostile", "value diffs", "leaks", "faults seen"]


def _table(rows, head) -> str:
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def cmd_stress(args) -> int:
    names = list(args.stages) or stages.names()
    for name in names:
        stages.get(name)  # ValueError lists the valid names
        if name not in stages.names():
            raise ValueError(f"stress runs the GPU stages ({', '.join(stages.names())}), not {name!r}")
    ok, why = gpu.available()
    if not ok:  # the same line as the other commands
        print(f"GPU stages skipped ({', '.join(names)}): {why}", flush=True)
        print("nothing was measured: no record written")
        return 0
    shapes = args.shapes if args.shapes is not None else (QUICK_SHAPES if args.quick else 1000)
    leak_calls = args.leak_calls if args.leak_calls is not None else (QUICK_LEAK_CALLS if args.quick else 10000)
    previous = signal.signal(signal.SIGTERM, _terminated) if threading.current_thread() is threading.main_thread() else None
    try:
        record = run_stress(names, shapes_per_stage=shapes, seed=args.seed, sanitizers=not args.no_sanitizers,
                            leak_calls=leak_calls, quick=args.quick, budget_s=args.budget, jobs=args.jobs)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    print(_table(summary_rows(record), HEADER))
    for e in record["results"]:
        if e["status"] == "failed":
            print(f"\n{e['stage']}: FAILED: {e['reason']}")
            for line in e.get("failure_examples", [])[:5]:
                print(f"  {line}")
        for line in e.get("values_differences", [])[:6]:
            print(f"  {e['stage']} value difference: {line}")
    if not records.measured(record):
        print("\nnothing was measured: no record written")
        return 0
    path = records.write(record, args.out, publish=args.publish)
    where = "published" if args.publish and not args.out else "run record"
    print(f"\n{where}: {path}" + ("" if args.publish else "  (not published: add --publish to put it in results/)"))
    return 1 if any(e["status"] == "failed" for e in record["results"]) else 0


def _shape_arg(text: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"shape must look like 128x256x64, got {text!r}")
    return tuple(int(g) for g in m.groups())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stages.tools.stress", description=__doc__.split("\n\n")[0])
    _add_options(p)
    p.add_argument("--child", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    p.add_argument("--shape", type=_shape_arg, action="append", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        kind, spec = args.child
        if kind == "fault":
            return _child_fault(spec)
        if kind == "illegal":
            return _child_illegal(spec)
        if kind == "probe":
            return _child_probe(spec, args.shape or [probe_shape(parse_spec(spec).constraints)])
        p.error(f"unknown child {kind!r}")
    try:
        return cmd_stress(args)
    except (ValueError, TypeError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
