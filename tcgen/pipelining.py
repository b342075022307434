"""Pipelining to a clock: the cheapest set of a unit's cut points that meets a period on a
liberty (docs/pipelining.md).

    from tcgen.pipelining import plan
    p = plan("fp_mul", {"fmt": "fp16"}, liberty="osu018", clock_ns=4.0)
    p.cuts, p.latency, p.registers, p.crit_path_ns    # 'product+shift', 2, 55, 3.75
    p.params                                          # FPMulParams(..., cuts='product+shift')

A unit whose parameters derive from :class:`tcgen.hw.pipeline.CutPoints` declares its cut
points in datapath order.  With n of them there are n + 2 *boundaries* (the input ports, the
cuts, the output ports), and an enabled set S makes |S| + 1 *stages*: the intervals between
consecutive enabled boundaries.  A set meets the clock when every stage does, so the search
works on intervals:

1. Two designs are measured first, both synthesized for the target period (ABC ``-D``) and
   timed per register bank by :func:`tcgen.synth.stages.stage_timing`: no cuts (the interval
   inputs..outputs) and every cut (each single-segment interval; its banks give each cut's
   register bits).
2. Each measured stage is recorded as a meeting or failing interval.
3. The cheapest set -- fewest register bits (the all-cuts design's banks), then fewest stages,
   then the earliest cuts -- none of whose stages is a failing interval is found by a shortest
   path over the boundaries, and measured.  If all its stages meet the period it is the answer;
   otherwise its failing stages are recorded and step 3 repeats.

Every answer is a measured design that meets the period, and every cheaper set has a stage
measured to fail in some design.  The model behind that: a stage's delay depends on the cuts at
its two ends only (the same values are registered at a cut whatever else is cut).  An interval
that *contains* a failing one is not assumed to fail: a cut can make the logic after it slower
than the whole unit was, because synthesis no longer sees across it -- fp_convert FP16 -> E4M3
at 2 ns on osu018 is 2.04 ns combinational, 1.33 ns cut at ``shift``, but 3.28 ns cut at ``lzc``
(the registered count drives the shifter with none of the correlations the combinational logic
let ABC use).  So at most 2^n designs are measured, usually three to eight; every synthesis is
the PPA flow's and is cached with it.  A period that no set meets is a :class:`PlanError` naming
the fastest design measured.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from tcgen.hw.params import ParamError, Params
from tcgen.hw.pipeline import AUTO, CutPoints
from tcgen.synth.liberty import resolve
from tcgen.synth.ppa import check_options, measure_verilog
from tcgen.synth.stages import stage_timing

from .generate import unit_params, verilog
from .registry import get_unit

__all__ = ["plan", "resolve_cuts", "Plan", "PlanError", "cheapest", "MAX_DESIGNS"]

#: the search's default budget of measured designs (a DP-4 with 19 cut points: ~25 s each)
MAX_DESIGNS = 24
#: up to this many cut points the second phase is exact; above, monotone (module doc)
EXACT_POINTS = 6


class PlanError(ParamError):
    """No set of the unit's cut points meets the clock (bad input: one line, exit 2)."""


@dataclass
class Plan:
    unit: str
    liberty: str
    clock_ns: float
    params: Params                 # the unit's params with the chosen cuts
    cuts: tuple                    # names, datapath order
    latency: int
    registers: int                 # flip-flops of the chosen design (after synthesis)
    crit_path_ns: float
    area_um2: float
    points: tuple                  # (name, register bits in the all-cuts design)
    designs: list = field(default_factory=list)     # every design measured, in order
    #: what the answer is known to be: "exact" (every cheaper set has a stage measured to
    #: fail), "monotone" (every cheaper set has a stage containing one measured to fail) or
    #: "budget" (the search stopped at max_designs with cheaper sets unmeasured)
    search: str = "exact"
    runtime_s: float = 0.0
    #: a unit planned through a sub-unit (the octets, through their DP unit: :func:`plan`):
    #: {"unit", "role", "rounds": [{"clock_ns" (the sub-unit's target), "cuts", "crit_path_ns"
    #: (the whole unit's)}]}; None when the unit's own stages were measured
    via: dict | None = None

    def as_dict(self) -> dict:
        return {"unit": self.unit, "liberty": self.liberty, "clock_ns": self.clock_ns,
                "cuts": "+".join(self.cuts), "latency": self.latency,
                "registers": self.registers, "crit_path_ns": self.crit_path_ns,
                "area_um2": self.area_um2,
                "points": [{"name": n, "bits": b} for n, b in self.points],
                "designs": self.designs, "search": self.search,
                "runtime_s": self.runtime_s, "via": self.via}

    def summary(self) -> str:
        cuts = "+".join(self.cuts) or "none (combinational)"
        via = ""
        if self.via:
            last = self.via["rounds"][-1]["clock_ns"]
            via = f", {self.via['unit']} planned for {last:g} ns"
        return (f"{self.unit}: {self.clock_ns:g} ns on {self.liberty}: cuts {cuts}, latency "
                f"{self.latency}, {self.registers} register bits, critical path "
                f"{self.crit_path_ns:.3f} ns, {self.area_um2:,.0f} um2 "
                f"({len(self.designs)} designs measured, {self.search} search"
                + (": cheaper sets unmeasured" if self.search == "budget" else "") + via + ")")


