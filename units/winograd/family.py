"""The Winograd family's units (target of the ``winograd`` entry point of ``tcgen.families``):
the line buffer ``wino_linebuf`` (units/winograd/linebuf.py), the transforms ``wino_itf``,
``wino_ftf`` and ``wino_otf``, the tile datapath ``wino_conv`` and its baseline
``direct_conv3x3`` (issue 15 §2; docs/winograd.md).
Models adapt the packed ports (``amaranth.lib.data.ArrayLayout``, row-major tiles) to
:mod:`tcgen.units.winograd.model` and back; workloads are real tiles (N(0, 1) activations,
N(0, ½) weights, or uniform integers; the OTF sees EWMM results of the model)."""
from __future__ import annotations

import dataclasses

import numpy as np
from amaranth import signed
from amaranth.lib import data

from tcgen.hw.layout import pack, unpack
from tcgen.hw.spec import (UnitSpec, fp_add_cells, fp_mul_cells, int_add_cells, int_mul_cells,
                           reg_cells)

from . import model
from . import layouts
from .params import (DirectConvParams, WinoConvParams, WinoFtfParams, WinoItfParams,
                     WinoOtfParams)
from .linebuf import WINO_LINEBUF
from .rtl import DirectConv, WinoConv, WinoFtf, WinoItf, WinoOtf

__all__ = ["UNITS", "port_layout", "keep_mask", "random_tiles", "random_filters",
           "ewmm_tiles", "check_otf_contract", "conv_request", "conv_filters", "conv_result",
           "random_conv_requests", "conv_model", "random_conv_data", "direct_request",
           "direct_model", "random_direct_requests"]

_WIDE = 62                              # int stages wider than this: Python ints in the model


def port_layout(p, port: str) -> data.ArrayLayout:
    """The ``ArrayLayout`` of a tile port (``d``, ``g``, ``o_hat``: inputs; ``y``: output)."""
    count = {"d": p.n * p.n, "g": 9, "o_hat": p.n * p.n}.get(
        port, p.m * p.m if isinstance(p, WinoOtfParams) else p.n * p.n)
    bits = p.out_bits if port == "y" else p.in_bits
    return data.ArrayLayout(signed(bits) if p.is_int else bits, count)


# -- size estimates (hw/spec.py; docs/robustness.md): cells after flat synthesis, osu018 ------
# Add/sub networks of the transforms and DP-4s of the element-wise stage in the mode's formats,
# times a constant fitted to reports/winograd.json (wino_itf 41.7k, wino_otf 36.1k, wino_conv
# 242k, direct_conv3x3 dps=9 269k cells at fp32).
def _tf_add(mode: str, int_bits: int) -> float:
    return {"fp32": fp_add_cells("fp32"), "fp16": fp_add_cells("fp16"),
            "fp16acc": fp_add_cells("fp16")}.get(mode) or int_add_cells(int_bits)


def _itf_cells(m: int, mode: str, data_bits: int) -> float:
    t = m + 2
    return 0.39 * 2 * t * t * (2 if m == 2 else 5) * _tf_add(mode, data_bits + 4)


def _otf_cells(m: int, mode: str, data_bits: int, weight_bits: int, channels: int) -> float:
    adds = 2 * (m + 2) * m * (3 if m == 2 else 6)
    acc = {"fp32": "fp32", "fp16": "fp32", "fp16acc": "fp16"}.get(mode)
    add = fp_add_cells(acc) if acc else int_add_cells(
        data_bits + weight_bits + 8 + max(1, channels - 1).bit_length())
    return 0.4 * adds * add


def _dp4_cells(mode: str, data_bits: int, weight_bits: int) -> float:
    if mode == "int":
        return 4 * int_mul_cells(data_bits, weight_bits) + 4 * int_add_cells(40)
    mul = "fp32" if mode == "fp32" else "fp16"
    return 4 * fp_mul_cells(mul) + 4 * fp_add_cells("fp16" if mode == "fp16acc" else "fp32")


