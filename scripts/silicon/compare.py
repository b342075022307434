"""Compare the measured tensor-core outputs with tcgen's models (issue 40; docs/silicon.md).

    .venv/bin/python scripts/silicon/compare.py DIR [--ops a,b] [--preset NAME] [--json F]

DIR holds what run_probes.py wrote (silicon_NN.npz, silicon_meta.json).  For every op and case
class: regenerate the inputs (cases.py), check their SHA-256 against the GPU run's, run the
op's model preset (`tcgen.hw.numeric.SILICON_PRESETS`, or `--preset` for another), and count
the outputs whose encoding differs.  Prints one row per op and class; `--json` writes the table.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402
import ops as O  # noqa: E402

from tcgen.hw import numeric as N  # noqa: E402


def load(dirpath: Path):
    meta = json.loads((dirpath / "silicon_meta.json").read_text())
    out = {}
    for f in sorted(dirpath.glob("silicon_*.npz")):
        with np.load(f) as z:
            for key in z.files:
                out[key] = z[key]
    return meta, out


def inputs_for_model(op, inp):
    """matrix-form inputs -> (a [T,S,m,n,kk], b [T,S,m,n,kk], c [T,m,n]) with the kept
    products only for a sparse op (kk = k/2)."""
    A, B = inp["A"], inp["B"]
    if op.sparse:
        keep = inp["keep"]                                       # [T,S,m,k/4,2]
        T, S, m, ch, _ = keep.shape
        cols = (np.arange(ch)[None, None, None, :, None] * 4 + keep).reshape(T, S, m, ch * 2)
        a = np.take_along_axis(A, cols, axis=-1)                 # [T,S,m,k/2]
        # b for row i uses B[cols[i], :] -> [T,S,m,n,k/2]
        Bt = np.swapaxes(B, -1, -2)                              # [T,S,n,k]
        b = np.take_along_axis(Bt[:, :, None, :, :], cols[:, :, :, None, :].repeat(op.n, 3), axis=-1)
        a = np.broadcast_to(a[:, :, :, None, :], b.shape)
        return a, b
    a = np.broadcast_to(A[:, :, :, None, :], A.shape[:3] + (op.n, op.k))
    b = np.broadcast_to(np.swapaxes(B, -1, -2)[:, :, None, :, :], A.shape[:3] + (op.n, op.k))
    return a, b


def run_model(op, inp, preset):
    """D [T, m, n] encodings from the preset (a dict, below)."""
    kind = preset["kind"]
    C = inp["C"].astype(np.uint64)
    if kind in ("int", "b1"):
        A = inp["A"].astype(np.int64)
        B = inp["B"].astype(np.int64)
        if kind == "int":
            A = np.where(A >= 128, A - 256, A)
            B = np.where(B >= 128, B - 256, B)
        acc = np.where(C >= (1 << 31), C.astype(np.int64) - (1 << 32), C.astype(np.int64))
        for s in range(A.shape[1]):
            if kind == "b1":
                if preset["op"] == "xor":
                    p = (A[:, s, :, :, None] ^ B[:, s, None, :, :]).sum(axis=2)
                else:
                    p = (A[:, s, :, :, None] & B[:, s, None, :, :]).sum(axis=2)
            else:
                p = np.einsum("tmk,tkn->tmn", A[:, s], B[:, s])
            acc = acc + p
            if preset.get("saturate"):
                acc = np.clip(acc, -(1 << 31), (1 << 31) - 1)
            else:
                acc = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)
        return (acc.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    a, b = inputs_for_model(op, inp)
    fmt = preset["fmt"]
    if preset.get("convert"):                 # FP8 operands widened first (exact)
        a = N.fp_convert(a, preset["src_a"], preset["convert"])
        b = N.fp_convert(b, preset["src_b"], preset["convert"])
    if preset.get("tf32_truncate"):
        a = (a >> np.uint64(13))
        b = (b >> np.uint64(13))
    elif preset.get("tf32_round"):
        a = N.fp_convert(a, "fp32", fmt, "rne")
        b = N.fp_convert(b, "fp32", fmt, "rne")
    kk = a.shape[-1]
    blocks = preset.get("blocks") or [(0, kk)]
    acc = C
    blocks = [np.arange(lo, hi) if isinstance(lo, int) else np.asarray(lo)
              for lo, hi in ((blk if isinstance(blk, tuple) else (blk, None)) for blk in blocks)]
    for s in range(a.shape[1]):
        for idx in blocks:
            acc = N.fused_dot(np.take(a[:, s], idx, axis=-1), np.take(b[:, s], idx, axis=-1), acc, fmt=fmt,
                              acc=preset["acc"], out=preset["out"], window=preset["window"],
                              mode=preset.get("mode", "auto"), zero=preset.get("zero", "pos"),
                              overflow=preset.get("overflow", "inf"))
            if preset.get("between"):
                acc = preset["between"](acc)
    return acc


TF32 = N.FloatFormat(8, 10, name="tf32")


def presets_for(op):
    """the op's baseline hypotheses (name -> preset)"""
    if op.a == "s8":
        return {"int_wrap": {"kind": "int"}, "int_sat": {"kind": "int", "saturate": True}}
    if op.a == "b1":
        return {"b1": {"kind": "b1", "op": "xor" if "xor" in op.ptx else "and"}}
    acc = op.c
    base = {"kind": "fused", "acc": acc, "out": acc, "window": 27}
    if op.a in ("fp16", "bf16"):
        return {"fused27": dict(base, fmt=op.a)}
    if op.a == "tf32":
        return {"trunc_fused27": dict(base, fmt=TF32, tf32_truncate=True),
                "rne_fused27": dict(base, fmt=TF32, tf32_round=True)}
    # FP8
    out = {}
    if op.name.startswith("wg_") is False:
        kk = op.k // 2 if op.sparse else op.k
        half = kk // 2
        out["fp16_2blocks"] = dict(base, fmt="fp16", convert="fp16", src_a=FP8[op.a],
                                   src_b=FP8[op.b], blocks=[(0, half), (half, kk)])
        out["fp16_2blocks_rev"] = dict(out["fp16_2blocks"], blocks=[(half, kk), (0, half)])
    else:
        out["fp16_1block"] = dict(base, fmt="fp16", convert="fp16", src_a=FP8[op.a],
                                  src_b=FP8[op.b])
        out["fp16_2blocks"] = dict(out["fp16_1block"], blocks=[(0, 16), (16, 32)])
        out["fp8_1block"] = dict(base, fmt=FP8[op.a])
    return out


