"""v1_tiled: shared-memory tiles and 2-D register blocking on CUDA cores (the fp32 FMA roof)."""
from stages.core.contract import Constraints
from stages.core.gpu import Requirement
from stages.core.stage import KernelStage, Launch, cdiv

# 128 x 128 block tile, 16-deep K tiles, 8 x 8 outputs per thread -> 256 threads.
# PAD = 4 floats makes the shared row stride 20 floats: the compute loop's 16-byte loads are
# conflict-free. BK = 16 measured 41.1 TFLOP/s against 37.8 for BK = 32 (results/tuning/, 4096^3).
# PAD = 0 (an ablation) gives the compute loop's B loads a 4-way bank conflict; BREAK_SYNC = 1 is
# an exercise that drops the barrier between K tiles (README, "Ablations" and "Break it").
CONFIG = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PAD": 4, "MIN_BLOCKS": 1, "BREAK_SYNC": 0}


def threads(c: dict) -> int:
    return (c["BM"] // c["TM"]) * (c["BN"] // c["TN"])


def check_config(c: dict) -> None:
    """The rules kernel.cu relies on, checked before NVRTC sees the defines."""
    rules = [
        (c["BM"] % c["TM"] == 0 and c["BN"] % c["TN"] == 0, "BM % TM == 0 and BN % TN == 0"),
        (32 <= threads(c) <= 1024 and threads(c) % 32 == 0,
         f"THREADS = (BM/TM)*(BN/TN) a multiple of 32 in 32..1024 (got {threads(c) if c['TM'] and c['TN'] else '?'})"),
        (c["BK"] % 8 == 0, "BK % 8 == 0 (16-byte loads of 8 fp16)"),
        (c["BK"] % 4 == 0 and c["PAD"] % 4 == 0, "BK and PAD multiples of 4 (float4 shared loads)"),
        ((c["BM"] * c["BK"] // 8) % max(threads(c), 1) == 0 and (c["BN"] * c["BK"] // 8) % max(threads(c), 1) == 0
         and c["BM"] * c["BK"] // 8 >= threads(c) and c["BN"] * c["BK"] // 8 >= threads(c),
         "each thread loads a whole number (>= 1) of 16-byte chunks: BM*BK/8 and BN*BK/8 multiples of THREADS"),
        (c["MIN_BLOCKS"] >= 1, "MIN_BLOCKS >= 1"),
        (c["BREAK_SYNC"] in (0, 1), "BREAK_SYNC 0 or 1 (an exercise: 1 drops the barrier between K tiles)"),
    ]
    broken = [rule for ok, rule in rules if not ok]
    if broken:
        raise ValueError(f"v1_tiled cannot build {c}: needs " + "; ".join(broken))


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    return Launch(grid=(cdiv(n, c["BN"]), cdiv(m, c["BM"]), 1), block=(threads(c), 1, 1))


def constraints(c: dict) -> Constraints:
    return Constraints(m_multiple=c["BM"], n_multiple=c["BN"], k_multiple=c["BK"], alignment=16)


STAGE = KernelStage.here(
    __file__,
    idea="shared-memory tiles + 8x8 register blocking per thread, fp32 FMA on CUDA cores",
    geometry=geometry,
    requires=Requirement(min_cc=(7, 0)),
    constraints_for=constraints,
    defines=CONFIG,
    check_config=check_config,
    reuse_tile_for=lambda c: (c["BM"], c["BN"]),
    expect_sass=("FFMA", "LDS", "STS"),
)
