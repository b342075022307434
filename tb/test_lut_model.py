"""The LUT Tensor Core golden models (tcgen.units.lut.model): each layer against the one above
it, the paper's worked examples, the notes' corner cases (../shared/papers/003_lut_tc.md §4.4)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tcgen.hw import numeric as num
from tcgen.units.lut import model as lm

RNG = np.random.default_rng(2025)


# -- Eq. 1-3: weight reinterpretation ---------------------------------------------------------
@pytest.mark.parametrize("bits", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("signed", [False, True])
def test_eq2_is_an_identity(bits, signed):
    q = np.arange(1 << bits)
    s, z = RNG.uniform(0.1, 3.0), RNG.uniform(-4, 4)
    sp, zp = lm.reinterpret_scale(s, z, bits, signed=signed)
    qp = lm.reinterpret(q, bits, signed=signed)
    np.testing.assert_allclose(lm.dequantize(q, s, z, bits, signed=signed), sp * (qp - zp),
                               rtol=1e-12, atol=1e-12)
    # odd integers, symmetric about 0 (Fig. 7: 0..15 -> -15, -13, ..., 15)
    assert sorted(qp.tolist()) == list(range(-(1 << bits) + 1, 1 << bits, 2))


def test_signed_weights_need_the_msb_flip():
    q = np.arange(16)                                       # INT4 two's complement -8..7
    signed = np.where(q >= 8, q - 16, q)
    assert (lm.reinterpret(q, 4, signed=True) == 2 * signed + 1).all()
    # the raw bits without the flip are a different (wrong) value for q < 0
    raw = lm.reinterpret(q, 4, signed=False)
    assert (raw[signed < 0] != 2 * signed[signed < 0] + 1).all()


def test_ternary_through_int2_needs_the_offset_term():
    # BitNet b1.58: q in {-1, 0, 1} stored as q_u = q + 1 in {0, 1, 2}, z = 1
    A = RNG.integers(-127, 128, (3, 8))
    t = RNG.integers(-1, 2, (5, 8))
    s = np.full(5, 0.5)
    out = lm.lut_gemm(A, t + 1, s, np.ones(5), 2)
    assert np.array_equal(out, A @ (0.5 * t).T)
    sp, zp = lm.reinterpret_scale(0.5, 1.0, 2)
    assert zp == -1.0                                        # z' != 0: the -s'z'Σa term matters
    # binary ±1 weights with z = 1/2 need none
    assert lm.reinterpret_scale(2.0, 0.5, 1)[1] == 0.0


def test_paper_worked_example():
    # W3W2W1W0 = 0100, A..D = 1, 2, 3, 4, s = 2, z = 1/2  ->  -A+B-C-D = -6
    a = np.array([1, 2, 3, 4])
    q = np.array([0, 1, 0, 0])                                 # W3..W0 with W3 <-> A
    assert lm.dequantize(q, 2.0, 0.5, 1) @ a == -6
    assert lm.lut_dot(a, q, 1) == -6                           # s' = 1, z' = 0


# -- Eq. 4-6: the symmetric table and offline index inversion ------------------------------------
@pytest.mark.parametrize("K", [2, 3, 4, 5, 6])
def test_half_table_lookup_equals_full_table_for_every_code(K):
    a = RNG.integers(-1000, 1000, (7, K))
    full = lm.full_table(a)
    half = lm.half_table(a)
    codes = np.arange(1 << K)
    assert (full[:, (~codes) & ((1 << K) - 1)] == -full).all()          # Eq. 4
    plane = np.stack([(codes >> (K - 1 - i)) & 1 for i in range(K)], axis=-1)
    sign, idx = lm.encode_plane(plane)
    assert (lm.decode_plane(sign, idx, K) == plane).all()
    got = lm.lookup(half[:, None, :], sign[None, :], idx[None, :])
    assert (got == full).all()


def test_stored_table_matches_the_notes():
    A, B, C, D = 1, 10, 100, 1000
    T = lm.half_table(np.array([A, B, C, D]))
    assert T.tolist() == [-A - B - C - D, -A - B - C + D, -A - B + C - D, -A - B + C + D,
                          -A + B - C - D, -A + B - C + D, -A + B + C - D, -A + B + C + D]
    # A+B-C-D has the full code 1100: stored as sign 1, idx 011 (Eq. 6)
    sign, idx = lm.encode_plane(np.array([1, 1, 0, 0]))
    assert (int(sign), int(idx)) == (1, 0b011)
    assert -T[0b011] == A + B - C - D


@pytest.mark.parametrize("bits", [1, 2, 3, 4])
@pytest.mark.parametrize("signed", [False, True])
def test_layer2_equals_layer1_exactly_for_integers(bits, signed):
    A = RNG.integers(-128, 128, (4, 32))
    Wq = RNG.integers(0, 1 << bits, (6, 32))
    s = RNG.integers(1, 5, 6).astype(np.float64)
    z = RNG.integers(-3, 4, 6).astype(np.float64)
    assert np.array_equal(lm.lut_gemm(A, Wq, s, z, bits, signed=signed),
                          lm.exact_gemm(A, Wq, s, z, bits, signed=signed))


# -- layer 3: precompute -------------------------------------------------------------------------
def _fp16(x):
    return num.from_float(np.asarray(x, dtype=np.float64), "fp16")


@pytest.mark.parametrize("network", ["naive", "gray"])
def test_precompute_int_is_exact_and_fits_the_entry_width(network):
    a = np.array([[127, 127, 127, 127], [-128, -128, -128, -128], [-128, 127, -128, 127]])
    T = lm.precompute(a, "int8", network=network)
    assert (T == lm.half_table(a)).all()
    lim = 1 << (lm.entry_bits("int8", 4) - 1)
    assert lm.entry_bits("int8", 4) == 11 and (-lim <= T).all() and (T < lim).all()
    assert np.abs(T).max() == 512


@pytest.mark.parametrize("network", ["naive", "gray"])
def test_precompute_fp16_rounds_each_add(network):
    a = _fp16(RNG.normal(0, 1, (500, 4)))
    T = lm.precompute(a, "fp16", network=network)
    exact = lm.half_table(num.to_float(a, "fp16"))
    got = num.to_float(T, "fp16")
    # three rounded adds per naive entry; Gray: up to 2^(K-1) chained adds (bound: 8 ulps of
    # the largest partial sum, which is at most sum|a|)
    ulp = np.abs(num.to_float(a, "fp16")).sum(axis=-1, keepdims=True) * 2.0 ** -10
    assert (np.abs(got - exact) <= 8 * ulp).all()
    if network == "naive":   # chained RNE adds: entry 0 is ((-a0 - a1) - a2) - a3 exactly so
        t = a[:, 0] ^ np.uint64(0x8000)
        for k in (1, 2, 3):
            t = num.fp_add(t, a[:, k] ^ np.uint64(0x8000), "fp16")
        assert (T[:, 0] == t).all()


def test_gray_and_naive_differ_somewhere_but_agree_on_exact_sums():
    a = _fp16(RNG.normal(0, 1, (2000, 4)))
    g, n = lm.precompute(a, "fp16", network="gray"), lm.precompute(a, "fp16", network="naive")
    assert (g != n).any()                       # the two networks round differently
    small = _fp16(RNG.integers(-64, 64, (200, 4)))        # integers: every sum exact
    assert (lm.precompute(small, "fp16", network="gray") ==
            lm.precompute(small, "fp16", network="naive")).all()


# -- layer 3: table quantization ---------------------------------------------------------------
@pytest.mark.parametrize("gran,block", [("table", 1), ("block", 4), ("row", 1)])
def test_int8_table_quantization_bounds(gran, block):
    a = RNG.standard_t(3, (3, 10, 4)) * 5                  # outliers (heavy tails)
    a[0, 3] = 0.0                                          # an all-zero group
    T = lm.half_table(a)
    Tq, s = lm.quantize_tables(T, gran, block)
    assert Tq.min() >= -127 and Tq.max() <= 127            # -128 never produced
    assert (np.abs(T - s * Tq) <= s / 2 + 1e-12).all()
    if gran == "table":                                    # s = Σ|a|/127: no saturation
        np.testing.assert_allclose(s[..., 0], np.abs(a).sum(axis=-1) / 127)
        assert (Tq[0, 3] == 0).all() and s[0, 3, 0] == 0


def test_per_table_scale_is_never_worse_than_per_row():
    a = RNG.standard_t(2, (50, 32, 4))
    T = lm.half_table(a)
    err = {}
    for g in ("table", "row"):
        Tq, s = lm.quantize_tables(T, g)
        err[g] = np.abs(T - s * Tq).max(axis=(-1, -2))
    assert (err["table"] <= err["row"] + 1e-12).all()


# -- layer 3: plane scaling and the bit-serial DP-4 ------------------------------------------------
def test_fp_plane_scaling_edges():
    pz, nz = np.uint64(0x0000), np.uint64(0x8000)
    sub = np.uint64(0x0001)                                 # smallest subnormal 2^-24
    big = _fp16(40000.0)
    for j in range(4):
        assert lm.plane_scale(pz, j, "fp16") == pz and lm.plane_scale(nz, j, "fp16") == nz
        assert num.to_fraction(int(lm.plane_scale(sub, j, "fp16")), "fp16") == \
            Fraction(2) ** (j - 24)
    assert lm.plane_scale(big, 1, "fp16") == 0x7C00                       # overflow -> +Inf
    # the released RTL's exponent add would give 0x0000 + (1 << 10) = 2^-14 for a zero entry
    assert int(pz) + (1 << 10) != int(lm.plane_scale(pz, 1, "fp16"))


def test_fp16_accumulation_rne_ties():
    acc = _fp16(2048.0)
    one, three = _fp16(1.0), _fp16(3.0)
    table = np.array([[one, three]], dtype=np.uint64)
    r1 = lm.dp_bits(table, np.array([[0]]), np.array([[0]]), np.array([acc]),
                    entry_fmt="fp16", acc_fmt="fp16")
    r3 = lm.dp_bits(table, np.array([[0]]), np.array([[1]]), np.array([acc]),
                    entry_fmt="fp16", acc_fmt="fp16")
    assert num.to_float(r1, "fp16")[0] == 2048.0 and num.to_float(r3, "fp16")[0] == 2052.0


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_dp_bits_int_exhaustive_against_layer2(bits):
    """Every weight pattern of one K=4 group (2^(4b) codes) on random and adversarial INT8
    activations: the bit-serial INT unit equals Σ a·q′ + c exactly."""
    codes = np.arange(1 << (4 * bits))
    q = np.stack([(codes >> (bits * i)) & ((1 << bits) - 1) for i in range(4)], axis=-1)
    acts = [RNG.integers(-128, 128, 4), np.array([-128] * 4), np.array([127, -128, 127, -128])]
    for a in acts:
        T = lm.precompute(a, "int8")
        planes = lm.bit_planes(q, bits)
        sign, idx = lm.encode_plane(planes)
        c = RNG.integers(-1000, 1000, len(codes))
        got = lm.dp_bits(np.broadcast_to(T, (len(codes), 8)), sign, idx, c,
                         entry_fmt="int11", acc_fmt="int32")
        want = (lm.reinterpret(q, bits) * a).sum(axis=-1) + c
        assert np.array_equal(got, want)


def test_dp_bits_fp_equals_exact_when_exact():
    """FP16 entries, FP32 accumulator: with integer activations every step is exact, so the
    unit equals the exact dot product; with FP16 accumulation it is the sequential RNE sum."""
    a = RNG.integers(-8, 8, (300, 4))
    q = RNG.integers(0, 16, (300, 4))
    T = lm.precompute(_fp16(a), "fp16")
    sign, idx = lm.encode_plane(lm.bit_planes(q, 4))
    c = RNG.integers(-100, 100, 300)
    got = lm.dp_bits(T, sign, idx, num.from_float(c, "fp32"), entry_fmt="fp16", acc_fmt="fp32")
    assert np.array_equal(num.to_float(got, "fp32"), (lm.reinterpret(q, 4) * a).sum(-1) + c)


def test_gemm_level_error_budget_fp16_int8_tables():
    """A 1×5120 · 5120×64 slice (M2N64K4 tiles along K) with FP16 activations, INT2 weights,
    per-table INT8 quantization and an FP32 accumulator: within the derived bound
    |err| ≤ s′·(2^b − 1)·Σ_g s_T,g / 2 + accumulation rounding."""
    M, Kt, N, b = 1, 5120, 64, 2
    A = num.to_float(_fp16(RNG.normal(0, 1, (M, Kt))), "fp16")
    Wq = RNG.integers(0, 1 << b, (N, Kt))
    s, z = np.full(N, 0.02), np.full(N, 1.5)                 # symmetric grid: z' = 0
    exact = lm.exact_gemm(A, Wq, s, z, b)
    T = lm.half_table(A.reshape(M, Kt // 4, 4))              # (M, G, 8)
    Tq, sT = lm.quantize_tables(T, "table")
    planes = lm.bit_planes(Wq.reshape(N, Kt // 4, 4), b)     # (b, N, G, 4)
    sign, idx = lm.encode_plane(planes)                       # (b, N, G)
    # dequantized-table accumulation in float64 (the INT path's value) vs the exact
    vals = sum((1 << j) * lm.lookup(Tq[:, None] * sT[:, None], sign[j][None], idx[j][None])
               for j in range(b))                             # (M, N, G)
    sp, zp = lm.reinterpret_scale(s, z, b)
    got = sp * vals.sum(-1)
    bound = sp * ((1 << b) - 1) * sT[..., 0].sum(-1)[:, None] / 2
    assert (np.abs(got - exact) <= bound + 1e-9).all()
    assert np.abs(got - exact).max() > 0                      # quantization does act


_GEMM_FAST = {("int8", "int32", 2), ("fp16", "fp32", 4), ("fp16", "fp16", 1)}


@pytest.mark.parametrize("act,acc,b", [
    (a, c, b) if (a, c, b) in _GEMM_FAST else pytest.param(a, c, b, marks=pytest.mark.slow)
    for a, c in [("int8", "int32"), ("fp16", "fp32"), ("fp16", "fp16")] for b in (1, 2, 4)])
def test_gemm_level_layer_slice_bit_accurate(act, acc, b):
    """A 2×5120 · 5120×64 slice of a 5120×5120 layer, tiled into M2N64K4 LMMAs (1280 K-groups
    chained through the accumulator) on the bit-accurate array model: tables from the
    precompute (INT8: exact 11-bit; FP16: the Gray network, every add rounded), the planes
    LSB first, the accumulator in ``acc``; then O = s′·acc − s′z′·Σa against the exact layer.

    INT8 is exact.  FP: a table entry is reached after at most 3 + 7 rounded adds of partial
    sums bounded by Σ_g|a|, so |T̂ − T| ≤ 10·u_t·Σ_g|a| (u_t = 2^−11); a plane adds it ×2^j, so
    a group's error is ≤ (2^b − 1)·10·u_t·Σ_g|a|; the G·b accumulate adds each round a partial
    sum ≤ (2^b − 1)·Σ|a| by at most u_acc of it.  Bound = (2^b − 1)·Σ|a|·(10·u_t + G·b·u_acc)."""
    M, N, K, Kt = 2, 64, 4, 5120
    G = Kt // K
    rng = np.random.default_rng(1700 + b)
    if act == "int8":
        A = rng.integers(-128, 128, (M, Kt))
        Av = A.astype(np.float64)
    else:
        A = _fp16(rng.normal(0, 1, (M, Kt)))
        Av = num.to_float(A, "fp16")
    Wq = rng.integers(0, 1 << b, (N, Kt))
    s, z = rng.uniform(0.01, 0.03, N), rng.integers(0, 1 << b, N).astype(np.float64)
    exact = lm.exact_gemm(Av, Wq, s, z, b)
    planes = lm.bit_planes(Wq.reshape(N, G, K), b)              # (b, N, G, K)
    sign, idx = lm.encode_plane(planes)                          # (b, N, G)
    codes = (sign << (K - 1)) | idx
    tables = lm.precompute(A.reshape(M, G, K), act)              # (M, G, 8)
    req = {"lut": np.moveaxis(tables, 1, 0), "w": np.moveaxis(codes, 2, 0),
           "c": np.zeros((G, M, N), dtype=np.int64 if act == "int8" else np.uint64),
           "chain": np.arange(G) > 0, "emit": np.arange(G) == G - 1}
    entry = "int11" if act == "int8" else "fp16"
    (d,) = lm.lut_array_model(req, m=M, n=N, k=K, w_bits=b, entry_fmt=entry, acc_fmt=acc)["d"]
    accv = d.astype(np.float64) if act == "int8" else num.to_float(d, acc)
    sp, zp = lm.reinterpret_scale(s, z, b)
    got = sp * accv - (sp * zp) * Av.sum(axis=1)[:, None]
    if act == "int8":
        assert np.array_equal(d, Av.astype(np.int64) @ lm.reinterpret(Wq, b).T)
        assert np.allclose(got, exact, rtol=1e-12, atol=1e-9)
        return
    u_acc = 2.0 ** -(num.get_format(acc).man_bits + 1)
    bound = ((1 << b) - 1) * np.abs(Av).sum(axis=1)[:, None] * (10 * 2.0 ** -11 + G * b * u_acc)
    err = np.abs(accv - Av @ lm.reinterpret(Wq, b).T)
    assert (err <= bound).all() and err.max() > 0
    assert np.allclose(got, exact, atol=(sp * bound).max())


def test_int8_table_quantization_pow2_scale():
    """The hardware's INT8 table (power-of-two scale): e is the smallest with Σ|a| < 2^(7+e),
    entries within half a step (a step where RNE reaches ±128 and is clamped), never −128,
    and exact when the table already fits (Σ|a| ≤ 127)."""
    rng = np.random.default_rng(1710)
    a = np.concatenate([rng.integers(-128, 128, (4000, 4)),
                        np.array([[127, 128, 0, 0], [-1, 0, 0, 0], [31, 32, 32, 32],
                                  [0, 0, 0, 0]])])
    T = lm.half_table(a)
    q, e = lm.quantize_table_pow2(T, a)
    m = np.abs(a).sum(-1)
    assert ((m < 2.0 ** (7 + e)) & ((e == 0) | (m >= 2.0 ** (6 + e)))).all()
    err = np.abs(T - q * 2.0 ** e[:, None])
    clamped = np.abs(np.rint(T / 2.0 ** e[:, None])) > 127
    assert (err <= np.where(clamped, 2.0 ** e[:, None], 2.0 ** (e[:, None] - 1))).all()
    assert q.min() >= -127 and q.max() <= 127
    assert clamped.any()                                   # [127, 128, 0, 0]: 255/2 -> 128
    fits = m <= 127
    assert (e[fits] == 0).all() and (q[fits] == T[fits]).all()
