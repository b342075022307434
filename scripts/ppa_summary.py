#!/usr/bin/env python3
"""Measure every registered unit at its defaults (osu018, vectorless 0.1, one clock) and write
reports/ppa_summary.md and reports/ppa_summary.json.

    .venv/bin/python scripts/ppa_summary.py [--liberty osu018] [--clock-ns 10] [--out reports]

Re-running is cheap: tcgen.synth.ppa caches every measured configuration under build/ppa/.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

from tcgen.measure import measure
from tcgen.registry import all_units
from tcgen.study import report_header, run_parallel, today, tool_versions, write_report

ROOT = Path(__file__).resolve().parent.parent


def _g(v, fmt="{:.4g}"):
    return "-" if v is None else fmt.format(v)


def _measure_one(name, liberty, clock_ns, toggle_rate, max_verilog_mb):
    """One unit at defaults (in a worker process): ("skipped", MB) or ("ok", result dict)."""
    from tcgen.generate import verilog
    if max_verilog_mb > 0:
        mb = len(verilog(name).encode()) / 1e6
        if mb > max_verilog_mb:
            return "skipped", mb
    return "ok", measure(name, None, liberty=liberty, clock_ns=clock_ns, activity="vectorless",
                         toggle_rate=toggle_rate)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--liberty", default="osu018")
    ap.add_argument("--clock-ns", type=float, default=10.0)
    ap.add_argument("--toggle-rate", type=float, default=0.1)
    ap.add_argument("--out", default=str(ROOT / "reports"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="units measured in parallel (default: one per core)")
    ap.add_argument("--max-verilog-mb", type=float, default=8.0,
                    help="skip units whose Verilog is larger (flat Yosys synthesis of a 36 MB "
                         "array takes far longer than the rest together); 0 = no limit")
    args = ap.parse_args(argv)
    cmd = "python scripts/ppa_summary.py" + (f" --max-verilog-mb {args.max_verilog_mb:g}"
                                              if args.max_verilog_mb != 8.0 else "") + "".join(
        f" --{k.replace('_', '-')} {v}" for k, v in (("liberty", args.liberty),
                                                    ("clock_ns", args.clock_ns),
                                                    ("toggle_rate", args.toggle_rate)))
    results, skipped = [], []
    names = [u.name for u in all_units()]
    one = functools.partial(_measure_one, liberty=args.liberty, clock_ns=args.clock_ns,
                            toggle_rate=args.toggle_rate, max_verilog_mb=args.max_verilog_mb)
    for name, (kind, r) in run_parallel(one, names, args.jobs):
        if kind == "skipped":
            skipped.append((name, r))
            print(f"  {name:14s} skipped: Verilog {r:.1f} MB > {args.max_verilog_mb:g} MB",
                  file=sys.stderr)
            continue
        results.append(r)
        print(f"  {name:14s} {r['area_um2']:10.1f} um^2  fmax {_g(r['fmax_mhz'], '{:.1f}')} "
              f"MHz  {r['power_mw']['total']:.4g} mW  ({r['runtime_s'].get('total_s', 0):.1f}"
              f" s{', cached' if r.get('cached') else ''})", file=sys.stderr)
    tools = tool_versions()
    header = report_header(cmd, notes=["also run by `make run`"], tools=tools,
                           liberties=[results[0]["liberty"]] if results else ())
    date = today()
    lib = results[0]["liberty"] if results else {}
    out = Path(args.out)
    doc = {"command": cmd, "date": date, "liberty": lib, "clock_ns": args.clock_ns,
           "activity": "vectorless", "toggle_rate": args.toggle_rate, "tools": tools,
           "skipped": [{"unit": n, "verilog_mb": round(mb, 1)} for n, mb in skipped],
           "units": [{k: v for k, v in r.items()
                      if k not in ("netlist", "runtime_s", "cached", "cache_key", "tools",
                                   "liberty", "flow_hash")} for r in results]}
    lines = [
        "# PPA summary: every registered unit at its defaults",
        "",
        header,
        "",
        f"- clock target: {args.clock_ns:g} ns (Yosys `abc -D` with ABC buffering and sizing, OpenSTA clock; input/output "
        "delays 0); power: vectorless, "
        f"{args.toggle_rate:g} toggles per cycle on every net (clock pins 2)",
        "- method and caveats: docs/ppa.md. Absolute numbers from an open 0.18 µm library are not "
        "comparable with a paper's 28 nm figures; compare ratios measured the same way.",
        "",
        "| unit | params | area µm² | cells | crit. path ns | fmax MHz | power mW | "
        "leakage mW | ops/cycle | pJ/op | GOPS/mm² @fmax | GOPS/W |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        params = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                          for k, v in r["params"].items())
        lines.append(
            f"| {r['unit']} | {params} | {r['area_um2']:.0f} | {r['cell_count']} | "
            f"{_g(r['crit_path_ns'], '{:.3f}')} | {_g(r['fmax_mhz'], '{:.1f}')} | "
            f"{r['power_mw']['total']:.4g} | {r['power_mw']['leakage']:.3g} | "
            f"{r['ops_per_cycle']:g} {r['ops_unit']} | {_g(r['energy_pj_per_op'], '{:.3g}')} | "
            f"{_g(r['gops_per_mm2_fmax'], '{:.3g}')} | {_g(r['gops_per_w'], '{:.3g}')} |")
    for name, mb in skipped:
        lines.append(f"| {name} | defaults | not measured: Verilog {mb:.1f} MB exceeds "
                     f"--max-verilog-mb {args.max_verilog_mb:g}; run `tcgen ppa {name}` | "
                     + "| " * 9 + "|")
    lines += ["", "Per-unit figures (cells by type, critical path end points, GOPS at the target "
              "clock and at fmax, the equivalent `tcgen ppa` command) are in ppa_summary.json.", ""]
    write_report(out / "ppa_summary.md", "\n".join(lines), doc,
                 strip=ROOT)                    # no machine paths in reports
    print(f"wrote {out / 'ppa_summary.md'} and {out / 'ppa_summary.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
