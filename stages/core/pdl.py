"""Programmatic dependent launch (PDL, sm_90+): a kernel launched this way may be scheduled before
the previous kernel on the stream has finished, so its launch overlaps that kernel's tail. It must
execute `griddepcontrol.wait` before it reads anything the previous kernel wrote: the wait returns
once that grid has completed and its memory operations are visible (PTX ISA, "griddepcontrol").
The previous kernel may execute `griddepcontrol.launch_dependents` to let it be scheduled early.

CuPy's launch takes no launch attributes, so this one goes through cuda-python's cuLaunchKernelEx
(the CUDA driver API), with the arguments a CuPy launch takes: CuPy arrays (passed as pointers)
and NumPy scalars, including the 128-byte tensor maps (NumPy void)."""
from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from . import gpu
from .gpu import driver as _driver


def _c_value(arg):
    """The kernel parameter `arg` as a ctypes object holding its bytes."""
    data = getattr(arg, "data", None)
    if data is not None and hasattr(data, "ptr"):  # a CuPy array: its device pointer
        return ctypes.c_void_p(data.ptr)
    if isinstance(arg, np.generic):
        raw = np.asarray(arg).tobytes()
        return (ctypes.c_char * len(raw)).from_buffer_copy(raw)
    raise TypeError(f"a dependent launch takes CuPy arrays and NumPy scalars, not {type(arg).__name__} "
                    "(a Python number has no fixed width: wrap it, e.g. np.int32(n))")


def dependent_launcher(fn, grid, block, args: tuple, shared_mem: int = 0) -> Callable[[], Any]:
    """A zero-argument step that enqueues CuPy kernel `fn` on the current stream as a
    programmatic dependent launch of whatever was enqueued before it."""
    drv = _driver()
    values = [_c_value(a) for a in args]
    pointers = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
    attr = drv.CUlaunchAttribute()
    attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = (int(g) for g in grid)
    config.blockDimX, config.blockDimY, config.blockDimZ = (int(b) for b in block)
    config.sharedMemBytes = int(shared_mem)
    config.attrs = [attr]
    config.numAttrs = 1
    func = drv.CUfunction(getattr(fn, "kernel", fn).ptr)  # a CuPy RawKernel's loaded Function
    cp = gpu.cupy()
    address = ctypes.addressof(pointers)

    def step():
        config.hStream = drv.CUstream(cp.cuda.get_current_stream().ptr)
        (err,) = drv.cuLaunchKernelEx(config, func, address, 0)
        if err != drv.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernelEx (programmatic dependent launch) failed: {err}")

    step.keep_alive = (values, pointers)  # the parameter bytes must outlive every launch
    return step
