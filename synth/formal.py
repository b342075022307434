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

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence, Union

from .tools import FlowInputError, ToolError, run, versions
from .yosys import module_names

__all__ = ["Design", "EquivResult", "prove_equivalent", "SOLVER", "METHOD"]

#: the SAT solver behind Yosys's ``sat`` command (compiled into Yosys; nothing to install)
SOLVER = "MiniSat (Yosys built-in sat)"
#: how a combinational proof is made
METHOD = "miter -equiv, sat -prove-asserts (combinational)"

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
    drive the two designs to different outputs: ``gold_outputs`` vs ``gate_outputs``) or
    ``timeout`` (the solver gave up after ``timeout_s``: nothing is known).  ``cells``: Yosys's
    word-level cells of each side after flattening; ``variables``, ``clauses``: the size of the
    SAT problem; ``seconds``: wall time of the whole Yosys run.
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
        if self.status != "counterexample":
            return head
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


def _side_script(side: str, files: list[Path], top: str, params: Mapping) -> list[str]:
    lines = ["read_verilog " + " ".join(f.name for f in files)]
    if params:
        sets = " ".join(f"-set {k} {int(v)}" for k, v in params.items())
        lines.append(f"chparam {sets} {top}")
    lines += [f"hierarchy -check -top {top}", "proc", "flatten", "memory",
              f"hierarchy -top {top}",               # drops the flattened submodules
              "opt_clean",
              # undriven nets and x constants: free variables (else the solver reads them as
              # whatever makes the proof go through)
              "setundef -undriven -anyseq", "setundef -anyseq"]
    if top != side:
        lines.append(f"rename {top} {side}")
    lines += [f"tee -q -o {side}_ports.txt portlist {side}",
              f"tee -q -o {side}_stat.txt stat {side}",
              "select -assert-none " + " ".join(f"{side}/t:{t}" for t in _STATE_CELLS),
              f"design -stash {side}"]
    return lines


def _prove(sides, texts, tops, timeout, work: Path, keep_log: bool) -> EquivResult:
    script = []
    for side in ("gold", "gate"):
        files = []
        for i, text in enumerate(texts[side]):
            f = work / f"{side}_{i}.v"
            f.write_text(text)
            files.append(f)
        (work / f"{side}_ports.txt").unlink(missing_ok=True)
        (work / f"{side}_stat.txt").unlink(missing_ok=True)
        script += _side_script(side, files, tops[side], sides[side].params)
    solver_s = max(1, int(round(timeout)))
    script += ["design -copy-from gold -as gold gold",
               "design -copy-from gate -as gate gate",
               "miter -equiv -flatten -make_assert -make_outputs gold gate miter",
               "hierarchy -top miter",
               f"sat -prove-asserts -show-inputs -show-outputs -timeout {solver_s} miter"]
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
            bits = re.sub(r"[xX?-]", "0", m.group(2))     # undefined bits: none without undef
            values[m.group(1)] = int(bits, 2)
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
