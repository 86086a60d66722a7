"""v5_fused_epilogue's "why" figure and walkthrough declarations (a tool-side companion)."""
import functools

import matplotlib.pyplot as plt

import stages
from stages.core import gpu
from stages.tools import inspect as static
from stages.tools import plots, records
from stages.v5_fused_epilogue import TILES, split_cluster

NAME = "v5_fused_epilogue"

# The tile and split sweep (scripts/v5_shapes.py: tune records of variants AUTO=0,BM=..,BN=..,
# STAGES=..,SPLIT_K=..; README "Ablation"): a variant's overrides -> its row name.
LADDER = {"default": "shape rule (shipped, AUTO=1)",
          **{f"AUTO=0,BM={bm},BN={bn},STAGES={depth},SPLIT_K={s}":
             f"{bm} × {bn} tile, {depth} stages" + (f", K split in {s}" if s > 1 else "")
             for (bm, bn), depth in TILES.items() for s in (1, 2, 4, 8)},
          "STMATRIX=0": "4-byte st.shared staging instead of stmatrix"}

# The rows of the "why" figure: what a torch user has for y = act(x @ W.T + bias).
FUSED_ROWS = {
    NAME: "v5: one kernel, epilogue fused",
    "torch_linear": "torch F.linear (bias fused by cuBLASLt) + activation kernel",
    "torch_addmm_gelu": "cuBLASLt fused bias + GELU-tanh (torch._addmm_activation)",
    "cublas_cupy_epilogue": "cuBLAS GEMM + one CuPy elementwise kernel",
}
ROW_COLORS = ("#795548", "#90caf9", "#1565c0", "#bdbdbd")


# ---- the walkthrough's declarations (notebooks/build.py reads them; see the README's recipe) ----
# The calls whose builds the walkthrough lists (the rule's kinds of build: README "The shape rule").
CALLS = [((1, 4096, 4096), "plain"), ((16, 14336, 4096), "bias+silu"), ((128, 14336, 4096), "plain"),
         ((100, 128256, 4096), "plain"),
         ((129, 8192, 4096), "bias+gelu_tanh"), ((400, 12288, 4096), "plain"), ((1000, 1000, 1000), "bias+gelu"),
         ((4095, 4097, 4104), "plain"), ((4096, 4096, 4096), "bias+gelu"), ((8192, 8192, 8192), "plain")]
KNOB = {"AUTO": 0, "BN": 128, "STAGES": 6}
KNOB_QUESTION = (
    "Set `AUTO=0, BN=128, STAGES=6` (shipped at 4096³: the shape rule's 128 × 256 tile with 4 "
    "stages): the 128 × 128 tile the rule picks where 128 × 256 tiles would leave SMs idle (1000³, "
    "128 × 14336 × 4096). `AUTO=0` makes the call use the tile as given instead of the rule's. "
    "Predict: shared memory per block (why 6 stages fit now), registers at entry, the HGMMA count, "
    "and the epilogue's stmatrix (STSM) and TMA-store (UTMASTG) counts. Then: which tile does more "
    "work per second at 4096³, and why does the rule still use the small one at small M?")


def KNOB_ANSWER(shipped, variant, rep, rep_variant) -> str:
    def ops(r, op):
        return r.opcodes.get(op, 0)
    return (f"**What changed.** Shared memory {rep.dynamic_smem:,} → {rep_variant.dynamic_smem:,} B: a stage "
            "of A + B shrinks from (128 + 256) × 64 × 2 = 49,152 to (128 + 128) × 64 × 2 = 32,768 B, so 6 "
            "stages take the 196,608 B that 4 took; the staging tile (2 × 64 × 128 × 2 B) is the same and "
            "only the barriers grow by 2 × 8 B per stage. Registers at entry "
            f"{rep.registers} → {rep_variant.registers}: `__launch_bounds__(384, 1)` sets them, not the tile, "
            "although a consumer now holds 64 accumulators instead of 128. HGMMA "
            f"{ops(rep, 'HGMMA')} → {ops(rep_variant, 'HGMMA')}: still BK/16 = 4 per k-block (times the "
            "unrolled copies), each an m64n128k16 instead of m64n256k16, half the work per instruction. "
            f"The epilogue: STSM {ops(rep, 'STSM')} → {ops(rep_variant, 'STSM')}, UTMASTG "
            f"{ops(rep, 'UTMASTG')} → {ops(rep_variant, 'UTMASTG')} (one pass of 128 columns instead of two). "
            "Per k-block the small tile does 2·128·128·64 FLOP on 32 KiB (64 FLOP/B) against 85 FLOP/B, "
            "and at 4096³ it makes 1,024 tiles instead of 512: in the README's tile sweep it ran 0.90× "
            "cuBLAS against the 128 × 256 tile's 0.96×. At 128 × 14336 × 4096 the 128 × 256 tiles are 56 "
            "for 132 SMs; 128 × 128 makes 112, and there the rule takes it.")


