"""The mutation-testing engine (tb/mutation.py, docs/mutation.md): mutant generation is
deterministic, a real mutant of a tiny unit is killed by its real test while the unmutated
netlist passes, the harness hook substitutes exactly one configuration and leaves every other run
alone, and a survivor can be proved equivalent.  ``test_mutation_report`` (slow) is the whole
run, ``make mutation``: every family at >= 95 % killed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import harness
import mutation
from tcgen.registry import get_unit

ROOT = harness.ROOT
POPCOUNT_TEST = "tb/test_int_rtl.py::test_popcount_exhaustive[8]"


@pytest.fixture
def work():
    """A work folder inside the checkout (the harness names run folders relative to it)."""
    d = ROOT / "build" / "mutation-test" / f"{os.getpid()}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _popcount(work, n=8, count=6):
    params = get_unit("popcount").params(n=n)
    shutil.copyfile(harness.verilog_file("popcount", params), work / "popcount.v")
    target = mutation.Target("hw", "popcount", (POPCOUNT_TEST,), count)
    return target, params


def test_mutant_generation_is_deterministic(work):
    target, params = _popcount(work)
    first = mutation.mutants(target, params.as_dict(), work)
    again = mutation.mutants(target, params.as_dict(), work)
    assert [m.line for m in first] == [m.line for m in again]
    assert [m.id for m in first] == [m.id for m in again]
    assert len(first) == target.n + 1 and first[0].line == "mutate -mode none"
    assert len({m.id for m in first}) == len(first)           # ids are distinct ...
    assert all(m.id == mutation.mutant_id("popcount", m.line) for m in first)   # ... and stable
    assert all(m.line.startswith("mutate -mode ") for m in first)
    assert all(m.src.startswith("popcount.v:") and m.code for m in first[1:])


def test_hook_substitutes_one_configuration_only(work, monkeypatch):
    target, params = _popcount(work)
    m = mutation.mutants(target, params.as_dict(), work)[1]
    path = mutation.make_mutant(m, work)
    assert path.read_text() != (work / "popcount.v").read_text()
    normal = harness.verilog_file("popcount", params)
    other = get_unit("popcount").params(n=5)
    normal_other = harness.verilog_file("popcount", other)
    monkeypatch.setenv("TCGEN_MUTANT", str(path))
    assert harness.verilog_file("popcount", params) == path       # the mutant stands in
    assert path.with_suffix(".used").exists()
    assert harness._config_dir("popcount", params, "icarus").is_relative_to(path.parent)
    assert harness.verilog_file("popcount", other) == normal_other          # others: untouched
    assert harness._config_dir("popcount", other, "icarus").is_relative_to(harness.BUILD)
    assert harness.verilog_file("popcount", params, top="other_top") != path
    monkeypatch.delenv("TCGEN_MUTANT")
    assert harness.verilog_file("popcount", params) == normal                # hook off
    record = work / "record.jsonl"
    monkeypatch.setenv("TCGEN_MUTATION_RECORD", str(record))
    harness.verilog_file("popcount", other)
    assert json.loads(record.read_text()) == {"unit": "popcount", "params": other.as_dict()}


def test_real_mutant_killed_and_unmutated_netlist_passes(work):
    """popcount n=8 and its exhaustive test: the flattened netlist (the ``none`` mutation)
    survives (and is proved equivalent); the first sampled mutation -- a half-adder carry of
    the compressor tree tied to 0 -- is killed."""
    target, params = _popcount(work, count=2)
    none, first = mutation.mutants(target, params.as_dict(), work)[:2]
    assert "-mode const0" in first.line and "-port Y" in first.line
    mutation.judge(none, target, work, timeout=120, prove=False, keep=True)
    assert none.status == "survived", none.detail
    mutation._prove(none, work / none.id / "mutant.v", work)
    assert none.status == "equivalent" and none.proof_s is not None, none.detail
    mutation.judge(first, target, work, timeout=120)
    assert first.status == "killed", first.detail
    assert "test_popcount_exhaustive[8]" in first.detail
    assert not (work / first.id).exists()                   # killed mutants leave nothing


def test_families_cover_every_family():
    assert set(mutation.FAMILIES) == {"hw", "pacq", "bmma", "lut", "sparse", "winograd"}
    for fam, targets in mutation.FAMILIES.items():
        assert sum(t.n for t in targets) >= 40, fam
        for t in targets:
            assert t.family == fam and get_unit(t.unit).family == fam and t.tests


@pytest.mark.slow
def test_mutation_report():
    """The whole run (``make mutation``, ~1 h): every family at >= 95 % killed."""
    subprocess.run([sys.executable, "scripts/mutation_report.py", "-j", "1"], cwd=ROOT,
                   check=True)
    data = json.loads((ROOT / "reports" / "mutation.json").read_text())
    for fam in mutation.FAMILIES:
        assert data["families"][fam]["kill_rate"] >= 0.95, fam
