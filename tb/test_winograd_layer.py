"""The Winograd layer top ``wino_layer`` (tcgen.units.winograd.layer_rtl; issue 42 §1) on whole
feature maps.

* the golden model: the layer adapter's results are ``model.winograd_conv``'s output tiles,
  cropped they are ``winograd_conv``'s map, and that map is the exact direct convolution in
  mode int (``model.direct_conv_exact``) and within ``model.error_bound`` of it in FP
  (``model.direct_conv`` and the exact value); the adapter's prefix rule (partial maps, filters
  not yet in);
* the cycle model (``WinoLayerParams.schedule`` / ``cycles``) against a direct count of its
  documented parts, and against the RTL's measured cycles (back to back, the generic stream
  bench: first beat offered .. last result taken) for one and several maps;
* the RTL on the generic stream bench, bit for bit against the model: whole maps back to
  back (INT8 and FP32 F(2,3)), idle / stall backpressure and reset mid-map (int); slow: a
  reduced ResNet-18 conv3_x slice (28×28, FP16) and F(4,3) / F(2,3) int at odd sizes (flush
  band, tail step, 1×1 maps) back to back and under backpressure.

Expected results come only from the model (the bench applies the UnitSpec's adapter).  Seeds
printed; ``TCGEN_SEED`` overrides them.
"""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.params import ParamError
from tcgen.registry import get_unit
from tcgen.units.winograd import layouts
from tcgen.units.winograd import model as wm
from tcgen.units.winograd.layer_rtl import (WinoLayerParams, filter_beats, layer_beats,
                                            layer_model, layer_passes, layer_tiles,
                                            layer_workload, pass_filters, random_layer,
                                            w_layout, x_layout)
from tcgen.verify import harness
from tcgen.verify.bench_config import run_stream

UNIT = "wino_layer"
_slow = pytest.mark.slow


def _payloads(p, x, g):
    return {"w__payload": np.array(pack(w_layout(p), filter_beats(g)), dtype=object),
            "x__payload": np.array(pack(x_layout(p), layer_beats(x, p.m)), dtype=object)}


def _results(p, payloads):
    """Result payloads -> (y [N, K, m, m], keep [N, m, m])."""
    f = unpack(layouts.conv_res(p.conv), np.asarray(payloads, dtype=object))
    y = np.asarray(f["y"], dtype=np.int64 if p.is_int else np.uint64)
    keep = np.array([[(int(v) >> i) & 1 for i in range(p.m * p.m)] for v in f["keep"]],
                    dtype=bool)
    return y.reshape(-1, p.K, p.m, p.m), keep.reshape(-1, p.m, p.m)


def _maps_of(p, y, keep, maps):
    """Results of ``maps`` maps -> the cropped output maps [maps, K, H, W] (the keep masks
    checked against the crop)."""
    y = y.reshape(maps, p.Th, p.Tw, p.K, p.m, p.m)
    keep = keep.reshape(maps, p.Th, p.Tw, p.m, p.m)
    full = np.ones((p.Th * p.m, p.Tw * p.m), dtype=bool)
    full[p.H:] = False
    full[:, p.W:] = False
    assert np.array_equal(wm.untile(keep, p.Th * p.m, p.Tw * p.m)[0], full)
    return wm.untile(np.moveaxis(y, 3, 1), p.H, p.W)


# -- params --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, field, words", [
    (dict(m=4, mode="fp32"), "m", "offline only"),
    (dict(mode="fp16", data_bits=6), "data_bits", "unless mode=int"),
    (dict(C=65), "C", "1..64 unless overlap"), (dict(K=0), "K", "1..16"),
    (dict(H=65), "H", "1..64"), (dict(Cb=2), "Cb", "unless overlap"),
    (dict(overlap=True, C=6, Cb=4), "Cb", "divisor of C"),
    (dict(overlap=True, C=12, Cb=6), "Cb", "multiple of 4"),
    (dict(overlap=True, C=257, Cb=1, mode="int"), "C", "1..256"),
])
def test_params_errors(kw, field, words):
    with pytest.raises(ParamError) as e:
        WinoLayerParams(**kw)
    assert field in str(e.value) and words in str(e.value)