def cheapest(n: int, bits, fails) -> tuple | None:
    """The cheapest enabled set of cut indices 0..n-1: a path from boundary 0 (inputs) to n + 1
    (outputs) through boundaries 1..n (cut i is boundary i + 1) over intervals ``(i, j)`` for
    which ``fails(i, j)`` is false.  Cost: (sum of ``bits`` of the cuts, stages, the cut
    indices); None if no path."""
    best: dict[int, tuple] = {0: (0, 0, ())}
    for j in range(1, n + 2):
        cands = []
        for i in range(j):
            if i in best and not fails(i, j):
                b, s, path = best[i]
                cut = () if j == n + 1 else (j - 1,)
                cands.append((b + (bits[j - 1] if j <= n else 0), s + 1, path + cut))
        if cands:
            best[j] = min(cands)
    return best[n + 1][2] if n + 1 in best else None


def plan(unit_name: str, params=None, *, liberty="osu018", clock_ns: float,
         cache: bool = True, max_designs: int = MAX_DESIGNS, fraig_conflicts=None) -> Plan:
    """The cheapest cut set of ``unit_name`` meeting ``clock_ns`` on ``liberty`` (module doc).
    ``params``: None, a dict of values or strings, or the unit's Params; ``cuts`` may be
    ``auto`` or empty, ``pipeline`` must be 0.  ``max_designs``: the search's budget of
    measured designs (the plan's ``search`` says what the answer is known to be).
    ``fraig_conflicts``: ABC's SAT-sweeping limit of every synthesis (the one the unit is then
    measured with, so the cuts are chosen on the same mapping)."""
    t0 = time.monotonic()
    unit = get_unit(unit_name)
    params = unit_params(unit, params)
    clock_ns, *_ = check_options(clock_ns, "vectorless", 0.1, 2000, 0)
    lib = resolve(liberty)
    if not isinstance(params, CutPoints) or not params.cut_points():
        raise ParamError(f"{unit.name}: has no pipeline cut points; clock-driven pipelining "
                         f"covers the units `tcgen list` shows with cut points")
    if getattr(params, "pipeline", 0):
        raise ParamError(f"{unit.name}: pipeline must be 0 with cuts=auto, got "
                         f"{params.pipeline}")
    if hasattr(params, "plan_via"):
        return _plan_via(unit, params, lib, clock_ns, cache, max_designs, t0, fraig_conflicts)
    names = [name for name, _ in params.cut_points()]
    n = len(names)
    measured: dict[tuple, dict] = {}
    failing: set[tuple] = set()
    meeting: set[tuple] = set()
    designs: list[dict] = []
    stage_log: list[dict] = []

    def measure(idx: tuple) -> dict:
        p = params.with_cuts(names[i] for i in idx)
        t = stage_timing(verilog(unit.name, p), unit.name, liberty=lib, clock_ns=clock_ns,
                         cache=cache, fraig_conflicts=fraig_conflicts)
        bounds = (0, *(i + 1 for i in idx), n + 1)
        groups = [*t["banks"], t["outputs"]]
        if len(t["banks"]) != len(idx) or t["outputs"]["depth"] != len(idx):
            raise RuntimeError(f"{unit.name} cuts {p.cuts or '(none)'}: the netlist has "
                               f"{len(t['banks'])} register banks and its outputs come from "
                               f"bank {t['outputs']['depth']}, for {len(idx)} cuts")
        stages = []
        for k, g in enumerate(groups):
            iv = (bounds[k], bounds[k + 1])
            period = g["period_ns"] or 0.0
            (meeting if period <= clock_ns else failing).add(iv)
            stages.append({"from": _bound(names, iv[0]), "to": _bound(names, iv[1]),
                           "period_ns": g["period_ns"], "bits": g["bits"],
                           "logic_ns": g.get("logic_ns", 0.0),
                           "launch_ns": g.get("launch_ns", 0.0),
                           "setup_ns": g.get("setup_ns", 0.0)})
            stage_log.append({"i": iv[0], "j": iv[1], "period_ns": period})
        rec = {"cuts": p.cuts, "crit_path_ns": t["crit_path_ns"], "registers": t["registers"],
               "area_um2": t["area_um2"], "stages": stages,
               "meets": t["crit_path_ns"] is None or t["crit_path_ns"] <= clock_ns}
        measured[idx] = rec
        designs.append(rec)
        return rec

    measure(())
    every = measure(tuple(range(n)))
    bits = [g["bits"] for g in every["stages"][:n]]
    seg = every["stages"]                  # segment k: boundary k -> k + 1

    def estimate(i: int, j: int) -> float:
        """The all-cuts design's segments i..j-1 added up: launch, logic, setup."""
        return (seg[i]["launch_ns"] + sum(seg[k]["logic_ns"] for k in range(i, j))
                + seg[j - 1]["setup_ns"])

    def ratio() -> float:
        """The median measured / estimated period of the multi-segment stages so far."""
        rs = sorted(d["period_ns"] / estimate(d["i"], d["j"]) for d in stage_log
                    if d["j"] - d["i"] >= 2 and d["period_ns"] and estimate(d["i"], d["j"]) > 0)
        return rs[len(rs) // 2] if rs else 1.0

    def cost(idx):
        return (sum(bits[i] for i in idx), len(idx) + 1, idx)

    def predicted_fail(i: int, j: int, r: float) -> bool:
        if (i, j) in failing or (i, j) in meeting:
            return (i, j) in failing
        if any(i <= a and b <= j for a, b in failing):    # usually: more logic is slower
            return True
        if any(a <= i and j <= b for a, b in meeting):
            return False
        return estimate(i, j) * r > clock_ns

    answer = None
    # phase 1, guided: unmeasured stages predicted from the calibrated estimate
    while len(designs) < max_designs:
        r = ratio()                        # once per search: it changes only by measuring
        idx = cheapest(n, bits, lambda i, j: predicted_fail(i, j, r))
        if idx is None:
            break
        rec = measured.get(idx) or measure(idx)
        if rec["meets"]:
            answer = idx
            break
    # phase 2: every cheaper set whose stages are not measured to fail (exact), or for more
    # than EXACT_POINTS points, contain no stage measured to fail (monotone)
    model = "exact" if n <= EXACT_POINTS else "monotone"
    search = "budget"

    def pruned(i: int, j: int) -> bool:
        if model == "exact":
            return (i, j) in failing
        return any(i <= a and b <= j for a, b in failing)
    while True:
        idx = cheapest(n, bits, pruned)
        if idx is None or (answer is not None and cost(idx) >= cost(answer)):
            search = model
            break
        if len(designs) >= max_designs:
            break
        rec = measured.get(idx) or measure(idx)
        if rec["meets"]:
            answer, search = idx, model
            break
    if answer is None:
        best = min(designs, key=lambda d: (d["crit_path_ns"], d["registers"]))
        why = "" if search != "budget" else f" (search stopped at max_designs={max_designs})"
        raise PlanError(f"{unit.name}: no set of its cut points ({', '.join(names)}) meets "
                        f"{clock_ns:g} ns on {lib.name}{why}: the fastest of the "
                        f"{len(designs)} designs measured, cuts={best['cuts'] or '(none)'}, "
                        f"takes {best['crit_path_ns']:.3f} ns")
    rec = measured[answer]
    chosen = params.with_cuts(names[i] for i in answer)
    return Plan(unit=unit.name, liberty=lib.name, clock_ns=clock_ns, params=chosen,
                cuts=tuple(names[i] for i in answer), latency=chosen.latency,
                registers=rec["registers"], crit_path_ns=rec["crit_path_ns"],
                area_um2=rec["area_um2"], points=tuple(zip(names, bits)), designs=designs,
                search=search, runtime_s=round(time.monotonic() - t0, 3))


#: :func:`_plan_via` measures at most this many designs of the whole unit (and plans the
#: sub-unit at most twice as often: a tighter target may give the same cuts)
VIA_ROUNDS = 4


def _plan_via(unit, params, lib, clock_ns: float, cache: bool, max_designs: int,
              t0: float, fraig_conflicts=None) -> Plan:
    """A unit whose cut points are one sub-unit's (``params.plan_via()`` -> (sub-unit, its
    params, role); the octets: their eight DP units' ``dp.*``), with control around that
    datapath that the stage timing cannot sort into banks (feedback: counters, an
    accumulating buffer).  The sub-unit is planned for the clock, the whole unit built with
    those cuts and measured by the PPA flow; if the whole unit misses the clock by e ns (its
    operand muxes and write-back around the datapath), the sub-unit is planned again for the
    smaller of its target and its achieved period, less e, until :data:`VIA_ROUNDS` designs of
    the whole unit have been measured (a target giving the same cuts measures nothing new; at
    most twice as many plans).  Every answer is a measured design of the
    whole unit that meets the clock; the cuts are the cheapest set of the sub-unit meeting the
    last target (its search's guarantee, not the whole unit's)."""
    sub_name, sub_params, role = params.plan_via()
    rounds, designs = [], []
    target, whole = clock_ns, {}              # the whole unit's designs by cuts
    unreached = None
    for _ in range(2 * VIA_ROUNDS):
        if len(whole) >= VIA_ROUNDS or target <= 0:
            break
        try:
            sp = plan(sub_name, sub_params, liberty=lib, clock_ns=target, cache=cache,
                      max_designs=max_designs, fraig_conflicts=fraig_conflicts)
        except PlanError as e:
            if whole:                         # the tightened target is out of reach
                unreached = target
                break
            raise PlanError(f"{unit.name}: its {sub_name} units cannot meet {target:g} ns: "
                            f"{e}") from None
        designs += [dict(d, unit=sub_name) for d in sp.designs]
        chosen = params.with_cuts(f"{role}.{n}" for n in sp.cuts)
        rec = whole.get(chosen.cuts)
        if rec is None:                       # a tighter target may give the same cuts
            res = measure_verilog(verilog(unit.name, chosen), unit.name, liberty=lib,
                                  clock_ns=clock_ns, cache=cache,
                                  fraig_conflicts=fraig_conflicts)
            crit = res["crit_path_ns"]
            regs = sum(n for c, n in res["cells_by_type"].items()
                       if c in lib.cells and lib.cells[c].sequential)
            rec = whole[chosen.cuts] = {
                "unit": unit.name, "cuts": chosen.cuts, "crit_path_ns": crit,
                "registers": regs, "area_um2": res["area_um2"], "stages": [],
                "meets": crit is None or crit <= clock_ns}
            designs.append(rec)
        rounds.append({"clock_ns": target, "cuts": chosen.cuts,
                       "crit_path_ns": rec["crit_path_ns"]})
        if rec["meets"]:
            return Plan(unit=unit.name, liberty=lib.name, clock_ns=clock_ns, params=chosen,
                        cuts=tuple(f"{role}.{n}" for n in sp.cuts), latency=chosen.latency,
                        registers=rec["registers"], crit_path_ns=rec["crit_path_ns"],
                        area_um2=rec["area_um2"],
                        points=tuple((f"{role}.{n}", b) for n, b in sp.points),
                        designs=designs, search=sp.search,
                        runtime_s=round(time.monotonic() - t0, 3),
                        via={"unit": sub_name, "role": role, "rounds": rounds})
        # tighter by the miss, from what the sub-unit achieved (it may beat its target)
        target = round(min(target, sp.crit_path_ns) - (rec["crit_path_ns"] - clock_ns), 3)
    rec = min(whole.values(), key=lambda d: d["crit_path_ns"])
    why = "" if unreached is None else \
        f" ({sub_name} has no set meeting the tightened {unreached:g} ns)"
    raise PlanError(f"{unit.name}: no set of its {sub_name} units' cut points meets "
                    f"{clock_ns:g} ns on {lib.name} around the {unit.name}'s own logic{why}: "
                    f"the fastest of the {len(whole)} {unit.name} designs measured, "
                    f"cuts={rec['cuts'] or '(none)'}, takes {rec['crit_path_ns']:.3f} ns")


def resolve_cuts(unit_name: str, params, *, liberty, clock_ns, cache: bool = True,
                 fraig_conflicts=None):
    """``(params, plan)``: ``params`` with ``cuts=auto`` replaced by the planned set (and the
    Plan), or ``(params, None)`` when there is nothing to plan."""
    if isinstance(params, CutPoints) and params.cuts == AUTO:
        p = plan(unit_name, params, liberty=liberty, clock_ns=clock_ns, cache=cache,
                 fraig_conflicts=fraig_conflicts)
        return p.params, p
    return params, None


def _bound(names, b: int) -> str:
    return "inputs" if b == 0 else "outputs" if b == len(names) + 1 else names[b - 1]