FP8 = {"e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2"}


def compare(op, meta, data, preset_names=None, classes=None):
    rows = []
    rec = meta["ops"].get(op.name, {})
    presets = presets_for(op)
    for cls, _ in cases.classes(op):
        if classes and cls not in classes:
            continue
        key = f"{op.name}/{cls}"
        if key not in data:
            continue
        inp = cases.case(op, cls)
        ok = cases.digest(inp) == rec["cases"][cls]["inputs_sha256"]
        got = data[key].astype(np.uint64)
        for name, p in presets.items():
            if preset_names and name not in preset_names:
                continue
            want = run_model(op, inp, p)
            bad = want != got
            rows.append({"op": op.name, "class": cls, "preset": name, "outputs": int(got.size),
                         "mismatches": int(bad.sum()), "inputs_match": ok})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--ops", default="")
    ap.add_argument("--classes", default="")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    meta, data = load(Path(args.dir))
    chosen = [O.BY_NAME[n] for n in args.ops.split(",")] if args.ops else O.OPS
    allrows = []
    for op in chosen:
        rows = compare(op, meta, data, classes=set(args.classes.split(",")) - {""})
        for r in rows:
            print(f"{r['op']:16} {r['class']:10} {r['preset']:18} {r['mismatches']:8} / "
                  f"{r['outputs']}{'' if r['inputs_match'] else '  INPUTS DIFFER'}", flush=True)
        allrows += rows
    if args.json:
        Path(args.json).write_text(json.dumps(allrows, indent=1))


if __name__ == "__main__":
    main()