def _count(p, maps):
    """The cycle model counted from its documented parts, independently of ``schedule``:
    steps of the line buffers (linebuf.py's schedule) in cycles, each tile offered the cycle
    after its completing step (not before the bank is loaded at K·C), its ITF C cycles, the
    previous OTF K cycles, G·Q EWMM cycles, the result K + 1 after acceptance."""
    m, W, H = p.m, p.W, p.H
    Th, Tw = -(-H // m), -(-W // m)
    tail = (W - 1) % m == 0
    G = -(-p.K * (m + 2) ** 2 // p.dps) * -(-p.C // 4)
    ends = []                                   # step index (in a free-running count) of tiles
    t = 0
    for _ in range(maps):
        t += W                                  # priming band
        for _b in range(Th):
            for j in range(Tw):
                e = W if (tail and j == Tw - 1) else min(m * (j + 1), W - 1)
                ends.append(t + e)
            t += W + int(tail)
    lag, last, out = 0, None, None
    for e in ends:
        # the line buffers stall from the completing step of the previous tile to its take
        cyc = e + lag
        v = max(cyc + 1, p.K * p.C)
        x = max(v + p.C, (last + p.K + 1) if last is not None else 0) + G - 1
        lag += x - cyc - 1                      # the next step happens at x, not cyc + 1
        last, out = x, x + p.K + 1
    return out + 1


@pytest.mark.parametrize("kw", [
    dict(), dict(H=6, W=6, C=2, K=2, mode="fp32"), dict(H=7, W=5, C=3, K=5, dps=3, mode="int"),
    dict(m=4, mode="int", H=9, W=13, C=5, K=2, dps=7), dict(H=1, W=1, C=1, K=1, dps=1),
    dict(H=28, W=28, C=8, K=4, dps=8),
])
def test_cycle_model(kw):
    p = WinoLayerParams(**kw)
    for maps in (1, 3):
        assert p.cycles(maps) == _count(p, maps)
    s = p.schedule(2)
    assert len(s["results"]) == 2 * p.tiles
    assert sum(t for _, t in s["steps"]) == 2 * p.beats           # every beat taken once
    _interval_is_steady_state(p)


def _interval_is_steady_state(p):
    """``interval`` is the schedule's gap between two tiles in the middle of a long band."""
    wide = WinoLayerParams(**{**p.as_dict(), "W": 64})
    acc = wide.schedule(1)["accepted"]
    i = wide.Tw // 2
    assert acc[i + 1] - acc[i] == wide.interval == p.interval


@pytest.mark.parametrize("kw", [
    dict(overlap=True), dict(overlap=True, m=4, mode="int", C=5, K=7, dps=2),
    dict(overlap=True, C=64, K=16, dps=8), dict(overlap=True, C=1, K=16, dps=16),
    dict(overlap=True, C=8, Cb=4, K=2, dps=4), dict(overlap=True, C=128, Cb=64, K=16, dps=8),
    dict(overlap=True, C=64, Cb=16, K=1, dps=16, mode="int", m=4),
])
def test_cycle_model_overlap(kw):
    """overlap (and Cb): the schedule takes every beat once, makes every tile, its results in
    order; ``interval`` is its steady state (checked in closed form over many configurations
    here and against the RTL's measured cycles below)."""
    p = WinoLayerParams(**kw)
    s = p.schedule(2)
    assert len(s["results"]) == 2 * p.tiles
    assert sum(t for _, t in s["steps"]) == 2 * p.beats
    assert all(b > a for a, b in zip(s["results"], s["results"][1:]))
    _interval_is_steady_state(p)
    first = WinoLayerParams(**{**kw, "overlap": False, "Cb": 0}) if p.C <= 64 else None
    if first is not None:            # overlap never costs cycles against the first datapath
        assert p.cycles(2) <= first.cycles(2) and p.interval <= first.interval


# -- the golden model ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(H=6, W=6, C=2, K=2, mode="fp32"),
                                dict(H=5, W=7, C=3, K=2, mode="fp16"),
                                dict(H=5, W=6, C=3, K=2, mode="fp16acc"),
                                dict(H=6, W=5, C=2, K=3, mode="int"),
                                dict(m=4, H=7, W=9, C=2, K=2, mode="int", data_bits=5,
                                     weight_bits=4)])
