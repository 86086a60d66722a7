"""The baselines measured beside the stages: cuBLAS on the GPU, the numba GEMM on the CPU, and,
for fused epilogues (`bench --epilogue`), what a user has without our kernels: torch's F.linear +
activation, torch's cuBLASLt bias+GELU epilogue, and cuBLAS + one CuPy elementwise kernel.

They follow the stages' contract (`gemm(a, b, out=None, ...)`, `runnable()`, `constraints`) so the
tools treat them like stages; they are not stages (no kernel of ours, no folder of their own).
torch is optional: it is imported inside the torch baselines only, which are then not runnable
without it; nothing else in the project needs it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

import cpu_reference

from .core import contract, gpu
from .core.contract import Constraints
from .core.errors import UnsupportedDevice
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


# ---- baselines for fused epilogues: act(alpha * (a @ b.T) + bias) as a user has it today --------
# Each computes only the epilogues it really implements and refuses the others before any GPU
# work: the features through contract.check_epilogue's `supported` set, finer rules (exactly
# bias+gelu_tanh) in `epilogue_gap`; torch's baselines take a float16 bias only. `bench --epilogue` times them; they
# are not in `stages.all_names()` (torch_addmm_gelu computes no plain GEMM), see the registry.

def _features(bias_given: bool, alpha, activation) -> tuple[str, ...]:
    used = {"bias": bias_given, "alpha": alpha != 1, "activation": activation is not None}
    return tuple(f for f in contract.EPILOGUE_FEATURES if used[f])


def _refuse_unfused(stage, bias, alpha, activation) -> None:
    """Raise ValueError for an epilogue `stage` does not compute; touches no GPU (bias is only
    looked at for being given). The values themselves are checked again, in full, by
    contract.check_epilogue once the operands are on the GPU."""
    contract.check_epilogue(None, alpha, activation, 0, None, -1, stage.epilogue, stage.name)
    if bias is not None and "bias" not in stage.epilogue:  # check_epilogue was shown no bias
        raise ValueError(f"{stage.name} does not fuse bias into its epilogue")
    gap = stage.epilogue_gap(bias is not None, alpha, activation)
    if gap:
        raise ValueError(f"{stage.name} {gap}")


def _torch():
    """torch, imported on first use (an optional dependency), or None when it is not importable."""
    try:
        import torch  # noqa: PLC0415
    except Exception:  # ImportError, or a broken install: the baseline is then not runnable
        return None
    return torch


def _torch_runnable() -> tuple[bool, str]:
    torch = _torch()
    if torch is None:
        return False, "torch is not installed"
    ok, why = gpu.available()
    if not ok:
        return ok, why
    if not torch.cuda.is_available():
        return False, f"torch {torch.__version__} sees no CUDA device (a CPU-only build?)"
    return True, ""


def _require_torch(stage_name: str):
    torch = _torch()
    if torch is None:
        raise UnsupportedDevice(f"{stage_name} needs torch: torch is not installed")
    return torch


def _as_torch(torch, arr, device_id: int):
    """The same memory as a torch tensor (no copy: __cuda_array_interface__)."""
    t = torch.as_tensor(arr, device=torch.device("cuda", device_id))
    if t.data_ptr() != arr.data.ptr:  # would mean torch copied: the timing would include it
        raise RuntimeError(f"torch.as_tensor copied a {arr.shape} array instead of sharing it")
    return t


def _torch_bias(torch, bias, device_id: int, stage_name: str):
    if bias is None:
        return None
    if bias.dtype != np.float16:
        raise TypeError(f"{stage_name} takes a float16 bias, like its operands (torch.addmm wants one "
                        f"dtype), got {bias.dtype}; pass bias.astype(cupy.float16)")
    return _as_torch(torch, bias, device_id)


class _CupyStreamForTorch:
    """torch's stream context for CuPy's current stream, so torch's kernels run where CuPy's
    events (bench's timer) and the other stages run. One ExternalStream per stream pointer."""

    def __init__(self):
        self._streams: dict = {}

    def __call__(self, torch, device_id: int):
        ptr = gpu.cupy().cuda.get_current_stream().ptr
        stream = self._streams.get((ptr, device_id))
        if stream is None:
            dev = torch.device("cuda", device_id)
            # Stream 0 is the legacy default stream, which is torch's default stream too.
            stream = torch.cuda.default_stream(dev) if ptr == 0 else torch.cuda.ExternalStream(ptr, device=dev)
            self._streams[(ptr, device_id)] = stream
        return torch.cuda.stream(stream)


def _torch_activations(torch) -> dict:
    """torch's own activation kernels, in place on the GEMM's fp16 result: the same kernel (one
    read and one write of the result) that `F.gelu(F.linear(x, W, b))` launches out of place."""
    return {"relu": lambda t: torch.relu_(t),                                     # F.relu(inplace=True)
            "gelu": lambda t: torch.ops.aten.gelu_(t, approximate="none"),         # F.gelu, erf form
            "gelu_tanh": lambda t: torch.ops.aten.gelu_(t, approximate="tanh"),    # F.gelu(approximate='tanh')
            "silu": lambda t: torch.nn.functional.silu(t, inplace=True)}


@dataclass
class _TorchBaseline:
    previous: str | None = None
    requires: Requirement = field(default_factory=Requirement)
    constraints: Constraints = field(default_factory=lambda: Constraints(alignment=2))
    kind: str = "baseline"
    _stream: _CupyStreamForTorch = field(default_factory=_CupyStreamForTorch, repr=False, compare=False)

    def runnable(self) -> tuple[bool, str]:
        return _torch_runnable()

    def epilogue_gap(self, bias: bool, alpha, activation) -> str:
        """Why this baseline does not compute that epilogue, beyond its `epilogue` features ("" if it does)."""
        return ""

    def rounds_before_epilogue(self, bias: bool, alpha, activation) -> bool:
        """Does part of that epilogue run as a second kernel on the GEMM's fp16-rounded result?
        (bench's judge then allows that one extra rounding, and says so in the record.)"""
        return False

    def _checked(self, a, b, out, bias, alpha, activation):
        """(torch, device id, a, b, out, epilogue) after every check, in the order: what the
        baseline computes (no GPU), torch, the device, the operands, the epilogue values."""
        _refuse_unfused(self, bias, alpha, activation)
        torch = _require_torch(self.name)
        dev = gpu.require(self.requires, self.name)
        a, b, out, (m, n, k) = contract.check_operands(a, b, out, self.constraints, self.name)
        epi = contract.check_epilogue(bias, alpha, activation, n, out, dev.id, self.epilogue, self.name)
        return torch, dev.id, a, b, out, epi

    def gemm(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        return self.prepare(a, b, out, bias=bias, alpha=alpha, activation=activation)()


@dataclass
class TorchLinear(_TorchBaseline):
    """torch.nn.functional.linear(x, W, bias) (bias fused by cuBLASLt), then torch's activation as
    a second kernel: what `F.gelu(F.linear(x, W, b))` costs a torch user."""

    name: str = "torch_linear"
    idea: str = "torch F.linear (cuBLASLt, bias fused) + torch's activation as a second kernel"
    epilogue: frozenset = frozenset({"bias", "activation"})

    def rounds_before_epilogue(self, bias: bool, alpha, activation) -> bool:
        return activation is not None  # the activation reads the fp16 result of the GEMM

    def prepare(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        torch, dev_id, a, b, out, epi = self._checked(a, b, out, bias, alpha, activation)
        x, w, y = (_as_torch(torch, arr, dev_id) for arr in (a, b, out))
        tbias = _torch_bias(torch, epi.bias, dev_id, self.name)
        wt = w.t()
        act = _torch_activations(torch)[epi.activation] if epi.activation else None

        # F.linear has no out=: for a 2-D input it is exactly addmm(bias, x, W.t()) (mm without a
        # bias), whose out= form writes into the caller's `out` with no copy.
        def run():
            with self._stream(torch, dev_id):
                if tbias is None:
                    torch.mm(x, wt, out=y)
                else:
                    torch.addmm(tbias, x, wt, out=y)
                if act is not None:
                    act(y)
            return x, w, y, tbias

        return HostCall(run, out)


@dataclass
class TorchAddmmGelu(_TorchBaseline):
    """torch._addmm_activation(bias, x, W.t(), use_gelu=True): cuBLASLt's fused GELU_BIAS epilogue
    (GELU in its tanh form), the one fused bias+activation GEMM torch exposes."""

    name: str = "torch_addmm_gelu"
    idea: str = "torch._addmm_activation: cuBLASLt's fused bias + GELU (tanh) epilogue"
    epilogue: frozenset = frozenset({"bias", "activation"})

    def epilogue_gap(self, bias: bool, alpha, activation) -> str:
        if bias and activation == "gelu_tanh":
            return ""
        got = "+".join(activation if f == "activation" else f for f in _features(bias, alpha, activation))
        return (f"computes exactly bias+gelu_tanh (cuBLASLt's GELU_BIAS epilogue), not {got or 'a plain GEMM'}; "
                "torch_linear or cublas_cupy_epilogue compute the others")

    def prepare(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        torch, dev_id, a, b, out, epi = self._checked(a, b, out, bias, alpha, activation)
        x, w, y = (_as_torch(torch, arr, dev_id) for arr in (a, b, out))
        tbias = _torch_bias(torch, epi.bias, dev_id, self.name)
        wt = w.t()
        op = torch.ops.aten._addmm_activation.out  # the out= overload: written into `out`

        def run():
            with self._stream(torch, dev_id):
                op(tbias, x, wt, beta=1, alpha=1, use_gelu=True, out=y)
            return x, w, y, tbias

        return HostCall(run, out)


# The activations in fp32, as torch defines them (verify.activate is the float64 reference).
_CUDA_ACTIVATIONS = {
    "relu": "v = fmaxf(v, 0.f);",
    "gelu": "v = 0.5f * v * (1.f + erff(v * 0.7071067811865476f));",
    "gelu_tanh": "v = 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));",
    "silu": "v = v / (1.f + expf(-v));",
}


@functools.lru_cache(maxsize=None)
def _epilogue_kernel(bias: bool, activation: str | None):
    """One CuPy ElementwiseKernel, in place on the fp16 result: y = act(float(y) + bias), in fp32,
    rounded once to fp16. The bias (N,) broadcasts along the rows of y (M, N)."""
    body = ["float v = (float)y;"]
    if bias:
        body.append("v += (float)bias;")
    if activation:
        body.append(_CUDA_ACTIVATIONS[activation])
    body.append("y = (T)v;")
    name = "epilogue" + ("_bias" if bias else "") + (f"_{activation}" if activation else "")
    return gpu.cupy().ElementwiseKernel("B bias" if bias else "", "T y", "\n".join(body), name)


@dataclass
class CublasCupyEpilogue:
    """Our cuBLAS call (alpha inside cuBLAS) followed by ONE CuPy elementwise kernel applying the
    bias and the activation: the unfused epilogue anyone can write without torch."""

    name: str = "cublas_cupy_epilogue"
    idea: str = "cuBLAS (alpha inside) + one CuPy elementwise kernel: bias and activation in fp32"
    previous: str | None = None
    requires: Requirement = field(default_factory=Requirement)
    constraints: Constraints = field(default_factory=lambda: Constraints(alignment=2))
    epilogue: frozenset = frozenset({"bias", "alpha", "activation"})
    kind: str = "baseline"
    _cublas: CublasStage = field(default_factory=CublasStage, repr=False, compare=False)

    def runnable(self) -> tuple[bool, str]:
        return gpu.available()

    def epilogue_gap(self, bias: bool, alpha, activation) -> str:
        return ""

    def rounds_before_epilogue(self, bias: bool, alpha, activation) -> bool:
        return bias or activation is not None  # the elementwise kernel reads cuBLAS's fp16 result

    def prepare(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        _refuse_unfused(self, bias, alpha, activation)
        dev = gpu.require(self.requires, self.name)
        gemm = self._cublas.prepare(a, b, out, alpha=alpha)  # checks a, b, out and alpha
        out = gemm.out
        epi = contract.check_epilogue(bias, alpha, activation, out.shape[1], out, dev.id,
                                      self.epilogue, self.name)
        if epi.bias is None and epi.activation is None:
            return gemm  # nothing for a second kernel to do
        kernel = _epilogue_kernel(epi.bias is not None, epi.activation)
        args = (epi.bias, out) if epi.bias is not None else (out,)

        def run():
            gemm()
            kernel(*args)
            return out

        return HostCall(run, out)

    def gemm(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        return self.prepare(a, b, out, bias=bias, alpha=alpha, activation=activation)()
