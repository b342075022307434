"""Per-stage timing of a feed-forward pipeline's mapped netlist (docs/pipelining.md).

    from tcgen.synth.stages import stage_timing
    t = stage_timing(text, "fp_mul", liberty="osu018", clock_ns=3.0)
    t["banks"]      # one entry per register depth 1, 2, ...: bits, worst path, its logic delay
    t["outputs"]    # the same for the output ports

The flow knows nothing of cut points: it sorts the netlist's flip-flops into **banks** by
*register depth* -- a flip-flop whose data cone starts at the input ports is at depth 1, one
whose cone reaches back to depth-k flip-flops (and nothing deeper) is at depth k + 1 -- so in a
pipeline built with every cut enabled, bank k is the k-th cut in datapath order.  Then one
OpenSTA run reports the worst path to every endpoint (``find_timing_paths -endpoint_count 1
-unique_paths_to_endpoint``), and each bank gets its worst figures:

* ``period_ns``: clock - worst slack (launch + logic + setup: the shortest period it meets),
* ``logic_ns``: the worst arrival minus its launch (clock-to-Q of the launching flip-flop,
  0 from an input port): the combinational delay of the stage,
* ``launch_ns`` / ``setup_ns`` of that path, and ``bits`` (the bank's flip-flops).

The synthesis is the PPA flow's own (:func:`tcgen.synth.ppa.synthesized`, same cache, same key:
a stage timing and a ``measure_verilog`` of the same text, top, liberty and clock share one
Yosys run).  The application layer (:mod:`tcgen.pipelining`) turns the banks into a choice of
cuts.  A flip-flop on a feedback loop has no depth: :class:`~tcgen.synth.tools.FlowInputError`.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from . import activity as act
from . import sta
from .liberty import BUILD, resolve
from .ppa import check_options, synthesized
from .tools import FlowInputError
from .yosys import module_names

__all__ = ["stage_timing", "register_depths"]

_EP = re.compile(r"^TCGEN_EP (\S+) (\S+) (\S+) (\S+)$")

_SCRIPT = r"""
set tcgen_paths [find_timing_paths -path_delay max -group_count 10000000 -endpoint_count 1 \
    -unique_paths_to_endpoint]
