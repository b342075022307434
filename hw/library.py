"""The library blocks as units: fp_add, fp_mul, fp_product, fp_convert, dp4, fused_dot, int_mul,
csa_tree, popcount, lzc, barrel_shift, with their golden models and default workloads.

``UNITS`` is the target of the ``hw`` entry point of the group ``tcgen.families``
(pyproject.toml); declaring it has no side effect.  Each block's params sit beside the block
(:class:`~tcgen.hw.fparith.FPAddParams`, :class:`~tcgen.hw.intarith.IntMulParams` ...)."""
from __future__ import annotations

import numpy as np
from amaranth.lib import data

from . import numeric as num
from .dot import Dp4, Dp4Params
from . import sm90
from .fused import FusedDot, FusedDotParams
from .mma import MmaSm90, MmaSm90Params
from .fparith import (FPAdd, FPAddParams, FPConvert, FPConvertParams, FPMul, FPMulParams,
                      FPProduct, FPProductParams)
from .layout import pack, unpack
from .intarith import (LZC, BarrelShifter, BarrelShiftParams, CSATree, CSATreeParams, IntDot,
                       IntDotParams, IntMul, IntMulParams, LZCParams, Popcount, PopcountParams)
from .spec import UnitSpec, Workload

__all__ = ["UNITS", "random_words"]


def _rand_bits(rng, n, width):
    return rng.integers(0, 1 << width, size=n, dtype=np.uint64) if width < 64 else \
        rng.integers(0, 2**63, size=n, dtype=np.uint64)


def random_words(rng, n, width):
    """Random ``width``-bit values as Python ints in an object array (any width)."""
    out = np.zeros(n, dtype=object)
    for off in range(0, width, 32):
        chunk = min(32, width - off)
        out = out + (rng.integers(0, 1 << chunk, size=n, dtype=np.uint64).astype(object) << off)
    return out


# -- floating point ------------------------------------------------------------------------------






def _fp_workload(p, rng, n):
    w = num.get_format(p.fmt).width
    return {"a": _rand_bits(rng, n, w), "b": _rand_bits(rng, n, w)}


def _fp_values(relu: bool):
    """Operands as a network's (issue 43: the energy of operand isolation depends on the
    data): N(0, 1) values rounded to the format (RNE), or with ``relu`` the first operand
    max(0, N(0, 1)) -- half of them zeros, as after a ReLU."""
    def stimulus(p, rng, n):
        x, y = rng.normal(0.0, 1.0, size=n), rng.normal(0.0, 1.0, size=n)
        if relu:
            x = np.maximum(x, 0.0)
        return {"a": num.from_float(x, p.fmt), "b": num.from_float(y, p.fmt)}
    return stimulus


#: the FP units' named workloads besides uniform random encodings (the default: every
#: encoding alike, so specials, subnormals and far-apart exponents are common)
FP_WORKLOADS = {
    "normal": Workload(_fp_values(False), doc="a, b ~ N(0, 1) in the format (RNE)"),
    "relu": Workload(_fp_values(True), doc="a = max(0, N(0, 1)) (half zeros), b ~ N(0, 1)")}


FP_ADD = UnitSpec(
    name="fp_add", family="hw", summary="IEEE-754 adder, any format, RNE/RTZ",
    params=FPAddParams, build=FPAdd,
    model=lambda p, a, b: {"y": num.fp_add(a, b, p.fmt, p.rounding, ftz=p.ftz)},
    ops_per_cycle=lambda p: 1.0, ops_unit="FLOP", workload=_fp_workload,
    workloads=FP_WORKLOADS)

FP_MUL = UnitSpec(
    name="fp_mul", family="hw", summary="IEEE-754 multiplier (structural significand array)",
    params=FPMulParams, build=FPMul,
    model=lambda p, a, b: {"y": num.fp_mul(a, b, p.fmt, p.rounding, ftz=p.ftz)},
    ops_per_cycle=lambda p: 1.0, ops_unit="FLOP", workload=_fp_workload,
    workloads=FP_WORKLOADS)

