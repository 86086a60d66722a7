"""v5's main kernel as the shape rule builds it, statically (no GPU): for named shapes and
epilogues, the per-call defines `defines_for` picks on the H200 (gpu.REFERENCE_DEVICE), then
registers, stack frame and `gemm_smem_bytes` of the compiled cubin and the SASS counts of the
main kernel only (`cuobjdump -sass`; the module also holds the split-K reduce and the padded-copy
kernels). Prints a markdown table: the v5 README's "Inspect" section is this script's output.

    python scripts/v5_sass_table.py            # the table
    python scripts/v5_sass_table.py --spills   # also: every build tests/test_v5.py enumerates,
                                               # and each of its fp32-bias builds with an fp16
                                               # bias: which ones have a stack frame
    python scripts/v5_sass_table.py --shipped  # also: every distinct build defines_for picks over
                                               # a grid of shapes and epilogues (what calls run)
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import stages  # noqa: E402
import stages.v5_fused_epilogue as v5  # noqa: E402
from stages.core import compiler, contract  # noqa: E402
from stages.tools import inspect  # noqa: E402

V5 = stages.get("v5_fused_epilogue")
OVERRIDES: dict = {}  # --set K=V: applied to every build after defines_for (a knob under study)
OPS = ("HGMMA", "UTMALDG", "UTMASTG", "STSM", "MUFU", "LDS", "STG", "STL", "LDL")

# (shape, epilogue): the goal shapes of issue 13 and one of each kind of build the rule picks.
ROWS = [
    ((4096, 4096, 4096), "plain"), ((4096, 4096, 4096), "bias+gelu_tanh"), ((4096, 4096, 4096), "bias+gelu"),
    ((4096, 4096, 4096), "bias+silu"), ((8192, 8192, 8192), "plain"), ((8192, 8192, 8192), "bias+gelu_tanh"),
    ((8192, 8192, 8192), "bias+silu"), ((4095, 4097, 4104), "plain"), ((1000, 1000, 1000), "plain"),
    ((1000, 1000, 1000), "bias+gelu"), ((1536, 1536, 4096), "plain"), ((1536, 2048, 4096), "plain"),
    ((2048, 2048, 4096), "plain"), ((1024, 1024, 1024), "plain"), ((128, 14336, 4096), "plain"),
    ((129, 14336, 4096), "plain"), ((129, 8192, 4096), "plain"), ((128, 4096, 4096), "plain"),
    ((16, 14336, 4096), "plain"), ((1, 4096, 4096), "plain"), ((1, 4096, 4096), "bias+silu"),
    ((256, 2048, 8192), "plain"), ((4096, 32, 4096), "plain"), ((128, 14336, 4104), "plain"),
    ((16, 14336, 4096), "bias+gelu_tanh"), ((14336, 16, 4096), "plain"), ((129, 14336, 4096), "bias+silu"),
    ((129, 8192, 4096), "bias+gelu_tanh"), ((400, 12288, 4096), "plain"), ((400, 12288, 4096), "bias+gelu"),
    ((545, 8192, 8192), "bias+silu"), ((257, 14336, 4096), "plain"), ((385, 11008, 4096), "bias+gelu_tanh"),
    ((150, 8192, 4096), "plain"), ((150, 16384, 4096), "bias+gelu"), ((160, 14336, 1024), "plain"),
    ((129, 11008, 4096), "plain"),
]




def epilogue(text: str) -> contract.Epilogue:
    """"plain", or "+"-joined parts: "bias" (fp16), "bias32" (fp32) and an activation."""
    if text == "plain":
        return contract.PLAIN
    parts = text.split("+")
    dtype = np.float32 if "bias32" in parts else np.float16 if "bias" in parts else None
    act = next((p for p in parts if p not in ("bias", "bias32")), None)
    return contract.Epilogue(bias=None if dtype is None else np.zeros(1, dtype), alpha=1.0, activation=act)


def frame(defines: dict) -> tuple[int, tuple[int, int] | None]:
    """The main kernel's stack frame (bytes) for a build, and its (STL, LDL) counts where it has one."""
    compiled = V5.compile("sm_90a", {**defines, **OVERRIDES})
    stack = inspect.resource_usage(str(compiled.cubin_path), V5.kernel).get("STACK", 0)
    if not stack:
        return 0, None
    ops = inspect.count_opcodes(inspect.kernel_sass(str(compiled.cubin_path), V5.kernel))
    return stack, (ops.get("STL", 0), ops.get("LDL", 0))


def build_row(shape, epi_text):
    m, n, k = shape
    d = inspect.call_defines(V5, m, n, k, epilogue(epi_text))
    compiled = V5.compile("sm_90a", {**d, **OVERRIDES})
    usage = inspect.resource_usage(str(compiled.cubin_path), V5.kernel)
    text = inspect.kernel_sass(str(compiled.cubin_path), V5.kernel)
    ops = inspect.count_opcodes(text)
    return d, usage, compiled.constant("gemm_smem_bytes", 0), ops, hashlib.md5(text.encode()).hexdigest()[:10]


