"""Three ways to handle shapes that are not multiples of the tile, timed on the same inputs
(README of v5_fused_epilogue, "Tails: three ways"):

  bounds  v5 as shipped: one launch; TMA zero-fills loads past the edges and clips the C store
          (or stores directly with bounds checks where C has no tensor map).
  split   the seed's main + tail kernels: the largest tile-aligned block of C by one launch and
          the right and bottom strips by two more (each its own contiguous arrays, so the time is
          the three launches' sum and excludes scattering the strips into one C).
  pad     copy A and B into zero-padded, tile-aligned arrays, run v4 (which takes no tails), copy
          C's valid part out: the padded copies and the copy-out are inside the timed region.

    python3 scripts/v5_tails.py --out DIR
Writes DIR/v5-tails.json (the environment record plus one row per shape and strategy).
"""
import argparse
import json
import os
import secrets

import stages
from stages.core import gpu
from stages.core.stage import cdiv
from stages.tools import records, verify
from stages.tools.timing import L2Flusher, time_gpu, tflops

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--shape", action="append", default=None)
args = p.parse_args()
shapes = [tuple(map(int, s.split("x"))) for s in (args.shape or ["4095x4097x4104", "1000x1000x1000", "4095x4096x4096"])]

cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
V4, V5, CUBLAS = stages.get("v4_swizzle_pipeline"), stages.get("v5_fused_epilogue"), stages.get("cublas")
rows = []
for (m, n, k) in shapes:
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    out = cp.empty((m, n), cp.float16)
    res = {}
    # bounds: judged against the float64 reference
    run = V5.prepare(a, b, out)
    res["bounds (v5, one launch)"] = time_gpu(run, flush=flush).median
    ref, mag = verify.reference(a, b, cp)
    chk = verify.judge_output(verify.Check("v5", m, n, k, 0), out, ref, mag, cp)
    # split: main block of whole 128 x 256 tiles, then the right strip and the bottom strip
    m0, n0 = m // 128 * 128, n // 256 * 256
    parts = []
    if m0 and n0:
        parts.append((a[:m0], b[:n0]))
    if n0 < n:
        parts.append((a, b[n0:]))
    if m0 < m and n0:
        parts.append((a[m0:], b[:n0]))
    parts = [(cp.ascontiguousarray(x), cp.ascontiguousarray(y)) for x, y in parts]
    preps = [V5.prepare(x, y) for x, y in parts]
    res["split (main + 2 tail launches)"] = time_gpu(lambda: [pr() for pr in preps], flush=flush).median
    # pad: zero-padded copies to v4's tiles, v4, copy the valid part out
    mp, np_, kp = cdiv(m, 128) * 128, cdiv(n, 256) * 256, cdiv(k, 64) * 64
    a_p, b_p = cp.zeros((mp, kp), cp.float16), cp.zeros((np_, kp), cp.float16)
    c_p = cp.empty((mp, np_), cp.float16)
    run4 = V4.prepare(a_p, b_p, c_p)

    def padded():
        a_p[:m, :k] = a
        b_p[:n, :k] = b
        run4()
        out[...] = c_p[:m, :n]

    res["pad (copies + v4 + copy out)"] = time_gpu(padded, flush=flush).median
    res["v4 alone on the padded shape (no copies)"] = time_gpu(run4, flush=flush).median
    res["cublas"] = time_gpu(CUBLAS.prepare(a, b, out), flush=flush).median
    for name, ms in res.items():
        rows.append({"m": m, "n": n, "k": k, "strategy": name, "ms_median": ms,
                     "tflops": tflops(m, n, k, ms), "v5_verified": chk.passed})
        print(f"{m}x{n}x{k:<6} {name:45s} {ms * 1e3:9.1f} us  {tflops(m, n, k, ms):7.1f} TF", flush=True)
    print(f"  v5 check: {'ok' if chk.passed else 'FAIL ' + chk.reason}", flush=True)
    del a, b, out, ref, mag, a_p, b_p, c_p
    cp.get_default_memory_pool().free_all_blocks()

with open(os.path.join(args.out, "v5-tails.json"), "w") as f:
    json.dump({"kind": "v5-tails", "env": records.environment(), "settings": {"reps": 30, "l2_flush": True},
               "results": rows}, f, indent=1)
