"""How right is each fused GELU where GELU is small? v5's bias+gelu_tanh against cuBLASLt's fused
bias+GELU (torch._addmm_activation(bias, x, W.t(), use_gelu=True), the tanh form) and torch's
F.linear then F.gelu(approximate="tanh"); and v5's erf gelu against torch's F.linear then F.gelu.
(v5 README, "The epilogue math": cuBLASLt's fused epilogue costs ~2 µs less at 4096³; is it
computing the same thing?)

The operands make pre-activations z = x @ W^T + bias that sweep [-10, 10]: K = 64, x and W
N(0, 1) in fp16 with W scaled so that z has a standard deviation of about 4, a fp16 N(0, 1) bias.
The reference is float64 throughout (the fp16 products summed exactly, then verify.activate, the
judge's formula; its 1 + erf and 1 + tanh cancel, but in float64 that stays below 1e-8 fp16 ulps
wherever the fp16 result is not 0), so what
a result is off by is its own arithmetic and its one rounding to fp16. Errors are in fp16 ulps of
the reference (2^(e - 10) for a normal value of exponent e, 2^-24 for a subnormal one), per band of
z; ±0.5 ulp is the best a correctly rounded result can do. Fresh inputs each of --repeat rounds.

    PYTHONPATH=. python3 scripts/gelu_accuracy_probe.py --out DIR   ->  DIR/gelu-accuracy.json
"""
import argparse
import json
import math
import os
import secrets
import time

try:  # before CuPy (see stages/__main__.py)
    import torch
    import torch.nn.functional as F
except Exception as exc:  # noqa: BLE001
    raise SystemExit(f"gelu_accuracy_probe: needs torch: {exc}")

import numpy as np

import stages
from stages.core import gpu
from stages.tools import verify

p = argparse.ArgumentParser()
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--m", type=int, default=2048)
p.add_argument("--n", type=int, default=2048)
p.add_argument("--repeat", type=int, default=3)
args = p.parse_args()

BANDS = [(-10, -6), (-6, -4), (-4, -3), (-3, -2), (-2, -1), (-1, 0), (0, 1), (1, 10)]
K = 64


def ulps(y16, ref):
    """|y - ref| in fp16 ulps of ref."""
    a = np.abs(ref)
    e = np.floor(np.log2(np.maximum(a, 2.0 ** -14)))
    ulp = np.where(a < 2.0 ** -14, 2.0 ** -24, 2.0 ** (e - 10))
    return np.abs(y16.astype(np.float64) - ref) / ulp


cp = gpu.cupy()
V5 = stages.get("v5_fused_epilogue")
m, n = args.m, args.n
rows = {}
for r in range(args.repeat):
    rng = np.random.default_rng(secrets.randbits(63))
    x = rng.standard_normal((m, K)).astype(np.float16)
    w = (rng.standard_normal((n, K)) * (4.0 / math.sqrt(K))).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float16)
    z = x.astype(np.float64) @ w.astype(np.float64).T + bias.astype(np.float64)  # exact sums of fp16 products
    refs = {form: verify.activate(z, form, np) for form in ("gelu_tanh", "gelu")}  # the judge's float64 forms
    xc, wc, bc = cp.asarray(x), cp.asarray(w), cp.asarray(bias)
    xt, wt, bt = (torch.from_numpy(v).cuda() for v in (x, w, bias))
    outs = {}
    out = cp.full((m, n), float("nan"), cp.float16)
    V5.gemm(xc, wc, out, bias=bc, activation="gelu_tanh")
    outs[("v5 bias+gelu_tanh", "gelu_tanh")] = cp.asnumpy(out)
    out = cp.full((m, n), float("nan"), cp.float16)
    V5.gemm(xc, wc, out, bias=bc, activation="gelu")
    outs[("v5 bias+gelu (erf)", "gelu")] = cp.asnumpy(out)
    outs[("cuBLASLt fused bias+GELU (torch._addmm_activation)", "gelu_tanh")] = \
        torch._addmm_activation(bt, xt, wt.t(), use_gelu=True).cpu().numpy()
    outs[("torch F.linear then F.gelu(tanh)", "gelu_tanh")] = \
        F.gelu(F.linear(xt, wt, bt), approximate="tanh").cpu().numpy()
    outs[("torch F.linear then F.gelu (erf)", "gelu")] = F.gelu(F.linear(xt, wt, bt)).cpu().numpy()
    torch.cuda.synchronize()
    for (name, form), y in outs.items():
        ref = refs[form]
        u = ulps(y, ref)
        row = rows.setdefault(name, {"form": form, "bands": {}})
        for lo, hi in BANDS:
            sel = (z >= lo) & (z < hi)
            if not sel.any():
                continue
            b = row["bands"].setdefault(f"[{lo}, {hi})", {"count": 0, "max_ulps": 0.0, "over_1_ulp": 0, "mean_ulps_sum": 0.0})
            b["count"] += int(sel.sum())
            b["max_ulps"] = max(b["max_ulps"], float(u[sel].max()))
            b["over_1_ulp"] += int((u[sel] > 1.0).sum())
            b["mean_ulps_sum"] += float(u[sel].sum())
        row["nan"] = row.get("nan", 0) + int(np.isnan(y).sum())

for name, row in rows.items():
    for b in row["bands"].values():
        b["mean_ulps"] = b.pop("mean_ulps_sum") / b["count"]
    print(name)
    for band, b in row["bands"].items():
        print(f"  z in {band:>10}: {b['count']:>9} values, max {b['max_ulps']:8.2f} ulp, mean {b['mean_ulps']:6.3f}, "
              f"{b['over_1_ulp']} over 1 ulp")

props = cp.cuda.runtime.getDeviceProperties(0)
res = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
       "probe": "scripts/gelu_accuracy_probe.py", "m": m, "n": n, "k": K, "repeat": args.repeat,
       "torch": torch.__version__, "commit": os.environ.get("GEMM_STAGES_COMMIT"), "rows": rows}
path = os.path.join(args.out, "gelu-accuracy.json")
with open(path, "w") as f:
    json.dump(res, f, indent=1)
print("wrote", path)
