"""CPU baseline: a BLIS-style numba GEMM, C = a @ b.T (see gemm.py, README.md)."""

from .asm_report import simd_report
from .gemm import KC, KU, MC, MR, NC, NR, PAD, gemm

__all__ = ["gemm", "simd_report", "MR", "NR", "MC", "KC", "NC", "KU", "PAD"]
