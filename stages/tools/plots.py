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
import os
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import stages
from stages.core import gpu

from . import diagrams, inspect, profile, records, report, timing
from .bench import datasheet

STAGE_COLORS = ["#9e9e9e", "#ff9800", "#3f51b5", "#e91e63", "#009688", "#795548", "#673ab7"]
CUBLAS_COLOR = "#000000"


# ---- data ------------------------------------------------------------------------------------
def latest(recs: list[dict], gpu_substring: str = "H200") -> dict:
    """(stage, m, n, k) -> entry, newest first, from bench records on a matching GPU."""
    return {key: e for key, (e, _) in records.latest_results(recs, gpu_substring).items() if e["status"] == "ok"}


def ceilings(recs: list[dict], gpu_substring: str = "H200") -> dict | None:
    """The newest measured ceilings (HBM, L2, fp32 FMA, cuBLAS) on a matching GPU."""
    hits = [r for r in recs if r.get("kind") == "ceilings"
            and gpu_substring in ((r["env"].get("gpu") or {}).get("name") or "")]
    return hits[-1]["ceilings"] if hits else None


def sources(recs: list[dict], gpu_substring: str = "H200") -> list[str]:
    """The record files the figures use, for the notebook to cite."""
    used = {rec["_path"] for _, (e, rec) in records.latest_results(recs, gpu_substring).items() if e["status"] == "ok"}
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
    measured solid), the ridge point, every stage and cuBLAS at `shape`: filled markers placed by
    the tiling's traffic model, hollow ones (where a profile record exists) by the DRAM bytes
    Nsight Compute measured, joined by a thin line."""
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
    measured_dram, dram_labelled = {}, False
    _, entries = profile.latest_profile(recs)
    for pe in entries:
        if (pe["m"], pe["n"], pe["k"]) == (m, n, k) and "[" not in pe["stage"]:
            got = [pe["metrics"].get(key, {}).get("value") for key in ("dram__bytes_read.sum", "dram__bytes_write.sum")]
            if all(isinstance(v, (int, float)) for v in got):
                measured_dram[pe["stage"]] = sum(got)
    for i, st in enumerate(_stage_list()):
        e = best.get((st.name, m, n, k))
        if not e:
            continue
        ai = intensity(st, m, n, k)
        ax.scatter([ai], [e["tflops"]], s=60, color=_color(i, st.name), zorder=5,
                   marker="*" if st.name == "cublas" else "o")
        dram = measured_dram.get(st.name)
        if dram:
            ai_dram = 2.0 * m * n * k / dram
            ax.plot([ai, ai_dram], [e["tflops"], e["tflops"]], color=_color(i, st.name), lw=0.8, zorder=4)
            ax.scatter([ai_dram], [e["tflops"]], s=60, facecolors="none", edgecolors=_color(i, st.name),
                       zorder=5, label="measured DRAM bytes (Nsight Compute)" if not dram_labelled else None)
            dram_labelled = True
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
    ax.set_xlabel("arithmetic intensity, FLOP per byte: of the traffic the tiling requests (filled), of DRAM traffic measured (hollow)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Roofline, {gpu_substring}, {m}x{n}x{k} fp16 (fp32 accumulate)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 0.24))
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
# The one mapping between a stage's README and its walkthrough. The kernel is cut at its section
# banners (`// ---- load: ...`): the banner's first word names the part it opens (BANNER_PART;
# any other banner, the code before the first one and each `__global__` entry open "setup").
# A README block is shown at an anchor: the notebook's places, in order (ANCHORS). A `##` section
# goes to the anchor its heading names (HEADING_ANCHOR, by the heading's first words), else to
# "diff" (after the kernel parts); a line `<!-- explains: PART -->` in the README sends what
# follows it, up to the next hint or `##` heading, to PART. Generated blocks (`<!-- x:begin -->
# ... <!-- x:end -->`: the measured and ablation tables, the diff summary) are left out: the
# notebook shows those from the records and the sources itself.
PARTS = ("setup", "load", "compute", "epilogue")
BANNER_PART = {"load": "load", "tma": "load", "mbarrier": "load", "producer": "load",
               "compute": "compute", "wgmma": "compute", "mma": "compute", "epilogue": "epilogue",
               "fused": "epilogue"}
ANCHORS = ("idea", *PARTS, "diff", "inspect", "knob", "measured", "why", "end")
HEADING_ANCHOR = (("inspect", "inspect"), ("measured", "measured"), ("ablation", "why"),
                  ("verification", "measured"), ("open question", "end"), ("shared-memory budget", "inspect"))
NOTEBOOKS = records.REPO / "notebooks"

_BANNER = re.compile(r"^\s*// ---- ([A-Za-z]+)")
_GENERATED = re.compile(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->\n?", re.S)
_HINT = re.compile(r"^\s*<!--\s*explains:\s*([\w-]+)\s*-->\s*$")
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def kernel_parts(code: str) -> list[str]:
    """The part (PARTS) each line of a kernel source belongs to, from its section banners."""
    part, out = "setup", []
    for line in code.splitlines():
        m = _BANNER.match(line)
        if m:
            part = BANNER_PART.get(m.group(1).lower(), "setup")
        elif "__global__" in line:
            part = "setup"
        out.append(part)
    return out


def _heading_anchor(heading: str) -> str:
    low = heading.lower()
    return next((anchor for start, anchor in HEADING_ANCHOR if low.startswith(start)), "diff")


def _relink(md: str, folder: Path, to: Path = NOTEBOOKS) -> str:
    """Relative links of a stage README, rewritten to work from `to` (the notebooks folder)."""
    def fix(m):
        target = m.group(2)
        if re.match(r"^(https?:|mailto:|#|/)", target):
            return m.group(0)
        rel = os.path.relpath(folder / target, to) + ("/" if target.endswith("/") else "")
        return m.group(1) + rel.replace(os.sep, "/") + m.group(3)
    return _LINK.sub(fix, md)


def readme_sections(name: str) -> list[dict]:
    """The stage README cut into blocks: {anchor, heading, continued, markdown}, in README order;
    every word of it except its title, HTML comments and generated blocks."""
    folder = stages.get(name).folder
    text = _GENERATED.sub("", (folder / "README.md").read_text())
    blocks, cur = [], {"anchor": "idea", "heading": None, "continued": False, "lines": []}
    for line in text.splitlines():
        if line.startswith("# ") and not blocks and not any(x.strip() for x in cur["lines"]):
            continue  # the title: the notebook has its own
        if line.startswith("## "):
            blocks.append(cur)
            heading = line[3:].strip()
            cur = {"anchor": _heading_anchor(heading), "heading": heading, "continued": False, "lines": []}
            continue
        hint = _HINT.match(line)
        if hint:
            if any(x.strip() for x in cur["lines"]):
                blocks.append(cur)
                cur = {"anchor": hint.group(1), "heading": cur["heading"], "continued": True, "lines": []}
            else:
                cur["anchor"] = hint.group(1)
            continue
        cur["lines"].append(re.sub(r"\s*<!--.*?-->", "", line))
    blocks.append(cur)
    out = []
    for b in blocks:
        body = "\n".join(b["lines"]).strip()
        if not body:
            continue
        if b["heading"] and not b["continued"] and b["anchor"] == _heading_anchor(b["heading"]):
            body = f"### {b['heading']}\n\n{body}"
        elif b["heading"]:  # a part of a section shown away from its heading
            body = f"*From the README, \u00a7 {b['heading']}:*\n\n{body}"
        out.append({"anchor": b["anchor"], "heading": b["heading"], "continued": b["continued"],
                    "markdown": _relink(body, folder)})
    return out


def readme_blocks(name: str, anchor: str) -> list[str]:
    """The README's markdown blocks that belong at `anchor` (one of ANCHORS), in README order."""
    return [b["markdown"] for b in readme_sections(name) if b["anchor"] == anchor]


