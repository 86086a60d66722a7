"""Correctness of every GPU stage (and cuBLAS) on real hardware, judged by the one judge
(stages/tools/verify.py). Skipped, with the reason, where there is no GPU (or, for sm_90a stages,
no Hopper GPU). Run on the H200 before calling a GPU issue resolved:
`PYTHONPATH=. python3 -m pytest -m "gpu or hopper"`."""
from __future__ import annotations

import pytest

import stages
from stages.tools import bench, records, verify

GPU_STAGES = [*stages.names(), "cublas"]


def _repeat_shapes(st):
    """Shapes for the repeat tests: several blocks, several K tiles, one block alone, and more
    blocks than 132 SMs hold at once (v4 splits the last wave over blocks: stream-K)."""
    c = st.constraints
    bm, bn, bk = max(c.m_multiple, 64), max(c.n_multiple, 64), max(c.k_multiple, 64)
    return [(2 * bm, 2 * bn, 16 * bk), (8 * bm, 4 * bn, 64 * bk), (bm, bn, bk), (16 * bm, 13 * bn, 32 * bk)]


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_STAGES)
def test_quick_checklist(name, runnable):
    st = runnable(name)
    bad = verify.failures(verify.sweep(st, verify.checklist_shapes(st.constraints, quick=True)))
    assert not bad, "\n".join(bad[:20])


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("name", GPU_STAGES)
def test_full_checklist(name, runnable):
    st = runnable(name)
    bad = verify.failures(verify.sweep(st, verify.checklist_shapes(st.constraints)))
    assert not bad, "\n".join(bad[:20])


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_STAGES)
def test_new_inputs_in_a_row_are_each_right(name, runnable):
    """Same shapes, different arrays back to back (the pool hands the next arrays the same
    pointers): nothing cached may leak from one call to the next. The full judge, each time."""
    st = runnable(name)
    c = st.constraints
    m, n, k = 2 * c.m_multiple, c.n_multiple, 4 * max(c.k_multiple, 16)
    checks = [verify.check(st, m, n, k, seed=seed) for seed in (1, 2, 3)]
    assert not verify.failures(checks), verify.failures(checks)
    assert len({c.rel_fro for c in checks}) == 3, "three different inputs, three different results"


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_STAGES)
def test_without_out_the_result_is_allocated_and_right(name, runnable):
    import cupy as cp

    st = runnable(name)
    c = st.constraints
    m, n, k = c.m_multiple * 2, c.n_multiple, max(c.k_multiple, 16) * 3
    a, b = verify.random_operands(m, n, k, 11, cp)
    res = st.gemm(a, b)
    assert res.shape == (m, n) and res.dtype == cp.float16 and res.flags.c_contiguous
    chk = verify.Check(st.name, m, n, k, 11)
    ref, mag = verify.reference(a, b, cp)
    assert verify.judge_output(chk, res, ref, mag, cp).passed, chk.reason


@pytest.mark.gpu
@pytest.mark.parametrize("name", stages.names())
def test_stable_across_repeats(name, runnable):
    """A moving error is a race: the same shapes, fresh inputs, many times."""
    st = runnable(name)
    shapes = [(64, 64, 256), (96, 160, 512)] if st.constraints.m_multiple == 1 else _repeat_shapes(st)
    bad = verify.failures(verify.sweep(st, shapes, repeat=10))
    assert not bad, "\n".join(bad[:20])


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_STAGES)
def test_gemm_launches_on_the_current_stream(name, runnable):
    import cupy as cp

    st = runnable(name)  # (a stage this GPU cannot run skips alone, not the others with it)
    c = st.constraints
    m, n, k = c.m_multiple * 2, c.n_multiple * 2, max(c.k_multiple, 16) * 4
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:  # inputs made on the stream too: a non-blocking stream does not wait for others
        a, b = verify.random_operands(m, n, k, 5, cp)
        out = cp.full((m, n), cp.nan, cp.float16)
        st.gemm(a, b, out=out)
        done = cp.cuda.Event()
        done.record(stream)
    done.synchronize()
    assert not bool(cp.isnan(out).any()), f"{name}: the result was not ready when its stream was"


@pytest.mark.hopper
def test_tensor_maps_are_cached_per_array(runnable):
    import cupy as cp

    from stages.core import tma

    st = runnable("v3_wgmma_tma")
    a, b = verify.random_operands(256, 256, 128, 5, cp)
    st.gemm(a, b)
    before = dict(tma.stats)
    st.gemm(a, b)
    assert tma.stats["encoded"] == before["encoded"], "same arrays: maps reused"
    a2 = a.copy()
    st.gemm(a2, b)
    assert tma.stats["encoded"] == before["encoded"] + 1, "a new array gets a fresh map"


@pytest.mark.gpu
def test_bench_records_ratio_to_cublas_and_a_sound_record(runnable, tmp_path):
    runnable("v0_naive")
    rec = bench.run_bench(["v0_naive"], shapes=[(512, 512, 512)], reps=3, warmup=1, progress=False)
    rows = {e["stage"]: e for e in rec["results"]}
    assert rows["cublas"]["ratio_cublas"] == pytest.approx(1.0)
    v0 = rows["v0_naive"]
    assert v0["status"] == "ok" and v0["verified"] and v0["ms_p20"] <= v0["ms_median"] <= v0["ms_p80"]
    assert v0["tflops"] == pytest.approx(2 * 512**3 / (v0["ms_median"] * 1e-3) / 1e12)
    assert v0["ratio_cublas"] == pytest.approx(v0["tflops"] / rows["cublas"]["tflops"])
    assert rec["env"]["gpu"]["name"] and rec["settings"]["l2_flush_bytes"] >= 256 << 20
    assert not records.validate(rec)
    records.write(rec, tmp_path / "r.json")


@pytest.mark.gpu
def test_nvidia_smis_row_is_the_current_devices():
    """On real hardware the record's board is found by the CUDA device's PCI bus id (the format
    deviceGetPCIBusId gives here is the one parse_smi reads) and nvidia-smi's row for it names a
    board and a driver. Skipped, saying so, where nvidia-smi is not on PATH."""
    import shutil

    from stages.core import gpu

    if not shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is not on PATH: records carry no driver, clock or board here")
    dev = gpu.current()
    assert dev.pci is not None, "deviceGetPCIBusId gave a bus id parse_smi cannot read"
    got = gpu.smi_reading()
    assert got is not None, f"no nvidia-smi row at PCI {dev.pci}"
    assert got.uuid and got.uuid.startswith("GPU-") and got.driver
    assert records.environment()["gpu"]["uuid"] == got.uuid


@pytest.mark.gpu
def test_overhead_record(runnable):
    runnable("v0_naive")
    rec = bench.run_overhead(["v0_naive", "cublas"], calls=50, progress=False)
    rows = {e["stage"]: e for e in rec["results"]}
    assert rows["cupy.matmul"]["ratio_cupy_matmul"] == 1.0
    assert rows["v0_naive"]["status"] == "ok" and rows["v0_naive"]["us_per_call"] > 0
    assert not records.validate(rec)