def _est_wino_itf(p) -> float:
    return _itf_cells(p.m, p.mode, p.data_bits)


def _est_wino_ftf(p) -> float:
    t = p.m + 2
    return 0.17 * 2 * t * t * 3 * _tf_add(p.mode, p.weight_bits + 6)   # default: 26.4k measured


def _est_wino_otf(p) -> float:
    return _otf_cells(p.m, p.mode, p.data_bits, p.weight_bits, p.channels)


def _est_wino_linebuf(p) -> float:
    bits = 32 if p.mode == "fp32" else (16 if p.mode.startswith("fp16") else p.data_bits)
    return 2 * (reg_cells(bits) * (2 * p.W + (p.m + 2) ** 2) + 500)   # default: 5.2k measured


def _est_wino_conv(p) -> float:
    t = p.m + 2
    # integer mode: the transformed operands and the lanes widen with m (s²-scaled filters)
    wide = (3.0 if p.m == 4 else 2.0) if p.mode == "int" else 1.0
    # overlap: a second Î bank, a second Ô bank and the filter bank (registers + bank muxes)
    banks = (p.C + p.K + (p.K * p.C if p.wsource == "bank" else 0)) * t * t * reg_cells(32) \
        if p.overlap else 0.0
    return 1.17 * (wide * p.dps * _dp4_cells(p.mode, p.data_bits + 2, p.weight_bits + 6)
                   + _itf_cells(p.m, p.mode, p.data_bits)
                   + p.K * _otf_cells(p.m, p.mode, p.data_bits, p.weight_bits, p.C) / 4
                   + p.K * t * t * reg_cells(32) + banks)


def _est_direct_conv3x3(p) -> float:
    return 1.22 * (p.dps * _dp4_cells(p.mode, p.data_bits, p.weight_bits)
                   + p.K * p.m * p.m * reg_cells(32))


def _tiles(p, port, payloads, side):
    x = unpack(port_layout(p, port), payloads)
    if p.is_int and max(w[2] for w in p.widths.values()) > _WIDE:
        x = x.astype(object)
    elif not p.is_int:
        x = x.astype(np.uint64)
    return x.reshape(len(x), side, side)


def _out(p, y):
    y = np.asarray(y)
    return pack(port_layout(p, "y"), y.reshape(len(y), -1))


def keep_mask(m: int, rows, cols) -> np.ndarray:
    """The OTF crop mask as integers: bit i·m + j = (i < rows) & (j < cols)."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    out = np.zeros(rows.shape, dtype=np.uint64)
    for i in range(m):
        for j in range(m):
            out |= ((rows > i) & (cols > j)).astype(np.uint64) << np.uint64(i * m + j)
    return out


def check_otf_contract(p, o_hat):
    """ValueError unless every integer lane of Ô ([N, m+2, m+2]) lies in the range an EWMM of
    ``p.channels`` products can reach (``p.lanes``): there ``int_widths`` proves that the OTF's
    nodes do not overflow; outside it the RTL's widths do not hold the result."""
    lo, hi = (np.asarray(v, dtype=object).reshape(p.n, p.n) for v in p.lanes)
    o = np.asarray(o_hat, dtype=object)
    bad = (o < lo) | (o > hi)
    if np.any(bad):
        k = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"wino_otf: Ô[{k[0]}] lane ({k[1]}, {k[2]}) = {o[k]} lies outside "
                         f"[{lo[k[1:]]}, {hi[k[1:]]}], the range an EWMM of C = {p.channels} "
                         f"products of {p.data_bits}-bit data and {p.weight_bits}-bit weights "
                         f"reaches: outside the unit's integer contract")


# -- models --------------------------------------------------------------------------------------
def _itf_model(p, d):
    return {"y": _out(p, model.itf(_tiles(p, "d", d, p.n), p.m, p.mode))}