def describe(d: dict) -> str:
    tile = f"{d['BM']} × {d['BN']}" + (f" (A rows {d['A_ROWS']})" if d["A_ROWS"] != d["BM"] else "") \
        + (f" (B rows {d['B_ROWS']})" if d.get("B_ROWS", d["BN"]) != d["BN"] else "")
    cm, cn = d.get("CLUSTER_M", 1), d.get("CLUSTER_N", 1)
    bits = [f"{cm} × {cn} cluster"] if cm * cn > 1 else []
    bits += ["K split in pairs"] if d.get("SPLIT_CLUSTER", 1) > 1 else []
    bits += ["split K"] if d["PARTIAL"] else []
    bits += ["stream-K"] if d["STREAMK"] else []
    bits += ["deferred pass"] if d["EPI_DEFER"] else []
    bits += ["swapped"] if d["SWAP_AB"] else []
    bits += ["TMA store" if d["TMA_STORE"] else "direct stores"]
    return f"{tile}, " + ", ".join(bits)


def table(md5: bool = False) -> str:
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(lambda r: build_row(*r), ROWS))
    head = "| shape | epilogue | build (`defines_for`) | regs | stack | smem | " + " | ".join(OPS) + " | SASS |"
    head += " md5 |" if md5 else ""
    lines = [head, "|" + "---|" * (7 + len(OPS) + md5)]
    for (shape, epi), (d, usage, smem, ops, digest) in zip(ROWS, built):
        cells = [str(ops.get(op, 0)) for op in OPS]
        lines.append(f"| {'×'.join(map(str, shape))} | {epi} | {describe(d)} | {usage.get('REG')} | "
                     f"{usage.get('STACK')} | {smem:,} | " + " | ".join(cells) + f" | {sum(ops.values()):,} |"
                     + (f" {digest} |" if md5 else ""))
    return "\n".join(lines)


def spills() -> str:
    from tests.test_v5 import _every_build  # the enumeration the suite compiles (cached on disk)

    builds = list(_every_build())
    builds += [dict(b, BIAS=1) for b in builds if b["BIAS"] == 2]  # the fp16 bias too (torch's usual)
    with ThreadPoolExecutor(max_workers=2) as pool:
        frames = list(pool.map(frame, builds))
    bad = [(b, f) for b, f in zip(builds, frames) if f[0]]
    keys = ("BM", "BN", "A_ROWS", "ACT", "BIAS", "TMA_STORE", "PARTIAL", "STREAMK", "EPI_DEFER", "SWAP_AB",
            "SPLIT_CLUSTER", "L2_HINT")
    out = [f"{len(builds)} builds, {len(bad)} with a stack frame:"]
    out += [f"  {f[0]} B ({f[1][0]} STL, {f[1][1]} LDL): " + ", ".join(f"{k}={b[k]}" for k in keys if k in b)
            for b, f in bad]
    return "\n".join(out)


SHIPPED_M = (1, 3, 16, 17, 32, 33, 64, 65, 100, 128, 129, 150, 184, 185, 192, 193, 256, 500, 1000, 1024, 2048,
             3000, 4095, 4096, 8192)
SHIPPED_N = (7, 16, 32, 33, 100, 1000, 1024, 2048, 4096, 4097, 8192, 14336)
SHIPPED_K = (13, 64, 1000, 1001, 2056, 4096, 4104, 8200)
SHIPPED_EPILOGUES = ("plain", "bias", "bias32", "relu", "gelu", "gelu_tanh", "silu", "bias+relu", "bias+gelu",
                     "bias+gelu_tanh", "bias+silu", "bias32+gelu_tanh", "bias32+silu", "bias32+gelu")


def shipped() -> str:
    """Every distinct build defines_for picks over a grid of shapes (SHIPPED_M x N x K) and
    epilogues (with no bias, an fp16 and an fp32 one), compiled: which have a stack frame."""
    seen = {}
    for m in SHIPPED_M:
        for n in SHIPPED_N:
            for k in SHIPPED_K:
                for text in SHIPPED_EPILOGUES:
                    d = inspect.call_defines(V5, m, n, k, epilogue(text))
                    seen.setdefault(tuple(sorted(d.items())), (m, n, k, text))
    keys = list(seen)
    with ThreadPoolExecutor(max_workers=2) as pool:
        frames = list(pool.map(lambda key: frame(dict(key)), keys))
    bad = [(k, f) for k, f in zip(keys, frames) if f[0]]
    shapes = len(SHIPPED_M) * len(SHIPPED_N) * len(SHIPPED_K)
    out = [f"{len(keys)} distinct builds over {shapes} shapes x {len(SHIPPED_EPILOGUES)} epilogues, "
           f"{len(bad)} with a stack frame:"]
    for key, f in bad:
        m, n, k, text = seen[key]
        out.append(f"  {f[0]} B ({f[1][0]} STL, {f[1][1]} LDL): first at {m}x{n}x{k} {text}: {describe(dict(key))}")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spills", action="store_true", help="also scan every build tests/test_v5.py enumerates")
    ap.add_argument("--shipped", action="store_true",
                    help="also scan every build defines_for picks over a grid of shapes and epilogues")
    ap.add_argument("--set", action="append", default=[], metavar="K=V",
                    help="override a define in every build (a knob under study)")
    ap.add_argument("--md5", action="store_true", help="add the md5 of each row's main-kernel SASS")
    args = ap.parse_args(argv)
    OVERRIDES.update((kv.split("=")[0], int(kv.split("=")[1])) for kv in args.set)
    print(f"NVRTC {compiler.nvrtc_version()}, sm_90a, main kernel only"
          + (f", with {', '.join(args.set)}" if args.set else ""))
    print(table(args.md5))
    if args.spills:
        print(spills())
    if args.shipped:
        print(shipped())


if __name__ == "__main__":
    main()
