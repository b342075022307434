"""The LUT Tensor Core family's units: ``UNITS``, the target of the ``lut`` entry point of the
group ``tcgen.families`` (no side effect on import).  Each spec adapts the golden model
(:mod:`tcgen.units.lut.model`, numpy only) to the component's ports (:mod:`.rtl`): the half
table travels as one packed port (entry i at bits [w·i, w·(i+1)), two's complement for INT).
"""
from __future__ import annotations

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.spec import (FP_BITS, UnitSpec, fp_add_cells, int_add_cells, int_mul_cells,
                           reg_cells)

from . import layouts, model
from .params import (AddArrayParams, ConvLutArrayParams, LutArrayParams, LutDp4Params,
                     LutPrecomputeInt8Params, LutPrecomputeParams, MacArrayParams, int_width,
                     is_int)
from .rtl import (AddArray, ConvLutArray, LutArray, LutDp4, LutPrecompute, LutPrecomputeInt8,
                  MacArray, acc_width, entry_width, precompute_entry, table_layout)

__all__ = ["UNITS", "to_signed", "dp4_inputs", "array_request", "array_result",
           "random_requests", "mac_request", "random_mac_requests", "precompute_inputs",
           "serial_request", "random_serial_requests", "hoisted_tables"]


def to_signed(v, width: int) -> np.ndarray:
    """Two's-complement ``width``-bit words -> int64."""
    v = np.asarray(v, dtype=np.int64) & ((1 << width) - 1)
    return np.where(v >= 1 << (width - 1), v - (1 << width), v)


# -- size estimates (hw/spec.py; docs/robustness.md): cells after flat synthesis, osu018 ------
# Structural counts from the library-block costs, times a constant fitted to the family's sweep
# results (reports/lut*.json; the fit and its spread are in docs/robustness.md).
def _fbits(fmt: str) -> int:
    return int(fmt[3:]) if fmt.startswith("int") else \
        {"fp32": 32, "fp16": 16, "fp8_e4m3": 8}[fmt]


def _fadd(fmt: str) -> float:
    return int_add_cells(_fbits(fmt)) if fmt.startswith("int") else fp_add_cells(fmt)


def _lut_unit(k: int, entry: str, acc: str) -> float:
    """One LUT unit: the 2^(k-1):1 table mux, negate, the accumulate adder and register."""
    ab = _fbits(acc)
    cells = 2 ** (k - 1) * _fbits(entry) + 2 * _fbits(entry) + _fadd(acc) + reg_cells(ab)
    return cells * 1.8 if acc.startswith("int") else cells + 4 * ab


def _est_lut_array(p) -> float:
    eb = _fbits(p.entry)
    row = 2 ** (p.k - 1) * ((_fadd(p.entry) + reg_cells(eb)) if p.table == "internal" else eb)
    return 0.92 * (p.m * p.n * _lut_unit(p.k, p.entry, p.acc) + p.m * row
                   + p.n * reg_cells(p.w_bits * p.k))


def _est_lut_dp4(p) -> float:
    return 0.95 * _lut_unit(p.k, p.entry, p.acc)


def _est_lut_precompute(p) -> float:
    entries = 2 ** (p.k - 1) if p.table == "half" else 2 ** p.k
    return 0.85 * entries * ((p.k - 1) if p.network == "naive" else 1) * _fadd(p.act)


def _est_lut_precompute_int8(p) -> float:
    """Per table entry: a precompute adder and the quantizer (negate, sticky shift, round,
    clamp).  The constant is fitted to flat syntheses of k = 2..6 at int8 and int16 (`tcgen ppa
    lut_precompute_int8 -p k=K -p act=A --fraig-conflicts 1000`, osu018, 2026-11-28: measured
    over the structural count 2.25..3.10; until then the block had no flat measurement, ABC's
    default `&fraig` not finishing on it, and the estimate was 2.5x low)."""
    return 2.6 * 2 ** (p.k - 1) * (_fadd(p.act) + 3 * _fbits(p.act))


def _est_mac_dp4_array(p) -> float:
    """k multipliers (act x dequantized weight: w_bits wide in the array, full width when
    dequantized outside) and adds per unit, m x n units."""
    fp = not p.act.startswith("int")
    ab = FP_BITS[p.act] if fp else _fbits(p.act)
    wb = ab if p.dequant == "outside" else p.w_bits
    mul = int_mul_cells(ab, wb) + (40 * ab if fp else 0)
    return 0.85 * p.m * p.n * (p.k * (mul + _fadd(p.acc)) + reg_cells(_fbits(p.acc)))


