"""Stimulus generators shared by the tests: special values, directed edge cases, random mixes.

Everything returns numpy uint64 encodings; expected values always come from the golden model.
"""
from __future__ import annotations

import numpy as np

from tcgen.hw import numeric as num

__all__ = ["specials", "edge_values", "cross", "random_fp_pairs", "tie_pairs", "concat_pairs",
           "dot_lanes", "result_corners", "convert_corners"]


def specials(fmt) -> list[int]:
    """±0, ±min/max subnormal, ±min/max normal, ±1, ±(1+ulp), ±inf and NaNs (a few payloads)."""
    fmt = num.get_format(fmt)
    sbit = 1 << (fmt.width - 1)
    one = fmt.bias << fmt.man_bits
    pos = [0, 1, fmt.man_mask, fmt.min_normal, fmt.max_finite, one, one | 1]
    if fmt.ieee:
        pos += [fmt.inf, fmt.nan, fmt.inf | 1, fmt.inf | fmt.man_mask]
    else:
        pos += [fmt.nan]
    return sorted(set(pos + [p | sbit for p in pos]))


def edge_values(fmt) -> list[int]:
    """Values next to every boundary: binade edges, subnormal/normal edge, overflow edge."""
    fmt = num.get_format(fmt)
    sbit = 1 << (fmt.width - 1)
    one = fmt.bias << fmt.man_bits
    out = set(specials(fmt))
    for e in (1, 2, fmt.bias - fmt.man_bits - 1, fmt.bias - 1, fmt.bias, fmt.bias + 1,
              fmt.max_exp_field - 1, fmt.max_exp_field):
        if 0 < e <= fmt.max_exp_field:
            base = e << fmt.man_bits
            for m in (0, 1, fmt.man_mask // 2, fmt.man_mask // 2 + 1, fmt.man_mask - 1,
                      fmt.man_mask):
                v = base | m
                if v <= fmt.max_finite:
                    out.update((v, v | sbit))
    for m in (2, 3, fmt.man_mask >> 1, fmt.man_mask - 1):       # subnormals
        out.update((m, m | sbit))
    out.update((one | 2, one - 1, (one - 1) | sbit))
    return sorted(out)


