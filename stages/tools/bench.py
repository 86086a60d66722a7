"""Benchmark runs: every requested stage and shape with cuBLAS beside it, one JSON record.

Per (stage, shape): fresh N(0, 1) inputs, a checked launch prepared once (so input checks, tensor
maps and module loads stay outside the timed region), warm-ups, then timed launches with the L2
flushed before each (timing.py). The timed output is then judged by the one judge (verify.py),
guard zones included. cuBLAS is timed first in the same run, so every ratio has its yardstick.
The CPU baseline is timed against numpy by cpu_bench.py; the call path's host overhead by
`run_overhead`.
"""
from __future__ import annotations

import secrets
import sys

from tqdm.auto import tqdm

import stages
from stages.core import gpu

from . import cpu_bench, records, verify
from .timing import L2Flusher, host_per_call, tflops, time_gpu

# Dense fp16/bf16 tensor-core peak with fp32 accumulation, datasheet TFLOP/s (SXM parts).
TENSOR_PEAK_TFLOPS = {"H200": 989.4, "H100 80GB HBM3": 989.4, "H100 SXM": 989.4, "H100 NVL": 835.0,
                      "H100 PCIe": 756.0, "GH200": 989.4, "A100": 312.0, "L40S": 362.1, "L4": 121.0}
FP32_PEAK_TFLOPS = {"H200": 66.9, "H100 80GB HBM3": 66.9, "H100 SXM": 66.9, "A100": 19.5}
HBM_TBPS = {"H200": 4.8, "H100 80GB HBM3": 3.35, "H100 SXM": 3.35, "A100": 2.0}

GPU_DEFAULT_SHAPES = ((4096, 4096, 4096),)
CPU_DEFAULT_SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048))
OVERHEAD_SHAPE = (256, 256, 256)


def peak_for(gpu_name: str, table=TENSOR_PEAK_TFLOPS) -> float | None:
    """Datasheet peak for a GPU name (longest matching key), or None when unknown."""
    hits = [key for key in table if key in gpu_name]
    return table[max(hits, key=len)] if hits else None


def datasheet(gpu_name: str) -> dict:
    """The three datasheet roofs of a GPU (None where unknown), as the ceilings record stores them."""
    return {"hbm_tbps": peak_for(gpu_name, HBM_TBPS), "fp32_tflops": peak_for(gpu_name, FP32_PEAK_TFLOPS),
            "fp16_tensor_tflops": peak_for(gpu_name)}


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


def _gpu_entry(st, m, n, k, a, b, flush, reps, warmup) -> dict:
    """Time one stage on one shape (into a guarded, poisoned output), then judge that output."""
    cp = gpu.cupy()
    buf, out = verify.guarded_output(m, n, cp)
    run = st.prepare(a, b, out)
    t = time_gpu(run, reps=reps, warmup=warmup, flush=flush)
    chk = verify.Check(st.name, m, n, k, seed=-1)
    ref, mag = verify.reference(a, b, cp)
    verify.judge_output(chk, out, ref, mag, cp, buf)
    del ref, mag, buf, out
    return {"stage": st.name, "m": m, "n": n, "k": k, "dtype": "float16",
            "ms_median": t.median, "ms_p20": t.p20, "ms_p80": t.p80, "reps": reps,
            "tflops": tflops(m, n, k, t.median), "rel_err": chk.rel_fro,
            "bound_ratio": chk.worst_bound_ratio, "verified": chk.passed,
            "status": "ok" if chk.passed else "failed", "reason": chk.reason}


