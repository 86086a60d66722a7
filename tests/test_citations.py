"""Every measurement record the READMEs cite exists: a figure with a dead citation cannot be checked.

Full citations only (`results/[folder/]YYYYMMDDTHHMMSS...`, a named record `results/probes/x.json`,
or a markdown link into results/); the short `T123456` forms that follow a full one in the same
sentence are not resolved here. Pure Python, no GPU."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
STAGE_DOCS = sorted(REPO.glob("stages/*/*.md"))
DOCS = [REPO / "README.md", *STAGE_DOCS]

STAMPED = re.compile(r"results/((?:[a-z_]+/)*)(\d{8}T\d{4,6})")
NAMED = re.compile(r"results/((?:[a-z_]+/)*)([A-Za-z][\w.-]*\.json)")
LINK = re.compile(r"\]\(([^)\s]*results/[^)\s]+)\)")


def _cited(text: str):
    for m in STAMPED.finditer(text):
        yield m.group(0), m.group(1), m.group(2), "stamp"
    for m in NAMED.finditer(text):
        yield m.group(0), m.group(1), m.group(2), "name"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_cited_record_exists(doc):
    text = doc.read_text()
    bad = []
    for cite, folder, key, kind in _cited(text):
        where = RESULTS / folder
        hit = any(p.name.startswith(key) for p in where.glob("*")) if kind == "stamp" else (where / key).is_file()
        if not hit:
            bad.append(cite)
    for m in LINK.finditer(text):
        if not (doc.parent / m.group(1)).resolve().exists():  # a record, or a folder of them
            bad.append(m.group(1))
    assert not bad, f"{doc.relative_to(REPO)} cites records that do not exist: {sorted(set(bad))}"


def test_the_check_sees_a_dead_citation():
    """The same extraction finds a record that is not there (the test above can fail)."""
    cites = list(_cited("as measured (results/probes/20991231T235959-nowhere.json, results/tuning/x.json)"))
    assert [(c[1], c[2], c[3]) for c in cites] == [("probes/", "20991231T235959", "stamp"), ("tuning/", "x.json", "name")]
    assert not any(p.name.startswith("20991231T235959") for p in (RESULTS / "probes").glob("*"))


# ---- section references into a stage's companion files ------------------------------------------
FILE_REF = re.compile(r'(?:\[)?([A-Z_]+\.md)(?:\]\([A-Z_]+\.md\))?,? "([^"]+)"')


def _sections(md: Path) -> list[str]:
    """A file's section names: its headings and the bold leads of its paragraphs and items."""
    text = md.read_text()
    names = re.findall(r"^#+ (.+)$", text, re.M)
    names += re.findall(r"^(?:[-*] )?\*\*([^*]+?)\*\*", text, re.M)
    return [" ".join(n.split()).rstrip(".") for n in names]


def _refs(text: str):
    for m in FILE_REF.finditer(text):
        yield m.group(1), " ".join(m.group(2).replace("#", "").replace("//", "").split())


def _sources():
    yield from STAGE_DOCS
    for pattern in ("stages/*/kernel.cu", "stages/*/__init__.py", "stages/core/*.py", "tests/*.py", "scripts/*.py"):
        yield from sorted(REPO.glob(pattern))


@pytest.mark.parametrize("src", list(_sources()), ids=lambda p: str(p.relative_to(REPO)))
def test_a_section_named_in_a_stage_file_exists_there(src):
    """`SHAPES.md "Clusters"` or `[EPILOGUE.md](EPILOGUE.md), "Accuracy"` (a stage's companion
    files, named from its README, its code or the tests) names a heading or a bold lead that the
    file has, so a section moved out of a README leaves no dangling pointer behind."""
    if src.name == "test_citations.py":
        return
    text = src.read_text()
    stage_dirs = [src.parent] if src.parent.parent.name == "stages" else sorted(REPO.glob("stages/v*"))
    bad = []
    for fname, name in _refs(text):
        if fname == "README.md":
            continue
        targets = [d / fname for d in stage_dirs if (d / fname).is_file()]
        if not targets:
            continue  # a file of another folder (results/..., notebooks): not a stage's section
        name = name.rstrip(".").replace(" x ", " × ").replace("...", "").strip()
        if not any(s.startswith(name) or name.startswith(s) for t in targets for s in _sections(t)):
            bad.append(f"{fname} {name!r}")
    assert not bad, f"{src.relative_to(REPO)} names sections that do not exist: {bad}"


def test_the_section_check_sees_a_dangling_name():
    """The same extraction reads both forms, and finds a name that is not a section."""
    text = 'see SHAPES.md "Clusters" and [EPILOGUE.md](EPILOGUE.md), "No such section"'
    assert list(_refs(text)) == [("SHAPES.md", "Clusters"), ("EPILOGUE.md", "No such section")]
    names = _sections(REPO / "stages/v5_fused_epilogue/EPILOGUE.md")
    assert "Accuracy" in names and not any(n.startswith("No such section") for n in names)
