"""Tables generated from results/: the README's stage table and each stage README's measured block
(and the fused-epilogue table, `fused_table`, for a `fused-table` block where a README marks one).

Blocks live between `<!-- NAME:begin -->` and `<!-- NAME:end -->` markers and are rewritten by
`python -m stages report --write`; nothing measured is typed by hand.
"""
from __future__ import annotations

import difflib
import importlib
import re
from pathlib import Path

import stages

from . import profile, records

TABLE_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))


def _fmt(x, spec):
    return "–" if x is None else format(x, spec)


def _tf(x) -> str:
    """TFLOP/s: whole numbers from 10 up, two significant digits below (v0's 0.50)."""
    return "–" if x is None else (f"{x:.0f}" if x >= 10 else f"{x:.2g}")


def _ratio(x) -> str:
    return "–" if x is None else (f"{x:.2f}" if x >= 0.1 else f"{x:.2g}")


def stage_table(recs: list[dict]) -> str:
    best = records.latest_results(recs)
    head = "| stage | idea | requires | " + " | ".join(
        f"{m}×{n}×{k} TFLOP/s | × cuBLAS" for m, n, k in TABLE_SHAPES) + " |"
    lines = [head, "|" + "---|" * (3 + 2 * len(TABLE_SHAPES))]
    used = set()
    for name in [*stages.names(), "cublas"]:
        st = stages.get(name)
        req = st.requires.describe()
        cons = st.constraints.describe()
        cells = []
        for shape in TABLE_SHAPES:
            hit = best.get((name, *shape))
            if hit:
                e, rec = hit
                used.add(rec["_path"])
                cells += [_tf(e["tflops"]), _ratio(e.get("ratio_cublas"))] if e["status"] == "ok" else ["failed", "–"]
            else:
                cells += ["–", "–"]
        link = f"[{name}](stages/{name}/)" if name != "cublas" else name
        lines.append(f"| {link} | {st.idea} | {req}; {cons} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Measured on an NVIDIA H200 by `python -m stages bench`; each row is its stage's newest "
                 "record (one whose output failed the judge reads \"failed\"), and its × cuBLAS is against cuBLAS in that same run (so it need not match the "
                 "cublas row, cuBLAS's own newest run); records: "
                 + (", ".join(f"[{p}]({p})" for p in sorted(used)) if used else "none yet") + ".")
    return "\n".join(lines)


def stage_measured(name: str, recs: list[dict]) -> str:
    best = records.latest_results(recs)
    rows = [(k, v) for k, v in best.items() if k[0] == name]
    if not rows:
        return "No H200 measurement recorded yet."
    out = ["| shape (M×N×K) | median ms (p20–p80) | TFLOP/s | % of fp16 peak | × cuBLAS | rel. error | record |",
           "|---|---|---|---|---|---|---|"]
    for (_, m, n, k), (e, rec) in sorted(rows, key=lambda r: r[0][1:]):
        if e["status"] != "ok":  # the newest run failed the judge: said, not an older figure
            out.append(f"| {m}×{n}×{k} | failed: {e.get('reason', '')} | – | – | – | – | "
                       f"[{Path(rec['_path']).name}](../../{rec['_path']}) |")
            continue
        out.append(f"| {m}×{n}×{k} | {e['ms_median']:.3f} ({e['ms_p20']:.3f}–{e['ms_p80']:.3f}) | "
                   f"{e['tflops']:.1f} | {_fmt(e.get('pct_peak'), '.1f')} | "
                   f"{_ratio(e.get('ratio_cublas'))} | {e['rel_err']:.1e} | "
                   f"[{Path(rec['_path']).name}](../../{rec['_path']}) |")
    runs = {}  # each record the rows came from, once: rows may come from different runs
    for _, (e, rec) in rows:
        runs.setdefault(rec["_path"], rec["env"])

    def _board(env):
        g = env["gpu"]
        return (f"GPU {g['name']} (driver {g['driver']}, CUDA runtime {g['cuda_runtime']}), "
                f"CuPy {env['versions']['cupy']}")

    def _when(env):
        return f"commit {str(env['git_commit'])[:10]}, {env['date'][:10]}"

    out.append("")
    if len(runs) == 1:
        env = next(iter(runs.values()))
        out.append(f"{_board(env)}, {_when(env)}. × cuBLAS is measured in the same run on the same inputs.")
    else:
        boards = {}  # the runs grouped by the board and versions they ran on
        for path, env in sorted(runs.items()):
            boards.setdefault(_board(env), []).append(f"{Path(path).name[:15]} ({_when(env)})")
        out.append(f"The rows come from {len(runs)} runs: " + "; ".join(
            f"{board}: {', '.join(names)}" for board, names in boards.items())
            + ". × cuBLAS is measured in each row's own run on the same inputs.")
    return "\n".join(out)


