"""The PacQ family's units: ``UNITS``, the target of the ``pacq`` entry point of the group
``tcgen.families`` (no side effect on import).  Each spec adapts the golden model
(:mod:`tcgen.units.pacq.model`, numpy only) to the component's ports (:mod:`.rtl`).

Also here: the operations of a GEMM tile on the DP-4 streams (:func:`baseline_tile_ops`,
:func:`pacq_tile_ops`), used by tests and studies.
"""
from __future__ import annotations

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw.layout import pack, unpack
from tcgen.hw.params import ParamError
from tcgen.hw.spec import UnitSpec, Workload, fp_add_cells, fp_mul_cells

from . import layouts, model
from .model import activations
from .params import (DequantMulParams, Dp4BaselineParams, Dp4PacqParams, Fp16MulParams,
                     IntDequantParams, PacqMulParams, lanes_of)
from .rtl import (LANE_I_BITS, LANE_P_BITS, DequantMul, Dp4Baseline, Dp4Pacq, Fp16Mul,
                  IntDequant, PacqMul)

__all__ = ["UNITS", "dp4_pacq_fields", "baseline_tile_ops", "pacq_tile_ops"]


# -- helpers shared by models, workloads and tests ----------------------------------------------
def _int2_input(p, int2, n):
    if p.wbits == "both":
        return np.asarray(int2, dtype=np.int64)
    return np.full(n, 1 if p.wbits == "2" else 0, np.int64)


# -- size estimates (hw/spec.py; docs/robustness.md): cells after flat synthesis, osu018 ------
# Every pacq unit has a fixed size but for its formats and D: a few FP16 multipliers and adders
# (fp16_mul 1,444 cells, dp4_pacq D=2 18.4k; reports/pacq.json).
def _acc_add(acc: str) -> float:
    return fp_add_cells(acc)


def _est_fp16_mul(p) -> float:
    return fp_mul_cells("fp16")


def _est_int_dequant(p) -> float:
    return 25.0


def _est_dequant_mul(p) -> float:
    return 0.7 * fp_add_cells("fp16")


def _est_pacq_mul(p) -> float:
    return fp_mul_cells("fp16")


def _est_dp4_baseline(p) -> float:
    return 4 * fp_mul_cells("fp16") + 4 * _acc_add(p.acc)


def _est_dp4_pacq(p) -> float:
    return 6 * fp_mul_cells("fp16") + (p.D + (1 if p.sum_a else 0)) * 4 * _acc_add(p.acc)


def _rand_int2(p, rng, n):
    return {"int2": rng.integers(0, 2, n, dtype=np.uint64)} if p.wbits == "both" else {}


def _rand_codes(p, rng, n):
    return rng.integers(0, 4 if p.wbits == "2" else 16, n, dtype=np.uint64)


# -- fp16_mul --------------------------------------------------------------------------------
def _dequantized_weights(rng, n):
    return num.from_float(rng.integers(-8, 8, n).astype(np.float64), "fp16")


FP16_MUL = UnitSpec(
    estimate=_est_fp16_mul,
    name="fp16_mul", family="pacq",
    summary="baseline FP16 multiplier (hw FPMul at FP16: structural 11x11 array), RNE/RTZ",
    params=Fp16MulParams, build=Fp16Mul,
    model=lambda p, a, b: {"y": num.fp_mul(a, b, "fp16", p.rounding)},
    ops_per_cycle=lambda p: 1.0, ops_unit="product",
    workload=lambda p, rng, n: {"a": activations(rng, n), "b": _dequantized_weights(rng, n)})


# -- int_dequant, dequant_mul ----------------------------------------------------------------
def _dequant_model(p, code, int2=None):
    n = len(np.asarray(code))
    return {"b": model.int_dequant(code, _int2_input(p, int2, n))}


INT_DEQUANT = UnitSpec(
    estimate=_est_int_dequant,
    name="int_dequant", family="pacq",
    summary="INT4/INT2 -> FP16 through the 0x6400|y magic number and one FP16 subtraction",
    params=IntDequantParams, build=IntDequant, model=_dequant_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="weight",
    workload=lambda p, rng, n: dict({"code": _rand_codes(p, rng, n)}, **_rand_int2(p, rng, n)))


