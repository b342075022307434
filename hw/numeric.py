"""The numeric reference of tcgen (docs/architecture.md, "Numerics").

One place that knows how to round an *exact* value to any :class:`FloatFormat`.  Every golden
model calls it; none relies on numpy's float16 arithmetic (which goes through float32).

Exact values are carried as ``(-1)**sign * mag * 2**exp`` with integer ``mag`` and ``exp``.
``mag`` is an ``int64`` numpy array when everything fits in 62 bits and an ``object`` array
of Python ints otherwise (FP32 addition needs ~280 bits), so the arithmetic is exact either way.

Formats
    ``FloatFormat(exp_bits, man_bits)`` is an IEEE-754 binary format (subnormals, ±0, ±inf, NaN).
    ``FloatFormat(4, 3, ieee=False)`` is OCP FP8 E4M3: no infinities, NaN = S.1111.111 only,
    max finite 448.

Rounding (``mode``)
    ``"rne"`` round to nearest, ties to even; ``"rtz"`` round toward zero.  Rounding is done as
    if the exponent range were unbounded below the format's ``emin`` (i.e. to the subnormal grid)
    and unbounded above; a rounded magnitude above the largest finite value overflows:
    RNE -> ±inf (E4M3: NaN), RTZ -> ±max finite, and ``saturate=True`` -> ±max finite always.
    ``ftz=True`` flushes subnormal *results* to a zero of the same sign; inputs are flushed by
    :func:`daz`.

NaNs
    Every NaN produced is the canonical one: sign 0, exponent all ones, quiet bit set, rest zero
    (FP16 0x7E00, BF16 0x7FC0, FP32 0x7FC00000, E5M2 0x7E); E4M3: 0x7F.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

MODES = ("rne", "rtz")

__all__ = [
    "FloatFormat", "FORMATS", "FP32", "FP16", "BF16", "FP8_E4M3", "FP8_E5M2", "FP64", "MODES",
    "get_format", "decode", "round_exact", "daz", "fp_add", "fp_mul", "fp_convert",
    "from_float", "to_float", "to_fraction", "round_fraction", "bit_length",
]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: 1 sign bit, ``exp_bits`` exponent, ``man_bits`` fraction."""

    exp_bits: int
    man_bits: int
    ieee: bool = True
    name: str = ""

    def __post_init__(self):
        if not (2 <= self.exp_bits <= 11) or not (1 <= self.man_bits <= 52):
            raise ValueError(f"FloatFormat: exp_bits must be 2..11 and man_bits 1..52, got "
                             f"{self.exp_bits}, {self.man_bits}")
        if not self.ieee and (self.exp_bits, self.man_bits) != (4, 3):
            raise ValueError("FloatFormat: ieee=False is only defined for OCP E4M3 (4, 3)")

    # -- derived constants -------------------------------------------------------------------
    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def precision(self) -> int:
        """Significand bits including the hidden bit."""
        return self.man_bits + 1

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def exp_all_ones(self) -> int:
        return (1 << self.exp_bits) - 1

    @property
    def man_mask(self) -> int:
        return (1 << self.man_bits) - 1

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def max_exp_field(self) -> int:
        """Largest exponent field that encodes finite numbers."""
        return self.exp_all_ones - 1 if self.ieee else self.exp_all_ones

    @property
    def max_man_at_max_exp(self) -> int:
        return self.man_mask if self.ieee else self.man_mask - 1

    @property
    def emax(self) -> int:
        return self.max_exp_field - self.bias

    @property
    def has_inf(self) -> bool:
        return self.ieee

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)

    @property
    def max_finite(self) -> int:
        return (self.max_exp_field << self.man_bits) | self.max_man_at_max_exp

    @property
    def min_normal(self) -> int:
        return 1 << self.man_bits

    @property
    def inf(self) -> int:
        if not self.ieee:
            raise ValueError(f"{self.label} has no infinity")
        return self.exp_all_ones << self.man_bits

    @property
    def nan(self) -> int:
        """The canonical NaN."""
        if not self.ieee:
            return (self.exp_all_ones << self.man_bits) | self.man_mask
        return (self.exp_all_ones << self.man_bits) | (1 << (self.man_bits - 1))

    @property
    def label(self) -> str:
        return self.name or f"e{self.exp_bits}m{self.man_bits}"

    def max_value(self) -> Fraction:
        return Fraction(2 ** self.emax) * (2 - Fraction(1, 2 ** self.man_bits)) if self.ieee \
            else Fraction(448)

    def exact_dtype(self, extra_bits: int = 0):
        """int64 if ``mag`` of an exact sum of two values (plus ``extra_bits``) fits, else object."""
        span = self.emax - self.emin + self.man_bits + 3 + extra_bits
        return np.int64 if span < 62 else object


