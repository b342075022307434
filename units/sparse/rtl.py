"""Amaranth RTL of the Sparse Tensor Core family (Zhu et al., MICRO-52 2019; note
001_sparse_tc.md §2): the dense Volta-style octet and the vector-wise sparse octet, cycle-exact
against :func:`tcgen.units.sparse.model.cycle_model`, bit-exact against
:func:`~tcgen.units.sparse.model.dense_wmma` / :func:`~tcgen.units.sparse.model.sparse_wmma`.

Both octets have 8 DP units -- the codebase's one DP-4 (:class:`tcgen.hw.dot.Dp4`: FP16 × FP16
products exact in FP32, ``((p0 + p1) + (p2 + p3)) + c``, every '+' one FP32 rounding) -- each
doing one DP-4 per cycle, and a request/result stream pair.  The request is the operand set of
one (S)WMMA as the register file holds it (:mod:`.layouts`): the octet reads it at the fill
bandwidth, 16 FP16 per cycle, and accepts it in the cycle of its last read, so the request
payload is the register-file model and the octet's area holds no copy of it.

Dense octet (:class:`OctetDense`, the baseline; note §2.2–2.3)
    One octet = worktuple (threadgroups i and i+4): D[0:8, 0:8] = A[0:8, 0:16]·B[0:16, 0:8] +
    C.  Four HMMA sets walk k in chunks of 4.  Per set: **fill** (2 cycles) -- the shared 4×8 B
    buffer (two B rows of 8 per cycle) and the A buffers (8 rows × 4 k, TG0's rows in the first
    cycle, TG4's in the second) -- then **compute** (8 cycles): DP d owns A row d (threadgroup
    d // 4) and in cycle t computes column t: ``acc[d][t] = dp4(A[d, k..k+3], B[k..k+3, t],
    acc[d][t])`` (C in set 0) -- the per-k-chunk order ((((C + dp0) + dp1) + dp2) + dp3) of
    :func:`~tcgen.units.sparse.model.dense_wmma`.  The C/D buffer (8×8 FP32) is a rotating
    register per DP row (read at the head, written at the tail).  ``pingpong``: two A/B buffer
    pairs, the next set filled while this one computes.  40 cycles (34 with ping-pong).

Sparse octet (:class:`OctetSparse`, the proposal; note §2.4)
    One octet = 4 A rows × 16 columns; per set one A row r: D[r, :] = C[r, :] + Σ_k val[r, k] ·
    B[off[r, k], :].  Per set: **FETCHIDX** (1 cycle: the offset register ← the row's offset
    word), **decode** (1 cycle: K one-hot row selects of L bits, registered), **load** (K
    cycles: one gathered B row of 16 FP16 per cycle through the row select into the 4×16 B
    buffer -- K×16 in general -- and the A row's K values into the A buffer), **EXEC** (2 cycles
    per pass, ⌈K/4⌉ passes): the A row broadcast to all 8 DPs, DP d in cycle t computing
    column 8·(d // 4) + 4·t + d % 4 (TG0 columns 0–7, TG4 8–15), pass j on slots 4j..4j+3 onto
    pass j−1's result (C in pass 0) -- :func:`~tcgen.units.sparse.model.spmm`'s order.  The
    fetch and decode of set s+1 overlap set s (decode writes the selects in set s's last load
    cycle).  ``pingpong``: two B (and A) buffers, set s+1 loading while set s computes.  26
    cycles (20 with ping-pong) at L = 16, K = 4.  ``zero_slot = skip``: a ±0 slot (padding,
    lanes beyond K) contributes −0 (the DP-4's ``skip_zero`` gate).

``split`` (both sparse octets, K = 4; note §5.1): the DP-4s are split DP-4s
(:class:`tcgen.hw.dot.Dp4` ``split``) and each request's ``kmode`` picks k = 4, 2 or 1
non-zeros per row at run time.  A set packs 4/k A rows' k slots into the 4 slots (offset
register, A buffer/broadcast register, row selects and B buffer unchanged: 4 slots), and the
DP units run as 4/k DP-k groups, group q onto row (set·4/k + q) -- so every lane is busy at
every k, k sets per SWMMA.  The feed-bound octet gains only at k = 1 (8 cycles, unsplit 11:
its load of 4 gathered rows per set stays); the B-stationary octet runs a reused SWMMA in 6
cycles at k = 2 and 4 at k = 1 (10 unsplit).

``numerics = fused_sm90`` (both octets): each DP unit is a :class:`tcgen.hw.fused.FusedDot`
with n = 4 -- the four exact products and c aligned once, truncated to Hopper's 27-bit window,
rounded once toward zero to FP32 (docs/fused.md) -- in the same slots of the same schedule, so
the cycle counts do not change; the sparse octet's ``skip`` gate then forces a ±0 lane's B
operand to +0 (a zero product takes no part in a fused block).

Back-to-back requests: a result waits in the D buffer until taken; the next (S)WMMA's first
compute stalls while it waits, everything before it (fill, fetch, load) proceeds.

``cuts = dp.*`` (every octet but the split ones; docs/pipelining.md "Octets"): the DP units are
pipelined (latency Lt).  A dot product still issues every cycle; :class:`_WriteBack` carries
where its result goes Lt cycles beside the DP pipeline; a dot product accumulating onto one in
flight waits (dense: from Lt = 8 with ping-pong / 10 without; sparse K > 4: from Lt = 2); the
result is valid after the last write-back, and the next request's first issue waits for it.
The dense C/D buffer is then indexed instead of rotating.  Lt = 0: the Verilog above, byte for
byte.
Sub-components (Dp4, RowSelect, OffsetDecode) are tcgen.hw.dedup.shared modules, so the
hierarchical PPA breakdown lists them.
"""
from __future__ import annotations

