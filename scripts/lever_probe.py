"""Where the last percent goes at the issue shapes (v4 README "Open questions", v5 README "Spills
since stream-K"): the shipped kernels against probe copies, timed in interleaved rounds so that
clock drift between variants cancels (every variant gets `--rounds` x `--reps` samples; the row is
their median).

v4_swizzle_pipeline, plain GEMM at 4096^3, 8192^3, 4096 x 14336 x 4096:
  v4            shipped (STREAMK=1)
  v4-dp         STREAMK=0
  v4-9c65b8b    the kernel before stream-K (scripts/probe_kernels/, commit 9c65b8b): was the
                data-parallel path slower after the refactor?
  v4-peel       shipped, the first k-block of a unit issued by its own unrolled copy (scale-d an
                immediate), as the pre-stream-K build's k-loop compiled
  v4-noepi      diagnostic, WRONG results: no epilogue at all (what the epilogue costs on the
                critical path: the most a ping-pong schedule could hide)
  v4-nowait1    diagnostic, may be WRONG: the second store pass does not wait for the first
                pass's store to have read the staging tile (what that wait costs)
  v4-dbl64      the same 32 KiB staging as two 64-column buffers per warpgroup, four passes:
                a pass waits only for the store two passes back (wait_group.read 1)
  v4-u2         the k-block loop unrolled by two (#pragma unroll 2): the loop shape the
                pre-stream-K build had (12 HGMMA in the SASS: first k-block peeled, two per trip)
  v4-i0         the k-block loops count i = 0 .. ke - kb (scale-d and the release test on i, as
                the pre-stream-K kernel's loop on kt from 0) instead of kt = kb .. ke
  (v4-h2, v4-h2-dp: the work list as two loops, whole units first with the k-range 0 .. k-blocks,
                then the stream-K pieces; measured as a probe copy in results/probes/20261130T131730,
                shipped since commit cf845e8, so now the same kernel as v4 and v4-dp)
  v4-borrow     EPI_BORROW=1: the second store pass staged in the tile's last ring buffer
  v4-defer      EPI_DEFER=1 (shipped since commit 48b367a's measurements): the second store pass
                rounded to fp16 in registers and staged and stored during the next tile's first
                k-block (v4-defer-dp: with STREAMK=0; v4-defer2: after the second k-block's
                wgmmas; v4-defer-u2: k-loop unrolled by 2; v4-nodefer: EPI_DEFER=0, the store
                passes back to back after the tile, as before)
  v4-nostore    diagnostic, WRONG results: the epilogue without its TMA stores (staging only)
  v4-s3e256     STAGES=3 with a whole-tile staging buffer (EPI_COLS=256: one store pass, no wait
                for the first pass's store between the two)
  v4-pp         PINGPONG=1: 128 x 128 tiles, each consumer warpgroup a whole tile on alternate
                tiles (one's epilogue under the other's mainloop); 6 ring buffers of 32 KiB
  v4-pp4        the same with 4 ring buffers
  v4-pp-c2      v4-pp with 2-CTA clusters (B multicast: the L2 -> SM bytes per FLOP of v4)
  v4-128        BN=128 without ping-pong (both warpgroups on one 128 x 128 tile), 6 buffers:
                what the smaller tile costs by itself
v5_fused_epilogue at 4096^3 and 8192^3:
  v5 / v5-dp    plain GEMM, shipped / STREAMK=0 (allowed for the plain GEMM in this probe only)
  v5-nodefer    v5 with EPI_DEFER=0 (plain, fused and small shapes)
  v5-u2         v5 with the k-block loop unrolled by two (as v4-u2), plain and fused
  v5[epi] / v5-nodefer[epi]  bias+gelu_tanh, bias+gelu, bias: shipped (EPI_DEFER=1: the last
                store pass staged during the next tile's first k-block) / EPI_DEFER=0 (v5-defer:
                EPI_DEFER=1 by name). (v5-inloop, fused per stmatrix, is in the records before
                commit ae76072; the pass body is store_pass now, which takes rounded values.)
  torch_addmm_gelu, torch_linear (when torch imports): the baselines of the fused goals.
v5 under one wave (fewer tiles than SMs: 128 x 14336 x 4096, 16 x 14336 x 4096, 1000^3, ...):
  v5            shipped: every SM launched and the units shared out by stream-K (sk_fills) where
                that leaves at least SK_FILL idle k-blocks per SM
  v5-fill1      SK_FILL=1: wherever a single wave leaves SMs idle
  v5-nofill     SK_FILL=0: one block per unit, the other SMs idle
v5 on small grids (M > 64 and fewer 128 x 128 tiles than SMs: 1000^3, 128 x 4096 x 4096, ...):
  v5            shipped (the shape rule: 128 x 128 tiles there)
  v5-n64        128 x 64 tiles (AUTO=0, 8 buffers): twice the tiles of 128 x 128 (1000^3: 128 for
                132 SMs; cuBLAS runs a 128 x 72 tile there, nvjet_sm90_hsh_72x128_64x8_2x4 in
                results/probes/20261130T140911-nvidia-h200-profile-1000x1000x1000.json)
  v5-n64-nofill the same without SK_FILL (one block per tile)
  v5-pf         shipped, the three tensor maps prefetched (prefetch.tensormap) before the barriers
                are set up, as CUTLASS does
  v5-128 / v4-128   the 128 x 128 tile with 6 buffers as a fixed choice (AUTO=0) / v4's kernel with
                the same tile (tile multiples only): what v5's generality costs at one tile
  v5-dp / v5-dp-nodefer   v5 built without stream-K (STREAMK=0, allowed in this probe only), with
                and without EPI_DEFER
v5 with narrow tiles ("bn"): BN = 112 and 32 (and 64, 128, 256) as fixed choices on the shapes
where the rule's tile leaves SMs idle, beside the shipped rule and cuBLAS
v5 with a split of K ("split"): v5-units (SPLIT_CLUSTER=1: the split by units and the reduce kernel;
  shipped v5 splits K in 2-CTA clusters at M <= 64 since b0e9e4d) against v5-fixup (SPLIT_FIXUP=1:
  the unit that completes a tile sums its partials) at the shapes the rule splits; fixed splits
  v5-s1 .. v5-s8 (AUTO=0, 64 x 128) at decode shapes
Decode ring depth ("ring"): v5-units (SPLIT_CLUSTER=1; A_ROWS 16 or 32 for M <= 32: 11 or 10 buffers) against v5-ring8
  (the same tile and split with 64 rows of A per buffer, 8 buffers), fill and clean flush
The bench's flush against a clean one ("clean"): cuBLAS and v5 after the 256 MiB fill (dirty L2)
  and after a read of the same buffer (L2Flusher(clean=True): a clean L2), at decode, prefill, 1000^3, 4096^3
v4 with and without 2-CTA clusters on small grids ("cluster": 1024^3, 1024 x 1024 x 4096, ...):
  v4-128 / v4-128-c2 / v4-256 / v4-256-c2   BN 128 (6 buffers) or 256, CLUSTER_M 1 or 2, beside v5
(The deferred pass activated under the next tile's wgmmas, DEFER_MATH=1, was the "defermath"
  section at commit 391b22b: results/probes/20261130T195241; measured slower, not kept.)
The split-K reduce kernel as a programmatic dependent launch ("pdl"): PDL=1 against PDL=0
Decode at M = 64 ("m64"): fewer splits, and 64 x 64 tiles split 2 or 4 ways, beside the rule
2-CTA clusters in v5 ("cluster5"): CLUSTER_M=2 on the rule's tile and on fixed tiles, small grids
Judged against float64 where the result is meant to be right; diagnostics are timed only.
    python3 scripts/lever_probe.py --out DIR      ->  DIR/lever-probe.json
"""
import argparse
import dataclasses
import os
import secrets
from pathlib import Path


