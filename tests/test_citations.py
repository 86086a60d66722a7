"""Every measurement record the READMEs cite exists: a figure with a dead citation cannot be checked.

Full citations only (`results/[folder/]YYYYMMDDTHHMMSS...`, a named record `results/probes/x.json`,
or a markdown link into results/); the short `T123456` forms that follow a full one in the same
sentence are not resolved here. Pure Python, no GPU."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
DOCS = [REPO / "README.md", *sorted(REPO.glob("stages/*/*.md"))]

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
