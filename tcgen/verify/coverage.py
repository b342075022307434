"""Functional coverage of the regression (docs/coverage.md), on cocotb-coverage.

What the specs say matters is defined here once, as coverpoints: the FP operand and result
classes and the rounding events of every FP unit and format, the LUT table indices and weight
planes, the sparse offsets, padding and ping-pong states, the BMMA fold phases, the Winograd crop
masks and line-buffer pad positions, and the handshake patterns of every stream unit.

Sampling happens at the three places where a bench sees a transaction, from values the bench
already has (never per vector in Python: the classification is numpy, and hits are added per
distinct bin):

* the fixed-latency bench (``benches/fixed_latency.py``): the stimulus and the golden model's
  outputs;
* the batch bench (``benches/batch.py``): each chunk's stimulus and expected outputs, in the
  worker thread that prepares the chunk;
* the stream bench (``benches/stream.py``): the payloads the DUT accepted and the expected
  outputs, the per-cycle ``(valid, ready)`` of every stream (:class:`drivers.StreamMonitor`
  keeps them) and, for units with internal states worth covering, a few internal signals
  sampled once per cycle (:data:`STATE_SIGNALS`).

A coverpoint is ``<unit>.<group>.<point>`` (group: the format or configuration the bins belong
to, e.g. ``fp_add.fp16.result``); its bins are declared in full when the point is first sampled,
so a bin the stimulus never reaches is exported with 0 hits.  :func:`save` writes the run's
coverage database (``coverage_db.export_to_yaml``) to ``<build>/coverage/`` (``build/coverage`` of
a checkout) with a side file naming
the test; ``scripts/coverage_report.py`` merges them (``cocotb_coverage.coverage.merge_coverage``)
into ``reports/coverage.md`` / ``.json`` and fails on any unhit bin (but those
:data:`UNREACHABLE` by design at the params that ran) and on any group of :data:`REQUIRED` that
no run produced.

Set ``TCGEN_COVERAGE=0`` to sample nothing (e.g. when timing a bench); mutation runs
(``TCGEN_MUTANT``, tb/mutation.py) sample nothing.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np

from tcgen.hw import numeric as num

from . import build_dir

__all__ = ["CLASSES", "ROUNDING", "RANGE", "fp_class", "rounding_events", "Sampler", "SAMPLER",
           "sample", "sample_handshakes", "sample_states", "save", "STATE_SIGNALS", "REQUIRED",
           "DIR", "enabled"]

#: the runs' coverage databases: ``<build>/coverage`` (:func:`tcgen.verify.build_dir`; the
#: harness hands the simulator its build folder, so this is the same in the simulator's Python)
DIR = build_dir() / "coverage"

#: FP classes of an encoding (``max``: the largest finite magnitude; NaN of E4M3 is S.1111.111)
CLASSES = ("zero", "subnormal", "normal", "max", "inf", "nan")
#: the exact result against the format's rounding point
ROUNDING = ("exact", "inexact", "tie")
#: the exact result against the format's range (underflow: tiny, i.e. nonzero and below the
#: smallest normal before rounding, IEEE 754 §7.5)
RANGE = ("in_range", "overflow", "underflow")
#: handshake patterns of a stream, per direction (docs/coverage.md)
STALLS = ("valid_not_ready", "ready_not_valid", "back_to_back", "stall_while_busy")


def enabled() -> bool:
    """Sampling is on unless ``TCGEN_COVERAGE=0``, and off in mutation runs (``TCGEN_MUTANT``:
    a mutant's simulation says nothing about the real RTL's coverage)."""
    return os.environ.get("TCGEN_COVERAGE", "1") not in ("0", "") and \
        not os.environ.get("TCGEN_MUTANT")


# -- classification (numpy, vectorised) --------------------------------------------------------
def _u64(x) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object:
        a = np.array([int(v) for v in a.reshape(-1)], dtype=np.uint64).reshape(a.shape)
    return a.astype(np.uint64).reshape(-1)


def fp_class(bits, fmt) -> np.ndarray:
    """Index into :data:`CLASSES` of every encoding in ``bits`` (any shape, flattened)."""
    f = num.get_format(fmt)
    x = _u64(bits) & np.uint64((1 << f.width) - 1)
    mag = x & np.uint64(f.sign_mask - 1)
    e = mag >> np.uint64(f.man_bits)
    m = mag & np.uint64(f.man_mask)
    out = np.full(x.shape, CLASSES.index("normal"), dtype=np.int8)
    out[(e == 0) & (m != 0)] = CLASSES.index("subnormal")
    out[mag == 0] = CLASSES.index("zero")
    out[mag == np.uint64(f.max_finite)] = CLASSES.index("max")
    if f.ieee:
        out[(e == f.exp_all_ones) & (m == 0)] = CLASSES.index("inf")
        out[(e == f.exp_all_ones) & (m != 0)] = CLASSES.index("nan")
    else:
        out[mag == np.uint64(f.nan)] = CLASSES.index("nan")
    return out


def format_classes(fmt) -> tuple[str, ...]:
    """The classes a format has (E4M3: no infinity)."""
    return tuple(c for c in CLASSES if c != "inf" or num.get_format(fmt).ieee)


def rounding_events(exact, fmt) -> tuple[np.ndarray, np.ndarray]:
    """``(rounding, range)`` indices into :data:`ROUNDING` / :data:`RANGE` of exact values
    (float64, exact: the callers only pass sums and products that float64 holds exactly, or
    ones whose float64 rounding cannot create or hide a tie at ``fmt``'s precision) against
    ``fmt``; non-finite values get -1 in both.

    A tie is an exact value halfway between two neighbours of ``fmt`` (in its subnormal range
    too); overflow: magnitude above the largest finite value; underflow: nonzero and below the
    smallest normal (tininess before rounding: a tiny sum is always exact, a tiny product or
    conversion may round, to a subnormal or to zero)."""
    f = num.get_format(fmt)
    x = np.asarray(exact, dtype=np.float64).reshape(-1)
    fin = np.isfinite(x)
    ax = np.where(fin, np.abs(x), 0.0)
    max_v = float(f.max_value())
    min_normal = 2.0 ** f.emin
    _, e2 = np.frexp(ax)                                 # ax = m·2^e2, m in [0.5, 1)
    ulp_exp = np.maximum(e2 - 1, f.emin) - f.man_bits
    r = np.ldexp(ax, -ulp_exp)                           # in units of the ulp: exact
    frac = r - np.floor(r)
    rnd = np.where(frac == 0.0, 0, np.where(frac == 0.5, 2, 1)).astype(np.int8)
    rng = np.zeros(x.shape, np.int8)
    rng[ax > max_v] = 1
    rng[(ax > 0) & (ax < min_normal)] = 2
    rnd[rng == 1] = -1                                    # out of range: no rounding point
    rnd[~fin] = -1
    rng[~fin] = -1
    return rnd, rng


# -- the sampler: cocotb-coverage points fed in bulk --------------------------------------------
class Sampler:
    """The run's coverpoints (``cocotb_coverage.coverage.CoverPoint`` in ``coverage_db``).

    :meth:`hit` takes a whole array of bin indices: cocotb-coverage matches one sample of each
    distinct bin (its ``CoverPoint`` does the matching and the coverage bookkeeping), and the
    remaining hits of that bin are added to its count in bulk, so a 100,000-vector chunk costs a
    ``bincount``, not 100,000 Python calls."""

    def __init__(self):
        self._points: dict[str, tuple] = {}
        self._lock = threading.Lock()
        self.units: set[str] = set()
        self.params = None                      # the run's params (for UNREACHABLE)
        self.excused: dict[str, set] = {}       # point -> bins unreachable at these params
        self.violations: list[str] = []         # declared unreachable, yet hit

    def point(self, name: str, bins):
        from cocotb_coverage import coverage
        bins = tuple(str(b) for b in bins)
        got = self._points.get(name)
        if got is not None:
            if got[1] != bins:
                raise ValueError(f"coverage: {name} redefined with other bins: {bins} vs "
                                 f"{got[1]}")
            return got
        cp = coverage.CoverPoint(name, xf=lambda v: v, bins=list(bins))
        fn = cp(lambda v: None)
        self._points[name] = (cp, bins, fn)
        self.units.add(name.split(".")[0])
        return self._points[name]

    def hit(self, name: str, bins, idx):
        """Count samples ``idx`` (indices into ``bins``; negative: not sampled)."""
        with self._lock:
            cp, bins, fn = self.point(name, bins)
            idx = np.asarray(idx, dtype=np.int64).reshape(-1)
            idx = idx[idx >= 0]
            if idx.size and idx.max() >= len(bins):
                raise ValueError(f"coverage: {name}: bin index {idx.max()} out of {bins}")
            counts = np.bincount(idx, minlength=len(bins))
            for b, (when, why) in UNREACHABLE.get(name, {}).items():
                if self.params is not None and when(self.params):
                    self.excused.setdefault(name, set()).add(b)
                    if b in bins and counts[bins.index(b)]:
                        self.violations.append(f"{name}: {b} was hit, but is declared "
                                               f"unreachable here ({why})")
            for k in np.flatnonzero(counts):
                fn(bins[k])                                    # cocotb-coverage matches it
                cp._hits[bins[k]] += int(counts[k]) - 1        # the rest of them in bulk

    def hit_labels(self, name: str, bins, labels):
        """Count samples given as bin labels (strings, every one a bin)."""
        bins = tuple(bins)
        vals, inv = np.unique(np.asarray(labels, dtype=str).reshape(-1), return_inverse=True)
        bad = [v for v in vals if v not in bins]
        if bad:
            raise ValueError(f"coverage: {name}: samples {bad} are not bins of {bins}")
        lut = np.array([bins.index(v) for v in vals], dtype=np.int64)
        self.hit(name, bins, lut[inv] if len(vals) else np.zeros(0, np.int64))

    def names(self) -> list[str]:
        return sorted(self._points)


SAMPLER = Sampler()


# -- field access --------------------------------------------------------------------------------
class Fields:
    """The values of a unit's ports / stream payload fields, unpacked on demand through the
    unit's own shapes (``tcgen.hw.layout.unpack``): ``f["a"]`` a plain port, ``f["op.a"]`` the
    field ``a`` of stream ``op`` (arrays of lanes as ``[n, lanes]``)."""

    def __init__(self, shapes: dict, values: dict):
        self.shapes, self.values, self._cache = shapes, values, {}

    def __contains__(self, key):
        return key.split(".")[0] in self.values

    def __getitem__(self, key: str):
        if key in self._cache:
            return self._cache[key]
        from amaranth.lib import data
        from tcgen.hw.layout import unpack
        head, *rest = key.split(".")
        shape, v = self.shapes[head], self.values[head]
        if not isinstance(shape, data.Layout):            # a plain port or payload
            out = np.asarray(v)
        else:
            if head + "." not in self._cache:
                self._cache[head + "."] = unpack(shape, v)
            out = self._cache[head + "."]
            for r in rest:
                out = out[r]
        self._cache[key] = out
        return out


def _shapes(comp) -> dict:
    """{port or stream name: payload shape} of a component (signature, never elaborated)."""
    from amaranth.lib import stream, wiring
    out = {}
    for name, m in comp.signature.members.items():
        if m.is_signature:
            sig = m.signature
            sig = sig.flip() if isinstance(sig, wiring.FlippedSignature) else sig
            if isinstance(sig, stream.Signature):
                out[name] = sig.members["payload"].shape
        else:
            out[name] = m.shape
    return out


# -- coverage models, one per unit ---------------------------------------------------------------
def _cls(s: Sampler, name: str, bits, fmt, bins=None):
    """FP class coverpoint ``name`` of encodings ``bits`` in ``fmt`` (bins: the format's
    classes, or the ones reachable)."""
    bins = tuple(bins or format_classes(fmt))
    lut = np.array([bins.index(c) if c in bins else -2 for c in CLASSES], dtype=np.int64)
    idx = lut[fp_class(bits, fmt)]
    if (idx == -2).any():
        bad = sorted({CLASSES[i] for i in np.unique(fp_class(bits, fmt)) if lut[i] == -2})
        raise ValueError(f"coverage: {name}: classes {bad} outside the bins {bins} (a bin "
                         f"declared unreachable was reached: fix the declaration)")
    s.hit(name, bins, idx)


def _events(s: Sampler, prefix: str, exact, fmt):
    rnd, rng = rounding_events(exact, fmt)
    s.hit(f"{prefix}.rounding", ROUNDING, rnd)
    s.hit(f"{prefix}.range", RANGE, rng)


def _finite64(bits, fmt) -> np.ndarray:
    return num.to_float(_u64(bits), fmt)


def _fp_binop(op):
    def model(s, unit, p, ins, outs):
        g = f"{unit}.{p.fmt}"
        _cls(s, f"{g}.a", ins["a"], p.fmt)
        _cls(s, f"{g}.b", ins["b"], p.fmt)
        _cls(s, f"{g}.result", outs["y"], p.fmt)
        a, b = _finite64(ins["a"], p.fmt), _finite64(ins["b"], p.fmt)
        with np.errstate(all="ignore"):
            _events(s, g, a + b if op == "add" else a * b, p.fmt)
    return model


@functools.lru_cache(maxsize=None)
def _reachable_convert(src, dst) -> tuple[str, ...]:
    """Result classes a conversion can produce: every class of ``dst`` when narrowing from
    FP32 (or any RTZ/saturating mode may reach them); from a format of <= 16 bits, the classes
    the numeric reference produces over every source encoding in RNE, RTZ and saturating."""
    f = num.get_format(src)
    if f.width > 16:
        return format_classes(dst)
    allv = np.arange(1 << f.width, dtype=np.uint64)
    seen = set()
    for mode in num.MODES:
        for sat in (False, True):
            seen |= {CLASSES[i] for i in np.unique(fp_class(
                num.fp_convert(allv, src, dst, mode, saturate=sat), dst))}
    return tuple(c for c in CLASSES if c in seen)


@functools.lru_cache(maxsize=None)
def _reachable_events(src, dst) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(rounding bins, range bins)`` a conversion can reach: all of them from FP32; from a
    format of <= 16 bits, the events of its every finite encoding (a widening conversion is
    always exact and in range: no bins at all)."""
    f = num.get_format(src)
    if f.width > 16:
        return ROUNDING, RANGE
    x = num.to_float(np.arange(1 << f.width, dtype=np.uint64), src)
    rnd, rng = rounding_events(x, dst)
    rb = tuple(b for i, b in enumerate(ROUNDING) if (rnd == i).any())
    gb = tuple(b for i, b in enumerate(RANGE) if (rng == i).any())
    return (rb if len(rb) > 1 else ()), (gb if len(gb) > 1 else ())


def _fp_convert(s, unit, p, ins, outs):
    g = f"{unit}.{p.src}_to_{p.dst}"
    _cls(s, f"{g}.a", ins["a"], p.src)
    _cls(s, f"{g}.result", outs["y"], p.dst, _reachable_convert(p.src, p.dst))
    rb, gb = _reachable_events(p.src, p.dst)
    rnd, rng = rounding_events(_finite64(ins["a"], p.src), p.dst)
    if rb:
        lut = np.array([rb.index(b) if b in rb else -3 for b in ROUNDING] + [-1])
        s.hit(f"{g}.rounding", rb, lut[rnd])
    if gb:
        lut = np.array([gb.index(b) if b in gb else -3 for b in RANGE] + [-1])
        s.hit(f"{g}.range", gb, lut[rng])


def _fp_product(s, unit, p, ins, outs):
    g = f"{unit}.{p.fmt}_to_{p.dst}"
    _cls(s, f"{g}.a", ins["a"], p.fmt)
    _cls(s, f"{g}.b", ins["b"], p.fmt)
    _cls(s, f"{g}.result", outs["y"], p.dst, ("zero", "normal", "inf", "nan"))


def _overflow(s, name, finite_in, out_bits, fmt):
    """``overflow``: finite operands and an infinite (or, E4M3, NaN) result; ``finite``."""
    n = len(finite_in)
    c = fp_class(out_bits, fmt).reshape(n, -1)           # a row's results (split DP-4: 4)
    big = ((c == CLASSES.index("inf")) | ((c == CLASSES.index("nan")) &
                                           (not num.get_format(fmt).ieee))).any(axis=1)
    s.hit(name, ("finite", "overflow"), np.where(finite_in, np.where(big, 1, 0), -1))


def overflow_reachable(fmt, acc, out, terms: int) -> bool:
    """Can ``c + Σ a·b`` (``terms`` products of ``fmt`` values, ``c`` in ``acc``) overflow
    ``out`` from finite operands?  Only if its largest magnitude reaches the largest finite of
    ``out`` plus half its ulp (RNE's overflow threshold; RTZ never overflows to inf)."""
    f, a, o = (num.get_format(x) for x in (fmt, acc, out))
    biggest = a.max_value() + terms * f.max_value() ** 2
    return biggest >= o.max_value() + Fraction(2) ** (o.emax - o.man_bits - 1)


def _finite_rows(bits, fmt) -> np.ndarray:
    """Per row of ``bits`` ([n, lanes] or [n]): every operand finite."""
    c = fp_class(bits, fmt).reshape(np.asarray(bits).shape[0], -1)
    return ~np.isin(c, [CLASSES.index("inf"), CLASSES.index("nan")]).any(axis=1)


def _dot(s, g, p, ins, outs, out_fmt: str, n: int):
    """A dot product's coverpoints: operand and result classes, and overflow where reachable."""
    _cls(s, f"{g}.a", ins["a"], p.fmt)
    _cls(s, f"{g}.b", ins["b"], p.fmt)
    _cls(s, f"{g}.c", ins["c"], p.acc)
    _cls(s, f"{g}.result", outs["y"], out_fmt)
    fin = _finite_rows(ins["a"], p.fmt) & _finite_rows(ins["b"], p.fmt) & \
        _finite_rows(ins["c"], p.acc)
    if overflow_reachable(p.fmt, p.acc, out_fmt, n):
        _overflow(s, f"{g}.overflow", fin, outs["y"], out_fmt)


def _dp4(s, unit, p, ins, outs):
    _dot(s, f"{unit}.{p.fmt}_{p.acc}_{p.product}", p, ins, outs, p.acc, 4)


def _fused_dot(s, unit, p, ins, outs):
    _dot(s, f"{unit}.{p.fmt}_{p.acc}_{p.out}", p, ins, outs, p.out, p.n)


def _fp16_mul(s, unit, p, ins, outs):
    g = f"{unit}.fp16"
    _cls(s, f"{g}.a", ins["a"], "fp16")
    _cls(s, f"{g}.b", ins["b"], "fp16")
    _cls(s, f"{g}.result", outs["y"], "fp16")
    with np.errstate(all="ignore"):
        _events(s, g, _finite64(ins["a"], "fp16") * _finite64(ins["b"], "fp16"), "fp16")


def _pacq_a(s, unit, p, ins, outs, y_key="y", y_fmt="fp16"):
    g = f"{unit}.fp16"
    _cls(s, f"{g}.a", ins["a"], "fp16")
    if y_key is not None:
        _cls(s, f"{g}.result", outs[y_key], y_fmt)


def _pacq_mul(s, unit, p, ins, outs):
    """The FP16 activation's classes; the 8 FP16 products' classes in the modes that round them
    (the exact mode outputs unrounded lanes)."""
    g = f"{unit}.fp16"
    _cls(s, f"{g}.a", ins["a"], "fp16")
    if "y" in outs:
        _cls(s, f"{g}.result", _lanes(outs["y"], 16, 8), "fp16")


def _lanes(x, width: int, count: int) -> np.ndarray:
    """[n, count] lanes of ``width`` bits of packed values (uint64 or Python ints)."""
    a = np.asarray(x).reshape(-1)
    if a.dtype != object and width * count <= 64:
        a = a.astype(np.uint64)
        return np.stack([(a >> np.uint64(width * j)) & np.uint64((1 << width) - 1)
                         for j in range(count)], axis=1)
    mask = (1 << width) - 1
    return np.array([[(int(v) >> (width * j)) & mask for j in range(count)] for v in a],
                    dtype=np.uint64).reshape(-1, count)


def _dp4_baseline(s, unit, p, ins, outs):
    g = f"{unit}.fp16_{p.acc}"
    _cls(s, f"{g}.a", ins["op.a"], "fp16")
    _cls(s, f"{g}.b", ins["op.b"], "fp16")
    _cls(s, f"{g}.c", ins["op.c"], p.acc)
    _cls(s, f"{g}.result", outs["res.y"], p.acc)


def _dp4_pacq(s, unit, p, ins, outs):
    g = f"{unit}.fp16_{p.acc}"
    _cls(s, f"{g}.a", ins["op.a"], "fp16")
    _cls(s, f"{g}.c", ins["op.c"], p.acc)
    _cls(s, f"{g}.result", outs["res.y"], p.acc)


def _lut_dp4(s, unit, p, ins, outs):
    entries = 1 << (p.k - 1)
    g = f"{unit}.k{p.k}_w{p.w_bits}"
    s.hit(f"{g}.index", [f"i{i}" for i in range(entries)], _u64(ins["idx"]).astype(np.int64))
    s.hit(f"{g}.plane", [f"p{i}" for i in range(p.w_bits)], _u64(ins["plane"]).astype(np.int64))
    s.hit(f"{g}.sign", ("pos", "neg"), _u64(ins["sign"]).astype(np.int64))
    if not p.entry.startswith("int"):
        gf = f"{unit}.{p.entry}_{p.acc}"
        sel = np.take_along_axis(np.asarray(ins["lut"]).astype(np.uint64).reshape(-1, entries)
                                 if np.asarray(ins["lut"]).ndim == 2 else
                                 ins["lut"], _u64(ins["idx"]).astype(np.int64)[:, None], 1)
        _cls(s, f"{gf}.entry", sel, p.entry)
        _cls(s, f"{gf}.c", ins["c"], p.acc)
        _cls(s, f"{gf}.result", outs["y"], p.acc)


def _wino_otf(s, unit, p, ins, outs):
    g = f"{unit}.m{p.m}"
    bins = _crop_bins(p.m)
    s.hit_labels(f"{g}.crop", bins, _crop_labels(ins["rows"], ins["cols"], p.m))
    _wino_fp(s, unit, p, "o_hat", ins, outs)


def _wino_fp(s, unit, p, port, ins, outs, out="y"):
    """FP modes: the classes of the input and result elements, in the formats of the ports
    (16-bit elements FP16, 32-bit FP32: each transform works in its mode's format)."""
    if p.mode == "int":
        return
    from amaranth.hdl import Shape
    fmt_in = {16: "fp16", 32: "fp32"}[Shape.cast(ins.shapes[port].elem_shape).width]
    fmt_out = {16: "fp16", 32: "fp32"}[Shape.cast(outs.shapes[out].elem_shape).width]
    g = f"{unit}.m{p.m}_{fmt_in}_{fmt_out}"
    _cls(s, f"{g}.input", ins[port], fmt_in)
    _cls(s, f"{g}.result", outs[out], fmt_out)


def _wino_itf(s, unit, p, ins, outs):
    _wino_fp(s, unit, p, "d", ins, outs)


def _wino_ftf(s, unit, p, ins, outs):
    _wino_fp(s, unit, p, "g", ins, outs)


def _lut_precompute(s, unit, p, ins, outs):
    """FP activations: the classes of the K activations and of the table entries built."""
    if p.act.startswith("int"):
        return
    g = f"{unit}.{p.act}_{p.table}"
    _cls(s, f"{g}.act", ins["a"], p.act)
    _cls(s, f"{g}.entry", outs["t"], p.act)


def _crop_bins(m: int, none: bool = True) -> tuple[str, ...]:
    """r{rows}c{cols} for 1..m each (a tile's valid output rows / columns), and ``none`` (a
    port value 0: nothing kept; the combinational OTF only -- a convolution's tile always has
    an output)."""
    return ("none",) * none + tuple(f"r{r}c{c}" for r in range(1, m + 1)
                                    for c in range(1, m + 1))


def _crop_labels(rows, cols, m) -> np.ndarray:
    r = np.minimum(_u64(rows).astype(np.int64), m)
    c = np.minimum(_u64(cols).astype(np.int64), m)
    lab = np.char.add(np.char.add("r", r.astype(str)), np.char.add("c", c.astype(str)))
    return np.where((r == 0) | (c == 0), "none", lab)


def _wino_stream(s, unit, p, ins, outs):
    g = f"{unit}.m{p.m}"
    s.hit_labels(f"{g}.crop", _crop_bins(p.m, none=False),
                 _crop_labels(ins["op.rows"], ins["op.cols"], p.m))


def _octet_sparse(s, unit, p, ins, outs):
    """Offsets: every value 0..L-1 in the offset fields; padding: the number of padded slots
    (value ±0) per row of A, 0..K.  Unsplit octets only (a split request reads only its first
    k slots: the rest are junk by contract)."""
    if p.split:
        return
    from tcgen.units.sparse.model import unpack_offsets
    g = f"{unit}.L{p.L}_K{p.K}"
    off = unpack_offsets(np.asarray(ins["op.off"]), p.L, p.K)
    s.hit(f"{g}.offset", [f"o{i}" for i in range(p.L)], off)
    a = _u64(ins["op.a"]).reshape(-1, p.K)
    pad = ((a & np.uint64(0x7FFF)) == 0).sum(axis=1)
    s.hit(f"{g}.padding", [f"pad{j}" for j in range(p.K + 1)], pad)


def _wino_linebuf(s, unit, p, ins, outs):
    """Pad positions of the output tiles: which sides of the (m+2)² window lie in the zero
    padding (top / bottom rows, left / right columns) -- tiles leave row-major, ⌈H/m⌉ × ⌈W/m⌉
    per map (the model's order)."""
    th, tw = -(-p.H // p.m), -(-p.W // p.m)
    i = np.arange(len(outs.values["d"])) % (th * tw)
    ti, tj = i // tw, i % tw
    v = np.where(ti == 0, 0, np.where(ti * p.m + p.m >= p.H, 2, 1))
    h = np.where(tj == 0, 0, np.where(tj * p.m + p.m >= p.W, 2, 1))
    s.hit(f"{unit}.m{p.m}.pad", [f"{a}_{b}" for a in ("top", "middle", "bottom")
                                 for b in ("left", "middle", "right")], v * 3 + h)


MODELS = {
    "fp_add": _fp_binop("add"), "fp_mul": _fp_binop("mul"), "fp_convert": _fp_convert,
    "fp_product": _fp_product, "dp4": _dp4, "fused_dot": _fused_dot, "fp16_mul": _fp16_mul,
    "pacq_mul": _pacq_mul, "dequant_mul": _pacq_a, "dp4_baseline": _dp4_baseline,
    "dp4_pacq": _dp4_pacq, "lut_dp4": _lut_dp4, "wino_otf": _wino_otf,
    "wino_conv": _wino_stream, "direct_conv3x3": _wino_stream,
    "octet_sparse": _octet_sparse, "warp_smma": _octet_sparse, "wino_linebuf": _wino_linebuf,
    "wino_itf": _wino_itf, "wino_ftf": _wino_ftf, "lut_precompute": _lut_precompute,
}


def sample(unit_name: str, params, inputs: dict, outputs: dict):
    """Sample the unit's coverpoints from one batch of vectors: ``inputs`` {port or stream:
    values} (the stimulus, or the payloads the DUT accepted), ``outputs`` {port or stream:
    values} (the golden model's)."""
    fn = MODELS.get(unit_name)
    if fn is None or not enabled():
        return
    SAMPLER.params = params
    from tcgen.registry import get_unit
    shapes = _shapes(get_unit(unit_name).interface(params))
    ins = Fields(shapes, {k.removesuffix("__payload"): v for k, v in inputs.items()})
    outs = Fields(shapes, {k.removesuffix("__payload"): v for k, v in outputs.items()})
    n = [len(v) for v in ins.values.values()]
    if not n or max(n) == 0:
        return
    fn(SAMPLER, unit_name, params, ins, outs)


# -- stream handshakes and internal states -------------------------------------------------------
def sample_handshakes(unit_name: str, ins: dict, outs: dict, params=None):
    """Handshake patterns from the per-cycle ``(valid, ready)`` of every stream (``{name:
    2·valid + ready per cycle}``, all from the same cycle 0), per stream:

    ``valid_not_ready``   offered and not taken (the unit / the sink stalls it);
    ``ready_not_valid``   ready with nothing offered (an idle source / nothing to give);
    ``back_to_back``      the next item offered in the cycle right after a transfer;
    ``stall_while_busy``  (outputs) the sink holds ready low while the unit is busy: an input
                          offered, or one accepted whose output has not come out yet."""
    if not enabled():
        return
    SAMPLER.params = params
    n = min([len(v) for v in list(ins.values()) + list(outs.values())] or [0])
    if n < 2:
        return
    v_in = np.zeros(n, bool)
    hs_in = np.zeros(n, bool)
    for v in ins.values():
        v = np.asarray(v[:n])
        v_in |= v >= 2
        hs_in |= v == 3
    hs_out = np.zeros(n, bool)
    for v in outs.values():
        hs_out |= np.asarray(v[:n]) == 3
    cyc = np.arange(n)
    last_in = np.maximum.accumulate(np.where(hs_in, cyc, -1))
    last_out = np.maximum.accumulate(np.where(hs_out, cyc, -1))
    busy = v_in | ((last_in >= 0) & (last_in >= last_out))
    for side, streams in (("in", ins), ("out", outs)):
        bins = STALLS if side == "out" else STALLS[:3]
        for name, v in streams.items():
            v = np.asarray(v[:n])
            masks = [v == 2, v == 1, np.concatenate([[False], (v[:-1] == 3) & (v[1:] >= 2)])]
            if side == "out":
                masks.append(((v & 1) == 0) & (v < 2) & busy)
            idx = np.concatenate([np.full(int(m.sum()), k) for k, m in enumerate(masks)])
            SAMPLER.hit(f"{unit_name}.stream.{side}_{name}", bins, idx)


#: internal signals sampled once per cycle by the stream bench, and how they map to bins:
#: unit -> {coverpoint: (signal paths, function(params, {path: int array}) -> (bins, idx))}
def _fold_phase(p, v):
    return [f"f{p.fold}_phase{i}" for i in range(p.fold)], v["step"]


def _pingpong_ptr(p, v):
    return ["w0_r0", "w0_r1", "w1_r0", "w1_r1"], v["wbuf"] * 2 + v["rbuf"]


def _pingpong_full(p, v):
    return ["none", "buf0", "buf1", "both"], v["b_full"]


def _lut_plane(p, v):
    return [f"plane{i}" for i in range(p.w_bits)], v["plane"]


STATE_SIGNALS = {
    "bmma_array": {"fold": (("step",), _fold_phase, lambda p: p.fold > 1)},
    "int8_mac_array": {"fold": (("step",), _fold_phase, lambda p: p.fold > 1)},
    "octet_sparse": {"pointers": (("wbuf", "rbuf"), _pingpong_ptr, lambda p: p.pingpong),
                     "buffers": (("b_full",), _pingpong_full, lambda p: p.pingpong)},
    "octet_dense": {"pointers": (("wbuf", "rbuf"), _pingpong_ptr, lambda p: p.pingpong)},
    "lut_array": {"plane": (("plane",), _lut_plane, lambda p: p.w_bits > 1)},
}


def state_signals(unit_name: str, params) -> dict:
    """{coverpoint: signal paths} the stream bench should sample for this unit (none when
    sampling is off)."""
    if not enabled():
        return {}
    return {k: v[0] for k, v in STATE_SIGNALS.get(unit_name, {}).items() if v[2](params)}


def sample_states(unit_name: str, params, values: dict):
    """``values`` {signal path: per-cycle ints (-1: X)} -> the unit's state coverpoints."""
    if not enabled():
        return
    SAMPLER.params = params
    for point, (paths, fn, when) in STATE_SIGNALS.get(unit_name, {}).items():
        if not when(params) or not all(pth in values for pth in paths):
            continue
        v = {pth: np.asarray(values[pth], np.int64) for pth in paths}
        ok = np.all([x >= 0 for x in v.values()], axis=0)
        bins, idx = fn(params, {k: np.where(ok, x, 0) for k, x in v.items()})
        SAMPLER.hit(f"{unit_name}.{_group(unit_name, params)}.{point}", bins,
                    np.where(ok, idx, -1))


def _group(unit_name, p) -> str:
    if unit_name in ("bmma_array", "int8_mac_array"):
        return f"fold{p.fold}"
    if unit_name.startswith("octet"):        # the same ping-pong control at every (L, K)
        return "pingpong"
    if unit_name == "lut_array":
        return f"w{p.w_bits}"
    return "default"


# -- export ------------------------------------------------------------------------------------
def save(run_dir: str, label: str):
    """Write this run's coverage (cocotb-coverage YAML) to ``build/coverage/`` and a side file
    naming the test that produced it.  Nothing is written if nothing was sampled."""
    if not enabled() or not SAMPLER.names():
        return
    from cocotb_coverage.coverage import coverage_db
    DIR.mkdir(parents=True, exist_ok=True)
    stem = f"{Path(run_dir).parent.parent.name}-{Path(run_dir).name}-{label}"[-150:]
    tmp = DIR / f".{stem}.yml.tmp"
    coverage_db.export_to_yaml(str(tmp))
    test = os.environ.get("PYTEST_CURRENT_TEST", "").removesuffix(" (call)")
    meta = {"test": test, "run_dir": str(run_dir), "units": sorted(SAMPLER.units),
            "label": label, "points": SAMPLER.names(),
            "excused": {k: sorted(v) for k, v in SAMPLER.excused.items()},
            "violations": SAMPLER.violations}
    (DIR / f"{stem}.json").write_text(json.dumps(meta, sort_keys=True))
    tmp.replace(DIR / f"{stem}.yml")


# -- merge and report (scripts/coverage_report.py) -----------------------------------------------
def merge(files, out: Path, skipped: list | None = None) -> dict:
    """Merge run databases (cocotb-coverage YAML) with ``cocotb_coverage.coverage.merge_coverage``
    into ``out``; returns ``{point name: {bin: hits}}`` of every coverpoint.  A database whose
    bins of some point differ from the newest database's (written by an older coverage.py)
    is left out and appended to ``skipped``."""
    import yaml
    from cocotb_coverage.coverage import merge_coverage
    files = sorted((Path(f) for f in files), key=lambda f: f.stat().st_mtime, reverse=True)
    bins: dict[str, list] = {}
    keep = []
    for f in files:
        db = yaml.safe_load(f.read_text()) or {}
        mine = {n: list(e["bins:_hits"]) for n, e in db.items() if "bins:_hits" in e}
        if any(n in bins and bins[n] != b for n, b in mine.items()):
            if skipped is not None:
                skipped.append(str(f))
            continue
        for n, b in mine.items():
            bins.setdefault(n, b)
        keep.append(str(f))
    if not keep:
        return {}
    out.parent.mkdir(parents=True, exist_ok=True)
    merge_coverage(lambda *a: None, str(out), *keep)
    db = yaml.safe_load(Path(out).read_text()) or {}
    return {name: {str(b): int(h) for b, h in e["bins:_hits"].items()}
            for name, e in db.items() if "bins:_hits" in e}


def holes(points: dict, required=None, runs=None) -> list[str]:
    """Every unhit bin (``<point>: <bin>``) -- except a bin that every run sampling its point
    declared unreachable at its params (:data:`UNREACHABLE`, the runs' side files) --, every
    violation a run recorded (a bin declared unreachable, yet hit), and every required group
    no run produced."""
    gone = excused(points, runs or [])
    out = [f"{name}: {b}" for name, bins in sorted(points.items())
           for b, h in bins.items() if h == 0 and b not in gone[name]]
    out += sorted({v for r in runs or [] for v in r.get("violations", ())})
    groups = {".".join(n.split(".")[:2]) for n in points}
    for g in (REQUIRED if required is None else required):
        if g not in groups:
            out.append(f"{g}: no run sampled this group")
    return out


def excused(points: dict, runs) -> dict[str, set]:
    """{point: bins unreachable in every run that sampled it} (see :func:`holes`)."""
    out = {}
    for name in points:
        sets = [set(r.get("excused", {}).get(name, ())) for r in runs
                if name in r.get("points", ())]
        out[name] = set.intersection(*sets) if sets else set()
    return out


#: bins that a unit cannot reach by design at some params: ``{point: {bin: (when(params) ->
#: bool, reason)}}``.  A run whose params make ``when`` true records the bin as excused (a 0-hit
#: bin is no hole if every run that sampled its point excused it) -- and records a violation,
#: which is a hole, if it hits it anyway (the declaration is wrong).
def _always(p) -> bool:
    return True


_OCTET_READY = ("op.ready is high only in the last fill / EXEC cycle of the request on the bus "
                "(units/sparse/rtl.py): the octet reads the request while it works, and a source "
                "holds valid until the transfer, so ready never rises without valid")
_OCTET_OUT = ("EXEC stalls while a result is held (compute gated by out_valid & ~res.ready), so "
              "after a result is taken the next one needs at least one more EXEC set")
_FOLD_READY = ("fold > 1: req.ready = can_advance & last, and the last fold phase is reached "
               "only by advancing on a valid request that the source holds until the transfer")
_FOLD_OUT = ("fold > 1: one result per F cycles through a sequencer that stalls as a whole "
             "while D is held, so the next result is F - 1 cycles behind the taken one")
_WINO_READY = ("op.ready = the last EWMM / compute cycle of the request on the bus "
               "(units/winograd/rtl.py), reached only while the source holds valid")
UNREACHABLE: dict[str, dict[str, tuple]] = {
    **{f"{u}.stream.in_op": {"ready_not_valid": (_always, _OCTET_READY)}
       for u in ("octet_sparse", "octet_dense", "octet_sparse_bs", "warp_smma", "warp_mma")},
    **{f"{u}.stream.out_res": {"back_to_back": (_always, _OCTET_OUT)}
       for u in ("octet_sparse", "octet_dense", "octet_sparse_bs", "warp_smma", "warp_mma")},
    **{f"{u}.stream.in_req": {"ready_not_valid": (lambda p: p.fold > 1, _FOLD_READY)}
       for u in ("bmma_array", "int8_mac_array")},
    **{f"{u}.stream.out_d": {"back_to_back": (lambda p: p.fold > 1, _FOLD_OUT)}
       for u in ("bmma_array", "int8_mac_array")},
    **{f"{u}.stream.out_d": {"back_to_back": (
        lambda p: p.w_bits > 1, "w_bits > 1: one result per w_bits plane cycles through a "
        "pipeline that stalls as a whole while D is held")}
       for u in ("lut_array", "add_dp4_array", "conv_lut_array")},
    **{f"{u}.stream.in_op": {"ready_not_valid": (_always, _WINO_READY)}
       for u in ("wino_conv", "direct_conv3x3")},
    "wino_conv.stream.out_res": {"back_to_back": (
        lambda p: p.K > 1, "K > 1: the OTF writes the result register over K cycles, and only "
        "starts once the held result is taken")},
}

#: groups every `make coverage` must produce (a test that stops producing one is a hole)
REQUIRED: tuple[str, ...] = (
    "add_dp4_array.stream", "bmma_array.fold2", "bmma_array.fold4", "bmma_array.fold8",
    "bmma_array.stream", "bnn_epilogue.stream", "conv_lut_array.stream", "dequant_mul.fp16",
    "direct_conv3x3.m2", "direct_conv3x3.m4", "direct_conv3x3.stream", "dp4.fp16_fp16_rounded",
    "dp4.fp16_fp32_exact", "dp4.fp16_fp32_rounded", "dp4_baseline.fp16_fp16",
    "dp4_baseline.fp16_fp32", "dp4_baseline.stream", "dp4_pacq.fp16_fp16", "dp4_pacq.fp16_fp32",
    "dp4_pacq.stream", "fp16_mul.fp16", "fp_add.bf16", "fp_add.fp16", "fp_add.fp32",
    "fp_add.fp8_e4m3", "fp_add.fp8_e5m2", "fp_convert.bf16_to_fp32", "fp_convert.fp16_to_bf16",
    "fp_convert.fp16_to_fp32", "fp_convert.fp16_to_fp8_e4m3", "fp_convert.fp16_to_fp8_e5m2",
    "fp_convert.fp32_to_bf16", "fp_convert.fp32_to_fp16", "fp_convert.fp32_to_fp8_e4m3",
    "fp_convert.fp8_e4m3_to_fp32", "fp_convert.fp8_e5m2_to_fp32", "fp_mul.bf16", "fp_mul.fp16",
    "fp_mul.fp32", "fp_mul.fp8_e4m3", "fp_mul.fp8_e5m2", "fp_product.fp16_to_fp32",
    "fused_dot.bf16_fp32_fp32", "fused_dot.fp16_fp16_fp16", "fused_dot.fp16_fp32_fp16",
    "fused_dot.fp16_fp32_fp32", "fused_dot.fp8_e4m3_fp32_fp32", "int8_mac_array.fold2",
    "int8_mac_array.stream", "lut_array.stream", "lut_array.w2", "lut_array.w3", "lut_array.w4",
    "lut_dp4.fp16_fp16", "lut_dp4.fp8_e4m3_fp16", "lut_dp4.k4_w2", "lut_dp4.k4_w3",
    "lut_dp4.k4_w4", "lut_precompute.fp16_half", "mac_dp4_array.stream", "octet_dense.pingpong",
    "octet_dense.stream", "octet_sparse.L16_K1", "octet_sparse.L16_K4", "octet_sparse.L32_K5",
    "octet_sparse.L4_K2", "octet_sparse.pingpong", "octet_sparse.stream",
    "octet_sparse_bs.stream", "pacq_mul.fp16", "warp_smma.L16_K4", "warp_smma.stream",
    "wino_conv.m2", "wino_conv.m4", "wino_conv.stream", "wino_ftf.m2_fp16_fp16",
    "wino_ftf.m2_fp32_fp32", "wino_itf.m2_fp16_fp16", "wino_itf.m2_fp32_fp32",
    "wino_itf.m4_fp16_fp16", "wino_linebuf.m2", "wino_linebuf.m4", "wino_linebuf.stream",
    "wino_otf.m2", "wino_otf.m2_fp32_fp32", "wino_otf.m4", "wino_otf.m4_fp16_fp16",
)
