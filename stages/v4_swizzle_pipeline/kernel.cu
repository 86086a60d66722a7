// ============================================================================================
// v4_swizzle_pipeline: a warp-specialized 4-stage pipeline with an L2-swizzled persistent
//             schedule. One warpgroup only loads, two only multiply; the grid stays resident and
//             walks the tiles in an L2-friendly order.
// Builds on:  v3_wgmma_tma.
// Changed:    roles: 3 warpgroups. Warpgroup 0 is the producer (one thread issues every TMA,
//             setmaxnreg.dec to 40 registers); warpgroups 1-2 are consumers (setmaxnreg.inc to
//             232) that only wait, issue wgmma, release buffers and run the epilogue.
//             pipeline: the STAGES-deep ring of full/empty mbarriers is initialised once; its
//             phase bits run on across tiles, so loads of tile i+1 start during tile i's last
//             k-blocks and its epilogue. The first k-block of a tile issues wgmma with
//             scale-d = 0 instead of zero-filling 128 accumulators.
//             schedule (PERSISTENT=1): min(tiles, SMs) blocks loop tile += gridDim.x; ORDER picks
//             the walk: 0 row-major, 1 grouped by GROUP_M rows (v3's), 2 a generalized Hilbert
//             curve over any tiles_m x tiles_n.
//             epilogue (TMA_STORE=1): fp16 into a 128B-swizzled shared staging tile, then one
//             thread per consumer warpgroup stores it with cp.async.bulk.tensor (bulk_group);
//             the next tile's math does not wait for the store; with EPI_DEFER its second pass
//             waits in registers (fp16) until the next tile's first wgmmas are issued.
//             cluster (CLUSTER_M=2): two CTAs on vertically adjacent tiles share B: each loads
//             half of B and multicasts it to both; buffers are refilled only when the consumers
//             of both CTAs have released them.
//             stream-K (STREAMK=1): when the units do not divide evenly over the workers, the
//             last partial wave is not left to a few SMs: its k-blocks are split evenly over all
//             workers; a unit finished by several writes fp32 partials to a workspace and the
//             worker holding its last k-block adds them (fixed order) and stores C.
// Bottleneck: v3's single thread that both loads and computes (its warp stalls on `empty`), the
//             launch of a fresh block per tile (prologue, drain and barrier setup every tile,
//             no load/epilogue overlap), grouped order tuned for waves rather than residency,
//             and 4-byte scattered epilogue stores.
// Requires:   sm_90a (wgmma, setmaxnreg); M % (BM * CLUSTER_M) == 0, N % BN == 0, K % BK == 0
//             (BK = 64: one 128-byte swizzle row); 16-byte aligned operands.
// Launch:     1-D grid: min(units, clusters that fit at once) * CLUSTER_M blocks (SMs / CLUSTER_M
//             on the H200; the host asks the driver) if PERSISTENT, else one
//             block per unit (a unit = CLUSTER_M tiles stacked in M); THREADS = 384 (3 warpgroups);
//             dynamic shared memory = STAGES x (BM + BN) x BK fp16 + the epilogue staging tile
//             (TMA_STORE) + 1 KiB alignment slack + barriers: gemm_smem_bytes below. Sizes and
//             switches are -D defines; tensor maps of A, B and C come from the harness, and with
//             STREAMK a per-stream workspace (partials + flags, the flags zero between launches).
// Layout:     A (M, K) and B (N, K) row-major, both K-major; C = A @ B^T (M, N) row-major.
// ============================================================================================
#include <cuda_fp16.h>

// ---- roles and register budgets (setmaxnreg: 40 x 128 + 232 x 256 = 64,512 <= 65,536) -------
#define THREADS 384                          // warpgroup 0: producer; 1-2: consumers
#define CONSUMERS 2                          // consumer warpgroups, 64 rows of BM each
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232
#if BM != 64 * CONSUMERS
#error "BM must be 64 rows per consumer warpgroup (128)"
#endif
// PINGPONG=1: the consumers take turns instead of sharing a tile. Each computes a whole BM x BN
// tile (BN = 128: two m64n128 halves, the same 128 accumulators per thread) on alternate tiles
// of the block's list, so one warpgroup's epilogue runs while the other's wgmmas keep the tensor
// cores busy. An order barrier hands the mainloop from one to the other.
#ifndef PINGPONG
#define PINGPONG 0
#endif
#if PINGPONG && (BN != 128 || STREAMK || EPI_BORROW)
#error "PINGPONG needs BN=128 (a whole tile per warpgroup), STREAMK=0 and EPI_BORROW=0"
#endif
#define WG_HALVES (PINGPONG ? BM / 64 : 1)     // m64 wgmmas per k16 step per consumer warpgroup
#define RELEASERS (PINGPONG ? 1 : CONSUMERS)    // consumer warpgroups that read each ring buffer
#define ACC (WG_HALVES * BN / 2)               // fp32 accumulators per consumer thread