def _ftf_model(p, g):
    return {"y": _out(p, model.ftf(_tiles(p, "g", g, 3), p.m, p.mode))}


def _otf_model(p, o_hat, rows, cols):
    x = _tiles(p, "o_hat", o_hat, p.n)
    if p.is_int:
        check_otf_contract(p, x)
    return {"y": _out(p, model.otf(x, p.m, p.mode)), "keep": keep_mask(p.m, rows, cols)}


# -- workloads -----------------------------------------------------------------------------------
def random_tiles(p, rng, count: int, side: int, scale: float = 1.0, bits: int | None = None):
    """``count`` side×side tiles: N(0, scale²) encoded in the data format (FP modes), or
    uniform ``bits``-bit signed integers (mode int)."""
    if p.is_int:
        return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (count, side, side))
    return model.encode_input(rng.normal(0, scale, (count, side, side)), p.mode)


def random_filters(p, rng, count: int):
    """``count`` 3×3 filters: N(0, ½) (He-like at C = 4) or uniform ``weight_bits`` integers."""
    return random_tiles(p, rng, count, 3, scale=0.5 ** 0.5, bits=p.weight_bits)


def ewmm_tiles(p, rng, count: int, C: int | None = None):
    """``count`` Ô tiles [count, m+2, m+2] as an EWMM makes them (model.ewmm): ``count`` input
    tiles of C channels (random_tiles; default C = 4, mode int ``p.channels``) against one
    random filter per channel, through the model's ITF, FTF and DP-4 chain."""
    C = (p.channels if p.is_int else 4) if C is None else C
    n, L = p.n, p.n * p.n
    d = random_tiles(p, rng, count * C, n, bits=p.data_bits).reshape(count, C, n, n)
    g = random_filters(p, rng, C)
    Ih = model.itf(d, p.m, p.mode).reshape(count, C, L)
    Fh = model.ftf(g, p.m, p.mode).reshape(C, L)
    if p.is_int:           # exact in any order; Python ints (wide configs pass 64 bits)
        return (Ih.astype(object) * Fh.astype(object)[None]).sum(axis=1).reshape(count, n, n)
    Ih = Ih.reshape(1, count, C, L).transpose(0, 2, 1, 3)                    # [1, C, P, L]
    return model.ewmm(Ih, Fh[None], p.mode)[0, 0].reshape(count, n, n)


def _itf_workload(p, rng, n):
    return {"d": pack(port_layout(p, "d"), random_tiles(p, rng, n, p.n, bits=p.data_bits)
                      .reshape(n, -1))}


def _ftf_workload(p, rng, n):
    return {"g": pack(port_layout(p, "g"), random_filters(p, rng, n).reshape(n, -1))}


def _otf_workload(p, rng, n):
    C = min(p.channels, 8) if p.is_int else None     # fewer channels: quicker, in contract
    o = ewmm_tiles(p, rng, n, C)
    return {"o_hat": pack(port_layout(p, "o_hat"), o.reshape(n, -1)),
            "rows": rng.integers(1, p.m + 1, n).astype(np.uint64),
            "cols": rng.integers(1, p.m + 1, n).astype(np.uint64)}


def _transform_ops(kind):
    def ops(p):
        c = model.op_counts(p.m, p.mode)
        return float(c[f"{kind}_adds"])
    return ops


WINO_ITF = UnitSpec(
    estimate=_est_wino_itf,
    name="wino_itf", family="winograd",
    summary="Winograd input transform Bᵀ d B, F(2x2,3x3) / F(4x4,3x3): separable add/sub "
            "network, FP32/FP16 (RNE) or exact integer, combinational",
    params=WinoItfParams, build=WinoItf, model=_itf_model,
    ops_per_cycle=_transform_ops("itf"), ops_unit="add", workload=_itf_workload)

