"""What the compiled micro-kernel looks like on this CPU: simd_report().

gemm.py is the GEMM; this module only reads the machine code numba/LLVM made
of its micro-kernel, to check that the hot loop really is 24 vector FMAs (see
"What the assembly shows" in README.md). It imports gemm.py, never the other
way round, so the GEMM itself needs neither llvmlite nor regular expressions.
"""

import functools
import re

import llvmlite.binding as llvm
import numba
from numba import njit

from .gemm import MR, NR, micro_kernel


_FMA_MNEMONICS = ("vfmadd", "vfmsub", "vfnmadd", "vfnmsub")
_WIDTH_BITS = {"xmm": 128, "ymm": 256, "zmm": 512}


@functools.lru_cache(maxsize=1)
def _micro_kernel_asm():
    """Assembly (AT&T syntax) of micro_kernel as compiled for this CPU.

    A function loaded from numba's on-disk cache has no assembly text to
    show, so we compile a private copy of the same Python function, with the
    same options, for the signature gemm() uses."""
    f32_2d = numba.types.Array(numba.float32, 2, "C")
    sig = numba.void(f32_2d, f32_2d, numba.int64, f32_2d, numba.int64,
                     numba.int64, numba.boolean)
    copy = njit(sig, fastmath={'reassoc', 'contract'})(micro_kernel.py_func)
    return copy.inspect_asm(copy.signatures[0])


def _loops(lines):
    """(start, end) line ranges of the loops in an assembly listing: a label
    followed later by a jump back to it."""
    labels, loops = {}, []
    for i, line in enumerate(lines):
        label = re.match(r"^([.\w$]+):", line)
        if label:
            labels[label.group(1)] = i
        jump = re.match(r"^\s+j\w+\s+([.\w$]+)", line)
        if jump and labels.get(jump.group(1), i) < i:
            loops.append((labels[jump.group(1)], i))
    return loops


def _count_fmas(lines):
    counts = {}
    for line in lines:
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].startswith(_FMA_MNEMONICS):
            reg = parts[1].replace("%", "").split(",")[-1].strip()[:3]
            key = f"{parts[0]} {reg}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def simd_report():
    """Describe the micro-kernel's machine code, as compiled on this CPU.

    Returns a dict with
      target_cpu         the CPU LLVM compiled for (e.g. 'znver4')
      tile               (MR, NR)
      fma_instructions   FMA counts in the whole function, by mnemonic and
                         register, e.g. {'vfmadd231ps zmm': 24, ...}: the
                         vector loop plus the narrower remainder loops LLVM
                         adds, which never run here because K blocks are
                         padded to a multiple of KU
      hot_loop_fma       the same counts for the loop with the most FMAs
      hot_loop_loads     instructions of that loop that read memory (vector
                         loads, or FMAs with a memory operand)
      vector_width_bits  widest register used by the hot loop's FMAs
      k_per_iteration    k values one pass of the hot loop covers (16 for
                         zmm: every accumulator advances by one vector)
      hot_loop           the hot loop's instructions (list of lines)
    """
    lines = [ln for ln in _micro_kernel_asm().splitlines() if ln.strip()]
    hot_loop = []
    for start, end in _loops(lines):
        body = lines[start:end + 1]
        if sum(_count_fmas(body).values()) > sum(_count_fmas(hot_loop).values()):
            hot_loop = body
    hot = _count_fmas(hot_loop)
    by_width = {}
    for key, n in hot.items():
        bits = _WIDTH_BITS.get(key.split()[1], 0)
        by_width[bits] = by_width.get(bits, 0) + n
    width = max(by_width, default=0)
    k_per_iteration = by_width[width] * (width // 32) // (MR * NR) if width else 0
    return {
        "target_cpu": numba.config.CPU_NAME or llvm.get_host_cpu_name(),
        "tile": (MR, NR),
        "fma_instructions": _count_fmas(lines),
        "hot_loop_fma": hot,
        "hot_loop_loads": sum(1 for ln in hot_loop if ln.lstrip().startswith("v")
                              and "(" in ln.split(",")[0]),
        "vector_width_bits": width,
        "k_per_iteration": k_per_iteration,
        "hot_loop": [ln.strip() for ln in hot_loop],
    }
