"""v4_swizzle_pipeline: warp-specialized TMA/wgmma pipeline, persistent L2-swizzled schedule (sm_90a)."""
import numpy as np

from stages.core import gpu, tma
from stages.core.contract import Constraints
from stages.core.gpu import Requirement
from stages.core.stage import Call, KernelStage, Launch

# 128 x 256 block tile: a producer warpgroup and two consumer warpgroups of m64n256k16, 64-deep K
# tiles (one 128-byte swizzle row), a ring of 4 buffers (4 x 48 KiB) + a 32 KiB epilogue staging
# tile. The switches build the ablation ladder (each a -D define):
#   PERSISTENT 0/1  one block per tile / min(tiles, SMs) resident blocks looping over tiles
#   ORDER 0/1/2/3   tile walk: row-major / grouped by GROUP_M tile rows (v3's) / generalized Hilbert
#                   / row-major with the seed's XOR of block indices (un ^= um % 8 in whole groups)
#   TMA_STORE 0/1   epilogue: half2 stores from registers / swizzled shared tile + TMA bulk store
#   CLUSTER_M 1/2   2-CTA clusters on vertically adjacent tiles, B multicast to both
#   STMATRIX 0/1    epilogue staging: 4-byte st.shared / stmatrix.x4 (four 8x8 fp16 matrices)
#   STREAMK 0/1     the last partial wave: left to the SMs it fills / its k-blocks split evenly
#                   over all workers, partial sums fixed up through a per-stream workspace
#   EPI_BORROW 0/1  the epilogue's second store pass staged in the tile's last ring buffer (kept
#                   until the next tile's first k-block) instead of after the first pass's store
#   PINGPONG 0/1    the two consumer warpgroups share each tile / take alternate whole tiles
#                   (BN=128), one's epilogue running under the other's mainloop
#   EPI_DEFER 0/1/2 the epilogue's second store pass right after the tile / rounded to fp16 and
#                   held in registers, staged and stored once the next tile's first 1 or 2
#                   k-blocks of wgmmas are issued (TMA_STORE=1, BN=256 only: the other
#                   epilogues, EPI_BORROW and PINGPONG store at once whatever it says)
# The shipped switches (ORDER=1 with GROUP_M=16, no cluster) are the fastest of the ladder and its
# alternatives measured in one run on the H200 (results/tuning/, see README "Ablation").
CONFIG = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16,
          "PERSISTENT": 1, "ORDER": 1, "TMA_STORE": 1, "CLUSTER_M": 1,
          "STMATRIX": 1, "STREAMK": 1, "EPI_BORROW": 0, "PINGPONG": 0, "EPI_DEFER": 1}

THREADS = 384          # 3 warpgroups: 0 producer, 1-2 consumers (kernel.cu: THREADS)


def check_config(c: dict) -> None:
    rules = [
        (c["BK"] == 64, "BK == 64 (one 128-byte swizzle row: the TMA box and the wgmma descriptor)"),
        (c["BM"] == 128, "BM == 128 (two consumer warpgroups of 64 rows)"),
        (c["BN"] in (128, 256), "BN 128 or 256 (the wgmma shapes kernel.cu wraps)"),
        (c["STAGES"] >= 2, "STAGES >= 2"),
        (c["GROUP_M"] >= 1, "GROUP_M >= 1"),
        (c["PERSISTENT"] in (0, 1), "PERSISTENT 0 or 1"),
        (c["ORDER"] in (0, 1, 2, 3), "ORDER 0 (row-major), 1 (grouped), 2 (Hilbert) or 3 (XOR of block indices)"),
        (c["TMA_STORE"] in (0, 1), "TMA_STORE 0 or 1"),
        (c["CLUSTER_M"] in (1, 2), "CLUSTER_M 1 or 2"),
        (c["STMATRIX"] in (0, 1), "STMATRIX 0 or 1"),
        (c["STREAMK"] in (0, 1), "STREAMK 0 or 1"),
        (c["EPI_BORROW"] in (0, 1), "EPI_BORROW 0 or 1"),
        (not c["EPI_BORROW"] or (c["TMA_STORE"] == 1 and c["CLUSTER_M"] == 1 and c["BN"] == 256),
         "EPI_BORROW=1 with TMA_STORE=1, CLUSTER_M=1 and BN=256 (it stages the second of two store passes)"),
        (c["PINGPONG"] in (0, 1), "PINGPONG 0 or 1"),
        (not c["PINGPONG"] or (c["BN"] == 128 and not c["STREAMK"] and not c["EPI_BORROW"]),
         "PINGPONG=1 with BN=128 (a whole 128 x 128 tile per consumer warpgroup), STREAMK=0 and EPI_BORROW=0"),
        (c["EPI_DEFER"] in (0, 1, 2), "EPI_DEFER 0, 1 or 2"),
    ]
    broken = [rule for ok, rule in rules if not ok]
    if broken:
        raise ValueError(f"v4_swizzle_pipeline cannot build {c}: needs " + "; ".join(broken))