def test_model_is_winograd_and_direct_on_whole_maps(kw):
    """Two maps back to back through the adapter: the results, untiled, are winograd_conv's
    maps; int: equal to the exact direct convolution; FP: within error_bound of it (and
    winograd_conv is not direct convolution bit for bit: at least one output differs from the
    correctly rounded direct value, or the test's tolerance would be idle)."""
    p = WinoLayerParams(**kw)
    rng = np.random.default_rng(harness.seed(4201))
    x, g = random_layer(p, rng, 2)
    out = layer_model(p, **_payloads(p, x, g))["res__payload"]
    assert len(out) == 2 * p.tiles
    y, keep = _results(p, out)
    maps = _maps_of(p, y, keep, 2)
    bits = dict(data_bits=p.data_bits, weight_bits=p.weight_bits) if p.is_int else {}
    wino = wm.winograd_conv(x, g, p.m, p.mode, **bits)
    assert np.array_equal(maps, wino)
    if p.is_int:
        assert np.array_equal(maps, wm.direct_conv_exact(x, g))
        return
    f = wm.formats(p.mode)
    got = wm.decode_output(maps, p.mode)
    xf, gf = (np.asarray(num.to_float(v, f["data"]), dtype=np.float64) for v in (x, g))
    exact = wm.direct_conv_exact(xf, gf)
    err = np.abs(np.frompyfunc(lambda a, b: float(Fraction(a) - b), 2, 1)(
        got.astype(np.float64), exact).astype(np.float64))
    bound = wm.error_bound(x, g, p.m, p.mode)
    assert np.all(err <= bound), float(np.max(err - bound))
    ref = wm.direct_conv(xf, gf)
    assert np.all(np.abs(got - ref) <= bound + np.abs(ref) * 2.0 ** -50 + 1e-300)
    assert np.any(got != ref.astype(got.dtype))


def test_model_prefixes():
    """Nothing before the K·C filters; a partial map gives the tiles its beats complete
    (linebuf.tiles_after), equal to the whole map's first tiles."""
    p = WinoLayerParams(H=5, W=5, C=2, K=3, mode="int")
    rng = np.random.default_rng(harness.seed(4202))
    x, g = random_layer(p, rng, 1)
    pl = _payloads(p, x, g)
    whole = layer_model(p, **pl)["res__payload"]
    assert len(layer_model(p, pl["w__payload"][:-1], pl["x__payload"])["res__payload"]) == 0
    from tcgen.units.winograd.linebuf import tiles_after
    for k in range(0, p.beats + 1):
        part = layer_model(p, pl["w__payload"], pl["x__payload"][:k])["res__payload"]
        assert len(part) == tiles_after(p.linebuf, k)
        assert list(part) == list(whole[:len(part)])


def test_layer_tiles_crop_is_winograd_conv():
    p = WinoLayerParams(H=3, W=5, C=1, K=2, mode="fp32")
    rng = np.random.default_rng(harness.seed(4203))
    x, g = random_layer(p, rng, 1)
    t = layer_tiles(p, x[0], g)                             # [Th, Tw, K, m, m]
    full = wm.untile(np.moveaxis(t, 2, 0), p.H, p.W)
    assert np.array_equal(full, wm.winograd_conv(x[0], g, p.m, p.mode))


