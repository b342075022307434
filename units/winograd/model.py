"""Golden models of the Winograd family (Yan, Wang, Chu, PPoPP'20;
../shared/papers/002_winograd.md).  numpy and :mod:`tcgen.hw.numeric` only -- no Amaranth --
so they can be used on their own.  This docstring is the specification the RTL follows: every
rounding point below is one in the RTL, in the same order.  Tests: tb/test_winograd_model.py.

Convolution (:func:`direct_conv`, :func:`direct_conv_exact`)
    Input I[N, C, H, W] (or one image [C, H, W]), filters F[K, C, 3, 3], stride 1, zero padding
    ``pad`` (default 1) on every side, cross-correlation (no flip):
    ``O[n, k, h, w] = Σ_{c, r, s} I[n, c, h + r − pad, w + s − pad] · F[k, c, r, s]`` (zero
    outside the image), O[N, K, H', W'] with H' = H + 2·pad − 2, W' = W + 2·pad − 2 (≥ 1).
    :func:`direct_conv` is float64 (numpy's order; the tolerance reference);
    :func:`direct_conv_exact` is exact (int64 / Python ints for integer data, Fractions for
    floats).  :func:`winograd_ref64` is the Winograd matrix form in float64.

Tiling (:func:`tile_input`, :func:`untile`)
    F(m×m, 3×3), m ∈ {2, 4}.  Output tiles m×m: T_h = ⌈H'/m⌉ by T_w = ⌈W'/m⌉ tiles; output tile
    (i, j) covers O rows m·i .. m·i + m − 1 and columns m·j .. m·j + m − 1.  Its input tile d is
    the (m+2)×(m+2) window of the padded image starting at padded row m·i, column m·j (stride m,
    neighbours overlap by 2); d is +0 (integer 0) outside the image -- in the padding and past
    the bottom/right edge when H' or W' is not a multiple of m.  The last tile row/column is
    computed in full and cropped (the crop mask keeps rows < H', columns < W').  So a map
    smaller than one tile is one zero-filled tile, cropped.

Transforms: separable adder networks (:func:`itf`, :func:`ftf`, :func:`otf`)
    Every 2-D transform ``X ↦ M X Mᵀ`` is two passes of one 1-D network y = M·x: first the
    **column pass** (the network applied to every column X[:, j], giving t = M X), then the
    **row pass** (applied to every row t[i, :], giving t Mᵀ).  In floating point each listed
    '+' / '−' is one correctly rounded IEEE add (RNE) in the transform format (a − b = a + (−b),
    the sign of b flipped); ``2^k·v`` is exact (an exponent increment; it overflows to ±inf
    like any IEEE operation) and ``½v`` is a correctly rounded multiply by 0.5 -- exact unless
    the result is subnormal with a lost last bit, where it rounds to nearest-even (FP16:
    ½·2^−24 → +0, ½·3·2^−24 → 2^−23).  Two-term adds are written ``a ± b``; IEEE RNE
    addition is commutative (also for zeros, inf and NaN), so only the association of three or
    more terms matters, and that is given by the brackets / named intermediates.

    ITF, Î = Bᵀ d B.  F(2,3), x0..x3 → y0..y3 (4 adds / pass, one rounding per output):
    ``y0 = x0 − x2,  y1 = x1 + x2,  y2 = x2 − x1,  y3 = x1 − x3``.
    F(4,3), x0..x5 → y0..y5 (14 adds / pass, shared terms, two roundings per output)::

        a = x4 + x3   b = x1 + x2   c = x4 − x3   d = x1 − x2
        e = x4 − x2   f = x1 − x3   g = x0 − x2   h = x5 − x3
        y0 = 4g + e   y1 = a − 4b   y2 = c + 4d   y3 = e − 2f   y4 = e + 2f   y5 = 4f + h

    (the ×5 entries of Bᵀ never appear as a multiply: 4x0 − 5x2 + x4 = 4(x0 − x2) + (x4 − x2)).

    FTF, F̂ = G g Gᵀ (``ftf="network"``, F(2,3) only, the default there), x0..x2 → y0..y3
    (3 adds + 2 halvings / pass; ×½ applied after the add)::

        s = x0 + x2   y0 = x0   y1 = ½(s + x1)   y2 = ½(s − x1)   y3 = x2

    Same values as the paper's t = g0 + g2, h = ½g1, FFMA(½, t, ±h) except in the subnormal
    range.  ``ftf="exact"`` (the only FTF of F(4,3), optional for F(2,3)): the FTF is offline
    (weights are static), so each F̂ element is the exact value Σ G[i,a]·g[a,b]·G[j,b]
    rounded once (RNE) to the transform format; an exact zero is +0 (whatever the signs of the
    zeros in g); specials as an IEEE sum of the terms with a non-zero coefficient (a NaN term,
    or +inf and −inf terms → NaN; else an infinite term → ±inf; zero coefficients never meet
    the data, so 0·inf does not arise).

    OTF, O = Aᵀ Ô A, in the accumulation format.  F(2,3), x0..x3 → y0, y1 (4 adds / pass)::

        y0 = (x0 + x1) + x2      y1 = (x1 − x2) − x3

    F(4,3), x0..x5 → y0..y3 (10 adds / pass)::

        a = x1 + x2   b = x1 − x2   c = x3 + x4   d = x3 − x4
        y0 = (a + c) + x0   y1 = b + 2d   y2 = a + 4c   y3 = (b + 8d) + x5

    Then the crop (:func:`untile`).

EWMM: 16 / 36 independent GEMM lanes (:func:`ewmm`)
    For every lane ℓ = (x, y) of the (m+2)² transformed tile (ℓ = x·(m+2) + y), every image n
    and tile position p: ``Ô[n, k, p, ℓ] = Σ_c Î[n, c, p, ℓ] · F̂[k, c, ℓ]`` -- (m+2)²
    batched GEMMs [K × C]·[C × N·T_h·T_w]; nothing crosses lanes before the OTF.  Order: c
    ascending in chunks of four, one DP-4 per chunk (:func:`tcgen.hw.numeric.dot4`, the
    codebase's DP-4, tcgen.hw.dot)::

        acc_0 = −0;   acc_{j+1} = ((p_4j + p_4j+1) + (p_4j+2 + p_4j+3)) + acc_j

    every '+' one RNE rounding in the accumulation format; Ô = acc_⌈C/4⌉.  C not a multiple of
    4 is padded with channels whose operands are (Î, F̂) = (−0, +0): their product is −0, the
    additive identity (x + (−0) = x for every x, −0 included), so the padding is never
    observable, not even in the sign of a zero; the initial −0 is invisible the same way.  A
    lane whose products are all −0 gives −0 (e.g. Î = +0 against negative F̂).

Direct convolution with the RTL's rounding points (:func:`direct_tile`)
    The baseline of the direct_conv3x3 unit: one output tile position, the m×m outputs of
    the (m+2)×(m+2) input tiles d[c] (as :func:`tile_input` makes them), no transforms.
    Output (k, i, j) is the dot product of the 9·C terms d[c][i + r][j + s]·g[k][c][r][s],
    in the pinned order **c-major, then r, then s** (term t = 9c + 3r + s), in chunks of four
    through the DP-4 (:func:`tcgen.hw.numeric.dot4`) -- the EWMM's chain::

        acc_0 = −0;   acc_{j+1} = ((p_4j + p_4j+1) + (p_4j+2 + p_4j+3)) + acc_j

    with the EWMM's formats (data = transform format in every FP mode; products and
    accumulation as :func:`formats` gives them), ⌈9C/4⌉ chunks, and a last partial chunk
    padded with (−0, +0) terms (invisible, as in the EWMM).  Its float64 counterpart is
    :func:`direct_conv`; the a-priori bound is the dot product's γ_k·Σ|d·g| with k =
    (1 if products round) + 2 + ⌈9C/4⌉ roundings on the longest path (finite, no underflow).

Number modes (``mode``, :data:`MODES`, :func:`formats`)
    =========  =======  =========  ============================  ===========  ======
    mode       data     ITF, FTF   products                      EWMM, OTF    output
    =========  =======  =========  ============================  ===========  ======
    fp32       FP32     FP32       FP32 × FP32 rounded to FP32   FP32         FP32
    fp16       FP16     FP16       FP16 × FP16 exact in FP32     FP32         FP32
    fp16acc    FP16     FP16       FP16 × FP16 rounded to FP16   FP16         FP16
    int        signed   exact      exact                         exact        exact
    =========  =======  =========  ============================  ===========  ======

    ("rounded" products: dot4's ``product="rounded"``; "exact": ``product="exact"``.)  FP
    inputs and outputs are encodings (uint64 arrays; :func:`encode_input`,
    :func:`decode_output`); subnormals are kept (no FTZ), every NaN is the canonical one,
    everything rounds RNE.

Integer variant (``mode="int"``; :func:`int_widths`)
    Signed ``data_bits`` data and ``weight_bits`` weights, exact integer arithmetic everywhere,
    the same ITF/OTF networks, and the FTF scaled to integers: s·G with s = 2 for F(2,3) (2G)
    and s = 24 for F(4,3) (24G), x0..x2 → y0..y3 / y0..y5::

        2G:   s = x0 + x2   y0 = 2x0   y1 = s + x1   y2 = s − x1   y3 = 2x2
        24G:  y0 = 4x0 + 2x0   s = x0 + x2   y1 = −4(s + x1)   y2 = 4(x1 − s)
              a = x0 + 4x2     y3 = a + 2x1   y4 = a − 2x1   y5 = 16x2 + 8x2

    so Ô and the OTF result are s² times the true values, and the output is the OTF result
    divided exactly by s² (F(2,3): an exact arithmetic >>2; F(4,3): ÷576, exact but not a
    shift).  :func:`int_widths` gives the value range and two's-complement width of every
    stage (every node of every pass included): exact and reachable for the ITF, FTF, product
    and accumulator (per lane; partial sums of the DP-4 order lie inside C·[p_lo, p_hi]),
    a safe interval bound for the OTF passes (the lanes are correlated), the exact direct-
    convolution range for the output.  :func:`winograd_conv` records the range every stage
    reaches and raises ``OverflowError`` if one leaves its computed range (it cannot, for
    in-range inputs).  INT8, F(2,3): ITF [−512, 510] 10 bits, FTF [−1152, 1147] 12 bits,
    products 21 bits, accumulator ≤ 21 + ⌈log2 C⌉ bits (equal at powers of two), the OTF
    passes at most 3 bits more (their interval bound is ≈ 7.1× the accumulator's, per-lane
    ranges; the note's "+4" rounds ×9 up to 16), then >>2.  INT4 / INT2 weights: FTF
    [−72, 67] 8 bits / [−18, 13] 6 bits.  Arithmetic: int64 while a stage's bound (its input's
    largest magnitude times the transform's gain, or C·max|Î|·max|F̂| for the EWMM) stays
    below 2^62, else Python ints (object arrays), so no stage function wraps (until issue 42
    :func:`ewmm` and :func:`otf` worked in int64 and wrapped at 31/32-bit data and weights).

Specials
    Everything is the IEEE thing, operation by operation.  Winograd is not direct convolution
    there: with d0 = d2 = +inf in a column, the ITF computes inf − inf = NaN where direct
    convolution gives +inf.  Even a single +inf becomes ±inf of both signs across the lanes
    and NaN after the OTF: with an all-ones filter F(2,3) gives NaN at 8 of the 9 outputs that
    direct convolution makes +inf (+inf at one), F(4,3) NaN at 24 outputs, also at outputs of
    the same tiles whose direct value is finite.  Overflow: an FP16 ITF overflows for
    |x| > 16376 (F(2,3)), to ±inf.

Error bound (:func:`error_bound`, :func:`path_roundings`, note §4.3)
    ``|O − O_exact| ≤ γ·Σ_c |Aᵀ|[(|G||g_c||G|ᵀ) ⊙ (|Bᵀ||d_c||B|)]|A| + (1 + γ)·U`` per output,
    with γ = Π_stages (1 + u_fmt)^k − 1 over the largest number k of roundings on any path of
    the pinned networks (:func:`path_roundings`; with one format γ ≤ γ_n, n = Σk), and U the
    absolute slack of operations that can underflow (halvings, the exact FTF's rounding,
    rounded products): U = η_t·Σ_c |Aᵀ|(W ⊙ |Bᵀ||d_c||B|)|A| + η_p·C·α, where η is half the
    smallest subnormal, W the FTF's per-lane count of halvings (weighted by what follows
    them) and α the OTF's Σ|coefficients| per output.  Valid for finite results (no
    overflow).  F(2,3) FP32 path: ITF 2 + FTF 4 + product 1 + accumulation ⌈C/4⌉ + 1 + OTF 4.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw import fpint_ref

__all__ = ["MODES", "TILES", "FTF_MODES", "matrices", "formats", "encode_input",
           "decode_output", "networks", "tile_input", "untile", "itf", "ftf", "ewmm", "otf",
           "winograd_conv", "winograd_ref64", "direct_conv", "direct_conv_exact", "direct_tile", "error_bound",
           "path_roundings", "int_widths", "int_scale", "op_counts", "amplification", "rel_rms",
           "pacq_ewmm_widths", "ewmm_pacq", "PACQ_ACT_BITS"]

#: the number modes (module docstring)
MODES = ("fp32", "fp16", "fp16acc", "int")
#: output tile sizes m of F(m×m, 3×3)
TILES = (2, 4)
#: how the FP filter transform rounds: the pinned network (F(2,3)) or exact, rounded once
FTF_MODES = ("network", "exact")

_FMT = {
    "fp32": {"data": "fp32", "transform": "fp32", "product": "rounded", "acc": "fp32",
             "out": "fp32"},
    "fp16": {"data": "fp16", "transform": "fp16", "product": "exact", "acc": "fp32",
             "out": "fp32"},
    "fp16acc": {"data": "fp16", "transform": "fp16", "product": "rounded", "acc": "fp16",
                "out": "fp16"},
}
_SCALE = {2: 2, 4: 24}                   # integer FTF: s·G
_DP = 4                                  # the DP-4's width

_F = Fraction
_MATS = {
    2: {"BT": ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
        "G": ((1, 0, 0), (_F(1, 2), _F(1, 2), _F(1, 2)), (_F(1, 2), _F(-1, 2), _F(1, 2)),
              (0, 0, 1)),
        "AT": ((1, 1, 1, 0), (0, 1, -1, -1))},
    4: {"BT": ((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0),
               (0, -2, -1, 2, 1, 0), (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1)),
        "G": ((_F(1, 4), 0, 0), (_F(-1, 6), _F(-1, 6), _F(-1, 6)),
              (_F(-1, 6), _F(1, 6), _F(-1, 6)), (_F(1, 24), _F(1, 12), _F(1, 6)),
              (_F(1, 24), _F(-1, 12), _F(1, 6)), (0, 0, 1)),
        "AT": ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0),
               (0, 1, -1, 8, -8, 1))},
}

# -- the pinned 1-D networks ---------------------------------------------------------------------
# (ops, outputs): an op is (dst, kind, a, b) with kind "add" (a + b), "sub" (a − b), "shl"
# (a·2^b, b an int), "half" (a/2, b None), "neg" (−a, b None); x0.. are the inputs; an output
# may name an input (a wire).
_NETS = {
    ("itf", 2): ((("y0", "sub", "x0", "x2"), ("y1", "add", "x1", "x2"),
                  ("y2", "sub", "x2", "x1"), ("y3", "sub", "x1", "x3")),
                 ("y0", "y1", "y2", "y3")),
    ("itf", 4): ((("a", "add", "x4", "x3"), ("b", "add", "x1", "x2"), ("c", "sub", "x4", "x3"),
                  ("d", "sub", "x1", "x2"), ("e", "sub", "x4", "x2"), ("f", "sub", "x1", "x3"),
                  ("g", "sub", "x0", "x2"), ("h", "sub", "x5", "x3"),
                  ("g4", "shl", "g", 2), ("b4", "shl", "b", 2), ("d4", "shl", "d", 2),
                  ("f2", "shl", "f", 1), ("f4", "shl", "f", 2),
                  ("y0", "add", "g4", "e"), ("y1", "sub", "a", "b4"), ("y2", "add", "c", "d4"),
                  ("y3", "sub", "e", "f2"), ("y4", "add", "e", "f2"), ("y5", "add", "f4", "h")),
                 ("y0", "y1", "y2", "y3", "y4", "y5")),
    ("ftf", 2): ((("s", "add", "x0", "x2"), ("u", "add", "s", "x1"), ("v", "sub", "s", "x1"),
                  ("y1", "half", "u", None), ("y2", "half", "v", None)),
                 ("x0", "y1", "y2", "x2")),
    ("ftf_int", 2): ((("s", "add", "x0", "x2"), ("y0", "shl", "x0", 1),
                      ("y1", "add", "s", "x1"), ("y2", "sub", "s", "x1"),
                      ("y3", "shl", "x2", 1)),
                     ("y0", "y1", "y2", "y3")),
    ("ftf_int", 4): ((("x0_4", "shl", "x0", 2), ("x0_2", "shl", "x0", 1),
                      ("y0", "add", "x0_4", "x0_2"),
                      ("s", "add", "x0", "x2"), ("u", "add", "s", "x1"), ("nu", "neg", "u", None),
                      ("y1", "shl", "nu", 2), ("v", "sub", "x1", "s"), ("y2", "shl", "v", 2),
                      ("x2_4", "shl", "x2", 2), ("a", "add", "x0", "x2_4"),
                      ("x1_2", "shl", "x1", 1), ("y3", "add", "a", "x1_2"),
                      ("y4", "sub", "a", "x1_2"),
                      ("x2_16", "shl", "x2", 4), ("x2_8", "shl", "x2", 3),
                      ("y5", "add", "x2_16", "x2_8")),
                     ("y0", "y1", "y2", "y3", "y4", "y5")),
    ("otf", 2): ((("s", "add", "x0", "x1"), ("y0", "add", "s", "x2"),
                  ("t", "sub", "x1", "x2"), ("y1", "sub", "t", "x3")),
                 ("y0", "y1")),
    ("otf", 4): ((("a", "add", "x1", "x2"), ("b", "sub", "x1", "x2"), ("c", "add", "x3", "x4"),
                  ("d", "sub", "x3", "x4"), ("ac", "add", "a", "c"), ("y0", "add", "ac", "x0"),
                  ("d2", "shl", "d", 1), ("y1", "add", "b", "d2"), ("c4", "shl", "c", 2),
                  ("y2", "add", "a", "c4"), ("d8", "shl", "d", 3), ("bd", "add", "b", "d8"),
                  ("y3", "add", "bd", "x5")),
                 ("y0", "y1", "y2", "y3")),
}


# -- backends: what one network op means ----------------------------------------------------------
class _FPOps:
    """IEEE operations in one format (RNE)."""

    def __init__(self, fmt: str):
        self.fmt = fmt
        f = num.get_format(fmt)
        self.sign = np.uint64(f.sign_mask)

    def add(self, a, b):
        return num.fp_add(a, b, self.fmt)

    def sub(self, a, b):
        return num.fp_add(a, np.asarray(b, dtype=np.uint64) ^ self.sign, self.fmt)

    def shl(self, a, k):
        return num.fp_scale_pow2(a, k, self.fmt)

    def half(self, a):
        return num.fp_scale_pow2(a, -1, self.fmt)

    def neg(self, a):
        return np.asarray(a, dtype=np.uint64) ^ self.sign


class _IntOps:
    """Exact integer arithmetic (int64, or Python ints in object arrays); the integer networks
    have no halving."""

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def shl(self, a, k):
        return a * (1 << k)

    def neg(self, a):
        return -a


class _DepthOps:
    """The number of relative roundings on the longest path to each node."""

    def add(self, a, b):
        return np.maximum(a, b) + 1

    sub = add

    def shl(self, a, k):
        return a

    def half(self, a):
        return a

    def neg(self, a):
        return a


class _BoundOps:
    """Per node the Σ|coefficients| of its inputs (|x| ≤ 1 in, the node's bound out)."""

    def add(self, a, b):
        return a + b

    sub = add

    def shl(self, a, k):
        return a * (1 << k)

    def half(self, a):
        return a

    def neg(self, a):
        return a


class _UnderflowOps(_BoundOps):
    """W: the halvings feeding each node, weighted by the scaling after them (each may add an
    absolute error ≤ η): :class:`_BoundOps`' sums, a halving adding one."""

    def half(self, a):
        return a * 0.5 + 1.0


def _run(net, xs, ops, record=None):
    """One 1-D network on the vectors ``xs`` (a list of arrays, one per input)."""
    body, outs = net
    env = {f"x{i}": x for i, x in enumerate(xs)}
    for dst, kind, a, b in body:
        if kind in ("add", "sub"):
            v = getattr(ops, kind)(env[a], env[b])
        elif kind == "shl":
            v = ops.shl(env[a], b)
        else:
            v = getattr(ops, kind)(env[a])
        env[dst] = v
        if record is not None:
            record(v)
    return [env[o] for o in outs]


def _apply2d(net, X, ops, record_col=None, record_row=None):
    """X[..., R, S] -> the column pass (the network on every column), then the row pass."""
    T = np.stack(_run(net, [X[..., i, :] for i in range(X.shape[-2])], ops, record_col),
                 axis=-2)
    return np.stack(_run(net, [T[..., :, j] for j in range(T.shape[-1])], ops, record_row),
                    axis=-1)


# -- argument checks -----------------------------------------------------------------------------
def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_m(m, who):
    if not _is_int(m) or int(m) not in TILES:
        raise ValueError(f"{who}: m must be 2 or 4 (F(2x2,3x3) or F(4x4,3x3)), got {m!r}")
    return int(m)


def _check_mode(mode, who, *, fp_only=False):
    allowed = MODES[:3] if fp_only else MODES
    if mode not in allowed:
        raise ValueError(f"{who}: mode must be one of {', '.join(allowed)}, got {mode!r}")
    return mode


def _check_pad(pad, who):
    if not _is_int(pad) or pad < 0:
        raise ValueError(f"{who}: pad must be an integer >= 0, got {pad!r}")
    return int(pad)


def _check_width(bits, name, who):
    if not _is_int(bits) or not 2 <= bits <= 32:
        raise ValueError(f"{who}: {name} must be an integer in 2..32, got {bits!r}")
    return int(bits)


def _check_ftf(ftf, m, mode, who):
    if ftf is None:
        return "network" if (m == 2 or mode == "int") else "exact"
    if ftf not in FTF_MODES:
        raise ValueError(f"{who}: ftf must be one of {', '.join(FTF_MODES)} or None, got "
                         f"{ftf!r}")
    if mode == "int" and ftf != "network":
        raise ValueError(f"{who}: ftf must be 'network' (or None) in mode 'int': the integer "
                         f"FTF (s·G) is exact, got {ftf!r}")
    if mode != "int" and m == 4 and ftf == "network":
        raise ValueError(f"{who}: ftf='network' exists for F(2,3) only: the F(4,3) FP filter "
                         f"transform is offline ('exact'), got {ftf!r} with m=4")
    return ftf


def _encodings(x, fmt, name, who):
    """``fmt`` encodings as uint64; floats are refused (they would be truncated)."""
    x = np.asarray(x)
    if x.dtype.kind not in "ui":
        raise ValueError(f"{who}: {name} must hold {fmt} encodings (an integer array), got "
                         f"dtype {x.dtype}")
    if x.size and (int(x.min()) < 0 or int(x.max()) >> num.get_format(fmt).width):
        raise ValueError(f"{who}: {name} holds a value that is not a {fmt} encoding")
    return x.astype(np.uint64)


def _ints(x, bits, name, who):
    x = np.asarray(x)
    if x.dtype.kind not in "ui" and not (x.dtype == object and all(
            _is_int(v) for v in x.reshape(-1))):
        raise ValueError(f"{who}: {name} must be an integer array in mode 'int', got dtype "
                         f"{x.dtype}")
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if x.size and (int(x.min()) < lo or int(x.max()) > hi):
        raise ValueError(f"{who}: {name} must lie in [{lo}, {hi}] ({bits}-bit signed), got "
                         f"[{int(x.min())}, {int(x.max())}]")
    return x.astype(np.int64)


def _shapes(I, F, pad, who):
    """(I as [N, C, H, W], F [K, C, 3, 3], single_image, H', W')."""
    if I.ndim not in (3, 4):
        raise ValueError(f"{who}: I must be [N, C, H, W] or [C, H, W], got shape {I.shape}")
    single = I.ndim == 3
    if single:
        I = I[None]
    if F.ndim != 4 or F.shape[2:] != (3, 3):
        raise ValueError(f"{who}: F must be [K, C, 3, 3], got shape {F.shape}")
    if F.shape[1] != I.shape[1]:
        raise ValueError(f"{who}: F has C={F.shape[1]} channels but I has C={I.shape[1]}")
    if I.shape[1] < 1 or F.shape[0] < 1 or I.shape[0] < 1:
        raise ValueError(f"{who}: N, C and K must be >= 1, got I {I.shape}, F {F.shape}")
    Ho, Wo = I.shape[2] + 2 * pad - 2, I.shape[3] + 2 * pad - 2
    if Ho < 1 or Wo < 1:
        raise ValueError(f"{who}: the output would be empty ({Ho}×{Wo}): H + 2·pad and "
                         f"W + 2·pad must be >= 3, got H={I.shape[2]}, W={I.shape[3]}, "
                         f"pad={pad}")
    return I, F, single, Ho, Wo


# -- matrices, formats ---------------------------------------------------------------------------
def matrices(m: int = 2, *, exact: bool = False):
    """(Bᵀ, G, Aᵀ) of F(m×m, 3×3): float64 arrays, or with ``exact=True`` object arrays of
    Fractions (note §1.1)."""
    m = _check_m(m, "matrices")
    out = []
    for key in ("BT", "G", "AT"):
        rows = [[Fraction(v) for v in r] for r in _MATS[m][key]]
        a = np.array(rows, dtype=object)
        out.append(a if exact else a.astype(np.float64))
    return tuple(out)


def formats(mode: str) -> dict:
    """The formats of a floating-point ``mode``: data, transform, product ("exact" /
    "rounded"), acc, out (module docstring)."""
    return dict(_FMT[_check_mode(mode, "formats", fp_only=True)])


def encode_input(x, mode: str) -> np.ndarray:
    """Real values -> encodings of ``mode``'s data format (RNE)."""
    return num.from_float(np.asarray(x, dtype=np.float64), formats(mode)["data"])


def decode_output(bits, mode: str) -> np.ndarray:
    """Output encodings of ``mode`` -> exact float64 values."""
    return num.to_float(bits, formats(mode)["out"])


def networks(m: int = 2) -> dict:
    """The pinned 1-D networks of F(m×m, 3×3) (``itf``, ``ftf`` (F(2,3) only), ``ftf_int``,
    ``otf``) as (ops, outputs); see the module docstring."""
    m = _check_m(m, "networks")
    return {kind: _NETS[(kind, m)] for kind in ("itf", "ftf", "ftf_int", "otf")
            if (kind, m) in _NETS}


# -- tiling --------------------------------------------------------------------------------------
def tile_input(I, m: int = 2, pad: int = 1) -> np.ndarray:
    """I[..., H, W] -> input tiles [..., T_h, T_w, m+2, m+2] (zero outside the image; any
    dtype: FP encodings get +0)."""
    m = _check_m(m, "tile_input")
    pad = _check_pad(pad, "tile_input")
    I = np.asarray(I)
    if I.ndim < 2:
        raise ValueError(f"tile_input: I needs at least 2 dimensions [..., H, W], got {I.shape}")
    H, W = I.shape[-2:]
    Ho, Wo = H + 2 * pad - 2, W + 2 * pad - 2
    if Ho < 1 or Wo < 1:
        raise ValueError(f"tile_input: the output would be empty: H + 2·pad and W + 2·pad must "
                         f"be >= 3, got H={H}, W={W}, pad={pad}")
    Th, Tw = -(-Ho // m), -(-Wo // m)
    P = np.zeros(I.shape[:-2] + (Th * m + 2, Tw * m + 2), dtype=I.dtype)
    P[..., pad:pad + H, pad:pad + W] = I
    win = np.lib.stride_tricks.sliding_window_view(P, (m + 2, m + 2), axis=(-2, -1))
    return np.ascontiguousarray(win[..., ::m, ::m, :, :])


def untile(tiles, Ho: int, Wo: int) -> np.ndarray:
    """Output tiles [..., T_h, T_w, m, m] -> [..., H', W'] (the crop)."""
    t = np.asarray(tiles)
    if t.ndim < 4 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"untile: tiles must be [..., T_h, T_w, m, m], got {t.shape}")
    Th, Tw, m = t.shape[-4], t.shape[-3], t.shape[-1]
    if not (_is_int(Ho) and _is_int(Wo) and 1 <= Ho <= Th * m and 1 <= Wo <= Tw * m
            and Ho > (Th - 1) * m and Wo > (Tw - 1) * m):
        raise ValueError(f"untile: {Th}×{Tw} tiles of {m}×{m} do not crop to {Ho!r}×{Wo!r}")
    full = np.swapaxes(t, -3, -2).reshape(t.shape[:-4] + (Th * m, Tw * m))
    return full[..., :Ho, :Wo]


# -- the stages ----------------------------------------------------------------------------------
def _itf(d, m, mode, record=None):
    ops = _IntOps() if mode == "int" else _FPOps(_FMT[mode]["transform"])
    rc, rr = (record("itf_col"), record("itf")) if record else (None, None)
    return _apply2d(_NETS[("itf", m)], d, ops, rc, rr)


def itf(d, m: int = 2, mode: str = "fp32") -> np.ndarray:
    """Î = Bᵀ d B on input tiles d[..., m+2, m+2] (encodings of the data format, or integers
    in mode "int"), by the pinned network (module docstring)."""
    m = _check_m(m, "itf")
    mode = _check_mode(mode, "itf")
    d = _tile_arg(d, m + 2, m + 2, mode, "d", "itf", "itf", m)
    return _itf(d, m, mode)


def _gain(kind: str, m: int) -> int:
    """A bound on |node| / max|input| over every node of the 2-D transform ``kind`` (itf,
    ftf_int, otf): the largest 1-D node bound squared."""
    net = _NETS[(kind, m)]
    seen = [1]
    _run(net, [1] * (3 if kind.startswith("ftf") else m + 2), _BoundOps(), seen.append)
    return max(seen) ** 2


def _absmax(x) -> int:
    return int(np.abs(np.asarray(x).astype(object)).max(initial=0)) if np.size(x) else 0


def _exact_ints(x, bound: int):
    """An integer array in the arithmetic that holds ``bound`` (a bound on every value the
    stage makes from x) exactly: int64 while bound < 2^62, else Python ints (object).  Object
    arrays stay Python ints.  (int64 wrapped silently: issue 42, wino_conv at 31/32 bits.)"""
    if x.dtype == object:
        return x
    return x.astype(np.int64) if bound < (1 << 62) else x.astype(object)


def _tile_arg(x, r, s, mode, name, who, kind=None, m=2):
    x = np.asarray(x)
    if x.ndim < 2 or x.shape[-2:] != (r, s):
        raise ValueError(f"{who}: {name} must be [..., {r}, {s}], got shape {x.shape}")
    if mode == "int":
        if x.dtype.kind not in "ui" and not (x.dtype == object and all(
                _is_int(v) for v in x.reshape(-1))):
            raise ValueError(f"{who}: {name} must be an integer array in mode 'int', got "
                             f"dtype {x.dtype}")
        return _exact_ints(x, _absmax(x) * _gain(kind, m))
    return _encodings(x, _FMT[mode]["data"] if name in ("d", "g") else
                      _FMT[mode]["acc"], name, who)


def _ftf(g, m, mode, ftf_mode, record=None):
    if mode == "int":
        rc, rr = (record("ftf_col"), record("ftf")) if record else (None, None)
        return _apply2d(_NETS[("ftf_int", m)], g, _IntOps(), rc, rr)
    fmt = _FMT[mode]["transform"]
    if ftf_mode == "network":
        return _apply2d(_NETS[("ftf", 2)], g, _FPOps(fmt))
    return _ftf_exact(g, m, fmt)


def ftf(g, m: int = 2, mode: str = "fp32", *, ftf: str | None = None) -> np.ndarray:
    """F̂ = G g Gᵀ on filters g[..., 3, 3] -> [..., m+2, m+2]: the pinned network
    (``ftf="network"``, F(2,3)'s default) or exact and rounded once (``"exact"``, F(4,3)'s only
    choice).  Mode "int": the integer s·G network, so the result is s²·F̂ (s = 2, 24)."""
    m = _check_m(m, "ftf")
    mode = _check_mode(mode, "ftf")
    ftf_mode = _check_ftf(ftf, m, mode, "ftf")
    g = _tile_arg(g, 3, 3, mode, "g", "ftf", "ftf_int", m)
    return _ftf(g, m, mode, ftf_mode)


def _ftf_exact(g, m, fmt):
    """Each element of G g Gᵀ exactly, rounded once to ``fmt`` (RNE); IEEE-style specials."""
    F = num.get_format(fmt)
    s = _SCALE[m]
    Gs = (np.array(_MATS[m]["G"], dtype=object) * s).astype(np.int64)      # s·G, integers
    Wc = np.einsum("ia,jb->ijab", Gs, Gs)                                  # s²·G⊗G
    sign, mag, exp, nan, inf = num.decode(g, F, dtype=object)
    e0 = exp.min(axis=(-2, -1), keepdims=True)
    v = np.frompyfunc(lambda mg, k: int(mg) << int(k), 2, 1)(mag, exp - e0)
    v = np.where(sign == 1, -v, v).astype(object)
    X = np.einsum("ijab,...ab->...ij", Wc.astype(object), v)              # exact numerators
    # value = X · 2^e0 / s², s² = 2^t · odd
    s2 = s * s
    t = (s2 & -s2).bit_length() - 1
    odd = s2 >> t
    neg = np.frompyfunc(lambda x: x < 0, 1, 1)(X).astype(bool)
    A = np.frompyfunc(abs, 1, 1)(X)
    ex = np.broadcast_to(e0 - t, X.shape).astype(np.int64)
    if odd != 1:
        k = F.precision + 3 + odd.bit_length()

        def sticky_div(a):
            q, r = divmod(int(a) << k, odd)
            return (q << 1) | (1 if r else 0)
        A = np.frompyfunc(sticky_div, 1, 1)(A)
        ex = ex - k - 1
    # specials, counted over the terms with a non-zero coefficient
    pos, negc, nz = (Wc > 0).astype(np.int64), (Wc < 0).astype(np.int64), (Wc != 0)
    ginf_p = (inf & (sign == 0)).astype(np.int64)
    ginf_n = (inf & (sign == 1)).astype(np.int64)

    def count(c, x):
        return np.einsum("ijab,...ab->...ij", c, x)
    plus = (count(pos, ginf_p) + count(negc, ginf_n)) > 0
    minus = (count(pos, ginf_n) + count(negc, ginf_p)) > 0
    anynan = count(nz.astype(np.int64), nan.astype(np.int64)) > 0
    out = num.round_exact(neg.astype(np.int64), A, ex, F).astype(np.uint64)   # 0 -> +0
    out = np.where(plus, np.uint64(F.inf), out)
    out = np.where(minus, np.uint64(F.inf | F.sign_mask), out)
    return np.where(anynan | (plus & minus), np.uint64(F.nan), out).astype(np.uint64)


def _ewmm(Ih, Fh, mode, record=None, start=None):
    N, C, P, L = Ih.shape
    K = Fh.shape[0]
    J = -(-C // _DP)
    if mode == "int":          # the same DP-4 order, exact; every node recorded
        rp, ra = (record("product"), record("acc")) if record else (None, None)
        out = np.zeros((N, K, P, L), dtype=Ih.dtype) if start is None else \
            np.asarray(start).astype(Ih.dtype)
        for j in range(J):
            p = [Ih[:, None, c] * Fh[None, :, c, None]
                 for c in range(_DP * j, min(C, _DP * j + _DP))]
            while len(p) < _DP:
                p.append(np.zeros_like(p[0]))
            s01, s23 = p[0] + p[1], p[2] + p[3]
            t = s01 + s23
            out = t + out
            if record:
                for v in p:
                    rp(v)
                for v in (s01, s23, t, out):
                    ra(v)
        return out
    f = _FMT[mode]
    data, acc = num.get_format(f["data"]), num.get_format(f["acc"])
    extra = J * _DP - C
    if extra:
        Ih = np.concatenate([Ih, np.full((N, extra, P, L), data.sign_mask, np.uint64)], axis=1)
        Fh = np.concatenate([Fh, np.zeros((K, extra, L), np.uint64)], axis=1)
    a = Ih.reshape(N, J, _DP, P, L).transpose(0, 1, 3, 4, 2)          # [N, J, P, L, 4]
    b = Fh.reshape(K, J, _DP, L).transpose(0, 1, 3, 2)                # [K, J, L, 4]
    out = np.full((N, K, P, L), acc.sign_mask, dtype=np.uint64) if start is None else \
        np.asarray(start, dtype=np.uint64)                             # −0, or the start
    for j in range(J):
        out = num.dot4(a[:, None, j], b[None, :, j, None], out, f["data"], f["acc"],
                       f["product"])
    return out


#: the parallel multiplier's activation side: PacQ's INT11 array (the FP16 significand, 11 bits)
PACQ_ACT_BITS = 11


def pacq_ewmm_widths(m: int = 2, data_bits: int = 8, weight_bits: int = 8, C: int = 1, *,
                     lane_bits: int | None = None) -> dict:
    """The widths of the integer EWMM on PacQ's parallel multiplier (:func:`ewmm_pacq`,
    docs/winograd.md "The INT EWMM on PacQ's parallel multiplier"), from
    :func:`int_widths`: ``act_bits`` (the magnitude |Î|: the array's activation side, at most
    PacQ's 11), ``lane_bits`` (the smallest lane of the parallel multiplier, 2, 4, 8 or 16, whose
    offset-binary code y = s²·F̂ + 2^(lane_bits−1) holds every transformed weight), ``wbits``
    (its lane configuration, :mod:`tcgen.hw.fpint_ref`), ``lanes`` (filters per 16-bit word),
    ``acc_bits`` (the lane accumulators, modulo 2^acc_bits: int_widths' ``acc``), ``sa_bits``
    (the ΣÎ accumulator, modulo 2^(acc_bits − lane_bits + 1): the correction shifts it by
    lane_bits − 1).  ValueError when |Î| needs more than 11 bits or a weight more than 16.
    ``lane_bits`` forces a lane width (4: PacQ's INT4 lanes, ``ewmm=pacq4``): narrower than
    ``ftf_bits``, the codes wrap and the EWMM is wrong (``exact`` False)."""
    w = int_widths(m, data_bits, weight_bits, C)
    ilo, ihi, _ = w["itf"]
    act = max(-ilo, ihi).bit_length()
    if act > PACQ_ACT_BITS:
        raise ValueError(
            f"ewmm=pacq: |Î| reaches {max(-ilo, ihi)} ({act} bits) at F({m},3) with "
            f"{data_bits}-bit data; PacQ's parallel multiplier takes an {PACQ_ACT_BITS}-bit "
            f"activation significand (F(2,3): data_bits <= 9, F(4,3): data_bits <= 5)")
    flo, fhi, fbits = w["ftf"]
    lane = lane_bits or next((b for b in (2, 4, 8, 16) if b >= fbits), None)
    if lane is None:
        raise ValueError(
            f"ewmm=pacq: the transformed weights s²·F̂ span [{flo}, {fhi}] ({fbits} bits) at "
            f"F({m},3) with {weight_bits}-bit weights; the parallel multiplier's widest lane "
            f"is 16 bits (F(4,3): weight_bits <= 6)")
    acc = w["acc"][2]
    return {"act_bits": act, "lane_bits": lane, "wbits": str(lane),
            "lanes": fpint_ref.lanes_of(str(lane)), "acc_bits": acc,
            "sa_bits": max(1, acc - lane + 1), "ftf_bits": fbits, "exact": lane >= fbits}


def _wrap(x, bits):
    """x modulo 2^bits as a signed two's-complement value."""
    x = np.asarray(x, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(x >> (bits - 1) == 1, x - (1 << bits), x)


def ewmm_pacq(I_hat, F_hat, m: int = 2, data_bits: int = 8, weight_bits: int = 8, *,
              lane_bits: int | None = None, record=None) -> np.ndarray:
    """The integer EWMM as ``wino_conv ewmm=pacq`` computes it (mode int only): the s²-scaled
    Ô of :func:`ewmm` (equal to it, value for value), through PacQ's parallel multiplier.

    I_hat [N, C, P, L] (Î, :func:`itf` mode int), F_hat [K, C, L] (s²·F̂, :func:`ftf` mode
    int) -> Ô [N, K, P, L].  Widths :func:`pacq_ewmm_widths` (C = I_hat's).  Per lane ℓ the
    filters go ``lanes`` to a 16-bit word (filter k in lane k mod lanes, as offset-binary codes
    y = s²·F̂ + 2^(b−1), b = lane_bits; filters past K: code 0); the activation is Î's sign and
    magnitude |Î| (act_bits).  Channels in DP-4 chunks of four, ascending (past C: 0): per chunk
    the parallel multiplier (:func:`tcgen.hw.fpint_ref.parallel_int_mul`) gives i = |Î|·y per
    lane; acc += Σ ±i and ΣÎ += Σ Î, both modulo 2^acc_bits / 2^sa_bits (PacQ's offset8 DP-4
    with its ΣA accumulator); then Ô = acc − 2^(b−1)·ΣÎ modulo 2^acc_bits -- exact, since Ô
    itself lies in int_widths' ``acc`` range.  ``record(name, value)`` sees the lane products
    ``i`` (checked against 2^(act_bits + lane_bits)) and the words.  ``lane_bits`` = 4
    (``ewmm=pacq4``): PacQ's INT4 lanes; each code is the low 4 bits of s²·F̂ + 8, so the
    result is the exact EWMM of the weights wrapped to [−8, 7] -- not Winograd's."""
    Ih = np.asarray(I_hat, dtype=np.int64)
    Fh = np.asarray(F_hat, dtype=np.int64)
    N, C, P, n = Ih.shape
    K = Fh.shape[0]
    w = pacq_ewmm_widths(m, data_bits, weight_bits, C, lane_bits=lane_bits)
    b, Lw, aw, sw = w["lane_bits"], w["lanes"], w["acc_bits"], w["sa_bits"]
    ilo, ihi, _ = int_widths(m, data_bits, weight_bits, C)["itf"]
    flo, fhi, _ = int_widths(m, data_bits, weight_bits, C)["ftf"]
    if Ih.size and (Ih.min() < ilo or Ih.max() > ihi):
        raise ValueError(f"ewmm_pacq: I_hat outside the ITF range [{ilo}, {ihi}]")
    if Fh.size and (Fh.min() < flo or Fh.max() > fhi):
        raise ValueError(f"ewmm_pacq: F_hat outside the FTF range [{flo}, {fhi}]")
    G = -(-K // Lw)
    codes = np.zeros((G * Lw, C, n), np.int64)
    codes[:K] = (Fh + (1 << (b - 1))) & ((1 << b) - 1)      # wraps only below ftf_bits
    # words[g, c, ℓ]: filters g·Lw .. g·Lw + Lw − 1, lane j at bits [b·j +: b]
    words = (codes.reshape(G, Lw, C, n) << (b * np.arange(Lw))[None, :, None, None]).sum(axis=1)
    sgn, mag = Ih < 0, np.abs(Ih)
    acc = np.zeros((N, G, P, n, Lw), np.int64)
    sa = np.zeros((N, P, n), np.int64)
    for q in range(-(-C // _DP)):
        for c in range(_DP * q, min(C, _DP * q + _DP)):
            i, _, _ = fpint_ref.parallel_int_mul(mag[:, c, None, :, :], words[None, :, c, None, :],
                                                 w["wbits"])
            if record:
                record("i", i)
                record("word", words[:, c])
            acc = acc + np.where(sgn[:, c, None, :, :, None], -i, i)
            sa = sa + Ih[:, c]
        acc, sa = _wrap(acc, aw), _wrap(sa, sw)        # the DP-4's sums, modulo its widths
    out = _wrap(acc - (sa[:, None, :, :, None] << (b - 1)), aw)      # [N, G, P, n, Lw]
    out = out.transpose(0, 1, 4, 2, 3).reshape(N, G * Lw, P, n)[:, :K]
    return out


def ewmm(I_hat, F_hat, mode: str = "fp32", *, start=None) -> np.ndarray:
    """The element-wise stage as batched GEMM lanes: I_hat [N, C, P, L] (P tile positions, L
    lanes), F_hat [K, C, L] -> Ô [N, K, P, L] in the accumulation format (module docstring:
    ascending c, DP-4 chunks, (−0, +0) padding, −0 start).

    ``start`` (Ô [N, K, P, L], accumulation-format encodings or integers): continue the DP-4
    chain from it instead of −0 -- Ô accumulated over requests (``wino_conv accumulate=true``):
    ewmm(I₂, F₂, start=ewmm(I₁, F₁)) is ewmm over the channels of I₁ then I₂, exactly when I₁'s
    C is a multiple of 4 (the chunks line up); otherwise I₁'s last chunk is padded with
    (−0, +0) channels first -- in floating point a different association from the
    concatenation's; in integers the same value whatever the split."""
    mode = _check_mode(mode, "ewmm")
    Ih, Fh = np.asarray(I_hat), np.asarray(F_hat)
    if Ih.ndim != 4 or Fh.ndim != 3 or Ih.shape[1] != Fh.shape[1] or Ih.shape[3] != Fh.shape[2]:
        raise ValueError(f"ewmm: I_hat must be [N, C, P, L] and F_hat [K, C, L] with equal C "
                         f"and L, got {Ih.shape} and {Fh.shape}")
    want = (Ih.shape[0], Fh.shape[0], Ih.shape[2], Ih.shape[3])
    if start is not None and np.shape(start) != want:
        raise ValueError(f"ewmm: start must be Ô's shape {want}, got {np.shape(start)}")
    if mode == "int":
        for x in (Ih, Fh):
            if x.dtype.kind not in "ui" and not (x.dtype == object and all(
                    _is_int(v) for v in x.reshape(-1))):
                raise ValueError("ewmm: I_hat and F_hat must be integer arrays in mode 'int'")
        bound = _absmax(Ih) * _absmax(Fh) * _DP * -(-Ih.shape[1] // _DP)
        if start is not None:
            start = np.asarray(start)
            if start.dtype.kind not in "ui" and not (start.dtype == object and all(
                    _is_int(v) for v in start.reshape(-1))):
                raise ValueError("ewmm: start must be an integer array in mode 'int'")
            bound += _absmax(start)
        if Ih.dtype == object or Fh.dtype == object or bound >= (1 << 62) or (
                start is not None and start.dtype == object):
            return _ewmm(Ih.astype(object), Fh.astype(object), mode, start=start)
        return _ewmm(Ih.astype(np.int64), Fh.astype(np.int64), mode, start=start)
    t = _FMT[mode]["transform"]
    if start is not None:
        start = _encodings(start, _FMT[mode]["acc"], "start", "ewmm")
    return _ewmm(_encodings(Ih, t, "I_hat", "ewmm"), _encodings(Fh, t, "F_hat", "ewmm"), mode,
                 start=start)


def _otf(Oh, m, mode, record=None):
    ops = _IntOps() if mode == "int" else _FPOps(_FMT[mode]["acc"])
    rc, rr = (record("otf_col"), record("otf")) if record else (None, None)
    return _apply2d(_NETS[("otf", m)], Oh, ops, rc, rr)


def otf(O_hat, m: int = 2, mode: str = "fp32") -> np.ndarray:
    """O = Aᵀ Ô A on Ô[..., m+2, m+2] (accumulation-format encodings) -> [..., m, m] by the
    pinned network.  Mode "int": the s²-scaled result (before the exact division)."""
    m = _check_m(m, "otf")
    mode = _check_mode(mode, "otf")
    Oh = _tile_arg(O_hat, m + 2, m + 2, mode, "O_hat", "otf", "otf", m)
    return _otf(Oh, m, mode)


# -- the whole convolution -----------------------------------------------------------------------
def winograd_conv(I, F, m: int = 2, mode: str = "fp32", pad: int = 1, *,
                  ftf: str | None = None, data_bits: int = 8, weight_bits: int = 8,
                  trace: dict | None = None) -> np.ndarray:
    """Winograd F(m×m, 3×3) convolution with the RTL's rounding points (module docstring).

    I[N, C, H, W] or [C, H, W], F[K, C, 3, 3]: encodings of ``mode``'s data format (FP modes)
    or signed integers of ``data_bits`` / ``weight_bits`` bits (mode "int") -> O[N, K, H', W']
    (or [K, H', W']): output-format encodings, or exact integers.  ``trace`` (a dict) receives
    the stages: ``tiles``, ``itf`` [N, C, T_h, T_w, m+2, m+2], ``ftf`` [K, C, m+2, m+2],
    ``ewmm`` [N, K, T_h, T_w, m+2, m+2], ``otf`` [N, K, T_h, T_w, m, m] and in mode "int"
    ``ranges`` (stage -> (lo, hi) reached) and ``widths`` (:func:`int_widths`)."""
    who = "winograd_conv"
    m = _check_m(m, who)
    mode = _check_mode(mode, who)
    pad = _check_pad(pad, who)
    ftf_mode = _check_ftf(ftf, m, mode, who)
    if trace is not None and not isinstance(trace, dict):
        raise ValueError(f"{who}: trace must be a dict or None, got {type(trace).__name__}")
    I, F = np.asarray(I), np.asarray(F)
    record = None
    if mode == "int":
        data_bits = _check_width(data_bits, "data_bits", who)
        weight_bits = _check_width(weight_bits, "weight_bits", who)
        I = _ints(I, data_bits, "I", who)
        F = _ints(F, weight_bits, "F", who)
    else:
        fmt = _FMT[mode]["data"]
        I = _encodings(I, fmt, "I", who)
        F = _encodings(F, fmt, "F", who)
    I, F, single, Ho, Wo = _shapes(I, F, pad, who)
    N, C = I.shape[:2]
    K = F.shape[0]
    if mode == "int":
        widths = int_widths(m, data_bits, weight_bits, C)
        if max(w[2] for w in widths.values()) > 62:
            I, F = I.astype(object), F.astype(object)
        ranges: dict = {}

        def record(stage):
            def rec(v):
                v = np.asarray(v)
                if v.size:
                    lo, hi = int(v.min()), int(v.max())
                    old = ranges.get(stage, (lo, hi))
                    ranges[stage] = (min(lo, old[0]), max(hi, old[1]))
            return rec
        record("input")(I)
        record("weight")(F)
    d = tile_input(I, m, pad)                                    # [N, C, Th, Tw, m+2, m+2]
    Th, Tw = d.shape[2:4]
    Ih = _itf(d, m, mode, record)
    Fh = _ftf(F, m, mode, ftf_mode, record)                      # [K, C, m+2, m+2]
    L = (m + 2) ** 2
    Oh = _ewmm(Ih.reshape(N, C, Th * Tw, L), Fh.reshape(K, C, L), mode, record)
    Oh = Oh.reshape(N, K, Th, Tw, m + 2, m + 2)
    Ot = _otf(Oh, m, mode, record)
    if mode == "int":
        s2 = _SCALE[m] ** 2
        q, r = Ot // s2, Ot % s2
        if np.any(r != 0):
            raise OverflowError(f"{who}: the OTF result is not a multiple of s² = {s2} (a bug)")
        Ot = q
        record("output")(Ot)
        for stage, (lo, hi) in ranges.items():
            wlo, whi, bits = widths[stage]
            if lo < wlo or hi > whi:
                raise OverflowError(f"{who}: stage {stage} reached [{lo}, {hi}], outside its "
                                    f"computed range [{wlo}, {whi}] ({bits} bits) -- a bug")
    O = untile(Ot, Ho, Wo)
    if trace is not None:
        trace.update(tiles=d, itf=Ih, ftf=Fh, ewmm=Oh, otf=Ot)
        if mode == "int":
            trace.update(ranges=ranges, widths=widths)
    return O[0] if single else O


def winograd_ref64(I, F, m: int = 2, pad: int = 1) -> np.ndarray:
    """Winograd in float64 matrix form (Bᵀ d B, G g Gᵀ, Σ_c, Aᵀ · A; numpy's order) on real
    values I[N, C, H, W] or [C, H, W], F[K, C, 3, 3]."""
    who = "winograd_ref64"
    m = _check_m(m, who)
    pad = _check_pad(pad, who)
    I, F = _reals(I, "I", who), _reals(F, "F", who)
    I, F, single, Ho, Wo = _shapes(I, F, pad, who)
    BT, G, AT = matrices(m)
    d = tile_input(I, m, pad)
    Ih = np.einsum("ia,nctuab,jb->nctuij", BT, d, BT)
    Fh = np.einsum("ia,kcab,jb->kcij", G, F, G)
    Oh = np.einsum("nctuij,kcij->nktuij", Ih, Fh)
    O = untile(np.einsum("ia,nktuab,jb->nktuij", AT, Oh, AT), Ho, Wo)
    return O[0] if single else O


def _reals(x, name, who):
    x = np.asarray(x)
    if x.dtype.kind not in "uif":
        raise ValueError(f"{who}: {name} must hold real numbers, got dtype {x.dtype}")
    return x.astype(np.float64)


def _windows(I, pad):
    """I[N, C, H, W] -> [N, H', W', C, 3, 3] (zero padded)."""
    N, C, H, W = I.shape
    P = np.zeros((N, C, H + 2 * pad, W + 2 * pad), dtype=I.dtype)     # object: Python 0s
    P[:, :, pad:pad + H, pad:pad + W] = I
    win = np.lib.stride_tricks.sliding_window_view(P, (3, 3), axis=(2, 3))   # [N,C,H',W',3,3]
    return win.transpose(0, 2, 3, 1, 4, 5)


def direct_conv(I, F, pad: int = 1) -> np.ndarray:
    """Direct convolution (cross-correlation, stride 1) in float64 on real values."""
    who = "direct_conv"
    pad = _check_pad(pad, who)
    I, F = _reals(I, "I", who), _reals(F, "F", who)
    I, F, single, _, _ = _shapes(I, F, pad, who)
    O = np.einsum("nhwcrs,kcrs->nkhw", _windows(I, pad), F)
    return O[0] if single else O


def direct_tile(d, g, m: int = 2, mode: str = "fp32", *, data_bits: int = 8,
                weight_bits: int = 8) -> np.ndarray:
    """Direct 3×3 convolution of one output tile position with the RTL's rounding points
    (module docstring): d [..., C, m+2, m+2] input tiles, g [K, C, 3, 3] filters, both
    encodings of ``mode``'s data format (FP modes) -> [..., K, m, m] accumulation-format
    encodings.  Output (k, i, j): the 9·C terms d[c][i+r][j+s]·g[k][c][r][s] in the order
    c-major, then r, then s, four per DP-4 (:func:`tcgen.hw.numeric.dot4`), chained from −0,
    the last chunk padded with (−0, +0).  Mode "int": d and g signed ``data_bits`` /
    ``weight_bits`` integers, the exact sums (int64)."""
    who = "direct_tile"
    m = _check_m(m, who)
    mode = _check_mode(mode, who)
    if mode == "int":
        d = _ints(d, _check_width(data_bits, "data_bits", who), "d", who)
        g = _ints(g, _check_width(weight_bits, "weight_bits", who), "g", who)
    else:
        f = _FMT[mode]
        d = _encodings(d, f["data"], "d", who)
        g = _encodings(g, f["data"], "g", who)
    n = m + 2
    if d.ndim < 3 or d.shape[-2:] != (n, n):
        raise ValueError(f"{who}: d must be [..., C, {n}, {n}], got shape {d.shape}")
    if g.ndim != 4 or g.shape[2:] != (3, 3) or g.shape[1] != d.shape[-3]:
        raise ValueError(f"{who}: g must be [K, C, 3, 3] with d's C = {d.shape[-3]}, got "
                         f"shape {g.shape}")
    K, C = g.shape[:2]
    lead = d.shape[:-3]
    win = np.lib.stride_tricks.sliding_window_view(d, (3, 3), axis=(-2, -1))  # [.., C, m, m, 3, 3]
    a = np.moveaxis(win, -5, -3).reshape(lead + (m, m, 9 * C))                 # t = 9c + 3r + s
    b = g.reshape(K, 9 * C)
    if mode == "int":              # exact: int64 while 9C·2^(data_bits + weight_bits - 2) fits
        if 9 * C << (data_bits + weight_bits - 2) < 1 << 62:
            return np.einsum("...ijt,kt->...kij", a, b)
        return np.moveaxis(a.astype(object) @ b.T.astype(object), -1, -3)
    f = _FMT[mode]
    J = -(-9 * C // _DP)
    extra = J * _DP - 9 * C
    data, acc = num.get_format(f["data"]), num.get_format(f["acc"])
    if extra:
        a = np.concatenate([a, np.full(lead + (m, m, extra), data.sign_mask, np.uint64)], -1)
        b = np.concatenate([b, np.zeros((K, extra), np.uint64)], axis=-1)
    a = a[..., None, :, :, :]                                                   # [.., 1, m, m, T]
    b = b[:, None, None, :]                                                     # [K, 1, 1, T]
    out = np.full(lead + (K, m, m), acc.sign_mask, dtype=np.uint64)             # −0
    for j in range(J):
        out = num.dot4(a[..., _DP * j:_DP * j + _DP], b[..., _DP * j:_DP * j + _DP], out,
                       f["data"], f["acc"], f["product"])
    return out


def direct_conv_exact(I, F, pad: int = 1) -> np.ndarray:
    """Direct convolution, exact: integer I and F give integers (int64 when it cannot
    overflow, else Python ints in an object array); float I or F give Fractions (object array).
    Inf and NaN have no exact value and raise ValueError."""
    who = "direct_conv_exact"
    pad = _check_pad(pad, who)
    I, F = np.asarray(I), np.asarray(F)
    for name, x in (("I", I), ("F", F)):
        if x.dtype.kind not in "uif":
            raise ValueError(f"{who}: {name} must hold real numbers, got dtype {x.dtype}")
        if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
            raise ValueError(f"{who}: {name} holds inf or NaN, which have no exact value")
    I, F, single, _, _ = _shapes(I, F, pad, who)
    if I.dtype.kind in "ui" and F.dtype.kind in "ui":
        big = max(int(np.abs(I.astype(object)).max(initial=0)), 1) * \
            max(int(np.abs(F.astype(object)).max(initial=0)), 1) * 9 * I.shape[1]
        if big < 2 ** 62:
            O = np.einsum("nhwcrs,kcrs->nkhw", _windows(I.astype(np.int64), pad),
                          F.astype(np.int64))
        else:
            O = _conv_object(I.astype(object), F.astype(object), pad)
        return O[0] if single else O
    (Ii, ei), (Fi, ef) = _to_scaled_ints(I), _to_scaled_ints(F)
    O = _conv_object(Ii, Fi, pad)
    scale = Fraction(2) ** (ei + ef)
    O = np.frompyfunc(lambda v: Fraction(v) * scale, 1, 1)(O)
    return O[0] if single else O


def _conv_object(I, F, pad):
    win = _windows(I, pad)                                   # [N, H', W', C, 3, 3] object
    N, Ho, Wo = win.shape[:3]
    cols = win.reshape(N * Ho * Wo, -1)
    O = np.dot(cols, F.reshape(F.shape[0], -1).T)            # exact Python ints
    return O.reshape(N, Ho, Wo, -1).transpose(0, 3, 1, 2)


def _to_scaled_ints(x):
    """x (float64) = X · 2^e exactly, X Python ints (object array), e the smallest exponent."""
    x = np.asarray(x, dtype=np.float64)
    mant, ex = np.frexp(x)
    mi = (mant * 2.0 ** 53).astype(np.int64)                 # exact: |mant| < 1
    ex = ex.astype(np.int64) - 53
    nz = mi != 0
    e0 = int(ex[nz].min()) if nz.any() else 0
    X = np.frompyfunc(lambda v, k: int(v) << int(k) if v else 0, 2, 1)(
        mi, np.where(nz, ex - e0, 0))
    return X.astype(object), e0


# -- error bound ---------------------------------------------------------------------------------
def _u(fmt):
    return Fraction(1, 2 ** num.get_format(fmt).precision)


def _eta(fmt):
    f = num.get_format(fmt)
    return Fraction(2) ** (f.emin - f.man_bits - 1)


def _depth(net, n_in):
    """Largest number of relative roundings on a path through the 2-D network (n_in × n_in
    inputs)."""
    return int(_apply2d(net, np.zeros((n_in, n_in), dtype=np.int64), _DepthOps()).max())


def path_roundings(m: int = 2, mode: str = "fp32", C: int = 1, *,
                   ftf: str | None = None) -> dict:
    """Stage -> (k, format): the largest number of roundings k on any path through the pinned
    networks, and their format (k = 0: exact).  ITF and OTF from their networks; FTF from the
    network (F(2,3): 4) or 1 ("exact"); product 1 if rounded, else 0; accumulation ⌈C/4⌉ + 1
    (a DP-4 tree is 2 deep, each later chunk adds one rounding, the −0 start is exact)."""
    who = "path_roundings"
    m = _check_m(m, who)
    mode = _check_mode(mode, who, fp_only=True)
    ftf_mode = _check_ftf(ftf, m, mode, who)
    if not _is_int(C) or C < 1:
        raise ValueError(f"{who}: C must be an integer >= 1, got {C!r}")
    f = _FMT[mode]
    n = m + 2
    k_itf = _depth(_NETS[("itf", m)], n)
    k_ftf = _depth(_NETS[("ftf", 2)], 3) if ftf_mode == "network" else 1
    k_otf = _depth(_NETS[("otf", m)], n)
    return {"itf": (k_itf, f["transform"]), "ftf": (k_ftf, f["transform"]),
            "product": (1 if f["product"] == "rounded" else 0,
                        f["acc"] if f["product"] == "exact" else f["data"]),
            "acc": (-(-C // _DP) + 1, f["acc"]), "otf": (k_otf, f["acc"])}


def _ftf_underflow_weights(m, ftf_mode):
    if ftf_mode == "exact":
        return np.ones((m + 2, m + 2))
    return _apply2d(_NETS[("ftf", 2)], np.zeros((3, 3)), _UnderflowOps())


def error_bound(I, F, m: int = 2, mode: str = "fp32", pad: int = 1, *,
                ftf: str | None = None) -> np.ndarray:
    """The rigorous a-priori bound of note §4.3 per output element, float64, for the same
    arguments as :func:`winograd_conv` (FP modes; finite results): |O − O_exact| ≤
    γ·Σ_c |Aᵀ|[(|G||g_c||G|ᵀ) ⊙ (|Bᵀ||d_c||B|)]|A| + (1 + γ)·U (module docstring), inflated
    by 2^−40 to cover this function's own float64 rounding."""
    who = "error_bound"
    m = _check_m(m, who)
    mode = _check_mode(mode, who, fp_only=True)
    pad = _check_pad(pad, who)
    ftf_mode = _check_ftf(ftf, m, mode, who)
    f = _FMT[mode]
    I = np.abs(num.to_float(_encodings(I, f["data"], "I", who), f["data"]))
    F = np.abs(num.to_float(_encodings(F, f["data"], "F", who), f["data"]))
    I, F, single, Ho, Wo = _shapes(I, F, pad, who)
    C = I.shape[1]
    BT, G, AT = (np.abs(x) for x in matrices(m))
    d = tile_input(I, m, pad)
    D = np.einsum("ia,nctuab,jb->nctuij", BT, d, BT)                 # |Bᵀ||d||B|
    Gh = np.einsum("ia,kcab,jb->kcij", G, F, G)                       # |G||g||G|ᵀ
    T = np.einsum("ia,nktuab,jb->nktuij", AT, np.einsum("nctuij,kcij->nktuij", D, Gh), AT)
    W = _ftf_underflow_weights(m, ftf_mode)
    Ut = np.einsum("ia,ntuab,jb->ntuij", AT, np.einsum("nctuij,ij->ntuij", D, W), AT)
    rows = AT.sum(axis=1)
    alpha = np.outer(rows, rows)
    k = path_roundings(m, mode, C, ftf=ftf_mode)
    g = Fraction(1)
    for kk, fmt in k.values():
        g *= (1 + _u(fmt)) ** kk
    gamma = g - 1
    eta_t = _eta(f["transform"])
    eta_p = _eta(k["product"][1]) if k["product"][0] else Fraction(0)
    with np.errstate(invalid="ignore", over="ignore"):
        B = float(gamma) * T + float(1 + gamma) * (float(eta_t) * Ut[:, None]
                                                  + float(eta_p) * C * alpha)
        B = B * (1 + 2.0 ** -40)
    O = untile(B, Ho, Wo)
    return O[0] if single else O


def amplification(m: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Σ|coefficients| of |Aᵀ|(|G||g| ⊙ |Bᵀ||d|) per output: (1-D [m], 2-D [m, m]); direct
    convolution has 3 and 9 (note §4.3: F(2,3) 8 and 64, F(4,3) 48 and 2304)."""
    m = _check_m(m, "amplification")
    BT, G, AT = (np.abs(x) for x in matrices(m, exact=True))
    one = AT.dot(G.dot(np.ones(3, dtype=object)) * BT.dot(np.ones(m + 2, dtype=object)))
    return one.astype(np.float64), np.outer(one, one).astype(np.float64)


def rel_rms(y, ref) -> float:
    """sqrt(mean((y − ref)²)) / sqrt(mean(ref²)) in float64 (the note's error metric)."""
    y, ref = np.asarray(y, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if y.shape != ref.shape:
        raise ValueError(f"rel_rms: shapes differ: {y.shape} and {ref.shape}")
    den = math.sqrt(float(np.mean(ref ** 2)))
    if den == 0:
        raise ValueError("rel_rms: the reference is all zero")
    return math.sqrt(float(np.mean((y - ref) ** 2))) / den


# -- integer widths, operation counts ------------------------------------------------------------
def _bits_signed(lo: int, hi: int) -> int:
    """The smallest two's-complement width holding [lo, hi]."""
    return max(1, int(hi).bit_length() + 1 if hi > 0 else 1,
               int(-lo - 1).bit_length() + 1 if lo < 0 else 1)


def _linear_ranges(net, lo, hi):
    """Run the 2-D network on coefficient vectors: (col-pass (lo, hi), row-pass (lo, hi), the
    output's per-element (lo, hi) arrays), for independent inputs in [lo, hi] (object arrays
    of the input tile's shape)."""
    R, S = lo.shape
    n = R * S
    basis = np.eye(n, dtype=np.int64).reshape(n, R, S)
    lo_f, hi_f = lo.reshape(n), hi.reshape(n)

    def rng(v):
        c = v.reshape(n, -1).astype(object)
        pos = np.where(c > 0, c, 0)
        neg = np.where(c < 0, c, 0)
        return (pos * lo_f[:, None] + neg * hi_f[:, None]).sum(axis=0), \
            (pos * hi_f[:, None] + neg * lo_f[:, None]).sum(axis=0)
    acc = {"col": [None, None], "row": [None, None]}

    def rec(which):
        def f(v):
            a, b = rng(v)
            cur = acc[which]
            cur[0] = min(a.min(), cur[0]) if cur[0] is not None else a.min()
            cur[1] = max(b.max(), cur[1]) if cur[1] is not None else b.max()
        return f
    out = _apply2d(net, basis, _IntOps(), rec("col"), rec("row"))
    olo, ohi = rng(out)
    shape = out.shape[1:]
    return tuple(acc["col"]), tuple(acc["row"]), olo.reshape(shape), ohi.reshape(shape)


def int_scale(m: int = 2) -> int:
    """s of the integer filter transform s·G (2 for F(2,3), 24 for F(4,3)): the integer EWMM
    and OTF carry s²·(true value), divided exactly at the end."""
    return _SCALE[_check_m(m, "int_scale")]


def int_widths(m: int = 2, data_bits: int = 8, weight_bits: int = 8, C: int = 1) -> dict:
    """Stage -> (lo, hi, bits) of mode "int": the value range of every node of the stage and
    the two's-complement width holding it.  Stages: ``input``, ``itf_col``, ``itf`` (= Î),
    ``weight``, ``ftf_col``, ``ftf`` (= s²·F̂), ``product``, ``acc`` (every partial sum),
    ``otf_col``, ``otf`` (s²·O, before the division), ``output`` (O).  Exact and reachable up
    to ``acc`` (inputs independent); the OTF passes are a safe interval bound."""
    who = "int_widths"
    m = _check_m(m, who)
    data_bits = _check_width(data_bits, "data_bits", who)
    weight_bits = _check_width(weight_bits, "weight_bits", who)
    if not _is_int(C) or C < 1:
        raise ValueError(f"{who}: C must be an integer >= 1, got {C!r}")
    dlo, dhi = -(1 << (data_bits - 1)), (1 << (data_bits - 1)) - 1
    wlo, whi = -(1 << (weight_bits - 1)), (1 << (weight_bits - 1)) - 1
    n = m + 2

    def full(shape, v):
        a = np.empty(shape, dtype=object)
        a.fill(v)
        return a
    out = {"input": (dlo, dhi), "weight": (wlo, whi)}
    out["itf_col"], out["itf"], ilo, ihi = _linear_ranges(_NETS[("itf", m)], full((n, n), dlo),
                                                          full((n, n), dhi))
    out["ftf_col"], out["ftf"], flo, fhi = _linear_ranges(_NETS[("ftf_int", m)],
                                                          full((3, 3), wlo), full((3, 3), whi))
    corners = [ilo * flo, ilo * fhi, ihi * flo, ihi * fhi]
    plo = np.minimum.reduce(corners)
    phi = np.maximum.reduce(corners)
    out["product"] = (plo.min(), phi.max())
    alo, ahi = plo * C, phi * C
    out["acc"] = (alo.min(), ahi.max())
    out["otf_col"], out["otf"], _, _ = _linear_ranges(_NETS[("otf", m)], alo, ahi)
    dw = [dlo * wlo, dlo * whi, dhi * wlo, dhi * whi]
    out["output"] = (9 * C * min(dw), 9 * C * max(dw))
    return {k: (int(lo), int(hi), _bits_signed(int(lo), int(hi))) for k, (lo, hi) in out.items()}


def _count(net):
    c = {"add": 0, "shl": 0, "half": 0, "neg": 0}
    for _, kind, _, _ in net[0]:
        c["add" if kind in ("add", "sub") else kind] += 1
    return c


def op_counts(m: int = 2, mode: str = "fp32") -> dict:
    """Operations per tile of the pinned networks (column pass + row pass) and the multiplies
    per m×m output tile per (c, k): ``direct_muls`` (9·m²), ``ewmm_muls`` ((m+2)²),
    ``itf_adds``, ``itf_shifts``, ``otf_adds``, ``otf_shifts``, ``ftf_vectors`` (3 columns +
    (m+2) rows), ``ftf_adds``, ``ftf_halvings``, ``ftf_shifts``, ``ftf_negs`` (FP modes use
    the FP network -- F(4,3) has none: its FTF is offline and the ftf_* counts are None; mode
    "int" the s·G network)."""
    m = _check_m(m, "op_counts")
    mode = _check_mode(mode, "op_counts")
    n = m + 2
    itf, otf = _count(_NETS[("itf", m)]), _count(_NETS[("otf", m)])
    out = {"direct_muls": 9 * m * m, "ewmm_muls": n * n,
           "itf_adds": 2 * n * itf["add"], "itf_shifts": 2 * n * itf["shl"],
           "otf_adds": (n + m) * otf["add"], "otf_shifts": (n + m) * otf["shl"],
           "ftf_vectors": 3 + n}
    key = ("ftf_int", m) if mode == "int" else ("ftf", m)
    if key in _NETS:
        ftf_c = _count(_NETS[key])
        for name, kind in (("ftf_adds", "add"), ("ftf_halvings", "half"),
                           ("ftf_shifts", "shl"), ("ftf_negs", "neg")):
            out[name] = (3 + n) * ftf_c[kind]
    else:
        out.update(ftf_adds=None, ftf_halvings=None, ftf_shifts=None, ftf_negs=None)
    return out
