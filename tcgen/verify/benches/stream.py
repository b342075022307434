"""Generic bench of stream units (bmma_array, int8_mac_array, bnn_epilogue, dp4_baseline,
dp4_pacq, ...): wiring only, no per-family code.

The unit's ``amaranth.lib.stream`` ports come from its signature: every ``In`` stream is driven
with the stimulus ``<stream>__payload`` (a :class:`StreamDriver` per stream), every ``Out``
stream's ready is driven by a :class:`StreamSink`, and a passive :class:`StreamMonitor` on every
stream logs ``(cycle, payload)`` of each handshake.  The expected outputs are the golden model
(``unit.golden``) called on the payloads the DUT actually accepted (from the input monitors), so
backpressure and reset need no bookkeeping; an in-order :class:`Scoreboard` compares, reporting
the first mismatches field by field through the payload layout.  Input streams may carry
different numbers of items (``wino_layer``: K·C filters once, then the maps' beats): each must
be accepted whole, and the reset scenario waits for half of each stream's own items.

The scenarios and their knobs are :class:`bench_config.BenchConfig` (JSON in ``TCGEN_BENCH``);
each scenario is one cocotb test starting from reset (scenarios not configured are skipped).
``summary.json``: per scenario ``<scenario>_vectors``, ``_mismatches``, ``_inputs`` (accepted),
``_cycles`` (first input offered .. last output taken), ``_latency`` (first cycle the input
that produces the first output is offered .. that output), ``_issue_intervals`` (sorted unique
gaps between accepted inputs), ``_throughput`` (outputs per cycle), ``_observed`` (JSON file of
the observed payloads); ``reset_leaked``, ``reset_mid_operation_accepted_before_reset``,
``reset_mid_operation_pending_at_reset``; totals ``vectors``, ``mismatches``.
"""
from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly, SimTimeoutError, with_timeout

from tcgen.verify import coverage
from tcgen.verify.bench_config import SCENARIOS, BenchConfig
from tcgen.verify.drivers import (Context, Pattern, Scoreboard, SignalProbe, StreamDriver,
                                  StreamMonitor, StreamSink, model_outputs,
                                  start_clock_and_reset, stream_ports)

CFG = BenchConfig.from_env()
PERIOD_NS = 10


class Bench:
    """What one scenario needs: context, stream ports, payload layouts, stimulus."""

    def __init__(self, dut, scenario: str):
        self.dut = dut
        self.scenario = scenario
        self.ctx = Context.from_env()
        comp = self.ctx.unit.interface(self.ctx.params)
        self.latency = int(getattr(comp, "latency", 1) or 1)
        self.ins, self.outs = stream_ports(comp)
        assert self.ins and self.outs, f"{self.ctx.unit.name}: no stream ports (use another bench)"
        keys = {f"{n}__payload" for n in self.ins}
        assert set(self.ctx.stimulus) == keys, \
            f"stimulus {sorted(self.ctx.stimulus)}, the unit's input streams need {sorted(keys)}"
        self.stimulus = {n: [int(x) for x in self.ctx.stimulus[f"{n}__payload"]]
                         for n in self.ins}
        self.index = SCENARIOS.index(scenario)

    def rng(self, *key):
        return np.random.default_rng([CFG.seed, self.index, *key])

    def head(self, n: int) -> dict:
        return {k: v[:n] if n else v for k, v in self.stimulus.items()}

    def model(self, inputs: dict) -> dict:
        return model_outputs(self.ctx.unit, self.ctx.params, inputs)

    async def start(self):
        await start_clock_and_reset(self.dut, self.ins, self.outs, period_ns=PERIOD_NS)

    def budget_ns(self, n_items: int, valid: float, ready: float) -> int:
        """Watchdog: a lost or duplicated item must fail, not hang."""
        duty = max(0.02, valid * ready)
        return int(((n_items + 4) * (self.latency + 1) / duty * 4 + 500) * PERIOD_NS)


