"""The CPU baseline as a stage-like object: same (M, K) x (N, K) contract, on host numpy arrays."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CpuStage:
    name: str = "cpu_numba"
    idea: str = ("numba SIMD GEMM on the CPU: packed panels, register-blocked micro-kernel, "
                 "cache blocking, all cores (float32)")
    previous: str | None = None
    kind: str = "cpu"

    def runnable(self) -> tuple[bool, str]:
        try:
            import numba  # noqa: F401, PLC0415
        except ImportError as exc:
            return False, f"numba is not importable ({exc})"
        return True, ""

    def gemm(self, a, b, out=None):
        """a @ b.T on the CPU: float16 or float32 numpy inputs, float32 result."""
        from cpu_reference import gemm  # noqa: PLC0415

        return gemm(a, b, out)
