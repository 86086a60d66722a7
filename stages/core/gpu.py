"""Everything that touches CuPy or the CUDA driver lives behind these functions. CuPy is imported
lazily (it is optional: the package imports, and the CPU baseline, `list` and `inspect` run, on a
machine with no GPU or no CuPy)."""
from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import threading
from dataclasses import dataclass

from .errors import UnsupportedDevice


@dataclass(frozen=True)
class Requirement:
    """What a stage needs from the GPU.

    min_cc: lowest compute capability, as (major, minor).
    exact_arch: an architecture-specific target such as "sm_90a": its SASS runs on that one
    compute capability only (wgmma, setmaxnreg), so newer GPUs are refused too.
    """

    min_cc: tuple[int, int] = (7, 0)
    exact_arch: str | None = None

    def describe(self) -> str:
        if self.exact_arch:
            return f"{self.exact_arch} (compute capability {self.exact_cc[0]}.{self.exact_cc[1]} exactly)"
        return f"sm_{self.min_cc[0]}{self.min_cc[1]}+"

    @property
    def exact_cc(self) -> tuple[int, int]:
        digits = self.exact_arch.removeprefix("sm_").rstrip("a")
        return int(digits[:-1]), int(digits[-1])

    def unmet(self, cc: tuple[int, int]) -> bool:
        if self.exact_arch:
            return cc != self.exact_cc
        return cc < self.min_cc


def cupy():
    """Import CuPy or raise UnsupportedDevice with the reason."""
    try:
        import cupy as cp  # noqa: PLC0415
    except Exception as exc:  # ImportError, or a broken CUDA install
        raise UnsupportedDevice(f"CuPy is not importable ({type(exc).__name__}: {exc})") from None
    return cp


@functools.lru_cache(maxsize=1)
def _status() -> tuple[bool, str]:
    try:
        cp = cupy()
    except UnsupportedDevice as exc:
        return False, str(exc)
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, insufficient driver, no device
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            return False, "no NVIDIA driver on this machine (libcuda.so.1 not found)"
        msg = str(exc).split(":", 1)[-1].strip() or type(exc).__name__
        return False, f"no usable CUDA GPU ({msg})"
    if count == 0:
        return False, "no CUDA GPU visible"
    return True, ""


def available() -> tuple[bool, str]:
    """(True, "") when a CUDA GPU is usable here, else (False, reason)."""
    return _status()


