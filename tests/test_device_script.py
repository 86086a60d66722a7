"""scripts/device.sh, the one script of H200 calls: it parses, every mode its header documents is a
mode it has (and no other), and its dry run (DRY_RUN=1) shows the steps a mode would run. No GPU:
the dry run starts nothing."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


# The variables the script reads (`${NAME...}`): a dry run sees only those a test passes. The
# suite itself may run under the script (a `steps` call whose step is `device.sh suite` exports
# STEPS, BUDGET_S, ...), and a caller's STEPS made "without STEPS it says what it needs" fail
# there (the H200 suite at b5f3acc, 2026-12-05) while it passed alone.
READS = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", SCRIPT.read_text()))


def dry(mode: str, tmp_path, **env) -> subprocess.CompletedProcess:
    own = {k: v for k, v in os.environ.items() if k not in READS}
    return subprocess.run(["bash", str(SCRIPT), mode], capture_output=True, text=True, timeout=60,
                          cwd=SCRIPT.parents[1],
                          env={**own, "DRY_RUN": "1", "OUT": str(tmp_path), **env})


def test_a_dry_run_does_not_see_the_callers_settings(tmp_path, monkeypatch):
    """A STEPS (or VARIANTS, ...) in the environment the tests run in is not a dry run's."""
    assert {"STEPS", "VARIANTS", "SHAPES", "PART", "BUDGET_S"} <= READS
    monkeypatch.setenv("STEPS", "probe 60 python3 probes/tma_parity.py")
    monkeypatch.setenv("VARIANTS", "v5")
    monkeypatch.setenv("SHAPES", "1000x1000x1000")
    assert dry("steps", tmp_path).returncode == 2
    assert dry("probe", tmp_path).returncode != 0