def test_workload_follows_the_schedule():
    """The workload offers the filters in cycles 0 .. K·C − 1 and changes x's beat only after
    the cycles the schedule takes one: the beats in order, each held while not taken."""
    p = WinoLayerParams(H=5, W=4, C=2, K=2, mode="int")
    n = p.cycles(2)
    wl = layer_workload(p, np.random.default_rng(1), n)
    assert list(wl["w__valid"][:p.filter_beats]) == [1] * p.filter_beats
    assert not wl["w__valid"][p.filter_beats:].any()
    takes = [c for c, t in p.schedule(3)["steps"] if t and c < n]
    changes = [c for c in range(1, n) if wl["x__payload"][c] != wl["x__payload"][c - 1]]
    assert changes == [c + 1 for c in takes if c + 1 < n]


# -- RTL -----------------------------------------------------------------------------------------
def _run(p, x, g, name, scenarios=("back_to_back",), sim=None, **cfg):
    maps = len(x)
    s = run_stream(UNIT, p, _payloads(p, x, g), name=name, scenarios=scenarios, sim=sim, **cfg)
    assert s["mismatches"] == 0, s
    for sc in scenarios:
        assert s[f"{sc}_vectors"] == maps * p.tiles
    return s


def test_rtl_int_maps():
    """INT8 F(2,3), two 6×6 maps of 2 channels back to back, 2 filters: every result = the
    model's (so = winograd_conv = the exact direct convolution, tests above); the measured
    cycles are the cycle model's.  Then idle input cycles and output stalls, and a reset with
    a map in flight (the filters loaded again after it): every result as the model's, nothing
    out after the reset."""
    p = WinoLayerParams(H=6, W=6, C=2, K=2, mode="int")
    rng = np.random.default_rng(harness.seed(4210))
    x, g = random_layer(p, rng, 2)
    s = _run(p, x, g, "int", scenarios=("back_to_back", "backpressure", "reset_mid_operation"),
             idle=0.4, stall=0.5)
    assert s["back_to_back_cycles"] == p.cycles(2), (s["back_to_back_cycles"], p.cycles(2))
    assert s["reset_leaked"] == 0


def test_rtl_int_accumulate_maps():
    """The overlapped datapath with Ô accumulated across requests: INT8 F(2,3), C = 8 as two
    requests of Cb = 4 channels (each loading its chunk's filters), two 5×6 maps back to back:
    every result = the model's (winograd_conv over all 8 channels = the exact direct
    convolution), cycles as modelled."""
    p = WinoLayerParams(H=5, W=6, C=8, K=2, mode="int", overlap=True, Cb=4)
    rng = np.random.default_rng(harness.seed(4213))
    x, g = random_layer(p, rng, 2)
    s = _run(p, x, g, "acc")
    assert s["back_to_back_cycles"] == p.cycles(2), (s["back_to_back_cycles"], p.cycles(2))


def _run_passes(p, x, g, name, passes=None, sim=None):
    """A layer of len(g) output maps on the build ``p``: :func:`layer_passes`' passes one
    after another through the same build (each one back-to-back run from reset: its K filters,
    then the maps), each bit for bit against the bench's model; then every output map of the
    passes run (``passes``: the first that many; default all) against ``model.winograd_conv``
    of the whole layer (all len(g) filters at once), and each pass's measured cycles against
    the pass schedule's.  Returns (the schedule, the measured cycles)."""
    lp = layer_passes(p, len(g), len(x))
    run = lp["passes"] if passes is None else passes
    got, cycles = [], []
    for i in range(run):
        s = _run(p, x, pass_filters(p, g, i), f"{name}{i}", sim=sim)
        cycles.append(s["back_to_back_cycles"])
        with open(s["back_to_back_observed"]) as fh:
            y, keep = _results(p, json.load(fh)["res"])
        got.append(_maps_of(p, y, keep, len(x)))                   # [maps, K, H, W]
    first, end = lp["filters"][0][0], lp["filters"][run - 1][1]
    bits = dict(data_bits=p.data_bits, weight_bits=p.weight_bits) if p.is_int else {}
    want = wm.winograd_conv(x, g[first:end], p.m, p.mode, **bits)
    assert np.array_equal(np.concatenate(got, axis=1)[:, :end - first], want)
    assert cycles == lp["cycles"][:run], (cycles, lp["cycles"])
    return lp, cycles