def run_bench(stage_names, shapes=None, cpu_shapes=None, reps: int = 30, warmup: int = 5,
              progress: bool = True, kind: str = "bench") -> dict:
    """Time stages (names, or stage objects such as tuning variants) and return the record.

    GPU stages and 'cublas' are timed on `shapes`, cuBLAS first (every ratio needs it);
    'cpu_numba' is timed against numpy on `cpu_shapes`.
    """
    record = records.new_record(kind, settings={"reps": reps, "warmup": warmup})
    objs = [stages.get(s) if isinstance(s, str) else s for s in stage_names]
    gpu_objs = [st for st in objs if st.kind != "cpu" and st.name != "cublas"]
    gpu_objs = [stages.get("cublas"), *gpu_objs] if gpu_objs or any(st.name == "cublas" for st in objs) else []
    shapes = list(shapes or GPU_DEFAULT_SHAPES)
    cpu_wanted = any(st.kind == "cpu" for st in objs)
    cpu_shapes = list(cpu_shapes or CPU_DEFAULT_SHAPES)
    ok, why = gpu.available()
    if gpu_objs and not ok:
        record["results"] = [{"stage": st.name, "status": "skipped", "reason": why} for st in gpu_objs]
        gpu_objs = []
    bar = Progress(len(gpu_objs) * len(shapes) + len(cpu_shapes) * cpu_wanted, progress)
    if gpu_objs:
        cp = gpu.cupy()
        dev = gpu.current()
        peak = peak_for(dev.name)
        flush = L2Flusher(dev.l2_bytes)
        record["settings"].update(peak_tflops_fp16_dense=peak, l2_flush_bytes=flush.nbytes)
        for (m, n, k) in shapes:
            a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
            cublas_tf = None
            for st in gpu_objs:
                bar.set_description_str(f"{st.name} {m}x{n}x{k}")
                entry = {"stage": st.name, "m": m, "n": n, "k": k, "dtype": "float16"}
                runnable, reason = st.runnable()
                if not runnable:
                    entry.update(status="skipped", reason=reason)
                elif not st.constraints.supports(m, n, k):
                    entry.update(status="skipped", reason=f"shape not supported ({st.constraints.describe()})")
                else:
                    try:
                        entry = _gpu_entry(st, m, n, k, a, b, flush, reps, warmup)
                    except Exception as exc:  # noqa: BLE001  a failed launch is a result, recorded
                        entry.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:500])
                    if st.name == "cublas" and entry["status"] == "ok":
                        cublas_tf = entry["tflops"]
                    if "tflops" in entry:
                        entry["pct_peak"] = 100 * entry["tflops"] / peak if peak else None
                        entry["ratio_cublas"] = entry["tflops"] / cublas_tf if cublas_tf else None
                record["results"].append(entry)
                bar.update()
            del a, b
            cp.get_default_memory_pool().free_all_blocks()
        smi = gpu.driver_string()  # the SM clock right after the timed runs, under load
        record["env"]["gpu"]["sm_clock_after_runs_mhz"] = smi.split(",")[1].strip() if smi else None
    if cpu_wanted:
        record["cpu"] = cpu_bench.run_cpu(cpu_shapes, progress=_OneStep(bar) if bar.enabled else None)
    bar.close()
    return record


def run_overhead(stage_names, shape=OVERHEAD_SHAPE, calls: int = 1000, progress: bool = True) -> dict:
    """Host time per `gemm()` call, `calls` back-to-back calls at a small shape, beside
    `cupy.matmul(a, b.T, out=o)` (the yardstick a user already has). Every check stays in the
    path: this is `stage.gemm(a, b, out=o)` exactly as a user calls it."""
    record = records.new_record("overhead", settings={"calls": calls, "rounds": 5, "statistic": "best round"})
    ok, why = gpu.available()
    objs = [stages.get(s) if isinstance(s, str) else s for s in stage_names]
    objs = [st for st in objs if st.kind != "cpu"]
    if not ok:
        record["results"] = [{"stage": st.name, "status": "skipped", "reason": why} for st in objs]
        return record
    cp = gpu.cupy()
    m, n, k = shape
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    o = cp.empty((m, n), cp.float16)
    bar = Progress(len(objs) + 1, progress)
    bar.set_description_str(f"cupy.matmul {m}x{n}x{k}, {calls} calls")
    base = host_per_call(lambda: cp.matmul(a, b.T, out=o), calls=calls).best
    record["results"].append({"stage": "cupy.matmul", "m": m, "n": n, "k": k, "calls": calls,
                              "us_per_call": base, "ratio_cupy_matmul": 1.0, "status": "ok", "reason": ""})
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
                gpu_ms = time_gpu(st.prepare(a, b, o), reps=20, warmup=3).median
                entry.update(us_per_call=us, ratio_cupy_matmul=us / base, kernel_us=gpu_ms * 1e3,
                             status="ok", reason="")
            except Exception as exc:  # noqa: BLE001
                entry.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:500])
        record["results"].append(entry)
        bar.update()
    bar.close()
    return record
