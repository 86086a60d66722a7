"""L1 wavefronts: what one warp-wide 4-byte load costs when its 32 lanes hit L1-resident data.

Question (stages/v0_naive/README.md): is the unit of cost a 32-byte sector or a 128-byte line?
One block on one SM first touches its data (so it sits in L1), then every warp issues a long run of
independent `ld.global.nc.f32` (the read-only path v0's loads take, LDG.E.CONSTANT) (one 4-byte value per lane) in one of these patterns:

  32_lines   lane l reads word 32*l: 32 different 128-byte lines, one sector each (32 sectors)
  8_lines    the same 32 sectors packed into 8 lines: lane l -> line l/4, sector l%4
  1_line     lane l reads word l: the 4 sectors of one line (a fully coalesced load)
  broadcast  every lane reads the same word (reference)

clock64() around the timed loop gives SM cycles; "cycles per warp load" = cycles / (warps x loads
per warp). With several warps in the block the loads of different warps overlap, so the smallest
figure over the warp counts is the SM's throughput per warp-wide load (the number the READMEs
quote); the 1-warp figure also contains the issue rate of a single warp.

Run on a GPU: PYTHONPATH=. python3 probes/l1_wavefront.py   (needs CuPy; a few seconds)
Writes $OUT/l1_wavefront.json when OUT is set.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover - needs a GPU machine
    sys.exit("l1_wavefront: needs CuPy on a machine with an NVIDIA GPU")

SETS = 8          # independent loads in flight per warp per iteration (distinct 4 KiB windows)
WINDOW = 1024     # words per window: 4 KiB, so the whole footprint is 32 KiB (well inside L1)
ITERS = 2048      # timed iterations -> SETS * ITERS = 16,384 loads per warp
PATTERNS = {      # word offset of lane l inside a window
    "32_lines": "l * 32",
    "8_lines": "(l / 4) * 32 + (l % 4) * 8",
    "1_line": "l",
    "broadcast": "0",
}

SRC = r"""
__device__ __forceinline__ float ld_ca(const float* p) {
  float v;  // the read-only (.nc) path, as v0's loads of A and B (LDG.E.CONSTANT)
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
extern "C" __global__ void probe(const float* __restrict__ buf, long long* cycles, float* sink, int iters,
                                 int zero) {
  const int l = threadIdx.x % 32;
  const float* p = buf + (OFFSET);
  float s = 0.0f;
#pragma unroll
  for (int r = 0; r < SETS; ++r) s += ld_ca(p + r * WINDOW);   // warm L1 (untimed)
  if (s < 0.0f) sink[threadIdx.x] = s;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    const float* q = p + (it & zero);  // zero == 0 at run time: stops ptxas hoisting the loads
#pragma unroll
    for (int r = 0; r < SETS; ++r) s += ld_ca(q + r * WINDOW);
  }
  if (s < 0.0f) sink[threadIdx.x] = s;   // uses every load before the clock stops
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}
"""


def build(offset: str):
    src = SRC.replace("OFFSET", offset).replace("SETS", str(SETS)).replace("WINDOW", str(WINDOW))
    return cp.RawModule(code=src, options=("-std=c++17",)).get_function("probe")


def main() -> int:
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    buf = cp.ones(SETS * WINDOW, dtype=cp.float32)
    cycles = cp.zeros(1, dtype=cp.int64)
    sink = cp.zeros(1024, dtype=cp.float32)
    warps_list = (1, 4, 8, 16)
    results = {}
    print(f"{name}: one block on one SM, {SETS} independent 4-byte loads per warp per iteration, "
          f"{ITERS} iterations, data L1-resident ({SETS * WINDOW * 4 // 1024} KiB)")
    print(f"{'pattern':<10} " + " ".join(f"{w:>2} warp{'s' if w > 1 else ' '}" for w in warps_list)
          + "   cycles per warp load (min over warps)")
    for pat, off in PATTERNS.items():
        fn = build(off)
        row = {}
        for w in warps_list:
            best = None
            for _ in range(3):  # first launch also compiles/loads; keep the best of 3
                fn((1,), (32 * w,), (buf, cycles, sink, np.int32(ITERS), np.int32(0)))
                dev.synchronize()
                c = int(cycles.get()[0])
                best = c if best is None else min(best, c)
            row[w] = best / (w * ITERS * SETS)
        results[pat] = {"cycles_per_warp_load_by_warps": row, "cycles_per_warp_load": min(row.values())}
        print(f"{pat:<10} " + " ".join(f"{row[w]:8.2f}" for w in warps_list)
              + f"   {min(row.values()):6.2f}")
    lines, packed, one = (results[k]["cycles_per_warp_load"] for k in ("32_lines", "8_lines", "1_line"))
    print(f"32 lines / 8 lines = {lines / packed:.2f} (same 32 sectors: ~4 if the cost is per line, "
          f"~1 if per sector); 8 lines / 1 line = {packed / one:.2f}")
    record = {"probe": "l1_wavefront", "gpu": name, "sets": SETS, "iters": ITERS,
              "patterns": {k: PATTERNS[k] for k in PATTERNS}, "results": results}
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "l1_wavefront.json"), "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {os.path.join(out, 'l1_wavefront.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
