"""Validated parameters of the Sparse Tensor Core family (docs/architecture.md, "The unit
protocol").  Defaults are the paper's configuration: the dense octet without ping-pong (its
baseline, 40 cycles) and the sparse octet at L = 16, K = 4 with ping-pong (its proposal, 20
cycles).  Bad values raise ``ParamError`` naming unit, field, value and what is allowed.
"""
from __future__ import annotations

from dataclasses import dataclass

from tcgen.hw.numeric import MODES
from tcgen.hw.params import Params, param

from .model import ZERO_SLOTS, offset_bits

__all__ = ["OctetDenseParams", "OctetSparseParams", "L_CHOICES", "ACC_RTL"]

#: vector lengths of the sparse octet (offsets of ⌈log2 L⌉ = 2..5 bits)
L_CHOICES = (4, 8, 16, 32)
#: accumulator formats built in RTL: FP32 (the paper's mixed mode).  The model's FP16 mode
#: rounds sums of exact FP32 products to FP16 -- an adder with FP32 inputs and an FP16 result,
#: not built yet (docs/sparse.md)
ACC_RTL = ("fp32",)


@dataclass(frozen=True)
class OctetDenseParams(Params):
    UNIT = "octet_dense"
    acc: str = param("fp32", choices=ACC_RTL, doc="C/D and adder format (mixed mode)")
    rounding: str = param("rne", choices=MODES, doc="every adder's rounding")
    pingpong: bool = param(False, doc="double A/B operand buffers (fill under compute)")


@dataclass(frozen=True)
class OctetSparseParams(Params):
    UNIT = "octet_sparse"
    L: int = param(16, choices=L_CHOICES, doc="vector length (the k-tile): offsets of "
                                               "⌈log2 L⌉ bits")
    K: int = param(4, range=(1, 32), doc="non-zeros kept per vector (1..L)")
    acc: str = param("fp32", choices=ACC_RTL, doc="C/D and adder format (mixed mode)")
    rounding: str = param("rne", choices=MODES, doc="every adder's rounding")
    pingpong: bool = param(True, doc="double B buffer (load under compute)")
    zero_slot: str = param("skip", choices=ZERO_SLOTS,
                           doc="a ±0 slot: skip (contributes −0) or multiply")

    def check(self):
        if self.K > self.L:
            raise self.error("K", self.K, f"at most L ({self.L})")

    @property
    def offset_bits(self) -> int:
        return offset_bits(self.L)

    @property
    def passes(self) -> int:
        """DP-4 passes per dot product: ⌈K/4⌉."""
        return -(-self.K // 4)