#define A_BYTES (BM * BK * 2)                 // one A tile in shared memory
#define B_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define B_SLICE_ROWS (BN / CLUSTER_M)         // rows of B one CTA loads (and multicasts)
#define B_SLICE_BYTES (B_SLICE_ROWS * BK * 2)
// Epilogue staging (TMA_STORE): per consumer warpgroup 64 rows x EPI_COLS fp16, written as
// EPI_COLS/64 boxes of 64 x 64 (128-byte rows, 128B swizzle), stored BN/EPI_COLS times per tile.
#define EPI_COLS 128
#define EPI_BOX_BYTES (64 * 64 * 2)
#define EPI_WG_BYTES (64 * EPI_COLS * 2)
#define EPI_PASSES (ACC * 2 / EPI_COLS)       // 64-row passes per tile and warpgroup (PINGPONG: per half)
#if TMA_STORE
#define EPI_BYTES (CONSUMERS * EPI_WG_BYTES)
#else
#define EPI_BYTES 0
#endif
#define ALIGN_SLACK 1024                      // the 128B swizzle repeats every 1024 bytes
#ifndef EPI_BORROW
#define EPI_BORROW 0
#endif
#if EPI_BORROW && (!TMA_STORE || CLUSTER_M != 1 || BN != 2 * EPI_COLS)
#error "EPI_BORROW needs TMA_STORE=1, CLUSTER_M=1 and BN=256 (two store passes)"
#endif
// EPI_DEFER=d > 0: the epilogue's second store pass is deferred into the next unit's mainloop.
// Its 64 values per thread are rounded to fp16 (32 registers) before the accumulators are reused,
// and staged and stored once the wgmmas of that unit's first d k-blocks are issued, so the tensor
// cores run while the pass waits for the first pass's store to read the staging tile.
#ifndef EPI_DEFER
#define EPI_DEFER 0
#endif
// (It applies to the TMA-store epilogue of the 128 x 256 tile, two passes; EPI_BORROW and
// PINGPONG, the alternatives it was measured against, store at once.)
#define DEFER (EPI_DEFER && TMA_STORE && !EPI_BORROW && !PINGPONG && BN == 2 * EPI_COLS)
#define BAR_CONSUMERS 3                       // named barrier of both consumer warpgroups (1, 2: each alone)
#define BAR_BYTES (2 * 8 * STAGES + 16 * PINGPONG)  // a full and an empty mbarrier per buffer (+ 2 order barriers)

// Dynamic shared memory, named once: STAGES tile buffers, the epilogue staging tile, 1 KiB of
// slack to align them to the 1024-byte swizzle period, then the barriers. With the defaults:
// 4 x 49,152 + 32,768 + 1,024 + 64 = 230,464 B of the 232,448 an H200 block may have. The harness
// reads this constant from the compiled kernel to size the launch.
extern "C" __device__ const unsigned gemm_smem_bytes = STAGES * STAGE_BYTES + EPI_BYTES + ALIGN_SLACK + BAR_BYTES;

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
// `count` arrivals at once (one thread speaking for a whole warpgroup's warps).
__device__ __forceinline__ void mbar_arrive_count(unsigned bar, unsigned count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Arrive on the barrier at the same offset in CTA `cta` of the cluster (mapa translates it).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(bar), "r"(cta) : "memory");
}
// Wait until the phase with parity `phase` has completed (each use of a stage flips it).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar), "r"(phase) : "memory");
}
// Named barrier among `count` threads (id 0 is __syncthreads'): the consumer warpgroup alone.
__device__ __forceinline__ void named_bar_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// ---- TMA: one box of a 2-D tensor, global -> shared, completion counted on an mbarrier ------
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDesc* map, int x, int y, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}
// The same box written to the same offset of every CTA in `mask`, and counted on the mbarrier
// at the same offset in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TmaDesc* map, int x, int y,
                                                      unsigned bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}