def cpu_table(recs: list[dict], link_prefix: str = "") -> str:
    """The newest published CPU comparison; `link_prefix` makes the record link relative to the
    file the table lands in ("" for the top README, "../" one folder down)."""
    rec = next((r for r in reversed(recs) if any(e.get("status") == "ok" for e in r.get("cpu", []))), None)
    if rec is None:
        return "No CPU measurement recorded yet."
    out = ["| shape | numpy float32 GFLOP/s | numba GFLOP/s | numba ÷ numpy |", "|---|---|---|---|"]
    rows = [e for e in rec["cpu"] if e.get("status") == "ok"]
    by_shape = {}
    for e in rows:
        by_shape.setdefault((e["m"], e["n"], e["k"]), {})[e["stage"]] = e
    for (m, n, k), pair in by_shape.items():
        if {"numpy", "cpu_numba"} <= set(pair):
            out.append(f"| {m}×{n}×{k} | {pair['numpy']['gflops']:.0f} | "
                       f"{pair['cpu_numba']['gflops']:.0f} | {pair['cpu_numba']['ratio_numpy']:.2f} |")
    h = rec["env"]["host"]
    timing = rows[0].get("timing") or f"median of {rows[0].get('reps', '?')} runs"
    out.append("")
    out.append(f"{h['cpu']}, {h['cores']} cores, numba {rec['env']['versions']['numba']}, "
               f"{rec['env']['date'][:10]}; {timing}; record [{Path(rec['_path']).name}]"
               f"({link_prefix}{rec['_path']}).")
    return "\n".join(out)


def overhead_table(recs: list[dict]) -> str:
    """The newest published call-overhead record: host time per gemm() call against cupy.matmul."""
    rec = next((r for r in reversed(recs) if r.get("kind") == "overhead"
                and any(e.get("status") == "ok" for e in r["results"])), None)
    if rec is None:
        return "No call-overhead measurement published yet (`python -m stages bench --overhead --publish` on a GPU)."
    rows = [e for e in rec["results"] if e.get("status") == "ok"]
    shapes = list(dict.fromkeys((e["m"], e["n"], e["k"]) for e in rows))
    out = [f"| {rows[0]['calls']} calls back to back | host µs per call | × cupy.matmul | kernel µs |",
           "|---|---|---|---|"]
    for m, n, k in shapes:
        out.append(f"| **{m}×{n}×{k}** | | | |")
        for e in rows:
            if (e["m"], e["n"], e["k"]) == (m, n, k):
                kernel = f"{e['kernel_us']:.1f}" if e.get("kernel_us") else "–"
                out.append(f"| {e['stage']} | {e['us_per_call']:.1f} | {e['ratio_cupy_matmul']:.2f} | {kernel} |")
    g = rec["env"]["gpu"]
    hold = rec["settings"].get("kernel_hold_us")
    kernel_how = (f"median of 20, each queued behind a {hold:.0f} µs kernel that holds the GPU, so that no host time "
                  f"is in it" if hold else "median of 20 back to back: where the call path is the longer, its "
                  "time")
    out.append("")
    out.append(f"{g['name']}, CuPy {rec['env']['versions']['cupy']}, commit {str(rec['env']['git_commit'])[:10]}, "
               f"{rec['env']['date'][:10]}; best of {rec['settings'].get('rounds', '?')} rounds; host µs is the call "
               f"path's while the launch queue has room, kernel µs one launch's GPU time ({kernel_how}, L2 "
               f"not flushed); record [{Path(rec['_path']).name}]"
               f"({rec['_path']}).")
    return "\n".join(out)


