"""What moved between two versions of the reports (issue 17 §2: "re-run every family's studies
and the claims ledger on the improved library; any ratio that moves is reported, with both
library versions") -> a markdown report.

    .venv/bin/python scripts/library_diff.py --base REV [--reports reports] \\
        [--threshold 0.01] [--out reports/library_v2.md]

``REV`` is the git revision holding the reports of the old library; the working tree's
reports are the new ones.  For every sweep result (``reports/<sweep>.csv``) present in both,
the points are matched by group, label, liberty, clock, activity, synthesis (flat or
hierarchical) and workload; a point's area, delay,
power, energy per op and the spec's derived columns (the ratios) are compared, and every value
that moved by more than ``--threshold`` (relative) is listed with both versions.  For the
claims ledger (``reports/claims.md``) every claim whose measured figure ("ours") or verdict
changed is listed with both.  Points and claims present in one version only are counted.

Bad arguments (an unknown revision, a missing folder) are one line on stderr and exit 2.
"""
from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the measured columns compared besides the derived ones
MEASURED = ("synth__area__um2", "timing__crit_path__ns", "power__total__mw",
            "energy__per_op__pj")
#: the sweep CSV's columns that are neither parameters nor derived (everything after
#: ``runtime__flow__s`` up to ``key`` is a derived column)
_POINT = ("group", "label", "liberty", "clock_ns", "activity", "synthesis", "workload")


class UsageError(Exception):
    pass


def _git_show(rev: str, path: str) -> str | None:
    r = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True,
                       text=True)
    return r.stdout if r.returncode == 0 else None


def _rows(text: str) -> tuple[list[str], dict[tuple, dict]]:
    body = "".join(line for line in io.StringIO(text) if not line.startswith("#"))
    reader = csv.DictReader(io.StringIO(body))
    cols = reader.fieldnames or []
    derived = []
    if "runtime__flow__s" in cols and "key" in cols:
        derived = cols[cols.index("runtime__flow__s") + 1:cols.index("key")]
    return derived, {tuple(r.get(k, "") for k in _POINT): r for r in reader}


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def sweep_moves(old_text: str, new_text: str, threshold: float) -> dict:
    """The values of matched points that moved by more than ``threshold`` (relative)."""
    d_old, old = _rows(old_text)
    d_new, new = _rows(new_text)
    cols = list(MEASURED) + [c for c in d_new if c in d_old]
    moves = []
    for k in old.keys() & new.keys():
        for c in cols:
            a, b = _num(old[k].get(c)), _num(new[k].get(c))
            if a is None or b is None or a == b:
                continue
            rel = (b / a - 1) if a else float("inf")
            if abs(rel) > threshold:
                moves.append({"point": k, "column": c, "old": a, "new": b, "rel": rel,
                              "derived": c not in MEASURED})
    moves.sort(key=lambda m: (not m["derived"], m["point"], m["column"]))
    return {"matched": len(old.keys() & new.keys()), "only_old": len(old.keys() - new.keys()),
            "only_new": len(new.keys() - old.keys()), "moves": moves,
            "rerun": old_text != new_text}


