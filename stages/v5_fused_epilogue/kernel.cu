// ============================================================================================
// v5_fused_epilogue: a Linear layer in one kernel, on any shape. y = act(alpha * x @ W^T + bias),
//             computed on the fp32 accumulators and rounded to fp16 once, for any M, N, K >= 1,
//             with the tile and a split of K chosen by shape.
// Builds on:  v4_swizzle_pipeline.
// Changed:    epilogue: alpha, a per-column bias (fp16 or fp32) and an activation (relu, gelu
//             (erf), gelu_tanh, silu) applied in registers before the one store; the activation
//             and the bias type are -D defines (ACT, BIAS), alpha a kernel argument; the
//             activations in forms of few instructions and MUFU per element (ACT_MATH).
//             tails: tile counts and k-blocks round up; TMA zero-fills the parts of a box past
//             the edge of A or B (so they add nothing) and clips the C store box at the edge.
//             When C cannot be a tensor map (N % 8 != 0 or a misaligned out) the kernel stores C
//             itself (TMA_STORE=0, chosen per call): staged per 64 columns in shared memory,
//             then written back row by row, coalesced and bounds-checked.
//             shape: BM is 64, 128 or 192 (one, two or three consumer warpgroups) and BN 16, 32,
//             64, 128, 144, 192 or 256 (112 as a knob), chosen per shape on the host (in decode,
//             M <= 32, and with BM 192 and M 129-184, a ring buffer holds only the rows of A that
//             exist: A_ROWS); `splits` > 1 divides the
//             k-blocks of every tile among `splits` units (split-K, PARTIAL=1) that write fp32
//             partial tiles to a workspace, and
//             gemm_v5_fused_epilogue_reduce sums them in a fixed order (bitwise repeatable) and
//             applies the epilogue (SPLIT_FIXUP=1, a knob: the unit that completes a tile sums
//             them itself, in the same order; measured slower). Or (SPLIT_CLUSTER, decode) the
//             CTAs of a cluster split a tile's k-blocks and hand their partial tiles to rank 0
//             through distributed shared memory: no workspace, no second kernel, the same sum.
//             Without a split, v4's stream-K last wave (STREAMK=1, built
//             per call only where it splits), with its own per-stream workspace (sk_ws, flags);
//             where the units fill less than one wave the host may launch one block per SM
//             instead (SK_FILL), and then every unit is shared out by stream-K. v4's deferred
//             store pass (EPI_DEFER) at 128 x 256 tiles (EPI_OVERLAP, a knob measured slower:
//             the tile's column halves taking turns so that each one's epilogue runs under the
//             other's wgmmas). v4's 2-CTA clusters (B multicast) with
//             edge tiles, taken by the host where K's rows start mid-sector (CLUSTER_M), and
//             along N too (CLUSTER_N: A multicast to the CTAs on one tile row), which end
//             without a cluster barrier (CLUSTER_TAIL: the producer waits for the last
//             releases instead); the
//             reduce kernel launched as a programmatic dependent of this one (PDL). Decode
//             with the operands swapped (SWAP_AB, per call where an activation is applied and
//             M <= 32): the weight as A, x as B, C^T's tiles stored transposed. On the host
//             only: A's and B's tensor maps ask the L2 for 128-byte blocks, not 256, where K's
//             rows start mid-sector, M > 128 and the operands are L2-sized (L2_PROMO, per call).
//             Tiles of C's even rows and of its odd rows through 3-D maps of A and C, the odd
//             ones 8 columns early, so that every row of A a tile loads starts on a sector where
//             K % 16 == 8 (ROW_PARITY, 2 ships: taken by shape where it gains).
// Bottleneck: v4 needs M % 128, N % 256, K % 64 == 0, and a bias or an activation costs another
//             pass over C; a 128 x 256 tile leaves most SMs idle when M is small (decode, prefill).
// Requires:   sm_90a; K % 8 == 0 and 16-byte aligned A and B (TMA row strides; otherwise
//             gemm_v5_fused_epilogue_pad copies them first, to a multiple of PAD_K = 64: whole
//             128-byte rows, and this kernel is its programmatic dependent, AFTER_COPY); the C
//             tensor map also needs N % 8 == 0 and an aligned out.
// Launch:     1-D grid of CTAS x min(units, clusters that fit at once) blocks (CTAS =
//             CLUSTER_M x CLUSTER_N x SPLIT_CLUSTER; the host asks the driver how many fit), or all of
//             those where SK_FILL splits a wave under one (PERSISTENT=1; one per unit if 0), unit =
//             (CLUSTER_M x CLUSTER_N tiles, split); THREADS = 128 * (1 + BM / 64); dynamic shared
//             memory gemm_smem_bytes below. AUTO=1 lets the host choose BM, BN, STAGES and the split per shape (at most
//             MAX_SPLITS splits; AUTO=0:
//             as given, the split from SPLIT_K); the kernel sees the split as `splits`. The reduce
//             kernel: 256 threads, one output element per thread per step, grid-stride.
// Layout:     A (M, K) and B (N, K) row-major, both K-major; C = A @ B^T (M, N) row-major;
//             workspace (splits, M, ldw) fp32 with ldw = N rounded up to even.
// ============================================================================================
#include <cuda_fp16.h>

// ---- per-call switches (the host picks them, see __init__.py defines_for) ---------------------
#ifndef ACT
#define ACT 0           // activation: 0 none, 1 relu, 2 gelu (erf), 3 gelu_tanh, 4 silu
#endif
#ifndef BIAS
#define BIAS 0          // bias: 0 none, 1 fp16, 2 fp32
#endif
#ifndef PARTIAL
#define PARTIAL 0       // 1: split K, write fp32 partial tiles (summed by SPLIT_FIXUP's choice)
#endif
#ifndef SPLIT_FIXUP
#define SPLIT_FIXUP 0   // PARTIAL: 0 the reduce kernel sums the partials (shipped), 1 the unit that
#endif                  // completes a tile does (a knob: measured slower, SHAPES.md "Split K")
#ifndef PDL
#define PDL 0           // PARTIAL with the reduce kernel: 1 launches it as a programmatic dependent
#endif                  // of this one (griddepcontrol; the host's dependent launch), 0 after it
#ifndef AFTER_COPY
#define AFTER_COPY 0    // 1: A and B are the padded copy's (plan: K % 8 != 0, a misaligned base, or
#endif                  // PAD_SECTOR's rows that start mid-sector), and this kernel its dependent launch
#ifndef SWAP_AB
#define SWAP_AB 0       // 1: the operands swapped (decode, plan): A is the weight, B the M <= 64 rows
#endif                  // of x, the tiles are C^T's, stored transposed into C (below)
#if SWAP_AB != 1        // (2, the host's "per call": built alone, no swap)
#undef SWAP_AB
#define SWAP_AB 0
#endif
#define FIX_U 2         // SPLIT_FIXUP: column pairs per thread at once
#define FIX_S 8         // ... and splits of each loaded together

// ---- roles and register budgets (setmaxnreg with REG_SPLIT=0, as v4; BM 128: 40 x 128 + 232 x 256 = 64,512 <= 65,536;
// BM 64: 40 x 128 + 232 x 128 = 34,816; BM 192: 40 x 128 + 152 x 384 = 63,488) ------------------
#define CONSUMERS (BM / 64)                  // consumer warpgroups, 64 rows of BM each
#define THREADS (128 * (1 + CONSUMERS))      // warpgroup 0: producer; 1..CONSUMERS: consumers
// REG_SPLIT (2 shipped): the producer down to 24, the fewest setmaxnreg allows, and the
// consumers up to 240 (BM 128: 24 x 128 + 240 x 256 = 64,512) or 160 (BM 192: 24 x 128 + 160 x
// 384 = 64,512); with one consumer warpgroup (BM 64) the pool has room, so 248 beside 40. BM 256
// (four consumer warpgroups, with SWAP_AB only): 112, because setmaxnreg.inc takes registers from
// the CTA's own pool, which the launch sized at 96 a thread for 640 threads: the producer's
// 128 x 72 freed are 16 more for each of 512 (at 120 the first build waited forever). 1: in
// every build; 2: without stream-K only (a stream-K producer spills at 24). For the builds that
// spill a few registers at 232 (README "Inspect", "Local memory"); 0: 40 / 232 in every build.
#ifndef REG_SPLIT
#define REG_SPLIT 2
#endif
#define REG_SPLIT_ON (REG_SPLIT == 1 || (REG_SPLIT == 2 && !STREAMK))
#define PRODUCER_REGS (REG_SPLIT_ON && CONSUMERS > 1 ? 24 : 40)
#define CONSUMER_REGS (CONSUMERS == 4 ? 112 : CONSUMERS == 3 ? (REG_SPLIT_ON ? 160 : 152) : REG_SPLIT_ON ? (CONSUMERS == 2 ? 240 : 248) : 232)
#if BM != 64 && BM != 128 && BM != 192 && BM != 256
#error "BM must be 64, 128, 192 or 256 (one to four consumer warpgroups of 64 rows)"
#endif
// BM 256 (M 257-544 with the operands swapped: 256 rows of the weight, cuBLAS's 256 x 136 prefill
// tile): four consumer warpgroups of 112 registers, so 136 columns at most (68 accumulators a
// thread), staged for the direct store 32 tile columns a pass (DIRECT_COLS) to leave 4 buffers.
// The 112 need the producer at 24 (REG_SPLIT on): at 40 it frees 16 fewer a thread, and the
// consumers' setmaxnreg.inc would wait forever.
#if BM == 256 && (!SWAP_AB || BN > 136 || CLUSTER_M > 1 || CLUSTER_N > 2 || SPLIT_CLUSTER > 1 || EPI_OVERLAP || !REG_SPLIT_ON)
#error "BM 256 needs SWAP_AB, BN <= 136, no cluster but pairs along N, no SPLIT_CLUSTER or EPI_OVERLAP, and REG_SPLIT on"
#endif
// BM 192 (M 129-192 on a wide weight: the rows that exist in one row of tiles; M 257-576 with the
// operands swapped: 192 rows of the weight): three consumer warpgroups of 160 registers, so at
// most 128 columns of accumulators, or 200 with SWAP_AB (100 fp32 registers a thread; no stack
// frame, README "Inspect"), and only the plain tile loop's features the shape rule gives it (no
// cluster but the swapped tile's pairs sharing the weight's rows, no split in a cluster).
#if BM == 192 && ((BN > 128 && !SWAP_AB) || BN > 200 || CLUSTER_M > 1 || CLUSTER_N > (SWAP_AB ? 2 : 1) || SPLIT_CLUSTER > 1 || EPI_OVERLAP)
#error "BM 192 needs BN <= 128 (200 with SWAP_AB), no cluster (pairs along N with SWAP_AB), no SPLIT_CLUSTER and no EPI_OVERLAP"
#endif

