"""``tcgen ppa``: measure one unit (see docs/ppa.md).

    tcgen ppa UNIT [-p name=value ...] [--liberty NAME|PATH] [--clock-ns T]
                   [--activity vectorless|sim] [--toggle-rate R] [--cycles N] [--seed S]
                   [--json FILE] [--no-cache]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["add_ppa_parser", "cmd_ppa", "format_table"]


def add_ppa_parser(sub):
    p = sub.add_parser("ppa", help="area, timing and power from Yosys + OpenSTA")
    p.add_argument("unit", help="unit name (see `tcgen list`)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter (repeatable)")
    p.add_argument("--liberty", default="osu018", metavar="NAME|PATH",
                   help="osu018 (default), nangate45, sky130hd, or a .lib/.lib.gz path")
    p.add_argument("--clock-ns", type=_float, default=10.0, metavar="T",
                   help="target clock period in ns (default 10)")
    p.add_argument("--activity", default="vectorless", metavar="MODE",
                   help="vectorless (default; one global toggle rate) or sim (workload "
                        "gate-level simulation)")
    p.add_argument("--toggle-rate", type=_float, default=0.1, metavar="R",
                   help="vectorless toggles per cycle on every net (default 0.1)")
    p.add_argument("--cycles", type=_int, default=2000, metavar="N",
                   help="sim: workload cycles (default 2000)")
    p.add_argument("--seed", type=_int, default=1, metavar="S", help="sim: workload seed")
    p.add_argument("--json", metavar="FILE", help="write every figure as JSON ('-' = stdout)")
    p.add_argument("--no-cache", action="store_true", help="re-run the tools")
    p.set_defaults(func=cmd_ppa)
    return p


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None


def _int(text):
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None


_float.__name__ = "number"
_int.__name__ = "integer"


def cmd_ppa(args) -> int:
    from hw.cli import parse_params, write_atomic
    from hw.registry import get_unit

    from .ppa import ACTIVITIES, measure
    from .tools import ToolError
    unit = get_unit(args.unit)
    params = unit.make_params(parse_params(args.param))
    if args.activity not in ACTIVITIES:
        raise ValueError(f"--activity must be one of {', '.join(ACTIVITIES)}, "
                         f"got {args.activity!r}")
    if args.json and args.json != "-":
        parent = Path(args.json).parent
        if not parent.is_dir():
            raise ValueError(f"cannot write {args.json}: folder {parent} does not exist")
    try:
        res = measure(unit.name, params, liberty=args.liberty, clock_ns=args.clock_ns,
                      activity=args.activity, toggle_rate=args.toggle_rate,
                      workload_cycles=args.cycles, seed=args.seed, cache=not args.no_cache)
    except ToolError as e:
        print(f"tcgen: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    text = json.dumps(res, indent=1, sort_keys=True) + "\n"
    if args.json == "-":
        sys.stdout.write(text)
        return 0
    if args.json:
        write_atomic(Path(args.json), text)
    sys.stdout.write(format_table(res))
    return 0


def _g(v, fmt="{:.4g}"):
    return "-" if v is None else fmt.format(v)


def format_table(r: dict) -> str:
    p = r["power_mw"]
    params = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                      for k, v in r["params"].items())
    lines = [
        f"{r['unit']}  {params}",
        f"  liberty     {r['liberty']['name']} ({r['liberty']['library']})   "
        f"clock {r['clock_ns']:g} ns   activity {r['activity']}"
        + (f" {r['toggle_rate']:g}/cycle" if r["activity"] == "vectorless"
           else f" ({r['workload']['cycles']} cycles, mean net toggle rate "
                f"{r['sim']['mean_toggle_rate']:.3f}/cycle)"),
        f"  area        {r['area_um2']:.1f} um^2   {r['cell_count']} cells",
        f"  timing      critical path {_g(r['crit_path_ns'])} ns   fmax "
        f"{_g(r['fmax_mhz'], '{:.1f}')} MHz   slack {_g(r['slack_ns'])} ns   "
        f"{r['startpoint']} -> {r['endpoint']}",
        f"  power (mW)  total {p['total']:.4g}   internal {p['internal']:.4g}   switching "
        f"{p['switching']:.4g}   leakage {p['leakage']:.3g}",
    ]
    if r.get("ops_per_cycle"):
        lines.append(
            f"  per op      {r['ops_per_cycle']:g} {r['ops_unit']}/cycle   "
            f"{_g(r['energy_pj_per_op'])} pJ/{r['ops_unit']}   "
            f"{_g(r['gops_per_mm2'])} GOPS/mm^2   {_g(r['gops_per_w'])} GOPS/W at clock;  "
            f"{_g(r['gops_per_mm2_fmax'])} GOPS/mm^2   {_g(r['gops_per_w_fmax'])} GOPS/W at fmax")
    if r["activity"] == "sim":
        q = r["sim"]["power_mw_opensta_propagated"]
        lines.append(f"  (OpenSTA's own propagation from the simulated input activity: "
                     f"{q['total']:.4g} mW)")
    if len(r["breakdown"]) > 1:
        lines.append("  breakdown   " + "   ".join(
            f"{b['module']} x{b['instances']}: {b['area_um2']:.0f} um^2" for b in r["breakdown"]))
    rt = r["runtime_s"]
    lines.append(f"  flow        {rt.get('total_s', 0):.1f} s" + ("  (cached)" if r.get("cached")
                                                                    else ""))
    lines.append(f"  command     {r['command']}")
    return "\n".join(lines) + "\n"