FUSED_YARDSTICKS = ("torch_linear", "torch_addmm_gelu")  # what a torch user has for an epilogue


def fused_table(recs: list[dict], link_prefix: str = "") -> str:
    """The newest published run of fused epilogues (`bench --epilogue ... --publish`): per stage,
    shape and epilogue its median time, × plain cuBLAS (TFLOP/s over plain cuBLAS's at that shape,
    the epilogue's flops not counted) and × torch (over the faster torch row, F.linear +
    activation or cuBLASLt's bias+GELU, of the same epilogue and shape) and × own plain (the same
    stage's plain GEMM time at that shape in the same run over this row's, where the run timed it:
    `bench --epilogue plain ...`). Rows of one run only."""
    rec = records.latest_fused(recs)
    if rec is None:
        return ("No fused-epilogue measurement published yet "
                "(`python -m stages bench --epilogue bias+gelu_tanh --publish` on a GPU).")
    rows = [e for e in rec["results"] if e.get("status") == "ok" and e.get("epilogue")]
    own_plain = {(e["stage"], e["m"], e["n"], e["k"]): e["tflops"] for e in rec["results"]
                 if e.get("status") == "ok" and not e.get("epilogue") and e["stage"] != "cublas"}
    torch_tf = {}
    for e in rows:
        if e["stage"] in FUSED_YARDSTICKS:
            key = (e["m"], e["n"], e["k"], e["epilogue"])
            torch_tf[key] = max(torch_tf.get(key, 0.0), e["tflops"])
    groups = list(dict.fromkeys((e["m"], e["n"], e["k"], e["epilogue"]) for e in rows))
    out = ["| stage | M×N×K | epilogue | median ms | × plain cuBLAS | × torch | × own plain |",
           "|---|---|---|---|---|---|---|"]
    for key in groups:
        for e in (e for e in rows if (e["m"], e["n"], e["k"], e["epilogue"]) == key):
            m, n, k, spec = key
            vs_torch = e["tflops"] / torch_tf[key] if key in torch_tf else None
            plain_tf = own_plain.get((e["stage"], m, n, k))
            vs_plain = e["tflops"] / plain_tf if plain_tf else None
            out.append(f"| {e['stage']} | {m}×{n}×{k} | `{spec}` | {e['ms_median']:.3f} | "
                       f"{_ratio(e.get('ratio_cublas'))} | {_ratio(vs_torch)} | "
                       + ("–" if vs_plain is None else f"{vs_plain:.3f}") + " |")  # (3 places: the goal is 0.97)
    g = rec["env"]["gpu"]
    alpha = rec["settings"].get("epilogue_alpha")
    out.append("")
    out.append(f"One run: {g['name']}, commit {str(rec['env']['git_commit'])[:10]}, {rec['env']['date'][:10]}; "
               f"y = act(alpha·(x @ W.T) + bias), float16 bias drawn per shape"
               + (f", alpha = {alpha:g} where the epilogue names it" if alpha is not None else "")
               + "; TFLOP/s count 2·M·N·K only; × torch is against the faster of "
               + " and ".join(FUSED_YARDSTICKS) + " for the same epilogue and shape; × own plain is the "
               "stage's plain GEMM time in the same run over the row's (– where the run did not time it); record "
               f"[{Path(rec['_path']).name}]({link_prefix}{rec['_path']}).")
    return "\n".join(out)