// A_ROWS < BM (decode: BM 64, M <= A_ROWS = 16 or 32, chosen per call): a ring buffer holds only
// the A rows that exist, and B starts right after them. The wgmma still reads 64 rows of A from
// the buffer's start; rows A_ROWS .. 63 are then the first rows of the same buffer's B tile,
// written by the same TMA transaction before the same full barrier: their products land in
// accumulator rows >= M, which no store path writes. Each buffer is 6 or 4 KiB smaller, so the
// ring holds 11 or 10 buffers where it held 8 (the weight is the stream that matters here).
// BM 192 with M 129-184 (one row of tiles): the same for the last warpgroup's 64 rows, A_ROWS =
// M rounded up to 8, so that TMA zero-fills at most 7 rows of a box instead of up to 63; and BM
// 128 with M 65-120 (the host's A_ROWS_128; also in the 128 x 128 tiles that the host's LM_HEAD
// gives M 65-128 on a vocabulary-wide weight).
#ifndef A_ROWS
#define A_ROWS BM
#endif
#if A_ROWS != BM && ((BM != 64 && BM != 128 && BM != 192) || A_ROWS % 8 != 0 || A_ROWS > BM || A_ROWS <= BM - 64 || BN < BM - A_ROWS)
#error "A_ROWS < BM needs BM 64, 128 or 192, BM - 64 < A_ROWS, A_ROWS a multiple of 8 and BN >= BM - A_ROWS (the rows read past A are B's)"
#endif
// SWAP_AB=1 (decode, M <= 64: the host passes the weight as A and x as B, and this kernel's M, N
// are the call's N, M): each tile is a BM x BN tile of C^T = W x^T, the weight's rows on the
// wgmma's 64-row side and the few rows of x its N (16, 32 or 64), so no wgmma computes padding
// rows. The epilogue adds the bias per tile row (a column of C) and stores the tile transposed,
// directly (tile column j is row j of C). Only the plain tile loop: no split, no stream-K, no TMA
// store. Prefill (M 257-800, the host's PREFILL_SWAP) swaps too: x's rows cut into 2-4 tiles of
// 136, 176 or 200, in pairs along the row of C^T's tiles (CLUSTER_N = 2: the weight's rows shared),
// by 128, 192 or 256 rows of the weight (BM 192, 256: three, four consumer warpgroups, above).
#if SWAP_AB && (TMA_STORE || PARTIAL || STREAMK || SPLIT_CLUSTER > 1 || EPI_OVERLAP || A_ROWS != BM)
#error "SWAP_AB needs TMA_STORE=0, PARTIAL=0, STREAMK=0, no SPLIT_CLUSTER or EPI_OVERLAP, and A_ROWS == BM"
#endif
// B_ROWS < BN (C^T's tiles where all of x's rows fit one tile: M 129-192, the host's MID_SWAP): TMA
// loads only the rows of B that exist, rounded up to 8, where it would zero-fill up to BN - 8 more
// (they cost load time: SHAPES.md "M just past 128 with the operands swapped"). Rows B_ROWS .. BN - 1 of each
// buffer are never written: the wgmma reads whatever they hold, and their products land in tile
// columns >= N (column j of the tile is row j of B alone), which the store skips.
#ifndef B_ROWS
#define B_ROWS BN
#endif
#if B_ROWS != BN && (B_ROWS % 8 != 0 || B_ROWS > BN || CLUSTER_M > 1 || !SWAP_AB)
#error "B_ROWS < BN needs SWAP_AB=1, no cluster along M and B_ROWS a multiple of 8"
#endif
#define A_BYTES (A_ROWS * BK * 2)             // one A tile in shared memory
#define B_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define LOAD_BYTES (A_BYTES + B_ROWS * BK * 2)  // what TMA writes into a buffer (B_ROWS < BN: less)
#define B_SLICE_ROWS (BN / CLUSTER_M)         // rows of B one CTA loads (and multicasts)
#define B_SLICE_BYTES (B_SLICE_ROWS * BK * 2)
// Clusters of CLUSTER_M x CLUSTER_N CTAs (rank r: tile row r % CLUSTER_M, tile column r / CLUSTER_M
// of the unit). CTAs on one tile column share B (each loads BN / CLUSTER_M of its rows and
// multicasts them down the column); with CLUSTER_N > 1 CTAs on one tile row share A the same way.
#define CLUSTER (CLUSTER_M * CLUSTER_N)
// SPLIT_CLUSTER = S > 1: the S CTAs of a cluster take the same tile, each a 1/S range of its
// k-blocks (rank r the r-th); ranks 1 .. S-1 write their fp32 accumulators into rank 0's shared
// memory (distributed shared memory, st.shared::cluster) and rank 0 adds them in rank order, then
// runs the epilogue. No workspace, no second kernel, the same sum in the same order as the reduce
// kernel's (bitwise the same C). Needs CLUSTER_M = CLUSTER_N = 1, no split of K by units
// (PARTIAL=0), no stream-K, no EPI_OVERLAP.
#ifndef SPLIT_CLUSTER
#define SPLIT_CLUSTER 1
#endif
#if SPLIT_CLUSTER < 1  // (0, the host's "the rule decides per call": built alone, no split)
#undef SPLIT_CLUSTER
#define SPLIT_CLUSTER 1
#endif
#define CTAS (CLUSTER * SPLIT_CLUSTER)       // CTAs per cluster, as launched
#if SPLIT_CLUSTER > 1 && (CLUSTER > 1 || PARTIAL || STREAMK || EPI_OVERLAP)
#error "SPLIT_CLUSTER > 1 needs CLUSTER_M = CLUSTER_N = 1, PARTIAL=0, STREAMK=0 and EPI_OVERLAP=0"
#endif
#define A_SLICE_ROWS (A_ROWS / CLUSTER_N)     // rows of A one CTA loads (and multicasts)
#define A_SLICE_BYTES (A_SLICE_ROWS * BK * 2)
#if CLUSTER_N > 1 && A_ROWS != BM
#error "CLUSTER_N > 1 needs A_ROWS == BM (A's slices are whole tiles' rows)"
#endif
// ranks rm, rm + CLUSTER_M, rm + 2 CLUSTER_M, ...: the CTAs on one tile row (this mask << rm)
#define A_ROW_MASK (CLUSTER_N == 4 ? 1u | 1u << CLUSTER_M | 1u << 2 * CLUSTER_M | 1u << 3 * CLUSTER_M \
                                   : 1u | 1u << CLUSTER_M)
// Epilogue staging (TMA_STORE): per consumer warpgroup 64 rows x EPI_COLS fp16, written as
// EPI_COLS/64 boxes of 64 x 64 (128-byte rows, 128B swizzle), stored BN/EPI_COLS times per tile.
#define EPI_COLS (BN < 128 ? BN : BN % 128 ? 64 : 128)   // (192: three passes of 64)
#define EPI_BOX_BYTES (64 * 64 * 2)
#define EPI_WG_BYTES (64 * EPI_COLS * 2)
// Direct stores (TMA_STORE=0) stage 64 columns at a time in an unswizzled tile whose row pitch,
// 144 B = 36 words, puts the 8 rows x 4 words a warp writes at once in 32 different banks.
#define DIRECT_COLS (BM == 256 ? 32 : 64)
#define DIRECT_PITCH (64 * 2 + 16)         // (a staging row: 64 columns of C, or with SWAP_AB a tile column's 64 rows)
#define DIRECT_WG_BYTES ((SWAP_AB ? DIRECT_COLS : 64) * DIRECT_PITCH)
#if PARTIAL
#define EPI_BYTES 0
#elif TMA_STORE
#define EPI_BYTES (CONSUMERS * EPI_WG_BYTES)
#else
#define EPI_BYTES (CONSUMERS * DIRECT_WG_BYTES)
#endif
// The tile's bias, BN fp32 values staged in shared memory once per tile (BIAS != 0, no split).
#define BIAS_LEN (SWAP_AB ? BM : BN)         // the tile's bias values: per column (per row with SWAP_AB)
#if BIAS && !PARTIAL
#define BIAS_BYTES (BIAS_LEN * 4)
#else
#define BIAS_BYTES 0
#endif
// EPI_DEFER=d > 0: the epilogue's last store pass (the second of a 128 x 256 tile, the only one
// of a narrower tile) is deferred into the next unit's mainloop. Its values, fused and rounded to
// fp16 (EPI_COLS / 4 registers per thread), are held while the accumulators are reused, and
// staged and stored once the wgmmas of that unit's first d k-blocks are issued, so the tensor
// cores run while the pass waits for the previous pass's store to read the staging tile.
#ifndef EPI_DEFER
#define EPI_DEFER 0
#endif
// TMAP_PREFETCH=1: the first thread asks for the tensor maps (prefetch.tensormap) before it sets up
// the barriers, so that the first TMA copy does not wait for its 128-byte descriptor to be fetched.
#ifndef TMAP_PREFETCH
#define TMAP_PREFETCH 0
#endif
// CLUSTER_TAIL=1 (clusters without SPLIT_CLUSTER): no cluster barrier at the end. The producer
// waits instead until every consumer of the cluster has released the buffers of its last lap;
// after that no peer touches this block's shared memory (every multicast into it was for a
// k-block its own consumers waited for, and every remote arrival on its barriers has arrived).
// CUTLASS's producers do the same (load_tail). Up to 1.2 us a launch (SHAPES.md "The end of a cluster").
#ifndef CLUSTER_TAIL
#define CLUSTER_TAIL 1
#endif
#define TAIL_WAIT (CLUSTER_TAIL && CLUSTER > 1 && SPLIT_CLUSTER == 1)
// CLUSTER_ARRIVE=1: the cluster barrier at the start arrives relaxed. What a peer needs to see
// there is this block's mbarrier inits, and thread 0's fence.mbarrier_init.release.cluster is
// the release for those (PTX ISA, "fence"; CUTLASS: fence_barrier_init, cluster_arrive_relaxed,
// cluster_wait). A releasing arrive made every thread fence (MEMBAR.ALL.CTA, MEMBAR.ALL.GPU,
// ERRBAR in the SASS): ~4% of Nsight Compute's warp samples at 1000^3 (SHAPES.md "The start of a
// cluster"). 0: the releasing arrive, as before.
#ifndef CLUSTER_ARRIVE
#define CLUSTER_ARRIVE 1
#endif
// L2_HINT: an L2 eviction priority on A's and B's loads (.L2::cache_hint, the policy made by
// createpolicy.fractional with fraction 1.0, PTX ISA "createpolicy"): 0 none (evict_normal),
// 1 A's loads evict_last and B's evict_first (a weight B streamed once past activations A that
// every block rereads), 2 the other way round (the swapped decode tile: A is the weight). The host
// chooses it per call (l2_hint: where one operand is streamed once, read by a single row or column
// of tiles or by rows that run in one wave; SHAPES.md "The weight evicted first"); a negative value
// (the host's "by shape") builds none.
#ifndef L2_HINT
#define L2_HINT 0
#endif
// EDGE_SHIFT=1: a partial last tile row (column) is moved back until it ends at most 7 rows past
// C's last row (column): its origin min(block, round_up8(extent - tile)) where the extent is at
// least a tile. It then reads real rows of A (B) where TMA would zero-fill rows past M (N), which
// costs time (README "Rows past the edge"), and recomputes rows the tile before it holds: both
// tiles write the same values there (the same k-blocks in the same order per element). Rounded
// to 8 so that a column origin keeps C's 16-byte store alignment. The host sets it per call
// (edge_shift: where every unit runs in one wave and no stream-K splits a unit, whose partial
// sums would round the shared rows differently); 0 or a negative value (the host's "by shape")
// builds none.
#ifndef EDGE_SHIFT
#define EDGE_SHIFT 0
#endif
// NARROW_N (host only; 1 ships): the shape rule's tiles of 16 or 32 columns for a small N (the
// mirror of decode); the kernel builds them as any BN it wraps, stored directly.
// EPI_OVERLAP=d > 0 (128 x 256 tiles, TMA store, no split of K, no stream-K; the host's
// epi_overlap): the epilogue's math runs while the tensor cores work. A tile's accumulators are
// two halves of 128 columns (acc[0..63], acc[64..127]; wgmma m64n128k16 on each, B's rows 0-127
// and 128-255). The last d k-blocks issue half 0's wgmmas first, then half 1's as one group: half
// 0's epilogue (alpha, bias, activation, store) runs while half 1's are in flight. Half 1 waits
// in its registers for the next unit, whose first d k-blocks issue half 0's wgmmas only: half 1's
// epilogue runs under those, then the same d k-blocks' half-1 wgmmas catch up. Between the two
// ends a k-block is two m64n128k16 (one m64n256k16 would be one register tuple to ptxas, which
// would then wait for both halves before either's epilogue). The d buffers at each end are held
// until both halves have read them (d < STAGES), and no register is added: each half's epilogue
// works on the half of acc the running wgmmas do not touch. A knob, default 0: measured slower
// (README "Open questions": a warpgroup runs only a few hundred cycles of its own arithmetic
// under its wgmmas, probes/wgmma_overlap.py; results/probes/20261201T024629).
#ifndef EPI_OVERLAP
#define EPI_OVERLAP 0
#endif
#define OVERLAP EPI_OVERLAP
#if OVERLAP && (BN != 256 || BM != 128 || !TMA_STORE || PARTIAL || STREAMK || OVERLAP >= STAGES)
#error "EPI_OVERLAP needs BM 128, BN 256, TMA_STORE=1, no split of K, STREAMK=0 and EPI_OVERLAP < STAGES"
#endif
#define DEFER (EPI_DEFER && TMA_STORE && !PARTIAL && !OVERLAP)  // (the direct-store and split-K paths store at once)
// ROW_PARITY=1 (a knob, 2 ships; the host's row_parity keeps it only where the build can take
// it, and turns 2, "by shape", into 1 or 0 per call): tiles of C's even rows and of its odd rows. Where K % 16 == 8, a packed row of A
// starts 16 bytes into a 32-byte sector every other row (row r at byte 2Kr), and a TMA box row
// that starts mid-sector costs about 2.2 L2 requests against 1.0 (OPEN_QUESTIONS.md "Small
// square problems"). Here A's and C's tensor maps are 3-D, (K or N, 2, M / 2): (x, p, i) is row
// 2i + p (tma.tensor_map's row_parity). Unit rows alternate parities (tile_rows below), and an
// odd-row tile runs its k-blocks K_SHIFT columns early (k = 64 kt - 8) for A and B alike: its
// rows of A then start on a sector too (A's base 32-byte aligned), and TMA zero-fills the 8
// columns before k = 0 of both operands, which add nothing. The k-blocks cover K + K_SHIFT
// columns: for K % 16 == 8 no more k-blocks than K's. Every unit is whole and stored by TMA:
// M even, an even number of unit rows (the host's units; kernel traps otherwise), the TMA store,
// no split of K, no stream-K, no swap, no deferred or overlapped store pass, whole A tiles.
#ifndef ROW_PARITY
#define ROW_PARITY 0
#endif
#if ROW_PARITY != 1  // (2, the host's "by shape": built alone, every tile of C's rows in order)
#undef ROW_PARITY
#define ROW_PARITY 0
#endif
#if ROW_PARITY && (!TMA_STORE || PARTIAL || STREAMK || SWAP_AB || SPLIT_CLUSTER > 1 || OVERLAP || DEFER || A_ROWS != BM)
#error "ROW_PARITY needs TMA_STORE=1, no split of K, STREAMK=0, SWAP_AB=0, no SPLIT_CLUSTER, EPI_OVERLAP or EPI_DEFER, and A_ROWS == BM"
#endif
#define K_SHIFT (ROW_PARITY ? 8 : 0)  // the columns an odd-row tile's k-blocks start before k = 0
// The fused epilogue of a TMA-store tile applies alpha and the bias to the whole tile first (its
// shared-memory loads of the bias together, ahead of the first store pass), then the activation
// per store pass (AFFINE_FIRST); and the bias is staged under the unit's second k-block, not
// after the mainloop (BIAS_UNDER). Per pass, each pass's bias loads waited behind the previous
// pass's store; after the mainloop, the staging's barriers held the warpgroup that finished first
// (EPILOGUE.md "The bias: staged under the mainloop, added before the stores"). Both in 128-row tiles
// (two warpgroups), where they were measured. Not with EPI_OVERLAP (half 1's wgmmas still run
// while half 0 is stored, and the last tile's half 1 reads its bias in this unit's head), and
// AFFINE_FIRST not with stream-K; elsewhere ptxas spills more (128 x 256 stream-K bias +
// gelu_tanh: 24 B; 192 x 128 bias + silu: 16 B instead of 8; 64 x 256: 16-80 B instead of 0-8).
#define AFFINE_FIRST (TMA_STORE && !PARTIAL && !OVERLAP && !STREAMK && CONSUMERS == 2)
#define BIAS_UNDER (!OVERLAP && CONSUMERS == 2)
#if TMA_STORE && !PARTIAL && BN % 64
#error "the TMA store stages boxes of 64 columns: BN must be a multiple of 64 (the host stores narrower tiles directly)"
#endif
#define ALIGN_SLACK 1024                      // the 128B swizzle repeats every 1024 bytes
// SPLIT_CLUSTER: rank 0 receives the other ranks' partial tiles, 64 x BN fp32 per consumer
// warpgroup each (thread i's float4 j at [j * 128 + i], the layout the sender holds in registers)
#define RED_WG_BYTES (64 * BN * 4)
#define RED_BYTES ((SPLIT_CLUSTER - 1) * CONSUMERS * RED_WG_BYTES)
#define BAR_BYTES (2 * 8 * STAGES + (SPLIT_CLUSTER > 1 ? 16 : 0))  // a full and an empty mbarrier per buffer (+ the partials')

