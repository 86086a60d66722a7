// ============================================================================================
// v3_wgmma_tma: Hopper's own path. TMA copies tiles into shared memory, mbarriers say when they
//             have landed, and wgmma multiplies them straight out of shared memory.
// Builds on:  v2_cp_async.
// Changed:    loads: one thread issues cp.async.bulk.tensor (TMA) for a whole A and B tile per
//             stage, described by tensor maps built on the host; the copy engine writes them in
//             the 128-byte swizzle wgmma reads, and signals an mbarrier with the byte count
//             (expect_tx). The 255 other threads issue no copies and compute no addresses.
//             math: each warpgroup (4 warps) issues wgmma.mma_async m64nBNk16, operands read
//             from shared memory through 64-bit matrix descriptors (no ldmatrix, no fragments
//             in registers), accumulators in registers; fence / commit_group / wait_group.
//             pipeline: a ring of STAGES buffers, loads at most STAGES-1 tiles ahead of the math
//             (a buffer is refilled only after all warps released the tile it held; only the
//             prologue issues STAGES at once); a "full" mbarrier per stage (TMA -> math) and an
//             "empty" one (math -> TMA) replace cp.async groups and __syncthreads.
// Bottleneck: v2's instruction path. mma.sync moves every operand through registers with
//             ldmatrix (LDSM) and issues per warp; wgmma reads shared memory directly for a whole
//             warpgroup, 64 x BN x 16 per instruction, and TMA takes address arithmetic and copy
//             instructions off the SM.
// Requires:   sm_90a (wgmma); M % BM == 0, N % BN == 0, K % BK == 0 (BK = 64: one 128-byte
//             swizzle row); 16-byte aligned operands.
// Launch:     1-D grid of (M/BM) * (N/BN) blocks in grouped order; THREADS = (BM/64) * 128; smem
//             STAGES x (BM + BN) x BK fp16 + 1 KiB (alignment, barriers); tensor maps from the host.
//             -D defines: the sizes, and BREAK_FULL_WAIT / BREAK_EMPTY_WAIT / BREAK_FENCE
//             (exercises, default 0).
// Layout:     A (M, K) and B (N, K) row-major, both K-major; C = A @ B^T (M, N) row-major.
// ============================================================================================
#include <cuda_fp16.h>

#define THREADS ((BM / 64) * 128)
#define A_BYTES (BM * BK * 2)                 // one A tile in shared memory
#define B_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)

// Dynamic shared memory, named once: STAGES tile buffers, 1 KiB of slack to align them to the
// 1024-byte swizzle period, then a full and an empty mbarrier (8 bytes each) per buffer. The
// harness reads this constant from the compiled kernel to size the launch.
extern "C" __device__ const unsigned gemm_smem_bytes = STAGES * STAGE_BYTES + 1024 + 2 * 8 * STAGES;

// The 128-byte CUtensorMap, received by value. The harness encodes it with cuda-python.
struct alignas(64) TmaDesc { unsigned long long v[16]; };

// ---- mbarrier: a shared-memory object counting arrivals and, for TMA, transaction bytes -----
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// The producer's arrival: "count me, and expect `bytes` more bytes before this phase completes".
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes));
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar));
}
// Wait until the phase with parity `phase` has completed (each use of a stage flips it).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar), "r"(phase));
}

// ---- TMA: one box of a 2-D tensor, global -> shared, completion counted on an mbarrier ------
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDesc* map, int x, int y, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}

// ---- wgmma ------------------------------------------------------------------------------------
// Shared-memory matrix descriptor of a K-major tile in the 128-byte swizzle: bits 0-13 start
// address >> 4; 16-29 leading byte offset >> 4 (unused for swizzled K-major: 1); 32-45 stride
// byte offset >> 4 = 1024 B (8 rows x 128 B) >> 4 = 64; 62-63 swizzle mode (1 = 128 B). A k16
// step inside the 64-wide tile moves the start address by 32 bytes; the hardware applies the
// swizzle to the computed address, so that is all it takes.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) {
  return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// D (64 x N, fp32, 128 threads x N/2 registers) += A (64 x 16, smem) * B (N x 16, smem)^T.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long desc_a,
                                                unsigned long long desc_b) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b));
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long desc_a,
                                                unsigned long long desc_b) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b));
}

