"""Golden-model tests of the BMMA family (pure numpy; paper 000 notes §1, §3.4, §4.1).

Every bit-level function is checked against an independent float64 computation on ±1 data, a
hand-derivable formula from the notes, or a closed-form property; no expected value comes from
the function under test.
"""
import subprocess
import sys

import numpy as np
import pytest

from tcgen.cli import main as tcgen_main
from tcgen.registry import get_unit
from tcgen.units.bmma import family as bf
from tcgen.units.bmma import model as bm
from tcgen.units.bmma import throughput as tp
from tcgen.units.bmma.params import (SENSE_GE, SENSE_LT, SENSE_ONE, SENSE_ZERO, BmmaArrayParams,
                               BnnEpilogueParams, Int8MacArrayParams)
from tcgen.units.bmma.rtl import popcount_census

RNG = np.random.default_rng(20240605)


# -- packing -------------------------------------------------------------------------------------
def test_msb_first_word_convention():
    """Element k -> word k >> 5, bit 31 − (k & 31) (notes §1.4); lsb is the mirror."""
    for k in (0, 1, 31, 32, 63, 64, 96, 127):
        bits = np.zeros(128, np.uint8)
        bits[k] = 1
        words = bm.pack_bits(bits)
        expect = np.zeros(4, np.uint32)
        expect[k >> 5] = np.uint32(1) << np.uint32(31 - (k & 31))
        assert np.array_equal(words, expect), k
        lsb = bm.pack_bits(bits, "lsb")
        assert int(lsb[k >> 5]) == 1 << (k & 31)


