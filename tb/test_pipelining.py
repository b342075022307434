"""Clock-driven pipelining (docs/pipelining.md): cut points by name, the stage timing of the
flow, the planner's choice, and the commands.

The planned designs are proved equal to the combinational ones in tb/test_formal_seq.py (FP8:
every cut set, slow; the full sets in ``make test``); here they are simulated against the golden
model at FP16/FP32 widths.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen.verify import harness
from amaranth.lib import data
from tcgen.verify.stimulus import dot_lanes
from tcgen.generate import verilog
from tcgen.hw import numeric as num
from tcgen.hw.layout import pack
from tcgen.hw.params import ParamError
from tcgen.pipelining import PlanError, cheapest, plan
from tcgen.registry import all_units, get_unit
from tcgen.synth import activity as act
from tcgen.synth.liberty import resolve
from tcgen.synth.stages import register_depths, stage_timing
from tcgen.synth.tools import FlowInputError
from tcgen.synth.lint import lint

slow = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
TCGEN = [sys.executable, "-m", "tcgen.cli"]

#: every unit with cut points and its points in datapath order (at default params)
POINTS = {
    "fp_add": ("align", "sum", "lzc", "norm", "shift"),
    "fp_mul": ("tree", "product", "norm", "shift"),  # norm=early (the default): no lzc
    "fp_product": ("tree", "product", "lzc", "norm", "shift"),
    "fp_convert": ("lzc", "norm", "shift"),
    "fp16_mul": ("tree", "product", "norm", "shift"),
    "pacq_mul": ("lanes", "round"),
    "fused_dot": ("align", "tree", "sum", "lzc", "norm", "shift"),
    "dp4": (*(f"mul.{n}" for n in ("tree", "product", "lzc", "norm", "shift")), "products",
            *(f"add0.{n}" for n in ("align", "sum", "lzc", "norm", "shift")), "level0",
            *(f"add1.{n}" for n in ("align", "sum", "lzc", "norm", "shift")), "level1",
            *(f"acc.{n}" for n in ("align", "sum", "lzc", "norm", "shift"))),
}
# the octets: their DP units' points (docs/pipelining.md "Octets")
POINTS.update({u: tuple(f"dp.{n}" for n in POINTS["dp4"]) for u in (
    "octet_dense", "octet_sparse", "octet_sparse_bs", "warp_mma", "warp_smma")})


# -- parameters ----------------------------------------------------------------------------------
def test_the_units_with_cut_points():
    have = {u.name: tuple(n for n, _ in u.params().cut_points()) for u in all_units()
            if hasattr(u.params(), "cut_points") and u.params().cut_points()}
    assert have == POINTS


def test_cuts_are_normalized_to_datapath_order():
    u = get_unit("fp_mul")
    p = u.make_params({"cuts": "shift+tree"})
    assert p.cuts == "tree+shift" and p.latency == 2 and p.enabled() == frozenset({3, 2})
    assert u.make_params({"cuts": "product+shift"}).enabled() == \
        u.make_params({"pipeline": "2"}).enabled()
    assert u.make_params({}).latency == 0


@pytest.mark.parametrize("values,message", [
    ({"cuts": "bogus"}, "cuts must be '+'-joined names of tree, product, norm, shift"),
    ({"cuts": "bogus", "norm": "late"}, "cuts must be '+'-joined names of tree, product, lzc, "
                                        "norm, shift"),
    ({"cuts": "tree+tree"}, "cuts must be '+'-joined names"),
    ({"cuts": "tree+"}, "cuts must be '+'-joined names"),
    ({"cuts": "tree", "pipeline": "1"}, "cuts must be empty when pipeline is set (1)"),
    ({"cuts": "auto", "pipeline": "2"}, "cuts must be empty when pipeline is set (2)"),
    ({"cuts": "lzc", "norm": "early"}, "names of tree, product, norm, shift"),
])
def test_bad_cuts_are_one_line_errors(values, message):
    with pytest.raises(ParamError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("+", r"\+")):
        get_unit("fp_mul").make_params(values)


def test_auto_cannot_be_built_without_a_clock():
    p = get_unit("fp_add").make_params({"cuts": "auto"})
    with pytest.raises(ParamError, match="cuts=auto is chosen for a clock"):
        verilog("fp_add", p)


def test_default_verilog_names_no_cuts():
    """cuts is off by default (key_default=False): the header and every module are as before."""
    text = verilog("fp_mul")
    assert "cuts" not in text.splitlines()[0]
    assert "cuts=tree+shift" in verilog("fp_mul", get_unit("fp_mul").make_params(
        {"cuts": "shift+tree"})).splitlines()[0]


# -- every cut set equals the combinational unit (simulation against the golden model) ----------
def _subsets(names):
    return ["+".join(c) for k in range(1, len(names) + 1)
            for c in itertools.combinations(names, k)]


#: make test: one simulation (the FP8 proofs of tb/test_formal_seq.py cover every unit's full set)
QUICK = [("fp_mul", {"fmt": "fp16", "norm": "late"}, "tree+product+lzc+norm+shift"),
         ("dp4", {"skip_zero": "true"},
          "mul.tree+mul.shift+products+add0.align+level0+add1.lzc+acc.sum")]
FUSED = {"n": "4", "fmt": "fp8_e4m3", "acc": "fp16", "out": "fp16"}
SLOW = [("fp_convert", {"src": "fp32", "dst": "bf16"}, "lzc+shift"),
        ("dp4", {}, "+".join(POINTS["dp4"])),
        ("dp4", {"product": "rounded", "acc": "fp16", "rounding": "rtz"},
         "mul.product+products+add0.sum+add1.shift+level1+acc.align+acc.lzc"),
        ("dp4", {"fmt": "fp8_e5m2", "acc": "bf16"}, "level0+level1"),
        ("fused_dot", {}, "align+tree+sum+lzc+shift"),
        *(("fused_dot", FUSED, c) for c in _subsets(POINTS["fused_dot"])),
        ("fp16_mul", {}, "tree+shift"),
        ("fp_mul", {"fmt": "fp32"}, "tree+product+norm+shift"),
        ("fp_add", {"fmt": "fp16", "rounding": "rtz"}, "norm"),
        ("fp_convert", {"src": "fp16", "dst": "fp8_e4m3"}, "norm+shift"),
        ("pacq_mul", {}, "lanes+round"),
        ("fp_mul", {"fmt": "bf16", "mult": "booth4", "norm": "early", "rounding": "rtz"},
         "tree+shift")]
SLOW += [(u, extra, c) for u, extra in (("fp_mul", {"fmt": "fp16"}), ("fp_add", {"fmt": "fp16"}),
                                      ("fp_product", {"fmt": "fp16", "dst": "fp32"}),
                                      ("fp_convert", {"src": "fp32", "dst": "fp16"}),
                                      ("fp_mul", {"fmt": "fp32"}), ("fp_add", {"fmt": "fp32"}))
        for c in _subsets(POINTS[u])]


def _stimulus(unit, p, n):
    """The unit's workload; fused_dot's has no specials, so its lanes and C come from
    stimulus.dot_lanes with 5 % specials (NaN and inf bypass the rounding: the lzc cut once
    missed them there, found by the FP8 proof)."""
    rng = np.random.default_rng(7)
    if unit != "fused_dot":
        return get_unit(unit).workload(p, rng, n)
    lay = data.ArrayLayout(num.get_format(p.fmt).width, p.n)
    return {"a": pack(lay, dot_lanes(p.fmt, rng, n, lanes=p.n, special_rate=0.05)),
            "b": pack(lay, dot_lanes(p.fmt, rng, n, lanes=p.n, special_rate=0.05)),
            "c": dot_lanes(p.acc, rng, n, lanes=1, special_rate=0.05)[:, 0]}


def _simulate(unit, extra, cuts, n):
    u = get_unit(unit)
    p = u.make_params({**extra, "cuts": cuts})
    assert u.interface(p).latency == len(cuts.split("+"))
    r = harness.run_batch(unit, p, stimulus=_stimulus(unit, p, n), sim="icarus")
    assert r["checked"] == n and r["mismatches"] == 0, r["first_mismatches"]


@pytest.mark.parametrize("unit,extra,cuts", QUICK, ids=[f"{u}-{c}" for u, _, c in QUICK])
def test_cut_set_equals_model(unit, extra, cuts):
    _simulate(unit, extra, cuts, 2000)


@slow
@pytest.mark.parametrize("unit,extra,cuts", SLOW,
                         ids=[f"{u}-{'-'.join(e.values())}-{c}" for u, e, c in SLOW])
def test_every_cut_set_equals_model(unit, extra, cuts):
    _simulate(unit, extra, cuts, 20000)


# -- the search ----------------------------------------------------------------------------------
def _brute(n, bits, fails):
    best = None
    for mask in range(1 << n):
        idx = tuple(i for i in range(n) if mask >> i & 1)
        bounds = (0, *(i + 1 for i in idx), n + 1)
        if any(fails(a, b) for a, b in zip(bounds, bounds[1:])):
            continue
        cost = (sum(bits[i] for i in idx), len(idx) + 1, idx)
        best = cost if best is None or cost < best else best
    return None if best is None else best[2]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(0, 60), min_size=n, max_size=n),
    st.sets(st.tuples(st.integers(0, n + 1), st.integers(0, n + 1)), max_size=8))))
def test_cheapest_is_the_brute_force_optimum(case):
    n, bits, bad = case
    bad = {(a, b) for a, b in bad if a < b}

    def fails(i, j):
        return (i, j) in bad
    assert cheapest(n, bits, fails) == _brute(n, bits, fails)


# -- the flow's stage timing ---------------------------------------------------------------------
def test_stage_timing_finds_one_bank_per_cut():
    u = get_unit("fp_convert")
    p = u.make_params({"src": "fp16", "dst": "fp8_e4m3", "cuts": "lzc+shift"})
    t = stage_timing(verilog("fp_convert", p), "fp_convert", clock_ns=5.0)
    assert [b["depth"] for b in t["banks"]] == [1, 2]
    assert t["outputs"]["depth"] == 2 and t["outputs"]["bits"] == 8
    assert all(b["bits"] > 0 for b in t["banks"]) and t["registers"] == sum(
        b["bits"] for b in t["banks"])
    periods = [b["period_ns"] for b in t["banks"]] + [t["outputs"]["period_ns"]]
    assert t["crit_path_ns"] == pytest.approx(max(periods))
    for b in t["banks"][1:]:          # launched by flip-flops: clock-to-Q, then setup
        assert b["launch_ns"] > 0 and b["setup_ns"] > 0
        assert 0 < b["logic_ns"] and b["period_ns"] <= b["launch_ns"] + b["logic_ns"] + \
            b["setup_ns"] + 1e-6
    assert t["banks"][0]["launch_ns"] == 0.0          # from the input ports


def _netlist(instances, inputs=("a",), outputs=("y",)):
    ports = {**{i: ("input", None, None) for i in (*inputs, "clk")},
             **{o: ("output", None, None) for o in outputs}}
    return act.Netlist(top="t", ports=ports, instances=instances, assigns=[])


def test_register_depths_of_a_small_pipeline():
    """a -> r1 -> INV -> r2 -> y, and r3 fed by a and r1 (depth 2): banks by depth."""
    lib = resolve("osu018")
    nl = _netlist({"r1": ("DFFPOSX1", {"CLK": "clk", "D": "a", "Q": "q1"}),
                   "i1": ("INVX1", {"A": "q1", "Y": "n1"}),
                   "r2": ("DFFPOSX1", {"CLK": "clk", "D": "n1", "Q": "y"}),
                   "g": ("AND2X2", {"A": "a", "B": "q1", "Y": "n2"}),
                   "r3": ("DFFPOSX1", {"CLK": "clk", "D": "n2", "Q": "q3"})})
    assert register_depths(nl, lib) == {"r1": 1, "r2": 2, "r3": 2, "<outputs>": 2}


def test_register_depths_refuses_a_feedback_loop():
    lib = resolve("osu018")
    nl = _netlist({"r1": ("DFFPOSX1", {"CLK": "clk", "D": "n1", "Q": "y"}),
                   "g": ("AND2X2", {"A": "a", "B": "y", "Y": "n1"})})
    with pytest.raises(FlowInputError, match="r1 is on a feedback loop"):
        register_depths(nl, lib)


# -- the planner on the real flow ----------------------------------------------------------------
#: 2.04 ns combinational at 2 ns on osu018, 1.33 ns cut at shift, 3.28 ns cut at lzc
CONVERT = {"src": "fp16", "dst": "fp8_e4m3"}


def _period(cuts: str, clock: float) -> float:
    p = get_unit("fp_convert").make_params({**CONVERT, "cuts": cuts})
    return stage_timing(verilog("fp_convert", p), "fp_convert", clock_ns=clock)["crit_path_ns"]


@slow
def test_plan_loose_clock_needs_no_cut():
    p = plan("fp_convert", {**CONVERT, "cuts": "auto"}, clock_ns=20.0)
    assert p.cuts == () and p.latency == 0 and p.registers == 0
    assert p.crit_path_ns <= 20.0 and p.params.cuts == ""


def test_plan_is_the_cheapest_cut_set_that_meets_the_clock():
    """A clock the combinational design misses: the chosen set meets it, every set cheaper in
    register bits misses it (each measured here), and a cut that makes the unit slower (lzc,
    with every cut containing it) does not keep the planner from the one that helps."""
    clock = 1.8
    assert _period("", clock) > clock
    p = plan("fp_convert", {**CONVERT, "cuts": "auto"}, clock_ns=clock)
    assert p.latency >= 1 and p.crit_path_ns <= clock
    assert _period("+".join(p.cuts), clock) == pytest.approx(p.crit_path_ns)
    bits = dict(p.points)
    mine = sum(bits[c] for c in p.cuts)
    for cuts in ["", *_subsets(("lzc", "norm", "shift"))]:
        names = [c for c in cuts.split("+") if c]
        if sum(bits[c] for c in names) < mine:
            assert _period(cuts, clock) > clock, cuts
    assert p.designs[0]["cuts"] == "" and p.designs[1]["cuts"] == "lzc+norm+shift"


@slow
def test_plan_unreachable_clock_is_a_param_error():
    with pytest.raises(PlanError, match=r"no set of its cut points \(lzc, norm, shift\) meets 0.5 ns "
                                        r"on osu018: the fastest of the \d+ designs measured, cuts="):
        plan("fp_convert", {**CONVERT, "cuts": "auto"}, clock_ns=0.5)


@slow
def test_plan_budget_is_reported():
    """Two designs (none, all cuts) spend a budget of two: the clock that needs a search is
    then an error that says the search stopped, not that no set exists."""
    with pytest.raises(PlanError, match=r"meets 1.8 ns on osu018 \(search stopped at "
                                        r"max_designs=2\)"):
        plan("fp_convert", {**CONVERT, "cuts": "auto"}, clock_ns=1.8, max_designs=2)
    p = plan("fp_convert", {**CONVERT, "cuts": "auto"}, clock_ns=1.8)
    assert p.search == "exact" and p.as_dict()["search"] == "exact"


def test_plan_refuses_units_without_cut_points():
    with pytest.raises(ParamError, match="has no pipeline cut points"):
        plan("int_mul", None, clock_ns=5.0)


# -- the commands --------------------------------------------------------------------------------
def _tcgen(*args):
    return subprocess.run([*TCGEN, *args], capture_output=True, text=True, cwd=ROOT)


def test_generate_auto_is_deterministic_and_says_what_it_chose(tmp_path):
    args = ["generate", "fp_convert", "-p", "src=fp16", "-p", "dst=fp8_e4m3", "-p",
            "cuts=auto", "--clock-ns", "1.8"]
    a = _tcgen(*args, "-o", str(tmp_path / "a.v"))
    b = _tcgen(*args, "-o", str(tmp_path / "b.v"))
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ta, tb_ = (tmp_path / "a.v").read_text(), (tmp_path / "b.v").read_text()
    assert ta == tb_
    chosen = plan("fp_convert", {**CONVERT, "cuts": "auto"}, clock_ns=1.8)
    assert chosen.cuts and f"cuts={'+'.join(chosen.cuts)}" in ta.splitlines()[0]
    assert "fp_convert: 1.8 ns on osu018: cuts" in a.stderr and "latency" in a.stderr


@pytest.mark.parametrize("args,message", [
    (["generate", "fp_add", "-p", "cuts=auto"], "-p cuts=auto needs --clock-ns T"),
    (["generate", "fp_add", "--clock-ns", "3"], "--clock-ns, --liberty and --fraig-conflicts "
                                                "choose the cuts"),
    (["generate", "fp_add", "--fraig-conflicts", "9"], "--fraig-conflicts choose the cuts"),
    (["generate", "fp_convert", "-p", "cuts=auto", "--clock-ns", "0.2"], "meets 0.2 ns"),
    (["generate", "int_mul", "-p", "cuts=auto"], "unknown parameter 'cuts'"),
    pytest.param(["ppa", "fp_convert", "-p", "cuts=auto", "--clock-ns", "0.2"], "meets 0.2 ns",
                 marks=slow),
])
def test_command_errors(args, message, tmp_path):
    r = _tcgen(*args, "-o" if args[0] == "generate" else "--json",
               str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_ppa_auto_reports_the_plan():
    r = _tcgen("ppa", "fp_convert", "-p", "src=fp16", "-p", "dst=fp8_e4m3", "-p", "cuts=auto",
               "--clock-ns", "1.8", "--json", "-")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["pipelining"]["clock_ns"] == 1.8 and res["latency"] == res["pipelining"]["latency"]
    assert res["params"]["cuts"] == res["pipelining"]["cuts"] != ""
    assert "-p cuts=auto" in res["command"] and res["crit_path_ns"] <= 1.8


@slow
def test_cut_sets_lint_clean(tmp_path):
    """`verilator --lint-only` has nothing to say of a DP-4 with cuts inside and between its
    sub-units (registers named <value>_p<cut>, delay chains)."""
    path = tmp_path / "dp4.v"
    r = _tcgen("generate", "dp4", "-p", "skip_zero=true", "-p",
               "cuts=mul.tree+products+add0.align+level0+add1.lzc+level1+acc.shift",
               "-o", str(path))
    assert r.returncode == 0, r.stderr
    res = lint(path)                   # the project's Verilator (tcgen lint)
    assert res.clean, (res.errors + res.warnings)[:20]


# -- the octets: their DP units' cut points, planned through the DP unit --------------------------
def test_octet_cut_points_and_dp_params():
    """An octet's ``dp.*`` cuts are its DP units' own (IEEE DP-4, or the fused block with
    numerics=fused_sm90), the latency their count; none with split."""
    u = get_unit("octet_sparse")
    p = u.make_params({"cuts": "dp.acc.shift+dp.products"})
    assert p.cuts == "dp.products+dp.acc.shift" and p.latency == 2
    dp = p.dp_params(skip_zero=True)
    assert (dp.UNIT, dp.cuts, dp.skip_zero, dp.latency) == ("dp4", "products+acc.shift", True, 2)
    f = u.make_params({"numerics": "fused_sm90", "cuts": "dp.sum"})
    assert [n for n, _ in f.cut_points()] == [f"dp.{n}" for n in POINTS["fused_dot"]]
    assert f.dp_params().UNIT == "fused_dot" and f.dp_params().cuts == "sum"
    assert get_unit("warp_smma").make_params({"cuts": "dp.level0"}).octet().latency == 1
    with pytest.raises(ParamError, match="cuts must be empty: this configuration has no cut "
                                         "points"):
        u.make_params({"split": "true", "cuts": "dp.products"})
    with pytest.raises(ParamError, match="cuts must be '[+]'-joined names of dp.mul.tree"):
        u.make_params({"cuts": "products"})


def test_plan_times_stages_at_the_fraig_limit(monkeypatch):
    """cuts=auto with ABC's fraig limit: the stage timing synthesizes at that limit (the
    mapping the unit is then measured with), from tcgen.measure down."""
    import tcgen.pipelining as pl
    seen = []

    class Stop(Exception):
        pass

    def fake_timing(text, top, **kw):
        seen.append(kw.get("fraig_conflicts"))
        raise Stop
    monkeypatch.setattr(pl, "stage_timing", fake_timing)
    from tcgen.measure import measure
    with pytest.raises(Stop):
        measure("fp_add", {"cuts": "auto"}, clock_ns=3.0, fraig_conflicts=321)
    with pytest.raises(Stop):
        pl.plan("fp_add", {"cuts": "auto"}, clock_ns=3.0)
    assert seen == [321, None]


def test_octet_plan_tightens_the_dp_target(monkeypatch):
    """cuts=auto on an octet: the DP unit is planned for the clock, the octet built and
    measured; an octet that misses by e ns has its DP unit planned again for the smaller of
    its target and the DP unit's achieved period, less e (a target giving the same cuts is not
    measured again), until four octet designs have missed or eight plans have run: a
    PlanError naming the fastest (the flow replaced by stand-ins: the rule, not the tools)."""
    import tcgen.pipelining as pl
    targets, measured = [], []
    tiers = [(5.5, ("products",)), (4.9, ("products", "level1")),
             (0.0, ("products", "level1", "acc.shift"))]
    crit = {}

    limits = []

    def fake_plan(name, params, *, liberty, clock_ns, cache, max_designs, fraig_conflicts):
        targets.append((name, clock_ns))
        limits.append(fraig_conflicts)
        cuts = next(c for t, c in tiers if clock_ns > t)
        return pl.Plan(unit=name, liberty="osu018", clock_ns=clock_ns,
                       params=params.with_cuts(cuts), cuts=cuts, latency=len(cuts),
                       registers=0, crit_path_ns=clock_ns - 0.1, area_um2=1.0,
                       points=(("products", 400), ("level1", 200)),
                       designs=[{"cuts": "+".join(cuts)}], search="monotone")

    def fake_measure(text, top, *, liberty, clock_ns, cache, fraig_conflicts):
        measured.append(text)
        limits.append(fraig_conflicts)
        return {"crit_path_ns": crit[text], "area_um2": 5.0, "cells_by_type": {}}
    monkeypatch.setattr(pl, "measure_verilog", fake_measure)
    real = pl.plan
    monkeypatch.setattr(pl, "plan", lambda name, params=None, **kw: (
        fake_plan(name, params, **kw) if name == "dp4" else real(name, params, **kw)))
    monkeypatch.setattr(pl, "verilog", lambda name, params: params.cuts)
    crit.update({"dp.products": 6.9, "dp.products+dp.level1": 6.3,
                 "dp.products+dp.level1+dp.acc.shift": 6.0})
    p = pl.plan("octet_dense", {"cuts": "auto"}, clock_ns=6.0)
    assert targets == [("dp4", 6.0), ("dp4", 5.0), ("dp4", 4.6)]
    assert p.cuts == ("dp.products", "dp.level1", "dp.acc.shift") and p.latency == 3
    assert p.crit_path_ns == 6.0 and [r["clock_ns"] for r in p.via["rounds"]] == [6.0, 5.0, 4.6]
    assert p.points == (("dp.products", 400), ("dp.level1", 200))
    assert "dp4 planned for 4.6 ns" in p.summary()
    # ABC's fraig limit reaches every synthesis of the plan (the DP unit's and the octet's)
    assert set(limits) == {None}
    limits[:] = []
    pl.plan("octet_dense", {"cuts": "auto"}, clock_ns=6.0, fraig_conflicts=500)
    assert limits and set(limits) == {500}
    # the same cuts at a tighter target: not measured again; the plans run out (2 x 4) with
    # three octets measured, all missing: refused
    crit.update({"dp.products": 6.9, "dp.products+dp.level1": 6.05,
                 "dp.products+dp.level1+dp.acc.shift": 6.4})
    targets[:], measured[:] = [], []
    with pytest.raises(PlanError, match=r"octet_dense: no set of its dp4 units' cut points "
                                        r"meets 6 ns on osu018 .* the fastest of the 3 "
                                        r"octet_dense designs measured, cuts=dp.products\+"
                                        r"dp.level1, takes 6.050 ns"):
        pl.plan("octet_dense", {"cuts": "auto"}, clock_ns=6.0)
    assert [t for _, t in targets] == [6.0, 5.0, 4.85, 4.35, 3.85, 3.35, 2.85, 2.35]
    assert len(measured) == 3 and len(set(measured)) == 3
    # the DP unit cannot meet a tightened target: the octet's error, naming that target; and
    # a DP unit that cannot meet the clock itself: its error
    tiers[:] = [(4.9, ("products",))]

    def no_dp_below(name, params, **kw):
        if kw["clock_ns"] <= 4.9:
            raise PlanError(f"{name}: no set meets {kw['clock_ns']:g} ns")
        return fake_plan(name, params, **kw)
    monkeypatch.setattr(pl, "plan", lambda name, params=None, **kw: (
        no_dp_below(name, params, **kw) if name == "dp4" else real(name, params, **kw)))
    with pytest.raises(PlanError, match=r"own logic \(dp4 has no set meeting the tightened "
                                        r"4 ns\): the fastest of the 1 octet_dense designs "
                                        r"measured, cuts=dp.products, takes 6.900 ns"):
        pl.plan("octet_dense", {"cuts": "auto"}, clock_ns=6.0)
    with pytest.raises(PlanError, match=r"octet_dense: its dp4 units cannot meet 4 ns: dp4: "
                                        r"no set meets 4 ns"):
        pl.plan("octet_dense", {"cuts": "auto"}, clock_ns=4.0)
