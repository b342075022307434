"""How close the families' size estimates (``UnitSpec.estimate``) come to the cells measured by
the flow: every flat osu018 row of the committed sweep results (reports/*.json), estimate vs
``synth__cells__count``, per unit (``tcgen.study.estimate_ratios``; docs/robustness.md,
"Resource bounds").

    .venv/bin/python scripts/estimate_calibration.py [--min-cells N] [--results DIR]

Prints a markdown table: rows, geometric mean of measured / estimated, the range, and the range
over the rows of at least N cells (default 10,000: the limit is about large configurations).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from tcgen.study import ScriptParser, estimate_ratios

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-cells", type=int, default=10_000)
    ap.add_argument("--results", default=str(ROOT / "reports"))
    args = ap.parse_args(argv)
    rs = estimate_ratios(Path(args.results))
    print(f"| unit | rows | measured / estimated (geo. mean) | range | range, >= "
          f"{args.min_cells:,} cells |")
    print("|---|---:|---:|---:|---:|")
    for name, xs in sorted(rs.items()):
        r = [x for x, _ in xs]
        big = [x for x, c in xs if c >= args.min_cells]
        g = math.exp(sum(map(math.log, r)) / len(r))
        print(f"| {name} | {len(r)} | {g:.2f} | {min(r):.2f}..{max(r):.2f} | "
              + (f"{min(big):.2f}..{max(big):.2f} |" if big else "– |"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
