"""Amaranth RTL of the PacQ family (Yin, Li, Panda, "PacQ", §III; notes 004_pacq.md).

Units (golden models in :mod:`tcgen.units.pacq.model`, same rounding points in the same order):

* :class:`Fp16Mul` -- the paper's baseline FP16 multiplier: hw's :class:`~tcgen.hw.fparith.FPMul` at
  FP16 (structural 11×11 AND array + Dadda tree, one normalize/round/pack).
* :class:`IntDequant` -- INT4/INT2 -> FP16 by the magic number (0x6400 | y) − 1032 (or − 1026),
  the subtraction on hw's :class:`~tcgen.hw.fparith.FPAdd` (ref. [7] of the paper).
* :class:`DequantMul` -- the standard flow per weight: IntDequant then Fp16Mul.
* :class:`PacqMul` -- the parallel FP-INT multiplier (Fig. 5): one FP16 activation × one INT16
  word -> 4 (INT4) or 8 (INT2) lanes per cycle, INT4/INT2 selected at run time.  Its integer
  core, the parallel INT11 multiplier (Fig. 5c), is :func:`tcgen.hw.fpint.parallel_int_mul`
  (in tcgen.hw since issue 42: Winograd's integer EWMM uses it too; ``parallel_int_mul``,
  ``LANE_I_BITS`` and ``LANE_P_BITS`` are re-exported here).
* :class:`Dp4Baseline` -- 4 FP16 multipliers + adder tree + accumulate (Table I "FP-16 DP-4").
* :class:`Dp4Pacq` -- 4 PacqMul + D duplicated adder trees + ΣA accumulator (Table I "Parallel
  FP-INT-16 DP-4", §III-C; the paper's D = 2).

Deviations from the paper's text (all are the notes' §3.3 cases; ``mode=literal`` keeps the text):

1. The hidden-bit add is ``mA + i[14:10]`` with a 12-bit result, not a 6-bit adder on i[13:10]
   whose carry is dropped (wrong for 35.4% of (mA, y) pairs).
2. Products of A near 2 reach 2.0, and rounding can carry to 2.0, so every lane normalizes by
   one bit (the text says "normalization unnecessary").  A subnormal activation is normalized
   once, before the array (the single "normalization unit" of Table I), so lane products are
   always in [2^20, 2^22) and no lane needs a left shift.
3. Rounding is a parameter (RNE default, RTZ) since the text says "rounding ... truncated".
4. INT2 has 8 lanes, so 8 rounding units (Table I lists 4).
5. ±0, ±inf, NaN activations are handled (±0 -> ±0, ±inf -> ±inf in every lane, NaN -> NaN).

Sub-components (FPMul, FPAdd, FPConvert, PacqMul; the DP-4 lanes and tree from
tcgen.hw.dot, the codebase's one DP-4) are added with tcgen.hw.dedup.shared: generated
Verilog holds one module per distinct configuration (e.g. one PacqMul for the four of a DP-4).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.dot import Dp4Params, dot_sum, product, widen
from tcgen.hw.fparith import FPAdd, FPAddParams, FPMul, FPMulParams, round_pack, unpack
from tcgen.hw.fpint import LANE_I_BITS, LANE_P_BITS, parallel_int_mul
from tcgen.hw.intarith import lzc, shift_left
from tcgen.hw.numeric import FP16, get_format
from tcgen.hw.pipeline import Pipeline

from . import layouts
from .params import Dp4BaselineParams, Dp4PacqParams, PacqMulParams, lanes_of

__all__ = ["Fp16Mul", "IntDequant", "DequantMul", "PacqMul", "Dp4Baseline", "Dp4Pacq",
           "parallel_int_mul", "LANE_I_BITS", "LANE_P_BITS"]

class Fp16Mul(FPMul):
    """The baseline FP16 multiplier (Table I "FP16 MUL"): :class:`tcgen.hw.fparith.FPMul` at FP16.

    Parameters: ``Fp16MulParams`` (rounding, pipeline).  Attributes: a, b ``In(16)``,
    y ``Out(16)``; ``latency`` = pipeline.  Golden model: :func:`tcgen.hw.numeric.fp_mul`.
    """

    def __init__(self, params):
        self.pacq_params = params
        super().__init__(FPMulParams(fmt="fp16", rounding=params.rounding, ftz=False,
                                     pipeline=params.pipeline, cuts=params.cuts))


def _dequant_core(m, code, int2, wbits, name="dq"):
    """(0x6400 | y) + (−1032 | −1026) on one FPAdd; returns the FP16 weight."""
    add = FPAdd(FPAddParams(fmt="fp16", rounding="rne", ftz=False, pipeline=0))
    shared(m, name, add)
    y = Signal(4, name=f"{name}_y")
    neg_k = Signal(16, name=f"{name}_negk")
    if wbits == "4":
        m.d.comb += [y.eq(code[:4]), neg_k.eq(0xE408)]
    elif wbits == "2":
        m.d.comb += [y.eq(code[:2]), neg_k.eq(0xE402)]
    else:
        m.d.comb += [y.eq(Mux(int2, code[:2], code[:4])), neg_k.eq(Mux(int2, 0xE402, 0xE408))]
    m.d.comb += [add.a.eq(Cat(y, Const(0x6400 >> 4, 12))), add.b.eq(neg_k)]
    return add.y


def _code_width(wbits):
    return 2 if wbits == "2" else 4


class IntDequant(wiring.Component):
    """INT -> FP16 dequantization through the magic number (FasterTransformer, ref. [7]).

    Parameters: ``IntDequantParams`` (wbits).
    Attributes: code ``In(4)`` (``In(2)`` for wbits=2) offset-binary y = B + 8 (B + 2);
    int2 ``In(1)`` (wbits=both: 1 selects INT2, which uses code[1:0]); b ``Out(16)`` = FP16(B).
    ``latency = 0``.  Golden model: :func:`tcgen.units.pacq.model.int_dequant`.
    """

    def __init__(self, params):
        self.params = params
        self.latency = 0
        sig = {"code": In(_code_width(params.wbits))}
        if params.wbits == "both":
            sig["int2"] = In(1)
        sig["b"] = Out(16)
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        int2 = self.int2 if self.params.wbits == "both" else None
        m.d.comb += self.b.eq(_dequant_core(m, self.code, int2, self.params.wbits))
        return m


class DequantMul(wiring.Component):
    """The standard flow per weight: y = A × FP16(B), B dequantized by :class:`IntDequant`.

    Attributes: a ``In(16)``, code, [int2], y ``Out(16)``.  ``latency = 0``.
    """

    def __init__(self, params):
        self.params = params
        self.latency = 0
        sig = {"a": In(16), "code": In(_code_width(params.wbits))}
        if params.wbits == "both":
            sig["int2"] = In(1)
        sig["y"] = Out(16)
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        int2 = self.int2 if p.wbits == "both" else None
        b = _dequant_core(m, self.code, int2, p.wbits)
        mul = FPMul(FPMulParams(fmt="fp16", rounding=p.rounding, ftz=False, pipeline=0))
        shared(m, "mul", mul)
        m.d.comb += [mul.a.eq(self.a), mul.b.eq(b), self.y.eq(mul.y)]
        return m


class PacqMul(wiring.Component):
    """The parallel FP-INT multiplier: one FP16 activation × one packed INT16 word.

    Parameters: ``PacqMulParams`` (wbits, mode, rounding, pipeline).

    Attributes (L = 8 lanes if INT2 is supported, else 4; lane j of a port at bits [W·j +: W]):
      a ``In(16)`` FP16 activation; w ``In(16)`` packed offset-binary codes (lane j of INT4 at
      bits [4j+3:4j], of INT2 at [2j+1:2j]); int2 ``In(1)`` (wbits=both only: 1 = INT2).
      mode paper / literal: y ``Out(16·L)`` FP16 lanes (INT4 mode: lanes 4..7 are 0).
      mode exact: sign ``Out(1)``, exp ``Out(5)`` (E = max(e_A, 1)), p_lanes ``Out(22·L)`` with
      lane value ±p_j·2^(exp−25) = A·(1024 + y_j); is_inf, is_nan ``Out(1)`` (then p_j/exp are
      raw).  mode offset8: as exact with i_lanes ``Out(15·L)``, lane value ±i_j·2^(exp−25) =
      A·y_j (i is the paper's name for the 11b×4b intermediate result).
      ``latency`` = pipeline (cut 1 after the integer array, cut 2 before rounding).

    Datapath (paper mode), top to bottom::

        unpack A ─► normalize mA once (LZC + shift; only subnormal A moves) ─► E' = E − lz
        16×11 AND rows ─► 8 crumb adders ─► 4 nibble adders ─► lane select (int2) ─┤cut 1├─►
        per lane: hidden-bit add P = (mA << 10) + i (12-bit upper add) ─► 1-bit normalize
        (P[21]) ─► round_pack (round once, overflow -> inf, specials) ─► y_j
    """

    def __init__(self, params: PacqMulParams):
        self.params = params
        self.latency = params.latency
        L = self.lanes = lanes_of(params.wbits)
        sig = {"a": In(16), "w": In(16)}
        if params.wbits == "both":
            sig["int2"] = In(1)
        if params.mode in ("paper", "literal"):
            sig["y"] = Out(16 * L)
        else:
            sig.update({"sign": Out(1), "exp": Out(5)})
            sig["p_lanes" if params.mode == "exact" else "i_lanes"] = Out(
                (LANE_P_BITS if params.mode == "exact" else LANE_I_BITS) * L)
            sig.update({"is_inf": Out(1), "is_nan": Out(1)})
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        st = Pipeline(m, p.enabled())
        u = unpack(m, FP16, self.a, "a")
        int2 = self.int2 if p.wbits == "both" else None
        if p.mode == "paper":            # the single normalization unit: subnormal A only
            lz = lzc(m, u.sig, name="a_lzc")
            mA = shift_left(m, u.sig, lz, name="a_norm")
            e_n = Signal(signed(7), name="a_exp_norm")
            m.d.comb += e_n.eq(u.exp - lz)
        else:
            mA, e_n = u.sig, u.exp
        lanes, active = parallel_int_mul(m, mA, self.w, p.wbits, int2)
        e_raw = self.a[10:15]
        sign, mA, e_n, e_raw, is_zero, is_inf, is_nan = st(
            1, u.sign, mA, e_n, e_raw, u.is_zero, u.is_inf, u.is_nan)
        lanes = list(st(1, *lanes)) if len(lanes) > 1 else [st(1, *lanes)]
        active = list(st(1, *active))
        if p.mode == "paper":
            self._paper_lanes(m, st, sign, mA, e_n, is_zero, is_inf, is_nan, lanes, active)
        elif p.mode == "literal":
            self._literal_lanes(m, st, sign, mA, e_raw, is_zero, is_inf, is_nan, lanes, active)
        else:
            vals = []
            for j, i_j in enumerate(lanes):
                if p.mode == "exact":
                    v = Signal(LANE_P_BITS, name=f"p{j}")
                    m.d.comb += v.eq(Mux(active[j], Cat(i_j[:10], mA + i_j[10:]), 0))
                else:
                    v = i_j
                vals.append(v)
            outs = st(2, sign, e_n, is_inf, is_nan, *vals)
            m.d.comb += [self.sign.eq(outs[0]), self.exp.eq(outs[1]), self.is_inf.eq(outs[2]),
                         self.is_nan.eq(outs[3])]
            port = self.p_lanes if p.mode == "exact" else self.i_lanes
            m.d.comb += port.eq(Cat(*outs[4:]))
        return m

    def _paper_lanes(self, m, st, sign, mA, e_n, is_zero, is_inf, is_nan, lanes, active):
        outs = []
        for j, i_j in enumerate(lanes):
            P = Signal(LANE_P_BITS, name=f"P{j}")
            m.d.comb += P.eq(Cat(i_j[:10], mA + i_j[10:]))           # hidden-bit add
            frac = Signal(21, name=f"P{j}_frac")                       # below the leading one
            et = Signal(signed(8), name=f"P{j}_et")
            m.d.comb += [frac.eq(Mux(P[21], P[:21], Cat(Const(0, 1), P[:20]))),
                         et.eq(e_n + Mux(P[21], 11, 10))]
            y = round_pack(m, FP16, sign, Cat(frac, Const(1, 1)), et, mode=self.params.rounding,
                           is_nan=is_nan, is_inf=is_inf, stage=st, name=f"rnd{j}")
            outs.append(y)
        z, act = st(2, is_zero, Cat(*active))
        s2 = st(2, sign)
        for j, y in enumerate(outs):
            lane = Signal(16, name=f"y{j}")
            m.d.comb += lane.eq(Mux(~act[j], 0, Mux(z, Cat(Const(0, 15), s2), y)))
            outs[j] = lane
        m.d.comb += self.y.eq(Cat(*outs))

    def _literal_lanes(self, m, st, sign, mA, e_raw, is_zero, is_inf, is_nan, lanes, active):
        e_out = Signal(5, name="lit_exp")
        m.d.comb += e_out.eq(e_raw + 10)                  # the INT5 adder, wrapping
        outs = []
        for j, i_j in enumerate(lanes):
            s6 = Signal(6, name=f"lit_add{j}")            # the paper's 6-bit adder
            m.d.comb += s6.eq(mA[:6] + i_j[10:14])
            y = Signal(16, name=f"lit{j}")
            m.d.comb += y.eq(Mux(~active[j], 0,
                                 Mux(is_nan, FP16.nan,
                                     Mux(is_inf, Cat(Const(FP16.inf, 15), sign),
                                         Mux(is_zero, Cat(Const(0, 15), sign),
                                             Cat(s6, mA[6:10], e_out, sign))))))
            outs.append(y)
        outs = st(2, *outs)
        m.d.comb += self.y.eq(Cat(*outs))


# -- DP-4 units ------------------------------------------------------------------------------
def _acc(acc):
    return get_format(acc)


def _select(m, g, G, target, options):
    """target = options[g] (a G-way multiplexer on the beat index; a wire when G = 1)."""
    if G == 1:
        m.d.comb += target.eq(options[0])
        return
    with m.Switch(g):
        for gg in range(G):
            with m.Case(gg):
                m.d.comb += target.eq(options[gg])
        with m.Default():
            m.d.comb += target.eq(0)


class Dp4Baseline(wiring.Component):
    """The baseline FP16 DP-4 (Table I "FP-16 DP-4": 4 FP16 MUL + 4 FP16 adders).

    One operation per cycle: y = ((p0 + p1) + (p2 + p3)) + c, p_k = FP16(a_k × b_k) (RNE/RTZ),
    products widened exactly to FP32 when acc = fp32; every '+' rounds once in ``acc``.

    Parameters: ``Dp4BaselineParams`` (acc, rounding).
    Attributes: op ``In(stream.Signature(StructLayout{a: 4×16, b: 4×16, c: acc}))``,
    res ``Out(stream.Signature(StructLayout{y: acc}))``.  Pipeline: multiply | first tree
    level | second level | accumulate -> a result 3 cycles after its operation is accepted;
    one operation per cycle; ``res.ready`` low stalls the whole pipeline.
    """

    def __init__(self, params: Dp4BaselineParams):
        self.params = params
        self.latency = 3
        op, res = layouts.dp4_baseline_op(params), layouts.dp4_baseline_res(params)
        super().__init__({"op": In(stream.Signature(op)), "res": Out(stream.Signature(res))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        v1, v2, v3 = Signal(), Signal(), Signal()
        adv = Signal()
        m.d.comb += [adv.eq(~v3 | self.res.ready), self.op.ready.eq(adv)]
        with m.If(adv):
            m.d.sync += [v1.eq(self.op.valid), v2.eq(v1), v3.eq(v2)]
        pipe = Pipeline(m, advance=adv)
        dp = Dp4Params(fmt="fp16", acc=p.acc, product="rounded", rounding=p.rounding)
        prods = [pipe.reg(product(m, self.op.payload.a[k], self.op.payload.b[k], dp, k),
                          f"prod{k}") for k in range(4)]
        c1 = pipe.reg(self.op.payload.c, "c1")
        y = dot_sum(m, prods, c1, p.acc, p.rounding, "tree", pipe=pipe)
        m.d.comb += [self.res.valid.eq(v3), self.res.payload.y.eq(y)]
        return m


class Dp4Pacq(wiring.Component):
    """The PacQ DP-4 (Table I "Parallel FP-INT-16 DP-4", §III-C): 4 :class:`PacqMul` (one per
    k), D duplicated adder trees and a ΣA accumulator.

    One operation = activations a[0..3] (A[m, k0..k3]), words w[0..3] (row k_t, the same L
    output columns n0..n0+L−1), int2 (wbits=both), accumulator inputs c[0..L_max−1] and sa
    (both in ``acc``).  The multipliers hold the operation for G = L / D cycles (L = 4 INT4,
    8 INT2); in cycle g tree t sums lane j = g·D + t::

        y_t = ((p_0j + p_1j) + (p_2j + p_3j)) + c_j        p_kj = lane j of PacqMul k
        ΣA  = ((a_0 + a_1) + (a_2 + a_3)) + sa             (sum_a; every beat, same value)

    Products enter the trees in ``acc``: paper/literal FP16 lanes as they are (widened exactly
    for FP32); exact/offset8 fixed-point lanes rounded once into ``acc`` by round_pack (exact in
    FP32).  Every '+' is one FPAdd rounding in ``acc``.

    Parameters: ``Dp4PacqParams`` (wbits, D, mode, acc, rounding, sum_a).
    Attributes: op ``In(stream)`` payload {a: 4×16, w: 4×16, [int2: 1], c: L_max×acc,
    [sa: acc]}; res ``Out(stream)`` payload {y: D×acc, group: bits(G_max−1), [sa: acc]}.
    ``op.ready`` rises in the last beat of an operation.  Pipeline as :class:`Dp4Baseline`:
    a beat's result 3 cycles after it issues; back-to-back operations issue one beat per cycle
    (m2n4k4: 8 operations = 8·G beats -> 8·G + 3 cycles).
    """

    def __init__(self, params: Dp4PacqParams):
        self.params = params
        self.latency = 3
        p = params
        self.L = lanes_of(p.wbits)
        self.G = self.L // p.D
        self.group_bits = layouts.group_bits(p)
        super().__init__({"op": In(stream.Signature(layouts.dp4_pacq_op(p))),
                          "res": Out(stream.Signature(layouts.dp4_pacq_res(p)))})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        pl = self.op.payload
        G, D = self.G, p.D
        v1, v2, v3 = Signal(), Signal(), Signal()
        adv = Signal()
        g = Signal(self.group_bits, name="group")
        last = Signal()
        if p.wbits == "both":
            m.d.comb += last.eq(g == Mux(pl.int2, 8 // D - 1, 4 // D - 1))
        else:
            m.d.comb += last.eq(g == G - 1)
        m.d.comb += [adv.eq(~v3 | self.res.ready), self.op.ready.eq(adv & last)]
        with m.If(adv):
            m.d.sync += [v1.eq(self.op.valid), v2.eq(v1), v3.eq(v2)]
            with m.If(self.op.valid):
                m.d.sync += g.eq(Mux(last, 0, g + 1))
        pipe = Pipeline(m, advance=adv)
        mp = PacqMulParams(wbits=p.wbits, mode=p.mode,
                           rounding="rtz" if p.mode == "literal" else
                           (p.rounding if p.mode == "paper" else "rne"), pipeline=0)
        muls = []
        for k in range(4):
            mul = PacqMul(mp)
            shared(m, f"pmul{k}", mul)
            m.d.comb += [mul.a.eq(pl.a[k]), mul.w.eq(pl.w[k])]
            if p.wbits == "both":
                m.d.comb += mul.int2.eq(pl.int2)
            muls.append(mul)
        # select lane j = g·D + t of every multiplier and of c (a G-way mux per tree)
        trees = []
        for t in range(D):
            terms = []
            for k, mul in enumerate(muls):
                if p.mode in ("paper", "literal"):
                    sel = Signal(16, name=f"sel{k}_{t}")
                    _select(m, g, G, sel, [mul.y[16 * (gg * D + t):16 * (gg * D + t + 1)]
                                           for gg in range(G)])
                    term = widen(m, sel, "fp16", p.acc, f"widen{k}_{t}")
                else:
                    bits = LANE_P_BITS if p.mode == "exact" else LANE_I_BITS
                    port = mul.p_lanes if p.mode == "exact" else mul.i_lanes
                    sel = Signal(bits, name=f"sel{k}_{t}")
                    _select(m, g, G, sel, [port[bits * (gg * D + t):bits * (gg * D + t + 1)]
                                           for gg in range(G)])
                    term = self._fixed_to_acc(m, mul, sel, f"cvt{k}_{t}")
                terms.append(pipe.reg(term, f"prod{k}_{t}"))
            csel = Signal(len(pl.c[0]), name=f"csel{t}")
            _select(m, g, G, csel, [pl.c[gg * D + t] for gg in range(G)])
            c1 = pipe.reg(csel, f"c1_{t}")
            trees.append(dot_sum(m, terms, c1, p.acc, p.rounding, f"tree{t}", pipe=pipe))
        g1 = pipe.reg(g, "group1")
        g3 = pipe.reg(pipe.reg(g1, "group2"), "group3")
        m.d.comb += [self.res.valid.eq(v3), self.res.payload.group.eq(g3)]
        for t in range(D):
            m.d.comb += self.res.payload.y[t].eq(trees[t])
        if p.sum_a:
            a_terms = [pipe.reg(widen(m, pl.a[k], "fp16", p.acc, f"widen_a{k}"), f"a1_{k}")
                       for k in range(4)]
            sa1 = pipe.reg(pl.sa, "sa1")
            m.d.comb += self.res.payload.sa.eq(
                dot_sum(m, a_terms, sa1, p.acc, p.rounding, "sum_a", pipe=pipe))
        return m

    def _fixed_to_acc(self, m, mul, mag, name):
        """A selected exact/offset8 lane (value mag·2^(E−25)) rounded once into ``acc``."""
        p, acc = self.params, _acc(self.params.acc)
        off = len(mag) - 1
        et = Signal(signed(10), name=f"{name}_et")
        m.d.comb += et.eq(mul.exp + (off - 25 + acc.bias))
        nan = (mul.is_nan | (mul.is_inf & (mag == 0))) if p.mode == "offset8" else mul.is_nan
        return round_pack(m, acc, mul.sign, mag, et, mode=p.rounding, is_nan=nan,
                          is_inf=mul.is_inf, name=name)
