"""``wino_layer``: a whole Winograd convolution layer on one datapath (issue 42 §1: "a layer
top: C line buffers → transforms → EWMM → OTF, streaming a whole H×W×C feature map into K
output maps"; docs/winograd.md, "### Layer top: `wino_layer`").

Streams
    ``w``: the K·C raw 3×3 filters, one per beat, filter-major (beat k·C + c is g[k][c],
    row-major, element 3r + s; data-format encodings, or signed ``weight_bits`` integers).
    They are taken once after reset, each through one :class:`~.rtl.WinoFtf` into the
    weight-stationary bank of K×C transformed filters (the model's FTF: F(2,3) FP the ×½
    network, mode int the s·G network, 2G / 24G); ``w`` is not ready again until reset.  The
    F(4,3) FP filter transform is offline only (``wino_ftf``'s refusal), so m = 4 needs mode
    int.

    ``x``: the maps, one beat per band column of all C channels -- beat element c is channel
    c's band column as :class:`~.linebuf.WinoLinebuf` takes it (:func:`layer_beats`, i.e.
    :func:`~.linebuf.linebuf_beats` per channel).  One line buffer per channel (all C in
    lockstep: one control, C line memories of 2×W values); maps follow each other with no gap.

    ``res``: one result per output tile position, tile row-major, map after map --
    ``wino_conv``'s result (K output tiles of m² accumulation-format values, or exact
    integers, and the crop mask ``keep``).  The layer computes each position's crop (rows,
    cols: m, or H − m·(T_h − 1) / W − m·(T_w − 1) at the last tile row / column), so ``keep``
    marks exactly the outputs inside the H×W output map (pad 1: H' = H, W' = W).

Datapath
    The C line buffers' tiles and the bank are one ``wino_conv`` request (``layouts.conv_op``:
    its payload is read while valid, as the register file / line buffer it was built for);
    the request is offered once the bank is loaded.  overlap: ``wino_conv overlap=true
    wsource=stream`` -- the request carries the tiles only, and the bank drives wino_conv's
    filter stream ``w`` (valid once loaded; with Cb, the chunk of the request in the EWMM,
    advanced as each is taken), so the transformed filters are held once, in this bank.  The line buffers' window is their output
    register, so they stop while the request is in ``wino_conv`` and step again from the
    cycle it is accepted (the last EWMM cycle).  The line buffers prime (band 0) while the
    filters load.

Cycle model (:meth:`WinoLayerParams.schedule`, :meth:`~WinoLayerParams.cycles`), back to back
(both inputs always valid, the result always taken), cycle 0 the first offered beat: the line
buffers step once per cycle (their documented schedule: W priming steps, per band W steps and
a tail step when W ≡ 1 mod m, the flush band) until a step completes a tile, which is offered
to ``wino_conv`` the next cycle (not before the bank is loaded, cycle K·C); tile t offered at
V_t is accepted at X_t = max(V_t + C, X_{t−1} + K + 1) + G·Q − 1 (its ITF, C cycles; the
previous tile's OTF, K cycles, must have freed the Ô bank; G·Q EWMM cycles, G = ⌈K·(m+2)²/dps⌉
groups of Q = ⌈C/4⌉ chunks); the line buffers step again at X_t; its result is valid at
X_t + K + 1.  So a tile in the middle of a band takes max(C + m, K + 1) + G·Q − 1 cycles
(``interval``; ``wino_conv`` alone: max(C, K) + G·Q -- the line buffers cannot run ahead of
an untaken tile), and ``cycles(maps)`` = the last result's cycle + 1.

This module holds the params, the RTL, the numpy beat helpers and the model adapter and
workload; the UnitSpec's size estimate is the family's (family.py).  It imports tcgen.hw and
the family's model, params, layouts, line buffer and RTL only.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from amaranth import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.generate import index_cases
from tcgen.hw.layout import pack, unpack
from tcgen.hw.numeric import get_format
from tcgen.hw.params import Params, param
from tcgen.hw.spec import UnitSpec

from . import layouts, model
from .linebuf import WinoLinebuf, WinoLinebufParams, col_layout, linebuf_beats, \
    linebuf_map, tiles_after
from .params import (WinoConvParams, WinoFtfParams, _Wino, derived, mode_param, or_C,
                     tile_param, width_param)
from .rtl import WinoConv, WinoFtf

__all__ = ["WinoLayerParams", "WinoLayer", "WINO_LAYER", "w_layout", "x_layout",
           "layer_beats", "filter_beats", "layer_model", "layer_tiles", "random_layer",
           "layer_workload", "layer_passes", "pass_filters"]

# == params ======================================================================================
@dataclass(frozen=True)
class WinoLayerParams(_Wino, Params):
    """A whole F(m×m, 3×3) layer (module docstring): H×W maps of C channels, K filters, one
    ``wino_conv`` of ``dps`` DP-4s behind C line buffers.  Derived: the parts' params
    (``linebuf``, ``conv``, ``ftf``), the tile grid, beats, and the cycle model
    (:meth:`schedule`, :meth:`cycles`, ``interval``)."""
    UNIT = "wino_layer"
    m: int = tile_param("output tile m of F(m×m, 3×3): 2 or 4 (4 needs mode int: the F(4,3) "
                        "FP FTF is offline only)")
    mode: str = mode_param("fp16", "the model's number mode (model.formats); int: exact, signed "
                                   "data_bits / weight_bits")
    C: int = param(4, range=(1, 256), doc="input channels (one line buffer each); at most 64 "
                                          "unless overlap with Cb (requests of Cb channels)")
    K: int = param(4, range=(1, 16), doc="filters = output maps (wino_conv's K)")
    dps: int = param(4, range=(1, 16), doc="DP-4 units of the element-wise stage")
    H: int = param(8, range=(1, 64), doc="map height (rows); pad 1, so H' = H")
    W: int = param(8, range=(1, 64), doc="map width (columns; each line memory holds 2 rows "
                                         "of W values)")
    data_bits: int = width_param("signed input width (mode int)")
    weight_bits: int = width_param("signed raw weight width (mode int)")
    overlap: bool = param(False, key_default=False,
                          doc="wino_conv overlap=true wsource=stream: the overlapped tile "
                              "datapath (ping-pong Î and Ô banks), its filters streamed from "
                              "this layer's weight-stationary bank (held once)")
    Cb: int = param(0, range=(0, 64), key_default=False,
                    doc="channels per wino_conv request (overlap only; 0: C): a tile is "
                        "C/Cb requests whose Ô accumulates (wino_conv accumulate=true), each "
                        "with its Cb channels' filters on the w stream; C a multiple of Cb, and of 4 in "
                        "FP modes when C/Cb > 1 (the DP-4 chain then equals one over C)")

    def check(self):
        self.check_int_fields(("data_bits", "weight_bits"))
        if self.Cb and not self.overlap:
            raise self.error("Cb", self.Cb, "0 unless overlap=true (Ô accumulates across "
                             "requests only in the overlapped datapath)")
        if self.Cb and self.C % self.Cb:
            raise self.error("Cb", self.Cb, f"a divisor of C = {self.C} (every request "
                             f"carries Cb channels)")
        if not self.Cb and self.C > 64:
            raise self.error("C", self.C, "1..64 unless overlap=true with Cb (wino_conv takes "
                             "at most 64 channels per request)")
        if self.requests > 1 and not self.is_int and self.Cb % 4:
            raise self.error("Cb", self.Cb, "a multiple of 4 in FP modes when C/Cb > 1 (a "
                             "partial DP-4 chunk per request would change the rounding order "
                             "of the accumulation over C)")
        if self.m == 4 and not self.is_int:
            raise self.error("m", self.m, "2 unless mode=int (the F(4,3) FP filter transform "
                             "is offline only, as wino_ftf's; the layer transforms its filters "
                             "on chip)")

    channels = derived("C")
    chunk = or_C("Cb", "Channels per ``wino_conv`` request: Cb, or C.")

    @property
    def requests(self) -> int:
        """``wino_conv`` requests per tile, C / chunk (> 1: Ô accumulates across them)."""
        return self.C // self.chunk

    @cached_property
    def linebuf(self) -> WinoLinebufParams:
        """One channel's line buffer."""
        ib = dict(data_bits=self.data_bits) if self.is_int else {}
        return WinoLinebufParams(m=self.m, mode=self.mode, H=self.H, W=self.W, **ib)

    @cached_property
    def conv(self) -> WinoConvParams:
        """The tile datapath."""
        ib = dict(data_bits=self.data_bits, weight_bits=self.weight_bits) if self.is_int else {}
        acc = self.requests > 1
        if acc and self.is_int:
            ib["C_total"] = self.C
        ov = dict(overlap=True, accumulate=acc, wsource="stream") if self.overlap else {}
        return WinoConvParams(m=self.m, mode=self.mode, C=self.chunk, K=self.K, dps=self.dps,
                              **ov, **ib)

    @cached_property
    def ftf(self) -> WinoFtfParams:
        """The filter transform used while loading."""
        ib = dict(weight_bits=self.weight_bits) if self.is_int else {}
        return WinoFtfParams(m=self.m, mode=self.mode, **ib)

    Th = derived("linebuf.Th", "Tile rows ⌈H/m⌉ (the line buffer's).")
    Tw = derived("linebuf.Tw", "Tile columns ⌈W/m⌉.")
    tiles = derived("linebuf.tiles", "Output tile positions (results) per map, T_h·T_w.")
    beats = derived("linebuf.beats", "``x`` beats per map (the line buffer's).")

    @property
    def filter_beats(self) -> int:
        """``w`` beats, K·C (once)."""
        return self.K * self.C

    @property
    def ewmm(self) -> int:
        """EWMM cycles per tile, G·Q (``wino_conv``'s groups·chunks)."""
        return self.conv.groups * self.conv.chunks

    @property
    def interval(self) -> int:
        """Cycles per tile in the middle of a band, back to back (the schedule's steady
        state): max(C + m, K + 1) + G·Q − 1; overlap, r = C/Cb requests of Cb channels per
        tile, g = G·Q: max(r·Cb + m − 1, r·g, K, (r − 2)·g + 2·Cb + m − 1 when r > 2) -- the
        ITF chain (its m − 1 line-buffer steps once per tile), the EWMM chain, the OTF, and
        the path that leaves the EWMM chain for the ITF two requests on (its Î bank freed)
        across the tile's line-buffer steps; r = 1: max(C + m − 1, g, K)."""
        if not self.overlap:
            return max(self.C + self.m, self.K + 1) + self.ewmm - 1
        r, c, g, m = self.requests, self.chunk, self.ewmm, self.m
        return max(r * c + m - 1, r * g, self.K, (r - 2) * g + 2 * c + m - 1 if r > 2 else 0)

    def _steps(self):
        """One map's line-buffer steps (linebuf.py's schedule): (takes an input beat,
        completes a tile)."""
        lb, W, m = self.linebuf, self.W, self.m
        done = {min(m * (j + 1), W - 1) for j in range(self.Tw - 1 if lb.tail else self.Tw)}
        steps = [(True, False)] * W                                       # band 0: priming
        for b in range(1, self.Th + 1):
            takes = not (b == self.Th and lb.flush)
            steps += [(takes, c in done) for c in range(W)]
            if lb.tail:
                steps.append((False, True))
        assert sum(d for _, d in steps) == self.tiles
        return steps

    def schedule(self, maps: int = 1) -> dict:
        """The back-to-back schedule of ``maps`` maps (module docstring), cycle 0 the first
        offered beat: ``steps`` [(cycle, takes an x beat)] of the line buffers, ``offered``
        (V_t), ``accepted`` (X_t: the tile's last request accepted) and ``results`` (valid and
        taken) per tile.  overlap: ``wino_conv``'s overlapped rules (its docstring; wsource=
        stream, the filters always valid once loaded) -- request u's ITF starts once it is
        offered and its Î bank (u's, alternating) is free (the EWMM of u − 2 ended), runs C
        cycles, and u is accepted in its last ITF cycle; its EWMM starts after
        that of u − 1 and once the tile's Ô bank is free (the OTF of tile t − 2 ended); a
        tile's OTF (K cycles) starts after its last request's EWMM and the previous OTF."""
        C, K, G, r = self.chunk, self.K, self.ewmm, self.requests
        cyc, last = 0, None
        steps, offered, accepted, results = [], [], [], []
        neg = -(1 << 40)
        eend = [neg, neg]                # EWMM ends of requests u − 2, u − 1
        oend = [neg, neg]                # OTF ends of tiles t − 2, t − 1
        for takes, completes in self._steps() * maps:
            steps.append((cyc, takes))
            if not completes:
                cyc += 1
                continue
            v = max(cyc + 1, self.filter_beats)
            offered.append(v)
            if not self.overlap:
                x = max(v + C, last + K + 1 if last is not None else 0) + G - 1
                accepted.append(x)
                results.append(x + K + 1)
                cyc = last = x
                continue
            for j in range(r):
                x = max(v, eend[0] + 1) + C - 1
                b = max(x + 1, eend[1] + 1, oend[0] + 1)
                eend = [eend[1], b + G - 1]
                v = x + 1                                       # the next request (same tile)
            o = max(eend[1] + 1, oend[1] + 1)
            oend = [oend[1], o + K - 1]
            accepted.append(x)
            results.append(o + K)
            cyc = x
        return {"steps": steps, "offered": offered, "accepted": accepted, "results": results}

    def cycles(self, maps: int = 1) -> int:
        """Cycles for ``maps`` maps back to back, the first beat offered to the last result
        taken (filter load and line-buffer priming included)."""
        return self.schedule(maps)["results"][-1] + 1

    @property
    def map_cycles(self) -> int:
        """Cycles per map in steady state (maps back to back): cycles(2) − cycles(1)."""
        return self.cycles(2) - self.cycles(1)

    def elem(self, stage: str):
        """A stage's element shape: ``data`` (x), ``weight`` (w)."""
        if self.is_int:
            return signed(self.data_bits if stage == "data" else self.weight_bits)
        return get_format(model.formats(self.mode)["data"]).width