// shared -> global: one box, tracked by the issuing thread's bulk-group counter.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* map, unsigned src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(map), "r"(x), "r"(y), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until the committed stores have finished READING shared memory (their global writes may
// still be in flight): then the staging tile may be overwritten.
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---- schedule: tile index -> (tile row, tile column) -----------------------------------------
// Units are the scheduled items: CLUSTER_M vertically adjacent tiles (one per CTA of a cluster).
// ORDER 0: row-major. ORDER 1: v3's grouped order, GROUP_M tile rows walked column by column.
// ORDER 2: the generalized Hilbert curve ("gilbert", J. Cerveny): for any w x h, consecutive
// indices are neighbouring tiles (a diagonal step only where w or h is odd), so the ~132 tiles
// resident at once cover a compact patch of C and share rows of A and columns of B in L2.
// It descends by halving the rectangle; each level keeps only the part holding `idx`: a loop,
// no recursion, no stack.
// ORDER 3: the XOR of block indices (the seed's DeepGEMM story): row-major, then within every
// complete aligned group of XOR_W tile columns a row's columns are permuted, un ^= um % XOR_W, so
// blocks that start together in neighbouring rows read different columns of B. (In a persistent
// grid the units in flight are those of row-major order; XOR reorders them inside that window.)
#define XOR_W 8
__host__ __device__ __forceinline__ int sgn(int v) { return (v > 0) - (v < 0); }
__host__ __device__ __forceinline__ void gilbert_d2xy(int idx, int w, int h, int& out_x, int& out_y) {
  int x = 0, y = 0, ax, ay, bx, by;
  if (w >= h) { ax = w; ay = 0; bx = 0; by = h; }
  else        { ax = 0; ay = h; bx = w; by = 0; }
  int cur = 0;
  while (true) {
    const int ww = abs(ax + ay), hh = abs(bx + by);
    const int dax = sgn(ax), day = sgn(ay), dbx = sgn(bx), dby = sgn(by);
    const int di = idx - cur;
    if (hh == 1) { x += dax * di; y += day * di; break; }
    if (ww == 1) { x += dbx * di; y += dby * di; break; }
    int ax2 = ax / 2, ay2 = ay / 2, bx2 = bx / 2, by2 = by / 2;
    const int w2 = abs(ax2 + ay2), h2 = abs(bx2 + by2);
    if (2 * ww > 3 * hh) {  // long rectangle: split in two along the long side
      if ((w2 & 1) && ww > 2) { ax2 += dax; ay2 += day; }
      const int nxt = cur + abs((ax2 + ay2) * (bx + by));
      if (idx < nxt) { ax = ax2; ay = ay2; continue; }
      cur = nxt; x += ax2; y += ay2; ax -= ax2; ay -= ay2;
    } else {                 // up, long across, down
      if ((h2 & 1) && hh > 2) { bx2 += dbx; by2 += dby; }
      int nxt = cur + abs((bx2 + by2) * (ax2 + ay2));
      if (idx < nxt) { const int tx = ax2, ty = ay2; ax = bx2; ay = by2; bx = tx; by = ty; continue; }
      cur = nxt;
      nxt = cur + abs((ax + ay) * ((bx - bx2) + (by - by2)));
      if (idx < nxt) { x += bx2; y += by2; bx -= bx2; by -= by2; continue; }
      cur = nxt;
      x += (ax - dax) + (bx2 - dbx); y += (ay - day) + (by2 - dby);
      const int nax = -bx2, nay = -by2, nbx = -(ax - ax2), nby = -(ay - ay2);
      ax = nax; ay = nay; bx = nbx; by = nby;
    }
  }
  out_x = x; out_y = y;
}

__host__ __device__ __forceinline__ void unit_coords(int unit, int units_m, int units_n, int& um, int& un) {
#if ORDER == 0
  um = unit / units_n; un = unit % units_n;
#elif ORDER == 1
  const int group_rows = GROUP_M / CLUSTER_M > 0 ? GROUP_M / CLUSTER_M : 1;
  const int group = unit / (group_rows * units_n), first_m = group * group_rows;
  const int group_m = min(units_m - first_m, group_rows);
  const int in_group = unit % (group_rows * units_n);
  um = first_m + in_group % group_m; un = in_group / group_m;
#elif ORDER == 2
  gilbert_d2xy(unit, units_n, units_m, un, um);  // x along N, y along M
#elif ORDER == 3
  um = unit / units_n; un = unit % units_n;
  if ((un | (XOR_W - 1)) < units_n) un ^= um % XOR_W;  // only inside a complete group: a bijection
#else
#error "ORDER must be 0 (row-major), 1 (grouped), 2 (Hilbert) or 3 (XOR of block indices)"
#endif
}