def _claims(text: str) -> dict[str, dict]:
    out = {}
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("| id "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 7 and cells[0] and not cells[0].startswith("---"):
            out[cells[0]] = {"claim": cells[2], "ours": cells[4], "verdict": cells[5]}
    return out


def claim_moves(old_text: str, new_text: str) -> dict:
    old, new = _claims(old_text), _claims(new_text)
    moved = [{"id": k, "claim": new[k]["claim"], "old": old[k], "new": new[k]}
             for k in sorted(old.keys() & new.keys())
             if (old[k]["ours"], old[k]["verdict"]) != (new[k]["ours"], new[k]["verdict"])]
    return {"matched": len(old.keys() & new.keys()), "only_old": sorted(old.keys() - new.keys()),
            "only_new": sorted(new.keys() - old.keys()), "moved": moved}


def _v(x: float) -> str:
    return f"{x:,.4g}"


def render(base: str, rev: str, sweeps: dict, claims: dict | None, threshold: float,
           cmd: str) -> str:
    out = ["# What moved with the issue-17 library", "",
           f"Regenerate: `{cmd}`.  Old: the reports at `{base}` ({rev}); new: the reports of "
           "this tree.  A value is listed when it moved by more than "
           f"{threshold:.1%} (relative); ratios (the specs' derived columns) first, then the "
           "measured area, delay, power and energy of each moved point.", ""]
    out += ["| sweep | re-run | points matched | moved values | of them ratios | points only old "
            "/ only new |", "|---|---|---:|---:|---:|---|"]
    for name, s in sweeps.items():
        rerun = "yes" if s["rerun"] else "**no** (the file is the old one)"
        out.append(f"| {name} | {rerun} | {s['matched']} | {len(s['moves'])} | "
                   f"{sum(m['derived'] for m in s['moves'])} | {s['only_old']} / "
                   f"{s['only_new']} |")
    if claims is not None:
        out += ["", f"Claims ledger: {claims['matched']} claims matched, "
                f"{len(claims['moved'])} moved (figure or verdict); only old: "
                f"{', '.join(claims['only_old']) or 'none'}; only new: "
                f"{', '.join(claims['only_new']) or 'none'}.", ""]
        if claims["moved"]:
            out += ["## Claims that moved", "", "| id | claim | old: ours | old: verdict | "
                    "new: ours | new: verdict |", "|---|---|---|---|---|---|"]
            for c in claims["moved"]:
                out.append(f"| {c['id']} | {c['claim'][:120]} | {c['old']['ours']} | "
                           f"{c['old']['verdict']} | {c['new']['ours']} | "
                           f"{c['new']['verdict']} |")
    for name, s in sweeps.items():
        if not s["moves"]:
            continue
        out += ["", f"## {name}", "", "| point | liberty | clock ns | activity | column | old "
                "| new | new / old |", "|---|---|---:|---|---|---:|---:|---:|"]
        for m in s["moves"]:
            g, label, lib, clk, act, synth, _ = m["point"]
            if synth and synth != "flat":
                label = f"{label} ({synth})"
            col = f"**{m['column']}**" if m["derived"] else m["column"]
            out.append(f"| {label} | {lib} | {clk} | {act} | {col} | {_v(m['old'])} | "
                       f"{_v(m['new'])} | {m['new'] / m['old']:.3f} |" if m["old"] else
                       f"| {label} | {lib} | {clk} | {act} | {col} | {_v(m['old'])} | "
                       f"{_v(m['new'])} | – |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision of the old reports")
    ap.add_argument("--reports", default="reports", help="the reports folder (in the tree)")
    ap.add_argument("--threshold", type=float, default=0.01,
                    help="relative change below which a value counts as unmoved")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "library_v2.md")
    args = ap.parse_args(argv)
    try:
        r = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise UsageError(f"library_diff: {args.base!r} is not a git revision here")
        rev = r.stdout.strip()
        folder = ROOT / args.reports
        if not folder.is_dir():
            raise UsageError(f"library_diff: {folder} is not a folder")
        if not 0 <= args.threshold < 1:
            raise UsageError(f"library_diff: --threshold must be in [0, 1), got "
                             f"{args.threshold}")
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    sweeps = {}
    for csv_path in sorted(folder.glob("*.csv")):
        old = _git_show(args.base, f"{args.reports}/{csv_path.name}")
        if old is None:
            continue
        sweeps[csv_path.stem] = sweep_moves(old, csv_path.read_text(), args.threshold)
    old_claims = _git_show(args.base, f"{args.reports}/claims.md")
    new_claims = folder / "claims.md"
    claims = (claim_moves(old_claims, new_claims.read_text())
              if old_claims is not None and new_claims.is_file() else None)
    cmd = (f".venv/bin/python scripts/library_diff.py --base {args.base} --threshold "
           f"{args.threshold:g}")
    text = render(args.base, rev, sweeps, claims, args.threshold, cmd)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(args.out)
    print(f"library_diff: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
