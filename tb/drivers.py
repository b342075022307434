"""Shared cocotb pieces: drivers and monitors for plain ports and streams, and a scoreboard.

Following cocotb's own examples, driver, monitor, model and scoreboard are separate: a bench
only wires them together and feeds stimulus.  The golden model comes from the unit registry, so
expected values are never written by hand.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly, Timer

from tcgen.registry import get_unit


@dataclass
class Context:
    """What the harness handed to this simulation (see tb.harness.run)."""
    unit: object
    params: object
    run_dir: str
    stimulus: dict

    @classmethod
    def from_env(cls) -> "Context":
        from harness import load_stimulus
        unit = get_unit(os.environ["TCGEN_UNIT"])
        params = unit.params(**json.loads(os.environ["TCGEN_PARAMS"]))
        stim_path = os.environ.get("TCGEN_STIMULUS")
        stim = load_stimulus(stim_path) if stim_path else {}
        return cls(unit, params, os.environ["TCGEN_RUN_DIR"], stim)

    def write_summary(self, **values):
        path = os.path.join(self.run_dir, "summary.json")
        old = {}
        if os.path.exists(path):
            with open(path) as fh:
                old = json.load(fh)
        old.update(values)
        with open(path, "w") as fh:
            json.dump(old, fh, sort_keys=True)


def _read(handle):
    v = handle.value
    try:
        return int(v)
    except ValueError:          # X or Z bits
        return -1


class PortDriver:
    """Applies one vector (a row of the stimulus arrays) to plain input ports."""

    def __init__(self, dut, stimulus: dict):
        self.handles = [(getattr(dut, k), [int(x) for x in v]) for k, v in stimulus.items()]

    def apply(self, i: int):
        for h, vals in self.handles:
            h.value = vals[i]


class PortMonitor:
    """Samples plain output ports into Python lists."""

    def __init__(self, dut, names):
        self.names = list(names)
        self.handles = [getattr(dut, k) for k in self.names]
        self.samples = {k: [] for k in self.names}

    def sample(self):
        for k, h in zip(self.names, self.handles):
            self.samples[k].append(_read(h))

    def arrays(self, n: int | None = None):
        return {k: np.array(v[:n] if n is not None else v, dtype=object)
                for k, v in self.samples.items()}


class Scoreboard:
    """Compares observed outputs with the golden model's, vector by vector."""

    def __init__(self, expected: dict, inputs: dict, log, max_report: int = 10):
        self.expected = {k: np.asarray(v).astype(object) for k, v in expected.items()}
        self.inputs = inputs
        self.log = log
        self.max_report = max_report
        self.mismatches = 0
        self.vectors = 0

    def compare(self, observed: dict) -> int:
        bad = None
        for k, exp in self.expected.items():
            got = observed[k]
            n = min(len(got), len(exp))
            ne = np.array([int(got[i]) != int(exp[i]) for i in range(n)], dtype=bool)
            if len(got) != len(exp):
                self.log.error(f"output {k}: {len(got)} samples, expected {len(exp)}")
                ne = np.concatenate([ne, np.ones(abs(len(got) - len(exp)), bool)])
            bad = ne if bad is None else (bad | ne)
        idx = np.flatnonzero(bad) if bad is not None else []
        self.vectors += len(bad) if bad is not None else 0
        self.mismatches += len(idx)
        for i in idx[:self.max_report]:
            ins = ", ".join(f"{k}=0x{int(v[i]):x}" for k, v in self.inputs.items())
            outs = ", ".join(f"{k}: got 0x{int(observed[k][i]) & (2**64 - 1):x} expected "
                             f"0x{int(self.expected[k][i]):x}" for k in self.expected)
            self.log.error(f"mismatch at vector {i}: {ins} -> {outs}")
        return len(idx)


async def stream_fixed_latency(dut, stimulus: dict, outputs, latency: int, clk=None):
    """Drive one vector per cycle into a fixed-latency datapath and collect its outputs.

    Combinational units (``latency == 0``, no clock) settle for 1 ns per vector.  Clocked units
    get inputs at the falling edge and are sampled at the falling edge ``latency`` cycles later.
    Returns {output: object array} aligned with the stimulus.
    """
    n = len(next(iter(stimulus.values())))
    drv = PortDriver(dut, stimulus)
    mon = PortMonitor(dut, outputs)
    if latency == 0:
        for i in range(n):
            drv.apply(i)
            await Timer(1, "ns")
            mon.sample()
        return mon.arrays()
    fall = FallingEdge(clk)
    for i in range(n + latency):
        await fall
        if i >= latency:
            mon.sample()
        if i < n:
            drv.apply(i)
    return mon.arrays()


class StreamDriver:
    """Drives an amaranth.lib.stream input (``name__payload/__valid/__ready``).

    Timing: payload/valid change only just after a falling edge; ``ready`` is sampled once the
    half cycle has settled (ReadOnly), so a beat counts exactly when valid & ready hold at the
    rising edge that follows.  ``idle_prob`` inserts random bubbles (valid low).
    """

    def __init__(self, dut, name: str, clk, rng=None, idle_prob: float = 0.0):
        self.payload = getattr(dut, f"{name}__payload")
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.clk = clk
        self.rng = rng or np.random.default_rng(0)
        self.idle_prob = idle_prob
        self.sent = 0

    async def send(self, items):
        await FallingEdge(self.clk)
        for item in items:
            while self.idle_prob and self.rng.random() < self.idle_prob:
                self.valid.value = 0
                await FallingEdge(self.clk)
            self.payload.value = int(item)
            self.valid.value = 1
            while True:
                await ReadOnly()
                accepted = int(self.ready.value) == 1
                await FallingEdge(self.clk)       # the rising edge in between took the beat
                if accepted:
                    self.sent += 1
                    break
        self.valid.value = 0


class StreamMonitor:
    """Collects payloads of an amaranth.lib.stream output; ``stall_prob`` drops ready randomly
    (backpressure).  Same timing rule as :class:`StreamDriver`: ready changes just after a
    falling edge, valid/payload are sampled when settled before the next rising edge."""

    def __init__(self, dut, name: str, clk, rng=None, stall_prob: float = 0.0):
        self.payload = getattr(dut, f"{name}__payload")
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.clk = clk
        self.rng = rng or np.random.default_rng(1)
        self.stall_prob = stall_prob
        self.items: list[int] = []

    async def collect(self, count: int):
        await FallingEdge(self.clk)
        while len(self.items) < count:
            ready = 0 if (self.stall_prob and self.rng.random() < self.stall_prob) else 1
            self.ready.value = ready
            await ReadOnly()
            if ready and int(self.valid.value) == 1:
                self.items.append(_read(self.payload))
            await FallingEdge(self.clk)
        self.ready.value = 0
        return self.items