WINO_FTF = UnitSpec(
    estimate=_est_wino_ftf,
    name="wino_ftf", family="winograd",
    summary="Winograd filter transform G g Gᵀ on chip: F(2,3) FP ×½ network or integer 2G / "
            "24G (s²-scaled), combinational",
    params=WinoFtfParams, build=WinoFtf, model=_ftf_model,
    ops_per_cycle=_transform_ops("ftf"), ops_unit="add", workload=_ftf_workload)

WINO_OTF = UnitSpec(
    estimate=_est_wino_otf,
    name="wino_otf", family="winograd",
    summary="Winograd output transform Aᵀ Ô A in the accumulation format (FP32/FP16 RNE or "
            "exact s²-scaled integer) + crop mask, combinational",
    params=WinoOtfParams, build=WinoOtf, model=_otf_model,
    ops_per_cycle=_transform_ops("otf"), ops_unit="add", workload=_otf_workload)


# -- wino_conv: one output tile position per request ---------------------------------------------
def conv_request(p, d, w, rows=None, cols=None, *, load=1, first=1, last=1) -> int:
    """Payload of one tile: d [C, m+2, m+2] data-format encodings, w [K, C, m+2, m+2]
    transformed filters (transform-format encodings, e.g. :func:`model.ftf`), rows / cols the
    valid output rows / columns (default m); overlap: ``load``, accumulate: ``first``,
    ``last`` (WinoConv's docstring)."""
    n = p.lanes
    dt = object if p.is_int else np.uint64
    own_w = p.wsource == "bank"
    extra = {"load": np.array([load])} if p.overlap and own_w else {}
    if p.accumulate:
        extra.update(first=np.array([first]), last=np.array([last]))
    if own_w:
        extra["w"] = np.asarray(w, dtype=dt).reshape(1, p.K, p.C, n)
    return int(pack(layouts.conv_op(p), {
        "d": np.asarray(d, dtype=dt).reshape(1, p.C, n),
        "rows": np.array([p.m if rows is None else rows]),
        "cols": np.array([p.m if cols is None else cols]), **extra})[0])


def conv_filters(p, w) -> int:
    """Payload of one filter set, w [K, C, m+2, m+2] (``wsource=stream``'s ``w`` stream: one
    per request, in request order)."""
    dt = object if p.is_int else np.uint64
    return int(pack(layouts.conv_w(p), {
        "w": np.asarray(w, dtype=dt).reshape(1, p.K, p.C, p.lanes)})[0])


def conv_result(p, payload: int):
    """(y [K, m, m] accumulation-format encodings, or the exact integers of mode int, keep
    [m, m] bools) of one result."""
    f = unpack(layouts.conv_res(p), [int(payload)])
    keep = np.array([(int(f["keep"][0]) >> i) & 1 for i in range(p.m * p.m)], dtype=bool)
    y = f["y"][0].astype((np.int64 if p.bits("output") <= 62 else object) if p.is_int
                         else np.uint64)
    return y.reshape(p.K, p.m, p.m), keep.reshape(p.m, p.m)


def _conv_tile(p, d, w):
    """One tile's K output tiles [K, m·m]: model.itf on d [C, m+2, m+2], model.ewmm (ewmm=pacq:
    model.ewmm_pacq) with the transformed filters w [K, C, (m+2)²], model.otf per filter; mode int: the s²-scaled OTF
    result divided exactly (as model.winograd_conv does)."""
    n, s = p.lanes, p.m + 2
    ih = model.itf(d, p.m, p.mode).reshape(1, p.C, 1, n)
    if p.ewmm != "dp4":        # PacQ's parallel multiplier and the ΣÎ correction
        oh = model.ewmm_pacq(ih, w, p.m, p.data_bits, p.weight_bits,
                             lane_bits=p.pacq["lane_bits"])
    else:
        oh = model.ewmm(ih, w, p.mode)
    if p.ewmm == "pacq4":       # wrapped weights: the RTL's >> 2 (m = 2 only) on a non-multiple,
        y = model.otf(oh.reshape(p.K, s, s), p.m, p.mode).reshape(p.K, p.m * p.m)
        h = 1 << (p.bits("output") - 1)                 # kept in the output's width
        return ((y >> 2) + h) % (2 * h) - h
    return _otf_tile(p, oh)


