#!/usr/bin/env python3
"""The whole regression on each simulator -> reports/sim_regression.md (``make test-sims``).

Runs ``pytest tb`` (the ``make test`` selection) once per simulator with ``SIM`` set, which
overrides every test's own choice (tcgen/verify/harness.py ``sim_name``), and records per simulator
the outcome counts, the wall time and the failures; per test file, the time each simulator took.

    .venv/bin/python scripts/sim_regression.py [--sims icarus,verilator] [-j auto]
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from tcgen.study import ScriptParser, report_header, tool_versions, write_report

ROOT = Path(__file__).resolve().parent.parent


def run(sim: str, jobs: str, xml: Path) -> dict:
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "pytest", "-n", jobs, "-q", "tb", "-p",
                        "no:cacheprovider", f"--junitxml={xml}"], cwd=ROOT,
                       env={**os.environ, "SIM": sim}, capture_output=True, text=True)
    wall = time.time() - t0
    counts = defaultdict(int)
    per_file: dict = defaultdict(float)
    failures = []
    root = ET.parse(xml).getroot()
    for case in root.iter("testcase"):
        f = case.get("classname", "").replace(".", "/") + ".py"
        per_file[f] += float(case.get("time", 0))
        kinds = [c.tag for c in case]
        if "failure" in kinds or "error" in kinds:
            counts["failed"] += 1
            failures.append(f"{case.get('classname')}::{case.get('name')}")
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return {"sim": sim, "rc": p.returncode, "wall_s": wall, "counts": dict(counts),
            "per_file": dict(per_file), "failures": failures,
            "tail": (p.stdout + p.stderr)[-1500:]}


def main() -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", default="icarus,verilator")
    ap.add_argument("-j", "--jobs", default="auto")
    args = ap.parse_args()
    t_start = time.time()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for sim in args.sims.split(","):
            print(f"+ SIM={sim} pytest -n {args.jobs} tb", flush=True)
            results.append(run(sim, args.jobs, Path(tmp) / f"{sim}.xml"))
            r = results[-1]
            print(f"  {r['counts']} in {r['wall_s']:.0f} s", flush=True)
    L = ["# The whole regression on each simulator", "",
         report_header("python scripts/sim_regression.py (make test-sims)",
                       wall_s=time.time() - t_start,
                       tools=tool_versions(packages=("numpy", "amaranth", "cocotb"))), "",
         "`SIM` overrides every test's simulator (the bit-sliced exhaustive path and the PPA "
         "flow's gate-level engines are not cocotb simulations and are unaffected). "
         f"`pytest -n {args.jobs}` on this 2-core machine.", "",
         "| simulator | passed | failed | skipped | wall |", "|---|---:|---:|---:|---:|"]
    for r in results:
        c = r["counts"]
        L.append(f"| {r['sim']} | {c.get('passed', 0)} | {c.get('failed', 0)} | "
                 f"{c.get('skipped', 0)} | {r['wall_s'] / 60:.1f} min |")
    for r in results:
        if r["failures"]:
            L += ["", f"Failures on {r['sim']}:", ""] + [f"- `{f}`" for f in r["failures"]]
    files = sorted({f for r in results for f in r["per_file"]})
    L += ["", "Test time per file (sum over tests, seconds):", "",
          "| file | " + " | ".join(r["sim"] for r in results) + " |",
          "|---|" + "---:|" * len(results)]
    for f in files:
        L.append(f"| {f} | " + " | ".join(f"{r['per_file'].get(f, 0):.0f}" for r in results)
                 + " |")
    write_report(ROOT / "reports" / "sim_regression.md", "\n".join(L) + "\n",
                 {r["sim"]: r for r in results}, strip=ROOT)
    print("wrote reports/sim_regression.md")
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
