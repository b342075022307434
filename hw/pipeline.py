"""Pipeline registers: the one helper every datapath uses (docs/architecture.md).

A :class:`Pipeline` belongs to one ``Module``.  Registers are placed either

* at numbered **cut points** a datapath declares (``pipe(cut, *values)``): the unit's
  ``pipeline`` parameter enables the first cuts (:func:`cuts`), or its ``cuts`` parameter names
  any set of them (:class:`CutPoints`; ``cuts=auto``: the set the application layer chooses
  for a clock, :mod:`tcgen.pipelining`); a disabled cut is a wire; registers are named
  ``<value name>_p<cut>``; or
* by **name** (``pipe.reg(value, name)``), for pipelines whose depth is fixed by the design.

With ``advance`` (a 1-bit Value) every register loads only when it is high: the whole pipeline
stalls together (stream units: ``advance = ~out_valid | out_ready``).  Without it, registers
load every cycle.  ``latency`` is the number of enabled cut points.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from amaranth import Const, Module, Signal

from .params import ParamError, param

__all__ = ["Pipeline", "cuts", "CutPoints", "cuts_param", "AUTO"]

#: the ``cuts`` value that asks the application layer to choose the cuts for a clock
AUTO = "auto"


def cuts_param():
    """The ``cuts`` field of a :class:`CutPoints` parameter class (off by default: at "" the
    ``pipeline`` field decides, and every module keeps its name and Verilog)."""
    return param("", key_default=False,
                 doc="pipeline registers at these cut points, '+'-joined in datapath order "
                     "(the unit's cut points are listed by `tcgen list`), or auto: the "
                     "cheapest set in register bits meeting the clock of tcgen generate/ppa "
                     "--clock-ns on --liberty (docs/pipelining.md); empty: none, or the "
                     "`pipeline` parameter's")


def cuts(pipeline: int, points) -> frozenset:
    """The cut points a ``pipeline`` parameter enables: the first ``pipeline`` of ``points``
    (in the datapath's order of preference)."""
    points = tuple(points)
    if not 0 <= pipeline <= len(points):
        raise ValueError(f"pipeline must be in 0..{len(points)}, got {pipeline}")
    return frozenset(points[:pipeline])


class CutPoints:
    """Mixin of a frozen :class:`~tcgen.hw.params.Params` class whose datapath declares cut
    points (derive from it before ``Params``; declare the fields ``pipeline`` and ``cuts =
    cuts_param()``).

    ``CUT_POINTS``: ``(name, number)`` pairs in datapath order, inputs to outputs (override
    :meth:`cut_points` when they depend on other fields); ``PIPELINE_CUTS``: the numbers the
    ``pipeline`` field enables first to last.  ``cuts`` names a set of them, ``"a+b"``
    (normalized to datapath order); ``pipeline`` and ``cuts`` exclude each other.
    :meth:`enabled` is the set of numbers the datapath builds, ``latency`` the number of cuts
    (each is one register bank on the one path from the inputs to the outputs).

    A cut point ``"<role>.<name>"`` with number None is a point inside a sub-unit: the
    datapath passes :meth:`sub_cuts` (``role``) to the sub-unit's own ``cuts`` (the DP-4's
    ``mul.tree`` is the ``tree`` cut of its four multipliers, one bank across the lanes)."""

    CUT_POINTS: ClassVar[tuple] = ()
    PIPELINE_CUTS: ClassVar[tuple] = (1, 2)

    def __post_init__(self):
        super().__post_init__()
        text = self.cuts
        pipeline = getattr(self, "pipeline", 0)
        if text in ("", AUTO):
            if text == AUTO and pipeline:
                raise self.error("cuts", text, f"empty when pipeline is set ({pipeline})")
            return
        points = dict(self.cut_points())
        names = text.split("+")
        allowed = (f"'+'-joined names of {', '.join(points)} (or {AUTO})" if points
                   else "empty: this configuration has no cut points")
        if any(n not in points for n in names) or len(set(names)) != len(names):
            raise self.error("cuts", text, allowed)
        if pipeline:
            raise self.error("cuts", text, f"empty when pipeline is set ({pipeline})")
        order = [n for n, _ in self.cut_points() if n in names]
        object.__setattr__(self, "cuts", "+".join(order))

    def cut_points(self) -> tuple:
        return self.CUT_POINTS

    def enabled(self) -> frozenset:
        """The cut numbers the datapath registers (``cuts=auto`` cannot be built: the
        application layer replaces it by a set first)."""
        if self.cuts == AUTO:
            raise ParamError(f"{self.UNIT}: cuts=auto is chosen for a clock: give --clock-ns "
                             f"(tcgen generate / ppa / sweep; tcgen.pipelining.plan)")
        if self.cuts:
            points = dict(self.cut_points())
            return frozenset(points[n] for n in self.cuts.split("+") if points[n] is not None)
        return cuts(getattr(self, "pipeline", 0), self.PIPELINE_CUTS)

    def sub_cuts(self, role: str) -> str:
        """The enabled points ``<role>.<name>`` as a ``cuts`` value of the sub-unit."""
        if self.cuts == AUTO:
            self.enabled()                    # the error
        pre = role + "."
        return "+".join(n[len(pre):] for n in self.cuts.split("+") if n.startswith(pre))

    @property
    def latency(self) -> int:
        if self.cuts and self.cuts != AUTO:
            return len(self.cuts.split("+"))
        return len(self.enabled())

    def with_cuts(self, names) -> "CutPoints":
        """These params with ``cuts`` set to ``names`` (an iterable of cut names; pipeline 0)."""
        extra = {"pipeline": 0} if hasattr(self, "pipeline") else {}
        return dataclasses.replace(self, **extra, cuts="+".join(names))


class Pipeline:
    """Pipeline registers in module ``m`` at the enabled ``cuts``, loading when ``advance``."""

    def __init__(self, m: Module, cuts=(), advance=None):
        self.m = m
        self.cuts = frozenset(cuts)
        self.advance = advance

    @property
    def latency(self) -> int:
        return len(self.cuts)

    def _load(self, reg, value):
        if self.advance is None:
            self.m.d.sync += reg.eq(value)
        else:
            with self.m.If(self.advance):
                self.m.d.sync += reg.eq(value)

    def __call__(self, cut: int, *values):
        """``values`` registered at ``cut`` if it is enabled, else passed through.  One value in,
        one out; several in, a tuple out."""
        if cut not in self.cuts:
            return values if len(values) != 1 else values[0]
        out = []
        for v in values:
            if isinstance(v, Const):             # a constant needs no register
                out.append(v)
                continue
            r = Signal(v.shape(), name=f"{getattr(v, 'name', 'v')}_p{cut}")
            self._load(r, v)
            out.append(r)
        return tuple(out) if len(out) != 1 else out[0]

    def reg(self, value, name: str):
        """One register named ``name`` holding ``value`` (as wide as it, unsigned)."""
        r = Signal(len(value), name=name)
        self._load(r, value)
        return r
