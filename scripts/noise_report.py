"""The flow's own noise (issue 39 §2): studies/noise.toml measured by the sweep engine (each
point with ``noise = 8``: the unperturbed run and 8 neutral perturbations, tcgen.synth.noise),
written as reports/noise.md and reports/noise.json.

    .venv/bin/python scripts/noise_report.py [-j 2] [--spec studies/noise.toml] [--out reports]

reports/noise.json is what the claims ledger reads (tcgen.claims.load_noise): ``{"command",
"date", "tools", "flow", "rows": [{"unit", "params", "liberty", "n", "area_min",
"area_median", "area_max", "delay_min", ... "energy_max", ...}]}`` with area in µm², delay
(the critical path) in ns, power in mW, energy per op in pJ (null where a figure does not
apply), plus each row's unperturbed values, relative spreads and every perturbed run.
The points are cached by the sweep (build/sweep/) and the flow (build/ppa/): a rerun with
nothing changed rewrites the report from the caches in seconds.
"""
from __future__ import annotations

import sys
from pathlib import Path

import json

from tcgen.study import ScriptParser, compute_min, report_header, tool_versions, today, write_json
from tcgen.sweep import load, run
from tcgen.synth.liberty import BUILD, resolve

# report figure -> (the flow's band field, unit, format)
FIGURES = {"area": ("area_um2", "µm²", "{:,.0f}"), "delay": ("crit_path_ns", "ns", "{:.3f}"),
           "power": ("power_mw", "mW", "{:.4g}"), "energy": ("energy_pj_per_op", "pJ/op",
                                                             "{:.4g}")}


def _params(spec, row) -> str:
    """The group's fixed parameters as ``k=v`` (the spec's own, not the defaults)."""
    raw = next(g for g in spec.raw["group"] if g.get("name", g["unit"]) == row["group"])
    p = raw.get("params", {})
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in p.items()) or "defaults"


def _row(spec, r) -> dict:
    res = r["_result"]
    nz = res["noise"]
    out = {"unit": r["unit"], "params": _params(spec, r), "label": r["label"],
           "liberty": r["liberty"], "clock_ns": r["clock_ns"], "activity": r["activity"],
           "n": nz["runs"], "distinct_designs": nz["distinct"],
           # how many different figures the runs gave (the unperturbed one included)
           "distinct_results": len({(p["area_um2"], p["crit_path_ns"], p["power_mw"])
                                    for p in nz["perturbations"]} |
                                   {tuple(nz["band"][f]["unperturbed"] for f in
                                          ("area_um2", "crit_path_ns", "power_mw"))})}
    for name, (field, _, _) in FIGURES.items():
        b = nz["band"][field]
        for stat in ("min", "median", "max"):
            out[f"{name}_{stat}"] = b[stat]
        out[f"{name}_unperturbed"] = b["unperturbed"]
        out[f"{name}_spread"] = b["spread"]
    out["perturbations"] = [
        {"index": p["index"], "kind": p["kind"], "seed": p["seed"], "what": p["what"],
         "area": p["area_um2"], "delay": p["crit_path_ns"], "power": p["power_mw"],
         "energy": p["energy_pj_per_op"]} for p in nz["perturbations"]]
    return out


def _fmt(v, f) -> str:
    return "–" if v is None else f.format(v)


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f} %"


