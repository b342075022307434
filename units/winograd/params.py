"""Validated parameters of the Winograd family's transform units (docs/architecture.md, "The
unit protocol"; docs/winograd.md).  Defaults are the paper's configuration: F(2×2,3×3) in FP32
(PPoPP'20 is FP32 throughout).  Bad values raise ``ParamError`` naming unit, field, value and
what is allowed.

Every unit takes the golden model's number ``mode`` (:data:`~tcgen.units.winograd.model.MODES`)
and works in the format the model gives its stage (:func:`~tcgen.units.winograd.model.formats`):
the ITF and FTF in the *transform* format (FP32 for ``fp32``; FP16 for ``fp16`` and
``fp16acc``, which build the same hardware), the OTF in the *accumulation* format (FP32 for
``fp32`` and ``fp16``; FP16 for ``fp16acc``); ``int``: exact two's-complement integers whose
widths are :func:`~tcgen.units.winograd.model.int_widths`'.  The integer-only fields
(``data_bits``, ``weight_bits``, ``channels``) must stay at their defaults in the FP modes, so
one hardware configuration has one set of parameters.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tcgen.hw import numeric as num
from tcgen.hw.params import Params, param

from . import model

__all__ = ["WinoItfParams", "WinoFtfParams", "WinoOtfParams", "WinoConvParams",
           "DirectConvParams", "equal_throughput_dps", "TILES", "MODES", "lane_ranges",
           "tile_param", "mode_param", "width_param", "derived", "or_C"]

#: output tile sizes m of F(m×m, 3×3)
TILES = model.TILES
#: number modes: the golden model's
MODES = model.MODES
_BITS = (2, 32)                       # the model's data/weight widths (model._check_width)
_INT_ONLY = ("data_bits", "weight_bits", "channels")


def _coefficients(fn, m: int, k: int) -> np.ndarray:
    """The exact integer coefficients of a linear integer stage: ``fn`` (model.itf / ftf /
    otf in mode "int") on the k×k one-hot basis -> [k², outputs] (Python ints)."""
    basis = np.eye(k * k, dtype=np.int64).reshape(k * k, k, k)
    return fn(basis, m, "int").reshape(k * k, -1).astype(object)


def _box(coef: np.ndarray, lo, hi):
    """Per output: the exact (lo, hi) of Σ coef·x over independent x in [lo, hi] (per input,
    arrays or scalars)."""
    lo = np.broadcast_to(np.asarray(lo, dtype=object), coef.shape[:1])
    hi = np.broadcast_to(np.asarray(hi, dtype=object), coef.shape[:1])
    pos, neg = np.where(coef > 0, coef, 0), np.where(coef < 0, coef, 0)
    return (pos * lo[:, None] + neg * hi[:, None]).sum(axis=0), \
        (pos * hi[:, None] + neg * lo[:, None]).sum(axis=0)


def lane_ranges(m: int, data_bits: int, weight_bits: int, channels: int) -> dict:
    """Per lane ℓ (row-major over the (m+2)×(m+2) transformed tile) the exact value range of
    each integer stage, as (lo, hi) object arrays of (m+2)² Python ints: ``itf`` (Î),
    ``ftf`` (s²·F̂), ``product`` and ``acc`` (Ô: ``channels`` products, the range an EWMM
    lane can reach).  :func:`~tcgen.units.winograd.model.int_widths` takes the min / max of
    these over the lanes; its OTF widths are the interval bound for Ô in these boxes, so they
    are the contract of the integer OTF unit's input (docs/winograd.md)."""
    n = m + 2
    dlo, dhi = -(1 << (data_bits - 1)), (1 << (data_bits - 1)) - 1
    wlo, whi = -(1 << (weight_bits - 1)), (1 << (weight_bits - 1)) - 1
    ilo, ihi = _box(_coefficients(model.itf, m, n), dlo, dhi)
    flo, fhi = _box(_coefficients(model.ftf, m, 3), wlo, whi)
    corners = [ilo * flo, ilo * fhi, ihi * flo, ihi * fhi]
    plo = np.array([min(c[i] for c in corners) for i in range(n * n)], dtype=object)
    phi = np.array([max(c[i] for c in corners) for i in range(n * n)], dtype=object)
    return {"itf": (ilo, ihi), "ftf": (flo, fhi), "product": (plo, phi),
            "acc": (plo * channels, phi * channels)}


# -- what several params classes declare alike, declared once ----------------------------------
def tile_param(doc: str):
    """The ``m`` field of F(m×m, 3×3): default 2, one of :data:`TILES`."""
    return param(2, choices=TILES, doc=doc)