import stages
import stages.v5_fused_epilogue as v5mod
from stages.core import contract, gpu
from stages.core.stage import cdiv
from stages.tools import verify
from stages.tools.timing import L2Flusher, tflops

from probe_copy import mutated  # scripts/probe_copy.py (this script's folder is on sys.path)
from side_by_side import interleaved, prepare_judged, refused_rows, save  # scripts/side_by_side.py

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=4)
p.add_argument("--only", default="fill,v4,v5")  # and "small"
p.add_argument("--small-shapes", default="", help="MxNxK,... for the small section instead of its list")
p.add_argument("--small", default="", help="variants of the small section to run (default: all)")
p.add_argument("--v4", default="v4,v4-dp,v4-9c65b8b,v4-peel,v4-noepi,v4-s3e256,v4-nowait1,v4-dbl64,v4-u2,v4-nostore,v4-i0")
args = p.parse_args()
HERE = Path(__file__).resolve().parent
V4 = stages.get("v4_swizzle_pipeline")
V5 = stages.get("v5_fused_epilogue")
# v5 with K split by units and summed by the reduce kernel: since the rule splits K in 2-CTA clusters
# at M <= 64 (b0e9e4d), shipped v5 runs no reduce kernel at the decode shapes these sections time
V5_UNITS = V5.variant(SPLIT_CLUSTER=1)


def v5_tile(bm, bn, splits=1, stages_=None, **kw):
    """v5 with a fixed tile (AUTO=0): the ring depth of v5's TILES unless given, `splits` splits of K."""
    return V5.variant(AUTO=0, BM=bm, BN=bn, STAGES=stages_ or v5mod.TILES[(bm, bn)], SPLIT_K=splits, **kw)
code4 = V4.code()
LOOP = ("          for (int kk = 0; kk < BK / 16; ++kk)\n"
        "            wgmma_tile(acc_h, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32), ((kt - kb) | kk) != 0);\n")
