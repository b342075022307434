"""Bench for the PacQ stream units (dp4_baseline, dp4_pacq): op stream in, res stream out.

Three cocotb tests run in one simulation, each starting from reset:

* ``back_to_back``: operations every cycle, result ready always high.  Scores every beat
  against the registry golden model and records the cycle count from the first operation
  presented to the last result taken (the paper's DP-4 cycle counts: beats + 3).
* ``backpressure``: random bubbles on ``op`` and random stalls on ``res``.

* ``reset_mid_operation``: half the stimulus under stalls, synchronous reset with operations in
  flight, then the whole stimulus again; no result may leak out of the reset, and the second
  pass must match the model.

``backpressure`` and ``reset_mid_operation`` use the first ``TCGEN_PACQ_STRESS_OPS`` operations
(default: all) to keep the Icarus runs short.

Stimulus: ``op__payload`` (one packed payload per operation).  Expected values come only from
``unit.golden``.

Driver, monitor and scoreboard are the shared ones from tb/drivers.py; a probe only counts
cycles.
"""
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, with_timeout

from drivers import Context, Scoreboard, StreamDriver, StreamMonitor


class _Probe:
    """Counts cycles and records the first cycle an operation is offered (op.valid) and the
    last cycle a result is taken (res.valid & res.ready), sampled settled before each edge."""

    def __init__(self, dut):
        self.dut, self.n, self.first_op, self.last_res = dut, 0, None, None

    async def run(self):
        while True:
            await FallingEdge(self.dut.clk)
            await ReadOnly()
            if self.first_op is None and int(self.dut.op__valid.value) == 1:
                self.first_op = self.n
            if int(self.dut.res__valid.value) == 1 and int(self.dut.res__ready.value) == 1:
                self.last_res = self.n
            self.n += 1


async def _start(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())    # tasks end with each test
    dut.op__valid.value = 0
    dut.res__ready.value = 0
    dut.rst.value = 1
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


async def _run(dut, ctx, payloads, idle=0.0, stall=0.0, seed=0):
    expected = ctx.unit.golden(ctx.params, op__payload=payloads)["res__payload"]
    drv = StreamDriver(dut, "op", dut.clk, rng=np.random.default_rng(seed), idle_prob=idle)
    mon = StreamMonitor(dut, "res", dut.clk, rng=np.random.default_rng(seed + 1),
                        stall_prob=stall)
    cocotb.start_soon(drv.send(list(payloads)))
    items = await with_timeout(mon.collect(len(expected)), 10 * (20 * len(expected) + 200), "ns")
    sb = Scoreboard({"res__payload": expected}, {"beat": np.arange(len(expected))}, dut._log)
    sb.compare({"res__payload": np.array(items, dtype=object)})
    return sb


def _stress(payloads):
    n = int(os.environ.get("TCGEN_PACQ_STRESS_OPS", "0")) or len(payloads)
    return payloads[:n]


def _record(ctx, test, sb, **extra):
    old = {}
    path = os.path.join(ctx.run_dir, "summary.json")
    if os.path.exists(path):
        import json
        old = json.load(open(path))
    vectors = old.get("vectors", 0) + sb.vectors
    mismatches = old.get("mismatches", 0) + sb.mismatches
    ctx.write_summary(vectors=vectors, mismatches=mismatches,
                      **{f"{test}_{k}": v for k, v in dict(extra, vectors=sb.vectors,
                                                          mismatches=sb.mismatches).items()})


@cocotb.test()
async def back_to_back(dut):
    ctx = Context.from_env()
    await _start(dut)
    probe = _Probe(dut)
    cocotb.start_soon(probe.run())
    payloads = ctx.stimulus["op__payload"]
    sb = await _run(dut, ctx, payloads)
    extra = {"cycles": probe.last_res - probe.first_op + 1, "beats": sb.vectors,
             "ops": len(payloads)}
    _record(ctx, "back_to_back", sb, **extra)
    dut._log.info(f"back_to_back: {sb.vectors} beats, {sb.mismatches} mismatches, {extra}")
    assert sb.mismatches == 0


@cocotb.test()
async def backpressure(dut):
    ctx = Context.from_env()
    await _start(dut)
    sb = await _run(dut, ctx, _stress(ctx.stimulus["op__payload"]), idle=0.3, stall=0.4, seed=7)
    _record(ctx, "backpressure", sb)
    assert sb.mismatches == 0


@cocotb.test()
async def reset_mid_operation(dut):
    ctx = Context.from_env()
    await _start(dut)
    payloads = _stress(ctx.stimulus["op__payload"])
    half = payloads[: max(1, len(payloads) // 2)]
    drv = StreamDriver(dut, "op", dut.clk, rng=np.random.default_rng(3), idle_prob=0.2)
    mon = StreamMonitor(dut, "res", dut.clk, rng=np.random.default_rng(4), stall_prob=0.3)
    t_send = cocotb.start_soon(drv.send(list(half)))
    t_mon = cocotb.start_soon(mon.collect(10 ** 9))
    for _ in range(max(3, len(half) // 2)):
        await FallingEdge(dut.clk)
    t_send.cancel()
    t_mon.cancel()
    dut.rst.value = 1
    dut.op__valid.value = 0
    dut.res__ready.value = 1
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    leaked = 0
    for _ in range(5):                      # nothing may come out after the reset
        await ReadOnly()
        leaked += int(dut.res__valid.value)
        await FallingEdge(dut.clk)
    sb = await _run(dut, ctx, payloads, idle=0.1, stall=0.1, seed=11)
    _record(ctx, "reset", sb, leaked=leaked)
    assert leaked == 0, f"{leaked} results left the pipeline after reset"
    assert sb.mismatches == 0
