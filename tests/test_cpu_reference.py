"""The numba CPU baseline: correct on the articles' whole shape checklist, clear on bad input."""
import numpy as np
import pytest

import stages
from stages.harness import verify

cpu_reference = pytest.importorskip("cpu_reference")


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
