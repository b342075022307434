"""Stream payload layouts of the BMMA family, described once (``amaranth.lib.data``).

Each function returns the *structured* layout of a payload: operand tiles as nested
``ArrayLayout``s of their elements (signed where the value is two's complement), so
:func:`tcgen.hw.layout.pack` / :func:`~tcgen.hw.layout.unpack` turn payload integers into numpy
tiles and back.  The RTL (:mod:`.rtl`) reads operands at the bit level (fold chunks cut across
elements), so its ports use :func:`tcgen.hw.layout.flat` of the same layout: the same fields at
the same bits, each a plain unsigned vector.  Fields are in bit order, the first at the LSB.
"""
from __future__ import annotations

from amaranth.hdl import signed
from amaranth.lib import data

__all__ = ["WORD_BITS", "array_request", "array_result", "epilogue_request", "epilogue_result",
           "affine_request", "affine_result", "layer_request", "layer_result", "LAYER_SIDE"]

#: operand bits are carried as 32-bit words (the memory image of a K-contiguous row)
WORD_BITS = 32


def array_request(p) -> data.StructLayout:
    """Request of ``bmma_array`` / ``int8_mac_array`` / ``bwn_array``: {a, b, c, op, chain, emit}.

    bwn_array: a = M rows of K signed ``a_width``-bit activations; b = N columns of K weight
    bits (element k at bit k of the column: 1 = +1, 0 = −1).

    bmma_array: a = M rows of K/32 MSB-first 32-bit words (the A tile's memory image); b = N
    columns of B, likewise.  int8_mac_array: a = M rows of K signed INT8; b = N columns of K
    signed INT8 (column j contiguous).  c = M rows of N signed ``acc_width``-bit values.
    op (1 = AND, bmma_array with ops = xor_and only; ignored otherwise), chain, emit: 1 bit.
    """
    if p.UNIT == "int8_mac_array":
        row = brow = data.ArrayLayout(signed(8), p.k)
    elif p.UNIT == "bwn_array":
        row, brow = data.ArrayLayout(signed(p.a_width), p.k), data.ArrayLayout(1, p.k)
    else:
        row = brow = data.ArrayLayout(WORD_BITS, p.k // WORD_BITS)
    return data.StructLayout({
        "a": data.ArrayLayout(row, p.m), "b": data.ArrayLayout(brow, p.n),
        "c": array_result(p), "op": 1, "chain": 1, "emit": 1})


def array_result(p) -> data.ArrayLayout:
    """D of the arrays: M rows of N signed ``acc_width``-bit accumulators, (0, 0) at the LSBs."""
    return data.ArrayLayout(data.ArrayLayout(signed(p.acc_width), p.n), p.m)


def epilogue_request(p) -> data.StructLayout:
    """Item of ``bnn_epilogue``: {acc, [res], tau, [sense], [k_eff], last}: n signed
    accumulators, n signed residuals (absent if res_width = 0; n × 4 with res_pool), n signed
    thresholds, n 2-bit senses (absent if sense = false), k_eff (unsigned; absent with
    fixup = false), last (1 bit)."""
    fields = {"acc": data.ArrayLayout(signed(p.acc_width), p.n)}
    if p.res_width:
        res = signed(p.res_width)
        if p.res_pool:                       # the 2×2 window: 4 residuals per channel
            res = data.ArrayLayout(res, 4)
        fields["res"] = data.ArrayLayout(res, p.n)
    fields["tau"] = data.ArrayLayout(signed(p.tau_width), p.n)
    if p.sense:
        fields["sense"] = data.ArrayLayout(2, p.n)
    if p.fixup:
        fields["k_eff"] = p.k_width
    fields["last"] = 1
    return data.StructLayout(fields)


def epilogue_result(p):
    """Output of ``bnn_epilogue``: the n thresholded (pooled) bits, MSB-first: element i (bits
    [i]) is channel n − 1 − i, so channel 0 is the MSB.  With ``save``: {bits, v}, v the n
    pre-threshold values (signed ``res_width`` bits, channel 0 at the LSBs)."""
    bits = data.ArrayLayout(1, p.n)
    if p.save:
        return data.StructLayout({"bits": bits,
                                  "v": data.ArrayLayout(signed(p.res_width), p.n)})
    return bits



def affine_request(p) -> data.StructLayout:
    """Item of ``bnn_affine``: {acc, scale, bias, k_eff}: n signed accumulators, n signed
    scales, n signed biases, k_eff (unsigned)."""
    return data.StructLayout({"acc": data.ArrayLayout(signed(p.acc_width), p.n),
                              "scale": data.ArrayLayout(signed(p.scale_width), p.n),
                              "bias": data.ArrayLayout(signed(p.bias_width), p.n),
                              "k_eff": p.k_width})


def affine_result(p) -> data.ArrayLayout:
    """Output of ``bnn_affine``: n signed ``out_width``-bit results, channel 0 at the LSBs."""
    return data.ArrayLayout(signed(p.out_width), p.n)


#: the fields of a ``bnn_layer`` request after the array's (the epilogue's side data of a tile)
LAYER_SIDE = ("k_eff", "tau", "sense", "res", "last")


def layer_request(p) -> data.StructLayout:
    """Request of ``bnn_layer``: the array's request (:func:`array_request` of
    ``p.array_params()``: a, b, c, op, chain, emit, at the same bits) followed by the side data
    of the D tile an ``emit`` request closes (ignored on the others), from the epilogue's item
    (:func:`epilogue_request` of ``p.epilogue_params()``): k_eff, tau (n), sense (n; absent if
    sense = false), res (m rows of the item's res: one per image; absent if res_width = 0) and
    last (closes the pool window of every row).  Every row of a tile is one image at the same
    pixel, so k_eff, τ, sense and last are the tile's; the residual is per row."""
    arr = array_request(p.array_params())
    item = epilogue_request(p.epilogue_params())
    items = dict(item)
    fields = {name: f.shape for name, f in arr}
    for name in LAYER_SIDE:
        if name not in items:
            continue
        fields[name] = data.ArrayLayout(items[name].shape, p.m) if name == "res" \
            else items[name].shape
    return data.StructLayout(fields)


def layer_result(p):
    """Output of ``bnn_layer``: the epilogue's (:func:`epilogue_result`)."""
    return epilogue_result(p.epilogue_params())
