"""The Winograd golden models (tcgen.units.winograd.model) against independent references:
the paper's matrices (Kronecker products of one-hot tiles), scalar re-implementations of the
pinned networks and of the DP-4 chain from tcgen.hw.numeric's primitives, exact (int / Fraction)
direct convolution, float64 direct convolution at the note's tolerances, the rigorous bound,
integer extremes and widths, IEEE specials (../shared/papers/002_winograd.md §4.3, §4.4)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tcgen.verify.harness import seed
from tcgen.hw import numeric as num
from tcgen.units.winograd import model as wm
from tcgen.units.winograd import paper

RNG = np.random.default_rng(seed(15))
FP_MODES = ("fp32", "fp16", "fp16acc")
NAN32, INF32 = 0x7FC00000, 0x7F800000


def fmt(mode, key):
    return wm.formats(mode)[key]


def to_vals(bits, mode, key="out"):
    return num.to_float(bits, fmt(mode, key))


def data(shape, rng=RNG):
    return rng.normal(0.0, 1.0, shape)


def he_filters(K, C, rng=RNG):
    return rng.normal(0.0, math.sqrt(2.0 / (9 * C)), (K, C, 3, 3))


def kron_fraction(M):
    M = np.array([[Fraction(v) for v in r] for r in M], dtype=object)
    return np.kron(M, M)


# -- matrices -------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", wm.TILES)
def test_matrices_are_the_papers(m):
    BT, G, AT = wm.matrices(m, exact=True)
    for mine, theirs in ((BT, paper.BT[m]), (G, paper.G[m]), (AT, paper.AT[m])):
        assert mine.tolist() == [[Fraction(v) for v in r] for r in theirs]
    # the identity itself, exactly, in 1-D: y = Aᵀ[(G g) ⊙ (Bᵀ d)] is the correlation of d and g
    d = [Fraction(int(v)) for v in RNG.integers(-50, 50, m + 2)]
    g = [Fraction(int(v)) for v in RNG.integers(-50, 50, 3)]
    y = AT.dot(G.dot(np.array(g, dtype=object)) * BT.dot(np.array(d, dtype=object)))
    assert list(y) == [sum(d[i + r] * g[r] for r in range(3)) for i in range(m)]


@pytest.mark.parametrize("m", wm.TILES)
def test_amplification_and_multiplies(m):
    one, two = wm.amplification(m)
    assert (one.max(), two.max()) == paper.AMPLIFICATION[m]
    ops = wm.op_counts(m)
    assert (ops["direct_muls"], ops["ewmm_muls"]) == paper.MULTIPLIES[m]


def test_op_counts_f23_match_the_paper():
    ops = wm.op_counts(2)
    P = paper.OP_COUNTS_F23
    assert ops["itf_adds"] == P["itf_adds"] == 32
    assert ops["otf_adds"] == P["otf_adds"] == 24
    assert (ops["ewmm_muls"], ops["direct_muls"]) == (P["ewmm_muls"], P["direct_muls"])
    # the paper's FTF: 7 vectors × (FADD t, FMUL h, 2 FFMA) = 28 instructions; ours: the same 7
    # vectors × (3 adds + 2 halvings) -- the paper's 3 adds per vector, its 3 multiplies by ½
    # folded into 2 exact halvings after the adds
    assert ops["ftf_vectors"] == P["ftf_vectors"]
    assert ops["ftf_vectors"] * P["ftf_per_vector"] == P["ftf_instructions"]
    assert ops["ftf_adds"] == ops["ftf_vectors"] * (P["ftf_per_vector"] - 1) == 21
    assert ops["ftf_halvings"] == 14 and ops["itf_shifts"] == ops["otf_shifts"] == 0
    # integer 2G: the halvings become shifts of the two outer rows
    ops_i = wm.op_counts(2, "int")
    assert (ops_i["ftf_adds"], ops_i["ftf_halvings"], ops_i["ftf_shifts"]) == (21, 0, 14)
    # F(4,3): the shared-term networks (docstring); the FP FTF is offline
    ops4 = wm.op_counts(4)
    assert (ops4["itf_adds"], ops4["otf_adds"], ops4["ftf_adds"]) == (12 * 14, 10 * 10, None)
    assert wm.op_counts(4, "int")["ftf_adds"] == 9 * 8


# -- basis: one-hot tiles give the Kronecker products exactly ------------------------------------
def _onehots(n):
    return np.eye(n * n).reshape(n * n, n, n)


@pytest.mark.parametrize("mode", wm.MODES)
@pytest.mark.parametrize("m", wm.TILES)
def test_basis_itf_otf(m, mode):
    n = m + 2
    E = _onehots(n)
    x = E.astype(np.int64) if mode == "int" else wm.encode_input(E, mode)
    y = wm.itf(x, m, mode)
    yv = y if mode == "int" else to_vals(y, mode, "transform")
    assert np.array_equal(yv.reshape(n * n, n * n).T,
                          kron_fraction(paper.BT[m]).astype(np.float64))
    x = E.astype(np.int64) if mode == "int" else num.from_float(E, fmt(mode, "acc"))
    y = wm.otf(x, m, mode)
    yv = y if mode == "int" else to_vals(y, mode, "acc")
    assert np.array_equal(yv.reshape(n * n, m * m).T,
                          kron_fraction(paper.AT[m]).astype(np.float64))


@pytest.mark.parametrize("mode", wm.MODES)
@pytest.mark.parametrize("m", wm.TILES)
def test_basis_ftf(m, mode):
    n = m + 2
    E = _onehots(3)
    GG = kron_fraction(paper.G[m])                             # [(m+2)², 9], exact
    if mode == "int":
        y = wm.ftf(E.astype(np.int64), m, mode)
        s2 = paper.GROWTH_F43["g_scale"] ** 2 if m == 4 else 4
        assert np.array_equal(y.reshape(9, n * n).T.astype(object), GG * s2)
        return
    t = fmt(mode, "transform")
    y = wm.ftf(wm.encode_input(E, mode), m, mode).reshape(9, n * n).T
    # every entry rounded once from the exact value: exact for F(2,3) (¼, ½, 1), RNE for F(4,3)
    expect = np.array([[num.round_fraction(v, t) for v in r] for r in GG], dtype=np.uint64)
    assert np.array_equal(y, expect)
    if m == 2:
        assert np.array_equal(num.to_float(y, t), GG.astype(np.float64))


# -- the pinned networks, re-implemented from the docstring on scalars ---------------------------
class Scalar:
    """IEEE ops of one format on Python-int encodings."""

    def __init__(self, f):
        self.f = f
        self.sign = num.get_format(f).sign_mask

    def add(self, a, b):
        return int(num.fp_add(np.uint64(a), np.uint64(b), self.f))

    def sub(self, a, b):
        return self.add(a, b ^ self.sign)

    def p2(self, a, k):
        return int(num.fp_mul(np.uint64(a), num.from_float(2.0 ** k, self.f), self.f))

    def half(self, a):
        return int(num.fp_mul(np.uint64(a), num.from_float(0.5, self.f), self.f))


def itf_1d(x, o, m):
    if m == 2:
        return [o.sub(x[0], x[2]), o.add(x[1], x[2]), o.sub(x[2], x[1]), o.sub(x[1], x[3])]
    a, b, c, d = o.add(x[4], x[3]), o.add(x[1], x[2]), o.sub(x[4], x[3]), o.sub(x[1], x[2])
    e, f, g, h = o.sub(x[4], x[2]), o.sub(x[1], x[3]), o.sub(x[0], x[2]), o.sub(x[5], x[3])
    return [o.add(o.p2(g, 2), e), o.sub(a, o.p2(b, 2)), o.add(c, o.p2(d, 2)),
            o.sub(e, o.p2(f, 1)), o.add(e, o.p2(f, 1)), o.add(o.p2(f, 2), h)]


def ftf_1d(x, o, m):
    s = o.add(x[0], x[2])
    return [x[0], o.half(o.add(s, x[1])), o.half(o.sub(s, x[1])), x[2]]


def otf_1d(x, o, m):
    if m == 2:
        return [o.add(o.add(x[0], x[1]), x[2]), o.sub(o.sub(x[1], x[2]), x[3])]
    a, b, c, d = o.add(x[1], x[2]), o.sub(x[1], x[2]), o.add(x[3], x[4]), o.sub(x[3], x[4])
    return [o.add(o.add(a, c), x[0]), o.add(b, o.p2(d, 1)), o.add(a, o.p2(c, 2)),
            o.add(o.add(b, o.p2(d, 3)), x[5])]


def separable(f1d, X, o, m):
    """Column pass (f1d on every column), then row pass (on every row)."""
    cols = [f1d([X[i][j] for i in range(len(X))], o, m) for j in range(len(X[0]))]
    T = [[cols[j][i] for j in range(len(cols))] for i in range(len(cols[0]))]
    return [f1d(row, o, m) for row in T]


def wide_fp(shape, f, rng=RNG, lo=-20, hi=6):
    """Encodings with a wide exponent spread (roundings happen, subnormals in FP16)."""
    v = rng.normal(0, 1, shape) * 2.0 ** rng.integers(lo, hi, shape)
    return num.from_float(v, f)


def signed_unit(shape, rng=RNG):
    """±[1, 2): bounded magnitudes."""
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0) * (1.0 + rng.random(shape))


@pytest.mark.parametrize("f", ["fp32", "fp16"])
@pytest.mark.parametrize("m", wm.TILES)
def test_networks_bit_exact_with_docstring(m, f):
    mode = "fp32" if f == "fp32" else "fp16"
    o = Scalar(f)
    n = m + 2
    d = wide_fp((6, n, n), f)
    got = wm.itf(d, m, mode)
    for t in range(6):
        assert got[t].tolist() == separable(itf_1d, d[t].tolist(), o, m)
    acc = fmt("fp16acc" if f == "fp16" else "fp32", "acc")
    oh = wide_fp((6, n, n), acc)
    got = wm.otf(oh, m, "fp16acc" if f == "fp16" else "fp32")
    oa = Scalar(acc)
    for t in range(6):
        assert got[t].tolist() == separable(otf_1d, oh[t].tolist(), oa, m)
    if m == 2:
        g = wide_fp((6, 3, 3), f, lo=-26 if f == "fp16" else -20)
        got = wm.ftf(g, 2, mode)
        for t in range(6):
            assert got[t].tolist() == separable(ftf_1d, g[t].tolist(), o, 2)


def test_ftf_halving_underflow_rounds_to_nearest_even():
    # ½·2^−24 is a tie between +0 and 2^−24: +0; ½·3·2^−24 = 1.5·2^−24: 2^−23 (even)
    for x0, y1 in ((0x0001, 0x0000), (0x0003, 0x0002), (0x0002, 0x0001)):
        g = np.zeros((3, 3), np.uint64)
        g[0, 0] = x0
        F = wm.ftf(g, 2, "fp16")
        assert int(F[1, 0]) == int(F[2, 0]) == y1
        assert int(F[0, 0]) == x0
        assert y1 == num.round_fraction(num.to_fraction(x0, "fp16") / 2, "fp16")


@pytest.mark.parametrize("m", wm.TILES)
@pytest.mark.parametrize("f", ["fp32", "fp16"])
def test_ftf_exact_against_fraction_oracle(m, f):
    mode = "fp32" if f == "fp32" else "fp16"
    g = wide_fp((20, 3, 3), f, lo=-30 if f == "fp16" else -60, hi=8)
    g[0] = num.from_float(np.zeros((3, 3)), f) | np.uint64(num.get_format(f).sign_mask)
    g[1] = 0                                                      # all +0
    got = wm.ftf(g, m, mode, ftf="exact")
    G = np.array([[Fraction(v) for v in r] for r in paper.G[m]], dtype=object)
    for t in range(len(g)):
        gv = np.array([[num.to_fraction(int(b), f) for b in r] for r in g[t]], dtype=object)
        exact = G.dot(gv).dot(G.T)
        expect = [[num.round_fraction(v, f) for v in r] for r in exact]     # a zero is +0
        assert got[t].tolist() == expect
    assert not np.any(got[0]) and not np.any(got[1])     # −0 or +0 filters: +0 everywhere


def test_ftf_exact_specials():
    f = "fp32"
    g = np.zeros((3, 3, 3), np.uint64)
    g[0, 0, 0] = INF32                                   # +inf alone -> ±inf by coefficient
    g[1, 0, 0] = INF32
    g[1, 0, 2] = INF32 | 0x80000000                      # +inf and −inf meet in row 0 ⊗ ...
    g[2, 1, 1] = NAN32
    F = wm.ftf(g, 4, "fp32", ftf="exact")
    G = np.array(paper.G[4], dtype=object)
    s = np.sign(np.outer(G[:, 0], G[:, 0]).astype(float))
    expect0 = np.where(s > 0, INF32, np.where(s < 0, INF32 | 0x80000000, 0))
    nz = s != 0
    assert np.array_equal(F[0][nz], expect0[nz].astype(np.uint64))
    assert not np.any(num.to_float(F[0][~nz], f))                  # untouched lanes: zeros
    mixed = (np.outer(G[:, 0], G[:, 0]) != 0) & (np.outer(G[:, 0], G[:, 2]) != 0)
    assert np.all(F[1][mixed] == NAN32)
    assert np.all(F[2][np.outer(G[:, 1], G[:, 1]) != 0] == NAN32)


# -- the EWMM: DP-4 chain, padding, zero signs ---------------------------------------------------
def ewmm_scalar(Ih, Fh, mode):
    """One lane's chain from the docstring: acc = −0; per chunk of 4 (padded with products −0)
    acc = ((p0 + p1) + (p2 + p3)) + acc."""
    f = wm.formats(mode)
    A = Scalar(f["acc"])
    acc = num.get_format(f["acc"]).sign_mask
    C = len(Ih)
    for j in range(0, C, 4):
        p = []
        for c in range(j, j + 4):
            if c >= C:
                p.append(num.get_format(f["acc"]).sign_mask)
            elif f["product"] == "exact":
                p.append(int(num.fp_product(np.uint64(Ih[c]), np.uint64(Fh[c]), f["data"],
                                            f["acc"])))
            else:
                p.append(int(num.fp_mul(np.uint64(Ih[c]), np.uint64(Fh[c]), f["data"])))
        acc = A.add(A.add(A.add(p[0], p[1]), A.add(p[2], p[3])), acc)
    return acc


@pytest.mark.parametrize("mode", FP_MODES)
@pytest.mark.parametrize("C", [1, 3, 4, 5, 9])
def test_ewmm_chain_order(mode, C):
    f = fmt(mode, "data")
    L, P, N, K = 4, 3, 1, 2
    Ih = wide_fp((N, C, P, L), f, lo=-8, hi=8)
    Fh = wide_fp((K, C, L), f, lo=-8, hi=8)
    got = wm.ewmm(Ih, Fh, mode)
    for k in range(K):
        for p in range(P):
            for lane in range(L):
                assert int(got[0, k, p, lane]) == ewmm_scalar(Ih[0, :, p, lane].tolist(),
                                                              Fh[k, :, lane].tolist(), mode)


@pytest.mark.parametrize("mode", FP_MODES)
def test_ewmm_zero_signs_and_padding(mode):
    f, a = fmt(mode, "data"), fmt(mode, "acc")
    neg_one = int(num.from_float(-1.0, f))
    Ih = np.zeros((1, 3, 1, 2), np.uint64)                       # +0 inputs, C = 3 (padded)
    Fh = np.array([[[neg_one, 0]] * 3], dtype=np.uint64)        # lane 0: −1, lane 1: +0
    got = wm.ewmm(Ih, Fh, mode)
    # lane 0: (+0)(−1) = −0 three times, padding −0, start −0: −0; lane 1: +0 products: +0
    assert int(got[0, 0, 0, 0]) == num.get_format(a).sign_mask
    assert int(got[0, 0, 0, 1]) == 0


# -- exact cases ---------------------------------------------------------------------------------
def _conv(I, F, m, mode, pad=1, **kw):
    """winograd_conv on real (or integer) values; returns float64 values or ints."""
    if mode == "int":
        return wm.winograd_conv(I, F, m, "int", pad, **kw)
    return to_vals(wm.winograd_conv(wm.encode_input(I, mode), wm.encode_input(F, mode), m,
                                    mode, pad, **kw), mode)


@pytest.mark.parametrize("mode", wm.MODES)
@pytest.mark.parametrize("HW", [(7, 7), (4, 5), (1, 1), (2, 3), (9, 6)])
def test_centre_delta_returns_the_input(mode, HW):
    I = RNG.integers(-100, 101, (2, 1) + HW)
    F = np.zeros((1, 1, 3, 3), np.int64)
    F[0, 0, 1, 1] = 1
    assert np.array_equal(_conv(I, F, 2, mode), I.astype(np.float64))
    if mode == "int":                                           # exact for F(4,3) too
        assert np.array_equal(_conv(I, F, 4, mode), I)
    else:                                                       # 1/6, 1/24: not exact
        assert wm.rel_rms(_conv(I, F, 4, mode), I) < paper.TOLERANCE[(mode, 4)]


@pytest.mark.parametrize("mode", wm.MODES)
@pytest.mark.parametrize("C", [1, 6, 64])
def test_all_ones_gives_9c(mode, C):
    I, F = np.ones((1, C, 7, 7), np.int64), np.ones((2, C, 3, 3), np.int64)
    exact = wm.direct_conv_exact(I, F)
    assert np.all(exact[:, :, 1:-1, 1:-1] == 9 * C)
    assert np.array_equal(_conv(I, F, 2, mode), exact.astype(np.float64))
    if mode == "int":
        assert np.array_equal(_conv(I, F, 4, mode), exact)


# -- the exactness window ------------------------------------------------------------------------
WINDOW_POINTS = [(8, 64), (8, 256), (16, 128), (64, 12), (127, 3), (1, 1000)]


@pytest.mark.parametrize("r,C", WINDOW_POINTS)
def test_exactness_window_fp32_f23(r, C):
    assert 81 * r * r * C < paper.WINDOW_LIMIT
    assert set(paper.WINDOW_VERIFIED) <= set(WINDOW_POINTS)
    K, H = 3, 6
    I = RNG.integers(-r, r + 1, (1, C, H, H))
    F = RNG.integers(-r, r + 1, (K, C, 3, 3))
    I[0, :, 0] = r * np.where(RNG.random((C, H)) < 0.5, -1, 1)   # rows of ±r extremes
    F[0] = r * np.where(RNG.random((C, 3, 3)) < 0.5, -1, 1)
    F[1] = -r                                                      # all −r
    exact = wm.direct_conv_exact(I, F)
    got = wm.winograd_conv(wm.encode_input(I, "fp32"), wm.encode_input(F, "fp32"), 2, "fp32")
    expect = num.from_float(exact.astype(np.float64), "fp32")
    assert np.array_equal(num.to_float(got, "fp32"), exact.astype(np.float64))
    # bit-identical up to the sign of a zero (an all −0 lane gives −0, docstring)
    differ = got != expect
    assert np.all((exact[differ] == 0) & (got[differ] == 0x80000000))


def test_exactness_window_is_f23_only():
    r, C = paper.WINDOW_VERIFIED[0]
    I = RNG.integers(-r, r + 1, (1, C, 8, 8))
    F = RNG.integers(-r, r + 1, (4, C, 3, 3))
    exact = wm.direct_conv_exact(I, F).astype(np.float64)
    got = _conv(I, F, 4, "fp32")
    err = np.abs(got - exact).max()
    assert 0 < err < 1                                             # note: 0.0078
    assert np.all(np.abs(got - exact) <= wm.error_bound(wm.encode_input(I, "fp32"),
                                                         wm.encode_input(F, "fp32"), 4, "fp32"))


# -- random data at the note's tolerances --------------------------------------------------------
SWEEP = [  # (N, C, K, H, W, pad)
    (1, 8, 8, 4, 4, 1), (2, 16, 8, 7, 7, 1), (1, 64, 8, 8, 8, 1), (2, 8, 8, 14, 14, 1),
    (1, 5, 3, 7, 9, 1), (1, 3, 64, 1, 1, 1), (2, 6, 16, 2, 3, 1), (1, 8, 4, 9, 5, 0),
    (1, 4, 2, 5, 6, 2),
]


@pytest.mark.parametrize("mode", FP_MODES)
@pytest.mark.parametrize("m", wm.TILES)
def test_random_within_tolerance(m, mode):
    tol = paper.TOLERANCE[(mode, m)]
    for N, C, K, H, W, pad in SWEEP:
        Ib, Fb = wm.encode_input(data((N, C, H, W)), mode), wm.encode_input(he_filters(K, C),
                                                                            mode)
        got = to_vals(wm.winograd_conv(Ib, Fb, m, mode, pad), mode)
        ref = wm.direct_conv(to_vals(Ib, mode, "data"), to_vals(Fb, mode, "data"), pad)
        assert got.shape == (N, K, H + 2 * pad - 2, W + 2 * pad - 2)
        assert wm.rel_rms(got, ref) <= tol, (N, C, K, H, W, pad)
        # the float64 matrix form agrees with direct convolution to float64 precision
        ref_w = wm.winograd_ref64(to_vals(Ib, mode, "data"), to_vals(Fb, mode, "data"), m, pad)
        assert wm.rel_rms(ref_w, ref) < 1e-13


@pytest.mark.parametrize("mode", FP_MODES)
def test_reproduces_the_notes_measurements(mode):
    """The note's experiment (§4.3) at C = 64, against float64 direct convolution on the
    unrounded data as the note did: within 3× of each measured rel-RMS, F(4,3) ~10× F(2,3)."""
    S, C = paper.EMPIRICAL_SETUP, 64
    I, F = data((S["N"], C, S["HW"], S["HW"])), he_filters(S["K"], C)
    ref = wm.direct_conv(I, F, S["pad"])
    errs = {}
    for m in wm.TILES:
        got = _conv(I, F, m, mode, S["pad"])
        errs[m] = wm.rel_rms(got, ref)
        assert errs[m] <= paper.TOLERANCE[(mode, m)]
        assert 1 / 3 <= errs[m] / paper.EMPIRICAL[(mode, m, C)] <= 3, (m, errs[m])
    assert 3 <= errs[4] / errs[2] <= 12


def test_single_image_and_channel_order():
    C = 16
    I, F = data((C, 7, 7)), he_filters(4, C)
    one = _conv(I, F, 2, "fp16")
    assert one.shape == (4, 7, 7)
    assert np.array_equal(one, _conv(I[None], F, 2, "fp16")[0])
    # another channel order changes the chunks, so the last bits, not the accuracy (§4.4 #7)
    perm = RNG.permutation(C)
    other = _conv(I[perm], F[:, perm], 2, "fp16")
    ref = wm.direct_conv(to_vals(wm.encode_input(I, "fp16"), "fp16", "data"),
                         to_vals(wm.encode_input(F, "fp16"), "fp16", "data"))
    assert wm.rel_rms(other, ref) <= paper.TOLERANCE[("fp16", 2)]
    assert wm.rel_rms(other, one) <= 2 * paper.TOLERANCE[("fp16", 2)]


# -- the rigorous bound --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", FP_MODES)
@pytest.mark.parametrize("m", wm.TILES)
def test_rigorous_bound_never_exceeded(m, mode):
    f = fmt(mode, "data")
    worst = 0.0
    cases = [(1, 1, 2, 5, 5, "normal"), (1, 3, 2, 4, 7, "normal"), (1, 16, 2, 6, 6, "normal"),
             (1, 7, 2, 5, 5, "wide")]
    if m == 2:
        cases.append((1, 5, 2, 4, 4, "exact_ftf"))
    cases.append((1, 6, 2, 4, 4, "tiny"))
    for N, C, K, H, W, kind in cases:
        if kind == "wide":      # small magnitudes: FP16 products and halvings underflow
            Ib = wide_fp((N, C, H, W), f, lo=-12, hi=2)
            Fb = wide_fp((K, C, 3, 3), f, lo=-14, hi=0)
        elif kind == "tiny":    # every product underflows (fp32, fp16acc): only U covers it
            lo_i, lo_f = (-141, -20) if f == "fp32" else (-18, -18)
            Ib = num.from_float(signed_unit((N, C, H, W)) * 2.0 ** lo_i, f)
            Fb = num.from_float(signed_unit((K, C, 3, 3)) * 2.0 ** lo_f, f)
        else:
            Ib, Fb = wm.encode_input(data((N, C, H, W)), mode), wm.encode_input(
                he_filters(K, C), mode)
        ftf = "exact" if kind == "exact_ftf" else None
        got = wm.winograd_conv(Ib, Fb, m, mode, ftf=ftf)
        bound = wm.error_bound(Ib, Fb, m, mode, ftf=ftf)
        exact = wm.direct_conv_exact(to_vals(Ib, mode, "data"), to_vals(Fb, mode, "data"))
        if kind == "tiny" and mode != "fp16" and m == 2:
            abs_mask = np.uint64(num.get_format(fmt(mode, "out")).sign_mask - 1)
            assert np.all(got & abs_mask == 0) and np.any(exact != 0)      # ±0 everywhere
        for g, e, b in zip(got.reshape(-1), exact.reshape(-1), bound.reshape(-1)):
            err = abs(num.to_fraction(int(g), fmt(mode, "out")) - e)
            assert err <= Fraction(float(b))
            worst = max(worst, float(err) / float(b))
    assert worst < 0.5                  # the a-priori bound is loose (note: ≤ 0.0074)


def test_path_roundings():
    assert wm.path_roundings(2, "fp32", 64) == {
        "itf": (2, "fp32"), "ftf": (4, "fp32"), "product": (1, "fp32"), "acc": (17, "fp32"),
        "otf": (4, "fp32")}
    assert wm.path_roundings(2, "fp16", 5) == {
        "itf": (2, "fp16"), "ftf": (4, "fp16"), "product": (0, "fp32"), "acc": (3, "fp32"),
        "otf": (4, "fp32")}
    k = wm.path_roundings(4, "fp16acc", 8)
    assert k == {"itf": (4, "fp16"), "ftf": (1, "fp16"), "product": (1, "fp16"),
                 "acc": (3, "fp16"), "otf": (6, "fp16")}
    # the note's n = C + 8 undercounts the pinned F(2,3) networks for C < 8 (C = 4: 13 > 12)
    total = sum(v[0] for v in wm.path_roundings(2, "fp32", 4).values())
    assert total == 13 > 4 + 8


# -- integers: widths, extremes, exact equality --------------------------------------------------
def test_int_widths_match_the_note():
    w = wm.int_widths(2, 8, 8, 1)
    assert w["itf"] == paper.INT8_ITF
    assert w["ftf"] == paper.INT8_FTF_2G
    assert w["product"][2] == paper.INT8_PRODUCT_BITS
    for C in (1, 2, 3, 64, 100, 512):
        w = wm.int_widths(2, 8, 8, C)
        acc_bits = paper.INT8_PRODUCT_BITS + math.ceil(math.log2(C))
        assert w["acc"][2] <= acc_bits and (C & (C - 1) or w["acc"][2] == acc_bits)
        assert w["otf"][2] - w["acc"][2] <= paper.OTF_EXTRA_BITS
        assert w["otf"][0] <= 4 * w["output"][0] and w["otf"][1] >= 4 * w["output"][1]
    for wb, expect in paper.LOWBIT_FTF_2G.items():
        assert wm.int_widths(2, 8, wb, 1)["ftf"] == expect
    # F(4,3): ×100 at the ITF, ×24 per dimension in G (note §4.3)
    w4 = wm.int_widths(4, 8, 8, 1)
    assert 99 * 128 < -w4["itf"][0] <= paper.GROWTH_F43["itf"] * 128
    assert w4["ftf"][0] == -paper.GROWTH_F43["g_scale"] ** 2 * 128


def _int_run(I, F, m=2, **kw):
    trace = {}
    got = wm.winograd_conv(I, F, m, "int", trace=trace, **kw)
    assert np.array_equal(got, wm.direct_conv_exact(I, F))
    for stage, (lo, hi) in trace["ranges"].items():
        wlo, whi, _ = trace["widths"][stage]
        assert wlo <= lo and hi <= whi, stage
    return trace


def test_int_extremes_itf():
    i, j = np.indices((4, 4))
    cb = np.where((i + j) % 2 == 0, 127, -128)[None, None]          # int8 checkerboard
    tr = _int_run(cb, np.ones((1, 1, 3, 3), np.int64))
    # the (2,2) lane sums d11 − d12 − d21 + d22 = 4 × 127.5 − 0.5·... = 510, not 512: with int8
    # the checkerboard reaches ±510; −512 needs four −128 with coefficient +1 (all −128)
    assert int(np.abs(tr["itf"]).max()) == 510
    tr = _int_run(np.full((1, 1, 4, 4), -128), np.ones((1, 1, 3, 3), np.int64))
    assert int(tr["itf"].min()) == paper.INT8_ITF[0] == -512
    # the note's "checkerboard ±128 → |BᵀdB| = 512" takes 9-bit data
    cb9 = np.where((i + j) % 2 == 0, 128, -128)[None, None]
    tr = _int_run(cb9, np.ones((1, 1, 3, 3), np.int64), data_bits=9)
    assert int(np.abs(tr["itf"]).max()) == 512


def test_int_extremes_ftf():
    tr = _int_run(np.ones((1, 1, 4, 4), np.int64), np.full((1, 1, 3, 3), -128))
    assert int(tr["ftf"].min()) == paper.INT8_FTF_2G[0] == -1152
    sgn = np.outer([1, -1, 1], [1, -1, 1])                           # lane (2,2) of 2G
    tr = _int_run(np.ones((1, 1, 4, 4), np.int64), np.where(sgn > 0, 127, -128)[None, None])
    assert int(tr["ftf"].max()) == paper.INT8_FTF_2G[1] == 1147


def test_int_all_minus_128_at_c512():
    C = 512
    tr = _int_run(np.full((1, C, 4, 4), -128), np.full((1, C, 3, 3), -128))
    w = wm.int_widths(2, 8, 8, C)
    # the interior lane: (−512)·(−1152)·512 -- the accumulator's bound, reached exactly
    assert tr["ranges"]["acc"][1] == w["acc"][1] == 512 * 1152 * C
    assert w["acc"][2] == paper.INT8_PRODUCT_BITS + 9


@pytest.mark.parametrize("m", wm.TILES)
@pytest.mark.parametrize("bits", [(8, 8), (8, 4), (4, 2), (12, 8)])
def test_int_random_exact(m, bits):
    db, wb = bits
    I = RNG.integers(-(1 << (db - 1)), 1 << (db - 1), (2, 5, 7, 6))
    F = RNG.integers(-(1 << (wb - 1)), 1 << (wb - 1), (3, 5, 3, 3))
    _int_run(I, F, m, data_bits=db, weight_bits=wb)


def test_int_object_path_for_wide_data():
    # 32-bit data and weights, F(4,3): the widths pass 62 bits, Python ints take over
    I = RNG.integers(-(1 << 31), 1 << 31, (1, 2, 5, 5))
    F = RNG.integers(-(1 << 31), 1 << 31, (1, 2, 3, 3))
    assert max(v[2] for v in wm.int_widths(4, 32, 32, 2).values()) > 62
    _int_run(I, F, 4, data_bits=32, weight_bits=32)


def _direct_tile_ints(d, g, m):
    """One tile's exact correlation in Python ints: [K, m, m] (no Winograd)."""
    return [[[sum(int(d[c, i + r, j + s]) * int(g[k, c, r, s]) for c in range(d.shape[0])
                  for r in range(3) for s in range(3)) for j in range(m)] for i in range(m)]
            for k in range(g.shape[0])]