def ablation_table(name: str, recs: list[dict] | None = None) -> str:
    """The newest published tuning record holding variants of `name`, as a table: every entry of
    that run (the variants, the stages timed beside them, cuBLAS) with TFLOP/s and × cuBLAS per
    shape. Labels come from the stage's why.py (`LADDER`: overrides -> rung name) when it has one."""
    rec = records.latest_ablation(name, recs)
    if rec is None:
        return "No ablation run published yet."
    ladder = {}
    try:
        ladder = getattr(importlib.import_module(f"stages.{name}.why"), "LADDER", {})
    except ModuleNotFoundError:
        pass
    shapes = list(dict.fromkeys((e["m"], e["n"], e["k"]) for e in rec["results"] if "m" in e))
    names = list(dict.fromkeys(e["stage"] for e in rec["results"]))
    by = {(e["stage"], e["m"], e["n"], e["k"]): e for e in rec["results"] if "m" in e}
    out = ["| variant | " + " | ".join(f"{m}×{n}×{k} TFLOP/s (× cuBLAS)" for m, n, k in shapes) + " |",
           "|---|" + "---|" * len(shapes)]
    for st in names:
        tag = st[len(name):].strip("[]") if st.startswith(name + "[") else ""
        label = ladder.get(tag or "default", "") if st.startswith(name) else ""
        shown = f"{label}: `{tag or 'shipped'}`" if label else (f"`{tag}`" if tag else st)
        cells = []
        for shape in shapes:
            e = by.get((st, *shape))
            if e and e.get("status") == "ok":
                cells.append(f"{e['tflops']:.0f} ({_ratio(e.get('ratio_cublas'))})")
            else:
                cells.append(e.get("status", "–") if e else "–")
        out.append(f"| {shown} | " + " | ".join(cells) + " |")
    g = rec["env"]["gpu"]
    out.append("")
    out.append(f"One run: {g['name']}, commit {str(rec['env']['git_commit'])[:10]}, {rec['env']['date'][:10]}, "
               f"L2 flushed before each of {rec['settings'].get('reps')} timed runs, medians; record "
               f"[{Path(rec['_path']).name}](../../{rec['_path']}).")
    return "\n".join(out)


def diff_summary(name: str) -> str:
    """How far a stage's kernel.cu is from the previous stage's: the size of its one idea."""
    st = stages.get(name)
    if not st.previous:
        return f"`{name}` is the starting point: {len(st.code().splitlines())} lines of kernel.cu."
    prev = stages.get(st.previous)
    added = removed = 0
    for line in difflib.unified_diff(prev.code().splitlines(), st.code().splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return (f"`diff stages/{prev.name}/kernel.cu stages/{name}/kernel.cu`: {added} lines added, "
            f"{removed} removed ({len(prev.code().splitlines())} -> {len(st.code().splitlines())} lines; counted "
            f"by Python's difflib, which pairs lines differently from GNU diff, so its counts differ a little).")


def replace_block(text: str, name: str, body: str) -> str:
    pat = re.compile(rf"(<!-- {name}:begin -->\n).*?(\n<!-- {name}:end -->)", re.S)
    if not pat.search(text):
        raise ValueError(f"marker block {name!r} not found")
    return pat.sub(lambda m: m.group(1) + body + m.group(2), text)


def write_all(dry_run: bool = False) -> list[Path]:
    """Rewrite every generated block; returns the files changed (or, dry, that would change)."""
    recs = records.load_all()
    changed: list[Path] = []
    targets = [(records.REPO / "README.md", "stage-table", stage_table(recs)),
               (records.REPO / "README.md", "cpu-table", cpu_table(recs)),
               (records.REPO / "README.md", "overhead-table", overhead_table(recs)),
               (records.REPO / "README.md", "fused-table", fused_table(recs)),  # where a block is marked
               (records.REPO / "cpu_reference" / "README.md", "cpu-table", cpu_table(recs, "../"))]
    for name in stages.names():
        targets.append((stages.get(name).folder / "README.md", "measured", stage_measured(name, recs)))
        targets.append((stages.get(name).folder / "README.md", "diff", diff_summary(name)))
        targets.append((stages.get(name).folder / "README.md", "ablation", ablation_table(name)))
        targets.append((stages.get(name).folder / "README.md", "profile",
                        profile.profile_table(name, recs, link_prefix="../../")))
        targets.append((stages.get(name).folder / "README.md", "fused-table", fused_table(recs, "../../")))
    for path, block, body in targets:
        if not path.exists():
            continue
        old = path.read_text()
        try:
            new = replace_block(old, block, body)
        except ValueError:
            continue
        if new != old:
            if not dry_run:
                path.write_text(new)
            if path not in changed:
                changed.append(path)
    return changed
