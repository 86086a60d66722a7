"""CPU baseline GEMM in numba, written the BLIS / GotoBLAS way.

    C = A @ B.T        A: (M, K)   B: (N, K)   C: (M, N) float32

Both operands are "K-major" (row-major with K as the fast axis), which is how
a Linear layer stores its input activations (M tokens x K features) and its
weight (N outputs x K features). Inputs may be float16 or float32; float16 is
upcast to float32 while it is packed (see pack_panel), and all arithmetic is
float32.

How the code is laid out (read it top to bottom, each step is one function):

    gemm()                      checks the inputs, gets buffers, calls
      _gemm_blocked()           the three cache-blocking loops (jc, pc, ic)
        pack_b_block()            copy a NC x KC block of B into panels
        pack_a_block()            copy a MC x KC block of A into panels
          pack_panel()              (float16 -> float32 happens here)
        macro_kernel()            the two register-blocking loops (jr, ir)
          micro_kernel()            one MR x NR tile of C, in registers
            _update_row()             write one row of that tile into C

The speed comes from three ideas, from the inside out:

1. The micro-kernel keeps an MR x NR = 4 x 6 tile of C in 24 SIMD registers
   and streams through K once. Each step of its loop loads 4 + 6 vectors and
   issues 24 fused multiply-adds (FMAs), so the FPU, not memory, is the limit.
2. Cache blocking: the loops are cut into blocks sized so that the data a
   loop re-reads stays in the cache level it is re-read from (see tunables).
3. Packing: each block is copied into a contiguous, 64-byte aligned, zero
   padded buffer, so the micro-kernel only ever sees full, aligned panels.

See README.md in this folder for diagrams and the measured numbers.
"""

import threading

import numba
import numpy as np
from numba import njit, prange
from numba.extending import overload

# ---------------------------------------------------------------------------
# Tunables, chosen for the machine this was developed on: AMD EPYC, 2 cores,
# AVX-512 (LLVM calls the CPU "znver4"), 32 KiB L1d and 1 MiB L2 per core,
# 32 MiB L3 shared; by sweeping the values around them (README.md has the
# numbers; /tmp scratch scripts are not part of the repository).
#
# MR, NR, KU and PAD are compile-time constants of the numba code: change
# them by editing this file (numba's cache notices the edit and recompiles).
# MC, KC, NC and SERIAL_MAX_MACS are only read at call time, so they can
# also be changed at run time for experiments, without recompiling.
#
# MR x NR = 4 x 6: register tile. Its 24 accumulators, plus the 4 A vectors
#     and 1-2 B vectors in flight, use 30 of the 32 zmm registers without
#     spilling. Per 16 values of k the kernel loads MR + NR = 10 vectors for
#     MR * NR = 24 FMAs (a 4 x 4 tile: 8 loads for 16 FMAs). In the sweeps
#     4 x 6 was the best or tied for best of 4 x 4, 6 x 4, 4 x 5 and 5 x 5
#     (4 x 4: up to 25% slower); 3 x 8 spills registers in its loop. MR and
#     NR are not free parameters:
#     micro_kernel() is written out for exactly 4 x 6 (one named
#     accumulator per tile element).
MR = 4
NR = 6
# KC = 2048: depth of a K block. Each micro-kernel call ends with a
#     horizontal reduction of its 24 vector accumulators (~8 instructions
#     each, ~190 in all), paid once per call, so KC should be long: a call
#     with KC = 2048 issues 3072 FMAs, so the reduction adds ~6% (12% at
#     KC = 1024, 25% at 512). The price: a B micro-panel (NR x KC floats =
#     48 KiB) no longer fits the 32 KiB L1, so the kernel streams both of its
#     panels from L2, 10 cache lines per 24 FMAs, which Zen 4's L2 (up to 64
#     bytes/cycle into L1) sustains. (MC, KC) = (128, 1024) measured 1-3%
#     slower at 2048^3, (256, 512) ~10% slower. For K <= KC there is a single
#     K block, so C is written once and never re-read.
KC = 2048
# MC = 64: rows of A per block. The packed A block (MC x KC floats = 512 KiB)
#     is swept once per B micro-panel and must stay in the 1 MiB L2 (with
#     room left for the B panels streaming through). gemm() also makes the
#     number of A blocks a multiple of the thread count.
MC = 64
# NC = 1024: rows of B (columns of C) per block. The packed B block (NC x KC
#     floats = 8 MiB) is shared by both cores and read from the 32 MiB L3;
#     NC from 512 to 4096 measured the same at 2048^3.
NC = 1024
# KU = 16: K blocks are padded with zeros to a multiple of 16 floats (one zmm
#     register), so the vectorized loop never runs its scalar remainder loop.
KU = 16
# PAD = 16: every packed row gets 16 extra floats (one 64-byte cache line).
#     Without it a row of KC = 1024 or 2048 floats is a multiple of 4 KiB, so
#     the 10 rows the micro-kernel reads side by side would all map to the
#     same set of the 8-way L1 and alias each other in the load/store unit;
#     the pad staggers them. Measured: +12% at 1024^3 (with KC = 1024).
PAD = 16
# SERIAL_MAX_MACS = 128^3: problems of at most this many multiply-adds
#     (M * N * K) run on the calling thread only. Waking numba's OpenMP
#     workers is cheap when they are still spinning from the previous call,
#     but after a pause (~0.3 s) it often costs 4-16 ms on this VM, because
#     the woken worker can land on the core where the caller busy-waits for
#     it (libgomp's default wait policy) and then runs only at the next
#     scheduler tick (~4 ms). That is 100x the whole GEMM at 64^3 (~0.03 ms).
#     At 128^3 two threads save ~0.02 ms when everything is warm, so serial
#     costs little there; from 192^3 on two threads are ~2x faster. README.md
#     has the measurements ("Small shapes").
SERIAL_MAX_MACS = 128 ** 3
# ALIGN = 64: packed buffers start on a 64-byte boundary, so that each vector
#     load of a panel is exactly one cache line. (numpy only guarantees 16
#     bytes for large arrays; 16-byte aligned panels measured ~25% slower.)
ALIGN = 64


