"""Exhaustive FP16/BF16 fp_add/fp_mul verification (2**32 operand pairs per configuration),
resumable, results in reports/hw_verification.md.

Each range of ``--chunk`` pairs is one ``pytest tb/test_fp_exhaustive.py`` run (bit-sliced
gate-level batch path on Verilator); finished ranges are recorded in
``build/exhaustive/<config>.json`` as they complete, so an interrupted run (Ctrl-C, kill -9)
resumes where it stopped.  ``-j`` ranges run at once.

    python scripts/fp_exhaustive.py [--config fp_mul:fp16:rne ...] [--chunk-log2 28] [-j 2]

A configuration is ``op:fmt:mode`` (the unit at its defaults) or ``op:fmt:mode:name=value,...``
(more of its parameters, as ``-p`` takes them), one of ``CONFIGS``: the defaults, and issue
43's lowest-energy multiplier ``fp_mul:fp16:rne:tree=tdm,rinc=compound,cpa=brent_kung`` and its
BF16 twin (docs/peers.md).
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tcgen.cli import parse_params
from tcgen.study import (ScriptParser, report_header, run_parallel, tool_versions, write_json,
                         write_report)

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / "build" / "exhaustive"
#: issue 43's lowest-energy multiplier (docs/peers.md: at or below the best peer's timed energy
#: in all nine cells), verified as the defaults are
LOW_ENERGY = "tree=tdm,rinc=compound,cpa=brent_kung"
CONFIGS = ["fp_add:fp16:rne", "fp_add:fp16:rtz", "fp_add:bf16:rne",
           "fp_mul:fp16:rne", "fp_mul:fp16:rtz", "fp_mul:bf16:rne",
           f"fp_mul:fp16:rne:{LOW_ENERGY}", f"fp_mul:bf16:rne:{LOW_ENERGY}"]
TOTAL = 1 << 32


def config_params(config: str) -> dict[str, str]:
    """``op:fmt:mode[:name=value,...]`` as the unit's parameters, typed as ``-p`` takes them:
    the one parse of a configuration -- the design hashed here and the design each range's
    test builds (passed to it as JSON, ``TCGEN_EXH_PARAMS``) are the same."""
    _, fmt, mode, *extra = config.split(":", 3)
    return {"fmt": fmt, "rounding": mode,
            **parse_params(extra[0].split(",") if extra else [])}


@functools.lru_cache(maxsize=None)
def design_sha(config: str) -> str:
    """The configuration's Verilog as verified: sha256 (16 hex digits) of the generated text
    without its first line (the ``// tcgen ...: params ...`` header, which names parameters
    but builds nothing).  Ranges are recorded per design, so a change of the unit's Verilog
    (a new default) starts its coverage from zero instead of inheriting the old design's."""
    import hashlib
    from tcgen.generate import verilog
    from tcgen.registry import get_unit
    op = config.split(":")[0]
    text = verilog(op, get_unit(op).make_params(config_params(config)))
    if text.startswith("// tcgen"):
        text = text.split("\n", 1)[1]
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _path(config: str) -> Path:
    return STATE / f"{config.replace(':', '-').replace(',', '-')}-{design_sha(config)}.json"


REPORT = ROOT / "reports" / "hw_verification_exhaustive.md"


def _state(config: str) -> dict:
    """The configuration's recorded ranges: build/exhaustive's state, else the committed
    report's (reports/hw_verification_exhaustive.json) when it names the same design -- so a
    fresh checkout resumes, and reports, what was verified before -- else none."""
    path = _path(config)
    if path.exists():
        return json.loads(path.read_text())
    sha = design_sha(config)
    stored = REPORT.with_suffix(".json")
    if stored.exists():
        old = json.loads(stored.read_text()).get(config)
        if isinstance(old, dict) and old.get("verilog_sha") == sha:
            return old
    return {"config": config, "verilog_sha": sha, "ranges": {}}


def _save(config: str, state: dict):
    write_json(_path(config), state)


def _run_range(item: tuple[str, int, int]) -> dict:
    config, start, stop = item
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = {**os.environ, "TCGEN_EXH_CONFIG": config,
               "TCGEN_EXH_PARAMS": json.dumps(config_params(config)), "TCGEN_EXH_START": str(start),
               "TCGEN_EXH_STOP": str(stop), "TCGEN_EXH_OUT": str(out)}
        t0 = time.time()
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-m", "slow",
                            "-p", "no:cacheprovider", "tb/test_fp_exhaustive.py"],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        res = json.loads(out.read_text()) if out.exists() else {}
        res["process_s"] = round(time.time() - t0, 1)
        res["passed"] = p.returncode == 0
        if p.returncode != 0 and not res.get("first_mismatches"):
            res["error"] = (p.stdout + p.stderr)[-2000:]
        return res


