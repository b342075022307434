"""The golden model: numpy only (no Amaranth), bit-exact, vectorised.

Inputs and outputs are the ports' bit patterns as uint64 arrays.
"""
from __future__ import annotations

import numpy as np


def sat_add(p, a, b) -> dict[str, np.ndarray]:
    """``y = clamp(a + b)`` to the format's range; ``sat`` = 1 where it clamped."""
    w = p.width
    mask = (1 << w) - 1
    a = np.asarray(a, dtype=np.uint64).astype(object) & mask
    b = np.asarray(b, dtype=np.uint64).astype(object) & mask
    if p.signed:
        half = 1 << (w - 1)
        av = np.where(a >= half, a - (1 << w), a)
        bv = np.where(b >= half, b - (1 << w), b)
        lo, hi = -half, half - 1
    else:
        av, bv, lo, hi = a, b, 0, mask
    s = av + bv
    y = np.minimum(np.maximum(s, lo), hi)
    sat = (s != y).astype(np.uint64)
    return {"y": (y & mask).astype(np.uint64), "sat": sat}
