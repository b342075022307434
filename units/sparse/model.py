"""Golden models of the Sparse Tensor Core family (Zhu et al., MICRO-52 2019;
../shared/papers/001_sparse_tc.md).  numpy and :mod:`tcgen.hw.numeric` only -- no Amaranth --
so they can be used on their own.  docs/sparse.md is the short version of this docstring.

Three parts, tested in tb/test_sparse_model.py:

1. **The VectorSparse format** (note §1).  W is M×N; each row is cut into V = ⌈N/L⌉ vectors of
   L consecutive columns (the GEMM reduction axis), the last one zero-padded
   (:func:`prune_vectorwise`, :func:`encode`, :func:`decode`, :func:`pack_offsets`,
   :func:`unpack_offsets`, :func:`compression_ratio`, :func:`multiplies`,
   :func:`algorithm1_schedule`, :func:`algorithm1_round`).
2. **The octet arithmetic** on FP16 encodings (:func:`products`, :func:`dp4`,
   :func:`dense_wmma`, :func:`sparse_wmma`, :func:`spmm`), with float64 references and error
   bounds (:func:`dense_ref64`, :func:`spmm_ref64`, :func:`error_bound`, :func:`dense_bound`,
   :func:`spmm_bound`).
3. **The cycle model** of one (S)WMMA (:func:`cycle_model`, :func:`cycle_timing`).

Pruning (:func:`prune_vectorwise`)
    Per vector, keep the K largest |x|; equal magnitudes are ranked by column, the lower column
    first (a stable argsort of −|x|).  Zeros (±0) never survive: a vector keeps min(K, nnz)
    elements and an all-zero vector stays all zero.  ±inf is the largest magnitude and survives;
    NaN has no order and raises ``ValueError``.  Padding is internal: the result has W's shape.

Encoding (:class:`Encoded`, :func:`encode`)
    ``values`` [M, V, K] FP16 encodings (uint64), ``offsets`` [M, V, K] in [0, L) (int64),
    b = ⌈log2 L⌉ bits each.  Survivors take slots 0, 1, ... in ascending offset order; the
    remaining (*padded*) slots hold value +0 (0x0000) and offset 0.  :func:`encode` prunes W in
    its own precision (as the paper prunes FP32 weights, then casts), rounds the survivors to
    FP16 (RNE), and a survivor that rounds to ±0 becomes a padded slot, so
    ``decode(encode(W)) == fp16(prune(W))``, ``encode(prune(W)) == encode(W)`` and an encoding
    is the unique canonical one of the matrix it decodes to.  Packed offset word of a vector
    (:attr:`Encoded.words`): slot k in bits [b·k + b − 1 : b·k], slot 0 in the LSBs (at L = 16,
    K = 4: one 16-bit word, offset k in nibble k); uint64, or Python ints when K·b > 64.
    A hand-built :class:`Encoded` (a register image) may hold unsorted or duplicate offsets and
    zero, inf or NaN values: the arithmetic takes the slots as they are, in slot order, and a
    duplicate offset gathers the same B row twice (both products are summed).

Arithmetic
    Products: FP16 × FP16 is exact in FP32 (11 × 11 significand bits ≤ 24; 2^−48 ≤ |p| ≤
    65504² < 2^32 lies in FP32's normal range), so :func:`products` is the exact product carried
    as an FP32 encoding; IEEE specials: inf·0 = NaN, inf·x = ±inf, NaN in → NaN out.
    ``acc`` ("fp32": the paper's mixed mode; "fp16": its FP16 mode) is the format of C, D and
    every rounded sum.  ``semantics`` (:data:`SEMANTICS`) fixes the DP-4's rounding points:

    - ``"ieee"``: ``d = ((p0 + p1) + (p2 + p3)) + c``, every '+' correctly rounded to ``acc``
      (RNE by default).  Under FP16 accumulation the first-level adds round the exact sum of two
      exact products (products are not rounded to FP16 first).
    - ``"exact"``: ``d = round_acc(p0 + p1 + p2 + p3 + c)``, the exact sum rounded once (per
      DP-4: a chain of DP-4s rounds once per DP-4).
    - ``"fused_sm90"``: ``d = fused_dot(a, b, c)`` with NVIDIA Hopper's measured rules
      (:func:`tcgen.hw.numeric.fused_dot`, docs/fused.md): the four products and c aligned once
      to the largest exponent, each truncated toward zero to the 27-bit window, summed exactly,
      rounded once -- toward zero to FP32, to nearest-even to FP16 (``rounding`` is not used);
      canonical NaN 0x7FFFFFFF / 0x7FFF; an exact zero is +0.  Per DP pass: the dense path
      rounds once per k-chunk of 4 (four fused blocks per 16-wide k-tile, unlike the H100's one
      16-product block); the sparse path at K <= 4 runs one block per tile, which *is* the
      H100's rule for a k-tile whose non-zeros are those K (zero products take no part).

    Signed zeros follow IEEE: an exact zero sum is +0 unless every term is −0 (x + (−x) = +0).
    NaN and inf propagate IEEE-style (inf − inf = NaN); every NaN produced is the canonical one
    (FP32 0x7FC00000, FP16 0x7E00).  −0 is the additive identity (x + (−0) = x for every x), which
    the sparse path uses for absent slots.

    Dense path (:func:`dense_wmma`, the HMMA sets): the k axis in chunks of 4, one DP-4 per
    chunk, accumulated in ascending k: ``D = dp4(k12..15, dp4(k8..11, dp4(k4..7, dp4(k0..3, C))))``
    = ((((C + dp_0) + dp_1) + dp_2) + dp_3); a WMMA-GEMM chains the same over all k (N is zero
    padded to a multiple of the 16-wide k-tile).
    Sparse path (:func:`sparse_wmma`, :func:`spmm`): per output row r and vector v, the K slots
    in slot order, in ⌈K/4⌉ chained DP-4s of slots 4j..4j+3 (K < 4: one DP-4 with lanes K..3
    absent; K > 4: ``dp4(slots 4..7, dp4(slots 0..3, c))``, the note's "K = 8 as two EXEC
    passes"), vectors in ascending v, C chained: at the paper's point one DP-4 per 16-wide tile,
    ``D[r, :] = ((p0 + p1) + (p2 + p3)) + C[r, :]``.  So dense and sparse differ in the last
    bits by design; each is bit-exact against its own model only.
    ``zero_slot`` (:data:`ZERO_SLOTS`): a slot whose value is ±0 (a padded slot -- encode never
    stores a zero survivor -- or a lane beyond K) contributes ``"skip"`` (default): the additive
    identity −0 (its product is gated), so the padded offsets are never observable, not even
    through inf/NaN in B or the sign of a zero result; ``"multiply"``: its product like any
    other (+0 · B[offset], so 0·inf = NaN and +0 products turn a −0 result into +0; lanes beyond
    K multiply +0 · +0).

Cycle model (:func:`cycle_timing`; note §2.4, every [A] is ours)
    One (S)WMMA covers 16 × L × 16 (the paper's 16×16×16 at L = 16) on one octet's share.
    Dense: ⌈L/dp_width⌉ sets; per set the 4×8 B tile (dp_width × 8 FP16) is filled in
    ⌈8·dp_width / fill_bw⌉ cycles and 8×8 dot products run on ``dps`` DP units in ⌈64/dps⌉.
    Sparse: 4 sets (one A row per octet per set); FETCHIDX + decode (``t_fetch + t_decode``)
    exposed only for the first set (later ones overlap the previous set [A]); per set K gathered
    B rows × 16 columns are loaded in ⌈16·K / fill_bw⌉ cycles and 16 dot products of
    ⌈K/dp_width⌉ DP passes run in ⌈16·⌈K/dp_width⌉ / dps⌉.  Without ping-pong the load of a set
    waits for the previous compute; with it, loads and computes overlap (one buffer each).
    Paper point: 40 / 34 / 26 / 20.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tcgen.hw import numeric as num

__all__ = ["SEMANTICS", "SM90_WINDOW", "ACC_FORMATS", "ZERO_SLOTS", "OCTET_MODES", "offset_bits",
           "compression_ratio", "prune_vectorwise", "algorithm1_schedule", "algorithm1_round",
           "Encoded", "encode", "decode", "pack_offsets", "unpack_offsets", "products", "dp4",
           "dense_wmma", "sparse_wmma", "spmm", "dense_ref64", "spmm_ref64", "error_bound",
           "dense_bound", "spmm_bound", "multiplies", "cycle_timing", "cycle_model", "bstationary_timing"]

#: the DP-4's rounding points: every add rounded ("ieee"), the exact sum rounded once
#: ("exact"), or Hopper's fused block (tcgen.hw.numeric.fused_dot, preset fused16_sm90: one
#: alignment to the largest exponent, a 27-bit truncating window, one rounding -- toward zero
#: to FP32, to nearest-even to FP16) applied to each DP pass ("fused_sm90")
SEMANTICS = ("ieee", "exact", "fused_sm90")
#: the fused_sm90 alignment window (bits 2^(E+1) .. 2^(E-25))
SM90_WINDOW = 27
#: accumulator (C, D) formats: the paper's mixed mode (FP32) and its FP16 mode
ACC_FORMATS = ("fp32", "fp16")
#: what a ±0-valued slot contributes: the additive identity −0, or its IEEE product
ZERO_SLOTS = ("skip", "multiply")
#: the two octet modes of the cycle model
OCTET_MODES = ("dense", "sparse")

_DP = 4                                   # the DP unit's width (products per dot product)
_K_TILE = 16                              # the WMMA k-tile
_NEG_ZERO32 = np.uint64(0x80000000)       # FP32 −0, the additive identity
_ABS16 = np.uint64(0x7FFF)


# -- helpers -------------------------------------------------------------------------------------
def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_lk(L, K, who: str) -> tuple[int, int]:
    if not _is_int(L) or L < 2:
        raise ValueError(f"{who}: L must be an integer >= 2, got {L!r}")
    if not _is_int(K) or not 1 <= K <= L:
        raise ValueError(f"{who}: K must be an integer in [1, L={L}], got {K!r}")
    return int(L), int(K)


def _check_arith(acc: str, semantics: str, rounding: str, who: str) -> None:
    if acc not in ACC_FORMATS:
        raise ValueError(f"{who}: acc must be one of {', '.join(ACC_FORMATS)}, got {acc!r}")
    if semantics not in SEMANTICS:
        raise ValueError(f"{who}: semantics must be one of {', '.join(SEMANTICS)}, got "
                         f"{semantics!r}")
    if rounding not in num.MODES:
        raise ValueError(f"{who}: rounding must be one of {', '.join(num.MODES)}, got "
                         f"{rounding!r}")


def _bits(x, fmt: str, who: str) -> np.ndarray:
    """Encodings of ``fmt`` as uint64; floats are refused (they would be truncated)."""
    x = np.asarray(x)
    if x.dtype.kind not in "ui":
        raise ValueError(f"{who}: expects {fmt} encodings (an integer array), got dtype {x.dtype}")
    x = x.astype(np.uint64)
    if x.size and int(x.max()) >> num.get_format(fmt).width:
        raise ValueError(f"{who}: a value does not fit a {fmt} encoding")
    return x


def _real(W, who: str) -> np.ndarray:
    W = np.asarray(W)
    if W.ndim != 2:
        raise ValueError(f"{who}: W must be a 2-D matrix (M×N), got shape {W.shape}")
    if W.dtype.kind not in "uif":
        raise ValueError(f"{who}: W must hold real numbers, got dtype {W.dtype}")
    if W.dtype.kind == "f":
        bad = np.argwhere(np.isnan(W))
        if bad.size:
            r, c = bad[0]
            raise ValueError(f"{who}: W[{r}, {c}] is NaN: NaN has no magnitude order, so it "
                             f"cannot be pruned (build an Encoded by hand to feed NaN)")
    return W


def _vectors(W: np.ndarray, L: int) -> np.ndarray:
    """[M, N] -> [M, V, L], zero padded at the end of each row."""
    M, N = W.shape
    V = -(-N // L)
    Wp = np.zeros((M, V * L), dtype=W.dtype)
    Wp[:, :N] = W
    return Wp.reshape(M, V, L)


def _topk(X: np.ndarray, K: int) -> np.ndarray:
    """Mask of the K largest |x| per vector (last axis), lower index first among equals, zeros
    excluded."""
    mag = np.abs(X.astype(np.float64))
    order = np.argsort(-mag, axis=-1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(X.shape[-1]), X.shape), axis=-1)
    return (rank < K) & (X != 0)


# -- the format ------------------------------------------------------------------------------------
def offset_bits(L: int) -> int:
    """b = ⌈log2 L⌉, the width of one offset (L = 16: 4; L = 8: 3)."""
    L, _ = _check_lk(L, 1, "offset_bits")
    return (L - 1).bit_length()


def compression_ratio(P: int, L: int, K: int) -> float:
    """CR = P·L / ((P + ⌈log2 L⌉)·K): dense bits of a vector over its K values and offsets
    (note §1.2; (16, 8, 2) → 128/38 = 3.37)."""
    L, K = _check_lk(L, K, "compression_ratio")
    if not _is_int(P) or P < 1:
        raise ValueError(f"compression_ratio: P must be a positive integer, got {P!r}")
    return P * L / ((P + offset_bits(L)) * K)


def prune_vectorwise(W, L: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic vector-wise top-K: (W_pruned, mask), both of W's shape [M, N].

    Each row is cut into ⌈N/L⌉ vectors of L columns (the last zero padded, internally); per
    vector the K largest |x| are kept, equal magnitudes ranked by column (lower first); zeros
    never survive (at most K survivors, fewer if the vector has fewer non-zeros).  ``mask`` is
    True at the survivors; W_pruned holds W there and +0 elsewhere.  NaN raises ValueError."""
    L, K = _check_lk(L, K, "prune_vectorwise")
    W = _real(W, "prune_vectorwise")
    M, N = W.shape
    mask = _topk(_vectors(W, L), K).reshape(M, -1)[:, :N]
    return np.where(mask, W, 0).astype(W.dtype), mask


