// ============================================================================================
// v1_tiled: shared-memory tiles and 2-D register blocking, on CUDA cores.
// Builds on:  v0_naive.
// Changed:    a block of THREADS threads computes a BM x BN tile of C instead of one thread one
//             element. It copies BM x BK of A and BN x BK of B into shared memory with 16-byte
//             loads (fp16 -> fp32 once, on the way in), and each thread keeps a TM x TN tile of C
//             in registers: a value read from shared memory feeds TN (or TM) FMAs. The next K
//             tile is loaded into registers while the current one is computed.
// Bottleneck: v0's loads. Each element of A read from global memory now serves BN outputs (B:
//             BM) instead of 1, and 16 shared-memory loads feed 256 FMAs. What is left is the
//             CUDA cores' fp32 FMA rate (~67 TFLOP/s on an H100/H200): the ceiling this stage
//             exists to show.
// Requires:   sm_70+; M % BM == 0, N % BN == 0, K % BK == 0; 16-byte aligned operands.
// Launch:     grid (N/BN, M/BM); THREADS = (BM/TM) * (BN/TN); dynamic shared memory
//             2 x (BM + BN) x LDS floats. All sizes are -D defines set by the harness.
// Switches:   PAD=0 (an ablation: the bank conflicts below come back) and BREAK_SYNC=1 (an
//             exercise: no barrier between K tiles); README, "Ablations" and "Break it".
// Layout:     A (M, K) and B (N, K) row-major, both K-major; C = A @ B^T (M, N) row-major.
// ============================================================================================
#include <cuda_fp16.h>

#define LDS (BK + PAD)                   // shared-memory row stride in floats (see "banks")
#define THREADS ((BM / TM) * (BN / TN))
#define A_LOADS (BM * BK / 8 / THREADS)  // 16-byte (8 x fp16) loads per thread per tile
#define B_LOADS (BN * BK / 8 / THREADS)

// Dynamic shared memory, named once: two buffers of BM + BN rows of LDS floats. The harness
// reads this constant from the compiled kernel to size the launch (no second formula).
extern "C" __device__ const unsigned gemm_smem_bytes = 2 * (BM + BN) * LDS * 4;

// Shared memory keeps each tile K-major, like global memory: row r of the A tile holds
// A[block_m + r][k0 .. k0+BK) as fp32, padded to LDS floats. Banks: the compute loop's 16-byte
// loads of B hit rows r..r+7 at one column in each quarter-warp. With LDS = BK + 4 and LDS / 4
// odd (20 for BK = 16), row r starts on 4-bank group (r * LDS / 4) % 8: eight rows, eight
// different groups, all 32 banks once. The padding is chosen for those loads: store_tile's
// 16-byte stores (two rows per quarter-warp) have 2-way conflicts, 4 STS.128 per tile against
// the compute loop's 64 conflict-free LDS.128.

__device__ __forceinline__ void load_tile(uint4 (&a_reg)[A_LOADS], uint4 (&b_reg)[B_LOADS],
                                          const __half* A, const __half* B, int K,
                                          int block_m, int block_n, int k0) {
#pragma unroll
  for (int i = 0; i < A_LOADS; ++i) {
    const int c = threadIdx.x + i * THREADS, row = c / (BK / 8), col = (c % (BK / 8)) * 8;
    a_reg[i] = *reinterpret_cast<const uint4*>(A + (size_t)(block_m + row) * K + k0 + col);
  }
#pragma unroll
  for (int i = 0; i < B_LOADS; ++i) {
    const int c = threadIdx.x + i * THREADS, row = c / (BK / 8), col = (c % (BK / 8)) * 8;
    b_reg[i] = *reinterpret_cast<const uint4*>(B + (size_t)(block_n + row) * K + k0 + col);
  }
}

