"""The numba CPU baseline: correct on the articles' whole shape checklist, past every cache block
boundary, with 1 and 2 threads, on the serial small-shape path, with mixed float16/float32 inputs,
and clear on bad input."""
import importlib
import threading

import numba
import numpy as np
import pytest

import stages
from stages.tools import verify

cpu_reference = pytest.importorskip("cpu_reference")
gemm_module = importlib.import_module("cpu_reference.gemm")  # the module, not the function


def _operands(m, n, k, seed, dtype_a=np.float16, dtype_b=np.float16):
    """N(0, 1) rounded to float16 (exact in float32), then stored as the requested dtypes."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(np.float16).astype(dtype_a)
    b = rng.standard_normal((n, k), dtype=np.float32).astype(np.float16).astype(dtype_b)
    return a, b


def _assert_gemm_correct(a, b):
    """gemm into a NaN-filled output: every element written, close to the float64 product."""
    m, n = a.shape[0], b.shape[0]
    out = np.full((m, n), np.nan, np.float32)
    assert cpu_reference.gemm(a, b, out=out) is out
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64.T
    unwritten = np.argwhere(np.isnan(out))
    assert unwritten.size == 0, f"{len(unwritten)} elements never written, first {unwritten[:3]}"
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    assert rel < 1e-5, f"{m}x{n}x{a.shape[1]}: relative Frobenius error {rel:.2e}"
    # and element by element: a wrong row, column or block cannot hide in a large aggregate
    bound = 1e-5 * (np.abs(a64) @ np.abs(b64).T) + 1e-30
    worst = np.unravel_index(np.argmax(np.abs(out - ref) / bound), out.shape)
    assert abs(out[worst] - ref[worst]) <= bound[worst], (
        f"{m}x{n}x{a.shape[1]}: C{worst} = {out[worst]}, expected {ref[worst]}")


@pytest.fixture(params=[1, 2], ids=lambda t: f"{t}thread")
def threads(request):
    """Run the test with numba's thread count set to 1, then 2; restored afterwards."""
    if request.param > numba.config.NUMBA_NUM_THREADS:
        pytest.skip(f"numba has only {numba.config.NUMBA_NUM_THREADS} thread(s) here")
    before = numba.get_num_threads()
    numba.set_num_threads(request.param)
    yield request.param
    numba.set_num_threads(before)


def test_whole_checklist():
    st = stages.get("cpu_numba")
    failures = []
    for m, n, k in verify.checklist_shapes():
        chk = verify.check(st, m, n, k)
        # fp32 result: far tighter than the fp16 bound the GPU stages get (aggregate judged only
        # where there are enough elements for it to mean something, see verify.judge)
        tight = m * n >= verify.REL_FRO_MIN_ELEMENTS and chk.rel_fro > 1e-5
        if not chk.passed or tight:
            failures.append(f"{m}x{n}x{k} seed={chk.seed}: rel {chk.rel_fro:.2e} {chk.reason}")
    assert not failures, "\n".join(failures[:20])


def test_block_sizes_are_what_the_shapes_below_assume():
    # The shapes in test_past_every_block_boundary are chosen around these values.
    assert (gemm_module.MC, gemm_module.NC, gemm_module.KC) == (64, 1024, 2048)
    assert gemm_module.SERIAL_MAX_MACS == 128 ** 3
    # Past a boundary there really are several blocks (gemm shrinks blocks to divide evenly).
    mcb, ncb, kcb = gemm_module._block_sizes(65, 2100, 2049, 2)
    assert mcb < 65 and ncb < 2100 // 2 and kcb < 2049


@pytest.mark.parametrize("m, n, k", [
    (64, 1024, 2048),    # exactly at MC, NC, KC: one block each
    (65, 1025, 2049),    # one past each: two blocks in every direction
    (130, 2100, 97),     # three column blocks (N = 2100 > 2 NC), three row blocks
    (67, 2100, 2049),    # several column blocks and K blocks together (C += on later K blocks)
    (1, 2100, 2049),     # M = 1: columns split between threads, in several column blocks
    (3, 1030, 40),       # small M, two column blocks, on the serial path (< SERIAL_MAX_MACS)
    (200, 7, 2050),      # narrow N (one partial panel), two K blocks, several A blocks per thread
])
def test_past_every_block_boundary(threads, m, n, k):
    _assert_gemm_correct(*_operands(m, n, k, seed=m * 7919 + n * 31 + k))


