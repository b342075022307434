"""Choose the stored silicon sample that `make test` checks without a GPU (issue 40).

    .venv/bin/python scripts/silicon/sample.py DIR [DIR ...] -o hw/data/sm90_silicon.npz

DIR is a run_probes.py output.  For every op and case class: the first 3 tiles, plus up to 3
tiles on which each negative control (tcgen.hw.sm90.NEGATIVE_CONTROLS) differs from the
silicon -- the tiles that sit on a rule's boundary -- searched among the class's first 256
tiles; a chain class keeps 1 tile, and a wgmma tile its first 16 rows (`shrink`).  Writes
inputs and measured outputs in their narrowest dtype, and the run's metadata as JSON.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402
import compare  # noqa: E402
import ops as O  # noqa: E402

from tcgen.hw import sm90  # noqa: E402
from tcgen.study import ScriptParser  # noqa: E402

DTYPES = {"fp16": np.uint16, "bf16": np.uint16, "tf32": np.uint32, "fp32": np.uint32,
          "e4m3": np.uint8, "e5m2": np.uint8, "s8": np.uint8, "b1": np.uint8, "s32": np.uint32}


def shrink(op, cls, sel, D):
    """The stored slice of the chosen tiles: a wgmma tile keeps its first 16 rows (a chain
    tile 4: an output row depends on its row of A alone), a chain class its first tile (the
    chains are the sample's bulk).  Keeps hw/data/sm90_silicon.npz under 2 MB."""
    rows = 16 if cls != "chain" else 4
    if cls == "chain":
        sel, D = {k: v[:1] for k, v in sel.items()}, D[:1]
    if op.name.startswith("wg_"):
        sel = dict(sel, A=sel["A"][:, :, :rows], C=sel["C"][:, :rows])
        D = D[:, :rows]
    return sel, D


def pick(op, inp, got):
    T = got.shape[0]
    cand = np.arange(min(T, 256))
    sub = {k: v[cand] for k, v in inp.items()}
    chosen = list(cand[:3])
    for label, model in sm90.NEGATIVE_CONTROLS[op.name]:
        want = sm90.mma(model, sub["A"], sub["B"], sub["C"], sub.get("keep"))
        differ = np.flatnonzero((want != got[cand]).any(axis=(1, 2)))
        chosen += [int(cand[i]) for i in differ[:3]]
    return sorted(set(int(x) for x in chosen))


def main(argv=None):
    ap = ScriptParser()
    ap.add_argument("dir", nargs="+", help="one or more run_probes.py outputs")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)
    meta, data = compare.load(*args.dir)
    arrays, counts, refuted = {}, {}, {}
    for op in O.OPS:
        sop = sm90.INSTRUCTIONS[op.name]
        for cls, _ in cases.classes(op):
            key = f"{op.name}/{cls}"
            if key not in data:
                continue
            inp = cases.case(op, cls)
            got = data[key].astype(np.uint64)
            if cls == "chain":
                tiles = [0] if op.name.startswith("wg_") else [0, 1]
            else:
                tiles = pick(op, inp, got)
            sel, D = shrink(op, cls, {k: v[tiles] for k, v in inp.items()}, got[tiles])
            assert (sm90.mma(sop, sel["A"], sel["B"], sel["C"], sel.get("keep")) == D).all(), key
            arrays[f"{key}/A"] = sel["A"].astype(DTYPES[op.a])
            arrays[f"{key}/B"] = sel["B"].astype(DTYPES[op.b])
            arrays[f"{key}/C"] = sel["C"].astype(DTYPES[op.c])
            arrays[f"{key}/D"] = D.astype(DTYPES[op.c])
            if "keep" in sel:
                arrays[f"{key}/keep"] = sel["keep"].astype(np.uint8)
            counts[key] = int(D.size)
            for label, model in sm90.NEGATIVE_CONTROLS[op.name]:
                if (sm90.mma(model, sel["A"], sel["B"], sel["C"], sel.get("keep")) != D).any():
                    refuted.setdefault(op.name, set()).add(label)
            print(f"{key}: {len(tiles)} tiles, {D.size} outputs", flush=True)
    info = {"source": "scripts/silicon/run_probes.py on the device machine; "
                      "scripts/silicon/sample.py chose these tiles",
            "date": meta["date"], "env": meta["env"],
            "runs": [{k: r[k] for k in ("date", "ops")} for r in meta["runs"]],
            "outputs": counts, "total_outputs": sum(counts.values()),
            "refuted": {k: sorted(v) for k, v in sorted(refuted.items())}}
    arrays["meta"] = np.frombuffer(json.dumps(info, sort_keys=True).encode(), dtype=np.uint8)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    print(f"{args.out}: {sum(counts.values())} outputs, {Path(args.out).stat().st_size} bytes")


if __name__ == "__main__":
    main()
