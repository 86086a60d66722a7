"""EPI_OVERLAP (v5 kernel.cu): a 128 x 256 tile's two column halves take turns at its ends, so that
each half's epilogue (alpha, bias, activation, store) runs while the other half's wgmmas do.

Every variant below is first judged against float64 (fresh inputs, NaN-poisoned output), then all
of a shape's variants are timed in interleaved rounds (clock drift cancels; each row is the median
of rounds x reps samples, the L2 flushed before each: --flushes fill, as the bench, and/or clean):
  v5          shipped
  v5-dp       STREAMK=0 (where the shipped build splits a last wave by stream-K, overlap cannot run)
  ovlD        EPI_OVERLAP=D (D = 1, 2, 3 k-blocks at each end), STREAMK as shipped: where the
              rule splits by stream-K the kernel is the shipped one
  ovlD-dp     EPI_OVERLAP=D with STREAMK=0: the overlap wherever the tile is 128 x 256
  K=V[:K=V]   any knobs by name, e.g. ACT_MATH=0 (the activations' CUDA forms)
  cublas / torch_addmm_gelu / torch_linear: the baselines of the issue's goals, same operands
The kernels are compiled first, in parallel processes (NVRTC, the disk cache), so that the GPU
time goes to running them.
    python3 scripts/overlap_probe.py --out DIR   ->  DIR/overlap-probe.json
"""
import argparse
import os
import secrets
import sys

import stages
from stages.core import gpu
from stages.tools import bench, inspect, records, verify
from stages.tools.timing import L2Flusher, tflops

from side_by_side import compile_all, defines_of, interleaved, prepare_judged, refused_rows, save  # scripts/side_by_side.py (this script's folder is on sys.path)

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=4)
p.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,4096x14336x4096,4096x4096x1024,2048x2048x4096")
p.add_argument("--epilogues", default="plain,bias,bias+relu,bias+gelu_tanh,bias+gelu,bias+silu")
p.add_argument("--variants", default="v5,v5-dp,ovl1-dp,ovl2-dp,ovl3-dp")
p.add_argument("--verify-shapes", default="3001x4096x1000,2500x2056x777,4095x4096x4104,1000x8192x392",
               help="odd shapes (128 x 256 tiles, several per CTA) verified for every variant and epilogue")
p.add_argument("--repeat", type=int, default=2, help="fresh-input repeats of the odd-shape checks")
p.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
p.add_argument("--flushes", default="fill", help="the L2 flush before each launch: fill (the bench's, leaves dirty "
               "lines), clean (a read: the L2 left clean), or both, comma-separated; each timed in turn")
args = p.parse_args()

V5 = stages.get("v5_fused_epilogue")


def variant(name):
    if name == "v5":
        return V5
    if "=" in name:  # knobs by name, ":" between them: ACT_MATH=0, EPI_OVERLAP=2:STREAMK=0
        return V5.variant(**{k: int(v) for k, v in (kv.split("=") for kv in name.split(":"))})
    kw = {}
    if name.endswith("-dp"):
        kw["STREAMK"] = 0
        name = name[:-3]
    if name.startswith("ovl"):
        kw["EPI_OVERLAP"] = int(name[3:])
    elif name != "v5":  # (any other name would time the shipped kernel under it)
        raise ValueError(f"unknown variant {name!r}: v5, K=V[:K=V...], ovlD, each optionally -dp, or a baseline")
    return V5.variant(**kw)


def parse_shape(s):
    return tuple(int(x) for x in s.lower().split("x"))


def epilogue(label, n, cp):
    """(kwargs for gemm, contract.Epilogue) of a label in bench's spelling (plain, bias,
    bias+gelu, ...), with a fresh float16 N(0, 1) bias where it names one."""
    es = records.parse_epilogue(label)
    bias = bench.random_bias(n, secrets.randbits(63), cp) if es.bias else None
    return es.kwargs(bias), es.epilogue(bias)


cp = gpu.cupy()
dev = gpu.current()
arch = gpu.compile_arch(dev, V5.requires)
shapes = [parse_shape(s) for s in args.shapes.split(",") if s]
vshapes = [parse_shape(s) for s in args.verify_shapes.split(",") if s]
labels = args.epilogues.split(",")
names = args.variants.split(",")
# The baselines are timed beside the variants where they compute the epilogue (BASE, below), never
# as variants: `variant` would build v5's shipped kernel for the name "cublas", which the timing of a
# fused epilogue (where cuBLAS computes none) then printed under cuBLAS's name (so did every probe
# before 2026-12-04T20:10: its "cublas" rows with an epilogue other than plain are v5's shipped build).
BASELINES = ("cublas", "torch_addmm_gelu", "torch_linear")
stages_by_name = {nm: variant(nm) for nm in names if nm not in BASELINES}

