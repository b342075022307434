"""The Winograd transform units (wino_itf, wino_ftf, wino_otf) against the golden model
(tcgen.units.winograd.model: itf, ftf, otf) on the batch bench: zero mismatches, every vector
checked.  Expected values come only from the model (through each UnitSpec's adapter).

The note's §4.4 cases that need the RTL: 1 (one-hot basis tiles: Bᵀ⊗Bᵀ, Aᵀ⊗Aᵀ, G⊗G, exact),
5 (integer extremes: checkerboard, all −128, the 2G extreme filter, the C = 512 accumulator
bound through the OTF; no wrap), 6 (specials: inf − inf, signed zeros, subnormals, overflow),
random FP32 / FP16 tiles with specials, subnormals and cancellation, F(4,3) configurations, the
crop mask for every rows / cols value, and the params' errors.

FP configurations run on Verilator (Icarus evaluates the 32..168 FP adders of a tile event by
event, ~35 ms per FP32 F(2,3) tile); integer ones on the harness's default.  Make test runs a
few thousand vectors per configuration; the ``slow`` part adds larger sweeps and the remaining
F(4,3) FP configurations.  Seeds printed, ``TCGEN_SEED`` overrides them.
"""
from __future__ import annotations

import numpy as np
import pytest

from tcgen.verify import harness
from tcgen.verify.stimulus import dot_lanes, specials
from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.params import ParamError
from tcgen.registry import get_unit
from tcgen.units.winograd import model as wm
from tcgen.units.winograd import paper
from tcgen.units.winograd.family import (check_otf_contract, ewmm_tiles, keep_mask,
                                         port_layout)
from tcgen.units.winograd.params import (WinoFtfParams, WinoItfParams, WinoOtfParams,
                                         lane_ranges)

from winograd_runs import conv_run

_slow = pytest.mark.slow


# -- running -------------------------------------------------------------------------------------
def _params(unit, **kw):
    return get_unit(unit).params(**kw)


def _run(unit, p, tiles, request, sim=None, **ports):
    """Check ``tiles`` ([N, r, s] values of the unit's tile input) on the batch bench; extra
    ports (rows / cols) given as arrays; ``sim``: Icarus for the integer units at m = 2,
    Verilator otherwise, unless given.  Returns the summary."""
    port = {"wino_itf": "d", "wino_ftf": "g", "wino_otf": "o_hat"}[unit]
    tiles = np.asarray(tiles)
    n = len(tiles)
    stim = {port: pack(port_layout(p, port), tiles.reshape(n, -1))}
    if unit == "wino_otf":
        stim["rows"] = np.asarray(ports.get("rows", np.full(n, p.m)), dtype=np.uint64)
        stim["cols"] = np.asarray(ports.get("cols", np.full(n, p.m)), dtype=np.uint64)
    if sim is None:
        sim = None if p.is_int and p.m == 2 else "verilator"
    s = harness.run_batch(unit, p, stimulus=stim, name=request.node.name[:80], depth=1 << 16,
                          sim=sim)
    assert s["vectors"] == n and s["checked"] == n
    assert s["mismatches"] == 0, s["first_mismatches"]
    return s


def _golden(unit, p, tiles, **ports):
    """The model's outputs for ``tiles`` through the unit's adapter, unpacked."""
    port = {"wino_itf": "d", "wino_ftf": "g", "wino_otf": "o_hat"}[unit]
    tiles = np.asarray(tiles)
    n = len(tiles)
    args = {port: pack(port_layout(p, port), tiles.reshape(n, -1))}
    if unit == "wino_otf":
        args.update(rows=np.asarray(ports.get("rows", np.full(n, p.m))),
                    cols=np.asarray(ports.get("cols", np.full(n, p.m))))
    out = get_unit(unit).golden(p, **args)
    return unpack(port_layout(p, "y"), out["y"]), out


# -- stimulus ------------------------------------------------------------------------------------
def _onehots(side, value=1.0, fmt=None):
    E = np.eye(side * side).reshape(side * side, side, side) * value
    return E.astype(np.int64) if fmt is None else num.from_float(E, fmt)


def fp_tiles(fmt, rng, n, side):
    """[n, side, side] encodings: a sixth each of (a) dot_lanes' mix (random bits, small
    exponents, specials, lane 1 = −lane 0), (b) exact cancellation -- elements copied or
    negated across the tile, ±0 sprinkled in, (c) near cancellation -- one binade, random
    signs, (d) subnormals only, (e) near overflow, (f) one or two special values in a
    random finite tile."""
    f = num.get_format(fmt)
    L = side * side
    sbit = np.uint64(f.sign_mask)
    k = n // 6
    parts = [dot_lanes(fmt, rng, k, lanes=L, special_rate=0.03)]
    b = dot_lanes(fmt, rng, k, lanes=L, special_rate=0.0)
    for _ in range(L):                                  # copies / negations across the tile
        src, dst = rng.integers(0, L, (2, k))
        neg = rng.integers(0, 2, k).astype(np.uint64) * sbit
        b[np.arange(k), dst] = b[np.arange(k), src] ^ neg
    zero = rng.random((k, L)) < 0.1
    b = np.where(zero, rng.integers(0, 2, (k, L)).astype(np.uint64) * sbit, b)
    parts.append(b)
    e = rng.integers(f.bias - 2, f.bias + 3, (k, 1)).astype(np.uint64)   # one binade per tile
    c = (e << np.uint64(f.man_bits)) | rng.integers(0, 1 << f.man_bits, (k, L)).astype(np.uint64)
    c |= rng.integers(0, 2, (k, L)).astype(np.uint64) * sbit
    c[:, 1::2] = (c[:, 0::2][:, :c[:, 1::2].shape[1]] ^ sbit) + rng.integers(
        0, 3, (k, c[:, 1::2].shape[1])).astype(np.uint64)           # ± a few ulps apart
    parts.append(c)
    d = rng.integers(0, 1 << (f.man_bits + 1), (k, L)).astype(np.uint64)   # exp field 0 or 1
    d |= rng.integers(0, 2, (k, L)).astype(np.uint64) * sbit
    parts.append(d)
    big = (np.uint64(f.max_exp_field - rng.integers(0, 4, (k, L))) << np.uint64(f.man_bits))
    big |= rng.integers(0, 1 << f.man_bits, (k, L)).astype(np.uint64)
    big |= rng.integers(0, 2, (k, L)).astype(np.uint64) * sbit
    parts.append(big)
    r = n - 5 * k
    g = num.from_float(rng.normal(0, 1, (r, L)), fmt)
    sp = np.asarray(specials(fmt), dtype=np.uint64)
    for _ in range(2):
        g[np.arange(r), rng.integers(0, L, r)] = sp[rng.integers(0, len(sp), r)]
    parts.append(g)
    return np.concatenate(parts).astype(np.uint64).reshape(n, side, side)


