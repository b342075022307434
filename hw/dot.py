"""The DP-4: four products and a fixed adder tree onto an accumulator -- the one dot-product
datapath of the codebase (PacQ's Table I baseline, the Sparse Tensor Core octets' DP units).

::

    y = ((p0 + p1) + (p2 + p3)) + c          every '+' one FPAdd rounding in ``acc``

    product = "exact":   p_k = a_k × b_k exact in acc (FPProduct; FP16 × FP16 in FP32)
    product = "rounded": p_k = acc(fmt(a_k × b_k)): FPMul rounds to fmt, then widened exactly

``skip_zero``: a lane whose ``a`` operand is ±0 contributes −0, the additive identity (its
product gated): x + (−0) = x for every x, so a padded sparse slot is invisible even against an
inf/NaN ``b`` or a −0 accumulator.

``split``: the tree splits at run time (note 001_sparse_tc §5.1) -- a ``mode`` port selects one
DP-4, two DP-2s or four DP-1s from the same four adders, each group onto its own accumulator::

    mode 0 (DP-4):      y0 = ((p0 + p1) + (p2 + p3)) + c0
    mode 1 (2×DP-2):    y0 = (p0 + p1) + c0            y1 = (p2 + p3) + c1
    mode 2, 3 (4×DP-1): yk = pk + ck

every '+' one rounding in ``acc``; the outputs beyond the mode's groups are +0.  The adders
(s0 = p0 + ·, s1 = p2 + ·, t = · + ·, u = · + c) take their operands through 2:1 / 3:1 muxes;
in mode 0 the tree is the DP-4's, so a split DP-4 with mode 0 is bit-identical to the DP-4.
Golden model: :func:`tcgen.hw.numeric.dot4` with ``split=``.

Building blocks (used by the units that pipeline the DP-4 their own way, e.g.
``dp4_baseline``): :func:`product` (one lane), :func:`widen` (exact format widening),
:func:`fp_add` (one shared FPAdd), :func:`dot_sum` (the tree onto ``c``, optional pipeline
registers after each level).  Golden model: :func:`tcgen.hw.numeric.dot4`.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import numeric as num
from .dedup import shared
from .fparith import (FORMAT_NAMES, FPAdd, FPAddParams, FPConvert, FPConvertParams, FPMul,
                      FPMulParams, FPProduct, FPProductParams, add_tree, technique_param)
from .intarith import tree_param
from .numeric import get_format
from .params import Params, param
from .pipeline import CutPoints, Pipeline, cuts_param

__all__ = ["Dp4Params", "Dp4", "PRODUCTS", "product", "widen", "fp_add", "dot_sum"]

#: how a lane's product enters the tree: exact in acc, or rounded to the operand format first
PRODUCTS = ("exact", "rounded")
_LANES = 4


@dataclass(frozen=True)
class Dp4Params(CutPoints, Params):
    """``cuts``: the DP-4's own cut points (``products``, ``level0``, ``level1``: after the
    products and after each tree level) and its sub-units' (``mul.*``: the four multipliers',
    one bank across the lanes; ``add0.*`` the level-0 adders', ``add1.*`` the level-1
    adder's, ``acc.*`` the accumulating adder's), in datapath order; ``c`` and the lanes'
    zero flags are delayed alongside.  Not with ``split``."""
    UNIT = "dp4"
    PIPELINE_CUTS = ()
    fmt: str = param("fp16", choices=FORMAT_NAMES, doc="operand format (a, b)")
    acc: str = param("fp32", choices=FORMAT_NAMES, doc="tree / accumulator format (c, y)")
    product: str = param("exact", choices=PRODUCTS,
                         doc="exact: a×b exact in acc; rounded: rounded to fmt, then widened")
    rounding: str = param("rne", choices=num.MODES, doc="every rounding point")
    skip_zero: bool = param(False, doc="a lane with a = ±0 contributes −0 (product gated)")
    split: bool = param(False, doc="run-time split: a mode port selects 1×DP-4, 2×DP-2 or "
                                   "4×DP-1 (c, y: one accumulator per group)",
                        key_default=False)
    cuts: str = cuts_param()
    mult: str = param("default", choices=("default", "array", "booth4"), key_default=False,
                      doc="the four multipliers' significand product (issue 43): default (each "
                          "multiplier's own: the exact product's array, fp_mul's auto with "
                          "product=rounded), array or booth4")
    tree: str = tree_param("the four multipliers' compressor tree: dadda, gkl or tdm "
                           "(three-greedy on arrival times)")
    isolate: str = technique_param(("specials",),
                                 "the four multipliers' operand isolation: specials (significands "
                                 "held at 0 for a zero, inf or NaN operand) or none")
    gate: str = technique_param(("norm",),
                                "the four multipliers' normalization path held still (two normal "
                                "significands: a 1-bit step beside the general count and shift) "
                                "or none")

    def mul_params(self) -> dict:
        """What the lanes' multipliers take of these parameters (the defaults: nothing, so
        their modules and Verilog are the ones they always were)."""
        kw = {} if self.mult == "default" else {"mult": self.mult}
        if self.tree != "dadda":
            kw["tree"] = self.tree
        if self.isolate != "none":
            kw["isolate"] = self.isolate
        if self.gate != "none":
            kw["gate"] = self.gate
        return kw

    def cut_points(self):
        mul = (FPProductParams if self.product == "exact" else FPMulParams).CUT_POINTS
        add = FPAddParams.CUT_POINTS
        return (*((f"mul.{n}", None) for n, _ in mul), ("products", 1),
                *((f"add0.{n}", None) for n, _ in add), ("level0", 2),
                *((f"add1.{n}", None) for n, _ in add), ("level1", 3),
                *((f"acc.{n}", None) for n, _ in add))

    def check(self):
        if self.split and self.cuts:
            raise self.error("cuts", self.cuts, "empty with split (the split tree is "
                                                "combinational)")
        src, acc = get_format(self.fmt), get_format(self.acc)
        if self.product == "exact" and not num.product_is_exact(src, acc):
            raise self.error("acc", self.acc, f"a format holding every {self.fmt} product "
                                              f"exactly with product=exact (fp16: fp32)")
        if self.product == "rounded" and self.acc != self.fmt and not (
                acc.precision >= src.precision and acc.emax >= src.emax
                and acc.emin <= src.emin - src.man_bits and src.ieee):
            raise self.error("acc", self.acc, f"{self.fmt} or a format {self.fmt} widens to "
                                              f"exactly")


def widen(m: Module, x, src: str, dst: str, name: str):
    """``x`` (``src``) in ``dst`` exactly: ``x`` itself when the formats are equal, else one
    shared :class:`FPConvert`."""
    if src == dst:
        return x
    conv = FPConvert(FPConvertParams(src=src, dst=dst, rounding="rne", saturate=False,
                                     ftz=False, pipeline=0))
    shared(m, name, conv)
    m.d.comb += conv.a.eq(x)
    return conv.y


def fp_add(m: Module, a, b, fmt: str, rounding: str, name: str, cuts: str = ""):
    """``a + b`` rounded once in ``fmt`` by one shared :class:`FPAdd` (``cuts``: its own)."""
    add = FPAdd(FPAddParams(fmt=fmt, rounding=rounding, ftz=False, pipeline=0, cuts=cuts))
    shared(m, name, add)
    m.d.comb += [add.a.eq(a), add.b.eq(b)]
    return add.y


def product(m: Module, a, b, p: Dp4Params, k: int, *, name: str = "mul",
            widen_name: str = "widen", cuts: str = "", delay=None):
    """Lane ``k``'s product in ``p.acc`` (submodules ``{name}{k}``, ``{widen_name}{k}``).
    ``cuts``: the multiplier's own; ``delay(value, name)`` then delays the lane's zero flag
    (``skip_zero``) by the multiplier's latency."""
    if p.product == "exact":
        mul = shared(m, f"{name}{k}", FPProduct(FPProductParams(fmt=p.fmt, dst=p.acc,
                                                                pipeline=0, cuts=cuts,
                                                                **p.mul_params())))
        m.d.comb += [mul.a.eq(a), mul.b.eq(b)]
        y = mul.y
    else:
        mul = FPMul(FPMulParams(fmt=p.fmt, rounding=p.rounding, ftz=False, pipeline=0,
                                cuts=cuts, **p.mul_params()))
        shared(m, f"{name}{k}", mul)
        m.d.comb += [mul.a.eq(a), mul.b.eq(b)]
        y = widen(m, mul.y, p.fmt, p.acc, f"{widen_name}{k}")
    if not p.skip_zero:
        return y
    fmt, acc = get_format(p.fmt), get_format(p.acc)
    gated = Signal(acc.width, name=f"{name}{k}_gated")
    zero = a[:fmt.width - 1] == 0
    if cuts:
        zero = delay(zero, f"{name}{k}_zero")
    m.d.comb += gated.eq(Mux(zero, Const(1 << (acc.width - 1), acc.width), y))
    return gated