# == payload layouts =============================================================================
def w_layout(p: WinoLayerParams) -> data.ArrayLayout:
    """One ``w`` beat: a raw 3×3 filter, row-major (``wino_ftf``'s ``g``)."""
    return data.ArrayLayout(p.elem("weight"), 9)


def x_layout(p: WinoLayerParams) -> data.ArrayLayout:
    """One ``x`` beat: C band columns (element c: channel c's, :func:`linebuf.col_layout`)."""
    return data.ArrayLayout(col_layout(p.linebuf), p.C)


# == numpy: beats ================================================================================
def layer_beats(x, m: int) -> np.ndarray:
    """The ``x`` beats of maps x[C, H, W] (or x[N, C, H, W], back to back): [beats (·N), C, m],
    beat element c = :func:`~.linebuf.linebuf_beats` of channel c."""
    x = np.asarray(x)
    if x.ndim == 4:
        return np.concatenate([layer_beats(v, m) for v in x])
    if x.ndim != 3:
        raise ValueError(f"layer_beats: x must be [C, H, W] or [N, C, H, W], got {x.shape}")
    return np.stack([linebuf_beats(c, m) for c in x], axis=1)


def filter_beats(g) -> np.ndarray:
    """The ``w`` beats of filters g[K, C, 3, 3]: [K·C, 9], beat k·C + c = g[k][c] row-major."""
    g = np.asarray(g)
    if g.ndim != 4 or g.shape[2:] != (3, 3):
        raise ValueError(f"filter_beats: g must be [K, C, 3, 3], got {g.shape}")
    return g.reshape(-1, 9)


