"""L2 read bandwidth: how fast can all SMs read a buffer that is resident in L2?

stages/tools/ceilings.py measures L2 with one __ldcg float4 per thread per iteration (grid-stride),
which keeps too few bytes in flight per SM and gives a lower bound (~7.5 TB/s on the H200). Here
each thread keeps UNROLL independent 16-byte __ldcg loads in flight (L1 bypassed: ld.global.cg),
over a few buffer sizes that fit in L2 (H200: 60 MiB, in two partitions, so smaller buffers are
tried too) and a few launch shapes. Each launch reads the buffer PASSES times; the first launch
(untimed) brings it into L2. Reported: TB/s = bytes read / median kernel time (CUDA events).

Run on a GPU: PYTHONPATH=. python3 probes/l2_bandwidth.py   (needs CuPy; ~10-20 s)
Writes $OUT/l2_bandwidth.json when OUT is set.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover - needs a GPU machine
    sys.exit("l2_bandwidth: needs CuPy on a machine with an NVIDIA GPU")

MIB = 1 << 20
SIZES_MIB = (8, 16, 24, 40)
UNROLLS = (1, 4, 8)
SHAPES = ((256, 4), (512, 2), (1024, 2))   # (threads per block, blocks per SM)
PASSES = 20
REPS = 7

SRC = r"""
extern "C" __global__ void l2_read(const float4* __restrict__ buf, long long n4, int passes, float* sink) {
  // Each thread reads UNROLL float4 that are a whole grid apart, so one warp-wide load is 512
  // contiguous bytes and the UNROLL loads of a thread are independent (all in flight together).
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long chunk = stride * UNROLL;
  float acc = 0.0f;
  for (int p = 0; p < passes; ++p) {
    for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x; base < n4; base += chunk) {
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const long long i = base + u * stride;
        v[u] = i < n4 ? __ldcg(buf + i) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
    }
  }
  if (acc == -1.0f) sink[0] = acc;  // never true (buffer is zeros); keeps the loads alive
}
"""


def main() -> int:
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    sms, l2 = props["multiProcessorCount"], props["l2CacheSize"]
    print(f"{name}: {sms} SMs, L2 {l2 / MIB:.0f} MiB; {PASSES} passes per launch, median of {REPS}")
    kernels = {u: cp.RawModule(code=SRC.replace("UNROLL", str(u)), options=("-std=c++17",)).get_function("l2_read")
               for u in UNROLLS}
    sink = cp.zeros(1, dtype=cp.float32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    for size in SIZES_MIB:
        if size * MIB > l2:
            continue
        buf = cp.zeros(size * MIB // 4, dtype=cp.float32)
        n4 = np.int64(buf.size // 4)
        for u, fn in kernels.items():
            for threads, per_sm in SHAPES:
                blocks = sms * per_sm
                args = (buf, n4, np.int32(PASSES), sink)
                fn((blocks,), (threads,), args)  # warm-up: data into L2
                times = []
                for _ in range(REPS):
                    start.record()
                    fn((blocks,), (threads,), args)
                    stop.record()
                    stop.synchronize()
                    times.append(cp.cuda.get_elapsed_time(start, stop))
                ms = float(np.median(times))
                tbps = size * MIB * PASSES / (ms * 1e-3) / 1e12
                rows.append({"size_mib": size, "unroll": u, "threads": threads, "blocks_per_sm": per_sm,
                             "bytes_in_flight_per_sm": threads * per_sm * u * 16, "ms": ms, "tbps": tbps})
                print(f"  {size:3d} MiB  unroll {u}  {threads:4d} thr x {per_sm} blk/SM "
                      f"({threads * per_sm * u * 16 // 1024:4d} KiB in flight/SM)  {tbps:6.2f} TB/s")
        del buf
        cp.get_default_memory_pool().free_all_blocks()
    best = max(rows, key=lambda r: r["tbps"])
    print(f"best: {best['tbps']:.2f} TB/s ({best['size_mib']} MiB, unroll {best['unroll']}, "
          f"{best['threads']} threads x {best['blocks_per_sm']} blocks/SM)")
    record = {"probe": "l2_bandwidth", "gpu": name, "sm_count": sms, "l2_bytes": l2, "passes": PASSES,
              "reps": REPS, "best_tbps": best["tbps"], "best": best, "results": rows}
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "l2_bandwidth.json"), "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {os.path.join(out, 'l2_bandwidth.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