def steps(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def fake_smi(tmp_path, body: str) -> str:
    """A PATH whose nvidia-smi is the bash `body`, ahead of the real one (if any)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    smi = bin_ / "nvidia-smi"
    smi.write_text(f"#!/usr/bin/env bash\n{body}\n")
    smi.chmod(0o755)
    return f"{bin_}:{os.environ['PATH']}"


@pytest.mark.parametrize("name,runs", [("NVIDIA H100 80GB HBM3", False), ("NVIDIA H200", True), ("", False)])
def test_require_gpu_stops_the_call_on_another_gpu(tmp_path, name, runs):
    """REQUIRE_GPU=H200 with nvidia-smi naming another GPU (or none): exit 3, no step listed;
    with the H200 named the mode goes on (here its dry run lists the steps)."""
    out = tmp_path / "out"
    p = dry("publish", out, REQUIRE_GPU="H200", PATH=fake_smi(tmp_path, f"[ -n '{name}' ] && echo '{name}'"))
    log = (out / "final.log").read_text()
    if runs:
        assert p.returncode == 0 and "bench-main" in p.stdout
        assert "REQUIRE_GPU=H200: NVIDIA H200" in log
    else:
        assert p.returncode == 3 and "bench" not in p.stdout
        assert f"this GPU is '{name or 'none'}'; nothing run" in log


def test_without_require_gpu_no_gpu_is_asked_for(tmp_path):
    """Unset, the script never calls nvidia-smi (a dry run on a machine without one lists the steps)."""
    called = tmp_path / "called"
    p = dry("publish", tmp_path / "out", PATH=fake_smi(tmp_path, f"touch '{called}'; exit 9"))
    assert p.returncode == 0 and "bench-main" in p.stdout
    assert not called.exists()


def test_the_header_documents_exactly_the_modes_it_has(tmp_path):
    text = SCRIPT.read_text()
    case = set(re.findall(r"^  ([a-z]+)\)", text, re.M))
    documented = set(re.findall(r"^#   ([a-z]+) {2,}", text, re.M))
    assert case == documented and case
    usage = subprocess.run(["bash", str(SCRIPT), "no-such-mode"], capture_output=True, text=True,
                           env={**os.environ, "OUT": str(tmp_path)})
    assert usage.returncode == 2
    assert set(usage.stdout.split("one of:")[1].split()) == case


@pytest.mark.parametrize("order,parts", [("file", "4"), ("reverse", "3")])
def test_the_suite_runs_as_slices_that_cover_the_order(tmp_path, order, parts):
    out = steps(dry("suite", tmp_path, ORDER=order, PARTS=parts).stdout)
    slices = sorted(re.search(r"--part (\S+)", s).group(1) for s in out)
    assert slices == [f"{k}/{parts}" for k in range(1, int(parts) + 1)]
    assert all(f"--order {order}" in s and s.endswith("tests/") for s in out)
    # each slice writes its own JUnit XML (every finished test's time), even when cut by its limit
    assert len({re.search(r"--junitxml (\S+)", s).group(1) for s in out}) == int(parts)
    # slices of equal time by the times measured on the H200, or of equal count with TIMES=
    assert all("--part-times tests/suite_times_h200.json" in s for s in out)
    # a terminal 400 wide: pytest's summary line of a failed test (its first failing check: shape,
    # epilogue, seed, why), which run() copies into final.log, is cut to 80 columns otherwise
    assert all(s.split(": ", 1)[1].startswith("env COLUMNS=400 python3 -m pytest ") for s in out)
    assert not any("--part-times" in s for s in steps(dry("suite", tmp_path, ORDER=order, PARTS=parts, TIMES="").stdout))


def test_a_range_of_the_order_runs_alone(tmp_path):
    out = steps(dry("suite", tmp_path, ORDER="reverse", PART="258:410").stdout)
    assert len(out) == 1 and "--order reverse --part 258:410 " in out[0] and out[0].endswith(" tests/")


def test_the_checks_judge_every_epilogue_under_every_sanitizer(tmp_path):
    out = steps(dry("checks", tmp_path).stdout)
    tools = {re.search(r"--tool (\w+)", s).group(1) for s in out if "compute-sanitizer" in s}
    assert tools == {"memcheck", "racecheck", "synccheck"}
    assert all("--epilogue all" in s for s in out)
    assert any("--repeat 20" in s for s in out)


def test_sanitize_runs_the_three_tools_on_the_named_shapes_and_knobs(tmp_path):
    assert dry("sanitize", tmp_path).returncode == 2  # (SHAPES named, or it says so)
    out = steps(dry("sanitize", tmp_path, SHAPES="400x6400x1024,130x300x200", SET="AUTO=0 BM=192").stdout)
    tools = {re.search(r"--tool (\w+)", s).group(1) for s in out}
    assert tools == {"memcheck", "racecheck", "synccheck"} and len(out) == 3
    assert all("--set AUTO=0 --set BM=192 --shape 400x6400x1024 --shape 130x300x200 --epilogue all" in s for s in out)
    assert sum("--report-api-errors no" in s for s in out) == 1


def test_publish_and_stress_publish(tmp_path):
    for mode in ("publish", "stress"):
        out = steps(dry(mode, tmp_path).stdout)
        assert out and all(s.rstrip().endswith("--publish") or "--publish --budget" in s for s in out)


def test_a_probe_needs_its_variants_and_shapes(tmp_path):
    assert dry("probe", tmp_path).returncode != 0
    out = steps(dry("probe", tmp_path, VARIANTS="v5,CLUSTER_ARRIVE=0", SHAPES="1000x1000x1000").stdout)
    assert len(out) == 1 and "--variants v5,CLUSTER_ARRIVE=0" in out[0] and "--shapes 1000x1000x1000" in out[0]


def test_ncu_samples_one_launch_of_the_named_call(tmp_path):
    assert dry("ncu", tmp_path).returncode != 0
    out = steps(dry("ncu", tmp_path, SPEC="v5_fused_epilogue", M="1000", N="1000", K="1000",
                    EPILOGUE="bias+gelu").stdout)
    assert len(out) == 1
    assert "--launch-count 1" in out[0] and "--section SourceCounters" in out[0]
    assert out[0].endswith("--run v5_fused_epilogue 1000 1000 1000 --epilogue bias+gelu")


def test_steps_runs_each_line_as_a_step_under_its_limit(tmp_path):
    """STEPS: one step a line, "NAME LIMIT_S COMMAND ...", blank lines skipped, {logs} the call's
    log folder; without STEPS it says what it needs."""
    assert dry("steps", tmp_path).returncode == 2
    out = steps(dry("steps", tmp_path, STEPS="probe 60 python3 probes/tma_parity.py\n\n"
                                             "tests 240 python3 -m pytest -q tests/test_v5.py -k row_parity\n"
                                             "time 300 python3 scripts/row_align_probe.py --out {logs}/ra\n").stdout)
    assert out == ["probe 60: python3 probes/tma_parity.py",
                   "tests 240: python3 -m pytest -q tests/test_v5.py -k row_parity",
                   "time 300: python3 scripts/row_align_probe.py --out /tmp/device-dry-run/ra"]


def test_refresh_times_every_shape_of_the_measured_table_once(tmp_path):
    """refresh: v5 beside cuBLAS, published, at each shape of v5's README "Measured" table (the
    script reads the generated block; here the records it is generated from), each shape in one
    step only."""
    from stages.tools import records  # the table's rows: v5's newest result per shape (report.stage_measured)
    table = ["x".join(map(str, key[1:])) for key in records.latest_results(records.load_all())
             if key[0] == "v5_fused_epilogue"]
    out = steps(dry("refresh", tmp_path).stdout)
    assert len(out) == 5 and len(table) > 40
    assert all(" bench v5_fused_epilogue cublas " in s and s.endswith("--publish") for s in out)
    timed = [sh for s in out for sh in re.findall(r"--shape (\S+)", s)]
    assert sorted(timed) == sorted(table)
    assert len(steps(dry("refresh", tmp_path, PARTS="2").stdout)) == 2
