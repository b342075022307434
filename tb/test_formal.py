"""Combinational equivalence proofs of the RTL against independent references (issue 16 §1;
docs/formal.md).

Each test proves, with :func:`tcgen.synth.formal.prove_equivalent` (a Yosys miter and its SAT
solver), that a generated unit computes exactly what a reference in ``tb/formal_refs/``
computes, for every input: plain behavioural Verilog written from the unit's specification,
not from tcgen's RTL (Yosys's own ``$mul``, ripple chains of ``+``, naive sums of products, an
FP8 adder and multiplier built on exact integers).  Each kind of proof also has a negative
control -- a mutated copy of the RTL (one operator flipped) or a deliberately wrong reference
-- that must come back NOT equivalent, with a counterexample that is checked to be real.

Proofs that take seconds run in ``make test``; the larger configurations are ``slow``
(``make test-slow``, and ``make formal``, which writes ``reports/formal.md``).  With
``TCGEN_FORMAL_OUT=<folder>`` every proof also writes its result there as JSON (read by
``scripts/formal_report.py``).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tcgen.generate import verilog
from tcgen.hw import numeric
from tcgen.hw.generate import component_verilog
from tcgen.registry import get_unit
from tcgen.synth import tools
from tcgen.synth.formal import Design, EquivResult, prove_equivalent
from tcgen.synth.tools import FlowInputError
from tcgen.units.bmma.rtl import BmmaChannel, ChannelParams, Int8MacChannel, _Block
from tcgen.units.lut.rtl import plane_bits

from formal_record import record

REFS = Path(__file__).parent / "formal_refs"
#: solver limit of every proof; the quick ones finish in seconds, the slow ones in minutes
TIMEOUT = 900
slow = pytest.mark.slow


# -- helpers ------------------------------------------------------------------------------------
def _rtl(unit: str, **params) -> str:
    return verilog(unit, get_unit(unit).params(**params), top="dut")


def _flip(text: str, lhs: str, old: str, new: str) -> str:
    """A mutant: in the one ``assign <lhs> = ...;`` line, the first `` old `` becomes `` new ``."""
    pat = re.compile(rf"^(\s*assign {re.escape(lhs)}\s*=.*?) {re.escape(old)} (.*)$", re.M)
    out, n = pat.subn(rf"\1 {new} \2", text, count=1)
    assert n == 1, f"no 'assign {lhs} = ... {old} ...' line to mutate"
    return out


@pytest.fixture
def prove(request):
    """prove(kind, config, ref_file, ref_top, ref_params, rtl_text, expect=...) -> EquivResult,
    recorded under $TCGEN_FORMAL_OUT when set."""
    def run(kind: str, config: dict, ref_file: str, ref_top: str, ref_params: dict,
            rtl_text: str, *, expect: str = "proved", rtl: str = "", reference: str = "",
            timeout: float = TIMEOUT) -> EquivResult:
        r = prove_equivalent(Design(REFS / ref_file, top=ref_top, params=ref_params),
                             Design(rtl_text, top="dut"), timeout=timeout)
        record(request, kind, config, r, expect=expect, rtl=rtl,
               reference=reference or f"tb/formal_refs/{ref_file}: {ref_top} {ref_params}")
        assert r.status == expect, r.describe()
        if expect == "counterexample":
            assert r.mismatched, r.describe()
        return r
    return run


# -- popcount vs a ripple chain of adders -------------------------------------------------------
POPCOUNT_QUICK = [1, 2, 3, 7, 8, 15, 16, 24]
POPCOUNT_SLOW = [32, 40, 48]


def _popcount(prove, n, **kw):
    return prove("popcount", {"n": n}, "popcount.v", "ref_popcount",
                 {"N": n, "W": n.bit_length()}, kw.pop("text", None) or _rtl("popcount", n=n),
                 rtl="popcount (compressor tree)", **kw)


@pytest.mark.parametrize("n", POPCOUNT_QUICK)
def test_popcount(prove, n):
    _popcount(prove, n)


@slow
@pytest.mark.parametrize("n", POPCOUNT_SLOW)
def test_popcount_slow(prove, n):
    _popcount(prove, n)


def test_popcount_mutant_is_caught(prove):
    """Negative control: the first full adder's sum XOR made an OR."""
    text = _flip(_rtl("popcount", n=8), "popc_s0_0_0", "^", "|")
    r = _popcount(prove, 8, text=text, expect="counterexample")
    x = r.inputs["x"]
    assert r.gold_outputs["count"] == bin(x).count("1") != r.gate_outputs["count"]


# -- int_mul (Baugh-Wooley, Dadda tree) vs Yosys $mul ------------------------------------------
SIGNS = [(False, False), (True, False), (False, True), (True, True)]
MUL_QUICK = [(1, 1), (1, 8), (8, 1), (2, 8), (8, 2), (3, 5), (4, 4), (5, 6), (6, 6)]
MUL_SLOW = [(a, b) for a in range(1, 9) for b in range(1, 9) if (a, b) not in MUL_QUICK]


