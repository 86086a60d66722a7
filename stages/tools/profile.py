"""The bottleneck, measured: Nsight Compute (`ncu`) on one launch of each stage's kernel.

    python -m stages profile [STAGE ...] [--shape MxNxK] [--publish]

For each stage (or variant, spelled as its name: `NAME[KEY=V,KEY=V]`) a child process,
`python -m stages.tools.profile --run SPEC M N K`, makes fresh N(0, 1) operands and launches the
kernel twice; ncu skips the first launch (the warm-up: module load, first touch) and profiles the
second (`--kernel-name regex:<kernel> --launch-skip 1 --launch-count 1`), with the GPU's own clock
(`--clock-control none`, as bench runs it) and ncu's default cache control (caches flushed before
every replay pass, so DRAM bytes are those of a cold L2, as bench's L2 flush makes them). ncu
replays the launch as often as the metric set needs; only the profiled launch is measured.

The metric set is fixed (METRICS): DRAM bytes read and written, L2 bytes and hit rate, shared-memory
bank conflicts and wavefronts, tensor-pipe (mma.sync and wgmma) and FMA-pipe activity, achieved
occupancy, the duration, and the warp-state samples of the stall reasons (STALLS, from ncu's PC
sampling), of which the record keeps every count and names the top ones. A metric this ncu does not
know is dropped (the record lists it under `dropped`), never guessed. `--metric NAME` (repeatable)
profiles further ncu metrics beside the fixed set (a probe's question, e.g. the L2 read requests
`lts__t_requests_srcunit_tex_op_read.sum`); the record's settings name them and each entry holds
them like the others.

Without a GPU or without ncu it prints one line and writes nothing, like bench. The record (kind
"profile") holds one entry per stage: stage, m, n, k, status, kernel, metrics {name: {"value",
"unit"}}, stalls {reason: samples}, top_stalls [{"reason", "samples", "share"}], dropped.
`profile_table(name)` renders the newest published profile record as a Markdown table.
"""
from __future__ import annotations

import argparse
import csv
import glob
import io
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import stages
from stages.core import gpu

from . import bench, records, verify

DEFAULT_SHAPE = (4096, 4096, 4096)

# name -> what it says (the table's labels). Names as ncu spells them for sm_90 (Nsight Compute
# "Metrics Reference" and the sections it ships: MemoryWorkloadAnalysis, ComputeWorkloadAnalysis,
# Occupancy, WarpStateStats).
METRICS = {
    "gpu__time_duration.sum": "duration",
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "lts__t_bytes.sum": "L2 bytes (all requests)",
    "lts__t_sector_hit_rate.pct": "L2 hit rate",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared-store bank conflicts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared-load wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared-store wavefronts",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe active (HMMA counter: mma.sync and wgmma)",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe (wgmma) active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "FMA pipe active",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM throughput (of peak)",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory throughput (of peak)",
}
# Warp-state sampling (ncu's PC sampling): samples of warps stalled for each reason.
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
          "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instructions",
          "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")
SAMPLE_COUNT = "smsp__pcsamp_sample_count"
# ncu's messages when it cannot profile at all on a machine (permissions, an unsupported runtime).
NO_PROFILER = r"ERR_NVGPUCTRPERM|Failed to initialize the profiler|LibraryNotLoaded|not supported|permission"
TOP_STALLS = 4


def _fixed_metrics() -> list[str]:
    return [*METRICS, SAMPLE_COUNT, *(STALL_PREFIX + s for s in STALLS)]


def asked_metrics(extra=()) -> list[str]:
    """The `extra` metrics (--metric) not already in the fixed set, once each, in the order given."""
    fixed = _fixed_metrics()
    return [x for x in dict.fromkeys(extra) if x not in fixed]


def all_metrics(extra=()) -> list[str]:
    """The fixed set, then the asked-for metrics (asked_metrics)."""
    return _fixed_metrics() + asked_metrics(extra)


# ---- finding ncu ---------------------------------------------------------------------------
def find_ncu() -> str | None:
    """ncu on PATH, else the CUDA toolkit's or a standalone Nsight Compute install."""
    hit = shutil.which("ncu")
    if hit:
        return hit
    for pattern in ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu",
                    "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/NVIDIA-Nsight-Compute*/ncu"):
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def ncu_version(ncu: str) -> str | None:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\w.()\-]+(?:\s+\(build\s+\d+\))?)", out)
    return m.group(1) if m else (out.strip().splitlines() or [None])[-1]