// Dynamic shared memory, named once: STAGES tile buffers, the epilogue staging tile, 1 KiB of
// slack to align them to the 1024-byte swizzle period, then the barriers. With the defaults:
// 4 x 49,152 + 32,768 + 1,024 + 64 = 230,464 B of the 232,448 an H200 block may have (BM 128,
// BN 256; the host picks STAGES for the other tiles so that they fit too). The harness
// reads this constant from the compiled kernel to size the launch.
extern "C" __device__ const unsigned gemm_smem_bytes = STAGES * STAGE_BYTES + EPI_BYTES + BIAS_BYTES + RED_BYTES + ALIGN_SLACK + BAR_BYTES;

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
// The address of the same shared-memory offset in CTA `cta` of the cluster.
__device__ __forceinline__ unsigned mapa_shared(unsigned addr, unsigned cta) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(cta));
  return r;
}
// Arrive on the barrier at the same offset in CTA `cta` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned cta) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(mapa_shared(bar, cta)) : "memory");
}
// SPLIT_CLUSTER: this thread's earlier stores to CTA `cta`'s shared memory are visible to whoever
// acquires the barrier's phase (release at cluster scope), and the acquiring wait.
__device__ __forceinline__ void mbar_arrive_release_cluster(unsigned bar, unsigned cta) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(mapa_shared(bar, cta)) : "memory");
}
__device__ __forceinline__ void mbar_wait_acquire_cluster(unsigned bar, unsigned phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar), "r"(phase) : "memory");
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
// The same barrier with a relaxed arrive: this thread's earlier writes are not released by it
// (the start's mbarrier inits are, by their own fence: CLUSTER_ARRIVE).
__device__ __forceinline__ void cluster_sync_relaxed_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// ---- TMA: one box of a 2-D tensor, global -> shared, completion counted on an mbarrier ------
// With L2_HINT the copy carries an L2 eviction policy (`policy`, from l2_policy); else it is unused.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDesc* map, int x, int y, unsigned bar,
                                            [[maybe_unused]] unsigned long long policy) {
#if L2_HINT > 0
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "l"(policy) : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
#endif
}
// The same box written to the same offset of every CTA in `mask`, and counted on the mbarrier
// at the same offset in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TmaDesc* map, int x, int y,
                                                      unsigned bar, unsigned short mask,
                                                      [[maybe_unused]] unsigned long long policy) {
#if L2_HINT > 0
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5, %6;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask), "l"(policy) : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
#endif
}
// The same two for a box of a 3-D tensor, (x, y, z): A's rows with ROW_PARITY (x = k, y = the
// parity, z = the row of that parity's rows; below).
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TmaDesc* map, int x, int y, int z, unsigned bar,
                                            [[maybe_unused]] unsigned long long policy) {
#if L2_HINT > 0
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar), "l"(policy) : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
#endif
}
__device__ __forceinline__ void tma_load_3d_multicast(unsigned dst, const TmaDesc* map, int x, int y, int z,
                                                      unsigned bar, unsigned short mask,
                                                      [[maybe_unused]] unsigned long long policy) {
#if L2_HINT > 0
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4}], [%5], %6, %7;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar), "h"(mask), "l"(policy) : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
      ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar), "h"(mask) : "memory");
