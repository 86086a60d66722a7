"""Compile a stage's kernel.cu with NVRTC into a cubin, cache it on disk, load it through CuPy.

One path for every machine: the same NVRTC call produces the cubin that runs on the GPU and the
cubin `inspect` disassembles on a machine with no GPU (NVRTC comes as a pip wheel). The cubin is
loaded with cupy.RawModule(path=...), so CuPy's own NVRTC options never enter.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import gpu
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
        from cuda.bindings import nvrtc  # noqa: PLC0415  (optional GPU dependency)
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
        import cuda.pathfinder as pf  # noqa: PLC0415  (optional GPU dependency)

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

    def constant(self, symbol: str, default: int | None = None) -> int | None:
        """The value of an `extern "C" __device__ const unsigned` in the cubin (see elf_u32)."""
        return elf_u32(self.cubin, symbol, default)

    def has_ptxas_report(self, kernel: str) -> bool:
        return f"Function properties for {kernel}" in self.log and "Used " in self.log

    @property
    def ptx(self) -> str:
        """The PTX NVRTC generated on the way to the cubin (kept beside it in the cache). Where a
        local array was declared (`.local`), the compiler could not keep a variable in registers:
        for wgmma accumulators that is wrong results, not only slow code."""
        return self.cubin_path.with_suffix(".ptx").read_text()


def elf_u32(cubin: bytes, symbol: str, default: int | None = None) -> int | None:
    """Read a 4-byte initialised device variable from a cubin (an ELF64 file), no GPU needed.

    A kernel names its own sizes once, e.g. `extern "C" __device__ const unsigned
    gemm_smem_bytes = sizeof(SharedStorage);`, and the harness reads the value here instead of
    repeating the formula in Python: the launch and the kernel cannot disagree.
    """

    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise CompileError("not an ELF64 cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    for sh_name, sh_type, _, _, sh_offset, sh_size, sh_link, _, _, sh_entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh_link]
        for off in range(sh_offset, sh_offset + sh_size, sh_entsize):
            st_name, _, _, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", cubin, off)
            start = strtab[4] + st_name
            name = cubin[start:cubin.index(b"\0", start)].decode()
            if name == symbol and st_size == 4 and 0 < st_shndx < shnum:
                data_off = sections[st_shndx][4] + st_value
                return struct.unpack_from("<I", cubin, data_off)[0]
    return default


def options_for(arch: str, defines: dict) -> tuple[str, ...]:
    opts = [f"-arch={arch}", "--std=c++17", "-lineinfo", "--ptxas-options=-v", "--ptxas-options=--warn-on-spills"]
    opts += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    opts += [f"-I{d}" for d in include_dirs()]
    return tuple(opts)


def compile_cubin(source: str, name: str, arch: str, defines: dict | None = None,
                  fresh: bool = False) -> Compiled:
    """Compile CUDA C++ `source` for `arch` (e.g. "sm_90a") with -D`defines`; cached on disk
    (cubin and the compiler's log together). `fresh=True` ignores the cache and recompiles."""
    opts = options_for(arch, defines or {})
    key_opts = [o for o in opts if not o.startswith("-I")]  # header location does not change code
    key = hashlib.sha256("\0".join([source, nvrtc_version(), *key_opts]).encode()).hexdigest()[:24]
    folder = cache_dir()
    cubin_path, log_path = folder / f"{name}-{arch}-{key}.cubin", folder / f"{name}-{arch}-{key}.log"
    ptx_path = cubin_path.with_suffix(".ptx")
    if not fresh and cubin_path.exists() and log_path.exists() and ptx_path.exists():
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
        size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    for path, data in ((cubin_path, cubin), (ptx_path, ptx.rstrip(b"\0 ")), (log_path, log.encode())):
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # atomic: parallel test workers never read half a file
    return Compiled(cubin_path, log, arch, opts)


def compile_in_fresh_process(source: str, name: str, arch: str, defines: dict | None = None) -> Compiled:
    """The same compile as `compile_cubin(fresh=True)`, done by a new Python process.

    Why: NVRTC 13.0 on the H200 returned program logs without ptxas's report (registers, stack
    frame, spills) once the same program had been compiled before (in the test suite, 2026-11-30;
    a new process alone did not bring it back there). This retries in a new process with
    CUDA_CACHE_DISABLE=1; `inspect` then falls back to reading the cubin itself.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as fh:
        fh.write(source)
    try:
        job = json.dumps({"source": fh.name, "name": name, "arch": arch, "defines": defines or {}})
        res = subprocess.run([sys.executable, "-m", "stages.core.compiler", job], capture_output=True,
                             text=True, timeout=600, cwd=Path(__file__).resolve().parents[2],
                             env=dict(os.environ, CUDA_CACHE_DISABLE="1"))
        if res.returncode:
            raise CompileError(f"compiling {name} in a fresh process failed:\n{res.stderr[-3000:]}")
    finally:
        os.unlink(fh.name)
    return compile_cubin(source, name, arch, defines)


def ptxas_warnings(log: str) -> list[str]:
    """ptxas/NVRTC warning lines (e.g. C7515 wgmma serialized, C7511 too few registers), and the
    "Potential Performance Loss" notes ptxas prints as info (C7520: wgmma serialized because it
    inserted fences itself)."""
    return [ln.strip() for ln in log.splitlines()
            if re.search(r"\bwarning\b", ln, re.I) or "Potential Performance Loss" in ln]


@functools.lru_cache(maxsize=None)
def _module(cubin_path: str, device_id: int):
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
        import cuda.pathfinder as pf  # noqa: PLC0415  (optional GPU dependency)

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


if __name__ == "__main__":  # compile_in_fresh_process's child: one fresh compile into the cache
    _job = json.loads(sys.argv[1])
    compile_cubin(Path(_job["source"]).read_text(), _job["name"], _job["arch"], _job["defines"], fresh=True)
