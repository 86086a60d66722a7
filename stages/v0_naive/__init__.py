"""v0_naive: one thread per output element, fp32 accumulation, any shape."""
from stages.core.contract import Constraints
from stages.core.gpu import Requirement
from stages.core.stage import KernelStage, Launch, cdiv

# A warp spans 32 consecutive columns of C, so its stores coalesce.
# MAP (an ablation, README "Ablation"): which index the 32 lanes of a warp walk. 0: N (lanes read
# 32 rows of B, A is a broadcast); 1: M (32 rows of A, B a broadcast); 2: K (a warp per output,
# both loads contiguous, a shuffle reduction at the end).
CONFIG = {"BLOCK_N": 32, "BLOCK_M": 8, "MAP": 0}


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    block = (c["BLOCK_N"], c["BLOCK_M"], 1)
    if c["MAP"] == 1:  # x walks M, y walks N
        return Launch(grid=(cdiv(m, c["BLOCK_N"]), cdiv(n, c["BLOCK_M"]), 1), block=block)
    if c["MAP"] == 2:  # one warp per output: a block column of BLOCK_M outputs
        return Launch(grid=(n, cdiv(m, c["BLOCK_M"]), 1), block=block)
    return Launch(grid=(cdiv(n, c["BLOCK_N"]), cdiv(m, c["BLOCK_M"]), 1), block=block)


def check_config(c: dict) -> None:
    if c["BLOCK_N"] * c["BLOCK_M"] > 1024 or min(c["BLOCK_N"], c["BLOCK_M"]) < 1:
        raise ValueError(f"v0_naive: BLOCK_N x BLOCK_M must be 1..1024 threads, got {c['BLOCK_N']} x {c['BLOCK_M']}")
    if c["MAP"] not in (0, 1, 2):
        raise ValueError(f"v0_naive: MAP must be 0 (lanes along N), 1 (along M) or 2 (along K), got {c['MAP']}")
    if c["MAP"] == 2 and c["BLOCK_N"] != 32:
        raise ValueError(f"v0_naive: MAP=2 puts one warp on each output, so BLOCK_N (the block's x size) "
                         f"must be 32, got {c['BLOCK_N']}")


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