#endif
}
// A's box of rows y .. of C's rows at column x: the 2-D map's (x, y), or with ROW_PARITY rows
// y .. of parity p's (the 3-D map's (x, p, y)). C's store box likewise.
__device__ __forceinline__ void tma_load_a(unsigned dst, const TmaDesc* map, int x, int y, [[maybe_unused]] int p,
                                           unsigned bar, unsigned long long policy) {
#if ROW_PARITY
  tma_load_3d(dst, map, x, p, y, bar, policy);
#else
  tma_load_2d(dst, map, x, y, bar, policy);
#endif
}
__device__ __forceinline__ void tma_load_a_multicast(unsigned dst, const TmaDesc* map, int x, int y,
                                                     [[maybe_unused]] int p, unsigned bar, unsigned short mask,
                                                     unsigned long long policy) {
#if ROW_PARITY
  tma_load_3d_multicast(dst, map, x, p, y, bar, mask, policy);
#else
  tma_load_2d_multicast(dst, map, x, y, bar, mask, policy);
#endif
}
// An L2 eviction policy for every access it is given to: evict_first (first = true) or evict_last.
__device__ __forceinline__ unsigned long long l2_policy(bool first) {
  unsigned long long p;
  if (first)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  else
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// shared -> global: one box, tracked by the issuing thread's bulk-group counter.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* map, unsigned src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(map), "r"(x), "r"(y), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_3d(const TmaDesc* map, unsigned src, int x, int y, int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
               ::"l"(map), "r"(x), "r"(y), "r"(z), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_c(const TmaDesc* map, unsigned src, int x, int y, [[maybe_unused]] int p) {
#if ROW_PARITY
  tma_store_3d(map, src, x, p, y);
#else
  tma_store_2d(map, src, x, y);
#endif
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until the committed stores have finished READING shared memory (their global writes may
// still be in flight): then the staging tile may be overwritten.
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---- schedule: tile index -> (tile row, tile column) -----------------------------------------
// Units are the scheduled items: CLUSTER_M x CLUSTER_N adjacent tiles (one per CTA of a cluster).
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

// The origin of a tile along one dimension (`block`: its tile index times the tile) where C has
// `extent` rows (columns) and the tile `tile` of them: EDGE_SHIFT above.
__device__ __forceinline__ int tile_origin(int block, int extent, int tile) {
#if EDGE_SHIFT > 0
  return extent >= tile ? min(block, (extent - tile + 7) / 8 * 8) : block;
#else
  return block;
#endif
}

// A unit's rows: tile row um * CLUSTER_M + rm of C (its first row, parity 0), or with ROW_PARITY
// unit row um = 2q + p takes tile row q * CLUSTER_M + rm of parity p's M / 2 rows (rows 2i + p),
// so that the CTAs of a cluster, which share B's loads, share the parity and the k-blocks.
struct TileRows {
  int row;     // the tile's first row: of C, or with ROW_PARITY of its parity's rows
  int parity;  // 0, or with ROW_PARITY the rows' parity (odd: k-blocks K_SHIFT columns early)
};
__device__ __forceinline__ TileRows tile_rows(int um, int rm, int M) {
#if ROW_PARITY
  return TileRows{tile_origin(((um >> 1) * CLUSTER_M + rm) * BM, M / 2, BM), um & 1};
#else
  return TileRows{tile_origin((um * CLUSTER_M + rm) * BM, M, BM), 0};
#endif
}

// ---- schedule: the work list of one worker (a CTA, or a cluster of CLUSTER CTAs) ---------------
// Units 0 .. dp_units-1 are data-parallel: worker w takes w, w + workers, ... whole. With STREAMK,
// the last sk_units units (the partial wave, plus one full wave when the partial one is under half
// full, so that no unit is split more than about three ways; none where the idle part is too small
// to pay for the partial sums; all of them where the grid has more workers than units) are
// stream-K: their sk_units x
// num_k_tiles k-blocks are cut into `workers` equal contiguous ranges, one per worker. A range
// covers the end of one unit, whole units, the start of another; it is walked from its END down,
// so a worker first computes the start of a unit that a HIGHER worker finishes (and publishes the
// partial sum at once), and last the end of a unit that LOWER workers started. The worker holding
// a unit's last k-block owns it: it waits only for lower workers (launched before it, so the wait
// cannot deadlock on a block that is not resident), adds their partials and stores C.
__host__ __device__ __forceinline__ int streamk_units(int units, int workers, int kt) {
#if STREAMK && !PARTIAL
  // (A split of K, PARTIAL, has its own reduction: no stream-K on top of it.)
  // Split the last wave only where its idle part is worth more than moving the partial sums:
  // 64 KiB of fp32 per consumer warpgroup, written once and read once, measured at ~5 us, about
  // 8 k-blocks of a worker (~0.7 us each at 128 x 256): so at least 12 idle k-blocks per worker.
  // (scripts/sk_probe.py: at M = K = 4096 a last wave of 112-124 of 132 blocks lost, 16-88 won.)
  // A grid wider than the units (v5 only): the host launched every SM to share one partial wave
  // (__init__.py, SK_FILL), so every unit is split.
  if (units < workers) return units;
  const int rem = units % workers;
  if (rem == 0 || static_cast<long long>(workers - rem) * kt < 12LL * workers) return 0;
  return 2 * rem >= workers ? rem : rem + workers;
#else
  return 0;
#endif
}
// n / d for 0 <= n < 2^62 and 1 <= d < 2^31, without the subroutine CALL a 64-bit division
// compiles to: values live across that CALL are saved to local memory where registers are tight
// (one stream-K consumer, at 232 registers, spilled a range bound so). Above 2^31, float
// estimates from below take off about 15 bits each (each is at most the true quotient: the
// reciprocal, within 2 ulp, and the products are scaled by 0.99998), then one 32-bit division.
// tests/test_schedule.py checks it against `/` on the host (where the reciprocal is exact).
__host__ __device__ __forceinline__ long long div_small(long long n, int d) {
  long long q = 0;
  while (n > 0x7fffffffLL) {
    // (the reciprocal in here, by a volatile asm, so that it is not hoisted out of the loops that
    // call this and kept in a register across them for a path they almost never take)
#ifdef __CUDA_ARCH__
    float rcp;
    asm volatile("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(rcp) : "f"(static_cast<float>(d)));
#else
    float rcp = 1.0f / static_cast<float>(d);
#endif
    long long e = static_cast<long long>(static_cast<float>(n) * (rcp * 0.99998f));
    e = e > 0 ? e : 1;  // (n > d here, so a quotient of at least 1)
    q += e;
    n -= e * d;
  }
  return q + static_cast<unsigned>(n) / static_cast<unsigned>(d);
}
// First stream-K k-block of worker w (w = workers: the end of the region).
__host__ __device__ __forceinline__ long long streamk_begin(int w, long long sk_iters, int workers) {
  return div_small(sk_iters * w, workers);
}
struct Schedule {
  int unit, step, dp_units, kt;   // data-parallel part: unit, unit + step, ... below dp_units
  long long lo, hi;               // stream-K part: k-blocks [lo, hi) of the region, taken from hi down
  // The next piece of work: k-blocks [kb, ke) of unit u. False when the list is done.
  __host__ __device__ __forceinline__ bool next(int& u, int& kb, int& ke) {
    if (unit < dp_units) { u = unit; kb = 0; ke = kt; unit += step; return true; }
    if (hi <= lo) return false;
    const int su = static_cast<int>(div_small(hi - 1, kt));  // the stream-K unit holding the last k-block left
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

// ---- split-K fixup: one counter per tile in global memory (the `flags` argument when PARTIAL) --
// The count of a tile's units done so far, before this one's: release (its partials, fenced by
// every writer before the barrier that precedes this) and acquire (the others' partials).
__device__ __forceinline__ unsigned count_arrival(unsigned* c) {
  unsigned v;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(v) : "l"(c) : "memory");
  return v;
}
// Named barrier `id` among `count` threads that also ORs a predicate over them.
template <int ID, int COUNT>
__device__ __forceinline__ bool bar_any(bool p) {
  unsigned r;
  asm volatile(
      "{\n"
      ".reg .pred q, any;\n"
      "setp.ne.u32 q, %1, 0;\n"
      "bar.red.or.pred any, %2, %3, q;\n"
      "selp.u32 %0, 1, 0, any;\n"
      "}\n" : "=r"(r) : "r"(static_cast<unsigned>(p)), "n"(ID), "n"(COUNT) : "memory");
  return r != 0;
}

// ---- epilogue math: y = act(alpha * acc + bias), in fp32 --------------------------------------
// ACT and BIAS are -D defines (one compiled kernel per epilogue; the plain GEMM carries only an
// alpha multiply, taken when alpha != 1); alpha is a kernel argument. ACT: 0 none, 1 relu, 2 gelu (erf form,
// torch's default), 3 gelu_tanh, 4 silu. BIAS: 0 none, 1 fp16, 2 fp32 (one value per column).
// An SM's special-function unit (MUFU: ex2, rcp) does 16 operations per clock, its FMA pipes
// 128 (CUDA C++ Programming Guide, arithmetic instruction throughput, compute capability 9.0),
// and the epilogue's time followed both its MUFU and its other instructions per element (README
// "The activations: fewer instructions, one reciprocal for two"). ACT_MATH (instructions per
// element in the SASS, over the bias-only kernel's):
//  0: CUDA's forms: gelu 0.5 x (1 + erff(x / sqrt 2)) (25, one MUFU: erff's ex2);
//     gelu_tanh = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); silu = x * sigmoid(x);
//     sigmoid(z) = 1 / (1 + e^-z) with __expf and __fdividef (12 and 8, two MUFU).
//  1 (shipped): gelu = relu(x) - |x| Phi(-|x|), the small side computed directly (no
//     1 + erf(x) ~ 0 for x < -3): Phi(-a) = 2^q(a), q a degree-7 fit of log2 Phi(-a) on
//     [0, 6.5] (weighted minimax, scripts/gelu_fit.py: 5.5e-6 relative in a float32 emulation,
//     within the 1e-5 relative where gelu is above 2^-25 that tests/test_v5.py checks these forms
//     as written here against float64; degree 9, two FFMA more, until results/probes/
//     20261202T050302 measured degree 7 1.0-1.2 us faster at 4096^3), a = |x| clamped at 6.5,
//     past which the term is below 6.5 Phi(-6.5) = 2.6e-10 (11, one MUFU).
//     gelu_tanh and silu = x / (1 + e), e = 2^t, t = -2u log2 e or -x log2 e (one ex2, no
//     __expf range fix-ups), two elements sharing one reciprocal: 1 / ((1 + e0)(1 + e1)) times
//     the other's factor. x is clamped below at -7.5 (gelu_tanh) or -43 (silu), so that t <= 62.1
//     and the product stays finite; the true result is below 1e-17 in magnitude there, and so
//     is the clamped one (8.5 and 6.5, 1.5 MUFU). (Measured against relu(x) - |x| e / (1 + e)
//     with e = 2^(-|z| log2 e), four elements sharing a reciprocal, 11.5 and 9.5 with 1.25 MUFU:
//     the same time, results/probes/20261201T043843, so the shorter form stayed.)
#ifndef ACT_MATH
#define ACT_MATH 1
#endif
__device__ __forceinline__ float ex2_ftz(float t) {  // 2^t, one MUFU.EX2 (0 below 2^-126)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(t));
  return r;
}
__device__ __forceinline__ float rcp_ftz(float d) {  // 1 / d, one MUFU.RCP (max 1 ulp)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(d));
  return r;
}
// gelu (ACT_MATH=1): Phi(-a), a = |x| clamped (above).
__device__ __forceinline__ float gelu_tail(float x, float& a) {
  a = fminf(fabsf(x), 6.5f);
  float q = -1.8235431e-06f;  // log2 Phi(-a) ~ sum c_i a^i, Horner
  q = fmaf(q, a, 6.1407583e-05f);
  q = fmaf(q, a, -0.00092928176f);
  q = fmaf(q, a, 0.0085039688f);
  q = fmaf(q, a, -0.053953908f);
  q = fmaf(q, a, -0.45846882f);
  q = fmaf(q, a, -1.1512499f);
  q = fmaf(q, a, -0.99999535f);
  return ex2_ftz(q);
}
// gelu_tanh, silu (ACT_MATH=1): x clamped below (above), then e = e^-z, so that y = x / (1 + e).
__device__ __forceinline__ float sig_clamp(float x) {
  return fmaxf(x, ACT == 3 ? -7.5f : -43.0f);
}
__device__ __forceinline__ float sig_exp(float x) {
#if ACT == 3
  return ex2_ftz(-x * fmaf(0.10294324f, x * x, 2.3022082f));  // -2u log2 e
#else
  return ex2_ftz(-1.44269504f * x);
#endif
}
__device__ __forceinline__ float activate(float x) {
#if ACT == 1
  return fmaxf(x, 0.0f);
#elif ACT_MATH && ACT == 2
  float a;
  const float h = gelu_tail(x, a);
  return fmaf(-a, h, fmaxf(x, 0.0f));
#elif ACT_MATH && (ACT == 3 || ACT == 4)
  const float xc = sig_clamp(x);
  return xc * rcp_ftz(1.0f + sig_exp(xc));
#elif ACT == 2
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));  // CUDA's erff: max 2 ulp (fp32)
#elif ACT == 3
  const float u2 = 1.5957691216057308f * fmaf(0.044715f * x, x * x, x);  // 2u
  return __fdividef(x, 1.0f + __expf(-u2));
#elif ACT == 4
  return __fdividef(x, 1.0f + __expf(-x));
#else
  return x;
#endif
}
// Four elements: activate() on each, but with ACT_MATH=1 gelu_tanh and silu share one
// reciprocal per two elements.
__device__ __forceinline__ void activate_4(float (&x)[4]) {
#if ACT_MATH && (ACT == 3 || ACT == 4)
#pragma unroll
  for (int i = 0; i < 4; i += 2) {
    const float x0 = sig_clamp(x[i]), x1 = sig_clamp(x[i + 1]);
    const float e0 = sig_exp(x0), e1 = sig_exp(x1);
    const float d1 = 1.0f + e1;
    const float r = rcp_ftz(fmaf(e0, d1, d1));  // 1 / ((1 + e0)(1 + e1))
    x[i] = x0 * (r * d1);
    x[i + 1] = x1 * fmaf(r, e0, r);
  }
#else
#pragma unroll
  for (int i = 0; i < 4; ++i) x[i] = activate(x[i]);
#endif
}
#define FUSED (ACT != 0 || BIAS != 0)
#define CONSUMER_THREADS (128 * CONSUMERS)
#define BIAS_PER_THREAD ((BIAS_LEN + CONSUMER_THREADS - 1) / CONSUMER_THREADS)
#define BAR_CONSUMERS (CONSUMERS >= 3 ? CONSUMERS + 1 : 3)  // named barrier of all consumer threads (1 .. CONSUMERS: one warpgroup each)
// The bias of column col as stored (fp16 or fp32; 0 past the last column), and as fp32. A tile's
// bias is loaded as stored at the unit's start and converted only when staged after the mainloop:
// an fp16 value converted where it is loaded makes every consumer warp wait for the load there,
// before its first wgmma (ptxas puts the conversion beside the load).
#if BIAS == 1
typedef __half bias_raw_t;
#else
typedef float bias_raw_t;
#endif
__device__ __forceinline__ bias_raw_t bias_raw_at(const void* bias, int col, int N) {
#if BIAS == 1
  return col < N ? static_cast<const __half*>(bias)[col] : __ushort_as_half(0);
#elif BIAS == 2
  return col < N ? static_cast<const float*>(bias)[col] : 0.0f;
#else
  return 0.0f;
#endif
}
__device__ __forceinline__ float bias_float(bias_raw_t v) {
#if BIAS == 1
  return __half2float(v);
#else
  return v;
#endif
}
__device__ __forceinline__ float bias_at(const void* bias, int col, int N) {
  return bias_float(bias_raw_at(bias, col, N));
}
// Chunks j0 .. j0 + COUNT - 1 of a thread's accumulators (acc[4j + e]: tile column 8j + 2t +
// (e & 1), rows g and g + 8), in place: PART FUSE_AFFINE (alpha and the bias), FUSE_ACT (the
// activation) or both. The bias comes from the tile's staged copy in shared
// memory (bias_tile: BN fp32, column c at byte 4c): one 8-byte load per chunk, ~30 cycles.
// With SWAP_AB the bias is per tile row (BM fp32): rows r and r + 8 (r: the thread's row g in
// the tile), the same two values for every chunk.
// The reduce kernel's one element: its bias straight from global memory.
__device__ __forceinline__ float fuse_one(float v, const void* bias, float alpha, int col, int N) {
  return activate(fmaf(alpha, v, bias_at(bias, col, N)));
}
constexpr int FUSE_AFFINE = 1, FUSE_ACT = 2, FUSE_ALL = FUSE_AFFINE | FUSE_ACT;
template <int COUNT, int PART = FUSE_ALL>
__device__ __forceinline__ void fuse(float (&acc)[BN / 2], int j0, unsigned bias_tile, float alpha, int t,
                                     [[maybe_unused]] int r) {
#if FUSED
#if BIAS && SWAP_AB
  float b_lo = 0.0f, b_hi = 0.0f;  // rows r and r + 8
  if (PART & FUSE_AFFINE) {
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(b_lo) : "r"(bias_tile + 4 * r));
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(b_hi) : "r"(bias_tile + 4 * (r + 8)));
  }
#endif
#pragma unroll
  for (int j = 0; j < COUNT; ++j) {
    if (!(PART & FUSE_AFFINE)) {  // the activation alone (alpha and the bias applied before)
      float x[4] = {acc[4 * (j0 + j)], acc[4 * (j0 + j) + 1], acc[4 * (j0 + j) + 2], acc[4 * (j0 + j) + 3]};
      activate_4(x);
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[4 * (j0 + j) + e] = x[e];
      continue;
    }
#if BIAS && SWAP_AB
    float x[4] = {fmaf(alpha, acc[4 * (j0 + j)], b_lo), fmaf(alpha, acc[4 * (j0 + j) + 1], b_lo),
                  fmaf(alpha, acc[4 * (j0 + j) + 2], b_hi), fmaf(alpha, acc[4 * (j0 + j) + 3], b_hi)};
#else
    float2 bv = make_float2(0.0f, 0.0f);
#if BIAS
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(bv.x), "=f"(bv.y) : "r"(bias_tile + 4 * (8 * (j0 + j) + 2 * t)));
#endif
    float x[4] = {fmaf(alpha, acc[4 * (j0 + j)], bv.x), fmaf(alpha, acc[4 * (j0 + j) + 1], bv.y),
                  fmaf(alpha, acc[4 * (j0 + j) + 2], bv.x), fmaf(alpha, acc[4 * (j0 + j) + 3], bv.y)};
#endif
    if (PART & FUSE_ACT) activate_4(x);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[4 * (j0 + j) + e] = x[e];
  }
#else
  if ((PART & FUSE_AFFINE) && alpha != 1.0f) {  // the plain GEMM: no epilogue unless scaled
#pragma unroll
    for (int e = 0; e < 4 * COUNT; ++e) acc[4 * j0 + e] *= alpha;
  }
#endif
}

