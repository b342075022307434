"""Golden models of the LUT Tensor Core family (Mo et al., ISCA'25; ../shared/papers/003_lut_tc.md).
numpy and :mod:`tcgen.hw.numeric` only -- no Amaranth -- so they can be used on their own.

Three layers, each checked against the one above it (tb/test_lut_model.py):

1. **exact** -- ``O = A · dequant(W)`` in float64 / int64 (:func:`dequantize`, :func:`exact_gemm`).
2. **algorithmic** -- the paper's method in exact arithmetic: weight reinterpretation
   {0,1} → {−1,+1} (Eq. 1–3, with the offline MSB flip for signed weights and the offset term
   −s′z′Σa), bit planes, offline index inversion (Eq. 6), the 2^(K−1)-entry symmetric table
   with the first activation's coefficient fixed at −1 (Eq. 4–5), lookup + conditional negate,
   Σ_j 2^j accumulation (:func:`reinterpret`, :func:`bit_planes`, :func:`encode_plane`,
   :func:`half_table`, :func:`lut_dot`, :func:`lut_gemm`).  Equal to layer 1 exactly for
   integer activations.
3. **bit-accurate** -- what the RTL computes: table precompute in the entry format (naive or
   Gray-code network, :func:`precompute`), INT8 table quantization with a scale granularity
   (:func:`quantize_tables`), and the bit-serial DP-4 (:func:`dp_bits`): entry → negate →
   plane scaling (INT: shift; FP: ×2^j, correct at ±0, subnormals and overflow) →
   accumulate in the accumulator format, LSB plane first, the partial sum injected at plane 0.

Conventions: a group is K activations a_0..a_{K−1}; a weight code is the unsigned b-bit field
q ∈ [0, 2^b) (signed weights: two's complement, ``signed=True``).  In a plane's K-bit code the
MSB belongs to a_0 (the paper's W3↔A, ..., W0↔D); the stored code is (sign, idx) with
sign = the a_0 bit and idx = the other K−1 bits XOR'd with it (Eq. 6), so the value is
(sign ? −1 : +1) · T[idx].  The released RTL's convention differs (sign = weight k=0; note
§1.4); docs/lut.md lists every deviation of the released RTL.
"""
from __future__ import annotations

import numpy as np

from tcgen.hw import numeric as num

__all__ = ["dequantize", "exact_gemm", "reinterpret", "reinterpret_scale", "bit_planes",
           "encode_plane", "decode_plane", "half_table", "full_table", "lookup", "lut_dot",
           "lut_gemm", "entry_bits", "precompute", "quantize_tables", "plane_scale", "rtl_scale",
           "dp_step", "dp_bits", "lut_array_model", "mac_dp", "mac_array_model",
           "quantize_table_pow2", "zero_one_table", "plane_code", "conv_array_model", "add_step",
           "add_array_model", "ACC_FORMATS", "ENTRY_FORMATS", "ACT_FORMATS"]

#: activation formats of the precompute (paper: FP16, FP8, INT8, INT16)
ACT_FORMATS = ("fp16", "fp8_e4m3", "int8", "int16")
#: table entry formats: the activation's own (exact for INT), or INT8 after table quantization
ENTRY_FORMATS = ("fp16", "fp8_e4m3", "fp32", "int8", "int10", "int11", "int16", "int18",
                 "int19")
#: accumulator formats (the paper does not say; the released RTL accumulates in FP16)
ACC_FORMATS = ("int24", "int32", "fp16", "fp32")


def _is_int(fmt: str) -> bool:
    return fmt.startswith("int")


def _int_width(fmt: str) -> int:
    return int(fmt[3:])


# -- layer 1: exact ---------------------------------------------------------------------------
def dequantize(q, s, z, bits: int, *, signed: bool = False) -> np.ndarray:
    """r = s · (q − z) (Eq. 1), float64; ``q`` the stored b-bit codes (two's complement when
    ``signed``)."""
    q = np.asarray(q, dtype=np.int64)
    if signed:
        q = np.where(q >= 1 << (bits - 1), q - (1 << bits), q)
    return np.asarray(s, dtype=np.float64) * (q - np.asarray(z, dtype=np.float64))