PEEL = ("          if (kt == kb) {\n#pragma unroll\n          for (int kk = 0; kk < BK / 16; ++kk)\n"
        "            wgmma_tile(acc_h, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32), kk != 0);\n"
        "          } else {\n#pragma unroll\n          for (int kk = 0; kk < BK / 16; ++kk)\n"
        "            wgmma_tile(acc_h, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32), 1);\n          }\n")
EPI = "      // ---- epilogue: accumulator layout of m64nN"
KLOOP = "      for (int kt = kb; kt < ke; ++kt, ++it) {\n        const int s = it % STAGES;\n        mbar_wait(full_bar"
I0 = [(KLOOP, "      for (int i = 0, n = ke - kb; i < n; ++i, ++it) {\n        const int s = it % STAGES;\n        mbar_wait(full_bar"),
      ("((kt - kb) | kk) != 0", "(i | kk) != 0"), ("if (kt > kb) release", "if (i > 0) release"),
      ("        for (int kt = kb; kt < ke; ++kt, ++it) {\n          const int s = it % STAGES;",
       "        for (int i = 0, n = ke - kb; i < n; ++i, ++it) {\n          const int kt = kb + i;\n          const int s = it % STAGES;")]
STORE2D = "            tma_store_2d(&tmap_c, epi + b * EPI_BOX_BYTES"
WAIT1 = "        if (leader) tma_store_wait_read();  // the previous pass's (or tile's) store has read the tile\n"
DBL64 = [("#define EPI_COLS 128", "#define EPI_COLS 64"),
         ("#define EPI_WG_BYTES (64 * EPI_COLS * 2)", "#define EPI_WG_BYTES (2 * 64 * EPI_COLS * 2)"),
         (WAIT1, "        const unsigned epib = epi + (pass % 2) * EPI_BOX_BYTES;  // two 64-column buffers\n"
                 "        if (leader) asm volatile(\"cp.async.bulk.wait_group.read 1;\\n\" ::: \"memory\");\n"),
         ("const unsigned addr = epi + (cj / 8)", "const unsigned addr = epib + (cj / 8)"),
         ("const unsigned box = epi + (jj / 8)", "const unsigned box = epib + (jj / 8)"),
         ("tma_store_2d(&tmap_c, epi + b * EPI_BOX_BYTES", "tma_store_2d(&tmap_c, epib + b * EPI_BOX_BYTES")]
# Built on demand (a probe copy whose text no longer matches the kernel fails only when asked for).
PP = {"PINGPONG": 1, "BN": 128, "STREAMK": 0}
v4_variants = {
    "v4": lambda: V4,
    "v4-dp": lambda: V4.variant(STREAMK=0),
    "v4-9c65b8b": lambda: dataclasses.replace(V4, source=HERE / "probe_kernels" / "v4_swizzle_pipeline_9c65b8b.cu",
                                      name="v4_swizzle_pipeline[9c65b8b]",
                                      arguments=lambda call: V4.arguments(call)[:-2]),
    "v4-peel": lambda: mutated(V4, "peel", [("#pragma unroll\n" + LOOP, PEEL)]),
    "v4-noepi": lambda: mutated(V4, "noepi", [(EPI, "      if (M > 0) return;  // DIAGNOSTIC: no epilogue\n" + EPI)]),
    "v4-s3e256": lambda: mutated(V4, "s3e256", [("#define EPI_COLS 128", "#define EPI_COLS 256")]).variant(STAGES=3),
    "v4-nowait1": lambda: mutated(V4, "nowait1", [(WAIT1, "        if (leader && pass == 0) tma_store_wait_read();  // DIAGNOSTIC\n")]),
    "v4-dbl64": lambda: mutated(V4, "dbl64", DBL64),
    "v4-u2": lambda: mutated(V4, "u2", [(KLOOP, "#pragma unroll 2\n" + KLOOP)]),
    "v4-nostore": lambda: mutated(V4, "nostore", [(STORE2D, "            if (M < 0) " + STORE2D.lstrip())]),
    "v4-i0": lambda: mutated(V4, "i0", I0),
    "v4-borrow": lambda: V4.variant(EPI_BORROW=1),
    "v4-defer": lambda: V4.variant(EPI_DEFER=1),
    "v4-nodefer": lambda: V4.variant(EPI_DEFER=0),
    "v4-defer-dp": lambda: V4.variant(EPI_DEFER=1, STREAMK=0),
    "v4-defer2": lambda: V4.variant(EPI_DEFER=2),
    "v4-defer-u2": lambda: mutated(V4, "u2", [(KLOOP, "#pragma unroll 2\n" + KLOOP)]).variant(EPI_DEFER=1),
    "v4-pp": lambda: V4.variant(**PP, STAGES=6),
    "v4-pp4": lambda: V4.variant(**PP, STAGES=4),
    "v4-pp-c2": lambda: V4.variant(**PP, STAGES=6, CLUSTER_M=2),
    "v4-128": lambda: V4.variant(BN=128, STREAMK=0, STAGES=6),
}
v4_judged = {"v4", "v4-dp", "v4-9c65b8b", "v4-peel", "v4-s3e256", "v4-dbl64", "v4-u2", "v4-i0", "v4-borrow",
             "v4-pp", "v4-pp4", "v4-pp-c2", "v4-128", "v4-defer", "v4-defer-dp", "v4-defer2", "v4-defer-u2", "v4-nodefer"}

