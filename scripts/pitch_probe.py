"""The shape rule's clusters by K's row pitch (v5 README, "K's rows: sectors, not lines").

TMA reads 32-byte sectors. v5's rule took clusters wherever K % 64 != 0 (rows that are not whole
128-byte lines); the K sweep at M = N = 1000 (`final_device.sh kpitch`) says the cost is rows that
start 16 bytes into a sector (K % 16 == 8), and that clusters lose where rows are 32-byte aligned.
This probe times, for shapes with K % 16 == 0 and K % 64 != 0, the rule's choice now
(`sector_misaligned`) against the choice it made before (the same rule with K % 64 != 0 as the
test), both judged against float64, in interleaved rounds beside cuBLAS; and a few K % 16 == 8
shapes, where the two rules agree, as a control.

    python3 scripts/pitch_probe.py [--rounds 4] [--reps 10] [--shapes MxNxK,...] --out DIR
        ->  DIR/pitch-probe.json
"""
import argparse
import os
import secrets

import stages
import stages.v5_fused_epilogue as v5mod
from stages.core import contract, gpu
from stages.tools import inspect, verify
from stages.tools.timing import L2Flusher, tflops

from side_by_side import interleaved, prepare_judged, refused_rows, save  # scripts/side_by_side.py

SHAPES = [
    # 128 x 256 tiles (a wave at least two thirds full): pairs before, alone now
    (4096, 4096, 4112), (3000, 3000, 3024), (2048, 2048, 2064), (4095, 4097, 4112),
    # long K under two thirds of a wave: 2 x 2 clusters before
    (384, 3000, 6000), (1000, 1000, 4112), (130, 5000, 5008), (128, 14336, 4112), (512, 4096, 4112),
    # short K (16-31 k-blocks), one wave of 64 x 128: pairs before
    (1000, 1000, 1008), (999, 1001, 1008), (1024, 1024, 1008), (600, 1000, 1008), (1000, 1000, 1040),
    # control: K % 16 == 8, both rules the same
    (1000, 1000, 1000), (4095, 4097, 4104),
]

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=4)
p.add_argument("--shapes", default="", help="MxNxK,... instead of the list above")
args = p.parse_args()

V5 = stages.get("v5_fused_epilogue")
CUBLAS = stages.get("cublas")
cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)


def choice(m, n, k, misaligned):
    """(BM, BN, STAGES, splits, CLUSTER_M, CLUSTER_N) of the build a plain call gets (`defines_for`,
    so every branch of the rule counts) with `misaligned` as the rule's test of K's rows. A shape
    where the rule swaps the operands or splits K in a cluster is refused: `fixed` cannot build those."""
    keep = v5mod.sector_misaligned
    v5mod.sector_misaligned = misaligned
    v5mod._auto.cache_clear()
    v5mod._DECIDED.clear()  # (defines_for's answers are kept per call: decided again under this test)
    try:
        d = inspect.call_defines(V5, m, n, k, contract.PLAIN, dev)
        splits = v5mod.shape_config(m, n, k, V5.defines, dev)[3]
    finally:
        v5mod.sector_misaligned = keep
        v5mod._auto.cache_clear()
        v5mod._DECIDED.clear()
    if d["SWAP_AB"] or d["SPLIT_CLUSTER"] > 1:
        raise ValueError(f"{m}x{n}x{k}: the rule swaps the operands or splits K in a cluster there; "
                         "this probe builds only unswapped tiles split by units")
    return d["BM"], d["BN"], d["STAGES"], splits, d["CLUSTER_M"], d["CLUSTER_N"]


def fixed(cfg):
    bm, bn, st, splits, cm, cn = cfg
    return V5.variant(AUTO=0, BM=bm, BN=bn, STAGES=st, SPLIT_K=splits, CLUSTER_M=cm, CLUSTER_N=cn)


def label(cfg):
    bm, bn, _, splits, cm, cn = cfg
    return f"{bm}x{bn}" + (f"-c{cm}x{cn}" if cm * cn > 1 else "") + (f"-s{splits}" if splits > 1 else "")


shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s] or SHAPES
rows = []
for m, n, k in shapes:
    now = choice(m, n, k, v5mod.sector_misaligned)
    before = choice(m, n, k, lambda kk: kk % 64 != 0)
    entries = {"cublas": CUBLAS, "rule": V5}
    if before != now:
        entries["before"] = fixed(before)
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    ref, mag = verify.reference(a, b, cp, contract.PLAIN)
    out = cp.empty((m, n), cp.float16)
    runs, checks = prepare_judged(entries, set(entries), a, b, out, {}, ref, mag, cp)
    med, samples = interleaved(runs, args.rounds, args.reps, flush)
    rows += refused_rows(runs, checks, {"m": m, "n": n, "k": k, "config": None, "x_cublas": None})
    base = med.get("cublas")
    for name, ms in med.items():
        cfg = now if name == "rule" else before if name == "before" else None
        rows.append({"m": m, "n": n, "k": k, "variant": name, "config": label(cfg) if cfg else None,
                     "ms_median": ms, "tflops": tflops(m, n, k, ms),
                     "x_cublas": base / ms if base else None, "samples": len(samples[name]),
                     "check": checks.get(name, "not judged")})
    print(f"{m}x{n}x{k} (2K % 32 = {2 * k % 32}, 2K % 128 = {2 * k % 128}): "
          + "  ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in med.items())
          + f"  | rule {label(now)}" + (f", before {label(before)}" if before != now else " (unchanged)")
          + "  | " + " ".join(f"{nm}:{c}" for nm, c in checks.items()), flush=True)
    del a, b, ref, mag, out
    cp.get_default_memory_pool().free_all_blocks()

print("wrote", save(args.out, "pitch-probe", {"rounds": args.rounds, "reps": args.reps, "flush_bytes": flush.nbytes},
                   results=rows))
