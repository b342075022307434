"""Bit-exact golden models of the BMMA family (paper 000, BTC-BNN; notes ../shared/papers/000).

Depends on numpy only.  Everything here is what the hardware (or the paper's GPU kernels, for
the layer-level functions) returns, bit for bit; the ``*_reference`` functions are the exact
float64 computations on ±1 data that the bit-level results are checked against.

Conventions (notes §1):

* **Encoding** (Eq. 1): ``bit = 1`` encodes +1, ``bit = 0`` encodes −1; ``sign(0) = +1``.
* **Bit order** (§1.4, [C]): element k of a bit row goes to 32-bit word ``k >> 5``, bit
  ``31 − (k & 31)`` (MSB-first, the code's ``__brev(__ballot())``); ``order="lsb"`` is the other
  choice (bit ``k & 31``).  Words are little-endian in memory and in wide hardware ports
  (word w at bits ``[32w, 32w + 32)``).
* **Padding** (§1.3): pad bits are 0 in both operands (−1 ⊕ −1 adds nothing to the XOR popcount)
  and the ±1 fix-up uses the true K.  Listing 3 of the paper uses the padded width; that mode is
  kept as ``fixup(..., k_used=padded)`` only to measure the error it makes.
* **Accumulators** are two's complement of ``acc_width`` bits and wrap (PTX has no .satfinite for
  b1; notes §1.1 [D]).  Integer sums are exact, so summation order does not change any result.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    # encoding and packing
    "binarize", "to_pm1", "pack_bits", "unpack_bits", "pack_rows", "unpack_rows",
    "pack_cols", "unpack_cols", "pack_fsb", "unpack_fsb", "pack_fsb_conv", "unpack_fsb_conv",
    # bmma
    "wrap", "bmma", "bmm_tiled", "fixup", "dot_pm1_reference",
    # convolution
    "btc_padding", "conv_out_size", "exclude_counts", "bconv", "conv_pm1_reference",
    # epilogue
    "bn_threshold", "bn_sign_reference", "epilogue_v", "threshold", "or_pool", "max_pool",
    "pack_channels", "residual_maxpool2x2", "last_layer_affine",
    # hardware transaction models
    "array_request", "array_result", "bmma_array_model", "int8_request", "int8_mac_model",
    "epilogue_request", "epilogue_result", "bnn_epilogue_model",
]


# =============================================================================================
# Encoding and packing (notes §1.2, §1.4, §1.5)
# =============================================================================================
def binarize(x) -> np.ndarray:
    """Eq. 1: bit = 1 (+1) if x >= 0 else 0 (−1)."""
    return (np.asarray(x) >= 0).astype(np.uint8)


def to_pm1(bits) -> np.ndarray:
    """Bits -> ±1 as float64 (1 -> +1, 0 -> −1)."""
    return np.asarray(bits, dtype=np.float64) * 2.0 - 1.0


def _check_order(order):
    if order not in ("msb", "lsb"):
        raise ValueError(f"bmma: order must be one of msb, lsb, got {order!r}")


def pack_bits(bits, order: str = "msb") -> np.ndarray:
    """Pack the last axis (K bits) into ``ceil(K/32)`` uint32 words; pad bits are 0.

    ``msb``: element k -> word k >> 5, bit 31 − (k & 31); ``lsb``: bit k & 31.
    """
    _check_order(order)
    bits = np.asarray(bits, dtype=np.uint64)
    if bits.size and bits.max() > 1:
        raise ValueError("bmma: bits must be 0 or 1")
    k = bits.shape[-1]
    nw = -(-k // 32)
    padded = np.zeros(bits.shape[:-1] + (nw * 32,), dtype=np.uint64)
    padded[..., :k] = bits
    lanes = padded.reshape(bits.shape[:-1] + (nw, 32))
    shift = (31 - np.arange(32, dtype=np.uint64)) if order == "msb" \
        else np.arange(32, dtype=np.uint64)
    return (lanes << shift).sum(-1).astype(np.uint32)


def unpack_bits(words, k: int, order: str = "msb") -> np.ndarray:
    """Inverse of :func:`pack_bits`: (..., W) uint32 words -> (..., k) bits (uint8)."""
    _check_order(order)
    words = np.asarray(words, dtype=np.uint64)
    shift = (31 - np.arange(32, dtype=np.uint64)) if order == "msb" \
        else np.arange(32, dtype=np.uint64)
    bits = (words[..., None] >> shift) & np.uint64(1)
    bits = bits.reshape(words.shape[:-1] + (words.shape[-1] * 32,))
    return bits[..., :k].astype(np.uint8)


def _ldm_words(k: int, ldm: int | None) -> int:
    ldm = ldm if ldm is not None else -(-k // 128) * 128
    if ldm % 32 or ldm < k:
        raise ValueError(f"bmma: ldm must be a multiple of 32 bits and at least K={k}, "
                         f"got {ldm!r}")
    return ldm // 32


def pack_rows(x_bits, ldm: int | None = None, order: str = "msb") -> np.ndarray:
    """Row-major (M, K) bits -> flat uint32 memory, rows ``ldm`` bits apart (default ceil128(K))."""
    x_bits = np.asarray(x_bits)
    m, k = x_bits.shape
    lw = _ldm_words(k, ldm)
    out = np.zeros((m, lw), dtype=np.uint32)
    words = pack_bits(x_bits, order)
    out[:, :words.shape[1]] = words
    return out.reshape(-1)


def unpack_rows(mem, m: int, k: int, ldm: int | None = None, order: str = "msb"):
    lw = _ldm_words(k, ldm)
    return unpack_bits(np.asarray(mem, dtype=np.uint32).reshape(m, lw), k, order)


def pack_cols(y_bits, ldm: int | None = None, order: str = "msb") -> np.ndarray:
    """Column-major (K, N) bits (each column's K bits contiguous) -> flat uint32 memory."""
    return pack_rows(np.asarray(y_bits).T, ldm, order)


def unpack_cols(mem, k: int, n: int, ldm: int | None = None, order: str = "msb"):
    return unpack_rows(mem, n, k, ldm, order).T


def pack_fsb(x_bits, order: str = "msb") -> np.ndarray:
    """FSB layout (§1.5) of a K-contiguous operand: row-major A (M, K), or B given as its
    transpose (N, K).  Tiles of 8 rows × 128 bits, row-major inside and between tiles:
    ``word = ((i div 8)·T_k + k div 128)·32 + (i mod 8)·4 + (k mod 128) div 32``; pad bits 0.
    """
    x_bits = np.asarray(x_bits)
    m, k = x_bits.shape
    mp, kp = -(-m // 8) * 8, -(-k // 128) * 128
    pad = np.zeros((mp, kp), dtype=np.uint8)
    pad[:m, :k] = x_bits
    words = pack_bits(pad, order)                       # (mp, kp/32)
    tiles = words.reshape(mp // 8, 8, kp // 128, 4)     # (tile row, row, tile k, word)
    return tiles.transpose(0, 2, 1, 3).reshape(-1)


def unpack_fsb(mem, m: int, k: int, order: str = "msb") -> np.ndarray:
    mp, kp = -(-m // 8) * 8, -(-k // 128) * 128
    tiles = np.asarray(mem, dtype=np.uint32).reshape(mp // 8, kp // 128, 8, 4)
    words = tiles.transpose(0, 2, 1, 3).reshape(mp, kp // 32)
    return unpack_bits(words, kp, order)[:m, :k]


def pack_fsb_conv(x_bits, order: str = "msb") -> np.ndarray:
    """Conv FSB (§1.5 [C]): an (H, W, N, C) bit tensor (input HWNC, or a filter as (R, S, O, C))
    as one FSB (N, C) plane per pixel, pixels in row-major order:
    ``((y·W + x)·(N_pad/8)·(C_pad/128) + (n div 8)·(C_pad/128) + c div 128)·32 + (n mod 8)·4 +
    (c mod 128) div 32``."""
    x_bits = np.asarray(x_bits)
    h, w, n, c = x_bits.shape
    return np.concatenate([pack_fsb(x_bits[y, x], order) for y in range(h) for x in range(w)])


def unpack_fsb_conv(mem, h: int, w: int, n: int, c: int, order: str = "msb"):
    per = (-(-n // 8) * 8) * (-(-c // 128) * 128) // 32
    mem = np.asarray(mem, dtype=np.uint32).reshape(h * w, per)
    return np.stack([unpack_fsb(mem[i], n, c, order) for i in range(h * w)]).reshape(h, w, n, c)


# =============================================================================================
# bmma (notes §1.1, §1.2)
# =============================================================================================
def wrap(x, width: int = 32) -> np.ndarray:
    """Two's complement wrap of integers to ``width`` bits (int64 result)."""
    x = np.asarray(x, dtype=object) if width > 62 else np.asarray(x, dtype=np.int64)
    m = 1 << width
    return ((x + (m >> 1)) % m - (m >> 1)).astype(np.int64)


def bmma(a_bits, b_bits, c, op: str = "xor", acc_width: int = 32):
    """``D = C + popc(A op B)`` for bit tiles A (M, K) row-major and B (K, N), op xor | and.

    Returns (d, overflow): d wraps to ``acc_width`` bits; overflow flags the elements where the
    exact sum did not fit (notes §1.1: the ISA does not say; we wrap and flag).
    """
    a = np.asarray(a_bits, dtype=np.int64)
    b = np.asarray(b_bits, dtype=np.int64)
    if op == "xor":
        prod = a[:, None, :] ^ b.T[None, :, :]
    elif op == "and":
        prod = a[:, None, :] & b.T[None, :, :]
    else:
        raise ValueError(f"bmma: op must be one of xor, and, got {op!r}")
    exact = np.asarray(c, dtype=np.int64) + prod.sum(-1)
    d = wrap(exact, acc_width)
    return d, d != exact


def bmm_tiled(a_bits, b_bits, op: str = "xor", tile_k: int = 128, acc_width: int = 32):
    """Output-stationary tiled BMM (notes §4.2): pad K to a multiple of ``tile_k`` with 0 bits
    and chain ``bmma`` over the k-tiles into one accumulator.  Returns the popcount sums."""
    a = np.asarray(a_bits)
    b = np.asarray(b_bits)
    m, k = a.shape
    kp = -(-k // tile_k) * tile_k
    ap = np.zeros((m, kp), np.uint8)
    ap[:, :k] = a
    bp = np.zeros((kp, b.shape[1]), np.uint8)
    bp[:k] = b
    acc = np.zeros((m, b.shape[1]), np.int64)
    for t in range(kp // tile_k):
        acc, _ = bmma(ap[:, t * tile_k:(t + 1) * tile_k], bp[t * tile_k:(t + 1) * tile_k], acc,
                      op, acc_width)
    return acc


def fixup(popc, k_used):
    """Eq. 2: the ±1 dot product ``v = K − 2·popc(a XOR b)``.  Use the true K (notes §1.3);
    Listing 3 passes the padded width, which is wrong by K_pad − K_true."""
    return np.asarray(k_used, dtype=np.int64) - 2 * np.asarray(popc, dtype=np.int64)


def dot_pm1_reference(a_bits, b_bits) -> np.ndarray:
    """Float64 ±1 matrix product (the reference the fix-up is checked against)."""
    return to_pm1(a_bits) @ to_pm1(b_bits)


# =============================================================================================
# Bit convolution (notes §1.6)
# =============================================================================================
def btc_padding(h: int, r: int, stride: int) -> tuple[int, int]:
    """The released code's "padding=true" rule: (pad, out) with
    ``pad = (((H + s − H % s)/s − 1)·s + R − H)/2`` and ``out = ceil(H/s)``."""
    pad = (((h + stride - h % stride) // stride - 1) * stride + r - h) // 2
    return pad, -(-h // stride)


def conv_out_size(h: int, r: int, stride: int, pad: int) -> int:
    """Output size of a cross-correlation with zero padding ``pad`` on both sides."""
    return (h + 2 * pad - r) // stride + 1


def exclude_counts(h: int, w: int, r: int, s: int, stride: int = 1, pad: int | None = None,
                   out: tuple[int, int] | None = None) -> np.ndarray:
    """Per output pixel (p, q): the number of filter taps that fall outside the input frame
    (Listing 6's ``exclude``).  ``pad`` defaults to ``r // 2``."""
    pad = r // 2 if pad is None else pad
    ph, pw = out if out is not None else (conv_out_size(h, r, stride, pad),
                                          conv_out_size(w, s, stride, pad))
    ys = np.arange(ph)[:, None] * stride - pad + np.arange(r)[None, :]     # (P, R)
    xs = np.arange(pw)[:, None] * stride - pad + np.arange(s)[None, :]     # (Q, S)
    in_y = ((ys >= 0) & (ys < h)).sum(1)
    in_x = ((xs >= 0) & (xs < w)).sum(1)
    return (r * s - in_y[:, None] * in_x[None, :]).astype(np.int64)


def bconv(x_bits, w_bits, stride: int = 1, pad: int | None = None,
          out: tuple[int, int] | None = None):
    """Bit convolution as the BTC kernel computes it (Listing 6 / released code).

    x_bits: input HWNC (H, W, N, C); w_bits: filter KKCO (R, S, C, O).  For every output pixel
    the in-frame taps are accumulated as popc(x XOR w) over C; out-of-frame taps are skipped and
    counted.  Returns (acc (P, Q, N, O) popcount sums, exclude (P, Q), v) with
    ``v = C·(R·S − exclude) − 2·acc``: exactly the real-valued convolution of the ±1 data with
    zero padding.  Output layout PQNO.
    """
    x = np.asarray(x_bits, dtype=np.int64)
    wt = np.asarray(w_bits, dtype=np.int64)
    h, w_, n, c = x.shape
    r, s, c2, o = wt.shape
    if c2 != c:
        raise ValueError(f"bconv: filter has C={c2}, input has C={c}")
    pad = r // 2 if pad is None else pad
    ph, pw = out if out is not None else (conv_out_size(h, r, stride, pad),
                                          conv_out_size(w_, s, stride, pad))
    xb = np.packbits(x.astype(np.uint8), axis=-1)                 # C bits -> bytes (pad 0)
    wb = np.packbits(wt.astype(np.uint8).transpose(0, 1, 3, 2), axis=-1)   # (R, S, O, C/8)
    acc = np.zeros((ph, pw, n, o), np.int64)
    for dy in range(r):
        for dx in range(s):
            ys = np.arange(ph) * stride - pad + dy
            xs = np.arange(pw) * stride - pad + dx
            oky, okx = (ys >= 0) & (ys < h), (xs >= 0) & (xs < w_)
            if not oky.any() or not okx.any():
                continue
            xin = xb[np.ix_(ys[oky], xs[okx])]                            # (p', q', N, C/8)
            pop = _popc_bytes(xin[..., None, :] ^ wb[dy, dx][None, None, None])  # (p',q',N,O)
            acc[np.ix_(np.flatnonzero(oky), np.flatnonzero(okx))] += pop
    excl = exclude_counts(h, w_, r, s, stride, pad, (ph, pw))
    v = c * (r * s - excl)[:, :, None, None] - 2 * acc
    return acc, excl, v


_BYTE_POPC = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def _popc_bytes(x) -> np.ndarray:
    """Sum of the popcounts of the last axis of a uint8 array."""
    return _BYTE_POPC[x].sum(-1)


def conv_pm1_reference(x_bits, w_bits, stride: int = 1, pad: int | None = None,
                       out: tuple[int, int] | None = None) -> np.ndarray:
    """Float64 cross-correlation of the ±1 tensors with zero padding (PQNO)."""
    x = to_pm1(x_bits)
    wt = to_pm1(w_bits)
    h, w_, n, c = x.shape
    r, s, _, o = wt.shape
    pad = r // 2 if pad is None else pad
    ph, pw = out if out is not None else (conv_out_size(h, r, stride, pad),
                                          conv_out_size(w_, s, stride, pad))
    hp = max(h + 2 * pad, (ph - 1) * stride + r)
    wp = max(w_ + 2 * pad, (pw - 1) * stride + s)
    xp = np.zeros((hp, wp, n, c))
    xp[pad:pad + h, pad:pad + w_] = x
    y = np.zeros((ph, pw, n, o))
    for dy in range(r):
        for dx in range(s):
            patch = xp[dy:dy + (ph - 1) * stride + 1:stride, dx:dx + (pw - 1) * stride + 1:stride]
            y += patch @ wt[dy, dx]
    return y


# =============================================================================================
# Epilogue (notes §1.7)
# =============================================================================================
SENSE_GE, SENSE_LT, SENSE_ZERO, SENSE_ONE = 0, 1, 2, 3


def bn_threshold(mean, var, eps, gamma, beta):
    """Fold BN + sign into an integer threshold per channel: returns (tau, sense) int64 arrays.

    sign(γ(v − μ)/√(σ² + ε) + β) with sign(0) = +1 and integer v is, with t = μ − β√(σ²+ε)/γ:
    γ > 0: v ≥ t ⇔ v ≥ ceil(t)        -> (ceil(t), SENSE_GE)
    γ < 0: v ≤ t ⇔ v < floor(t) + 1   -> (floor(t) + 1, SENSE_LT)   (the paper ignores γ < 0)
    γ = 0: constant sign(β)           -> SENSE_ONE if β ≥ 0 else SENSE_ZERO (tau unused, 0)
    t is computed in float64 (document: the same expression the float reference uses).
    """
    mean, var, gamma, beta = (np.asarray(v, dtype=np.float64) for v in (mean, var, gamma, beta))
    mean, var, gamma, beta = np.broadcast_arrays(mean, var, gamma, beta)
    std = np.sqrt(var + eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean - beta * std / gamma
    tau = np.zeros(gamma.shape, np.int64)
    sense = np.zeros(gamma.shape, np.int64)
    pos, neg, zero = gamma > 0, gamma < 0, gamma == 0
    tau[pos] = np.ceil(t[pos]).astype(np.int64)
    tau[neg] = np.floor(t[neg]).astype(np.int64) + 1
    sense[neg] = SENSE_LT
    sense[zero] = np.where(beta[zero] >= 0, SENSE_ONE, SENSE_ZERO)
    return tau, sense


def bn_sign_reference(v, mean, var, eps, gamma, beta) -> np.ndarray:
    """Float64 sign(BN(v)) as bits (sign(0) = +1), channels on the last axis."""
    y = (np.asarray(v, dtype=np.float64) - mean) / np.sqrt(np.asarray(var) + eps) * gamma + beta
    return (y >= 0).astype(np.uint8)


def epilogue_v(acc, k_eff, residual=0) -> np.ndarray:
    """Pre-threshold value ``v = K_eff − 2·acc + residual`` (exact integers)."""
    return np.asarray(k_eff, np.int64) - 2 * np.asarray(acc, np.int64) + \
        np.asarray(residual, np.int64)


def threshold(v, tau, sense) -> np.ndarray:
    """Per channel (last axis): GE: v ≥ τ; LT: v < τ; ZERO: 0; ONE: 1.  Returns bits."""
    v = np.asarray(v, np.int64)
    tau = np.asarray(tau, np.int64)
    sense = np.asarray(sense, np.int64)
    ge = v >= tau
    out = np.where(sense == SENSE_GE, ge, ~ge)
    out = np.where(sense == SENSE_ZERO, False, out)
    out = np.where(sense == SENSE_ONE, True, out)
    return out.astype(np.uint8)


def _pool(x, pool: int, reduce):
    x = np.asarray(x)
    h, w = x.shape[:2]
    ph, pw = -(-h // pool), -(-w // pool)       # ceil mode: partial windows at the far edges
    out = np.empty((ph, pw) + x.shape[2:], dtype=x.dtype)
    for i in range(ph):
        for j in range(pw):
            out[i, j] = reduce(x[i * pool:(i + 1) * pool, j * pool:(j + 1) * pool], axis=(0, 1))
    return out


def or_pool(bits, pool: int = 2) -> np.ndarray:
    """Max-pool of thresholded bits = logical OR over pool×pool windows, ceil mode (PQ...)."""
    return _pool(np.asarray(bits, np.uint8), pool, np.max)


def max_pool(x, pool: int = 2) -> np.ndarray:
    """Max-pool of real or integer maps, ceil mode (reference for OR-after-threshold)."""
    return _pool(x, pool, np.max)


def residual_maxpool2x2(res) -> np.ndarray:
    """Downsampling blocks take a 2×2 max of the integer residual (notes §1.7 [C])."""
    return max_pool(np.asarray(res, np.int64), 2)


def pack_channels(bits) -> np.ndarray:
    """Pack the last axis (channels) MSB-first into one integer: channel 0 is the MSB, as in
    the code's byte per 8 output channels (col 0 = MSB) and __brev(__ballot()) words."""
    bits = np.asarray(bits, dtype=object)
    n = bits.shape[-1]
    weights = np.array([1 << (n - 1 - i) for i in range(n)], dtype=object)
    return (bits * weights).sum(-1)


def last_layer_affine(v, scale, bias) -> np.ndarray:
    """Last layer keeps BN as an affine map (notes §1.7 [C]): ``v·scale_o + bias_o`` in float64
    (one multiply and one add, each rounded to float64 in that order)."""
    return np.asarray(v, np.float64) * np.asarray(scale, np.float64) + \
        np.asarray(bias, np.float64)


# =============================================================================================
# Transaction models of the RTL units (see units/bmma/rtl.py for the port layout)
# =============================================================================================
def _field(value: int, offset: int, width: int) -> int:
    return (value >> offset) & ((1 << width) - 1)


def _layout_array(p):
    """(name, offset, width) of the bmma_array / int8_mac_array request payload fields."""
    eb = 8 if p.UNIT == "int8_mac_array" else 1
    fields, off = {}, 0
    for name, w in (("a", p.m * p.k * eb), ("b", p.n * p.k * eb),
                    ("c", p.m * p.n * p.acc_width), ("op", 1), ("chain", 1), ("emit", 1)):
        fields[name] = (off, w)
        off += w
    return fields


def _words_to_int(words) -> int:
    v = 0
    for i, w in enumerate(np.asarray(words, dtype=np.uint64).reshape(-1)):
        v |= int(w) << (32 * i)
    return v


def _int_to_words(v: int, n: int) -> np.ndarray:
    return np.array([(v >> (32 * i)) & 0xFFFFFFFF for i in range(n)], dtype=np.uint32)


def _pack_tile(values, width: int) -> int:
    out = 0
    for i, x in enumerate(np.asarray(values).reshape(-1)):
        out |= (int(x) & ((1 << width) - 1)) << (i * width)
    return out


def _unpack_tile(v: int, count: int, width: int, signed: bool = True) -> np.ndarray:
    out = np.zeros(count, dtype=np.int64)
    for i in range(count):
        x = _field(v, i * width, width)
        if signed and x >> (width - 1):
            x -= 1 << width
        out[i] = x
    return out


def array_request(p, a_bits, b_bits, c=None, op: str = "xor", chain: bool = False,
                  emit: bool = True, order: str = "msb") -> int:
    """Payload of one ``bmma_array`` request.

    a: A (M, K) row-major bits, packed as the A operand memory image: row i is K/32 MSB-first
    words at payload bits [i·K, (i+1)·K) (word w of the row at [32w, 32w + 32)).  b: B (K, N),
    column j packed the same way at [j·K, (j+1)·K) of the b field.  c: C (M, N) row-major,
    ``acc_width`` bits each.  op: xor | and.  chain: add onto the accumulator (the previous
    operation's D) instead of C.  emit: send D out.
    """
    f = _layout_array(p)
    a = pack_bits(np.asarray(a_bits).reshape(p.m, p.k), order)
    b = pack_bits(np.asarray(b_bits).reshape(p.k, p.n).T, order)
    c = np.zeros((p.m, p.n), np.int64) if c is None else np.asarray(c)
    if op not in ("xor", "and"):
        raise ValueError(f"{p.UNIT}: op must be one of xor, and, got {op!r}")
    return (_words_to_int(a) << f["a"][0]) | (_words_to_int(b) << f["b"][0]) | \
        (_pack_tile(c, p.acc_width) << f["c"][0]) | (int(op == "and") << f["op"][0]) | \
        (int(bool(chain)) << f["chain"][0]) | (int(bool(emit)) << f["emit"][0])


def array_result(p, payload: int) -> np.ndarray:
    """D (M, N) int64 from one output payload."""
    return _unpack_tile(int(payload), p.m * p.n, p.acc_width).reshape(p.m, p.n)


def _decode_array_request(p, payload: int, order="msb"):
    f = _layout_array(p)
    payload = int(payload)
    a = unpack_bits(_int_to_words(_field(payload, *f["a"]), p.m * p.k // 32).reshape(p.m, -1),
                    p.k, order)
    b = unpack_bits(_int_to_words(_field(payload, *f["b"]), p.n * p.k // 32).reshape(p.n, -1),
                    p.k, order).T
    c = _unpack_tile(_field(payload, *f["c"]), p.m * p.n, p.acc_width).reshape(p.m, p.n)
    return a, b, c, _field(payload, *f["op"]), _field(payload, *f["chain"]), \
        _field(payload, *f["emit"])


def _array_ops(p, op_bit: int) -> str:
    if p.ops == "xor_and":
        return "and" if op_bit else "xor"
    return p.ops                   # single-op builds ignore the op field


def bmma_array_model(p, req) -> dict:
    """Transaction model of ``bmma_array``: requests (payload ints, in order) -> emitted D
    payloads.  The accumulator starts at 0 after reset; ``chain`` adds onto it, otherwise onto
    C; every request updates it; ``emit`` sends it out."""
    acc = np.zeros((p.m, p.n), np.int64)
    out = []
    for payload in req:
        a, b, c, op_bit, chain, emit = _decode_array_request(p, payload)
        acc, _ = bmma(a, b, acc if chain else c, _array_ops(p, op_bit), p.acc_width)
        if emit:
            out.append(_pack_tile(acc, p.acc_width))
    return {"d": np.array(out, dtype=object)}


def int8_request(p, a, b, c=None, chain: bool = False, emit: bool = True) -> int:
    """Payload of one ``int8_mac_array`` request: A (M, K) int8 row-major (element k of row i at
    a-field bits [(i·K + k)·8, +8)), B (K, N) int8 with column j contiguous, C (M, N)."""
    f = _layout_array(p)
    a = np.asarray(a).reshape(p.m, p.k)
    b = np.asarray(b).reshape(p.k, p.n)
    c = np.zeros((p.m, p.n), np.int64) if c is None else np.asarray(c)
    return (_pack_tile(a, 8) << f["a"][0]) | (_pack_tile(b.T, 8) << f["b"][0]) | \
        (_pack_tile(c, p.acc_width) << f["c"][0]) | (int(bool(chain)) << f["chain"][0]) | \
        (int(bool(emit)) << f["emit"][0])


def int8_mac_model(p, req) -> dict:
    """Transaction model of ``int8_mac_array``: D = (chain ? acc : C) + A·B, wrapping."""
    f = _layout_array(p)
    acc = np.zeros((p.m, p.n), np.int64)
    out = []
    for payload in req:
        payload = int(payload)
        a = _unpack_tile(_field(payload, *f["a"]), p.m * p.k, 8).reshape(p.m, p.k)
        b = _unpack_tile(_field(payload, *f["b"]), p.n * p.k, 8).reshape(p.n, p.k).T
        c = _unpack_tile(_field(payload, *f["c"]), p.m * p.n, p.acc_width).reshape(p.m, p.n)
        base = acc if _field(payload, *f["chain"]) else c
        acc = wrap(base + a @ b, p.acc_width)
        if _field(payload, *f["emit"]):
            out.append(_pack_tile(acc, p.acc_width))
    return {"d": np.array(out, dtype=object)}


def _layout_epilogue(p):
    fields, off = {}, 0
    for name, w in (("acc", p.n * p.acc_width), ("res", p.n * p.res_width),
                    ("tau", p.n * p.tau_width), ("sense", 2 * p.n if p.sense else 0),
                    ("k_eff", p.k_width), ("last", 1)):
        fields[name] = (off, w)
        off += w
    return fields


def _check_int_field(p, name, values, lo, hi, shape):
    arr = np.asarray(values)
    if arr.shape != shape:
        raise ValueError(f"{p.UNIT}: {name} must have shape {shape}, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].reshape(-1)[0]
            raise ValueError(f"{p.UNIT}: {name} must be integers (apply ceil/floor as "
                             f"bn_threshold does), got {bad!r}")
    elif arr.dtype.kind not in "iu" and not (arr.dtype == object and
                                            all(isinstance(x, (int, np.integer))
                                                for x in arr.reshape(-1))):
        raise ValueError(f"{p.UNIT}: {name} must be integers, got dtype {arr.dtype}")
    ints = [int(x) for x in arr.reshape(-1)]
    for x in ints:
        if not lo <= x <= hi:
            raise ValueError(f"{p.UNIT}: {name} must be in {lo}..{hi}, got {x}")
    return np.array(ints, dtype=np.int64).reshape(shape)


def epilogue_request(p, acc, k_eff: int, tau, sense=None, residual=None,
                     last: bool = True) -> int:
    """Payload of one ``bnn_epilogue`` item: one D row (n accumulators), its K_eff, the
    residual (n signed integers), the per-channel threshold τ (``tau_width``-bit signed) and
    sense (GE/LT/ZERO/ONE), and ``last`` (closes the OR-pool window: emit the packed bits).

    Raises ValueError naming the field for τ/sense/residual/k_eff values that the port format
    cannot carry (non-integer τ, out of range, wrong shape).
    """
    f = _layout_epilogue(p)
    shape = (p.n,)
    tw = p.tau_width
    tau = _check_int_field(p, "tau", tau, -(1 << (tw - 1)), (1 << (tw - 1)) - 1, shape)
    sense = _check_int_field(p, "sense", np.zeros(shape, np.int64) if sense is None else sense,
                             0, 3, shape)
    if not p.sense and np.any(sense != SENSE_GE):
        raise ValueError(f"{p.UNIT}: sense must be GE (0) for every channel when the unit is "
                         f"built with sense=false (v ≥ τ only), got {sense.tolist()}")
    acc = _check_int_field(p, "acc", acc, -(1 << (p.acc_width - 1)),
                           (1 << (p.acc_width - 1)) - 1, shape)
    if p.res_width:
        res = _check_int_field(p, "residual", np.zeros(shape, np.int64) if residual is None
                               else residual, -(1 << (p.res_width - 1)),
                               (1 << (p.res_width - 1)) - 1, shape)
    elif residual is not None and np.any(np.asarray(residual) != 0):
        raise ValueError(f"{p.UNIT}: residual must be absent when res_width = 0")
    else:
        res = np.zeros(shape, np.int64)
    k_eff = int(_check_int_field(p, "k_eff", np.array([k_eff]), 0, (1 << p.k_width) - 1,
                                 (1,))[0])
    v = _pack_tile(acc, p.acc_width) << f["acc"][0]
    if p.res_width:
        v |= _pack_tile(res, p.res_width) << f["res"][0]
    if p.sense:
        v |= _pack_tile(sense, 2) << f["sense"][0]
    return v | (_pack_tile(tau, tw) << f["tau"][0]) | (k_eff << f["k_eff"][0]) | \
        (int(bool(last)) << f["last"][0])


def epilogue_result(p, payload: int) -> np.ndarray:
    """Bits (n,) of one output payload (channel 0 is the MSB)."""
    payload = int(payload)
    return np.array([(payload >> (p.n - 1 - i)) & 1 for i in range(p.n)], dtype=np.uint8)


def bnn_epilogue_model(p, req) -> dict:
    """Transaction model of ``bnn_epilogue``: bits = threshold(K_eff − 2·acc + res, τ, sense),
    ORed over the items of a window (closed by ``last``), packed MSB-first."""
    f = _layout_epilogue(p)
    pool = np.zeros(p.n, np.uint8)
    out = []
    for payload in req:
        payload = int(payload)
        acc = _unpack_tile(_field(payload, *f["acc"]), p.n, p.acc_width)
        res = _unpack_tile(_field(payload, *f["res"]), p.n, p.res_width) if p.res_width else 0
        tau = _unpack_tile(_field(payload, *f["tau"]), p.n, p.tau_width)
        sense = _unpack_tile(_field(payload, *f["sense"]), p.n, 2, signed=False) if p.sense \
            else np.zeros(p.n, np.int64)
        v = epilogue_v(acc, _field(payload, *f["k_eff"]), res)
        pool |= threshold(v, tau, sense)
        if _field(payload, *f["last"]):
            out.append(int(pack_channels(pool)))
            pool = np.zeros(p.n, np.uint8)
    return {"out": np.array(out, dtype=object)}

