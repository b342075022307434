"""What the PacQ study's report (studies/pacq_ppa.md.j2) needs beside the sweep's rows: the
paper's figures (:mod:`.paper`) and the reuse estimate of the parallel multiplier's area.
Nothing here is measured."""
from __future__ import annotations

from . import paper

__all__ = ["context", "reuse"]


def reuse(fp16_mul: float, int_mul: float, pacq_mul: float, offset8: float) -> dict:
    """How much of pacq_mul's area is blocks the FP16 multiplier also has, from four areas:
    fp16_mul = the 11×11 significand array (≈ int_mul 11×11) + exponent/normalize/round;
    pacq_mul = unpack + parallel array + lane select (≈ the offset8 unit) + hidden-bit adds,
    normalize and rounders.  Shared = Σ over the two block pairs of the smaller area."""
    shared = min(int_mul, offset8) + min(fp16_mul - int_mul, pacq_mul - offset8)
    return {"fp16_rest": fp16_mul - int_mul, "pacq_rest": pacq_mul - offset8,
            "shared": shared, "shared_pct": 100 * shared / pacq_mul}


def context() -> dict:
    return {"paper": paper, "reuse": reuse}