def _workers(m: int, n: int, c: dict, dev) -> tuple[int, int]:
    """(units, workers): a unit is CLUSTER_M tiles stacked in M (one per CTA of a cluster), a
    worker one cluster; persistent: one resident block per SM at most (1 block/SM: 230 KB of
    shared memory), a whole number of clusters."""
    cm = c["CLUSTER_M"]
    units = (m // (c["BM"] * cm)) * (n // c["BN"])
    return units, (min(units, dev.clusters(cm)) if c["PERSISTENT"] else units)


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    cm = c["CLUSTER_M"]
    return Launch(grid=(_workers(m, n, c, dev)[1] * cm, 1, 1), block=(THREADS, 1, 1), cluster=(cm, 1, 1))


# The kernel's stream-K rule (kernel.cu, streamk_units), on the host: split the last wave only
# where it leaves at least SK_MIN_IDLE idle k-blocks per worker. tests/test_schedule.py compiles the
# kernel's rule and checks that the two agree.
SK_MIN_IDLE = 12


def streamk_splits(m: int, n: int, k: int, c: dict, dev) -> bool:
    """Whether the STREAMK=1 kernel splits this shape's last wave."""
    units, workers = _workers(m, n, c, dev)
    rem = units % workers
    return bool(c["STREAMK"]) and units > workers and rem != 0 and \
        (workers - rem) * (k // c["BK"]) >= SK_MIN_IDLE * workers


def defines_for(call: Call) -> dict:
    """Per call: the build with the stream-K fixup only where the kernel splits the wave; every
    other shape (4096^3: its last wave of 116 of 132 is not split) runs the STREAMK=0 build, which
    measured 0.5% faster there (scripts/lever_probe.py as v4-h2 against v4-h2-dp, results/probes/20261130T131730).
    EPI_DEFER only where a block computes more than one unit: in one wave there is no next tile
    to hide the deferred pass under (v5 measured the build without it faster there, v5 README)."""
    d = {} if streamk_splits(call.m, call.n, call.k, call.cfg, call.dev) else {"STREAMK": 0}
    units, workers = _workers(call.m, call.n, call.cfg, call.dev)
    if units <= workers and call.cfg["EPI_DEFER"]:
        d["EPI_DEFER"] = 0
    return d


def streamk_scratch(call: Call) -> tuple:
    """(partials, flags) for the stream-K fixup (kernel.cu, "stream-K fixup"), or two null
    pointers where the call runs the build without it (defines_for). One fp32 64 x BN slot and one
    flag per (block, consumer warpgroup); the kernel leaves the flags zero."""
    c = call.cfg
    if not c["STREAMK"]:
        return np.uint64(0), np.uint64(0)
    slots = _workers(call.m, call.n, c, call.dev)[1] * c["CLUSTER_M"] * 2
    part_bytes = slots * 64 * c["BN"] * 4
    buf = gpu.stream_scratch(part_bytes + 4 * slots, "v4_swizzle_pipeline")
    return buf[:part_bytes].view(np.float32), buf[part_bytes:part_bytes + 4 * slots].view(np.uint32)


def constraints(c: dict) -> Constraints:
    return Constraints(m_multiple=c["BM"] * c["CLUSTER_M"], n_multiple=c["BN"], k_multiple=c["BK"], alignment=16)


def arguments(call: Call) -> tuple:
    # A, B and C reach the kernel as tensor maps (cached by pointer, shape and box). With a
    # cluster each CTA loads BN / CLUSTER_M rows of B; C is stored in 64 x 64 swizzled boxes.
    c = call.cfg
    return (tma.tensor_map(call.a, c["BM"], c["BK"]), tma.tensor_map(call.b, c["BN"] // c["CLUSTER_M"], c["BK"]),
            tma.tensor_map(call.out, 64, 64), call.out,
            np.int32(call.m), np.int32(call.n), np.int32(call.k), *streamk_scratch(call))


STAGE = KernelStage.here(
    __file__,
    idea="warp-specialized 4-stage TMA/wgmma pipeline, persistent grouped schedule, TMA-store epilogue",
    geometry=geometry,
    requires=Requirement(exact_arch="sm_90a"),
    constraints_for=constraints,
    defines=CONFIG,
    check_config=check_config,
    defines_for=defines_for,
    reuse_tile_for=lambda c: (c["BM"] * c["CLUSTER_M"], c["BN"]),
    arguments=arguments,
    expect_sass=("HGMMA", "UTMALDG", "UTMASTG", "SYNCS"),
)
