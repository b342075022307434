"""The sweep spec: a TOML file naming units, parameter grids, liberties, clock targets, activity
modes, metrics and derived columns; expanded into a deterministic list of :class:`Point`.

::

    [sweep]
    name = "fp_formats"                      # names the output files
    title = "FP multipliers by format"
    liberties = ["osu018"]                   # defaults of every group ...
    clock_ns = [10.0]
    activity = ["vectorless"]                # or {mode = "sim", cycles = 1000, seed = 1}
                                             # (or "sim-timed": with cell delays, glitches)
    synthesis = ["flat"]                     # or "hierarchical" (vectorless only), or both
    metrics = ["synth__area__um2", "power__total__mw"]   # columns shown (default: a standard set)

    [[group]]                                # unit = "*": every registered unit at defaults
    name = "mul"                             # unique; default: the unit name
    unit = "fp_mul"
    label = "fp_mul {fmt} {rounding}"        # row label (str.format over the point's params)
    params = {rounding = "rne"}              # fixed values
    grid = {fmt = ["fp16", "bf16", "fp32"]}  # full product of the axes
    zip = {}                                 # axes stepped together (equal lengths), x grid
    points = [{fmt = "fp8_e4m3", rounding = "rtz"}]   # explicit points (over params), added
    liberties = ["osu018", "nangate45"]      # ... each group may override them (and synthesis)

    [[group.override]]                       # per-point overrides: the first match applies
    where = {fmt = "fp32"}
    liberties = ["osu018"]

    [[derived]]
    name = "area_vs_fp16"
    expr = "synth__area__um2 / ref.synth__area__um2"
    ref = {group = "mul", params = {fmt = "fp16"}}   # same liberty, clock, activity

Everything is checked before anything runs: unknown keys, units, parameters and values, axes
of unequal length, duplicate points, derived expressions that use anything but metric names,
numbers and arithmetic.  An error is one :class:`SpecError` line naming the file and the key.
"""
from __future__ import annotations

import ast
import itertools
import json
import math
import re
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcgen.errors import UsageError
from tcgen.hw.params import ParamError
from tcgen.generate import check_size, estimate
from tcgen.registry import get_unit
from tcgen.study import EXPR_FUNCTIONS, evaluate_expr
from tcgen.synth.noise import MAX_NOISE
from tcgen.synth.ppa import ACTIVITIES, SIM_ACTIVITIES, check_options
from tcgen.synth.tools import FlowInputError
from tcgen.synth.yosys import MAX_FRAIG_CONFLICTS, check_fraig_conflicts

from .metrics import ALL_METRICS, DEFAULT_METRICS, METRICS

__all__ = ["SpecError", "Spec", "Group", "Point", "Activity", "Derived", "Plot", "SYNTHESES",
           "load",
           "derived_names",
           "parse", "evaluate"]


class SpecError(UsageError):
    """A sweep spec that cannot run: one line naming the file, the key and the reason."""


@dataclass(frozen=True)
class Activity:
    """How switching activity is obtained: ``vectorless`` at ``toggle_rate``, or ``sim`` on the
    unit's workload of ``cycles`` cycles from ``seed`` (``simulator``: the gate-level engine)."""
    mode: str = "vectorless"
    toggle_rate: float = 0.1
    cycles: int = 2000
    seed: int = 1
    simulator: str = "auto"

    def as_dict(self) -> dict:
        if self.mode == "vectorless":
            return {"mode": self.mode, "toggle_rate": self.toggle_rate}
        return {"mode": self.mode, "cycles": self.cycles, "seed": self.seed,
                "simulator": self.simulator}

    @property
    def tag(self) -> str:
        return (f"vectorless@{self.toggle_rate:g}" if self.mode == "vectorless"
                else ("simt" if self.mode == "sim-timed" else "sim")
                + f"{self.cycles}s{self.seed}" + (
                    "" if self.simulator == "auto" else f"-{self.simulator}"))


SYNTHESES = ("flat", "hierarchical", "auto")
#: ``synthesis = "auto"``: a point whose unit's size estimate (``UnitSpec.estimate``, cells after
#: flat synthesis) is at most this is synthesized flat, a larger one hierarchically; a point
#: with no estimate (the library's blocks) or with ``sim`` activity is flat.  Flat is exact;
#: hierarchy saves hours on the large datapaths but maps a submodule without its constant
#: inputs (int_dequant at its defaults: 26 cells flat, 681 hierarchical; docs/sweep.md).
AUTO_FLAT_MAX_CELLS = 50_000


@dataclass(frozen=True)
class Point:
    """One measurement: a unit at fully resolved parameters, on one liberty, clock, activity
    and synthesis mode (``flat``, or ``hierarchical``: hierarchy kept, docs/ppa.md).  ``group``
    and ``label`` name it in the outputs; ``index`` is its place in the spec's expansion
    (outputs keep that order)."""
    group: str
    label: str
    unit: str
    params: tuple[tuple[str, Any], ...]
    liberty: str
    clock_ns: float
    activity: Activity
    index: int = 0
    workload: str | None = None          # one of the unit's named workloads (None: default)
    synthesis: str = "flat"
    fraig_conflicts: int | None = None   # ABC's SAT-sweeping conflict limit (None: Yosys's script)
    noise: int = 0                       # perturbed runs of the noise band (0: none)

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def axes(self) -> dict[str, Any]:
        """The params and, when set, the named workload: what ``where`` and ``ref`` match."""
        return {**self.params_dict, **({"workload": self.workload} if self.workload else {})}

    @property
    def ident(self) -> str:
        """What the point is (not how it was reached): unit, params, liberty, clock, activity,
        the named workload (absent for the default one, so older keys stay valid), the
        synthesis mode (absent when flat, likewise) and ABC's fraig conflict limit (absent
        for Yosys's own script, likewise)."""
        d = {"unit": self.unit, "params": self.params_dict, "liberty": self.liberty,
             "clock_ns": self.clock_ns, "activity": self.activity.as_dict()}
        if self.workload is not None:
            d["workload"] = self.workload
        if self.synthesis != "flat":
            d["synthesis"] = self.synthesis
        if self.fraig_conflicts is not None:
            d["fraig_conflicts"] = self.fraig_conflicts
        if self.noise:                  # absent without a noise band, likewise
            d["noise"] = self.noise
        return json.dumps(d, sort_keys=True)

    @property
    def fraig(self) -> str:
        """The fraig conflict limit as the outputs write it: ``default`` or the number."""
        return "default" if self.fraig_conflicts is None else str(self.fraig_conflicts)


