#!/usr/bin/env python3
r"""The Winograd EWMM on the Volta octet against wino_conv's DP-4 form (issue 42 §1): the
figures of docs/winograd_octet.md, printed as Markdown.

    .venv/bin/python scripts/winograd_octet.py [--ppa DIR] [--seed S]

Numerics (tcgen.wino_octet against the Winograd model and the exact EWMM / direct
convolution), cycles per tile (the octet's cycle model, wino_conv's parameters), operand reads
per MAC, and -- when ``--ppa DIR`` holds the ``tcgen ppa --json`` results named below -- area
and energy per output.  The PPA runs are `tcgen ppa`'s (the one flow); this script only reads
their JSON:

    tcgen ppa octet_dense --fraig-conflicts 1000 [--activity sim --cycles 400 --seed 1] \
        --json DIR/octet_{vl,sim}.json
    tcgen ppa wino_conv -p m=2 -p mode=fp16 -p C=16 -p K=8 -p dps=8 --fraig-conflicts 1000 \
        [...] --json DIR/wino8_{vl,sim}.json

Bad arguments: one line on stderr, exit 2.
"""
from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

from tcgen import wino_octet as wo
from tcgen.hw import numeric as num
from tcgen.study import ScriptParser
from tcgen.units.winograd import model as wm

#: the PPA comparison point: the smallest request that fills the octet (K = 8 filters, C = 16
#: channels), wino_conv on the octet's 8 DP-4s
POINT = {"C": 16, "K": 8, "dps": 8}
PPA_FILES = {"octet": "octet", "wino": "wino8"}


def _layer(rng, N, C, K, H, W):
    I = num.from_float(rng.normal(0, 1, (N, C, H, W)), "fp16")
    F = num.from_float(rng.normal(0, 0.5, (K, C, 3, 3)), "fp16")
    return I, F


def _abs_err(got, fmt, exact_ints):
    """|got − exact| (exact in units of 2^−48), float64 (exact differences rounded once)."""
    return np.vectorize(lambda g, e: float(abs(Fraction(float(g)) - Fraction(e, 2 ** 48))),
                        otypes=[float])(num.to_float(got, fmt), exact_ints)