def exact_gemm(A, Wq, s, z, bits: int, *, signed: bool = False) -> np.ndarray:
    """O[m, n] = Σ_k A[m, k] · s[n] · (Wq[n, k] − z[n]) in float64 (A: [M, Kt] values, Wq:
    [N, Kt] codes, s and z per output column n or per (n, k))."""
    s = np.asarray(s, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    Wq = np.asarray(Wq)
    if s.ndim == 1:
        s = s[:, None]
    if z.ndim == 1:
        z = z[:, None]
    W = dequantize(Wq, s, z, bits, signed=signed)
    return np.asarray(A, dtype=np.float64) @ W.T


# -- layer 2: the paper's algorithm in exact arithmetic ------------------------------------------
def _unsigned(q, bits: int, signed: bool) -> np.ndarray:
    """The code the table method works on: unsigned as stored, or the MSB flipped offline
    (offset binary) for two's-complement weights."""
    q = np.asarray(q, dtype=np.int64) & ((1 << bits) - 1)
    return q ^ (1 << (bits - 1)) if signed else q


def reinterpret(q, bits: int, *, signed: bool = False) -> np.ndarray:
    """q′ = 2·q_u − (2^b − 1) (Eq. 2): odd integers in [−(2^b−1), 2^b−1].  Signed weights flip
    the MSB offline first, so q′ = 2q + 1."""
    return 2 * _unsigned(q, bits, signed) - ((1 << bits) - 1)


def reinterpret_scale(s, z, bits: int, *, signed: bool = False):
    """(s′, z′) of Eq. 2: s′ = s/2, z′ = 2·z_u + 1 − 2^b, with z_u = z (+ 2^(b−1) for signed
    weights), so that s·(q − z) = s′·(q′ − z′) exactly."""
    zu = np.asarray(z, dtype=np.float64) + ((1 << (bits - 1)) if signed else 0)
    return np.asarray(s, dtype=np.float64) / 2, 2 * zu + 1 - (1 << bits)


def bit_planes(q, bits: int, *, signed: bool = False) -> np.ndarray:
    """Planes q_j ∈ {0, 1} of the (MSB-flipped, if signed) code, LSB first: shape (bits, ...).
    q′ = Σ_j 2^j (2 q_j − 1), so each plane is a {−1, +1} vector."""
    qu = _unsigned(q, bits, signed)
    return np.stack([(qu >> j) & 1 for j in range(bits)])


def encode_plane(plane) -> tuple[np.ndarray, np.ndarray]:
    """Offline index inversion (Eq. 6) of one plane's K bits (last axis; bit i belongs to
    a_i): (sign, idx) with sign = the a_0 bit and idx = the bits of a_1..a_{K−1} (a_1 at the
    MSB) XOR'd with sign."""
    plane = np.asarray(plane, dtype=np.int64)
    K = plane.shape[-1]
    sign = plane[..., 0]
    idx = np.zeros(plane.shape[:-1], dtype=np.int64)
    for k in range(1, K):
        idx |= plane[..., k] << (K - 1 - k)
    return sign, idx ^ (sign * ((1 << (K - 1)) - 1))


def decode_plane(sign, idx, K: int) -> np.ndarray:
    """The inverse of :func:`encode_plane`: the K plane bits (last axis)."""
    sign = np.asarray(sign, dtype=np.int64)
    raw = np.asarray(idx, dtype=np.int64) ^ (sign * ((1 << (K - 1)) - 1))
    bits = [sign] + [(raw >> (K - 1 - k)) & 1 for k in range(1, K)]
    return np.stack(bits, axis=-1)


def half_table(a) -> np.ndarray:
    """The symmetric table (Eq. 5): T[idx] = −a_0 + Σ_{k≥1} (2·bit_k(idx) − 1)·a_k, with
    bit_k(idx) the bit of a_k (a_1 at the MSB): shape (..., 2^(K−1)), exact (float64/int64)."""
    a = np.asarray(a)
    K = a.shape[-1]
    idx = np.arange(1 << (K - 1))
    coef = np.stack([-np.ones_like(idx)] +
                    [2 * ((idx >> (K - 1 - k)) & 1) - 1 for k in range(1, K)], axis=-1)
    return np.einsum("...k,ik->...i", a, coef)


def full_table(a) -> np.ndarray:
    """The full 1-bit table T[W] = Σ_i (2·W_i − 1)·a_i over all 2^K codes W (a_0 at the MSB):
    what a conventional (unsymmetrized) LUT stores; T[~W] = −T[W] (Eq. 4)."""
    a = np.asarray(a)
    K = a.shape[-1]
    w = np.arange(1 << K)
    coef = np.stack([2 * ((w >> (K - 1 - i)) & 1) - 1 for i in range(K)], axis=-1)
    return np.einsum("...k,ik->...i", a, coef)


def zero_one_table(a) -> np.ndarray:
    """UNPU's table of {0, 1} weights: T[W] = Σ_{i: W_i = 1} a_i over all 2^K codes W (a_0 at
    the MSB, T[0] = 0), exact; with it Σ_j 2^j T[W_j] = Σ_i q_i·a_i (the unsigned codes)."""
    a = np.asarray(a)
    K = a.shape[-1]
    w = np.arange(1 << K)
    coef = np.stack([(w >> (K - 1 - i)) & 1 for i in range(K)], axis=-1)
    return np.einsum("...k,ik->...i", a, coef)


def plane_code(plane) -> np.ndarray:
    """One plane's K bits (last axis, bit i of a_i) as the raw code W = Σ_i bit_i·2^(K−1−i)
    (a_0 at the MSB): the index of :func:`full_table` / :func:`zero_one_table`, and what
    :func:`encode_plane` turns into (sign, idx) with sign = W's MSB."""
    plane = np.asarray(plane, dtype=np.int64)
    K = plane.shape[-1]
    return sum(plane[..., i] << (K - 1 - i) for i in range(K))


def lookup(table, sign, idx) -> np.ndarray:
    """(sign ? −1 : +1) · table[..., idx] (the half table's lookup + conditional negate)."""
    v = np.take_along_axis(np.asarray(table), np.asarray(idx)[..., None], axis=-1)[..., 0]
    return np.where(np.asarray(sign) == 1, -v, v)


def lut_dot(a, q, bits: int, *, signed: bool = False) -> np.ndarray:
    """Σ_i a_i · q′_i over one K-group (last axis) by the table method: for each plane j,
    ±T[idx_j] from the symmetric table, weighted 2^j (exact)."""
    T = half_table(a)
    planes = bit_planes(q, bits, signed=signed)
    out = 0
    for j in range(bits):
        sign, idx = encode_plane(planes[j])
        out = out + (1 << j) * lookup(T, sign, idx)
    return out


def lut_gemm(A, Wq, s, z, bits: int, *, K: int = 4, signed: bool = False) -> np.ndarray:
    """O = A · dequant(W) by the table method (layer 2): per K-group of A a symmetric table,
    per output column the planes of its codes, then s′·acc − s′·z′·Σa (the offset term; zero
    only on a symmetric grid z = (2^b − 1)/2).  ``s`` and ``z`` per output column."""
    A = np.asarray(A)
    Wq = np.asarray(Wq)
    M, Kt = A.shape
    if Kt % K:
        raise ValueError(f"lut_gemm: the reduction length {Kt} is not a multiple of K={K}")
    G = Kt // K
    Ag = A.reshape(M, G, K)
    Wg = Wq.reshape(Wq.shape[0], G, K)
    acc = np.zeros((M, Wq.shape[0]), dtype=np.result_type(A.dtype, np.int64))
    for g in range(G):
        acc = acc + lut_dot(Ag[:, None, g, :], Wg[None, :, g, :], bits, signed=signed)
    sp, zp = reinterpret_scale(s, z, bits, signed=signed)
    return sp[None, :] * acc - (sp * zp)[None, :] * A.sum(axis=1, dtype=np.float64)[:, None]


# -- layer 3: bit-accurate --------------------------------------------------------------------
def entry_bits(act_fmt: str, K: int) -> int:
    """Signed bits that hold every exact table entry of K activations of ``act_fmt`` (INT):
    |T| ≤ K·2^(w−1), and +K·2^(w−1) must fit, so w + ⌊log2 K⌋ + 1 (INT8, K = 4: 11 bits --
    an "INT8 table" of INT8 activations drops about 2 bits, note §1.6)."""
    return _int_width(act_fmt) + K.bit_length()


def _wrap(v, width: int) -> np.ndarray:
    """Two's-complement wrap to ``width`` bits (what a register of that width holds)."""
    v = np.asarray(v, dtype=np.int64)
    m = 1 << width
    return ((v + (m >> 1)) % m) - (m >> 1)


def precompute(a, act_fmt: str, *, network: str = "gray", entry_fmt: str | None = None,
               rounding: str = "rne", table: str = "half") -> np.ndarray:
    """The half table of K activations as the precompute hardware makes it (last axis = K).

    INT activations (``a``: integer values): exact entries (int64).  FP activations (``a``:
    encodings of ``act_fmt``): entries in ``entry_fmt`` (default the activation format), each
    add correctly rounded: ``network="naive"`` computes every entry on its own chain
    ((−a_0 ± a_1) ± a_2) ± ...; ``"gray"`` computes T[0] on a chain and then walks the indices
    in Gray-code order, T[next] = T[prev] ± 2·a_k (one add per entry; 2·a_k exact unless it
    overflows).  The two round differently; both are the model of their network.

    ``table="full"``: UNPU's {0, 1} table (:func:`zero_one_table`, 2^K entries): naive sums
    each entry's selected activations left to right (T[0] = +0, one-term entries exact); gray
    walks the codes in Gray-code order from T[0] = +0, T[next] = T[prev] ± a_k."""
    if network not in ("gray", "naive"):
        raise ValueError(f"precompute: network must be gray or naive, got {network!r}")
    if table not in ("half", "full"):
        raise ValueError(f"precompute: table must be half or full, got {table!r}")
    if _is_int(act_fmt):
        a = np.asarray(a, dtype=np.int64)
        return half_table(a) if table == "half" else zero_one_table(a)
    fmt = entry_fmt or act_fmt
    a = np.asarray(a, dtype=np.uint64)
    if fmt != act_fmt:
        a = num.fp_convert(a, act_fmt, fmt, rounding)
    K = a.shape[-1]
    F = num.get_format(fmt)
    neg = lambda x: x ^ np.uint64(F.sign_mask)             # noqa: E731  exact negation
    if table == "full":
        return _precompute_full(a, fmt, network, rounding, neg)
    n = 1 << (K - 1)
    out = np.zeros(a.shape[:-1] + (n,), dtype=np.uint64)

    def chain(i):
        t = neg(a[..., 0])
        for k in range(1, K):
            ak = a[..., k] if (i >> (K - 1 - k)) & 1 else neg(a[..., k])
            t = num.fp_add(t, ak, fmt, rounding)
        return t
    if network == "naive":
        for i in range(n):
            out[..., i] = chain(i)
        return out
    prev, t = 0, chain(0)
    out[..., 0] = t
    for r in range(1, n):
        g = r ^ (r >> 1)
        flip = g ^ prev                                      # one bit: a_k with k = K−1−bit
        k = K - 1 - (flip.bit_length() - 1)
        d = num.fp_scale_pow2(a[..., k], 1, fmt, rounding)
        t = num.fp_add(t, d if g & flip else neg(d), fmt, rounding)
        out[..., g] = t
        prev = g
    return out


def _precompute_full(a, fmt, network, rounding, neg):
    K = a.shape[-1]
    n = 1 << K
    out = np.zeros(a.shape[:-1] + (n,), dtype=np.uint64)           # T[0] = +0
    if network == "naive":
        for w in range(1, n):
            sel = [a[..., i] for i in range(K) if (w >> (K - 1 - i)) & 1]
            t = sel[0]
            for x in sel[1:]:
                t = num.fp_add(t, x, fmt, rounding)
            out[..., w] = t
        return out
    prev, t = 0, out[..., 0]
    for r in range(1, n):
        g = r ^ (r >> 1)
        flip = g ^ prev                                      # one bit: a_i with i = K−1−bit
        i = K - 1 - (flip.bit_length() - 1)
        t = num.fp_add(t, a[..., i] if g & flip else neg(a[..., i]), fmt, rounding)
        out[..., g] = t
        prev = g
    return out


def quantize_tables(T, granularity: str = "table", block: int = 1):
    """INT8 table quantization, symmetric ±127 (so negation never overflows): ``T`` float64
    entries (..., G, 2^(K−1)) with G tables along the reduction; the scale is max|T|/127 over
    each table (``"table"``), each ``block`` consecutive tables (``"block"``) or all G tables
    (``"row"``).  Returns (T_q int64 in [−127, 127], scale broadcastable to T_q); an all-zero
    granule has scale 0 and T_q = 0.  |T − scale·T_q| ≤ scale/2."""
    T = np.asarray(T, dtype=np.float64)
    G = T.shape[-2]
    if granularity == "table":
        m = np.abs(T).max(axis=-1, keepdims=True)
    elif granularity == "row":
        m = np.broadcast_to(np.abs(T).max(axis=(-1, -2), keepdims=True), T.shape[:-1] + (1,))
    elif granularity == "block":
        if block < 1:
            raise ValueError("quantize_tables: block must be >= 1")
        g = np.abs(T).max(axis=-1)
        pad = (-G) % block
        gp = np.concatenate([g, np.zeros(g.shape[:-1] + (pad,))], axis=-1) if pad else g
        bm = gp.reshape(g.shape[:-1] + (-1, block)).max(axis=-1)
        m = np.repeat(bm, block, axis=-1)[..., :G, None]
    else:
        raise ValueError(f"quantize_tables: granularity must be table, block or row, got "
                         f"{granularity!r}")
    scale = m / 127.0
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(scale > 0, np.rint(T / np.where(scale > 0, scale, 1.0)), 0.0)
    return np.clip(q, -127, 127).astype(np.int64), scale


def quantize_table_pow2(T, a):
    """INT8 quantization of one exact INT half table with a power-of-two scale (what
    ``lut_precompute quantize=int8`` does in hardware, no divider): m = Σ|a_i| (= max|T|),
    e = max(0, bitlen(m) − 7) (the smallest e with m < 2^(7+e)), T_q = clamp(RNE(T / 2^e),
    ±127).  Returns (T_q int64, e int64); |T − 2^e·T_q| ≤ 2^(e−1), except where T/2^e rounds
    to ±128 and is clamped (error < 2^e).  ``T`` (..., 2^(K−1)), ``a`` (..., K) integers."""
    T = np.asarray(T, dtype=np.int64)
    m = np.abs(np.asarray(a, dtype=np.int64)).sum(axis=-1)
    bl = np.zeros_like(m)
    for i in range(62):
        bl = np.where(m >> i > 0, i + 1, bl)
    e = np.maximum(0, bl - 7)
    q = np.rint(T / np.exp2(e)[..., None].astype(np.float64))     # RNE, exact: |T| < 2^53
    return np.clip(q, -127, 127).astype(np.int64), e


def plane_scale(e, j, fmt: str, rounding: str = "rne") -> np.ndarray:
    """e · 2^j in ``fmt``: an INT left shift (wrapping at the format's width), or for FP the
    correctly rounded product -- exact except that it overflows to ±Inf (±0 stays ±0, a
    subnormal is shifted, not mis-scaled)."""
    j = np.asarray(j, dtype=np.int64)
    if _is_int(fmt):
        return _wrap(np.asarray(e, dtype=np.int64) << j, _int_width(fmt))
    return num.fp_scale_pow2(e, j, fmt, rounding)


def rtl_scale(e, j, fmt: str) -> np.ndarray:
    """The released RTL's plane scaling (note §2.5): j added to the exponent *field*, modulo
    its width, sign and mantissa untouched -- ±0 becomes ±2^(j−bias), a subnormal is
    mis-scaled, and exp + j ≥ all-ones gives Inf/NaN or wraps.  Kept to measure it
    (``scale = rtl``) and to show where it differs (docs/lut.md)."""
    F = num.get_format(fmt)
    e = np.asarray(e, dtype=np.uint64)
    mb, emask = F.man_bits, (1 << F.exp_bits) - 1
    ef = (e >> np.uint64(mb)) & np.uint64(emask)
    ef = (ef + np.asarray(j).astype(np.uint64)) & np.uint64(emask)
    return (e & ~np.uint64(emask << mb)) | (ef << np.uint64(mb))


def dp_step(table, sign, idx, j, c, *, entry_fmt: str, acc_fmt: str, rounding: str = "rne",
            scale: str = "correct") -> np.ndarray:
    """One plane of the LUT DP-4 (what ``lut_dp4`` computes in one cycle):
    c + (sign ? −1 : +1) · T[idx] · 2^j.  INT: the entry sign-extended, shifted and negated in
    the accumulator's width (two's complement, wrapping).  FP: the entry widened (exactly) to
    the accumulator format, its sign flipped, scaled (``correct``: :func:`plane_scale`;
    ``rtl``: :func:`rtl_scale`), then one correctly rounded add."""
    table = np.asarray(table)
    idx = np.asarray(idx, dtype=np.int64)
    e = np.take_along_axis(table, np.broadcast_to(idx, table.shape[:-1])[..., None],
                           axis=-1)[..., 0]
    neg = np.asarray(sign, dtype=np.int64) == 1
    if _is_int(acc_fmt):
        if not _is_int(entry_fmt):
            raise ValueError("dp_step: an INT accumulator needs INT table entries")
        v = np.where(neg, -e.astype(np.int64), e.astype(np.int64))
        w = _int_width(acc_fmt)
        return _wrap(np.asarray(c, dtype=np.int64) + plane_scale(v, j, acc_fmt), w)
    if _is_int(entry_fmt):
        raise ValueError("dp_step: INT entries accumulate in an INT accumulator")
    F = num.get_format(acc_fmt)
    e = e.astype(np.uint64)
    if entry_fmt != acc_fmt:
        e = num.fp_convert(e, entry_fmt, acc_fmt, rounding)
    e = np.where(neg, e ^ np.uint64(F.sign_mask), e)
    e = plane_scale(e, j, acc_fmt, rounding) if scale == "correct" else rtl_scale(e, j, acc_fmt)
    return num.fp_add(np.asarray(c, dtype=np.uint64), e, acc_fmt, rounding)


def dp_bits(table, signs, idxs, c, *, entry_fmt: str, acc_fmt: str,
            rounding: str = "rne", scale: str = "correct") -> np.ndarray:
    """One LUT DP-4 result as the bit-serial unit computes it: :func:`dp_step` for planes
    j = 0..b−1 (LSB first; ``signs``/``idxs`` shape (b, ...)), the partial sum ``c``
    (accumulator values or encodings) injected at plane 0."""
    signs = np.asarray(signs, dtype=np.int64)
    idxs = np.asarray(idxs, dtype=np.int64)
    acc = np.asarray(c)
    for j in range(signs.shape[0]):
        acc = dp_step(table, signs[j], idxs[j], j, acc, entry_fmt=entry_fmt, acc_fmt=acc_fmt,
                      rounding=rounding, scale=scale)
    return acc


def lut_array_model(req: dict, *, m: int, n: int, k: int, w_bits: int, entry_fmt: str,
                    acc_fmt: str, rounding: str = "rne", scale: str = "correct") -> dict:
    """Transaction model of ``lut_array``.

    ``req``: lut [R, M, 2^(k−1)] table entries (INT values, or ``entry_fmt`` encodings), w
    [R, w_bits, N] plane codes (idx in the low k−1 bits, the sign at bit k−1), c [R, M, N]
    (accumulator values or encodings), chain [R], emit [R].  Returns {"d": [E, M, N]}, the D
    tile of every emitting request in order.  The accumulator starts at 0 (+0.0) after reset;
    ``chain`` adds onto it, otherwise onto C; every request updates it."""
    mask = (1 << (k - 1)) - 1

    def op(r, base):
        T = np.asarray(req["lut"][r])
        T = T.astype(np.int64) if _is_int(acc_fmt) else T.astype(np.uint64)
        codes = np.asarray(req["w"][r], dtype=np.int64)
        Tb = np.broadcast_to(T[:, None, :], (m, n, T.shape[-1]))
        for j in range(w_bits):
            base = dp_step(Tb, (codes[j] >> (k - 1))[None, :], (codes[j] & mask)[None, :], j,
                           base, entry_fmt=entry_fmt, acc_fmt=acc_fmt, rounding=rounding,
                           scale=scale)
        return base
    return _transactions(req, m, n, acc_fmt, op)


def _transactions(req: dict, m: int, n: int, acc_fmt: str, op) -> dict:
    """The accumulator rules both arrays share: acc starts at 0 (+0.0) after reset; request r
    computes op(r, base) with base = acc if chain[r] else C[r]; every request updates acc;
    emit[r] sends it out.  Returns {"d": [E, M, N]}."""
    dt = np.int64 if _is_int(acc_fmt) else np.uint64
    acc = np.zeros((m, n), dtype=dt)
    out = []
    for r in range(len(req["chain"])):
        base = acc if int(req["chain"][r]) else np.asarray(req["c"][r]).astype(dt)
        acc = np.asarray(op(r, base)).astype(dt)
        if int(req["emit"][r]):
            out.append(acc.copy())
    return {"d": np.array(out, dtype=dt) if out else np.zeros((0, m, n), dtype=dt)}

# -- the MAC baseline ---------------------------------------------------------------------------
def mac_dp(a, q, base, *, w_bits: int, act_fmt: str, acc_fmt: str,
           rounding: str = "rne", dequantized=None) -> np.ndarray:
    """One MAC-baseline output: base + Σ_k a_k · q′_k over the last axis (K), summed pairwise.
    INT: exact products and sum, wrapped to the accumulator.  FP: q′ dequantized to the activation
    format (rounded), both operands widened exactly to the accumulator format, products
    rounded there, the tree and the final add rounded there.  ``dequantized``: the weights
    already in the activation format (INT values or encodings), ``q`` unused."""
    a = np.asarray(a)
    qp = reinterpret(q, w_bits) if dequantized is None else np.asarray(dequantized)
    K = a.shape[-1]
    if _is_int(acc_fmt):
        s = num.pairwise_sum([a[..., i].astype(np.int64) * qp[..., i] for i in range(K)],
                             lambda x, y: x + y)
        return _wrap(np.asarray(base, dtype=np.int64) + s, _int_width(acc_fmt))
    wq = num.from_float(qp.astype(np.float64), act_fmt, rounding) if dequantized is None \
        else qp.astype(np.uint64)
    av = a.astype(np.uint64)
    if act_fmt != acc_fmt:
        wq = num.fp_convert(wq, act_fmt, acc_fmt, rounding)
        av = num.fp_convert(av, act_fmt, acc_fmt, rounding)
    av, wq = np.broadcast_arrays(av, wq)
    prods = [num.fp_mul(av[..., i], wq[..., i], acc_fmt, rounding) for i in range(K)]
    s = num.pairwise_sum(prods, lambda x, y: num.fp_add(x, y, acc_fmt, rounding))
    return num.fp_add(s, np.asarray(base, dtype=np.uint64), acc_fmt, rounding)


def mac_array_model(req: dict, *, m: int, n: int, k: int, w_bits: int, act_fmt: str,
                    acc_fmt: str, rounding: str = "rne", dequant: str = "array") -> dict:
    """Transaction model of ``mac_dp4_array``: a [R, M, K] (INT values or encodings), w
    [R, N, K] unsigned codes, c [R, M, N], chain [R], emit [R] -> {"d": [E, M, N]}; the same
    accumulator rules as :func:`lut_array_model`."""
    def op(r, base):
        a = np.asarray(req["a"][r])
        a = a.astype(np.int64) if _is_int(acc_fmt) else a.astype(np.uint64)
        q = np.asarray(req["w"][r], dtype=np.int64)
        if dequant == "array":
            return mac_dp(a[:, None, :], q[None, :, :], base, w_bits=w_bits, act_fmt=act_fmt,
                          acc_fmt=acc_fmt, rounding=rounding)
        return mac_dp(a[:, None, :], None, base, w_bits=w_bits, act_fmt=act_fmt,
                      acc_fmt=acc_fmt, rounding=rounding, dequantized=q[None, :, :])
    return _transactions(req, m, n, acc_fmt, op)


# -- the conventional-LUT and ADD baselines ------------------------------------------------------
def conv_array_model(req: dict, *, m: int, n: int, k: int, w_bits: int, act_fmt: str,
                     acc_fmt: str, rounding: str = "rne", variant: str = "unpu",
                     network: str = "gray", placement: str = "row") -> dict:
    """Transaction model of ``conv_lut_array``: a [R, M, K] activations (INT values or
    encodings), w [R, w_bits, N] plane codes (``unpu``/``reinterpret``: the raw code
    :func:`plane_code`; ``offline_inversion``: :func:`encode_plane`'s, sign at bit k−1), c, chain,
    emit as :func:`lut_array_model`.  Each row's table is :func:`precompute` of its activations
    (full for unpu, half otherwise; ``row`` and ``unit`` placements compute the same) or, with
    ``placement = "hoisted"``, read from lut [R, M, E] (E = 2^k for unpu, else 2^(k−1); INT
    values or encodings of the precompute's entry format; ``a`` and ``network`` unused); a
    plane step is :func:`dp_step` (unpu: no negation, the raw code indexes the full table;
    reinterpret: sign = the code's MSB, idx = the low bits XOR sign)."""
    if variant not in ("unpu", "reinterpret", "offline_inversion"):
        raise ValueError(f"conv_array_model: unknown variant {variant!r}")
    if placement not in ("row", "unit", "hoisted"):
        raise ValueError(f"conv_array_model: unknown placement {placement!r}")
    mask = (1 << (k - 1)) - 1
    entry = act_fmt if not _is_int(act_fmt) else f"int{entry_bits(act_fmt, k)}"
    dt = np.int64 if _is_int(act_fmt) else np.uint64

    def op(r, base):
        if placement == "hoisted":
            T = np.asarray(req["lut"][r]).astype(dt)
            if T.shape[-1] != 1 << (k if variant == "unpu" else k - 1):
                raise ValueError(f"conv_array_model: {T.shape[-1]} table entries for "
                                 f"variant {variant!r} at k = {k}")
        else:
            T = precompute(np.asarray(req["a"][r]).astype(dt), act_fmt, network=network,
                           rounding=rounding, table="full" if variant == "unpu" else "half")
        codes = np.asarray(req["w"][r], dtype=np.int64)
        Tb = np.broadcast_to(T[:, None, :], (m, n, T.shape[-1]))
        for j in range(w_bits):
            cj = codes[j][None, :]
            if variant == "unpu":
                sign, idx = np.zeros_like(cj), cj
            else:
                sign = cj >> (k - 1)
                idx = (cj & mask) ^ (sign * mask) if variant == "reinterpret" else cj & mask
            base = dp_step(Tb, sign, idx, j, base, entry_fmt=entry, acc_fmt=acc_fmt,
                           rounding=rounding)
        return base
    return _transactions(req, m, n, acc_fmt, op)


def add_step(a, code, j, c, *, act_fmt: str, acc_fmt: str, rounding: str = "rne"):
    """One plane of the ADD baseline: c + 2^j · Σ_k bit_k(code)·a_k (code: the raw plane code,
    a_0 at the MSB; last axis of ``a`` = K).  INT: exact, wrapped to the accumulator.  FP: each
    activation widened exactly to the accumulator format (+0 where its bit is 0), summed
    pairwise (each '+' rounded there), scaled ×2^j (correctly rounded) and added to c."""
    a = np.asarray(a)
    code = np.asarray(code, dtype=np.int64)
    K = a.shape[-1]
    bits = [(code >> (K - 1 - i)) & 1 for i in range(K)]
    if _is_int(acc_fmt):
        s = num.pairwise_sum([np.where(bits[i] == 1, a[..., i].astype(np.int64), 0)
                              for i in range(K)], lambda x, y: x + y)
        return _wrap(np.asarray(c, dtype=np.int64) + (s << np.int64(j)), _int_width(acc_fmt))
    av = a.astype(np.uint64)
    if act_fmt != acc_fmt:
        av = num.fp_convert(av, act_fmt, acc_fmt, rounding)
    terms = [np.where(bits[i] == 1, av[..., i], np.uint64(0)) for i in range(K)]
    s = num.pairwise_sum(terms, lambda x, y: num.fp_add(x, y, acc_fmt, rounding))
    return num.fp_add(np.asarray(c, dtype=np.uint64), num.fp_scale_pow2(s, j, acc_fmt, rounding),
                      acc_fmt, rounding)


def add_array_model(req: dict, *, m: int, n: int, k: int, w_bits: int, act_fmt: str,
                    acc_fmt: str, rounding: str = "rne") -> dict:
    """Transaction model of ``add_dp4_array``: a [R, M, K], w [R, w_bits, N] raw plane codes
    (:func:`plane_code`), c, chain, emit as :func:`lut_array_model`; D = base + Σ_j
    :func:`add_step` (LSB plane first)."""
    def op(r, base):
        a = np.asarray(req["a"][r])
        a = a.astype(np.int64) if _is_int(act_fmt) else a.astype(np.uint64)
        codes = np.asarray(req["w"][r], dtype=np.int64)
        for j in range(w_bits):
            base = add_step(a[:, None, :], codes[j][None, :], j, base, act_fmt=act_fmt,
                            acc_fmt=acc_fmt, rounding=rounding)
        return base
    return _transactions(req, m, n, acc_fmt, op)