def _int_mul(prove, aw, bw, sa, sb, **kw):
    return prove("int_mul", {"a_width": aw, "b_width": bw, "a_signed": sa, "b_signed": sb},
                 "int_mul.v", "ref_int_mul", {"AW": aw, "BW": bw, "AS": int(sa), "BS": int(sb)},
                 kw.pop("text", None) or _rtl("int_mul", a_width=aw, b_width=bw, a_signed=sa,
                                              b_signed=sb),
                 rtl="int_mul (Baugh-Wooley partial products, Dadda tree)", **kw)


@pytest.mark.parametrize("sa,sb", SIGNS, ids=["uu", "su", "us", "ss"])
@pytest.mark.parametrize("aw,bw", MUL_QUICK, ids=[f"{a}x{b}" for a, b in MUL_QUICK])
def test_int_mul(prove, aw, bw, sa, sb):
    _int_mul(prove, aw, bw, sa, sb)


@pytest.mark.parametrize("aw,bw", MUL_QUICK + [pytest.param(8, 8, marks=slow)],
                         ids=[f"{a}x{b}" for a, b in MUL_QUICK + [(8, 8)]])
def test_int_mul_booth4(prove, aw, bw):
    """Radix-4 modified Booth (intarith.booth_mul, fp_mul mult=booth4's significand product)
    equals $mul on every unsigned operand pair, up to 6 × 6 in make test and 8 × 8 slow (SAT
    on two different multiplier structures grows fast: 11 × 11 ran past 10 min; FP16's
    product is simulated instead, tb/test_fp_rtl.py::test_mul_variants)."""
    prove("int_mul", {"a_width": aw, "b_width": bw, "mult": "booth4"}, "int_mul.v",
          "ref_int_mul", {"AW": aw, "BW": bw, "AS": 0, "BS": 0},
          _rtl("int_mul", a_width=aw, b_width=bw, mult="booth4"),
          rtl="int_mul mult=booth4 (radix-4 Booth rows, Dadda tree)")


@slow
@pytest.mark.parametrize("sa,sb", SIGNS, ids=["uu", "su", "us", "ss"])
@pytest.mark.parametrize("aw,bw", MUL_SLOW, ids=[f"{a}x{b}" for a, b in MUL_SLOW])
def test_int_mul_slow(prove, aw, bw, sa, sb):
    _int_mul(prove, aw, bw, sa, sb)


def _signed(v, w):
    return v - (1 << w) if v >> (w - 1) else v


def test_int_mul_mutant_is_caught(prove):
    """Negative control: partial product a0·b0 made a0 | b0 (signed 4x4)."""
    text = _flip(_rtl("int_mul", a_width=4, b_width=4, a_signed=True, b_signed=True),
                 "mul_pp0_0", "&", "|")
    r = _int_mul(prove, 4, 4, True, True, text=text, expect="counterexample")
    a, b = _signed(r.inputs["a"], 4), _signed(r.inputs["b"], 4)
    assert r.gold_outputs["p"] == (a * b) % 256 != r.gate_outputs["p"]


# -- int_dot vs a naive sum of products ---------------------------------------------------------
DOT_QUICK = [(1, 4, 4, 8, True), (2, 4, 4, 10, True), (2, 4, 4, 10, False),
             (4, 2, 2, 6, False), (2, 4, 4, 6, True), (3, 4, 3, 9, True)]
DOT_SLOW = [(4, 3, 3, 8, True), (4, 4, 4, 12, True), (4, 4, 4, 12, False), (2, 5, 5, 12, True)]


def _int_dot(prove, k, aw, bw, acc, signed, ref_signed=None, **kw):
    ref_signed = signed if ref_signed is None else ref_signed
    return prove("int_dot", {"k": k, "a_width": aw, "b_width": bw, "acc_width": acc,
                             "signed": signed},
                 "int_dot.v", "ref_int_dot",
                 {"K": k, "AW": aw, "BW": bw, "ACC": acc, "SIGNED": int(ref_signed)},
                 _rtl("int_dot", k=k, a_width=aw, b_width=bw, acc_width=acc, signed=signed),
                 rtl="int_dot (array multipliers and c in one Dadda tree)", **kw)


def _dot_id(c):
    return f"k{c[0]}_{c[1]}x{c[2]}_acc{c[3]}_{'s' if c[4] else 'u'}"


@pytest.mark.parametrize("k,aw,bw,acc,signed", DOT_QUICK, ids=[_dot_id(c) for c in DOT_QUICK])
def test_int_dot(prove, k, aw, bw, acc, signed):
    _int_dot(prove, k, aw, bw, acc, signed)


@slow
@pytest.mark.parametrize("k,aw,bw,acc,signed", DOT_SLOW, ids=[_dot_id(c) for c in DOT_SLOW])
def test_int_dot_slow(prove, k, aw, bw, acc, signed):
    _int_dot(prove, k, aw, bw, acc, signed)


