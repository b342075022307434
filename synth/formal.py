"""Combinational equivalence proofs: a miter of two designs, proved by Yosys's SAT solver.

The one mechanism for formal equivalence in tcgen (docs/formal.md).  Like the rest of
``tcgen.synth`` it takes Verilog text and knows nothing of units: the caller brings two designs
with identical port lists -- a reference (*gold*) and an implementation (*gate*) -- and gets a
verdict::

    from tcgen.synth.formal import Design, prove_equivalent
    r = prove_equivalent(Design(ref_text, top="ref_mul", params={"AW": 8, "BW": 8}),
                         Design(rtl_text, top="int_mul"))
    r.status            # "proved" | "counterexample" | "timeout"
    r.inputs            # the counterexample's input values by port name (else None)

One Yosys run (through :func:`tcgen.synth.tools.run`, the one place tools are started)::

    read_verilog GOLD...               # each side in a design of its own, so that modules of
    chparam -set P V TOP               # the same name (a mutated copy of the RTL) never mix
    hierarchy -check -top TOP
    proc; flatten; memory; hierarchy -top TOP; opt_clean
    setundef -undriven -anyseq; setundef -anyseq
    rename TOP gold                    # (gate: the same, renamed gate)
    tee -o gold_ports.txt portlist gold
    tee -o gold_stat.txt stat gold
    select -assert-none <state cells>  # flip-flops, latches, memories: not combinational
    design -stash gold
    ...
    miter -equiv -flatten -make_assert -make_outputs gold gate miter
    sat -prove-asserts -show-inputs -show-outputs -timeout T miter

``miter -equiv`` builds a circuit that drives the two designs with the same inputs and asserts
that every output agrees; ``sat -prove-asserts`` asks MiniSat (built into Yosys) for an input
that violates the assertion.  None: the designs are equivalent for every input (a proof, not a
sample).  One: the counterexample, parsed from Yosys's table (inputs, and both designs'
outputs).  Undriven nets and ``x`` constants are made free variables of the problem
(``setundef -anyseq``; left alone, the solver would read them as whatever value makes the proof
go through), so a design is only proved equal if it is equal for every value they could take.

Errors: :class:`~tcgen.synth.tools.FlowInputError` for inputs that cannot make a proof (a
missing file or top module, port lists that differ, a design with state, a bad parameter or
top name); :class:`~tcgen.synth.tools.ToolError` when Yosys fails otherwise (a syntax error) or
runs past its process limit.  A solver that runs past ``timeout`` is a verdict:
``status == "timeout"``.
"""
from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence, Union

from .tools import FlowInputError, ToolError, run, versions
from .yosys import module_names

__all__ = ["Design", "EquivResult", "prove_equivalent", "prove_same_structure",
           "prove_from_reset", "prove_pipelined", "check_properties", "PropertyResult",
           "SOLVER", "METHOD", "METHOD_STRUCTURAL", "METHOD_INDUCTION", "METHOD_PIPELINE",
           "METHOD_BMC", "BMC_SOLVER"]

#: the SAT solver behind Yosys's ``sat`` command (compiled into Yosys; nothing to install)
SOLVER = "MiniSat (Yosys built-in sat)"
#: how a combinational proof is made
METHOD = "miter -equiv, sat -prove-asserts (combinational)"

#: sequential equivalence of two designs with the same state (deduplicated vs flat generation)
METHOD_STRUCTURAL = ("register correspondence: flip-flops everted (expose -evert-dff), miter "
                     "-equiv of outputs and next states, opt_merge -share_all (structural "
                     "hashing), sat -prove-asserts; equal initial values")
#: the same, when the registers do not correspond by name
METHOD_INDUCTION = ("miter -equiv -flatten, opt_merge -share_all (structural hashing), sat "
                    "-tempinduct (k-induction from the initial state)")
#: a pipelined design vs its combinational original
METHOD_PIPELINE = ("miter: the combinational side's outputs delayed L cycles; opt_merge "
                   "-share_all; sat -tempinduct (k-induction) from the initial state, under any "
                   "reset")
#: the bounded model checker of stream-protocol properties
METHOD_BMC = "yosys-smtbmc: bounded model check of the $assert cells under the $assume cells"
#: the solver yosys-smtbmc drives (Debian's z3; Debian's boolector 1.5 is too old for it)
BMC_SOLVER = "z3"

