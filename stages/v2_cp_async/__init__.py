"""v2_cp_async: tensor cores (mma.sync) fed by a multi-stage cp.async pipeline, swizzled smem."""
from pathlib import Path

from stages.harness.contract import Constraints
from stages.harness.gpu import Requirement
from stages.harness.stage import KernelStage, Launch, cdiv

# 128 x 128 block tile, 64-deep K tiles (128-byte shared rows), 4 warps of 64 x 64 each,
# 3 tiles in flight (3 x 32 KiB of shared memory: two blocks fit on an SM), blocks grouped 8
# tile-rows at a time. Chosen from 8 variants (STAGES 3/4, BN 128/256, WN 32/64) on the H200:
# 394 TFLOP/s at 4096^3 against 336-364 for the others (results/tuning/).
CONFIG = {"BM": 128, "BN": 128, "BK": 64, "WM": 64, "WN": 64, "STAGES": 3, "GROUP_M": 8}


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
    idea="tensor cores (mma.sync m16n8k16) fed by a 3-stage cp.async pipeline, XOR-swizzled smem, ldmatrix",
    previous="v1_tiled",
    source=Path(__file__).with_name("kernel.cu"),
    kernel="gemm_v2_cp_async",
    geometry=geometry,
    requires=Requirement(min_cc=(8, 0)),
    constraints_for=constraints,
    defines=CONFIG,
    reuse_tile_for=lambda c: (c["BM"], c["BN"]),
    expect_sass=("HMMA", "LDGSTS", "LDSM"),
)
