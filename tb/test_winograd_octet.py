"""The Winograd EWMM on the Volta octet (issue 42 §1; tcgen.wino_octet, docs/winograd_octet.md).

The mapping's model path (octet WMMAs through the octet's golden model ``dense_wmma``) against
the Winograd model's ``ewmm`` (bit for bit in mode fp16, specials included; where the octet's
own conventions would differ: only the sign of a zero; fp16acc: in value), against the exact
EWMM (Python integers) within the octet's a-priori bound; the whole convolution through the
octet against ``model.winograd_conv`` (bit for bit) and the exact direct convolution (within
``model.error_bound``); the cycle counts; and ``octet_dense``'s RTL on a small F(2,3) layer's
EWMM requests (the stream bench, bit for bit against the octet's model, 40 / 34 cycles
asserted), its results assembled into Ô and compared with ``model.ewmm``.  Seeds printed,
TCGEN_SEED overrides them.
"""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tcgen import wino_octet as wo
from tcgen.hw import numeric as num
from tcgen.registry import get_unit
from tcgen.units.sparse import model as sm
from tcgen.units.sparse.family import dense_request, dense_result
from tcgen.units.winograd import model as wm
from tcgen.verify.harness import seed
from tcgen.verify.stimulus import dot_lanes

_slow = pytest.mark.slow


def _layer(rng, N, C, K, H, W, m=2, specials=0.0):
    """FP16 image and filters (N(0, 1), N(0, ½)); ``specials``: that fraction of the image
    replaced by the FP16 corner mix (inf, NaN, subnormals, ±65504, ±0)."""
    I = num.from_float(rng.normal(0, 1, (N, C, H, W)), "fp16")
    F = num.from_float(rng.normal(0, 0.5, (K, C, 3, 3)), "fp16")
    if specials:
        mix = dot_lanes("fp16", rng, N * C * H, lanes=W, special_rate=1.0).reshape(I.shape)
        pick = rng.random(I.shape) < specials
        I = np.where(pick, mix, I).astype(np.uint64)
    return I, F


def _transformed(I, F, m=2, mode="fp16"):
    """(Î [N, C, P, L], F̂ [K, C, L]) as the Winograd model computes them."""
    tr: dict = {}
    wm.winograd_conv(I, F, m, mode, trace=tr)
    N, C = I.shape[:2]
    L = (m + 2) ** 2
    return tr["itf"].reshape(N, C, -1, L), tr["ftf"].reshape(F.shape[0], C, L)


# -- the model path --------------------------------------------------------------------------
@pytest.mark.parametrize("N,C,K,H,W", [(1, 1, 1, 2, 2), (1, 5, 3, 3, 3), (1, 16, 8, 4, 6),
                                       (2, 17, 9, 5, 4), (1, 33, 4, 3, 7)])
