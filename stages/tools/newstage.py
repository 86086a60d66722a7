"""Start a new stage: copy the last stage's folder under a new name and rename inside it.

    python -m stages new vN_short_name          (or: make new-stage NAME=vN_short_name)

Nothing outside the new folder is edited: the registry finds it (stages/vN_*/), its `previous` is
the stage before it in version order, its name, source and kernel entry point follow from the
folder. `make notebooks report` then gives it a walkthrough notebook and README blocks.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import stages


def new_stage(name: str, source: str | None = None) -> Path:
    if not stages.STAGE_DIR.match(name):
        raise ValueError(f"a stage folder is named vN_short_name (lower case, digits, _), got {name!r}")
    version = int(name[1:].split("_")[0])
    taken = {int(n[1:].split("_")[0]): n for n in stages.names()}
    if version in taken:
        raise ValueError(f"version {version} is taken by {taken[version]}")
    src_name = source or stages.names()[-1]
    src = stages.get(src_name).folder
    dst = src.parent / name
    if dst.exists():
        raise ValueError(f"{dst} already exists")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in dst.iterdir():
        if path.suffix not in (".cu", ".py", ".md", ".cuh"):
            continue
        text = path.read_text().replace(src_name, name)
        if path.name == "kernel.cu":  # the copy builds on the stage it was copied from
            text = re.sub(r"^(// Builds on:\s+).*$", rf"\g<1>{src_name}.", text, count=1, flags=re.M)
        if path.name == "README.md":
            text = re.sub(r"(<!-- measured:begin -->\n).*?(\n<!-- measured:end -->)",
                          r"\1No H200 measurement recorded yet.\2", text, flags=re.S)
        path.write_text(text)
    return dst
