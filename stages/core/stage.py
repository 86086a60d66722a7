"""What a stage is: a kernel, its compile-time configuration and its launch geometry.

A stage folder's __init__.py builds one `KernelStage` with `KernelStage.here(__file__, ...)`: the
name, the kernel source and the kernel's entry point follow from the folder, and the registry sets
`previous` from the version order. Everything else (checking inputs, compiling once per
configuration, launching) happens here, so every stage behaves the same way at its edges.

A call is checked in full every time (the contract); what can be done once is done once: the
device's properties, the compiled and loaded function per configuration, the launch geometry per
shape, tensor maps per array (core/tma.py).
"""
from __future__ import annotations

import dataclasses
import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import compiler, contract, gpu, pdl
from .contract import Constraints, Epilogue
from .gpu import DeviceInfo, Requirement

# A kernel that uses dynamic shared memory names its size once, in kernel.cu:
#     extern "C" __device__ const unsigned gemm_smem_bytes = <bytes>;
# and the harness reads it from the compiled cubin (compiler.elf_u32) to size the launch.
SMEM_SYMBOL = "gemm_smem_bytes"


@dataclass(frozen=True)
class Launch:
    """Launch geometry: grid and block dimensions, and the thread-block cluster shape.

    `cluster` must match the kernel's compile-time `__cluster_dims__` (CuPy launches through
    cuLaunchKernel, which forms clusters from that attribute); the grid must be a multiple of it.
    A persistent kernel simply asks for a grid sized by `dev.sm_count` in its geometry.
    `shared_mem` is filled in by the harness from the compiled kernel (SMEM_SYMBOL).
    """

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] = (1, 1, 1)
    shared_mem: int = 0