#: cell types that hold state (after proc/memory): a combinational proof refuses them
_STATE_CELLS = ("$*ff*", "$*dlatch*", "$sr", "$mem*", "$_*DFF*", "$_*LATCH*", "$_SR*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Yosys's extra seconds around the solver's ``timeout``: reading, elaboration, flattening
ELABORATION_S = 300.0

Source = Union[str, Path]


@dataclass(frozen=True)
class Design:
    """One side of a proof.

    Parameters
    ----------
    verilog : str, Path or a sequence of them
        Verilog text (a ``str``) or files (``Path``); several are read together.
    top : str, optional
        The top module; default: the only module of the sources.
    params : mapping, optional
        Parameter overrides of the top module (``chparam``), integer values.
    """
    verilog: Union[Source, Sequence[Source]]
    top: str | None = None
    params: Mapping[str, int] = field(default_factory=dict)

    def texts(self, side: str) -> list[str]:
        srcs = [self.verilog] if isinstance(self.verilog, (str, Path)) else list(self.verilog)
        if not srcs:
            raise FlowInputError(f"formal: the {side} design has no Verilog")
        out = []
        for s in srcs:
            if isinstance(s, Path):
                try:
                    out.append(s.read_text())
                except OSError as e:
                    raise FlowInputError(f"formal: cannot read the {side} Verilog {s}: "
                                         f"{e.strerror or e}") from None
            elif isinstance(s, str):
                out.append(s)
            else:
                raise FlowInputError(f"formal: the {side} Verilog must be text (str) or a file "
                                     f"(Path), got {type(s).__name__}")
        if not any(t.strip() for t in out):
            raise FlowInputError(f"formal: the {side} Verilog is empty")
        return out


@dataclass(frozen=True)
class EquivResult:
    """The verdict of :func:`prove_equivalent`.

    ``status``: ``proved`` (equal outputs for every input), ``counterexample`` (``inputs``
    drive the two designs to different outputs: ``gold_outputs`` vs ``gate_outputs``; for the
    sequential proofs the trace is not decoded -- it is in the log -- and these are None),
    ``unproven`` (a sequential proof found no difference but its induction did not close within
    ``depth`` steps) or ``timeout`` (the solver gave up after ``timeout_s``: nothing is known).
    ``depth``: the sequential proofs' induction length; ``unproven``: cells of the miter left
    after structural hashing (:func:`prove_same_structure`; 1: the designs merged entirely).
    ``cells``: Yosys's word-level cells of each side after flattening; ``variables``,
    ``clauses``: the size of the SAT problem; ``seconds``: wall time of the whole Yosys run.
    """
    status: str
    gold_top: str
    gate_top: str
    ports: tuple                       # ((direction, name, width), ...), sorted by name
    cells: dict
    seconds: float
    timeout_s: float
    variables: int | None = None
    clauses: int | None = None
    inputs: dict | None = None
    gold_outputs: dict | None = None
    gate_outputs: dict | None = None
    tool: str = ""
    solver: str = SOLVER
    method: str = METHOD
    log: str | None = None
    depth: int | None = None
    unproven: int | None = None

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    @property
    def mismatched(self) -> list[str]:
        """The outputs that differ in the counterexample."""
        if self.gold_outputs is None or self.gate_outputs is None:
            return []
        return sorted(k for k in self.gold_outputs if self.gold_outputs[k] !=
                      self.gate_outputs.get(k))

    def describe(self) -> str:
        """One line: the verdict, and the counterexample if there is one."""
        head = f"{self.gold_top} vs {self.gate_top}: {self.status} in {self.seconds:.2f} s"
        if self.status == "unproven":
            return f"{head}: no difference found, induction not closed in {self.depth} steps"
        if self.status != "counterexample" or self.inputs is None:
            return head + (f" (depth {self.depth})" if self.depth else "")
        ins = ", ".join(f"{k}={v:#x}" for k, v in sorted(self.inputs.items()))
        outs = ", ".join(f"{k}: gold {self.gold_outputs[k]:#x} gate {self.gate_outputs[k]:#x}"
                         for k in self.mismatched)
        return f"{head}: {ins} -> {outs}"

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["ports"] = [list(p) for p in self.ports]
        return d


def prove_equivalent(gold: Design, gate: Design, *, timeout: float = 600.0,
                     workdir: str | Path | None = None) -> EquivResult:
    """Prove that ``gold`` and ``gate`` compute the same outputs from the same inputs.

    Both must be combinational and have the same ports (names, directions, widths).
    ``timeout``: seconds for the SAT solver (``status == "timeout"`` past it); the Yosys
    process as a whole may take :data:`ELABORATION_S` more.  ``workdir``: where the sources,
    the script and the log are kept (default: a temporary folder, removed afterwards)."""
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise FlowInputError(f"formal: timeout must be a positive number of seconds, got "
                             f"{timeout!r}")
    sides = {"gold": gold, "gate": gate}
    texts = {side: d.texts(side) for side, d in sides.items()}
    tops = {side: _top(side, d, texts[side]) for side, d in sides.items()}
    for side, d in sides.items():
        _check_params(side, d.params)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="tcgen-formal-") as tmp:
            return _prove(sides, texts, tops, timeout, Path(tmp), keep_log=False)
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    return _prove(sides, texts, tops, timeout, work, keep_log=True)


def _top(side: str, d: Design, texts: list[str]) -> str:
    mods = [m for t in texts for m in module_names(t)]
    if d.top is None:
        if len(mods) != 1:
            raise FlowInputError(f"formal: the {side} Verilog has {len(mods)} modules "
                                 f"({', '.join(mods) or 'none'}); name its top")
        return mods[0]
    if not isinstance(d.top, str) or not _IDENT.fullmatch(d.top):
        raise FlowInputError(f"formal: the {side} top must be a plain Verilog identifier, "
                             f"got {d.top!r}")
    if d.top not in mods:
        raise FlowInputError(f"formal: the {side} Verilog has no module {d.top!r} (modules: "
                             f"{', '.join(mods) or 'none'})")
    return d.top


def _check_params(side: str, params: Mapping):
    for k, v in params.items():
        if not isinstance(k, str) or not _IDENT.fullmatch(k):
            raise FlowInputError(f"formal: {side} parameter names must be identifiers, got "
                                 f"{k!r}")
        if not isinstance(v, int):
            raise FlowInputError(f"formal: {side} parameter {k} must be an integer, got {v!r}")


def _side_script(side: str, files: list[Path], top: str, params: Mapping,
                 combinational: bool = True, evert: bool = False,
                 renames: Mapping[str, str] | None = None) -> list[str]:
    lines = ["read_verilog " + " ".join(f.name for f in files)]
    if params:
        sets = " ".join(f"-set {k} {int(v)}" for k, v in params.items())
        lines.append(f"chparam {sets} {top}")
    lines += [f"hierarchy -check -top {top}", "proc", "flatten", "memory",
              f"hierarchy -top {top}",               # drops the flattened submodules
              "opt_clean"]
    if evert:            # every flip-flop: its Q an input port, its D an output port
        lines += [f"rename \\{a} \\{b}" for a, b in sorted((renames or {}).items())]
        # opt_clean -purge: one name per net (flat-mode Verilog keeps a submodule port as a
        # second public name of a register, which expose would evert as a second register)
        lines += ["opt_clean -purge", "dffunmap",
                  f"tee -q -o {side}_init.txt dump w:* a:init %i",
                  "expose -evert-dff -sep : t:$dff", "opt_clean"]
    lines += [
              # undriven nets and x constants: free variables (else the solver reads them as
              # whatever makes the proof go through)
              "setundef -undriven -anyseq", "setundef -anyseq"]
    if top != side:
        lines.append(f"rename {top} {side}")
    lines += [f"tee -q -o {side}_ports.txt portlist {side}",
              f"tee -q -o {side}_stat.txt stat {side}"]
    if combinational:
        lines.append("select -assert-none " + " ".join(f"{side}/t:{t}" for t in _STATE_CELLS))
    lines.append(f"design -stash {side}")
    return lines


