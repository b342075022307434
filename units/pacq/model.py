"""Bit-exact golden models of the PacQ family, the packing formats, the offset-corrected GEMM
and exact references (Yin, Li, Panda, "PacQ: A SIMT Microarchitecture for Efficient Dataflow in
Hyper-asymmetric GEMMs"; notes in ../shared/papers/004_pacq.md).

Depends only on numpy and :mod:`tcgen.hw.numeric` (never on Amaranth), so it can be used on its own.

Packing (§III-A of the paper; the lane order and the stored code are ours, the paper omits them)
    ``P(B4)_n``: 4 INT4 weights consecutive along **n** (same row k) in one INT16 word, lane j at
    bits [4j+3:4j], lane j = column n0+j.  ``P(B8)_n``: 8 INT2, lane j at bits [2j+1:2j].
    Weights are stored **offset-binary**: y = B+8 (INT4, B in [-8, 7]) or y = B+2 (INT2,
    B in [-2, 1]) -- the two's complement nibble with its MSB inverted.  ``P(B4)_k`` /
    ``P(B8)_k`` (the baseline frameworks' layout) pack consecutive **k** instead.

The parallel FP-INT multiplier (``pacq_mul``), per lane j with code y_j, for A = (-1)^s·mA·2^(E-25)
(mA = 1024+f and E = e for normal A; mA = f and E = 1 for subnormal A):
    ``paper``   FP16 of A·(1024+y_j) = ±P_j·2^(E-25), P_j = mA·(1024+y_j) < 2^22, rounded once
                (RNE or RTZ); overflow -> ±inf (RNE) / ±max (RTZ); always normal otherwise.
                1024+y = B+1032 (INT4) or B+1026 (INT2).  ±0 -> ±0, ±inf -> ±inf, NaN -> NaN.
    ``exact``   (sign, E, P_j): the unrounded lane products with the shared exponent.
    ``offset8`` (sign, E, i_j = mA·y_j): A·(B+8) (INT4) or A·(B+2) (INT2) in fixed point, no
                +1024, nothing rounded; corrected later with 8·ΣA (2·ΣA).
    ``literal`` the paper's text bit for bit: {s, (e+10) mod 32, mA[9:6], (mA[5:0]+i_j[13:10])
                mod 64} -- the 6-bit hidden-bit adder, no normalization, truncation; ±0/±inf/NaN
                pass through.  Wrong for ~35% of (mA, y) pairs (see the notes §3.3).

DP-4 (``dp4_baseline``, ``dp4_pacq``), summation order of every tree (pinned, same as the RTL)::

    y = ((p0 + p1) + (p2 + p3)) + c          p_k = product of activation k (k = 0..3)
    ΣA = ((a0 + a1) + (a2 + a3)) + sa_in     (dp4_pacq, sum_a=True)

Every '+' is one rounding to the accumulation format ``acc``; products enter the tree already in
``acc`` (an FP16 product widens exactly to FP32; an ``exact``/``offset8`` lane product is rounded
once into ``acc``, which is exact for FP32 since it has at most 22 significant bits).

Offset correction (on the "general core", Eq. (1) generalised per quantization group g)::

    out[m, n] = Σ_g s[g, n] · (P_g[m, n] − K · S_g[m])

K = 1032 (INT4) / 1026 (INT2) for ``paper``/``exact``/``literal`` and 8 / 2 for ``offset8``.
Order: t = K·S_g, u = P_g − t, v = s·u, out = out + v (groups in order, out starts at +0); each
operation rounds once in the correction format (= ``acc``).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from tcgen.hw import numeric as num
# the parallel multiplier's integer core, shared with Winograd (word_lanes re-exported)
from tcgen.hw.fpint_ref import lane_codes as _lane_codes
from tcgen.hw.fpint_ref import parallel_int_mul, word_lanes
from tcgen.hw.numeric import FP16, FP32

__all__ = [
    "WEIGHT_RANGE", "offset_of", "lanes_for", "to_code", "from_code",
    "pack_n", "unpack_n", "pack_k", "unpack_k", "word_lanes",
    "unpack_fp16", "pacq_mul", "int_dequant", "dequant_mul", "fp16_mul",
    "dp4_baseline", "dp4_pacq", "products_to_acc", "sum_tree",
    "correction_constant", "gemm", "gemm_exact", "FLOWS", "GROUPS",
    "acc_format", "activations",
]

#: closed weight ranges (the paper's "[-8,7)" is a typo for [-8, 7])
WEIGHT_RANGE = {4: (-8, 7), 2: (-2, 1)}


def activations(rng, n, sigma=1.0) -> np.ndarray:
    """FP16 encodings of N(0, sigma) activations (RNE from float64): the family's stimulus."""
    return num.from_float(rng.normal(0.0, sigma, size=n), "fp16")