def _est_add_dp4_array(p) -> float:
    return 0.84 * p.m * p.n * ((p.k + 1) * _fadd(p.acc) + reg_cells(_fbits(p.acc)))


def _est_conv_lut_array(p) -> float:
    entries = 2 ** p.k if p.variant == "unpu" else 2 ** (p.k - 1)
    unit = entries * _fbits(p.act) + _fadd(p.acc) + reg_cells(_fbits(p.acc))
    if p.acc.startswith("int"):
        unit *= 1.8                          # as lut_array's INT units
    tables = {"row": p.m, "unit": p.m * p.n, "hoisted": 0}[p.placement]
    return 0.81 * (p.m * p.n * unit + tables * entries * _fadd(p.act) * 0.3)


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
    estimate=_est_lut_dp4,
    name="lut_dp4", family="lut",
    summary="LUT DP-4 plane step: 2^(k-1):1 mux of a symmetric table, negate, x2^plane, "
            "accumulate (INT or FP; scale correct or the released RTL's)",
    params=LutDp4Params, build=LutDp4, model=_lut_dp4_model,
    ops_per_cycle=_lut_dp4_ops, ops_unit="MAC", workload=dp4_inputs)

# -- lut_array --------------------------------------------------------------------------------
def _ints(a) -> np.ndarray:
    a = np.asarray(a)
    return np.asarray(a.tolist(), dtype=np.int64) if a.dtype == object else a.astype(np.int64)


def _pack_request(p, layout, operands: dict, c, chain: bool, emit: bool) -> int:
    """One request payload of an array unit: its operand fields (unsigned words), C [M, N]
    (INT values or FP encodings, default 0) masked to the accumulator, chain, emit."""
    aw = acc_width(p.acc)
    c = np.zeros((p.m, p.n), np.int64) if c is None else _ints(c) & ((1 << aw) - 1)
    fields = {**{k: v[None] for k, v in operands.items()}, "c": c[None],
              "chain": np.array([int(chain)]), "emit": np.array([int(emit)])}
    return int(pack(layout, fields)[0])


def _unpack_requests(p, layout, req__payload, signed: dict) -> dict:
    """Request payloads -> numpy fields for a transaction model: every field as int64, the
    ``signed`` ones ({field: width}) and, for an INT accumulator, C as two's complement."""
    f = unpack(layout, np.asarray(list(req__payload), dtype=object))
    out = {k: _ints(v) for k, v in f.items()}
    for k, w in signed.items():
        out[k] = to_signed(out[k], w)
    if is_int(p.acc):
        out["c"] = to_signed(out["c"], acc_width(p.acc))
    return out


def _d_payload(p, d):
    """The model's D tiles [E, M, N] -> output payloads."""
    d = np.asarray(d).astype(np.int64) & ((1 << acc_width(p.acc)) - 1)
    return {"d__payload": pack(layouts.array_result(p), d, n=len(d))}


def array_request(p, lut, sign, idx, c=None, chain: bool = False, emit: bool = True) -> int:
    """Payload of one ``lut_array`` request: lut [M, 2^(k−1)] (INT values or FP encodings),
    sign and idx [w_bits, N] (plane j of column n, offline-encoded: :func:`.model.encode_plane`),
    c [M, N] (INT values or FP encodings; default 0)."""
    lut = _ints(lut) & ((1 << entry_width(p.entry)) - 1)
    codes = (_ints(sign) << (p.k - 1)) | _ints(idx)
    return _pack_request(p, layouts.array_request(p), {"lut": lut, "w": codes}, c, chain, emit)


def array_result(p, payload: int) -> np.ndarray:
    """D [M, N] from one output payload (INT: signed values; FP: encodings)."""
    d = _ints(unpack(layouts.array_result(p), [int(payload)])[0])
    return to_signed(d, acc_width(p.acc)) if is_int(p.acc) else d


def _lut_array_model(p, req__payload):
    f = _unpack_requests(p, layouts.array_request(p), req__payload,
                         {"lut": entry_width(p.entry)} if is_int(p.entry) else {})
    return _d_payload(p, model.lut_array_model(
        f, m=p.m, n=p.n, k=p.k, w_bits=p.w_bits, entry_fmt=p.entry, acc_fmt=p.acc,
        rounding=p.rounding, scale=p.scale)["d"])


