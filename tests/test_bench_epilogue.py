"""bench --epilogue: the spec parser, the fused-epilogue baselines (torch optional), the judge of
an unfused pipeline, records and the fused table. CPU tests first; the GPU tests at the end run
each baseline on a GPU (and torch, where installed) and skip with the reason elsewhere."""
from __future__ import annotations

import copy
import importlib
import re
import subprocess
import sys

import numpy as np
import pytest

import stages
from stages.core import contract, gpu
from stages.core.contract import Epilogue
from stages.core.errors import UnsupportedDevice
from stages.core.gpu import DeviceInfo
from stages.tools import bench, cli, records, report, verify

baselines = importlib.import_module("stages.baselines")  # `stages.baselines` is the registry's function
FUSED = ("torch_linear", "torch_addmm_gelu", "cublas_cupy_epilogue")
TORCH = ("torch_linear", "torch_addmm_gelu")


# ---- the spec parser ----------------------------------------------------------------------------
@pytest.mark.parametrize("text, bias, alpha, act, canonical", [
    ("bias+gelu_tanh", True, 1.0, "gelu_tanh", "bias+gelu_tanh"),
    ("gelu_tanh+bias", True, 1.0, "gelu_tanh", "bias+gelu_tanh"),
    (" bias + alpha + relu ", True, bench.EPILOGUE_ALPHA, "relu", "bias+alpha+relu"),
    ("bias", True, 1.0, None, "bias"),
    ("alpha", False, 0.5, None, "alpha"),
    ("silu", False, 1.0, "silu", "silu"),
    ("gelu+alpha", False, 0.5, "gelu", "alpha+gelu"),
    ("plain", False, 1.0, None, ""),
])
def test_epilogue_specs_parse_to_one_canonical_form(text, bias, alpha, act, canonical):
    spec = bench.parse_epilogue(text)
    assert (spec.bias, spec.alpha, spec.activation, spec.text) == (bias, alpha, act, canonical)
    assert bench.parse_epilogue(spec.text or "plain") == spec, "the canonical text parses back to the same spec"
    assert spec.plain == (canonical == "")


def test_a_spec_becomes_the_call_and_the_reference_epilogue():
    spec = bench.parse_epilogue("alpha+bias+gelu_tanh")
    assert spec.alpha == 0.5 and bench.EPILOGUE_ALPHA == 0.5
    assert spec.features == ("bias", "alpha", "activation")
    b = np.ones(4, np.float16)
    assert spec.kwargs(b) == {"bias": b, "alpha": 0.5, "activation": "gelu_tanh"}
    assert spec.epilogue(b) == Epilogue(b, 0.5, "gelu_tanh")
    relu = bench.parse_epilogue("relu")
    assert relu.kwargs(b) == {"bias": None, "alpha": 1.0, "activation": "relu"}, "no bias unless named"
    assert bench.PLAIN_SPEC.kwargs(b) == {} and bench.PLAIN_SPEC.epilogue(b) is contract.PLAIN


@pytest.mark.parametrize("text, message", [
    ("bias+tanh", r"unknown word 'tanh' in epilogue spec 'bias\+tanh'; join with '\+' any of: bias, alpha "
                  r"\(= 0.5\), and one activation of relu, gelu, gelu_tanh, silu"),
    ("Bias", r"unknown word 'Bias'"),
    ("bias+gelu+swish", r"unknown word 'swish'"),
    ("relu+gelu", r"'relu\+gelu' names 2 activations \(relu, gelu\); an epilogue applies one"),
    ("gelu_tanh+bias+silu", r"names 2 activations \(gelu_tanh, silu\)"),
    ("bias+bias", r"repeats 'bias'"),
    ("bias++relu", r"has an empty word"),
    ("", r"has an empty word"),
    ("plain+bias", r"unknown word 'plain'.*\('plain' stands alone\)"),
])
def test_bad_epilogue_specs_are_refused_with_the_valid_words(text, message):
    with pytest.raises(ValueError, match=message):
        bench.parse_epilogue(text)


