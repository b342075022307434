#!/usr/bin/env python3
"""The sweep engine's executors, timed: one real sweep (studies/engine_bench.toml, 61 points)
measured from scratch with the local process pool and with a Dask LocalCluster of the same
size -> reports/sweep_bench.md (points per minute, and whether the two give the same rows).

    .venv/bin/python scripts/sweep_bench.py [-j 2] [--spec studies/engine_bench.toml]
                                            [--work build/sweep_bench] [-o reports/sweep_bench.md]

Each run gets an empty point cache and ``flow_cache=False`` (the flow synthesizes, times and
powers every point again), so both executors do the same work; run it on a quiet machine.
"""
from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from tcgen.study import ScriptParser, report_header, tool_versions, write_report
from tcgen.sweep import load, run

ROOT = Path(__file__).resolve().parent.parent
SAME = ("synth__area__um2", "synth__cells__count", "timing__crit_path__ns", "power__total__mw")


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--spec", default=str(ROOT / "studies" / "engine_bench.toml"))
    ap.add_argument("--work", default=str(ROOT / "build" / "sweep_bench"))
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "sweep_bench.md"))
    args = ap.parse_args(argv)
    spec = load(args.spec)
    n = len(spec.points)
    runs = {}
    for ex in ("local", "dask"):
        cache = Path(args.work) / ex
        shutil.rmtree(cache, ignore_errors=True)
        t0 = time.time()
        res = run(spec, jobs=args.jobs, executor=ex, cache=cache, flow_cache=False)
        wall = time.time() - t0
        runs[ex] = {"wall_s": round(wall, 1), "points": n, "failed": res.counts["failed"],
                    "points_per_min": round(60 * n / wall, 1),
                    "cpu_s_in_flow": round(sum(r.get("runtime__flow__s") or 0
                                               for r in res.rows), 1),
                    "rows": [{k: r.get(k) for k in ("label",) + SAME} for r in res.rows]}
        print(f"{ex}: {n} points in {wall:.1f} s = {runs[ex]['points_per_min']} points/min",
              file=sys.stderr)
    same = runs["local"]["rows"] == runs["dask"]["rows"]
    rel = Path(args.spec).resolve().relative_to(ROOT) if Path(args.spec).resolve().is_relative_to(ROOT) else args.spec
    cmd = f"python scripts/sweep_bench.py -j {args.jobs}"
    L = ["# Sweep engine: local process pool vs Dask LocalCluster", "",
         report_header(cmd, tools=tool_versions(packages=("dask", "distributed"))), "",
         f"One sweep, `{rel}`: {n} points of small library units (int_mul, popcount, lzc, "
         f"csa_tree, barrel_shift, fp_add, fp_mul) on osu018, vectorless, 10 ns; each executor "
         f"with {args.jobs} workers, an empty point cache and the flow's own cache off (every "
         f"point synthesized, timed and powered again).", "",
         "| executor | points | failed | wall s | points/min | Σ flow seconds of the points |",
         "|---|---:|---:|---:|---:|---:|"]
    for ex, r in runs.items():
        L.append(f"| {ex} | {r['points']} | {r['failed']} | {r['wall_s']} | "
                 f"{r['points_per_min']} | {r['cpu_s_in_flow']} |")
    ratio = runs["dask"]["wall_s"] / runs["local"]["wall_s"]
    L += ["", f"Dask / local wall time: {ratio:.2f}. Rows identical between the executors "
          f"(area, cells, critical path, power of every point): **{'yes' if same else 'NO'}**.",
          "", "Wall times include starting the executor (the pool's processes; Dask's "
          "LocalCluster: scheduler, workers, nanny processes). On one machine the pool is the "
          "cheaper executor (no scheduler, no result traffic through the client); Dask pays "
          "off when workers on other machines add cores (docs/sweep.md, 'Executors'). Σ flow "
          "seconds over wall × workers is the workers' busy share."]
    write_report(args.output, "\n".join(L) + "\n",
                 {k: {kk: vv for kk, vv in v.items() if kk != "rows"} for k, v in runs.items()}
                 | {"same_rows": same, "command": cmd})
    print(args.output)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
