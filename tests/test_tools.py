"""The tools' own arithmetic and bookkeeping: timing, the judge, records, reports, inspect, the CLI.

Each test pins one behaviour that a plausible mutation of the tools would break (a looser limit,
a check never made, a field dropped, an exit code ignored); no GPU needed.
"""
from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

import stages
from stages.core import gpu
from stages.core.contract import Constraints
from stages.tools import bench, cli, inspect, records, report, timing, verify


# ---- timing -------------------------------------------------------------------------------------
def test_tflops_is_two_mnk_over_time():
    assert timing.tflops(4096, 4096, 4096, 1.0) == pytest.approx(137.438953472)
    assert timing.tflops(1, 2, 3, 1e-3) == pytest.approx(12e-6)


def test_peak_table_matches_longest_name():
    assert bench.peak_for("NVIDIA H200") == 989.4
    assert bench.peak_for("NVIDIA H100 PCIe") == 756.0
    assert bench.peak_for("Some Future GPU") is None


def test_timing_percentiles():
    t = timing.Timing([float(x) for x in range(1, 11)])
    assert t.median == 5.5 and t.p20 == pytest.approx(2.8) and t.p80 == pytest.approx(8.2) and t.best == 1.0


def test_progress_counts_every_item_once(capsys):
    bar = bench.Progress(3)
    for i in range(3):
        bar.set_description_str(f"item {i}")
        bar.update()
    err = capsys.readouterr().err
    assert "[1/3] item 0" in err and "[2/3] item 1" in err and "[3/3] item 2" in err


# ---- shapes -------------------------------------------------------------------------------------
def test_checklist_is_the_articles_grid_plus_large_k():
    shapes = verify.checklist_shapes()
    assert len(shapes) == 8**3 + len(verify.LARGE_K)
    assert (1, 1, 1) in shapes and (129, 1024, 17) in shapes and (128, 128, 16384) in shapes
    tiled = verify.checklist_shapes(Constraints(m_multiple=128, n_multiple=128, k_multiple=32))
    assert tiled and all(m % 128 == 0 and n % 128 == 0 and k % 32 == 0 for m, n, k in tiled)
    assert (128 * 17, 128 * 3, 32 * 5) in tiled, "tile multiples beyond the grid are added"


# ---- the judge: each criterion able to fail alone -------------------------------------------------
def _judged(c, ref, mag, m=None, n=None):
    chk = verify.Check("t", m or ref.shape[0], n or ref.shape[1], 1, seed=0)
    return verify.judge_output(chk, c, ref, mag, np)


@pytest.fixture
def exact():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((64, 48)) * 10
    return ref, np.zeros_like(ref)  # mag 0: only the ulp term of the bound is in play


def test_a_correctly_rounded_result_passes():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 256)).astype(np.float16)
    b = rng.standard_normal((48, 256)).astype(np.float16)
    ref, mag = verify.reference(a, b, np)
    chk = _judged(ref.astype(np.float32).astype(np.float16), ref, mag)
    assert chk.passed and chk.rel_fro < verify.REL_FRO_EXPECT and chk.worst_bound_ratio < 0.6


def test_unwritten_elements_fail_alone(exact):
    ref, mag = exact
    c = ref.copy()
    c[3, 5] = np.nan
    chk = _judged(c, ref, mag)
    assert not chk.passed and chk.reason == "1 output elements never written (still NaN)"


def test_aggregate_error_fails_alone(exact):
    """Every element 1.5 half-ulps off: inside the per-element bound (2 half-ulps), but 7.3e-4
    relative overall, which no correctly rounded result reaches (at most 2^-11 = 4.9e-4)."""
    ref, mag = exact
    chk = _judged(ref * (1 + 1.5 * 2.0**-11), ref, mag)
    assert chk.worst_bound_ratio <= 1.0
    assert not chk.passed and chk.reason.startswith("relative Frobenius error 7.3")


def test_aggregate_is_not_judged_on_tiny_outputs(exact):
    ref, mag = exact
    chk = _judged((ref * (1 + 1.5 * 2.0**-11))[:4, :4], ref[:4, :4], mag[:4, :4])
    assert chk.passed  # 16 elements: the per-element bound alone judges


def test_one_element_over_its_ulp_bound_fails_alone(exact):
    ref, mag = exact
    c = ref.copy()
    c[7, 7] *= 1 + 3 * 2.0**-11  # 3 half-ulps: invisible in the norm
    chk = _judged(c, ref, mag)
    assert chk.rel_fro < verify.REL_FRO_FAIL
    assert not chk.passed and "1.5x over its error bound" in chk.reason


def test_accumulation_term_scales_with_sum_of_products(exact):
    """Where the result cancels to ~0, only ACC_EPS * sum|a*b| allows an error: half of it
    passes, five times it fails (a 100x looser ACC_EPS would pass it)."""
    ref, mag = exact
    ref, mag = ref.copy(), mag.copy()
    ref[2, 3], mag[2, 3] = 0.0, 1e4
    allowed = verify.ACC_EPS * 1e4
    c = ref.copy()
    c[2, 3] = 0.5 * allowed
    assert _judged(c, ref, mag).passed
    c[2, 3] = 5 * allowed
    chk = _judged(c, ref, mag)
    assert not chk.passed and "5.0x over its error bound" in chk.reason


def test_guard_damage_fails_alone(exact):
    ref, mag = exact
    chk = verify.Check("t", *ref.shape, 1, seed=0, guard_damaged=1)
    for key, val in verify.compare(ref.copy(), ref, mag, np).items():
        setattr(chk, key, val)
    assert not verify.judge(chk).passed and "writes outside C" in chk.reason


class HostStage:
    """A stage-like object run on the host (xp=numpy): a correct writer, or one that writes one
    element past the end of C."""

    kind = "gpu"
    constraints = Constraints(alignment=1)

    def __init__(self, name, overrun=0, skip_k=0):
        self.name, self.overrun, self.skip_k = name, overrun, skip_k

    def gemm(self, a, b, out=None):
        kk = a.shape[1] - self.skip_k
        res = (a[:, :kk].astype(np.float64) @ b[:, :kk].astype(np.float64).T).astype(np.float16)
        out[...] = res
        if self.overrun:
            flat = np.lib.stride_tricks.as_strided(out.reshape(-1), shape=(out.size + self.overrun,))
            flat[out.size:] = 0
        return out


