"""Verilog emission: an Amaranth component -> deterministic, lint-clean, synthesizable Verilog.

Amaranth's RTLIL leaves operand widths implicit (``a + b`` into a wider result, ``x == 0``
with an empty right operand).  Yosys' ``write_verilog`` then prints expressions that are legal
Verilog but that Verilator's default ``WIDTH`` lint rejects.  :func:`normalize_rtlil` makes every
operand of arithmetic, bitwise and comparison cells exactly as wide as the operation (explicit
zero or sign extension), rewrites a multi-bit ``$logic_not`` as ``== 0``, and computes a right
shift whose result is narrower than its operand (a variable bit/word select) at the operand's
width and takes the low bits; the logic is unchanged.  (A variably indexed *assignment* becomes
a ``switch`` over the index's values: give the index exactly the bits of the array's range, or
Verilator's CASEINCOMPLETE lint fires on the ``casez``.)  Source locations are not emitted, so the text holds no machine paths.

Identical sub-components are emitted once (:mod:`tcgen.hw.dedup`): by default
:func:`component_verilog` elaborates the top in *dedup* mode, where every component a datapath
adds with :func:`tcgen.hw.dedup.shared` becomes an instance of one module per distinct
configuration; the file holds the top, then each distinct module once (sorted by name).
``flat=True`` elaborates every instance as its own Amaranth submodule, as before.
"""
from __future__ import annotations

import re

from amaranth.back import rtlil
from amaranth.back.verilog import _convert_rtlil_text

from . import dedup
from .params import ParamError

__all__ = ["component_verilog", "normalize_rtlil", "check_module_name", "VERILOG_KEYWORDS",
           "index_cases"]


def index_cases(m, sel, n: int):
    """``for v in index_cases(m, sel, n): ...`` -- the body runs inside ``m.Switch(sel)``'s
    case for each value 0 .. n - 1.  When ``sel`` can hold more than ``n`` values (a counter
    over 3 channels in 2 bits), the last value's case is the ``Default``: Yosys writes a
    ``casez`` without a default otherwise and Verilator's CASEINCOMPLETE lint fires (found at
    wino_conv C = 3).  The values n .. 2**len(sel) - 1 must be unreachable (a counter that
    wraps at n - 1); when n fills the range the Verilog is what plain ``m.Case`` gives."""
    full = n >= 1 << len(sel)
    with m.Switch(sel):
        for v in range(n):
            with (m.Case(v) if full or v < n - 1 else m.Default()):
                yield v


#: Reserved words of Verilog (IEEE 1364-2005) and SystemVerilog (IEEE 1800-2017): a module
#: named like one would only be legal as an escaped identifier (``\module``).
VERILOG_KEYWORDS = frozenset("""
accept_on alias always always_comb always_ff always_latch and assert assign assume automatic
before begin bind bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle
checker class clocking cmos config const constraint context continue cover covergroup
coverpoint cross deassign default defparam design disable dist do edge else end endcase
endchecker endclass endclocking endconfig endfunction endgenerate endgroup endinterface
endmodule endpackage endprimitive endprogram endproperty endsequence endspecify endtable
endtask enum event eventually expect export extends extern final first_match for force foreach
forever fork forkjoin function generate genvar global highz0 highz1 if iff ifnone ignore_bins
illegal_bins implements implies import incdir include initial inout input inside instance int
integer interconnect interface intersect join join_any join_none large let liblist library
local localparam logic longint macromodule matches medium modport module nand negedge nettype
new nexttime nmos nor noshowcancelled not notif0 notif1 null or output package packed
parameter pmos posedge primitive priority program property protected pull0 pull1 pulldown
pullup pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase randsequence rcmos real
realtime ref reg reject_on release repeat restrict return rnmos rpmos rtran rtranif0 rtranif1
s_always s_eventually s_nexttime s_until s_until_with scalared sequence shortint shortreal
showcancelled signed small soft solve specify specparam static string strong strong0 strong1
struct super supply0 supply1 sync_accept_on sync_reject_on table tagged task this throughout
time timeprecision timeunit tran tranif0 tranif1 tri tri0 tri1 triand trior trireg type
typedef union unique unique0 unsigned until until_with untyped use uwire var vectored virtual
void wait wait_order wand weak weak0 weak1 while wildcard wire with within wor xnor xor
""".split())
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_WIDEN_TO_Y = {"$add", "$sub", "$mul", "$and", "$or", "$xor", "$xnor", "$not", "$neg", "$pos"}
_COMPARE = {"$eq", "$ne", "$lt", "$le", "$gt", "$ge", "$eqx", "$nex"}
_SHIFTS = {"$shift", "$shiftx", "$shr", "$sshr"}
_TOKEN = re.compile(r"\{|\}|\d+'[01xzm-]*|[\\$][^\s\[\]{}]+(?:\s*\[\d+(?::\d+)?\])?")