def idea_markdown(name: str) -> str:
    """The stage README's opening (the idea, up to its first `##` section or hint elsewhere)."""
    return "\n\n".join(readme_blocks(name, "idea"))


def _diff_rows(prev_code: str, code: str, context: int) -> list[list[tuple]]:
    """Hunks of the diff, each a list of (sign, text, part, old line no, new line no); a removed
    line belongs to the part of the old kernel it sat in, every other line to the new kernel's."""
    old, new = prev_code.splitlines(), code.splitlines()
    po, pn = kernel_parts(prev_code), kernel_parts(code)
    matcher = difflib.SequenceMatcher(None, old, new)  # as difflib.unified_diff (report.diff_summary)
    hunks = []
    for group in matcher.get_grouped_opcodes(context):
        rows = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [(" ", new[j], pn[j], i + 1, j + 1) for i, j in zip(range(i1, i2), range(j1, j2))]
            else:
                rows += [("-", old[i], po[i], i + 1, None) for i in range(i1, i2)]
                rows += [("+", new[j], pn[j], None, j + 1) for j in range(j1, j2)]
        hunks.append(rows)
    return hunks


def _row_html(sign: str, text: str) -> str:
    color = {"+": "#e6ffed", "-": "#ffeef0", "@": "#f1f8ff"}.get(sign, "transparent")
    return f"<span style='background:{color}'>{html.escape(text)}</span>"


