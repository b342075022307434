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
from pathlib import Path

import pytest

from tcgen.verify import harness
import mutation
from tcgen.registry import get_unit

ROOT = Path(__file__).resolve().parent.parent
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


def _report_rows():
    data = json.loads((ROOT / "reports" / "mutation.json").read_text())
    return [(fam, t["unit"], t["params"], t.get("verilog_sha256"))
            for fam, f in sorted(data["families"].items()) for t in f["targets"]]


def test_mutation_report_has_every_target():
    rows = {(fam, unit) for fam, unit, _, _ in _report_rows()}
    want = {(fam, t.unit) for fam, ts in mutation.FAMILIES.items() for t in ts}
    assert want <= rows, f"reports/mutation.md lacks {sorted(want - rows)}: run " \
        f".venv/bin/python scripts/mutation_report.py --family <family>"


@pytest.mark.parametrize("family,unit,params,sha", _report_rows(),
                         ids=[f"{f}-{u}" for f, u, _, _ in _report_rows()])
def test_mutation_report_row_is_current(family, unit, params, sha):
    """Each row of reports/mutation.md was measured on the Verilog the generator emits today:
    the SHA-256 recorded with the target equals that of ``tcgen.generate.verilog`` now."""
    cmd = f".venv/bin/python scripts/mutation_report.py --target {unit}"
    assert sha, f"reports/mutation.json: no Verilog hash recorded for {family}/{unit}; " \
        f"re-measure it: {cmd}"
    now = mutation.verilog_sha256(unit, params)
    assert now == sha, (f"reports/mutation.md's {family}/{unit} row is stale: it was measured "
                        f"on Verilog {sha[:12]}, the generator now emits {now[:12]}; "
                        f"regenerate it: {cmd}")


@pytest.mark.slow
def test_mutation_report():
    """The whole run (``make mutation``, ~1 h): every family at >= 95 % killed."""
    subprocess.run([sys.executable, "scripts/mutation_report.py", "-j", "1"], cwd=ROOT,
                   check=True)
    data = json.loads((ROOT / "reports" / "mutation.json").read_text())
    for fam in mutation.FAMILIES:
        assert data["families"][fam]["kill_rate"] >= 0.95, fam


# -- the proofs of a survivor (mutation._prove): instance alone, whole unit, from reset ---------
#: a unit with a sub-component and a register: the sub-component's input bit 3 is always 0 in
#: this context (``a & 7``), ``| 0`` is a no-op, and the counter never reaches 3
PROOF_UNIT = """
module sub(input [3:0] x, input [3:0] y, output [4:0] o);
  wire [3:0] xm;
  assign xm = x | 4'h0;
  assign o = xm + y;
endmodule
module unit(input clk, input rst, input [3:0] a, input [3:0] b, output [4:0] y,
            output [1:0] q);
  reg [1:0] c = 2'h0;
  sub s (.x(a & 4'h7), .y(b), .o(y));
  always @(posedge clk) c <= (rst || c == 2'h2) ? 2'h0 : c + 2'h1;
  assign q = (c == 2'h3) ? 2'h1 : c;
endmodule
"""


def _proof_mutant(work, cell: str, rest: str):
    """The mutation of PROOF_UNIT that Yosys lists for ``cell`` with ``rest`` (mode, port,
    bit), made and proved."""
    (work / "unit.v").write_text(PROOF_UNIT)
    target = mutation.Target("t", "unit", (), 400)
    m = next(m for m in mutation.mutants(target, {}, work)
             if f"-cell {cell} " in m.line and rest in m.line)
    mutation.make_mutant(m, work)
    mutation._prove(m, work / m.id / "mutant.v", work)
    return m


def test_survivor_proofs_instance_whole_and_from_reset(work):
    """Step 1 proves a no-op inside the instance on the instance alone; a fault the instance
    alone shows but its context never drives (input bit 3) goes on to the whole unit (step 3);
    a no-op of the top's own logic is proved with the instance cut out (step 2); a fault only
    an unreachable counter state shows is settled from reset (step 4); a real fault is
    reported as one."""
    or_, add, eq = r"$flatten\s.$or$unit.v:4$1", r"$flatten\s.$add$unit.v:5$2", \
        "$eq$unit.v:12$9"
    m = _proof_mutant(work, or_, "-mode const0 -module unit -cell " + or_ + " -port B -portbit 0")
    assert m.status == "equivalent" and "on instance s (sub) alone" in m.detail, m.detail
    m = _proof_mutant(work, or_, "-mode const0 -module unit -cell " + or_ + " -port A -portbit 3")
    assert m.status == "equivalent" and "to the original" in m.detail, m.detail
    and_ = "$and$unit.v:10$3"                                  # a & 7: bit 3 already 0
    m = _proof_mutant(work, and_, "-mode const0 -module unit -cell " + and_ + " -port B "
                      "-portbit 3")
    assert m.status == "equivalent" and "instances of sub cut out" in m.detail, m.detail
    m = _proof_mutant(work, eq, "-mode const0 -module unit -cell " + eq + " -port Y -portbit 0")
    assert m.status == "equivalent" and "from reset" in m.detail, m.detail
    m = _proof_mutant(work, add, "-mode inv -module unit -cell " + add + " -port Y -portbit 0")
    assert m.status == "" and m.detail.startswith("not equivalent"), m.detail