# == the golden model ============================================================================
def _dtype(p):
    return np.int64 if p.is_int else np.uint64


def _ints(p):
    return dict(data_bits=p.data_bits, weight_bits=p.weight_bits) if p.is_int else {}


def layer_tiles(p: WinoLayerParams, x, g) -> np.ndarray:
    """The model's full output tiles of one map x[C, H, W] with filters g[K, C, 3, 3]:
    :func:`model.winograd_conv`'s OTF result before the crop, [T_h, T_w, K, m, m] (FP:
    accumulation-format encodings; int: the exact convolution).  Cropped (:func:`model.untile`)
    it is ``winograd_conv``'s output map."""
    tr: dict = {}
    model.winograd_conv(np.asarray(x, dtype=_dtype(p)), np.asarray(g, dtype=_dtype(p)), p.m,
                        p.mode, trace=tr, **_ints(p))
    return np.moveaxis(tr["otf"][0], 0, 2)


def _keep(p, i, j) -> int:
    rows = p.m if i < p.Th - 1 else p.H - p.m * (p.Th - 1)
    cols = p.m if j < p.Tw - 1 else p.W - p.m * (p.Tw - 1)
    return sum(1 << (a * p.m + b) for a in range(p.m) for b in range(p.m)
               if a < rows and b < cols)


