"""Issue 11's switches: every ablation and "break it" define compiles for sm_90a with no spills,
each has a default in its stage's CONFIG that leaves the shipped kernel exactly as it was, and
check_config refuses values the kernel does not have. No GPU needed (NVRTC + cuobjdump from pip).

What they do on a GPU is measured by `python -m stages tune` (v4's ladder: scripts/device.sh ablation)
and `verify --set`.
"""
import pytest

import stages
from stages.core import compiler, gpu
from stages.tools.inspect import inspect_stage

# The rungs the device script times and verifies, per stage (every one must build cleanly).
ABLATIONS = {
    "v0_naive": [{"MAP": 1}, {"MAP": 2}],
    "v1_tiled": [{"PAD": 0}, {"BK": 32}, {"BK": 32, "TN": 4},
                 {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4}],
    "v2_cp_async": [{"SWIZZLE": 0}, {"GROUP_M": 1}, {"STAGES": 2}, {"STAGES": 4}],
    "v3_wgmma_tma": [{"GROUP_M": 1}, {"STAGES": 3}, {"BN": 128}],
}
BREAKS = {"v1_tiled": {"BREAK_SYNC": 1}, "v2_cp_async": {"BREAK_WAIT": 1},
          "v3_wgmma_tma": {"BREAK_FULL_WAIT": 1, "BREAK_EMPTY_WAIT": 1, "BREAK_FENCE": 1}}
SWITCH_DEFAULTS = {"v0_naive": {"MAP": 0}, "v1_tiled": {"PAD": 4, "BREAK_SYNC": 0},
                   "v2_cp_async": {"SWIZZLE": 1, "GROUP_M": 8, "BREAK_WAIT": 0},
                   "v3_wgmma_tma": {"BREAK_FULL_WAIT": 0, "BREAK_EMPTY_WAIT": 0, "BREAK_FENCE": 0}}

# The shipped kernels' figures, taken with NVRTC 12.9 (this repository's CPU environment) before
# the switches were added: registers, SASS instructions, and the instruction families the stage
# READMEs quote. With the defaults the preprocessor must hand ptxas the same program.
DEFAULT_FIGURES_NVRTC = "12.9"
DEFAULT_FIGURES = {
    "v0_naive": (29, 267, {"FFMA": 29, "LDG": 58, "STG": 1}),
    "v1_tiled": (248, 1400, {"FFMA": 1024, "LDS": 64, "STS": 8, "LDG": 4, "BAR": 2}),
    "v2_cp_async": (248, 1295, {"HMMA": 128, "LDSM": 32, "LDGSTS": 48, "BAR": 1}),
    "v3_wgmma_tma": (154, 507, {"HGMMA": 4, "UTMALDG": 4, "SYNCS": 15}),
}


def _cases():
    for name, rungs in ABLATIONS.items():
        for cfg in rungs:
            yield name, cfg
    for name, cfg in BREAKS.items():
        for key, val in cfg.items():
            yield name, {key: val}


def _id(case):
    name, cfg = case
    return f"{name}[{','.join(f'{k}={v}' for k, v in cfg.items())}]"


@pytest.mark.parametrize("case", list(_cases()), ids=_id)
def test_switch_compiles_without_spills(case):
    name, cfg = case
    rep = inspect_stage(stages.get(name).variant(**cfg), arch="sm_90a")
    assert rep.registers and rep.registers <= 255, rep.render()
    assert rep.spill_stores == 0 and rep.spill_loads == 0 and not rep.local_memory, rep.render()
    # The one break the compiler repairs serializes the wgmmas, and says so (C7520): a failure.
    expected = ["C7520"] if cfg == {"BREAK_FENCE": 1} else []
    assert [code for code in ("C7515", "C7511", "C7520") if any(code in f for f in rep.failures)] == expected, \
        rep.render()
    assert rep.static_smem + rep.dynamic_smem <= gpu.REFERENCE_DEVICE.smem_optin_bytes
    for opcode in stages.get(name).expect_sass:
        assert rep.opcodes.get(opcode, 0) > 0, rep.render()


@pytest.mark.parametrize("name", list(SWITCH_DEFAULTS))
def test_switch_defaults_are_the_shipped_kernel(name):
    st = stages.get(name)
    for key, val in SWITCH_DEFAULTS[name].items():
        assert st.defines[key] == val, f"{name}: {key} defaults to {st.defines[key]}, shipped {val}"
    if compiler.nvrtc_version() != DEFAULT_FIGURES_NVRTC:
        pytest.skip(f"figures pinned with NVRTC {DEFAULT_FIGURES_NVRTC}; this is {compiler.nvrtc_version()}")
    regs, total, families = DEFAULT_FIGURES[name]
    rep = inspect_stage(st, arch="sm_90a")
    assert (rep.registers, rep.total_instructions) == (regs, total), rep.render()
    for fam, count in families.items():
        assert rep.opcodes.get(fam, 0) == count, f"{name}: {fam} {rep.opcodes.get(fam, 0)} != {count}"


def test_dropping_the_wgmma_fence_makes_ptxas_serialize():
    """BREAK_FENCE=1 is the one "break" the compiler repairs: ptxas inserts its own warpgroup
    arrive and waits after every wgmma (C7520), so the answer stays right and the tensor core
    waits. More WARPGROUP.ARRIVE/DEPBAR than the shipped kernel is that repair in the SASS."""
    st = stages.get("v3_wgmma_tma")
    shipped = inspect_stage(st).opcodes.get("WARPGROUP", 0)
    broken = inspect_stage(st.variant(BREAK_FENCE=1)).opcodes.get("WARPGROUP", 0)
    assert broken > shipped > 0


@pytest.mark.parametrize("name, cfg, rule", [
    ("v0_naive", {"MAP": 3}, "MAP must be 0"),
    ("v0_naive", {"MAP": 2, "BLOCK_N": 16}, "BLOCK_N"),
    ("v1_tiled", {"BREAK_SYNC": 2}, "BREAK_SYNC 0 or 1"),
    ("v2_cp_async", {"SWIZZLE": 2}, "SWIZZLE 0"),
    ("v2_cp_async", {"BREAK_WAIT": -1}, "BREAK_WAIT 0 or 1"),
    ("v3_wgmma_tma", {"BREAK_EMPTY_WAIT": 3}, "BREAK_EMPTY_WAIT 0 or 1"),
    ("v3_wgmma_tma", {"BREAK_FENCE": 2}, "BREAK_FENCE 0 or 1"),
])
def test_check_config_refuses_values_the_kernel_lacks(name, cfg, rule):
    with pytest.raises(ValueError, match=rule):
        stages.get(name).variant(**cfg)


@pytest.mark.parametrize("m, n", [(1, 1), (17, 129), (1024, 3), (129, 1024)])
def test_v0_mappings_cover_the_output(m, n):
    """Each MAP's grid covers every (m, n) once: x along N (0), along M (1), one warp per output (2)."""
    st = stages.get("v0_naive")
    for mp in (0, 1, 2):
        c = st.variant(MAP=mp).defines
        launch = st.geometry(m, n, 64, c, gpu.REFERENCE_DEVICE)
        gx, gy = launch.grid[:2]
        bx, by = launch.block[:2]
        if mp == 0:
            assert gx * bx >= n and gy * by >= m and (gx - 1) * bx < n and (gy - 1) * by < m
        elif mp == 1:
            assert gx * bx >= m and gy * by >= n and (gx - 1) * bx < m and (gy - 1) * by < n
        else:
            assert bx == 32 and gx == n and gy * by >= m and (gy - 1) * by < m
