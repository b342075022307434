"""PacQ golden models (pure numpy): packing, pacq_mul against independent references and the
notes' worked vectors, the paper's error claims, DP-4 tree order, the corrected GEMM, and
parameter validation / CLI errors.  No RTL here (see test_pacq_rtl.py)."""
from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tcgen.verify.harness import seed
from tcgen.hw import numeric as num
from tcgen.hw.numeric import FP16, FP32
from tcgen.registry import get_unit
from tcgen.units.pacq import model as M
from tcgen.units.pacq.paper import NOTES_VECTORS
from tcgen.units.pacq.params import Dp4PacqParams, IntDequantParams, PacqMulParams

ROOT = Path(__file__).resolve().parent.parent

ALL_A = np.arange(1 << 16, dtype=np.int64)


def _finite_value(a):
    return num.to_float(np.asarray(a, dtype=np.uint64), FP16)


# -- packing --------------------------------------------------------------------------------------
def test_pack_examples_from_notes():
    assert int(M.pack_n(np.array([[-8, -1, 0, 7]]), 4)[0, 0]) == 0xF870
    assert int(M.pack_n(np.array([[-2, -1, 0, 1, 1, 0, -1, -2]]), 2)[0, 0]) == 0x1BE4
    # offset binary = two's complement with the MSB inverted
    for b in range(-8, 8):
        assert int(M.to_code(np.array([b]), 4)[0]) == (b & 15) ^ 8
    for b in range(-2, 2):
        assert int(M.to_code(np.array([b]), 2)[0]) == (b & 3) ^ 2