def _chunks(sig: str) -> list[str]:
    return [t for t in _TOKEN.findall(sig) if t not in "{}"]


def _msb(sig: str, widths: dict[str, int]) -> str:
    first = _chunks(sig)[0]
    if "'" in first and first[0].isdigit():
        return "1'" + first.split("'", 1)[1][0]
    m = re.match(r"([\\$][^\s\[]+)\s*(?:\[(\d+)(?::(\d+))?\])?", first)
    name, hi = m.group(1), m.group(2)
    if hi is not None:
        return f"{name} [{hi}]"
    w = widths.get(name, 1)
    return name if w == 1 else f"{name} [{w - 1}]"


def _extend(sig: str, width: int, target: int, signed: bool, widths) -> str:
    if width >= target:
        return sig
    n = target - width
    if width == 0:
        return f"{target}'" + "0" * target
    if signed:
        ext = " ".join([_msb(sig, widths)] * n)
    else:
        ext = f"{n}'" + "0" * n
    return "{ " + ext + " " + sig + " }"


def normalize_rtlil(text: str) -> str:
    """Make operand widths explicit in every arithmetic/logic/compare cell and widen truncating
    shifts (see module doc)."""
    out: list[str] = []
    widths: dict[str, int] = {}
    serial = [0]                      # names of added wires: deterministic per call
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("module "):
            widths = {}
        if s.startswith("wire "):
            parts = s.split()
            w = int(parts[parts.index("width") + 1]) if "width" in parts else 1
            widths[parts[-1]] = w
        if s.startswith("cell "):
            block = [line]
            i += 1
            while lines[i].strip() != "end":
                block.append(lines[i])
                i += 1
            block.append(lines[i])
            out.extend(_fix_cell(block, widths, serial))
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out) + "\n"


def _widen_shift(block: list[str], serial) -> list[str]:
    """A shift whose result is narrower than its operand (``y = a >> s`` with y narrower: an
    Amaranth variable bit/word select) computes at the operand's width into a new wire, and
    y takes its low bits -- the same bits, without Verilator's WIDTHTRUNC."""
    indent = re.match(r"\s*", block[1]).group(0)
    outer = indent[:-2]
    params, conns = {}, {}
    for line in block[1:-1]:
        p = line.split(None, 2)
        (params if p[0] == "parameter" else conns)[p[1]] = p[2]
    aw, yw = int(params["\\A_WIDTH"]), int(params["\\Y_WIDTH"])
    serial[0] += 1
    wire = f"$tcgen_wide{serial[0]}"
    y = conns["\\Y"]
    params["\\Y_WIDTH"] = str(aw)
    conns["\\Y"] = wire
    return [f"{outer}wire width {aw} {wire}", block[0]] + \
        [f"{indent}parameter {k} {v}" for k, v in params.items()] + \
        [f"{indent}connect {k} {v}" for k, v in conns.items()] + \
        [block[-1], f"{outer}connect {y} {wire} [{yw - 1}:0]"]