def _corners(lo, hi, signs):
    """Tiles at the corners of a box: where(sign > 0, hi, lo) per element."""
    return np.where(np.asarray(signs) > 0, hi, lo)


def _extreme_tiles(coef, lo, hi, side):
    """For every output (a column of ``coef`` [inputs, outputs]) the two inputs of the box
    [lo, hi] that reach its maximum and its minimum."""
    s = np.sign(coef.T.astype(np.int64))                            # [outputs, inputs]
    lo = np.broadcast_to(np.asarray(lo, dtype=object), s.shape[1:])
    hi = np.broadcast_to(np.asarray(hi, dtype=object), s.shape[1:])
    return np.concatenate([np.where(s > 0, hi, lo), np.where(s > 0, lo, hi)]) \
        .reshape(-1, side, side)


def _coef(fn, m, side):
    E = np.eye(side * side, dtype=np.int64).reshape(side * side, side, side)
    return fn(E, m, "int").reshape(side * side, -1)


def _assert_kron_basis(unit, p, onehots, M, stage):
    """The model on the (m+2)² one-hot tiles gives the columns of M⊗M exactly (``stage``: the
    format of the unit's output, FP modes)."""
    y, _ = _golden(unit, p, onehots)
    MM = np.kron(np.array(M, dtype=np.int64), np.array(M, dtype=np.int64))
    got = y if p.is_int else num.to_float(y.astype(np.uint64), p.fmt(stage))
    assert np.array_equal(np.asarray(got, dtype=np.float64).T, MM.astype(np.float64))


# == wino_itf =====================================================================================
# (2, fp32): ~9 s of Icarus, slow since issue 41's tests (make test's budget); the FP ITF stays
# in make test through test_itf_random_fp
@pytest.mark.parametrize("m,mode", [pytest.param(2, "fp32", marks=_slow),
                                    pytest.param(2, "fp16", marks=_slow),
                                    (2, "int"), (4, "int"),
                                    pytest.param(4, "fp16", marks=_slow),   # ~30 s of Icarus
                                    pytest.param(4, "fp32", marks=_slow)])
def test_itf_basis(m, mode, request):
    """Case 1: the (m+2)² one-hot tiles give the columns of Bᵀ⊗Bᵀ, exactly (also scaled by
    -3 and, FP, by 2^-20 so the scalings see other exponents)."""
    p = _params("wino_itf", m=m, mode=mode)
    n = m + 2
    if p.is_int:
        tiles = np.concatenate([_onehots(n), -3 * _onehots(n)])
    else:
        f = p.fmt("transform")
        tiles = np.concatenate([_onehots(n, v, f) for v in (1.0, -3.0, 2.0 ** -20)])
    _assert_kron_basis("wino_itf", p, tiles[:n * n], paper.BT[m], "transform")
    _run("wino_itf", p, tiles, request)


# FP16 at m = 2 in make test-slow (one more Verilator model, ~10 s; the FP16 datapath is the
# FTF's, whose halving is checked exhaustively below, and the ITF's at m = 4)
# FP32 at m = 2 in make test-slow too since issue 42 (make test's budget, 8.7 s): make test runs
# the FP32 ITF inside wino_conv (test_conv_specials_and_backpressure: FP32, C 3, K 2)
@pytest.mark.parametrize("mode,chunk", [pytest.param("fp32", 0, marks=_slow),
                                        pytest.param("fp32", 1, marks=_slow),
                                        pytest.param("fp16", 0, marks=_slow),
                                        pytest.param("fp16", 1, marks=_slow)])
def test_itf_random_fp(mode, chunk, request):
    """Random FP32 / FP16 tiles (fp_tiles: specials, subnormals, exact and near cancellation,
    overflow): 6,000 per format in make test, 60,000 more in make test-slow."""
    rng = np.random.default_rng(harness.seed(150 + chunk))
    p = _params("wino_itf", mode=mode)
    fmt = p.fmt("transform")
    n = 6000 if chunk == 0 else 60_000
    tiles = fp_tiles(fmt, rng, n, 4)
    if chunk == 0:       # case 6: d0 = d2 = +inf in a column (inf − inf = NaN); the FP16 ITF
        inf, big = num.get_format(fmt).inf, num.from_float(np.float64(16376.0), fmt)
        t = np.zeros((4, 4, 4), dtype=np.uint64)     # overflow threshold |x| > 16376
        t[0, 0, 1] = t[0, 2, 1] = inf
        t[1, :, :] = big
        t[2, :, :] = num.from_float(np.float64(16384.0), fmt)
        t[3, 1, 1] = inf
        tiles = np.concatenate([t, tiles])
    _run("wino_itf", p, tiles, request)


@pytest.mark.parametrize("mode,n", [pytest.param("fp16", 12, marks=_slow),   # its build: budget
                                    pytest.param("fp16", 1000, marks=_slow),
                                    pytest.param("fp32", 4000, marks=_slow),
                                    pytest.param("fp16acc", 4000, marks=_slow)])
