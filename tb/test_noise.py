"""The flow's own noise (tcgen.synth.noise, ``tcgen ppa --noise N``, a sweep's ``noise``):
perturbed texts are different text with the same modules and ports (and, for a small
combinational unit, provably the same function), the band contains the unperturbed figures,
every perturbation is its own cache entry, and bad values are one error line before any work."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcgen.generate import unit_params, verilog as _verilog
from tcgen.registry import get_unit
from tcgen.measure import measure
from tcgen.synth import noise
from tcgen.synth.ppa import measure_verilog
from tcgen.synth.tools import FlowInputError

ROOT = Path(__file__).resolve().parent.parent


def verilog(unit: str, params: dict) -> str:
    return _verilog(unit, unit_params(get_unit(unit), params))

# two modules, a register, a port declared as output then reg (the order Yosys needs kept)
_TWO = textwrap.dedent("""\
    // a header comment
    module top(clk, a, b, y);
      input clk;
      input [3:0] a;
      input [3:0] b;
      output [4:0] y;
      reg [4:0] y;
      wire [4:0] s;
      sub u (.a(a), .b(b), .s(s));
      always @(posedge clk) y <= s;
    endmodule

    module sub(a, b, s);
      input [3:0] a;
      input [3:0] b;
      output [4:0] s;
      wire [4:0] t;
      assign t = a + b;
      assign s = t;
    endmodule
""")


def _interface(text: str, top: str, tmp_path: Path) -> dict:
    """{module: {port: (direction, width)}} of the design Yosys elaborates from ``top``."""
    (tmp_path / "d.v").write_text(text)
    subprocess.run(["yosys", "-q", "-p", f"read_verilog d.v; hierarchy -check -top {top}; "
                    "proc; write_json d.json"], cwd=tmp_path, check=True, capture_output=True)
    mods = json.loads((tmp_path / "d.json").read_text())["modules"]
    return {m: {p: (v["direction"], len(v["bits"])) for p, v in d["ports"].items()}
            for m, d in mods.items()}


@pytest.mark.parametrize("which", ["two_modules", "lzc"])
def test_perturbed_texts_differ_but_keep_modules_and_ports(which, tmp_path):
    text, top = (_TWO, "top") if which == "two_modules" else (verilog("lzc", {"width": 8}),
                                                              "lzc")
    sched = noise.schedule(text, 8)
    assert [p.index for p in sched] == list(range(1, 9))
    assert sched == noise.schedule(text, 8)                      # deterministic
    kinds = {p.kind for p in sched}
    assert kinds == (set(noise.KINDS) if which == "two_modules" else set(noise.KINDS) - {"order"})
    want = _interface(text, top, tmp_path)
    texts = {}
    for p in sched:
        t = noise.perturb(text, top, p)
        assert t == noise.perturb(text, top, p)
        if p.kind == "fraig":                  # the script changes, not the text
            assert t == text and p.fraig_conflicts in (1000, 10000)
            continue
        assert t != text and t not in texts.values(), p
        assert sorted(t.splitlines()) != sorted(text.splitlines()) or p.kind in ("order",
                                                                                   "decl")
        if p.kind in ("order", "decl"):        # the same lines, in another order
            assert sorted(t.splitlines()) == sorted(text.splitlines())
        assert _interface(t, top, tmp_path) == want, p       # the pad is gone after hierarchy
        texts[p.index] = t
    if which == "two_modules":
        o = noise.perturb(text, top, next(p for p in sched if p.kind == "order"))
        assert o.index("module sub") < o.index("module top") and o.startswith("// a header")


def test_lzc_perturbations_are_the_same_function():
    """Neutral by construction; for a small combinational unit, proved: each perturbed text's
    top equals the unperturbed one for every input (Yosys SAT on the miter)."""
    from tcgen.synth.formal import Design, prove_equivalent
    text = verilog("lzc", {"width": 8})
    for p in noise.schedule(text, 4):
        if p.kind == "fraig":
            continue
        r = prove_equivalent(Design(text, top="lzc"), Design(noise.perturb(text, "lzc", p),
                                                             top="lzc"), timeout=60)
        assert r.status == "proved", (p, r.describe())


def test_split_modules_round_trips_and_refuses_directives():
    head, mods, tail = noise.split_modules(_TWO)
    assert [m for m, _ in mods] == ["top", "sub"]
    assert head + "".join(b for _, b in mods) + tail == _TWO
    assert noise.split_modules("`define W 4\n" + _TWO) is None
    assert noise.split_modules(_TWO + "wire stray;\n") is None
    # a directive or one module: no order perturbation, the others still apply
    assert "order" not in {p.kind for p in noise.schedule("`timescale 1ns/1ps\n" + _TWO, 6)}


def test_band_contains_the_unperturbed_figures_and_keys_differ():
    r = measure("lzc", {"width": 8}, liberty="osu018", noise=4)
    nz = r["noise"]
    assert nz["n"] == 4 and nz["runs"] == 5 and len(nz["perturbations"]) == 5
    assert nz["perturbations"][0]["kind"] == "none"
    assert "--noise 4" in r["command"]
    assert nz["band"]["area_um2"]["unperturbed"] == r["area_um2"]
    for field, b in nz["band"].items():
        if b["median"] is None:
            continue
        assert b["min"] <= b["unperturbed"] <= b["max"], field
        assert b["min"] <= b["median"] <= b["max"], field
        assert b["spread"] == pytest.approx((b["max"] - b["min"]) / b["median"])
    # each perturbation is its own cache entry (text hash, or the fraig limit)
    keys = [p["cache_key"] for p in nz["perturbations"]]
    assert len(set(keys)) == 5 and nz["distinct"] == 5
    assert r["cache_key"] == keys[0]
    again = measure("lzc", {"width": 8}, liberty="osu018", noise=4)
    assert all(p["cached"] for p in again["noise"]["perturbations"])
    assert again["noise"]["band"] == nz["band"]
    # the unperturbed run is the plain measurement, and noise=0 adds nothing
    plain = measure("lzc", {"width": 8}, liberty="osu018")
    assert "noise" not in plain and plain["cache_key"] == r["cache_key"]


@pytest.mark.parametrize("bad", [-1, 65, True, 1.5, "8", None])
def test_bad_noise_is_one_flow_error(bad):
    with pytest.raises(FlowInputError, match=r"noise must be an integer in 0\.\.64"):
        measure_verilog("module m(a, y); input a; output y; assign y = a; endmodule\n", "m",
                        noise=bad)


@pytest.mark.parametrize("arg,msg", [("-1", "--noise must be an integer in 0..64, got -1"),
                                     ("abc", "argument --noise: invalid integer value: 'abc'"),
                                     ("65", "--noise must be an integer in 0..64, got 65"),
                                     ("1e3", "invalid integer value")])
def test_cli_bad_noise_is_one_line_exit_2_before_work(arg, msg, tmp_path):
    out = tmp_path / "r.json"
    # an unknown unit would be an error too: the noise value is refused first
    p = subprocess.run([sys.executable, "-m", "tcgen.cli", "ppa", "lzc", "--noise", arg,
                        "--json", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and msg in p.stderr, p.stderr
    assert p.stdout == "" and not out.exists()


def test_cli_noise_text_and_json(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "tcgen.cli", "ppa", "lzc", "-p", "width=8",
                        "--noise", "2", "--json", str(out)], capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert re.search(r"noise\s+3 runs: unperturbed \+ 2 perturbations", p.stdout)
    assert re.search(r"area um\^2\s+[\d.]+ / [\d.]+ / [\d.]+", p.stdout)
    r = json.loads(out.read_text())
    assert r["noise"]["runs"] == 3 and set(r["noise"]["band"]) >= {
        "area_um2", "crit_path_ns", "power_mw", "energy_pj_per_op"}


# -- the sweep ---------------------------------------------------------------------------------
def _spec(text: str, tmp_path: Path):
    from tcgen.sweep import load
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    return load(p)


_SWEEP = """
[sweep]
name = "nz"
noise = 2
metrics = ["synth__area__um2", "synth__area__um2_min", "synth__area__um2_max"]

