"""What K % 16 == 8 costs v5, operand by operand: the same kernel on the same values, with A's and
B's rows either packed (row pitch K: every other row starts 16 bytes into a 32-byte sector) or
pitched to K + 8 elements (every row starts on a sector). v5 README, "Small square problems" in
OPEN_QUESTIONS.md: at 1000^3 v5 takes 1.4 us more than at K = 1008, where cuBLAS takes 0.1, and a
128-byte box row costs ~2.2 L2 requests at K = 1000 against 1.0 at K = 1008.

Why per operand: a kernel could keep one operand's rows on sectors by itself. Its tiles would take
C's even rows and odd rows apart (A's rows at a pitch of 2K, one half per parity), and a
tile of odd rows would start its k-blocks at k = -8, for A and B alike (TMA zero-fills the
negative columns; for K % 16 == 8 the odd rows' sectors start at k = 8 (mod 16)). Every box row
of A would then start on a sector (but in an odd tile's first k-block, whose data starts at k = 0),
and B's as often as now. "A pitched, B packed" below is that layout's loads on today's kernel;
"both pitched" is the most any layout of the loads can gain. That kernel is v5's ROW_PARITY=1 (a
knob; one 3-D tensor map of A and of C, (K or N, 2, M / 2): kernel.cu "ROW_PARITY"),
timed here as "parity split" on the packed operands where the call allows it (M even, the unit
rows paired: row_parity in __init__.py), judged as the layouts are.

The pitched views are not C-contiguous, which the contract refuses (tensor maps take any 16-byte
row pitch, but gemm's callers pass packed rows); this probe lets such a view through for a and b
only, and checks that v5 builds the same kernel for every layout (`defines_for`). The padding
columns hold NaN, so a read past K would fail the float64 judge. Each layout is judged on fresh
inputs (--repeat times, NaN-poisoned output), then all are timed in interleaved rounds with
cuBLAS on the packed operands (the bench's L2 flush before each launch).

    python3 scripts/row_align_probe.py [--shapes MxNxK,...] [--rounds 6] [--reps 10] --out DIR
        ->  DIR/row-align-probe.json
"""
import argparse
import os
import secrets

import stages
from stages.core import contract, gpu
from stages.core.stage import Call
from stages.tools import verify
from stages.tools.timing import L2Flusher, tflops

from side_by_side import compile_all, defines_of, interleaved, prepare_judged, refused_rows, save  # scripts/side_by_side.py

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=6)
p.add_argument("--repeat", type=int, default=2, help="fresh-input judgements of every layout per shape")
p.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
p.add_argument("--shapes", default="1000x1000x1000,999x1001x1000,1000x1000x2056,1000x1000x4104,4095x4097x4104",
               help="MxNxK,... with K % 16 == 8 (packed rows alternate on and off a sector)")
args = p.parse_args()

_strict = contract._check_matrix


def _lenient(arr, name, shape_doc, alignment, device_id):
    """The contract's check, but a or b may be a view of packed rows at a 16-byte row pitch."""
    if name in ("a", "b") and arr.ndim == 2 and arr.strides[1] == 2 and arr.strides[0] % 16 == 0:
        return
    _strict(arr, name, shape_doc, alignment, device_id)


contract._check_matrix = _lenient

V5 = stages.get("v5_fused_epilogue")
CUBLAS = stages.get("cublas")
cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
LAYOUTS = {"packed": (0, 0), "A pitched": (8, 0), "B pitched": (0, 8), "both pitched": (8, 8)}


def pitched(x, extra):
    """x's values in rows of K + extra elements (the extra columns NaN), as an (rows, K) view."""
    if not extra:
        return x
    rows, k = x.shape
    buf = cp.full((rows, k + extra), float("nan"), cp.float16)
    buf[:, :k] = x
    view = buf[:, :k]
    assert view.strides == (2 * (k + extra), 2) and view.data.ptr % 16 == 0
    return view


PARITY = V5.variant(ROW_PARITY=1)  # (the tiles of even and odd rows, on the packed operands)