def test_cli_epilogue_errors_are_one_usage_line(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "--epilogue", "bias+tanh"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --epilogue: unknown word 'tanh'" in err and "Traceback" not in err
    assert cli.parser().parse_args(["bench", "--epilogue", "relu+bias"]).epilogue == ["bias+relu"]
    assert cli.parser().parse_args(["bench"]).epilogue is None, "default: no epilogue, the plain GEMM"


def test_epilogue_and_overhead_are_refused_together(capsys, monkeypatch):
    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    assert cli.main(["bench", "cublas", "--overhead", "--epilogue", "bias"]) == 2
    assert "--overhead times plain gemm() calls" in capsys.readouterr().err


# ---- the registry and the baselines without a GPU (torch optional) ----------------------------
def test_fused_baselines_are_registered_but_not_in_the_default_runs():
    assert stages.epilogue_baselines() == list(FUSED)
    for name in FUSED:
        st = stages.get(name)
        assert st.name == name and st.kind == "baseline" and st.idea and st.constraints.supports(3, 5, 7)
        assert name not in stages.all_names(), "verify and a plain bench stay what they were"
    assert stages.get("cublas_cupy_epilogue").epilogue == {"bias", "alpha", "activation"}
    assert stages.get("torch_linear").epilogue == {"bias", "activation"}, "F.linear has no alpha"
    with pytest.raises(ValueError, match="unknown stage 'torch'.*torch_linear.*cublas_cupy_epilogue"):
        stages.get("torch")


def test_nothing_outside_the_torch_baselines_imports_torch():
    code = ("import sys; import stages, stages.tools.cli, stages.tools.bench, stages.tools.report\n"
            "for name in stages.epilogue_baselines(): stages.get(name).epilogue\n"
            "print('torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError


@pytest.mark.parametrize("name", TORCH)
def test_torch_baselines_are_not_runnable_without_torch(name, no_torch, monkeypatch):
    monkeypatch.setattr(gpu, "available", lambda: (True, ""))  # even with a GPU
    assert stages.get(name).runnable() == (False, "torch is not installed")
    with pytest.raises(UnsupportedDevice, match=f"{name} needs torch: torch is not installed"):
        stages.get(name).prepare(object(), object(), bias=object(), activation="gelu_tanh")


def test_the_cupy_baseline_does_not_need_torch(no_torch, monkeypatch):
    monkeypatch.setattr(gpu, "available", lambda: (True, ""))
    assert stages.get("cublas_cupy_epilogue").runnable() == (True, "")


@pytest.fixture
def gpu_untouchable(monkeypatch):
    """Every way into the GPU raises: what is refused here is refused before any GPU work."""
    def touched(*a, **k):
        raise AssertionError("the GPU was touched")
    for fn in ("cupy", "current", "require", "current_device_id"):
        monkeypatch.setattr(gpu, fn, touched)
    monkeypatch.setattr(contract, "as_device_array", touched)


@pytest.mark.parametrize("name, kwargs, message", [
    ("torch_addmm_gelu", {"activation": "relu", "bias": object()},
     r"torch_addmm_gelu computes exactly bias\+gelu_tanh .*not bias\+relu"),
    ("torch_addmm_gelu", {"activation": "gelu", "bias": object()}, r"exactly bias\+gelu_tanh .*not bias\+gelu;"),
    ("torch_addmm_gelu", {"activation": "gelu_tanh"}, r"exactly bias\+gelu_tanh .*not gelu_tanh;"),
    ("torch_addmm_gelu", {}, r"exactly bias\+gelu_tanh .*not a plain GEMM"),
    ("torch_addmm_gelu", {"alpha": 0.5, "bias": object(), "activation": "gelu_tanh"},
     r"torch_addmm_gelu does not fuse alpha into its epilogue"),
    ("torch_linear", {"alpha": 0.5}, r"torch_linear does not fuse alpha into its epilogue; stages that do: .*cublas"),
    ("torch_linear", {"activation": "tanh"}, r"unknown activation 'tanh'; choose None or one of"),
    ("cublas_cupy_epilogue", {"activation": "gelu_erf"}, r"unknown activation 'gelu_erf'"),
    ("cublas_cupy_epilogue", {"alpha": float("nan")}, r"alpha must be finite"),
])
def test_unsupported_epilogues_are_refused_before_the_gpu(name, kwargs, message, gpu_untouchable):
    with pytest.raises(ValueError, match=message):
        stages.get(name).prepare(object(), object(), **kwargs)


def test_what_bench_skips_is_what_prepare_refuses():
    spec = bench.parse_epilogue
    assert bench.fusion_gap(stages.get("cublas"), spec("alpha")) == ""
    assert bench.fusion_gap(stages.get("cublas"), spec("bias+gelu_tanh")) == \
        "does not fuse bias or activation into its epilogue (fuses: alpha)"
    assert bench.fusion_gap(stages.get("torch_linear"), spec("bias+alpha+relu")).startswith("does not fuse alpha")
    assert bench.fusion_gap(stages.get("torch_linear"), spec("bias+silu")) == ""
    addmm = stages.get("torch_addmm_gelu")
    assert bench.fusion_gap(addmm, spec("bias+gelu_tanh")) == ""
    for other in ("bias+gelu", "bias", "gelu_tanh", "plain"):
        assert "computes exactly bias+gelu_tanh" in bench.fusion_gap(addmm, spec(other)), other
    for text in ("bias+alpha+gelu", "silu", "alpha", "plain"):
        assert bench.fusion_gap(stages.get("cublas_cupy_epilogue"), spec(text)) == ""


def test_which_baselines_round_before_their_epilogue():
    spec = bench.parse_epilogue
    cupy_epi, linear, addmm = (stages.get(n) for n in ("cublas_cupy_epilogue", "torch_linear", "torch_addmm_gelu"))
    assert bench.rounds_before_epilogue(cupy_epi, spec("bias")) and bench.rounds_before_epilogue(cupy_epi, spec("relu"))
    assert not bench.rounds_before_epilogue(cupy_epi, spec("alpha")), "alpha is applied inside cuBLAS"
    assert bench.rounds_before_epilogue(linear, spec("bias+relu")), "the activation is a second kernel"
    assert not bench.rounds_before_epilogue(linear, spec("bias")), "cuBLASLt adds the bias before rounding"
    assert not bench.rounds_before_epilogue(addmm, spec("bias+gelu_tanh")), "one fused cuBLASLt epilogue"
    assert not bench.rounds_before_epilogue(stages.get("cublas"), spec("alpha"))
    assert not bench.rounds_before_epilogue(cupy_epi, bench.PLAIN_SPEC)


# ---- the judge of a fused output, and of an unfused pipeline --------------------------------------
@pytest.fixture(scope="module")
def fused_case():
    m, n, k = 256, 512, 128
    a, b = verify.random_operands(m, n, k, 7, np)
    bias = bench.random_bias(n, 8, np)
    acc = a.astype(np.float32) @ b.astype(np.float32).T
    return a, b, bias, acc


def _judge(a, b, out, epi, unfused):
    ref, mag = bench.fused_reference(a, b, np, epi, intermediate_fp16=unfused)
    return verify.judge_output(verify.Check("t", *out.shape, a.shape[1], 0), out, ref, mag, np)


@pytest.mark.parametrize("act", ["gelu_tanh", "relu", "silu"])
def test_an_unfused_pipeline_passes_only_with_its_one_extra_rounding(fused_case, act):
    """cuBLAS's fp16 result, then bias and activation in fp32 (cublas_cupy_epilogue): the strict
    judge fails it where the bias cancels a rounded value; the allowance for that one rounding
    passes it; a fused result passes both."""
    a, b, bias, acc = fused_case
    epi = Epilogue(bias, 1.0, act)
    b32 = bias.astype(np.float32)
    fused = verify.activate((acc + b32).astype(np.float64), act, np).astype(np.float16)
    unfused = verify.activate((acc.astype(np.float16).astype(np.float32) + b32).astype(np.float64),
                              act, np).astype(np.float16)
    assert _judge(a, b, fused, epi, False).passed and _judge(a, b, fused, epi, True).passed
    strict = _judge(a, b, unfused, epi, False)
    assert not strict.passed and "over its error bound" in strict.reason
    assert _judge(a, b, unfused, epi, True).passed


@pytest.mark.parametrize("bug", ["bias_shifted", "bias_missing", "wrong_activation", "alpha_missing", "rounded_twice"])
def test_the_unfused_allowance_still_fails_a_wrong_epilogue(fused_case, bug):
    a, b, bias, acc = fused_case
    alpha = 0.5 if bug == "alpha_missing" else 1.0
    epi = Epilogue(bias, alpha, "gelu_tanh")
    z = acc.astype(np.float16).astype(np.float32) * (1.0 if bug == "alpha_missing" else alpha)
    b32 = {"bias_shifted": np.roll(bias, 1), "bias_missing": 0 * bias}.get(bug, bias).astype(np.float32)
    act = "silu" if bug == "wrong_activation" else "gelu_tanh"
    pre = (z + b32).astype(np.float64)
    if bug == "rounded_twice":  # the bias added in fp16 and the activation's input rounded again, x4 error
        pre = (((z + b32).astype(np.float16).astype(np.float64) - pre) * 4 + pre)
    out = verify.activate(pre, act, np).astype(np.float16)
    chk = _judge(a, b, out, epi, True)
    assert not chk.passed, f"{bug} passed the unfused judge (worst {chk.worst_bound_ratio:.2f} of the bound)"


# ---- run_bench's plan with the GPU stood in for ---------------------------------------------------
class _FakeStage:
    kind = "gpu"
    previous = None

    def __init__(self, name, epilogue=()):
        self.name, self.epilogue = name, frozenset(epilogue)
        self.constraints = contract.Constraints()

    def runnable(self):
        return True, ""


class _Calls(list):
    timed: list


@pytest.fixture
def fake_gpu(monkeypatch):
    """gpu.available says yes, the environment is fixed, and `_prepare`, `_time` and `_judged`
    stand in for the launches (a made-up timing per (stage, epilogue)): what is left is
    run_bench's own logic. The list returned holds each prepare call; its `timed`, each `_time`
    call's (stage, epilogue) pairs."""
    monkeypatch.setitem(sys.modules, "torch", None)  # torch's rows stay out, on any machine
    monkeypatch.setattr(gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(gpu, "current", lambda: DeviceInfo(0, "NVIDIA H200", (9, 0), 132, 1980, 0, 60 << 20))
    monkeypatch.setattr(gpu, "smi_reading", lambda device_id=None: gpu.SmiReading("580.0", "1980", "1980", None))
    env = {"date": "2026-12-01T00:00:00+00:00", "git_commit": "abc", "git_dirty": False,
           "host": {"cpu": "x", "cores": 1, "platform": "x"}, "versions": {}, "gpu": {"name": "NVIDIA H200"}}
    monkeypatch.setattr(records, "environment", lambda: copy.deepcopy(env))

    class _Pool:
        def free_all_blocks(self):
            pass

    class _CP:
        float16, float32 = np.float16, np.float32
        random = np.random

        def get_default_memory_pool(self):
            return _Pool()

    monkeypatch.setattr(gpu, "cupy", lambda: _CP())
    monkeypatch.setattr(bench, "L2Flusher", lambda l2: type("F", (), {"nbytes": 1})())
    calls = _Calls()
    tflops = {("cublas", ""): 500.0, ("cublas", "alpha"): 400.0, ("vF_fused", "bias+gelu_tanh"): 300.0,
              ("cublas_cupy_epilogue", "bias+gelu_tanh"): 250.0, ("cublas_cupy_epilogue", "alpha"): 480.0,
              ("vF_fused", ""): 450.0}

    def fake_prepare(st, m, n, k, a, b, spec=bench.PLAIN_SPEC, bias=None):
        calls.append((st.name, spec.text, spec.kwargs(bias).get("bias") is not None))  # what prepare gets
        return bench._Prepared(st, spec, None, None, None)

    def fake_time(prepared, reps, warmup, flush):
        timed.append([(p.st.name, p.spec.text) for p in prepared])  # one call per shape: all in turn
        return [bench.Timing([1.0] * reps) for _ in prepared]

    def fake_judged(p, m, n, k, a, b, bias, t, reps):
        tf = tflops[(p.st.name, p.spec.text)]
        return {**bench._named(p.st, m, n, k, p.spec),
                "ms_median": t.median, "ms_p20": 0.9, "ms_p80": 1.1, "reps": reps, "tflops": tf, "rel_err": 2e-4,
                "bound_ratio": 0.5, "verified": True, "status": "ok", "reason": ""}

    timed = []
    monkeypatch.setattr(bench, "_prepare", fake_prepare)
    monkeypatch.setattr(bench, "_time", fake_time)
    monkeypatch.setattr(bench, "_judged", fake_judged)
    calls.timed = timed
    return calls


def test_a_fused_run_times_plain_cublas_first_and_skips_what_does_not_fuse(fake_gpu):
    plain, fused = _FakeStage("vP_plain"), _FakeStage("vF_fused", ["bias", "activation"])
    rec = bench.run_bench([plain, fused], shapes=[(64, 32, 16)], reps=3, warmup=1, progress=False,
                          epilogues=["gelu_tanh+bias", "alpha"])
    got = [(e["stage"], e["epilogue"], e["status"]) for e in rec["results"]]
    assert got == [
        ("cublas", "", "ok"),  # the yardstick, and the only plain row: no plain GEMM was asked for
        ("cublas", "bias+gelu_tanh", "skipped"), ("vP_plain", "bias+gelu_tanh", "skipped"),
        ("vF_fused", "bias+gelu_tanh", "ok"), ("cublas_cupy_epilogue", "bias+gelu_tanh", "ok"),
        ("cublas", "alpha", "ok"), ("vP_plain", "alpha", "skipped"), ("vF_fused", "alpha", "skipped"),
        ("cublas_cupy_epilogue", "alpha", "ok"),
    ], "torch is absent: its baselines do not join; cuBLAS + CuPy does"
    by = {(e["stage"], e["epilogue"]): e for e in rec["results"]}
    assert by[("cublas", "alpha")]["ratio_cublas"] == pytest.approx(0.8), "over PLAIN cuBLAS, not fused cuBLAS"
    assert by[("vF_fused", "bias+gelu_tanh")]["ratio_cublas"] == pytest.approx(0.6)
    assert by[("cublas", "")]["ratio_cublas"] == 1.0
    assert by[("vP_plain", "bias+gelu_tanh")]["reason"] == \
        "vP_plain does not fuse bias or activation into its epilogue (fuses: nothing)"
    assert by[("vF_fused", "alpha")]["reason"].startswith("vF_fused does not fuse alpha")
    assert ("vF_fused", "bias+gelu_tanh", True) in fake_gpu, "the shape's bias reaches a bias epilogue"
    assert ("cublas", "alpha", False) in fake_gpu, "and no other"
    assert rec["settings"]["epilogues"] == ["bias+gelu_tanh", "alpha"] and rec["settings"]["epilogue_alpha"] == 0.5
    assert not records.validate(rec)


def test_plain_among_the_specs_times_the_named_stages_plain_too(fake_gpu):
    fused = _FakeStage("vF_fused", ["bias", "activation"])
    rec = bench.run_bench([fused], shapes=[(64, 32, 16)], reps=3, warmup=1, progress=False,
                          epilogues=["plain", "bias+gelu_tanh"], fused_baselines=False)
    assert [(e["stage"], e["epilogue"]) for e in rec["results"]] == [
        ("cublas", ""), ("vF_fused", ""), ("cublas", "bias+gelu_tanh"), ("vF_fused", "bias+gelu_tanh")]
    assert ("vF_fused", "", False) in fake_gpu, "no bias drawn into a plain call"


def test_a_plain_run_is_what_it_was(fake_gpu):
    rec = bench.run_bench([_FakeStage("vF_fused", ["bias"])], shapes=[(64, 32, 16)], reps=3, warmup=1,
                          progress=False)
    assert [(e["stage"], e["epilogue"]) for e in rec["results"]] == [("cublas", ""), ("vF_fused", "")]
    assert "epilogues" not in rec["settings"] and not records.validate(rec)


def test_without_a_gpu_a_fused_run_measures_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    monkeypatch.setattr(records, "RUNS", tmp_path / "runs")
    assert cli.main(["bench", "v0_naive", "--shape", "64x64x64", "--epilogue", "bias+gelu_tanh"]) == 0
    assert "nothing was measured: no record written" in capsys.readouterr().out
    assert not (tmp_path / "runs").exists()


# ---- records and the fused table ----------------------------------------------------------------
def _fused_record():
    env = {"date": "2026-12-01T00:00:00+00:00", "git_commit": "abc1234def", "git_dirty": False,
           "host": {"cpu": "Test CPU", "cores": 2, "platform": "x"},
           "versions": {"cupy": "14", "numba": "0.6", "numpy": "2", "python": "3.12"},
           "gpu": {"name": "NVIDIA H200", "compute_capability": "9.0", "driver": "580", "cuda_runtime": 13000}}
    common = {"m": 4096, "n": 4096, "k": 4096, "dtype": "float16", "ms_p20": 0.19, "ms_p80": 0.21, "reps": 30,
              "rel_err": 2.8e-4, "bound_ratio": 0.3, "verified": True, "status": "ok", "reason": ""}

    def row(stage, epi, ms, tf, ratio):
        return {"stage": stage, "epilogue": epi, "ms_median": ms, "tflops": tf, "pct_peak": tf / 9.894,
                "ratio_cublas": ratio, **common}

    res = [row("cublas", "", 0.200, 700.0, 1.0),
           {"stage": "v0_naive", "m": 4096, "n": 4096, "k": 4096, "dtype": "float16", "epilogue": "bias+gelu_tanh",
            "status": "skipped", "reason": "v0_naive does not fuse bias or activation into its epilogue"},
           row("v4_swizzle_pipeline", "bias+gelu_tanh", 0.210, 650.0, 650 / 700),
           row("torch_linear", "bias+gelu_tanh", 0.260, 520.0, 520 / 700),
           row("torch_addmm_gelu", "bias+gelu_tanh", 0.230, 600.0, 600 / 700),
           dict(row("cublas_cupy_epilogue", "bias+gelu_tanh", 0.250, 540.0, 540 / 700), judged=bench.INTERMEDIATE_NOTE),
           row("cublas_cupy_epilogue", "relu", 0.240, 560.0, 0.8)]
    settings = {"reps": 30, "warmup": 5, "epilogues": ["bias+gelu_tanh", "relu"], "epilogue_alpha": 0.5}
    return {"schema": records.SCHEMA, "kind": "bench", "env": env, "settings": settings, "results": res, "cpu": []}


def test_a_fused_record_is_sound():
    assert records.validate(_fused_record()) == []


@pytest.mark.parametrize("mutate, problem", [
    (lambda r: r["results"][2].pop("ratio_cublas"), r"results\[2\] \(v4_swizzle_pipeline\): ok entry lacks \['ratio_cublas'\]"),
    (lambda r: r["results"][3].pop("tflops"), r"results\[3\] \(torch_linear\): ok entry lacks \['tflops'\]"),
    (lambda r: r["results"][2].pop("epilogue"), r"results\[2\] \(v4_swizzle_pipeline\): lacks 'epilogue'"),
    (lambda r: r["results"][1].pop("epilogue"), r"results\[1\] \(v0_naive\): lacks 'epilogue'"),
    (lambda r: r["results"][2].update(epilogue="bias+tanh"), r"unknown word 'tanh'"),
    (lambda r: r["results"][2].update(epilogue="gelu_tanh+bias"), r"is not written as 'bias\+gelu_tanh'"),
    (lambda r: r["results"][2].update(epilogue=None), r"epilogue None is not a string"),
    (lambda r: r["results"][2].update(verified=False), r"status ok but verified is False"),
])
def test_a_fused_entry_missing_a_field_is_refused(tmp_path, mutate, problem):
    rec = _fused_record()
    mutate(rec)
    assert any(re.search(problem, p) for p in records.validate(rec)), records.validate(rec)
    with pytest.raises(ValueError, match="refusing to write an unsound record"):
        records.write(rec, tmp_path / "r.json")


def test_records_from_before_fused_epilogues_stay_valid():
    rec = _fused_record()
    del rec["settings"]["epilogues"]
    for e in rec["results"]:
        if e["epilogue"] == "":
            del e["epilogue"]  # an old plain entry: no field
    assert records.validate(rec) == []
    for old in records.load_all() + records.load_all(records.RESULTS / "tuning"):
        assert not [p for p in records.validate(old) if "epilogue" in p], old["_path"]


def test_fused_rows_never_feed_the_plain_tables():
    rec = dict(_fused_record(), _path="results/f.json")
    rec["results"].append(dict(rec["results"][0], epilogue="alpha", tflops=1.0))
    best = records.latest_results([rec])
    assert best[("cublas", 4096, 4096, 4096)][0]["tflops"] == 700.0
    assert ("v4_swizzle_pipeline", 4096, 4096, 4096) not in best, "its only row is fused"


def test_fused_table_from_a_record():
    rec = dict(_fused_record(), _path="results/f.json")
    table = report.fused_table([rec])
    lines = table.splitlines()
    assert lines[0] == "| stage | M×N×K | epilogue | median ms | × plain cuBLAS | × torch | × own plain |"
    assert "| v4_swizzle_pipeline | 4096×4096×4096 | `bias+gelu_tanh` | 0.210 | 0.93 | 1.08 | – |" in lines, \
        "the run did not time v4's plain GEMM: –"
    assert "| torch_addmm_gelu | 4096×4096×4096 | `bias+gelu_tanh` | 0.230 | 0.86 | 1.00 | – |" in lines
    assert "| torch_linear | 4096×4096×4096 | `bias+gelu_tanh` | 0.260 | 0.74 | 0.87 | – |" in lines
    assert "| cublas_cupy_epilogue | 4096×4096×4096 | `relu` | 0.240 | 0.80 | – | – |" in lines, "no torch row: –"
    assert not any("v0_naive" in ln or "| cublas |" in ln for ln in lines), "skipped and plain rows stay out"
    assert "alpha = 0.5" in table and "[f.json](results/f.json)" in table
    assert "](../results/f.json)" in report.fused_table([rec], "../")


def test_fused_table_divides_by_the_stages_own_plain_time_in_the_same_run():
    """`bench --epilogue plain --epilogue ...` times the stage's plain GEMM in the same rounds: the
    fused row's × own plain is that plain time over its own (the issue's "at least 0.97x v5's own
    plain GEMM time"), to three places so that 0.965 does not read as 0.97."""
    rec = dict(_fused_record(), _path="results/f.json")
    rec["results"].insert(1, dict(rec["results"][2], epilogue="", ms_median=0.2031, tflops=673.5))
    lines = report.fused_table([rec]).splitlines()
    assert "| v4_swizzle_pipeline | 4096×4096×4096 | `bias+gelu_tanh` | 0.210 | 0.93 | 1.08 | 0.965 |" in lines
    assert not any("| `` |" in ln for ln in lines), "the plain row itself stays out"


def test_fused_table_without_fused_records():
    assert report.fused_table([]).startswith("No fused-epilogue measurement published yet")
    plain = dict(_fused_record(), _path="results/p.json")
    plain["results"] = plain["results"][:1]
    assert report.fused_table([plain]).startswith("No fused-epilogue measurement")


def test_cli_prints_the_epilogue_column_only_for_fused_rows():
    rec = _fused_record()
    rows = cli._bench_rows(rec, epilogue=True)
    assert rows[0][:3] == ["cublas", "4096x4096x4096", "plain"]
    assert rows[2][:3] == ["v4_swizzle_pipeline", "4096x4096x4096", "bias+gelu_tanh"]
    assert rows[1][2] == "bias+gelu_tanh" and rows[1][-1].startswith("skipped: v0_naive does not fuse")
    assert rows[5][-1].endswith("(unfused bound)")
    assert len(cli._bench_rows(rec)[0]) == 8, "without the column: the table tune prints"


# ---- on a GPU --------------------------------------------------------------------------------------
def _fused_baseline(name):
    st = stages.get(name)
    ok, why = st.runnable()
    if not ok:
        pytest.skip(f"{name}: {why}")
    return st


@pytest.mark.gpu
@pytest.mark.parametrize("name", FUSED)
def test_each_baseline_matches_the_fused_reference(name):
    st = _fused_baseline(name)
    cp = gpu.cupy()
    m, n, k = 256, 512, 128
    spec = bench.parse_epilogue("bias+gelu_tanh")
    a, b = verify.random_operands(m, n, k, 11, cp)
    bias = bench.random_bias(n, 12, cp)
    buf, out = verify.guarded_output(m, n, cp)
    res = st.gemm(a, b, out, **spec.kwargs(bias))
    cp.cuda.get_current_stream().synchronize()
    assert res.data.ptr == out.data.ptr
    chk = bench.judge(st, spec, m, n, k, a, b, bias, out, buf)  # the bench's own judge, as `bench` runs it
    assert chk.passed, chk.reason


@pytest.mark.gpu
@pytest.mark.parametrize("name", TORCH)
def test_torch_writes_into_the_given_out_on_cupys_stream(name):
    st = _fused_baseline(name)
    cp = gpu.cupy()
    m, n, k = 256, 512, 128
    a, b = verify.random_operands(m, n, k, 13, cp)
    bias = bench.random_bias(n, 14, cp)
    out = cp.full((m, n), cp.nan, dtype=cp.float16)
    ptr = out.data.ptr
    cp.cuda.Device().synchronize()  # the inputs are ready before a non-blocking stream reads them
    with cp.cuda.Stream(non_blocking=True) as stream:
        run = st.prepare(a, b, out, bias=bias, activation="gelu_tanh")
        assert run.out is out and run().data.ptr == ptr
        stream.synchronize()
    assert out.data.ptr == ptr and not bool(cp.isnan(out).any()), "every element written, in place"
    used = {key: s.cuda_stream for key, s in st._stream._streams.items()}
    assert used.get((stream.ptr, cp.cuda.Device().id)) == stream.ptr, f"torch ran on {used}, not CuPy's stream"


@pytest.mark.gpu
def test_the_cupy_epilogue_applies_every_activation():
    st = _fused_baseline("cublas_cupy_epilogue")
    cp = gpu.cupy()
    m, n, k = 128, 256, 512
    a, b = verify.random_operands(m, n, k, 15, cp)
    bias32 = bench.random_bias(n, 16, cp).astype(cp.float32)
    for act in contract.ACTIVATIONS:
        for bias in (None, bias32):
            out = st.gemm(a, b, bias=bias, alpha=0.5, activation=act)
            cp.cuda.get_current_stream().synchronize()
            ref, mag = bench.fused_reference(a, b, cp, Epilogue(bias, 0.5, act), True)
            chk = verify.judge_output(verify.Check(st.name, m, n, k, 15), out, ref, mag, cp)
            assert chk.passed, f"{act}, bias {None if bias is None else bias.dtype}: {chk.reason}"


@pytest.mark.gpu
def test_the_clean_flush_reads_and_the_default_one_writes():
    """timing.L2Flusher: the bench's flush overwrites its buffer (a new value every call), the
    clean one (lever_probe's "clean" section) only reads it, so it leaves no dirty line."""
    from stages.core import gpu
    from stages.tools.timing import L2Flusher

    cp = gpu.cupy()
    fill, clean = L2Flusher(1 << 20), L2Flusher(1 << 20, clean=True)
    for _ in range(2):
        fill()
        clean()
    cp.cuda.get_current_stream().synchronize()
    assert int(fill._buf[0]) == 2 and int(fill._buf[-1]) == 2
    assert int(cp.count_nonzero(clean._buf)) == 0 and int(clean._sink) == 0


@pytest.mark.gpu
def test_a_queue_hold_keeps_the_host_out_of_the_kernel_time():
    """timing.QueueHold: a call whose path takes 20 ms of host time before it launches a small
    kernel is timed at about the host's 20 ms by bare events, and at the kernel's GPU time when a
    30 ms hold is queued ahead of each start event (the overhead table's kernel column).

    The margins are wide because another process on the GPU can delay the start event's
    timestamp by its time slice: with 3 ms and a 2.5 ms floor, a run beside six other GPU
    processes on the H200 read 2.44 ms (final_device.sh owed35b)."""
    import time

    from stages.core import gpu
    from stages.tools.timing import QueueHold, time_gpu

    cp = gpu.cupy()
    x = cp.ones(1 << 20, cp.float32)

    def slow_call():
        time.sleep(0.020)
        x.__iadd__(1.0)  # an elementwise kernel of a few µs

    bare = time_gpu(slow_call, reps=5, warmup=1).median
    held = time_gpu(slow_call, reps=5, warmup=1, flush=QueueHold(30_000)).median
    assert bare >= 10.0, f"bare events: {bare:.3f} ms (the host's 20 ms should be in it)"
    assert held < 0.5, f"behind the hold: {held:.3f} ms (the kernel alone should be)"
    assert float(x[0]) == 1.0 + 12  # every call ran: twice 1 warm-up and 5 timed


def test_a_shapes_calls_are_timed_in_turn_in_one_round_robin(fake_gpu):
    """run_bench prepares every call of a shape first, then times all of them in one `_time` call
    (in turn, `timing.time_interleaved`), in the plan's order less the skipped ones; the record
    says so."""
    fused = _FakeStage("vF_fused", ["bias", "activation"])
    rec = bench.run_bench([_FakeStage("vP_plain"), fused], shapes=[(64, 32, 16), (8, 8, 8)], reps=3, warmup=1,
                          progress=False, epilogues=["gelu_tanh+bias"])
    one = [("cublas", ""), ("vF_fused", "bias+gelu_tanh"), ("cublas_cupy_epilogue", "bias+gelu_tanh")]
    assert fake_gpu.timed == [one, one], "per shape, one round robin of every call that runs"
    assert rec["settings"]["order"] == "interleaved"


def test_only_passing_calls_timed_in_turn_get_a_ratio(fake_gpu, monkeypatch):
    """A call whose output failed the judge keeps its time but gets no % of peak and no ratio to
    cuBLAS; one timed alone (`order: alone`, `_time`'s fallback) gets no ratio either."""
    def judged(p, m, n, k, a, b, bias, t, reps):
        entry = {**bench._named(p.st, m, n, k, p.spec), "ms_median": 1.0, "ms_p20": 0.9, "ms_p80": 1.1,
                 "reps": reps, "tflops": 500.0, "rel_err": 2e-4, "bound_ratio": 0.5, "verified": True,
                 "status": "ok", "reason": ""}
        if p.st.name == "vBad":
            entry.update(verified=False, status="failed", reason="an element is 3.0x over its error bound")
        if p.st.name == "vAlone":
            entry["order"] = "alone"
        return entry

    monkeypatch.setattr(bench, "_judged", judged)
    rec = bench.run_bench([_FakeStage("vBad"), _FakeStage("vAlone"), _FakeStage("vOk")], shapes=[(64, 32, 16)],
                          reps=3, warmup=1, progress=False)
    by = {e["stage"]: e for e in rec["results"]}
    assert by["vOk"]["ratio_cublas"] == 1.0 and by["vOk"]["pct_peak"] > 0
    assert "ratio_cublas" not in by["vBad"] and "pct_peak" not in by["vBad"] and by["vBad"]["tflops"] == 500.0
    assert by["vAlone"]["ratio_cublas"] is None


def test_a_call_that_fails_in_the_round_robin_fails_alone(monkeypatch):
    """`_time`: where the round robin raises, each call is run alone, so that the failure is
    recorded against the call that raised; the others are then timed in turn again (1.0 here, the
    round robin's figure, not the alone one's 2.0). Where that raises too, their alone timings
    stand, marked `order: alone`, and get no ratio to cuBLAS (a reviewer's simulation: the record
    said interleaved for calls timed one after another)."""
    def boom():
        raise RuntimeError("cudaErrorIllegalAddress (test)")

    flaky = {"left": 0}

    def interleaved(runs, reps, warmup, flush):
        for r in runs:
            r()
        if flaky["left"]:
            flaky["left"] -= 1
            raise RuntimeError("flaky (test)")
        return [bench.Timing([1.0] * reps) for _ in runs]

    def alone(run, reps, warmup, flush):
        run()
        return bench.Timing([2.0] * reps)

    monkeypatch.setattr(bench, "time_interleaved", interleaved)
    monkeypatch.setattr(bench, "time_gpu", alone)
    ok = bench._Prepared(None, bench.PLAIN_SPEC, lambda: None, None, None)
    bad = bench._Prepared(None, bench.PLAIN_SPEC, boom, None, None)
    got = bench._time([ok, bad, ok], reps=3, warmup=1, flush=None)
    assert [(t.median, t.order) if isinstance(t, bench.Timing) else str(t) for t in got] == \
        [(1.0, "interleaved"), "cudaErrorIllegalAddress (test)", (1.0, "interleaved")]
    assert [t.median for t in bench._time([ok, ok], reps=3, warmup=1, flush=None)] == [1.0, 1.0]
    flaky["left"] = 2  # the round robin raises twice, though no call fails alone
    got = bench._time([ok, ok], reps=3, warmup=1, flush=None)
    assert [(t.median, t.order) for t in got] == [(2.0, "alone"), (2.0, "alone")]


def test_time_interleaved_rotates_the_first_call_and_times_each_call_alone(monkeypatch):
    """timing.time_interleaved with a stand-in clock: every launch advances it by its call's own
    duration (and every flush by 100), so each sample must be that call's duration exactly; the
    launch order must be round i starting at call i % n; warm-ups come first, untimed."""
    from stages.tools import timing

    clock = [0.0]
    order = []

    class _Event:
        def record(self):
            self.t = clock[0]

        def synchronize(self):
            pass

    class _CP:
        class cuda:
            Event = _Event

            @staticmethod
            def get_elapsed_time(s, e):
                return e.t - s.t

    monkeypatch.setattr(gpu, "cupy", lambda: _CP())

    def call(name, us):
        def run():
            order.append(name)
            clock[0] += us
        return run

    def flush():
        clock[0] += 100.0

    got = timing.time_interleaved([call("a", 1.0), call("b", 2.0), call("c", 3.0)], reps=4, warmup=2, flush=flush)
    assert [t.ms for t in got] == [[1.0] * 4, [2.0] * 4, [3.0] * 4]
    assert order == ["a", "a", "b", "b", "c", "c",                       # the warm-ups
                     "a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]  # rounds 0-3
    order.clear()
    alone = timing.time_gpu(call("d", 4.0), reps=3, warmup=2, flush=flush)  # one run: the same loop
    assert alone.ms == [4.0] * 3 and order == ["d"] * 5
