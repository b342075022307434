"""The BMMA family's units: ``UNITS``, the target of the ``bmma`` entry point of the group
``tcgen.families`` (no side effect on import), the random workloads of the units, and the
payload builders of their streams (:func:`array_request`, :func:`int8_request`,
:func:`epilogue_request`, :func:`layer_request`, :func:`array_result`, :func:`epilogue_result`,
:func:`layer_result`), packed and unpacked
through the layouts of :mod:`.layouts` (the golden models in :mod:`.model` speak field arrays).
"""
from __future__ import annotations

import numpy as np

from tcgen.hw.layout import pack, unpack
from tcgen.hw.spec import UnitSpec

from . import layouts, model
from .params import (SENSE_GE, BmmaArrayParams, BnnAffineParams, BnnEpilogueParams,
                     BnnLayerParams, BwnArrayParams, Int8MacArrayParams)
from .rtl import BmmaArray, BnnAffine, BnnEpilogue, BnnLayer, BwnArray, Int8MacArray

__all__ = ["UNITS", "workload_requests", "array_request", "array_result", "int8_request",
           "epilogue_request", "epilogue_result", "epilogue_saved", "affine_request",
           "affine_result", "bwn_request", "layer_request", "layer_result", "layer_saved"]


# -- payloads ---------------------------------------------------------------------------------
def _one(fields: dict) -> dict:
    """Fields of a single request -> a batch of one (axis 0)."""
    return {k: np.asarray(v)[None] for k, v in fields.items()}


def array_request(p, a_bits, b_bits, c=None, op: str = "xor", chain: bool = False,
                  emit: bool = True, order: str = "msb") -> int:
    """Payload of one ``bmma_array`` request (layout :func:`.layouts.array_request`).

    a: A (M, K) row-major bits, packed as the A operand memory image: row i is K/32 MSB-first
    words at payload bits [i·K, (i+1)·K) (word w of the row at [32w, 32w + 32)).  b: B (K, N),
    column j packed the same way at [j·K, (j+1)·K) of the b field.  c: C (M, N) row-major,
    ``acc_width`` bits each.  op: xor | and.  chain: add onto the accumulator (the previous
    operation's D) instead of C.  emit: send D out.
    """
    if op not in ("xor", "and"):
        raise ValueError(f"{p.UNIT}: op must be one of xor, and, got {op!r}")
    fields = {"a": model.pack_bits(np.asarray(a_bits).reshape(p.m, p.k), order),
              "b": model.pack_bits(np.asarray(b_bits).reshape(p.k, p.n).T, order),
              "c": np.zeros((p.m, p.n), np.int64) if c is None else np.asarray(c),
              "op": int(op == "and"), "chain": int(bool(chain)), "emit": int(bool(emit))}
    return int(pack(layouts.array_request(p), _one(fields))[0])


def int8_request(p, a, b, c=None, chain: bool = False, emit: bool = True) -> int:
    """Payload of one ``int8_mac_array`` request: A (M, K) int8 row-major (element k of row i at
    a-field bits [(i·K + k)·8, +8)), B (K, N) int8 with column j contiguous, C (M, N)."""
    fields = {"a": np.asarray(a).reshape(p.m, p.k), "b": np.asarray(b).reshape(p.k, p.n).T,
              "c": np.zeros((p.m, p.n), np.int64) if c is None else np.asarray(c),
              "op": 0, "chain": int(bool(chain)), "emit": int(bool(emit))}
    return int(pack(layouts.array_request(p), _one(fields))[0])


def bwn_request(p, a, b_bits, c=None, chain: bool = False, emit: bool = True) -> int:
    """Payload of one ``bwn_array`` request: A (M, K) signed ``a_width``-bit activations
    row-major, B (K, N) weight bits (column j contiguous, element k at bit k), C (M, N)."""
    lo, hi = -(1 << (p.a_width - 1)), (1 << (p.a_width - 1)) - 1
    a = np.asarray(a).reshape(p.m, p.k)
    if a.size and (a.min() < lo or a.max() > hi):
        raise ValueError(f"{p.UNIT}: a must be in {lo}..{hi} (signed a_width = {p.a_width} "
                         f"bits), got {a.min() if a.min() < lo else a.max()}")
    fields = {"a": a, "b": np.asarray(b_bits).reshape(p.k, p.n).T,
              "c": np.zeros((p.m, p.n), np.int64) if c is None else np.asarray(c),
              "op": 0, "chain": int(bool(chain)), "emit": int(bool(emit))}
    return int(pack(layouts.array_request(p), _one(fields))[0])


