"""v0_naive's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

from stages.tools import plots


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """v0's time is set by its load instructions, not by arithmetic or DRAM bandwidth: a warp-wide
    load of B touches 32 different 128-byte cache lines (lane x reads row n+x of B, 2K bytes
    apart). L1 serves one wavefront per cycle, and a wavefront covers one line (up to its 4
    sectors), so such a load costs 32 cycles per SM. probes/l1_wavefront.py measured on the H200:
    32 lines 32.0 cycles, the same 32 sectors in 8 lines 8.0, one line 1.04. The model
    (M*N*K/32 warp loads of B x 32 cycles / SMs / clock) is plotted against the measured time at
    every recorded size."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    best = plots.latest(recs, gpu_substring)
    sizes, ms = plots.square_series(best, "v0_naive", "ms_median")
    rec = next((r for r in reversed(recs) if gpu_substring in ((r["env"].get("gpu") or {}).get("name") or "")), None)
    g = (rec or {}).get("env", {}).get("gpu") or {}
    sms, mhz = g.get("sm_count", 132), float(g.get("sm_clock_max_mhz") or 1980)
    model = [s**3 / 32 * 32 / sms / (mhz * 1e6) * 1e3 for s in sizes]
    ax.plot(sizes, ms, "o-", label="v0_naive measured", color=plots.STAGE_COLORS[0])
    ax.plot(sizes, model, "--", label=f"model: 32 cycles per warp-wide B load, {sms} SMs at {mhz:.0f} MHz",
            color="#c62828")
    ax.set_yscale("log")
    plots.size_axis(ax, "ms", "v0: the load instructions predict the time", sizes or (256, 8192))
    return ax
