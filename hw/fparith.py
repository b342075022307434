"""Floating-point datapaths: unpack/classify, normalize-round-pack, adder, multiplier, converter.

Any :class:`tcgen.hw.numeric.FloatFormat` (FP32, FP16, BF16, OCP FP8 E4M3/E5M2), RNE or RTZ,
subnormals in and out (optionally DAZ/FTZ), canonical NaN, overflow per :mod:`tcgen.hw.numeric`.
The golden models are :func:`tcgen.hw.numeric.fp_add`, :func:`~tcgen.hw.numeric.fp_mul` and
:func:`~tcgen.hw.numeric.fp_convert`; the RTL has exactly one rounding point per operation, as
they do.

Datapath (both ops)::

    unpack a, b ──► align ──┤align (3)├──► add                                   ──┤sum (1)├──►
    unpack a, b ──► partial products, Dadda tree ──┤tree (3)├──► carry-propagate ──┤product (1)├──►
    leading-zero count ──┤lzc (4)├──► left/right shift with sticky ──┤shift (2)├──►
    round increment + pack + specials

``pipeline`` = 0 (combinational), 1 (register at cut 1) or 2 (cuts 1 and 2); ``cuts`` names any
set of the four cut points instead (``cuts=product+shift`` is ``pipeline=2``; ``cuts=auto``: the
set chosen for a clock, docs/pipelining.md); ``latency`` is the number of cuts.  The converter
has the cuts lzc and shift (``pipeline=1``: shift); ``norm=early`` multipliers have no lzc cut
(their count is taken beside the multiplier).
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import numeric as num
from .dedup import shared
from .intarith import (CPA_TOPOLOGIES, array_mul, booth_mul, lzc, shift_left,
                       shift_right_sticky, tree_param)
from .numeric import FloatFormat, get_format
from .params import Params, param
from .pipeline import CutPoints, Pipeline, cuts_param

__all__ = ["Unpacked", "unpack", "round_pack", "scale_pow2", "add_tree", "FPAdd", "FPMul",
           "FPProduct", "FPConvert", "FPAddParams", "FPMulParams", "FPProductParams",
           "FPConvertParams", "FORMAT_NAMES"]

FORMAT_NAMES = tuple(num.FORMATS)
#: ``FPMul mult=auto``: radix-4 Booth from this many significand bits (FP16's 11), the AND
#: array below -- at BF16's 8 bits Booth's recoding cost more than the rows it saves on two
#: of three liberties (reports/fp_mul.md)
BOOTH_FROM_BITS = 11


def resolved_mult(mult: str, fmt: FloatFormat) -> str:
    """``FPMul``'s ``mult`` as built at ``fmt``: ``auto`` is booth4 from
    :data:`BOOTH_FROM_BITS` significand bits, array below; the others as they are."""
    if mult != "auto":
        return mult
    return "booth4" if fmt.precision >= BOOTH_FROM_BITS else "array"


# -- parameters --------------------------------------------------------------------------------
def technique_param(choices: tuple, doc: str):
    """A technique field of issue 43 -- ``isolate`` (operand isolation), ``gate`` (the
    normalization and subnormal paths held still) -- whose default ``none`` stays off the cache
    key and the module names."""
    return param("none", choices=("none", *choices), key_default=False, doc=doc)


@dataclass(frozen=True)
class FPAddParams(CutPoints, Params):
    UNIT = "fp_add"
    CUT_POINTS = (("align", 3), ("sum", 1), ("lzc", 4), ("norm", 6), ("shift", 2))
    fmt: str = param("fp16", choices=FORMAT_NAMES, doc="number format")
    rounding: str = param("rne", choices=num.MODES, doc="rne or rtz")
    ftz: bool = param(False, doc="flush subnormal inputs and results to zero")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages (= latency)")
    cuts: str = cuts_param()
    isolate: str = technique_param(("far", "specials", "far+specials"),
                                 "operand isolation of idle paths (issue 43): far (the alignment "
                                 "shifter's input held at 0 when the smaller operand shifts wholly "
                                 "into the sticky bit), specials (both significands held at 0 when "
                                 "an operand is inf or NaN), both, or none")
    gate: str = technique_param(("norm", "subnormal", "norm+subnormal"),
                                "the normalization and subnormal paths held still (issue 43): "
                                "norm (a sum that cannot cancel -- an effective addition, or "
                                "exponents 2 or more apart, the larger operand normal: at most 2 "
                                "leading zeros -- normalized by a 2-bit shift beside the general "
                                "leading-zero count and left shift, whose input is held at 0), "
                                "subnormal (the right shift of underflowing results held at 0 "
                                "unless the result underflows), both, or none")


@dataclass(frozen=True)
class FPMulParams(FPAddParams):
    UNIT = "fp_mul"
    CUT_POINTS = (("tree", 3), ("product", 1), ("lzc", 4), ("norm", 6), ("shift", 2))
    # the defaults are the issue-17 library (reports/fp_mul.md); norm=late, mult=array,
    # rshift=wide are the multiplier before it, measured beside (reports/peers.md)
    norm: str = param("early", choices=("late", "early"), key_default=False,
                      doc="normalization of the product: early (leading zeros counted on the "
                          "two significands, beside the multiplier; a 1-bit correction after "
                          "it) or late (counted on the product, after the multiplier)")
    mult: str = param("auto", choices=("auto", "array", "booth4"), key_default=False,
                      doc="the significand product: array (AND partial products), booth4 "
                          "(radix-4 modified Booth: about half as many rows) or auto (booth4 "
                          "from 11 significand bits, FP16 and FP32; array below, BF16 and "
                          "FP8), one compressor tree")
    rshift: str = param("narrow", choices=("wide", "narrow"), key_default=False,
                        doc="the right shift of subnormal results: narrow (p + 2 bits, the "
                            "rest ORed into the sticky bit first) or wide (the whole product)")
    cpa: str = param("auto", choices=CPA_TOPOLOGIES, key_default=False,
                     doc="the significand product's carry-propagate adder: auto (Yosys's $add) "
                         "or a structural ripple, sklansky, kogge_stone or brent_kung prefix "
                         "adder")
    tree: str = tree_param("the significand product's compressor tree: dadda (full and half "
                           "adders), gkl (Goncharov-Kulikov-Levtsov MDFA blocks on bit pairs) "
                           "or tdm (Oklobdzija's three-greedy: adders chosen on arrival times, "
                           "paths balanced)")
    isolate: str = technique_param(("specials",),
                                 "operand isolation (issue 43): specials (both significands held "
                                 "at 0, before the multiplier and the leading-zero counts, when an "
                                 "operand is zero, inf or NaN: the product's significand is not "
                                 "used) or none")
    gate: str = technique_param(("norm", "subnormal", "norm+subnormal"),
                                "the normalization and subnormal paths held still (issue 43): "
                                "norm (a product of two normal significands, at most 1 leading "
                                "zero, normalized by a 1-bit step beside the general leading-zero "
                                "count and left shift, whose input is held at 0), subnormal (the "
                                "right shift of underflowing results held at 0 unless the result "
                                "underflows), both, or none")
    rinc: str = param("add", choices=("add", "compound"), key_default=False,
                      doc="the round increment: add (the round decision added to the packed "
                          "result) or compound (the packed result and its +1 side by side, "
                          "the decision selecting: its logic off the carry chain)")

    def cut_points(self):
        if self.norm == "early":       # the count sits beside the multiplier: no lzc cut
            return tuple(c for c in self.CUT_POINTS if c[0] != "lzc")
        return self.CUT_POINTS


@dataclass(frozen=True)
class FPProductParams(CutPoints, Params):
    UNIT = "fp_product"
    CUT_POINTS = FPMulParams.CUT_POINTS
    fmt: str = param("fp16", choices=FORMAT_NAMES, doc="operand format")
    dst: str = param("fp32", choices=FORMAT_NAMES,
                     doc="product format (must hold every product of two fmt values exactly)")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages (= latency)")
    cuts: str = cuts_param()
    mult: str = param("array", choices=("array", "booth4"), key_default=False,
                      doc="the significand product: array (AND partial products) or booth4 "
                          "(radix-4 modified Booth), as fp_mul's")
    tree: str = tree_param("the significand product's compressor tree, as fp_mul's (dadda, gkl "
                           "or tdm)")
    isolate: str = technique_param(("specials",),
                                 "operand isolation, as fp_mul's (both significands held at 0 for "
                                 "a zero, inf or NaN operand) or none")
    gate: str = technique_param(("norm",),
                                "the normalization path held still, as fp_mul's: norm (two normal "
                                "significands: a 1-bit step beside the general count and shift, "
                                "their input held at 0) or none (no subnormal choice: every "
                                "product is normal in dst, so its right shift never moves)")

    def check(self):
        if not num.product_is_exact(get_format(self.fmt), get_format(self.dst)):
            raise self.error("dst", self.dst, f"a format holding every {self.fmt} × "
                                              f"{self.fmt} product exactly (fp16: fp32)")


@dataclass(frozen=True)
class FPConvertParams(CutPoints, Params):
    UNIT = "fp_convert"
    CUT_POINTS = (("lzc", 4), ("norm", 6), ("shift", 2))
    PIPELINE_CUTS = (2,)
    src: str = param("fp32", choices=FORMAT_NAMES, doc="source format")
    dst: str = param("fp16", choices=FORMAT_NAMES, doc="destination format")
    rounding: str = param("rne", choices=num.MODES, doc="rne or rtz")
    saturate: bool = param(False, doc="overflow and inf go to ±max finite")
    ftz: bool = param(False, doc="flush subnormal inputs and results to zero")
    pipeline: int = param(0, range=(0, 1), doc="pipeline register stages (= latency)")
    cuts: str = cuts_param()

    def check(self):
        if self.src == self.dst:
            raise self.error("dst", self.dst, f"a format other than src ({self.src})")


@dataclass
class Unpacked:
    """Fields of one operand.  ``sig`` has the hidden bit at position man_bits; ``exp`` is the
    effective biased exponent max(E, 1), so value = sig · 2**(exp - bias - man_bits)."""
    sign: Signal
    exp: Signal
    sig: Signal
    is_zero: Signal
    is_inf: Signal
    is_nan: Signal


def unpack(m: Module, fmt: FloatFormat, x, name: str, daz: bool = False) -> Unpacked:
    """Classify an encoding (``daz``: subnormals read as zero of the same sign)."""
    man, eb = fmt.man_bits, fmt.exp_bits
    sign = Signal(name=f"{name}_sign")
    e = Signal(eb, name=f"{name}_efield")
    f = Signal(man, name=f"{name}_frac")
    m.d.comb += [sign.eq(x[-1]), e.eq(x[man:man + eb]), f.eq(x[:man])]
    is_sub = (e == 0) & (f != 0)
    u = Unpacked(sign=sign, exp=Signal(eb, name=f"{name}_exp"),
                 sig=Signal(man + 1, name=f"{name}_sig"), is_zero=Signal(name=f"{name}_zero"),
                 is_inf=Signal(name=f"{name}_inf"), is_nan=Signal(name=f"{name}_nan"))
    top = e == fmt.exp_all_ones
    if fmt.ieee:
        m.d.comb += [u.is_nan.eq(top & (f != 0)), u.is_inf.eq(top & (f == 0))]
    else:
        m.d.comb += [u.is_nan.eq(top & (f == fmt.man_mask)), u.is_inf.eq(0)]
    frac = Mux(is_sub, 0, f) if daz else f
    m.d.comb += [
        u.is_zero.eq((e == 0) & ((f == 0) | daz)),
        u.exp.eq(Mux(e == 0, 1, e)),
        u.sig.eq(Cat(frac, e != 0)),
    ]
    return u


def round_pack(m: Module, fmt: FloatFormat, sign, mag, et, *, sticky_in=Const(0, 1),
               mode: str = "rne", ftz: bool = False, saturate: bool = False,
               is_nan=Const(0, 1), is_inf=Const(0, 1), inf_sign=None, stage=None,
               lz_hint=None, narrow: bool = False, compound: bool = False,
               overflow_inf: bool = False, fast=None, fast_lz: int = 1,
               gate_under: bool = False, name: str = "rnd"):
    """Normalize, round once and pack ±mag·2**(et - bias - (len(mag) - 1)) into ``fmt``.

    ``et`` is the biased exponent the MSB of ``mag`` would carry (signed Value); ``sticky_in``
    says a nonzero remainder lies below the LSB of ``mag`` (it must lie below the rounding
    position, which holds when len(mag) >= precision + 2 bits are significant).  Subnormal
    results are shifted right with sticky; overflow gives ±inf (RNE), ±max (RTZ or saturate),
    NaN for E4M3 (RNE).  ``is_nan``/``is_inf`` override the result (inf gets ``inf_sign``).
    ``lz_hint``: the leading zeros of ``mag`` known early, to within one (``lz - 1 <= lz_hint <=
    lz`` for a nonzero ``mag``; a product's: the sum of its factors' leading zeros): no count
    on ``mag``; the shift by the hint is controlled early and a 1-bit step after it finishes
    the normalization (FPMul ``norm="early"``).  ``narrow``: the bits below the round bit are
    ORed into one sticky bit before the right shift (subnormal results), which then shifts
    p + 2 bits instead of len(mag) -- the same result (FPMul ``rshift="narrow"``).
    ``compound``: the packed result and its + 1 are formed side by side and the round decision
    selects one (a compound incrementer: the decision's round/sticky logic no longer feeds the
    carry chain) instead of adding the decision -- the same result (FPMul ``rinc="compound"``).
    ``overflow_inf`` (an IEEE ``fmt``): overflow gives ±inf in every mode, RTZ included (the
    tensor cores' rule, measured: docs/silicon.md).
    ``fast`` (a 1-bit Value; issue 43's ``gate=norm``): the caller guarantees that ``mag`` has
    at most ``fast_lz`` leading zeros while it is set (a product of two normal significands:
    1; a sum that cannot cancel: 2).  Such a ``mag`` is normalized by a ``fast_lz``-bit shift
    beside the general path, whose leading-zero count (or ``lz_hint``) and full left shift
    see 0 meanwhile -- the same result.  ``gate_under`` (``gate=subnormal``): the right shift
    of underflowing results sees 0 unless the result's exponent underflows -- the same result.
    Returns the encoding as a Signal of ``fmt.width`` bits.
    """
    p, man = fmt.precision, fmt.man_bits
    if len(mag) < p + 2:                       # room for the round bit and a sticky bit
        pad = p + 2 - len(mag)
        mag = Cat(Const(0, pad), mag)
    w = len(mag)
    general = mag if fast is None else _isolated(m, fast, mag, f"{name}_gmag")
    lz = lzc(m, general, name=f"{name}_lzc") if lz_hint is None else lz_hint
    if stage is not None:          # cut 4 (lzc): a wire unless the datapath enables it
        sign, mag, lz, et, is_nan, is_inf, sticky_in = stage(
            4, sign, mag, lz, et, is_nan, is_inf, sticky_in)
        if inf_sign is not None:
            inf_sign = stage(4, inf_sign)
        general = mag
        if fast is not None:
            fast = stage(4, fast)
            general = _isolated(m, fast, mag, f"{name}_gmag4")
    ew = max(len(et) + 1, w.bit_length() + 2, fmt.exp_bits + 2)
    et_m1 = Signal(signed(ew), name=f"{name}_et_m1")
    m.d.comb += et_m1.eq(et - 1)
    lshift = Signal(max(len(lz), w.bit_length()), name=f"{name}_lshift")
    rshift = Signal(ew, name=f"{name}_rshift")
    if lz_hint is None:
        m.d.comb += [
            lshift.eq(Mux(et_m1 < 0, 0, Mux(lz <= et_m1, lz, et_m1))),
            rshift.eq(Mux(et_m1 < 0, -et_m1, 0)),
        ]
        shifted_l = shift_left(m, general, lshift, name=f"{name}_shl")
    else:                           # shift by the early hint, then one more bit if needed
        hint = Signal(len(lshift), name=f"{name}_lshift0")
        m.d.comb += hint.eq(Mux(et_m1 < 0, 0, Mux(lz <= et_m1, lz, et_m1)))
        pre = shift_left(m, general, hint, name=f"{name}_shl")
        more = Signal(name=f"{name}_more")
        shifted_l = Signal(w, name=f"{name}_shl1")
        m.d.comb += [more.eq(~pre[w - 1] & (hint < et_m1)),
                     shifted_l.eq(Mux(more, pre << 1, pre)),
                     lshift.eq(hint + more),
                     rshift.eq(Mux(et_m1 < 0, -et_m1, 0))]
    if fast is not None:            # the short normalization beside the general one
        lz_f = lzc(m, mag[w - 1 - fast_lz:], name=f"{name}_lzf")
        ls_f = Signal(len(lz_f), name=f"{name}_lshiftf")
        m.d.comb += ls_f.eq(Mux(et_m1 < 0, 0, Mux(lz_f <= et_m1, lz_f, et_m1)))
        sh_f = shift_left(m, mag, ls_f, name=f"{name}_shlf")
        sel_l, sel_s = Signal(len(lshift), name=f"{name}_lshiftg"), Signal(w, name=f"{name}_shlg")
        m.d.comb += [sel_l.eq(Mux(fast, ls_f, lshift)), sel_s.eq(Mux(fast, sh_f, shifted_l))]
        lshift, shifted_l = sel_l, sel_s
    if stage is not None:          # cut 6 (norm): between the left and the right shift
        sign, shifted_l, rshift, lshift, et, et_m1, is_nan, is_inf, sticky_in = stage(
            6, sign, shifted_l, rshift, lshift, et, et_m1, is_nan, is_inf, sticky_in)
        if inf_sign is not None:
            inf_sign = stage(6, inf_sign)
    under = None
    if gate_under:                  # the right shift sees 0 unless the result underflows
        under = Signal(name=f"{name}_under")
        m.d.comb += under.eq(et_m1 < 0)
    if not narrow:
        norm, st_r = _shift_right_gated(m, shifted_l, rshift, under, f"{name}_shr")
    e_msb = Signal(signed(ew + 1), name=f"{name}_emsb")
    m.d.comb += e_msb.eq(Mux(et_m1 < 0, 1, et - lshift))
    kept = Signal(p, name=f"{name}_kept")
    rbit = Signal(name=f"{name}_rbit")
    sticky = Signal(name=f"{name}_sticky")
    if narrow:       # the bits below the round bit ORed into one first: a (p + 2)-bit shift
        low = Signal(name=f"{name}_low")
        m.d.comb += low.eq(shifted_l[:w - p - 1].any())
        nrw, st_r = _shift_right_gated(m, Cat(low, shifted_l[w - p - 1:]), rshift, under,
                                       f"{name}_shr")
        m.d.comb += [kept.eq(nrw[2:]), rbit.eq(nrw[1]), sticky.eq(nrw[0] | st_r | sticky_in)]
    else:
        m.d.comb += [kept.eq(norm[w - p:]), rbit.eq(norm[w - p - 1]),
                     sticky.eq(norm[:w - p - 1].any() | st_r | sticky_in)]
    e_pre = Signal(ew, name=f"{name}_epre")        # biased exponent field before rounding
    m.d.comb += e_pre.eq(Mux(kept[p - 1], e_msb, 0))
    if stage is not None:
        sign, kept, rbit, sticky, e_pre, is_nan, is_inf = stage(
            2, sign, kept, rbit, sticky, e_pre, is_nan, is_inf)
        if inf_sign is not None:
            inf_sign = stage(2, inf_sign)
    inc = (rbit & (sticky | kept[0])) if mode == "rne" else Const(0, 1)
    packed = Signal(man + ew, name=f"{name}_packed")
    if compound and mode == "rne":
        plus1 = Signal(man + ew, name=f"{name}_plus1")
        m.d.comb += [plus1.eq(Cat(kept[:man], e_pre) + 1),
                     packed.eq(Mux(inc, plus1, Cat(kept[:man], e_pre)))]
    else:
        m.d.comb += packed.eq(Cat(kept[:man], e_pre) + inc)
    e_res = packed[man:]
    overflow = Signal(name=f"{name}_overflow")
    if fmt.max_man_at_max_exp == fmt.man_mask:      # IEEE: overflow = exponent past the top
        m.d.comb += overflow.eq(e_res > fmt.max_exp_field)
    else:                                           # E4M3: S.1111.111 is NaN, not a number
        m.d.comb += overflow.eq((e_res > fmt.max_exp_field) | (
            (e_res == fmt.max_exp_field) & (packed[:man] > fmt.max_man_at_max_exp)))
    if overflow_inf and fmt.ieee and not saturate:
        ovf_enc = fmt.inf
    elif mode == "rtz" or saturate:
        ovf_enc = fmt.max_finite
    else:
        ovf_enc = fmt.inf if fmt.ieee else fmt.nan
    body = Signal(fmt.width - 1, name=f"{name}_body")
    m.d.comb += body.eq(Mux(overflow, ovf_enc, packed[:fmt.width - 1]))
    if ftz:
        body_f = Signal(fmt.width - 1, name=f"{name}_body_ftz")
        m.d.comb += body_f.eq(Mux(body[man:] == 0, 0, body))
        body = body_f
    out = Signal(fmt.width, name=f"{name}_out")
    res = Cat(body, sign)
    if not fmt.ieee and not (mode == "rtz" or saturate):
        res = Mux(overflow, fmt.nan, res)
    if fmt.ieee:
        inf_enc = Cat(Const(fmt.inf, fmt.width - 1), inf_sign if inf_sign is not None else sign)
    elif saturate:
        inf_enc = Cat(Const(fmt.max_finite, fmt.width - 1),
                      inf_sign if inf_sign is not None else sign)
    else:
        inf_enc = Const(fmt.nan, fmt.width)
    m.d.comb += out.eq(Mux(is_nan, fmt.nan, Mux(is_inf, inf_enc, res)))
    return out


def _shift_right_gated(m: Module, value, amount, under, name: str):
    """:func:`shift_right_sticky` of ``value``; with ``under`` (a 1-bit Value; ``amount`` is 0
    while it is clear) the shifter sees 0 unless ``under`` is set and ``value`` passes
    beside it (round_pack's ``gate_under``)."""
    if under is None:
        return shift_right_sticky(m, value, amount, name=name)
    shifted, sticky = shift_right_sticky(m, _isolated(m, ~under, value, f"{name}_gin"), amount,
                                         name=name)
    out = Signal(len(value), name=f"{name}_gout")
    m.d.comb += out.eq(Mux(under, shifted, value))
    return out, sticky


def scale_pow2(m: Module, fmt: FloatFormat, x, amount, *, sign=None, mode: str = "rne",
               name: str = "sc"):
    """x · 2^amount in ``fmt`` (``amount``: an unsigned Value or an int of either sign): the
    exponent moved by ``amount`` and the result renormalized and rounded by
    :func:`round_pack`, so it is right at ±0 (stays ±0), subnormals (shifted into the normal
    range, not mis-scaled), overflow (±inf under RNE, ±max under RTZ), underflow (a negative
    amount: exact unless the result is subnormal with bits lost, then rounded -- FP16
    ½·2^−24 -> +0 under RNE) and NaN/inf.  ``sign`` overrides the result's sign (a negation
    folded in for free).  Golden model: :func:`tcgen.hw.numeric.fp_scale_pow2`."""
    u = unpack(m, fmt, x, name)
    if isinstance(amount, int) and amount < 0:
        et = Signal(signed(fmt.exp_bits + 2), name=f"{name}_et")
        m.d.comb += et.eq(u.exp - (-amount))
    else:
        amt = (Const(amount, max(1, int(amount).bit_length())) if isinstance(amount, int)
               else amount)
        et = Signal(signed(fmt.exp_bits + len(amt) + 2), name=f"{name}_et")
        m.d.comb += et.eq(u.exp + amt)
    return round_pack(m, fmt, u.sign if sign is None else sign, u.sig, et, mode=mode,
                      is_nan=u.is_nan, is_inf=u.is_inf, name=name)


def add_tree(m: Module, terms, params: "FPAddParams", name: str = "add", *, stage=None,
             level_params=None):
    """The pairwise FP adder tree ((t0 + t1) + (t2 + t3)) ...: level by level, an odd last term
    carried to the next level; one :class:`FPAdd` (``params``, or ``level_params(level)``) per
    '+', added with tcgen.hw.dedup.shared as ``{name}{level}_{i}``.  ``stage(level, values) ->
    values`` runs after each level (e.g. pipeline registers).  Returns the sum (a single term
    is returned as it is).  Golden model: :func:`tcgen.hw.numeric.pairwise_sum` with
    ``fp_add``."""
    terms, level = list(terms), 0
    while len(terms) > 1:
        nxt = []
        for t in range(0, len(terms) - 1, 2):
            add = shared(m, f"{name}{level}_{t // 2}",
                         FPAdd(params if level_params is None else level_params(level)))
            m.d.comb += [add.a.eq(terms[t]), add.b.eq(terms[t + 1])]
            nxt.append(add.y)
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = stage(level, nxt) if stage is not None else nxt
        level += 1
    return terms[0]


class _FPBinary(wiring.Component):
    """What :class:`FPMul` and :class:`FPAdd` share: ``a``, ``b`` ``In(fmt.width)``, ``y``
    ``Out(fmt.width)``, ``latency`` = pipeline (register cuts 1 and 2 of the module doc)."""

    def __init__(self, params):
        self.params = params
        self.fmt = get_format(params.fmt)
        self.latency = params.latency
        w = self.fmt.width
        super().__init__({"a": In(w), "b": In(w), "y": Out(w)})


class FPMul(_FPBinary):
    """IEEE-754 multiplier ``y = round(a × b)`` for any :class:`FloatFormat`.

    Significands are multiplied by a structural multiplier (:func:`tcgen.hw.intarith.booth_mul`
    from 11 significand bits, :func:`~tcgen.hw.intarith.array_mul` below: ``mult=auto``) so PPA
    compares like with like.  Golden model: :func:`tcgen.hw.numeric.fp_mul`.

    Parameters: ``FPMulParams`` (fmt, rounding, ftz, pipeline, cuts; the datapath's techniques,
    issue 17: norm -- ``early`` takes the product's leading zeros from the significands' beside
    the multiplier, ``late`` counts them after it; mult; rshift; cpa; tree -- docs/peers.md;
    issue 43: isolate, gate -- docs/peers.md, "Energy with glitches").
    Attributes: a, b ``In(fmt.width)``; y ``Out(fmt.width)``; ``latency`` = pipeline.
    """

    def elaborate(self, platform):
        m = Module()
        p = self.params
        st = Pipeline(m, p.enabled())
        m.d.comb += self.y.eq(_multiply(m, self.fmt, self.fmt, self.a, self.b, mode=p.rounding,
                                        ftz=p.ftz, stage=st, norm=p.norm,
                                        narrow=p.rshift == "narrow", mult=p.mult, cpa=p.cpa,
                                        tree=p.tree, compound=p.rinc == "compound",
                                        isolate=p.isolate == "specials", gate=p.gate))
        return m


def _isolated(m: Module, idle, sig, name: str) -> Signal:
    """``sig`` held at 0 while ``idle`` (operand isolation: the logic it feeds stops toggling
    for results that do not use it)."""
    out = Signal(len(sig), name=name)
    m.d.comb += out.eq(Mux(idle, 0, sig))
    return out


def _multiply(m: Module, fmt: FloatFormat, dst: FloatFormat, x, y, *, mode: str, ftz: bool,
              stage, norm: str = "late", narrow: bool = False, mult: str = "array",
              cpa: str = "auto", tree: str = "dadda", compound: bool = False,
              isolate: bool = False, gate: str = "none"):
    """The multiplier datapath of :class:`FPMul` (``dst`` = ``fmt``) and :class:`FPProduct`
    (a wider ``dst`` holding every product exactly): unpack, significand array product, one
    normalize/round/pack into ``dst`` (cuts 1 and 2 through ``stage``).  ``norm="early"``:
    the product's leading zeros from the significands' (round_pack's ``lz_hint``).
    ``isolate``: both significands held at 0 when an operand is zero, inf or NaN (the result
    is then a zero, an inf or a NaN whatever the product: round_pack's flags decide it, and
    a zero significand already gives a zero product).  ``gate``: ``norm`` -- both significands
    normal (their hidden bits set), the product has at most one leading zero: round_pack's
    ``fast`` path, the early counts' inputs held at 0 too; ``subnormal`` -- round_pack's
    ``gate_under``."""
    a = unpack(m, fmt, x, "a", daz=ftz)
    b = unpack(m, fmt, y, "b", daz=ftz)
    sig_a, sig_b = a.sig, b.sig
    if isolate:
        idle = Signal(name="iso_idle")
        m.d.comb += idle.eq(a.is_zero | b.is_zero | a.is_inf | b.is_inf | a.is_nan | b.is_nan)
        sig_a, sig_b = _isolated(m, idle, a.sig, "iso_a_sig"), _isolated(m, idle, b.sig,
                                                                        "iso_b_sig")
    mult = resolved_mult(mult, fmt)   # auto: Booth from 11 bits (reports/fp_mul.md)
    rows = None if 3 not in stage.cuts else (lambda r0, r1: stage(3, r0, r1))   # cut 3 (tree)
    prod = (booth_mul if mult == "booth4" else array_mul)(m, sig_a, sig_b, name="sigmul",
                                                           rows_stage=rows, cpa=cpa,
                                                           tree=tree)
    hint = fast = None
    if "norm" in gate.split("+"):          # two normal significands: at most one leading zero
        fast = Signal(name="gate_fast")
        p = fmt.precision
        m.d.comb += fast.eq(sig_a[p - 1] & sig_b[p - 1])
    if norm == "early":            # counted beside the multiplier, not after it
        ca, cb = ((sig_a, sig_b) if fast is None else
                  (_isolated(m, fast, sig_a, "gate_a_sig"), _isolated(m, fast, sig_b,
                                                                      "gate_b_sig")))
        lza, lzb = lzc(m, ca, name="lza"), lzc(m, cb, name="lzb")
        hint = Signal(len(prod).bit_length(), name="lz_hint")
        m.d.comb += hint.eq(lza + lzb)
    sign = Signal(name="sign")
    is_nan = Signal(name="is_nan")
    is_inf = Signal(name="is_inf")
    # the product's MSB exponent, biased in dst: ea + eb − 2·bias + dst.bias + 1
    rebias = dst.bias - fmt.bias
    et = Signal(signed(max(fmt.exp_bits, dst.exp_bits) + 3), name="et")
    m.d.comb += [
        sign.eq(a.sign ^ b.sign),
        is_nan.eq(a.is_nan | b.is_nan | (a.is_inf & b.is_zero) | (b.is_inf & a.is_zero)),
        is_inf.eq(a.is_inf | b.is_inf),
        et.eq(a.exp + b.exp - (fmt.bias - 1) + rebias if rebias else
              a.exp + b.exp - (fmt.bias - 1)),
    ]
    extra = tuple(x for x in (hint, fast) if x is not None)
    # cut 3 (tree) for these too, then cut 1 (product)
    sign, et, is_nan, is_inf, *extra = stage(3, sign, et, is_nan, is_inf, *extra)
    sign, prod, et, is_nan, is_inf, *extra = stage(1, sign, prod, et, is_nan, is_inf, *extra)
    if hint is not None:
        hint, *extra = extra
    if fast is not None:
        (fast,) = extra
    return round_pack(m, dst, sign, prod, et, mode=mode, ftz=ftz, is_nan=is_nan,
                      is_inf=is_inf, stage=stage, lz_hint=hint, narrow=narrow,
                      compound=compound, fast=fast, gate_under="subnormal" in gate.split("+"))


class FPProduct(wiring.Component):
    """The exact product of two ``fmt`` values in a wider ``dst`` (FP16 × FP16 -> FP32: the
    tensor cores' "products are exact"): :class:`FPMul`'s datapath with no rounding to do --
    11 × 11 significand bits fit FP32's 24 and 2^−48 ≤ |p| < 2^32 lies in its normal range, so
    the round/pack only normalizes (subnormal operands) and re-biases.  inf·0 and NaN in give
    dst's canonical NaN, inf gives ±inf.  Golden model: :func:`tcgen.hw.numeric.fp_product`.

    Parameters: ``FPProductParams`` (fmt, dst, pipeline, cuts; mult, tree, isolate, gate as
    :class:`FPMul`'s).
    Attributes: a, b ``In(fmt.width)``; y ``Out(dst.width)``; ``latency`` = pipeline.
    """

    def __init__(self, params: FPProductParams):
        self.params = params
        self.fmt, self.dst = get_format(params.fmt), get_format(params.dst)
        self.latency = params.latency
        super().__init__({"a": In(self.fmt.width), "b": In(self.fmt.width),
                          "y": Out(self.dst.width)})

    def elaborate(self, platform):
        m = Module()
        p = self.params
        st = Pipeline(m, p.enabled())
        m.d.comb += self.y.eq(_multiply(m, self.fmt, self.dst, self.a, self.b, mode="rne",
                                        ftz=False, stage=st, mult=p.mult, tree=p.tree,
                                        isolate=p.isolate == "specials", gate=p.gate))
        return m


class FPAdd(_FPBinary):
    """IEEE-754 adder ``y = round(a + b)`` for any :class:`FloatFormat`.

    Swap by magnitude, align the smaller significand with 3 guard bits and a sticky bit (p+3
    bits), add or subtract, then one normalize-round-pack.  x + (−x) = +0 in both modes;
    (−0) + (−0) = −0; inf − inf = NaN.  Golden model: :func:`tcgen.hw.numeric.fp_add`.

    Parameters: ``FPAddParams`` (fmt, rounding, ftz, pipeline, cuts, isolate, gate).
    Attributes: a, b ``In(fmt.width)``; y ``Out(fmt.width)``; ``latency`` = pipeline.
    """

    def elaborate(self, platform):
        m = Module()
        fmt, p = self.fmt, self.params
        prec, w = fmt.precision, fmt.width
        st = Pipeline(m, p.enabled())
        a = unpack(m, fmt, self.a, "a", daz=p.ftz)
        b = unpack(m, fmt, self.b, "b", daz=p.ftz)
        sig_a, sig_b = a.sig, b.sig
        if "specials" in p.isolate:    # an inf or NaN result uses neither significand
            idle = Signal(name="iso_special")
            m.d.comb += idle.eq(a.is_inf | b.is_inf | a.is_nan | b.is_nan)
            sig_a, sig_b = _isolated(m, idle, a.sig, "iso_a_sig"), _isolated(m, idle, b.sig,
                                                                            "iso_b_sig")
        # magnitude order (encodings are monotonic in magnitude; DAZ'd subnormals compare as 0)
        mag_a = Mux(a.is_zero, 0, self.a[:w - 1])
        mag_b = Mux(b.is_zero, 0, self.b[:w - 1])
        swap = Signal(name="swap")
        m.d.comb += swap.eq(mag_b > mag_a)
        big_sig, small_sig = Signal(prec, name="big_sig"), Signal(prec, name="small_sig")
        big_exp, small_exp = Signal(fmt.exp_bits, name="big_exp"), Signal(fmt.exp_bits,
                                                                           name="small_exp")
        big_sign, small_sign = Signal(name="big_sign"), Signal(name="small_sign")
        m.d.comb += [
            big_sig.eq(Mux(swap, sig_b, sig_a)), small_sig.eq(Mux(swap, sig_a, sig_b)),
            big_exp.eq(Mux(swap, b.exp, a.exp)), small_exp.eq(Mux(swap, a.exp, b.exp)),
            big_sign.eq(Mux(swap, b.sign, a.sign)), small_sign.eq(Mux(swap, a.sign, b.sign)),
        ]
        d = Signal(fmt.exp_bits, name="exp_diff")
        m.d.comb += d.eq(big_exp - small_exp)
        shifted = small_sig
        far = None
        if "far" in p.isolate and (1 << fmt.exp_bits) - 1 > prec + 3:
            # far: the whole significand shifts into the sticky bit -- the shifter's input
            # held at 0 and the sticky bit taken directly
            far = Signal(name="iso_far")
            m.d.comb += far.eq(d >= prec + 3)
            shifted = _isolated(m, far, small_sig, "iso_small_sig")
        aligned, sticky = shift_right_sticky(m, Cat(Const(0, 3), shifted), d, name="align")
        op_b = Signal(prec + 3, name="op_small")
        m.d.comb += op_b.eq(aligned | sticky if far is None else
                            Mux(far, small_sig.any(), aligned | sticky))
        sub = Signal(name="eff_sub")
        total = Signal(prec + 4, name="sum")
        m.d.comb += sub.eq(big_sign ^ small_sign)
        fast = None
        if "norm" in p.gate.split("+"):   # no cancellation: at most 2 leading zeros in the sum
            fast = Signal(name="gate_fast")
            m.d.comb += fast.eq(big_sig[prec - 1] & (~sub | (d >= 2)))
            fast = st(1, st(3, fast))
        # cut 3 (align); the exponent and class signals below cross it where they are made
        r_big, op_b, sub, r_sign, zero_sign = st(3, big_sig, op_b, sub, big_sign,
                                                 a.sign & b.sign)
        op_a = Cat(Const(0, 3), r_big)
        m.d.comb += total.eq(Mux(sub, op_a - op_b, op_a + op_b))
        sign = Signal(name="sign")
        m.d.comb += sign.eq(Mux(total == 0, zero_sign, r_sign))
        is_nan = Signal(name="is_nan")
        is_inf = Signal(name="is_inf")
        inf_sign = Signal(name="inf_sign")
        et = Signal(signed(fmt.exp_bits + 2), name="et")
        m.d.comb += [
            is_nan.eq(a.is_nan | b.is_nan | (a.is_inf & b.is_inf & (a.sign != b.sign))),
            is_inf.eq(a.is_inf | b.is_inf),
            inf_sign.eq(Mux(a.is_inf, a.sign, b.sign)),
            et.eq(big_exp + 1),
        ]
        is_nan, is_inf, inf_sign, et = st(3, is_nan, is_inf, inf_sign, et)
        sign, total, et, is_nan, is_inf, inf_sign = st(1, sign, total, et, is_nan, is_inf,
                                                       inf_sign)
        m.d.comb += self.y.eq(round_pack(m, fmt, sign, total, et, mode=p.rounding, ftz=p.ftz,
                                         is_nan=is_nan, is_inf=is_inf, inf_sign=inf_sign,
                                         stage=st, fast=fast, fast_lz=2,
                                         gate_under="subnormal" in p.gate.split("+")))
        return m


class FPConvert(wiring.Component):
    """Format conversion ``y = round_dst(a)`` (exact when the destination is wider).

    Infinities map to infinities (E4M3: NaN, or ±448 with ``saturate``); NaN -> canonical NaN.
    Golden model: :func:`tcgen.hw.numeric.fp_convert`.

    Parameters: ``FPConvertParams`` (src, dst, rounding, saturate, ftz, pipeline).
    Attributes: a ``In(src.width)``, y ``Out(dst.width)``; ``latency`` = pipeline (0 or 1).
    """

    def __init__(self, params):
        self.params = params
        self.src = get_format(params.src)
        self.dst = get_format(params.dst)
        self.latency = params.latency
        super().__init__({"a": In(self.src.width), "y": Out(self.dst.width)})

    def elaborate(self, platform):
        m = Module()
        src, dst, p = self.src, self.dst, self.params
        st = Pipeline(m, p.enabled())     # cuts lzc (4) and shift (2, before the rounding)
        a = unpack(m, src, self.a, "a", daz=p.ftz)
        et = Signal(signed(max(src.exp_bits, dst.exp_bits) + 3), name="et")
        m.d.comb += et.eq(a.exp - src.bias + dst.bias)
        m.d.comb += self.y.eq(round_pack(m, dst, a.sign, a.sig, et, mode=p.rounding, ftz=p.ftz,
                                         saturate=p.saturate, is_nan=a.is_nan,
                                         is_inf=a.is_inf, stage=st))
        return m