# ---------------------------------------------------------------------------
# float16 input.
#
# Numba has no float16 type on the CPU, so gemm() hands float16 matrices to
# the compiled code as their raw 16-bit patterns (a uint16 view, no copy).
# A float16 has only 65,536 possible bit patterns, so the conversion is a
# lookup in a table of their float32 values, built once by numpy (so it is
# exactly numpy's own conversion, subnormals, infinities and NaNs included).
# The lookup happens while packing: no float32 copy of the whole input is
# made, and it runs in parallel (numpy's astype is single-threaded and ~5x
# slower per element on this machine).
F16_TO_F32 = (np.arange(65536, dtype=np.uint32).astype(np.uint16)
              .view(np.float16).astype(np.float32))


def to_float32(x, table):
    """Scalar source element -> float32 (the compiled version is below)."""
    return table[x] if isinstance(x, (int, np.integer)) else np.float32(x)


@overload(to_float32)
def _to_float32_numba(x, table):
    # Numba calls this at compile time with the *types* of the arguments and
    # compiles the implementation we return: a plain float32 passes through,
    # a uint16 (float16 bits) is looked up in the table.
    if isinstance(x, numba.types.Float):
        return lambda x, table: x
    if isinstance(x, numba.types.Integer):
        return lambda x, table: table[x]


# ---------------------------------------------------------------------------
# Packing.
#
# A packed block is a 3-D array  panels[p, r, k]: panel p holds R consecutive
# rows of the source (R = MR for A, NR for B), each row holds the KC values of
# that row's current K block, then zeros up to the padded length. Rows past
# the end of the matrix are all zeros, so an edge panel looks like a full one.

@njit(cache=True)
def pack_panel(src, row0, nrows, k0, kc, kcp, dst, table):
    """Copy rows row0 .. row0+nrows-1, columns k0 .. k0+kc-1 of `src` into the
    panel `dst` (shape (R, >= kcp)), converting to float32 (`table` is
    F16_TO_F32, used when `src` holds float16 bits); zero-fill columns
    kc .. kcp-1 and rows nrows .. R-1."""
    R = dst.shape[0]
    for r in range(R):
        d = dst[r]
        if r < nrows:
            s = src[row0 + r]
            for k in range(kc):
                d[k] = to_float32(s[k0 + k], table)
            for k in range(kc, kcp):
                d[k] = 0.0
        else:
            for k in range(kcp):
                d[k] = 0.0


