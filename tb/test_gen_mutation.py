"""The generator-mutation engine (tb/gen_mutation.py, docs/mutation.md "Generator mutation"):
the sample is deterministic and reads the checkout without changing it; in a copy of the
checkout (its own venv, imports checked), the unmutated generator passes its test and a known
mutant of a tiny generator function -- the leading-zero counter's ``z_hi & z_lo`` made
``z_hi | z_lo`` -- is killed by it, and the file is restored.  ``test_gen_mutation_report``
(slow) is the sampled run, ``make gen-mutation``."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import gen_mutation as gm

ROOT = Path(__file__).resolve().parent.parent
LZC_TEST = "tb/test_int_rtl.py::test_lzc_16_exhaustive"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sample_is_deterministic_and_leaves_the_checkout_alone():
    target = next(t for t in gm.GEN_TARGETS if t.path == "hw/pipeline.py")      # small: fast
    before = _sha(ROOT / target.path)
    first = gm.sample(ROOT, target, n=6)
    again = gm.sample(ROOT, target, n=6)
    assert [m.id for m in first] == [m.id for m in again]
    assert [(m.operator, m.occurrence) for m in first] == \
        [(m.operator, m.occurrence) for m in again]
    assert len(first) == 6 and len({m.id for m in first}) == 6
    assert all(m.diff.startswith("--- a/hw/pipeline.py") and m.id.startswith("pipeline-")
               for m in first)
    other = gm.sample(ROOT, target, n=6, seed=gm.SEED + 1)
    assert [m.id for m in other] != [m.id for m in first]        # the seed matters
    assert _sha(ROOT / target.path) == before


def test_targets_are_the_generator_files():
    paths = {t.path for t in gm.GEN_TARGETS}
    assert {f"units/{f}/rtl.py" for f in ("bmma", "lut", "pacq", "sparse", "winograd")} <= paths
    assert {"hw/fparith.py", "hw/intarith.py", "hw/dot.py", "hw/fused.py", "hw/numeric.py"} \
        <= paths
    for t in gm.GEN_TARGETS:
        assert (ROOT / t.path).is_file() and t.tests and t.role in ("generator", "golden")
        for test in t.tests:
            assert (ROOT / test.split("::")[0]).is_file(), test


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    work = tmp_path_factory.mktemp("genmut")
    return gm.make_copy(work)


def test_copy_imports_itself(copy):
    tree, python = copy
    out = subprocess.run([str(python), "-c", "import tcgen.hw.intarith as m; print(m.__file__)"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out).resolve() == (tree / "hw" / "intarith.py").resolve()


@pytest.mark.slow     # 6.5 s: make test's budget (issue 42)
def test_known_mutant_killed_and_original_passes(copy, tmp_path):
    tree, python = copy
    target = gm.GenTarget("hw/intarith.py", "generator", (LZC_TEST,), 1)
    gm.baseline(tree, python, target, tmp_path)                  # raises if it fails
    m = next(m for m in gm.mutations(tree, target.path)
             if m.operator == "core/ReplaceBinaryOperator_BitAnd_BitOr"
             and "z.eq(z_hi & z_lo)" in (tree / target.path).read_text().splitlines()[
                 m.line - 1])
    m.diff = gm._diff(tree, m)
    assert "+        m.d.comb += [z.eq(z_hi | z_lo)," in m.diff
    m.id = gm.mutant_id(m)
    before = _sha(tree / target.path)
    gm.judge(m, tree, python, target.tests, timeout=120, log_dir=tmp_path)
    assert m.status == "killed", m.detail
    assert "test_lzc_16_exhaustive" in m.detail
    assert _sha(tree / target.path) == before                     # restored


def test_triage_entries_name_real_kinds():
    for mid, (kind, why) in gm.TRIAGE.items():
        assert kind in ("equivalent", "killed-by") and why, mid


@pytest.mark.slow
def test_gen_mutation_report():
    """The sampled run (``make gen-mutation``, ~1 h): every file judged, no tooling error."""
    subprocess.run([sys.executable, "scripts/gen_mutation.py"], cwd=ROOT, check=True)
    data = json.loads((ROOT / "reports" / "gen_mutation.json").read_text())
    assert set(data["files"]) == {t.path for t in gm.GEN_TARGETS}
    assert all(f["error"] == 0 for f in data["files"].values())
