"""The timing report of a design with asynchronous resets (issue 39, §3 "Design").

OpenSTA files a flip-flop's recovery and removal checks (its asynchronous reset pin against
the clock) in a path group of their own, ``**async_default**``.  The flow once took the first
path of ``find_timing_paths -group_count 1`` -- one path per group, the async group first --
so for a design whose flip-flops reset asynchronously it reported the reset input's recovery
check (a fraction of a nanosecond, here even a negative "critical path") instead of the
register-to-register logic.  synth/sta.py now reports the worst setup path of the clock's
group only.  A few seconds on the three liberties; needs no checkout."""
from __future__ import annotations

import pytest

from tcgen.synth.liberty import shared_liberty_available
from tcgen.synth.ppa import measure_verilog

LIBS = ["osu018"] + (["nangate45", "sky130hd"] if shared_liberty_available() else [])

# Registered operands, a 12 x 12 multiplier between the registers: the register-to-register
# path is several nanoseconds on every liberty; the reset input reaches the flip-flops' reset
# pins directly (a recovery check of well under a nanosecond).
_DESIGN = """
module sta_async(input clk, input rst_n, input [11:0] a, input [11:0] b,
                 output reg [23:0] q);
  reg [11:0] ra, rb;
  always @(posedge clk {edge})
    if ({cond}) begin ra <= 12'd0; rb <= 12'd0; q <= 24'd0; end
    else begin ra <= a; rb <= b; q <= ra * rb; end
endmodule
"""
ASYNC = _DESIGN.format(edge="or negedge rst_n", cond="!rst_n")
SYNC = _DESIGN.format(edge="", cond="!rst_n")

# reset pins of the liberties' asynchronous-reset flip-flops (osu018 DFFSR R/S, nangate45
# DFFR_X1 RN, sky130hd dfrtp RESET_B)
RESET_PINS = ("R", "S", "RN", "SN", "RESET_B", "SET_B")


@pytest.mark.parametrize("lib", [lib if lib == "osu018" else pytest.param(lib, marks=pytest.mark.slow)
                                 for lib in LIBS])          # make test's budget: osu018
def test_async_reset_design_reports_the_logic_not_the_recovery_check(lib):
    r = measure_verilog(ASYNC, "sta_async", liberty=lib)
    s = measure_verilog(SYNC, "sta_async", liberty=lib)
    # the netlist really has asynchronous-reset flip-flops (else the test proves nothing)
    assert any(c.startswith(("DFFSR", "DFFR_", "sky130_fd_sc_hd__dfrtp"))
               for c in r["cells_by_type"]), r["cells_by_type"]
    # the reported path is the multiplier: register to register, not rst_n to a reset pin
    assert r["startpoint"] != "rst_n" and r["startpoint"].endswith("/Q"), r["startpoint"]
    assert r["endpoint"].endswith("/D"), r["endpoint"]
    assert r["endpoint"].rsplit("/", 1)[1] not in RESET_PINS
    assert r["crit_path_ns"] > 1.0, r["crit_path_ns"]
    # ... and about as long as the same logic between synchronously reset registers (the
    # async flip-flops' clock-to-Q and setup differ a little, and ABC maps two netlists)
    assert 0.6 < r["crit_path_ns"] / s["crit_path_ns"] < 1.6, (r["crit_path_ns"],
                                                               s["crit_path_ns"])


def test_async_group_is_logged_but_not_reported(tmp_path):
    """The OpenSTA log names the clock's path group for the reported path and still prints
    the async group's worst slack (for information)."""
    from tcgen.synth import sta
    from tcgen.synth.liberty import resolve
    from tcgen.synth.ppa import synthesized

    lib = resolve("osu018")
    syn, _ = synthesized(ASYNC, "sta_async", lib, 10.0)
    timing, _, _ = sta.timing_and_power(lib, syn.netlist, "sta_async", 10.0, True, tmp_path)
    log = (tmp_path / "sta.log").read_text()
    assert "Path Group: clk" in log
    assert "TCGEN_ASYNC_SLACK" in log
    async_slack = float(log.split("TCGEN_ASYNC_SLACK", 1)[1].split()[0])
    assert timing.slack_ns < async_slack          # the logic is the worse of the two
    assert timing.startpoint != "rst_n"
