#!/usr/bin/env python3
"""BMMA PPA study (issue 5, deliverable 4): writes reports/bmma_ppa.md.

    .venv/bin/python scripts/bmma_ppa.py -j 2       # every configuration below (cached by synth/)
    .venv/bin/python scripts/bmma_ppa.py --no-full  # skip the full-size m8n8k128 syntheses

What it measures (tcgen.synth.ppa.measure, one clock target, same flow for every row):

* ``bmma_array`` m8n8k128 (the paper's size): F = 1, 2, 4 with the run-time xor/and select,
  and xor-only / and-only at F = 1; about 4 min of synthesis per row here;
* the same generator at m2n2k128 (4 of the 64 output channels; the per-channel datapath is the
  same popcount-128 + s32 tree): F = 1, 2, 4, 8; xor-only (Turing, paper-faithful), and-only
  and xor_and;
* ``int8_mac_array`` of equal MACs per cycle: m2n2k16 F=1 = bmma m2n2k128 F=8 (64 per cycle),
  and (without --no-full) m2n2k32 F=1 = bmma F=4 (128 per cycle) on osu018;
* ``bnn_epilogue`` with the per-channel sense (ours) and without (paper/code: v ≥ τ only);
* the popcount-128 full-adder census against the 128 − 8 = 120 bound;
* the throughput model at the measured clocks beside the paper's RTX 2080 Ti figures.

Every row is measured vectorless and with simulated activity (``sim``, the levelized gate-level
engine, cells from each liberty's functions) on the three libraries, except the rows marked
osu018-only.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from tcgen import study
from tcgen.measure import measure
from tcgen.study import compute_min, find, report_header, run_parallel, write_report
from tcgen.units.bmma import paper
from tcgen.units.bmma import throughput as tp
from tcgen.units.bmma.rtl import compressor_census, popcount_census

ROOT = Path(__file__).resolve().parent.parent

CLOCK_NS = 10.0
CYCLES = 1000
SMALL = {"m": 2, "n": 2, "k": 128}


def configs(full: bool):
    """(label, unit, params, [(liberty, activity), ...]) rows of the study."""
    libs = ("osu018", "nangate45", "sky130hd")
    v3 = [(lib, act) for lib in libs for act in ("vectorless", "sim")]
    osu = [("osu018", "vectorless"), ("osu018", "sim")]
    rows = []
    if full:
        rows += [
            ("bmma m8n8k128 F=1 xor_and", "bmma_array", {"fold": 1}, v3),
            ("bmma m8n8k128 F=2 xor_and", "bmma_array", {"fold": 2}, v3),
            ("bmma m8n8k128 F=4 xor_and", "bmma_array", {"fold": 4}, v3),
            ("bmma m8n8k128 F=1 xor", "bmma_array", {"ops": "xor"}, v3),
            ("bmma m8n8k128 F=1 and", "bmma_array", {"ops": "and"}, v3),
        ]
    rows += [
        ("bmma m2n2k128 F=1 xor_and", "bmma_array", dict(SMALL, fold=1), v3),
        ("bmma m2n2k128 F=2 xor_and", "bmma_array", dict(SMALL, fold=2), osu),
        ("bmma m2n2k128 F=4 xor_and", "bmma_array", dict(SMALL, fold=4), v3),
        ("bmma m2n2k128 F=8 xor_and", "bmma_array", dict(SMALL, fold=8), v3),
        ("bmma m2n2k128 F=1 xor", "bmma_array", dict(SMALL, ops="xor"), v3),
        ("bmma m2n2k128 F=1 and", "bmma_array", dict(SMALL, ops="and"), v3),
        ("bmma m2n2k128 F=1 xor acc s17", "bmma_array", dict(SMALL, ops="xor", acc_width=17),
         osu),
        *([("int8 m2n2k32 F=1 (= bmma F=4 work)", "int8_mac_array", {"m": 2, "n": 2, "k": 32},
            osu)] if full else []),
        ("int8 m2n2k16 F=1 (= bmma F=8 work)", "int8_mac_array", {"m": 2, "n": 2, "k": 16},
         v3),
        ("epilogue n=8 (sense, ours)", "bnn_epilogue", {}, v3),
        ("epilogue n=8 v≥τ only (paper)", "bnn_epilogue", {"sense": False}, v3),
    ]
    return rows


def _measure_point(point):
    label, unit, params, lib, act = point
    t0 = time.time()
    r = measure(unit, params, liberty=lib, clock_ns=CLOCK_NS, activity=act, toggle_rate=0.1,
                workload_cycles=CYCLES, seed=1)
    return r, time.time() - t0


def run_all(full: bool, log, jobs: int = 1):
    """Every (configuration, liberty, activity) point, ``jobs`` at a time (synth/ caches each
    result under a lock, so concurrent runs of the study share work)."""
    points = [(label, unit, params, lib, act) for label, unit, params, pts in configs(full)
              for lib, act in pts]
    results = []
    for (label, unit, params, lib, act), (r, secs) in run_parallel(_measure_point, points, jobs):
        log(f"{label:40s} {lib:10s} {act:10s} area {r['area_um2']:12.0f} "
            f"fmax {r['fmax_mhz']:8.2f} P {r['power_mw']['total']:9.3f} mW "
            f"({secs:.0f} s{' cached' if r.get('cached') else ''})")
        results.append({"label": label, "unit": unit, "params": params, "lib": lib,
                        "activity": act, "r": r})
    return results


def _find(results, label, lib, act="vectorless"):
    x = find(results, label=label, lib=lib, activity=act)
    return x["r"] if x else None


def _req_field(pin, params=None) -> str:
    """Which request field a ``req__payload[i]`` bit of the array is (default m8n8k128): the
    payload with only bit i set, unpacked through the request layout (units/bmma/layouts.py)."""
    import re

    from tcgen.hw.layout import flat, unpack, width_of
    from tcgen.units.bmma import layouts
    from tcgen.units.bmma.params import BmmaArrayParams
    mt = re.fullmatch(r"req__payload\[(\d+)\]", pin or "")
    if not mt:
        return "an internal register"
    i = int(mt.group(1))
    layout = flat(layouts.array_request(params or BmmaArrayParams()))
    for name, value in unpack(layout, [1 << i]).items():
        if int(value[0]):
            label = name.upper() if name in ("a", "b", "c") else name
            bit = f" bit {int(value[0]).bit_length() - 1}" if width_of(layout[name].shape) > 1 \
                else ""
            return f"request field {label}{bit}"
    return "a request bit"


def report(results, full: bool, wall_s: float) -> str:
    tools = next((x["r"].get("tools") for x in results if x["r"].get("tools")), {})
    out = [
        "# BMMA PPA study (issue 5): bit tensor-core array, INT8 MAC array, BNN epilogue",
        "",
        report_header(f"python scripts/bmma_ppa.py{'' if full else ' --no-full'}",
                      wall_s=wall_s, compute_min=compute_min(x["r"] for x in results),
                      tools=tools),
        "Flow: tcgen.synth.ppa.measure — Yosys `synth -flatten`, "
        "`dfflibmap`, `abc -liberty -D` at the clock target with `-constr` (ABC buffers "
        "high-fanout nets and sizes gates), OpenSTA timing and power (docs/ppa.md).",
        f"Clock target {CLOCK_NS:g} ns (100 MHz) for every row. Liberties: osu018 (OSU 0.18 µm, "
        "Debian qflow-tech-osu018), nangate45, sky130hd (../shared/liberty). Power: "
        "`vectorless` = every pin toggles 0.1 per cycle (the papers' method); `sim` = activity "
        f"from a gate-level simulation of the unit's own registered workload ({CYCLES} cycles, "
        "seed 1: random operands and C, half the requests chained, random op where selectable; "
        "levelized zero-delay engine with the cells' liberty functions, toggle counts equal to "
        "Icarus on the vendor models net for net, docs/ppa.md).",
        "",
        "A *bit-op* is one binary multiply-accumulate (one XOR or AND product added into an "
        "output), so m8n8k128 = 8192 bit-ops per operation (the paper's count); an INT8 *MAC* "
        "is one 8×8-bit product added into an output.",
        "",
    ]

    # -- findings ------------------------------------------------------------------------------
    libs = ("osu018", "nangate45", "sky130hd")
    size = "m8n8k128" if _find(results, "bmma m8n8k128 F=1 xor_and", "osu018") else "m2n2k128"
    g = lambda lab, lib="osu018", act="vectorless": _find(results, lab, lib, act)  # noqa: E731
    b1v, b1s = g(f"bmma {size} F=1 xor_and"), g(f"bmma {size} F=1 xor_and", act="sim")
    bxv, bxs = g(f"bmma {size} F=1 xor"), g(f"bmma {size} F=1 xor", act="sim")
    if b1v and b1s and bxv:
        def spread(pairs, key="area_um2"):
            return study.spread([a[key] / b[key] for a, b in pairs
                                 if a is not None and b is not None], missing="–")
        both = [(lib, act) for lib in libs for act in ("vectorless", "sim")]
        i8 = [(g("int8 m2n2k16 F=1 (= bmma F=8 work)", lib, act),
               g("bmma m2n2k128 F=8 xor_and", lib, act)) for lib, act in both]
        f4 = [(g(f"bmma {size} F=4 xor_and", lib, act), g(f"bmma {size} F=1 xor_and", lib, act))
              for lib, act in both]
        xo = [(g(f"bmma {size} F=1 xor", lib), g(f"bmma {size} F=1 xor_and", lib)) for lib in libs]
        ep = [(g("epilogue n=8 (sense, ours)", lib), g("epilogue n=8 v≥τ only (paper)", lib))
              for lib in libs]
        s17 = (g("bmma m2n2k128 F=1 xor acc s17"), g("bmma m2n2k128 F=1 xor"))
        other = " / ".join(f"{g(f'bmma {size} F=1 xor_and', lib)['energy_pj_per_op']:.3f}"
                           for lib in libs[1:] if g(f"bmma {size} F=1 xor_and", lib))
        sim = b1s.get("sim", {})
        out += ["## Findings", "",
                f"* Energy per bit-op, {size} F=1 xor_and on osu018 at 100 MHz: "
                f"{b1v['energy_pj_per_op']:.3f} pJ vectorless, {b1s['energy_pj_per_op']:.3f} pJ "
                f"with simulated activity (random operands: inputs toggle "
                f"{sim.get('input_toggle_rate', float('nan')):.2f} per cycle, nets "
                f"{sim.get('mean_toggle_rate', float('nan')):.2f} on average, against the "
                f"vectorless 0.1); xor-only hardware {bxv['energy_pj_per_op']:.3f} pJ vectorless"
                + (f", {bxs['energy_pj_per_op']:.3f} pJ sim" if bxs else "") +
                f". nangate45 / sky130hd vectorless: {other} pJ.",
                f"* {size} F=1: {b1v['area_um2'] / 1e6:.2f} mm², {b1v['cell_count']:,} cells, "
                f"{b1v['power_mw']['total']:.0f} mW vectorless at 100 MHz on osu018, fmax "
                f"{b1v['fmax_mhz']:.0f} MHz.",
                f"* An INT8 MAC array doing the same number of MACs per cycle (m2n2k16 against "
                f"bmma m2n2k128 F=8) is {spread(i8)} the area and {spread(i8, 'energy_pj_per_op')}"
                f" the energy per op (three libraries, vectorless and sim).",
                f"* Folding trades area for energy ({size}): F=4 is {spread(f4)} the area of F=1, "
                f"but the sequencer, the operand selects and the accumulator registers are paid "
                f"per cycle, so energy per bit-op is {spread(f4, 'energy_pj_per_op')} F=1's.",
                f"* Turing's XOR-only array (paper-faithful) is {spread(xo)} the area of the "
                f"run-time xor/and select ({size}, vectorless, three libraries): the select is a "
                f"multiplexer per product bit."
                + (f" An s17 accumulator (enough for every workload in the notes) is "
                   f"{spread([s17])} the area of s32 (m2n2k128 xor, osu018)."
                   if all(s17) else ""),
                f"* The epilogue's per-channel sense (correct for γ ≤ 0) is {spread(ep)} the "
                f"area of the paper's v ≥ τ.",
                ""]

    # -- popcount census -----------------------------------------------------------------------
    out += ["## Popcount-128 full-adder count against the bound", "",
            "Each full adder turns 3 bits into 2 (removes one bit), a half adder removes none; "
            "128 input bits must end as the 8 bits of the count, so any FA/HA network needs "
            "≥ 128 − 8 = 120 full adders. Census of tcgen.hw.intarith.popcount "
            "(Dadda tree + one "
            "carry-propagate adder, counted as a ripple adder), counted as the logic is built "
            "(`tcgen.hw.intarith.adder_census`):", "",
            "| n | tree FA | tree HA | CPA FA | CPA HA | FA total | bound n − bits(n) | "
            "FA over bound | HA total |", "|---|---|---|---|---|---|---|---|---|"]
    for n in (32, 64, 128, 256):
        c = popcount_census(n)
        out.append(f"| {n} | {c['tree_fa']} | {c['tree_ha']} | {c['cpa_fa']} | {c['cpa_ha']} "
                   f"| **{c['fa']}** | {c['bound']} | {100 * (c['fa'] / c['bound'] - 1):+.1f} % "
                   f"| {c['ha']} |")
    from amaranth import Signal
    from tcgen.hw.intarith import compress
    ch = compressor_census(lambda m: compress(
        m, [[Signal(name=f"p{i}") for i in range(128)] + [Signal(name="c0")]] +
        [[Signal(name=f"c{i}")] for i in range(1, 32)], 32, "ch"))
    out += ["", f"The popcount-128 meets the bound exactly (120 FA) with 16 half adders; counting "
            f"a half adder as half a full adder it is 128 FA-equivalents, +6.7 % over the bound. "
            f"One bmma_array output channel (128 product bits + the 32-bit base in one tree, "
            f"then a 32-bit CPA) uses {ch['fa']} FA and {ch['ha']} HA: the accumulation costs "
            f"{ch['fa'] - 120} FA beyond the popcount instead of a separate 32-bit adder.", ""]

    # -- main tables ------------------------------------------------------------------------------
    def table(lib, act):
        rows = [x for x in results if x["lib"] == lib and x["activity"] == act]
        if not rows:
            return []
        t = [f"### {lib}, {act}", "",
             "| configuration | area µm² | cells | fmax MHz | crit. path from | power mW @100 MHz "
             "| ops/cycle | energy pJ/op | ops/(mm²·s) @100 MHz | ops/(mm²·s) @fmax |",
             "|---|---|---|---|---|---|---|---|---|---|"]
        for x in rows:
            r = x["r"]
            t.append(f"| {x['label']} | {r['area_um2']:,.0f} | {r['cell_count']:,} | "
                     f"{r['fmax_mhz']:.1f} | {r.get('startpoint', '')} | "
                     f"{r['power_mw']['total']:.3f} | {r['ops_per_cycle']:g} {r['ops_unit']} | "
                     f"{r['energy_pj_per_op']:.4f} | {r['gops_per_mm2'] * 1e9:.3e} | "
                     f"{r['gops_per_mm2_fmax'] * 1e9:.3e} |")
        return t + [""]

    out += ["## Area, timing, power", ""]
    for lib in ("osu018", "nangate45", "sky130hd"):
        for act in ("vectorless", "sim"):
            out += table(lib, act)

    # -- ratios ------------------------------------------------------------------------------------
    out += ["## Ratios (same flow, same clock, same library)", "",
            "| library | activity | INT8/BMMA area at equal work (F=4 pair) | INT8/BMMA energy "
            "per op (F=4 pair) | INT8/BMMA area (F=8 pair) | INT8/BMMA energy per op (F=8 pair) "
            "| xor_and/xor area | and/xor area | "
            "xor/xor_and energy per op | F=4/F=1 area | F=4/F=1 energy per op | "
            "epilogue sense/paper area |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def ratio(a, b, key):
        return study.ratio(None if a is None else a[key], None if b is None else b[key],
                           "{:.2f}", "–")

    for lib in ("osu018", "nangate45", "sky130hd"):
        for act in ("vectorless", "sim"):
            g = lambda lab: _find(results, lab, lib, act)  # noqa: E731
            b1, b4, b8 = (g(f"bmma m2n2k128 F={f} xor_and") for f in (1, 4, 8))
            if b1 is None:
                continue
            i32, i16 = g("int8 m2n2k32 F=1 (= bmma F=4 work)"), \
                g("int8 m2n2k16 F=1 (= bmma F=8 work)")
            bx, ba = g("bmma m2n2k128 F=1 xor"), g("bmma m2n2k128 F=1 and")
            es, ep = g("epilogue n=8 (sense, ours)"), g("epilogue n=8 v≥τ only (paper)")
            cells = [ratio(i32, b4, 'area_um2'), ratio(i16, b8, 'area_um2'),
                     ratio(b1, bx, 'area_um2'), ratio(b4, b1, 'area_um2')]
            if all(c == "–" for c in cells):
                continue
            out.append(f"| {lib} | {act} | {ratio(i32, b4, 'area_um2')} | "
                       f"{ratio(i32, b4, 'energy_pj_per_op')} | {ratio(i16, b8, 'area_um2')} | "
                       f"{ratio(i16, b8, 'energy_pj_per_op')} | "
                       f"{ratio(b1, bx, 'area_um2')} | {ratio(ba, bx, 'area_um2')} | "
                       f"{ratio(bx, b1, 'energy_pj_per_op')} | {ratio(b4, b1, 'area_um2')} | "
                       f"{ratio(b4, b1, 'energy_pj_per_op')} | {ratio(es, ep, 'area_um2')} |")
    out.append("")

    # -- full size ------------------------------------------------------------------------------
    if _find(results, "bmma m8n8k128 F=1 xor_and", "osu018"):
        out += ["## Full size (m8n8k128) ratios", "",
                "| library | activity | F=2/F=1 area | F=4/F=1 area | F=2/F=1 energy per op | "
                "F=4/F=1 energy per op | xor_and/xor area | and/xor area | xor/xor_and energy "
                "per op | and/xor_and energy per op | m8n8 / (16 × m2n2) area | m8n8/m2n2 "
                "energy per op |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for lib in ("osu018", "nangate45", "sky130hd"):
            for act in ("vectorless", "sim"):
                g = lambda lab: _find(results, lab, lib, act)  # noqa: E731
                f1, f2, f4 = (g(f"bmma m8n8k128 F={f} xor_and") for f in (1, 2, 4))
                bx, ba = g("bmma m8n8k128 F=1 xor"), g("bmma m8n8k128 F=1 and")
                sm = g("bmma m2n2k128 F=1 xor_and")
                if f1 is None:
                    continue
                prox = (f"{f1['area_um2'] / (16 * sm['area_um2']):.2f}" if sm else "–")
                out.append(f"| {lib} | {act} | {ratio(f2, f1, 'area_um2')} | "
                           f"{ratio(f4, f1, 'area_um2')} | {ratio(f2, f1, 'energy_pj_per_op')} | "
                           f"{ratio(f4, f1, 'energy_pj_per_op')} | {ratio(f1, bx, 'area_um2')} | "
                           f"{ratio(ba, bx, 'area_um2')} | {ratio(bx, f1, 'energy_pj_per_op')} | "
                           f"{ratio(ba, f1, 'energy_pj_per_op')} | {prox} | "
                           f"{ratio(f1, sm, 'energy_pj_per_op')} |")
        out.append("")

    # -- fmax -----------------------------------------------------------------------------------
    big = _find(results, "bmma m8n8k128 F=1 xor_and", "osu018")
    out += ["## Timing: what limits fmax", "",
            "The flow passes ABC a constraint file (driving cell and load: the library's smallest "
            "buffer), which makes Yosys run ABC's `buffer; upsize; dnsize` after mapping. "
            "Without it (this study's first version) every net kept one minimum-size driver and "
            "the full array's fmax was 8.96 MHz on osu018: the `d.valid` → `can_advance` net "
            "enables all 2,048 accumulator flip-flops and `~chain` selects 2,048 base "
            "multiplexers. With buffering those nets are buffer trees and the critical path "
            "runs through the datapath"
            + (f": m8n8k128 F=1 reaches {big['fmax_mhz']:.0f} MHz on osu018, from "
               f"`{big.get('startpoint', '?')}` ({_req_field(big.get('startpoint'))}) to "
               f"`{big.get('endpoint', '?')}` ({big.get('endpoint_cell') or 'a flip-flop'})"
               if big else "") + ": the op select (a multiplexer per product bit), the Dadda "
            "tree, the CPA and the accumulator. Folded arrays (F > 1) "
            "add the F-way operand select in front of the tree.", ""]

    # -- throughput -------------------------------------------------------------------------------
    big = _find(results, "bmma m8n8k128 F=1 xor_and", "osu018")
    small = _find(results, "bmma m2n2k128 F=1 xor_and", "osu018")
    clocks = [(100.0, "100 MHz target")]
    if small is not None:
        clocks.append((small["fmax_mhz"], "m2n2k128 osu018 fmax"))
    if big is not None:
        clocks.append((big["fmax_mhz"], "m8n8k128 osu018 fmax"))
    out += ["## Throughput model (units/bmma/throughput.py)", "",
            "BMMA operations per 8 images from the notes' layer lists (tap skipping at borders, "
            "8/8/128 padding); the model reproduces the notes' totals exactly for all six "
            "networks (tested). One array, one operation per F cycles, chained operations "
            "without stalls, operand delivery assumed sufficient; the non-binary first layer "
            "(BWN) is excluded (its add/sub count is listed). Paper: RTX 2080 Ti BTC-FMT, "
            "batch 512/1024 (Table 7).", "",
            "| network | BMMA / 8 images | tile utilization | BWN add/sub / 8 images | "
            "paper 2080 Ti images/s | " +
            " | ".join(f"m8n8k128 F=1 @ {c:.1f} MHz ({d}) images/s" for c, d in clocks) +
            " | m8n8k128 F=1 arrays at 100 MHz to match the paper |",
            "|---|---|---|---|---|" + "---|" * len(clocks) + "---|"]
    for name in tp.NETWORKS:
        tot = tp.network_ops(name)
        ref = paper.PAPER_2080TI["BTC-FMT"][name][1]
        ips = [tp.images_per_second(name, (8, 8, 128), 1, c) for c, _ in clocks]
        out.append(f"| {name} | {tot['ops']:,} | {tot['utilization']:.3f} | "
                   f"{tot['bwn_addsub']:,} | {ref:,.0f} | " +
                   " | ".join(f"{v:,.0f}" for v in ips) + f" | {ref / ips[0]:.1f} |")
    r18 = tp.images_per_second("ResNet-18", (8, 8, 128), 1, 100.0)
    peak = tp.gpu_peak()
    gpu_r18 = paper.PAPER_2080TI["BTC-FMT"]["ResNet-18"][1]          # images/s, Table 7
    ops_r18 = paper.NOTES_BMMA_PER_8["ResNet-18"]                     # BMMA per 8 images
    out += ["", f"ResNet-18: one m8n8k128 F=1 array at 100 MHz gives {r18:,.0f} images/s "
            f"(binary layers only) against the paper's {gpu_r18 / 1e3:.2f}K images/s on the "
            f"2080 Ti; {gpu_r18 / r18:.1f} such arrays match it. F = 4 (Turing-like) divides by 4. "
            f"The GPU's issue-model peak ({peak / 1e9:.0f} G BMMA/s, notes §2) would give "
            f"{8 * peak / ops_r18:,.0f} images/s: the measured {gpu_r18 / 1e3:.2f}K is "
            f"{100 * gpu_r18 / (8 * peak / ops_r18):.1f} % of it. Batch 1 uses "
            f"{tp.network_ops('ResNet-18', batch=1)['utilization']:.3f} of the tile "
            f"(7 of 8 rows idle), so batch-1 images/s equal the batch-8 figure / 8.", ""]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-full", action="store_true", help="skip the m8n8k128 syntheses")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="measurements run in parallel (each synthesis uses one core)")
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bmma_ppa.md"))
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1, got {args.jobs}")
    results = run_all(not args.no_full, lambda s: print(s, flush=True), args.jobs)
    text = report(results, not args.no_full, time.time() - t0)
    path, = write_report(args.output, text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
