"""Benchmark runs: every requested stage and shape with cuBLAS beside it, one JSON record.

Per shape: fresh N(0, 1) inputs; per stage a checked launch prepared once (so input checks, tensor
maps and module loads stay outside the timed region) and warm-ups; then every stage's launches
timed in turn, one launch of each per round with the L2 flushed before each
(`timing.time_interleaved`: whichever stage is timed first after an idle gap reads slower at
~10 µs kernels, so no stage is timed alone, first or last). Each timed output is then judged by
the one judge (verify.py), guard zones included. cuBLAS is timed in the same rounds, so every
ratio has its yardstick.
The CPU baseline is timed against numpy by cpu_bench.py; the call path's host overhead by
`run_overhead`.

Fused epilogues (`epilogues=["bias+gelu_tanh", ...]`, the CLI's --epilogue): y = act(alpha *
(a @ b.T) + bias) per spec (`parse_epilogue`), with one fresh float16 N(0, 1) bias per shape. Every
stage and baseline whose epilogue covers the spec is timed and judged against the fused float64
reference; the others are recorded as skipped with the reason. Plain cuBLAS is still timed:
a fused entry's ratio_cublas is its TFLOP/s (2*M*N*K flops, the epilogue not counted) over plain
cuBLAS's, timed in the same rounds. The fused-epilogue baselines (torch's F.linear + activation, torch's cuBLASLt
bias+GELU, cuBLAS + a CuPy kernel) join the run on their own when they can run here.
"""
from __future__ import annotations

import secrets
import sys
from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

import stages
from stages.core import contract, gpu

from . import cpu_bench, records, verify
from .records import EPILOGUE_ALPHA, PLAIN_SPEC, PLAIN_WORD, EpilogueSpec, parse_epilogue  # noqa: F401
from .timing import L2Flusher, QueueHold, Timing, host_per_call, tflops, time_gpu, time_interleaved

# Dense fp16/bf16 tensor-core peak with fp32 accumulation, datasheet TFLOP/s (SXM parts).
TENSOR_PEAK_TFLOPS = {"H200": 989.4, "H100 80GB HBM3": 989.4, "H100 SXM": 989.4, "H100 NVL": 835.0,
                      "H100 PCIe": 756.0, "GH200": 989.4, "A100": 312.0, "L40S": 362.1, "L4": 121.0}
FP32_PEAK_TFLOPS = {"H200": 66.9, "H100 80GB HBM3": 66.9, "H100 SXM": 66.9, "A100": 19.5}
HBM_TBPS = {"H200": 4.8, "H100 80GB HBM3": 3.35, "H100 SXM": 3.35, "A100": 2.0}

GPU_DEFAULT_SHAPES = ((4096, 4096, 4096),)
CPU_DEFAULT_SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048))
OVERHEAD_SHAPE = (256, 256, 256)
# the overhead table's kernel µs: each timed launch queued behind a kernel that holds the GPU this
# long (more than any call path takes to enqueue), so that the host's time is not in it
OVERHEAD_HOLD_US = 200.0


def peak_for(gpu_name: str, table=TENSOR_PEAK_TFLOPS) -> float | None:
    """Datasheet peak for a GPU name (longest matching key), or None when unknown."""
    hits = [key for key in table if key in gpu_name]
    return table[max(hits, key=len)] if hits else None


def datasheet(gpu_name: str) -> dict:
    """The three datasheet roofs of a GPU (None where unknown), as the ceilings record stores them."""
    return {"hbm_tbps": peak_for(gpu_name, HBM_TBPS), "fp32_tflops": peak_for(gpu_name, FP32_PEAK_TFLOPS),
            "fp16_tensor_tflops": peak_for(gpu_name)}


# ---- fused epilogues (the spec grammar is records.py's: a record stores the spec) -------------
def fusion_gap(st, spec: EpilogueSpec) -> str:
    """Why `st` does not compute `spec` in one call ("" when it does): a feature missing from its
    `epilogue` set, or a finer rule of a baseline (`epilogue_gap`, e.g. exactly bias+gelu_tanh)."""
    supported = getattr(st, "epilogue", frozenset())
    missing = [f for f in spec.features if f not in supported]
    if missing:
        return (f"does not fuse {' or '.join(missing)} into its epilogue"
                f" (fuses: {', '.join(f for f in contract.EPILOGUE_FEATURES if f in supported) or 'nothing'})")
    gap = getattr(st, "epilogue_gap", None)
    return gap(spec.bias, spec.alpha, spec.activation) if gap else ""