def mode_param(default: str, doc: str):
    """The ``mode`` field: the golden model's number mode, one of :data:`MODES`."""
    return param(default, choices=MODES, doc=doc)


def width_param(doc: str, **kw):
    """A signed integer width field (``data_bits``, ``weight_bits``: mode int): default 8,
    2..32 (the model's widths)."""
    return param(8, range=_BITS, doc=doc, **kw)


def derived(path: str, doc: str = "") -> property:
    """A read-only property: the dotted attribute ``path`` of the params (``"C"``,
    ``"linebuf.Th"``) -- a value one params class takes from a field or from a part's params."""
    names = path.split(".")

    def get(self):
        v = self
        for name in names:
            v = getattr(v, name)
        return v
    return property(get, doc=doc)


def or_C(field: str, doc: str) -> property:
    """A read-only property: the field's value, or C where it is 0 (a chunk or a total whose
    default is C)."""
    return property(lambda self: getattr(self, field) or self.C, doc=doc)


class _Wino:
    """What the three transform units share: m, mode, the formats and the integer widths."""

    def check_int_fields(self, fields: tuple[str, ...]):
        if self.mode == "int":
            return
        defaults = {f.name: f.default for f in self.fields()}
        for name in fields:
            if getattr(self, name) != defaults[name]:
                raise self.error(name, getattr(self, name),
                                 f"{defaults[name]} (the default) unless mode=int: it sets "
                                 f"the integer widths only")

    @property
    def n(self) -> int:
        """The transformed tile's side, m + 2."""
        return self.m + 2

    @property
    def is_int(self) -> bool:
        return self.mode == "int"

    def fmt(self, stage: str) -> str:
        """The FP format of a stage ("transform" or "acc"; FP modes only)."""
        return model.formats(self.mode)[stage]

    @cached_property
    def widths(self) -> dict:
        """:func:`~tcgen.units.winograd.model.int_widths` of these params (mode int)."""
        return model.int_widths(self.m, self.data_bits, self.weight_bits, self.channels)


@dataclass(frozen=True)
class WinoItfParams(_Wino, Params):
    UNIT = "wino_itf"
    m: int = param(2, choices=TILES, doc="output tile m of F(m×m, 3×3): 2 (4×4 tiles) or 4 "
                                         "(6×6 tiles)")
    mode: str = param("fp32", choices=MODES,
                      doc="the model's number mode; the ITF works in its transform format "
                          "(fp32; fp16 and fp16acc: FP16; int: exact)")
    data_bits: int = param(8, range=_BITS, doc="signed input width (mode int)")
    weight_bits = 8
    channels = 1

    def check(self):
        self.check_int_fields(("data_bits",))

    @property
    def in_bits(self) -> int:
        return self.data_bits if self.is_int else num.get_format(self.fmt("transform")).width

    @property
    def out_bits(self) -> int:
        return self.widths["itf"][2] if self.is_int else self.in_bits


@dataclass(frozen=True)
class WinoFtfParams(_Wino, Params):
    UNIT = "wino_ftf"
    m: int = param(2, choices=TILES, doc="output tile m: 2 (FP ×½ network or integer 2G) or 4 "
                                         "(integer 24G only)")
    mode: str = param("fp32", choices=MODES,
                      doc="the model's number mode; the FTF works in its transform format "
                          "(fp32; fp16 and fp16acc: FP16; int: the exact s·G network)")
    weight_bits: int = param(8, range=_BITS, doc="signed weight width (mode int)")
    data_bits = 8
    channels = 1

    def check(self):
        self.check_int_fields(("weight_bits",))
        if self.m == 4 and not self.is_int:
            raise self.error("mode", self.mode,
                             "int with m=4: the F(4,3) FP filter transform is offline only "
                             "(the model rounds the exact G·g·Gᵀ once, ftf='exact'; that is not "
                             "an adder network); on-chip FP FTF exists for m=2")

    @property
    def in_bits(self) -> int:
        return self.weight_bits if self.is_int else num.get_format(self.fmt("transform")).width

    @property
    def out_bits(self) -> int:
        return self.widths["ftf"][2] if self.is_int else self.in_bits


