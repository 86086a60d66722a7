"""The CPU baseline against numpy: the numba GEMM and numpy's float32 `a @ b.T`, timed robustly.

    rows = run_cpu([(1024, 1024, 1024), (2048, 2048, 2048)])
    plot_cpu(rows)

How one shape is measured (the `timing` field of each row says it in short):

* Same inputs for both: fresh N(0, 1) values drawn as float16 (so they are exactly what the GPU
  stages get) and converted to float32; both libraries get the float32 arrays.
* One warm-up call each (numba's compile or cache load, OpenBLAS's thread start), into an output
  filled with NaN, so an element the implementation never writes shows up as NaN.
* `rounds` rounds, each one timed call of numpy and one of numba, interleaved call by call (the
  order alternates between rounds). Before every timed call the process sleeps `pause` (0.3 s):
  OpenBLAS's and OpenMP's worker threads keep spinning for a while after a call, and on a
  2-core machine the spinning threads of one library steal the cores from the next call. Then
  one untimed call of the same library wakes its own sleeping threads (numba's OpenMP workers
  took 4-8 ms to wake after a pause here, which made 256^3 look 10x slower than it is), and the
  call after it is timed.
* The BEST time of the rounds is the result: on a shared machine noise (neighbours, a thread
  landing on the wrong core) only ever adds time. Median, p20 and p80 are kept to show spread.
* After the timing, each implementation's own output (of the warm-up call and of the last timed
  call) is compared with a float64 product of the same float16-rounded inputs. A row whose
  relative Frobenius error is above REL_ERR_MAX or NaN is "failed", with the reason.

Only numpy and the project's cpu_reference are needed; matplotlib only for plot_cpu.
"""
from __future__ import annotations

import math
import os
import secrets
import time

import numpy as np

import cpu_reference

REL_ERR_MAX = 1e-5   # float32 accumulation: ~1e-7 * sqrt(K) for random data; 1e-5 means a bug
PAUSE_S = 0.3        # sleep before every timed call
NAMES = ("numpy", "cpu_numba")


def _operands(m: int, n: int, k: int, seed: int):
    """a (M, K), b (N, K): N(0, 1) drawn in float32, rounded to float16, stored as float32."""
    rng = np.random.default_rng(seed)
    a16 = rng.standard_normal((m, k), dtype=np.float32).astype(np.float16)
    b16 = rng.standard_normal((n, k), dtype=np.float32).astype(np.float16)
    return a16.astype(np.float32), b16.astype(np.float32)


def _rel_err(c, ref) -> float:
    """||c - ref||_F / ||ref||_F in float64; NaN anywhere in c gives NaN."""
    diff = np.linalg.norm(c.astype(np.float64) - ref)
    ref_norm = np.linalg.norm(ref)
    return float(diff / ref_norm) if ref_norm > 0 else float(diff)


def _gflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e9


def _measure_shape(m: int, n: int, k: int, rounds: int, pause: float) -> list[dict]:
    seed = secrets.randbits(63)
    a, b = _operands(m, n, k, seed)
    outs = {name: np.full((m, n), np.nan, np.float32) for name in NAMES}
    calls = {"numpy": lambda: np.matmul(a, b.T, out=outs["numpy"]),
             "cpu_numba": lambda: cpu_reference.gemm(a, b, outs["cpu_numba"])}
    first, errors = {}, {}
    for name, call in calls.items():  # warm-up, into a NaN-filled output
        try:
            call()
            first[name] = outs[name].copy()
        except Exception as exc:  # noqa: BLE001 - a broken implementation is a failed row
            errors[name] = f"{type(exc).__name__}: {exc}"
    samples = {name: [] for name in NAMES}
    for r in range(rounds):
        order = NAMES if r % 2 == 0 else NAMES[::-1]
        for name in order:
            if name in errors:
                continue
            # The pause lets the other library's threads stop spinning (OpenBLAS keeps its workers
            # busy after a call); the untimed call then wakes this library's own threads, which
            # sleep after a pause (numba's OpenMP workers take 4-8 ms to wake here): the timed
            # call sees each library warm and alone, as back-to-back calls in a program would.
            time.sleep(pause)
            calls[name]()
            t0 = time.perf_counter()
            calls[name]()
            samples[name].append((time.perf_counter() - t0) * 1e3)

    # float64 reference of exactly the inputs both got (float16 values, exact in float32)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    best = {name: min(s) if s else math.nan for name, s in samples.items()}
    rows = []
    for name in NAMES:
        ms = samples[name]
        row = {"stage": name, "m": m, "n": n, "k": k, "dtype": "float32",
               "ms_best": best[name],
               "ms_median": float(np.median(ms)) if ms else math.nan,
               "ms_p20": float(np.percentile(ms, 20)) if ms else math.nan,
               "ms_p80": float(np.percentile(ms, 80)) if ms else math.nan,
               "reps": len(ms),
               "gflops": _gflops(m, n, k, best[name]) if ms else math.nan,
               "rel_err": math.nan,
               "ratio_numpy": best["numpy"] / best[name] if ms else math.nan,
               "status": "failed", "reason": "",
               "timing": f"best of {rounds}, interleaved, {pause:g} s pause and one untimed call before each",
               "seed": seed}
        if name in errors:
            row["reason"] = f"raised {errors[name]}"
        else:
            row["rel_err"] = max(_rel_err(first[name], ref), _rel_err(outs[name], ref))
            problems = []
            if not row["rel_err"] <= REL_ERR_MAX:  # also catches NaN
                problems.append(f"relative Frobenius error {row['rel_err']:.2e} > {REL_ERR_MAX:.0e}"
                                " (NaN: output elements left unwritten or not finite)")
            bad_times = [key for key in ("ms_best", "gflops", "ratio_numpy")
                         if not math.isfinite(row[key])]
            if bad_times:
                problems.append(f"not finite: {', '.join(bad_times)}")
            if problems:
                row["reason"] = "; ".join(problems) + f" (seed {seed})"
            else:
                row["status"] = "ok"
        rows.append(row)
    return rows


