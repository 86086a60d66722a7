"""v5_fused_epilogue: a Linear layer in one kernel: act(alpha * a @ b.T + bias), any shape (sm_90a)."""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from stages.core import gpu, tma
from stages.core.contract import ACTIVATIONS, Constraints
from stages.core.gpu import Requirement
from stages.core.stage import Call, KernelStage, Launch, cdiv

# v4's kernel and its shipped switches, plus: BM 64, 128, 192 or 256 (one to four consumer
# warpgroups), BN 16 to 256, and AUTO=1: the tile, the ring depth and the split of K are chosen
# per shape by `shape_config` below (AUTO=0: BM, BN, STAGES and SPLIT_K exactly as given, for tuning).
CONFIG = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "GROUP_M": 16,
          "PERSISTENT": 1, "ORDER": 1, "TMA_STORE": 1, "CLUSTER_M": 1, "CLUSTER_N": 1,
          "STMATRIX": 1, "STREAMK": 1, "AUTO": 1, "SPLIT_K": 1, "SK_FILL": 32, "EPI_DEFER": 1,
          "EPI_OVERLAP": 0, "SPLIT_FIXUP": 0, "MAX_SPLITS": 8, "PDL": 1, "PAD_K": 64,
          "ACT_MATH": 1, "SPLIT_CLUSTER": 0, "PAD_SECTOR": 0, "SWAP_AB": 2,
          "L2_PROMO": 0, "TMAP_PREFETCH": 0, "L2_HINT": -1, "NARROW_N": 1, "EDGE_SHIFT": -1,
          "CLUSTER_TAIL": 1, "REG_SPLIT": 2, "CLUSTER_ARRIVE": 1, "PREFILL_SWAP": 3,
          "MID_SWAP": 1, "A_ROWS_128": 1, "ROW_PARITY": 2, "LM_HEAD": 1}

# The ring depth each tile can afford: STAGES x (BM + BN) x 64 x 2 B + the epilogue staging tile
# (BM x 128 x 2 B) + the bias stage (BN x 4 B) + 1 KiB of alignment slack + barriers must fit the
# 232,448 B of an H200 block (largest: 231,488 B, 128 x 256 with a bias; tests/test_v5.py checks).
TILES = {(128, 256): 4, (128, 192): 5, (128, 144): 6, (128, 128): 6, (128, 112): 6, (128, 64): 8,
         (64, 256): 5, (64, 192): 6, (64, 128): 8, (64, 112): 9, (64, 64): 13, (64, 32): 16,
         (192, 128): 4}  # (M 129-192 on a wide weight, A_ROWS = M rounded up to 8: SHAPES.md "M just past 128")
# Decode (the 64 x 128 tile, M <= 32): a ring buffer holds only the A rows that exist (kernel.cu
# A_ROWS, 16 or 32 of the 64), so 11 or 10 buffers fit where 8 of 24 KiB did.
DECODE_RING = {16: 11, 32: 10}


def _decode_rows(m: int) -> int:
    """The rows of A a 64-row decode tile's ring buffer holds for M rows: 16, 32 or all 64."""
    return 16 if m <= 16 else 32 if m <= 32 else 64


def a_rows_for(m: int, bm: int, c: dict) -> int:
    """kernel.cu's A_ROWS for a call: 16 or 32 with the shape rule's 64-row tile (or a 64-row tile
    split by SPLIT_CLUSTER) and M <= 32; M rounded up to 8 with a 192-row tile and M 129-184 (its
    one row of tiles: TMA then zero-fills at most 7 rows of A's box); else BM (and BM where A is
    shared along N by a cluster: its slices are whole tiles' rows)."""
    if bm == 192 and 128 < m < 192:
        return cdiv(m, 8) * 8
    # A_ROWS_128=1 (shipped): the same for one row of 128-row tiles at M 65-127. Measured faster
    # where most of the 128 rows were zero-filled (65 x 14336 x 4096 46.9 -> 38.8 us, cuBLAS 40.8;
    # results/probes/20261204T203945-nvidia-h200-a-rows-128.json) and level elsewhere.
    if bm == 128 and 64 < m < 128 and c["A_ROWS_128"] and c["CLUSTER_N"] == 1:  # (one row of 128-row tiles)
        return cdiv(m, 8) * 8
    return _decode_rows(m) if (c["AUTO"] or c["SPLIT_CLUSTER"] > 1) and bm == 64 and c["CLUSTER_N"] == 1 else bm


def b_rows_for(m: int, bn: int, swap: bool, cluster_m: int) -> int:
    """kernel.cu's B_ROWS for a call: M rounded up to 8 where the kernel runs C^T's tiles past
    decode (M > 64) and all of x's M rows fit one tile of BN, unclustered along M (the MID_SWAP
    tiles; TMA then loads no rows past M instead of zero-filling up to BN - 8); else BN."""
    return cdiv(m, 8) * 8 if swap and 64 < m <= bn and cluster_m == 1 else bn


# The kernel's ACT and BIAS defines (kernel.cu, "epilogue math"): one compiled kernel per epilogue.
ACT_CODE = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
assert set(ACT_CODE) - {None} == set(ACTIVATIONS)
BIAS_CODE = {None: 0, np.dtype(np.float16): 1, np.dtype(np.float32): 2}
REDUCE_THREADS = 256
PAD_WARPS = 8  # the padded copy's warps per block (kernel.cu gemm_v5_fused_epilogue_pad: one row each)
_NULL = np.uint64(0)
_NO_MAP = np.zeros(1, dtype=np.dtype("V128"))[0]  # the C map's slot when C is stored directly

# ---- the shape rule ------------------------------------------------------------------------------
# Measured on the H200 (README "The shape rule": every tile and split at the shapes):
#  * M <= 64 (decode): BM = 64, BN = 128. One consumer warpgroup wastes less of the m64 wgmma
#    on padding rows, and 128 columns make N / 128 tiles (112 at N = 14336) to spread the weight
#    stream over the SMs. When that leaves more than half the SMs idle (N / 128 < SMs / 2, e.g.
#    1 x 4096 x 4096: 32 tiles), K is split so that about 2 x SMs units stream it (at most 8
#    splits, at least 4 k-blocks each); the split costs a reduction kernel (~4 us), so it only
#    pays where most SMs would otherwise idle (at 16 x 14336 x 4096 every split lost).
#  * M > 64: 128 x 256 unless its tiles would fill less than two thirds of one wave
#    (128 x 14336 x 4096 has 56 for 132 SMs, 1000^3 32), then 128 x 128 (twice the tiles; a 128 x 128
#    tile does 0.92-0.94 of a 128 x 256 tile's work per second at the large shapes, so where 256
#    fills the GPU it stays: at 4095 x 4097 x 4104 the 128 x 128 tiles took 18% more time
#    although they fill 8 waves exactly against 256's 4.1). One wave 73-97% full of 128 x 256
#    tiles beat the 1.5-2 waves of 128 x 128 (results/probes/20261130T163850: 96 tiles, 1536 x
#    2048 x 4096, 45.2 against 50.9 us; 104, 1664 x 2048 x 2048, 27.1 against 33.2; 112, 1792 x
#    2048 x 4096, 46.9 against 57.5; 128, 2048^2 x 4096, 49.0 against 51.2); 55% full lost (72
#    tiles, 1536^2 x 4096: 44.6 against 39.0, where stream-K shares the 144 small tiles out):
#    the threshold, 2/3, lies between the two, not measured closer. No split of 128-row tiles:
#    at M = 128 every split lost.
#    Where 64 x 128 tiles fit one wave and K is long (at least N64_MIN_K_TILES k-blocks) or
#    its rows 32-byte aligned (K % 16 == 0; whole k-blocks, K % 64 == 0, until the K sweep of
#    2026-12-01, "sector_misaligned"): 64 x 128, one consumer warpgroup per tile (four times the
#    tiles of 128 x 256). Until commit 42d8fc2 the rule took 128 x 64 there (the same count of
#    tiles, two warpgroups of m64n64: results/probes/20261130T141213, 128 x 4096 x 4096 25.9 ->
#    22.8 us against 128 x 128); 64 x 128 then measured faster at every shape where the two have
#    the same count and no split (results/probes/20261130T180739-nvidia-h200-lever-probe.json,
#    interleaved: 256 x 4096 x 8192 37.5 -> 35.5 us, 512 x 2048 x 8192 34.9 -> 32.2, 1000 x 1000
#    x 4096 22.1 -> 21.3, 1024^3 9.8 -> 9.0, 1024 x 1024 x 4096 20.3 -> 18.4) and than 128 x 64
#    with stream-K sharing a half-empty wave (128 x 4096 x 4096 22.6 -> 21.7, 256 x 2048 x 4096
#    20.8 -> 17.6, 512 x 1024 x 4096 20.8 -> 17.1, and 130 x 5000 x 5000, 128 x 128 before, 55.0
#    -> 45.9). A short K keeps 128 x 128 unless it is whole k-blocks: with M, N, K each 1000 or
#    1024 the narrow tiles lost exactly where K = 1000, a partial last k-block (results/probes/
#    20261130T143406; 1000^3 with 64 x 128: 13.7 against 13.0 us). K is split to fill the wave
#    where most SMs would idle and each split stays long: at least 32 k-blocks per split under a
#    quarter wave of tiles, 64 under a half (T180739: 128 x 2048 x 8192, 32 tiles, 4 splits 30.0 ->
#    22.3; 256 x 1024 x 16384 48.5 -> 30.6; 256 x 2048 x 8192, 64 tiles, 2 splits 30.4 -> 28.2;
#    with 32 k-blocks per split and 64 tiles it lost: 128 x 4096 x 4096 21.7 -> 23.2, 256 x 2048 x
#    4096 17.6 -> 19.6, 512 x 1024 x 4096 17.1 -> 18.6). Where the 64 x 128 tiles would need a
#    second wave, 128 x 128 (384 x 3000 x 6000: 144 of them, 47.0 against 128 x 128's 41.2).
#    Why K = 1000 hurts: its rows are 2000 bytes, so only one 128-byte TMA row in eight is line-aligned; L2
#    traffic grows 32% at 128 x 128 and 62% at 128 x 64 against K = 1024, cuBLAS's 11% (ncu,
#    results/probes/20261130T163853 and T163911 profiles).
#  * Rows that start mid-sector (K % 16 == 8: sector_misaligned below; the rule said K % 64 != 0
#    until the K sweep of 2026-12-01) and a wave at least two thirds full of 128 x 256
#    tiles: those tiles in 2-CTA clusters sharing B (each loads half of it and multicasts it to
#    both). Most such rows are 16-112 bytes off a line, so their 128-byte rows of a TMA box touch two
#    lines (ncu at 4095 x 4104 x 4104: 2.12 GB through L2, against the 1.74 GB the tiles' boxes
#    hold, 544 x 65 x 48 KiB; memory throughput 73% of peak, long-scoreboard stalls 62%;
#    results/probes/20261201T031530
#    profiles). Measured (results/probes/20261201T031608 and T031742, tune, ms, unclustered ->
#    pairs, cuBLAS): 4096 x 4096 x 4104 0.283 -> 0.198 (0.194), 4096 x 14336 x 4104 0.961 ->
#    0.678 (0.670), 8192 x 8192 x 8200 2.316 -> 1.528 (1.552), 4096 x 4096 x 1000 0.076 ->
#    0.054 (0.055), 8192 x 8192 x 520 0.164 -> 0.126 (0.133), 4096 x 4096 x 200 0.027 -> 0.022
#    (0.024), 3000^3 0.125 -> 0.097 (0.083); 2 x 2 clusters were slower than pairs at all five
#    shapes tried (by 0.3% at 4096 x 14336 x 4104), CLUSTER_N=2 alone slower still; at whole
#    lines (4096^3) pairs lost 1.5% (0.183 -> 0.186).
#  * Rows that start mid-sector, M > 128 and 16-65 k-blocks (PAIR_MAX_K_TILES), or 66-97
#    (PAIR_FULL_MAX_K_TILES) where 8 or more rows and columns of 64 x 128 tiles fill over 3/4
#    of a wave, and the pairs fit one wave: 64 x 128 tiles in 2-CTA clusters sharing B (the
#    1000^3 build), before the two branches below (results/probes/20261202T192004, T210457,
#    T212526 and T213354; SHAPES.md "The rule: pairs of 64 x 128").
#  * K of 64 or more k-blocks, rows that start mid-sector (K % 16 == 8), under
#    two thirds of a wave of 128 x 256 tiles: 2 x 2 clusters (A and B each shared by two CTAs),
#    64 x 128 tiles for M <= 128, else 128 x 128 where those clusters fit one wave of clusters
#    (DeviceInfo.clusters(4): 30 on the H200), else 128 x 256 (results/probes/20261130T234552, set
#    the rule: 1000 x 1000 x 4104 37.8 -> 29.0 us, 500 x 2000 x 5000 47.7 -> 31.7; every cluster
#    lost with 32-byte aligned rows and the 2 x 4 win at 300 x 3000 x 3000, 47 k-blocks, was matched by
#    128 x 128 alone; T235712 checked it on six more shapes, won at five, lost at 384 x 3000 x
#    6000; T000204 set the 128 x 128 threshold at the clusters that fit: four wins, that one loss,
#    49.3 against 41.0 us for 128 x 128 alone with the stream-K fill. SHAPES.md "Clusters").
#  * 128 x 192 (before the 2/3 rule) where its tiles fill 70-100% of one wave and 128 x 128 ones
#    would need a second: in one wave a tile's time grows with its area (results/probes/
#    20261130T183536: 1536 x 2048 x 4096 45.7 -> 41.0 us, 2048 x 1536 x 4096 45.7 -> 40.8, 1280 x
#    2304 x 4096 45.4 -> 40.1, 1536 x 1536 x 4096 39.0 -> 38.1; where 128 x 128 fits one wave it
#    is faster, 1024 x 2048 x 4096 29.4 against 38.5; over several waves it lost, 4096^3 208.2
#    against 183.2). 64 x 64 where the 64 x 128 tiles run unsplit in at most half a wave and
#    64 x 64 ones fit one (128 x 4096 x 4096 21.4 -> 18.1, 512 x 1024 x 4096 17.0 -> 16.0, 256 x
#    2048 x 4096 17.7 -> 16.2; with a second wave it lost by 23% or more: 1024^3, 1000 x 1000
#    x 4096, 130 x 5000 x 5000). 128 x 192 only with whole k-blocks: with K = 1000 or 4104 (rows
#    not a multiple of 128 bytes) it lost to 128 x 256 (results/probes/20261130T185710: 1300 x 2048
#    x 1000 19.7 against 18.8 us, 1500 x 2000 x 4104 66.0 against 64.0; 1501 x 1999 x 1000, stored
#    directly, won 22.3 against 23.7), as the narrow tiles did at K = 1000.
#    128 x 144 before 128 x 192 where its tiles fit one wave (the narrowest tile that does: each
#    SM computes one, and a 144-wide one is three quarters of 192; cuBLAS runs 144 x 128 tiles at
#    1536^2 x 4096, results/probes/20261201T101821): 1536^2 x 4096 38.9 -> 33.6 us, 1408 x 1600 x
#    4096 38.6 -> 33.4, 1280 x 1728 x 4096 39.4 (128 x 128) -> 32.8, 1280 x 1728 x 8192 73.5 ->
#    56.9, 1536^2 x 1024 15.2 both (results/probes/20261201T102621), though C is stored directly.
#  * Not picked: tiles that fill one wave exactly as cuBLAS's do (112 columns: 128 tiles at N =
#    14336; 32 columns: 128 at 1 x 4096 x 4096). Each measured slower than the rule's tile
#    (results/probes/20261130T163630: 128 x 14336 x 4096 43.2 against 42.5 us; 16 x 14336 x 4096
#    42.9 against 42.0; 1 x 4096 x 4096 23.6 against the split's 19.5; at 1000^3, 1024^3 and
#    1000 x 1000 x 4096 widths 112, 96 and 80 all lost to the rule's): these shapes are bound by
#    the weight stream or by fixed latency, not by the SMs a wave leaves idle.
#  * M 129-192, K's rows not mid-sector, where 64 x 128 tiles would need a second wave and 64 x 256
#    ones fit one: 64 x 256 (three rows of 64 where two of 128 compute 256 rows, the second one at
#    most half real). results/probes/20261201T190740 (4 interleaved rounds, us, the rule before ->
#    64 x 256; cuBLAS): 129 x 8192 x 4096 48.3 -> 30.4 (29.0), 160 x 8192 x 4096 41.7 -> 30.1
#    (28.3), 192 x 8192 x 4096 36.8 -> 30.7 (31.2), 129 x 8192 x 8192 95.2 -> 53.9 (48.3), 129 x
#    6144 x 4096 41.6 -> 28.1 (24.3); level at 180 x 8192 x 1024 (13.4) and, outside the branch,
#    at 300 and 320 x 4096 x 4096 (27.4); slower where the rule's tile fits one wave already (192
#    x 5120 x 4096, 64 x 128: 20.0 against 27.5), where the 64 x 256 tiles need two (129 x 14336 x
#    4096: 53.6 against 68.8) and with rows that start mid-sector (160 x 8192 x 4104, 2 x 2
#    clusters of 128 x 256: 46.8 against 51.1). README "The shape rule".
#    Where 64 x 256 tiles would need a second wave and 192 x 128 ones fit one (N 11265-16896 on
#    132 SMs): 192 x 128, whose ring buffers hold only the A rows that exist (A_ROWS = M rounded up
#    to 8, a_rows_for). The 128-row tiles' second row is mostly rows TMA zero-fills, and those cost
#    time: 192 x 128 with whole 192-row A boxes took 52.1 us at 129 x 14336 x 4096 and 44.3 at 160
#    with the same bytes moved (results/probes/20261201T193317, T193319 and T193325 under Nsight
#    Compute). With A_ROWS (results/probes/20261201T195331, 4 interleaved rounds, us, the rule
#    before -> 192 x 128; cuBLAS): 129 x 14336 x 4096 54.7 -> 43.2 (42.8), 144 x 14336 x 4096 47.9
#    -> 43.2 (42.6), 184 x 14336 x 4096 47.0 -> 44.0 (43.6), 150 x 16384 x 4096 52.8 -> 46.5 (46.7),
#    129 x 12288 x 4096 54.8 -> 40.0 (37.9); 192 x 14336 x 4096 47.1 -> 44.0 (T193317); lost at 192
#    x 12288 x 4096, 40.0 -> 41.1 (42.7). Not where K's rows start mid-sector (180 x 14336 x 4104:
#    the 2 x 2 clusters of 128 x 256 55.8 against 59.5, without A_ROWS).
N64_MIN_K_TILES = 32
LONG_K_TILES = 64  # k-blocks from which partial-line rows take 2 x 2 clusters (300 x 3000 x 3000, 47: not)
PAIR_MAX_K_TILES = 66  # below it, with M > 128, 64 x 128 pairs before those 2 x 2 clusters (_auto, "pairs of 64 x 128")
PAIR_FULL_MAX_K_TILES = 98  # ... and below this one where >= 8 x 8 64 x 128 tiles fill over 3/4 of a wave
MAX_SPLITS = 8
MIN_K_TILES_PER_SPLIT = 4


