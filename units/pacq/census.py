"""Counts of the PacQ designs as built, for the claims ledger (claims/pacq.toml, issue 39).

* :func:`table1_census` -- the parallel FP-INT multiplier and the DP-4s counted in the units of
  the paper's Table I (INT16 adders of the parallel INT11 multiplier, hidden-bit adders,
  exponent adders, normalization units, rounding units; multipliers and FP16 adders per DP-4),
  read from the elaborated RTL (Amaranth RTLIL of :class:`~tcgen.units.pacq.rtl.PacqMul`, the
  adder census of :func:`~tcgen.hw.fpint.parallel_int_mul`, the submodules of the DP-4s).
* :func:`numerics_census` -- how often the text's two numerical statements fail, counted on the
  golden model (bit-exact with the RTL, tb/test_pacq_rtl.py): "normalization to the outputs is
  unnecessary" (§IV) and "there is no approximation in our design" (§V).

Both run in about a second and import nothing outside the package and numpy/amaranth.
"""
from __future__ import annotations

import copy
import functools
import re

import numpy as np

__all__ = ["table1_census", "numerics_census"]


def _rtlil(component, name: str) -> str:
    from amaranth.back import rtlil
    return rtlil.convert(component, name=name)


def _adds(text: str):
    """(type, Y width, Y net, A net) of every $add/$sub cell of an RTLIL text."""
    out = []
    for typ, body in re.findall(r"^  cell (\$add|\$sub) \S+\n(.*?)\n  end", text, re.S | re.M):
        y = re.search(r"connect \\Y (.+)", body).group(1).strip()
        a = re.search(r"connect \\A (.+)", body).group(1).strip()
        w = int(re.search(r"parameter \\Y_WIDTH (\d+)", body).group(1))
        out.append((typ, w, y, a))
    return out


def _wires(text: str) -> set[str]:
    return set(re.findall(r"^  wire (?:width \d+ )?(?:(?:input|output) \d+ )?(?:signed )?\\(\S+)",
                          text, re.M))


def _submodules(component) -> list[str]:
    """Names of the top level's submodules (elaborated one level only, so they are marked as
    inspected rather than left unused)."""
    component._MustUse__silence = True
    m = component.elaborate(None)
    m._MustUse__silence = True
    for sub in list(m._named_submodules.values()) + list(m._anon_submodules):
        sub = sub[0] if isinstance(sub, tuple) else sub
        sub._MustUse__silence = True
    return list(m._named_submodules)


def table1_census(wbits: str = "both", rounding: str = "rne", D: int = 2) -> dict:
    """The Table I census of the design built with these parameters (a fresh copy: callers
    may modify it)."""
    return copy.deepcopy(_table1_census(wbits, rounding, D))


@functools.lru_cache(maxsize=None)
def _table1_census(wbits: str = "both", rounding: str = "rne", D: int = 2) -> dict:
    """Table I's units counted in our paper-mode ``pacq_mul`` (``wbits``, ``rounding``) and in
    ``dp4_baseline`` / ``dp4_pacq`` (``D`` trees).

    Keys: ``int16_adders`` (two-operand adders of the parallel INT11 array: compressor calls of
    parallel_int_mul, each a 13/15-bit carry-propagate adder), ``int16_adders_int2_only`` (the
    same array built for INT2 only), ``hidden_adders`` and ``hidden_adder_bits`` (the per-lane
    hidden-bit adds mA + i[14:10]), ``exp_adders`` (adders/subtractors on the exponent: the
    shared e_A − lz of the subnormal normalizer plus one per lane), ``normalizers`` (the shared
    LZC + shifter plus the per-lane 1-bit normalizations), ``rounders`` (per-lane round_pack
    instances), ``lanes``; ``fp16_mul_rounders`` (the baseline FPMul's); ``dp4_*``: multipliers
    and FP16 adders of the DP-4s (``dp4_pacq_tree_adders`` excludes the ΣA accumulator's,
    ``dp4_pacq_sum_a_adders``)."""
    from amaranth import Module, Signal

    from tcgen.hw.fpint import parallel_int_mul
    from tcgen.hw.intarith import adder_census

    from .params import Dp4BaselineParams, Dp4PacqParams, Fp16MulParams, PacqMulParams
    from .rtl import Dp4Baseline, Dp4Pacq, Fp16Mul, PacqMul

    out: dict = {}
    for key, wb in (("int16_adders", wbits), ("int16_adders_int2_only", "2")):
        m = Module()
        m._MustUse__silence = True
        with adder_census() as c:
            parallel_int_mul(m, Signal(11, name="mA"), Signal(16, name="w"), wb,
                             Signal(name="int2") if wb == "both" else None)
        out[key] = c["compressors"]

    text = _rtlil(PacqMul(PacqMulParams(wbits=wbits, mode="paper", rounding=rounding)),
                  "pacq_mul")
    adds, wires = _adds(text), _wires(text)
    lanes = sorted({int(w[1:-3]) for w in wires if re.fullmatch(r"P\d+_et", w)})
    hidden = [a for a in adds if a[0] == "$add" and a[2].startswith("$")
              and re.match(r"\\a_norm_v\d+ \[10:0\]", a[3])]
    exp = [a for a in adds if re.fullmatch(r"\\P\d+_et", a[2]) or a[3].startswith("\\a_exp")]
    out.update(
        lanes=len(lanes),
        hidden_adders=len(hidden),
        hidden_adder_bits=max((a[1] for a in hidden), default=0),
        exp_adders=len(exp),
        normalizers=int(any(w.startswith("a_lzc") for w in wires))
        + sum(1 for w in wires if re.fullmatch(r"P\d+_frac", w)),
        rounders=len({w.split("_")[0] for w in wires if re.match(r"rnd\d+_", w)}),
    )
    ftext = _rtlil(Fp16Mul(Fp16MulParams(rounding=rounding)), "fp16_mul")
    out["fp16_mul_rounders"] = len({w.split("_")[0] for w in _wires(ftext)
                                    if re.match(r"rnd\d*_", w)}) or 0

    base = _submodules(Dp4Baseline(Dp4BaselineParams()))
    pacq = _submodules(Dp4Pacq(Dp4PacqParams(D=D, wbits=wbits, rounding=rounding)))
    out.update(
        dp4_baseline_muls=sum(1 for s in base if re.fullmatch(r"mul\d+", s)),
        dp4_baseline_fp16_adders=sum(1 for s in base if s.startswith("tree")),
        dp4_pacq_muls=sum(1 for s in pacq if re.fullmatch(r"pmul\d+", s)),
        dp4_pacq_tree_adders=sum(1 for s in pacq if s.startswith("tree")),
        dp4_pacq_sum_a_adders=sum(1 for s in pacq if s.startswith("sum_a")),
    )
    return out