_PRE = "<pre style='font-size:11px;line-height:1.25'>"


def part_counts(name: str) -> dict[str, tuple[int, int]]:
    """part -> (lines added, lines removed) of the stage's kernel diff (the first stage: its lines)."""
    st = stages.get(name)
    if not st.previous:
        parts = kernel_parts(st.code())
        return {p: (parts.count(p), 0) for p in PARTS}
    counts = {p: [0, 0] for p in PARTS}
    for rows in _diff_rows(stages.get(st.previous).code(), st.code(), 0):
        for sign, _, part, _, _ in rows:
            if sign in "+-":
                counts[part][0 if sign == "+" else 1] += 1
    return {p: tuple(v) for p, v in counts.items()}


def diff_overview(name: str) -> str:
    """Markdown: the size of the stage's one idea, and where in the kernel it lands."""
    counts = part_counts(name)
    st = stages.get(name)
    lines = [report.diff_summary(name), "",
             "| part | " + ("lines" if not st.previous else "added | removed") + " |",
             "|---|" + ("---|" if not st.previous else "---|---|")]
    for p in PARTS:
        a, r = counts[p]
        lines.append(f"| {p} | {a} |" if not st.previous else f"| {p} | {a} | {r} |")
    return "\n".join(lines)


def kernel_diff_html(name: str, context: int = 2, part: str | None = None) -> str:
    """The diff of kernel.cu against the previous stage's, as colored HTML (from the sources);
    with `part` (one of PARTS) only the lines of that part of the kernel (the first stage, which
    has no previous one: its own lines of that part)."""
    st = stages.get(name)
    if not st.previous:
        code = st.code().splitlines()
        parts = kernel_parts(st.code())
        if part is None:
            return f"<pre style='font-size:11px'>{html.escape(st.code())}</pre>"
        body = [f"{i + 1:4d}  {html.escape(ln)}" for i, ln in enumerate(code) if parts[i] == part]
        return (f"<p><b>{part}</b>: {len(body)} lines of kernel.cu</p>{_PRE}" + "\n".join(body) + "</pre>"
                if body else f"<p>kernel.cu has no {part} section.</p>")
    prev = stages.get(st.previous)
    out = []
    for rows in _diff_rows(prev.code(), st.code(), context):
        runs, cur = [], []
        for row in rows:  # runs of consecutive rows of the wanted part (all rows without a part)
            if part is None or row[2] == part:
                cur.append(row)
            elif cur:
                runs.append(cur)
                cur = []
        if cur:
            runs.append(cur)
        for run in runs:
            if not any(r[0] in "+-" for r in run):
                continue  # context only
            old_no = next((r[3] for r in run if r[3]), None)
            new_no = next((r[4] for r in run if r[4]), None)
            out.append(_row_html("@", f"@@ {prev.name}/kernel.cu line {old_no or '-'}, "
                                      f"{name}/kernel.cu line {new_no or '-'} @@"))
            out += [_row_html(sign, sign + text) for sign, text, *_ in run]
    if part is not None:
        added, removed = part_counts(name)[part]
        head = f"<p><b>{part}</b>: {added} lines added, {removed} removed</p>"
        return head + (_PRE + "\n".join(out) + "</pre>" if out else f"<p>No change in the {part} part.</p>")
    summary = html.escape(report.diff_summary(name).replace("`", ""))
    return f"<p>{summary}</p>{_PRE}" + "\n".join(out) + "</pre>"


# ---- the stage folder's walkthrough declarations (why.py): knob, questions, diagrams -------------
def _extra(name: str, attr: str, default=None):
    mod = _why_module(name)
    return getattr(mod, attr, default) if mod else default


