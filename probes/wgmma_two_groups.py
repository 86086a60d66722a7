"""Can one warpgroup keep an SM's tensor cores as busy as two can, and does the other warpgroup's
arithmetic run meanwhile? (v5 README, "Open questions": the epilogue under the wgmmas, STAGGER.)

A block of two warpgroups per SM (one block per SM, every SM at once, as a GEMM runs). A
warpgroup that "streams" issues the mainloop of a v5 consumer: per k-block 4 wgmma.mma_async
m64n256k16 (fp16 in, fp32 accumulators, both operands in shared memory in the 128-byte swizzle,
random values), commits them as a group, then waits until only that group is in flight
(wgmma.wait_group 1), K_BLOCKS times. A warpgroup that computes runs the epilogue's kind of
work: x / (1 + 2^-x) per step (ex2.approx and rcp.approx: two MUFU and a few FMA-pipe
instructions), 8 independent chains per thread. Timed with clock64 inside the block (SM cycles,
the median over blocks and repeats; each warpgroup's time from a common start):

  one         warpgroup 0 streams, warpgroup 1 idles (-narrow: each k-step two m64n128k16, A's
              two 64-row halves against the warpgroup's own 128 rows of B: a 128 x 256 tile split
              by columns instead of rows, 20% more shared-memory operand bytes per FLOP)
  two         both stream, each its own accumulators (the SM's wgmmas doubled)
  mufu        warpgroup 1 computes (sized to about `one`'s cycles), warpgroup 0 idles
  one+mufu    warpgroup 0 streams while warpgroup 1 computes

`two` against `one`, per wgmma: whether one warpgroup alone leaves the tensor cores idle.
`one+mufu` against max(one, mufu): whether another warpgroup's arithmetic runs under the wgmmas.

Run on an H100/H200: PYTHONPATH=. python3 probes/wgmma_two_groups.py   (needs CuPy)
Writes $OUT/wgmma_two_groups.json when OUT is set.
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
    sys.exit(f"wgmma_two_groups: needs CuPy: {exc}")

from wgmma_overlap import HELPERS  # (this folder is on sys.path) desc, mma (m64n256k16), ex2, rcp

SRC = HELPERS + r"""
// m64n128k16: the accumulators' first or second half (NARROW: a warpgroup's 128 x 128 of a
// 128 x 256 tile split by columns, two of these per k-step on A's two 64-row halves)
template <int H>
__device__ __forceinline__ void mma128(float (&d)[128], unsigned long long da, unsigned long long db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {ACC64}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : ACC64_OUT : "l"(da), "l"(db), "r"(1));
}

