"""The unit spec (docs/architecture.md, "The unit protocol").

A :class:`UnitSpec` ties a short name to its validated params dataclass, the Amaranth component
built from them, the bit-exact golden model, ``ops_per_cycle`` and a default workload (random
stimulus, used by tests and by activity-annotated power).  Specs are plain values: a family
declares ``UNITS = (UnitSpec(...), ...)`` in its ``family.py`` with no side effect, and the
application layer (``tcgen.registry``) finds them through the ``tcgen.families`` entry points.
The library blocks are declared the same way, in :mod:`tcgen.hw.library`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .params import Params

__all__ = ["UnitSpec", "Workload", "FP_BITS", "fp_add_cells", "fp_mul_cells", "int_add_cells",
           "int_mul_cells", "reg_cells"]


def _one(p) -> float:
    return 1.0


# -- size estimates (docs/robustness.md, "Resource bounds") ------------------------------------
# A family's ``UnitSpec.estimate`` (params -> standard cells after flat synthesis on osu018) is a
# cheap formula over its parameters, built from the costs of the library blocks below.  The
# constants are calibrated against `tcgen ppa` / sweep results (reports/*.json, osu018): an
# FP16 fp_add maps to 724 cells, fp_mul to 1,444, an 8x8 int_mul to 342, a 32-bit register with
# its enable to ~64.  They are order-of-magnitude figures for refusing absurd configurations
# before elaboration, not a substitute for measuring.

#: significand bits (hidden bit included) of each FP format name used by the families
FP_BITS = {"fp32": 24, "fp16": 11, "bf16": 8, "fp8_e4m3": 4, "fp8_e5m2": 3}


def fp_add_cells(fmt: str) -> float:
    """Cells of one FP adder in ``fmt`` (fp16: 724 measured; ~66 per significand bit)."""
    return 66.0 * FP_BITS.get(fmt, 24)


def fp_mul_cells(fmt: str) -> float:
    """Cells of one FP multiplier in ``fmt`` (fp16: 1,444 measured; ~12 per significand bit
    squared)."""
    return 12.0 * FP_BITS.get(fmt, 24) ** 2


def int_add_cells(bits: int) -> float:
    """Cells of one integer adder of ``bits`` bits (~6 per bit)."""
    return 6.0 * bits


def int_mul_cells(a_bits: int, b_bits: int) -> float:
    """Cells of one structural integer multiplier (8x8: 342 measured; ~5.3 per partial-product
    bit)."""
    return 5.3 * a_bits * b_bits


def reg_cells(bits: int) -> float:
    """Cells of a register of ``bits`` bits with its load multiplexer (~2 per bit)."""
    return 2.0 * bits


@dataclass(frozen=True)
class Workload:
    """A named operating mode of a unit, beside its default workload: the stimulus for
    activity-annotated power and, where the mode changes it, the work done per cycle.  PacQ's
    INT4+INT2 multiplier streaming only INT4 words does 4 products per cycle, only INT2 words
    8: the same hardware, two workloads, two energies per product.

    stimulus        (params, rng, n) -> {input name: array}, like ``UnitSpec.workload``
    ops_per_cycle   params -> work per cycle in this mode (None: the unit's ``ops_per_cycle``)
    doc             one line for ``tcgen info`` and the reports
    check           params -> None, raising ``ParamError`` where the mode does not apply
    """
    stimulus: Callable
    ops_per_cycle: Callable | None = None
    doc: str = ""
    check: Callable | None = None


@dataclass(frozen=True)
class UnitSpec:
    """One generatable unit.

    name            registry key and default Verilog top name
    family          ``hw`` for library blocks, else the paper family (``pacq``, ``bmma`` ...)
    summary         one line for ``tcgen list``
    params          the frozen :class:`~tcgen.hw.params.Params` subclass (defaults = paper
                    configuration)
    build           params -> ``wiring.Component``
    model           (params, **inputs as arrays) -> {output name: array}; for stream units the
                    inputs and outputs are ``<stream>__payload`` arrays (see ``streams``)
    ops_per_cycle   params -> work per cycle in the paper's units (see ``ops_unit``)
    ops_unit        what one op is ("FLOP", "MAC", "bit-op", "result" ...)
    workload        (params, rng, n) -> {input name: array}: the default stimulus
    workloads       {name: :class:`Workload`}: named operating modes (``tcgen ppa --workload``,
                    a sweep group's ``workload`` axis)
    estimate        params -> estimated standard cells after flat synthesis (osu018): a cheap
                    formula, checked by the application layer before elaboration against the
                    size limit (``tcgen.generate.check_size``; docs/robustness.md); None: the
                    unit's parameter ranges bound it (the library blocks)
    """
    name: str
    family: str
    summary: str
    params: type
    build: Callable
    model: Callable
    ops_per_cycle: Callable = field(default=_one)
    ops_unit: str = "op"
    workload: Callable | None = None
    workloads: dict = field(default_factory=dict)
    estimate: Callable | None = None

    def named_workload(self, name: str, params: Params) -> Workload:
        """The workload ``name`` for ``params`` (``ParamError`` naming the choices if the unit
        has no such workload or it does not apply to these params)."""
        from .params import ParamError
        if name not in self.workloads:
            known = ", ".join(sorted(self.workloads)) or "none"
            raise ParamError(f"unit {self.name} has no workload {name!r} (named workloads: "
                             f"{known})")
        wl = self.workloads[name]
        if wl.check is not None:
            wl.check(params)
        return wl

    def make_params(self, values: dict[str, str] | None = None) -> Params:
        """Params from CLI text values (``ParamError`` on a bad name or value)."""
        return self.params.from_strings(values or {})

    def component(self, params: Params | None = None):
        return self.build(params if params is not None else self.params())

    def interface(self, params: Params | None = None):
        """The component for reading its signature and ``latency`` only (never elaborated, so
        Amaranth's unused-elaboratable warning is silenced on it)."""
        comp = self.component(params)
        comp._MustUse__silence = True
        return comp

    def estimate_cells(self, params: Params) -> int | None:
        """Estimated standard cells of the unit at ``params`` after flat synthesis (None: no
        estimate declared)."""
        if self.estimate is None:
            return None
        return int(round(self.estimate(params)))

    def golden(self, params: Params, **inputs) -> dict[str, np.ndarray]:
        return self.model(params, **inputs)
