"""The sat_add family against the installed tcgen: catalog, Verilog, RTL vs model, PPA, sweep.

Nothing here needs a tcgen checkout: the harness is ``tcgen.verify`` (the verify extra) and the
commands are the installed ``tcgen``.  Run from any folder: the simulations build under
``./build/tcgen`` (or ``TCGEN_BUILD_DIR``).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tcgen as tcgen_package
from tcgen.registry import get_unit
from tcgen.verify import harness
from tcgen.verify.stimulus import cross
from tcgen_satadd.model import sat_add
from tcgen_satadd.params import SatAddParams


def tcgen(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tcgen.cli", *args], capture_output=True,
                          text=True, cwd=cwd)


# -- the golden model: worked numbers -----------------------------------------------------------
def test_model_saturates_at_both_ends():
    r = sat_add(SatAddParams(width=8), [200, 100, 255, 0], [100, 100, 1, 0])
    assert r["y"].tolist() == [255, 200, 255, 0] and r["sat"].tolist() == [1, 0, 1, 0]
    # signed: 127 + 1 -> 127, -128 + -1 -> -128, -1 + 1 -> 0, -100 + -100 -> -128
    r = sat_add(SatAddParams(width=8, signed=True), [0x7F, 0x80, 0xFF, 0x9C], [1, 0xFF, 1, 0x9C])
    assert r["y"].tolist() == [0x7F, 0x80, 0x00, 0x80] and r["sat"].tolist() == [1, 1, 0, 1]


def test_params_are_validated():
    from tcgen.hw.params import ParamError
    with pytest.raises(ParamError, match="sat_add: width must be"):
        SatAddParams(width=1)
    assert get_unit("sat_add").make_params({"width": "12"}).width == 12


# -- the command line -----------------------------------------------------------------------------
def test_listed_by_tcgen(tmp_path):
    r = tcgen("list", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    units = {u["unit"]: u for u in json.loads(r.stdout)}
    assert units["sat_add"]["family"] == "satadd" and "fp_add" in units


def test_generate(tmp_path):
    r = tcgen("generate", "sat_add", "-p", "width=12", "-p", "signed=true", "-o", "sat.v",
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "sat.v").read_text()
    assert "module sat_add(" in text and "width=12" in text


def test_bad_parameter_is_one_line(tmp_path):
    r = tcgen("generate", "sat_add", "-p", "width=99", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "width must be" in r.stderr


def test_ppa_on_osu018(tmp_path):
    r = tcgen("ppa", "sat_add", "-p", "width=8", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["unit"] == "sat_add" and res["area_um2"] > 0 and res["ops_per_cycle"] == 1
    # the flow's cache is in the user's folder (./build/tcgen/ppa unless TCGEN_BUILD_DIR or
    # TCGEN_PPA_CACHE say otherwise), never inside the installed package
    if not os.environ.get("TCGEN_PPA_CACHE") and not os.environ.get("TCGEN_BUILD_DIR"):
        assert Path(res["netlist"]).is_relative_to(tmp_path / "build" / "tcgen" / "ppa"), \
            res["netlist"]


def test_tiny_sweep(tmp_path):
    (tmp_path / "spec.toml").write_text(textwrap.dedent("""
        [sweep]
        name = "satadd"
        liberties = ["osu018"]
        clock_ns = [10.0]
        [[group]]
        unit = "sat_add"
        label = "sat_add w{width}"
        grid = {width = [4, 8]}
        """))
    r = tcgen("sweep", "spec.toml", "-o", "out", "--cache", "cache", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "out" / "satadd.csv").read_text().splitlines()
    rows = list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))
    assert len(rows) == 2
    areas = sorted(float(r["synth__area__um2"]) for r in rows)
    assert 0 < areas[0] < areas[1]                      # 8 bits cost more than 4


# -- RTL against the model: the installed harness -------------------------------------------------
@pytest.mark.parametrize("signed", [False, True])
def test_rtl_matches_model_exhaustively(signed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = cross(np.arange(64))                          # every pair of 6-bit operands
    s = harness.run_batch("sat_add", SatAddParams(width=6, signed=signed),
                          stimulus={"a": a, "b": b})
    assert s["checked"] == 4096 and s["mismatches"] == 0, s


def test_tcgen_verify(tmp_path):
    r = tcgen("verify", "sat_add", "-p", "width=12", "-p", "signed=true", "--vectors", "2000",
              cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS batch 2000 vectors" in r.stdout and "0 mismatches" in r.stdout
    # the builds went to the user's folder (./build/tcgen, or a tcgen checkout's build/), never
    # into the installed package
    where = subprocess.run([sys.executable, "-c", "from tcgen.verify import build_dir; "
                            "print(build_dir())"], capture_output=True, text=True, cwd=tmp_path)
    build = Path(where.stdout.strip())
    assert (build / "sim" / "sat_add").is_dir(), where
    assert not build.is_relative_to(Path(tcgen_package.__file__).resolve().parent)
