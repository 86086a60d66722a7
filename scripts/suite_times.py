"""Seconds per test, from the JUnit XML a suite run writes (pytest --junitxml; scripts/device.sh
`suite` writes one per slice), merged into the JSON that `pytest --part K/N --part-times FILE`
reads to cut slices of equal time (tests/conftest.py).

    python scripts/suite_times.py OUT.json RUN1.xml [RUN2.xml ...] [--note "..."]

A test in the XML replaces its entry in OUT.json (if it exists); tests the XML does not name keep
theirs. Modules skipped whole at collection, and a test cut by a time limit, have no time and
are left out; a test skipped on that machine keeps the little time its skip took.
"""
from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]  # pytest's ids are paths from the repository's root


def nodeid(classname: str, name: str, root: Path = ROOT) -> str:
    """pytest's test id from a JUnit testcase: "tests.test_v5" + "test_x[a]" ->
    "tests/test_v5.py::test_x[a]" (a class inside the module stays a :: part; the module is the
    longest prefix that is a file under `root`, wherever this runs from)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        if root.joinpath(*parts[:cut]).with_suffix(".py").exists() or cut == 1:
            module = "/".join(parts[:cut]) + ".py"
            return "::".join([module, *parts[cut:], name])
    raise AssertionError("unreachable")


def times(xml_paths) -> dict[str, float]:
    out = {}
    for path in xml_paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            if case.get("name") and case.get("classname"):
                out[nodeid(case.get("classname"), case.get("name"))] = round(float(case.get("time", 0)), 2)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("xml", nargs="+")
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.exists() else {"note": "", "seconds": {}}
    new = times(args.xml)
    data["seconds"].update(new)
    data["seconds"] = dict(sorted(data["seconds"].items()))
    if args.note:
        data["note"] = args.note
    out.write_text(json.dumps(data, indent=0) + "\n")
    print(f"{len(new)} tests from {len(args.xml)} files; {len(data['seconds'])} in {out}, "
          f"{sum(data['seconds'].values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