def _dequant_mul_model(p, a, code, int2=None):
    n = len(np.asarray(a))
    return {"y": model.dequant_mul(a, code, _int2_input(p, int2, n), p.rounding)}


DEQUANT_MUL = UnitSpec(
    estimate=_est_dequant_mul,
    name="dequant_mul", family="pacq",
    summary="standard flow per weight: int_dequant then FP16 multiply (1 product/cycle)",
    params=DequantMulParams, build=DequantMul, model=_dequant_mul_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="product",
    workload=lambda p, rng, n: dict({"a": activations(rng, n), "code": _rand_codes(p, rng, n)},
                                    **_rand_int2(p, rng, n)))


# -- pacq_mul --------------------------------------------------------------------------------
def _pacq_mul_model(p, a, w, int2=None):
    n = len(np.asarray(a))
    r = model.pacq_mul(np.asarray(a, dtype=np.int64), np.asarray(w, dtype=np.int64),
                   _int2_input(p, int2, n), mode=p.mode, rounding=p.rounding, wbits=p.wbits)
    if p.mode in ("paper", "literal"):
        return {"y": pack(layouts.pacq_mul_lanes(16, lanes_of(p.wbits)), r["y"])}
    lanes = r["p"] if p.mode == "exact" else r["i"]
    width = LANE_P_BITS if p.mode == "exact" else LANE_I_BITS
    lane_port = pack(layouts.pacq_mul_lanes(width, lanes_of(p.wbits)), lanes)
    return {"sign": r["sign"].astype(np.uint64), "exp": r["exp"].astype(np.uint64),
            "p_lanes" if p.mode == "exact" else "i_lanes": lane_port,
            "is_inf": r["is_inf"].astype(np.uint64), "is_nan": r["is_nan"].astype(np.uint64)}


def _pacq_mul_ops(p):
    """Products per cycle at the unit's widest configuration (8 with INT2, else 4)."""
    return float(lanes_of(p.wbits))


def _stream_check(width):
    """A width-only stream needs hardware that has that width."""
    def check(p):
        if p.wbits not in ("both", str(width)):
            raise ParamError(f"workload int{width}: the unit is built for INT{p.wbits} weights "
                             f"only (wbits={p.wbits})")
    return check