def test_int_dot_wrong_reference_is_caught(prove):
    """Negative control: the signed RTL against the reference read as unsigned."""
    r = _int_dot(prove, 2, 4, 4, 10, True, ref_signed=False, expect="counterexample",
                 reference="tb/formal_refs/int_dot.v: ref_int_dot with SIGNED=0 (wrong)")
    a = [(r.inputs["a"] >> (4 * i)) & 15 for i in range(2)]
    b = [(r.inputs["b"] >> (4 * i)) & 15 for i in range(2)]
    true = (r.inputs["c"] + sum(_signed(x, 4) * _signed(y, 4) for x, y in zip(a, b))) % 1024
    as_unsigned = (r.inputs["c"] + sum(x * y for x, y in zip(a, b))) % 1024
    assert (r.gold_outputs["y"], r.gate_outputs["y"]) == (as_unsigned, true)


# -- lut_dp4 (INT entries) vs a naive multiply-accumulate ---------------------------------------
LUT_QUICK = [(4, "int8", "int24", 2), (2, "int8", "int24", 1), (3, "int10", "int24", 4),
             (5, "int11", "int24", 3), (4, "int16", "int32", 8), (2, "int19", "int32", 8)]
LUT_SLOW = [(6, "int8", "int24", 8), (6, "int18", "int32", 8), (4, "int19", "int24", 5),
            (5, "int16", "int32", 6)]


def _lut(prove, k, entry, acc, w_bits, **kw):
    return prove("lut_dp4", {"k": k, "entry": entry, "acc": acc, "w_bits": w_bits},
                 "lut_dp4_int.v", "ref_lut_dp4_int",
                 {"K": k, "EW": int(entry[3:]), "ACC": int(acc[3:]), "PB": plane_bits(w_bits)},
                 kw.pop("text", None) or _rtl("lut_dp4", k=k, entry=entry, acc=acc,
                                              w_bits=w_bits),
                 rtl="lut_dp4, INT entries (mux, shift, XOR negation with carry-in, add)", **kw)


@pytest.mark.parametrize("k,entry,acc,w_bits", LUT_QUICK,
                         ids=[f"k{c[0]}_{c[1]}_{c[2]}_w{c[3]}" for c in LUT_QUICK])
def test_lut_dp4_int(prove, k, entry, acc, w_bits):
    _lut(prove, k, entry, acc, w_bits)


@slow
@pytest.mark.parametrize("k,entry,acc,w_bits", LUT_SLOW,
                         ids=[f"k{c[0]}_{c[1]}_{c[2]}_w{c[3]}" for c in LUT_SLOW])
def test_lut_dp4_int_slow(prove, k, entry, acc, w_bits):
    _lut(prove, k, entry, acc, w_bits)


def test_lut_dp4_mutant_is_caught(prove):
    """Negative control: the conditional negation's XOR with the sign made an AND."""
    text = _flip(_rtl("lut_dp4", k=4, entry="int8", acc="int24", w_bits=2), "entry_xor",
                 "^", "&")
    r = _lut(prove, 4, "int8", "int24", 2, text=text, expect="counterexample")
    i = r.inputs
    e = _signed((i["lut"] >> (8 * i["idx"])) & 255, 8)
    want = (i["c"] + (-1 if i["sign"] else 1) * e * (1 << i["plane"])) % (1 << 24)
    assert r.gold_outputs["y"] == want != r.gate_outputs["y"]


# -- BMMA: one output channel and small tiles of one fold cycle ---------------------------------
def _channel_text(kc, w, ops):
    return component_verilog(BmmaChannel(ChannelParams(chunk=kc, acc_width=w, ops=ops)), "dut")


def _channel(prove, kc, w, ops, **kw):
    if ops == "xor_and":
        top, params = "ref_bmma_channel_sel", {"KC": kc, "W": w}
    else:
        top, params = "ref_bmma_channel", {"KC": kc, "W": w, "OP": int(ops == "and")}
    return prove("bmma", {"piece": "channel", "chunk": kc, "acc_width": w, "ops": ops},
                 "bmma.v", top, params, kw.pop("text", None) or _channel_text(kc, w, ops),
                 rtl="bmma BmmaChannel (base + popc(a op b), one Dadda tree)", **kw)


def _tile(prove, rows, cols, kc, w):
    text = component_verilog(_Block(BmmaChannel, rows, cols,
                                    ChannelParams(chunk=kc, acc_width=w, ops="xor_and")), "dut")
    return prove("bmma", {"piece": "tile", "rows": rows, "cols": cols, "chunk": kc,
                          "acc_width": w, "ops": "xor_and"},
                 "bmma.v", "ref_bmma_tile", {"ROWS": rows, "COLS": cols, "KC": kc, "W": w}, text,
                 rtl="bmma tile: a rows x cols block of BmmaChannel (the array's datapath of "
                     "one fold cycle)")


