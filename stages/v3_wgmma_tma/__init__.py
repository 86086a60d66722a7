"""v3_wgmma_tma: TMA tile loads tracked by mbarriers, wgmma straight from shared memory (sm_90a)."""
from pathlib import Path

import numpy as np

from stages.harness import tma
from stages.harness.contract import Constraints
from stages.harness.gpu import Requirement
from stages.harness.stage import KernelStage, Launch, cdiv

# 128 x 256 block tile: two warpgroups of m64n256k16, 64-deep K tiles (one 128-byte swizzle row),
# 4 tiles in flight (4 x 48 KiB), blocks grouped 8 tile-rows at a time.
CONFIG = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 8}


def geometry(m: int, n: int, k: int, c: dict) -> Launch:
    smem = c["STAGES"] * (c["BM"] + c["BN"]) * c["BK"] * 2 + 1024 + 2 * 8 * c["STAGES"]
    return Launch(grid=(cdiv(m, c["BM"]) * cdiv(n, c["BN"]), 1, 1),
                  block=((c["BM"] // 64) * 128, 1, 1), shared_mem=smem)


def constraints(c: dict) -> Constraints:
    return Constraints(m_multiple=c["BM"], n_multiple=c["BN"], k_multiple=c["BK"], alignment=16)


def arguments(a, b, out, m, n, k, c: dict):
    # A and B reach the kernel as tensor maps (cached by pointer, shape and box), not pointers.
    return (tma.tensor_map(a, c["BM"], c["BK"]), tma.tensor_map(b, c["BN"], c["BK"]), out,
            np.int32(m), np.int32(n), np.int32(k))


STAGE = KernelStage(
    name="v3_wgmma_tma",
    idea="TMA tile loads + mbarrier pipeline, wgmma m64n256k16 from 128B-swizzled shared memory",
    previous="v2_cp_async",
    source=Path(__file__).with_name("kernel.cu"),
    kernel="gemm_v3_wgmma_tma",
    geometry=geometry,
    requires=Requirement(exact_arch="sm_90a"),
    constraints_for=constraints,
    defines=CONFIG,
    reuse_tile_for=lambda c: (c["BM"], c["BN"]),
    arguments=arguments,
    expect_sass=("HGMMA", "UTMALDG", "SYNCS"),
)
