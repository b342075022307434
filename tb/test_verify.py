"""``tcgen verify`` (tcgen/verify/cli.py) and the installed harness's own guarantees (issue 41):

* small units of each kind pass (fixed latency on the batch path; a stream unit through the
  batch path and the stream bench's three scenarios), one PASS line per result;
* a wrong circuit FAILs: a throwaway plug-in family whose RTL is off by one for one operand value
  gives exit 1 and the mismatch with its inputs; fixed, the same configuration is *rebuilt* (the
  build-cache key hashes the plug-in's own package, not only tcgen's) and passes;
* bad input is one line and exit 2: unknown unit, bad -p, --seed / TCGEN_SEED out of 0..2**32-1,
  --vectors, a bench the unit does not have, the verify extra missing;
* ``TCGEN_BUILD_DIR`` moves the builds.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcgen.cli import main
from tcgen.hw.params import ParamError
from tcgen.verify import build_dir
from tcgen.verify import cli as vcli
from tcgen.verify import harness

ROOT = Path(__file__).resolve().parent.parent


def _verify(capsys, *args) -> tuple[int, str, str]:
    rc = main(["verify", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("args, n_directed", [
    (["lzc", "-p", "width=10"], 5),
    (["popcount", "-p", "n=24"], 5),
    (["fp_add", "-p", "fmt=fp8_e4m3"], 25),
])
def test_small_units_pass(capsys, args, n_directed):
    rc, out, err = _verify(capsys, *args, "--vectors", "3000", "--seed", "5")
    assert rc == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith(f"verify {args[0]} ") and "seed 5" in lines[0]
    assert lines[1].startswith(f"PASS batch 3000 vectors ({n_directed} directed, "
                               f"{3000 - n_directed} random), 0 mismatches (")
    assert len(lines) == 2


def test_stream_unit_runs_every_scenario(capsys):
    rc, out, err = _verify(capsys, "wino_linebuf", "--vectors", "48")
    assert rc == 0, out + err
    lines = out.splitlines()[1:]
    assert lines[0].startswith("PASS batch 48 inputs (random), ") and " 0 mismatches" in lines[0]
    assert [ln.split()[:3] for ln in lines[1:]] == [
        ["PASS", "stream", "back_to_back"], ["PASS", "stream", "backpressure"],
        ["PASS", "stream", "reset_mid_operation"]]
    assert all("32 inputs" in ln for ln in lines[1:])


def test_fixed_latency_bench(capsys):
    rc, out, err = _verify(capsys, "int_mul", "-p", "a_width=4", "-p", "b_width=4",
                           "--bench", "fixed_latency", "--vectors", "300")
    assert rc == 0, out + err
    assert out.splitlines()[1].startswith("PASS fixed_latency 300 vectors (25 directed, 275 "
                                          "random), latency 0, 0 mismatches")


# -- a wrong circuit fails; a changed plug-in is rebuilt --------------------------------------------
PLUGIN = '''
"""A throwaway plug-in family: y = a + b (mod 2**w), its RTL off by one when a == 3."""
from dataclasses import dataclass

import numpy as np
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.params import Params, param
from tcgen.hw.spec import UnitSpec


@dataclass(frozen=True)
class AddParams(Params):
    UNIT = "offby_add"
    width: int = param(4, range=(2, 8), doc="bits")


class Add(wiring.Component):
    def __init__(self, p):
        self.latency = 0
        super().__init__({"a": In(p.width), "b": In(p.width), "y": Out(p.width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a + self.b + (self.a == 3))     # BUG
        return m


def model(p, a, b):
    mask = (1 << p.width) - 1
    return {"y": (np.asarray(a, np.uint64) + np.asarray(b, np.uint64)) & np.uint64(mask)}


UNITS = (UnitSpec(name="offby_add", family="offby", summary="a + b", params=AddParams,
                  build=Add, model=model),)
'''


def _plugin(tmp_path) -> Path:
    """The family as an installed distribution would look: a package and a dist-info folder
    declaring the entry point (importlib.metadata reads it from any folder on the path)."""
    site = tmp_path / "site"
    (site / "tcgen_offby").mkdir(parents=True)
    (site / "tcgen_offby" / "__init__.py").write_text(PLUGIN)
    info = site / "tcgen_offby-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tcgen-offby\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tcgen.families]\noffby = tcgen_offby:UNITS\n")
    return site


def test_wrong_rtl_fails_and_a_changed_plugin_is_rebuilt(tmp_path):
    site = _plugin(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(site), TCGEN_BUILD_DIR=str(tmp_path / "b"))
    cmd = [sys.executable, "-m", "tcgen.cli", "verify", "offby_add", "--vectors", "256"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("FAIL batch 256 vectors") and " 0 mismatches" not in lines[1]
    shown = [ln for ln in lines if ln.startswith("  mismatch #")]
    assert shown and all("a=0x3 " in ln for ln in shown), r.stdout     # with its inputs
    assert (tmp_path / "b" / "sim" / "offby_add").is_dir()               # TCGEN_BUILD_DIR
    # the plug-in's RTL fixed: the same configuration is built again (not the stale build)
    src = site / "tcgen_offby" / "__init__.py"
    src.write_text(src.read_text().replace(" + (self.a == 3))     # BUG", ")"))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[1].startswith("PASS batch 256 vectors")


def test_unit_source_files_name_the_plugin_package_only(tmp_path, monkeypatch):
    from tcgen import registry
    site = _plugin(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    registry._catalog.cache_clear()
    try:
        files = harness.unit_source_files("offby_add")
        assert [label for label, _ in files] == ["tcgen_offby/__init__.py"]
        before = harness.source_hash("offby_add")
        (site / "tcgen_offby" / "extra.py").write_text("# a new file of the package\n")
        assert harness.source_hash("offby_add") != before
        assert harness.unit_source_files("lzc") == []       # tcgen's own: in source_hash
    finally:
        registry._catalog.cache_clear()


# -- bad input: one line, exit 2 -------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["nosuch"], "unknown unit 'nosuch'"),
    (["lzc", "-p", "width=abc"], "width must be"),
    (["lzc", "-p", "width"], "-p takes name=value"),
    (["lzc", "--seed", "-1"], "--seed must be an integer in 0..4294967295"),
    (["lzc", "--seed", "abc"], "--seed must be an integer"),
    (["lzc", "--seed", str(2**32)], "--seed must be an integer"),
    (["lzc", "--vectors", "0"], "--vectors must be in 1.."),
    (["lzc", "--bench", "stream"], "not streams"),
    (["wino_linebuf", "--bench", "fixed_latency"], "is a stream unit"),
    (["lzc", "--bench", "nope"], "invalid choice"),
])
def test_bad_input_is_one_line(capsys, args, needle):
    rc, out, err = _verify(capsys, *args)
    assert rc == 2 and err.count("\n") == 1 and needle in err, err
    assert out == ""


@pytest.mark.parametrize("value", ["-1", "abc", "4294967296", "+3", " 3"])
def test_bad_tcgen_seed(capsys, monkeypatch, value):
    monkeypatch.setenv("TCGEN_SEED", value)
    rc, out, err = _verify(capsys, "lzc")
    assert rc == 2 and err.count("\n") == 1 and "TCGEN_SEED must be an integer" in err, err
    with pytest.raises(ParamError, match="TCGEN_SEED must be an integer in 0..4294967295"):
        harness.seed(1)                   # the harness (tests, plug-ins) refuses it the same way


def test_tcgen_seed_in_range(monkeypatch):
    monkeypatch.setenv("TCGEN_SEED", "4294967295")
    assert harness.seed(1) == 2**32 - 1
    monkeypatch.delenv("TCGEN_SEED")
    assert harness.seed(7) == 7


def test_missing_extra_names_it(capsys, monkeypatch):
    real = vcli._find_spec
    monkeypatch.setattr(vcli, "_find_spec", lambda m: None if m == "cocotb" else real(m))
    rc, out, err = _verify(capsys, "lzc")
    assert rc == 2 and err.count("\n") == 1, err
    assert "tcgen verify needs the verify extra: pip install 'tcgen-hdl[verify]'" in err


def test_build_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("TCGEN_BUILD_DIR", raising=False)
    assert build_dir() == ROOT / "build"          # a checkout: its build/ (installed: the wheel
    monkeypatch.setenv("TCGEN_BUILD_DIR", str(tmp_path / "x"))   # test, ./build/tcgen)
    assert build_dir() == tmp_path / "x"
    assert harness.BUILD == ROOT / "build" / "sim"