# TMA reads global memory in 32-byte sectors. With K % 16 == 8 (K % 8 == 0 is given: TMA needs
# it, else the padded copy) a row is 2K bytes, 16 past a multiple of 32, so every other row of A
# and B starts in the middle of a sector and its 128-byte box row takes five sectors, not four.
# That, not rows that are not whole 128-byte lines, is what costs: at M = N = 1000 the 64 x 128
# tile alone took 0.72-0.74x cuBLAS at K = 1000, 1016, 1032 (rows 16 bytes past a sector) and
# 0.90-0.92x at K = 992, 1008 (rows 32-byte aligned, not line-aligned), 0.94-0.98x at 960, 1024,
# 1088 (whole lines); pairs sharing B took 0.82-0.83x at the first three and 0.86-0.89x at the
# others (`final_device.sh kpitch`, results/probes/20261201T074000-nvidia-h200-kpitch.json). The
# rule's clusters are for rows that start mid-sector.
def sector_misaligned(k: int) -> bool:
    """Whether every other row of A and B starts 16 bytes into a 32-byte sector (2K % 32 != 0)."""
    return (2 * k) % 32 != 0


# A and B's tensor maps ask the L2 to fetch 256-byte blocks around a miss (CU_TENSOR_MAP_L2_PROMOTION_
# L2_256B, as v3 and v4), except where K's rows start mid-sector, M > 128 and A and B together fit
# twice the L2: there 128. With the L2 flushed (scripts/promo_probe.py, 8 interleaved rounds, us,
# 256 -> 128, results/probes/20261201T152242 and T152310): 1000^3 12.4 -> 11.7 and 11.6 (cuBLAS
# 10.0), 1300 x 1000 x 1000 15.2 -> 13.5, 3000^3 93.7 -> 90.8, 4095 x 4097 x 4104 232.4 -> 222.3,
# 4096 x 4096 x 4104 194.6 -> 189.2; equal within 0.3 at 600 x 1000 x 1000, 1000 x 1000 x 4104 and
# 2048 x 2048 x 2056, 0.7 at 4096 x 4096 x 1000, 1.6 of 705 at 4096 x 14336 x 4104 (A and B 2.4 times the L2). 256 stays where the weight
# streams once (M <= 128: 16 x 14336 x 4104 42.5 against 43.6, 128 x 14336 x 4104 47.3 against
# 48.8; B's map alone at 256 matched 256 for both, not better) and where A and B are far past the
# L2 (8192 x 8192 x 8200: 1644 against 1663, 1632 against 1643). Whole-sector rows: no difference
# (1000 x 1000 x 1024, 1008; 4096^3; decode, T152214). The rule against 256 for both, interleaved:
# T152520 (1000^3 12.1 -> 11.4, 4095 x 4097 x 4104 236.3 -> 219.7). SHAPES.md "L2 promotion".
def l2_promotion(m: int, n: int, k: int, c: dict, dev) -> int:
    """The L2 promotion (bytes) of A's and B's tensor maps for the K the kernel reads."""
    if c["L2_PROMO"]:
        return c["L2_PROMO"]
    fits = (m + n) * k * 2 <= 2 * dev.l2_bytes
    return 128 if sector_misaligned(k) and m > 128 and fits else 256


# L2_HINT (kernel.cu): where one operand is streamed through the L2 once, as a Linear layer's
# weight is at decode and prefill, its loads ask the L2 to evict them first and the other operand's
# (the activations every block rereads) last. Streamed once: read by a single row (or column) of
# tiles, or by a few rows that all run in one wave, the weight at least 8 times the activations.
# With the bench's flush (a fill that leaves the L2 holding dirty lines), 5-6 interleaved rounds
# (scripts/overlap_probe.py, results/probes/20261201T172007, T172906 and T173124, us, none ->
# hint; cuBLAS): 16 x 14336 x 4096 40.9 -> 37.2 (40.6), with bias+gelu_tanh (the swapped tile: A
# is the weight, hint 2) 40.1 -> 36.9; 128 x 14336 x 4096 42.3 -> 39.3 (41.9); 16 x 4096 x 14336
# 41.7 -> 38.5 (42.2); 1 x 8192 x 8192 45.8 -> 42.6 (48.6); 1 x 4096 x 4096 18.3 -> 16.9 (18.3);
# a few rows in one wave: 128 x 4096 x 4096 18.2 -> 16.4, 256 x 4096 x 4096 22.0 -> 18.9, 130 x
# 5000 x 5000 38.4 -> 35.7, 256 x 2048 x 8192 (8 times) 27.3 -> 24.3, 4096 x 256 x 4096 (the
# mirror, hint 2) 23.5 -> 21.7; level at 512 x 8192 x 4096. After a flush that leaves the L2 clean,
# no difference at any of them (16 x 14336 x 4096: 34.0 and 34.0): what the hint saves is writing
# back the dirty lines the weight stream would evict. Where both operands are reread, no hint:
# level at 1000^3 and 4096^3, and 1024 x 14336 x 4096 (3.4 waves) lost (168.0 -> 173.5).
# SHAPES.md "The weight evicted first".
HINT_RATIO = 8


def l2_hint(m: int, n: int, k: int, c: dict, dev) -> int:
    """kernel.cu's L2_HINT for a call: L2_HINT as given where it is 0, 1 or 2; by shape (-1): 1
    where the kernel's B is streamed once (its M fits one row of tiles, or all its tiles one wave
    and N >= HINT_RATIO x M), 2 where its A is (the mirror), else 0."""
    if c["L2_HINT"] >= 0:
        return c["L2_HINT"]
    km, kn = kernel_mn(m, n, k, c, dev)
    bm, bn, _, _ = shape_config(m, n, k, c, dev)
    units, workers = _workers(m, n, k, c, dev)
    one_wave = units <= workers
    if km <= bm or (one_wave and kn >= HINT_RATIO * km):
        return 1
    if kn <= bn or (one_wave and km >= HINT_RATIO * kn):
        return 2
    return 0


# The padded copy (plan, kernel.cu gemm_v5_fused_epilogue_pad): where TMA cannot read A and B as
# they are (K % 8 != 0; a base that is not 16-byte aligned, which only the call's pointers tell),
# and, with PAD_SECTOR = t > 0, where K's rows start mid-sector and M x N <= t x 2^20: one copy
# into rows of a multiple of PAD_K, after which the rows start on whole lines. The rule then
# chooses the tile for the K the kernel runs (_rule_k): the copy's rows are aligned. (The k-block
# count is the same either way: PAD_K is 8 or 64.)
def copies_by_shape(m: int, n: int, k: int, c: dict) -> bool:
    """Whether A and B are copied into padded rows for the shape alone (not the pointers)."""
    return k % 8 != 0 or bool(c["PAD_SECTOR"] and sector_misaligned(k) and m * n <= c["PAD_SECTOR"] << 20)