def test_itf_f43_random_fp(mode, n, request):
    """F(4,3): 6×6 tiles, 14 adds and 5 scalings per pass vector (the 4x, 2x shifts overflow
    to inf, renormalize subnormals).  make test: 12 tiles (two of each kind of fp_tiles) on
    Icarus (~0.27 s per tile: building the Verilator model costs more); slow: 1,000-4,000 on
    Verilator."""
    rng = np.random.default_rng(harness.seed(154))
    p = _params("wino_itf", m=4, mode=mode)
    _run("wino_itf", p, fp_tiles(p.fmt("transform"), rng, n, 6), request,
         sim="icarus" if n < 100 else "verilator")


@pytest.mark.parametrize("m,bits", [(2, 8), (4, 8), (2, 4), pytest.param(4, 4, marks=_slow),
                                    pytest.param(2, 32, marks=_slow),
                                    pytest.param(4, 32, marks=_slow)])
def test_itf_int_extremes_and_random(m, bits, request):
    """Case 5 at the ITF: the checkerboard (both phases), all −128 (the −512 extreme), all 127,
    for every output the two box corners that reach its range, and uniform random tiles; the
    stage width is int_widths' (no wrap: equality with the exact model)."""
    rng = np.random.default_rng(harness.seed(155))
    p = _params("wino_itf", m=m, mode="int", data_bits=bits)
    n = m + 2
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    i, j = np.indices((n, n))
    cb = np.where((i + j) % 2 == 0, hi, lo)
    tiles = [cb[None], (hi + lo - cb)[None], np.full((1, n, n), lo), np.full((1, n, n), hi),
             _extreme_tiles(_coef(wm.itf, m, n), lo, hi, n).astype(np.int64),
             rng.integers(lo, hi + 1, (3000, n, n))]
    tiles = np.concatenate(tiles)
    y, _ = _golden("wino_itf", p, tiles)
    wlo, whi, wbits = p.widths["itf"]
    assert (int(y.min()), int(y.max())) == (wlo, whi) and wbits == p.out_bits
    if m == 2 and bits == 8:
        assert (wlo, whi, wbits) == paper.INT8_ITF
    _run("wino_itf", p, tiles, request)


# == wino_ftf =====================================================================================
@pytest.mark.parametrize("m,mode", [pytest.param(2, "fp32", marks=_slow),   # ~9 s (budget)
                                    pytest.param(2, "fp16", marks=_slow),
                                    (2, "int"), (4, "int")])
def test_ftf_basis(m, mode, request):
    """Case 1: the 9 one-hot filters give the columns of G⊗G (FP, exact: ¼, ½, 1) or s²·G⊗G
    (int: 4·G⊗G, 576·G⊗G)."""
    p = _params("wino_ftf", m=m, mode=mode)
    tiles = _onehots(3) if p.is_int else np.concatenate(
        [_onehots(3, v, p.fmt("transform")) for v in (1.0, -1.5)])
    y, _ = _golden("wino_ftf", p, tiles[:9])
    GG = np.kron(np.array(paper.G[m], dtype=object), np.array(paper.G[m], dtype=object))
    if p.is_int:
        assert np.array_equal(y.T.astype(object), GG * {2: 4, 4: 576}[m])
    else:
        assert np.array_equal(num.to_float(y.astype(np.uint64), p.fmt("transform")).T,
                              GG.astype(np.float64))
    _run("wino_ftf", p, tiles, request)


@_slow                      # ~14 s of Icarus: slow since issue 41's tests (make test's budget)
def test_ftf_fp16_halving_exhaustive(request):
    """Every FP16 value v at g00, g01 and g11 (the rest +0): the column and row passes halve
    it twice (½v, ¼v) through s + x1 and s − x1 -- every subnormal rounding of the ×½ (½·2^−24
    -> +0, ½·3·2^−24 -> 2^−23), ±0, inf and NaN, against the model's fp_mul(·, 0.5)."""
    p = _params("wino_ftf", mode="fp16")
    v = np.arange(1 << 16, dtype=np.uint64)
    tiles = np.zeros((3, 1 << 16, 3, 3), dtype=np.uint64)
    tiles[0, :, 0, 0] = v
    tiles[1, :, 0, 1] = v
    tiles[2, :, 1, 1] = v
    _run("wino_ftf", p, tiles.reshape(-1, 3, 3), request)


# slow (make test's budget): the FP32 FTF's build with test_default_workloads' FTF run; the FP16
# FTF's halving runs exhaustively in make test
@pytest.mark.parametrize("chunk", [0, pytest.param(1, marks=_slow)])
@pytest.mark.parametrize("mode", [pytest.param("fp32", marks=_slow),
                                  pytest.param("fp16", marks=_slow)])
def test_ftf_random_fp(mode, chunk, request):
    """Random 3×3 filters (fp_tiles' mix); FP32 subnormals meet the halving here."""
    rng = np.random.default_rng(harness.seed(160 + chunk))
    p = _params("wino_ftf", mode=mode)
    _run("wino_ftf", p, fp_tiles(p.fmt("transform"), rng, 6000 if chunk == 0 else 60_000, 3),
         request)


@pytest.mark.parametrize("m,bits", [(2, 8), (4, 8)] + [
    pytest.param(m, b, marks=_slow) for m in (2, 4) for b in (4, 2, 32)])
def test_ftf_int_extremes_and_random(m, bits, request):
    """Case 5 at the FTF: the all −128 filter (2G: −1152; 24G: −576·128), for every output the
    corners reaching its range (2G: [−1152, 1147]; INT4 / INT2 weights [−72, 67] / [−18, 13]),
    and random filters; no wrap."""
    rng = np.random.default_rng(harness.seed(162))
    p = _params("wino_ftf", m=m, mode="int", weight_bits=bits)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    tiles = np.concatenate([np.full((1, 3, 3), lo), np.full((1, 3, 3), hi),
                            _extreme_tiles(_coef(wm.ftf, m, 3), lo, hi, 3).astype(np.int64),
                            rng.integers(lo, hi + 1, (3000, 3, 3))])
    y, _ = _golden("wino_ftf", p, tiles)
    assert (int(y.min()), int(y.max())) == p.widths["ftf"][:2]
    if m == 2 and bits == 8:
        assert p.widths["ftf"] == paper.INT8_FTF_2G
        assert int(y[0].min()) == paper.INT8_FTF_2G[0]          # the all −128 filter
    if m == 2 and bits in paper.LOWBIT_FTF_2G:
        assert p.widths["ftf"] == paper.LOWBIT_FTF_2G[bits]
    _run("wino_ftf", p, tiles, request)


