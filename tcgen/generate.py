"""Verilog of a unit: (unit, params, top) -> the text ``tcgen generate`` writes.

The emission itself (RTLIL normalization, one module per distinct sub-component, determinism,
lint-cleanliness) is :func:`tcgen.hw.generate.component_verilog`; this adds the unit lookup, the
header line, which names the tcgen version, the unit and every parameter (and nothing
machine-specific), and the size check that refuses a configuration too large to build before
anything is elaborated (:func:`check_size`; docs/robustness.md, "Resource bounds").
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from tcgen import __version__
from tcgen.hw import dedup
from tcgen.hw.generate import check_module_name, component_verilog
from tcgen.hw.params import ParamError, Params
from tcgen.hw.pipeline import AUTO, CutPoints
from tcgen.hw.spec import UnitSpec

from .errors import UsageError
from .registry import get_unit

__all__ = ["verilog", "header", "unit_params", "Size", "estimate", "check_size", "max_cells", "forced",
           "MAX_CELLS", "ENV_MAX_CELLS", "ENV_FORCE"]

#: the default limit on a unit's estimated size, in standard cells after flat synthesis: ~4x the
#: largest configuration any study measures (1.0M cells, mac_dp4_array dequantized outside),
#: ~30x the largest default unit (bmma_array m8n8k128, 103k cells)
MAX_CELLS = 4_000_000
ENV_MAX_CELLS = "TCGEN_MAX_CELLS"       # another limit (a positive integer)
ENV_FORCE = "TCGEN_FORCE"               # 1: build whatever the estimate says (`--force`)

# What one estimated cell costs, calibrated on this project's flow (docs/robustness.md): Yosys
# `synth -flatten` + ABC on osu018 used ~1.8 ms of CPU and ~15 kB of peak memory per mapped
# cell on the 96k..137k-cell units; Amaranth's flat elaboration ~0.3..0.6 ms per cell
# (bmma_array m8n8k128 28.9 s, int8_mac_array m2n2k16 17.3 s).
SYNTH_S_PER_CELL = 1.8e-3
SYNTH_BYTES_PER_CELL = 15e3
FLAT_GEN_S_PER_CELL = 0.5e-3


def unit_params(unit: UnitSpec, params) -> Params:
    """``params`` as the unit's Params: None (the defaults), a dict of Python values or strings
    (checked as typed on the command line) or the unit's Params object; ParamError else."""
    if params is None:
        return unit.params()
    if isinstance(params, unit.params):
        return params
    if isinstance(params, dict):
        return unit.make_params({k: _fmt(v) for k, v in params.items()})
    raise ParamError(f"{unit.name}: params must be None, a dict or {unit.params.__name__}, "
                     f"got {type(params).__name__}")


def header(unit_name: str, params: Params) -> str:
    vals = " ".join(f"{k}={_fmt(v)}" for k, v in params.keyed().items()) or "(none)"
    return f"// tcgen {__version__}: unit {unit_name}; params {vals}\n"


def _fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass(frozen=True)
class Size:
    """A unit's estimated size at some params: ``cells`` (the family's formula,
    ``UnitSpec.estimate``; None if it declares none), the signature's ``input_bits`` and its
    widest port ``(name, bits)`` (exact, read from the unelaborated component)."""
    unit: str
    params: Params
    cells: int | None
    input_bits: int
    widest: tuple[str, int] | None

    @property
    def synth_seconds(self) -> float | None:
        return None if self.cells is None else self.cells * SYNTH_S_PER_CELL

    @property
    def synth_gb(self) -> float | None:
        return None if self.cells is None else self.cells * SYNTH_BYTES_PER_CELL / 1e9

    @property
    def emittable(self) -> bool:
        return dedup.emittable(self.input_bits, self.widest)

    def text(self) -> str:
        """``estimated 44,040,192 cells (flat synthesis ~660 GB, ~22 h; flat generation
        ~6.1 h), 786,439 input bits (widest port req__payload: 655,363)``"""
        parts = []
        if self.cells is not None:
            parts.append(f"estimated {self.cells:,} cells (flat synthesis ~{_gb(self.synth_gb)},"
                         f" ~{_dur(self.synth_seconds)}; flat generation "
                         f"~{_dur(self.cells * FLAT_GEN_S_PER_CELL)})")
        if self.widest is not None:
            parts.append(f"{self.input_bits:,} input bits (widest port {self.widest[0]}: "
                         f"{self.widest[1]:,})")
        return ", ".join(parts)

    def describe(self) -> str:
        """``bmma_array m=64 n=64 k=4096 ...``: the unit and its keyed parameters."""
        vals = " ".join(f"{k}={_fmt(v)}" for k, v in self.params.keyed().items())
        return f"{self.unit} {vals}".strip()


