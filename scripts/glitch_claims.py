"""Which of the ledger's energy verdicts move once glitches count (issue 43 §1).

    .venv/bin/python scripts/glitch_claims.py [--claims ID,ID,...] [--libs osu018,nangate45]
        [--cycles 2000] [--max-cells 50000] [-j 2] [--out reports/glitch_claims.md]

For every energy claim of the ledger (a claim judged on a sweep whose value or views read
power, energy or throughput per watt), the claim's own sweep spec (studies/<sweep>.toml) is
re-run on the groups the claim reads, with its activity replaced by the unit's workload in
gate-level simulation twice -- zero-delay (``sim``) and timed (``sim-timed``, every transition
with OpenSTA's cell delays, IEEE default pulse limits) -- on flat netlists.  Each claim's
value expression is then evaluated by the ledger's own code (:func:`tcgen.claims.judge`) on
both, and the criterion applied to each: a verdict *moves* where it holds on one and not on
the other.  The judged verdicts in reports/claims.md are not touched: they stay on the
activity each claim pre-registered (``judge_on``); this report is the question "what if the
claim were judged with zero-delay / timed activity".

Groups whose design is estimated over ``--max-cells`` (flat synthesis of hours) are left out,
and the claims that need them are listed as not run.  Bad arguments: one line on stderr,
exit 2, nothing written.
"""
from __future__ import annotations

import json
import re
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from tcgen.claims import Claim, judge, load                          # noqa: E402
from tcgen.registry import get_unit                                   # noqa: E402
from tcgen.errors import UsageError                                   # noqa: E402
from tcgen.study import (ScriptParser, check_run, report_header,       # noqa: E402
                         tool_versions, write_report)
from tcgen.sweep import parse, run, write_outputs                     # noqa: E402
from tcgen.sweep.spec import SpecError                                # noqa: E402

ENERGY = re.compile(r"energy|power|tpw|per_w|watt", re.I)
CYCLES = 2000


def activities(cycles: int) -> list[dict]:
    return [{"mode": "sim", "cycles": cycles, "seed": 1},
            {"mode": "sim-timed", "cycles": cycles, "seed": 1}]
BUILD = ROOT / "build" / "glitch_claims"


def energy_claims(claims: list[Claim]) -> list[Claim]:
    """The claims judged on a sweep whose value, views or margin read an energy figure
    (directly or through a derived column whose name or expression does)."""
    out = []
    for c in claims:
        if c.source != "sweep" or c.status in ("pending", "untestable"):
            continue
        exprs = [c.value, *c.views.values(), c.margin or ""]
        names = set(re.findall(r"\b\w+\.(\w+)", " ".join(exprs)))
        derived = _derived(c.sweep)
        text = " ".join(exprs) + " " + " ".join(derived.get(n, "") for n in names)
        if ENERGY.search(text):
            out.append(c)
    return out


def _derived(sweep: str) -> dict[str, str]:
    path = ROOT / "studies" / f"{sweep}.toml"
    if not path.is_file():
        return {}
    raw = tomllib.loads(path.read_text())
    return {d["name"]: d.get("expr", "") for d in raw.get("derived", [])}