# == wino_otf =====================================================================================
@pytest.mark.parametrize("m,mode", [pytest.param(2, "fp32", marks=_slow),   # ~9 s (budget)
                                    (2, "int"), (4, "int"),
                                    pytest.param(4, "fp16acc", marks=_slow),  # ~20 s of Icarus
                                    pytest.param(2, "fp16acc", marks=_slow),
                                    pytest.param(4, "fp32", marks=_slow)])
def test_otf_basis(m, mode, request):
    """Case 1: the (m+2)² one-hot Ô give the columns of Aᵀ⊗Aᵀ exactly (FP: also scaled)."""
    p = _params("wino_otf", m=m, mode=mode)
    n = m + 2
    if p.is_int:        # one-hot is inside the contract only where the lane can reach ±1
        lo, hi = p.lanes
        tiles = _onehots(n)
        assert all(lo[k] <= 0 < hi[k] for k in range(n * n))
    else:
        tiles = np.concatenate([_onehots(n, v, p.fmt("acc")) for v in (1.0, -0.75)])
    _assert_kron_basis("wino_otf", p, tiles[:n * n], paper.AT[m], "acc")
    _run("wino_otf", p, tiles, request)


@pytest.mark.parametrize("chunk", [0, pytest.param(1, marks=_slow)])
# (2, fp32) in make test-slow since issue 42 (make test's budget, 9.1 s): make test runs the
# FP32 OTF inside wino_conv (test_conv_specials_and_backpressure: FP32, C 3, K 2)
@pytest.mark.parametrize("m,mode", [pytest.param(2, "fp32", marks=_slow), (4, "fp16acc"),
                                    pytest.param(2, "fp16acc", marks=_slow),
                                    pytest.param(4, "fp32", marks=_slow)])