FP32 = FloatFormat(8, 23, name="fp32")
FP16 = FloatFormat(5, 10, name="fp16")
BF16 = FloatFormat(8, 7, name="bf16")
FP8_E4M3 = FloatFormat(4, 3, ieee=False, name="fp8_e4m3")
FP8_E5M2 = FloatFormat(5, 2, name="fp8_e5m2")
FP64 = FloatFormat(11, 52, name="fp64")

FORMATS = {f.name: f for f in (FP32, FP16, BF16, FP8_E4M3, FP8_E5M2)}


def get_format(fmt) -> FloatFormat:
    if isinstance(fmt, FloatFormat):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown float format {fmt!r}; allowed: {', '.join(FORMATS)}") from None


def _check_mode(mode):
    if mode not in MODES:
        raise ValueError(f"rounding mode must be one of {', '.join(MODES)}, got {mode!r}")


# -- integer helpers ----------------------------------------------------------------------------
_bitlen_obj = np.frompyfunc(int.bit_length, 1, 1)


def bit_length(x):
    """Element-wise ``int.bit_length`` of a non-negative int64 or object array."""
    x = np.asarray(x)
    if x.dtype == object:
        return _bitlen_obj(x).astype(np.int64)
    x = x.astype(np.int64)
    n = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= (np.int64(1) << s)
        x = np.where(big, x >> s, x)
        n += np.where(big, s, 0)
    return n + (x > 0)


def _as_mag(mag, dtype):
    if dtype == object:
        return np.asarray(mag).astype(object)
    return np.asarray(mag, dtype=np.int64)


def _shl(mag, s):
    """mag << s for s >= 0 element-wise (object or int64)."""
    if mag.dtype == object:
        return np.frompyfunc(lambda m, k: m << int(k), 2, 1)(mag, s)
    return mag << s


def _shr(mag, s):
    if mag.dtype == object:
        return np.frompyfunc(lambda m, k: m >> int(k), 2, 1)(mag, s)
    return mag >> s


# -- decode / encode ----------------------------------------------------------------------------
def decode(bits, fmt: FloatFormat, dtype=np.int64):
    """Split encodings into ``(sign, mag, exp, is_nan, is_inf)`` with value = ±mag·2**exp.

    Zeros have ``mag == 0``; NaN/inf entries carry mag 0 and must be handled by the caller.
    """
    fmt = get_format(fmt)
    b = np.asarray(bits, dtype=np.uint64)
    sign = ((b >> np.uint64(fmt.width - 1)) & np.uint64(1)).astype(np.int64)
    e = ((b >> np.uint64(fmt.man_bits)) & np.uint64(fmt.exp_all_ones)).astype(np.int64)
    m = (b & np.uint64(fmt.man_mask)).astype(np.int64)
    if fmt.ieee:
        special = e == fmt.exp_all_ones
        is_nan = special & (m != 0)
        is_inf = special & (m == 0)
    else:
        is_nan = (e == fmt.exp_all_ones) & (m == fmt.man_mask)
        is_inf = np.zeros_like(is_nan)
    finite = ~(is_nan | is_inf)
    mag = np.where(finite, np.where(e > 0, m | (np.int64(1) << fmt.man_bits), m), 0)
    exp = np.maximum(e, 1) - fmt.bias - fmt.man_bits
    return sign, _as_mag(mag, dtype), exp, is_nan, is_inf


def daz(bits, fmt: FloatFormat):
    """Flush subnormal encodings to a zero of the same sign (denormals-are-zero on inputs)."""
    fmt = get_format(fmt)
    b = np.asarray(bits, dtype=np.uint64)
    e = (b >> np.uint64(fmt.man_bits)) & np.uint64(fmt.exp_all_ones)
    return np.where(e == 0, b & np.uint64(fmt.sign_mask), b)