KLOOP5 = "      for (; kt < kt_end; ++kt, ++it) {\n        const int s = it % STAGES;\n        mbar_wait(full_bar"
V5any = dataclasses.replace(V5, check_config=lambda c: None)
v5_variants = {
    "v5": V5,
    "v5-dp": V5any.variant(STREAMK=0),
    "v5-defer": V5.variant(EPI_DEFER=1),
    "v5-nodefer": V5.variant(EPI_DEFER=0),
    "v5-u2": mutated(V5, "u2", [(KLOOP5, "#pragma unroll 2\n" + KLOOP5)]),
}

cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
CUBLAS = stages.get("cublas")
torch_ok = True
try:
    import torch  # noqa: F401
except Exception:  # noqa: BLE001
    torch_ok = False
rows = []


def measure(m, n, k, entries, judged, epi=contract.PLAIN, label="plain", flusher=None):
    """entries: {name: stage}; all prepared on the same operands, timed in interleaved rounds."""
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    kw = {}
    if epi is not contract.PLAIN:
        kw = {"bias": epi.bias, "alpha": epi.alpha, "activation": epi.activation}
    ref, mag = verify.reference(a, b, cp, epi)
    out = cp.empty((m, n), cp.float16)
    runs, checks = prepare_judged(entries, judged, a, b, out, kw, ref, mag, cp)
    med, samples = interleaved(runs, args.rounds, args.reps, flusher or flush)
    rows += refused_rows(runs, checks, {"m": m, "n": n, "k": k, "epilogue": label, "x_first_baseline": None})
    base = med.get("cublas") or med.get("torch_addmm_gelu")
    for name, ms in med.items():
        rows.append({"m": m, "n": n, "k": k, "epilogue": label, "variant": name, "ms_median": ms,
                     "tflops": tflops(m, n, k, ms), "x_first_baseline": base / ms if base else None,
                     "samples": len(samples[name]), "check": checks.get(name, "not judged")})
    print(f"{m}x{n}x{k} {label}: " + "  ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in med.items())
          + "  | " + " ".join(f"{nm}:{c}" for nm, c in checks.items()), flush=True)
    del a, b, ref, mag, out
    cp.get_default_memory_pool().free_all_blocks()


only = set(args.only.split(","))
V4_SET = set(args.v4.split(","))
if "v4" in only:
    for shape in [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]:
        measure(*shape, {"cublas": CUBLAS, **{k: make() for k, make in v4_variants.items() if k in V4_SET},
                         "v5": V5, "v5-nodefer": v5_variants["v5-nodefer"]}, v4_judged | {"v5", "v5-nodefer", "cublas"})
if "v5" in only:
    for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        bias = (cp.random.default_rng(secrets.randbits(63)).standard_normal(n, dtype=cp.float32)).astype(cp.float16)
        for act in ("gelu_tanh", "gelu", None):
            epi = contract.Epilogue(bias=bias, alpha=1.0, activation=act)
            label = "bias" + (f"+{act}" if act else "")
            base = {}
            if torch_ok and act == "gelu_tanh":
                base["torch_addmm_gelu"] = stages.get("torch_addmm_gelu")
            if torch_ok:
                base["torch_linear"] = stages.get("torch_linear")
            measure(m, n, k, {**base, "v5": V5, "v5-nodefer": v5_variants["v5-nodefer"]}, {"v5", "v5-nodefer"}, epi, label)

PREFETCH = ("  if (threadIdx.x == 0) {\n    for (int s = 0; s < STAGES; ++s) {\n",
            "  if (threadIdx.x == 32) {  // PROBE: fetch the descriptors while thread 0 sets up barriers\n"
            "    asm volatile(\"prefetch.tensormap [%0];\" ::\"l\"(&tmap_a) : \"memory\");\n"
            "    asm volatile(\"prefetch.tensormap [%0];\" ::\"l\"(&tmap_b) : \"memory\");\n"
            "    asm volatile(\"prefetch.tensormap [%0];\" ::\"l\"(&tmap_c) : \"memory\");\n  }\n"
            "  if (threadIdx.x == 0) {\n    for (int s = 0; s < STAGES; ++s) {\n")