def timed_spec(sweep: str, claims: list[Claim], libs: list[str], max_cells: int,
               cycles: int = CYCLES) -> tuple[dict, list[str]]:
    """The claim sweep's spec with only the groups the claims read, activity sim and
    sim-timed, flat synthesis, on ``libs``; and the groups left out (too large)."""
    raw = tomllib.loads((ROOT / "studies" / f"{sweep}.toml").read_text())
    want = {w.get("group") for c in claims for w in c.rows.values()}
    derived = raw.get("derived", [])
    # the reference group of a derived column a claim reads is needed too
    used = {n for c in claims
            for n in re.findall(r"\b\w+\.(\w+)", " ".join([c.value, *c.views.values(),
                                                             c.margin or ""]))}
    want |= {d.get("ref", {}).get("group") for d in derived
             if d.get("ref") and d["name"] in used}
    want.discard(None)
    groups, dropped = [], []
    for g in raw.get("group", []):
        name = g.get("name", g.get("unit"))
        if name not in want:
            continue
        est = _largest_estimate(g)
        if est is not None and est > max_cells:
            dropped.append(f"{name} (~{est:,} cells)")
            continue
        g = {k: v for k, v in g.items() if k not in ("activity", "synthesis", "liberties")}
        if "override" in g:
            g["override"] = [{k: v for k, v in o.items()
                              if k not in ("activity", "synthesis", "liberties")}
                             for o in g["override"]]
            g["override"] = [o for o in g["override"] if set(o) - {"where"}]
            if not g["override"]:
                del g["override"]
        groups.append(g)
    sw = dict(raw["sweep"], activity=activities(cycles), synthesis="flat", liberties=libs)
    sw.pop("noise", None)
    keep = {g.get("name", g.get("unit")) for g in groups}
    derived = [d for d in derived
               if (not d.get("ref") or d["ref"].get("group") in keep)
               and (not d.get("groups") or set(d["groups"]) & keep)]
    derived = [dict(d, groups=[x for x in d["groups"] if x in keep]) if d.get("groups") else d
               for d in derived]
    out = {"sweep": sw, "group": groups}
    if derived:
        out["derived"] = derived
    for k in ("plot", "report"):
        raw.pop(k, None)
    return out, dropped


def _largest_estimate(g: dict) -> int | None:
    """The largest size estimate over a group's explicit parameter sets (None: unknown)."""
    unit = get_unit(g["unit"])
    sets = [dict(g.get("params", {}))]
    for axis in ("grid", "zip"):
        for k, vals in (g.get(axis) or {}).items():
            sets = [dict(s, **{k: v}) for s in sets for v in vals]
    sets += [dict(g.get("params", {}), **p) for p in g.get("points", [])]
    best = None
    for s in sets:
        s = {k: v for k, v in s.items() if k != "workload"}
        try:
            e = unit.estimate_cells(unit.make_params({k: str(v).lower() if isinstance(v, bool)
                                                      else str(v) for k, v in s.items()}))
        except Exception:                          # noqa: BLE001 -- an estimate is advisory
            e = None
        if e is not None:
            best = e if best is None else max(best, e)
    return best