def round_exact(sign, mag, exp, fmt: FloatFormat, mode: str = "rne", *, saturate=False,
                ftz=False):
    """Round the exact values ±mag·2**exp to ``fmt`` and return the encodings (uint64).

    ``mag == 0`` gives a zero with the given sign.
    """
    fmt = get_format(fmt)
    _check_mode(mode)
    mag = np.asarray(mag)
    if mag.dtype != object:
        mag = mag.astype(np.int64)
    sign = np.asarray(sign, dtype=np.int64)
    exp = np.asarray(exp, dtype=np.int64)
    mag, sign, exp = np.broadcast_arrays(mag, sign, exp)
    man = fmt.man_bits
    n = bit_length(mag)
    top = exp + n - 1                                   # exponent of the leading one
    lsb = np.maximum(top, fmt.emin) - man               # exponent of the result's ulp
    shift = lsb - exp                                   # >0: bits to drop
    drop = np.maximum(shift, 0)
    if mag.dtype == object:
        q = _shr(mag, drop)
        rem = mag - _shl(q, drop)
        half = _shl(np.ones(mag.shape, dtype=object), np.maximum(drop - 1, 0))
        q_up = q + 1
        up_rne = (drop > 0) & ((rem > half) | ((rem == half) & ((q % 2) == 1)))
        q = np.where(shift < 0, _shl(mag, np.maximum(-shift, 0)), q)
        q = np.where(up_rne & (mode == "rne"), q_up, q)
        q = q.astype(np.int64)
    else:
        far = drop > 62                                 # everything is below half an ulp
        d = np.minimum(drop, 62)
        q = mag >> d
        rem = mag - (q << d)
        half = np.where(d > 0, np.int64(1) << np.maximum(d - 1, 0), 0)
        up_rne = (d > 0) & ((rem > half) | ((rem == half) & ((q & 1) == 1)))
        q = np.where(far, 0, q)
        up_rne &= ~far
        q = np.where(shift < 0, mag << np.maximum(-shift, 0), q)
        if mode == "rne":
            q = q + up_rne
    # rounding carried out of the significand: renormalise (exact, q == 2**(man+1))
    carry = q >> (man + 1) != 0
    q = np.where(carry, q >> 1, q)
    lsb = lsb + carry
    normal = q >= (np.int64(1) << man)
    e_field = np.where(normal, lsb + man + fmt.bias, 0)
    m_field = np.where(normal, q - (np.int64(1) << man), q)
    overflow = (e_field > fmt.max_exp_field) | (
        (e_field == fmt.max_exp_field) & (m_field > fmt.max_man_at_max_exp))
    enc = (e_field.astype(np.uint64) << np.uint64(man)) | m_field.astype(np.uint64)
    if mode == "rtz" or saturate:
        ovf_enc = fmt.max_finite
    else:
        ovf_enc = fmt.inf if fmt.ieee else fmt.nan
    enc = np.where(overflow, np.uint64(ovf_enc), enc)
    if ftz:
        enc = np.where((e_field == 0) & ~overflow, np.uint64(0), enc)
    sbit = sign.astype(np.uint64) << np.uint64(fmt.width - 1)
    out = enc | sbit
    if not fmt.ieee:      # NaN is unsigned-canonical in E4M3
        out = np.where(overflow & (ovf_enc == fmt.nan), np.uint64(fmt.nan), out)
    return out.astype(np.uint64)


# -- operations ---------------------------------------------------------------------------------
def _specials_out(fmt, out, is_nan, is_inf, inf_sign):
    out = np.where(is_inf, (inf_sign.astype(np.uint64) << np.uint64(fmt.width - 1))
                   | np.uint64(fmt.inf if fmt.ieee else fmt.nan), out)
    return np.where(is_nan, np.uint64(fmt.nan), out)


def fp_add(a, b, fmt, mode="rne", *, ftz=False):
    """Correctly rounded a + b (IEEE-754 semantics; E4M3 per OCP, non-saturating)."""
    fmt = get_format(fmt)
    _check_mode(mode)
    if ftz:
        a, b = daz(a, fmt), daz(b, fmt)
    dt = fmt.exact_dtype()
    sa, ma, ea, na, ia = decode(a, fmt, dt)
    sb, mb, eb, nb, ib = decode(b, fmt, dt)
    e0 = np.minimum(ea, eb)
    va = _shl(ma, ea - e0)
    vb = _shl(mb, eb - e0)
    va = np.where(sa == 1, -va, va)
    vb = np.where(sb == 1, -vb, vb)
    s = va + vb
    neg = s < 0
    mag = np.where(neg, -s, s)
    zero = mag == 0
    sign = np.where(zero, sa & sb, neg.astype(np.int64))
    out = round_exact(sign, mag, e0, fmt, mode, ftz=ftz)
    is_nan = na | nb | (ia & ib & (sa != sb))
    is_inf = (ia | ib) & ~is_nan
    inf_sign = np.where(ia, sa, sb)
    return _specials_out(fmt, out, is_nan, is_inf, inf_sign)