def rounds_before_epilogue(st, spec: EpilogueSpec) -> bool:
    """Does `st` apply part of `spec` in a second kernel, to the GEMM's fp16-rounded result?"""
    fn = getattr(st, "rounds_before_epilogue", None)
    return bool(fn and not spec.plain and fn(spec.bias, spec.alpha, spec.activation))


INTERMEDIATE_NOTE = "bound + one fp16 rounding of the GEMM result (unfused: a second kernel reads it)"


def fused_reference(a, b, xp, epi: contract.Epilogue = contract.PLAIN, intermediate_fp16: bool = False):
    """verify.reference (float64 act(alpha * a @ b.T + bias) and the bound's magnitude term), and,
    for an unfused pipeline that stores the GEMM's result in fp16 before a second kernel applies
    the rest (`intermediate_fp16`), room in the bound for that one rounding: 2^-11 of
    |alpha * a @ b.T| + |bias| (a bound on the stored value), times the activation's steepest
    slope. Only that rounding: a wrong or missing bias or alpha, another activation, a GEMM
    error still fail. (GELU's erf and tanh forms differ by less than that rounding: the judge of
    an unfused pipeline cannot tell them apart; the strict one can, at small K.)"""
    ref, mag = verify.reference(a, b, xp, epi)
    if intermediate_fp16 and epi is not contract.PLAIN:
        z = xp.abs(a.astype(xp.float64) @ b.astype(xp.float64).T) * abs(epi.alpha)
        if epi.bias is not None:
            z = z + xp.abs(xp.asarray(epi.bias).astype(xp.float64))[None, :]
        slope = verify.ACT_SLOPE if epi.activation else 1.0
        mag = mag + z * (slope * 2.0**-11 / verify.ACC_EPS)  # the bound's ACC_EPS * mag term
    return ref, mag


def random_bias(n: int, seed: int, xp):
    """A fresh float16 N(0, 1) bias of length n (one per shape in a fused run)."""
    rng = np.random.default_rng(seed) if xp is np else xp.random.default_rng(seed)
    return rng.standard_normal(n, dtype=xp.float32).astype(xp.float16)


class Progress:
    """tqdm on a terminal; one numbered line per item on stderr otherwise (logs, CI, the device)."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.done, self.enabled = total, 0, enabled and total > 0
        self._bar = tqdm(total=total, unit="run", leave=False, file=sys.stderr) \
            if self.enabled and sys.stderr.isatty() else None

    def set_description_str(self, text: str):
        if self._bar is not None:
            self._bar.set_description_str(text)
        elif self.enabled:
            print(f"[{self.done + 1}/{self.total}] {text}", file=sys.stderr, flush=True)

    def update(self, n: int = 1):
        self.done += n
        if self._bar is not None:
            self._bar.update(n)

    def close(self):
        if self._bar is not None:
            self._bar.close()


class _OneStep:
    """Adapts a progress bar so that a caller's update(n) counts as one step (a CPU shape)."""

    def __init__(self, bar: Progress):
        self._bar = bar

    def set_description_str(self, text):
        self._bar.set_description_str(text)

    def update(self, n=1):
        self._bar.update(1)


class _Prepared(NamedTuple):
    """One stage, shape and epilogue ready to launch: its prepared call into a guarded, poisoned
    output (`verify.guarded_output`), which is judged after the timing."""
    st: object
    spec: EpilogueSpec
    run: object
    buf: object
    out: object


def _prepare(st, m, n, k, a, b, spec: EpilogueSpec = PLAIN_SPEC, bias=None) -> _Prepared:
    cp = gpu.cupy()
    buf, out = verify.guarded_output(m, n, cp)
    return _Prepared(st, spec, st.prepare(a, b, out, **spec.kwargs(bias)), buf, out)


