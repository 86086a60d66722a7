"""Every notebook runs top to bottom on this machine (no GPU needed) and fails on any error.
Outputs are never trusted from the file: the committed notebooks carry none."""
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="notebook tests need the test extra (nbformat)")
nbclient = pytest.importorskip("nbclient", reason="notebook tests need the test extra (nbclient)")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_there_is_a_walkthrough_per_stage():
    import stages

    names = {p.stem.split("_", 1)[1] for p in NOTEBOOKS}
    assert {"overview", "cpu_baseline", *stages.names()} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_stale_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path.name} has outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMM_STAGES_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("GEMM_STAGES_LIVE", "0")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the kernel is another process: make the project importable there without an install
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    if path.name == "00_overview.ipynb":
        for fig in ("roofline", "speedups", "sizes"):
            assert (tmp_path / "figures" / f"{fig}.png").stat().st_size > 10_000
