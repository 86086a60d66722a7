"""Did the bench's order bias its ratios? Until 2026-12-03 `python -m stages bench` timed cuBLAS first, then each
stage, 30 L2-flushed launches each (timing.py), on the same operands; the interleaved probes
(side_by_side.py) alternate them in rounds. At one token the two methods read v5 0.5-1 us apart
and cuBLAS not (v5 SHAPES.md, "Split K in a cluster"). This times, per shape and repeat, with fresh
operands each repeat and exactly the bench's `time_gpu` calls (warmup 5, then `--reps` flushed
launches). Since 2026-12-03 the bench times the stages in turn, as `alternate` does, after this
probe found a 7% order effect at 1000^3 (results/probes/20261203T093319-nvidia-h200-spread32.json):
  cublas-first  cuBLAS, then v5 (the bench's order until then)
  v5-first      v5, then cuBLAS
  alternate     v5 and cuBLAS one launch each, in turn, `--reps` times (each warmed up first)
with each of `--warmup-ms` (time_gpu's warmup by GPU time after its 5 launches; 0: none).
Every launch's output is judged against float64 once first (NaN-poisoned).

    python3 scripts/order_probe.py --out DIR   ->  DIR/order-probe.json
"""
import argparse
import os
import secrets
import sys

import numpy as np

import stages
from stages.core import gpu
from stages.tools import verify
from stages.tools.timing import L2Flusher, time_gpu

from side_by_side import prepare_judged, save  # scripts/side_by_side.py

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=30)
p.add_argument("--repeats", type=int, default=4)
p.add_argument("--shapes", default="1x4096x4096,16x14336x4096,128x14336x4096,1000x1000x1000,4096x4096x4096")
p.add_argument("--warmup-ms", default="0", help="comma-separated: each value a pass of the whole probe (time_gpu's warmup_ms)")
args = p.parse_args()

cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
entries = {"v5": stages.get("v5_fused_epilogue"), "cublas": stages.get("cublas")}
rows, bad = [], []


def alternate(runs, reps, warmup_ms):
    """Each run once in turn, `reps` times, the L2 flushed before each launch: {name: [ms]}."""
    for run in runs.values():
        time_gpu(run, reps=1, flush=flush, warmup_ms=warmup_ms)
    ev = {name: [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)] for name in runs}
    for i in range(reps):
        for name, run in runs.items():
            flush()
            ev[name][i][0].record()
            run()
            ev[name][i][1].record()
    cp.cuda.get_current_stream().synchronize()
    return {name: [cp.cuda.get_elapsed_time(s, e) for s, e in pairs] for name, pairs in ev.items()}


def probe(shape, wms):
    """Every method on one shape, `--repeats` times with fresh operands, at warmup `wms` ms."""
    m, n, k = (int(x) for x in shape.split("x"))
    for rep in range(args.repeats):
        a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
        ref, mag = verify.reference(a, b, cp)
        out = cp.empty((m, n), cp.float16)
        runs, verdict = prepare_judged(entries, set(entries), a, b, out, {}, ref, mag, cp)
        bad.extend(f"{shape} {nm}: {v}" for nm, v in verdict.items() if v != "ok")
        times = {}
        for order in (("cublas", "v5"), ("v5", "cublas")):
            tag = "cublas-first" if order[0] == "cublas" else "v5-first"
            for nm in order:
                times[(tag, nm)] = time_gpu(runs[nm], reps=args.reps, flush=flush, warmup_ms=wms).ms
        for nm, ms in alternate(runs, args.reps, wms).items():
            times[("alternate", nm)] = ms
        for (tag, nm), ms in times.items():
            rows.append({"m": m, "n": n, "k": k, "warmup_ms": wms, "repeat": rep, "method": tag, "stage": nm,
                         "ms_median": float(np.median(ms)), "samples": ms})
        del a, b, ref, mag, out
        cp.get_default_memory_pool().free_all_blocks()
    for tag in ("cublas-first", "v5-first", "alternate"):
        med = {nm: float(np.median([r["ms_median"] for r in rows if (r["m"], r["n"], r["k"], r["warmup_ms"]) == (m, n, k, wms)
                                     and r["method"] == tag and r["stage"] == nm])) for nm in entries}
        print(f"warmup {wms:g} ms {shape} {tag:12s}: v5 {med['v5'] * 1e3:7.2f} us  cuBLAS {med['cublas'] * 1e3:7.2f} us  "
              f"x cuBLAS {med['cublas'] / med['v5']:.3f}", flush=True)


for wms in (float(w) for w in args.warmup_ms.split(",")):
    for shape in args.shapes.split(","):
        probe(shape, wms)

path = save(args.out, "order-probe", {"reps": args.reps, "repeats": args.repeats, "shapes": args.shapes,
                                     "warmup_ms": args.warmup_ms},
            checks=bad, rows=rows)
print(f"wrote {path}; {len(bad)} failed checks", flush=True)
sys.exit(1 if bad else 0)