// Eight fp16 values (one 16-byte load) -> eight fp32 values in shared memory (two STS.128).
__device__ __forceinline__ void store_fp32(float* dst, uint4 v) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
  const float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
  const float2 f2 = __half22float2(h[2]), f3 = __half22float2(h[3]);
  reinterpret_cast<float4*>(dst)[0] = make_float4(f0.x, f0.y, f1.x, f1.y);
  reinterpret_cast<float4*>(dst)[1] = make_float4(f2.x, f2.y, f3.x, f3.y);
}

__device__ __forceinline__ void store_tile(float* As, float* Bs, const uint4 (&a_reg)[A_LOADS],
                                           const uint4 (&b_reg)[B_LOADS]) {
#pragma unroll
  for (int i = 0; i < A_LOADS; ++i) {
    const int c = threadIdx.x + i * THREADS, row = c / (BK / 8), col = (c % (BK / 8)) * 8;
    store_fp32(As + row * LDS + col, a_reg[i]);
  }
#pragma unroll
  for (int i = 0; i < B_LOADS; ++i) {
    const int c = threadIdx.x + i * THREADS, row = c / (BK / 8), col = (c % (BK / 8)) * 8;
    store_fp32(Bs + row * LDS + col, b_reg[i]);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_v1_tiled(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
              int M, int N, int K) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int block_m = blockIdx.y * BM, block_n = blockIdx.x * BN;
  // Thread (ty, tx) owns rows ty + i*(BM/TM) and columns tx + j*(BN/TN) of the block tile:
  // interleaved, so a warp's shared-memory reads of B hit 16 consecutive rows (no conflicts).
  const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  // ---- load: the first tile ----------------------------------------------------------------
  uint4 a_reg[A_LOADS], b_reg[B_LOADS];
  load_tile(a_reg, b_reg, A, B, K, block_m, block_n, 0);
  store_tile(smem, smem + BM * LDS, a_reg, b_reg);
  __syncthreads();

  const int num_k_tiles = K / BK;
  for (int kt = 0; kt < num_k_tiles; ++kt) {
    float* As = smem + (kt & 1) * (BM + BN) * LDS;
    float* Bs = As + BM * LDS;
    // ---- load: the next tile, into registers, while this one is computed ------------------
    if (kt + 1 < num_k_tiles) load_tile(a_reg, b_reg, A, B, K, block_m, block_n, (kt + 1) * BK);

    // ---- compute: TM x TN outer products, four k at a time (16-byte shared loads) -----------
#pragma unroll
    for (int kk = 0; kk < BK; kk += 4) {
      float4 a[TM];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        a[i] = *reinterpret_cast<const float4*>(As + (ty + i * (BM / TM)) * LDS + kk);
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const float4 b = *reinterpret_cast<const float4*>(Bs + (tx + j * (BN / TN)) * LDS + kk);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
          acc[i][j] = fmaf(a[i].x, b.x, acc[i][j]);
          acc[i][j] = fmaf(a[i].y, b.y, acc[i][j]);
          acc[i][j] = fmaf(a[i].z, b.z, acc[i][j]);
          acc[i][j] = fmaf(a[i].w, b.w, acc[i][j]);
        }
      }
    }

    // The other buffer was last read in iteration kt-1, which every thread finished before the
    // barrier that ended it: safe to overwrite now. One barrier per tile.
    if (kt + 1 < num_k_tiles) {
      float* As_next = smem + ((kt + 1) & 1) * (BM + BN) * LDS;
      store_tile(As_next, As_next + BM * LDS, a_reg, b_reg);
    }
#if !BREAK_SYNC  // an exercise (README, "Break it"): without this barrier the next tile races
    __syncthreads();
#endif
  }

  // ---- epilogue ------------------------------------------------------------------------------
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    __half* c_row = C + (size_t)(block_m + ty + i * (BM / TM)) * N + block_n + tx;
#pragma unroll
    for (int j = 0; j < TN; ++j) c_row[j * (BN / TN)] = __float2half_rn(acc[i][j]);
  }
}
