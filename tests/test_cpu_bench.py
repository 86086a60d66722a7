"""stages.tools.cpu_bench: rows that say what was measured, a wrong result marked failed, and the
timing protocol (interleaved calls, a pause before each, best of N)."""
import math
import subprocess
import sys

import numpy as np
import pytest

from stages.tools import cpu_bench

FIELDS = {"stage", "m", "n", "k", "dtype", "ms_best", "ms_median", "ms_p20", "ms_p80", "reps",
          "gflops", "rel_err", "ratio_numpy", "status", "reason", "timing"}


class FakeProgress:
    def __init__(self):
        self.calls = []

    def set_description_str(self, text):
        self.calls.append(("describe", text))

    def update(self, n):
        self.calls.append(("update", n))


def test_rows_on_a_tiny_shape():
    bar = FakeProgress()
    rows = cpu_bench.run_cpu([(48, 40, 72), (5, 3, 2)], progress=bar, rounds=3, pause=0.01)
    assert [(r["stage"], r["m"], r["n"], r["k"]) for r in rows] == [
        ("numpy", 48, 40, 72), ("cpu_numba", 48, 40, 72), ("numpy", 5, 3, 2), ("cpu_numba", 5, 3, 2)]
    assert [c[0] for c in bar.calls] == ["describe", "update", "describe", "update"]
    assert "48x40x72" in bar.calls[0][1] and bar.calls[1] == ("update", 2)
    for row in rows:
        assert FIELDS <= set(row), FIELDS - set(row)
        assert row["status"] == "ok", row
        assert row["dtype"] == "float32" and row["reps"] == 3
        assert row["timing"] == "best of 3, interleaved, 0.01 s pause and one untimed call before each"
        assert 0 < row["ms_best"] <= row["ms_p20"] <= row["ms_median"] <= row["ms_p80"]
        flops = 2 * row["m"] * row["n"] * row["k"]
        assert row["gflops"] == pytest.approx(flops / (row["ms_best"] * 1e-3) / 1e9)
        assert 0 <= row["rel_err"] < 1e-5
    for numpy_row, numba_row in zip(rows[::2], rows[1::2]):
        assert numpy_row["ratio_numpy"] == 1.0
        assert numba_row["ratio_numpy"] == pytest.approx(numpy_row["ms_best"] / numba_row["ms_best"])


def test_default_protocol_interleaved_with_a_pause_before_every_timed_call(monkeypatch):
    events = []
    real_gemm = cpu_bench.cpu_reference.gemm

    def recording_gemm(a, b, out=None):
        events.append("numba")
        return real_gemm(a, b, out)

    monkeypatch.setattr(cpu_bench.cpu_reference, "gemm", recording_gemm)
    monkeypatch.setattr(cpu_bench.time, "sleep", lambda s: events.append(s))
    rows = cpu_bench.run_cpu([(16, 8, 32)])
    assert rows[0]["timing"] == rows[1]["timing"] == \
        "best of 7, interleaved, 0.3 s pause and one untimed call before each"
    assert rows[0]["reps"] == rows[1]["reps"] == 7
    assert events[0] == "numba"  # the warm-up, unpaused
    timed = events[1:]
    sleeps = [e for e in timed if e != "numba"]
    assert sleeps == [0.3] * 14  # one pause before each of 7 + 7 timed calls
    # Every numba pair (the untimed wake-up call, then the timed call) follows its pause; rounds
    # alternate the order (numpy, numba), (numba, numpy), ..., so the pauses before each numba
    # pair, counted from the previous one, are 2, 1, 3, 1, 3, ...: interleaved, not in blocks.
    pairs = [i for i, e in enumerate(timed) if e == "numba" and timed[i - 1] == 0.3]
    assert len(pairs) == 7 and all(timed[i + 1] == "numba" for i in pairs)
    assert timed.count("numba") == 14
    gaps = [timed[p + 1:q].count(0.3) for p, q in zip([-1] + pairs, pairs)]
    assert gaps == [2, 1, 3, 1, 3, 1, 3]


