"""python -m stages {list, verify, bench, inspect, report}  (also installed as `gemm-stages`)."""
from __future__ import annotations

import argparse
import json
import re
import sys
import time

from . import gpu
from .errors import CompileError, UnsupportedDevice


def _shape(text: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"shape must look like 4096x4096x4096 (MxNxK), got {text!r}")
    dims = tuple(int(g) for g in m.groups())
    if min(dims) < 1:
        raise argparse.ArgumentTypeError(f"every dimension must be >= 1, got {text!r}")
    return dims


def _select(names: list[str], default: list[str]) -> list[str]:
    import stages  # noqa: PLC0415

    if not names:
        return default
    for n in names:
        stages.get(n)  # raises ValueError listing the valid names
    return names


def _table(rows: list[list], head: list[str]) -> str:
    cells = [head] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(cells[0]), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells[1:]])


# ---- list ------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    import stages  # noqa: PLC0415

    rows = []
    for name in stages.all_names():
        st = stages.get(name)
        ok, why = st.runnable()
        req = "CPU" if st.kind == "cpu" else st.requires.describe()
        cons = st.constraints.describe() if hasattr(st, "constraints") else "any M, N, K >= 1"
        rows.append([name, st.idea, req, cons, "yes" if ok else f"no: {why}"])
    print(_table(rows, ["stage", "idea", "requires", "shapes", "runs here"]))
    return 0


# ---- verify ----------------------------------------------------------------------------------
def cmd_verify(args) -> int:
    import stages  # noqa: PLC0415

    from . import verify  # noqa: PLC0415

    names = _select(args.stages, stages.all_names())
    failures, summary, details = 0, [], []
    for name in names:
        st = stages.get(name)
        ok, why = st.runnable()
        if not ok:
            print(f"{name}: skipped: {why}", flush=True)
            summary.append([name, "skipped", "", "", "", why])
            continue
        shapes = list(args.shape) if args.shape else verify.checklist_shapes(
            getattr(st, "constraints", None), quick=args.quick)
        supported = [s for s in shapes if not hasattr(st, "constraints") or st.constraints.supports(*s)]
        t0, worst_rel, worst_bound, bad = time.perf_counter(), 0.0, 0.0, 0
        total = len(supported) * args.repeat
        for i, (m, n, k) in enumerate(supported * args.repeat):
            try:
                chk = verify.check(st, m, n, k, seed=args.seed)
            except (RuntimeError, ValueError, TypeError) as exc:  # launch failures, CUDA errors
                chk = verify.Check(name, m, n, k, args.seed or -1, reason=f"{type(exc).__name__}: {exc}")
            worst_rel, worst_bound = max(worst_rel, chk.rel_fro), max(worst_bound, chk.worst_bound_ratio)
            if not chk.passed:
                bad += 1
                details.append(f"  FAIL {name} {m}x{n}x{k} seed={chk.seed}: {chk.reason}")
            if sys.stderr.isatty():
                print(f"\r{name}: {i + 1}/{total}", end="", file=sys.stderr, flush=True)
        if sys.stderr.isatty():
            print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
        failures += bad
        skipped = len(shapes) - len(supported)
        summary.append([name, "FAIL" if bad else "ok", f"{total - bad}/{total}",
                        f"{worst_rel:.2e}", f"{worst_bound:.2f}",
                        f"{time.perf_counter() - t0:.1f} s" + (f"; {skipped} shapes unsupported" if skipped else "")])
        print(f"{name}: {'FAIL' if bad else 'ok'} ({total - bad}/{total} checks)", flush=True)
    print()
    print(_table(summary, ["stage", "result", "passed", "max rel err", "max err/bound", "notes"]))
    if details:
        print("\n".join(details[:50]))
        if len(details) > 50:
            print(f"  ... and {len(details) - 50} more")
    return 1 if failures else 0


# ---- bench -----------------------------------------------------------------------------------
def _bench_rows(record: dict) -> list[list]:
    rows = []
    for e in record["results"]:
        shape = f"{e['m']}x{e['n']}x{e['k']}" if "m" in e else ""
        if e["status"] != "ok":
            rows.append([e["stage"], shape, "", "", "", "", "", f"{e['status']}: {e.get('reason', '')}"])
            continue
        rows.append([e["stage"], shape, f"{e['ms_median']:.3f}", f"{e['ms_p20']:.3f}-{e['ms_p80']:.3f}",
                     f"{e['tflops']:.1f}", "–" if e.get("pct_peak") is None else f"{e['pct_peak']:.1f}%",
                     "–" if e.get("ratio_cublas") is None else f"{e['ratio_cublas']:.3f}",
                     f"rel err {e['rel_err']:.1e}"])
    return rows


