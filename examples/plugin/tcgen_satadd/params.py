"""The parameters of the saturating adder."""
from __future__ import annotations

from dataclasses import dataclass

from tcgen.hw.params import Params, param


@dataclass(frozen=True)
class SatAddParams(Params):
    UNIT = "sat_add"            # the unit these params belong to: named in every ParamError
    width: int = param(8, range=(2, 64), doc="operand and result bits")
    signed: bool = param(False, doc="two's complement operands (saturate at both ends)")