def test_check_reads_the_guard_zones():
    good = verify.check(HostStage("ok"), 33, 17, 40, seed=1, xp=np)
    assert good.passed and good.guard_damaged == 0, good.reason
    bad = verify.check(HostStage("overrun", overrun=1), 33, 17, 40, seed=1, xp=np)
    assert bad.guard_damaged == 1 and not bad.passed and "writes outside C" in bad.reason


def test_check_catches_a_skipped_k_tile():
    chk = verify.check(HostStage("skip", skip_k=16), 64, 64, 256, seed=2, xp=np)
    assert not chk.passed and "error bound" in chk.reason


def test_sweep_turns_exceptions_into_failures():
    class Raises(HostStage):
        def gemm(self, a, b, out=None):
            raise RuntimeError("cudaErrorLaunchFailure (test)")

    checks = verify.sweep(Raises("boom"), [(4, 4, 4), (8, 8, 8)], xp=np)
    assert [c.passed for c in checks] == [False, False]
    assert verify.failures(checks)[0] == "boom 4x4x4 seed=-1: RuntimeError: cudaErrorLaunchFailure (test)"


def test_epilogue_reference_applies_alpha_bias_activation():
    a = np.array([[1.0, 2.0]], np.float16)
    b = np.array([[1.0, -1.0], [2.0, 1.0]], np.float16)  # a @ b.T = [-1, 4]
    from stages.core.contract import Epilogue

    ref, _ = verify.reference(a, b, np, Epilogue(np.array([0.5, -1.0]), 2.0, "relu"))
    assert ref.tolist() == [[0.0, 7.0]]
    ref, _ = verify.reference(a, b, np, Epilogue(None, 1.0, "gelu"))
    import math

    assert ref[0, 1] == pytest.approx(4 * 0.5 * (1 + math.erf(4 / math.sqrt(2))), rel=1e-12)
    silu, _ = verify.reference(a, b, np, Epilogue(None, 1.0, "silu"))
    assert silu[0, 0] == pytest.approx(-1 / (1 + np.e))


