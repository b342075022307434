"""Validated parameters of the Sparse Tensor Core family (docs/architecture.md, "The unit
protocol").  Defaults are the paper's configuration: the dense octet without ping-pong (its
baseline, 40 cycles) and the sparse octet at L = 16, K = 4 with ping-pong (its proposal, 20
cycles).  Bad values raise ``ParamError`` naming unit, field, value and what is allowed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tcgen.hw.dot import Dp4Params
from tcgen.hw.fused import FusedDotParams
from tcgen.hw.numeric import MODES
from tcgen.hw.params import Params, param
from tcgen.hw.pipeline import CutPoints, cuts_param

from .model import ZERO_SLOTS, offset_bits

__all__ = ["OctetDenseParams", "OctetSparseParams", "WarpMmaParams", "WarpSmmaParams",
           "OctetSparseBSParams", "L_CHOICES", "ACC_RTL", "NUMERICS", "SPLIT_K", "KMODES"]

#: the DP units' numerics: IEEE DP-4s (every add rounded, ``rounding``) or Hopper's fused
#: block per DP pass (tcgen.hw.fused.FusedDot n=4, window 27, RZ to FP32; docs/fused.md)
NUMERICS = ("ieee", "fused_sm90")


class _SparseArith:
    """What the sparse octets' parameters share beyond their fields: the cross-field checks,
    the offset width and the DP passes."""

    def check(self):
        self.check_numerics()
        if self.K > self.L:
            raise self.error("K", self.K, f"at most L ({self.L})")
        if self.split and self.K != SPLIT_K:
            raise self.error("K", self.K, f"{SPLIT_K} with split=true (the DP-4's width: each "
                                          f"request runs k = 4, 2 or 1 of its slots)")
        if self.split and self.numerics != "ieee":
            raise self.error("numerics", self.numerics, "ieee with split=true (the split tree "
                                                        "is the IEEE DP-4's)")

    @property
    def kmodes(self) -> tuple[int, ...]:
        """The run-time k of each request ``kmode`` (0..3): (4, 2, 1, 1) with ``split``."""
        return KMODES if self.split else (self.K,)

    @property
    def offset_bits(self) -> int:
        return offset_bits(self.L)

    @property
    def passes(self) -> int:
        """DP-4 passes per dot product: ⌈K/4⌉."""
        return -(-self.K // 4)


class _Numerics:
    """What every octet's parameters share: the numerics check and the DP units' parameters."""

    def check_numerics(self):
        if self.numerics != "ieee" and self.rounding != "rne":
            raise self.error("rounding", self.rounding,
                             "rne (the default) with numerics=fused_sm90: rounding sets the "
                             "IEEE adders; the fused block rounds toward zero to FP32")

    def dp_params(self, skip_zero: bool = False):
        """The octet's DP unit (``skip_zero``: the sparse octets' ±0-slot gate), with the
        ``dp.*`` cuts: an IEEE :class:`~tcgen.hw.dot.Dp4Params` (FP16 × FP16 exact in ``acc``,
        every add rounded in ``rounding``) or Hopper's fused block
        (:class:`~tcgen.hw.fused.FusedDotParams` n = 4, its window and final rounding)."""
        cuts = self.sub_cuts("dp") if self.cuts else ""
        if self.numerics == "fused_sm90":
            return FusedDotParams.preset("fused16_sm90", n=4, acc=self.acc, out=self.acc,
                                         cuts=cuts)
        return Dp4Params(fmt="fp16", acc=self.acc, product="exact", rounding=self.rounding,
                         skip_zero=skip_zero, split=getattr(self, "split", False), cuts=cuts)


class _DpCuts(CutPoints):
    """The octets' cut points: their DP units' (``dp.<point>``: one register bank across the
    eight DP units, docs/pipelining.md "Octets").  The DP latency Lt = the number of cuts; the
    octet issues a dot product every cycle and writes it back Lt cycles later (its cycle model
    follows, :func:`~tcgen.units.sparse.model.cycle_timing` ``dp_latency``).  ``cuts=auto``
    plans the DP unit for the clock (:meth:`plan_via`).  None with ``split`` (the split DP-4 is
    combinational)."""

    PIPELINE_CUTS = ()

    def cut_points(self):
        if getattr(self, "split", False):
            return ()
        base = dataclasses.replace(self, cuts="")
        return tuple((f"dp.{n}", None) for n, _ in base.dp_params().cut_points())

    def plan_via(self):
        """``(unit, params, role)``: the sub-unit whose cut points these are and the role
        prefix (tcgen.pipelining.plan plans it, then measures the octet)."""
        dp = dataclasses.replace(self, cuts="").dp_params(
            skip_zero=getattr(self, "zero_slot", "") == "skip")
        return dp.UNIT, dp, "dp"

#: split octets: the hardware K (the DP-4's width) and the k of each request ``kmode`` 0..3
SPLIT_K = 4
KMODES = (4, 2, 1, 1)
#: vector lengths of the sparse octet (offsets of ⌈log2 L⌉ = 2..5 bits)
L_CHOICES = (4, 8, 16, 32)
#: accumulator formats built in RTL: FP32 (the paper's mixed mode).  The model's FP16 mode
#: rounds sums of exact FP32 products to FP16 -- an adder with FP32 inputs and an FP16 result,
#: not built yet (docs/sparse.md)
ACC_RTL = ("fp32",)


@dataclass(frozen=True)
class OctetDenseParams(_DpCuts, Params, _Numerics):
    UNIT = "octet_dense"
    ROWS = COLS = 8                   # D share of one octet (a worktuple)
    acc: str = param("fp32", choices=ACC_RTL, doc="C/D and adder format (mixed mode)")
    rounding: str = param("rne", choices=MODES, doc="every adder's rounding (numerics=ieee)")
    pingpong: bool = param(False, doc="double A/B operand buffers (fill under compute)")
    numerics: str = param("ieee", choices=NUMERICS,
                          doc="DP units: IEEE DP-4 (every add rounded) or Hopper's fused "
                              "block per DP pass")
    cuts: str = cuts_param()

    def check(self):
        self.check_numerics()


@dataclass(frozen=True)
class OctetSparseParams(_SparseArith, _DpCuts, Params, _Numerics):
    UNIT = "octet_sparse"
    ROWS = 4                          # A rows (D rows) of one octet per SWMMA
    L: int = param(16, choices=L_CHOICES, doc="vector length (the k-tile): offsets of "
                                               "⌈log2 L⌉ bits")
    K: int = param(4, range=(1, 32), doc="non-zeros kept per vector (1..L)")
    acc: str = param("fp32", choices=ACC_RTL, doc="C/D and adder format (mixed mode)")
    rounding: str = param("rne", choices=MODES, doc="every adder's rounding (numerics=ieee)")
    pingpong: bool = param(True, doc="double B buffer (load under compute)")
    zero_slot: str = param("skip", choices=ZERO_SLOTS,
                           doc="a ±0 slot: skip (contributes −0) or multiply")
    numerics: str = param("ieee", choices=NUMERICS,
                          doc="DP units: IEEE DP-4 (every add rounded) or Hopper's fused "
                              "block per DP pass")
    split: bool = param(False, doc="split DP-4 tree (K = 4): a request's kmode runs k = 4, "
                                   "2 or 1 non-zeros per row, 4/k rows per set on 1×DP-4 / "
                                   "2×DP-2 / 4×DP-1", key_default=False)
    cuts: str = cuts_param()


@dataclass(frozen=True)
class WarpMmaParams(OctetDenseParams):
    """The warp wrapper of 4 dense octets (one full 16×16×16 WMMA): the octet's parameters."""
    UNIT = "warp_mma"
    ROWS = COLS = 16

    def octet(self) -> OctetDenseParams:
        return OctetDenseParams(**self.as_dict())


