#!/usr/bin/env python3
"""Generator-level mutation testing -> reports/gen_mutation.md and reports/gen_mutation.json
(``make gen-mutation``; docs/mutation.md, "Generator mutation").

Mutants of the generator's Python source (``hw/*.py``, ``units/*/rtl.py``; tb/gen_mutation.py's
``GEN_TARGETS``) made by Cosmic Ray's operators in a copy of the checkout (``git archive`` of
``--rev`` into ``<work>/tree`` with its own venv: the checkout itself is never touched), each
judged by its file's declared tests (``pytest -x``, a time limit).  Per file: generated, killed,
equivalent (hand-triaged, with the reason), survived, errors, kill rate; every survivor listed
with its diff.

    .venv/bin/python scripts/gen_mutation.py [-n 4] [--target hw/dot.py ...] [--all]

``-n N``: mutants sampled per file (seed ``tb/gen_mutation.SEED``; the sampled run); ``--all``:
every mutant of every file (the full run, hours: ``make gen-mutation GEN_MUTATION=--all``).
``--target``: only those files; the others are kept from the existing report.  ``--recheck``:
judge again only the recorded survivors (after a directed test was added for them).
``--baseline``: only time each target's tests on the unmutated copy.
"""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tb"))

import gen_mutation as gm  # noqa: E402
from tcgen.study import ScriptParser, report_header, tool_versions, write_report  # noqa: E402

REPORT = ROOT / "reports" / "gen_mutation.md"


def _rate(r) -> str:
    return "n/a" if r is None else f"{100 * r:.1f} %"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _later(f: dict) -> int:
    """Mutants of a file that survived the first run and were killed on a recheck."""
    return sum(m["status"] == "killed" and m.get("was") == "survived" for m in f["mutants"])


