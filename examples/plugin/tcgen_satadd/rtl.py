"""The saturating adder in Amaranth: one adder one bit wider, then a clamp (combinational)."""
from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class SatAdd(wiring.Component):
    def __init__(self, p):
        self.p = p
        self.latency = 0                  # cycles from inputs to outputs (0: combinational)
        super().__init__({"a": In(p.width), "b": In(p.width), "y": Out(p.width),
                          "sat": Out(1)})

    def elaborate(self, platform):
        m = Module()
        w = self.p.width
        if self.p.signed:
            s = Signal(w + 1)
            m.d.comb += s.eq(self.a.as_signed() + self.b.as_signed())
            over = ~s[w] & s[w - 1]       # positive overflow: sum >= 2**(w-1)
            under = s[w] & ~s[w - 1]      # negative overflow: sum < -2**(w-1)
            top = (1 << (w - 1)) - 1
            m.d.comb += [
                self.y.eq(Mux(over, top, Mux(under, 1 << (w - 1), s[:w]))),
                self.sat.eq(over | under),
            ]
        else:
            s = Signal(w + 1)
            m.d.comb += [
                s.eq(self.a + self.b),
                self.y.eq(Mux(s[w], (1 << w) - 1, s[:w])),
                self.sat.eq(s[w]),
            ]
        return m
