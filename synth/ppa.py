"""``measure_verilog()``: area, timing and power of a Verilog design on one liberty
(docs/ppa.md).

    from tcgen.synth.ppa import measure_verilog
    r = measure_verilog(text, "top", liberty="osu018", clock_ns=10.0)
    r["area_um2"], r["fmax_mhz"], r["power_mw"]["total"], r["energy_pj_per_op"]

Steps: Yosys (tcgen.synth.yosys) -> OpenSTA timing and power (tcgen.synth.sta), with activity either
``vectorless`` (one global toggle rate per cycle) or ``sim`` (gate-level simulation of a
stimulus, synth.activity).  ``hierarchical=True`` synthesizes with hierarchy kept (each
distinct module mapped once, totals summed over the instance tree) and runs OpenSTA on the
hierarchical netlist: minutes instead of hours for an array of identical units; simulated
activity reads the mapped netlist flattened (synth.activity.flatten_netlist).  The flow knows nothing of units: ``tcgen.measure.measure`` turns a
unit into its Verilog, workload and ops per cycle and calls this.  Results are cached under ``build/ppa/``
keyed by the Verilog hash, the liberty hash, the options and the flow's own source hash, so a
measured configuration costs nothing the second time.  The cache (``TCGEN_PPA_CACHE`` moves it)
is safe under concurrent use and crashes: each result key and each synthesis key is computed
under an exclusive file lock by one process at a time (a process that waited reads the other's
entry), entries appear whole or not at all (atomic renames; the synthesis folder is filled in a
temporary folder of its own and ``synth.json`` is written last), an entry that does not parse
or names another key is treated as absent and measured again, and a process killed at any
point (``kill -9``: the kernel drops its locks) leaves at most a stale temporary folder that
the next holder of the lock removes (docs/sweep.md, "Crashes and concurrent use").
Synthesis (``build/ppa/synth/``) is keyed by the sources of the synthesis stage only
(``flow_hash("synth")``: yosys.py, liberty.py, tools.py and the Yosys version), so a change to
timing, power or simulation code re-runs those steps, not Yosys.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import numbers
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from . import activity as act
from . import noise as _noise
from . import sta
from .liberty import BUILD, Liberty, locked, resolve, write_atomic
from .tools import FlowInputError, ToolError, versions

#: progress of a measurement, one INFO record per stage ("yosys: ...", "opensta: ..."); silent
#: unless a handler is attached (``tcgen ppa`` attaches one on a terminal)
log = logging.getLogger("tcgen.flow")
from .yosys import (SynthesisError, SynthResult, check_fraig_conflicts, module_names,
                    synthesize)

__all__ = ["measure_verilog", "synthesized", "check_options", "check_simulator", "check_hierarchical",
           "check_fraig", "check_noise",
           "ACTIVITIES", "SIMULATORS",
           "SynthesisError",
           "ToolError", "flow_hash"]

ACTIVITIES = ("vectorless", "sim", "sim-timed")
#: the activities from gate-level simulation of a workload: zero-delay (``sim``, functional
#: transitions only) and with the cells' delays (``sim-timed``, glitches counted)
SIM_ACTIVITIES = ("sim", "sim-timed")
SIMULATORS = act.SIMULATORS         # gate-level engines of activity sim (auto: levelized)
TRACE_TOLERANCE = 0.02      # per-pin sum vs report_power at uniform activity (3-digit trace)


# The synthesis stage's sources.  ``_synth`` below (in this file, outside the set) defines the
# cached synth.json format: a change to that format must also change a file listed here (or
# bump yosys.py's SynthResult), or old cache entries would be read in the new format.
SYNTH_STAGE_FILES = ("liberty.py", "tools.py", "yosys.py")
# Modules of tcgen.synth that are not part of the PPA flow (they shape no measurement), so an
# edit to them keeps every cached result.  noise.py shapes the *texts* of perturbed runs, and
# each of those is keyed by its own sha256 (and a fraig perturbation by its limit): an edit to
# it re-keys exactly the perturbed runs it changes, and no unperturbed one.
NOT_FLOW_FILES = ("formal.py", "stages.py", "noise.py")


def flow_hash(stage: str = "all") -> str:
    """Hash of the flow's sources and tool versions: ``"all"`` (every module; keys results) or ``"synth"`` (the synthesis stage's modules and Yosys; keys netlists)."""
    if stage not in ("all", "synth"):
        raise ValueError(f"flow_hash: stage must be 'all' or 'synth', got {stage!r}")
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        if p.name in NOT_FLOW_FILES or (stage == "synth" and p.name not in SYNTH_STAGE_FILES):
            continue
        h.update(p.name.encode())
        h.update(p.read_bytes())
    for tool, v in sorted(versions().items()):
        if stage == "synth" and tool != "yosys":
            continue
        h.update(f"{tool}={v}".encode())
    return h.hexdigest()[:16]


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


# -- argument checks -------------------------------------------------------------------------
def _check_number(name: str, value, lo=None, hi=None, lo_open=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise FlowInputError(f"ppa: {name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise FlowInputError(f"ppa: {name} must be finite, got {value!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise FlowInputError(f"ppa: {name} must be {'>' if lo_open else '>='} {lo:g}, got {value!r}")
    if hi is not None and v > hi:
        raise FlowInputError(f"ppa: {name} must be <= {hi:g}, got {value!r}")
    return v


#: the clock periods the flow takes, in ns: 1 ps (1 THz) to 1 ms.  Outside, the figures per op
#: stop being numbers (a 1e-300 ns clock makes the power per op overflow to infinity).
CLOCK_NS_RANGE = (1e-3, 1e6)


def check_options(clock_ns, activity, toggle_rate, workload_cycles, seed):
    clock_ns = _check_number("clock_ns", clock_ns, *CLOCK_NS_RANGE)
    if activity not in ACTIVITIES:
        raise FlowInputError(f"ppa: activity must be one of {', '.join(ACTIVITIES)}, "
                         f"got {activity!r}")
    toggle_rate = _check_number("toggle_rate", toggle_rate, lo=0.0, hi=2.0)
    if isinstance(workload_cycles, bool) or not isinstance(workload_cycles, numbers.Integral) \
            or not 16 <= workload_cycles <= 1_000_000:
        raise FlowInputError(f"ppa: workload_cycles must be an integer in 16..1000000, "
                         f"got {workload_cycles!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise FlowInputError(f"ppa: seed must be a non-negative integer, got {seed!r}")
    return clock_ns, toggle_rate, int(workload_cycles), int(seed)


def check_simulator(lib: Liberty, simulator: str = "auto", activity: str = "sim"):
    """FlowInputError unless activity ``sim`` / ``sim-timed`` can run on ``lib`` with
    ``simulator``: Icarus needs the liberty's Verilog cell models, Verilator a Verilator >= 5.36
    (zero-delay only); the levelized engine (``auto``) takes the cells' functions from the
    liberty itself, and for ``sim-timed`` drives the timed engine (tcgen.synth.timedsim)."""
    act.choose_simulator(simulator, lib, timed=activity == "sim-timed")


# -- the design-level entry point ------------------------------------------------------------------
def check_hierarchical(hierarchical, activity: str) -> bool:
    """FlowInputError unless ``hierarchical`` is a bool.  Every activity takes it: the
    gate-level simulation of ``sim``/``sim-timed`` reads the hierarchical netlist flattened
    (:func:`synth.activity.flatten_netlist`)."""
    if not isinstance(hierarchical, bool):
        raise FlowInputError(f"ppa: hierarchical must be true or false, got {hierarchical!r}")
    return hierarchical


def measure_verilog(verilog_text: str, top: str, *, liberty="osu018", clock_ns=10.0,
                    activity="vectorless", toggle_rate=0.1, workload=None,
                    workload_cycles=None, ops_per_cycle=None, ops_unit="op",
                    cache=True, simulator="auto", hierarchical=False,
                    fraig_conflicts=None, noise=0) -> dict:
    """:func:`measure` for any Verilog text (``workload``: {input port: n values} for ``sim``;
    ``simulator``: the gate-level simulator of ``sim``, one of :data:`SIMULATORS`;
    ``hierarchical``: synthesize with hierarchy kept (simulated activity on the mapped netlist
    flattened); ``fraig_conflicts``:
    the conflict limit of ABC's SAT sweeping, None for Yosys's own ABC script, docs/ppa.md;
    ``noise``: also measure the design under that many semantically neutral perturbations
    (:mod:`tcgen.synth.noise`) and add their band as ``noise``)."""
    noise = check_noise(noise)
    check_hierarchical(hierarchical, activity)
    check_fraig(fraig_conflicts)
    if noise:
        return _with_noise(verilog_text, top, noise, dict(
            liberty=liberty, clock_ns=clock_ns, activity=activity, toggle_rate=toggle_rate,
            workload=workload, workload_cycles=workload_cycles, ops_per_cycle=ops_per_cycle,
            ops_unit=ops_unit, cache=cache, simulator=simulator, hierarchical=hierarchical,
            fraig_conflicts=fraig_conflicts))
    n = workload_cycles
    if activity in SIM_ACTIVITIES:
        if workload is None:
            raise FlowInputError(f"ppa: activity {activity} needs a workload")
        lens = {len(np.asarray(v)) for v in workload.values()}
        if len(lens) != 1:
            raise FlowInputError(f"ppa: workload ports have different lengths {sorted(lens)}")
        n = lens.pop()
    clock_ns, toggle_rate, n_checked, _ = check_options(
        clock_ns, activity, toggle_rate, n if n is not None else 2000, 0)
    lib = resolve(liberty)
    if activity in SIM_ACTIVITIES:
        check_simulator(lib, simulator, activity)
    if not isinstance(verilog_text, str) or not verilog_text.strip():
        raise FlowInputError("ppa: the Verilog text is empty")
    if top not in module_names(verilog_text):
        raise FlowInputError(f"ppa: top module {top!r} is not in the Verilog")
    t_start = time.monotonic()
    flow = flow_hash()
    vsha = hashlib.sha256(verilog_text.encode()).hexdigest()
    synth_key = _synth_key(vsha, top, lib, clock_ns, hierarchical, fraig_conflicts)
    opts = {"activity": activity}
    if hierarchical:
        opts["hierarchical"] = True
    if fraig_conflicts is not None:
        opts["fraig_conflicts"] = fraig_conflicts
    stim_sha = None
    if activity == "vectorless":
        opts["toggle_rate"] = toggle_rate
    else:
        stim_sha = _stimulus_sha(workload)
        opts.update(stimulus=stim_sha, cycles=n, simulator=simulator)
    key = _sha({"synth": synth_key, "flow": flow, "clock_ns": clock_ns,
                "ops": [ops_per_cycle, ops_unit], **opts})[:24]     # per-op figures are stored in the result
    result_file = BUILD / "results" / f"{key}.json"
    res = _cached_result(result_file, key) if cache else None
    if res is not None:
        log.info("result cached (%s)", result_file.name)
        return res
    with locked(BUILD / "locks" / f"{key}.lock"):
        res = _cached_result(result_file, key) if cache else None
        if res is not None:            # another process measured it while we waited
            return res
        try:
            res = _run(verilog_text, top, lib, clock_ns, activity, toggle_rate, workload, n,
                       synth_key, key, cache, simulator, hierarchical, fraig_conflicts)
        except KeyboardInterrupt:      # Ctrl-C, SIGTERM: no half-written run folder
            shutil.rmtree(BUILD / "runs" / key, ignore_errors=True)
            raise
        res.update({
            "top": top,
            "liberty": lib.describe(),
            "clock_ns": clock_ns,
            "activity": activity,
            "verilog_sha256": vsha,
            "flow_hash": flow,
            "tools": versions(),
            "cache_key": key,
        })
        if activity == "vectorless":
            res["toggle_rate"] = toggle_rate
        else:
            res["workload"] = {"cycles": n, "sha256": stim_sha}
        if hierarchical:
            res["hierarchical"] = True
        if fraig_conflicts is not None:
            res["fraig_conflicts"] = fraig_conflicts
        _derive(res, ops_per_cycle, ops_unit)
        res["runtime_s"]["total_s"] = round(time.monotonic() - t_start, 3)
        res["cached"] = False
        write_atomic(result_file, json.dumps(res, indent=1, sort_keys=True))
        return res


def check_noise(noise) -> int:
    """FlowInputError unless ``noise`` is an integer in 0..MAX_NOISE (perturbed runs)."""
    try:
        return _noise.check_noise(noise)
    except ValueError as e:
        raise FlowInputError(f"ppa: {e}") from None


def _with_noise(text: str, top: str, n: int, kw: dict) -> dict:
    """The unperturbed result of ``text`` with ``noise``: the figures of each of ``n``
    perturbed runs (:func:`tcgen.synth.noise.schedule`, each measured by
    :func:`measure_verilog` through its caches) and their band over all ``n + 1`` runs."""
    t0 = time.monotonic()
    base = measure_verilog(text, top, **kw)
    results, runs = [base], [_run_summary(base, {"index": 0, "kind": "none", "seed": 0,
                                                 "what": "unperturbed"})]
    for p in _noise.schedule(text, n, kw["fraig_conflicts"]):
        r = measure_verilog(_noise.perturb(text, top, p), top, **dict(
            kw, fraig_conflicts=p.fraig_conflicts if p.kind == "fraig"
            else kw["fraig_conflicts"]))
        results.append(r)
        runs.append(_run_summary(r, p.as_dict()))
    out = dict(base)
    out["noise"] = {
        "n": n, "runs": n + 1,
        "distinct": len({(r["verilog_sha256"], r.get("fraig_conflicts")) for r in results}),
        "band": _noise.band(results),
        "perturbations": runs,
        "runtime_s": round(time.monotonic() - t0, 3),
        "method": "tcgen.synth.noise: the unperturbed design, then perturbations 1..n "
                  "(module order, an unused module prepended, declaration order, ABC's "
                  "&fraig conflict limit; docs/ppa.md, 'Noise')",
    }
    return out


def _run_summary(r: dict, what: dict) -> dict:
    return dict(what, **{k: read(r) for k, read in _noise.BAND_FIELDS.items()},
                verilog_sha256=r["verilog_sha256"], cache_key=r["cache_key"],
                cached=r.get("cached", False))


def _cached_result(path: Path, key: str) -> dict | None:
    """The cached result of ``key`` at ``path``, or None: absent, unreadable, not a JSON
    object, or naming another key (a truncated or foreign file is never used)."""
    try:
        res = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(res, dict) or res.get("cache_key") != key \
            or not isinstance(res.get("runtime_s"), dict):
        return None
    res["cached"] = True
    return res


def _int_text(v) -> str:
    """A stimulus value as text for the hash: decimal (the form every existing key was made
    with), or hex for a value whose decimal form Python refuses (over sys.int_info's
    str_digits_check_threshold limit, 4300 digits: a payload wider than ~14,000 bits)."""
    v = int(v)
    return str(v) if v.bit_length() <= _DECIMAL_BITS else "0x" + format(v, "x")


#: values up to this many bits hash in decimal (4300 decimal digits hold 14,284 bits)
_DECIMAL_BITS = 14_000


def _stimulus_sha(workload: dict) -> str:
    h = hashlib.sha256()
    for k in sorted(workload):
        h.update(k.encode())
        h.update(",".join(_int_text(v) for v in np.asarray(workload[k]).tolist()).encode())
    return h.hexdigest()


def _synth_key(vsha: str, top: str, lib: Liberty, clock_ns: float, hierarchical: bool,
               fraig_conflicts: int | None = None) -> str:
    skey = {"flow": flow_hash("synth"), "verilog": vsha, "top": top,
            "liberty": lib.sha256, "clock_ps": int(round(clock_ns * 1000))}
    if hierarchical:            # absent when flat: flat keys are what they were
        skey["flatten"] = False
    if fraig_conflicts is not None:     # likewise absent for Yosys's own ABC script
        skey["fraig_conflicts"] = fraig_conflicts
    return _sha(skey)[:24]


def synthesized(verilog_text: str, top: str, lib: Liberty, clock_ns: float, *,
                cache: bool = True, fraig_conflicts: int | None = None
                ) -> tuple[SynthResult, bool]:
    """The flat synthesis :func:`measure_verilog` uses for these inputs (the same cache entry):
    ``(SynthResult, cached)``.  For other analyses of the mapped netlist (synth.stages)."""
    check_fraig(fraig_conflicts)
    vsha = hashlib.sha256(verilog_text.encode()).hexdigest()
    key = _synth_key(vsha, top, lib, clock_ns, False, fraig_conflicts)
    return _synth(verilog_text, top, lib, clock_ns, key, cache,
                  fraig_conflicts=fraig_conflicts)


def check_fraig(fraig_conflicts) -> int | None:
    """FlowInputError unless ``fraig_conflicts`` is None (Yosys's own ABC script) or a
    conflict limit ABC takes (1..1,000,000)."""
    try:
        return check_fraig_conflicts(fraig_conflicts)
    except ValueError as e:
        raise FlowInputError(f"ppa: {e}") from None


def _synth(verilog_text, top, lib, clock_ns, synth_key, cache, flatten=True,
           fraig_conflicts=None) -> tuple[SynthResult, bool]:
    """The synthesis of ``synth_key``: read from ``synth/<key>/`` or made there, under the
    key's lock.  Yosys works in a temporary folder of its own (``<key>.tmp-*``: a Yosys left
    over from a killed process can never write into another's); its files are then moved into
    the entry one by one (each rename atomic: a reader of the old netlist keeps a whole file)
    and ``synth.json`` is written last, so an entry without a readable ``synth.json`` is
    absent.  ``<key>.tmp-*`` folders found under the lock are leftovers of a killed holder."""
    d = BUILD / "synth" / synth_key
    meta = d / "synth.json"
    with locked(BUILD / "locks" / f"synth-{synth_key}.lock"):
        if cache:
            hit = _cached_synth(d, meta)
            if hit is not None:
                log.info("yosys: synthesis cached (%s cells, %.1f um^2)", f"{hit.cell_count:,}",
                         hit.area_um2)
                return hit, True
        log.info("yosys: synthesis and ABC mapping onto %s (%s%s, %s lines of Verilog)", lib.name,
                 "flat" if flatten else "hierarchical",
                 "" if fraig_conflicts is None else f", &fraig -C {fraig_conflicts}",
                 f"{verilog_text.count(chr(10)):,}")
        d.parent.mkdir(parents=True, exist_ok=True)
        for stale in d.parent.glob(f"{synth_key}.tmp*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{synth_key}.tmp-", dir=d.parent))
        try:
            t0 = time.monotonic()
            r = synthesize(verilog_text, top, lib, clock_ns, tmp, flatten=flatten,
                           fraig_conflicts=fraig_conflicts)
            log.info("yosys: %s cells, %.1f um^2 (%.1f s)", f"{r.cell_count:,}", r.area_um2,
                     time.monotonic() - t0)
        except KeyboardInterrupt:      # Ctrl-C, SIGTERM: the entry stays as it was, no .tmp
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except ToolError as e:         # kept for the user as failed/<key>/ (the log the
            raise _keep_failed(tmp, synth_key, e) from None     # error names), no .tmp left
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            d.mkdir(exist_ok=True)
            if meta.exists():          # cache=False over an entry: it is absent while replaced
                meta.unlink()
            for f in sorted(tmp.iterdir()):
                if f.is_dir() and (d / f.name).is_dir():
                    shutil.rmtree(d / f.name)
                os.replace(f, d / f.name)
            r.netlist = d / "netlist.v"
            info = dict(r.__dict__, netlist=str(r.netlist))
            write_atomic(meta, json.dumps(info, indent=1, sort_keys=True))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return r, False


def _keep_failed(tmp: Path, synth_key: str, e: ToolError) -> ToolError:
    """A failed synthesis's work folder moved to ``failed/<key>/`` (replacing an older failure of
    the same key): the design, the script and the Yosys log stay where the error says, and no
    ``<key>.tmp-*`` folder is left.  Returns ``e`` with its paths pointing there."""
    kept = BUILD / "failed" / synth_key
    try:
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, kept)
    except OSError:                    # a full disk: nothing to keep, nothing left behind
        shutil.rmtree(tmp, ignore_errors=True)
        return e
    return type(e)(str(e).replace(str(tmp), str(kept)))


def _cached_synth(d: Path, meta: Path) -> SynthResult | None:
    """The synthesis entry in ``d``, or None if ``synth.json`` is missing, does not parse or
    its netlist is not there.  The netlist is taken from ``d`` (not the path recorded when the
    entry was made), so a cache that was moved stays usable."""
    try:
        info = json.loads(meta.read_text())
        info["netlist"] = d / Path(info["netlist"]).name
        r = SynthResult(**info)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return r if r.netlist.is_file() else None


def _run(verilog_text, top, lib, clock_ns, activity, toggle_rate, workload, n, synth_key, key,
         cache, simulator="auto", hierarchical=False, fraig_conflicts=None) -> dict:
    runtimes: dict = {}
    syn, hit = _synth(verilog_text, top, lib, clock_ns, synth_key, cache,
                      flatten=not hierarchical, fraig_conflicts=fraig_conflicts)
    runtimes.update({k: (0.0 if hit else v) for k, v in syn.runtime_s.items()})
    runtimes["synth_cached"] = hit
    work = BUILD / "runs" / key
    shutil.rmtree(work, ignore_errors=True)     # what a killed run may have left
    work.mkdir(parents=True, exist_ok=True)
    netlist = syn.netlist           # what OpenSTA and the gate-level simulation read
    if hierarchical and activity != "vectorless":
        # the same cells, one module: simulated and timed flat, area from the hierarchy
        netlist = act.flatten_netlist(syn.netlist, top, lib, work)
        modules = None
        nl = act.read_netlist(netlist, top)
    elif hierarchical:
        modules = act.read_modules(syn.netlist)
        if top not in modules:
            raise ToolError(f"netlist {syn.netlist} holds no module {top}")
        nl = modules[top]
    else:
        modules = None
        nl = act.read_netlist(syn.netlist, top)
    has_clk = "clk" in nl.ports and nl.ports["clk"][0] == "input"
    out = {
        "area_um2": syn.area_um2,
        "cell_count": syn.cell_count,
        "cells_by_type": syn.cells_by_type,
        "breakdown": syn.breakdown,
        "breakdown_source": syn.breakdown_source,
        "netlist": str(syn.netlist),
        "netlist_simulated": None if netlist == syn.netlist else str(netlist),
        "yosys_check_problems": syn.check_problems,
        "clocked": has_clk,
    }
    t0 = time.monotonic()
    if activity == "vectorless":
        log.info("opensta: timing and vectorless power (toggle rate %g)", toggle_rate)
        timing, power, _ = sta.timing_and_power(lib, syn.netlist, top, clock_ns, has_clk, work,
                                                toggle_rate=toggle_rate)
        runtimes["sta_s"] = round(time.monotonic() - t0, 3)
        out["power_mw"] = power
        out["power_method"] = (f"vectorless: OpenSTA set_power_activity -global -activity "
                               f"{toggle_rate:g} (toggles per cycle on every non-clock pin; "
                               f"clock pins 2 per cycle)")
    else:
        timed = activity == "sim-timed"
        log.info("gate-level simulation: %s cycles of the workload (%s%s)", f"{n:,}", simulator,
                 ", cell delays from OpenSTA's SDF" if timed else "")
        info = zero = None
        if timed:
            sdf = sta.write_sdf(lib, netlist, top, clock_ns, has_clk, work)
            rates, zero, sim_name, trace, info = act.timed_activity(
                nl, netlist, lib, workload, work, n, simulator, sdf, clock_ns)
        else:
            rates, sim_name, trace = act.net_activity(nl, netlist, lib, workload, work, n,
                                                      simulator)
        runtimes["simulate_s"] = round(time.monotonic() - t0, 3)
        t1 = time.monotonic()
        log.info("opensta: timing and per-pin power at the simulated activity")
        in_act = {b: rates[b] for b in nl.port_bits("input") if b in rates and b != "clk"}
        timing, _, propagated = sta.timing_and_power(lib, netlist, top, clock_ns, has_clk,
                                                     work, input_activity=in_act)
        pins, report = sta.power_trace(lib, netlist, top, clock_ns, has_clk, work)
        runtimes["sta_s"] = round(time.monotonic() - t1, 3)
        # leakage: OpenSTA's from the simulated input duties, or (where it crashed
        # propagating them) its state-independent figure at duty 0.5
        leak = (propagated or report)["leakage"]
        power, check = _annotate(pins, report, nl, rates, leak)
        out["power_mw"] = power
        engine = {"icarus": "Icarus + the liberty's Verilog cell models",
                  "verilator": "Verilator toggle coverage + cell functions from the liberty",
                  "levelized": "levelized engine tcgen.synth.gatesim + cell functions from the "
                               "liberty",
                  "timed": "timed engine tcgen.synth.timedsim on the levelized engine's "
                           "settled values, cell functions from the liberty",
                  "icarus-sdf": "Icarus + the liberty's Verilog cell models, specify delays "
                                "annotated from the SDF"}[sim_name]
        out["power_method"] = (
            "sim: per-pin OpenSTA power at unit activity x toggle rate of the pin's net from "
            + ("timed gate-level simulation of the workload with OpenSTA's cell delays "
               "(write_sdf; glitches counted; " if timed else
               "zero-delay gate-level simulation of the workload (") + engine + ")")
        vals = [r[0] for k, r in rates.items() if k not in ("clk", "rst")]
        out["sim"] = {
            "cycles": n,
            "nets": len(vals),
            "mean_toggle_rate": round(float(np.mean(vals)), 6) if vals else 0.0,
            "max_toggle_rate": round(float(np.max(vals)), 6) if vals else 0.0,
            "input_toggle_rate": round(float(np.mean([v[0] for v in in_act.values()])), 6)
            if in_act else 0.0,
            "trace_check_rel_err": check,
            "power_mw_opensta_propagated": propagated,
            "simulator": sim_name,
            "trace": str(trace) if trace else None,
        }
        if timed:
            zpower, _ = _annotate(pins, report, nl, zero, leak)
            dyn = power["internal"] + power["switching"]
            zdyn = zpower["internal"] + zpower["switching"]
            zvals = [r[0] for k, r in zero.items() if k not in ("clk", "rst")]
            out["sim"]["timed"] = dict(
                info,
                sdf=str(sdf),
                power_mw_zero_delay=zpower,
                # the share of dynamic power the glitches add: 1 - zero-delay / timed
                glitch_share=round(1.0 - zdyn / dyn, 6) if dyn > 0 else 0.0,
                toggles_timed_over_zero_delay=(round(float(np.sum(vals)) / float(np.sum(zvals)),
                                                     6) if np.sum(zvals) > 0 else None))
    out.update({
        "crit_path_ns": timing.crit_path_ns,
        "slack_ns": timing.slack_ns,
        "meets_timing": None if timing.slack_ns is None else timing.slack_ns >= 0,
        "fmax_mhz": (round(1000.0 / timing.crit_path_ns, 3)
                     if timing.crit_path_ns and timing.crit_path_ns > 0 else None),
        "startpoint": timing.startpoint,
        "endpoint": timing.endpoint,
        "startpoint_cell": _cell_of(nl, timing.startpoint, modules),
        "endpoint_cell": _cell_of(nl, timing.endpoint, modules),
    })
    out["runtime_s"] = runtimes
    return out


def _cell_of(nl: act.Netlist, pin: str | None, modules: dict | None = None) -> str | None:
    """Library cell of a path point ``inst/PIN`` (hierarchical netlist: ``inst/.../inst/PIN``,
    followed down through ``modules``); None for a port."""
    if not pin or "/" not in pin:
        return None
    *path, _ = pin.split("/")
    cell = None
    for inst in path:
        if nl is None:
            return None
        cell = nl.instances.get(inst, (None,))[0]
        nl = modules.get(cell) if modules else None
    return cell


def _annotate(pins: dict, report: dict, nl: act.Netlist, rates: dict, leakage_mw: float
              ) -> tuple[dict, float]:
    """Sum per-pin power (at activity 1; clock pins at 2) x the pin's simulated toggle rate.

    Leakage: OpenSTA's, with the state probabilities it propagates from the simulated input
    duties (equal to the state-independent figure for libraries with cell_leakage_power)."""
    internal = switching = 0.0
    sum_int = sum_sw = 0.0
    for pin, p in pins.items():
        inst, port = pin.rsplit("/", 1)
        if inst not in nl.instances:
            raise ToolError(f"power trace names instance {inst}, not in the netlist")
        net = nl.instances[inst][1].get(port)
        if net is None or net.startswith("1'b"):
            rate = 0.0
        elif net not in rates:
            raise ToolError(f"net {net} of pin {pin} is not in the simulation VCD")
        else:
            rate = rates[net][0]
        trace_rate = 2.0 if net == "clk" else 1.0
        internal += p["internal"] * rate / trace_rate
        switching += p["switching"] * rate / trace_rate
        sum_int += p["internal"]
        sum_sw += p["switching"]
    ref = report["internal"] + report["switching"]        # mW
    got = (sum_int + sum_sw) * 1e3
    err = abs(got - ref) / ref if ref > 0 else (0.0 if got == 0 else 1.0)
    if err > TRACE_TOLERANCE:
        raise ToolError(f"OpenSTA per-pin power trace sums to {got:.6g} mW, report_power says "
                        f"{ref:.6g} mW at the same activity ({err:.1%} apart); the trace "
                        "cannot be trusted for this liberty")
    leak = leakage_mw
    power = {"internal": internal * 1e3, "switching": switching * 1e3, "leakage": leak}
    power["total"] = power["internal"] + power["switching"] + leak
    return power, round(err, 6)


def _derive(res: dict, ops_per_cycle, ops_unit):
    """energy per op, GOPS/mm², GOPS/W at the target clock and at fmax."""
    res["ops_per_cycle"] = ops_per_cycle
    res["ops_unit"] = ops_unit
    keys = ("energy_pj_per_op", "gops", "gops_per_mm2", "gops_per_w", "power_mw_at_fmax",
            "energy_pj_per_op_fmax", "gops_fmax", "gops_per_mm2_fmax", "gops_per_w_fmax",
            "energy_pj_per_op_zero_delay")
    for k in keys:
        res[k] = None
    if not ops_per_cycle:
        return
    p = res["power_mw"]
    f_ghz = 1.0 / res["clock_ns"]
    area_mm2 = res["area_um2"] * 1e-6
    gops = ops_per_cycle * f_ghz
    res["gops"] = gops
    res["gops_per_mm2"] = gops / area_mm2 if area_mm2 > 0 else None
    res["gops_per_w"] = gops / (p["total"] * 1e-3) if p["total"] > 0 else None
    res["energy_pj_per_op"] = (p["total"] * 1e-3) / (gops * 1e9) * 1e12
    if res.get("fmax_mhz"):
        fmax_ghz = res["fmax_mhz"] / 1000.0
        scale = fmax_ghz / f_ghz
        p_fmax = (p["internal"] + p["switching"]) * scale + p["leakage"]
        g = ops_per_cycle * fmax_ghz
        res["power_mw_at_fmax"] = p_fmax
        res["gops_fmax"] = g
        res["gops_per_mm2_fmax"] = g / area_mm2 if area_mm2 > 0 else None
        res["gops_per_w_fmax"] = g / (p_fmax * 1e-3) if p_fmax > 0 else None
        res["energy_pj_per_op_fmax"] = (p_fmax * 1e-3) / (g * 1e9) * 1e12
    timed = (res.get("sim") or {}).get("timed")
    if timed and res["energy_pj_per_op"] is not None and p["total"] > 0:
        # the zero-delay energy of the same sim-timed run (what activity sim gives)
        res["energy_pj_per_op_zero_delay"] = (res["energy_pj_per_op"]
                                              * timed["power_mw_zero_delay"]["total"]
                                              / p["total"])
    for k in keys:                     # a figure that is not a finite number is not a figure
        if res[k] is not None and not math.isfinite(res[k]):
            res[k] = None
