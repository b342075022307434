"""Winograd's integer EWMM on PacQ's parallel multiplier (issue 42 §1; docs/winograd.md, "The
INT EWMM on PacQ's parallel multiplier"): ``wino_conv ewmm=pacq`` and its golden model
``model.ewmm_pacq`` (tcgen.hw.fpint_ref's parallel multiplier, the ΣÎ offset correction),
against ``model.ewmm`` mode int (the DP-4 EWMM) and, end to end, the exact direct convolution.
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.hw import fpint_ref
from tcgen.hw.params import ParamError
from tcgen.registry import get_unit
from tcgen.units.winograd import model as wm
from tcgen.verify import harness


def _ints(rng, bits, shape, extremes=False):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if extremes:
        return np.where(rng.integers(0, 2, shape) == 1, hi, lo).astype(np.int64)
    return rng.integers(lo, hi + 1, shape)


# -- the widths (docs/winograd.md's table) ----------------------------------------------------
@pytest.mark.parametrize("m,db,wb,want", [
    (2, 8, 4, dict(act_bits=10, lane_bits=8, lanes=2, ftf_bits=8)),      # W4A8: INT8 lanes
    (2, 8, 2, dict(act_bits=10, lane_bits=8, lanes=2, ftf_bits=6)),
    (2, 8, 8, dict(act_bits=10, lane_bits=16, lanes=1, ftf_bits=12)),    # W8A8: one INT16 lane
    (2, 9, 4, dict(act_bits=11, lane_bits=8, lanes=2, ftf_bits=8)),      # |Î| 1024: 11 bits
    (4, 5, 4, dict(act_bits=11, lane_bits=16, lanes=1, ftf_bits=14)),    # 24G: 14-bit weights
    (4, 4, 2, dict(act_bits=10, lane_bits=16, lanes=1, ftf_bits=12)),
])
def test_widths(m, db, wb, want):
    w = wm.pacq_ewmm_widths(m, db, wb, 8)
    assert {k: w[k] for k in want} == want
    iw = wm.int_widths(m, db, wb, 8)
    assert w["acc_bits"] == iw["acc"][2] and w["sa_bits"] == w["acc_bits"] - w["lane_bits"] + 1
    assert w["ftf_bits"] == iw["ftf"][2] and max(-iw["itf"][0], iw["itf"][1]) < 1 << w["act_bits"]
    # no transformed weight of F(2,3) or F(4,3) fits PacQ's INT4 / INT2 lanes
    assert w["lane_bits"] >= 8


@pytest.mark.parametrize("kw,words", [
    ({"ewmm": "pacq"}, "dp4 unless mode=int"),
    ({"ewmm": "pacq", "mode": "int", "data_bits": 10}, "11-bit activation significand"),
    ({"ewmm": "pacq", "mode": "int", "m": 4}, "(14 bits) at F(4,3) with 8-bit data"),
    ({"ewmm": "pacq", "mode": "int", "m": 4, "data_bits": 5}, "widest lane is 16 bits"),
    ({"ewmm": "x", "mode": "int"}, "one of dp4, pacq"),
])
def test_params_errors(kw, words):
    with pytest.raises(ParamError) as e:
        get_unit("wino_conv").params(**kw)
    assert str(e.value).startswith("wino_conv: ewmm must be ") and words in str(e.value)


def test_default_verilog_unchanged_by_the_field():
    """ewmm is key_default=False: at dp4 it stays out of the header (old Verilog unchanged)."""
    from tcgen.generate import header
    p = get_unit("wino_conv").params(mode="int")
    q = get_unit("wino_conv").params(mode="int", weight_bits=4, ewmm="pacq", dps=2)
    assert "ewmm" not in header("wino_conv", p) and "ewmm=pacq" in header("wino_conv", q)
    assert q.dots == 2 * 16 and q.interval == 8 + 16 * 2 and q.pacq["lanes"] == 2


# -- the model: the parallel multiplier + ΣÎ correction = the DP-4 EWMM ----------------------
@pytest.mark.parametrize("m,db,wb,C,K", [(2, 8, 4, 8, 4), (2, 8, 4, 5, 3), (2, 8, 2, 9, 5),
                                         (2, 8, 8, 6, 2), (2, 9, 4, 7, 3), (2, 2, 2, 1, 1),
                                         (4, 5, 4, 6, 3), (4, 4, 2, 4, 2), (4, 5, 6, 3, 1)])
def test_model_equals_dp4_ewmm(m, db, wb, C, K):
    rng = np.random.default_rng(harness.seed(4201))
    w = wm.pacq_ewmm_widths(m, db, wb, C)
    for extremes in (False, True):
        d = _ints(rng, db, (3, C, m + 2, m + 2), extremes)
        g = _ints(rng, wb, (K, C, 3, 3), extremes)
        ih = wm.itf(d, m, "int").reshape(3, C, 1, -1)
        fh = wm.ftf(g, m, "int").reshape(K, C, -1)
        seen = {}

        def rec(name, v):
            seen.setdefault(name, []).append(np.asarray(v))
        got = wm.ewmm_pacq(ih, fh, m, db, wb, record=rec)
        assert np.array_equal(got, wm.ewmm(ih, fh, "int"))
        i = np.concatenate([x.ravel() for x in seen["i"]])
        assert i.min() >= 0 and i.max() < 1 << (w["act_bits"] + w["lane_bits"])
        words = np.concatenate([x.ravel() for x in seen["word"]])
        assert words.min() >= 0 and words.max() < 1 << 16


def test_model_every_extreme_corner():
    """F(2,3) W4A8: the inputs that reach each lane's Î and s²·F̂ extremes (all −128 / all 127
    data, all −8 / all 7 weights, the checkerboards), C = 64: the accumulators' modular sums
    still give the DP-4 EWMM exactly."""
    C, K = 64, 3
    pats = [np.full((4, 4), -128), np.full((4, 4), 127),
            np.where(np.indices((4, 4)).sum(0) % 2, 127, -128),
            np.where(np.indices((4, 4)).sum(0) % 2, -128, 127)]
    gpats = [np.full((3, 3), -8), np.full((3, 3), 7),
             np.where(np.indices((3, 3)).sum(0) % 2, 7, -8)]
    d = np.stack([np.stack([pats[(i + c) % 4] for c in range(C)]) for i in range(4)])
    g = np.stack([np.stack([gpats[(k + c) % 3] for c in range(C)]) for k in range(K)])
    ih = wm.itf(d, 2, "int").reshape(4, C, 1, 16)
    fh = wm.ftf(g, 2, "int").reshape(K, C, 16)
    assert np.array_equal(wm.ewmm_pacq(ih, fh, 2, 8, 4), wm.ewmm(ih, fh, "int"))


def test_fpint_ref_wide_lanes():
    """The INT8 / INT16 lanes of the shared model are the joined INT4 lanes (mA·y8 =
    n_0 + 16·n_1), and PacQ's INT4 / INT2 lanes are unchanged by the move."""
    rng = np.random.default_rng(harness.seed(4202))
    mA = rng.integers(0, 2048, 500)
    w = rng.integers(0, 1 << 16, 500)
    i4, _, _ = fpint_ref.parallel_int_mul(mA, w, "4")
    i8, y8, _ = fpint_ref.parallel_int_mul(mA, w, "8")
    i16, _, _ = fpint_ref.parallel_int_mul(mA, w, "16")
    assert np.array_equal(i8, i4[:, 0::2] + 16 * i4[:, 1::2])
    assert np.array_equal(i16[:, 0], i8[:, 0] + 256 * i8[:, 1])
    assert np.array_equal(i16[:, 0], mA * w)
    i2, _, act = fpint_ref.parallel_int_mul(mA, w, "both", int2=1)
    assert act.all() and np.array_equal(i2, mA[:, None] * ((w[:, None] >> (2 * np.arange(8))) & 3))