def _patterns(bench: Bench, phase: int, stressed: bool):
    if not stressed:
        return ({n: Pattern() for n in bench.ins}, {n: Pattern() for n in bench.outs})
    drive = {n: Pattern(CFG.idle, CFG.valid_pattern, bench.rng(phase, 0, i))
             for i, n in enumerate(bench.ins)}
    take = {n: Pattern(CFG.stall, CFG.ready_pattern, bench.rng(phase, 1, i))
            for i, n in enumerate(bench.outs)}
    return drive, take


class Run:
    """Drivers, sinks and monitors of every stream, started together (one cycle count)."""

    def __init__(self, bench: Bench, inputs: dict, drive: dict, take: dict):
        dut, clk = bench.dut, bench.dut.clk
        self.bench = bench
        self.mon = {n: StreamMonitor(dut, n, clk) for n in list(bench.ins) + list(bench.outs)}
        probed = coverage.state_signals(bench.ctx.unit.name, bench.ctx.params)
        self.probe = SignalProbe(dut, [p for paths in probed.values() for p in paths], clk)
        self.tasks = [cocotb.start_soon(m.run()) for m in self.mon.values()]
        if self.probe.handles:
            self.tasks.append(cocotb.start_soon(self.probe.run()))
        self.sinks = [cocotb.start_soon(StreamSink(dut, n, clk, take[n]).run())
                      for n in bench.outs]
        self.drivers = {n: StreamDriver(dut, n, clk, pattern=drive[n]) for n in bench.ins}
        self.sends = [cocotb.start_soon(self.drivers[n].send(inputs[n])) for n in bench.ins]
        self.duty = (min(p.duty() for p in drive.values()), min(p.duty() for p in take.values()))

    def accepted(self) -> dict:
        return {n: self.mon[n].payloads for n in self.bench.ins}

    def observed(self) -> dict:
        return {n: self.mon[n].payloads for n in self.bench.outs}

    def stop(self):
        for t in self.tasks + self.sinks + self.sends:
            t.cancel()

    def cover(self, expected: dict):
        """Coverage of this run (tcgen/verify/coverage.py): the accepted payloads and the expected
        outputs, the handshake patterns of every stream, the probed internal states."""
        unit, params = self.bench.ctx.unit.name, self.bench.ctx.params
        coverage.sample(unit, params, self.accepted(), expected)
        coverage.sample_handshakes(unit, {n: self.mon[n].states for n in self.bench.ins},
                                   {n: self.mon[n].states for n in self.bench.outs}, params)
        coverage.sample_states(unit, params, self.probe.values)
        coverage.save(self.bench.ctx.run_dir, "stream")

    async def finish(self, n_inputs: int) -> dict:
        """Wait for every input to be accepted and every expected output to be taken, then
        hold ready high for a few cycles (nothing more may come out); returns expected."""
        clk, dut = self.bench.dut.clk, self.bench.dut

        async def sent():
            for t in self.sends:
                await t

        try:
            await with_timeout(sent(), self.bench.budget_ns(n_inputs, *self.duty), "ns")
        except SimTimeoutError:
            got = {n: d.sent for n, d in self.drivers.items()}
            raise AssertionError(f"inputs not accepted in time: {got} of {n_inputs}") from None
        expected = self.bench.model(self.accepted())

        async def taken():
            while any(len(self.mon[n].transfers) < len(expected[n]) for n in self.bench.outs):
                await FallingEdge(clk)

        n_out = max(len(v) for v in expected.values())
        try:
            await with_timeout(taken(), self.bench.budget_ns(n_out, 1.0, self.duty[1]), "ns")
        except SimTimeoutError:
            got = {n: len(self.mon[n].transfers) for n in self.bench.outs}
            want = {n: len(v) for n, v in expected.items()}
            raise AssertionError(f"outputs missing: got {got}, expected {want}") from None
        for t in self.sinks:
            t.cancel()
        await FallingEdge(clk)
        for n in self.bench.outs:
            getattr(dut, f"{n}__ready").value = 1
        for _ in range(3 * self.bench.latency + 3):       # extra outputs land in the monitors
            await FallingEdge(clk)
        await ReadOnly()
        await FallingEdge(clk)
        self.stop()
        for n in self.bench.outs:
            getattr(dut, f"{n}__ready").value = 0
        return expected

    def timing(self, expected: dict) -> dict:
        """Latency, issue intervals, cycles, throughput of this run (cycles of the monitors)."""
        ins, outs = list(self.bench.ins), list(self.bench.outs)
        out_cycles = [(self.mon[n].cycles[0], n) for n in outs if self.mon[n].transfers]
        offers = [self.mon[n].offers for n in ins if self.mon[n].offers]
        res = {"latency": None, "issue_intervals": [], "cycles": None, "throughput": None}
        gaps = set()
        for n in ins:
            gaps |= set(np.diff(self.mon[n].cycles).tolist())
        res["issue_intervals"] = sorted(int(g) for g in gaps)
        if not out_cycles or not offers:
            return res
        first_out, stream = min(out_cycles)
        last_out = max(self.mon[n].cycles[-1] for n in outs if self.mon[n].transfers)
        first_in = min(o[0] for o in offers)
        res["cycles"] = int(last_out - first_in + 1)
        n_out = sum(len(self.mon[n].transfers) for n in outs)
        res["throughput"] = round(n_out / res["cycles"], 4)
        k = self._producer(stream)                 # inputs up to index k-1 make output 0
        if k is not None:
            res["latency"] = int(first_out - max(self.mon[n].offers[k - 1] for n in ins))
        return res

    def _producer(self, stream: str) -> int | None:
        """Length of the shortest prefix of the accepted inputs for which the model already
        gives an output on ``stream`` (exponential, then binary search)."""
        acc = self.accepted()
        n = min(len(v) for v in acc.values())

        def emits(k):
            return len(self.bench.model({s: v[:k] for s, v in acc.items()})[stream]) > 0

        if n == 0 or not emits(n):
            return None
        hi = 1
        while hi < n and not emits(hi):
            hi *= 2
        hi = min(hi, n)
        lo = hi // 2                               # emits(lo) is False (or lo == 0)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if emits(mid):
                hi = mid
            else:
                lo = mid
        return hi