@pytest.mark.parametrize("wbits", [4, 2])
def test_pack_round_trips(wbits):
    rng = np.random.default_rng(seed(41))
    lo, hi = M.WEIGHT_RANGE[wbits]
    B = rng.integers(lo, hi + 1, size=(32, 64))
    wn = M.pack_n(B, wbits)
    wk = M.pack_k(B, wbits)
    L = 16 // wbits
    assert wn.shape == (32, 64 // L) and wk.shape == (32 // L, 64)
    assert np.array_equal(M.unpack_n(wn, wbits), B)
    assert np.array_equal(M.unpack_k(wk, wbits), B)
    # lane j of n-packed word (k, q) is column q·L + j; of k-packed word (p, n) is row p·L + j
    assert np.array_equal(M.word_lanes(wn, wbits)[3, 2] - M.offset_of(wbits), B[3, 2 * L:3 * L])
    assert np.array_equal(M.word_lanes(wk, wbits)[1, 5] - M.offset_of(wbits),
                          B[L:2 * L, 5])


def test_pack_errors():
    with pytest.raises(ValueError, match=r"INT4 weights must be in -8..7, got 8"):
        M.pack_n(np.array([[0, 1, 2, 8]]), 4)
    with pytest.raises(ValueError, match=r"INT2 weights must be in -2..1, got -3"):
        M.pack_n(np.array([[0, 1, -3, 0, 0, 0, 0, 0]]), 2)
    with pytest.raises(ValueError, match=r"n must be a multiple of 4"):
        M.pack_n(np.zeros((2, 6), int), 4)
    with pytest.raises(ValueError, match=r"k must be a multiple of 8"):
        M.pack_k(np.zeros((4, 6), int), 2)
    with pytest.raises(ValueError, match=r"weight width must be one of 2, 4, got 3"):
        M.pack_n(np.zeros((2, 8), int), 3)


# -- pacq_mul against independent references ----------------------------------------------------
@pytest.mark.parametrize("int2", [0, 1])
def test_pacq_mul_paper_rne_exhaustive_vs_numpy_cast(int2):
    """Every FP16 activation × every code in every lane: the paper-mode model equals one RNE
    cast of the exact float64 product A·(1024+y) (exact: ≤ 22 significant bits) -- a reference
    that shares no code with tcgen.hw.numeric."""
    L = 8 if int2 else 4
    codes = np.arange(4 if int2 else 16)
    for y in codes:
        word = sum(int(y) << ((2 if int2 else 4) * j) for j in range(L))
        got = M.pacq_mul(ALL_A, np.full(ALL_A.shape, word), int2)["y"]
        with np.errstate(over="ignore", invalid="ignore"):
            ref = (_finite_value(ALL_A) * (1024.0 + float(y))).astype(np.float16).view(np.uint16)
        ref = ref.astype(np.int64)
        nan = np.isnan(_finite_value(ALL_A))
        ref = np.where(nan, 0x7E00, ref)                       # canonical NaN
        for j in range(L):
            assert np.array_equal(got[:, j], ref), (y, j)
        if not int2:
            assert np.all(got[:, 4:] == 0)


def test_pacq_mul_rtz_vs_fraction_reference():
    rng = np.random.default_rng(seed(42))
    a = np.concatenate([rng.integers(0, 1 << 16, 3000), [0x3E00, 0x3C3F, 0x03FF, 0x53FF]])
    a = a[(a & 0x7C00) != 0x7C00]
    y = rng.integers(0, 16, a.size)
    got = M.pacq_mul(a, y, 0, rounding="rtz", wbits="4")["y"][:, 0]
    for ai, yi, gi in zip(a, y, got):
        v = num.to_fraction(int(ai), FP16) * (1024 + int(yi))
        assert int(gi) == num.round_fraction(v, FP16, "rtz", sign_of_zero=int(ai) >> 15)


@pytest.mark.parametrize("a,word,int2,rnd,lanes", NOTES_VECTORS)
def test_pacq_mul_notes_vectors(a, word, int2, rnd, lanes):
    got = M.pacq_mul(np.array([a]), np.array([word]), int2, rounding=rnd)["y"][0]
    assert [int(v) for v in got[:len(lanes)]] == lanes


def test_single_term_cancellation_from_notes():
    """A = 1.5, B = −3: PacQ gives 1544 − 1548 = −4 (RNE) or −5 (RTZ), not −4.5 (notes §5)."""
    A = np.array([[0x3E00, 0, 0, 0]], dtype=np.uint64)       # k = 4, one DP-4 step
    B = np.array([[-3], [0], [0], [0]] * 1).repeat(4, axis=1)
    s = num.from_float(np.ones((1, 4)), FP16)
    for rnd, want in (("rne", -4.0), ("rtz", -5.0)):
        out = M.gemm(A, B, s, wbits=4, group=(4, 1), flow="paper", rounding=rnd)
        assert num.to_float(out, FP16)[0, 0] == want
    ex = M.gemm(A, B, s, wbits=4, group=(4, 1), flow="offset8")
    assert num.to_float(ex, FP32)[0, 0] == -4.5


def test_exact_and_offset8_lanes_are_exact():
    rng = np.random.default_rng(seed(43))
    a = rng.integers(0, 0x7C00, 4000) | (rng.integers(0, 2, 4000) << 15)
    w = rng.integers(0, 1 << 16, 4000)
    int2 = rng.integers(0, 2, 4000)
    ex = M.pacq_mul(a, w, int2, mode="exact")
    o8 = M.pacq_mul(a, w, int2, mode="offset8")
    F = M.unpack_fp16(a)
    for r in range(0, 4000, 37):
        A = num.to_fraction(int(a[r]), FP16)
        L = 8 if int2[r] else 4
        ys = M.word_lanes(np.array([w[r]]), 2 if int2[r] else 4)[0]
        for j in range(L):
            scale = Fraction(2) ** (int(ex["exp"][r]) - 25) * (-1 if ex["sign"][r] else 1)
            assert int(ex["p"][r, j]) * scale == A * (1024 + int(ys[j]))
            assert int(o8["i"][r, j]) * scale == A * int(ys[j])
    assert np.all(ex["p"] < (1 << 22)) and np.all(o8["i"] < (1 << 15))
    assert np.array_equal(ex["exp"], F.E)


def test_literal_datapath_error_rates_match_notes():
    """The text's {A[10:6], (A[5:0]+i[13:10]) mod 64, i[9:0]} differs from the true
    P = mA·1024 + i for 35.4% of (mA, y) pairs, and i[14] = 1 in 27.4% (notes §3.3 item 1);
    the literal model's FP16 output is that concatenation's top bits with exponent e+10."""
    mA = 1024 + np.arange(1024)
    a = (15 << 10) | np.arange(1024)                           # normal, e = 15, every fraction
    wrong = hi = 0
    for y in range(16):
        i = mA * y
        concat = ((mA >> 6) << 16) | ((((mA & 63) + ((i >> 10) & 15)) & 63) << 10) | (i & 1023)
        wrong += int(np.sum(concat != (mA << 10) + i))
        hi += int(np.sum((i >> 14) & 1))
        lit = M.pacq_mul(a, np.full(1024, y), 0, mode="literal", rounding="rtz",
                         wbits="4")["y"][:, 0]
        assert np.array_equal(lit, (25 << 10) | ((concat >> 10) & 1023))
    assert abs(wrong / (16 * 1024) - 0.354) < 0.0015
    assert abs(hi / (16 * 1024) - 0.274) < 0.0015


def test_normalization_claims_match_notes():
    """P ≥ 2^21 (exponent +1) for 1.37% of INT4 (mA, y) pairs and 0.22% of INT2 pairs; 15 INT4
    pairs round up to 2.0 (notes §3.3 item 2)."""
    mA = np.arange(1024, 2048)[:, None]
    for ys, frac in ((np.arange(16), 0.0137), (np.arange(4), 0.0022)):
        P = mA * (1024 + ys[None, :])
        assert abs(np.mean(P >= (1 << 21)) - frac) < 0.0005
    a = (15 << 10) | np.arange(1024)
    carries = 0
    for y in range(16):
        out = M.pacq_mul(a, np.full(1024, y), 0, wbits="4")["y"][:, 0]
        P = (1024 + np.arange(1024)) * (1024 + y)
        carries += int(np.sum((P < (1 << 21)) & ((out >> 10) & 31 == 26)))
    assert carries == 15


def test_overflow_edges():
    out = M.pacq_mul(ALL_A[:0x7C00], np.full(0x7C00, 0xFFFF), 0, wbits="4")["y"][:, 0]
    v = _finite_value(ALL_A[:0x7C00])
    first = int(np.argmax(out == 0x7C00))
    assert first == 0x53E2 and np.all(out[first:] == 0x7C00)     # y = 15: 63.0625 overflows
    out1 = M.pacq_mul(ALL_A[:0x7C00], np.full(0x7C00, 0x1111), 0, wbits="4")["y"][:, 0]
    assert v[int(np.argmax(out1 == 0x7C00))] == 63.9375
    rtz = M.pacq_mul(np.array([0x53E2]), np.array([0xF]), 0, rounding="rtz", wbits="4")["y"]
    assert int(rtz[0, 0]) == 0x7BFF                                  # RTZ saturates


# -- dequant, DP-4 trees, GEMM ---------------------------------------------------------------------
def test_int_dequant_all_codes_exact():
    for int2, wb in ((0, 4), (1, 2)):
        codes = np.arange(16 if wb == 4 else 4)
        b = M.int_dequant(codes, int2)
        assert np.array_equal(num.to_float(b, FP16), M.from_code(codes, wb).astype(float))


def _round_seq(values, acc, rnd):
    fmt = num.get_format(acc)
    return num.round_fraction(values, fmt, rnd)


@pytest.mark.parametrize("acc", ["fp16", "fp32"])
def test_dp4_baseline_tree_order_against_fraction_reference(acc):
    rng = np.random.default_rng(seed(44))
    n = 300
    a = num.from_float(rng.normal(0, 2, (n, 4)), FP16)
    b = num.from_float(rng.integers(-8, 8, (n, 4)).astype(float), FP16)
    c = num.from_float(rng.normal(0, 8, n), acc)
    got = M.dp4_baseline(a, b, c, acc=acc)
    fmt = num.get_format(acc)
    for r in range(n):
        p = [num.round_fraction(num.to_fraction(int(a[r, k]), FP16) *
                                num.to_fraction(int(b[r, k]), FP16), FP16) for k in range(4)]
        pv = [num.to_fraction(x, FP16) for x in p]
        t0 = num.to_fraction(num.round_fraction(pv[0] + pv[1], fmt), fmt)
        t1 = num.to_fraction(num.round_fraction(pv[2] + pv[3], fmt), fmt)
        t = num.to_fraction(num.round_fraction(t0 + t1, fmt), fmt)
        want = num.round_fraction(t + num.to_fraction(int(c[r]), fmt), fmt)
        g = int(got[r])
        if want == 0 or g == 0:            # signed zeros: compare values
            assert num.to_fraction(g, fmt) == num.to_fraction(want, fmt)
        else:
            assert g == want


def test_dp4_pacq_beats_and_offset8_exact_sum():
    """offset8 with FP32: the beat for lane j carries Σ_k A_k·y_kj + c exactly when the sum
    needs ≤ 24 bits (small-integer activations)."""
    rng = np.random.default_rng(seed(45))
    n = 50
    a = num.from_float(rng.integers(-20, 20, (n, 4)).astype(float), FP16)
    w = rng.integers(0, 1 << 16, (n, 4))
    int2 = rng.integers(0, 2, n)
    c = num.from_float(rng.integers(-100, 100, (n, 8)).astype(float), FP32)
    sa = num.from_float(rng.integers(-100, 100, n).astype(float), FP32)
    for D in (1, 2, 4):
        r = M.dp4_pacq(a, w, int2, c, sa, D=D, mode="offset8", acc="fp32")
        beat = 0
        for op in range(n):
            L = 8 if int2[op] else 4
            av = num.to_float(a[op], FP16)
            ys = M.word_lanes(w[op], 2 if int2[op] else 4)
            for g in range(L // D):
                assert int(r["group"][beat]) == g
                assert num.to_float(r["sa"][beat], FP32) == av.sum() + \
                    num.to_float(sa[op], FP32)
                for t in range(D):
                    j = g * D + t
                    want = float(np.dot(av, ys[:, j])) + num.to_float(c[op, j], FP32)
                    assert num.to_float(r["y"][beat, t], FP32) == want
                beat += 1
        assert beat == len(r["group"])


@pytest.mark.parametrize("wbits", [4, 2])
@pytest.mark.parametrize("group", list(M.GROUPS))
def test_gemm_offset_correction_is_exact_for_small_integers(wbits, group):
    """With integer activations every flow's products and sums are exact in FP32, so the
    corrected offset8 and exact flows must reproduce Σ s·A·B exactly (any group shape)."""
    rng = np.random.default_rng(seed(46))
    gk, gn = M.GROUPS[group]
    m, k, n = 2, 2 * gk, 16
    A = num.from_float(rng.integers(-3, 4, (m, k)).astype(float), FP16)
    lo, hi = M.WEIGHT_RANGE[wbits]
    B = rng.integers(lo, hi + 1, (k, n))
    s = num.from_float(2.0 ** rng.integers(-2, 3, (k // gk, n // gn)), FP16)
    ref = M.gemm_exact(A, B, s, group=(gk, gn))
    for flow in ("offset8", "exact"):
        out = M.gemm(A, B, s, wbits=wbits, group=(gk, gn), flow=flow)
        assert np.array_equal(num.to_float(out, FP32), ref), flow


def test_gemm_flows_error_ordering():
    """Small study: offset8 ≤ exact ≪ paper_fp32 < paper (the notes' §5 ordering)."""
    rng = np.random.default_rng(seed(47))
    m, k, n = 4, 128, 16
    A = num.from_float(rng.normal(0, 1, (m, k)), FP16)
    B = rng.integers(-8, 8, (k, n))
    s = num.from_float(np.ones((1, n)), FP16)
    ref = M.gemm_exact(A, B, s, group=(128, 1))
    norm = np.sqrt((num.to_float(A, FP16) ** 2) @ (B ** 2).astype(float))
    err = {}
    for flow in ("dequant", "paper", "paper_fp32", "exact", "offset8"):
        out = M.gemm(A, B, s, wbits=4, group=(128, 1), flow=flow)
        fmt = FP16 if flow in ("dequant", "paper") else FP32
        err[flow] = np.median(np.abs(num.to_float(out, fmt) - ref) / norm)
    assert err["offset8"] < 1e-6 and err["exact"] < 1e-4
    assert err["paper_fp32"] > 1e-3 and err["paper"] > err["paper_fp32"]
    assert err["dequant"] < 1e-2 < err["paper"]


# -- parameters and CLI errors ------------------------------------------------------------------
@pytest.mark.parametrize("cls,kw,msg", [
    (PacqMulParams, {"mode": "x"}, "pacq_mul: mode must be one of paper, exact, offset8, "
                                   "literal, got 'x'"),
    (PacqMulParams, {"wbits": 3}, "pacq_mul: wbits must be one of both, 4, 2, got 3"),
    (PacqMulParams, {"wbits": "8"}, "pacq_mul: wbits must be one of both, 4, 2, got '8'"),
    (IntDequantParams, {"wbits": 1}, "int_dequant: wbits must be one of both, 4, 2, got 1"),
    (Dp4PacqParams, {"D": 3}, "dp4_pacq: D must be one of 1, 2, 4, got 3"),
    (Dp4PacqParams, {"acc": "bf16"}, "dp4_pacq: acc must be one of fp16, fp32, got 'bf16'"),
    (PacqMulParams, {"mode": "literal"}, "pacq_mul: rounding must be rtz when mode is literal"),
])
def test_bad_params_raise(cls, kw, msg):
    with pytest.raises(ValueError) as e:
        cls(**kw)
    assert str(e.value).startswith(msg)


def test_wbits_accepts_ints():
    assert PacqMulParams(wbits=4).wbits == "4"
    assert get_unit("dp4_pacq").params(wbits=2, D=4).wbits == "2"


@pytest.mark.parametrize("args,msg", [
    (["pacq_mul", "-p", "wbits=3"], "pacq_mul: wbits must be one of both, 4, 2, got '3'"),
    (["dp4_pacq", "-p", "D=3"], "dp4_pacq: D must be one of 1, 2, 4, got 3"),
    (["pacq_mul", "-p", "mode=fast"], "pacq_mul: mode must be one of paper, exact, offset8, "
                                      "literal, got 'fast'"),
])
def test_cli_bad_params_exit_2(args, msg, tmp_path):
    out = tmp_path / "x.v"
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "generate", *args, "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert not out.exists() and r.stdout == ""
