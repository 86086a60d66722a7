"""Adding a stage is adding a folder: in a copy of the project, `python -m stages new` copies the
last stage under a new name, and with no file outside that folder edited by hand the registry,
`inspect`, the notebook generator, the README report and the registry/layer tests all take it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import stages

REPO = Path(__file__).resolve().parents[1]
pytest.importorskip("nbformat", reason="the regeneration step writes notebooks: needs the test extra (nbformat)")


def _run(args, cwd, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(cwd), MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{args}: {res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res.stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("copy")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "runs", "*.png")
    for part in ("stages", "cpu_reference", "tests", "notebooks", "results"):
        shutil.copytree(REPO / part, root / part, ignore=ignore)
    for part in ("README.md", "pyproject.toml"):
        shutil.copy(REPO / part, root / part)
    return root


def test_a_copied_stage_is_a_new_stage(project):
    last = stages.names()[-1]
    version = int(last[1:].split("_")[0]) + 1
    name = f"v{version}_copy_of_last"
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    _run(["-m", "stages", "new", name], project)
    folder = project / "stages" / name
    added = {p for p in project.rglob("*") if p.is_file()} - set(before)
    assert added and all(folder in p.parents for p in added), "only the new folder is written"
    assert all(p.read_bytes() == data for p, data in before.items()), "no other file is touched"
    code = (folder / "kernel.cu").read_text()
    assert f"gemm_{name}(" in code and f"// {name}:" in code and f"// Builds on:  {last}." in code

    listing = _run(["-m", "stages", "list"], project)
    assert name in listing
    prev = _run(["-c", f"import stages; print(stages.get({name!r}).previous)"], project).strip()
    assert prev == last
    _run(["-m", "stages", "inspect", name], project)

    # The documented regeneration: notebooks and README blocks.
    _run(["notebooks/build.py"], project)
    assert (project / "notebooks" / f"{10 + len(stages.names()):02d}_{name}.ipynb").exists()
    _run(["-m", "stages", "report", "--write"], project)
    assert "No H200 measurement recorded yet." in (folder / "README.md").read_text()
    _run(["-c", f"from stages.tools import plots; print(plots.why_doc({name!r}))"], project)

    out = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_registry.py",
                "tests/test_layers.py", "-k", name], project, timeout=600)
    assert "passed" in out and "failed" not in out
