"""v5's shape rule, measured: every tile (BM x BN) and split of K against the rule's own choice
(AUTO=1) and cuBLAS, on the issue's shapes; then the fused epilogues against what a torch user
already has. One call on a GPU machine; records go to --out (a tune record per shape group).

    python3 scripts/v5_shapes.py --out DIR [--quick]
"""
import argparse
import json
import os
import secrets

try:  # before CuPy and numba (see stages/__main__.py): torch's rows need it importable
    import torch
    import torch.nn.functional as F
except Exception as exc:  # noqa: BLE001
    torch, TORCH_WHY = None, str(exc)

import stages
from stages.core import gpu
from stages.tools import bench, records, verify
from stages.tools.timing import L2Flusher, time_gpu, tflops

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--quick", action="store_true")
p.add_argument("--skip-tiles", action="store_true")
p.add_argument("--skip-fused", action="store_true", help="no fused-epilogue timing (bench --epilogue does it)")
p.add_argument("--full", action="store_true", help="every tile and split (default: the rule's choice, v4, the best few)")
args = p.parse_args()

V5 = stages.get("v5_fused_epilogue")
import stages.v5_fused_epilogue as mod  # noqa: E402  (TILES, shape_config)
dev = gpu.current()

BIG = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]
SMALL_M = [(128, 14336, 4096), (16, 14336, 4096), (1, 4096, 4096)]
TAILS = [(4095, 4097, 4104), (1000, 1000, 1000)]


def variants(splits, tiles=None):
    out = []
    for (bm, bn), stg in mod.TILES.items():
        if tiles and (bm, bn) not in tiles:
            continue
        for s in splits:
            out.append(V5.variant(AUTO=0, BM=bm, BN=bn, STAGES=stg, SPLIT_K=s))
    return out


V4 = [stages.get("v4_swizzle_pipeline")]
if args.full:
    groups = [("big", BIG, variants([1])), ("small_m", SMALL_M, variants([1, 2, 4, 8])), ("tails", TAILS, variants([1]))]
else:
    groups = [("big", BIG, V4), ("small_m", SMALL_M, variants([1], [(64, 128), (64, 256), (128, 128)]) + variants([4, 8], [(64, 128)])),
              ("tails", TAILS, variants([1], [(128, 128), (128, 256)]))]
if args.quick:
    groups = [("big", BIG[:1], V4), ("small_m", SMALL_M[:2], [])]
for name, shapes, extra in groups:
    for (m, n, k) in shapes:
        print(f"AUTO {m}x{n}x{k}: BM, BN, STAGES, splits = {mod.shape_config(m, n, k, V5.defines, dev)}",
              flush=True)
    if args.skip_tiles:
        continue
    rec = bench.run_bench([V5] + extra, shapes=shapes, reps=20, warmup=3, kind="tune")
    path = os.path.join(args.out, f"v5-shapes-{name}.json")
    with open(path, "w") as f:
        json.dump(rec, f, indent=1)
    for e in rec["results"]:
        if e["status"] == "ok":
            print(f"{e['stage']:70s} {e['m']}x{e['n']}x{e['k']:<6} {e['ms_median']*1e3:9.1f} us "
                  f"{e['tflops']:7.1f} TF  x{(e.get('ratio_cublas') or 0):.3f}", flush=True)
        else:
            print(f"{e['stage']:70s} {e.get('m')}x{e.get('n')}x{e.get('k')} {e['status']}: {e.get('reason','')[:200]}", flush=True)

# ---- fused epilogues against torch --------------------------------------------------------------
if args.skip_fused:
    raise SystemExit(0)
cp = gpu.cupy()
flush = L2Flusher(dev.l2_bytes)
if torch is None:
    print("torch unavailable:", TORCH_WHY)
for (m, n, k) in ([(4096, 4096, 4096), (8192, 8192, 8192)] if not args.quick else [(4096, 4096, 4096)]):
    a, b = verify.random_operands(m, n, k, secrets.randbits(63), cp)
    bias = cp.random.standard_normal(n, dtype=cp.float32).astype(cp.float16)
    out = cp.empty((m, n), cp.float16)
    rows = {}
    rows["v5 plain"] = time_gpu(V5.prepare(a, b, out), flush=flush).median
    for act in ("gelu_tanh", "gelu", "relu", "silu"):
        rows[f"v5 bias+{act}"] = time_gpu(V5.prepare(a, b, out, bias=bias, activation=act), flush=flush).median
    rows["cublas plain"] = time_gpu(stages.get("cublas").prepare(a, b, out), flush=flush).median
    if torch is not None:
        ta, tb, tbias = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda"), torch.as_tensor(bias, device="cuda")
        with torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr):
            rows["torch linear+bias"] = time_gpu(lambda: F.linear(ta, tb, tbias), flush=flush).median
            rows["torch _addmm_activation gelu(tanh)"] = time_gpu(
                lambda: torch._addmm_activation(tbias, ta, tb.t(), use_gelu=True), flush=flush).median
            rows["torch linear then gelu"] = time_gpu(lambda: F.gelu(F.linear(ta, tb, tbias)), flush=flush).median
            rows["torch linear then gelu_tanh"] = time_gpu(
                lambda: F.gelu(F.linear(ta, tb, tbias), approximate="tanh"), flush=flush).median
            ref = F.gelu(F.linear(ta.float(), tb.float(), tbias.float()), approximate="tanh")
            got = torch.as_tensor(V5.gemm(a, b, bias=bias, activation="gelu_tanh"), device="cuda").float()
            print(f"  v5 vs torch fp32 gelu_tanh: max abs diff {float((got - ref).abs().max()):.3e}")
    print(f"fused epilogues {m}x{n}x{k}:")
    for key, ms in rows.items():
        print(f"  {key:40s} {ms*1e3:8.1f} us  {tflops(m, n, k, ms):7.1f} TF  x plain v5 {rows['v5 plain']/ms:.3f}", flush=True)
    with open(os.path.join(args.out, f"v5-fused-{m}.json"), "w") as f:
        json.dump({"shape": [m, n, k], "ms": rows, "env": records.environment()}, f, indent=1)
