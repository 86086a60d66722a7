"""What v5's ROW_PARITY relies on from TMA, box by box: a 3-D tensor map of a matrix's rows taken
apart by parity, and a box that starts left of column 0.

v5's ROW_PARITY (kernel.cu "ROW_PARITY", OPEN_QUESTIONS.md "Small square problems") gives each
tile the even or the odd rows of C. stages.core.tma.tensor_map(row_parity=True) describes A and C
as (cols, 2, rows / 2) with strides (row pitch, 2 row pitches), so that element (x, p, i) is row
2i + p, and a box of 64 columns x 1 x 64 rows holds 64 rows of one parity. An odd-row tile loads
its k-blocks 8 columns early, from x = 64 kt - 8: the PTX ISA's tiled mode fills the part of a box
outside the tensor with zeros ("Out of Boundary Access": the box may cross the boundary in any
dimension), and the kernel needs that for the columns left of 0 too.

Each case copies one box with the harness's own encoder and the kernel's own swizzle (128 B,
64 x 64 fp16), global -> shared (the shared tile, un-swizzled on the host, against the rows and
columns the box should hold: zeros outside the tensor) or shared -> global (into a NaN-poisoned
C: exactly the box's rows of one parity and columns inside C written, nothing else):

  load 2-D    x = 0 and x = -8 of a plain map (the negative column alone)
  load 3-D    parity 0 and 1 at x = 0, -8 and 960 (past K = 1000), and rows past M / 2
  store 3-D   parity 1 at the origin, parity 0 clipped at C's last row and column

Run on an H100/H200: PYTHONPATH=. python3 probes/tma_parity.py   (needs CuPy, cuda-python)
Writes $OUT/tma_parity.json when OUT is set. Exit status 0 when every case holds.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

SRC = r"""
struct alignas(64) TensorMap { unsigned long long w[16]; };
#define BYTES (64 * 128)  // one box: 64 rows of 64 fp16

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

extern "C" __global__ void __launch_bounds__(128) load_box(const __grid_constant__ TensorMap map, int dims,
                                                          int x, int y, int z, unsigned char* out, int* timed_out) {
  __shared__ __align__(1024) unsigned char tile[BYTES];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned b = smem_u32(&bar), dst = smem_u32(tile);
  for (int i = threadIdx.x; i < BYTES; i += blockDim.x) tile[i] = 0xAB;  // not zero: a fill must be TMA's
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(BYTES) : "memory");
    if (dims == 3)
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                   :: "r"(dst), "l"(&map), "r"(x), "r"(y), "r"(z), "r"(b) : "memory");
    else
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   :: "r"(dst), "l"(&map), "r"(x), "r"(y), "r"(b) : "memory");
  }
  __syncthreads();
  unsigned done = 0;  // bounded: a refused box reports a time-out instead of hanging the GPU
  for (long long spin = 0; spin < (1ll << 24) && !done; ++spin)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(b) : "memory");
  if (!done) { if (threadIdx.x == 0) *timed_out = 1; return; }
  for (int i = threadIdx.x; i < BYTES; i += blockDim.x) out[i] = tile[i];
}

