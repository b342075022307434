"""Write a sweep's results: CSV and JSON (flat metric keys), a markdown table, and the plots the
spec asks for (matplotlib, SVG).  Every file says how it was made: the command, the date, the
liberties, the tool versions and the flow choices that change conclusions.
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from tcgen.hw.files import write_all
from tcgen.study import json_text, liberty_text, report_header, shown_path, today, tool_versions
from tcgen.synth.liberty import resolve

from .engine import SweepResult, params_of
from .metrics import METRICS, NOISE_METRICS
from .spec import SELF, _text, derived_names
from .report import render

__all__ = ["write_outputs", "planned_outputs", "FLOW_NOTES", "columns", "plot_svg",
           "pareto_front"]

#: flow choices that change conclusions, stated in every output
FLOW_NOTES = (
    "Synthesis: Yosys `synth -flatten`, ABC mapping with the flow's default script "
    "(tcgen.synth.yosys); ABC's buffering option alone moves delay by 10–32 % and flips the "
    "pacq_mul/fp_mul delay ratio from 0.88 to 1.02 in an independent re-run, so compare "
    "delays only within one flow setting. Timing: OpenSTA on the mapped netlist, no wire load "
    "beyond the liberty's default, no placement. Power: OpenSTA at the activity mode shown per "
    "row (vectorless: every input at the toggle rate; sim: the unit's workload through the "
    "gate-level netlist, zero-delay; sim-timed: the same with the cells' delays from OpenSTA, "
    "glitches counted).",
)


HIERARCHICAL_NOTE = (
    "Synthesis `hierarchical` (rows marked so): Yosys `synth` with hierarchy kept, each "
    "distinct module mapped once, area = the sum over the instance tree; no optimisation "
    "across module boundaries, so area, delay and power lie a few % above a flat synthesis "
    "of the same design (docs/ppa.md, 'Hierarchical synthesis'); OpenSTA on the hierarchical "
    "netlist. Compare hierarchical rows with hierarchical rows.")


FRAIG_NOTE = (
    "ABC `fraig_conflicts` (rows marked so): Yosys's own ABC script with the conflict limit of "
    "its SAT sweeping set, `&fraig -x -C N` (tcgen.synth.yosys.abc_script); `default` is "
    "Yosys's script unchanged (ABC's limit, 1,000,000). The limit leaves merges it cannot "
    "prove undone, so the netlist stays correct, but the mapping differs: at 1000, 20 of 25 "
    "units measured identical figures, the others -2.3 % to +6.1 % in area, delay or power "
    "(reports/abc_fraig.md; docs/ppa.md, 'ABC's SAT sweeping'). Compare rows of one limit.")


NOISE_NOTE = (
    "Noise band (columns `<metric>_min` / `_median` / `_max` / `_spread`, rows with `noise` "
    "N > 0): each point measured N + 1 times, unperturbed and under N semantically neutral "
    "perturbations of its Verilog text or ABC script (module order, an unused module "
    "prepended, declaration order, ABC's &fraig conflict limit; tcgen.synth.noise). The plain "
    "columns are the unperturbed run's. A difference between two designs smaller than their "
    "bands is within the flow's noise (docs/ppa.md, 'Noise').")


def _noise(result: SweepResult) -> bool:
    return any(p.noise for p in result.spec.points)


def _hierarchical(result: SweepResult) -> bool:
    return any(p.synthesis != "flat" for p in result.spec.points)


def _fraig(result: SweepResult) -> bool:
    return any(p.fraig_conflicts is not None for p in result.spec.points)


def _notes(result: SweepResult) -> tuple[str, ...]:
    return (FLOW_NOTES + ((HIERARCHICAL_NOTE,) if _hierarchical(result) else ())
            + ((FRAIG_NOTE,) if _fraig(result) else ())
            + ((NOISE_NOTE,) if _noise(result) else ()))


def columns(result: SweepResult) -> list[str]:
    """The CSV/JSON columns: identity, parameters, every metric, the derived columns (and
    ``synthesis`` when a point is synthesized hierarchically, ``fraig_conflicts`` when a point
    sets ABC's conflict limit; ``noise`` and the band columns when a point has a noise band)."""
    nz = _noise(result)
    return (["group", "label", "unit"] + params_of(result.spec)
            + ["liberty", "clock_ns", "activity"]
            + (["synthesis"] if _hierarchical(result) else [])
            + (["fraig_conflicts"] if _fraig(result) else [])
            + (["noise"] if nz else []) + ["status", "error"]
            + list(METRICS) + (list(NOISE_METRICS) if nz else [])
            + derived_names(result.spec.derived) + ["key"])


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        a = abs(v)
        return f"{v:.4g}" if a and (a < 0.01 or a >= 1e5) else f"{v:,.3f}".rstrip("0").rstrip(".")
    return str(v)


def _header(result: SweepResult, command: str) -> str:
    libs = sorted({r["liberty"] for r in result.rows})
    return report_header(command, wall_s=result.wall_s, compute_min=result.compute_s / 60,
                         liberties=[resolve(x).describe() for x in libs],
                         tools=tool_versions(packages=("amaranth",)))


def _markdown(result: SweepResult, command: str) -> str:
    spec = result.spec
    L = [f"# {spec.title}", "", _header(result, command), ""]
    for note in _notes(result):
        L += [note, ""]
    c = result.counts
    L += [f"{len(result.rows)} points: {c.get('done', 0)} measured this run, "
          f"{c.get('cached', 0)} from the cache, {c.get('failed', 0)} failed.", ""]
    shown = list(spec.metrics) + derived_names(spec.derived)
    hier, fraig, nz = _hierarchical(result), _fraig(result), _noise(result)
    L += ["| point | liberty | clock ns | activity | " + ("synthesis | " if hier else "")
          + ("fraig | " if fraig else "") + ("noise | " if nz else "")
          + " | ".join(shown) + " |",
          "|---|---|---:|---|" + ("---|" if hier else "") + ("---:|" if fraig else "")
          + ("---:|" if nz else "") + "---:|" * len(shown)]
    for r in result.rows:
        if r["status"] != "ok":
            cells = [f"failed: {r['error']}"] + [""] * (len(shown) - 1)
        else:
            cells = [_fmt(r.get(k)) for k in shown]
        L.append(f"| {r['label']} | {r['liberty']} | {r['clock_ns']:g} | {r['activity']} | "
                 + (f"{r['synthesis']} | " if hier else "")
                 + (f"{r['fraig_conflicts']} | " if fraig else "")
                 + (f"{r['noise']} | " if nz else "") + " | ".join(cells) + " |")
    if spec.derived:
        L += ["", "Derived columns:"]
        for d in spec.derived:
            at = "" if not d.ref_fraig else \
                f", fraig_conflicts {'default' if d.ref_fraig[0] is None else d.ref_fraig[0]}"
            ref = "" if d.ref_group is None else \
                f" (ref: the row itself{at})" if d.ref_group == SELF else \
                f" (ref: group {d.ref_group} at {dict(d.ref_params)}, same liberty, clock, " \
                f"activity{at})"
            only = f" [groups {', '.join(d.groups)}]" if d.groups else ""
            L.append(f"- `{d.name}`{only} = `{d.expr}`{ref}{' — ' + d.doc if d.doc else ''}")
    return "\n".join(L) + "\n"


def _provenance(result: SweepResult, command: str) -> dict:
    libs = sorted({r["liberty"] for r in result.rows})
    return {"command": command, "date": today(),
            "tools": tool_versions(packages=("amaranth", "numpy")),
            "liberties": [dict(d, path=shown_path(d.get("path")))
                          for d in (resolve(x).describe() for x in libs)],
            "flow_notes": list(_notes(result))}


def planned_outputs(spec, out: str | Path) -> list[Path]:
    """The files :func:`write_outputs` writes for ``spec`` into ``out`` (checked before the
    sweep runs: a name that is a folder there refuses the sweep, not its end)."""
    out = Path(out)
    return ([out / f"{spec.name}.{ext}" for ext in ("csv", "json", "md")]
            + [out / f"{spec.name}-{pl.name}.svg" for pl in spec.plots]
            + [out / rep.output for rep in spec.reports])


def write_outputs(result: SweepResult, out: str | Path, command: str) -> list[Path]:
    """``<out>/<name>.csv``, ``.json``, ``.md`` and one SVG per plot of the spec.  Everything
    is rendered first and then written as one (:func:`tcgen.hw.files.write_all`): a failure
    leaves the previous outputs as they were, none of them replaced.  Returns the paths."""
    out = Path(out)
    name = result.spec.name
    cols = columns(result)
    prov = _provenance(result, command)
    buf = io.StringIO()
    # provenance as leading comment lines (pandas: read_csv(path, comment="#"))
    buf.write(f"# {command} | {prov['date']} | "
              + "; ".join(liberty_text(x) for x in prov["liberties"]) + "\n")
    buf.write("# tools: " + ", ".join(f"{k} {v}" for k, v in sorted(prov["tools"].items()))
              + "\n")
    for note in _notes(result):
        buf.write(f"# {note}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in result.rows:
        w.writerow([_fmt_csv(r.get(k)) for k in cols])
    meta = {**prov, "spec": result.spec.raw,
            "metrics": {k: v[0] for k, v in METRICS.items()}
            | ({k: v[0] for k, v in NOISE_METRICS.items()} if _noise(result) else {}),
            "counts": result.counts, "wall_s": round(result.wall_s, 1),
            "compute_s": round(result.compute_s, 1),
            "rows": [{k: r.get(k) for k in cols} for r in result.rows]}
    plots = [(out / f"{name}-{pl.name}.svg", plot_svg(result, pl, command, prov))
             for pl in result.spec.plots]
    md = _markdown(result, command) + "".join(
        f"\n![{pl.title or pl.name}]({path.name})\n"
        for pl, (path, _) in zip(result.spec.plots, plots))
    reports = [(out / rep.output, render(rep, result.rows, header=_header(result, command),
                                         flow_notes=_notes(result)))
               for rep in result.spec.reports]
    paths = [out / f"{name}.csv", out / f"{name}.json", out / f"{name}.md"]
    files = [(paths[0], buf.getvalue()), (paths[1], json_text(meta, strip=Path.cwd())),
             (paths[2], md), *plots, *reports]
    out.mkdir(parents=True, exist_ok=True)
    return write_all(files)            # all of them or none (a full disk: the old ones stay)


def _label(key: str) -> str:
    m = METRICS.get(key) or NOISE_METRICS.get(key)
    return f"{key}  ({m[0]})" if m else key


def pareto_front(pts: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points not dominated in (x, y), both to be minimized, sorted by x."""
    front, best = [], math.inf
    for x, y in sorted(pts):
        if y < best:
            front.append((x, y))
            best = y
    return front


def plot_svg(result: SweepResult, pl, command: str, prov: dict | None = None) -> str:
    """One plot of the spec as SVG text: the same rows and date give the same bytes (no
    timestamp in the metadata, fixed ids); the title says the command, liberties and date, a
    footer the tool versions and the flow caveat."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    where = dict(pl.where)
    rows = [r for r in result.rows if r["status"] == "ok"
            and all(r.get(k) == v or _text(r.get(k)) == _text(v) for k, v in where.items())
            and r.get(pl.y) is not None and r.get(pl.x) is not None]
    with matplotlib.rc_context({"svg.hashsalt": "tcgen", "svg.fonttype": "none",
                                "font.size": 8}):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        series: dict = {}
        for r in rows:
            series.setdefault(r.get(pl.series), []).append(r)
        markers = "osD^v<>ph*"
        for i, (sv, rs) in enumerate(series.items()):
            rs = sorted(rs, key=lambda r: (r[pl.x], r["label"]))
            xs, ys = [r[pl.x] for r in rs], [r[pl.y] for r in rs]
            base = pl.kind == "scatter" and all(r["group"] in pl.baseline for r in rs)
            style = dict(marker=markers[i % len(markers)], label=f"{pl.series}={sv}"
                         + (" (baseline)" if base else ""))
            if pl.kind == "line":
                ax.plot(xs, ys, **style)
            else:
                ax.scatter(xs, ys, facecolors="none" if base else None,
                           edgecolors=f"C{i}", color=f"C{i}", **style)
                for r in rs:
                    ax.annotate(r["label"], (r[pl.x], r[pl.y]), fontsize=5,
                                xytext=(3, 3), textcoords="offset points")
        if pl.pareto and rows:
            front = pareto_front([(r[pl.x], r[pl.y]) for r in rows])
            ax.step([f[0] for f in front], [f[1] for f in front], where="post", color="0.4",
                    linestyle="--", linewidth=0.8, label="Pareto front")
        ax.set_xlabel(_label(pl.x))
        ax.set_ylabel(_label(pl.y))
        if pl.logx:
            ax.set_xscale("log")
        if pl.logy:
            ax.set_yscale("log")
        libs = ", ".join(sorted({r["liberty"] for r in rows}))
        ax.set_title((pl.title or pl.name) + f"\n{libs} · {command} · {today()}", fontsize=7)
        ax.grid(True, linewidth=0.3)
        tools = (prov or {}).get("tools") or {}
        fig.text(0.01, 0.005, "tools: " + ", ".join(f"{k} {v}" for k, v in sorted(tools.items()))
                 + ". Delays depend on ABC's mapping/buffering options (docs/sweep.md).",
                 fontsize=4, color="0.35", wrap=True)
        if series:
            ax.legend(fontsize=6)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "tcgen"})
        plt.close(fig)
    return buf.getvalue()


def _fmt_csv(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return v