@dataclass(frozen=True)
class Derived:
    """A derived column: ``expr`` over this point's metrics, and ``ref.<metric>`` of the
    reference point (``ref_group`` at ``ref_params``, same liberty, clock and activity; with
    ``ref_group == SELF``, the row's own group and params at the ``ref_fraig`` limit)."""
    name: str
    expr: str
    ref_group: str | None = None
    ref_params: tuple[tuple[str, Any], ...] = ()
    doc: str = ""
    groups: tuple[str, ...] = ()        # rows of these groups only (empty: every row)
    ref_match: tuple[str, ...] = ()     # parameters the reference takes from the row
    ref_fraig: tuple[int | None, ...] = ()   # (limit,): the reference at that fraig limit


@dataclass
class Group:
    name: str
    unit: str
    label: str
    points: list[dict[str, Any]] = field(default_factory=list)   # resolved params
    liberties: tuple[str, ...] = ()
    clock_ns: tuple[float, ...] = ()
    activity: tuple[Activity, ...] = ()
    overrides: list[dict[str, Any]] = field(default_factory=list)
    synthesis: tuple[str, ...] = ("flat",)
    fraig_conflicts: tuple[int | None, ...] = (None,)
    noise: int = 0


@dataclass(frozen=True)
class Plot:
    """A figure of the sweep (``<name>.svg``): ``scatter`` of metric ``y`` against metric ``x``
    (one marker per point, ``baseline`` groups drawn hollow, the Pareto front of minimal x and
    y traced when ``pareto``), or ``line``: metric ``y`` against parameter ``x``, one line per
    value of ``series`` (a parameter, ``group``, ``liberty`` or ``activity``).  ``where``
    keeps only the rows whose columns equal the given values."""
    name: str
    kind: str
    x: str
    y: str
    series: str = "group"
    baseline: tuple[str, ...] = ()
    where: tuple[tuple[str, Any], ...] = ()
    title: str = ""
    logx: bool = False
    logy: bool = False
    pareto: bool = False


@dataclass
class Spec:
    name: str
    title: str
    path: Path | None
    groups: list[Group]
    metrics: tuple[str, ...]
    derived: list[Derived]
    points: list[Point]
    raw: dict
    plots: list[Plot] = field(default_factory=list)
    reports: list = field(default_factory=list)        # report.Report

    def point(self, group: str, params: dict, like: Point,
              fraig: tuple[int | None, ...] = ()) -> Point | None:
        """The point of ``group`` whose params include ``params``, on ``like``'s liberty, clock,
        activity, synthesis mode and fraig conflict limit (the reference of a derived column).
        Where the group has several named workloads and ``params`` names none, the one ``like``
        runs.  ``fraig = (limit,)`` takes the reference at that limit instead of ``like``'s (a
        derived column comparing ABC's conflict limits)."""
        limit = fraig[0] if fraig else like.fraig_conflicts
        hits = [p for p in self.points
                if p.group == group and p.liberty == like.liberty and p.clock_ns == like.clock_ns
                and p.activity == like.activity and p.synthesis == like.synthesis
                and p.fraig_conflicts == limit
                and all(p.axes.get(k) == v for k, v in params.items())]
        if len(hits) > 1:
            hits = [p for p in hits if p.workload == like.workload]
        return hits[0] if len(hits) == 1 else None


# -- parsing -------------------------------------------------------------------------------------
_TOP = {"sweep", "group", "derived", "plot", "report"}
_REPORT = {"template", "output", "context"}
_SWEEP = {"name", "title", "liberties", "clock_ns", "activity", "synthesis", "fraig_conflicts",
          "noise", "metrics"}
_GROUP = {"name", "unit", "label", "params", "grid", "zip", "points", "liberties", "clock_ns",
          "activity", "synthesis", "fraig_conflicts", "noise", "override"}
_OVERRIDE = {"where", "liberties", "clock_ns", "activity", "synthesis", "fraig_conflicts",
             "noise", "skip"}
_DERIVED = {"name", "expr", "ref", "doc", "groups"}
_PLOT = {"name", "kind", "x", "y", "series", "baseline", "where", "title", "logx", "logy",
         "pareto"}
PLOT_KINDS = ("scatter", "line")
_ACTIVITY = {"mode", "toggle_rate", "cycles", "seed", "simulator"}
#: what a report's ``context`` may name: a family's module (importing runs its code)
_CONTEXT = re.compile(r"tcgen\.units\.[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+")
#: a spec file larger than this is refused unread (the largest shipped spec is ~10 kB)
MAX_SPEC_BYTES = 1 << 20
#: points one spec may expand to (the largest shipped study has a few hundred); a grid whose
#: product is larger is refused before it is expanded
MAX_POINTS = 10_000
#: a derived expression longer than this is refused (the longest shipped: ~1,200 characters)
MAX_EXPR_CHARS = 10_000