def algorithm1_schedule(W, L: int, K_target: int):
    """Algorithm 1's masks without the training: an iterator of (K, mask) for K = L−1, L−2, ...,
    K_target (round N_zero = L − K), each round keeping the top-K of the previous round's
    survivors (:func:`prune_vectorwise`'s order), so mask_{t+1} ⊆ mask_t.

    Line 10, ``T = sorted[N_zero]``, is read 0-based: round N_zero prunes the N_zero smallest,
    leaving K = L − N_zero, as the text's "K = L − N_zero" says (1-based, strict ``<`` would
    prune only N_zero − 1).  Ties are broken by :func:`prune_vectorwise`'s rule, not by the
    threshold (which keeps every element tied with T, so more than K; see
    :func:`algorithm1_round`).  Without retraining the weights do not change, so the mask of
    round K equals prune_vectorwise(W, L, K)'s."""
    L, K_target = _check_lk(L, K_target, "algorithm1_schedule")
    W = _real(W, "algorithm1_schedule")
    M, N = W.shape
    X = _vectors(W, L)

    def rounds():
        mask = X != 0
        for K in range(L - 1, K_target - 1, -1):
            mask = _topk(np.where(mask, X, 0), K)
            yield K, mask.reshape(M, -1)[:, :N].copy()
    return rounds()


