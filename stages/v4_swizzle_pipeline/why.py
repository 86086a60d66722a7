"""v4_swizzle_pipeline's "why" figure, for its walkthrough notebook (a tool-side companion)."""
from stages.core import gpu
from stages.tools import plots

# The ablation ladder: a variant's overrides -> what that rung adds (the README's table and this
# figure use these names; `python -m stages tune v4_swizzle_pipeline --variant ...` runs them).
LADDER = {
    "PERSISTENT=0,ORDER=1,TMA_STORE=0,CLUSTER_M=1,GROUP_M=8,STREAMK=0": "+ warp specialization, setmaxnreg",
    "PERSISTENT=1,ORDER=1,TMA_STORE=0,CLUSTER_M=1,GROUP_M=8,STREAMK=0": "+ persistent grid (grouped 8)",
    "PERSISTENT=1,ORDER=1,TMA_STORE=1,CLUSTER_M=1,GROUP_M=8,STREAMK=0,EPI_DEFER=0": "+ TMA-store epilogue",
    "STREAMK=0,EPI_DEFER=0": "+ GROUP_M 16",
    "EPI_DEFER=0": "+ stream-K last wave",
    "default": "+ second store pass under the next tile (shipped)",
    "CLUSTER_M=2": "+ 2-CTA cluster, B multicast",
    "ORDER=2": "Hilbert order instead of grouped",
    "ORDER=0": "row-major order instead of grouped",
    "ORDER=3": "XOR of block indices (the seed's) instead of grouped",
    "STAGES=3": "3 buffers instead of 4",
    "STMATRIX=0": "4-byte st.shared staging instead of stmatrix",
    "GROUP_M=32": "GROUP_M 32",
}
NAME = "v4_swizzle_pipeline"


# ---- the walkthrough's declarations (notebooks/build.py reads them; see the README's recipe) ----
KNOB = {"TMA_STORE": 0}
KNOB_QUESTION = (
    "Set `TMA_STORE=0` (shipped: 1): the epilogue goes back to v3's `half2` stores from registers "
    "straight to global memory. Predict: shared memory per block, registers at entry, and which "
    "SASS families appear or disappear (STS, STG, UTMASTG). The ablation measured this lever; look "
    "at the \"Why\" figure after you answer.")


def KNOB_ANSWER(shipped, variant, rep, rep_variant) -> str:
    return (f"**What changed.** Shared memory {rep.dynamic_smem:,} → {rep_variant.dynamic_smem:,} B: the "
            f"staging tile (EPI_BYTES = 2 warpgroups × 64 × 128 × 2 B) is gone. The stores: STS "
            f"{rep.opcodes.get('STS', 0)} → {rep_variant.opcodes.get('STS', 0)}, UTMASTG "
            f"{rep.opcodes.get('UTMASTG', 0)} → {rep_variant.opcodes.get('UTMASTG', 0)}, STG "
            f"{rep.opcodes.get('STG', 0)} → {rep_variant.opcodes.get('STG', 0)}. Registers at entry "
            f"{rep.registers} → {rep_variant.registers}: `__launch_bounds__(384, 1)` sets them, not the epilogue.")