def cmd_bench(args) -> int:
    import stages  # noqa: PLC0415

    from . import bench, records  # noqa: PLC0415

    names = _select(args.stages, stages.all_names())
    ok, why = gpu.available()
    if not ok:
        gpu_names = [n for n in names if stages.get(n).kind != "cpu"]
        if gpu_names:
            print(f"GPU stages skipped ({', '.join(gpu_names)}): {why}", flush=True)
    record = bench.run_bench(names, shapes=args.shape, cpu_shapes=args.cpu_shape or args.shape,
                             reps=args.reps, warmup=args.warmup)
    g = record["env"].get("gpu")
    if g:
        print(f"GPU: {g['name']} (sm_{g['compute_capability'].replace('.', '')}, {g['sm_count']} SMs, "
              f"driver {g['driver']}, CUDA runtime {g['cuda_runtime']}); L2 flushed before each of "
              f"{args.reps} timed runs; % of peak against "
              f"{record['settings'].get('peak_tflops_fp16_dense') or '?'} TFLOP/s dense fp16")
    if record["results"] and (g or any(e["status"] != "skipped" for e in record["results"])):
        print(_table(_bench_rows(record), ["stage", "MxNxK", "ms", "p20-p80", "TFLOP/s", "% peak",
                                           "x cuBLAS", "check"]))
    if record["cpu"]:
        h = record["env"]["host"]
        print(f"\nCPU: {h['cpu']} ({h['cores']} cores), float32 a @ b.T")
        rows = [[e["stage"], f"{e['m']}x{e['n']}x{e['k']}", f"{e['ms_median']:.2f}",
                 f"{e['gflops']:.1f}", f"{e['ratio_numpy']:.2f}", f"rel err {e['rel_err']:.1e}"]
                if e["status"] == "ok" else [e["stage"], "", "", "", "", f"skipped: {e['reason']}"]
                for e in record["cpu"]]
        print(_table(rows, ["impl", "MxNxK", "ms", "GFLOP/s", "x numpy", "check"]))
    path = records.write(record, args.out)
    print(f"\nrecord: {path}")
    failed = [e for e in record["results"] + record["cpu"] if e.get("status") == "failed"]
    return 1 if failed else 0


# ---- tune ------------------------------------------------------------------------------------
def _parse_set(items: list[str]) -> list[dict]:
    """["STAGES=3,4", "BN=128,256"] -> every combination as a dict of ints."""
    import itertools  # noqa: PLC0415

    axes = []
    for item in items or []:
        key, _, vals = item.partition("=")
        if not key or not vals:
            raise ValueError(f"--set takes KEY=V1,V2,..., got {item!r}")
        axes.append([(key.strip(), int(v)) for v in vals.split(",")])
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def cmd_tune(args) -> int:
    """Verify and time variants of one stage (other -D defines) beside cuBLAS, in one process."""
    import stages  # noqa: PLC0415

    from . import bench, records, verify  # noqa: PLC0415

    base = stages.get(args.stage)
    if base.kind != "gpu":
        raise ValueError(f"{args.stage} has no kernel to tune")
    variants, rejected = [], []
    for cfg in _parse_set(args.set):
        st = base.variant(**cfg)
        c = st.constraints
        probe = [(c.m_multiple, c.n_multiple, c.k_multiple),
                 (2 * c.m_multiple, 3 * c.n_multiple, 5 * c.k_multiple)]
        try:
            checks = [verify.check(st, *shape) for shape in probe]
            bad = [ch for ch in checks if not ch.passed]
        except Exception as exc:  # noqa: BLE001  compile errors, launch failures: report, go on
            bad = [f"{type(exc).__name__}: {str(exc)[:300]}"]
        if bad:
            rejected.append((st.name, bad[0] if isinstance(bad[0], str) else bad[0].reason))
            print(f"{st.name}: REJECTED ({rejected[-1][1]})", flush=True)
        else:
            variants.append(st)
    record = bench.run_bench(variants, shapes=args.shape, reps=args.reps, warmup=args.warmup, kind="tune")
    record["rejected"] = [{"variant": n, "reason": r} for n, r in rejected]
    print(_table(_bench_rows(record), ["variant", "MxNxK", "ms", "p20-p80", "TFLOP/s", "% peak",
                                       "x cuBLAS", "check"]))
    path = records.write(record, args.out or records.RESULTS / "tuning" / records.default_path(record["env"]).name)
    print(f"\nrecord: {path}")
    return 1 if rejected else 0