def _fix_cell(block: list[str], widths, serial) -> list[str]:
    kind = block[0].split()[1]
    if kind in _SHIFTS:
        params = dict(line.split(None, 2)[1:] for line in block[1:-1]
                      if line.split(None, 1)[0] == "parameter")
        if int(params["\\A_WIDTH"]) > int(params["\\Y_WIDTH"]):
            return _widen_shift(block, serial)
        return block
    if kind not in _WIDEN_TO_Y | _COMPARE | {"$logic_not"}:
        return block
    indent = re.match(r"\s*", block[1]).group(0)
    params, conns = {}, {}
    for line in block[1:-1]:
        s = line.split(None, 2)
        if s[0] == "parameter":
            params[s[1]] = s[2]
        elif s[0] == "connect":
            conns[s[1]] = s[2]
    aw = int(params.get("\\A_WIDTH", 0))
    bw = int(params.get("\\B_WIDTH", 0))
    yw = int(params.get("\\Y_WIDTH", 0))
    signed = params.get("\\A_SIGNED", "0") == "1" and params.get("\\B_SIGNED", "0") == "1"
    if kind == "$logic_not":                    # !x on a vector: x == 0
        if aw <= 1:
            return block
        serial[0] += 1
        return _zero_test("$eq", block, params, conns, indent, serial[0])
    if kind in ("$eq", "$ne") and aw > 1 and re.fullmatch(r"\{\s*\}|\d+'0*", conns.get("\\B", "")):
        serial[0] += 1
        return _zero_test(kind, block, params, conns, indent, serial[0])
    if kind in _COMPARE:
        target = max(aw, bw, 1)
    else:
        target = yw
        if aw > yw or bw > yw:       # truncating op: leave as is (none are emitted today)
            return block
    unary = "\\B_WIDTH" not in params
    if "\\A" in conns and aw < target:
        a_sig = params.get("\\A_SIGNED", "0") == "1" and (unary or signed)
        conns["\\A"] = _extend(conns["\\A"], aw, target, a_sig, widths)
        params["\\A_WIDTH"] = str(target)
    if not unary and "\\B" in conns and bw < target:
        conns["\\B"] = _extend(conns["\\B"], bw, target, signed, widths)
        params["\\B_WIDTH"] = str(target)
    return [block[0]] + [f"{indent}parameter {k} {v}" for k, v in params.items()] + \
        [f"{indent}connect {k} {v}" for k, v in conns.items()] + [block[-1]]


def _zero_test(kind, block, params, conns, indent, serial) -> list[str]:
    """``x == 0`` -> ``~(|x)`` and ``x != 0`` -> ``|x`` (write_verilog prints ``!x`` otherwise)."""
    name = block[0].split()[2]
    a, y, aw = conns["\\A"], conns["\\Y"], params["\\A_WIDTH"]
    outer = indent[:-2]
    wire = f"$tcgen_any{serial}"

    def cell(kind, cname, width, a_sig, y_sig):
        return [f"{outer}cell {kind} {cname}", f"{indent}parameter \\A_SIGNED 0",
                f"{indent}parameter \\A_WIDTH {width}", f"{indent}parameter \\Y_WIDTH 1",
                f"{indent}connect \\A {a_sig}", f"{indent}connect \\Y {y_sig}", block[-1]]

    if kind == "$ne":
        return cell("$reduce_or", name, aw, a, y)
    return [f"{outer}wire {wire}"] + cell("$reduce_or", f"{name}_any", aw, a, wire) + \
        cell("$not", name, 1, wire, y)


def check_module_name(top) -> str:
    """``top`` if it can name a Verilog module as a plain identifier, else :class:`ParamError`
    (empty, not an identifier of ASCII letters, digits and ``_``, or a reserved word)."""
    if not isinstance(top, str) or not _IDENTIFIER.fullmatch(top):
        raise ParamError(f"generate: top must be a Verilog identifier (a letter or _, then "
                         f"letters, digits or _), got {top!r}")
    if top in VERILOG_KEYWORDS:
        raise ParamError(f"generate: top must not be a Verilog/SystemVerilog keyword, got "
                         f"{top!r}")
    return top


def component_verilog(component, top: str, comment: str = "", *, flat: bool = False) -> str:
    """Verilog text of any Amaranth component (the one path every generated file takes).

    ``flat=False`` (default): sub-components added through :func:`tcgen.hw.dedup.shared` are
    elaborated and emitted once per distinct module (named ``<top>__<Class>_<hash>``) and
    instantiated; ``flat=True``: every instance is elaborated in place (one Amaranth hierarchy).
    Both describe the same logic."""
    check_module_name(top)
    try:
        dedup.check_port_bits(component, top)
    except ParamError:
        component._MustUse__silence = True       # never elaborated: no warning about it
        raise
    if flat:
        texts = [rtlil.convert(component, name=top, emit_src=False)]
    else:
        with dedup.emission(top) as em:
            texts = [rtlil.convert(component, name=top, emit_src=False)]
        texts += [mod.rtlil for mod in em.modules()]
    text = normalize_rtlil("\n".join(texts))
    return comment + _convert_rtlil_text(text, strip_internal_attrs=True)