@pytest.mark.parametrize("order", ["msb", "lsb"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 31), (8, 128), (9, 129), (5, 784)])
def test_pack_unpack_round_trip(order, shape):
    x = RNG.integers(0, 2, shape, dtype=np.uint8)
    assert np.array_equal(bm.unpack_bits(bm.pack_bits(x, order), shape[1], order), x)
    for ldm in (None, -(-shape[1] // 32) * 32, -(-shape[1] // 32) * 32 + 64):
        mem = bm.pack_rows(x, ldm, order)
        assert np.array_equal(bm.unpack_rows(mem, *shape, ldm, order), x)
        assert np.array_equal(bm.unpack_cols(bm.pack_cols(x.T, ldm, order), shape[1], shape[0],
                                             ldm, order), x.T)


def test_pad_bits_are_zero_and_ldm_errors():
    x = np.ones((2, 100), np.uint8)
    mem = bm.pack_rows(x)                          # ldm defaults to 128 bits: 4 words per row
    assert mem.shape == (8,)
    assert int(mem[3]) == 0xFFFFFFFF << 28 & 0xFFFFFFFF      # bits 96..99 set, 100..127 pad 0
    with pytest.raises(ValueError, match="ldm must be a multiple of 32"):
        bm.pack_rows(x, ldm=112)
    with pytest.raises(ValueError, match="at least K=100"):
        bm.pack_rows(x, ldm=96)


@pytest.mark.parametrize("m,k", [(8, 128), (16, 256), (9, 129), (512, 25088)])
def test_fsb_layout_formula_and_round_trip(m, k):
    x = RNG.integers(0, 2, (m, k), dtype=np.uint8)
    mem = bm.pack_fsb(x)
    tk = -(-k // 128)
    assert mem.size == (-(-m // 8)) * tk * 32
    i = RNG.integers(0, m, 2000)
    kk = RNG.integers(0, k, 2000)
    word = ((i // 8) * tk + kk // 128) * 32 + (i % 8) * 4 + (kk % 128) // 32
    bit = (mem[word].astype(np.int64) >> (31 - kk % 32)) & 1
    assert np.array_equal(bit, x[i, kk])
    assert np.array_equal(bm.unpack_fsb(mem, m, k), x)


@pytest.mark.parametrize("n,c", [(8, 64), (16, 128), (8, 512)])
def test_conv_fsb_layout(n, c):
    x = RNG.integers(0, 2, (3, 2, n, c), dtype=np.uint8)
    mem = bm.pack_fsb_conv(x)
    np_, cp = -(-n // 8) * 8, -(-c // 128) * 128
    y, xx, nn, cc = 2, 1, n - 1, c - 1
    word = ((y * 2 + xx) * (np_ // 8) * (cp // 128) + (nn // 8) * (cp // 128) + cc // 128) * 32 \
        + (nn % 8) * 4 + (cc % 128) // 32
    assert (int(mem[word]) >> (31 - cc % 32)) & 1 == x[y, xx, nn, cc]
    assert np.array_equal(bm.unpack_fsb_conv(mem, 3, 2, n, c), x)


def test_pack_channels_is_msb_first_word():
    bits = RNG.integers(0, 2, 32, dtype=np.uint8)
    assert int(bm.pack_channels(bits)) == int(bm.pack_bits(bits)[0])
    assert int(bm.pack_channels(np.array([1, 0, 0, 0, 0, 0, 0, 0]))) == 0x80


# -- bmma ----------------------------------------------------------------------------------------
def test_bmma_fixup_matches_float_pm1():
    for _ in range(50):
        a = RNG.integers(0, 2, (8, 128))
        b = RNG.integers(0, 2, (128, 8))
        popc, ovf = bm.bmma(a, b, np.zeros((8, 8)))
        v = bm.fixup(popc, 128)
        assert np.array_equal(v, bm.dot_pm1_reference(a, b))
        assert not ovf.any()
        assert np.all(np.abs(v) <= 128) and np.all((v - 128) % 2 == 0)


def test_bmma_and_is_01_dot_product():
    a = RNG.integers(0, 2, (8, 128))
    b = RNG.integers(0, 2, (128, 8))
    c = RNG.integers(-1000, 1000, (8, 8))
    d, _ = bm.bmma(a, b, c, "and")
    assert np.array_equal(d, c + a.astype(float) @ b.astype(float))


@pytest.mark.parametrize("a,b,popc", [(0, 0, 0), (1, 1, 0), (1, 0, 128),
                                      (0xAAAAAAAA, 0x55555555, 128)])
def test_bmma_corner_tiles(a, b, popc):
    """Notes §4.1: all-zero, all-one, opposite, checkerboard (given as 32-bit word patterns)."""
    def tile(word, rows):
        w = word if word > 1 else (0xFFFFFFFF if word else 0)
        return bm.unpack_bits(np.full((rows, 4), w, np.uint32), 128)
    d, _ = bm.bmma(tile(a, 8), tile(b, 8).T, np.zeros((8, 8)))
    assert np.all(d == popc)
    assert np.all(bm.fixup(d, 128) == 128 - 2 * popc)


def test_bmma_wraps_s32_and_flags():
    a = np.ones((8, 128), np.uint8)
    b = np.zeros((128, 8), np.uint8)
    c = np.full((8, 8), 2**31 - 1 - 5)
    d, ovf = bm.bmma(a, b, c)                       # + popc 128
    assert np.all(d == 2**31 - 1 - 5 + 128 - 2**32) and ovf.all()
    d, ovf = bm.bmma(a, b, np.full((8, 8), -2**31))
    assert np.all(d == -2**31 + 128) and not ovf.any()
    d, ovf = bm.bmma(a, b, np.full((8, 8), -200))
    assert np.all(d == -72)
    d, ovf = bm.bmma(a, b, np.full((8, 8), 2**16 - 100), acc_width=17)   # narrowed s17
    assert np.all(d == 2**16 - 100 + 128 - 2**17) and ovf.all()


@pytest.mark.parametrize("k", [1, 64, 127, 129, 576, 784])
def test_padding_true_k_and_listing3_error(k):
    """Pad bits 0 on both sides + fix-up with the true K is exact; Listing 3's padded width is
    off by K_pad − K; a stray pad bit in one operand costs −2."""
    a = RNG.integers(0, 2, (9, k))
    b = RNG.integers(0, 2, (k, 10))
    ref = bm.dot_pm1_reference(a, b)
    popc = bm.bmm_tiled(a, b)
    assert np.array_equal(bm.fixup(popc, k), ref)
    kp = -(-k // 128) * 128
    assert np.all(bm.fixup(popc, kp) - ref == kp - k)
    if kp > k:
        ap = np.zeros((9, kp), np.uint8)
        ap[:, :k] = a
        ap[0, k] = 1                              # one nonzero pad bit in A only
        bp = np.zeros((kp, 10), np.uint8)
        bp[:k] = b
        v = bm.fixup(bm.bmm_tiled(ap, bp), k)
        assert np.all(v[0] - ref[0] == -2) and np.array_equal(v[1:], ref[1:])


@pytest.mark.parametrize("k", [256, 1024, 4608, 8192, 12544, 25088, 32768])
def test_k_chaining_matches_float(k):
    a = RNG.integers(0, 2, (8, k))
    b = RNG.integers(0, 2, (k, 8))
    assert np.array_equal(bm.fixup(bm.bmm_tiled(a, b), k), bm.dot_pm1_reference(a, b))


def _golden(p, req):
    """The unit's payload-level model: request payloads -> output payloads (the family unpacks
    them through units/bmma/layouts.py, runs the field-level golden model and packs the result)."""
    out = get_unit(p.UNIT).golden(p, req__payload=np.array(req, dtype=object))
    return out["out__payload" if p.UNIT == "bnn_epilogue" else "d__payload"]


def test_array_transaction_model_chain_and_emit():
    """chain/emit semantics: chained requests equal the tiled BMM, only emitted D come out."""
    p = BmmaArrayParams(m=3, n=2, k=64)
    a = RNG.integers(0, 2, (3, 256))
    b = RNG.integers(0, 2, (256, 2))
    c = RNG.integers(-50, 50, (3, 2))
    req = [bf.array_request(p, a[:, 64 * t:64 * t + 64], b[64 * t:64 * t + 64], c,
                            chain=t > 0, emit=t == 3) for t in range(4)]
    out = _golden(p, req)
    assert len(out) == 1
    assert np.array_equal(bf.array_result(p, out[0]), c + bm.bmm_tiled(a, b, tile_k=64))
    p_and = BmmaArrayParams(m=3, n=2, k=64, ops="and")      # op field ignored when fixed
    r = bf.array_request(p_and, a[:, :64], b[:64], c, op="xor")
    assert np.array_equal(bf.array_result(p_and, _golden(p_and, [r])[0]),
                          c + a[:, :64] @ b[:64])


def test_int8_transaction_model():
    p = Int8MacArrayParams(m=2, n=3, k=4)
    a = RNG.integers(-128, 128, (2, 4))
    b = RNG.integers(-128, 128, (4, 3))
    c = RNG.integers(-1000, 1000, (2, 3))
    d = bf.array_result(p, _golden(p, [bf.int8_request(p, a, b, c)])[0])
    assert np.array_equal(d, c + a.astype(float) @ b.astype(float))


# -- convolution ---------------------------------------------------------------------------------
@pytest.mark.parametrize("h,r,stride,pad", [(6, 3, 1, 1), (7, 3, 2, 1), (8, 5, 1, 2),
                                            (13, 7, 4, 3), (17, 11, 4, 5), (1, 3, 1, 1),
                                            (5, 3, 2, 0)])
def test_bconv_matches_float_conv_with_zero_padding(h, r, stride, pad):
    x = RNG.integers(0, 2, (h, h, 3, 20))
    w = RNG.integers(0, 2, (r, r, 20, 5))
    acc, excl, v = bm.bconv(x, w, stride, pad)
    assert np.array_equal(v, bm.conv_pm1_reference(x, w, stride, pad))
    keff = 20 * (r * r - excl)
    assert np.all(np.abs(v) <= keff[:, :, None, None])
    assert np.all((v - keff[:, :, None, None]) % 2 == 0)


def test_exclude_counts_border_geometry():
    e = bm.exclude_counts(56, 56, 3, 3)
    assert (e[0, 0], e[0, 55], e[55, 0], e[55, 55]) == (5, 5, 5, 5)
    assert (e[0, 7], e[7, 0], e[55, 30], e[30, 55]) == (3, 3, 3, 3)
    assert e[1:55, 1:55].max() == 0
    assert bm.exclude_counts(9, 9, 5, 5)[0, 0] == 16
    assert bm.exclude_counts(1, 1, 3, 3)[0, 0] == 8
    e2 = bm.exclude_counts(56, 56, 3, 3, stride=2)          # 56 -> 28: only top/left border
    assert e2.shape == (28, 28) and e2[0, 0] == 5 and e2[27, 27] == 0


def test_btc_padding_rule():
    """The code's padding rule reduces to pad = R div 2, out = H/s on every benchmark layer."""
    for h, r, s in [(224, 7, 4), (224, 11, 4), (56, 3, 1), (56, 3, 2), (28, 5, 1), (14, 3, 2),
                    (32, 3, 1), (7, 3, 1)]:
        pad, out = bm.btc_padding(h, r, s)
        assert pad == r // 2 and out == -(-h // s)
        assert bm.conv_out_size(h, r, s, pad) == out


# -- epilogue ------------------------------------------------------------------------------------
def test_bn_threshold_equals_float_bn_sign_for_every_v():
    k = 576
    v = np.arange(-k, k + 1)[:, None]
    o = 64
    mean = RNG.normal(0, 40, o)
    var = RNG.uniform(0.5, 400, o)
    gamma = RNG.normal(0, 1, o)
    gamma[:4] = [0.0, 0.0, -1.0, 1.0]
    beta = RNG.normal(0, 1, o)
    beta[:4] = [0.5, -0.5, 0.0, 0.0]          # γ = 0: constant sign(β); ties on the next two
    mean[2:4] = [10.0, -7.0]
    tau, sense = bm.bn_threshold(mean, var, 1e-5, gamma, beta)
    assert sense[0] == SENSE_ONE and sense[1] == SENSE_ZERO and sense[2] == SENSE_LT
    bits = bm.threshold(np.broadcast_to(v, (v.size, o)), tau, sense)
    ref = bm.bn_sign_reference(v, mean, var, 1e-5, gamma, beta)
    assert np.array_equal(bits, ref)
    assert bits[k + 10, 2] == 1 and bits[k + 11, 2] == 0       # v == t: sign(0) = +1 (γ < 0)
    assert bits[k - 7, 3] == 1 and bits[k - 8, 3] == 0         # v == t (γ > 0)


def test_paper_faithful_threshold_is_wrong_for_negative_gamma():
    """The paper/code compare v ≥ τ for every channel (sense=false build): with τ = ceil(t) it
    is right for γ > 0 and wrong for γ < 0, which the sense bits fix."""
    v = np.arange(-128, 129)[:, None]
    mean, var, beta = np.array([3.0, 3.0, 0.0]), np.array([4.0, 4.0, 1.0]), \
        np.array([0.5, 0.5, -1.0])
    gamma = np.array([1.0, -1.0, 0.0])
    ref = bm.bn_sign_reference(v, mean, var, 0.0, gamma, beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean - beta * np.sqrt(var) / gamma
    faithful = (v >= np.ceil(np.nan_to_num(t))).astype(np.uint8)
    assert np.array_equal(faithful[:, 0], ref[:, 0])
    assert (faithful[:, 1] != ref[:, 1]).mean() > 0.9
    # γ = 0: the float τ = ±inf of the code happens to give the constant; an integer τ port
    # needs the saturated value, which the sense bits make explicit
    assert np.array_equal(faithful[:, 2], ref[:, 2])
    tau, sense = bm.bn_threshold(mean, var, 0.0, gamma, beta)
    assert np.array_equal(bm.threshold(np.broadcast_to(v, (257, 3)), tau, sense), ref)
    p = BnnEpilogueParams(n=3, sense=False)
    with pytest.raises(ValueError, match="sense must be GE"):
        bf.epilogue_request(p, [0, 0, 0], 128, tau, sense)


def test_threshold_ties_and_extremes():
    v = np.array([5, 5, 5, 5, -300, 300])
    tau = np.array([5, 6, 5, 6, -1000, 1000])
    sense = np.array([SENSE_GE, SENSE_GE, SENSE_LT, SENSE_LT, SENSE_GE, SENSE_GE])
    assert bm.threshold(v, tau, sense).tolist() == [1, 0, 0, 1, 1, 0]
    tau, sense = bm.bn_threshold(0.0, 1.0, 0.0, 1.0, -0.25)       # t = 0.25: ceil -> 1
    assert (int(tau), int(sense)) == (1, SENSE_GE)


def test_or_pool_equals_maxpool_before_threshold_for_positive_gamma():
    v = RNG.integers(-50, 50, (7, 7, 2, 16))
    tau = RNG.integers(-20, 20, 16)
    ge = np.zeros(16, np.int64)
    pooled_bits = bm.or_pool(bm.threshold(v, tau, ge))
    assert pooled_bits.shape == (4, 4, 2, 16)                   # ceil mode 7 -> 4
    assert np.array_equal(pooled_bits, bm.threshold(bm.max_pool(v), tau, ge))
    # γ < 0 (LT): OR after threshold is the threshold of the *min* pool, not the max pool
    lt = np.full(16, SENSE_LT)
    vmin = -bm.max_pool(-v)
    assert np.array_equal(bm.or_pool(bm.threshold(v, tau, lt)), bm.threshold(vmin, tau, lt))
    assert not np.array_equal(bm.or_pool(bm.threshold(v, tau, lt)),
                              bm.threshold(bm.max_pool(v), tau, lt))


def test_or_pool_windows():
    z = np.zeros((2, 2, 1, 1), np.uint8)
    one = z.copy()
    one[1, 0] = 1
    assert bm.or_pool(z)[0, 0, 0, 0] == 0
    assert bm.or_pool(one)[0, 0, 0, 0] == 1
    assert bm.or_pool(np.ones_like(z))[0, 0, 0, 0] == 1


def test_residual_and_last_layer():
    res = RNG.integers(-1000, 1000, (6, 6, 1, 3))
    pooled = bm.residual_maxpool2x2(res)
    assert pooled[1, 2, 0, 1] == res[2:4, 4:6, 0, 1].max()
    acc = RNG.integers(0, 577, (4, 8))
    v = bm.epilogue_v(acc, 576, res[:4, 0, 0, :1])
    assert np.array_equal(v, 576 - 2 * acc + res[:4, 0, 0, :1])
    scale, bias = RNG.normal(size=8), RNG.normal(size=8)
    assert np.array_equal(bm.last_layer_affine(v, scale, bias), v * scale + bias)


def test_epilogue_transaction_model():
    p = BnnEpilogueParams(n=4)
    req = [bf.epilogue_request(p, [10, 0, 64, 64], 128, [108, 0, 0, 1],
                               [SENSE_GE, SENSE_GE, SENSE_LT, SENSE_ONE], [0, 0, 0, 0],
                               last=False),
           bf.epilogue_request(p, [0, 64, 64, 128], 128, [300, 0, 0, 1],
                               [SENSE_GE, SENSE_GE, SENSE_LT, SENSE_ZERO], [0, 0, 0, 0])]
    # item 0 v = [108, 128, 0, 0] -> [1, 1, 0, 1]; item 1 v = [128, 0, 0, -128] -> [0, 1, 0, 0]
    out = _golden(p, req)
    assert [int(x) for x in out] == [0b1101]
    assert bf.epilogue_result(p, out[0]).tolist() == [1, 1, 0, 1]


# -- layer-level golden checks (notes §4.1) ---------------------------------------------------
def test_layer_resnet18_l1_and_l4_and_fc():
    x = RNG.integers(0, 2, (56, 56, 8, 64))
    w = RNG.integers(0, 2, (3, 3, 64, 16))
    _, _, v = bm.bconv(x, w)
    assert np.array_equal(v, bm.conv_pm1_reference(x, w))
    x = RNG.integers(0, 2, (7, 7, 8, 512))
    w = RNG.integers(0, 2, (3, 3, 512, 8))
    _, _, v = bm.bconv(x, w)
    assert np.array_equal(v, bm.conv_pm1_reference(x, w))
    for k, n in [(25088, 64), (784, 1024)]:
        a = RNG.integers(0, 2, (8, k))
        b = RNG.integers(0, 2, (k, n))
        assert np.array_equal(bm.fixup(bm.bmm_tiled(a, b), k), bm.dot_pm1_reference(a, b))


# -- throughput model ----------------------------------------------------------------------------
def test_throughput_counts_reproduce_notes():
    for name, total in tp.NOTES_BMMA_PER_8.items():
        assert tp.network_ops(name)["ops"] == total, name
    assert tp.network_ops("ResNet-18")["utilization"] == pytest.approx(0.75, abs=0.01)
    assert tp.network_ops("VGG-16")["utilization"] == pytest.approx(0.84, abs=0.01)
    assert tp.network_ops("AlexNet")["utilization"] == pytest.approx(0.72, abs=0.01)
    l1 = tp.layer_ops(tp.NETWORKS["ResNet-18"][1])
    assert l1["useful"] / l1["padded"] == pytest.approx(0.5)          # C = 64 pads to 128
    fc = tp.layer_ops(tp.NETWORKS["MNIST-MLP"][0])
    assert fc["ops"] == 896 and fc["useful"] / fc["padded"] == pytest.approx(0.875)
    # batch 1 keeps one of 8 rows busy
    assert tp.network_ops("ResNet-18", batch=1)["utilization"] == \
        pytest.approx(tp.network_ops("ResNet-18")["utilization"] / 8)


def test_images_per_second_scaling():
    base = tp.images_per_second("ResNet-18", (8, 8, 128), 1, 100.0)
    assert base == pytest.approx(8 * 100e6 / 2_017_252)
    assert tp.images_per_second("ResNet-18", (8, 8, 128), 4, 100.0) == pytest.approx(base / 4)
    assert tp.images_per_second("ResNet-18", (8, 8, 128), 1, 200.0, arrays=2) == \
        pytest.approx(base * 4)
    assert tp.gpu_chain_cycles(2, True) - tp.gpu_chain_cycles(2, False) == 6
    assert tp.PAPER_2080TI["BTC-FMT"]["ResNet-18"][1] == 7.34e3


# -- structure -----------------------------------------------------------------------------------
def test_popcount128_full_adders_meet_bound():
    c = popcount_census(128)
    assert c["bound"] == 120
    assert c["fa"] <= 1.05 * 120          # the target: within 5 % of the bound
    assert c["fa"] >= 120                 # each FA removes one bit: cannot beat the bound


# -- parameter and input errors ------------------------------------------------------------------
@pytest.mark.parametrize("unit,kw,msg", [
    ("bmma_array", {"k": 100}, "bmma_array: k must be a multiple of 32"),
    ("bmma_array", {"k": 48}, "bmma_array: k must be a multiple of 32"),
    ("bmma_array", {"m": 0}, "bmma_array: m must be an integer in 1..64, got 0"),
    ("bmma_array", {"n": 0}, "bmma_array: n must be an integer in 1..64, got 0"),
    ("bmma_array", {"fold": 3}, "bmma_array: fold must be one of 1, 2, 4, 8, got 3"),
    ("bmma_array", {"k": 2048, "acc_width": 12}, "bmma_array: acc_width must be at least 13"),
    ("int8_mac_array", {"k": 6, "fold": 4}, "int8_mac_array: k must be a multiple of fold"),
    ("bnn_epilogue", {"res_width": 1}, "bnn_epilogue: res_width must be 0"),
    ("bnn_epilogue", {"tau_width": 1}, "bnn_epilogue: tau_width must be an integer in 2..40"),
])
def test_bad_params(unit, kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        get_unit(unit).params(**kw)


@pytest.mark.parametrize("tau,sense,msg", [
    ([0.5, 0, 0, 0], None, "bnn_epilogue: tau must be integers"),
    ([2**31, 0, 0, 0], None, r"bnn_epilogue: tau must be in -2147483648..2147483647, got 2147483648"),
    ([0, 0, 0], None, r"bnn_epilogue: tau must have shape \(4,\)"),
    ([0, 0, 0, 0], [0, 4, 0, 0], "bnn_epilogue: sense must be in 0..3, got 4"),
    (["1", 0, 0, 0], None, "bnn_epilogue: tau must be integers"),
])
def test_tau_format_errors(tau, sense, msg):
    p = BnnEpilogueParams(n=4)
    with pytest.raises(ValueError, match=msg):
        bf.epilogue_request(p, [0, 0, 0, 0], 128, np.array(tau, dtype=object
                                                            if isinstance(tau[0], str)
                                                            else None), sense)


def test_cli_bad_input_one_line_exit_2(capsys):
    assert tcgen_main(["generate", "bmma_array", "-p", "k=100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bmma_array: k must be a multiple of 32" in err[0]
    assert tcgen_main(["generate", "bmma_array", "-p", "m=0"]) == 2
    assert "bmma_array: m must be an integer in 1..64, got 0" in capsys.readouterr().err
    proc = subprocess.run([sys.executable, "-m", "tcgen.cli", "generate", "bnn_epilogue", "-p",
                           "tau_width=99"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == \
        "tcgen: error: bnn_epilogue: tau_width must be an integer in 2..40, got 99"


def test_bwn_ops_counts_in_frame_taps():
    """throughput.bwn_ops (bwn_array's operations, issue 42) against a direct count over the
    output pixels of the ResNet-18 stem (7×7/s4, pad 3, 224 → 56) on m8n8k8 and m8n8k16."""
    from tcgen.units.bmma import throughput as tp
    stem = tp.NETWORKS["ResNet-18"][0]
    assert stem.kind == "bwn" and stem.out == 56
    for k in (8, 16):
        got = tp.bwn_ops(stem, batch=8, tile=(8, 8, k))
        total = useful = 0
        for py in range(56):
            for px in range(56):
                taps = sum(0 <= py * 4 - 3 + dy < 224 and 0 <= px * 4 - 3 + dx < 224
                           for dy in range(7) for dx in range(7))
                n_ops = -(-taps * 3 // k) * 1 * 8          # 8 images = one M tile; 64/8 N tiles
                assert got["per_pixel"][py, px] == n_ops
                total += n_ops
                useful += taps * 3 * 8 * 64
        assert got["ops"] == total and got["useful"] == useful
        # the notes' ≈ 236 M add/subs (layer_ops) count the out-of-frame taps too
        assert useful < tp.layer_ops(stem)["bwn_addsub"] == 8 * 56 * 56 * 64 * 49 * 3


# -- issue 42: bnn_layer's golden model and cycle model ------------------------------------------
def test_bnn_layer_model_is_the_composition_and_pools_per_row():
    """bnn_layer's model on requests built by family.layer_request, against an independent
    computation: D = popc(A xor B) chained per tile, v = k_eff − 2·D + residual per row,
    thresholded, OR-pooled per row (image) over the tiles of a window (pool_rows = m), saved v
    of the window's last tile wrapped to res_width."""
    from tcgen.units.bmma.params import BnnLayerParams
    rng = np.random.default_rng(616)
    p = BnnLayerParams(m=3, n=4, k=32, res_width=12)
    tiles, expect_bits, expect_v = [], [], []
    pool = np.zeros((p.m, p.n), np.uint8)
    reqs = []
    for t in range(7):                                   # windows of 3, 2, 2 tiles
        last = t in (2, 4, 6)
        steps = 1 + t % 3
        tau = rng.integers(-20, 21, p.n)
        sense = rng.integers(0, 4, p.n)
        res = rng.integers(-2048, 2048, (p.m, p.n))
        d = np.zeros((p.m, p.n), np.int64)
        for s in range(steps):
            a, b = rng.integers(0, 2, (p.m, p.k)), rng.integers(0, 2, (p.k, p.n))
            c = rng.integers(-99, 99, (p.m, p.n))
            d = (c if s == 0 else d) + (a[:, None, :] ^ b.T[None]).sum(-1)
            reqs.append(bf.layer_request(p, a, b, c,
                                         chain=s > 0, emit=s == steps - 1, k_eff=32 * steps,
                                         tau=tau, sense=sense, residual=res, last=last))
        v = 32 * steps - 2 * d + res
        ge = v >= tau
        bit = np.select([sense == SENSE_GE, sense == SENSE_LT, sense == SENSE_ZERO],
                        [ge, ~ge, False], True)
        pool |= bit.astype(np.uint8)
        if last:
            expect_bits += list(pool.copy())
            expect_v += list((v + 2048) % 4096 - 2048)
            pool[:] = 0
    out = get_unit("bnn_layer").golden(p, req__payload=np.array(reqs, dtype=object))
    got = out["out__payload"]
    assert len(got) == len(expect_bits) == 3 * p.m
    assert np.array_equal(np.array([bf.layer_result(p, y) for y in got]), np.array(expect_bits))
    assert np.array_equal(np.array([bf.layer_saved(p, y) for y in got]), np.array(expect_v))
    with pytest.raises(ValueError, match="bnn_layer: residual must have shape"):
        bf.layer_request(p, np.zeros((3, 32)), np.zeros((32, 4)), residual=np.zeros((4, 3)))
    with pytest.raises(ValueError, match="bnn_layer: tau must be integers"):
        bf.layer_request(p, np.zeros((3, 32)), np.zeros((32, 4)), tau=np.full(4, 0.5))


def test_bnn_layer_cycle_model():
    """throughput.layer_top_cycles: tiles of ≥ m / F operations run at the array's rate (ops·F
    + m + 2: the array alone's ops·F + 1, + m + 1 of drain); short tiles wait for the m-row
    serializer (m cycles a tile); layer_chains sums to layer_ops."""
    assert tp.layer_top_cycles([9] * 10, m=8) == 90 + 8 + 2
    assert tp.layer_top_cycles([3] * 10, m=8, fold=4) == 120 + 8 + 2
    assert tp.layer_top_cycles([1] * 10, m=8) == 1 + 9 * 8 + 8 + 2      # serializer-bound
    assert tp.layer_top_cycles([4, 6, 4, 6, 9, 6, 4, 6, 4], m=8) == 79  # the 3×3 block's conv
    assert tp.layer_top_cycles([], m=8) == 0
    for layer in (tp.Layer("conv", 64, 64, 7, 3), tp.Layer("conv", 512, 512, 7, 3),
                  tp._fc(784, 1024)):
        assert sum(tp.layer_chains(layer)) == tp.layer_ops(layer)["ops"]
