"""v2_cp_async's "why" figure, for its walkthrough notebook (a tool-side companion of the stage)."""
import matplotlib.pyplot as plt

import stages
from stages.tools import plots


def plot(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """Pipeline depth, tile width and warp tile: every variant of the tuning sweep that chose
    v2's configuration, at two sizes (results/tuning/); the shipped configuration in bold."""
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 5.5))
    return plots.tuning_bars("v2_cp_async", ax, "v2 variants: buffers in the ring, tile width, warp tile",
                             shipped=stages.get("v2_cp_async").defines)