def layer_request(p, a_bits, b_bits, c=None, op: str = "xor", chain: bool = False,
                  emit: bool = True, k_eff: int = 0, tau=None, sense=None, residual=None,
                  last: bool = True) -> int:
    """Payload of one ``bnn_layer`` request (layout :func:`.layouts.layer_request`): the
    array's operands as :func:`array_request` (A (M, K) bits, B (K, N) bits, C, op, chain,
    emit), then the side data of the tile an emit request closes, as :func:`epilogue_request`
    takes them: k_eff (the tile's true K), τ and sense (n each, per output channel), the
    residual ((M, n), or (M, n, 4) with res_pool: one row per image; None = 0) and last
    (closes every row's pool window).  ValueError naming the field for values the ports cannot
    carry."""
    arr = unpack(layouts.array_request(p.array_params()),
                 [array_request(p.array_params(), a_bits, b_bits, c, op, chain, emit)])
    fields = {k: v[0] for k, v in arr.items()}
    pe = p.epilogue_params()
    tw = p.tau_width
    fields["k_eff"] = int(_check_int_field(p, "k_eff", np.array([k_eff]), 0,
                                           (1 << p.k_width) - 1, (1,))[0])
    fields["tau"] = _check_int_field(p, "tau", np.zeros(p.n, np.int64) if tau is None else tau,
                                     -(1 << (tw - 1)), (1 << (tw - 1)) - 1, (p.n,))
    sense = _check_int_field(p, "sense", np.zeros(p.n, np.int64) if sense is None else sense,
                             0, 3, (p.n,))
    if p.sense:
        fields["sense"] = sense
    elif np.any(sense != SENSE_GE):
        raise ValueError(f"{p.UNIT}: sense must be GE (0) for every channel when the unit is "
                         f"built with sense=false (v ≥ τ only), got {sense.tolist()}")
    if p.res_width:
        shape = (p.m, p.n, 4) if p.res_pool else (p.m, p.n)
        fields["res"] = _check_int_field(p, "residual", np.zeros(shape, np.int64)
                                         if residual is None else residual,
                                         *_signed_range(pe.res_width), shape)
    elif residual is not None:
        raise ValueError(f"{p.UNIT}: residual must be absent when res_width = 0")
    fields["last"] = int(bool(last))
    return int(pack(layouts.layer_request(p), _one(fields))[0])


def layer_result(p, payload: int) -> np.ndarray:
    """Bits (n,) of one ``bnn_layer`` output payload (one row's closed window), channel 0
    first."""
    return epilogue_result(p.epilogue_params(), payload)


def layer_saved(p, payload: int) -> np.ndarray:
    """v (n,) of one output payload of a ``save`` build, channel 0 first."""
    return epilogue_saved(p.epilogue_params(), payload)


def array_result(p, payload: int) -> np.ndarray:
    """D (M, N) int64 from one output payload of ``bmma_array`` / ``int8_mac_array``."""
    return unpack(layouts.array_result(p), [int(payload)])[0]