def _otf_tile(p, oh):
    """Ô [K, (m+2)²] -> the K output tiles [K, m·m] (mode int: divided exactly by s²)."""
    s = p.m + 2
    y = model.otf(oh.reshape(p.K, s, s), p.m, p.mode).reshape(p.K, p.m * p.m)
    if p.is_int:
        s2 = model.int_scale(p.m) ** 2
        if np.any(y % s2):
            raise AssertionError(f"wino_conv model: an OTF result is not a multiple of {s2}")
        y = y // s2
    return y


def _overlap_tiles(p, f, N, fw=None):
    """overlap=true (WinoConv's docstring): the filter bank latched by load requests (+0 / 0
    after reset); accumulate: the two Ô banks, each request's EWMM continuing from the write
    bank's Ô unless first, a result only on last (then the banks swap).  Yields (index of the
    request that makes a result, its K output tiles)."""
    n, s = p.lanes, p.m + 2
    dt = np.int64 if p.is_int else np.uint64
    wbank = np.zeros((p.K, p.C, n), dtype=dt)
    banks, wb = [np.zeros((1, p.K, 1, n), dtype=dt) for _ in range(2)], 0
    lo, hi, _ = p.widths["acc"] if p.is_int else (None, None, None)
    for i in range(N):
        if fw is not None:                      # wsource=stream: request i's own filter set
            wbank = fw["w"][i].astype(dt).reshape(p.K, p.C, n)
        elif int(f["load"][i]):
            wbank = f["w"][i].astype(dt).reshape(p.K, p.C, n)
        first, last = ((int(f["first"][i]), int(f["last"][i])) if p.accumulate else (1, 1))
        ih = model.itf(f["d"][i].astype(dt).reshape(p.C, s, s), p.m, p.mode)
        oh = model.ewmm(ih.reshape(1, p.C, 1, n), wbank, p.mode,
                        start=None if first else banks[wb])
        if p.is_int and oh.size and (min(oh.reshape(-1)) < lo or max(oh.reshape(-1)) > hi):
            raise ValueError(f"wino_conv model: request {i}'s accumulated Ô leaves the "
                             f"accumulator's range [{lo}, {hi}] (C_total = {p.channels} "
                             f"channels): more channels in a first..last group than C_total")
        banks[wb] = oh
        if last:
            yield i, _otf_tile(p, oh.reshape(p.K, n))
            wb ^= 1


def conv_model(p, op__payload, w__payload=None):
    """Per request: model.itf on the C tiles, model.ewmm (one tile position) with the request's
    transformed filters, model.otf per filter, and the crop mask.  overlap / accumulate:
    :func:`_overlap_tiles` (the filter bank, Ô across requests); wsource=stream: request i
    with filter set i of ``w__payload`` (as many requests as both streams delivered)."""
    f = unpack(layouts.conv_op(p), op__payload)
    n, s = p.lanes, p.m + 2
    dt = np.int64 if p.is_int else np.uint64
    ys, keeps = [], []
    fw, N = None, len(op__payload)
    if p.wsource == "stream":
        fw = unpack(layouts.conv_w(p), w__payload)
        N = min(N, len(w__payload))
    tiles = _overlap_tiles(p, f, N, fw) if p.overlap else (
        (i, _conv_tile(p, f["d"][i].astype(dt).reshape(p.C, s, s),
                       f["w"][i].astype(dt).reshape(p.K, p.C, n)))
        for i in range(len(op__payload)))
    for i, y in tiles:
        ys.append(y)
        r, c = int(f["rows"][i]), int(f["cols"][i])
        keeps.append(sum(1 << (a * p.m + b) for a in range(p.m) for b in range(p.m)
                         if a < r and b < c))
    y = np.stack(ys).astype(object) if ys else np.zeros((0, p.K, p.m * p.m), dtype=object)
    return {"res__payload": pack(layouts.conv_res(p), {"y": y, "keep": np.array(keeps, dtype=object)})}