def test_silu_reference_does_not_overflow_where_x_is_very_negative():
    """x / (1 + e^-x) in float64 overflows e^-x below x = -709 (a RuntimeWarning in every verify run
    that drew such an accumulator); the reference is written with e^-|x|: no warning, same values."""
    import warnings

    x = np.array([-1e4, -800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = verify.activate(x, "silu", np)
    want = [v / (1 + math.exp(-v)) if v > -700 else 0.0 for v in x.tolist()]  # (-800 e^-800 is 0 in float64)
    assert got.tolist() == pytest.approx(want, rel=1e-15, abs=0.0)


# ---- records ----------------------------------------------------------------------------------
def _record():
    env = {"date": "2026-11-29T00:00:00+00:00", "git_commit": "abc1234def", "git_dirty": False,
           "host": {"cpu": "Test CPU", "cores": 2, "platform": "x"},
           "versions": {"cupy": "14", "numba": "0.6", "numpy": "2", "python": "3.12"},
           "gpu": {"name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580", "cuda_runtime": 13000}}
    common = {"dtype": "float16", "reps": 30, "bound_ratio": 0.3, "verified": True, "status": "ok", "reason": ""}
    res = [{"stage": "cublas", "m": 4096, "n": 4096, "k": 4096, "ms_median": 0.2, "ms_p20": 0.19,
            "ms_p80": 0.21, "tflops": 700.0, "pct_peak": 70.7, "ratio_cublas": 1.0, "rel_err": 2.8e-4, **common},
           {"stage": "v0_naive", "m": 4096, "n": 4096, "k": 4096, "ms_median": 20.0, "ms_p20": 19.0,
            "ms_p80": 21.0, "tflops": 7.0, "pct_peak": 0.7, "ratio_cublas": 0.01, "rel_err": 2.9e-4, **common}]
    cpu_common = {"dtype": "float32", "ms_best": 8.0, "ms_median": 9.0, "ms_p20": 8.5, "ms_p80": 9.5, "reps": 7,
                  "rel_err": 1e-7, "status": "ok", "reason": "", "timing": "best of 7, interleaved"}
    cpu = [{"stage": "numpy", "m": 1024, "n": 1024, "k": 1024, "gflops": 250.0, "ratio_numpy": 1.0, **cpu_common},
           {"stage": "cpu_numba", "m": 1024, "n": 1024, "k": 1024, "gflops": 200.0, "ratio_numpy": 0.8, **cpu_common}]
    return {"schema": records.SCHEMA, "kind": "bench", "env": env, "settings": {"reps": 30},
            "results": res, "cpu": cpu}


def test_records_round_trip_and_feed_the_tables(tmp_path):
    path = records.write(_record(), tmp_path / "r.json")
    recs = records.load_all(tmp_path)
    assert len(recs) == 1 and recs[0]["results"][1]["tflops"] == 7.0
    table = report.stage_table(recs)
    assert "| [v0_naive](stages/v0_naive/) |" in table and "| 7 | 0.01 |" in table and "| 700 | 1.00 |" in table
    assert "| 1024×1024×1024 | 250 | 200 | 0.80 |" in report.cpu_table(recs)
    assert "20.000 (19.000–21.000)" in report.stage_measured("v0_naive", recs)
    assert json.loads(path.read_text())["env"]["gpu"]["name"] == "NVIDIA H200"


def test_measured_block_names_every_run_its_rows_come_from():
    """A stage's rows are each shape's newest record, so they may come from several runs: the
    block's last line names each one (commit, date), not only the last row's."""
    old = dict(_record(), _path="results/20261129T000000-nvidia-h200.json")
    new = copy.deepcopy(_record())
    new["env"].update(git_commit="fedcba98765", date="2026-11-30T00:00:00+00:00")
    new["results"] = [dict(e, m=8192, n=8192, k=8192) for e in new["results"]]
    new["_path"] = "results/20261130T000000-nvidia-h200.json"
    text = report.stage_measured("v0_naive", [old, new])
    last = text.splitlines()[-1]
    assert "2 runs" in last and "(commit abc1234def, 2026-11-29)" in last and "(commit fedcba9876, 2026-11-30)" in last
    assert last.count("GPU NVIDIA H200") == 1  # one board, named once
    one = report.stage_measured("v0_naive", [old]).splitlines()[-1]
    assert one.startswith("GPU NVIDIA H200") and "commit abc1234def, 2026-11-29." in one


def test_a_stages_ablation_is_a_run_of_its_own_variants():
    """v4's ablation times v3 beside its variants (`--beside`): that newer run is not v3's
    ablation, whose table must come from the run that timed v3's own variants."""
    row = {"m": 4096, "n": 4096, "k": 4096, "status": "ok", "tflops": 600.0, "ratio_cublas": 0.9}
    own = {"results": [dict(row, stage="v3_wgmma_tma"), dict(row, stage="v3_wgmma_tma[STAGES=3]")], "_path": "a"}
    beside = {"results": [dict(row, stage="v3_wgmma_tma"), dict(row, stage="v4_swizzle_pipeline[ORDER=0]")],
              "_path": "b"}
    assert records.latest_ablation("v3_wgmma_tma", [own, beside]) is own
    assert records.latest_ablation("v4_swizzle_pipeline", [own, beside]) is beside
    assert records.latest_ablation("v2_cp_async", [own, beside]) is None


def test_overhead_table_groups_rows_by_shape():
    """`bench --overhead --shape ...` records several shapes: each its own block of rows, the
    skipped ones left out, the first shape first."""
    rec = dict(_record(), kind="overhead", settings={"calls": 1000, "rounds": 5}, _path="results/o.json")
    row = {"calls": 1000, "status": "ok", "reason": ""}
    rec["results"] = [
        {"stage": "cupy.matmul", "m": 256, "n": 256, "k": 256, "us_per_call": 20.0, "ratio_cupy_matmul": 1.0, **row},
        {"stage": "v5_fused_epilogue", "m": 256, "n": 256, "k": 256, "us_per_call": 40.0,
         "ratio_cupy_matmul": 2.0, "kernel_us": 9.0, **row},
        {"stage": "cupy.matmul", "m": 16, "n": 14336, "k": 4096, "us_per_call": 25.0, "ratio_cupy_matmul": 1.0, **row},
        {"stage": "v4_swizzle_pipeline", "m": 16, "n": 14336, "k": 4096, "status": "skipped", "reason": "shape"},
        {"stage": "v5_fused_epilogue", "m": 16, "n": 14336, "k": 4096, "us_per_call": 50.0,
         "ratio_cupy_matmul": 2.0, "kernel_us": 33.0, **row}]
    lines = report.overhead_table([rec]).splitlines()
    assert lines[2] == "| **256×256×256** | | | |" and lines[5] == "| **16×14336×4096** | | | |"
    assert lines[4] == "| v5_fused_epilogue | 40.0 | 2.00 | 9.0 |" and lines[7] == "| v5_fused_epilogue | 50.0 | 2.00 | 33.0 |"
    assert not any("v4_swizzle_pipeline" in line for line in lines)


def test_cpu_table_links_are_relative_to_their_file():
    recs = [dict(_record(), _path="results/r.json")]
    rel = "results/r.json"
    assert f"]({rel})" in report.cpu_table(recs) and not rel.startswith("/")
    assert f"](../{rel})" in report.cpu_table(recs, "../")


@pytest.mark.parametrize("drop", [("settings",), ("env", "git_commit"), ("results", 0, "ms_p20"),
                                  ("results", 1, "dtype"), ("cpu", 1, "gflops"), ("results", 0, "ratio_cublas")])
def test_a_record_missing_a_field_is_refused(tmp_path, drop):
    rec = _record()
    node = rec
    for key in drop[:-1]:
        node = node[key]
    del node[drop[-1]]
    with pytest.raises(ValueError, match="refusing to write an unsound record"):
        records.write(rec, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def test_a_failed_check_cannot_be_recorded_as_ok(tmp_path):
    rec = _record()
    rec["results"][1]["verified"] = False
    assert any("verified is False" in p for p in records.validate(rec))
    rec = _record()
    rec["results"][1]["status"] = "failed"
    rec["results"][1]["reason"] = ""
    assert any("without a reason" in p for p in records.validate(rec))


def test_runs_are_not_published_and_names_never_collide(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    monkeypatch.setattr(records, "RUNS", tmp_path / "runs")
    first = records.write(_record())
    second = records.write(_record())
    assert first.parent == tmp_path / "runs" and first != second and second.exists()
    published = records.write(_record(), publish=True)
    assert published.parent == tmp_path
    assert [r["_path"] for r in records.load_all(tmp_path)] == [str(published)], "runs never feed the tables"
    tune = dict(_record(), kind="tune")
    assert records.write(tune, publish=True).parent == tmp_path / "tuning"


def test_nothing_measured_is_not_a_record():
    rec = _record()
    assert records.measured(rec)
    rec["results"] = [{"stage": "v0_naive", "status": "skipped", "reason": "no GPU"}]
    rec["cpu"] = []
    assert not records.measured(rec)


def test_only_bench_records_feed_the_stage_tables():
    rec = _record()
    over = dict(_record(), kind="overhead")
    over["results"] = [dict(over["results"][1], tflops=99999.0)]
    best = records.latest_results([rec, over])
    assert best[("v0_naive", 4096, 4096, 4096)][0]["tflops"] == 7.0


def test_a_newer_failing_run_is_not_hidden_behind_an_older_passing_one():
    """latest_results: the newest entry wins whether it passed or not, and the tables say
    "failed" there instead of showing the older figure (a skipped entry does not count)."""
    old = dict(_record(), _path="results/old.json")
    new = copy.deepcopy(_record())
    new["_path"] = "results/new.json"
    new["results"][1].update(status="failed", verified=False, reason="an element is 3.0x over its error bound")
    skipped = dict(copy.deepcopy(_record()), _path="results/skip.json")
    skipped["results"] = [{"stage": "v0_naive", "m": 4096, "n": 4096, "k": 4096, "status": "skipped", "reason": "x"}]
    best = records.latest_results([old, new, skipped])
    assert best[("v0_naive", 4096, 4096, 4096)][1]["_path"] == "results/new.json"
    assert "| [v0_naive](stages/v0_naive/) |" in report.stage_table([old, new]) and "| failed | – |" in report.stage_table([old, new])
    assert "failed: an element is 3.0x over its error bound" in report.stage_measured("v0_naive", [old, new])
    assert "| 7 | 0.01 |" in report.stage_table([new, old]), "records are read oldest first: the last one read is the newest"


def test_replace_block():
    text = "a\n<!-- t:begin -->\nold\n<!-- t:end -->\nb"
    assert report.replace_block(text, "t", "new") == "a\n<!-- t:begin -->\nnew\n<!-- t:end -->\nb"
    with pytest.raises(ValueError, match="marker block 'missing' not found"):
        report.replace_block(text, "missing", "x")


def test_generated_readme_blocks_match_the_published_records():
    """The README tables are generated from results/: committed READMEs must not be stale."""
    stale = report.write_all(dry_run=True)
    assert not stale, f"run `python -m stages report --write`: stale {[str(p) for p in stale]}"


# ---- inspect --------------------------------------------------------------------------------------
SPILLY_LOG = """ptxas info    : Compiling entry function 'gemm_x' for 'sm_90a'
ptxas info    : Function properties for gemm_x
ptxas         .     152 bytes stack frame, 140 bytes spill stores, 132 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 2048 bytes smem
ptxas warning : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized
"""


def test_ptxas_parser_reads_spills_and_warnings():
    got = inspect.parse_ptxas(SPILLY_LOG, "gemm_x")
    assert got == {"stack_frame": 152, "spill_stores": 140, "spill_loads": 132, "registers": 128, "static_smem": 2048}
    rep = inspect.Report("s", "gemm_x", "sm_90a", "13.0", **got, local_memory=152,
                         warnings=inspect.compiler.ptxas_warnings(SPILLY_LOG))
    fails = rep.failures
    assert any("spills: 140 B stored" in f for f in fails)
    assert any("local memory: 152 B" in f for f in fails)
    assert any("C7515" in f for f in fails)


def test_ptxas_parser_does_not_take_a_longer_names_report():
    """v5's cubin holds gemm_v5_fused_epilogue_reduce, reported first: its 0-byte frame is not the
    main kernel's (a prefix match read it for the main kernel until this test)."""
    log = SPILLY_LOG.replace("gemm_x", "gemm_x_reduce").replace("152 bytes stack", "0 bytes stack") \
        .replace("140 bytes spill stores, 132", "0 bytes spill stores, 0").replace("128 registers", "32 registers") + SPILLY_LOG
    assert inspect.parse_ptxas(log, "gemm_x")["stack_frame"] == 152
    assert inspect.parse_ptxas(log, "gemm_x")["registers"] == 128
    assert inspect.parse_ptxas(log, "gemm_x_reduce")["registers"] == 32


def test_a_missing_ptxas_report_is_a_failure_not_zero():
    got = inspect.parse_ptxas("ptxas info : 0 bytes gmem\n", "gemm_x")
    assert got["spill_stores"] is None and got["registers"] is None
    rep = inspect.Report("s", "gemm_x", "sm_90a", "13.0", **got, opcodes={"STL": 2})
    assert any("spills unknown (no ptxas report; the cubin has 2 STL, 0 LDL)" in f for f in rep.failures)


def test_without_a_ptxas_report_spills_come_from_the_cubin(monkeypatch):
    """No report in the log (NVRTC 13.0 after an earlier compile): a cubin without STL/LDL
    spills nothing; one with STL is unknown, and fails."""
    st = stages.get("v0_naive")
    monkeypatch.setattr(inspect.compiler.Compiled, "has_ptxas_report", lambda self, k: False)
    monkeypatch.setattr(inspect, "parse_ptxas", lambda log, k: dict.fromkeys(
        ("stack_frame", "spill_stores", "spill_loads", "registers"), None) | {"static_smem": 0})
    monkeypatch.setattr(type(st), "compile", lambda self, arch, extra=None, fresh=False:
                        inspect.compiler.compile_cubin(self.code(), self.base_name, arch, self.defines))
    clean = inspect.inspect_stage(st)
    assert clean.source == "the cubin" and clean.spill_stores == 0 and clean.stack_frame == 0 and not clean.failures
    monkeypatch.setattr(inspect, "sass", lambda path: "        /*0010*/   STL [R1], R2 ;\n")
    spilly = inspect.inspect_stage(st)
    assert spilly.spill_stores is None and any("spills unknown" in f for f in spilly.failures)


def test_opcode_families_are_counted():
    listing = """
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/              @!PT LDS RZ, [RZ] ;
        /*0030*/              @P0 FFMA R1, R2, R3, R1 ;
        /*0040*/                   HGMMA.64x256x16.F32 R24, gdesc[UR4], R24 ;
        /*0050*/                   NOP;
    """
    rep = inspect.Report("s", "k", "sm_90a", "13.0", opcodes=inspect.count_opcodes(listing))
    assert rep.opcodes == {"LDG": 1, "FFMA": 1, "HGMMA": 1}
    assert rep.families == {"FFMA": 1, "HGMMA": 1, "LDG": 1}


def test_inspect_exits_1_on_problems(monkeypatch, capsys):
    bad = inspect.Report("v0_naive", "gemm_v0_naive", "sm_90a", "13.0", registers=40, spill_stores=8,
                         spill_loads=8, stack_frame=8, local_memory=8)
    monkeypatch.setattr(cli, "inspect_stage", lambda st, arch: bad)
    assert cli.main(["inspect", "v0_naive"]) == 1
    assert "PROBLEMS" in capsys.readouterr().out


def test_inspect_report_does_not_depend_on_an_earlier_compile(monkeypatch):
    """A cached cubin whose log lost ptxas's report gives the same figures as a first compile."""
    st = stages.get("v0_naive")
    first = inspect.inspect_stage(st)
    compiled = st.compile("sm_90a")
    compiled.cubin_path.with_suffix(".log").write_text("")  # a cache entry without the report
    again = inspect.inspect_stage(st)
    assert again.spill_stores == first.spill_stores == 0 and again.registers == first.registers
    assert again.stack_frame == first.stack_frame == 0 and not again.failures


# ---- the CLI ------------------------------------------------------------------------------------
def test_shape_argument_parsing(capsys):
    assert cli._shape("4096x2048x128") == (4096, 2048, 128)
    assert cli._shape(" 1×2×3 ") == (1, 2, 3)
    for bad in ("4096x4096", "0x1x1", "axbxc", "-1x1x1"):
        with pytest.raises(cli.argparse.ArgumentTypeError):
            cli._shape(bad)
    for bad in ("0x1x1", "-1x1x1"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["verify", "--shape", bad])
        assert exc.value.code == 2
        assert f"every dimension must be >= 1, got '{bad}'" in capsys.readouterr().err


def test_cli_without_a_command_prints_the_help(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("list", "verify", "bench", "tune", "inspect", "ceilings", "report", "new"):
        assert f"\n  {cmd}" in out


def test_every_option_has_help():
    for action in cli.parser()._subparsers._group_actions[0].choices.values():
        for opt in action._actions:
            assert opt.help, f"{action.prog} {opt.option_strings or opt.dest} has no help"


def test_cli_list_shows_every_stage_within_100_columns(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in stages.all_names():
        assert name in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_cli_unknown_stage_is_one_line_error(capsys):
    assert cli.main(["verify", "v9_magic"]) == 2
    assert "unknown stage 'v9_magic'" in capsys.readouterr().err


def test_verify_exits_1_on_a_failed_check(monkeypatch, capsys):
    assert cli.main(["verify", "cpu_numba", "--shape", "8x8x8"]) == 0
    wrong = verify.judge(verify.Check("cpu_numba", 8, 8, 8, 1, rel_fro=1.0, worst_bound_ratio=50.0))
    monkeypatch.setattr(verify, "check", lambda *a, **k: wrong)
    assert cli.main(["verify", "cpu_numba", "--shape", "8x8x8"]) == 1
    assert "FAIL cpu_numba 8x8x8" in capsys.readouterr().out


def test_verify_reports_the_relative_error_where_it_judges_it(monkeypatch, capsys):
    """The summary's "max rel err" is over the outputs the aggregate criterion judges (at least
    REL_FRO_MIN_ELEMENTS): a tiny output whose reference is below fp16's smallest subnormal reads
    a relative error of 1.0 and passes on its per-element bound, and must not show as 1.00e+00."""
    tiny = verify.judge(verify.Check("cpu_numba", 1, 1, 1, 1, rel_fro=1.0, worst_bound_ratio=0.5))
    big = verify.judge(verify.Check("cpu_numba", 8, 8, 8, 1, rel_fro=2.5e-4, worst_bound_ratio=0.4))
    monkeypatch.setattr(verify, "check", lambda st, m, n, k, *a, **kw: tiny if m == 1 else big)
    assert cli.main(["verify", "cpu_numba", "--shape", "1x1x1", "--shape", "8x8x8"]) == 0
    out = capsys.readouterr().out
    assert "2.50e-04" in out and "1.00e+00" not in out


def test_bench_cpu_writes_a_sound_record(tmp_path, capsys):
    out = tmp_path / "rec.json"
    assert cli.main(["bench", "cpu_numba", "--cpu-shape", "96x80x64", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert not records.validate(rec)
    rows = {e["stage"]: e for e in rec["cpu"]}
    assert set(rows) == {"numpy", "cpu_numba"}
    nb = rows["cpu_numba"]
    assert nb["gflops"] == pytest.approx(2 * 96 * 80 * 64 / (nb["ms_best"] * 1e-3) / 1e9)
    assert nb["rel_err"] < 1e-5
    assert nb["ratio_numpy"] == pytest.approx(rows["numpy"]["ms_best"] / nb["ms_best"])
    assert rec["env"]["git_commit"] and rec["settings"]["reps"] == 30
    assert "x numpy" in capsys.readouterr().out


def test_bench_without_gpu_writes_no_record(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    monkeypatch.setattr(records, "RUNS", tmp_path / "runs")
    assert cli.main(["bench", "v0_naive", "--shape", "256x256x256"]) == 0
    text = capsys.readouterr().out
    assert "GPU stages skipped (v0_naive): no NVIDIA driver on this machine (test)" in text
    assert "nothing was measured: no record written" in text
    assert not (tmp_path / "runs").exists()


def test_tune_without_gpu_is_one_line_and_no_record(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    monkeypatch.setattr(records, "RUNS", tmp_path / "runs")
    assert cli.main(["tune", "v2_cp_async", "--set", "STAGES=3,4"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "GPU stages skipped (v2_cp_async): no NVIDIA driver on this machine (test)"
    assert "REJECTED" not in text and not (tmp_path / "runs").exists()


# ---- variants and compile options ------------------------------------------------------------------
def test_variant_rejects_unknown_tunables_with_the_list():
    with pytest.raises(ValueError, match=r"v3_wgmma_tma has no tunable 'BOGUS'; its tunables: BM=128, BN=256"):
        stages.get("v3_wgmma_tma").variant(BOGUS=1)


def test_variant_defines_reach_the_compiler():
    st = stages.get("v1_tiled").variant(BK=32)
    assert st.defines["BK"] == 32 and st.constraints.k_multiple == 32 and st.name == "v1_tiled[BK=32]"
    assert "-DBK=32" in st.compile("sm_90a").options
    assert "-DBK=16" in stages.get("v1_tiled").compile("sm_90a").options


def test_a_config_the_kernel_cannot_build_is_refused_before_nvrtc():
    with pytest.raises(ValueError, match=r"v1_tiled cannot build .*BM\*BK/8 and BN\*BK/8 multiples of THREADS"):
        stages.get("v1_tiled").variant(TM=4, TN=4)


def test_hopper_builds_every_stage_for_sm_90a():
    h200 = gpu.REFERENCE_DEVICE
    for name in stages.names():
        assert gpu.compile_arch(h200, stages.get(name).requires) == "sm_90a"
    assert gpu.compile_arch(gpu.DeviceInfo(0, "L4", (8, 9), 58, 2040, 0, 101376), gpu.Requirement()) == "sm_89"


def test_shared_memory_comes_from_the_kernel():
    expect = {"v0_naive": 0, "v1_tiled": 2 * (128 + 128) * 20 * 4, "v2_cp_async": 3 * (128 + 128) * 64 * 2,
              "v3_wgmma_tma": 4 * (128 + 256) * 64 * 2 + 1024 + 2 * 8 * 4}
    for name, smem in expect.items():
        assert stages.get(name).launch_for(4096, 4096, 4096).shared_mem == smem, name
    assert stages.get("v3_wgmma_tma").variant(STAGES=3).launch_for(256, 256, 64).shared_mem == \
        3 * (128 + 256) * 64 * 2 + 1024 + 2 * 8 * 3


def test_a_block_over_the_shared_memory_limit_is_refused():
    small = gpu.DeviceInfo(-5, "small GPU", (9, 0), 132, 1980, 0, 100_000)  # an id no real GPU has
    with pytest.raises(ValueError, match=r"needs 197696 B of shared memory per block, this GPU allows 100000 B"):
        stages.get("v3_wgmma_tma")._function(small, {})


def test_inspect_reads_local_memory_and_sass_from_the_binary(monkeypatch):
    """inspect_stage fills the report from cuobjdump's resource usage and SASS listing: feed it
    canned tool output with local memory and check the report carries it (and fails on it)."""
    monkeypatch.setattr(inspect, "resource_usage", lambda path, kernel: {"REG": 77, "LOCAL": 64, "SHARED": 0})
    monkeypatch.setattr(inspect, "sass", lambda path: "        /*0010*/   STL [R1], R2 ;\n        /*0020*/   FFMA R1, R2, R3, R1 ;\n")
    rep = inspect.inspect_stage(stages.get("v0_naive"))
    assert rep.local_memory == 64 and rep.registers == 77 and rep.opcodes == {"STL": 1, "FFMA": 1}
    assert any("local memory: 64 B" in f for f in rep.failures)


@pytest.mark.parametrize("smi, uuid", [(gpu.SmiReading("580.0", "1980", "1980", "GPU-0a1b"), "GPU-0a1b"),
                                       (gpu.SmiReading("580.0", "1980", "1980", None), None)])
def test_a_records_environment_names_the_board_and_its_cluster_slots(monkeypatch, smi, uuid):
    """The lent GPUs vary from call to call, and a figure can move between calls (the v5 README's
    pairs at 1000 x 1000 x 5128): env.gpu says which board (nvidia-smi's UUID, None where
    nvidia-smi gives none) and the clusters that fit at once (DeviceInfo.cluster_slots)."""
    runtime = type("R", (), {"driverGetVersion": staticmethod(lambda: 13000),
                             "runtimeGetVersion": staticmethod(lambda: 13020)})
    fake_cp = type("CP", (), {"cuda": type("C", (), {"runtime": runtime})})
    monkeypatch.setattr(gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(gpu, "cupy", lambda: fake_cp)
    monkeypatch.setattr(gpu, "current", lambda: gpu.DeviceInfo(0, "NVIDIA H200", (9, 0), 132, 1980, 60 << 20,
                                                              232_448, (132, 66, 30, 15)))
    asked = []
    monkeypatch.setattr(gpu, "smi_reading", lambda device_id=None: asked.append(device_id) or smi)
    env = records.environment()["gpu"]
    assert asked == [0]  # nvidia-smi's row for the device the record describes
    assert env["uuid"] == uuid and env["cluster_slots"] == [132, 66, 30, 15]
    assert (env["driver"], env["sm_clock_idle_mhz"], env["sm_count"]) == ("580.0", "1980", 132)


SMI_TWO_BOARDS = ("00000000:19:00.0, 580.159.04, 1980, 1980, GPU-aaaa\n"
                  "00000000:3B:00.0, 580.159.04, 345, 1980, GPU-bbbb\n")


@pytest.mark.parametrize("pci, uuid, clock", [((0, 0x3B, 0), "GPU-bbbb", "345"), ((0, 0x19, 0), "GPU-aaaa", "1980")])
def test_parse_smi_takes_the_row_at_the_cuda_devices_pci_address(pci, uuid, clock):
    """nvidia-smi lists GPUs in PCI order and CUDA may number them otherwise (fastest first,
    CUDA_VISIBLE_DEVICES): the row is the one whose bus id is the device's, not the first."""
    got = gpu.parse_smi(SMI_TWO_BOARDS, pci)
    assert got == gpu.SmiReading("580.159.04", clock, "1980", uuid)


def test_parse_smi_says_none_rather_than_guess():
    """No row at the address, or several rows and no address: None, not some other board's row.
    One row and no address: that row. N/A fields and short rows read as None."""
    assert gpu.parse_smi(SMI_TWO_BOARDS, (0, 0x5E, 0)) is None
    assert gpu.parse_smi(SMI_TWO_BOARDS, None) is None
    assert gpu.parse_smi("", (0, 0x19, 0)) is None
    one = "00000000:19:00.0, 580.159.04, [N/A], 1980\n"
    assert gpu.parse_smi(one, None) == gpu.SmiReading("580.159.04", None, "1980", None)
    assert gpu._bus("0000:3b:00.0") == gpu._bus("00000000:3B:00.0") == (0, 0x3B, 0)
    assert gpu._bus("not a bus id") is None


def test_part_slices_cover_the_order_once():
    """`--part K/N` (tests/conftest.py): the N slices of any length cover every item exactly once,
    in order; `--part START:STOP` keeps those items; bad parts are refused."""
    from conftest import part_slice
    for n_items in (0, 1, 2, 7, 1609):
        for n in (1, 2, 3, 5):
            got = [i for k in range(1, n + 1) for i in range(n_items)[part_slice(n_items, f"{k}/{n}")]]
            assert got == list(range(n_items)), (n_items, n)
            sizes = [len(range(n_items)[part_slice(n_items, f"{k}/{n}")]) for k in range(1, n + 1)]
            assert max(sizes) - min(sizes) <= 1
    assert range(10)[part_slice(10, "3:")] == range(3, 10)
    assert range(10)[part_slice(10, ":4")] == range(0, 4)
    assert range(10)[part_slice(10, "2:20")] == range(2, 10)
    for bad in ("0/2", "3/2", "2", "a/b", "1/0", ":", "5:3"):
        with pytest.raises(pytest.UsageError):
            part_slice(10, bad)


def test_slices_by_time_cover_the_order_once_and_share_its_time():
    """`--part K/N --part-times FILE`: slices weighted by each test's measured seconds still cover
    every item once, in order, and each holds about 1/N of the time, where equal counts would
    put one slow tail in one slice (as the end of test_v5.py is on the H200)."""
    import random
    from conftest import part_slice
    rng = random.Random(7)
    for n_items in (0, 1, 5, 300):
        weights = [rng.choice([0.0, 0.01, 0.5]) for _ in range(n_items)]
        weights[n_items * 3 // 4:] = [rng.uniform(5, 40) for _ in weights[n_items * 3 // 4:]]
        for n in (1, 2, 3, 8):
            cuts = [part_slice(n_items, f"{k}/{n}", weights) for k in range(1, n + 1)]
            assert [i for c in cuts for i in range(n_items)[c]] == list(range(n_items)), (n_items, n)
            if n_items == 300:
                shares = [sum(weights[c]) for c in cuts]
                # no slice is further from an equal share than the largest single test
                assert max(abs(x - sum(weights) / n) for x in shares) <= max(weights), shares
                counted = [sum(weights[part_slice(n_items, f"{k}/{n}")]) for k in range(1, n + 1)]
                assert n == 1 or max(shares) < max(counted)
    # items that weigh nothing at either end still fall in a slice
    for weights in ([40.0, 0.0], [0.0, 40.0], [0.0, 0.0, 0.0]):
        for n in (1, 2, 3):
            cuts = [part_slice(len(weights), f"{k}/{n}", weights) for k in range(1, n + 1)]
            assert [i for c in cuts for i in range(len(weights))[c]] == list(range(len(weights)))
    with pytest.raises(ValueError):
        part_slice(3, "1/2", [1.0])


def test_suite_times_reads_pytests_junit_xml(tmp_path):
    """scripts/suite_times.py turns JUnit XML into {"seconds": {test id: s}} with pytest's own
    ids (what --part-times looks up), skips a module skipped whole, and merges into the file."""
    import json
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "scripts"))
    try:
        import suite_times
    finally:
        sys.path.pop(0)
    xml = tmp_path / "run.xml"
    xml.write_text('<testsuites><testsuite>'
                   '<testcase classname="tests.test_v5" name="test_a[x-1]" time="12.345"/>'
                   '<testcase classname="tests.test_tools" name="test_b" time="0.5"><skipped/></testcase>'
                   '<testcase time="0.001"><skipped/></testcase>'
                   '</testsuite></testsuites>')
    out = tmp_path / "times.json"
    out.write_text(json.dumps({"note": "old", "seconds": {"tests/test_v5.py::test_a[x-1]": 1.0,
                                                         "tests/test_gpu.py::test_c": 3.0}}))
    import os
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the ids are paths from the repository's root, wherever it runs from
    try:
        assert suite_times.main([str(out), str(xml)]) == 0
    finally:
        os.chdir(cwd)
    assert json.loads(out.read_text())["seconds"] == {
        "tests/test_gpu.py::test_c": 3.0, "tests/test_tools.py::test_b": 0.5,
        "tests/test_v5.py::test_a[x-1]": 12.35}


def test_the_shipped_suite_times_name_tests_that_exist():
    """tests/suite_times_h200.json (what scripts/device.sh slices the suite by) names tests of
    this suite by the ids pytest gives them; most of the suite is in it."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    seconds = json.loads((root / "tests" / "suite_times_h200.json").read_text())["seconds"]
    ids = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/"], cwd=root, capture_output=True, text=True, timeout=300).stdout
    ids = {line.strip() for line in ids.splitlines() if "::" in line}
    assert len(set(seconds) & ids) > 0.9 * len(ids)
    assert all(t >= 0 for t in seconds.values())


def test_a_sliced_run_says_where_it_starts_and_how_to_resume():
    """A run with --part prints, after collection, which items of the order it runs (0-based,
    the numbers `--part START:STOP` takes), so that a run cut by a time limit resumes at its
    start plus the tests it finished; a run without --part prints no such line."""
    import re
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_device_script.py"]
    sliced = subprocess.run(cmd + ["--order", "reverse", "--part", "2:5"], cwd=root, capture_output=True,
                            text=True, timeout=120)
    assert sliced.returncode == 0, sliced.stdout[-2000:]
    n = int(re.search(r"(\d+) deselected", sliced.stdout).group(1)) + 3
    assert f"--part: items 2 to 4 of {n} in reverse order" in sliced.stdout
    assert "resumes with --order reverse --part 2+F:" in sliced.stdout
    whole = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    assert whole.returncode == 0 and "--part:" not in whole.stdout
    # by time: one test said to take as long as all the others puts it alone in its half
    ids = [line.strip() for line in subprocess.run(cmd + ["--collect-only"], cwd=root, capture_output=True,
                                                    text=True, timeout=120).stdout.splitlines() if "::" in line]
    import json
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"seconds": {**{i: 1.0 for i in ids}, ids[-1]: len(ids) - 1.0}}, f)
    try:
        timed = subprocess.run(cmd + ["--part", "2/2", "--part-times", f.name], cwd=root, capture_output=True,
                               text=True, timeout=120)
    finally:
        Path(f.name).unlink()
    assert timed.returncode == 0, timed.stdout[-2000:]
    assert f"--part: items {len(ids) - 1} to {len(ids) - 1} of {len(ids)} in file order" in timed.stdout
    assert f", {len(ids) - 1} s of the order's {2 * len(ids) - 2} s" in timed.stdout


def test_a_probe_variant_that_could_not_be_prepared_leaves_a_row():
    """scripts/side_by_side.refused_rows: the probes build their rows from the timings, where a
    variant refused at prepare time has none; it gets a row with no time and its verdict (two probe
    records lost such rows without a trace: their `caveat`)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "side_by_side.py"
    spec = importlib.util.spec_from_file_location("side_by_side", path)
    sbs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sbs)
    runs = {"v5": object(), "cublas": object()}
    checks = {"v5": "ok", "cublas": "ok", "64x2": "unavailable: ValueError: too much shared memory"}
    rows = sbs.refused_rows(runs, checks, {"m": 64, "n": 4096, "k": 4096})
    assert rows == [{"m": 64, "n": 4096, "k": 4096, "variant": "64x2", "ms_median": None, "tflops": None,
                     "samples": 0, "check": "unavailable: ValueError: too much shared memory"}]


def test_verify_says_where_a_per_call_knob_was_not_built(monkeypatch, capsys):
    """`verify --set` on a stage that decides part of its build per call: the calls whose build
    drops the knob (v5's ROW_PARITY=1 needs M even, among others) are named in the summary, so a
    sweep never reads as a check of a build it did not run. (The GPU is stood in for: the checks
    pass without running; what is judged here is the note.)"""
    from stages.core.stage import KernelStage

    passed = verify.judge(verify.Check("v5", 8, 8, 8, 1, rel_fro=1e-4, worst_bound_ratio=0.4))
    monkeypatch.setattr(KernelStage, "runnable", lambda self: (True, ""))
    monkeypatch.setattr(gpu, "current", lambda: gpu.REFERENCE_DEVICE)
    monkeypatch.setattr(verify, "check", lambda *a, **k: passed)
    assert cli.main(["verify", "v5_fused_epilogue", "--set", "ROW_PARITY=1", "--shape", "1000x1000x1000",
                     "--shape", "999x1000x1000", "--shape", "998x1000x1000"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ROW_PARITY=1 not built in 1 of 3 calls (decided per call): 999x1000x1000" in out
    assert cli.main(["verify", "v5_fused_epilogue", "--set", "ROW_PARITY=1", "--shape", "1000x1000x1000",
                     "--epilogue", "all"]) == 0
    assert "not built" not in capsys.readouterr().out
    st = stages.get("v5_fused_epilogue").variant(ROW_PARITY=1)
    cases = list(verify.epilogue_cases(st, "all").values())
    missed = verify.overrides_not_built(st, {"ROW_PARITY": 1}, [(999, 1000, 1000), (7, 7, 7)], cases,
                                        gpu.REFERENCE_DEVICE)
    assert len(missed) == 2 * len(cases) and all(other == {"ROW_PARITY": 0} for _, _, other in missed)
    assert verify.overrides_not_built(stages.get("v3_wgmma_tma").variant(BN=128), {"BN": 128},
                                      [(4096, 4096, 4096)], [{}]) == []


def test_tune_says_which_variants_build_one_kernel(tmp_path, capsys, monkeypatch):
    """`tune` of a stage that decides part of its build per call: variants that build the same
    kernel at a shape (v5's ROW_PARITY=1 at odd M; BN=128 where the rule picks the tile, AUTO=1)
    are named, in the output and the record, so that their difference reads as noise. (The GPU,
    the variants' probe sweep and the timed run are stood in for.)"""
    from stages.tools import inspect

    monkeypatch.setattr(gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(gpu, "current", lambda: gpu.REFERENCE_DEVICE)
    monkeypatch.setattr(verify, "sweep", lambda *a, **k: [])
    rec = dict(_record(), kind="tune", results=[])
    rec["env"] = {**rec["env"], "gpu": {**rec["env"]["gpu"], "sm_count": 132}}
    monkeypatch.setattr(bench, "run_bench", lambda *a, **k: rec)
    monkeypatch.setattr(records, "RUNS", tmp_path / "runs")
    assert cli.main(["tune", "v5_fused_epilogue", "--set", "ROW_PARITY=0,1", "--shape", "999x1000x1000",
                     "--shape", "1000x1000x1000"]) == 0
    out = capsys.readouterr().out
    assert ("at 999x1000x1000 v5_fused_epilogue[ROW_PARITY=0], v5_fused_epilogue[ROW_PARITY=1] build one kernel"
            in out) and "at 1000x1000x1000" not in out
    assert rec["same_build"] == [{"shape": "999x1000x1000",
                                  "variants": ["v5_fused_epilogue[ROW_PARITY=0]", "v5_fused_epilogue[ROW_PARITY=1]"]}]
    v5 = stages.get("v5_fused_epilogue")
    pair = [v5.variant(ROW_PARITY=0), v5.variant(ROW_PARITY=1), v5.variant(AUTO=0, BN=128, STAGES=6)]
    assert inspect.same_builds(pair, 1000, 1000, 1000, dev=gpu.REFERENCE_DEVICE) == []
    assert inspect.same_builds([v5, v5.variant(BN=128)], 4096, 4096, 4096, dev=gpu.REFERENCE_DEVICE) == [
        ["v5_fused_epilogue", "v5_fused_epilogue[BN=128]"]]