def _random_c(p, rng):
    """A random C tile: INT well inside the accumulator's range, FP ~ N(0, 8)."""
    aw = acc_width(p.acc)
    if is_int(p.acc):
        return rng.integers(-(1 << (aw - 4)), 1 << (aw - 4), (p.m, p.n))
    return num.from_float(rng.normal(0, 8, (p.m, p.n)), p.acc)


def random_requests(p, rng, count: int, chain_rate: float = 0.5) -> list[int]:
    """``count`` random requests: tables as the precompute makes them (FP: N(0, 1) activations
    through the Gray network; INT: exact tables or INT8 codes), random plane codes, random C,
    a ``chain_rate`` share chained onto the accumulator."""
    out = []
    for _ in range(count):
        lut = _int_entries(p, rng, p.m) if is_int(p.entry) else _fp_entries(p, rng, p.m)
        sign = rng.integers(0, 2, (p.w_bits, p.n))
        idx = rng.integers(0, 1 << (p.k - 1), (p.w_bits, p.n))
        out.append(array_request(p, lut, sign, idx, _random_c(p, rng),
                                 chain=bool(rng.random() < chain_rate)))
    return out


def _stream_workload(requests):
    """A stream unit's default workload: ``requests(p, rng, n)`` offered every cycle, the
    result stream always ready."""
    def workload(p, rng, n):
        return {"req__payload": np.array(requests(p, rng, n), dtype=object),
                "req__valid": np.ones(n, dtype=np.uint64),
                "d__ready": np.ones(n, dtype=np.uint64)}
    return workload


LUT_ARRAY = UnitSpec(
    estimate=_est_lut_array,
    name="lut_array", family="lut",
    summary="LUT Tensor Core M×N×K array (default M2N64K4): tables and weight planes in "
            "registers, M·N LUT units, bit-serial W_BIT planes, chained accumulators, streams",
    params=LutArrayParams, build=LutArray, model=_lut_array_model,
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.w_bits, ops_unit="MAC",
    workload=_stream_workload(random_requests))

# -- mac_dp4_array (the MAC baseline) ---------------------------------------------------------
def mac_request(p, a, q, c=None, chain: bool = False, emit: bool = True) -> int:
    """Payload of one ``mac_dp4_array`` request: a [M, K] (INT values or FP encodings), q
    [N, K] unsigned weight codes (``dequant = outside``: q′ dequantized here to the activation
    format, rounded), c [M, N] (INT values or FP encodings; default 0)."""
    xw = entry_width(p.act)
    if p.dequant == "outside":
        qp = model.reinterpret(q, p.w_bits)
        q = qp & ((1 << xw) - 1) if is_int(p.act) else \
            num.from_float(qp.astype(np.float64), p.act, p.rounding).astype(np.int64)
    return _pack_request(p, layouts.mac_request(p), {"a": _ints(a) & ((1 << xw) - 1),
                                                     "w": _ints(q)}, c, chain, emit)


def _mac_array_model(p, req__payload):
    xw = entry_width(p.act)
    signed = {"a": xw, **({"w": xw} if p.dequant == "outside" else {})} if is_int(p.act) else {}
    f = _unpack_requests(p, layouts.mac_request(p), req__payload, signed)
    return _d_payload(p, model.mac_array_model(
        f, m=p.m, n=p.n, k=p.k, w_bits=p.w_bits, act_fmt=p.act, acc_fmt=p.acc,
        rounding=p.rounding, dequant=p.dequant)["d"])


def random_mac_requests(p, rng, count: int, chain_rate: float = 0.5) -> list[int]:
    """``count`` random requests: N(0, 1) FP activations (INT: full-range codes), random
    weight codes and C, a ``chain_rate`` share chained."""
    out = []
    for _ in range(count):
        if is_int(p.act):
            w = int_width(p.act)
            a = rng.integers(-(1 << (w - 1)), 1 << (w - 1), (p.m, p.k))
        else:
            a = num.from_float(rng.normal(0, 1, (p.m, p.k)), p.act)
        q = rng.integers(0, 1 << p.w_bits, (p.n, p.k))
        out.append(mac_request(p, a, q, _random_c(p, rng),
                               chain=bool(rng.random() < chain_rate)))
    return out


