"""The Sparse Tensor Core golden models (tcgen.units.sparse.model): the VectorSparse format, the
octet arithmetic against exact (Fraction) and float64 references, the cycle model; the note's
test cases T1–T13 (../shared/papers/001_sparse_tc.md §4.3) at the model level."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tcgen.verify.harness import seed
from tcgen.verify.stimulus import random_fp_pairs, specials
from tcgen.hw import numeric as num
from tcgen.units.sparse import model as sm
from tcgen.units.sparse import paper

RNG = np.random.default_rng(seed(14))

POS_ZERO32, NEG_ZERO32, NAN32 = 0x00000000, 0x80000000, 0x7FC00000
INF32, NINF32 = 0x7F800000, 0xFF800000
INF16, NAN16 = 0x7C00, 0x7E00
#: the IEEE-style semantics (signed-zero and NaN rules of IEEE adds); fused_sm90 has its own
#: (canonical NaN 0x7FFFFFFF, exact zero +0) and its own tests at the end
IEEE_SEM = ("ieee", "exact")
ARITH = [dict(acc=acc, semantics=sem) for acc in sm.ACC_FORMATS for sem in IEEE_SEM]


def f16(x):
    return num.from_float(np.asarray(x, dtype=np.float64), "fp16")


def f32(x):
    return num.from_float(np.asarray(x, dtype=np.float64), "fp32")


def acc_bits(x, acc):
    return num.from_float(np.asarray(x, dtype=np.float64), acc)


def fp16_matrix(shape, rng=RNG, zeros=0.0):
    """FP16-representable float64 values (normal, varied scale), a fraction of them zero."""
    v = num.to_float(f16(rng.normal(0, 1, shape) * 2.0 ** rng.integers(-6, 7, shape)), "fp16")
    return np.where(rng.random(shape) < zeros, 0.0, v)


def frac(bits, fmt):
    return num.to_fraction(int(bits), fmt)


def is_negzero(bits, fmt):
    return int(bits) == num.get_format(fmt).sign_mask


def round_terms(terms, fmt, rounding):
    """Oracle: the exact sum of (encoding, format) terms rounded once to fmt, IEEE zero sign."""
    s = sum(frac(b, f) for b, f in terms)
    negz = all(is_negzero(b, f) for b, f in terms)
    return num.round_fraction(s, fmt, rounding, sign_of_zero=int(negz))


# -- the format: offsets, compression ratio -------------------------------------------------------
def test_offset_bits_and_compression_ratio():
    assert [sm.offset_bits(L) for L in (2, 3, 4, 8, 16, 27, 32)] == [1, 2, 2, 3, 4, 5, 5]
    P, L, K = paper.FIG5["P"], paper.FIG5["L"], paper.FIG5["K"]
    num_, den = paper.FIG5["cr_exact"]
    assert sm.compression_ratio(P, L, K) == num_ / den
    assert round(sm.compression_ratio(P, L, K), 2) == paper.FIG5["cr"]
    for (L, K), cr in paper.CR_DERIVED.items():
        assert round(sm.compression_ratio(16, L, K), 2) == cr
    # at the paper's point a row's 4 offsets fill one 16-bit register
    assert paper.PAPER_K * sm.offset_bits(paper.PAPER_L) == 16


@pytest.mark.parametrize("bad", [dict(L=1, K=1), dict(L=8, K=9), dict(L=8, K=0),
                                 dict(L=8.0, K=2), dict(L=8, K=True)])
def test_bad_l_k_raise(bad):
    W = np.ones((2, 8))
    for f in (lambda: sm.prune_vectorwise(W, bad["L"], bad["K"]),
              lambda: sm.encode(W, bad["L"], bad["K"]),
              lambda: sm.compression_ratio(16, bad["L"], bad["K"]),
              lambda: sm.algorithm1_schedule(W, bad["L"], bad["K"]),
              lambda: sm.cycle_model("sparse", True, L=bad["L"], K=bad["K"])):
        with pytest.raises(ValueError):
            f()


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="NaN"):
        sm.prune_vectorwise(np.array([[1.0, np.nan, 2.0, 3.0]]), 4, 2)
    with pytest.raises(ValueError, match="2-D"):
        sm.encode(np.ones(8), 4, 2)
    with pytest.raises(ValueError, match="encodings"):
        sm.dp4(np.ones(4), f16(np.ones(4)), f32(0))             # floats are not encodings
    with pytest.raises(ValueError, match="offsets"):
        sm.Encoded(np.zeros((1, 1, 2), np.uint64), np.array([[[0, 16]]]), 16, 16)
    with pytest.raises(ValueError, match="vectors"):
        sm.Encoded(np.zeros((1, 1, 2), np.uint64), np.zeros((1, 1, 2), int), 16, 17)
    with pytest.raises(ValueError, match="zero_slot"):
        sm.spmm(sm.encode(np.ones((1, 16)), 16, 4), f16(np.ones((16, 1))), f32([[0]]),
                zero_slot="maybe")
    with pytest.raises(ValueError, match="V = 1"):
        sm.sparse_wmma(sm.encode(np.ones((1, 32)), 16, 4), f16(np.ones((32, 1))), f32([[0]]))


# -- T1 (Fig. 5): 4×8, L = 8, K = 2 ---------------------------------------------------------------
def test_t1_fig5_round_trip():
    W = fp16_matrix(paper.FIG5["shape"])
    L, K = paper.FIG5["L"], paper.FIG5["K"]
    enc = sm.encode(W, L, K)
    assert enc.values.shape == enc.offsets.shape == (4, 1, 2)
    assert enc.offset_bits == paper.FIG5["offset_bits"] == 3
    assert enc.words.dtype == np.uint64 and int(enc.words.max()) < 1 << 6
    Wp, mask = sm.prune_vectorwise(W, L, K)
    assert (mask.sum(axis=1) == 2).all()                        # random normal: no zeros
    assert np.array_equal(sm.decode(enc), Wp)
    assert sm.encode(Wp, L, K) == enc
    assert sm.encode(sm.decode(enc), L, K) == enc
    # 4 rows × (2 values × 16 b + 2 offsets × 3 b) against 4 × 8 × 16 b
    assert 4 * 8 * 16 / (4 * (2 * 16 + 2 * 3)) == sm.compression_ratio(16, L, K)


@pytest.mark.parametrize("L,K", [(16, 4), (8, 2), (4, 2), (16, 16), (16, 1), (32, 16), (5, 3)])
def test_encode_properties(L, K):
    M, N = 5, 3 * L + 1 if L < 32 else 40
    W = fp16_matrix((M, N), zeros=0.4)
    W[0, :L] = 0.0                                              # an all-zero vector
    Wp, mask = sm.prune_vectorwise(W, L, K)
    assert Wp.shape == mask.shape == W.shape
    enc = sm.encode(W, L, K)
    assert enc.V == -(-N // L) and enc.K == K and enc.n == N
    # survivors: min(K, nnz) per vector, the largest magnitudes, never a zero
    Xv = np.zeros((M, enc.V * L))
    Xv[:, :N] = W
    mv = np.zeros((M, enc.V * L), dtype=bool)
    mv[:, :N] = mask
    Xv, mv = Xv.reshape(M, enc.V, L), mv.reshape(M, enc.V, L)
    nnz = (Xv != 0).sum(-1)
    assert (mv.sum(-1) == np.minimum(K, nnz)).all() and not (mv & (Xv == 0)).any()
    kept_min = np.where(mv, np.abs(Xv), np.inf).min(-1)
    dropped_max = np.where(~mv, np.abs(Xv), 0).max(-1)
    assert (kept_min >= dropped_max).all()
    # canonical slots: survivors first, ascending offsets, then value +0 / offset 0
    nz = (enc.values & np.uint64(0x7FFF)) != 0
    assert (nz.sum(-1) == mv.sum(-1)).all()
    assert not (~nz[..., :-1] & nz[..., 1:]).any()
    d = np.diff(enc.offsets, axis=-1)
    assert ((d > 0) | ~nz[..., 1:]).all()
    assert (enc.values[~nz] == 0).all() and (enc.offsets[~nz] == 0).all()
    # round trips and idempotence
    assert np.array_equal(sm.decode(enc), Wp)
    assert np.array_equal(num.to_float(sm.decode(enc, bits=True), "fp16"), Wp)
    assert sm.encode(Wp, L, K) == enc
    assert sm.encode(sm.decode(enc), L, K) == enc
    assert np.array_equal(sm.unpack_offsets(enc.words, L, K), enc.offsets)
    assert sm.Encoded.from_words(enc.values, enc.words, L, N) == enc
    if K * sm.offset_bits(L) > 64:
        assert enc.words.dtype == object


def test_encode_rounds_survivors_after_pruning():
    # pruned in the input's precision, then rounded to FP16; a survivor that underflows to
    # zero becomes a padded slot; above 65504 the value overflows to +inf
    W = np.array([[1e-9, 3.0, 0.0, 7e4]])
    enc = sm.encode(W, 4, 2)
    assert enc.values.tolist() == [[[int(f16(3.0)), INF16]]]
    assert enc.offsets.tolist() == [[[1, 3]]]
    enc = sm.encode(np.array([[1e-9, 3.0, 0.0, 2.0]]), 4, 3)
    assert enc.offsets.tolist() == [[[1, 3, 0]]] and int(enc.values[0, 0, 2]) == 0


# -- T9, T10: ties and signs ----------------------------------------------------------------------
def test_t9_ties_keep_exactly_k_lowest_columns():
    W = np.array([[2.0] * 16, [3.0, -3.0] * 8, [-1.0, 1.0, 0.0, 0.0] * 4])
    for _ in range(3):                                          # deterministic
        _, mask = sm.prune_vectorwise(W, 16, 4)
        assert (mask.sum(1) == 4).all()
        assert mask[0].nonzero()[0].tolist() == [0, 1, 2, 3]
        assert mask[1].nonzero()[0].tolist() == [0, 1, 2, 3]
        assert mask[2].nonzero()[0].tolist() == [0, 1, 4, 5]


def test_t10_keep_minus_nine_over_plus_one():
    W = np.array([[1.0, -9.0, 0.5, 2.0]])
    Wp, _ = sm.prune_vectorwise(W, 4, 2)
    assert Wp.tolist() == [[0.0, -9.0, 0.0, 2.0]]
    enc = sm.encode(W, 4, 1)
    assert num.to_float(enc.values, "fp16").tolist() == [[[-9.0]]]
    assert enc.offsets.tolist() == [[[1]]]


# -- Algorithm 1 ----------------------------------------------------------------------------------
def test_algorithm1_schedule_masks_only_shrink():
    W = fp16_matrix((6, 40), zeros=0.2)
    W[1, :8] = 0.5                                              # ties
    rounds = list(sm.algorithm1_schedule(W, 16, 4))
    assert [k for k, _ in rounds] == list(range(15, 3, -1))
    assert len(rounds) == paper.ALGO1_ROUNDS_TO_PAPER_POINT
    prev = W != 0
    for K, mask in rounds:
        assert not (mask & ~prev).any()                         # mask_{t+1} ⊆ mask_t
        assert np.array_equal(mask, sm.prune_vectorwise(W, 16, K)[1])
        prev = mask
    assert list(sm.algorithm1_schedule(W, 16, 16)) == []


def test_algorithm1_literal_threshold_and_indexing():
    v = np.array([[5.0, 1.0, 1.0, 1.0, 4.0, 3.0, 2.0, 6.0]])
    # 0-based: T = sorted[1] = 1; nothing is < 1, so the tied 1s all survive (8 > L − 1)
    assert (sm.algorithm1_round(v, 8, 1) != 0).sum() == 8
    # with distinct magnitudes 0-based prunes n_zero, 1-based n_zero − 1
    d = np.array([[5.0, 1.0, 7.0, 8.0, 4.0, 3.0, 2.0, 6.0]])
    assert (sm.algorithm1_round(d, 8, 3) != 0).sum() == 5
    assert (sm.algorithm1_round(d, 8, 3, index_base=1) != 0).sum() == 6
    assert (sm.prune_vectorwise(v, 8, 7)[1]).sum() == 7       # the deterministic top-K


# -- T7, T8: offsets, nibble order, duplicates ----------------------------------------------------
def _b_rows(P=4):
    """B[r, p] = 16·r + p + 1: every row distinct, every product and sum exact."""
    return f16(np.arange(16)[:, None] * 16 + np.arange(P)[None, :] + 1.0)


@pytest.mark.parametrize("offs,word", [((15, 15, 15, 15), 0xFFFF), ((12, 13, 14, 15), 0xFEDC),
                                       ((0, 5, 10, 15), 0xFA50), ((1, 2, 3, 4), 0x4321)])
def test_t7_max_offsets_and_nibble_order(offs, word):
    vals = f16([[[1.0, 2.0, -3.0, 0.5]]])
    enc = sm.Encoded(vals, np.array([[offs]]), 16, 16)
    assert int(enc.words[0, 0]) == word                          # offset k in bits [4k+3:4k]
    assert sm.unpack_offsets(np.array([word], np.uint64), 16, 4).tolist() == [list(offs)]
    B = _b_rows()
    for arith in ARITH:
        C = acc_bits(np.zeros((1, 4)), arith["acc"])
        D = sm.sparse_wmma(enc, B, C, **arith)
        want = np.array([1.0, 2.0, -3.0, 0.5]) @ num.to_float(B, "fp16")[list(offs)]
        assert np.array_equal(num.to_float(D, arith["acc"])[0], want)


def test_t8_duplicate_and_unsorted_offsets_sum_in_slot_order():
    B = _b_rows()
    vals = f16([[[1.0, 2.0, 4.0, 8.0]]])
    dup = sm.Encoded(vals, np.array([[[3, 3, 7, 7]]]), 16, 16)
    C = f32(np.zeros((1, 4)))
    Bv = num.to_float(B, "fp16")
    want = 3.0 * Bv[3] + 12.0 * Bv[7]
    assert np.array_equal(num.to_float(sm.sparse_wmma(dup, B, C), "fp32")[0], want)
    assert np.array_equal(sm.decode(dup)[0, [3, 7]], [3.0, 12.0])
    with pytest.raises(ValueError, match="one offset"):
        sm.decode(dup, bits=True)
    # unsorted offsets: the slots are summed in slot order, ((s0 + s1) + (s2 + s3)) + c
    rng = np.random.default_rng(RNG.integers(1 << 30))
    for _ in range(20):
        v = f16(rng.normal(0, 1, (1, 1, 4)) * 2.0 ** rng.integers(-12, 12, (1, 1, 4)))
        off = rng.permutation(16)[:4]
        enc = sm.Encoded(v, off[None, None, :], 16, 16)
        Bn = f16(rng.normal(0, 1, (16, 3)))
        Cn = f32(rng.normal(0, 1, (1, 3)))
        got = sm.sparse_wmma(enc, Bn, Cn)
        assert np.array_equal(got, sm.dp4(v[0, 0], Bn[off].T, Cn[0])[None, :])


# -- T2 (Fig. 7) ----------------------------------------------------------------------------------
def test_t2_fig7_row0_uses_two_b_rows():
    (M, N), (_, P) = paper.FIG7["a_shape"], paper.FIG7["b_shape"]
    A = fp16_matrix((M, N))
    A[0] = 0.0
    c1, c6 = paper.FIG7["row0_cols"]
    A[0, c1], A[0, c6] = 1.5, -2.25
    enc = sm.encode(A, paper.FIG7["L"], paper.FIG7["K"])
    assert enc.offsets[0, 0].tolist() == [c1, c6]
    B = f16(RNG.normal(0, 1, (N, P)))
    D = sm.sparse_wmma(enc, B, f32(np.zeros((M, P))))
    for p in range(P):     # c0 = NZ0·b1 + NZ1·b6, one rounding (+ 0 is exact)
        exact = Fraction(3, 2) * frac(B[c1, p], "fp16") - Fraction(9, 4) * frac(B[c6, p], "fp16")
        assert int(D[0, p]) == num.round_fraction(exact, "fp32")
    sparse, dense = sm.multiplies(enc, P)
    assert sparse // M == paper.FIG7["row0_multiplies"] and dense // M == \
        paper.FIG7["row0_dense_multiplies"]


# -- T5, T6: absent slots -------------------------------------------------------------------------
def _c_specials(acc, n):
    F = num.get_format(acc)
    vals = [0, F.sign_mask, 1, F.sign_mask | 1, F.max_finite, F.inf, F.inf | F.sign_mask, F.nan,
            F.min_normal, int(acc_bits(1.0, acc)), int(acc_bits(-3.5, acc))]
    return np.resize(np.array(vals, dtype=np.uint64), n)


@pytest.mark.parametrize("arith", ARITH, ids=lambda a: f"{a['acc']}-{a['semantics']}")
def test_t5_all_zero_vectors_give_c_bit_exact(arith):
    acc = arith["acc"]
    enc = sm.encode(np.zeros((4, 32)), 16, 4)
    assert (enc.values == 0).all() and (enc.offsets == 0).all()
    B = f16(RNG.normal(0, 1, (32, 11)))
    B[0, 0], B[16, 1], B[0, 2] = INF16, NAN16, INF16 | 0x8000    # B specials never matter
    C = np.stack([np.roll(_c_specials(acc, 11), r) for r in range(4)])
    assert np.array_equal(sm.spmm(enc, B, C, **arith), C)
    # zero_slot="multiply": +0·B[0] is a real product: 0·inf = NaN, and +0 products turn
    # a −0 accumulator into +0 (x + (−x) = +0 rule)
    D = sm.spmm(enc, B, C, zero_slot="multiply", **arith)
    F = num.get_format(acc)
    assert (D[:, [0, 1, 2]] == F.nan).all()
    Bpos = f16(np.abs(RNG.normal(0, 1, (32, 11))))
    D = sm.spmm(enc, Bpos, C, zero_slot="multiply", **arith)
    negzero = C == F.sign_mask
    assert (D[negzero] == 0).all() and np.array_equal(D[~negzero], C[~negzero])


def test_t5_dense_all_zero_a_is_ieee():
    B = f16(np.abs(RNG.normal(0, 1, (16, 3))))
    C = f32([[-0.0, 1.0, -2.0]])
    D = sm.dense_wmma(f16(np.zeros((1, 16))), B, C)
    assert D.tolist() == [[POS_ZERO32, int(C[0, 1]), int(C[0, 2])]]


@pytest.mark.parametrize("arith", ARITH, ids=lambda a: f"{a['acc']}-{a['semantics']}")
def test_t6_padded_slots_contribute_nothing_whatever_their_offset(arith):
    acc = arith["acc"]
    M, N, P = 24, 32, 7
    W = fp16_matrix((M, N), zeros=0.93)                          # mostly < K non-zeros
    W[0, 3] = 1.0                                                # at least one: 1 nnz, 3 pads
    enc = sm.encode(W, 16, 4)
    pad = (enc.values & np.uint64(0x7FFF)) == 0
    assert pad.any() and (~pad).any()
    B = f16(RNG.normal(0, 1, (N, P)))
    B[RNG.integers(0, N, 6), RNG.integers(0, P, 6)] = INF16        # specials, even zero rows
    B[RNG.integers(0, N, 3), RNG.integers(0, P, 3)] = NAN16
    C = acc_bits(RNG.normal(0, 1, (M, P)), acc)
    C[0, :3] = [num.get_format(acc).sign_mask, 0, num.get_format(acc).sign_mask]
    base = sm.spmm(enc, B, C, **arith)
    for _ in range(4):
        offs = np.where(pad, RNG.integers(0, 16, enc.offsets.shape), enc.offsets)
        other = sm.Encoded(enc.values, offs, 16, N)
        assert np.array_equal(sm.spmm(other, B, C, **arith), base)
    # "multiply": with finite B and non-zero C the offsets do not matter either
    Bf = f16(RNG.normal(0, 1, (N, P)))
    Cf = acc_bits(RNG.normal(0, 1, (M, P)) + 3.0, acc)
    base = sm.spmm(enc, Bf, Cf, zero_slot="multiply", **arith)
    offs = np.where(pad, RNG.integers(0, 16, enc.offsets.shape), enc.offsets)
    assert np.array_equal(sm.spmm(sm.Encoded(enc.values, offs, 16, N), Bf, Cf,
                                  zero_slot="multiply", **arith), base)
    assert np.array_equal(base, sm.spmm(enc, Bf, Cf, **arith))


# -- the arithmetic against exact references ------------------------------------------------------
def test_fp16_products_are_exact_in_fp32():
    """Every finite FP16 a (every significand, every exponent) times the special values (±0,
    ±min/max subnormal, ±min normal, ±1, ±(1 + ulp), ±65504): the FP32 product equals the
    float64 one (itself exact: 22 ≤ 53 bits), and on a sample Fractions."""
    a = np.arange(1 << 16, dtype=np.uint64)
    a = a[(a & np.uint64(0x7C00)) != np.uint64(0x7C00)]                # finite
    edges = np.array([e for e in specials("fp16") if (e & 0x7C00) != 0x7C00], np.uint64)
    A, Bm = np.repeat(a, len(edges)), np.tile(edges, len(a))
    p = sm.products(A, Bm)
    assert np.array_equal(num.to_float(p, "fp32"),
                          num.to_float(A, "fp16") * num.to_float(Bm, "fp16"))
    # the extremes, against Fractions: 2^-24·2^-24 = 2^-48, 65504² < 2^32, signs
    ext = np.array([0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C01, 0x0000, 0x8000],
                   np.uint64)
    xa, xb = np.repeat(ext, len(ext)), np.tile(ext, len(ext))
    idx = RNG.integers(0, len(A), 300)
    xa, xb = np.concatenate([xa, A[idx]]), np.concatenate([xb, Bm[idx]])
    for x, y, z in zip(xa, xb, sm.products(xa, xb)):
        assert frac(z, "fp32") == frac(x, "fp16") * frac(y, "fp16")
        if frac(z, "fp32") == 0:                                 # sign of a zero product
            assert int(z) >> 31 == (int(x) >> 15) ^ (int(y) >> 15)
    assert frac(sm.products(0x0001, 0x0001), "fp32") == Fraction(1, 2 ** 48)
    assert frac(sm.products(0x7BFF, 0x7BFF), "fp32") == 65504 ** 2


def _random_dp_operands(rng, n, acc):
    """FP16 a, b with varied exponents (cancellation, subnormals, wide gaps) and C of similar
    scale in acc; no overflow (the oracle is finite; overflow is in the specials test)."""
    hi = 15 if acc == "fp32" else 5
    a = f16(rng.normal(0, 1, (n, 4)) * 2.0 ** rng.integers(-14, hi, (n, 4)))
    b = f16(rng.normal(0, 1, (n, 4)) * 2.0 ** rng.integers(-14, hi, (n, 4)))
    b[: n // 4, 1] = b[: n // 4, 0]                              # exact cancellation p0 + p1
    a[: n // 4, 1] = a[: n // 4, 0] ^ np.uint64(0x8000)
    a[n // 4: n // 3, 2] = 0x0001                                # subnormals
    c = acc_bits(rng.normal(0, 1, n) * 2.0 ** rng.integers(-20, 2 * hi - 10, n), acc)
    c[n // 3: n // 2] = 0
    return a, b, c


@pytest.mark.parametrize("acc", sm.ACC_FORMATS)
@pytest.mark.parametrize("rounding", ["rne", "rtz"])
def test_dp4_semantics_against_fraction_oracle(acc, rounding):
    rng = np.random.default_rng(RNG.integers(1 << 30))
    n = 160
    a, b, c = _random_dp_operands(rng, n, acc)
    got_ieee = sm.dp4(a, b, c, acc=acc, rounding=rounding)
    got_exact = sm.dp4(a, b, c, acc=acc, semantics="exact", rounding=rounding)
    p = sm.products(a, b)
    for i in range(n):
        pt = [(p[i, k], "fp32") for k in range(4)]
        s01 = round_terms(pt[0:2], acc, rounding)
        s23 = round_terms(pt[2:4], acc, rounding)
        s = round_terms([(s01, acc), (s23, acc)], acc, rounding)
        assert int(got_ieee[i]) == round_terms([(s, acc), (c[i], acc)], acc, rounding)
        assert int(got_exact[i]) == round_terms(pt + [(c[i], acc)], acc, rounding)


def test_exact_and_ieee_differ_by_construction_and_agree_without_rounding():
    # products 1, 2^-24, 2^-24, 2^-24 (2^-12 · 2^-12), C = 0: the tree rounds 1 + 2^-24 to 1
    # (a tie, to even); the exact sum 1 + 3·2^-24 is 1.5 ulp and rounds to 1 + 2^-22
    a = f16([1.0, 2.0 ** -12, 2.0 ** -12, 2.0 ** -12])
    b = f16([1.0, 2.0 ** -12, 2.0 ** -12, 2.0 ** -12])
    ieee = sm.dp4(a, b, f32(0.0))
    exact = sm.dp4(a, b, f32(0.0), semantics="exact")
    assert num.to_float(ieee, "fp32") == 1 + 2.0 ** -23
    assert num.to_float(exact, "fp32") == 1 + 2.0 ** -22
    # small integers (every partial sum below 2^11): no rounding anywhere, even in FP16, so
    # the two agree (and with float64)
    A = f16(RNG.integers(-15, 16, (200, 4)))
    Bm = f16(RNG.integers(-15, 16, (200, 4)))
    C = f32(RNG.integers(-500, 501, 200))
    for acc in sm.ACC_FORMATS:
        Cc = num.fp_convert(C, "fp32", acc)
        i = sm.dp4(A, Bm, Cc, acc=acc)
        assert np.array_equal(i, sm.dp4(A, Bm, Cc, acc=acc, semantics="exact"))
        want = (num.to_float(A, "fp16") * num.to_float(Bm, "fp16")).sum(-1) + \
            num.to_float(Cc, acc)
        assert np.array_equal(num.to_float(i, acc), want)


@pytest.mark.parametrize("fmt", sm.ACC_FORMATS)
@pytest.mark.parametrize("rounding", ["rne", "rtz"])
def test_two_term_sum_fast_path_equals_integer_reference(fmt, rounding):
    """x + y rounded once (the FP16 accumulator's first level): the float64 TwoSum + round-to-odd
    path and fp_add against the Python-integer sum, on FP32 pairs of every class (wide gaps,
    cancellation, ties, subnormals, inf/NaN) and on pairs of FP16 products."""
    rng = np.random.default_rng(RNG.integers(1 << 30))
    x, y = random_fp_pairs("fp32", rng, 6000)
    pa, pb = sm.products(*random_fp_pairs("fp16", rng, 4000)), \
        sm.products(*random_fp_pairs("fp16", rng, 4000))
    x, y = np.concatenate([x, pa]), np.concatenate([y, pb])
    got = sm._exact_sum([x, y], fmt, rounding)
    want = sm._exact_sum_ref([x, y], fmt, rounding)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("sem", IEEE_SEM)
def test_fp16_accumulation_rounds_exact_products_once(sem):
    # p0 = (1 + 2^-10)·1.5 = 1.5 + 1.5·2^-10, an FP16 tie; p1 = −2^-48 puts the exact sum just
    # below it: RNE to FP16 gives 1.5 + 2^-10.  Rounding through FP32 first would lose p1 and
    # round the tie to even (1.5 + 2^-9); rounding the products to FP16 first too.
    a = np.array([0x3C01, 0x8001, 0, 0], np.uint64)
    b = np.array([0x3E00, 0x0001, 0, 0], np.uint64)
    got = sm.dp4(a, b, np.uint64(0), acc="fp16", semantics=sem)
    assert num.to_float(got, "fp16") == 1.5 + 2.0 ** -10


def test_dense_and_sparse_orders_differ_but_both_within_bound():
    # row 0 of A: 1 at column 0, 2^-12 at columns 5, 10, 15 (K = 4 survivors, one per chunk);
    # B column 0: 1, 2^-12, 2^-12, 2^-12.  Dense: ((((0 + 1) + 2^-24) + 2^-24) + 2^-24) = 1;
    # sparse: ((1 + 2^-24) + (2^-24 + 2^-24)) + 0 = 1 + 2^-23; exact: 1 + 2^-22
    A = np.zeros((1, 16))
    A[0, [0, 5, 10, 15]] = [1.0, 2.0 ** -12, 2.0 ** -12, 2.0 ** -12]
    B = np.zeros((16, 1))
    B[[0, 5, 10, 15], 0] = [1.0, 2.0 ** -12, 2.0 ** -12, 2.0 ** -12]
    enc = sm.encode(A, 16, 4)
    C = f32([[0.0]])
    dense = sm.dense_wmma(f16(A), f16(B), C)
    sparse = sm.sparse_wmma(enc, f16(B), C)
    exact = sm.sparse_wmma(enc, f16(B), C, semantics="exact")
    assert num.to_float(dense, "fp32")[0, 0] == 1.0
    assert num.to_float(sparse, "fp32")[0, 0] == 1 + 2.0 ** -23
    assert num.to_float(exact, "fp32")[0, 0] == 1 + 2.0 ** -22
    ref = sm.spmm_ref64(enc, f16(B), C)
    for d in (dense, sparse, exact):
        assert abs(num.to_float(d, "fp32") - ref) <= sm.spmm_bound(enc, f16(B), C)
    # on random tiles the two orders differ somewhere, always within their bounds
    W = fp16_matrix((16, 16))
    enc = sm.encode(W, 16, 4)
    Ad = sm.decode(enc, bits=True)
    Bm = f16(RNG.normal(0, 1, (16, 16)))
    Cm = f32(RNG.normal(0, 1, (16, 16)))
    Ds, Dd = sm.sparse_wmma(enc, Bm, Cm), sm.dense_wmma(Ad, Bm, Cm)
    assert (Ds != Dd).any()
    ref = sm.spmm_ref64(enc, Bm, Cm)
    assert np.allclose(ref, sm.dense_ref64(Ad, Bm, Cm), rtol=1e-12, atol=0)
    assert (np.abs(num.to_float(Ds, "fp32") - ref) <= sm.spmm_bound(enc, Bm, Cm)).all()
    assert (np.abs(num.to_float(Dd, "fp32") - ref) <= sm.dense_bound(Ad, Bm, Cm)).all()


def test_dense_wmma_is_the_chain_of_k_chunks():
    A, B = f16(RNG.normal(0, 1, (3, 16))), f16(RNG.normal(0, 1, (16, 5)))
    C = f32(RNG.normal(0, 1, (3, 5)))
    d = C
    for j in range(4):
        d = sm.dp4(A[:, None, 4 * j:4 * j + 4], B[4 * j:4 * j + 4].T[None], d)
    assert np.array_equal(sm.dense_wmma(A, B, C), d)
    # full vectors at K = L = 16: the slots are the k-chunks, so sparse == dense bit for bit
    W = fp16_matrix((3, 16))
    Wb = f16(W)
    assert np.array_equal(sm.spmm(sm.encode(W, 16, 16), B, C), sm.dense_wmma(Wb, B, C))


# -- T11, T12: padding and the sparsity sweep -----------------------------------------------------
def test_t11_padding_n27():
    W = fp16_matrix((8, 27), zeros=0.3)
    enc = sm.encode(W, 16, 4)
    assert enc.V == 2 and enc.n == 27
    Wp, mask = sm.prune_vectorwise(W, 16, 4)
    assert Wp.shape == (8, 27) and mask[:, 16:].sum(1).max() <= 4
    assert (enc.offsets[:, 1][(enc.values[:, 1] & np.uint64(0x7FFF)) != 0] < 11).all()
    B = f16(RNG.normal(0, 1, (27, 9)))
    C = f32(RNG.normal(0, 1, (8, 9)))
    D = sm.spmm(enc, B, C)
    ref = sm.spmm_ref64(enc, B, C)
    assert (np.abs(num.to_float(D, "fp32") - ref) <= sm.spmm_bound(enc, B, C)).all()
    # the chain: tile 1 on top of tile 0
    t0 = sm.sparse_wmma(enc.slice_vectors(0, 1), B[:16], C)
    assert np.array_equal(sm.sparse_wmma(enc.slice_vectors(1, 2), B[16:], t0), D)


@pytest.mark.parametrize("L,K", paper.SPARSITY_SWEEP)
def test_t12_sparsity_sweep_equals_dense_product_of_pruned(L, K):
    M, N, P = 16, 48, 16
    W = fp16_matrix((M, N))
    enc = sm.encode(W, L, K)
    Ad = sm.decode(enc, bits=True)
    B = f16(RNG.normal(0, 1, (N, P)))
    assert np.array_equal(sm.decode(enc), sm.prune_vectorwise(W, L, K)[0])
    # the stated tolerance: error_bound (γ_d·(|C| + Σ|a·b|), d roundings per term)
    for acc, sem, rnd in (("fp32", "ieee", "rne"), ("fp32", "exact", "rne"),
                          ("fp16", "ieee", "rne"), ("fp32", "ieee", "rtz")):
        kw = dict(acc=acc, semantics=sem, rounding=rnd)
        C = acc_bits(RNG.normal(0, 1, (M, P)), acc)
        ref = sm.dense_ref64(Ad, B, C, acc=acc)
        assert np.allclose(ref, sm.spmm_ref64(enc, B, C, acc=acc), rtol=1e-12, atol=1e-300)
        Ds = num.to_float(sm.spmm(enc, B, C, **kw), acc)
        Dd = num.to_float(sm.dense_wmma(Ad, B, C, **kw), acc)
        assert (np.abs(Ds - ref) <= sm.spmm_bound(enc, B, C, **kw)).all()
        assert (np.abs(Dd - ref) <= sm.dense_bound(Ad, B, C, **kw)).all()


# -- T13: specials --------------------------------------------------------------------------------
def _dp(a, b, c, **kw):
    """One DP-4 from values (or uint64 encoding arrays) and C's encoding."""
    def enc(x):
        return x if isinstance(x, np.ndarray) and x.dtype == np.uint64 else f16(x)
    return int(sm.dp4(enc(a), enc(b), np.uint64(c), **kw))


@pytest.mark.parametrize("sem", IEEE_SEM)
def test_t13_specials(sem):
    one = np.ones(4)
    k = dict(semantics=sem)
    # subnormal FP16: 2^-24 · 2^-24 = 2^-48 exact; four of them 2^-46; FP16 acc underflows
    sub = np.array([1, 1, 1, 1], np.uint64)
    assert frac(_dp(sub, sub, POS_ZERO32, **k), "fp32") == Fraction(1, 2 ** 46)
    assert _dp(sub, sub, 0, acc="fp16", **k) == 0
    assert frac(_dp(sub, one, POS_ZERO32, **k), "fp32") == Fraction(4, 2 ** 24)
    # ±65504: 65504² is exact in FP32; in an FP16 accumulator it overflows to ±inf
    big = np.full(4, 65504.0)
    assert frac(_dp(big, big, POS_ZERO32, **k), "fp32") == 4 * 65504 ** 2
    assert _dp(big, -big, 0, acc="fp16", **k) == INF16 | 0x8000
    assert _dp([65504.0, -65504.0, 0, 0], [65504.0, 65504.0, 0, 0], 0, acc="fp16", **k) == 0
    # inf, NaN, inf·0, inf − inf
    assert _dp([np.inf, 1, 1, 1], one, POS_ZERO32, **k) == INF32
    assert _dp([np.inf, 1, 1, 1], -one, POS_ZERO32, **k) == NINF32
    assert _dp([np.inf, 0, 0, 0], [0, 1, 1, 1], POS_ZERO32, **k) == NAN32
    assert _dp([np.inf, np.inf, 0, 0], [1, -1, 0, 0], POS_ZERO32, **k) == NAN32
    assert _dp([1, 1, 1, 1], one, INF32, **k) == INF32
    assert _dp([np.inf, 1, 1, 1], one, NINF32, **k) == NAN32
    assert _dp(np.array([0x7E01, 0, 0, 0], np.uint64), one, POS_ZERO32, **k) == NAN32
    assert _dp(one, one, 0xFFC00001, **k) == NAN32                 # canonical NaN out
    assert _dp([np.nan, 0, 0, 0], one, 0, acc="fp16", **k) == NAN16
    # large C, small products: they vanish below half an ulp of C
    assert _dp(np.full(4, 2.0 ** -10), one, int(f32(2.0 ** 30)), **k) == int(f32(2.0 ** 30))
    # exact cancellation: +0, whatever the sign of the zero C; all −0 terms: −0
    assert _dp([3.0, -3.0, 0, 0], one, NEG_ZERO32, **k) == POS_ZERO32
    assert _dp([3.0, -3.0, 0, 0], one, POS_ZERO32, **k) == POS_ZERO32
    assert _dp([3.0, 1.0, 0, 0], [1, -3.0, 0, 0], 0, acc="fp16", **k) == 0
    assert _dp(-np.zeros(4), one, NEG_ZERO32, **k) == NEG_ZERO32
    assert _dp(np.zeros(4), one, NEG_ZERO32, **k) == POS_ZERO32
    # skip_zero: a ±0 lane is the additive identity, even against inf/NaN in B
    assert _dp([0, 0, 0, 0], [np.inf, np.nan, 1, -1], NEG_ZERO32, skip_zero=True, **k) == \
        NEG_ZERO32
    assert _dp([0, 2, 0, 0], [np.inf, 1.5, 1, -1], 0, skip_zero=True, **k) == int(f32(3.0))


def test_t13_sparse_path_inf_in_b():
    # a survivor meets inf in B: inf; a survivor times 0 in an inf row... a zero B entry
    # under an inf survivor: NaN; pruned positions never meet B (unlike the dense product)
    A = np.zeros((1, 16))
    A[0, 2] = 2.0
    B = f16(np.ones((16, 2)))
    B[2, 0] = INF16
    B[9, 1] = INF16                                              # under a pruned zero of A
    enc = sm.encode(A, 16, 4)
    D = sm.sparse_wmma(enc, B, f32([[1.0, 1.0]]))
    assert D.tolist() == [[INF32, int(f32(3.0))]]
    Dd = sm.dense_wmma(f16(A), B, f32([[1.0, 1.0]]))
    assert Dd.tolist() == [[INF32, NAN32]]                       # dense: 0·inf at k = 9
    inf_a = sm.Encoded(np.array([[[INF16, 0, 0, 0]]], np.uint64), np.array([[[3, 0, 0, 0]]]),
                       16, 16)
    Bz = f16(np.ones((16, 1)))
    Bz[3, 0] = 0
    assert sm.sparse_wmma(inf_a, Bz, f32([[1.0]])).tolist() == [[NAN32]]


# -- the cycle model ------------------------------------------------------------------------------
def test_cycle_model_paper_point():
    for (mode, pp), cycles in paper.WMMA_CYCLES.items():
        assert sm.cycle_model(mode, pp) == cycles
    c = {k: sm.cycle_model(*k) for k in paper.WMMA_CYCLES}
    assert round(c["dense", False] / c["sparse", False], 2) == paper.SPEEDUP_NO_PP
    assert round(c["sparse", False] / c["sparse", True], 2) == paper.SPEEDUP_PP
    t = sm.cycle_timing("sparse", True)
    assert (t["prologue"], t["load"], t["compute"], t["sets"]) == (2, 4, 2, 4)
    assert t["utilisation"] == 8 / 20                          # note §2.4
    t = sm.cycle_timing("dense", True)
    assert (t["load"], t["compute"], t["utilisation"]) == (2, 8, 32 / 34)
    assert sm.cycle_timing("dense", False, fill_bw=paper.FILL_BW)["macs"] == 16 * 16 * 16


def test_cycle_model_generalisation():
    for pp in (False, True):
        cyc = [sm.cycle_model("sparse", pp, K=k) for k in range(1, 17)]
        assert cyc == sorted(cyc) and cyc[3] == paper.WMMA_CYCLES["sparse", pp]
    # K = 2 halves the load: 2 + 2 + 3·max(2, 2, 2) + 2 = 12 with ping-pong
    assert sm.cycle_model("sparse", True, K=2) == 12
    # K = 8: two DP passes per output, load 8: 2 + 8 + 3·8 + 4 = 38
    assert sm.cycle_model("sparse", True, K=8) == 38
    # twice the fill bandwidth: sparse + ping-pong becomes compute-bound, 2 + 2 + 3·2 + 2
    assert sm.cycle_model("sparse", True, fill_bw=32) == 12
    assert sm.cycle_model("dense", False, fill_bw=32) == 4 * (1 + 8)
    # dense at L = 8 covers k = 8: two sets
    assert sm.cycle_model("dense", False, L=8) == 20
    # a slow FETCHIDX/decode becomes the period
    assert sm.cycle_model("sparse", True, t_fetch=3, t_decode=3) == 6 + 4 + 3 * 6 + 2
    for bad in (dict(mode="dual"), dict(fill_bw=0), dict(dps=0), dict(t_fetch=-1)):
        kw = dict(mode="sparse", pingpong=True) | bad
        with pytest.raises(ValueError):
            sm.cycle_model(**kw)
    with pytest.raises(ValueError, match="pingpong"):
        sm.cycle_model("sparse", 1)


# -- fused_sm90: Hopper's fused block in each DP pass ---------------------------------------------
def test_fused_sm90_is_the_measured_block_rule():
    """dp4(semantics=fused_sm90) is tcgen.hw.numeric.fused_dot (window 27, RZ to FP32, RNE to
    FP16); the dense chain is four fused blocks; the sparse SWMMA at K <= 4 is one block per
    tile, i.e. the H100 rule for the 16-wide k-tile (fused_dot over all 16 columns, the pruned
    ones zero) when B is finite."""
    A, B = f16(RNG.normal(0, 1, (4, 16))), f16(RNG.normal(0, 1, (16, 6)))
    C = f32(RNG.normal(0, 4, (4, 6)))
    d = C
    for j in range(4):
        d = num.fused_dot(A[:, None, 4 * j:4 * j + 4], B[4 * j:4 * j + 4].T[None], d, "fp16",
                          "fp32", "fp32", 27, "rtz")
    assert np.array_equal(sm.dense_wmma(A, B, C, semantics="fused_sm90"), d)
    for L, K in ((16, 4), (16, 2), (8, 4)):
        W = fp16_matrix((4, 16), zeros=0.2)
        enc = sm.encode(W, L, K)
        Ad = sm.decode(enc, bits=True)                               # [4, 16] with zeros
        for acc, mode in (("fp32", "rtz"), ("fp16", "rne")):
            Cx = acc_bits(RNG.normal(0, 4, (4, 6)), acc)
            if L == 16:
                want = num.fused_dot(Ad[:, None, :], B.T[None], Cx, "fp16", acc, acc, 27, mode)
                assert np.array_equal(sm.spmm(enc, B, Cx, acc=acc, semantics="fused_sm90"),
                                      want)
            # and within its error bound of the float64 product
            D = sm.spmm(enc, B, Cx, acc=acc, semantics="fused_sm90")
            ref = sm.spmm_ref64(enc, B, Cx, acc=acc)
            bound = sm.spmm_bound(enc, B, Cx, acc=acc, semantics="fused_sm90")
            assert (np.abs(num.to_float(D, acc) - ref) <= bound).all()


def test_fused_sm90_truncates_where_ieee_rounds():
    """p0 = 1, p1..p3 = 2^-26, C = 2^-24 - 2^-26: the exact sum 1 + 2^-24 + 2^-25 rounds (RNE,
    semantics exact) to 1 + 2^-23.  The fused block keeps the bits 2^1..2^-25 of every addend
    (p1..p3 vanish, C becomes 2^-25) and rounds toward zero: 1.  The ieee tree rounds each step
    to nearest: (1 + 2^-26) -> 1, then + 2^-25 -> 1, then + C (< half an ulp) -> 1."""
    a = f16([1.0, 2.0 ** -13, 2.0 ** -13, 2.0 ** -13])
    b = f16([1.0, 2.0 ** -13, 2.0 ** -13, 2.0 ** -13])
    c = f32(2.0 ** -24 - 2.0 ** -26)
    ieee = sm.dp4(a, b, c)
    exact = sm.dp4(a, b, c, semantics="exact")
    fused = sm.dp4(a, b, c, semantics="fused_sm90")
    assert num.to_float(exact, "fp32") == 1 + 2.0 ** -23
    assert num.to_float(fused, "fp32") == 1.0
    assert num.to_float(ieee, "fp32") == 1.0
    # specials: canonical NaN 0x7FFFFFFF; all −0 terms give +0; a skipped ±0 lane ignores inf
    one = f16(np.ones(4))
    assert int(sm.dp4(f16([np.inf, 0, 0, 0]), f16([0, 1, 1, 1]), np.uint64(0),
                      semantics="fused_sm90")) == 0x7FFFFFFF
    assert int(sm.dp4(f16(-np.zeros(4)), one, np.uint64(NEG_ZERO32),
                      semantics="fused_sm90")) == POS_ZERO32
    assert int(sm.dp4(f16([0, 2, 0, 0]), f16([np.inf, 1.5, 1, -1]), np.uint64(0),
                      semantics="fused_sm90", skip_zero=True)) == int(f32(3.0))


def test_bstationary_timing():
    """The B-stationary octet: a SWMMA that loads the L×16 tile overlaps FETCHIDX + decode
    with the load (max(16, 2) + 4·2 = 24 at L16 K4), one on the held tile 2 + 4·2 = 10; the
    mean over a reuse of 4 is (24 + 3·10)/4 = 13.5, approaching 10 (against the paper's 20)."""
    t = sm.bstationary_timing(16, 4, 4)
    assert (t["first"], t["reused"], t["cycles"]) == (24, 10, 13.5)
    assert sm.bstationary_timing(16, 4, 1)["cycles"] == 24
    assert sm.bstationary_timing(16, 8, 4)["reused"] == 2 + 4 * 4        # two DP passes
    assert sm.bstationary_timing(4, 2, 1)["first"] == 4 + 4 * 2          # 2:4: one pass
    means = [sm.bstationary_timing(16, 4, r)["cycles"] for r in (1, 2, 4, 16, 64)]
    assert means == sorted(means, reverse=True) and means[-1] > 10
    with pytest.raises(ValueError, match="reuse"):
        sm.bstationary_timing(16, 4, 0)


# -- the split DP-4 (note §5.1) ------------------------------------------------------------------
@pytest.mark.parametrize("K", [1, 2, 4])
def test_split_spmm_equals_unsplit_under_skip_and_is_the_dp_k_group(K):
    """split=True: each output is one DP-K group -- written out here with fp_add on the exact
    products -- on random tiles with specials in B and ±0 slots; under zero_slot=skip it equals
    the unsplit octet's DP-4 with absent lanes (−0 is the identity); under multiply it differs
    only where an absent +0·+0 lane turns a −0 sum into +0."""
    rng = np.random.default_rng(seed(1420))
    vals = f16(rng.normal(0, 1, (32, 1, K)))
    vals[rng.random(vals.shape) < 0.2] &= np.uint64(0x8000)          # ±0 slots
    enc = sm.Encoded(vals, rng.integers(0, 16, (32, 1, K)), 16, 16)
    B = f16(rng.normal(0, 1, (16, 16)))
    B[3, 5], B[7, 1], B[9, 9] = INF16, NAN16, 0xFC00
    C = f32(rng.normal(0, 2, (32, 16)))
    C[rng.random(C.shape) < 0.1] = NEG_ZERO32
    for zs in sm.ZERO_SLOTS:
        d = sm.spmm(enc, B, C, zero_slot=zs, split=True)
        p = sm.products(enc.values[:, 0, None, :], B[enc.offsets[:, 0, :]].transpose(0, 2, 1))
        if zs == "skip":
            p = np.where((enc.values[:, 0, None, :] & np.uint64(0x7FFF)) == 0,
                         np.uint64(NEG_ZERO32), p)
        terms = [p[..., i] for i in range(K)]
        if K == 4:
            s = num.fp_add(num.fp_add(terms[0], terms[1], "fp32"),
                           num.fp_add(terms[2], terms[3], "fp32"), "fp32")
        else:
            s = terms[0] if K == 1 else num.fp_add(terms[0], terms[1], "fp32")
        np.testing.assert_array_equal(d, num.fp_add(s, C, "fp32"))
        unsplit = sm.spmm(enc, B, C, zero_slot=zs)
        if zs == "skip" or K == 4:
            np.testing.assert_array_equal(d, unsplit)
        else:
            diff = d != unsplit
            assert np.all((d[diff] == NEG_ZERO32) & (unsplit[diff] == POS_ZERO32))


def test_cycle_model_dp_latency():
    """Pipelined DP units (latency Lt): the result Lt cycles after the last issue, plus the
    waits of the accumulation chains -- dense: a k-chunk's column t onto the previous chunk's
    (8 issues apart with ping-pong, 10 without: a wait from Lt = 8 / 10); sparse: pass j onto
    pass j - 1 (2 issues apart: a wait from Lt = 2 when K > 4)."""
    for lt in range(0, 8):
        assert sm.cycle_model("dense", True, dp_latency=lt) == 34 + lt
        assert sm.cycle_model("sparse", True, dp_latency=lt) == 20 + lt        # one pass
        assert sm.bstationary_timing(dp_latency=lt)["reused"] == 10 + lt
    # ping-pong dense, Lt = 9: chunk period max(2, 8, 10) = 10: 2 + 3·10 + 8 + 9
    assert sm.cycle_model("dense", True, dp_latency=9) == 49
    assert sm.cycle_model("dense", False, dp_latency=9) == 40 + 9
    assert sm.cycle_model("dense", False, dp_latency=12) == 2 + 3 * 13 + 8 + 12
    # K = 8 (two passes): the second waits Lt + 1 - 2 cycles, each set
    assert sm.cycle_timing("sparse", True, K=8, dp_latency=1)["compute"] == 4
    assert sm.cycle_timing("sparse", True, K=8, dp_latency=3)["compute"] == 6
    assert sm.cycle_model("sparse", False, K=8, dp_latency=3) == 2 + 8 + 3 * (8 + 6) + 6 + 3
    assert sm.bstationary_timing(16, 8, dp_latency=3)["reused"] == 2 + 4 * 6 + 3
    for bad in (-1, 1.5, "2"):
        with pytest.raises(ValueError, match="dp_latency"):
            sm.cycle_model("dense", True, dp_latency=bad)
        with pytest.raises(ValueError, match="dp_latency"):
            sm.bstationary_timing(dp_latency=bad)


def test_ops_per_cycle_follow_the_dp_latency():
    """The families' throughput (ops per cycle, behind every sweep's perf columns) is the
    cycle model's at the octet's DP latency: a pipelined octet's requests take Lt cycles more
    (and more with the accumulation waits), so it does fewer MACs per cycle back to back."""
    from tcgen.registry import get_unit
    for name, macs in (("octet_dense", 1024), ("warp_mma", 4096)):
        unit = get_unit(name)
        for cuts, lt in (("", 0), ("dp.products", 1), ("dp.products+dp.level0+dp.level1", 3)):
            p = unit.params(cuts=cuts)
            assert p.latency == lt
            assert unit.ops_per_cycle(p) == macs / sm.cycle_model("dense", False, dp_latency=lt)
    dense = get_unit("octet_dense")
    assert dense.ops_per_cycle(dense.params(cuts="dp.products")) == 1024 / 41
    sparse = get_unit("octet_sparse")
    p = sparse.params(cuts="dp.products+dp.level0")
    assert sparse.ops_per_cycle(p) == 4 * 16 * 16 / sm.cycle_model("sparse", True, dp_latency=2)
    bs = get_unit("octet_sparse_bs")
    for lt, cuts in ((0, ""), (2, "dp.products+dp.level0")):
        t = sm.bstationary_timing(dp_latency=lt)
        assert bs.ops_per_cycle(bs.params(cuts=cuts)) == 4 * 16 * 16 * 4 / (
            t["first"] + 3 * t["reused"])


def test_split_cycles_and_errors():
    """The split cycle model: packed sets (4/k rows of k slots); the feed-bound octet gains at
    k = 1 only, the B-stationary octet at every k < 4; K must divide the DP width."""
    ref = {4: (20, 26, 10), 2: (12, 14, 6), 1: (8, 8, 4)}
    for k, (pp, nopp, reused) in ref.items():
        assert sm.cycle_model("sparse", True, K=k, split=True) == pp
        assert sm.cycle_model("sparse", False, K=k, split=True) == nopp
        assert sm.bstationary_timing(16, k, split=True)["reused"] == reused
        t = sm.cycle_timing("sparse", True, K=k, split=True)
        assert t["sets"] == k and t["load"] == 4 and t["compute"] == 2
    assert [sm.cycle_model("sparse", True, K=k) for k in (2, 1)] == [12, 11]
    assert [sm.bstationary_timing(16, k)["reused"] for k in (2, 1)] == [10, 10]
    for bad in (3, 8):
        with pytest.raises(ValueError, match="split needs K dividing"):
            sm.cycle_timing("sparse", True, K=bad, split=True)
    with pytest.raises(ValueError, match="split needs K in 1, 2, 4"):
        sm.spmm(sm.Encoded(f16(np.ones((1, 1, 3))), np.zeros((1, 1, 3), int), 16, 16),
                f16(np.ones((16, 4))), f32(np.zeros((1, 4))), split=True)
