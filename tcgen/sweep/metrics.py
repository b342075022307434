"""Flat metric keys of a sweep point, in the style of OpenROAD's METRICS2.1
(``<stage>__<metric>__<unit>``), each read from the result of :func:`tcgen.measure.measure`.

The table is the documentation: docs/sweep.md is generated from it (``describe()``).
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["METRICS", "NOISE_METRICS", "ALL_METRICS", "DEFAULT_METRICS", "flatten", "describe",
           "describe_noise"]


def _get(*path: str) -> Callable[[dict], Any]:
    def read(r: dict):
        x: Any = r
        for p in path:
            if not isinstance(x, dict) or x.get(p) is None:
                return None
            x = x[p]
        return float(x) if isinstance(x, (bool, int, float)) else x
    return read


#: key -> (what it is, the measure() field it comes from, reader)
METRICS: dict[str, tuple[str, str, Callable[[dict], Any]]] = {
    "synth__area__um2": ("cell area after synthesis and mapping", "area_um2", _get("area_um2")),
    "synth__cells__count": ("mapped cells", "cell_count", _get("cell_count")),
    "timing__setup__ws": ("worst setup slack at the clock target (ns; negative: misses it)",
                          "slack_ns", _get("slack_ns")),
    "timing__crit_path__ns": ("critical path delay (ns)", "crit_path_ns",
                              _get("crit_path_ns")),
    "timing__fmax__mhz": ("1 / critical path (MHz)", "fmax_mhz", _get("fmax_mhz")),
    "timing__meets__flag": ("1 if the clock target is met, else 0", "meets_timing",
                            _get("meets_timing")),
    "power__total__mw": ("total power at the clock target (mW)", "power_mw.total",
                         _get("power_mw", "total")),
    "power__internal__mw": ("internal power (mW)", "power_mw.internal",
                            _get("power_mw", "internal")),
    "power__switching__mw": ("switching power (mW)", "power_mw.switching",
                             _get("power_mw", "switching")),
    "power__leakage__mw": ("leakage power (mW)", "power_mw.leakage",
                           _get("power_mw", "leakage")),
    "power__total_fmax__mw": ("total power at fmax (mW)", "power_mw_at_fmax",
                              _get("power_mw_at_fmax")),
    "energy__per_op__pj": ("energy per operation at the clock target (pJ)",
                           "energy_pj_per_op", _get("energy_pj_per_op")),
    "energy__per_op_fmax__pj": ("energy per operation at fmax (pJ)",
                                "energy_pj_per_op_fmax", _get("energy_pj_per_op_fmax")),
    "perf__ops_per_cycle__count": ("operations per cycle (the unit's ops_per_cycle)",
                                   "ops_per_cycle", _get("ops_per_cycle")),
    "perf__throughput__gops": ("operations per second at the clock target (G/s)", "gops",
                               _get("gops")),
    "perf__throughput_fmax__gops": ("operations per second at fmax (G/s)", "gops_fmax",
                                    _get("gops_fmax")),
    "perf__per_watt__gops_per_w": ("throughput per watt at the clock target", "gops_per_w",
                                   _get("gops_per_w")),
    "perf__per_area__gops_per_mm2": ("throughput per mm² at the clock target",
                                     "gops_per_mm2", _get("gops_per_mm2")),
    "perf__per_area_fmax__gops_per_mm2": ("throughput per mm² at fmax", "gops_per_mm2_fmax",
                                          _get("gops_per_mm2_fmax")),
    "activity__toggle_mean__rate": ("mean toggle rate per net per cycle (sim activity)",
                                    "sim.mean_toggle_rate", _get("sim", "mean_toggle_rate")),
    "activity__toggle_inputs__rate": ("mean toggle rate per input per cycle (sim activity)",
                                      "sim.input_toggle_rate", _get("sim", "input_toggle_rate")),
    "power__glitch__share": ("share of dynamic power from glitches: 1 - zero-delay / timed "
                             "(sim-timed activity; docs/ppa.md)", "sim.timed.glitch_share",
                             _get("sim", "timed", "glitch_share")),
    "energy__per_op_zero_delay__pj": ("energy per operation from the zero-delay activity of the "
                                      "same run (sim-timed activity)",
                                      "energy_pj_per_op_zero_delay",
                                      _get("energy_pj_per_op_zero_delay")),
    "activity__timed_over_zero__ratio": ("transitions counted with delays / without "
                                         "(sim-timed activity)",
                                         "sim.timed.toggles_timed_over_zero_delay",
                                         _get("sim", "timed", "toggles_timed_over_zero_delay")),
    "activity__late__share": ("share of the timed transitions that arrive after their cycle's "
                              "end (sim-timed activity; a design that misses the clock)",
                              "sim.timed.late_share", _get("sim", "timed", "late_share")),
    "runtime__flow__s": ("seconds the flow took for this point when first measured",
                         "runtime_s.total_s", _get("runtime_s", "total_s")),
    "arith__gates__count": ("two-input gates of the unit's compressor trees and final adders (the "
                            "adders read as ripple-carry; tcgen.hw.intarith.adder_census)",
                            "census.gates", _get("census", "gates")),
    "arith__tree_gates__count": ("two-input gates of the compressor trees alone",
                                 "census.tree_gates", _get("census", "tree_gates")),
    "arith__bits_in__count": ("bits the compressor trees add (n; constant bits included)",
                              "census.bits_in", _get("census", "bits_in")),
    "arith__bound_fa_ha__count": ("5n - 3m: the gates full and half adders need at most for n "
                                  "bits into m (Dadda's construction)", "census.bound_fa_ha",
                                  _get("census", "bound_fa_ha")),
    "arith__bound_gkl__count": ("4.5n - 2m: the Goncharov-Kulikov-Levtsov bound (STACS 2026) "
                                "for n bits into m", "census.bound_gkl",
                                _get("census", "bound_gkl")),
    "pipe__cuts__names": ("the cut points `cuts=auto` chose for the clock ('+'-joined; empty: "
                          "none; docs/pipelining.md)", "pipelining.cuts",
                          _get("pipelining", "cuts")),
    "pipe__latency__cycles": ("the latency of the cut set `cuts=auto` chose (cycles)",
                              "pipelining.latency", _get("pipelining", "latency")),
    "pipe__registers__bits": ("flip-flops of the design `cuts=auto` chose",
                              "pipelining.registers", _get("pipelining", "registers")),
    "pipe__search__kind": ("what the chosen cuts are known to be: exact, monotone or budget "
                           "(docs/pipelining.md)", "pipelining.search",
                           _get("pipelining", "search")),
    "pipe__designs__count": ("designs measured to choose the cuts", "pipelining.designs",
                             lambda r: (float(len(r["pipelining"]["designs"]))
                                        if isinstance(r.get("pipelining"), dict) else None)),
}

#: the figures whose noise band a point with ``noise = N`` carries: metric -> (its field in
#: the flow's band, tcgen.synth.noise.BAND_FIELDS)
_BANDED = {"synth__area__um2": "area_um2", "synth__cells__count": "cell_count",
           "timing__crit_path__ns": "crit_path_ns", "timing__fmax__mhz": "fmax_mhz",
           "power__total__mw": "power_mw", "energy__per_op__pj": "energy_pj_per_op"}
_STATS = {"min": "smallest over the unperturbed and the N perturbed runs",
          "median": "median over the N + 1 runs",
          "max": "largest over the N + 1 runs",
          "spread": "(max - min) / median: the relative noise band"}


def _band(field: str, stat: str) -> Callable[[dict], Any]:
    def read(r: dict):
        nz = r.get("noise")
        if not isinstance(nz, dict):
            return None
        v = (nz.get("band") or {}).get(field, {}).get(stat)
        return None if v is None else float(v)
    return read


#: the noise columns of a point measured with ``noise = N`` (docs/sweep.md, docs/ppa.md
#: "Noise"): ``<metric>_min`` / ``_median`` / ``_max`` / ``_spread`` over the unperturbed run
#: and N semantically neutral perturbations, and the number of runs
NOISE_METRICS: dict[str, tuple[str, str, Callable[[dict], Any]]] = {
    "noise__runs__count": ("runs of the noise band: the unperturbed design + N perturbations",
                           "noise.runs", _get("noise", "runs")),
    **{f"{k}_{stat}": (f"{METRICS[k][0]}: {what}", f"noise.band.{field}.{stat}",
                       _band(field, stat))
       for k, field in _BANDED.items() for stat, what in _STATS.items()},
}

#: every column name a spec may use
ALL_METRICS = {**METRICS, **NOISE_METRICS}

DEFAULT_METRICS = ("synth__area__um2", "timing__fmax__mhz", "timing__setup__ws",
                   "power__total__mw", "energy__per_op__pj")


def flatten(result: dict) -> dict[str, Any]:
    """Every metric of a :func:`~tcgen.measure.measure` result (None where it has none), and
    the noise columns when the result has a noise band."""
    out = {k: read(result) for k, (_, _, read) in METRICS.items()}
    if isinstance(result.get("noise"), dict):
        out.update({k: read(result) for k, (_, _, read) in NOISE_METRICS.items()})
    return out


def describe() -> str:
    """The metric table as markdown (docs/sweep.md)."""
    rows = ["| key | what | from `measure()` |", "|---|---|---|"]
    rows += [f"| `{k}` | {what} | `{src}` |" for k, (what, src, _) in METRICS.items()]
    return "\n".join(rows)


def describe_noise() -> str:
    """The noise columns as markdown (docs/sweep.md)."""
    rows = ["| key | what | from `measure()` |", "|---|---|---|"]
    rows += [f"| `{k}` | {what} | `{src}` |" for k, (what, src, _) in NOISE_METRICS.items()]
    return "\n".join(rows)
