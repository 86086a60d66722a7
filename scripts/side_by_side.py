"""The probe scripts' shared loop (lever_probe.py, overlap_probe.py, row_align_probe.py): the
builds compiled first in parallel, stages prepared on the same operands, each run once into a
NaN-poisoned output and judged against the float64 reference, then timed in interleaved rounds so
that clock drift between them cancels."""
import concurrent.futures as cf
import json
import os
import time

import numpy as np

from stages.core import compiler
from stages.tools import inspect, records, verify
from stages.tools.timing import time_gpu


def defines_of(stage, m, n, k, epi, dev):
    """The whole build `stage` makes for a call of this shape and epilogue (aligned operands)."""
    return {**stage.defines, **inspect.call_defines(stage, m, n, k, epi, dev)}


def _compile(job):
    source, name, arch, defines = job
    t0 = time.time()
    compiler.compile_cubin(source, name, arch, defines)
    return time.time() - t0


def compile_all(jobs, workers):
    """Compile every (source, name, arch, defines) job in parallel processes (NVRTC, the disk
    cache), so that the GPU time goes to running the kernels; prints how long it took."""
    t0 = time.time()
    with cf.ProcessPoolExecutor(max_workers=workers) as pool:
        secs = list(pool.map(_compile, jobs))
    print(f"compiled {len(secs)} kernels in {time.time() - t0:.0f} s ({max(secs, default=0):.0f} s the longest)",
          flush=True)


def prepare_judged(entries, judged, a, b, out, kw, ref, mag, cp):
    """({name: run}, {name: verdict}): every entry prepared (a refusal is the verdict
    "unavailable: ..."), run once, and judged where its name is in `judged`."""
    m, n, k = a.shape[0], b.shape[0], a.shape[1]
    runs, checks = {}, {}
    for name, st in entries.items():
        try:
            run = st.prepare(a, b, out, **kw)
        except Exception as exc:  # noqa: BLE001
            checks[name] = f"unavailable: {type(exc).__name__}: {str(exc)[:120]}"
            continue
        out.fill(float("nan"))
        run()
        cp.cuda.get_current_stream().synchronize()
        if name in judged:
            chk = verify.judge_output(verify.Check(name, m, n, k, 0), out, ref, mag, cp)
            checks[name] = "ok" if chk.passed else "FAIL " + chk.reason
        runs[name] = run
    return runs, checks


def refused_rows(runs, checks, fields: dict) -> list[dict]:
    """A row for each entry that could not be prepared (its verdict "unavailable: ..."): the
    probes build their rows from the timings, where a refused variant has none, so without these
    it would leave no trace in the record (a reviewer found two records missing rows that way)."""
    return [{**fields, "variant": name, "ms_median": None, "tflops": None, "samples": 0, "check": verdict}
            for name, verdict in checks.items() if name not in runs]


def interleaved(runs, rounds, reps, flush):
    """({name: median ms}, {name: samples}): `rounds` rounds, each timing every run `reps` times.
    Each round starts one run further along (round r: runs r, r + 1, ..., then 0 .. r - 1), so that
    no run always comes first after the host's pause between shapes, or always after the same run.
    (What it does not remove: at 8192^3, under the power cap, two identical kernels read 1549 and
    1573 us in a fixed order and 1578 and 1596 us rotated, 8 rounds of 8; results/probes/
    20261202T045158-nvidia-h200-biasraw-probe.json and 20261202T045339. A probe this short does not
    resolve 1-2% there; at 4096^3 the same pair read within 0.1 us.)"""
    samples = {name: [] for name in runs}
    names = list(runs)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name] += time_gpu(runs[name], reps=reps, flush=flush).ms
    return {name: float(np.median(s)) for name, s in samples.items()}, samples


def save(out_dir, kind, settings, **parts):
    """Write a probe's record, DIR/<kind>.json: the kind, this machine and its versions
    (records.environment), the settings, and the parts given (results=rows, ...); returns the path."""
    os.makedirs(out_dir, exist_ok=True)  # (a probe's --out folder need not exist yet)
    path = os.path.join(out_dir, f"{kind}.json")
    with open(path, "w") as f:
        json.dump({"kind": kind, "env": records.environment(), "settings": settings, **parts}, f, indent=1)
    return path
