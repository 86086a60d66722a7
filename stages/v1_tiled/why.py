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


ABLATION = {"default": "shipped: BM=BN=128, BK=16, 8x8 per thread, PAD=4",
            "PAD=0": "PAD=0: no padding (4-way bank conflicts on B)",
            "BK=32": "BK=32", "BK=32,TN=4": "BK=32, 8x4 per thread",
            "BM=64,BN=64,BK=32,TM=4,TN=4": "64x64 block, 4x4 per thread"}


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """v1's ideas taken apart in one run: the padding (PAD=0 brings 4-way bank conflicts on the
    compute loop's loads of B and costs 39%) and the per-thread tile (fewer outputs per thread:
    fewer FMAs per shared load)."""
    return plots.ablation_bars("v1_tiled", ax, ABLATION, "v1: padding and register tile, one run")
