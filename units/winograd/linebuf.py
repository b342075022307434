"""``wino_linebuf``: the 2-row line buffer in front of the Winograd input transform (issue 15
§2: "``wino_itf`` ... fed by a 2-row line buffer so each input pixel is read once";
docs/winograd.md, "### `wino_linebuf`").

One channel's H×W input map goes in once, as a stream of band columns, and the
(m+2)×(m+2) input tiles d of F(m×m, 3×3) come out in the order and with the values of
:func:`tcgen.units.winograd.model.tile_input` (pad = 1, stride m, neighbours overlapping by 2,
the last tile row / column computed in full with zeros beyond the map), tile row-major.  The
unit does no arithmetic: values are bit patterns (FP encodings or two's-complement integers)
and every zero it inserts (padding, beyond the map) is the all-zero pattern (+0, integer 0), as
:func:`~tcgen.units.winograd.model.tile_input` makes it.

Input order (:func:`linebuf_beats`, one definition for tests, workloads and users)
    Put m − 1 zero rows on top of the map (rows −(m−1) .. −1) and cut rows −(m−1) .. H − 1 into
    bands of m rows: band b holds image rows m·b − m + 1 .. m·b, b = 0 .. B − 1,
    B = ⌈(H + m − 1)/m⌉.  The bands are sent in order, each column by column (c = 0 .. W − 1):
    **beat b·W + c** is ``col[k] = I[m·b − m + 1 + k, c]``, k = 0 .. m − 1 (top to bottom).
    Lanes whose row is outside the map (row < 0: band 0's lanes 0 .. m − 2; row ≥ H: the last
    band's lanes from H − m·(B−1) + m − 1 on) carry no pixel: the unit does not read them
    (:func:`linebuf_beats` puts 0 there).  So every pixel is in exactly one beat, once.
    Band 0 (the *priming* band) carries image row 0 only (lane m − 1): it fills the line
    memory and produces no tile.  Band b ≥ 1 holds the m rows that tile row b − 1 adds to the
    2 it shares with tile row b − 2 and produces tile row b − 1.  Maps follow each other with
    no gap and no marker: beat ``beats`` (= B·W, ``params.beats``) is the next map's beat 0.

Tiles of a band
    During band b ≥ 1, beat c reads the two stored rows of column c (image rows m·b − m − 1
    and m·b − m; zero padding for band 1's row −1) from the line memory, writes the beat's
    last two lanes (rows m·b − 1, m·b) in their place, and shifts the tile column (the two
    stored values over the beat's m lanes, m + 2 values) into the window register, which is
    the output register.  Column 0 first shifts in the left padding column; tile j (image
    columns m·j − 1 .. m·j + m) is complete at beat c = m·(j + 1) (j < T_w − 1) or at the
    band's last beat (j = T_w − 1, the missing columns shifted in as zeros with it).

Two steps need no input (the input stream is not ready in them):

* the *tail* step, after a band's last beat when W ≡ 1 (mod m): that beat completes both tile
  T_w − 2 and tile T_w − 1 (whose columns beyond the map are all zero), and the second one is
  shifted out of the window in one more cycle;
* the *flush* band, when H ≡ 1 (mod m): tile row T_h − 1 adds no image row (its m new rows
  are all ≥ H), so its band is not sent -- the unit runs it by itself (W steps, + the tail),
  reading the line memory and shifting in zeros, as soon as the map's last beat is in.

Line memory and window
    The line memory holds exactly 2 rows: W words of 2 values (``amaranth.lib.memory``, one
    write port, one combinational read port, both at column c; W = 1: one register of 2
    values).  The window is (m+2)×(m+2) values (the output tile).  Besides them: the band and
    column counters, the tail flag and the output valid bit.  Nothing holds a copy of a band,
    and nothing grows with H.  The memory is not reset: band 0 writes every column before
    band 1 reads it.

Timing
    A tile is valid the cycle after the step that completes it (``latency`` = 1 from its last
    beat; 2 for a tail tile).  The window is the output register: a step only happens while
    the output is empty or taken in that cycle, so when the output is not taken the unit takes
    no input (no beat lost or duplicated; payload stable while valid).  Back to back (input
    always valid, output always ready): one beat per cycle, one tile per m beats in steady
    state, ``params.cycles`` = (T_h + 1)·W + T_h·[W ≡ 1 (mod m)] cycles per map -- W priming
    beats, T_h bands of W steps (input beats, or the flush band), a tail step per band when
    W ≡ 1 (mod m) -- for ``params.tiles`` = T_h·T_w tiles and ``params.beats`` input beats.
    After a map's last tile the unit is in band 0 of the next map.

This module holds the params, the RTL, the numpy beat helpers and the UnitSpec pieces (model
adapter, workload); it imports tcgen.hw and the family's model and params only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from amaranth import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from tcgen.hw.layout import pack, unpack
from tcgen.hw.numeric import get_format
from tcgen.hw.params import Params, param
from tcgen.hw.spec import UnitSpec

from . import model
from .params import _Wino, mode_param, tile_param, width_param

__all__ = ["WinoLinebufParams", "WinoLinebuf", "WINO_LINEBUF", "col_layout", "tile_layout",
           "linebuf_beats", "linebuf_map", "tiles_after", "linebuf_model", "random_maps",
           "linebuf_workload"]

_SIDE = (1, 256)


# == params ======================================================================================
@dataclass(frozen=True)
class WinoLinebufParams(_Wino, Params):
    """The line buffer of one H×W map for F(m×m, 3×3) (module docstring).  Derived: the tile
    grid ``Th`` × ``Tw``, the input ``bands`` and ``beats`` per map, ``last_lanes`` (pixel lanes
    of the last band), the ``flush`` band and ``tail`` step flags, ``tiles`` and ``cycles``
    per map, ``bits`` per value."""
    UNIT = "wino_linebuf"
    m: int = tile_param("output tile m of F(m×m, 3×3): 2 (4×4 input tiles) or 4 (6×6)")
    mode: str = mode_param("fp32", "the model's number mode: values are its data format's "
                                   "encodings (fp32: 32 bits; fp16, fp16acc: 16) or, mode int, "
                                   "signed data_bits")
    data_bits: int = width_param("signed input width (mode int)")
    H: int = param(8, range=_SIDE, doc="map height (rows)")
    W: int = param(8, range=_SIDE, doc="map width (columns; the line memory holds 2 rows of "
                                       "W values)")

    def check(self):
        self.check_int_fields(("data_bits",))

    @property
    def bits(self) -> int:
        """Bits per value: the data format's width, or data_bits (mode int)."""
        return self.data_bits if self.is_int else \
            get_format(model.formats(self.mode)["data"]).width

    @property
    def Th(self) -> int:
        """Tile rows ⌈H/m⌉ (pad 1: H' = H)."""
        return -(-self.H // self.m)

    @property
    def Tw(self) -> int:
        """Tile columns ⌈W/m⌉."""
        return -(-self.W // self.m)

    @property
    def bands(self) -> int:
        """Input bands per map, B = ⌈(H + m − 1)/m⌉ (the priming band included)."""
        return -(-(self.H + self.m - 1) // self.m)

    @property
    def beats(self) -> int:
        """Input beats per map, B·W."""
        return self.bands * self.W

    @property
    def last_lanes(self) -> int:
        """Pixel lanes of band T_h (0 .. m − 1; lanes 0 .. last_lanes − 1): H − m·T_h + m − 1."""
        return self.H - self.m * self.Th + self.m - 1

    @property
    def flush(self) -> bool:
        """Band T_h carries no pixel (H ≡ 1 mod m): the unit runs it without input."""
        return self.last_lanes == 0

    @property
    def tail(self) -> bool:
        """W ≡ 1 (mod m): a band's last beat completes two tiles; one step more per band."""
        return (self.W - 1) % self.m == 0

    @property
    def tiles(self) -> int:
        """Tiles per map, T_h·T_w."""
        return self.Th * self.Tw

    @property
    def cycles(self) -> int:
        """Cycles per map back to back: (T_h + 1)·W + T_h·tail."""
        return (self.Th + 1) * self.W + self.Th * int(self.tail)


# == payload layouts =============================================================================
def _elem(p: WinoLinebufParams):
    return signed(p.bits) if p.is_int else p.bits


def col_layout(p: WinoLinebufParams) -> data.ArrayLayout:
    """One input beat: m values, element k = lane k = image row m·b − m + 1 + k of band b
    (top to bottom), element 0 at the LSBs."""
    return data.ArrayLayout(_elem(p), p.m)


def tile_layout(p: WinoLinebufParams) -> data.ArrayLayout:
    """One output tile d, (m+2)² values row-major (element i·(m+2) + j = d_ij), as
    ``wino_itf``'s ``d`` port."""
    return data.ArrayLayout(_elem(p), p.n * p.n)


# == numpy: the input order and its inverse ======================================================
def linebuf_beats(x, m: int) -> np.ndarray:
    """The input beats of one map x[H, W] (or of maps x[N, H, W], back to back) in the unit's
    order (module docstring): [B·W (·N), m], beat b·W + c lane k = x[m·b − m + 1 + k, c] and 0
    where that row is outside the map.  numpy only; any dtype (kept)."""
    x = np.asarray(x)
    if x.ndim == 3:
        return np.concatenate([linebuf_beats(v, m) for v in x]) if len(x) else \
            np.zeros((0, m), dtype=x.dtype)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"linebuf_beats: x must be [H, W] or [N, H, W] with H, W >= 1, got "
                         f"shape {x.shape}")
    if m not in model.TILES:
        raise ValueError(f"linebuf_beats: m must be one of {model.TILES}, got {m!r}")
    H, W = x.shape
    B = -(-(H + m - 1) // m)
    rows = np.zeros((B * m, W), dtype=x.dtype)
    rows[m - 1:m - 1 + H] = x
    return np.ascontiguousarray(rows.reshape(B, m, W).transpose(0, 2, 1).reshape(B * W, m))


def linebuf_map(beats, m: int, H: int, W: int) -> np.ndarray:
    """The inverse of :func:`linebuf_beats` for one map: beats [B·W, m] -> x[H, W] (the lanes
    that carry no pixel are not read)."""
    beats = np.asarray(beats)
    B = -(-(H + m - 1) // m)
    if beats.shape != (B * W, m):
        raise ValueError(f"linebuf_map: a {H}×{W} map at m = {m} is {B * W} beats of {m}, got "
                         f"shape {beats.shape}")
    rows = beats.reshape(B, W, m).transpose(0, 2, 1).reshape(B * m, W)
    return np.ascontiguousarray(rows[m - 1:m - 1 + H])


def tiles_after(p: WinoLinebufParams, k: int) -> int:
    """How many of a map's tiles (row-major) the unit emits once it has taken the map's first
    ``k`` beats: tile (i, j) needs beats up to (i + 1)·W + min(m·(j + 1), W − 1) (its last
    column, or the band's last beat); the flush band's tiles (H ≡ 1 mod m) need the whole map."""
    if k >= p.beats:
        return p.tiles
    last = np.minimum(p.m * (np.arange(p.Tw) + 1), p.W - 1)
    need = (np.arange(1, p.Th + 1)[:, None] * p.W + last[None, :]).reshape(-1)
    return int(np.count_nonzero(need < k))


# == the model adapter (UnitSpec.model) ==========================================================
def linebuf_model(p: WinoLinebufParams, col__payload):
    """Input beats (payloads, any number: whole maps back to back, then possibly part of one)
    -> the tiles the unit emits for them, {"d__payload": payloads}: per map,
    :func:`linebuf_map` then :func:`model.tile_input` (pad 1), row-major; of a partial map the
    first :func:`tiles_after` tiles (pixels not yet received only reach tiles not yet due)."""
    beats = unpack(col_layout(p), np.asarray(col__payload, dtype=object))
    beats = np.asarray(beats).reshape(-1, p.m)
    out = []
    for start in range(0, len(beats), p.beats):
        part = beats[start:start + p.beats]
        full = np.zeros((p.beats, p.m), dtype=beats.dtype)
        full[:len(part)] = part
        t = model.tile_input(linebuf_map(full, p.m, p.H, p.W), p.m)
        out.append(t.reshape(p.tiles, p.n * p.n)[:tiles_after(p, len(part))])
    tiles = np.concatenate(out) if out else np.zeros((0, p.n * p.n), dtype=beats.dtype)
    return {"d__payload": pack(tile_layout(p), tiles)}


# == workload (tests, sim power) =================================================================
def random_maps(p: WinoLinebufParams, rng, count: int) -> np.ndarray:
    """``count`` maps [count, H, W]: N(0, 1) activations in the data format (FP modes) or
    uniform signed data_bits integers."""
    if p.is_int:
        lo = -(1 << (p.data_bits - 1))
        return rng.integers(lo, -lo, (count, p.H, p.W))
    return model.encode_input(rng.normal(0, 1, (count, p.H, p.W)), p.mode)


def linebuf_workload(p: WinoLinebufParams, rng, n: int) -> dict:
    """``n`` cycles of random maps back to back, the output always ready: the beats in the
    cycles the unit takes input (valid 1), valid 0 in its tail and flush steps (the payload
    held)."""
    per = p.cycles
    maps = random_maps(p, rng, -(-n // per))
    payloads, valid = [], []
    for x in maps:
        beats = list(pack(col_layout(p), linebuf_beats(x, p.m)))
        it = iter(beats)
        held = payloads[-1] if payloads else 0
        for b in range(p.Th + 1):
            takes = not (b == p.Th and p.flush)
            for _ in range(p.W):
                if takes:
                    held = next(it)
                payloads.append(held)
                valid.append(int(takes))
            if b > 0 and p.tail:
                payloads.append(held)
                valid.append(0)
    return {"col__payload": np.array(payloads[:n], dtype=object),
            "col__valid": np.array(valid[:n], dtype=np.uint64),
            "d__ready": np.ones(n, dtype=np.uint64)}


# == RTL =========================================================================================
class WinoLinebuf(wiring.Component):
    """The 2-row line buffer of F(m×m, 3×3) (module docstring): band columns in, the
    (m+2)×(m+2) input tiles of :func:`~tcgen.units.winograd.model.tile_input` out.

    Parameters
    ----------
    params : :class:`WinoLinebufParams` (m, mode, data_bits, H, W)

    Attributes
    ----------
    col : ``In(stream.Signature(col_layout))``
        one beat: m values of one column of a band (:func:`linebuf_beats`).
    d : ``Out(stream.Signature(tile_layout))``
        one input tile, (m+2)² values row-major (``wino_itf``'s ``d``).
    latency : int
        1: a tile is valid the cycle after its last beat is taken (tail tiles: 2).
    cycles : int
        cycles per map back to back, ``params.cycles``.
    """

    def __init__(self, params: WinoLinebufParams):
        self.params = params
        self.latency = 1
        self.cycles = params.cycles
        super().__init__({"col": In(stream.Signature(col_layout(params))),
                          "d": Out(stream.Signature(tile_layout(params)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        n, mm, W, Th, v = p.n, p.m, p.W, p.Th, p.last_lanes
        zero = 0
        zt = mm * p.Tw - W + 1                # zero columns beyond the map (m: the tail step)

        # -- state --------------------------------------------------------------------------
        band = Signal(range(Th + 1), name="band")
        column = Signal(range(max(W, 2)), name="column")        # (W = 1: one bit, 0)
        tail = Signal(name="tail")            # the zero-column step after a band (W ≡ 1 mod m)
        out_valid = Signal(name="out_valid")
        window = Signal(tile_layout(p), name="window")          # the output register
        pair = data.ArrayLayout(_elem(p), 2)

        # -- strobes ------------------------------------------------------------------------
        priming, last_band = Signal(name="priming"), Signal(name="last_band")
        no_input, can, advance, take = (Signal(name=x) for x in
                                        ("no_input", "can", "advance", "take"))
        last_col, emit = Signal(name="last_col"), Signal(name="emit")
        m.d.comb += [
            priming.eq(band == 0),
            last_band.eq(band == Th),
            no_input.eq(tail | (last_band if p.flush else 0)),
            can.eq(~out_valid | self.d.ready),
            self.col.ready.eq(can & ~no_input),
            take.eq(self.col.valid & self.col.ready),
            advance.eq(can & (no_input | self.col.valid)),
            last_col.eq(column == W - 1),
        ]
        low = column[:min(mm.bit_length() - 1, len(column))]    # column mod m
        step_emits = (column != 0) & (low == 0)
        if not p.tail:
            step_emits = step_emits | last_col
        m.d.comb += emit.eq(advance & ~priming & (tail | step_emits))

        # -- the beat's lanes: those outside the map are not read (zero) --------------------
        lanes = []
        for k in range(mm):
            lane = Signal(_elem(p), name=f"lane{k}")
            skip = []                         # band classes in which lane k carries no pixel
            if k != mm - 1:
                skip.append(priming)          # band 0: row 0 only (lane m − 1)
            if k >= v:
                skip.append(last_band)        # band T_h: rows < H only (lanes < last_lanes)
            value = self.col.payload[k]
            for cls in skip:
                value = Mux(cls, zero, value)
            m.d.comb += lane.eq(value)
            lanes.append(lane)

        # -- line memory: read column c's two stored rows, write the beat's last two --------
        stored = Signal(pair, name="stored")                    # column c's two stored rows
        fresh = Signal(pair, name="fresh")                      # the beat's last two rows
        m.d.comb += [fresh[0].eq(lanes[mm - 2]), fresh[1].eq(lanes[mm - 1])]
        if W == 1:                            # degenerate: one column, a register
            lines = Signal(pair, name="lines")
            m.d.comb += stored.eq(lines)
            with m.If(take):
                m.d.sync += lines.eq(fresh)
        else:
            m.submodules.lines = lines = Memory(shape=pair, depth=W, init=[])
            rd, wr = lines.read_port(domain="comb"), lines.write_port()
            m.d.comb += [rd.addr.eq(column), stored.eq(rd.data),
                         wr.addr.eq(column), wr.data.eq(fresh), wr.en.eq(take)]
        new_col = [stored[0], stored[1]] + lanes                # the tile column, top to bottom

        # -- window: shift columns in from the right ----------------------------------------
        def shift_in(appended):
            cols = [[window[r * n + s] for r in range(n)] for s in range(n)]
            cols = (cols + appended)[-n:]
            return [window[r * n + s].eq(cols[s][r]) for s in range(n) for r in range(n)]

        zcol = [zero] * n
        with m.If(advance & ~priming):
            with m.If(tail):
                m.d.sync += shift_in([zcol] * mm)
            with m.Elif(column == 0):          # the left padding column, then column 0
                m.d.sync += shift_in([zcol, new_col])       # (W = 1: the tail step follows)
            if not p.tail:
                with m.Elif(last_col):         # the last column and the zeros beyond the map
                    m.d.sync += shift_in([new_col] + [zcol] * zt)
            with m.Else():
                m.d.sync += shift_in([new_col])

        # -- counters -----------------------------------------------------------------------
        next_band = Mux(last_band, 0, band + 1)
        with m.If(advance):
            with m.If(tail):
                m.d.sync += [tail.eq(0), column.eq(0), band.eq(next_band)]
            with m.Elif(last_col):
                if p.tail:
                    with m.If(priming):
                        m.d.sync += [column.eq(0), band.eq(next_band)]
                    with m.Else():
                        m.d.sync += tail.eq(1)
                else:
                    m.d.sync += [column.eq(0), band.eq(next_band)]
            with m.Else():
                m.d.sync += column.eq(column + 1)

        # -- output -------------------------------------------------------------------------
        with m.If(self.d.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(emit):
            m.d.sync += out_valid.eq(1)
        m.d.comb += [self.d.valid.eq(out_valid), self.d.payload.eq(window)]
        return m


# == the unit ====================================================================================
WINO_LINEBUF = UnitSpec(
    name="wino_linebuf", family="winograd",
    summary="Winograd input line buffer: one H×W map in once as band columns (2 rows of line "
            "memory + an (m+2)² window), the (m+2)×(m+2) input tiles of F(m×m,3×3) out, streams",
    params=WinoLinebufParams, build=WinoLinebuf, model=linebuf_model,
    ops_per_cycle=lambda p: p.H * p.W / p.cycles, ops_unit="pixel",
    workload=linebuf_workload)
