"""`python -m stages profile` without a GPU: ncu's CSV parsed into the record, the retry when ncu
refuses a metric (a fake ncu stands in), the no-GPU and no-ncu paths (one line, no record), and
the Markdown table from a published record."""
import json
import re
import stat
import sys
import textwrap

import pytest

import stages
from stages.core.stage import KernelStage
from stages.tools import cli, profile, records

CSV = textwrap.dedent('''\
    ==PROF== Connected to process 4321 (/usr/bin/python3.12)
    ==PROF== Profiling "gemm_v2_cp_async": 0%....50%....100% - 19 passes
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","lts__t_sector_hit_rate.pct","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__pcsamp_sample_count","smsp__pcsamp_warps_issue_stalled_barrier","smsp__pcsamp_warps_issue_stalled_long_scoreboard","smsp__pcsamp_warps_issue_stalled_math_pipe_throttle","smsp__pcsamp_warps_issue_stalled_selected","smsp__pcsamp_warps_issue_stalled_sleeping"
    "","","","","","","","","","","","byte","byte","nsecond","","%","%","%","","","","","",""
    "0","4321","python3.12","127.0.0.1","gemm_v2_cp_async","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","134,742,016","33,554,432","347,232","0","87.21","61.05","12.48","120,000","12,000","30,000","60,000","18,000","0"
    ''')


def test_parse_csv_reads_values_units_and_kernel():
    rows = profile.parse_csv(CSV)
    assert len(rows) == 1 and rows[0]["kernel"] == "gemm_v2_cp_async"
    m = rows[0]["metrics"]
    assert m["dram__bytes_read.sum"] == {"value": 134742016, "unit": "byte"}
    assert m["gpu__time_duration.sum"] == {"value": 347232, "unit": "nsecond"}
    assert m["lts__t_sector_hit_rate.pct"] == {"value": 87.21, "unit": "%"}
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["value"] == 0
    assert "Block Size" not in m and "CC" not in m  # only metrics, not the launch columns


def test_parse_csv_keeps_only_the_metrics_asked_for_and_survives_noise():
    rows = profile.parse_csv(CSV, wanted=["dram__bytes_read.sum"])
    assert list(rows[0]["metrics"]) == ["dram__bytes_read.sum"]
    assert profile.parse_csv("==ERROR== nothing profiled\n") == []


def test_stall_summary_ranks_reasons_by_share():
    stalls, top = profile.stall_summary(profile.parse_csv(CSV)[0]["metrics"])
    assert stalls["long_scoreboard"] == 30000 and stalls["sleeping"] == 0
    assert [t["reason"] for t in top] == ["math_pipe_throttle", "long_scoreboard", "selected", "barrier"]
    assert top[0]["share"] == pytest.approx(60000 / 120000)


def test_metric_names_are_the_fixed_set():
    names = profile.all_metrics()
    for required in ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
                     "lts__t_sector_hit_rate.pct", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                     "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                     "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                     "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                     "sm__warps_active.avg.pct_of_peak_sustained_active", "gpu__time_duration.sum",
                     "smsp__pcsamp_warps_issue_stalled_long_scoreboard"):
        assert required in names
    assert len(set(names)) == len(names)


def test_parse_spec_names_stages_and_variants():
    assert profile.parse_spec("v2_cp_async").name == "v2_cp_async"
    v = profile.parse_spec("v2_cp_async[SWIZZLE=0,STAGES=4]")
    assert v.name == "v2_cp_async[SWIZZLE=0,STAGES=4]" and v.defines["SWIZZLE"] == 0
    assert profile.parse_spec(v.name).defines == v.defines  # a variant's name is its spec
    with pytest.raises(ValueError, match="no tunable"):
        profile.parse_spec("v2_cp_async[NOPE=1]")
    with pytest.raises(ValueError):
        profile.parse_spec("v2_cp_async[SWIZZLE=x]")


def _no_write(*a, **k):
    raise AssertionError("a record was written")


