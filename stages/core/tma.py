"""TMA tensor maps for 2-D fp16 row-major arrays, encoded with cuda-python, passed by value.

A tensor map (CUtensorMap, 128 bytes) describes a global array (base pointer, sizes, strides) and
the box one TMA copy moves into shared memory (with its swizzle). The kernel takes it as a
`const __grid_constant__` parameter; we hand CuPy the 128 raw bytes as a numpy void scalar.

Maps are cached by everything they encode (device, pointer, shape, strides, box, swizzle): a
repeated call with the same arrays reuses its maps, and any new array (new pointer or shape) gets
a fresh one, because a different key can never hit. Out-of-bounds parts of a box read as zeros,
so the true sizes go into the map.

`row_parity` describes the same rows as two interleaved halves, even rows and odd rows: a 3-D map
(cols, 2, rows / 2) with strides (row, 2 rows), whose element (x, p, i) is row 2i + p, and a box
of one parity's rows. A kernel can then give one tile the even rows of C and the next the odd ones
(v5's ROW_PARITY, its OPEN_QUESTIONS.md "Small square problems").
"""
from __future__ import annotations

import collections
import ctypes
import threading

import numpy as np

from .gpu import device_of
from .gpu import driver as _driver  # (a module attribute: tests stand a fake in for it)

_MAX_ENTRIES = 256
_cache: collections.OrderedDict = collections.OrderedDict()
_lock = threading.Lock()  # two host threads: a lookup must not race another thread's eviction
stats = {"encoded": 0, "hits": 0}


def tensor_map(arr, box_rows: int, box_cols: int, swizzle_bytes: int = 128,
               l2_promotion: int = 256, row_parity: bool = False) -> np.void:
    """Tensor map of a C-contiguous 2-D float16 CuPy array, box = box_rows x box_cols elements.
    l2_promotion: the bytes the L2 fetches around a request that misses (CU_TENSOR_MAP_L2_PROMOTION_*:
    0 none, 64, 128 or 256; v5 chooses per call, its SHAPES.md "L2 promotion"). row_parity: the
    3-D map of the even and odd rows above (an even number of rows), box = box_rows of one parity."""
    rows, cols = arr.shape
    if row_parity and rows % 2:
        raise ValueError(f"row_parity needs an even number of rows, not {rows}")
    key = (device_of(arr), arr.data.ptr, rows, cols, arr.strides[0], box_rows, box_cols, swizzle_bytes, l2_promotion,
           row_parity)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            stats["hits"] += 1
            return hit
    drv = _driver()
    swizzle = {0: drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
               32: drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
               64: drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B,
               128: drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}[swizzle_bytes]
    if row_parity:  # (x, p, i): row 2i + p; a box of one parity's rows
        sizes, strides, box = [cols, 2, rows // 2], [arr.strides[0], 2 * arr.strides[0]], [box_cols, 1, box_rows]
    else:
        sizes, strides, box = [cols, rows], [arr.strides[0]], [box_cols, box_rows]
    err, tmap = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, len(sizes), arr.data.ptr,
        [drv.cuuint64_t(v) for v in sizes],    # sizes, innermost first
        [drv.cuuint64_t(v) for v in strides],  # byte strides of dimensions 1, ...
        [drv.cuuint32_t(v) for v in box],
        [drv.cuuint32_t(1)] * len(sizes),
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        getattr(drv.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_"
                + {0: "NONE", 64: "L2_64B", 128: "L2_128B", 256: "L2_256B"}[l2_promotion]),
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled refused a {rows}x{cols} array with box "
                         f"{box_rows}x{box_cols}: {err} (rows must be 16-byte multiples, base 16-byte aligned)")
    value = np.frombuffer(ctypes.string_at(tmap.getPtr(), 128), dtype=np.dtype("V128"))[0]
    with _lock:
        stats["encoded"] += 1
        _cache[key] = value
        if len(_cache) > _MAX_ENTRIES:
            _cache.popitem(last=False)
    return value
