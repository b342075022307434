"""The unit registry (DESIGN.md §3).

A :class:`Unit` ties a short name to its validated params dataclass, the Amaranth component
built from them, the bit-exact golden model, ``ops_per_cycle`` and a default workload (random
stimulus, used by tests and by activity-annotated power).  Library blocks register themselves in
:mod:`hw.library`; each paper family registers in ``units/<family>/__init__.py``.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .params import Params

__all__ = ["Unit", "register", "get_unit", "all_units", "Port"]


@dataclass(frozen=True)
class Port:
    """A plain data port of a fixed-latency unit: name and width in bits (from params)."""
    name: str
    width: int


@dataclass(frozen=True)
class Unit:
    """One generatable unit.

    name            registry key and default Verilog top name
    family          ``hw`` for library blocks, else the paper family (``pacq``, ``lut`` ...)
    summary         one line for ``tcgen list``
    params          the frozen :class:`~hw.params.Params` subclass (defaults = paper config)
    build           params -> ``wiring.Component``
    model           (params, **inputs as uint64 arrays) -> {output name: uint64 array}
    ops_per_cycle   params -> work per cycle in the paper's units (see ``ops_unit``)
    ops_unit        what one op is ("FLOP", "MAC", "bit-op", "result" ...)
    workload        (params, rng, n) -> {input name: uint64 array}: the default stimulus
    """
    name: str
    family: str
    summary: str
    params: type
    build: Callable
    model: Callable
    ops_per_cycle: Callable = field(default=lambda p: 1.0)
    ops_unit: str = "op"
    workload: Callable | None = None

    def make_params(self, values: dict[str, str] | None = None) -> Params:
        return self.params.from_strings(values or {})

    def component(self, params: Params | None = None):
        return self.build(params if params is not None else self.params())

    def interface(self, params: Params | None = None):
        """The component for reading its signature and ``latency`` only (never elaborated)."""
        comp = self.component(params)
        comp._MustUse__silence = True
        return comp

    def golden(self, params: Params, **inputs) -> dict[str, np.ndarray]:
        return self.model(params, **inputs)


_REGISTRY: dict[str, Unit] = {}
_loaded = False


def register(unit: Unit) -> Unit:
    if unit.name in _REGISTRY and _REGISTRY[unit.name] is not unit:
        raise ValueError(f"unit {unit.name!r} is registered twice")
    _REGISTRY[unit.name] = unit
    return unit


def _load():
    global _loaded
    if _loaded:
        return
    _loaded = True
    importlib.import_module("hw.library")
    try:
        units_pkg = importlib.import_module("units")
    except ModuleNotFoundError:
        return
    for info in pkgutil.iter_modules(units_pkg.__path__):
        importlib.import_module(f"units.{info.name}")


def all_units() -> list[Unit]:
    _load()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get_unit(name: str) -> Unit:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown unit {name!r}; units are: {', '.join(sorted(_REGISTRY))}") \
            from None