from functools import reduce

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.generate import index_cases
from tcgen.hw.dot import Dp4
from tcgen.hw.fused import FusedDot
from tcgen.hw.numeric import get_format

from . import layouts
from .model import bstationary_timing, cycle_model
from .params import (OctetDenseParams, OctetSparseBSParams, OctetSparseParams, WarpMmaParams,
                     WarpSmmaParams)

__all__ = ["OctetDense", "OctetSparse", "OctetSparseBS", "WarpMma", "RowSelect", "OffsetDecode"]

_DPS = 4      # lanes of a DP-4
_N_DP = 8     # DP units per octet
_FP16 = 16


class RowSelect(wiring.Component):
    """The register file's offset-addressed row read: ``y = OR_j (sel[j] ? rows[j] : 0)``
    (``sel`` one-hot; all-zero gives 0).  Attributes: rows ``In(ArrayLayout(width, n))``, sel
    ``In(n)``, y ``Out(width)``."""

    def __init__(self, n: int, width: int):
        self.key = ("row_select", n, width)
        super().__init__({"rows": In(data.ArrayLayout(width, n)), "sel": In(n),
                          "y": Out(width)})

    def elaborate(self, platform):
        m = Module()
        n = len(self.sel)
        m.d.comb += self.y.eq(reduce(lambda x, y: x | y,
                                     [Mux(self.sel[j], self.rows[j], 0) for j in range(n)]))
        return m


class OffsetDecode(wiring.Component):
    """The EXEC offset decode: K packed offsets of b bits (slot k at [b·k + b − 1 : b·k]) ->
    K one-hot row selects of L bits.  Attributes: off ``In(K·b)``, sel
    ``Out(ArrayLayout(L, K))``."""

    def __init__(self, k: int, L: int, b: int):
        self.key = ("offset_decode", k, L, b)
        self.k, self.L, self.b = k, L, b
        super().__init__({"off": In(k * b), "sel": Out(data.ArrayLayout(L, k))})

    def elaborate(self, platform):
        m = Module()
        for s in range(self.k):
            o = self.off[self.b * s:self.b * (s + 1)]
            m.d.comb += self.sel[s].eq(Const(1, self.L) << o)
        return m


def _dp_array(m: Module, p, skip_zero: bool = False) -> list:
    """The octet's 8 DP units (``p.dp_params``): IEEE DP-4s (``numerics=ieee``: FP16 × FP16
    exact in acc, every add rounded in ``p.rounding``) or fused blocks (``fused_sm90``:
    :class:`FusedDot` n = 4, Hopper's window and final rounding), with the ``dp.*`` cuts.
    Ports a, b (4 FP16 lanes), c, y either way; y is valid ``p.latency`` cycles after a, b,
    c."""
    dp = p.dp_params(skip_zero=skip_zero)
    unit = FusedDot if p.numerics == "fused_sm90" else Dp4
    return [shared(m, f"dp{d}", unit(dp)) for d in range(_N_DP)]


class _WriteBack:
    """The octets' write-back of pipelined DP units (one mechanism for every octet): the
    issue's ``fields`` (where the result goes, whether it is the request's last) travel ``lat``
    cycles beside the DP pipeline in registers ``wb_<field>_d<i>``, so the result is written
    where its issue said.  ``lat`` = 0: the issue's own signals, no register (the
    combinational octets' Verilog is unchanged).

    ``valid`` and ``fields[name]``: the token arriving with the DP outputs this cycle;
    :meth:`pending` (a read of an accumulator cell that a dot product in flight will still
    write: the issue must wait); ``draining``: the request's last issue is in flight (the D
    buffer is not the result yet: the next request's first issue waits)."""

    def __init__(self, m: Module, lat: int, issue, last, **fields):
        self.lat = lat
        self._stages = []                  # (valid, fields) issued 1 .. lat cycles ago
        valid, cur = issue, dict(fields, last=last)
        for i in range(1, lat + 1):
            v = Signal(name=f"wb_valid_d{i}")
            nxt = {k: Signal(len(x), name=f"wb_{k}_d{i}") for k, x in cur.items()}
            m.d.sync += [v.eq(valid), *(nxt[k].eq(x) for k, x in cur.items())]
            valid, cur = v, nxt
            self._stages.append((v, cur))
        self.valid, self.fields = valid, cur
        self.done = cur["last"]              # ``last`` holds only with its issue
        self.draining = Const(0)
        if lat:
            self.draining = Signal(name="draining")
            with m.If(issue & last):
                m.d.sync += self.draining.eq(1)
            with m.Elif(self.done):
                m.d.sync += self.draining.eq(0)

    def pending(self, **at):
        """A dot product in flight will write the cell ``at`` (field values): OR over the
        in-flight tokens."""
        hits = [v & Cat(*(f[k] == x for k, x in at.items())).all() for v, f in self._stages]
        return reduce(lambda x, y: x | y, hits, Const(0))


