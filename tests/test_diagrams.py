"""The walkthrough diagrams' arithmetic (stages/tools/diagrams.py) says what the kernels and the
READMEs claim, and every stage's walkthrough declarations (why.py: KNOB, QUESTIONS, DIAGRAMS;
README hints) are usable. Pure Python, no GPU; the questions compile the kernels (CPU, NVRTC)."""
from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

import stages
from stages.tools import diagrams, plots

matplotlib.use("Agg")

NAMES = stages.names()


def defines(name, **over):
    return {**stages.get(name).defines, **over}


# ---- the claims the diagrams draw ------------------------------------------------------------
def test_padded_rows_make_the_b_loads_conflict_free_and_unpadded_rows_do_not():
    d = defines("v1_tiled")
    assert d["PAD"] == 4
    assert diagrams.conflict_ways(diagrams.padded_b_addresses(d), 16) == [1, 1, 1, 1]
    assert max(diagrams.conflict_ways(diagrams.padded_b_addresses({**d, "PAD": 0}), 16)) == 4
    # the README's bank groups: a quarter-warp's eight rows start on groups 0, 5, 2, 7, 4, 1, 6, 3
    groups = [(a // 4) % 32 // 4 for a in diagrams.padded_b_addresses(d)[:8]]
    assert groups == [0, 5, 2, 7, 4, 1, 6, 3]


def test_xor_swizzle_spreads_one_logical_chunk_of_8_rows_over_8_chunks():
    d = defines("v2_cp_async")
    on = diagrams.ldmatrix_a_addresses(d, on=True)
    off = diagrams.ldmatrix_a_addresses(d, on=False)
    for phase in range(4):  # each 8-lane phase is one 8 x 8 matrix: 8 rows of one logical chunk
        lanes = range(8 * phase, 8 * phase + 8)
        assert len({diagrams.physical_chunks(on)[i] for i in lanes}) == 8
        assert len({diagrams.physical_chunks(off)[i] for i in lanes}) == 1
    assert diagrams.conflict_ways(on, 16) == [1, 1, 1, 1]
    assert diagrams.conflict_ways(off, 16) == [8, 8, 8, 8]
    assert diagrams.swizzle_offset(5, 3) % 128 // 16 == 3 ^ 5


def test_tma_128b_swizzle_puts_every_k16_slice_of_8_rows_in_8_chunks():
    d = defines("v3_wgmma_tma")
    for kk in range(d["BK"] // 16):
        for c in diagrams.wgmma_slice_chunks(d, kk):
            assert sorted(diagrams.tma128_chunk(r, c) for r in range(8)) == list(range(8))
    # the kernels' own copy of the rule (v4's and v5's staging store: chunk = ((jj % 8) ^ g) * 16 + ...),
    # read from kernel.cu and evaluated here (C and Python agree on % and ^ for these small integers)
    for name in ("v4_swizzle_pipeline", "v5_fused_epilogue"):
        exprs = re.findall(r"chunk = \(([^;]*?)\) \* 16 \+ 4 \* t;", stages.get(name).code())
        assert len(exprs) == 1, (name, exprs)
        for g in range(8):
            for jj in range(8):
                assert eval(exprs[0], {}, {"jj": jj, "g": g}) == diagrams.tma128_chunk(g, jj), (name, exprs[0])


def test_naive_warp_lines_count_the_lines_the_readme_counts():
    d = defines("v0_naive")
    res = diagrams.naive_warp_lines(d)
    assert (res["a_count"], res["b_count"]) == (1, 32)
    res = diagrams.naive_warp_lines({**d, "BLOCK_N": 8})
    assert (res["a_count"], res["b_count"]) == (4, 8)


def test_thread_map_partitions_the_tile():
    d = defines("v1_tiled")
    owner = diagrams.thread_owner(d)
    counts = np.bincount(owner.ravel())
    assert (owner >= 0).all() and len(counts) == (d["BM"] // d["TM"]) * (d["BN"] // d["TN"])
    assert (counts == d["TM"] * d["TN"]).all()
    # warp 0's B loads (column j = 0) hit 16 consecutive rows of B, each read by two lanes
    rows = [a // 4 // (d["BK"] + d["PAD"]) - d["BM"] for a in diagrams.padded_b_addresses(d)]
    assert sorted(set(rows)) == list(range(16)) and all(rows.count(r) == 2 for r in set(rows))


def test_warp_map_partitions_the_tile():
    d = defines("v2_cp_async")
    owner = diagrams.warp_owner(d)
    counts = np.bincount(owner.ravel())
    assert (owner >= 0).all() and (counts == d["WM"] * d["WN"]).all()


@pytest.mark.parametrize("producer", ["inline", "warp"])
@pytest.mark.parametrize("stages_, k_tiles", [(4, 6), (2, 5), (3, 2), (4, 9)])
def test_ring_never_refills_a_buffer_before_release(producer, stages_, k_tiles):
    ev = diagrams.ring_events({"STAGES": stages_}, k_tiles=k_tiles, tiles=3, producer=producer)
    loads = {e["it"]: e for e in ev if e["kind"] == "load"}
    computes = {e["it"]: e for e in ev if e["kind"] == "compute"}
    releases = {e["it"]: e["t0"] for e in ev if e["kind"] == "release"}
    assert sorted(loads) == sorted(computes) == list(range(3 * k_tiles))
    for it, e in loads.items():
        assert e["buffer"] == e["kb"] % stages_ and e["parity"] == (e["kb"] // stages_) & 1
        if e["kb"] >= stages_:  # a refill: only after the k-block STAGES earlier was released
            assert e["t0"] >= releases[it - stages_]
        assert computes[it]["t0"] >= e["t1"]  # full: the math waits for the bytes
    for b in range(stages_):  # a buffer's full-wait parities alternate 0, 1, 0, ... within a ring
        for tile in range(3):
            seq = [c["parity"] for c in computes.values() if c["buffer"] == b
                   and (producer == "warp" or c["tile"] == tile)]
            assert seq == [i & 1 for i in range(len(seq))]
    outstanding = []  # at most STAGES k-blocks loaded and not yet released at any moment
    for e in loads.values():
        outstanding.append(sum(1 for j, f in loads.items() if f["t0"] <= e["t0"] and releases[j] > e["t0"]))
    assert max(outstanding) <= stages_
    epilogue_end = next(e["t1"] for e in ev if e["kind"] == "epilogue" and e["tile"] == 0)
    first_of_next = loads[k_tiles]["t0"]
    if producer == "warp":  # the persistent ring loads the next tile during this one
        assert first_of_next < epilogue_end
    else:                   # a new block starts its ring after the last one ended
        assert first_of_next >= epilogue_end


# ---- the stage folders' declarations ---------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_declared_diagrams_exist_draw_and_copy_lines_of_the_kernel(name):
    import matplotlib.pyplot as plt

    code = re.sub(r"\s+", " ", stages.get(name).code())
    for kind, options in plots.stage_diagrams(name):
        assert kind in diagrams.KINDS, f"{name}: unknown diagram {kind!r}"
        for line in diagrams.KERNEL_LINES[kind]:
            assert re.sub(r"\s+", " ", line) in code, f"{name}/kernel.cu no longer has {line!r} ({kind})"
        diagrams.draw(kind, stages.get(name).defines, **options)
        plt.close("all")
    for kind, options in plots._extra(name, "DIAGRAMS", []) or []:
        assert options.get("part", diagrams.PART[kind]) in plots.PARTS


@pytest.mark.parametrize("name", NAMES)
def test_the_knob_builds_and_the_questions_have_numeric_answers(name):
    from stages.tools.inspect import inspect_stage

    st = stages.get(name)
    knob = plots.knob(name)
    assert knob and all(k in st.defines for k in knob)
    st.variant(**knob)  # a configuration the kernel accepts
    assert plots.knob_question(name)
    rep = inspect_stage(st)
    qs = plots.questions(name)
    for text, value_fn, _ in qs:
        assert isinstance(value_fn(st, rep), (int, float)), text
    right = plots.check_answers(name, {i: q[1](st, rep) for i, q in enumerate(qs, 1)}, st, rep)
    assert right.count("right.") == len(qs)
    wrong = plots.check_answers(name, {i: -1 for i in range(1, len(qs) + 1)}, st, rep)
    assert wrong.count("not quite") == len(qs)


@pytest.mark.parametrize("name", NAMES)
def test_readme_hints_name_places_the_walkthrough_has(name):
    text = (stages.get(name).folder / "README.md").read_text()
    for hint in re.findall(r"<!--\s*explains:\s*([\w-]+)\s*-->", text):
        assert hint in plots.ANCHORS, f"{name}/README.md: unknown hint {hint!r} (one of {plots.ANCHORS})"
    blocks = plots.readme_sections(name)
    assert blocks and all(b["anchor"] in plots.ANCHORS for b in blocks)
    assert "measured:begin" not in "".join(b["markdown"] for b in blocks)


@pytest.mark.parametrize("name", NAMES)
def test_kernel_parts_cover_the_whole_diff(name):
    st = stages.get(name)
    counts = plots.part_counts(name)
    if st.previous:
        summary = plots.report.diff_summary(name)
        added, removed = map(int, re.search(r"(\d+) lines added, (\d+) removed", summary).groups())
        assert sum(a for a, _ in counts.values()) == added and sum(r for _, r in counts.values()) == removed
    else:
        assert sum(a for a, _ in counts.values()) == len(st.code().splitlines())