def algorithm1_round(W, L: int, n_zero: int, *, index_base: int = 0) -> np.ndarray:
    """Lines 9–12 of Algorithm 1 literally, for one round: per vector T = sorted(|v|)[i] with
    i = n_zero (``index_base=0``) or n_zero − 1 (``index_base=1``), then every element with
    |x| < T is set to +0.  Ties with T all survive, so a vector can keep more than L − n_zero
    elements: kept to show the ambiguity (note §1.4 a, b); :func:`algorithm1_schedule` is the
    deterministic reading."""
    if index_base not in (0, 1):
        raise ValueError(f"algorithm1_round: index_base must be 0 or 1, got {index_base!r}")
    L, _ = _check_lk(L, 1, "algorithm1_round")
    if not _is_int(n_zero) or not 1 <= n_zero <= L - 1:
        raise ValueError(f"algorithm1_round: n_zero must be in [1, L−1={L - 1}], got {n_zero!r}")
    W = _real(W, "algorithm1_round")
    M, N = W.shape
    X = _vectors(W, L)
    mag = np.abs(X.astype(np.float64))
    T = np.sort(mag, axis=-1)[..., n_zero - index_base]
    kept = mag >= T[..., None]
    return np.where(kept.reshape(M, -1)[:, :N], W, 0).astype(W.dtype)


def pack_offsets(offsets, L: int) -> np.ndarray:
    """Packed offset words [..., ] of offsets [..., K]: slot k in bits [b·k + b − 1 : b·k]
    (slot 0 in the LSBs), b = ⌈log2 L⌉; uint64, or Python ints (object) when K·b > 64."""
    b = offset_bits(L)
    off = np.asarray(offsets, dtype=np.int64)
    if off.size and (off.min() < 0 or off.max() >= L):
        raise ValueError(f"pack_offsets: offsets must be in [0, L={L})")
    K = off.shape[-1]
    if K * b <= 64:
        w = np.zeros(off.shape[:-1], dtype=np.uint64)
        for k in range(K):
            w |= off[..., k].astype(np.uint64) << np.uint64(b * k)
        return w
    w = np.zeros(off.shape[:-1], dtype=object)
    for k in range(K):
        w = w + (off[..., k].astype(object) << (b * k))
    return w


def unpack_offsets(words, L: int, K: int) -> np.ndarray:
    """The inverse of :func:`pack_offsets`: offsets [..., K] (int64) of packed words."""
    L, K = _check_lk(L, K, "unpack_offsets")
    b = offset_bits(L)
    w = np.asarray(words)
    if w.dtype != object:
        w = w.astype(np.uint64)
    mask = (1 << b) - 1
    out = np.stack([np.asarray((w >> (b * k)) & mask).astype(np.int64) for k in range(K)],
                   axis=-1)
    if out.size and out.max() >= L:
        raise ValueError(f"unpack_offsets: a field holds an offset >= L={L}")
    return out