@functools.lru_cache(maxsize=64)
def _compiled(defines: tuple):
    """The cubin for these defines: the stage's tunables plus per-call ones (ACT, BIAS, TMA_STORE,
    PARTIAL), compiled the way a call compiles them (they are not tunables: no variant takes them)."""
    return stages.get(NAME).compile("sm_90a", dict(defines))


def _config(st, extra: dict) -> tuple:
    return tuple(sorted({**st.defines, **extra}.items()))


def _main_kernel_ops(st, **extra) -> dict:
    """SASS opcode counts of the main kernel only (the cubin also holds the split-K reduce kernel)."""
    return static.count_opcodes(static.kernel_sass(str(_compiled(_config(st, extra)).cubin_path), st.kernel))


def _smem(st, **extra) -> int:
    return _compiled(_config(st, extra)).constant("gemm_smem_bytes", 0)


def _units(st, m, n, k):
    return st.geometry(m, n, k, st.defines, gpu.REFERENCE_DEVICE).grid[0]


SMS = gpu.REFERENCE_DEVICE.sm_count

QUESTIONS = [
    (f"Decode, 16 × 14336 × 4096 on an H200 ({SMS} SMs): how many blocks does v5 launch?",
     lambda st, rep: _units(st, 16, 14336, 4096),
     lambda st, rep: (f"M ≤ 64, so the rule takes the 64 × 128 tile (one consumer warpgroup: 48 of its 64 "
                      f"rows are padding, against 112 of 128 with BM = 128): 14336 / 128 = 112 tiles. 2 × 112 ≥ {SMS}, so K is not split "
                      f"(every split lost here when measured); {_units(st, 16, 14336, 4096)} blocks, "
                      f"{SMS - _units(st, 16, 14336, 4096)} SMs idle.")),
    ("1 × 4096 × 4096 (one token): into how many ranges does the rule split K, and how many blocks "
     "does it launch?  (answer: ranges × 1000 + blocks)",
     lambda st, rep: 1000 * split_cluster(1, 4096, 4096, st.defines, gpu.REFERENCE_DEVICE) + _units(st, 1, 4096, 4096),
     lambda st, rep: (f"4096 / 128 = 32 tiles of 64 × 128, and 2 × 32 < {SMS}: most SMs would idle, so K is split. "
                      f"M ≤ 64 and 2 × 4096 / 64 = 128 ≤ {SMS}: 64 tiles of 64 × 64, each taken by a 2-CTA cluster "
                      f"whose CTAs take half of the 64 k-blocks each, {_units(st, 1, 4096, 4096)} blocks in one wave. "
                      "Rank 1 stores its fp32 partial tile into rank 0's shared memory (distributed shared "
                      "memory), rank 0 adds it and runs the epilogue: no workspace, no second kernel "
                      "(README \"Split K in a cluster\": 19.3 → 18.1 µs against the split by units).")),
    ("1000 × 1000 × 1000: how many blocks does v5 launch?",
     lambda st, rep: _units(st, 1000, 1000, 1000),
     lambda st, rep: (f"M > 64, and 128 × 256 tiles would be 8 × 4 = 32, under two thirds of {SMS} SMs. 64 × 128 "
                      f"tiles are 16 × 8 = 128 ≤ {SMS}, one wave, but K = 1000 is 16 k-blocks with rows of "
                      "2,000 bytes, 16 bytes past a 32-byte sector on every other row: the loads bound it. "
                      "So the tiles go in 2-CTA clusters that share B by multicast: "
                      f"{_units(st, 1000, 1000, 1000)} blocks (README \"Sectors, not lines\").")),
    ("128 × 4096 × 4096 (a short prefill): how many blocks does v5 launch?",
     lambda st, rep: _units(st, 128, 4096, 4096),
     lambda st, rep: (f"M > 64: 1 × 16 tiles of 128 × 256 are under two thirds of {SMS}; 64 × 128 tiles, 2 × 32 = 64, "
                      f"fit one wave but fill under half of it, with 64 k-blocks each (too few to split: "
                      f"a split needs 64 per part there). 64 × 64 tiles, 2 × 64 = {_units(st, 128, 4096, 4096)}, "
                      f"fit one wave too and fill it: {_units(st, 128, 4096, 4096)} blocks, one tile each "
                      "(README \"The shape rule\": 21.4 → 18.1 µs against 64 × 128).")),
    ("With a bias (BIAS=1 or 2), how many bytes of dynamic shared memory does a 128 × 256 block use?",
     lambda st, rep: _smem(st, BIAS=1),
     lambda st, rep: (f"{rep.dynamic_smem:,} B (4 stages, the staging tile, slack, barriers) + BIAS_BYTES = "
                      f"BN × 4 = 1,024 B (the tile's bias as fp32, whatever its type in memory) = "
                      f"{_smem(st, BIAS=1):,} B of the 232,448 an H200 block may have.")),
    ("gelu_tanh (ACT=3): how many more special-function (MUFU) instructions does the main kernel's "
     "SASS hold than the plain one (128 × 256, TMA store)?",
     lambda st, rep: _main_kernel_ops(st, ACT=3).get("MUFU", 0) - _main_kernel_ops(st).get("MUFU", 0),
     lambda st, rep: (f"x · sigmoid(2u) = x / (1 + e), e = 2^(-2u log2 e): one MUFU.EX2 per accumulator and "
                      f"one MUFU.RCP per two (`activate_4`: two elements share 1 / ((1 + e0)(1 + e1))), "
                      f"1.5 × 128 = 192 per consumer thread per tile; CUDA's `__expf` and `__fdividef` "
                      f"(ACT_MATH=0) take 2 × 128 = 256. The plain kernel's "
                      f"{_main_kernel_ops(st).get('MUFU', 0)} are reciprocals of integer divisions "
                      f"(tile coordinates); with ACT=3: {_main_kernel_ops(st, ACT=3).get('MUFU', 0)}.")),
]