def run_cpu(shapes, progress=None, rounds: int = 7, *, pause: float = PAUSE_S) -> list[dict]:
    """Time numpy float32 `a @ b.T` and cpu_reference.gemm on each (M, N, K) in `shapes`.

    Returns two rows per shape, "numpy" then "cpu_numba", with the fields
      stage, m, n, k, dtype ("float32"),
      ms_best, ms_median, ms_p20, ms_p80   over `reps` (= rounds) timed calls, in ms
      gflops        2 M N K / ms_best
      rel_err       relative Frobenius error of this row's own output vs a float64 reference
      ratio_numpy   numpy's ms_best / this row's ms_best (numpy's row: 1.0)
      status        "ok", or "failed" with the `reason` (wrong or NaN result, an exception)
      reason, timing ("best of 7, interleaved, 0.3 s pause and one untimed call before each"),
      seed (of the inputs)
    `progress`: None, or anything with set_description_str(text) and update(n) (a tqdm bar):
    the description is set before each shape and update(2) is called after it.
    """
    if rounds < 1:
        raise ValueError(f"run_cpu(): rounds must be >= 1, got {rounds}")
    rows = []
    for m, n, k in shapes:
        if progress is not None:
            progress.set_description_str(f"numpy and cpu_numba {m}x{n}x{k} (CPU)")
        rows += _measure_shape(int(m), int(n), int(k), rounds, pause)
        if progress is not None:
            progress.update(2)
    return rows


def _size(row) -> float:
    """The x position of a shape: its cube-root size (M for a cube)."""
    return (row["m"] * row["n"] * row["k"]) ** (1 / 3)


def _shape_label(row) -> str:
    m, n, k = row["m"], row["n"], row["k"]
    return str(m) if m == n == k else f"{m}x{n}x{k}"


def plot_cpu(rows, ax=None):
    """GFLOP/s against size for numpy and the numba GEMM, each numba point labelled with its
    speed relative to numpy ("0.91x numpy"). Rows that are not "ok" are left out. Returns ax."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib is optional but for this
    from matplotlib.ticker import FixedLocator, NullLocator  # noqa: PLC0415

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    ok = [r for r in rows if r.get("status") == "ok"]
    styles = {"numpy": dict(marker="s", label="numpy float32 a @ b.T (OpenBLAS)"),
              "cpu_numba": dict(marker="o", label="numba GEMM (cpu_reference)")}
    for name in NAMES:
        pts = sorted((_size(r), r["gflops"], r) for r in ok if r["stage"] == name)
        if not pts:
            continue
        xs, ys, rs = zip(*pts)
        ax.plot(xs, ys, **styles[name])
        if name == "cpu_numba":
            for x, y, r in pts:
                ax.annotate(f"{r['ratio_numpy']:.2f}x numpy", (x, y), textcoords="offset points",
                            xytext=(0, -14), ha="center", fontsize=8)
    ax.set_xscale("log", base=2)
    ticks = sorted({_size(r): _shape_label(r) for r in ok}.items())
    if ticks:
        ax.xaxis.set_major_locator(FixedLocator([x for x, _ in ticks]))
        ax.set_xticklabels([label for _, label in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("size (M = N = K; otherwise M x N x K)")
    ax.set_ylabel("GFLOP/s (2 M N K / best time)")
    ax.set_ylim(bottom=0)
    rounds = sorted({r["reps"] for r in ok})
    n = "/".join(str(x) for x in rounds) or "?"
    ax.set_title("CPU GEMM, float32 C = A @ B.T: numba against numpy\n"
                 f"best of {n} interleaved runs on this machine's cores ({os.cpu_count()})",
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return ax
