"""The fused N-term dot product: N exact products and an addend C aligned once to the largest
exponent, truncated to a fixed window, summed exactly and rounded once -- NVIDIA Hopper's
tensor-core numerics with the defaults (preset ``fused16_sm90``; docs/fused.md).

::

    y = round_out( Σ_k trunc_E(a_k × b_k) + trunc_E(c) )     one rounding, no other

    E          = max(ea_k + eb_k over the nonzero products, ec if c ≠ 0)     (field exponents)
    trunc_E(x) = sign(x) · ⌊|x| / 2^(E+2−window)⌋ · 2^(E+2−window)           (window 27:
                 the bits 2^(E+1) .. 2^(E−25) of every addend are kept, the rest dropped)

The rules, measured on an H200 (docs/silicon.md, reports/silicon.md: mma.sync, mma.sp and
wgmma with FP16 and BF16 inputs, 0 mismatches in 9.4 M outputs):

1. any NaN input, inf × 0, or +inf and −inf both among the products and C: the NaN with every
   bit but the sign set (FP32 0x7FFFFFFF, FP16 0x7FFF); otherwise an infinite term -> ±inf;
2. the products are exact.  A product's exponent is ea + eb, each the exponent of the leading
   position of the significand *as read from the field*: a normal 1.f has the field's exponent,
   a subnormal 0.f has emin (FP16: −14) and its leading zeros are kept (no renormalisation),
   so Sa·Sb (2p bits, leading bit at 2^(ea+eb) or 2^(ea+eb+1)) sits at ea + eb unshifted.  C
   has its own field exponent (FP32 subnormal: −126);
3. one alignment for all N + 1 addends: E = the largest of those exponents over the *nonzero*
   addends (a zero product or a zero C does not take part; with no nonzero addend the sum is 0);
4. every addend's magnitude is truncated toward zero to a multiple of 2^(E+2−window) (sign-
   magnitude: the magnitude floored, then the sign applied), and the N + 1 truncated addends
   are summed exactly -- no intermediate rounding, so the order does not matter;
5. one final rounding of that sum: to FP32 toward zero, to FP16 to nearest-even directly;
   subnormal results are kept;
6. every zero result is +0: an exact zero sum (even when every addend is −0) and a nonzero
   sum that rounds to zero (FP16 output, or BF16 products below FP32's range);
7. overflow gives ±inf in every mode, RTZ included (BF16 products past FP32's range).

Datapath (``pipeline`` cuts 1 and 2; ``cuts`` names any of align, tree, sum, lzc, norm, shift)::

    a_k, b_k ─► FusedProduct ×N (unpack, array_mul Sa·Sb, ea'+eb', flags; one shared module)
    c ─► unpack
    exponents (nonzero addends; others 0) ─► max tree ─► E
    per addend: E − e_k ─► shift_right (truncation = the shifted-out bits dropped) ─┤align├─►
    sign-magnitude -> two's complement folded into the columns ─► compress (Dadda tree
    ─┤tree├─► one CPA) ─► |sum|, sign ─┤sum (1)├─► round_pack (LZC ─┤lzc├─► left shift
    ─┤norm├─► right shift, one rounding; sticky = 0) ─┤shift (2)├─► NaN / ±inf override ─► y

Golden model: :func:`tcgen.hw.numeric.fused_dot`.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import numeric as num
from .dedup import shared
from .fparith import round_pack, unpack
from .intarith import _const_bits, array_mul, compress, shift_right_sticky, tree_param
from .numeric import get_format
from .params import Params, param
from .pipeline import CutPoints, Pipeline, cuts_param

__all__ = ["FusedDotParams", "FusedDot", "FusedProduct", "PRESETS", "OPERAND_FORMATS",
           "RESULT_FORMATS", "ROUNDINGS"]

#: operand formats (a, b): every format narrower than FP32
OPERAND_FORMATS = ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "tf32")
#: formats of C and of the result
RESULT_FORMATS = ("fp32", "fp16")
#: the final rounding: "auto" = Hopper's (FP32 output toward zero, FP16 output to nearest-even)
ROUNDINGS = ("auto", "rtz", "rne")

#: named configurations (``FusedDotParams.preset(name)``); the defaults are ``fused16_sm90``
PRESETS = {
    "fused16_sm90": dict(n=16, fmt="fp16", acc="fp32", out="fp32", window=27, rounding="auto"),
    "fused16_sm90_fp16": dict(n=16, fmt="fp16", acc="fp16", out="fp16", window=27,
                              rounding="auto"),
    # Hopper's FP8 path (wgmma m64nNk32, QGMMA), measured on an H200 (docs/silicon.md): one
    # 32-product block, window 15, an accumulator of 13 fraction bits (FP32 C and result)
    "qgmma_sm90": dict(n=32, fmt="fp8_e4m3", acc="fp32", out="fp32", window=15, acc_man=13,
                       rounding="auto"),
    "qgmma_sm90_fp16": dict(n=32, fmt="fp8_e4m3", acc="fp16", out="fp16", window=15,
                            rounding="auto"),
    # mma.sync m16n8k8 TF32 (the operands' FP32 patterns with their low 13 bits dropped)
    "tf32_sm90": dict(n=8, fmt="tf32", acc="fp32", out="fp32", window=27, rounding="auto"),
}


@dataclass(frozen=True)
class FusedDotParams(CutPoints, Params):
    """Defaults = preset ``fused16_sm90`` (H100, FP16 inputs, FP32 C and result).  ``window``
    may be any value in :func:`tcgen.hw.numeric.fused_window_bounds` of (fmt, acc): fp16 with
    an fp32 C 25..181, with an fp16 C 22..80; at the upper bound nothing is ever truncated and
    (with rounding=rne) the unit returns the correctly rounded exact dot product."""
    UNIT = "fused_dot"
    CUT_POINTS = (("align", 5), ("tree", 3), ("sum", 1), ("lzc", 4), ("norm", 6), ("shift", 2))
    n: int = param(16, choices=(4, 8, 16, 32), doc="products per dot product")
    fmt: str = param("fp16", choices=OPERAND_FORMATS, doc="operand format (a, b)")
    fmt_b: str = param("", choices=("",) + OPERAND_FORMATS,
                       doc="b's format when it differs from a's (empty: fmt; Hopper's mixed "
                           "FP8 wgmma: fmt=fp8_e4m3 fmt_b=fp8_e5m2)")
    acc: str = param("fp32", choices=RESULT_FORMATS, doc="format of the addend c")
    out: str = param("fp32", choices=RESULT_FORMATS, doc="result format (y)")
    window: int = param(27, range=(8, 600),
                        doc="alignment window bits 2^(E+1)..2^(E+2-window) (27 = sm90; "
                            "fp16 x fp16 + fp32: 25..181, 181 = exact)")
    rounding: str = param("auto", choices=ROUNDINGS,
                          doc="final rounding (auto: rtz for fp32 out, rne for fp16 out)")
    acc_man: int = param(0, range=(0, 23),
                         doc="accumulator fraction bits (0: all of acc's; 13 = Hopper's FP8 "
                             "path: C truncated to them, the result rounded to them)")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages (= latency)")
    cuts: str = cuts_param()
    tree: str = tree_param("the n products' compressor trees (issue 43): dadda, gkl or tdm "
                           "(three-greedy on arrival times)")

    def check(self):
        man = num.get_format(self.acc).man_bits
        if self.acc_man and (self.acc_man > man or self.acc != self.out):
            raise self.error("acc_man", self.acc_man,
                             f"0, or 1..{man} for an {self.acc} c with out = acc")
        lo, hi = num.fused_window_bounds(self.fmt, self.acc_format, self.fmt_b or None)
        if not lo <= self.window <= hi:
            held = f" held at {self.acc_man} fraction bits" if self.acc_man else ""
            ops = self.fmt if not self.fmt_b else f"{self.fmt} x {self.fmt_b}"
            raise self.error("window", self.window,
                             f"an integer in {lo}..{hi} for {ops} operands and an "
                             f"{self.acc} c{held}")

    @property
    def mode(self) -> str:
        """The final rounding mode ("rtz" or "rne")."""
        if self.rounding == "auto":
            return "rtz" if self.out == "fp32" else "rne"
        return self.rounding

    @property
    def acc_format(self):
        """C's format as the accumulator holds it (narrowed to acc_man fraction bits)."""
        f = num.get_format(self.acc)
        return f if not self.acc_man else num.FloatFormat(f.exp_bits, self.acc_man,
                                                           name=f"{self.acc}_m{self.acc_man}")

    @property
    def out_format(self):
        """The result's format as rounded (narrowed to acc_man fraction bits)."""
        f = num.get_format(self.out)
        return f if not self.acc_man else num.FloatFormat(f.exp_bits, self.acc_man,
                                                           name=f"{self.out}_m{self.acc_man}")

    @property
    def sum_width(self) -> int:
        """Bits of the two's-complement sum of the N + 1 window-aligned addends."""
        return self.window + self.n.bit_length() + 1

    @classmethod
    def preset(cls, name: str, **overrides) -> "FusedDotParams":
        """The params of a named configuration (:data:`PRESETS`), with ``overrides``."""
        if name not in PRESETS:
            raise ValueError(f"fused_dot: unknown preset {name!r}; presets: "
                             f"{', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


class FusedProduct(wiring.Component):
    """One lane of :class:`FusedDot`: the exact significand product and the exponent sum of
    the fields, nothing normalised (rule 2).

    Attributes: a, b ``In(fmt.width)``; ``sign`` (a ⊕ b), ``sig`` ``Out(2·precision)`` = Sa·Sb
    (hidden bits from the fields: 0 for a subnormal), ``exp`` ``Out(exp_bits + 1)`` = ea' + eb'
    with e' = max(field, 1) (so the product's exponent is exp − 2·bias), ``nonzero`` (neither
    operand is ±0), ``nan`` (a NaN operand or inf × 0), ``inf`` (an infinite operand).
    ``params`` is the operand format's name (the dedup key).  ``fmt_b``: b's format when it
    differs (sig then has p_a + p_b bits, exp = ea' + eb' on max(exp_bits) + 1 bits).
    ``tree``: the significand product's compressor tree (dadda, gkl, tdm; in the dedup key
    unless dadda)."""

    def __init__(self, fmt: str, fmt_b: str = "", tree: str = "dadda"):
        key = fmt if not fmt_b or fmt_b == fmt else (fmt, fmt_b)
        self.params = key if tree == "dadda" else (*(key if isinstance(key, tuple) else (key,)),
                                                   tree)
        self.tree = tree
        self.fmt = get_format(fmt)
        self.fmt_b = get_format(fmt_b or fmt)
        self.latency = 0
        f, g = self.fmt, self.fmt_b
        super().__init__({"a": In(f.width), "b": In(g.width), "sign": Out(1),
                          "sig": Out(f.precision + g.precision),
                          "exp": Out(max(f.exp_bits, g.exp_bits) + 1),
                          "nonzero": Out(1), "nan": Out(1), "inf": Out(1)})

    def elaborate(self, platform):
        m = Module()
        a = unpack(m, self.fmt, self.a, "a")
        b = unpack(m, self.fmt_b, self.b, "b")
        m.d.comb += [
            self.sig.eq(array_mul(m, a.sig, b.sig, name="sigmul", tree=self.tree)),
            self.sign.eq(a.sign ^ b.sign),
            self.exp.eq(a.exp + b.exp),
            self.nonzero.eq(~a.is_zero & ~b.is_zero),
            self.nan.eq(a.is_nan | b.is_nan | (a.is_inf & b.is_zero) | (b.is_inf & a.is_zero)),
            self.inf.eq(a.is_inf | b.is_inf),
        ]
        return m


def _max_tree(m: Module, values, name: str):
    """The largest of unsigned ``values``: a balanced tree of compare-and-select."""
    values, level = list(values), 0
    while len(values) > 1:
        nxt = []
        for i in range(0, len(values) - 1, 2):
            x, y = values[i], values[i + 1]
            s = Signal(len(x), name=f"{name}{level}_{i // 2}")
            m.d.comb += s.eq(Mux(x > y, x, y))
            nxt.append(s)
        if len(values) % 2:
            nxt.append(values[-1])
        values, level = nxt, level + 1
    return values[0]


class FusedDot(wiring.Component):
    """Fused N-term dot product ``y = round_out(Σ trunc_E(a_k·b_k) + trunc_E(c))`` (module
    docstring: the seven rules and the datapath).

    Parameters: ``FusedDotParams`` (n, fmt, fmt_b, acc, out, window, rounding, acc_man,
    pipeline, cuts, tree).
    Attributes: a, b ``In(ArrayLayout(fmt.width, n))``; c ``In(acc.width)``; y
    ``Out(out.width)``; ``latency`` = pipeline.  Golden model:
    :func:`tcgen.hw.numeric.fused_dot`.
    """

    def __init__(self, params: FusedDotParams):
        self.params = params
        self.latency = params.latency
        self.src = get_format(params.fmt)
        self.src_b = get_format(params.fmt_b or params.fmt)
        self.accf = params.acc_format          # narrowed to acc_man fraction bits, if set
        self.outf = params.out_format
        self.c_port = get_format(params.acc)
        self.y_port = get_format(params.out)
        fw = self.src.width
        super().__init__({"a": In(data.ArrayLayout(fw, params.n)),
                          "b": In(data.ArrayLayout(self.src_b.width, params.n)),
                          "c": In(self.c_port.width), "y": Out(self.y_port.width)})

    def elaborate(self, platform):
        m = Module()
        p, src, srb, accf, outf = self.params, self.src, self.src_b, self.accf, self.outf
        W, T = p.window, p.sum_width
        pp = src.precision + srb.precision          # bits of a product's significand
        st = Pipeline(m, p.enabled())
        lanes = [shared(m, f"prod{k}", FusedProduct(p.fmt, p.fmt_b, p.tree),
                        connect={"a": self.a[k], "b": self.b[k]}) for k in range(p.n)]
        cin = self.c
        if p.acc_man:
            # acc_man: C's low fraction bits truncated (a NaN stays a NaN), the datapath on the
            # narrowed format
            cp, drop = self.c_port, self.c_port.man_bits - p.acc_man
            cin = Signal(accf.width, name="c_narrow")
            c_nan = Signal(name="c_nan_in")
            m.d.comb += [c_nan.eq((self.c[cp.man_bits:cp.width - 1] == cp.exp_all_ones)
                                  & self.c[:cp.man_bits].any()),
                         cin.eq(Mux(c_nan, accf.sign_mask - 1,
                                    Cat(self.c[drop:cp.width - 1], self.c[cp.width - 1])))]
        c = unpack(m, accf, cin, "c")

        # rule 1: specials
        pos_inf, neg_inf, nan = (Signal(name=s) for s in ("pos_inf", "neg_inf", "nan"))
        m.d.comb += [
            pos_inf.eq(Cat(*(ln.inf & ~ln.sign for ln in lanes), c.is_inf & ~c.sign).any()),
            neg_inf.eq(Cat(*(ln.inf & ln.sign for ln in lanes), c.is_inf & c.sign).any()),
            nan.eq(Cat(*(ln.nan for ln in lanes), c.is_nan).any() | (pos_inf & neg_inf)),
        ]

        # rules 2-3: exponents on one non-negative scale Z = exponent + off, E = max over the
        # nonzero addends (zero addends read 0, the bottom of the scale)
        off = max(src.bias + srb.bias - 2, accf.bias - 1)
        zp, zc = off - src.bias - srb.bias, off - accf.bias     # ea'+eb' + zp, ec' + zc >= 0
        zw = max(src.exp_all_ones + srb.exp_all_ones + zp, accf.exp_all_ones + zc).bit_length()
        zs = []
        for k, ln in enumerate(lanes):
            z = Signal(zw, name=f"z{k}")
            m.d.comb += z.eq(Mux(ln.nonzero, ln.exp + zp, 0))
            zs.append(z)
        z_c = Signal(zw, name="z_c")
        m.d.comb += z_c.eq(Mux(c.is_zero, 0, c.exp + zc))
        e_max = _max_tree(m, zs + [z_c], "emax")

        # rule 4: align to the window (LSB 2^(E+2-W)); the right shift drops -- truncates --
        # the magnitude's bits below it
        addends = []
        for k, (ln, z) in enumerate(zip(lanes, zs)):
            d = Signal(zw, name=f"d{k}")
            m.d.comb += d.eq(e_max - z)
            word = ln.sig if W == pp else Cat(Const(0, W - pp), ln.sig)
            mag, _ = shift_right_sticky(m, word, d, name=f"align{k}")
            addends.append((mag, ln.sign))
        d_c = Signal(zw, name="d_c")
        m.d.comb += d_c.eq(e_max - z_c)
        pre_c = W - 2 - accf.man_bits                  # C's leading bit lands at 2^E for d = 0
        word_c = c.sig if pre_c == 0 else Cat(Const(0, pre_c), c.sig)
        mag_c, _ = shift_right_sticky(m, word_c, d_c, name="align_c")
        addends.append((mag_c, c.sign))
        # cut 5 (align): the aligned addends, E and the specials (a wire unless enabled)
        flat = st(5, *(v for a in addends for v in a), e_max, nan, pos_inf, neg_inf)
        addends = [(flat[2 * k], flat[2 * k + 1]) for k in range(len(addends))]
        e_max, nan, pos_inf, neg_inf = flat[-4:]

        # the exact signed sum on one compressor tree: ±M (w bits) enters as (M ⊕ s) + s in
        # columns 0..w-1 and ~s at column w, less the constant 2^w (folded into one row)
        cols = [[] for _ in range(T)]
        const = 0
        for mag, s in addends:
            w = len(mag)
            for i in range(w):
                cols[i].append(mag[i] ^ s)
            cols[0].append(s)
            cols[w].append(~s)
            const -= 1 << w
        _const_bits(const % (1 << T), T, cols)
        total = compress(m, cols, T, name="sum", rows_stage=None if 3 not in st.cuts else
                         (lambda r0, r1: st(3, r0, r1)))             # cut 3 (tree)
        e_max, nan, pos_inf, neg_inf = st(3, e_max, nan, pos_inf, neg_inf)
        neg = Signal(name="neg")
        mag = Signal(T - 1, name="mag")
        m.d.comb += [neg.eq(total[T - 1]), mag.eq(Mux(neg, -total, total))]

        # rules 5-6: one rounding of ±mag · 2^(E + 2 - W); the MSB of mag (bit T-2) has the
        # biased exponent Z - off + T - W + bias.  A zero sum has neg = 0: +0.
        et = Signal(signed(max(zw, (T + outf.bias).bit_length()) + 3), name="et")
        m.d.comb += et.eq(e_max + (T - W - off + outf.bias))
        is_inf = Signal(name="is_inf")
        m.d.comb += is_inf.eq(pos_inf | neg_inf)
        neg, mag, et, nan, is_inf, neg_inf = st(1, neg, mag, et, nan, is_inf, neg_inf)
        # rule 7: overflow gives ±inf in every mode (measured on an H200)
        y = round_pack(m, outf, neg, mag, et, mode=p.mode, is_inf=is_inf, inf_sign=neg_inf,
                       stage=st, overflow_inf=True, name="rnd")
        nan = st(2, st(6, st(4, nan)))   # beside round_pack: through its cuts lzc, norm, shift
        # rule 6: every zero result is +0, a nonzero sum rounded to zero too (measured)
        y0 = Signal(outf.width, name="y0")
        m.d.comb += y0.eq(Mux(y[:outf.width - 1] == 0, 0, y))
        yp = self.y_port
        if p.acc_man:          # the narrowed result written in the port's format, low bits 0
            y0 = Cat(Const(0, yp.man_bits - p.acc_man), y0)
        m.d.comb += self.y.eq(Mux(nan, yp.sign_mask - 1, y0))
        return m