def fp_mul(a, b, fmt, mode="rne", *, ftz=False):
    """Correctly rounded a × b."""
    fmt = get_format(fmt)
    _check_mode(mode)
    if ftz:
        a, b = daz(a, fmt), daz(b, fmt)
    dt = np.int64 if 2 * fmt.precision < 62 else object
    sa, ma, ea, na, ia = decode(a, fmt, dt)
    sb, mb, eb, nb, ib = decode(b, fmt, dt)
    sign = sa ^ sb
    out = round_exact(sign, ma * mb, ea + eb, fmt, mode, ftz=ftz)
    za = (ma == 0) & ~(na | ia)
    zb = (mb == 0) & ~(nb | ib)
    is_nan = na | nb | (ia & zb) | (ib & za)
    is_inf = (ia | ib) & ~is_nan
    return _specials_out(fmt, out, is_nan, is_inf, sign)


def fp_convert(bits, src, dst, mode="rne", *, saturate=False, ftz=False):
    """Convert encodings from format ``src`` to ``dst`` (exact when dst is wider)."""
    src, dst = get_format(src), get_format(dst)
    _check_mode(mode)
    if ftz:
        bits = daz(bits, src)
    s, m, e, is_nan, is_inf = decode(bits, src)
    out = round_exact(s, m, e, dst, mode, saturate=saturate, ftz=ftz)
    if dst.ieee:
        inf_enc = (s.astype(np.uint64) << np.uint64(dst.width - 1)) | np.uint64(dst.inf)
    elif saturate:
        inf_enc = (s.astype(np.uint64) << np.uint64(dst.width - 1)) | np.uint64(dst.max_finite)
    else:
        inf_enc = np.full(s.shape, dst.nan, dtype=np.uint64)
    out = np.where(is_inf, inf_enc, out)
    return np.where(is_nan, np.uint64(dst.nan), out).astype(np.uint64)


def from_float(x, fmt, mode="rne", *, saturate=False, ftz=False):
    """Round float64 values (exact inputs) to ``fmt``."""
    bits = np.asarray(x, dtype=np.float64).view(np.uint64)
    return fp_convert(bits, FP64, fmt, mode, saturate=saturate, ftz=ftz)


def to_float(bits, fmt):
    """Exact float64 values of encodings (every supported format embeds in float64)."""
    return fp_convert(bits, fmt, FP64).astype(np.uint64).view(np.float64)


# -- scalar exact forms (for tests, error analysis and documentation) ---------------------------
def to_fraction(bits: int, fmt) -> Fraction | str:
    """Exact value of one encoding as a Fraction, or 'nan' / '+inf' / '-inf'."""
    fmt = get_format(fmt)
    s, m, e, n, i = decode(np.array([bits]), fmt)
    if n[0]:
        return "nan"
    if i[0]:
        return "-inf" if s[0] else "+inf"
    v = Fraction(int(m[0])) * Fraction(2) ** int(e[0])
    return -v if s[0] else v


def round_fraction(v: Fraction, fmt, mode="rne", *, sign_of_zero=0) -> int:
    """Round one exact Fraction with :func:`round_exact` (convenience wrapper)."""
    fmt = get_format(fmt)
    v = Fraction(v)
    sign = 1 if v < 0 or (v == 0 and sign_of_zero) else 0
    a = abs(v)
    num, den = a.numerator, a.denominator
    # a = num/den; represent exactly as mag * 2**exp when den is a power of two, otherwise
    # scale far enough that the truncated tail only acts as a sticky bit.
    if den & (den - 1) == 0:
        mag, exp = num, -(den.bit_length() - 1)
    else:
        k = fmt.precision + 4 + max(0, den.bit_length() - num.bit_length()) + \
            (fmt.bias + fmt.man_bits)
        q, r = divmod(num << k, den)
        mag, exp = (q << 1) | (1 if r else 0), -k - 1
    return int(round_exact(np.array([sign]), np.array([mag], dtype=object), np.array([exp]),
                           fmt, mode)[0])
