"""Diagrams drawn from the kernels' own address arithmetic, for the walkthrough notebooks.

Every diagram is a function `draw(defines, ax=None, **options)` taking a stage's defines (its
`CONFIG`, or a variant's), so `stages.get(name).variant(PAD=0).defines` redraws it for the
variant. The arithmetic behind each picture is a small pure function written exactly as the
kernel writes it (the kernel line is quoted in `KERNEL_LINES`, and tests/test_diagrams.py checks
that the quoted line is still in the kernel of every stage that shows the diagram), so a test can
check the picture's claim (no bank conflict, 8 different chunks, ...) without drawing it.

A stage names the diagrams it shows in its why.py: `DIAGRAMS = [("banks_padded", {...}), ...]`;
`KINDS` maps a name to its drawing function and `PART` to the part of the kernel walk it
illustrates (a why.py entry may say otherwise with a "part" option).

The shared-memory model: 32 banks of 4 bytes. A warp's access of `width` bytes per lane is served
in phases of 128 / width lanes (8 lanes for 16-byte accesses; an `ldmatrix` phase is one 8 x 8
matrix, i.e. 8 lanes' 16-byte row addresses); within a phase, lanes that read the same address
share it (a broadcast), and n different addresses in one bank cost n passes ("n-way conflict").
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch, Rectangle

BANKS = 32
BANK_BYTES = 4
LINE_BYTES = 128      # an L1 cache line; one wavefront serves the lanes that fall in one line


# ---- the bank model ------------------------------------------------------------------------
def banks_of(addr: int, width: int) -> list[int]:
    """The banks an access of `width` bytes at byte address `addr` touches."""
    return [(addr // BANK_BYTES + i) % BANKS for i in range(max(width // BANK_BYTES, 1))]


def phases(addrs: list[int], width: int) -> list[list[int]]:
    """Lane indices served together: 128 / width lanes per phase (32 for 4-byte accesses)."""
    per = max(128 // width, 1) if width >= 4 else 32
    per = min(per, 32)
    return [list(range(i, min(i + per, len(addrs)))) for i in range(0, len(addrs), per)]


def conflict_ways(addrs: list[int], width: int) -> list[int]:
    """Per phase, the most distinct addresses that meet in one bank (1 = conflict-free; lanes
    reading the same address count once: a broadcast)."""
    out = []
    for lanes in phases(addrs, width):
        per_bank: dict[int, set] = {}
        for lane in lanes:
            for bank in banks_of(addrs[lane], width):
                per_bank.setdefault(bank, set()).add(addrs[lane])
        out.append(max((len(v) for v in per_bank.values()), default=1))
    return out


# ---- (a) padded fp32 rows: the compute loop's 16-byte loads of B ----------------------------
def padded_b_addresses(defines: dict, warp: int = 0, j: int = 0, kk: int = 0) -> list[int]:
    """Byte offsets (from the shared buffer's start) that lanes 0..31 of `warp` read for the
    compute loop's float4 load of B (iteration j of the column loop, k step kk)."""
    bm, bn, bk, tn = defines["BM"], defines["BN"], defines["BK"], defines["TN"]
    lds = bk + defines["PAD"]                       # #define LDS (BK + PAD)
    bs = bm * lds                                   # Bs = As + BM * LDS (buffer 0: As = smem)
    out = []
    for lane in range(32):
        tid = 32 * warp + lane
        tx = tid % (bn // tn)                       # const int tx = threadIdx.x % (BN / TN), ...
        out.append(4 * (bs + (tx + j * (bn // tn)) * lds + kk))  # Bs + (tx + j * (BN / TN)) * LDS + kk
    return out


def banks_padded(defines: dict, ax=None, compare: dict | None = None, j: int = 0, kk: int = 0):
    """Banks each lane's 16-byte load of B touches in the compute loop (rows padded to BK + PAD
    floats), for the stage's PAD and, beside it, for `compare` (e.g. {"PAD": 0})."""
    configs = [defines] + ([{**defines, **compare}] if compare else [])
    axes = _axes(ax, len(configs), (6.2 * len(configs), 5.2))
    for cfg, a in zip(configs, axes):
        addrs = padded_b_addresses(cfg, j=j, kk=kk)
        ways = conflict_ways(addrs, 16)
        _lane_bank_grid(a, addrs, 16)
        a.set_title(f"PAD = {cfg['PAD']}: row stride {cfg['BK'] + cfg['PAD']} floats\n"
                    f"LDS.128 of B, worst phase {max(ways)}-way" + (" (conflict-free)" if max(ways) == 1 else " conflict"),
                    fontsize=10)
    return axes


# ---- (b) the XOR swizzle of 128-byte fp16 rows, read by ldmatrix -----------------------------
def swizzle_offset(row: int, chunk: int, bk: int = 64, on: bool = True) -> int:
    """kernel.cu: `return row * (BK * 2) + ((chunk ^ (row & 7)) << 4);` (SWIZZLE off: chunk << 4)."""
    return row * (bk * 2) + (((chunk ^ (row & 7)) if on else chunk) << 4)


def ldmatrix_a_addresses(defines: dict, warp: int = 0, i: int = 0, ks: int = 0,
                         on: bool | None = None) -> list[int]:
    """Byte offsets (from the A tile's start) lanes 0..31 pass to one `ldmatrix.x4` of A:
    lanes 0-15 rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15."""
    bn, wm, wn, bk = defines["BN"], defines["WM"], defines["WN"], defines["BK"]
    on = bool(defines.get("SWIZZLE", 1)) if on is None else on
    warp_m = (warp // (bn // wn)) * wm              # warp_m = (warp / (BN / WN)) * WM
    out = []
    for lane in range(32):
        row = warp_m + i * 16 + (lane % 16)         # const int row = warp_m + i * 16 + (lane % 16);
        out.append(swizzle_offset(row, ks * 2 + lane // 16, bk, on))  # swizzle(row, ks * 2 + lane / 16)
    return out


def physical_chunks(addrs: list[int], row_bytes: int = 128) -> list[int]:
    """The 16-byte chunk (0..7) of its 128-byte row each address falls in."""
    return [(a % row_bytes) // 16 for a in addrs]


def swizzle_banks(defines: dict, ax=None, compare: dict | None = None, ks: int = 0):
    """Where the 8 rows of one ldmatrix phase find logical chunk c: with the XOR swizzle in 8
    different 16-byte chunks (all 32 banks once), without it in one chunk (8-way conflict)."""
    configs = [defines] + ([{**defines, **compare}] if compare else [])
    axes = _axes(ax, len(configs), (5.4 * len(configs), 5.2))
    for cfg, a in zip(configs, axes):
        on = bool(cfg.get("SWIZZLE", 1))
        addrs = ldmatrix_a_addresses(cfg, ks=ks, on=on)
        ways = max(conflict_ways(addrs, 16))
        _chunk_grid(a, lambda r, c, on=on: ((c ^ (r & 7)) if on else c), read_chunk=ks * 2,
                    rows=8, chunks=cfg["BK"] * 2 // 16)
        a.set_title(("swizzle on: chunk c of row r at c ^ (r % 8)" if on else "swizzle off: chunk c at c")
                    + f"\nldmatrix phase (8 rows, logical chunk {ks * 2}): {ways}-way", fontsize=10)
    return axes


# ---- (c) TMA's 128-byte swizzle, read by wgmma k16 slices ------------------------------------
def tma128_chunk(row: int, chunk: int) -> int:
    """CU_TENSOR_MAP_SWIZZLE_128B: 16-byte chunk c of 128-byte row r lands at chunk c ^ (r % 8);
    the pattern repeats every 8 rows (1,024 bytes, why kernel.cu aligns tiles with
    `+ 1023) & ~1023u` and the descriptor's stride byte offset is 1024). The copy engine computes
    it; the kernel's own copy of the rule is v4's staging store, `((jj % 8) ^ g) * 16`."""
    return chunk ^ (row % 8)


def wgmma_slice_chunks(defines: dict, kk: int) -> list[int]:
    """Logical 16-byte chunks of a 128-byte row that k16 step kk reads: `smem_desc(a_tile + kk
    * 32)` starts 32 bytes (16 fp16, two chunks) further along K for each step."""
    first = kk * 32 // 16
    return [first, first + 1]


def tma_swizzle(defines: dict, ax=None, kk: int = 0, show_off: bool = True):
    """The 1,024-byte swizzle period of a TMA tile (8 rows of BK fp16 = 128 bytes): which logical
    chunk sits where, the chunks k16 step `kk` reads (shaded), and, beside it, the same box
    written without swizzle, where those 8 rows share one column of 4 banks."""
    axes = _axes(ax, 2 if show_off else 1, (11, 5.2) if show_off else (5.6, 5.2))
    chunks = defines["BK"] * 2 // 16
    for a, on in zip(axes, (True, False)):
        reads = wgmma_slice_chunks(defines, kk)
        addrs = [r * 128 + (tma128_chunk(r, reads[0]) if on else reads[0]) * 16 for r in range(8)]
        ways = max(conflict_ways(addrs, 16))
        _chunk_grid(a, (lambda r, c: tma128_chunk(r, c)) if on else (lambda r, c: c),
                    read_chunk=reads, rows=8, chunks=chunks)
        a.set_title(("SWIZZLE_128B: chunk c of row r at c ^ (r % 8)" if on else "no swizzle (same box)")
                    + f"\nk16 step {kk} (+{kk * 32} B): chunks {reads[0]}-{reads[1]}, "
                    f"8 rows of one chunk {ways}-way", fontsize=10)
    return axes


# ---- v0: cache lines a warp's loads touch --------------------------------------------------
def naive_warp_lines(defines: dict, k_dim: int = 4096, k: int = 0, warp: int = 0) -> dict:
    """The 128-byte lines lanes 0..31 of `warp` touch for one load of A and one of B at step k
    (MAP 0: `n = blockIdx.x * BLOCK_N + threadIdx.x; m = blockIdx.y * BLOCK_M + threadIdx.y`,
    `a_row = A + (size_t)m * K`, `b_row = B + (size_t)n * K`, fp16 elements of 2 bytes)."""
    bn = defines["BLOCK_N"]
    a_lines, b_lines = [], []
    for lane in range(32):
        tid = 32 * warp + lane
        x, y = tid % bn, tid // bn                  # threadIdx.x, threadIdx.y of a linear thread id
        if defines.get("MAP", 0) == 1:              # x walks M, y walks N
            m, n, kk = x, y, k
        elif defines.get("MAP", 0) == 2:            # one warp per output, lanes along K
            m, n, kk = y, 0, k + x
        else:
            m, n, kk = y, x, k
        a_lines.append((m * k_dim + kk) * 2 // LINE_BYTES)
        b_lines.append((n * k_dim + kk) * 2 // LINE_BYTES)
    return {"a": a_lines, "b": b_lines, "a_count": len(set(a_lines)), "b_count": len(set(b_lines))}


def warp_lines(defines: dict, ax=None, compare: dict | None = None, k_dim: int = 4096):
    """Which 128-byte lines the 32 lanes of warp 0 touch with one load of A and one of B: L1
    serves one line per cycle, so the count of distinct lines is the load's cost in cycles."""
    configs = [defines] + ([{**defines, **compare}] if compare else [])
    axes = _axes(ax, len(configs), (6 * len(configs), 4.4))
    for cfg, a in zip(configs, axes):
        res = naive_warp_lines(cfg, k_dim)
        for row, (key, color) in enumerate((("a", "#3f51b5"), ("b", "#e91e63"))):
            lines = res[key]
            index = {ln: i for i, ln in enumerate(dict.fromkeys(lines))}
            a.scatter(range(32), [index[ln] + 0.0 for ln in lines], s=28, color=color,
                      label=f"{key.upper()}: {res[key + '_count']} line(s)", marker="os"[row])
        a.set_xlabel("lane")
        a.set_ylabel("distinct 128-byte line (in order of first touch)")
        a.set_title(f"BLOCK_N = {cfg['BLOCK_N']}, BLOCK_M = {cfg['BLOCK_M']}"
                    + (f", MAP = {cfg['MAP']}" if "MAP" in cfg else "")
                    + f"\nlines per warp load (K = {k_dim}): A {res['a_count']}, B {res['b_count']}", fontsize=10)
        a.legend(fontsize=8)
        a.grid(True, alpha=0.25)
    return axes


# ---- thread and warp maps ----------------------------------------------------------------------
def thread_owner(defines: dict) -> np.ndarray:
    """BM x BN array: the thread that computes each element of the block tile. Thread (ty, tx)
    owns rows ty + i*(BM/TM) and columns tx + j*(BN/TN) (kernel.cu: `tx = threadIdx.x % (BN /
    TN), ty = threadIdx.x / (BN / TN)`, epilogue row `ty + i * (BM / TM)`, column `j * (BN / TN)`)."""
    bm, bn, tm, tn = defines["BM"], defines["BN"], defines["TM"], defines["TN"]
    owner = np.full((bm, bn), -1, dtype=int)
    for tid in range((bm // tm) * (bn // tn)):
        tx, ty = tid % (bn // tn), tid // (bn // tn)
        for i in range(tm):
            for j in range(tn):
                owner[ty + i * (bm // tm), tx + j * (bn // tn)] = tid
    return owner


def thread_map(defines: dict, ax=None, threads=(0, 17)):
    """Who computes what in the block tile: colour = warp, and the TM x TN elements of a few
    threads marked: interleaved rows and columns, so a warp's loads of B from shared memory
    cover 16 consecutive rows."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 6))
    owner = thread_owner(defines)
    warps = owner // 32
    ax.imshow(warps, cmap="tab20", interpolation="nearest", alpha=0.55)
    for t, mark in zip(threads, "ox^s"):
        rr, cc = np.nonzero(owner == t)
        tx, ty = t % (defines["BN"] // defines["TN"]), t // (defines["BN"] // defines["TN"])
        ax.scatter(cc, rr, s=14, marker=mark, color="black",
                   label=f"thread {t} (ty={ty}, tx={tx}): {len(rr)} elements")
    ax.set_xlabel("column of the block tile (n)")
    ax.set_ylabel("row of the block tile (m)")
    ax.set_title(f"{defines['BM']} x {defines['BN']} tile, {owner.max() + 1} threads of "
                 f"{defines['TM']} x {defines['TN']}; colour = warp", fontsize=10)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.9)
    return ax


def warp_owner(defines: dict) -> np.ndarray:
    """BM x BN array: the warp that computes each element (kernel.cu: `warp_m = (warp / (BN /
    WN)) * WM, warp_n = (warp % (BN / WN)) * WN`)."""
    bm, bn, wm, wn = defines["BM"], defines["BN"], defines["WM"], defines["WN"]
    owner = np.full((bm, bn), -1, dtype=int)
    for w in range((bm // wm) * (bn // wn)):
        warp_m, warp_n = (w // (bn // wn)) * wm, (w % (bn // wn)) * wn
        owner[warp_m:warp_m + wm, warp_n:warp_n + wn] = w
    return owner


def warp_map(defines: dict, ax=None):
    """The block tile split into warp tiles of WM x WN, each a grid of (WM/16) x (WN/8)
    mma.sync m16n8k16 tiles (thin lines)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 6))
    owner = warp_owner(defines)
    ax.imshow(owner, cmap="tab10", interpolation="nearest", alpha=0.45)
    wm, wn = defines["WM"], defines["WN"]
    for r in range(0, defines["BM"] + 1, 16):
        ax.axhline(r - 0.5, color="white", lw=0.5)
    for c in range(0, defines["BN"] + 1, 8):
        ax.axvline(c - 0.5, color="white", lw=0.5)
    for w in range(owner.max() + 1):
        rr, cc = np.nonzero(owner == w)
        ax.text(cc.mean(), rr.mean(), f"warp {w}\n{wm} x {wn}\n{(wm // 16) * (wn // 8)} mma tiles",
                ha="center", va="center", fontsize=9)
    ax.set_xlabel("column of the block tile (n)")
    ax.set_ylabel("row of the block tile (m)")
    ax.set_title(f"{defines['BM']} x {defines['BN']} tile, {owner.max() + 1} warps; "
                 "thin lines: m16n8k16 tiles", fontsize=10)
    return ax


# ---- the full/empty ring ---------------------------------------------------------------------
def ring_events(defines: dict, k_tiles: int = 8, tiles: int = 2, producer: str = "inline",
                latency: float = 2.5, math: float = 1.0, epilogue: float = 1.5) -> list[dict]:
    """A small event model of the mbarrier ring, indexed exactly as the kernels index it.

    Times are illustrative units (a k-block of math takes `math`, a TMA load `latency`, an
    epilogue `epilogue`); what the model takes from the kernels is the order and the indices.
    K-block `kb` of a ring (v3: `kt` of its block; the persistent kernel: its running counter
    `it`) uses buffer `kb % STAGES` and its `full` wait passes parity `(kb / STAGES) & 1`; after
    issuing k-block kb's wgmmas, `wgmma_wait<1>()` proves kb-1 complete and the consumers release
    its buffer (`mbar_arrive(empty_bar + ...)`); the buffer is refilled only after that release
    (`mbar_wait(empty_bar + ..., (prev / STAGES) & 1)` in v3, `((it / STAGES) - 1) & 1` in v4:
    the same lap). The tile's last k-block is released after `wgmma_wait<0>()`.

    producer="inline": one block per tile, run one after another (one block fits an SM); thread
    0 of the consumers loads the first STAGES k-blocks in the prologue and each later one right
    after a release, inside the math loop; the next tile is a new block, whose ring starts empty.
    producer="warp": a persistent block whose producer thread loads k-block after k-block as
    soon as the buffer is released, across tile boundaries: the next tile's first k-blocks load
    during this tile's last ones and its epilogue.

    Events: dicts with kind "load" (t0 issue, t1 landed: `full` completes), "compute" (t0, t1),
    "release" (t0), "epilogue" (t0, t1); `it` the k-block over the whole run, `kb` its index in
    its ring, `tile`, `buffer`, `parity` (the full wait's, or for a release the lap it ends).
    """
    stages = defines["STAGES"]
    ev: list[dict] = []
    per_ring = k_tiles if producer == "inline" else k_tiles * tiles
    ready: dict[int, float] = {}
    release: dict[int, float] = {}
    last_issue = -np.inf
    cons_end = 0.0

    def load(it: int, at: float) -> None:
        nonlocal last_issue
        kb = it % per_ring
        if kb >= stages:                   # refill: wait until the consumers released kb - STAGES
            at = max(at, release[it - stages])
        at = max(at, last_issue)          # one thread issues the copies in order
        last_issue = at
        ready[it] = at + latency
        ev.append(dict(kind="load", it=it, kb=kb, tile=it // k_tiles, buffer=kb % stages,
                       parity=(kb // stages) & 1, t0=at, t1=at + latency))

    for tile in range(tiles):
        base = tile * k_tiles
        if producer == "inline":          # a new block: prologue of min(STAGES, k-blocks) loads
            last_issue = -np.inf
            for kt in range(min(stages, k_tiles)):
                load(base + kt, cons_end)
        for kt in range(k_tiles):
            it = base + kt
            kb = it % per_ring
            if producer == "warp":        # the producer runs ahead as far as releases allow
                while len(ready) <= it or (len(ready) < tiles * k_tiles
                                           and (len(ready) < stages or len(ready) - stages in release)):
                    load(len(ready), 0.0)
            start = max(ready[it], cons_end)
            ev.append(dict(kind="compute", it=it, kb=kb, tile=tile, buffer=kb % stages,
                           parity=(kb // stages) & 1, t0=start, t1=start + math))
            cons_end = start + math
            if kt > 0:                     # wgmma_wait<1>: it-1 complete -> empty arrive
                release[it - 1] = start
                ev.append(dict(kind="release", it=it - 1, kb=kb - 1, tile=tile, buffer=(kb - 1) % stages,
                               parity=((kb - 1) // stages) & 1, t0=start))
                nxt = kb - 1 + stages
                if producer == "inline" and nxt < k_tiles:
                    load(base + nxt, start)
        release[base + k_tiles - 1] = cons_end  # wgmma_wait<0>, then the last k-block's arrive
        ev.append(dict(kind="release", it=base + k_tiles - 1, kb=(base + k_tiles - 1) % per_ring, tile=tile,
                       buffer=((base + k_tiles - 1) % per_ring) % stages,
                       parity=(((base + k_tiles - 1) % per_ring) // stages) & 1, t0=cons_end))
        if producer == "warp":
            while len(ready) < tiles * k_tiles and (len(ready) < stages or len(ready) - stages in release):
                load(len(ready), 0.0)
        ev.append(dict(kind="epilogue", tile=tile, t0=cons_end, t1=cons_end + epilogue))
        cons_end += epilogue
    return ev


def ring_timeline(defines: dict, ax=None, k_tiles: int = 8, tiles: int = 2, producer: str = "inline",
                  latency: float = 2.5, math: float = 1.0, epilogue: float = 1.5):
    """The full/empty ring over time (illustrative units, see `ring_events`): per buffer, a load
    in flight (hatched: TMA writing, `full` not yet complete), then the k-block it holds until the
    consumers release it (`empty`); the consumers' math and epilogue below. Labels: k-block and
    the parity its `full` wait uses."""
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 0.9 * defines["STAGES"] + 2.6))
    ev = ring_events(defines, k_tiles, tiles, producer, latency, math, epilogue)
    stages = defines["STAGES"]
    colors = ["#3f51b5", "#e91e63", "#009688", "#ff9800"]
    rel = {e["it"]: e["t0"] for e in ev if e["kind"] == "release"}
    for e in ev:
        c = colors[e.get("tile", 0) % len(colors)]
        if e["kind"] == "load":
            y = stages - 1 - e["buffer"] + 1
            ax.add_patch(Rectangle((e["t0"], y - 0.35), e["t1"] - e["t0"], 0.7, facecolor="white",
                                   edgecolor=c, hatch="///", lw=1))
            end = rel.get(e["it"], e["t1"])
            ax.add_patch(Rectangle((e["t1"], y - 0.35), max(end - e["t1"], 0.05), 0.7, facecolor=c, alpha=0.55))
            ax.text((e["t0"] + e["t1"]) / 2, y - 0.12, f"k-block {e['kb']}", ha="center", va="center", fontsize=7,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none"})
            ax.text(e["t1"] + 0.05, y + 0.22, f"full p{e['parity']}", va="center", fontsize=6)
        elif e["kind"] == "release":
            y = stages - 1 - e["buffer"] + 1
            ax.plot([e["t0"]], [y], marker="v", color="black", ms=5)
        elif e["kind"] == "compute":
            ax.add_patch(Rectangle((e["t0"], -0.35), e["t1"] - e["t0"], 0.7, facecolor=c, alpha=0.85))
            ax.text((e["t0"] + e["t1"]) / 2, 0, f"{e['kb']}", ha="center", va="center", fontsize=8, color="white")
        elif e["kind"] == "epilogue":
            ax.add_patch(Rectangle((e["t0"], -0.35), e["t1"] - e["t0"], 0.7, facecolor="#9e9e9e"))
            ax.text((e["t0"] + e["t1"]) / 2, 0, "epi", ha="center", va="center", fontsize=8)
    end = max(e.get("t1", e["t0"]) for e in ev)
    ax.set_xlim(-0.2, end + 0.3)
    ax.set_ylim(-0.8, stages + 0.8)
    ax.set_yticks(range(stages + 1), ["consumers: wgmma"] + [f"buffer {s}" for s in range(stages - 1, -1, -1)])
    ax.set_xlabel(f"time, illustrative units (a k-block of math = {math}, a TMA load = {latency}, "
                  f"an epilogue = {epilogue})")
    what = ("one block per tile, thread 0 loads inside the math loop" if producer == "inline"
            else "persistent block, a producer warp loads ahead across tiles")
    ax.set_title(f"{stages}-buffer ring, {tiles} tiles of {k_tiles} k-blocks: {what}\n"
                 "hatched: TMA in flight; solid: full, held until released (▼ = empty arrive)", fontsize=10)
    ax.legend(handles=[Patch(facecolor=colors[t % len(colors)], alpha=0.7, label=f"tile {t}") for t in range(tiles)],
              fontsize=8, loc="upper right")
    ax.grid(True, axis="x", alpha=0.2)
    return ax


# ---- drawing helpers -------------------------------------------------------------------------
def _axes(ax, n: int, size):
    if ax is None:
        _, axes = plt.subplots(1, n, figsize=size, squeeze=False)
        return list(axes[0])
    return list(np.atleast_1d(ax))[:n] if n > 1 else [ax if not isinstance(ax, (list, np.ndarray)) else ax[0]]


def _lane_bank_grid(ax, addrs: list[int], width: int):
    """32 lanes x 32 banks: a cell per bank a lane touches, coloured by the lane's phase; a red
    frame where a phase sends more than one address to a bank."""
    grid = np.full((32, BANKS), np.nan)
    for p, lanes in enumerate(phases(addrs, width)):
        seen: dict[int, set] = {}
        for lane in lanes:
            for b in banks_of(addrs[lane], width):
                grid[lane, b] = p
                seen.setdefault(b, set()).add(addrs[lane])
        for lane in lanes:
            for b in banks_of(addrs[lane], width):
                if len(seen[b]) > 1:
                    ax.add_patch(Rectangle((b - 0.5, lane - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.2))
    ax.imshow(grid, cmap="Set2", interpolation="nearest", aspect="auto", vmin=0, vmax=7)
    ax.set_xlabel("bank")
    ax.set_ylabel("lane (colour = phase of 8 lanes)")
    ax.set_xticks(range(0, BANKS, 4))
    ax.set_yticks(range(0, 32, 4))


def _chunk_grid(ax, where, read_chunk, rows: int, chunks: int):
    """rows x chunks of 16 bytes (4 banks each): each cell shows the logical chunk stored there;
    the cells holding `read_chunk` (an int or a list) are shaded: the ones one access reads."""
    reads = [read_chunk] if isinstance(read_chunk, int) else list(read_chunk)
    cells = np.zeros((rows, chunks))
    for r in range(rows):
        for c in range(chunks):
            p = where(r, c)
            cells[r, p] = 1.0 if c in reads else 0.0
            ax.text(p, r, str(c), ha="center", va="center", fontsize=9)
    ax.imshow(cells, cmap="Oranges", vmin=0, vmax=1.6, interpolation="nearest", aspect="auto")
    ax.set_xticks(range(chunks), [f"{4 * c}-{4 * c + 3}" for c in range(chunks)], fontsize=7)
    ax.set_xlabel("physical 16-byte chunk of the 128-byte row (its 4 banks)")
    ax.set_yticks(range(rows))
    ax.set_ylabel("row (r % 8)")


# ---- the registry the notebooks read ------------------------------------------------------------
KINDS = {
    "banks_padded": banks_padded,
    "swizzle_banks": swizzle_banks,
    "tma_swizzle": tma_swizzle,
    "warp_lines": warp_lines,
    "thread_map": thread_map,
    "warp_map": warp_map,
    "ring_timeline": ring_timeline,
}
# The part of the kernel walk each diagram illustrates (a why.py entry may override it).
PART = {
    "banks_padded": "compute",
    "swizzle_banks": "compute",
    "tma_swizzle": "load",
    "warp_lines": "load",
    "thread_map": "compute",
    "warp_map": "compute",
    "ring_timeline": "load",
}
# The kernel lines each diagram's arithmetic copies (whitespace-insensitive; tested to be present
# in the kernel of every stage that declares the diagram).
KERNEL_LINES = {
    "banks_padded": ["#define LDS (BK + PAD)", "Bs + (tx + j * (BN / TN)) * LDS + kk",
                     "const int tx = threadIdx.x % (BN / TN)"],
    "swizzle_banks": ["row * (BK * 2) + ((chunk ^ (row & 7)) << 4)",
                      "const int row = warp_m + i * 16 + (lane % 16);",
                      "swizzle(row, ks * 2 + lane / 16)", "warp_m = (warp / (BN / WN)) * WM"],
    "tma_swizzle": ["smem_desc(a_tile + kk * 32)", "+ 1023) & ~1023u"],
    "warp_lines": ["const int n = blockIdx.x * BLOCK_N + threadIdx.x;",
                   "const int m = blockIdx.y * BLOCK_M + threadIdx.y;",
                   "const __half* b_row = B + (size_t)n * K;"],
    "thread_map": ["tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN)", "ty + i * (BM / TM)"],
    "warp_map": ["warp_m = (warp / (BN / WN)) * WM, warp_n = (warp % (BN / WN)) * WN"],
    "ring_timeline": ["% STAGES", "wgmma_wait<1>();", "mbar_wait(empty_bar"],
}


def draw(kind: str, defines: dict, ax=None, **options):
    """Draw diagram `kind` for `defines` (a stage's or a variant's)."""
    options.pop("part", None)
    return KINDS[kind](defines, ax=ax, **options)
