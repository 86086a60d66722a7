// ============================================================================================
// v0_naive: one thread per output element.
// Builds on:  nothing; this is the starting point every later stage is measured against.
// Changed:    -
// Bottleneck: none removed; it shows the problem. Every multiply-add loads one value of A and
//             one of B (4 bytes for 2 FLOP) and no thread shares what it loaded with another,
//             so the loads, not the arithmetic, set the speed.
// Requires:   any CUDA GPU; any M, N, K >= 1; fp16 operands, fp32 accumulation.
// Launch:     blocks of BLOCK_N x BLOCK_M threads (passed by the harness as -D defines).
//             Thread (x, y) of block (bx, by) computes C[m][n] with n = bx*BLOCK_N + x and
//             m = by*BLOCK_M + y, so the 32 lanes of a warp write 32 neighbouring outputs.
// Layout:     A (M, K) row-major, B (N, K) row-major (a Linear layer's weight), C = A @ B^T
//             (M, N) row-major.
// MAP:        an ablation of the thread mapping (README, "Ablation"); the harness passes it:
//             0 (default, above) lanes along N: each B load touches 32 rows of B, A broadcast;
//             1 lanes along M (x walks m, y walks n): each A load touches 32 rows, B broadcast;
//             2 lanes along K: one warp per output (n = bx, m = by*BLOCK_M + y), lane x adds
//               k = x, x+32, ... and a shuffle sums the 32 partial dot products.
// ============================================================================================
#include <cuda_fp16.h>

extern "C" __global__ void __launch_bounds__(BLOCK_N * BLOCK_M)
gemm_v0_naive(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
              int M, int N, int K) {
#if MAP == 0
  const int n = blockIdx.x * BLOCK_N + threadIdx.x;
  const int m = blockIdx.y * BLOCK_M + threadIdx.y;
#elif MAP == 1
  const int m = blockIdx.x * BLOCK_N + threadIdx.x;
  const int n = blockIdx.y * BLOCK_M + threadIdx.y;
#else
  const int n = blockIdx.x;
  const int m = blockIdx.y * BLOCK_M + threadIdx.y;
#endif
  if (m >= M || n >= N) return;

  // ---- load: straight from global memory, one element of A and one of B per multiply-add ----
  // Lane x of the warp walks row n = bx*BLOCK_N + x of B: 32 lanes read 32 different rows, K
  // elements apart (uncoalesced; L1 catches the rest of each 32-byte sector for the next 15 k).
  // All lanes read the same element of A's row m (one broadcast load).
  const __half* a_row = A + (size_t)m * K;
  const __half* b_row = B + (size_t)n * K;

  // ---- compute: a dot product of length K in fp32 -----------------------------------------
  float acc = 0.0f;
#if MAP != 2
  for (int k = 0; k < K; ++k) {
    acc = fmaf(__half2float(a_row[k]), __half2float(b_row[k]), acc);
  }
#else
  for (int k = threadIdx.x; k < K; k += 32) {
    acc = fmaf(__half2float(a_row[k]), __half2float(b_row[k]), acc);
  }
  for (int lanes = 16; lanes > 0; lanes /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, lanes);
  if (threadIdx.x != 0) return;
#endif

  // ---- epilogue --------------------------------------------------------------------------
  C[(size_t)m * N + n] = __float2half_rn(acc);
}
