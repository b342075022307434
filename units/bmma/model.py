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
    "pack_channels", "residual_maxpool2x2", "residual_window4", "residual_max4",
    "last_layer_affine", "last_layer_affine_fixed", "bwn_dot", "bwn_conv",
    # hardware transaction models
    "bmma_array_model", "int8_mac_model", "bnn_epilogue_model",
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


def _correlate(x, wt, stride, pad, out, dtype) -> np.ndarray:
    """Cross-correlation of ``x`` (H, W, N, C) with ``wt`` (R, S, C, O), zero padding ``pad``
    (None: R // 2), in ``dtype``; ``out`` (rows, cols) None = the convolution's own size."""
    h, w_, n, _ = x.shape
    r, s, _, o = wt.shape
    pad = r // 2 if pad is None else pad
    ph, pw = out if out is not None else (conv_out_size(h, r, stride, pad),
                                          conv_out_size(w_, s, stride, pad))
    hp = max(h + 2 * pad, (ph - 1) * stride + r)
    wp = max(w_ + 2 * pad, (pw - 1) * stride + s)
    xp = np.zeros((hp, wp, *x.shape[2:]), dtype)
    xp[pad:pad + h, pad:pad + w_] = x
    y = np.zeros((ph, pw, n, o), dtype)
    for dy in range(r):
        for dx in range(s):
            patch = xp[dy:dy + (ph - 1) * stride + 1:stride, dx:dx + (pw - 1) * stride + 1:stride]
            y += patch @ wt[dy, dx]
    return y


def conv_pm1_reference(x_bits, w_bits, stride: int = 1, pad: int | None = None,
                       out: tuple[int, int] | None = None) -> np.ndarray:
    """Float64 cross-correlation of the ±1 tensors with zero padding (PQNO)."""
    x = to_pm1(x_bits)
    wt = to_pm1(w_bits)
    return _correlate(x, wt, stride, pad, out, np.float64)


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


def residual_window4(res, p: int, q: int) -> np.ndarray:
    """The 4 residuals of output pixel (p, q)'s 2×2 window of a saved (H, W, ...) map, on a new
    last axis, in the code's order (p·2 + i, q·2 + j) for i, j in 0, 1 (kernel.cuh: max over
    exactly 4 values).  A window that runs off the map (ceil mode: odd H or W) repeats its
    in-frame corner (2p, 2q), which leaves the maximum that of the in-frame values."""
    res = np.asarray(res, np.int64)
    h, w = res.shape[:2]
    taps = []
    for i in range(2):
        for j in range(2):
            y, x = 2 * p + i, 2 * q + j
            taps.append(res[y, x] if y < h and x < w else res[2 * p, 2 * q])
    return np.stack(taps, axis=-1)


def residual_max4(res4) -> np.ndarray:
    """Maximum over the last axis (the 4 residuals of a 2×2 window): what ``bnn_epilogue``
    with ``res_pool`` adds, equal to :func:`residual_maxpool2x2` at that pixel."""
    return np.asarray(res4, np.int64).max(-1)


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


def last_layer_affine_fixed(v, scale_q, bias_q) -> np.ndarray:
    """The last-layer affine in fixed point, as ``bnn_affine`` computes it: the exact integer
    ``v·scale_q + bias_q`` (no rounding anywhere).  With scale = scale_q·2^−F and
    bias = bias_q·2^−F (any F), ``result·2^−F`` equals :func:`last_layer_affine`'s float64
    ``v·scale + bias`` exactly whenever |v·scale_q| and the result stay below 2^53 (both float64
    operations are then exact)."""
    v = np.asarray(v, dtype=object)
    return v * np.asarray(scale_q, dtype=object) + np.asarray(bias_q, dtype=object)


# =============================================================================================
# BWN first layer (notes §1.7 [P]: binary weights, full-precision input; add or subtract)
# =============================================================================================
def bwn_dot(x, w_bits) -> np.ndarray:
    """Integer input (M, K) times binary weights (K, N): ``Σ_k (w ? x : −x)`` (the code adds
    the input element when the weight bit is 1 and subtracts it when 0), exact int64."""
    x = np.asarray(x, np.int64)
    return x @ (2 * np.asarray(w_bits, np.int64) - 1)


def bwn_conv(x, w_bits, stride: int = 1, pad: int | None = None,
             out: tuple[int, int] | None = None) -> np.ndarray:
    """BWN convolution (the stem): integer input HWNC (H, W, N, C), filter bits KKCO
    (R, S, C, O) -> PQNO int64; out-of-frame taps are skipped (zero padding), as the code's
    first-layer kernel does."""
    x = np.asarray(x, np.int64)
    wt = 2 * np.asarray(w_bits, np.int64) - 1
    return _correlate(x, wt, stride, pad, out, np.int64)


# =============================================================================================
# Transaction models of the RTL units (payload layouts: units/bmma/layouts.py)
# =============================================================================================
# The models speak field arrays: one dict per transaction stream, each field an array with the
# requests on axis 0 (the field names and shapes of units/bmma/layouts.py; the family packs
# them into payload integers through that description).
def _array_ops(p, op_bit: int) -> str:
    if p.ops == "xor_and":
        return "and" if op_bit else "xor"
    return p.ops                   # single-op builds ignore the op field


def _empty_tiles(p):
    return np.zeros((0, p.m, p.n), np.int64)