def layer_model(p: WinoLayerParams, w__payload, x__payload) -> dict:
    """Accepted ``w`` and ``x`` beats -> the results the unit emits for them: none before the
    K·C filters are in; per map (``beats`` x beats each) :func:`layer_tiles` of the map
    (:func:`~.linebuf.linebuf_map` per channel) with the first K·C filters, tile row-major,
    each with its crop mask; of a partial map the first :func:`~.linebuf.tiles_after` tiles
    (pixels not yet received reach only tiles not yet due)."""
    res = layouts.conv_res(p.conv)
    empty = {"res__payload": pack(res, {"y": np.zeros((0, p.K, p.m * p.m), dtype=object),
                                        "keep": np.zeros(0, dtype=object)})}
    if len(w__payload) < p.filter_beats:
        return empty
    g = np.asarray(unpack(w_layout(p), np.asarray(w__payload[:p.filter_beats], dtype=object)),
                   dtype=_dtype(p)).reshape(p.K, p.C, 3, 3)
    beats = np.asarray(unpack(x_layout(p), np.asarray(x__payload, dtype=object)),
                       dtype=_dtype(p)).reshape(-1, p.C, p.m)
    ys, keeps = [], []
    for start in range(0, len(beats), p.beats):
        part = beats[start:start + p.beats]
        full = np.zeros((p.beats, p.C, p.m), dtype=beats.dtype)
        full[:len(part)] = part
        x = np.stack([linebuf_map(full[:, c], p.m, p.H, p.W) for c in range(p.C)])
        t = layer_tiles(p, x, g)
        for idx in range(tiles_after(p.linebuf, len(part))):
            i, j = divmod(idx, p.Tw)
            ys.append(t[i, j].reshape(p.K, p.m * p.m))
            keeps.append(_keep(p, i, j))
    if not ys:
        return empty
    return {"res__payload": pack(res, {"y": np.stack(ys).astype(object),
                                       "keep": np.array(keeps, dtype=object)})}


