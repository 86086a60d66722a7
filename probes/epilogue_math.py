"""What does v5's epilogue math cost by itself? (v5 README, "The activations: fewer instructions,
one reciprocal for two".)

The epilogue math of a 128 x 256 tile is 128 elements per consumer thread, 256 threads per SM:
y = act(alpha * acc + bias), rounded to fp16. This probe runs exactly that math, taken from
v5's kernel.cu (the "epilogue math" section, `activate_4`, compiled with its ACT and ACT_MATH
defines), on registers, with no GEMM around it: one block of 256 threads per SM (as v5's two
consumer warpgroups), 128 fp32 values per thread (random, N(0, 2^2)), per round every value
goes through fmaf(alpha, v, bias) and the activation in groups of four, and is rounded to fp16
in pairs (cvt.rn.f16x2.f32, as the epilogue's pack) and folded into a checksum; the round index
enters the bias so nothing is hoisted. Timed with clock64 inside the block: SM cycles per round
(= per tile's epilogue math), the median over blocks and launches.

  form      ACT_MATH=0 (CUDA's erff, __expf, __fdividef) or 1 (v5's forms)
  act       none (bias only), relu, gelu, gelu_tanh, silu
  cycles    per round: one tile's epilogue math on one SM, both warpgroups at once
  over_bias cycles minus the bias-only row's: what the activation adds per tile

Run on an H100/H200: PYTHONPATH=. python3 probes/epilogue_math.py   (needs CuPy)
Writes $OUT/epilogue_math.json when OUT is set.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

KERNEL = Path(__file__).resolve().parent.parent / "stages" / "v5_fused_epilogue" / "kernel.cu"


def epilogue_math_source() -> str:
    """kernel.cu's epilogue math: from its banner to the end of activate_4 (before FUSED)."""
    src = KERNEL.read_text()
    return src[src.index("// ---- epilogue math"):src.index("#define FUSED (ACT != 0 || BIAS != 0)")]


PROBE = r"""
extern "C" __global__ void __launch_bounds__(256, 1)
epilogue_math(const float* __restrict__ values, const float* __restrict__ bias, float alpha,
              unsigned* __restrict__ sink, long long* __restrict__ cycles, int rounds) {
  float v[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) v[i] = values[i * 256 + threadIdx.x];
  const float b0 = bias[threadIdx.x % 64], b1 = bias[64 + threadIdx.x % 64];
  unsigned check = 0;
  asm volatile("bar.sync 1, 256;" ::: "memory");
  const long long t0 = clock64();
  for (int r = 0; r < rounds; ++r) {
    const float d = 1e-3f * static_cast<float>(r);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      float x[4] = {fmaf(alpha, v[4 * j], b0 + d), fmaf(alpha, v[4 * j + 1], b1 + d),
                    fmaf(alpha, v[4 * j + 2], b0 + d), fmaf(alpha, v[4 * j + 3], b1 + d)};
#if ACT
      activate_4(x);
#endif
      unsigned h0, h1;
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h0) : "f"(x[1]), "f"(x[0]));
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h1) : "f"(x[3]), "f"(x[2]));
      check ^= h0 ^ (h1 << 1);
    }
  }
  const long long t1 = clock64();
  sink[blockIdx.x * 256 + threadIdx.x] = check;
  if (threadIdx.x == 0) cycles[blockIdx.x] = (t1 - t0) / rounds;
}
"""

ACTS = {"none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
ROUNDS = 64


def probe_source() -> str:
    """The probe's CUDA source: kernel.cu's epilogue math, then the timing kernel."""
    return "#include <cuda_fp16.h>\n" + epilogue_math_source() + PROBE


def main() -> int:
    try:
        import cupy as cp  # noqa: PLC0415  (the GPU side; the source above builds without it)
    except ImportError as exc:  # pragma: no cover - needs a GPU machine
        sys.exit(f"epilogue_math: needs CuPy: {exc}")
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    rng = np.random.default_rng()
    values = cp.asarray((2.0 * rng.standard_normal(128 * 256)).astype(np.float32))
    bias = cp.asarray(rng.standard_normal(128).astype(np.float32))
    sink = cp.empty(sms * 256, cp.uint32)
    cycles = cp.empty(sms, cp.int64)
    source = probe_source()
    results = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "rounds": ROUNDS, "blocks": sms, "threads": 256, "elements_per_thread": 128, "rows": []}
    for form in (0, 1):
        for name, act in ACTS.items():
            if form == 0 and act in (0, 1):  # the same code in both forms
                continue
            mod = cp.RawModule(code=source, options=("-arch=sm_90a", "-std=c++17", f"-DACT={act}",
                                                     f"-DACT_MATH={form}", "-DBN=256"))
            fn = mod.get_function("epilogue_math")

            def run():
                fn((sms,), (256,), (values, bias, np.float32(0.5), sink, cycles, np.int32(ROUNDS)))
                cp.cuda.get_current_stream().synchronize()
                return float(np.median(cycles.get()))
            for _ in range(3):
                run()
            cyc = float(np.median([run() for _ in range(9)]))
            row = {"form": form, "act": name, "cycles": cyc}
            results["rows"].append(row)
    base = next(r["cycles"] for r in results["rows"] if r["act"] == "none")
    for row in results["rows"]:
        row["over_bias"] = row["cycles"] - base
        print(json.dumps(row), flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "epilogue_math.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
