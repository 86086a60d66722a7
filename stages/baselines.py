"""The two baselines measured beside the stages: cuBLAS on the GPU and the numba GEMM on the CPU.

They follow the stages' contract (`gemm(a, b, out=None, ...)`, `runnable()`, `constraints`) so the
tools treat them like stages; they are not stages (no kernel of ours, no folder of their own).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

import cpu_reference

from .core import contract, gpu
from .core.contract import Constraints
from .core.gpu import Requirement
from .core.stage import HostCall


@dataclass
class CublasStage:
    """cuBLAS: cublasGemmEx through CuPy's bindings, fp16 in/out, CUBLAS_COMPUTE_32F, every shape.

    Called directly rather than through `cupy.matmul(a, b.T)` (which issues the same gemmEx for
    most shapes) because CuPy turns a 1 x 1 result into an fp16 elementwise reduction, which
    would not be cuBLAS and would not accumulate in fp32. cuBLAS scales by alpha itself.
    """

    name: str = "cublas"
    idea: str = "cuBLAS (cublasGemmEx, fp16 in/out, fp32 compute), the yardstick every stage is measured against"
    previous: str | None = None
    requires: Requirement = field(default_factory=Requirement)
    constraints: Constraints = field(default_factory=lambda: Constraints(alignment=2))
    epilogue: frozenset = frozenset({"alpha"})
    kind: str = "baseline"

    def runnable(self) -> tuple[bool, str]:
        return gpu.available()

    def prepare(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        dev = gpu.require(self.requires, self.name)
        a, b, out, (m, n, k) = contract.check_operands(a, b, out, self.constraints, self.name)
        epi = contract.check_epilogue(bias, alpha, activation, n, out, dev.id, self.epilogue, self.name)
        cp = gpu.cupy()
        from cupy_backends.cuda.libs import cublas  # noqa: PLC0415  (optional GPU dependency)

        handle = cp.cuda.device.get_cublas_handle()
        scalars = np.array([epi.alpha, 0.0], dtype=np.float32)  # alpha, beta (host pointer mode)
        f16 = cp.cuda.runtime.CUDA_R_16F
        # Row-major C (M, N) is column-major C^T (N x M) = B (N x K) . A^T: in column-major terms
        # B's memory is K x N (so op T), A's is K x M (op N), every leading dimension is K or N.
        call = functools.partial(
            cublas.gemmEx, handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k,
            scalars.ctypes.data, b.data.ptr, f16, k, a.data.ptr, f16, k,
            scalars.ctypes.data + 4, out.data.ptr, f16, n, cublas.CUBLAS_COMPUTE_32F,
            cublas.CUBLAS_GEMM_DEFAULT)

        def run():
            cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
            call()
            return scalars, a, b  # keep the host scalars and operands alive with the launch

        return HostCall(run, out)

    def gemm(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        return self.prepare(a, b, out, bias=bias, alpha=alpha, activation=activation)()


@dataclass
class CpuStage:
    """The numba GEMM (cpu_reference/) on host numpy arrays: same (M, K) x (N, K) layout."""

    name: str = "cpu_numba"
    idea: str = ("numba SIMD GEMM on the CPU: packed panels, register-blocked micro-kernel, "
                 "cache blocking, all cores (float32)")
    previous: str | None = None
    constraints: Constraints = field(default_factory=lambda: Constraints(alignment=1))
    kind: str = "cpu"

    def runnable(self) -> tuple[bool, str]:
        return True, ""

    def gemm(self, a, b, out=None):
        """a @ b.T on the CPU: float16 or float32 numpy inputs, float32 result."""
        return cpu_reference.gemm(a, b, out)