# == a layer of more filters than the build: passes ============================================
def layer_passes(p: WinoLayerParams, K_total: int, maps: int = 1) -> dict:
    """A layer of ``K_total`` output maps on a build of K filters (``p``): what a
    weight-stationary top with a K-filter bank does -- P = ⌈K_total/K⌉ passes, pass i loading
    filters i·K .. i·K + K − 1 (:func:`pass_filters`; the last pass's missing ones zero) and
    streaming the same ``maps`` input maps once more.  A pass starts from reset (``w`` is
    taken once after reset), so it is one back-to-back run of the cycle model:
    ``cycles(maps)``, the filter load (K·C beats) under the line buffers' priming or ahead
    of the first tile.  Returns {``passes``: P, ``filters``: [(first, end)] per pass,
    ``cycles``: per pass, ``total``: their sum, ``x_beats``: x beats streamed in all
    (P·maps·beats), ``w_beats``: P·K·C}."""
    if not isinstance(K_total, int) or K_total < 1:
        raise ValueError(f"layer_passes: K_total must be a positive int, got {K_total!r}")
    P = -(-K_total // p.K)
    per = p.cycles(maps)
    return {"passes": P, "filters": [(i * p.K, min((i + 1) * p.K, K_total)) for i in range(P)],
            "cycles": [per] * P, "total": P * per, "x_beats": P * maps * p.beats,
            "w_beats": P * p.filter_beats}


def pass_filters(p: WinoLayerParams, g, i: int) -> np.ndarray:
    """Pass i's filters of a layer's g[K_total, C, 3, 3] (:func:`layer_passes`): g[i·K ..
    i·K + K − 1], zero-filled (+0 / 0) up to K."""
    g = np.asarray(g)
    if g.ndim != 4 or g.shape[1:] != (p.C, 3, 3):
        raise ValueError(f"pass_filters: g must be [K_total, {p.C}, 3, 3], got {g.shape}")
    out = np.zeros((p.K, p.C, 3, 3), dtype=g.dtype)
    part = g[i * p.K:(i + 1) * p.K]
    out[:len(part)] = part
    return out


# == workload ====================================================================================
def random_layer(p: WinoLayerParams, rng, maps: int = 1, K_total: int | None = None):
    """(x [maps, C, H, W], g [K, C, 3, 3]): N(0, 1) activations and He-scaled N(0, 2/(9C))
    filters in the data format, or uniform signed data_bits / weight_bits integers;
    ``K_total``: g of that many filters (a layer of several passes, :func:`layer_passes`)."""
    shape, gs = (maps, p.C, p.H, p.W), (K_total or p.K, p.C, 3, 3)
    if p.is_int:
        def ints(bits, sh):
            return rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), sh)
        return ints(p.data_bits, shape), ints(p.weight_bits, gs)
    return (model.encode_input(rng.normal(0, 1, shape), p.mode),
            model.encode_input(rng.normal(0, np.sqrt(2 / (9 * p.C)), gs), p.mode))


