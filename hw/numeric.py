"""The numeric reference of tcgen (docs/architecture.md, "Numerics").

One place that knows how to round an *exact* value to any :class:`FloatFormat`.  Every golden
model calls it; none relies on numpy's float16 arithmetic (which goes through float32).

Exact values are carried as ``(-1)**sign * mag * 2**exp`` with integer ``mag`` and ``exp``
(:func:`round_exact`: ``mag`` an ``int64`` numpy array, or an ``object`` array of Python ints
when wider).  The operations themselves never need more than 64 bits: :func:`fp_add` aligns the
smaller operand with three guard bits and a sticky bit, which rounds exactly like the exact sum
(see its docstring), and a product of two significands has at most 48 bits.  They run on blocks
of int32/int64 numpy arrays (no per-element Python).

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
    "TF32",
    "get_format", "decode", "round_exact", "daz", "fp_add", "fp_mul", "fp_convert",
    "from_float", "to_float", "to_fraction", "round_fraction", "bit_length", "fp_scale_pow2",
    "pairwise_sum", "product_is_exact", "fp_product", "dot4", "fused_dot",
    "fused_window_bounds",
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
#: NVIDIA's TF32 (FP32's exponent, 10 fraction bits): a tensor-core operand format only (the
#: fused dot product's; docs/silicon.md), so not one of the arithmetic units' FORMATS
TF32 = FloatFormat(8, 10, name="tf32")
_OPERAND_ONLY = {"tf32": TF32}


def get_format(fmt) -> FloatFormat:
    if isinstance(fmt, FloatFormat):
        return fmt
    try:
        return FORMATS[fmt] if fmt in FORMATS else _OPERAND_ONLY[fmt]
    except (KeyError, TypeError):
        raise ValueError(f"unknown float format {fmt!r}; allowed: {', '.join(FORMATS)}") from None


def _check_mode(mode):
    if mode not in MODES:
        raise ValueError(f"rounding mode must be one of {', '.join(MODES)}, got {mode!r}")


# -- integer helpers ----------------------------------------------------------------------------
_bitlen_obj = np.frompyfunc(int.bit_length, 1, 1)


def bit_length(x):
    """Element-wise ``int.bit_length`` of a non-negative int64 or object array (negative -> 0)."""
    x = np.asarray(x)
    if x.dtype == object:
        return _bitlen_obj(x).astype(np.int64)
    shape = x.shape
    x = x.astype(np.int64).reshape(-1)
    # the exponent field of the nearest float64 (0.0 and negatives give <= 0): exact below 2**53;
    # above, the conversion may have rounded up to the next power of two, which one shift detects
    n = np.maximum((x.astype(np.float64).view(np.int64) >> 52) - 1022, 0)
    big = np.flatnonzero(n > 53)
    if big.size:
        nb = n[big]
        n[big] = nb - ((x[big] >> (nb - 1)) == 0)
    n = n.reshape(shape)
    return n[()] if n.ndim == 0 else n           # a numpy scalar for a scalar, as before


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


# -- the fast kernels ---------------------------------------------------------------------------
# fp_add, fp_mul, fp_convert and round_exact (int64 magnitudes below 2**53) work on blocks of
# _CHUNK elements so that the temporaries stay in cache, in int32 where everything provably fits
# (16-bit and narrower formats) and int64 otherwise: branch-free integer arithmetic with no
# per-element Python and no np.where over whole blocks.  Lanes whose result does not come out of
# the arithmetic (NaN/inf operands; for add/mul also zero results) are rare and patched by index.
_CHUNK = 1 << 15
_CONSTS: dict = {}


def _const(dtype, value, n):
    """A cached constant array of length n (np.maximum/np.minimum against a scalar are several
    times slower than against an array)."""
    arr = _CONSTS.get((dtype, value))
    if arr is None or arr.size < n:
        arr = _CONSTS[(dtype, value)] = np.full(max(n, _CHUNK), value, dtype)
        arr.flags.writeable = False
    return arr[:n]


class _K:
    """Constants of one (format, mode, working dtype) for the kernels."""

    def __init__(self, fmt, mode, wt, *, saturate=False, ftz=False):
        self.wt = wt
        self.ieee = fmt.ieee
        self.sshift = fmt.width - 1
        self.sign_mask = fmt.sign_mask
        self.absmask = fmt.sign_mask - 1
        self.msb = 31 if wt is np.int32 else 63
        self.up = self.msb + 1 - fmt.width          # moves the sign bit to the dtype's MSB
        self.man = fmt.man_bits
        self.p = fmt.precision
        self.bias = fmt.bias
        self.emin = fmt.emin
        self.min_normal = fmt.min_normal
        self.inf = fmt.inf if fmt.ieee else None
        self.nan = fmt.nan
        # magnitude encodings >= spec are NaN or inf
        self.spec = fmt.inf if fmt.ieee else fmt.nan
        self.rne = mode == "rne"
        self.ftz = ftz
        self.zero = fmt.min_normal if ftz else 1    # input magnitudes below this are zeros
        clamp = mode == "rtz" or saturate
        # a rounded magnitude encoding above max_finite overflows: clamp it to max_finite (RTZ,
        # saturate) or to max_finite + 1, which is +inf (IEEE) or the NaN (E4M3, sign dropped)
        self.ovf = fmt.max_finite if clamp else fmt.max_finite + 1
        self.nan_unsigned = not fmt.ieee and not clamp
        # right shifts are clipped to lim: every pre-shifted magnitude is below 2**lim (int32:
        # < 2**26, int64: < 2**54), so shifting by lim leaves 0 as any longer shift would
        self.lim = 30 if wt is np.int32 else 62


def _int_input(bits):
    """Encodings as an integer array (as decode() reads them: non-integers go through uint64)."""
    x = np.asarray(bits)
    if x.dtype.kind not in "ui":
        x = np.asarray(bits, dtype=np.uint64)
    return x


def _blocks(shape, inputs, kernel):
    """Run ``kernel`` on aligned flat blocks of ``inputs`` (broadcast to ``shape``) -> uint64."""
    flat = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
    n = flat[0].size if flat else 0
    out = np.empty(n, np.uint64)
    for i in range(0, n, _CHUNK):
        out[i:i + _CHUNK] = kernel(*(x[i:i + _CHUNK] for x in flat))
    return out.reshape(shape)


def _round_core(K, sbit, mag, ex, off, G, clip=False):
    """Encodings (dtype K.wt) of the exact values ±mag·2**(ex + off), rounded; ``sbit`` holds
    the sign bits in place.

    ``mag`` >= 0, below 2**24 (int32) or 2**53 (int64) so that its bit length can be read off
    a float conversion.  ``G`` is a fixed pre-shift (``mag << G`` must fit and no result may
    need ``mag`` shifted left by more than ``G - 1``; ``clip``: the right shift can exceed the
    dtype) and then lanes with ``mag == 0`` are garbage, for the caller to patch; or None: a
    per-element pre-shift, zeros handled.
    """
    man, n = K.man, mag.shape[0]
    if K.wt is np.int32:
        fb, fbias = mag.astype(np.float32).view(np.int32) >> 23, 127
    else:
        fb, fbias = mag.astype(np.float64).view(np.int64) >> 52, 1023
    # fb = bit_length(mag) - 1 + fbias (0 for mag == 0).  s - fbias = max(top, emin) - exp, where
    # top is the leading one's exponent: the result's ulp is 2**(exp + s - fbias - man)
    s = np.maximum(fb, (K.emin + fbias - off) - ex)
    E = ex + s + (off + K.bias - 1 - fbias)     # the result's exponent field - 1 (0: subnormal)
    if G is None:
        shift = s - (fbias + man)               # bits to drop (negative: zeros to append)
        M = mag << (np.clip(-shift, 0, man) + 1)
        dm1 = np.clip(shift, 0, K.lim)
        E *= mag != 0
    else:
        M = mag << G
        dm1 = s + (G - 1 - man - fbias)
        if clip:
            dm1 = np.minimum(dm1, _const(K.wt, K.lim, n))
    t = M >> dm1                                # the kept bits and the round bit
    q = t >> 1
    if K.rne:                                   # + round & (sticky | lsb)
        q = (t + ((q & 1) | ((t << dm1) != M))) >> 1
    # the hidden bit adds one to the field; a carry out of the significand (q == 2**(man+1))
    # and a subnormal rounding up to the smallest normal both land on the right encoding
    enc = (E << man) + q
    enc = np.minimum(enc, _const(K.wt, K.ovf, n))
    if K.ftz:
        enc *= enc >= K.min_normal
    if K.nan_unsigned:
        sbit = sbit * (enc != K.ovf)
    return enc | sbit


def _add_block(K, a, b):
    wt, man, n = K.wt, K.man, a.shape[0]
    one = _const(wt, 1, n)
    xa, xb = a.astype(wt), b.astype(wt)
    xab = xa ^ xb
    ka, kb = xa & K.absmask, xb & K.absmask     # magnitude encodings: ordered like |value|
    if K.ftz:
        ka *= ka >= K.min_normal
        kb *= kb >= K.min_normal
    sbit = (xa ^ (xab & ((ka - kb) >> K.msb))) & K.sign_mask    # the larger operand's sign
    neg = (xab << K.up) >> K.msb                # -1 where the signs differ (subtract), else 0
    kx, ky = np.maximum(ka, kb), np.minimum(ka, kb)
    ex, ey = np.maximum(kx >> man, one), np.maximum(ky >> man, one)
    # significands with 3 guard bits; the smaller one aligned with a sticky LSB (shifting by
    # more than p + 3 leaves just the sticky bit, as shifting by any larger amount would)
    X = (kx - ((ex - 1) << man)) << 3
    Y = (ky - ((ey - 1) << man)) << 3
    d = np.minimum(ex - ey, _const(wt, K.p + 3, n))
    Yt = Y >> d
    Y = Yt | ((Yt << d) != Y)
    S = X + ((Y ^ neg) - neg)                   # >= 0 since |x| >= |y|
    enc = _round_core(K, sbit, S, ex, -(K.bias + man + 3), man + 1)
    patch = S == 0
    patch |= kx >= K.spec
    idx = np.flatnonzero(patch)
    if idx.size:
        kxi = kx[idx]
        zero = xa[idx] & xb[idx] & K.sign_mask  # exact zero: -0 only for (-0) + (-0)
        if K.ieee:
            nan = (kxi > K.inf) | ((ky[idx] == K.inf) & (neg[idx] != 0))
            special = np.where(nan, K.nan, sbit[idx] | K.inf)
        else:
            special = K.nan
        enc[idx] = np.where(kxi >= K.spec, special, zero)
    return enc


def _mul_block(K, a, b):
    wt, man, n = K.wt, K.man, a.shape[0]
    one = _const(wt, 1, n)
    xa, xb = a.astype(wt), b.astype(wt)
    sbit = (xa ^ xb) & K.sign_mask
    ka, kb = xa & K.absmask, xb & K.absmask
    ea, eb = np.maximum(ka >> man, one), np.maximum(kb >> man, one)
    ma = ka - ((ea - 1) << man)
    mb = kb - ((eb - 1) << man)
    # a nonzero product has its leading one at or above the rounding point: G = 1
    enc = _round_core(K, sbit, ma * mb, ea + eb, -2 * (K.bias + man), 1, clip=True)
    kmin, kmax = np.minimum(ka, kb), np.maximum(ka, kb)
    patch = kmin < K.zero                       # a zero (or, with ftz, subnormal) operand
    patch |= kmax >= K.spec
    idx = np.flatnonzero(patch)
    if idx.size:
        kmaxi, si = kmax[idx], sbit[idx]
        if K.ieee:
            nan = (kmaxi > K.inf) | ((kmaxi == K.inf) & (kmin[idx] < K.zero))
            special = np.where(nan, K.nan, si | K.inf)
        else:
            special = K.nan
        enc[idx] = np.where(kmaxi >= K.spec, special, si)
    return enc


def _convert_block(K, src, dst, saturate, x):
    n = x.shape[0]
    x = x.astype(np.int64)
    sbit = ((x >> (src.width - 1)) & 1) << (dst.width - 1)
    k = x & (src.sign_mask - 1)
    e = np.maximum(k >> src.man_bits, _const(np.int64, 1, n))
    m = k - ((e - 1) << src.man_bits)
    if K.ftz:
        m *= k >= src.min_normal
    enc = _round_core(K, sbit, m, e, -(src.bias + src.man_bits), None)
    idx = np.flatnonzero(k >= (src.inf if src.ieee else src.nan))
    if idx.size:
        if dst.ieee:
            inf = sbit[idx] | dst.inf
        elif saturate:
            inf = sbit[idx] | dst.max_finite
        else:
            inf = dst.nan
        enc[idx] = np.where(k[idx] > src.inf, dst.nan, inf) if src.ieee else dst.nan
    return enc


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
    if mag.dtype != object and (mag.size == 0 or (
            mag.min() >= 0 and mag.max() < (1 << 53) and
            -(1 << 40) < exp.min() and exp.max() < (1 << 40))):
        K = _K(fmt, mode, np.int64, saturate=saturate, ftz=ftz)
        sh = fmt.width - 1
        return _blocks(mag.shape, (sign, mag, exp),
                       lambda s, m, e: _round_core(K, s << sh, m, e, 0, None).view(np.uint64))
    return _round_exact_ref(sign, mag, exp, fmt, mode, saturate=saturate, ftz=ftz)


def _round_exact_ref(sign, mag, exp, fmt, mode, *, saturate=False, ftz=False):
    """round_exact on broadcast int64 or object arrays, one whole-array pass (the original
    formulation; any magnitude, any exponent)."""
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


def _binary(kernel, a, b, fmt, mode, ftz):
    fmt = get_format(fmt)
    _check_mode(mode)
    a, b = _int_input(a), _int_input(b)
    K = _K(fmt, mode, np.int32 if fmt.width <= 16 else np.int64, ftz=ftz)
    return _blocks(np.broadcast_shapes(a.shape, b.shape), (a, b),
                   lambda x, y: kernel(K, x, y))


def fp_add(a, b, fmt, mode="rne", *, ftz=False):
    """Correctly rounded a + b (IEEE-754 semantics; E4M3 per OCP, non-saturating).

    The smaller operand is aligned to the larger with 3 guard bits and a sticky bit, which rounds
    exactly like the exact sum: a shifted-out tail only exists when the exponents differ by
    more than 3, and then at most one bit cancels, so the result's ulp is >= 4 units and a tail
    in (0, 2) units cannot reach a rounding boundary.  :func:`_fp_add_exact` is the exact-sum
    formulation (kept as the reference the tests compare against).
    """
    return _binary(_add_block, a, b, fmt, mode, ftz)


def _fp_add_exact(a, b, fmt, mode="rne", *, ftz=False):
    """a + b from the exact sum (Python ints for BF16/FP32: slow; the reference of fp_add)."""
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
    sign, mag, e0 = np.broadcast_arrays(sign, mag, e0)
    out = _round_exact_ref(sign, mag, e0, fmt, mode, ftz=ftz)
    is_nan = na | nb | (ia & ib & (sa != sb))
    is_inf = (ia | ib) & ~is_nan
    inf_sign = np.where(ia, sa, sb)
    return _specials_out(fmt, out, is_nan, is_inf, inf_sign)


def fp_mul(a, b, fmt, mode="rne", *, ftz=False):
    """Correctly rounded a × b."""
    return _binary(_mul_block, a, b, fmt, mode, ftz)


def fp_scale_pow2(bits, j, fmt, mode="rne"):
    """x · 2^j (j an integer of either sign, broadcast), correctly rounded in ``fmt``: exact
    except where it overflows (±inf under RNE, ±max under RTZ; E4M3: NaN / max) or, for j < 0,
    underflows into the subnormals with bits lost (rounded: x · 2^j is an exact real, so
    this is IEEE multiplication by 2^j); ±0, NaN and ±inf unchanged."""
    fmt = get_format(fmt)
    j = np.asarray(j, dtype=np.int64)
    sign, mag, exp, is_nan, is_inf = decode(bits, fmt)
    out = round_exact(sign, mag, exp + j, fmt, mode)
    return _specials_out(fmt, out, is_nan, is_inf, sign)


def product_is_exact(src, dst) -> bool:
    """Every product of two finite ``src`` values is exactly representable in ``dst``: the
    2p-bit significand product fits dst's precision, the smallest (subnormal²) product is at
    least dst's smallest normal and the largest is below 2^(dst.emax + 1)."""
    src, dst = get_format(src), get_format(dst)
    lo = 2 * (src.emin - src.man_bits)                  # log2 of the smallest product
    hi = 2 * (src.emax + 1)                             # every product < 2^hi
    return (2 * src.precision <= dst.precision and lo >= dst.emin and hi <= dst.emax + 1
            and src.ieee and dst.ieee)


