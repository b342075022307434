"""fused_dot (tcgen.hw.fused): the golden model against an exact reference of the six rules,
directed cases for each rule, the RTL against the model (zero mismatches), parameter errors
and lint of non-default configurations.  docs/fused.md.

* ``ref_fused`` below shares no code with tcgen.hw.numeric: it reads the fields by hand,
  applies the six rules of the module docstring literally, one tile at a time, in
  ``fractions.Fraction``, and rounds by finding the binade and the ulp with Fractions.  The
  model (tcgen.hw.numeric.fused_dot) must agree with it on every tile.
* The directed cases' expected encodings are worked out by hand from the rules (each with its
  arithmetic in a comment); the model must give them, and the RTL runs them too.
* The RTL tests use the batch bench (harness.run_batch); expected values come only from the
  model.  Seeds are printed; ``TCGEN_SEED`` overrides them.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.verify.stimulus import dot_lanes, edge_values, result_corners, specials
from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.params import ParamError
from tcgen.registry import get_unit
from tcgen.synth.lint import lint

F = Fraction
UNIT = "fused_dot"
_slow = pytest.mark.slow


# -- the exact reference: the six rules, tile by tile, in Fractions -----------------------------
@functools.lru_cache(maxsize=None)
def _p2(e: int) -> Fraction:
    return F(1 << e) if e >= 0 else F(1, 1 << -e)


@functools.lru_cache(maxsize=None)
def r_read(bits: int, fmt: str):
    """(kind, sign, significand, field exponent) of one encoding, from the fields: kind is
    "nan", "inf", "zero" or "num"; the value of a "num" is ±sig · 2^(exp − man_bits), where
    exp is the exponent of the field (a subnormal: emin) and sig = 1.f or 0.f as an integer."""
    f = num.get_format(fmt)
    s = bits >> (f.exp_bits + f.man_bits) & 1
    e = bits >> f.man_bits & ((1 << f.exp_bits) - 1)
    m = bits & ((1 << f.man_bits) - 1)
    bias = (1 << (f.exp_bits - 1)) - 1
    top = (1 << f.exp_bits) - 1
    if f.ieee and e == top:
        return ("nan" if m else "inf"), s, 0, 0
    if not f.ieee and e == top and m == (1 << f.man_bits) - 1:      # E4M3: S.1111.111
        return "nan", s, 0, 0
    if e == 0:
        return ("zero" if m == 0 else "num"), s, m, 1 - bias
    return "num", s, m | (1 << f.man_bits), e - bias


def r_round(v: Fraction, fmt: str, mode: str, overflow_inf: bool = False) -> int:
    """The nonzero exact value ``v`` rounded to the IEEE format ``fmt`` (RNE or RTZ; subnormals
    kept; overflow: RTZ the largest finite, RNE inf, or inf in both with ``overflow_inf``; a
    result of zero keeps v's sign)."""
    f = num.get_format(fmt)
    man, bias = f.man_bits, (1 << (f.exp_bits - 1)) - 1
    emin, emax = 1 - bias, (1 << f.exp_bits) - 2 - bias
    sbit = (1 << (f.width - 1)) if v < 0 else 0
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()        # binade: 2^e <= a < 2^e+1
    if _p2(e) > a:
        e -= 1
    ulp = _p2(max(e, emin) - man)
    q = math.floor(a / ulp)
    rem = a / ulp - q
    if mode == "rne" and (rem > F(1, 2) or (rem == F(1, 2) and q % 2)):
        q += 1
    maxv = (2 - _p2(-man)) * _p2(emax)
    if q * ulp > maxv:
        body = ((2 * bias) << man) | ((1 << man) - 1) if mode == "rtz" and not overflow_inf \
            else ((1 << f.exp_bits) - 1) << man
        return sbit | body
    r = q * ulp
    if r < _p2(emin):                                   # subnormal (or zero): field 0
        return sbit | int(r / _p2(emin - man))
    e2 = r.numerator.bit_length() - r.denominator.bit_length()
    if _p2(e2) > r:
        e2 -= 1
    return sbit | ((e2 + bias) << man) | (int(r / _p2(e2 - man)) - (1 << man))


def ref_fused(a, b, c, fmt, acc, out, window, mode) -> int:
    """One tile: a, b lists of ``fmt`` encodings, c an ``acc`` encoding -> the ``out``
    encoding, by the seven rules (tcgen.hw.fused's module docstring)."""
    outf = num.get_format(out)
    A = [r_read(int(x), fmt) for x in a]
    B = [r_read(int(x), fmt) for x in b]
    C = r_read(int(c), acc)
    # rule 1: NaN in, inf × 0, +inf and −inf among the products and C -> the all-ones NaN;
    # otherwise an infinite term -> ±inf
    nan, pos_inf, neg_inf = False, False, False
    for (ka, sa, _, _), (kb, sb, _, _) in zip(A, B):
        if "nan" in (ka, kb) or {ka, kb} == {"inf", "zero"}:
            nan = True
        elif "inf" in (ka, kb):
            pos_inf, neg_inf = pos_inf or not sa ^ sb, neg_inf or bool(sa ^ sb)
    if C[0] == "nan":
        nan = True
    elif C[0] == "inf":
        pos_inf, neg_inf = pos_inf or not C[1], neg_inf or bool(C[1])
    if nan or (pos_inf and neg_inf):
        return (1 << (outf.width - 1)) - 1
    if pos_inf or neg_inf:
        return (int(neg_inf) << (outf.width - 1)) | (((1 << outf.exp_bits) - 1) << outf.man_bits)
    # rule 2: exact products, exponent = ea + eb of the fields; C with its own field exponent
    man, man_c = num.get_format(fmt).man_bits, num.get_format(acc).man_bits
    terms = []                                          # (exact value, exponent)
    for (_, sa, ma, ea), (_, sb, mb, eb) in zip(A, B):
        v = F(ma * mb) * _p2(ea + eb - 2 * man)
        terms.append((-v if sa ^ sb else v, ea + eb))
    vc = F(C[2]) * _p2(C[3] - man_c)
    terms.append((-vc if C[1] else vc, C[3]))
    # rule 3: E = the largest exponent of the nonzero addends; none: the sum is 0 (rule 6)
    live = [e for v, e in terms if v != 0]
    if not live:
        return 0
    E = max(live)
    # rule 4: magnitudes truncated to multiples of 2^(E+2-window), signs applied, exact sum
    lsb = _p2(E + 2 - window)
    total = sum((-1 if v < 0 else 1) * math.floor(abs(v) / lsb) * lsb for v, _ in terms)
    # rules 5-7: one rounding, overflow to ±inf in every mode; every zero result is +0
    if total == 0:
        return 0
    y = r_round(total, out, mode, overflow_inf=True)
    return 0 if y & ((1 << (outf.width - 1)) - 1) == 0 else y


def exact_dot(a, b, c, fmt, acc) -> Fraction:
    """Σ a_k·b_k + c exactly (finite encodings)."""
    man, man_c = num.get_format(fmt).man_bits, num.get_format(acc).man_bits
    s = F(0)
    for x, y in zip(a, b):
        (_, sa, ma, ea), (_, sb, mb, eb) = r_read(int(x), fmt), r_read(int(y), fmt)
        s += (-1) ** (sa ^ sb) * F(ma * mb) * _p2(ea + eb - 2 * man)
    _, sc, mc, ec = r_read(int(c), acc)
    return s + (-1) ** sc * F(mc) * _p2(ec - man_c)


def _model(p, a, b, c):
    return num.fused_dot(a, b, c, p.fmt, p.acc, p.out, p.window, p.mode)


# -- stimulus --------------------------------------------------------------------------------
def _finite(fmt, x):
    """float64 values rounded to ``fmt`` (out-of-range values saturate: no inf/NaN)."""
    return num.from_float(x, fmt, saturate=True)


def _c_near(p_sum, acc, rng):
    """C of a tile: zero, comparable to the products, far above or far below them, or the
    negated product sum (near-total cancellation)."""
    t = len(p_sum)
    sel = rng.integers(0, 6, t)
    scale = np.exp2(np.select([sel == 1, sel == 2, sel == 3], [rng.integers(-3, 4, t),
                              rng.integers(8, 40, t), rng.integers(-40, -8, t)], 0))
    x = rng.standard_normal(t) * np.maximum(np.abs(p_sum), 2.0 ** -20) * scale
    x = np.where(sel == 0, 0.0, np.where(sel >= 4, -p_sum * (1 + 2.0 ** -rng.integers(
        10, 30, t) * (sel == 5)), x))
    c = _finite(acc, x)
    neg0 = rng.random(t) < 0.5                                  # ±0 when zero
    return np.where((sel == 0) & neg0, np.uint64(num.get_format(acc).sign_mask), c)


def tiles(fmt, acc, n, rng, count) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[count, n] a and b ``fmt`` encodings and [count] C ``acc`` encodings: a mix that
    reaches every rule.  In eighths of ``count``:

    * 2/8 :func:`stimulus.dot_lanes` (random encodings of every class incl. wide exponent gaps,
      cancelling pairs, subnormals, 1 % specials) with C from the same mix in acc;
    * 2/8 network-like: normal samples times 2^-8..2^8 (spread exponents: truncation), C near
      the products, far above, far below, zero, or minus their sum (cancellation);
    * 1/8 cancelling: lanes 0..n−3 in pairs a_{2j+1} = −a_{2j}, b_{2j+1} = b_{2j}, lane n−2 a
      small product that the window may or may not keep, lane n−1 ±0, C ±0 or tiny;
    * 1/8 small: subnormal and smallest-normal operands, C subnormal, tiny or zero;
    * 1/8 signed zeros: most lanes ±0 (the rest tiny or zero products), C ±0;
    * 1/8 specials: a quarter of the lanes inf, NaN, ±0 or edge values (inf × 0, +inf − inf)."""
    src, accf = num.get_format(fmt), num.get_format(acc)
    sbit = np.uint64(src.sign_mask)
    k = count // 8
    parts = []
    # dot_lanes mix
    m = count - 6 * k
    parts.append((dot_lanes(fmt, rng, m, lanes=n, special_rate=0.01),
                  dot_lanes(fmt, rng, m, lanes=n, special_rate=0.01),
                  dot_lanes(acc, rng, m, lanes=1, special_rate=0.03)[:, 0]))
    # network-like
    m = 2 * k
    a = _finite(fmt, rng.standard_normal((m, n)) * np.exp2(rng.integers(-8, 9, (m, n))))
    b = _finite(fmt, rng.standard_normal((m, n)) * np.exp2(rng.integers(-8, 9, (m, n))))
    ps = (num.to_float(a, fmt) * num.to_float(b, fmt)).sum(axis=1)
    parts.append((a, b, _c_near(ps, acc, rng)))
    # cancelling pairs + one small product
    a = _finite(fmt, rng.standard_normal((k, n)) * np.exp2(rng.integers(-6, 7, (k, n))))
    b = _finite(fmt, rng.standard_normal((k, n)) * np.exp2(rng.integers(-6, 7, (k, n))))
    a[:, 1:n - 2:2], b[:, 1:n - 2:2] = a[:, 0:n - 2:2] ^ sbit, b[:, 0:n - 2:2]
    a[:, n - 2] = _finite(fmt, rng.standard_normal(k) * np.exp2(rng.integers(-12, 0, k)))
    b[:, n - 2] = _finite(fmt, rng.standard_normal(k) * np.exp2(rng.integers(-14, 0, k)))
    a[:, n - 1], b[:, n - 1] = rng.integers(0, 2, k, dtype=np.uint64) * sbit, 0
    c = np.where(rng.random(k) < 0.5, rng.integers(0, 2, k).astype(np.uint64)
                 * np.uint64(accf.sign_mask), _finite(acc, rng.standard_normal(k) * 2.0 ** -30))
    parts.append((a, b, c))
    # small: exponent fields 0..2, C subnormal / tiny / zero
    def small(shape):
        e = rng.integers(0, 3, shape).astype(np.uint64)
        mant = rng.integers(0, 1 << src.man_bits, shape, dtype=np.uint64)
        sign = rng.integers(0, 2, shape, dtype=np.uint64) * sbit
        return sign | (e << np.uint64(src.man_bits)) | mant
    csel = rng.integers(0, 3, k)
    c = np.select([csel == 0, csel == 1], [
        rng.integers(0, 1 << accf.man_bits, k, dtype=np.uint64)
        | rng.integers(0, 2, k, dtype=np.uint64) * np.uint64(accf.sign_mask),
        _finite(acc, rng.standard_normal(k) * np.exp2(rng.integers(
            2 * (src.emin - src.man_bits), 2 * src.emin + 4, k)))], np.uint64(0))
    parts.append((small((k, n)), small((k, n)), c))
    # signed zeros
    zs = rng.integers(0, 2, (2, k, n), dtype=np.uint64) * sbit
    a, b = small((k, n)), small((k, n))
    live = rng.random((k, n)) < 0.15
    a, b = np.where(live, a, zs[0]), np.where(live | (rng.random((k, n)) < 0.5), b, zs[1])
    parts.append((a, b, rng.integers(0, 2, k, dtype=np.uint64) * np.uint64(accf.sign_mask)))
    # specials
    sp = np.array(specials(fmt) + edge_values(fmt), dtype=np.uint64)
    a, b = (dot_lanes(fmt, rng, k, lanes=n, special_rate=0.25) for _ in range(2))
    hit = rng.random((k, n)) < 0.1
    a = np.where(hit, sp[rng.integers(0, len(sp), (k, n))], a)
    c = dot_lanes(acc, rng, k, lanes=1, special_rate=0.2)[:, 0]
    parts.append((a, b, c))
    return tuple(np.concatenate([p[i] for p in parts]).astype(np.uint64) for i in range(3))


def _all_finite(fmt, acc, a, b, c):
    """Tiles whose a, b and c are all finite (E4M3 has no inf: only its NaN is excluded)."""
    src, accf = num.get_format(fmt), num.get_format(acc)
    top = np.uint64(src.inf if src.ieee else src.nan)              # first non-finite magnitude
    mag = np.uint64(src.sign_mask - 1)
    return (((a & mag) < top) & ((b & mag) < top)).all(axis=1) & \
        ((c & np.uint64(accf.sign_mask - 1)) < np.uint64(accf.inf))


def _check_against_ref(p, a, b, c):
    got = _model(p, a, b, c)
    bad = [i for i in range(len(c))
           if int(got[i]) != ref_fused(a[i], b[i], c[i], p.fmt, p.acc, p.out, p.window, p.mode)]
    if bad:
        i = bad[0]
        want = ref_fused(a[i], b[i], c[i], p.fmt, p.acc, p.out, p.window, p.mode)
        pytest.fail(f"{p.key()}: {len(bad)} of {len(c)} tiles differ; first: "
                    f"a={[hex(x) for x in a[i]]} b={[hex(x) for x in b[i]]} c={hex(c[i])} "
                    f"model={hex(got[i])} reference={hex(want)}")
    return len(c)


def test_tiles_reach_every_rule():
    """The mix of :func:`tiles` (fp16, n = 16, 2,000 tiles) yields NaNs, infinities, exact
    zeros, +0 from a negative sum rounded away (rule 6, fp16 out), subnormal operands, and
    results that the window-27 truncation changes (at least 10 tiles of each)."""
    rng = np.random.default_rng(harness.seed(9100 + 16))
    for acc, out, mode in (("fp32", "fp32", "rtz"), ("fp16", "fp16", "rne")):
        a, b, c = tiles("fp16", acc, 16, rng, 2000)
        of = num.get_format(out)
        y = num.fused_dot(a, b, c, "fp16", acc, out, 27, mode)
        exact = num.fused_dot(a, b, c, "fp16", acc, out, num.fused_window_bounds("fp16", acc)[1],
                              mode)
        body = y & np.uint64(of.sign_mask - 1)
        counts = {"nan": (y == of.sign_mask - 1).sum(), "inf": (body == of.inf).sum(),
                  "+0": (y == 0).sum(), "truncated": (y != exact).sum(),
                  "subnormal a": (((a & np.uint64(0x7C00)) == 0) & ((a & np.uint64(0x3FF)) != 0)
                                  ).any(axis=1).sum()}
        if out == "fp16":         # the zero rule's IEEE reading would give -0 on these
            ieee = num.fused_dot(a, b, c, "fp16", acc, out, 27, mode, zero="sign")
            counts["+0 not -0"] = ((y == 0) & (ieee == of.sign_mask)).sum()
        assert min(counts.values()) >= 10, counts


def _windows(fmt, acc):
    lo, hi = num.fused_window_bounds(fmt, acc)
    return sorted({lo, 27, hi} & set(range(lo, hi + 1)))


# -- 1a. the model against the reference -------------------------------------------------------
FP16_IO = [("fp32", "fp32", 2000), ("fp16", "fp16", 2000), ("fp32", "fp16", 500),
           ("fp16", "fp32", 500)]


@pytest.mark.parametrize("acc,out,count", FP16_IO)
@pytest.mark.parametrize("n", [4, 8, 16])
def test_model_matches_reference_fp16(n, acc, out, count):
    """fp16 operands: ``count`` tiles × windows (lower bound, 27, upper bound) × rtz/rne."""
    rng = np.random.default_rng(harness.seed(9100 + n))
    a, b, c = tiles("fp16", acc, n, rng, count)
    for w in _windows("fp16", acc):
        for mode in ("rtz", "rne"):
            p = get_unit(UNIT).params(n=n, acc=acc, out=out, window=w, rounding=mode)
            _check_against_ref(p, a, b, c)


@pytest.mark.parametrize("fmt", ["bf16", "fp8_e4m3", "fp8_e5m2"])
@pytest.mark.parametrize("acc,out", [("fp32", "fp32"), ("fp16", "fp16")])
def test_model_matches_reference_other_formats(fmt, acc, out):
    """bf16 and the FP8 formats: 300 tiles of n = 8 and 300 of n = 16 × windows × rtz/rne."""
    for n in (8, 16):
        rng = np.random.default_rng(harness.seed(9200 + n))
        a, b, c = tiles(fmt, acc, n, rng, 300)
        for w in _windows(fmt, acc):
            for mode in ("rtz", "rne"):
                p = get_unit(UNIT).params(n=n, fmt=fmt, acc=acc, out=out, window=w,
                                          rounding=mode)
                _check_against_ref(p, a, b, c)


def test_reference_rounding_agrees_with_numeric():
    """The reference's own rounding against tcgen.hw.numeric.round_fraction on values around
    every binade, the subnormal range and the overflow edge (both directions agree)."""
    rng = np.random.default_rng(harness.seed(9300))
    for fmt in ("fp32", "fp16"):
        f = num.get_format(fmt)
        for mode in ("rtz", "rne"):
            for _ in range(3000):
                e = int(rng.integers(f.emin - f.man_bits - 3, f.emax + 3))
                v = F(int(rng.integers(1, 1 << (f.man_bits + 4)))) * _p2(e - f.man_bits - 3)
                v = -v if rng.random() < 0.5 else v
                assert r_round(v, fmt, mode) == num.round_fraction(v, fmt, mode), (fmt, mode, v)


# -- 1b. at the upper window bound (rne): the correctly rounded exact dot product -------------
@pytest.mark.parametrize("fmt,acc,out", [("fp16", "fp32", "fp32"), ("fp16", "fp16", "fp16"),
                                         ("fp16", "fp32", "fp16"), ("bf16", "fp32", "fp32"),
                                         ("fp8_e4m3", "fp32", "fp32")])
def test_upper_window_is_correctly_rounded(fmt, acc, out):
    """window = fused_window_bounds(...)[1], rounding=rne, finite tiles of n = 16: the model
    equals num.round_fraction of the exact Fraction sum (every zero result is +0, rule 6)."""
    rng = np.random.default_rng(harness.seed(9400))
    a, b, c = tiles(fmt, acc, 16, rng, 2000)
    keep = _all_finite(fmt, acc, a, b, c)
    a, b, c = a[keep], b[keep], c[keep]
    assert len(c) > 1000
    hi = num.fused_window_bounds(fmt, acc)[1]
    p = get_unit(UNIT).params(fmt=fmt, acc=acc, out=out, window=hi, rounding="rne")
    got = _model(p, a, b, c)
    for i in range(len(c)):
        want = num.round_fraction(exact_dot(a[i], b[i], c[i], fmt, acc), out, "rne")
        if want & (num.get_format(out).sign_mask - 1) == 0:
            want = 0
        assert int(got[i]) == want, (a[i], b[i], c[i], hex(got[i]), hex(want))


@pytest.mark.parametrize("fmt,acc", [("fp16", "fp32"), ("bf16", "fp32")])
def test_model_matches_reference_around_int64_limit(fmt, acc):
    """The model sums in int64 up to window + bits(n) + 1 = 62 and in Python ints beyond:
    windows 54..60 at n = 16 (500 tiles, rtz and rne) straddle the switch."""
    rng = np.random.default_rng(harness.seed(9250))
    a, b, c = tiles(fmt, acc, 16, rng, 500)
    for w in range(54, 61):
        for mode in ("rtz", "rne"):
            p = get_unit(UNIT).params(fmt=fmt, acc=acc, window=w, rounding=mode)
            _check_against_ref(p, a, b, c)


def test_presets():
    from tcgen.hw.fused import PRESETS, FusedDotParams
    assert FusedDotParams.preset("fused16_sm90") == get_unit(UNIT).params()
    p = FusedDotParams.preset("fused16_sm90_fp16", n=4)
    assert (p.n, p.acc, p.out, p.window, p.mode) == (4, "fp16", "fp16", 27, "rne")
    assert get_unit(UNIT).params().mode == "rtz"
    assert set(PRESETS) == {"fused16_sm90", "fused16_sm90_fp16", "qgmma_sm90", "qgmma_sm90_fp16",
                            "tf32_sm90"}
    q = FusedDotParams.preset("qgmma_sm90")
    assert (q.n, q.fmt, q.window, q.acc_man, q.mode) == (32, "fp8_e4m3", 15, 13, "rtz")
    with pytest.raises(ValueError, match="unknown preset 'x'"):
        FusedDotParams.preset("x")


def test_window_bounds():
    """The bounds of the docs' table; the lower bound is the narrowest window that holds a
    product (2p bits) and C (precision + 1 bits) unshifted, the upper one the widest span
    between an addend's top exponent and another's lowest bit, plus 2."""
    assert num.fused_window_bounds("fp16", "fp32") == (25, 181)
    assert num.fused_window_bounds("fp16", "fp16") == (22, 80)
    assert num.fused_window_bounds("bf16", "fp32") == (25, 522)
    assert num.fused_window_bounds("fp8_e4m3", "fp32") == (25, 167)
    assert num.fused_window_bounds("fp8_e5m2", "fp16") == (12, 64)


# -- 1c. directed cases, one or more per rule ----------------------------------------------------
P_FP32 = {}                                              # the defaults: fp32 C and y, rtz
P_FP16 = {"acc": "fp16", "out": "fp16"}                  # fused16_sm90_fp16: rne
P_WIDE = {"window": 60, "rounding": "rne"}
ONE, TWO = 0x3C00, 0x4000                                # fp16 1.0, 2.0
PINF, NINF, QNAN = 0x7C00, 0xFC00, 0x7E00

#: (id, params, a lanes, b lanes, c, expected y); missing lanes are −0 × +0.
DIRECTED = [
    # rule 1 -- NaN: every bit but the sign set
    ("nan_a", P_FP32, [QNAN], [ONE], 0, 0x7FFFFFFF),
    ("nan_neg_payload_b", P_FP32, [ONE], [0xFE01], 0, 0x7FFFFFFF),
    ("nan_c", P_FP32, [ONE], [ONE], 0xFFC00001, 0x7FFFFFFF),
    ("nan_fp16_out", P_FP16, [QNAN], [ONE], 0, 0x7FFF),
    ("inf_times_zero", P_FP32, [PINF], [0x0000], 0, 0x7FFFFFFF),
    ("neg_zero_times_neg_inf", P_FP32, [0x8000], [NINF], 0x3F800000, 0x7FFFFFFF),
    ("pinf_and_ninf_products", P_FP32, [PINF, NINF], [ONE, ONE], 0, 0x7FFFFFFF),
    ("pinf_product_ninf_c", P_FP32, [PINF], [ONE], 0xFF800000, 0x7FFFFFFF),
    ("pinf_and_ninf_fp16", P_FP16, [PINF], [NINF], 0x7C00, 0x7FFF),
    # ... otherwise an infinite term gives ±inf, whatever the finite terms are
    ("inf_times_neg", P_FP32, [PINF, 0x7BFF], [0xBC00, 0x7BFF], 0, 0xFF800000),
    ("inf_product_and_inf_c", P_FP32, [PINF, PINF], [ONE, TWO], 0x7F800000, 0x7F800000),
    ("inf_c_only", P_FP16, [ONE], [ONE], 0xFC00, 0xFC00),
    # rule 2 -- a subnormal's exponent is emin (-14), its 0.f not renormalised:
    # p0 = 2^-24 (0x0001) × 1 reads exponent -14 + 0 = -14 = E, so the LSB is 2^(-14+2-27) =
    # 2^-39 and p1 = 2^-16 (0x0100) × 2^-24 (0x0001) = 2^-40 is dropped: y = 2^-24 = 0x33800000
    # (renormalised, E would be -24 and y 2^-24 + 2^-40 = 0x33800080)
    ("subnormal_reads_emin", P_FP32, [0x0001, 0x0100], [ONE, 0x0001], 0, 0x33800000),
    # the same at window 60 keeps p1 (LSB 2^-72): 2^-24·(1 + 2^-16), exact in fp32
    ("subnormal_reads_emin_wide", P_WIDE, [0x0001, 0x0100], [ONE, 0x0001], 0, 0x33800080),
    # C's exponent: an fp32 subnormal reads -126.  c = 2^-149 alone: E = -126, LSB 2^-151
    ("c_subnormal", P_FP32, [0x0000], [0x0000], 0x00000001, 0x00000001),
    # rule 3 -- a zero product does not take part: 0 × 65504 would read 1, the live products
    # 2^-14·2^-14 = 2^-28 and 2^-24·2^-24 = 2^-48 both read -28: E = -28, LSB 2^-53, both
    # kept: 2^-28·(1 + 2^-20) = 0x31800008 (with E = 1 both would be dropped: +0)
    ("zero_product_not_in_E", P_FP32, [0x0000, 0x0400, 0x0001], [0x7BFF, 0x0400, 0x0001], 0,
     0x31800008),
    # C sets E when largest: c = 2^20, p0 = -(1024·1024) = -2^20, p1 = 2^-3·2^-3 = 2^-6;
    # E = 20, LSB 2^-5: p1 dropped, the sum is exactly 0: +0
    ("c_sets_E", P_FP32, [0xE400, 0x3000], [0x6400, 0x3000], 0x49800000, 0x00000000),
    # ... and at window 60 (LSB 2^-38) p1 survives: 2^-6 = 0x3C800000
    ("c_sets_E_wide", P_WIDE, [0xE400, 0x3000], [0x6400, 0x3000], 0x49800000, 0x3C800000),
    # rule 4 -- truncation drops bits: 1·1 + 2^-14·2^-16 (0x0400 × 0x0100) = 1 + 2^-30 and
    # c = -1: E = 0, LSB 2^-25, 2^-30 dropped -> exact 0 -> +0
    ("tiny_product_dropped", P_FP32, [ONE, 0x0400], [ONE, 0x0100], 0xBF800000, 0x00000000),
    # ... kept with window 60 (LSB 2^-58): 2^-30 = 0x30800000
    ("tiny_product_kept_wide", P_WIDE, [ONE, 0x0400], [ONE, 0x0100], 0xBF800000, 0x30800000),
    # the window's last bit: E = 0, window 27 keeps 2^-25 (2^-12 × 2^-13) and drops 2^-26
    ("last_window_bit_kept", P_FP32, [ONE, 0x0C00], [ONE, 0x0800], 0xBF800000, 0x33000000),
    ("below_window_dropped", P_FP32, [ONE, 0x0C00], [ONE, 0x0400], 0xBF800000, 0x00000000),
    # a product whose leading bit is 2^(E+1) fits: 1.5·1.5 = 2.25 = 0x40100000
    ("leading_bit_E_plus_1", P_FP32, [0x3E00], [0x3E00], 0, 0x40100000),
    # C truncated too: p0 + p1 = 1 − 1 = 0 (E = 0), c = 1.5·2^-25 -> 2^-25 = 0x33000000
    ("c_truncated", P_FP32, [ONE, 0xBC00], [ONE, ONE], 0x33400000, 0x33000000),
    # sign-magnitude: p1 = -(1.5·2^-12)·2^-13 = -3·2^-26 truncates to -2^-25 (not the
    # two's-complement floor -2^-24); 1 - 2^-25 is the tie between 1 - 2^-24 and 1: RNE -> 1.0
    # (the floor would give 1 - 2^-24 exactly: 0x3F7FFFFF)
    ("truncation_toward_zero", {"rounding": "rne"}, [ONE, 0x8E00], [ONE, 0x0800], 0,
     0x3F800000),
    # rule 5 -- fp32 output toward zero: 1 + 3·2^-25 (0x0C00 × 0x0E00 = 1.5·2^-24; kept)
    # -> 1.0 under rtz, 1 + 2^-23 under rne
    ("fp32_rtz", P_FP32, [ONE, 0x0C00], [ONE, 0x0E00], 0, 0x3F800000),
    ("fp32_rne", {"rounding": "rne"}, [ONE, 0x0C00], [ONE, 0x0E00], 0, 0x3F800001),
    # rule 7 -- RTZ overflow gives inf, not the largest finite (measured: the H200's bf16_f32
    # overflow class, 98,304 of 98,304): bf16 (255/128)·2^127 × 1, twice = 1.99·2^128
    ("fp32_rtz_overflow_inf", {"fmt": "bf16"}, [0x7F7F, 0x7F7F], [0x3F80, 0x3F80], 0,
     0x7F800000),
    ("fp32_rtz_overflow_neg_inf", {"fmt": "bf16"}, [0xFF7F, 0xFF7F], [0x3F80, 0x3F80], 0,
     0xFF800000),
    # ... while a sum in [max, 2^128) truncates to max under RTZ (the model's reading; not
    # isolated by a measured case): max + 2^103 (bf16 2^52 × 2^51; window LSB 2^102)
    ("fp32_rtz_below_2p128_max", {"fmt": "bf16"}, [0x59800000 >> 16], [0x59000000 >> 16],
     0x7F7FFFFF, 0x7F7FFFFF),
    ("fp32_rne_overflow_inf", {"fmt": "bf16", "rounding": "rne"}, [0x7F7F, 0x7F7F],
     [0x3F80, 0x3F80], 0, 0x7F800000),
    # fp16 output, RNE: 65504 + 16 = 65520, the tie above the largest finite -> inf
    ("fp16_rne_overflow_65520", P_FP16, [0x7BFF, 0x4C00], [ONE, ONE], 0, 0x7C00),
    ("fp16_rne_overflow_neg", P_FP16, [0xFBFF, 0xCC00], [ONE, ONE], 0, 0xFC00),
    # 65504 + 15.75 (0x4BE0) = 65519.75 stays 65504
    ("fp16_rne_below_65520", P_FP16, [0x7BFF, 0x4BE0], [ONE, ONE], 0, 0x7BFF),
    # fp16 output from an fp32 C: c = 65520.0 -> inf
    ("fp16_out_fp32_c_overflow", {"out": "fp16"}, [0x0000], [0x0000], 0x477FF000, 0x7C00),
    # a subnormal fp16 result is kept: 2^-14 (0x0400) × 2^-10 (0x1400) = 2^-24 = 0x0001
    ("fp16_subnormal_result", P_FP16, [0x0400], [0x1400], 0x0000, 0x0001),
    # rule 6 -- an exact zero is +0, even when every addend is -0
    ("all_neg_zero", P_FP32, [0x8000] * 4, [ONE] * 4, 0x80000000, 0x00000000),
    ("all_neg_zero_fp16", P_FP16, [0x8000, 0x0000], [ONE, 0x8000], 0x8000, 0x0000),
    ("cancel_to_zero_rne", {"rounding": "rne"}, [ONE, 0xBC00], [TWO, TWO], 0x80000000,
     0x00000000),
    ("no_nonzero_addend", P_FP32, [], [], 0x00000000, 0x00000000),     # −0 products, +0 C
    # ... and a nonzero sum that rounds to zero is +0 too (measured: the H200's f16_f16
    # subnormal class, 4,373 such outputs; the model before gave -0): -(2^-24·2^-24) = -2^-48
    # (E = -28, LSB 2^-53: kept) < half of 2^-24 -> +0; +2^-48 -> +0
    ("tiny_negative_to_pos_zero", P_FP16, [0x8001], [0x0001], 0x0000, 0x0000),
    ("tiny_positive_to_pos_zero", P_FP16, [0x0001], [0x0001], 0x8000, 0x0000),
    # ... the same with an fp32 C and fp16 out (rne): -2^-48 -> +0
    ("tiny_negative_fp32_c", {"out": "fp16"}, [0x8001], [0x0001], 0x80000000, 0x0000),
    # (with fp32 out the sum is exact: -2^-48 = 0xA7800000)
    ("tiny_negative_fp32_out", P_FP32, [0x8001], [0x0001], 0x00000000, 0xA7800000),
]


def _directed_params(kw, n=4):
    return get_unit(UNIT).params(**{"n": n, **kw})


def _lanes(values, n, fmt="fp16", pad=None):
    """``values`` padded to n lanes: a lanes with −0, b lanes with +0 (products −0: no effect
    on any rule, and they keep "every addend −0" true)."""
    pad = num.get_format(fmt).sign_mask if pad is None else pad
    return list(values) + [pad] * (n - len(values))


@pytest.mark.parametrize("case", DIRECTED, ids=[d[0] for d in DIRECTED])
def test_directed(case):
    """Each rule's case: the hand-computed encoding from the model and from the reference,
    at n = 4 and n = 16 (extra lanes −0 × +0)."""
    _, kw, a, b, c, want = case
    for n in (4, 16):
        p = _directed_params(kw, n)
        a_ = np.array([_lanes(a, n, p.fmt)], np.uint64)
        b_ = np.array([_lanes(b, n, p.fmt, 0)], np.uint64)
        got = int(_model(p, a_, b_, np.array([c], np.uint64))[0])
        assert got == want, f"model {got:#x}, expected {want:#x}"
        assert ref_fused(a_[0], b_[0], c, p.fmt, p.acc, p.out, p.window, p.mode) == want


def test_registered_model_matches_numeric():
    """The unit's model adapter (payloads in, payloads out) is numeric.fused_dot on the
    fields."""
    u = get_unit(UNIT)
    rng = np.random.default_rng(harness.seed(9500))
    for kw in ({}, {"n": 4, "acc": "fp16", "out": "fp16"}, {"fmt": "bf16", "window": 40}):
        p = u.params(**kw)
        a, b, c = tiles(p.fmt, p.acc, p.n, rng, 400)
        lay = u.interface(p).signature.members["a"].shape
        y = u.model(p, a=pack(lay, a), b=pack(lay, b), c=c)["y"]
        assert np.array_equal(np.asarray(y, np.uint64), _model(p, a, b, c))


# -- 1d. the RTL against the model --------------------------------------------------------------
def _directed_for(p):
    """The directed cases whose params match ``p`` but for n and pipeline (padded to p.n
    lanes), as (a, b, c) arrays, or None."""
    rows = []
    for _, kw, a, b, c, _ in DIRECTED:
        if _directed_params(kw, p.n) == dataclasses.replace(p, pipeline=0):
            rows.append((_lanes(a, p.n, p.fmt), _lanes(b, p.n, p.fmt, 0), c))
    if not rows:
        return None
    a, b, c = zip(*rows)
    return np.array(a, np.uint64), np.array(b, np.uint64), np.array(c, np.uint64)


def _rtl(p, request, parts, sim=None):
    """Pack the (a, b, c) parts, run them through the RTL on the batch bench, assert zero
    mismatches; returns the summary."""
    a = np.concatenate([x[0] for x in parts])
    b = np.concatenate([x[1] for x in parts])
    c = np.concatenate([x[2] for x in parts])
    lay = get_unit(UNIT).interface(p).signature.members["a"].shape
    s = harness.run_batch(UNIT, p, stimulus={"a": pack(lay, a), "b": pack(lay, b), "c": c},
                          name=request.node.name[:80], depth=1 << 16, sim=sim)
    assert s["vectors"] == len(c)
    assert s["checked"] == s["vectors"]
    assert s["mismatches"] == 0, s["first_mismatches"]
    return s


def _stimulus(p, rng, workload, mixed):
    """``workload`` vectors of the unit's own workload, ``mixed`` tiles of :func:`tiles` and
    the directed cases of p's configuration."""
    u = get_unit(UNIT)
    lay = u.interface(p).signature.members["a"].shape
    parts = []
    if workload:
        w = u.workload(p, rng, workload)
        parts.append((unpack(lay, w["a"]).astype(np.uint64), unpack(lay, w["b"]).astype(
            np.uint64), np.asarray(w["c"], np.uint64)))
    if mixed:
        parts.append(tiles(p.fmt, p.acc, p.n, rng, mixed))
    d = _directed_for(p)
    if d is not None:
        parts.append(d)
    parts.append(result_corners(p.fmt, p.acc, p.n, p.out))    # every result class (coverage)
    return parts


@pytest.mark.parametrize("workload,mixed", [(600, 600), pytest.param(20_000, 4_000,
                                                                     marks=pytest.mark.slow)])
def test_rtl_defaults(workload, mixed, request):
    """fused16_sm90 (n = 16, fp16, fp32 C and y, window 27, rtz): vectors of the unit's
    workload + mixed tiles (specials, cancellation, subnormals, signed zeros) + the directed
    cases.  make test: 600 + 600 on Icarus (~7 ms each: the 1.1 MB elaborated design); make
    test-slow: 20,000 + 4,000, on Verilator by the cost model (its build, ~25 s, is shorter
    than Icarus on 24,000 vectors)."""
    p = get_unit(UNIT).params()
    rng = np.random.default_rng(harness.seed(9600))
    _rtl(p, request, _stimulus(p, rng, workload, mixed))


RTL_CONFIGS = [
    # (id, params, workload vectors, mixed tiles); Icarus, ~2 ms (n = 4) to ~4 ms (n = 8) per
    # vector.  Every params set of DIRECTED appears at n = 4, so every directed case runs.
    ("n4", {"n": 4}, 800, 800),
    ("n8_lower_bound", {"n": 8, "window": 25}, 300, 500),
    ("fp16_preset_n4", {"n": 4, "acc": "fp16", "out": "fp16"}, 300, 800),
    ("fp32c_fp16_out_n4", {"n": 4, "out": "fp16"}, 300, 500),
    ("wide60_rne_n4", {"n": 4, "window": 60, "rounding": "rne"}, 300, 500),
    ("rne_pipeline1_n4", {"n": 4, "rounding": "rne", "pipeline": 1}, 300, 500),
    ("pipeline2_n4", {"n": 4, "pipeline": 2}, 300, 500),
    ("bf16_n4", {"n": 4, "fmt": "bf16"}, 300, 500),
    ("bf16_rne_pipeline2_n4", {"n": 4, "fmt": "bf16", "rounding": "rne", "pipeline": 2}, 300,
     500),
    ("fp8_e4m3_n4", {"n": 4, "fmt": "fp8_e4m3"}, 300, 500),
]
RTL_SLOW = [
    ("n8_big", {"n": 8}, 10_000, 10_000),
    ("fp16_preset", {"acc": "fp16", "out": "fp16"}, 10_000, 10_000),
    ("wide60_rne", {"window": 60, "rounding": "rne"}, 10_000, 10_000),
    ("upper_bound_rne", {"window": 181, "rounding": "rne"}, 5_000, 5_000),
    ("lower_bound", {"window": 25}, 5_000, 5_000),
    ("pipeline2", {"pipeline": 2}, 10_000, 10_000),
    ("bf16", {"fmt": "bf16"}, 10_000, 10_000),
    ("fp8_e4m3", {"fmt": "fp8_e4m3"}, 10_000, 10_000),
    ("fp8_e5m2_fp16_out", {"fmt": "fp8_e5m2", "out": "fp16"}, 10_000, 10_000),
    ("fp16_c_fp32_out_rne", {"acc": "fp16", "rounding": "rne"}, 10_000, 10_000),
    # the narrowest windows of the narrow formats (n = 4: Icarus)
    ("fp8_e4m3_fp16_lower_bound_n4", {"n": 4, "fmt": "fp8_e4m3", "acc": "fp16", "out": "fp16",
                                      "window": 12}, 2000, 3000),
    ("bf16_fp16_c_lower_bound_n4", {"n": 4, "fmt": "bf16", "acc": "fp16", "window": 16,
                                    "rounding": "rne"}, 2000, 3000),
    # Hopper's FP8 path (qgmma_sm90: docs/silicon.md): the preset, pipelined, and FP16 out
    ("qgmma_sm90", {"n": 32, "fmt": "fp8_e4m3", "window": 15, "acc_man": 13}, 5000, 5000),
    ("qgmma_acc_man_pipeline2_n4", {"n": 4, "fmt": "fp8_e4m3", "window": 15, "acc_man": 13,
                                    "pipeline": 2}, 2000, 3000),
    ("qgmma_sm90_fp16_e5m2", {"n": 32, "fmt": "fp8_e5m2", "acc": "fp16", "out": "fp16",
                              "window": 15}, 5000, 5000),
    # the products' compressor trees (issue 43): three-greedy and GKL, the n = 16 preset
    ("tree_tdm", {"tree": "tdm"}, 10_000, 10_000),
    ("tree_gkl_bf16", {"tree": "gkl", "fmt": "bf16"}, 5_000, 5_000),
]


@pytest.mark.parametrize("cfg", [c[1:] for c in RTL_CONFIGS], ids=[c[0] for c in RTL_CONFIGS])
def test_rtl_configs(cfg, request):
    """Smaller configurations on Icarus: n = 4 and 8, the lower window bound, the fp16 preset,
    an fp32 C with fp16 out, a wide window with rne, pipeline 1 and 2 (the batch bench checks
    y at cycle c + latency), bf16 and fp8 operands; the unit's workload + mixed tiles + the
    directed cases of the configuration."""
    kw, workload, mixed = cfg
    p = get_unit(UNIT).params(**kw)
    rng = np.random.default_rng(harness.seed(9700))
    _rtl(p, request, _stimulus(p, rng, workload, mixed), sim="icarus")


def test_every_directed_case_runs_on_the_rtl():
    """Each params set of DIRECTED (at n = 4) is one of RTL_CONFIGS but for pipeline, so
    test_rtl_configs runs every directed case through the RTL."""
    configs = [dataclasses.replace(get_unit(UNIT).params(**kw), pipeline=0)
               for _, kw, _, _ in RTL_CONFIGS]
    missing = [name for name, kw, *_ in DIRECTED if _directed_params(kw, 4) not in configs]
    assert not missing, missing


@_slow
@pytest.mark.parametrize("cfg", [c[1:] for c in RTL_SLOW], ids=[c[0] for c in RTL_SLOW])
def test_rtl_configs_slow(cfg, request):
    """n = 8 and 16 variants on Verilator with 10,000-20,000 vectors each, two narrow-window
    n = 4 variants on Icarus (make test-slow)."""
    kw, workload, mixed = cfg
    p = get_unit(UNIT).params(**kw)
    rng = np.random.default_rng(harness.seed(9800))
    _rtl(p, request, _stimulus(p, rng, workload, mixed),
         sim="icarus" if p.n == 4 else "verilator")


def test_rtl_pipelined_latency_measured(request):
    """pipeline = 2 on the per-vector fixed-latency bench: one tile per cycle, the measured
    latency is 2."""
    p = get_unit(UNIT).params(n=4, pipeline=2)
    rng = np.random.default_rng(harness.seed(9900))
    a, b, c = tiles(p.fmt, p.acc, p.n, rng, 400)
    lay = get_unit(UNIT).interface(p).signature.members["a"].shape
    s = harness.run(UNIT, p, stimulus={"a": pack(lay, a), "b": pack(lay, b), "c": c},
                    name=request.node.name[:80])
    assert s["vectors"] == len(c) and s["mismatches"] == 0
    assert s["latency"] == 2


# -- 1e. parameter errors ------------------------------------------------------------------------
@pytest.mark.parametrize("kw,allowed,value", [
    ({"window": 24}, "an integer in 25..181 for fp16 operands and an fp32 c", 24),
    ({"window": 182}, "an integer in 25..181 for fp16 operands and an fp32 c", 182),
    ({"window": 500}, "an integer in 25..181 for fp16 operands and an fp32 c", 500),
    ({"acc": "fp16", "window": 81}, "an integer in 22..80 for fp16 operands and an fp16 c", 81),
    ({"fmt": "bf16", "window": 24}, "an integer in 25..522 for bf16 operands and an fp32 c", 24),
    ({"window": 7}, "an integer in 8..600", 7),
    ({"n": 5}, "one of 4, 8, 16, 32", 5),
    ({"fmt": "fp32"}, "one of fp16, bf16, fp8_e4m3, fp8_e5m2, tf32", "fp32"),
    ({"out": "bf16"}, "one of fp32, fp16", "bf16"),
    ({"acc_man": 24}, "an integer in 0..23", 24),
    ({"acc_man": 13, "out": "fp16"}, "0, or 1..23 for an fp32 c with out = acc", 13),
    ({"acc": "fp16", "out": "fp16", "acc_man": 11}, "0, or 1..10 for an fp16 c with out = acc",
     11),
    ({"fmt": "fp8_e4m3", "acc_man": 13, "window": 14},
     "an integer in 15..157 for fp8_e4m3 operands and an fp32 c held at 13 fraction bits", 14),
])
def test_param_errors(kw, allowed, value):
    with pytest.raises(ParamError) as e:
        get_unit(UNIT).params(**kw)
    field = next(iter(kw)) if len(kw) == 1 else ("window" if "window" in kw else "acc_man")
    assert str(e.value) == f"{UNIT}: {field} must be {allowed}, got {value!r}"


def test_model_refuses_window_out_of_bounds():
    a = np.zeros((1, 4), np.uint64)
    with pytest.raises(ValueError, match="window must be in 25..181"):
        num.fused_dot(a, a, np.zeros(1, np.uint64), window=24)
    with pytest.raises(ValueError, match="window must be in 25..181"):
        num.fused_dot(a, a, np.zeros(1, np.uint64), window=182)


def _tcgen(*args):
    return subprocess.run([sys.executable, "-m", "tcgen.cli", *args], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parent.parent)


def test_cli_window_out_of_bounds(tmp_path):
    out = tmp_path / "x.v"
    r = _tcgen("generate", UNIT, "-p", "window=500", "-o", str(out))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert lines == ["tcgen: error: fused_dot: window must be an integer in 25..181 for fp16 "
                     "operands and an fp32 c, got 500"], r.stderr
    assert not out.exists()


# -- 1f. lint of non-default configurations (the defaults: tb/test_cli.py) ---------------------
LINT = [{"n": 4, "acc": "fp16", "out": "fp16", "pipeline": 2},
        {"n": 8, "fmt": "bf16", "window": 60, "rounding": "rne", "pipeline": 1},
        {"n": 4, "fmt": "fp8_e4m3", "fmt_b": "fp8_e5m2", "window": 15, "acc_man": 13,
         "pipeline": 1},
        {"n": 4, "fmt": "fp8_e5m2", "acc": "fp16", "out": "fp32", "window": 12}]


@pytest.mark.skipif(not shutil.which("verilator"), reason="verilator not installed")
@pytest.mark.parametrize("kw", LINT, ids=["-".join(f"{k}={v}" for k, v in kw.items())
                                          for kw in LINT])
def test_lint_variants(kw, tmp_path):
    """`tcgen generate fused_dot -p ... -o` then `verilator --lint-only`: no warning."""
    out = tmp_path / "fused.v"
    r = _tcgen("generate", UNIT, *[x for k, v in kw.items() for x in ("-p", f"{k}={v}")],
               "-o", str(out))
    assert r.returncode == 0, r.stderr
    res = lint(out)                    # the project's Verilator (tcgen lint)
    assert res.clean, (res.errors + res.warnings)[:20]
