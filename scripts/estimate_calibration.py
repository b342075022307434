"""How close the families' size estimates (``UnitSpec.estimate``) come to the cells measured by
the flow: every osu018 row of the committed sweep results (reports/*.json), estimate vs
``synth__cells__count``, per unit (docs/robustness.md, "Resource bounds").

    .venv/bin/python scripts/estimate_calibration.py [--min-cells N] [--results DIR]

Prints a markdown table: rows, geometric mean of measured / estimated, the range, and the range
over the rows of at least N cells (default 10,000: the limit is about large configurations).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ratios(results: Path) -> dict[str, list[tuple[float, float]]]:
    """unit -> [(measured / estimated, measured cells)] over the results' osu018 rows."""
    from tcgen.registry import get_unit
    out: dict[str, list[tuple[float, float]]] = {}
    seen = set()
    for f in sorted(results.glob("*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            continue
        for row in data["rows"]:
            cells = row.get("synth__cells__count")
            if not cells or row.get("liberty") != "osu018" or row.get("status") != "ok":
                continue
            unit = get_unit(row["unit"])
            if unit.estimate is None:
                continue
            names = [fl.name for fl in unit.params.fields()]
            params = unit.params.from_dict({k: row[k] for k in names if k in row})
            key = (unit.name, json.dumps(params.as_dict(), sort_keys=True),
                   row.get("synthesis"))
            if key in seen:
                continue
            seen.add(key)
            out.setdefault(unit.name, []).append((cells / unit.estimate_cells(params), cells))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-cells", type=int, default=10_000)
    ap.add_argument("--results", default=str(ROOT / "reports"))
    args = ap.parse_args(argv)
    rs = ratios(Path(args.results))
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