def fp_product(a, b, fmt, dst):
    """The exact product of two ``fmt`` encodings as ``dst`` encodings (dst must hold every
    product exactly, e.g. FP16 × FP16 in FP32; checked): both widened exactly, multiplied in
    dst -- no rounding happens.  The model of tcgen.hw.fparith.FPProduct."""
    src, dst = get_format(fmt), get_format(dst)
    if not product_is_exact(src, dst):
        raise ValueError(f"fp_product: {dst.name} does not hold every {src.name} product "
                         f"exactly")
    return fp_mul(fp_convert(a, src, dst), fp_convert(b, src, dst), dst)


def dot4(a, b, c, fmt="fp16", acc="fp32", product="exact", mode="rne", *,
         skip_zero=False, split=None):
    """The DP-4 of tcgen.hw.dot: ``a``, ``b`` [..., 4] ``fmt`` encodings, ``c`` [...] ``acc``
    encodings -> ((p0 + p1) + (p2 + p3)) + c, every '+' rounded to ``acc``.  ``product``:
    "exact" (:func:`fp_product` into acc) or "rounded" (``fp_mul`` in fmt, widened exactly).
    ``skip_zero``: a lane whose a is ±0 contributes −0 instead of its product.

    ``split`` [...] (ints 0..3): the split DP-4's mode -- 0 one DP-4 onto c[..., 0]; 1 two DP-2s
    (p0 + p1) + c0, (p2 + p3) + c1; 2 or 3 four DP-1s pk + ck; ``c`` is then [..., 4] and the
    result [..., 4] (+0 beyond the mode's groups)."""
    src, accf = get_format(fmt), get_format(acc)
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    if np.broadcast_shapes(a.shape, b.shape)[-1:] != (4,):
        raise ValueError(f"dot4: a and b need a last axis of 4, got {a.shape}, {b.shape}")
    if product == "exact":
        p = fp_product(a, b, src, accf)
    elif product == "rounded":
        p = fp_mul(a, b, src, mode)
        if src != accf:
            p = fp_convert(p, src, accf)
    else:
        raise ValueError(f"dot4: product must be exact or rounded, got {product!r}")
    if skip_zero:
        mask = np.uint64((1 << (src.width - 1)) - 1)
        p = np.where((a & mask) == 0, np.uint64(1 << (accf.width - 1)), p)
    if split is not None:
        return _dot4_split(p, np.asarray(c, dtype=np.uint64), np.asarray(split), accf, mode)
    s = pairwise_sum([p[..., k] for k in range(4)], lambda x, y: fp_add(x, y, accf, mode))
    return fp_add(s, np.asarray(c, dtype=np.uint64), accf, mode)