@pytest.mark.parametrize("ops", ["xor", "and", "xor_and"])
def test_bmma_channel(prove, ops):
    _channel(prove, 8, 8, ops)


@pytest.mark.parametrize("rows,cols,kc,w", [(2, 2, 4, 8), (3, 2, 8, 8)])
def test_bmma_tile(prove, rows, cols, kc, w):
    _tile(prove, rows, cols, kc, w)


@slow
def test_bmma_channel_slow(prove):
    _channel(prove, 16, 8, "xor_and")


@slow
@pytest.mark.parametrize("rows,cols,kc,w", [(4, 4, 8, 8), (2, 2, 16, 16)])
def test_bmma_tile_slow(prove, rows, cols, kc, w):
    _tile(prove, rows, cols, kc, w)


@slow
@pytest.mark.parametrize("w", [16, 32])
def test_int8_mac_channel_slow(prove, w):
    """The INT8 MAC baseline's channel (one signed 8x8 product per cycle) vs a naive MAC."""
    text = component_verilog(Int8MacChannel(ChannelParams(chunk=1, acc_width=w)), "dut")
    prove("bmma", {"piece": "int8_mac_channel", "chunk": 1, "acc_width": w},
          "bmma.v", "ref_int8_mac_channel", {"CHUNK": 1, "W": w}, text,
          rtl="bmma Int8MacChannel (IntMul products, inverted sign bits, one Dadda tree)")


def test_bmma_mutant_is_caught(prove):
    """Negative control: the XOR channel's bit products made a | b."""
    r = _channel(prove, 8, 8, "xor", text=_flip(_channel_text(8, 8, "xor"), "prod", "^", "|"),
                 expect="counterexample")
    i = r.inputs
    base = i["c"] if i["take_c"] else i["acc"]
    assert r.gold_outputs["nxt"] == (base + bin(i["a"] ^ i["b"]).count("1")) % 256 \
        != r.gate_outputs["nxt"]


# -- FP8 fp_add / fp_mul vs an independent straightforward implementation ------------------------
FP_FORMATS = {"fp8_e4m3": {"E": 4, "M": 3, "IEEE": 0}, "fp8_e5m2": {"E": 5, "M": 2, "IEEE": 1},
              "fp16": {"E": 5, "M": 10, "IEEE": 1}}
FP_CONFIGS = [(op, fmt, mode) for op in ("fp_add", "fp_mul") for fmt in ("fp8_e4m3", "fp8_e5m2")
              for mode in ("rne", "rtz")]
FP_REF = ("tb/formal_refs/fp.v: ref_{op}, behavioural from the format definitions (exact "
          "integer result, one rounding); equal to tcgen.hw.numeric's exhaustive table "
          "(test_fp_references_match_the_model)")


def _fp(prove, op, fmt, mode, ref_mode=None, **kw):
    params = {**FP_FORMATS[fmt], "RTZ": int((ref_mode or mode) == "rtz")}
    return prove(op, {"fmt": fmt, "rounding": mode, "ftz": False, "pipeline": 0}, "fp.v",
                 f"ref_{op}", params,
                 _rtl(op, fmt=fmt, rounding=mode, ftz=False, pipeline=0),
                 rtl=f"{op} (hw library, combinational)",
                 reference=kw.pop("reference", None) or FP_REF.format(op=op), **kw)


@pytest.mark.parametrize("op,fmt,mode", FP_CONFIGS)
def test_fp8(prove, op, fmt, mode):
    _fp(prove, op, fmt, mode)


MUL_VARIANTS = [{"norm": "early"}, {"rshift": "narrow"}, {"norm": "early", "rshift": "narrow"},
                {"mult": "booth4"}, {"mult": "booth4", "norm": "early", "rshift": "narrow"},
                {"rinc": "compound"},
                # issue 43's lowest-energy multiplier (docs/peers.md), as mult=auto builds it
                # (array at FP8 and BF16) and as FP16/FP32 do (booth4)
                {"tree": "tdm", "rinc": "compound", "cpa": "brent_kung"},
                {"mult": "booth4", "tree": "tdm", "rinc": "compound", "cpa": "brent_kung"}]


def _mul_variant_cases():
    """(mode, fmt, variant): E4M3 in both modes in make test, E5M2 slow; the lowest-energy
    combination (the last two variants) in make test at one mode each (array RNE, Booth RTZ),
    the other modes slow."""
    out = []
    for mode in ("rne", "rtz"):
        for fmt in ("fp8_e4m3", "fp8_e5m2"):
            for i, v in enumerate(MUL_VARIANTS):
                fast = fmt == "fp8_e4m3" and (
                    i < len(MUL_VARIANTS) - 2 or (mode == "rne") == ("mult" not in v))
                out.append(pytest.param(mode, fmt, v, marks=() if fast else slow,
                                        id=f"{mode}-{fmt}-"
                                           + "-".join(f"{k}={x}" for k, x in v.items())))
    return out


