"""What clock do the SMs hold while their tensor cores run flat out, and what is the most a GEMM
could then reach? (v5 README, "The clock under the benchmark, and the seed's 856 TFLOP/s".)

`nvidia-smi` samples the clock every few tens of milliseconds; a 182 us launch at 4096^3 is a
sliver of that. This probe reads the clock from inside the load instead: every SM runs one block
of two warpgroups that stream wgmma.mma_async m64n256k16 from shared memory, as v5's mainloop does
(4 per k-block per warpgroup, both operands 128B-swizzled, random values, each k-block committed
and waited to one group in flight), with no global-memory traffic at all. Thread 0 of each block
reads %clock64 (SM cycles) and %globaltimer (ns) at the start and at the end; their ratio is the
SM clock during the load. The FLOP over the globaltimer span is the tensor rate: no GEMM on this
board can beat it for as long a load.

Control: the same blocks running fmaf chains instead (no tensor core), about as long.

Modes, per length (k-blocks per SM; one is 8 m64n256k16 = 4.2 MFLOP per SM, ~1,024 cycles):
  cool    the GPU idles 0.5 s before each launch (power and clock recover)
  loop    launches back to back (the last half of them kept), as a sustained GEMM runs
  bench   each launch after timing.py's 256 MiB L2 flush (a fill), as `python -m stages bench`

Run on an H100/H200: PYTHONPATH=. python3 probes/tensor_clock.py   (needs CuPy)
Writes $OUT/tensor_clock.json when OUT is set.
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
    sys.exit(f"tensor_clock: needs CuPy: {exc}")

from wgmma_overlap import HELPERS  # (this folder is on sys.path) desc, mma (m64n256k16)

SRC = HELPERS + r"""
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// mode 0: both warpgroups stream wgmmas (k_blocks of 4 m64n256k16 each); 1: fmaf chains instead
extern "C" __global__ void __launch_bounds__(256, 1)
tensor_clock(const __half* __restrict__ src, float* __restrict__ sink, unsigned long long* __restrict__ stamps,
             int mode, int k_blocks) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(smem_raw)) + 1023) & ~1023u;
  for (int i = threadIdx.x; i < 4 * (128 + 256) * 64 / 8; i += 256) {
    const uint4 v = reinterpret_cast<const uint4*>(src)[i];
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(base + 16 * i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  const int wg = threadIdx.x / 128;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  __syncthreads();
  const unsigned long long c0 = clock64(), g0 = gtimer();
  if (mode == 0) {
    for (int kb = 0; kb < k_blocks; ++kb) {
      const unsigned stage = base + (kb % 4) * (128 + 256) * 128;  // 48 KiB per k-block, as v5's ring
      const unsigned a = stage + wg * 64 * 128, b = stage + 128 * 128;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma(d, desc(a + kk * 32), desc(b + kk * 32));
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  } else {
    const float c = 1.0f + 1e-30f * static_cast<float>(c0 & 1);
    for (int kb = 0; kb < k_blocks; ++kb) {
#pragma unroll
      for (int r = 0; r < 32; ++r) {
#pragma unroll
        for (int i = 0; i < 16; ++i) d[i] = fmaf(d[i], c, 1e-7f);
      }
    }
  }
  __syncthreads();
  const unsigned long long c1 = clock64(), g1 = gtimer();
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += d[i];
  sink[blockIdx.x * 256 + threadIdx.x] = s;
  if (threadIdx.x == 0) {
    stamps[4 * blockIdx.x] = c0; stamps[4 * blockIdx.x + 1] = c1;
    stamps[4 * blockIdx.x + 2] = g0; stamps[4 * blockIdx.x + 3] = g1;
  }
}
"""

WGMMA_FLOP = 2 * 64 * 256 * 16
LENGTHS = (64, 256, 1024, 4096)  # k-blocks per SM: ~35 us to ~2.6 ms at 1.6 GHz
FLOP_PER_SM_CLOCK = 4096  # the datasheet's 989.4 TFLOP/s / (132 SMs x 1830 MHz), dense fp16


def main() -> int:
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    rng = np.random.default_rng()
    src = cp.asarray(rng.standard_normal(4 * (128 + 256) * 64).astype(np.float16))
    smem = 4 * (128 + 256) * 128 + 1024
    fn = cp.RawModule(code=SRC, options=("-arch=sm_90a", "-std=c++17")).get_function("tensor_clock")
    fn.max_dynamic_shared_size_bytes = smem
    sink = cp.empty(sms * 256, cp.float32)
    stamps = cp.zeros(sms * 4, cp.uint64)
    fill = cp.empty(256 << 20, cp.uint8)  # timing.py's flush: a 256 MiB fill before each launch
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def launch(mode, k_blocks, n=1, flush=False):
        """n launches back to back (each after the flush where asked), no host wait between them;
        the stamps and events are the last one's."""
        for i in range(n):
            if flush:
                fill.fill(1)
            if i == n - 1:
                start.record()
            fn((sms,), (256,), (src, sink, stamps, np.int32(mode), np.int32(k_blocks)), shared_mem=smem)
        stop.record()
        stop.synchronize()
        st = stamps.get().reshape(sms, 4).astype(np.float64)
        cyc, ns = st[:, 1] - st[:, 0], st[:, 3] - st[:, 2]
        span_ns = float(st[:, 3].max() - st[:, 2].min())  # first start to last end, all SMs
        return {"event_us": cp.cuda.get_elapsed_time(start, stop) * 1e3, "span_us": span_ns / 1e3,
                "mhz": float(np.median(cyc / ns) * 1e3), "mhz_min": float((cyc / ns).min() * 1e3),
                "cycles": float(np.median(cyc))}

    launch(0, 64, n=3)
    results = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "sms": sms,
               "flop_per_sm_clock": FLOP_PER_SM_CLOCK, "rows": []}
    for mode, kind in ((0, "wgmma"), (1, "fma")):
        for k_blocks in LENGTHS:
            for how in ("cool", "loop", "bench"):
                samples = []
                for _ in range(5):
                    if how == "cool":
                        time.sleep(0.5)
                        samples.append(launch(mode, k_blocks))
                    else:  # ~0.3 s of launches, the last one read
                        n = max(5, int(0.3e6 / (k_blocks * 0.65)))
                        samples.append(launch(mode, k_blocks, n=n, flush=(how == "bench")))
                r = {"kind": kind, "k_blocks": k_blocks, "mode": how, "samples": len(samples)}
                for key in ("event_us", "span_us", "mhz", "mhz_min", "cycles"):
                    r[key] = float(np.median([s[key] for s in samples]))
                if mode == 0:
                    flop = sms * k_blocks * 8 * WGMMA_FLOP
                    r["tflops_span"] = flop / (r["span_us"] * 1e-6) / 1e12
                    r["flop_per_cycle_per_sm"] = k_blocks * 8 * WGMMA_FLOP / r["cycles"]
                    r["peak_tflops_at_clock"] = sms * FLOP_PER_SM_CLOCK * r["mhz"] * 1e6 / 1e12
                results["rows"].append(r)
                print(json.dumps(r), flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "tensor_clock.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