// stream: bit w set = warpgroup w streams wgmmas; mufu: bit w set = warpgroup w computes
extern "C" __global__ void __launch_bounds__(256, 1)
two_groups(const __half* __restrict__ src, float* __restrict__ sink, long long* __restrict__ cycles,
           int stream, int mufu, int k_blocks, int iters) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(smem_raw)) + 1023) & ~1023u;
  // four k-blocks' A (64 x 64 per warpgroup, two of them) and B (256 x 64) fp16 tiles, random
  for (int i = threadIdx.x; i < 4 * (128 + 256) * 64 / 8; i += 256) {
    const uint4 v = reinterpret_cast<const uint4*>(src)[i];
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(base + 16 * i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = 1e-3f * (threadIdx.x % 128 + j);
  __syncthreads();
  const long long t0 = clock64();
  if ((stream >> wg) & 1) {
    for (int kb = 0; kb < k_blocks; ++kb) {
      const unsigned stage = base + (kb % 4) * (128 + 256) * 128;  // 48 KiB per k-block, as v5's ring
      [[maybe_unused]] const unsigned a = stage + wg * 64 * 128, b = stage + 128 * 128;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#if NARROW  // rows 0-63 and 64-127 of A against this warpgroup's 128 rows of B
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        mma128<0>(d, desc(stage + kk * 32), desc(b + wg * 128 * 128 + kk * 32));
        mma128<1>(d, desc(stage + 64 * 128 + kk * 32), desc(b + wg * 128 * 128 + kk * 32));
      }
#else
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma(d, desc(a + kk * 32), desc(b + kk * 32));
#endif
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  if ((mufu >> wg) & 1) {
    const float c = 1.0f + 1e-30f * static_cast<float>(t0 & 1);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
      for (int j = 0; j < 8; ++j) x[j] = x[j] * rcp(1.0f + ex2(-c * x[j])) + 0.5f;
    }
  }
  const long long t1 = clock64();
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += x[j];
#pragma unroll
  for (int i = 0; i < 128; ++i) s += d[i];
  sink[blockIdx.x * 256 + threadIdx.x] = s;
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 2 + wg] = t1 - t0;
}
"""
# mma128<H>: registers d[64 H .. 64 H + 63]
SRC = SRC.replace("{ACC64}", "{" + ", ".join(f"%{i}" for i in range(64)) + "}").replace(
    "ACC64_OUT", ", ".join(f'"+f"(d[64 * H + {i}])' for i in range(64)))

K_BLOCKS = 256  # k-blocks per launch: 4 m64n256k16 each per streaming warpgroup
WGMMA_FLOP = 2 * 64 * 256 * 16


def main() -> int:
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    reps = 9
    rng = np.random.default_rng()
    src = cp.asarray(rng.standard_normal(4 * (128 + 256) * 64).astype(np.float16))
    smem = 4 * (128 + 256) * 128 + 1024
    fns = {}
    for narrow in (0, 1):
        mod = cp.RawModule(code=SRC, options=("-arch=sm_90a", "-std=c++17", f"-DNARROW={narrow}"))
        fns[narrow] = mod.get_function("two_groups")
        fns[narrow].max_dynamic_shared_size_bytes = smem
    fn = fns[0]
    sink = cp.empty(sms * 256, cp.float32)
    cycles = cp.empty(sms * 2, cp.int64)

    def run(stream, mufu, iters=0, narrow=0):
        fns[narrow]((sms,), (256,), (src, sink, cycles, np.int32(stream), np.int32(mufu), np.int32(K_BLOCKS),
                            np.int32(iters)), shared_mem=smem)
        cp.cuda.get_current_stream().synchronize()
        c = cycles.get().reshape(sms, 2)
        return float(np.median(c.max(axis=1))), [float(np.median(c[:, w])) for w in (0, 1)]

    for _ in range(3):
        run(1, 0)
    results = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "k_blocks": K_BLOCKS, "blocks": sms, "reps": reps, "rows": []}

    def row(label, stream, mufu, iters, wgmmas, narrow=0):
        samples = [run(stream, mufu, iters, narrow) for _ in range(reps)]
        block = float(np.median([s[0] for s in samples]))
        r = {"case": label, "cycles": block, "wg0_cycles": float(np.median([s[1][0] for s in samples])),
             "wg1_cycles": float(np.median([s[1][1] for s in samples])), "wgmmas_per_sm": wgmmas, "iters": iters}
        if wgmmas:
            r["cycles_per_wgmma"] = block / wgmmas
            r["flop_per_cycle_per_sm"] = wgmmas * WGMMA_FLOP / block
        results["rows"].append(r)
        print(json.dumps(r), flush=True)
        return r

    one = row("one", 1, 0, 0, 4 * K_BLOCKS)
    row("two", 3, 0, 0, 8 * K_BLOCKS)
    per_iter = (run(0, 2, 400)[0] - run(0, 2, 200)[0]) / 200
    iters = max(1, int(round(one["cycles"] / per_iter)))
    mufu = row("mufu", 0, 2, iters, 0)
    both = row("one+mufu", 1, 2, iters, 4 * K_BLOCKS)
    # the 128 x 256 tile split by columns: each warpgroup two m64n128k16 per k-step, A's two halves
    # against its own 128 rows of B (wgmmas counted as m64n256k16 equivalents: FLOP per SM alike)
    row("one-narrow", 1, 0, 0, 4 * K_BLOCKS, narrow=1)
    row("two-narrow", 3, 0, 0, 8 * K_BLOCKS, narrow=1)
    row("one-narrow+mufu", 1, 2, iters, 4 * K_BLOCKS, narrow=1)
    results["hidden_cycles"] = one["cycles"] + mufu["cycles"] - both["cycles"]
    results["hidden_fraction"] = results["hidden_cycles"] / min(one["cycles"], mufu["cycles"])
    print(json.dumps({k: results[k] for k in ("hidden_cycles", "hidden_fraction")}), flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "wgmma_two_groups.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