// ---- schedule: the work list of one worker (a CTA, or a cluster of CLUSTER_M CTAs) ------------
// Units 0 .. dp_units-1 are data-parallel: worker w takes w, w + workers, ... whole. With STREAMK,
// the last sk_units units (the partial wave, plus one full wave when the partial one is under half
// full, so that no unit is split more than about three ways; none where the idle part is too small
// to pay for the partial sums) are stream-K: their sk_units x
// num_k_tiles k-blocks are cut into `workers` equal contiguous ranges, one per worker. A range
// covers the end of one unit, whole units, the start of another; it is walked from its END down,
// so a worker first computes the start of a unit that a HIGHER worker finishes (and publishes the
// partial sum at once), and last the end of a unit that LOWER workers started. The worker holding
// a unit's last k-block owns it: it waits only for lower workers (launched before it, so the wait
// cannot deadlock on a block that is not resident), adds their partials and stores C.
__host__ __device__ __forceinline__ int streamk_units(int units, int workers, int kt) {
#if STREAMK
  // Split the last wave only where its idle part is worth more than moving the partial sums:
  // 64 KiB of fp32 per consumer warpgroup, written once and read once, measured at ~5 us, about
  // 8 k-blocks of a worker (~0.7 us each at 128 x 256): so at least 12 idle k-blocks per worker.
  // (scripts/sk_probe.py: at M = K = 4096 a last wave of 112-124 of 132 blocks lost, 16-88 won.)
  const int rem = units % workers;
  if (units <= workers || rem == 0 || static_cast<long long>(workers - rem) * kt < 12LL * workers) return 0;
  return 2 * rem >= workers ? rem : rem + workers;
#else
  return 0;
#endif
}
// First stream-K k-block of worker w (w = workers: the end of the region).
__host__ __device__ __forceinline__ long long streamk_begin(int w, long long sk_iters, int workers) {
  return sk_iters * w / workers;
}
struct Schedule {
  int unit, step, dp_units, kt;   // data-parallel part: unit, unit + step, ... below dp_units
  long long lo, hi;               // stream-K part: k-blocks [lo, hi) of the region, taken from hi down
  // The next piece of work: k-blocks [kb, ke) of unit u. False when the list is done.
  __host__ __device__ __forceinline__ bool next(int& u, int& kb, int& ke) {
    if (unit < dp_units) { u = unit; kb = 0; ke = kt; unit += step; return true; }
    if (hi <= lo) return false;
    const int su = static_cast<int>((hi - 1) / kt);  // the stream-K unit holding the last k-block left
    const long long first = max(lo, static_cast<long long>(su) * kt);
    u = dp_units + su; kb = static_cast<int>(first - static_cast<long long>(su) * kt);
    ke = static_cast<int>(hi - static_cast<long long>(su) * kt);
    hi = first;
    return true;
  }
};
__host__ __device__ __forceinline__ Schedule make_schedule(int worker, int workers, int units, int kt) {
  const int sk_units = streamk_units(units, workers, kt), dp_units = units - sk_units;
  const long long sk_iters = static_cast<long long>(sk_units) * kt;
  return Schedule{worker, workers, dp_units, kt, streamk_begin(worker, sk_iters, workers),
                  streamk_begin(worker + 1, sk_iters, workers)};
}
// The owner of a stream-K unit whose k-blocks start at `unit_first` of the region walks the
// workers below it that computed part of the unit: the next one below `d`, or -1 when none is left.
__host__ __device__ __forceinline__ int streamk_lower(int d, long long unit_first, long long sk_iters, int workers) {
  for (--d; d >= 0; --d) {
    const long long lo = streamk_begin(d, sk_iters, workers), hi = streamk_begin(d + 1, sk_iters, workers);
    if (hi <= unit_first) return -1;  // d's range ends before the unit, and so do all below it
    if (hi > lo) return d;            // (a worker with an empty range is passed over)
  }
  return -1;
}

// ---- stream-K fixup: flags in global memory, released and acquired at GPU scope ---------------
__device__ __forceinline__ void flag_release(unsigned* f, unsigned v) {
  asm volatile("fence.acq_rel.gpu;\nst.relaxed.gpu.global.u32 [%0], %1;\n" ::"l"(f), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned flag_acquire(const unsigned* f) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(f) : "memory");
  return v;
}

// Two fp32 values rounded to one fp16 pair (the low half the first), as a 32-bit register.
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
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
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n"
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
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// scale_d = 0: D = A * B^T (the old accumulator is ignored, so no zero-fill); 1: D += A * B^T.
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], unsigned long long da, unsigned long long db,
                                           int scale_d) {
#if BN == 256
  wgmma_m64n256k16(d, da, db, scale_d);
#elif BN == 128
  wgmma_m64n128k16(d, da, db, scale_d);
#else
#error "BN must be 128 or 256"
#endif
}


