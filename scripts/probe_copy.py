"""Diagnostic copies of a stage's kernel for the probe scripts (sk_probe.py, lever_probe.py):
the stage's kernel.cu with text substitutions, as a stage of the same name and entry point."""
import dataclasses
import tempfile
from pathlib import Path

_TMP = Path(tempfile.mkdtemp())


def mutated(stage, name: str, subs, **replace):
    """`stage` with every (old, new) of `subs` applied to its kernel source (each `old` must be
    there), named `base[name]`; `replace` sets further fields (e.g. arguments)."""
    src = stage.code()
    for old, new in subs:
        assert old in src, (name, old)
        src = src.replace(old, new)
    folder = _TMP / name / stage.base_name  # same folder name: same entry point and base name
    folder.mkdir(parents=True, exist_ok=True)  # (asked for again: the same text again)
    (folder / "kernel.cu").write_text(src)
    return dataclasses.replace(stage, source=folder / "kernel.cu", name=f"{stage.base_name}[{name}]", **replace)