def numerics(seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = ["| layer (F(2,3), N(0,1) data, N(0,½) filters) | mode | octet = model.ewmm | outputs "
           "differing | max \\|Ô − exact\\| octet / DP-4 form | max err / bound octet / DP-4 "
           "form | conv: max \\|O − exact\\| / error_bound |",
           "|---|---|---|---|---|---|---|"]
    for C, K, H in ((16, 8, 8), (64, 16, 8)):
        I, F = _layer(rng, 1, C, K, H, H)
        for mode in ("fp16", "fp16acc"):
            tr: dict = {}
            O = wo.winograd_conv_octet(I, F, 2, mode, trace=tr)
            Ih, Fh = tr["itf"].reshape(1, C, -1, 16), tr["ftf"].reshape(K, C, 16)
            ref = wm.ewmm(Ih, Fh, mode)
            acc = wo.MODES[mode]
            ex = wo.ewmm_exact(Ih, Fh)
            eo, ed = _abs_err(tr["ewmm"], acc, ex), _abs_err(ref, acc, ex)
            bound = wo.ewmm_bound(Ih, Fh, mode)
            conv = "–"
            if mode == "fp16":
                exact = wm.direct_conv_exact(num.to_float(I, "fp16"), num.to_float(F, "fp16"))
                ce = np.vectorize(lambda o, e: float(abs(Fraction(float(o)) - e)),
                                  otypes=[float])(num.to_float(O, "fp32"), exact)
                conv = f"{(ce / wm.error_bound(I, F, 2, mode)).max():.3g}"
            diff = int((tr["ewmm"] != ref).sum())
            out.append(f"| C {C}, K {K}, {H}×{H} ({ref.size:,} Ô) | {mode} | "
                       f"{'yes' if diff == 0 else 'no'} | {diff:,} | {eo.max():.3g} / "
                       f"{ed.max():.3g} | {(eo / bound).max():.3g} / {(ed / bound).max():.3g} |"
                       f" {conv} |")
    return out


def cycles() -> list[str]:
    out = ["| C, K | wino_conv dps 8: EWMM / per tile | octet: WMMAs per 8 tiles | octet per "
           "tile (40 / ping-pong 32 per WMMA) | octet DP-4 utilisation | wino_conv EWMM "
           "utilisation |", "|---|---|---|---|---|---|"]
    for C, K in ((8, 4), (16, 8), (32, 16), (64, 16)):
        w = wo.wino_conv_cycles(C, K)
        o, op = wo.cycles(C, K), wo.cycles(C, K, pingpong=True)
        out.append(f"| {C}, {K} | {w['ewmm']} / {w['per_tile']} | {o['requests']} | "
                   f"{o['per_tile']:g} / {op['per_tile']:g} | {o['utilisation']:.0%} / "
                   f"{op['utilisation']:.0%} | {w['ewmm_utilisation']:.0%} |")
    return out


def operand_reads() -> list[str]:
    """Operand values read per MAC: the octet's request (A 8×16 + B 16×8 FP16, C 8×8 FP32 in,
    D out, per 8·8·16 MACs) against wino_conv's (C raw tiles and K·C transformed filters of
    (m+2)² per tile, K·C·(m+2)² MACs)."""
    C, K, L = POINT["C"], POINT["K"], 16
    macs = 8 * 8 * 16
    octet_fp16 = (8 * 16 + 16 * 8) / macs
    octet_fp32 = 2 * 8 * 8 / macs
    wino_fp16 = (C * L + K * C * L) / (K * C * L)
    return ["| form | FP16 operands read per MAC | FP32 accumulator values moved per MAC | "
            "reuse of an Î / F̂ element |", "|---|---|---|---|",
            f"| octet (A = F̂ 8×16, B = Î 16×8, C / D 8×8) | {octet_fp16:.3f} | {octet_fp32:.3f}"
            f" (C in, D out, every k-tile) | 8 / 8 |",
            f"| wino_conv C {C}, K {K} (raw d tiles + F̂ per tile) | {wino_fp16:.3f} | 0 (Ô "
            f"bank inside) | K = {K} / 1 |"]


def _ppa(d: Path, name: str, activity: str) -> dict | None:
    f = d / f"{name}_{'vl' if activity == 'vectorless' else 'sim'}.json"
    return json.loads(f.read_text()) if f.exists() else None


def ppa(d: Path) -> list[str]:
    C, K = POINT["C"], POINT["K"]
    outputs = K * 4                                     # K·m² outputs per tile
    per_tile = {"octet": wo.cycles(C, K)["per_tile"],
                "wino": wo.wino_conv_cycles(C, K)["per_tile"]}
    rows = ["| design | area µm² | cells | fmax MHz | cycles / tile | pJ / cycle vectorless / "
            "sim | pJ / output vectorless / sim |", "|---|---|---|---|---|---|---|"]
    found = {}
    for key, label in (("octet", "octet_dense (EWMM only, 8 DP-4s)"),
                       ("wino", f"wino_conv F(2,3) fp16 C {C} K {K}, 8 DP-4s (ITF + EWMM + "
                                f"OTF)")):
        vl, sim = (_ppa(d, PPA_FILES[key], a) for a in ("vectorless", "sim"))
        if vl is None:
            continue
        e = [r["power_mw"]["total"] * r["clock_ns"] if r else float("nan") for r in (vl, sim)]
        found[key] = (vl, e)
        rows.append(f"| {label} | {vl['area_um2']:,.0f} | {vl['cell_count']:,} | "
                    f"{vl['fmax_mhz']:.1f} | {per_tile[key]:g} | {e[0]:,.0f} / {e[1]:,.0f} | "
                    f"{e[0] * per_tile[key] / outputs:,.1f} / "
                    f"{e[1] * per_tile[key] / outputs:,.1f} |")
    if len(found) == 2:
        (ov, oe), (wv, we) = found["octet"], found["wino"]
        rows.append("")
        rows.append(f"octet / wino_conv: area {ov['area_um2'] / wv['area_um2']:.2f}×, energy "
                    f"per output {oe[0] * per_tile['octet'] / (we[0] * per_tile['wino']):.2f}× "
                    f"vectorless, {oe[1] * per_tile['octet'] / (we[1] * per_tile['wino']):.2f}× "
                    f"simulated (the octet without the ITF and OTF).")
    return rows


def main(argv=None) -> int:
    ap = ScriptParser(prog="winograd_octet", description=__doc__.split("\n")[0])
    ap.add_argument("--ppa", type=Path, help="folder of the tcgen ppa --json results")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.ppa is not None and not a.ppa.is_dir():
        print(f"winograd_octet: --ppa {a.ppa} is not a folder", file=sys.stderr)
        return 2
    print("## Numerics\n")
    print("\n".join(numerics(a.seed)))
    print("\n## Cycles per tile (back to back)\n")
    print("\n".join(cycles()))
    print("\n## Operand reads\n")
    print("\n".join(operand_reads()))
    if a.ppa is not None:
        print("\n## PPA (osu018)\n")
        print("\n".join(ppa(a.ppa)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