def markdown(rows: list[dict], header: str, flow: str) -> str:
    L = ["# The flow's own noise", "", header, "", flow, "",
         "Each design is measured unperturbed and under 8 semantically neutral perturbations "
         "(docs/ppa.md, \"Noise\": module order, an unused module prepended, declaration "
         "order, ABC's `&fraig` conflict limit; `tcgen.synth.noise`). min / median / max are "
         "over the 9 runs; the spread is (max − min) / median. A difference between two "
         "designs smaller than the sum of their spreads is within the flow's noise.", ""]
    L += ["| design | liberty | runs | area µm² min / median / max | spread | "
          "crit. path ns min / median / max | spread | power mW min / median / max | spread | "
          "energy pJ/op min / median / max | spread |",
          "|---|---|---:|---|---:|---|---:|---|---:|---|---:|"]
    for r in rows:
        cells = []
        for name, (_, _, f) in FIGURES.items():
            cells.append(" / ".join(_fmt(r[f"{name}_{s}"], f) for s in ("min", "median", "max")))
            cells.append(_pct(r[f"{name}_spread"]))
        L.append(f"| {r['label']} | {r['liberty']} | {r['n']} ({r['distinct_designs']} "
                 f"inputs, {r['distinct_results']} results) | " + " | ".join(cells) + " |")
    # what moves what: each perturbation kind's largest deviation from the unperturbed run
    kinds: dict[str, dict[str, float]] = {}
    for r in rows:
        for p in r["perturbations"][1:]:
            k = kinds.setdefault(p["kind"], {"runs": 0, "moved": 0})
            k["runs"] += 1
            moved = False
            for name in ("area", "delay", "energy"):
                base, v = r[f"{name}_unperturbed"], p[name]
                if base and v is not None:
                    d = (v - base) / base
                    k[name] = max(k.get(name, 0.0), abs(d))
                    moved |= abs(d) > 1e-9
            k["moved"] += moved
    L += ["", "Largest deviation from the unperturbed run, by kind of perturbation (every "
          "design and liberty above):", "",
          "| perturbation | runs | runs that moved a figure | area | crit. path | energy |",
          "|---|---:|---:|---:|---:|---:|"]
    for kind, k in kinds.items():
        L.append(f"| {kind} | {k['runs']} | {k['moved']} | {_pct(k.get('area'))} | "
                 f"{_pct(k.get('delay'))} | {_pct(k.get('energy'))} |")
    L += ["", "Every run's figures are in reports/noise.json (`perturbations`)."]
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--spec", default="studies/noise.toml")
    ap.add_argument("--out", default="reports")
    a = ap.parse_args(argv)
    spec = load(a.spec)
    res = run(spec, jobs=a.jobs)
    bad = [r for r in res.rows if r["status"] != "ok"]
    if bad:
        for r in bad:
            print(f"noise_report: {r['label']} {r['liberty']}: {r['error']}", file=sys.stderr)
        return 1
    rows = [_row(spec, r) for r in res.rows]
    command = "python scripts/noise_report.py" + (f" -j {a.jobs}" if a.jobs != 1 else "") + \
        ("" if a.spec == "studies/noise.toml" else f" --spec {a.spec}")
    pts = spec.points
    flow = (f"Flow options: flat synthesis (Yosys `synth -flatten`, ABC with the flow's "
            f"script and buffering), clock {', '.join(sorted({f'{p.clock_ns:g}' for p in pts}))} "
            f"ns, activity {', '.join(sorted({p.activity.tag for p in pts}))}, "
            f"{max(p.noise for p in pts)} perturbations per design; spec {a.spec}.")
    tools = tool_versions(packages=("amaranth",))
    # every run of every band (the sweep's own count holds the unperturbed runs only)
    runs = []
    for r in res.rows:
        for p in r["_result"]["noise"]["perturbations"]:
            try:
                runs.append(json.loads((BUILD / "results" / f"{p['cache_key']}.json")
                                       .read_text()))
            except (OSError, ValueError):
                pass
    header = report_header(command, wall_s=res.wall_s, compute_min=compute_min(runs),
                           liberties=[resolve(x).describe()
                                      for x in sorted({p.liberty for p in pts})], tools=tools)
    out = Path(a.out)
    (out / "noise.md").write_text(markdown(rows, header, flow))
    write_json(out / "noise.json", {"command": command, "date": today(), "tools": tools,
                                    "flow": flow, "units": {"area": "um2", "delay": "ns",
                                                            "power": "mW", "energy": "pJ/op"},
                                    "rows": rows}, strip=Path.cwd())
    print(f"wrote {out / 'noise.md'} and {out / 'noise.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