DIAGRAMS = [("ring_timeline", {"k_tiles": 6, "tiles": 2, "producer": "warp"}),
            ("tma_swizzle", {"part": "epilogue"})]


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """The fused epilogue against what a torch user has, from the newest published bench run with
    fused epilogues (`bench --epilogue ... --publish`): for each shape and epilogue, the time of v5
    (one kernel), torch's F.linear (bias fused by cuBLASLt, the activation a second kernel),
    cuBLASLt's own fused bias+GELU-tanh (that epilogue only) and cuBLAS followed by one CuPy
    elementwise kernel, each divided by plain cuBLAS's time at that shape in the same run (the
    dashed line: a GEMM with no epilogue at all); each bar is labelled with its milliseconds."""
    rec = records.latest_fused(recs, gpu_substring)
    if ax is None:
        n_groups = len({(e["m"], e["n"], e["k"], e.get("epilogue")) for e in (rec or {}).get("results", [])})
        _, ax = plt.subplots(figsize=(max(11, 1.3 * n_groups), 5))
    title = "A Linear layer: the fused epilogue against torch and cuBLAS (one run)"
    if rec is None:
        ax.text(0.5, 0.5, "no published fused-epilogue record yet\n"
                "(python -m stages bench --epilogue bias+gelu_tanh --publish, on a GPU)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        return ax
    ok = [e for e in rec["results"] if e.get("status") == "ok"]
    plain = {(e["m"], e["n"], e["k"]): e["ms_median"] for e in ok if e["stage"] == "cublas" and not e.get("epilogue")}
    groups = [g for g in dict.fromkeys((e["m"], e["n"], e["k"], e["epilogue"]) for e in ok if e.get("epilogue"))
              if g[:3] in plain]
    ms = {(e["stage"], e["m"], e["n"], e["k"], e["epilogue"]): e["ms_median"] for e in ok}
    width = 0.8 / len(FUSED_ROWS)
    ratios = []
    for i, (stage, label) in enumerate(FUSED_ROWS.items()):
        pts = [(x + (i - (len(FUSED_ROWS) - 1) / 2) * width, ms[(stage, *g)] / plain[g[:3]], ms[(stage, *g)])
               for x, g in enumerate(groups) if (stage, *g) in ms]
        if not pts:
            continue
        ax.bar([p[0] for p in pts], [p[1] for p in pts], width, color=ROW_COLORS[i], label=label)
        for x, r, t in pts:
            ax.annotate(f"{t:.3f}", (x, r), ha="center", va="bottom", fontsize=6.5, rotation=90,
                        textcoords="offset points", xytext=(0, 2))
        ratios += [p[1] for p in pts]
    ax.axhline(1.0, color=plots.CUBLAS_COLOR, ls="--", lw=1, label="plain cuBLAS, no epilogue (same run)")
    ax.set_xticks(range(len(groups)), [g[3] for g in groups], fontsize=8)
    for shape in dict.fromkeys(g[:3] for g in groups):  # one label per shape, under its groups
        xs = [x for x, g in enumerate(groups) if g[:3] == shape]
        ax.annotate(f"{'×'.join(map(str, shape))} (plain cuBLAS {plain[shape]:.3f} ms)",
                    ((xs[0] + xs[-1]) / 2, 0), xycoords=("data", "axes fraction"), xytext=(0, -24),
                    textcoords="offset points", ha="center", va="top", fontsize=9)
        if xs[0] > 0:
            ax.axvline(xs[0] - 0.5, color="#9e9e9e", lw=0.8)
    if ratios:
        ax.set_ylim(min(0.9, min(ratios) * 0.97), max(ratios) * 1.12)
    ax.set_ylabel("time ÷ plain cuBLAS time (zoomed; bar labels: ms)")
    g = rec["env"]["gpu"]["name"]
    ax.set_title(f"{title}: {g}, {rec['env']['date'][:10]}")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    ax.grid(True, axis="y", alpha=0.25)
    return ax