# ---- ceilings --------------------------------------------------------------------------------
def cmd_ceilings(args) -> int:
    from . import ceilings, records  # noqa: PLC0415

    ok, why = gpu.available()
    if not ok:
        print(f"skipped: {why}")
        return 0
    record = ceilings.record()
    for key, val in record["ceilings"].items():
        print(f"{key:28} {val:.3f}" if isinstance(val, float) else f"{key:28} {val}")
    default = records.default_path(record["env"])
    path = records.write(record, args.out or default.with_name(default.stem + "-ceilings.json"))
    print(f"\nrecord: {path}")
    return 0


# ---- inspect ---------------------------------------------------------------------------------
def cmd_inspect(args) -> int:
    import stages  # noqa: PLC0415

    from .inspect import inspect_stage  # noqa: PLC0415

    names = _select(args.stages, stages.names())
    status = 0
    reports = []
    for name in names:
        st = stages.get(name)
        if st.kind != "gpu":
            print(f"{name}: nothing to inspect (no kernel of ours)")
            continue
        rep = inspect_stage(st, arch=args.arch)
        reports.append(rep.as_dict())
        print(rep.render() if not args.json else "", end="\n\n" if not args.json else "")
        status |= bool(rep.failures)
    if args.json:
        print(json.dumps(reports, indent=1))
    return status


# ---- report ----------------------------------------------------------------------------------
def cmd_report(args) -> int:
    from . import records, report  # noqa: PLC0415

    if args.write:
        for p in report.write_all():
            print(f"updated {p.relative_to(records.REPO)}")
        return 0
    recs = records.load_all()
    print(report.stage_table(recs))
    print()
    print(report.cpu_table(recs))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m stages", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="stages, idea, requirement, whether each runs here")
    v = sub.add_parser("verify", help="correctness sweep against a float64 reference; exit 1 on failure")
    v.add_argument("stages", nargs="*", help="default: every stage and baseline")
    v.add_argument("--shape", type=_shape, action="append", help="MxNxK instead of the checklist (repeatable)")
    v.add_argument("--quick", action="store_true", help="sizes {1, 17, 128, 129} instead of the full checklist")
    v.add_argument("--repeat", type=int, default=1, help="run the sweep N times with fresh inputs (races move)")
    v.add_argument("--seed", type=int, default=None, help="fixed input seed (default: fresh each check)")
    b = sub.add_parser("bench", help="time stages against cuBLAS (GPU) and numpy (CPU), write a record")
    b.add_argument("stages", nargs="*", help="default: every stage and baseline this machine runs")
    b.add_argument("--shape", type=_shape, action="append", help="MxNxK (repeatable); default 4096^3 on the GPU")
    b.add_argument("--cpu-shape", type=_shape, action="append", help="CPU shapes; default 1024^3 and 2048^3")
    b.add_argument("--reps", type=int, default=30, help="timed repeats (>= 20 recommended)")
    b.add_argument("--warmup", type=int, default=5)
    b.add_argument("--out", help="record path (default results/<date>-<gpu>.json)")
    t = sub.add_parser("tune", help="verify and time variants of a stage's -D defines beside cuBLAS")
    t.add_argument("stage")
    t.add_argument("--set", action="append", help="KEY=V1,V2 (repeatable; every combination is run)")
    t.add_argument("--shape", type=_shape, action="append", help="MxNxK (repeatable); default 4096^3")
    t.add_argument("--reps", type=int, default=20)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--out", help="record path (default results/tuning/<date>-<gpu>.json)")
    c = sub.add_parser("ceilings", help="measure HBM/L2 bandwidth, fp32 FMA and cuBLAS fp16 rates (GPU)")
    c.add_argument("--out", help="record path (default results/<date>-<gpu>-ceilings.json)")
    i = sub.add_parser("inspect", help="registers, shared/local memory, spills, SASS mix (no GPU needed)")
    i.add_argument("stages", nargs="*", help="default: every GPU stage")
    i.add_argument("--arch", default="sm_90a")
    i.add_argument("--json", action="store_true")
    r = sub.add_parser("report", help="tables from results/ (--write updates the READMEs)")
    r.add_argument("--write", action="store_true")
    args = p.parse_args(argv)
    try:
        return {"list": cmd_list, "verify": cmd_verify, "bench": cmd_bench, "tune": cmd_tune, "ceilings": cmd_ceilings,
                "inspect": cmd_inspect, "report": cmd_report}[args.cmd](args)
    except (ValueError, TypeError, UnsupportedDevice, CompileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
