"""v2_cp_async: tensor cores (mma.sync) fed by a multi-stage cp.async pipeline, swizzled smem."""
from pathlib import Path

from stages.harness.contract import Constraints
from stages.harness.gpu import Requirement
from stages.harness.stage import KernelStage, Launch, cdiv

# 128 x 256 block tile, 64-deep K tiles (128-byte shared rows), 8 warps of 64 x 64,
# 4 tiles in flight (4 x 48 KiB of shared memory), blocks grouped 8 tile-rows at a time.
CONFIG = {"BM": 128, "BN": 256, "BK": 64, "WM": 64, "WN": 64, "STAGES": 4, "GROUP_M": 8}


def threads(c: dict) -> int:
    return (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32


def geometry(m: int, n: int, k: int, c: dict) -> Launch:
    smem = c["STAGES"] * (c["BM"] + c["BN"]) * c["BK"] * 2
    return Launch(grid=(cdiv(m, c["BM"]) * cdiv(n, c["BN"]), 1, 1), block=(threads(c), 1, 1),
                  shared_mem=smem)


def constraints(c: dict) -> Constraints:
    return Constraints(m_multiple=c["BM"], n_multiple=c["BN"], k_multiple=c["BK"], alignment=16)


STAGE = KernelStage(
    name="v2_cp_async",
    idea="tensor cores (mma.sync m16n8k16) fed by a 4-stage cp.async pipeline, swizzled smem, ldmatrix",
    previous="v1_tiled",
    source=Path(__file__).with_name("kernel.cu"),
    kernel="gemm_v2_cp_async",
    geometry=geometry,
    requires=Requirement(min_cc=(8, 0)),
    constraints_for=constraints,
    defines=CONFIG,
    expect_sass=("HMMA", "LDGSTS", "LDSM"),
)