@pytest.mark.parametrize("mode,fmt,variant", _mul_variant_cases())
def test_fp8_mul_variants(prove, fmt, mode, variant):
    """fp_mul's issue-17 variants against the same reference, every pair of FP8 operands
    (subnormals included): norm=early (leading zeros from the significands, a 1-bit step
    after the product), rshift=narrow (subnormal results shifted on p + 2 bits), rinc=compound
    (the packed result and its +1 side by side, the round decision selecting), and issue
    43's lowest-energy combination (tree=tdm rinc=compound cpa=brent_kung, array and booth4)."""
    params = {**FP_FORMATS[fmt], "RTZ": int(mode == "rtz")}
    cfg = {"fmt": fmt, "rounding": mode, "ftz": False, "pipeline": 0, **variant}
    label = " ".join(f"{k}={v}" for k, v in variant.items())
    prove("fp_mul", cfg, "fp.v", "ref_fp_mul", params, _rtl("fp_mul", **cfg),
          rtl=f"fp_mul {label} (hw library, combinational)",
          reference=FP_REF.format(op="fp_mul"))


#: the structural final adders (intarith.prefix_add): make test proves sklansky in a signed
#: 6 x 6 int_mul and in FP8 fp_mul; slow: every topology, 8 x 8 and 7 x 5, every FP8 mode
CPA = ["ripple", "sklansky", "kogge_stone", "brent_kung"]


@pytest.mark.parametrize("aw,bw,sa,sb,cpa", [(6, 6, True, True, "sklansky")] + [
    pytest.param(*shape, c, marks=slow) for shape in ((6, 6, True, True), (8, 8, False, False),
                                                      (7, 5, True, False)) for c in CPA
    if (shape, c) != ((6, 6, True, True), "sklansky")])
def test_int_mul_cpa(prove, aw, bw, sa, sb, cpa):
    """int_mul with a structural carry-propagate adder equals $mul on every operand pair."""
    prove("int_mul", {"a_width": aw, "b_width": bw, "a_signed": sa, "b_signed": sb,
                      "cpa": cpa}, "int_mul.v", "ref_int_mul",
          {"AW": aw, "BW": bw, "AS": int(sa), "BS": int(sb)},
          _rtl("int_mul", a_width=aw, b_width=bw, a_signed=sa, b_signed=sb, cpa=cpa),
          rtl=f"int_mul cpa={cpa} (Dadda tree, {cpa} prefix adder)")


@pytest.mark.parametrize("fmt,mode,cpa", [("fp8_e4m3", "rne", "sklansky")] + [
    pytest.param(f, md, c, marks=slow) for f in ("fp8_e4m3", "fp8_e5m2") for md in ("rne", "rtz")
    for c in CPA if (f, md, c) != ("fp8_e4m3", "rne", "sklansky")])
def test_fp8_mul_cpa(prove, fmt, mode, cpa):
    """fp_mul cpa=<topology> (also with booth4 + early + narrow: the candidate default)."""
    params = {**FP_FORMATS[fmt], "RTZ": int(mode == "rtz")}
    for extra in ({}, {"mult": "booth4", "norm": "early", "rshift": "narrow"}):
        cfg = {"fmt": fmt, "rounding": mode, "ftz": False, "pipeline": 0, "cpa": cpa, **extra}
        prove("fp_mul", cfg, "fp.v", "ref_fp_mul", params, _rtl("fp_mul", **cfg),
              rtl=f"fp_mul cpa={cpa} {' '.join(f'{k}={v}' for k, v in extra.items())}",
              reference=FP_REF.format(op="fp_mul"))


@pytest.mark.parametrize("aw,bw,sa,sb,mult", [(6, 6, True, True, "array")] + [
    pytest.param(*shape, marks=slow) for shape in ((8, 8, False, False, "array"),
                                                   (7, 5, True, False, "array"),
                                                   (8, 8, False, False, "booth4"))])
def test_int_mul_tree_gkl(prove, aw, bw, sa, sb, mult):
    """int_mul tree=gkl (Goncharov-Kulikov-Levtsov MDFA blocks) equals $mul on every pair."""
    prove("int_mul", {"a_width": aw, "b_width": bw, "a_signed": sa, "b_signed": sb,
                      "mult": mult, "tree": "gkl"}, "int_mul.v", "ref_int_mul",
          {"AW": aw, "BW": bw, "AS": int(sa), "BS": int(sb)},
          _rtl("int_mul", a_width=aw, b_width=bw, a_signed=sa, b_signed=sb, mult=mult,
               tree="gkl"),
          rtl=f"int_mul mult={mult} tree=gkl")