def bmma_array_model(p, req: dict, order: str = "msb") -> dict:
    """Transaction model of ``bmma_array``.

    ``req``: a [R, M, K/32] (row i of A as K/32 words, :func:`pack_bits`), b [R, N, K/32]
    (column j of B likewise), c [R, M, N] (signed), op [R] (1 = and), chain [R], emit [R].
    Returns {"d": [E, M, N] int64}, the D tile of every emitting request in order.  The
    accumulator starts at 0 after reset; ``chain`` adds onto it, otherwise onto C; every request
    updates it; ``emit`` sends it out."""
    acc = np.zeros((p.m, p.n), np.int64)
    out = []
    for r in range(len(req["op"])):
        a = unpack_bits(np.asarray(req["a"][r]), p.k, order)
        b = unpack_bits(np.asarray(req["b"][r]), p.k, order).T
        c = np.asarray(req["c"][r], np.int64)
        acc, _ = bmma(a, b, acc if int(req["chain"][r]) else c, _array_ops(p, int(req["op"][r])),
                      p.acc_width)
        if int(req["emit"][r]):
            out.append(acc)
    return {"d": np.array(out, np.int64) if out else _empty_tiles(p)}


def _chained(p, req: dict, dot) -> dict:
    """The integer arrays' transaction loop: D = (chain ? acc : C) + dot(A, B), wrapped to
    ``acc_width``, one tile out per ``emit``."""
    acc = np.zeros((p.m, p.n), np.int64)
    out = []
    for r in range(len(req["chain"])):
        a = np.asarray(req["a"][r], np.int64)
        b = np.asarray(req["b"][r], np.int64).T
        c = np.asarray(req["c"][r], np.int64)
        acc = wrap((acc if int(req["chain"][r]) else c) + dot(a, b), p.acc_width)
        if int(req["emit"][r]):
            out.append(acc)
    return {"d": np.array(out, np.int64) if out else _empty_tiles(p)}


def int8_mac_model(p, req: dict) -> dict:
    """Transaction model of ``int8_mac_array``: D = (chain ? acc : C) + A·B, wrapping.

    ``req``: a [R, M, K] signed INT8 (A row-major), b [R, N, K] (B column j contiguous, i.e.
    B transposed), c [R, M, N], chain [R], emit [R] (op is unused).  Returns {"d": [E, M, N]}."""
    return _chained(p, req, lambda a, b: a @ b)


def bnn_epilogue_model(p, req: dict) -> dict:
    """Transaction model of ``bnn_epilogue``: bits = threshold(v, τ, sense), ORed over the
    items of a window (closed by ``last``), with v = K_eff − 2·acc + res (``fixup``) or
    acc + res (``fixup = false``: an integer input, the BWN first layer), res the item's
    residual or, with ``res_pool``, the maximum of its 4 residuals (:func:`residual_max4`).

    ``req``: acc [R, n], res [R, n] or [R, n, 4] (optional: 0), tau [R, n], sense [R, n]
    (optional: GE), k_eff [R] (fixup only), last [R].  Returns {"out": [E, n] uint8}: the
    pooled bits of every closed window, channel 0 first; with ``save`` also {"v": [E, n]}: v of
    the window's last item wrapped to res_width bits (the residual the next block adds).
    ``pool_rows`` interleaved windows: item r pools into window r mod pool_rows (the rows of
    a D tile, as ``bnn_layer`` sends them)."""
    rows = getattr(p, "pool_rows", 1)
    pools = np.zeros((rows, p.n), np.uint8)
    out, saved = [], []
    for r in range(len(req["last"])):
        pool = pools[r % rows]
        acc = np.asarray(req["acc"][r], np.int64)
        res = np.asarray(req["res"][r], np.int64) if "res" in req else np.zeros(p.n, np.int64)
        if p.res_pool:
            res = residual_max4(res)
        tau = np.asarray(req["tau"][r], np.int64)
        sense = np.asarray(req["sense"][r], np.int64) if "sense" in req \
            else np.zeros(p.n, np.int64)
        v = epilogue_v(acc, int(req["k_eff"][r]), res) if p.fixup \
            else acc + res
        pool |= threshold(v, tau, sense)
        if int(req["last"][r]):
            out.append(pool.copy())
            saved.append(wrap(v, p.res_width) if p.res_width else v)
            pool[:] = 0
    res = {"out": np.array(out, np.uint8) if out else np.zeros((0, p.n), np.uint8)}
    if p.save:
        res["v"] = np.array(saved, np.int64) if saved else np.zeros((0, p.n), np.int64)
    return res


def bwn_array_model(p, req: dict) -> dict:
    """Transaction model of ``bwn_array``: D = (chain ? acc : C) + Σ_k (b ? a : −a), wrapping.

    ``req``: a [R, M, K] signed ``a_width``-bit inputs (row-major), b [R, N, K] weight bits
    (column j of B contiguous), c [R, M, N], chain [R], emit [R] (op is unused).  Returns
    {"d": [E, M, N]}."""
    return _chained(p, req, bwn_dot)


def bnn_affine_model(p, req: dict) -> dict:
    """Transaction model of ``bnn_affine``: y = (K_eff − 2·acc)·scale + bias, exact integers
    (:func:`last_layer_affine_fixed`; the port is wide enough for every input).

    ``req``: acc [R, n], scale [R, n], bias [R, n], k_eff [R].  Returns {"y": [R, n]}."""
    acc = np.asarray(req["acc"], np.int64).reshape(-1, p.n)
    v = epilogue_v(acc, np.asarray(req["k_eff"], np.int64).reshape(-1, 1))
    y = last_layer_affine_fixed(v, np.asarray(req["scale"], object).reshape(-1, p.n),
                                np.asarray(req["bias"], object).reshape(-1, p.n))
    return {"y": np.asarray(y, dtype=object).reshape(-1, p.n)}