@pytest.mark.parametrize("how", ["wrong_value", "unwritten", "raises"])
def test_a_wrong_implementation_is_marked_failed(monkeypatch, how):
    real_gemm = cpu_bench.cpu_reference.gemm

    def broken_gemm(a, b, out=None):
        if how == "raises":
            raise RuntimeError("boom")
        c = real_gemm(a, b)
        if how == "wrong_value":
            c[1, 2] += 0.5
            out[...] = c
        else:  # every element but the last: it keeps the NaN the output was filled with
            out.reshape(-1)[:-1] = c.reshape(-1)[:-1]
        return out

    monkeypatch.setattr(cpu_bench.cpu_reference, "gemm", broken_gemm)
    numpy_row, numba_row = cpu_bench.run_cpu([(48, 40, 72)], rounds=2, pause=0.0)
    assert numpy_row["status"] == "ok", numpy_row
    assert numba_row["status"] == "failed", numba_row
    assert numba_row["reason"]
    if how == "wrong_value":
        assert numba_row["rel_err"] > 1e-5 and "relative Frobenius error" in numba_row["reason"]
    elif how == "unwritten":
        assert math.isnan(numba_row["rel_err"])
    else:
        assert "boom" in numba_row["reason"] and numba_row["reps"] == 0


def test_inputs_are_float16_values_and_never_zero():
    a, b = cpu_bench._operands(64, 32, 128, seed=3)
    assert a.dtype == b.dtype == np.float32
    assert (a.astype(np.float16).astype(np.float32) == a).all() and np.count_nonzero(a) > 0.99 * a.size
    assert 0.8 < a.std() < 1.2 and 0.8 < b.std() < 1.2


def test_plot_has_plain_size_ticks_and_ratio_labels():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    rows = []
    for s, (np_ms, nb_ms) in {64: (0.01, 0.02), 256: (0.3, 0.33), 1024: (11.0, 12.1)}.items():
        for stage, ms in (("numpy", np_ms), ("cpu_numba", nb_ms)):
            rows.append({"stage": stage, "m": s, "n": s, "k": s, "ms_best": ms, "reps": 7,
                         "gflops": 2 * s**3 / ms / 1e6, "ratio_numpy": np_ms / ms,
                         "status": "ok"})
    rows.append({**rows[-1], "m": 2048, "n": 2048, "k": 2048, "status": "failed"})  # left out
    ax = cpu_bench.plot_cpu(rows)
    ax.figure.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "256", "1024"]
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0.50x numpy", "0.91x numpy", "0.91x numpy"]
    assert len(ax.get_lines()) == 2
    assert "best of 7 interleaved runs on this machine's cores" in ax.get_title()


def test_module_imports_neither_matplotlib_nor_bench():
    code = ("import sys, stages.tools.cpu_bench; "
            "bad = [m for m in ('matplotlib', 'stages.tools.bench') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_cpu_probe_times_threads_and_blockings_and_checks_each_output(tmp_path):
    """scripts/cpu_probe.py (device.sh `cpu`): one row per thread count and per block size, each
    with its output's error against float64."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "probe.json"
    run = subprocess.run([sys.executable, "scripts/cpu_probe.py", "--out", str(out), "--shapes", "96",
                          "--rounds", "1", "--pause", "0"], cwd=root, capture_output=True, text=True,
                         timeout=600, env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert run.returncode == 0, run.stderr[-2000:]
    rec = json.loads(out.read_text())
    rows = rec["rows"]
    import importlib
    import numba
    g = importlib.import_module("cpu_reference.gemm")
    shipped = [g.MC, g.KC, g.NC]
    threads = {r["threads"] for r in rows if r["kind"] == "numba" and r["blocking"] == shipped}
    assert max(threads) == numba.config.NUMBA_NUM_THREADS and 1 in threads
    blockings = [tuple(r["blocking"]) for r in rows if r["threads"] == max(threads) and r["kind"] == "numba"]
    assert len(set(blockings)) >= 10
    assert all(r["rel_err"] < 1e-5 and r["ms_best"] > 0 for r in rows)
    assert any(r["kind"].startswith("numpy") for r in rows)
