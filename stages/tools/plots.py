"""Figures and tables for the notebooks, from the records in results/ (or a live run).

Every function takes the records it plots, so a notebook can pass committed H200 records or a
record it has just measured; the stage list always comes from the registry, so a stage that lands
later appears in every figure by itself. A stage's own "why" figure lives in its folder
(`stages/<stage>/why.py`, a function `plot(recs, ax=None, gpu_substring="H200")`); a stage without
one gets `generic_why`: its speed against size beside the previous stage and cuBLAS.
"""
from __future__ import annotations

import difflib
import html
import importlib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import stages

from . import records, report
from .bench import datasheet

STAGE_COLORS = ["#9e9e9e", "#ff9800", "#3f51b5", "#e91e63", "#009688", "#795548", "#673ab7"]
CUBLAS_COLOR = "#000000"


# ---- data ------------------------------------------------------------------------------------
def latest(recs: list[dict], gpu_substring: str = "H200") -> dict:
    """(stage, m, n, k) -> entry, newest first, from bench records on a matching GPU."""
    return {key: e for key, (e, _) in records.latest_results(recs, gpu_substring).items()}


def ceilings(recs: list[dict], gpu_substring: str = "H200") -> dict | None:
    """The newest measured ceilings (HBM, L2, fp32 FMA, cuBLAS) on a matching GPU."""
    hits = [r for r in recs if r.get("kind") == "ceilings"
            and gpu_substring in ((r["env"].get("gpu") or {}).get("name") or "")]
    return hits[-1]["ceilings"] if hits else None


def sources(recs: list[dict], gpu_substring: str = "H200") -> list[str]:
    """The record files the figures use, for the notebook to cite."""
    used = {rec["_path"] for _, (_, rec) in records.latest_results(recs, gpu_substring).items()}
    used |= {r["_path"] for r in recs if r.get("kind") == "ceilings"}
    return sorted(used)


def traffic_bytes(stage, m: int, n: int, k: int) -> float:
    """Global-memory bytes a stage's tiling leaves to the memory system (the roofline model).

    A block that owns a BM x BN tile of C reads BM x K of A and BN x K of B once, so A is read
    N/BN times in all and B M/BM times; C is written once. v0 shares nothing between threads, so
    its "tile" is 1 x 1: every multiply-add reads both operands. Hits in L1/L2 are not credited:
    this is what DRAM would serve if no cache helped. cuBLAS's tiles are unknown, so it is placed
    at the compulsory traffic: A, B and C once each.
    """
    if stage.name == "cublas":
        return 2.0 * (m * k + n * k + m * n)
    bm, bn = stage.reuse_tile
    return 2.0 * (m * n * k / bn + m * n * k / bm + m * n)