def _dot4_split(p, c, split, accf, mode):
    """The split DP-4's four adders (tcgen.hw.dot, ``split``) on products ``p`` [..., 4]."""
    if c.shape[-1:] != (4,):
        raise ValueError(f"dot4: with split, c needs a last axis of 4, got {c.shape}")
    if np.any((split < 0) | (split > 3)):
        raise ValueError("dot4: split modes are 0..3")
    split = np.broadcast_to(split, p.shape[:-1])
    dp4, dp2, dp1 = split == 0, split == 1, split >= 2

    def add(x, y):
        return fp_add(x, y, accf, mode)
    P, C = [p[..., k] for k in range(4)], [c[..., k] for k in range(4)]
    s0 = add(P[0], np.where(dp1, C[0], P[1]))
    s1 = add(P[2], np.where(dp1, C[2], P[3]))
    t = add(np.where(dp1, P[1], s0), np.where(dp4, s1, np.where(dp2, C[0], C[1])))
    u = add(np.where(dp4, t, np.where(dp2, s1, P[3])),
            np.where(dp4, C[0], np.where(dp2, C[1], C[3])))
    zero = np.zeros_like(u)
    return np.stack([np.where(dp4, u, np.where(dp2, t, s0)),
                     np.where(dp4, zero, np.where(dp2, u, t)),
                     np.where(dp1, s1, zero), np.where(dp1, u, zero)], axis=-1)


