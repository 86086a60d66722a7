"""Split K summed in a cluster (v5 kernel.cu SPLIT_CLUSTER) against the shape rule's split with the
reduce kernel, at decode shapes (v5 SHAPES.md "Split K: one kernel or two").

For each shape: cuBLAS, v5 (the rule: 64 x 128 tiles, K split up to 8 ways, the partials summed by
a second, programmatic-dependent kernel) and fixed variants `BNxS` (AUTO=0, BM 64, BN columns, S
CTAs per cluster each taking a 1/S range of the k-blocks, ranks 1.. handing their partial tiles to
rank 0 through distributed shared memory). Every variant is judged against float64 on the timed
operands, and each `BNxS` is also compared bit for bit with the same tile split S ways by units
and summed by the reduce kernel (AUTO=0, SPLIT_K=S): the same sums in the same order. Timed in
interleaved rounds (scripts/side_by_side.py).

    python3 scripts/split_cluster_probe.py [--rounds 5] [--reps 10] [--shapes MxNxK,...]
        [--variants 64x2,...] --out DIR   ->  DIR/split-cluster-probe.json
"""
import argparse
import os
import secrets

import stages
import stages.v5_fused_epilogue as v5mod
from stages.core import contract, gpu
from stages.tools import verify
from stages.tools.timing import L2Flusher, tflops

from side_by_side import interleaved, prepare_judged, refused_rows, save  # scripts/side_by_side.py

SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (1, 8192, 8192), (1, 4096, 14336), (8, 2048, 8192),
          (64, 4096, 4096), (16, 14336, 4096), (1, 1000, 1000)]
# BN x S -> STAGES with 16 rows of A per buffer (M <= 16): what fits 227 KiB next to the (S - 1)
# received partial tiles (64 x BN x 4 B each) and the staging tile (10 KiB per buffer at BN 64,
# 18 at 128). With 32 or 64 rows of A (M <= 32, M <= 64) `ring` below gives the depth that fits.
VARIANTS = {(64, 2): 18, (64, 4): 15, (64, 8): 9, (128, 2): 9, (128, 4): 5}


def ring(m, bn, s, stages_):
    """The depth for this M: as given for 16 rows of A, else as many as fit (a fp32 bias staged too)."""
    a_rows = v5mod.a_rows_for(m, 64, {**V5.defines, "AUTO": 0, "SPLIT_CLUSTER": s})
    if a_rows == 16:
        return stages_
    fixed_bytes = (s - 1) * 64 * bn * 4 + 64 * min(bn, 128) * 2 + bn * 4 + 1024 + 16
    return (232448 - fixed_bytes) // ((a_rows + bn) * 128 + 16)

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--shapes", default="")
p.add_argument("--variants", default="", help="BNxS,... (default: all)")
args = p.parse_args()

V5 = stages.get("v5_fused_epilogue")
cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s] or SHAPES
wanted = {tuple(map(int, v.split("x"))) for v in args.variants.split(",") if v} or set(VARIANTS)


def fixed(bn, s, stages_):
    return V5.variant(AUTO=0, BM=64, BN=bn, STAGES=stages_, SPLIT_K=1, SPLIT_CLUSTER=s)


rows = []
for m, n, k in shapes:
    entries = {"cublas": stages.get("cublas"), "v5": V5}
    for (bn, s), st in VARIANTS.items():
        if (bn, s) in wanted:
            entries[f"{bn}x{s}"] = fixed(bn, s, ring(m, bn, s, st))
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    ref, mag = verify.reference(a, b, cp, contract.PLAIN)
    out = cp.empty((m, n), cp.float16)
    runs, checks = prepare_judged(entries, set(entries), a, b, out, {}, ref, mag, cp)
    # bit for bit against the same tile split by units and summed by the reduce kernel
    same = {}
    for (bn, s), st in VARIANTS.items():
        name = f"{bn}x{s}"
        if name not in runs:
            continue
        eff = v5mod.split_cluster(m, n, k, {**V5.defines, "AUTO": 0, "SPLIT_CLUSTER": s}, dev)
        reduce = V5.variant(AUTO=0, BM=64, BN=bn, STAGES=v5mod.TILES[(64, bn)], SPLIT_K=eff)
        x = cp.full((m, n), float("nan"), cp.float16)
        y = cp.full((m, n), float("nan"), cp.float16)
        entries[name].gemm(a, b, out=x)
        reduce.gemm(a, b, out=y)
        same[name] = bool((x.view(cp.uint16) == y.view(cp.uint16)).all())
    med, samples = interleaved(runs, args.rounds, args.reps, flush)
    rows += refused_rows(runs, checks, {"m": m, "n": n, "k": k, "x_cublas": None, "stages": None})
    base = med.get("cublas")
    for name, ms in med.items():
        rows.append({"m": m, "n": n, "k": k, "variant": name, "ms_median": ms, "tflops": tflops(m, n, k, ms),
                     "stages": entries[name].defines["STAGES"] if name not in ("cublas", "v5") else None,  # (v5: by the rule)
                     "x_cublas": base / ms if base else None, "samples": len(samples[name]),
                     "check": checks.get(name, "not judged"), "bitwise_as_reduce_kernel": same.get(name)})
    print(f"{m}x{n}x{k}: " + "  ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in med.items())
          + "  | " + " ".join(f"{nm}:{c}" for nm, c in checks.items())
          + "  | bitwise " + " ".join(f"{nm}:{v}" for nm, v in same.items()), flush=True)
    del a, b, ref, mag, out
    cp.get_default_memory_pool().free_all_blocks()

print("wrote", save(args.out, "split-cluster-probe",
                   {"rounds": args.rounds, "reps": args.reps, "flush_bytes": flush.nbytes,
                    "stages_at_16_rows": {f"{bn}x{s}": st for (bn, s), st in VARIANTS.items()}}, results=rows))  # (each row: its own)
