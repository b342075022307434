"""Issue 41's front door: ``tcgen list UNIT / --family / --brief``, ``tcgen lint``,
``tcgen ppa --progress`` and the breakdown that says what it is (docs/cli.md)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcgen import cli
from tcgen.registry import all_units
from tcgen.synth.lint import lint

from cli_checks import assert_bad_input, run_main

ROOT = Path(__file__).resolve().parent.parent


def test_list_one_family_one_unit_brief():
    rc, out, err = run_main(["list", "--family", "lut", "--brief"])
    lut = sorted(u.name for u in all_units() if u.family == "lut")
    assert rc == 0 and [ln.split()[0] for ln in out.splitlines()] == lut
    rc, out, err = run_main(["list", "lzc", "--json"])
    assert rc == 0 and [u["unit"] for u in json.loads(out)] == ["lzc"]
    assert json.loads(out)[0]["params"][0]["name"] == "width"
    rc, out, err = run_main(["list", "--family", "nope"])
    assert_bad_input(rc, err, needle="unknown family 'nope'; families are: bmma, hw, lut")
    rc, out, err = run_main(["list", "nope"])
    assert_bad_input(rc, err, needle="unknown unit 'nope'")


def test_lint_a_unit_and_a_file(tmp_path):
    rc, out, err = run_main(["lint", "lzc", "-p", "width=8"])
    assert rc == 0 and out.strip().startswith("lzc width-8: clean (Verilator"), (out, err)
    bad = tmp_path / "bad.v"
    bad.write_text("module t(input a, output [1:0] y); assign y = a; endmodule\n")
    rc, out, err = run_main(["lint", str(bad)])
    assert rc == 1 and "%Warning-WIDTHEXPAND" in out and "1 warning(s)" in out
    res = lint(bad)
    assert not res.clean and res.warnings and not res.errors
    undefined = tmp_path / "undef.v"
    undefined.write_text("module t(input a, output y); assign y = b; endmodule\n")
    rc, out, err = run_main(["lint", str(undefined)])
    assert rc == 1 and "1 error(s)" in out
    rc, out, err = run_main(["lint", str(tmp_path / "none.v")])
    assert_bad_input(rc, err, needle="lint: no file")
    rc, out, err = run_main(["lint", str(bad), "-p", "width=8"])
    assert_bad_input(rc, err, needle="-p goes with a UNIT")


def test_ppa_progress_lines(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "ppa", "lzc", "-p", "width=5",
                        "--progress", "on", "--no-cache", "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    stages = [ln.split("] ", 1)[1].split(":")[0].split(" ")[0] for ln in r.stderr.splitlines()]
    assert stages[:4] == ["elaborating", "Verilog", "yosys", "yosys"], r.stderr
    assert "opensta" in stages and all(ln.startswith("[tcgen ppa ") for ln in
                                       r.stderr.splitlines())
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "ppa", "lzc", "-p", "width=5",
                        "--json", str(tmp_path / "r.json")], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0 and r.stderr == ""      # not a terminal: silent


def test_breakdown_says_what_it_is():
    r = {"breakdown": [{"module": "top", "instances": 1, "area_um2": 0.0, "cell_count": 0},
                       {"module": "top__Add_1", "instances": 4, "area_um2": 10.0,
                        "cell_count": 3},
                       {"module": "top__Mul_2", "instances": 2, "area_um2": 50.0,
                        "cell_count": 9}],
         "area_um2": 130.0}
    lines = cli._breakdown_lines(r)
    assert "own cells of one instance (submodules excluded) x instances = 140.0 um^2" in lines[0]
    assert "1.08x the flat 130.0 um^2" in lines[0]
    assert [ln.split()[0] for ln in lines[2:4]] == ["top__Mul_2", "top__Add_1"]
    assert lines[2].split()[1:4] == ["2", "50.0", "100.0"]
    assert "1 wrapper module(s)" in lines[-1] and not any(" top " in ln for ln in lines)
