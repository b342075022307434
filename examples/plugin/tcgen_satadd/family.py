"""The family's declaration: the ``tcgen.families`` entry point names ``UNITS``."""
from __future__ import annotations

import numpy as np

from tcgen.hw.spec import UnitSpec, int_add_cells

from .model import sat_add
from .params import SatAddParams
from .rtl import SatAdd


def _workload(p, rng, n: int) -> dict[str, np.ndarray]:
    """Default stimulus (tests, activity-annotated power): uniform operands."""
    hi = 1 << p.width
    return {"a": rng.integers(0, hi, n, dtype=np.uint64, endpoint=False),
            "b": rng.integers(0, hi, n, dtype=np.uint64, endpoint=False)}


def _estimate(p) -> float:
    """Standard cells after flat synthesis on osu018 (a cheap formula: tcgen refuses a
    configuration over its size limit before elaborating it): the adder plus the clamp."""
    return int_add_cells(p.width + 1) + 2.0 * p.width


UNITS = (
    UnitSpec(
        name="sat_add", family="satadd",
        summary="saturating integer adder (example plug-in family)",
        params=SatAddParams, build=SatAdd, model=sat_add,
        ops_per_cycle=lambda p: 1.0, ops_unit="add",
        workload=_workload, estimate=_estimate),
)
