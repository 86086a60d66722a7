"""The roofs a roofline is drawn against, measured on this GPU (CUDA events, medians):

* HBM bandwidth: a 2 GiB device-to-device copy (bytes read + written), far beyond L2;
* L2 bandwidth: an 8 MiB copy repeated, so source and destination stay L2-resident;
* fp32 CUDA-core FMA rate: a kernel of independent FFMA chains, nothing else;
* fp16 tensor-core rate: cuBLAS at 8192^3 (the fastest GEMM we have; a lower bound on the roof).

Datasheet values sit beside them in the record so plots can draw both.
"""
from __future__ import annotations

import numpy as np

from . import bench, compiler, gpu

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
"""
DATASHEET = {"H200": {"hbm_tbps": 4.8, "fp32_tflops": 66.9, "fp16_tensor_tflops": 989.4},
             "H100": {"hbm_tbps": 3.35, "fp32_tflops": 66.9, "fp16_tensor_tflops": 989.4}}


def _events_ms(fn, reps: int) -> float:
    cp = gpu.cupy()
    fn()
    samples = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        samples.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(samples))


def measure(reps: int = 10) -> dict:
    cp = gpu.cupy()
    dev = gpu.current()
    out = {"gpu": dev.name, "datasheet": next((v for k, v in DATASHEET.items() if k in dev.name), None)}

    n = 1 << 30  # 2 GiB of fp16 each way
    src, dst = cp.ones(n, dtype=cp.float16), cp.empty(n, dtype=cp.float16)
    ms = _events_ms(lambda: cp.copyto(dst, src), reps)
    out["hbm_copy_tbps"] = 2 * src.nbytes / (ms * 1e-3) / 1e12
    del src, dst

    small = 4 << 20  # 8 MiB each way, 16 MiB together: well inside the 60 MiB L2
    src, dst = cp.ones(small, dtype=cp.float16), cp.empty(small, dtype=cp.float16)
    loops = 50

    def l2_copies():
        for _ in range(loops):
            cp.copyto(dst, src)

    ms = _events_ms(l2_copies, reps)
    out["l2_copy_tbps"] = 2 * src.nbytes * loops / (ms * 1e-3) / 1e12
    del src, dst

    chains, iters, threads = 8, 4096, 256
    blocks = dev.sm_count * 8
    mod = compiler.compile_cubin(FFMA_SRC, "ffma_peak", gpu.compile_arch(dev, gpu.Requirement()),
                                 {"FFMA_CHAINS": chains})
    fn = compiler.load_function(mod, "ffma_peak", dev.id)
    buf = cp.empty(blocks * threads, dtype=cp.float32)
    ms = _events_ms(lambda: fn((blocks,), (threads,), (buf, np.int32(iters))), reps)
    out["fp32_ffma_tflops"] = 2.0 * chains * iters * blocks * threads / (ms * 1e-3) / 1e12

    import stages  # noqa: PLC0415

    from . import verify  # noqa: PLC0415

    m = 8192
    a, b = verify.random_operands(m, m, m, 1, cp)
    run = stages.get("cublas").prepare(a, b)
    t = bench.time_gpu(run, reps=20, warmup=3, flush=bench.L2Flusher(dev.l2_bytes))
    out["fp16_tensor_cublas_tflops"] = bench.tflops(m, m, m, t.median)
    return out
