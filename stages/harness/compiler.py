"""Compile a stage's kernel.cu with NVRTC into a cubin, cache it on disk, load it through CuPy.

One path for every machine: the same NVRTC call produces the cubin that runs on the GPU and the
cubin `inspect` disassembles on a machine with no GPU (NVRTC comes as a pip wheel). The cubin is
loaded with cupy.RawModule(path=...), so CuPy's own NVRTC options never enter.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import CompileError


def cache_dir() -> Path:
    """$GEMM_STAGES_CACHE, else ~/.cache/gemm-stages. Keyed by source, options and NVRTC version."""
    root = os.environ.get("GEMM_STAGES_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gemm-stages")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _nvrtc():
    try:
        from cuda.bindings import nvrtc  # noqa: PLC0415
    except ImportError:
        try:
            from cuda import nvrtc  # noqa: PLC0415  (cuda-python < 12.6 layout)
        except ImportError as exc:
            raise CompileError(
                "NVRTC is not available: install the GPU extra (pip install -e '.[cuda12]'), "
                f"which brings cuda-bindings and the NVRTC wheel ({exc})"
            ) from None
    return nvrtc


def _check(result, what: str):
    """cuda.bindings calls return (err, *values): raise on err, return the value(s)."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise CompileError(f"{what} failed: {err}")
    return values[0] if len(values) == 1 else values


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    major, minor = _check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return f"{major}.{minor}"


@functools.lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """Where cuda_fp16.h lives: the CUDA runtime wheel, else a toolkit at CUDA_PATH/CUDA_HOME."""
    dirs = []
    try:
        import cuda.pathfinder as pf  # noqa: PLC0415

        found = pf.find_nvidia_header_directory("cudart")
        if found:
            dirs.append(str(found))
    except Exception:  # older cuda-bindings without pathfinder, or nothing found
        pass
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            dirs.append(os.path.join(os.environ[env], "include"))
    dirs.append("/usr/local/cuda/include")
    return tuple(d for d in dict.fromkeys(dirs) if os.path.isfile(os.path.join(d, "cuda_fp16.h")))


@dataclass(frozen=True)
class Compiled:
    cubin_path: Path
    log: str
    arch: str
    options: tuple[str, ...]

    @property
    def cubin(self) -> bytes:
        return self.cubin_path.read_bytes()


def options_for(arch: str, defines: dict) -> tuple[str, ...]:
    opts = [f"-arch={arch}", "--std=c++17", "-lineinfo", "--ptxas-options=-v", "--ptxas-options=--warn-on-spills"]
    opts += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    opts += [f"-I{d}" for d in include_dirs()]
    return tuple(opts)


def compile_cubin(source: str, name: str, arch: str, defines: dict | None = None) -> Compiled:
    """Compile CUDA C++ `source` for `arch` (e.g. "sm_90a") with -D`defines`; cached on disk."""
    opts = options_for(arch, defines or {})
    key_opts = [o for o in opts if not o.startswith("-I")]  # header location does not change code
    key = hashlib.sha256("\0".join([source, nvrtc_version(), *key_opts]).encode()).hexdigest()[:24]
    folder = cache_dir()
    cubin_path, log_path = folder / f"{name}-{arch}-{key}.cubin", folder / f"{name}-{arch}-{key}.log"
    if cubin_path.exists() and log_path.exists():
        return Compiled(cubin_path, log_path.read_text(), arch, opts)

    nvrtc = _nvrtc()
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []),
                  "nvrtcCreateProgram")
    try:
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.rstrip(b"\0 ").decode(errors="replace")
        if int(res[0]) != 0:
            raise CompileError(f"NVRTC could not compile {name} for {arch}:\n{log}")
        size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    for path, data in ((cubin_path, cubin), (log_path, log.encode())):
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # atomic: parallel test workers never read half a file
    return Compiled(cubin_path, log, arch, opts)


def ptxas_warnings(log: str) -> list[str]:
    """ptxas/NVRTC warning lines (e.g. C7515 wgmma serialized, C7511 too few registers)."""
    return [ln.strip() for ln in log.splitlines() if re.search(r"\bwarning\b", ln, re.I)]


@functools.lru_cache(maxsize=None)
def _module(cubin_path: str, device_id: int):
    from . import gpu  # noqa: PLC0415

    cp = gpu.cupy()
    with cp.cuda.Device(device_id):
        return cp.RawModule(path=cubin_path)


def load_function(compiled: Compiled, kernel: str, device_id: int, dynamic_smem: int = 0):
    """The kernel as a CuPy RawKernel on `device_id`, its dynamic shared-memory limit raised."""
    fn = _module(str(compiled.cubin_path), device_id).get_function(kernel)
    if dynamic_smem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < dynamic_smem:
        fn.max_dynamic_shared_size_bytes = dynamic_smem
    return fn


def tool(name: str) -> str | None:
    """Path of a CUDA binary utility (cuobjdump, nvdisasm): the pip wheel first, then PATH."""
    try:
        import cuda.pathfinder as pf  # noqa: PLC0415

        found = pf.find_nvidia_binary_utility(name)
        if found:
            return str(found)
    except Exception:
        pass
    for candidate in (shutil.which(name), f"/usr/local/cuda/bin/{name}"):
        if candidate and os.path.exists(candidate):
            return candidate
    venv_bin = Path(sys.prefix) / "bin" / name
    return str(venv_bin) if venv_bin.exists() else None