def test_otf_random_fp(m, mode, chunk, request):
    """Random Ô (fp_tiles' mix in the accumulation format) and real EWMM results (the model's
    ITF, FTF and DP-4 chain over 4 channels), every crop mask value at random.  make test:
    4,000 + 1,000 tiles at m = 2 (Verilator), 24 + 6 at m = 4 (Icarus, ~0.08 s per tile:
    cheaper than building the model); make test-slow: 40,000 + 10,000 (Verilator)."""
    rng = np.random.default_rng(harness.seed(170 + chunk))
    p = _params("wino_otf", m=m, mode=mode)
    n = (4000 if m == 2 else 24) if chunk == 0 else 40_000
    sbit = np.uint64(num.get_format(p.fmt("acc")).sign_mask)
    zeros = np.zeros((2, m + 2, m + 2), dtype=np.uint64)
    zeros[1] |= sbit                                  # +0 and -0 tiles: the zero results
    tiles = np.concatenate([zeros, fp_tiles(p.fmt("acc"), rng, n, m + 2),
                            ewmm_tiles(p, rng, n // 4)])
    k = len(tiles)
    top = 1 << p.count_bits
    _run("wino_otf", p, tiles, request, sim="icarus" if k < 100 else None,
         rows=rng.integers(0, top, k), cols=rng.integers(0, top, k))


@pytest.mark.parametrize("m", [2, 4])
def test_otf_crop_masks(m, request):
    """Every (rows, cols) port value (0 .. 2m − 1 each), on random Ô: keep = (i < rows) &
    (j < cols) bit i·m + j, the values computed in full whatever the mask."""
    rng = np.random.default_rng(harness.seed(175))
    p = _params("wino_otf", m=m, mode="int")
    top = 1 << p.count_bits
    rows, cols = (a.reshape(-1) for a in np.meshgrid(np.arange(top), np.arange(top)))
    tiles = ewmm_tiles(p, rng, len(rows), C=4)
    _, out = _golden("wino_otf", p, tiles, rows=rows, cols=cols)
    keep = out["keep"].astype(np.int64)
    for r, c, k in zip(rows, cols, keep):
        assert k == sum(1 << (i * m + j) for i in range(min(r, m)) for j in range(min(c, m)))
    _run("wino_otf", p, tiles, request, rows=rows, cols=cols)


@pytest.mark.parametrize("m", [2, 4])
def test_keep_mask_is_the_models_crop(m):
    """The mask with rows = min(m, H' − m·i), cols = min(m, W' − m·j) per tile keeps exactly
    what model.untile keeps, for every H', W' over two tile rows / columns."""
    for Ho in range(1, 2 * m + 1):
        for Wo in range(1, 2 * m + 1):
            Th, Tw = -(-Ho // m), -(-Wo // m)
            tiles = np.arange(Th * Tw * m * m).reshape(Th, Tw, m, m)
            kept = set(wm.untile(tiles, Ho, Wo).reshape(-1).tolist())
            mine = set()
            for i in range(Th):
                for j in range(Tw):
                    k = int(keep_mask(m, min(m, Ho - m * i), min(m, Wo - m * j)))
                    mine |= {int(tiles[i, j].reshape(-1)[b]) for b in range(m * m)
                             if k >> b & 1}
            assert mine == kept, (Ho, Wo)


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("bits", [(8, 8, 512), pytest.param((4, 2, 16), marks=_slow),
                                  pytest.param((32, 32, 3), marks=_slow)])
def test_otf_int_extremes_and_random(m, bits, request):
    """Case 5 at the OTF: for every output the lane-box corners that reach int_widths' OTF
    bound, random corners, random in-contract Ô and real EWMM results; no wrap."""
    rng = np.random.default_rng(harness.seed(180))
    db, wb, C = bits
    p = _params("wino_otf", m=m, mode="int", data_bits=db, weight_bits=wb, channels=C)
    n = m + 2
    lo, hi = (np.asarray(v, dtype=object) for v in p.lanes)
    corners = rng.integers(0, 2, (2000, n * n))
    u = rng.integers(0, 1 << 62, (2000, n * n))
    rand = np.array([[lo[k] + ((int(u[i, k]) * (hi[k] - lo[k])) >> 62) for k in range(n * n)]
                     for i in range(len(u))], dtype=object)         # uniform in [lo, hi]
    tiles = np.concatenate([_extreme_tiles(_coef(wm.otf, m, n), lo, hi, n),
                            _corners(lo, hi, corners).reshape(-1, n, n),
                            rand.reshape(-1, n, n), ewmm_tiles(p, rng, 200, C=min(C, 8))])
    y, _ = _golden("wino_otf", p, tiles)
    wlo, whi, wbits = p.widths["otf"]
    assert wlo <= int(y.min()) and int(y.max()) <= whi and wbits == p.out_bits
    _run("wino_otf", p, tiles, request)


def test_int_pipeline_extremes_through_the_units(request):
    """Case 5 end to end at F(2,3) INT8, C = 512: all −128 (the interior lane reaches the
    accumulator bound 512·1152·512), the checkerboard and the 2G extreme filter; the model's
    EWMM results of those layers through wino_otf, whose output >> 2, cropped, is the direct
    convolution."""
    C = 512
    i, j = np.indices((4, 4))
    cases = [(np.full((1, C, 4, 4), -128), np.full((1, C, 3, 3), -128)),
             (np.where((i + j) % 2 == 0, 127, -128)[None, None].repeat(C, 1),
              np.ones((1, C, 3, 3), np.int64)),
             (np.ones((1, C, 4, 4), np.int64),
              np.where(np.outer([1, -1, 1], [1, -1, 1]) > 0, 127, -128)[None, None]
              .repeat(C, 1))]
    p = _params("wino_otf", mode="int", channels=C)
    tiles = []
    for I, F in cases:
        tr = {}
        wm.winograd_conv(I, F, 2, "int", trace=tr)
        oh = tr["ewmm"][0, 0]                                   # [T_h, T_w, 4, 4]
        y, _ = _golden("wino_otf", p, oh.reshape(-1, 4, 4))
        assert np.all(y % 4 == 0)
        O = wm.untile((y >> 2).reshape(oh.shape[:2] + (2, 2)), 4, 4)
        assert np.array_equal(O, wm.direct_conv_exact(I, F)[0, 0])
        tiles.append(oh.reshape(-1, 4, 4))
    tiles = np.concatenate(tiles)
    assert int(tiles.max()) == p.widths["acc"][1] == 512 * 1152 * C    # all −128: the bound
    _run("wino_otf", p, tiles, request)


def test_lane_ranges_match_int_widths():
    """The per-lane contract of the integer OTF is int_widths' own: its min / max over the
    lanes are int_widths' ITF, FTF, product and accumulator ranges."""
    for m in (2, 4):
        for db, wb, C in ((8, 8, 1), (8, 8, 512), (4, 2, 16), (12, 8, 3), (32, 32, 7)):
            r = lane_ranges(m, db, wb, C)
            w = wm.int_widths(m, db, wb, C)
            for stage in ("itf", "ftf", "product", "acc"):
                assert (min(r[stage][0]), max(r[stage][1])) == w[stage][:2], (m, stage)


def test_otf_contract_refused():
    p = _params("wino_otf", mode="int", channels=4)
    lo, hi = p.lanes
    t = np.array(lo, dtype=object).reshape(1, 4, 4)
    check_otf_contract(p, t)
    t[0, 1, 2] = lo[6] - 1
    with pytest.raises(ValueError, match=r"lane \(1, 2\).*outside"):
        check_otf_contract(p, t)
    with pytest.raises(ValueError, match="contract"):
        get_unit("wino_otf").golden(p, o_hat=pack(port_layout(p, "o_hat"), t.reshape(1, -1)),
                                    rows=np.array([2]), cols=np.array([2]))


# == workloads, params ============================================================================
# the FP32 ITF and OTF at their defaults (8.6 s, 8.9 s: builds of their own) are make
# test-slow's since issue 42 (make test's budget); make test runs both inside wino_conv's FP32
# specials run
@pytest.mark.parametrize("unit,kw", [pytest.param("wino_itf", {}, marks=_slow),
                                     pytest.param("wino_ftf", {}, marks=_slow),   # budget
                                     pytest.param("wino_otf", {}, marks=_slow),
                                     ("wino_itf", {"mode": "int"}),
                                     ("wino_ftf", {"mode": "int", "m": 4}),
                                     ("wino_otf", {"mode": "int", "m": 4})])
def test_default_workloads(unit, kw, request):
    """Each unit's own workload (sim power's stimulus) through the batch bench."""
    u = get_unit(unit)
    p = u.params(**kw)
    st = u.workload(p, np.random.default_rng(harness.seed(190)), 500)
    sim = None if p.is_int and p.m == 2 else "verilator"
    s = harness.run_batch(unit, p, stimulus=st, name=request.node.name[:80], depth=1 << 16,
                          sim=sim)
    assert s["vectors"] == s["checked"] == 500 and s["mismatches"] == 0


@pytest.mark.parametrize("cls,kw,field,words", [
    (WinoItfParams, {"m": 3}, "m", "one of 2, 4"),
    (WinoItfParams, {"mode": "bf16"}, "mode", "one of fp32, fp16, fp16acc, int"),
    (WinoItfParams, {"mode": "int", "data_bits": 1}, "data_bits", "2..32"),
    (WinoItfParams, {"mode": "int", "data_bits": 33}, "data_bits", "2..32"),
    (WinoItfParams, {"data_bits": 4}, "data_bits", "unless mode=int"),
    (WinoFtfParams, {"m": 4}, "mode", "offline only"),
    (WinoFtfParams, {"m": 4, "mode": "fp16"}, "mode", "not an adder network"),
    (WinoFtfParams, {"weight_bits": 4, "mode": "fp16"}, "weight_bits", "unless mode=int"),
    (WinoOtfParams, {"channels": 0, "mode": "int"}, "channels", "1..65536"),
    (WinoOtfParams, {"channels": 64}, "channels", "unless mode=int"),
    (WinoOtfParams, {"m": 6}, "m", "one of 2, 4"),
])
def test_params_errors(cls, kw, field, words):
    with pytest.raises(ParamError) as e:
        cls(**kw)
    msg = str(e.value)
    assert msg.startswith(f"{cls.UNIT}: {field} must be ") and words in msg
    assert msg.endswith(f", got {kw.get(field, 'fp32')!r}")


def test_params_from_strings_and_widths():
    u = get_unit("wino_ftf")
    assert u.make_params({"m": "4", "mode": "int"}).out_bits == wm.int_widths(4, 8, 8, 1)["ftf"][2]
    with pytest.raises(ParamError, match="wino_ftf: m must be one of 2, 4, got 3"):
        u.make_params({"m": "3"})
    p = _params("wino_otf", mode="int", data_bits=8, weight_bits=8, channels=512)
    assert (p.in_bits, p.out_bits) == (wm.int_widths(2, 8, 8, 512)["acc"][2],
                                       wm.int_widths(2, 8, 8, 512)["otf"][2]) == (30, 32)
    assert _params("wino_otf", m=4).count_bits == 3 and _params("wino_otf").count_bits == 2
    for mode, acc in (("fp32", 32), ("fp16", 32), ("fp16acc", 16)):
        assert _params("wino_otf", mode=mode).in_bits == acc
        assert _params("wino_itf", mode=mode).in_bits == (32 if mode == "fp32" else 16)


# -- wino_conv: the tile datapath (ITF -> element-wise lanes on DP-4s -> OTF) -------------------
_conv_run = conv_run


@pytest.mark.parametrize("kw", [pytest.param({}, marks=pytest.mark.slow),   # ~15 s: C = 8
                                {"mode": "fp16", "C": 5, "K": 3, "dps": 3},
                                pytest.param({"mode": "int"}, marks=pytest.mark.slow),   # the budget
                                pytest.param({"mode": "int", "m": 4, "C": 3, "K": 2, "dps": 6,
                                              "data_bits": 5, "weight_bits": 7},
                                             marks=pytest.mark.slow),     # 8 s: the budget
                                pytest.param({"mode": "fp16acc", "m": 4, "C": 4, "K": 2},
                                             marks=pytest.mark.slow),
                                pytest.param({"m": 4, "C": 9, "K": 2, "dps": 8},
                                             marks=pytest.mark.slow)])
def test_conv_tiles(kw):
    """Random tiles (He-scaled filters through model.ftf, random crops) back to back: bit-exact
    against model.itf -> ewmm -> otf per request in C + groups·⌈C/4⌉ + K cycles, back to back
    one per C + groups·⌈C/4⌉ (the OTF under the next tile's ITF and EWMM)."""
    from tcgen.units.winograd.family import random_conv_requests
    rng = np.random.default_rng(harness.seed(1501))
    p = get_unit("wino_conv").params(**kw)
    reqs = random_conv_requests(p, rng, 4)
    s = _conv_run(p, reqs + with_every_crop(p, reqs), f"conv_{len(kw)}_{p.mode}_{p.m}")
    assert s["back_to_back_latency"] == p.cycles
    assert s["back_to_back_issue_intervals"] == [p.interval]


def test_conv_specials_and_backpressure():
    """inf in the input tiles (the ITF's inf − inf = NaN spreads through the lanes) and idle /
    stall cycles on both streams: bit-exact against the model."""
    from tcgen.units.winograd.family import random_conv_requests
    rng = np.random.default_rng(harness.seed(1502))
    p = get_unit("wino_conv").params(C=3, K=2)
    reqs = random_conv_requests(p, rng, 3) + random_conv_requests(p, rng, 3, specials=True)
    _conv_run(p, reqs, "conv_bp", scenario="backpressure", idle=0.3, stall=0.5)


def _image_requests(pw, pd, I, F, Fh):
    """One image I [C, H, W] as the two datapaths take it, tile by tile (model.tile_input,
    row-major, the last row / column cropped): (T_h, T_w, wino_conv requests with the
    transformed filters Fh, direct_conv3x3 requests with the raw filters F)."""
    from tcgen.units.winograd.family import conv_request, direct_request
    m, (H, W) = pw.m, I.shape[1:]
    tiles = wm.tile_input(I, m)                                   # [C, Th, Tw, m+2, m+2]
    Th, Tw = tiles.shape[1:3]
    wreq, dreq = [], []
    for ti in range(Th):
        for tj in range(Tw):
            rows, cols = min(m, H - m * ti), min(m, W - m * tj)
            wreq.append(conv_request(pw, tiles[:, ti, tj], Fh, rows, cols))
            dreq.append(direct_request(pd, tiles[:, ti, tj], F, rows, cols))
    return Th, Tw, wreq, dreq


@pytest.mark.parametrize("unit", ["wino_conv", pytest.param("direct_conv3x3", marks=_slow)])
@pytest.mark.parametrize("m", [2, pytest.param(4, marks=_slow)])     # m = 4: ~23 s
def test_int_extremes_no_wrap(unit, m):
    """Mode int with every input and weight at its most negative or most positive value
    (INT8 m = 2; INT6 × INT4 at m = 4, C = 16, whose int_widths stages are reached nearly at
    their bounds), with stalls: bit-exact against the model -- whose winograd path checks
    every stage against int_widths and divides exactly -- so no node of the RTL wrapped."""
    from tcgen.units.winograd import family as fam
    rng = np.random.default_rng(harness.seed(1506 + m))
    kw = {"mode": "int"} if m == 2 else {"mode": "int", "m": 4, "C": 16, "K": 1,
                                         "data_bits": 6, "weight_bits": 4}
    kw["dps"] = {("wino_conv", 2): 4, ("wino_conv", 4): 6, ("direct_conv3x3", 2): 9,
                 ("direct_conv3x3", 4): 8}[(unit, m)]
    p = get_unit(unit).params(**kw)
    make = fam.random_conv_requests if unit == "wino_conv" else fam.random_direct_requests
    reqs = make(p, rng, 3, extremes=True)
    reqs = reqs + with_every_crop(p, reqs)
    run = _conv_run if unit == "wino_conv" else _direct_run
    run(p, reqs, f"int_ext_{unit}_{m}", scenario="backpressure", idle=0.2, stall=0.4)


def test_int_conv_is_exact_direct_convolution():
    """One INT8 image (C = 8, K = 4, 5×7: crops at the bottom and right) through the models of
    wino_conv (F(2,3), 2G) and direct_conv3x3, tile by tile as the units take it: both equal
    the exact direct convolution (model.direct_conv_exact) -- integer Winograd is exact."""
    from tcgen.units.winograd.family import conv_model, conv_result, direct_model
    from tcgen.units.winograd.params import WinoConvParams, equal_throughput_dps
    rng = np.random.default_rng(harness.seed(1507))
    for m in (2, 4):
        pw = WinoConvParams(mode="int", m=m)
        pd = equal_throughput_dps(pw)
        C, K, H, W = pw.C, pw.K, 5, 7
        I = rng.integers(-128, 128, (C, H, W))
        F = rng.integers(-128, 128, (K, C, 3, 3))
        Th, Tw, wreq, dreq = _image_requests(pw, pd, I, F, wm.ftf(F, m, "int"))

        def image(p, payloads):
            y = np.stack([conv_result(p, v)[0] for v in payloads])
            return wm.untile(np.moveaxis(y.reshape(Th, Tw, K, m, m), 2, 0), H, W)

        ref = wm.direct_conv_exact(I, F)
        assert np.array_equal(image(pw, conv_model(pw, wreq)["res__payload"]), ref)
        assert np.array_equal(image(pd, direct_model(pd, dreq)["res__payload"]), ref)


def test_exact_div9_identity():
    """rtl.exact_div_pow2_9's multiplier (1 − 8)(1 + 8²)(1 + 8⁴)… is 9⁻¹ modulo 2^w for every
    width it is built for, and divides every multiple of 9 whose quotient fits w bits."""
    from tcgen.units.winograd.rtl import exact_div_pow2_9  # noqa: F401  (the RTL built on it)
    for w in range(2, 70):
        inv, k = 1 - 8, 3
        while 2 * k < w:
            k *= 2
            inv *= 1 + (1 << k)
        assert (9 * inv) % (1 << w) == 1, w
        for q in (0, 1, -1, (1 << (w - 1)) - 1, -(1 << (w - 1))):
            assert ((9 * q * inv) % (1 << w)) == q % (1 << w)


# -- direct_conv3x3: the direct baseline on the same DP-4s ---------------------------------------
def _direct_run(p, reqs, name, scenario="back_to_back", **cfg):
    from tcgen.verify.bench_config import run_stream
    s = run_stream("direct_conv3x3", p, {"op__payload": np.array(reqs, dtype=object)},
                   name=name, scenarios=(scenario,), **cfg)
    assert s["mismatches"] == 0, s
    assert s[f"{scenario}_inputs"] == len(reqs) and s["vectors"] == len(reqs)
    return s


@pytest.mark.parametrize("kw", [pytest.param({}, marks=pytest.mark.slow),   # ~15 s; linted
                                {"mode": "fp16", "C": 5, "K": 3, "dps": 3},
                                pytest.param({"mode": "fp16acc", "m": 4, "C": 3, "K": 2,
                                              "dps": 5}, marks=pytest.mark.slow),  # the budget
                                pytest.param({"mode": "int", "dps": 9},
                                             marks=pytest.mark.slow),    # the budget
                                pytest.param({"mode": "int", "m": 4, "C": 3, "K": 2, "dps": 5,
                                              "data_bits": 5, "weight_bits": 7},
                                             marks=pytest.mark.slow),                 # the budget
                                pytest.param({"m": 4, "C": 9, "K": 2, "dps": 16},
                                             marks=pytest.mark.slow)])
def test_direct_tiles(kw):
    """Random tiles and raw He-scaled filters, random crops, back to back: bit-exact against
    model.direct_tile per request in groups·⌈9C/4⌉ + 1 cycles, one per groups·⌈9C/4⌉."""
    from tcgen.units.winograd.family import random_direct_requests
    rng = np.random.default_rng(harness.seed(1503))
    p = get_unit("direct_conv3x3").params(**kw)
    s = _direct_run(p, random_direct_requests(p, rng, 4), f"direct_{len(kw)}_{p.mode}_{p.m}")
    assert s["back_to_back_latency"] == p.cycles
    assert s["back_to_back_issue_intervals"] == [p.interval]


@_slow            # make test's budget (9.9 s): direct_conv3x3 stays in make test through test_direct_*
def test_direct_specials_and_backpressure():
    """+inf inputs (inf·w of both signs in one chain: NaN) and idle / stall cycles on both
    streams, with every output in one group (K·m² = dps = 8; 27 terms: 7 chunks, the last one
    padded with one (−0, +0)): bit-exact against the model."""
    from tcgen.units.winograd.family import random_direct_requests
    rng = np.random.default_rng(harness.seed(1504))
    p = get_unit("direct_conv3x3").params(C=3, K=2, dps=8)
    reqs = random_direct_requests(p, rng, 3) + random_direct_requests(p, rng, 3, specials=True)
    _direct_run(p, reqs, "direct_bp", scenario="backpressure", idle=0.3, stall=0.5)


def test_equal_throughput_params():
    """The rule: dps_direct = ⌈dps_w · m²·⌈9C/4⌉ / ((m+2)²·⌈C/4⌉)⌉ -- the fewest DP-4s whose
    ideal cycles per tile (DP-4 operations / dps) do not exceed Winograd's; the intervals then
    differ only by the group rounding (< one group of chunks each) and Winograd's max(C, K)
    ITF (or previous OTF) cycles."""
    from tcgen.units.winograd.params import (DirectConvParams, WinoConvParams,
                                             equal_throughput_dps)
    d = equal_throughput_dps(WinoConvParams())
    assert (d.m, d.mode, d.C, d.K, d.dps) == (2, "fp32", 8, 4, 9)             # 4 · 2.25
    assert (WinoConvParams().interval, d.interval) == (40, 36)
    assert equal_throughput_dps(WinoConvParams(m=4, C=4, K=2, dps=2)).dps == 8   # 4×
    for m in (2, 4):
        for C in (1, 3, 4, 8, 9, 16):
            for K in (1, 2, 4):
                for dw in (1, 2, 3, 4):
                    w = WinoConvParams(m=m, C=C, K=K, dps=dw)
                    try:
                        d = equal_throughput_dps(w)
                    except ParamError:
                        assert dw * m * m * -(-9 * C // 4) > 16 * (m + 2) ** 2 * -(-C // 4)
                        continue
                    assert d.dp4_ops * w.dps <= w.dp4_ops * d.dps              # not slower
                    assert d.dps == 1 or d.dp4_ops * w.dps > w.dp4_ops * (d.dps - 1)
                    assert 0 <= d.interval - d.dp4_ops / d.dps < d.chunks
                    itf = max(w.C, w.K)       # the ITF, or the previous OTF (issue 42)
                    assert 0 <= w.interval - itf - w.dp4_ops / w.dps < w.chunks
                    assert d.interval - (w.interval - itf) < d.chunks
    with pytest.raises(ParamError, match="direct_conv3x3: dps must be an integer in 1..16, got 36"):
        equal_throughput_dps(WinoConvParams(dps=16))
    assert DirectConvParams().cycles == DirectConvParams().interval + 1


@_slow
def test_direct_and_wino_agree_on_one_image():
    """One image (C = 8, K = 4, 5×6 -> 3×3 tiles of F(2,3), crops at the bottom / right) through
    wino_conv at its defaults and direct_conv3x3 at its equal-throughput dps (9), back to back:
    both bit-exact against their models with the intervals measured (40 and 36 cycles); the
    tiles reassembled are model.winograd_conv exactly (wino) and within the note's bound of
    model.direct_conv (wino: model.error_bound; direct: γ_k·Σ|d·g|)."""
    from tcgen.units.winograd.family import conv_model, conv_result, direct_model
    from tcgen.units.winograd.params import WinoConvParams, equal_throughput_dps
    rng = np.random.default_rng(harness.seed(1505))
    pw = WinoConvParams()
    pd = equal_throughput_dps(pw)
    C, K, H, W, m = pw.C, pw.K, 5, 6, pw.m
    I = wm.encode_input(rng.normal(0, 1, (C, H, W)), "fp32")
    F = wm.encode_input(rng.normal(0, np.sqrt(2 / (9 * C)), (K, C, 3, 3)), "fp32")
    Th, Tw, wreq, dreq = _image_requests(pw, pd, I, F, wm.ftf(F, m, "fp32"))
    sw = _conv_run(pw, wreq, "agree_wino")
    sd = _direct_run(pd, dreq, "agree_direct")
    assert sw["back_to_back_issue_intervals"] == [pw.interval] == [40]
    assert sd["back_to_back_issue_intervals"] == [pd.interval] == [36]

    def image(p, payloads):                        # what the bench proved the RTL gives
        y = np.stack([conv_result(p, v)[0] for v in payloads])       # [T, K, m, m]
        keep = np.stack([conv_result(p, v)[1] for v in payloads])
        assert keep.sum() == H * W
        return wm.untile(np.moveaxis(y.reshape(Th, Tw, K, m, m), 2, 0), H, W)

    Ow = image(pw, conv_model(pw, wreq)["res__payload"])
    Od = image(pd, direct_model(pd, dreq)["res__payload"])
    assert np.array_equal(Ow, wm.winograd_conv(I, F, m, "fp32"))
    ref = wm.direct_conv(num.to_float(I, "fp32"), num.to_float(F, "fp32"))
    assert np.all(np.abs(num.to_float(Ow, "fp32") - ref) <= wm.error_bound(I, F, m, "fp32"))
    u, k = 2.0 ** -24, 1 + 2 + pd.chunks
    bound = k * u / (1 - k * u) * wm.direct_conv(np.abs(num.to_float(I, "fp32")),
                                                 np.abs(num.to_float(F, "fp32")))
    assert np.all(np.abs(num.to_float(Od, "fp32") - ref) <= bound)


def with_every_crop(p, reqs) -> list[int]:
    """Copies of ``reqs`` (cycled) with every crop (rows, cols) in 1..m each -- the crop masks
    of docs/coverage.md (wino_conv / direct_conv3x3 requests)."""
    from tcgen.hw.layout import pack, unpack
    from tcgen.units.winograd import layouts as wl
    layout = wl.direct_op(p) if type(p).__name__ == "DirectConvParams" else wl.conv_op(p)
    f = unpack(layout, np.array([reqs[i % len(reqs)] for i in range(p.m * p.m)], dtype=object))
    f["rows"] = np.repeat(np.arange(1, p.m + 1), p.m).astype(np.uint64)
    f["cols"] = np.tile(np.arange(1, p.m + 1), p.m).astype(np.uint64)
    return [int(x) for x in pack(layout, f, n=p.m * p.m)]


@pytest.mark.parametrize("unit,kw", [
    ("direct_conv3x3", {"mode": "int", "dps": 9}),
    pytest.param("wino_conv", {"mode": "int", "m": 4, "C": 16, "K": 1, "data_bits": 6,
                               "weight_bits": 4, "dps": 6}, marks=_slow)])   # ~9 s
def test_results_back_to_back_after_a_long_stall(unit, kw):
    """The result stream held for 60 cycles at a time (scripted ready): the next tile finishes
    meanwhile and its result goes out in the cycle after the held one is taken (the
    back-to-back output pattern of docs/coverage.md; wino_conv needs K = 1), bit-exact."""
    from tcgen.units.winograd import family as fam
    rng = np.random.default_rng(harness.seed(1508))
    p = get_unit(unit).params(**kw)
    make = fam.random_conv_requests if unit == "wino_conv" else fam.random_direct_requests
    run = _conv_run if unit == "wino_conv" else _direct_run
    run(p, make(p, rng, 4), f"held_{unit}", scenario="backpressure", idle=0.0, stall=0.0,
        ready_pattern="0" * 60 + "1")

