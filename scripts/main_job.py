"""`make run`: generate Verilog for every registered unit at its defaults into build/verilog,
lint each file with the project's Verilator (tcgen.synth.lint, as `tcgen lint`), print a table,
then (unless --no-ppa) measure PPA of every unit at its defaults: the sweep
studies/ppa_summary.toml into build/ppa_summary/ (ppa_summary.md/.csv/.json).  A fresh clone
stays clean: the report of record, reports/ppa_summary.*, is rewritten only with --reports
(`make run REPORTS=1`).

Exit status 1 if any unit fails to generate or lint.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from amaranth import Value

from tcgen.generate import verilog
from tcgen.registry import all_units
from tcgen.study import ScriptParser, write_report
from tcgen.synth.lint import lint
from tcgen.synth.tools import ToolError


def lint_status(path: Path) -> str:
    try:
        return lint(path).summary()
    except ToolError as e:
        return f"failed ({e})"


def main() -> int:
    ap = ScriptParser(description=__doc__)
    ap.add_argument("--out", default=str(ROOT / "build" / "verilog"))
    ap.add_argument("--no-ppa", action="store_true", help="skip the PPA measurement")
    ap.add_argument("--reports", action="store_true",
                    help="write the PPA summary into reports/ (the report of record) instead of "
                         "build/ppa_summary/")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, failed = [], 0
    t0 = time.time()
    for unit in all_units():
        params = unit.params()
        try:
            text = verilog(unit.name, params)
        except Exception as e:          # report every unit, then fail the job
            rows.append((unit.name, params.key(), "-", "-", f"generate failed: {e}"))
            failed += 1
            continue
        path = out / f"{unit.name}.v"
        write_report(path, text)
        comp = unit.interface(params)
        ports = ", ".join(f"{'__'.join(map(str, path))}[{Value.cast(value).shape().width}]"
                          for path, _, value in comp.signature.flatten(comp))
        result = lint_status(path)
        failed += result != "clean"
        vals = " ".join(f"{k}={v}" for k, v in params.as_dict().items())
        rows.append((unit.name, vals, ports, str(len(text.splitlines())), result))
    headers = ("unit", "params", "ports", "lines", "lint")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    widths[2] = min(widths[2], 60)
    print(f"Verilog for {len(rows)} units in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out} "
          f"({time.time() - t0:.1f} s)")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        cells = [c if len(c) <= w else c[:w - 3] + "..." for c, w in zip(r, widths)]
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths)))
    if failed:
        print(f"{failed} unit(s) failed to generate or lint", file=sys.stderr)
        return 1
    if not args.no_ppa:
        print()
        tcgen = Path(sys.executable).with_name("tcgen")
        dest = "reports" if args.reports else "build/ppa_summary"
        return subprocess.call([str(tcgen), "sweep", "studies/ppa_summary.toml",
                                "-j", str(os.cpu_count() or 1), "-o", dest], cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
