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

from .model import ACC_FORMATS, ACT_FORMATS, ENTRY_FORMATS, entry_bits

__all__ = ["LutDp4Params", "LutArrayParams", "MacArrayParams", "LutPrecomputeParams",
           "LutPrecomputeInt8Params", "ConvLutArrayParams", "AddArrayParams", "SCALES", "TABLES",
           "NETWORKS", "VARIANTS", "PLACEMENTS", "OPERANDS", "PRECOMPUTE_TABLES", "is_int",
           "int_width"]

#: FP plane scaling: correct (×2^j with ±0, subnormals and overflow right) or the released
#: RTL's add of j to the exponent field (wrong at ±0, subnormals and overflow; note §2.5)
SCALES = ("correct", "rtl")
#: where the tables (and the weight planes) live: registers inside the array, or input ports
#: held by the producer for the whole operation (the released RTL's way: its area excludes them)
TABLES = ("internal", "external")
#: the precompute's adder network: every entry on its own chain, or Gray-code order (one add
#: per entry after the first)
NETWORKS = ("gray", "naive")
#: what a precompute makes: the symmetric half table of the reinterpreted {−1, +1} weights
#: (2^(k−1) entries), or UNPU's full table of {0, 1} weights T[W] = Σ_{W_i = 1} a_i (2^k)
PRECOMPUTE_TABLES = ("half", "full")
#: the conventional LUT's steps of Table 2: UNPU (full {0, 1} table, no negation), + weight
#: reinterpretation (half table, the index inverted in the circuit), + negation-circuit
#: elimination (half table, index inverted offline: the LUT Tensor Core's unit)
VARIANTS = ("unpu", "reinterpret", "offline_inversion")
#: where the conventional LUT's precompute sits: one per table row, shared by the N units of
#: the row, or one per LUT unit (no sharing, Fig. 13's "conventional LUT"), or hoisted out of
#: the array (the LUT Tensor Core's way: the request carries the M row tables)
PLACEMENTS = ("row", "unit", "hoisted")
#: the array's operands (activations and weight planes): registers inside, or read from the
#: request, held by the producer for the whole operation
OPERANDS = ("internal", "external")


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
    table: str = param("half", choices=PRECOMPUTE_TABLES,
                       doc="half: the symmetric table of {-1,+1} weights, 2^(k-1) entries; "
                           "full: UNPU's table of {0,1} weights, 2^k entries (gray: one ±a_k "
                           "add per entry)")


    def check(self):
        if is_int(self.act) and self.rounding != "rne":
            raise self.error("rounding", self.rounding, "rne (the default) for INT: exact")


@dataclass(frozen=True)
class LutPrecomputeInt8Params(Params):
    """The INT precompute followed by INT8 table quantization in hardware, with a power-of-two
    scale (no divider): shift = max(0, bitlen(Σ|a|) − 7), entries RNE, clamped to ±127.  (FP
    tables are quantized by the software precompute, §3.1.1: a divider per table is not worth
    hardware.)"""
    UNIT = "lut_precompute_int8"
    k: int = param(4, range=(2, 6), doc="activations per table")
    act: str = param("int8", choices=("int8", "int16"), doc="INT activation format")
    network: str = param("gray", choices=NETWORKS, doc="the precompute's adder network")


class _SerialCommon:
    def check(self):
        if is_int(self.act) != is_int(self.acc):
            raise self.error("acc", self.acc, "an INT accumulator for INT activations and an FP "
                             f"one for FP activations (act is {self.act})")
        if _width(self.acc) < _width(self.act) + (self.k.bit_length() if is_int(self.act)
                                                   else 0):
            raise self.error("acc", self.acc, "wide enough for a table entry of k activations "
                             f"({self.act}, k = {self.k})")
        if is_int(self.act) and self.rounding != "rne":
            raise self.error("rounding", self.rounding, "rne (the default) for INT: nothing is "
                             "rounded")