@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (128, 128, 129), (1, 1, 1), (5, 3, 2)])
def test_serial_path_threshold_and_thread_count_restored(threads, m, n, k):
    # 128^3 is the largest problem on the serial path, 128 x 128 x 129 the smallest past it.
    _assert_gemm_correct(*_operands(m, n, k, seed=k))
    assert numba.get_num_threads() == threads


@pytest.mark.parametrize("dtype_a, dtype_b", [(np.float16, np.float32), (np.float32, np.float16)],
                         ids=["a16_b32", "a32_b16"])
@pytest.mark.parametrize("m, n, k", [(33, 70, 50), (70, 1030, 2049)])
def test_mixed_float16_float32_inputs(threads, dtype_a, dtype_b, m, n, k):
    _assert_gemm_correct(*_operands(m, n, k, seed=5, dtype_a=dtype_a, dtype_b=dtype_b))


def test_reused_buffers_across_shapes_and_dtypes():
    # The packing buffers are kept from one call to the next (per calling thread): a call with
    # other block sizes must not read stale panels, and a repeated shape must give the same C.
    shapes = [(70, 1030, 300), (9, 11, 13), (70, 1030, 300), (70, 1030, 2049), (70, 1030, 300)]
    for i, (m, n, k) in enumerate(shapes):
        dt = np.float16 if i % 2 else np.float32
        _assert_gemm_correct(*_operands(m, n, k, seed=i, dtype_a=dt, dtype_b=dt))


def test_concurrent_callers_have_their_own_buffers():
    problems = []

    def worker(seed, m, n, k):
        try:
            for i in range(5):
                _assert_gemm_correct(*_operands(m, n, k, seed=seed + i))
        except AssertionError as exc:  # pragma: no cover - reported below
            problems.append(str(exc))

    workers = [threading.Thread(target=worker, args=(s, *shape))
               for s, shape in enumerate([(20, 30, 40), (33, 17, 96), (64, 64, 64)])]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not problems, problems


def test_float32_inputs_and_new_output():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((37, 300), dtype=np.float32)
    b = rng.standard_normal((53, 300), dtype=np.float32)
    c = cpu_reference.gemm(a, b)
    assert c.dtype == np.float32 and c.shape == (37, 53)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5


def test_non_contiguous_inputs_are_accepted():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((40, 64)).astype(np.float16)[:, ::2]
    b = rng.standard_normal((30, 32)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.linalg.norm(cpu_reference.gemm(a, b) - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.parametrize("a, b, exc, pattern", [
    (np.zeros((4, 8), np.float16), np.zeros((3, 9), np.float16), ValueError, "K"),
    (np.zeros((4, 8), np.int32), np.zeros((3, 8), np.float16), TypeError, "float16|float32"),
    (np.zeros((4, 8, 1), np.float16), np.zeros((3, 8), np.float16), ValueError, "2-D"),
    (np.zeros((0, 8), np.float16), np.zeros((3, 8), np.float16), ValueError, ">= 1"),
    ([[1.0]], np.zeros((1, 1), np.float16), TypeError, "numpy"),
])
def test_bad_input(a, b, exc, pattern):
    with pytest.raises(exc, match=pattern):
        cpu_reference.gemm(a, b)


def test_out_must_match():
    a, b = np.ones((4, 8), np.float16), np.ones((3, 8), np.float16)
    with pytest.raises((ValueError, TypeError)):
        cpu_reference.gemm(a, b, out=np.empty((3, 4), np.float32))
    with pytest.raises((ValueError, TypeError)):
        cpu_reference.gemm(a, b, out=np.empty((4, 3), np.float16))
    out = np.full((4, 3), np.nan, np.float32)
    assert cpu_reference.gemm(a, b, out=out) is out and (out == 8).all()


def test_inner_loop_is_simd_fma():
    rep = cpu_reference.simd_report()
    assert sum(rep["fma_instructions"].values()) > 0, rep
    assert rep["vector_width_bits"] >= 256, rep


def test_package_exports_and_no_cycle():
    from cpu_reference import asm_report  # noqa: PLC0415 - the module itself, for its attribute

    assert cpu_reference.simd_report is asm_report.simd_report
    assert cpu_reference.gemm is gemm_module.gemm
    assert not hasattr(gemm_module, "simd_report")  # the GEMM module knows nothing of the report