def test_int_mul_tree_tdm(prove):
    """int_mul tree=tdm (three-greedy on arrival times) equals $mul on every pair."""
    prove("int_mul", {"a_width": 6, "b_width": 6, "a_signed": True, "b_signed": True,
                      "mult": "array", "tree": "tdm"}, "int_mul.v", "ref_int_mul",
          {"AW": 6, "BW": 6, "AS": 1, "BS": 1},
          _rtl("int_mul", a_width=6, b_width=6, a_signed=True, b_signed=True, mult="array",
               tree="tdm"),
          rtl="int_mul mult=array tree=tdm")


@pytest.mark.parametrize("fmt,mode", [("fp8_e4m3", "rne")] + [
    pytest.param(f, md, marks=slow) for f in ("fp8_e4m3", "fp8_e5m2") for md in ("rne", "rtz")
    if (f, md) != ("fp8_e4m3", "rne")])
def test_fp8_mul_tree_gkl(prove, fmt, mode):
    """fp_mul tree=gkl, alone and with booth4 + early + narrow + Kogge-Stone."""
    params = {**FP_FORMATS[fmt], "RTZ": int(mode == "rtz")}
    for extra in ({}, {"mult": "booth4", "norm": "early", "rshift": "narrow",
                       "cpa": "kogge_stone"}):
        cfg = {"fmt": fmt, "rounding": mode, "ftz": False, "pipeline": 0, "tree": "gkl",
               **extra}
        prove("fp_mul", cfg, "fp.v", "ref_fp_mul", params, _rtl("fp_mul", **cfg),
              rtl=f"fp_mul tree=gkl {' '.join(f'{k}={v}' for k, v in extra.items())}",
              reference=FP_REF.format(op="fp_mul"))


ISOLATE = [("fp_mul", "specials"), ("fp_add", "far+specials"), ("fp_add", "far"),
           ("fp_add", "specials")]


@pytest.mark.parametrize("op,isolate,fmt,mode", [
    (op, iso, "fp8_e4m3", "rne") for op, iso in ISOLATE[:2]] + [
    pytest.param(op, iso, f, md, marks=slow) for op, iso in ISOLATE
    for f in ("fp8_e4m3", "fp8_e5m2") for md in ("rne", "rtz")
    if (f, md, (op, iso) in ISOLATE[:2]) != ("fp8_e4m3", "rne", True)])
def test_fp8_isolate(prove, op, isolate, fmt, mode):
    """Operand isolation (issue 43) changes no result: fp_mul isolate=specials (both
    significands held at 0 for a zero, inf or NaN operand; with Booth and the early
    normalization too), fp_add isolate=far / specials / both (the alignment shifter's input
    held at 0 when the smaller operand shifts wholly into the sticky bit), every FP8 pair."""
    params = {**FP_FORMATS[fmt], "RTZ": int(mode == "rtz")}
    extras = ({}, {"mult": "booth4", "norm": "early", "rshift": "narrow"}) \
        if op == "fp_mul" else ({},)
    for extra in extras:
        cfg = {"fmt": fmt, "rounding": mode, "ftz": False, "pipeline": 0, "isolate": isolate,
               **extra}
        prove(op, cfg, "fp.v", f"ref_{op}", params, _rtl(op, **cfg),
              rtl=f"{op} isolate={isolate} {' '.join(f'{k}={v}' for k, v in extra.items())}",
              reference=FP_REF.format(op=op))



#: gate (issue 43): (op, gate, extra params) -- the general path's input held at 0 beside a
#: short normalization, the subnormal right shift held at 0 unless the result underflows
GATE = [("fp_mul", "norm+subnormal", {}),
        ("fp_mul", "norm+subnormal", {"mult": "booth4", "norm": "early", "rshift": "narrow"}),
        ("fp_add", "norm+subnormal", {}),
        ("fp_mul", "norm", {"norm": "early"}), ("fp_mul", "subnormal", {"rshift": "narrow"}),
        ("fp_add", "norm", {}), ("fp_add", "subnormal", {"isolate": "far+specials"})]


@pytest.mark.parametrize("op,gate,extra,fmt,mode", [
    (*g, "fp8_e4m3", "rne") for g in GATE[:3]] + [
    pytest.param(*g, f, md, marks=slow) for i, g in enumerate(GATE)
    for f in ("fp8_e4m3", "fp8_e5m2") for md in ("rne", "rtz")
    if (f, md, i < 3) != ("fp8_e4m3", "rne", True)],
    ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else None)
def test_fp8_gate(prove, op, gate, extra, fmt, mode):
    """Gating (issue 43) changes no result: fp_mul gate=norm (two normal significands: a 1-bit
    normalization beside the general count and shift, their inputs held at 0), fp_add gate=norm
    (no cancellation: a 2-bit one), gate=subnormal (the right shift held at 0 unless the result
    underflows) -- every FP8 pair, against the reference."""
    params = {**FP_FORMATS[fmt], "RTZ": int(mode == "rtz")}
    cfg = {"fmt": fmt, "rounding": mode, "ftz": False, "pipeline": 0, "gate": gate, **extra}
    prove(op, cfg, "fp.v", f"ref_{op}", params, _rtl(op, **cfg),
          rtl=f"{op} gate={gate} {' '.join(f'{k}={v}' for k, v in extra.items())}",
          reference=FP_REF.format(op=op))