if "small" in only:
    N64 = {"AUTO": 0, "BM": 128, "BN": 64, "STAGES": 8}
    small = {"v5": V5, "v5-nodefer": v5_variants["v5-nodefer"], "v5-n64": V5.variant(**N64),
             "v5-n64-nofill": V5.variant(**N64, SK_FILL=0), "v5-pf": mutated(V5, "pf", [PREFETCH]),
             "v5-128": V5.variant(AUTO=0, BM=128, BN=128, STAGES=6),
             "v5-dp": v5_variants["v5-dp"], "v5-dp-nodefer": V5any.variant(STREAMK=0, EPI_DEFER=0),
             "v4-128": V4.variant(BN=128, STAGES=6)}  # (tile multiples only)
    small = {k: v for k, v in small.items() if k in set(args.small.split(","))} if args.small else small
    shapes = [tuple(map(int, x.split("x"))) for x in args.small_shapes.split(",") if x] or [
        (1000, 1000, 1000), (128, 4096, 4096), (256, 4096, 4096), (128, 14336, 4096),
        (1024, 1024, 1024), (1000, 1000, 4096), (2048, 1024, 1024), (4096, 4096, 4096)]
    for shape in shapes:
        measure(*shape, {"cublas": CUBLAS, **small}, set(small) | {"cublas"})

if "cluster" in only:
    # Small grids (fewer tiles than SMs): does sharing B between two CTAs by TMA multicast
    # (CLUSTER_M=2, v4 only: v5 refuses clusters) shorten a tile? cuBLAS runs 2 x 4 clusters at
    # 1000^3 (results/probes/20261130T140911-...-profile-1000x1000x1000.json).
    cl = {"v5": V5, "v4-128": V4.variant(BN=128, STAGES=6),
          "v4-128-c2": V4.variant(BN=128, STAGES=6, CLUSTER_M=2),
          "v4-256": V4, "v4-256-c2": V4.variant(CLUSTER_M=2)}
    for shape in [(1024, 1024, 1024), (1024, 1024, 4096), (2048, 1024, 1024), (1024, 2048, 2048), (2048, 2048, 1024)]:
        measure(*shape, {"cublas": CUBLAS, **cl}, set(cl) | {"cublas"})

if "fill" in only:
    # Waves under one (sk_fills): every SM launched and the units shared out by stream-K (SK_FILL=1,
    # the least idle work that triggers it) against a grid of one block per unit (SK_FILL=0).
    for shape in [(128, 14336, 4096), (64, 14336, 4096), (16, 14336, 4096), (1000, 1000, 1000),
                  (128, 4096, 4096), (256, 4096, 4096), (512, 4096, 4096), (100, 7001, 2048),
                  (40, 9000, 1000), (1024, 2048, 2048), (200, 3001, 4104), (40, 8448, 4096),
                  (128, 8192, 4096), (256, 2048, 8192)]:
        measure(*shape, {"cublas": CUBLAS, "v5": V5, "v5-fill1": V5.variant(SK_FILL=1),
                         "v5-nofill": V5.variant(SK_FILL=0)}, {"v5", "v5-fill1", "v5-nofill", "cublas"})

if "bn" in only:
    # Narrow tiles that fill one wave (kernel.cu: wgmma N = 112 and 32, stored directly; 96 and 80
    # were measured at commit ddb82b2, results/probes/20261130T*-bn, and dropped):
    # cuBLAS runs 112 x 128 tiles at 128 x 14336 x 4096 (128 tiles for 132 SMs) and 72 x 128 at
    # 1000^3 (results/probes/20261130T140934 and T140911 profiles). Each BN as a fixed choice
    # (AUTO=0, the ring depth of TILES, no split) beside the shipped rule and cuBLAS.
    plan_bn = {
        (128, 14336, 4096): [128, 112], (16, 14336, 4096): [128, 112], (64, 14336, 4096): [128, 112],
        (1, 4096, 4096): [32, 128], (1000, 1000, 1000): [128, 112, 64],
        (1024, 1024, 1024): [128, 112, 64], (1000, 1000, 4096): [128, 112, 64],
        (128, 4096, 4096): [112, 64], (256, 4096, 4096): [112, 64],
        (2048, 2048, 4096): [256, 128], (2048, 2048, 2048): [256, 128], (1536, 3072, 2048): [256, 128],
        # one wave of 128 x 256 tiles filled 55-97% against 128 x 128 (the rule's pick under one wave)
        (1536, 1536, 4096): [256, 128], (1536, 2048, 4096): [256, 128], (1792, 2048, 4096): [256, 128],
        (1920, 2048, 4096): [256, 128], (2048, 2048, 1024): [256, 128], (1792, 2048, 1024): [256, 128],
        (1536, 2048, 1024): [256, 128], (1664, 2048, 2048): [256, 128],
    }
    wanted = [tuple(map(int, x.split("x"))) for x in args.small_shapes.split(",") if x] or list(plan_bn)
    for shape in wanted:
        bm = 64 if shape[0] <= 64 else 128
        entries = {f"v5-bn{bn}": v5_tile(bm, bn) for bn in plan_bn.get(shape, [256, 128, 112] if shape[0] > 64 else [128, 112, 32])}
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **entries}, set(entries) | {"v5", "cublas"})