@dataclass(frozen=True)
class WinoOtfParams(_Wino, Params):
    UNIT = "wino_otf"
    m: int = param(2, choices=TILES, doc="output tile m of F(m×m, 3×3): 2 or 4")
    mode: str = param("fp32", choices=MODES,
                      doc="the model's number mode; the OTF works in its accumulation format "
                          "(fp32 and fp16: FP32; fp16acc: FP16; int: exact, s²-scaled)")
    data_bits: int = param(8, range=_BITS, doc="signed input width the EWMM saw (mode int: "
                                               "sets the OTF widths)")
    weight_bits: int = param(8, range=_BITS, doc="signed weight width (mode int)")
    channels: int = param(512, range=(1, 1 << 16),
                          doc="C, channels accumulated into Ô (mode int; default the paper's "
                              "largest layer, C = 512)")

    def check(self):
        self.check_int_fields(_INT_ONLY)

    @property
    def in_bits(self) -> int:
        return self.widths["acc"][2] if self.is_int else num.get_format(self.fmt("acc")).width

    @property
    def out_bits(self) -> int:
        return self.widths["otf"][2] if self.is_int else self.in_bits

    @property
    def count_bits(self) -> int:
        """Width of the ``rows`` / ``cols`` ports: 0 .. 2m − 1 (2 bits for m = 2, 3 for 4)."""
        return self.m.bit_length()

    @cached_property
    def lanes(self) -> tuple:
        """(lo, hi) of Ô per lane: the integer input contract (:func:`lane_ranges`)."""
        return lane_ranges(self.m, self.data_bits, self.weight_bits, self.channels)["acc"]


#: number modes of the convolution datapaths: the model's
CONV_MODES = MODES
#: wino_conv's element-wise multipliers
EWMM_KINDS = ("dp4", "pacq", "pacq4")