// A loop written out: f(0), f(1), ..., f(N - 1), each call inlined with its index a constant.
// The epilogue indexes the accumulators by pass; unrolled by the language, not left to NVVM's
// judgement (a rolled pass loop indexes acc at run time, which puts it in local memory, where
// wgmma cannot use it: the STREAMK=0 builds of the gelu epilogues did, before this).
template <int I, int N, typename F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (I < N) { f(I); static_for<I + 1, N>(f); }
}

// Columns col and col + 1 of one row of C at dst: one half2 where both exist (`both`) and dst is
// 4-byte aligned (per row: the columns start even, so it is row * N's parity and C's base), else
// as halves, the second only where it exists.
__device__ __forceinline__ void store_pair(__half* dst, __half2 v, bool both) {
  if (both && (reinterpret_cast<size_t>(dst) & 3) == 0) {
    *reinterpret_cast<__half2*>(dst) = v;
  } else {
    dst[0] = __low2half(v);
    if (both) dst[1] = __high2half(v);
  }
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

// A 192-wide tile: 128 x 192 fills one wave where 128 x 256 tiles fill 55-97% of it (1536 x
// 2048: 132 tiles for 132 SMs against 96). A knob (AUTO=0, BN=192) unless the rule takes it.
__device__ __forceinline__ void wgmma_m64n192k16(float (&d)[96], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 0;\n"
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
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
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

__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], unsigned long long desc_a,
                                               unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// Narrow tiles that fill one wave where 128 columns leave SMs idle, as cuBLAS's kernels at
// 128 x 14336 x 4096 (112 x 128 tiles) and in decode do: N = 112 and 32 (wgmma takes any multiple
// of 8 up to 256). Measured slower than the shape rule's tiles at every shape tried, so the rule
// does not pick them; they stay as knobs (AUTO=0, BN=112 or 32) for the measurement to be rerun
// (README "The shape rule", scripts/lever_probe.py --only bn).
__device__ __forceinline__ void wgmma_m64n112k16(float (&d)[56], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %58, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n112k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55"
      "}, %56, %57, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// N = 144: 128 x 144 tiles make exactly one wave where 128 x 192 tiles leave a quarter of the SMs
// idle and 128 x 128 tiles need a second (1536 x 1536: 132 tiles for 132 SMs, as cuBLAS's
// nvjet_sm90_hsh_144x128 kernel runs it there; README "The shape rule"). Stored directly.
__device__ __forceinline__ void wgmma_m64n144k16(float (&d)[72], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %74, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n144k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71"
      "}, %72, %73, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// N = 136, 176 and 200: C^T's tiles with the operands swapped past decode (PREFILL_SWAP):
// the rows of x split into near-equal tiles of a multiple of 8 (257-272 rows: two of 136; 320: two
// of 176; 400: two of 200; 385: three of 136; 513: four of 136; the host's rule picks by the waves
// they make), as cuBLAS's nvjet_sm90_hsh_128x136/128x176/128x200 kernels
// do at such shapes (SHAPES.md "Prefill with the operands swapped").
__device__ __forceinline__ void wgmma_m64n136k16(float (&d)[68], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %70, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n136k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67"
      "}, %68, %69, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n176k16(float (&d)[88], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %90, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87"
      "}, %88, %89, p, 1, 1, 0, 0;\n"
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
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n200k16(float (&d)[100], unsigned long long desc_a,
                                                 unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %102, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n200k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99"
      "}, %100, %101, p, 1, 1, 0, 0;\n"
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
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n16k16(float (&d)[8], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7"
      "}, %8, %9, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// scale_d = 0: D = A * B^T (the old accumulator is ignored, so no zero-fill); 1: D += A * B^T.
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], unsigned long long da, unsigned long long db,
                                           int scale_d) {
#if BN == 256
  wgmma_m64n256k16(d, da, db, scale_d);
#elif BN == 192
  wgmma_m64n192k16(d, da, db, scale_d);
#elif BN == 128
  wgmma_m64n128k16(d, da, db, scale_d);
#elif BN == 144
  wgmma_m64n144k16(d, da, db, scale_d);
#elif BN == 136
  wgmma_m64n136k16(d, da, db, scale_d);
#elif BN == 176
  wgmma_m64n176k16(d, da, db, scale_d);
#elif BN == 200
  wgmma_m64n200k16(d, da, db, scale_d);
#elif BN == 112
  wgmma_m64n112k16(d, da, db, scale_d);
#elif BN == 64
  wgmma_m64n64k16(d, da, db, scale_d);
#elif BN == 32
  wgmma_m64n32k16(d, da, db, scale_d);
#elif BN == 16
  wgmma_m64n16k16(d, da, db, scale_d);
#else
#error "BN must be 16, 32, 64, 112, 128, 136, 144, 176, 192, 200 or 256"
#endif
}

#if OVERLAP
// Half H of a 64 x 256 tile (EPI_OVERLAP): columns 128 H .. 128 H + 127, i.e. acc[64 H .. 64 H + 63]
// (m64n256's chunk j is acc[4j ..], so the halves are contiguous) and B's rows 128 H .. (16 KiB in),
// for one k-block (BK / 16 wgmmas); `first`: the unit's first k-block (scale-d = 0 on its first).
template <int H>
__device__ __forceinline__ void wgmma_half(float (&d)[BN / 2], unsigned a_tile, unsigned b_tile, bool first) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk)
    wgmma_m64n128k16(*reinterpret_cast<float(*)[64]>(d + 64 * H), smem_desc(a_tile + kk * 32),
                     smem_desc(b_tile + H * 128 * BK * 2 + kk * 32), !first || kk != 0);
}
#endif


// ---- the call's geometry: units of work and k-blocks ------------------------------------------
// A value the compiler cannot see through (ROLE_GEOMETRY, below).
__device__ __forceinline__ int opaque(int v) {
  asm volatile("" : "+r"(v));
  return v;
}
// A unit is CLUSTER_M x CLUSTER_N tiles (CTA `rank` of a cluster takes tile row um * CLUSTER_M + rm
// and tile column un * CLUSTER_N + rn, rm = rank % CLUSTER_M, rn = rank / CLUSTER_M) and one of
// `splits` ranges of k-blocks; partial tiles at the edges count as tiles.
struct Geometry {
  int units_m, units_n, num_units;  // (SPLIT_CLUSTER: the host passes splits = 1)
  int num_k_tiles;                  // the last one zero-filled past K by TMA
  int k_tiles_per_split;            // the host keeps none empty
};
__device__ __forceinline__ Geometry geometry(int M, int N, int K, int splits) {
  const int units_m = (M + BM * CLUSTER_M - 1) / (BM * CLUSTER_M);
  const int units_n = (N + BN * CLUSTER_N - 1) / (BN * CLUSTER_N);
  const int num_k_tiles = (K + K_SHIFT + BK - 1) / BK;  // (ROW_PARITY: odd-row tiles start K_SHIFT early)
  const int ksplits = SPLIT_CLUSTER > 1 ? SPLIT_CLUSTER : splits;
  return Geometry{units_m, units_n, units_m * units_n * splits, num_k_tiles, (num_k_tiles + ksplits - 1) / ksplits};
}
// Each role works the geometry out again after its setmaxnreg, from the kernel's arguments passed
// through `opaque`: otherwise ptxas computes it once before the roles split and carries it across,
// and where a role's registers are tight it keeps some of it in local memory (README, "Local
// memory": 8 B in one build of the shipped grid, or in 30 after a small change elsewhere).
#define ROLE_GEOMETRY                                                                              \
  const Geometry role_geo = geometry(opaque(M), opaque(N), opaque(K), opaque(splits));            \
  const int units_m = role_geo.units_m, units_n = role_geo.units_n, num_units = role_geo.num_units; \
  const int num_k_tiles = role_geo.num_k_tiles, k_tiles_per_split = role_geo.k_tiles_per_split

extern "C" __global__ void
#if CTAS > 1
__cluster_dims__(CTAS, 1, 1)
#endif
__launch_bounds__(THREADS, 1)
gemm_v5_fused_epilogue(const __grid_constant__ TmaDesc tmap_a, const __grid_constant__ TmaDesc tmap_b,
                       const __grid_constant__ TmaDesc tmap_c, __half* __restrict__ C, int M, int N, int K,
                       const void* __restrict__ bias, float alpha, float* __restrict__ ws, int splits, int ldw,
                       float* __restrict__ sk_ws, unsigned* __restrict__ flags) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
#if PDL && PARTIAL && !SPLIT_FIXUP
  // The reduce kernel may be scheduled now: its blocks wait (griddepcontrol.wait) until this grid
  // has finished and its partials are visible, so only its launch overlaps this kernel.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  // The 128-byte swizzle repeats every 1024 bytes: tiles must start on a 1024-byte boundary.
  const unsigned smem_base = (static_cast<unsigned>(__cvta_generic_to_shared(smem_raw)) + 1023) & ~1023u;
  const unsigned epi_base = smem_base + STAGES * STAGE_BYTES;    // EPI_BYTES, 1024-aligned
  const unsigned bias_base = epi_base + EPI_BYTES;               // BIAS_BYTES
  [[maybe_unused]] const unsigned red_base = bias_base + BIAS_BYTES;  // RED_BYTES
  const unsigned full_bar = bias_base + BIAS_BYTES + RED_BYTES;  // STAGES x 8 bytes
  const unsigned empty_bar = full_bar + STAGES * 8;              // STAGES x 8 bytes
  [[maybe_unused]] const unsigned red_full = empty_bar + STAGES * 8;   // SPLIT_CLUSTER: partials in
  [[maybe_unused]] const unsigned red_empty = red_full + 8;            // ... and read by rank 0

  // The units and k-blocks (`geometry`), here for the checks below; each role works them out
  // again after its setmaxnreg (ROLE_GEOMETRY).
  [[maybe_unused]] const Geometry geo = geometry(M, N, K, splits);
  const unsigned crank = CTAS > 1 ? cluster_rank() : 0;
  const unsigned rank = crank % CLUSTER;  // the tile's place in the unit
  [[maybe_unused]] const int split_rank = crank / CLUSTER;  // SPLIT_CLUSTER: this CTA's range of k-blocks
  [[maybe_unused]] const unsigned rm = rank % CLUSTER_M, rn = rank / CLUSTER_M;
  const int worker = blockIdx.x / CTAS, workers = gridDim.x / CTAS;

  const int warpgroup = threadIdx.x / 128, lane = threadIdx.x % 32;
#if SPLIT_CLUSTER > 1
  if (geo.k_tiles_per_split * (SPLIT_CLUSTER - 1) >= geo.num_k_tiles) __trap();  // an empty range (the host avoids it)
#endif
#if ROW_PARITY
  if (M % 2 || geo.units_m % 2) __trap();  // each parity's tile rows must pair up (the host's row_parity)
#endif
#if OVERLAP
  if (geo.num_k_tiles < 2 * OVERLAP) __trap();  // the host builds EPI_OVERLAP only where K is long enough
#endif

  if (threadIdx.x == 0) {
#if TMAP_PREFETCH
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&tmap_a) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&tmap_b) : "memory");
#if TMA_STORE
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&tmap_c) : "memory");
#endif
#endif
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 1);                                // the producer's expect_tx arrival
      mbar_init(empty_bar + 8 * s, CLUSTER * CONSUMERS * 4);         // one arrival per consumer warp, every CTA
    }
