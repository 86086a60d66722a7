// ============================================================================================
// v2_cp_async: tensor cores (mma.sync) fed from shared memory by an asynchronous pipeline.
// Builds on:  v1_tiled.
// Changed:    the math moves from CUDA-core FFMA to tensor-core mma.sync.m16n8k16 (fp16 in,
//             fp32 accumulate), each warp owning a WM x WN tile of C as mma fragments. Tiles
//             stay fp16 in shared memory and reach the tensor cores through ldmatrix. Global ->
//             shared copies become cp.async (16 bytes, no registers, no thread waiting) into a
//             ring of STAGES buffers: loads run at most STAGES-1 tiles ahead of the math, since a
//             buffer is refilled only after every warp has finished the tile it held; tracked
//             with commit/wait groups. Shared rows are 128 bytes with
//             their 16-byte chunks XOR-swizzled by row, so ldmatrix and cp.async are free of bank
//             conflicts. Blocks walk C in groups of GROUP_M tile-rows so neighbours share L2.
// Bottleneck: v1's CUDA-core FMA roof (~67 TFLOP/s). One mma.sync does 4096 FLOP; the K loop
//             no longer waits for global memory because STAGES-1 tiles are already in flight.
// Requires:   sm_80+ (cp.async, ldmatrix, mma.sync m16n8k16); M % BM == 0, N % BN == 0,
//             K % BK == 0; 16-byte aligned operands.
// Launch:     1-D grid of (M/BM) * (N/BN) blocks in grouped order; THREADS = (BM/WM)*(BN/WN)*32;
//             dynamic shared memory STAGES x (BM + BN) x BK fp16. Sizes are -D defines.
// Switches:   SWIZZLE=0 (an ablation: plain rows, 8-way ldmatrix conflicts), GROUP_M=1 (launch
//             order), BREAK_WAIT=1 (an exercise: one cp.async group too few); see the README.
// Layout:     A (M, K) and B (N, K) row-major, both K-major; C = A @ B^T (M, N) row-major.
// ============================================================================================
#include <cuda_fp16.h>

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define CHUNKS (BK / 8)                   // 16-byte chunks per shared row (8 with BK = 64)
#define A_LOADS (BM * CHUNKS / THREADS)   // cp.async per thread per stage
#define B_LOADS (BN * CHUNKS / THREADS)
#define MI (WM / 16)                      // mma tiles per warp along M (16 rows each)

static_assert(BK == 64, "the XOR swizzle below assumes 128-byte rows (8 chunks of 16 bytes)");
#define NI (WN / 8)                       // mma tiles per warp along N (8 columns each)

// Dynamic shared memory, named once: a ring of STAGES buffers of BM + BN fp16 rows of BK. The
// harness reads this constant from the compiled kernel to size the launch (no second formula).
extern "C" __device__ const unsigned gemm_smem_bytes = STAGES * (BM + BN) * BK * 2;

// Shared memory keeps each tile K-major in fp16: row r of the A tile is A[block_m + r][k0 ..
// k0+BK), 128 bytes = 8 chunks of 16 bytes. Chunk c of row r is stored at chunk c ^ (r % 8).
// ldmatrix reads the same logical chunk of 8 consecutive rows: after the swizzle they sit in 8
// different chunks, i.e. all 32 banks once. No padding needed, so tiles stay 128-byte rows.
// SWIZZLE=0 (an ablation) stores chunk c at chunk c: the 8 rows an ldmatrix reads then share
// one 16-byte column of banks, an 8-way conflict; the result is the same.
__device__ __forceinline__ unsigned swizzle(int row, int chunk) {
#if SWIZZLE
  return row * (BK * 2) + ((chunk ^ (row & 7)) << 4);
#else
  return row * (BK * 2) + (chunk << 4);
#endif
}