def test_ewmm_octet_equals_model(N, C, K, H, W):
    """Mode fp16: the octet path (8 × 8 × 16 WMMAs, C chained from −0, (+0, −0) channel
    padding) gives model.ewmm's Ô bit for bit -- C below, at and above a k-tile, K and Q not
    multiples of 8."""
    rng = np.random.default_rng(seed(4201))
    Ih, Fh = _transformed(*_layer(rng, N, C, K, H, W))
    trace: list = []
    got = wo.ewmm_octet(Ih, Fh, trace=trace)
    assert np.array_equal(got, wm.ewmm(Ih, Fh, "fp16"))
    Q, L = Ih.shape[0] * Ih.shape[2], Ih.shape[3]
    assert len(trace) == L * -(-K // 8) * -(-C // 16) * -(-Q // 8)
    assert np.array_equal(wo.assemble([t[0] for t in trace], [t[4] for t in trace], N, K,
                                      Ih.shape[2], L), got)


def test_ewmm_octet_specials():
    """Specials through the transforms (inf − inf = NaN in the ITF, overflow, subnormals) and
    the FP16 corner mix in Î and F̂ directly: still bit for bit."""
    rng = np.random.default_rng(seed(4202))
    Ih, Fh = _transformed(*_layer(rng, 1, 18, 9, 6, 6, specials=0.05))
    ref = wm.ewmm(Ih, Fh, "fp16")
    v = num.to_float(ref, "fp32")
    assert np.isnan(v).any() and np.isinf(v).any()       # the specials reach Ô
    assert np.array_equal(wo.ewmm_octet(Ih, Fh), ref)
    Ih = dot_lanes("fp16", rng, 2 * 20 * 9, lanes=16, special_rate=0.05).reshape(2, 20, 9, 16)
    Fh = dot_lanes("fp16", rng, 5 * 20, lanes=16, special_rate=0.05).reshape(5, 20, 16)
    assert np.array_equal(wo.ewmm_octet(Ih, Fh), wm.ewmm(Ih, Fh, "fp16"))


def test_octet_conventions_differ_only_in_zero_signs():
    """dense_wmma's own k padding ((+0, +0): a +0 product) or a +0 accumulator start give +0
    where model.ewmm gives −0 (a lane whose products are all −0), and nothing else differs."""
    rng = np.random.default_rng(seed(4203))
    Ih = num.from_float(rng.normal(0, 1, (1, 5, 8, 16)), "fp16")
    Fh = num.from_float(rng.normal(0, 1, (3, 5, 16)), "fp16")
    Ih[0, :, :2, :3] = 0                                 # +0 × negative F̂ = −0 products
    Fh[:, :, :3] = num.from_float(-np.abs(rng.normal(0, 1, (3, 5, 3))) - 0.1, "fp16")
    ref = wm.ewmm(Ih, Fh, "fp16")
    neg0 = ref == np.uint64(0x80000000)
    assert neg0.sum() == 3 * 2 * 3                       # the constructed −0 outputs
    for kw in ({"pad": "octet"}, {"start": "+0"}):
        got = wo.ewmm_octet(Ih, Fh, **kw)
        assert np.array_equal(got != ref, neg0), kw
        assert np.all(got[neg0] == 0), kw                # +0 instead of −0
    assert np.array_equal(wo.ewmm_octet(Ih, Fh), ref)


def test_fp16acc_differs_in_value():
    """Mode fp16acc (model only: the RTL octet accumulates in FP32): the octet rounds the exact
    sum of two exact products to FP16, Winograd rounds each product to FP16 first -- a
    constructed case differs (exact 6,018,997·2^−20 ≈ 5.74016: octet 5.73828125, Winograd
    5.7421875, one FP16 step apart), and both stay within their bounds of the exact sum on
    random data."""
    a = num.from_float(1 + np.array([515, 621]) * 2.0 ** -10, "fp16")
    b = num.from_float(1 + np.array([994, 747]) * 2.0 ** -10, "fp16")
    Ih = np.zeros((1, 2, 1, 1), dtype=np.uint64)
    Ih[0, :, 0, 0] = a
    Fh = b.reshape(1, 2, 1)
    oct_, win = wo.ewmm_octet(Ih, Fh, "fp16acc"), wm.ewmm(Ih, Fh, "fp16acc")
    exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in
                zip(num.to_float(a, "fp16"), num.to_float(b, "fp16")))
    vo, vw = (Fraction(float(num.to_float(x, "fp16").item())) for x in (oct_, win))
    assert exact == Fraction(6_018_997, 2 ** 20)
    assert (vo, vw) == (Fraction(5.73828125), Fraction(5.7421875))
    rng = np.random.default_rng(seed(4204))
    Ih, Fh = _transformed(*_layer(rng, 1, 24, 8, 6, 6), mode="fp16acc")
    ex = wo.ewmm_exact(Ih, Fh)
    bound = wo.ewmm_bound(Ih, Fh, "fp16acc")
    got = wo.ewmm_octet(Ih, Fh, "fp16acc")
    err = np.abs(num.to_float(got, "fp16") - (ex.astype(float) * 2.0 ** -48))
    assert np.all(err <= bound)
    assert np.any(got != wm.ewmm(Ih, Fh, "fp16acc"))


def test_error_vs_exact():
    """Mode fp16: |Ô − Σ Î·F̂| (the exact sum, Python integers) within the octet's a-priori
    bound γ_(⌈C/4⌉+2)·Σ|Î·F̂| -- one figure for both forms, which are the same bits."""
    rng = np.random.default_rng(seed(4205))
    Ih, Fh = _transformed(*_layer(rng, 1, 40, 8, 6, 6))
    got = wo.ewmm_octet(Ih, Fh)
    ex = wo.ewmm_exact(Ih, Fh)
    diff = np.vectorize(lambda g, e: abs(Fraction(float(g)) - Fraction(e, 2 ** 48)),
                        otypes=[object])(num.to_float(got, "fp32"), ex)
    bound = wo.ewmm_bound(Ih, Fh)
    assert np.all(diff.astype(float) <= bound)
    assert max(diff.astype(float).ravel()) > 0           # not trivially exact


