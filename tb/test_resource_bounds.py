"""Resource bounds (issue 16 §4; docs/robustness.md, "Resource bounds"): a configuration too
large to build is refused before anything is elaborated, with its estimated size, the limit and
how to override it; the families' estimates are checked against the cells the flow measured."""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tcgen.generate as gen
from tcgen import cli
from tcgen.hw.params import ParamError
from tcgen.registry import all_units, get_unit
from tcgen.study import estimate_ratios
from tcgen.synth.liberty import shared_liberty_available

ROOT = Path(__file__).resolve().parent.parent
BIG_PORTS = ("bmma_array", {"m": "64", "n": "64", "k": "4096"})        # 655k input bits
BIG_CELLS = ("int8_mac_array", {"m": "16", "n": "16", "k": "64"})      # ~7.5M cells, 24k bits


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


def _argv(cmd, unit, params, *extra):
    return [cmd, unit, *[x for k, v in params.items() for x in ("-p", f"{k}={v}")], *extra]


@pytest.fixture
def no_elaboration(monkeypatch):
    """Fail the test if anything is elaborated or synthesized; record what would be."""
    calls = []

    def refuse(component, *a, **k):
        component._MustUse__silence = True       # built, never elaborated
        calls.append(a)
        return "// elaborated\n"
    monkeypatch.setattr(gen, "component_verilog", refuse)
    monkeypatch.delenv(gen.ENV_FORCE, raising=False)
    monkeypatch.delenv(gen.ENV_MAX_CELLS, raising=False)
    return calls


def test_huge_array_is_refused_at_once_stating_its_size(tmp_path, no_elaboration):
    """``tcgen generate bmma_array m=64 n=64 k=4096``: one line with the estimate (cells, GB,
    time, input bits) and the bound, exit 2, within a second, nothing elaborated or written."""
    t0 = time.perf_counter()
    rc, out, err = run_main(_argv("generate", *BIG_PORTS, "-o", str(tmp_path / "x.v")))
    assert time.perf_counter() - t0 < 5
    assert rc == 2 and err.count("\n") == 1 and not no_elaboration
    assert "bmma_array m=64 n=64 k=4096" in err
    assert re.search(r"estimated 1\d\d,\d{3},\d{3} cells \(flat synthesis ~[\d,]+ GB, ~", err), err
    assert "655,365 input bits (widest port req__payload: 655,363)" in err
    assert "at most 65,534 input bits" in err
    assert list(tmp_path.iterdir()) == []
    # not overridable: Amaranth cannot emit it
    rc, out, err = run_main(_argv("generate", *BIG_PORTS, "--force"))
    assert rc == 2 and "at most 65,534 input bits" in err and not no_elaboration


@pytest.mark.parametrize("cmd", ["generate", "ppa"])
def test_over_the_cell_limit_is_refused_with_the_override(cmd, no_elaboration, monkeypatch):
    monkeypatch.setattr(cli, "measure", lambda *a, **k: pytest.fail("measured"))
    rc, out, err = run_main(_argv(cmd, *BIG_CELLS))
    assert rc == 2 and err.count("\n") == 1, err
    size = gen.estimate(BIG_CELLS[0], get_unit(BIG_CELLS[0]).make_params(BIG_CELLS[1]))
    assert size.cells > gen.MAX_CELLS and size.emittable
    assert f"estimated {size.cells:,} cells" in err
    assert "over the limit of 4,000,000 estimated cells" in err
    assert "--force" in err and "TCGEN_FORCE=1" in err and "TCGEN_MAX_CELLS=N" in err
    assert not no_elaboration


