"""The numeric reference (tcgen.hw.numeric) against an independent ``fractions.Fraction`` oracle.

The oracle below shares no code with tcgen.hw.numeric: it decodes fields by hand, does exact
rational arithmetic, and rounds by finding the binade and the ulp with Fractions.  For FP8 it is
itself checked against brute force (nearest of all representable values).
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from harness import seed
from stimulus import specials
from tcgen.hw import numeric as num

F = Fraction


# -- the oracle ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def o_value(bits: int, fmt) -> Fraction | str:
    e_bits, m_bits = fmt.exp_bits, fmt.man_bits
    s = (bits >> (e_bits + m_bits)) & 1
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    bias = 2 ** (e_bits - 1) - 1
    top = (1 << e_bits) - 1
    if fmt.ieee and e == top:
        return "nan" if m else ("-inf" if s else "+inf")
    if not fmt.ieee and e == top and m == (1 << m_bits) - 1:
        return "nan"
    if e == 0:
        v = F(m, 2 ** m_bits) * F(2) ** (1 - bias)
    else:
        v = (1 + F(m, 2 ** m_bits)) * F(2) ** (e - bias)
    return -v if s else v


def o_round(v: Fraction, fmt, mode: str, sign_if_zero: int = 0, saturate=False) -> int:
    e_bits, m_bits = fmt.exp_bits, fmt.man_bits
    bias = 2 ** (e_bits - 1) - 1
    emin = 1 - bias
    sbit = 1 << (e_bits + m_bits)
    if fmt.ieee:
        emax = (2 ** e_bits - 2) - bias
        maxv = (2 - F(1, 2 ** m_bits)) * F(2) ** emax
        max_enc = ((2 ** e_bits - 2) << m_bits) | (2 ** m_bits - 1)
        inf_enc = (2 ** e_bits - 1) << m_bits
        nan_enc = inf_enc | (1 << (m_bits - 1))
    else:
        maxv = F(448)
        max_enc = 0x7E
        nan_enc = 0x7F
    if v == 0:
        return sbit if sign_if_zero else 0
    s = sbit if v < 0 else 0
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while F(2) ** e > a:
        e -= 1
    while F(2) ** (e + 1) <= a:
        e += 1
    e = max(e, emin)
    ulp = F(2) ** (e - m_bits)
    q = a / ulp
    n = math.floor(q)
    rem = q - n
    if mode == "rne" and (rem > F(1, 2) or (rem == F(1, 2) and n % 2 == 1)):
        n += 1
    r = n * ulp
    if r > maxv:
        if mode == "rtz" or saturate:
            return s | max_enc
        return (s | inf_enc) if fmt.ieee else nan_enc
    if r == 0:
        return s
    if r < F(2) ** emin:
        return s | int(r / F(2) ** (emin - m_bits))
    e2 = r.numerator.bit_length() - r.denominator.bit_length()
    while F(2) ** e2 > r:
        e2 -= 1
    while F(2) ** (e2 + 1) <= r:
        e2 += 1
    mant = int(r / F(2) ** (e2 - m_bits)) - 2 ** m_bits
    return s | ((e2 + bias) << m_bits) | mant


def o_nan(fmt):
    return o_round(F(10) ** 9, fmt, "rne") if not fmt.ieee else \
        (((1 << fmt.exp_bits) - 1) << fmt.man_bits) | (1 << (fmt.man_bits - 1))


def o_add(a: int, b: int, fmt, mode: str) -> int:
    va, vb = o_value(a, fmt), o_value(b, fmt)
    sbit = 1 << (fmt.width - 1)
    if "nan" in (va, vb) or {va, vb} == {"+inf", "-inf"}:
        return fmt.nan
    for v, bits in ((va, a), (vb, b)):
        if isinstance(v, str):
            return (sbit if v == "-inf" else 0) | (((1 << fmt.exp_bits) - 1) << fmt.man_bits)
    s = va + vb
    neg_zero = (a & sbit) and (b & sbit)
    return o_round(s, fmt, mode, sign_if_zero=1 if (s == 0 and neg_zero) else 0)


def o_mul(a: int, b: int, fmt, mode: str) -> int:
    va, vb = o_value(a, fmt), o_value(b, fmt)
    sbit = 1 << (fmt.width - 1)
    sign = ((a ^ b) & sbit) != 0
    if "nan" in (va, vb):
        return fmt.nan
    if isinstance(va, str) or isinstance(vb, str):
        other = vb if isinstance(va, str) else va
        if other == 0:
            return fmt.nan
        return (sbit if sign else 0) | (((1 << fmt.exp_bits) - 1) << fmt.man_bits)
    return o_round(va * vb, fmt, mode, sign_if_zero=int(sign))


# -- oracle self-check ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", [num.FP8_E4M3, num.FP8_E5M2], ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
def test_oracle_matches_brute_force_nearest(fmt, mode):
    """The Fraction oracle agrees with 'nearest representable value' found by enumeration."""
    finite = sorted({o_value(b, fmt) for b in range(1 << fmt.width)
                     if not isinstance(o_value(b, fmt), str)})
    rng = np.random.default_rng(seed(11))
    probes = [F(int(n), int(d)) for n, d in zip(rng.integers(-600000, 600000, 3000),
                                                 rng.integers(1, 2000, 3000))]
    probes += [(x + y) / 2 for x, y in zip(finite, finite[1:])]          # every midpoint
    maxv = finite[-1]
    for v in probes:
        got = o_value(o_round(v, fmt, mode), fmt)
        if isinstance(got, str):
            assert abs(v) > maxv
            continue
        if mode == "rtz":
            cands = [x for x in finite if abs(x) <= abs(v) and (x >= 0) == (v >= 0)]
            want = max(cands, key=abs) if cands else F(0)
            assert got == want, (v, got, want)
        else:
            best = min(abs(x - v) for x in finite)
            assert abs(got - v) == best or abs(v) > maxv, (v, got)


# -- the reference vs the oracle -----------------------------------------------------------------
def _all_pairs(width):
    a, b = np.meshgrid(np.arange(1 << width, dtype=np.uint64),
                       np.arange(1 << width, dtype=np.uint64), indexing="ij")
    return a.ravel(), b.ravel()


def _check(op_ref, op_oracle, a, b, fmt, mode):
    got = op_ref(a, b, fmt, mode)
    bad = [(int(x), int(y), int(g)) for x, y, g in zip(a, b, got)
           if int(g) != op_oracle(int(x), int(y), fmt, mode)]
    assert not bad, f"{len(bad)} mismatches, first: {[tuple(map(hex, t)) for t in bad[:5]]}"
    return len(a)


@pytest.mark.parametrize("fmt", [num.FP8_E4M3, num.FP8_E5M2], ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_fp8_exhaustive_vs_fractions(fmt, mode, op):
    a, b = _all_pairs(8)
    ref, orc = (num.fp_add, o_add) if op == "add" else (num.fp_mul, o_mul)
    assert _check(ref, orc, a, b, fmt, mode) == 65536


def _sample(fmt, rng, n):
    w = fmt.width
    sp = np.array(specials(fmt), dtype=np.uint64)
    rand = rng.integers(0, 1 << w, size=(n, 2), dtype=np.uint64)
    a = np.concatenate([np.repeat(sp, len(sp)), rand[:, 0]])
    b = np.concatenate([np.tile(sp, len(sp)), rand[:, 1]])
    # close exponents: cancellation and rounding in the adder
    near = rand[:, 0] ^ rng.integers(0, 1 << (fmt.man_bits + 2), size=n, dtype=np.uint64)
    return np.concatenate([a, rand[:, 0]]), np.concatenate([b, near ^ np.uint64(1 << (w - 1))])


@pytest.mark.parametrize("fmt", [num.FP16, num.BF16, num.FP32], ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_wide_formats_vs_fractions(fmt, mode, op):
    rng = np.random.default_rng(seed(2024))
    a, b = _sample(fmt, rng, 3000)
    ref, orc = (num.fp_add, o_add) if op == "add" else (num.fp_mul, o_mul)
    _check(ref, orc, a, b, fmt, mode)


# FP16 -> FP32 is exact (mode and saturation cannot matter); FP16 -> BF16 cannot overflow.
CONVERSIONS = [("fp32", "rne", False), ("bf16", "rne", False), ("bf16", "rtz", False)] + \
    [(d, m, s) for d in ("fp8_e4m3", "fp8_e5m2") for m in num.MODES for s in (False, True)]


@pytest.mark.parametrize("dst,mode,saturate", CONVERSIONS)
def test_convert_from_fp16_exhaustive_vs_fractions(dst, mode, saturate):
    src, dfmt = num.FP16, num.get_format(dst)
    a = np.arange(1 << 16, dtype=np.uint64)
    got = num.fp_convert(a, src, dfmt, mode, saturate=saturate)
    sbit_d = 1 << (dfmt.width - 1)
    for x, g in zip(a.tolist(), got.tolist()):
        v = o_value(x, src)
        if v == "nan":
            want = dfmt.nan
        elif isinstance(v, str):
            neg = v == "-inf"
            if dfmt.ieee:
                want = (sbit_d if neg else 0) | dfmt.inf
            else:
                want = ((sbit_d if neg else 0) | dfmt.max_finite) if saturate else dfmt.nan
        else:
            want = o_round(v, dfmt, mode, sign_if_zero=x >> 15, saturate=saturate)
        assert g == want, (hex(x), hex(g), hex(want))


def test_round_fraction_non_dyadic():
    rng = np.random.default_rng(seed(7))
    for fmt in (num.FP16, num.BF16, num.FP32, num.FP8_E4M3):
        for _ in range(400):
            v = F(int(rng.integers(-10**9, 10**9)), int(rng.integers(1, 10**7)))
            for mode in num.MODES:
                assert num.round_fraction(v, fmt, mode) == o_round(v, fmt, mode), (v, fmt, mode)


def test_float_round_trip_and_numpy_agreement():
    """to_float is exact; from_float on those values is the identity (except NaN payloads)."""
    a = np.arange(1 << 16, dtype=np.uint64)
    f = num.to_float(a, num.FP16)
    back = num.from_float(f, num.FP16)
    nan = np.isnan(f)
    assert np.array_equal(back[~nan], a[~nan])
    assert np.all(back[nan] == num.FP16.nan)
    # numpy's float16 cast of float64 is correctly rounded (RNE): an independent check
    rng = np.random.default_rng(seed(3))
    x = rng.standard_normal(20000) * np.exp2(rng.integers(-30, 20, 20000))
    with np.errstate(over="ignore"):
        assert np.array_equal(num.from_float(x, num.FP16),
                              x.astype(np.float16).view(np.uint16).astype(np.uint64))


def test_ftz_and_saturate_rules():
    fmt = num.FP16
    sub = np.array([0x0001, 0x83FF], dtype=np.uint64)
    assert list(num.daz(sub, fmt)) == [0x0000, 0x8000]
    # 2^-14 * 2^-1: a subnormal result flushes to zero (sign kept)
    half = num.from_float(np.array([0.5]), fmt)
    mn = np.array([fmt.min_normal | fmt.sign_mask], dtype=np.uint64)
    assert num.fp_mul(mn, half, fmt, "rne", ftz=True)[0] == 0x8000
    assert num.fp_mul(mn, half, fmt, "rne")[0] == 0x8200
    # overflow: RNE -> inf, RTZ -> max, saturate -> max; E4M3 RNE -> NaN
    big = num.from_float(np.array([70000.0, -1e6]), fmt)
    assert list(big) == [0x7C00, 0xFC00]
    assert list(num.from_float(np.array([70000.0, -1e6]), fmt, "rtz")) == [0x7BFF, 0xFBFF]
    assert list(num.from_float(np.array([1e6]), fmt, saturate=True)) == [0x7BFF]
    e4 = num.FP8_E4M3
    assert list(num.from_float(np.array([464.0, 465.0, -500.0]), e4)) == [0x7E, 0x7F, 0x7F]
    assert list(num.from_float(np.array([465.0, -500.0]), e4, saturate=True)) == [0x7E, 0xFE]


def test_format_constants():
    assert (num.FP16.nan, num.BF16.nan, num.FP32.nan, num.FP8_E5M2.nan, num.FP8_E4M3.nan) == \
        (0x7E00, 0x7FC0, 0x7FC00000, 0x7E, 0x7F)
    assert num.to_float(np.array([num.FP8_E4M3.max_finite]), num.FP8_E4M3)[0] == 448.0
    assert num.to_float(np.array([num.FP8_E5M2.max_finite]), num.FP8_E5M2)[0] == 57344.0
    assert num.to_float(np.array([num.FP16.max_finite]), num.FP16)[0] == 65504.0
    with pytest.raises(ValueError, match="unknown float format"):
        num.get_format("fp12")
    with pytest.raises(ValueError, match="rounding mode"):
        num.fp_add(np.array([0]), np.array([0]), num.FP16, "rnd")