def score(bench: Bench, run: Run, expected: dict, label: str) -> Scoreboard:
    observed = run.observed()
    sb = Scoreboard({n: expected[n] for n in bench.outs}, None, bench.dut._log,
                    max_report=CFG.max_report, layouts=dict(bench.outs))
    sb.compare({n: np.array(observed[n], dtype=object) for n in bench.outs})
    path = os.path.join(bench.ctx.run_dir, f"{label}.observed.json")
    with open(path, "w") as fh:
        json.dump(observed, fh)
    return sb


def record(bench: Bench, sb: Scoreboard, run: Run, timing: dict, **extra):
    path = os.path.join(bench.ctx.run_dir, "summary.json")
    old = {}
    if os.path.exists(path):
        with open(path) as fh:
            old = json.load(fh)
    s = bench.scenario
    values = {"vectors": old.get("vectors", 0) + sb.vectors,
              "mismatches": old.get("mismatches", 0) + sb.mismatches,
              f"{s}_vectors": sb.vectors, f"{s}_mismatches": sb.mismatches,
              f"{s}_inputs": min(len(v) for v in run.accepted().values()),
              f"{s}_observed": os.path.join(bench.ctx.run_dir, f"{s}.observed.json"),
              f"{s}_first_mismatches": sb.reports}
    values.update({f"{s}_{k}": v for k, v in timing.items()})
    values.update(extra)
    bench.ctx.write_summary(**values)
    bench.dut._log.info(f"{s}: {json.dumps({k: v for k, v in values.items() if 'first' not in k})}")


async def scored_run(bench: Bench, inputs: dict, phase: int, stressed: bool, **extra):
    drive, take = _patterns(bench, phase, stressed)
    run = Run(bench, inputs, drive, take)
    n = max(len(v) for v in inputs.values())
    expected = await run.finish(n)
    sb = score(bench, run, expected, bench.scenario)
    run.cover(expected)
    timing = run.timing(expected)
    record(bench, sb, run, timing, **extra)
    accepted = run.accepted()          # streams may differ in length (wino_layer: w and x)
    assert all(len(accepted[k]) == len(v) for k, v in inputs.items()), \
        f"not every input was accepted: {({k: len(accepted[k]) for k in inputs})} of " \
        f"{({k: len(v) for k, v in inputs.items()})}"
    assert sb.mismatches == 0, \
        f"{bench.scenario}: {sb.mismatches} of {sb.vectors} outputs differ from the model; " \
        f"first: {sb.reports[:3]}"