def cdiv(x: int, y: int) -> int:
    return -(-x // y)


class Call:
    """One checked call, as a stage's `arguments` and `defines_for` see it: a, b, out (CuPy
    arrays), m, n, k, cfg (the stage's defines), dev (DeviceInfo), epilogue (Epilogue)."""

    __slots__ = ("a", "b", "out", "m", "n", "k", "cfg", "dev", "epilogue")

    def __init__(self, a, b, out, m: int, n: int, k: int, cfg: dict, dev: DeviceInfo,
                 epilogue: Epilogue = contract.PLAIN):
        self.a, self.b, self.out, self.m, self.n, self.k = a, b, out, m, n, k
        self.cfg, self.dev, self.epilogue = cfg, dev, epilogue


class Prepared:
    """A checked, ready call: calling it enqueues the GEMM and nothing else (what bench times).

    Usually one kernel launch; a stage with a `plan` may enqueue several steps (a padded copy, a
    main kernel, a reduction), all on the current stream, all inside what is timed."""

    __slots__ = ("_steps", "out")

    def __init__(self, steps, out):
        self._steps, self.out = tuple(steps), out

    def __call__(self):
        for step in self._steps:
            step()
        return self.out


class Kernels:
    """The compiled module of one call's configuration, as a stage's `plan` hook sees it:
    `launcher(...)` returns a zero-argument step that enqueues one kernel of that module."""

    __slots__ = ("_stage", "_dev", "_extra", "_key", "launch")

    def __init__(self, stage: "KernelStage", dev: DeviceInfo, extra: dict, launch: Launch, key: tuple | None = None):
        self._stage, self._dev, self._extra, self.launch, self._key = stage, dev, extra, launch, key

    def launcher(self, args: tuple, kernel: str | None = None, grid=None, block=None,
                 dependent: bool = False) -> Callable[[], Any]:
        """Enqueue `kernel` with `args` (default: the stage's entry point, with its launch
        geometry); another entry point of the same kernel.cu takes its own grid and block (and no
        dynamic shared memory: SMEM_SYMBOL sizes the stage's entry point only). `dependent=True`:
        a programmatic dependent launch of the step before it (core/pdl.py; the kernel must
        `griddepcontrol.wait` before it reads that step's output)."""
        fn, smem = self._stage._function(self._dev, self._extra, kernel, self._key)
        if dependent:
            return pdl.dependent_launcher(fn, grid or self.launch.grid, block or self.launch.block, args, smem)
        return functools.partial(fn, grid or self.launch.grid, block or self.launch.block, args, shared_mem=smem)


class HostCall:
    """A ready call of something that is not one of our kernels (cuBLAS): same interface."""

    __slots__ = ("_run", "out")

    def __init__(self, run: Callable[[], Any], out):
        self._run, self.out = run, out

    def __call__(self):
        self._run()
        return self.out


def default_arguments(call: Call) -> tuple:
    """(A, B, C, M, N, K): what a pointer-based kernel takes."""
    return (call.a, call.b, call.out, np.int32(call.m), np.int32(call.n), np.int32(call.k))


@dataclass
class KernelStage:
    """One GPU stage: `gemm(a, b, out=None, *, bias=None, alpha=1.0, activation=None)`.

    `defines` is the stage's configuration (tile sizes, stages, threads): passed to NVRTC as -D
    defines and to `geometry(m, n, k, cfg, dev)` / `constraints_for(cfg)`, so a variant with other
    tiles (`stage.variant(BN=128)`) stays consistent between the kernel and its launch.
    `defines_for(call)` adds per-call defines (activation, a tile config chosen by shape); each
    distinct set compiles once.
    """

    name: str
    idea: str
    source: Path
    kernel: str
    geometry: Callable[[int, int, int, dict, DeviceInfo], Launch]
    previous: str | None = None  # set by the registry from the version order
    requires: Requirement = field(default_factory=Requirement)
    constraints_for: Callable[[dict], Constraints] | Constraints = field(default_factory=Constraints)
    defines: dict[str, Any] = field(default_factory=dict)
    # check_config(cfg) raises ValueError naming the rule a configuration breaks (before NVRTC).
    check_config: Callable[[dict], None] | None = None
    arguments: Callable[[Call], tuple] = default_arguments
    defines_for: Callable[[Call], dict] | None = None
    # Which epilogue operands the kernel fuses (contract.EPILOGUE_FEATURES).
    epilogue: frozenset = frozenset()
    # SASS opcodes this stage exists to use (checked by tests through `inspect`).
    expect_sass: tuple[str, ...] = ()
    # plan(call, kernels) -> steps: a stage whose call is more than one launch of its kernel with
    # `arguments(call)` (padded copies of operands TMA cannot describe, a split-K reduction)
    # returns the zero-argument steps to enqueue, in order; `kernels.launcher(args)` makes them.
    plan: Callable[[Call, "Kernels"], list] | None = None
    # (rows, cols) of C whose operands one unit of the program loads once and shares: a block's
    # tile for tiled stages, (1, 1) when nothing is shared. The roofline's traffic model.
    reuse_tile_for: Callable[[dict], tuple[int, int]] | tuple[int, int] = (1, 1)
    kind: str = "gpu"
    _functions: dict = field(init=False, repr=False, compare=False, default_factory=dict)
    _launches: dict = field(init=False, repr=False, compare=False, default_factory=dict)
    _devices: dict = field(init=False, repr=False, compare=False, default_factory=dict)
    _lock: Any = field(init=False, repr=False, compare=False, default_factory=threading.Lock)

    @classmethod
    def here(cls, init_file: str, **fields) -> "KernelStage":
        """The stage of the folder holding `init_file`: name = folder name, source = kernel.cu,
        kernel = gemm_<name>. Nothing that follows from the folder is typed twice."""
        folder = Path(init_file).resolve().parent
        return cls(name=folder.name, source=folder / "kernel.cu", kernel=f"gemm_{folder.name}", **fields)

    def __post_init__(self):
        if self.check_config:
            self.check_config(self.defines)
        c = self.constraints_for
        self.constraints = c(self.defines) if callable(c) else c

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def reuse_tile(self) -> tuple[int, int]:
        r = self.reuse_tile_for
        return r(self.defines) if callable(r) else r

    @property
    def folder(self) -> Path:
        return Path(self.source).parent

    @property
    def base_name(self) -> str:
        """The stage folder's name (a variant's name carries its overrides: v2[STAGES=4])."""
        return self.name.split("[")[0]

    def code(self) -> str:
        return Path(self.source).read_text()

    def variant(self, **overrides) -> "KernelStage":
        """The same kernel with some tunables changed. Unknown names are refused with the list of
        tunables; a configuration the kernel cannot build is refused by `check_config`."""
        unknown = [k for k in overrides if k not in self.defines]
        if unknown:
            raise ValueError(f"{self.base_name} has no tunable {', '.join(map(repr, unknown))}; "
                             f"its tunables: {', '.join(f'{k}={v}' for k, v in self.defines.items())}")
        for key, val in overrides.items():
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
                raise ValueError(f"{self.base_name}: tunable {key} takes an integer, got {val!r}")
        cfg = {**self.defines, **{k: int(v) for k, v in overrides.items()}}
        tag = ",".join(f"{k}={v}" for k, v in overrides.items())
        return dataclasses.replace(self, defines=cfg, name=f"{self.base_name}[{tag}]" if tag else self.name)

    # ---- compile, once per configuration -----------------------------------------------------
    def compile(self, arch: str, extra: dict | None = None, fresh: bool = False) -> compiler.Compiled:
        """The cubin for `arch` (cached). `fresh=True`: compiled anew by a new process, so that the
        compiler's report is complete whatever this process compiled before."""
        defines = {**self.defines, **(extra or {})}
        if fresh:
            return compiler.compile_in_fresh_process(self.code(), self.base_name, arch, defines)
        return compiler.compile_cubin(self.code(), self.base_name, arch, defines)

    def shared_mem_bytes(self, compiled: compiler.Compiled) -> int:
        """Dynamic shared memory per block, as the kernel itself defines it (SMEM_SYMBOL)."""
        return compiled.constant(SMEM_SYMBOL, 0)

    def launch_for(self, m: int, n: int, k: int, dev: DeviceInfo | None = None,
                   extra: dict | None = None, compiled: compiler.Compiled | None = None) -> Launch:
        """Geometry for a shape on `dev` (default: the reference H200), with its shared memory."""
        dev = dev or gpu.REFERENCE_DEVICE
        cfg = {**self.defines, **(extra or {})}
        launch = self.geometry(m, n, k, cfg, dev)
        compiled = compiled or self.compile(gpu.compile_arch(dev, self.requires), extra)
        return dataclasses.replace(launch, shared_mem=self.shared_mem_bytes(compiled))

    def runnable(self) -> tuple[bool, str]:
        """(True, "") if this machine can run the stage, else (False, why)."""
        try:
            gpu.require(self.requires, self.name)
        except Exception as exc:  # UnsupportedDevice
            return False, str(exc)
        return True, ""

    def _device(self) -> DeviceInfo:
        dev_id = gpu.current_device_id() if gpu.available()[0] else None
        dev = self._devices.get(dev_id)
        if dev is None:
            dev = self._devices.setdefault(dev_id, gpu.require(self.requires, self.name))
        return dev

    def _function(self, dev: DeviceInfo, extra: dict, kernel: str | None = None, extra_key: tuple | None = None):
        """(function, dynamic shared memory) of an entry point of this configuration's module.
        extra_key: `tuple(sorted(extra.items()))`, where the caller has it already."""
        key = (dev.id, tuple(sorted(extra.items())) if extra_key is None else extra_key, kernel)
        hit = self._functions.get(key)
        if hit is None:
            with self._lock:  # two host threads asking at once compile and load once
                hit = self._functions.get(key)
                if hit is None:
                    compiled = self.compile(gpu.compile_arch(dev, self.requires), extra)
                    smem = self.shared_mem_bytes(compiled) if kernel in (None, self.kernel) else 0
                    if smem > dev.smem_optin_bytes:
                        raise ValueError(f"{self.name} needs {smem} B of shared memory per block, this "
                                         f"GPU allows {dev.smem_optin_bytes} B")
                    fn = compiler.load_function(compiled, kernel or self.kernel, dev.id, smem)
                    hit = self._functions[key] = (fn, smem)
        return hit

    def _launch(self, m: int, n: int, k: int, dev: DeviceInfo, extra: dict, key_extra) -> Launch:
        key = (m, n, k, dev.id, key_extra)
        launch = self._launches.get(key)
        if launch is None:
            launch = self.geometry(m, n, k, {**self.defines, **extra}, dev)
            if launch.grid[0] > 2**31 - 1 or max(launch.grid[1:]) > 65535:
                raise ValueError(f"{self.name}: M={m}, N={n}, K={k} needs grid {launch.grid}, beyond "
                                 f"CUDA's limits (x < 2^31, y and z <= 65535)")
            if any(g % c for g, c in zip(launch.grid, launch.cluster)):
                raise ValueError(f"{self.name}: grid {launch.grid} is not a multiple of the cluster "
                                 f"{launch.cluster}")
            if len(self._launches) > 4096:  # bounded: a workload of ever-new shapes cannot grow it
                self._launches.clear()
            self._launches[key] = launch
        return launch

    # ---- the call -----------------------------------------------------------------------------
    def prepare(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None) -> Prepared:
        """Check everything, compile/load once, and return a launch that only enqueues."""
        dev = self._device()
        a, b, out, (m, n, k) = contract.check_operands(a, b, out, self.constraints, self.name)
        epi = contract.check_epilogue(bias, alpha, activation, n, out, dev.id, self.epilogue, self.name)
        call = Call(a, b, out, m, n, k, self.defines, dev, epi)
        extra = self.defines_for(call) if self.defines_for else {}
        if extra:
            call.cfg = {**self.defines, **extra}
        key_extra = tuple(sorted(extra.items())) if extra else ()
        launch = self._launch(m, n, k, dev, extra, key_extra)
        fn, smem = self._function(dev, extra, None, key_extra)  # compiled and loaded before anything is allocated
        if self.plan is not None:
            return Prepared(self.plan(call, Kernels(self, dev, extra, launch, key_extra)), out)
        return Prepared((functools.partial(fn, launch.grid, launch.block, self.arguments(call), shared_mem=smem),), out)

    def gemm(self, a, b, out=None, *, bias=None, alpha=1.0, activation=None):
        """activation(alpha * (a @ b.T) + bias) for float16 a (M, K) and b (N, K), fp32
        accumulation, float16 result (see core/contract.py); launched on the current stream."""
        return self.prepare(a, b, out, bias=bias, alpha=alpha, activation=activation)()
