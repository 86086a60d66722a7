"""The stress run (issue 14, stages/tools/stress.py): what can be checked without a GPU is checked
here in CI (the shape generator, every hostile call refused by the contract before any launch,
the special-value judge, the record's schema, the sanitizer summary parser, the command's skip),
and one quick stress of a stage where there is a GPU."""
from __future__ import annotations

import dataclasses
import importlib.util
from itertools import count

import numpy as np
import pytest

import stages
from stages.core import contract, gpu
from stages.core.contract import Constraints
from stages.tools import records, stress
from test_contract import FakeDeviceArray  # the contract tests' stand-in for a device array

SYNTHETIC = [Constraints(), Constraints(k_multiple=8), Constraints(m_multiple=64, n_multiple=1, k_multiple=16),
             Constraints(m_multiple=128, n_multiple=256, k_multiple=64), Constraints(m_multiple=4096),
             Constraints(m_multiple=3, n_multiple=5, k_multiple=7)]
ALL_CONSTRAINTS = [stages.get(n).constraints for n in stages.names()] + SYNTHETIC


def _id(c):
    return f"{c.m_multiple}x{c.n_multiple}x{c.k_multiple}"


# ---- the shape generator ---------------------------------------------------------------------------
@pytest.mark.parametrize("cons", ALL_CONSTRAINTS, ids=_id)
@pytest.mark.parametrize("n", [1, 7, 20, 1000])
def test_shapes_count_constraints_sizes_and_work(cons, n):
    shapes = stress.random_shapes(cons, n, np.random.default_rng(3))
    assert len(shapes) == n
    for m, nn, k in shapes:
        assert all(isinstance(d, int) and 1 <= d <= stress.MAX_DIM for d in (m, nn, k)), (m, nn, k)
        assert cons.supports(m, nn, k), ((m, nn, k), cons)
        assert m * nn * k <= stress.SHAPE_MAX_MACS
    assert sum(m * nn * k for m, nn, k in shapes) <= n * stress.MACS_PER_SHAPE