def test_layer_passes_schedule():
    """K_total filters on a build of K: ⌈K_total/K⌉ passes of cycles(maps) each, the filters
    split in order and the last pass zero-filled; bad K_total refused."""
    p = WinoLayerParams(H=5, W=4, C=2, K=3, mode="int")
    lp = layer_passes(p, 7, 2)
    assert lp["passes"] == 3 and lp["filters"] == [(0, 3), (3, 6), (6, 7)]
    assert lp["cycles"] == [p.cycles(2)] * 3 and lp["total"] == 3 * p.cycles(2)
    assert lp["x_beats"] == 3 * 2 * p.beats and lp["w_beats"] == 3 * 3 * 2
    g = np.arange(7 * 2 * 9).reshape(7, 2, 3, 3) + 1
    parts = [pass_filters(p, g, i) for i in range(3)]
    assert np.array_equal(np.concatenate(parts)[:7], g) and not parts[2][1:].any()
    assert layer_passes(p, 3)["passes"] == 1
    with pytest.raises(ValueError):
        layer_passes(p, 0)


def test_rtl_int_layer_passes():
    """A layer of 3 output maps on a build of K = 2 (the INT8 6×6, C 2 build of the test
    above): two passes through the same build, the second with one zero filter; every output
    map = winograd_conv of the whole layer, cycles as the pass schedule's."""
    p = WinoLayerParams(H=6, W=6, C=2, K=2, mode="int")
    rng = np.random.default_rng(harness.seed(4214))
    x, g = random_layer(p, rng, 1, K_total=3)
    lp, cycles = _run_passes(p, x, g, "pass")
    assert lp["passes"] == 2 and sum(cycles) == lp["total"]


@_slow            # make test's budget (7.5 s): FP32 maps run in make test-slow
def test_rtl_fp32_map():
    """FP32 F(2,3), one 4×5 map of 2 channels (the last tile column cropped), 2 filters: bit
    for bit against winograd_conv (through the model), cycles as modelled."""
    p = WinoLayerParams(H=4, W=5, C=2, K=2, mode="fp32")
    rng = np.random.default_rng(harness.seed(4211))
    x, g = random_layer(p, rng, 1)
    s = _run(p, x, g, "fp32")
    assert s["back_to_back_cycles"] == p.cycles(1)


@_slow
def test_rtl_resnet18_conv3_slice():
    """A reduced ResNet-18 conv3_x layer: one 28×28 map, 8 of its 128 channels, 4 of its
    filters, FP16 F(2,3) on 8 DP-4s (Verilator): bit for bit against winograd_conv, cycles as
    modelled."""
    p = WinoLayerParams(H=28, W=28, C=8, K=4, dps=8, mode="fp16")
    rng = np.random.default_rng(harness.seed(4220))
    x, g = random_layer(p, rng, 1)
    s = _run(p, x, g, "conv3", sim="verilator")
    assert s["back_to_back_cycles"] == p.cycles(1)


#: ResNet-18 conv3_x whole: 28×28 outputs, C = K_total = 128, FP16 F(2,3), C as 16 chunks of
#: Cb = 8 (Cb 16 at K 16 exceeds Amaranth's 65,536-bit port), 16 DP-4s, K = 16 per pass
CONV3_X = dict(H=28, W=28, C=128, K=16, dps=16, mode="fp16", overlap=True, Cb=8)


