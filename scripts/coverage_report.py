#!/usr/bin/env python3
"""Merge the functional coverage of the regression's runs -> reports/coverage.md and .json
(``make coverage``; docs/coverage.md).

Every cocotb run writes its coverage database (cocotb-coverage YAML) and a side file naming its
test to ``build/coverage/`` (tcgen/verify/coverage.py).  This merges them with cocotb-coverage's
``merge_coverage``, writes the report (per unit and group: coverpoint, bin, hits; the runs that
contributed) and exits 1 listing every unhit bin and every required group that no run sampled.

    .venv/bin/python scripts/coverage_report.py [--dir build/coverage] [--out reports/coverage.md]
        [--command TEXT] [--run [PYTEST ARGS...]]

``--run``: first clear ``--dir`` and run ``pytest`` on the coverage-bearing tests of ``make
test`` (TESTS) and the few ``slow`` tests that close bins make test cannot afford (SLOW) --
``make coverage``; arguments after ``--run`` replace that selection.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tb"))

from tcgen.verify import coverage as cov                                    # noqa: E402
from tcgen.study import ScriptParser, today, tool_versions, tools_text, write_report      # noqa: E402

#: the test files that carry coverage (every cocotb bench of these samples it)
TESTS = ["tb/test_fp_rtl.py", "tb/test_fused.py", "tb/test_batch.py", "tb/test_pacq_rtl.py",
         "tb/test_lut_rtl.py", "tb/test_lut_array.py", "tb/test_sparse_rtl.py",
         "tb/test_bmma_rtl.py", "tb/test_winograd_rtl.py", "tb/test_winograd_linebuf.py",
         "tb/test_lut_baselines.py", "tb/test_sim_cross.py", "tb/test_coverage.py"]


#: `slow` tests that close bins make test cannot afford (run by --run after TESTS)
SLOW = ["tb/test_sparse_rtl.py::test_warp[warp_smma-kw1-backpressure]",    # warp stalls
        # moved out of make test for its budget (reports/make_test_profile.md)
        "tb/test_sparse_rtl.py::test_random_tiles_batch[octet_sparse-1000]",
        "tb/test_fused.py::test_rtl_defaults[20000-4000]",
        "tb/test_sparse_rtl.py::test_lk_sweep_cycles[32-5-True]",
        "tb/test_winograd_rtl.py::test_itf_f43_random_fp[fp16-1000]",
        "tb/test_winograd_rtl.py::test_int_extremes_no_wrap[4-wino_conv]",
        "tb/test_winograd_rtl.py::test_int_extremes_no_wrap[4-direct_conv3x3]",
        "tb/test_winograd_rtl.py::test_direct_tiles[kw0]",
        "tb/test_fp_rtl.py::test_dp4",                       # the 40,000-vector ones (-m slow)
        "tb/test_sparse_rtl.py::test_warp[warp_smma-kw0-back_to_back]",
        "tb/test_winograd_rtl.py::test_conv_tiles[kw0]",
        "tb/test_winograd_rtl.py::test_itf_basis[2-fp16]",
        "tb/test_winograd_rtl.py::test_itf_random_fp[fp16-0]",
        "tb/test_winograd_rtl.py::test_results_back_to_back_after_a_long_stall[wino_conv-kw1]",
        "tb/test_winograd_rtl.py::test_ftf_basis[2-fp16]",
        "tb/test_fp_rtl.py::test_mul_variants",             # the variants but booth4+early+narrow
        "tb/test_sparse_rtl.py::test_stalls_and_reset[octet_dense-kw2-reset_mid_operation]"]


def _runs(d: Path) -> list[dict]:
    out = []
    for f in sorted(d.glob("*.json")):
        try:
            out.append({**json.loads(f.read_text()), "_db": str(f.with_suffix(".yml"))})
        except (OSError, ValueError):
            continue
    return out


def render(points: dict, runs: list[dict], missing: list[str], header: str) -> str:
    excused = cov.excused(points, runs)
    groups: dict[str, dict] = defaultdict(dict)
    for name, bins in points.items():
        unit, group, point = name.split(".", 2)
        groups[(unit, group)][point] = bins
    tests_by_unit: dict[str, set] = defaultdict(set)
    for r in runs:
        for u in r.get("units", []):
            tests_by_unit[u].add(r.get("test") or r.get("run_dir", "?"))
    n_exc = sum(1 for name, b in points.items() for k, h in b.items()
                if h == 0 and k in excused.get(name, ()))
    n_bins = sum(len(b) for b in points.values()) - n_exc
    n_hit = sum(1 for b in points.values() for h in b.values() if h > 0)
    L = ["# Functional coverage", "", header, "",
         f"{len(points)} coverpoints in {len(groups)} groups of "
         f"{len({u for u, _ in groups})} units, {n_hit} of {n_bins} bins hit "
         f"({100.0 * n_hit / max(n_bins, 1):.1f} %; {n_exc} more unreachable by design at the "
         f"params that ran), merged from {len(runs)} simulation runs. "
         "Coverpoints and bins are defined in `tcgen/verify/coverage.py` (docs/coverage.md); a bin with 0 "
         "hits, or a required group that no run sampled, fails `make coverage`.", ""]
    if missing:
        L += ["## Holes", ""] + [f"- `{m}`" for m in missing] + [""]
    else:
        L += ["**Every defined bin is hit.**", ""]
    L += ["## Summary", "", "| unit | group | coverpoints | bins hit | runs |",
          "|---|---|---:|---:|---:|"]
    for (unit, group), pts in sorted(groups.items()):
        nb = sum(1 for pt, b in pts.items() for k, h in b.items()
                 if h > 0 or k not in excused.get(f"{unit}.{group}.{pt}", ()))
        nh = sum(1 for b in pts.values() for h in b.values() if h > 0)
        L.append(f"| `{unit}` | {group} | {len(pts)} | {nh} / {nb} | "
                 f"{len(tests_by_unit.get(unit, ()))} |")
    L += ["", "## Bins", "",
          "Hits per bin (vectors, slots, cycles or handshakes, by coverpoint).", ""]
    for (unit, group), pts in sorted(groups.items()):
        L += [f"### `{unit}` — {group}", "", "| coverpoint | bins (hits) |", "|---|---|"]
        for point, bins in sorted(pts.items()):
            gone = excused.get(f"{unit}.{group}.{point}", set())
            cells = ", ".join(f"{b} — (unreachable)" if b in gone and h == 0 else
                              f"{b} **0**" if h == 0 else f"{b} {h}" for b, h in bins.items())
            L.append(f"| {point} | {cells} |")
        L.append("")
    if cov.UNREACHABLE:
        L += ["## Bins unreachable by design", "",
              "Declared in `tcgen/verify/coverage.py` `UNREACHABLE` with the params at which they cannot be "
              "reached; a 0-hit bin is no hole if every run that sampled its point was at such "
              "params, and a run that hits one anyway records a hole.", "",
              "| coverpoint | bin | why |", "|---|---|---|"]
        for name, bins in sorted(cov.UNREACHABLE.items()):
            for b, (_, why) in bins.items():
                L.append(f"| `{name}` | {b} | {why} |")
        L.append("")
    L += ["## Runs", "", "The tests whose simulations contributed, per unit.", ""]
    for unit in sorted(tests_by_unit):
        tests = sorted(tests_by_unit[unit])
        L.append(f"- `{unit}` ({len(tests)}): " + ", ".join(f"`{t}`" for t in tests[:40]) +
                 (f", … {len(tests) - 40} more" if len(tests) > 40 else ""))
    return "\n".join(L) + "\n"


def main() -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=cov.DIR, help="run databases (build/coverage)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "coverage.md")
    ap.add_argument("--command", default=".venv/bin/python scripts/coverage_report.py",
                    help="the command named in the report's header")
    ap.add_argument("--note", default="", help="a remark on how this run was made, added to "
                                               "the report's header")
    ap.add_argument("--no-required", action="store_true",
                    help="do not require the groups of tcgen/verify/coverage.py REQUIRED (partial runs)")
    ap.add_argument("--groups", action="store_true",
                    help="print the groups the merged runs sampled, as tcgen/verify/coverage.py REQUIRED "
                         "(to paste there after adding a coverpoint), and write no report")
    ap.add_argument("--run", nargs=argparse.REMAINDER, default=None,
                    help="clear --dir, run pytest on the coverage-bearing tests (arguments "
                         "after --run: pytest arguments replacing the default selection)")
    args = ap.parse_args()
    t0 = time.time()
    if args.run is not None:
        for f in list(args.dir.glob("*.yml")) + list(args.dir.glob("*.json")):
            f.unlink()
        jobs = ["-n", os.environ.get("JOBS", "auto"), "--dist", "worksteal"]
        sels = [args.run] if args.run else [[*jobs, *TESTS], [*jobs, "-m", "slow", *SLOW]]
        for sel in sels:
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *sel]
            print("+", " ".join(cmd), flush=True)
            rc = subprocess.run(cmd, cwd=ROOT).returncode
            if rc != 0:
                print(f"coverage_report: tests failed (pytest exit {rc}); the report covers "
                      f"the runs that finished", file=sys.stderr)
    files = sorted(args.dir.glob("*.yml"))
    if not files:
        print(f"coverage_report: no coverage databases in {args.dir} (run the tests first, or "
              f"make coverage)", file=sys.stderr)
        return 2
    skipped: list[str] = []
    points = cov.merge(files, args.dir / "merged" / "merged.yml", skipped)
    if skipped:
        print(f"coverage_report: {len(skipped)} stale databases left out (their bins differ from "
              f"the newest runs': written by an older tcgen/verify/coverage.py)", file=sys.stderr)
    if args.groups:
        groups = sorted({".".join(n.split(".")[:2]) for n in points})
        print("REQUIRED: tuple[str, ...] = (")
        line = "   "
        for g in groups:
            item = f' "{g}",'
            if len(line) + len(item) > 98:
                print(line)
                line = "   "
            line += item
        print(line + "\n)")
        return 0
    runs = [r for r in _runs(args.dir) if r.get("_db") not in skipped]
    missing = cov.holes(points, () if args.no_required else None, runs)
    import cocotb
    from importlib.metadata import version
    tools = tool_versions(flow=False, packages=["numpy"])
    tools["cocotb"] = cocotb.__version__
    tools["cocotb-coverage"] = version("cocotb-coverage")
    tools["iverilog"] = tool_versions().get("iverilog", "n/a")
    wall = f" ({(time.time() - t0) / 60:.1f} min this run)" if args.run is not None else ""
    header = (f"Regenerate: `{args.command}`{wall}: the coverage-bearing tests of `make test` "
              f"(`scripts/coverage_report.py` TESTS), each cocotb run writing its coverage to "
              f"build/coverage/, merged here (runs of `make test-slow` present there are merged "
              f"too).  Date {today()}.  Tools: {tools_text(tools)}; simulator Icarus Verilog "
              f"unless a test chooses Verilator (batch runs by their size, tcgen/verify/harness.py)."
              + (f"  {args.note}" if args.note else ""))
    text = render(points, runs, missing, header)
    exc = cov.excused(points, runs)
    obj = {"points": points, "holes": missing,
           "unreachable": {k: sorted(v) for k, v in exc.items() if v},
           "runs": sorted({r.get("test") or r.get("run_dir", "") for r in runs}),
           "bins": sum(1 for n, b in points.items() for k, h in b.items()
                       if h > 0 or k not in exc[n]),
           "hit": sum(1 for b in points.values() for h in b.values() if h > 0)}
    write_report(args.out, text, obj)
    print(f"coverage_report: {obj['hit']} of {obj['bins']} bins hit, {len(missing)} holes "
          f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    for m in missing:
        print(f"  unhit: {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
