"""The Winograd paper's checkable figures computed from the family's models (the claims
ledger's ``source = "model"`` calls): operation counts of the pinned transform networks
(:func:`tcgen.units.winograd.model.op_counts` -- the transform units build one hardware
operator per op of these networks, tb/test_winograd_rtl.py), multiplies per output tile,
transformed-input growth and the element-wise stage's intensity."""
from __future__ import annotations

from . import model

__all__ = ["figures"]

_FP32_BYTES = 4


def figures() -> dict:
    """{"f23", "f43"}: each {op counts of model.op_counts, "mult_reduction" (direct / Winograd
    multiplies per output tile per (c, k)), "input_growth" (transformed-input words per
    output pixel: (m+2)² / m²), "ewmm_intensity" (FP32 ops per operand byte of one (m+2)²
    element-wise multiply without reuse: 2·(m+2)² / (2·(m+2)²·4 B))}."""
    out = {}
    for m, key in ((2, "f23"), (4, "f43")):
        c = model.op_counts(m)
        lanes = (m + 2) ** 2
        out[key] = {**c, "mult_reduction": c["direct_muls"] / c["ewmm_muls"],
                    "input_growth": lanes / (m * m),
                    "ewmm_intensity": 2 * lanes / (2 * lanes * _FP32_BYTES)}
    return out