def padded_k(k: int, c: dict) -> int:
    """The K of the padded copies: K rounded up to a multiple of PAD_K."""
    return cdiv(k, c["PAD_K"]) * c["PAD_K"]


def _rule_k(m: int, n: int, k: int, c: dict) -> int:
    """The K the shape rule sees: the padded copies' where the shape alone decides to copy."""
    return padded_k(k, c) if copies_by_shape(m, n, k, c) else k


# Decode, M <= 64, where 64 x 128 tiles fill under half a wave: K split in two inside 2-CTA
# clusters (SPLIT_CLUSTER, kernel.cu), 64-column tiles where two of each fit one wave, else 128;
# the ring depth with 16, 32 or 64 rows of A per buffer next to the received partial tile (64 x
# BN x 4 B), a fp32 bias and the larger staging tile (read back from the compiled kernel:
# tests/test_v5.py).
# Measured against the 64 x 128 split with the reduce kernel it replaced (results/probes/
# 20261201T075838-nvidia-h200-split-cluster-probe.json, interleaved, us; cuBLAS in brackets):
# 1 x 4096 x 4096 19.3 -> 18.1 (18.1), 16 x 4096 x 4096 19.5 -> 18.3 (18.4), 1 x 8192 x 8192
# 48.2 -> 45.6 (46.6, 128 columns), 1 x 4096 x 14336 42.6 -> 41.2 (41.3), 8 x 2048 x 8192 19.6 ->
# 19.4 (18.3), 1 x 1000 x 1000 8.8 -> 8.7 (10.4). Splitting 4 or 8 ways lost everywhere (2-4x the
# CTAs, past the clusters that fit), and at 16 x 14336 x 4096, which the rule does not split, the
# clustered split lost too (42.0 against 40.7). For M 17-64 (results/probes/
# 20261201T082041-nvidia-h200-split-cluster-m64.json, the same probe): 17 x 4096 x 4096 19.8 ->
# 18.4 (18.8), 32 x 4096 x 4096 20.1 -> 18.2 (19.1), 33 x 4096 x 4096 19.8 -> 18.6 (19.1), 64 x
# 4096 x 4096 21.0 -> 18.7 (18.0), 64 x 2048 x 8192 20.2 -> 19.9 (19.2), 32 x 8192 x 8192 49.9 ->
# 46.1 (44.0, 128 columns), 48 x 4096 x 14336 44.3 -> 42.0 (43.1); 24 x 14336 x 4096, unsplit
# by the rule, 40.4 against 42.1 in pairs.
# Decode with the operands swapped (SWAP_AB): where the rule runs unsplit 64 x 128 decode tiles
# (M <= 64, at least half a wave of them) and 128-row tiles of the weight fit one wave, the
# kernel computes 128 x BN tiles of C^T = W x^T instead: the weight on the wgmma's 64-row side
# (two consumer warpgroups), the M rows of x as its N (BN = 16, 32 or 64), stored transposed
# (kernel.cu SWAP_AB), as cuBLAS's decode kernel does (`nvjet_sm90_hsh_128x16_64x11`). Measured
# (SHAPES.md "Decode with the operands swapped"; results/probes/20261201T134511 and T135642): the
# plain GEMM 0.1-0.5 us slower at eight decode shapes, the fused epilogues 0.2-1.1 us faster
# where M <= 32 (the activation on 2,048 or 4,096 accumulators per tile, not 8,192), so the
# shipped SWAP_AB=2 swaps per call only there (swap_wanted); 1 swaps wherever the rule allows.
# The ring depth per BN (128 x 64 of W plus BN x 64 of x per buffer, next to the direct store's
# staging and a fp32 bias: tests/test_v5.py reads it back).
SWAP_RING = {16: 11, 32: 10, 64: 8}
# NARROW_N=1 (shipped; 0 gives a small N the tiles below): a small N, the mirror of decode
# (M > 64, N <= 32: the call's B is the few rows, A the large operand streamed once), takes tiles
# of 16 or 32 columns, stored directly: BM 128 where those tiles fill at least half a wave, else 64,
# and only where they fit one wave (and no stream-K fill: `_workers` keeps that to tiles of 64
# columns or more, as every other tile the rule picks is). Measured (results/probes/
# 20261201T174418, 4 interleaved rounds, AUTO=0 builds of these tiles, us; the rule's 128 x 256
# tiles; cuBLAS): 14336 x 16 x 4096 128 x 16 37.8 (78.1; 40.0), 14336 x 1 x 4096 40.3 (80.7;
# 40.5), 14336 x 32 x 4096 128 x 32 38.3 (83.9; 40.2), 4096 x 16 x 4096 64 x 16 16.0 (19.5; 18.6;
# 128 x 16: 23.0), 4096 x 16 x 14336 64 x 16 37.7 (72.7; 41.6). The ring depths: the swapped
# decode tile's for 128 rows (the same bytes per buffer), TILES's (64, 32) for 64 (tests/test_v5.py
# compiles them and reads gemm_smem_bytes back). The shipped rule against NARROW_N=0, 4 interleaved
# rounds (results/probes/20261201T190546, us; cuBLAS): 14336 x 8 x 4096 84.4 -> 37.4 (40.0), 16000 x 16 x
# 4096 86.6 -> 40.9 (43.7), 8192 x 32 x 8192 43.5 -> 41.7 (43.6), 4096 x 32 x 4096 17.1 -> 15.8 (18.3),
# 1000 x 16 x 1000 10.8 -> 8.3 (7.6), 2048 x 24 x 8192 24.4 -> 23.3 (19.1: 32 tiles, unsplit).
# SHAPES.md "A small N".
NARROW_RING = {(128, 16): 11, (128, 32): 10, (64, 16): 16, (64, 32): 16}


def _swap_bn(m: int) -> int:
    """The swapped tile's width: the rows of x rounded up to 16, 32 or 64."""
    return 16 if m <= 16 else 32 if m <= 32 else 64


# Prefill with the operands swapped (PREFILL_SWAP=1; 2 adds the 192-row tiles below, 3, shipped, the
# 256-row ones; 0 turns it off): at M 257-1025
# cuBLAS's kernels tile the rows of x in widths that are multiples of 8, not 64
# (nvjet_sm90_hsh_128x136_64x6_1x2, 128x176, 128x200, 256x136, ...: in cuBLAS's column-major terms
# the second size is x's; ncu on the H200, results/probes/20261204T044700-nvidia-h200-cublas-
# prefill-names.json, which shape ran which not recorded), where v5's rule computed 128- or
# 192-row tiles of C, up to 127 rows of them past M. So C^T's tiles: 128 rows of the weight by
# x's rows cut into near-equal tiles. The rule swaps where the rows of x fit t = 2, 3 or 4 tiles
# of 136, 176 or 200 (no tile empty, fewer rows than 128-row tiles of C compute, no 200 alone),
# those tiles fill at least 90% of one wave and at most two (pairs sharing the weight's rows by
# multicast where t is even: CLUSTER_N = 2), K is long enough (PREFILL_SWAP_MIN_K_TILES, M up to
# 800) and its rows start on a sector; of those, the t with the fewest rows of x per SM (waves x
# width); and only where that is no more than the tile the rule would pick otherwise leaves each SM
# (_auto). The rule's own
# builds against PREFILL_SWAP=0 (results/probes/20261204T111931-nvidia-h200-prefill-swap-rule.json,
# T113729 (prefill-swap-wider) and T114507 (prefill-swap-confirm), 4 interleaved rounds, us, plain,
# without -> with (cuBLAS)): 257 x 14336 x 4096 85.5 -> 59.5 (52.4), 257 x 8192 x 8192 74.5 ->
# 55.0 (53.8), 385 x 11008 x 4096 84.8 -> 65.6 (52.7; three tiles of 136, alone), 400 x 14336 x
# 4096 94.2 -> 82.5 (79.1; 200), 320 x 14336 x 4096 82.3 -> 73.6 (62.9; 176), 513 x 4096 x 14336
# 117.9 -> 95.7 (90.3; four of 136), 544 x 4096 x 4096 37.8 -> 31.6 (31.9); 4-39% less time at all
# 28 shapes timed where it swaps. Slower where it no longer does: 260 x 11008 x 4096 (one wave of
# 128 x 256) 49.7 -> 58.9, 545 x 8192 x 8192 (200 alone) 131.8 -> 149.7, 300 x 12288 x 4096 (1.09
# waves of 128 x 256 with stream-K) 64.0 -> 71.9. Stream-K over the swapped tiles lost (knobs,
# T051605: 61.3 against 58.8) and is not built with them. SHAPES.md "Prefill with the operands
# swapped".
PREFILL_SWAP_RING = {136: 6, 176: 5, 200: 5}
# Its reach (results/probes/20261204T135956-nvidia-h200-prefill-swap-reach.json, the rule's own builds
# with wider limits against PREFILL_SWAP=0, 4 interleaved rounds, us, plain): K from 16 k-blocks where
# M <= 576 (257 x 14336 x 2048 49.6 -> 35.1, 257 x 14336 x 1024 28.4 -> 23.2, 385 x 11008 x 2048 46.9
# -> 35.9, 544 x 8192 x 2048 42.2 -> 33.8; 3-29% at all 12 such shapes; at K = 512 mixed, 300 x 16384 x
# 512 18.8 -> 20.0, at 256 slower), and M 577-800 (four tiles of 176 or 200) from 32 k-blocks
# (700 x 8192 x 8192 161.3 -> 133.9, 704 x 8192 x 4096 89.9 -> 71.4, 769 x 4096 x 4096 47.0 -> 41.8;
# 4-21% at all 8 with 64 or more; at 16, 800 x 4096 x 1024 17.8 -> 17.8). Between 32 and 63, the tiles
# as knobs (results/probes/20261204T144913-nvidia-h200-prefill-swap-gaps.json, 3 rounds): 704 x 8192 x
# 2048 48.1 -> 41.2, 700 x 8192 x 3072 65.2 -> 55.8, 800 x 8192 x 2560 61.0 -> 53.6, 641 x 4096 x 3072
# 31.7 -> 30.8; the rule's own builds there (T145126, prefill-swap-reach32): 3-23% less at 10 of 11
# shapes, tied at 700 x 4096 x 2048 (23.4 -> 23.5; 23.7 in T135956), kept for a simpler rule.
# Under 16 k-blocks (M <= 576) the tiles of 136 won and the wider ones mostly lost, as knobs
# (results/probes/20261204T151505-nvidia-h200-prefill-swap-shortk.json and T135956, T144913, us,
# the rule -> the swapped tile): 136 at 8-15 k-blocks faster at all 12 shapes timed, 0.6-16%
# (257 x 16384 x 896 26.1 -> 22.0, 544 x 8192 x 896 25.2 -> 21.2, 385 x 11008 x 896 25.3 -> 21.6
# alone); 176 and 200 slower at 7 of 9 (400 x 14336 x 640 21.3 -> 23.7, 330 x 16384 x 896 24.0 ->
# 26.0); at 4 k-blocks 136 lost too (257 x 14336 x 256 13.5 -> 14.3).
# {the largest M: {the tile's width: the fewest k-blocks it needs}} (past M 576 only four tiles of
# 176 or 200 hold the rows of x)
PREFILL_SWAP_MIN_K_TILES = {576: {136: 8, 176: 16, 200: 16}, 800: {136: 32, 176: 32, 200: 32}}