if "split" in only:
    # A split of K summed in the main kernel by the unit that completes each tile (SPLIT_FIXUP=1,
    # a knob) against the reduce kernel (SPLIT_FIXUP=0, shipped), at the shapes the rule splits;
    # and, on decode shapes, fixed splits (AUTO=0) with the reduce kernel beside the rule's choice.
    # (the split by units pinned, V5_UNITS, so that the two differ as named)
    fixed = {"v5-units": V5_UNITS, "v5-fixup": V5_UNITS.variant(SPLIT_FIXUP=1)}
    for shape in [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (1, 8192, 8192), (8, 2048, 8192),
                  (1, 4096, 14336), (33, 3000, 4104), (1, 1000, 1000)]:
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **fixed}, {"v5", "v5-units", "v5-fixup", "cublas"})
    for shape in [(16, 4096, 14336), (1, 4096, 14336), (16, 14336, 4096)]:
        forced = {f"v5-s{sp}": v5_tile(64, 128, sp) for sp in (1, 2, 4, 8)}
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **forced}, {"v5", "cublas", *forced})

if "ring" in only:
    # Decode with only the A rows that exist in each ring buffer (kernel.cu A_ROWS = 16 or 32 for
    # M <= 32: 11 or 10 buffers) against the same tile, split and call with 64 rows of A per
    # buffer (8 buffers: AUTO=0 with the rule's split), after the bench's fill and after a clean flush.
    clean = L2Flusher(dev.l2_bytes, clean=True)
    for shape in [(16, 14336, 4096), (1, 14336, 4096), (32, 14336, 4096), (1, 4096, 4096), (16, 4096, 14336),
                  (8, 2048, 8192), (64, 14336, 4096)]:
        # (the split by units on both sides, V5_UNITS: the same tile and split as the fixed build)
        splits = v5mod.shape_config(*shape, V5_UNITS.defines, dev)[3]
        entries = {"cublas": CUBLAS, "v5-units": V5_UNITS,
                   "v5-ring8": v5_tile(64, 128, splits)}
        measure(*shape, entries, {"v5-units", "v5-ring8", "cublas"}, label="plain, fill flush")
        if shape[1] == 14336 and shape[0] <= 16:
            measure(*shape, entries, {"v5-units", "v5-ring8", "cublas"}, label="plain, clean flush", flusher=clean)

if "explore" in only:
    # Configurations the rule does not pick, at the shapes where v5 is furthest behind cuBLAS:
    # fewer splits of K in decode (MAX_SPLITS), a split of K for M > 64 (AUTO=0), 64-row tiles
    # for M > 64, each beside the rule's choice (reduce kernel for every split).
    plans = {
        (1, 4096, 4096): {f"v5-max{s_}": V5.variant(MAX_SPLITS=s_) for s_ in (2, 4, 6)},
        (16, 4096, 14336): {f"v5-max{s_}": V5.variant(MAX_SPLITS=s_) for s_ in (2, 4, 6)},
        (1, 8192, 8192): {f"v5-max{s_}": V5.variant(MAX_SPLITS=s_) for s_ in (2, 3)},
        (128, 4096, 4096): {"128x64-s2": v5_tile(128, 64, 2), "128x128-s2": v5_tile(128, 128, 2),
                            "128x128-s4": v5_tile(128, 128, 4), "64x128": v5_tile(64, 128), "64x128-s2": v5_tile(64, 128, 2),
                            "128x64-nofill": v5_tile(128, 64, SK_FILL=0)},
        (256, 2048, 8192): {"128x64-s2": v5_tile(128, 64, 2), "128x128-s4": v5_tile(128, 128, 4),
                            "64x128": v5_tile(64, 128), "64x128-s2": v5_tile(64, 128, 2)},
        (1000, 1000, 1000): {"64x128": v5_tile(64, 128), "64x256": v5_tile(64, 256), "128x128-s2": v5_tile(128, 128, 2)},
        (1536, 2048, 4096): {"128x128": v5_tile(128, 128), "64x256": v5_tile(64, 256), "64x128": v5_tile(64, 128)},
        (1000, 1000, 4096): {"64x128": v5_tile(64, 128), "128x128-s2": v5_tile(128, 128, 2), "128x128": v5_tile(128, 128)},
    }
    for shape, entries in plans.items():
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **entries}, {"cublas", "v5", *entries})

