"""Run every GPU stage once on a small problem; meant to be wrapped by compute-sanitizer:
    compute-sanitizer --tool memcheck  python3 scripts/sanitize_probe.py
    compute-sanitizer --tool racecheck python3 scripts/sanitize_probe.py v1_tiled v2_cp_async
Exits non-zero on a wrong result; the sanitizer reports bad accesses and shared-memory races."""
import sys

import stages
from stages.harness import verify

names = sys.argv[1:] or stages.names()
bad = 0
for name in names:
    st = stages.get(name)
    c = st.constraints
    m, n, k = (2 * c.m_multiple, 2 * c.n_multiple, 3 * max(c.k_multiple, 64)) if c.m_multiple > 1 else (67, 45, 129)
    chk = verify.check(st, m, n, k)
    print(f"{name} {m}x{n}x{k}: {'ok' if chk.passed else 'FAIL ' + chk.reason}", flush=True)
    bad += not chk.passed
sys.exit(1 if bad else 0)