extern "C" __global__ void
#if CLUSTER_M > 1
__cluster_dims__(CLUSTER_M, 1, 1)
#endif
__launch_bounds__(THREADS, 1)
gemm_v4_swizzle_pipeline(const __grid_constant__ TmaDesc tmap_a, const __grid_constant__ TmaDesc tmap_b,
                         const __grid_constant__ TmaDesc tmap_c, __half* __restrict__ C, int M, int N, int K,
                         float* __restrict__ ws, unsigned* __restrict__ flags) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The 128-byte swizzle repeats every 1024 bytes: tiles must start on a 1024-byte boundary.
  const unsigned smem_base = (static_cast<unsigned>(__cvta_generic_to_shared(smem_raw)) + 1023) & ~1023u;
  const unsigned epi_base = smem_base + STAGES * STAGE_BYTES;    // EPI_BYTES, 1024-aligned
  const unsigned full_bar = epi_base + EPI_BYTES;                // STAGES x 8 bytes
  const unsigned empty_bar = full_bar + STAGES * 8;              // STAGES x 8 bytes
  [[maybe_unused]] const unsigned order_bar = empty_bar + STAGES * 8;  // PINGPONG: 2 x 8 bytes

  // A unit is CLUSTER_M tiles stacked in M; CTA `rank` of a cluster takes tile row um * CLUSTER_M + rank.
  const int units_m = M / (BM * CLUSTER_M), units_n = N / BN, num_units = units_m * units_n;
  const unsigned rank = CLUSTER_M > 1 ? cluster_rank() : 0;
  const int worker = blockIdx.x / CLUSTER_M, workers = gridDim.x / CLUSTER_M;

  const int warpgroup = threadIdx.x / 128, lane = threadIdx.x % 32;
  const int num_k_tiles = K / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 1);                                // the producer's expect_tx arrival
      mbar_init(empty_bar + 8 * s, CLUSTER_M * RELEASERS * 4);       // one arrival per consumer warp, every CTA
    }
    // PINGPONG: order_bar[w] completes a phase when the other warpgroup has waited for every
    // k-block of its tile: only then may w wait for its own next tile's k-blocks (further ahead
    // in the ring, a parity wait could match a lap too early).
    if (PINGPONG) for (int w = 0; w < 2; ++w) mbar_init(order_bar + 8 * w, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();
#if CLUSTER_M > 1
  cluster_sync();  // the peer's barriers exist before anyone multicasts into them or arrives remotely
#endif

  if (warpgroup == 0) {
    // ---- load: the producer warpgroup; one thread issues every copy --------------------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    if (threadIdx.x == 0) {
      int it = 0;  // k-blocks loaded so far by this block: buffer it % STAGES, lap it / STAGES
      Schedule sch = make_schedule(worker, workers, num_units, num_k_tiles);
      auto load_unit = [&](int unit, int kb, int ke) {  // k-blocks [kb, ke) of one unit
        int um, un;
        unit_coords(unit, units_m, units_n, um, un);
        const int block_m = (um * CLUSTER_M + rank) * BM, block_n = un * BN;
        for (int kt = kb; kt < ke; ++kt, ++it) {
          const int s = it % STAGES;
          // Lap u > 0 refills buffer s: wait until every consumer warp (of every CTA) released lap u-1.
          if (it >= STAGES) mbar_wait(empty_bar + 8 * s, ((it / STAGES) - 1) & 1);
          const unsigned a_dst = smem_base + s * STAGE_BYTES;
          mbar_expect_tx(full_bar + 8 * s, STAGE_BYTES);  // own A + all of B (both halves, with a cluster)
          tma_load_2d(a_dst, &tmap_a, kt * BK, block_m, full_bar + 8 * s);
#if CLUSTER_M > 1
          tma_load_2d_multicast(a_dst + A_BYTES + rank * B_SLICE_BYTES, &tmap_b, kt * BK,
                                block_n + rank * B_SLICE_ROWS, full_bar + 8 * s, (1u << CLUSTER_M) - 1);
#else
          tma_load_2d(a_dst + A_BYTES, &tmap_b, kt * BK, block_n, full_bar + 8 * s);
#endif
        }
      };
      // sch.next()'s list, in two loops: the whole units with constant k-bounds (the loop of a
      // kernel without stream-K), then the stream-K pieces.
      // (The first loop keeps its own counter: written over sch.unit, NVVM keeps a second copy of
      // the tile in a STREAMK=0 build, whose stream-K list it can then not prove empty.)
      for (int unit = worker; unit < sch.dp_units; unit += workers) load_unit(unit, 0, num_k_tiles);
      sch.unit = sch.dp_units;
      for (int unit, kb, ke; sch.next(unit, kb, ke);) load_unit(unit, kb, ke);
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
    const int wg = warpgroup - 1;  // consumer index: rows 64 wg .. 64 wg + 63 of the tile
    // Release a buffer: one arrival per consumer warp, on this CTA's empty barrier and, with a
    // cluster, on the peer's (lane r tells CTA r). Per warp, not per warpgroup: wgmma.wait_group
    // speaks for the wgmma-groups of the warp that executes it, so one warp returning from it
    // does not show that the other three have finished reading the buffer.
    auto release = [&](unsigned ebar) {
#if CLUSTER_M > 1
      if (lane < CLUSTER_M) mbar_arrive_cluster(ebar, lane);
#else
      if (lane == 0) mbar_arrive(ebar);
#endif
    };
    float acc[ACC];                // no zero-fill: the first wgmma of a tile runs with scale-d = 0
    int it = 0;                    // k-blocks consumed so far, in step with the producer's count
    [[maybe_unused]] unsigned borrowed = 0;  // EPI_BORROW: the empty barrier of a buffer the last
                                             // epilogue staged into, released once its store read it
    [[maybe_unused]] int turns = 0;          // PINGPONG: tiles this warpgroup has computed
#if TMA_STORE
    // One store pass: this warpgroup's 64 rows x EPI_COLS columns, `h` holding (as fp16 pairs)
    // chunk jj of the pass at h[2 jj] (row g) and h[2 jj + 1] (row g + 8), staged as EPI_COLS / 64
    // boxes of 64 rows x 128 bytes in the TMA 128B swizzle (16-byte chunk c of row r sits at chunk
    // c ^ (r % 8)): the layout the store's tensor map (box 64 x 64, SWIZZLE_128B) reads. The
    // boxes are stored to columns x, x + 64, ... of rows y .. y + 63 of C.
    const bool leader = (threadIdx.x % 128) == 0;
    auto store_pass = [&](const unsigned (&h)[EPI_COLS / 4], unsigned epi, bool wait, int x, int y) {
      const int warp_in_group = (threadIdx.x % 128) / 32;
      if (leader && wait) tma_store_wait_read();  // the previous pass's (or tile's) store has read the tile
      named_bar_sync(1 + wg, 128);
#if STMATRIX
      // stmatrix.x4 writes four 8 x 8 fp16 matrices; lane l holds row l/4, columns 2(l%4)..+1 of
      // each (the accumulator's own layout) and gives the address of row l%8 of matrix l/8.
      // Matrices: (rows 0-7, chunk jj), (rows 8-15, jj), (rows 0-7, jj+1), (rows 8-15, jj+1).
      const int mat = lane / 8, mrow = warp_in_group * 16 + (mat % 2) * 8 + lane % 8;
#pragma unroll
      for (int jj = 0; jj < EPI_COLS / 8; jj += 2) {
        const int cj = jj + mat / 2;  // this lane's address: chunk cj of row mrow
        const unsigned addr = epi + (cj / 8) * EPI_BOX_BYTES + mrow * 128 + ((cj % 8) ^ (mrow % 8)) * 16;
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                     ::"r"(addr), "r"(h[2 * jj]), "r"(h[2 * jj + 1]), "r"(h[2 * jj + 2]), "r"(h[2 * jj + 3]) : "memory");
      }
#else
      const int g = lane / 4, t = lane % 4, r = warp_in_group * 16 + g;  // r % 8 == (r + 8) % 8 == g
#pragma unroll
      for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
        const unsigned box = epi + (jj / 8) * EPI_BOX_BYTES, chunk = ((jj % 8) ^ g) * 16 + 4 * t;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(box + r * 128 + chunk), "r"(h[2 * jj]));
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(box + (r + 8) * 128 + chunk), "r"(h[2 * jj + 1]));
      }
