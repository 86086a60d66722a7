"""Execute the code cells of notebooks in plain Python, for machines without Jupyter (the lent
H200 image has no nbclient/ipykernel). Figures go to a non-interactive backend; `display` prints.
    GEMM_STAGES_LIVE=1 PYTHONPATH=. python3 scripts/run_notebook_code.py notebooks/00_overview.ipynb
Exits non-zero on the first failing cell, printing which."""
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
IMPORT = re.compile(r"^from IPython\.display import .*$", re.M)
try:
    import IPython.display  # noqa: F401

    STANDIN = None
except ImportError:  # the three names the notebooks use, as plain-text stand-ins; no fake
    # IPython module, which matplotlib would then try to talk to
    class Text:
        def __init__(self, data):
            self.data = data

    STANDIN = {"display": lambda *objs: [print(getattr(o, "data", o)) for o in objs],
               "Markdown": Text, "HTML": Text}

status = 0
for path in map(Path, sys.argv[1:]):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    here = os.getcwd()
    os.chdir(path.parent)
    ns = {"__name__": "__main__", **(STANDIN or {})}
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        if STANDIN is not None:
            src = IMPORT.sub("", src)
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