@dataclass(frozen=True)
class DeviceInfo:
    id: int
    name: str
    cc: tuple[int, int]
    sm_count: int
    sm_clock_mhz: int
    l2_bytes: int
    smem_optin_bytes: int
    # How many clusters of 1, 2, 4 and 8 blocks (CLUSTER_SIZES), one block per SM, fit on the GPU
    # at once. A cluster's blocks run on one GPC, so a GPC of 18 SMs holds four clusters of four,
    # not four and a half: fewer than sm_count // size where the GPCs' SM counts do not divide.
    # Empty where unknown (then sm_count // size).
    cluster_slots: tuple[int, ...] = ()
    # (domain, bus, device) of its PCI address: how nvidia-smi's rows are matched to it (parse_smi).
    pci: tuple[int, int, int] | None = None

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    def clusters(self, size: int) -> int:
        """Clusters of `size` blocks (one block per SM: a persistent GEMM's) resident at once: what
        a persistent grid of clusters may launch without a second wave."""
        return dict(zip(CLUSTER_SIZES, self.cluster_slots)).get(size, self.sm_count // size)


CLUSTER_SIZES = (1, 2, 4, 8)


# cuOccupancyMaxActiveClusters on the H200 for clusters of 1, 2, 4 and 8 one-block-per-SM blocks:
# 30 clusters of four, not 33; 15 of eight, not 16. A grid of 31 clusters of four blocks that each
# spin 200 us took 411 us, 30 of them 211 us (scripts/cluster_slots_probe.py,
# results/probes/20261130T234051-nvidia-h200-cluster-slots.json).
REFERENCE_CLUSTER_SLOTS = (132, 66, 30, 15)

# The device a static report (`inspect`, a notebook with no GPU) plans a launch for: the H200
# this project is measured on (132 SMs, 227 KiB of opt-in shared memory per block).
REFERENCE_DEVICE = DeviceInfo(id=-1, name="NVIDIA H200 (reference, no GPU here)", cc=(9, 0),
                              sm_count=132, sm_clock_mhz=1980, l2_bytes=62_914_560,
                              smem_optin_bytes=232_448, cluster_slots=REFERENCE_CLUSTER_SLOTS)


@functools.lru_cache(maxsize=1)
def driver():
    """cuda-python's CUDA driver API, initialised: tensor maps (tma.py), launches with attributes
    (pdl.py) and occupancy queries CuPy does not expose."""
    try:
        from cuda.bindings import driver as drv  # noqa: PLC0415  (optional until a TMA stage runs)
    except ImportError:
        try:
            from cuda import cuda as drv  # noqa: PLC0415  (cuda-python < 12.6)
        except ImportError as exc:
            raise UnsupportedDevice(
                f"TMA stages need cuda-python (pip install cuda-bindings): {exc}") from None
    (err,) = drv.cuInit(0)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise UnsupportedDevice(f"cuInit failed: {err}")
    return drv


_CLUSTER_PROBE = r'extern "C" __global__ void cluster_slots_probe() {}'


def cluster_launch_config(size: int, clusters: int, threads: int, smem: int):
    """A cuda-python CUlaunchConfig for `clusters` clusters of `size` blocks of `threads` threads
    and `smem` bytes of dynamic shared memory (the caller sets hStream to launch it)."""
    drv = driver()
    attr = drv.CUlaunchAttribute()
    attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = size, 1, 1
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = size * clusters, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = smem
    config.attrs = [attr]
    config.numAttrs = 1
    return config


def _cluster_slots(device_id: int, smem_optin: int) -> tuple[int, ...]:
    """cuOccupancyMaxActiveClusters for clusters of CLUSTER_SIZES blocks of 384 threads that each
    take most of an SM's shared memory (one block per SM), or () where the driver cannot say
    (no cuda-python, or a GPU without clusters: then DeviceInfo.clusters divides)."""
    try:
        drv, cp = driver(), cupy()
        with cp.cuda.Device(device_id):
            kern = cp.RawKernel(_CLUSTER_PROBE, "cluster_slots_probe")
            smem = smem_optin - 1024
            kern.max_dynamic_shared_size_bytes = smem
            func = drv.CUfunction(kern.kernel.ptr)
            slots = []
            for size in CLUSTER_SIZES:
                err, count = drv.cuOccupancyMaxActiveClusters(func, cluster_launch_config(size, 1, 384, smem))
                if err != drv.CUresult.CUDA_SUCCESS:
                    return ()
                slots.append(int(count))
            return tuple(slots)
    except Exception:  # noqa: BLE001  (a planning aid: without it the division stands)
        return ()


def _pci(cp, device_id: int) -> tuple[int, int, int] | None:
    try:
        return _bus(cp.cuda.runtime.deviceGetPCIBusId(device_id))  # "0000:19:00.0"
    except Exception:
        return None


@functools.lru_cache(maxsize=None)
def _info(device_id: int) -> DeviceInfo:
    cp = cupy()
    p = cp.cuda.runtime.getDeviceProperties(device_id)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return DeviceInfo(
        id=device_id,
        name=name,
        cc=(int(p["major"]), int(p["minor"])),
        sm_count=int(p["multiProcessorCount"]),
        sm_clock_mhz=int(p.get("clockRate", 0)) // 1000,
        l2_bytes=int(p.get("l2CacheSize", 0)),
        smem_optin_bytes=int(p.get("sharedMemPerBlockOptin", 0)),
        cluster_slots=_cluster_slots(device_id, int(p.get("sharedMemPerBlockOptin", 0))) if p["major"] >= 9 else (),
        pci=_pci(cp, device_id),
    )


def current() -> DeviceInfo:
    """The current CuPy device, or UnsupportedDevice when there is none."""
    ok, why = available()
    if not ok:
        raise UnsupportedDevice(why)
    return _info(current_device_id())


def require(req: Requirement, stage_name: str) -> DeviceInfo:
    """The current device if it meets `req`, else UnsupportedDevice naming both."""
    dev = current()
    if req.unmet(dev.cc):
        raise UnsupportedDevice(
            f"{stage_name} needs {req.describe()}; this GPU ({dev.name}) is {dev.arch}"
        )
    return dev


def compile_arch(dev: DeviceInfo, req: Requirement) -> str:
    """The NVRTC target for a stage on this device. On Hopper every stage is built for sm_90a, so
    what runs is exactly what `inspect` shows."""
    if req.exact_arch:
        return req.exact_arch
    if dev.cc == (9, 0):
        return "sm_90a"
    return dev.arch


@dataclass(frozen=True)
class SmiReading:
    """What nvidia-smi says of one GPU: its driver, its SM clock now and at most (MHz, as
    nvidia-smi prints them), and its UUID, which names the board, so that records from different
    calls can be told apart when a figure moves between them. None where nvidia-smi says N/A."""
    driver: str | None
    sm_clock_mhz: str | None
    sm_clock_max_mhz: str | None
    uuid: str | None


SMI_QUERY = "pci.bus_id,driver_version,clocks.sm,clocks.max.sm,uuid"


def _bus(text: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI bus id, "00000000:19:00.0" (nvidia-smi) or "0000:19:00.0"."""
    try:
        domain, bus, devfn = text.strip().split(":")
        return int(domain, 16), int(bus, 16), int(devfn.split(".")[0], 16)
    except ValueError:
        return None


def parse_smi(text: str, pci: tuple[int, int, int] | None) -> SmiReading | None:
    """The row of `nvidia-smi --query-gpu=SMI_QUERY --format=csv,noheader,nounits` for the GPU at
    PCI address `pci` (domain, bus, device). nvidia-smi numbers GPUs in PCI order and CUDA, by
    default, fastest first, and CUDA_VISIBLE_DEVICES renumbers them again: only the bus id
    matches a row to the CUDA device. With `pci` unknown, the one row if there is one, else None."""
    rows = [[f.strip() for f in line.split(",")] for line in text.splitlines() if line.strip()]
    if pci is not None:
        rows = [r for r in rows if _bus(r[0]) == tuple(pci)]
    if len(rows) != 1:
        return None
    fields = [None if f in ("", "N/A", "[N/A]") else f for f in rows[0][1:5]]
    return SmiReading(*(fields + [None] * (4 - len(fields))))


def smi_reading(device_id: int | None = None) -> SmiReading | None:
    """nvidia-smi's reading of the current CUDA device (or `device_id`), if nvidia-smi is here."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, f"--query-gpu={SMI_QUERY}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_smi(out, _info(current_device_id() if device_id is None else device_id).pci)


def current_device_id() -> int:
    """The current device's ordinal (cudaGetDevice: what every launch on this thread targets)."""
    return cupy().cuda.runtime.getDevice()


def device_of(arr) -> int:
    """The GPU a CuPy array lives on (its memory pointer knows, without building a Device)."""
    dev = getattr(arr.data, "device_id", None)
    return arr.device.id if dev is None else dev


def ensure_same_device(arr, name: str, cur: int):
    """Raise ValueError if `arr` (a CuPy array) lives on a GPU other than `cur`."""
    dev = device_of(arr)
    if dev != cur:
        raise ValueError(
            f"{name} is on GPU {dev} but the current device is GPU {cur}; "
            f"call inside `with cupy.cuda.Device({dev}):` or move it with cupy.asarray"
        )


# ---- scratch memory a kernel keeps between launches --------------------------------------------
# A kernel that splits a unit of work over blocks (stream-K) needs global scratch: partial sums and
# flags that must read zero when a launch starts. Such a kernel leaves the flags as it found them,
# so the scratch is zeroed once, when it is made, and kept. It is kept per (device, stream): two
# launches on one stream run one after the other, launches on two streams could overlap and must
# not share it (as cuBLAS keeps a workspace per handle and stream). At most _SCRATCH_KEEP are kept;
# an evicted one goes back to CuPy's pool, which hands memory back out in stream order.
_SCRATCH_KEEP = 8
_scratch: dict = {}
_scratch_lock = threading.Lock()


def stream_scratch(nbytes: int, tag: str):
    """A zeroed uint8 CuPy array of at least `nbytes`, owned by `tag` on the current device and
    stream, the same array on every call there (bigger when a call asks for more). The kernels
    that use it must leave every byte they expect to be zero at zero when they finish."""
    cp = cupy()
    key = (current_device_id(), cp.cuda.get_current_stream().ptr, tag)
    with _scratch_lock:
        buf = _scratch.pop(key, None)
        if buf is None or buf.nbytes < nbytes:
            buf = cp.zeros(max(nbytes, buf.nbytes if buf is not None else 0), dtype=cp.uint8)
        _scratch[key] = buf  # most recently used last
        while len(_scratch) > _SCRATCH_KEEP:
            _scratch.pop(next(iter(_scratch)))
        return buf