@dataclass(frozen=True, eq=False)
class Encoded:
    """A VectorSparse matrix: ``values`` [M, V, K] FP16 encodings, ``offsets`` [M, V, K] in
    [0, L), the vector length ``L`` and the original column count ``n`` (V = ⌈n/L⌉).  Built by
    :func:`encode` (canonical) or by hand (any slot contents; see the module docstring)."""

    values: np.ndarray
    offsets: np.ndarray
    L: int
    n: int

    def __post_init__(self):
        vals = _bits(self.values, "fp16", "Encoded")
        offs = np.asarray(self.offsets)
        if offs.dtype.kind not in "ui":
            raise ValueError(f"Encoded: offsets must be integers, got dtype {offs.dtype}")
        offs = offs.astype(np.int64)
        if vals.ndim != 3 or vals.shape != offs.shape:
            raise ValueError(f"Encoded: values and offsets must both be [M, V, K], got "
                             f"{vals.shape} and {offs.shape}")
        L, K = _check_lk(self.L, vals.shape[-1], "Encoded")
        if not _is_int(self.n) or self.n < 1 or -(-self.n // L) != vals.shape[1]:
            raise ValueError(f"Encoded: n={self.n!r} columns need ⌈n/L⌉ vectors, got "
                             f"{vals.shape[1]}")
        if offs.size and (offs.min() < 0 or offs.max() >= L):
            raise ValueError(f"Encoded: offsets must be in [0, L={L})")
        vals.flags.writeable = False
        offs.flags.writeable = False
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "offsets", offs)
        object.__setattr__(self, "L", L)
        object.__setattr__(self, "n", int(self.n))

    def __eq__(self, other):
        return (isinstance(other, Encoded) and (self.L, self.n) == (other.L, other.n)
                and np.array_equal(self.values, other.values)
                and np.array_equal(self.offsets, other.offsets))

    __hash__ = None

    @property
    def M(self) -> int:
        return self.values.shape[0]

    @property
    def V(self) -> int:
        return self.values.shape[1]

    @property
    def K(self) -> int:
        return self.values.shape[2]

    @property
    def offset_bits(self) -> int:
        return offset_bits(self.L)

    @property
    def words(self) -> np.ndarray:
        """Packed offset words [M, V] (:func:`pack_offsets`)."""
        return pack_offsets(self.offsets, self.L)

    @classmethod
    def from_words(cls, values, words, L: int, n: int) -> "Encoded":
        """An encoding from its values and packed offset words (a register image)."""
        values = np.asarray(values)
        return cls(values, unpack_offsets(words, L, values.shape[-1]), L, n)

    def slice_vectors(self, start: int, stop: int) -> "Encoded":
        """Vectors start..stop−1 as an encoding of their own (columns start·L ...)."""
        n = min(self.n, stop * self.L) - start * self.L
        return Encoded(self.values[:, start:stop], self.offsets[:, start:stop], self.L, n)


def encode(W, L: int, K: int, *, rounding: str = "rne") -> Encoded:
    """The canonical encoding of W [M, N] (real values): :func:`prune_vectorwise`, the
    survivors rounded to FP16 (``rounding``), placed in ascending offset order; padded slots
    value +0 and offset 0; a survivor that rounds to ±0 is a padded slot."""
    L, K = _check_lk(L, K, "encode")
    Wp, mask = prune_vectorwise(W, L, K)
    vals = num.from_float(Wp.astype(np.float64), "fp16", rounding)
    nz = mask & ((vals & _ABS16) != 0)
    vv, nzv = _vectors(vals, L), _vectors(nz, L)
    order = np.argsort(~nzv, axis=-1, kind="stable")[..., :K]     # survivors first, ascending
    sel = np.take_along_axis(nzv, order, axis=-1)
    values = np.where(sel, np.take_along_axis(vv, order, axis=-1), 0).astype(np.uint64)
    offsets = np.where(sel, order, 0)
    return Encoded(values, offsets, L, Wp.shape[1])


def decode(enc: Encoded, *, bits: bool = False) -> np.ndarray:
    """The dense matrix [M, n] an encoding stands for: float64 values (slots at the same offset
    are summed, exactly), or with ``bits=True`` FP16 encodings (+0 where no non-zero slot points;
    two non-zero slots at one offset raise ValueError)."""
    M, V, K, L = enc.M, enc.V, enc.K, enc.L
    rows = np.broadcast_to(np.arange(M)[:, None, None], enc.offsets.shape)
    cols = np.arange(V)[None, :, None] * L + enc.offsets
    if not bits:
        out = np.zeros((M, V * L))
        np.add.at(out, (rows, cols), num.to_float(enc.values, "fp16"))
        return out[:, :enc.n]
    nz = (enc.values & _ABS16) != 0
    count = np.zeros((M, V * L), dtype=np.int64)
    np.add.at(count, (rows[nz], cols[nz]), 1)
    if count.size and count.max() > 1:
        raise ValueError("decode: two non-zero slots at one offset have no FP16 dense form "
                         "(decode without bits= sums them)")
    out = np.zeros((M, V * L), dtype=np.uint64)
    out[rows[nz], cols[nz]] = enc.values[nz]
    return out[:, :enc.n]


def multiplies(enc: Encoded, P: int) -> tuple[int, int]:
    """(sparse, dense) multiplies of enc · B with B n×P: every slot is multiplied (M·V·K·P)
    against the dense M·n·P (Fig. 7: per row 2·6 = 12 instead of 8·6 = 48)."""
    return enc.M * enc.V * enc.K * P, enc.M * enc.n * P


# -- the arithmetic ------------------------------------------------------------------------------
def products(a, b) -> np.ndarray:
    """FP16 × FP16 (encodings, broadcast) as exact FP32 encodings: both widened to FP32
    (exact), multiplied in FP32 -- exact for every finite pair (no rounding happens; tested)."""
    a32 = num.fp_convert(_bits(a, "fp16", "products"), "fp16", "fp32")
    b32 = num.fp_convert(_bits(b, "fp16", "products"), "fp16", "fp32")
    return num.fp_mul(a32, b32, "fp32")


def _exact_sum(terms, fmt: str, rounding: str) -> np.ndarray:
    """The exact sum of FP32-encoded terms (broadcast) rounded once to ``fmt``: an exact zero is
    −0 only if every term is −0; NaN if any term is NaN or +inf meets −inf; else ±inf if any.
    Two terms: :func:`tcgen.hw.numeric.fp_add` (FP32) or :func:`_sum2_odd`; more:
    :func:`_exact_sum_ref`."""
    if len(terms) == 2:
        if fmt == "fp32":
            return num.fp_add(terms[0], terms[1], "fp32", rounding)
        return _sum2_odd(terms[0], terms[1], fmt, rounding)
    return _exact_sum_ref(terms, fmt, rounding)


