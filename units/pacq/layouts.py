"""Stream payload layouts of the PacQ DP-4s, described once (``amaranth.lib.data``).

The RTL (:mod:`.rtl`) uses these as its stream payload shapes; the family's adapters, tests and
studies pack and unpack numpy field arrays through the same layouts with
:func:`tcgen.hw.layout.pack` / :func:`~tcgen.hw.layout.unpack`.  Fields are in bit order, the
first at the LSB.  Pure functions of the params; no hardware is built here.
"""
from __future__ import annotations

from amaranth.lib import data

from tcgen.hw.numeric import get_format

from .params import lanes_of

__all__ = ["acc_width", "group_bits", "dp4_baseline_op", "dp4_baseline_res", "dp4_pacq_op",
           "dp4_pacq_res", "pacq_mul_lanes"]


def acc_width(acc: str) -> int:
    """Bits of one accumulator value (FP16 or FP32 encoding)."""
    return get_format(acc).width


def group_bits(p) -> int:
    """Bits of dp4_pacq's beat counter (the ``group`` result field): G_max = L / D groups."""
    return max(1, (lanes_of(p.wbits) // p.D - 1).bit_length())


def dp4_baseline_op(p) -> data.StructLayout:
    """{a: 4×FP16, b: 4×FP16, c: acc}."""
    return data.StructLayout({"a": data.ArrayLayout(16, 4), "b": data.ArrayLayout(16, 4),
                              "c": acc_width(p.acc)})


def dp4_baseline_res(p) -> data.StructLayout:
    """{y: acc}."""
    return data.StructLayout({"y": acc_width(p.acc)})


def dp4_pacq_op(p) -> data.StructLayout:
    """{a: 4×FP16, w: 4×16 packed words, [int2: 1 (wbits=both)], c: L_max×acc, [sa: acc]}."""
    w = acc_width(p.acc)
    op = {"a": data.ArrayLayout(16, 4), "w": data.ArrayLayout(16, 4)}
    if p.wbits == "both":
        op["int2"] = 1
    op["c"] = data.ArrayLayout(w, lanes_of(p.wbits))
    if p.sum_a:
        op["sa"] = w
    return data.StructLayout(op)


def dp4_pacq_res(p) -> data.StructLayout:
    """{y: D×acc, group: group_bits, [sa: acc]}."""
    w = acc_width(p.acc)
    res = {"y": data.ArrayLayout(w, p.D), "group": group_bits(p)}
    if p.sum_a:
        res["sa"] = w
    return data.StructLayout(res)


def pacq_mul_lanes(width: int, lanes: int) -> data.ArrayLayout:
    """A pacq_mul lane port (y, p_lanes, i_lanes): lane j at bits [width·j +: width]."""
    return data.ArrayLayout(width, lanes)