def numerics_census(wbits: int = 4, rounding: str = "rne") -> dict:
    """The numerics census (a fresh copy: callers may modify it)."""
    return copy.deepcopy(_numerics_census(wbits, rounding))


@functools.lru_cache(maxsize=None)
def _numerics_census(wbits: int = 4, rounding: str = "rne") -> dict:
    """Every normal FP16 significand (A in [1, 2): 1024 values; the result is the same in every
    binade that neither overflows nor underflows) × every weight code of ``wbits`` bits, through
    the paper-mode golden model of pacq_mul (one lane per vector).

    Keys: ``pairs``; ``renorm`` / ``renorm_pct``: products whose FP16 exponent is not e_A + 10,
    i.e. that needed the normalization the text calls unnecessary (products ≥ 2.0·2^10, or
    rounding carried into the next binade); ``round_carry``: those of them that only rounding
    carried; ``approx`` / ``approx_pct``: pairs where PacQ's product, with the −1032·A (−1026·A)
    offset removed exactly and rounded once to FP16 (the most favourable correction), differs
    from the standard flow's FP16 product A·B (dequantize, then the FP16 multiplier);
    ``approx_max_err_over_a``: PacQ's largest error |result − A·B| over |A|;
    ``standard_inexact_pct``: pairs where the standard flow's own FP16 product is not exactly
    A·B (it rounds too: the reference is the standard flow, not exact arithmetic);
    ``approx_b_nonzero_pct``: ``approx_pct`` over the pairs with B ≠ 0; ``literal_wrong`` /
    ``literal_wrong_pct``: pairs where the text's literal datapath (6-bit hidden-bit adder,
    carry dropped, truncation) differs from the exact product rounded toward zero."""
    from tcgen.hw import numeric as num
    from tcgen.hw.numeric import FP16

    from . import model

    L, off = 1 << wbits, model.offset_of(wbits)
    f = np.arange(1024, dtype=np.int64)
    a = np.repeat(0x3C00 | f, L)                       # A = 1.f
    y = np.tile(np.arange(L, dtype=np.int64), 1024)    # offset-binary code, B = y − L/2
    int2 = int(wbits == 2)
    w = y                                               # lane 0 carries the code
    i2 = np.full_like(a, int2)
    paper = model.pacq_mul(a, w, i2, mode="paper", rounding=rounding)["y"][:, 0]
    e_field = (paper >> 10) & 31
    renorm = e_field != 15 + 10
    mA = 1024 + f.repeat(L)
    P = mA * (1024 + y)
    round_carry = renorm & (P < (1 << 21))
    # PacQ product minus offset·A, exactly, then rounded once to FP16
    pv = num.to_float(paper.astype(np.uint64), FP16)
    av = num.to_float(a.astype(np.uint64), FP16)
    B = y - (L // 2)
    corrected = num.from_float(pv - (1024 + off) * av, FP16, rounding)
    standard = model.dequant_mul(a, y, i2, rounding)
    approx = corrected.astype(np.int64) != standard.astype(np.int64)
    exact = av * B
    sv = num.to_float(standard.astype(np.uint64), FP16)
    cv = num.to_float(corrected.astype(np.uint64), FP16)
    lit = model.pacq_mul(a, w, i2, mode="literal")["y"][:, 0]
    rtz = model.pacq_mul(a, w, i2, mode="paper", rounding="rtz")["y"][:, 0]
    lit_wrong = lit != rtz
    n, nz = a.size, B != 0
    return {"pairs": int(n), "renorm": int(renorm.sum()),
            "renorm_pct": float(100.0 * renorm.sum() / n), "round_carry": int(round_carry.sum()),
            "approx": int(approx.sum()), "approx_pct": float(100.0 * approx.sum() / n),
            "approx_max_err_over_a": float(np.max(np.abs(cv - exact) / av)),
            "standard_inexact_pct": float(100.0 * (sv != exact).sum() / n),
            "approx_b_nonzero_pct": float(100.0 * (approx & nz).sum() / nz.sum()),
            "literal_wrong": int(lit_wrong.sum()),
            "literal_wrong_pct": float(100.0 * lit_wrong.sum() / n)}
