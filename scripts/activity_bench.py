#!/usr/bin/env python3
"""Gate-level activity engines (``--activity sim``): time per engine and toggle agreement.

    .venv/bin/python scripts/activity_bench.py [--cycles 1000] [--icarus-cycles 40] [--json PATH]

On the mapped netlist of ``bmma_array`` m8n8k128 (osu018; the synthesis comes from the flow's
cache, or is run first) and of ``fp_mul`` FP16: the levelized engine for ``--cycles`` cycles,
Icarus for ``--icarus-cycles`` (it takes ~1 s per cycle of the array), Verilator on fp_mul
only (its compile of the array takes longer than Icarus's whole run); each engine's toggle count
for every net compared with Icarus's over the same window.  Prints a markdown table; ``--json``
writes the numbers (scripts/sim_bench.py puts them in reports/sim_bench.md).
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tcgen.measure import measure
from tcgen.registry import get_unit
from tcgen.synth import activity as act
from tcgen.synth.liberty import resolve
from tcgen.study import ScriptParser


def _engine(nl, netlist, lib, wl, n, engine, tmp):
    t0 = time.time()
    rates, name, _ = act.net_activity(nl, netlist, lib, wl, Path(tmp) / engine, n, engine)
    return rates, time.time() - t0


def bench(unit: str, params: dict, cycles: int, icarus_cycles: int, engines) -> dict:
    lib = resolve("osu018")
    r = measure(unit, params)                            # synthesis, cached by the flow
    netlist = Path(r["netlist"])
    t0 = time.time()
    nl = act.read_netlist(netlist, unit)
    read_s = time.time() - t0
    u = get_unit(unit)
    p = u.make_params({k: str(v) for k, v in params.items()}) if params else u.params()
    out = {"unit": unit, "params": params, "cells": r["cell_count"], "read_netlist_s": read_s,
           "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        wl_short = u.workload(p, np.random.default_rng(1), icarus_cycles)
        ref, ref_s = _engine(nl, netlist, lib, wl_short, icarus_cycles, "icarus", tmp)
        out["runs"].append({"engine": "icarus", "cycles": icarus_cycles, "seconds": ref_s,
                            "nets": len(ref), "toggle_mismatches": 0})
        for engine in engines:
            got, s = _engine(nl, netlist, lib, wl_short, icarus_cycles, engine, tmp)
            bad = sum(1 for k in ref if got.get(k, (None,))[0] != ref[k][0]) + len(
                set(got) - set(ref))
            out["runs"].append({"engine": engine, "cycles": icarus_cycles, "seconds": s,
                                "nets": len(got), "toggle_mismatches": bad})
            if cycles != icarus_cycles:
                wl = u.workload(p, np.random.default_rng(1), cycles)
                got, s = _engine(nl, netlist, lib, wl, cycles, engine, tmp)
                out["runs"].append({"engine": engine, "cycles": cycles, "seconds": s,
                                    "nets": len(got), "toggle_mismatches": None})
    return out


def main() -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--icarus-cycles", type=int, default=40)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = [bench("bmma_array", {}, args.cycles, args.icarus_cycles, ["levelized"]),
            bench("fp_mul", {}, args.cycles, args.cycles, ["levelized", "verilator"])]
    print("| unit | cells | engine | cycles | seconds | s per 1000 cycles | nets | toggle "
          "mismatches vs Icarus |\n|---|---|---|---|---|---|---|---|")
    for b in rows:
        for r in b["runs"]:
            print(f"| {b['unit']} | {b['cells']:,} | {r['engine']} | {r['cycles']:,} | "
                  f"{r['seconds']:.1f} | {r['seconds'] * 1000 / r['cycles']:.1f} | "
                  f"{r['nets']:,} | {'-' if r['toggle_mismatches'] is None else r['toggle_mismatches']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
