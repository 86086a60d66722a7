"""v3_wgmma_tma's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

from stages.tools import plots


# ---- the walkthrough's declarations (notebooks/build.py reads them; see the README's recipe) ----
KNOB = {"BN": 128}
KNOB_QUESTION = (
    "Set `BN=128` (shipped: 256): each warpgroup's wgmma becomes m64n128k16 and a block's tile "
    "128 × 128. Predict: registers per thread (think of the accumulators), shared memory per "
    "block, and the number of HGMMA and of global stores (STG) in the SASS.")


def KNOB_ANSWER(shipped, variant, rep, rep_variant) -> str:
    d, v = shipped.defines, variant.defines
    return (f"**What changed.** Accumulators per thread BN/2: {d['BN'] // 2} → {v['BN'] // 2}, and "
            f"registers {rep.registers} → {rep_variant.registers}. Shared memory {rep.dynamic_smem:,} → "
            f"{rep_variant.dynamic_smem:,} B: STAGES × (BM + BN) × BK × 2 + 1,024 + 16 × STAGES. The "
            f"HGMMA count stays {rep.opcodes.get('HGMMA', 0)} → {rep_variant.opcodes.get('HGMMA', 0)} (BK/16 per "
            f"k-block, only each one's N shrinks); the epilogue's stores halve, {rep.opcodes.get('STG', 0)} → "
            f"{rep_variant.opcodes.get('STG', 0)} STG (two per 8 columns). The README's tuning says what "
            "that is worth in time.")


QUESTIONS = [
    ("How many wgmma does each warpgroup issue per k-block?",
     lambda st, rep: st.defines["BK"] // 16,
     "BK / 16 = {BK} / 16 = {value}: one m64n{BN}k16 per 16 of the 64 K."),
    ("How many bytes does the producer announce on `full[s]` (`expect_tx`)?",
     lambda st, rep: (st.defines["BM"] + st.defines["BN"]) * st.defines["BK"] * 2,
     "STAGE_BYTES = A_BYTES + B_BYTES = ({BM} + {BN}) × {BK} × 2 = {value}: the phase completes when TMA delivered all of them."),
    ("How many fp32 accumulator registers does each thread hold?",
     lambda st, rep: st.defines["BN"] // 2,
     "A warpgroup's m64n{BN} tile is 64 × {BN} fp32 over 128 threads: {value} each (`float acc[BN / 2]`)."),
    ("How many arrivals complete one phase of `empty[s]`?",
     lambda st, rep: (st.defines["BM"] // 64) * 128 // 32,
     "One per warp (`mbar_init(empty_bar + 8 * s, THREADS / 32)`): THREADS = (BM/64) × 128, so {value}."),
    ("How many bytes of dynamic shared memory does a block use?",
     lambda st, rep: st.defines["STAGES"] * (st.defines["BM"] + st.defines["BN"]) * st.defines["BK"] * 2
     + 1024 + 2 * 8 * st.defines["STAGES"],
     lambda st, rep: (f"STAGES × STAGE_BYTES + 1,024 (alignment to the swizzle period) + 2 × 8 × STAGES "
                      f"(barriers) = {rep.dynamic_smem:,} B per inspect.")),
]

DIAGRAMS = [("tma_swizzle", {}), ("ring_timeline", {"k_tiles": 6, "tiles": 2, "producer": "inline"})]


ABLATION = {"default": "shipped: BN=256, 4 buffers, grouped 8",
            "GROUP_M=1": "GROUP_M=1: launch order", "STAGES=3": "STAGES=3: 3 buffers",
            "BN=128": "BN=128: m64n128 tiles", "BREAK_FENCE=1": "BREAK_FENCE=1: wgmmas serialized"}


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """v3 taken apart in one run: the 128 x 256 tile (BN=128 re-reads A twice as often and loses
    15%), the 4-buffer ring (3 buffers lose 4-5%), the grouped order (launch order loses 1% at 4096³,
    6% at 8192³), and what happens when
    the compiler has to serialize the wgmmas (the break-it exercise without wgmma.fence: 13%)."""
    return plots.ablation_bars("v3_wgmma_tma", ax, ABLATION, "v3: tile, ring depth, order, fences, one run")