@njit(cache=True)
def pack_a_block(A, ic, mc, pc, kc, kcp, Apack, table):
    """Pack the block A[ic:ic+mc, pc:pc+kc] into MR-row panels Apack[p] (runs
    inside one thread: each thread packs its own A block into its own
    buffer)."""
    for p in range((mc + MR - 1) // MR):
        r = p * MR
        pack_panel(A, ic + r, min(MR, mc - r), pc, kc, kcp, Apack[p], table)


@njit(parallel=True, cache=True)
def pack_b_block(B, jc, nc, pc, kc, kcp, Bpack, table):
    """Pack the block B[jc:jc+nc, pc:pc+kc] into NR-row panels Bpack[p]. The
    B block is shared by all threads, so they pack it together (prange)."""
    for p in prange((nc + NR - 1) // NR):
        r = p * NR
        pack_panel(B, jc + r, min(NR, nc - r), pc, kc, kcp, Bpack[p], table)


# ---------------------------------------------------------------------------
# Micro-kernel: one MR x NR tile of C.
#
# It is an "inner-product" kernel: C[i, j] = sum_k A[i, k] * B[j, k], with the
# 24 sums computed side by side in one k-loop. Numba's LLVM backend does not
# run the SLP vectorizer (NUMBA_SLP_VECTORIZE is off), so it would never pack
# 24 scalar accumulators into vector registers by itself. What it does run is
# the *loop* vectorizer, which turns each scalar sum `c += x * y` over k into
# a 16-lane vector sum (lane l adds up k = l, l+16, l+32, ...) followed by one
# horizontal add after the loop. That reordering of the additions is only
# allowed with the fast-math flag `reassoc`, and fusing `x * y` and `+` into
# one FMA instruction needs `contract`; those are the only two fast-math flags
# we turn on. With them, the loop body becomes 10 vector loads and 24
# `vfmadd231ps zmm` (see asm_report.simd_report() and the README).

@njit(inline='always')
def _update_row(row, j, first, v0, v1, v2, v3, v4, v5):
    """Store (first K block) or add (later K blocks) NR = 6 values into
    row[j:j+6]."""
    if first:
        row[j] = v0
        row[j + 1] = v1
        row[j + 2] = v2
        row[j + 3] = v3
        row[j + 4] = v4
        row[j + 5] = v5
    else:
        row[j] += v0
        row[j + 1] += v1
        row[j + 2] += v2
        row[j + 3] += v3
        row[j + 4] += v4
        row[j + 5] += v5


@njit(fastmath={'reassoc', 'contract'}, cache=True)
def micro_kernel(Ap, Bp, kcp, C, i0, j0, first):
    """C[i0:i0+4, j0:j0+6] (=, or += unless `first`) Ap[:, :kcp] @ Bp[:, :kcp].T

    Ap is one packed A panel (MR rows), Bp one packed B panel (NR rows); kcp
    is a multiple of KU. The whole 4 x 6 tile must lie inside C: the macro-
    kernel passes a scratch tile instead when it would not.
    """
    # The 4 rows of the A panel and the 6 rows of the B panel (1-D views).
    a0 = Ap[0]
    a1 = Ap[1]
    a2 = Ap[2]
    a3 = Ap[3]
    b0 = Bp[0]
    b1 = Bp[1]
    b2 = Bp[2]
    b3 = Bp[3]
    b4 = Bp[4]
    b5 = Bp[5]
    # 24 accumulators. np.float32(0), not 0.0: a Python float is float64 and
    # would turn the whole computation into float64.
    z = np.float32(0)
    c00 = z; c01 = z; c02 = z; c03 = z; c04 = z; c05 = z  # noqa: E702
    c10 = z; c11 = z; c12 = z; c13 = z; c14 = z; c15 = z  # noqa: E702
    c20 = z; c21 = z; c22 = z; c23 = z; c24 = z; c25 = z  # noqa: E702
    c30 = z; c31 = z; c32 = z; c33 = z; c34 = z; c35 = z  # noqa: E702
    for k in range(kcp):
        x0 = a0[k]; x1 = a1[k]; x2 = a2[k]; x3 = a3[k]  # noqa: E702
        y0 = b0[k]; y1 = b1[k]; y2 = b2[k]; y3 = b3[k]; y4 = b4[k]; y5 = b5[k]  # noqa: E702,E501
        c00 += x0 * y0; c01 += x0 * y1; c02 += x0 * y2; c03 += x0 * y3; c04 += x0 * y4; c05 += x0 * y5  # noqa: E702,E501
        c10 += x1 * y0; c11 += x1 * y1; c12 += x1 * y2; c13 += x1 * y3; c14 += x1 * y4; c15 += x1 * y5  # noqa: E702,E501
        c20 += x2 * y0; c21 += x2 * y1; c22 += x2 * y2; c23 += x2 * y3; c24 += x2 * y4; c25 += x2 * y5  # noqa: E702,E501
        c30 += x3 * y0; c31 += x3 * y1; c32 += x3 * y2; c33 += x3 * y3; c34 += x3 * y4; c35 += x3 * y5  # noqa: E702,E501
    # Write the tile straight into C (no round trip through a buffer).
    _update_row(C[i0], j0, first, c00, c01, c02, c03, c04, c05)
    _update_row(C[i0 + 1], j0, first, c10, c11, c12, c13, c14, c15)
    _update_row(C[i0 + 2], j0, first, c20, c21, c22, c23, c24, c25)
    _update_row(C[i0 + 3], j0, first, c30, c31, c32, c33, c34, c35)


# ---------------------------------------------------------------------------
# Macro-kernel: one packed A block times one packed B block.

@njit(cache=True)
def macro_kernel(Apack, Bpack, kcp, mc, nc, C, ic, jc, first, scratch):
    """C[ic:ic+mc, jc:jc+nc] (=, or +=) A block @ B block.T, tile by tile.

    Loop order (as in BLIS): the outer loop walks the B panels, the inner
    loop the A panels. One B panel (NR x KC) is re-used for mc / MR calls in
    a row, while the A panels stream from the A block, which stays in L2.
    (The other order re-reads the whole B block from L3 for every A panel:
    measured 2x slower.) Tiles that stick out of C (the last, partial, row or
    column panel) are computed into `scratch` (MR x NR) and only their valid
    part is copied, so nothing outside C is ever written.
    """
    for jr in range(0, nc, NR):
        Bp = Bpack[jr // NR]
        nr = min(NR, nc - jr)
        for ir in range(0, mc, MR):
            Ap = Apack[ir // MR]
            mr = min(MR, mc - ir)
            if mr == MR and nr == NR:
                micro_kernel(Ap, Bp, kcp, C, ic + ir, jc + jr, first)
            else:
                micro_kernel(Ap, Bp, kcp, scratch, 0, 0, True)
                for r in range(mr):
                    for c in range(nr):
                        if first:
                            C[ic + ir + r, jc + jr + c] = scratch[r, c]
                        else:
                            C[ic + ir + r, jc + jr + c] += scratch[r, c]


# ---------------------------------------------------------------------------
# The cache-blocking loops and the parallelization.

@njit(parallel=True, cache=True)
def _gemm_blocked(A, B, C, Apack, Bpack, scratch, table):
    """C = A @ B.T for C-contiguous A (M, K), B (N, K), C (M, N). A and B are
    both float32, or both uint16 holding float16 bits (then `table` =
    F16_TO_F32 converts them while packing); C is float32.

    Apack (threads, mcb/MR, MR, kcb+PAD), Bpack (ncb/NR, NR, kcb+PAD) and
    scratch (threads, MR, NR) are the work buffers; their shapes carry the
    block sizes mcb, ncb, kcb that gemm() picked for this problem.

        for jc in steps of ncb:           columns of C / rows of B  (L3 block)
          for pc in steps of kcb:         the K dimension
            pack B[jc:, pc:]              all threads together
            parallel over (ic, part):     rows of C / rows of A     (L2 block)
              pack A[ic:, pc:]            each thread its own
              macro_kernel                jr, ir loops -> micro_kernel
    """
    M, K = A.shape
    N = B.shape[0]
    nthreads = Apack.shape[0]
    mcb = Apack.shape[1] * MR
    ncb = Bpack.shape[0] * NR
    kcb = Bpack.shape[2] - PAD

    # Work items for the threads: one per (A block, column part). Normally M
    # gives enough A blocks (gemm() makes their number a multiple of the
    # thread count) and a block is one item. When M is small (fewer blocks
    # than threads), the columns of each block are split into parts instead,
    # at panel boundaries, so that every thread still gets work.
    n_blocks = (M + mcb - 1) // mcb
    parts = max(1, nthreads // n_blocks)
    n_items = n_blocks * parts

    for jc in range(0, N, ncb):
        nc = min(ncb, N - jc)
        n_panels = (nc + NR - 1) // NR
        for pc in range(0, K, kcb):
            kc = min(kcb, K - pc)
            kcp = (kc + KU - 1) // KU * KU     # padded with zeros to KU
            first = pc == 0                    # first K block: C = ..., later C += ...
            pack_b_block(B, jc, nc, pc, kc, kcp, Bpack, table)
            # One iteration per thread; thread t takes items t, t+T, t+2T, ...
            for t in prange(nthreads):
                for item in range(t, n_items, nthreads):
                    ic = (item // parts) * mcb
                    mc = min(mcb, M - ic)
                    part = item % parts
                    p0 = part * n_panels // parts
                    p1 = (part + 1) * n_panels // parts
                    if p0 == p1:
                        continue
                    j0 = p0 * NR
                    j1 = min(nc, p1 * NR)
                    pack_a_block(A, ic, mc, pc, kc, kcp, Apack[t], table)
                    macro_kernel(Apack[t], Bpack[p0:p1], kcp, mc, j1 - j0,
                                 C, ic, jc + j0, first, scratch[t])
    return C


# ---------------------------------------------------------------------------
# Public entry point.

def _cdiv(x, y):
    return -(-x // y)


def _aligned_empty(shape, align=ALIGN):
    """An uninitialized float32 array whose data starts on an `align`-byte
    boundary (carved out of a slightly larger byte buffer)."""
    n = int(np.prod(shape))
    raw = np.empty(n * 4 + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + n * 4].view(np.float32).reshape(shape)


# The packing buffers of the last call, per calling thread: a benchmark (or a
# model) calls gemm() with the same shapes again and again, and for small
# shapes allocating and aligning three arrays costs as much as the GEMM. The
# price is that each thread that called gemm() keeps its last buffers (at
# most ~10 MiB: 2 A blocks of 512 KiB and an 8 MiB B block).
_buffers = threading.local()


def _work_buffers(nthreads, mcb, ncb, kcb):
    """(Apack, Bpack, scratch) for these block sizes: the calling thread's
    buffers from its previous call when the sizes match, else new ones."""
    key = (nthreads, mcb, ncb, kcb)
    if getattr(_buffers, "key", None) != key:
        _buffers.key = None  # in case an allocation below fails
        _buffers.arrays = (_aligned_empty((nthreads, mcb // MR, MR, kcb + PAD)),
                           _aligned_empty((ncb // NR, NR, kcb + PAD)),
                           np.empty((nthreads, MR, NR), dtype=np.float32))
        _buffers.key = key
    return _buffers.arrays


def _block_sizes(M, N, K, nthreads):
    """Block sizes for one problem: MC, NC, KC shrunk so that the blocks
    divide the matrix evenly (no tiny last block) and so that the number of
    A blocks is a multiple of the thread count (every thread gets as many)."""
    n_mblocks = _cdiv(_cdiv(M, MC), nthreads) * nthreads
    mcb = _cdiv(_cdiv(M, n_mblocks), MR) * MR
    ncb = _cdiv(_cdiv(N, _cdiv(N, NC)), NR) * NR
    kcb = _cdiv(_cdiv(K, _cdiv(K, KC)), KU) * KU
    return mcb, ncb, kcb


def _check_operand(x, name):
    """Validate one input operand (type, dtype, number of dimensions)."""
    if not isinstance(x, np.ndarray):
        kind = type(x).__module__.split(".")[0]
        hint = ""
        if kind == "cupy":
            hint = " It looks like a CuPy (GPU) array: call .get() first."
        elif kind == "torch":
            hint = " It looks like a torch tensor: call .cpu().numpy() first."
        raise TypeError(
            f"gemm(): `{name}` must be a numpy.ndarray, got "
            f"{type(x).__module__}.{type(x).__qualname__}.{hint}")
    if x.dtype.type not in (np.float16, np.float32):
        raise TypeError(
            f"gemm(): `{name}` must have dtype float16 or float32, got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(
            f"gemm(): `{name}` must be 2-D, got shape {x.shape}")


def gemm(a, b, out=None):
    """Return a @ b.T as a float32 (M, N) array.

    a: (M, K) and b: (N, K) numpy arrays of dtype float16 or float32 (float16
    is converted to float32 exactly; accumulation is float32). Non-contiguous
    inputs are accepted (copied). `out`, if given, must be a C-contiguous
    float32 (M, N) numpy array not overlapping a or b; it is filled and
    returned.

    Raises TypeError for non-numpy inputs or wrong dtypes, ValueError for
    wrong dimensions, mismatched K, empty dimensions or a bad `out` shape.
    """
    _check_operand(a, "a")
    _check_operand(b, "b")
    (M, K), (N, Kb) = a.shape, b.shape
    if K != Kb:
        raise ValueError(
            f"gemm(): a and b must have the same number of columns K (gemm "
            f"computes a @ b.T), got a.shape = {a.shape}, b.shape = {b.shape}")
    if M < 1 or N < 1 or K < 1:
        raise ValueError(
            f"gemm(): M, N and K must all be >= 1, got a.shape = {a.shape}, "
            f"b.shape = {b.shape}")

    if out is None:
        C = np.empty((M, N), dtype=np.float32)
    else:
        if not isinstance(out, np.ndarray):
            raise TypeError(
                f"gemm(): `out` must be a numpy.ndarray, got {type(out)}")
        if out.dtype != np.float32:
            raise TypeError(f"gemm(): `out` must be float32, got {out.dtype}")
        if out.shape != (M, N):
            raise ValueError(
                f"gemm(): `out` must have shape {(M, N)}, got {out.shape}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("gemm(): `out` must be C-contiguous and writeable")
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            raise ValueError("gemm(): `out` must not overlap `a` or `b`")
        C = out

    # What the compiled code gets: C-contiguous copies where needed (no copy
    # for inputs that already are), float16 as its raw bits (see F16_TO_F32).
    if a.dtype.type == np.float16 and b.dtype.type == np.float16:
        A = np.ascontiguousarray(a, dtype=np.float16).view(np.uint16)
        B = np.ascontiguousarray(b, dtype=np.float16).view(np.uint16)
    else:  # float32, float32 (or one of each: upcast the float16 one)
        A = np.ascontiguousarray(a, dtype=np.float32)
        B = np.ascontiguousarray(b, dtype=np.float32)

    # Small problems run on the calling thread alone (see SERIAL_MAX_MACS):
    # numba's thread count is per calling thread, so setting it to 1 for this
    # call makes every prange in it a loop of the caller, with no worker woken.
    threads = numba.get_num_threads()
    nthreads = 1 if M * N * K <= SERIAL_MAX_MACS else threads
    mcb, ncb, kcb = _block_sizes(M, N, K, nthreads)
    Apack, Bpack, scratch = _work_buffers(nthreads, mcb, ncb, kcb)
    if nthreads == threads:
        _gemm_blocked(A, B, C, Apack, Bpack, scratch, F16_TO_F32)
    else:
        numba.set_num_threads(nthreads)
        try:
            _gemm_blocked(A, B, C, Apack, Bpack, scratch, F16_TO_F32)
        finally:
            numba.set_num_threads(threads)
    return C