# ---- a stage spec: NAME or NAME[KEY=V,KEY=V] -------------------------------------------------
def parse_spec(spec: str):
    """The stage (or variant) a spec names: `NAME` or `NAME[KEY=V,...]`, as variant names print."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_]+)\s*(?:\[(.*)\])?\s*", spec)
    if not m:
        raise ValueError(f"a stage is NAME or NAME[KEY=V,...], got {spec!r}")
    st = stages.get(m.group(1))
    if m.group(2):
        overrides = {}
        for item in m.group(2).split(","):
            key, _, val = item.partition("=")
            try:
                overrides[key.strip()] = int(val)
            except ValueError:
                raise ValueError(f"{spec}: {item!r} is not KEY=INTEGER") from None
        st = st.variant(**overrides)
    return st


# ---- the child: one stage, two launches ------------------------------------------------------
def run_child(spec: str, m: int, n: int, k: int, epilogue: str = records.PLAIN_WORD) -> int:
    """What ncu profiles: a warm-up launch and the launch it measures, nothing else of ours (with
    the fused epilogue `epilogue` names, its bias float16 N(0, 1), as bench draws it)."""
    st = parse_spec(spec)
    cp = gpu.cupy()
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    out = cp.empty((m, n), dtype=cp.float16)
    es = records.parse_epilogue(epilogue)
    run = st.prepare(a, b, out, **es.kwargs(bench.random_bias(n, secrets.randbits(63), cp) if es.bias else None))
    run()  # warm-up: skipped by ncu (--launch-skip 1)
    cp.cuda.get_current_stream().synchronize()
    run()  # the profiled launch
    cp.cuda.get_current_stream().synchronize()
    return 0


# ---- parsing ncu's CSV (--csv --page raw --print-units base) ---------------------------------
def _number(text: str):
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        val = float(t)
    except ValueError:
        return None
    return int(val) if val.is_integer() and "." not in t and "e" not in t.lower() else val


def parse_csv(text: str, wanted: list[str] | None = None) -> list[dict]:
    """ncu's raw page as CSV -> one dict per profiled kernel: {"kernel": name, "metrics": {metric:
    {"value": number, "unit": str}}}. Lines before the header (ncu's ==PROF== messages, the
    program's output) are skipped; thousands separators are removed."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    if len(rows) < 2:
        return []
    head, units = rows[0], rows[1]
    has_units = bool(units) and units[0].strip() == ""  # the units row leaves the ID column empty
    body = rows[2:] if has_units else rows[1:]
    out = []
    for row in body:
        if len(row) < len(head):
            continue
        cell = dict(zip(head, row))
        metrics = {}
        for i, name in enumerate(head):
            if "__" not in name or (wanted is not None and name not in wanted):
                continue
            val = _number(row[i])
            if val is not None:
                metrics[name] = {"value": val, "unit": units[i] if has_units else ""}
        out.append({"kernel": cell.get("Kernel Name", ""), "metrics": metrics})
    return out


def stall_summary(metrics: dict) -> tuple[dict, list[dict]]:
    """(reason -> samples, the TOP_STALLS reasons with their share of all stall samples)."""
    stalls = {name[len(STALL_PREFIX):]: metrics[name]["value"] for name in metrics
              if name.startswith(STALL_PREFIX)}
    total = sum(v for v in stalls.values() if v)
    top = sorted(((r, v) for r, v in stalls.items() if v), key=lambda rv: -rv[1])[:TOP_STALLS]
    return stalls, [{"reason": r, "samples": v, "share": v / total if total else None} for r, v in top]


def unknown_metrics(stderr: str, asked: list[str]) -> list[str]:
    """Metrics ncu's error message names (it refuses a whole run for one unknown metric)."""
    named = [name for name in asked if name in stderr or name.split(".")[0] in stderr]
    if named:
        return named
    if re.search(r"metric|pcsamp", stderr, re.I):
        return [name for name in asked if name.startswith((STALL_PREFIX, SAMPLE_COUNT))]
    return []


# ---- the parent: ncu per stage ---------------------------------------------------------------
# A baseline (cuBLAS, torch) has no kernel of ours to name: its GEMM kernel is found by the names
# cuBLAS gives its kernels on sm_90 (nvjet_* in cuBLAS 12.x and 13, sm90_xmma_gemm_*, cutlass_*);
# the record keeps the name ncu saw.
LIBRARY_KERNELS = r"nvjet|gemm|xmma|cutlass"


def kernel_pattern(st) -> str:
    """The --kernel-name regex for a stage: its own kernel, or a library's GEMM kernel."""
    own = getattr(st, "kernel", None)
    return re.escape(own) if own else LIBRARY_KERNELS


def _ncu_command(ncu: str, st, report: Path, metrics: list[str], m: int, n: int, k: int,
                 epilogue: str = records.PLAIN_WORD) -> list[str]:
    return [ncu, "--target-processes", "all", "--kernel-name", f"regex:{kernel_pattern(st)}",
            "--launch-skip", "1", "--launch-count", "1",
            "--clock-control", "none", "--metrics", ",".join(metrics), "--export", str(report), "--force-overwrite",
            sys.executable, "-m", "stages.tools.profile", "--run", st.name, str(m), str(n), str(k),
            "--epilogue", epilogue]


def profile_stage(ncu: str, st, m: int, n: int, k: int, workdir: Path, timeout_s: int = 240,
                  epilogue: str = records.PLAIN_WORD, extra_metrics=()) -> dict:
    """One stage under ncu: the entry of the record (status ok, failed or skipped). A fused
    `epilogue` (bench's spelling, e.g. bias+gelu) is profiled on the stages that fuse it; the entry
    names it ("" for the plain GEMM), and a stage that does not fuse it is skipped, saying so."""
    es = records.parse_epilogue(epilogue)
    entry = {"stage": st.name, "m": m, "n": n, "k": k, "kernel": getattr(st, "kernel", None), "epilogue": es.text}
    runnable, why = st.runnable()
    if not runnable:
        return {**entry, "status": "skipped", "reason": why}
    if not st.constraints.supports(m, n, k):
        return {**entry, "status": "skipped", "reason": f"shape not supported ({st.constraints.describe()})"}
    gap = bench.fusion_gap(st, es)
    if gap:
        return {**entry, "status": "skipped", "reason": f"{st.name} {gap}"}
    metrics, dropped = all_metrics(extra_metrics), []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(records.REPO), os.environ.get("PYTHONPATH")]))}
    report = workdir / f"{records.slug(st.name)}.ncu-rep"
    for _attempt in range(3):
        try:
            res = subprocess.run(_ncu_command(ncu, st, report, metrics, m, n, k, es.spelled), capture_output=True,
                                 text=True, timeout=timeout_s, env=env, cwd=records.REPO)
        except subprocess.TimeoutExpired:
            return {**entry, "status": "failed", "reason": f"ncu did not finish in {timeout_s} s"}
        log = res.stdout + res.stderr
        if res.returncode == 0 and report.exists():
            break
        bad = [x for x in unknown_metrics(log, metrics) if x in metrics]
        if not bad:
            return {**entry, "status": "failed", "reason": f"ncu rc={res.returncode}: {_tail(log)}"}
        dropped += bad
        metrics = [x for x in metrics if x not in bad]
    else:
        return {**entry, "status": "failed", "reason": f"ncu kept refusing metrics: {_tail(log)}"}
    exp = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
                         capture_output=True, text=True, timeout=120)
    kernels = [r for r in parse_csv(exp.stdout, metrics) if re.search(kernel_pattern(st), r["kernel"])]
    if not kernels:
        return {**entry, "status": "failed",
                "reason": f"no profiled launch of {kernel_pattern(st)} in ncu's report: {_tail(exp.stdout + exp.stderr + log)}"}
    got = kernels[0]["metrics"]
    entry["kernel"] = kernels[0]["kernel"]
    stalls, top = stall_summary(got)
    missing = [x for x in metrics if x not in got]
    return {**entry, "status": "ok", "reason": "",
            "metrics": {x: v for x, v in got.items() if not x.startswith(STALL_PREFIX)},
            "stalls": stalls, "top_stalls": top, "dropped": dropped + missing, "ncu_report": report.name}


