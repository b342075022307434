"""The unit catalog: every family's units, found through entry points.

A family is a package that declares a tuple of :class:`tcgen.hw.spec.UnitSpec` and names it
in an entry point of the group ``tcgen.families`` (``pyproject.toml``)::

    [project.entry-points."tcgen.families"]
    pacq = "tcgen.units.pacq.family:UNITS"

so a package of your own adds a family that ``tcgen list``, ``generate``, ``ppa`` and the tests
see, with no edit to tcgen (README, "Adding a family from your own package").  A unit name
declared twice, or an entry point that fails to load or names something other than a tuple of
specs, is an installation error: it is raised (:class:`RegistryError`), never skipped.
"""
from __future__ import annotations

import functools
from importlib import metadata

from tcgen.hw.spec import UnitSpec

from .errors import UsageError

__all__ = ["GROUP", "RegistryError", "all_units", "get_unit", "families"]

GROUP = "tcgen.families"


class RegistryError(RuntimeError):
    """A family's entry point is broken (fails to import, wrong type, duplicate unit)."""


def _interrupted(e: BaseException | None) -> bool:
    """A KeyboardInterrupt somewhere in the exception's cause/context chain."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


@functools.lru_cache(maxsize=None)
def _catalog() -> dict[str, tuple[str, UnitSpec]]:
    found: dict[str, tuple[str, UnitSpec]] = {}
    for ep in sorted(metadata.entry_points(group=GROUP), key=lambda e: (e.name, e.value)):
        where = f"entry point {ep.name} = {ep.value} (group {GROUP}, distribution " \
                f"{ep.dist.name if ep.dist else '?'})"
        try:
            specs = ep.load()
        except Exception as e:
            if _interrupted(e):         # Ctrl-C while a family imports is an interrupt, not a
                raise KeyboardInterrupt from None   # broken family (Python may wrap it, e.g.
                                                    # in a dataclass field's __set_name__)
            raise RegistryError(f"{where} failed to load: {type(e).__name__}: {e}") from e
        if not isinstance(specs, (tuple, list)) or not all(isinstance(s, UnitSpec)
                                                           for s in specs):
            raise RegistryError(f"{where} must name a tuple of tcgen.hw.spec.UnitSpec, got "
                                f"{type(specs).__name__}")
        for spec in specs:
            if spec.name in found:
                other = found[spec.name][0]
                raise RegistryError(f"unit {spec.name!r} is declared twice: by {other} and by "
                                    f"{where}")
            found[spec.name] = (where, spec)
    return found


def all_units() -> list[UnitSpec]:
    """Every unit of every installed family, sorted by name."""
    cat = _catalog()
    return [cat[k][1] for k in sorted(cat)]


def families() -> dict[str, list[str]]:
    """Family name -> its unit names."""
    out: dict[str, list[str]] = {}
    for u in all_units():
        out.setdefault(u.family, []).append(u.name)
    return out


def get_unit(name: str) -> UnitSpec:
    """The unit called ``name``; :class:`~tcgen.errors.UsageError` naming the known ones."""
    cat = _catalog()
    if name not in cat:
        raise UsageError(f"unknown unit {name!r}; units are: {', '.join(sorted(cat))}")
    return cat[name][1]
