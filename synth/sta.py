"""OpenSTA timing and power on the mapped netlist.

Constraints: one clock of period ``clock_ns`` on the ``clk`` port (a virtual clock of the same
period for a combinational unit), input and output delays of 0 against it, ideal clock, no
output load beyond the library's wire-load model (if it declares a default one), ideal input
transitions.  So ``crit_path_ns = clock_ns - worst slack`` is the shortest clock period the
netlist meets: an input-to-output delay for a combinational unit, a register-to-register
(clock-to-Q + logic + setup) or port-to-register delay for a pipelined one.

Power (docs/ppa.md) in the 2019 OpenSTA (Debian ``opensta 0~20191111``; see docs/ppa.md):

- ``vectorless``: ``set_power_activity -global -activity R`` (R toggles per clock cycle on
  every non-clock pin; clock pins toggle twice per cycle), then ``report_power``.
- ``sim``: this build cannot read a VCD or SAIF and re-propagates its own probabilistic
  activities over every pin reachable from an input, overwriting per-pin annotations
  (``set_power_activity -pins`` is broken in its Tcl; ``sta::set_power_pin_activity`` values are
  overwritten).  Dynamic power in OpenSTA is, pin by pin, linear in that pin's activity
  (switching: ½·C·V²·a on each output; internal: the pin's internal-power arcs' energy · a).  So
  :func:`power_trace` has OpenSTA compute every pin's power at activity 1 (``sta::set_debug
  power 2`` prints each pin's figures) and the flow sums ``pin power × simulated toggle rate``
  — OpenSTA's own per-pin power model annotated with per-net activity from simulation.  The
  sum at uniform activity is checked against ``report_power``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .liberty import Liberty
from .tools import ToolError, run

__all__ = ["timing_and_power", "power_trace", "write_sdf", "StaError"]


class StaError(ToolError):
    """OpenSTA failed on the netlist."""


_POWER_LINE = re.compile(r"^Total\s+([-0-9.eE+]+)\s+([-0-9.eE+]+)\s+([-0-9.eE+]+)\s+"
                         r"([-0-9.eE+]+)")


def _preamble(lib: Liberty, netlist: Path, top: str, clock_ns: float, has_clk: bool) -> str:
    clk = ("create_clock -name clk -period {p} [get_ports clk]\n"
           "set tcgen_inputs [delete_from_list [all_inputs] [get_ports clk]]\n"
           if has_clk else
           "create_clock -name clk -period {p}\n"
           "set tcgen_inputs [all_inputs]\n").format(p=repr(float(clock_ns)))
    return (f"read_liberty {{{lib.path}}}\n"
            f"read_verilog {{{netlist}}}\n"
            f"link_design {top}\n"
            "set_cmd_units -time ns\n"
            + clk +
            "if {[llength $tcgen_inputs] > 0} { set_input_delay 0 -clock clk $tcgen_inputs }\n"
            "if {[llength [all_outputs]] > 0} { set_output_delay 0 -clock clk [all_outputs] }\n")


# The worst setup (max-delay) path of the clock's own path group ``clk``: register to
# register, input to register, register to output and input to output, as the constraints
# above define them.  OpenSTA puts a flip-flop's recovery and removal checks (its asynchronous
# set/reset pin against the clock) in a separate group, ``**async_default**``, and
# ``find_timing_paths -group_count 1`` returns one path *per group* in the order of the
# groups, async first: for a design with asynchronous resets its first path was the reset
# input's recovery check (~0.1-0.7 ns), not the logic.  ``-path_group clk`` keeps only the
# clock's group (the 2019 build supports it: tcl/Sta.tcl ``find_timing_paths_cmd``,
# search/PathGroup.cc ``PathGroups::pathGroup``).  Preset/clear arcs (RN -> Q) are not timed
# (``sta_preset_clear_arcs_enabled`` is off by default), so no path runs from a reset input
# through a flip-flop into the logic.  The async group's worst check is still printed, in
# the log and as TCGEN_ASYNC_SLACK, for information; it never sets the critical path.
_TIMING = r"""
set tcgen_paths [find_timing_paths -path_delay max -path_group clk -group_count 1 -endpoint_count 1]
if {[llength $tcgen_paths] == 0} {
  puts "TCGEN_NOPATH"
} else {
  set p [lindex $tcgen_paths 0]
  puts "TCGEN_SLACK [get_property $p slack]"
  set sp [get_property $p startpoint]
  set ep [get_property $p endpoint]
  puts "TCGEN_START [get_full_name $sp]"
  puts "TCGEN_END [get_full_name $ep]"
}
set tcgen_async [find_timing_paths -path_delay max -path_group {**async_default**} -group_count 1 -endpoint_count 1]
if {[llength $tcgen_async] > 0} {
  puts "TCGEN_ASYNC_SLACK [get_property [lindex $tcgen_async 0] slack]"
}
report_checks -path_delay max -path_group clk -digits 4
"""


@dataclass
class Timing:
    crit_path_ns: float | None
    slack_ns: float | None
    startpoint: str | None
    endpoint: str | None


def _parse_power(out: str, tag: str) -> dict:
    seen = False
    for line in out.splitlines():
        if line.strip() == f"TCGEN_POWER {tag}":
            seen = True
            continue
        if seen:
            m = _POWER_LINE.match(line.strip())
            if m:
                internal, switching, leakage, total = (float(m.group(i)) for i in range(1, 5))
                return {"internal": internal * 1e3, "switching": switching * 1e3,
                        "leakage": leakage * 1e3, "total": total * 1e3}
    raise StaError(f"OpenSTA printed no power report ({tag})")


def _parse_timing(out: str, clock_ns: float) -> Timing:
    vals = {}
    for line in out.splitlines():
        m = re.match(r"^TCGEN_(\w+)\s*(.*)$", line.strip())
        if m:
            vals[m.group(1)] = m.group(2).strip()
    if "NOPATH" in vals or "SLACK" not in vals:
        return Timing(None, None, None, None)
    slack = float(vals["SLACK"])
    return Timing(crit_path_ns=round(clock_ns - slack, 6), slack_ns=round(slack, 6),
                  startpoint=vals.get("START"), endpoint=vals.get("END"))


def _sta(script: str, workdir: Path, name: str) -> str:
    path = workdir / f"{name}.tcl"
    path.write_text(script + "exit\n")
    log = workdir / f"{name}.log"
    out = run("sta", ["-no_init", "-no_splash", "-exit", path.name], cwd=workdir, log=log,
              what=f"({name}.tcl)")
    errors = [ln for ln in out.splitlines() if ln.startswith("Error")]
    if errors:
        raise StaError(f"OpenSTA: {errors[0][:300]} (log: {log})")
    return out


def timing_and_power(lib: Liberty, netlist: Path, top: str, clock_ns: float, has_clk: bool,
                     workdir: Path, toggle_rate: float | None = None,
                     input_activity: dict | None = None) -> tuple[Timing, dict | None,
                                                                  dict | None]:
    """Timing; power at a global toggle rate (vectorless) if ``toggle_rate`` is given; power
    with OpenSTA's own propagation from per-input-port (activity, duty) if ``input_activity``
    is given (port bit name -> (toggles per cycle, duty)); ``None`` for it where OpenSTA
    crashes propagating (a bug of the 2019 build, below: ``sta_crashed.log`` is kept)."""
    script = _preamble(lib, netlist, top, clock_ns, has_clk) + _TIMING
    if input_activity is not None:
        script += "set_power_activity -input -activity 0 -duty 0.5\n"
        for port, (act, duty) in sorted(input_activity.items()):
            script += (f"set_power_activity -input_ports [get_ports {{{port}}}] "
                       f"-activity {act!r} -duty {duty!r}\n")
        script += "puts \"TCGEN_POWER propagated\"\nreport_power -digits 8\n"
    if toggle_rate is not None:
        script += (f"set_power_activity -global -activity {float(toggle_rate)!r} -duty 0.5\n"
                   "puts \"TCGEN_POWER global\"\nreport_power -digits 8\n")
    try:
        out = _sta(script, workdir, "sta")
    except StaError:
        raise
    except ToolError:
        log = workdir / "sta.log"
        if input_activity is None or toggle_rate is not None or not log.is_file() \
                or "TCGEN_POWER propagated" not in log.read_text(errors="replace"):
            raise
        # Debian's OpenSTA 2.0.17 (2019) dies (SIGSEGV) in report_power's propagation of
        # input activities on some netlists (octet_sparse's, hierarchical or flattened; the
        # same netlist's global-activity report runs): the timing again without it, and no
        # propagated figure -- the caller takes the leakage from the global report
        log.rename(workdir / "sta_crashed.log")
        out = _sta(_preamble(lib, netlist, top, clock_ns, has_clk) + _TIMING, workdir, "sta")
        return _parse_timing(out, clock_ns), None, None
    timing = _parse_timing(out, clock_ns)
    vec = _parse_power(out, "global") if toggle_rate is not None else None
    prop = _parse_power(out, "propagated") if input_activity is not None else None
    return timing, vec, prop


# -- per-pin power at activity 1 ----------------------------------------------------------------
_PIN_HEAD = re.compile(r"^power: internal (\S+) \((\S+)\)\s*$")
_ARC = re.compile(r"^power:\s+(\S+) -> (\S+)\s+(.*?)\s*([-0-9.eE+]+)\s+([-0-9.eE+]+)\s+"
                  r"([-0-9.eE+]+)\s+([-0-9.eE+]+)\s+(no pg_pin|\S+)\s*$")
_SWITCH = re.compile(r"^power: switching (\S+)/(\S+) activity = ([-0-9.eE+]+) volt = "
                     r"([-0-9.eE+]+) ([-0-9.eE+]+)\s*$")


def power_trace(lib: Liberty, netlist: Path, top: str, clock_ns: float, has_clk: bool,
                workdir: Path) -> tuple[dict, dict]:
    """Per-pin power (W) that OpenSTA computes at a global activity of 1 toggle per cycle.

    Returns ``(pins, report)``: pins maps ``"inst/PIN"`` to ``{"internal": W, "switching": W}``
    (clock pins at OpenSTA's fixed 2 toggles per cycle), report is ``report_power`` at the same
    activity (W, for the consistency check)."""
    script = (_preamble(lib, netlist, top, clock_ns, has_clk)
              + "set_power_activity -global -activity 1.0 -duty 0.5\n"
              + "puts \"TCGEN_POWER global\"\nreport_power -digits 8\n"
              + "sta::set_debug power 2\nputs \"TCGEN_TRACE\"\nreport_power -digits 8\n"
              + "sta::set_debug power 0\n")
    out = _sta(script, workdir, "sta_trace")
    report = _parse_power(out, "global")
    pins: dict[str, dict] = {}
    trace = out.split("TCGEN_TRACE", 1)[1]
    cur = None
    groups: dict[str, list[float]] = {}
    next_switch = None            # (port, W): printed just before that output's "internal" line

    def flush():
        if cur is not None and groups:
            # this build sums every arc's (rise + fall) power of the pin (checked against
            # report_power by the caller; later OpenSTA versions average the arcs instead)
            val = sum(sum(v) for v in groups.values())
            pins.setdefault(cur, {"internal": 0.0, "switching": 0.0})["internal"] += val

    for line in trace.splitlines():
        line = line.rstrip()
        m = _PIN_HEAD.match(line)
        if m:
            flush()
            cur, groups = m.group(1), {}
            pins.setdefault(cur, {"internal": 0.0, "switching": 0.0})
            if next_switch is not None:
                port, watts = next_switch
                if cur.rsplit("/", 1)[-1] != port:
                    raise StaError(f"OpenSTA power trace: switching power of port {port} is "
                                   f"followed by pin {cur}")
                pins[cur]["switching"] += watts
                next_switch = None
            continue
        m = _ARC.match(line)
        if m and cur is not None:
            groups.setdefault(m.group(8), []).append(float(m.group(7)))
            continue
        m = _SWITCH.match(line)
        if m:
            flush()
            cur, groups = None, {}
            next_switch = (m.group(2), float(m.group(5)))
            continue
        if line.startswith("power: internal") or line.startswith("power: switching"):
            raise StaError(f"cannot read OpenSTA power trace line {line!r}")
    flush()
    return pins, report


# -- delays for the timed simulation ----------------------------------------------------------
def write_sdf(lib: Liberty, netlist: Path, top: str, clock_ns: float, has_clk: bool,
              workdir: Path) -> Path:
    """The netlist's cell delays as OpenSTA computes them under the flow's constraints (the
    same preamble as :func:`timing_and_power`: ideal input transitions, the library's wire
    load), written as SDF (``write_sdf``, 6 digits): ``workdir/netlist.sdf``.  What
    :mod:`tcgen.synth.timedsim` and the Icarus timed reference run on."""
    out = Path(workdir) / "netlist.sdf"
    script = (_preamble(lib, netlist, top, clock_ns, has_clk)
              + f"write_sdf -digits 6 -no_timestamp -no_version {{{out.name}}}\n")
    _sta(script, Path(workdir), "sta_sdf")
    if not out.is_file():
        raise StaError(f"OpenSTA wrote no SDF (log: {Path(workdir) / 'sta_sdf.log'})")
    return out