def _prove(sides, texts, tops, timeout, work: Path, keep_log: bool,
           evert: bool = False, renames: Mapping[str, str] | None = None) -> EquivResult:
    script = _write_sides(work, sides, texts, tops, combinational=True, evert=evert,
                          renames=renames)
    solver_s = max(1, int(round(timeout)))
    script += ["design -copy-from gold -as gold gold",
               "design -copy-from gate -as gate gate",
               "miter -equiv -flatten -make_assert -make_outputs gold gate miter",
               "hierarchy -top miter"]
    if evert:            # structural hashing: the logic both sides share merges into one
        script += ["opt -fast", "opt_merge -share_all", "opt -fast",
                   "tee -q -o miter_stat.txt stat miter"]
    script += [f"sat -prove-asserts -show-inputs -show-outputs -timeout {solver_s} miter"]
    (work / "miter.ys").write_text("\n".join(script) + "\n")
    log = work / "yosys.log"
    t0 = time.monotonic()
    try:
        out = run("yosys", ["-q", "-l", log.name, "miter.ys"], cwd=work, log=None,
                  timeout=solver_s + ELABORATION_S,
                  what=f"proving {tops['gold']} == {tops['gate']}")
    except ToolError as e:
        _explain_failure(work, tops)
        raise ToolError(f"{e}" + (f" (log: {log})" if keep_log else "")) from None
    seconds = time.monotonic() - t0
    text = log.read_text(errors="replace") if log.exists() else out
    ports = _check_ports(work, tops)
    cells = {side: _cell_count(work / f"{side}_stat.txt") for side in ("gold", "gate")}
    m = re.search(r"Solving problem with (\d+) variables and (\d+) clauses", text)
    common = dict(gold_top=tops["gold"], gate_top=tops["gate"], ports=ports, cells=cells,
                  seconds=round(seconds, 3), timeout_s=float(solver_s),
                  variables=int(m.group(1)) if m else None,
                  clauses=int(m.group(2)) if m else None, tool=versions().get("yosys", ""),
                  log=str(log) if keep_log else None)
    if "SAT proof finished - no model found: SUCCESS!" in text:
        return EquivResult(status="proved", **common)
    if "Interrupted SAT solver: TIMEOUT!" in text:
        return EquivResult(status="timeout", **common)
    if "SAT proof finished - model found: FAIL!" in text:
        ins, gold, gate = _counterexample(text, ports)
        return EquivResult(status="counterexample", inputs=ins, gold_outputs=gold,
                           gate_outputs=gate, **common)
    raise ToolError(f"yosys gave no verdict proving {tops['gold']} == {tops['gate']}"
                    + (f" (log: {log})" if keep_log else ""))


def _read_ports(path: Path) -> dict[str, tuple[str, int]] | None:
    """``portlist``'s output: {name: (direction, width)}."""
    if not path.exists():
        return None
    ports = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^(input|output|inout)\s+\[(\d+):(\d+)\]\s+\\?(\S+)$", line.strip())
        if m:
            ports[m.group(4)] = (m.group(1), abs(int(m.group(2)) - int(m.group(3))) + 1)
    return ports


def _port_diff(gold: dict, gate: dict) -> list[str]:
    def show(p):
        return f"{p[0]} [{p[1] - 1}:0]"
    diff = []
    for name in sorted(set(gold) | set(gate)):
        a, b = gold.get(name), gate.get(name)
        if a is None:
            diff.append(f"{name} only in gate ({show(b)})")
        elif b is None:
            diff.append(f"{name} only in gold ({show(a)})")
        elif a != b:
            diff.append(f"{name} is {show(a)} in gold, {show(b)} in gate")
    return diff


def _check_ports(work: Path, tops) -> tuple:
    gold, gate = (_read_ports(work / f"{s}_ports.txt") for s in ("gold", "gate"))
    if gold is None or gate is None:
        raise ToolError("formal: Yosys wrote no port list")
    diff = _port_diff(gold, gate)
    if diff:
        raise FlowInputError(f"formal: the ports of {tops['gold']} (gold) and {tops['gate']} "
                             f"(gate) differ: {'; '.join(diff)}")
    if not any(d == "output" for d, _ in gold.values()):
        raise FlowInputError(f"formal: {tops['gold']} has no outputs: nothing to prove")
    if any(d == "inout" for d, _ in gold.values()):
        raise FlowInputError(f"formal: {tops['gold']} has inout ports: combinational proofs "
                             f"take inputs and outputs only")
    return tuple(sorted((d, n, w) for n, (d, w) in gold.items()))


def _cell_count(path: Path) -> int | None:
    if not path.exists():
        return None
    m = re.search(r"Number of cells:\s+(\d+)", path.read_text())
    return int(m.group(1)) if m else None


def _state_cells(path: Path) -> list[str]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        m = re.match(r"^\s+(\$\S+)\s+(\d+)\s*$", line)
        if m and re.search(r"ff|dlatch|^\$sr$|^\$mem|DFF|LATCH|^\$_SR", m.group(1)):
            found.append(f"{m.group(2)} {m.group(1)}")
    return found


def _explain_failure(work: Path, tops):
    """After a failed run: a FlowInputError if the inputs were the reason (ports, state)."""
    gold, gate = (_read_ports(work / f"{s}_ports.txt") for s in ("gold", "gate"))
    if gold is not None and gate is not None:
        diff = _port_diff(gold, gate)
        if diff:
            raise FlowInputError(f"formal: the ports of {tops['gold']} (gold) and "
                                 f"{tops['gate']} (gate) differ: {'; '.join(diff)}")
    for side in ("gold", "gate"):
        state = _state_cells(work / f"{side}_stat.txt")
        if state:
            raise FlowInputError(f"formal: {tops[side]} ({side}) holds state "
                                 f"({', '.join(state)}): combinational proofs only")


def _counterexample(text: str, ports: tuple):
    """Inputs and both sides' outputs from ``sat -show-inputs -show-outputs``'s table."""
    values: dict[str, int] = {}
    table = text[text.rfind("Signal Name"):]
    for line in table.splitlines()[2:]:
        if not line.strip():
            break
        m = re.match(r"^\s+\\?(\S+)\s+.*?([01xX?-]+)\s*$", line)
        if m:
            name = m.group(1).replace("\\$", "$")      # Yosys prints a port's `$` as `\$`
            bits = re.sub(r"[xX?-]", "0", m.group(2))     # undefined bits: none without undef
            values[name] = int(bits, 2)
    names = {n for _, n, _ in ports}
    ins = {n: values[f"in_{n}"] for d, n, _ in ports if d == "input" and f"in_{n}" in values}
    gold = {n: values[f"gold_{n}"] for d, n, _ in ports if d == "output"
            and f"gold_{n}" in values}
    gate = {n: values[f"gate_{n}"] for d, n, _ in ports if d == "output"
            and f"gate_{n}" in values}
    want_in = {n for d, n, _ in ports if d == "input"}
    if set(ins) != want_in or not gold or set(gold) != set(gate) or not names:
        raise ToolError("formal: could not read the counterexample from Yosys's output")
    return ins, gold, gate


# -- sequential proofs ----------------------------------------------------------------------------
def _prepare(sides: Mapping[str, Design], timeout, workdir):
    """Checked texts and tops of each side, the solver's seconds, and a work folder context."""
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise FlowInputError(f"formal: timeout must be a positive number of seconds, got "
                             f"{timeout!r}")
    texts = {side: d.texts(side) for side, d in sides.items()}
    tops = {side: _top(side, d, texts[side]) for side, d in sides.items()}
    for side, d in sides.items():
        _check_params(side, d.params)
    return texts, tops, max(1, int(round(timeout)))


def _workdir(workdir):
    if workdir is None:
        return tempfile.TemporaryDirectory(prefix="tcgen-formal-"), False
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    return _Keep(work), True


