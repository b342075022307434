"""Measure one unit: unit -> Verilog (+ workload for sim power) -> the PPA flow.

    from tcgen.measure import measure
    r = measure("fp_mul", {"fmt": "fp16"}, liberty="osu018", clock_ns=10.0)
    r["area_um2"], r["fmax_mhz"], r["power_mw"]["total"], r["energy_pj_per_op"]

The flow (:func:`tcgen.synth.ppa.measure_verilog`) knows nothing of units; this adds what the
unit knows: its Verilog at the given params, its default workload (``activity="sim"``), its
ops per cycle, and the ``tcgen ppa`` command that reproduces the result.  See docs/ppa.md for
every key of the result.
"""
from __future__ import annotations

import logging
import shlex
import time

import numpy as np

from tcgen.hw.intarith import adder_census
from tcgen.hw.params import ParamError
from tcgen.synth.liberty import KNOWN, resolve
from tcgen.synth.ppa import (SIM_ACTIVITIES, check_fraig, check_hierarchical, check_noise,
                             check_options, check_simulator, measure_verilog)

from .generate import unit_params, verilog
from .pipelining import resolve_cuts
from .registry import get_unit

log = logging.getLogger("tcgen.flow")

__all__ = ["measure"]


def measure(unit_name, params=None, *, liberty="osu018", clock_ns=10.0, activity="vectorless",
            toggle_rate=0.1, workload_cycles=2000, seed=1, cache=True,
            simulator="auto", workload=None, hierarchical=False, design=None,
            fraig_conflicts=None, noise=0, stimulus=None) -> dict:
    """Area / timing / power of ``unit_name`` at ``params`` (None = defaults, a dict of values or
    strings, or the unit's Params object).  ``activity``: ``vectorless``, ``sim`` (zero-delay
    gate-level simulation of the workload) or ``sim-timed`` (with the cells' delays: glitches
    counted; docs/ppa.md).  ``simulator``: the gate-level simulator of activity ``sim``
    (``auto``, ``icarus``, ``verilator``) or ``sim-timed`` (``auto``, ``icarus``; docs/ppa.md).  ``workload``: one of the unit's
    named workloads (its stimulus for ``sim``, and its ops per cycle for every activity); None =
    the default workload.  ``hierarchical``: synthesize with hierarchy kept (each distinct
    module once; vectorless activity only; docs/ppa.md).  ``design``: ``(verilog_text, label)``
    of another implementation standing in for the unit -- top module named like the unit, its
    ports -- measured with the unit's workload and ops per cycle (the peers benchmark,
    scripts/peers.py); ``label`` replaces the command in the result.  ``fraig_conflicts``: the
    conflict limit of ABC's SAT sweeping (None: Yosys's own ABC script; docs/ppa.md).
    ``noise``: also measure the design under that many semantically neutral perturbations
    and add the band of its figures as ``noise`` (docs/ppa.md, "Noise").
    ``stimulus``: ``(ports, label)`` -- a fixed cycle-by-cycle stimulus ({input port: one value
    per cycle}, e.g. a whole layer's request stream, tcgen.layers) in place of the workload's
    random one (activity ``sim`` or ``sim-timed`` only; ``workload_cycles`` and ``seed`` are then unused, the
    cycles being the stimulus's length); ``label`` names it in the result (``workload.source``)."""
    noise = check_noise(noise)
    unit = get_unit(unit_name)
    params = unit_params(unit, params)
    clock_ns, toggle_rate, workload_cycles, seed = check_options(
        clock_ns, activity, toggle_rate, workload_cycles, seed)
    check_hierarchical(hierarchical, activity)
    check_fraig(fraig_conflicts)
    lib = resolve(liberty)
    asked = params
    if design is None:             # cuts=auto: the cheapest cut set for this clock first
        params, planned = resolve_cuts(unit.name, params, liberty=lib, clock_ns=clock_ns,
                                       cache=cache, fraig_conflicts=fraig_conflicts)
    named = None
    if workload is not None:
        if not isinstance(workload, str):
            raise ParamError(f"ppa: workload must be a name, got {type(workload).__name__}")
        named = unit.named_workload(workload, params)
    ops = unit.ops_per_cycle if named is None or named.ops_per_cycle is None \
        else named.ops_per_cycle
    stim = None
    fixed = stimulus
    stimulus = unit.workload if named is None else named.stimulus
    if fixed is not None:
        fixed = _fixed_stimulus(fixed, activity, workload)
    if activity in SIM_ACTIVITIES:
        check_simulator(lib, simulator, activity)
        if fixed is not None:
            stim = fixed[0]
            workload_cycles = len(next(iter(stim.values())))
        elif stimulus is None:
            raise ParamError(f"ppa: unit {unit.name} declares no workload; sim power needs one "
                             "(use activity vectorless)")
        else:
            stim = stimulus(params, np.random.default_rng(seed), workload_cycles)
    t0 = time.monotonic()
    if design is not None:
        text, label = design
        if not isinstance(text, str) or f"module {unit.name}(" not in text:
            raise ParamError(f"ppa: the design standing in for {unit.name} must be Verilog text "
                             f"with a module named {unit.name}")
        census = None
    else:
        est = unit.estimate_cells(params)
        log.info("elaborating %s %s%s", unit.name, params.key(),
                 "" if est is None else f" (estimated {est:,} cells)")
        with adder_census() as census:
            text = verilog(unit.name, params)
    t_gen = time.monotonic() - t0
    log.info("Verilog: %s lines (%.1f s)", f"{text.count(chr(10)):,}", t_gen)
    defaults = unit.params().as_dict()
    changed = {k: v for k, v in asked.as_dict().items() if defaults.get(k) != v}
    cmd = ["tcgen", "ppa", unit.name]
    for k, v in changed.items():
        cmd += ["-p", f"{k}={_fmt(v)}"]
    if workload is not None:
        cmd += ["--workload", workload]
    cmd += ["--liberty", lib.name if lib.name in KNOWN else str(lib.source),
            "--clock-ns", f"{clock_ns:g}", "--activity", activity]
    if activity == "vectorless":
        cmd += ["--toggle-rate", f"{toggle_rate:g}"]
    else:
        if fixed is None:
            cmd += ["--cycles", str(workload_cycles), "--seed", str(seed)]
        if simulator != "auto":
            cmd += ["--simulator", simulator]
    if hierarchical:
        cmd += ["--hierarchical"]
    if fraig_conflicts is not None:
        cmd += ["--fraig-conflicts", str(fraig_conflicts)]
    if noise:
        cmd += ["--noise", str(noise)]
    res = measure_verilog(text, unit.name, liberty=lib, clock_ns=clock_ns, activity=activity,
                          toggle_rate=toggle_rate, workload=stim,
                          workload_cycles=workload_cycles,
                          ops_per_cycle=float(ops(params)),
                          ops_unit=unit.ops_unit, cache=cache, simulator=simulator,
                          hierarchical=hierarchical, fraig_conflicts=fraig_conflicts,
                          noise=noise)
    out = {"unit": unit.name, "params": {k: v for k, v in params.as_dict().items()}}
    out.update(res)
    if design is None and planned is not None:
        out["pipelining"] = planned.as_dict()
        out["latency"] = planned.latency
    if census and census["compressors"]:
        n, mo = census["bits_in"], census["bits_out"]
        out["census"] = dict(census, bound_fa_ha=5 * n - 3 * mo, bound_gkl=4.5 * n - 2 * mo)
    if workload is not None:
        out["workload_name"] = workload
    if activity in SIM_ACTIVITIES and fixed is not None:
        out["workload"] = dict(out.get("workload", {}), source=fixed[1])
    elif activity in SIM_ACTIVITIES:
        src = f"{unit.name}.workload" if workload is None else \
            f"{unit.name}.workloads[{workload!r}].stimulus"
        out["workload"] = dict(out.get("workload", {}), seed=seed,
                               source=f"{src}(params, numpy.random.default_rng({seed}), "
                                      f"{workload_cycles})")
    out["command"] = " ".join(shlex.quote(c) for c in cmd) if design is None else design[1]
    out["runtime_s"] = dict(out["runtime_s"], generate_verilog_s=round(t_gen, 3))
    return out


def _fixed_stimulus(stimulus, activity: str, workload) -> tuple[dict, str]:
    """A fixed stimulus ``(ports, label)`` checked: activity sim, no named workload beside it,
    every port the same number of cycles (ParamError otherwise)."""
    if activity not in SIM_ACTIVITIES:
        raise ParamError("ppa: a fixed stimulus needs activity sim or sim-timed")
    if workload is not None:
        raise ParamError("ppa: give a named workload or a fixed stimulus, not both")
    if not (isinstance(stimulus, tuple) and len(stimulus) == 2 and isinstance(stimulus[0], dict)
            and stimulus[0] and isinstance(stimulus[1], str)):
        raise ParamError("ppa: stimulus must be ({port: values per cycle}, label)")
    lens = {len(np.asarray(v)) for v in stimulus[0].values()}
    if len(lens) != 1:
        raise ParamError(f"ppa: stimulus ports have different lengths {sorted(lens)}")
    return stimulus


def _fmt(v):
    return ("true" if v else "false") if isinstance(v, bool) else str(v)
