"""wino_conv's overlapped, weight-stationary datapath (``overlap=true``) and Ô accumulation across
requests (``accumulate=true``), issue 42 §1: params and the cycle model, the golden model's
accumulation order against model.ewmm over the whole C, and the RTL bit for bit against the
model through the stream bench (tb/winograd_runs.py), with the measured intervals."""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.hw import numeric as num
from tcgen.hw.params import ParamError
from tcgen.units.winograd import family as fam
from tcgen.units.winograd import layouts
from tcgen.units.winograd import model as wm
from tcgen.units.winograd.params import WinoConvParams
from tcgen.verify import harness

from winograd_runs import conv_run

P = WinoConvParams


# -- params and the cycle model ------------------------------------------------------------------
def test_params_and_interval():
    # off by default and out of the module key: the first datapath's names and Verilog stay
    assert P(overlap=False, accumulate=False, C_total=0).key() == P().key()
    assert layouts.conv_op(P()).size == layouts.conv_op(P(overlap=False)).size
    assert layouts.conv_op(P(overlap=True)).size == layouts.conv_op(P()).size + 1
    assert layouts.conv_op(P(overlap=True, accumulate=True)).size == \
        layouts.conv_op(P()).size + 3
    # max(ITF, EWMM, OTF): EWMM-bound at the defaults (32 against 40), ITF-bound with few lanes
    assert (P().interval, P(overlap=True).interval) == (40, 32)
    assert P(overlap=True).cycles == P().cycles == 44
    assert P(overlap=True, C=8, K=1, dps=16).interval == 8           # EWMM 2 cycles: the ITF's
    assert P(C=8, K=1, dps=16).interval == 10
    for C in (1, 4, 9, 64):
        for K in (1, 3, 16):
            for dps in (1, 5, 16):
                p = P(overlap=True, C=C, K=K, dps=dps)
                assert p.interval == max(C, p.groups * p.chunks, K)
                assert p.groups * p.chunks >= K      # the OTF never sets the pace (dps <= 16)
    # C_total: the integer widths of Ô for C_total channels
    p = P(mode="int", overlap=True, accumulate=True, C=8, C_total=512)
    assert p.widths == wm.int_widths(2, 8, 8, 512) and p.bits("acc") == 30
    assert P(mode="int", overlap=True, accumulate=True).bits("acc") == 24


def test_wsource_stream_params():
    p = P(overlap=True, wsource="stream")
    assert p.key() != P(overlap=True).key() and p.interval == P(overlap=True).interval
    # no w and no load in the request; the filters are their own stream
    assert layouts.conv_op(p).size == layouts.conv_op(P()).size - layouts.conv_w(p).size
    assert layouts.conv_w(p).size == 4 * 8 * 16 * 32


@pytest.mark.parametrize("kw,field", [
    ({"wsource": "stream"}, "wsource"),
    ({"overlap": True, "mode": "int", "ewmm": "pacq", "weight_bits": 4}, "overlap"),
    ({"accumulate": True}, "accumulate"),
    ({"C_total": 64}, "C_total"),
    ({"overlap": True, "accumulate": True, "C_total": 64}, "C_total"),      # FP mode
    ({"overlap": True, "accumulate": True, "mode": "int", "C": 8, "C_total": 4}, "C_total"),
])
def test_params_errors(kw, field):
    with pytest.raises(ParamError, match=field):
        P(**kw)


# -- the golden model: accumulation order ------------------------------------------------------
def _split_requests(p, d, Fh, r, load=1):
    """One tile of r·C channels as r accumulate requests (channel chunk i: channels i·C..)."""
    C = p.C
    return [fam.conv_request(p, d[i * C:(i + 1) * C], Fh[:, i * C:(i + 1) * C], load=load,
                             first=int(i == 0), last=int(i == r - 1)) for i in range(r)]


def _tile_data(p, rng, Ct):
    s, n = p.m + 2, p.lanes
    if p.is_int:
        lo, hi = -(1 << (p.data_bits - 1)), 1 << (p.data_bits - 1)
        d = rng.integers(lo, hi, (Ct, s, s))
        g = rng.integers(-(1 << (p.weight_bits - 1)), 1 << (p.weight_bits - 1), (p.K, Ct, 3, 3))
    else:
        d = wm.encode_input(rng.normal(0, 1, (Ct, s, s)), p.mode)
        g = wm.encode_input(rng.normal(0, np.sqrt(2 / (9 * Ct)), (p.K, Ct, 3, 3)), p.mode)
    return d, wm.ftf(g, p.m, p.mode).reshape(p.K, Ct, n)