class _Keep:
    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        return str(self.path)

    def __exit__(self, *exc):
        return False


def _write_sides(work: Path, sides, texts, tops, combinational: bool, evert: bool = False,
                 renames: Mapping[str, str] | None = None) -> list[str]:
    """Each side's sources written to ``work`` and its part of the Yosys script (``renames``:
    of the gate side's registers, see :func:`_pair_registers`)."""
    script = []
    for side in sides:
        files = []
        for i, text in enumerate(texts[side]):
            f = work / f"{side}_{i}.v"
            f.write_text(text)
            files.append(f)
        (work / f"{side}_ports.txt").unlink(missing_ok=True)
        (work / f"{side}_stat.txt").unlink(missing_ok=True)
        script += _side_script(side, files, tops[side], sides[side].params, combinational,
                               evert=evert, renames=renames if side == "gate" else None)
    return script


def _yosys(script: list[str], work: Path, name: str, seconds: float, what: str,
           keep_log: bool) -> tuple[str | None, float]:
    """Run a Yosys script; (log text, wall seconds); log None if the process ran out of time."""
    (work / f"{name}.ys").write_text("\n".join(script) + "\n")
    log = work / f"{name}.log"
    t0 = time.monotonic()
    try:
        run("yosys", ["-q", "-l", log.name, f"{name}.ys"], cwd=work, log=None, timeout=seconds,
            what=what)
    except ToolError as e:
        if "timed out" in str(e):
            return None, time.monotonic() - t0
        raise ToolError(f"{e}" + (f" (log: {log})" if keep_log else "")) from None
    return log.read_text(errors="replace"), time.monotonic() - t0


def prove_same_structure(gold: Design, gate: Design, *, depth: int | None = 8,
                         timeout: float = 600.0,
                         workdir: str | Path | None = None) -> EquivResult:
    """Prove that two designs whose registers correspond by name -- the deduplicated and the
    flat Verilog of one array -- give the same outputs in every cycle, for every input
    sequence, from their initial state.

    Register correspondence (van Eijk): each design's flip-flops are everted (``dffunmap;
    expose -evert-dff -sep :``: a register's Q becomes an input port ``<name>:q``, its D an
    output ``<name>:d``; not ``.``: Amaranth names wires ``<reg>.d`` itself), so that the
    registers of equal names are driven by one free variable in the miter, and the combinational proof of :func:`prove_equivalent` shows that every output *and
    every next state* agrees for every input and every (common) state; the miter is first
    structurally hashed (``opt_merge -share_all``: logic the two designs share merges, so two
    copies of one structure leave nothing for the solver).  With equal initial values (checked
    register by register from the ``init`` attributes), induction over the cycles gives the
    claim.  Registers that do not correspond by name (different port lists after everting) or
    differ in their initial value are a :class:`FlowInputError` naming them: the method does
    not apply -- unless ``depth`` is given (default 8): then registers that do not correspond
    are handled by k-induction instead (the miter of the two designs, structurally hashed,
    ``sat -tempinduct`` from the initial state with at most ``depth`` steps; ``method`` says
    which way the proof went, ``unproven`` status if the induction does not close).
    ``status``: as :func:`prove_equivalent` (a counterexample of the correspondence proof is
    one cycle: inputs and register values, ``<name>:q``, that make an output or a next state
    differ)."""
    sides = {"gold": gold, "gate": gate}
    texts, tops, _ = _prepare(sides, timeout, workdir)
    tmp, keep = _workdir(workdir)
    with tmp as w:
        work = Path(w)
        try:
            try:
                r = _prove(sides, texts, tops, timeout, work, keep_log=keep, evert=True)
            except FlowInputError as e:
                renames = _pair_registers(work) if "ports of" in str(e) else None
                if not renames:
                    raise
                # registers named apart only by Amaranth's numbering ($12 vs $1136): paired
                # in order (any pairing is sound: a wrong one can only fail the proof)
                r = _prove(sides, texts, tops, timeout, work, keep_log=keep, evert=True,
                           renames=renames)
        except FlowInputError as e:
            if "ports of" not in str(e) or depth is None:
                raise
            # the registers do not correspond by name (e.g. four 32-bit registers on one side,
            # one 128-bit register on the other): k-induction on the hashed miter instead
            return _prove_by_induction(sides, texts, tops, depth, _prepare(sides, timeout,
                                                                           None)[2], work, keep)
        inits = {side: _read_inits(work / f"{side}_init.txt") for side in ("gold", "gate")}
        diff = sorted(n for n in set(inits["gold"]) | set(inits["gate"])
                      if inits["gold"].get(n) != inits["gate"].get(n))
        if diff:
            raise FlowInputError(f"formal: the initial values of {tops['gold']} (gold) and "
                                 f"{tops['gate']} (gate) differ: " + "; ".join(
                                     f"{n}: {inits['gold'].get(n)} vs {inits['gate'].get(n)}"
                                     for n in diff[:8]))
        return dataclasses.replace(r, method=METHOD_STRUCTURAL, depth=1,
                                   unproven=_cell_count(work / "miter_stat.txt"))


def prove_from_reset(gold: Design, gate: Design, *, depth: int = 8, timeout: float = 600.0,
                     workdir: str | Path | None = None) -> EquivResult:
    """Prove that two clocked designs with the same ports give the same outputs in every
    cycle, for every input sequence (resets included), from their initial state -- without
    any correspondence between their registers: k-induction (``sat -tempinduct``, at most
    ``depth`` steps) on the miter of the two, structurally hashed first.  Registers without
    an ``init`` value start at zero.  ``status``: ``proved``; ``counterexample`` (the outputs
    differ within ``depth`` cycles of the initial state); ``unproven`` (no difference within
    ``depth`` cycles, but the induction did not close: a bounded result); ``timeout``.
    ``method`` is :data:`METHOD_INDUCTION`."""
    sides = {"gold": gold, "gate": gate}
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise FlowInputError(f"formal: depth must be a positive number of steps, got "
                             f"{depth!r}")
    texts, tops, solver_s = _prepare(sides, timeout, workdir)
    tmp, keep = _workdir(workdir)
    with tmp as w:
        return _prove_by_induction(sides, texts, tops, depth, solver_s, Path(w), keep)


