"""v0_naive: one thread per output element, fp32 accumulation, any shape."""
from stages.core.contract import Constraints
from stages.core.gpu import Requirement
from stages.core.stage import KernelStage, Launch, cdiv

# A warp spans 32 consecutive columns of C, so its stores coalesce.
CONFIG = {"BLOCK_N": 32, "BLOCK_M": 8}


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    return Launch(grid=(cdiv(n, c["BLOCK_N"]), cdiv(m, c["BLOCK_M"]), 1),
                  block=(c["BLOCK_N"], c["BLOCK_M"], 1))


def check_config(c: dict) -> None:
    if c["BLOCK_N"] * c["BLOCK_M"] > 1024 or min(c["BLOCK_N"], c["BLOCK_M"]) < 1:
        raise ValueError(f"v0_naive: BLOCK_N x BLOCK_M must be 1..1024 threads, got {c['BLOCK_N']} x {c['BLOCK_M']}")


STAGE = KernelStage.here(
    __file__,
    idea="one thread per output element; every multiply-add loads A and B from global memory",
    geometry=geometry,
    requires=Requirement(min_cc=(7, 0)),
    constraints_for=Constraints(alignment=2),  # scalar 2-byte loads: any fp16 view works
    defines=CONFIG,
    check_config=check_config,
    expect_sass=("FFMA",),
)