def _check_int_field(p, name, values, lo, hi, shape):
    arr = np.asarray(values)
    if arr.shape != shape:
        raise ValueError(f"{p.UNIT}: {name} must have shape {shape}, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].reshape(-1)[0]
            raise ValueError(f"{p.UNIT}: {name} must be integers (apply ceil/floor as "
                             f"bn_threshold does), got {bad!r}")
    elif arr.dtype.kind not in "iu" and not (arr.dtype == object and
                                            all(isinstance(x, (int, np.integer))
                                                for x in arr.reshape(-1))):
        raise ValueError(f"{p.UNIT}: {name} must be integers, got dtype {arr.dtype}")
    ints = [int(x) for x in arr.reshape(-1)]
    for x in ints:
        if not lo <= x <= hi:
            raise ValueError(f"{p.UNIT}: {name} must be in {lo}..{hi}, got {x}")
    return np.array(ints, dtype=np.int64).reshape(shape)


def epilogue_request(p, acc, k_eff: int | None, tau, sense=None, residual=None,
                     last: bool = True) -> int:
    """Payload of one ``bnn_epilogue`` item (layout :func:`.layouts.epilogue_request`): one D
    row (n accumulators), its K_eff (ignored, may be None, with fixup = false), the residual (n
    signed integers; (n, 4) with res_pool: the 2×2 window, :func:`.model.residual_window4`), the
    per-channel threshold τ (``tau_width``-bit signed) and sense (GE/LT/ZERO/ONE), and ``last``
    (closes the OR-pool window: emit the packed bits).

    Raises ValueError naming the field for τ/sense/residual/k_eff values that the port format
    cannot carry (non-integer τ, out of range, wrong shape).
    """
    shape = (p.n,)
    tw = p.tau_width
    tau = _check_int_field(p, "tau", tau, -(1 << (tw - 1)), (1 << (tw - 1)) - 1, shape)
    sense = _check_int_field(p, "sense", np.zeros(shape, np.int64) if sense is None else sense,
                             0, 3, shape)
    if not p.sense and np.any(sense != SENSE_GE):
        raise ValueError(f"{p.UNIT}: sense must be GE (0) for every channel when the unit is "
                         f"built with sense=false (v ≥ τ only), got {sense.tolist()}")
    acc = _check_int_field(p, "acc", acc, -(1 << (p.acc_width - 1)),
                           (1 << (p.acc_width - 1)) - 1, shape)
    fields = {"acc": acc, "tau": tau}
    if p.res_width:
        rshape = shape + (4,) if p.res_pool else shape
        fields["res"] = _check_int_field(p, "residual", np.zeros(rshape, np.int64)
                                         if residual is None else residual,
                                         -(1 << (p.res_width - 1)),
                                         (1 << (p.res_width - 1)) - 1, rshape)
    elif residual is not None and np.any(np.asarray(residual) != 0):
        raise ValueError(f"{p.UNIT}: residual must be absent when res_width = 0")
    if p.sense:
        fields["sense"] = sense
    if p.fixup:
        fields["k_eff"] = int(_check_int_field(p, "k_eff", np.array([k_eff]), 0,
                                               (1 << p.k_width) - 1, (1,))[0])
    fields["last"] = int(bool(last))
    return int(pack(layouts.epilogue_request(p), _one(fields))[0])


def epilogue_result(p, payload: int) -> np.ndarray:
    """Bits (n,) of one output payload, channel 0 first (it is the payload's MSB); with
    ``save`` see :func:`epilogue_saved`."""
    if p.save:
        return unpack(layouts.epilogue_result(p), [int(payload)])["bits"][0, ::-1] \
            .astype(np.uint8)
    return unpack(layouts.epilogue_result(p), [int(payload)])[0, ::-1].astype(np.uint8)


def epilogue_saved(p, payload: int) -> np.ndarray:
    """v (n,) of one output payload of a ``save`` build, channel 0 first (signed res_width)."""
    return unpack(layouts.epilogue_result(p), [int(payload)])["v"][0].astype(np.int64)


def _signed_range(width):
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def affine_request(p, acc, k_eff: int, scale, bias) -> int:
    """Payload of one ``bnn_affine`` item (layout :func:`.layouts.affine_request`): one D row
    (n accumulators), its K_eff, and the per-channel fixed-point scale and bias (integers: the
    real values times 2^F).  Raises ValueError naming the field for values the ports cannot
    carry."""
    shape = (p.n,)
    fields = {"acc": _check_int_field(p, "acc", acc, *_signed_range(p.acc_width), shape),
              "scale": _check_int_field(p, "scale", scale, *_signed_range(p.scale_width), shape),
              "bias": _check_int_field(p, "bias", bias, *_signed_range(p.bias_width), shape),
              "k_eff": int(_check_int_field(p, "k_eff", np.array([k_eff]), 0,
                                            (1 << p.k_width) - 1, (1,))[0])}
    return int(pack(layouts.affine_request(p), _one(fields))[0])


def affine_result(p, payload: int) -> np.ndarray:
    """y (n,) of one ``bnn_affine`` output payload, channel 0 first (python ints)."""
    return np.array([int(x) for x in unpack(layouts.affine_result(p), [int(payload)])[0]],
                    dtype=object)


# -- the units' models at payload level ---------------------------------------------------------
# (the UnitSpec convention: ``<stream>__payload`` in, ``<stream>__payload`` out)
def _array_model(golden):
    def run(p, req__payload):
        fields = unpack(layouts.array_request(p), np.asarray(list(req__payload), dtype=object))
        d = golden(p, fields)["d"]
        return {"d__payload": pack(layouts.array_result(p), d, n=len(d))}
    return run


def _epilogue_out(p, fields):
    """``bnn_epilogue_model`` on item fields, packed as the epilogue's output payloads."""
    got = model.bnn_epilogue_model(p, fields)
    bits = got["out"][:, ::-1]
    out = {"bits": bits, "v": got["v"]} if p.save else bits
    return {"out__payload": pack(layouts.epilogue_result(p), out, n=len(bits))}


def _epilogue_model(p, req__payload):
    return _epilogue_out(p, unpack(layouts.epilogue_request(p),
                                   np.asarray(list(req__payload), dtype=object)))


def _layer_model(p, req__payload):
    """``bnn_layer``: the composition of the two models -- ``bmma_array_model`` on the array
    fields, then ``bnn_epilogue_model`` on the D rows, each D tile's m rows in order with the
    side data of the request that emitted it (k_eff, τ, sense and last the tile's, res row i)."""
    fields = unpack(layouts.layer_request(p), np.asarray(list(req__payload), dtype=object))
    d = model.bmma_array_model(p.array_params(), fields)["d"]           # [E, m, n]
    emitted = np.flatnonzero(np.asarray(fields["emit"], np.int64))
    pe = p.epilogue_params()
    items = {"acc": d.reshape(-1, p.n)}
    for name in layouts.LAYER_SIDE:
        if name not in fields:
            continue
        v = np.asarray(fields[name])[emitted]
        items[name] = v.reshape((-1,) + v.shape[2:]) if name == "res" \
            else np.repeat(v, p.m, axis=0)
    return _epilogue_out(pe, items)


def _affine_model(p, req__payload):
    fields = unpack(layouts.affine_request(p), np.asarray(list(req__payload), dtype=object))
    y = model.bnn_affine_model(p, fields)["y"]
    return {"y__payload": pack(layouts.affine_result(p), y, n=len(y))}


def rand(rng, shape):
    return rng.integers(0, 2, shape, dtype=np.uint8)


def workload_requests(unit_name: str, p, rng, n: int) -> list[int]:
    """``n`` random requests of a unit: random operands and C; for the arrays, half the requests
    chain onto the accumulator and the op is random when selectable; for the epilogue, random
    accumulators around K/2 (so thresholds flip), random τ near 0 and 2×2 pool windows."""
    out = []
    if unit_name == "bmma_array":
        ops = ("xor", "and") if p.ops == "xor_and" else (p.ops,)
        for _ in range(n):
            a = rng.integers(0, 2, (p.m, p.k), dtype=np.uint8)
            b = rng.integers(0, 2, (p.k, p.n), dtype=np.uint8)
            c = rng.integers(-(1 << 20), 1 << 20, (p.m, p.n))
            out.append(array_request(p, a, b, c, op=ops[rng.integers(len(ops))],
                                           chain=bool(rng.integers(2)), emit=True))
    elif unit_name == "int8_mac_array":
        for _ in range(n):
            a = rng.integers(-128, 128, (p.m, p.k))
            b = rng.integers(-128, 128, (p.k, p.n))
            c = rng.integers(-(1 << 20), 1 << 20, (p.m, p.n))
            out.append(int8_request(p, a, b, c, chain=bool(rng.integers(2))))
    elif unit_name == "bwn_array":
        lo, hi = -(1 << (p.a_width - 1)), (1 << (p.a_width - 1)) - 1
        c_lim = 1 << min(20, p.acc_width - 2)
        for _ in range(n):
            out.append(bwn_request(p, rng.integers(lo, hi + 1, (p.m, p.k)),
                                   rng.integers(0, 2, (p.k, p.n)),
                                   rng.integers(-c_lim, c_lim, (p.m, p.n)),
                                   chain=bool(rng.integers(2))))
    elif unit_name == "bnn_affine":
        k_eff = min(25088, (1 << p.k_width) - 1)
        for _ in range(n):
            out.append(affine_request(
                p, rng.integers(0, min(k_eff, (1 << (p.acc_width - 1)) - 1) + 1, p.n), k_eff,
                rng.integers(*_signed_range(p.scale_width), p.n, endpoint=True),
                rng.integers(*_signed_range(min(p.bias_width, 62)), p.n, endpoint=True)))
    elif unit_name == "bnn_layer":
        # chains of 1..3 operations onto C = 0 (emit on the last), k_eff the chain's bits so v
        # = k_eff − 2·popc sits around 0 and thresholds flip; random τ, sense, residuals, last
        ops = ("xor", "and") if p.ops == "xor_and" else (p.ops,)
        t_lim = min(8, (1 << (p.tau_width - 1)) - 1)
        rshape = (p.m, p.n, 4) if p.res_pool else (p.m, p.n)
        while len(out) < n:
            steps = int(rng.integers(1, 4))
            k_eff = min(steps * p.k, (1 << p.k_width) - 1)
            tau = rng.integers(-t_lim, t_lim + 1, p.n)
            sense = rng.integers(0, 4, p.n) if p.sense else None
            res = rng.integers(-16, 17, rshape) if p.res_width >= 6 else None
            last = bool(rng.integers(2))
            op = ops[rng.integers(len(ops))]
            for t in range(min(steps, n - len(out))):
                out.append(layer_request(p, rand(rng, (p.m, p.k)), rand(rng, (p.k, p.n)),
                                         op=op, chain=t > 0, emit=t == steps - 1, k_eff=k_eff,
                                         tau=tau, sense=sense, residual=res, last=last))
    else:
        # every value must fit its port: K_eff k_width bits, acc acc_width and tau tau_width
        # bits signed (at the narrowest widths, acc_width=8 and tau_width=2, less than the
        # ranges drawn from at the defaults)
        k_eff = min(128, (1 << p.k_width) - 1, (1 << (p.acc_width - 1)) - 1)
        t_lo, t_hi = max(-8, -(1 << (p.tau_width - 1))), min(8, (1 << (p.tau_width - 1)) - 1)
        rshape = (p.n, 4) if p.res_pool else (p.n,)
        for i in range(n):
            acc = rng.integers(0, k_eff + 1, p.n)
            if not p.fixup:                       # v = acc + res: centre it on 0
                acc = acc - k_eff // 2
            tau = rng.integers(t_lo, t_hi + 1, p.n)
            res = rng.integers(-16, 17, rshape) if p.res_width >= 6 else None
            sense = rng.integers(0, 4, p.n) if p.sense else None
            out.append(epilogue_request(p, acc, k_eff, tau, sense,
                                              res, last=(i % 4 == 3)))
    return out


def _stream_unit(name: str, out_stream: str, **spec) -> UnitSpec:
    """The UnitSpec of one of the family's stream units (each takes requests on ``req`` and
    gives results on ``out_stream``): its name once, the family, the workload of
    :func:`_stream_workload`; ``spec``: the rest of :class:`~tcgen.hw.spec.UnitSpec`."""
    return UnitSpec(name=name, family="bmma", workload=_stream_workload(name, out_stream),
                    **spec)


def _stream_workload(unit_name, out_stream):
    def workload(p, rng, n):
        return {"req__payload": np.array(workload_requests(unit_name, p, rng, n), dtype=object),
                "req__valid": np.ones(n, dtype=np.uint64),
                f"{out_stream}__ready": np.ones(n, dtype=np.uint64)}
    return workload


# -- size estimates (hw/spec.py; docs/robustness.md): calibrated on osu018 sweep results --------
def _bmma_cells(p) -> float:
    """~10.6 cells per bit product per cycle (select, popcount tree) + ~253 per channel
    (accumulator, C/D registers): m8n8k128 103k (fold 1) / 59.6k (fold 2) / 38.7k (fold 4)."""
    return 10.6 * p.m * p.n * p.k / p.fold + 8.0 * p.acc_width * p.m * p.n


def _int8_mac_cells(p) -> float:
    """One 8x8 multiplier and its share of the tree (~450 cells) per MAC per cycle, plus the
    channel's accumulator: m2n2k16 29k, k32 57k."""
    return 450.0 * p.m * p.n * p.k / p.fold + 8.0 * p.acc_width * p.m * p.n


def _epilogue_cells(p) -> float:
    """~440 cells per channel at the default widths (n=8: 3.5k)."""
    widths = p.acc_width + p.k_width + p.res_width + p.tau_width
    return p.n * 440.0 * widths / 112 + 100


BMMA_ARRAY = _stream_unit(
    "bmma_array", "d",
    summary="M×N×K bit tensor-core array: D = C + popc(A xor/and B), fold F, chained s32 "
            "accumulators, streams (BTC-BNN bmma m8n8k128)",
    params=BmmaArrayParams, build=BmmaArray,
    model=_array_model(model.bmma_array_model),
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.fold, ops_unit="bit-op",
    estimate=_bmma_cells)

INT8_MAC_ARRAY = _stream_unit(
    "int8_mac_array", "d",
    summary="M×N×K INT8 MAC array (structural multipliers, same sequencer) for cost comparison "
            "with bmma_array",
    params=Int8MacArrayParams, build=Int8MacArray,
    model=_array_model(model.int8_mac_model),
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.fold, ops_unit="MAC",
    estimate=_int8_mac_cells)

BNN_EPILOGUE = _stream_unit(
    "bnn_epilogue", "out",
    summary="fused BNN epilogue: K_eff − 2·acc + residual ≥ τ (per-channel flip), OR-pool, "
            "MSB-first packing",
    params=BnnEpilogueParams, build=BnnEpilogue,
    model=_epilogue_model,
    ops_per_cycle=lambda p: float(p.n), ops_unit="result",
    estimate=_epilogue_cells)

def _affine_cells(p) -> float:
    """One v_width × scale_width multiplier and its bias tree per channel (~5.3 cells per
    partial-product bit), plus the output register."""
    return p.n * (5.3 * p.v_width * p.scale_width + 8.0 * p.out_width) + 100


BNN_AFFINE = _stream_unit(
    "bnn_affine", "y",
    summary="last-layer affine of a BNN: (K_eff − 2·acc)·scale + bias, exact fixed point",
    params=BnnAffineParams, build=BnnAffine,
    model=_affine_model,
    ops_per_cycle=lambda p: float(p.n), ops_unit="result",
    estimate=_affine_cells)

def _bwn_cells(p) -> float:
    """~8 cells per activation bit per cycle (XOR and its share of the tree) plus the
    channel's accumulator."""
    return 8.0 * p.a_width * p.m * p.n * p.k / p.fold + 8.0 * p.acc_width * p.m * p.n


BWN_ARRAY = _stream_unit(
    "bwn_array", "d",
    summary="M×N×K BWN first-layer array: D = C + Σ (w ? x : −x), binary weights, signed "
            "integer activations, the arrays' sequencer",
    params=BwnArrayParams, build=BwnArray,
    model=_array_model(model.bwn_array_model),
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.fold, ops_unit="add/sub",
    estimate=_bwn_cells)

def _layer_cells(p) -> float:
    """The array's and the epilogue's estimates plus the serializer: ~4.5 cells per register
    bit (flip-flop and load select: the side data twice, with the array's D and in the tile
    buffer, and the D tile buffer) and ~0.5 per input bit of the two row selects (fitted to
    osu018, m8n8k128: 31,442 serializer cells at s32 residuals, 22,536 at s17)."""
    pe = p.epilogue_params()
    res = p.m * p.n * p.res_width * (4 if p.res_pool else 1)
    side = p.k_width + p.n * (p.tau_width + 2) + res + 1
    regs = 2 * side + p.m * p.n * p.acc_width
    return (_bmma_cells(p.array_params()) + _epilogue_cells(pe) + 4.5 * regs +
            0.5 * p.m * p.n * (p.acc_width + p.res_width * (4 if p.res_pool else 1)))


BNN_LAYER = _stream_unit(
    "bnn_layer", "out",
    summary="bmma_array → tile-to-row serializer → bnn_epilogue: whole binarized layers "
            "(K_eff, τ, residual per tile; bits and saved v out)",
    params=BnnLayerParams, build=BnnLayer,
    model=_layer_model,
    ops_per_cycle=lambda p: p.m * p.n * p.k / p.fold, ops_unit="bit-op",
    estimate=_layer_cells)

UNITS = (BMMA_ARRAY, INT8_MAC_ARRAY, BNN_EPILOGUE, BNN_AFFINE, BWN_ARRAY, BNN_LAYER)
