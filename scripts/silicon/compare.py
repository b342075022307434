"""Compare the measured tensor-core outputs with tcgen's models (issue 40; docs/silicon.md).

    .venv/bin/python scripts/silicon/compare.py DIR [DIR ...] [--ops a,b] [--classes c,d] [--json F]

DIR holds what run_probes.py wrote (silicon_NN.npz, silicon_meta.json).  For every op and case
class: regenerate the inputs (cases.py), check their SHA-256 against the GPU run's, run the
op's model (`tcgen.hw.sm90.INSTRUCTIONS`) and each of its negative controls (one parameter
off: `tcgen.hw.sm90.NEGATIVE_CONTROLS`), and count the outputs whose encoding differs.  Prints
one row per op, class and model; `--json` writes the table (scripts/silicon/report.py reads it).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402
import ops as O  # noqa: E402

from tcgen.hw import sm90  # noqa: E402
from tcgen.study import ScriptParser  # noqa: E402


def load(*dirs: Path):
    """the runs' metadata (merged: ops of every run; ``runs``: each run's date and env) and
    outputs.  A later run's op replaces an earlier one's."""
    meta, out = {"ops": {}, "runs": []}, {}
    for dirpath in map(Path, dirs):
        m = json.loads((dirpath / "silicon_meta.json").read_text())
        for key in ("date", "env"):
            meta.setdefault(key, m[key])
        meta["runs"].append({"dir": dirpath.name, "date": m["date"], "env": m["env"],
                             "ops": sorted(m["ops"])})
        meta["ops"].update(m["ops"])
        for f in sorted(dirpath.glob("silicon_*.npz")):
            with np.load(f) as z:
                for key in z.files:
                    out[key] = z[key]
    return meta, out


def compare(op, meta, data, classes=None, controls=True):
    """rows: one per (case class, model) -- the op's preset and its negative controls"""
    rows = []
    rec = meta["ops"].get(op.name, {})
    models = [("preset", sm90.INSTRUCTIONS[op.name])]
    if controls:
        models += sm90.NEGATIVE_CONTROLS[op.name]
    for cls, _ in cases.classes(op):
        if classes and cls not in classes:
            continue
        key = f"{op.name}/{cls}"
        if key not in data:
            continue
        inp = cases.case(op, cls)
        ok = cases.digest(inp) == rec["cases"][cls]["inputs_sha256"]
        got = data[key].astype(np.uint64)
        for label, model in models:
            want = sm90.mma(model, inp["A"], inp["B"], inp["C"], inp.get("keep"))
            rows.append({"op": op.name, "class": cls, "model": label, "outputs": int(got.size),
                         "mismatches": int((want != got).sum()), "inputs_match": ok})
    return rows


def main(argv=None):
    ap = ScriptParser()
    ap.add_argument("dir", nargs="+", help="one or more run_probes.py outputs")
    ap.add_argument("--ops", default="")
    ap.add_argument("--classes", default="")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    meta, data = load(*args.dir)
    chosen = [O.BY_NAME[n] for n in args.ops.split(",")] if args.ops else O.OPS
    allrows = []
    for op in chosen:
        rows = compare(op, meta, data, classes=set(args.classes.split(",")) - {""})
        for r in rows:
            print(f"{r['op']:16} {r['class']:10} {r['model']:30} {r['mismatches']:8} / "
                  f"{r['outputs']}{'' if r['inputs_match'] else '  INPUTS DIFFER'}", flush=True)
        allrows += rows
    if args.json:
        Path(args.json).write_text(json.dumps(allrows, indent=1))


if __name__ == "__main__":
    main()
