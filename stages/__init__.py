"""gemm-stages: a GEMM climbing from a naive CUDA kernel to the peak of a Hopper GPU.

Every stage computes `a @ b.T` for float16 a (M, K) and b (N, K) with fp32 accumulation:

    import cupy, stages
    a = cupy.random.standard_normal((4096, 4096), dtype=cupy.float32).astype(cupy.float16)
    b = cupy.random.standard_normal((4096, 4096), dtype=cupy.float32).astype(cupy.float16)
    c = stages.get("v1_tiled").gemm(a, b)

The list of stages lives in one place: the stage folders themselves (`stages/vN_name/` with a
kernel.cu and an __init__.py defining STAGE), discovered here in version order. The CLI, the tests
and the notebooks all read `names()`.
"""
from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path

from .harness.contract import Constraints
from .harness.errors import CompileError, UnsupportedDevice
from .harness.gpu import Requirement
from .harness.stage import CublasStage, KernelStage, Launch

__all__ = ["names", "get", "baselines", "all_names", "UnsupportedDevice", "CompileError",
           "KernelStage", "CublasStage", "Launch", "Constraints", "Requirement"]

_STAGE_DIR = re.compile(r"^v(\d+)_[a-z0-9_]+$")


@functools.lru_cache(maxsize=1)
def _discover() -> dict:
    here = Path(__file__).parent
    found = []
    for d in here.iterdir():
        m = _STAGE_DIR.match(d.name)
        if m and (d / "__init__.py").exists() and (d / "kernel.cu").exists():
            found.append((int(m.group(1)), d.name))
    registry = {}
    for _, name in sorted(found):
        stage = importlib.import_module(f"{__name__}.{name}").STAGE
        if stage.name != name:
            raise RuntimeError(f"stages/{name}/__init__.py defines STAGE.name={stage.name!r}")
        registry[name] = stage
    return registry


@functools.lru_cache(maxsize=1)
def _baselines() -> dict:
    from .harness.cpu import CpuStage  # noqa: PLC0415

    return {"cublas": CublasStage(), "cpu_numba": CpuStage()}


def names() -> list[str]:
    """The GPU stages, in order (v0_naive, v1_tiled, ...)."""
    return list(_discover())


def baselines() -> list[str]:
    """The baselines measured beside the stages: cuBLAS (GPU) and the numba CPU GEMM."""
    return list(_baselines())


def all_names() -> list[str]:
    return names() + baselines()


def get(name: str):
    """A stage or baseline by name; ValueError lists the valid names."""
    reg = {**_discover(), **_baselines()}
    if name not in reg:
        raise ValueError(f"unknown stage {name!r}; choose from: {', '.join(reg)}")
    return reg[name]