def _gb(x: float) -> str:
    return f"{x:.2g} GB" if x < 10 else f"{x:,.0f} GB"


def _dur(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:,.0f} days"


def estimate(unit: UnitSpec | str, params: Params | None = None, *,
             ports: bool = True) -> Size:
    """The :class:`Size` of ``unit`` at ``params`` (default: its defaults).  Cheap: the cells
    come from the family's formula, the port bits from the component's signature (constructed,
    never elaborated: a few ms to ~60 ms for the largest datapaths); ``ports=False`` skips the
    latter (``input_bits`` 0)."""
    unit = get_unit(unit) if isinstance(unit, str) else unit
    params = params if params is not None else unit.params()
    if isinstance(params, CutPoints) and params.cuts == AUTO:   # sized with every cut
        params = params.with_cuts(name for name, _ in params.cut_points())
    n_in, widest = dedup.port_bits(unit.interface(params)) if ports else (0, None)
    return Size(unit.name, params, unit.estimate_cells(params), n_in, widest)


def max_cells() -> int:
    """The size limit: :data:`MAX_CELLS`, or ``$TCGEN_MAX_CELLS`` (a positive integer)."""
    text = os.environ.get(ENV_MAX_CELLS)
    if text is None or text == "":
        return MAX_CELLS
    t = text.replace("_", "").replace(",", "")
    if not (t.isascii() and t.isdigit()) or int(t) < 1:
        raise UsageError(f"{ENV_MAX_CELLS} must be a positive integer (cells), got {text!r}")
    return int(t)


def forced() -> bool:
    """``$TCGEN_FORCE`` is set to 1 (or true, yes, on): the size limit is not applied."""
    return os.environ.get(ENV_FORCE, "").strip().lower() in ("1", "true", "yes", "on")


def check_size(unit: UnitSpec | str, params: Params | None = None, *,
               force: bool = False, ports: bool = True) -> Size:
    """Refuse ``unit`` at ``params`` before anything is elaborated if it cannot be built
    (:class:`~tcgen.hw.params.ParamError`, one line stating the estimate and the limit):

    * a module Amaranth cannot emit (more than 65534 input bits, or a port wider than 65536:
      :func:`tcgen.hw.dedup.check_port_bits`, checked here on the top first): never overridable;
    * more estimated cells than :func:`max_cells`, unless ``force`` or ``$TCGEN_FORCE=1``.

    ``ports=False`` checks the cells only (a sweep spec's many points; the port bound is
    checked again when a point is generated).  Returns the :class:`Size`."""
    size = estimate(unit, params, ports=ports)
    if not size.emittable:
        raise ParamError(f"{size.describe()}: {size.text()}; Amaranth can emit at most "
                         f"{dedup.MAX_INPUT_BITS:,} input bits (clock and reset included) and "
                         f"{dedup.MAX_PORT_BITS:,} bits per port in one module: choose smaller "
                         f"parameters")
    limit = max_cells()
    if size.cells is not None and size.cells > limit and not (force or forced()):
        raise ParamError(f"{size.describe()}: {size.text()}; that is over the limit of "
                         f"{limit:,} estimated cells: choose smaller parameters, raise the limit "
                         f"({ENV_MAX_CELLS}=N) or override it (--force, or {ENV_FORCE}=1)")
    return size


def verilog(unit_name: str, params: Params | None = None, top: str | None = None, *,
            flat: bool = False, force: bool = False) -> str:
    """Verilog text of ``unit_name`` at ``params`` with top module ``top`` (default: unit name).

    By default identical sub-components are emitted once, as one module each
    (``<top>__<Class>_<hash>``), and instantiated; ``flat=True`` elaborates every instance in
    place, as one Amaranth hierarchy (tcgen.hw.dedup).  The two are functionally equal.

    The configuration's size is checked first (:func:`check_size`; ``force`` lifts the cell
    limit).  Raises :class:`~tcgen.errors.UsageError` for an unknown unit and
    :class:`~tcgen.hw.params.ParamError` for a ``top`` that cannot name a module or a
    configuration over the size limit."""
    unit = get_unit(unit_name)
    top = check_module_name(unit.name if top is None else top)
    params = params if params is not None else unit.params()
    if isinstance(params, CutPoints):
        params.enabled()          # cuts=auto: a ParamError before any component is built
    check_size(unit, params, force=force)
    return component_verilog(unit.component(params), top, header(unit.name, params), flat=flat)
