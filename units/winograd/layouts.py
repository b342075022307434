"""Stream payload layouts of the Winograd family's sequencing units, described once
(``amaranth.lib.data``; fields in bit order, the first at the LSB; arrays row-major, element
(0, 0) at the LSBs).  The request is the operand set of one output tile as the register file /
line buffer holds it: the unit reads it while valid and accepts it in the cycle of its last
read, so its area holds no copy."""
from __future__ import annotations

from amaranth import signed
from amaranth.lib import data

__all__ = ["conv_op", "conv_w", "direct_op", "conv_res"]


def _e(p, stage: str):
    """The element shape of a stage (``params.bits``): FP encodings unsigned, integers
    signed."""
    return signed(p.bits(stage)) if p.is_int else p.bits(stage)


def conv_op(p) -> data.StructLayout:
    """{d: C input tiles of (m+2)² data-format values (row-major), w: K×C transformed filters
    of (m+2)² transform-format values (mode int: the s·G-scaled integer filters s²·F̂ of
    ``model.ftf``), rows, cols: the tile's valid output rows / columns (1..m; the crop of an
    odd H' / W')}."""
    n = p.lanes
    bits = p.m.bit_length()
    # overlap (weight-stationary): + load (latch w into the filter bank); accumulate: + first,
    # last; wsource=stream: no w, no load (the filters come on their own stream, conv_w)
    # (WinoConv's docstring).  The default layout is unchanged.
    own_w = getattr(p, "wsource", "bank") != "stream"
    extra = {"load": 1} if getattr(p, "overlap", False) and own_w else {}
    if getattr(p, "accumulate", False):
        extra.update(first=1, last=1)
    w = {"w": conv_w(p).members["w"]} if own_w else {}
    return data.StructLayout({
        "d": data.ArrayLayout(data.ArrayLayout(_e(p, "data"), n), p.C), **w,
        "rows": bits, "cols": bits, **extra})


def conv_w(p) -> data.StructLayout:
    """{w: K×C transformed filters of (m+2)² values}: conv_op's ``w``, and the filter stream of
    ``wino_conv overlap=true wsource=stream`` (one item per request)."""
    return data.StructLayout({"w": data.ArrayLayout(data.ArrayLayout(
        data.ArrayLayout(_e(p, "filter"), p.lanes), p.C), p.K)})


def direct_op(p) -> data.StructLayout:
    """The direct baseline's request: {d: as :func:`conv_op`'s (C input tiles of (m+2)²
    data-format values), g: K×C raw 3×3 filters of 9 data-format values (row-major, element
    3r + s is g[r][s]), rows, cols: as :func:`conv_op`'s}."""
    bits = p.m.bit_length()
    return data.StructLayout({
        "d": data.ArrayLayout(data.ArrayLayout(_e(p, "data"), p.lanes), p.C),
        "g": data.ArrayLayout(data.ArrayLayout(data.ArrayLayout(_e(p, "weight"), 9), p.C), p.K),
        "rows": bits, "cols": bits})


def conv_res(p) -> data.StructLayout:
    """{y: K output tiles of m² accumulation-format values (row-major), keep: the crop mask
    (m² bits, bit i·m + j: output (i, j) lies inside the map); mode int: the exact
    convolution, signed}."""
    return data.StructLayout({
        "y": data.ArrayLayout(data.ArrayLayout(_e(p, "output"), p.m * p.m), p.K),
        "keep": p.m * p.m})
