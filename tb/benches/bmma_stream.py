"""Stream bench of the BMMA family (bmma_array, int8_mac_array, bnn_epilogue).

Wiring only: the stimulus is a list of request payloads (``req``); a stream driver sends them
(with random idle cycles), a stream monitor takes the results (with random backpressure), the
unit's registered golden model turns the same requests into the expected results and a
scoreboard compares.  A passive transfer logger records the cycle of every handshake so the
bench can check the protocol timing the unit documents.

Environment (set by the pytest side through ``extra_env``):
  TCGEN_IDLE        probability of an idle (valid low) cycle before a request   (default 0)
  TCGEN_STALL       probability of ready low at the output                       (default 0)
  TCGEN_CHECK_TIMING  1: no idle/stall allowed; assert latency and one request per ``fold``
                    cycles (arrays) / per cycle (epilogue), i.e. back-to-back issue, no bubbles
  TCGEN_RESET_AT    cycle at which to pulse reset in mid-operation; the bench then checks that
                    the unit is idle and empty after it and runs the stimulus afterwards
"""
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, with_timeout

from drivers import Context, Scoreboard, StreamDriver, StreamMonitor

OUT = {"bmma_array": "d", "int8_mac_array": "d", "bnn_epilogue": "out"}


async def log_transfers(dut, out_name, log):
    """Cycle numbers of every input and output handshake (sampled as the DUT sees them)."""
    cycle = 0
    while True:
        await ReadOnly()
        if int(dut.req__valid.value) and int(dut.req__ready.value):
            log["in"].append(cycle)
        if int(getattr(dut, f"{out_name}__valid").value) and \
                int(getattr(dut, f"{out_name}__ready").value):
            log["out"].append(cycle)
        if int(dut.req__valid.value) and log["first_valid"] is None:
            log["first_valid"] = cycle
        cycle += 1
        await FallingEdge(dut.clk)


@cocotb.test()
async def requests_match_golden_model(dut):
    ctx = Context.from_env()
    comp = ctx.unit.component(ctx.params)
    out_name = OUT[ctx.unit.name]
    req = list(ctx.stimulus["req"])
    expected = ctx.unit.golden(ctx.params, req=req)
    exp = expected[out_name]
    idle = float(os.environ.get("TCGEN_IDLE", "0"))
    stall = float(os.environ.get("TCGEN_STALL", "0"))
    timing = os.environ.get("TCGEN_CHECK_TIMING", "0") == "1"
    reset_at = os.environ.get("TCGEN_RESET_AT")
    rng = np.random.default_rng(int(os.environ.get("TCGEN_BENCH_SEED", "1")))

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.req__valid.value = 0
    getattr(dut, f"{out_name}__ready").value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    await FallingEdge(dut.clk)
    dut.rst.value = 0

    if reset_at is not None:
        # start a transaction and get an output pending, then reset in mid-operation
        drv0 = StreamDriver(dut, "req", dut.clk, rng)
        task = cocotb.start_soon(drv0.send(req[:4]))
        await ClockCycles(dut.clk, int(reset_at))
        await FallingEdge(dut.clk)
        task.cancel()
        dut.req__valid.value = 0
        dut.rst.value = 1
        await FallingEdge(dut.clk)
        dut.rst.value = 0
        await ReadOnly()
        assert int(getattr(dut, f"{out_name}__valid").value) == 0, "output valid after reset"
        await FallingEdge(dut.clk)

    log = {"in": [], "out": [], "first_valid": None}
    cocotb.start_soon(log_transfers(dut, out_name, log))
    drv = StreamDriver(dut, "req", dut.clk, rng, idle_prob=idle)
    mon = StreamMonitor(dut, out_name, dut.clk, rng, stall_prob=stall)
    send = cocotb.start_soon(drv.send(req))
    # watchdog: a lost or duplicated item must fail, not hang
    budget = (len(req) * comp.latency / max(1e-3, (1 - idle) * (1 - stall)) * 4 + 200) * 10
    got = await with_timeout(mon.collect(len(exp)), int(budget), "ns")
    await send
    # nothing more may come out
    getattr(dut, f"{out_name}__ready").value = 1
    for _ in range(3 * comp.latency + 3):
        await FallingEdge(dut.clk)
        await ReadOnly()
        assert not int(getattr(dut, f"{out_name}__valid").value), "extra output"
    sb = Scoreboard({out_name: exp}, {"req": np.array(req, dtype=object)}, dut._log)
    sb.compare({out_name: np.array(got, dtype=object)})
    observed = os.path.join(ctx.run_dir, "observed.txt")
    with open(observed, "w") as fh:
        fh.write("".join(f"{int(x)}\n" for x in got))
    summary = {"requests": len(req), "vectors": sb.vectors, "mismatches": sb.mismatches,
               "latency": comp.latency, "observed": observed}
    if timing:
        step = getattr(ctx.params, "fold", 1)
        gaps = np.diff(log["in"]) if len(log["in"]) > 1 else np.array([step])
        assert len(log["in"]) == len(req), f"{len(log['in'])} input transfers for {len(req)}"
        assert np.all(gaps == step), f"input issue gaps {sorted(set(gaps.tolist()))}, " \
                                     f"expected every {step} cycles (back to back)"
        # D of the first emitting request appears `latency` cycles after its first valid cycle
        first_emit = next(i for i, v in enumerate(_emits(ctx, req)) if v)
        start = log["first_valid"] + first_emit * step
        lat = log["out"][0] - start
        assert lat == comp.latency, f"measured latency {lat}, documented {comp.latency}"
        summary.update(measured_latency=int(lat), issue_interval=int(gaps.max()),
                       cycles=int(log["out"][-1] - log["first_valid"] + 1))
    ctx.write_summary(**summary)
    dut._log.info(f"{summary}")
    assert sb.mismatches == 0, f"{sb.mismatches} of {sb.vectors} results differ from the model"


def _emits(ctx, req):
    """Which requests produce an output (emit for arrays, last for the epilogue)."""
    from tcgen.units.bmma import model
    if ctx.unit.name == "bnn_epilogue":
        off, _ = model._layout_epilogue(ctx.params)["last"]
    else:
        off, _ = model._layout_array(ctx.params)["emit"]
    return [(int(r) >> off) & 1 for r in req]
