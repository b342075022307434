"""Summarize the last regression's cocotb runs: vectors and mismatches per unit.

Reads every ``build/sim/<unit>/*/runs/*/summary.json`` the harness left (run `make test` first)
and prints a Markdown table; ``--out FILE`` also writes it (e.g. reports/regression.md).
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from tcgen.study import ScriptParser, report_header, tool_versions, write_report

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the table to this file")
    ap.add_argument("--wall", help="regression wall time to record (e.g. '11m32s')")
    args = ap.parse_args()
    runs = defaultdict(lambda: {"runs": 0, "vectors": 0, "mismatches": 0, "configs": set()})
    for path in sorted((ROOT / "build" / "sim").glob("*/*/runs/*/summary.json")):
        unit, config = path.parts[-5], path.parts[-4]
        s = json.loads(path.read_text())
        r = runs[unit]
        r["runs"] += 1
        r["configs"].add(config)
        for k in ("vectors", "mismatches"):
            if isinstance(s.get(k), int):
                r[k] += s[k]
    if not runs:
        print("no simulation results under build/sim: run `make test` first", file=sys.stderr)
        return 1
    header = report_header(
        "python scripts/regression_summary.py --out reports/regression.md",
        notes=["after `make test`"] + ([f"regression wall time {args.wall}"] if args.wall else []),
        tools={"iverilog": tool_versions()["iverilog"]})
    lines = ["# Regression: cocotb vectors per unit", "", header, "",
             "- counts are the vectors (or bench-defined items) every simulation scored against "
             "the golden model; a run dir per pytest test",
             "", "| unit | configurations | runs | vectors | mismatches |", "|---|---:|---:|---:|---:|"]
    tot = [0, 0, 0]
    for unit, r in sorted(runs.items()):
        lines.append(f"| {unit} | {len(r['configs'])} | {r['runs']} | {r['vectors']:,} | "
                     f"{r['mismatches']} |")
        tot = [tot[0] + r["runs"], tot[1] + r["vectors"], tot[2] + r["mismatches"]]
    lines.append(f"| **total** | | {tot[0]} | {tot[1]:,} | {tot[2]} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        write_report(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