def load(path: str | Path) -> Spec:
    """Read and check the spec at ``path``."""
    shown = str(path)
    if not shown:
        raise SpecError("sweep: the spec's file name is empty")
    path = Path(path)
    try:
        if path.exists() and not path.is_file() and not path.is_dir():   # a FIFO would block
            raise SpecError(f"sweep: spec {shown} is not a regular file")
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(f"sweep: spec {shown} is larger than {MAX_SPEC_BYTES:,} bytes; "
                            "not a sweep spec")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"sweep: cannot read spec {shown}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"sweep: spec {shown} is not UTF-8 text (byte {e.start}); not a sweep "
                        "spec") from None
    except ValueError as e:                      # a NUL in the path
        raise SpecError(f"sweep: cannot read spec {shown!r}: {e}") from None
    try:
        raw = tomllib.loads(text)
    except ValueError as e:            # TOMLDecodeError, or an integer of > 4300 digits
        raise SpecError(f"sweep: {shown}: not valid TOML: {e}") from None
    except RecursionError:
        raise SpecError(f"sweep: {shown}: nested too deeply; not a sweep spec") from None
    return parse(raw, path)


def parse(raw: dict, path: Path | None = None) -> Spec:
    """Check ``raw`` (a parsed TOML document) and expand it into points."""
    where = str(path) if path else "spec"

    def err(key: str, msg: str) -> SpecError:
        return SpecError(f"sweep: {where}: {key}: {msg}")

    _keys(raw, _TOP, "", err)
    sw = raw.get("sweep")
    if not isinstance(sw, dict):
        raise err("[sweep]", "missing (name, liberties, clock_ns, activity, ...)")
    _keys(sw, _SWEEP, "sweep.", err)
    name = sw.get("name") or (path.stem if path else "")
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise err("sweep.name", f"{name!r}: letters, digits, '-' and '_' only")
    if not isinstance(sw.get("title", name), str):
        raise err("sweep.title", "must be a string")
    libs = _libs(sw.get("liberties", ["osu018"]), "sweep.liberties", err)
    clocks = _clocks(sw.get("clock_ns", [10.0]), "sweep.clock_ns", err)
    acts = _activities(sw.get("activity", ["vectorless"]), "sweep.activity", err)
    synths = _syntheses(sw.get("synthesis", ["flat"]), "sweep.synthesis", err)
    fraigs = _fraigs(sw.get("fraig_conflicts", ["default"]), "sweep.fraig_conflicts", err)
    noise = _noise(sw.get("noise", 0), "sweep.noise", err)
    metrics = sw.get("metrics", DEFAULT_METRICS)
    if not isinstance(metrics, (list, tuple)) or not all(isinstance(m, str) for m in metrics):
        raise err("sweep.metrics", "a list of metric names (docs/sweep.md)")
    metrics = tuple(metrics)
    for m in metrics:
        if m not in ALL_METRICS:
            raise err("sweep.metrics", f"unknown metric {m!r} (docs/sweep.md lists them)")

    groups_raw = raw.get("group")
    if not isinstance(groups_raw, list) or not groups_raw:
        raise err("[[group]]", "a sweep needs at least one group")
    groups: list[Group] = []
    for gi, g in enumerate(groups_raw):
        if isinstance(g, dict) and g.get("unit") == "*":        # every registered unit
            bad = sorted(set(g) & {"name", "label", "params", "grid", "zip", "points"})
            if bad:
                raise err(f"group[{gi}].{bad[0]}", "unit = \"*\" measures every unit at its "
                          "defaults (no name, label, params, grid, zip, points)")
            from tcgen.registry import all_units
            per_unit = _unit_overrides(g, gi, err)
            for u in all_units():
                ov = per_unit.get(u.name, {})
                if ov.get("skip"):
                    continue
                gu = {k: v for k, v in g.items() if k != "override"}
                gu.update({k: v for k, v in ov.items() if k != "skip"}, unit=u.name)
                groups.append(_group(gu, gi, libs, clocks, acts, synths, fraigs, err, noise))
            continue
        groups.append(_group(g, gi, libs, clocks, acts, synths, fraigs, err, noise))
    names = [g.name for g in groups]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise err("group.name", f"{', '.join(dup)} named twice (give each group a name)")

    points: list[Point] = []
    seen: dict[str, str] = {}
    for g in groups:
        for params in g.points:
            libs_p, clocks_p, acts_p, skip = g.liberties, g.clock_ns, g.activity, False
            synths_p, fraigs_p, noise_p = g.synthesis, g.fraig_conflicts, g.noise
            for ov in g.overrides:
                if all(params.get(k) == v for k, v in ov["where"].items()):
                    libs_p = ov.get("liberties", libs_p)
                    clocks_p = ov.get("clock_ns", clocks_p)
                    acts_p = ov.get("activity", acts_p)
                    synths_p = ov.get("synthesis", synths_p)
                    fraigs_p = ov.get("fraig_conflicts", fraigs_p)
                    noise_p = ov.get("noise", noise_p)
                    skip = ov.get("skip", False)
                    break
            if skip:
                continue
            label = _label(g, params, err)
            auto = (_auto_synthesis(get_unit(g.unit), params) if "auto" in synths_p
                    else None)            # the estimate's choice, once per point
            combos = dict.fromkeys(       # "auto" resolved; ["flat", "auto"] may meet twice
                (lib, clk, act, ("flat" if act.mode in SIM_ACTIVITIES else auto)
                 if syn == "auto"
                 else syn)
                for lib, clk, act, syn in itertools.product(libs_p, clocks_p, acts_p, synths_p))
            for (lib, clk, act, syn), fc in itertools.product(combos, fraigs_p):
                p = Point(g.name, label, g.unit,
                          tuple(sorted((k, v) for k, v in params.items() if k != "workload")),
                          lib, clk, act, len(points), params.get("workload"), syn, fc, noise_p)
                if p.ident in seen:
                    raise err(f"group {g.name}", f"point {label} ({lib}, {clk:g} ns, "
                              f"{act.tag}, {syn}, fraig {p.fraig}) also comes from group "
                              f"{seen[p.ident]}")
                seen[p.ident] = g.name
                points.append(p)
                if len(points) > MAX_POINTS:
                    raise err(f"group {g.name}", f"the spec expands to more than "
                              f"{MAX_POINTS:,} points (parameters x liberties x clocks x "
                              "activities x syntheses x fraig limits); split it into several "
                              "specs")

    derived = [_derived(d, i, groups, metrics, err) for i, d in
               enumerate(_array(raw, "derived", "derived", err))]
    _check_pieces(derived, err)
    plots = [_plot(d, i, groups, derived, points, err)
             for i, d in enumerate(_array(raw, "plot", "plot", err))]
    pn = [p.name for p in plots]
    if len(set(pn)) != len(pn):
        raise err("plot.name", "plot names must be unique")
    reports = [_report(d, i, path, err)
               for i, d in enumerate(_array(raw, "report", "report", err))]
    outs = [r.output for r in reports]
    if len(set(outs)) != len(outs):
        raise err("report.output", "two reports write the same file")
    return Spec(name, sw.get("title", name), path, groups, metrics, derived, points, raw, plots,
                reports)


