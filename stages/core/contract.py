"""The one contract every GPU stage and the cuBLAS baseline follow, checked before any launch.

    gemm(a, b, out=None, *, bias=None, alpha=1.0, activation=None)
        -> activation(alpha * (a @ b.T) + bias)
    a: (M, K) float16, b: (N, K) float16, both C-contiguous on the current GPU;
    result: (M, N) float16, accumulated in float32.
    bias: (N,) float16 or float32, added per output column; alpha: a finite real;
    activation: None, "relu", "gelu" (erf form), "gelu_tanh" or "silu".

A stage declares which epilogue operands it fuses (`KernelStage.epilogue`); the others refuse a
non-default value with an error naming the stages that do (from the registry, see
`set_directory`).

Bad input raises TypeError (wrong kind of object or dtype) or ValueError (shape, layout,
alignment, device, a shape the stage does not support) with a message that names the rule broken
and what to do about it. Nothing reaches a kernel unchecked.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import gpu

INT32_MAX = 2**31 - 1
_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
EPILOGUE_FEATURES = ("bias", "alpha", "activation")

# The registry installs a function returning every GPU stage and baseline, so that an error can
# name the stages that do support what was asked for without this module knowing any of them.
_directory: Callable[[], list] = list


def set_directory(fn: Callable[[], list]) -> None:
    global _directory
    _directory = fn


def _stages_that(predicate) -> list[str]:
    try:
        return [st.name for st in _directory() if predicate(st)]
    except Exception:  # a broken stage folder must not hide the error being reported
        return []


@dataclass(frozen=True)
class Constraints:
    """Shape and layout rules of one stage, beyond the shared contract.

    m_multiple/n_multiple/k_multiple: each dimension must be a multiple of this (tile sizes, or
    the 16-byte row alignment a vector load or TMA needs); 1 means any size.
    alignment: the base address of a, b and out must be a multiple of this many bytes.
    """

    m_multiple: int = 1
    n_multiple: int = 1
    k_multiple: int = 1
    alignment: int = 16

    def describe(self) -> str:
        parts = [f"{dim} % {mult} == 0" for dim, mult in
                 (("M", self.m_multiple), ("N", self.n_multiple), ("K", self.k_multiple)) if mult > 1]
        if self.alignment > 2:
            parts.append(f"{self.alignment}-byte aligned base pointers")
        return ", ".join(parts) or "any M, N, K >= 1"

    def supports(self, m: int, n: int, k: int) -> bool:
        return m % self.m_multiple == 0 and n % self.n_multiple == 0 and k % self.k_multiple == 0

    def check(self, m: int, n: int, k: int, stage: str) -> None:
        for dim, val, mult in (("M", m, self.m_multiple), ("N", n, self.n_multiple), ("K", k, self.k_multiple)):
            if val % mult:
                lo, hi = val // mult * mult, (val // mult + 1) * mult
                others = _stages_that(lambda st: st.constraints.supports(m, n, k))
                raise ValueError(
                    f"{stage} needs {dim} to be a multiple of {mult}, got {dim}={val}; "
                    f"pad the operand to {hi}" + (f" (or trim to {lo})" if lo else "")
                    + (f", or use a stage that takes {m}x{n}x{k}: {', '.join(others)}" if others else "")
                )


def _describe(x) -> str:
    return f"{type(x).__module__}.{type(x).__qualname__}"


def as_device_array(x, name: str):
    """Return `x` as a CuPy array without copying, or raise TypeError.

    Accepts CuPy arrays and objects exposing __cuda_array_interface__ or DLPack on a CUDA device
    (torch tensors, Numba device arrays, JAX arrays...). Host arrays are refused, never copied
    silently: a benchmark that uploads its inputs would time the PCIe bus.
    """
    cp = gpu.cupy()
    if isinstance(x, cp.ndarray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return cp.asarray(x)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev_type, _ = x.__dlpack_device__()
        if int(dev_type) in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            return cp.from_dlpack(x)
        raise TypeError(
            f"{name} is a host array ({_describe(x)} on DLPack device type {int(dev_type)}); "
            f"gemm runs on the GPU: move it there first (e.g. cupy.asarray({name}) or {name}.cuda())"
        )
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        raise TypeError(
            f"{name} is a host array ({_describe(x)}); gemm runs on the GPU: "
            f"upload it once with cupy.asarray({name})"
        )
    raise TypeError(
        f"{name} must be a GPU array (CuPy, or anything with __cuda_array_interface__ or DLPack), "
        f"got {_describe(x)}"
    )



_F16 = np.dtype(np.float16)


def _check_matrix(arr, name: str, shape_doc: str, alignment: int, device_id: int) -> None:
    if arr.dtype is not _F16 and arr.dtype != _F16:
        raise TypeError(
            f"{name} must be float16, got {arr.dtype}; convert with {name}.astype(cupy.float16)"
        )
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D {shape_doc}, got {arr.ndim}-D shape {tuple(arr.shape)}")
    if 0 in arr.shape:
        raise ValueError(
            f"{name} has an empty dimension (shape {tuple(arr.shape)}); gemm needs M, N, K >= 1"
        )
    if not arr.flags.c_contiguous:
        raise ValueError(
            f"{name} must be C-contiguous (row-major, rows packed), got strides {arr.strides}; "
            f"pass cupy.ascontiguousarray({name})"
        )
    if arr.data.ptr % alignment:
        raise ValueError(
            f"{name} must start on a {alignment}-byte boundary for this stage's vector loads, "
            f"but its address is {arr.data.ptr % alignment} bytes past one (a view with an offset?); "
            f"pass a fresh copy: cupy.ascontiguousarray({name}).copy()"
        )
    gpu.ensure_same_device(arr, name, device_id)


def _overlap(x, y) -> bool:
    x0, y0 = x.data.ptr, y.data.ptr
    return x0 < y0 + y.nbytes and y0 < x0 + x.nbytes


def check_operands(a, b, out, constraints: Constraints, stage: str):
    """Validate (a, b, out) against the contract and the stage's constraints.

    Returns (a, b, out, (M, N, K)) with a, b, out as CuPy arrays (out allocated when None).
    """
    dev = gpu.current_device_id()
    a = as_device_array(a, "a")
    b = as_device_array(b, "b")
    _check_matrix(a, "a", "(M, K)", constraints.alignment, dev)
    _check_matrix(b, "b", "(N, K)", constraints.alignment, dev)
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb:
        raise ValueError(
            f"K mismatch: a is (M, K) = {tuple(a.shape)} but b is (N, K) = {tuple(b.shape)}; "
            f"gemm computes a @ b.T, so b is laid out like a Linear layer's weight (out_features, "
            f"in_features) and both need the same K (if b is (K, N), pass b.T.copy())"
        )
    for dim, val in (("M", m), ("N", n), ("K", k)):
        if val > INT32_MAX:
            raise ValueError(f"{dim}={val} does not fit the kernels' 32-bit int sizes")
    constraints.check(m, n, k, stage)
    if out is None:
        out = gpu.cupy().empty((m, n), dtype=np.float16)
    else:
        out = as_device_array(out, "out")
        _check_matrix(out, "out", "(M, N)", constraints.alignment, dev)
        if tuple(out.shape) != (m, n):
            raise ValueError(f"out must have shape (M, N) = {(m, n)}, got {tuple(out.shape)}")
        if _overlap(out, a) or _overlap(out, b):
            raise ValueError("out overlaps a or b; the kernels read a and b while writing out: pass a separate buffer")
    return a, b, out, (m, n, k)


@dataclass(frozen=True)
class Epilogue:
    """What happens to the fp32 accumulators before the one fp16 store: alpha, bias, activation."""

    bias: object = None  # a CuPy array (N,), float16 or float32
    alpha: float = 1.0
    activation: str | None = None

    @property
    def features(self) -> tuple[str, ...]:
        """The non-default operands, in EPILOGUE_FEATURES order."""
        used = {"bias": self.bias is not None, "alpha": self.alpha != 1.0,
                "activation": self.activation is not None}
        return tuple(f for f in EPILOGUE_FEATURES if used[f])


PLAIN = Epilogue()


def check_epilogue(bias, alpha, activation, n: int, out, device_id: int, supported, stage: str) -> Epilogue:
    """Validate the epilogue operands for an (M, N) result; return them as an Epilogue.

    `supported` is the set of EPILOGUE_FEATURES the stage fuses; a non-default value of any other
    is refused with the names of the stages that fuse it.
    """
    if bias is None and activation is None and type(alpha) in (float, int) and alpha == 1:
        return PLAIN  # the common call: nothing to check
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number (float), got {type(alpha).__name__} {alpha!r}")
    alpha = float(alpha)
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}; the result would be all inf/nan")
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose None or one of: {', '.join(ACTIVATIONS)}")
    if bias is not None:
        bias = as_device_array(bias, "bias")
        if bias.dtype not in (np.float16, np.float32):
            raise TypeError(f"bias must be float16 or float32, got {bias.dtype}; convert with bias.astype(cupy.float32)")
        if bias.ndim != 1 or bias.shape[0] != n:
            raise ValueError(f"bias must have shape (N,) = ({n},), one value per output column, got {tuple(bias.shape)}")
        if not bias.flags.c_contiguous:
            raise ValueError(f"bias must be contiguous, got strides {bias.strides}; pass cupy.ascontiguousarray(bias)")
        if bias.data.ptr % bias.itemsize:
            raise ValueError(f"bias must be aligned to its {bias.itemsize}-byte elements")
        gpu.ensure_same_device(bias, "bias", device_id)
        if out is not None and _overlap(bias, out):
            raise ValueError("bias overlaps out; the kernel reads bias while writing out: pass a separate buffer")
    epi = Epilogue(bias, alpha, activation)
    for feature in epi.features:
        if feature not in supported:
            others = _stages_that(lambda st: feature in getattr(st, "epilogue", ()))
            raise ValueError(
                f"{stage} does not fuse {feature} into its epilogue; "
                + (f"stages that do: {', '.join(others)}" if others else "no registered stage fuses it yet")
                + " (or apply it to the result yourself)")
    return epi