def random_conv_data(p, rng, *, specials: bool = False, extremes: bool = False):
    """One tile's raw operands: (d [C, m+2, m+2] N(0, 1) activations, g [K, C, 3, 3]
    He-scaled N(0, 2/(9C)) filters, both data-format encodings, or in mode int uniform signed
    ``data_bits`` / ``weight_bits`` integers (``extremes``: every value the most negative or
    the most positive, chosen at random); rows, cols random crops); ``specials``: two input
    values +inf (FP modes)."""
    s = p.m + 2
    crop = lambda: (int(rng.integers(1, p.m + 1)), int(rng.integers(1, p.m + 1)))  # noqa: E731
    if p.is_int:
        def ints(bits, shape):
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            if extremes:
                return np.where(rng.integers(0, 2, shape) == 1, hi, lo).astype(np.int64)
            return rng.integers(lo, hi + 1, shape)
        return (ints(p.data_bits, (p.C, s, s)), ints(p.weight_bits, (p.K, p.C, 3, 3)),
                *crop())
    f = model.formats(p.mode)
    d = model.encode_input(rng.normal(0, 1, (p.C, s, s)), p.mode)
    g = model.encode_input(rng.normal(0, np.sqrt(2 / (9 * p.C)), (p.K, p.C, 3, 3)), p.mode)
    if specials:
        d.reshape(-1)[rng.integers(0, d.size, 2)] = {"fp32": 0x7F800000}.get(f["data"], 0x7C00)
    return (d, g, *crop())


def random_conv_requests(p, rng, count: int, *, specials: bool = False,
                         extremes: bool = False) -> list[int]:
    """``count`` tiles (:func:`random_conv_data`), filters transformed by :func:`model.ftf`
    (the FP F(2,3) network, F(4,3) exact; mode int the s·G network)."""
    out = []
    for _ in range(count):
        d, g, rows, cols = random_conv_data(p, rng, specials=specials, extremes=extremes)
        out.append(conv_request(p, d, model.ftf(g, p.m, p.mode), rows, cols))
    return out


def _conv_workload(p, rng, n):
    """wino_conv's workload: :func:`random_conv_requests` back to back; wsource=stream: each
    request's filter set on the w stream."""
    if p.wsource != "stream":
        return _requests_workload(random_conv_requests)(p, rng, n)
    reqs, filt = [], []
    for _ in range(n):
        d, g, rows, cols = random_conv_data(p, rng)
        reqs.append(conv_request(p, d, None, rows, cols))
        filt.append(conv_filters(p, model.ftf(g, p.m, p.mode)))
    return {"op__payload": np.array(reqs, dtype=object), "op__valid": np.ones(n, np.uint64),
            "w__payload": np.array(filt, dtype=object), "w__valid": np.ones(n, np.uint64),
            "res__ready": np.ones(n, dtype=np.uint64)}


def _requests_workload(make):
    """A tile datapath's workload (sim power): ``n`` requests of ``make(p, rng, n)`` offered
    back to back, every result taken."""
    def workload(p, rng, n):
        return {"op__payload": np.array(make(p, rng, n), dtype=object),
                "op__valid": np.ones(n, dtype=np.uint64),
                "res__ready": np.ones(n, dtype=np.uint64)}
    return workload


WINO_CONV = UnitSpec(
    estimate=_est_wino_conv,
    name="wino_conv", family="winograd",
    summary="Winograd tile datapath: ITF -> (m+2)^2 element-wise lanes on DP-4 units (or, "
            "ewmm=pacq, PacQ's parallel multiplier) accumulating over C -> OTF + crop, one "
            "output tile position per request, streams",
    params=WinoConvParams, build=WinoConv, model=conv_model,
    ops_per_cycle=lambda p: p.K * p.m * p.m * 9 * p.C / p.interval,
    ops_unit="MAC (direct-equivalent)", workload=lambda p, rng, n: _conv_workload(p, rng, n))



