"""Stream payload layouts of the sparse family's octets, described once (``amaranth.lib.data``).
Fields in bit order, the first at the LSB; arrays row-major, element (0, 0) at the LSBs.  The RTL
uses them as its stream shapes; the family's adapters, tests and studies pack and unpack numpy
field arrays through the same layouts.

The request of an octet is the operand set of one (S)WMMA as the register file holds it: the
octet reads it at the fill bandwidth while the request is valid and accepts it (ready) in the
cycle of its last read, so the payload *is* the register-file model (stable while valid and not
ready, the stream rule) and the octet's area holds no copy of it.
"""
from __future__ import annotations

from amaranth.lib import data

from tcgen.hw.numeric import get_format

__all__ = ["dense_op", "dense_res", "sparse_op", "sparse_res", "DENSE_ROWS", "DENSE_COLS",
           "SPARSE_ROWS", "SPARSE_COLS", "K_TILE"]

#: one octet's share of a 16×16×16 WMMA (worktuple = threadgroups i, i+4): an 8×8 D tile
DENSE_ROWS, DENSE_COLS = 8, 8
#: one octet's share of a 16×16×16 SWMMA: 4 A rows × all 16 columns (note §2.4)
SPARSE_ROWS, SPARSE_COLS = 4, 16
#: the WMMA k-tile
K_TILE = 16
_FP16 = 16


def _acc(p) -> int:
    return get_format(p.acc).width


def dense_op(p) -> data.StructLayout:
    """{a: 8 rows × 16 k FP16, b: 16 k × 8 columns FP16, c: 8×8 acc}."""
    return data.StructLayout({
        "a": data.ArrayLayout(data.ArrayLayout(_FP16, K_TILE), DENSE_ROWS),
        "b": data.ArrayLayout(data.ArrayLayout(_FP16, DENSE_COLS), K_TILE),
        "c": data.ArrayLayout(data.ArrayLayout(_acc(p), DENSE_COLS), DENSE_ROWS)})


def dense_res(p) -> data.StructLayout:
    """{d: 8×8 acc}."""
    return data.StructLayout({
        "d": data.ArrayLayout(data.ArrayLayout(_acc(p), DENSE_COLS), DENSE_ROWS)})


def sparse_op(p) -> data.StructLayout:
    """{a: 4 rows × K FP16 values (slot order), off: 4 offset words (K·⌈log2 L⌉ bits, slot k
    at bits [b·k + b − 1 : b·k]), b: L rows × 16 columns FP16 (the B k-tile in the register
    file), c: 4×16 acc}."""
    return data.StructLayout({
        "a": data.ArrayLayout(data.ArrayLayout(_FP16, p.K), SPARSE_ROWS),
        "off": data.ArrayLayout(p.K * p.offset_bits, SPARSE_ROWS),
        "b": data.ArrayLayout(data.ArrayLayout(_FP16, SPARSE_COLS), p.L),
        "c": data.ArrayLayout(data.ArrayLayout(_acc(p), SPARSE_COLS), SPARSE_ROWS)})


def sparse_res(p) -> data.StructLayout:
    """{d: 4×16 acc}."""
    return data.StructLayout({
        "d": data.ArrayLayout(data.ArrayLayout(_acc(p), SPARSE_COLS), SPARSE_ROWS)})
