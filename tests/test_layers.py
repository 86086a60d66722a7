"""The package's layers, as the README draws them, hold in the code:

    stages/core/      primitives: import nothing of the project but each other
    stages/vN_*/      a stage's __init__.py imports only stages.core (its why.py is a figure for
                      the tools and may use stages.tools.plots)
    stages/__init__.py, baselines.py   the registry: core, the stage folders, cpu_reference
    stages/tools/     the tools: anything above

Imports of the project sit at the top of modules (no import hidden in a function to dodge a
cycle), and no code outside the stage folders and the registry names a stage.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import stages

PKG = Path(stages.__file__).parent
PROJECT = ("stages", "cpu_reference")


def _imports(path: Path):
    """(module imported, at module top level?) for every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text())
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                names = [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
            else:
                names = [node.module]
            for name in names:
                yield name, id(node) in top


def _py(folder: Path):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _stage_dirs():
    return [d for d in PKG.iterdir() if stages.STAGE_DIR.match(d.name)]


@pytest.mark.parametrize("path", _py(PKG / "core"), ids=lambda p: p.name)
def test_primitives_import_no_tool_no_registry_no_stage(path):
    for mod, _ in _imports(path):
        if mod.startswith("stages"):
            assert mod.startswith("stages.core"), f"core/{path.name} imports {mod}"
        assert not mod.startswith("cpu_reference"), f"core/{path.name} imports {mod}"


@pytest.mark.parametrize("stage_dir", _stage_dirs(), ids=lambda d: d.name)
def test_a_stage_imports_only_primitives(stage_dir):
    for mod, _ in _imports(stage_dir / "__init__.py"):
        if mod.startswith("stages"):
            assert mod.startswith("stages.core"), f"{stage_dir.name}/__init__.py imports {mod}"


@pytest.mark.parametrize("path", [PKG / "__init__.py", PKG / "baselines.py"], ids=lambda p: p.name)
def test_the_registry_imports_no_tool(path):
    for mod, _ in _imports(path):
        assert not mod.startswith("stages.tools"), f"{path.name} imports {mod}"


@pytest.mark.parametrize("path", _py(PKG), ids=lambda p: str(p.relative_to(PKG)))
def test_project_imports_sit_at_the_top(path):
    hidden = [mod for mod, top in _imports(path) if not top and mod.split(".")[0] in PROJECT]
    assert not hidden, f"{path.relative_to(PKG)} imports {hidden} inside a function"


@pytest.mark.parametrize("path", _py(PKG / "core") + _py(PKG / "tools") + [PKG / "baselines.py"],
                         ids=lambda p: str(p.relative_to(PKG)))
def test_no_shared_code_names_a_stage(path):
    found = re.findall(r"\bv\d+_[a-z][a-z0-9_]*", path.read_text())
    assert not found, f"{path.relative_to(PKG)} names stages {sorted(set(found))}: derive them from the registry"


def test_modules_import_in_any_order():
    """No cycle: all modules import in a fresh interpreter, first to last and last to first."""
    mods = [".".join(p.relative_to(PKG.parent).with_suffix("").parts).removesuffix(".__init__")
            for p in _py(PKG) if p.name != "__main__.py"]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    for order in (mods, mods[::-1]):
        res = subprocess.run([sys.executable, "-c", code, *order], capture_output=True, text=True,
                             cwd=PKG.parent, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