#if SPLIT_CLUSTER > 1
    mbar_init(red_full, (SPLIT_CLUSTER - 1) * CONSUMER_THREADS);  // (rank 0's) every sending thread
    mbar_init(red_empty, 1);                                       // (ranks 1..) rank 0 has read them
#endif
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();
#if CTAS > 1 && CLUSTER_ARRIVE
  // the peer's barriers exist before anyone multicasts into them or arrives remotely; their inits
  // were released by thread 0's fence.mbarrier_init, so the arrive need not release (CLUSTER_ARRIVE)
  cluster_sync_relaxed_arrive();
#elif CTAS > 1
  cluster_sync();  // the peer's barriers exist before anyone multicasts into them or arrives remotely
#endif
#if AFTER_COPY
  // Launched as a programmatic dependent of the copy kernel (below), this block may have started
  // while A and B were still being written: wait until that grid has finished and its writes are
  // visible. Everything above (addresses, barriers) overlapped the copy.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif

  if (warpgroup == 0) {
    // ---- load: the producer warpgroup; one thread issues every copy --------------------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    if (threadIdx.x == 0) {
      ROLE_GEOMETRY;
      int it = 0;  // k-blocks loaded so far by this block: buffer it % STAGES, lap it / STAGES
      // L2_HINT: the eviction priorities of A's and B's loads (unused without it)
      const unsigned long long pol_a = L2_HINT > 0 ? l2_policy(L2_HINT == 2) : 0;
      const unsigned long long pol_b = L2_HINT > 0 ? l2_policy(L2_HINT == 1) : 0;
      Schedule sch = make_schedule(worker, workers, num_units, k_tiles_per_split);
      for (int unit, kb, ke; sch.next(unit, kb, ke);) {
        int um, un;
        unit_coords(unit / splits, units_m, units_n, um, un);
        const TileRows place = tile_rows(um, rm, M);
        const int block_m = place.row, block_n = tile_origin((un * CLUSTER_N + rn) * BN, N, BN);
        const int k0 = -K_SHIFT * place.parity;  // the column of k-block 0 (ROW_PARITY's odd rows: -8)
        const int split_kt = (SPLIT_CLUSTER > 1 ? split_rank : unit % splits) * k_tiles_per_split;
        const int kt0 = split_kt + kb, kt1 = min(split_kt + ke, num_k_tiles);
        for (int kt = kt0; kt < kt1; ++kt, ++it) {
          const int s = it % STAGES;
          // Lap u > 0 refills buffer s: wait until every consumer warp (of every CTA) released lap u-1.
          if (it >= STAGES) mbar_wait(empty_bar + 8 * s, ((it / STAGES) - 1) & 1);
          const unsigned a_dst = smem_base + s * STAGE_BYTES;
          mbar_expect_tx(full_bar + 8 * s, LOAD_BYTES);  // all of A and B (every slice, with a cluster)
#if CLUSTER_N > 1
          // slice rn of A's rows, to every CTA on this tile row (ranks rm, rm + CLUSTER_M, ...)
          tma_load_a_multicast(a_dst + rn * A_SLICE_BYTES, &tmap_a, k0 + kt * BK, block_m + rn * A_SLICE_ROWS,
                               place.parity, full_bar + 8 * s, A_ROW_MASK << rm, pol_a);
#else
          tma_load_a(a_dst, &tmap_a, k0 + kt * BK, block_m, place.parity, full_bar + 8 * s, pol_a);
#endif
#if CLUSTER_M > 1
          // slice rm of B's rows, to every CTA on this tile column (ranks rn * CLUSTER_M ...)
          tma_load_2d_multicast(a_dst + A_BYTES + rm * B_SLICE_BYTES, &tmap_b, k0 + kt * BK,
                                block_n + rm * B_SLICE_ROWS, full_bar + 8 * s, ((1u << CLUSTER_M) - 1) << (rn * CLUSTER_M), pol_b);
#else
          tma_load_2d(a_dst + A_BYTES, &tmap_b, k0 + kt * BK, block_n, full_bar + 8 * s, pol_b);
#endif
        }
      }
#if TAIL_WAIT
      // every consumer of the cluster has released the last lap's buffers: no peer arrives here after this
      for (int j = it > STAGES ? it - STAGES : 0; j < it; ++j)
        mbar_wait_acquire_cluster(empty_bar + 8 * (j % STAGES), (j / STAGES) & 1);
#endif
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
    ROLE_GEOMETRY;
    const int wg = warpgroup - 1;  // consumer index: rows 64 wg .. 64 wg + 63 of the tile
    // Release a buffer: one arrival per consumer warp, on this CTA's empty barrier and, with a
    // cluster, on every peer's (lane r tells CTA r; with CLUSTER_N > 1 also those on neither this
    // tile's row nor its column, which write nothing here: one count for all CTAs is simpler).
    // Per warp, not per warpgroup: wgmma.wait_group speaks for the wgmma-groups of the warp that
    // executes it, so one warp returning from it does not show that the other three have finished
    // reading the buffer.
    auto release = [&](unsigned ebar) {
#if CLUSTER > 1
      if (lane < CLUSTER) mbar_arrive_cluster(ebar, lane);
#else
      if (lane == 0) mbar_arrive(ebar);
#endif
    };
#if BIAS_BYTES
    const int consumer_tid = threadIdx.x - 128;  // 0 .. CONSUMER_THREADS - 1
#endif
#if TMA_STORE && !PARTIAL
    // One store pass: this warpgroup's 64 rows x EPI_COLS columns, `h` holding (as fp16 pairs)
    // chunk jj of the pass at h[2 jj] (row g) and h[2 jj + 1] (row g + 8), staged as EPI_COLS / 64
    // boxes of 64 rows x 128 bytes in the TMA 128B swizzle (16-byte chunk c of row r sits at chunk
    // c ^ (r % 8)): the layout the store's tensor map (box 64 x 64, SWIZZLE_128B) reads. The
    // boxes are stored to columns x, x + 64, ... of rows y .. y + 63 of C, clipped at C's edge.
    const bool leader = (threadIdx.x % 128) == 0;
    const unsigned epi = epi_base + wg * EPI_WG_BYTES;
    [[maybe_unused]] int tile_parity = 0;  // ROW_PARITY: the parity of the unit's rows (y counts that parity's rows)
    auto store_pass = [&](const unsigned (&h)[EPI_COLS / 4], int x, int y) {
      const int warp_in_group = (threadIdx.x % 128) / 32;
      if (leader) tma_store_wait_read();  // the previous pass's (or tile's) store has read the tile
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
        for (int b = 0; b < EPI_COLS / 64; ++b) tma_store_c(&tmap_c, epi + b * EPI_BOX_BYTES, x + b * 64, y, tile_parity);
        tma_store_commit();  // the box is clipped at C's edge: rows >= M, columns >= N are not written
      }
    };
#endif
#if DEFER
    unsigned deferred[EPI_COLS / 4];      // the last tile's last store pass, fp16 pairs
    int deferred_x = -1, deferred_y = 0;  // its place in C (x < 0: nothing deferred)
    auto flush_deferred = [&]() {
      if (deferred_x >= 0) store_pass(deferred, deferred_x, deferred_y);
      deferred_x = -1;
    };
#endif
    float acc[BN / 2];             // no zero-fill: the first wgmma of a tile runs with scale-d = 0
    int it = 0;                    // k-blocks consumed so far, in step with the producer's count
#if SPLIT_CLUSTER > 1
    int red_units = 0;             // units whose partials went through rank 0 (the barriers' phase)
#endif
#if OVERLAP
    int rel = 0;                   // buffers released so far (in order: every k-block below rel)
    int pend_x = -1, pend_y = 0;   // half 1 of the last tile, waiting in acc[64..127]: its place in C
    auto release_to = [&](int upto) {
      for (; rel < upto; ++rel) release(empty_bar + 8 * (rel % STAGES));
    };
    auto a_at = [&](int i) { return smem_base + (i % STAGES) * STAGE_BYTES + wg * 64 * BK * 2; };
    auto b_at = [&](int i) { return smem_base + (i % STAGES) * STAGE_BYTES + A_BYTES; };
#endif
#if TMA_STORE && !PARTIAL
    // One store pass of the fused epilogue: chunks pass * EPI_COLS / 8 .. of acc fused (alpha, the
    // staged bias, the activation), rounded to fp16 (h[2 jj] row g, h[2 jj + 1] row g + 8) and
    // stored to columns x .. of rows y .. y + 63 of C.
    auto epi_pass = [&](const int pass, int x, int y) {
      fuse<EPI_COLS / 8, AFFINE_FIRST ? FUSE_ACT : FUSE_ALL>(acc, pass * (EPI_COLS / 8), bias_base, alpha, lane % 4,
                                                              wg * 64 + (threadIdx.x % 128) / 32 * 16 + lane / 4);
      unsigned h[EPI_COLS / 4];
#pragma unroll
      for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
        const int j = pass * (EPI_COLS / 8) + jj;
        h[2 * jj] = pack_half2(acc[4 * j], acc[4 * j + 1]);
        h[2 * jj + 1] = pack_half2(acc[4 * j + 2], acc[4 * j + 3]);
      }