def _sum2_odd(x, y, fmt: str, rounding: str) -> np.ndarray:
    """x + y (FP32 encodings) rounded once to ``fmt`` (≤ 51 significand bits): float64 TwoSum
    gives s + e = x + y exactly (no overflow or underflow from FP32 operands); rounding that to
    53 bits *to odd* (s, or its neighbour toward e when e ≠ 0 and s is even) and then to ``fmt``
    rounds x + y correctly, since 53 ≥ p + 2 (round-to-odd, Boldo & Melquiond).  Signed zeros
    come from float64's own RNE add (x + (−x) = +0, (−0) + (−0) = −0); inf/NaN pass through."""
    xf, yf = num.to_float(x, "fp32"), num.to_float(y, "fp32")
    with np.errstate(invalid="ignore"):
        s = xf + yf
        bb = s - xf
        e = (xf - (s - bb)) + (yf - bb)
    nudge = np.isfinite(s) & (e != 0) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    s = np.where(nudge, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return num.from_float(s, fmt, rounding)


def _exact_sum_ref(terms, fmt: str, rounding: str) -> np.ndarray:
    """:func:`_exact_sum` in Python integers: every term aligned to the smallest exponent,
    summed exactly, rounded once by :func:`tcgen.hw.numeric.round_exact` (any number of terms;
    the reference of the two-term paths)."""
    arrs = np.broadcast_arrays(*[np.asarray(t, dtype=np.uint64) for t in terms])
    shape = arrs[0].shape
    dec = [num.decode(t.reshape(-1), "fp32", dtype=object) for t in arrs]
    e0 = np.minimum.reduce([d[2] for d in dec])
    total = np.zeros(e0.shape, dtype=object)
    all_negzero = np.ones(e0.shape, dtype=bool)
    nan = np.zeros(e0.shape, dtype=bool)
    pinf, ninf = nan.copy(), nan.copy()
    for s, m, e, is_nan, is_inf in dec:
        v = m << (e - e0).astype(object)
        total = total + np.where(s == 1, -v, v)
        all_negzero &= (s == 1) & (m == 0) & ~is_nan & ~is_inf
        nan |= is_nan
        pinf |= is_inf & (s == 0)
        ninf |= is_inf & (s == 1)
    neg = np.asarray(total < 0, dtype=bool)
    mag = np.where(neg, -total, total)
    zero = np.asarray(mag == 0, dtype=bool)
    sign = np.where(zero, all_negzero, neg).astype(np.int64)
    out = num.round_exact(sign, mag, e0, fmt, rounding)
    F = num.get_format(fmt)
    inf = np.uint64(F.inf) | (ninf.astype(np.uint64) << np.uint64(F.width - 1))
    out = np.where(pinf | ninf, inf, out)
    out = np.where(nan | (pinf & ninf), np.uint64(F.nan), out)
    return out.astype(np.uint64).reshape(shape)


def dp4(a, b, c, *, acc: str = "fp32", semantics: str = "ieee", rounding: str = "rne",
        skip_zero: bool = False) -> np.ndarray:
    """One DP-4: c + Σ_{i<4} a_i·b_i, ``a``/``b`` [..., 4] FP16 encodings, ``c`` [...] ``acc``
    encodings (all broadcast) -> [...] ``acc`` encodings.

    Products exact (:func:`products`).  ``semantics="ieee"``: ((p0 + p1) + (p2 + p3)) + c, each
    '+' rounded to ``acc``; ``"exact"``: p0 + p1 + p2 + p3 + c rounded once; ``"fused_sm90"``:
    Hopper's fused block (module docstring).  ``skip_zero``: a lane whose a is ±0 contributes
    −0 (the additive identity) instead of its product (fused_sm90: its b is taken as +0)."""
    _check_arith(acc, semantics, rounding, "dp4")
    a = _bits(a, "fp16", "dp4")
    b = _bits(b, "fp16", "dp4")
    c = _bits(c, acc, "dp4")
    if np.broadcast_shapes(a.shape, b.shape)[-1:] != (_DP,):
        raise ValueError(f"dp4: a and b need a last axis of {_DP}, got {a.shape}, {b.shape}")
    if semantics == "fused_sm90":
        if skip_zero:      # a gated lane: b forced to +0, so ±0 × inf/NaN takes no part
            b = np.where((a & _ABS16) == 0, np.uint64(0), b)
        return num.fused_dot(a, b, c, "fp16", acc, acc, SM90_WINDOW,
                             "rtz" if acc == "fp32" else "rne")
    p = products(a, b)
    if skip_zero:
        p = np.where((a & _ABS16) == 0, _NEG_ZERO32, p)
    ps = [p[..., i] for i in range(_DP)]
    if semantics == "exact":
        c32 = c if acc == "fp32" else num.fp_convert(c, acc, "fp32")
        return _exact_sum(ps + [c32], acc, rounding)
    if acc == "fp32":
        s = num.pairwise_sum(ps, lambda x, y: num.fp_add(x, y, "fp32", rounding))
    else:   # the first level rounds exact products; the second adds two FP16 values
        s = num.fp_add(_exact_sum(ps[0:2], acc, rounding), _exact_sum(ps[2:4], acc, rounding),
                       acc, rounding)
    return num.fp_add(s, c, acc, rounding)


def dense_wmma(A, B, C, *, acc: str = "fp32", semantics: str = "ieee",
               rounding: str = "rne") -> np.ndarray:
    """D = A·B + C as the HMMA sets compute it: A [M, N], B [N, P] FP16 encodings, C [M, P]
    ``acc`` encodings.  N is zero padded to a multiple of the 16-wide k-tile (A with +0
    columns, B with +0 rows); then per output one DP-4 per 4-wide k-chunk, in ascending k,
    each adding onto the previous: ((((C + dp_0) + dp_1) + dp_2) + dp_3) for one 16×16×16
    WMMA, and the same chain over all k-tiles for a WMMA-GEMM (the accumulator stays in acc)."""
    _check_arith(acc, semantics, rounding, "dense_wmma")
    A = _bits(A, "fp16", "dense_wmma")
    B = _bits(B, "fp16", "dense_wmma")
    C = _bits(C, acc, "dense_wmma")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0] or C.shape != (A.shape[0],
                                                                              B.shape[1]):
        raise ValueError(f"dense_wmma: shapes A {A.shape}, B {B.shape}, C {C.shape} do not "
                         f"make D = A·B + C")
    N = A.shape[1]
    Np = -(-N // _K_TILE) * _K_TILE
    Ap = np.zeros((A.shape[0], Np), dtype=np.uint64)
    Ap[:, :N] = A
    Bp = np.zeros((Np, B.shape[1]), dtype=np.uint64)
    Bp[:N] = B
    d = C
    for j in range(0, Np, _DP):
        d = dp4(Ap[:, None, j:j + _DP], Bp[j:j + _DP].T[None, :, :], d, acc=acc,
                semantics=semantics, rounding=rounding)
    return d


def spmm(enc: Encoded, B, C, *, acc: str = "fp32", semantics: str = "ieee",
         rounding: str = "rne", zero_slot: str = "skip", split: bool = False) -> np.ndarray:
    """D = A·B + C with A given as an :class:`Encoded` [M, n] and B [n, P] FP16 encodings, C
    [M, P] ``acc`` encodings: the vectors in ascending v (each the SWMMA of its k-tile, C
    chained), each as ⌈K/4⌉ chained DP-4s over its slots in slot order, slot k gathering row
    v·L + offset of B (B zero padded to V·L rows).  See the module docstring for
    ``zero_slot``.  The M and P tiling of a GEMM changes no result (an output's order depends
    on k only), so this vectorizes over them.

    ``split`` (K ∈ {1, 2, 4}, ``semantics="ieee"``, FP32): the split DP-4 of the octets'
    ``split`` mode runs each dot product as one DP-K group -- K = 4 the DP-4, K = 2
    ``(p0 + p1) + c``, K = 1 ``p0 + c`` -- with no absent lanes (so under
    ``zero_slot="multiply"`` no +0·+0 lane turns a −0 into +0; under ``"skip"`` it equals the
    unsplit DP-4)."""
    _check_arith(acc, semantics, rounding, "spmm")
    if split and (enc.K not in (1, 2, 4) or semantics != "ieee" or acc != "fp32"):
        raise ValueError(f"spmm: split needs K in 1, 2, 4 (got {enc.K}), semantics ieee and "
                         f"acc fp32 (got {semantics}, {acc})")
    if zero_slot not in ZERO_SLOTS:
        raise ValueError(f"spmm: zero_slot must be one of {', '.join(ZERO_SLOTS)}, got "
                         f"{zero_slot!r}")
    if not isinstance(enc, Encoded):
        raise ValueError("spmm: A must be an Encoded (see encode)")
    B = _bits(B, "fp16", "spmm")
    C = _bits(C, acc, "spmm")
    M, V, K, L = enc.M, enc.V, enc.K, enc.L
    if B.ndim != 2 or B.shape[0] != enc.n or C.shape != (M, B.shape[1]):
        raise ValueError(f"spmm: shapes A {M}×{enc.n}, B {B.shape}, C {C.shape} do not make "
                         f"D = A·B + C")
    Bp = np.zeros((V * L, B.shape[1]), dtype=np.uint64)
    Bp[:enc.n] = B
    Kp = -(-K // _DP) * _DP
    vals = np.zeros((M, V, Kp), dtype=np.uint64)
    vals[..., :K] = enc.values
    offs = np.zeros((M, V, Kp), dtype=np.int64)
    offs[..., :K] = enc.offsets
    beyond = np.arange(Kp) >= K                              # lanes of a DP-4 with no slot
    d = C
    for v in range(V):
        g = Bp[v * L + offs[:, v, :]]                        # [M, Kp, P] gathered rows
        g[:, beyond, :] = 0                                  # lanes beyond K: +0 operands
        if split:                                            # one DP-K group per output
            p = products(vals[:, v, None, :K], g[:, :K, :].transpose(0, 2, 1))
            if zero_slot == "skip":
                p = np.where((vals[:, v, None, :K] & _ABS16) == 0, _NEG_ZERO32, p)

            def add(x, y):
                return num.fp_add(x, y, "fp32", rounding)
            s = num.pairwise_sum([p[..., i] for i in range(K)], add)
            d = add(s, d)
            continue
        for j in range(0, Kp, _DP):
            d = dp4(vals[:, v, None, j:j + _DP], g[:, j:j + _DP, :].transpose(0, 2, 1), d,
                    acc=acc, semantics=semantics, rounding=rounding,
                    skip_zero=zero_slot == "skip")
    return d


def sparse_wmma(enc: Encoded, B, C, **arith) -> np.ndarray:
    """One SWMMA: :func:`spmm` on a single k-tile (one vector per row, enc.V == 1), e.g. the
    paper's 16×16 A (L = 16, K = 4: 16×4 values + 16 16-bit offset words), B 16×16, C 16×16:
    D[r, :] = ((p0 + p1) + (p2 + p3)) + C[r, :] with p_k = val[r, k] · B[off[r, k], :]."""
    if not isinstance(enc, Encoded) or enc.V != 1:
        raise ValueError("sparse_wmma: one k-tile (an Encoded with V = 1); spmm tiles more")
    return spmm(enc, B, C, **arith)


# -- float64 references and error bounds -----------------------------------------------------------
def dense_ref64(A, B, C, *, acc: str = "fp32") -> np.ndarray:
    """C + A·B in float64 from the encodings (finite inputs; for error bounds)."""
    return num.to_float(_bits(C, acc, "dense_ref64"), acc) + \
        num.to_float(_bits(A, "fp16", "dense_ref64"), "fp16") @ \
        num.to_float(_bits(B, "fp16", "dense_ref64"), "fp16")


def spmm_ref64(enc: Encoded, B, C, *, acc: str = "fp32") -> np.ndarray:
    """C + decode(enc)·B in float64 (finite inputs; for error bounds)."""
    return num.to_float(_bits(C, acc, "spmm_ref64"), acc) + \
        decode(enc) @ num.to_float(_bits(B, "fp16", "spmm_ref64"), "fp16")


def error_bound(abs_sum, n_dp4: int, *, acc: str = "fp32", semantics: str = "ieee",
                rounding: str = "rne"):
    """A bound on |D − exact| for a chain of ``n_dp4`` DP-4s whose terms' magnitudes sum to
    ``abs_sum`` (|C| + Σ|a·b|), without overflow: a term passes d ≤ n_dp4 + 2 (ieee: two tree
    levels and the adds onto c) or n_dp4 (exact) roundings, so γ_d·abs_sum (γ_d = d·u/(1 − d·u),
    u = 2^−p under RNE, 2^(1−p) under RTZ) plus one subnormal rounding error (half a step under
    RNE) per rounding (at most 3 per DP-4), with 2^−40 relative slack for the float64
    reference.  ``fused_sm90``: d = 3·n_dp4 units of its own final rounding (``rounding``
    not used)."""
    _check_arith(acc, semantics, rounding, "error_bound")
    F = num.get_format(acc)
    if semantics == "fused_sm90":
        # per pass: five truncations below 2^(E-25) <= 2^-25·max|term| (5/4 of an FP32 RTZ
        # unit 2^-23) plus the final rounding (RTZ to FP32, RNE to FP16): three units
        rounding = "rtz" if acc == "fp32" else "rne"
    rtz = rounding == "rtz"
    u = 2.0 ** (rtz - F.precision)
    d = {"ieee": n_dp4 + 2, "exact": n_dp4, "fused_sm90": 3 * n_dp4}[semantics]
    gamma = d * u / (1 - d * u)
    tiny = 3 * n_dp4 * 2.0 ** (F.emin - F.man_bits - 1 + rtz)
    return (gamma + 2.0 ** -40) * np.asarray(abs_sum, dtype=np.float64) + tiny


def dense_bound(A, B, C, *, acc: str = "fp32", semantics: str = "ieee",
                rounding: str = "rne") -> np.ndarray:
    """:func:`error_bound` of :func:`dense_wmma` per output."""
    Av = np.abs(num.to_float(_bits(A, "fp16", "dense_bound"), "fp16"))
    Bv = np.abs(num.to_float(_bits(B, "fp16", "dense_bound"), "fp16"))
    Cv = np.abs(num.to_float(_bits(C, acc, "dense_bound"), acc))
    n_dp4 = -(-Av.shape[1] // _K_TILE) * _K_TILE // _DP
    return error_bound(Cv + Av @ Bv, n_dp4, acc=acc, semantics=semantics, rounding=rounding)


def spmm_bound(enc: Encoded, B, C, *, acc: str = "fp32", semantics: str = "ieee",
               rounding: str = "rne") -> np.ndarray:
    """:func:`error_bound` of :func:`spmm` per output (Σ over the slots, duplicates included)."""
    Bv = np.abs(num.to_float(_bits(B, "fp16", "spmm_bound"), "fp16"))
    Bp = np.zeros((enc.V * enc.L, Bv.shape[1]))
    Bp[:enc.n] = Bv
    av = np.abs(num.to_float(enc.values, "fp16"))                        # [M, V, K]
    rows = np.arange(enc.V)[None, :, None] * enc.L + enc.offsets
    abs_sum = np.abs(num.to_float(_bits(C, acc, "spmm_bound"), acc)) + \
        np.einsum("mvk,mvkp->mp", av, Bp[rows])
    return error_bound(abs_sum, enc.V * -(-enc.K // _DP), acc=acc, semantics=semantics,
                       rounding=rounding)


# -- the cycle model -------------------------------------------------------------------------------
def _split_sets(K: int, dp_width: int, split: bool, who: str) -> tuple[int, int]:
    """(sets, rows per set) of a sparse SWMMA's 4 A rows: one row per set, or with ``split``
    dp_width // K rows packed into one set of dp_width slots (K must divide dp_width)."""
    if not isinstance(split, (bool, np.bool_)):
        raise ValueError(f"{who}: split must be a bool, got {split!r}")
    if not split:
        return 4, 1
    if K > dp_width or dp_width % K or 4 % (dp_width // K):
        raise ValueError(f"{who}: split needs K dividing dp_width={dp_width} (K = 1, 2, 4 at "
                         f"the DP-4), got K={K}")
    rows = dp_width // K
    return 4 // rows, rows


def cycle_timing(mode: str, pingpong: bool, *, L: int = 16, K: int = 4, fill_bw: int = 16,
                 dp_width: int = 4, dps: int = 8, t_fetch: int = 1, t_decode: int = 1,
                 split: bool = False, dp_latency: int = 0) -> dict:
    """Cycles of one (S)WMMA (16 × L × 16, one octet's share) and its parts (note §2.3–2.4):

    dense: sets = ⌈L/dp_width⌉ k-chunks; fill = ⌈8·dp_width / fill_bw⌉ (the dp_width×8 B
    tile), compute = ⌈64/dps⌉ (8 rows × 8 columns per octet); no ping-pong
    sets·(fill + compute) = 4·(2 + 8) = 40; ping-pong fill + (sets − 1)·max(fill, compute) +
    compute = 2 + 3·8 + 8 = 34.

    sparse: sets = 4 (one A row per octet per set); prologue = t_fetch + t_decode (FETCHIDX and
    the offset decode of later sets hidden under the previous set [A]); load = ⌈16·K / fill_bw⌉
    (K gathered B rows × 16 columns); compute = ⌈16·⌈K/dp_width⌉ / dps⌉ (16 dot products of
    ⌈K/dp_width⌉ DP passes); no ping-pong prologue + load + (sets − 1)·max(load + compute,
    prologue) + compute = 2 + 4 + 3·6 + 2 = 26; ping-pong prologue + load + (sets −
    1)·max(load, compute, prologue) + compute = 2 + 4 + 3·4 + 2 = 20 (load-bound).

    sparse with ``split`` (the split DP-4, K = the request's k ∈ {1, 2, 4}): a set packs
    R = dp_width / K A rows into dp_width slots (their K gathered B rows each), the DP-4 runs
    as R DP-K groups, one row each; sets = 4 / R, load = ⌈16·dp_width / fill_bw⌉, compute =
    ⌈16 / dps⌉.  At K = 2 (with ping-pong) 2 + 4 + 4 + 2 = 12, as unsplit (load-bound); at
    K = 1 2 + 4 + 2 = 8 (unsplit: 11).

    ``dp_latency`` Lt (pipelined DP units, docs/pipelining.md "Octets"): a dot product issued
    in cycle t is written back in cycle t + Lt, and one that accumulates onto it issues no
    earlier than t + Lt + 1.  dense: a k-chunk's column t accumulates onto the previous
    chunk's, so the set period is max(fill, compute, Lt + 1) with ping-pong, max(fill + compute,
    Lt + 1) without; sparse: pass j onto pass j − 1, so a set's EXEC takes compute + (passes −
    1)·max(0, Lt + 1 − pass) cycles (pass = ⌈16/dps⌉; K <= 4: unchanged); and the result is
    valid Lt cycles after the last issue.  Lt = 0 is the paper's combinational DP.

    Returns {"cycles", "sets", "prologue", "load", "compute", "busy" (sets·compute: the
    EXEC cycles, with dp_latency > 0 the passes' waits included), "utilisation" (busy /
    cycles), "macs" (dense-equivalent: 16·L·16)}."""
    if mode not in OCTET_MODES:
        raise ValueError(f"cycle_timing: mode must be one of {', '.join(OCTET_MODES)}, got "
                         f"{mode!r}")
    if not isinstance(pingpong, (bool, np.bool_)):
        raise ValueError(f"cycle_timing: pingpong must be a bool, got {pingpong!r}")
    L, K = _check_lk(L, K, "cycle_timing")
    for name, v, lo in (("fill_bw", fill_bw, 1), ("dp_width", dp_width, 1), ("dps", dps, 1),
                        ("t_fetch", t_fetch, 0), ("t_decode", t_decode, 0),
                        ("dp_latency", dp_latency, 0)):
        if not _is_int(v) or v < lo:
            raise ValueError(f"cycle_timing: {name} must be an integer >= {lo}, got {v!r}")
    lt = dp_latency
    if mode == "dense":
        sets, prologue = -(-L // dp_width), 0
        load = math.ceil(8 * dp_width / fill_bw)
        compute = math.ceil(64 / dps)
        period = max(load, compute, lt + 1) if pingpong else max(load + compute, lt + 1)
        cycles = load + (sets - 1) * period + compute + lt
    else:
        sets, rows = _split_sets(K, dp_width, split, "cycle_timing")
        prologue = t_fetch + t_decode
        load = math.ceil(16 * K * rows / fill_bw)
        compute = _exec_cycles(K, dp_width, dps, lt)
        period = max(load, compute, prologue) if pingpong else max(load + compute, prologue)
        cycles = prologue + load + (sets - 1) * period + compute + lt
    busy = sets * compute
    return {"cycles": cycles, "sets": sets, "prologue": prologue, "load": load,
            "compute": compute, "busy": busy, "utilisation": busy / cycles, "macs": 16 * L * 16}


def _exec_cycles(K: int, dp_width: int, dps: int, lt: int) -> int:
    """One sparse set's EXEC: ⌈16·passes / dps⌉ cycles, pass j waiting for pass j − 1's write-back
    (``lt``: the DP latency; a pass is ⌈16/dps⌉ cycles)."""
    passes = -(-K // dp_width)
    step = math.ceil(16 / dps)
    return math.ceil(16 * passes / dps) + (passes - 1) * max(0, lt + 1 - step)


def cycle_model(mode: str, pingpong: bool, **kw) -> int:
    """Cycles of one (S)WMMA: 40 / 34 / 26 / 20 for dense, dense + ping-pong, sparse, sparse +
    ping-pong at the paper's point (keywords and assumptions: :func:`cycle_timing`)."""
    return cycle_timing(mode, pingpong, **kw)["cycles"]


def bstationary_timing(L: int = 16, K: int = 4, reuse: int = 4, *, fill_bw: int = 16,
                       dp_width: int = 4, dps: int = 8, t_fetch: int = 1,
                       t_decode: int = 1, split: bool = False, dp_latency: int = 0) -> dict:
    """Cycles of the B-stationary sparse octet (``octet_sparse_bs``; note §5.2 (a), beyond the
    paper): the L×16 B tile is loaded once (⌈16·L / fill_bw⌉ cycles, L rows of 16 FP16) and held;
    each SWMMA (4 A rows) then runs FETCHIDX + decode (the first set's exposed, later sets'
    under the previous EXEC) and 4 sets of ⌈16·⌈K/dp_width⌉ / dps⌉ EXEC cycles reading the held
    tile through K local L:1 row selects.  A SWMMA that loads B overlaps the load with its
    FETCHIDX/decode.  ``reuse``: SWMMAs per B tile (the GEMM's A row-tiles sharing one B tile).

    Returns {"load", "prologue", "compute", "sets", "first" (a SWMMA that loads B), "reused"
    (one that does not), "cycles" (mean per SWMMA over ``reuse``), "utilisation", "macs"}.  At
    L = 16, K = 4: 24 with the load, 10 without; reuse 4: 13.5 per SWMMA (the paper's sparse
    octet: 20).  ``split`` (K = the request's k ∈ {1, 2, 4}): :func:`cycle_timing`'s packed
    sets -- 4·K/dp_width sets of 2 EXEC cycles: 6 cycles per reused SWMMA at K = 2, 4 at K = 1
    (unsplit: 10 at every K <= 4).  ``dp_latency`` Lt: :func:`cycle_timing`'s (an EXEC of
    several passes waits for each pass's write-back; the result is valid Lt cycles after the
    last issue)."""
    L, K = _check_lk(L, K, "bstationary_timing")
    if not _is_int(reuse) or reuse < 1:
        raise ValueError(f"bstationary_timing: reuse must be an integer >= 1, got {reuse!r}")
    if not _is_int(dp_latency) or dp_latency < 0:
        raise ValueError(f"bstationary_timing: dp_latency must be an integer >= 0, got "
                         f"{dp_latency!r}")
    sets = _split_sets(K, dp_width, split, "bstationary_timing")[0]
    prologue = t_fetch + t_decode
    load = math.ceil(16 * L / fill_bw)
    compute = _exec_cycles(K, dp_width, dps, dp_latency)
    first = max(load, prologue) + sets * compute + dp_latency
    reused = prologue + sets * compute + dp_latency
    cycles = (first + (reuse - 1) * reused) / reuse
    return {"load": load, "prologue": prologue, "compute": compute, "sets": sets,
            "first": first, "reused": reused, "cycles": cycles,
            "utilisation": sets * compute / cycles, "macs": 16 * L * 16}
