"""Does the TMA tensor maps' L2 promotion change what misaligned rows cost? Every TMA map v3 and v4
encode says CU_TENSOR_MAP_L2_PROMOTION_L2_256B (stages/core/tma.py's default), and so did v5's: a
request that misses the L2 fetches the 256-byte block around it (v5 now chooses per call,
`l2_promotion`). Rows of K = 1000 (2,000 bytes) start 16
bytes into a 32-byte sector every other row, and there v5 pays 2-4 us that cuBLAS pays ~1 of (v5
SHAPES.md, "Sectors, not lines"). This prepares v5 once per promotion (none, 64, 128, 256 bytes: the
maps are encoded at prepare time, so each prepared launch keeps its own), judges every launch against
float64 (NaN-poisoned output, fresh operands per shape), then times them beside cuBLAS in
interleaved rounds, with the L2 flushed before each launch ("flushed", as the bench) and without
("warm": the operands stay in the L2 from the launch before; each launch behind a `QueueHold` since
2026-12-05, so that a kernel shorter than the call path is timed, not the host: the warm rows of
results/probes/20261201T152214 and T153334 were timed without it).

    python3 scripts/promo_probe.py --out DIR   ->  DIR/promo-probe.json
"""
import argparse
import os
import secrets
import sys

import stages
from stages.core import gpu, tma
from stages.tools import verify
from stages.tools.timing import L2Flusher, QueueHold, tflops

from side_by_side import interleaved, prepare_judged, save  # scripts/side_by_side.py

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--reps", type=int, default=10)
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--shapes", default="1000x1000x1000,999x1001x1000,1000x1000x1024,1000x1000x1008,16x14336x4096,"
                                   "128x14336x4096,1x4096x4096,4096x4096x4096,4096x4096x4104")
p.add_argument("--promotions", default="256,128,64,0",
               help="bytes (256 is what the stages ship), or aXbY: X for A's map, Y for B's (C's stays 256)")
p.add_argument("--stage", default="v5_fused_epilogue")
p.add_argument("--modes", default="flushed,warm", help="flushed (the L2 flushed before each launch, as the bench), warm")
args = p.parse_args()


class Promoted:
    """A stage whose prepare encodes A's and B's tensor maps with L2 promotion `spec`, whatever the
    stage asks: one number of bytes for both, or "aXbY": X for the first map the stage encodes, Y
    for the second (v4 and v5 encode A's, B's, then C's, which keeps what the stage asks; with v5's
    SWAP_AB the first is the weight's). (Until commit b4dc612 this set a module default in tma.py,
    which v5 stopped reading when it began to pass its own, `l2_promotion`, at 2d792fd; the probes
    before that, T152214 to T152310, reached it, and a number then also applied to C's map.)"""

    def __init__(self, stage, spec):
        self.stage = stage
        if spec.startswith("a"):
            x, y = spec[1:].split("b")
            self.seq = [int(x), int(y)]
        else:
            self.seq = [int(spec)] * 2

    def prepare(self, *a, **kw):
        encode = tma.tensor_map
        order = iter(self.seq)

        def tensor_map(*args, **kwargs):
            nbytes = next(order, None)
            if nbytes is not None:
                kwargs["l2_promotion"] = nbytes
            return encode(*args, **kwargs)

        tma.tensor_map = tensor_map  # (the stages call tma.tensor_map through the module)
        try:
            return self.stage.prepare(*a, **kw)
        finally:
            tma.tensor_map = encode


cp = gpu.cupy()
dev = gpu.current()
flush = L2Flusher(dev.l2_bytes)
hold = QueueHold()  # (warm mode: holds the queue without touching memory, timing.py)
st = stages.get(args.stage)
promotions = args.promotions.split(",")
rows, bad = [], []
for shape in args.shapes.split(","):
    m, n, k = (int(x) for x in shape.split("x"))
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    ref, mag = verify.reference(a, b, cp)
    out = cp.empty((m, n), cp.float16)
    entries = {f"p{spec}": Promoted(st, spec) for spec in promotions}
    entries["cublas"] = stages.get("cublas")
    runs, verdict = prepare_judged(entries, set(entries), a, b, out, {}, ref, mag, cp)
    bad += [f"{shape} {nm}: {v}" for nm, v in verdict.items() if v != "ok"]
    for mode in args.modes.split(","):
        # warm: behind a QueueHold, so that the events bracket the kernel and not the host's call path
        # (without it the warm rows of 10-µs kernels read 17-18 µs, the host's time: T152214)
        fl = {"flushed": flush, "warm": hold}[mode]
        med, samples = interleaved(runs, args.rounds, args.reps, fl)
        for nm, ms in med.items():
            rows.append({"m": m, "n": n, "k": k, "mode": mode, "variant": nm, "ms_median": ms,
                         "tflops": tflops(m, n, k, ms), "samples": samples[nm], "check": verdict[nm]})
        print(f"{shape} {mode}: " + "  ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in med.items()), flush=True)
    del a, b, ref, mag, out
    cp.get_default_memory_pool().free_all_blocks()

path = save(args.out, "promo-probe", {"reps": args.reps, "rounds": args.rounds, "stage": args.stage,
                                      "promotions": promotions, "modes": args.modes}, rows=rows, failures=bad)
print(f"wrote {path}; {len(bad)} failures" + ("".join(f"\n  {x}" for x in bad) if bad else ""), flush=True)
sys.exit(1 if bad else 0)
