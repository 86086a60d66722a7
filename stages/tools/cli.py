"""python -m stages COMMAND ...   (also installed as `gemm-stages`)

  list      the stages, their idea, what they need, whether this machine runs them
  verify    the correctness sweep against a float64 reference (exit 1 on any failure)
  bench     time stages against cuBLAS (GPU) and numpy (CPU); --overhead: host time per call
  tune      verify and time variants of a stage's tunables beside cuBLAS
  inspect   registers, shared/local memory, spills, SASS mix (no GPU needed; exit 1 on problems)
  profile   Nsight Compute on one launch per stage: DRAM/L2 bytes, bank conflicts, pipes, stalls
  ceilings  measure the GPU's roofs (HBM, L2, fp32 FMA, cuBLAS fp16)
  report    tables from the published records (--write updates the READMEs)
  new       start a new stage by copying the last one (see README, "Adding a stage")
  stress    races, memory errors, hostile inputs, concurrency, leaks (one "stress" record)

Runs write their record to results/runs/ (git-ignored); --publish writes it to results/, where
the README tables and the notebooks read it.
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import textwrap
import time

import stages
from stages.core import contract, gpu
from stages.core.errors import CompileError, UnsupportedDevice

from . import bench, ceilings, newstage, profile, records, report, stress, verify
from .inspect import inspect_stage, same_builds

WIDTH = 100


def _shape(text: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"\s*(-?\d+)\s*[xX×]\s*(-?\d+)\s*[xX×]\s*(-?\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"shape must look like 4096x4096x4096 (MxNxK), got {text!r}")
    dims = tuple(int(g) for g in m.groups())
    if min(dims) < 1:
        raise argparse.ArgumentTypeError(f"every dimension must be >= 1, got {text!r}")
    return dims


def _glue_negative_values(argv: list[str]) -> list[str]:
    """`--shape -1x1x1` would read as an unknown option; pass it as `--shape=-1x1x1` so the
    shape parser can say what is wrong with it."""
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok in ("--shape", "--cpu-shape") and i + 1 < len(argv) and re.match(r"-\d", argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def _select(names: list[str], default: list[str]) -> list[str]:
    if not names:
        return default
    for n in names:
        stages.get(n)  # raises ValueError listing the valid names
    return names


def _table(rows: list[list], head: list[str], wrap: dict[int, int] | None = None) -> str:
    """A plain-text table; columns named in `wrap` (index -> width) are wrapped to that width."""
    wrap = wrap or {}
    cells = [head] + [[str(c) for c in r] for r in rows]
    split = [[textwrap.wrap(c, wrap[i]) or [""] if i in wrap else [c] for i, c in enumerate(r)] for r in cells]
    widths = [max(len(line) for r in split for line in r[i]) for i in range(len(head))]

    def fmt(r):
        lines = []
        for j in range(max(len(c) for c in r)):
            lines.append("  ".join((c[j] if j < len(c) else "").ljust(w) for c, w in zip(r, widths)).rstrip())
        return "\n".join(lines)

    return "\n".join([fmt(split[0]), fmt([["-" * w] for w in widths])] + [fmt(r) for r in split[1:]])


def _write(record: dict, args, what: str = "record") -> None:
    if not records.measured(record):
        print(f"\nnothing was measured: no {what} written")
        return
    path = records.write(record, getattr(args, "out", None), publish=getattr(args, "publish", False))
    where = "published" if getattr(args, "publish", False) and not getattr(args, "out", None) else "run record"
    print(f"\n{where}: {path}" + ("" if getattr(args, "publish", False) else
                                  "  (not published: add --publish to feed the README tables)"))


def _gpu_skip_line(names: list[str]) -> bool:
    """Print one line naming the GPU stages skipped and why; True when the GPU is unusable."""
    ok, why = gpu.available()
    gpu_names = [n for n in names if stages.get(n).kind != "cpu"]
    if not ok and gpu_names:
        print(f"GPU stages skipped ({', '.join(gpu_names)}): {why}", flush=True)
    return not ok


# ---- list ------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    rows, reasons = [], {}
    for name in stages.all_names():
        st = stages.get(name)
        ok, why = st.runnable()
        req = "CPU" if st.kind == "cpu" else st.requires.describe()
        note = "yes" if ok else f"no [{reasons.setdefault(why, len(reasons) + 1)}]"
        rows.append([name, st.idea, f"{req}; {st.constraints.describe()}", note])
    print(_table(rows, ["stage", "idea", "requires", "runs here"], wrap={1: 38, 2: 26}))
    for why, i in reasons.items():
        print("\n".join(textwrap.wrap(f"[{i}] {why}", WIDTH)))
    return 0


# ---- verify ----------------------------------------------------------------------------------
def _overrides(items: list[str] | None) -> dict:
    """["BN=128", "STAGES=3"] -> {"BN": 128, "STAGES": 3} (one value each: a variant)."""
    overrides = {}
    for item in items or []:
        key, _, val = item.partition("=")
        try:
            overrides[key.strip()] = int(val)
        except ValueError:
            raise ValueError(f"--set takes NAME=INTEGER, got {item!r}") from None
    return overrides


def cmd_verify(args) -> int:
    overrides = _overrides(args.set)
    if overrides and not args.stages:
        raise ValueError("verify --set NAME=VALUE: name the stage(s) whose variant to check")
    names = _select(args.stages, stages.all_names())
    failed, summary, details = 0, [], []
    for name in names:
        st = stages.get(name)
        if overrides:
            st = st.variant(**overrides)  # refuses a tunable the stage lacks, or a config it cannot build
            name = st.name
        ok, why = st.runnable()
        if not ok:
            print(f"{name}: skipped: {why}", flush=True)
            summary.append([name, "skipped", "", "", "", why])
            continue
        shapes = list(args.shape) if args.shape else verify.checklist_shapes(st.constraints, quick=args.quick)
        unsupported = len([s for s in shapes if not st.constraints.supports(*s)])
        t0 = time.perf_counter()
        tty = sys.stderr.isatty()

        def progress(i, total, chk, name=name):
            if tty:
                print(f"\r{name}: {i + 1}/{total}", end="", file=sys.stderr, flush=True)
            elif (i + 1) % 100 == 0 or i + 1 == total:
                print(f"{name}: {i + 1}/{total} checks", file=sys.stderr, flush=True)

        cases = verify.epilogue_cases(st, args.epilogue) if args.epilogue else {"plain": {}}
        # (a knob the stage decides per call is dropped where a call cannot take it: say where)
        per_call = overrides and getattr(st, "defines_for", None)
        missed = verify.overrides_not_built(st, overrides, shapes, list(cases.values()), gpu.current()) if per_call else []
        calls = len([s for s in shapes if st.constraints.supports(*s)]) * len(cases)
        checks = []
        for case in cases.values():  # every shape with every epilogue case asked for
            checks += verify.sweep(st, shapes, repeat=args.repeat, seed=args.seed, on_check=progress, **case)
        if tty:
            print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
        bad = verify.failures(checks)
        details += bad
        failed += len(bad)
        total = len(checks)
        # The relative Frobenius error where it is judged (verify.judge): over outputs of at least
        # REL_FRO_MIN_ELEMENTS; a 1 x 1 output whose reference rounds to 0 in fp16 reads 1.0.
        rel = max((c.rel_fro for c in checks if c.rel_fro == c.rel_fro
                   and c.m * c.n >= verify.REL_FRO_MIN_ELEMENTS), default=float("nan"))
        bound = max((c.worst_bound_ratio for c in checks if c.worst_bound_ratio == c.worst_bound_ratio),
                    default=float("nan"))
        notes = f"{time.perf_counter() - t0:.1f} s" + (f"; {unsupported} shapes unsupported" if unsupported else "")
        if missed:
            where = sorted({"x".join(map(str, shape)) for shape, _, _ in missed})
            notes += (f"; {', '.join(f'{k}={v}' for k, v in overrides.items())} not built in {len(missed)} of {calls} "
                      f"calls (decided per call): {', '.join(where[:3])}{' ...' if len(where) > 3 else ''}")
        summary.append([name, "FAIL" if bad else "ok", f"{total - len(bad)}/{total}", f"{rel:.2e}",
                        f"{bound:.2f}", notes])
        print(f"{name}: {'FAIL' if bad else 'ok'} ({total - len(bad)}/{total} checks)", flush=True)
    print()
    print(_table(summary, ["stage", "result", "passed", "max rel err", "max err/bound", "notes"], wrap={5: 56}))
    if details:
        print("\n".join("  FAIL " + d for d in details[:50]))
        if len(details) > 50:
            print(f"  ... and {len(details) - 50} more")
    return 1 if failed else 0


# ---- bench -----------------------------------------------------------------------------------
def _bench_rows(record: dict, epilogue: bool = False) -> list[list]:
    """One row per entry; `epilogue`: a column after the shape with the entry's epilogue
    ("plain" for the plain GEMM)."""
    rows = []
    for e in record["results"]:
        shape = f"{e['m']}x{e['n']}x{e['k']}" if "m" in e else ""
        lead = [e["stage"], shape] + ([e.get("epilogue") or "plain"] if epilogue else [])
        if e["status"] != "ok":
            rows.append(lead + ["", "", "", "", "", f"{e['status']}: {e.get('reason', '')}"[:120]])
            continue
        rows.append(lead + [f"{e['ms_median']:.3f}", f"{e['ms_p20']:.3f}-{e['ms_p80']:.3f}",
                            f"{e['tflops']:.1f}", "–" if e.get("pct_peak") is None else f"{e['pct_peak']:.1f}%",
                            "–" if e.get("ratio_cublas") is None else f"{e['ratio_cublas']:.3f}",
                            f"rel err {e['rel_err']:.1e}" + (" (unfused bound)" if e.get("judged") else "")])
    return rows


def _epilogue_arg(text: str) -> str:
    """--epilogue SPEC: checked by bench.parse_epilogue, kept in its canonical spelling."""
    try:
        return bench.parse_epilogue(text).spelled
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _print_gpu_header(record: dict, reps: int) -> None:
    g = record["env"].get("gpu")
    if g:
        print(f"GPU: {g['name']} (sm_{g['compute_capability'].replace('.', '')}, {g['sm_count']} SMs, "
              f"driver {g['driver']}, CUDA runtime {g['cuda_runtime']}); L2 flushed before each of "
              f"{reps} timed runs; % of peak against "
              f"{record['settings'].get('peak_tflops_fp16_dense') or '?'} TFLOP/s dense fp16")


def cmd_bench(args) -> int:
    names = _select(args.stages, stages.all_names())
    no_gpu = _gpu_skip_line(names)
    if args.overhead and args.epilogue:
        raise ValueError("--overhead times plain gemm() calls; leave out --epilogue (or --overhead)")
    if args.overhead:
        if no_gpu:
            print("nothing was measured: no record written")
            return 0
        record = bench.run_overhead([n for n in names if n != "cpu_numba"], calls=args.calls, shapes=args.shape)
        rows = [[e["stage"], f"{e['m']}x{e['n']}x{e['k']}",
                 f"{e['us_per_call']:.1f}" if e["status"] == "ok" else "",
                 f"{e['ratio_cupy_matmul']:.2f}" if e["status"] == "ok" else "",
                 f"{e['kernel_us']:.1f}" if e.get("kernel_us") else "",
                 e["status"] + (f": {e['reason']}" if e.get("reason") else "")] for e in record["results"]]
        print(_table(rows, ["stage", "MxNxK", "host us/call", "x cupy.matmul", "kernel us", "status"]))
        _write(record, args)
        return 1 if any(e["status"] == "failed" for e in record["results"]) else 0
    record = bench.run_bench(names, shapes=args.shape, cpu_shapes=args.cpu_shape or args.shape,
                             reps=args.reps, warmup=args.warmup, epilogues=args.epilogue)
    _print_gpu_header(record, args.reps)
    if record["env"].get("gpu") and record["results"]:
        fused = any(e.get("epilogue") for e in record["results"])
        print(_table(_bench_rows(record, epilogue=fused),
                     ["stage", "MxNxK"] + (["epilogue"] if fused else [])
                     + ["ms", "p20-p80", "TFLOP/s", "% peak", "x cuBLAS", "check"]))
        if fused:
            print(f"epilogue: y = act(alpha * (a @ b.T) + bias), bias float16 N(0, 1) per shape, alpha = "
                  f"{bench.EPILOGUE_ALPHA:g} where named; TFLOP/s count 2*M*N*K only; x cuBLAS is over "
                  "plain cuBLAS at the same shape")
    if record["cpu"]:
        h = record["env"]["host"]
        print(f"\nCPU: {h['cpu']} ({h['cores']} cores), float32 a @ b.T, "
              f"{record['cpu'][0].get('timing', '')}")
        rows = [[e["stage"], f"{e['m']}x{e['n']}x{e['k']}", f"{e.get('ms_best', e.get('ms_median', 0)):.2f}",
                 f"{e['gflops']:.1f}", f"{e['ratio_numpy']:.2f}", f"rel err {e['rel_err']:.1e}"]
                if e["status"] == "ok" else [e["stage"], "", "", "", "", f"{e['status']}: {e.get('reason', '')}"]
                for e in record["cpu"]]
        print(_table(rows, ["impl", "MxNxK", "ms (best)", "GFLOP/s", "x numpy", "check"]))
    _write(record, args)
    failed = [e for e in record["results"] + record["cpu"] if e.get("status") == "failed"]
    return 1 if failed else 0


# ---- tune ------------------------------------------------------------------------------------
def _parse_set(items: list[str]) -> list[dict]:
    """["STAGES=3,4", "BN=128,256"] -> every combination as a dict of ints."""
    axes = []
    for item in items or []:
        key, _, vals = item.partition("=")
        if not key or not vals:
            raise ValueError(f"--set takes KEY=V1,V2,..., got {item!r}")
        try:
            axes.append([(key.strip(), int(v)) for v in vals.split(",")])
        except ValueError:
            raise ValueError(f"--set {key}: values must be integers, got {vals!r}") from None
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def cmd_tune(args) -> int:
    """Verify and time variants of one stage (other -D defines) beside cuBLAS, in one process."""
    base = stages.get(args.stage)
    if base.kind != "gpu":
        raise ValueError(f"{args.stage} has no kernel to tune")
    combos = _parse_set(args.set)
    if _gpu_skip_line([args.stage]):
        print("nothing was measured: no record written")
        return 0
    for item in args.variant or []:  # explicit variants (an ablation ladder is not a product)
        combos.append({} if item in ("", "default") else _parse_set(item.split(","))[0])
    if args.variant and not args.set:
        combos = combos[1:]  # only the listed variants (drop the empty product of no --set)
    variants, rejected = [], []
    for cfg in combos:
        try:
            st = base.variant(**cfg)
            c = st.constraints
            probe = [(c.m_multiple, c.n_multiple, c.k_multiple),
                     (2 * c.m_multiple, 3 * c.n_multiple, 5 * c.k_multiple)]
            bad = verify.failures(verify.sweep(st, probe))
        except Exception as exc:  # noqa: BLE001  bad configs, compile errors: report, go on
            st, bad = None, [f"{type(exc).__name__}: {str(exc)[:300]}"]
        name = st.name if st else f"{base.name}{cfg}"
        if bad:
            rejected.append((name, bad[0]))
            print(f"{name}: REJECTED ({bad[0]})", flush=True)
        else:
            variants.append(st)
    others = [stages.get(name) for name in args.beside or []]
    record = bench.run_bench(others + variants, shapes=args.shape, reps=args.reps, warmup=args.warmup, kind="tune")
    record["rejected"] = [{"variant": n, "reason": r} for n, r in rejected]
    # (variants of a stage that decides part of its build per call may build one kernel at a shape)
    dev = gpu.current()
    record["same_build"] = [{"shape": "x".join(map(str, shape)), "variants": names}
                            for shape in args.shape or bench.GPU_DEFAULT_SHAPES
                            for names in same_builds(variants, *shape, dev=dev)]
    _print_gpu_header(record, args.reps)
    print(_table(_bench_rows(record), ["variant", "MxNxK", "ms", "p20-p80", "TFLOP/s", "% peak",
                                       "x cuBLAS", "check"]))
    for same in record["same_build"]:
        print(f"at {same['shape']} {', '.join(same['variants'])} build one kernel (decided per call): "
              "their times differ by noise alone")
    _write(record, args)
    return 1 if rejected else 0


# ---- ceilings --------------------------------------------------------------------------------
def cmd_ceilings(args) -> int:
    ok, why = gpu.available()
    if not ok:
        print(f"skipped: {why}; nothing was measured: no record written")
        return 0
    record = ceilings.record()
    for key, val in record["ceilings"].items():
        print(f"{key:28} {val:.3f}" if isinstance(val, float) else f"{key:28} {val}")
    _write(record, args)
    return 0


# ---- inspect ---------------------------------------------------------------------------------
def cmd_inspect(args) -> int:
    names = _select(args.stages, stages.names())
    overrides = _overrides(args.set)
    status, reports, call_kw, skipped = 0, [], {}, False
    if args.shape or args.epilogue:  # the build a call of this shape and epilogue runs
        spec = bench.parse_epilogue(args.epilogue or bench.PLAIN_WORD)
        call_kw = {"problem": args.shape or (4096, 4096, 4096), "epilogue": spec.spelled}
    for name in names:
        st = stages.get(name)
        if st.kind != "gpu":
            print(f"{name}: nothing to inspect (no kernel of ours)")
            continue
        if overrides:
            st = st.variant(**overrides)
        if call_kw:
            m, n, k = call_kw["problem"]
            why = bench.fusion_gap(st, spec) or ("" if st.constraints.supports(m, n, k) else
                                                 f"does not take {m}x{n}x{k} ({st.constraints.describe()})")
            if why:
                print(f"{name}: {why}; no call of {m}x{n}x{k} {spec.spelled} to inspect", file=sys.stderr)
                skipped = True
                continue
        try:
            rep = inspect_stage(st, arch=args.arch, **call_kw)
        except CompileError as exc:
            if call_kw or not st.defines_for:
                raise
            raise CompileError(f"{exc}\n{name} decides part of its build per call, and a knob that is per call "
                               "may build only with the rest of a call's defines: add --shape MxNxK (and "
                               "--epilogue SPEC) to inspect the build a call of that shape runs") from None
        reports.append(rep.as_dict())
        if not args.json:
            print(rep.render(), end="\n\n")
        status |= bool(rep.failures)
    if args.json:
        print(json.dumps(reports, indent=1))
    return 2 if skipped and not reports else 1 if status else 0  # (2: nothing asked for could be built)


# ---- profile ---------------------------------------------------------------------------------
def cmd_profile(args) -> int:
    specs = args.stages or stages.names()
    objs = [profile.parse_spec(s) for s in specs]  # refuses unknown stages and tunables up front
    ncu = profile.find_ncu()
    ok, why = gpu.available()
    if not ok or not ncu:
        print(f"profile skipped ({', '.join(st.name for st in objs)}): "
              f"{why if not ok else 'Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin'}; "
              "nothing was measured: no record written")
        return 0
    shape = args.shape or profile.DEFAULT_SHAPE
    extra = args.metric or []
    record = profile.run_profile([st.name for st in objs], shape=shape, keep_reports=args.keep_reports,
                                 epilogue=args.epilogue, extra_metrics=extra)
    print(f"ncu {record['settings'].get('ncu_version')} ({record['settings'].get('ncu')}), one launch at "
          f"{'x'.join(map(str, shape))} after a warm-up"
          + (f", epilogue {args.epilogue}" if args.epilogue != bench.PLAIN_WORD else ""))
    keys = list(profile.METRICS) + profile.asked_metrics(extra)
    rows = []
    for e in record["results"]:
        if e["status"] != "ok":
            print(f"{e['stage']}: {e['status']}: {e.get('reason', '')}"[:300])
            continue
        for key in keys:
            got = e["metrics"].get(key)
            if got:
                rows.append([e["stage"], profile.METRICS.get(key, "(asked for)"), profile._fmt(got["value"], got["unit"]), key])
        top = ", ".join(f"{t['reason']} {100 * t['share']:.0f}%" for t in e["top_stalls"] if t.get("share"))
        rows.append([e["stage"], "top stall reasons", top or "–", profile.STALL_PREFIX + "*"])
    if rows:
        print(_table(rows, ["stage", "metric", "value", "ncu metric"]))
    _write(record, args)
    return 1 if any(e["status"] == "failed" for e in record["results"]) else 0


# ---- report ----------------------------------------------------------------------------------
def cmd_report(args) -> int:
    if args.write:
        for p in report.write_all():
            print(f"updated {p.relative_to(records.REPO)}")
        return 0
    recs = records.load_all()
    print(report.stage_table(recs))
    print()
    print(report.cpu_table(recs))
    return 0


# ---- new -------------------------------------------------------------------------------------
def cmd_new(args) -> int:
    folder = newstage.new_stage(args.name, source=args.source)
    print(f"created {folder.relative_to(records.REPO)} (a copy of {args.source or stages.names()[-1]}); "
          "next: edit its kernel.cu, __init__.py, README.md and why.py, then `make notebooks report`")
    return 0


class _DefaultsFormatter(argparse.HelpFormatter):
    """Shows an option's default where it has one worth showing (not None, not a flag)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text \
                and action.option_strings:
            text += " (default: %(default)s)"
        return text


