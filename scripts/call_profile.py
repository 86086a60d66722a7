"""Where a stage's host time per gemm() call goes: cProfile over back-to-back calls at one shape.

`python -m stages bench --overhead` says how long a call takes on the host; this splits it into
`prepare` (the checks, the stage's per-call defines and plan) and the launch it returns, and
says in which functions the time goes. The GPU runs the calls as usual; should the launch queue
fill (kernels slower than the call path, enough calls queued), the host's wait shows up as time
in the launch (CuPy's call of cuLaunchKernel), not in the Python above it.

    PYTHONPATH=. python3 scripts/call_profile.py v5_fused_epilogue --shape 16x14336x4096 [--calls 2000]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import secrets
import time

import stages
from stages.core import gpu
from stages.tools import verify

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("stage")
p.add_argument("--shape", action="append", required=True, help="MxNxK, repeatable")
p.add_argument("--calls", type=int, default=2000)
p.add_argument("--top", type=int, default=25)
p.add_argument("--no-profile", action="store_true", help="the three timings only")
p.add_argument("--epilogue", default="", help="'bias+gelu' style: profile the fused call")
args = p.parse_args()

st = stages.get(args.stage)
cp = gpu.cupy()
for spec in args.shape:
    m, n, k = (int(x) for x in spec.lower().split("x"))
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    out = cp.empty((m, n), cp.float16)
    kw = {}
    if "bias" in args.epilogue:
        kw["bias"] = cp.random.default_rng(n).standard_normal(n, dtype=cp.float32).astype(cp.float16)
    for act in ("gelu_tanh", "gelu", "relu", "silu"):
        if act in args.epilogue.split("+"):
            kw["activation"] = act
            break
    for _ in range(50):
        st.gemm(a, b, out=out, **kw)
    cp.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    for _ in range(args.calls):
        st.gemm(a, b, out=out, **kw)
    host = (time.perf_counter() - t0) / args.calls * 1e6
    cp.cuda.get_current_stream().synchronize()
    ready = st.prepare(a, b, out, **kw)
    t0 = time.perf_counter()
    for _ in range(args.calls):
        st.prepare(a, b, out, **kw)
    prep = (time.perf_counter() - t0) / args.calls * 1e6
    cp.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    for _ in range(args.calls):
        ready()
    launch = (time.perf_counter() - t0) / args.calls * 1e6
    cp.cuda.get_current_stream().synchronize()
    print(f"===== {st.name} {m}x{n}x{k} {args.epilogue or 'plain'}: host us per call, {args.calls} calls: "
          f"gemm {host:.1f}, prepare alone {prep:.1f}, the prepared launch alone {launch:.1f}")
    if args.no_profile:
        continue
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        st.gemm(a, b, out=out, **kw)
    prof.disable()
    cp.cuda.get_current_stream().synchronize()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(args.top)
    print("cProfile of the gemm calls, sorted by own time:")
    print(s.getvalue())