def _report(d, i, path: Path | None, err):
    from .report import Report, check
    key = f"report[{i}]"
    _keys(d, _REPORT, key + ".", err)
    t, out, ctx = d.get("template"), d.get("output"), d.get("context")
    if not isinstance(t, str) or not t:
        raise err(key + ".template", "a template file name (beside the spec)")
    if not isinstance(out, str) or not out or Path(out).name != out:
        raise err(key + ".output", f"{out!r}: a file name (written into the output folder)")
    if ctx is not None and not (isinstance(ctx, str) and _CONTEXT.fullmatch(ctx)):
        raise err(key + ".context", f"{ctx!r}: a family's module, tcgen.units.<family>.<module> "
                  "(a spec names no other code)")
    rep = Report((path.parent if path else Path.cwd()) / t, out, ctx)
    check(rep, err, key)
    return rep


def _column(p: Point, k: str):
    """Point ``p``'s value in output column ``k`` (what a plot's ``where`` compares)."""
    return {"group": p.group, "liberty": p.liberty, "activity": p.activity.tag,
            "clock_ns": p.clock_ns, "unit": p.unit,
            "synthesis": p.synthesis, "fraig_conflicts": p.fraig}.get(k, p.axes.get(k))


def _plot(d, i, groups, derived, points, err) -> Plot:
    key = f"plot[{i}]"
    _keys(d, _PLOT, key + ".", err)
    name = d.get("name")
    if not isinstance(name, str) or not name.replace("-", "_").isidentifier():
        raise err(key + ".name", f"{name!r}: letters, digits, '-' and '_' only")
    kind = d.get("kind", "scatter")
    if kind not in PLOT_KINDS:
        raise err(f"plot {name}.kind", f"{kind!r} (one of {', '.join(PLOT_KINDS)})")
    values = set(ALL_METRICS) | {x.name for x in derived}
    params = {k for g in groups for k in _axis_names(get_unit(g.unit))}
    columns = params | {"group", "liberty", "activity", "clock_ns", "unit", "synthesis",
                        "fraig_conflicts"}
    x, y = d.get("x"), d.get("y")
    for k, v in (("x", x), ("y", y), ("series", d.get("series", "group")),
                 ("title", d.get("title", ""))):
        if not isinstance(v, str):
            raise err(f"plot {name}.{k}", f"{v!r} is not a name")
    if y not in values:
        raise err(f"plot {name}.y", f"{y!r} is not a metric or derived column")
    if kind == "scatter" and x not in values:
        raise err(f"plot {name}.x", f"{x!r} is not a metric or derived column")
    if kind == "line" and x not in params | {"clock_ns"}:
        raise err(f"plot {name}.x", f"{x!r} is not a parameter of the sweep's units")
    series = d.get("series", "group")
    if series not in columns:
        raise err(f"plot {name}.series", f"{series!r} is not a parameter or group, liberty, "
                  f"activity, clock_ns, unit, synthesis, fraig_conflicts")
    base = tuple(_listify(d.get("baseline", [])))
    for b in base:
        if not isinstance(b, str) or b not in {g.name for g in groups}:
            raise err(f"plot {name}.baseline", f"no group {b!r}")
    where = d.get("where", {})
    if not isinstance(where, dict) or set(where) - columns:
        raise err(f"plot {name}.where", "a table of column = value (parameters, group, "
                  "liberty, activity, clock_ns, unit, synthesis, fraig_conflicts)")
    if where and not any(all(_text(_column(p, k)) == _text(v) for k, v in where.items())
                         for p in points):
        raise err(f"plot {name}.where", f"{where} matches no point (activity is written as "
                  f"in the table: " + ", ".join(sorted({p.activity.tag for p in points})) + ")")
    for flag in ("logx", "logy", "pareto"):
        if not isinstance(d.get(flag, False), bool):
            raise err(f"plot {name}.{flag}", "true or false")
    return Plot(name, kind, x, y, series, base, tuple(sorted(where.items())),
                d.get("title", ""), d.get("logx", False), d.get("logy", False),
                d.get("pareto", False))


def _keys(d: dict, allowed: set, prefix: str, err):
    if not isinstance(d, dict):
        raise err(prefix.rstrip(".") or "spec", "must be a table")
    extra = sorted(set(d) - allowed)
    if extra:
        raise err(prefix + extra[0], f"unknown key (known: {', '.join(sorted(allowed))})")


