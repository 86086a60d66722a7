"""Does a warpgroup's own math run while its wgmmas are in flight? (v5 README, "Open questions":
the fused epilogue's cost, and EPI_OVERLAP.)

One warpgroup per block issues W (4, 8, 16, 64) wgmma.mma_async m64n256k16 (fp16 in, fp32
accumulators, both operands in shared memory in the 128-byte swizzle, random values), commits them
as one group, then runs arithmetic on other registers, then waits for the group
(wgmma.wait_group 0); 20 such rounds per launch. Timed with clock64 inside the block (SM
cycles per round, the median over blocks):

  mma        the wgmmas alone (issue, then wait)
  arith      the arithmetic alone, sized to about mma's cycles on the same grid: "fma", 8
             independent chains of fmaf per thread, or "mufu", the epilogue's kind of work,
             x / (1 + 2^-x) per step (ex2.approx and rcp.approx: two MUFU and a few FMA-pipe
             instructions)
  both       the wgmmas issued, then the arithmetic, then the wait

If the tensor cores work while the warps compute, both takes about max(mma, arith) cycles; if
not, about mma + arith. hidden_cycles = mma + arith - both, per W: how much of a warpgroup's own
work runs while its wgmmas do. Run on one block (one SM, far from the board's power limit) and on one block per SM
(all SMs at once, as a GEMM runs).

Run on an H100/H200: PYTHONPATH=. python3 probes/wgmma_overlap.py   (needs CuPy)
Writes $OUT/wgmma_overlap.json when OUT is set.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

try:
    import cupy as cp
except ImportError as exc:  # pragma: no cover - needs a GPU machine
    sys.exit(f"wgmma_overlap: needs CuPy: {exc}")

ACC = ", ".join(f"%{i}" for i in range(128))
ACC_OUT = ", ".join(f'"+f"(d[{i}])' for i in range(128))

# The device helpers (probes/wgmma_two_groups.py builds on them too): the K-major, 128B-swizzled
# shared-memory descriptor, one m64n256k16 into 128 accumulators, ex2 and rcp.
HELPERS = r"""
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned long long desc(unsigned addr) {  // K-major, 128B swizzle
  return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void mma(float (&d)[128], unsigned long long da, unsigned long long db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {ACC}, %128, %129, p, 1, 1, 0, 0;\n}\n"
               : ACC_OUT : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ float ex2(float v) { float r; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); return r; }
__device__ __forceinline__ float rcp(float v) { float r; asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); return r; }
""".replace("{ACC}", "{" + ACC + "}").replace("ACC_OUT", ACC_OUT)

SRC = HELPERS + r"""
// mode bit 0: issue the wgmmas; bit 1: fma arithmetic; bit 2: MUFU arithmetic
extern "C" __global__ void __launch_bounds__(128, 1)
overlap(const __half* __restrict__ src, float* __restrict__ sink, long long* __restrict__ cycles,
        int mode, int iters, int rounds) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(smem_raw)) + 1023) & ~1023u;
  // A 64 x 64 and B 256 x 64 fp16 tiles (40 KiB), copied from global (random values)
  for (int i = threadIdx.x; i < (64 + 256) * 64 / 8; i += 128) {
    const uint4 v = reinterpret_cast<const uint4*>(src)[i];
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(base + 16 * i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = 1e-3f * (threadIdx.x + j);
  asm volatile("bar.sync 1, 128;" ::: "memory");
  const long long t0 = clock64();
  float acc_x = 0.0f;
  for (int r = 0; r < rounds; ++r) {
    if (mode & 1) {  // WGMMAS (a define) of them, unrolled: one pipeline stage for ptxas
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int w = 0; w < WGMMAS; ++w) mma(d, desc(base + (w % 4) * 32), desc(base + 64 * 128 + (w % 4) * 32));
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    }
    // The arithmetic: its start depends on the clock read after the issue, its result feeds the
    // wait's asm, so the compiler can move it neither before the wgmmas nor after the wait.
    long long t1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1));
    const float c = 1.0f + 1e-30f * static_cast<float>(t1 & 1);
    if (mode & 2) {
      for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], c, 1e-7f);
      }
    }
    if (mode & 4) {
      for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = x[j] * rcp(1.0f + ex2(-c * x[j])) + 0.5f;
      }
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) acc_x += x[j];
    asm volatile("wgmma.wait_group.sync.aligned 0;" :: "f"(acc_x) : "memory");
  }
  const long long t2 = clock64();
  float s = acc_x;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += d[i];
  sink[blockIdx.x * 128 + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = (t2 - t0) / rounds;
}
"""

ROUNDS = 20  # per launch; cycles are per round
WGMMA_COUNTS = (4, 8, 16, 64)  # wgmmas in the group (m64n256k16: ~130 cycles each at full rate)


def main() -> int:
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    reps = 7
    rng = np.random.default_rng()
    src = cp.asarray(rng.standard_normal((64 + 256) * 64).astype(np.float16))
    smem = 40 * 1024 + 1024
    results = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "rounds": ROUNDS, "rows": []}
    for wgmmas in WGMMA_COUNTS:
        mod = cp.RawModule(code=SRC, options=("-arch=sm_90a", "-std=c++17", f"-DWGMMAS={wgmmas}"))
        fn = mod.get_function("overlap")
        fn.max_dynamic_shared_size_bytes = smem
        for blocks in (1, sms):
            sink = cp.empty(blocks * 128, cp.float32)
            cycles = cp.empty(blocks, cp.int64)

            def run(mode, iters):
                fn((blocks,), (128,), (src, sink, cycles, np.int32(mode), np.int32(iters), np.int32(ROUNDS)),
                   shared_mem=smem)
                cp.cuda.get_current_stream().synchronize()
                return float(np.median(cycles.get()))
            for _ in range(3):
                run(1, 0)
            mma_cyc = np.median([run(1, 0) for _ in range(reps)])
            # the arithmetic sized to about the wgmmas' time, measured alone on this grid
            for kind, bit in (("fma", 2), ("mufu", 4)):
                per_iter = (run(bit, 400) - run(bit, 200)) / 200
                iters = max(1, int(round(mma_cyc / per_iter)))
                row = {"wgmmas": wgmmas, "blocks": blocks, "kind": kind, "iters": iters}
                for label, mode in (("mma", 1), ("arith", bit), ("both", 1 | bit)):
                    row[label] = float(np.median([run(mode, iters) for _ in range(reps)]))
                row["hidden_cycles"] = row["mma"] + row["arith"] - row["both"]
                row["hidden_fraction"] = row["hidden_cycles"] / min(row["mma"], row["arith"])
                results["rows"].append(row)
                print(json.dumps(row), flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "wgmma_overlap.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