def _time(prepared: list, reps: int, warmup: int, flush) -> list:
    """Each prepared call's Timing, or the exception its launches raised: every call timed in
    turn with the others (`time_interleaved`). Where that raises, each is run alone to find the
    failing ones (the failure is then the failing stage's), and the others are timed in turn
    again; if that raises too, their alone timings stand, marked `order: alone` (no ratio to
    cuBLAS is made from them: timed one after another, the order moves the ratio, timing.py)."""
    try:
        return time_interleaved([p.run for p in prepared], reps=reps, warmup=warmup, flush=flush)
    except Exception:  # noqa: BLE001  (which stage failed: timed one by one below)
        pass
    out = []
    for p in prepared:
        try:
            t = time_gpu(p.run, reps=reps, warmup=warmup, flush=flush)
            t.order = "alone"
            out.append(t)
        except Exception as exc:  # noqa: BLE001  a failed launch is a result, recorded
            out.append(exc)
    survivors = [i for i, t in enumerate(out) if not isinstance(t, BaseException)]
    try:
        again = time_interleaved([prepared[i].run for i in survivors], reps=reps, warmup=warmup, flush=flush)
    except Exception:  # noqa: BLE001  (flaky: the alone timings stand, marked)
        return out
    for i, t in zip(survivors, again):
        out[i] = t
    return out


def judge(st, spec: EpilogueSpec, m, n, k, a, b, bias, out, buf=None) -> verify.Check:
    """`st`'s output of `spec` on (a, b, bias), judged against the float64 reference of the same
    formula (with room for the intermediate fp16 rounding where `st` applies it in a second kernel)."""
    cp = gpu.cupy()
    chk = verify.Check(st.name, m, n, k, seed=-1, epilogue=spec.text)
    ref, mag = fused_reference(a, b, cp, spec.epilogue(bias), intermediate_fp16=rounds_before_epilogue(st, spec))
    return verify.judge_output(chk, out, ref, mag, cp, buf)


def _judged(p: _Prepared, m, n, k, a, b, bias, t: Timing, reps: int) -> dict:
    """A timed call's entry: its output judged against the (fused) float64 reference."""
    st, spec = p.st, p.spec
    chk = judge(st, spec, m, n, k, a, b, bias, p.out, p.buf)
    unfused = rounds_before_epilogue(st, spec)
    entry = {**_named(st, m, n, k, spec),
             "ms_median": t.median, "ms_p20": t.p20, "ms_p80": t.p80, "reps": reps,
             "tflops": tflops(m, n, k, t.median), "rel_err": chk.rel_fro,
             "bound_ratio": chk.worst_bound_ratio, "verified": chk.passed,
             "status": "ok" if chk.passed else "failed", "reason": chk.reason}
    if unfused:
        entry["judged"] = INTERMEDIATE_NOTE
    if t.order != "interleaved":
        entry["order"] = t.order  # (the record's settings say interleaved: this call was not)
    return entry


def _named(st, m, n, k, spec: EpilogueSpec) -> dict:
    """The fields that name an entry: stage, shape, dtype and epilogue."""
    return {"stage": st.name, "m": m, "n": n, "k": k, "dtype": "float16", "epilogue": spec.text}


def _failed(entry: dict, exc: BaseException) -> dict:
    return {**entry, "status": "failed", "reason": f"{type(exc).__name__}: {exc}"[:500]}


def _skipped(st, m, n, k, spec: EpilogueSpec) -> dict | None:
    """The entry of a stage, shape and epilogue that is not run, with the reason; None if it runs."""
    entry = _named(st, m, n, k, spec)
    runnable, reason = st.runnable()
    gap = fusion_gap(st, spec)
    if not runnable:
        return {**entry, "status": "skipped", "reason": reason}
    if not st.constraints.supports(m, n, k):
        return {**entry, "status": "skipped", "reason": f"shape not supported ({st.constraints.describe()})"}
    if gap:
        return {**entry, "status": "skipped", "reason": f"{st.name} {gap}"}
    return None


