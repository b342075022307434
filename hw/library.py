"""Registers the hw/ library blocks as units (fp_add, fp_mul, fp_convert, int_mul, csa_tree,
popcount, lzc, barrel_shift) with their params, golden models and default workloads."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import numeric as num
from .fparith import FPAdd, FPConvert, FPMul
from .intarith import LZC, BarrelShifter, CSATree, IntMul, Popcount
from .params import Params, param
from .registry import Unit, register

FORMAT_NAMES = tuple(num.FORMATS)
_U64 = np.uint64


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
@dataclass(frozen=True)
class FPAddParams(Params):
    UNIT = "fp_add"
    fmt: str = param("fp16", choices=FORMAT_NAMES, doc="number format")
    rounding: str = param("rne", choices=num.MODES, doc="rne or rtz")
    ftz: bool = param(False, doc="flush subnormal inputs and results to zero")
    pipeline: int = param(0, range=(0, 2), doc="pipeline register stages (= latency)")


@dataclass(frozen=True)
class FPMulParams(FPAddParams):
    UNIT = "fp_mul"


@dataclass(frozen=True)
class FPConvertParams(Params):
    UNIT = "fp_convert"
    src: str = param("fp32", choices=FORMAT_NAMES, doc="source format")
    dst: str = param("fp16", choices=FORMAT_NAMES, doc="destination format")
    rounding: str = param("rne", choices=num.MODES, doc="rne or rtz")
    saturate: bool = param(False, doc="overflow and inf go to ±max finite")
    ftz: bool = param(False, doc="flush subnormal inputs and results to zero")
    pipeline: int = param(0, range=(0, 1), doc="pipeline register stages (= latency)")

    def check(self):
        if self.src == self.dst:
            raise self.error("dst", self.dst, f"a format other than src ({self.src})")


def _fp_workload(p, rng, n):
    w = num.get_format(p.fmt).width
    return {"a": _rand_bits(rng, n, w), "b": _rand_bits(rng, n, w)}


register(Unit(
    name="fp_add", family="hw", summary="IEEE-754 adder, any format, RNE/RTZ",
    params=FPAddParams, build=FPAdd,
    model=lambda p, a, b: {"y": num.fp_add(a, b, p.fmt, p.rounding, ftz=p.ftz)},
    ops_per_cycle=lambda p: 1.0, ops_unit="FLOP", workload=_fp_workload))

register(Unit(
    name="fp_mul", family="hw", summary="IEEE-754 multiplier (structural significand array)",
    params=FPMulParams, build=FPMul,
    model=lambda p, a, b: {"y": num.fp_mul(a, b, p.fmt, p.rounding, ftz=p.ftz)},
    ops_per_cycle=lambda p: 1.0, ops_unit="FLOP", workload=_fp_workload))

register(Unit(
    name="fp_convert", family="hw", summary="float format conversion (exact widening, "
                                            "rounded narrowing)",
    params=FPConvertParams, build=FPConvert,
    model=lambda p, a: {"y": num.fp_convert(a, p.src, p.dst, p.rounding, saturate=p.saturate,
                                            ftz=p.ftz)},
    ops_per_cycle=lambda p: 1.0, ops_unit="conversion",
    workload=lambda p, rng, n: {"a": _rand_bits(rng, n, num.get_format(p.src).width)}))


# -- integer -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntMulParams(Params):
    UNIT = "int_mul"
    a_width: int = param(8, range=(1, 32), doc="bits of a")
    b_width: int = param(8, range=(1, 32), doc="bits of b")
    a_signed: bool = param(False, doc="a is two's complement")
    b_signed: bool = param(False, doc="b is two's complement")


def _to_signed(x, width):
    x = np.asarray(x, dtype=np.int64)
    return np.where(x >= (1 << (width - 1)), x - (1 << width), x)


def _int_mul_model(p, a, b):
    av = _to_signed(a, p.a_width) if p.a_signed else np.asarray(a, dtype=np.int64)
    bv = _to_signed(b, p.b_width) if p.b_signed else np.asarray(b, dtype=np.int64)
    w = p.a_width + p.b_width
    prod = (av.astype(object) * bv.astype(object)) % (1 << w)
    return {"p": prod.astype(np.uint64)}


register(Unit(
    name="int_mul", family="hw",
    summary="structural array multiplier (AND partial products + Dadda tree), signed/unsigned",
    params=IntMulParams, build=IntMul, model=_int_mul_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="MAC",
    workload=lambda p, rng, n: {"a": _rand_bits(rng, n, p.a_width),
                                "b": _rand_bits(rng, n, p.b_width)}))


@dataclass(frozen=True)
class CSATreeParams(Params):
    UNIT = "csa_tree"
    n: int = param(8, range=(2, 64), doc="number of operands")
    width: int = param(16, range=(1, 32), doc="bits per operand")


def _csa_model(p, x):
    x = np.asarray(x, dtype=object)
    mask = (1 << p.width) - 1
    total = sum(((x >> (i * p.width)) & mask) for i in range(p.n))
    return {"sum": np.asarray(total, dtype=object).astype(np.uint64)}


register(Unit(
    name="csa_tree", family="hw", summary="carry-save (Dadda) sum of n unsigned operands",
    params=CSATreeParams, build=CSATree, model=_csa_model,
    ops_per_cycle=lambda p: float(p.n - 1), ops_unit="add",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.n * p.width)}))


@dataclass(frozen=True)
class PopcountParams(Params):
    UNIT = "popcount"
    n: int = param(128, range=(1, 1024), doc="input bits")


def _popcount_model(p, x):
    x = np.asarray(x, dtype=object)
    return {"count": np.frompyfunc(lambda v: bin(int(v)).count("1"), 1, 1)(x).astype(np.uint64)}


register(Unit(
    name="popcount", family="hw", summary="population count on the compressor tree",
    params=PopcountParams, build=Popcount, model=_popcount_model,
    ops_per_cycle=lambda p: float(p.n), ops_unit="bit-op",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.n)}))


@dataclass(frozen=True)
class LZCParams(Params):
    UNIT = "lzc"
    width: int = param(16, range=(1, 128), doc="input bits")


def _lzc_model(p, x):
    x = np.asarray(x, dtype=object)
    return {"count": np.frompyfunc(lambda v: p.width - int(v).bit_length(), 1, 1)(x)
            .astype(np.uint64)}


register(Unit(
    name="lzc", family="hw", summary="leading-zero counter (balanced tree)",
    params=LZCParams, build=LZC, model=_lzc_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="count",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.width) >>
                                rng.integers(0, p.width + 1, size=n).astype(object)}))


@dataclass(frozen=True)
class BarrelShiftParams(Params):
    UNIT = "barrel_shift"
    width: int = param(32, range=(2, 128), doc="data bits")
    direction: str = param("right", choices=("right", "left"), doc="shift direction")
    amount_width: int = param(0, range=(0, 16), doc="bits of the amount port (0 = enough "
                                                     "for 0..2*width-1)")


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


def _shift_amount_width(p):
    return p.amount_width or max(1, (p.width - 1).bit_length() + 1)


register(Unit(
    name="barrel_shift", family="hw", summary="logarithmic shifter with sticky bit",
    params=BarrelShiftParams, build=BarrelShifter, model=_shift_model,
    ops_per_cycle=lambda p: 1.0, ops_unit="shift",
    workload=lambda p, rng, n: {"x": random_words(rng, n, p.width),
                                "amount": rng.integers(0, 1 << _shift_amount_width(p), size=n,
                                                       dtype=np.uint64)}))