FP_PRODUCT = UnitSpec(
    name="fp_product", family="hw", summary="exact product in a wider format (FP16 x FP16 -> "
                                            "FP32)",
    params=FPProductParams, build=FPProduct,
    model=lambda p, a, b: {"y": num.fp_product(a, b, p.fmt, p.dst)},
    ops_per_cycle=lambda p: 1.0, ops_unit="FLOP", workload=_fp_workload)


def _lanes(p):
    return data.ArrayLayout(num.get_format(p.fmt).width, 4)


def _accs(p):
    return data.ArrayLayout(num.get_format(p.acc).width, 4)


def _dp4_model(p, a, b, c, mode=None):
    a, b = unpack(_lanes(p), a).astype(np.uint64), unpack(_lanes(p), b).astype(np.uint64)
    if not p.split:
        return {"y": num.dot4(a, b, np.asarray(c, dtype=object).astype(np.uint64), p.fmt,
                              p.acc, p.product, p.rounding, skip_zero=p.skip_zero)}
    y = num.dot4(a, b, unpack(_accs(p), c).astype(np.uint64), p.fmt, p.acc, p.product,
                 p.rounding, skip_zero=p.skip_zero,
                 split=np.asarray(mode, dtype=object).astype(np.int64))
    return {"y": pack(_accs(p), y)}


def _dp4_workload(p, rng, n):
    fw, aw = num.get_format(p.fmt).width, num.get_format(p.acc).width
    lanes = _rand_bits(rng, 4 * n, fw).reshape(n, 4)
    if p.skip_zero:                       # a quarter of the a lanes ±0, so the gate is exercised
        zero = rng.random((n, 4)) < 0.25
        lanes = np.where(zero, lanes & np.uint64(1 << (fw - 1)), lanes)
    ops = {"a": pack(_lanes(p), lanes), "b": pack(_lanes(p), _rand_bits(rng, 4 * n, fw)
                                                  .reshape(n, 4)),
           "c": _rand_bits(rng, n, aw)}
    if p.split:                           # every mode, one accumulator per group
        ops["c"] = pack(_accs(p), _rand_bits(rng, 4 * n, aw).reshape(n, 4))
        ops["mode"] = rng.integers(0, 4, size=n, dtype=np.uint64)
    return ops


DP4 = UnitSpec(
    name="dp4", family="hw", summary="DP-4: ((p0+p1)+(p2+p3))+c, exact or rounded products; "
                                   "optionally split at run time into 2xDP-2 / 4xDP-1",
    params=Dp4Params, build=Dp4, model=_dp4_model,
    ops_per_cycle=lambda p: 4.0, ops_unit="MAC", workload=_dp4_workload)

def _fused_lanes(p, fmt=None):
    return data.ArrayLayout(num.get_format(fmt or p.fmt).width, p.n)


def _fused_model(p, a, b, c):
    la, lb = _fused_lanes(p), _fused_lanes(p, p.fmt_b)
    y = num.fused_dot(unpack(la, a).astype(np.uint64), unpack(lb, b).astype(np.uint64),
                      np.asarray(c, dtype=object).astype(np.uint64), p.fmt, p.acc, p.out,
                      p.window, p.mode, acc_man=p.acc_man or None, fmt_b=p.fmt_b or None)
    return {"y": y}


def _fused_workload(p, rng, n):
    """Operands and C like a network's: normal samples times 2^-4..2^4 (finite, no specials;
    exponents spread enough that truncation and cancellation happen)."""
    def values(fmt, shape):
        x = rng.standard_normal(shape) * np.exp2(rng.integers(-4, 5, size=shape))
        return num.from_float(x, fmt)
    la, lb = _fused_lanes(p), _fused_lanes(p, p.fmt_b)
    return {"a": pack(la, values(p.fmt, (n, p.n))),
            "b": pack(lb, values(p.fmt_b or p.fmt, (n, p.n))), "c": values(p.acc, n)}


FUSED_DOT = UnitSpec(
    name="fused_dot", family="hw",
    summary="fused N-term dot product: one alignment, truncation window, one rounding "
            "(defaults: Hopper fused16_sm90)",
    params=FusedDotParams, build=FusedDot, model=_fused_model,
    ops_per_cycle=lambda p: float(p.n), ops_unit="MAC", workload=_fused_workload)

