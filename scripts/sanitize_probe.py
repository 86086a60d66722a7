"""Run every GPU stage on a small, an odd-multiple and a larger shape; meant to be wrapped by
compute-sanitizer:
    compute-sanitizer --tool memcheck  python3 scripts/sanitize_probe.py
    compute-sanitizer --tool racecheck python3 scripts/sanitize_probe.py v1_tiled v2_cp_async
Judged by the one judge (stages/tools/verify.py); exits non-zero on a wrong result, the
sanitizer reports bad accesses and shared-memory races."""
import sys

import stages
from stages.tools import verify

names = sys.argv[1:] or stages.names()
bad = 0
for name in names:
    st = stages.get(name)
    c = st.constraints
    if c.m_multiple > 1:
        shapes = [(c.m_multiple, c.n_multiple, c.k_multiple), (2 * c.m_multiple, 2 * c.n_multiple, 3 * max(c.k_multiple, 64))]
    else:
        shapes = [(67, 45, 129), (1, 1, 1)]
    for chk in verify.sweep(st, shapes):
        print(f"{name} {chk.m}x{chk.n}x{chk.k}: {'ok' if chk.passed else 'FAIL ' + chk.reason}", flush=True)
        bad += not chk.passed
sys.exit(1 if bad else 0)