def _shape_entries(plan, m, n, k, a, b, flush, reps, warmup, bias, bar) -> list:
    """Every (spec, stage) of the plan on one shape, in the plan's order: skipped with the reason,
    or prepared, then all prepared calls timed in turn (`_time`), then each judged."""
    slots = []
    for spec, st in plan:
        bar.set_description_str(f"{st.name} {m}x{n}x{k}" + (f" {spec.text}" if spec.text else "") + ": prepare")
        entry = _skipped(st, m, n, k, spec)
        if entry is None:
            try:
                entry = _prepare(st, m, n, k, a, b, spec, bias)
            except Exception as exc:  # noqa: BLE001  a failed call is a result, recorded
                entry = _failed(_named(st, m, n, k, spec), exc)
        slots.append(entry)
    prepared = [s for s in slots if isinstance(s, _Prepared)]
    bar.set_description_str(f"{len(prepared)} calls at {m}x{n}x{k}: timed in turn")
    timings = iter(_time(prepared, reps, warmup, flush))  # in the order of `prepared`
    entries = []
    for slot in slots:
        if isinstance(slot, _Prepared):
            base, t = _named(slot.st, m, n, k, slot.spec), next(timings)
            try:
                slot = _failed(base, t) if isinstance(t, BaseException) else _judged(slot, m, n, k, a, b, bias, t, reps)
            except Exception as exc:  # noqa: BLE001
                slot = _failed(base, exc)
        entries.append(slot)
        bar.update()
    return entries


def run_bench(stage_names, shapes=None, cpu_shapes=None, reps: int = 30, warmup: int = 5,
              progress: bool = True, kind: str = "bench", epilogues=None, fused_baselines: bool = True) -> dict:
    """Time stages (names, or stage objects such as tuning variants) and return the record.

    GPU stages and 'cublas' are timed on `shapes`, in turn with each other (every ratio needs
    cuBLAS; the record's settings say `order: interleaved`);
    'cpu_numba' is timed against numpy on `cpu_shapes`.
    `epilogues`: epilogue specs ("bias+gelu_tanh", EpilogueSpec, "plain"); without them the plain
    GEMM. With a fused spec, only cuBLAS is timed plain (the yardstick) unless "plain" is among
    them, and the fused-epilogue baselines that can run here join (`fused_baselines`).
    """
    specs = list(dict.fromkeys(parse_epilogue(s) if isinstance(s, str) else s for s in (epilogues or ())))
    fused = [s for s in specs if not s.plain]
    plain_wanted = not fused or PLAIN_SPEC in specs
    settings = {"reps": reps, "warmup": warmup, "order": "interleaved"}  # timing.time_interleaved
    if specs:
        settings["epilogues"] = [s.text for s in specs]
        settings["epilogue_bias"] = "float16, N(0, 1), drawn once per shape"
        settings["epilogue_alpha"] = EPILOGUE_ALPHA
    record = records.new_record(kind, settings=settings)
    objs = [stages.get(s) if isinstance(s, str) else s for s in stage_names]
    gpu_objs = [st for st in objs if st.kind != "cpu" and st.name != "cublas"]
    gpu_objs = [stages.get("cublas"), *gpu_objs] if gpu_objs or any(st.name == "cublas" for st in objs) else []
    named = list(gpu_objs)
    if fused and fused_baselines and named:  # a fused epilogue's yardsticks, when they run here
        have = {st.name for st in named}
        gpu_objs += [st for st in map(stages.get, stages.epilogue_baselines())
                     if st.name not in have and st.runnable()[0]]
    # (spec, stage) in the order they are timed: cuBLAS plain first, then the plain GEMMs asked
    # for, then each fused spec over every stage (a stage that does not fuse it: skipped).
    plan = [(PLAIN_SPEC, st) for st in (named if plain_wanted else named[:1])]
    plan += [(spec, st) for spec in fused for st in gpu_objs]
    shapes = list(shapes or GPU_DEFAULT_SHAPES)
    cpu_wanted = any(st.kind == "cpu" for st in objs)
    cpu_shapes = list(cpu_shapes or CPU_DEFAULT_SHAPES)
    ok, why = gpu.available()
    if plan and not ok:
        record["results"] = [{"stage": st.name, "epilogue": spec.text, "status": "skipped", "reason": why}
                             for spec, st in plan]
        plan = []
    bar = Progress(len(plan) * len(shapes) + len(cpu_shapes) * cpu_wanted, progress)
    if plan:
        cp = gpu.cupy()
        dev = gpu.current()
        peak = peak_for(dev.name)
        flush = L2Flusher(dev.l2_bytes)
        record["settings"].update(peak_tflops_fp16_dense=peak, l2_flush_bytes=flush.nbytes)
        for (m, n, k) in shapes:
            seed = secrets.randbits(63)
            a, b = verify.random_operands(m, n, k, seed, cp)
            bias = random_bias(n, seed + 1, cp) if any(s.bias for s in fused) else None
            entries = _shape_entries(plan, m, n, k, a, b, flush, reps, warmup, bias, bar)
            # ratios only between passing calls timed in turn (a failing call keeps its time, not a ratio)
            cublas_tf = next((e["tflops"] for e in entries if e["stage"] == "cublas" and not e["epilogue"]
                              and e["status"] == "ok" and "order" not in e), None)
            for entry in entries:
                if "tflops" in entry and entry["status"] == "ok":
                    entry["pct_peak"] = 100 * entry["tflops"] / peak if peak else None
                    entry["ratio_cublas"] = entry["tflops"] / cublas_tf if cublas_tf and "order" not in entry else None
                record["results"].append(entry)
            del a, b, bias
            cp.get_default_memory_pool().free_all_blocks()
        smi = gpu.smi_reading()  # the SM clock right after the timed runs, under load
        record["env"]["gpu"]["sm_clock_after_runs_mhz"] = smi.sm_clock_mhz if smi else None
    if cpu_wanted:
        record["cpu"] = cpu_bench.run_cpu(cpu_shapes, progress=_OneStep(bar) if bar.enabled else None)
    bar.close()
    return record


