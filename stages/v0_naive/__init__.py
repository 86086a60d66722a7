"""v0_naive: one thread per output element, fp32 accumulation, any shape."""
from pathlib import Path

from stages.harness.contract import Constraints
from stages.harness.gpu import Requirement
from stages.harness.stage import KernelStage, Launch, cdiv

# A warp spans 32 consecutive columns of C, so its stores coalesce.
CONFIG = {"BLOCK_N": 32, "BLOCK_M": 8}


def geometry(m: int, n: int, k: int, c: dict) -> Launch:
    return Launch(grid=(cdiv(n, c["BLOCK_N"]), cdiv(m, c["BLOCK_M"]), 1),
                  block=(c["BLOCK_N"], c["BLOCK_M"], 1))


STAGE = KernelStage(
    name="v0_naive",
    idea="one thread per output element; every multiply-add loads A and B from global memory",
    previous=None,
    source=Path(__file__).with_name("kernel.cu"),
    kernel="gemm_v0_naive",
    geometry=geometry,
    requires=Requirement(min_cc=(7, 0)),
    constraints_for=Constraints(alignment=2),  # scalar 2-byte loads: any fp16 view works
    defines=CONFIG,
    expect_sass=("FFMA",),
)
