"""Amaranth RTL of the LUT Tensor Core family (Mo et al., ISCA'25; notes 003_lut_tc.md §2).

* :class:`LutDp4` -- one plane of the LUT unit ("DP4", Fig. 8): the 2^(K−1):1 multiplexer of
  table entries, the conditional negation, the plane scaling ×2^j and the accumulate,
  combinational.  Golden model: :func:`tcgen.units.lut.model.dp_step` (same rounding points in
  the same order).

  - INT entries: the entry is sign-extended to the accumulator, shifted left by j and negated
    by XOR with the sign plus the sign as the adder's carry-in (c + ((e << j) ⊕ S) + s): the
    negation costs no separate adder (the paper's "negation" for INT tables).
  - FP entries: widened exactly to the accumulator format (hw's FPConvert), sign flipped,
    scaled by 2^j with an exponent adjustment that is right at ±0, subnormals (normalized by
    hw's round_pack) and overflow (±Inf under RNE, ±max under RTZ) -- ``scale = correct`` --
    or the released RTL's add of j to the exponent field (``scale = rtl``: wrong at ±0,
    subnormals and overflow; kept to measure what the correct one costs), then hw's FPAdd.

* :class:`LutPrecompute` -- the table precompute: K activations -> the 2^(K−1)-entry symmetric
  table, on the naive network (a chain of K−1 adds per entry) or the Gray-code network (T[0] on
  a chain, then T[g] = T[g'] ± 2a_k, one add per entry; fewer adders, a longer path).  FP
  doubling is an exponent adjustment that is right at ±0, subnormals and overflow.  Golden
  model: :func:`tcgen.units.lut.model.precompute`.
* :class:`MacArray` -- the MAC baseline at the same M×N×K (a conventional tensor core for
  mpGEMM): weight codes dequantized to the activation format (q′ = 2q − (2^b − 1), the same
  function the LUT computes), K multiplies, an adder tree and the accumulate per output
  (:class:`MacDp`), one operation per cycle.
* :class:`LutArray` -- the M×N×K array (Fig. 9): M tables broadcast to N units each, N weight
  codes per plane broadcast to M units each, M·N :class:`LutDp4` units and accumulators, a
  bit-serial sequencer (one plane per cycle, W_BIT cycles per operation) with stream
  handshakes.  ``table = internal`` registers the tables and the weight planes inside the
  array (an input stage); ``external`` reads them from the request, which the producer holds
  for the whole operation (the released RTL's way: its area excludes the table storage).

Sub-components are added with tcgen.hw.dedup.shared (one module per distinct configuration).
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.generate import index_cases
from tcgen.hw.fparith import (FPAdd, FPAddParams, FPConvert, FPConvertParams, FPMul,
                              FPMulParams, add_tree, round_pack, scale_pow2)
from tcgen.hw.intarith import int_dot, lzc, shift_left, shift_right_sticky, sum_operands
from tcgen.hw.layout import flat, width_of
from tcgen.hw.numeric import get_format

from . import layouts
from .params import (AddArrayParams, ConvLutArrayParams, LutArrayParams, LutDp4Params,
                     LutPrecomputeInt8Params, LutPrecomputeParams, MacArrayParams, int_width,
                     is_int)

__all__ = ["LutDp4", "BitSerialArray", "LutArray", "ConvLutArray", "AddDp", "AddArray", "MacDp",
           "MacArray", "Dequant", "LutPrecompute", "LutPrecomputeInt8", "widen", "reinterpreted",
           "entry_width", "acc_width", "plane_bits", "table_layout", "precompute_entry"]


def entry_width(fmt: str) -> int:
    return int_width(fmt) if is_int(fmt) else get_format(fmt).width


acc_width = entry_width


def plane_bits(w_bits: int) -> int:
    """Bits of the plane index j ∈ [0, w_bits)."""
    return max(1, (w_bits - 1).bit_length())


def table_layout(p) -> data.ArrayLayout:
    """The half table: 2^(k−1) entries of the entry format, entry i at bits [w·i +: w]."""
    return data.ArrayLayout(entry_width(p.entry), 1 << (p.k - 1))


def widen(m, v, src: str, dst: str, rounding: str, name: str):
    """An FP value of ``src`` widened exactly to ``dst`` (hw's FPConvert, added as
    ``{name}_widen``); the value itself when the formats agree."""
    if src == dst:
        return v
    conv = shared(m, f"{name}_widen", FPConvert(FPConvertParams(
        src=src, dst=dst, rounding=rounding, saturate=False, ftz=False, pipeline=0)))
    m.d.comb += conv.a.eq(v)
    return conv.y


class LutDp4(wiring.Component):
    """One plane step of the LUT unit: ``y = c + (sign ? −1 : +1) · lut[idx] · 2^plane``.

    Parameters: :class:`~tcgen.units.lut.params.LutDp4Params` (k, entry, acc, w_bits,
    rounding, scale).  Attributes: lut ``In(table_layout)`` (the half table), sign ``In(1)``,
    idx ``In(k−1)``, plane ``In(plane_bits(w_bits))``, c ``In(acc)``, y ``Out(acc)``;
    ``latency`` = 0.
    """

    def __init__(self, params: LutDp4Params):
        self.params = params
        self.latency = 0
        aw = acc_width(params.acc)
        super().__init__({"lut": In(table_layout(params)), "sign": In(1),
                          "idx": In(params.k - 1), "plane": In(plane_bits(params.w_bits)),
                          "c": In(aw), "y": Out(aw)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        ew, aw = entry_width(p.entry), acc_width(p.acc)
        e = Signal(ew, name="entry")
        with m.Switch(self.idx):                              # the 2^(k-1):1 multiplexer
            for i in range(1 << (p.k - 1)):
                with m.Case(i):
                    m.d.comb += e.eq(self.lut[i])
        if is_int(p.entry):
            ev = Signal(aw, name="entry_ext")
            m.d.comb += ev.eq(e.as_signed())                     # sign extension
            sh = shift_left(m, ev, self.plane, name="plane_shl")
            neg = Signal(aw, name="entry_xor")
            m.d.comb += neg.eq(sh ^ self.sign.replicate(aw))
            m.d.comb += self.y.eq(self.c + neg + self.sign)     # the sign as carry-in
            return m
        fa = get_format(p.acc)
        if p.entry != p.acc:
            conv = shared(m, "widen", FPConvert(FPConvertParams(
                src=p.entry, dst=p.acc, rounding=p.rounding, saturate=False, ftz=False,
                pipeline=0)))
            m.d.comb += conv.a.eq(e)
            wide = conv.y
        else:
            wide = e
        sgn = Signal(name="neg_sign")
        m.d.comb += sgn.eq(wide[aw - 1] ^ self.sign)
        scaled = Signal(aw, name="scaled")
        mb, eb = fa.man_bits, fa.exp_bits
        if p.scale == "rtl":
            ef = Signal(eb, name="rtl_exp")
            m.d.comb += ef.eq(wide[mb:mb + eb] + self.plane)   # wraps in the field
            m.d.comb += scaled.eq(Cat(wide[:mb], ef, sgn))
        else:
            m.d.comb += scaled.eq(scale_pow2(m, fa, wide, self.plane, sign=sgn, mode=p.rounding,
                                             name="sc"))
        add = shared(m, "acc_add", FPAdd(FPAddParams(fmt=p.acc, rounding=p.rounding, ftz=False,
                                                     pipeline=0)))
        m.d.comb += [add.a.eq(self.c), add.b.eq(scaled), self.y.eq(add.y)]
        return m


class BitSerialArray(wiring.Component):
    """The bit-serial M×N array sequencer shared by :class:`LutArray`, :class:`ConvLutArray`
    and :class:`AddArray`: D[i, n] = (chain ? acc : C)[i, n] + Σ_j unit(i, n, plane j), one
    plane per cycle over the w_bits planes of one operation.

    Interface (streams, valid/ready)::

        req  In(stream)  payload = {<row>, w, c, chain, emit} (the port is its flat view; <row>
                         is the per-row operand: the tables, or the activations)
        d    Out(stream) payload = D, M×N accumulator words, row-major

    ``w`` holds w_bits planes × N column codes of k bits.  Sequencing: plane j of an operation
    is computed in its j-th cycle (LSB plane first), the base (C, or the accumulator when
    ``chain``) added at plane 0.  Operands ``internal``: a request is taken (ready = 1) into the
    operand registers when the stage is empty or finishing its last plane, so operations follow
    each other every w_bits cycles without a bubble; latency w_bits + 1.  ``external``: the
    request is read in place and taken in its last cycle (latency w_bits).  The accumulator is
    the D register: an operation starts only when an emitted D has been taken; ``emit = 0``
    updates the accumulator without output.  Sync reset clears the stage, the plane counter,
    the accumulators (chain after reset adds onto 0) and any pending output.

    Subclasses give ``ROW`` (the per-row field; a class attribute, which an instance may
    override before ``__init__``), ``_rows(m, field) -> [row value]`` and
    ``_unit(m, i, n, row, code, plane, base) -> y``.
    """
    ROW = "lut"

    def __init__(self, params, req_layout, internal: bool):
        self.params = p = params
        self.internal = internal
        self.req_layout = flat(req_layout)
        self.latency = p.w_bits + (1 if internal else 0)
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "d": Out(stream.Signature(flat(layouts.array_result(p))))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        W, N, M, K = p.w_bits, p.n, p.m, p.k
        aw = acc_width(p.acc)
        bits = self.req.payload.as_value()
        lay = self.req_layout
        names = (self.ROW, "w", "c", "chain", "emit")

        def field(name):
            f = lay[name]
            return bits[f.offset:f.offset + width_of(f.shape)]

        can_advance = ~self.d.valid | self.d.ready          # the D register can be written
        advance, last = Signal(), Signal()
        if self.internal:
            full = Signal()
            regs = {name: Signal(len(field(name)), name=f"r_{name}") for name in names}
            load = Signal()
            m.d.comb += [advance.eq(full & can_advance),
                         self.req.ready.eq(~full | (advance & last)),
                         load.eq(self.req.valid & self.req.ready)]
            with m.If(load):
                m.d.sync += [regs[k].eq(field(k)) for k in regs]
                m.d.sync += full.eq(1)
            with m.Elif(advance & last):
                m.d.sync += full.eq(0)
            src = regs
        else:
            m.d.comb += [advance.eq(self.req.valid & can_advance),
                         self.req.ready.eq(can_advance & last)]
            src = {name: field(name) for name in names}
        if W > 1:
            j = Signal(range(W), name="plane")
            m.d.comb += last.eq(j == W - 1)
            with m.If(advance):
                m.d.sync += j.eq(Mux(last, 0, j + 1))
            first = j == 0
        else:
            j = Const(0, 1)
            m.d.comb += last.eq(1)
            first = Const(1, 1)

        # plane select: one W-way multiplexer per column, shared by the M rows ---------------------
        codes = []
        for n in range(N):
            code = Signal(K, name=f"code{n}")
            if W == 1:
                m.d.comb += code.eq(src["w"][n * K:(n + 1) * K])
            else:
                for jj in index_cases(m, j, W):
                    o = (jj * N + n) * K
                    m.d.comb += code.eq(src["w"][o:o + K])
            codes.append(code)

        # M×N units: row i's operand broadcast along the row, column code n down the column ----
        acc = Signal(M * N * aw, name="acc")
        take_c = Signal()
        m.d.comb += take_c.eq(first & ~src["chain"])
        rows = self._rows(m, src[self.ROW])
        nxt = []
        for i in range(M):
            for n in range(N):
                o = (i * N + n) * aw
                base = Mux(take_c, src["c"][o:o + aw], acc[o:o + aw])
                nxt.append(self._unit(m, i, n, rows[i], codes[n], j, base))
        with m.If(advance):
            m.d.sync += acc.eq(Cat(*nxt))

        with m.If(self.d.ready):
            m.d.sync += self.d.valid.eq(0)
        with m.If(advance & last & src["emit"]):
            m.d.sync += self.d.valid.eq(1)
        m.d.comb += self.d.payload.eq(acc)
        return m


class LutArray(BitSerialArray):
    """``lut_array``: D[i, n] = (chain ? acc : C)[i, n] + Σ_j 2^j · (sign ? −1 : +1) ·
    T_i[idx_{n,j}] over the w_bits planes of one operation (one LMMA of one K-group).

    Parameters: :class:`~tcgen.units.lut.params.LutArrayParams` (m, n, k, entry, acc, w_bits,
    rounding, scale, table).  Streams and sequencing: :class:`BitSerialArray`; ``req`` payload
    = layouts.array_request {lut, w (offline-encoded plane codes: idx low, sign high), c, chain,
    emit}.  ``table = internal``: the tables and weight planes in registers; ``external``: read
    from the request, which the producer holds for the operation (the released RTL's way).
    Row i's table is broadcast to the N :class:`LutDp4` units of the row.
    """
    ROW = "lut"

    def __init__(self, params: LutArrayParams):
        super().__init__(params, layouts.array_request(params), params.table == "internal")

    def unit_params(self) -> LutDp4Params:
        p = self.params
        return LutDp4Params(k=p.k, entry=p.entry, acc=p.acc, w_bits=p.w_bits,
                            rounding=p.rounding, scale=p.scale)

    def _rows(self, m, lut):
        p = self.params
        E, ew = 1 << (p.k - 1), entry_width(p.entry)
        return [lut[i * E * ew:(i + 1) * E * ew] for i in range(p.m)]

    def _unit(self, m, i, n, row, code, plane, base):
        K = self.params.k
        u = shared(m, f"u{i}_{n}", LutDp4(self.unit_params()))
        m.d.comb += [u.lut.eq(row), u.sign.eq(code[K - 1]), u.idx.eq(code[:K - 1]),
                     u.plane.eq(plane), u.c.eq(base)]
        return u.y


class ConvLutArray(BitSerialArray):
    """``conv_lut_array``: the conventional LUT (UNPU-style) at the same M×N×K, on the same
    bit-serial sequencer and streams as :class:`LutArray` (:class:`BitSerialArray`); ``req``
    payload = layouts.serial_request {a, w, c, chain, emit}.  The tables are made in the array
    by :class:`LutPrecompute` from the activations, one per row (``placement = row``, shared by
    the row's N units) or one per unit (``unit``) -- or outside it (``hoisted``, as the LUT
    Tensor Core does): the request carries the M row tables {lut, w, c, chain, emit} in the
    format the in-array precompute would make (:meth:`precompute_params`: the activation
    format for FP, exact INT of act width + ⌊log2 K⌋ + 1 bits), there is no precompute, and
    the tables are registered with the other operands (``operands = internal``) or read from
    the held request (``external``), as ``lut_array`` does with its ``lut`` field; row i's
    table is broadcast to the row's N units.  Each unit is a :class:`LutDp4`:

    * ``unpu``: the full {0, 1} table (2^k entries), the raw plane code indexes it, no
      negation: D = base + Σ_j 2^j T[W_j] = base + Σ_k q_k·a_k (unsigned codes);
    * ``reinterpret``: the half table of {−1, +1} weights, the index inverted in the circuit
      (idx = low bits XOR the code's MSB, the MSB negates): D = base + Σ_k q′_k·a_k;
    * ``offline_inversion``: the half table, plane codes encoded offline (as ``lut_array``;
      hoisted, it is ``lut_array`` with the precompute's entry format: the same request
      payload and the same D, bit for bit).

    Hoisted, ``unpu`` keeps UNPU's full table in registers and 2^k:1 multiplexers, the
    reinterpreted variants half of both (plus the negation): what weight reinterpretation
    saves, measured without the precompute.  ``network`` is unused when hoisted.

    Parameters: :class:`~tcgen.units.lut.params.ConvLutArrayParams`.  Golden model:
    :func:`tcgen.units.lut.model.conv_array_model`.
    """
    ROW = "a"

    def __init__(self, params: ConvLutArrayParams):
        if params.hoisted:
            self.ROW = "lut"                          # the tables take the activations' place
        super().__init__(params, layouts.serial_request(params), params.operands == "internal")

    def precompute_params(self) -> LutPrecomputeParams:
        p = self.params
        return LutPrecomputeParams(k=p.k, act=p.act, network=p.network, rounding=p.rounding,
                                   table="full" if p.variant == "unpu" else "half")

    def unit_params(self) -> LutDp4Params:
        p = self.params
        return LutDp4Params(k=p.k + 1 if p.variant == "unpu" else p.k,
                            entry=precompute_entry(self.precompute_params()), acc=p.acc,
                            w_bits=p.w_bits, rounding=p.rounding)

    def _table(self, m, a, name):
        pre = shared(m, name, LutPrecompute(self.precompute_params()))
        m.d.comb += pre.a.eq(a)
        return pre.t

    def _rows(self, m, a):
        p = self.params
        if p.hoisted:                                 # a: the M row tables
            tw = p.table_entries * entry_width(p.table_entry)
            return [a[i * tw:(i + 1) * tw] for i in range(p.m)]
        xw = entry_width(p.act)
        rows = [a[i * p.k * xw:(i + 1) * p.k * xw] for i in range(p.m)]
        if p.placement == "unit":
            return rows
        return [self._table(m, r, f"pre{i}") for i, r in enumerate(rows)]

    def _unit(self, m, i, n, row, code, plane, base):
        p = self.params
        K = p.k
        table = self._table(m, row, f"pre{i}_{n}") if p.placement == "unit" else row
        u = shared(m, f"u{i}_{n}", LutDp4(self.unit_params()))
        if p.variant == "unpu":
            m.d.comb += [u.sign.eq(0), u.idx.eq(code)]
        elif p.variant == "reinterpret":                 # the index inversion circuit
            m.d.comb += [u.sign.eq(code[K - 1]),
                         u.idx.eq(code[:K - 1] ^ code[K - 1].replicate(K - 1))]
        else:
            m.d.comb += [u.sign.eq(code[K - 1]), u.idx.eq(code[:K - 1])]
        m.d.comb += [u.lut.eq(table), u.plane.eq(plane), u.c.eq(base)]
        return u.y


@dataclass(frozen=True)
class AddDpParams:
    """What one :class:`AddDp` depends on (its content key, tcgen.hw.dedup)."""
    k: int
    act: str
    acc: str
    w_bits: int
    rounding: str


class AddDp(wiring.Component):
    """One plane step of the ADD baseline: y = c + 2^plane · Σ_k bit_k·a_k (``code``: the raw
    plane code, a_0 at the MSB).  INT: activations (``act`` width) gated, summed modulo
    2^acc in one compressor tree, shifted, added to c.  FP: activations already in the
    accumulator format, gated to +0, a pairwise hw add_tree, ×2^plane by hw's scale_pow2, one
    FPAdd with c.  Golden model: :func:`tcgen.units.lut.model.add_step`."""

    def __init__(self, params: AddDpParams):
        self.params = p = params
        aw = acc_width(p.acc)
        xw = int_width(p.act) if is_int(p.acc) else aw
        super().__init__({"a": In(data.ArrayLayout(xw, p.k)), "code": In(p.k),
                          "plane": In(plane_bits(p.w_bits)), "c": In(aw), "y": Out(aw)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        K, aw = p.k, acc_width(p.acc)
        bits = [self.code[K - 1 - i] for i in range(K)]
        if is_int(p.acc):
            terms = []
            for i in range(K):
                t = Signal(aw, name=f"t{i}")
                m.d.comb += t.eq(Mux(bits[i], self.a[i].as_signed(), 0))
                terms.append(t)
            s = sum_operands(m, terms, aw, name="sum")
            sh = shift_left(m, s, self.plane, name="plane_shl")
            m.d.comb += self.y.eq(self.c + sh)
            return m
        terms = []
        for i in range(K):
            t = Signal(aw, name=f"t{i}")
            m.d.comb += t.eq(Mux(bits[i], self.a[i], 0))
            terms.append(t)
        ap = FPAddParams(fmt=p.acc, rounding=p.rounding, ftz=False, pipeline=0)
        s = add_tree(m, terms, ap, "add")
        scaled = scale_pow2(m, get_format(p.acc), s, self.plane, mode=p.rounding, name="sc")
        fin = shared(m, "acc_add", FPAdd(ap))
        m.d.comb += [fin.a.eq(self.c), fin.b.eq(scaled), self.y.eq(fin.y)]
        return m


class AddArray(BitSerialArray):
    """``add_dp4_array``: the ADD baseline (Stripes-style bit-serial) at the same M×N×K, on
    the sequencer and streams of :class:`LutArray` (:class:`BitSerialArray`); ``req`` payload =
    layouts.serial_request {a, w (raw plane codes), c, chain, emit}.  Row i's activations
    (widened once per row to the accumulator format, FP) are broadcast to the N
    :class:`AddDp` units of the row: D = base + Σ_j 2^j Σ_k q_{jk}·a_k = base + Σ_k q_k·a_k.
    Parameters: :class:`~tcgen.units.lut.params.AddArrayParams`.  Golden model:
    :func:`tcgen.units.lut.model.add_array_model`.
    """
    ROW = "a"

    def __init__(self, params: AddArrayParams):
        super().__init__(params, layouts.serial_request(params), params.operands == "internal")

    def _rows(self, m, a):
        p = self.params
        xw = entry_width(p.act)
        rows = []
        for i in range(p.m):
            xs = [a[(i * p.k + kk) * xw:(i * p.k + kk + 1) * xw] for kk in range(p.k)]
            if not is_int(p.acc):
                xs = [widen(m, x, p.act, p.acc, p.rounding, f"a{i}_{kk}")
                      for kk, x in enumerate(xs)]
            rows.append(Cat(*xs))
        return rows

    def _unit(self, m, i, n, row, code, plane, base):
        p = self.params
        u = shared(m, f"u{i}_{n}", AddDp(AddDpParams(k=p.k, act=p.act, acc=p.acc,
                                                     w_bits=p.w_bits, rounding=p.rounding)))
        m.d.comb += [u.a.eq(row), u.code.eq(code), u.plane.eq(plane), u.c.eq(base)]
        return u.y


@dataclass(frozen=True)
class MacDpParams:
    """What one :class:`MacDp` depends on (its content key, tcgen.hw.dedup)."""
    k: int
    act: str
    acc: str
    w_bits: int
    rounding: str


class MacDp(wiring.Component):
    """One output of the MAC baseline: y = c + tree(a_k · w_k).  FP: a and w already in the
    accumulator format (widened), K hw FPMul, a pairwise FPAdd tree, one FPAdd with c.  INT: a
    (signed activations) × w (signed q′, w_bits + 1 bits) by structural multipliers, the K
    products and c summed modulo 2^acc in one compressor tree.  Golden model:
    :func:`tcgen.units.lut.model.mac_dp` (same rounding points in the same order)."""

    def __init__(self, params: MacDpParams):
        self.params = p = params
        aw = acc_width(p.acc)
        if is_int(p.acc):
            ports = {"a": In(data.ArrayLayout(int_width(p.act), p.k)),
                     "w": In(data.ArrayLayout(p.w_bits + 1, p.k))}
        else:
            ports = {"a": In(data.ArrayLayout(aw, p.k)), "w": In(data.ArrayLayout(aw, p.k))}
        super().__init__({**ports, "c": In(aw), "y": Out(aw)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        aw = acc_width(p.acc)
        if is_int(p.acc):
            m.d.comb += self.y.eq(int_dot(m, self.a, self.w, self.c, aw, name="sum"))
            return m
        terms = []
        for i in range(p.k):
            mul = shared(m, f"mul{i}", FPMul(FPMulParams(fmt=p.acc, rounding=p.rounding,
                                                         ftz=False, pipeline=0)))
            m.d.comb += [mul.a.eq(self.a[i]), mul.b.eq(self.w[i])]
            terms.append(mul.y)
        ap = FPAddParams(fmt=p.acc, rounding=p.rounding, ftz=False, pipeline=0)
        s = add_tree(m, terms, ap, "add")
        fin = shared(m, "acc_add", FPAdd(ap))
        m.d.comb += [fin.a.eq(s), fin.b.eq(self.c), self.y.eq(fin.y)]
        return m


def reinterpreted(m, q, b: int, name: str):
    """q′ = 2q − (2^b − 1) from a b-bit code: Cat(1, q[:b−1], ~q[b−1]) is its (b+1)-bit two's
    complement (Eq. 2, no arithmetic)."""
    qp = Signal(b + 1, name=f"{name}_qp")
    m.d.comb += qp.eq(Cat(Const(1, 1), q[:b - 1], ~q[b - 1]) if b > 1
                      else Cat(Const(1, 1), ~q[0]))
    return qp


@dataclass(frozen=True)
class DequantParams:
    """What one :class:`Dequant` depends on (its content key, tcgen.hw.dedup)."""
    act: str
    w_bits: int
    rounding: str


class Dequant(wiring.Component):
    """A b-bit weight code -> q′ = 2q − (2^b − 1) in the FP activation format: the odd integer
    as sign and magnitude, rounded once by hw's round_pack (exact in FP16; FP8 E4M3 rounds
    above 16).  Ports q ``In(w_bits)``, y ``Out(act)``.  Golden model:
    ``from_float(reinterpret(q, b), act)``."""

    def __init__(self, params: DequantParams):
        self.params = p = params
        super().__init__({"q": In(p.w_bits), "y": Out(get_format(p.act).width)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        b = p.w_bits
        qp = reinterpreted(m, self.q, b, "dq")
        fa = get_format(p.act)
        sign = qp[b]
        mag = Signal(b, name="dq_mag")
        m.d.comb += mag.eq(Mux(sign, -qp, qp)[:b])
        et = Signal(signed(fa.exp_bits + 2), name="dq_et")
        m.d.comb += et.eq(fa.bias + b - 1)
        m.d.comb += self.y.eq(round_pack(m, fa, sign, mag, et, mode=p.rounding, name="dq_rp"))
        return m


class MacArray(wiring.Component):
    """``mac_dp4_array``: D[i, n] = (chain ? acc : C)[i, n] + Σ_k a[i, k] · q′[n, k], one
    operation per cycle (latency 1), the same streams and accumulator rules as
    :class:`LutArray` (``table = external``: operands read from the request in place).

    Weight codes are dequantized once per column (N·K dequantizers, shared by the M rows):
    q′ = 2q − (2^b − 1) as a (b+1)-bit two's complement (INT), or converted to the activation
    format by hw's round_pack (FP; exact in FP16, rounded in FP8) and widened to the
    accumulator format; activations are widened once per row.  Parameters:
    :class:`~tcgen.units.lut.params.MacArrayParams`.
    """

    def __init__(self, params: MacArrayParams):
        self.params = p = params
        self.req_layout = flat(layouts.mac_request(p))
        self.latency = 1
        super().__init__({"req": In(stream.Signature(self.req_layout)),
                          "d": Out(stream.Signature(flat(layouts.array_result(p))))})

    def _dequant(self, m, q, name):
        """The weight code dequantized: (INT) q′ = 2q − (2^b − 1) as a (b+1)-bit two's
        complement, or (FP) a :class:`Dequant` (one module, instanced per code) widened to the
        accumulator format."""
        p = self.params
        if is_int(p.acc):
            return reinterpreted(m, q, p.w_bits, name)
        dq = shared(m, f"{name}_dq", Dequant(DequantParams(act=p.act, w_bits=p.w_bits,
                                                           rounding=p.rounding)))
        m.d.comb += dq.q.eq(q)
        return self._widen(m, dq.y, name)

    def _widen(self, m, v, name):
        p = self.params
        return widen(m, v, p.act, p.acc, p.rounding, name)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        M, N, K, b = p.m, p.n, p.k, p.w_bits
        xw, aw = entry_width(p.act), acc_width(p.acc)
        bits = self.req.payload.as_value()
        lay = self.req_layout

        def field(name):
            f = lay[name]
            return bits[f.offset:f.offset + width_of(f.shape)]

        can_advance = ~self.d.valid | self.d.ready
        advance = Signal()
        m.d.comb += [advance.eq(self.req.valid & can_advance), self.req.ready.eq(can_advance)]
        a, w, c = field("a"), field("w"), field("c")
        chain, emit = field("chain"), field("emit")
        rows = [[a[(i * K + kk) * xw:(i * K + kk + 1) * xw] for kk in range(K)]
                for i in range(M)]
        if not is_int(p.acc):
            rows = [[self._widen(m, x, f"a{i}_{kk}") for kk, x in enumerate(r)]
                    for i, r in enumerate(rows)]
        if p.dequant == "array":
            cols = [[self._dequant(m, w[(n * K + kk) * b:(n * K + kk + 1) * b], f"w{n}_{kk}")
                     for kk in range(K)] for n in range(N)]
        else:                    # dequantized outside: weights in the activation format
            cols = [[w[(n * K + kk) * xw:(n * K + kk + 1) * xw] for kk in range(K)]
                    for n in range(N)]
            if not is_int(p.acc):
                cols = [[self._widen(m, x, f"w{n}_{kk}") for kk, x in enumerate(c)]
                        for n, c in enumerate(cols)]
        acc = Signal(M * N * aw, name="acc")
        up = MacDpParams(k=K, act=p.act, acc=p.acc,
                         w_bits=b if p.dequant == "array" else xw - 1, rounding=p.rounding)
        nxt = []
        for i in range(M):
            for n in range(N):
                o = (i * N + n) * aw
                u = shared(m, f"dp{i}_{n}", MacDp(up))
                m.d.comb += [u.a.eq(Cat(*rows[i])), u.w.eq(Cat(*cols[n])),
                             u.c.eq(Mux(chain, acc[o:o + aw], c[o:o + aw]))]
                nxt.append(u.y)
        with m.If(advance):
            m.d.sync += acc.eq(Cat(*nxt))
        with m.If(self.d.ready):
            m.d.sync += self.d.valid.eq(0)
        with m.If(advance & emit):
            m.d.sync += self.d.valid.eq(1)
        m.d.comb += self.d.payload.eq(acc)
        return m


def precompute_entry(p) -> str:
    """The table entry format a precompute of ``p.act`` produces: the activation format (FP),
    or an exact INT of act width + ⌊log2 K⌋ + 1 bits."""
    return f"int{int_width(p.act) + p.k.bit_length()}" if is_int(p.act) else p.act


class LutPrecompute(wiring.Component):
    """``lut_precompute``: a ``In(ArrayLayout(act, k))`` -> t ``Out(ArrayLayout(entry,
    2^(k−1)))``, T[idx] = −a_0 + Σ_{k≥1} (2·bit_k(idx) − 1)·a_k (a_1 at the index MSB),
    combinational.  Parameters: :class:`~tcgen.units.lut.params.LutPrecomputeParams`."""

    def __init__(self, params: LutPrecomputeParams):
        self.params = p = params
        self.latency = 0
        xw = entry_width(p.act)
        ew = entry_width(precompute_entry(p))
        entries = 1 << (p.k - 1 if p.table == "half" else p.k)
        super().__init__({"a": In(data.ArrayLayout(xw, p.k)),
                          "t": Out(data.ArrayLayout(ew, entries))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        K, n = p.k, 1 << (p.k - 1)
        out = [None] * n
        if is_int(p.act):
            ew = entry_width(precompute_entry(p))
            av = [Signal(signed(ew), name=f"a{i}") for i in range(K)]
            m.d.comb += [av[i].eq(self.a[i].as_signed()) for i in range(K)]

            def term(i, plus):
                return av[i] if plus else -av[i]

            def add(x, y, name):
                s = Signal(signed(ew), name=name)
                m.d.comb += s.eq(x + y)
                return s

            def dbl(i, name):
                s = Signal(signed(ew), name=name)
                m.d.comb += s.eq(av[i] << 1)
                return s
        else:
            fa = get_format(p.act)
            w = fa.width

            def term(i, plus):
                x = self.a[i]
                return x if plus else Cat(x[:w - 1], ~x[w - 1])

            def add(x, y, name):
                u = shared(m, name, FPAdd(FPAddParams(fmt=p.act, rounding=p.rounding, ftz=False,
                                                      pipeline=0)))
                m.d.comb += [u.a.eq(x), u.b.eq(y)]
                return u.y

            def dbl(i, name):                      # 2·a_i, correct at the edges
                return scale_pow2(m, fa, self.a[i], 1, mode=p.rounding, name=name)

        if p.table == "full":
            m.d.comb += self.t.eq(Cat(*self._full(m, K, term, add)))
            return m

        def chain(idx, name):
            t = term(0, False)
            for kk in range(1, K):
                t = add(t, term(kk, (idx >> (K - 1 - kk)) & 1), f"{name}_{kk}")
            return t

        if p.network == "naive":
            for i in range(n):
                out[i] = chain(i, f"e{i}")
        else:
            doubled = {}
            prev, t = 0, chain(0, "e0")
            out[0] = t
            for r in range(1, n):
                g = r ^ (r >> 1)
                flip = g ^ prev
                kk = K - 1 - (flip.bit_length() - 1)
                if kk not in doubled:
                    doubled[kk] = dbl(kk, f"two_a{kk}")
                d = doubled[kk]
                if not g & flip:                     # the bit of a_k went 1 -> 0: subtract
                    d = -d if is_int(p.act) else Cat(d[:len(d) - 1], ~d[len(d) - 1])
                t = add(t, d, f"g{g}")
                out[g] = t
                prev = g
        m.d.comb += self.t.eq(Cat(*out))
        return m

    def _full(self, m, K, term, add):
        """UNPU's {0, 1} table: T[0] = 0; naive: each entry's selected activations summed left
        to right; gray: T[g] = T[prev] ± a_k in Gray-code order (one add per entry)."""
        p = self.params
        ew = entry_width(precompute_entry(p))
        n = 1 << K
        out = [Const(0, signed(ew) if is_int(p.act) else ew)] * n     # T[0] = 0 (+0)
        if p.network == "naive":
            for w in range(1, n):
                sel = [i for i in range(K) if (w >> (K - 1 - i)) & 1]
                t = term(sel[0], True)
                for i in sel[1:]:
                    t = add(t, term(i, True), f"e{w}_{i}")
                out[w] = t
            return out
        prev, t = 0, out[0]
        for r in range(1, n):
            g = r ^ (r >> 1)
            flip = g ^ prev
            i = K - 1 - (flip.bit_length() - 1)
            t = add(t, term(i, bool(g & flip)), f"g{g}")
            out[g] = t
            prev = g
        return out


class LutPrecomputeInt8(wiring.Component):
    """``lut_precompute_int8``: the INT precompute (:class:`LutPrecompute`) followed by INT8
    table quantization with a power-of-two scale: m = Σ|a_i| (= max|T|), shift e = max(0,
    bitlen(m) − 7), every entry T/2^e rounded to nearest-even on its magnitude and clamped to
    127 (never −128).  Ports a ``In(ArrayLayout(act, k))``, t ``Out(ArrayLayout(8,
    2^(k−1)))``, shift ``Out``; combinational.  Golden model:
    :func:`tcgen.units.lut.model.quantize_table_pow2` of the precompute.
    """

    def __init__(self, params: LutPrecomputeInt8Params):
        self.params = p = params
        self.latency = 0
        self.pre_params = LutPrecomputeParams(k=p.k, act=p.act, network=p.network)
        ew = entry_width(precompute_entry(self.pre_params))
        super().__init__({"a": In(data.ArrayLayout(int_width(p.act), p.k)),
                          "t": Out(data.ArrayLayout(8, 1 << (p.k - 1))),
                          "shift": Out(range(max(2, ew - 6)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        pre = shared(m, "pre", LutPrecompute(self.pre_params))
        m.d.comb += pre.a.eq(self.a)
        ew = entry_width(precompute_entry(self.pre_params))
        entries = [pre.t[i].as_signed() for i in range(1 << (p.k - 1))]
        absv = []
        for i in range(p.k):
            a = Signal(signed(ew), name=f"a{i}")
            m.d.comb += a.eq(self.a[i].as_signed())
            v = Signal(ew, name=f"abs{i}")
            m.d.comb += v.eq(Mux(a < 0, -a, a))
            absv.append(v)
        msum = sum_operands(m, absv, ew, name="sum_abs")
        lz = lzc(m, msum, name="sum_lzc")
        bl = Signal(range(ew + 1), name="sum_bitlen")
        m.d.comb += bl.eq(ew - lz)
        e = self.shift
        m.d.comb += e.eq(Mux(bl > 7, bl - 7, 0))
        out = []
        for i, t in enumerate(entries):
            sign = t[ew - 1]
            mag = Signal(ew, name=f"q{i}_mag")
            m.d.comb += mag.eq(Mux(sign, -t, t))
            sh, st = shift_right_sticky(m, Cat(Const(0, 1), mag), e, name=f"q{i}_shr")
            kept = sh[1:]
            qm = Signal(ew + 1, name=f"q{i}_round")
            m.d.comb += qm.eq(kept + (sh[0] & (st | kept[0])))
            qc = Signal(7, name=f"q{i}_clamp")
            m.d.comb += qc.eq(Mux(qm > 127, 127, qm))
            q = Signal(8, name=f"q{i}")
            m.d.comb += q.eq(Mux(sign, -qc, qc))
            out.append(q)
        m.d.comb += self.t.eq(Cat(*out))
        return m