# Tiles of 192 rows of the weight (PREFILL_SWAP=2 and 3; 1 keeps the 128-row tiles only): three
# consumer warpgroups of 160 registers (kernel.cu), 4 buffers of (192 + BN) x 64 x 2 B. Where the
# weight's rows in tiles of 192 and the rows of x in two to four tiles fit one wave (of pairs where
# they are even), a tile of C^T 1.5x taller instead of a second wave of 128-row tiles. Their tiles
# as knobs against the rule (results/probes/20261204T171346-nvidia-h200-prefill-swap-192-knobs.json,
# 4 interleaved rounds, us, plain, the rule -> 192 rows (cuBLAS)): 400 x 12288 x 4096 81.0 -> 61.3
# (59.5; 200 in pairs), 300 x 12288 x 4096 66.7 -> 53.1 (48.5; 176 in pairs), 260 x 11008 x 4096
# 50.9 -> 42.8 (44.3; 136 in pairs), 385 x 11008 x 4096 64.1 -> 58.5 (53.2), 545 x 8192 x 8192 131.3
# -> 114.1 (104.8; 200 alone), 576 x 8192 x 4096 70.4 -> 60.5 (55.7); in two waves (257 x 14336 x
# 4096) every one slower. At 16-48 k-blocks and M 577-800 (T172041, prefill-swap-192-reach, 3
# rounds): 400 x 12288 x 1024 29.2 -> 23.2 (20.5), 260 x 11008 x 1024 18.8 -> 17.3, 545 x 8192 x
# 2048 42.0 -> 34.5, 576 x 8192 x 1024 28.0 -> 22.8, 700 x 6144 x 4096 61.6 -> 53.5 (50.7; four of
# 176 in pairs), 800 x 6144 x 4096 70.3 -> 59.6 (58.8); faster at all 11 shapes where the model
# below picks them, slower at the two where it does not (640 x 6144 x 8192, 768 x 5120 x 4096: one
# wave of 128 x 256 with less per SM). Between the two heights the rule compares the time of each
# SM's tiles, modelled as waves x (BM x BN + PREFILL_SWAP_TILE_COST): a tile's fixed cost in
# elements of C, fitted to the first record (the 128 x 136 tiles in two waves, 64.1 us, against
# 192 x 200 in one, 58.5: about 8,030, taken as 8,192; it puts 192 x 136, 192 x 176 and 128 x 256 in one wave within 1%
# of their times there). K as PREFILL_SWAP_MIN_K_TILES asks, and at least 16 k-blocks (none shorter
# was timed).
# Tiles of 256 rows (PREFILL_SWAP=3, shipped; cuBLAS's nvjet_sm90_hsh_256x136): four consumer warpgroups
# of 112 registers (kernel.cu), so only 136 wide, the same 4 buffers, in the same model. As knobs
# against the rule with 192 (results/probes/20261204T174613-nvidia-h200-prefill-swap-256-knobs.json,
# 4 interleaved rounds, us, plain (cuBLAS)): 257 x 14336 x 4096 59.3 -> 53.5 (52.7; pairs, one wave
# where 128 x 136 needed two), 260 x 16384 x 4096 59.6 -> 55.7, 272 x 14336 x 8192 114.0 -> 105.8
# (105.8), 257 x 14336 x 2048 34.8 -> 31.7, 385 x 11008 x 4096 57.4 -> 54.5 (51.8; three alone,
# where the rule ran 192 x 200 in pairs), 400 x 11008 x 4096 57.5 -> 54.9; 513 x 8192 x 8192, where the
# model keeps 192 x 176, 103.9 against 103.7.
PREFILL_SWAP_TALL_RING = 4
PREFILL_SWAP_TALL_MIN_K_TILES = 16
PREFILL_SWAP_TILE_COST = 8192


class PrefillTile(NamedTuple):
    """A swapped prefill tile (`_prefill_swap`): BM rows of the weight by BN of x, CLUSTER_N, waves."""
    bm: int
    bn: int
    cluster_n: int
    waves: int

    def elements(self) -> int:
        """Elements of C each SM computes."""
        return self.waves * self.bm * self.bn

    def modelled(self) -> int:
        """Each SM's modelled time, in elements of C: waves x (BM x BN + PREFILL_SWAP_TILE_COST)."""
        return self.waves * (self.bm * self.bn + PREFILL_SWAP_TILE_COST)


def _x_tiles(m: int, t: int) -> tuple[int, int] | None:
    """x's M rows cut into t tiles: (BN, CLUSTER_N), the narrowest of PREFILL_SWAP_RING's widths
    holding ceil(M / t) rows, in pairs where t is even; None where a tile would lie past M or the t
    tiles hold no fewer rows than 128-row tiles of C compute."""
    bn = next((b for b in PREFILL_SWAP_RING if b >= cdiv(m, t)), None)
    if bn is None or (t - 1) * bn >= m or t * bn >= cdiv(m, 128) * 128:
        return None
    return bn, 2 if t % 2 == 0 else 1


def _prefill_swap(m: int, n: int, k: int, dev, level: int = 3) -> PrefillTile | None:
    """The swapped prefill tile for the call (above), or None; level: PREFILL_SWAP (1: 128-row
    tiles, 2: 192-row tiles too, 3: and 256-row ones)."""
    min_k_tiles = next((t for top, t in PREFILL_SWAP_MIN_K_TILES.items() if m <= top), None)
    if m <= 256 or min_k_tiles is None or sector_misaligned(k):
        return None
    best = None
    for t in (2, 3, 4):
        if (xt := _x_tiles(m, t)) is None:
            continue
        bn, cn = xt
        if cn == 1 and bn > 136 or cdiv(k, 64) < min_k_tiles[bn]:  # (200 alone lost: 545 x 8192 x 8192,
            continue                                                 # 576 x 8192 x 4096)
        ctas = cdiv(n, 128) * t
        waves = cdiv(cdiv(ctas, cn), dev.clusters(cn))
        if 10 * ctas < 9 * dev.sm_count or waves > 2:
            continue
        if best is None or waves * bn < best.waves * best.bn:
            best = PrefillTile(128, bn, cn, waves)
    if level < 2:
        return best
    tall = None
    for bm, t in itertools.product((192, 256) if level >= 3 else (192,), (2, 3, 4)):  # in one wave
        if (xt := _x_tiles(m, t)) is None:                                             # (of pairs where
            continue                                                                   # t is even)
        bn, cn = xt
        if (bm == 256 and bn > 136) or cdiv(k, 64) < max(PREFILL_SWAP_TALL_MIN_K_TILES, min_k_tiles[bn]):
            continue
        if cdiv(cdiv(n, bm) * t, cn) > dev.clusters(cn):
            continue
        if tall is None or bm * bn < tall.bm * tall.bn:
            tall = PrefillTile(bm, bn, cn, 1)
    if tall and (best is None or tall.modelled() < best.modelled()):
        return tall
    return best


# M just past 128 with the operands swapped (MID_SWAP=1, shipped; 0 turns it off): for M 129-192
# all of x's rows in one tile of C^T, as wide as the narrowest of MID_SWAP_WIDTHS that holds them,
# by 64 rows of the weight (one consumer warpgroup) where those tiles fit one wave, or by 128 where
# the rule would otherwise take one row of 192 x 128 tiles (N 11,265-16,896 on 132 SMs). Where they
# run, the rule took 64 x 256 tiles (three rows of them, EDGE_SHIFT's last one computing again the
# rows before it) or 192 x 128 ones with A_ROWS; the swapped tile computes at most 31 rows of x past
# M (M = 145 in a tile 176 wide), and its TMA box for x holds only the rows that exist (kernel.cu B_ROWS: zero-filled rows cost
# load time, 150 x 8192 x 4096 34.4 us with a box of 176 rows, 27.4 with 152). As knobs
# (results/probes/20261204T195124-nvidia-h200-mid-swap-knobs.json and T195309 (mid-swap-widths),
# interleaved rounds, us, plain, the rule ->
# the swapped tile (cuBLAS)): 129 x 6144 x 4096 28.0 -> 22.8 (24.4; 64 x 136), 136 x 6144 x 4096
# 27.6 -> 22.0, 129 x 8192 x 4096 29.9 -> 25.8 (28.3), 129 x 8192 x 8192 52.9 -> 45.6 (48.2),
# 144 x 8192 x 4096 30.2 -> 27.5 (29.8; 64 x 144), 160 x 6144 x 4096 28.0 -> 25.2 (24.9; 64 x 176),
# 176 x 6144 x 4096 28.0 -> 24.4 (26.8), 192 x 8192 x 4096 30.6 -> 29.3 (32.1; 64 x 192),
# 129 x 12288 x 4096 40.6 -> 35.7 (37.8; 128 x 136); level at 160 x 8192 x 4096 (29.9 both), slower
# where the 64-row tiles fill only half a wave (129 x 4096 x 4096 18.9 -> 19.6: not taken) and where
# a width leaves many rows of x empty (144 x 8192 x 4096 with 176: 36.1). The rule's own builds
# against MID_SWAP=0 (results/probes/20261204T195558-nvidia-h200-mid-swap-rule.json and T195808
# (mid-swap-brows), 4 interleaved rounds, us, plain, without -> with (cuBLAS)): 129 x 6144 x 4096
# 27.8 -> 22.5 (24.5), 144 x 6144 x 14336 80.5 -> 60.4 (62.2), 150 x 8192 x 4096 30.3 -> 27.4
# (29.2), 184 x 6144 x 8192 48.6 -> 43.6 (46.0), 129 x 12288 x 4096 40.0 -> 36.0 (37.1), 129 x
# 14336 x 4096 43.1 -> 40.4 (41.9), 150 x 16384 x 4096 47.0 -> 45.8 (47.2); 2-25% less at all 22
# shapes where it swaps (0.90-1.09x cuBLAS, from 0.77-1.01x); at 16 k-blocks see
# MID_SWAP_MIN_K_TILES. SHAPES.md "M just past 128 with the operands swapped".
MID_SWAP_WIDTHS = (136, 144, 176, 192)
# The ring per tile (BM, BN): as many buffers of (BM + BN) x 64 x 2 B as fit next to the direct
# store's staging and a fp32 bias (tests/test_v5.py compiles them and reads gemm_smem_bytes back).
MID_SWAP_RING = {(64, 136): 8, (64, 144): 8, (64, 176): 7, (64, 192): 6,
                 (128, 136): 6, (128, 144): 6, (128, 176): 5, (128, 192): 5}
# The fewest k-blocks per width: at 16 the tiles 136 wide won (129 x 8192 x 1024 13.2 -> 12.4 us) and
# those 176 and 192 wide lost (160 x 14336 x 1024 17.0 -> 17.6, 190 x 8192 x 1024 13.2 -> 13.8); at
# 32 the 176 won (168 x 7168 x 2048 18.0 -> 17.1; results/probes/20261204T195808-nvidia-h200-mid-
# swap-brows.json). 144 at 16 was not timed: 32, as the wider ones.
MID_SWAP_MIN_K_TILES = {136: 16, 144: 32, 176: 32, 192: 32}


def _mid_swap_width(m: int, k: int) -> int | None:
    """BN of the swapped tile for M 129-192 (above): the narrowest width that holds M, or None where
    K is too short for it. `_auto` takes it by 64 or 128 rows of the weight in place of its 64 x 256
    or 192 x 128 tiles."""
    bn = next(b for b in MID_SWAP_WIDTHS if b >= m)
    return bn if cdiv(k, 64) >= MID_SWAP_MIN_K_TILES[bn] else None


SPLIT_CLUSTER_RING = {(16, 64): 18, (16, 128): 9, (32, 64): 16, (32, 128): 8, (64, 64): 12, (64, 128): 7}


