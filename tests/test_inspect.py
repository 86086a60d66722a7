"""Every stage's kernel compiles for sm_90a with no spills and uses the instructions it exists for.

Runs on any machine: NVRTC, cuobjdump and nvdisasm come from pip wheels (the cuda12/cuda13
extras), so CI checks registers, local memory, ptxas warnings and the SASS mix without a GPU.
"""
import json

import pytest

import stages
from stages.core import compiler
from stages.tools import cli
from stages.core.errors import CompileError
from stages.tools.inspect import count_opcodes, inspect_stage


@pytest.fixture(scope="module", params=stages.names())
def report(request):
    return inspect_stage(stages.get(request.param), arch="sm_90a")


def test_compiles_without_spills_or_local_memory(report):
    assert report.registers and report.registers <= 255
    assert report.spill_stores == 0 and report.spill_loads == 0, report.render()
    assert report.local_memory == 0 and report.stack_frame == 0, report.render()


def test_no_slow_path_warnings(report):
    assert not report.failures, report.render()  # C7515 (wgmma serialized), C7511 (registers)


def test_sass_has_the_stage_instructions(report):
    assert report.sass_available, report.sass_error
    st = stages.get(report.stage)
    for opcode in st.expect_sass:
        assert report.opcodes.get(opcode, 0) > 0, f"{report.stage}: no {opcode} in SASS\n{report.render()}"
    assert report.opcodes.get("LDL", 0) == 0 and report.opcodes.get("STL", 0) == 0


def test_shared_memory_fits_hopper(report):
    assert report.static_smem + report.dynamic_smem <= 232448


def test_stage_math_path_is_the_advertised_one():
    """v0/v1 compute on CUDA cores, v2 on mma.sync, v3 on wgmma: no stage quietly uses another."""
    mix = {name: inspect_stage(stages.get(name)).opcodes for name in stages.names()}
    assert mix["v0_naive"].get("HMMA", 0) == 0 and mix["v1_tiled"].get("HMMA", 0) == 0
    assert mix["v2_cp_async"].get("HGMMA", 0) == 0 and mix["v2_cp_async"].get("FFMA", 0) < 64
    assert mix["v3_wgmma_tma"].get("HMMA", 0) == 0 and mix["v3_wgmma_tma"].get("LDGSTS", 0) == 0


def test_count_opcodes_skips_never_executed_padding():
    listing = """
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/              @!PT LDS RZ, [RZ] ;
        /*0030*/              @P0 FFMA R1, R2, R3, R1 ;
        /*0040*/                   NOP;
    """
    assert count_opcodes(listing) == {"LDG": 1, "FFMA": 1}


def test_compile_errors_carry_the_log():
    with pytest.raises(CompileError, match="undefined_thing"):
        compiler.compile_cubin('extern "C" __global__ void k() { undefined_thing(); }', "broken", "sm_90a")


def test_inspect_cli_json(capsys):
    assert cli.main(["inspect", "v0_naive", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["stage"] == "v0_naive" and data[0]["opcodes"]["FFMA"] > 0