@pytest.mark.parametrize("cons", ALL_CONSTRAINTS, ids=_id)
def test_shapes_have_odd_sizes_tails_tiny_and_large_ones(cons):
    shapes = stress.random_shapes(cons, 1000, np.random.default_rng(11))
    units = (cons.m_multiple, cons.n_multiple, cons.k_multiple)
    for i, u in enumerate(units):
        dims = [s[i] for s in shapes]
        tiles = [d // u for d in dims]
        assert sum(t % 2 for t in tiles) > len(dims) / 3, f"dimension {i}: odd sizes (odd tile counts) favoured"
        assert min(dims) == u, f"dimension {i}: the smallest size the stage takes appears"
        if u == 1:
            assert sum(map(stress.is_tail, dims)) >= 50, f"dimension {i}: tails (multiples of 16..256 +-1..3)"
            assert sum(d <= 3 for d in dims) >= 10, f"dimension {i}: tiny sizes"
        if u <= 1024:
            assert max(dims) > 2048, f"dimension {i}: large sizes"
            assert max(dims) == stress.MAX_DIM // u * u, f"dimension {i}: the largest size there is"
    assert any(all(d >= min(1024, stress.MAX_DIM // u * u) for d, u in zip(s, units)) for s in shapes), \
        "a shape large in every dimension"


def test_shapes_are_a_pure_function_of_the_seed():
    cons = stages.get(stages.names()[0]).constraints
    one = stress.random_shapes(cons, 300, np.random.default_rng(5))
    assert one == stress.random_shapes(cons, 300, np.random.default_rng(5))
    assert one != stress.random_shapes(cons, 300, np.random.default_rng(6))


def test_the_work_budget_is_a_hard_bound():
    cons = Constraints()
    shapes = stress.random_shapes(cons, 200, np.random.default_rng(1), max_total_macs=200 * 5000)
    assert sum(m * n * k for m, n, k in shapes) <= 200 * 5000
    shapes = stress.random_shapes(cons, 50, np.random.default_rng(1), max_shape_macs=2**20)
    assert max(m * n * k for m, n, k in shapes) <= 2**20
    with pytest.raises(ValueError, match="no size in 1..4096"):
        stress.random_shapes(Constraints(m_multiple=8192), 10, np.random.default_rng(1))
    with pytest.raises(ValueError, match="do not fit"):
        stress.random_shapes(Constraints(m_multiple=128, n_multiple=128, k_multiple=64), 10,
                             np.random.default_rng(1), max_total_macs=1000)


def test_tails_are_what_they_say():
    assert stress.is_tail(129) and stress.is_tail(127) and stress.is_tail(259) and stress.is_tail(61)
    assert not stress.is_tail(128) and not stress.is_tail(100) and not stress.is_tail(3)


def test_every_epilogue_combination_is_cycled():
    combos = stress.epilogue_combos(frozenset(contract.EPILOGUE_FEATURES))
    assert {c["activation"] for c in combos} == {None, *contract.ACTIVATIONS}
    assert {c["bias"] for c in combos} == {None, "float16", "float32"}
    assert len({c["alpha"] for c in combos}) == 3
    assert stress.epilogue_combos(frozenset()) == [{"activation": None, "bias": None, "alpha": 1.0}]
    # section_random_shapes pairs shape i with scale i % 3 and combination (i // 3) % len: within
    # 3 * len(combos) shapes every combination meets every scale
    seen = {(i % 3, (i // 3) % len(combos)) for i in range(3 * len(combos))}
    assert len(seen) == 3 * len(combos)


def test_scales_stay_within_fp16():
    for k in (1, 64, 4096):
        sa, sb = stress.scales_for("large", k)
        assert sa * sb * np.sqrt(k) * 6 * 2 < 65504, "six sigma of the result, times alpha up to 2"
    assert stress.scales_for("1e-3", 100) == (1e-3, 1.0)


# ---- hostile calls, without a GPU ------------------------------------------------------------------
_HAS_CUPY = importlib.util.find_spec("cupy") is not None


class FakeMaker:
    """The hostile table's maker with stand-ins for device arrays (test_contract's FakeDeviceArray)."""

    def __init__(self, constraints):
        self.units = stress._units(constraints)
        self.shape = stress.hostile_shape(constraints)
        m, n, k = self.shape
        self.a_shape, self.b_shape, self.out_shape = (m, k), (n, k), (m, n)
        self.misalign = stress.misalign_bytes(constraints)
        self._ptr = count(1 << 20, 1 << 16)  # every array its own 64 KiB, 16-byte aligned
        self.a, self.b = self.array(self.a_shape), self.array(self.b_shape)

    def _fake(self, arr, ptr=None, device=0):
        return FakeDeviceArray(arr, ptr=next(self._ptr) if ptr is None else ptr, device=device)

    def array(self, shape, dtype="float16"):
        return self._fake(np.zeros(shape, dtype=dtype))

    def fortran(self, shape):
        return self._fake(np.zeros(shape, dtype=np.float16, order="F"))

    def strided(self, shape):
        return self._fake(np.zeros((shape[0], 2 * shape[1]), dtype=np.float16)[:, ::2])

    def transposed(self, shape):
        return self._fake(np.zeros((shape[1], shape[0]), dtype=np.float16).T)

    def offset(self, shape, nbytes, dtype="float16"):
        return self._fake(np.zeros(shape, dtype=dtype), ptr=next(self._ptr) + nbytes)

    def overlapping(self, shape1, shape2):
        ptr = next(self._ptr)
        return self._fake(np.zeros(shape1, np.float16), ptr), self._fake(np.zeros(shape2, np.float16), ptr)

    def host(self, shape, dtype="float16"):
        return np.zeros(shape, dtype=dtype)

    def other_device(self, shape):
        return self._fake(np.zeros(shape, np.float16), device=1)

    def huge(self, shape):
        arr = self._fake(np.zeros((1, shape[1]), np.float16))
        arr.shape = shape
        return arr


class ReachedTheKernel(Exception):
    """Raised where a call that passed the contract would compile and launch."""


@pytest.fixture
def contract_only(monkeypatch):
    """stage -> call(a, b, out, **epilogue) through the stage's own `prepare`, with the GPU stood in
    for: a fake device 0, stand-in arrays taken as device arrays, anything else (numpy arrays,
    lists) through the real check; a call that gets past the contract raises ReachedTheKernel."""
    real = contract.as_device_array
    monkeypatch.setattr(contract, "as_device_array",
                        lambda x, name: x if isinstance(x, FakeDeviceArray) else real(x, name))
    monkeypatch.setattr(gpu, "current_device_id", lambda: 0)
    dev0 = dataclasses.replace(gpu.REFERENCE_DEVICE, id=0)

    def make(st):
        copy = st.variant()
        monkeypatch.setattr(copy, "_device", lambda: dev0)

        def reached(*_args, **_kw):
            raise ReachedTheKernel("the contract let the call through")

        monkeypatch.setattr(copy, "_function", reached)
        return lambda a, b, out=None, **kw: copy.prepare(a, b, out, **kw)

    return make


def _fused(name):
    return dataclasses.replace(stages.get(name), epilogue=frozenset(contract.EPILOGUE_FEATURES))


HOSTILE_STAGES = [stages.get(n) for n in stages.names()] + [_fused(stages.names()[0])]


def test_the_hostile_table():
    rows = stress.hostile_table()
    names = [r.name for r in rows]
    assert len(rows) >= 20 and len(set(names)) == len(names)
    assert all(r.expected in (TypeError, ValueError) for r in rows)
    for st in HOSTILE_STAGES:
        assert sum(r.applies(st) for r in rows) >= 20, st.name


@pytest.mark.parametrize("st", HOSTILE_STAGES, ids=lambda st: st.name + ("+epilogue" if st.epilogue else ""))
def test_every_hostile_call_is_refused_by_the_contract(st, contract_only):
    call = contract_only(st)
    mk = FakeMaker(st.constraints)
    ran = 0
    for row in stress.hostile_table():
        if not row.applies(st):
            continue
        if not _HAS_CUPY and any(not isinstance(x, (FakeDeviceArray, str, float, int, complex, type(None)))
                                 for x in row.build(mk).values()):
            continue  # host objects go through the real check, which imports CuPy
        res = stress.try_hostile(row, call, mk, default_out=mk.array(mk.out_shape))
        assert res["status"] == "ok", res
        ran += 1
    assert ran >= (20 if _HAS_CUPY else 15)


def test_the_stand_in_path_lets_a_good_call_through(contract_only):
    """The hostile test means something only if a right call would get past the contract."""
    for st in HOSTILE_STAGES:
        mk = FakeMaker(st.constraints)
        with pytest.raises(ReachedTheKernel):
            contract_only(st)(mk.a, mk.b, mk.array(mk.out_shape))
        if st.epilogue:
            with pytest.raises(ReachedTheKernel):
                contract_only(st)(mk.a, mk.b, mk.array(mk.out_shape), bias=mk.array((mk.shape[1],), "float32"),
                                  alpha=0.5, activation="silu")


def test_a_wrong_exception_or_none_fails_the_row():
    mk = FakeMaker(Constraints())
    row = stress.Hostile("x", ValueError, r"must", lambda mk: {})
    assert stress.try_hostile(row, lambda *a, **k: None, mk)["ok"] is False
    assert stress.try_hostile(row, lambda *a, **k: (_ for _ in ()).throw(TypeError("must")), mk)["ok"] is False
    assert stress.try_hostile(row, lambda *a, **k: (_ for _ in ()).throw(ValueError("other")), mk)["ok"] is False
    assert stress.try_hostile(row, lambda *a, **k: (_ for _ in ()).throw(ValueError("must")), mk)["ok"] is True
    skip = stress.Hostile("y", ValueError, r"", lambda mk: (_ for _ in ()).throw(stress.Skip("no second GPU")))
    assert stress.try_hostile(skip, lambda *a, **k: None, mk)["status"] == "skipped"


# ---- special values, judged on the host ---------------------------------------------------------------
def _as_cublas(ref):
    """What a right fp16 GEMM returns for a float64 result: rounded, overflow to inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        return ref.astype(np.float16)


def test_special_value_inputs_have_their_specials():
    m, n, k = 67, 45, 129
    cases = dict((name, (a, b)) for name, a, b in stress.value_inputs(m, n, k, np.random.default_rng(0)))
    assert len(cases) >= 8
    ref, _ = stress.ieee_reference(*cases["nan in a"])
    assert np.isnan(ref).any(axis=1).sum() == 1 and np.isnan(ref).all(axis=1).sum() == 1
    ref, _ = stress.ieee_reference(*cases["inf - inf in one dot product"])
    assert np.isnan(ref).all(axis=1).sum() == 1
    ref, _ = stress.ieee_reference(*cases["inf * 0"])
    assert np.isnan(ref).sum() == 1 and np.isinf(ref).sum() == n - 1
    ref, _ = stress.ieee_reference(*cases["+inf in b"])
    assert np.isinf(ref).all(axis=0).sum() == 1
    ref, _ = stress.ieee_reference(*cases["results past fp16's range (overflow)"])
    assert (np.abs(ref) > 65520).mean() > 0.5
    a, _ = cases["subnormal a (|a| ~ 2^-20)"]
    assert ((np.abs(a) < 2.0**-14) & (a != 0)).mean() > 0.9, "fp16 subnormals"


@pytest.mark.parametrize("case", range(len(stress.value_inputs(67, 45, 129, np.random.default_rng(1)))))
def test_a_right_result_has_no_failures_and_no_differences(case):
    """Every special-value case (as many as value_inputs makes: a case added there is tested here)."""
    name, a, b = stress.value_inputs(67, 45, 129, np.random.default_rng(1))[case]
    ref, mag = stress.ieee_reference(a, b)
    right = _as_cublas(ref)
    row = stress.compare_values(name, right, right, ref, mag)
    assert not row["failures"] and not row["differences"], row


def test_wrong_special_values_are_caught():
    name, a, b = stress.value_inputs(67, 45, 129, np.random.default_rng(2))[0]  # nan in a
    ref, mag = stress.ieee_reference(a, b)
    cublas = _as_cublas(ref)
    hid = cublas.copy()
    hid[np.isnan(hid)] = 0  # a stage that hides a NaN behind a finite value
    assert any("finite values where IEEE gives nan" in f for f in stress.compare_values(name, hid, cublas, ref, mag)["failures"])
    off = cublas.copy()
    i, j = np.argwhere(np.isfinite(ref))[0]
    off[i, j] = off[i, j] + np.float16(1.0) + abs(off[i, j])  # a finite wrong value
    assert any("outside the error bound" in f for f in stress.compare_values(name, off, cublas, ref, mag)["failures"])
    inf = cublas.copy()
    inf[i, j] = np.inf  # inf where the result is finite (and cuBLAS says so)
    assert any("+inf where the result is finite" in f for f in stress.compare_values(name, inf, cublas, ref, mag)["failures"])

    name, a, b = stress.value_inputs(67, 45, 129, np.random.default_rng(2))[5]  # overflow
    ref, mag = stress.ieee_reference(a, b)
    cublas = _as_cublas(ref)
    sat = cublas.copy()
    sat[np.isposinf(sat)] = 65504  # saturating where cuBLAS gives inf: a finite wrong value
    assert any("finite values where IEEE gives +inf" in f
               for f in stress.compare_values(name, sat, cublas, ref, mag)["failures"])
    nan = cublas.copy()
    nan[np.isposinf(nan)] = np.nan  # nan instead of inf: a difference, stated, not a failure
    row = stress.compare_values(name, nan, cublas, ref, mag)
    assert not row["failures"] and any("stage gives nan where cuBLAS gives +inf" in d for d in row["differences"])
    row = stress.compare_values(name, sat, sat, ref, mag)  # both saturate: stated, not failed
    assert not row["failures"] and any("both give finite where IEEE float64 gives +inf" in d for d in row["differences"])


# ---- the record, the sanitizer output, the command -----------------------------------------------------
def _entry(**over):
    e = {"stage": "vX_test", "status": "ok", "reason": "", "shapes_tried": 1000, "failures": 0,
         "failure_examples": [], "memcheck_errors": 0, "racecheck_hazards": 0, "synccheck_errors": 0,
         "repeat_bitwise_ok": True, "concurrency_ok": True, "hostile_calls": 36, "hostile_ok": True,
         "values_differences": [], "leak_bounds": {"ok": True}, "fault_detected": True, "seconds": 12.5}
    e.update(over)
    return e


def test_a_stress_record_is_validated():
    rec = records.new_record("stress", settings={"shapes_per_stage": 1000})
    rec["results"] = [_entry(), {"stage": "vY_test", "status": "skipped", "reason": "needs sm_90a"}]
    assert records.validate(rec) == []
    for field in records._OK_FIELDS[("stress", "results")]:
        bad = _entry()
        del bad[field]
        rec["results"] = [bad]
        assert any(field in p for p in records.validate(rec)), field
    rec["results"] = [_entry(status="failed", reason="")]
    assert records.validate(rec), "a failed entry says why"


def test_finish_turns_any_finding_into_a_failed_entry():
    assert stress._finish(_entry())["status"] == "ok"
    for over in ({"random_failures": 2}, {"memcheck_errors": 1}, {"racecheck_hazards": 3}, {"synccheck_errors": 1},
                 {"repeat_bitwise_ok": False}, {"concurrency_ok": False}, {"hostile_ok": False},
                 {"leak_bounds": {"ok": False, "checks": {"tensor maps <= 256": False}}}, {"fault_detected": False},
                 {"section_errors": ["values: RuntimeError: boom"]}, {"sanitizer_problems": ["memcheck: timed out"]}):
        e = stress._finish(_entry(**over))
        assert e["status"] == "failed" and e["reason"], over
    none = stress._finish(_entry(memcheck_errors=None, racecheck_hazards=None, synccheck_errors=None))
    assert none["status"] == "ok", "sanitizers not run: null counts, not a finding"


MEMCHECK_CLEAN = """========= COMPUTE-SANITIZER
v1 128x128x16: ok
========= ERROR SUMMARY: 0 errors
"""
MEMCHECK_DIRTY = """========= Invalid __global__ read of size 16 bytes
=========     at gemm+0x1f0
========= ERROR SUMMARY: 3 errors
"""
RACECHECK_CLEAN = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
RACECHECK_DIRTY = ("========= Error: Race reported between Write access at store_tile+0x10\n"
                   "========= RACECHECK SUMMARY: 12 hazards displayed (8 errors, 4 warnings)\n")


def test_the_sanitizer_summary_parser():
    assert stress.parse_sanitizer_summary("memcheck", MEMCHECK_CLEAN) == 0
    assert stress.parse_sanitizer_summary("memcheck", MEMCHECK_DIRTY) == 3
    assert stress.parse_sanitizer_summary("synccheck", "========= ERROR SUMMARY: 1 error\n") == 1
    assert stress.parse_sanitizer_summary("racecheck", RACECHECK_CLEAN) == 0
    assert stress.parse_sanitizer_summary("racecheck", RACECHECK_DIRTY) == 12
    assert stress.parse_sanitizer_summary("racecheck", "========= ERROR SUMMARY: 2 errors\n") == 2
    for tool in stress.SANITIZER_TOOLS:
        assert stress.parse_sanitizer_summary(tool, "Traceback (most recent call last):\n  killed\n") is None
        assert stress.parse_sanitizer_summary(tool, "") is None


def test_sanitizer_commands_and_shapes():
    for name in stages.names():
        st = stages.get(name)
        shapes = stress.sanitizer_shapes(st.constraints)
        assert len(shapes) == 3 and all(st.constraints.supports(*s) for s in shapes)
        assert any(any(d % 2 for d in s) or any((d // u) % 2 for d, u in zip(s, stress._units(st.constraints)))
                   for s in shapes), "an odd shape (odd sizes, or odd tile counts)"
        cmd = stress.sanitizer_command("/cs", "memcheck", name, shapes, True)
        assert cmd[:5] == ["/cs", "--tool", "memcheck", "--report-api-errors", "no"]
        assert str(stress.PROBE_SCRIPT) in cmd and name in cmd and cmd.count("--shape") == 3
    cmd = stress.sanitizer_command("/cs", "racecheck", "x[BREAK_SYNC=1]", [(1, 2, 3)], False)
    assert cmd[-5:] == ["--child", "probe", "x[BREAK_SYNC=1]", "--shape", "1x2x3"]


def test_exercises_come_from_the_stages_own_defines():
    for name in stages.names():
        st = stages.get(name)
        ex = stress.exercises_of(st)
        breaks = {d for d in st.defines if d.startswith("BREAK_")} - {"BREAK_FENCE"}
        assert {d for o, *_ in ex for d in o if d.startswith("BREAK_")} == breaks
        for overrides, repeat, must, _ in ex:
            st.variant(**overrides)  # every exercise is a configuration the stage builds
            assert repeat >= 1 and isinstance(must, bool)
    fake = dataclasses.replace(stages.get(stages.names()[0]))
    fake.defines = {"BREAK_WAIT": 0, "STAGES": 3, "BREAK_NEW": 0, "BREAK_FENCE": 0}
    ex = {tuple(sorted(o.items())): must for o, _, must, _ in stress.exercises_of(fake)}
    assert ex == {(("BREAK_WAIT", 1), ("STAGES", 2)): True, (("BREAK_NEW", 1),): False}


def _canned(outputs):
    """A stand-in for run_child: the output of the first pattern found in the command."""
    def run(cmd, timeout_s, env):
        text = " ".join(cmd)
        for pattern, out in outputs.items():
            if all(part in text for part in (pattern if isinstance(pattern, tuple) else (pattern,))):
                return {"rc": 0, "output": out, "seconds": 0.1, "timed_out": False}
        return {"rc": 1, "output": "", "seconds": 0.1, "timed_out": False}
    return run


def _probe_line(name, expected, detected):
    return stress.PROBE_TAG + f'{{"probe": "{name}", "expected": {str(expected).lower()}, ' \
        f'"detected": {str(detected).lower()}, "detail": ""}}\n'


def _background(monkeypatch, st, outputs):
    monkeypatch.setattr(stress, "run_child", _canned(outputs))
    jobs = stress._Jobs(2, None, {}, progress=False)
    stress._submit_background(jobs, st, "/cs", True, False, {"sanitizer": 60, "child": 60})
    entry = stress._empty_entry(st)
    try:
        stress._merge_background(entry, jobs.results(st.name), True, "/cs")
    finally:
        jobs.close()
    return stress._finish(entry)


def test_background_jobs_land_in_the_entry(monkeypatch):
    st = next(stages.get(n) for n in stages.names() if "BREAK_SYNC" in stages.get(n).defines)
    shapes = "".join(f"{st.name} {'x'.join(map(str, s))}: ok\n" for s in stress.sanitizer_shapes(st.constraints))
    clean = {"--tool memcheck": shapes + "========= ERROR SUMMARY: 0 errors\n",
             ("--tool racecheck", str(stress.PROBE_SCRIPT)): shapes + RACECHECK_CLEAN,
             "--tool racecheck": f"{st.name}[BREAK_SYNC=1] 256x256x64: FAIL\n" + RACECHECK_DIRTY,
             "--tool synccheck": shapes + "========= ERROR SUMMARY: 0 errors\n",
             "--child fault": _probe_line("launch", True, True) + _probe_line("BREAK_SYNC=1", True, True),
             "--child illegal": _probe_line("unmapped", True, True)}
    e = _background(monkeypatch, st, clean)
    assert e["status"] == "ok", e["reason"]
    assert (e["memcheck_errors"], e["racecheck_hazards"], e["synccheck_errors"]) == (0, 0, 0)
    assert e["fault_detected"] is True
    assert any(p["probe"].startswith("racecheck over") and p["detected"] for p in e["fault_probes"])

    missed = dict(clean, **{"--child fault": _probe_line("launch", True, True) + _probe_line("BREAK_SYNC=1", True, False)})
    e = _background(monkeypatch, st, missed)
    assert e["fault_detected"] is False and "BREAK_SYNC=1" in e["reason"]

    crashed = dict(clean, **{"--tool synccheck": "Segmentation fault\n"})
    e = _background(monkeypatch, st, crashed)
    assert e["synccheck_errors"] is None and e["status"] == "failed" and "synccheck: no summary" in e["reason"]

    found = dict(clean, **{"--tool memcheck": shapes + MEMCHECK_DIRTY})
    e = _background(monkeypatch, st, found)
    assert e["memcheck_errors"] == 3 and "memcheck_errors=3" in e["reason"]

    hung = dict(clean)
    del hung["--child illegal"]
    e = _background(monkeypatch, st, hung)
    assert e["fault_detected"] is False, "a child that reported nothing is not a detection"


def test_probe_lines_are_parsed():
    text = "noise\n" + stress.PROBE_TAG + '{"probe": "p", "expected": true, "detected": true, "detail": ""}\n' \
        + stress.PROBE_TAG + "{broken\n"
    assert stress.parse_probes(text) == [{"probe": "p", "expected": True, "detected": True, "detail": ""}]


def test_without_a_gpu_the_command_skips_in_one_line_and_writes_nothing(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    monkeypatch.setattr(records, "write", lambda *a, **k: pytest.fail("no record without a GPU"))
    assert stress.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"GPU stages skipped ({', '.join(stages.names())}): no NVIDIA driver on this machine (test)")
    assert "nothing was measured: no record written" in out and "Traceback" not in out
    rec = stress.run_stress(progress=False)
    assert [e["status"] for e in rec["results"]] == ["skipped"] * len(stages.names())
    assert not records.measured(rec) and records.validate(rec) == []


def test_the_command_refuses_what_it_cannot_stress(capsys):
    assert stress.main(["cublas"]) == 2
    assert "stress runs the GPU stages" in capsys.readouterr().err
    assert stress.main(["no_such_stage"]) == 2


# ---- on a GPU ------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_quick_stress_of_one_stage(runnable, tmp_path):
    st = runnable("v1_tiled")
    rec = stress.run_stress([st.name], shapes_per_stage=20, seed=1, sanitizers=False, leak_calls=100, progress=False)
    (e,) = rec["results"]
    assert e["status"] == "ok", e["reason"]
    assert e["shapes_tried"] == 20 and e["failures"] == 0 and e["random_shapes"]["tried"] == 20
    assert e["repeat_bitwise_ok"] is True and all(r["mismatching_calls"] == 0 for r in e["repeat"])
    assert e["concurrency_ok"] is True
    assert set(e["concurrency"]) == {"two_streams", "current_stream", "two_threads"}
    assert e["concurrency"]["current_stream"]["output_untouched_until_graph_launch"] is True
    assert e["values"]["cases"] and not e["values_failures"]
    assert e["hostile_ok"] is True and e["hostile_calls"] >= 20
    assert e["leak_bounds"]["ok"] is True and e["leak_bounds"]["calls"] == 100
    assert e["fault_detected"] is True
    assert any("one row down" in p["probe"] and p["detected"] for p in e["fault_probes"])
    assert any("unmapped" in p["probe"] and p["detected"] for p in e["fault_probes"])
    assert any("BREAK_SYNC" in p["probe"] for p in e["fault_probes"])
    assert e["memcheck_errors"] is None and e["sanitizer_note"].startswith("not run")
    assert records.validate(rec) == []
    records.write(rec, tmp_path / "stress.json")


# ---- regressions of faults the H200 stress run (and reading it) found ----------------------------
def test_tensor_map_cache_survives_two_threads_evicting(fake_tma_driver):
    """tma.tensor_map from two host threads with the cache full: a lookup's move_to_end must not
    race the other thread's eviction (KeyError before the cache had a lock). The race is made to
    happen: the cache's `get`, on a hit, starts a second thread that fills the cache past its size
    and waits up to 0.5 s for it. With the lock that thread waits for the lookup to finish; without
    it, it evicts the key and move_to_end raises. A stand-in driver encodes 128 bytes; no GPU needed."""
    import collections
    import ctypes
    import threading
    import types

    buf = ctypes.create_string_buffer(128)
    tma = fake_tma_driver(lambda *a: (0, types.SimpleNamespace(getPtr=lambda: ctypes.addressof(buf))))

    def arr(ptr):
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr, device_id=0), shape=(64, 64),
                                     strides=(128, 2))

    errors, fillers = [], []

    def fill():  # the other thread: enough new maps to evict every entry there is
        try:
            for i in range(tma._MAX_ENTRIES + 1):
                tma.tensor_map(arr(0x900000 + 16 * i), 64, 64)
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    class Racing(collections.OrderedDict):
        armed = False

        def get(self, key, default=None):
            hit = super().get(key, default)
            if hit is not None and self.armed:
                self.armed = False
                fillers.append(threading.Thread(target=fill))
                fillers[-1].start()
                fillers[-1].join(timeout=0.5)  # the lookup's thread lets the other run first
            return hit

    tma._cache = Racing()  # (the fixture puts tma's own cache back)
    tma.tensor_map(arr(0x10000), 64, 64)  # a miss: encoded and kept
    tma._cache.armed = True
    tma.tensor_map(arr(0x10000), 64, 64)  # a hit, and the other thread evicting meanwhile
    for t in fillers:
        t.join()
    assert fillers and not errors, errors[:3]
    assert len(tma._cache) <= tma._MAX_ENTRIES


def test_the_leak_check_accepts_memory_that_drops_and_refuses_growth():
    """A drop of device memory in use during the 10,000 calls is not a leak (v5's first H200 run
    ended 537 KB below its start and was marked failed); growth is."""
    snap = {"device_bytes_in_use": 30_935_040, "pool_bytes": 10**9, "functions": 89, "modules": 96,
            "launch_geometries": 1161, "tensor_maps": 256}
    dropped = dict(snap, device_bytes_in_use=30_397_952)
    assert all(stress.leak_checks(snap, dropped, snap, 4097, 685_740).values())
    grown = dict(snap, device_bytes_in_use=snap["device_bytes_in_use"] + 512)
    assert not stress.leak_checks(snap, grown, snap, 4097, 685_740)["device memory in use back to its level"]
    more = dict(snap, functions=90)
    assert not stress.leak_checks(snap, more, snap, 4097, 685_740)["no function compiled after the warm-up"]
    assert not all(stress.leak_checks(snap, snap, snap, 4098, 685_740).values())


def test_background_jobs_start_after_the_in_process_sections(monkeypatch):
    """Sanitizers beside the random shapes slowed the naive stage 10x (153 of 1,000 shapes in its
    share on the H200): run_stress submits them only after every stage's in-process sections. Two
    stand-in stages, each section and each submission recorded in the order run_stress makes them."""
    import types

    events = []

    def section(name):
        def fn(st, *args):
            events.append(("section", st.name, name))
            return {}
        return fn

    for name in ("random_shapes", "repeat", "concurrency", "values", "hostile", "leaks"):
        monkeypatch.setattr(stress, f"section_{name}", section(name))
    monkeypatch.setattr(stress, "_submit_background", lambda jobs, st, *a: events.append(("submit", st.name)))
    monkeypatch.setattr(stress, "_merge_background", lambda *a: None)
    monkeypatch.setattr(stress.gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(stress.records, "new_record", lambda kind, settings: {"kind": kind, "settings": settings,
                                                                             "results": []})
    fakes = [types.SimpleNamespace(name=f"s{i}", runnable=lambda: (True, "")) for i in (1, 2)]
    stress.run_stress(fakes, shapes_per_stage=1, sanitizers=False, leak_calls=1, progress=False)
    kinds = [e[0] for e in events]
    assert kinds == ["section"] * 12 + ["submit"] * 2, events