@functools.lru_cache(maxsize=4096)
def _auto(m: int, n: int, k: int, dev, max_splits: int = MAX_SPLITS,
          cluster_split: bool = True, swap: bool = False, narrow_n: bool = False,
          tall: bool = True, prefill_swap: int = 0,
          mid_swap: bool = False, lm_head: bool = False) -> tuple[int, int, int, int, int, int, int, bool]:
    """(BM, BN, STAGES, splits, CLUSTER_M, CLUSTER_N, SPLIT_CLUSTER, SWAP_AB) by the rule above
    (with SWAP_AB the tile is C^T's: BM rows of the weight, BN of x)."""
    sms = dev.sm_count
    nkt = cdiv(k, 64)
    if m <= 64:
        tiles = cdiv(n, 128)
        if swap and sms <= 2 * tiles and tiles <= sms:  # the unsplit decode tiles, one wave
            return 128, _swap_bn(m), SWAP_RING[_swap_bn(m)], 1, 1, 1, 1, True
        splits = 1
        if 2 * tiles < sms:
            if cluster_split and nkt >= 2:
                for bn in (64, 128):
                    if cdiv(n, bn) <= dev.clusters(2):  # one wave of pairs
                        return 64, bn, SPLIT_CLUSTER_RING[(_decode_rows(m), bn)], 1, 1, 1, 2, False
            splits = max(1, min(max_splits, nkt // MIN_K_TILES_PER_SPLIT, cdiv(2 * sms, tiles)))
            splits = cdiv(nkt, cdiv(nkt, splits))  # no empty split
        return 64, 128, DECODE_RING.get(_decode_rows(m), TILES[(64, 128)]), splits, 1, 1, 1, False
    if narrow_n and n <= 32:  # a small N (NARROW_N=1, above): 16 or 32 columns, one wave, unsplit
        bn = 16 if n <= 16 else 32
        bm = 128 if 2 * cdiv(m, 128) >= sms else 64
        if cdiv(m, bm) <= sms:
            return bm, bn, NARROW_RING[(bm, bn)], 1, 1, 1, 1, False

    # M 129-192 with MID_SWAP (the note at _mid_swap_width): C^T's tiles in place of the two below
    # (the rule asks for it only where `tall` holds too)
    sw = _mid_swap_width(m, k) if mid_swap and 128 < m <= 192 else None
    if 128 < m <= 192 and not sector_misaligned(k) and 3 * cdiv(n, 256) <= sms < 3 * cdiv(n, 128):
        # M 129-192 (the note above): three rows of 64 x 256 tiles in one wave, where 64 x 128 ones
        # would need a second; 128-row tiles would compute 256 rows for at most 192
        if sw and cdiv(n, 64) <= sms:  # (the swapped tiles by 64 rows of the weight fit one wave)
            return 64, sw, MID_SWAP_RING[(64, sw)], 1, 1, 1, 1, True
        return 64, 256, TILES[(64, 256)], 1, 1, 1, 1, False
    if tall and 128 < m <= 192 and not sector_misaligned(k) and 3 * cdiv(n, 256) > sms >= cdiv(n, 128):
        # ... and where those need a second wave: one row of 192 x 128 tiles (three consumer
        # warpgroups), holding only the A rows that exist (a_rows_for)
        if sw:  # (or the swapped tiles by 128 rows of the weight)
            return 128, sw, MID_SWAP_RING[(128, sw)], 1, 1, 1, 1, True
        return 192, 128, TILES[(192, 128)], 1, 1, 1, 1, False
    t192 = cdiv(m, 192) * cdiv(n, 128)
    mid192 = tall and 192 < m <= 576 and (m - 1) % 192 >= 128 and not sector_misaligned(k) and t192 <= 2 * sms \
        and 3 * (t192 - (cdiv(t192, sms) - 1) * sms) >= 2 * sms
    ps = _prefill_swap(m, n, k, dev, prefill_swap) if prefill_swap else None
    if ps:
        # M 257-800 (the note at _prefill_swap): C^T's tiles, 128, 192 or 256 rows of the weight by BN of x,
        # where their elements of C per SM (waves x BM x BN) are no more than the tile the rule would
        # pick otherwise leaves each SM: BM x BN where its tiles fit one wave, else its tiles spread
        # evenly over the SMs and 15% more (what its stream-K's balance cost, measured)
        bm, bn, _, splits, *_ = _auto(m, n, k, dev, max_splits, cluster_split, swap, narrow_n, tall, 0)
        tiles = cdiv(m, bm) * cdiv(n, bn) * splits
        if (ps.elements() * splits <= bm * bn) if tiles <= sms else \
                (100 * ps.elements() * splits * sms <= 115 * tiles * bm * bn):
            ring = PREFILL_SWAP_RING[ps.bn] if ps.bm == 128 else PREFILL_SWAP_TALL_RING
            return ps.bm, ps.bn, ring, 1, 1, ps.cluster_n, 1, True
    if mid192:
        # M 321-384 or 513-576 (the last 192-row tile holds at least 129 real rows) where the
        # 192 x 128 tiles fill one or two waves, the last at least two thirds full: the 128-row
        # tiles of the rule before computed up to 127 rows that do not exist, over a partial wave.
        # Measured against the rule before (results/probes/20261204T031911-nvidia-h200-mid192-
        # confirm.json, 4 interleaved rounds, us, plain, before -> 192 x 128 (cuBLAS)):
        # 513 x 11008 x 4096 88.0 -> 74.1 (64.9), 576 x 11008 x 4096 88.3 -> 74.1 (72.2),
        # 545 x 11001 x 4096 97.1 -> 76.9, 384 x 14336 x 4096 80.8 -> 76.2 (64.8), 352 x ... 80.0
        # -> 77.2, 513 x 4096 x 14336 132.8 -> 114.8 (85.6), 544 x 4096 x 8192 69.0 -> 67.9; within
        # 1% at 4096 x 4096 and 8192 x 8192 (513, 550, 576; 384); 1.1% slower at 321 x 14336 x 4096
        # (80.5 -> 81.4). SHAPES.md "M past 320: 192-row tiles on a wide weight".
        return 192, 128, TILES[(192, 128)], 1, 1, 1, 1, False
    # Where 128 x 128 tiles would need a second wave and K is whole k-blocks (rows a multiple of
    # 128 bytes): 128 x 144 where its tiles fit one wave (a smaller tile per SM than 128 x 192's,
    # stored directly), else 128 x 192 where its tiles fill 70-100% of one
    if k % 64 == 0 and cdiv(m, 128) * cdiv(n, 128) > sms:
        if cdiv(m, 128) * cdiv(n, 144) <= sms:
            return 128, 144, TILES[(128, 144)], 1, 1, 1, 1, False
        if 10 * sms <= 14 * cdiv(m, 128) * cdiv(n, 192) <= 14 * sms:
            return 128, 192, TILES[(128, 192)], 1, 1, 1, 1, False
    if lm_head and m <= 128 and k % 64 == 0 and cdiv(n, 256) > sms:
        # LM_HEAD=1 (shipped): M 65-128 on a weight wider than one wave of 128 x 256 tiles (an LM
        # head: few tokens, a vocabulary-wide weight streamed from HBM): 128 x 128 tiles with 6
        # buffers, stream-K where it pays, in place of 128 x 256 with 4. Measured on the H200
        # (results/probes/20261205T164900-nvidia-h200-lm-head-sweep.json, 5 interleaved rounds, us,
        # plain, the rule before -> LM_HEAD=1 (cuBLAS)): 72 x 50304 x 4096 130.9 -> 114.8 (115.9),
        # 100 x 40000 x 4096 108.9 -> 99.4 (99.0), 120 x 65536 x 2048 84.2 -> 81.0 (83.1),
        # 100 x 128256 x 4096 299.6 -> 288.2 (276.2), 96 x 151936 x 4096 345.2 -> 329.2 (324.1);
        # three H100 sweeps the same way (20261205T153440, T153647, T163537). Where 128 x 256 tiles
        # fit one wave the 128 x 128 tile lost 3-5% at N = 26000 and 30000 and was mixed at 32000
        # (SHAPES.md "An LM head: 128 x 128 tiles past one wave").
        return 128, 128, TILES[(128, 128)], 1, 1, 1, 1, False
    if 3 * cdiv(m, 128) * cdiv(n, 256) >= 2 * sms:  # a wave at least two thirds full
        # Rows that start mid-sector (sector_misaligned): the loads, not the tensor cores, bound
        # the tile: 2-CTA clusters share B.
        return 128, 256, TILES[(128, 256)], 1, 2 if sector_misaligned(k) else 1, 1, 1, False
    tiles = cdiv(m, 64) * cdiv(n, 128)
    if sector_misaligned(k) and nkt >= 16 and cdiv(m, 128) * cdiv(n, 128) <= dev.clusters(2) and (
            (nkt < N64_MIN_K_TILES and 2 * tiles > sms)
            or (m > 128 and nkt < PAIR_MAX_K_TILES and (2 * tiles > sms or nkt >= LONG_K_TILES))
            or (min(cdiv(m, 64), cdiv(n, 128)) >= 8 and nkt < PAIR_FULL_MAX_K_TILES and 4 * tiles > 3 * sms)):
        # Rows that start mid-sector and one wave of pairs: 64 x 128 tiles in 2-CTA clusters
        # sharing B (each CTA loads half of B and multicasts it to both), before the 64 x 128 tiles
        # alone (32-63 k-blocks) and the 2 x 2 clusters (64 or more), where
        #  - K is 16-31 k-blocks and the tiles fill over half a wave (any M > 64: 1000^3,
        #    results/probes/20261130T195254 and T195642, 12.1-12.5 against 12.9 us alone);
        #  - M > 128 and K is up to 65 k-blocks, over half a wave or against the 2 x 2 clusters
        #    (results/probes/20261202T192004-nvidia-h200-npairs.json, us, the rule before ->
        #    pairs: 1000 x 1000 x 2056 19.8 -> 16.1, 1000 x 1000 x 4104 28.3 -> 25.6, 1024 x 1024
        #    x 4104 27.9 -> 25.2, 768 x 1024 x 4104 23.2 -> 22.3, 500 x 1000 x 4104 23.5 -> 20.8);
        #  - at least 8 rows and 8 columns of tiles (M > 448, N > 896), K up to 97 k-blocks and
        #    the tiles fill over three quarters of a wave (results/probes/20261202T210457-nvidia-
        #    h200-pairsend.json, 20261202T212526-nvidia-h200-pairsend29.json, T213354 (rule29-wide)
        #    and T214713 (pairscheck), us, 2 x 2 ->
        #    pairs: 1000 x 1000 x 4616 28.6 -> 26.9, x 5128 30.1 -> 28.4, x 5640 31.4 -> 30.8,
        #    x 6152 33.0 -> 32.5, 1024 x 1024 x 5128 30.2 -> 29.1, 512 x 2048 x 5128 30.6 -> 30.2;
        #    128 tiles each. With 96 or fewer the 2 x 2 clusters won from 73 k-blocks on: 768 x 1024
        #    x 4616 24.5 against 24.7, 500 x 1000 x 5128 25.1 against 26.1; so they did on the
        #    4-row grids of 128 tiles, 200 x 4096 x 5128 30.6 against 33.3, 256 x 4096 x 5640 32.1
        #    against 34.8 (no grid of 4 tile columns was timed: their mirror, the 8 columns are asked
        #    for too); at 1000 x 1000 x 7176, 113 k-blocks, 36.7 against 37.8; at 8200, 129, 39.6
        #    against 44.7).
        return 64, 128, TILES[(64, 128)], 1, 2, 1, 1, False
    if sector_misaligned(k) and nkt >= LONG_K_TILES:
        # Rows that start mid-sector and a long K: the loads, not the SMs, bound it;
        # 2 x 2 clusters share A along the tile row and B down the column, halving each CTA's
        # copies. M <= 128: 64 x 128 tiles (both tile rows of a cluster hold rows of A); else
        # 128 x 128 where its clusters fit in one wave of clusters (30 of four on the H200, not
        # 33: DeviceInfo.clusters), else 128 x 256 where those do.
        if m <= 128:
            return 64, 128, TILES[(64, 128)], 1, 2, 2, 1, False
        for bm, bn in ((128, 128), (128, 256)):
            if cdiv(m, 2 * bm) * cdiv(n, 2 * bn) <= dev.clusters(4):
                return bm, bn, TILES[(bm, bn)], 1, 2, 2, 1, False
    if tiles <= sms and (nkt >= N64_MIN_K_TILES or not sector_misaligned(k)):
        # 64 x 128 tiles in one wave, K split to fill it where most SMs would idle and the
        # splits stay long: at least 32 k-blocks each under a quarter wave, 64 under a half.
        splits = 1
        if 4 * tiles <= sms:
            splits = max(1, min(max_splits, sms // tiles, nkt // 32))
        elif 2 * tiles < sms:
            splits = max(1, min(max_splits, sms // tiles, nkt // 64))
        if splits == 1 and cdiv(m, 64) * cdiv(n, 64) <= sms:  # unsplit: 64 x 64 where they fit the wave
            return 64, 64, TILES[(64, 64)], 1, 1, 1, 1, False
        return 64, 128, TILES[(64, 128)], cdiv(nkt, cdiv(nkt, splits)), 1, 1, 1, False  # (no empty split)
    if 3 * sms <= 4 * cdiv(m, 64) * cdiv(n, 192) <= 4 * sms:
        # 64 x 128 tiles would need a second wave and 128 x 128 ones leave SMs idle (M 257-384 at
        # N = 4096: 96 of 132): one wave, at least three quarters full, of 64 x 192 tiles gives
        # each SM 3/4 of a 128 x 128 tile's work (one consumer warpgroup, m64n192k16).
        # Measured where they make 108-132 tiles (results/probes/20261203T224849-nvidia-h200-
        # bn192-probe.json and T224917 (bn192-wide), 5 interleaved rounds, us, 128 x 128 ->
        # 64 x 192 (cuBLAS): 257 x 4096 x 4096 27.3 -> 23.1 (22.5), 320 x 4096 x 4096 27.3 -> 23.3
        # (24.5), 384 x 4096 x 4096 27.5 -> 24.0 (25.3), 384 x 4096 x 8192 52.4 -> 40.8 (41.7),
        # 200 x 5000 x 4096 27.6 -> 23.7 (24.8), 500 x 3072 x 4096 27.6 -> 25.3 (23.3),
        # 300 x 4096 x 2048 17.6 -> 15.1 (14.0), 300 x 4096 x 1000 15.6 -> 14.2 (11.2); with
        # bias + gelu 29.2-29.5 -> 24.0-25.0 at M 257-384). Fewer tiles were not timed: 128 x 128
        # keeps them (with SK_FILL sharing the units where it pays, 384 x 3000 x 6016).
        return 64, 192, TILES[(64, 192)], 1, 1, 1, 1, False
    return 128, 128, TILES[(128, 128)], 1, 1, 1, 1, False


class Rule(NamedTuple):
    """The shape rule's answer (`_auto`'s tuple, named)."""
    bm: int
    bn: int
    stages: int
    splits: int
    cluster_m: int
    cluster_n: int
    split_cluster: int
    swap: bool


def _rule(m: int, n: int, k: int, c: dict, dev) -> Rule:
    """_auto's answer for a call under the configuration c (AUTO=1)."""
    alone = c["CLUSTER_M"] * c["CLUSTER_N"] == 1  # (the swapped, small-N and 192-row tiles run unclustered)
    swap = c["SWAP_AB"] == 1 and alone
    # The prefill swap's pairs: a call's own defines (plan, geometry: the configuration merged with
    # defines_for's answer) say SWAP_AB=1 and CLUSTER_N=2, and must get the same answer again
    prefill = c["PREFILL_SWAP"] if c["SWAP_AB"] != 0 and c["CLUSTER_M"] == 1 and (alone or c["SWAP_AB"] == 1) else 0
    return Rule(*_auto(m, n, _rule_k(m, n, k, c), dev, c["MAX_SPLITS"], _cluster_split_ok(c), swap,
                       bool(c["NARROW_N"]) and alone, alone, prefill, bool(c["MID_SWAP"]) and c["SWAP_AB"] != 0 and alone,
                       bool(c["LM_HEAD"]) and alone))


def swap_wanted(call: Call) -> int:
    """SWAP_AB as a call asks for it: 1 where SWAP_AB=1, or where SWAP_AB=2 (shipped) and the
    epilogue has an activation and M <= 32, or M > 64 with PREFILL_SWAP >= 1 or MID_SWAP=1 (both with AUTO=1: the
    rule decides); else 0. (`swapped` then says where the rule allows.)"""
    c, m = call.cfg, call.m
    if c["SWAP_AB"] == 1:
        return 1
    return int(c["SWAP_AB"] == 2 and bool(c["AUTO"]) and ((m > 64 and bool(c["PREFILL_SWAP"] or c["MID_SWAP"]))
                                                          or (call.epilogue.activation is not None and m <= 32)))


def swapped(m: int, n: int, k: int, c: dict, dev) -> bool:
    """Whether the kernel computes C^T's tiles from the operands swapped (SWAP_AB=1, above; the
    shipped 2 is resolved per call by `swap_wanted`, and reads as 0 here)."""
    if not c["AUTO"]:  # (a knob build: SWAP_AB=1 with the tile as given)
        return c["SWAP_AB"] == 1
    return _rule(m, n, k, c, dev).swap


def kernel_mn(m: int, n: int, k: int, c: dict, dev) -> tuple[int, int]:
    """The kernel's M and N for a call: the call's, or N and M where it runs swapped."""
    return (n, m) if swapped(m, n, k, c, dev) else (m, n)


def shape_config(m: int, n: int, k: int, c: dict, dev) -> tuple[int, int, int, int]:
    """(BM, BN, STAGES, splits) for a shape: the cost model's choice (AUTO=1), else the defines.
    Where the kernel runs swapped (`swapped`) the tile is C^T's."""
    if c["SPLIT_CLUSTER"] > 1 and not c["AUTO"]:  # the cluster's CTAs are the split
        return c["BM"], c["BN"], c["STAGES"], 1
    if c["AUTO"]:
        r = _rule(m, n, k, c, dev)
        bm, bn, stages, splits = r.bm, r.bn, r.stages, r.splits
        if r.swap:
            return bm, bn, stages, splits
        if a_rows_for(m, bm, c) == bm:  # whole A tiles in the ring (CLUSTER_N > 1): not the decode ring
            stages = min(stages, TILES.get((bm, bn), stages))
        return bm, bn, stages, splits
    nkt = cdiv(k, 64)
    splits = cdiv(nkt, cdiv(nkt, min(c["SPLIT_K"], nkt)))  # no empty split
    return c["BM"], c["BN"], c["STAGES"], splits


# SPLIT_CLUSTER = S (kernel.cu): the S CTAs of a cluster split one tile's k-blocks and ranks 1 ..
# S-1 hand their partial tiles to rank 0 through distributed shared memory (no workspace, no
# reduce kernel). SPLIT_CLUSTER 0 (shipped): the rule's choice with AUTO=1 (2 at decode shapes,
# above), none with AUTO=0; 1: never (the rule splits by units and the reduce kernel instead);
# 2, 4, 8 with AUTO=0: that S. Fewer ranks where K has too few k-blocks for S ranges (none may be
# empty).
def _cluster_split_ok(c: dict) -> bool:
    """Whether the rule may split K in clusters: SPLIT_CLUSTER not 1 and no cluster configured
    for sharing loads (CLUSTER_M, CLUSTER_N: kernel.cu takes one kind of cluster at a time)."""
    return c["SPLIT_CLUSTER"] != 1 and c["CLUSTER_M"] * c["CLUSTER_N"] == 1


def split_cluster(m: int, n: int, k: int, c: dict, dev) -> int:
    """kernel.cu's SPLIT_CLUSTER for a call: the rule's (AUTO=1) or the configured S, halved until
    every rank's range of k-blocks is non-empty."""
    s, nkt = c["SPLIT_CLUSTER"], cdiv(k, 64)
    if c["AUTO"]:
        s = _rule(m, n, k, c, dev).split_cluster
    s = max(s, 1)
    while s > 1 and cdiv(nkt, s) * (s - 1) >= nkt:
        s //= 2
    return s


def cluster_for(m: int, n: int, k: int, c: dict, dev) -> tuple[int, int]:
    """(CLUSTER_M, CLUSTER_N) for a shape: as configured where either is above 1 or AUTO=0, else
    the rule's choice."""
    if c["AUTO"] and c["CLUSTER_M"] == 1 and c["CLUSTER_N"] == 1:
        r = _rule(m, n, k, c, dev)
        return r.cluster_m, r.cluster_n
    return c["CLUSTER_M"], c["CLUSTER_N"]


def check_config(c: dict) -> None:
    rules = [
        (c["BK"] == 64, "BK == 64 (one 128-byte swizzle row: the TMA box and the wgmma descriptor)"),
        (c["BM"] in (64, 128, 192, 256), "BM 64, 128, 192 or 256 (one to four consumer warpgroups of 64 rows)"),
        (c["BM"] != 256 or (c["SWAP_AB"] == 1 and c["BN"] <= 136 and c["CLUSTER_M"] == 1 and c["CLUSTER_N"] <= 2
                            and c["SPLIT_CLUSTER"] <= 1 and not c["EPI_OVERLAP"] and c["REG_SPLIT"] != 0),
         "BM 256 only with SWAP_AB=1, BN <= 136, CLUSTER_M = 1, CLUSTER_N <= 2, no SPLIT_CLUSTER or EPI_OVERLAP and REG_SPLIT 1 or 2 (four consumer warpgroups of 112 registers, the producer at 24)"),
        (c["BM"] != 192 or (c["BN"] <= 128 and c["CLUSTER_M"] * c["CLUSTER_N"] == 1 and c["SPLIT_CLUSTER"] <= 1
                             and c["SWAP_AB"] != 1 and not c["EPI_OVERLAP"])
         or (c["SWAP_AB"] == 1 and c["BN"] <= 200 and c["CLUSTER_M"] == 1 and c["CLUSTER_N"] <= 2
             and c["SPLIT_CLUSTER"] <= 1 and not c["EPI_OVERLAP"]),
         "BM 192 with BN <= 128 and no cluster, SPLIT_CLUSTER, SWAP_AB=1 or EPI_OVERLAP, or with SWAP_AB=1, BN <= 200, CLUSTER_M = 1 and CLUSTER_N <= 2 (three consumer warpgroups of 160 registers)"),
        (c["BN"] in (16, 32, 64, 112, 128, 136, 144, 176, 192, 200, 256), "BN 16, 32, 64, 112, 128, 136, 144, 176, 192, 200 or 256 (the wgmma shapes kernel.cu wraps)"),
        (c["STAGES"] >= 2, "STAGES >= 2"),
        (c["GROUP_M"] >= 1, "GROUP_M >= 1"),
        (c["PERSISTENT"] in (0, 1), "PERSISTENT 0 or 1"),
        (c["ORDER"] in (0, 1, 2, 3), "ORDER 0 (row-major), 1 (grouped), 2 (Hilbert) or 3 (XOR of block indices)"),
        (c["TMA_STORE"] in (0, 1), "TMA_STORE 0 or 1 (per call: 1 where C can be a tensor map)"),
        (c["CLUSTER_M"] in (1, 2, 4), "CLUSTER_M 1, 2 or 4 (CTAs on vertically adjacent tiles, each loading BN / CLUSTER_M rows of B and multicasting them to all)"),
        (c["BN"] % (8 * c["CLUSTER_M"]) == 0, "BN a multiple of 8 x CLUSTER_M (each CTA's slice of B whole 1024-byte swizzle atoms)"),
        (c["CLUSTER_N"] in (1, 2, 4), "CLUSTER_N 1, 2 or 4 (CTAs on horizontally adjacent tiles, each loading BM / CLUSTER_N rows of A and multicasting them along the row)"),
        (c["BM"] % (8 * c["CLUSTER_N"]) == 0, "BM a multiple of 8 x CLUSTER_N (each CTA's slice of A whole 1024-byte swizzle atoms)"),
        (c["CLUSTER_M"] * c["CLUSTER_N"] <= 8, "CLUSTER_M x CLUSTER_N <= 8 (the portable cluster size)"),
        (c["CLUSTER_M"] * c["CLUSTER_N"] == 1 or not c["SPLIT_FIXUP"], "CLUSTER_M = CLUSTER_N = 1 with SPLIT_FIXUP=1 (its counters are per tile, not per CTA of a cluster)"),
        (c["STMATRIX"] in (0, 1), "STMATRIX 0 or 1"),
        (c["STREAMK"] in (0, 1), "STREAMK 0 or 1 (1: per call, the kernel splits a last wave where it pays; 0: never)"),
        (c["AUTO"] in (0, 1), "AUTO 0 (the defines as given) or 1 (tile and split chosen by shape)"),
        (c["SPLIT_K"] >= 1, "SPLIT_K >= 1"),
        (c["SK_FILL"] >= 0, "SK_FILL >= 0 (0: never launch more blocks than units)"),
        (c["EPI_DEFER"] in (0, 1, 2), "EPI_DEFER 0, 1 or 2 (the k-block of the next unit after which the last store pass runs)"),
        (c["EPI_OVERLAP"] in (0, 1, 2, 3), "EPI_OVERLAP 0, 1, 2 or 3 (the k-blocks at each end of a 128 x 256 unit under which the other column half's epilogue runs)"),
        (c["MAX_SPLITS"] >= 1, "MAX_SPLITS >= 1 (the shape rule's most splits of K, AUTO=1)"),
        (c["PDL"] in (0, 1), "PDL 0 or 1 (1: the reduce kernel as a programmatic dependent launch)"),
        (c["PAD_K"] in (8, 64), "PAD_K 8 or 64 (the multiple of K a padded copy of A and B rounds up to)"),
        (c["SWAP_AB"] in (0, 1, 2), "SWAP_AB 0, 1 or 2 (tiles of C^T with the operands swapped, for decode where the rule runs unsplit decode tiles and for prefill where PREFILL_SWAP picks them: 1 always (with AUTO=0 the tile as given), 2 for decode with an activation and M <= 32 and for prefill, 0 never)"),
        (c["SWAP_AB"] != 1 or c["AUTO"] or (c["SPLIT_K"] == 1
                                             and c["SPLIT_CLUSTER"] <= 1 and not c["EPI_OVERLAP"]),
         "SWAP_AB=1 with AUTO=0 needs SPLIT_K=1, no SPLIT_CLUSTER and no EPI_OVERLAP (the swapped tile loop)"),
        (c["PAD_SECTOR"] >= 0, "PAD_SECTOR >= 0 (copy A and B where K's rows start mid-sector and M x N <= PAD_SECTOR x 2^20; 0: never)"),
        (c["L2_PROMO"] in (0, 64, 128, 256), "L2_PROMO 0 (by shape: l2_promotion), 64, 128 or 256 (the L2 promotion of A's and B's tensor maps, bytes)"),
        (c["NARROW_N"] in (0, 1), "NARROW_N 0 or 1 (1: tiles of 16 or 32 columns where N <= 32 and M > 64, AUTO=1)"),
        (c["EDGE_SHIFT"] in (-1, 0, 1), "EDGE_SHIFT -1 (by shape: edge_shift), 0 (never) or 1 (a partial last tile row or column moved back to end within 7 rows of C's edge wherever no stream-K splits a unit)"),
        (c["TMAP_PREFETCH"] in (0, 1), "TMAP_PREFETCH 0 or 1 (1: prefetch.tensormap of the maps before the barriers are set up)"),
        (c["L2_HINT"] in (-1, 0, 1, 2), "L2_HINT -1 (by shape: l2_hint), 0 (no hint), 1 (A's loads evict_last, B's evict_first) or 2 (A's evict_first, B's evict_last)"),
        (c["ACT_MATH"] in (0, 1), "ACT_MATH 0 (CUDA's erff, __expf, __fdividef) or 1 (fewer instructions and MUFU per element: kernel.cu)"),
        (c["SPLIT_FIXUP"] in (0, 1), "SPLIT_FIXUP 0 (a split of K summed by the reduce kernel) or 1 (by the unit that completes the tile)"),
        (c["SPLIT_CLUSTER"] in (0, 1, 2, 4, 8), "SPLIT_CLUSTER 0 (the rule's), 1 (none), 2, 4 or 8 (the CTAs of a cluster that split one tile's K, AUTO=0)"),
        (c["SPLIT_CLUSTER"] <= 1 or c["AUTO"] or (c["CLUSTER_M"] == c["CLUSTER_N"] == 1 and c["SPLIT_K"] == 1
                                                  and not c["SPLIT_FIXUP"] and not c["EPI_OVERLAP"]),
         "SPLIT_CLUSTER > 1 with AUTO=0 needs CLUSTER_M = CLUSTER_N = 1, SPLIT_K=1, SPLIT_FIXUP=0 and EPI_OVERLAP=0"),
        (c["CLUSTER_TAIL"] in (0, 1), "CLUSTER_TAIL 0 or 1 (1: no cluster barrier at the end; the producer waits for the last lap's releases)"),
        (c["CLUSTER_ARRIVE"] in (0, 1), "CLUSTER_ARRIVE 0 or 1 (1: the cluster barrier at the start arrives relaxed, the mbarrier inits released by their fence)"),
        (c["PREFILL_SWAP"] in (0, 1, 2, 3), "PREFILL_SWAP 0, 1, 2 or 3 (C^T's tiles with the operands swapped for M 257-800 where they fit, AUTO=1: 1 of 128 rows of the weight, 2 also of 192, 3 also of 256)"),
        (c["A_ROWS_128"] in (0, 1), "A_ROWS_128 0 or 1 (1: a 128-row tile at M 65-127 holds only the A rows that exist, rounded up to 8, shipped; 0: all 128)"),
        (c["MID_SWAP"] in (0, 1), "MID_SWAP 0 or 1 (1: C^T's tiles with the operands swapped for M 129-192 where they fit one wave, AUTO=1)"),
        (c["LM_HEAD"] in (0, 1), "LM_HEAD 0 or 1 (1, shipped: 128 x 128 tiles at M 65-128 where 128 x 256 ones need more than one wave and K % 64 == 0, AUTO=1)"),
        (c["ROW_PARITY"] in (0, 1, 2), "ROW_PARITY 0, 1 or 2 (tiles of C's even rows and of its odd rows, odd ones 8 columns early, where the call allows: row_parity; 1 there always, 2 where K % 16 == 8 and A's base starts a sector)"),
        (c["REG_SPLIT"] in (0, 1, 2), "REG_SPLIT 0, 1 or 2 (the producer warpgroup at 24 registers, the consumers at 240, 160 or 248: 1 in every build, 2 without stream-K)"),
    ]
    broken = [rule for ok, rule in rules if not ok]
    if broken:
        raise ValueError(f"v5_fused_epilogue cannot build {c}: needs " + "; ".join(broken))


# Where C cannot be a tensor map (N % 8 != 0 or a base not 16-byte aligned) the kernel stores C
# itself (coalesced, bounds-checked). A TMA store into a padded copy of C plus one CuPy copy into
# `out` was measured slower at 4095 x 4097 x 4104: 0.409 ms against 0.338 ms
# (results/probes/20261130T102800 and T101848-nvidia-h200-v5-tails.json).
def c_path(m: int, n: int, out_ptr: int) -> str:
    """"tma" (C is a tensor map) or "direct" (the kernel stores C with bounds checks)."""
    return "tma" if n % 8 == 0 and out_ptr % 16 == 0 else "direct"


# Host time per call: the rule and the helpers around it (shape_config, streamk_pays, _workers,
# l2_hint, ...) ask `_auto` some thirty times for one call's defines, each a cached lookup, but
# together a gemm() call took 110-190 us on the H200's host, 41-71 us with this
# (results/probes/20261201T235930-nvidia-h200-hostparts-probe.json; README "The call on the
# host"). A Linear layer calls the same few shapes again and again: what a call's shape,
# configuration, epilogue and pointer alignment decide is decided once (`_decided`) and looked
# up after that. Bounded, like the harness's launch cache: ever-new shapes cannot grow it.
_DECIDED: dict = {}


def _decided(key: tuple, decide):
    hit = _DECIDED.get(key)
    if hit is None:
        if len(_DECIDED) > 4096:
            _DECIDED.clear()
        hit = _DECIDED[key] = decide()
    return hit


def _aligned16(*arrays) -> bool:
    """Whether every array's base is 16-byte aligned (None, a Call without operands: aligned)."""
    return all(x is None or x.data.ptr % 16 == 0 for x in arrays)


def _on_sector(arr) -> bool:
    """Whether an array's base starts a 32-byte sector (None, a Call without operands: it does)."""
    return arr is None or arr.data.ptr % 32 == 0


def defines_for(call: Call) -> dict:
    """The per-call defines (`_defines_for`), decided once per shape, configuration, epilogue and
    alignment of the pointers (`_decided`)."""
    epi = call.epilogue
    key = ("defines", call.m, call.n, call.k, call.dev, tuple(call.cfg.items()), epi.activation,
           None if epi.bias is None else epi.bias.dtype.str, _aligned16(call.out), _aligned16(call.a, call.b),
           _on_sector(call.a))
    return dict(_decided(key, lambda: _defines_for(call)))


def _defines_for(call: Call) -> dict:
    # Compile-time, per call: the tile (accumulator size, shared memory), the epilogue and the
    # store path, so the plain GEMM on a TMA-friendly C is v4's kernel plus tails and nothing
    # else. Kernel arguments: alpha, the split count. Each distinct set compiles once (disk
    # cache); what a workload uses is a handful (4 tiles x 5 activations x 3 biases x 3 paths).
    epi = call.epilogue
    c = {**call.cfg, "SWAP_AB": swap_wanted(call)}  # (then swapped(): where the rule allows it)
    m, n, k, dev = call.m, call.n, call.k, call.dev
    bm, bn, stages, splits = shape_config(m, n, k, c, dev)
    # (the TMA store stages 64-column boxes: a tile of 112, 144 or 32 columns stores directly)
    streamk = int(streamk_pays(m, n, k, c, dev))
    swap = swapped(m, n, k, c, dev)  # (C^T's tiles: stored directly, transposed)
    tma_c = int(splits == 1 and bn % 64 == 0 and not swap and c_path(m, n, call.out.data.ptr) != "direct")
    overlap = epi_overlap(m, n, k, c, dev) if tma_c else 0
    cm, cn = cluster_for(m, n, k, c, dev)
    a_rows = bm if swap or cn > 1 else a_rows_for(m, bm, c)
    copy = copies(call)
    parity = row_parity(m, n, k, c, dev, _on_sector(call.a)) if tma_c and not overlap and a_rows == bm \
        and not copy else 0
    return {"BM": bm, "BN": bn, "STAGES": stages,
            "A_ROWS": a_rows, "B_ROWS": b_rows_for(m, bn, swap, cm),
            "ACT": ACT_CODE[epi.activation],
            "BIAS": BIAS_CODE[epi.bias.dtype if epi.bias is not None else None],
            "PARTIAL": int(splits > 1), "TMA_STORE": tma_c,
            "EPI_DEFER": epi_defer(m, n, k, c, dev) if tma_c and not overlap and not parity else 0,
            "EPI_OVERLAP": overlap, "STREAMK": streamk,
            "SPLIT_CLUSTER": split_cluster(m, n, k, c, dev),
            "AFTER_COPY": int(copy and bool(c["PDL"])), "SWAP_AB": int(swap),
            "L2_HINT": l2_hint(m, n, k, c, dev), "EDGE_SHIFT": edge_shift(m, n, k, c, dev, bool(streamk)),
            "CLUSTER_M": cm, "CLUSTER_N": cn, "ROW_PARITY": parity}


# ROW_PARITY (kernel.cu; a knob, 2 ships): tiles of C's even rows and tiles of its odd rows, the
# odd ones running their k-blocks 8 columns early, so that where K % 16 == 8 every row of A a tile
# loads starts on a 32-byte sector (OPEN_QUESTIONS.md "Small square problems"). Its units are the
# same as without it, taken apart by parity; so they must pair up, and each must be a whole tile
# that TMA stores (defines_for adds: the TMA store, no overlapped store pass, whole A tiles, no
# padded copy, and then no deferred store pass). Right whatever K and wherever A's base lies
# (sectors decide only its speed): what the ordinary tiles compute, in other tiles.
def row_parity(m: int, n: int, k: int, c: dict, dev, a_on_sector: bool = True) -> int:
    """kernel.cu's ROW_PARITY for a call (1 or 0): where M is even, the unit rows (CLUSTER_M tile
    rows each) are even in number, K is not split (nor in clusters), no stream-K splits a unit and
    the kernel is not swapped; with ROW_PARITY=1 then always, with 2 (by shape) only where K % 16
    == 8, A's base starts a sector (`a_on_sector`: then its odd rows are the ones mid-sector) and
    no store pass would be deferred (epi_defer)."""
    if not c["ROW_PARITY"] or m % 2 or swapped(m, n, k, c, dev) or split_cluster(m, n, k, c, dev) > 1:
        return 0
    if c["ROW_PARITY"] == 2 and (k % 16 != 8 or not a_on_sector or epi_defer(m, n, k, c, dev)):
        return 0  # (2: nor where it would displace the deferred store pass, which gains at 128 x 256)
    bm, _, _, splits = shape_config(m, n, k, c, dev)
    cm = cluster_for(m, n, k, c, dev)[0]
    if splits > 1 or cdiv(m, bm * cm) % 2 or streamk_pays(m, n, k, c, dev):
        return 0
    return 1


# EPI_DEFER (kernel.cu): the last store pass of a tile waits in registers for the next tile's
# first k-block. Only a block that computes more than one unit has a next tile to hide it under;
# in one wave the build without it measured faster (results/probes/20261130T150925: 1000^3 13.3
# against 14.0 us, 1024^3 11.2 against 12.1, 1000 x 1000 x 4096 23.2 against 25.2: its k-loop is
# not unrolled or peeled, NVVM's loop with the pass inside it), and with more units than SMs it
# gains at 128 x 256 (4096 x 14336 x 4096: 660.0 against 678.5 us; 8192^3 bias+gelu_tanh 1589.5
# against 1619.0). With 128 x 128 tiles (one pass, all of it deferred) it lost even there:
# 2048 x 2048 x 4096 61.4 against 56.4 us, 2048 x 2048 x 1024 21.6 against 20.4
# (results/probes/20261130T152231 and T152255). So: 128 x 256 tiles only.
def epi_defer(m: int, n: int, k: int, c: dict, dev) -> int:
    """EPI_DEFER for this call: as configured where the tile is 128 x 256 (two store passes),
    some block computes more than one unit and K is not split (split-K partials are stored at
    once), else 0."""
    units, workers = _workers(m, n, k, c, dev)
    bm, bn, _, splits = shape_config(m, n, k, c, dev)
    return c["EPI_DEFER"] if units > workers and splits == 1 and (bm, bn) == (128, 256) else 0


# EPI_OVERLAP (kernel.cu): a 128 x 256 tile's two column halves take turns, so that each half's
# epilogue runs while the other half's wgmmas do. It needs every unit whole (no split of K, no
# stream-K: the halves meet at the unit's first and last EPI_OVERLAP k-blocks, 2 x EPI_OVERLAP of
# them at least) and the TMA store.
def epi_overlap(m: int, n: int, k: int, c: dict, dev) -> int:
    """EPI_OVERLAP for this call: as configured where the tile is 128 x 256, K is not split, the
    kernel splits no unit by stream-K and K has at least 2 x EPI_OVERLAP k-blocks, else 0."""
    d = c["EPI_OVERLAP"]
    if not d:
        return 0
    bm, bn, stages, splits = shape_config(m, n, k, c, dev)
    ok = (bm, bn) == (128, 256) and splits == 1 and d < stages and cdiv(k, 64) >= 2 * d \
        and not streamk_pays(m, n, k, c, dev)
    return d if ok else 0


def _workers(m: int, n: int, k: int, c: dict, dev) -> tuple[int, int]:
    """(units, workers): a unit is a (CLUSTER_M x CLUSTER_N tiles, split of K), a worker a
    cluster of that many blocks; persistent: min(units, clusters resident at once) workers
    (dev.clusters: SMs / cluster where the GPCs allow it), or all of them where stream-K shares
    out a wave that would leave SMs idle (sk_fills)."""
    bm, bn, _, splits = shape_config(m, n, k, c, dev)
    cm, cn = cluster_for(m, n, k, c, dev)
    km, kn = kernel_mn(m, n, k, c, dev)
    units = cdiv(km, bm * cm) * cdiv(kn, bn * cn) * splits
    if not c["PERSISTENT"]:
        return units, units
    s = split_cluster(m, n, k, c, dev)
    slots = dev.clusters(cm * cn * s)
    fill = s == 1 and not swapped(m, n, k, c, dev) and bn >= 64 and sk_fills(units, cdiv(k, 64), bm, splits, c, slots)
    return units, (slots if fill else min(units, slots))


# Under one wave (fewer units than SMs) the kernel can share every unit's k-blocks out over all
# SMs by stream-K (it splits every unit when the grid is wider than the units). Measured on the
# H200 (results/probes/*-lever-probe.json, SK_FILL=0 against 1 and 32): with 128-row tiles it
# gains where it leaves at least ~32 idle k-blocks per SM (128 x 4096 x 4096: 30.5 -> 25.9 us;
# 256 x 4096 x 4096 31.1 -> 27.4; 256 x 2048 x 8192 52.4 -> 30.8) and loses below (128 x 14336 x
# 4096, 10 idle: 42.4 -> 47.5; 1000^3, 8 idle: 13.4 -> 19.0): the partial sums and the waits on
# them are a fixed cost that short ranges do not repay. With 64-row tiles (M <= 64) it lost at
# every shape tried, 32 idle included (40 x 8448 x 4096: 28.8 -> 30.4); a grid under half full
# there takes the split of K instead (_auto).
def sk_fills(units: int, k_tiles: int, bm: int, splits: int, c: dict, sms: int) -> bool:
    """Whether to launch one block per SM for fewer units than SMs and split them all by stream-K:
    128-row tiles, at least SK_FILL idle k-blocks per SM to gain, 4 k-blocks or more per SM."""
    return bool(c["STREAMK"] and c["SK_FILL"] and c["PERSISTENT"]) and bm == 128 and splits == 1 and \
        units < sms and (sms - units) * k_tiles >= c["SK_FILL"] * sms and units * k_tiles >= MIN_K_TILES_PER_SPLIT * sms


def geometry(m: int, n: int, k: int, c: dict, dev) -> Launch:
    bm, (cm, cn) = shape_config(m, n, k, c, dev)[0], cluster_for(m, n, k, c, dev)
    ctas = cm * cn * split_cluster(m, n, k, c, dev)
    return Launch(grid=(_workers(m, n, k, c, dev)[1] * ctas, 1, 1), block=(128 * (1 + bm // 64), 1, 1),
                  cluster=(ctas, 1, 1))


# Stream-K (v4's last-wave split, kernel.cu "schedule"): the kernel decides per launch which units
# to split (streamk_units: at least 12 idle k-blocks per worker in the last wave); streamk_pays is
# the same rule on the host (tests/test_schedule.py compares the two), used to hand the kernel its
# scratch only where it splits, and to build without the fixup (STREAMK=0) every call it would not
# split, as v4 does: the unused fixup code cost 7-13% at 128 x 128 tiles (2048 x 1024 x 1024 13.3
# against 12.4 us, 1024 x 2048 x 2048 19.5 against 17.9, 2048 x 2048 x 4096 56.4 against 51.5
# without EPI_DEFER; 4096^3 0.8%: results/probes/20261130T152255, v5 against v5-dp). (Until commit
# 978ed2a v5 was always STREAMK=1: a STREAMK=0 build with the erf gelu kept the accumulators in
# local memory, NVVM leaving the epilogue's pass loop rolled, and returned wrong elements on the
# H200 at commit b3795de. The pass loops are written out now, kernel.cu `static_for`, and every
# build v5 makes, STREAMK=0 ones included, is checked for local memory: tests/test_v5.py.)
# Measured in v5 (results/tuning/*-v5-streamk.json): the split gains 6-15% at 4095 x 4097 x 4104,
# 1537 x 3071 x 4104 and 1280 x 5120 x 8192, and is within +-0.5% at 8192^3 and 4096 x 14336 x
# 4096 (v4: +2-4%).
SK_MIN_IDLE = 12


def streamk_pays(m: int, n: int, k: int, c: dict, dev) -> bool:
    """Whether the kernel splits this call's last wave by stream-K (its streamk_units > 0)."""
    if split_cluster(m, n, k, c, dev) > 1 or swapped(m, n, k, c, dev):  # (kernel.cu: no stream-K with
        return False                                                     # SPLIT_CLUSTER or SWAP_AB)
    units, workers = _workers(m, n, k, c, dev)
    splits = shape_config(m, n, k, c, dev)[3]
    if units < workers:  # the grid sk_fills chose: every unit is split
        return True
    rem = units % workers
    return bool(c["STREAMK"]) and splits == 1 and units > workers and rem != 0 and \
        (workers - rem) * cdiv(k, 64) >= SK_MIN_IDLE * workers


def streamk_slots(call: Call, bm: int) -> int:
    """The 64-row fp32 partial slots v4's stream-K fixup needs where the kernel splits the last
    wave (streamk_pays, the kernel's own rule): one per consumer warpgroup of every block; else 0."""
    if not streamk_pays(call.m, call.n, call.k, call.cfg, call.dev):
        return 0
    cluster = call.cfg["CLUSTER_M"] * call.cfg["CLUSTER_N"]
    return _workers(call.m, call.n, call.k, call.cfg, call.dev)[1] * cluster * (bm // 64)


def streamk_scratch(slots: int, bn: int) -> tuple:
    """(partials, flags) for `slots` partial tiles of 64 x BN (streamk_slots), or two null
    pointers where there are none."""
    if not slots:
        return _NULL, _NULL
    part_bytes = slots * 64 * bn * 4
    buf = gpu.stream_scratch(part_bytes + 4 * slots, "v5_fused_epilogue")
    return buf[:part_bytes].view(np.float32), buf[part_bytes:part_bytes + 4 * slots].view(np.uint32)


# EDGE_SHIFT (kernel.cu): a partial last tile row or column moved back inside C, so that TMA reads
# real rows of A and B where it zero-filled rows past M and N. Zero-filled rows cost time: with
# one 64 x 128 build in pairs, 968 x 1000 x 1000 took 11.8-11.9 us and 1000^3 11.6, fewer real
# rows but more filled ones, and 1024 x 1024 x 1000 (no tail) 11.4 (results/probes/20261201T214205).
# Measured (results/probes/20261201T214628, 5 interleaved rounds, us, the rule without -> with;
# cuBLAS): 1000^3 11.7 -> 11.5 (10.1), 968 x 904 x 1000 12.8 -> 11.7 (10.3), 1000 x 1000 x 4096
# 19.1 -> 18.4 (17.9), 130 x 5000 x 5000 35.0 -> 34.6 (34.6); level at 1000 x 1000 x 4104,
# 1280 x 1728 x 8192, 1408 x 1600 x 4096 (33.7 -> 33.9) and, without tails, 1000 x 1000 x 1024
# and 1536 x 1536 x 4096. Most where M is just past a multiple of 64, the last tile row one real
# row (results/probes/20261201T220248, 4 rounds): 129 x 4096 x 14336 68.2 -> 48.0 (46.3), 129 x
# 4096 x 8192 37.8 -> 30.4 (32.8), 65 x 4096 x 14336 58.5 -> 41.2 (44.1), 65 x 4096 x 4096 22.8
# -> 16.7 (17.1), 257 x 4096 x 4096 33.9 -> 28.0 (23.0). Where units run in more than one wave
# it lost (4095 x 4097 x 4104 224.5 -> 227.2, 3000^3 91.0 -> 91.5): there the slowest tile does
# not set the time, and the filled rows are L2 traffic saved. Never with stream-K: a unit split
# over workers adds its partial sums in another order than the tile beside it, and the rows both
# write would differ in their last bits (tests/test_v5.py compares the bits with and without).
def edge_shift(m: int, n: int, k: int, c: dict, dev, streamk: bool | None = None) -> int:
    """kernel.cu's EDGE_SHIFT for a call: 0 where configured 0 or where stream-K splits a unit; 1
    where configured 1; by shape (-1, shipped) 1 where every unit runs in one wave. `streamk`:
    streamk_pays for the call, where the caller has it (defines_for), else computed here."""
    if c["EDGE_SHIFT"] == 0 or (m > 64 and swapped(m, n, k, c, dev)):  # (the swapped prefill tiles: measured without)
        return 0
    if streamk is None:
        streamk = streamk_pays(m, n, k, c, dev)
    if streamk:
        return 0
    if c["EDGE_SHIFT"] == 1:
        return 1
    units, workers = _workers(m, n, k, c, dev)
    return int(units <= workers)


def copies(call: Call) -> bool:
    """Whether this call copies A and B into padded rows first: for its shape, or for a base that
    is not 16-byte aligned (a Call without operands, as the probes build, counts as aligned)."""
    return copies_by_shape(call.m, call.n, call.k, call.cfg) or not _aligned16(call.a, call.b)


def _plan_shape(call: Call, copy: bool) -> tuple[int, int, int, int, int, int]:
    """What `plan` takes from the rule for a call (decided once: `_decided`): (BM, BN, splits,
    the K the kernel runs, stream-K's partial slots, the L2 promotion of A's and B's maps)."""
    m, n, k, c, dev = call.m, call.n, call.k, call.cfg, call.dev
    bm, bn, _, splits = shape_config(m, n, k, c, dev)
    k_run = padded_k(k, c) if copy else k
    # (the promotion for the call's M and N: before any swap)
    return bm, bn, splits, k_run, streamk_slots(call, bm), l2_promotion(m, n, k_run, c, dev)


def plan(call: Call, kernels) -> list:
    """The steps of one call: [pad A and B] -> main kernel -> [split-K reduction kernel, where
    SPLIT_FIXUP=0: with 1 the main kernel sums the splits itself]."""
    cp = gpu.cupy()
    m, n, k, epi = call.m, call.n, call.k, call.epilogue
    copy = copies(call)
    bm, bn, splits, k_run, sk_slots, promo = _decided(
        ("plan", m, n, k, call.dev, tuple(call.cfg.items()), copy), lambda: _plan_shape(call, copy))
    steps = []
    a, b = call.a, call.b
    if copy:
        # TMA needs 16-byte row strides and bases: copy into zero-padded K (the zeros add nothing).
        # Costs one read and write of A and B per call (README: "Where TMA cannot go"). PAD_K = 64
        # pads the rows to whole 128-byte lines while copying anyway (8 would do for TMA; the rows
        # would then be misaligned, SHAPES.md "B shared at large shapes ..."). One launch
        # copies both; the main kernel is its programmatic dependent where PDL=1 (defines_for's
        # AFTER_COPY, which makes the kernel wait for the copy).
        a_pad, b_pad = cp.empty((m, k_run), cp.float16), cp.empty((n, k_run), cp.float16)
        blocks = min(cdiv(m + n, PAD_WARPS), 8 * call.dev.sm_count)
        steps.append(kernels.launcher((a, b, a_pad, b_pad, np.int32(m), np.int32(n), np.int32(k), np.int32(k_run)),
                                      "gemm_v5_fused_epilogue_pad", grid=(blocks, 1, 1), block=(32 * PAD_WARPS, 1, 1)))
        a, b = a_pad, b_pad
    if call.cfg["SWAP_AB"] == 1:  # (defines_for) C^T = B A^T: the weight is the kernel's A, x its B
        a, b, m, n = b, a, n, m
    tma_c = call.cfg["TMA_STORE"]  # defines_for: 1 only where C is a tensor map and K is not split
    bias = epi.bias if epi.bias is not None else _NULL
    ldw = n + n % 2
    ws = cp.empty((splits, m, ldw), cp.float32) if splits > 1 else _NULL
    sk_part, flags = streamk_scratch(sk_slots, bn)
    fixup = splits > 1 and call.cfg["SPLIT_FIXUP"]
    if fixup:  # one arrival counter per tile, left at zero by the unit that completes the tile
        flags = gpu.stream_scratch(4 * cdiv(m, bm) * cdiv(n, bn), "v5_fused_epilogue.split").view(np.uint32)
    # (with a cluster each CTA loads BN / CLUSTER_M rows of B and A_ROWS / CLUSTER_N rows of A and
    # multicasts them to the CTAs on its tile column and row)
    # (ROW_PARITY: A's and C's maps take the even and odd rows apart, tma.tensor_map's row_parity)
    parity = bool(call.cfg["ROW_PARITY"])
    args = (tma.tensor_map(a, call.cfg["A_ROWS"] // call.cfg["CLUSTER_N"], 64, l2_promotion=promo, row_parity=parity),
            tma.tensor_map(b, call.cfg["B_ROWS"] // call.cfg["CLUSTER_M"], 64, l2_promotion=promo),
            tma.tensor_map(call.out, 64, 64, row_parity=parity) if tma_c else _NO_MAP, call.out,
            np.int32(m), np.int32(n), np.int32(k_run), bias, np.float32(epi.alpha),
            ws, np.int32(splits), np.int32(ldw), sk_part, flags)
    steps.append(kernels.launcher(args, dependent=bool(call.cfg["AFTER_COPY"])))
    if splits > 1 and not fixup:
        blocks = min(cdiv(m * n, REDUCE_THREADS), 8 * call.dev.sm_count)
        steps.append(kernels.launcher(
            (ws, np.int32(splits), np.int32(m), np.int32(n), np.int32(ldw), call.out, bias, np.float32(epi.alpha)),
            "gemm_v5_fused_epilogue_reduce", grid=(blocks, 1, 1), block=(REDUCE_THREADS, 1, 1),
            dependent=bool(call.cfg["PDL"])))
    return steps


STAGE = KernelStage.here(
    __file__,
    idea="fused bias/alpha/activation epilogue, any shape (TMA edges, split K), tile chosen by shape",
    geometry=geometry,
    requires=Requirement(exact_arch="sm_90a"),
    constraints_for=Constraints(alignment=2),
    defines=CONFIG,
    check_config=check_config,
    defines_for=defines_for,
    plan=plan,
    epilogue=frozenset({"bias", "alpha", "activation"}),
    reuse_tile_for=lambda c: (c["BM"], c["BN"]),
    expect_sass=("HGMMA", "UTMALDG", "UTMASTG", "SYNCS"),
)