def main(argv=None) -> int:
    ap = ScriptParser(prog="glitch_claims", description=__doc__.splitlines()[0])
    ap.add_argument("--claims", default="", help="claim ids, comma-separated (default: every "
                                                 "energy claim)")
    ap.add_argument("--libs", default="osu018,nangate45")
    ap.add_argument("--max-cells", type=int, default=50_000)
    ap.add_argument("--cycles", type=int, default=CYCLES,
                    help="simulated cycles of each design's workload (both activities)")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "glitch_claims.md")
    args = ap.parse_args(argv)
    try:
        every = load(ROOT / "claims")
        chosen = energy_claims(every)
        if args.claims.strip():
            ids = list(dict.fromkeys(x.strip() for x in args.claims.split(",") if x.strip()))
            if not ids:
                raise UsageError(f"glitch_claims: --claims names no claim: {args.claims!r}")
            known = {c.id: c for c in every}
            bad = [i for i in ids if i not in known]
            if bad:
                raise UsageError(f"glitch_claims: no claim {bad[0]!r} in claims/")
            energy = {c.id for c in chosen}
            bad = [i for i in ids if i not in energy]
            if bad:
                raise UsageError(f"glitch_claims: {bad[0]} is not an energy claim judged on a "
                                 f"sweep (leave --claims out for every one of the "
                                 f"{len(energy)})")
            chosen = [known[i] for i in ids]
        libs = list(dict.fromkeys(x.strip() for x in args.libs.split(",") if x.strip()))
        bad = [x for x in libs if x not in ("osu018", "nangate45", "sky130hd")]
        if bad or not libs:
            raise UsageError(f"glitch_claims: --libs takes osu018, nangate45, sky130hd, got "
                             f"{args.libs!r}")
        if args.jobs < 1 or args.max_cells < 1:
            raise UsageError("glitch_claims: --jobs and --max-cells must be positive")
        check_run("glitch_claims", args.out, option="--cycles", cycles=args.cycles)
    except (UsageError, ValueError) as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    t0 = time.monotonic()
    results = BUILD / "results"
    results.mkdir(parents=True, exist_ok=True)
    by_sweep: dict[str, list[Claim]] = {}
    for c in chosen:
        by_sweep.setdefault(c.sweep, []).append(c)
    dropped: dict[str, list[str]] = {}
    commands = []
    specs = []
    for sweep, cs in sorted(by_sweep.items()):
        raw, dropped[sweep] = timed_spec(sweep, cs, libs, args.max_cells, args.cycles)
        if not raw["group"]:                 # every group over --max-cells: listed, not run
            continue
        path = BUILD / f"{sweep}.spec.json"
        try:
            specs.append((sweep, parse(raw, path), raw, path))
        except SpecError as e:
            print(f"glitch_claims: {sweep}: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
    for sweep, spec, raw, path in specs:       # every spec checked before any is measured
        path.write_text(json.dumps(raw, indent=1))          # provenance: the spec as run
        res = run(spec, jobs=args.jobs)
        cmd = f"scripts/glitch_claims.py (studies/{sweep}.toml, activity sim + sim-timed)"
        write_outputs(res, results, cmd)
        commands.append(cmd)
    ran = {sweep for sweep, *_ in specs}       # a sweep not run this time is never read back
    judged = {c.id: c for c in judge([c for c in chosen if c.sweep in ran], results, noise={})}
    rows = []
    for c in (judged.get(c.id, c) for c in chosen):
        for lib in libs:
            z = next((x for x in c.cells if x.label == f"{lib} sim{args.cycles}s1"), None)
            t = next((x for x in c.cells if x.label == f"{lib} simt{args.cycles}s1"), None)
            rows.append({"id": c.id, "lib": lib, "criterion": _criterion(c),
                         "zero": None if z is None else z.value,
                         "zero_ok": None if z is None or z.value is None else z.ok,
                         "timed": None if t is None else t.value,
                         "timed_ok": None if t is None or t.value is None else t.ok,
                         "fmt": c.fmt})
    header = report_header(" ".join(["python scripts/glitch_claims.py"] + (argv or sys.argv[1:])),
                           wall_s=time.monotonic() - t0, liberties=libs,
                           tools=tool_versions(packages=["amaranth", "numpy"]),
                           notes=["each claim's sweep re-run on the groups it reads, activity "
                                  f"sim and sim-timed ({args.cycles:,} cycles, seed 1), flat "
                                  "synthesis with the sweep's own ABC script"])
    write_report(args.out, render(rows, dropped, header), {"rows": rows, "dropped": dropped})
    print(f"glitch_claims: wrote {args.out}")
    return 0


def _criterion(c: Claim) -> str:
    from tcgen.claims import criterion
    return criterion(c)


def render(rows: list[dict], dropped: dict, header: str) -> str:
    out = ["# The ledger's energy claims with glitches counted", "", header, "",
           "Each claim's value evaluated by the ledger's code on the same designs measured "
           "twice: zero-delay activity (`sim`) and timed (`sim-timed`, glitches counted). "
           "*moves* = the criterion holds on one and not on the other. The ledger's judged "
           "verdicts (reports/claims.md) stay on the activity each claim pre-registered.", "",
           "| claim | liberty | criterion | zero-delay | holds | timed | holds | moves |",
           "|---|---|---|---:|---|---:|---|---|"]
    for r in rows:
        def f(v):
            return "—" if v is None else r["fmt"].format(v)

        def ok(v):
            return "—" if v is None else ("yes" if v else "no")
        moves = ("—" if r["zero_ok"] is None or r["timed_ok"] is None
                 else ("**moves**" if r["zero_ok"] != r["timed_ok"] else "no"))
        out.append(f"| {r['id']} | {r['lib']} | {r['criterion']} | {f(r['zero'])} | "
                   f"{ok(r['zero_ok'])} | {f(r['timed'])} | {ok(r['timed_ok'])} | {moves} |")
    left = [f"{s}: {', '.join(d)}" for s, d in dropped.items() if d]
    if left:
        out += ["", "Groups not run (flat synthesis over the size limit): " + "; ".join(left)
                + ". The claims reading them show — ."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