def test_fp8_gate_mutant_is_caught(prove):
    """Negative control: fp_mul gate=norm with the fast path taken when only one significand
    is normal (a subnormal operand's product can have more leading zeros than the 1-bit step
    fixes) -- the proof finds the pair."""
    cfg = {"fmt": "fp8_e4m3", "rounding": "rne", "ftz": False, "pipeline": 0, "gate": "norm"}
    text = _flip(_rtl("fp_mul", **cfg), "gate_fast", "&", "|")
    prove("fp_mul", cfg, "fp.v", "ref_fp_mul", {**FP_FORMATS["fp8_e4m3"], "RTZ": 0}, text,
          rtl="fp_mul gate=norm, fast when either significand is normal (mutant)",
          reference=FP_REF.format(op="fp_mul"), expect="counterexample")

@slow
@pytest.mark.parametrize("mode", ["rne", "rtz"])
def test_fp16_add_slow(prove, mode):
    """FP16 fp_add (minutes; FP16 fp_mul's 11x11 significand product does not finish in 10 min).
    The reference is fp.v at E=5, M=10: its FP8 instances are checked against the model's
    table, and the FP16 unit against the model on all 2^32 pairs by simulation
    (reports/hw_verification_exhaustive.md)."""
    _fp(prove, "fp_add", "fp16", mode)


@pytest.mark.parametrize("op", ["fp_add", "fp_mul"])
def test_fp8_wrong_rounding_is_caught(prove, op):
    """Negative control: the RNE unit against the RTZ reference.

    The counterexample is a real difference of the two modes in the numeric model."""
    r = _fp(prove, op, "fp8_e5m2", "rne", ref_mode="rtz", expect="counterexample",
            reference=f"tb/formal_refs/fp.v: ref_{op} with RTZ=1 (wrong mode)")
    f = numeric.fp_add if op == "fp_add" else numeric.fp_mul
    a, b = r.inputs["a"], r.inputs["b"]
    assert r.gold_outputs["y"] == int(f(a, b, "fp8_e5m2", "rtz"))
    assert r.gate_outputs["y"] == int(f(a, b, "fp8_e5m2", "rne"))


def _fp_reference_outputs(tmp_path, reading: str) -> np.ndarray:
    """The 8 FP references' outputs on all 2^16 operand pairs, [pair, configuration], as
    ``reading`` reads the Verilog: ``yosys`` (the netlist Yosys elaborates from fp.v with the
    proofs' chparam values, simulated by Icarus) or ``icarus`` (fp.v itself)."""
    lines = ["module tb;", "  reg [7:0] a, b;", "  integer i;"]
    files = [str(REFS / "fp.v")]
    for n, (op, fmt, mode) in enumerate(FP_CONFIGS):
        p = {**FP_FORMATS[fmt], "RTZ": int(mode == "rtz")}
        lines.append(f"  wire [7:0] y{n};")
        if reading == "yosys":
            sets = " ".join(f"-set {k} {v}" for k, v in p.items())
            tools.run("yosys", ["-q", "-p", f"read_verilog {REFS / 'fp.v'}; chparam {sets} "
                               f"ref_{op}; hierarchy -check -top ref_{op}; proc; flatten; "
                               f"hierarchy -top ref_{op}; opt_clean; rename ref_{op} net_{n}; "
                               f"write_verilog -noattr net_{n}.v"], cwd=tmp_path)
            lines.append(f"  net_{n} u{n} (.a(a), .b(b), .y(y{n}));")
            files.append(f"net_{n}.v")
        else:
            ps = ", ".join(f".{k}({v})" for k, v in p.items())
            lines.append(f"  ref_{op} #({ps}) u{n} (.a(a), .b(b), .y(y{n}));")
    ys = ", ".join(f"y{n}" for n in range(len(FP_CONFIGS)))
    lines += ["  initial begin", "    for (i = 0; i < 65536; i = i + 1) begin",
              "      {a, b} = i; #1;",
              f'      $display("{" ".join(["%h"] * len(FP_CONFIGS))}", {ys});',
              "    end", "    $finish;", "  end", "endmodule"]
    (tmp_path / "tb.v").write_text("\n".join(lines) + "\n")
    tools.run("iverilog", ["-o", "sim", "tb.v", *files], cwd=tmp_path)
    out = tools.run("vvp", ["-n", "sim"], cwd=tmp_path)
    rows = [ln.split() for ln in out.splitlines()
            if re.fullmatch(r"[0-9a-f]{2}( [0-9a-f]{2})*", ln)]
    got = np.array([[int(v, 16) for v in r] for r in rows], dtype=np.int64)
    assert got.shape == (65536, len(FP_CONFIGS))        # (an x anywhere drops its line)
    return got