# -- direct_conv3x3: the direct-convolution baseline on the same DP-4s -------------------------
def direct_request(p, d, g, rows=None, cols=None) -> int:
    """Payload of one tile for ``direct_conv3x3``: d [C, m+2, m+2] (as :func:`conv_request`),
    g [K, C, 3, 3] raw filters, both data-format encodings; rows / cols (default m)."""
    dt = object if p.is_int else np.uint64
    return int(pack(layouts.direct_op(p), {
        "d": np.asarray(d, dtype=dt).reshape(1, p.C, p.lanes),
        "g": np.asarray(g, dtype=dt).reshape(1, p.K, p.C, 9),
        "rows": np.array([p.m if rows is None else rows]),
        "cols": np.array([p.m if cols is None else cols])})[0])


def direct_model(p, op__payload):
    """Per request: :func:`model.direct_tile` and the crop mask (the result layout is
    wino_conv's, :func:`conv_result` reads it)."""
    f = unpack(layouts.direct_op(p), op__payload)
    N, s = len(op__payload), p.m + 2
    dt = np.int64 if p.is_int else np.uint64
    d = f["d"].astype(dt).reshape(N, p.C, s, s)
    g = f["g"].astype(dt).reshape(N, p.K, p.C, 3, 3)
    bits = dict(data_bits=p.data_bits, weight_bits=p.weight_bits) if p.is_int else {}
    y = np.stack([model.direct_tile(d[i], g[i], p.m, p.mode, **bits).reshape(p.K, p.m * p.m)
                  for i in range(N)]).astype(object) if N else np.zeros((0, p.K, p.m * p.m),
                                                                         dtype=object)
    keep = keep_mask(p.m, f["rows"], f["cols"]).astype(object) if N else np.zeros(0, object)
    return {"res__payload": pack(layouts.conv_res(p), {"y": y, "keep": keep})}


def random_direct_requests(p, rng, count: int, *, specials: bool = False,
                           extremes: bool = False) -> list[int]:
    """``count`` tiles (:func:`random_conv_data`) with their raw filters."""
    return [direct_request(p, *random_conv_data(p, rng, specials=specials, extremes=extremes))
            for _ in range(count)]


DIRECT_CONV3X3 = UnitSpec(
    estimate=_est_direct_conv3x3,
    name="direct_conv3x3", family="winograd",
    summary="direct 3x3 convolution baseline: K*m^2 outputs of one tile position, 9C terms "
            "each on DP-4 units (same request tiles and result as wino_conv), streams",
    params=DirectConvParams, build=DirectConv, model=direct_model,
    ops_per_cycle=lambda p: p.K * p.m * p.m * 9 * p.C / p.interval,
    ops_unit="MAC", workload=_requests_workload(random_direct_requests))

# the line buffer is declared in .linebuf; its size estimate is the family's, added here
UNITS = (dataclasses.replace(WINO_LINEBUF, estimate=_est_wino_linebuf), WINO_ITF, WINO_FTF,
         WINO_OTF, WINO_CONV, DIRECT_CONV3X3)


# -- wino_layer (units/winograd/layer_rtl.py): the layer top; its size estimate is the parts' ----
from .layer_rtl import WINO_LAYER  # noqa: E402


def _est_wino_layer(p) -> float:
    return (_est_wino_conv(p.conv) + p.C * _est_wino_linebuf(p.linebuf) + _est_wino_ftf(p.ftf)
            + p.K * p.C * (p.m + 2) ** 2 * reg_cells(p.conv.bits("filter")))


UNITS = UNITS + (dataclasses.replace(WINO_LAYER, estimate=_est_wino_layer),)
