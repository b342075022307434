"""The LUT Tensor Core family's units: ``UNITS``, the target of the ``lut`` entry point of the
group ``tcgen.families`` (no side effect on import).  Each spec adapts the golden model
(:mod:`tcgen.units.lut.model`, numpy only) to the component's ports (:mod:`.rtl`): the half
table travels as one packed port (entry i at bits [w·i, w·(i+1)), two's complement for INT).
"""
from __future__ import annotations

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.spec import UnitSpec

from . import model
from .params import LutDp4Params, int_width, is_int
from .rtl import LutDp4, acc_width, entry_width, plane_bits, table_layout

__all__ = ["UNITS", "to_signed", "dp4_inputs"]


def to_signed(v, width: int) -> np.ndarray:
    """Two's-complement ``width``-bit words -> int64."""
    v = np.asarray(v, dtype=np.int64) & ((1 << width) - 1)
    return np.where(v >= 1 << (width - 1), v - (1 << width), v)


def _lut_dp4_model(p, lut, sign, idx, plane, c):
    t = unpack(table_layout(p), lut)                          # (n, 2^(k-1)) unsigned words
    t = np.asarray(t.tolist(), dtype=np.int64) if t.dtype == object else t.astype(np.int64)
    c = np.asarray(c, dtype=np.int64)
    aw = acc_width(p.acc)
    if is_int(p.entry):
        t, c = to_signed(t, entry_width(p.entry)), to_signed(c, aw)
    y = model.dp_step(t if is_int(p.entry) else t.astype(np.uint64), sign, idx, plane,
                      c if is_int(p.acc) else c.astype(np.uint64), entry_fmt=p.entry,
                      acc_fmt=p.acc, rounding=p.rounding, scale=p.scale)
    return {"y": np.asarray(y).astype(np.int64).astype(np.uint64) & np.uint64((1 << aw) - 1)
            if aw < 64 else np.asarray(y).astype(np.uint64)}


def _int_entries(p, rng, n):
    """INT table entries as a precompute makes them: exact tables of random activations of the
    entry's width (an INT8 table: random codes in ±127, as table quantization gives)."""
    w = int_width(p.entry)
    if p.entry == "int8":
        return rng.integers(-127, 128, (n, 1 << (p.k - 1)))
    act = max(2, w - p.k.bit_length())                        # activations whose table fits
    a = rng.integers(-(1 << (act - 1)), 1 << (act - 1), (n, p.k))
    return model.half_table(a)


def _fp_entries(p, rng, n):
    """FP tables from N(0, 1) activations through the Gray-code precompute in the entry
    format, with a few specials (±0, subnormals, large values) mixed in."""
    a = num.from_float(rng.normal(0, 1, (n, p.k)), p.entry)
    t = model.precompute(a, p.entry, network="gray")
    F = num.get_format(p.entry)
    special = np.array([0, F.sign_mask, 1, F.min_normal, F.max_finite], dtype=np.uint64)
    pick = rng.random(t.shape) < 0.05
    return np.where(pick, special[rng.integers(0, len(special), t.shape)], t)


def dp4_inputs(p, rng, n) -> dict:
    """Random inputs of ``lut_dp4`` (``n`` vectors): tables, sign, idx, plane < w_bits, c."""
    aw = acc_width(p.acc)
    if is_int(p.entry):
        t = _int_entries(p, rng, n) & ((1 << entry_width(p.entry)) - 1)
        c = rng.integers(-(1 << (aw - 2)), 1 << (aw - 2), n) & ((1 << aw) - 1)
    else:
        t = _fp_entries(p, rng, n)
        c = num.from_float(rng.normal(0, 8, n), p.acc)
    return {"lut": pack(table_layout(p), np.asarray(t, dtype=object)),
            "sign": rng.integers(0, 2, n, dtype=np.uint64),
            "idx": rng.integers(0, 1 << (p.k - 1), n, dtype=np.uint64),
            "plane": rng.integers(0, p.w_bits, n, dtype=np.uint64),
            "c": np.asarray(c, dtype=np.uint64)}


def _lut_dp4_ops(p):
    """w_bits-bit MACs per cycle: k weight-bit products per plane, w_bits planes per MAC."""
    return p.k / p.w_bits


LUT_DP4 = UnitSpec(
    name="lut_dp4", family="lut",
    summary="LUT DP-4 plane step: 2^(k-1):1 mux of a symmetric table, negate, x2^plane, "
            "accumulate (INT or FP; scale correct or the released RTL's)",
    params=LutDp4Params, build=LutDp4, model=_lut_dp4_model,
    ops_per_cycle=_lut_dp4_ops, ops_unit="MAC", workload=dp4_inputs)

UNITS = (LUT_DP4,)
