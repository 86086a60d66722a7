"""Benchmark records: what machine, what software, what commit, what was measured.

A run is not a publication. Every run writes its record to results/runs/ (git-ignored) unless
told otherwise; `--publish` writes it to results/ (tuning sweeps to results/tuning/), and only
published records feed the README tables and the notebooks' recorded figures
(`python -m stages report --write`). A record is checked against its schema before it is
written (`validate`), so a record that misses a field or says "ok" about a failed check never
lands.
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
from dataclasses import dataclass
from pathlib import Path

from stages.core import compiler, contract, gpu

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"          # published records (committed)
RUNS = RESULTS / "runs"             # ad-hoc runs (git-ignored)
SCHEMA = 1
KINDS = ("bench", "tune", "ceilings", "overhead", "profile", "stress")
STATUSES = ("ok", "failed", "skipped")
# Fields every entry of a given status carries, by record kind and list.
_OK_FIELDS = {
    ("bench", "results"): ("stage", "m", "n", "k", "dtype", "ms_median", "ms_p20", "ms_p80", "reps",
                           "tflops", "rel_err", "bound_ratio", "verified", "pct_peak", "ratio_cublas"),
    ("bench", "cpu"): ("stage", "m", "n", "k", "dtype", "ms_best", "ms_median", "ms_p20", "ms_p80",
                       "reps", "gflops", "rel_err", "ratio_numpy"),
    ("overhead", "results"): ("stage", "m", "n", "k", "calls", "us_per_call", "ratio_cupy_matmul"),
    ("profile", "results"): ("stage", "m", "n", "k", "kernel", "metrics", "stalls", "top_stalls", "dropped"),
    ("stress", "results"): ("stage", "shapes_tried", "failures", "failure_examples", "memcheck_errors",
                            "racecheck_hazards", "synccheck_errors", "repeat_bitwise_ok", "concurrency_ok",
                            "hostile_calls", "hostile_ok", "values_differences", "leak_bounds",
                            "fault_detected", "seconds"),
}
_OK_FIELDS[("tune", "results")] = _OK_FIELDS[("bench", "results")]
_OK_FIELDS[("tune", "cpu")] = _OK_FIELDS[("bench", "cpu")]


# ---- the "epilogue" field ------------------------------------------------------------------------
# A fused-epilogue entry (bench --epilogue) says which epilogue it computed in "epilogue": "" for
# the plain GEMM, else the spec in its canonical spelling ("bias+gelu_tanh"), whose grammar is
# here (bench runs what it parses). A run that timed epilogues lists them in
# settings["epilogues"], and then every GPU entry carries the field; records from before fused
# epilogues have neither, and a missing field means the plain GEMM.
EPILOGUE_ALPHA = 0.5  # the alpha of an epilogue spec naming "alpha"
PLAIN_WORD = "plain"  # an epilogue spec for the plain GEMM (alone)


@dataclass(frozen=True)
class EpilogueSpec:
    """One epilogue to time: bias (drawn per shape), alpha, one activation. Its `text` is the
    canonical spec, "" for the plain GEMM (what a record's "epilogue" field holds)."""

    bias: bool = False
    alpha: float = 1.0
    activation: str | None = None

    @property
    def text(self) -> str:
        return "+".join((["bias"] if self.bias else []) + (["alpha"] if self.alpha != 1.0 else [])
                        + ([self.activation] if self.activation else []))

    @property
    def spelled(self) -> str:
        """The spec as the command line spells it: `text`, or "plain" for the plain GEMM."""
        return self.text or PLAIN_WORD

    @property
    def plain(self) -> bool:
        return not self.text

    @property
    def features(self) -> tuple[str, ...]:
        """The contract's EPILOGUE_FEATURES this spec uses (what a stage's `epilogue` must hold)."""
        used = {"bias": self.bias, "alpha": self.alpha != 1.0, "activation": self.activation is not None}
        return tuple(f for f in contract.EPILOGUE_FEATURES if used[f])

    def kwargs(self, bias) -> dict:
        """The keyword arguments of `prepare`/`gemm` for this spec, with `bias` the shape's bias."""
        if self.plain:
            return {}
        return {"bias": bias if self.bias else None, "alpha": self.alpha, "activation": self.activation}

    def epilogue(self, bias) -> contract.Epilogue:
        """The contract's Epilogue (what verify.reference applies) with `bias` the shape's bias."""
        return contract.PLAIN if self.plain else contract.Epilogue(bias if self.bias else None, self.alpha,
                                                                   self.activation)


PLAIN_SPEC = EpilogueSpec()


def parse_epilogue(spec: str) -> EpilogueSpec:
    """"bias+gelu_tanh" -> EpilogueSpec: words joined by '+', in any order, each at most once:
    `bias`, `alpha` (alpha = EPILOGUE_ALPHA) and at most one activation (contract.ACTIVATIONS);
    "plain" alone is the plain GEMM. ValueError names what is wrong and the valid words."""
    words = [w.strip() for w in str(spec).split("+")]
    valid = (f"join with '+' any of: bias, alpha (= {EPILOGUE_ALPHA:g}), and one activation of "
             f"{', '.join(contract.ACTIVATIONS)}; or '{PLAIN_WORD}' alone for the plain GEMM")
    if words == [PLAIN_WORD]:
        return PLAIN_SPEC
    if any(not w for w in words):
        raise ValueError(f"epilogue spec {spec!r} has an empty word; {valid}")
    unknown = [w for w in words if w not in ("bias", "alpha", *contract.ACTIVATIONS)]
    if unknown:
        hint = f" ('{PLAIN_WORD}' stands alone)" if PLAIN_WORD in unknown else ""
        raise ValueError(f"unknown word{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))} in epilogue "
                         f"spec {spec!r}{hint}; {valid}")
    repeated = sorted({w for w in words if words.count(w) > 1})
    if repeated:
        raise ValueError(f"epilogue spec {spec!r} repeats {', '.join(map(repr, repeated))}; {valid}")
    acts = [w for w in words if w in contract.ACTIVATIONS]
    if len(acts) > 1:
        raise ValueError(f"epilogue spec {spec!r} names {len(acts)} activations ({', '.join(acts)}); "
                         f"an epilogue applies one")
    return EpilogueSpec(bias="bias" in words, alpha=EPILOGUE_ALPHA if "alpha" in words else 1.0,
                        activation=acts[0] if acts else None)


def _epilogue_problems(where: str, e: dict, required: bool) -> list[str]:
    if "epilogue" not in e:
        return [f"{where}: lacks 'epilogue' (the run timed epilogues)"] if required else []
    spec = e["epilogue"]
    if not isinstance(spec, str):
        return [f"{where}: epilogue {spec!r} is not a string"]
    if spec:
        try:
            canonical = parse_epilogue(spec).text
        except ValueError as exc:
            return [f"{where}: {exc}"]
        if canonical != spec:
            return [f"{where}: epilogue {spec!r} is not written as {canonical!r}"]
    return []


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout; $GEMM_STAGES_COMMIT wins when set (a copy of the tree on
    another machine may carry a stale .git, or none)."""
    env = os.environ.get("GEMM_STAGES_COMMIT")
    if env:
        return env, None
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
    smi = gpu.smi_reading(dev.id) or gpu.SmiReading(None, None, None, None)  # nvidia-smi's row for this GPU
    env["gpu"] = {
        "name": dev.name,
        "compute_capability": f"{dev.cc[0]}.{dev.cc[1]}",
        "sm_count": dev.sm_count,
        "sm_clock_max_mhz": dev.sm_clock_mhz or smi.sm_clock_max_mhz,
        "sm_clock_idle_mhz": smi.sm_clock_mhz,
        "l2_bytes": dev.l2_bytes,
        "driver": smi.driver,
        "cuda_driver_api": cp.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "uuid": smi.uuid,  # which board (the lent GPUs vary)
        "cluster_slots": list(dev.cluster_slots),  # clusters of 1, 2, 4, 8 resident at once (DeviceInfo)
    }
    return env


def new_record(kind: str, settings: dict | None = None) -> dict:
    """An empty record of `kind` with the environment filled in."""
    return {"schema": SCHEMA, "kind": kind, "env": environment(), "settings": dict(settings or {}),
            "results": [], "cpu": []}


def validate(record: dict) -> list[str]:
    """Schema problems of a record (empty when it is sound)."""
    problems = []
    for key in ("schema", "kind", "env", "settings", "results", "cpu"):
        if key not in record:
            problems.append(f"missing top-level field {key!r}")
    if problems:
        return problems
    if record["schema"] != SCHEMA:
        problems.append(f"schema {record['schema']!r}, expected {SCHEMA}")
    if record["kind"] not in KINDS:
        problems.append(f"kind {record['kind']!r} not one of {KINDS}")
    env = record["env"]
    for key in ("date", "git_commit", "git_dirty", "host", "versions", "gpu"):
        if key not in env:
            problems.append(f"env lacks {key!r}")
    fused_run = record["kind"] in ("bench", "tune") and "epilogues" in record["settings"]
    for part in ("results", "cpu"):
        required = _OK_FIELDS.get((record["kind"], part), ("stage",))
        for i, e in enumerate(record[part]):
            where = f"{part}[{i}] ({e.get('stage', '?')})"
            if record["kind"] in ("bench", "tune") and part == "results":
                problems += _epilogue_problems(where, e, required=fused_run)
            status = e.get("status")
            if status not in STATUSES:
                problems.append(f"{where}: status {status!r} not one of {STATUSES}")
            elif status == "ok":
                missing = [f for f in required if f not in e]
                if missing:
                    problems.append(f"{where}: ok entry lacks {missing}")
                if e.get("verified") is False:
                    problems.append(f"{where}: status ok but verified is False")
                for f in ("tflops", "gflops", "ms_median", "us_per_call"):
                    if f in e and not (isinstance(e[f], (int, float)) and e[f] > 0):
                        problems.append(f"{where}: {f}={e[f]!r} is not a positive number")
            elif not e.get("reason"):
                problems.append(f"{where}: status {status} without a reason")
    if record["kind"] in ("bench", "tune") and record["env"].get("gpu") and record["results"]:
        if "reps" not in record["settings"]:
            problems.append("settings lack reps")
    return problems


def measured(record: dict) -> bool:
    """Did the run measure anything (an entry that ran, passed or failed)? If not: no record."""
    if record.get("kind") == "ceilings":
        return bool(record.get("ceilings"))
    return any(e.get("status") in ("ok", "failed") for e in record["results"] + record["cpu"])


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def default_path(record: dict, publish: bool = False) -> Path:
    """results/runs/<stamp>-<machine>[-<kind>].json, or under results/ (tuning/) when published;
    never the name of an existing file."""
    env = record["env"]
    who = slug(env["gpu"]["name"]) if env.get("gpu") else "cpu-" + slug(env["host"]["cpu"])[:24]
    stamp = env["date"].replace(":", "").replace("-", "")[:15]
    kind = record.get("kind", "bench")
    folder = (RESULTS / "tuning" if kind == "tune" else RESULTS) if publish else RUNS
    stem = f"{stamp}-{who}" + ("" if kind in ("bench", "tune") else f"-{kind}")
    path, i = folder / f"{stem}.json", 2
    while path.exists():
        path, i = folder / f"{stem}-{i}.json", i + 1
    return path


def write(record: dict, path: str | os.PathLike | None = None, publish: bool = False) -> Path:
    """Validate and write a record: to `path`, else results/runs/ (or results/ when publishing)."""
    problems = validate(record)
    if problems:
        raise ValueError("refusing to write an unsound record: " + "; ".join(problems[:10]))
    path = Path(path) if path else default_path(record, publish)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def load_all(folder: Path = RESULTS) -> list[dict]:
    """Every published record in `folder` (results/ by default; not results/runs/), oldest first."""
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


def latest_ablation(name: str, recs: list[dict] | None = None) -> dict | None:
    """The newest published tuning record that timed a variant of stage `name` (an ablation run
    with `tune --variant ...`), or None. A record that has the stage only as a plain row beside
    another stage's variants (`--beside`) is that stage's ablation, not this one's."""
    recs = load_all(RESULTS / "tuning") if recs is None else recs
    return next((r for r in reversed(recs) if any(e.get("stage", "").startswith(name + "[")
                                                  for e in r.get("results", []))), None)


def latest_results(records: list[dict], gpu_substring: str = "H200") -> dict:
    """(stage, m, n, k) -> (entry, record) from the newest record on a matching GPU that ran it:
    the plain GEMM only (fused-epilogue entries are `latest_fused`'s). The newest entry wins
    whether it passed or failed the judge (a newer failure is not hidden behind an older pass: the
    tables show it as failed); a skipped one does not count."""
    best = {}
    for rec in records:
        g = rec["env"].get("gpu") or {}
        if rec.get("kind", "bench") != "bench" or gpu_substring not in (g.get("name") or ""):
            continue
        for e in rec.get("results", []):
            if e.get("status") in ("ok", "failed") and not e.get("epilogue"):
                best[(e["stage"], e["m"], e["n"], e["k"])] = (e, rec)
    return best


def latest_fused(records: list[dict], gpu_substring: str = "H200") -> dict | None:
    """The newest bench record on a matching GPU with a fused-epilogue entry that passed, or None
    (its rows are compared within the run: the same inputs, the same clocks)."""
    for rec in reversed(records):
        g = rec["env"].get("gpu") or {}
        if rec.get("kind", "bench") == "bench" and gpu_substring in (g.get("name") or "") and any(
                e.get("status") == "ok" and e.get("epilogue") for e in rec.get("results", [])):
            return rec
    return None