@pytest.mark.parametrize("mode", ["fp32", "fp16", "fp16acc", "int"])
@pytest.mark.parametrize("C", [4, 8, 5])
def test_accumulation_order(mode, C):
    """The accumulating model (r requests of C channels, first .. last) against model.ewmm over
    all r·C channels then model.otf: equal bit for bit when C is a multiple of 4; otherwise
    equal to model.ewmm over each request's channels padded with (−0, +0) to 4⌈C/4⌉ -- and
    in integers to the unsplit sum as well."""
    rng = np.random.default_rng(harness.seed(4201))
    r, K = 3, 2
    extra = {"C_total": r * C} if mode == "int" else {}
    p = P(mode=mode, C=C, K=K, overlap=True, accumulate=True, **extra)
    n = p.lanes
    d, Fh = _tile_data(p, rng, r * C)
    got = fam.conv_result(p, fam.conv_model(p, _split_requests(p, d, Fh, r))
                          ["res__payload"][0])[0].reshape(K, -1)
    ih = wm.itf(d, p.m, mode).reshape(1, r * C, 1, n)
    whole = fam._otf_tile(p, wm.ewmm(ih, Fh, mode).reshape(K, n))
    Cp = -(-C // 4) * 4                            # each request padded to whole DP-4 chunks
    if Cp != C:
        neg0 = 0 if mode == "int" else num.get_format(wm.formats(mode)["transform"]).sign_mask
        ihp = np.full((1, r * Cp, 1, n), neg0, dtype=ih.dtype)       # (−0, +0) channels
        fhp = np.zeros((K, r * Cp, n), dtype=Fh.dtype)
        for i in range(r):
            ihp[:, i * Cp:i * Cp + C] = ih[:, i * C:(i + 1) * C]
            fhp[:, i * Cp:i * Cp + C] = Fh[:, i * C:(i + 1) * C]
        padded = fam._otf_tile(p, wm.ewmm(ihp, fhp, mode).reshape(K, n))
        assert got.tolist() == padded.tolist()
    if Cp == C or mode == "int":
        assert got.tolist() == whole.tolist()


def test_model_refuses_more_than_c_total():
    p = P(mode="int", C=4, K=1, overlap=True, accumulate=True, C_total=4)
    lo = -(1 << 7)
    d = np.full((8, 4, 4), lo)
    Fh = wm.ftf(np.full((1, 8, 3, 3), lo), 2, "int").reshape(1, 8, 16)
    reqs = [fam.conv_request(p, d[:4], Fh[:, :4], first=1, last=0),
            fam.conv_request(p, d[4:], Fh[:, 4:], first=0, last=1)]
    with pytest.raises(ValueError, match="C_total"):
        fam.conv_model(p, reqs)


def test_weight_stationary_model():
    """load = 0 requests multiply by the filters of the last load (zeros before any)."""
    rng = np.random.default_rng(harness.seed(4202))
    p = P(mode="int", C=4, K=2, overlap=True)
    q = P(mode="int", C=4, K=2)
    d1, F1 = _tile_data(p, rng, 4)
    d2, F2 = _tile_data(p, rng, 4)
    reqs = [fam.conv_request(p, d1, F2, load=0),            # before any load: the zero bank
            fam.conv_request(p, d1, F1, load=1), fam.conv_request(p, d2, F2, load=0)]
    ys = [fam.conv_result(p, y)[0] for y in fam.conv_model(p, reqs)["res__payload"]]
    want = [fam.conv_result(q, fam.conv_model(q, [fam.conv_request(q, d, F)])
                            ["res__payload"][0])[0] for d, F in ((d1, 0 * F1), (d1, F1),
                                                                 (d2, F1))]
    assert [y.tolist() for y in ys] == [w.tolist() for w in want]


# -- RTL -------------------------------------------------------------------------------------------
def _requests(p, rng, count, loads):
    out = []
    for i in range(count):
        d, g, rows, cols = fam.random_conv_data(p, rng)
        out.append(fam.conv_request(p, d, wm.ftf(g, p.m, p.mode), rows, cols,
                                    load=int(i in loads)))
    return out


@pytest.mark.parametrize("kw", [
    {"mode": "int", "C": 4, "K": 2, "dps": 4},                        # EWMM-bound: 8 > 4
    pytest.param({"mode": "int", "C": 8, "K": 1, "dps": 16},          # ITF-bound: 8 > 2
                 marks=pytest.mark.slow),
    pytest.param({"mode": "fp16", "C": 5, "K": 3, "dps": 3}, marks=pytest.mark.slow),
    pytest.param({}, marks=pytest.mark.slow),                         # the default, FP32
    pytest.param({"mode": "fp16acc", "m": 4, "C": 4, "K": 2}, marks=pytest.mark.slow),
    pytest.param({"mode": "int", "m": 4, "C": 3, "K": 2, "dps": 6, "data_bits": 5,
                  "weight_bits": 7}, marks=pytest.mark.slow),
])
def test_overlap_back_to_back(kw):
    """Random tiles back to back, bit for bit against the model: a load on every request
    (each latched while the previous EWMM finishes) is accepted every params.interval =
    max(C, EWMM, K) cycles; weight-stationary (loads on two of six), the first result after
    params.cycles and the six in cycles + 5·interval (+1: the count is inclusive)."""
    rng = np.random.default_rng(harness.seed(4203))
    p = P(overlap=True, **kw)
    n = 6
    s = conv_run(p, _requests(p, rng, n, range(n)), f"ovl_all_{p.key()}")
    assert s["back_to_back_issue_intervals"] == [p.interval]
    assert s["back_to_back_latency"] == p.cycles
    s = conv_run(p, _requests(p, rng, n, (0, 3)), f"ovl_ws_{p.key()}")
    assert s["back_to_back_latency"] == p.cycles
    assert s["back_to_back_cycles"] == p.cycles + (n - 1) * p.interval + 1
    assert p.interval < P(**kw).interval


@pytest.mark.parametrize("kw", [
    {"mode": "int", "C": 4, "K": 2, "dps": 4},
    pytest.param({"mode": "fp16", "C": 5, "K": 3, "dps": 3}, marks=pytest.mark.slow),
])
def test_overlap_backpressure(kw):
    """Idle input and stalled output cycles, loads at random: bit for bit."""
    rng = np.random.default_rng(harness.seed(4204))
    p = P(overlap=True, **kw)
    loads = {0} | {i for i in range(1, 10) if rng.random() < 0.4}
    conv_run(p, _requests(p, rng, 10, loads), "ovl_bp", scenario="backpressure", idle=0.4,
             stall=0.6)


@pytest.mark.parametrize("kw,r", [
    pytest.param({"mode": "int", "C": 4, "K": 2, "dps": 4}, 3,         # make test: the
                 marks=pytest.mark.slow),     # backpressure test below runs this build
    pytest.param({"mode": "int", "C": 5, "K": 1, "dps": 4, "data_bits": 6, "weight_bits": 5},
                 2, marks=pytest.mark.slow),
    pytest.param({"mode": "fp32", "C": 4, "K": 2, "dps": 4}, 3, marks=pytest.mark.slow),
    pytest.param({"mode": "fp16", "C": 8, "K": 2, "dps": 4}, 2, marks=pytest.mark.slow),
    pytest.param({"mode": "fp16acc", "C": 5, "K": 2, "dps": 4}, 3, marks=pytest.mark.slow),
])
def test_accumulate_rtl(kw, r):
    """Tiles of r·C channels as r requests (first .. last), three tiles back to back and a
    single-request tile between them: one result per tile, bit for bit against the model,
    one request per params.interval."""
    rng = np.random.default_rng(harness.seed(4205))
    extra = {"C_total": r * kw["C"]} if kw["mode"] == "int" else {}
    p = P(overlap=True, accumulate=True, **kw, **extra)
    reqs = []
    for t in range(3):
        d, Fh = _tile_data(p, rng, r * p.C)
        reqs += _split_requests(p, d, Fh, r)
        if t == 1:
            d, Fh = _tile_data(p, rng, p.C)
            reqs += _split_requests(p, d, Fh, 1)
    s = conv_run(p, reqs, f"acc_{p.key()}", results=4)
    assert s["back_to_back_issue_intervals"] == [p.interval]


def test_accumulate_backpressure_int_extremes():
    """Every input at an extreme, C_total = 12 reached exactly (the accumulator's bound), idle
    and stall cycles: bit for bit, nothing wraps."""
    rng = np.random.default_rng(harness.seed(4206))
    p = P(mode="int", C=4, K=2, dps=4, overlap=True, accumulate=True, C_total=12)
    reqs = []
    for _ in range(3):
        lo, hi = -128, 127
        d = np.where(rng.integers(0, 2, (12, 4, 4)) == 1, hi, lo)
        g = np.where(rng.integers(0, 2, (2, 12, 3, 3)) == 1, hi, lo)
        reqs += _split_requests(p, d, wm.ftf(g, 2, "int").reshape(2, 12, 16), 3)
    d = np.full((12, 4, 4), -128)
    reqs += _split_requests(p, d, wm.ftf(np.full((2, 12, 3, 3), -128), 2, "int")
                            .reshape(2, 12, 16), 3)
    conv_run(p, reqs, "acc_bp", scenario="backpressure", results=4, idle=0.3, stall=0.6)


@pytest.mark.slow
def test_accumulate_reset_mid_operation():
    """Reset with tiles half accumulated and both banks busy (idle / stall patterns): nothing
    leaks out, and the same requests again from reset are bit for bit."""
    rng = np.random.default_rng(harness.seed(4207))
    p = P(mode="int", C=4, K=2, dps=4, overlap=True, accumulate=True, C_total=12)
    reqs = []
    for _ in range(4):
        d, Fh = _tile_data(p, rng, 12)
        reqs += _split_requests(p, d, Fh, 3)
    s = conv_run(p, reqs, "acc_reset", scenario="reset_mid_operation", results=4, idle=0.2,
                 stall=0.4)
    assert not s["reset_leaked"]


def _stream_requests(p, rng, tiles, r=1):
    """(op payloads, w payloads) of ``tiles`` tiles of r requests each (wsource=stream)."""
    ops, ws = [], []
    for _ in range(tiles):
        d, Fh = _tile_data(p, rng, r * p.C)
        for i in range(r):
            ops.append(fam.conv_request(p, d[i * p.C:(i + 1) * p.C], None, first=int(i == 0),
                                        last=int(i == r - 1)))
            ws.append(fam.conv_filters(p, Fh[:, i * p.C:(i + 1) * p.C]))
    return ops, ws


@pytest.mark.parametrize("kw,r", [
    pytest.param({"mode": "int", "C": 4, "K": 2, "dps": 4}, 1,       # make test's budget
                 marks=pytest.mark.slow),
    pytest.param({"mode": "int", "C": 4, "K": 2, "dps": 4, "accumulate": True,
                  "C_total": 12}, 3, marks=pytest.mark.slow),
    pytest.param({"mode": "fp16", "C": 5, "K": 3, "dps": 3}, 1, marks=pytest.mark.slow),
])
def test_wsource_stream(kw, r):
    """wsource=stream: the filters on their own stream, one set per request, read while its
    EWMM runs: bit for bit back to back at params.interval, and under idle / stall cycles on
    all three streams."""
    rng = np.random.default_rng(harness.seed(4208))
    p = P(overlap=True, wsource="stream", **kw)
    ops, ws = _stream_requests(p, rng, 4, r)
    s = conv_run(p, ops, f"ws_{p.key()}", results=4, w=ws)
    # requests are taken after their ITF (C), then every EWMM; the whole run is the
    # first request's C + EWMM + K and one interval per further request (+1: inclusive)
    assert set(s["back_to_back_issue_intervals"]) <= {p.C, p.interval}
    assert s["back_to_back_cycles"] == p.cycles + (len(ops) - 1) * p.interval + 1
    conv_run(p, ops, f"ws_bp_{p.key()}", scenario="backpressure", results=4, w=ws, idle=0.4,
             stall=0.5)
