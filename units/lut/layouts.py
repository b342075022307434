"""Stream payload layouts of ``lut_array``, described once (``amaranth.lib.data``).  Fields in
bit order, the first at the LSB.  The RTL uses them as its stream shapes; the family's
adapters, tests and studies pack and unpack numpy field arrays through the same layouts.
"""
from __future__ import annotations

from amaranth.lib import data

from .params import int_width, is_int

__all__ = ["fmt_width", "array_request", "array_result", "plane_code_bits", "mac_request",
           "serial_request"]


def fmt_width(fmt: str) -> int:
    from tcgen.hw.numeric import get_format
    return int_width(fmt) if is_int(fmt) else get_format(fmt).width


def plane_code_bits(p) -> int:
    """One column's code in one plane: idx (k−1 bits, the LSBs) and the sign (the MSB)."""
    return p.k


def array_request(p) -> data.StructLayout:
    """{lut: M tables × 2^(k−1) entries, w: w_bits planes × N column codes (plane j, column n
    at [(j·N + n)·k, +k): idx low, sign high), c: M×N accumulator words (row-major), chain: 1,
    emit: 1}."""
    return data.StructLayout({
        "lut": data.ArrayLayout(data.ArrayLayout(fmt_width(p.entry), 1 << (p.k - 1)), p.m),
        "w": data.ArrayLayout(data.ArrayLayout(plane_code_bits(p), p.n), p.w_bits),
        "c": data.ArrayLayout(data.ArrayLayout(fmt_width(p.acc), p.n), p.m),
        "chain": 1, "emit": 1})


def array_result(p) -> data.ArrayLayout:
    """D: M×N accumulator words, row-major, (0, 0) at the LSBs."""
    return data.ArrayLayout(data.ArrayLayout(fmt_width(p.acc), p.n), p.m)


def mac_request(p) -> data.StructLayout:
    """``mac_dp4_array``: {a: M rows × K activations, w: N columns × K weight codes (w_bits
    each, unsigned; ``dequant = outside``: the dequantized weights in the activation format),
    c: M×N accumulator words, chain: 1, emit: 1}; D as :func:`array_result`."""
    return data.StructLayout({
        "a": data.ArrayLayout(data.ArrayLayout(fmt_width(p.act), p.k), p.m),
        "w": data.ArrayLayout(data.ArrayLayout(
            p.w_bits if p.dequant == "array" else fmt_width(p.act), p.k), p.n),
        "c": data.ArrayLayout(data.ArrayLayout(fmt_width(p.acc), p.n), p.m),
        "chain": 1, "emit": 1})


def serial_request(p) -> data.StructLayout:
    """``conv_lut_array`` / ``add_dp4_array``: {a: M rows × K activations, w: w_bits planes ×
    N column codes of k bits (as :func:`array_request`; raw codes, a_0 at the MSB, except the
    offline-encoded ones of ``variant = offline_inversion``), c: M×N accumulator words, chain:
    1, emit: 1}; D as :func:`array_result`.  ``conv_lut_array`` with ``placement = hoisted``:
    {lut: M tables × ``p.table_entries`` entries of ``p.table_entry`` (entry i at the LSBs
    as :func:`array_request`), w, c, chain, emit} -- the activations' place taken by the
    tables (``variant = offline_inversion``: :func:`array_request` itself, bit for bit)."""
    if getattr(p, "placement", None) == "hoisted":
        row = {"lut": data.ArrayLayout(data.ArrayLayout(fmt_width(p.table_entry),
                                                        p.table_entries), p.m)}
    else:
        row = {"a": data.ArrayLayout(data.ArrayLayout(fmt_width(p.act), p.k), p.m)}
    return data.StructLayout({
        **row,
        "w": data.ArrayLayout(data.ArrayLayout(plane_code_bits(p), p.n), p.w_bits),
        "c": data.ArrayLayout(data.ArrayLayout(fmt_width(p.acc), p.n), p.m),
        "chain": 1, "emit": 1})


def table_census(m: int = 2, n: int = 64, k: int = 4, act: str = "int8", w_bits: int = 2,
                 entry: str = "fp16") -> dict:
    """Counts of the built designs that the paper's table-size statements are about, read from
    the stream layouts the RTL registers (``operands`` / ``table = internal``: one register bit
    per request bit): for ``conv_lut_array placement=hoisted`` at ``act`` (INT: exact entries),
    UNPU's full {0, 1} table (``full``) against the half table (``half``, the LUT Tensor Core's
    reinterpreted unit) -- entries per row table (= inputs of each unit's multiplexer), table
    register bits, and table bits broadcast (table bits × the N units of a row) -- and for
    ``lut_array`` at ``entry`` the table and weight-plane register bits of Eq. 7 and Eq. 8
    (``array``).  ``naive``: entries of a table for w_bits-bit weights without bit-serial,
    (2^w_bits)^k (§3.1)."""
    from .params import ConvLutArrayParams, LutArrayParams

    def conv(variant):
        p = ConvLutArrayParams(m=m, n=n, k=k, act=act, acc="int32" if is_int(act) else act,
                               w_bits=w_bits, variant=variant, placement="hoisted")
        bits = serial_request(p)["lut"].shape.size
        return {"entries": p.table_entries, "mux_inputs": p.table_entries,
                "table_bits": bits, "broadcast_bits": bits * n}
    full, half = conv("unpu"), conv("offline_inversion")
    pa = LutArrayParams(m=m, n=n, k=k, entry=entry, w_bits=w_bits)
    req = array_request(pa)
    return {"full": full, "half": half,
            "half_over_full": {key: half[key] / full[key] for key in full},
            "array": {"table_bits": req["lut"].shape.size, "weight_bits": req["w"].shape.size,
                      "eq7_bits": m * (1 << (k - 1)) * fmt_width(entry),
                      "eq8_bits": k * n * w_bits},
            "naive_entries": (1 << w_bits) ** k, "bit_serial_entries": 1 << k}