MAC_ARRAY = UnitSpec(
    estimate=_est_mac_dp4_array,
    name="mac_dp4_array", family="lut",
    summary="MAC baseline of the LUT Tensor Core at the same M×N×K: weights dequantized to the "
            "activation format, K multiplies + adder tree per output, one op per cycle",
    params=MacArrayParams, build=MacArray, model=_mac_array_model,
    ops_per_cycle=lambda p: float(p.m * p.n * p.k), ops_unit="MAC",
    workload=_stream_workload(random_mac_requests))

# -- lut_precompute ---------------------------------------------------------------------------
def _precompute_model(p, a):
    from amaranth.lib import data as _data
    xw = entry_width(p.act)
    av = _ints(unpack(_data.ArrayLayout(xw, p.k), a))
    ew = entry_width(precompute_entry(p))
    if is_int(p.act):
        t = model.precompute(to_signed(av, xw), p.act, table=p.table) & ((1 << ew) - 1)
    else:
        t = model.precompute(av.astype(np.uint64), p.act, network=p.network,
                             rounding=p.rounding, table=p.table).astype(np.int64)
    return {"t": pack(_data.ArrayLayout(ew, t.shape[-1]), t)}


def precompute_inputs(p, rng, n) -> dict:
    """Random activations (FP: N(0, 1) with specials mixed in; INT: full range), packed."""
    from amaranth.lib import data as _data
    xw = entry_width(p.act)
    if is_int(p.act):
        a = rng.integers(0, 1 << xw, (n, p.k))
    else:
        F = num.get_format(p.act)
        a = num.from_float(rng.normal(0, 1, (n, p.k)), p.act).astype(np.int64)
        special = np.array([0, F.sign_mask, 1, F.max_finite, F.min_normal], dtype=np.int64)
        pick = rng.random(a.shape) < 0.05
        a = np.where(pick, special[rng.integers(0, len(special), a.shape)], a)
    return {"a": pack(_data.ArrayLayout(xw, p.k), np.asarray(a, dtype=object))}


LUT_PRECOMPUTE = UnitSpec(
    estimate=_est_lut_precompute,
    name="lut_precompute", family="lut",
    summary="LUT table precompute: K activations -> 2^(K-1) symmetric-table entries (or UNPU's "
            "2^K {0,1} table); Gray-code or naive adder network; INT exact, FP rounded per add",
    params=LutPrecomputeParams, build=LutPrecompute, model=_precompute_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="table", workload=precompute_inputs)

# -- conv_lut_array and add_dp4_array (the conventional-LUT and ADD baselines) -----------------
def _serial_row(p) -> tuple[str, int]:
    """The per-row request field of ``conv_lut_array`` / ``add_dp4_array`` and its word width:
    the activations ("a"), or the tables ("lut") of ``conv_lut_array placement = hoisted``."""
    if getattr(p, "placement", None) == "hoisted":
        return "lut", entry_width(p.table_entry)
    return "a", entry_width(p.act)


def serial_request(p, a, codes, c=None, chain: bool = False, emit: bool = True) -> int:
    """Payload of one ``conv_lut_array`` / ``add_dp4_array`` request: a [M, K] (INT values or
    FP encodings; conv ``placement = hoisted``: the tables [M, p.table_entries] instead, INT
    values or encodings of ``p.table_entry``, e.g. :func:`hoisted_tables`), codes [w_bits, N]
    plane codes (raw: :func:`.model.plane_code`; conv ``offline_inversion``: sign << (k−1) |
    idx from :func:`.model.encode_plane`), c [M, N]."""
    row, xw = _serial_row(p)
    return _pack_request(p, layouts.serial_request(p), {row: _ints(a) & ((1 << xw) - 1),
                                                        "w": _ints(codes)}, c, chain, emit)


def hoisted_tables(p, a) -> np.ndarray:
    """The M row tables of ``conv_lut_array placement = hoisted`` from activations a [M, K]
    (INT values or encodings): what the in-array precompute would make (:func:`.model.precompute`
    on the Gray-code network; unpu: the full {0, 1} table, else the half table)."""
    a = _ints(a) if is_int(p.act) else np.asarray(a).astype(np.uint64)
    return model.precompute(a, p.act, network="gray", rounding=p.rounding,
                            table="full" if p.variant == "unpu" else "half")


def _serial_fields(p, req__payload):
    row, xw = _serial_row(p)
    return _unpack_requests(p, layouts.serial_request(p), req__payload,
                            {row: xw} if is_int(p.act) else {})


