"""Design-space sweeps (``tcgen sweep``, docs/sweep.md): a TOML spec of units, parameter grids,
liberties, clock targets and activity modes, expanded into points; each point measured once
through :func:`tcgen.measure.measure` and cached by content key; results as CSV, JSON, a
markdown table and plots, with derived columns computed from the spec.

    from tcgen.sweep import load, run, write_outputs
    result = run(load("studies/example.toml"), jobs=2)
    write_outputs(result, "reports/example", "tcgen sweep studies/example.toml")
"""
from .engine import EXECUTORS, SweepResult, default_cache, measure_point, run
from .metrics import ALL_METRICS, DEFAULT_METRICS, METRICS, NOISE_METRICS, flatten
from .output import write_outputs
from .spec import Activity, Point, Spec, SpecError, load, parse

__all__ = ["load", "parse", "run", "write_outputs", "Spec", "SpecError", "Point", "Activity",
           "SweepResult", "METRICS", "NOISE_METRICS", "ALL_METRICS", "DEFAULT_METRICS",
           "flatten", "measure_point", "EXECUTORS", "default_cache"]
