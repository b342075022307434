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
        from .harness import load_stimulus
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


def flatten_fields(layout, payload: int, prefix: str = "") -> dict[str, int]:
    """``{"y[2]": value, "group": value, ...}``: one payload decoded through its data layout
    (``tcgen.hw.layout.unpack``), array elements and nested structs flattened into names.  A
    plain shape gives ``{prefix or "value": payload}``."""
    from tcgen.hw.layout import unpack
    out: dict[str, int] = {}

    def walk(name, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{name}.{k}" if name else k, x)
        else:
            a = np.asarray(v)
            if a.ndim <= 1:                       # [1] for one payload
                out[name or "value"] = int(a.reshape(-1)[0])
            else:
                for i in range(a.shape[1]):
                    walk(f"{name}[{i}]", a[:, i])

    walk(prefix, unpack(layout, [int(payload)]))
    return out


def describe_mismatch(layout, got: int, exp: int, max_fields: int = 8) -> str:
    """The fields of a payload that differ, by name (``y[1]: got 0x3c00 expected 0x3c01``)."""
    if got < 0:
        return f"got X/Z bits, expected 0x{exp:x}"
    if layout is None:
        return f"got 0x{got:x} expected 0x{exp:x}"
    g, e = flatten_fields(layout, got), flatten_fields(layout, exp)
    diff = [k for k in e if g[k] != e[k]]
    text = ", ".join(f"{k}: got {g[k]:#x} expected {e[k]:#x}" for k in diff[:max_fields])
    if len(diff) > max_fields:
        text += f", ... ({len(diff)} of {len(e)} fields differ)"
    return text or f"got 0x{got:x} expected 0x{exp:x}"


class Scoreboard:
    """Compares observed outputs with the golden model's, vector by vector (in order).

    ``expected`` / ``observed``: {output: sequence}.  ``inputs``: {name: sequence} aligned with
    the outputs, printed with each mismatch (optional).  ``layouts``: {output: amaranth data
    layout} -- mismatches are then reported field by field, by name.  The first ``max_report``
    mismatch messages are logged and kept in ``reports``; a length difference counts every
    missing or extra item as a mismatch."""

    def __init__(self, expected: dict, inputs: dict | None = None, log=None,
                 max_report: int = 10, layouts: dict | None = None):
        # element by element: np.asarray of Python ints on both sides of 2**63 gives float64
        self.expected = {k: _objects(v) for k, v in expected.items()}
        self.inputs = inputs or {}
        self.log = log
        self.max_report = max_report
        self.layouts = layouts or {}
        self.mismatches = 0
        self.vectors = 0
        self.reports: list[str] = []

    def _report(self, msg: str):
        if len(self.reports) < self.max_report:
            self.reports.append(msg)
            if self.log is not None:
                self.log.error(msg)

    def compare(self, observed: dict) -> int:
        bad = None
        for k, exp in self.expected.items():
            got = observed[k]
            n = min(len(got), len(exp))
            ne = np.array([int(got[i]) != int(exp[i]) for i in range(n)], dtype=bool)
            if len(got) != len(exp):
                self._report(f"output {k}: {len(got)} items, expected {len(exp)}")
                ne = np.concatenate([ne, np.ones(abs(len(got) - len(exp)), bool)])
            bad = ne if bad is None else _or_padded(bad, ne)
        idx = np.flatnonzero(bad) if bad is not None else []
        self.vectors += len(bad) if bad is not None else 0
        self.mismatches += len(idx)
        for i in idx[:self.max_report]:
            ins = ", ".join(f"{k}=0x{int(v[i]):x}" for k, v in self.inputs.items()
                            if i < len(v))
            outs = []
            for k in self.expected:
                got, exp = observed[k], self.expected[k]
                if i >= len(exp):
                    outs.append(f"{k}: extra item 0x{int(got[i]) & (2**64 - 1):x}")
                elif i >= len(got):
                    outs.append(f"{k}: missing (expected 0x{int(exp[i]):x})")
                elif int(got[i]) != int(exp[i]):
                    outs.append(f"{k}: " + describe_mismatch(self.layouts.get(k), int(got[i]),
                                                             int(exp[i])))
            self._report(f"mismatch at vector {i}" + (f" ({ins})" if ins else "") + ": " +
                         "; ".join(outs))
        return len(idx)


def _objects(values) -> np.ndarray:
    """Exact integers as an object array (numpy would turn a list of Python ints that straddle
    2**63 into float64 and drop their low bits)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [int(x) for x in values]
    return out


def _or_padded(a, b):
    n = max(len(a), len(b))
    return np.pad(a, (0, n - len(a)), constant_values=True) | \
        np.pad(b, (0, n - len(b)), constant_values=True)


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


# -- streams (amaranth.lib.stream: ``name__payload/__valid/__ready``) ---------------------------
#
# Timing rule of every stream piece below: payload/valid/ready change only just after a falling
# edge; everything is sampled once the half cycle has settled (ReadOnly), so a beat counts exactly
# when valid & ready hold at the rising edge that follows.  Cycle numbers count falling edges
# from the moment a piece is started (start the pieces of one run together).

def stream_ports(comp):
    """``(inputs, outputs)``: {stream name: payload shape/layout} of a component's
    ``amaranth.lib.stream`` members (In streams are driven, Out streams monitored)."""
    from amaranth.lib import stream, wiring
    ins, outs = {}, {}
    for name, m in comp.signature.members.items():
        if not m.is_signature:
            continue
        sig = m.signature
        unflipped = sig.flip() if isinstance(sig, wiring.FlippedSignature) else sig
        if not isinstance(unflipped, stream.Signature):
            continue
        shape = unflipped.members["payload"].shape
        (ins if m.flow.name == "In" else outs)[name] = shape
    return ins, outs


def model_outputs(unit, params, inputs: dict) -> dict:
    """The golden model on stream payloads: ``inputs`` {stream: payloads} -> {stream: payloads}.
    Models take and return ``<stream>__payload`` arrays (the UnitSpec convention)."""
    kwargs = {f"{k}__payload": np.array([int(x) for x in v], dtype=object)
              for k, v in inputs.items()}
    res = unit.golden(params, **kwargs)
    return {k.removesuffix("__payload"): list(v) for k, v in res.items()}


class Pattern:
    """When a stream may move: a random probability of holding back (``prob``) and/or a scripted
    0/1 string indexed by cycle and repeated (``script``; ``1`` allows).  ``go(cycle)``."""

    def __init__(self, prob: float = 0.0, script: str | None = None, rng=None):
        self.prob = prob
        self.script = [c == "1" for c in (script or "").replace("_", "").replace(" ", "")]
        self.rng = rng or np.random.default_rng(0)

    def go(self, cycle: int) -> bool:
        if self.script and not self.script[cycle % len(self.script)]:
            return False
        return not (self.prob and self.rng.random() < self.prob)

    def duty(self) -> float:
        """Expected fraction of cycles allowed."""
        s = (sum(self.script) / len(self.script)) if self.script else 1.0
        return s * (1.0 - self.prob)


class StreamDriver:
    """Drives an ``In`` stream: offers ``items`` in order; a new item is offered only in a cycle
    the :class:`Pattern` allows (else valid stays low: an idle cycle); once offered, valid and
    payload hold until the DUT takes it.  ``idle_prob`` is a shorthand for ``Pattern(idle_prob)``.
    """

    def __init__(self, dut, name: str, clk, rng=None, idle_prob: float = 0.0,
                 pattern: Pattern | None = None):
        self.name = name
        self.payload = getattr(dut, f"{name}__payload")
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.clk = clk
        self.pattern = pattern or Pattern(idle_prob, None, rng or np.random.default_rng(0))
        self.sent = 0

    async def send(self, items):
        fall = FallingEdge(self.clk)
        items = [int(x) for x in items]
        await fall
        cycle, pending = 0, False
        while self.sent < len(items):
            if not pending:
                if self.pattern.go(cycle):
                    self.payload.value = items[self.sent]
                    self.valid.value = 1
                    pending = True
                else:
                    self.valid.value = 0
            await ReadOnly()
            if pending and int(self.ready.value) == 1:
                self.sent += 1
                pending = False
            await fall                   # the rising edge in between took the beat
            cycle += 1
        self.valid.value = 0


class StreamSink:
    """Drives the ``ready`` of an ``Out`` stream from a :class:`Pattern` (backpressure); the
    payloads are taken by a passive :class:`StreamMonitor`."""

    def __init__(self, dut, name: str, clk, pattern: Pattern | None = None):
        self.ready = getattr(dut, f"{name}__ready")
        self.clk = clk
        self.pattern = pattern or Pattern()

    async def run(self):
        fall = FallingEdge(self.clk)
        cycle = 0
        while True:
            await fall
            self.ready.value = 1 if self.pattern.go(cycle) else 0
            cycle += 1


class StreamMonitor:
    """Passive: logs ``(cycle, payload)`` of every valid & ready handshake of a stream in
    ``transfers``, and in ``offers`` the cycle each item was first offered (valid rising, or
    staying high after a handshake) -- ``offers[i]`` belongs to ``transfers[i]``."""

    def __init__(self, dut, name: str, clk):
        self.name = name
        self.payload = getattr(dut, f"{name}__payload")
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.clk = clk
        self.transfers: list[tuple[int, int]] = []
        self.offers: list[int] = []
        self.states: list[int] = []      # per cycle: 2·valid + ready (coverage of stalls)
        self.cycle = 0

    @property
    def payloads(self) -> list[int]:
        return [p for _, p in self.transfers]

    @property
    def cycles(self) -> list[int]:
        return [c for c, _ in self.transfers]

    async def run(self):
        fall = FallingEdge(self.clk)
        pending = False
        while True:
            await fall
            await ReadOnly()
            valid = int(self.valid.value) == 1 if self.valid.value.is_resolvable else False
            ready = int(self.ready.value) == 1 if self.ready.value.is_resolvable else False
            if valid and not pending:
                self.offers.append(self.cycle)
            self.states.append(2 * valid + ready)
            if valid and ready:
                self.transfers.append((self.cycle, _read(self.payload)))
            pending = valid and not ready
            self.cycle += 1


class SignalProbe:
    """Passive: samples a few internal signals of the DUT once per cycle (after the falling
    edge, settled), for coverage of internal states (``values``: {path: [int per cycle]}, -1
    for X/Z).  A path is dotted through the hierarchy (``"step"``, ``"octet0.wbuf"``); a signal
    the simulator does not expose is left out (``missing``)."""

    def __init__(self, dut, paths, clk):
        self.clk = clk
        self.handles, self.missing = {}, []
        for path in paths:
            h = dut
            try:
                for part in path.split("."):
                    h = getattr(h, part)
                self.handles[path] = h
            except AttributeError:
                self.missing.append(path)
        self.values = {p: [] for p in self.handles}

    async def run(self):
        fall = FallingEdge(self.clk)
        while True:
            await fall
            await ReadOnly()
            for p, h in self.handles.items():
                self.values[p].append(_read(h))


async def start_clock_and_reset(dut, ins=(), outs=(), cycles: int = 2, period_ns: int = 10):
    """Start ``dut.clk``, hold every input valid and output ready low, and ``dut.rst`` high for
    ``cycles`` cycles; returns just after a falling edge with reset released."""
    from cocotb.clock import Clock
    import cocotb
    cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())   # ends with the test
    for n in ins:
        getattr(dut, f"{n}__valid").value = 0
    for n in outs:
        getattr(dut, f"{n}__ready").value = 0
    dut.rst.value = 1
    for _ in range(cycles):
        await FallingEdge(dut.clk)
    dut.rst.value = 0
