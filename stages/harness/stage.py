"""What a stage is: metadata, a kernel, its launch geometry; and the two baselines.

A stage folder's __init__.py builds one `KernelStage` from its kernel.cu, compile-time defines and
a `geometry(m, n, k)` function. Everything else (checking inputs, compiling, launching) happens
here, so every stage behaves the same way at its edges.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import compiler, contract, gpu
from .contract import Constraints
from .gpu import Requirement


@dataclass(frozen=True)
class Launch:
    """Launch geometry: grid and block dimensions and dynamic shared memory in bytes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int = 0


def cdiv(x: int, y: int) -> int:
    return -(-x // y)


class Prepared:
    """A checked, ready launch: calling it enqueues the GEMM and nothing else (what bench times)."""

    __slots__ = ("_call", "out")

    def __init__(self, call: Callable[[], Any], out):
        self._call, self.out = call, out

    def __call__(self):
        self._call()
        return self.out


@dataclass
class KernelStage:
    """One GPU stage: `gemm(a, b, out=None)` returns a @ b.T (see contract.py).

    `defines` is the stage's configuration (tile sizes, stages, threads): passed to NVRTC as -D
    defines and to `geometry(m, n, k, cfg)` / `constraints(cfg)`, so a variant with other tiles
    (`stage.variant(BN=128)`) stays consistent between the kernel and its launch.
    """

    name: str
    idea: str
    previous: str | None
    source: Path
    kernel: str
    geometry: Callable[[int, int, int, dict], Launch]
    requires: Requirement = field(default_factory=Requirement)
    constraints_for: Callable[[dict], Constraints] | Constraints = field(default_factory=Constraints)
    defines: dict[str, Any] = field(default_factory=dict)
    # arguments(a, b, out, m, n, k, cfg) -> the kernel's argument tuple; default (A, B, C, M, N, K).
    # TMA stages pass tensor maps instead of A and B.
    arguments: Callable | None = None
    # SASS opcodes this stage exists to use (checked by tests through `inspect`).
    expect_sass: tuple[str, ...] = ()
    # (rows, cols) of C whose operands one unit of the program loads once and shares: a block's
    # tile for tiled stages, (1, 1) when nothing is shared. The roofline's traffic model.
    reuse_tile_for: Callable[[dict], tuple[int, int]] | tuple[int, int] = (1, 1)
    kind: str = "gpu"

    @property
    def reuse_tile(self) -> tuple[int, int]:
        r = self.reuse_tile_for
        return r(self.defines) if callable(r) else r

    @property
    def constraints(self) -> Constraints:
        c = self.constraints_for
        return c(self.defines) if callable(c) else c

    @property
    def folder(self) -> Path:
        return Path(self.source).parent

    def launch_for(self, m: int, n: int, k: int) -> Launch:
        return self.geometry(m, n, k, self.defines)

    def variant(self, **overrides) -> "KernelStage":
        """The same kernel with some defines changed (for tuning sweeps)."""
        cfg = {**self.defines, **overrides}
        tag = ",".join(f"{k}={v}" for k, v in overrides.items())
        return dataclasses.replace(self, defines=cfg, name=f"{self.name}[{tag}]" if tag else self.name)

    def code(self) -> str:
        return Path(self.source).read_text()

    def compile(self, arch: str) -> compiler.Compiled:
        return compiler.compile_cubin(self.code(), self.name.split("[")[0], arch, self.defines)

    def runnable(self) -> tuple[bool, str]:
        """(True, "") if this machine can run the stage, else (False, why)."""
        try:
            gpu.require(self.requires, self.name)
        except Exception as exc:  # UnsupportedDevice
            return False, str(exc)
        return True, ""

    def prepare(self, a, b, out=None) -> Prepared:
        """Check everything, compile/load once, and return a launch that only enqueues."""
        dev = gpu.require(self.requires, self.name)
        a, b, out, (m, n, k) = contract.check_operands(a, b, out, self.constraints, self.name)
        launch = self.launch_for(m, n, k)
        if launch.grid[0] > 2**31 - 1 or max(launch.grid[1:]) > 65535:
            raise ValueError(f"{self.name}: M={m}, N={n}, K={k} needs grid {launch.grid}, beyond "
                             f"CUDA's limits (x < 2^31, y and z <= 65535)")
        if launch.shared_mem > dev.smem_optin_bytes:
            raise ValueError(
                f"{self.name} needs {launch.shared_mem} B of shared memory per block, this GPU "
                f"allows {dev.smem_optin_bytes} B")
        fn = compiler.load_function(self.compile(gpu.compile_arch(dev, self.requires)),
                                    self.kernel, dev.id, launch.shared_mem)
        args = (self.arguments or _default_arguments)(a, b, out, m, n, k, self.defines)
        return Prepared(functools.partial(fn, launch.grid, launch.block, args,
                                          shared_mem=launch.shared_mem), out)

    def gemm(self, a, b, out=None):
        """a @ b.T for float16 a (M, K) and b (N, K), fp32 accumulation, float16 result."""
        return self.prepare(a, b, out)()


def _default_arguments(a, b, out, m, n, k, cfg):
    return (a, b, out, np.int32(m), np.int32(n), np.int32(k))


@dataclass
class CublasStage:
    """cuBLAS: cublasGemmEx through CuPy's bindings, fp16 in/out, CUBLAS_COMPUTE_32F, every shape.

    Called directly rather than through `cupy.matmul(a, b.T)` (which issues the same gemmEx for
    most shapes) because CuPy turns a 1 x 1 result into an fp16 elementwise reduction, which
    would not be cuBLAS and would not accumulate in fp32.
    """

    name: str = "cublas"
    idea: str = "cuBLAS (cublasGemmEx, fp16 in/out, fp32 compute), the yardstick every stage is measured against"
    previous: str | None = None
    requires: Requirement = field(default_factory=Requirement)
    constraints: Constraints = field(default_factory=lambda: Constraints(alignment=2))
    kind: str = "baseline"

    def runnable(self) -> tuple[bool, str]:
        return gpu.available()

    def prepare(self, a, b, out=None):
        gpu.require(self.requires, self.name)
        a, b, out, (m, n, k) = contract.check_operands(a, b, out, self.constraints, self.name)
        cp = gpu.cupy()
        from cupy_backends.cuda.libs import cublas  # noqa: PLC0415

        handle = cp.cuda.device.get_cublas_handle()
        scalars = np.array([1.0, 0.0], dtype=np.float32)  # alpha, beta (host pointer mode)
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

        return Prepared(run, out)

    def gemm(self, a, b, out=None):
        return self.prepare(a, b, out)()