#endif
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> TMA reads
      named_bar_sync(1 + wg, 128);
      if (leader) {
#pragma unroll
        for (int b = 0; b < EPI_COLS / 64; ++b) tma_store_2d(&tmap_c, epi + b * EPI_BOX_BYTES, x + b * 64, y);
        tma_store_commit();
      }
    };
#endif
#if DEFER
    unsigned deferred[EPI_COLS / 4];   // the last tile's second store pass, fp16 pairs
    int deferred_x = -1, deferred_y = 0;  // its place in C (x < 0: nothing deferred)
    auto flush_deferred = [&]() {
      if (deferred_x >= 0) store_pass(deferred, epi_base + wg * EPI_WG_BYTES, true, deferred_x, deferred_y);
      deferred_x = -1;
    };
#endif
    Schedule sch = make_schedule(worker, workers, num_units, num_k_tiles);
    auto tile = [&](int unit, int kb, int ke) {  // k-blocks [kb, ke) of one unit, then its fixup and epilogue
      int um, un;
      unit_coords(unit, units_m, units_n, um, un);
      const int block_m = (um * CLUSTER_M + rank) * BM, block_n = un * BN;
#if PINGPONG
      // Our turn: the other warpgroup has waited for all of its tile's k-blocks (consumer 0's
      // first tile waits for nobody; consumer 1's n-th waits for consumer 0's n-th).
      if (turns > 0 || wg == 1) mbar_wait(order_bar + 8 * wg, (turns - (wg == 0)) & 1);
#endif

      for (int kt = kb; kt < ke; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(full_bar + 8 * s, (it / STAGES) & 1);  // k-block it has landed

        // ---- compute: BK/16 wgmmas over this warpgroup's 64 rows of A and all BN rows of B ----
        const unsigned b_tile = smem_base + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();  // accumulator registers are about to be read and written asynchronously
#pragma unroll
        for (int h = 0; h < WG_HALVES; ++h) {  // (PINGPONG: both 64-row halves of the tile)
          const unsigned a_tile = smem_base + s * STAGE_BYTES + (PINGPONG ? h : wg) * 64 * BK * 2;
          float(&acc_h)[BN / 2] = *reinterpret_cast<float(*)[BN / 2]>(acc + h * (BN / 2));
#pragma unroll
          for (int kk = 0; kk < BK / 16; ++kk)
            wgmma_tile(acc_h, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32), ((kt - kb) | kk) != 0);
        }
        wgmma_commit();
#if DEFER
        // The previous tile's second store pass, while this tile's first wgmmas run (EPI_DEFER
        // k-blocks of them, or all of a shorter stream-K piece).
        if (kt == min(kb + EPI_DEFER - 1, ke - 1)) flush_deferred();
#endif
        // Keep this k-block's wgmmas in flight; the previous one's are now complete.
        wgmma_wait<1>();

        // ---- load: release k-block it-1's buffer to the producer(s) -----------------------------
        if (kt > kb) release(empty_bar + 8 * ((it - 1) % STAGES));
#if EPI_BORROW
        // The previous tile's borrowed buffer, now that this tile's first wgmmas keep the tensor
        // cores busy: its store has read it (normally long since), so the producer may refill it.
        else if (borrowed) {
          if ((threadIdx.x % 128) == 0) { tma_store_wait_read(); mbar_arrive_count(borrowed, 4); }
          borrowed = 0;
        }
#endif
      }
