"""The unit catalog: every family's units, found through entry points.

A family is a package that declares a tuple of :class:`tcgen.hw.spec.UnitSpec` and names it
in an entry point of the group ``tcgen.families`` (``pyproject.toml``)::

    [project.entry-points."tcgen.families"]
    pacq = "tcgen.units.pacq.family:UNITS"

so a package of your own adds a family that ``tcgen list``, ``generate``, ``ppa`` and the tests
see, with no edit to tcgen (docs/plugins.md).

A broken family is isolated, never fatal to the others (docs/plugins.md, "A broken plug-in"):
an entry point that fails to import (any exception, a syntax error, even ``SystemExit`` raised
while importing), names something other than a tuple of specs, holds a spec that is not a
usable unit, or declares a unit name another family already declared is skipped whole.  It is
recorded as a :class:`Broken` (:func:`broken`); the command line prints one warning line per
broken family on stderr, ``tcgen list`` exits with status 1 when there is one, and asking for
one of its units is an unknown unit whose error names the broken family.  The families are read
in a fixed order -- tcgen's own first, then by entry-point name -- so a duplicate is always
charged to the same family.  Ctrl-C while a family imports is an interrupt, not a broken family.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata

from tcgen.hw.generate import check_module_name
from tcgen.hw.params import ParamError, Params
from tcgen.hw.spec import UnitSpec

from .errors import UsageError

__all__ = ["GROUP", "RegistryError", "Broken", "all_units", "get_unit", "families", "broken",
           "DISTRIBUTION"]

GROUP = "tcgen.families"
#: tcgen's own distribution: its families are read first
DISTRIBUTION = "tcgen-hdl"


class RegistryError(RuntimeError):
    """A family's entry point is broken (fails to import, wrong type, duplicate unit)."""


@dataclass(frozen=True)
class Broken:
    """A family entry point that was skipped, and why (one line)."""
    entry_point: str          # "name = value"
    distribution: str
    reason: str

    def line(self) -> str:
        return (f"plug-in family {self.entry_point} (distribution {self.distribution}) is broken "
                f"and was skipped: {self.reason}")


def _interrupted(e: BaseException | None) -> bool:
    """A KeyboardInterrupt somewhere in the exception's cause/context chain."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if isinstance(e, SystemExit):
        return f"it raised SystemExit({e.code!r}) while importing"
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


def _check_spec(spec) -> str | None:
    """Why ``spec`` is not a usable unit, or None."""
    if not isinstance(spec, UnitSpec):
        return f"holds {type(spec).__name__}, not a tcgen.hw.spec.UnitSpec"
    try:
        check_module_name(spec.name)
    except ParamError:
        return f"unit name {spec.name!r} is not a Verilog identifier"
    if not (isinstance(spec.params, type) and issubclass(spec.params, Params)):
        return f"unit {spec.name!r}: params must be a subclass of tcgen.hw.params.Params"
    for attr in ("build", "model", "ops_per_cycle"):
        if not callable(getattr(spec, attr)):
            return f"unit {spec.name!r}: {attr} must be callable"
    for attr in ("workload", "estimate"):
        if getattr(spec, attr) is not None and not callable(getattr(spec, attr)):
            return f"unit {spec.name!r}: {attr} must be callable or None"
    return None


def _order(ep) -> tuple:
    dist = ep.dist.name if ep.dist else ""
    return (dist != DISTRIBUTION, ep.name, ep.value)


@functools.lru_cache(maxsize=None)
def _scan() -> tuple[dict[str, tuple[str, UnitSpec]], tuple[Broken, ...]]:
    found: dict[str, tuple[str, UnitSpec]] = {}
    bad: list[Broken] = []
    for ep in sorted(metadata.entry_points(group=GROUP), key=_order):
        dist = ep.dist.name if ep.dist else "?"
        where = f"entry point {ep.name} = {ep.value} (group {GROUP}, distribution {dist})"
        label = f"{ep.name} = {ep.value}"
        try:
            specs = ep.load()
        except (Exception, SystemExit) as e:      # a family's import is the family's problem
            if _interrupted(e):         # Ctrl-C while a family imports is an interrupt, not a
                raise KeyboardInterrupt from None   # broken family (Python may wrap it, e.g.
                                                    # in a dataclass field's __set_name__)
            bad.append(Broken(label, dist, f"failed to load: {_one_line(e)}"))
            continue
        if not isinstance(specs, (tuple, list)):
            bad.append(Broken(label, dist, f"must name a tuple of tcgen.hw.spec.UnitSpec, got "
                                           f"{type(specs).__name__}"))
            continue
        problem = next((p for p in map(_check_spec, specs) if p), None)
        names = [s.name for s in specs] if problem is None else []
        if problem is None:
            twice = next((n for n in names if n in found), None)
            if twice is not None:
                problem = f"unit {twice!r} is declared twice: by {found[twice][0]} and by it"
            elif len(set(names)) != len(names):
                problem = "it declares one unit name twice"
        if problem is not None:
            bad.append(Broken(label, dist, problem))
            continue
        for spec in specs:
            if spec.params.UNIT == Params.UNIT:   # a Params without UNIT: errors name the unit
                spec.params.UNIT = spec.name
            found[spec.name] = (where, spec)
    return found, tuple(bad)


def _catalog() -> dict[str, tuple[str, UnitSpec]]:
    return _scan()[0]


_catalog.cache_clear = _scan.cache_clear      # (tests reset the catalog through either name)


def broken() -> tuple[Broken, ...]:
    """The family entry points that were skipped, and why."""
    return _scan()[1]


def strict_catalog() -> dict[str, tuple[str, UnitSpec]]:
    """The catalog, or :class:`RegistryError` naming the first broken family (for an
    installation check that must not go on without one)."""
    if broken():
        raise RegistryError(broken()[0].line())
    return _catalog()


def all_units() -> list[UnitSpec]:
    """Every unit of every installed, working family, sorted by name."""
    cat = _catalog()
    return [cat[k][1] for k in sorted(cat)]


def families() -> dict[str, list[str]]:
    """Family name -> its unit names."""
    out: dict[str, list[str]] = {}
    for u in all_units():
        out.setdefault(u.family, []).append(u.name)
    return out


def get_unit(name: str) -> UnitSpec:
    """The unit called ``name``; :class:`~tcgen.errors.UsageError` naming the known ones (and
    the count of broken families, one of which may have declared it: the command line has
    printed each as a warning)."""
    cat = _catalog()
    if name not in cat:
        shown = name if isinstance(name, str) and len(name) <= 80 else str(name)[:75] + "[...]"
        note = (f" ({len(broken())} broken plug-in famil{'y' if len(broken()) == 1 else 'ies'} "
                "skipped: see the warnings)") if broken() else ""
        raise UsageError(f"unknown unit {shown!r}{note}; units are: {', '.join(sorted(cat))}")
    return cat[name][1]