QUESTIONS = [
    ("How many registers per thread does ptxas allocate at entry (`__launch_bounds__(384, 1)`)?",
     lambda st, rep: rep.registers,
     lambda st, rep: ("65,536 registers per SM / 384 threads = 170.7, rounded down to a multiple of 8: "
                      f"{65536 // 384 // 8 * 8} (inspect: {rep.registers}); `setmaxnreg` then gives the producer 40 and "
                      "the consumers 232 (40 × 128 + 232 × 256 = 64,512).")),
    ("How many bytes of dynamic shared memory does a block use with the shipped switches?",
     lambda st, rep: st.defines["STAGES"] * (st.defines["BM"] + st.defines["BN"]) * st.defines["BK"] * 2
     + (2 * 64 * 128 * 2 if st.defines["TMA_STORE"] else 0) + 1024 + 2 * 8 * st.defines["STAGES"],
     "STAGES × STAGE_BYTES + EPI_BYTES + ALIGN_SLACK + BAR_BYTES = {value} B (`gemm_smem_bytes`)."),
    ("How many arrivals complete one phase of `empty[s]`?",
     lambda st, rep: st.defines["CLUSTER_M"] * 2 * 4,
     "One per consumer warp of every CTA of the cluster: CLUSTER_M × CONSUMERS × 4 = {value}."),
    (f"How many blocks does the persistent grid launch for 4096 × 4096 × 4096 on an H200 "
     f"({gpu.REFERENCE_DEVICE.sm_count} SMs)?",
     lambda st, rep: st.geometry(4096, 4096, 4096, st.defines, gpu.REFERENCE_DEVICE).grid[0],
     lambda st, rep: (f"min(tiles, SMs): (4096/{st.defines['BM']}) × (4096/{st.defines['BN']}) = "
                      f"{(4096 // st.defines['BM']) * (4096 // st.defines['BN'])} tiles against "
                      f"{gpu.REFERENCE_DEVICE.sm_count} SMs: "
                      f"{st.geometry(4096, 4096, 4096, st.defines, gpu.REFERENCE_DEVICE).grid[0]} blocks, "
                      "each looping `tile += gridDim.x`.")),
    (f"At 4096 × 14336 × 4096 ({gpu.REFERENCE_DEVICE.sm_count} SMs, 128 × 256 tiles, 64 k-blocks per "
     "tile), how many k-blocks does each block compute in the stream-K part (the last wave's "
     "k-blocks shared evenly), against 64 for a whole tile?",
     lambda st, rep: round(_streamk_share(4096, 14336, 4096, st.defines), 1),
     lambda st, rep: (f"{(4096 // 128) * (14336 // 256)} tiles = {(4096 // 128) * (14336 // 256) // gpu.REFERENCE_DEVICE.sm_count} "
                      f"full waves + {(4096 // 128) * (14336 // 256) % gpu.REFERENCE_DEVICE.sm_count} tiles; "
                      f"that wave's {(4096 // 128) * (14336 // 256) % gpu.REFERENCE_DEVICE.sm_count} × 64 k-blocks over "
                      f"{gpu.REFERENCE_DEVICE.sm_count} blocks = {_streamk_share(4096, 14336, 4096, st.defines):.1f} each: "
                      f"the last wave takes {_streamk_share(4096, 14336, 4096, st.defines) / 64:.0%} of a tile's time "
                      "instead of a whole one, plus the 4-8 µs the partial sums cost (README \"Stream-K\"; "
                      "measured: +1.4 to +2.6% at this shape in four runs).")),
    ("How many wgmma does a consumer warpgroup issue per k-block?",
     lambda st, rep: st.defines["BK"] // 16,
     "BK / 16 = {value}; the first of a tile runs with scale-d = 0 instead of zeroing the accumulators."),
]

def _streamk_share(m: int, n: int, k: int, c: dict) -> float:
    """k-blocks per block when the last partial wave's k-blocks are shared evenly over the H200's
    blocks (what kernel.cu's stream-K does where that wave is at least half full, as here)."""
    sms = gpu.REFERENCE_DEVICE.sm_count
    return (m // c["BM"]) * (n // c["BN"]) % sms * (k // c["BK"]) / sms


DIAGRAMS = [("ring_timeline", {"k_tiles": 6, "tiles": 2, "producer": "warp"}),
            ("tma_swizzle", {"part": "epilogue"})]


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """The ablation, measured in one run: v3, then each lever of v4 added in turn (and the
    alternatives that lost), TFLOP/s at each shape with cuBLAS of the same run as a line."""
    return plots.ablation_bars(NAME, ax, LADDER, "v4 ablation: v3, then one lever at a time (one run, L2 flushed)",
                               zoom=True)
