"""The call path of a KernelStage, with the GPU replaced by stand-ins: per-call defines compile once
per distinct set, geometry is computed once per shape, clusters are checked against the grid, and
a launch is exactly (grid, block, args, shared memory) as the stage and its kernel define them."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import stages
from stages.core import compiler, contract, gpu
from stages.core.stage import Call, KernelStage, Launch


class FakeArray:
    """Enough of a CuPy array for the contract checks."""

    class _Ptr:
        def __init__(self, ptr):
            self.ptr, self.device_id = ptr, 0

    def __init__(self, shape, ptr, dtype=np.float16):
        arr = np.zeros(shape, dtype)
        self.dtype, self.ndim, self.shape, self.strides = arr.dtype, arr.ndim, arr.shape, arr.strides
        self.flags, self.nbytes, self.itemsize = arr.flags, arr.nbytes, arr.itemsize
        self.data = self._Ptr(ptr)


class Recorder:
    """Stands in for compiler.load_function: counts loads, records launches."""

    def __init__(self):
        self.loads, self.launches = [], []

    def load(self, compiled, kernel, device_id, smem):
        self.loads.append((compiled.options, kernel, smem))
        return lambda grid, block, args, shared_mem=0: self.launches.append((grid, block, args, shared_mem))


@pytest.fixture
def no_gpu_needed(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(gpu, "available", lambda: (True, ""))
    monkeypatch.setattr(gpu, "current_device_id", lambda: 0)
    monkeypatch.setattr(gpu, "current", lambda: gpu.REFERENCE_DEVICE)
    monkeypatch.setattr(gpu, "require", lambda req, name: gpu.REFERENCE_DEVICE)
    monkeypatch.setattr(contract, "as_device_array", lambda x, name: x)
    monkeypatch.setattr(compiler, "load_function", rec.load)
    return rec


def _stage(**fields):
    """v0's kernel with a per-call define chosen from the activation (a stand-in for v5's)."""
    base = stages.get("v0_naive")
    geometry_calls = []

    def geometry(m, n, k, cfg, dev):
        geometry_calls.append((m, n, k, cfg.get("ACT")))
        return base.geometry(m, n, k, cfg, dev)

    st = KernelStage(name="vX_test", idea="test", source=base.source, kernel=base.kernel, geometry=geometry,
                     defines=dict(base.defines), epilogue=frozenset({"activation"}),
                     defines_for=lambda call: {"ACT": ["none", "relu", "gelu"].index(call.epilogue.activation or "none")},
                     **fields)
    return st, geometry_calls


def test_each_distinct_define_set_compiles_once(no_gpu_needed):
    st, geometry_calls = _stage()
    a, b, out = FakeArray((64, 32), 1 << 20), FakeArray((48, 32), 1 << 21), FakeArray((64, 48), 1 << 22)
    for act in (None, "relu", None, "relu", "gelu", None):
        st.gemm(a, b, out, activation=act)
    assert len(no_gpu_needed.launches) == 6
    loaded = [opts for opts, _, _ in no_gpu_needed.loads]
    assert len(loaded) == 3, "three define sets, three compiles"
    assert [next(o for o in opts if o.startswith("-DACT=")) for opts in loaded] == ["-DACT=0", "-DACT=1", "-DACT=2"]
    assert sorted(geometry_calls) == [(64, 48, 32, 0), (64, 48, 32, 1), (64, 48, 32, 2)], \
        "geometry once per shape and define set (six calls, three sets)"


def test_a_launch_is_what_the_stage_and_its_kernel_define(no_gpu_needed):
    st = stages.get("v3_wgmma_tma")
    monkey_args = []
    st = st.variant(STAGES=3)
    st = dataclasses.replace(st, arguments=lambda call: monkey_args.append(call) or ("args",))
    a, b, out = FakeArray((256, 64), 1 << 20), FakeArray((512, 64), 1 << 21), FakeArray((256, 512), 1 << 22)
    st.gemm(a, b, out)
    (grid, block, args, smem), = no_gpu_needed.launches
    assert grid == (2 * 2, 1, 1) and block == (256, 1, 1) and args == ("args",)
    assert smem == 3 * (128 + 256) * 64 * 2 + 1024 + 2 * 8 * 3, "the kernel's own gemm_smem_bytes"
    call = monkey_args[0]
    assert isinstance(call, Call) and (call.m, call.n, call.k) == (256, 512, 64) and call.cfg["STAGES"] == 3


def test_a_grid_that_does_not_fill_its_clusters_is_refused(no_gpu_needed):
    base = stages.get("v0_naive")
    st = KernelStage(name="vX_cluster", idea="test", source=base.source, kernel=base.kernel, defines=base.defines,
                     geometry=lambda m, n, k, cfg, dev: Launch((3, 1, 1), (32, 1, 1), cluster=(2, 1, 1)))
    with pytest.raises(ValueError, match=r"grid \(3, 1, 1\) is not a multiple of the cluster \(2, 1, 1\)"):
        st.gemm(FakeArray((4, 8), 1 << 20), FakeArray((3, 8), 1 << 21), FakeArray((4, 3), 1 << 22))


def test_a_persistent_geometry_sees_the_device():
    st = stages.get("v4_swizzle_pipeline")
    small = gpu.DeviceInfo(-3, "a 16-SM GPU", (9, 0), 16, 1980, 0, 232_448)
    assert st.geometry(4096, 4096, 4096, st.defines, small).grid == (16, 1, 1)
    assert st.geometry(4096, 4096, 4096, st.defines, gpu.REFERENCE_DEVICE).grid == (132, 1, 1)
    assert st.geometry(256, 256, 64, st.defines, gpu.REFERENCE_DEVICE).grid == (2, 1, 1), "never more blocks than tiles"


def test_a_persistent_grid_of_clusters_launches_only_the_clusters_that_fit():
    """DeviceInfo.clusters: the H200 holds 30 clusters of four one-block-per-SM CTAs at once, not
    132 / 4 = 33 (results/probes/20261130T234051); a grid of 33 ran a second wave. v4 and v5 size
    their persistent grids of clusters by it; where it is unknown, SMs / size."""
    ref = gpu.REFERENCE_DEVICE
    assert [ref.clusters(s) for s in gpu.CLUSTER_SIZES] == [132, 66, 30, 15]
    unknown = gpu.DeviceInfo(-3, "a GPU whose GPCs nobody asked about", (9, 0), 132, 1980, 0, 232_448)
    assert [unknown.clusters(s) for s in gpu.CLUSTER_SIZES] == [132, 66, 33, 16]
    v5 = stages.get("v5_fused_epilogue")
    four = {**v5.defines, "AUTO": 0, "BM": 128, "BN": 128, "STAGES": 6, "CLUSTER_M": 2, "CLUSTER_N": 2, "SK_FILL": 0}
    assert v5.geometry(4096, 4096, 4096, four, ref).grid == (4 * 30, 1, 1)
    assert v5.geometry(4096, 4096, 4096, four, unknown).grid == (4 * 33, 1, 1)
    v4 = stages.get("v4_swizzle_pipeline")
    pairs = {**v4.defines, "CLUSTER_M": 2}
    assert v4.geometry(4096, 4096, 4096, pairs, ref).grid == (132, 1, 1)


@pytest.mark.hopper
def test_the_driver_says_how_many_clusters_fit(runnable):
    """The query behind DeviceInfo.clusters answers on a Hopper GPU: one cluster of one block per
    SM, and for each larger size no more than SMs / size (never the fallback, silently)."""
    runnable("v3_wgmma_tma")
    dev = gpu.current()
    assert len(dev.cluster_slots) == len(gpu.CLUSTER_SIZES), "cuOccupancyMaxActiveClusters did not answer"
    assert dev.clusters(1) == dev.sm_count
    for size in gpu.CLUSTER_SIZES[1:]:
        assert 0 < dev.clusters(size) <= dev.sm_count // size


def test_a_dependent_launch_packs_its_parameters_as_cupy_would():
    """core/pdl.py (the programmatic dependent launch, through cuda-python): each parameter's
    bytes as the kernel reads them; a Python number, whose width is unknown, is refused."""
    import ctypes
    import types

    import numpy as np
    import pytest

    from stages.core import pdl

    arr = types.SimpleNamespace(data=types.SimpleNamespace(ptr=0x7F0012345600))
    assert pdl._c_value(arr).value == 0x7F0012345600
    for scalar in (np.int32(-7), np.uint32(7), np.float32(0.5), np.uint64(2**40), np.int64(-3)):
        assert bytes(pdl._c_value(scalar)) == scalar.tobytes()
    tmap = np.frombuffer(bytes(range(128)), dtype=np.dtype("V128"))[0]
    assert bytes(pdl._c_value(tmap)) == bytes(range(128))
    with pytest.raises(TypeError, match="np.int32"):
        pdl._c_value(5)
    assert ctypes.sizeof(pdl._c_value(np.float32(1))) == 4
