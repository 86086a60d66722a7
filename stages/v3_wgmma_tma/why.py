"""v3_wgmma_tma's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

from stages.tools import plots


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """The Hopper path against v2 across sizes: mma.sync + cp.async (v2) against wgmma + TMA (v3),
    with cuBLAS; the gap opens once the GEMM fills the GPU."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    best = plots.latest(recs, gpu_substring)
    for i, name in ((2, "v2_cp_async"), (3, "v3_wgmma_tma"), (None, "cublas")):
        ax.plot(*plots.square_series(best, name), "o-", label=name,
                color=plots.CUBLAS_COLOR if i is None else plots.STAGE_COLORS[i])
    plots.size_axis(ax, "TFLOP/s", "mma.sync + cp.async (v2) against wgmma + TMA (v3)")
    return ax
