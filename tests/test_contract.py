"""Every rule of the gemm contract, each with its own error.

The CPU half drives contract.check_operands with small stand-ins for device arrays (numpy data,
a fake pointer and device id), so each rule is exercised on any machine. The GPU half repeats the
important ones with real CuPy arrays (and torch tensors where torch is installed) on every stage.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import stages
from stages.core import contract, gpu
from stages.core.contract import Constraints
from stages.core.errors import UnsupportedDevice
from stages.core.gpu import DeviceInfo, Requirement


class FakeDeviceArray:
    """Quacks like a CuPy array for the contract checks: dtype, shape, flags, data.ptr, device."""

    class _Ptr:
        def __init__(self, ptr, device):
            self.ptr, self.device_id = ptr, device

    class _Dev:
        def __init__(self, i):
            self.id = i

    def __init__(self, arr, ptr=1 << 20, device=0):
        self._a = arr
        self.dtype, self.ndim, self.shape, self.strides = arr.dtype, arr.ndim, arr.shape, arr.strides
        self.flags, self.nbytes, self.itemsize = arr.flags, arr.nbytes, arr.itemsize
        self.data, self.device = self._Ptr(ptr, device), self._Dev(device)


@pytest.fixture
def fake_device(monkeypatch):
    monkeypatch.setattr(contract, "as_device_array", lambda x, name: x)
    monkeypatch.setattr(gpu, "current_device_id", lambda: 0)


def fake(shape, dtype=np.float16, ptr=1 << 20, device=0, order="C"):
    return FakeDeviceArray(np.zeros(shape, dtype=dtype, order=order), ptr=ptr, device=device)


ANY = Constraints()
TILED = Constraints(m_multiple=128, n_multiple=256, k_multiple=64)


def check(a, b, out=None, cons=ANY):
    return contract.check_operands(a, b, out, cons, "vX_test")


def test_valid_operands_pass_and_report_mnk(fake_device):
    a, b, out = fake((4, 8)), fake((3, 8), ptr=1 << 21), fake((4, 3), ptr=1 << 22)
    assert check(a, b, out)[3] == (4, 3, 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_wrong_dtype_is_a_type_error(fake_device, dtype):
    with pytest.raises(TypeError, match=r"a must be float16, got .*astype\(cupy.float16\)"):
        check(fake((4, 8), dtype=dtype), fake((3, 8), ptr=1 << 21))


def test_wrong_rank(fake_device):
    with pytest.raises(ValueError, match=r"b must be 2-D \(N, K\), got 3-D"):
        check(fake((4, 8)), fake((1, 3, 8), ptr=1 << 21))


def test_k_mismatch_names_both_shapes_and_the_layout(fake_device):
    with pytest.raises(ValueError, match=r"K mismatch: a is \(M, K\) = \(4, 8\) but b is \(N, K\) = \(3, 16\).*b.T.copy"):
        check(fake((4, 8)), fake((3, 16), ptr=1 << 21))


@pytest.mark.parametrize("shape", [(0, 8), (4, 0)])
def test_empty_dimensions(fake_device, shape):
    with pytest.raises(ValueError, match="empty dimension.*M, N, K >= 1"):
        check(fake(shape), fake((3, 8), ptr=1 << 21))


def test_non_contiguous(fake_device):
    with pytest.raises(ValueError, match=r"a must be C-contiguous.*ascontiguousarray"):
        check(fake((4, 8), order="F"), fake((3, 8), ptr=1 << 21))


def test_misaligned_pointer(fake_device):
    with pytest.raises(ValueError, match="16-byte boundary.*2 bytes past"):
        check(fake((4, 8), ptr=(1 << 20) + 2), fake((3, 8), ptr=1 << 21))
    # a stage that only needs fp16 alignment accepts the same view
    check(fake((4, 8), ptr=(1 << 20) + 2), fake((3, 8), ptr=1 << 21), fake((4, 3), ptr=1 << 22),
          cons=Constraints(alignment=2))


def test_other_device(fake_device):
    with pytest.raises(ValueError, match=r"b is on GPU 1 but the current device is GPU 0.*cupy.cuda.Device\(1\)"):
        check(fake((4, 8)), fake((3, 8), ptr=1 << 21, device=1))


def test_unsupported_shape_names_the_rule_and_the_fix(fake_device):
    with pytest.raises(ValueError, match=r"vX_test needs N to be a multiple of 256, got N=300; pad the operand to 512 \(or trim to 256\), or use a stage that takes 128x300x64: v0_naive, v5_fused_epilogue, cublas"):
        check(fake((128, 64)), fake((300, 64), ptr=1 << 21), cons=TILED)
    with pytest.raises(ValueError, match="K to be a multiple of 64, got K=17"):
        check(fake((128, 17)), fake((256, 17), ptr=1 << 21), cons=TILED)


def test_out_rules(fake_device):
    a, b = fake((4, 8)), fake((3, 8), ptr=1 << 21)
    with pytest.raises(ValueError, match=r"out must have shape \(M, N\) = \(4, 3\), got \(3, 4\)"):
        check(a, b, fake((3, 4), ptr=1 << 22))
    with pytest.raises(TypeError, match="out must be float16"):
        check(a, b, fake((4, 3), dtype=np.float32, ptr=1 << 22))
    with pytest.raises(ValueError, match="out overlaps a or b"):
        check(a, b, fake((4, 3), ptr=(1 << 20) + 16))
    with pytest.raises(ValueError, match="out overlaps a or b"):
        check(a, b, fake((4, 3), ptr=(1 << 21) + 40), cons=Constraints(alignment=2))  # inside b's 48 bytes
    check(a, b, fake((4, 3), ptr=(1 << 21) + 48))  # right after b: fine
    with pytest.raises(ValueError, match="out must start on a 16-byte boundary.*8 bytes past"):
        check(a, b, fake((4, 3), ptr=(1 << 22) + 8))


@pytest.mark.parametrize("which, dim", [(0, "M"), (1, "N"), (2, "K")])
def test_too_large_for_int32(fake_device, which, dim):
    a, b = fake((4, 8)), fake((3, 8), ptr=1 << 21)
    big = 2**31
    if which == 0:
        a.shape = (big, 8)
    elif which == 1:
        b.shape = (big, 8)
    else:
        a.shape, b.shape = (4, big), (3, big)
    with pytest.raises(ValueError, match=f"{dim}={big} does not fit the kernels' 32-bit int sizes"):
        check(a, b)


# ---- the epilogue operands ------------------------------------------------------------------------
class _Stub:
    def __init__(self, name, epilogue=(), constraints=ANY):
        self.name, self.epilogue, self.constraints = name, frozenset(epilogue), constraints


def epi(bias=None, alpha=1.0, activation=None, supported=("bias", "alpha", "activation"), n=3, out=None):
    return contract.check_epilogue(bias, alpha, activation, n, out, 0, frozenset(supported), "vX_test")


def test_default_epilogue_is_plain(fake_device):
    assert epi() is contract.PLAIN and epi(alpha=1) is contract.PLAIN
    assert epi(supported=()) is contract.PLAIN, "defaults are fine on a stage that fuses nothing"


def test_epilogue_values_are_checked(fake_device):
    good = epi(bias=fake((3,), dtype=np.float32), alpha=0.5, activation="gelu_tanh")
    assert good.features == ("bias", "alpha", "activation") and good.alpha == 0.5
    assert epi(bias=fake((3,), dtype=np.float16)).features == ("bias",)
    with pytest.raises(ValueError, match=r"unknown activation 'tanh'; choose None or one of: relu, gelu, gelu_tanh, silu"):
        epi(activation="tanh")
    with pytest.raises(ValueError, match="alpha must be finite, got inf"):
        epi(alpha=float("inf"))
    with pytest.raises(ValueError, match="alpha must be finite, got nan"):
        epi(alpha=float("nan"))
    with pytest.raises(TypeError, match="alpha must be a real number"):
        epi(alpha="2")
    with pytest.raises(TypeError, match="alpha must be a real number"):
        epi(alpha=True)
    with pytest.raises(TypeError, match="bias must be float16 or float32, got float64"):
        epi(bias=fake((3,), dtype=np.float64))
    with pytest.raises(ValueError, match=r"bias must have shape \(N,\) = \(3,\).*got \(4,\)"):
        epi(bias=fake((4,), dtype=np.float32))
    with pytest.raises(ValueError, match=r"bias must have shape \(N,\) = \(3,\).*got \(1, 3\)"):
        epi(bias=fake((1, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="bias is on GPU 1 but the current device is GPU 0"):
        epi(bias=fake((3,), dtype=np.float32, device=1))
    with pytest.raises(ValueError, match="bias overlaps out"):
        epi(bias=fake((3,), dtype=np.float16, ptr=1 << 22), out=fake((4, 3), ptr=1 << 22))


def test_an_epilogue_a_stage_does_not_fuse_names_the_stages_that_do(fake_device, monkeypatch):
    monkeypatch.setattr(contract, "_directory", lambda: [_Stub("vA_plain"), _Stub("vB_fused", ["bias", "activation"])])
    with pytest.raises(ValueError, match=r"vX_test does not fuse bias into its epilogue; stages that do: vB_fused"):
        epi(bias=fake((3,), dtype=np.float32), supported=())
    with pytest.raises(ValueError, match=r"does not fuse alpha into its epilogue; no registered stage fuses it yet"):
        epi(alpha=2.0, supported=())


def test_the_registry_supplies_the_directory():
    names = [st.name for st in contract._directory()]
    assert names == [*stages.names(), "cublas"]


def test_shape_errors_name_stages_that_take_the_shape(fake_device, monkeypatch):
    monkeypatch.setattr(contract, "_directory", lambda: [_Stub("vA_any"), _Stub("vB_tiled", constraints=TILED)])
    with pytest.raises(ValueError, match=r"or use a stage that takes 128x300x64: vA_any$"):
        check(fake((128, 64)), fake((300, 64), ptr=1 << 21), cons=TILED)


def test_host_arrays_are_refused_not_copied():
    pytest.importorskip("cupy")
    with pytest.raises(TypeError, match=r"a is a host array .*numpy.*cupy.asarray\(a\)|gemm runs on the GPU"):
        contract.as_device_array(np.zeros((4, 8), np.float16), "a")
    with pytest.raises(TypeError, match="must be a GPU array"):
        contract.as_device_array("not an array", "b")


def test_too_old_gpu_raises_one_clear_exception(monkeypatch):
    monkeypatch.setattr(gpu, "current", lambda: DeviceInfo(0, "NVIDIA L4", (8, 9), 58, 2040, 0, 101376))
    with pytest.raises(UnsupportedDevice, match=r"v3_wgmma_tma needs sm_90a .*this GPU \(NVIDIA L4\) is sm_89"):
        gpu.require(Requirement(exact_arch="sm_90a"), "v3_wgmma_tma")
    assert Requirement(exact_arch="sm_90a").unmet((10, 0)), "sm_90a code does not run on Blackwell"
    assert not Requirement(min_cc=(8, 0)).unmet((9, 0))
    assert Requirement(min_cc=(8, 0)).unmet((7, 5))


def test_cli_turns_unsupported_devices_into_one_line(monkeypatch, capsys):
    from stages.tools import cli

    monkeypatch.setattr(gpu, "current", lambda: DeviceInfo(0, "NVIDIA L4", (8, 9), 58, 2040, 0, 101376))
    monkeypatch.setattr(gpu, "available", lambda: (True, ""))
    assert cli.main(["verify", "v3_wgmma_tma"]) == 0
    out = capsys.readouterr().out
    assert "v3_wgmma_tma: skipped: v3_wgmma_tma needs sm_90a" in out and "this GPU (NVIDIA L4) is sm_89" in out
    assert "Traceback" not in out

    monkeypatch.setattr(gpu, "available", lambda: (False, "no NVIDIA driver on this machine (test)"))
    monkeypatch.setattr(gpu, "current", lambda: (_ for _ in ()).throw(UnsupportedDevice("no NVIDIA driver on this machine (test)")))
    assert cli.main(["verify", "v0_naive"]) == 0
    assert "v0_naive: skipped: no NVIDIA driver on this machine (test)" in capsys.readouterr().out


# ---- the same rules with real arrays, on the GPU --------------------------------------------
GPU_STAGES = [*stages.names(), "cublas"]



def _operands(st, cp):
    c = st.constraints
    m, n, k = c.m_multiple if c.m_multiple > 1 else 5, c.n_multiple if c.n_multiple > 1 else 3, max(c.k_multiple, 8)
    a = cp.random.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
    b = cp.random.standard_normal((n, k), dtype=cp.float32).astype(cp.float16)
    return a, b


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_STAGES)
def test_real_arrays_break_each_rule(name, runnable):
    import cupy as cp

    st = runnable(name)
    a, b = _operands(st, cp)
    with pytest.raises(TypeError, match="float16"):
        st.gemm(a.astype(cp.float32), b)
    with pytest.raises(TypeError, match="host array"):
        st.gemm(cp.asnumpy(a), b)
    with pytest.raises(ValueError, match="2-D"):
        st.gemm(a[None], b)
    with pytest.raises(ValueError, match="K mismatch"):
        st.gemm(a, cp.concatenate([b, b], axis=1))
    with pytest.raises(ValueError, match="empty dimension"):
        st.gemm(a[:0], b)
    with pytest.raises(ValueError, match="C-contiguous"):
        st.gemm(cp.asfortranarray(a) if a.shape[0] > 1 else a[:, ::2], b)
    with pytest.raises(ValueError, match=r"out must have shape"):
        st.gemm(a, b, out=cp.empty((b.shape[0], a.shape[0]), cp.float16) if a.shape[0] != b.shape[0]
                else cp.empty((a.shape[0], b.shape[0] + 1), cp.float16))
    if st.constraints.alignment > 2:
        flat = cp.empty(a.size + 8, cp.float16)
        shifted = flat[1:1 + a.size].reshape(a.shape)
        shifted[...] = a
        with pytest.raises(ValueError, match="byte boundary"):
            st.gemm(shifted, b)
    c = st.constraints
    if c.k_multiple > 1:
        with pytest.raises(ValueError, match="multiple of"):
            st.gemm(a[:, : c.k_multiple - 1].copy(), b[:, : c.k_multiple - 1].copy())


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_STAGES)
def test_torch_tensors_are_taken_zero_copy(name, runnable):
    import cupy as cp

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    st = runnable(name)
    a, b = _operands(st, cp)
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    assert ta.data_ptr() == a.data.ptr, "torch.as_tensor on a CuPy array shares memory"
    out = torch.full((a.shape[0], b.shape[0]), float("nan"), dtype=torch.float16, device="cuda")
    res = st.gemm(ta, tb, out=out)
    assert res.data.ptr == out.data_ptr(), "the result is written into the torch tensor itself"
    ref = a.astype(cp.float64) @ b.astype(cp.float64).T
    assert float(cp.linalg.norm(cp.asarray(out).astype(cp.float64) - ref) / cp.linalg.norm(ref)) < 2e-3
    with pytest.raises(TypeError, match="host array"):
        st.gemm(ta.cpu(), tb)


@pytest.mark.gpu
@pytest.mark.parametrize("name", stages.names())
def test_a_failed_launch_raises(name, runnable):
    """A launch the driver refuses must surface as an exception, never as an unwritten result."""
    import cupy as cp

    from stages.core.stage import Launch

    st = runnable(name)
    broken = dataclasses.replace(st, geometry=lambda m, n, k, c, dev: Launch((1, 1, 1), (4096, 1, 1)))
    a, b = _operands(st, cp)
    with pytest.raises(cp.cuda.driver.CUDADriverError, match="CUDA_ERROR_INVALID_VALUE"):
        broken.gemm(a, b)
        cp.cuda.get_current_stream().synchronize()
