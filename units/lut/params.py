"""Validated parameters of the LUT Tensor Core family (docs/architecture.md, "The unit protocol").

Defaults are the paper's configuration where it gives one (K = 4, FP16 tables, the released
RTL's FP16 accumulator) and the correct behaviour where the paper or the released RTL is wrong
(docs/lut.md): every deviation is a parameter (``scale = rtl`` keeps the released RTL's
exponent-field add).  Bad values raise ``ParamError`` naming unit, field, value and what is
allowed.
"""
from __future__ import annotations

from dataclasses import dataclass

from tcgen.hw.numeric import MODES
from tcgen.hw.params import Params, param

from .model import ACC_FORMATS, ACT_FORMATS, ENTRY_FORMATS

__all__ = ["LutDp4Params", "LutArrayParams", "MacArrayParams", "LutPrecomputeParams", "SCALES",
           "TABLES", "NETWORKS", "is_int", "int_width"]

#: FP plane scaling: correct (×2^j with ±0, subnormals and overflow right) or the released
#: RTL's add of j to the exponent field (wrong at ±0, subnormals and overflow; note §2.5)
SCALES = ("correct", "rtl")
#: where the tables (and the weight planes) live: registers inside the array, or input ports
#: held by the producer for the whole operation (the released RTL's way: its area excludes them)
TABLES = ("internal", "external")
#: the precompute's adder network: every entry on its own chain, or Gray-code order (one add
#: per entry after the first)
NETWORKS = ("gray", "naive")


def is_int(fmt: str) -> bool:
    return fmt.startswith("int")


def int_width(fmt: str) -> int:
    return int(fmt[3:])


def _width(fmt: str) -> int:
    from tcgen.hw.numeric import get_format
    return int_width(fmt) if is_int(fmt) else get_format(fmt).width


class _LutCommon:
    def check(self):
        if is_int(self.entry) != is_int(self.acc):
            raise self.error("acc", self.acc, "an INT accumulator for INT entries and an FP one "
                             f"for FP entries (entry is {self.entry})")
        if _width(self.acc) < _width(self.entry):
            raise self.error("acc", self.acc, f"at least as wide as the entry ({self.entry})")
        if is_int(self.entry) and self.scale != "correct":
            raise self.error("scale", self.scale, "correct for INT entries (a shift)")
        if is_int(self.entry) and self.rounding != "rne":
            raise self.error("rounding", self.rounding, "rne (the default) for INT entries: "
                             "nothing is rounded")


@dataclass(frozen=True)
class LutDp4Params(_LutCommon, Params):
    UNIT = "lut_dp4"
    k: int = param(4, range=(2, 6), doc="activations per table (the table has 2^(k-1) entries)")
    entry: str = param("fp16", choices=ENTRY_FORMATS,
                       doc="table entry format (INT: exact entries or an INT8-quantized table)")
    acc: str = param("fp16", choices=ACC_FORMATS,
                     doc="accumulator format (INT entries: int24/int32; FP entries: fp16/fp32)")
    w_bits: int = param(2, range=(1, 8), doc="weight bits: planes 0..w_bits-1 (plane port width)")
    rounding: str = param("rne", choices=MODES, doc="FP accumulate rounding")
    scale: str = param("correct", choices=SCALES,
                       doc="FP plane scaling: correct, or rtl (the released RTL's exponent add)")


@dataclass(frozen=True)
class LutArrayParams(_LutCommon, Params):
    UNIT = "lut_array"
    m: int = param(2, range=(1, 16), doc="rows: tables per operation (activation rows)")
    n: int = param(64, range=(1, 256), doc="columns: weight groups per plane (outputs per row)")
    k: int = param(4, range=(2, 6), doc="activations per table (2^(k-1) entries)")
    entry: str = param("fp16", choices=ENTRY_FORMATS, doc="table entry format")
    acc: str = param("fp16", choices=ACC_FORMATS, doc="accumulator format")
    w_bits: int = param(2, range=(1, 8), doc="weight bits = planes = cycles per operation")
    rounding: str = param("rne", choices=MODES, doc="FP accumulate rounding")
    scale: str = param("correct", choices=SCALES, doc="FP plane scaling (see lut_dp4)")
    table: str = param("internal", choices=TABLES,
                       doc="internal: table and weight-plane registers in the array; external: "
                           "read from the request, held for the whole operation (their way)")


@dataclass(frozen=True)
class MacArrayParams(Params):
    """The MAC baseline (a conventional tensor core for mpGEMM): weights dequantized to the
    activation format, K multiplies and an adder tree per output, one operation per cycle."""
    UNIT = "mac_dp4_array"
    m: int = param(2, range=(1, 16), doc="rows (activation rows)")
    n: int = param(64, range=(1, 256), doc="columns (outputs per row)")
    k: int = param(4, range=(2, 6), doc="products per output per cycle")
    act: str = param("fp16", choices=ACT_FORMATS, doc="activation format (weights are "
                     "dequantized to it)")
    acc: str = param("fp16", choices=ACC_FORMATS, doc="product, tree and accumulator format")
    w_bits: int = param(2, range=(1, 8), doc="weight code bits (q' = 2q - (2^b - 1))")
    rounding: str = param("rne", choices=MODES, doc="FP rounding (dequant, products, adds)")
    dequant: str = param("array", choices=("array", "outside"),
                         doc="array: codes dequantized in the array (synthesis may specialize "
                             "the multipliers to the few weight values); outside: weights "
                             "arrive in the activation format, general multipliers (a "
                             "conventional tensor core fed dequantized weights)")

    def check(self):
        if is_int(self.act) != is_int(self.acc):
            raise self.error("acc", self.acc, "an INT accumulator for INT activations and an FP "
                             f"one for FP activations (act is {self.act})")
        if _width(self.acc) < _width(self.act):
            raise self.error("acc", self.acc, f"at least as wide as the activation ({self.act})")
        if is_int(self.act) and self.rounding != "rne":
            raise self.error("rounding", self.rounding, "rne (the default) for INT: nothing is "
                             "rounded")


@dataclass(frozen=True)
class LutPrecomputeParams(Params):
    """Table precompute: K activations -> the 2^(K−1)-entry symmetric table (INT: exact
    entries of act width + ⌊log2 K⌋ + 1 bits; FP: entries in the activation format, every add
    rounded)."""
    UNIT = "lut_precompute"
    k: int = param(4, range=(2, 6), doc="activations per table")
    act: str = param("fp16", choices=ACT_FORMATS, doc="activation format")
    network: str = param("gray", choices=NETWORKS,
                         doc="gray: T[0] on a chain, then one ±2a_k add per entry in Gray-code "
                             "order; naive: each entry on its own chain of k-1 adds")
    rounding: str = param("rne", choices=MODES, doc="FP rounding of every add")

    def check(self):
        if is_int(self.act) and self.rounding != "rne":
            raise self.error("rounding", self.rounding, "rne (the default) for INT: exact")