def _high(handle) -> bool:
    v = handle.value
    return v.is_resolvable and int(v) == 1


def _skip(name):
    return name not in CFG.scenarios


@cocotb.test(skip=_skip("back_to_back"))
async def back_to_back(dut):
    """Valid and ready always high, the whole stimulus: latency, issue interval, cycles."""
    bench = Bench(dut, "back_to_back")
    await bench.start()
    await scored_run(bench, bench.stimulus, 0, stressed=False)


@cocotb.test(skip=_skip("backpressure"))
async def backpressure(dut):
    """Idle cycles on the inputs and stalls on the outputs (random and/or scripted)."""
    bench = Bench(dut, "backpressure")
    await bench.start()
    await scored_run(bench, bench.head(CFG.stress_ops), 0, stressed=True)


@cocotb.test(skip=_skip("reset_mid_operation"))
async def reset_mid_operation(dut):
    """Part of the stimulus under idle/stall patterns, reset with operations in flight, nothing
    may come out after it; then the stress stimulus again from a clean state, scored."""
    bench = Bench(dut, "reset_mid_operation")
    await bench.start()
    stress = bench.head(CFG.stress_ops)
    n_stress = max(len(v) for v in stress.values())
    n_first = CFG.reset_ops or max(1, n_stress // 2)
    first = {k: v[:n_first] for k, v in bench.stimulus.items()}
    drive, take = _patterns(bench, 1, stressed=True)
    run = Run(bench, first, drive, take)
    if CFG.reset_at is not None:
        reset_at = CFG.reset_at
        for _ in range(reset_at):
            await FallingEdge(dut.clk)
    else:                   # default: once half of these inputs went in (so some are in flight)
        target = max(1, n_first // 2)          # of each stream's own (streams may differ)
        want = {n: min(target, max(1, len(first[n]) // 2)) for n in bench.ins}

        async def half_in():
            while any(len(run.mon[n].transfers) < want[n] for n in bench.ins):
                await FallingEdge(dut.clk)

        await with_timeout(half_in(), bench.budget_ns(target, *run.duty), "ns")
        reset_at = run.mon[next(iter(bench.ins))].cycle
    await ReadOnly()
    await FallingEdge(dut.clk)
    run.stop()
    accepted = run.accepted()
    pending = {n: len(v) - len(run.mon[n].transfers) for n, v in bench.model(accepted).items()}
    for n in bench.ins:
        getattr(dut, f"{n}__valid").value = 0
    for n in bench.outs:
        getattr(dut, f"{n}__ready").value = 1          # a leaking output would be taken
    dut.rst.value = 1
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    leaked = 0
    for _ in range(bench.latency + 5):                 # nothing may come out after the reset
        await ReadOnly()
        leaked += sum(_high(getattr(dut, f"{n}__valid")) for n in bench.outs)
        await FallingEdge(dut.clk)
    for n in bench.outs:
        getattr(dut, f"{n}__ready").value = 0
    n_acc = min(len(v) for v in accepted.values())
    dut._log.info(f"reset at cycle {reset_at}: {n_acc} inputs accepted, outputs pending "
                  f"{pending}, {leaked} output-valid cycles after the reset")
    extra = {"reset_leaked": leaked, "reset_mid_operation_accepted_before_reset": n_acc,
             "reset_mid_operation_pending_at_reset": int(sum(pending.values()))}
    try:
        await scored_run(bench, stress, 2, stressed=True, **extra)
    finally:
        if leaked:
            bench.ctx.write_summary(**extra)
    assert n_acc > 0, f"reset at cycle {reset_at} came before any input was accepted"
    assert leaked == 0, f"{leaked} output-valid cycles after the reset"