def test_force_and_the_environment_lift_the_limit(no_elaboration, monkeypatch, tmp_path):
    unit = get_unit(BIG_CELLS[0])
    params = unit.make_params(BIG_CELLS[1])
    out = tmp_path / "x.v"
    assert run_main(_argv("generate", *BIG_CELLS, "--force", "-o", str(out)))[0] == 0
    assert len(no_elaboration) == 1 and out.read_text().endswith("// elaborated\n")
    assert gen.ENV_FORCE not in os.environ                 # --force is restored afterwards
    monkeypatch.setenv(gen.ENV_FORCE, "1")
    gen.check_size(unit, params)
    monkeypatch.delenv(gen.ENV_FORCE)
    monkeypatch.setenv(gen.ENV_MAX_CELLS, "100_000_000")
    assert gen.check_size(unit, params).cells < 100_000_000
    monkeypatch.setenv(gen.ENV_MAX_CELLS, "1000")
    with pytest.raises(ParamError, match="over the limit of 1,000 estimated cells"):
        gen.check_size("bmma_array")
    for bad in ("abc", "-5", "0", "1e9", "\u0661"):
        monkeypatch.setenv(gen.ENV_MAX_CELLS, bad)
        rc, _, err = run_main(["generate", "lzc"])
        assert rc == 2 and err.count("\n") == 1 and "TCGEN_MAX_CELLS must be a positive" in err


def test_sweep_points_over_the_limit_are_refused_before_any_work(tmp_path, no_elaboration):
    spec = tmp_path / "s.toml"
    spec.write_text("[sweep]\nname = 'big'\n[[group]]\nunit = 'int8_mac_array'\n"
                    "grid = {m = [2, 16], n = [16], k = [64]}\n")
    rc, out, err = run_main(["sweep", str(spec), "-o", str(tmp_path / "o"), "--cache",
                             str(tmp_path / "c")])
    assert rc == 2 and err.count("\n") == 1 and "over the limit" in err and "m=16" in err
    assert not (tmp_path / "o").exists() and not no_elaboration


def test_every_unit_at_its_defaults_and_every_study_point_is_within_the_limit():
    for u in all_units():
        size = gen.check_size(u)                          # raises if not
        if u.family != "hw":
            assert size.cells is not None and size.cells > 0, u.name
    from tcgen.sweep.spec import load
    for spec in sorted((ROOT / "studies").glob("*.toml")):
        text = spec.read_text()
        if not shared_liberty_available() and ("nangate45" in text or "sky130hd" in text):
            continue          # the project runs without ../shared: such a spec cannot load
        load(spec)                                        # check_size on every point


def test_estimates_grow_with_the_array():
    """Twice the rows or the columns of an array: more cells; twice both: at least 2x."""
    for name in ("bmma_array", "int8_mac_array", "lut_array", "mac_dp4_array", "add_dp4_array",
                 "conv_lut_array"):
        u = get_unit(name)
        p = u.params(m=2, n=4)
        base = u.estimate_cells(p)
        for k in ("m", "n"):
            assert u.estimate_cells(u.params(**{**p.as_dict(), k: 2 * getattr(p, k)})) > base
        assert u.estimate_cells(u.params(**{**p.as_dict(), "m": 4, "n": 8})) >= 2 * base


def test_estimates_match_the_measured_cells():
    """Against every flat osu018 row of the committed sweep results: per unit the geometric mean
    of measured / estimated within 0.7..1.4, and every configuration of >= 10k cells within
    0.4..2.5 (the limit guards against configurations 10x-1000x too large)."""
    rows = estimate_ratios(ROOT / "reports")
    assert len(rows) >= 20 and sum(map(len, rows.values())) >= 150     # 190 flat rows, 11-28
    for name, xs in rows.items():
        g = math.exp(sum(math.log(x) for x, _ in xs) / len(xs))
        assert 0.7 <= g <= 1.4, (name, g)
        for x, cells in xs:
            if cells >= 10_000:
                assert 0.4 <= x <= 2.5, (name, x, cells)


def test_console_script_end_to_end(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", *_argv("ppa", *BIG_PORTS)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "estimated" in r.stderr and "input bits" in r.stderr
    assert list(tmp_path.iterdir()) == []