@dataclass(frozen=True)
class WarpSmmaParams(OctetSparseParams):
    """The warp wrapper of 4 sparse octets (one full 16 × L × 16 SWMMA): the octet's
    parameters."""
    UNIT = "warp_smma"
    ROWS = 16

    def octet(self) -> OctetSparseParams:
        return OctetSparseParams(**self.as_dict())


@dataclass(frozen=True)
class OctetSparseBSParams(_SparseArith, _DpCuts, Params, _Numerics):
    """The B-stationary sparse octet (beyond the paper, note §5.2 (a)): the L×16 B tile held in
    registers and read through K local L:1 row selects, reused across A row-tiles."""
    UNIT = "octet_sparse_bs"
    ROWS = 4
    L: int = param(16, choices=L_CHOICES, doc="vector length (the k-tile): offsets of "
                                               "⌈log2 L⌉ bits")
    K: int = param(4, range=(1, 32), doc="non-zeros kept per vector (1..L)")
    acc: str = param("fp32", choices=ACC_RTL, doc="C/D and adder format (mixed mode)")
    rounding: str = param("rne", choices=MODES, doc="every adder's rounding (numerics=ieee)")
    zero_slot: str = param("skip", choices=ZERO_SLOTS,
                           doc="a ±0 slot: skip (contributes −0) or multiply")
    numerics: str = param("ieee", choices=NUMERICS,
                          doc="DP units: IEEE DP-4 (every add rounded) or Hopper's fused "
                              "block per DP pass")
    split: bool = param(False, doc="split DP-4 tree (K = 4): a request's kmode runs k = 4, "
                                   "2 or 1 non-zeros per row, 4/k rows per set on 1×DP-4 / "
                                   "2×DP-2 / 4×DP-1", key_default=False)
    cuts: str = cuts_param()
