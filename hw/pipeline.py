"""Pipeline registers: the one helper every datapath uses (docs/architecture.md).

A :class:`Pipeline` belongs to one ``Module``.  Registers are placed either

* at numbered **cut points** a datapath declares (``pipe(cut, *values)``): the unit's
  ``pipeline`` parameter enables the first cuts (:func:`cuts`), and a disabled cut is a wire;
  registers are named ``<value name>_p<cut>``; or
* by **name** (``pipe.reg(value, name)``), for pipelines whose depth is fixed by the design.

With ``advance`` (a 1-bit Value) every register loads only when it is high: the whole pipeline
stalls together (stream units: ``advance = ~out_valid | out_ready``).  Without it, registers
load every cycle.  ``latency`` is the number of enabled cut points.
"""
from __future__ import annotations

from amaranth import Module, Signal

__all__ = ["Pipeline", "cuts"]


def cuts(pipeline: int, points) -> frozenset:
    """The cut points a ``pipeline`` parameter enables: the first ``pipeline`` of ``points``
    (in the datapath's order of preference)."""
    points = tuple(points)
    if not 0 <= pipeline <= len(points):
        raise ValueError(f"pipeline must be in 0..{len(points)}, got {pipeline}")
    return frozenset(points[:pipeline])


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
            r = Signal(v.shape(), name=f"{getattr(v, 'name', 'v')}_p{cut}")
            self._load(r, v)
            out.append(r)
        return tuple(out) if len(out) != 1 else out[0]

    def reg(self, value, name: str):
        """One register named ``name`` holding ``value`` (as wide as it, unsigned)."""
        r = Signal(len(value), name=name)
        self._load(r, value)
        return r