@pytest.mark.parametrize("m", wm.TILES)
@pytest.mark.parametrize("bits", [30, 31, 32])
def test_int_stages_exact_for_wide_operands(m, bits):
    """Issue 42's wino_conv mismatch at 31/32 bits: the stage functions (itf, ewmm, otf, as
    wino_conv's model adapter calls them) worked in int64 and wrapped once the products passed
    63 bits; the RTL was right.  Now each stage takes Python ints when its bound needs them:
    s²·(direct correlation) exactly, on random and extreme operands."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    n, C, K = m + 2, 5, 2
    s2 = wm.int_scale(m) ** 2
    for extremes in (False, True):
        d = RNG.integers(lo, hi + 1, (C, n, n))
        g = RNG.integers(lo, hi + 1, (K, C, 3, 3))
        if extremes:
            d, g = np.where(d < 0, lo, hi), np.where(g < 0, lo, hi)
            d[0], g[:, 0] = lo, lo                  # the largest product, positive
        Ih, Fh = wm.itf(d, m, "int"), wm.ftf(g, m, "int")
        Oh = wm.ewmm(Ih.reshape(1, C, 1, n * n), Fh.reshape(K, C, n * n), "int")
        y = wm.otf(Oh.reshape(K, n, n), m, "int")
        assert [[[int(v) for v in r] for r in t] for t in y] == \
            [[[v * s2 for v in r] for r in t] for t in _direct_tile_ints(d, g, m)]
        # object (Python-int) operands are taken as they are, with the same result
        Oo = wm.ewmm(Ih.astype(object).reshape(1, C, 1, n * n),
                     Fh.astype(object).reshape(K, C, n * n), "int")
        assert Oo.tolist() == Oh.tolist()


# -- specials ------------------------------------------------------------------------------------
def test_inf_minus_inf_is_nan_where_direct_gives_inf():
    I = np.zeros((1, 1, 6, 6))
    I[0, 0, 1, 2] = I[0, 0, 3, 2] = np.inf      # tile row 1: d0 = d2 = +inf in one column
    F = np.ones((1, 1, 3, 3))
    direct = wm.direct_conv(I, F)
    assert direct[0, 0, 2, 2] == np.inf
    trace = {}
    got = wm.winograd_conv(wm.encode_input(I, "fp32"), wm.encode_input(F, "fp32"), 2, "fp32",
                           trace=trace)
    # tile (1, 1), tile column 1: the column pass makes t0 = d0 − d2 = inf − inf = NaN; the
    # row pass spreads it to the lanes of row 0 whose Bᵀ row reads column 1 (all but y0 = x0 − x2)
    assert trace["itf"][0, 0, 1, 1, 0].tolist() == [0, NAN32, NAN32, NAN32]
    assert int(got[0, 0, 2, 2]) == NAN32
    # IEEE everywhere: every output that direct convolution makes +inf is NaN or +inf here
    inf = direct[0, 0] == np.inf
    assert np.all((got[0, 0][inf] == NAN32) | (got[0, 0][inf] == INF32))


def test_single_inf_spreads():
    I = np.zeros((1, 1, 8, 8))
    I[0, 0, 3, 4] = np.inf
    F = np.ones((1, 1, 3, 3))
    direct = wm.direct_conv(I, F)[0, 0]
    inf = np.isinf(direct)
    assert inf.sum() == 9 and not np.isnan(direct).any()
    for m in wm.TILES:
        got = num.to_float(wm.winograd_conv(wm.encode_input(I, "fp32"),
                                            wm.encode_input(F, "fp32"), m, "fp32"), "fp32")[0, 0]
        # ±inf of both signs meet in the OTF: NaN at 8 of the 9, +inf at one
        assert np.isnan(got[inf]).sum() == 8 and np.isposinf(got[inf]).sum() == 1
        # F(2,3) keeps the damage to direct's +inf outputs; F(4,3) spreads NaN over its tiles
        assert np.isnan(got[~inf]).sum() == (0 if m == 2 else 16)
        assert np.all(got[~inf & ~np.isnan(got)] == 0)


def test_fp16_itf_overflow():
    x = paper.FP16_ITF_OVERFLOW[2]
    i, j = np.indices((4, 4))
    for v, overflows in ((x, False), (x + 8, True), (16384.0, True)):
        d = wm.encode_input(np.where((i + j) % 2 == 0, v, -v), "fp16")
        Ih = num.to_float(wm.itf(d, 2, "fp16"), "fp16")
        assert np.isinf(Ih).any() == overflows
        assert np.abs(Ih[np.isfinite(Ih)]).max() <= 65504


# -- direct convolution references ---------------------------------------------------------------
def test_direct_conv_against_loops():
    N, C, K, H, W = 1, 2, 2, 4, 5
    I, F = data((N, C, H, W)), data((K, C, 3, 3))
    for pad in (0, 1, 2):
        Ho, Wo = H + 2 * pad - 2, W + 2 * pad - 2
        exact = wm.direct_conv_exact(I, F, pad)
        f64 = wm.direct_conv(I, F, pad)
        assert exact.shape == f64.shape == (N, K, Ho, Wo)
        for k in range(K):
            for h in range(Ho):
                for w in range(Wo):
                    s = Fraction(0)
                    for c in range(C):
                        for r in range(3):
                            for q in range(3):
                                y, x = h + r - pad, w + q - pad
                                if 0 <= y < H and 0 <= x < W:
                                    s += Fraction(I[0, c, y, x]) * Fraction(F[k, c, r, q])
                    assert exact[0, k, h, w] == s
                    assert abs(f64[0, k, h, w] - float(s)) <= 1e-12


def test_tiling_and_crop():
    I = np.arange(2 * 7 * 5).reshape(2, 7, 5) + 1
    for m in wm.TILES:
        for pad in (0, 1, 2):
            d = wm.tile_input(I, m, pad)
            Ho, Wo = 7 + 2 * pad - 2, 5 + 2 * pad - 2
            assert d.shape == (2, -(-Ho // m), -(-Wo // m), m + 2, m + 2)
            P = np.zeros((2, 7 + 2 * pad + 2 * m, 5 + 2 * pad + 2 * m), I.dtype)
            P[:, pad:pad + 7, pad:pad + 5] = I
            for ti in range(d.shape[1]):
                for tj in range(d.shape[2]):
                    assert np.array_equal(d[:, ti, tj],
                                          P[:, m * ti:m * ti + m + 2, m * tj:m * tj + m + 2])
            # untile∘(the centre of each tile) is the crop of the image (pad = 1)
            if pad == 1:
                centre = d[..., 1:m + 1, 1:m + 1]
                assert np.array_equal(wm.untile(centre, Ho, Wo), I)


# -- bad arguments -------------------------------------------------------------------------------
def test_bad_arguments_raise():
    I32 = wm.encode_input(np.ones((1, 2, 4, 4)), "fp32")
    F32 = wm.encode_input(np.ones((1, 2, 3, 3)), "fp32")
    cases = [
        (lambda: wm.winograd_conv(I32, F32, 3), "winograd_conv: m must be 2 or 4"),
        (lambda: wm.winograd_conv(I32, F32, True), "winograd_conv: m must be 2 or 4"),
        (lambda: wm.winograd_conv(I32, F32, 2, "bf16"), "winograd_conv: mode must be"),
        (lambda: wm.winograd_conv(I32, F32, 2, "fp32", -1), "winograd_conv: pad must be"),
        (lambda: wm.winograd_conv(np.ones((1, 2, 4, 4)), F32), "winograd_conv: I must hold fp32"),
        (lambda: wm.winograd_conv(I32, F32[:, :1]), "winograd_conv: F has C=1"),
        (lambda: wm.winograd_conv(I32, F32[..., :2]), r"winograd_conv: F must be \[K, C, 3, 3\]"),
        (lambda: wm.winograd_conv(I32[0, 0], F32), r"winograd_conv: I must be \[N, C, H, W\]"),
        (lambda: wm.winograd_conv(I32[..., :1, :1], F32, pad=0), "winograd_conv: the output"),
        (lambda: wm.winograd_conv(I32, F32, 4, ftf="network"), "winograd_conv: ftf='network'"),
        (lambda: wm.winograd_conv(I32, F32, 2, ftf="offline"), "winograd_conv: ftf must be"),
        (lambda: wm.winograd_conv(I32, F32, 2, trace=[]), "winograd_conv: trace must be"),
        (lambda: wm.winograd_conv(np.full((1, 1, 4, 4), 128), np.ones((1, 1, 3, 3), int), 2,
                                  "int"), r"winograd_conv: I must lie in \[-128, 127\]"),
        (lambda: wm.winograd_conv(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), 2, "int"),
         "winograd_conv: I must be an integer array"),
        (lambda: wm.winograd_conv(np.ones((1, 1, 4, 4), int), np.ones((1, 1, 3, 3), int), 2,
                                  "int", weight_bits=1), "winograd_conv: weight_bits must be"),
        (lambda: wm.winograd_conv(np.ones((1, 1, 4, 4), int), np.ones((1, 1, 3, 3), int), 2,
                                  "int", ftf="exact"), "winograd_conv: ftf must be 'network'"),
        (lambda: wm.winograd_conv(np.full((1, 1, 4, 4), 1 << 40, np.uint64), F32[:, :1]),
         "winograd_conv: I holds a value that is not a fp32 encoding"),
        (lambda: wm.error_bound(I32, F32, 2, "int"), "error_bound: mode must be"),
        (lambda: wm.path_roundings(2, "fp32", 0), "path_roundings: C must be"),
        (lambda: wm.int_widths(2, 8, 8, 0), "int_widths: C must be"),
        (lambda: wm.int_widths(2, 40, 8, 1), "int_widths: data_bits must be"),
        (lambda: wm.itf(np.zeros((3, 3), np.uint64)), r"itf: d must be \[..., 4, 4\]"),
        (lambda: wm.ftf(np.zeros((3, 3)), 2), "ftf: g must hold fp32 encodings"),
        (lambda: wm.otf(np.zeros((4, 4), np.uint64), 5), "otf: m must be 2 or 4"),
        (lambda: wm.ewmm(np.zeros((1, 2, 1, 16), np.uint64), np.zeros((1, 3, 16), np.uint64)),
         "ewmm: I_hat must be"),
        (lambda: wm.untile(np.zeros((2, 2, 2, 2)), 5, 3), "untile:"),
        (lambda: wm.tile_input(np.zeros((1, 1)), 2, 0), "tile_input: the output"),
        (lambda: wm.direct_conv(np.ones((1, 1, 3, 3)), np.ones((1, 2, 3, 3))),
         "direct_conv: F has C=2"),
        (lambda: wm.direct_conv_exact(np.full((1, 1, 3, 3), np.inf), np.ones((1, 1, 3, 3))),
         "direct_conv_exact: I holds inf"),
        (lambda: wm.formats("int"), "formats: mode must be"),
        (lambda: wm.rel_rms(np.ones(3), np.zeros(3)), "rel_rms: the reference is all zero"),
        (lambda: wm.matrices(3), "matrices: m must be"),
    ]
    for call, msg in cases:
        with pytest.raises(ValueError, match=msg):
            call()


# -- direct_tile: the direct baseline with the RTL's rounding points ----------------------------
def _direct_image(I, F, m, mode):
    """model.direct_tile over every tile of one image I [C, H, W] -> O [K, H', W'] encodings."""
    d = np.moveaxis(wm.tile_input(I, m), 0, 2)                     # [Th, Tw, C, n, n]
    y = wm.direct_tile(d, F, m, mode)                              # [Th, Tw, K, m, m]
    return wm.untile(np.moveaxis(y, 2, 0), I.shape[1], I.shape[2])


def _direct_bound(I, F, mode):
    """γ_k·Σ|d·g| per output, k = (product rounded) + 2 + ⌈9C/4⌉ (model docstring)."""
    f = wm.formats(mode)
    u = 2.0 ** -(num.get_format(f["acc"]).man_bits + 1)
    k = (f["product"] == "rounded") + 2 + -(-9 * I.shape[0] // 4)
    return k * u / (1 - k * u) * wm.direct_conv(np.abs(to_vals(I, mode, "data")),
                                                np.abs(to_vals(F, mode, "data")))


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("mode", ["fp32", "fp16", "fp16acc"])
def test_direct_tile_within_bound_of_direct_conv(m, mode):
    rng = np.random.default_rng(seed(1510))
    for C, K, H, W in ((1, 2, 5, 4), (5, 3, 7, 6), (8, 2, 4, 9)):
        I = wm.encode_input(data((C, H, W), rng), mode)
        F = wm.encode_input(he_filters(K, C, rng), mode)
        got = to_vals(_direct_image(I, F, m, mode), mode, "acc")
        ref = wm.direct_conv(to_vals(I, mode, "data"), to_vals(F, mode, "data"))
        assert np.all(np.abs(got - ref) <= _direct_bound(I, F, mode)), (C, K)


@pytest.mark.parametrize("mode", ["fp32", "fp16", "fp16acc"])
def test_direct_tile_exact_on_small_integers(mode):
    """Integers in [−8, 8], C = 3: every partial sum ≤ 27·64 = 1728 < 2^11, exact even in FP16
    accumulation, so the result is the direct convolution exactly (signs of zero aside)."""
    rng = np.random.default_rng(seed(1511))
    for m in (2, 4):
        I = rng.integers(-8, 9, (3, 6, 7))
        F = rng.integers(-8, 9, (4, 3, 3, 3))
        got = to_vals(_direct_image(wm.encode_input(I, mode), wm.encode_input(F, mode), m,
                                    mode), mode, "acc")
        assert np.array_equal(got, wm.direct_conv_exact(I, F).astype(np.float64))


def test_direct_tile_order_and_padding():
    """The pinned order: term t = 9c + 3r + s, four per DP-4 chunk from −0, the last chunk
    padded with (−0, +0) -- checked against scalar dot4 calls on fp16acc data where the order
    is visible (large cancelling terms), and the sign of zero: all-zero products give −0 only
    when every product is −0."""
    rng = np.random.default_rng(seed(1512))
    m, C, K = 2, 3, 2
    d = wm.encode_input(rng.normal(0, 1, (C, 4, 4)) * rng.choice([1, 512], (C, 4, 4)), "fp16acc")
    g = wm.encode_input(rng.normal(0, 1, (K, C, 3, 3)) * rng.choice([1, 64], (K, C, 3, 3)),
                        "fp16acc")
    got = wm.direct_tile(d, g, m, "fp16acc")
    for k in range(K):
        for i in range(m):
            for j in range(m):
                a = [int(d[c, i + r, j + s]) for c in range(C) for r in range(3)
                     for s in range(3)] + [0x8000] * 1
                b = [int(g[k, c, r, s]) for c in range(C) for r in range(3)
                     for s in range(3)] + [0] * 1
                acc = np.uint64(0x8000)
                for q in range(7):
                    acc = num.dot4(np.array(a[4 * q:4 * q + 4], np.uint64),
                                   np.array(b[4 * q:4 * q + 4], np.uint64), acc, "fp16",
                                   "fp16", "rounded")
                assert int(got[k, i, j]) == int(acc), (k, i, j)
    z = np.zeros((1, 4, 4), np.uint64)
    neg = np.full((1, 1, 3, 3), 0xBC00, np.uint64)                     # −1
    assert int(wm.direct_tile(z, neg, 2, "fp16")[0, 0, 0]) == 0x80000000        # all −0
    assert int(wm.direct_tile(z, neg ^ 0x8000, 2, "fp16")[0, 0, 0]) == 0        # +0