#if DEFER
      if (pass == BN / EPI_COLS - 1) {  // staged and stored during the next unit's first k-blocks
#pragma unroll
        for (int i = 0; i < EPI_COLS / 4; ++i) deferred[i] = h[i];
        deferred_x = x; deferred_y = y;
        return;
      }
#endif
      store_pass(h, x, y);
    };
#endif
    Schedule sch = make_schedule(worker, workers, num_units, k_tiles_per_split);
    for (int unit, kb, ke; sch.next(unit, kb, ke);) {
      const int tile = splits > 1 ? unit / splits : unit;  // (no division where K is not split)
      int um, un;
      unit_coords(tile, units_m, units_n, um, un);
      const TileRows place = tile_rows(um, rm, M);
      const int block_m = place.row, block_n = tile_origin((un * CLUSTER_N + rn) * BN, N, BN);
#if ROW_PARITY
      tile_parity = place.parity;
#endif
      const int split = SPLIT_CLUSTER > 1 ? split_rank : unit - tile * splits, split_kt = split * k_tiles_per_split;
      const int kt0 = split_kt + kb, kt1 = min(split_kt + ke, num_k_tiles);
#if BIAS_BYTES
      // The tile's bias: each consumer thread loads its share now, as stored, and the values reach
      // shared memory as fp32 under the unit's second k-block (BIAS_UNDER; after the mainloop
      // otherwise; BIAS_PER_THREAD registers held; bias_raw_at). Staging: every consumer has
      // finished the previous tile's epilogue (first barrier) before it is overwritten, and all
      // of it is written before anyone reads (second). Under the wgmmas both warpgroups meet
      // anyway (they wait for the same k-blocks); after the mainloop the barriers held the first
      // to finish.
      bias_raw_t bias_reg[BIAS_PER_THREAD];
#pragma unroll
      for (int i = 0; i < BIAS_PER_THREAD; ++i)
        bias_reg[i] = SWAP_AB ? bias_raw_at(bias, block_m + consumer_tid + i * CONSUMER_THREADS, M)
                              : bias_raw_at(bias, block_n + consumer_tid + i * CONSUMER_THREADS, N);
      auto stage_bias = [&]() {
        named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
#pragma unroll
        for (int i = 0; i < BIAS_PER_THREAD; ++i)
          if (consumer_tid + i * CONSUMER_THREADS < BIAS_LEN)
            asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(bias_base + 4 * (consumer_tid + i * CONSUMER_THREADS)), "f"(bias_float(bias_reg[i])) : "memory");
        named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
      };
#endif

      int kt = kt0, kt_end = kt1;
#if OVERLAP
      // ---- overlap, head: half 0 of the first OVERLAP k-blocks, the last tile's half 1 epilogue
      // under them, then half 1 of the same k-blocks (their buffers held until then) -----------
      // (Every unit has all num_k_tiles >= 2 OVERLAP k-blocks: no split, no stream-K; the loops at
      // both ends are unrolled, which ptxas needs to keep the wgmmas asynchronous.)
      const int it0 = it;
      wgmma_wait<0>();  // (nothing is in flight here; without it ptxas waits for half 0 below)
      if (pend_x >= 0) {
#pragma unroll
        for (int j = 0; j < OVERLAP; ++j) {
          mbar_wait(full_bar + 8 * ((it0 + j) % STAGES), ((it0 + j) / STAGES) & 1);
          wgmma_fence();
          wgmma_half<0>(acc, a_at(it0 + j), b_at(it0 + j), j == 0);
        }
        wgmma_commit();
        epi_pass(1, pend_x, pend_y);
        pend_x = -1;
        wgmma_fence();  // acc[64..127] was just written by the epilogue
#pragma unroll
        for (int j = 0; j < OVERLAP; ++j) wgmma_half<1>(acc, a_at(it0 + j), b_at(it0 + j), j == 0);
        wgmma_commit();
        kt += OVERLAP; it += OVERLAP;
      }
      kt_end = kt1 - OVERLAP;  // the last OVERLAP k-blocks: the tail, below
#endif
      for (; kt < kt_end; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(full_bar + 8 * s, (it / STAGES) & 1);  // k-block it has landed

        // ---- compute: BK/16 wgmmas over this warpgroup's 64 rows of A and all BN rows of B ----
        const unsigned a_tile = smem_base + s * STAGE_BYTES + wg * 64 * BK * 2;
        const unsigned b_tile = smem_base + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();  // accumulator registers are about to be read and written asynchronously
#if OVERLAP
        // (two m64n128k16 per step here too: one m64n256k16 would make the two halves one register
        // tuple to ptxas, and it would then wait for both before either half's epilogue)
        wgmma_half<0>(acc, a_tile, b_tile, kt == kt0);
        wgmma_half<1>(acc, a_tile, b_tile, kt == kt0);
#else
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
          wgmma_tile(acc, smem_desc(a_tile + kk * 32), smem_desc(b_tile + kk * 32), (kt > kt0) || kk != 0);
#endif
        wgmma_commit();
#if DEFER
        // The previous tile's last store pass, while this tile's first wgmmas run (EPI_DEFER
        // k-blocks of them, or all of a shorter piece).
        if (kt == min(kt0 + EPI_DEFER - 1, kt1 - 1)) flush_deferred();
#endif
#if BIAS_BYTES && BIAS_UNDER
        // The tile's bias, staged while this k-block's wgmmas run (every unit has a k-block:
        // the schedule's ranges are never empty).
        if (kt == min(kt0 + 1, kt1 - 1)) stage_bias();
#endif
        // Keep this k-block's wgmmas in flight; the previous one's are now complete.
        wgmma_wait<1>();

        // ---- load: release k-block it-1's buffer to the producer(s) -----------------------------
#if OVERLAP
        release_to(it);  // (and the head's, held until their half 1 was issued)
#else
        if (kt > kt0) release(empty_bar + 8 * ((it - 1) % STAGES));
#endif
      }
#if OVERLAP
      // ---- overlap, tail: half 0 of the last OVERLAP k-blocks, then half 1 of them as one group;
      // once half 0 is complete its epilogue runs (below) while half 1's wgmmas do ---------------
      const int it_tail = it;
#pragma unroll
      for (int j = 0; j < OVERLAP; ++j) {
        mbar_wait(full_bar + 8 * ((it_tail + j) % STAGES), ((it_tail + j) / STAGES) & 1);
        wgmma_fence();
        wgmma_half<0>(acc, a_at(it_tail + j), b_at(it_tail + j), false);
      }
      wgmma_commit();
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < OVERLAP; ++j) wgmma_half<1>(acc, a_at(it_tail + j), b_at(it_tail + j), false);
      wgmma_commit();
      kt += OVERLAP; it += OVERLAP;
      wgmma_wait<1>();        // everything but half 1 of the tail
      release_to(it_tail);
#else
      wgmma_wait<0>();
      release(empty_bar + 8 * ((it - 1) % STAGES));  // the tile's last k-block
#endif

#if STREAMK && !PARTIAL
      // ---- stream-K fixup: a unit split over workers is stored by the one holding its last
      // k-block. Partials: one 64 x BN fp32 slot per (worker, CTA rank, consumer warpgroup), each
      // thread's accumulators as BN/8 float4 at [j * 128 + thread] (coalesced, and the reader has
      // the same registers); flags: one word per slot, 1 = partial ready, reset to 0 by the reader.
      const int tid = threadIdx.x % 128;
      if (ke < k_tiles_per_split) {  // a higher worker finishes this unit: publish the partial sum
        const int slot = (worker * CLUSTER + rank) * CONSUMERS + wg;
        float4* part = reinterpret_cast<float4*>(sk_ws) + static_cast<size_t>(slot) * (64 * BN / 4);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          __stcg(part + j * 128 + tid, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
        __threadfence();
        named_bar_sync(1 + wg, 128);
        if (tid == 0) flag_release(flags + slot, 1);
        continue;
      }
      if (kb > 0) {  // lower workers computed k-blocks 0 .. kb-1: add their partials, highest first
        const long long sk_iters = static_cast<long long>(num_units - sch.dp_units) * k_tiles_per_split;
        const long long unit_first = static_cast<long long>(unit - sch.dp_units) * k_tiles_per_split;
        for (int d = streamk_lower(worker, unit_first, sk_iters, workers); d >= 0;
             d = streamk_lower(d, unit_first, sk_iters, workers)) {
          const int slot = (d * CLUSTER + rank) * CONSUMERS + wg;
          if (tid == 0) {
            while (flag_acquire(flags + slot) != 1) {}
            flags[slot] = 0;  // as the launch found it: the next launch's writer sets it again
          }
          named_bar_sync(1 + wg, 128);
          const float4* part = reinterpret_cast<const float4*>(sk_ws) + static_cast<size_t>(slot) * (64 * BN / 4);
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const float4 p = __ldcg(part + j * 128 + tid);
            acc[4 * j] += p.x; acc[4 * j + 1] += p.y; acc[4 * j + 2] += p.z; acc[4 * j + 3] += p.w;
          }
        }
      }
#endif

#if SPLIT_CLUSTER > 1
      // ---- split K in the cluster: ranks 1 .. S-1 store their partial tile into rank 0's shared
      // memory (slot r - 1, thread i's float4 j at [j * 128 + i]) and arrive on its red_full
      // (release, cluster scope); rank 0 acquires it, adds the slots in rank order and frees them
      // (red_empty, one arrival per rank), then runs the epilogue. A rank waits for the previous
      // unit's slot to be freed before it writes the next.
      {
        const int tid = threadIdx.x % 128;
        if (split_rank != 0) {
          if (red_units > 0) mbar_wait_acquire_cluster(red_empty, (red_units - 1) & 1);
          const unsigned slot = mapa_shared(red_base + ((split_rank - 1) * CONSUMERS + wg) * RED_WG_BYTES, 0);
#pragma unroll
          for (int j = 0; j < BN / 8; ++j)
            asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n"
                         ::"r"(slot + 16 * (j * 128 + tid)), "f"(acc[4 * j]), "f"(acc[4 * j + 1]),
                           "f"(acc[4 * j + 2]), "f"(acc[4 * j + 3]) : "memory");
          mbar_arrive_release_cluster(red_full, 0);
          ++red_units;
          continue;
        }
        mbar_wait_acquire_cluster(red_full, red_units & 1);
#pragma unroll 1
        for (int r = 0; r < SPLIT_CLUSTER - 1; ++r) {
          const unsigned slot = red_base + (r * CONSUMERS + wg) * RED_WG_BYTES;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            float4 p;
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                         : "=f"(p.x), "=f"(p.y), "=f"(p.z), "=f"(p.w) : "r"(slot + 16 * (j * 128 + tid)) : "memory");
            acc[4 * j] += p.x; acc[4 * j + 1] += p.y; acc[4 * j + 2] += p.z; acc[4 * j + 3] += p.w;
          }
        }
        named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);  // every consumer thread has read the slots
        if (threadIdx.x == 128)
          for (int r = 1; r < SPLIT_CLUSTER; ++r) mbar_arrive_release_cluster(red_empty, r * CLUSTER);
        ++red_units;
      }
#endif

      // ---- epilogue: accumulator layout of m64nN: warp w of the warpgroup owns rows 16w..16w+15;
      // lane (g = lane/4, t = lane%4) holds, for each 8-column chunk j, rows g and g+8 at columns
      // 8j + 2t and 8j + 2t + 1: acc[4j..4j+1] (row g), acc[4j+2..4j+3] (row g+8).
      [[maybe_unused]] const int warp_in_group = (threadIdx.x % 128) / 32;
      [[maybe_unused]] const int g = lane / 4;  // (the stmatrix path addresses by lane instead)
      [[maybe_unused]] const int t = lane % 4;