def defines(a, b, out, st=V5):
    call = Call(a, b, out, a.shape[0], b.shape[0], a.shape[1], st.defines, dev, contract.PLAIN)
    return st.defines_for(call)


shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s]
for m, n, k in shapes:
    if k % 16 != 8:
        raise SystemExit(f"{m}x{n}x{k}: K % 16 must be 8 (packed rows alternate on and off a sector)")
arch = gpu.compile_arch(dev, V5.requires)
builds = [defines_of(st, m, n, k, contract.PLAIN, dev) for m, n, k in shapes for st in (V5, PARITY)]
compile_all({tuple(sorted(d.items())): (V5.code(), V5.base_name, arch, d) for d in builds}.values(), args.jobs)
rows, checks = [], []
for m, n, k in shapes:
    for rep in range(args.repeat):
        a0, b0 = verify.random_operands(m, n, k, secrets.randbits(63), cp)
        ref, mag = verify.reference(a0, b0, cp, contract.PLAIN)
        out = cp.empty((m, n), cp.float16)
        ops = {name: (pitched(a0, ea), pitched(b0, eb)) for name, (ea, eb) in LAYOUTS.items()}
        built = {name: defines(a, b, out) for name, (a, b) in ops.items()}
        if any(d != built["packed"] for d in built.values()):
            raise SystemExit(f"{m}x{n}x{k}: the layouts got different builds: {built}")
        runs, verdict = {}, {}
        for name, (a, b) in ops.items():  # (each layout its own operands: one entry each)
            r, v = prepare_judged({name: V5}, {name}, a, b, out, {}, ref, mag, cp)
            runs.update(r)
            verdict.update(v)
        parity = defines(a0, b0, out, PARITY)
        if parity["ROW_PARITY"]:  # (the packed build but for ROW_PARITY, and no deferred store pass)
            assert {**parity, "ROW_PARITY": 0, "EPI_DEFER": built["packed"]["EPI_DEFER"]} == built["packed"], parity
            r, v = prepare_judged({"parity split": PARITY}, {"parity split"}, a0, b0, out, {}, ref, mag, cp)
            runs.update(r)
            verdict.update(v)
        r, v = prepare_judged({"cublas": CUBLAS}, {"cublas"}, a0, b0, out, {}, ref, mag, cp)
        runs.update(r)
        verdict.update(v)
        checks += [{"m": m, "n": n, "k": k, "layout": name, "repeat": rep, "check": c} for name, c in verdict.items()]
    d = built["packed"]
    config = f"{d['BM']}x{d['BN']} clusters {d['CLUSTER_M']}x{d['CLUSTER_N']} stages {d['STAGES']}"
    med, samples = interleaved(runs, args.rounds, args.reps, flush)
    rows += refused_rows(runs, verdict, {"m": m, "n": n, "k": k, "pitch_a": None, "pitch_b": None, "x_cublas": None})
    for name, ms in med.items():
        ea, eb = LAYOUTS.get(name, (0, 0))
        rows.append({"m": m, "n": n, "k": k, "variant": name, "pitch_a": k + ea, "pitch_b": k + eb,
                     "config": config if name in LAYOUTS or name == "parity split" else None, "ms_median": ms,
                     "tflops": tflops(m, n, k, ms), "x_cublas": med["cublas"] / ms if "cublas" in med else None,
                     "samples": len(samples[name]), "check": verdict[name]})
    print(f"{m}x{n}x{k} ({config}): " + "  ".join(f"{nm} {ms * 1e3:.2f}us" for nm, ms in med.items())
          + "  | " + " ".join(f"{nm}:{c}" for nm, c in verdict.items() if c != "ok"), flush=True)
    del a0, b0, ref, mag, out, ops, runs
    cp.get_default_memory_pool().free_all_blocks()

failed = [c for c in checks if c["check"] != "ok"]
print("wrote", save(args.out, "row-align-probe", {"rounds": args.rounds, "reps": args.reps, "repeat": args.repeat,
                                                 "flush_bytes": flush.nbytes}, results=rows, checks=checks),
      f"; {len(checks)} checks, {len(failed)} failed", flush=True)
raise SystemExit(1 if failed else 0)