def main() -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", choices=CONFIGS)
    ap.add_argument("--chunk-log2", type=int, default=28)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not 12 <= args.chunk_log2 <= 32:
        ap.error(f"--chunk-log2 must be an integer in 12..32 (ranges of 2^12..2^32 pairs), got "
                 f"{args.chunk_log2}")
    if args.jobs < 1:
        ap.error(f"-j must be a positive integer, got {args.jobs}")
    configs = args.config or CONFIGS
    chunk = 1 << args.chunk_log2
    for c in configs:                      # a resumed run cuts its ranges as the recorded ones
        sizes = {r["stop"] - int(a) for a, r in _state(c)["ranges"].items()}
        if sizes - {chunk}:
            ap.error(f"{c}: its recorded ranges are of 2^{max(sizes).bit_length() - 1} pairs; "
                     f"resume it with --chunk-log2 {max(sizes).bit_length() - 1}")
    t_start = time.time()
    if not args.report_only:
        todo = []
        for c in configs:
            st = _state(c)
            todo += [(c, s) for s in range(0, TOTAL, chunk) if str(s) not in st["ranges"]]
        print(f"{len(todo)} ranges of {chunk:,} pairs to run", flush=True)
        items = [(c, s, s + chunk) for c, s in todo]
        for k, ((c, s, _), res) in enumerate(run_parallel(_run_range, items, args.jobs), 1):
            st = _state(c)                       # recorded as each range completes
            st["ranges"][str(s)] = {"stop": s + chunk, **res}
            _save(c, st)
            done = sum(r["stop"] - int(a) for a, r in st["ranges"].items())
            print(f"[{k}/{len(todo)}] {c} {s:#010x}+{chunk:#x}: "
                  f"{'ok' if res['passed'] else 'FAILED'} mismatches="
                  f"{res.get('mismatches')} {res.get('process_s')} s "
                  f"({done / TOTAL:.1%} of {c})", flush=True)
    rows = []
    for c in CONFIGS:
        st = _state(c)
        rs = st["ranges"].values()
        covered = sum(r["stop"] - int(a) for a, r in st["ranges"].items())
        rows.append((f"{c} (`{st['verilog_sha']}`)", covered, sum(r.get("checked", 0) for r in rs),
                     sum(r.get("mismatches", 0) for r in rs),
                     sum(not r["passed"] for r in rs), sum(r.get("process_s", 0) for r in rs)))
    L = ["# Exhaustive FP16 / BF16 verification of fp_add and fp_mul", "",
         report_header("python scripts/fp_exhaustive.py",
                       wall_s=None if args.report_only else time.time() - t_start,
                       notes=[f"{sum(r[5] for r in rows) / 3600:.1f} h of range processes in "
                              f"all (sum of their wall times; -j runs several at once)"],
                       tools=tool_versions(packages=("numpy", "amaranth", "cocotb"))), "",
         "Every operand pair (2^32 per configuration) of the generated Verilog at its "
         "defaults (no FTZ, pipeline 0; a fourth field names the parameters set otherwise: "
         f"`{LOW_ENERGY}` is issue 43's lowest-energy multiplier, docs/peers.md) against "
         "`tcgen.hw.numeric` (itself checked against an "
         "independent Fraction oracle, tb/test_numeric.py). Path: the unit's Verilog lowered to "
         "2-input gates by Yosys (`synth -flatten; abc -g ...`), simulated by Verilator 64 "
         "vectors per net word (tcgen/verify/batch.py, bit-sliced batch path), expected values from the "
         "model loaded into the simulation and compared there. Coverage is per design: the "
         "sha256 after each configuration names its Verilog (header line aside), and a unit "
         "whose Verilog changed (a new default) starts again from zero.", "",
         "| configuration | pairs covered | checked | mismatches (groups of 64) | failed ranges "
         "| range processes, wall s (sum) |", "|---|---|---|---|---|---|"]
    for c, cov, chk, mis, fail, sec in rows:
        L.append(f"| {c} | {cov:,} of {TOTAL:,} ({cov / TOTAL:.1%}) | {chk:,} | {mis} | {fail} "
                 f"| {sec:,.0f} |")
    write_report(REPORT, "\n".join(L) + "\n",
                 {c: _state(c) for c in CONFIGS}, strip=ROOT)
    print("wrote reports/hw_verification_exhaustive.md")
    return 0 if all(r[3] == 0 and r[4] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
