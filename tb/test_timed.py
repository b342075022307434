"""The timed activity engine (tcgen.synth.timedsim, ``--activity sim-timed``; docs/ppa.md).

The references: Icarus on the vendor cell models with their specify delays annotated from the
same SDF (every net's transition count equal, on a registered design with reset, a
combinational multiplier and a pipelined one); the zero-delay engine (equal counts when every
delay is zero); hand-derived waveforms of small circuits; and the invariants every cycle must
keep (a net's transitions have the parity of its settled change)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from small_designs import ACC

from tcgen.generate import unit_params, verilog
from tcgen.measure import measure
from tcgen.registry import get_unit
from tcgen.synth import activity as act
from tcgen.synth import sta
from tcgen.synth.liberty import resolve, shared_liberty_available
from tcgen.synth.timedsim import TimedSim, TimedSimError, read_sdf
from tcgen.synth.tools import FlowInputError
from tcgen.synth.ppa import synthesized

# the libraries whose vendor models take SDF delays (specify blocks): osu018 (sky130hd's
# FUNCTIONAL models have none, nangate45 ships no models)
REF_LIBS = [n for n in ["osu018"] + (["nangate45", "sky130hd"] if shared_liberty_available()
                                      else []) if act.models_have_specify(resolve(n))]

_ACC = ACC


def _design(name, tmp_path, lib, n, rng):
    if name == "acc":
        text, top = _ACC, "acc"
        wl = {"a": rng.integers(0, 1 << 16, n), "op": rng.integers(0, 4, n)}
    elif name == "fp_mul":
        text, top = verilog("fp_mul"), "fp_mul"
        wl = {"a": rng.integers(0, 1 << 16, n), "b": rng.integers(0, 1 << 16, n)}
    else:                                  # a pipelined FP8 multiplier: flip-flops mid-datapath
        u = get_unit("fp_mul")
        text = verilog("fp_mul", unit_params(u, {"fmt": "fp8_e4m3", "cuts": "product"}))
        top = "fp_mul"
        wl = {"a": rng.integers(0, 256, n), "b": rng.integers(0, 256, n)}
    syn, _ = synthesized(text, top, lib, 10.0)      # the flow's cache: shared with the suite
    nl = act.read_netlist(syn.netlist, top)
    return syn.netlist, nl, wl


@pytest.mark.parametrize("lib", REF_LIBS)
@pytest.mark.parametrize("design", ["acc", pytest.param("fp_mul", marks=pytest.mark.slow),
                                    "fp8_piped"])          # fp_mul: 3.5 s, make test's budget
def test_timed_engine_equals_icarus_with_sdf(lib, design, tmp_path):
    """Every net's transition count (glitches included) equals Icarus's on the vendor cell
    models with the same SDF annotated (time precision 1 fs), and the engine counts more
    transitions than the zero-delay simulation."""
    L = resolve(lib)
    n = 120
    netlist, nl, wl = _design(design, tmp_path, L, n, np.random.default_rng(7))
    has_clk = "clk" in nl.ports
    sdf = sta.write_sdf(L, netlist, nl.top, 10.0, has_clk, tmp_path)
    ref, zero_ref, name, vcd, _ = act.timed_activity(nl, netlist, L, wl, tmp_path / "ic", n,
                                                      "icarus", sdf, 10.0)
    assert name == "icarus-sdf" and vcd is not None
    got, zero, name, _, info = act.timed_activity(nl, netlist, L, wl, tmp_path / "tm", n,
                                                  "auto", sdf, 10.0, pulse="icarus")
    assert name == "timed" and info["missing_arcs"] == 0
    assert set(got) == set(ref)
    diff = {k: (got[k][0] * n, ref[k][0] * n) for k in ref if got[k][0] != ref[k][0]}
    assert not diff, list(diff.items())[:5]
    assert zero == zero_ref
    timed_total = sum(v[0] for v in got.values())
    zero_total = sum(v[0] for v in zero.values())
    assert timed_total > zero_total > 0.1 * len(zero)
    if design == "fp_mul":                   # a multiplier glitches: well over the functional
        assert timed_total > 1.5 * zero_total


def test_parity_and_zero_delays(tmp_path):
    """Per net, the timed count has the parity of the zero-delay count (a cycle's transitions
    take the net from its settled value to the next one), and with every delay set to 0 the
    timed engine counts exactly the zero-delay transitions."""
    L = resolve("osu018")
    n = 80
    netlist, nl, wl = _design("fp8_piped", tmp_path, L, n, np.random.default_rng(3))
    sdf = sta.write_sdf(L, netlist, nl.top, 10.0, True, tmp_path)
    timed, zero, _ = act.simulate_timed(nl, netlist, L, wl, n, sdf, 10.0)
    for k in zero:
        assert round(timed[k][0] * n) % 2 == round(zero[k][0] * n) % 2, k
        assert timed[k][1] == zero[k][1]               # duty: the settled signal's
    text = sdf.read_text()
    import re
    zeros = re.sub(r"\(([-0-9.eE+]*):([-0-9.eE+]*):([-0-9.eE+]*)\)", "(0::0)", text)
    (tmp_path / "zero.sdf").write_text(zeros)
    t0, z0, _ = act.simulate_timed(nl, netlist, L, wl, n, tmp_path / "zero.sdf", 10.0)
    assert {k: v[0] for k, v in t0.items()} == {k: v[0] for k, v in z0.items()}
    assert any(timed[k][0] > zero[k][0] for k in zero)


# -- hand-derived waveforms --------------------------------------------------------------------
# y = a XOR (a delayed through two inverters): each change of a makes a pulse on y as wide as
# the inverter chain's delay, unless the XOR's own delay is longer (then it is filtered).
_GLITCH = """module g(a, y);
  input a;
  output y;
  wire n1;
  wire n2;
  INVX1 i1 (
    .A(a),
    .Y(n1)
  );
  INVX1 i2 (
    .A(n1),
    .Y(n2)
  );
  XOR2X1 x (
    .A(a),
    .B(n2),
    .Y(y)
  );