if "smallgrid" in only:
    # M > 64 with fewer tiles than SMs: the rule's choice against a 64 x 128 tile (one consumer
    # warpgroup) with and without a split of K, and 128 x 128 tiles split to fill one wave.
    def one_wave(m, n, k, bm, bn):
        tiles = cdiv(m, bm) * cdiv(n, bn)
        nkt = cdiv(k, 64)
        return max(1, min(8, dev.sm_count // tiles, nkt // 4))
    for shape in [(128, 4096, 4096), (128, 4096, 8192), (128, 2048, 8192), (256, 2048, 4096), (256, 2048, 8192),
                  (256, 4096, 8192), (256, 1024, 16384), (512, 2048, 8192), (512, 1024, 4096), (1000, 1000, 4096),
                  (1024, 1024, 1024), (1024, 1024, 4096), (1000, 1000, 1000), (130, 5000, 5000), (384, 3000, 6000)]:
        m, n, k = shape
        s128, s64 = one_wave(m, n, k, 128, 128), one_wave(m, n, k, 64, 128)
        entries = {"64x128": v5_tile(64, 128),
                   f"64x128-s{s64}": v5_tile(64, 128, s64),
                   f"128x128-s{s128}": v5_tile(128, 128, s128)}
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **entries}, {"cublas", "v5", *entries})

if "wide" in only:
    # 128 x 192 tiles (wgmma N = 192, three 64-column store passes) where 128 x 256 tiles fill a
    # wave badly, beside 256 and 128 as fixed choices and the rule; and 64 x 64 tiles (13 ring
    # buffers) where 64 x 128 tiles fill half a wave.
    for shape in [(1536, 2048, 4096), (1536, 1536, 4096), (2048, 1536, 4096), (1280, 2304, 4096),
                  (1024, 2048, 4096), (3072, 3072, 4096), (1536, 2048, 1024), (1536, 2048, 16384),
                  (4096, 4096, 4096)]:
        entries = {"bn192": v5_tile(128, 192), "bn256": v5_tile(128, 256), "bn128": v5_tile(128, 128)}
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **entries}, {"cublas", "v5", *entries})
    for shape in [(128, 4096, 4096), (512, 1024, 4096), (256, 2048, 4096), (1000, 1000, 4096), (130, 5000, 5000),
                  (1024, 1024, 1024)]:
        entries = {"64x64": v5_tile(64, 64), "64x128": v5_tile(64, 128)}
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **entries}, {"cublas", "v5", *entries})

if "widecheck" in only:
    # Shapes the rule routes to 128 x 192 or 64 x 64 that the wide section did not time (odd N and
    # K, direct stores, a short K), beside the tile the rule of commit bddd219 took there.
    for shape, before in [((1300, 2048, 1000), (128, 256)), ((1500, 2000, 4104), (128, 256)),
                          ((1501, 1999, 1000), (128, 256)), ((1536, 1536, 1024), (128, 128)),
                          ((200, 2001, 4103), (64, 128)), ((130, 2001, 4099), (64, 128)),
                          ((384, 1024, 4096), (64, 128))]:
        name = f"before-{before[0]}x{before[1]}"
        measure(*shape, {"cublas": CUBLAS, "v5": V5, name: v5_tile(*before)}, {"cublas", "v5", name})

if "clean" in only:
    # The bench's flush (a 256 MiB fill) leaves the L2 full of dirty lines that the timed kernel
    # writes back while it streams its weights; the same shapes after a flush that leaves it clean.
    clean = L2Flusher(dev.l2_bytes, clean=True)
    for shape in [(1, 4096, 4096), (16, 14336, 4096), (128, 14336, 4096), (1000, 1000, 1000), (4096, 4096, 4096)]:
        measure(*shape, {"cublas": CUBLAS, "v5": V5}, {"v5", "cublas"}, label="plain, fill flush")
        measure(*shape, {"cublas": CUBLAS, "v5": V5}, {"v5", "cublas"}, label="plain, clean flush", flusher=clean)