#if PINGPONG
      if ((threadIdx.x % 128) == 0) mbar_arrive(order_bar + 8 * (1 - wg));  // the other's turn
      ++turns;
#endif
      wgmma_wait<0>();
#if EPI_BORROW
      // The tile's last buffer is kept: the epilogue's second pass is staged in it (below).
      const unsigned last_empty = empty_bar + 8 * ((it - 1) % STAGES);
      [[maybe_unused]] const unsigned last_buf = smem_base + ((it - 1) % STAGES) * STAGE_BYTES;
#else
      release(empty_bar + 8 * ((it - 1) % STAGES));  // the tile's last k-block
#endif

#if STREAMK
      // ---- stream-K fixup: a unit split over workers is stored by the one holding its last
      // k-block. Partials: one 64 x BN fp32 slot per (worker, CTA rank, consumer warpgroup), each
      // thread's accumulators as BN/8 float4 at [j * 128 + thread] (coalesced, and the reader has
      // the same registers); flags: one word per slot, 1 = partial ready, reset to 0 by the reader.
      const int tid = threadIdx.x % 128;
      if (ke < num_k_tiles) {  // a higher worker finishes this unit: publish the partial sum
#if EPI_BORROW
        release(last_empty);  // no epilogue here: nothing to stage
#endif
        const int slot = (worker * CLUSTER_M + rank) * CONSUMERS + wg;
        float4* part = reinterpret_cast<float4*>(ws) + static_cast<size_t>(slot) * (64 * BN / 4);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          __stcg(part + j * 128 + tid, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
        __threadfence();
        named_bar_sync(1 + wg, 128);
        if (tid == 0) flag_release(flags + slot, 1);
        return;  // (the next unit)
      }
      if (kb > 0) {  // lower workers computed k-blocks 0 .. kb-1: add their partials, highest first
        const long long sk_iters = static_cast<long long>(num_units - sch.dp_units) * num_k_tiles;
        const long long unit_first = static_cast<long long>(unit - sch.dp_units) * num_k_tiles;
        for (int d = streamk_lower(worker, unit_first, sk_iters, workers); d >= 0;
             d = streamk_lower(d, unit_first, sk_iters, workers)) {
          const int slot = (d * CLUSTER_M + rank) * CONSUMERS + wg;
          if (tid == 0) {
            while (flag_acquire(flags + slot) != 1) {}
            flags[slot] = 0;  // as the launch found it: the next launch's writer sets it again
          }
          named_bar_sync(1 + wg, 128);
          const float4* part = reinterpret_cast<const float4*>(ws) + static_cast<size_t>(slot) * (64 * BN / 4);
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const float4 p = __ldcg(part + j * 128 + tid);
            acc[4 * j] += p.x; acc[4 * j + 1] += p.y; acc[4 * j + 2] += p.z; acc[4 * j + 3] += p.w;
          }
        }
      }