foreach p $tcgen_paths {
  set pts [get_property $p points]
  set first [get_full_name [get_property [lindex $pts 0] pin]]
  set launch 0.0
  if {[string first "/" $first] >= 0} { set launch [get_property [lindex $pts 0] arrival] }
  set arr [get_property [lindex $pts end] arrival]
  puts "TCGEN_EP [get_full_name [get_property $p endpoint]] [get_property $p slack] $arr $launch"
}
"""


def register_depths(nl: act.Netlist, lib) -> dict[str, int]:
    """Flip-flop instance -> register depth (1 = fed from the input ports only), and the key
    ``"<outputs>"`` -> the deepest bank the output ports are fed from.  A flip-flop fed by
    constants only has depth 1.  FlowInputError on a feedback loop or a latch."""
    driver: dict[str, tuple] = {}      # net -> ("in",) | ("ff", inst) | ("comb", inst)
    cell_inputs: dict[str, list] = {}  # combinational instance -> its input nets
    alias = dict(nl.assigns)
    for name in nl.port_bits("input"):
        driver[name] = ("in",)
    ffs: dict[str, list] = {}
    for inst, (cell, conns) in nl.instances.items():
        c = lib.cells.get(cell)
        if c is None:
            raise FlowInputError(f"stage timing: cell {cell} of {inst} is not in the liberty")
        if c.latch is not None:
            raise FlowInputError(f"stage timing: {inst} is a latch ({cell}); stage timing "
                                 f"covers flip-flop pipelines")
        outs = {p.name for p in c.outputs}
        for pin, net in conns.items():
            if pin in outs:
                driver[net] = ("ff", inst) if c.ff is not None else ("comb", inst)
        if c.ff is not None:
            ffs[inst] = [conns[p.name] for p in c.inputs if not p.clock and p.name in conns]
        else:
            cell_inputs[inst] = [conns[p.name] for p in c.inputs if p.name in conns]
    depth: dict = {}
    net_level: dict = {}

    def level_of(net: str) -> int:
        """The deepest bank feeding ``net`` (0: input ports or constants only), iteratively."""
        stack = [net]
        while stack:
            n = stack[-1]
            if n in net_level:
                stack.pop()
                continue
            n2 = alias.get(n, n)
            d = driver.get(n2)
            if n2 != n:
                if n2 in net_level:
                    net_level[n] = net_level[n2]
                    stack.pop()
                else:
                    stack.append(n2)
                continue
            if d is None or d[0] == "in":            # a port or a constant
                net_level[n] = 0
                stack.pop()
            elif d[0] == "ff":
                if d[1] in depth:
                    net_level[n] = depth[d[1]]
                    stack.pop()
                else:
                    raise _Pending(d[1])
            else:
                ins = cell_inputs[d[1]]
                todo = [i for i in ins if i not in net_level]
                if todo:
                    stack.extend(todo)
                else:
                    net_level[n] = max((net_level[i] for i in ins), default=0)
                    stack.pop()
        return net_level[net]

    for start in sorted(ffs):
        chain = [start]                  # flip-flops waiting for a deeper one's depth
        while chain:
            ff = chain[-1]
            if ff in depth:
                chain.pop()
                continue
            try:
                depth[ff] = 1 + max((level_of(n) for n in ffs[ff]), default=0)
                chain.pop()
            except _Pending as p:
                if p.inst in chain:
                    raise FlowInputError(f"stage timing: flip-flop {p.inst} is on a feedback "
                                         f"loop; stage timing covers feed-forward pipelines"
                                         ) from None
                chain.append(p.inst)
    out = dict(depth)
    out["<outputs>"] = max((level_of(b) for b in nl.port_bits("output")), default=0)
    return out


class _Pending(Exception):
    def __init__(self, inst):
        super().__init__(inst)
        self.inst = inst


def stage_timing(verilog_text: str, top: str, *, liberty="osu018", clock_ns=10.0,
                 cache=True, fraig_conflicts=None) -> dict:
    """Worst timing per register bank of ``top`` (module doc).  Returns ``crit_path_ns``,
    ``area_um2``, ``registers`` (flip-flops), ``banks`` (depth 1.. in order: ``depth``, ``bits``,
    ``period_ns``, ``logic_ns``, ``launch_ns``, ``setup_ns``, ``endpoint``), ``outputs`` (the
    same for the output ports, ``depth`` = the bank they are fed from), ``runtime_s``.
    ``fraig_conflicts``: ABC's SAT-sweeping limit of the synthesis (synth.ppa)."""
    t0 = time.monotonic()
    clock_ns, *_ = check_options(clock_ns, "vectorless", 0.1, 2000, 0)
    lib = resolve(liberty)
    if not isinstance(verilog_text, str) or top not in module_names(verilog_text):
        raise FlowInputError(f"stage timing: top module {top!r} is not in the Verilog")
    syn, _ = synthesized(verilog_text, top, lib, clock_ns, cache=cache,
                         fraig_conflicts=fraig_conflicts)
    nl = act.read_netlist(syn.netlist, top)
    depths = register_depths(nl, lib)
    has_clk = "clk" in nl.ports and nl.ports["clk"][0] == "input"
    work = BUILD / "runs" / f"stages-{Path(syn.netlist).parent.name}-{int(clock_ns * 1000)}"
    work.mkdir(parents=True, exist_ok=True)
    out = sta._sta(sta._preamble(lib, syn.netlist, top, clock_ns, has_clk) + _SCRIPT, work,
                   "stages")
    banks: dict = {}
    n_banks = max((d for k, d in depths.items() if k != "<outputs>"), default=0)
    for k in range(1, n_banks + 1):
        banks[k] = {"depth": k, "bits": sum(1 for i, d in depths.items()
                                            if d == k and i != "<outputs>"),
                    "period_ns": None}
    outs = {"depth": depths["<outputs>"], "bits": len(nl.port_bits("output")),
            "period_ns": None}
    crit = None
    for line in out.splitlines():
        m = _EP.match(line.strip())
        if not m:
            continue
        ep, slack, arr, launch = m.group(1), float(m.group(2)), float(m.group(3)), \
            float(m.group(4))
        inst = ep.rsplit("/", 1)[0] if "/" in ep else None
        group = banks.get(depths.get(inst)) if inst is not None else outs
        if group is None:                       # e.g. a clock-gate pin: not a data endpoint
            continue
        period = clock_ns - slack
        crit = period if crit is None else max(crit, period)
        logic = arr - launch
        if group["period_ns"] is None or period > group["period_ns"]:
            group.update(period_ns=round(period, 6), endpoint=ep,
                         launch_ns=round(launch, 6), setup_ns=round(period - arr, 6))
        group["logic_ns"] = round(max(group.get("logic_ns", 0.0), logic), 6)
    return {"crit_path_ns": None if crit is None else round(crit, 6),
            "area_um2": syn.area_um2, "registers": sum(b["bits"] for b in banks.values()),
            "banks": [banks[k] for k in sorted(banks)], "outputs": outs,
            "clock_ns": clock_ns, "liberty": lib.name,
            "runtime_s": round(time.monotonic() - t0, 3)}