__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], unsigned long long da, unsigned long long db) {
#if BN == 256
  wgmma_m64n256k16(d, da, db);
#elif BN == 128
  wgmma_m64n128k16(d, da, db);
#else
#error "BN must be 128 or 256"
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_v3_wgmma_tma(const __grid_constant__ TmaDesc tmap_a, const __grid_constant__ TmaDesc tmap_b,
                  __half* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The 128-byte swizzle repeats every 1024 bytes: tiles must start on a 1024-byte boundary.
  const unsigned smem_base = (static_cast<unsigned>(__cvta_generic_to_shared(smem_raw)) + 1023) & ~1023u;
  const unsigned full_bar = smem_base + STAGES * STAGE_BYTES;  // STAGES x 8 bytes
  const unsigned empty_bar = full_bar + STAGES * 8;              // STAGES x 8 bytes

  // Grouped order, as in v2: GROUP_M consecutive blocks walk down a column of tiles.
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int group = blockIdx.x / (GROUP_M * tiles_n), first_m = group * GROUP_M;
  const int group_m = min(tiles_m - first_m, GROUP_M);
  const int in_group = blockIdx.x % (GROUP_M * tiles_n);
  const int block_m = (first_m + in_group % group_m) * BM, block_n = (in_group / group_m) * BN;

  const int warpgroup = threadIdx.x / 128, lane = threadIdx.x % 32;
  const int num_k_tiles = K / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 1);                 // the producer's expect_tx arrival
      mbar_init(empty_bar + 8 * s, THREADS / 32);     // one arrival per warp when done reading
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;

  // ---- load: thread 0 starts the first STAGES tiles ---------------------------------------
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES && s < num_k_tiles; ++s) {
      const unsigned a_dst = smem_base + s * STAGE_BYTES;
      mbar_expect_tx(full_bar + 8 * s, STAGE_BYTES);
      tma_load_2d(a_dst, &tmap_a, s * BK, block_m, full_bar + 8 * s);
      tma_load_2d(a_dst + A_BYTES, &tmap_b, s * BK, block_n, full_bar + 8 * s);
    }
  }

  for (int kt = 0; kt < num_k_tiles; ++kt) {
    const int s = kt % STAGES;
    // Tile kt has landed. (BREAK_FULL_WAIT=1, an exercise, reads the first tile without waiting;
    // with a single K tile it still waits, so no copy is in flight when the block exits.)
    if (!BREAK_FULL_WAIT || kt > 0 || num_k_tiles == 1) mbar_wait(full_bar + 8 * s, (kt / STAGES) & 1);

    // ---- compute: BK/16 wgmmas over this warpgroup's 64 rows of A and all BN rows of B ------
    const unsigned a_tile = smem_base + s * STAGE_BYTES + warpgroup * 64 * BK * 2;
    const unsigned b_tile = smem_base + s * STAGE_BYTES + A_BYTES;
    if (!BREAK_FENCE) wgmma_fence();  // accumulators are about to be read and written asynchronously
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_tile(acc, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32));
    wgmma_commit();
    // Keep this tile's wgmmas in flight; the previous tile's are now complete.
    wgmma_wait<1>();

    // ---- load: release tile kt-1's buffer and refill it with tile kt-1+STAGES ----------------
    if (kt > 0) {
      const int prev = kt - 1, ps = prev % STAGES;
      if (lane == 0) mbar_arrive(empty_bar + 8 * ps);
      const int next = prev + STAGES;
      if (threadIdx.x == 0 && next < num_k_tiles) {
        if (!BREAK_EMPTY_WAIT) mbar_wait(empty_bar + 8 * ps, (prev / STAGES) & 1);  // all warps done
        const unsigned a_dst = smem_base + ps * STAGE_BYTES;
        mbar_expect_tx(full_bar + 8 * ps, STAGE_BYTES);
        tma_load_2d(a_dst, &tmap_a, next * BK, block_m, full_bar + 8 * ps);
        tma_load_2d(a_dst + A_BYTES, &tmap_b, next * BK, block_n, full_bar + 8 * ps);
      }
    }
  }
  wgmma_wait<0>();

  // ---- epilogue: accumulator layout of m64nN: warp w of the warpgroup owns rows 16w..16w+15;
  // lane (g = lane/4, t = lane%4) holds, for each 8-column chunk j, rows g and g+8 at columns
  // 8j + 2t and 8j + 2t + 1: acc[4j..4j+1] (row g), acc[4j+2..4j+3] (row g+8).
  const int g = lane / 4, t = lane % 4, warp_in_group = (threadIdx.x % 128) / 32;
  const int row = block_m + warpgroup * 64 + warp_in_group * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = block_n + 8 * j + 2 * t;
    *reinterpret_cast<__half2*>(C + (size_t)row * N + col) = __floats2half2_rn(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<__half2*>(C + (size_t)(row + 8) * N + col) = __floats2half2_rn(acc[4 * j + 2], acc[4 * j + 3]);
  }
}