def intensity(stage, m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k / traffic_bytes(stage, m, n, k)


# ---- overview figures -------------------------------------------------------------------------
def _stage_list():
    return [stages.get(n) for n in stages.names()] + [stages.get("cublas")]


def size_axis(ax, ylabel: str, title: str, sizes=(256, 512, 1024, 2048, 4096, 8192)):
    """Log2 x axis of square sizes with plain tick labels, labels, grid and legend."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(sizes), [str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("M = N = K")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)


def square_series(best: dict, name: str, field: str = "tflops") -> tuple[list, list]:
    """(sizes, values) of stage `name` over the square shapes in `best`, by size."""
    pts = sorted((m, e[field]) for (s, m, n, k), e in best.items() if s == name and m == n == k)
    return [p[0] for p in pts], [p[1] for p in pts]


def _color(i: int, name: str) -> str:
    return CUBLAS_COLOR if name == "cublas" else STAGE_COLORS[i % len(STAGE_COLORS)]


def roofline(recs: list[dict], shape=(4096, 4096, 4096), ax=None, gpu_substring: str = "H200"):
    """Log-log roofline: HBM (and L2) roofs, fp32 and fp16 flat roofs (datasheet dashed,
    measured solid), the ridge point, every stage and cuBLAS at `shape`."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 6))
    meas = ceilings(recs, gpu_substring) or {}
    sheet = meas.get("datasheet") or datasheet(gpu_substring)
    x = np.logspace(-1, 4, 400)
    hbm, fp32, tensor = sheet["hbm_tbps"], sheet["fp32_tflops"], sheet["fp16_tensor_tflops"]
    ax.plot(x, np.minimum(x * hbm, tensor), "--", color="#1565c0", lw=1.2,
            label=f"datasheet: HBM {hbm} TB/s, fp16 tensor {tensor:.0f} TFLOP/s")
    ax.plot(x, np.minimum(x * hbm, fp32), ":", color="#1565c0", lw=1.2,
            label=f"datasheet: fp32 FMA {fp32} TFLOP/s")
    if meas:
        mh, mt, mf = meas["hbm_copy_tbps"], meas["fp16_tensor_cublas_tflops"], meas["fp32_ffma_tflops"]
        ax.plot(x, np.minimum(x * mh, mt), "-", color="#c62828", lw=1.6,
                label=f"measured: HBM copy {mh:.2f} TB/s, cuBLAS {mt:.0f} TFLOP/s")
        ax.plot(x, np.minimum(x * mh, mf), "-", color="#ef9a9a", lw=1.6,
                label=f"measured: fp32 FFMA loop {mf:.1f} TFLOP/s")
        if meas.get("l2_read_tbps"):
            l2 = meas["l2_read_tbps"]
            ax.plot(x, np.minimum(x * l2, mt), "-.", color="#6a1b9a", lw=1.0,
                    label=f"measured: L2 read probe {l2:.1f} TB/s (a lower bound on L2, not a roof)")
    ridge = tensor / hbm
    ax.axvline(ridge, color="#90a4ae", lw=0.8)
    ax.scatter([ridge], [tensor], s=25, color="#1565c0", zorder=4)
    ax.annotate(f"ridge point: {ridge:.0f} FLOP/B", (ridge, tensor), textcoords="offset points",
                xytext=(-60, 10), fontsize=8, color="#1565c0")
    best = latest(recs, gpu_substring)
    m, n, k = shape
    for i, st in enumerate(_stage_list()):
        e = best.get((st.name, m, n, k))
        if not e:
            continue
        ai = intensity(st, m, n, k)
        ax.scatter([ai], [e["tflops"]], s=60, color=_color(i, st.name), zorder=5,
                   marker="*" if st.name == "cublas" else "o")
        value = f"{e['tflops']:.2g}" if e["tflops"] < 10 else f"{e['tflops']:.0f}"
        # Labels alternate below-right and above-left of their points, on a white ground, so a
        # label never sits on a roof line unreadably; cuBLAS (a star) labels below.
        offset = (-10, -30) if st.name == "cublas" else ((8, -22) if i % 2 == 0 else (-82, 6))
        ax.annotate(f"{st.name}\n{value} TFLOP/s", (ai, e["tflops"]), fontsize=8,
                    textcoords="offset points", xytext=offset,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.1, 1e4)
    ax.set_ylim(0.1, 2000)
    ax.set_xlabel("arithmetic intensity, FLOP per byte of global traffic the tiling requests")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Roofline, {gpu_substring}, {m}x{n}x{k} fp16 (fp32 accumulate)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def speedups(recs: list[dict], shape=(4096, 4096, 4096), ax=None, gpu_substring: str = "H200"):
    """Bars of TFLOP/s per stage in order (log scale), each annotated with its speedup over the
    stage before and its ratio to cuBLAS measured in the same run."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 4.5))
    best = latest(recs, gpu_substring)
    rows = [(st.name, best.get((st.name, *shape))) for st in _stage_list()]
    rows = [(name, e) for name, e in rows if e]
    names = [r[0] for r in rows]
    vals = [r[1]["tflops"] for r in rows]
    ax.bar(range(len(rows)), vals, color=[_color(i, n) for i, n in enumerate(names)])
    prev = None
    for i, (name, e) in enumerate(rows):
        label = f"{e['tflops']:.1f}" if e["tflops"] < 10 else f"{e['tflops']:.0f}"
        if name != "cublas":
            label += f"\n{e['ratio_cublas']:.3g}x cuBLAS"
            if prev:
                label += f"\n{e['tflops'] / prev:.1f}x prev."
            prev = e["tflops"]
        ax.annotate(label, (i, e["tflops"]), ha="center", va="bottom", fontsize=8,
                    textcoords="offset points", xytext=(0, 2))
    ax.set_xticks(range(len(rows)), names, rotation=0, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(min(vals) / 3, max(vals) * 8)
    ax.set_ylabel("TFLOP/s (log)")
    ax.set_title(f"Version over version, {gpu_substring}, {'x'.join(map(str, shape))} fp16")
    ax.grid(True, axis="y", which="both", alpha=0.25)
    return ax


def by_size(recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """TFLOP/s against size for the square shapes recorded (256 .. 8192)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 5))
    best = latest(recs, gpu_substring)
    for i, st in enumerate(_stage_list()):
        sizes, tf = square_series(best, st.name)
        if sizes:
            ax.plot(sizes, tf, "o-", color=_color(i, st.name), label=st.name,
                    lw=2 if st.name == "cublas" else 1.4)
    ax.set_yscale("log")
    size_axis(ax, "TFLOP/s", f"TFLOP/s against size, square fp16 GEMM, {gpu_substring}")
    return ax


# ---- walkthrough helpers ---------------------------------------------------------------------
def idea_markdown(name: str) -> str:
    """The stage README up to its first level-2 section: the idea, rendered from the source."""
    text = (stages.get(name).folder / "README.md").read_text()
    head = text.split("\n## ", 1)[0]
    return "\n".join(ln for ln in head.splitlines() if not ln.startswith("<!--"))