def offset_of(wbits: int) -> int:
    """Offset-binary bias: y = B + offset (8 for INT4, 2 for INT2)."""
    _check_wbits(wbits)
    return 1 << (wbits - 1)


def lanes_for(wbits: int) -> int:
    _check_wbits(wbits)
    return 16 // wbits


def _check_wbits(wbits):
    if wbits not in (2, 4):
        raise ValueError(f"pacq: weight width must be one of 2, 4, got {wbits!r}")


def acc_format(acc: str):
    return num.get_format(acc)


# -- packing ----------------------------------------------------------------------------------
def to_code(B, wbits: int) -> np.ndarray:
    """Signed weights -> offset-binary codes y = B + 2**(wbits-1); range-checked."""
    _check_wbits(wbits)
    B = np.asarray(B)
    if B.dtype.kind not in "iu":
        if not np.all(np.asarray(B) == np.round(B)):
            raise ValueError(f"pacq: INT{wbits} weights must be integers")
        B = B.astype(np.int64)
    lo, hi = WEIGHT_RANGE[wbits]
    bad = (B < lo) | (B > hi)
    if np.any(bad):
        v = B[bad].flat[0]
        raise ValueError(f"pacq: INT{wbits} weights must be in {lo}..{hi}, got {int(v)} "
                         f"({int(bad.sum())} out of range)")
    return (B.astype(np.int64) + offset_of(wbits)).astype(np.int64)


def from_code(y, wbits: int) -> np.ndarray:
    return np.asarray(y, dtype=np.int64) - offset_of(wbits)


def _lanes_to_words(codes, wbits):
    L = lanes_for(wbits)
    shifts = np.arange(L, dtype=np.int64) * wbits
    return (np.asarray(codes, dtype=np.int64) << shifts).sum(axis=-1).astype(np.uint16)


