"""The harness's own arithmetic and bookkeeping: TFLOP/s, error judgement, records, reports, CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

import stages
from stages.harness import bench, cli, records, report, verify
from stages.harness.contract import Constraints


def test_tflops_is_two_mnk_over_time():
    assert bench.tflops(4096, 4096, 4096, 1.0) == pytest.approx(137.438953472)
    assert bench.tflops(1, 2, 3, 1e-3) == pytest.approx(12e-6)


def test_peak_table_matches_longest_name():
    assert bench.peak_for("NVIDIA H200") == 989.4
    assert bench.peak_for("NVIDIA H100 PCIe") == 756.0
    assert bench.peak_for("Some Future GPU") is None


def test_timing_percentiles():
    t = bench.Timing([float(x) for x in range(1, 11)])
    assert t.median == 5.5 and t.p20 == pytest.approx(2.8) and t.p80 == pytest.approx(8.2)


def test_checklist_is_the_articles_grid_plus_large_k():
    shapes = verify.checklist_shapes()
    assert len(shapes) == 8**3 + len(verify.LARGE_K)
    assert (1, 1, 1) in shapes and (129, 1024, 17) in shapes and (128, 128, 16384) in shapes
    tiled = verify.checklist_shapes(Constraints(m_multiple=128, n_multiple=128, k_multiple=32))
    assert tiled and all(m % 128 == 0 and n % 128 == 0 and k % 32 == 0 for m, n, k in tiled)


def _judged(c, ref, mag):
    chk = verify.Check("t", *ref.shape, 1, seed=0)
    for key, val in verify.compare(c, ref, mag, np).items():
        setattr(chk, key, val)
    return verify.judge(chk)


def test_judge_passes_fp16_rounding_and_catches_real_errors():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 256)).astype(np.float16)
    b = rng.standard_normal((48, 256)).astype(np.float16)
    ref, mag = verify.reference(a, b, np)
    good = ref.astype(np.float32).astype(np.float16)  # exact product, rounded once to fp16
    chk = _judged(good, ref, mag)
    assert chk.passed and chk.rel_fro < verify.REL_FRO_EXPECT

    hole = good.copy()
    hole[3, 5] = np.nan
    assert not _judged(hole, ref, mag).passed and "never written" in _judged(hole, ref, mag).reason

    one_off = good.copy()
    one_off[7, 7] += np.float16(0.25)  # one wrong element: invisible in the norm, caught per element
    chk = _judged(one_off, ref, mag)
    assert not chk.passed and "over its error bound" in chk.reason and chk.rel_fro < verify.REL_FRO_FAIL

    missing_k = (a[:, :240].astype(np.float64) @ b[:, :240].astype(np.float64).T).astype(np.float16)
    assert not _judged(missing_k, ref, mag).passed  # a skipped K tile


def test_guarded_output_is_poisoned_and_guarded():
    buf, out = verify.guarded_output(3, 5, np)
    assert out.shape == (3, 5) and np.isnan(out).all()
    assert (buf.view(np.uint16) == verify.POISON).all()
    assert buf.size == 15 + 2 * verify.GUARD


def test_environment_names_machine_and_software():
    env = records.environment()
    assert env["date"] and env["versions"]["numpy"] and env["host"]["cores"] >= 1
    if env["gpu"] is None:
        assert env["gpu_unavailable"]
    else:
        assert env["gpu"]["name"] and env["gpu"]["compute_capability"]


def _record():
    env = {"date": "2026-11-29T00:00:00+00:00", "git_commit": "abc1234def", "git_dirty": False,
           "host": {"cpu": "Test CPU", "cores": 2, "platform": "x"},
           "versions": {"cupy": "14", "numba": "0.6", "numpy": "2", "python": "3.12"},
           "gpu": {"name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580", "cuda_runtime": 13000}}
    res = [{"stage": "cublas", "m": 4096, "n": 4096, "k": 4096, "status": "ok", "ms_median": 0.2,
            "ms_p20": 0.19, "ms_p80": 0.21, "tflops": 700.0, "pct_peak": 70.7, "ratio_cublas": 1.0, "rel_err": 2.8e-4},
           {"stage": "v0_naive", "m": 4096, "n": 4096, "k": 4096, "status": "ok", "ms_median": 20.0,
            "ms_p20": 19.0, "ms_p80": 21.0, "tflops": 7.0, "pct_peak": 0.7, "ratio_cublas": 0.01, "rel_err": 2.9e-4}]
    cpu = [{"stage": "numpy", "m": 1024, "n": 1024, "k": 1024, "status": "ok", "gflops": 250.0, "ratio_numpy": 1.0},
           {"stage": "cpu_numba", "m": 1024, "n": 1024, "k": 1024, "status": "ok", "gflops": 200.0, "ratio_numpy": 0.8}]
    return {"schema": records.SCHEMA, "kind": "bench", "env": env, "settings": {}, "results": res, "cpu": cpu}


def test_records_round_trip_and_feed_the_tables(tmp_path):
    path = records.write(_record(), tmp_path / "r.json")
    recs = records.load_all(tmp_path)
    assert len(recs) == 1 and recs[0]["results"][1]["tflops"] == 7.0
    table = report.stage_table(recs)
    assert "| [v0_naive](stages/v0_naive/) |" in table and "| 7 | 0.01 |" in table and "| 700 | 1.00 |" in table
    assert "0.80" in report.cpu_table(recs)
    assert "20.000 (19.000–21.000)" in report.stage_measured("v0_naive", recs)
    assert json.loads(path.read_text())["env"]["gpu"]["name"] == "NVIDIA H200"


def test_replace_block():
    text = "a\n<!-- t:begin -->\nold\n<!-- t:end -->\nb"
    assert report.replace_block(text, "t", "new") == "a\n<!-- t:begin -->\nnew\n<!-- t:end -->\nb"
    with pytest.raises(ValueError):
        report.replace_block(text, "missing", "x")


def test_generated_readme_blocks_match_the_committed_records():
    """The README tables are generated from results/: committed READMEs must not be stale."""
    stale = report.write_all(dry_run=True)
    assert not stale, f"run `python -m stages report --write`: stale {[str(p) for p in stale]}"


def test_shape_argument_parsing():
    assert cli._shape("4096x2048x128") == (4096, 2048, 128)
    assert cli._shape(" 1×2×3 ") == (1, 2, 3)
    for bad in ("4096x4096", "0x1x1", "axbxc"):
        with pytest.raises(Exception):
            cli._shape(bad)


def test_cli_list_shows_every_stage(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in stages.all_names():
        assert name in out


def test_cli_unknown_stage_is_one_line_error(capsys):
    assert cli.main(["verify", "v9_magic"]) == 2
    assert "unknown stage 'v9_magic'" in capsys.readouterr().err


def test_bench_cpu_writes_a_record(tmp_path, capsys):
    out = tmp_path / "rec.json"
    assert cli.main(["bench", "cpu_numba", "--cpu-shape", "96x80x64", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    rows = {e["stage"]: e for e in rec["cpu"]}
    assert set(rows) == {"numpy", "cpu_numba"}
    assert rows["cpu_numba"]["gflops"] > 0 and rows["cpu_numba"]["rel_err"] < 1e-5
    assert rows["cpu_numba"]["ratio_numpy"] == pytest.approx(rows["cpu_numba"]["gflops"] / rows["numpy"]["gflops"])
    assert "x numpy" in capsys.readouterr().out


def test_bench_without_gpu_says_which_stages_were_skipped(tmp_path, capsys, monkeypatch):
    from stages.harness import gpu

    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    out = tmp_path / "rec.json"
    assert cli.main(["bench", "v0_naive", "--shape", "256x256x256", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "GPU stages skipped (v0_naive): no NVIDIA driver on this machine (test)" in text
    rec = json.loads(out.read_text())
    assert {e["stage"] for e in rec["results"]} == {"cublas", "v0_naive"}
    assert all(e["status"] == "skipped" for e in rec["results"])
