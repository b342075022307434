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

__all__ = ["dense_op", "dense_res", "sparse_op", "sparse_res", "bstat_op", "DENSE_ROWS", "DENSE_COLS",
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


def _dense_shape(p) -> tuple[int, int]:
    """(rows, columns) of D in a dense request: the octet's 8×8 share, or the warp's 16×16."""
    return p.ROWS, p.COLS


def dense_op(p) -> data.StructLayout:
    """{a: R rows × 16 k FP16, b: 16 k × C columns FP16, c: R×C acc}: R = C = 8 for an octet
    (one worktuple's share), 16 for the warp."""
    rows, cols = _dense_shape(p)
    return data.StructLayout({
        "a": data.ArrayLayout(data.ArrayLayout(_FP16, K_TILE), rows),
        "b": data.ArrayLayout(data.ArrayLayout(_FP16, cols), K_TILE),
        "c": data.ArrayLayout(data.ArrayLayout(_acc(p), cols), rows)})


def dense_res(p) -> data.StructLayout:
    """{d: R×C acc}."""
    rows, cols = _dense_shape(p)
    return data.StructLayout({
        "d": data.ArrayLayout(data.ArrayLayout(_acc(p), cols), rows)})


def sparse_op(p) -> data.StructLayout:
    """{a: R rows × K FP16 values (slot order), off: R offset words (K·⌈log2 L⌉ bits, slot k
    at bits [b·k + b − 1 : b·k]), b: L rows × 16 columns FP16 (the B k-tile in the register
    file), c: R×16 acc}: R = 4 for an octet, 16 for the warp.  With ``split``: ``kmode`` (2
    bits, the MSBs): the request's k = 4, 2, 1, 1 for kmode 0..3 -- each row's first k slots
    are its non-zeros, the others are not read."""
    rows = p.ROWS
    fields = {
        "a": data.ArrayLayout(data.ArrayLayout(_FP16, p.K), rows),
        "off": data.ArrayLayout(p.K * p.offset_bits, rows),
        "b": data.ArrayLayout(data.ArrayLayout(_FP16, SPARSE_COLS), p.L),
        "c": data.ArrayLayout(data.ArrayLayout(_acc(p), SPARSE_COLS), rows)}
    if p.split:
        fields["kmode"] = 2
    return data.StructLayout(fields)


def sparse_res(p) -> data.StructLayout:
    """{d: R×16 acc}."""
    rows = p.ROWS
    return data.StructLayout({
        "d": data.ArrayLayout(data.ArrayLayout(_acc(p), SPARSE_COLS), rows)})


def bstat_op(p) -> data.StructLayout:
    """The B-stationary octet's request: :func:`sparse_op`'s fields and ``bload`` (1 bit, the
    MSB): load ``b`` into the held tile before this SWMMA (else ``b`` is not read and the held
    tile is used).  Its result is :func:`sparse_res`."""
    fields = dict(sparse_op(p).members)
    fields["bload"] = 1
    return data.StructLayout(fields)
