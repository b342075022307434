"""Verilog of a unit: (unit, params, top) -> the text ``tcgen generate`` writes.

The emission itself (RTLIL normalization, one module per distinct sub-component, determinism,
lint-cleanliness) is :func:`tcgen.hw.generate.component_verilog`; this adds the unit lookup and
the header line, which names the tcgen version, the unit and every parameter (and nothing
machine-specific).
"""
from __future__ import annotations

from tcgen import __version__
from tcgen.hw.generate import check_module_name, component_verilog
from tcgen.hw.params import Params

from .registry import get_unit

__all__ = ["verilog", "header"]


def header(unit_name: str, params: Params) -> str:
    vals = " ".join(f"{k}={_fmt(v)}" for k, v in params.keyed().items()) or "(none)"
    return f"// tcgen {__version__}: unit {unit_name}; params {vals}\n"


def _fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def verilog(unit_name: str, params: Params | None = None, top: str | None = None, *,
            flat: bool = False) -> str:
    """Verilog text of ``unit_name`` at ``params`` with top module ``top`` (default: unit name).

    By default identical sub-components are emitted once, as one module each
    (``<top>__<Class>_<hash>``), and instantiated; ``flat=True`` elaborates every instance in
    place, as one Amaranth hierarchy (tcgen.hw.dedup).  The two are functionally equal.

    Raises :class:`~tcgen.errors.UsageError` for an unknown unit and
    :class:`~tcgen.hw.params.ParamError` for a ``top`` that cannot name a module."""
    unit = get_unit(unit_name)
    top = check_module_name(unit.name if top is None else top)
    params = params if params is not None else unit.params()
    return component_verilog(unit.component(params), top, header(unit.name, params), flat=flat)
