#!/usr/bin/env python3
"""Mutation testing of every family's RTL -> reports/mutation.md and reports/mutation.json
(``make mutation``; docs/mutation.md).

For each family (``hw``, ``pacq``, ``bmma``, ``lut``, ``sparse``, ``winograd``) and each of its
targets in ``tb/mutation.py`` (``FAMILIES``): Yosys ``mutate`` samples mutants of the unit
configuration, the family's tests run on each (``pytest -x``, harness hook ``TCGEN_MUTANT``),
combinational survivors go to the formal equivalence check.  Per family: mutants generated,
killed, equivalent (proved), survived, kill rate, wall time; every survivor listed.

    .venv/bin/python scripts/mutation_report.py [-j 1] [--family hw ...] [--work build/mutation]

``--family`` reruns only the families named; the others are kept from the existing
reports/mutation.json, so one family can be redone after a fix.  ``--target UNIT`` reruns only
that target (e.g. one whose Verilog changed: tb/test_mutation.py's staleness test names it),
keeping its family's other targets.  ``--recheck`` judges again
only the recorded survivors (after a directed test was added for them, or a proof became
available); killed and equivalent mutants keep their verdicts.  Progress goes to stdout (the
make target logs it to build/mutation.log).
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tb"))

from mutation import FAMILIES, PROOF_TIMEOUT_S, SEED, TIMEOUT_FACTOR, MIN_TIMEOUT_S, \
    recheck_family, run_family  # noqa: E402
from tcgen.study import ScriptParser, report_header, tool_versions, write_report  # noqa: E402

GOAL = 0.95
REPORT = ROOT / "reports" / "mutation.md"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _rate(r) -> str:
    return "n/a" if r is None else f"{100 * r:.1f} %"


def render(data: dict) -> str:
    fams = [data["families"][f] for f in FAMILIES if f in data["families"]]
    lines = ["# Mutation testing of the RTL", ""]
    lines.append(report_header(data["command"], wall_s=data.get("wall_s"),
                               tools=data["tools"],
                               notes=[f"Yosys `mutate -list N -seed {SEED}`",
                                      f"{data['jobs']} worker(s)"]))
    lines += ["", "How much a wrong circuit is noticed: each mutant is a unit configuration's "
              "Verilog with one fault put in by Yosys's `mutate` (a bit of a cell's input or "
              "output inverted, tied to 0 or 1, or swapped with a neighbouring bit; after "
              "`proc; flatten; opt_clean`), and the family's own tests run on it through the "
              "harness (tb/mutation.py, docs/mutation.md). *Killed*: a test failed (or ran "
              f"past {TIMEOUT_FACTOR:g}× the original's time, at least {MIN_TIMEOUT_S:.0f} s). "
              "*Equivalent*: the mutant survived and `tcgen.synth.formal.prove_equivalent` "
              "proved it equal to the unmutated netlist on every input (clocked units: both "
              "with their registers cut into inputs and outputs, so the next-state and output "
              "functions are compared; MiniSat, "
              f"{PROOF_TIMEOUT_S:.0f} s solver limit); it leaves the denominator. *Survived*: "
              "every test passed and no proof says it is equivalent (the reason is listed: a "
              "counterexample the tests miss, *unresolved, sequential* when the cut netlists "
              "differ only for some register values, or no proof tried for designs too large "
              "for the time budget). Kill rate = killed / "
              f"(generated − equivalent − errors). Goal: ≥ {100 * GOAL:.0f} % per family.",
              ""]
    missing = [f for f in FAMILIES if f not in data["families"]]
    ok = not missing and all(f["kill_rate"] is not None and f["kill_rate"] >= GOAL
                             for f in fams)
    lines.append(f"Result: **{'every family' if ok else 'not every family'} at ≥ "
                 f"{100 * GOAL:.0f} %**" + (f"; not run: {', '.join(missing)}" if missing
                                            else "") + ".")
    lines += ["", "## Per family", "",
              "| family | units (configuration) | generated | killed | equivalent | survived "
              "| errors | kill rate | wall, s | run |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for f in fams:
        units = "; ".join(f"{t['unit']} ({_cfg(t['params'])})" for t in f["targets"])
        lines.append(f"| {f['family']} | {_cell(units)} | {f['generated']} | {f['killed']} | "
                     f"{f['equivalent']} | {f['survived']} | {f['error']} | "
                     f"{_rate(f['kill_rate'])} | {f['wall_s']:.0f} | {_dates(f)} |")
    lines += ["", "## Targets and the tests run on their mutants", "",
              "| family | unit | configuration | mutants | killed | tests (pytest -x) | "
              "original run, s | Verilog SHA-256 | run |",
              "|---|---|---|---:|---:|---|---:|---|---|"]
    for f in fams:
        for t in f["targets"]:
            k = sum(m["status"] == "killed" for m in t["mutants"])
            tests = "<br>".join(f"`{x}`" for x in t["tests"])
            lines.append(f"| {f['family']} | {t['unit']} | {_cell(_cfg(t['params']))} | "
                         f"{len(t['mutants'])} | {k} | {tests} | {t['original_s']:.1f} | "
                         f"`{t.get('verilog_sha256', 'not recorded')[:12]}` | "
                         f"{t.get('date', f.get('date', ''))} |")
    lines += ["", "## Survivors, equivalent mutants and errors", ""]
    rows = [(f["family"], m) for f in fams for t in f["targets"] for m in t["mutants"]
            if m["status"] != "killed"]
    if not rows:
        lines.append("None: every mutant was killed.")
    else:
        lines += ["| family | id | status | mutation | Verilog line | why |",
                  "|---|---|---|---|---|---|"]
        for fam, m in rows:
            mut = m["line"].split(" -src ")[0].replace("mutate ", "")
            lines.append(f"| {fam} | `{m['id']}` | {m['status']} | `{_cell(mut)}` | "
                         f"{_cell(m['src'])}: `{_cell(m['code'][:80])}` | {_cell(m['detail'])} |")
    if data.get("history"):
        lines += ["", "## Runs that made this report", ""]
        lines += [f"- {h}" for h in data["history"]]
    lines += ["", "Each target's Verilog SHA-256 is of the text its mutants were made from "
              "(`tcgen.generate.verilog` of the unit at that configuration); "
              "tb/test_mutation.py fails when the generator emits other Verilog for a target "
              "today, naming the command that re-measures it.", "",
              "Rerun one family: `.venv/bin/python scripts/mutation_report.py --family "
              "<name>`, one target: `--target <unit>` (the others are kept from "
              "reports/mutation.json); a mutant's files "
              "(mutant.v, the Yosys script, the pytest log) stay in "
              "`build/mutation/<family>/<unit>/<id>/` unless it was killed.", ""]
    return "\n".join(lines)


def _dates(f: dict) -> str:
    """When a family's targets were measured (one date, or each target's)."""
    dates = {t.get("date", f.get("date", "")) for t in f["targets"]}
    if len(dates) == 1:
        return dates.pop()
    return "; ".join(f"{t['unit']} {t.get('date', f.get('date', ''))}" for t in f["targets"])


def _cfg(params: dict) -> str:
    return " ".join(f"{k}={'true' if v is True else 'false' if v is False else v}"
                    for k, v in params.items())


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.split("\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=1, help="mutants judged at once")
    ap.add_argument("--family", action="append", choices=list(FAMILIES),
                    help="only these families (repeatable); the others are kept")
    ap.add_argument("--target", action="append", metavar="UNIT",
                    choices=[t.unit for ts in FAMILIES.values() for t in ts],
                    help="only these targets (repeatable); their families' other targets "
                         "are kept")
    ap.add_argument("--work", default=str(ROOT / "build" / "mutation"))
    ap.add_argument("--no-prove", action="store_true", help="skip the equivalence proofs")
    ap.add_argument("--recheck", action="store_true",
                    help="judge again only the survivors (and errors) recorded in "
                         "reports/mutation.json, with the current tests and proofs")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="--recheck: start no proof after this many seconds per family")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite reports/mutation.md from reports/mutation.json")
    args = ap.parse_args(argv)
    old = json.loads(REPORT.with_suffix(".json").read_text()) \
        if REPORT.with_suffix(".json").exists() else {"families": {}}
    if args.render_only:
        write_report(REPORT, render(old))
        return 0
    fams = args.family or list(FAMILIES)
    if args.target:
        if args.recheck:
            ap.error("--target and --recheck: choose one")
        fams = [f for f in fams if any(t.unit in args.target for t in FAMILIES[f])]
        missing = [f for f in fams if f not in old.get("families", {})]
        if missing:
            ap.error(f"--target: {', '.join(missing)} not in reports/mutation.json yet; "
                     f"run the family (--family)")
    work = Path(args.work)
    t0 = time.monotonic()
    data = {"families": dict(old.get("families", {}))}
    history = list(old.get("history", [])) + [
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: scripts/mutation_report.py "
        + " ".join(sys.argv[1:] if argv is None else argv)]
    for fam in fams:
        if args.recheck:
            if fam not in data["families"]:
                print(f"[mutation] {fam}: not in reports/mutation.json; skipped", flush=True)
                continue
            r = recheck_family(data["families"][fam], FAMILIES[fam], work, jobs=args.jobs,
                               prove=not args.no_prove, log=lambda s: print(s, flush=True),
                               budget_s=args.budget_s)
        elif args.target:
            for t in FAMILIES[fam]:
                if t.unit in args.target:
                    shutil.rmtree(work / fam / t.key, ignore_errors=True)
            r = run_family(fam, FAMILIES[fam], work, jobs=args.jobs, prove=not args.no_prove,
                           log=lambda s: print(s, flush=True), only=set(args.target),
                           previous=data["families"][fam])
        else:
            shutil.rmtree(work / fam, ignore_errors=True)
            r = run_family(fam, FAMILIES[fam], work, jobs=args.jobs, prove=not args.no_prove,
                           log=lambda s: print(s, flush=True))
        r["date"] = time.strftime("%Y-%m-%d")
        (work / f"{fam}.json").write_text(json.dumps(r, indent=1))     # this family alone
        data["families"][fam] = r
        print(f"[mutation] {fam}: {r['killed']}/{r['generated']} killed, "
              f"{r['equivalent']} equivalent, {r['survived']} survived, {r['error']} errors, "
              f"kill rate {_rate(r['kill_rate'])}, {r['wall_s']:.0f} s", flush=True)
        data.update(command="python scripts/mutation_report.py" +
                    (f" -j {args.jobs}" if args.jobs != 1 else ""),
                    history=history, jobs=args.jobs, seed=SEED,
                    tools=tool_versions(packages=["amaranth", "cocotb", "numpy"]),
                    wall_s=sum(f["wall_s"] for f in data["families"].values()))
        if REPORT.with_suffix(".json").exists():      # another run may have written families
            disk = json.loads(REPORT.with_suffix(".json").read_text())
            data["families"] = {**disk.get("families", {}), **{
                f: data["families"][f] for f in fams if f in data["families"]}}
            data["history"] = list(dict.fromkeys(disk.get("history", []) + history))
        write_report(REPORT, render(data), data)            # after every family: resumable
    print(f"[mutation] done in {time.monotonic() - t0:.0f} s -> {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