def test_no_gpu_prints_one_line_and_writes_nothing(monkeypatch, capsys):
    monkeypatch.setattr(profile.gpu, "available", lambda: (False, "no CUDA GPU visible"))
    monkeypatch.setattr(records, "write", _no_write)
    assert cli.main(["profile", "--publish"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no CUDA GPU visible" in out[0] and "no record written" in out[0]
    rec = profile.run_profile(stages.names())
    assert not records.measured(rec) and all(e["status"] == "skipped" for e in rec["results"])


def test_gpu_without_ncu_prints_one_line_and_writes_nothing(monkeypatch, capsys):
    monkeypatch.setattr(profile.gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    monkeypatch.setattr(records, "write", _no_write)
    assert cli.main(["profile", "v1_tiled[PAD=0]"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "ncu" in out[0]


FAKE_NCU = '''\
import os, sys
argv = sys.argv[1:]
if "--version" in argv:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0.0 (build 1) (public-release)")
elif "--import" in argv:
    sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
else:
    metrics = argv[argv.index("--metrics") + 1].split(",")
    if os.environ.get("FAKE_NCU_NOPERM"):
        sys.stderr.write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\\n")
        sys.exit(1)
    needs = os.environ.get("FAKE_NCU_NEEDS")
    if needs and needs not in metrics:
        sys.exit("fake ncu: --metrics lacks " + needs)
    refuse = os.environ.get("FAKE_NCU_REFUSE", "")
    if refuse and any(m.startswith(refuse) for m in metrics):
        sys.stderr.write("==ERROR== Failed to find metric " + refuse + "\\n")
        sys.exit(1)
    open(argv[argv.index("--export") + 1], "w").write("report")
    assert argv[argv.index("--kernel-name") + 1].startswith("regex:gemm_")
    assert argv[argv.index("--launch-skip") + 1] == "1" and argv[argv.index("--launch-count") + 1] == "1"
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--epilogue") + 1] == os.environ.get("FAKE_NCU_EPILOGUE", "plain")
'''


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    exe = tmp_path / "ncu"
    exe.write_text(f"#!{sys.executable}\n" + FAKE_NCU)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    csv_path = tmp_path / "raw.csv"
    csv_path.write_text(CSV)
    monkeypatch.setenv("FAKE_NCU_CSV", str(csv_path))
    env = records.environment()  # before the GPU is faked: the record's env stays this machine's
    env["gpu"] = env["gpu"] or {"name": "a GPU faked by the test"}
    monkeypatch.setattr(records, "environment", lambda: dict(env))
    monkeypatch.setattr(profile, "find_ncu", lambda: str(exe))
    monkeypatch.setattr(profile.gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(KernelStage, "runnable", lambda self: (True, ""))
    return exe


def test_profile_record_from_a_fake_ncu(fake_ncu, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NCU_REFUSE", "sm__pipe_tensor_op_gmma_cycles_active")
    rec = profile.run_profile(["v2_cp_async"], keep_reports=str(tmp_path / "reports"), progress=False)
    assert rec["kind"] == "profile" and rec["settings"]["ncu_version"].startswith("2099.1")
    (e,) = rec["results"]
    assert e["status"] == "ok", e
    assert (e["m"], e["n"], e["k"]) == profile.DEFAULT_SHAPE and e["kernel"] == "gemm_v2_cp_async"
    assert e["metrics"]["dram__bytes_write.sum"] == {"value": 33554432, "unit": "byte"}
    assert e["top_stalls"][0]["reason"] == "math_pipe_throttle"
    # refused by this ncu: dropped and said so; not in its CSV: listed too, never made up
    assert "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active" in e["dropped"]
    assert "lts__t_bytes.sum" in e["dropped"] and "lts__t_bytes.sum" not in e["metrics"]
    assert records.validate(rec) == []
    path = records.write(rec, tmp_path / "profile.json")
    rec = json.loads(path.read_text())
    rec["_path"] = "results/x-profile.json"
    table = profile.profile_table("v2_cp_async", [rec])
    assert "| DRAM bytes read | 0.135 GB |" in table and "| duration | 0.3472 ms |" in table
    assert "math_pipe_throttle 50%" in table and "2099.1" in table
    assert "(../../results/x-profile.json)" in profile.profile_table("v2_cp_async", [rec], link_prefix="../../")
    assert profile.profile_table("v3_wgmma_tma", [rec]).startswith("No profile published")


def test_a_fused_epilogue_is_profiled_where_the_stage_fuses_it(fake_ncu, monkeypatch, tmp_path):
    """--epilogue reaches the child (fake ncu checks its command line), the entry and the settings
    name it, and a stage without a fused epilogue is skipped, saying so, not profiled plain."""
    csv = tmp_path / "v5.csv"
    csv.write_text(CSV.replace("gemm_v2_cp_async", "gemm_v5_fused_epilogue"))
    monkeypatch.setenv("FAKE_NCU_CSV", str(csv))
    monkeypatch.setenv("FAKE_NCU_EPILOGUE", "bias+gelu")
    rec = profile.run_profile(["v2_cp_async", "v5_fused_epilogue"], epilogue="gelu+bias", progress=False)
    v2, v5 = rec["results"]
    assert v2["status"] == "skipped" and "does not fuse bias or activation" in v2["reason"]
    assert v5["status"] == "ok" and v5["epilogue"] == "bias+gelu" and rec["settings"]["epilogue"] == "bias+gelu"
    assert records.validate(rec) == []
    rec["_path"] = "results/x-profile.json"
    assert "`v5_fused_epilogue` bias+gelu" in profile.profile_table("v5_fused_epilogue", [rec])


def test_a_further_metric_reaches_ncu_and_the_record(fake_ncu, monkeypatch, tmp_path, capsys):
    """--metric NAME: asked of ncu beside the fixed set (fake ncu refuses the run without it), kept in
    the entry like the others, named in the settings and printed by the CLI under its ncu name."""
    extra = "lts__t_requests_srcunit_tex_op_read.sum"
    csv = tmp_path / "extra.csv"
    csv.write_text(CSV.replace('"smsp__pcsamp_warps_issue_stalled_sleeping"',
                               f'"smsp__pcsamp_warps_issue_stalled_sleeping","{extra}"')
                      .replace('"","",""\n', '"","","",""\n').replace('"18,000","0"', '"18,000","0","565,720"'))
    monkeypatch.setenv("FAKE_NCU_CSV", str(csv))
    monkeypatch.setenv("FAKE_NCU_NEEDS", extra)
    assert profile.all_metrics([extra, extra, "gpu__time_duration.sum"]) == profile.all_metrics() + [extra]
    out = tmp_path / "rec.json"
    assert cli.main(["profile", "v2_cp_async", "--metric", extra, "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    (e,) = rec["results"]
    assert e["status"] == "ok" and e["metrics"][extra] == {"value": 565720, "unit": ""}, e
    assert extra in rec["settings"]["metrics"] and records.validate(rec) == []
    assert re.search(r"\(asked for\)\s+565,720\s+" + re.escape(extra), capsys.readouterr().out)
    monkeypatch.delenv("FAKE_NCU_NEEDS")
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "missing.csv"))
    assert cli.main(["profile", "v2_cp_async", "--out", str(out)]) == 1  # (the fixed set alone: as before)


def test_profile_cli_reports_a_failed_ncu(fake_ncu, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "missing.csv"))  # --import prints nothing
    out = tmp_path / "rec.json"
    assert cli.main(["profile", "v1_tiled", "--shape", "256x256x256", "--out", str(out)]) == 1
    rec = json.loads(out.read_text())
    (e,) = rec["results"]
    assert e["status"] == "failed" and "no profiled launch" in e["reason"] and (e["m"], e["k"]) == (256, 256)


def test_an_ncu_that_cannot_profile_here_is_tried_once(fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_NOPERM", "1")
    rec = profile.run_profile(["v1_tiled", "v2_cp_async"], shape=(256, 256, 256), progress=False)
    first, second = rec["results"]
    assert first["status"] == "failed" and "ERR_NVGPUCTRPERM" in first["reason"]
    assert second["status"] == "skipped" and "cannot profile" in second["reason"]
    assert records.validate(rec) == []


def test_ok_profile_entry_needs_its_fields():
    rec = records.new_record("profile")
    rec["results"].append({"stage": "v1_tiled", "m": 1, "n": 1, "k": 1, "status": "ok"})
    assert any("lacks" in p for p in records.validate(rec))


def test_a_baseline_is_profiled_by_its_library_kernel_names():
    # cuBLAS has no kernel of ours to name: ncu filters on the names cuBLAS gives its GEMM kernels
    # (this used to raise AttributeError: 'CublasStage' object has no attribute 'kernel').
    cublas = stages.get("cublas")
    pattern = profile.kernel_pattern(cublas)
    for name in ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64",
                 "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x256x64"):
        assert re.search(pattern, name), name
    for name in ("cupy_fill", "splitKreduce_kernel", "cupy_random_x_mod_1"):
        assert not re.search(pattern, name), name
    own = stages.get("v5_fused_epilogue")
    assert re.search(profile.kernel_pattern(own), own.kernel) and profile.kernel_pattern(own) != pattern
