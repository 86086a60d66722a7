"""v2_cp_async's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

import stages
from stages.tools import diagrams, plots


# ---- the walkthrough's declarations (notebooks/build.py reads them; see the README's recipe) ----
KNOB = {"STAGES": 2}
KNOB_QUESTION = (
    "Set `STAGES=2` (shipped: 3): a ring of two buffers, so the copies run only one tile ahead of "
    "the math. Predict: shared memory per block, the number of cp.async instructions (LDGSTS) in "
    "the SASS, registers, and the number of HMMA.")


def KNOB_ANSWER(shipped, variant, rep, rep_variant) -> str:
    d = shipped.defines
    per_tile = (d["BM"] + d["BN"]) * (d["BK"] // 8) // ((d["BM"] // d["WM"]) * (d["BN"] // d["WN"]) * 32)
    return (f"**What changed.** Shared memory {rep.dynamic_smem:,} → {rep_variant.dynamic_smem:,} B "
            f"(STAGES × (BM + BN) × BK × 2). LDGSTS {rep.opcodes.get('LDGSTS', 0)} → "
            f"{rep_variant.opcodes.get('LDGSTS', 0)}: the prologue's `for (s < STAGES - 1)` is unrolled, so "
            f"the SASS holds STAGES − 1 copies of `load_tile` plus the one in the loop, {per_tile} cp.async "
            f"each. The math does not change ({rep.opcodes.get('HMMA', 0)} → {rep_variant.opcodes.get('HMMA', 0)} "
            f"HMMA); registers {rep.registers} → {rep_variant.registers}. What a shallower ring costs is "
            "time, not instructions: the README's tuning table measured STAGES 3 and 4.")


QUESTIONS = [
    ("How many bytes of A and B does one block load per K tile?",
     lambda st, rep: (st.defines["BM"] + st.defines["BN"]) * st.defines["BK"] * 2,
     "(BM + BN) × BK fp16 = ({BM} + {BN}) × {BK} × 2 B = {value} B."),
    ("How many mma.sync (HMMA) does one warp issue per K tile?",
     lambda st, rep: (st.defines["WM"] // 16) * (st.defines["WN"] // 8) * (st.defines["BK"] // 16),
     lambda st, rep: (f"MI × NI per 16-deep step, BK/16 steps: ({st.defines['WM']}/16) × "
                      f"({st.defines['WN']}/8) × ({st.defines['BK']}/16); the SASS has "
                      f"{rep.opcodes.get('HMMA', 0)} HMMA (the loop body, unrolled).")),
    ("How many 16-byte cp.async does each thread issue per K tile?",
     lambda st, rep: (st.defines["BM"] + st.defines["BN"]) * (st.defines["BK"] // 8)
     // ((st.defines["BM"] // st.defines["WM"]) * (st.defines["BN"] // st.defines["WN"]) * 32),
     "A_LOADS + B_LOADS = (BM + BN) × CHUNKS / THREADS: (BM + BN) rows of BK/8 chunks shared by "
     "(BM/WM) × (BN/WN) × 32 threads: {value}."),
    ("In which physical 16-byte chunk (0-7) of its row does logical chunk 3 of row 5 sit?",
     lambda st, rep: diagrams.swizzle_offset(5, 3, st.defines["BK"]) % (st.defines["BK"] * 2) // 16,
     "`swizzle(row, chunk)`: chunk ^ (row & 7) = 3 ^ 5 = {value}."),
    ("How many bytes of dynamic shared memory does a block use?",
     lambda st, rep: st.defines["STAGES"] * (st.defines["BM"] + st.defines["BN"]) * st.defines["BK"] * 2,
     "STAGES × (BM + BN) × BK × 2 = {STAGES} × ({BM} + {BN}) × {BK} × 2 = {value} B (`gemm_smem_bytes`)."),
]

DIAGRAMS = [("warp_map", {}), ("swizzle_banks", {"compare": {"SWIZZLE": 0}})]


ABLATION = {"default": "shipped: swizzled, grouped 8, 3 buffers",
            "SWIZZLE=0": "SWIZZLE=0: plain rows (8-way ldmatrix conflicts)",
            "GROUP_M=1": "GROUP_M=1: launch order", "STAGES=2": "STAGES=2: 2 buffers",
            "STAGES=4": "STAGES=4: 4 buffers (one block per SM)"}


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """v2's four changes taken apart in one run: without the XOR swizzle ldmatrix meets 8-way bank
    conflicts and v2 falls to about a quarter of its speed; launch order instead of grouped order
    and 2 buffers instead of 3 change little at these sizes; 4 buffers (128 KiB) leave room for
    only one block per SM and lose 10-15%."""
    return plots.ablation_bars("v2_cp_async", ax, ABLATION, "v2: swizzle, block order, ring depth, one run")