def pairwise_sum(terms, add):
    """Pairwise sum, level by level: ((t0 + t1) + (t2 + t3)) ...; an odd last term is carried
    to the next level -- the order of tcgen.hw.fparith.add_tree (``add`` is the '+', e.g.
    ``lambda x, y: fp_add(x, y, fmt, mode)``)."""
    terms = list(terms)
    if not terms:
        raise ValueError("pairwise_sum: no terms")
    while len(terms) > 1:
        nxt = [add(terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    return terms[0]


def fp_convert(bits, src, dst, mode="rne", *, saturate=False, ftz=False):
    """Convert encodings from format ``src`` to ``dst`` (exact when dst is wider)."""
    src, dst = get_format(src), get_format(dst)
    _check_mode(mode)
    x = _int_input(bits)
    K = _K(dst, mode, np.int64, saturate=saturate, ftz=ftz)
    return _blocks(x.shape, (x,),
                   lambda v: _convert_block(K, src, dst, saturate, v).view(np.uint64))


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


# -- the fused N-term dot product (tcgen.hw.fused) ---------------------------------------------
def fused_window_bounds(fmt, acc, fmt_b=None) -> tuple[int, int]:
    """``(smallest, exact)`` alignment window of :func:`fused_dot` for ``fmt`` operands (``b``
    in ``fmt_b`` if given) and an ``acc`` addend C.  The window holds the bits of weight
    2^(E+1) down to 2^(E+2-window).  ``smallest``: every product (p_a + p_b bits, leading bit
    at most at E+1) and C (leading bit at most at E) enters the window without a right shift
    when its exponent is E.  ``exact``: no addend of any tile ever loses a bit (the lowest bit
    any addend has against the highest E another one can set), so the fused result is one
    rounding of the exact sum.  fp16 × fp16 + fp32: (25, 181); fp16 × fp16 + fp16: (22, 80)."""
    fa, accf = get_format(fmt), get_format(acc)
    fb = fa if fmt_b is None else get_format(fmt_b)
    p_top = fa.emax + fb.emax                                          # products
    p_lsb = (fa.emin - fa.man_bits) + (fb.emin - fb.man_bits)
    c_top, c_lsb = accf.emax, accf.emin - accf.man_bits              # C
    # two products, a product and C, C and a product (C alone spans only its own bits)
    span = max(p_top - p_lsb, p_top - c_lsb, c_top - p_lsb, accf.man_bits)
    return max(fa.precision + fb.precision, accf.precision + 1), span + 2


def _narrow(fmt: FloatFormat, man: int) -> FloatFormat:
    if not 1 <= man <= fmt.man_bits:
        raise ValueError(f"fused_dot: acc_man must be in 1..{fmt.man_bits} for "
                         f"{fmt.label}, got {man}")
    return FloatFormat(fmt.exp_bits, man, name=f"{fmt.name or fmt.label}_m{man}")


def _fused_dot_narrow(a, b, c, fmt, acc, out, window, mode, zero, overflow, acc_man,
                      fmt_b=None):
    """fused_dot with an accumulator of ``acc_man`` fraction bits (see its docstring)."""
    accf, outf = get_format(acc), get_format(out)
    acc_n, out_n = _narrow(accf, acc_man), _narrow(outf, acc_man)
    c = np.asarray(c, dtype=np.uint64)
    ca = (c >> np.uint64(accf.man_bits)) & np.uint64(accf.exp_all_ones)
    cm = c & np.uint64(accf.man_mask)
    cnan = (ca == accf.exp_all_ones) & (cm != 0)
    cs = (c >> np.uint64(accf.width - 1)) << np.uint64(acc_n.width - 1)
    cn = np.where(cnan, np.uint64(acc_n.sign_mask - 1), cs | (c & np.uint64(accf.sign_mask - 1))
                  >> np.uint64(accf.man_bits - acc_man))
    r = fused_dot(a, b, cn, fmt, acc_n, out_n, window, mode, zero=zero, overflow=overflow,
                  fmt_b=fmt_b)
    re = (r >> np.uint64(out_n.man_bits)) & np.uint64(out_n.exp_all_ones)
    rnan = (re == out_n.exp_all_ones) & ((r & np.uint64(out_n.man_mask)) != 0)
    rs = (r >> np.uint64(out_n.width - 1)) << np.uint64(outf.width - 1)
    wide = rs | ((r & np.uint64(out_n.sign_mask - 1)) << np.uint64(outf.man_bits - acc_man))
    return np.where(rnan, np.uint64(outf.sign_mask - 1), wide).astype(np.uint64)


def _shift_by(mag, k):
    """mag · 2^k, truncated toward zero, element-wise (k of any sign; int64 or object)."""
    if mag.dtype == object:
        return np.frompyfunc(lambda x, s: x << int(s) if s >= 0 else x >> int(-s), 2, 1)(mag, k)
    return np.where(k >= 0, mag << np.clip(k, 0, 62), mag >> np.clip(-k, 0, 63))


FUSED_ZERO = ("pos", "sign")
FUSED_OVERFLOW = ("inf", "mode")


def fused_dot(a, b, c, fmt="fp16", acc="fp32", out="fp32", window=27, mode="auto", *,
              zero="pos", overflow="inf", acc_man=None, fmt_b=None):
    """The fused N-term dot product of tcgen.hw.fused (NVIDIA Hopper's tensor-core numerics
    with the defaults: ``fused16_sm90``, docs/fused.md).  ``a``, ``b`` [..., n] ``fmt``
    encodings, ``c`` [...] ``acc`` encodings -> [...] ``out`` encodings (uint64):

    1. any NaN, inf × 0, or +inf and −inf both among the products and C: the NaN with every
       bit but the sign set (FP32 0x7FFFFFFF, FP16 0x7FFF); otherwise an infinite product or
       C gives ±inf;
    2. products exact, each with exponent ea + eb read from the fields (a subnormal's field
       exponent is emin, its significand 0.f is not renormalised); C's exponent from its
       field (FP32 subnormal: −126);
    3. E = the largest exponent of the nonzero products and of C if nonzero;
    4. every addend's magnitude truncated to a multiple of 2^(E+2−window) (window 27: the bits
       2^(E+1) .. 2^(E−25)), its sign applied, the lot summed exactly;
    5. the sum rounded once to ``out`` in ``mode`` (subnormals kept; RTZ overflow gives ±max,
       RNE ±inf);
    6. every zero result is +0: an exact zero sum, and (``zero="pos"``, measured on an H200,
       docs/silicon.md) a nonzero sum that rounds to zero.  ``zero="sign"`` keeps the sign of
       a nonzero sum rounded to zero (IEEE's rule; tcgen's model before the measurement);
    7. (``overflow="inf"``, measured) a rounded magnitude at or above 2^(emax+1) gives ±inf in
       every mode; ``overflow="mode"`` follows the rounding mode (RTZ: ±max finite).

    ``mode``: ``"auto"`` (Hopper's: toward zero to FP32, to nearest-even to any narrower
    ``out``), ``"rtz"`` or ``"rne"``.  ``window`` must lie in :func:`fused_window_bounds`; at
    its upper bound (and ``mode`` rne) the result is the correctly rounded exact dot product.

    ``acc_man`` (Hopper's FP8 path, measured: 13 with FP32 C and result): the accumulator keeps
    only this many fraction bits.  A finite C enters truncated toward zero to them, and the
    result is rounded (``mode``) to them, then written in ``out`` with the low bits zero;
    specials keep ``out``'s encodings.  The window bounds are those of C at ``acc_man``.

    ``fmt_b``: ``b``'s format when it differs from ``a``'s (Hopper's mixed FP8 wgmma); the
    products are exact in p_a + p_b bits."""
    if acc_man is not None:
        return _fused_dot_narrow(a, b, c, fmt, acc, out, window, mode, zero, overflow,
                                 int(acc_man), fmt_b)
    src, accf, outf = get_format(fmt), get_format(acc), get_format(out)
    srcb = src if fmt_b is None else get_format(fmt_b)
    if mode == "auto":
        mode = "rtz" if outf.width >= 32 else "rne"
    _check_mode(mode)
    if zero not in FUSED_ZERO or overflow not in FUSED_OVERFLOW:
        raise ValueError(f"fused_dot: zero must be one of {FUSED_ZERO} and overflow one of "
                         f"{FUSED_OVERFLOW}, got {zero!r}, {overflow!r}")
    if not outf.ieee:
        raise ValueError(f"fused_dot: out must be an IEEE format with infinities, got "
                         f"{outf.label}")
    lo, hi = fused_window_bounds(src, accf, srcb)
    if not lo <= int(window) <= hi:
        raise ValueError(f"fused_dot: window must be in {lo}..{hi} for {src.label} operands "
                         f"and {accf.label} C, got {window}")
    window = int(window)
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    ab = np.broadcast_shapes(a.shape, b.shape)
    if not ab:
        raise ValueError("fused_dot: a and b need a last (product) axis")
    n = ab[-1]
    c = np.asarray(c, dtype=np.uint64)
    batch = np.broadcast_shapes(ab[:-1], c.shape)
    a, b = np.broadcast_to(a, batch + (n,)), np.broadcast_to(b, batch + (n,))
    c = np.broadcast_to(c, batch)
    sa, ma, xa, na, ia = decode(a, src)
    sb, mb, xb, nb, ib = decode(b, srcb)
    sc, mc, xc, nc, ic = decode(c, accf)
    # 1. specials
    a_zero, b_zero = (ma == 0) & ~na & ~ia, (mb == 0) & ~nb & ~ib
    ps = sa ^ sb
    p_inf = ia | ib
    pos_inf = np.any(p_inf & (ps == 0), axis=-1) | (ic & (sc == 0))
    neg_inf = np.any(p_inf & (ps == 1), axis=-1) | (ic & (sc == 1))
    nan = np.any(na | nb | (ia & b_zero) | (ib & a_zero), axis=-1) | nc | (pos_inf & neg_inf)
    inf = (pos_inf | neg_inf) & ~nan
    # 2. exact products and field exponents (decode's exp is the field exponent - man_bits)
    prod = ma * mb                                       # < 2^(2p); 0 for zero/special lanes
    pe = xa + xb + src.man_bits + srcb.man_bits
    ec = xc + accf.man_bits
    # 3. the one alignment exponent
    low = np.int64(-(1 << 20))
    E = np.maximum(np.where(prod != 0, pe, low).max(axis=-1, initial=low),
                   np.where(mc != 0, ec, low))
    E = np.where(E == low, 0, E)                          # no nonzero addend: the sum is 0
    # 4. truncate every magnitude to the window's LSB 2^(E+2-window), sum exactly
    wide = window + max(n, 1).bit_length() + 1 > 62
    dt = object if wide else np.int64
    vp = _shift_by(_as_mag(prod, dt),
                   window - src.precision - srcb.precision - (E[..., None] - pe))
    vc = _shift_by(_as_mag(mc, dt), window - 2 - accf.man_bits - (E - ec))
    total = np.where(ps == 1, -vp, vp).sum(axis=-1) + np.where(sc == 1, -vc, vc)
    # 5./6. one rounding; zero -> +0
    neg = total < 0
    mag = np.where(neg, -total, total)
    res = round_exact(neg.astype(np.int64), mag, E + 2 - window, outf, mode)
    sign_bit = np.uint64(outf.sign_mask)
    if zero == "pos":
        res = np.where((res & ~sign_bit) == 0, np.uint64(0), res)
    if overflow == "inf":
        # |sum| >= 2^(emax+1): the value's top bit lies above the format's largest binade
        big = bit_length(mag) + (E + 2 - window) - 1 > outf.emax
        res = np.where(big & (mag != 0), (res & sign_bit) | np.uint64(outf.inf), res)
    res = np.where(inf, (neg_inf.astype(np.uint64) << np.uint64(outf.width - 1))
                   | np.uint64(outf.inf), res)
    return np.where(nan, np.uint64(outf.sign_mask - 1), res).astype(np.uint64)
