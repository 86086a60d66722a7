"""v0_naive's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

from stages.tools import diagrams, plots


# ---- the walkthrough's declarations (notebooks/build.py reads them; see the README's recipe) ----
# "Predict first": one define changed, both builds inspected side by side (timed too on a GPU).
KNOB = {"BLOCK_N": 8}
KNOB_SHAPE = (2048, 2048, 2048)   # v0 is slow: time the pair at 2048^3
KNOB_QUESTION = (
    "Set `BLOCK_N=8` (shipped: 32). A block becomes 8 × 8 threads, so the 32 lanes of a warp cover "
    "8 columns × 4 rows of C instead of 32 columns × 1 row. Predict before you run the cell: do the "
    "registers, the shared memory or the SASS mix change? How many different 128-byte lines does "
    "one warp-wide load of B touch now, and one of A? Which way should the time go on a GPU?")


def KNOB_ANSWER(shipped, variant, rep, rep_variant) -> str:
    a, b = diagrams.naive_warp_lines(shipped.defines), diagrams.naive_warp_lines(variant.defines)
    same = rep.opcodes == rep_variant.opcodes and rep.registers == rep_variant.registers
    return (f"**What changed.** The compiled kernel is {'the same' if same else 'not the same'}: "
            f"{rep.registers} → {rep_variant.registers} registers, {rep.total_instructions} → "
            f"{rep_variant.total_instructions} SASS instructions (`BLOCK_N` only sets the block's shape). "
            f"What moves is the address pattern of a warp: one load of B touches {a['b_count']} → "
            f"{b['b_count']} lines, one load of A {a['a_count']} → {b['a_count']}. L1 serves one line "
            f"per cycle (README, *count the loads*), so a warp's pair of loads costs "
            f"{a['a_count'] + a['b_count']} → {b['a_count'] + b['b_count']} cycles. The diagram under "
            "the load part of the kernel draws both.")


# Self-checks: (question, value from the stage and its inspect report, explanation).
QUESTIONS = [
    ("How many threads does one block have?",
     lambda st, rep: st.defines["BLOCK_N"] * st.defines["BLOCK_M"],
     "BLOCK_N × BLOCK_M = {BLOCK_N} × {BLOCK_M} = {value}: one thread per element of C."),
    ("At K = 4096, how many different 128-byte lines does one warp-wide load of B touch?",
     lambda st, rep: diagrams.naive_warp_lines(st.defines)["b_count"],
     "Lane x reads row n + x of B, and rows are K × 2 = 8,192 bytes apart: every lane is in a line "
     "of its own, {value} lines, so {value} L1 cycles for one load instruction."),
    ("How many global loads (LDG) does the SASS have per FFMA?",
     lambda st, rep: rep.opcodes.get("LDG", 0) / max(rep.opcodes.get("FFMA", 0), 1),
     lambda st, rep: (f"Two: one element of A and one of B per multiply-add (the SASS: "
                      f"{rep.opcodes.get('LDG', 0)} LDG for {rep.opcodes.get('FFMA', 0)} FFMA in the unrolled loop).")),
    ("Arithmetic intensity: FLOP per byte requested from global memory?",
     lambda st, rep: 2 / (2 * 2),
     "One multiply-add is 2 FLOP and reads two fp16 values, 4 bytes: {value} FLOP/byte."),
]

# Diagrams drawn from the kernel's own arithmetic (stages/tools/diagrams.py), for these defines.
DIAGRAMS = [("warp_lines", {"compare": {"BLOCK_N": 8}})]


ABLATION = {"default": "MAP=0 (shipped): lanes along N, B rows scattered",
            "MAP=1": "MAP=1: lanes along M, A rows scattered",
            "MAP=2": "MAP=2: lanes along K, coalesced, shuffle sum"}


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """Which index the 32 lanes of a warp walk decides how many cache lines each warp-wide load
    touches (MAP, measured in one run): along N or M every load of the scattered operand touches
    32 lines and the speed is the same; along K the warp reads 2 lines per 32 multiply-adds and
    runs about 9x faster. The per-line cost is measured by probes/l1_wavefront.py (32 lines: 32
    cycles, 1 line: 1)."""
    return plots.ablation_bars("v0_naive", ax, ABLATION, "v0: which index the lanes walk (coalescing), one run")