def dot_sum(m: Module, terms, c, acc: str, rounding: str, name: str, *, pipe=None,
            split=None):
    """``((t0 + t1) + (t2 + t3)) + c`` in ``acc`` (hw's :func:`add_tree`, then one FPAdd
    ``{name}_acc``).  ``pipe`` (a :class:`tcgen.hw.pipeline.Pipeline`): a register after each
    tree level (``{name}_r{level}_{i}``), ``c`` delayed alongside (``{name}_c{level + 2}``), so
    the sum leaves ``len(levels)`` cycles after its terms.

    ``split`` (a 2-bit mode signal; four terms, ``c`` four accumulators, no ``pipe``): the
    run-time split tree of the module docstring; returns the four group results."""
    if split is not None:
        return _split_sum(m, terms, c, split, acc, rounding, name)
    cs = [c]

    def stage(level, values):                 # the level's sums and c, registered together
        cs.append(pipe.reg(cs[-1], f"{name}_c{level + 2}"))
        return [pipe.reg(v, f"{name}_r{level}_{i}") for i, v in enumerate(values)]
    s = add_tree(m, terms, FPAddParams(fmt=acc, rounding=rounding, ftz=False, pipeline=0),
                 f"{name}_add", stage=stage if pipe is not None else None)
    return fp_add(m, s, cs[-1], acc, rounding, f"{name}_acc")