def _conv_array_model(p, req__payload):
    return _d_payload(p, model.conv_array_model(
        _serial_fields(p, req__payload), m=p.m, n=p.n, k=p.k, w_bits=p.w_bits, act_fmt=p.act,
        acc_fmt=p.acc, rounding=p.rounding, variant=p.variant, network=p.network,
        placement=p.placement)["d"])


def _add_array_model(p, req__payload):
    return _d_payload(p, model.add_array_model(
        _serial_fields(p, req__payload), m=p.m, n=p.n, k=p.k, w_bits=p.w_bits, act_fmt=p.act,
        acc_fmt=p.acc, rounding=p.rounding)["d"])


def _random_activations(p, rng, shape):
    """N(0, 1) FP activations; INT: full-range codes."""
    if is_int(p.act):
        w = int_width(p.act)
        return rng.integers(-(1 << (w - 1)), 1 << (w - 1), shape)
    return num.from_float(rng.normal(0, 1, shape), p.act)


def random_serial_requests(p, rng, count: int, chain_rate: float = 0.5) -> list[int]:
    """``count`` random requests of ``conv_lut_array`` / ``add_dp4_array``: random
    activations (conv ``placement = hoisted``: their tables, :func:`hoisted_tables`) and plane
    codes, random C, a ``chain_rate`` share chained."""
    hoisted = getattr(p, "placement", None) == "hoisted"
    out = []
    for _ in range(count):
        a = _random_activations(p, rng, (p.m, p.k))
        out.append(serial_request(p, hoisted_tables(p, a) if hoisted else a,
                                  rng.integers(0, 1 << p.k, (p.w_bits, p.n)), _random_c(p, rng),
                                  chain=bool(rng.random() < chain_rate)))
    return out


CONV_LUT_ARRAY = UnitSpec(
    estimate=_est_conv_lut_array,
    name="conv_lut_array", family="lut",
    summary="conventional-LUT baseline (UNPU-style) at the same M×N×K: tables precomputed in "
            "the array per row or per unit, or hoisted out of it, variant unpu / reinterpret / "
            "offline_inversion (Table 2's ablation), bit-serial like lut_array",
    params=ConvLutArrayParams, build=ConvLutArray, model=_conv_array_model,
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.w_bits, ops_unit="MAC",
    workload=_stream_workload(random_serial_requests))

ADD_ARRAY = UnitSpec(
    estimate=_est_add_dp4_array,
    name="add_dp4_array", family="lut",
    summary="ADD baseline (Stripes-style bit-serial) at the same M×N×K: per plane each weight "
            "bit gates its activation into K adds per output, x2^plane, accumulate",
    params=AddArrayParams, build=AddArray, model=_add_array_model,
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.w_bits, ops_unit="MAC",
    workload=_stream_workload(random_serial_requests))

def _precompute_int8_model(p, a):
    from amaranth.lib import data as _data
    xw = int_width(p.act)
    av = to_signed(_ints(unpack(_data.ArrayLayout(xw, p.k), a)), xw)
    q, e = model.quantize_table_pow2(model.precompute(av, p.act), av)
    return {"t": pack(_data.ArrayLayout(8, q.shape[-1]), q & 0xFF),
            "shift": e.astype(np.uint64)}


def _precompute_int8_inputs(p, rng, n) -> dict:
    """Full-range INT activations, a quarter of them scaled down so that small tables (no
    shift, shift 1: the RNE ties and the ±128 clamp) are frequent."""
    from amaranth.lib import data as _data
    xw = int_width(p.act)
    a = rng.integers(-(1 << (xw - 1)), 1 << (xw - 1), (n, p.k))
    small = rng.random(n) < 0.25
    a[small] >>= rng.integers(0, xw, (int(small.sum()), 1))
    return {"a": pack(_data.ArrayLayout(xw, p.k), np.asarray(a & ((1 << xw) - 1), dtype=object))}


LUT_PRECOMPUTE_INT8 = UnitSpec(
    estimate=_est_lut_precompute_int8,
    name="lut_precompute_int8", family="lut",
    summary="INT precompute + INT8 table quantization in hardware (power-of-two scale: shift = "
            "bitlen(sum|a|) - 7, RNE, clamp +-127)",
    params=LutPrecomputeInt8Params, build=LutPrecomputeInt8, model=_precompute_int8_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="table", workload=_precompute_int8_inputs)

UNITS = (LUT_DP4, LUT_ARRAY, MAC_ARRAY, LUT_PRECOMPUTE, LUT_PRECOMPUTE_INT8, CONV_LUT_ARRAY,
         ADD_ARRAY)