# The fused epilogue's cost, taken apart (section "epimath"): diagnostics (timed only) without the
# bias staging's two consumer-wide barriers, or without the bias loads; and CUDA's activation forms
# (ACT_MATH=0), judged. (Until commit 13e568e this section also built two rewrites of those forms
# by text substitution, "lean" and "nmix"; v5's ACT_MATH=1 forms took their place: v5 README,
# "The activations: fewer instructions, one reciprocal for two".)
BIAS_STAGE = """      named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
#pragma unroll
      for (int i = 0; i < BIAS_PER_THREAD; ++i)
        if (consumer_tid + i * CONSUMER_THREADS < BN)
          asm volatile("st.shared.f32 [%0], %1;\\n" ::"r"(bias_base + 4 * (consumer_tid + i * CONSUMER_THREADS)), "f"(bias_reg[i]) : "memory");
      named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
"""
NOBAR = [(BIAS_STAGE, BIAS_STAGE.replace("      named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);\n", ""))]
BIAS_LD = ('    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\\n" : "=f"(bv.x), "=f"(bv.y) : "r"(bias_tile + 4 * (8 * (j0 + j) + 2 * t)));\n')
NOLD = [(BIAS_LD, "    bv = make_float2(1.0f, -1.0f);  // PROBE: no bias load\n")]
if "epimath" in only:
    em = {"v5": V5, "v5-nobar": mutated(V5, "nobar", NOBAR), "v5-nold": mutated(V5, "nold", NOLD),
          "v5-act0": V5.variant(ACT_MATH=0)}
    judged = {"v5", "v5-act0"}
    for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        bias = (cp.random.default_rng(secrets.randbits(63)).standard_normal(n, dtype=cp.float32)).astype(cp.float16)
        for act in ("gelu_tanh", "silu", None):
            epi = contract.Epilogue(bias=bias, alpha=1.0, activation=act)
            label = "bias" + (f"+{act}" if act else "")
            base = {"torch_addmm_gelu": stages.get("torch_addmm_gelu")} if torch_ok and act == "gelu_tanh" else {}
            measure(m, n, k, {**base, **em}, judged, epi, label)
        measure(m, n, k, {"cublas": CUBLAS, "v5": V5}, {"cublas", "v5"})
    for shape in [(1, 4096, 4096), (16, 4096, 4096), (1, 8192, 8192)]:
        # split K's two launches apart (diagnostics: the main kernel alone leaves C unwritten,
        # the reduce kernel alone sums stale partials)
        parts = {"v5-main": dataclasses.replace(V5_UNITS, plan=lambda call, k: v5mod.plan(call, k)[:1]),
                 "v5-reduce": dataclasses.replace(V5_UNITS, plan=lambda call, k: v5mod.plan(call, k)[1:])}
        measure(*shape, {"cublas": CUBLAS, "v5-units": V5_UNITS, **parts}, {"cublas", "v5-units"})

if "pdl" in only:
    # The split-K reduce kernel launched as a programmatic dependent of the main kernel (PDL=1:
    # its launch overlaps the main kernel, griddepcontrol.wait orders the reads) against a plain
    # launch after it (PDL=0), at the shapes the rule splits.
    for shape in [(1, 4096, 4096), (16, 4096, 4096), (1, 8192, 8192), (8, 2048, 8192), (1, 4096, 14336),
                  (33, 3000, 4104), (64, 4096, 4096), (128, 2048, 8192), (1, 1000, 1000)]:
        measure(*shape, {"cublas": CUBLAS, "v5-units": V5_UNITS, "v5-nopdl": V5_UNITS.variant(PDL=0)},
                {"cublas", "v5-units", "v5-nopdl"})

if "m64" in only:
    # Decode at M = 64 (0.80x cuBLAS in results/20261130T203836: 32 tiles of 64 x 128, 8 splits,
    # 256 units): fewer splits (MAX_SPLITS), and 64 x 64 tiles (twice the tiles) with 2 or 4 splits.
    for shape in [(64, 4096, 4096), (32, 4096, 4096)]:
        entries = {"v5-max2": V5.variant(MAX_SPLITS=2), "v5-max4": V5.variant(MAX_SPLITS=4),
                   "64x64-s2": v5_tile(64, 64, 2), "64x64-s4": v5_tile(64, 64, 4)}
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **entries}, {"cublas", "v5", *entries})

if "cluster5" in only:
    # 2-CTA clusters in v5 (CLUSTER_M=2: B multicast to two vertically adjacent tiles, edge tiles
    # included) where v5 trails cuBLAS on small grids; cuBLAS runs 2 x 4 clusters at 1000^3, whose
    # 2,000-byte rows cost v5 32% more L2 traffic than K = 1024 (README "Open questions").
    cl5 = {"v5-c2": V5.variant(CLUSTER_M=2), "128x128-c2": v5_tile(128, 128, CLUSTER_M=2),
           "64x128-c2": v5_tile(64, 128, CLUSTER_M=2), "128x64-c2": v5_tile(128, 64, CLUSTER_M=2),
           "64x128": v5_tile(64, 128), "128x64": v5_tile(128, 64)}
    shapes = [tuple(map(int, x.split("x"))) for x in args.small_shapes.split(",") if x] or [
        (1000, 1000, 1000), (1024, 1024, 1024), (1000, 1000, 1024), (1000, 1000, 4096),
        (1536, 1536, 4096), (512, 1024, 4096), (130, 5000, 5000), (999, 1001, 1000)]
    if args.small:  # named variants only; suffix -cM or -cMxN: CLUSTER_M = M (, CLUSTER_N = N) on that tile
        cl5 = {}
        for name in args.small.split(","):
            tile, _, cl = name.partition("-c")
            bm, bn = map(int, tile.split("x"))
            cm, _, cn = (cl or "1").partition("x")
            cl5[name] = v5_tile(bm, bn, CLUSTER_M=int(cm), CLUSTER_N=int(cn or 1))
    for shape in shapes:
        measure(*shape, {"cublas": CUBLAS, "v5": V5, **cl5}, {"cublas", "v5", *cl5})

save(args.out, "lever-probe", {"reps": args.reps, "rounds": args.rounds, "l2_flush": True, "interleaved": True},
     results=rows)