def _pair_registers(work: Path) -> dict[str, str] | None:
    """After a correspondence attempt whose everted port lists differ: {gate register: gold
    register} pairing the unmatched registers whose names differ only in ``$<number>`` parts
    (same width, taken in name order), or None if some unmatched register has no partner."""
    ports = {s: _read_ports(work / f"{s}_ports.txt") for s in ("gold", "gate")}
    if ports["gold"] is None or ports["gate"] is None:
        return None
    regs = {s: {n[:-2]: w for n, (d, w) in ports[s].items() if d == "input" and
                n.endswith(":q")} for s in ports}
    only = {s: sorted(set(regs[s]) - set(regs[o])) for s, o in (("gold", "gate"),
                                                               ("gate", "gold"))}
    if not only["gold"] and not only["gate"]:
        return None
    groups: dict[tuple, dict[str, list[str]]] = {}
    for side in ("gold", "gate"):
        for n in only[side]:
            key = (re.sub(r"\$\d+", "$", n), regs[side][n])
            groups.setdefault(key, {"gold": [], "gate": []})[side].append(n)
    renames = {}
    for g in groups.values():
        if len(g["gold"]) != len(g["gate"]):
            return None
        renames.update(zip(g["gate"], g["gold"]))
    return renames


def _prove_by_induction(sides, texts, tops, depth, solver_s, work, keep) -> EquivResult:
    """:func:`prove_same_structure` without register correspondence: k-induction on the
    hashed miter."""
    script = _write_sides(work, sides, texts, tops, combinational=False)
    script += ["design -copy-from gold -as gold gold",
               "design -copy-from gate -as gate gate",
               "miter -equiv -flatten -make_assert gold gate miter",
               "hierarchy -top miter", "opt_clean", "opt -fast", "opt_merge -share_all",
               "opt -fast", "tee -q -o miter_stat.txt stat miter", "async2sync",
               f"sat -tempinduct -prove-asserts -set-init-zero -maxsteps {depth} "
               f"-timeout {solver_s} miter"]
    text, seconds = _yosys(script, work, "induction", solver_s + ELABORATION_S,
                           f"proving {tops['gold']} == {tops['gate']} (k-induction)", keep)
    ports = _check_ports(work, tops)
    cells = {side: _cell_count(work / f"{side}_stat.txt") for side in ("gold", "gate")}
    common = dict(gold_top=tops["gold"], gate_top=tops["gate"], ports=ports, cells=cells,
                  seconds=round(seconds, 3), timeout_s=float(solver_s),
                  tool=versions().get("yosys", ""), method=METHOD_INDUCTION,
                  unproven=_cell_count(work / "miter_stat.txt"),
                  log=str(work / "induction.log") if keep else None)
    return _induction_verdict(text, common, f"{tops['gold']} == {tops['gate']}")


def _read_inits(path: Path) -> dict[str, str]:
    """``dump``'s wires with an ``init`` attribute: {wire name: init constant}."""
    out, init = {}, None
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        m = re.match(r"attribute \\init (\S+)$", line)
        if m:
            init = m.group(1)
            continue
        m = re.match(r"wire .*?\\?(\S+)$", line)
        if m and init is not None:
            out[m.group(1)] = init
            init = None
        elif not line.startswith("attribute"):
            init = None
    return out


def _induction_verdict(text: str | None, common: dict, what: str) -> EquivResult:
    """The verdict of a ``sat -tempinduct`` run's log (None: the process ran out of time)."""
    if text is None or "Interrupted SAT solver: TIMEOUT!" in text:
        return EquivResult(status="timeout", **common)
    steps = re.findall(r"Trying induction with length (\d+)", text)
    common["depth"] = int(steps[-1]) if steps else None
    m = re.findall(r"Solving problem with (\d+) variables and (\d+) clauses", text)
    if m:
        common.update(variables=int(m[-1][0]), clauses=int(m[-1][1]))
    if "Induction step proven: SUCCESS!" in text:
        return EquivResult(status="proved", **common)
    if "model found for base case: FAIL!" in text:
        return EquivResult(status="counterexample", **common)
    if "Reached maximum number of time steps" in text:
        return EquivResult(status="unproven", **common)
    raise ToolError(f"yosys gave no verdict proving {what}")


def prove_pipelined(comb: Design, piped: Design, latency: int, *, clock: str = "clk",
                    reset: str | None = "rst", timeout: float = 600.0,
                    workdir: str | Path | None = None) -> EquivResult:
    """Prove that ``piped`` computes ``comb``'s function ``latency`` cycles later, for every
    input sequence, from its initial state and after any reset.

    ``comb``: the combinational design; ``piped``: the same ports plus ``clock`` (and
    ``reset``, if given: a synchronous reset it may apply at any cycle).  The miter delays
    ``comb``'s outputs by ``latency`` registers and asserts ``piped``'s outputs equal to them
    once ``latency`` cycles have passed since the start or the last reset (the pipeline's
    earlier outputs are its reset values).  ``sat -tempinduct`` proves the assertion by
    k-induction (a feed-forward pipeline closes at k = latency: its outputs are then a function
    of the last ``latency`` inputs alone), with ``latency + 2`` steps at most: ``unproven`` past
    that.  ``counterexample``: the base case failed (the designs differ on some input
    sequence; the trace is in the log)."""
    if not isinstance(latency, int) or isinstance(latency, bool) or not 1 <= latency <= 64:
        raise FlowInputError(f"formal: latency must be an integer in 1..64, got {latency!r}")
    for what, name in (("clock", clock), ("reset", reset)):
        if name is not None and (not isinstance(name, str) or not _IDENT.fullmatch(name)):
            raise FlowInputError(f"formal: the {what} must be a port name, got {name!r}")
    sides = {"gold": comb, "gate": piped}
    texts, tops, solver_s = _prepare(sides, timeout, workdir)
    tmp, keep = _workdir(workdir)
    with tmp as w:
        work = Path(w)
        # phase 1: the port lists (the wrapper is written from them)
        script = _write_sides(work, sides, texts, tops, combinational=False)
        text, _ = _yosys(script, work, "ports", ELABORATION_S,
                         f"reading {tops['gold']} and {tops['gate']}", keep)
        if text is None:
            raise ToolError(f"yosys timed out reading {tops['gold']} and {tops['gate']}")
        gold, gate = (_read_ports(work / f"{s}_ports.txt") for s in ("gold", "gate"))
        extra = [n for n in (clock, reset) if n is not None]
        for n in extra:
            if gate.get(n) != ("input", 1):
                raise FlowInputError(f"formal: {tops['gate']} has no 1-bit input {n!r}")
            if n in gold:
                raise FlowInputError(f"formal: the combinational {tops['gold']} has a port "
                                     f"{n!r}")
        diff = _port_diff(gold, {k: v for k, v in gate.items() if k not in extra})
        if diff:
            raise FlowInputError(f"formal: the ports of {tops['gold']} (combinational) and "
                                 f"{tops['gate']} (pipelined) differ: {'; '.join(diff)}")
        if not any(d == "output" for d, _ in gold.values()):
            raise FlowInputError(f"formal: {tops['gold']} has no outputs: nothing to prove")
        (work / "pipe_miter.v").write_text(_pipe_miter(gold, latency, clock, reset))
        script = _write_sides(work, sides, texts, tops, combinational=False)
        script += ["design -copy-from gold -as gold gold",
                   "design -copy-from gate -as gate gate",
                   "read_verilog -formal pipe_miter.v",
                   "hierarchy -top tcgen_pipe_miter", "proc", "flatten", "opt_clean",
                   "opt -fast", "opt_merge -share_all", "opt -fast", "async2sync",
                   f"sat -tempinduct -prove-asserts -set-init-zero -maxsteps {latency + 2} "
                   f"-timeout {solver_s} tcgen_pipe_miter"]
        text, seconds = _yosys(script, work, "pipelined", solver_s + ELABORATION_S,
                               f"proving {tops['gate']} == {tops['gold']} delayed {latency}",
                               keep)
        cells = {side: _cell_count(work / f"{side}_stat.txt") for side in ("gold", "gate")}
        ports = tuple(sorted((d, n, w) for n, (d, w) in gate.items()))
        common = dict(gold_top=tops["gold"], gate_top=tops["gate"], ports=ports, cells=cells,
                      seconds=round(seconds, 3), timeout_s=float(solver_s),
                      tool=versions().get("yosys", ""), method=METHOD_PIPELINE,
                      log=str(work / "pipelined.log") if keep else None)
        return _induction_verdict(text, common, f"{tops['gate']} == {tops['gold']} delayed "
                                                 f"{latency}")


