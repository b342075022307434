"""The parallel FP-INT multiplier's integer core (PacQ, Yin, Li, Panda, §III-B, Fig. 5c), shared
by the families that multiply one activation by a packed word of integer weights: PacQ's
``pacq_mul`` / ``dp4_pacq`` (units/pacq) and Winograd's ``wino_conv ewmm=pacq``
(units/winograd).  Golden model: :mod:`tcgen.hw.fpint_ref` (numpy only; its docstring has the
lane configurations ``wbits``).

* :func:`parallel_int_mul` -- mA (a bits) × every lane of one 16-bit word.
* :class:`LaneDot` -- four of them summed per lane onto integer accumulators, with the ΣA
  accumulator of the offset correction: PacQ's DP-4 (``dp4_pacq`` mode offset8: ΣA tree, sums
  per lane) in exact integers, for integer activations in sign-magnitude form.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.fpint_ref import (WBITS_ALL, lane_bits_of, lanes_of, supports_int2,
                                supports_int4)
from tcgen.hw.intarith import sum_operands
from tcgen.hw.params import Params, param

__all__ = ["parallel_int_mul", "LANE_I_BITS", "LANE_P_BITS", "LaneDotParams", "LaneDot",
           "WBITS_ALL", "lanes_of", "lane_bits_of", "supports_int2", "supports_int4"]

LANE_I_BITS = 15       # i_j = mA·y_j: ≤ 2047·15 (INT4); INT2 lanes use 13 of them
LANE_P_BITS = 22       # P_j = mA·(1024 + y_j) ≤ 2047·1039 < 2^22


def parallel_int_mul(m: Module, mA, word, wbits: str, int2, name="pmul"):
    """The parallel INT11 multiplier (Fig. 5c): mA (11 b in PacQ; a = len(mA) bits in general)
    × every lane of one INT16 word.

    Bit b of the word ANDs a copy of mA (16 rows of a AND gates).  Crumb j (bits 2j+1:2j) is
    summed by one adder: c_j = row_{2j} + (row_{2j+1} << 1) = mA·y2_j (a + 2 b) -- the INT2 lanes.
    An INT4 lane q joins its two crumbs with one more adder: mA·y4_q = c_{2q} + (c_{2q+1} << 2)
    (a + 4 b) -- 3 adders per INT4 lane, 12 in all, as in Table I.  No carry crosses a lane.
    wbits "8" / "16" (not in the paper) join lanes further: an INT8 lane r is
    n_{2r} + (n_{2r+1} << 4) (a + 8 b, 2 more adders), the INT16 lane b_0 + (b_1 << 8) (a + 16 b,
    one more).

    Returns (lanes, active): L = :func:`lanes_of` (8 when INT2 is supported) lane values of
    a + 4 bits (``LANE_I_BITS`` at a = 11; a + 8 / a + 16 for wbits 8 / 16), selected by
    ``int2`` when both INT4 and INT2 are supported, and the lane-active bits (INT4 mode leaves
    lanes 4..7 inactive and zero).  Golden model: :func:`tcgen.hw.fpint_ref.parallel_int_mul`.
    """
    a = len(mA)
    rows = []
    for b in range(16):
        r = Signal(a, name=f"{name}_row{b}")
        m.d.comb += r.eq(mA & word[b].replicate(a))
        rows.append(r)
    crumbs = [sum_operands(m, [rows[2 * j], Cat(Const(0, 1), rows[2 * j + 1])], a + 2,
                           name=f"{name}_c{j}") for j in range(8)]
    nib = []
    if wbits != "2":
        nib = [sum_operands(m, [crumbs[2 * q], Cat(Const(0, 2), crumbs[2 * q + 1])],
                            a + 4, name=f"{name}_n{q}") for q in range(4)]
    if wbits in ("8", "16"):
        byte = [sum_operands(m, [nib[2 * r], Cat(Const(0, 4), nib[2 * r + 1])], a + 8,
                             name=f"{name}_b{r}") for r in range(2)]
        if wbits == "8":
            return byte, [Const(1, 1)] * 2
        half = sum_operands(m, [byte[0], Cat(Const(0, 8), byte[1])], a + 16, name=f"{name}_h0")
        return [half], [Const(1, 1)]
    L = lanes_of(wbits)
    lanes, active = [], []
    for j in range(L):
        v = Signal(a + 4, name=f"{name}_lane{j}")
        act = Signal(name=f"{name}_act{j}")
        if wbits == "4":
            m.d.comb += [v.eq(nib[j]), act.eq(1)]
        elif wbits == "2":
            m.d.comb += [v.eq(crumbs[j]), act.eq(1)]
        elif j < 4:
            m.d.comb += [v.eq(Mux(int2, crumbs[j], nib[j])), act.eq(1)]
        else:
            m.d.comb += [v.eq(Mux(int2, crumbs[j], 0)), act.eq(int2)]
        lanes.append(v)
        active.append(act)
    return lanes, active


@dataclass(frozen=True)
class LaneDotParams(Params):
    UNIT = "lane_dot"
    wbits: str = param("8", choices=("4", "2", "8", "16"),
                       doc="lane configuration of the parallel multipliers (fixed width)")
    act_bits: int = param(11, range=(1, 11), doc="activation magnitude bits (PacQ: 11)")
    acc_bits: int = param(24, range=(2, 64), doc="lane accumulators, modulo 2^acc_bits")
    sa_bits: int = param(16, range=(1, 64), doc="the ΣA accumulator, modulo 2^sa_bits")

    @property
    def lanes(self) -> int:
        return lanes_of(self.wbits)

    @property
    def width(self) -> int:
        """Bits of ``c`` / ``y``: lanes·acc_bits + sa_bits."""
        return self.lanes * self.acc_bits + self.sa_bits


class LaneDot(wiring.Component):
    """Four parallel multipliers summed lane by lane (PacQ's DP-4 in integers):

        acc_j' = acc_j + Σ_t (−1)^s_t · mag_t · y_tj     (mod 2^acc_bits, j = 0 .. L − 1)
        ΣA'    = ΣA + Σ_t (−1)^s_t · mag_t               (mod 2^sa_bits)

    y_tj is lane j of word b[t] (:func:`parallel_int_mul`).  Each signed term enters its
    lane's compressor tree as (i XOR s) plus the carry-in s (two's complement negation in the
    tree), so one tree per lane and one for ΣA sum four terms and the running value.

    Parameters: :class:`LaneDotParams`.  Attributes (the port names of
    :class:`tcgen.hw.dot.Dp4`, so a DP-4 schedule drives it): a ``In(ArrayLayout(act_bits + 1,
    4))`` (magnitude in the low act_bits, the sign on top), b ``In(ArrayLayout(16, 4))``
    (packed words), c / y ``In`` / ``Out(width)``: Cat(acc_0, .., acc_{L−1}, ΣA).
    ``latency = 0``.  Golden model: :func:`tcgen.units.winograd.model.ewmm_pacq`'s chunk step.
    """

    def __init__(self, params: LaneDotParams):
        self.params = params
        self.latency = 0
        a = params.act_bits
        super().__init__({"a": In(data.ArrayLayout(a + 1, 4)), "b": In(data.ArrayLayout(16, 4)),
                          "c": In(params.width), "y": Out(params.width)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        A, W, SW, L = p.act_bits, p.acc_bits, p.sa_bits, p.lanes
        mags, sgns, prods = [], [], []
        for t in range(4):
            v = self.a[t]
            mag, s = v[:A], v[A]
            mags.append(mag)
            sgns.append(s)
            lanes, _ = parallel_int_mul(m, mag, self.b[t], p.wbits, None, name=f"pm{t}")
            prods.append(lanes)
        outs = []
        for j in range(L):
            ops = [self.c[j * W:(j + 1) * W]]
            for t in range(4):
                x = Signal(W, name=f"t{t}_{j}")
                m.d.comb += x.eq(prods[t][j] ^ sgns[t].replicate(W))
                ops += [x, sgns[t]]
            outs.append(sum_operands(m, ops, W, name=f"acc{j}"))
        ops = [self.c[L * W:]]
        for t in range(4):
            x = Signal(SW, name=f"a{t}")
            m.d.comb += x.eq(mags[t] ^ sgns[t].replicate(SW))
            ops += [x, sgns[t]]
        outs.append(sum_operands(m, ops, SW, name="sum_a"))
        m.d.comb += self.y.eq(Cat(*outs))
        return m