@dataclass(frozen=True)
class ConvLutArrayParams(_SerialCommon, Params):
    """The conventional LUT baseline (UNPU-style) at the same M×N×K, bit-serial like the LUT
    Tensor Core: the table precomputed in the array from the activations; ``variant`` walks
    Table 2's ablation (unpu -> reinterpret -> offline_inversion; the last step, hoisting the
    precompute out of the array, is ``lut_array``).  ``placement = hoisted`` takes the
    precompute out of the array for every variant (the request carries the M row tables in
    the format the in-array precompute makes: :attr:`table_entry`, :attr:`table_entries`), so
    each step of the ablation can be measured with the precompute hoisted; ``network`` is then
    unused."""
    UNIT = "conv_lut_array"
    m: int = param(2, range=(1, 16), doc="rows (tables / activation rows)")
    n: int = param(64, range=(1, 256), doc="columns (outputs per row)")
    k: int = param(4, range=(2, 5), doc="activations per table")
    act: str = param("fp16", choices=ACT_FORMATS, doc="activation format (FP tables are in it; "
                     "INT tables exact)")
    acc: str = param("fp16", choices=ACC_FORMATS, doc="accumulator format")
    w_bits: int = param(2, range=(1, 8), doc="weight bits = planes = cycles per operation")
    rounding: str = param("rne", choices=MODES, doc="FP rounding (precompute adds, accumulate)")
    variant: str = param("unpu", choices=VARIANTS,
                         doc="unpu: full {0,1} table (2^k entries), raw plane bits index it, no "
                             "negation; reinterpret: half table of {-1,+1} weights, index "
                             "inverted in the circuit; offline_inversion: half table, "
                             "offline-encoded plane codes (the LUT TC unit)")
    placement: str = param("row", choices=PLACEMENTS,
                           doc="row: one precompute per table row (shared by the row's N "
                               "units); unit: one per LUT unit; hoisted: no precompute in the "
                               "array, the request carries the M row tables (unpu: the full "
                               "2^k-entry table; else the half table) instead of the "
                               "activations")
    network: str = param("gray", choices=NETWORKS,
                         doc="the precompute's adder network (unused when hoisted)")
    operands: str = param("internal", choices=OPERANDS,
                          doc="internal: activations and weight planes in registers (the table "
                              "is recomputed from them: cheaper than table registers; hoisted: "
                              "the tables and weight planes, as lut_array); external: read from "
                              "the request, held for the operation")

    @property
    def hoisted(self) -> bool:
        """The precompute is outside the array (``placement = hoisted``)."""
        return self.placement == "hoisted"

    @property
    def table_entry(self) -> str:
        """The table entry format the precompute makes: the activation format (FP), or an
        exact INT of act width + ⌊log2 K⌋ + 1 bits (:func:`.model.entry_bits`)."""
        return f"int{entry_bits(self.act, self.k)}" if is_int(self.act) else self.act

    @property
    def table_entries(self) -> int:
        """Entries of one row's table: 2^k (unpu's full {0, 1} table) or 2^(k−1) (half)."""
        return 1 << (self.k if self.variant == "unpu" else self.k - 1)


@dataclass(frozen=True)
class AddArrayParams(_SerialCommon, Params):
    """The ADD baseline (Stripes-style bit-serial) at the same M×N×K: per plane each weight bit
    gates its activation into one add (K adds per output per cycle: a tree of K−1 and the
    accumulate); D = base + Σ_j 2^j Σ_k q_{jk}·a_k = base + Σ_k q_k·a_k (unsigned codes)."""
    UNIT = "add_dp4_array"
    m: int = param(2, range=(1, 16), doc="rows (activation rows)")
    n: int = param(64, range=(1, 256), doc="columns (outputs per row)")
    k: int = param(4, range=(2, 6), doc="activations (weight bits) summed per output per cycle")
    act: str = param("fp16", choices=ACT_FORMATS, doc="activation format")
    acc: str = param("fp16", choices=ACC_FORMATS, doc="tree and accumulator format")
    w_bits: int = param(2, range=(1, 8), doc="weight bits = planes = cycles per operation")
    rounding: str = param("rne", choices=MODES, doc="FP rounding of every add")
    operands: str = param("internal", choices=OPERANDS,
                          doc="internal: activations and weight planes in registers; external: "
                              "read from the request, held for the operation")