def kernel_diff_html(name: str, context: int = 2) -> str:
    """The diff of kernel.cu against the previous stage's, as colored HTML (from the sources)."""
    st = stages.get(name)
    if not st.previous:
        body = html.escape(st.code())
        return f"<pre style='font-size:11px'>{body}</pre>"
    prev = stages.get(st.previous)
    lines = difflib.unified_diff(prev.code().splitlines(), st.code().splitlines(),
                                 f"{prev.name}/kernel.cu", f"{name}/kernel.cu", lineterm="", n=context)
    out = []
    for ln in lines:
        color = "#e6ffed" if ln.startswith("+") else "#ffeef0" if ln.startswith("-") else (
            "#f1f8ff" if ln.startswith("@@") else "transparent")
        out.append(f"<span style='background:{color}'>{html.escape(ln)}</span>")
    summary = html.escape(report.diff_summary(name).replace("`", ""))
    return f"<p>{summary}</p><pre style='font-size:11px;line-height:1.25'>" + "\n".join(out) + "</pre>"


def measured_rows(name: str, recs: list[dict], gpu_substring: str = "H200") -> list[dict]:
    best = latest(recs, gpu_substring)
    return [dict(e, shape=f"{m}x{n}x{k}") for (s, m, n, k), e in sorted(best.items(), key=lambda kv: kv[0][1:])
            if s == name]


def save(fig, name: str, folder: str | Path) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return path


# ---- one plot per stage: why its idea helps ----------------------------------------------------
def generic_why(name: str, recs: list[dict], ax=None, gpu_substring: str = "H200"):
    """The stage's TFLOP/s against size beside the previous stage and cuBLAS (the fallback for a
    stage without a why.py of its own)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    best = latest(recs, gpu_substring)
    st = stages.get(name)
    order = stages.names()
    for other in [st.previous, name, "cublas"]:
        if other:
            sizes, tf = square_series(best, other)
            if sizes:
                i = order.index(other) if other in order else 0
                ax.plot(sizes, tf, "o-", label=other, color=_color(i, other))
    ax.set_yscale("log")
    size_axis(ax, "TFLOP/s", f"{name} against {st.previous or 'nothing'} and cuBLAS")
    return ax


def _why_module(name: str):
    try:
        return importlib.import_module(f"stages.{stages.get(name).base_name}.why")
    except ModuleNotFoundError:
        return None


def why_doc(name: str) -> str:
    """What the stage's "why" figure shows (its docstring)."""
    mod = _why_module(name)
    return (mod.plot.__doc__ if mod else generic_why.__doc__).strip()


def why(name: str, recs: list[dict], gpu_substring: str = "H200", ax=None):
    """The walkthrough's plot for stage `name`: stages/<name>/why.py, else `generic_why`."""
    mod = _why_module(name)
    if mod is None:
        return generic_why(name, recs, ax=ax, gpu_substring=gpu_substring)
    return mod.plot(recs, ax=ax, gpu_substring=gpu_substring)


def tuning_rows(name: str) -> list[tuple]:
    """(variant, shape, TFLOP/s, x cuBLAS) of every tuning variant of `name` in results/tuning/."""
    rows = []
    for rec in records.load_all(records.RESULTS / "tuning"):
        for e in rec.get("results", []):
            if e.get("status") == "ok" and e["stage"].startswith(name + "["):
                shape = f"{e['m']}³" if e["m"] == e["n"] == e["k"] else f"{e['m']}x{e['n']}x{e['k']}"
                rows.append((e["stage"][len(name):], shape, e["tflops"], e.get("ratio_cublas")))
    return rows


def tuning_bars(name: str, ax, title: str, shipped: dict | None = None):
    """Horizontal bars of every tuning variant of `name` (one colour per shape), the shipped
    configuration marked."""
    rows = tuning_rows(name)
    shapes = sorted({r[1] for r in rows}, key=lambda s: int(s.rstrip("³").split("x")[0]))
    variants = list(dict.fromkeys(r[0] for r in rows))
    height = 0.8 / max(len(shapes), 1)
    for j, shape in enumerate(shapes):
        vals = {r[0]: r[2] for r in rows if r[1] == shape}
        ys = [i + j * height for i in range(len(variants))]
        ax.barh(ys, [vals.get(v, 0) for v in variants], height=height, label=shape,
                color=STAGE_COLORS[(j + 2) % len(STAGE_COLORS)])
        for y, v in zip(ys, variants):
            if v in vals:
                ax.annotate(f"{vals[v]:.0f}", (vals[v], y), va="center", fontsize=8,
                            textcoords="offset points", xytext=(3, 0))
    labels = []
    for v in variants:
        cfg = dict(kv.split("=") for kv in v.strip("[]").split(",") if "=" in kv)
        mark = shipped is not None and all(str(shipped.get(key)) == val for key, val in cfg.items())
        labels.append(v.strip("[]").replace(",", ", ") + ("  (shipped)" if mark else ""))
    ax.set_yticks([i + height * (len(shapes) - 1) / 2 for i in range(len(variants))], labels, fontsize=9)
    for tick, label in zip(ax.get_yticklabels(), labels):
        if label.endswith("(shipped)"):
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlim(0, max((r[2] for r in rows), default=1) * 1.25)
    ax.set_xlabel("TFLOP/s (H200, L2 flushed before each run)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right", title="M = N = K")
    ax.grid(True, axis="x", alpha=0.25)
    return ax
