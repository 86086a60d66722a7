"""Nsight Compute's per-instruction warp-state samples (the source page, `ncu --import R --csv
--page source --print-source sass`), summarized into one JSON record: per build the kernel's
duration (the details page), all samples, the samples by how often an instruction ran (the
mainloop's instructions run once per k-block and warp, the epilogue's once per tile and warp), and
the instructions with the most samples, each with its leading stall reasons.

    python scripts/ncu_sass_summary.py --out REC.json NAME=DIR/NAME-sass.csv[,DIR/NAME-details.csv] ...

(scripts/device.sh ncu writes the CSVs: SPEC-MxNxK-sass.csv and -details.csv.)"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import re

ALL = "Warp Stall Sampling (All Samples)"


def load_sass(path: str) -> list[dict]:
    with open(path) as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    hdr = rows[head]
    return [dict(zip(hdr, r)) for r in rows[head + 1:] if len(r) == len(hdr)]


def duration_us(path: str) -> float | None:
    with open(path) as f:
        for r in csv.reader(f):
            if "Duration" in r:
                i = r.index("Duration")
                unit, val = r[i + 1], float(r[i + 2].replace(",", ""))
                return val / 1000 if unit == "ns" else val * 1000 if unit == "ms" else val
    return None


def summarize(rows: list[dict], top: int = 25) -> dict:
    def n(d, k):
        return int(float(d.get(k) or 0))
    stalls = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    by_count = collections.Counter()
    for d in rows:
        by_count[n(d, "Instructions Executed")] += n(d, ALL)
    ranked = sorted(rows, key=lambda d: -n(d, ALL))[:top]
    return {
        "samples": sum(by_count.values()),
        "samples_by_executions": {str(k): v for k, v in sorted(by_count.items(), key=lambda kv: -kv[1]) if v},
        "top": [{"sass": re.sub(r"\s+", " ", d["Source"]).strip(), "samples": n(d, ALL),
                 "executed": n(d, "Instructions Executed"),
                 "reasons": {s[6:]: n(d, s) for s in sorted(stalls, key=lambda s: -n(d, s))[:3] if n(d, s)}}
                for d in ranked],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("builds", nargs="+", help="NAME=SASS_CSV[,DETAILS_CSV]")
    p.add_argument("--out", required=True)
    p.add_argument("--note", default="")
    a = p.parse_args()
    rec = {"kind": "ncu-sass-summary", "note": a.note, "builds": {}}
    for spec in a.builds:
        name, _, paths = spec.partition("=")
        sass, _, details = paths.partition(",")
        entry = summarize(load_sass(sass))
        if details:
            entry["duration_us"] = duration_us(details)
        rec["builds"][name] = entry
    with open(a.out, "w") as f:
        json.dump(rec, f, indent=1)
    for name, e in rec["builds"].items():
        print(name, e.get("duration_us"), e["samples"], list(e["samples_by_executions"].items())[:4])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