# ---- compile everything first, in parallel ---------------------------------------------------
jobs = {}
for (m, n, k) in shapes + vshapes:
    for label in labels:
        _, epi = epilogue(label, n, cp)
        for st in stages_by_name.values():
            d = defines_of(st, m, n, k, epi, dev)
            jobs[tuple(sorted(d.items()))] = (st.code(), st.base_name, arch, d)
compile_all(jobs.values(), args.jobs)

rows, checks = [], []
flushers = {f: L2Flusher(dev.l2_bytes, clean=(f == "clean")) for f in args.flushes.split(",")}
BASE = {"plain": ["cublas"], "bias+gelu_tanh": ["torch_addmm_gelu", "torch_linear"]}
try:
    import torch  # noqa: F401
    torch_ok = True
except Exception:  # noqa: BLE001
    torch_ok = False

# ---- odd shapes: every variant and epilogue judged, fresh inputs each repeat --------------------
for (m, n, k) in vshapes:
    for label in labels:
        for _ in range(args.repeat):
            kw, epi = epilogue(label, n, cp)
            a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
            ref, mag = verify.reference(a, b, cp, epi)
            for nm, st in stages_by_name.items():
                out = cp.full((m, n), float("nan"), cp.float16)
                st.gemm(a, b, out, **kw)
                cp.cuda.get_current_stream().synchronize()
                chk = verify.judge_output(verify.Check(nm, m, n, k, 0), out, ref, mag, cp)
                checks.append({"m": m, "n": n, "k": k, "epilogue": label, "variant": nm,
                               "overlap": defines_of(st, m, n, k, epi, dev)["EPI_OVERLAP"],
                               "passed": bool(chk.passed), "reason": chk.reason})
    bad = [c for c in checks if not c["passed"] and (c["m"], c["n"], c["k"]) == (m, n, k)]
    print(f"verify {m}x{n}x{k}: {'all passed' if not bad else f'{len(bad)} FAILED'}", flush=True)
    cp.get_default_memory_pool().free_all_blocks()

# ---- timing -------------------------------------------------------------------------------------
for (m, n, k) in shapes:
    for label in labels:
        kw, epi = epilogue(label, n, cp)
        a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
        ref, mag = verify.reference(a, b, cp, epi)
        out = cp.empty((m, n), cp.float16)
        entries = {nm: stages_by_name[nm] for nm in names if nm in stages_by_name}
        for base in BASE.get(label, ["torch_linear"] if label != "plain" else []):
            if base == "cublas" or torch_ok:
                entries[base] = stages.get(base)
        runs, verdict = prepare_judged(entries, set(entries), a, b, out, kw, ref, mag, cp)
        ovl = {nm: defines_of(stages_by_name[nm], m, n, k, epi, dev)["EPI_OVERLAP"]
               for nm in runs if nm in stages_by_name}
        # variants that build one kernel here (a per-call knob this call drops, or an A/A twin): named
        same = {nm: group[0] for group in inspect.same_builds({nm: stages_by_name[nm] for nm in runs if nm in stages_by_name},
                                                             m, n, k, epi, dev) for nm in group[1:]}
        rows += refused_rows(runs, verdict, {"m": m, "n": n, "k": k, "epilogue": label, "overlap": None, "flush": None})
        for fname, flush in flushers.items():
            med, samples = interleaved(runs, args.rounds, args.reps, flush)
            for nm, ms in med.items():
                rows.append({"m": m, "n": n, "k": k, "epilogue": label, "variant": nm, "ms_median": ms,
                             "tflops": tflops(m, n, k, ms), "samples": len(samples[nm]),
                             "check": verdict[nm], "overlap": ovl.get(nm), "flush": fname,
                             "same_kernel_as": same.get(nm)})
            print(f"{m}x{n}x{k} {label}" + (f" ({fname} flush)" if len(flushers) > 1 else "") + ": "
                  + "  ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in med.items())
                  + "  | " + " ".join(f"{nm}:{c}" for nm, c in verdict.items() if c != "ok")
                  + "".join(f"  ({nm}: {twin}'s kernel)" for nm, twin in same.items()), flush=True)
        del a, b, ref, mag, out
        cp.get_default_memory_pool().free_all_blocks()

path = save(args.out, "overlap-probe", {"reps": args.reps, "rounds": args.rounds, "variants": names, "repeat": args.repeat,
                                      "flushes": list(flushers)},
            checks=checks, rows=rows)
failed = [c for c in checks if not c["passed"]] + [r for r in rows if r["check"] not in ("ok",)]
print(f"wrote {path}; {len(checks)} odd-shape checks, {len(failed)} failures or unavailable", flush=True)
sys.exit(1 if failed else 0)
