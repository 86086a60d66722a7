"""Where the CPU baseline's gap to numpy comes from on a many-core host (cpu_reference/README.md,
"Measured": 0.48-0.54x numpy on the H200 host's 16-core Xeon, 0.93-0.96x on the 2-core VM its
blocking was tuned on). One process, the protocol of stages/tools/cpu_bench.py (fresh inputs,
a 0.3 s pause and one untimed call before each timed call, the best of the rounds, each output
checked against float64):

* threads: numba's GEMM with 1, 2, 4, ... up to every core (numba.set_num_threads), numpy at
  the same counts where threadpoolctl can set its BLAS's threads (else at its own default);
* blocking: every core, the run-time block sizes (MC, KC, NC; cpu_reference/gemm.py's
  tunables, read at call time) around the shipped ones.

    python scripts/cpu_probe.py --out probe.json [--shapes 1024,2048] [--rounds 5]
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import secrets
import subprocess
import time

import numba
import numpy as np

import cpu_reference
from stages.tools.cpu_bench import _operands, _rel_err as rel_err

G = importlib.import_module("cpu_reference.gemm")  # the module (cpu_reference.gemm is its function)

BLOCKINGS = [  # (MC, KC, NC); the first is the shipped one
    (64, 2048, 1024), (64, 1024, 1024), (64, 512, 1024), (64, 256, 1024),
    (128, 512, 1024), (128, 256, 1024), (256, 256, 1024), (32, 2048, 1024),
    (64, 2048, 4096), (64, 512, 4096), (128, 512, 4096),
]


def blas_limits():
    try:
        from threadpoolctl import threadpool_limits, threadpool_info
        return threadpool_limits, threadpool_info()
    except ImportError:
        return None, None


def cpu_info() -> dict:
    info = {"processor": platform.processor(), "cores": os.cpu_count(),
            "numba": numba.__version__, "numpy": np.__version__,
            "numba_threading_layer": None, "numba_host_cpu": None}
    with contextlib.suppress(Exception):
        info["lscpu"] = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    with contextlib.suppress(Exception):
        import llvmlite.binding as ll
        info["numba_host_cpu"] = ll.get_host_cpu_name()
    return info


def timed(call, rounds: int, pause: float) -> list[float]:
    out = []
    for _ in range(rounds):
        time.sleep(pause)
        call()
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default="1024,2048")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pause", type=float, default=0.3)
    args = ap.parse_args()
    limits, pools = blas_limits()
    record = {"note": "", "cpu": cpu_info(), "blas": pools, "rows": []}
    cores = numba.config.NUMBA_NUM_THREADS
    counts = sorted({c for c in (1, 2, 4, 8, 16, 32, 64) if c <= cores} | {cores})
    shipped = (G.MC, G.KC, G.NC)

    def row(kind, size, threads, blocking, samples, err):
        best = min(samples)
        r = {"kind": kind, "size": size, "threads": threads, "blocking": blocking,
             "ms_best": round(best, 3), "ms_median": round(float(np.median(samples)), 3),
             "gflops": round(2 * size ** 3 / best / 1e6, 1), "rel_err": err}
        record["rows"].append(r)
        print(json.dumps(r), flush=True)

    for size in [int(s) for s in args.shapes.split(",")]:
        a, b = _operands(size, size, size, secrets.randbits(63))
        ref = a.astype(np.float64) @ b.astype(np.float64).T
        c = np.full((size, size), np.nan, np.float32)
        for threads in counts:
            numba.set_num_threads(threads)
            c[:] = np.nan
            samples = timed(lambda: cpu_reference.gemm(a, b, c), args.rounds, args.pause)
            row("numba", size, threads, shipped, samples, rel_err(c, ref))
            if not limits and threads != cores:
                continue  # numpy's BLAS threads cannot be set here: timed once, at its default
            with limits(limits=threads) if limits else contextlib.nullcontext():
                c[:] = np.nan
                samples = timed(lambda: np.matmul(a, b.T, out=c), args.rounds, args.pause)
            row("numpy" if limits else "numpy (its default threads)", size, threads, None, samples,
                rel_err(c, ref))
        numba.set_num_threads(cores)
        for mc, kc, nc in BLOCKINGS:
            G.MC, G.KC, G.NC = mc, kc, nc
            try:
                c[:] = np.nan
                samples = timed(lambda: cpu_reference.gemm(a, b, c), args.rounds, args.pause)
                row("numba", size, cores, (mc, kc, nc), samples, rel_err(c, ref))
            finally:
                G.MC, G.KC, G.NC = shipped
    with contextlib.suppress(Exception):
        record["cpu"]["numba_threading_layer"] = numba.threading_layer()
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
