"""The SM clock and board power while a GEMM runs back to back: what the tensor-core peak is at
the clock the H200 holds under that load (issue 13's 856 TFLOP/s, the seed's 86% of the 989 of
the datasheet, is a fraction of a peak that moves with the clock).

For each stage and shape: the launch is prepared once, then repeated for about `--seconds` while
`nvidia-smi` samples clocks.sm, power.draw, power.limit, temperature and the active clock-event
(throttle) reasons every 50 ms, in two modes: "loop", back to back (CUDA events around the whole
loop), and "bench", as `python -m stages bench` times (timing.py: the L2 flushed by a 256 MiB fill
before each launch, events around the launch alone, the median). The clock's
peak: 132 SMs x 4096 dense fp16 FLOP per SM per clock (989.4 TFLOP/s / (132 x 1830 MHz), the
datasheet's figure at its boost clock) x the median sampled clock.

    python3 scripts/clock_probe.py --out DIR      ->  DIR/clock-probe.json

--cases STAGE[,NAME=VALUE...]:MxNxK[:EPILOGUE];... picks other launches, e.g.
"v5_fused_epilogue:4096x4096x4096:bias+gelu_tanh;v5_fused_epilogue,EPI_OVERLAP=2,STREAMK=0:4096x4096x4096:bias+gelu_tanh"
(EPILOGUE in bench's spelling: bias, bias+ACTIVATION, ACTIVATION, ...; a float16 N(0, 1) bias).
Each row also gives the energy of one launch, the median board power times the time per launch:
where the board holds its power limit, a launch that needs more energy takes longer whatever
overlaps what. Each launch's output is judged once against float64 first (the row's `check`).
"""
import argparse
import json
import os
import secrets
import shutil
import subprocess
import time

import numpy as np

import stages
from stages.core import gpu
from stages.tools import bench, records, verify
from stages.tools.timing import L2Flusher, tflops, time_gpu

FLOP_PER_SM_CLOCK = 4096  # 989.4e12 / (132 * 1.83e9): the datasheet's dense fp16 rate per SM and clock
FIELDS = "clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active"

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--seconds", type=float, default=2.5)
p.add_argument("--cases", default="v5_fused_epilogue:8192x8192x8192;cublas:8192x8192x8192;"
                                  "v5_fused_epilogue:4096x4096x4096;cublas:4096x4096x4096")
p.add_argument("--modes", default="loop,bench")
args = p.parse_args()


def parse_case(text):
    """(stage, label, (m, n, k), epilogue spec, its bias) of one --cases entry."""
    parts = text.split(":")
    name, *sets = parts[0].split(",")
    st = stages.get(name)
    if sets:
        st = st.variant(**{k: int(v) for k, v in (x.split("=") for x in sets)})
    m, n, k = (int(x) for x in parts[1].lower().split("x"))
    es = records.parse_epilogue(parts[2] if len(parts) > 2 else records.PLAIN_WORD)
    bias = bench.random_bias(n, secrets.randbits(63), cp) if es.bias else None
    return st, text, (m, n, k), es, bias


cp = gpu.cupy()
dev = gpu.current()
smi = shutil.which("nvidia-smi")
flush = L2Flusher(dev.l2_bytes)
rows = []
for st, case, (m, n, k), es, bias in [parse_case(c) for c in args.cases.split(";") if c]:
    name, kw = st.name, es.kwargs(bias)
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    out = cp.full((m, n), np.nan, cp.float16)  # poisoned: the first run's output is judged below
    run = st.prepare(a, b, out, **kw)
    run()
    cp.cuda.get_current_stream().synchronize()
    chk = bench.judge(st, es, m, n, k, a, b, bias, out)
    check = "ok" if chk.passed else "FAIL " + chk.reason
    for _ in range(19):
        run()
    cp.cuda.get_current_stream().synchronize()
    for mode in args.modes.split(","):
        gemm_s = 2 * m * n * k / 700e12
        per = max(1, int(args.seconds / (gemm_s if mode == "loop" else gemm_s + 0.0001)))
        sampler = subprocess.Popen([smi, f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits", "-lms", "50"],
                                   stdout=subprocess.PIPE, text=True) if smi else None
        time.sleep(0.2)
        if mode == "loop":
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(per):
                run()
            end.record()
            end.synchronize()
            ms = cp.cuda.get_elapsed_time(start, end) / per
        else:
            ms = time_gpu(run, reps=per, warmup=0, flush=flush).median
        samples = []
        if sampler:
            sampler.terminate()
            text = sampler.communicate(timeout=10)[0]
            for line in text.strip().splitlines():
                f = [x.strip() for x in line.split(",")]
                try:
                    samples.append({"sm_mhz": float(f[0]), "mem_mhz": float(f[1]), "power_w": float(f[2]),
                                    "power_limit_w": float(f[3]), "temp_c": float(f[4]), "reasons": f[5]})
                except (ValueError, IndexError):
                    continue
        busy = samples[len(samples) // 4:]  # past the first quarter (the loop's ramp)
        clk = float(np.median([s["sm_mhz"] for s in busy])) if busy else None
        tf = tflops(m, n, k, ms)
        peak = 132 * FLOP_PER_SM_CLOCK * clk * 1e6 / 1e12 if clk else None
        power = float(np.median([s["power_w"] for s in busy])) if busy else None
        row = {"stage": name, "case": case, "m": m, "n": n, "k": k, "mode": mode, "launches": per, "ms_per_launch": ms, "tflops": tf,
               "sm_mhz_median": clk, "sm_mhz_min": min((s["sm_mhz"] for s in busy), default=None),
               "sm_mhz_max": max((s["sm_mhz"] for s in busy), default=None),
               "power_w_median": power, "mj_per_launch": power * ms if power else None,
               "power_limit_w": busy[0]["power_limit_w"] if busy else None,
               "temp_c_max": max((s["temp_c"] for s in busy), default=None),
               "reasons_seen": sorted({s["reasons"] for s in busy}),
               "peak_tflops_at_clock": peak, "fraction_of_peak_at_clock": tf / peak if peak else None,
               "samples": len(busy), "check": check}
        rows.append(row)
        print(json.dumps(row), flush=True)
    del a, b, out
    cp.get_default_memory_pool().free_all_blocks()

with open(os.path.join(args.out, "clock-probe.json"), "w") as f:
    json.dump({"kind": "clock-probe", "env": records.environment(), "settings": vars(args), "results": rows}, f, indent=1)
