"""Where v4's stream-K time goes (README of v4_swizzle_pipeline, "Stream-K"): the shipped kernel
against STREAMK=0 and against diagnostic copies of kernel.cu, on the three issue shapes and on
M = K = 4096 with N = 256 j (units = 16 j: the last wave from 8 to 124 of 132 blocks full).

  sk           shipped (STREAMK=1; since commit cf845e8 a shape whose wave the rule does not split
               runs the STREAMK=0 build, so there sk and dp are the same kernel)
  dp           STREAMK=0: the last partial wave left to the SMs it fills
  sk-nofence   no per-thread __threadfence before the flag (the leader's fence.acq_rel remains)
  sk-noxfer    diagnostic, WRONG results: no partial written or read (flags still passed)
  sk-nowait    diagnostic, WRONG results: no partials and no flags at all (the split alone)

Only sk, dp and sk-nofence are judged against the float64 reference; the diagnostics time only.
    python3 scripts/sk_probe.py --out DIR      ->  DIR/v4-streamk.json
"""
import argparse
import json
import os
import secrets

import stages
from stages.core import gpu
from stages.tools import records, verify
from stages.tools.timing import L2Flusher, time_gpu, tflops

from probe_copy import mutated  # scripts/probe_copy.py (this script's folder is on sys.path)

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=20)
args = p.parse_args()

V4 = stages.get("v4_swizzle_pipeline")
code = V4.code()
WRITE = "        __threadfence();\n        named_bar_sync(1 + wg, 128);\n        if (tid == 0) flag_release(flags + slot, 1);\n"
assert WRITE in code
STORE = "          __stcg(part + j * 128 + tid, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));\n"
LOAD = "            const float4 p = __ldcg(part + j * 128 + tid);\n            acc[4 * j] += p.x; acc[4 * j + 1] += p.y; acc[4 * j + 2] += p.z; acc[4 * j + 3] += p.w;\n"
WAIT = "            while (flag_acquire(flags + slot) != 1) {}\n            flags[slot] = 0;  // as the launch found it: the next launch's writer sets it again\n"
for s in (STORE, LOAD, WAIT):
    assert s in code, s
mutations = {
    "sk-nofence": [(WRITE, WRITE.replace("        __threadfence();\n", ""))],
    "sk-noxfer": [(STORE, "          if (j < 0) {}\n"), (LOAD, "            if (j < 0) {}\n"),
                  (WRITE, WRITE.replace("        __threadfence();\n", ""))],
    "sk-nowait": [(STORE, "          if (j < 0) {}\n"), (LOAD, "            if (j < 0) {}\n"),
                  (WRITE, "        named_bar_sync(1 + wg, 128);\n"), (WAIT, "            (void)flag_acquire;\n")],
}
variants = {"sk": V4, "dp": V4.variant(STREAMK=0)}
variants.update({name: mutated(V4, name, subs) for name, subs in mutations.items()})
judged = {"sk", "dp", "sk-nofence"}

shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]
shapes += [(4096, 256 * j, 4096) for j in range(9, 21) if 256 * j != 4096]
cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
CUBLAS = stages.get("cublas")
rows = []
for (m, n, k) in shapes:
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    ref, mag = verify.reference(a, b, cp)
    out = cp.empty((m, n), cp.float16)
    units = (m // 128) * (n // 256)
    line = {"cublas": time_gpu(CUBLAS.prepare(a, b, out), reps=args.reps, flush=flush).median}
    checks = {}
    for name, st in variants.items():
        run = st.prepare(a, b, out)
        out.fill(float("nan"))
        run()
        if name in judged:
            chk = verify.judge_output(verify.Check(name, m, n, k, 0), out, ref, mag, cp)
            checks[name] = "ok" if chk.passed else "FAIL " + chk.reason
        line[name] = time_gpu(run, reps=args.reps, flush=flush).median
    for name, ms in line.items():
        rows.append({"m": m, "n": n, "k": k, "units": units, "last_wave": units % dev.sm_count,
                     "variant": name, "ms_median": ms, "tflops": tflops(m, n, k, ms),
                     "x_cublas": line["cublas"] / ms, "check": checks.get(name, "not judged")})
    print(f"{m}x{n}x{k} units {units} ({units % dev.sm_count} in the last wave): "
          + "  ".join(f"{nm} {ms * 1e3:.1f}us ({line['cublas'] / ms:.3f})" for nm, ms in line.items())
          + "  " + " ".join(f"{nm}:{c}" for nm, c in checks.items()), flush=True)
    del a, b, ref, mag, out
    cp.get_default_memory_pool().free_all_blocks()

with open(os.path.join(args.out, "v4-streamk.json"), "w") as f:
    json.dump({"kind": "v4-streamk-probe", "env": records.environment(),
               "settings": {"reps": args.reps, "l2_flush": True}, "results": rows}, f, indent=1)
