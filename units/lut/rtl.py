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

Sub-components are added with tcgen.hw.dedup.shared (one module per distinct configuration).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.dedup import shared
from tcgen.hw.fparith import FPAdd, FPAddParams, FPConvert, FPConvertParams, round_pack, unpack
from tcgen.hw.intarith import shift_left
from tcgen.hw.numeric import get_format

from .params import LutDp4Params, int_width, is_int

__all__ = ["LutDp4", "entry_width", "acc_width", "plane_bits", "table_layout"]


def entry_width(fmt: str) -> int:
    return int_width(fmt) if is_int(fmt) else get_format(fmt).width


acc_width = entry_width


def plane_bits(w_bits: int) -> int:
    """Bits of the plane index j ∈ [0, w_bits)."""
    return max(1, (w_bits - 1).bit_length())


def table_layout(p) -> data.ArrayLayout:
    """The half table: 2^(k−1) entries of the entry format, entry i at bits [w·i +: w]."""
    return data.ArrayLayout(entry_width(p.entry), 1 << (p.k - 1))


class LutDp4(wiring.Component):
    """One plane step of the LUT unit: ``y = c + (sign ? −1 : +1) · lut[idx] · 2^plane``.

    Parameters: :class:`~tcgen.units.lut.params.LutDp4Params` (k, entry, acc, w_bits,
    rounding, scale).  Attributes: lut ``In(table_layout)`` (the half table), sign ``In(1)``, idx ``In(k−1)``,
    plane ``In(plane_bits(w_bits))``, c ``In(acc)``, y ``Out(acc)``; ``latency`` = 0.
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
        m.d.comb += e.eq(self.lut[self.idx])                  # the 2^(k-1):1 multiplexer
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
            u = unpack(m, fa, wide, "sc")
            et = Signal(signed(eb + len(self.plane) + 2), name="sc_et")
            m.d.comb += et.eq(u.exp + self.plane)
            m.d.comb += scaled.eq(round_pack(m, fa, sgn, u.sig, et, mode=p.rounding,
                                             is_nan=u.is_nan, is_inf=u.is_inf, name="sc"))
        add = shared(m, "acc_add", FPAdd(FPAddParams(fmt=p.acc, rounding=p.rounding, ftz=False,
                                                     pipeline=0)))
        m.d.comb += [add.a.eq(self.c), add.b.eq(scaled), self.y.eq(add.y)]
        return m
