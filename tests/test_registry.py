"""The stage registry and the shape of every stage folder (no GPU needed)."""
import re

import pytest

import stages

HEADER_FIELDS = ("Builds on:", "Changed:", "Bottleneck:", "Requires:", "Launch:", "Layout:")
BANNERS = ("// ---- load", "// ---- compute", "// ---- epilogue")


def test_names_are_discovered_in_version_order():
    names = stages.names()
    assert names[0] == "v0_naive"
    versions = [int(re.match(r"v(\d+)_", n).group(1)) for n in names]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert {"v0_naive", "v1_tiled", "v2_cp_async", "v3_wgmma_tma"} <= set(names)


def test_baselines_are_registered_once():
    assert stages.baselines() == ["cublas", "cpu_numba"]
    assert stages.all_names() == stages.names() + stages.baselines()


def test_unknown_stage_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown stage 'v9_magic'.*v0_naive"):
        stages.get("v9_magic")


def test_each_stage_builds_on_the_one_before():
    names = stages.names()
    assert stages.get(names[0]).previous is None
    for prev, name in zip(names, names[1:]):
        assert stages.get(name).previous == prev, f"{name} should build on {prev}"


@pytest.mark.parametrize("name", stages.names())
def test_stage_folder_holds_kernel_metadata_and_readme(name):
    st = stages.get(name)
    assert st.name == name and st.idea and st.kernel.startswith("gemm_" + name)
    files = {p.name for p in st.folder.iterdir() if p.is_file()}
    assert {"kernel.cu", "__init__.py", "README.md"} <= files
    readme = (st.folder / "README.md").read_text()
    assert "<!-- measured:begin -->" in readme and "<!-- measured:end -->" in readme


@pytest.mark.parametrize("name", stages.names())
def test_kernel_header_and_banners_have_the_shared_shape(name):
    code = stages.get(name).code()
    header = code.split("#include")[0]
    assert header.splitlines()[1].startswith(f"// {name}:"), "first header line names the stage"
    for field in HEADER_FIELDS:
        assert field in header, f"{name}/kernel.cu header lacks {field!r}"
    for banner in BANNERS:
        assert banner in code, f"{name}/kernel.cu lacks the section banner {banner!r}"


@pytest.mark.parametrize("name", stages.names())
def test_tunables_are_defines_not_source_edits(name):
    """Every -D define the harness passes is used by the kernel, and launch geometry is derived."""
    st = stages.get(name)
    code = st.code()
    for key in st.defines:
        assert re.search(rf"\b{key}\b", code), f"{key} is passed but unused by {name}/kernel.cu"
    launch = st.launch_for(4096, 4096, 4096)
    assert all(x >= 1 for x in launch.grid + launch.block)
    assert st.constraints.supports(4096, 4096, 4096)


@pytest.mark.parametrize("name", stages.names())
def test_the_readmes_knob_defaults_are_the_stages(name):
    """A knob table row names its default in brackets ("| `STAGES` (4) |", "| `BM` (128), `BN`
    (256) |"): each one that is a define of the stage must be the value it ships (hand-written:
    a default changed in __init__.py and not in the README fails here)."""
    st = stages.get(name)
    readme = (st.folder / "README.md").read_text()
    named = []
    for row in re.findall(r"^\| (`[A-Z_0-9]+` \([^)]*\)(?:, `[A-Z_0-9]+` \([^)]*\))*) \|", readme, re.M):
        named += re.findall(r"`([A-Z_0-9]+)` \(([−\-]?\d+)\)", row)
    checked = [(key, int(val.replace("−", "-"))) for key, val in named if key in st.defines]
    assert all(st.defines[key] == val for key, val in checked), \
        [(key, val, st.defines[key]) for key, val in checked if st.defines[key] != val]
    if name in ("v4_swizzle_pipeline", "v5_fused_epilogue"):
        assert len(checked) >= 8  # (their knob tables: the parse reaches them)
