"""Did the split in a cluster (SPLIT_CLUSTER, commit d948bdb) cost the load-sharing clusters
anything? Their kernel computes the CTA's place from the cluster rank differently since (rank =
%cluster_ctarank % CLUSTER), and its SASS changed (the SASS of builds without clusters did not).
Times v5 against v5 built from the kernel before it (scripts/probe_kernels/
v5_fused_epilogue_f64bc0a.cu, the same host rule) in interleaved rounds, both judged.

    python3 scripts/cluster_rank_probe.py [--rounds 5] [--reps 10] --out DIR  ->  DIR/cluster-rank-probe.json
"""
import argparse
import dataclasses
import os
import secrets
from pathlib import Path

import stages
from stages.core import contract, gpu
from stages.tools import verify
from stages.tools.timing import L2Flusher, tflops

from side_by_side import interleaved, prepare_judged, save  # scripts/side_by_side.py

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--shapes", default="4095x4097x4104,4096x4096x4104,1000x1000x1000,1000x1000x4104,4096x4096x4096")
args = p.parse_args()

V5 = stages.get("v5_fused_epilogue")
OLD = dataclasses.replace(V5, source=Path(__file__).resolve().parent / "probe_kernels" / "v5_fused_epilogue_f64bc0a.cu",
                          name="v5_fused_epilogue[f64bc0a]")
cp = gpu.cupy()
flush = L2Flusher(gpu.current().l2_bytes)
rows = []
for m, n, k in (tuple(map(int, s.split("x"))) for s in args.shapes.split(",")):
    entries = {"v5": V5, "v5-f64bc0a": OLD}
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    ref, mag = verify.reference(a, b, cp, contract.PLAIN)
    out = cp.empty((m, n), cp.float16)
    runs, checks = prepare_judged(entries, set(entries), a, b, out, {}, ref, mag, cp)
    med, samples = interleaved(runs, args.rounds, args.reps, flush)
    for name, ms in med.items():
        rows.append({"m": m, "n": n, "k": k, "variant": name, "ms_median": ms, "tflops": tflops(m, n, k, ms),
                     "samples": len(samples[name]), "check": checks.get(name)})
    print(f"{m}x{n}x{k}: " + "  ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in med.items())
          + "  | " + " ".join(f"{nm}:{c}" for nm, c in checks.items()), flush=True)
    del a, b, ref, mag, out
    cp.get_default_memory_pool().free_all_blocks()
print("wrote", save(args.out, "cluster-rank-probe", {"rounds": args.rounds, "reps": args.reps}, results=rows))
