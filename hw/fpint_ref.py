"""Golden model of the parallel FP-INT multiplier's integer core (PacQ, Yin, Li, Panda, Fig. 5c;
the RTL is :func:`tcgen.hw.fpint.parallel_int_mul`).  numpy only (never Amaranth): the families'
golden models may import it (contract ``models-are-numpy-only`` in .importlinter).

One unsigned activation significand ``mA`` (a bits; PacQ: the FP16 significand, 11 bits) times
every lane of one 16-bit weight word.  Lane j of a ``lane_bits``-bit lane width sits at bits
[lane_bits·j +: lane_bits] of the word and holds an unsigned (offset-binary) code y_j; the lane
result is i_j = mA·y_j, exact, no carry across lanes.

``wbits`` names the lane configuration the RTL builds:

* ``"4"`` -- 4 INT4 lanes; ``"2"`` -- 8 INT2 lanes (PacQ's two widths);
* ``"both"`` -- 8 lanes, INT4 or INT2 chosen per word at run time by ``int2`` (INT4 leaves lanes
  4..7 inactive and zero);
* ``"8"`` -- 2 INT8 lanes, ``"16"`` -- 1 INT16 lane: the same array with one (two) more levels
  of lane-joining adders (not in the paper: the widths the Winograd transformed weights need,
  docs/winograd.md).
"""
from __future__ import annotations

import numpy as np

__all__ = ["WBITS_ALL", "supports_int4", "supports_int2", "lanes_of", "lane_bits_of",
           "word_lanes", "lane_codes", "parallel_int_mul"]

#: every lane configuration of the parallel multiplier (PacQ's units use "both", "4", "2")
WBITS_ALL = ("both", "4", "2", "8", "16")


def supports_int4(wbits: str) -> bool:
    return wbits in ("both", "4")


def supports_int2(wbits: str) -> bool:
    return wbits in ("both", "2")


def lanes_of(wbits: str) -> int:
    """Lanes of the output: 8 if INT2 is supported, 4 for INT4, 2 for INT8, 1 for INT16."""
    if wbits in ("8", "16"):
        return 16 // int(wbits)
    return 8 if supports_int2(wbits) else 4


def lane_bits_of(wbits: str) -> int:
    """The widest lane code: 4 for "both" (its INT4 lanes), else the width itself."""
    return 4 if wbits == "both" else int(wbits)


def word_lanes(words, wbits: int) -> np.ndarray:
    """Codes of every lane: shape words.shape + (16 // wbits,), lane j at bits [wbits·j +: wbits]."""
    L = 16 // wbits
    w = np.asarray(words, dtype=np.int64)
    shifts = np.arange(L, dtype=np.int64) * wbits
    return (w[..., None] >> shifts) & ((1 << wbits) - 1)


def lane_codes(w, int2, L):
    """Per-lane codes [..., L] and a lane-active mask for a run-time INT4/INT2 word (L = 4 or
    8; ``int2`` broadcast over ``w``)."""
    w = np.asarray(w, dtype=np.int64)
    int2 = np.broadcast_to(np.asarray(int2, dtype=np.int64), w.shape).astype(bool)
    y4 = np.zeros(w.shape + (L,), np.int64)
    y4[..., :4] = word_lanes(w, 4)
    if L == 8:
        y2 = word_lanes(w, 2)
    else:
        y2 = np.zeros_like(y4)
    y = np.where(int2[..., None], y2, y4)
    active = np.ones(w.shape + (L,), bool)
    if L == 8:
        active[..., 4:] = int2[..., None]
    return y, active


def parallel_int_mul(mA, w, wbits: str, int2=None):
    """The parallel integer multiplier: (i, y, active), each of shape [..., L]: the lane codes y,
    the lane products i = mA·y (exact int64) and the lane-active mask (inactive lanes have y = 0,
    so i = 0).  ``int2`` is needed for wbits="both" only (1 selects INT2)."""
    mA = np.asarray(mA, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    mA, w = np.broadcast_arrays(mA, w)
    if wbits in ("8", "16"):
        y = word_lanes(w, int(wbits))
        active = np.ones(y.shape, bool)
    else:
        if wbits == "4":
            i2 = np.zeros(w.shape, np.int64)
        elif wbits == "2":
            i2 = np.ones(w.shape, np.int64)
        elif int2 is None:
            raise ValueError("parallel_int_mul: wbits=both needs the int2 select")
        else:
            i2 = int2
        y, active = lane_codes(w, i2, lanes_of(wbits))
    return mA[..., None] * y, y, active
