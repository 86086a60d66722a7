"""v2_cp_async: tensor cores (mma.sync) fed by a multi-stage cp.async pipeline, swizzled smem."""
from stages.core.contract import Constraints
from stages.core.gpu import Requirement
from stages.core.stage import KernelStage, Launch, cdiv

# 128 x 128 block tile, 64-deep K tiles (128-byte shared rows), 4 warps of 64 x 64 each,
# a 3-buffer ring (3 x 32 KiB of shared memory: two blocks fit on an SM), blocks grouped 8
# tile-rows at a time. Chosen from 8 variants by `python -m stages tune` (results/tuning/; the
# README quotes the sweep).
# SWIZZLE = 0 drops the XOR (an ablation: ldmatrix then conflicts 8-way); GROUP_M = 1 is plain
# launch order; BREAK_WAIT = 1 is an exercise that waits for one cp.async group too few (README,
# "Ablations" and "Break it").
CONFIG = {"BM": 128, "BN": 128, "BK": 64, "WM": 64, "WN": 64, "STAGES": 3, "GROUP_M": 8,
          "SWIZZLE": 1, "BREAK_WAIT": 0}


def threads(c: dict) -> int:
    return (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32


def check_config(c: dict) -> None:
    rules = [
        (c["BK"] == 64, "BK == 64 (one 128-byte swizzled shared row per tile row)"),
        (c["BM"] % c["WM"] == 0 and c["BN"] % c["WN"] == 0, "BM % WM == 0 and BN % WN == 0"),
        (c["WM"] % 16 == 0 and c["WN"] % 16 == 0, "WM and WN multiples of 16 (m16n8k16 tiles, x4 ldmatrix)"),
        (32 <= threads(c) <= 1024, "32..1024 threads ((BM/WM)*(BN/WN) warps)"),
        ((c["BM"] * 8) % threads(c) == 0 and (c["BN"] * 8) % threads(c) == 0,
         "BM*8 and BN*8 16-byte chunks per tile divisible by THREADS"),
        (c["STAGES"] >= 2, "STAGES >= 2 (one buffer computing, one loading)"),
        (c["GROUP_M"] >= 1, "GROUP_M >= 1"),
        (c["SWIZZLE"] in (0, 1), "SWIZZLE 0 (plain 128-byte rows) or 1 (chunk ^ row % 8)"),
        (c["BREAK_WAIT"] in (0, 1), "BREAK_WAIT 0 or 1 (an exercise: 1 waits for one cp.async group too few)"),
    ]
    broken = [rule for ok, rule in rules if not ok]
    if broken:
        raise ValueError(f"v2_cp_async cannot build {c}: needs " + "; ".join(broken))


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    return Launch(grid=(cdiv(m, c["BM"]) * cdiv(n, c["BN"]), 1, 1), block=(threads(c), 1, 1))


def constraints(c: dict) -> Constraints:
    return Constraints(m_multiple=c["BM"], n_multiple=c["BN"], k_multiple=c["BK"], alignment=16)


STAGE = KernelStage.here(
    __file__,
    idea="tensor cores (mma.sync m16n8k16) fed by a 3-stage cp.async pipeline, XOR-swizzled smem, ldmatrix",
    geometry=geometry,
    requires=Requirement(min_cc=(8, 0)),
    constraints_for=constraints,
    defines=CONFIG,
    check_config=check_config,
    reuse_tile_for=lambda c: (c["BM"], c["BN"]),
    expect_sass=("HMMA", "LDGSTS", "LDSM"),
)