def render(data: dict) -> str:
    order = [t.path for t in gm.GEN_TARGETS]
    files = [data["files"][p] for p in order if p in data["files"]]
    lines = ["# Generator-level mutation testing", ""]
    lines.append(report_header(data["command"], wall_s=data.get("wall_s"), tools=data["tools"],
                               seed=data.get("seed"),
                               notes=[f"commit {data.get('commit', '?')[:12]}",
                                      f"{data.get('n', '?')} mutants sampled per file"
                                      if not data.get("all") else "every mutant"]))
    lines += ["", "Does a bug in the *Python generator* get noticed?  Each mutant is one file of "
              "the generator's source with one change made by Cosmic Ray's operators (an "
              "operator, comparison, number, boolean or loop changed), in a copy of the "
              "checkout with its own environment (tb/gen_mutation.py, docs/mutation.md); the "
              "file's declared tests run on it (model tests and RTL-against-model runs at "
              "several parameter values; `pytest -x`). *Killed*: a test failed or ran past "
              f"{gm.TIMEOUT_FACTOR:g}× the unmutated run (at least {gm.MIN_TIMEOUT_S:.0f} s). "
              "*Equivalent*: a survivor triaged by hand as one no test can tell from the "
              "original (the reason is listed); it leaves the denominator. *Survived*: every "
              "test passed and no triage says equivalent. Kill rate = killed / (generated − "
              "equivalent − errors). A sample, not every mutant: the rate of a file with 4 "
              "mutants is a coarse figure; the full run is `--all`.", ""]
    tot = {k: sum(f[k] for f in files) for k in
           ("generated", "killed", "equivalent", "survived", "error")}
    denom = tot["generated"] - tot["equivalent"] - tot["error"]
    later = sum(_later(f) for f in files)
    lines.append(f"Overall: **{tot['killed']}/{denom} killed"
                 f" ({_rate(tot['killed'] / denom if denom else None)})**, "
                 f"{tot['equivalent']} equivalent, {tot['survived']} survived, "
                 f"{tot['error']} errors, over {len(files)} files; before the tests added for "
                 f"the survivors {tot['killed'] - later}/{denom} "
                 f"({_rate((tot['killed'] - later) / denom if denom else None)}).")
    missing = [p for p in order if p not in data["files"]]
    if missing:
        lines.append(f"Not sampled yet: {', '.join(f'`{p}`' for p in missing)} (`--target`).")
    lines += ["", "## Per file", "",
              "*Killed first*: by the file's tests as they were when the sample was drawn; "
              "*killed later*: survivors killed by a test added for them (or an existing "
              "test added to the file's selection), rechecked.", "",
              "| file | role | generated | killed first | killed later | equivalent | "
              "survived | errors | kill rate | first-run rate | tests, s | wall, s |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in files:
        d = f["generated"] - f["equivalent"] - f["error"]
        first = f["killed"] - _later(f)
        lines.append(f"| `{f['path']}` | {f['role']} | {f['generated']} | {first} | "
                     f"{_later(f)} | {f['equivalent']} | {f['survived']} | {f['error']} | "
                     f"{_rate(f['kill_rate'])} | {_rate(first / d if d else None)} | "
                     f"{f['original_s']:.0f} | {f['wall_s']:.0f} |")
    lines += ["", "## The tests judging each file", "", "| file | tests (pytest -x) |",
              "|---|---|"]
    for f in files:
        lines.append(f"| `{f['path']}` | " + "<br>".join(f"`{t}`" for t in f["tests"]) + " |")
    lines += ["", "## Equivalent mutants and survivors", ""]
    rows = [m for f in files for m in f["mutants"] if m["status"] in ("survived", "equivalent",
                                                                      "error")]
    if not rows:
        lines.append("None: every mutant was killed.")
    for m in rows:
        lines += [f"### `{m['id']}` -- {m['status']} (`{m['path']}` line {m['line']}, "
                  f"{m['operator'].split('/')[-1]})", "", m["detail"], "", "```diff",
                  m["diff"], "```", ""]
    killed_later = [m for f in files for m in f["mutants"]
                    if m["status"] == "killed" and m.get("was")]
    if killed_later:
        lines += ["## Survivors killed by a test added for them", "",
                  "| mutant | file | line | killed by |", "|---|---|---:|---|"]
        lines += [f"| `{m['id']}` | `{m['path']}` | {m['line']} | {_cell(m['detail'])} |"
                  for m in killed_later]
        lines.append("")
        for m in killed_later:
            lines += [f"`{m['id']}`:", "", "```diff", m["diff"], "```", ""]
    if data.get("history"):
        lines += ["## Runs that made this report", ""] + [f"- {h}" for h in data["history"]]
    lines += ["", "Rerun: `make gen-mutation` (this sample) or `.venv/bin/python "
              "scripts/gen_mutation.py --target <file>` (one file; the others are kept).", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=4, help="mutants sampled per file (default 4)")
    ap.add_argument("--all", action="store_true", help="every mutant of every file (hours)")
    ap.add_argument("--target", action="append", choices=[t.path for t in gm.GEN_TARGETS],
                    help="only these files (repeatable); the others are kept")
    ap.add_argument("--rev", default="HEAD", help="the commit to copy and mutate")
    ap.add_argument("--work", default=str(ROOT / "build" / "gen-mutation"))
    ap.add_argument("--recheck", action="store_true",
                    help="judge again only the recorded survivors, with the current tests")
    ap.add_argument("--baseline", action="store_true",
                    help="only time each target's tests on the unmutated copy")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error(f"-n: at least 1 mutant per file, got {args.n}")
    js = REPORT.with_suffix(".json")
    old = json.loads(js.read_text()) if js.exists() else {"files": {}}
    for f in old.get("files", {}).values():     # ids as tb/gen_mutation.mutant_id names them
        for d in f["mutants"]:
            d["id"] = gm.mutant_id(gm.GenMutant(**d))
    if args.render_only:
        write_report(REPORT, render(old))
        return 0
    work = Path(args.work).resolve()
    t0 = time.monotonic()
    if args.rev == gm.WORKTREE:
        commit = "worktree"
    else:
        r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", args.rev + "^{commit}"],
                           cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            ap.error(f"--rev: {args.rev!r} is not a commit of this repository")
        commit = r.stdout.strip()
    try:
        tree, python = gm.make_copy(work, args.rev)
    except gm.GenMutationError as e:
        print(f"gen_mutation: {e}", file=sys.stderr)
        return 1
    print(f"[gen-mutation] copy of {commit[:12]} in {tree} ({time.monotonic() - t0:.0f} s)",
          flush=True)
    targets = [t for t in gm.GEN_TARGETS if not args.target or t.path in args.target]
    if args.baseline:
        for t in targets:
            secs = gm.baseline(tree, python, t, work / "logs" / t.path.replace("/", "_"))
            print(f"[gen-mutation] {t.path}: {secs:.1f} s", flush=True)
        return 0
    data = {"files": dict(old.get("files", {}))}
    cmd = sys.argv[1:] if argv is None else list(argv)
    history = list(old.get("history", [])) + [
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: scripts/gen_mutation.py "
        + " ".join(cmd) + f" (commit {commit[:12]})"]
    for t in targets:
        if args.recheck:
            r = gm.recheck_target(t, data["files"].get(t.path), tree, python, work,
                                  log=lambda s: print(s, flush=True))
            if r is None:
                continue
        else:
            n = 10 ** 9 if args.all else args.n
            try:
                r = gm.run_target(t, tree, python, work, n=n,
                                  log=lambda s: print(s, flush=True))
            except gm.GenMutationError as e:            # the unmutated copy fails its tests
                print(f"gen_mutation: {e}", file=sys.stderr)
                return 1
        r["date"] = time.strftime("%Y-%m-%d")
        r["commit"] = commit
        data["files"][t.path] = r
        print(f"[gen-mutation] {t.path}: {r['killed']}/{r['generated']} killed, "
              f"{r['equivalent']} equivalent, {r['survived']} survived, {r['error']} errors, "
              f"kill rate {_rate(r['kill_rate'])}, {r['wall_s']:.0f} s", flush=True)
        if js.exists():                       # another run may have written files meanwhile
            disk = json.loads(js.read_text())
            data["files"] = {**disk.get("files", {}), **{
                p: v for p, v in data["files"].items() if p in [x.path for x in targets]}}
        data.update(command="python scripts/gen_mutation.py" + (" --all" if args.all else
                                                                 f" -n {args.n}"),
                    all=args.all, n=args.n, seed=gm.SEED, commit=commit, history=history,
                    tools={**tool_versions(packages=["amaranth", "cocotb", "pytest"]),
                           "cosmic-ray": importlib.metadata.version("cosmic-ray")},
                    wall_s=sum(f["wall_s"] for f in data["files"].values()))
        write_report(REPORT, render(data), data)              # after every file: resumable
    print(f"[gen-mutation] done in {time.monotonic() - t0:.0f} s -> "
          f"{REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
