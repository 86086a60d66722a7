"""v1_tiled's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

import stages
from stages.tools import diagrams, plots
from stages.tools.bench import datasheet

SHAPE = (4096, 4096, 4096)


# ---- the walkthrough's declarations (notebooks/build.py reads them; see the README's recipe) ----
KNOB = {"MIN_BLOCKS": 2}
KNOB_QUESTION = (
    "Set `MIN_BLOCKS=2` (shipped: 1). The kernel is declared `__launch_bounds__(THREADS, MIN_BLOCKS)`: "
    "ptxas must now fit two blocks of THREADS threads on one SM, so each thread may keep half as "
    "many registers. Predict: registers per thread, spills (local-memory traffic: STL/LDL in the "
    "SASS), shared memory per block, and the number of FFMA.")


def KNOB_ANSWER(shipped, variant, rep, rep_variant) -> str:
    d = shipped.defines
    return (f"**What changed.** Registers {rep.registers} → {rep_variant.registers}; spill stores "
            f"{rep.spill_stores} → {rep_variant.spill_stores} B, local-memory instructions "
            f"{rep.opcodes.get('STL', 0) + rep.opcodes.get('LDL', 0)} → "
            f"{rep_variant.opcodes.get('STL', 0) + rep_variant.opcodes.get('LDL', 0)}. The source alone asks "
            f"for TM × TN = {d['TM'] * d['TN']} accumulators plus TM float4 of A ({4 * d['TM']}) per step, "
            "and the shipped build also runs shared loads ahead of the FFMAs; squeezed, it spills. "
            f"Shared memory does not move ({rep.dynamic_smem:,} → {rep_variant.dynamic_smem:,} B: it depends "
            f"on BM, BN, BK and PAD only), nor does the math ({rep.opcodes.get('FFMA', 0)} → "
            f"{rep_variant.opcodes.get('FFMA', 0)} FFMA).")


QUESTIONS = [
    ("How many bytes of A and B does one block load from global memory per K tile?",
     lambda st, rep: (st.defines["BM"] + st.defines["BN"]) * st.defines["BK"] * 2,
     "(BM + BN) × BK fp16 = ({BM} + {BN}) × {BK} × 2 B = {value} B, as 16-byte loads."),
    ("How many bytes of dynamic shared memory does a block use?",
     lambda st, rep: 2 * (st.defines["BM"] + st.defines["BN"]) * (st.defines["BK"] + st.defines["PAD"]) * 4,
     lambda st, rep: (f"`gemm_smem_bytes = 2 * (BM + BN) * LDS * 4`: two buffers of BM + BN rows of "
                      f"LDS = BK + PAD = {st.defines['BK'] + st.defines['PAD']} fp32 values "
                      f"(inspect: {rep.dynamic_smem:,} B).")),
    ("How many FFMA does one thread execute per K tile?",
     lambda st, rep: st.defines["TM"] * st.defines["TN"] * st.defines["BK"],
     "TM × TN outputs × BK multiply-adds each: {TM} × {TN} × {BK} = {value}."),
    ("How many registers per thread does the compiler give the shipped kernel (inspect)?",
     lambda st, rep: rep.registers,
     lambda st, rep: (f"`inspect` reports {rep.registers}; TM × TN = {st.defines['TM'] * st.defines['TN']} "
                      "of them are the accumulators (README, *Tuning*, accounts for the rest).")),
    ("With PAD = 0, how many different addresses meet in one bank in a quarter-warp of the compute "
     "loop's 16-byte loads of B (the conflict degree)?",
     lambda st, rep: max(diagrams.conflict_ways(diagrams.padded_b_addresses({**st.defines, "PAD": 0}), 16)),
     "With rows of BK = {BK} floats, row r starts on bank (r × {BK}) % 32: eight consecutive rows "
     "share a few 4-bank groups, a {value}-way conflict; with PAD = {PAD} all eight groups differ "
     "(the bank diagram)."),
]

DIAGRAMS = [("thread_map", {}), ("banks_padded", {"compare": {"PAD": 0}})]


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """Tiling raises the FLOP per byte requested from global memory by 126x (left); the speed
    (right) rises from v0's 0.5 TFLOP/s to 41, below the CUDA cores' fp32 FMA roof: 61% of the
    datasheet's 66.9 TFLOP/s and 75% of what a pure FFMA loop measured on this GPU."""
    if ax is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    else:
        axes = ax
    best = plots.latest(recs, gpu_substring)
    names = ["v0_naive", "v1_tiled"]
    colors = plots.STAGE_COLORS[:2]
    ai = [plots.intensity(stages.get(n), *SHAPE) for n in names]
    tf = [(best.get((n, *SHAPE)) or {}).get("tflops", 0) for n in names]
    axes[0].bar(names, ai, color=colors)
    axes[0].set_yscale("log")
    axes[0].set_ylim(min(ai) / 2, max(ai) * 4)
    axes[0].set_ylabel("FLOP per byte requested (4096³)")
    axes[0].set_title("data reuse from the tiling")
    for i, v in enumerate(ai):
        axes[0].annotate(f"{v:.1f} FLOP/B", (i, v), ha="center", va="bottom")
    axes[1].bar(names, tf, color=colors)
    meas = plots.ceilings(recs, gpu_substring) or {}
    fp32 = (meas.get("datasheet") or datasheet(gpu_substring))["fp32_tflops"]
    axes[1].axhline(fp32, ls="--", color="#1565c0", label=f"fp32 FMA, datasheet: {fp32} TFLOP/s")
    if meas:
        axes[1].axhline(meas["fp32_ffma_tflops"], color="#c62828",
                        label=f"fp32 FFMA loop, measured: {meas['fp32_ffma_tflops']:.1f} TFLOP/s")
    axes[1].set_yscale("log")
    axes[1].set_ylim(min(v for v in tf if v) / 3 if any(tf) else 0.1, fp32 * 12)
    axes[1].set_ylabel("TFLOP/s (4096³)")
    axes[1].set_title("speed against the CUDA-core roof")
    axes[1].legend(fontsize=8, loc="upper left")
    for i, v in enumerate(tf):
        axes[1].annotate(f"{v:.1f} TFLOP/s", (i, v), ha="center", va="bottom")
    return axes