def _decl(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def _pipe_miter(ports: dict, latency: int, clock: str, reset: str | None) -> str:
    """The miter of :func:`prove_pipelined`: gold (combinational) delayed ``latency`` cycles
    against gate, asserted once ``latency`` cycles have passed since the start / a reset."""
    ins = sorted(n for n, (d, _) in ports.items() if d == "input")
    outs = sorted(n for n, (d, _) in ports.items() if d == "output")
    head = [f"input {clock}"] + ([f"input {reset}"] if reset else [])
    head += [f"input {_decl(ports[n][1])}{n}" for n in ins]
    cw = latency.bit_length()
    lines = ["// the miter of tcgen.synth.formal.prove_pipelined (generated)",
             "module tcgen_pipe_miter(" + ", ".join(head) + ");"]
    for n in outs:
        w = ports[n][1]
        lines.append(f"  wire {_decl(w)}gold__{n}, gate__{n};")
        for k in range(1, latency + 1):
            lines.append(f"  reg {_decl(w)}gold__{n}__d{k} = 0;")
    lines.append(f"  reg [{cw - 1}:0] warm = 0;")
    conn = [f".{n}({n})" for n in ins]
    lines.append("  gold g(" + ", ".join(conn + [f".{n}(gold__{n})" for n in outs]) + ");")
    conn_gate = [f".{clock}({clock})"] + ([f".{reset}({reset})"] if reset else [])
    lines.append("  gate p(" + ", ".join(conn_gate + conn + [f".{n}(gate__{n})" for n in outs])
                 + ");")
    lines.append(f"  always @(posedge {clock}) begin")
    for n in outs:
        lines.append(f"    gold__{n}__d1 <= gold__{n};")
        for k in range(2, latency + 1):
            lines.append(f"    gold__{n}__d{k} <= gold__{n}__d{k - 1};")
    rst = f"if ({reset}) warm <= 0; else " if reset else ""
    lines.append(f"    {rst}if (warm != {latency}) warm <= warm + 1;")
    lines.append("  end")
    lines.append(f"  always @* if (warm == {latency}) begin")
    for n in outs:
        lines.append(f"    assert (gate__{n} == gold__{n}__d{latency});")
    lines += ["  end", "endmodule", ""]
    return "\n".join(lines)


# -- bounded model checking of stream-protocol properties ---------------------------------------
@dataclass(frozen=True)
class PropertyResult:
    """The verdict of :func:`check_properties`.

    ``status``: ``passed`` (no assertion fails in ``depth`` steps from the initial state under
    the assumptions -- BMC -- or, with ``induction``, in any step at all), ``failed`` (an
    assertion fails at ``step``; ``failed_assertions`` names them, the trace is in the log) or
    ``timeout``.  ``properties``: the assertions checked (their labels); ``seconds``: wall time
    of Yosys and the model checker."""
    status: str
    top: str
    depth: int
    induction: bool
    properties: tuple
    seconds: float
    timeout_s: float
    step: int | None = None
    failed_assertions: tuple = ()
    cells: int | None = None
    tool: str = ""
    solver: str = BMC_SOLVER
    method: str = METHOD_BMC
    log: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def describe(self) -> str:
        kind = "induction" if self.induction else f"BMC depth {self.depth}"
        head = f"{self.top}: {self.status} ({kind}) in {self.seconds:.2f} s"
        if self.status == "failed":
            head += f" at step {self.step}: {', '.join(self.failed_assertions) or '?'}"
        return head

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_LABEL = re.compile(r"^\s*(\w+)\s*:\s*assert\s*\(", re.M)


def check_properties(design: Design, properties: str, *, top: str, depth: int,
                     induction: bool = False, engine: str = "smtbmc", timeout: float = 600.0,
                     workdir: str | Path | None = None) -> PropertyResult:
    """Check the ``assert`` statements of a property wrapper around ``design`` with yosys-smtbmc.

    ``properties``: Verilog read with ``read_verilog -formal``: a module ``top`` that
    instantiates the design's top and states ``assume`` (the environment) and labelled
    ``assert`` statements (``name: assert (...)``) in ``always @*`` blocks; see
    :func:`stream_properties`.  Yosys prepares the model (``prep``, ``flatten``, then
    ``opt_clean``: only the logic the properties can observe is kept -- a datapath whose values
    no assertion reads drops out), writes SMT-LIB2 (``write_smt2``) and ``yosys-smtbmc -s z3``
    checks it: a bounded model check of ``depth`` steps from the initial state, or with
    ``induction`` a ``depth``-step induction (``-i``; a proof for every step once the BMC of the
    same depth has passed).  ``engine="sat"``: the same bounded check by Yosys's built-in
    ``sat -seq depth -set-assumes -prove-asserts`` (MiniSat on the bit-level model) instead --
    for properties that read a wide arithmetic datapath, where it is much faster than z3."""
    if engine not in ("smtbmc", "sat"):
        raise FlowInputError(f"formal: engine must be smtbmc or sat, got {engine!r}")
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= 1000:
        raise FlowInputError(f"formal: depth must be an integer in 1..1000, got {depth!r}")
    if not isinstance(top, str) or not _IDENT.fullmatch(top):
        raise FlowInputError(f"formal: the property module must be an identifier, got {top!r}")
    if not isinstance(properties, str) or top not in module_names(properties):
        raise FlowInputError(f"formal: the properties have no module {top!r}")
    sides = {"dut": design}
    texts, tops, solver_s = _prepare(sides, timeout, workdir)
    labels = tuple(_LABEL.findall(properties))
    tmp, keep = _workdir(workdir)
    with tmp as w:
        work = Path(w)
        files = []
        for i, text in enumerate(texts["dut"]):
            f = work / f"dut_{i}.v"
            f.write_text(text)
            files.append(f.name)
        (work / "props.sv").write_text(properties)
        params = design.params
        script = ["read_verilog " + " ".join(files)]
        if params:
            script.append("chparam " + " ".join(f"-set {k} {int(v)}" for k, v in params.items())
                          + f" {tops['dut']}")
        script += ["read_verilog -formal props.sv", f"prep -top {top}", "flatten",
                   "memory", "opt_clean", "async2sync", "dffunmap",
                   f"tee -q -o model_stat.txt stat {top}"]
        t0 = time.monotonic()
        if engine == "sat":
            return _check_with_sat(script, work, top, depth, labels, solver_s, t0, keep,
                                   induction)
        script.append("write_smt2 -wires model.smt2")
        text, _ = _yosys(script, work, "model", ELABORATION_S, f"modelling {top}", keep)
        if text is None:
            raise ToolError(f"yosys timed out modelling {top}")
        args = ["-s", BMC_SOLVER, "--presat", "-t", str(depth)]
        if induction:
            args.insert(0, "-i")
        log = work / ("induction.log" if induction else "bmc.log")
        log.unlink(missing_ok=True)
        timed_out = False
        try:
            run("yosys-smtbmc", [*args, "model.smt2"], cwd=work, log=log, timeout=solver_s,
                what=f"checking {top}")
        except ToolError as e:            # a failed check exits 1: its output is in the log
            timed_out = "timed out" in str(e)
        seconds = time.monotonic() - t0
        common = dict(top=top, depth=depth, induction=induction, properties=labels,
                      seconds=round(seconds, 3), timeout_s=float(solver_s),
                      cells=_cell_count(work / "model_stat.txt"),
                      tool=versions().get("yosys", ""), log=str(log) if keep else None)
        if timed_out:
            return PropertyResult(status="timeout", **common)
        out = log.read_text(errors="replace") if log.exists() else ""
        if "Status: PASSED" in out:
            return PropertyResult(status="passed", **common)
        if "Status: FAILED" in out:
            steps = re.findall(r"(?:Checking assertions in|Trying induction in) step (\d+)",
                               out[:out.find("failed")])
            failed = tuple(sorted(set(re.findall(r"Assert failed in \S+: .*?(\w+)\s*\)?\s*$",
                                                 out, re.M))))
            return PropertyResult(status="failed", step=int(steps[-1]) if steps else None,
                                  failed_assertions=failed, **common)
        raise ToolError(f"yosys-smtbmc gave no verdict checking {top}: "
                        f"{out.strip().splitlines()[-1] if out.strip() else 'no output'}")


#: the labels of :func:`stream_properties`'s assertions, and what each states
STREAM_PROPERTIES = {
    "stable": "an output stalled (valid, not ready) stays valid until taken",
    "stable_payload": "an output stalled (valid, not ready) keeps its payload until taken",
    "no_spurious": "one_to_one: never more outputs taken than items taken on any input "
                   "stream; else no output is valid before every input stream was offered "
                   "since the last reset (a unit may consume a held request before it "
                   "acknowledges it)",
    "reset_idle": "the cycle after a reset, no output is valid",
    "completes": "an accepted operation presents its output within `bound` cycles (several "
                 "inputs: cycles in which every other input is offered)",
}


def stream_properties(dut: str, source, sink: tuple[str, int], *,
                      bound: int | None = None, one_to_one: bool = True,
                      assume_payload: str | None = None, checks=None, clock: str = "clk",
                      reset: str = "rst", top: str = "tcgen_stream_props") -> str:
    """A property wrapper (for :func:`check_properties`) of a unit with one or more input
    streams and one output stream, named in the ``<name>__valid`` / ``__ready`` /
    ``__payload`` convention.

    ``source``: (stream name, payload bits) of the input stream, or a sequence of them for a
    unit with several input streams (the first is the *request* stream: the one ``bound``,
    ``assume_payload`` and a one-to-one count of operations refer to); ``sink``: the output
    stream's (name, bits).  In the wrapper the first input is ``i_valid`` / ``i_payload`` /
    ``i_ready``, input k ≥ 1 is ``i<k>_valid`` / ...  The environment (``assume``) starts in
    reset and obeys the stream protocol on every input: a stalled input (valid, not ready)
    keeps its valid and payload; the output's ready and the inputs' payloads are free, and the
    inputs are independent of each other.  The assertions are :data:`STREAM_PROPERTIES`:
    ``stable``, ``no_spurious``, ``reset_idle`` and, with ``bound``, ``completes``.
    ``one_to_one``: one output per operation, and an operation takes one item of *every*
    input stream (``no_spurious``: never more outputs taken than items taken on any input,
    each counted in flight); else ``no_spurious`` asks that every input stream was offered
    since the last reset before an output is valid, and ``completes`` only that an accepted
    request is followed by some output.  With several inputs, ``completes`` counts the
    cycles in which every other input stream is valid (the joint assumption of a bounded
    completion: a unit waiting for an input the environment withholds is not late; with one
    input every cycle counts).  ``assume_payload``: a Verilog expression over ``i_payload``
    the environment keeps true while the request stream is valid (e.g. ``i_payload[42]`` for a
    request field that makes every operation emit a result); it narrows every property to
    those inputs.  ``checks``: the labels of :data:`STREAM_PROPERTIES` to assert (default: all
    that apply).  ``stable`` is the output's valid, ``stable_payload`` its payload: apart, the
    control properties see no datapath (the model keeps only the logic an assertion reads)."""
    checks = set(STREAM_PROPERTIES if checks is None else checks)
    unknown = checks - set(STREAM_PROPERTIES)
    if unknown:
        raise FlowInputError(f"formal: unknown stream properties {sorted(unknown)} (known: "
                             f"{', '.join(STREAM_PROPERTIES)})")
    if bound is None:
        checks.discard("completes")
    sources = [source] if isinstance(source, tuple) and source and isinstance(source[0], str) \
        else list(source)
    if not sources or not all(isinstance(s, tuple) and len(s) == 2 for s in sources):
        raise FlowInputError(f"formal: source must be a (name, bits) pair or a sequence of "
                             f"them, got {source!r}")
    for what, v in (("dut", dut), ("clock", clock), ("reset", reset), ("top", top),
                    *(("source", s[0]) for s in sources), ("sink", sink[0])):
        if not isinstance(v, str) or not _IDENT.fullmatch(v):
            raise FlowInputError(f"formal: the {what} must be an identifier, got {v!r}")
    names = [s[0] for s in sources] + [sink[0]]
    if len(set(names)) != len(names):
        raise FlowInputError(f"formal: stream names must differ, got {names}")
    if bound is not None and (not isinstance(bound, int) or bound < 1):
        raise FlowInputError(f"formal: bound must be a positive integer, got {bound!r}")
    o, ow = sink
    pre = ["i"] + [f"i{k}" for k in range(1, len(sources))]      # wrapper names per input
    bw = max(1, (bound or 1).bit_length() + 1)
    ports = "".join(f"input {x}_valid, input {_decl(w)}{x}_payload, "
                    for x, (_, w) in zip(pre, sources))
    conns = "".join(f".{n}__valid({x}_valid), .{n}__payload({x}_payload), "
                    f".{n}__ready({x}_ready), " for x, (n, _) in zip(pre, sources))
    inflight = [f"{x}_inflight" for x in pre] if one_to_one else ["inflight"]
    seen = [f"{x}_seen" for x in pre]
    fed = " && ".join(f"{x}_valid" for x in pre[1:]) or "1"   # completes: side inputs offered
    L = ["// stream-protocol properties: tcgen.synth.formal.stream_properties (generated)",
         f"module {top}(input {clock}, input {reset}, {ports}input o_ready);",
         *(f"  wire {x}_ready;" for x in pre), "  wire o_valid;",
         f"  wire {_decl(ow)}o_payload;",
         f"  {dut} dut(.{clock}({clock}), .{reset}({reset}), {conns}.{o}__valid(o_valid), "
         f".{o}__payload(o_payload), .{o}__ready(o_ready));",
         "  reg init = 1, past_rst = 0, past_o_stall = 0;",
         *(f"  reg {x}_past_stall = 0, {x}_seen = 0;" for x in pre),
         *(f"  reg {_decl(w)}{x}_past_payload = 0;" for x, (_, w) in zip(pre, sources)),
         f"  reg {_decl(ow)}past_o_payload = 0;",
         *(f"  reg [7:0] {v} = 0;" for v in inflight), f"  reg [{bw - 1}:0] waiting = 0;",
         *(f"  wire {x}_take = {x}_valid && {x}_ready;" for x in pre),
         "  wire o_take = o_valid && o_ready;",
         f"  always @(posedge {clock}) begin",
         "    init <= 0;", f"    past_rst <= {reset};",
         *(f"    {x}_past_stall <= {x}_valid && !{x}_ready; {x}_past_payload <= {x}_payload;"
           for x in pre),
         "    past_o_stall <= o_valid && !o_ready;", "    past_o_payload <= o_payload;",
         f"    if ({reset}) begin {' '.join(f'{v} <= 0;' for v in seen + inflight)} "
         f"waiting <= 0; end",
         "    else begin",
         *(f"      if ({x}_take) {x}_seen <= 1;" if one_to_one else
           f"      if ({x}_valid) {x}_seen <= 1;" for x in pre),
         *([f"      {x}_inflight <= {x}_inflight + {x}_take - o_take;" for x in pre]
           if one_to_one else ["      inflight <= o_take ? i_take : (inflight | i_take);"]),
         f"      if (o_valid || ({inflight[0]} == 0 && !i_take)) waiting <= 0;",
         f"      else if ({fed}) waiting <= waiting + 1;",
         "    end", "  end",
         "  always @* begin",
         f"    if (init) assume ({reset});",
         *(line for x in pre for line in (
             f"    if (!init && !past_rst && {x}_past_stall) begin",
             f"      assume ({x}_valid);", f"      assume ({x}_payload == {x}_past_payload);",
             "    end")),
         f"    if (i_valid) assume ({assume_payload});" if assume_payload else "",
         "  end",
         "  always @* if (!init && !past_rst && past_o_stall) begin",
         "    stable: assert (o_valid);" if "stable" in checks else "",
         "    stable_payload: assert (o_payload == past_o_payload);"
         if "stable_payload" in checks else "",
         "  end",
         f"  always @* if (!init && !{reset}) begin",
         (f"    no_spurious: assert (!o_valid || ({' && '.join(seen)}));" if not one_to_one
          else "    no_spurious: assert (!o_take || ("
          + " && ".join(f"{v} != 0" for v in inflight) + "));")
         if "no_spurious" in checks else "",
         "  end",
         "  always @* if (!init && past_rst) begin",
         "    reset_idle: assert (!o_valid);" if "reset_idle" in checks else "", "  end"]
    if "completes" in checks:
        L += [f"  always @* if (!init && !{reset}) begin",
              f"    completes: assert (waiting <= {bound});", "  end"]
    L += ["endmodule", ""]
    return "\n".join(line for line in L if line) + "\n"


def _check_with_sat(script, work: Path, top: str, depth: int, labels, solver_s, t0,
                    keep, induction: bool = False) -> PropertyResult:
    """``engine="sat"``: a BMC of ``depth`` steps, or with ``induction`` k-induction up to
    ``depth`` (``sat -tempinduct``: base case and induction step; a proof for every step)."""
    if induction:
        cmd = f"sat -tempinduct -set-assumes -prove-asserts -set-init-zero -maxsteps {depth}"
    else:
        cmd = f"sat -seq {depth} -set-assumes -prove-asserts -set-init-zero"
    script = script + [f"{cmd} -timeout {solver_s} {top}"]
    text, _ = _yosys(script, work, "sat_bmc", solver_s + ELABORATION_S, f"checking {top}", keep)
    common = dict(top=top, depth=depth, induction=induction, properties=labels,
                  seconds=round(time.monotonic() - t0, 3), timeout_s=float(solver_s),
                  cells=_cell_count(work / "model_stat.txt"), tool=versions().get("yosys", ""),
                  solver=SOLVER, method=f"Yosys {cmd.split(' -set')[0]} -set-assumes "
                                        f"-prove-asserts",
                  log=str(work / "sat_bmc.log") if keep else None)
    if text is None or "Interrupted SAT solver: TIMEOUT!" in text:
        return PropertyResult(status="timeout", **common)
    if ("SAT proof finished - no model found: SUCCESS!" in text
            or "Induction step proven: SUCCESS!" in text):
        if induction:
            steps = re.findall(r"Trying induction with length (\d+)", text)
            common["depth"] = int(steps[-1]) if steps else depth
        return PropertyResult(status="passed", **common)
    if "model found: FAIL!" in text:
        return PropertyResult(status="failed", **common)
    if "Reached maximum number of time steps" in text:
        return PropertyResult(status="timeout", **common)
    raise ToolError(f"yosys gave no verdict checking {top}")