def test_conv_via_octet():
    """ITF model → octet EWMM → OTF model on a small F(2,3) layer: model.winograd_conv bit for
    bit, and within model.error_bound of the exact direct convolution."""
    rng = np.random.default_rng(seed(4206))
    I, F = _layer(rng, 1, 20, 9, 7, 5)
    O = wo.winograd_conv_octet(I, F)
    assert np.array_equal(O, wm.winograd_conv(I, F, 2, "fp16"))
    exact = wm.direct_conv_exact(num.to_float(I, "fp16"), num.to_float(F, "fp16"))
    err = np.abs(np.vectorize(lambda o, e: Fraction(float(o)) - e, otypes=[object])(
        num.to_float(O, "fp32"), exact).astype(float))
    assert np.all(err <= wm.error_bound(I, F, 2, "fp16"))


def test_refusals():
    """fp32 / int have no octet form (FP16 multiplies); shapes and encodings checked."""
    Ih = np.zeros((1, 4, 2, 16), dtype=np.uint64)
    Fh = np.zeros((2, 4, 16), dtype=np.uint64)
    for mode in ("fp32", "int", "bf16"):
        with pytest.raises(ValueError, match="mode must be one of fp16, fp16acc"):
            wo.ewmm_octet(Ih, Fh, mode)
    with pytest.raises(ValueError, match="equal C"):
        wo.ewmm_octet(Ih, Fh[:, :3])
    with pytest.raises(ValueError, match="FP16 encodings"):
        wo.ewmm_octet(Ih + 0x10000, Fh)
    with pytest.raises(ValueError, match="does not cover|do not cover"):
        wo.assemble(wo.plan(4, 2, 2, 16)[:3], [np.zeros((8, 8))] * 3, 1, 2, 2, 16)


def test_plan_order_and_cycles():
    """Requests k-tile-major: a request's C is the D of the request L·⌈K/8⌉·⌈Q/8⌉ before it;
    cycles from the octet's cycle model (40 per WMMA; ping-pong 34 request to result, 32 back
    to back) against wino_conv's own interval at dps = 8."""
    steps = wo.plan(40, 12, 20, 16)
    assert len(steps) == 3 * 16 * 2 * 3
    where = {s: i for i, s in enumerate(steps)}
    for i, s in enumerate(steps):
        if s.ct:
            assert i - where[wo.Step(s.ct - 1, s.lane, s.kb, s.qb)] == 16 * 2 * 3
    assert sm.cycle_model("dense", False) == 40 and sm.cycle_model("dense", True) == 34
    c = wo.cycles(16, 8)
    assert (c["requests"], c["cycles_per_wmma"], c["per_tile"], c["utilisation"]) == \
        (16, 40, 80.0, 0.8)
    assert wo.cycles(16, 8, pingpong=True)["per_tile"] == 64.0
    assert wo.cycles(16, 8, pingpong=True, back_to_back=False)["cycles_per_wmma"] == 34
    assert wo.cycles(8, 4)["utilisation"] == 0.2            # padded to 8 filters, 16 channels
    assert wo.wino_conv_cycles(16, 8) == {"ewmm": 64, "per_tile": 80, "utilisation": 0.8,
                                          "ewmm_utilisation": 1.0}
    assert wo.wino_conv_cycles(8, 4)["per_tile"] == 24


# -- octet_dense RTL on a Winograd layer's EWMM -------------------------------------------------
def _rtl_ewmm(I, F, name, pingpong=False, scenario="back_to_back", **cfg):
    """The layer's EWMM requests through octet_dense (stream bench, each result checked
    against dense_wmma); returns (Ô assembled from the RTL's results, the Winograd trace,
    the run summary)."""
    from tcgen.verify.bench_config import run_stream
    tr: dict = {}
    wo.winograd_conv_octet(I, F, trace=tr)
    p = get_unit("octet_dense").params(pingpong=pingpong)
    reqs = [dense_request(p, a, b, c) for (_, a, b, c, _) in tr["requests"]]
    s = run_stream("octet_dense", p, {"op__payload": np.array(reqs, dtype=object)}, name=name,
                   scenarios=(scenario,), **cfg)
    assert s["mismatches"] == 0, s
    assert s[f"{scenario}_inputs"] == len(reqs) and s["vectors"] == len(reqs)
    (out,) = json.loads(Path(s[f"{scenario}_observed"]).read_text()).values()
    ds = [dense_result(p, int(x)) for x in out]
    N, C = I.shape[:2]
    Ih = tr["itf"].reshape(N, C, -1, 16)
    Oh = wo.assemble([r[0] for r in tr["requests"]], ds, N, F.shape[0], Ih.shape[2], 16)
    return Oh, tr, s