def parser() -> argparse.ArgumentParser:
    fmt = _DefaultsFormatter
    p = argparse.ArgumentParser(prog="python -m stages", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.add_parser("list", help="stages, idea, requirement, whether each runs here")
    v = sub.add_parser("verify", help="correctness sweep against a float64 reference; exit 1 on failure",
                       formatter_class=fmt)
    v.add_argument("stages", nargs="*", help="stages to check (default: every stage and baseline)")
    v.add_argument("--shape", type=_shape, action="append", help="MxNxK instead of the checklist (repeatable)")
    v.add_argument("--quick", action="store_true", help="sizes {1, 17, 128, 129} instead of the full checklist")
    v.add_argument("--repeat", type=int, default=1, help="run the sweep N times with fresh inputs (races move)")
    v.add_argument("--seed", type=int, default=None, help="fixed input seed (default: fresh each check)")
    v.add_argument("--set", action="append",
                   help="NAME=VALUE: check a variant of the named stage(s) (repeatable), e.g. --set SWIZZLE=0")
    v.add_argument("--epilogue", default=None,
                   help="'all': every shape with every fused-epilogue case the stage supports (each "
                        "activation, bias fp16/fp32 or none, alpha != 1), or one case by name "
                        "(stages/tools/verify.py EPILOGUE_CASES); default: the plain GEMM only")
    b = sub.add_parser("bench", help="time stages against cuBLAS (GPU) and numpy (CPU); write a run record",
                       formatter_class=fmt)
    b.add_argument("stages", nargs="*", help="stages to time (default: every stage and baseline this machine runs)")
    b.add_argument("--shape", type=_shape, action="append", help="MxNxK, repeatable (default: 4096x4096x4096)")
    b.add_argument("--cpu-shape", type=_shape, action="append",
                   help="CPU shapes, repeatable (default: 1024^3 and 2048^3)")
    b.add_argument("--reps", type=int, default=30, help="timed repeats per stage and shape (>= 20 recommended)")
    b.add_argument("--warmup", type=int, default=5, help="untimed launches before the timed ones")
    b.add_argument("--overhead", action="store_true",
                   help=f"instead: host time per gemm() call, back to back at {'x'.join(map(str, bench.OVERHEAD_SHAPE))} "
                        "(or each --shape), against cupy.matmul")
    b.add_argument("--calls", type=int, default=1000, help="calls per round with --overhead")
    b.add_argument("--epilogue", type=_epilogue_arg, action="append", metavar="SPEC",
                   help="time the fused epilogue y = act(alpha*(a@b.T) + bias) instead of the plain GEMM "
                        f"(repeatable): words joined by '+' from bias, alpha (= {bench.EPILOGUE_ALPHA:g}) and one "
                        f"of {', '.join(contract.ACTIVATIONS)}, e.g. bias+gelu_tanh; '{bench.PLAIN_WORD}' adds the "
                        "plain GEMM. Stages that do not fuse it are listed as skipped; torch and CuPy baselines "
                        "join; plain cuBLAS is still the x cuBLAS yardstick (default: none, the plain GEMM)")
    b.add_argument("--publish", action="store_true", help="write the record to results/ (feeds the README tables)")
    b.add_argument("--out", help="write the record to this path instead")
    t = sub.add_parser("tune", help="verify and time variants of a stage's tunables beside cuBLAS",
                       formatter_class=fmt)
    t.add_argument("stage", help="the stage whose tunables to vary")
    t.add_argument("--set", action="append", help="KEY=V1,V2 (repeatable; every combination is run)")
    t.add_argument("--variant", action="append",
                   help="K1=V1,K2=V2 or default: one explicit variant (repeatable; e.g. the rungs of an ablation)")
    t.add_argument("--beside", action="append", help="another stage timed in the same run (repeatable)")
    t.add_argument("--shape", type=_shape, action="append", help="MxNxK, repeatable (default: 4096x4096x4096)")
    t.add_argument("--reps", type=int, default=20, help="timed repeats per variant and shape")
    t.add_argument("--warmup", type=int, default=3, help="untimed launches before the timed ones")
    t.add_argument("--publish", action="store_true", help="write the record to results/tuning/")
    t.add_argument("--out", help="write the record to this path instead")
    c = sub.add_parser("ceilings", help="measure HBM/L2 bandwidth, fp32 FMA and cuBLAS fp16 rates (GPU)")
    c.add_argument("--publish", action="store_true", help="write the record to results/")
    c.add_argument("--out", help="write the record to this path instead")
    i = sub.add_parser("inspect", help="registers, shared/local memory, spills, SASS mix (no GPU needed)",
                       formatter_class=fmt)
    i.add_argument("stages", nargs="*", help="stages to compile and read (default: every GPU stage)")
    i.add_argument("--set", action="append", help="NAME=VALUE: inspect a variant (repeatable), e.g. --set BN=128")
    i.add_argument("--arch", default="sm_90a", help="NVRTC target")
    i.add_argument("--shape", type=_shape, help="MxNxK: the build a call of this shape runs (a stage that picks "
                   "its tile, epilogue and paths per call, v5, picks them as on an H200), not the configuration's own")
    i.add_argument("--epilogue", type=_epilogue_arg, help="with or without --shape (default 4096x4096x4096): the "
                   "build of a call with this fused epilogue, bench's spelling (bias, bias+gelu, ...; a float16 bias)")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    pr = sub.add_parser("profile", help="Nsight Compute on one launch of each stage: bytes, conflicts, pipes, stalls",
                        formatter_class=fmt)
    pr.add_argument("stages", nargs="*",
                    help="stages to profile, or variants as NAME[KEY=V,...] (default: every GPU stage)")
    pr.add_argument("--shape", type=_shape, help="MxNxK (default: 4096x4096x4096)")
    pr.add_argument("--keep-reports", metavar="DIR", help="keep ncu's .ncu-rep files in DIR")
    pr.add_argument("--epilogue", type=_epilogue_arg, default="plain",
                    help="a fused epilogue, bench's spelling (bias, bias+gelu, ...; a float16 N(0, 1) bias), "
                         "on the stages that fuse it (the others are skipped, saying so)")
    pr.add_argument("--metric", action="append", metavar="NAME",
                    help="a further ncu metric beside the fixed set (repeatable), e.g. "
                         "lts__t_requests_srcunit_tex_op_read.sum")
    pr.add_argument("--publish", action="store_true", help="write the record to results/")
    pr.add_argument("--out", help="write the record to this path instead")
    r = sub.add_parser("report", help="tables from the published records (--write updates the READMEs)")
    r.add_argument("--write", action="store_true", help="rewrite the generated blocks of the READMEs")
    n = sub.add_parser("new", help="start a new stage folder by copying the last stage")
    n.add_argument("name", help="the new folder's name: vN_short_name (N the next version)")
    n.add_argument("--source", help="stage to copy (default: the last one)")
    stress.add_parser(sub)
    return p


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(_glue_negative_values(list(sys.argv[1:] if argv is None else argv)))
    if not args.cmd:
        p.print_help()
        return 0
    commands = {"list": cmd_list, "verify": cmd_verify, "bench": cmd_bench, "tune": cmd_tune,
                "ceilings": cmd_ceilings, "inspect": cmd_inspect, "profile": cmd_profile, "report": cmd_report,
                "new": cmd_new, "stress": stress.cmd_stress}
    try:
        return commands[args.cmd](args)
    except (ValueError, TypeError, UnsupportedDevice, CompileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