#endif

      // ---- epilogue: accumulator layout of m64nN: warp w of the warpgroup owns rows 16w..16w+15;
      // lane (g = lane/4, t = lane%4) holds, for each 8-column chunk j, rows g and g+8 at columns
      // 8j + 2t and 8j + 2t + 1: acc[4j..4j+1] (row g), acc[4j+2..4j+3] (row g+8).
#if TMA_STORE
#if EPI_BORROW
      // Pass 1 is staged in the tile's last ring buffer (EPI_WG_BYTES per warpgroup at its start),
      // so it does not wait for pass 0's store to have read the staging tile. Both consumer
      // warpgroups must be done with that buffer (their wgmmas read all of B in it) first.
      named_bar_sync(BAR_CONSUMERS, 128 * CONSUMERS);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // wgmma's reads -> our writes
#endif
#pragma unroll
      for (int pass = 0; pass < EPI_PASSES; ++pass) {
        // This pass's EPI_COLS / 8 chunks, rounded to fp16: h[2 jj] row g, h[2 jj + 1] row g + 8.
        unsigned h[EPI_COLS / 4];
#pragma unroll
        for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
          const int j = pass * (EPI_COLS / 8) + jj;
          h[2 * jj] = pack_half2(acc[4 * j], acc[4 * j + 1]);
          h[2 * jj + 1] = pack_half2(acc[4 * j + 2], acc[4 * j + 3]);
        }
#if DEFER
        if (pass == EPI_PASSES - 1) {  // staged and stored during the next unit's first k-block
#pragma unroll
          for (int i = 0; i < EPI_COLS / 4; ++i) deferred[i] = h[i];
          deferred_x = block_n + pass * EPI_COLS; deferred_y = block_m + wg * 64;
          break;
        }
#endif
#if EPI_BORROW
        const unsigned epi = pass == 0 ? epi_base + wg * EPI_WG_BYTES : last_buf + wg * EPI_WG_BYTES;
#else
        const unsigned epi = epi_base + wg * EPI_WG_BYTES;
#endif
#if PINGPONG
        store_pass(h, epi, !EPI_BORROW || pass == 0, block_n, block_m + pass * 64);  // pass = half
#else
        store_pass(h, epi, !EPI_BORROW || pass == 0, block_n + pass * EPI_COLS, block_m + wg * 64);
#endif
      }
#if EPI_BORROW
      borrowed = last_empty;  // released at the next unit's first k-block
#endif
#else
      const int warp_in_group = (threadIdx.x % 128) / 32, g = lane / 4, t = lane % 4;
#pragma unroll
      for (int j = 0; j < ACC / 4; ++j) {  // (PINGPONG: half j / (BN / 8) of the tile)
        const int row = block_m + (PINGPONG ? j / (BN / 8) : wg) * 64 + warp_in_group * 16 + g;
        const int col = block_n + 8 * (j % (BN / 8)) + 2 * t;
        *reinterpret_cast<__half2*>(C + (size_t)row * N + col) = __floats2half2_rn(acc[4 * j], acc[4 * j + 1]);
        *reinterpret_cast<__half2*>(C + (size_t)(row + 8) * N + col) = __floats2half2_rn(acc[4 * j + 2], acc[4 * j + 3]);
      }
#endif
    };
    // The producer's order: whole units (constant k-bounds: measured 0.5-1% faster at 4096^3 than
    // one loop over sch.next(), results/probes/20261130T131730, "v4-h2"), then the stream-K pieces.
#if PINGPONG
    // Alternate tiles of the block's list; the other warpgroup's k-blocks are skipped in the ring.
    for (int unit = worker, i = 0; unit < sch.dp_units; unit += workers, ++i) {
      if ((i & 1) == wg) tile(unit, 0, num_k_tiles);
      else it += num_k_tiles;
    }
#else
    for (int unit = worker; unit < sch.dp_units; unit += workers) tile(unit, 0, num_k_tiles);
#endif
    sch.unit = sch.dp_units;
    for (int unit, kb, ke; sch.next(unit, kb, ke);) tile(unit, kb, ke);
#if DEFER
    flush_deferred();  // the last tile's second pass
#endif
#if TMA_STORE
    if ((threadIdx.x % 128) == 0) tma_store_wait_all();  // shared memory must outlive the last store
#endif
  }
#if CLUSTER_M > 1
  cluster_sync();  // no CTA leaves while its peer may still multicast into it or arrive on its barriers
#endif
}