def _tail(text: str, n: int = 400) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-6:])[-n:]


def run_profile(specs: list[str], shape=DEFAULT_SHAPE, keep_reports: str | None = None,
                progress: bool = True, epilogue: str = records.PLAIN_WORD, extra_metrics=()) -> dict:
    """Profile every stage in `specs` at `shape` (with the fused `epilogue` where a stage fuses
    it); the record (kind "profile"). No GPU or no ncu: every entry skipped, with the reason
    (nothing measured, so nothing is written)."""
    objs = [parse_spec(s) for s in specs]
    ncu = find_ncu()
    record = records.new_record("profile", settings={
        "ncu": ncu, "ncu_version": ncu_version(ncu) if ncu else None, "metrics": all_metrics(extra_metrics),
        "launch": "the second of two launches (--launch-skip 1 --launch-count 1)",
        "clock_control": "none", "cache_control": "ncu default (all caches flushed before each replay pass)",
        "epilogue": records.parse_epilogue(epilogue).text})
    ok, why = gpu.available()
    if not ok or not ncu:
        reason = why if not ok else "Nsight Compute (ncu) not found on PATH or under /usr/local/cuda/bin"
        record["results"] = [{"stage": st.name, "status": "skipped", "reason": reason} for st in objs]
        return record
    m, n, k = shape
    workdir = Path(keep_reports) if keep_reports else Path(tempfile.mkdtemp(prefix="gemm-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cannot = None  # ncu that cannot read the counters here fails the same way for every stage
    for i, st in enumerate(objs):
        if cannot:
            record["results"].append({"stage": st.name, "m": m, "n": n, "k": k, "status": "skipped",
                                      "reason": f"ncu cannot profile on this machine: {cannot}"})
            continue
        if progress:
            print(f"[{i + 1}/{len(objs)}] ncu {st.name} {m}x{n}x{k}", file=sys.stderr, flush=True)
        entry = profile_stage(ncu, st, m, n, k, workdir, epilogue=epilogue, extra_metrics=extra_metrics)
        record["results"].append(entry)
        if entry["status"] == "failed" and re.search(NO_PROFILER, entry["reason"]):
            cannot = entry["reason"][:200]
    if not keep_reports:
        shutil.rmtree(workdir, ignore_errors=True)
    return record


# ---- reading it back -------------------------------------------------------------------------
def _fmt(value, unit: str) -> str:
    if value is None:
        return "–"
    if unit in ("byte", "bytes"):
        return f"{value / 1e9:.3g} GB" if value >= 1e8 else f"{value / 1e6:.3g} MB"
    if unit in ("nsecond", "ns"):
        return f"{value / 1e6:.4g} ms" if value >= 1e5 else f"{value / 1e3:.4g} µs"
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value:,.0f}" if isinstance(value, int) or value >= 100 else f"{value:.3g}"


def latest_profile(recs: list[dict] | None = None, name: str | None = None):
    """The newest published profile record (holding `name` or a variant of it, when given)."""
    recs = records.load_all() if recs is None else recs
    for rec in reversed(recs):
        if rec.get("kind") != "profile":
            continue
        hits = [e for e in rec["results"] if e.get("status") == "ok"
                and (name is None or e["stage"] == name or e["stage"].startswith(name + "["))]
        if hits:
            return rec, hits
    return None, []


def profile_table(name: str | None = None, recs: list[dict] | None = None, link_prefix: str = "") -> str:
    """The newest published profile record as Markdown: one column per stage (only `name` and its
    variants when given), one row per metric, then the top stall reasons, then the source line.
    `link_prefix` makes the record link relative to the file the table lands in ("../../" from a
    stage README)."""
    rec, entries = latest_profile(recs, name)
    if rec is None:
        return "No profile published yet (`python -m stages profile --publish` on a GPU with Nsight Compute)."
    head = "| metric | " + " | ".join(f"`{e['stage']}`" + (f" {e['epilogue']}" if e.get("epilogue") else "")
                                      for e in entries) + " |"
    out = [head, "|---|" + "---|" * len(entries)]
    for metric, label in METRICS.items():
        cells = [e["metrics"].get(metric) for e in entries]
        if all(c is None for c in cells):
            continue
        out.append(f"| {label} | " + " | ".join("–" if c is None else _fmt(c["value"], c["unit"]) for c in cells) + " |")
    for i in range(TOP_STALLS):
        cells = []
        for e in entries:
            top = e.get("top_stalls") or []
            t = top[i] if i < len(top) else None
            cells.append("–" if not t else f"{t['reason']} {100 * t['share']:.0f}%" if t.get("share") else t["reason"])
        out.append(f"| stall reason #{i + 1} (share of samples) | " + " | ".join(cells) + " |")
    g = rec["env"].get("gpu") or {}
    e0 = entries[0]
    out.append("")
    out.append(f"Nsight Compute {rec['settings'].get('ncu_version') or '?'} on {g.get('name', '?')}, one launch at "
               f"{e0['m']}×{e0['n']}×{e0['k']} after a warm-up, GPU clock not locked, caches flushed before each "
               f"replay pass; commit {str(rec['env']['git_commit'])[:10]}, {rec['env']['date'][:10]}; record "
               f"[{Path(rec['_path']).name}]({link_prefix}{rec['_path']}).")
    return "\n".join(out)


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stages.tools.profile",
                                description="the child process ncu profiles (use `python -m stages profile`)")
    p.add_argument("--run", nargs=4, metavar=("STAGE", "M", "N", "K"), required=True)
    p.add_argument("--epilogue", default=records.PLAIN_WORD, help="bench's spelling: plain, bias, bias+gelu, ...")
    args = p.parse_args(argv)
    spec, *dims = args.run
    return run_child(spec, *map(int, dims), epilogue=args.epilogue)


if __name__ == "__main__":
    raise SystemExit(_main())