def pack_n(B, wbits: int) -> np.ndarray:
    """``P(B4)_n`` / ``P(B8)_n``: B[k, n] -> words[k, n // L] (lane j = column q·L + j)."""
    B = np.asarray(B)
    if B.ndim != 2:
        raise ValueError(f"pacq: pack_n needs a 2-D weight matrix [k, n], got shape {B.shape}")
    L = lanes_for(wbits)
    k, n = B.shape
    if n % L:
        raise ValueError(f"pacq: n must be a multiple of {L} for INT{wbits} n-packing, got {n}")
    y = to_code(B, wbits).reshape(k, n // L, L)
    return _lanes_to_words(y, wbits)


def unpack_n(words, wbits: int) -> np.ndarray:
    w = np.asarray(words)
    k, q = w.shape
    return from_code(word_lanes(w, wbits).reshape(k, q * lanes_for(wbits)), wbits)


def pack_k(B, wbits: int) -> np.ndarray:
    """``P(B4)_k`` / ``P(B8)_k`` (baseline): B[k, n] -> words[k // L, n] (lane j = row p·L + j)."""
    B = np.asarray(B)
    if B.ndim != 2:
        raise ValueError(f"pacq: pack_k needs a 2-D weight matrix [k, n], got shape {B.shape}")
    L = lanes_for(wbits)
    k, n = B.shape
    if k % L:
        raise ValueError(f"pacq: k must be a multiple of {L} for INT{wbits} k-packing, got {k}")
    y = to_code(B, wbits).reshape(k // L, L, n).transpose(0, 2, 1)
    return _lanes_to_words(y, wbits)


def unpack_k(words, wbits: int) -> np.ndarray:
    w = np.asarray(words)
    p, n = w.shape
    L = lanes_for(wbits)
    return from_code(word_lanes(w, wbits).transpose(0, 2, 1).reshape(p * L, n), wbits)


# -- FP16 fields --------------------------------------------------------------------------------
@dataclass
class Fp16Fields:
    sign: np.ndarray
    e: np.ndarray          # raw exponent field
    frac: np.ndarray
    mA: np.ndarray         # significand with hidden bit (1024|f for e != 0, f for e == 0)
    E: np.ndarray          # effective biased exponent max(e, 1)
    is_zero: np.ndarray
    is_inf: np.ndarray
    is_nan: np.ndarray


def unpack_fp16(a) -> Fp16Fields:
    """The fields tcgen.hw.fparith.unpack produces (no DAZ).  For ±inf/NaN mA = 1024|f, E = 31."""
    a = np.asarray(a, dtype=np.int64)
    s = (a >> 15) & 1
    e = (a >> 10) & 31
    f = a & 1023
    mA = np.where(e != 0, 1024 | f, f)
    return Fp16Fields(s, e, f, mA, np.maximum(e, 1), (e == 0) & (f == 0), (e == 31) & (f == 0),
                      (e == 31) & (f != 0))


def _int2_of(wbits: str, n_shape, int2):
    if wbits == "4":
        return np.zeros(n_shape, np.int64)
    if wbits == "2":
        return np.ones(n_shape, np.int64)
    if int2 is None:
        raise ValueError("pacq: wbits=both needs the int2 select")
    return np.broadcast_to(np.asarray(int2, dtype=np.int64), n_shape)


def _L(wbits: str) -> int:
    return 8 if wbits in ("both", "2") else 4


# -- pacq_mul -----------------------------------------------------------------------------------
def pacq_mul(a, w, int2=None, *, mode="paper", rounding="rne", wbits="both"):
    """Golden model of one ``pacq_mul`` cycle per element of ``a``/``w``.

    Returns a dict of arrays with a trailing lane axis of L = 8 (INT2 supported) or 4:
    paper/literal: ``y`` [n, L] FP16 encodings (lanes >= 4 are 0 in INT4 mode);
    exact: ``sign``, ``exp`` [n], ``p`` [n, L]; offset8: ``sign``, ``exp``, ``i`` [n, L];
    exact/offset8 also ``is_inf``, ``is_nan`` [n].
    """
    a = np.asarray(a, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    a, w = np.broadcast_arrays(a, w)
    i2 = _int2_of(wbits, a.shape, int2)
    F = unpack_fp16(a)
    i, y, active = parallel_int_mul(F.mA, w, wbits, i2)   # the parallel 11b x 4b (x 2b) array
    mA = F.mA[..., None]
    P = (mA << 10) + i                           # hidden-bit add: mA·(1024 + y)
    sgn = np.broadcast_to(F.sign[..., None], P.shape)
    if mode == "paper":
        out = num.round_exact(sgn, P, np.broadcast_to(F.E[..., None] - 25, P.shape), FP16,
                              rounding).astype(np.int64)
        out = np.where(F.is_inf[..., None], (sgn << 15) | FP16.inf, out)
        out = np.where(F.is_nan[..., None], FP16.nan, out)
        return {"y": np.where(active, out, 0)}
    if mode == "literal":
        e_out = (F.e[..., None] + 10) & 31
        s6 = ((mA & 63) + ((i >> 10) & 15)) & 63
        out = (sgn << 15) | (e_out << 10) | (((mA >> 6) & 15) << 6) | s6
        out = np.where(F.is_zero[..., None], sgn << 15, out)
        out = np.where(F.is_inf[..., None], (sgn << 15) | FP16.inf, out)
        out = np.where(F.is_nan[..., None], FP16.nan, out)
        return {"y": np.where(active, out, 0)}
    common = {"sign": F.sign, "exp": F.E, "is_inf": F.is_inf.astype(np.int64),
              "is_nan": F.is_nan.astype(np.int64)}
    if mode == "exact":
        return dict(common, p=np.where(active, P, 0))
    if mode == "offset8":
        return dict(common, i=np.where(active, i, 0))
    raise ValueError(f"pacq_mul: mode must be one of paper, exact, offset8, literal, got {mode!r}")


def fp16_mul(a, b, rounding="rne"):
    return num.fp_mul(a, b, FP16, rounding)


def dequant_constant(int2) -> np.ndarray:
    """FP16 encoding of -(1024 + offset): 0xE408 (-1032, INT4) or 0xE402 (-1026, INT2)."""
    return np.where(np.asarray(int2, dtype=bool), 0xE402, 0xE408).astype(np.uint64)


def int_dequant(code, int2):
    """INT -> FP16 by the magic number: (0x6400 | y) - 1032 (INT4) or - 1026 (INT2), in FP16.
    ``code`` is the offset-binary code (INT2 uses its two low bits).  Always exact."""
    code = np.asarray(code, dtype=np.int64)
    int2 = np.broadcast_to(np.asarray(int2, dtype=np.int64), code.shape)
    y = np.where(int2 == 1, code & 3, code & 15)
    return num.fp_add((0x6400 | y).astype(np.uint64), dequant_constant(int2), FP16, "rne")


def dequant_mul(a, code, int2, rounding="rne"):
    return num.fp_mul(a, int_dequant(code, int2), FP16, rounding)


# -- DP-4 -----------------------------------------------------------------------------------------
def widen(x16, acc):
    """FP16 encodings into the accumulation format (exact)."""
    return np.asarray(x16, dtype=np.uint64) if acc == "fp16" else \
        num.fp_convert(x16, FP16, FP32)


def sum_tree(terms, c, acc, rounding="rne"):
    """((t0 + t1) + (t2 + t3)) + c, each '+' one rounding in ``acc`` (the pinned tree order)."""
    fmt = acc_format(acc)
    s = num.pairwise_sum(terms, lambda x, y: num.fp_add(x, y, fmt, rounding))
    return num.fp_add(s, c, fmt, rounding)


def dp4_baseline(a, b, c, *, acc="fp16", rounding="rne"):
    """``dp4_baseline`` per operation: a, b [n, 4] FP16; c [n] in ``acc``.  Products are FP16
    multiplies (the paper's baseline DP-4: 4 FP16 MUL + 4 adders), widened exactly if FP32."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    p = [widen(num.fp_mul(a[..., k], b[..., k], FP16, rounding), acc) for k in range(4)]
    return sum_tree(p, np.asarray(c, dtype=np.uint64), acc, rounding)


def products_to_acc(a, w, int2, *, mode, acc, rounding, wbits="both"):
    """The products a DP-4 tree sees, in ``acc``, shape a.shape + (L,)."""
    fmt = acc_format(acc)
    if mode in ("paper", "literal"):
        y = pacq_mul(a, w, int2, mode=mode, rounding=rounding if mode == "paper" else "rtz",
                     wbits=wbits)["y"]
        return widen(y, acc)
    r = pacq_mul(a, w, int2, mode=mode, wbits=wbits)
    mag = r["p"] if mode == "exact" else r["i"]
    sgn = np.broadcast_to(r["sign"][..., None], mag.shape)
    out = num.round_exact(sgn, mag, np.broadcast_to(r["exp"][..., None] - 25, mag.shape), fmt,
                          rounding)
    inf = np.broadcast_to(r["is_inf"][..., None] == 1, mag.shape)
    nan = np.broadcast_to(r["is_nan"][..., None] == 1, mag.shape)
    if mode == "offset8":                       # inf · 0 = NaN (lane code y = 0)
        y, _ = _lane_codes(np.asarray(w), _int2_of(wbits, np.asarray(a).shape, int2), _L(wbits))
        nan = nan | (inf & (y == 0))
    inf_enc = (sgn.astype(np.uint64) << np.uint64(fmt.width - 1)) | np.uint64(fmt.inf)
    out = np.where(inf, inf_enc, out)
    return np.where(nan, np.uint64(fmt.nan), out).astype(np.uint64)


def dp4_pacq(a, w, int2, c, sa_in, *, wbits="both", D=2, mode="paper", acc="fp16",
             rounding="rne", sum_a=True):
    """``dp4_pacq`` at transaction level.

    One operation = 4 activations a[4] (FP16, k0..k3) and 4 packed words w[4] (row k, the same L
    output columns), run-time ``int2``, accumulator inputs c[L_max] and sa_in (in ``acc``).
    The unit emits G = L / D result beats per operation (L = 4 INT4, 8 INT2); beat g carries
    y[t] = ((p0j + p1j) + (p2j + p3j)) + c[j] for lanes j = g·D + t, t < D, the beat index g, and
    ΣA = ((a0 + a1) + (a2 + a3)) + sa_in (the same value on every beat of an operation).
    Returns a list of beats per op: ({'y': [D], 'group': g, 'sa': v}, ...) flattened in order.
    """
    a = np.asarray(a, dtype=np.int64).reshape(-1, 4)
    w = np.asarray(w, dtype=np.int64).reshape(-1, 4)
    n = a.shape[0]
    i2 = _int2_of(wbits, (n,), int2)
    L = _L(wbits)
    c = np.asarray(c, dtype=np.uint64).reshape(n, L)
    prods = products_to_acc(a, w, i2[:, None], mode=mode, acc=acc, rounding=rounding,
                            wbits=wbits)                               # [n, 4, L]
    y = sum_tree([prods[:, k, :] for k in range(4)], c, acc, rounding)   # [n, L]
    if sum_a:
        sa = sum_tree([widen(a[:, k], acc) for k in range(4)],
                      np.asarray(sa_in, dtype=np.uint64).reshape(n), acc, rounding)
    else:
        sa = np.zeros(n, np.uint64)
    beats_y, beats_g, beats_sa = [], [], []
    for r in range(n):
        lanes = 8 if i2[r] else 4
        for g in range(lanes // D):
            beats_y.append([int(v) for v in y[r, g * D:(g + 1) * D]])
            beats_g.append(g)
            beats_sa.append(int(sa[r]))
    return {"y": np.array(beats_y, dtype=np.uint64).reshape(-1, D),
            "group": np.array(beats_g, dtype=np.uint64),
            "sa": np.array(beats_sa, dtype=np.uint64)}


# -- GEMM with per-group offset correction -----------------------------------------------------
#: quantization groups (gk along k, gn along n), Table II of the paper
GROUPS = {"g128": (128, 1), "g256": (256, 1), "g[32,4]": (32, 4), "g[64,4]": (64, 4)}
#: GEMM flows of the numerics study
FLOWS = ("dequant", "literal", "paper", "paper_fp32", "exact", "offset8")


def correction_constant(mode: str, wbits: int) -> int:
    """K of out = P − K·ΣA: 1024 + offset for the +1024 modes, offset for offset8."""
    off = offset_of(wbits)
    return off if mode == "offset8" else 1024 + off


def _flow_config(flow):
    return {"dequant": (None, "fp16"), "literal": ("literal", "fp16"),
            "paper": ("paper", "fp16"), "paper_fp32": ("paper", "fp32"),
            "exact": ("exact", "fp32"), "offset8": ("offset8", "fp32")}[flow]


def _check_groups(k, n, gk, gn, wbits, flow):
    if k % 4:
        raise ValueError(f"pacq: k must be a multiple of 4 (DP-4), got {k}")
    if k % gk or n % gn or gk % 4:
        raise ValueError(f"pacq: group ({gk}, {gn}) must tile k={k}, n={n} (gk a multiple of 4)")
    if flow != "dequant" and n % lanes_for(wbits):
        raise ValueError(f"pacq: n must be a multiple of {lanes_for(wbits)}, got {n}")


def gemm(A, B, scales, *, wbits=4, group=(128, 1), flow="paper", rounding="rne",
         return_stats=False):
    """The tensor-core GEMM + general-core correction, bit-exact to a chain of DP-4 operations.

    A [m, k] FP16 encodings; B [k, n] signed INT weights; scales [k // gk, n // gn] FP16
    encodings.  ``flow``:

    * ``dequant``: W = FP16(s·B) (one rounding), then DP-4 baseline chain with FP16 products and
      FP16 accumulation: C ← ((p0+p1)+(p2+p3)) + C over k in steps of 4.
    * ``literal``/``paper``/``paper_fp32``/``exact``/``offset8``: per group g, P_g ← DP-4 chain of
      ``dp4_pacq`` products (starting at +0), S_g ← ΣA chain, then the correction (module doc)
      in the accumulation format (FP16 for literal/paper, FP32 otherwise).

    Returns FP16/FP32 encodings [m, n] (the format of the flow's accumulator); with
    ``return_stats`` also {'overflow_products', 'overflow_psum', 'overflow_S'} counts.
    """
    A = np.asarray(A, dtype=np.uint64)
    B = np.asarray(B, dtype=np.int64)
    m, k = A.shape
    n = B.shape[1]
    gk, gn = group
    _check_groups(k, n, gk, gn, wbits, flow)
    S_enc = np.asarray(scales, dtype=np.uint64)
    s_full = np.repeat(S_enc, gn, axis=1)                          # [k // gk, n]
    stats = {"overflow_products": 0, "overflow_psum": 0, "overflow_S": 0}
    if flow == "dequant":
        fmt = FP16
        s_k = np.repeat(s_full, gk, axis=0)                        # [k, n]
        b16 = num.from_float(B.astype(np.float64), FP16)
        W = num.fp_mul(s_k, b16, FP16, rounding)
        C = np.zeros((m, n), np.uint64)
        for k0 in range(0, k, 4):
            p = [num.fp_mul(A[:, k0 + t, None], W[None, k0 + t, :], FP16, rounding)
                 for t in range(4)]
            stats["overflow_products"] += int(sum(_is_inf_nan(x, fmt).sum() for x in p))
            C = sum_tree(p, C, "fp16", rounding)
        stats["overflow_psum"] = int(_is_inf_nan(C, fmt).sum())
        return (C, stats) if return_stats else C
    mode, acc = _flow_config(flow)
    fmt = acc_format(acc)
    words = pack_n(B, wbits)                                       # [k, n // L]
    L = lanes_for(wbits)
    int2 = 1 if wbits == 2 else 0
    K = correction_constant(mode, wbits)
    K_enc = num.from_float(np.float64(K), fmt)
    out = np.zeros((m, n), np.uint64)
    for g in range(k // gk):
        P = np.zeros((m, n), np.uint64)
        S = np.zeros(m, np.uint64)
        for k0 in range(g * gk, (g + 1) * gk, 4):
            prods = []
            for t in range(4):
                pr = products_to_acc(np.broadcast_to(A[:, k0 + t, None], (m, n // L)),
                                     np.broadcast_to(words[None, k0 + t, :], (m, n // L)),
                                     int2, mode=mode, acc=acc, rounding=rounding,
                                     wbits=str(wbits))
                prods.append(pr.reshape(m, n))
                stats["overflow_products"] += int(_is_inf_nan(prods[-1], fmt).sum())
            P = sum_tree(prods, P, acc, rounding)
            S = sum_tree([widen(A[:, k0 + t], acc) for t in range(4)], S, acc, rounding)
        stats["overflow_psum"] += int(_is_inf_nan(P, fmt).sum())
        t_ = num.fp_mul(np.broadcast_to(K_enc, S.shape), S, fmt, rounding)
        stats["overflow_S"] += int(_is_inf_nan(t_, fmt).sum())
        neg_t = t_[:, None] ^ np.uint64(1 << (fmt.width - 1))      # P − t = P + (−t)
        u = num.fp_add(P, neg_t, fmt, rounding)
        v = num.fp_mul(widen(s_full[g][None, :], acc), u, fmt, rounding)
        out = num.fp_add(out, v, fmt, rounding)
    return (out, stats) if return_stats else out


def _is_inf_nan(x, fmt):
    x = np.asarray(x, dtype=np.uint64)
    e = (x >> np.uint64(fmt.man_bits)) & np.uint64(fmt.exp_all_ones)
    return e == fmt.exp_all_ones


def gemm_exact(A, B, scales, *, group=(128, 1)):
    """Exact Σ_k A[m,k]·s[g,n]·B[k,n] (integer arithmetic), converted once to float64.

    Every finite FP16 value is an integer multiple of 2^-24, so A·2^24 and s·2^24 are integers
    and the whole sum is an exact (big) integer times 2^-48.
    """
    A = np.asarray(A, dtype=np.uint64)
    B = np.asarray(B, dtype=np.int64)
    gk, gn = group
    A_int = _fp16_times_2_24(A)
    s_int = _fp16_times_2_24(np.asarray(scales, dtype=np.uint64))
    s_int = np.repeat(np.repeat(s_int, gk, axis=0), gn, axis=1)       # [k, n]
    W = B.astype(object) * s_int
    tot = A_int.dot(W)
    return np.vectorize(lambda v: float(Fraction(int(v), 1 << 48)), otypes=[np.float64])(tot)


def _fp16_times_2_24(x):
    s, m, e, is_nan, is_inf = num.decode(x, FP16)
    if np.any(is_nan | is_inf):
        raise ValueError("pacq: exact references need finite FP16 values")
    v = np.where(s == 1, -m, m).astype(object)
    return v * np.vectorize(lambda k: 1 << int(k), otypes=[object])(e + 24)