@_slow
def test_rtl_resnet18_conv3_x_whole():
    """ResNet-18 conv3_x on ``wino_layer`` (Verilator): 128 filters on a build of K = 16 are
    8 passes through the same build (:func:`layer_passes`); the outputs of the passes run
    (16 × 28 × 28 each) against ``model.winograd_conv`` of the whole layer, each pass's cycles
    (102,425; 819,400 for all 8) against the pass schedule.  The full geometry, but by default
    the first pass only: one pass took 1,209 s of simulation here (Verilator -O0, a loaded
    2-core machine, after a ~9 min build), so all 8 do not fit a slow test;
    ``TCGEN_CONV3X_PASSES=8`` runs the whole layer."""
    import os
    p = WinoLayerParams(**CONV3_X)
    rng = np.random.default_rng(harness.seed(4230))
    x, g = random_layer(p, rng, 1, K_total=128)
    passes = int(os.environ.get("TCGEN_CONV3X_PASSES", "1"))
    lp, cycles = _run_passes(p, x, g, "conv3x", passes=passes, sim="verilator")
    assert lp["passes"] == 8 and lp["cycles"][0] == p.cycles(1) == 102_425
    print(f"conv3_x whole: {len(cycles)} of {lp['passes']} passes, RTL cycles {cycles} "
          f"(model {lp['cycles'][0]} each, {lp['total']} in all)")


@_slow
@pytest.mark.parametrize("kw", [
    dict(H=6, W=6, C=2, K=2, mode="fp32", overlap=True),
    dict(H=5, W=5, C=8, K=3, dps=5, mode="fp16", overlap=True, Cb=4),
    dict(H=3, W=4, C=12, K=2, dps=8, mode="fp16acc", overlap=True, Cb=4),
    dict(m=4, H=7, W=5, C=6, K=2, dps=9, mode="int", data_bits=5, weight_bits=4, overlap=True,
         Cb=3),
], ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_rtl_overlap_maps(kw):
    """The overlapped datapath (r = 1) and Ô accumulation (r = 2, 3) in FP32 / FP16 / FP16-acc
    and F(4,3) int: two maps back to back, bit for bit against winograd_conv over all C, cycles
    as modelled; then idle / stall backpressure."""
    p = WinoLayerParams(**kw)
    rng = np.random.default_rng(harness.seed(4222))
    x, g = random_layer(p, rng, 2)
    s = _run(p, x, g, "ovl", scenarios=("back_to_back", "backpressure"), idle=0.3, stall=0.4)
    assert s["back_to_back_cycles"] == p.cycles(2), (s["back_to_back_cycles"], p.cycles(2))


@_slow
@pytest.mark.parametrize("kw", [
    dict(m=4, H=9, W=11, C=3, K=2, dps=9, mode="int", data_bits=5, weight_bits=4),
    dict(m=4, H=5, W=7, C=2, K=1, dps=6, mode="int", data_bits=5, weight_bits=4),
    dict(H=7, W=7, C=5, K=3, dps=3, mode="int", data_bits=4, weight_bits=3),
    dict(H=1, W=1, C=1, K=1, dps=1, mode="int"),
], ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_rtl_int_odd_maps(kw):
    """F(4,3) and F(2,3) int at odd sizes (flush band, tail step, 1×1): two maps back to back
    with cycles as modelled, then under idle / stall backpressure."""
    p = WinoLayerParams(**kw)
    rng = np.random.default_rng(harness.seed(4221))
    x, g = random_layer(p, rng, 2)
    s = _run(p, x, g, "odd", scenarios=("back_to_back", "backpressure"), idle=0.3, stall=0.3)
    assert s["back_to_back_cycles"] == p.cycles(2)


def test_registered():
    u = get_unit(UNIT)
    p = u.params()
    assert u.estimate_cells(p) > 0 and u.ops_per_cycle(p) > 0


@_slow
@pytest.mark.parametrize("kw", [dict(H=6, W=6, C=2, K=2, mode="int"),
                                dict(H=5, W=7, C=3, K=2, mode="int", overlap=True),
                                dict(H=5, W=6, C=12, K=2, mode="fp16", overlap=True, Cb=4)],
                         ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_verilog_is_lint_clean(kw):
    """The layer's Verilog is lint-clean (Verilator), the first datapath, overlap, and a chunk
    counter over 3 values (index_cases' Default)."""
    from tcgen.synth.lint import lint
    res = lint(harness.verilog_file(UNIT, WinoLayerParams(**kw)))
    assert res.clean, (res.errors + res.warnings)[:20]