extern "C" __global__ void __launch_bounds__(128) store_box(const __grid_constant__ TensorMap map, int x, int y, int z,
                                                           const unsigned char* src) {
  __shared__ __align__(1024) unsigned char tile[BYTES];
  for (int i = threadIdx.x; i < BYTES; i += blockDim.x) tile[i] = src[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> TMA reads
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                 :: "l"(&map), "r"(x), "r"(y), "r"(z), "r"(smem_u32(tile)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}
"""

M = N = K = 1000  # v5's 1000^3: K % 16 == 8, so every other row of A starts mid-sector


def swizzle(logical: np.ndarray) -> np.ndarray:
    """64 x 64 fp16 -> the 128-byte-swizzled shared tile: row r's 16-byte chunk j at chunk j ^ (r % 8)."""
    chunks = logical.reshape(64, 8, 8)
    raw = np.empty_like(chunks)
    for r in range(64):
        raw[r, np.arange(8) ^ (r % 8)] = chunks[r]
    return raw.reshape(64, 64)


def unswizzle(raw: np.ndarray) -> np.ndarray:
    chunks = raw.reshape(64, 8, 8)
    return np.stack([chunks[r, np.arange(8) ^ (r % 8)] for r in range(64)]).reshape(64, 64)


def expected_box(a: np.ndarray, rows, x: int) -> tuple[np.ndarray, int]:
    """(the 64 x 64 box of `a` at these 64 row indices (None: outside) and columns x .. x + 63 with
    zeros outside the tensor, how many of its elements are outside)."""
    box = np.zeros((64, 64), np.float16)
    inside = 0
    for r, row in enumerate(rows):
        if row is None:
            continue
        cols = [c for c in range(64) if 0 <= x + c < a.shape[1]]
        box[r, cols] = a[row, [x + c for c in cols]]
        inside += len(cols)
    return box, 64 * 64 - inside


def main() -> int:
    try:
        import cupy as cp

        from stages.core import tma
    except ImportError as exc:  # pragma: no cover - needs a GPU machine
        sys.exit(f"tma_parity: needs CuPy, cuda-python and the repository on PYTHONPATH: {exc}")
    dev = cp.cuda.Device()
    if dev.compute_capability != "90":
        print(f"sm_{dev.compute_capability}: needs an sm_90 GPU (H100/H200); nothing to probe")
        return 0
    mod = cp.RawModule(code=SRC, options=("-arch=sm_90a", "-std=c++17"))
    load, store = mod.get_function("load_box"), mod.get_function("store_box")
    rng = np.random.default_rng(2026_12_05)
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    a = cp.asarray(a_host)
    plain, parity = tma.tensor_map(a, 64, 64), tma.tensor_map(a, 64, 64, row_parity=True)
    results, ok_all = [], True

    def run_load(name, tmap, dims, x, y, z, rows):
        out = cp.zeros(64 * 128, cp.uint8)
        flag = cp.zeros(1, cp.int32)
        load((1,), (128,), (tmap, np.int32(dims), np.int32(x), np.int32(y), np.int32(z), out, flag))
        dev.synchronize()
        if int(flag.get()[0]):
            return {"case": name, "ok": False, "why": "the box never arrived (mbarrier wait timed out)"}
        got = unswizzle(cp.asnumpy(out).view(np.float16).reshape(64, 64))
        want, outside = expected_box(a_host, rows, x)
        bad = int(np.sum(got.view(np.uint16) != want.view(np.uint16)))
        return {"case": name, "ok": bad == 0, "wrong_elements": bad, "outside_the_tensor": outside}

    half = M // 2
    par_rows = lambda p, i: [2 * (i + r) + p if i + r < half else None for r in range(64)]  # noqa: E731
    cases = [("2-D x=0", plain, 2, 0, 0, 0, list(range(64))),
             ("2-D x=-8", plain, 2, -8, 0, 0, list(range(64))),
             ("3-D parity 0 x=0", parity, 3, 0, 0, 0, par_rows(0, 0)),
             ("3-D parity 1 x=0", parity, 3, 0, 1, 0, par_rows(1, 0)),
             ("3-D parity 1 x=-8 i=5", parity, 3, -8, 1, 5, par_rows(1, 5)),
             ("3-D parity 0 x=-8", parity, 3, -8, 0, 0, par_rows(0, 0)),
             ("3-D parity 1 x=952 i=470 (past K and M/2)", parity, 3, 952, 1, 470, par_rows(1, 470))]
    for name, tmap, dims, x, p, i, rows in cases:
        y, z = (p, i) if dims == 3 else (i, 0)
        results.append(run_load(name, tmap, dims, x, y, z, rows))

    # stores: a 64 x 64 tile of distinct values into a NaN-poisoned C through its 3-D parity map
    tile = (np.arange(64 * 64, dtype=np.float32) / 8 + 1).astype(np.float16).reshape(64, 64)
    src = cp.asarray(swizzle(tile).view(np.uint8).reshape(-1))
    for name, x, p, i in (("store 3-D parity 1 at the origin", 0, 1, 0),
                          ("store 3-D parity 0 x=960 i=470 (clipped)", 960, 0, 470)):
        c = cp.full((M, N), np.nan, cp.float16)
        store((1,), (128,), (tma.tensor_map(c, 64, 64, row_parity=True), np.int32(x), np.int32(p), np.int32(i), src))
        dev.synchronize()
        got = cp.asnumpy(c)
        want = np.full((M, N), np.nan, np.float16)
        for r in range(64):
            if i + r < half:
                cols = slice(x, min(x + 64, N))
                want[2 * (i + r) + p, cols] = tile[r, : cols.stop - x]
        bad = int(np.sum(got.view(np.uint16) != want.view(np.uint16)))
        results.append({"case": name, "ok": bad == 0, "wrong_elements": bad})
    for r in results:
        ok_all &= r["ok"]
        print(f"{r['case']:<44} {'PASS' if r['ok'] else 'FAIL'}  {r.get('why') or str(r['wrong_elements']) + ' wrong'}")
    print("every case holds" if ok_all else "SOME CASES DO NOT HOLD")
    if os.environ.get("OUT"):  # (this machine and its versions as the bench records them)
        from stages.tools import records
        path = os.path.join(os.environ["OUT"], "tma_parity.json")
        os.makedirs(os.environ["OUT"], exist_ok=True)
        with open(path, "w") as f:
            json.dump({"probe": "tma_parity", "env": records.environment(), "m": M, "k": K,
                       "results": results, "all_hold": ok_all}, f, indent=1)
        print("wrote", path)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