def _split_sum(m: Module, p, c, mode, acc: str, rounding: str, name: str):
    """The split tree (module docstring): the DP-4's four adders with muxed operands."""
    if len(p) != _LANES:
        raise ValueError(f"dot_sum: a split tree sums {_LANES} terms, got {len(p)}")
    dp4, dp2, dp1 = mode == 0, mode == 1, mode[1]
    s0 = fp_add(m, p[0], Mux(dp1, c[0], p[1]), acc, rounding, f"{name}_add0")
    s1 = fp_add(m, p[2], Mux(dp1, c[2], p[3]), acc, rounding, f"{name}_add1")
    t = fp_add(m, Mux(dp1, p[1], s0), Mux(dp4, s1, Mux(dp2, c[0], c[1])), acc, rounding,
               f"{name}_add2")
    u = fp_add(m, Mux(dp4, t, Mux(dp2, s1, p[3])), Mux(dp4, c[0], Mux(dp2, c[1], c[3])), acc,
               rounding, f"{name}_acc")
    return [Mux(dp4, u, Mux(dp2, t, s0)), Mux(dp4, 0, Mux(dp2, u, t)), Mux(dp1, s1, 0),
            Mux(dp1, u, 0)]


class Dp4(wiring.Component):
    """A combinational DP-4 as a component (so arrays of it are one module instantiated N
    times): ``y = ((p0 + p1) + (p2 + p3)) + c`` (module docstring).

    Parameters: ``Dp4Params`` (fmt, acc, product, rounding, skip_zero, split).
    Attributes: a, b ``In(ArrayLayout(fmt.width, 4))``; c ``In(acc.width)``; y
    ``Out(acc.width)``; with ``split``: mode ``In(2)``, c ``In(ArrayLayout(acc.width, 4))``, y
    ``Out(ArrayLayout(acc.width, 4))`` (one accumulator per group); ``latency`` = 0.  Golden
    model: :func:`tcgen.hw.numeric.dot4`.
    """

    def __init__(self, params: Dp4Params):
        self.params = params
        self.latency = params.latency
        fw, aw = get_format(params.fmt).width, get_format(params.acc).width
        ports = {"a": In(data.ArrayLayout(fw, _LANES)), "b": In(data.ArrayLayout(fw, _LANES)),
                 "c": In(aw), "y": Out(aw)}
        if params.split:
            ports.update(mode=In(2), c=In(data.ArrayLayout(aw, _LANES)),
                         y=Out(data.ArrayLayout(aw, _LANES)))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        if p.cuts:
            return self._pipelined(m, p)
        prods = [product(m, self.a[k], self.b[k], p, k) for k in range(_LANES)]
        if p.split:
            ys = dot_sum(m, prods, [self.c[k] for k in range(_LANES)], p.acc, p.rounding,
                         "tree", split=self.mode)
            m.d.comb += [self.y[k].eq(y) for k, y in enumerate(ys)]
        else:
            m.d.comb += self.y.eq(dot_sum(m, prods, self.c, p.acc, p.rounding, "tree"))
        return m

    def _pipelined(self, m: Module, p: Dp4Params) -> Module:
        """The DP-4 with cuts: :func:`dot_sum`'s products and tree (hw's :func:`add_tree`, the
        same names and summation order), each sub-unit with its own cuts, registers at the
        enabled tree boundaries, ``c`` delayed to the accumulating adder."""
        st = Pipeline(m, p.enabled())
        mulc, add0, add1, accc = (p.sub_cuts(r) for r in ("mul", "add0", "add1", "acc"))
        n_mul = len(mulc.split("+")) if mulc else 0

        def delay(value, name, n=n_mul):
            for i in range(n):
                value = st.reg(value, f"{name}_d{i + 1}")
            return value
        prods = [product(m, self.a[k], self.b[k], p, k, cuts=mulc, delay=delay)
                 for k in range(_LANES)]
        prods = list(st(1, *prods))

        def level_params(level):              # the level's adders with their own cuts
            return FPAddParams(fmt=p.acc, rounding=p.rounding, ftz=False, pipeline=0,
                               cuts=(add0, add1)[level])

        def stage(level, values):             # cut level0 (2) / level1 (3) after the level
            out = st(2 + level, *values)
            return list(out) if isinstance(out, tuple) else [out]
        t = add_tree(m, prods, level_params(0), "tree_add", stage=stage,
                     level_params=level_params)
        before_acc = p.latency - (len(accc.split("+")) if accc else 0)
        c = delay(self.c, "tree_c", before_acc)
        m.d.comb += self.y.eq(fp_add(m, t, c, p.acc, p.rounding, "tree_acc", accc))
        return m
