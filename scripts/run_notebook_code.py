"""Execute the code cells of notebooks in plain Python, for machines without Jupyter (the lent
H200 image has no nbclient/ipykernel). Figures go to a non-interactive backend; `display` prints.
    GEMM_STAGES_LIVE=1 PYTHONPATH=. python3 scripts/run_notebook_code.py notebooks/00_overview.ipynb
Exits non-zero on the first failing cell, printing which."""
import json
import os
import sys
import types
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
try:
    import IPython.display  # noqa: F401
except ImportError:  # a stand-in with the three names the notebooks use
    mod = types.ModuleType("IPython.display")
    mod.display = lambda *objs: [print(getattr(o, "data", o)) for o in objs]
    mod.Markdown = mod.HTML = type("Text", (), {"__init__": lambda self, data: setattr(self, "data", data)})
    sys.modules["IPython"] = types.ModuleType("IPython")
    sys.modules["IPython.display"] = mod

status = 0
for path in map(Path, sys.argv[1:]):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    here = os.getcwd()
    os.chdir(path.parent)
    ns = {"__name__": "__main__"}
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        try:
            exec(compile(src, f"{path.name}[cell {i}]", "exec"), ns)
        except Exception as exc:  # noqa: BLE001
            print(f"FAILED {path.name} cell {i}: {type(exc).__name__}: {exc}", flush=True)
            status = 1
            break
    else:
        print(f"ok {path.name} ({len(cells)} code cells)", flush=True)
    os.chdir(here)
sys.exit(status)
