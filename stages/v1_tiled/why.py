"""v1_tiled's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

import stages
from stages.tools import plots
from stages.tools.bench import datasheet

SHAPE = (4096, 4096, 4096)


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """Tiling raises the FLOP per byte requested from global memory by 126x (left); the speed
    (right) rises from v0's 0.5 TFLOP/s to 41, below the CUDA cores' fp32 FMA roof: 61% of the
    datasheet's 66.9 TFLOP/s and 75% of what a pure FFMA loop measured on this GPU."""
    if ax is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    else:
        axes = ax
    best = plots.latest(recs, gpu_substring)
    names = ["v0_naive", "v1_tiled"]
    colors = plots.STAGE_COLORS[:2]
    ai = [plots.intensity(stages.get(n), *SHAPE) for n in names]
    tf = [(best.get((n, *SHAPE)) or {}).get("tflops", 0) for n in names]
    axes[0].bar(names, ai, color=colors)
    axes[0].set_yscale("log")
    axes[0].set_ylim(min(ai) / 2, max(ai) * 4)
    axes[0].set_ylabel("FLOP per byte requested (4096³)")
    axes[0].set_title("data reuse from the tiling")
    for i, v in enumerate(ai):
        axes[0].annotate(f"{v:.1f} FLOP/B", (i, v), ha="center", va="bottom")
    axes[1].bar(names, tf, color=colors)
    meas = plots.ceilings(recs, gpu_substring) or {}
    fp32 = (meas.get("datasheet") or datasheet(gpu_substring))["fp32_tflops"]
    axes[1].axhline(fp32, ls="--", color="#1565c0", label=f"fp32 FMA, datasheet: {fp32} TFLOP/s")
    if meas:
        axes[1].axhline(meas["fp32_ffma_tflops"], color="#c62828",
                        label=f"fp32 FFMA loop, measured: {meas['fp32_ffma_tflops']:.1f} TFLOP/s")
    axes[1].set_yscale("log")
    axes[1].set_ylim(min(v for v in tf if v) / 3 if any(tf) else 0.1, fp32 * 12)
    axes[1].set_ylabel("TFLOP/s (4096³)")
    axes[1].set_title("speed against the CUDA-core roof")
    axes[1].legend(fontsize=8, loc="upper left")
    for i, v in enumerate(tf):
        axes[1].annotate(f"{v:.1f} TFLOP/s", (i, v), ha="center", va="bottom")
    return axes