def layer_workload(p: WinoLayerParams, rng, n: int) -> dict:
    """``n`` cycles of one random layer (filters, then random maps back to back), the result
    always taken: the filters in cycles 0 .. K·C − 1, the x beats changing after each cycle
    in which the back-to-back schedule (:meth:`WinoLayerParams.schedule`) takes one."""
    per = max(1, p.map_cycles)
    maps = -(-n // per) + 1
    x, g = random_layer(p, rng, maps)
    wb = list(pack(w_layout(p), filter_beats(g)))
    xb = list(pack(x_layout(p), layer_beats(x, p.m)))
    takes = sorted(c for c, t in p.schedule(maps)["steps"] if t)
    w_pay = [wb[min(i, len(wb) - 1)] for i in range(n)]
    w_val = [int(i < len(wb)) for i in range(n)]
    x_pay, k = [], 0
    for c in range(n):
        x_pay.append(xb[min(k, len(xb) - 1)])
        while k < len(takes) and takes[k] <= c:
            k += 1
    return {"w__payload": np.array(w_pay, dtype=object),
            "w__valid": np.array(w_val, dtype=np.uint64),
            "x__payload": np.array(x_pay, dtype=object),
            "x__valid": np.ones(n, dtype=np.uint64),
            "res__ready": np.ones(n, dtype=np.uint64)}


# == RTL =========================================================================================
class WinoLayer(wiring.Component):
    """A whole F(m×m, 3×3) layer (module docstring): filters loaded once through a
    :class:`~.rtl.WinoFtf` into a K×C bank, C :class:`~.linebuf.WinoLinebuf` in lockstep, one
    :class:`~.rtl.WinoConv`.

    Parameters: :class:`WinoLayerParams`.  Attributes: w ``In(stream.Signature(w_layout))``,
    x ``In(stream.Signature(x_layout))``, res ``Out(stream.Signature(layouts.conv_res))``;
    ``latency``: the first result's cycle in the back-to-back schedule (a bound for benches'
    watchdogs); ``cycles``: ``params.cycles()`` (one map)."""

    def __init__(self, params: WinoLayerParams):
        self.params = params
        self.cycles = params.cycles()
        self.latency = params.schedule()["results"][0]
        super().__init__({"w": In(stream.Signature(w_layout(params))),
                          "x": In(stream.Signature(x_layout(params))),
                          "res": Out(stream.Signature(layouts.conv_res(params.conv)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        K, C, mm = p.K, p.C, p.m
        conv = shared(m, "conv", WinoConv(p.conv))
        ftf = shared(m, "ftf", WinoFtf(p.ftf))

        # -- filters: K·C beats through the FTF into the weight-stationary bank ---------------
        arr = data.ArrayLayout
        n = (mm + 2) ** 2
        fshape = arr(p.conv.bits("filter") if not p.is_int else signed(p.conv.bits("filter")), n)
        # one register per (filter, channel): slicing one K·C·(m+2)²-word signal costs
        # Amaranth's netlist builder its whole width per slice (hours at C = 128, K = 16)
        bank = [[Signal(fshape, name=f"bank_{k}_{c}") for c in range(C)] for k in range(K)]

        def filters(chunk, width):
            """The filter set of channels chunk·width .. chunk·width + width − 1 (the
            ``w`` layout: element [k][c] at k·width + c, the LSBs first)."""
            return Cat(*(bank[k][chunk * width + c] for k in range(K) for c in range(width)))
        fi = Signal(range(max(K * C, 2)), name="filter_beat")
        loaded = Signal(name="loaded")
        load = Signal(name="load")
        m.d.comb += [self.w.ready.eq(~loaded), load.eq(self.w.valid & ~loaded),
                     ftf.g.eq(self.w.payload)]
        for idx in range(K * C):                     # one enable each (a case statement over
            k, c = divmod(idx, C)                    # K·C beats is written into every bank
            with m.If(load & (fi == idx)):           # register's process: (K·C)² Verilog lines)
                m.d.sync += bank[k][c].eq(ftf.y)
        with m.If(load):
            m.d.sync += fi.eq(Mux(fi == K * C - 1, 0, fi + 1))
            with m.If(fi == K * C - 1):
                m.d.sync += loaded.eq(1)

        # -- C line buffers in lockstep (one control: line buffer 0's) ------------------------
        lbs = [shared(m, f"lb{c}", WinoLinebuf(p.linebuf)) for c in range(C)]
        r, cb = p.requests, p.chunk
        take = Signal(name="take")                   # wino_conv accepts a request
        m.d.comb += [self.x.ready.eq(lbs[0].col.ready),
                     take.eq(conv.op.valid & conv.op.ready)]
        done, tile_ready = take, conv.op.ready       # ... the tile's last one (r = 1: each)
        if r > 1:
            j = Signal(range(r), name="chunk")       # the request's channel chunk
            done, tile_ready = take & (j == r - 1), conv.op.ready & (j == r - 1)
        for c, lb in enumerate(lbs):
            m.d.comb += [lb.col.valid.eq(self.x.valid), lb.col.payload.eq(self.x.payload[c]),
                         lb.d.ready.eq(tile_ready)]
        if r == 1:
            m.d.comb += [conv.op.payload.d[c].eq(lbs[c].d.payload) for c in range(C)]
        else:                                        # chunk j: channels j·Cb .. j·Cb + Cb − 1
            for jj in index_cases(m, j, r):
                m.d.comb += [conv.op.payload.d[c].eq(lbs[jj * cb + c].d.payload)
                             for c in range(cb)]
            with m.If(take):
                m.d.sync += j.eq(Mux(j == r - 1, 0, j + 1))
            m.d.comb += [conv.op.payload.first.eq(j == 0), conv.op.payload.last.eq(j == r - 1)]
        if not p.overlap:                            # the request carries the filters
            m.d.comb += conv.op.payload.w.eq(filters(0, C))
        else:                                        # wino_conv wsource=stream: the filters of
            fw = conv.w.payload.w                    # the request in the EWMM, from this bank
            m.d.comb += conv.w.valid.eq(loaded)      # (one copy), taken in its last EWMM cycle
            if r == 1:
                m.d.comb += fw.eq(filters(0, C))
            else:                                    # the EWMM's chunk, a request behind j
                wj = Signal(range(r), name="w_chunk")
                for jj in index_cases(m, wj, r):
                    m.d.comb += fw.eq(filters(jj, cb))
                with m.If(conv.w.valid & conv.w.ready):
                    m.d.sync += wj.eq(Mux(wj == r - 1, 0, wj + 1))

        # -- the request: the tiles, the bank, the tile position's crop -----------------------
        ti = Signal(range(max(p.Th, 2)), name="tile_row")
        tj = Signal(range(max(p.Tw, 2)), name="tile_col")
        bits = mm.bit_length()
        rows, cols = Signal(bits, name="rows"), Signal(bits, name="cols")
        m.d.comb += [
            rows.eq(Mux(ti == p.Th - 1, p.H - mm * (p.Th - 1), mm)),
            cols.eq(Mux(tj == p.Tw - 1, p.W - mm * (p.Tw - 1), mm)),
            conv.op.valid.eq(lbs[0].d.valid & loaded),
            conv.op.payload.rows.eq(rows), conv.op.payload.cols.eq(cols),
        ]
        with m.If(done):
            with m.If(tj == p.Tw - 1):
                m.d.sync += [tj.eq(0), ti.eq(Mux(ti == p.Th - 1, 0, ti + 1))]
            with m.Else():
                m.d.sync += tj.eq(tj + 1)

        # -- results ----------------------------------------------------------------------------
        m.d.comb += [self.res.valid.eq(conv.res.valid), self.res.payload.eq(conv.res.payload),
                     conv.res.ready.eq(self.res.ready)]
        return m


# == the unit (its size estimate is added in family.py) ==========================================
WINO_LAYER = UnitSpec(
    name="wino_layer", family="winograd",
    summary="Winograd layer top: K·C raw filters loaded once through the FTF (weight-"
            "stationary), H×W×C maps streamed once through C line buffers into wino_conv, one "
            "result (K output tiles + crop) per tile position, streams",
    params=WinoLayerParams, build=WinoLayer, model=layer_model,
    ops_per_cycle=lambda p: 9 * p.C * p.K * p.H * p.W / p.map_cycles,
    ops_unit="MAC (direct-equivalent)", workload=layer_workload)