[[group]]
unit = "lzc"
grid = {width = [8, 9]}

[[group.override]]
where = {width = 9}
noise = 0
"""


def test_sweep_noise_columns(tmp_path):
    from tcgen.sweep import run, write_outputs
    s = _spec(_SWEEP, tmp_path)
    assert [p.noise for p in s.points] == [2, 0]
    assert json.loads(s.points[0].ident)["noise"] == 2
    assert "noise" not in json.loads(s.points[1].ident)      # keys of plain points unchanged
    res = run(s, cache=tmp_path / "cache")
    a, b = res.rows
    assert a["noise"] == 2 and a["noise__runs__count"] == 3
    assert a["synth__area__um2_min"] <= a["synth__area__um2"] <= a["synth__area__um2_max"]
    assert a["synth__area__um2_median"] is not None and a["energy__per_op__pj_spread"] >= 0
    assert b.get("synth__area__um2_min") is None
    paths = write_outputs(res, tmp_path / "out", "tcgen sweep s.toml")
    csv = paths[0].read_text()
    header = next(ln for ln in csv.splitlines() if not ln.startswith("#"))
    assert "noise" in header.split(",") and "timing__crit_path__ns_median" in header
    assert "Noise band" in paths[2].read_text()


@pytest.mark.parametrize("value,where", [("-1", "sweep.noise"), ("'8'", "sweep.noise"),
                                         ("65", "sweep.noise"), ("true", "sweep.noise")])
def test_sweep_bad_noise_is_a_spec_error(value, where, tmp_path):
    from tcgen.sweep import SpecError
    with pytest.raises(SpecError, match=re.escape(where) + r": .*an integer in 0\.\.64"):
        _spec(_SWEEP.replace("noise = 2", f"noise = {value}"), tmp_path)
    with pytest.raises(SpecError, match=r"override\[0\]\.noise"):
        _spec(_SWEEP.replace("noise = 0", "noise = -3"), tmp_path)


def test_separation_of_two_bands():
    from tcgen.synth.noise import separation
    assert separation((1.0, 2.0), (2.5, 3.0)) == "below"
    assert separation((2.5, 3.0), (1.0, 2.0)) == "above"
    assert separation((1.0, 2.6), (2.5, 3.0)) == "overlap"
    assert separation((2.0, 1.0), (0.5, 0.9)) == "above"          # given either way round
    assert separation((1.0, 1.0), (1.0, 1.0)) == "overlap"        # equal figures: no lead