def _mul_stream(width):
    """pacq_mul streaming one weight width: A ~ N(0, 1) FP16, uniform random 16-bit words,
    int2 held at the width (the same draws as the default workload, in the same order)."""
    def stimulus(p, rng, n):
        w = {"a": activations(rng, n), "w": rng.integers(0, 1 << 16, n, dtype=np.uint64)}
        if p.wbits == "both":
            w["int2"] = np.full(n, 1 if width == 2 else 0, np.uint64)
        return w
    return Workload(stimulus, ops_per_cycle=lambda p: float(16 // width),
                    doc=f"only INT{width} words ({16 // width} products per cycle); "
                        f"A ~ N(0,1) FP16, random codes",
                    check=_stream_check(width))


PACQ_MUL = UnitSpec(
    estimate=_est_pacq_mul,
    name="pacq_mul", family="pacq",
    summary="parallel FP-INT multiplier: FP16 x packed INT4x4/INT2x8 word per cycle "
            "(modes paper/exact/offset8/literal)",
    params=PacqMulParams, build=PacqMul, model=_pacq_mul_model,
    ops_per_cycle=_pacq_mul_ops, ops_unit="product",
    workload=lambda p, rng, n: dict({"a": activations(rng, n),
                                     "w": rng.integers(0, 1 << 16, n, dtype=np.uint64)},
                                    **_rand_int2(p, rng, n)),
    workloads={"int4": _mul_stream(4), "int2": _mul_stream(2)})


# -- DP-4s (stream units: stimulus/model at payload level) -------------------------------------
def _acc_values(acc, rng, n, sigma=4.0):
    return num.from_float(rng.normal(0.0, sigma, size=n), acc)


def _dp4_baseline_model(p, op__payload, **_ignored):
    f = unpack(layouts.dp4_baseline_op(p), op__payload)
    y = model.dp4_baseline(f["a"], f["b"], f["c"], acc=p.acc, rounding=p.rounding)
    return {"res__payload": pack(layouts.dp4_baseline_res(p), {"y": y})}


def _dp4_baseline_workload(p, rng, n):
    fields = {"a": activations(rng, 4 * n).reshape(n, 4),
              "b": _dequantized_weights(rng, 4 * n).reshape(n, 4),
              "c": _acc_values(p.acc, rng, n)}
    return {"op__payload": pack(layouts.dp4_baseline_op(p), fields),
            "op__valid": np.ones(n, np.uint64), "res__ready": np.ones(n, np.uint64)}


DP4_BASELINE = UnitSpec(
    estimate=_est_dp4_baseline,
    name="dp4_baseline", family="pacq",
    summary="baseline FP16 DP-4: 4 FP16 multipliers, ((p0+p1)+(p2+p3))+c tree, FP16/FP32 "
            "accumulation (stream)",
    params=Dp4BaselineParams, build=Dp4Baseline, model=_dp4_baseline_model,
    ops_per_cycle=lambda p: 4.0, ops_unit="MAC", workload=_dp4_baseline_workload)


def dp4_pacq_fields(p, op__payload):
    """The fields of dp4_pacq operation payloads, with the optional ones filled in (int2 from
    wbits, sa = +0)."""
    f = unpack(layouts.dp4_pacq_op(p), op__payload)
    n = len(f["a"])
    f.setdefault("int2", np.full(n, 1 if p.wbits == "2" else 0, np.uint64))
    f.setdefault("sa", np.zeros(n, np.uint64))
    return f


def _dp4_pacq_model(p, op__payload, **_ignored):
    f = dp4_pacq_fields(p, op__payload)
    r = model.dp4_pacq(f["a"], f["w"], f["int2"], f["c"], f["sa"], wbits=p.wbits, D=p.D,
                   mode=p.mode, acc=p.acc, rounding=p.rounding, sum_a=p.sum_a)
    fields = {"y": r["y"], "group": r["group"]}
    if p.sum_a:
        fields["sa"] = r["sa"]
    return {"res__payload": pack(layouts.dp4_pacq_res(p), fields)}


def _dp4_pacq_workload(p, rng, n, sigma=1.0):
    L = lanes_of(p.wbits)
    fields = {"a": activations(rng, 4 * n, sigma).reshape(n, 4),
              "w": rng.integers(0, 1 << 16, (n, 4), dtype=np.uint64),
              "int2": rng.integers(0, 2, n, dtype=np.uint64),
              "c": _acc_values(p.acc, rng, n * L).reshape(n, L),
              "sa": _acc_values(p.acc, rng, n)}
    return {"op__payload": pack(layouts.dp4_pacq_op(p), _op_fields(p, fields)),
            "op__valid": np.ones(n, np.uint64), "res__ready": np.ones(n, np.uint64)}


def _op_fields(p, fields):
    """The fields of dp4_pacq's op layout among ``fields`` (int2 and sa only when the build has
    them)."""
    names = {name for name, _ in layouts.dp4_pacq_op(p)}
    return {k: v for k, v in fields.items() if k in names}


def _dp4_pacq_ops(p):
    """MACs per cycle when streaming: D trees × 4 products (one output each per cycle)."""
    return 4.0 * p.D


def _dp4_stream(width):
    """dp4_pacq streaming one weight width: each operation is held on the op stream for the
    G = L/D beats it takes, as a real producer must (the default workload offers a new payload
    every cycle, most of which the unit does not take)."""
    def stimulus(p, rng, n):
        L, Lmax = 16 // width, lanes_of(p.wbits)
        G = L // p.D
        n_ops = n // G + 1
        fields = {"a": activations(rng, 4 * n_ops).reshape(n_ops, 4),
                  "w": rng.integers(0, 1 << 16, (n_ops, 4), dtype=np.uint64),
                  "int2": np.full(n_ops, 1 if width == 2 else 0, np.uint64),
                  "c": num.from_float(rng.normal(0, 4, (n_ops, Lmax)), p.acc),
                  "sa": num.from_float(rng.normal(0, 4, n_ops), p.acc)}
        pl = pack(layouts.dp4_pacq_op(p), _op_fields(p, fields))
        return {"op__payload": np.repeat(pl, G)[:n], "op__valid": np.ones(n, np.uint64),
                "res__ready": np.ones(n, np.uint64)}
    return Workload(stimulus, doc=f"only INT{width} operations, each held for its "
                                  f"G = {16 // width}/D beats; A ~ N(0,1) FP16, c, ΣA ~ N(0,4)",
                    check=_stream_check(width))


DP4_PACQ = UnitSpec(
    estimate=_est_dp4_pacq,
    name="dp4_pacq", family="pacq",
    summary="PacQ DP-4: 4 pacq_mul, D in {1,2,4} duplicated adder trees, ΣA accumulator, "
            "FP16/FP32 accumulation (stream)",
    params=Dp4PacqParams, build=Dp4Pacq, model=_dp4_pacq_model,
    ops_per_cycle=_dp4_pacq_ops, ops_unit="MAC", workload=_dp4_pacq_workload,
    workloads={"int4": _dp4_stream(4), "int2": _dp4_stream(2)})

UNITS = (FP16_MUL, INT_DEQUANT, DEQUANT_MUL, PACQ_MUL, DP4_BASELINE, DP4_PACQ)


# -- GEMM tiles on the DP-4 streams (tests, studies) -------------------------------------------
def baseline_tile_ops(p, A, W16, chain=True):
    """Operations of an m×n×k GEMM on dp4_baseline, k in steps of 4, c chained through the
    model (operation order: k-step, then m, then n)."""
    m, k = A.shape
    n = W16.shape[1]
    C = np.zeros((m, n), np.uint64)
    ops = []
    for k0 in range(0, k, 4):
        a = np.repeat(A[:, k0:k0 + 4], n, axis=0)                          # [(m n), 4]
        b = np.tile(W16[k0:k0 + 4, :].T, (m, 1))                           # [(m n), 4]
        c = C.reshape(-1)
        ops.append(pack(layouts.dp4_baseline_op(p), {"a": a, "b": b, "c": c}))
        if chain:
            C = model.dp4_baseline(a, b, c, acc=p.acc, rounding=p.rounding).reshape(m, n)
    return np.concatenate(ops)


def pacq_tile_ops(p, A, B, wbits, chain=True):
    """Operations of an m×n×k GEMM on dp4_pacq: one op per (k-step, m, word column); c and sa
    chained through the model."""
    m, k = A.shape
    words = model.pack_n(B, wbits)                                             # [k, n // L]
    L = 16 // wbits
    q = words.shape[1]
    Lmax = lanes_of(p.wbits)
    int2 = np.full(m * q, 1 if wbits == 2 else 0)
    C = np.zeros((m, q, Lmax), np.uint64)
    S = np.zeros(m, np.uint64)
    ops = []
    for k0 in range(0, k, 4):
        a = np.repeat(A[:, k0:k0 + 4], q, axis=0)
        w = np.tile(words[k0:k0 + 4, :].T, (m, 1))
        c = C.reshape(m * q, Lmax)
        sa = np.repeat(S, q)
        ops.append(pack(layouts.dp4_pacq_op(p), _op_fields(p, {"a": a, "w": w, "int2": int2,
                                                               "c": c, "sa": sa})))
        if chain:
            r = model.dp4_pacq(a, w, int2, c, sa, wbits=p.wbits, D=p.D, mode=p.mode, acc=p.acc,
                           rounding=p.rounding, sum_a=p.sum_a)
            y = r["y"].reshape(m * q, L // p.D * p.D)                    # beats in lane order
            C = np.zeros((m, q, Lmax), np.uint64)
            C[:, :, :L] = y.reshape(m, q, L)
            S = r["sa"].reshape(m * q, L // p.D)[:, 0].reshape(m, q)[:, 0]
    return np.concatenate(ops)
