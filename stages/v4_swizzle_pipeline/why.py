"""v4_swizzle_pipeline's "why" figure, for its walkthrough notebook (a tool-side companion)."""
import matplotlib.pyplot as plt

from stages.tools import records

# The ablation ladder: a variant's overrides -> what that rung adds (the README's table and this
# figure use these names; `python -m stages tune v4_swizzle_pipeline --variant ...` runs them).
LADDER = {
    "PERSISTENT=0,ORDER=1,TMA_STORE=0,CLUSTER_M=1,GROUP_M=8": "+ warp specialization, setmaxnreg",
    "PERSISTENT=1,ORDER=1,TMA_STORE=0,CLUSTER_M=1,GROUP_M=8": "+ persistent grid (grouped 8)",
    "PERSISTENT=1,ORDER=1,TMA_STORE=1,CLUSTER_M=1,GROUP_M=8": "+ TMA-store epilogue",
    "default": "+ GROUP_M 16 (shipped)",
    "CLUSTER_M=2": "+ 2-CTA cluster, B multicast",
    "ORDER=2": "Hilbert order instead of grouped",
    "ORDER=0": "row-major order instead of grouped",
    "STAGES=3": "3 buffers instead of 4",
    "GROUP_M=32": "GROUP_M 32",
}
NAME = "v4_swizzle_pipeline"


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """The ablation, measured in one run: v3, then each lever of v4 added in turn (and the
    alternatives that lost), TFLOP/s at each shape with cuBLAS of the same run as a line."""
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 5.5))
    tuning = records.load_all(records.RESULTS / "tuning")
    rec = next((r for r in reversed(tuning) if any(e.get("stage", "").startswith(NAME) for e in r["results"])), None)
    if rec is None:
        ax.text(0.5, 0.5, "no ablation run published yet", ha="center", transform=ax.transAxes)
        return ax
    ok = [e for e in rec["results"] if e.get("status") == "ok"]
    shapes = list(dict.fromkeys((e["m"], e["n"], e["k"]) for e in ok))
    names = [n for n in dict.fromkeys(e["stage"] for e in ok) if n != "cublas"]
    labels = []
    for n in names:
        tag = n[len(NAME):].strip("[]") if n.startswith(NAME) else ""
        labels.append(LADDER.get(tag or "default", tag) if n.startswith(NAME) else n)
    height = 0.8 / len(shapes)
    colors = ["#3f51b5", "#e91e63", "#009688"]
    for j, shape in enumerate(shapes):
        vals = {e["stage"]: e["tflops"] for e in ok if (e["m"], e["n"], e["k"]) == shape}
        ys = [i + j * height for i in range(len(names))]
        ax.barh(ys, [vals.get(n, 0) for n in names], height=height, color=colors[j % 3],
                label="×".join(map(str, shape)))
        cub = vals.get("cublas")
        if cub:
            ax.plot([cub, cub], [-0.5, len(names)], color=colors[j % 3], ls="--", lw=1)
    ax.set_yticks([i + height * (len(shapes) - 1) / 2 for i in range(len(names))], labels, fontsize=9)
    ax.invert_yaxis()
    lo = min(e["tflops"] for e in ok)
    ax.set_xlim(lo * 0.9, max(e["tflops"] for e in ok) * 1.04)
    ax.set_xlabel("TFLOP/s (dashed: cuBLAS in the same run)")
    ax.set_title("v4 ablation: v3, then one lever at a time (one run, L2 flushed)")
    ax.legend(fontsize=8, loc="lower right", title="M×N×K")
    ax.grid(True, axis="x", alpha=0.25)
    return ax