@_slow            # make test's budget (~10 s; the octet's RTL is make test's in tb/test_sparse_rtl.py)
def test_rtl_layer_ewmm():
    """octet_dense (RTL) runs a small F(2,3) FP16 layer's EWMM (C = 17: two k-tiles chained
    through C; K = 3, 2 × 2 tiles: 32 WMMAs): every result bit for bit the octet's model, 40
    cycles each back to back (the layer's EWMM in the cycle model's 1,280 cycles), and the Ô
    assembled from the RTL's results is model.ewmm's."""
    rng = np.random.default_rng(seed(4207))
    I, F = _layer(rng, 1, 17, 3, 3, 4)
    Oh, tr, s = _rtl_ewmm(I, F, "wino_octet_layer")
    assert s["back_to_back_latency"] == 40 and s["back_to_back_issue_intervals"] == [40]
    # first request offered .. last result taken: the cycle model's 32·40, +1 (both ends)
    assert s["back_to_back_cycles"] == wo.cycles(17, 3, positions=4)["cycles"] + 1 == 1281
    assert np.array_equal(Oh, wm.ewmm(tr["itf"].reshape(1, 17, -1, 16),
                                      tr["ftf"].reshape(3, 17, 16), "fp16"))


@_slow
@pytest.mark.parametrize("pingpong,scenario", [(True, "back_to_back"), (False, "backpressure")])
def test_rtl_layer_conv(pingpong, scenario):
    """A whole F(2,3) FP16 layer (C = 20, K = 10, 6 × 6) with its
    EWMM on octet_dense RTL (128 WMMAs; ping-pong: 34 cycles request to result, 32 back to
    back), the model's OTF on the RTL's Ô: model.winograd_conv bit for bit, and within
    model.error_bound of the exact direct convolution where finite."""
    rng = np.random.default_rng(seed(4208))
    I, F = _layer(rng, 1, 20, 10, 6, 6)
    Oh, tr, s = _rtl_ewmm(I, F, f"wino_octet_conv_{pingpong}", pingpong=pingpong,
                          scenario=scenario)
    if scenario == "back_to_back":
        assert s["back_to_back_latency"] == (34 if pingpong else 40)
        assert s["back_to_back_issue_intervals"] == [32 if pingpong else 40]
    O = wm.untile(wm.otf(Oh.reshape(1, 10, 3, 3, 4, 4), 2, "fp16"), 6, 6)[0]
    assert np.array_equal(O, wm.winograd_conv(I, F, 2, "fp16")[0])
    exact = wm.direct_conv_exact(num.to_float(I, "fp16"), num.to_float(F, "fp16"))[0]
    err = np.abs(np.vectorize(lambda o, e: Fraction(float(o)) - e, otypes=[object])(
        num.to_float(O, "fp32"), exact).astype(float))
    assert np.all(err <= wm.error_bound(I, F, 2, "fp16")[0])


@_slow
def test_rtl_batch_layer():
    """A bigger layer's EWMM (C = 48, K = 16, 8 × 8: 3 k-tiles, 2 filter blocks, 2 position
    blocks, 16 lanes = 192 WMMAs, specials in 2 % of the image) on the batch bench with 20 %
    stalls: 0 mismatches against the octet's model."""
    from tcgen.verify import harness
    rng = np.random.default_rng(seed(4209))
    I, F = _layer(rng, 1, 48, 16, 8, 8, specials=0.02)
    tr: dict = {}
    wo.winograd_conv_octet(I, F, trace=tr)
    p = get_unit("octet_dense").params()
    reqs = [dense_request(p, a, b, c) for (_, a, b, c, _) in tr["requests"]]
    assert len(reqs) == 3 * 16 * 2 * 2
    s = harness.run_batch("octet_dense", p, stimulus={"op__payload": np.array(reqs,
                                                                               dtype=object)},
                          name="wino_octet_batch", stall=0.2, sim="verilator")
    assert s["vectors"] == len(reqs) and s["checked"] == len(reqs)
    assert s["mismatches"] == 0, s["first_mismatches"]
