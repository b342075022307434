"""The numeric reference (tcgen.hw.numeric) against an independent ``fractions.Fraction`` oracle.

The oracle below shares no code with tcgen.hw.numeric: it decodes fields by hand, does exact
rational arithmetic, and rounds by finding the binade and the ulp with Fractions.  For FP8 it is
itself checked against brute force (nearest of all representable values).
"""
from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from tcgen.verify.harness import seed
from tcgen.verify.stimulus import (concat_pairs, cross, edge_values, random_fp_pairs, specials,
                                   tie_pairs)
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


@functools.lru_cache(maxsize=None)
def _p2(e: int) -> Fraction:
    """2**e as a Fraction (cached: the oracle's hot path)."""
    return F(1 << e) if e >= 0 else F(1, 1 << -e)


def o_round(v: Fraction, fmt, mode: str, sign_if_zero: int = 0, saturate=False) -> int:
    e_bits, m_bits = fmt.exp_bits, fmt.man_bits
    bias = 2 ** (e_bits - 1) - 1
    emin = 1 - bias
    sbit = 1 << (e_bits + m_bits)
    if fmt.ieee:
        emax = (2 ** e_bits - 2) - bias
        maxv = (2 - F(1, 2 ** m_bits)) * _p2(emax)
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
    while _p2(e) > a:
        e -= 1
    while _p2(e + 1) <= a:
        e += 1
    e = max(e, emin)
    ulp = _p2(e - m_bits)
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
    if r < _p2(emin):
        return s | int(r / _p2(emin - m_bits))
    e2 = r.numerator.bit_length() - r.denominator.bit_length()
    while _p2(e2) > r:
        e2 -= 1
    while _p2(e2 + 1) <= r:
        e2 += 1
    mant = int(r / _p2(e2 - m_bits)) - 2 ** m_bits
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
        i = bisect.bisect_left(finite, v)          # the enumerated values around v
        below, above = finite[max(i - 1, 0)], finite[min(i, len(finite) - 1)]
        if mode == "rtz":                          # the largest magnitude not above |v|
            if v in finite:
                want = v
            elif v > 0:
                want = below if below >= 0 else F(0)
            else:
                want = above if above <= 0 else F(0)
            assert got == want, (v, got, want)
        else:
            best = min(abs(below - v), abs(above - v))
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


# -- the int64 aligned-with-sticky adder (BF16, FP32) and the FP16 datapaths ---------------------
# fp_add aligns the smaller operand with 3 guard bits and a sticky bit instead of forming the
# exact sum (Python ints for BF16/FP32).  These check it against the oracle on directed exponent
# differences around the guard/sticky boundary, and against the exact-sum formulation
# (num._fp_add_exact, the previous implementation) on larger sets.
def _add_directed(fmt):
    """Pairs at exponent differences 0, 1, 2, 3, p-1 .. p+4, 2p+5 and 60 (clamped into the
    subnormal range), significands with every interesting low/high pattern, same and opposite
    signs in both operand orders; exact cancellations are the d = 0, equal-significand pairs."""
    man, p, sbit = fmt.man_bits, fmt.precision, fmt.sign_mask
    half = 1 << (man - 1)
    mants = sorted({0, 1, half - 1, half, half + 1, fmt.man_mask})
    exps = sorted({1, 2, p + 1, fmt.bias, fmt.max_exp_field - 1, fmt.max_exp_field})
    diffs = [0, 1, 2, 3, p - 1, p, p + 1, p + 2, p + 3, p + 4, 2 * p + 5, 60]
    pairs = set()
    for ex in exps:
        for d in diffs:
            ey = max(ex - d, 0)
            for mx in mants:
                for my in mants:
                    x, y = (ex << man) | mx, (ey << man) | my
                    pairs.update({(x, y), (x, y | sbit), (y | sbit, x), (x | sbit, y | sbit)})
    a, b = zip(*sorted(pairs))
    return np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64)


def _exp_diff_pairs(fmt, rng, n):
    """Random significands and signs at a random exponent difference 0 .. p+5."""
    man, p, top = fmt.man_bits, fmt.precision, fmt.max_exp_field
    ex = rng.integers(1, top + 1, size=n)
    ey = np.maximum(ex - rng.integers(0, p + 6, size=n), 0)
    a = (ex << man) | rng.integers(0, 1 << man, size=n)
    b = (ey << man) | rng.integers(0, 1 << man, size=n)
    s = rng.integers(0, 4, size=n)
    sm = fmt.sign_mask
    return (a | ((s & 1) * sm)).astype(np.uint64), (b | ((s >> 1) * sm)).astype(np.uint64)


