import sys

if "--epilogue" in " ".join(sys.argv):
    # bench --epilogue times torch's baselines when torch is installed. On the H200 image (torch
    # 2.11, cupy-cuda13x) a first `import torch` after CuPy and numba have loaded failed inside
    # torch's own schema parser ("annotate(strtag)"); imported first, it works (tests/conftest.py
    # does the same). Optional: without torch nothing changes.
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001  not installed, or broken: its baselines say so themselves
        pass

from stages.tools.cli import main  # noqa: E402

raise SystemExit(main())
