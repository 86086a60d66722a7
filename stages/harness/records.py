"""Benchmark records: what machine, what software, what commit, what was measured.

A record is one JSON file under results/. The README's stage table and each stage README's
"Measured" block are generated from these files (`python -m stages report --write`), never typed.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from . import compiler, gpu

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"
SCHEMA = 1


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout; $GEMM_STAGES_COMMIT where the tree has no .git (device)."""
    env = os.environ.get("GEMM_STAGES_COMMIT")
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                   cwd=REPO, capture_output=True, text=True, timeout=10)
            return head.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return env, None


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict:
    """Everything a reader needs to judge a number: GPU, driver, CUDA, library versions, commit."""
    commit, dirty = git_commit()
    env = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit,
        "git_dirty": dirty,
        "host": {"cpu": cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": {
            "python": sys.version.split()[0],
            "numpy": _version("numpy"),
            "numba": _version("numba"),
            "cupy": next((v for v in (_version("cupy-cuda12x"), _version("cupy-cuda13x"),
                                      _version("cupy")) if v), None),
            "cuda_bindings": _version("cuda-bindings"),
        },
        "gpu": None,
    }
    try:
        env["versions"]["nvrtc"] = compiler.nvrtc_version()
    except Exception:
        env["versions"]["nvrtc"] = None
    ok, why = gpu.available()
    if not ok:
        env["gpu_unavailable"] = why
        return env
    cp = gpu.cupy()
    dev = gpu.current()
    smi = gpu.driver_string()  # "580.159.04, 1980, 1980" (driver, current SM MHz, max SM MHz)
    smi_fields = [f.strip() for f in smi.split(",")] if smi else []
    env["gpu"] = {
        "name": dev.name,
        "compute_capability": f"{dev.cc[0]}.{dev.cc[1]}",
        "sm_count": dev.sm_count,
        "sm_clock_max_mhz": dev.sm_clock_mhz or (smi_fields[2] if len(smi_fields) > 2 else None),
        "sm_clock_idle_mhz": smi_fields[1] if len(smi_fields) > 1 else None,
        "l2_bytes": dev.l2_bytes,
        "driver": smi_fields[0] if smi_fields else None,
        "cuda_driver_api": cp.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
    }
    return env


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def default_path(env: dict) -> Path:
    who = slug(env["gpu"]["name"]) if env.get("gpu") else "cpu-" + slug(env["host"]["cpu"])[:24]
    stamp = env["date"].replace(":", "").replace("-", "")[:15]
    return RESULTS / f"{stamp}-{who}.json"


def write(record: dict, path: str | os.PathLike | None = None) -> Path:
    path = Path(path) if path else default_path(record["env"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def load_all(folder: Path = RESULTS) -> list[dict]:
    """Every record under results/, oldest first."""
    recs = []
    for p in sorted(folder.glob("*.json")):
        try:
            rec = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if rec.get("schema") == SCHEMA:
            rec["_path"] = str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p)
            recs.append(rec)
    return sorted(recs, key=lambda r: r["env"]["date"])


def latest_results(records: list[dict], gpu_substring: str = "H200") -> dict:
    """(stage, m, n, k) -> (entry, record) from the newest record on a matching GPU."""
    best = {}
    for rec in records:
        g = rec["env"].get("gpu") or {}
        if gpu_substring not in (g.get("name") or ""):
            continue
        for e in rec.get("results", []):
            if e.get("status") == "ok":
                best[(e["stage"], e["m"], e["n"], e["k"])] = (e, rec)
    return best
