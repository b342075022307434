"""Validated parameters of the PacQ family (docs/architecture.md, "The unit protocol").

Defaults are the paper's configuration (Yin, Li, Panda, "PacQ", §III): FP16 activations, INT4
and INT2 weights selectable at run time on the same multiplier, RNE, FP16 accumulation, two
duplicated adder trees per DP-4.  Every bad value raises ``ParamError`` (a ``ValueError``) naming unit, field,
value and what is allowed, e.g. ``pacq_mul: mode must be one of paper, exact, offset8, literal,
got 'x'``.
"""
from __future__ import annotations

from dataclasses import dataclass

from tcgen.hw.fparith import FPMulParams
# the lane helpers of the parallel multiplier, shared with Winograd (re-exported: family names)
from tcgen.hw.fpint_ref import lanes_of, supports_int2, supports_int4
from tcgen.hw.numeric import MODES
from tcgen.hw.params import Params, param
from tcgen.hw.pipeline import CutPoints, cuts_param

__all__ = ["WBITS", "PACQ_MODES", "ACC_FORMATS", "Fp16MulParams", "IntDequantParams",
           "DequantMulParams", "PacqMulParams", "Dp4BaselineParams", "Dp4PacqParams",
           "lanes_of", "supports_int2", "supports_int4"]

#: weight widths: one fixed width, or both selected at run time by an ``int2`` port
WBITS = ("both", "4", "2")
#: pacq_mul output modes (see units/pacq/rtl.py PacqMul)
PACQ_MODES = ("paper", "exact", "offset8", "literal")
ACC_FORMATS = ("fp16", "fp32")


def _wbits_text(v):
    """Accept the integers 4 and 2 from Python callers (the CLI gives strings)."""
    if isinstance(v, int) and not isinstance(v, bool) and str(v) in WBITS:
        return str(v)
    return v


_WBITS_DOC = ("weight width: 4 (INT4 x4 per word), 2 (INT2 x8) or both (run-time select by the "
              "int2 port)")


@dataclass(frozen=True)
class Fp16MulParams(CutPoints, Params):
    UNIT = "fp16_mul"
    CUT_POINTS = FPMulParams(fmt="fp16").cut_points()   # FPMul's at its defaults, passed down
    rounding: str = param("rne", choices=MODES, doc="rne or rtz")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages (= latency)")
    cuts: str = cuts_param()


@dataclass(frozen=True)
class IntDequantParams(Params):
    UNIT = "int_dequant"
    wbits: str = param("both", choices=WBITS, doc=_WBITS_DOC, convert=_wbits_text)


@dataclass(frozen=True)
class DequantMulParams(Params):
    UNIT = "dequant_mul"
    wbits: str = param("both", choices=WBITS, doc=_WBITS_DOC, convert=_wbits_text)
    rounding: str = param("rne", choices=MODES, doc="rounding of the FP16 product")


@dataclass(frozen=True)
class PacqMulParams(CutPoints, Params):
    UNIT = "pacq_mul"
    #: lanes: after the parallel integer lanes; round: before each lane's round increment
    #: (paper mode; the other modes register their outputs there)
    CUT_POINTS = (("lanes", 1), ("round", 2))
    wbits: str = param("both", choices=WBITS, doc=_WBITS_DOC, convert=_wbits_text)
    mode: str = param("paper", choices=PACQ_MODES,
                      doc="paper: FP16(A*(B+1032)) per lane, corrected datapath; exact: "
                          "unrounded A*(B+1032) lanes; offset8: A*(B+8) fixed point, no +1024; "
                          "literal: the paper's text bit for bit (6-bit adder, no "
                          "normalization, truncation)")
    rounding: str = param("rne", choices=MODES, doc="per-lane rounding (paper mode)")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages (= latency)")
    cuts: str = cuts_param()

    def check(self):
        if self.mode == "literal" and self.rounding != "rtz":
            raise self.error("rounding", self.rounding,
                             "rtz when mode is literal (the paper truncates)")
        if self.mode in ("exact", "offset8") and self.rounding != "rne":
            raise self.error("rounding", self.rounding,
                             f"rne (the default) when mode is {self.mode}: nothing is rounded")


@dataclass(frozen=True)
class Dp4BaselineParams(Params):
    UNIT = "dp4_baseline"
    acc: str = param("fp16", choices=ACC_FORMATS, doc="adder tree / accumulator format")
    rounding: str = param("rne", choices=MODES, doc="every rounding point (products, adds)")


@dataclass(frozen=True)
class Dp4PacqParams(Params):
    UNIT = "dp4_pacq"
    wbits: str = param("both", choices=WBITS, doc=_WBITS_DOC, convert=_wbits_text)
    D: int = param(2, choices=(1, 2, 4), doc="duplicated adder trees (outputs per cycle)")
    mode: str = param("paper", choices=PACQ_MODES, doc="pacq_mul output mode")
    acc: str = param("fp16", choices=ACC_FORMATS, doc="adder tree / accumulator format")
    rounding: str = param("rne", choices=MODES, doc="every rounding point")
    sum_a: bool = param(True, doc="include the ΣA accumulator tree")