class _ConvSchedule(_Wino):
    """What the two tile datapaths (wino_conv, direct_conv3x3) share: ``dots`` dot products
    per request of ``terms`` terms each, ``dps`` DP-4 units at a time (a group), each dot
    product through ⌈terms/4⌉ chunks (``rtl._dp_schedule``, the one DP-4 schedule); the
    widths of their operands (:meth:`bits`)."""

    channels = derived("C")

    def check(self):
        self.check_int_fields(("data_bits", "weight_bits"))

    def bits(self, stage: str) -> int:
        """Width of a stage's values: ``data`` (input tiles), ``weight`` (raw filters),
        ``transform`` (Î), ``filter`` (transformed filters F̂, or s²·F̂ in mode int), ``acc``
        (the EWMM / dot-product accumulator), ``otf`` (the OTF result: s²·O in mode int),
        ``output`` (the result).  FP modes: the widths of ``model.formats(mode)``; mode int:
        :func:`~tcgen.units.winograd.model.int_widths` at C channels (the direct datapath
        accumulates in the output width: every partial sum of its 9C products lies in the
        output's range)."""
        if not self.is_int:
            f = model.formats(self.mode)
            fmt = {"data": "data", "weight": "data", "transform": "transform",
                   "filter": "transform", "acc": "acc", "otf": "acc", "output": "acc"}[stage]
            return num.get_format(f[fmt]).width
        key = {"data": "input", "weight": "weight", "transform": "itf", "filter": "ftf",
               "acc": "acc", "otf": "otf", "output": "output"}[stage]
        return self.widths[key][2]

    @property
    def chunks(self) -> int:
        """DP-4 passes per dot product: ⌈terms/4⌉."""
        return -(-self.terms // 4)

    @property
    def groups(self) -> int:
        """⌈dots / dps⌉ groups (each ``chunks`` cycles)."""
        return -(-self.dots // self.dps)

    @property
    def dp4_ops(self) -> int:
        """DP-4 operations per tile: dots · chunks."""
        return self.dots * self.chunks


@dataclass(frozen=True)
class WinoConvParams(_ConvSchedule, Params):
    """The Winograd tile datapath (:class:`~tcgen.units.winograd.rtl.WinoConv`): one output
    tile position per request, ``C`` input channels, ``K`` filters, ``dps`` DP-4 units."""
    UNIT = "wino_conv"
    m: int = param(2, choices=TILES, doc="output tile m of F(m×m, 3×3)")
    mode: str = param("fp32", choices=CONV_MODES,
                      doc="number mode (model.formats): data, transform, product, acc formats; "
                          "int: exact integers of model.int_widths (2G / 24G filters)")
    C: int = param(8, range=(1, 64), doc="input channels per request (accumulated)")
    K: int = param(4, range=(1, 16), doc="filters (output channels) per request")
    dps: int = param(4, range=(1, 16), doc="DP-4 units of the element-wise stage")
    data_bits: int = param(8, range=_BITS, doc="signed input width (mode int)",
                           key_default=False)
    weight_bits: int = param(8, range=_BITS, doc="signed weight width (mode int; the "
                             "request carries the s·G-transformed filters, wider)",
                             key_default=False)
    ewmm: str = param("dp4", choices=EWMM_KINDS, key_default=False,
                      doc="the element-wise multiplier: dp4 (one DP-4 per dot product) or, in "
                          "mode int, pacq (PacQ's parallel multiplier: |Î| × a 16-bit word of "
                          "offset-binary s²·F̂ codes, lanes filters at once, + the ΣÎ "
                          "correction; docs/winograd.md); pacq4: PacQ's INT4 lanes, 4 filters "
                          "a word, as the paper packs weights -- s²·F̂ does not fit and wraps: "
                          "WRONG results, kept only to measure that configuration (m=2)")
    overlap: bool = param(False, key_default=False,
                          doc="the overlapped, weight-stationary datapath (issue 42): a "
                              "ping-pong Î bank (the next request's ITF under the EWMM), a "
                              "ping-pong Ô bank (the OTF under the next EWMM) and a filter "
                              "bank latched from requests whose load flag is set; one tile per "
                              "max(C, EWMM, K) cycles back to back (ewmm=dp4)")
    accumulate: bool = param(False, key_default=False,
                             doc="Ô accumulation across requests (overlap=true): requests "
                                 "carry first / last flags; the EWMM continues from the "
                                 "previous request's Ô unless first, the OTF runs on last")
    wsource: str = param("bank", choices=("bank", "stream"), key_default=False,
                         doc="overlap=true: where the EWMM's filters come from -- bank (a "
                             "filter bank in the unit, latched by requests with load=1) or "
                             "stream (a second input stream w, one filter set per request, "
                             "read while its EWMM runs: the resident filters stay in the "
                             "source, as the first datapath's request keeps them)")
    C_total: int = param(0, range=(0, 1 << 16), key_default=False,
                         doc="mode int with accumulate: the most channels accumulated into Ô "
                             "over one first..last group (sets the Ô, OTF and output widths; "
                             "0: C)")

    def check(self):
        super().check()
        if self.overlap and self.ewmm != "dp4":
            raise self.error("overlap", self.overlap, "false unless ewmm=dp4 (the overlapped "
                             "datapath is built on the DP-4 lanes)")
        if self.wsource != "bank" and not self.overlap:
            raise self.error("wsource", self.wsource, "bank (the default) unless overlap=true")
        if self.accumulate and not self.overlap:
            raise self.error("accumulate", self.accumulate, "false unless overlap=true (the "
                             "running Ô lives in the ping-pong Ô bank)")
        if self.C_total and not (self.accumulate and self.is_int):
            raise self.error("C_total", self.C_total, "0 (the default) unless mode=int and "
                             "accumulate=true: it sets the integer widths of Ô")
        if self.C_total and self.C_total < self.C:
            raise self.error("C_total", self.C_total, f"0 or at least C = {self.C}")
        if self.ewmm == "pacq4" and self.m != 2:
            raise self.error("ewmm", self.ewmm, "dp4 or pacq with m=4 (pacq4's wrapped weights "
                             "give OTF results that are not multiples of 576, whose exact "
                             "division by 9 is then meaningless; m=2 only)")
        if self.ewmm != "dp4":
            if not self.is_int:
                raise self.error("ewmm", self.ewmm, "dp4 unless mode=int (the parallel "
                                 "multiplier's weights are integers: s²·F̂ of the s·G FTF)")
            try:
                self.pacq
            except ValueError as e:
                raise self.error("ewmm", self.ewmm, f"dp4 here: {e}") from None

    @cached_property
    def pacq(self) -> dict:
        """ewmm=pacq: :func:`~tcgen.units.winograd.model.pacq_ewmm_widths` at these params."""
        return model.pacq_ewmm_widths(self.m, self.data_bits, self.weight_bits, self.C,
                                      lane_bits=4 if self.ewmm == "pacq4" else None)

    @property
    def lanes(self) -> int:
        """(m+2)² element-wise lanes."""
        return (self.m + 2) ** 2

    @property
    def filter_groups(self) -> int:
        """Filters per DP unit at once: 1 (dp4) or groups of ``pacq["lanes"]`` (pacq): ⌈K/L⌉."""
        return -(-self.K // self.pacq["lanes"]) if self.ewmm != "dp4" else self.K

    @property
    def dots(self) -> int:
        """K·(m+2)² (filter, lane) dot products of C terms; ewmm=pacq: ⌈K/L⌉·(m+2)² (filter
        group, lane) ones, each L dot products at once."""
        return self.filter_groups * self.lanes

    terms = derived("C")
    channels = or_C("C_total", "Channels accumulated into Ô (the integer widths): C, or C_total "
                               "when set.")

    @property
    def ewmm_cycles(self) -> int:
        """Cycles of one request's EWMM: groups·chunks."""
        return self.groups * self.chunks

    @property
    def interval(self) -> int:
        """Cycles per tile back to back.  overlap: max(C, groups·chunks, K) -- the ITF (C
        cycles) fills one Î bank while the EWMM reads the other, the OTF (K cycles) reads one
        Ô bank while the next EWMM writes the other, so the slowest of the three sets the pace
        (with accumulate: per request; a group of r requests gives one tile per r of them).
        Otherwise max(C, K) + groups·chunks.  The OTF (K cycles) runs
        beside the next request's ITF (C cycles); that request's EWMM waits for both, since
        the Ô bank is single (issue 42: this said C + groups·chunks, 1 cycle short at C 3, K 4,
        measured; 8 short at the report's K = 16, C = 8)."""
        if self.overlap:
            return max(self.C, self.ewmm_cycles, self.K)
        return max(self.C, self.K) + self.groups * self.chunks

    @property
    def cycles(self) -> int:
        """Cycles per tile, request offered to result valid: C (ITF) + groups·chunks (EWMM) +
        K (OTF)."""
        return self.C + self.groups * self.chunks + self.K


@dataclass(frozen=True)
class DirectConvParams(_ConvSchedule, Params):
    """The direct-convolution baseline (:class:`~tcgen.units.winograd.rtl.DirectConv`): the
    same request (C input tiles of (m+2)², one output tile position) with raw 3×3 filters;
    the K·m² outputs, ``dps`` at a time, each ⌈9C/4⌉ chunks on one DP-4.

    Equal output throughput (issue 15 §2): Winograd needs K·(m+2)²·⌈C/4⌉ DP-4 operations per
    tile, direct K·m²·⌈9C/4⌉, so the baseline matches a ``wino_conv`` with dps_w DP-4 units
    when dps = dps_w · m²·⌈9C/4⌉ / ((m+2)²·⌈C/4⌉) (2.25× at m = 2, 4× at m = 4, when C is a
    multiple of 4): :func:`equal_throughput_dps` (rounded up)."""
    UNIT = "direct_conv3x3"
    m: int = param(2, choices=TILES, doc="output tile m (the request's tiles are (m+2)², as "
                                         "wino_conv's)")
    mode: str = param("fp32", choices=CONV_MODES,
                      doc="number mode (model.formats): data, product, acc formats; int: "
                          "exact integers, accumulated in the output's width")
    C: int = param(8, range=(1, 64), doc="input channels per request (accumulated)")
    K: int = param(4, range=(1, 16), doc="filters (output channels) per request")
    dps: int = param(4, range=(1, 16), doc="DP-4 units")
    data_bits: int = param(8, range=_BITS, doc="signed input width (mode int)",
                           key_default=False)
    weight_bits: int = param(8, range=_BITS, doc="signed weight width (mode int)",
                             key_default=False)

    def bits(self, stage: str) -> int:
        """As ``_ConvSchedule.bits``; mode int accumulates in the output's width."""
        return super().bits("output" if self.is_int and stage == "acc" else stage)

    @property
    def lanes(self) -> int:
        """(m+2)² values per input tile (the request's tiles are wino_conv's)."""
        return (self.m + 2) ** 2

    @property
    def dots(self) -> int:
        """K·m² outputs, each a dot product of 9·C terms."""
        return self.K * self.m * self.m

    @property
    def terms(self) -> int:
        return 9 * self.C

    @property
    def interval(self) -> int:
        """Cycles per tile back to back: groups·chunks (the copy into the result register
        runs under the next request's first cycle)."""
        return self.groups * self.chunks

    @property
    def cycles(self) -> int:
        """Cycles per tile, request offered to result valid: groups·chunks + 1 (the copy)."""
        return self.groups * self.chunks + 1


def equal_throughput_dps(wino: WinoConvParams) -> DirectConvParams:
    """The direct baseline that matches ``wino`` (a :class:`WinoConvParams`) in DP-4
    operations per cycle: same m, mode, C, K and dps = ⌈dps_w · K·m²·⌈9C/4⌉ /
    (K·(m+2)²·⌈C/4⌉)⌉ (docs/winograd.md: the rule and how close the intervals come).
    ParamError if that exceeds the dps range (1..16)."""
    same = dict(m=wino.m, mode=wino.mode, C=wino.C, K=wino.K, data_bits=wino.data_bits,
                weight_bits=wino.weight_bits)
    d = DirectConvParams(**same, dps=1)
    need = -(-wino.dps * d.dp4_ops // wino.dp4_ops)
    return DirectConvParams(**same, dps=need)