def _listify(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _array(d: dict, k: str, key: str, err) -> list:
    """``d[k]``, an array of tables (``[[k]]``; absent: empty)."""
    v = d.get(k, [])
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise err(key, "must be an array of tables ([[...]] or [{...}, ...])")
    return v


def _libs(v, key, err) -> tuple[str, ...]:
    from tcgen.synth.liberty import LibertyError, resolve
    out = []
    for x in _listify(v):
        if not isinstance(x, str):
            raise err(key, f"{x!r} is not a liberty name or path")
        try:
            resolve(x)
        except (LibertyError, OSError) as e:
            raise err(key, str(e)) from None
        out.append(x)
    if not out:
        raise err(key, "empty")
    return tuple(dict.fromkeys(out))


def _clocks(v, key, err) -> tuple[float, ...]:
    out = []
    for x in _listify(v):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x <= 1e6:
            raise err(key, f"{x!r} is not a positive, finite clock period in ns (at most 1e6)")
        out.append(float(x))
    if not out:
        raise err(key, "empty")
    return tuple(dict.fromkeys(out))


def _auto_synthesis(unit, params: dict) -> str:
    """What ``synthesis = "auto"`` is for a point of vectorless activity
    (:data:`AUTO_FLAT_MAX_CELLS`; with ``sim`` activity it is flat)."""
    p = unit.make_params({k: _text(v) for k, v in params.items() if k != "workload"})
    cells = estimate(unit, p, ports=False).cells
    return "flat" if cells is None or cells <= AUTO_FLAT_MAX_CELLS else "hierarchical"


def _syntheses(v, key, err) -> tuple[str, ...]:
    """``flat``, ``hierarchical`` and/or ``auto`` (a name or a list of names)."""
    out = []
    for x in _listify(v):
        if x not in SYNTHESES:
            raise err(key, f"{x!r} (one of {', '.join(SYNTHESES)})")
        out.append(x)
    if not out:
        raise err(key, "empty")
    return tuple(dict.fromkeys(out))


def _fraigs(v, key, err) -> tuple[int | None, ...]:
    """ABC's fraig conflict limits: ``"default"`` (Yosys's own ABC script) and/or integers in
    1..1,000,000 (a value or a list)."""
    out = []
    for x in _listify(v):
        if x == "default":
            out.append(None)
            continue
        try:
            out.append(check_fraig_conflicts(x))
        except ValueError:
            raise err(key, f"{x!r} (\"default\" or an integer in "
                      f"1..{MAX_FRAIG_CONFLICTS:,})") from None
    if not out:
        raise err(key, "empty")
    return tuple(dict.fromkeys(out))


def _noise(v, key, err) -> int:
    """The number of perturbed runs of each point's noise band: an integer 0..MAX_NOISE (0:
    no band; docs/sweep.md)."""
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_NOISE:
        raise err(key, f"{v!r} (an integer in 0..{MAX_NOISE}: the perturbed runs of each "
                  "point's noise band)")
    return v


def _activities(v, key, err) -> tuple[Activity, ...]:
    from tcgen.synth.activity import SIMULATORS, choose_simulator
    out = []
    for x in _listify(v):
        if isinstance(x, str):
            x = {"mode": x}
        if not isinstance(x, dict):
            raise err(key, f"{x!r}: a mode name or a table {{mode = ..., ...}}")
        _keys(x, _ACTIVITY, key + ".", err)
        mode = x.get("mode", "vectorless")
        if mode not in ACTIVITIES:
            raise err(key, f"mode {mode!r} (one of {', '.join(ACTIVITIES)})")
        a = Activity(mode=mode, toggle_rate=x.get("toggle_rate", 0.1),
                     cycles=x.get("cycles", 2000), seed=x.get("seed", 1),
                     simulator=x.get("simulator", "auto"))
        if isinstance(a.toggle_rate, bool) or not isinstance(a.toggle_rate, (int, float)) \
                or not 0 < a.toggle_rate <= 1:
            raise err(key, f"toggle_rate {a.toggle_rate!r} is not in (0, 1]")
        if not isinstance(a.simulator, str):
            raise err(key, f"simulator {a.simulator!r} is not a name")
        if isinstance(a.cycles, bool) or not isinstance(a.cycles, int) or a.cycles < 1:
            raise err(key, f"cycles {a.cycles!r} is not a positive integer")
        if isinstance(a.seed, bool) or not isinstance(a.seed, int):
            raise err(key, f"seed {a.seed!r} is not an integer")
        if a.simulator not in SIMULATORS:
            raise err(key, f"simulator {a.simulator!r} (one of {', '.join(SIMULATORS)})")
        try:                               # the flow's own bounds (cycles 16..10^6, seed >= 0)
            check_options(10.0, mode, a.toggle_rate, a.cycles, a.seed)
        except FlowInputError as e:
            raise err(key, str(e)) from None
        if mode != "vectorless" and a.simulator != "icarus":
            # what the simulator choice needs of no liberty (sim-timed on Verilator, which
            # simulates no delays; Verilator's version) is refused here, with ppa's words;
            # Icarus's cell models are the liberty's, so that choice is judged per point
            try:
                choose_simulator(a.simulator, None, timed=mode == "sim-timed")
            except FlowInputError as e:
                raise err(key, str(e)) from None
        if mode == "vectorless":           # what does not apply is not part of the point
            a = Activity(mode, toggle_rate=float(a.toggle_rate))
        else:
            a = Activity(mode, cycles=a.cycles, seed=a.seed, simulator=a.simulator)
        out.append(a)
    if not out:
        raise err(key, "empty")
    return tuple(dict.fromkeys(out))


def _matching(points: list[dict], where: dict) -> list[dict]:
    """The resolved points whose parameters equal ``where``'s values (compared as the CLI
    spells them, so 8 and "8", true and "true" agree)."""
    return [p for p in points if all(k in p and _text(p[k]) == _text(v) for k, v in where.items())]


def _axis_names(unit) -> list[str]:
    """What a group of ``unit`` may set: its parameters, and ``workload`` if it has named
    workloads."""
    return list(unit.params().as_dict()) + (["workload"] if unit.workloads else [])


def _resolve(unit, values: dict, key: str, err) -> dict:
    """The unit's full parameter dict for ``values`` (checked by the unit's own Params), with
    ``workload`` when one is named (checked against the unit's named workloads)."""
    values = dict(values)
    wl = values.pop("workload", None)
    try:
        p = unit.make_params({k: _text(v) for k, v in values.items()})
        if wl is not None:
            if not isinstance(wl, str):
                raise ParamError(f"workload {wl!r} is not a name")
            unit.named_workload(wl, p)
        check_size(unit, p, ports=False)  # too large to build: refused here, before any work
    except ParamError as e:
        raise err(key, str(e)) from None
    return {**p.as_dict(), **({"workload": wl} if wl is not None else {})}


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    try:
        return str(v)
    except ValueError:                   # an int of more digits than Python will print
        return f"<int of {v.bit_length()} bits>"


def _group(g, gi, libs, clocks, acts, synths, fraigs, err, noise=0) -> Group:
    key = f"group[{gi}]"
    _keys(g, _GROUP, key + ".", err)
    uname = g.get("unit")
    if not isinstance(uname, str):
        raise err(key + ".unit", "missing (a unit name: tcgen list)")
    try:
        unit = get_unit(uname)
    except UsageError as e:
        raise err(key + ".unit", str(e)) from None
    name = g.get("name", uname)
    if not isinstance(name, str) or not name:
        raise err(key + ".name", f"{name!r} is not a group name")
    key = f"group {name}"
    if not isinstance(g.get("label", ""), str):
        raise err(key + ".label", "must be a string (str.format over the parameters)")
    if "label" in g and not g["label"].strip():
        raise err(key + ".label", "must not be empty (it names the group's rows in the reports)")
    _check_label(g.get("label", ""), key + ".label", err)
    fixed = g.get("params", {})
    grid = g.get("grid", {})
    zipped = g.get("zip", {})
    for k, d in (("params", fixed), ("grid", grid), ("zip", zipped)):
        if not isinstance(d, dict):
            raise err(f"{key}.{k}", "must be a table of parameter = value(s)")
    for k, d in (("grid", grid), ("zip", zipped)):
        for ax, vals in d.items():
            if not isinstance(vals, list) or not vals:
                raise err(f"{key}.{k}.{ax}", "must be a non-empty list of values")
    both = (set(fixed) & set(grid)) | (set(fixed) & set(zipped)) | (set(grid) & set(zipped))
    if both:
        raise err(key, f"parameter {sorted(both)[0]} is given twice (params/grid/zip)")
    lens = {len(v) for v in zipped.values()}
    if len(lens) > 1:
        raise err(f"{key}.zip", f"axes of unequal length ({sorted(lens)})")
    n_grid = math.prod(len(v) for v in grid.values()) * (len(next(iter(zipped.values())))
                                                          if zipped else 1)
    if n_grid > MAX_POINTS:
        raise err(f"{key}.grid", f"the grid has {n_grid:,} points; a spec may have at most "
                  f"{MAX_POINTS:,} (split the study into several specs)")
    combos: list[dict] = []
    if grid or zipped or not g.get("points"):
        gk = list(grid)
        zrows = [dict(zip(zipped, vs)) for vs in zip(*zipped.values())] if zipped else [{}]
        for gv in itertools.product(*(grid[k] for k in gk)):
            for z in zrows:
                combos.append({**fixed, **dict(zip(gk, gv)), **z})
    for i, p in enumerate(_array(g, "points", f"{key}.points", err)):
        if not isinstance(p, dict):
            raise err(f"{key}.points[{i}]", "must be a table of parameter = value")
        combos.append({**fixed, **p})
    resolved, seen = [], set()
    for i, c in enumerate(combos):
        r = _resolve(unit, c, f"{key} point {c}", err)
        ident = json.dumps(r, sort_keys=True)
        if ident not in seen:
            seen.add(ident)
            resolved.append(r)
    overrides = []
    for i, ov in enumerate(_array(g, "override", f"{key}.override", err)):
        k = f"{key}.override[{i}]"
        _keys(ov, _OVERRIDE, k + ".", err)
        w = ov.get("where")
        if not isinstance(w, dict) or not w:
            raise err(k + ".where", "a table of parameter = value to match")
        bad = sorted(set(w) - set(_axis_names(unit)))
        if bad:
            raise err(k + ".where", f"{unit.name} has no parameter {bad[0]}")
        hits = _matching(resolved, w)
        if not hits:
            raise err(k + ".where", f"{w} matches no point of the group")
        o = {"where": {kk: hits[0][kk] for kk in w}}
        if "liberties" in ov:
            o["liberties"] = _libs(ov["liberties"], k + ".liberties", err)
        if "clock_ns" in ov:
            o["clock_ns"] = _clocks(ov["clock_ns"], k + ".clock_ns", err)
        if "activity" in ov:
            o["activity"] = _activities(ov["activity"], k + ".activity", err)
        if "synthesis" in ov:
            o["synthesis"] = _syntheses(ov["synthesis"], k + ".synthesis", err)
        if "fraig_conflicts" in ov:
            o["fraig_conflicts"] = _fraigs(ov["fraig_conflicts"], k + ".fraig_conflicts", err)
        if "noise" in ov:
            o["noise"] = _noise(ov["noise"], k + ".noise", err)
        if "skip" in ov:
            if not isinstance(ov["skip"], bool):
                raise err(k + ".skip", "true or false")
            o["skip"] = ov["skip"]
        overrides.append(o)
    label = g.get("label", name + "".join(f" {k}={{{k}}}" for k in list(grid) + list(zipped)))
    grp = Group(name, unit.name, label, resolved,
                _libs(g["liberties"], key + ".liberties", err) if "liberties" in g else libs,
                _clocks(g["clock_ns"], key + ".clock_ns", err) if "clock_ns" in g else clocks,
                _activities(g["activity"], key + ".activity", err) if "activity" in g else acts,
                overrides,
                _syntheses(g["synthesis"], key + ".synthesis", err) if "synthesis" in g
                else synths,
                _fraigs(g["fraig_conflicts"], key + ".fraig_conflicts", err)
                if "fraig_conflicts" in g else fraigs,
                _noise(g["noise"], key + ".noise", err) if "noise" in g else noise)
    for p in resolved:
        _label(grp, p, err)
    return grp


def _unit_overrides(g: dict, gi: int, err) -> dict[str, dict]:
    """A ``unit = "*"`` group's overrides: each names one unit (``where = {unit = "name"}``)
    and sets that unit's liberties, clock_ns, activity, synthesis, fraig_conflicts or skip."""
    out: dict[str, dict] = {}
    for i, ov in enumerate(_array(g, "override", f"group[{gi}].override", err)):
        k = f"group[{gi}].override[{i}]"
        _keys(ov, _OVERRIDE, k + ".", err)
        w = ov.get("where")
        if not isinstance(w, dict) or set(w) != {"unit"} or not isinstance(w["unit"], str):
            raise err(k + ".where", 'with unit = "*", a table {unit = "<name>"} naming one '
                      "registered unit (tcgen list)")
        try:
            name = get_unit(w["unit"]).name
        except UsageError as e:
            raise err(k + ".where", str(e)) from None
        if name in out:
            raise err(k + ".where", f"unit {name} has two overrides")
        if "skip" in ov and not isinstance(ov["skip"], bool):
            raise err(k + ".skip", "true or false")
        for kk, check in (("liberties", _libs), ("clock_ns", _clocks),
                          ("activity", _activities), ("synthesis", _syntheses),
                          ("fraig_conflicts", _fraigs), ("noise", _noise)):
            if kk in ov:                # checked here, so an error names this override
                check(ov[kk], f"{k}.{kk}", err)
        out[name] = {kk: v for kk, v in ov.items() if kk != "where"}
    return out


def _check_label(label: str, key: str, err):
    """A label is text with ``{param}`` fields and short format specs (``{k:>4}``): no
    attribute or index reads, no nested fields, no width over 999 (``{m:99999999}`` would build
    a 100 MB string per point)."""
    try:
        pieces = list(string.Formatter().parse(label))
    except ValueError as e:
        raise err(key, f"{label!r}: {e}") from None
    for _, field_name, spec, conv in pieces:
        if field_name is None:
            continue
        if not field_name.isidentifier() or "{" in (spec or "") or \
                re.search(r"[0-9]{4,}", spec or "") or conv not in (None, "s", "r"):
            raise err(key, f"{label!r}: fields are {{parameter}} or {{parameter:spec}} with a "
                      f"short spec (got {{{field_name}{'!' + conv if conv else ''}"
                      f"{':' + spec if spec else ''}}})")


def _label(g: Group, params: dict, err) -> str:
    try:
        return g.label.format(**params)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as e:
        raise err(f"group {g.name}.label", f"{g.label!r}: {type(e).__name__} {e} (fields "
                  f"are the parameters of {g.unit})") from None


# -- derived columns -----------------------------------------------------------------------------
_OPS = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow,
        ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Attribute, ast.Load, ast.Call)