endmodule
"""


def _sdf(arcs: dict) -> str:
    cells = "".join(
        f' (CELL (CELLTYPE "{cell}") (INSTANCE {inst}) (DELAY (ABSOLUTE '
        + " ".join(f"(IOPATH {i} {o} ({r}::{r}) ({f}::{f}))" for (i, o), (r, f) in pins.items())
        + ")))\n" for (cell, inst), pins in arcs.items())
    return f'(DELAYFILE (SDFVERSION "3.0") (DESIGN "g") (TIMESCALE 1ns)\n{cells})\n'


def _glitch_sim(tmp_path, inv_ns, xor_a_ns, xor_b_ns):
    from tcgen.synth.gatesim import GateSim
    L = resolve("osu018")
    (tmp_path / "g.v").write_text(_GLITCH)
    nl = act.read_netlist(tmp_path / "g.v", "g")
    assert len(nl.instances) == 3
    sim = GateSim(nl.instances, nl.assigns, L.cells, ["a", "y", "n1", "n2"])
    sdf = read_sdf(_sdf({("INVX1", "i1"): {("A", "Y"): (inv_ns, inv_ns)},
                         ("INVX1", "i2"): {("A", "Y"): (inv_ns, inv_ns)},
                         ("XOR2X1", "x"): {("A", "Y"): (xor_a_ns, xor_a_ns),
                                           ("B", "Y"): (xor_b_ns, xor_b_ns)}}))
    ts = TimedSim(sim, sdf, 10.0)
    ts.keep = True
    src = list(ts.sources)
    a = sim.nets["a"]
    # one cycle: a rises at t = 0
    pre = np.zeros((len(src), 1), np.uint8)
    mid = pre.copy()
    mid[src.index(a), 0] = 1
    pre[src.index(1), 0] = mid[src.index(1), 0] = 1          # the constant 1'b1
    post = mid.copy()
    counts = ts.run(pre, mid, post)
    return ts, sim, counts


def test_glitch_pulse_width_and_filtering(tmp_path):
    # inverters 0.2 ns each: n2 follows a at 0.4; the XOR (0.1 ns) sees a at 0 and n2 at 0.4:
    # y = 1 from 0.1 to 0.5 -- one glitch, two transitions
    ts, sim, counts = _glitch_sim(tmp_path, 0.2, 0.1, 0.1)
    assert ts.waveform(sim.nets["n2"], 0) == (0, [0.4])
    assert ts.waveform(sim.nets["y"], 0) == (0, [0.1, 0.5])
    assert counts[sim.nets["y"]] == 2
    # XOR delay 0.5 ns > the 0.4 ns pulse: the update scheduled by a (at 0.5) samples the
    # XOR after n2 has followed (0.4): 0 again -> filtered, y never moves
    ts, sim, counts = _glitch_sim(tmp_path, 0.2, 0.5, 0.5)
    assert ts.waveform(sim.nets["y"], 0) == (0, [])
    # unequal arcs: A 0.5 ns, B 0.05 ns.  a at 0 schedules an update at 0.5; n2 at 0.4
    # schedules one at 0.45, which samples y = 0 (no change); at 0.5 y is still 0: filtered
    ts, sim, counts = _glitch_sim(tmp_path, 0.2, 0.5, 0.05)
    assert ts.waveform(sim.nets["y"], 0) == (0, [])
    # A 0.1, B 0.3: y rises at 0.1, the update from n2 (0.4 + 0.3) brings it back at 0.7
    ts, sim, counts = _glitch_sim(tmp_path, 0.2, 0.1, 0.3)
    assert ts.waveform(sim.nets["y"], 0) == (0, [0.1, 0.7])


def test_negative_delays_are_zero(tmp_path):
    """OpenSTA extrapolates an NLDM table below its first slew to a negative delay (nangate45's
    NOR2_X1 at ideal input transitions): taken as 0, counted -- a send never precedes its
    cause, so a cycle still ends at its settled value."""
    ts, sim, _ = _glitch_sim(tmp_path, 0.2, -0.01, 0.1)
    assert ts.negative_arcs == 2
    assert ts.waveform(sim.nets["y"], 0) == (0, [0.0, 0.5])


def test_read_sdf():
    text = """(DELAYFILE (SDFVERSION "3.0") (TIMESCALE 100ps)
 (CELL (CELLTYPE "AND2X2") (INSTANCE u1)
  (DELAY (ABSOLUTE (IOPATH A Y (1.5::1.5) (2.0::2.0)) (IOPATH B Y (1:1.2:3)))))
 (CELL (CELLTYPE "DFFPOSX1") (INSTANCE r)
  (DELAY (ABSOLUTE (IOPATH (posedge CLK) Q (3::3) (4::4))
   (COND D==1'b1 (IOPATH (posedge CLK) Q (5::5) (1::1))))))
 (CELL (CELLTYPE "top") (INSTANCE)
  (DELAY (ABSOLUTE (INTERCONNECT a u1/A (0.2::0.2)) (INTERCONNECT a u1/B (0.1::0.3))))))
"""
    d = read_sdf(text)
    assert d.arcs[("u1", "A", "Y")] == pytest.approx((0.15, 0.2))
    assert d.arcs[("u1", "B", "Y")] == pytest.approx((0.12, 0.12))        # typ, one value
    assert d.arcs[("r", "CLK", "Q")] == pytest.approx((0.5, 0.4))         # COND: the largest
    assert d.interconnect == pytest.approx({"u1/A": 0.02, "u1/B": 0.03})
    for bad in ["(DELAYFILE (CELL (INSTANCE x) (DELAY (ABSOLUTE (IOPATH A Y)))))",
                "(DELAYFILE (CELL (INSTANCE x) (DELAY (INCREMENT (IOPATH A Y (1)))))",
                "(DELAYFILE (TIMESCALE 3ns))", "(DELAYFILE (CELL", "(NOTSDF)"]:
        with pytest.raises(TimedSimError):
            read_sdf(bad)


def test_gated_clock_is_refused():
    class FakeSim:
        gated_clock = True
    with pytest.raises(TimedSimError, match="gated clock"):
        TimedSim(FakeSim(), read_sdf("(DELAYFILE)"), 10.0)


# -- the flow ----------------------------------------------------------------------------------
def test_sim_timed_in_the_flow():
    """``activity="sim-timed"``: the same netlist and timing as ``sim``, more energy (the
    glitches), the zero-delay figure beside it equal to activity ``sim``'s."""
    z = measure("int_mul", {"a_width": 6, "b_width": 6}, activity="sim", workload_cycles=300)
    t = measure("int_mul", {"a_width": 6, "b_width": 6}, activity="sim-timed",
                workload_cycles=300)
    assert t["netlist"] == z["netlist"] and t["crit_path_ns"] == z["crit_path_ns"]
    tm = t["sim"]["timed"]
    assert t["sim"]["simulator"] == "timed"
    assert tm["power_mw_zero_delay"]["total"] == pytest.approx(z["power_mw"]["total"],
                                                               rel=1e-9)
    assert t["power_mw"]["total"] > z["power_mw"]["total"]
    assert 0 < tm["glitch_share"] < 1
    assert tm["toggles_timed_over_zero_delay"] > 1
    assert t["energy_pj_per_op"] > z["energy_pj_per_op"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tcgen.cli", *args], capture_output=True,
                          text=True)


def test_sim_timed_cli_and_errors(tmp_path):
    out = tmp_path / "r.json"
    p = _cli("ppa", "lzc", "-p", "width=8", "--activity", "sim-timed", "--cycles", "100",
             "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "glitches" in p.stdout and "of dynamic power" in p.stdout
    r = json.loads(out.read_text())
    assert r["activity"] == "sim-timed" and "--activity sim-timed" in r["command"]
    for args, msg in [(["--simulator", "verilator"], "needs cell delays")]:
        p = _cli("ppa", "lzc", "-p", "width=8", "--activity", "sim-timed", *args)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and msg in p.stderr, p.stderr


def test_simulator_choice_timed():
    L = resolve("osu018")
    assert act.choose_simulator("auto", L, timed=True) == "timed"
    assert act.choose_simulator("levelized", L, timed=True) == "timed"
    assert act.choose_simulator("icarus", L, timed=True) == "icarus-sdf"
    with pytest.raises(FlowInputError, match="needs cell delays"):
        act.choose_simulator("verilator", L, timed=True)
    if shared_liberty_available():
        with pytest.raises(FlowInputError, match="specify"):
            act.choose_simulator("icarus", resolve("sky130hd"), timed=True)


def test_inertial_pulse_rejection():
    """IEEE 1364's default pulse limits: a pulse narrower than its trailing transition's path
    delay vanishes, and the transitions around it are compared in turn."""
    def run(times, delays):
        t = np.array([[times]], dtype=np.int64)
        d = np.array([[delays]], dtype=np.int64)
        f = np.ones_like(t, dtype=bool)
        kept = TimedSim._reject(f, t, d)[0, 0]
        return [int(x) for x in kept if x < (1 << 60)]
    assert run([500, 550, 1000], [500, 300, 100]) == [1000]     # 50 < 300: rejected
    assert run([1000, 2000, 2100, 5000], [100, 100, 500, 100]) == [1000, 5000]
    assert run([1000, 1200, 1300], [100, 500, 500]) == [1300]    # the pair, then 1300 alone
    assert run([1000, 1200], [100, 200]) == [1000, 1200]         # 200 wide, 200 delay: passes
    assert run([100, 150, 180, 400], [10, 100, 10, 10]) == [180, 400]   # 100-150 goes


@pytest.mark.parametrize("args, words", [
    (["--cycles", "0"], "--cycles: workload_cycles must be an integer in 16..1000000, got 0"),
    (["--cycles", "15"], "--cycles: workload_cycles must be an integer in 16..1000000, got 15"),
    (["--cycles", "abc"], "glitch_claims: argument --cycles: invalid int value: 'abc'"),
    (["--max-cells", "0"], "--jobs and --max-cells must be positive"),
    (["--claims", ","], "--claims names no claim"),
    (["--claims", "nope"], "no claim 'nope' in claims/"),
    (["--claims", "bmma-latency"], "bmma-latency is not an energy claim judged on a sweep"),
    (["--libs", "tsmc7"], "--libs takes osu018, nangate45, sky130hd"),
    (["--out", "/dev/null"], "--out: cannot write /dev/null: not a regular file"),
    (["--out", "."], "--out: cannot write .: that names a folder"),
])
def test_glitch_claims_bad_input_is_one_line_exit_2(tmp_path, args, words):
    """scripts/glitch_claims.py: bad arguments are one line on stderr, exit 2, nothing written
    (checked before any sweep runs; a device given as --out is never replaced by a file)."""
    import os
    import stat
    out = tmp_path / "g.md"
    script = Path(__file__).resolve().parent.parent / "scripts" / "glitch_claims.py"
    r = subprocess.run([sys.executable, str(script), "--out", str(out), *args],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr
    assert not out.exists()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and not os.path.exists("/dev/null.json")
