#!/usr/bin/env python3
"""Every formal proof (``make test`` and ``slow``) -> reports/formal.md
(``make formal``; docs/formal.md).

Runs ``pytest tb/test_formal.py tb/test_formal_seq.py`` with both selections (``-m "slow or not
slow"``) and ``TCGEN_FORMAL_OUT`` set, so that each proof writes its result (verdict, time,
cells, the SAT problem's size, a counterexample) as JSON; the other tests of the file (the FP
references against the model's exhaustive table, the mechanism's own contract) are reported from
pytest's JUnit XML.

    .venv/bin/python scripts/formal_report.py [-j 2] [-k EXPR]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from tcgen.study import ScriptParser, report_header, tool_versions, write_report
from tcgen.synth.formal import METHOD, SOLVER

ROOT = Path(__file__).resolve().parent.parent
KIND_TEXT = {
    "popcount": "popcount (compressor tree) vs a ripple chain of adders",
    "int_mul": "int_mul (Baugh–Wooley, Dadda tree) vs Yosys `$mul`",
    "int_dot": "int_dot (array multipliers + c in one Dadda tree) vs a naive sum of products",
    "lut_dp4": "lut_dp4, INT entries (mux, shift, XOR negation + carry-in, add) vs a naive "
               "multiply-accumulate",
    "bmma": "BMMA datapath (channel, tile of one fold cycle, INT8 MAC channel) vs naive "
            "references",
    "fp_add": "fp_add (FP8; FP16 slow) vs a straightforward implementation (exact integer "
              "sum, one rounding)",
    "fp_mul": "FP8 fp_mul vs a straightforward implementation (exact product, one rounding)",
}


def _config(c: dict) -> str:
    return " ".join(f"{k}={'true' if v is True else 'false' if v is False else v}"
                    for k, v in c.items())


def _cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return text.replace("|", "\\|")


def _cex(r: dict) -> str:
    if r["status"] != "counterexample":
        return ""
    ins = ", ".join(f"{k}={v:#x}" for k, v in sorted(r["inputs"].items()))
    outs = ", ".join(f"{k}: ref {r['gold_outputs'][k]:#x}, RTL {r['gate_outputs'][k]:#x}"
                     for k in sorted(r["gold_outputs"])
                     if r["gold_outputs"][k] != r["gate_outputs"].get(k))
    return f"{ins} → {outs}"


#: expected verdicts of the sequential proofs that are not negative controls ("unproven": a
#: bounded result -- no difference within the depth -- where the induction does not close)
POSITIVE = ("proved", "passed", "unproven")
SECTION_TEXT = {
    "generation": (
        "Generation equivalence: deduplicated == flat Verilog",
        "`tcgen generate` emits each distinct sub-component once and instantiates it "
        "(deduplicated, the default) or elaborates every instance in place (`--flat`). Each "
        "row proves the two texts of one configuration give the same outputs in every cycle, "
        "for every input sequence, from reset (`prove_same_structure`): by register "
        "correspondence — every flip-flop everted into a Q input and a D output, the miter of "
        "outputs and next states structurally hashed (`opt_merge -share_all`) and proved by "
        "SAT, plus equal initial values — or, where the two modes name the registers "
        "differently, by k-induction on the hashed miter (column *method*)."),
    "pipeline": (
        "Pipelined == combinational, delayed",
        "Every unit with a `pipeline` parameter: `pipeline=L` outputs the `pipeline=0` "
        "function of the inputs L cycles earlier, from reset and after any reset "
        "(`prove_pipelined`: a miter with an L-stage delay line on the combinational side; "
        "`sat -tempinduct`, k-induction; depth = the induction length that closed it)."),
    "protocol": (
        "Stream-protocol properties (bounded model checking)",
        "Every sequencing unit, wrapped in `stream_properties` (assumptions: starts in reset; "
        "a stalled input holds valid and payload; where a request field decides whether a "
        "result is emitted, it is set). Control properties by yosys-smtbmc (z3): `stable` (a "
        "stalled output stays valid), `no_spurious` (one-to-one units: never more results "
        "taken than requests; others: no result before a request was offered), `reset_idle` "
        "(no valid output the cycle after reset), `completes` (an accepted request presents a "
        "result within *bound* cycles, the unit's `latency`): bounded, no violation within "
        "*depth* cycles of reset. The payload's stability under a stall (`stable_payload`) "
        "reads the whole datapath and is *proved* for every cycle by k-induction with Yosys's "
        "`sat` (MiniSat), which handles the arithmetic far faster than z3 (*depth*: the "
        "induction length that closed it)."),
}


def _verdict(pr: dict) -> str:
    """The result cell of a sequential proof (a failed check's step and assertions; what a
    negative control is)."""
    r = pr["result"]
    res = r["status"]
    if r["status"] == "failed" and r.get("failed_assertions") is not None:
        res += f" at step {r.get('step')}: {', '.join(r['failed_assertions'])}"
    if pr["expect"] not in POSITIVE:
        res += " — negative control: " + _cell(pr.get("doc") or "")
    return res


def _sequential_sections(recs: list) -> list[str]:
    L = []
    for section, (title, text) in SECTION_TEXT.items():
        rows = [pr for pr in recs if pr.get("section") == section]
        if not rows:
            continue
        rows.sort(key=lambda pr: (pr["expect"] not in POSITIVE, pr["slow"],
                                  pr["kind"]))
        L += ["", f"## {title}", "", text, ""]
        if section == "protocol":
            L += ["| unit | configuration | properties | engine | depth | result | time, s | "
                  "model cells | where |", "|---|---|---|---|---|---|---|---|---|"]
            for pr in rows:
                r = pr["result"]
                L.append(f"| {pr['kind']} | {_config(pr['config'])} | "
                         f"{', '.join(r['properties'])} | {r['solver']} | {r['depth']} | "
                         f"{_verdict(pr)} | {r['seconds']:.2f} | {r['cells']} | "
                         f"{'slow' if pr['slow'] else 'make test'} |")
        else:
            L += ["| unit | configuration | method | result | depth | time, s | cells gold / "
                  "gate | where |", "|---|---|---|---|---|---|---|---|"]
            for pr in rows:
                r = pr["result"]
                method = ("register correspondence" if "correspondence" in r["method"] else
                          "delay-line miter, k-induction" if section == "pipeline" else
                          "k-induction")
                L.append(f"| {pr['kind']} | {_config(pr['config'])} | {method} | {_verdict(pr)} | "
                         f"{r.get('depth') or ''} | {r['seconds']:.2f} | "
                         f"{r['cells'].get('gold')} / {r['cells'].get('gate')} | "
                         f"{'slow' if pr['slow'] else 'make test'} |")
    return L


def main() -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", default="1", help="pytest -n (default 1)")
    ap.add_argument("-k", default=None, help="only the tests pytest -k selects (the report "
                                             "then covers just those)")
    ap.add_argument("--records", default=None, metavar="DIR",
                    help="render the report from the JSON records a run left in DIR (an "
                         "interrupted run's TCGEN_FORMAL_OUT) instead of running pytest; "
                         "the report says so")
    ap.add_argument("--note", default="", help="a sentence for the report's header")
    args = ap.parse_args()
    t0 = time.time()
    if args.records:
        return _render_saved(args)
    with tempfile.TemporaryDirectory(prefix="tcgen-formal-report-") as tmp:
        out = Path(tmp) / "proofs"
        out.mkdir()
        xml = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-n", args.jobs, "-p", "no:cacheprovider",
               "-m", "slow or not slow", f"--junitxml={xml}", "tb/test_formal.py",
               "tb/test_formal_seq.py"]
        if args.k:
            cmd += ["-k", args.k]
        p = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "TCGEN_FORMAL_OUT": str(out)},
                           capture_output=True, text=True)
        wall = time.time() - t0
        proofs = [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))]
        tests = []
        if xml.exists():
            for case in ET.parse(xml).getroot().iter("testcase"):
                kinds = [c.tag for c in case]
                outcome = ("failed" if "failure" in kinds or "error" in kinds else
                           "skipped" if "skipped" in kinds else "passed")
                tests.append({"name": case.get("name"), "time_s": float(case.get("time", 0)),
                              "outcome": outcome})
    return _render(args, proofs, tests, p.returncode, p.stdout + p.stderr, wall)


def _render_saved(args) -> int:
    d = Path(args.records)
    proofs = [json.loads(f.read_text()) for f in sorted(d.glob("*.json"))]
    if not proofs:
        print(f"formal_report: no records in {d}", file=sys.stderr)
        return 2
    tests = [{"name": pr["test"].split("::")[-1], "time_s": pr["result"]["seconds"],
              "outcome": "passed" if pr["result"]["status"] == pr["expect"] or
              (pr["expect"] == "not proved" and pr["result"]["status"] != "proved")
              else "failed"} for pr in proofs]
    wall = sum(pr["result"]["seconds"] for pr in proofs)
    return _render(args, proofs, tests, "not run: rendered from saved records", "", wall)


def _render(args, proofs, tests, returncode, output, wall) -> int:
    outcome = {t["name"]: t["outcome"] for t in tests}
    for pr in proofs:
        pr["outcome"] = outcome.get(pr["test"].split("::")[-1], "unknown")
    sequential = [pr for pr in proofs if pr.get("section", "combinational") != "combinational"]
    proofs = [pr for pr in proofs if pr.get("section", "combinational") == "combinational"]
    proofs.sort(key=lambda pr: (list(KIND_TEXT).index(pr["kind"]) if pr["kind"] in KIND_TEXT
                                else 99, pr["expect"] != "proved", pr["slow"],
                                pr["result"]["seconds"]))
    positive = [pr for pr in proofs if pr["expect"] == "proved"]
    negative = [pr for pr in proofs if pr["expect"] != "proved"]
    others = [t for t in tests if not any(pr["test"].endswith("::" + t["name"])
                                          for pr in proofs + sequential)]
    failed = [t for t in tests if t["outcome"] == "failed"]
    n_proved = sum(pr["result"]["status"] == "proved" for pr in positive)
    n_refuted = sum(pr["result"]["status"] == "counterexample" for pr in negative)

    seq_pos = [pr for pr in sequential if pr["expect"] in POSITIVE]
    seq_ok = sum(pr["result"]["status"] in ("proved", "passed") for pr in seq_pos)
    seq_bounded = sum(pr["result"]["status"] == "unproven" for pr in seq_pos)
    seq_neg = [pr for pr in sequential if pr["expect"] not in POSITIVE]
    seq_caught = sum(pr["result"]["status"] not in ("proved", "passed", "timeout")
                     for pr in seq_neg)
    L = ["# Formal proofs", "",
         report_header("python scripts/formal_report.py" + (f" -j {args.jobs}"
                                                           if args.jobs != "1" else "")
                       + (f" -k '{args.k}'" if args.k else ""), wall_s=wall,
                       notes=["`make formal`"] + ([args.note] if args.note else []),
                       tools=tool_versions(packages=("amaranth", "numpy"))), "",
         "What is proved: each unit below, generated by tcgen at the configuration given, "
         "computes **exactly** what an independent reference computes, **for every input** "
         "(a proof, not a sample). Method (`tcgen.synth.formal`, docs/formal.md): both "
         "designs are elaborated by Yosys (`proc; flatten; memory`; undriven nets and `x` "
         f"constants become free variables), joined in a miter ({METHOD}) and the miter's "
         f"assertion is proved by {SOLVER}: no input makes any output differ. Every unit is "
         "combinational (pipeline 0); the sequential proofs follow in their own sections.", "",
         "The references (`tb/formal_refs/`) are plain behavioural Verilog written from each "
         "unit's specification, none of tcgen's RTL or model: Yosys's own multiplier (`*`), "
         "ripple chains of `+`, naive sums of products. The FP8 references compute the exact "
         "sum or product as an integer and round it once; they are independent of both the RTL "
         "and `tcgen.hw.numeric`, and are checked against the model's exhaustive table (all "
         "2^16 operand pairs, every configuration, as Yosys reads them for the proofs and as "
         "Icarus reads them), so the FP8 proofs tie the RTL to the model on every pair.", "",
         f"Result: **{n_proved} of {len(positive)} combinational proofs proved**; "
         f"{n_refuted} of {len(negative)} negative controls refuted with a counterexample. "
         f"Sequential (generation equivalence, pipelining, stream protocol; sections below): "
         f"**{seq_ok} of {len(seq_pos)} proved or passed**, {seq_bounded} bounded only (no "
         f"difference within the depth, induction not closed), {seq_caught} of {len(seq_neg)} "
         f"negative controls caught. {len(failed)} test(s) failed; pytest exit code "
         f"{returncode}.", ""]
    if failed:
        L += ["**Failures:** " + ", ".join(f"`{t['name']}`" for t in failed), "",
              "```", output[-3000:], "```", ""]

    L += ["## Summary", "",
          "| what | proofs | proved | in `make test` | slow | time, s (sum) | slowest, s |",
          "|---|---|---|---|---|---|---|"]
    by_kind = defaultdict(list)
    for pr in positive:
        by_kind[pr["kind"]].append(pr)
    for kind, prs in by_kind.items():
        secs = [pr["result"]["seconds"] for pr in prs]
        L.append(f"| {KIND_TEXT.get(kind, kind)} | {len(prs)} | "
                 f"{sum(pr['result']['status'] == 'proved' for pr in prs)} | "
                 f"{sum(not pr['slow'] for pr in prs)} | {sum(pr['slow'] for pr in prs)} | "
                 f"{sum(secs):.1f} | {max(secs):.1f} |")
    L += ["", "## Proofs", "",
          "Time: wall seconds of the Yosys run (elaboration, miter and SAT). Cells: Yosys's "
          "word-level cells after flattening (reference / RTL). SAT: variables / clauses of the "
          "problem.", "",
          "| what | configuration | result | time, s | cells ref / RTL | SAT vars / clauses "
          "| where |", "|---|---|---|---|---|---|---|"]
    for pr in positive:
        r = pr["result"]
        L.append(f"| {pr['kind']} | {_config(pr['config'])} | {r['status']} | "
                 f"{r['seconds']:.2f} | {r['cells'].get('gold')} / {r['cells'].get('gate')} | "
                 f"{r['variables']} / {r['clauses']} | "
                 f"{'slow' if pr['slow'] else 'make test'} |")
    L += ["", "## Negative controls", "",
          "Each kind of proof has one: a mutated copy of the RTL (one operator flipped) or a "
          "deliberately wrong reference. The mechanism must report NOT equivalent with a "
          "counterexample, and the test checks the counterexample against a Python "
          "computation (the reference's output is the true value, the RTL's differs).", "",
          "| what | configuration | control | result | counterexample | time, s |",
          "|---|---|---|---|---|---|"]
    for pr in negative:
        r = pr["result"]
        control = (pr.get("doc") or pr["test"].split("::")[-1]).removeprefix("Negative control: ")
        L.append(f"| {pr['kind']} | {_config(pr['config'])} | {_cell(control)} | {r['status']} "
                 f"| {_cex(r)} | {r['seconds']:.2f} |")
    L += _sequential_sections(sequential)
    L += ["", "## Other tests of tb/test_formal.py and tb/test_formal_seq.py", "",
          "| test | outcome | time, s |", "|---|---|---|"]
    for t in others:
        L.append(f"| `{t['name']}` | {t['outcome']} | {t['time_s']:.1f} |")
    L += ["", "## References", ""]
    by_ref = defaultdict(set)
    for pr in positive:
        by_ref[pr["reference"].split(":")[0]].add(pr["kind"])
    for ref, kinds in sorted(by_ref.items()):
        L.append(f"- `{ref}`: {', '.join(sorted(kinds))}")
    L += ["", "Limits (what plain SAT does not prove in minutes) and how to add a proof: "
          "docs/formal.md.", ""]
    write_report(ROOT / "reports" / "formal.md", "\n".join(L),
                 {"pytest_rc": returncode, "wall_s": round(wall, 1), "proofs": proofs,
                  "sequential": sequential,
                  "tests": tests}, strip=ROOT)
    print(f"wrote reports/formal.md: {len(positive)} proofs, {len(negative)} negative "
          f"controls, {len(failed)} failed tests ({wall / 60:.1f} min)")
    return 0 if returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