FUNCTIONS = EXPR_FUNCTIONS


def names_in(expr: str) -> tuple[set[str], set[str]]:
    """(metrics of the point, metrics of ``ref``) that ``expr`` reads."""
    own, ref = set(), set()
    for node in ast.walk(ast.parse(expr, mode="eval")):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "ref":
            ref.add(node.attr)
        elif isinstance(node, ast.Name) and node.id not in ("ref", *FUNCTIONS):
            own.add(node.id)
    return own, ref


def _derived(d, i, groups, metrics, err) -> Derived:
    key = f"derived[{i}]"
    _keys(d, _DERIVED, key + ".", err)
    name, expr = d.get("name"), d.get("expr")
    if not isinstance(name, str) or not name.isidentifier():
        raise err(key + ".name", f"{name!r} is not a column name (letters, digits, _)")
    if not isinstance(expr, str):
        raise err(key + ".expr", "missing (an arithmetic expression over metric names)")
    if len(expr) > MAX_EXPR_CHARS:
        raise err(f"derived {name}.expr", f"longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise err(f"derived {name}.expr", f"{expr!r}: {e.msg}") from None
    except (RecursionError, ValueError, MemoryError):
        raise err(f"derived {name}.expr", f"{expr!r}: not an expression (nested too deeply)") \
            from None
    for node in ast.walk(tree):
        if not isinstance(node, _OPS):
            raise err(f"derived {name}.expr", f"{expr!r}: only numbers, metric names, "
                      f"ref.<metric>, + - * / ** and {', '.join(FUNCTIONS)}() are allowed")
        if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name)
                                                    and node.value.id == "ref"):
            raise err(f"derived {name}.expr", f"{expr!r}: only numbers, metric names, "
                      f"ref.<metric>, + - * / ** and {', '.join(FUNCTIONS)}() are allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in FUNCTIONS):
            raise err(f"derived {name}.expr", f"{expr!r}: unknown function")
        if isinstance(node, ast.Call):
            n_args = len(node.args)
            if node.keywords or (node.func.id == "abs" and n_args != 1) or \
                    (node.func.id != "abs" and n_args < 2):
                raise err(f"derived {name}.expr", f"{expr!r}: abs(x), min(x, y, ...), "
                          f"max(x, y, ...)")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise err(f"derived {name}.expr", f"{expr!r}: {node.value!r} is not a number")
    own, refm = names_in(expr)
    for m in own | refm:
        if m not in ALL_METRICS:
            raise err(f"derived {name}.expr", f"unknown metric {m!r}")
    ref = d.get("ref")
    if refm and ref is None:
        raise err(f"derived {name}.ref", "the expression reads ref.* but names no reference")
    rg, rp, rmatch, rfraig = None, (), (), ()
    if ref is not None:
        if not isinstance(ref, dict) or set(ref) - {"group", "params", "match",
                                                    "fraig_conflicts"}:
            raise err(f"derived {name}.ref", "a table {group = ..., params = {...}, "
                      "match = [...], fraig_conflicts = ...}")
        if "fraig_conflicts" in ref:
            if isinstance(ref["fraig_conflicts"], list):
                raise err(f"derived {name}.ref.fraig_conflicts", "one limit, not a list")
            rfraig = _fraigs(ref["fraig_conflicts"], f"derived {name}.ref.fraig_conflicts",
                             err)
            scope = [g for g in groups if ref.get("group") in (None, g.name)]
            if scope and not any(rfraig[0] in g.fraig_conflicts
                                 or any(rfraig[0] in o.get("fraig_conflicts", ())
                                        for o in g.overrides) for g in scope):
                where = "the sweep" if "group" not in ref else f"group {ref['group']}"
                raise err(f"derived {name}.ref.fraig_conflicts",
                          f"no point of {where} runs at {ref['fraig_conflicts']!r}")
            if "group" not in ref:      # the row itself at another limit
                if set(ref) != {"fraig_conflicts"}:
                    raise err(f"derived {name}.ref", "without group, a reference is the row "
                              "itself at another fraig_conflicts (no params, no match)")
                return _finish_derived(d, name, expr, SELF, (), (), rfraig, groups, err)
        elif "group" not in ref:
            raise err(f"derived {name}.ref.group", "missing (or give fraig_conflicts: the "
                      "row itself at that limit)")
        rg = ref.get("group")
        match = [g for g in groups if g.name == rg]
        if not match:
            raise err(f"derived {name}.ref.group", f"no group {rg!r}")
        rp_d = ref.get("params", {})
        if not isinstance(rp_d, dict):
            raise err(f"derived {name}.ref.params", "a table of parameter = value")
        unit = get_unit(match[0].unit)
        bad = sorted(set(rp_d) - set(_axis_names(unit)))
        if bad:
            raise err(f"derived {name}.ref.params", f"{unit.name} has no parameter {bad[0]}")
        rm = ref.get("match", [])
        if not isinstance(rm, list) or not all(isinstance(x, str) for x in rm):
            raise err(f"derived {name}.ref.match", "a list of parameter names")
        bad = sorted(set(rm) - set(_axis_names(unit)))
        if bad:
            raise err(f"derived {name}.ref.match", f"{unit.name} has no parameter {bad[0]}")
        hits = _matching(match[0].points, rp_d)
        if rm:            # the reference is found per row (its matched params); checked there
            hits = [{k: v for k, v in hits[0].items() if k in rp_d}] if hits else []
        # several named workloads of one configuration: the row's own workload is the reference
        keep = set(rp_d) | {k for k in (hits[0] if hits else {}) if k != "workload"}
        distinct = {json.dumps({k: v for k, v in h.items() if k in keep}, sort_keys=True)
                    for h in hits}
        if len(distinct) != 1:
            raise err(f"derived {name}.ref", f"group {rg} has {len(distinct)} points with "
                      f"{rp_d} (the reference must name exactly one)")
        rp = tuple(sorted((k, v) for k, v in hits[0].items() if k in keep))
        rmatch = tuple(rm)
    return _finish_derived(d, name, expr, rg, rp, rmatch, rfraig, groups, err)


#: ``Derived.ref_group`` of a reference that is the row itself (at another fraig limit): the
#: empty name, which no group can have
SELF = ""


def _finish_derived(d, name, expr, rg, rp, rmatch, rfraig, groups, err) -> Derived:
    only = tuple(_listify(d.get("groups", [])))
    for gname in only:
        if not isinstance(gname, str) or gname not in {g.name for g in groups}:
            raise err(f"derived {name}.groups", f"no group {gname!r}")
    if not isinstance(d.get("doc", ""), str):
        raise err(f"derived {name}.doc", "must be a string")
    return Derived(name, expr, rg, rp, d.get("doc", ""), only, rmatch, rfraig)


def _check_pieces(derived: list[Derived], err):
    """Derived names are unique and not metric names -- except that one column may be defined
    piecewise: several ``[[derived]]`` of the same name, each restricted to its own ``groups``
    (non-empty and disjoint), e.g. the area of each LUT group over the baseline of its own
    activation format."""
    by_name: dict[str, list[Derived]] = {}
    for d in derived:
        if d.name in ALL_METRICS:
            raise err(f"derived {d.name}.name", "a metric of that name exists")
        by_name.setdefault(d.name, []).append(d)
    for name, pieces in by_name.items():
        if len(pieces) == 1:
            continue
        if any(not d.groups for d in pieces):
            raise err(f"derived {name}.groups", "a column defined by several [[derived]] of "
                      "one name needs groups = [...] in each (disjoint)")
        seen: dict[str, int] = {}
        for i, d in enumerate(pieces):
            for g in d.groups:
                if g in seen:
                    raise err(f"derived {name}.groups", f"group {g!r} is in two pieces of "
                              "the column (the groups of the pieces must be disjoint)")
                seen[g] = i


def derived_names(derived: list[Derived]) -> list[str]:
    """The derived columns, each once (a piecewise column once, where it first appears)."""
    return list(dict.fromkeys(d.name for d in derived))


def evaluate(expr: str, own: dict, ref: dict | None) -> float | None:
    """``expr`` over the metric values ``own`` and ``ref``; None when a value is missing (or a
    division by zero): a derived column never invents a number."""
    return evaluate_expr(expr, {**own, "ref": ref})