def _mma_layouts(p):
    bp = p.block
    fw = 32 if bp.fmt == "tf32" else num.get_format(bp.fmt).width     # TF32: FP32 patterns
    fwb = 32 if bp.fmt == "tf32" else num.get_format(bp.fmt_b or bp.fmt).width
    cw = num.get_format(bp.acc).width
    return (data.ArrayLayout(fw, p.m * p.k), data.ArrayLayout(fwb, p.k * p.n),
            data.ArrayLayout(cw, p.m * p.n))


def _mma_model(p, a, b, c):
    la, lb, lc = _mma_layouts(p)
    A = unpack(la, a).astype(np.uint64).reshape(-1, 1, p.m, p.k)
    B = unpack(lb, b).astype(np.uint64).reshape(-1, 1, p.k, p.n)
    C = unpack(lc, c).astype(np.uint64).reshape(-1, p.m, p.n)
    op = sm90.INSTRUCTIONS[p.instruction].with_(m=p.m, n=p.n)
    return {"d": pack(lc, sm90.mma(op, A, B, C).reshape(-1, p.m * p.n))}


def _mma_workload(p, rng, n):
    """Tiles like a network's: normal samples times 2^-4..2^4 (finite, no specials)."""
    bp = p.block
    def values(fmt, shape):
        x = rng.standard_normal(shape) * np.exp2(rng.integers(-4, 5, size=shape))
        return num.from_float(x, fmt, saturate=True)
    la, lb, lc = _mma_layouts(p)
    op_fmt = "fp32" if bp.fmt == "tf32" else bp.fmt      # TF32 operands: full FP32 patterns
    op_fmt_b = "fp32" if bp.fmt == "tf32" else (bp.fmt_b or bp.fmt)
    return {"a": pack(la, values(op_fmt, (n, p.m * p.k))),
            "b": pack(lb, values(op_fmt_b, (n, p.k * p.n))),
            "c": pack(lc, values(bp.acc, (n, p.m * p.n)))}


MMA_SM90 = UnitSpec(
    name="mma_sm90", family="hw",
    summary="a Hopper tensor-core instruction (m16n8k16 FP16/BF16, the FP8 QGMMA K-step) as "
            "measured on an H200: one fused block per output",
    params=MmaSm90Params, build=MmaSm90, model=_mma_model,
    ops_per_cycle=lambda p: float(p.m * p.n * p.k), ops_unit="MAC", workload=_mma_workload)

FP_CONVERT = UnitSpec(
    name="fp_convert", family="hw", summary="float format conversion (exact widening, "
                                            "rounded narrowing)",
    params=FPConvertParams, build=FPConvert,
    model=lambda p, a: {"y": num.fp_convert(a, p.src, p.dst, p.rounding, saturate=p.saturate,
                                            ftz=p.ftz)},
    ops_per_cycle=lambda p: 1.0, ops_unit="conversion",
    workload=lambda p, rng, n: {"a": _rand_bits(rng, n, num.get_format(p.src).width)})


# -- integer -------------------------------------------------------------------------------------


def _to_signed(x, width):
    x = np.asarray(x, dtype=np.int64)
    return np.where(x >= (1 << (width - 1)), x - (1 << width), x)


def _int_mul_model(p, a, b):
    av = _to_signed(a, p.a_width) if p.a_signed else np.asarray(a, dtype=np.int64)
    bv = _to_signed(b, p.b_width) if p.b_signed else np.asarray(b, dtype=np.int64)
    w = p.a_width + p.b_width
    prod = (av.astype(object) * bv.astype(object)) % (1 << w)
    return {"p": prod.astype(np.uint64)}


INT_MUL = UnitSpec(
    name="int_mul", family="hw",
    summary="structural array multiplier (AND partial products + Dadda tree), signed/unsigned",
    params=IntMulParams, build=IntMul, model=_int_mul_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="MAC",
    workload=lambda p, rng, n: {"a": _rand_bits(rng, n, p.a_width),
                                "b": _rand_bits(rng, n, p.b_width)})


