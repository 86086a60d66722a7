"""Run GPU stages on a small, an odd-multiple and a larger shape (or the shapes given); meant to
be wrapped by compute-sanitizer:
    compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_probe.py
    compute-sanitizer --tool racecheck python3 scripts/sanitize_probe.py v1_tiled v2_cp_async
    compute-sanitizer --tool synccheck python3 scripts/sanitize_probe.py v4_swizzle_pipeline --shape 1024x1024x2048
    ... sanitize_probe.py v5_fused_epilogue --set AUTO=0 --set BN=112 --shape 300x1000x200   (a variant)
Judged by the one judge (stages/tools/verify.py); exits non-zero on a wrong result, the
sanitizer reports bad accesses and shared-memory races. (`--report-api-errors no`: cuda-bindings
probes driver entry points with cuGetProcAddress, which memcheck otherwise counts as errors.)"""
import sys

import stages
from stages.tools import verify
from stages.tools.cli import _overrides

args = sys.argv[1:]
shapes = [tuple(int(x) for x in args[i + 1].split("x")) for i, a in enumerate(args) if a == "--shape"]
sets = _overrides([args[i + 1] for i, a in enumerate(args) if a == "--set"])  # verify --set's parser
flags = ("--shape", "--set")
names = [a for i, a in enumerate(args) if a not in flags and (i == 0 or args[i - 1] not in flags)] or stages.names()
bad = 0
for name in names:
    st = stages.get(name)
    if sets:
        st = st.variant(**sets)
    c = st.constraints
    if shapes:
        todo = shapes
    elif c.m_multiple > 1:
        todo = [(c.m_multiple, c.n_multiple, c.k_multiple), (2 * c.m_multiple, 2 * c.n_multiple, 3 * max(c.k_multiple, 64))]
    else:
        todo = [(67, 45, 129), (1, 1, 1)]
    for chk in verify.sweep(st, todo):
        print(f"{name} {chk.m}x{chk.n}x{chk.k}: {'ok' if chk.passed else 'FAIL ' + chk.reason}", flush=True)
        bad += not chk.passed
sys.exit(1 if bad else 0)
