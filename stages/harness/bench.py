"""Timing: CUDA events around the kernel alone, L2 flushed before every repeat.

Per (stage, shape): fresh N(0, 1) inputs, a checked launch prepared once (so input checks, tensor
maps and module loads stay outside the timed region), `warmup` untimed launches, then `reps`
timed launches. Before each timed launch a buffer several times the L2 size is overwritten, so
every repeat reads A and B from HBM as a real GEMM in a model would. The flush is queued ahead of
the start event and takes longer than the host needs to enqueue the launch, so the events bracket
the kernel alone. cuBLAS is timed the same way in the same run.
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

import numpy as np

from . import gpu

# Dense fp16/bf16 tensor-core peak with fp32 accumulation, datasheet TFLOP/s (SXM parts).
TENSOR_PEAK_TFLOPS = {"H200": 989.4, "H100 80GB HBM3": 989.4, "H100 SXM": 989.4, "H100 NVL": 835.0,
                      "H100 PCIe": 756.0, "GH200": 989.4, "A100": 312.0, "L40S": 362.1, "L4": 121.0}
FP32_PEAK_TFLOPS = {"H200": 66.9, "H100 80GB HBM3": 66.9, "H100 SXM": 66.9, "A100": 19.5}
HBM_TBPS = {"H200": 4.8, "H100 80GB HBM3": 3.35, "H100 SXM": 3.35, "A100": 2.0}


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """The one place throughput is computed: 2*M*N*K floating-point operations in `ms` ms."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def peak_for(gpu_name: str, table=TENSOR_PEAK_TFLOPS) -> float | None:
    """Datasheet peak for a GPU name (longest matching key), or None when unknown."""
    hits = [key for key in table if key in gpu_name]
    return table[max(hits, key=len)] if hits else None


def datasheet(gpu_name: str) -> dict:
    """The three datasheet roofs of a GPU (None where unknown), as the ceilings record stores them."""
    return {"hbm_tbps": peak_for(gpu_name, HBM_TBPS), "fp32_tflops": peak_for(gpu_name, FP32_PEAK_TFLOPS),
            "fp16_tensor_tflops": peak_for(gpu_name)}


@dataclass
class Timing:
    ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return float(np.median(self.ms))

    @property
    def p20(self) -> float:
        return float(np.percentile(self.ms, 20))

    @property
    def p80(self) -> float:
        return float(np.percentile(self.ms, 80))


