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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .liberty import Liberty, write_atomic
from .tools import FlowInputError, ToolError, run

__all__ = ["Netlist", "read_netlist", "simulate", "toggle_rates", "net_key", "scalarize_ports"]

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


def read_netlist(path: Path, top: str) -> Netlist:
    text = path.read_text()
    mods = re.findall(r"^module\s+\\?(\S+?)\s*\(", text, flags=re.M)
    if mods != [top]:
        raise ToolError(f"netlist {path} should hold exactly module {top}, holds {mods}")
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
            conns[pm.group(1)] = f"1'b{c.group(1)}" if c else net_key(expr)
        instances[inst.lstrip("\\")] = (cell.lstrip("\\"), conns)
    assigns = []
    for lhs, rhs in re.findall(r"^\s*assign\s+(.+?)\s*=\s*(.+?)\s*;", text, flags=re.M):
        c = _CONST.match(rhs)
        assigns.append((net_key(lhs), f"1'b{c.group(1)}" if c else net_key(rhs)))
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


def simulate(netlist: Netlist, netlist_file: Path, lib: Liberty, models: tuple[Path, ...],
             workload: dict, workdir: Path, n: int, scalarize: bool = True) -> Path:
    """Run the workload through the netlist; return the VCD path."""
    inputs = {k: v for k, v in netlist.ports.items() if v[0] == "input"}
    has_clk, has_rst = "clk" in inputs, "rst" in inputs
    data_in = {k: v for k, v in inputs.items() if k not in ("clk", "rst")}
    missing = sorted(set(data_in) - set(workload))
    extra = sorted(set(workload) - set(data_in))
    if missing or extra:
        raise FlowInputError("workload does not match the netlist inputs: "
                         + (f"missing {', '.join(missing)}" if missing else "")
                         + ("; " if missing and extra else "")
                         + (f"unknown {', '.join(extra)}" if extra else ""))
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
            if vals.shape != (n,):
                raise FlowInputError(f"workload port {name}: expected {n} values, got shape "
                                 f"{vals.shape}")
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
        tb.append(f"  always #{PERIOD // 2} clk = ~clk;")
    tb += [
        "  initial begin",
        *reads,
        '    $dumpfile("activity.vcd");',
        "    $dumpvars(1, dut);",
        "    tcgen_i = 0;",
        "    " + " ".join(apply_),
        f"    #{PERIOD * WARMUP};",
    ]
    if has_rst:
        tb.append("    rst = 1'b0;")
    tb += [
        f"    for (tcgen_i = 1; tcgen_i < {n}; tcgen_i = tcgen_i + 1) begin",
        f"      #{PERIOD}; " + " ".join(apply_),
        "    end",
        f"    #{PERIOD};",
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


def toggle_rates(vcd: Path, n: int, scope: str = "tcgen_tb.dut") -> dict[str, tuple[float, float]]:
    """{net bit: (toggles per cycle, duty)} over the window [WARMUP, WARMUP + n) cycles."""
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
    t0, t1 = PERIOD * WARMUP * per_ns, PERIOD * (WARMUP + n) * per_ns
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