def _check_fp_references(got: np.ndarray, reading: str):
    a = np.repeat(np.arange(256), 256)
    b = np.tile(np.arange(256), 256)
    for n, (op, fmt, mode) in enumerate(FP_CONFIGS):
        f = numeric.fp_add if op == "fp_add" else numeric.fp_mul
        want = np.asarray(f(a, b, fmt, mode)).astype(np.int64)
        bad = np.flatnonzero(got[:, n] != want)
        assert bad.size == 0, (
            f"{op} {fmt} {mode}, the reference as {reading} reads it, differs from the model "
            f"at {bad.size} pairs, e.g. a={a[bad[0]]:#04x} b={b[bad[0]]:#04x}: "
            f"{got[bad[0], n]:#04x} vs {want[bad[0]]:#04x}")


def test_fp_references_match_the_model(tmp_path):
    """The FP references, as Yosys reads them for the proofs, against tcgen.hw.numeric on every
    operand pair of all 8 configurations.  The references are independent of the RTL and equal
    the model everywhere, so the proofs above tie the RTL to the model on all 2^16 pairs."""
    _check_fp_references(_fp_reference_outputs(tmp_path, "yosys"), "Yosys")


@slow
def test_fp_references_match_the_model_icarus(tmp_path):
    """The same, as Icarus reads fp.v itself: the references mean one thing to both tools
    (a signed/unsigned ambiguity would read differently)."""
    _check_fp_references(_fp_reference_outputs(tmp_path, "icarus"), "Icarus")


# -- the mechanism's own contract ---------------------------------------------------------------
def test_ports_must_match():
    ref = Design(REFS / "popcount.v", params={"N": 8, "W": 5})
    with pytest.raises(FlowInputError, match=r"ports of ref_popcount \(gold\) and dut \(gate\) "
                                             r"differ: count is output \[4:0\] in gold, "
                                             r"output \[3:0\] in gate"):
        prove_equivalent(ref, Design(_rtl("popcount", n=8), top="dut"))


def test_missing_top_and_bad_inputs():
    rtl = Design(_rtl("popcount", n=8), top="dut")
    with pytest.raises(FlowInputError, match="the gold Verilog has no module 'nope'"):
        prove_equivalent(Design(REFS / "popcount.v", top="nope"), rtl)
    with pytest.raises(FlowInputError, match="the gold Verilog has 4 modules .*name its top"):
        prove_equivalent(Design(REFS / "bmma.v"), rtl)
    with pytest.raises(FlowInputError, match="cannot read the gold Verilog"):
        prove_equivalent(Design(REFS / "missing.v"), rtl)
    with pytest.raises(FlowInputError, match="parameter N must be an integer"):
        prove_equivalent(Design(REFS / "popcount.v", params={"N": "8"}), rtl)
    with pytest.raises(FlowInputError, match="timeout must be a positive number"):
        prove_equivalent(Design(REFS / "popcount.v"), rtl, timeout=0)


def test_state_is_refused():
    seq = "module s(input clk, input d, output reg q); always @(posedge clk) q <= d; endmodule"
    comb = "module s(input clk, input d, output q); assign q = d; endmodule"
    with pytest.raises(FlowInputError, match=r"s \(gold\) holds state \(1 \$dff\)"):
        prove_equivalent(Design(seq), Design(comb))


@pytest.mark.parametrize("body", ["wire w; assign y = w & a;", "assign y = 1'bx & a;"],
                         ids=["undriven", "x"])
def test_undefined_values_are_any_value(body):
    """An undriven net or an x is any value, not a convenient one: w & a is not 0."""
    undefined = f"module u(input a, output y); {body} endmodule"
    zero = "module z(input a, output y); assign y = 1'b0; endmodule"
    r = prove_equivalent(Design(zero), Design(undefined))
    assert r.status == "counterexample" and r.inputs == {"a": 1}


def test_timeout_is_a_verdict():
    r = prove_equivalent(Design(REFS / "popcount.v", params={"N": 64, "W": 7}),
                         Design(_rtl("popcount", n=64), top="dut"), timeout=1)
    assert r.status == "timeout" and not r.proved and r.inputs is None


def test_formal_is_not_part_of_the_ppa_cache_key(monkeypatch, tmp_path):
    """Editing synth/formal.py keeps every cached PPA result (flow_hash leaves it out); editing
    a flow module does not."""
    import shutil
    from tcgen.synth import ppa
    for f in Path(ppa.__file__).parent.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    monkeypatch.setattr(ppa, "__file__", str(tmp_path / "ppa.py"))
    before = ppa.flow_hash()
    with open(tmp_path / "formal.py", "a") as fh:
        fh.write("# an edit\n")
    assert ppa.flow_hash() == before
    with open(tmp_path / "sta.py", "a") as fh:
        fh.write("# an edit\n")
    assert ppa.flow_hash() != before