# -- RTL: wino_conv ewmm=pacq, bit for bit -----------------------------------------------------
from winograd_runs import conv_run as _conv_run  # noqa: E402  (wino_conv's stream run)


@pytest.mark.parametrize("kw", [
    pytest.param({"weight_bits": 4, "dps": 2}, marks=pytest.mark.slow),   # W4A8 defaults, ~10 s
    {"weight_bits": 4, "C": 5, "K": 3, "dps": 3},            # 2 filters a word, one half empty
    pytest.param({"weight_bits": 8, "C": 3, "K": 2, "dps": 2},    # one INT16 lane
                 marks=pytest.mark.slow),                                  # make test's budget
])
def test_conv_tiles(kw):
    """Random and extreme INT tiles back to back: bit-exact against the model (ITF ->
    ewmm_pacq -> OTF -> ÷s²) in C + groups·⌈C/4⌉ + K cycles, one tile per C + groups·⌈C/4⌉."""
    from tcgen.units.winograd.family import random_conv_requests
    rng = np.random.default_rng(harness.seed(4203))
    p = get_unit("wino_conv").params(mode="int", ewmm="pacq", **kw)
    reqs = random_conv_requests(p, rng, 3) + random_conv_requests(p, rng, 3, extremes=True)
    s = _conv_run(p, reqs, f"pacq_{p.weight_bits}_{p.C}_{p.K}")
    assert s["back_to_back_latency"] == p.cycles
    assert s["back_to_back_issue_intervals"] == [p.interval]


