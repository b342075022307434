"""Simulation, golden-model and generation throughput -> reports/sim_bench.md (issue 11).

Runs, each in its own process so that nothing imports tb/ or another script:

1. ``pytest -m bench tb/test_sim_speed.py`` (one worker): vectors per second per simulator per
   unit on the batch path (Icarus, Verilator with lanes) and the per-vector cocotb path, every
   vector checked against the golden model;
2. ``scripts/model_bench.py --json``: golden-model elements per second;
3. ``scripts/gen_bench.py --json`` (if present): Verilog generation times.

    python scripts/sim_bench.py [--skip-sim] [--skip-gen] [-o reports/sim_bench.md]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tcgen.study import report_header, tool_versions, write_report

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

TARGET_SIM = 2e6          # fp16 fp_mul vectors/s end to end, one core
TARGET_MODEL = 10e6       # golden-model elements/s


def _run(cmd: list[str], env: dict | None = None) -> float:
    t0 = time.time()
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True, env={**os.environ, **(env or {})})
    return time.time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=str(ROOT / "reports" / "sim_bench.md"))
    ap.add_argument("--skip-sim", action="store_true")
    ap.add_argument("--skip-gen", action="store_true")
    args = ap.parse_args()
    t_start = time.time()
    data: dict = {"sim": {}, "model": None, "gen": None}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.skip_sim:
            _run([PY, "-m", "pytest", "-q", "-n", "0", "-m", "bench", "tb/test_sim_speed.py",
                  "-p", "no:cacheprovider"], env={"TCGEN_SIM_BENCH_OUT": str(tmp / "sim")})
            for f in sorted((tmp / "sim").glob("*.json")):
                data["sim"][f.stem] = json.loads(f.read_text())
        _run([PY, "scripts/model_bench.py", "--json", str(tmp / "model.json")])
        data["model"] = json.loads((tmp / "model.json").read_text())
        gen = ROOT / "scripts" / "gen_bench.py"
        if gen.exists() and not args.skip_gen:
            _run([PY, str(gen), "--json", str(tmp / "gen.json")])
            data["gen"] = json.loads((tmp / "gen.json").read_text())
    wall = time.time() - t_start

    L = ["# Simulation, model and generation throughput", ""]
    L.append(report_header("python scripts/sim_bench.py", wall_s=wall,
                           tools=tool_versions(packages=("numpy", "amaranth", "cocotb"))))
    L += ["", "Machine: 2 cores; every figure is one process on one core (the batch bench "
          "computes the next chunk's expected values in a second thread while the simulator "
          "runs).", ""]
    L += ["## Simulation (every vector compared with the golden model)", "",
          "| unit | format | simulator | path | lanes | vectors | wall s | vectors/s end to end "
          "| vectors/s in simulation |", "|---|---|---|---|---|---|---|---|---|"]
    for k, r in sorted(data["sim"].items()):
        path = "per-vector cocotb" if k.startswith("pervector") else \
            {"bitslice": "batch, bit-sliced gates"}.get(r.get("path"), "batch")
        L.append(f"| {r['unit']} | {r.get('fmt', '-')} | {r['sim']} | {path} | "
                 f"{r.get('lanes', 1)} | {r['vectors']:,} | {r['wall_s']:.1f} | "
                 f"{r['per_s']:,.0f} | "
                 f"{(r['sim_per_s'] if 'sim_per_s' in r else float('nan')):,.0f} |")
    fm = data["sim"].get("bitslice-fp_mul-fp16-verilator") or \
        data["sim"].get("batch-fp_mul-fp16-verilator")
    if fm:
        met = fm["per_s"] >= TARGET_SIM
        L += ["", f"Target fp16 fp_mul ≥ {TARGET_SIM / 1e6:.0f} M vectors/s end to end: "
              f"**{'met' if met else 'not met'}** ({fm['per_s'] / 1e6:.2f} M/s)."]
    L += ["", "## Golden model (tcgen.hw.numeric, numpy)", ""]
    model = data["model"]
    rows = model if isinstance(model, list) else model.get("rows", model)
    L.append("```")
    L.append(json.dumps(rows, indent=1, sort_keys=True))
    L.append("```")
    if data["gen"] is not None:
        L += ["", "## Verilog generation (scripts/gen_bench.py)", "", "```",
              json.dumps(data["gen"], indent=1, sort_keys=True), "```"]
    write_report(Path(args.out), "\n".join(L) + "\n", data, strip=ROOT)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