def run_overhead(stage_names, shapes=None, calls: int = 1000, progress: bool = True) -> dict:
    """Host time per `gemm()` call, `calls` back-to-back calls at each of `shapes` (default: one
    small shape, OVERHEAD_SHAPE), beside `cupy.matmul(a, b.T, out=o)` (the yardstick a user already has). Every check
    stays in the path: this is `stage.gemm(a, b, out=o)` exactly as a user calls it. Where the
    kernel takes longer than its call path, the launch queue fills once enough calls are queued
    and then the host waits for the kernels (1,000 launches of the first stage, 3.9 ms each, did
    not fill it on the H200: results/20261202T001005); `kernel_us` beside it says which is longer."""
    record = records.new_record("overhead", settings={"calls": calls, "rounds": 5, "statistic": "best round",
                                                      "kernel_hold_us": OVERHEAD_HOLD_US})
    ok, why = gpu.available()
    objs = [stages.get(s) if isinstance(s, str) else s for s in stage_names]
    objs = [st for st in objs if st.kind != "cpu"]
    if not ok:
        record["results"] = [{"stage": st.name, "status": "skipped", "reason": why} for st in objs]
        return record
    cp = gpu.cupy()
    shapes = list(shapes or [OVERHEAD_SHAPE])
    hold = QueueHold(OVERHEAD_HOLD_US)  # kernel µs: each launch queued behind it, so the host's time is not timed
    bar = Progress(len(shapes) * (len(objs) + 1), progress)
    for m, n, k in shapes:
        a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
        o = cp.empty((m, n), cp.float16)
        bar.set_description_str(f"cupy.matmul {m}x{n}x{k}, {calls} calls")
        base = host_per_call(lambda: cp.matmul(a, b.T, out=o), calls=calls).best
        base_gpu = time_gpu(lambda: cp.matmul(a, b.T, out=o), reps=20, warmup=3, flush=hold).median
        record["results"].append({"stage": "cupy.matmul", "m": m, "n": n, "k": k, "calls": calls,
                                  "us_per_call": base, "ratio_cupy_matmul": 1.0, "kernel_us": base_gpu * 1e3,
                                  "status": "ok", "reason": ""})
        bar.update()
        for st in objs:
            bar.set_description_str(f"{st.name} {m}x{n}x{k}, {calls} calls")
            entry = {"stage": st.name, "m": m, "n": n, "k": k, "calls": calls}
            runnable, reason = st.runnable()
            if not runnable or not st.constraints.supports(m, n, k):
                entry.update(status="skipped", reason=reason or f"shape not supported ({st.constraints.describe()})")
            else:
                try:
                    us = host_per_call(lambda st=st: st.gemm(a, b, out=o), calls=calls).best
                    gpu_ms = time_gpu(st.prepare(a, b, o), reps=20, warmup=3, flush=hold).median
                    entry.update(us_per_call=us, ratio_cupy_matmul=us / base, kernel_us=gpu_ms * 1e3,
                                 status="ok", reason="")
                except Exception as exc:  # noqa: BLE001
                    entry.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:500])
            record["results"].append(entry)
            bar.update()
        del a, b, o
        cp.get_default_memory_pool().free_all_blocks()
    bar.close()
    return record
