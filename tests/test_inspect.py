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


def test_inspect_of_a_call_is_the_build_that_call_runs(capsys):
    """`inspect --shape --epilogue` compiles what defines_for picks for that call (on the reference
    H200, aligned operands), names it, and sizes its shared memory for that build and shape; the
    configuration's own build is another kernel. `--set` reaches the call's decision: a per-call
    knob is built as the call would take it."""
    import numpy as np

    from stages.core import contract
    from stages.tools import inspect

    v5 = stages.get("v5_fused_epilogue")
    assert cli.main(["inspect", "v5_fused_epilogue", "--shape", "1000x1000x1000", "--epilogue", "gelu", "--json"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    picked = inspect.call_defines(v5, 1000, 1000, 1000, contract.Epilogue(None, 1.0, "gelu"))
    assert rep["call"] == "1000x1000x1000 gelu" and rep["call_defines"] == picked
    # the API takes the epilogue as the command line spells it (the notebook's example)
    assert inspect.inspect_stage(v5, problem=(1000, 1000, 1000), epilogue="gelu").as_dict() == rep
    assert (picked["BM"], picked["BN"], picked["ACT"], picked["BIAS"]) == (64, 128, 2, 0)
    assert rep["dynamic_smem"] == v5.launch_for(1000, 1000, 1000, extra=picked).shared_mem != v5.launch_for(
        1000, 1000, 1000).shared_mem
    assert cli.main(["inspect", "v5_fused_epilogue", "--shape", "1000x1000x1000", "--set", "ROW_PARITY=1", "--json"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["stage"] == "v5_fused_epilogue[ROW_PARITY=1]" and rep["call_defines"]["ROW_PARITY"] == 1
    assert rep["call"] == "1000x1000x1000 plain" and not rep["failures"]
    # the bias is bench's (float16); a stage with one build for every shape picks nothing per call
    assert inspect.call_defines(v5, 64, 64, 64, contract.Epilogue(np.zeros(1, np.float16), 0.5, "silu"))["BIAS"] == 1
    assert cli.main(["inspect", "v0_naive", "--shape", "1000x1000x1000"]) == 0
    assert "per call the stage picks nothing (one build for every shape)" in " ".join(capsys.readouterr().out.split())


def test_inspect_refuses_a_call_the_stage_does_not_take(capsys):
    """A shape outside a stage's constraints or an epilogue it does not fuse is said, per stage, on
    stderr (exit 2 when nothing is left to inspect); a per-call knob built without a shape says
    how to inspect it."""
    assert cli.main(["inspect", "v3_wgmma_tma", "--shape", "1000x1000x1000"]) == 2
    assert "does not take 1000x1000x1000 (M % 128 == 0" in capsys.readouterr().err
    assert cli.main(["inspect", "v0_naive", "v3_wgmma_tma", "--epilogue", "bias"]) == 2
    err = capsys.readouterr().err
    assert "v0_naive: does not fuse bias" in err and "v3_wgmma_tma: does not fuse bias" in err
    assert cli.main(["inspect", "v5_fused_epilogue", "--set", "ROW_PARITY=1"]) == 2
    assert "add --shape MxNxK" in capsys.readouterr().err


def test_the_walkthrough_lists_what_a_call_builds():
    """plots.call_builds: per call of why.py's CALLS, what defines_for picks (as inspect --shape
    --epilogue names it), in the columns that differ between the calls; a stage with one build for
    every call says so."""
    from stages.tools import inspect, plots

    v5 = stages.get("v5_fused_epilogue")
    pairs = plots.calls("v5_fused_epilogue")
    assert ((1000, 1000, 1000), "bias+gelu") in pairs and ((16, 14336, 4096), "bias+silu") in pairs
    lines = plots.call_builds(v5, pairs).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head[:4] == ["M×N×K", "epilogue", "BM", "BN"] and len(lines) == 2 + len(pairs)
    for line, (shape, spec) in zip(lines[2:], pairs):
        row = dict(zip(head, (c.strip() for c in line.strip("|").split("|"))))
        picked = inspect.call_defines(v5, *shape, inspect.call_epilogue(spec))
        assert row["M×N×K"] == "×".join(map(str, shape)) and row["epilogue"] == spec
        assert all(row[key] == str(picked[key]) for key in head[2:])
    assert {"ACT", "BIAS", "SWAP_AB", "STREAMK"} <= set(head)  # (they differ between these calls)
    assert "one kernel for every call" in plots.call_builds(stages.get("v3_wgmma_tma"), [((4096, 4096, 4096), "plain")])
    assert plots.calls("v3_wgmma_tma") == []