class L2Flusher:
    """Overwrites a buffer of max(256 MiB, 4 x L2) bytes: evicts A, B and C from L2."""

    def __init__(self, l2_bytes: int):
        cp = gpu.cupy()
        self.nbytes = max(256 << 20, 4 * l2_bytes)
        self._buf = cp.empty(self.nbytes // 4, dtype=cp.int32)
        self._i = 0

    def __call__(self):
        self._i += 1
        self._buf.fill(self._i)


def time_gpu(run, reps: int = 30, warmup: int = 5, flush: L2Flusher | None = None) -> Timing:
    """Median-able samples (ms) of `run()` (a Prepared launch) with events around it alone."""
    cp = gpu.cupy()
    for _ in range(warmup):
        run()
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for start, end in events:
        if flush is not None:
            flush()
        start.record()
        run()
        end.record()
    events[-1][1].synchronize()
    return Timing([cp.cuda.get_elapsed_time(s, e) for s, e in events])


def time_cpu(fn, reps: int = 7, warmup: int = 1) -> Timing:
    """Median-able wall-clock samples (ms) of a host function."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return Timing(samples)


# ---------------------------------------------------------------------------------------------
# A benchmark run: every requested stage and shape, cuBLAS beside them, one JSON record.
# ---------------------------------------------------------------------------------------------
GPU_DEFAULT_SHAPES = ((4096, 4096, 4096),)
CPU_DEFAULT_SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048))


def _progress(total: int, enabled: bool):
    """tqdm on a terminal; one line per item on stderr otherwise (logs, CI, the device)."""
    import sys  # noqa: PLC0415

    from tqdm.auto import tqdm  # noqa: PLC0415

    if not enabled:
        return None
    if sys.stderr.isatty():
        return tqdm(total=total, unit="run", leave=False, file=sys.stderr)

    class _Lines:
        def __init__(self):
            self.done = 0

        def set_description_str(self, text):
            print(f"[{self.done + 1}/{total}] {text}", file=sys.stderr, flush=True)

        def update(self, n=1):
            self.done += n

        def close(self):
            pass

    return _Lines()


def _gpu_entry(stage, m, n, k, run, flush, reps, warmup, a, b) -> dict:
    from . import verify  # noqa: PLC0415

    cp = gpu.cupy()
    t = time_gpu(run, reps=reps, warmup=warmup, flush=flush)
    ref, mag = verify.reference(a, b, cp)
    err = verify.compare(run.out, ref, mag, cp)
    del ref, mag
    ok = err["unwritten"] == 0 and err["rel_fro"] <= verify.REL_FRO_FAIL and err["worst_bound_ratio"] <= 1
    return {"stage": stage, "m": m, "n": n, "k": k, "dtype": "float16",
            "ms_median": t.median, "ms_p20": t.p20, "ms_p80": t.p80, "reps": reps,
            "tflops": tflops(m, n, k, t.median), "rel_err": err["rel_fro"],
            "bound_ratio": err["worst_bound_ratio"], "verified": bool(ok),
            "status": "ok" if ok else "failed",
            "reason": "" if ok else f"wrong result: {err}"}


def run_bench(stage_names, shapes=None, cpu_shapes=None, reps: int = 30, warmup: int = 5,
              progress: bool = True, kind: str = "bench") -> dict:
    """Time stages (names, or stage objects such as tuning variants) and return the record.

    GPU stages and 'cublas' are timed on `shapes`, cuBLAS first (every ratio needs it);
    'cpu_numba' is timed against numpy on `cpu_shapes`.
    """
    import stages  # noqa: PLC0415

    from . import records, verify  # noqa: PLC0415

    env = records.environment()
    record = {"schema": records.SCHEMA, "kind": kind, "env": env,
              "settings": {"reps": reps, "warmup": warmup}, "results": [], "cpu": []}
    objs = [stages.get(s) if isinstance(s, str) else s for s in stage_names]
    gpu_objs = [st for st in objs if st.kind != "cpu" and st.name != "cublas"]
    gpu_objs = [stages.get("cublas"), *gpu_objs] if gpu_objs or any(st.name == "cublas" for st in objs) else []
    shapes = list(shapes or GPU_DEFAULT_SHAPES)
    cpu_wanted = any(st.kind == "cpu" for st in objs)
    cpu_shapes = list(cpu_shapes or CPU_DEFAULT_SHAPES)
    peak = None
    ok, why = gpu.available()
    if gpu_objs and not ok:
        record["results"] = [{"stage": st.name, "status": "skipped", "reason": why} for st in gpu_objs]
        gpu_objs = []
    bar = _progress(len(gpu_objs) * len(shapes) + 2 * len(cpu_shapes) * cpu_wanted, progress)
    if gpu_objs:
        cp = gpu.cupy()
        dev = gpu.current()
        peak = peak_for(dev.name)
        record["settings"]["peak_tflops_fp16_dense"] = peak
        flush = L2Flusher(dev.l2_bytes)
        record["settings"]["l2_flush_bytes"] = flush.nbytes
        for (m, n, k) in shapes:
            a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
            cublas_tf = None
            for st in gpu_objs:
                name = st.name
                if bar:
                    bar.set_description_str(f"{name} {m}x{n}x{k}")
                entry = {"stage": name, "m": m, "n": n, "k": k, "dtype": "float16"}
                runnable, reason = st.runnable()
                if not runnable:
                    entry.update(status="skipped", reason=reason)
                elif not st.constraints.supports(m, n, k):
                    entry.update(status="skipped", reason=f"shape not supported ({st.constraints.describe()})")
                else:
                    out = cp.full((m, n), cp.nan, dtype=cp.float16)
                    try:
                        entry = _gpu_entry(name, m, n, k, st.prepare(a, b, out), flush, reps, warmup, a, b)
                    except Exception as exc:  # noqa: BLE001  a failed launch is a result, recorded
                        entry.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:500])
                    del out
                    if name == "cublas" and "tflops" in entry:
                        cublas_tf = entry["tflops"]
                    if "tflops" in entry:
                        entry["pct_peak"] = 100 * entry["tflops"] / peak if peak else None
                        entry["ratio_cublas"] = entry["tflops"] / cublas_tf if cublas_tf else None
                record["results"].append(entry)
                if bar:
                    bar.update()
            del a, b
            cp.get_default_memory_pool().free_all_blocks()

    if record.get("env", {}).get("gpu") and gpu_objs:
        smi = gpu.driver_string()  # the SM clock right after the timed runs, under load
        record["env"]["gpu"]["sm_clock_after_runs_mhz"] = smi.split(",")[1].strip() if smi else None
    if cpu_wanted:
        record["cpu"] = _cpu_bench(cpu_shapes, bar)
    if bar:
        bar.close()
    return record


def _cpu_bench(shapes, bar) -> list[dict]:
    """numba GEMM against numpy's float32 matmul, same inputs, same cores, same run.

    Both get float32 inputs (the numba GEMM's fp16 path converts while packing and runs at the
    same speed). OpenBLAS's worker threads keep spinning for a while after a call, so each timed
    block starts after a short pause, and the float64 references are computed after the timing.
    """
    import time  # noqa: PLC0415

    import stages  # noqa: PLC0415

    from . import verify  # noqa: PLC0415

    st = stages.get("cpu_numba")
    runnable, reason = st.runnable()
    if not runnable:
        return [{"stage": "cpu_numba", "status": "skipped", "reason": reason}]
    rows = []
    for (m, n, k) in shapes:
        a16, b16 = verify.random_operands(m, n, k, secrets.randbits(63), np)
        a, b = a16.astype(np.float32), b16.astype(np.float32)
        outs = {"numpy": np.empty((m, n), np.float32), "cpu_numba": np.empty((m, n), np.float32)}
        rounds, per_round = 3, 5
        fns = {"numpy": lambda: np.matmul(a, b.T, out=outs["numpy"]),
               "cpu_numba": lambda: st.gemm(a, b, out=outs["cpu_numba"])}
        samples = {name: [] for name in fns}
        for name, fn in fns.items():
            fn()  # warm-up (and numba's compile, from its cache after the first process)
        # Alternate blocks of calls, a pause before each, so a transient (spinning BLAS threads,
        # a noisy neighbour on a shared host) lands on both sides instead of one.
        if bar:
            bar.set_description_str(f"numpy and cpu_numba {m}x{n}x{k} (CPU)")
        for _ in range(rounds):
            for name, fn in fns.items():
                time.sleep(0.2)
                samples[name] += time_cpu(fn, reps=per_round, warmup=0).ms
        timings = {name: Timing(ms) for name, ms in samples.items()}
        reps = rounds * per_round
        if bar:
            bar.update(2)
        ref, mag = verify.reference(a16, b16, np)
        for name, t in timings.items():
            err = verify.compare(outs[name], ref, mag, np)
            rows.append({"stage": name, "m": m, "n": n, "k": k, "dtype": "float32",
                         "ms_median": t.median, "ms_p20": t.p20, "ms_p80": t.p80, "reps": reps,
                         "gflops": tflops(m, n, k, t.median) * 1e3, "rel_err": err["rel_fro"],
                         "ratio_numpy": timings["numpy"].median / t.median, "status": "ok"})
    return rows
