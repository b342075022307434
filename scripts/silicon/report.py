"""reports/silicon.md from a probe run and its comparison (issue 40).

    .venv/bin/python scripts/silicon/compare.py DIR --json DIR/compare.json
    .venv/bin/python scripts/silicon/report.py DIR -o reports/silicon.md [--device-seconds S]

Reads DIR/silicon_meta.json (run_probes.py) and DIR/compare.json (compare.py).  Writes the
run's environment, per op the SASS opcode, the fragment check, the outputs, the preset's
mismatches and each negative control's, then per op and case class the preset's mismatches.
Also writes the machine-readable summary beside it (reports/silicon.json).
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops as O  # noqa: E402

from tcgen.hw import sm90  # noqa: E402
from tcgen.study import ScriptParser  # noqa: E402


def rule_text(op: sm90.Sm90Op) -> str:
    if op.rule == "int":
        return "exact, " + ("clamped to s32 (.satfinite)" if op.saturate else "wrapping mod 2^32")
    if op.rule == "b1":
        return f"popc(a {op.popc.upper()} b) + C, wrapping"
    if op.rule == "fp8_hmma":
        return ("FP8→FP16 exact, HMMA(k mod 4 ∈ {2,3}, HMMA(k mod 4 ∈ {0,1}, +0)) at window 27, "
                f"then {'FADD' if op.c == 'fp32' else 'HADD2'} C (RNE)")
    extra = f", accumulator {op.acc_man} fraction bits" if op.acc_man else ""
    tf = ", operands' low 13 bits dropped" if op.a == "tf32" else ""
    mode = "RTZ" if op.c == "fp32" else "RNE"
    return f"fused, window {op.window}, {mode}{extra}{tf}"


def main(argv=None):
    ap = ScriptParser()
    ap.add_argument("dir", nargs="+", help="run_probes.py outputs, each with its compare.json")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--device-seconds", type=float, default=None)
    args = ap.parse_args(argv)
    meta = {"ops": {}, "runs": []}
    rows = []
    for d in map(Path, args.dir):
        m = json.loads((d / "silicon_meta.json").read_text())
        meta.setdefault("date", m["date"])
        meta.setdefault("env", m["env"])
        meta["runs"].append({"date": m["date"], "ops": sorted(m["ops"]), "env": m["env"]})
        meta["ops"].update(m["ops"])
        rows += json.loads((d / "compare.json").read_text())
    by_op = defaultdict(lambda: defaultdict(lambda: [0, 0]))        # op -> model -> [mis, out]
    by_cls = defaultdict(dict)                                      # op -> cls -> [mis, out]
    inputs_ok = all(r["inputs_match"] for r in rows)
    for r in rows:
        t = by_op[r["op"]][r["model"]]
        t[0] += r["mismatches"]
        t[1] += r["outputs"]
        if r["model"] == "preset":
            by_cls[r["op"]][r["class"]] = (r["mismatches"], r["outputs"])
    env = meta["env"]
    L = ["# Hopper tensor cores, measured: the models of `tcgen.hw.sm90` against an H200", ""]
    L += ["Issue 40.  Every probed instruction's outputs on an NVIDIA H200 against its model "
          "(`tcgen.hw.sm90.INSTRUCTIONS`) and against each negative control (one parameter off: "
          "`tcgen.hw.sm90.NEGATIVE_CONTROLS`).  Method, probes and the rules as algorithms: "
          "docs/silicon.md and docs/fused.md.", ""]
    L += ["```sh",
          "# on the device machine (CuPy, nvcc): ~70 s",
          "python3 scripts/silicon/run_probes.py --out $OUT",
          "# here, on what came back (DIR):",
          "# (two runs here: run1 = all ops but the last two wgmma ops; run2 = --ops "
          "wg_e5m2_f16,wg_e4m3_e5m2_f32)",
          ".venv/bin/python scripts/silicon/compare.py DIR --json DIR/compare.json   # each run",
          ".venv/bin/python scripts/silicon/report.py RUN1 RUN2 -o reports/silicon.md "
          "--device-seconds S",
          ".venv/bin/python scripts/silicon/sample.py RUN1 RUN2 -o hw/data/sm90_silicon.npz",
          "```", ""]
    L += ["| | |", "|---|---|",
          f"| GPU | {env['device']} ({env['nvidia_smi']}) |",
          f"| CUDA | runtime {env['cuda_runtime']}, driver API {env['cuda_driver']} |",
          f"| nvcc | {env['nvcc'].splitlines()[-1]} |",
          f"| build | `nvcc -cubin -O3 -gencode=arch=compute_90a,code=sm_90a`, one kernel per op |",
          f"| host | CuPy {env['cupy']}, numpy {env['numpy']} |",
          "| measured | " + "; ".join(f"{r['date']} ({len(r['ops'])} ops)" for r in meta["runs"])
          + " |",
          f"| inputs | regenerated here from their seeds; SHA-256 equal to the GPU run's: "
          f"{'all' if inputs_ok else 'NOT ALL'} |"]
    if args.device_seconds:
        L.append(f"| device time | {args.device_seconds:.0f} s of the session's lease "
                 "(four calls: a first run that faulted in the wgmma probe, the full run, the "
                 "SASS dump, the two last wgmma ops) |")
    total = sum(v["preset"][1] for v in by_op.values())
    total_bad = sum(v["preset"][0] for v in by_op.values())
    L += ["", f"**{total:,} outputs compared over {len(by_op)} instructions: {total_bad:,} "
          f"mismatches against the models.**", ""]
    L += ["## Per instruction", "",
          "| op | PTX | SASS | fragment check (negative control) | outputs | model | "
          "mismatches | negative controls: mismatches |", "|---|---|---|---|---|---|---|---|"]
    for op in O.OPS:
        if op.name not in by_op:
            rec = meta["ops"].get(op.name, {})
            L.append(f"| {op.name} | `{op.ptx}` | refused: {rec.get('refused', '?')} | | | | | |")
            continue
        rec = meta["ops"][op.name]
        fc = rec["fragment_check"]
        lay = fc["chosen"]
        fcs = (f"exact ({'' if lay in (None, 'None') else 'layout ' + lay + '; '}"
               f"{fc['negative_control_mismatches']:,} of {fc['outputs']:,} off)")
        sop = sm90.INSTRUCTIONS[op.name]
        mis, out = by_op[op.name]["preset"]
        ctl = "; ".join(f"{label}: {v[0]:,}" for label, v in by_op[op.name].items()
                        if label != "preset")
        L.append(f"| {op.name} | `{op.ptx}` | {', '.join(rec['sass'])} | {fcs} | {out:,} | "
                 f"{rule_text(sop)} | **{mis:,}** | {ctl} |")
    L += ["", "A negative control with 0 mismatches is a parameter the data cannot tell apart "
          "from the model's: the rule is not pinned down there (listed in docs/silicon.md).", ""]
    L += ["## Per case class (the model's mismatches / outputs)", ""]
    classes = ["uniform", "wide", "cancel", "subnormal", "bigc", "overflow", "special", "zeros",
               "raw", "chain", "extremes"]
    L += ["| op | " + " | ".join(classes) + " |", "|---|" + "---|" * len(classes)]
    for op in O.OPS:
        if op.name not in by_cls:
            continue
        cells = []
        for c in classes:
            v = by_cls[op.name].get(c)
            cells.append("" if v is None else f"{v[0]}/{v[1]:,}")
        L.append(f"| {op.name} | " + " | ".join(cells) + " |")
    L += ["", "Case classes (scripts/silicon/cases.py): uniform (normal values near 1), wide "
          "(every exponent, 10 % subnormal operands, C ±40 binades), cancel (products cancelling "
          "in pairs, a quarter nudged by one ulp), subnormal (operands and C), bigc (C 8-30 "
          "binades above or below the products), overflow (operands and C near the largest "
          "finite, FP8 saturation edges), special (3 % inf/NaN/±0 operands, 10 % C), zeros "
          "(±0 operands, exact cancellation, ±0 C), raw (random bit patterns), chain (one "
          "accumulator through 8-128 instructions: K = 512, wgmma K = 2048 or 4096), extremes "
          "(integer limits, dense and sparse bit patterns).", ""]
    Path(args.out).write_text("\n".join(L) + "\n")
    summary = {"date": meta["date"], "runs": [{k: r[k] for k in ("date", "ops")}
                                              for r in meta["runs"]], "env": env, "outputs": total, "mismatches": total_bad,
               "ops": {k: {m: {"mismatches": v[0], "outputs": v[1]} for m, v in mv.items()}
                       for k, mv in by_op.items()}}
    Path(args.out).with_suffix(".json").write_text(json.dumps(summary, indent=1, sort_keys=True)
                                                   + "\n")
    print(f"wrote {args.out}: {total:,} outputs, {total_bad:,} mismatches")


if __name__ == "__main__":
    main()
