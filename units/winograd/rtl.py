"""Amaranth RTL of the Winograd family's transforms (Yan, Wang, Chu, PPoPP'20; note
002_winograd.md §4.1; docs/winograd.md).  Combinational, ``latency`` = 0.

* :class:`WinoItf` -- Î = Bᵀ d B, (m+2)² -> (m+2)².
* :class:`WinoFtf` -- F̂ = G g Gᵀ on chip: F(2,3) FP (the ×½ network) and the integer s·G
  networks (2G, 24G; the result is s²·F̂).  The F(4,3) FP filter transform is offline only
  (refused by the params).
* :class:`WinoOtf` -- O = Aᵀ Ô A, (m+2)² -> m², plus the crop mask ``keep`` of a tile at the
  bottom / right edge of a map whose H' or W' is not a multiple of m.

Each 2-D transform ``X ↦ M X Mᵀ`` is the golden model's: the 1-D network pinned in
:mod:`tcgen.units.winograd.model` (:func:`~tcgen.units.winograd.model.networks`, the op tables
its docstring writes out) applied to every column of X (the column pass, t = M X), then to
every row of t (the row pass).  :class:`Network` builds one 1-D network, one hardware operator
per op of the table and in its order, so the RTL has the model's rounding points by
construction:

==========  =====================================  ==========================================
op          floating point (transform / acc fmt)   integer (mode int)
==========  =====================================  ==========================================
a + b       one hw FPAdd, RNE (tcgen.hw.dot.fp_add) exact add
a − b       the same FPAdd with b's sign flipped    exact subtract
a·2^k       hw scale_pow2 (exact; ±inf on overflow) a shift (wiring)
½a          hw scale_pow2 by −1 (the exponent       --
            lowered by one, round_pack): exact
            unless the result is subnormal, RNE
−a          the sign bit flipped                    exact negate
==========  =====================================  ==========================================

Integer nodes are held in the width of their stage (every node of a column pass in
``int_widths[<stage>_col]``, of a row pass in ``int_widths[<stage>]``), which holds every value
the model proves reachable, so nothing wraps.  The column and row passes are one
:class:`Network` module each (tcgen.hw.dedup.shared): m + 2 (or 3) instances of the first,
m + 2 (or m) of the second.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.dot import fp_add
from tcgen.hw.fparith import scale_pow2
from tcgen.hw.generate import index_cases
from tcgen.hw.numeric import get_format

from . import model
from .params import WinoFtfParams, WinoItfParams, WinoOtfParams

__all__ = ["NetworkParams", "Network", "WinoItf", "WinoFtf", "WinoOtf", "WinoConv",
           "DirectConv", "exact_div_pow2_9"]


@dataclass(frozen=True)
class NetworkParams:
    """One 1-D network: ``kind`` (a key of model.networks: itf, ftf, ftf_int, otf), ``m``, and
    either an FP format ``fmt`` or, with ``fmt="int"``, the signed widths of the inputs
    (``in_bits``) and of every node and output (``bits``)."""
    kind: str
    m: int
    fmt: str
    in_bits: int
    bits: int

    @property
    def net(self):
        return model.networks(self.m)[self.kind]

    @property
    def n_in(self) -> int:
        return 3 if self.kind.startswith("ftf") else self.m + 2

    @property
    def n_out(self) -> int:
        return len(self.net[1])


class Network(wiring.Component):
    """One pinned 1-D network y = M·x (module docstring), combinational.

    Parameters: :class:`NetworkParams`.  Attributes: x ``In(ArrayLayout(in, n_in))``, y
    ``Out(ArrayLayout(out, n_out))`` (FP: the format's width; int: signed ``in_bits`` /
    ``bits``); ``latency`` = 0.  Golden model: the model's ``_run`` of the same table."""

    def __init__(self, params: NetworkParams):
        self.params = params
        self.latency = 0
        if params.fmt == "int":
            ein, eout = signed(params.in_bits), signed(params.bits)
        else:
            ein = eout = get_format(params.fmt).width
        super().__init__({"x": In(data.ArrayLayout(ein, params.n_in)),
                          "y": Out(data.ArrayLayout(eout, params.n_out))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        ops, outs = p.net
        env = {f"x{i}": self.x[i] for i in range(p.n_in)}
        for dst, kind, a, b in ops:
            node = Signal(signed(p.bits) if p.fmt == "int" else get_format(p.fmt).width,
                          name=f"n_{dst}")
            m.d.comb += node.eq(self._op(m, dst, kind, env[a], b if kind in ("shl", "half",
                                                                               "neg")
                                         else env[b]))
            env[dst] = node
        for i, name in enumerate(outs):
            m.d.comb += self.y[i].eq(env[name])
        return m

    def _op(self, m, dst, kind, a, b):
        p = self.params
        if p.fmt == "int":
            a = a.as_signed() if hasattr(a, "as_signed") else a
            if kind == "add":
                return a + b.as_signed()
            if kind == "sub":
                return a - b.as_signed()
            if kind == "shl":
                return a.shift_left(b)
            if kind == "neg":
                return -a
            raise ValueError(f"Network: op {kind!r} has no integer form")
        fmt = get_format(p.fmt)
        if kind == "add":
            return fp_add(m, a, b, p.fmt, "rne", f"add_{dst}")
        if kind == "sub":
            return fp_add(m, a, _negated(b), p.fmt, "rne", f"add_{dst}")
        if kind == "shl":
            return scale_pow2(m, fmt, a, b, mode="rne", name=f"sc_{dst}")
        if kind == "half":
            return scale_pow2(m, fmt, a, -1, mode="rne", name=f"half_{dst}")
        if kind == "neg":
            return _negated(a)
        raise ValueError(f"Network: unknown op {kind!r}")


def _negated(x):
    """An FP encoding with its sign bit flipped (−x, exact; NaN stays NaN)."""
    return Cat(x[:len(x) - 1], ~x[len(x) - 1])


def _transform(m: Module, p, kind: str, stage: str, X, in_rows: int, in_cols: int, in_bits: int,
               fmt: str):
    """The 2-D transform of the in_rows × in_cols array ``X`` (``X[i][j]`` values): the
    network ``kind`` on every column (instances ``col{j}``), then on every row of the result
    (``row{i}``); returns the output as a list of rows.  Integer widths: ``<stage>_col`` for
    the column pass, ``<stage>`` for the row pass (:func:`model.int_widths`)."""
    if fmt == "int":
        cbits, rbits = p.widths[f"{stage}_col"][2], p.widths[stage][2]
    else:
        cbits = rbits = in_bits
    col = NetworkParams(kind, p.m, fmt, in_bits, cbits)
    row = NetworkParams(kind, p.m, fmt, cbits, rbits)
    T = [[None] * in_cols for _ in range(col.n_out)]
    for j in range(in_cols):
        net = shared(m, f"col{j}", Network(col))
        m.d.comb += [net.x[i].eq(X[i][j]) for i in range(in_rows)]
        for i in range(col.n_out):
            T[i][j] = net.y[i]
    Y = []
    for i in range(col.n_out):
        net = shared(m, f"row{i}", Network(row))
        m.d.comb += [net.x[j].eq(T[i][j]) for j in range(in_cols)]
        Y.append([net.y[k] for k in range(row.n_out)])
    return Y


def _elem(p, bits: int):
    return signed(bits) if p.is_int else bits


class WinoItf(wiring.Component):
    """Î = Bᵀ d B (note §4.1 WinoITF; model.itf): the ITF network of F(m,3) on the 2 + m
    columns, then the rows.  F(2,3): 4 adds per pass vector (32 per tile); F(4,3): 14 adds and
    5 power-of-two scalings (168 adds, 60 scalings).

    Parameters: :class:`~tcgen.units.winograd.params.WinoItfParams`.  Attributes: d
    ``In(ArrayLayout(e, (m+2)²))`` the input tile, row-major (d[i·(m+2) + j] = d_ij; e: the
    transform format's width, or signed ``data_bits``); y ``Out(ArrayLayout(e', (m+2)²))`` Î
    row-major (e' = e, or signed ``int_widths["itf"]`` bits); ``latency`` = 0."""

    def __init__(self, params: WinoItfParams):
        self.params = params
        self.latency = 0
        n = params.n
        super().__init__({"d": In(data.ArrayLayout(_elem(params, params.in_bits), n * n)),
                          "y": Out(data.ArrayLayout(_elem(params, params.out_bits), n * n))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        n = p.n
        X = [[self.d[i * n + j] for j in range(n)] for i in range(n)]
        Y = _transform(m, p, "itf", "itf", X, n, n, p.in_bits,
                       "int" if p.is_int else p.fmt("transform"))
        m.d.comb += [self.y[i * n + j].eq(Y[i][j]) for i in range(n) for j in range(n)]
        return m


class WinoFtf(wiring.Component):
    """F̂ = G g Gᵀ on chip (note §4.1 WinoFTF; model.ftf): F(2,3) FP -- the ×½ network
    ``s = x0 + x2, y1 = ½(s + x1), y2 = ½(s − x1)`` (3 adds + 2 halvings per vector, 3 + 4
    vectors); mode int -- the s·G network (2G for m = 2, 24G for m = 4), so y = s²·F̂ exactly.

    Parameters: :class:`~tcgen.units.winograd.params.WinoFtfParams`.  Attributes: g
    ``In(ArrayLayout(e, 9))`` the 3×3 filter, row-major (e: the transform format's width, or
    signed ``weight_bits``); y ``Out(ArrayLayout(e', (m+2)²))`` row-major (e' = e, or signed
    ``int_widths["ftf"]`` bits); ``latency`` = 0."""

    def __init__(self, params: WinoFtfParams):
        self.params = params
        self.latency = 0
        n = params.n
        super().__init__({"g": In(data.ArrayLayout(_elem(params, params.in_bits), 9)),
                          "y": Out(data.ArrayLayout(_elem(params, params.out_bits), n * n))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        n = p.n
        X = [[self.g[i * 3 + j] for j in range(3)] for i in range(3)]
        kind, fmt = ("ftf_int", "int") if p.is_int else ("ftf", p.fmt("transform"))
        Y = _transform(m, p, kind, "ftf", X, 3, 3, p.in_bits, fmt)
        m.d.comb += [self.y[i * n + j].eq(Y[i][j]) for i in range(n) for j in range(n)]
        return m


class WinoOtf(wiring.Component):
    """O = Aᵀ Ô A (note §4.1 WinoOTF; model.otf) in the accumulation format, and the crop mask.
    F(2,3): ``y0 = (x0 + x1) + x2, y1 = (x1 − x2) − x3`` (4 adds per vector, 4 + 2 vectors: 24
    adds); F(4,3): 10 adds and 3 scalings per vector (6 + 4 vectors).  Mode int: exact, the
    s²-scaled result as model.otf gives it (s² = 4 or 576; the exact division of
    model.winograd_conv is left to the consumer: for m = 2 the 2 LSBs, always 0 on an EWMM's
    output, are dropped by wiring).

    Crop mask: ``rows`` / ``cols`` are the numbers of valid output rows / columns of this tile
    (1..m: m everywhere but at the last tile row / column of a map, where they are H' − m·T_h +
    m and W' − m·T_w + m); ``keep[i·m + j] = (i < rows) & (j < cols)`` -- for every port value,
    so 0 keeps nothing and values above m keep every row / column.  The m² values are computed
    whatever the mask.

    Parameters: :class:`~tcgen.units.winograd.params.WinoOtfParams`.  Attributes: o_hat
    ``In(ArrayLayout(e, (m+2)²))`` Ô row-major (e: the accumulation format's width, or signed
    ``int_widths["acc"]`` bits); rows, cols ``In(m.bit_length())``; y ``Out(ArrayLayout(e',
    m²))`` O row-major (e' = e, or signed ``int_widths["otf"]`` bits); keep ``Out(m²)``;
    ``latency`` = 0.  Integer contract: each lane of Ô within the range an EWMM of
    ``channels`` products can reach (``params.lanes``), where ``int_widths`` proves that no
    node overflows."""

    def __init__(self, params: WinoOtfParams):
        self.params = params
        self.latency = 0
        n, mm = params.n, params.m
        super().__init__({"o_hat": In(data.ArrayLayout(_elem(params, params.in_bits), n * n)),
                          "rows": In(params.count_bits), "cols": In(params.count_bits),
                          "y": Out(data.ArrayLayout(_elem(params, params.out_bits), mm * mm)),
                          "keep": Out(mm * mm)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        n, mm = p.n, p.m
        X = [[self.o_hat[i * n + j] for j in range(n)] for i in range(n)]
        Y = _transform(m, p, "otf", "otf", X, n, n, p.in_bits,
                       "int" if p.is_int else p.fmt("acc"))
        m.d.comb += [self.y[i * mm + j].eq(Y[i][j]) for i in range(mm) for j in range(mm)]
        m.d.comb += [self.keep[i * mm + j].eq((self.rows > i) & (self.cols > j))
                     for i in range(mm) for j in range(mm)]
        return m


def exact_div_pow2_9(m: Module, x, e: int, nine: bool, width: int, name: str):
    """x / (2^e · 9^nine) for an x that is an exact multiple of it (the integer Winograd
    result s²·O: s² = 4 for F(2,3), 576 = 2^6·9 for F(4,3)), as ``width`` bits of the
    quotient (two's complement; exact when the quotient fits ``width`` bits).  The 2^e is
    wiring (x's low e bits are zero); the 9 is a multiply by 9⁻¹ modulo 2^width, which for
    9 = 1 + 8 is (1 − 8)(1 + 8²)(1 + 8⁴)… (the product of (1 + 8)(1 − 8)(1 + 64)… is
    1 − 8^(2^j) ≡ 1): one shift-and-add per factor, ⌈log2(width/3)⌉ adders."""
    q = Signal(width, name=f"{name}_q")
    m.d.comb += q.eq(x[e:e + width])
    if not nine:
        return q
    t, k, stage = q, 3, 0
    nxt = Signal(width, name=f"{name}_t{stage}")
    m.d.comb += nxt.eq(t - (t << k))                      # · (1 − 8)
    t = nxt
    while 2 * k < width:                                  # · (1 + 8^(2^j))
        k, stage = 2 * k, stage + 1
        nxt = Signal(width, name=f"{name}_t{stage}")
        m.d.comb += nxt.eq(t + (t << k))
        t = nxt
    return t


def _dp_schedule(m, units, accr, dots, Q, g, q, go, operands, store, neg0_in, neg0_acc,
                 result=None, start=None):
    """The one DP-4 schedule of the tile datapaths (:class:`WinoConv`'s EWMM,
    :class:`DirectConv`): ``dots`` dot products numbered 0.., ``P = len(units)`` at a time (a
    group, counter ``g``, G = ⌈dots/P⌉ groups); DP unit u of group gg owns dot product
    gg·P + u and runs its ``Q`` chunks (counter ``q``; chunk qq's four terms are
    ``operands(dot, qq)``: (a, b) pairs, None for a padding term (−0, +0)) onto its running
    accumulator ``accr[u]``, which starts at −0 (the DP-4's ``c`` is −0 at q = 0) -- the
    model's chain.  The last chunk's result goes into ``store(dot)`` (``result(unit)``, default
    ``unit.y``: ewmm=pacq stores its offset-corrected lanes).  While ``go`` the counters advance
    (q wraps at Q, then g at G).  ``start(dot)`` (optional; WinoConv accumulate=true): the
    value the chain starts from instead of −0."""
    from amaranth import Const, Mux
    P = len(units)
    G = -(-dots // P)
    result = result or (lambda unit: unit.y)
    for u, unit in enumerate(units):
        zero = Const(0, len(unit.b[0]))
        sel = Cat(q, g) if Q > 1 else g
        cases = 0
        with m.Switch(sel):
            for gg in range(G):
                idx = gg * P + u
                if idx >= dots:
                    continue
                for qq in range(Q):
                    case = (gg << len(q)) | qq if Q > 1 else gg
                    cases += 1
                    with m.Case(case):
                        for t, ab in enumerate(operands(idx, qq)):
                            a, b = ab if ab is not None else (neg0_in, zero)
                            m.d.comb += [unit.a[t].eq(a), unit.b[t].eq(b)]
            if cases < 1 << len(sel):        # unreachable codes: padding (a complete case)
                with m.Default():
                    m.d.comb += [x for t in range(4)
                                 for x in (unit.a[t].eq(neg0_in), unit.b[t].eq(zero))]
        for gg in range(G):                  # the last chunk's result into store(dot)
            if gg * P + u < dots:
                with m.If(go & (g == gg) & (q == Q - 1)):
                    dst = store(gg * P + u)
                    if isinstance(dst, list):          # [(target, condition)]: a banked store
                        for target, cond in dst:
                            with m.If(cond):
                                m.d.sync += target.eq(result(unit))
                    else:
                        m.d.sync += dst.eq(result(unit))
        first = neg0_acc
        if start is not None:    # the start of dot gg·P + u, selected by the group: a Mux chain
            for gg in range(G):  # (not a Switch: Icarus left that comb block X until g moved)
                if gg * P + u < dots:
                    first = Mux(g == gg, start(gg * P + u), first)
        m.d.comb += unit.c.eq(Mux(q == 0, first, accr[u]))
        with m.If(go):
            m.d.sync += accr[u].eq(unit.y)
    with m.If(go):
        m.d.sync += q.eq(Mux(q == Q - 1, 0, q + 1))
        with m.If(q == Q - 1):
            m.d.sync += g.eq(Mux(g == G - 1, 0, g + 1))


class WinoConv(wiring.Component):
    """The Winograd tile datapath (issue 15 §2): one output tile position per request --
    ITF → the (m+2)² element-wise lanes on ``dps`` DP-4 units, accumulating over C → OTF --
    bit-exact against :func:`~tcgen.units.winograd.model.itf`, ``ewmm`` and ``otf`` in
    ``mode`` (the model's rounding points).

    Phases (one sequencer, one request at a time):

    * **ITF** (C cycles): channel c's input tile through one :class:`WinoItf` into the Î
      bank (C × (m+2)² transform-format registers).
    * **EWMM** (groups × ⌈C/4⌉ cycles): the K·(m+2)² (filter, lane) pairs in row-major order,
      ``dps`` at a time (a group); DP unit u of group g owns pair g·dps + u and runs its
      ⌈C/4⌉ chunks (ascending channels, 4 per DP-4, channels beyond C as (−0, +0)) onto its
      running accumulator, which starts at −0 -- the model's order.  The chunk's last result
      goes into the Ô bank (K × (m+2)² accumulation-format registers).  The request is
      accepted in the last EWMM cycle (its payload -- tiles and transformed filters -- is the
      register file, read while valid) and its crop (rows, cols) latched.
    * **OTF** (K cycles): filter k's Ô through one :class:`WinoOtf` into the result register,
      with the crop mask; it waits while the previous result has not been taken, and the
      next request's ITF and EWMM run meanwhile.

    **Overlapped, weight-stationary** (``overlap=true``, issue 42; ewmm=dp4).  The request
    gains one field, ``load`` (1 bit, after ``cols``): the filters are *stationary* -- a
    request with load = 1 latches its ``w`` into the unit's filter bank (K × C × (m+2)²
    transform-format registers) when it is accepted, and every request (that one included)
    multiplies by the bank; with load = 0 ``w`` is not read (don't care).  This is the paper's
    schedule: one (K, C) block of transformed filters stays while many tiles stream through.
    The bank is 0 (+0) after reset.  Three stages run at once on consecutive requests:

    * **ITF** (C cycles) into one of two Î banks while the EWMM reads the other (ping-pong);
      the request is accepted in its last ITF cycle -- a load request only once no other tile
      still needs the old filters (the other Î bank empty, or its EWMM in its last cycle), so
      a load costs no cycle back to back; ``d`` is read while valid, ``w`` at the accept.
    * **EWMM** (groups × ⌈C/4⌉ cycles) from Î bank and filter bank into one of two Ô banks;
      it starts when its Î bank is full and its Ô bank is not waiting for the OTF.
    * **OTF** (K cycles) from the other Ô bank into the result register (ping-pong Ô: the OTF
      runs under the next EWMM), waiting while the previous result is not taken.

    Back to back one tile per max(C, groups·⌈C/4⌉, K) cycles (``params.interval``); latency
    C + groups·⌈C/4⌉ + K, as the first version's.

    ``wsource=stream`` (overlap only): no filter bank and no ``load``/``w`` in the request; a
    second input stream ``w`` (``layouts.conv_w``: one K×C filter set per request, in request
    order) is read while that request's EWMM runs and taken in its last EWMM cycle -- the
    first datapath's economics (the resident filters stay in the source, which re-offers them
    per tile), with the overlapped schedule.  The EWMM waits for ``w.valid``.

    **Ô accumulation across requests** (``accumulate=true``, needs overlap).  The request
    gains ``first`` and ``last`` (1 bit each, after ``load``).  A request whose first = 0
    continues each lane's DP-4 chain from the Ô the previous request left in the Ô bank
    (:func:`~tcgen.units.winograd.model.ewmm`'s ``start``) instead of −0 (int: 0); first = 1
    starts from −0.  The OTF runs, and a result comes out, only for a request with last = 1
    (its crop ``rows``, ``cols`` are the ones used); then the Ô banks swap.  So a tile of
    C_total channels is r requests of C channels (channels r·C.. of the tile and of the
    filters; load = 1 on each, since each carries its own filter chunk): first = 1 on the
    first, last = 1 on the last, one result.  Equal to model.ewmm over all C_total channels
    when C is a multiple of 4; otherwise each request's last chunk is padded with (−0, +0)
    (FP: a different association; int: the same value).  first = last = 1 is a
    single-request tile.  Mode int: ``C_total`` (params) sizes Ô, the OTF and the output
    for up to C_total channels per group (more wraps; the model refuses it).  A request with
    first = 0 after a last = 1 continues from the Ô bank's older contents (two groups back;
    0 after reset) -- well defined, modelled, but not useful.

    Parameters: :class:`~tcgen.units.winograd.params.WinoConvParams` (m, mode, C, K, dps,
    overlap, accumulate, C_total, wsource).
    Attributes: op ``In(stream.Signature(layouts.conv_op))``, res ``Out(stream.Signature(
    layouts.conv_res))``; ``cycles`` = ``latency`` = C + groups·⌈C/4⌉ + K (request offered to
    result valid); back to back one tile per max(C, K) + groups·⌈C/4⌉ (``params.interval``:
    the OTF runs beside the next tile's ITF; its EWMM waits for both); overlap: above.
    """

    def __init__(self, params):
        from amaranth.lib import stream
        from . import layouts
        self.params = params
        self.cycles = self.latency = params.cycles
        ports = {"op": In(stream.Signature(layouts.conv_op(params)))}
        if params.wsource == "stream":
            ports["w"] = In(stream.Signature(layouts.conv_w(params)))
        super().__init__({**ports, "res": Out(stream.Signature(layouts.conv_res(params)))})

    def elaborate(self, platform):
        from amaranth import Const, Mux
        from tcgen.hw.dot import Dp4, Dp4Params
        from tcgen.hw.fpint import LaneDot, LaneDotParams
        from tcgen.hw.intarith import IntDot, IntDotParams
        from .params import WinoItfParams, WinoOtfParams
        m = Module()
        p = self.params
        n, C, K, P, Q, G = p.lanes, p.C, p.K, p.dps, p.chunks, p.groups
        pl = self.op.payload
        if p.is_int:
            tw, aw = p.bits("transform"), p.bits("acc")
            neg0_t, neg0_a = Const(0, tw), Const(0, aw)       # padding terms and start: 0
            bits = dict(data_bits=p.data_bits)
            itf = shared(m, "itf", WinoItf(WinoItfParams(m=p.m, mode="int", **bits)))
            otf = shared(m, "otf", WinoOtf(WinoOtfParams(
                m=p.m, mode="int", **bits, weight_bits=p.weight_bits, channels=p.channels)))
            if p.ewmm != "dp4":          # PacQ's parallel multiplier (docs/winograd.md)
                pw = p.pacq
                tw = pw["act_bits"] + 1                        # Î bank: |Î| and its sign
                dp = LaneDotParams(wbits=pw["wbits"], act_bits=pw["act_bits"], acc_bits=aw,
                                   sa_bits=pw["sa_bits"])
                dps = [shared(m, f"dp{u}", LaneDot(dp)) for u in range(P)]
                neg0_t, neg0_a = Const(0, tw), Const(0, dp.width)
            else:
                dp = IntDotParams(k=4, a_width=tw, b_width=p.bits("filter"), acc_width=aw)
                dps = [shared(m, f"dp{u}", IntDot(dp)) for u in range(P)]
        else:
            f = model.formats(p.mode)
            tw, aw = get_format(f["transform"]).width, get_format(f["acc"]).width
            neg0_t = Const(1 << (tw - 1), tw)
            neg0_a = Const(1 << (aw - 1), aw)

            itf = shared(m, "itf", WinoItf(WinoItfParams(m=p.m, mode=p.mode)))
            otf = shared(m, "otf", WinoOtf(WinoOtfParams(m=p.m, mode=p.mode)))
            dp = Dp4Params(fmt=f["transform"], acc=f["acc"], product=f["product"],
                           rounding="rne")
            dps = [shared(m, f"dp{u}", Dp4(dp)) for u in range(P)]
        yw = p.bits("output")
        if p.overlap:
            return self._overlapped(m, itf, otf, dps, tw, aw, yw, neg0_t, neg0_a)

        ihat = Signal(data.ArrayLayout(data.ArrayLayout(tw, n), C), name="ihat")
        ohat = Signal(data.ArrayLayout(data.ArrayLayout(aw, n), K), name="ohat")
        yreg = Signal(data.ArrayLayout(data.ArrayLayout(yw, p.m * p.m), K), name="y_reg")
        keep = Signal(p.m * p.m, name="keep_reg")
        crop = Signal(2 * p.m.bit_length(), name="crop_reg")
        accr = [Signal(len(dps[0].c), name=f"acc{u}") for u in range(P)]

        ci = Signal(range(max(C, 2)), name="itf_ch")
        g = Signal(range(max(G, 2)), name="group")
        q = Signal(range(max(Q, 2)), name="chunk")
        ko = Signal(range(max(K, 2)), name="otf_k")
        itf_done, ewmm_done, out_valid = (Signal(name=x) for x in
                                          ("itf_done", "ewmm_done", "out_valid"))
        itf_go, ewmm_go, otf_go = (Signal(name=x) for x in ("itf_go", "ewmm_go", "otf_go"))
        ewmm_last = Signal(name="ewmm_last")
        otf_last = Signal(name="otf_last")
        m.d.comb += [
            itf_go.eq(self.op.valid & ~itf_done),
            ewmm_go.eq(itf_done & ~ewmm_done),
            ewmm_last.eq(ewmm_go & (g == G - 1) & (q == Q - 1)),
            self.op.ready.eq(ewmm_last),
            otf_go.eq(ewmm_done & (~out_valid | self.res.ready)),
            otf_last.eq(otf_go & (ko == K - 1)),
        ]

        # -- ITF: channel ci's tile -> Î[ci] ------------------------------------------------
        itf_y = itf.y
        if p.ewmm != "dp4":       # Î -> sign and magnitude, once per element (PacQ: FP16's)
            A, iw = p.pacq["act_bits"], p.bits("transform")
            itf_y = Signal(data.ArrayLayout(tw, n), name="itf_sm")
            for e in range(n):
                x = Signal(signed(iw), name=f"itf_y{e}")
                m.d.comb += [x.eq(itf.y[e]),
                             itf_y[e].eq(Cat(Mux(x[-1], -x, x)[:A], x[-1]))]
        for c in index_cases(m, ci, C):
            m.d.comb += itf.d.eq(pl.d[c])
            with m.If(itf_go):
                m.d.sync += ihat[c].eq(itf_y)
        with m.If(itf_go):
            m.d.sync += ci.eq(Mux(ci == C - 1, 0, ci + 1))
            with m.If(ci == C - 1):
                m.d.sync += itf_done.eq(1)

        # -- EWMM: DP unit u of group g owns (filter, lane) pair g·P + u ----------------------
        def operands(idx, qq):
            k, j = divmod(idx, n)
            return [(ihat[c][j], pl.w[k][c][j]) if c < C else None
                    for c in range(4 * qq, 4 * qq + 4)]

        def store(idx):
            k, j = divmod(idx, n)
            return ohat[k][j]

        result = None
        if p.ewmm != "dp4":       # DP unit u owns (filter group, lane) pairs; L filters a word
            L, b, fb = p.pacq["lanes"], p.pacq["lane_bits"], p.bits("filter")

            def code(v):           # s²·F̂ -> offset-binary y = s²·F̂ + 2^(b−1): wiring
                ext = Cat(v[:fb], v[fb - 1].replicate(b - fb)) if b >= fb else v[:b]  # pacq4
                return Cat(ext[:b - 1], ~ext[b - 1])

            def operands(idx, qq):
                gk, j = divmod(idx, n)
                return [(ihat[c][j], Cat(*(code(pl.w[k][c][j]) if k < K else Const(0, b)
                                           for k in range(gk * L, gk * L + L))))
                        if c < C else None for c in range(4 * qq, 4 * qq + 4)]

            def store(idx):
                gk, j = divmod(idx, n)
                return Cat(*(ohat[k][j] for k in range(gk * L, min(K, gk * L + L))))

            def result(unit):      # Ô_k = acc_k − 2^(b−1)·ΣÎ (mod 2^aw): exact
                sa = unit.y[L * aw:]
                return Cat(*((unit.y[j * aw:(j + 1) * aw] - (sa << (b - 1)))[:aw]
                             for j in range(L)))
        _dp_schedule(m, dps, accr, p.dots, Q, g, q, ewmm_go, operands, store, neg0_t, neg0_a,
                     result)
        with m.If(ewmm_last):
            m.d.sync += [ewmm_done.eq(1), itf_done.eq(0), crop.eq(Cat(pl.rows, pl.cols))]

        # -- OTF: Ô[ko] -> the result register ---------------------------------------------
        bits = p.m.bit_length()
        m.d.comb += [otf.rows.eq(crop[:bits]), otf.cols.eq(crop[bits:])]
        self._otf_out(m, otf, ohat, yreg, keep, ko, otf_go, otf_last, out_valid, yw,
                      ewmm_done)
        return m

    def _otf_out(self, m, otf, ohat, yreg, keep, ko, otf_go, otf_last, out_valid, yw,
                 ewmm_done=None):
        """The OTF stage: Ô[ko] (``ohat``) through ``otf`` (mode int: and the exact division)
        into the result register, the crop mask, the result stream's valid."""
        from amaranth import Mux
        p = self.params
        y = otf.y
        if p.is_int:            # s²·O -> O: the exact division of model.winograd_conv
            ow = p.bits("otf")
            y = Signal(data.ArrayLayout(yw, p.m * p.m), name="otf_div")
            for i in range(p.m * p.m):
                m.d.comb += y[i].eq(exact_div_pow2_9(
                    m, otf.y.as_value()[i * ow:(i + 1) * ow], 2 if p.m == 2 else 6,
                    p.m == 4, yw, f"div{i}"))
        for k in index_cases(m, ko, p.K):
            m.d.comb += otf.o_hat.eq(ohat[k])
            with m.If(otf_go):
                m.d.sync += yreg[k].eq(y)
        with m.If(otf_go):
            m.d.sync += [ko.eq(Mux(otf_last, 0, ko + 1)), keep.eq(otf.keep)]
        if ewmm_done is not None:
            with m.If(otf_last):
                m.d.sync += ewmm_done.eq(0)
        with m.If(self.res.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(otf_last):
            m.d.sync += out_valid.eq(1)
        m.d.comb += [self.res.valid.eq(out_valid), self.res.payload.y.eq(yreg),
                     self.res.payload.keep.eq(keep)]

    def _overlapped(self, m, itf, otf, dps, tw, aw, yw, neg0_t, neg0_a):
        """overlap=true (issue 42): the ITF, EWMM and OTF of consecutive requests run at once
        (class docstring, "Overlapped")."""
        from amaranth import Mux
        p = self.params
        n, C, K, P, Q, G = p.lanes, p.C, p.K, p.dps, p.chunks, p.groups
        pl = self.op.payload
        fw = p.bits("filter")
        bits = p.m.bit_length()
        arr = data.ArrayLayout
        ihat = [Signal(arr(arr(tw, n), C), name=f"ihat{b}") for b in range(2)]
        ohat = [Signal(arr(arr(aw, n), K), name=f"ohat{b}") for b in range(2)]
        own_w = p.wsource == "bank"
        # the filters: the unit's bank, or the w stream read while its EWMM runs
        wbank = Signal(arr(arr(arr(fw, n), C), K), name="w_bank") if own_w else \
            self.w.payload.w
        yreg = Signal(arr(arr(yw, p.m * p.m), K), name="y_reg")
        keep = Signal(p.m * p.m, name="keep_reg")
        crop_i = [Signal(2 * bits, name=f"crop_i{b}") for b in range(2)]   # per Î bank
        crop_o = [Signal(2 * bits, name=f"crop_o{b}") for b in range(2)]   # per Ô bank
        first_i = [Signal(name=f"first_i{b}") for b in range(2)]
        last_i = [Signal(name=f"last_i{b}") for b in range(2)]
        ifull = [Signal(name=f"ifull{b}") for b in range(2)]   # Î bank b holds a tile
        ofull = [Signal(name=f"ofull{b}") for b in range(2)]   # Ô bank b waits for the OTF
        ib, eb, wb, ob = (Signal(name=x) for x in ("itf_bank", "ewmm_bank", "ohat_wbank",
                                                    "otf_bank"))
        accr = [Signal(len(dps[0].c), name=f"acc{u}") for u in range(P)]
        ci = Signal(range(max(C, 2)), name="itf_ch")
        g = Signal(range(max(G, 2)), name="group")
        q = Signal(range(max(Q, 2)), name="chunk")
        ko = Signal(range(max(K, 2)), name="otf_k")
        out_valid = Signal(name="out_valid")
        itf_go, accept, ewmm_go, ewmm_last, otf_go, otf_last, latch_ok = (
            Signal(name=x) for x in ("itf_go", "accept", "ewmm_go", "ewmm_last", "otf_go",
                                     "otf_last", "latch_ok"))
        ifull_i = Mux(ib, ifull[1], ifull[0])            # the bank the ITF fills
        ifull_o = Mux(ib, ifull[0], ifull[1])            # the other one
        ifull_e = Mux(eb, ifull[1], ifull[0])
        ofull_w = Mux(wb, ofull[1], ofull[0])
        ofull_o = Mux(ob, ofull[1], ofull[0])
        first_e = Mux(eb, first_i[1], first_i[0]) if p.accumulate else 1
        last_e = Mux(eb, last_i[1], last_i[0]) if p.accumulate else 1
        m.d.comb += [
            # a load may latch the filter bank only when no other tile needs the old filters:
            # the other Î bank empty, or its EWMM in its last cycle
            latch_ok.eq((~pl.load | ~ifull_o | ewmm_last) if own_w else 1),
            itf_go.eq(self.op.valid & ~ifull_i & ((ci != C - 1) | latch_ok)),
            accept.eq(itf_go & (ci == C - 1)),
            self.op.ready.eq(accept),
            ewmm_go.eq(ifull_e & ~ofull_w & (1 if own_w else self.w.valid)),
            ewmm_last.eq(ewmm_go & (g == G - 1) & (q == Q - 1)),
            otf_go.eq(ofull_o & (~out_valid | self.res.ready)),
            otf_last.eq(otf_go & (ko == K - 1)),
        ]

        # -- ITF: channel ci of the request's tiles -> Î bank ib ---------------------------
        for c in index_cases(m, ci, C):
            m.d.comb += itf.d.eq(pl.d[c])
            for b in range(2):
                with m.If(itf_go & (ib == b)):
                    m.d.sync += ihat[b][c].eq(itf.y)
        with m.If(itf_go):
            m.d.sync += ci.eq(Mux(ci == C - 1, 0, ci + 1))
        with m.If(accept):
            m.d.sync += ib.eq(~ib)
            if own_w:
                with m.If(pl.load):
                    m.d.sync += wbank.eq(pl.w)
        if not own_w:              # one filter set per request, taken in its last EWMM cycle
            m.d.comb += self.w.ready.eq(ewmm_last)
        for b in range(2):
            with m.If(accept & (ib == b)):
                m.d.sync += [ifull[b].eq(1), crop_i[b].eq(Cat(pl.rows, pl.cols))]
                if p.accumulate:
                    m.d.sync += [first_i[b].eq(pl.first), last_i[b].eq(pl.last)]
            with m.If(ewmm_last & (eb == b)):
                m.d.sync += ifull[b].eq(0)

        # -- EWMM: Î bank eb and the filter bank -> Ô bank wb -------------------------------
        ihat_e = Signal(arr(arr(tw, n), C), name="ihat_e")
        ohat_w = Signal(arr(arr(aw, n), K), name="ohat_w")
        m.d.comb += [ihat_e.eq(Mux(eb, ihat[1], ihat[0])),
                     ohat_w.eq(Mux(wb, ohat[1], ohat[0]))]

        def operands(idx, qq):
            k, j = divmod(idx, n)
            return [(ihat_e[c][j], wbank[k][c][j]) if c < C else None
                    for c in range(4 * qq, 4 * qq + 4)]

        def store(idx):          # into Ô bank wb
            k, j = divmod(idx, n)
            return [(ohat[b][k][j], wb == b) for b in range(2)]

        def start(idx):          # accumulate: continue from Ô unless the request is a first
            k, j = divmod(idx, n)
            return Mux(first_e, neg0_a, ohat_w[k][j])

        _dp_schedule(m, dps, accr, p.dots, Q, g, q, ewmm_go, operands, store, neg0_t, neg0_a,
                     start=start if p.accumulate else None)
        with m.If(ewmm_last):
            m.d.sync += [eb.eq(~eb)]
            with m.If(last_e):
                m.d.sync += wb.eq(~wb)
        for b in range(2):
            with m.If(ewmm_last & last_e & (wb == b)):
                m.d.sync += [ofull[b].eq(1),
                             crop_o[b].eq(Mux(eb, crop_i[1], crop_i[0]))]
            with m.If(otf_last & (ob == b)):
                m.d.sync += ofull[b].eq(0)

        # -- OTF: Ô bank ob -> the result register --------------------------------------------
        ohat_o = Signal(arr(arr(aw, n), K), name="ohat_o")
        crop = Signal(2 * bits, name="crop_o")
        m.d.comb += [ohat_o.eq(Mux(ob, ohat[1], ohat[0])),
                     crop.eq(Mux(ob, crop_o[1], crop_o[0])),
                     otf.rows.eq(crop[:bits]), otf.cols.eq(crop[bits:])]
        self._otf_out(m, otf, ohat_o, yreg, keep, ko, otf_go, otf_last, out_valid, yw)
        with m.If(otf_last):
            m.d.sync += ob.eq(~ob)
        return m

class DirectConv(wiring.Component):
    """The direct-convolution baseline ``direct_conv3x3`` (issue 15 §2) on the same DP-4s as
    :class:`WinoConv`: one output tile position per request -- the same C input tiles of
    (m+2)², raw 3×3 filters -- bit-exact against :func:`~tcgen.units.winograd.model.
    direct_tile` in ``mode``.  No transforms.

    * **Dot products** (groups × ⌈9C/4⌉ cycles): the K·m² outputs (k, i, j) in row-major
      order, ``dps`` at a time (:func:`_dp_schedule`, the EWMM's schedule); output (k, i, j)
      runs its 9·C terms d[c][i+r][j+s]·g[k][c][r][s] in the order c-major, then r, then s,
      four per chunk on one ``tcgen.hw.dot.Dp4`` (fmt = the data format, acc and products as
      ``model.formats(mode)``), the last chunk padded with (−0, +0), onto a running
      accumulator that starts at −0.  Each output's last chunk goes into the output bank
      (K × m² accumulation-format registers).  The request is accepted in the last cycle and
      its crop (rows, cols) latched.
    * **Copy** (1 cycle): the bank and the crop mask into the result register; it waits while
      the previous result is not taken, and the next request's first cycle runs with it.

    Parameters: :class:`~tcgen.units.winograd.params.DirectConvParams` (m, mode, C, K, dps).
    Attributes: op ``In(stream.Signature(layouts.direct_op))``, res ``Out(stream.Signature(
    layouts.conv_res))`` (wino_conv's result); ``cycles`` = ``latency`` = groups·⌈9C/4⌉ + 1;
    back to back one tile per groups·⌈9C/4⌉ (``params.interval``).
    """

    def __init__(self, params):
        from amaranth.lib import stream
        from . import layouts
        self.params = params
        self.cycles = self.latency = params.cycles
        super().__init__({"op": In(stream.Signature(layouts.direct_op(params))),
                          "res": Out(stream.Signature(layouts.conv_res(params)))})

    def elaborate(self, platform):
        from amaranth import Const
        from tcgen.hw.dot import Dp4, Dp4Params
        from tcgen.hw.intarith import IntDot, IntDotParams
        m = Module()
        p = self.params
        mm, s, C, K, P, Q, G = p.m, p.m + 2, p.C, p.K, p.dps, p.chunks, p.groups
        pl = self.op.payload
        if p.is_int:
            dw, aw = p.bits("data"), p.bits("acc")
            dp = IntDotParams(k=4, a_width=dw, b_width=p.bits("weight"), acc_width=aw)
            dps = [shared(m, f"dp{u}", IntDot(dp)) for u in range(P)]
            pad_a, start = Const(0, dw), Const(0, aw)
        else:
            f = model.formats(p.mode)
            dw, aw = get_format(f["data"]).width, get_format(f["acc"]).width
            dp = Dp4Params(fmt=f["data"], acc=f["acc"], product=f["product"], rounding="rne")
            dps = [shared(m, f"dp{u}", Dp4(dp)) for u in range(P)]
            pad_a, start = Const(1 << (dw - 1), dw), Const(1 << (aw - 1), aw)

        bank = Signal(data.ArrayLayout(data.ArrayLayout(aw, mm * mm), K), name="y_bank")
        yreg = Signal(data.ArrayLayout(data.ArrayLayout(aw, mm * mm), K), name="y_reg")
        keep = Signal(mm * mm, name="keep_reg")
        crop = Signal(2 * mm.bit_length(), name="crop_reg")
        accr = [Signal(aw, name=f"acc{u}") for u in range(P)]
        g = Signal(range(max(G, 2)), name="group")
        q = Signal(range(max(Q, 2)), name="chunk")
        done, out_valid = Signal(name="dots_done"), Signal(name="out_valid")
        go, last, copy = Signal(name="dots_go"), Signal(name="dots_last"), Signal(name="copy")
        m.d.comb += [
            copy.eq(done & (~out_valid | self.res.ready)),
            go.eq(self.op.valid & (~done | copy)),
            last.eq(go & (g == G - 1) & (q == Q - 1)),
            self.op.ready.eq(last),
        ]

        # -- the K·m² dot products of 9·C terms (t = 9c + 3r + s) on the DP-4s ----------------
        def operands(idx, qq):
            k, o = divmod(idx, mm * mm)
            i, j = divmod(o, mm)
            out = []
            for t in range(4 * qq, 4 * qq + 4):
                c, rs = divmod(t, 9)
                r, sc = divmod(rs, 3)
                out.append((pl.d[c][(i + r) * s + j + sc], pl.g[k][c][rs]) if c < C else None)
            return out

        def store(idx):
            k, o = divmod(idx, mm * mm)
            return bank[k][o]

        _dp_schedule(m, dps, accr, K * mm * mm, Q, g, q, go, operands, store, pad_a, start)
        with m.If(last):
            m.d.sync += crop.eq(Cat(pl.rows, pl.cols))

        # -- copy: the bank and the crop mask into the result register ------------------------
        bits = mm.bit_length()
        rows, cols = crop[:bits], crop[bits:]
        with m.If(copy):
            m.d.sync += [yreg.eq(bank), done.eq(0), out_valid.eq(1)]
            m.d.sync += [keep[i * mm + j].eq((rows > i) & (cols > j))
                         for i in range(mm) for j in range(mm)]
        with m.Elif(self.res.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(last):
            m.d.sync += done.eq(1)
        m.d.comb += [self.res.valid.eq(out_valid), self.res.payload.y.eq(yreg),
                     self.res.payload.keep.eq(keep)]
        return m