def _int_dot_model(p, a, b, c):
    def lanes(x, width):
        x = np.asarray(x, dtype=object)
        mask = (1 << width) - 1
        v = [(x >> (k * width)) & mask for k in range(p.k)]
        return [np.where(u >= (1 << (width - 1)), u - (1 << width), u) if p.signed else u
                for u in v]
    av, bv = lanes(a, p.a_width), lanes(b, p.b_width)
    total = np.asarray(c, dtype=object) + sum(x * y for x, y in zip(av, bv))
    return {"y": (total % (1 << p.acc_width)).astype(object)}


INT_DOT = UnitSpec(
    name="int_dot", family="hw",
    summary="integer dot product c + sum a_k*b_k (k array multipliers, one Dadda tree with c), "
            "modulo 2^acc_width, signed/unsigned",
    params=IntDotParams, build=IntDot, model=_int_dot_model,
    ops_per_cycle=lambda p: float(p.k), ops_unit="MAC",
    workload=lambda p, rng, n: {"a": random_words(rng, n, p.k * p.a_width),
                                "b": random_words(rng, n, p.k * p.b_width),
                                "c": random_words(rng, n, p.acc_width)})


def _csa_model(p, x):
    x = np.asarray(x, dtype=object)
    mask = (1 << p.width) - 1
    total = sum(((x >> (i * p.width)) & mask) for i in range(p.n))
    return {"sum": np.asarray(total, dtype=object).astype(np.uint64)}


CSA_TREE = UnitSpec(
    name="csa_tree", family="hw", summary="carry-save (Dadda) sum of n unsigned operands",
    params=CSATreeParams, build=CSATree, model=_csa_model,
    ops_per_cycle=lambda p: float(p.n - 1), ops_unit="add",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.n * p.width)})




def _popcount_model(p, x):
    x = np.asarray(x, dtype=object)
    return {"count": np.frompyfunc(lambda v: bin(int(v)).count("1"), 1, 1)(x).astype(np.uint64)}


POPCOUNT = UnitSpec(
    name="popcount", family="hw", summary="population count on the compressor tree",
    params=PopcountParams, build=Popcount, model=_popcount_model,
    ops_per_cycle=lambda p: float(p.n), ops_unit="bit-op",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.n)})




def _lzc_model(p, x):
    x = np.asarray(x, dtype=object)
    return {"count": np.frompyfunc(lambda v: p.width - int(v).bit_length(), 1, 1)(x)
            .astype(np.uint64)}


LZC = UnitSpec(
    name="lzc", family="hw", summary="leading-zero counter (balanced tree)",
    params=LZCParams, build=LZC, model=_lzc_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="count",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.width) >>
                                rng.integers(0, p.width + 1, size=n).astype(object)})




def _shift_model(p, x, amount):
    x = np.asarray(x, dtype=object)
    amt = np.asarray(amount, dtype=object)
    mask = (1 << p.width) - 1
    if p.direction == "right":
        y = np.frompyfunc(lambda v, s: int(v) >> int(s), 2, 1)(x, amt)
        sticky = np.frompyfunc(lambda v, s: int(int(v) & ((1 << int(s)) - 1) != 0), 2, 1)(x, amt)
    else:
        y = np.frompyfunc(lambda v, s: (int(v) << int(s)) & mask, 2, 1)(x, amt)
        sticky = np.zeros(len(x), dtype=object)
    return {"y": y.astype(np.uint64) if p.width <= 64 else y,
            "sticky": sticky.astype(np.uint64)}


BARREL_SHIFT = UnitSpec(
    name="barrel_shift", family="hw", summary="logarithmic shifter with sticky bit",
    params=BarrelShiftParams, build=BarrelShifter, model=_shift_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="shift",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.width),
                                "amount": rng.integers(0, 1 << p.amount_bits, size=n,
                                                       dtype=np.uint64)})

UNITS = (FP_ADD, FP_MUL, FP_PRODUCT, FP_CONVERT, DP4, FUSED_DOT, MMA_SM90, INT_MUL, INT_DOT, CSA_TREE, POPCOUNT, LZC,
         BARREL_SHIFT)