def knob(name: str) -> dict:
    """The one define the walkthrough's "predict first" cell changes: why.py's KNOB, else the
    first define whose doubled (or halved) value the stage accepts."""
    chosen = _extra(name, "KNOB")
    if chosen:
        return dict(chosen)
    st = stages.get(name)
    for key, val in st.defines.items():
        for new in (val * 2, val // 2):
            if isinstance(val, int) and new != val and new > 0:
                try:
                    st.variant(**{key: new})
                except ValueError:
                    continue
                return {key: new}
    return {}


def knob_question(name: str) -> str:
    """The prompt before the knob cell: why.py's KNOB_QUESTION, else a generic one."""
    k = knob(name)
    text = _extra(name, "KNOB_QUESTION")
    if text:
        return text
    st = stages.get(name)
    change = ", ".join(f"`{key}={v}` (shipped: {st.defines[key]})" for key, v in k.items())
    return (f"Predict what happens to the registers per thread, the shared memory per block, spills "
            f"and the SASS mix when you set {change}.")


def knob_shape(name: str) -> tuple[int, int, int]:
    return tuple(_extra(name, "KNOB_SHAPE", (4096, 4096, 4096)))


def knob_answer(name: str, shipped, variant, rep, rep_variant) -> str:
    """why.py's KNOB_ANSWER(shipped, variant, rep, rep_variant) -> markdown, if it has one."""
    fn = _extra(name, "KNOB_ANSWER")
    return fn(shipped, variant, rep, rep_variant) if fn else ""


def inspect_compare(rep, rep_variant) -> str:
    """Two `inspect` reports side by side (markdown): registers, shared memory, spills, SASS."""
    def b(x):
        return "?" if x is None else f"{x:,}"
    rows = [("registers per thread", rep.registers, rep_variant.registers),
            ("dynamic shared memory, B", rep.dynamic_smem, rep_variant.dynamic_smem),
            ("spill stores, B", rep.spill_stores, rep_variant.spill_stores),
            ("spill loads, B", rep.spill_loads, rep_variant.spill_loads),
            ("local memory, B", rep.local_memory, rep_variant.local_memory),
            ("SASS instructions", rep.total_instructions, rep_variant.total_instructions)]
    fams = list(dict.fromkeys([*rep.families, *rep_variant.families]))
    rows += [(f"SASS {f}", rep.opcodes.get(f, 0), rep_variant.opcodes.get(f, 0)) for f in fams]
    out = [f"| | {rep.stage} | {rep_variant.stage} | change |", "|---|---|---|---|"]
    for label, x, y in rows:
        delta = "" if x is None or y is None or x == y else f"{y - x:+,}"
        out.append(f"| {label} | {b(x)} | {b(y)} | {delta} |")
    warn = [w for w in rep_variant.failures if w not in rep.failures]
    if warn:
        out += ["", "**The variant:** " + "; ".join(warn)]
    return "\n".join(out)


def time_pair(stage, variant, shape=(4096, 4096, 4096), reps: int = 10, warmup: int = 2) -> str:
    """Both kernels timed on the same inputs (GPU only; L2 flushed before each run), markdown."""
    cp = gpu.cupy()
    m, n, k = shape
    a = cp.random.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
    b = cp.random.standard_normal((n, k), dtype=cp.float32).astype(cp.float16)
    out = cp.empty((m, n), dtype=cp.float16)
    flush = timing.L2Flusher(gpu.current().l2_bytes)
    rows = [f"| {m}x{n}x{k} | median ms | TFLOP/s |", "|---|---|---|"]
    for s in (stage, variant):
        try:
            t = timing.time_gpu(s.prepare(a, b, out), reps=reps, warmup=warmup, flush=flush)
            rows.append(f"| {s.name} | {t.median:.3f} | {timing.tflops(m, n, k, t.median):.1f} |")
        except Exception as exc:  # a variant this GPU cannot launch says why
            rows.append(f"| {s.name} | – | {type(exc).__name__}: {exc} |")
    return "\n".join(rows)


def calls(name: str) -> list[tuple[tuple[int, int, int], str]]:
    """why.py's CALLS: the (M, N, K), epilogue pairs (bench's spelling) whose builds the walkthrough
    lists, for a stage that picks part of its build per call ([] for one build for every call)."""
    return [(tuple(shape), spec) for shape, spec in _extra(name, "CALLS", []) or []]


def call_builds(stage, pairs) -> str:
    """Markdown: per (shape, epilogue) what `stage.defines_for` picks for that call on the reference
    H200 (inspect.call_defines, aligned operands; nothing compiled), in the columns whose values
    differ between the calls (the tile, BM and BN, always)."""
    picks = [inspect.call_defines(stage, *shape, inspect.call_epilogue(spec)) for shape, spec in pairs]
    keys = [key for key in dict.fromkeys(k for p in picks for k in p)
            if key in ("BM", "BN") or len({p.get(key) for p in picks}) > 1]
    if not keys:
        return f"{stage.name} builds one kernel for every call: nothing is picked per call."
    rows = [f"| {'×'.join(map(str, shape))} | {spec} | " + " | ".join(str(p.get(key, "")) for key in keys) + " |"
            for (shape, spec), p in zip(pairs, picks)]
    return "\n".join([f"| M×N×K | epilogue | {' | '.join(keys)} |", "|---|---|" + "---|" * len(keys), *rows])


def questions(name: str) -> list[tuple]:
    """why.py's QUESTIONS: (text, value(stage, report), explanation) triples."""
    return list(_extra(name, "QUESTIONS", []) or [])


def check_answers(name: str, answers: dict, stage, rep, rel: float = 0.01) -> str:
    """Each answer against the value computed from the stage's defines / inspect report:
    right or wrong, with the explanation (markdown). Unanswered questions stay closed."""
    out = []
    for i, (text, value_fn, explain) in enumerate(questions(name), 1):
        value = value_fn(stage, rep)
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else value
        why_text = explain(stage, rep) if callable(explain) else str(explain).format(value=shown, **stage.defines)
        given = answers.get(i)
        if given is None:
            out.append(f"**{i}.** not answered yet: put a number in `answers[{i}]` and run this cell again.")
            continue
        ok = value is not None and abs(float(given) - float(value)) <= rel * max(abs(float(value)), 1e-12)
        verdict = "right" if ok else f"not quite: you wrote {given}, it is {shown}"
        out.append(f"**{i}. {verdict}.** {why_text}")
    return "\n\n".join(out) if out else "This stage has no questions yet (QUESTIONS in its why.py)."


def stage_diagrams(name: str, part: str | None = None) -> list[tuple[str, dict]]:
    """why.py's DIAGRAMS as (kind, options), those of `part` only if given (each diagram's part:
    its "part" option, else diagrams.PART)."""
    out = []
    for kind, options in _extra(name, "DIAGRAMS", []) or []:
        where = options.get("part", diagrams.PART.get(kind, "setup"))
        if part is None or where == part:
            out.append((kind, {k: v for k, v in options.items() if k != "part"}))
    return out


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


def ablation_bars(name: str, ax=None, labels: dict | None = None, title: str | None = None,
                  zoom: bool = False):
    """The newest published ablation of stage `name` (a tuning record holding its variants, run
    with `tune --variant ...`): one bar per variant and shape, cuBLAS of the same run dashed, the
    shipped configuration named. `labels` maps a variant's overrides ("SWIZZLE=0", "default") to
    what it shows. `zoom`: the x axis starts at 90% of the slowest bar (for variants a few percent
    apart) instead of 0."""
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 5))
    labels = labels or {}
    rec = records.latest_ablation(name)
    if rec is None:
        ax.text(0.5, 0.5, f"no ablation of {name} published yet", ha="center", transform=ax.transAxes)
        return ax
    ok = [e for e in rec["results"] if e.get("status") == "ok"]
    shapes = list(dict.fromkeys((e["m"], e["n"], e["k"]) for e in ok))
    names = [n for n in dict.fromkeys(e["stage"] for e in ok) if n != "cublas"]
    shown = []
    for n in names:
        tag = n[len(name):].strip("[]") if n.startswith(name) else ""
        base = labels.get(tag or "default", tag or "shipped")
        shown.append(base if n.startswith(name) else n)
    height = 0.8 / max(len(shapes), 1)
    for j, shape in enumerate(shapes):
        vals = {e["stage"]: e["tflops"] for e in ok if (e["m"], e["n"], e["k"]) == shape}
        ys = [i + j * height for i in range(len(names))]
        color = STAGE_COLORS[(j + 2) % len(STAGE_COLORS)]
        ax.barh(ys, [vals.get(n, 0) for n in names], height=height, color=color, label="×".join(map(str, shape)))
        for y, n in zip(ys, names):
            if n in vals:
                ax.annotate(f"{vals[n]:.3g}", (vals[n], y), va="center", fontsize=8, textcoords="offset points",
                            xytext=(3, 0))
        if vals.get("cublas"):
            ax.axvline(vals["cublas"], color=color, ls="--", lw=1)
    ax.set_yticks([i + height * (len(shapes) - 1) / 2 for i in range(len(names))], shown, fontsize=9)
    ax.invert_yaxis()
    if zoom:
        ax.set_xlim(min(e["tflops"] for e in ok) * 0.9, max(e["tflops"] for e in ok) * 1.04)
    else:
        ax.set_xlim(0, max(e["tflops"] for e in ok if e["stage"] != "cublas") * 1.25)
    ax.set_xlabel("TFLOP/s (one run, L2 flushed before each timed launch; dashed: cuBLAS, off the axis when far right)")
    ax.set_title(title or f"{name}: its idea taken apart, measured in one run")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="M×N×K")
    ax.grid(True, axis="x", alpha=0.25)
    return ax
