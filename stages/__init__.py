"""gemm-stages: a GEMM climbing from a naive CUDA kernel to the peak of a Hopper GPU.

Every stage computes `a @ b.T` for float16 a (M, K) and b (N, K) with fp32 accumulation:

    import cupy, stages
    a = cupy.random.standard_normal((4096, 4096), dtype=cupy.float32).astype(cupy.float16)
    b = cupy.random.standard_normal((4096, 4096), dtype=cupy.float32).astype(cupy.float16)
    c = stages.get("v1_tiled").gemm(a, b)

This module is the registry. The list of stages lives in one place: the stage folders themselves
(`stages/vN_name/` with a kernel.cu and an __init__.py defining STAGE), discovered here in version
order; each stage's `previous` is the one before it. The layers (see README, "Layout"):

    stages/core/     primitives a stage may import (contract, compiler, gpu, tma, KernelStage)
    stages/vN_*/     the stages: kernel.cu, __init__.py, README.md, why.py
    stages/          this registry and the two baselines (baselines.py)
    stages/tools/    verify, bench, inspect, records, report, plots, ceilings, the CLI
"""
from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path

from .baselines import CpuStage, CublasCupyEpilogue, CublasStage, TorchAddmmGelu, TorchLinear
from .core import contract
from .core.contract import Constraints
from .core.errors import CompileError, UnsupportedDevice
from .core.gpu import Requirement
from .core.stage import KernelStage, Launch

__all__ = ["names", "get", "baselines", "epilogue_baselines", "all_names", "UnsupportedDevice",
           "CompileError", "KernelStage", "CublasStage", "Launch", "Constraints", "Requirement"]

STAGE_DIR = re.compile(r"^v(\d+)_[a-z0-9_]+$")
HERE = Path(__file__).parent


@functools.lru_cache(maxsize=1)
def _discover() -> dict:
    found = []
    for d in HERE.iterdir():
        m = STAGE_DIR.match(d.name)
        if m and (d / "__init__.py").exists() and (d / "kernel.cu").exists():
            found.append((int(m.group(1)), d.name))
    versions = [v for v, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two stage folders share a version number: {sorted(n for _, n in found)}")
    registry, previous = {}, None
    for _, name in sorted(found):
        stage = importlib.import_module(f"{__name__}.{name}").STAGE
        if stage.name != name:
            raise RuntimeError(f"stages/{name}/__init__.py defines STAGE.name={stage.name!r}")
        stage.previous = previous
        registry[name], previous = stage, name
    return registry


@functools.lru_cache(maxsize=1)
def _baselines() -> dict:
    return {"cublas": CublasStage(), "cpu_numba": CpuStage()}


@functools.lru_cache(maxsize=1)
def _epilogue_baselines() -> dict:
    return {"torch_linear": TorchLinear(), "torch_addmm_gelu": TorchAddmmGelu(),
            "cublas_cupy_epilogue": CublasCupyEpilogue()}


def names() -> list[str]:
    """The GPU stages, in order (v0_naive, v1_tiled, ...)."""
    return list(_discover())


def baselines() -> list[str]:
    """The baselines measured beside the stages: cuBLAS (GPU) and the numba CPU GEMM."""
    return list(_baselines())


def epilogue_baselines() -> list[str]:
    """The baselines for fused epilogues (torch's F.linear + activation, torch's cuBLASLt
    bias+GELU, cuBLAS + a CuPy elementwise kernel), timed by `bench --epilogue`. Not in
    `all_names()`: torch_addmm_gelu computes no plain GEMM, and the default runs (verify, bench
    without --epilogue) stay what they were; `get()` finds them by name."""
    return list(_epilogue_baselines())


def all_names() -> list[str]:
    return names() + baselines()


def get(name: str):
    """A stage or baseline by name; ValueError lists the valid names."""
    reg = {**_discover(), **_baselines(), **_epilogue_baselines()}
    if name not in reg:
        raise ValueError(f"unknown stage {name!r}; choose from: {', '.join(reg)}")
    return reg[name]


def gpu_stages() -> list:
    """Every stage and the cuBLAS baseline: what runs on the GPU under the one contract."""
    return [*_discover().values(), _baselines()["cublas"]]


# Errors raised by the contract name the stages that support what was asked for, from here.
contract.set_directory(gpu_stages)
