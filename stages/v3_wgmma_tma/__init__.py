"""v3_wgmma_tma: TMA tile loads tracked by mbarriers, wgmma straight from shared memory (sm_90a)."""
import numpy as np

from stages.core import tma
from stages.core.contract import Constraints
from stages.core.gpu import Requirement
from stages.core.stage import Call, KernelStage, Launch, cdiv

# 128 x 256 block tile: two warpgroups of m64n256k16, 64-deep K tiles (one 128-byte swizzle row),
# a ring of 4 buffers (4 x 48 KiB), blocks grouped 8 tile-rows at a time.
# BREAK_FULL_WAIT / BREAK_EMPTY_WAIT / BREAK_FENCE: exercises, default 0 (README, "Break it").
CONFIG = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 8, "BREAK_FULL_WAIT": 0, "BREAK_EMPTY_WAIT": 0,
          "BREAK_FENCE": 0}


def check_config(c: dict) -> None:
    rules = [
        (c["BK"] == 64, "BK == 64 (one 128-byte swizzle row: the TMA box and the wgmma descriptor)"),
        (c["BM"] in (64, 128, 192, 256), "BM one to four warpgroups of 64 rows (64, 128, 192, 256)"),
        (c["BN"] in (128, 256), "BN 128 or 256 (the wgmma shapes kernel.cu wraps)"),
        (c["STAGES"] >= 2, "STAGES >= 2"),
        (c["GROUP_M"] >= 1, "GROUP_M >= 1"),
        (c["BREAK_EMPTY_WAIT"] in (0, 1), "BREAK_EMPTY_WAIT 0 or 1 (an exercise: 1 refills a buffer "
                                          "without waiting for its empty barrier)"),
        (c["BREAK_FENCE"] in (0, 1), "BREAK_FENCE 0 or 1 (an exercise: 1 drops wgmma.fence)"),
        (c["BREAK_FULL_WAIT"] in (0, 1), "BREAK_FULL_WAIT 0 or 1 (an exercise: 1 reads the first tile "
                                         "without waiting for its full barrier)"),
    ]
    broken = [rule for ok, rule in rules if not ok]
    if broken:
        raise ValueError(f"v3_wgmma_tma cannot build {c}: needs " + "; ".join(broken))


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    return Launch(grid=(cdiv(m, c["BM"]) * cdiv(n, c["BN"]), 1, 1), block=((c["BM"] // 64) * 128, 1, 1))


def constraints(c: dict) -> Constraints:
    return Constraints(m_multiple=c["BM"], n_multiple=c["BN"], k_multiple=c["BK"], alignment=16)


def arguments(call: Call) -> tuple:
    # A and B reach the kernel as tensor maps (cached by pointer, shape and box), not pointers.
    c = call.cfg
    return (tma.tensor_map(call.a, c["BM"], c["BK"]), tma.tensor_map(call.b, c["BN"], c["BK"]), call.out,
            np.int32(call.m), np.int32(call.n), np.int32(call.k))


STAGE = KernelStage.here(
    __file__,
    idea="TMA tile loads + mbarrier pipeline, wgmma m64n256k16 from 128B-swizzled shared memory",
    geometry=geometry,
    requires=Requirement(exact_arch="sm_90a"),
    constraints_for=constraints,
    defines=CONFIG,
    check_config=check_config,
    reuse_tile_for=lambda c: (c["BM"], c["BN"]),
    arguments=arguments,
    expect_sass=("HGMMA", "UTMALDG", "SYNCS"),
)
