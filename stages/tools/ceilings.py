"""The roofs a roofline is drawn against, measured on this GPU (CUDA events, medians):

* HBM bandwidth: a 2 GiB device-to-device copy (bytes read + written), far beyond L2;
* L2 bandwidth: a kernel that reads a 16 MiB buffer (L2-resident) 64 times, 16 bytes a load;
* fp32 CUDA-core FMA rate: a kernel of independent FFMA chains, nothing else;
* fp16 tensor-core rate: cuBLAS at 8192^3 (the fastest GEMM we have; a lower bound on the roof).

Datasheet values sit beside them in the record so plots can draw both.
"""
from __future__ import annotations

import numpy as np

import stages
from stages.core import compiler, gpu

from . import bench, records, verify
from .timing import L2Flusher, tflops, time_gpu

FFMA_SRC = r"""
// FFMA_CHAINS independent multiply-add chains per thread: enough to cover the 4-cycle latency.
extern "C" __global__ void ffma_peak(float* out, int iters) {
  float v[FFMA_CHAINS];
#pragma unroll
  for (int c = 0; c < FFMA_CHAINS; ++c) v[c] = threadIdx.x * 1e-3f + c;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < FFMA_CHAINS; ++c) v[c] = fmaf(v[c], 0.999f, 1e-4f);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < FFMA_CHAINS; ++c) s += v[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chains alive
}

// Every thread sums float4s of an L2-resident buffer, grid-stride, `passes` times over.
extern "C" __global__ void l2_read(const float4* __restrict__ buf, long long n4, int passes, float* out) {
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; ++p)
#pragma unroll 4
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
      const float4 v = __ldcg(buf + i);  // cache in L2 only: measures L2, not L1
      acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}
"""


def measure(reps: int = 10) -> dict:
    cp = gpu.cupy()
    dev = gpu.current()
    out = {"gpu": dev.name, "datasheet": bench.datasheet(dev.name)}

    def median_ms(fn):  # events around each call, no L2 flush: these kernels set their own traffic
        return time_gpu(fn, reps=reps, warmup=1).median

    n = 1 << 30  # 2 GiB of fp16 each way
    src, dst = cp.ones(n, dtype=cp.float16), cp.empty(n, dtype=cp.float16)
    ms = median_ms(lambda: cp.copyto(dst, src))
    out["hbm_copy_tbps"] = 2 * src.nbytes / (ms * 1e-3) / 1e12
    del src, dst

    chains, iters, threads = 8, 4096, 256
    blocks = dev.sm_count * 8
    mod = compiler.compile_cubin(FFMA_SRC, "ceilings", gpu.compile_arch(dev, gpu.Requirement()),
                                 {"FFMA_CHAINS": chains})
    sink = cp.empty(blocks * threads, dtype=cp.float32)

    l2_read = compiler.load_function(mod, "l2_read", dev.id)
    buf, passes = cp.ones(4 << 20, dtype=cp.float32), 64  # 16 MiB
    ms = median_ms(lambda: l2_read((blocks,), (threads,), (buf, np.int64(buf.size // 4), np.int32(passes), sink)))
    out["l2_read_tbps"] = buf.nbytes * passes / (ms * 1e-3) / 1e12
    del buf

    fn = compiler.load_function(mod, "ffma_peak", dev.id)
    ms = median_ms(lambda: fn((blocks,), (threads,), (sink, np.int32(iters))))
    out["fp32_ffma_tflops"] = 2.0 * chains * iters * blocks * threads / (ms * 1e-3) / 1e12

    m = 8192
    a, b = verify.random_operands(m, m, m, 1, cp)
    run = stages.get("cublas").prepare(a, b)
    t = time_gpu(run, reps=20, warmup=3, flush=L2Flusher(dev.l2_bytes))
    out["fp16_tensor_cublas_tflops"] = tflops(m, m, m, t.median)
    return out


def record() -> dict:
    """Measure and wrap as a results/ record (kind "ceilings")."""
    rec = records.new_record("ceilings")
    rec["ceilings"] = measure()
    return rec
