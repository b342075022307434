"""Generic bench for fixed-latency units with plain ports.

Streams the stimulus (one vector per cycle), checks the latency the unit declares, and scores
every output against the unit's golden model.
"""
import cocotb
from cocotb.clock import Clock

from tcgen.verify import coverage
from tcgen.verify.drivers import Context, Scoreboard, stream_fixed_latency


@cocotb.test()
async def vectors_match_golden_model(dut):
    ctx = Context.from_env()
    comp = ctx.unit.interface(ctx.params)
    latency = comp.latency
    inputs = [k for k, v in comp.signature.members.items() if v.flow.name == "In"]
    outputs = [k for k, v in comp.signature.members.items() if v.flow.name == "Out"]
    assert set(ctx.stimulus) == set(inputs), f"stimulus {sorted(ctx.stimulus)} vs ports {inputs}"
    clk = None
    if latency:
        clk = dut.clk
        cocotb.start_soon(Clock(clk, 10, unit="ns").start())
        dut.rst.value = 0
    observed = await stream_fixed_latency(dut, ctx.stimulus, outputs, latency, clk)
    expected = ctx.unit.golden(ctx.params, **ctx.stimulus)
    coverage.sample(ctx.unit.name, ctx.params, ctx.stimulus, expected)
    coverage.save(ctx.run_dir, "fixed_latency")
    sb = Scoreboard({k: expected[k] for k in outputs}, ctx.stimulus, dut._log)
    sb.compare(observed)
    ctx.write_summary(vectors=sb.vectors, mismatches=sb.mismatches, latency=latency,
                      first_mismatches=sb.reports)
    dut._log.info(f"{sb.vectors} vectors, {sb.mismatches} mismatches")
    assert sb.mismatches == 0, f"{sb.mismatches} of {sb.vectors} vectors differ from the model"