@pytest.mark.slow           # ~15 s
def test_conv_backpressure_f43():
    """F(4,3) INT5 × INT4 (24G: 14-bit weights in one INT16 lane, |Î| up to 1568: all 11 bits
    of PacQ's activation side), extremes, with idle / stall cycles."""
    from tcgen.units.winograd.family import random_conv_requests
    rng = np.random.default_rng(harness.seed(4204))
    p = get_unit("wino_conv").params(mode="int", ewmm="pacq", m=4, C=4, K=2, dps=4,
                                     data_bits=5, weight_bits=4)
    reqs = random_conv_requests(p, rng, 2) + random_conv_requests(p, rng, 2, extremes=True)
    _conv_run(p, reqs, "pacq_f43_bp", scenario="backpressure", idle=0.3, stall=0.4)


# -- ewmm=pacq4: PacQ's INT4 lanes as the paper packs them (wrong, measured only) --------------
def test_pacq4_is_the_wrapped_ewmm_and_wrong():
    """The faithful configuration -- 4 filters a word in INT4 lanes -- computes the exact EWMM of
    the transformed weights wrapped to [−8, 7], which is not Winograd's EWMM."""
    rng = np.random.default_rng(harness.seed(4205))
    C, K = 8, 4
    d = _ints(rng, 8, (2, C, 4, 4))
    g = _ints(rng, 4, (K, C, 3, 3))
    ih = wm.itf(d, 2, "int").reshape(2, C, 1, 16)
    fh = wm.ftf(g, 2, "int").reshape(K, C, 16)
    w = wm.pacq_ewmm_widths(2, 8, 4, C, lane_bits=4)
    assert (w["lanes"], w["exact"]) == (4, False) and wm.pacq_ewmm_widths(2, 8, 4, C)["exact"]
    wrapped = (fh + 8) % 16 - 8
    got = wm.ewmm_pacq(ih, fh, 2, 8, 4, lane_bits=4)
    assert np.array_equal(got, wm.ewmm(ih, wrapped, "int"))
    assert np.mean(got != wm.ewmm(ih, fh, "int")) > 0.5
    with pytest.raises(ParamError, match="m=2 only"):
        get_unit("wino_conv").params(mode="int", ewmm="pacq4", m=4, data_bits=5, weight_bits=4)


@pytest.mark.slow           # the wrong variant's RTL (its model test stays in make test)
def test_pacq4_rtl():
    """RTL = model for pacq4 (one unit, 4 filters a word: W4A8 at equal throughput with 4 DP-4s
    needs dps 1)."""
    from tcgen.units.winograd.family import random_conv_requests
    rng = np.random.default_rng(harness.seed(4206))
    p = get_unit("wino_conv").params(mode="int", ewmm="pacq4", weight_bits=4, C=3, K=4, dps=1)
    assert p.interval == get_unit("wino_conv").params(mode="int", weight_bits=4, C=3,
                                                         K=4, dps=4).interval
    reqs = random_conv_requests(p, rng, 3) + random_conv_requests(p, rng, 2, extremes=True)
    s = _conv_run(p, reqs, "pacq4_w4")
    assert s["back_to_back_issue_intervals"] == [p.interval]