#if PARTIAL
      {
        const int row = block_m + wg * 64 + warp_in_group * 16 + g;
        // Split K: this unit's fp32 partial tile goes to its slice of the workspace (rows and
        // columns past C are skipped; ldw is even, so a float2 at an even column always fits).
        float* slice = ws + (size_t)split * M * ldw;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = block_n + 8 * j + 2 * t;
          if (col < N) {
            if (row < M) *reinterpret_cast<float2*>(slice + (size_t)row * ldw + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
            if (row + 8 < M) *reinterpret_cast<float2*>(slice + (size_t)(row + 8) * ldw + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
          }
        }
#if SPLIT_FIXUP
        // ---- split-K fixup: the unit that completes a tile's count sums all of its partials,
        // in split order from zero as the reduce kernel does (bitwise the same C, repeatable
        // whichever unit finishes last), applies the epilogue and stores C; the others go on to
        // their next unit. No second kernel, no wait: nobody waits for a partial not yet written.
        // Every thread's partials are written before the barrier; the count's release (one
        // thread, after it) makes them visible GPU-wide with it, as CUTLASS's semaphore does.
        named_bar_sync(BAR_CONSUMERS, CONSUMER_THREADS);
        bool last = false;
        if (threadIdx.x == 128) {
          unsigned* count = flags + unit / splits;
          last = count_arrival(count) == static_cast<unsigned>(splits - 1);
          if (last) *count = 0;                            // as the launch found it, for the next one
        }
        if (bar_any<BAR_CONSUMERS, CONSUMER_THREADS>(last)) {  // (thread 128 acquired for all)
          // The tile's elements in pairs of columns, spread over every consumer thread (in a
          // decode shape only a few rows are real: the accumulator layout would leave most threads
          // idle), FIX_U pairs per thread at once, each pair's partials loaded FIX_S splits at a
          // time before they are added in order (the loads in flight together, not one by one).
          const int rows = min(BM, M - block_m), pairs = (min(BN, N - block_n) + 1) / 2, total = rows * pairs;
          for (int e0 = threadIdx.x - 128; e0 < total; e0 += FIX_U * CONSUMER_THREADS) {
            float2 sum[FIX_U];
#pragma unroll
            for (int u = 0; u < FIX_U; ++u) sum[u] = make_float2(0.0f, 0.0f);
            for (int s0 = 0; s0 < splits; s0 += FIX_S) {
              float2 p[FIX_U][FIX_S];
#pragma unroll
              for (int u = 0; u < FIX_U; ++u) {
                const int e = e0 + u * CONSUMER_THREADS, r = block_m + e / pairs, col = block_n + 2 * (e % pairs);
#pragma unroll
                for (int s = 0; s < FIX_S; ++s)
                  if (e < total && s0 + s < splits)
                    p[u][s] = __ldcg(reinterpret_cast<const float2*>(ws + ((size_t)(s0 + s) * M + r) * ldw + col));
              }
#pragma unroll
              for (int u = 0; u < FIX_U; ++u)
#pragma unroll
                for (int s = 0; s < FIX_S; ++s)
                  if (e0 + u * CONSUMER_THREADS < total && s0 + s < splits) { sum[u].x += p[u][s].x; sum[u].y += p[u][s].y; }
            }
#pragma unroll
            for (int u = 0; u < FIX_U; ++u) {
              const int e = e0 + u * CONSUMER_THREADS;
              if (e >= total) continue;
              const int r = block_m + e / pairs, col = block_n + 2 * (e % pairs);
              const bool both = col + 1 < N;
              const __half lo = __float2half_rn(fuse_one(sum[u].x, bias, alpha, col, N));
              const __half hi = both ? __float2half_rn(fuse_one(sum[u].y, bias, alpha, col + 1, N)) : lo;
              store_pair(C + (size_t)r * N + col, __halves2half2(lo, hi), both);
            }
          }
        }
#endif
      }
#else
      // ---- fused epilogue: alpha, bias and the activation on the fp32 accumulators, in place ----
#if BIAS_BYTES && !BIAS_UNDER
      stage_bias();
#endif
#if TMA_STORE
#if AFFINE_FIRST
      fuse<BN / 8, FUSE_AFFINE>(acc, 0, bias_base, alpha, lane % 4, wg * 64 + (threadIdx.x % 128) / 32 * 16 + lane / 4);
#endif
      static_for<0, BN / EPI_COLS>([&](const int pass) {
#if OVERLAP
        if (pass == 1) {  // half 1, whose wgmmas ran under pass 0: it waits for the next unit's head
          wgmma_wait<0>();
          release_to(it);
          pend_x = block_n + EPI_COLS; pend_y = block_m + wg * 64;
          return;
        }
#endif
        epi_pass(pass, block_n + pass * EPI_COLS, block_m + wg * 64);
      });
#else
      // Direct stores (TMA_STORE=0: C has no tensor map, N % 8 != 0 or a misaligned out): any N,
      // any 2-byte aligned C. Per pass of 64 columns the warpgroup stages its 64 rows in shared
      // memory, then each warp writes 16 whole rows back, 32 lanes on 64 consecutive columns
      // (coalesced: 128 contiguous bytes per warp store, not 8 rows x 8 bytes from registers).
      // A lane stores its two columns with store_pair (one half2 where the address allows).
      const unsigned stage = epi_base + wg * DIRECT_WG_BYTES;
      const int r = warp_in_group * 16 + g;  // this thread's rows r and r + 8 of the warpgroup's 64
      // A tile whose BN is not a multiple of 64 (112, 32) ends with a narrower pass. With SWAP_AB
      // the tile is C^T's: tile column j is row block_n + j of C and this warpgroup's 64 tile rows
      // are 64 consecutive columns of it (C's row pitch is M, the call's N). It is staged
      // transposed (tile column j at staging row j, tile row r at byte 2r), and the warps write
      // back rows of C the same way: 32 lanes on 64 consecutive columns.
      static_for<0, (BN + DIRECT_COLS - 1) / DIRECT_COLS>([&](const int pass) {
        const int cols = min(DIRECT_COLS, BN - pass * DIRECT_COLS);  // (a constant once unrolled)
        named_bar_sync(1 + wg, 128);  // the previous pass's rows have been read back
#pragma unroll
        for (int jj = 0; jj < DIRECT_COLS / 8; ++jj) {
          if (8 * jj >= cols) break;
          const int j = pass * (DIRECT_COLS / 8) + jj;
          fuse<1>(acc, j, bias_base, alpha, t, wg * 64 + r);  // chunk by chunk: few live temporaries
#if SWAP_AB
          const unsigned at = stage + (8 * jj + 2 * t) * DIRECT_PITCH + 2 * r;  // (column 8jj + 2t, row r)
          const __half v[4] = {__float2half_rn(acc[4 * j]), __float2half_rn(acc[4 * j + 1]),
                               __float2half_rn(acc[4 * j + 2]), __float2half_rn(acc[4 * j + 3])};
          asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at), "h"(__half_as_ushort(v[0])) : "memory");
          asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at + DIRECT_PITCH), "h"(__half_as_ushort(v[1])) : "memory");
          asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at + 16), "h"(__half_as_ushort(v[2])) : "memory");
          asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at + DIRECT_PITCH + 16), "h"(__half_as_ushort(v[3])) : "memory");
#else
          __half2 lo = __floats2half2_rn(acc[4 * j], acc[4 * j + 1]);
          __half2 hi = __floats2half2_rn(acc[4 * j + 2], acc[4 * j + 3]);
          const unsigned at = stage + r * DIRECT_PITCH + (8 * jj + 2 * t) * 2;
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(*reinterpret_cast<unsigned*>(&lo)) : "memory");
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at + 8 * DIRECT_PITCH), "r"(*reinterpret_cast<unsigned*>(&hi)) : "memory");
#endif
        }
        named_bar_sync(1 + wg, 128);
#if SWAP_AB
        const int gcol = block_m + wg * 64 + 2 * lane;  // C's columns: this warpgroup's tile rows
        for (int lr = warp_in_group; lr < cols; lr += 4) {
          const int grow = block_n + pass * DIRECT_COLS + lr;  // C's row: a tile column
          if (grow >= N || gcol >= M) continue;
          unsigned bits;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(bits) : "r"(stage + lr * DIRECT_PITCH + 4 * lane) : "memory");
          const __half2 v = *reinterpret_cast<__half2*>(&bits);
          store_pair(C + (size_t)grow * M + gcol, v, gcol + 1 < M);
        }
#else
        const int gcol = block_n + pass * DIRECT_COLS + 2 * lane;
#pragma unroll 4
        for (int rr = 0; rr < 16; ++rr) {
          const int lr = warp_in_group * 16 + rr, grow = block_m + wg * 64 + lr;
          if (grow >= M || gcol >= N || 2 * lane >= cols) continue;
          unsigned bits;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(bits) : "r"(stage + lr * DIRECT_PITCH + 4 * lane) : "memory");
          const __half2 v = *reinterpret_cast<__half2*>(&bits);
          store_pair(C + (size_t)grow * N + gcol, v, gcol + 1 < N);
        }
#endif
      });
#endif  // TMA_STORE
#endif  // PARTIAL
    }
#if DEFER
    flush_deferred();  // the last tile's last pass
#endif
#if OVERLAP
    if (pend_x >= 0) epi_pass(1, pend_x, pend_y);  // the last tile's half 1
#endif
#if TMA_STORE && !PARTIAL
    if (leader) tma_store_wait_all();  // shared memory must outlive the last store
#endif
  }
#if CTAS > 1 && !TAIL_WAIT
  cluster_sync();  // no CTA leaves while its peer may still multicast into it or arrive on its barriers
#endif
}


// ---- the padded copy: A and B into rows of KP halves (a multiple of PAD_K), zeros past K ---------
// Where TMA cannot read A or B as they are (K % 8 != 0, a base not 16-byte aligned) or where the
// host copies rows that start mid-sector (PAD_SECTOR), plan() runs this before the main kernel, which
// it launches as a programmatic dependent (AFTER_COPY). One warp per row, 16 bytes per lane per
// step: 16-byte loads where the rows allow them, halves otherwise. Every element of the copy is
// written, the zeros included, so the copies need no fill of their own.
extern "C" __global__ void __launch_bounds__(256)
gemm_v5_fused_epilogue_pad(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ ap,
                           __half* __restrict__ bp, int M, int N, int K, int KP) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");  // the main kernel may start its prologue
  const int lane = threadIdx.x % 32, warps = gridDim.x * (blockDim.x / 32);
  const bool vec = K % 8 == 0 && ((reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b)) % 16) == 0;
  for (int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < M + N; r += warps) {
    const __half* src = r < M ? a + (size_t)r * K : b + (size_t)(r - M) * K;
    uint4* dst = reinterpret_cast<uint4*>(r < M ? ap + (size_t)r * KP : bp + (size_t)(r - M) * KP);
    for (int c = 8 * lane; c < KP; c += 256) {
      uint4 v;
      if (vec && c + 8 <= K) {
        v = __ldg(reinterpret_cast<const uint4*>(src + c));
      } else {
        __align__(16) __half h[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) h[e] = c + e < K ? src[c + e] : __float2half(0.0f);
        v = *reinterpret_cast<const uint4*>(h);
      }
      dst[c / 8] = v;
    }
  }
}


// ---- split-K: sum the partial tiles in split order (a fixed order: bitwise repeatable), then
// the same epilogue as the main kernel, one fp16 store per element ----------------------------------
extern "C" __global__ void __launch_bounds__(256)
gemm_v5_fused_epilogue_reduce(const float* __restrict__ ws, int splits, int M, int N, int ldw,
                              __half* __restrict__ C, const void* __restrict__ bias, float alpha) {
#if PDL
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // the main kernel's partials, all of them
#endif
  const size_t total = (size_t)M * N;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total; idx += (size_t)gridDim.x * blockDim.x) {
    const int row = idx / N, col = idx % N;
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += ws[((size_t)s * M + row) * ldw + col];
    C[idx] = __float2half_rn(fuse_one(sum, bias, alpha, col, N));
  }
}