__device__ __forceinline__ void cp_async16(unsigned smem_addr, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One K tile of A and B, global -> shared, as cp.async 16-byte copies (nothing to wait for here).
__device__ __forceinline__ void load_tile(unsigned As, unsigned Bs, const __half* A, const __half* B,
                                          int K, int block_m, int block_n, int k0) {
#pragma unroll
  for (int i = 0; i < A_LOADS; ++i) {
    const int c = threadIdx.x + i * THREADS, row = c / CHUNKS, chunk = c % CHUNKS;
    cp_async16(As + swizzle(row, chunk), A + (size_t)(block_m + row) * K + k0 + chunk * 8);
  }
#pragma unroll
  for (int i = 0; i < B_LOADS; ++i) {
    const int c = threadIdx.x + i * THREADS, row = c / CHUNKS, chunk = c % CHUNKS;
    cp_async16(Bs + swizzle(row, chunk), B + (size_t)(block_n + row) * K + k0 + chunk * 8);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_v2_cp_async(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                 int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned smem_base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  constexpr unsigned STAGE_BYTES = (BM + BN) * BK * 2;

  // Grouped order: GROUP_M consecutive blocks walk down a column of tiles, so the B tiles they
  // share (and the A tiles of the next column) are still in L2.
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int group = blockIdx.x / (GROUP_M * tiles_n), first_m = group * GROUP_M;
  const int group_m = min(tiles_m - first_m, GROUP_M);
  const int in_group = blockIdx.x % (GROUP_M * tiles_n);
  const int block_m = (first_m + in_group % group_m) * BM, block_n = (in_group / group_m) * BN;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = (warp / (BN / WN)) * WM, warp_n = (warp % (BN / WN)) * WN;

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  // ---- load: the first STAGES-1 tiles, in flight together ---------------------------------
  const int num_k_tiles = K / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_k_tiles)
      load_tile(smem_base + s * STAGE_BYTES, smem_base + s * STAGE_BYTES + BM * BK * 2, A, B, K,
                block_m, block_n, s * BK);
    cp_async_commit();  // one group per tile, empty or not, so the counting below holds
  }

  for (int kt = 0; kt < num_k_tiles; ++kt) {
    // Groups committed so far: STAGES-1+kt. Allowing STAGES-2 pending means tile kt has landed.
    // (BREAK_WAIT=1, an exercise, allows one more: tile kt may not have landed yet.)
    cp_async_wait<STAGES - 2 + BREAK_WAIT>();
    // Makes every thread's copies visible, and proves all warps are done with tile kt-1, whose
    // buffer is refilled next.
    __syncthreads();

    // ---- load: tile kt+STAGES-1 into the buffer tile kt-1 used -----------------------------
    const int next = kt + STAGES - 1;
    if (next < num_k_tiles) {
      const unsigned s = smem_base + (next % STAGES) * STAGE_BYTES;
      load_tile(s, s + BM * BK * 2, A, B, K, block_m, block_n, next * BK);
    }
    cp_async_commit();

    // ---- compute: BK/16 steps of MI x NI mma.sync per warp -------------------------------
    const unsigned As = smem_base + (kt % STAGES) * STAGE_BYTES, Bs = As + BM * BK * 2;
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      unsigned a[MI][4], b[NI / 2][4];
#pragma unroll
      for (int i = 0; i < MI; ++i) {  // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: k 8-15
        const int row = warp_m + i * 16 + (lane % 16);
        ldmatrix_x4(a[i], As + swizzle(row, ks * 2 + lane / 16));
      }
#pragma unroll
      for (int j = 0; j < NI / 2; ++j) {  // two n8 tiles per ldmatrix.x4: {b0, b1} each
        const int row = warp_n + j * 16 + (lane % 8) + (lane / 16) * 8;
        ldmatrix_x4(b[j], Bs + swizzle(row, ks * 2 + (lane / 8) % 2));
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          mma_16816(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
    }
  }
  cp_async_wait<0>();

  // ---- epilogue: fragment (g = lane/4, t = lane%4) holds rows g, g+8 and columns 2t, 2t+1 ----
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int row = block_m + warp_m + i * 16 + g, col = block_n + warp_n + j * 8 + 2 * t;
      *reinterpret_cast<__half2*>(C + (size_t)row * N + col) = __floats2half2_rn(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<__half2*>(C + (size_t)(row + 8) * N + col) = __floats2half2_rn(acc[i][j][2], acc[i][j][3]);
    }
}