class OctetDense(wiring.Component):
    """The dense Volta-style octet (module docstring).

    Parameters: ``OctetDenseParams`` (acc, rounding, pingpong, numerics, cuts).
    Attributes: op ``In(stream.Signature(layouts.dense_op))`` {a: 8×16, b: 16×8, c: 8×8},
    res ``Out(stream.Signature(layouts.dense_res))`` {d: 8×8}; ``cycles`` (one WMMA, request
    offered to result valid: 40, or 34 with ping-pong) = ``latency``.
    """

    def __init__(self, params: OctetDenseParams):
        self.params = params
        self.cycles = self.latency = cycle_model("dense", params.pingpong,
                                                 dp_latency=params.latency)
        super().__init__({"op": In(stream.Signature(layouts.dense_op(params))),
                          "res": Out(stream.Signature(layouts.dense_res(params)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        pl = self.op.payload
        aw = get_format(p.acc).width
        nb = 2 if p.pingpong else 1
        rows, cols = layouts.DENSE_ROWS, layouts.DENSE_COLS
        abuf = [Signal(data.ArrayLayout(data.ArrayLayout(_FP16, _DPS), rows), name=f"a_buf{b}")
                for b in range(nb)]
        bbuf = [Signal(data.ArrayLayout(data.ArrayLayout(_FP16, cols), _DPS), name=f"b_buf{b}")
                for b in range(nb)]
        acc = Signal(data.ArrayLayout(data.ArrayLayout(aw, cols), rows), name="cd_buf")
        full = Signal(nb, name="full")
        fs, fc = Signal(2, name="fill_set"), Signal(1, name="fill_cycle")
        cs, cc = Signal(2, name="comp_set"), Signal(3, name="comp_cycle")
        wb, rb = Signal(1, name="wbuf"), Signal(1, name="rbuf")
        out_valid = Signal(name="out_valid")

        # -- fill: two B rows of 8 and four A rows of 4 (16 + 16 FP16) per cycle -----------------
        fill = Signal(name="fill")
        m.d.comb += [fill.eq(self.op.valid & ~full.bit_select(wb, 1)),
                     self.op.ready.eq(fill & (fc == 1) & (fs == 3))]
        with m.If(fill):
            for b in range(nb):
                with m.If(wb == b):
                    # constant write indices per fill cycle (no variably indexed assignment:
                    # its casez would not cover every index value, a Verilator lint)
                    for f in range(2):
                        with m.If(fc == f):
                            for i in range(2):
                                m.d.sync += bbuf[b][2 * f + i].eq(pl.b[fs * 4 + 2 * f + i])
                            for r in range(4):
                                row = 4 * f + r
                                for k in range(_DPS):
                                    m.d.sync += abuf[b][row][k].eq(pl.a[row][fs * 4 + k])
            m.d.sync += fc.eq(fc + 1)
            with m.If(fc == 1):
                m.d.sync += fs.eq(fs + 1)
                if nb == 2:
                    m.d.sync += wb.eq(~wb)

        # -- compute: DP d = A row d, cycle t = column t ---------------------------------------
        comp = Signal(name="compute")
        lat = p.latency
        wback = _WriteBack(m, lat, comp, comp & (cc == cols - 1) & (cs == 3), col=cc)
        if lat:
            may = ~((cs == 0) & ((out_valid & ~self.res.ready) | wback.draining))
            # column t of k-chunk s accumulates onto chunk s - 1's, issued >= 8 cycles before:
            # a wait only when the DP latency reaches that distance
            if lat >= cols:
                may = may & ~((cs != 0) & wback.pending(col=cc))
        else:
            may = ~((cs == 0) & out_valid & ~self.res.ready)
        m.d.comb += comp.eq(full.bit_select(rb, 1) & may)
        dps = _dp_array(m, p)
        a_cur, b_cur = _current(abuf, rb), _current(bbuf, rb)
        for d, dp in enumerate(dps):
            # combinational DPs: the C/D buffer rotates (head read, tail written); pipelined:
            # column cc read, the arriving column written
            m.d.comb += [dp.a.eq(a_cur[d]),
                         dp.c.eq(Mux(cs == 0, pl.c[d][cc], acc[d][cc] if lat else acc[d][0]))]
            for k in range(_DPS):
                m.d.comb += dp.b[k].eq(b_cur[k][cc])
            if lat:
                with m.If(wback.valid):
                    for j in index_cases(m, wback.fields["col"], cols):
                        m.d.sync += acc[d][j].eq(dp.y)
                continue
            with m.If(comp):
                m.d.sync += acc[d][cols - 1].eq(dp.y)
                for j in range(cols - 1):
                    m.d.sync += acc[d][j].eq(acc[d][j + 1])
        with m.If(comp):
            m.d.sync += cc.eq(cc + 1)
            with m.If(cc == cols - 1):
                m.d.sync += cs.eq(cs + 1)
                if nb == 2:
                    m.d.sync += rb.eq(~rb)
        # buffer flags: set by the last fill cycle, cleared by the last compute cycle
        for b in range(nb):
            set_b = fill & (fc == 1) & (wb == b)
            clr_b = comp & (cc == cols - 1) & (rb == b)
            m.d.sync += full[b].eq((full[b] & ~clr_b) | set_b)

        # -- result -----------------------------------------------------------------------------
        _result(m, self.res, out_valid, wback.done, acc)
        return m


class OctetSparse(wiring.Component):
    """The vector-wise sparse octet (module docstring).

    Parameters: ``OctetSparseParams`` (L, K, acc, rounding, pingpong, zero_slot, numerics,
    split, cuts).
    Attributes: op ``In(stream.Signature(layouts.sparse_op))`` {a: 4×K values, off: 4 offset
    words, b: L×16, c: 4×16}, res ``Out(stream.Signature(layouts.sparse_res))`` {d: 4×16};
    ``cycles`` (one SWMMA, request offered to result valid: 26, or 20 with ping-pong, at L = 16,
    K = 4) = ``latency``.
    """

    def __init__(self, params: OctetSparseParams):
        self.params = params
        self.cycles = self.latency = cycle_model("sparse", params.pingpong, L=params.L,
                                                 K=params.K, dp_latency=params.latency)
        #: cycles of a SWMMA per request kmode (split: k = 4, 2, 1, 1)
        self.cycles_by_kmode = tuple(
            cycle_model("sparse", params.pingpong, L=params.L, K=k, split=params.split)
            for k in params.kmodes)
        super().__init__({"op": In(stream.Signature(layouts.sparse_op(params))),
                          "res": Out(stream.Signature(layouts.sparse_res(params)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        pl = self.op.payload
        aw = get_format(p.acc).width
        nb = 2 if p.pingpong else 1
        K, L, ob, P = p.K, p.L, p.offset_bits, p.passes
        rows, cols = layouts.SPARSE_ROWS, layouts.SPARSE_COLS
        rowbits = _FP16 * cols

        # -- FETCHIDX: the offset register ---------------------------------------------------
        off_reg = Signal(K * ob, name="offset_reg")
        off_full = Signal(name="offset_full")
        fs = Signal(2, name="fetch_set")
        fetched_all = Signal(name="fetched_all")
        # -- decode: K one-hot row selects ------------------------------------------------------
        sel = Signal(data.ArrayLayout(L, K), name="row_sel")
        sel_full = Signal(name="sel_full")
        dec = shared(m, "decode", OffsetDecode(K, L, ob), key=("offset_decode", K, L, ob))
        m.d.comb += dec.off.eq(off_reg)
        # -- load: one gathered B row per cycle ---------------------------------------------------
        lk = Signal(range(max(K, 2)), name="load_row")
        wb, rb = Signal(1, name="wbuf"), Signal(1, name="rbuf")
        abuf = [Signal(data.ArrayLayout(_FP16, K), name=f"a_buf{b}") for b in range(nb)]
        bbuf = [Signal(data.ArrayLayout(data.ArrayLayout(_FP16, cols), K), name=f"b_buf{b}")
                for b in range(nb)]
        bfull = Signal(nb, name="b_full")
        rsel = shared(m, "row_select", RowSelect(L, rowbits), key=("row_select", L, rowbits))
        m.d.comb += rsel.rows.eq(pl.b.as_value())
        m.d.comb += rsel.sel.eq(sel[lk] if K > 1 else sel[0])
        # -- EXEC ------------------------------------------------------------------------------
        cs, cc = Signal(2, name="comp_set"), Signal(1, name="comp_cycle")
        cp = Signal(range(max(P, 2)), name="comp_pass")
        dbuf = Signal(data.ArrayLayout(data.ArrayLayout(aw, cols), rows), name="d_buf")
        out_valid = Signal(name="out_valid")

        load, load_last, decode, fetch, comp = (Signal(name=n) for n in (
            "load", "load_last", "decode", "fetch", "compute"))
        comp_last = Signal(name="compute_last")          # the last cycle of a set's EXEC
        kmode = pl.kmode if p.split else None
        wback = _WriteBack(m, p.latency, comp, comp_last & _last_set(cs, kmode), cs=cs, cc=cc)
        m.d.comb += [
            load.eq(sel_full & ~bfull.bit_select(wb, 1)),
            load_last.eq(load & (lk == K - 1)),
            decode.eq(off_full & (~sel_full | load_last)),
            fetch.eq(self.op.valid & ~fetched_all & (~off_full | decode)),
            comp.eq(bfull.bit_select(rb, 1) & _exec_may_issue(p, self.res, out_valid, wback, cs,
                                                              cc, cp)),
            comp_last.eq(comp & (cc == 1) & (cp == P - 1)),
            self.op.ready.eq(comp_last & _last_set(cs, kmode)),
        ]
        with m.If(fetch):
            m.d.sync += [off_reg.eq(_set_slots(pl.off, fs, kmode, ob)),
                         fs.eq(_next_set(fs, kmode))]
            with m.If(_last_set(fs, kmode)):
                m.d.sync += fetched_all.eq(1)
        with m.If(self.op.ready):
            m.d.sync += fetched_all.eq(0)
        m.d.sync += off_full.eq(fetch | (off_full & ~decode))
        with m.If(decode):
            m.d.sync += sel.eq(dec.sel)
        m.d.sync += sel_full.eq(decode | (sel_full & ~load_last))

        ls = Signal(2, name="load_set")
        with m.If(load):
            for b in range(nb):
                with m.If(wb == b):
                    for k in index_cases(m, lk, K):
                        m.d.sync += bbuf[b][k].eq(rsel.y)
                    with m.If(lk == 0):
                        m.d.sync += abuf[b].eq(_set_slots(pl.a, ls, kmode, _FP16))
            m.d.sync += lk.eq(Mux(load_last, 0, lk + 1))
            with m.If(load_last):
                m.d.sync += ls.eq(_next_set(ls, kmode))
                if nb == 2:
                    m.d.sync += wb.eq(~wb)

        a_cur, b_cur = _current(abuf, rb), _current(bbuf, rb)
        _sparse_exec(m, p, a_cur, b_cur, pl.c, dbuf, cs, cc, cp, wback, kmode)
        with m.If(comp):
            m.d.sync += cc.eq(cc + 1)
            with m.If(cc == 1):
                m.d.sync += cp.eq(Mux(cp == P - 1, 0, cp + 1))
            with m.If(comp_last):
                m.d.sync += cs.eq(_next_set(cs, kmode))
                if nb == 2:
                    m.d.sync += rb.eq(~rb)
        for b in range(nb):
            set_b = load_last & (wb == b)
            clr_b = comp_last & (rb == b)
            m.d.sync += bfull[b].eq((bfull[b] & ~clr_b) | set_b)

        _result(m, self.res, out_valid, wback.done, dbuf)
        return m


class OctetSparseBS(wiring.Component):
    """The B-stationary sparse octet (beyond the paper; note §5.2 (a)): the L×16 B tile is
    loaded once into registers (one row of 16 FP16 per cycle, the fill bandwidth) and held;
    SWMMAs on that tile read their K gathered rows through K local L:1 row selects
    (:class:`RowSelect` on the held tile: 4 × 256-bit 16:1 at L = 16, K = 4 -- the note's
    15,360 MUX2-equivalents) instead of re-reading the register file, so a SWMMA costs its
    FETCHIDX + decode and 4 EXEC sets: 10 cycles at L = 16, K = 4, against the paper's 20.

    Per set (one A row): FETCHIDX (offset register ← the row's word) → decode (K one-hot selects
    and the A row's K values into the broadcast register) → EXEC (2 cycles per pass, the same DP
    slots and order as :class:`OctetSparse`, so the arithmetic is :func:`sparse_wmma`'s).  The
    next set's FETCHIDX and decode run under this set's EXEC.  A request with ``bload`` loads its
    ``b`` first (FETCHIDX/decode overlap the load; EXEC waits for the whole tile): 24 cycles at
    L = 16.  The held tile resets to +0.

    Parameters: ``OctetSparseBSParams`` (L, K, acc, rounding, zero_slot, numerics, split,
    cuts).
    Attributes: op ``In(stream.Signature(layouts.bstat_op))``, res ``Out(stream.Signature(
    layouts.sparse_res))``; ``cycles`` = ``latency`` (a SWMMA that loads B), ``cycles_reused``.
    """

    def __init__(self, params: OctetSparseBSParams):
        self.params = params
        t = bstationary_timing(L=params.L, K=params.K, dp_latency=params.latency)
        self.cycles = self.latency = t["first"]
        self.cycles_reused = t["reused"]
        #: (first, reused) cycles per request kmode (split: k = 4, 2, 1, 1)
        self.cycles_by_kmode = tuple(
            (lambda t: (t["first"], t["reused"]))(bstationary_timing(
                L=params.L, K=k, split=params.split)) for k in params.kmodes)
        super().__init__({"op": In(stream.Signature(layouts.bstat_op(params))),
                          "res": Out(stream.Signature(layouts.sparse_res(params)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        pl = self.op.payload
        aw = get_format(p.acc).width
        K, L, ob, P = p.K, p.L, p.offset_bits, p.passes
        rows, cols = layouts.SPARSE_ROWS, layouts.SPARSE_COLS
        rowbits = _FP16 * cols

        # -- the held B tile: loaded one row per cycle ---------------------------------------
        bhold = Signal(data.ArrayLayout(data.ArrayLayout(_FP16, cols), L), name="b_hold")
        lb = Signal(range(L), name="bload_row")
        bdone = Signal(name="bload_done")                  # this request's tile is in
        bload = Signal(name="bload")
        m.d.comb += bload.eq(self.op.valid & pl.bload & ~bdone)
        with m.If(bload):
            for r in index_cases(m, lb, L):
                m.d.sync += bhold[r].eq(pl.b[r])
            m.d.sync += lb.eq(Mux(lb == L - 1, 0, lb + 1))
            with m.If(lb == L - 1):
                m.d.sync += bdone.eq(1)
        b_ready = Signal(name="b_ready")
        m.d.comb += b_ready.eq(~pl.bload | bdone)

        # -- FETCHIDX, decode (+ the A broadcast register) ------------------------------------
        off_reg = Signal(K * ob, name="offset_reg")
        off_full, sel_full = Signal(name="offset_full"), Signal(name="sel_full")
        fs, ds = Signal(2, name="fetch_set"), Signal(2, name="decode_set")
        fetched_all = Signal(name="fetched_all")
        sel = Signal(data.ArrayLayout(L, K), name="row_sel")
        areg = Signal(data.ArrayLayout(_FP16, K), name="a_bcast")
        dec = shared(m, "decode", OffsetDecode(K, L, ob), key=("offset_decode", K, L, ob))
        m.d.comb += dec.off.eq(off_reg)
        rsel = [shared(m, f"row_select{k}", RowSelect(L, rowbits),
                       key=("row_select", L, rowbits)) for k in range(K)]
        for k in range(K):
            m.d.comb += [rsel[k].rows.eq(bhold.as_value()), rsel[k].sel.eq(sel[k])]
        gathered = [data.View(data.ArrayLayout(_FP16, cols), rsel[k].y) for k in range(K)]

        # -- EXEC ------------------------------------------------------------------------------
        cs, cc = Signal(2, name="comp_set"), Signal(1, name="comp_cycle")
        cp = Signal(range(max(P, 2)), name="comp_pass")
        dbuf = Signal(data.ArrayLayout(data.ArrayLayout(aw, cols), rows), name="d_buf")
        out_valid = Signal(name="out_valid")
        fetch, decode, comp, comp_last = (Signal(name=n) for n in (
            "fetch", "decode", "compute", "compute_last"))
        kmode = pl.kmode if p.split else None
        wback = _WriteBack(m, p.latency, comp, comp_last & _last_set(cs, kmode), cs=cs, cc=cc)
        m.d.comb += [
            comp.eq(sel_full & b_ready & self.op.valid
                    & _exec_may_issue(p, self.res, out_valid, wback, cs, cc, cp)),
            comp_last.eq(comp & (cc == 1) & (cp == P - 1)),
            decode.eq(off_full & (~sel_full | comp_last)),
            fetch.eq(self.op.valid & ~fetched_all & (~off_full | decode)),
            self.op.ready.eq(comp_last & _last_set(cs, kmode)),
        ]
        with m.If(fetch):
            m.d.sync += [off_reg.eq(_set_slots(pl.off, fs, kmode, ob)),
                         fs.eq(_next_set(fs, kmode))]
            with m.If(_last_set(fs, kmode)):
                m.d.sync += fetched_all.eq(1)
        m.d.sync += off_full.eq(fetch | (off_full & ~decode))
        with m.If(decode):
            m.d.sync += [sel.eq(dec.sel), areg.eq(_set_slots(pl.a, ds, kmode, _FP16)),
                         ds.eq(_next_set(ds, kmode))]
        m.d.sync += sel_full.eq(decode | (sel_full & ~comp_last))
        with m.If(self.op.ready):
            m.d.sync += [fetched_all.eq(0), bdone.eq(0)]

        _sparse_exec(m, p, areg, gathered, pl.c, dbuf, cs, cc, cp, wback, kmode)
        with m.If(comp):
            m.d.sync += cc.eq(cc + 1)
            with m.If(cc == 1):
                m.d.sync += cp.eq(Mux(cp == P - 1, 0, cp + 1))
            with m.If(comp_last):
                m.d.sync += cs.eq(_next_set(cs, kmode))

        _result(m, self.res, out_valid, wback.done, dbuf)
        return m


class WarpMma(wiring.Component):
    """The warp wrapper: 4 octets (2 tensor cores) running one full 16×16×16 (S)WMMA, with the
    paper's row/column assignment (note §2.2, §2.4):

    - dense (``WarpMmaParams``): worktuple i = threadgroups i and i + 4 = octet i computes
      one 8×8 tile of D, ``D[R, C] = A[R, 0:16]·B[0:16, C] + C[R, C]``.  The paper states
      worktuple 0's tile (D[0:8, 0:8], Fig. 9); the others follow Raihan et al.'s mapping as
      we read it [A]: octet i has rows 8·(i mod 2) .. +8 and columns 8·(i div 2) .. +8;
    - sparse (``WarpSmmaParams``): octet i computes rows 4i .. 4i + 3 of D over all 16
      columns [P]; every octet gathers from the same B k-tile (the register file's B operand,
      read by each octet's own row select).

    The octets' control does not depend on data, so started together they run in lockstep:
    the warp accepts a request when all four do and offers D when all four have theirs (one
    cycle count: the octet's, 40 / 34 / 26 / 20).  Attributes: op ``In(stream)`` {a, b, c}
    (dense) or {a, off, b, c} (sparse), res ``Out(stream)`` {d: 16×16}; ``cycles`` =
    ``latency``.
    """

    def __init__(self, params):
        self.params = params
        self.sparse = isinstance(params, WarpSmmaParams)
        if not self.sparse and not isinstance(params, WarpMmaParams):
            raise TypeError("WarpMma: params must be WarpMmaParams or WarpSmmaParams")
        mode = "sparse" if self.sparse else "dense"
        kw = dict(L=params.L, K=params.K) if self.sparse else {}
        self.cycles = self.latency = cycle_model(mode, params.pingpong, **kw,
                                                 dp_latency=params.latency)
        op, res = (layouts.sparse_op, layouts.sparse_res) if self.sparse else \
            (layouts.dense_op, layouts.dense_res)
        super().__init__({"op": In(stream.Signature(op(params))),
                          "res": Out(stream.Signature(res(params)))})

    def elaborate(self, platform):
        m = Module()
        p, pl, d = self.params, self.op.payload, self.res.payload.d
        octet = OctetSparse if self.sparse else OctetDense
        octets = [shared(m, f"octet{i}", octet(p.octet())) for i in range(4)]
        for i, o in enumerate(octets):
            q, r = o.op.payload, o.res.payload.d
            if self.sparse:
                rows = range(4 * i, 4 * i + 4)
                m.d.comb += q.b.eq(pl.b)
                if p.split:
                    m.d.comb += q.kmode.eq(pl.kmode)
                for j, row in enumerate(rows):
                    m.d.comb += [q.a[j].eq(pl.a[row]), q.off[j].eq(pl.off[row]),
                                 q.c[j].eq(pl.c[row]), d[row].eq(r[j])]
            else:
                r0, c0 = 8 * (i % 2), 8 * (i // 2)
                for j in range(8):
                    m.d.comb += q.a[j].eq(pl.a[r0 + j])
                    for k in range(layouts.K_TILE):
                        m.d.comb += q.b[k][j].eq(pl.b[k][c0 + j])
                    for t in range(8):
                        m.d.comb += [q.c[j][t].eq(pl.c[r0 + j][c0 + t]),
                                     d[r0 + j][c0 + t].eq(r[j][t])]
        all_ready = Cat(*(o.op.ready for o in octets)).all()
        all_valid = Cat(*(o.res.valid for o in octets)).all()
        m.d.comb += [self.op.ready.eq(all_ready), self.res.valid.eq(all_valid)]
        for o in octets:
            m.d.comb += [o.op.valid.eq(self.op.valid),
                         o.res.ready.eq(self.res.ready & all_valid)]
        return m


def _exec_may_issue(p, res, out_valid, wb, cs, cc, cp):
    """The sparse octets' EXEC may issue: no result waiting to be taken (and, pipelined, none
    draining), and no pass j > 0 reading a D cell whose pass j − 1 is still in flight (issued
    2 cycles before: a wait only from a DP latency of 2)."""
    if not wb.lat:
        return ~(out_valid & ~res.ready)
    ok = ~((out_valid & ~res.ready) | wb.draining)
    if p.passes > 1 and wb.lat >= 2:
        ok = ok & ~((cp != 0) & wb.pending(cs=cs, cc=cc))
    return ok


def _sparse_exec(m: Module, p, a_cur, b_cur, c, dbuf, cs, cc, cp, wb, kmode=None):
    """The sparse octets' EXEC (one mechanism for :class:`OctetSparse` and
    :class:`OctetSparseBS`): the A row broadcast to the 8 DP units, DP d in cycle t computing
    column 8·(d // 4) + 4·t + d % 4, pass j on slots 4j..4j+3 onto pass j−1's result (C in pass
    0), results into row ``cs`` of the D buffer (written back by ``wb``, :class:`_WriteBack`,
    with the issue's row and cycle).  ``a_cur[s]``: slot s's A value; ``b_cur[s]``:
    slot s's gathered B row (16 FP16); ``c``: the request's C rows.  ``kmode`` (split octets):
    the set's slots are 4/k rows' k slots each (:func:`_set_slots`), the split DP-4s run one
    DP-k group per row (:func:`_split_exec`)."""
    if kmode is not None:                 # split: no cut points, wb is the issue itself
        return _split_exec(m, p, a_cur, b_cur, c, dbuf, cs, cc, wb.valid, kmode)
    K, P = p.K, p.passes
    skip = p.zero_slot == "skip"
    dps = _dp_array(m, p, skip_zero=skip)
    gate = skip and p.numerics != "ieee"     # fused: a ±0 lane's b is taken as +0
    c_row, d_row = c[cs], dbuf[cs]
    for d, dp in enumerate(dps):
        col0 = 8 * (d // 4) + d % 4                        # cycle 0; cycle 1: col0 + 4
        for k in range(_DPS):
            slots = [j * _DPS + k for j in range(P)]
            a_opts = [a_cur[s] if s < K else Const(0, _FP16) for s in slots]
            b_opts = [Mux(cc, b_cur[s][col0 + 4], b_cur[s][col0]) if s < K
                      else Const(0, _FP16) for s in slots]
            a_k, b_k = _pick(cp, a_opts), _pick(cp, b_opts)
            if gate:
                b_k = Mux(a_k[:_FP16 - 1].any(), b_k, 0)
            m.d.comb += [dp.a[k].eq(a_k), dp.b[k].eq(b_k)]
        c_in = Mux(cc, c_row[col0 + 4], c_row[col0])
        d_in = Mux(cc, d_row[col0 + 4], d_row[col0])
        m.d.comb += dp.c.eq(c_in if P == 1 else Mux(cp == 0, c_in, d_in))
        with m.If(wb.valid):
            for r in index_cases(m, wb.fields["cs"], layouts.SPARSE_ROWS):
                with m.If(wb.fields["cc"]):
                    m.d.sync += dbuf[r][col0 + 4].eq(dp.y)
                with m.Else():
                    m.d.sync += dbuf[r][col0].eq(dp.y)


def _split_exec(m: Module, p, a_cur, b_cur, c, dbuf, cs, cc, comp, kmode):
    """EXEC on split DP-4s (``split``, K = 4): lane k of every DP unit takes slot k (A value
    and gathered B row) as in the unsplit EXEC; the tree runs in ``kmode`` (1×DP-4, 2×DP-2,
    4×DP-1) and group q of set ``cs`` is D row cs·R + q (R = 4/k rows per set), onto its own C
    row; DP d in cycle t writes column 8·(d // 4) + 4·t + d % 4 of each of its rows."""
    dps = _dp_array(m, p, skip_zero=p.zero_slot == "skip")
    k4, k2, k1 = kmode == 0, kmode == 1, kmode[1]
    rows = layouts.SPARSE_ROWS

    def c_group(q, col):
        """Group q's C: row cs (k = 4, q = 0), 2·cs + q (k = 2), q (k = 1) -- muxes of
        constant slices (a row index computed at run time would be a 2048-bit shifter)."""
        at = [c[r][col] for r in range(rows)]
        if q == 0:
            return Mux(k4, _pick(cs, at), Mux(k2 & cs[0], at[2], at[0]))
        if q == 1:
            return Mux(k2 & cs[0], at[3], at[1])
        return at[q]
    for d, dp in enumerate(dps):
        col0 = 8 * (d // 4) + d % 4                        # cycle 0; cycle 1: col0 + 4
        m.d.comb += dp.mode.eq(kmode)
        for k in range(_DPS):
            m.d.comb += [dp.a[k].eq(a_cur[k]),
                         dp.b[k].eq(Mux(cc, b_cur[k][col0 + 4], b_cur[k][col0])),
                         dp.c[k].eq(Mux(cc, c_group(k, col0 + 4), c_group(k, col0)))]
        with m.If(comp):
            for r in range(rows):
                mine = (k4 & (cs == r)) | (k2 & (cs == r // 2)) | k1
                y = Mux(k4, dp.y[0], Mux(k2, dp.y[r % 2], dp.y[r]))
                with m.If(mine):
                    with m.If(cc):
                        m.d.sync += dbuf[r][col0 + 4].eq(y)
                    with m.Else():
                        m.d.sync += dbuf[r][col0].eq(y)


def _set_slots(rows, s, kmode, width: int):
    """The K = 4 slots of set ``s`` from the request's per-row fields ``rows`` (4 rows of 4
    slots of ``width`` bits): ``rows[s]`` unsplit (``kmode`` None, or 0: k = 4); k = 2 (kmode
    1): the first 2 slots of rows 2s and 2s + 1; k = 1 (kmode 2, 3): slot 0 of rows 0..3."""
    if kmode is None:
        return rows[s]
    raw = [rows[r].as_value() if hasattr(rows[r], "as_value") else rows[r] for r in range(4)]
    half = [Cat(raw[2 * j][:2 * width], raw[2 * j + 1][:2 * width]) for j in range(2)]
    one = Cat(*(raw[r][:width] for r in range(4)))
    return Mux(kmode == 0, _pick(s, raw), Mux(kmode == 1, Mux(s[0], half[1], half[0]), one))


def _last_set(cnt, kmode):
    """``cnt`` is the SWMMA's last set: 3 (unsplit), or k − 1 for the request's k."""
    if kmode is None:
        return cnt == 3
    return Mux(kmode == 0, cnt == 3, Mux(kmode == 1, cnt == 1, cnt == 0))


def _next_set(cnt, kmode):
    """The set counter's next value: +1, wrapping after the last set."""
    if kmode is None:
        return cnt + 1
    return Mux(_last_set(cnt, kmode), 0, cnt + 1)


def _result(m: Module, res, out_valid, done, dbuf):
    """The octets' result register: D (``dbuf``) offered from the cycle after ``done`` until
    taken (``out_valid`` cleared by ``res.ready``, set again by the next ``done``)."""
    with m.If(res.ready):
        m.d.sync += out_valid.eq(0)
    with m.If(done):
        m.d.sync += out_valid.eq(1)
    m.d.comb += [res.valid.eq(out_valid), res.payload.d.eq(dbuf)]


def _current(bufs, rb):
    """The buffer the compute reads: the only one, or bufs[rb] of a ping-pong pair."""
    if len(bufs) == 1:
        return bufs[0]
    return data.View(bufs[0].shape(), Mux(rb, bufs[1].as_value(), bufs[0].as_value()))


def _pick(idx, options):
    """options[idx] (a wire for one option)."""
    if len(options) == 1:
        return options[0]
    out = options[-1]
    for j in range(len(options) - 2, -1, -1):
        out = Mux(idx == j, options[j], out)
    return out
