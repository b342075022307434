#!/usr/bin/env python3
"""Time ``tcgen generate``: every unit at its defaults (deduplicated and ``--flat``), ``--all``
and large bmma arrays; wall time, peak RSS, Verilog size and module count of each run.

    .venv/bin/python scripts/gen_bench.py                   # markdown table on stdout
    .venv/bin/python scripts/gen_bench.py --json build/gen_bench.json
    .venv/bin/python scripts/gen_bench.py --no-flat --no-big  # quick: dedup only

Each row is one fresh ``tcgen generate`` process (so import time is included, as a user sees
it); the peak RSS is the child's ``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)`` in a
forked process that runs only that child).  Targets: default bmma_array ≤ 3 s, ``--all`` ≤ 20 s,
bmma_array m64n64k4096 ≤ 30 s and ≤ 1 GB.  That last configuration cannot be emitted by
Amaranth 0.5 (a module takes at most 65534 input bits; its request payload has 655363), so
``tcgen generate`` refuses it at once (status 2) and the large rows measure the largest arrays
that fit: m32n32k256 (1024 channels, quadrant blocks) and m4n4k4096 (a K = 4096 channel).
Large rows run deduplicated only (``--flat`` elaborates every channel: many minutes).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TCGEN = [sys.executable, "-m", "tcgen.cli"]

TARGETS = {"bmma_array": 3.0, "--all": 20.0, "bmma_array m64n64k4096": 30.0}
BIG = [("bmma_array", {"m": 64, "n": 64, "k": 4096}),     # the target; refused (see above)
       ("bmma_array", {"m": 32, "n": 32, "k": 256}),
       ("bmma_array", {"m": 4, "n": 4, "k": 4096})]
BIG_RSS_MB = 1024


def _run(args: list[str]) -> dict:
    """Run one tcgen command in a forked child (so RUSAGE_CHILDREN sees it alone)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # child: run, report peak RSS, exit
        os.close(r)
        t0 = time.perf_counter()
        p = subprocess.run(TCGEN + args, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        os.write(w, json.dumps({"rc": p.returncode, "wall_s": wall, "rss_mb": rss_kb / 1024,
                                "stderr": p.stderr[-2000:]}).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data)


def _size(path: Path) -> tuple[int, int]:
    """(bytes, module definitions) of a Verilog file or of every file in a folder."""
    paths = sorted(path.glob("*.v")) if path.is_dir() else [path]
    b = mods = 0
    for p in paths:
        text = p.read_text()
        b += len(text.encode())
        mods += sum(1 for ln in text.splitlines() if ln.startswith("module "))
    return b, mods


def main() -> int:
    from tcgen.study import ScriptParser
    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    ap.add_argument("--units", nargs="*", help="only these units (default: every unit)")
    ap.add_argument("--no-flat", action="store_true", help="skip the --flat runs")
    ap.add_argument("--no-big", action="store_true", help="skip the large bmma_array rows")
    ap.add_argument("--no-all", action="store_true", help="skip generate --all")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT))
    from tcgen.registry import all_units
    units = args.units or [u.name for u in all_units()]
    modes = ["dedup"] + ([] if args.no_flat else ["flat"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="tcgen-gen-bench-") as tmp:
        tmp = Path(tmp)

        def bench(label, extra, params=None, out_dir=False, modes=modes):
            for mode in modes:
                out = tmp / f"{label.replace(' ', '_')}_{mode}" / ("" if out_dir else "x.v")
                out.parent.mkdir(parents=True, exist_ok=True)
                cmd = list(extra) + ["-o", str(out)] + (["--flat"] if mode == "flat" else [])
                for k, v in (params or {}).items():
                    cmd += ["-p", f"{k}={v}"]
                res = _run(["generate"] + cmd)
                size, mods = _size(out) if res["rc"] == 0 else (0, 0)
                row = {"what": label, "mode": mode, "rc": res["rc"],
                       "wall_s": round(res["wall_s"], 2), "peak_rss_mb": round(res["rss_mb"], 1),
                       "verilog_bytes": size, "modules": mods,
                       "target_s": TARGETS.get(label) if mode == "dedup" else None,
                       "error": res["stderr"].strip() if res["rc"] else ""}
                rows.append(row)
                print(f"  {label:28s} {mode:5s} {row['wall_s']:7.2f} s "
                      f"{row['peak_rss_mb']:7.1f} MB {size:>10d} B {mods:4d} modules"
                      + (f"  rc {res['rc']}: {row['error'][:100]}" if res["rc"] else ""),
                      file=sys.stderr, flush=True)

        for u in units:
            bench(u, [u])
        if not args.no_all:
            bench("--all", ["--all"], out_dir=True)
        if not args.no_big:
            for unit, params in BIG:
                label = f"{unit} " + "".join(f"{k}{v}" for k, v in params.items())
                bench(label, [unit], params=params, modes=["dedup"])

    lines = ["| what | mode | wall (s) | peak RSS (MB) | Verilog (kB) | modules | target |",
             "|---|---|---:|---:|---:|---:|---|"]
    missed = []
    for r in rows:
        t = r["target_s"]
        verdict = ""
        if t is not None:
            big = "m64" in r["what"]
            ok = r["rc"] == 0 and r["wall_s"] <= t and (not big or r["peak_rss_mb"] <= BIG_RSS_MB)
            verdict = f"≤ {t:g} s" + (" ≤ 1 GB" if big else "") + (" ok" if ok else " MISSED")
            if not ok:
                missed.append(r["what"])
        if r["rc"]:
            verdict += f" (refused, status {r['rc']}: {r['error'].split(': ', 2)[-1][:90]}…)"
        lines.append(f"| {r['what']} | {r['mode']} | {r['wall_s']:.2f} | {r['peak_rss_mb']:.0f} "
                     f"| {r['verilog_bytes'] / 1000:.0f} | {r['modules']} | {verdict} |")
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "missed": missed}, indent=1) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