def cross(values) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of ``values``."""
    v = np.asarray(values, dtype=np.uint64)
    return np.repeat(v, len(v)), np.tile(v, len(v))


def concat_pairs(*pairs):
    return (np.concatenate([p[0] for p in pairs]).astype(np.uint64),
            np.concatenate([p[1] for p in pairs]).astype(np.uint64))


def random_fp_pairs(fmt, rng, n) -> tuple[np.ndarray, np.ndarray]:
    """A mix that reaches every datapath corner of an adder/multiplier.

    * 1/4 uniform random encodings (all classes, wide exponent gaps);
    * 1/4 close exponents with opposite signs (massive cancellation, normalization shifts);
    * 1/4 short significands (few random top bits: exact ties and carries in rounding);
    * 1/4 small magnitudes (subnormal inputs and results, gradual underflow).
    """
    fmt = num.get_format(fmt)
    w, man = fmt.width, fmt.man_bits
    q = n // 4
    parts_a, parts_b = [], []
    a = rng.integers(0, 1 << w, size=q, dtype=np.uint64)
    b = rng.integers(0, 1 << w, size=q, dtype=np.uint64)
    parts_a.append(a)
    parts_b.append(b)
    a = rng.integers(0, 1 << w, size=q, dtype=np.uint64)
    delta = rng.integers(0, 1 << (man + 2), size=q, dtype=np.uint64)
    parts_a.append(a)
    parts_b.append((a ^ delta) ^ np.uint64(1 << (w - 1)))
    keep = rng.integers(1, min(man, 6) + 1, size=(2, q))
    for i in range(2):
        x = rng.integers(0, 1 << w, size=q, dtype=np.uint64)
        mask = ~((np.uint64(1) << (np.uint64(man) - keep[i].astype(np.uint64))) - np.uint64(1))
        (parts_a if i == 0 else parts_b).append(x & mask)
    r = n - 3 * q
    small_exp = rng.integers(0, 4, size=(2, r)).astype(np.uint64)
    for i in range(2):
        x = rng.integers(0, 1 << man, size=r, dtype=np.uint64) | (small_exp[i] << np.uint64(man))
        sign = rng.integers(0, 2, size=r, dtype=np.uint64) << np.uint64(w - 1)
        (parts_a if i == 0 else parts_b).append(x | sign)
    return np.concatenate(parts_a), np.concatenate(parts_b)


def tie_pairs(fmt, rng, n) -> tuple[np.ndarray, np.ndarray]:
    """a + b lands exactly halfway between two neighbours (and a few ulps around it)."""
    fmt = num.get_format(fmt)
    man = fmt.man_bits
    e = rng.integers(man + 2, fmt.max_exp_field, size=n).astype(np.uint64)
    a = (e << np.uint64(man)) | rng.integers(0, 1 << man, size=n, dtype=np.uint64)
    # b = half-ulp(a) (k=0) or 3 half-ulps = 1.5 ulp (k=1); normal since e > man + 1
    k = rng.integers(0, 2, size=n).astype(np.uint64)
    b = ((e - np.uint64(man + 1) + k) << np.uint64(man)) | (k << np.uint64(man - 1))
    sign = rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(fmt.width - 1)
    return a, b | sign


# -- PacQ weight words --------------------------------------------------------------------------
#: 16 INT4 words: lane j of word t holds (t + 5j) mod 16 -> every code in every lane, and the
#: four lanes of a word always differ (a crossed lane would show)
WORDS4 = [sum(((t + 5 * j) % 16) << (4 * j) for j in range(4)) for t in range(16)]
#: 4 INT2 words: lane j of word t holds (t + j) mod 4
WORDS2 = [sum(((t + j) % 4) << (2 * j) for j in range(8)) for t in range(4)]


def dot_lanes(fmt, rng, n, lanes: int = 4, special_rate: float = 0.02) -> np.ndarray:
    """[n, lanes] encodings for dot-product operands: :func:`random_fp_pairs`' mix (both
    halves), with ``special_rate`` of the lanes replaced by a :func:`specials` value and a
    further 1/8 of the rows made to cancel (lane 1 = −lane 0) so the tree sees exact zeros."""
    a, b = random_fp_pairs(fmt, rng, (n * lanes + 1) // 2 + 4)
    x = np.concatenate([a, b])[:n * lanes].reshape(n, lanes)
    x = x[rng.permutation(n)]
    sp = np.asarray(specials(fmt), dtype=np.uint64)
    hit = rng.random((n, lanes)) < special_rate
    x = np.where(hit, sp[rng.integers(0, len(sp), size=(n, lanes))], x)
    cancel = rng.random(n) < 0.125
    if lanes > 1:
        x[cancel, 1] = x[cancel, 0] ^ np.uint64(1 << (num.get_format(fmt).width - 1))
    return x


# -- result-class corners (functional coverage, docs/coverage.md) --------------------------------
def result_corners(fmt, acc, lanes: int, out=None):
    """``(a [k, lanes], b [k, lanes], c [k])`` dot-product rows whose result ``c + Σ a·b`` (in
    ``out``, default ``acc``) lands in every result class: products zero (a = +0) and c = 0,
    the smallest subnormal, 1, the largest finite of ``out`` (as an ``acc`` value), ±inf, NaN;
    and every lane at the largest finite ``fmt`` value with c at the largest finite ``acc``
    value, both signs (overflow, where the formats allow it)."""
    f, a_f = num.get_format(fmt), num.get_format(acc)
    o = num.get_format(out or acc)
    one = num.from_float(np.array([1.0]), fmt)[0]
    cs = [0, 1 << 0, a_f.bias << a_f.man_bits, a_f.nan]
    cs[1] = int(num.from_float(np.array([2.0 ** (o.emin - o.man_bits)]), acc)[0])  # min sub
    cs.append(int(num.from_float(np.array([float(o.max_value())]), acc, saturate=True)[0]))
    if a_f.ieee:
        cs += [a_f.inf, a_f.inf | a_f.sign_mask]
    rows_a, rows_b, rows_c = [], [], []
    for c in cs:
        rows_a.append([0] * lanes)
        rows_b.append([one] * lanes)
        rows_c.append(c)
    for sign in (0, 1):
        rows_a.append([f.max_finite | (sign * f.sign_mask)] * lanes)
        rows_b.append([f.max_finite] * lanes)
        rows_c.append(a_f.max_finite | (sign * a_f.sign_mask))
    return (np.array(rows_a, np.uint64), np.array(rows_b, np.uint64),
            np.array(rows_c, np.uint64))


def convert_corners(src, dst, rng, n: int = 200) -> np.ndarray:
    """``src`` encodings exactly halfway between two neighbours of ``dst`` (normal and
    subnormal range, both signs), a few ulps of ``src`` around them, and the values around
    ``dst``'s overflow threshold -- where a narrowing conversion rounds."""
    d = num.get_format(dst)
    e = rng.integers(1, d.max_exp_field + 1, n)
    m = rng.integers(0, 1 << d.man_bits, n)
    lo = np.ldexp(1.0 + m / 2.0 ** d.man_bits, e - d.bias)
    lo = np.where(e == 0, 0.0, lo)
    mid = lo + np.ldexp(1.0, e - d.bias - d.man_bits - 1)              # normal ties
    sub = np.ldexp(rng.integers(0, 1 << d.man_bits, n) + 0.5, d.emin - d.man_bits)  # subnormal
    top = float(d.max_value())
    over = np.array([top, top + 2.0 ** (d.emax - d.man_bits - 1), 2 * top])
    x = np.concatenate([mid, sub, over])
    x = np.concatenate([x, -x])
    x = x[np.abs(x) < float(num.get_format(src).max_value())]
    bits = num.from_float(x, src)
    near = np.concatenate([bits, bits + np.uint64(1), bits - np.uint64(1)])
    return near[np.isfinite(num.to_float(near, src))]