def _check_vs_exact_add(a, b, fmt, mode, ftz=False):
    got = num.fp_add(a, b, fmt, mode, ftz=ftz)
    want = num._fp_add_exact(a, b, fmt, mode, ftz=ftz)
    assert got.dtype == want.dtype == np.uint64 and got.shape == want.shape
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} differ from the exact-sum adder, first: " + \
        str([(hex(int(a[i])), hex(int(b[i])), hex(int(got[i])), hex(int(want[i])))
             for i in bad[:5]])


@pytest.mark.parametrize("fmt", [num.BF16, num.FP32], ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
def test_sticky_adder_directed_vs_fractions(fmt, mode):
    """Every pair of special values (±0, ±min/max subnormal, ±min/max normal, ±1, ±inf, NaNs)
    and the directed exponent-difference set, against the Fraction oracle and the exact sum."""
    a, b = concat_pairs(cross(specials(fmt)), _add_directed(fmt))
    assert len(a) > 5000
    _check(num.fp_add, o_add, a, b, fmt, mode)
    _check_vs_exact_add(a, b, fmt, mode)


@pytest.mark.parametrize("fmt", [num.BF16, num.FP32], ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
def test_sticky_adder_random_vs_fractions(fmt, mode):
    """>= 20,000 random pairs per format and mode: the stimulus mix (uniform, cancellation, short
    significands, small magnitudes), ties, and exponent differences 0 .. p+5."""
    rng = np.random.default_rng(seed(3030))
    a, b = concat_pairs(random_fp_pairs(fmt, rng, 12000), tie_pairs(fmt, rng, 2000),
                        _exp_diff_pairs(fmt, rng, 6000))
    assert _check(num.fp_add, o_add, a, b, fmt, mode) >= 20000


@pytest.mark.parametrize("mode", num.MODES)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_fp16_random_vs_fractions(op, mode):
    rng = np.random.default_rng(seed(1616))
    a, b = concat_pairs(random_fp_pairs(num.FP16, rng, 8000), tie_pairs(num.FP16, rng, 1000),
                        _exp_diff_pairs(num.FP16, rng, 3000))
    ref, orc = (num.fp_add, o_add) if op == "add" else (num.fp_mul, o_mul)
    _check(ref, orc, a, b, num.FP16, mode)


@pytest.mark.parametrize("fmt", [num.FP16, num.BF16, num.FP32, num.FP8_E4M3, num.FP8_E5M2],
                         ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
@pytest.mark.parametrize("ftz", [False, True], ids=["ieee", "ftz"])
def test_fp_add_equals_exact_sum_adder(fmt, mode, ftz):
    """The fast adder against the previous exact-sum implementation (bit for bit, ftz too):
    FP8 exhaustively, the wider formats on specials/edges crossed and random pairs spanning
    several blocks."""
    if fmt.width == 8:
        a, b = cross(np.arange(256))
    else:
        rng = np.random.default_rng(seed(4040))
        n = 40000 if fmt.width == 16 else 20000
        a, b = concat_pairs(cross(edge_values(fmt)), _add_directed(fmt),
                            random_fp_pairs(fmt, rng, n), tie_pairs(fmt, rng, 2000),
                            _exp_diff_pairs(fmt, rng, n // 2))
    _check_vs_exact_add(a, b, fmt, mode, ftz)


def test_kernel_shapes_dtypes_and_blocks():
    """Broadcasting, scalars, lists, narrow and signed input dtypes and arrays spanning several
    blocks give what the element-wise definition gives."""
    f = num.FP16
    rng = np.random.default_rng(seed(5))
    n = 3 * num._CHUNK + 123
    a = rng.integers(0, 1 << 16, n, dtype=np.uint64)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint64)
    for op in (num.fp_add, num.fp_mul):
        want = op(a, b, f, "rne")
        assert want.dtype == np.uint64 and want.shape == (n,)
        assert np.array_equal(op(a.astype(np.uint16), b.astype(np.int64), f, "rne"), want)
        assert np.array_equal(op(a.reshape(-1, 3)[:, 0], b[::3], f), want[::3])
        col = op(a[:7, None], b[None, :5], f)
        assert col.shape == (7, 5)
        assert all(col[i, j] == op(a[i:i + 1], b[j:j + 1], f)[0]
                   for i in range(7) for j in range(5))
        s = op(0x3C00, [0x3C00, 0xBC00], f)
        assert s.shape == (2,) and op(0x3C00, 0x4000, f).shape == ()
    assert int(num.fp_add(0x3C00, 0x3C00, f)) == 0x4000
    assert int(num.fp_mul(0xC000, 0x3E00, f)) == 0xC200
    assert num.fp_add(np.zeros(0, np.uint16), np.zeros(0, np.uint16), num.BF16).shape == (0,)
    x = rng.integers(0, 1 << 32, 50000, dtype=np.uint64)
    assert np.array_equal(num.fp_convert(x.astype(np.uint32), "fp32", "fp16"),
                          num.fp_convert(x, "fp32", "fp16"))


def test_round_exact_fast_path_matches_reference():
    """round_exact's blocked int64 kernel against the whole-array reference formulation."""
    rng = np.random.default_rng(seed(6))
    n = 60000
    mag = rng.integers(0, 1 << 52, n) >> rng.integers(0, 53, n)
    mag[:50] = 0
    exp = rng.integers(-1200, 1100, n)
    sign = rng.integers(0, 2, n)
    for f in (num.FP16, num.BF16, num.FP32, num.FP8_E4M3, num.FP8_E5M2):
        for mode in num.MODES:
            for sat, ftz in ((False, False), (True, False), (False, True)):
                got = num.round_exact(sign, mag, exp, f, mode, saturate=sat, ftz=ftz)
                want = num._round_exact_ref(sign, mag, exp, f, mode, saturate=sat, ftz=ftz)
                assert np.array_equal(got, want), (f.name, mode, sat, ftz)


def test_bit_length():
    vals = [0, 1, 2, 3, 255, 256, 2**52 - 1, 2**52, 2**53 - 1, 2**53, 2**53 + 1, 2**54 - 1,
            2**62 - 1, 2**62, 2**63 - 1]
    rng = np.random.default_rng(seed(8))
    vals += (rng.integers(0, 2**63 - 1, 5000) >> rng.integers(0, 63, 5000)).tolist()
    got = num.bit_length(np.array(vals, dtype=np.int64))
    assert got.dtype == np.int64
    assert got.tolist() == [v.bit_length() for v in vals]
    assert num.bit_length(np.array([-5, 0])).tolist() == [0, 0]
    assert num.bit_length(np.array([2**200, 5], dtype=object)).tolist() == [201, 3]


@pytest.mark.parametrize("fmt", [num.FP8_E4M3, num.FP8_E5M2], ids=lambda f: f.name)
@pytest.mark.parametrize("mode", num.MODES)
def test_scale_pow2_exhaustive_vs_fractions(fmt, mode):
    """x·2^j for every FP8 encoding and j in −12..9 (past the range both ways: underflow into
    and below the subnormals, overflow) against the exact value rounded by Fractions; NaN
    stays NaN, ±inf and ±0 keep their sign."""
    x = np.arange(1 << fmt.width, dtype=np.uint64)
    for j in range(-12, 10):
        got = num.fp_scale_pow2(x, j, fmt, mode)
        for xi, g in zip(x.tolist(), got.tolist()):
            v = num.to_fraction(xi, fmt)
            if v == "nan":
                assert g == fmt.nan
            elif isinstance(v, str):                      # ±inf
                assert g == xi
            else:
                want = num.round_fraction(v * 2 ** j, fmt, mode,
                                          sign_of_zero=xi >> (fmt.width - 1))
                assert g == want, (hex(xi), j, hex(g), hex(want))


@pytest.mark.parametrize("mode", num.MODES)
def test_scale_pow2_fp16_exhaustive_vs_mul(mode):
    """FP16: every encoding × j in −24..15 equals the correctly rounded product by 2^j (fp_mul,
    itself checked against Fractions above): subnormals shifted up, overflow to inf / max,
    underflow rounded (j = −1 is the Winograd FTF's ½, formerly fp_mul(x, 0.5))."""
    x = np.arange(1 << 16, dtype=np.uint64)
    for j in range(-24, 16):
        two_j = num.from_float(2.0 ** j, num.FP16)
        assert (num.fp_scale_pow2(x, j, num.FP16, mode) == num.fp_mul(x, two_j, num.FP16,
                                                                       mode)).all(), j


def test_pairwise_sum_order():
    """The tree order ((t0+t1)+(t2+t3))+t4: checked with a non-associative '+' (strings)."""
    add = lambda x, y: f"({x}+{y})"                                   # noqa: E731
    assert num.pairwise_sum(list("abcde"), add) == "(((a+b)+(c+d))+e)"
    assert num.pairwise_sum(["a"], add) == "a"
    assert num.pairwise_sum(list("abc"), add) == "((a+b)+c)"
    with pytest.raises(ValueError):
        num.pairwise_sum([], add)
