"""The claims ledger (tcgen.claims): loading and its errors, expressions, verdicts from sweep
rows and models, and the CLI's exit-status contract."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcgen.claims import ClaimError, judge, load, render

ROOT = Path(__file__).resolve().parent.parent


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text)
    return p


ROWS = [  # two liberties x two activities of a ratio, and its reference
    {"group": "new", "liberty": "a", "activity": "vectorless@0.1", "status": "ok", "ratio": 1.30},
    {"group": "new", "liberty": "a", "activity": "sim600s1", "status": "ok", "ratio": 0.90},
    {"group": "new", "liberty": "b", "activity": "vectorless@0.1", "status": "ok", "ratio": 1.10},
    {"group": "new", "liberty": "b", "activity": "sim600s1", "status": "failed", "ratio": None},
]


def _claim(value="r.ratio", judge_on="{activity = \"vectorless@0.1\"}", paper=1.33, tol=0.1,
           compare="within", extra=""):
    return f"""
[[claim]]
id = "x"
where = "Fig. 1"
claim = "one line"
paper_value = {paper}
kind = "ratio"
source = "sweep"
sweep = "s"
rows = {{r = {{group = "new"}}}}
value = "{value}"
judge_on = {judge_on}
tolerance = {tol}
compare = "{compare}"
{extra}"""


@pytest.fixture
def results(tmp_path):
    _write(tmp_path / "res", "s.json", json.dumps({"rows": ROWS}))
    return tmp_path / "res"


def test_verdicts_from_sweep_rows(tmp_path, results):
    # paper 1.33 ±10 %: a (1.30) holds, b (1.10) does not -> mixed
    _write(tmp_path / "c", "f.toml", _claim())
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "mixed" and "a vectorless: ours 1.30 vs 1.33 (-2.3 %): holds" in c.reason \
        and "b vectorless: ours 1.10 vs 1.33 (-17.3 %): fails" in c.reason
    assert [None if x[1] is None else round(x[1], 2) for x in c.cells] == [1.30, 0.90, 1.10,
                                                                           None]
    assert [x[2] for x in c.cells] == [True, False, True, False]      # judged: vectorless
    # judged on liberty a only -> holds (as a ratio: kind ratio)
    _write(tmp_path / "c", "f.toml", _claim(judge_on='{liberty = "a", activity = "vectorless@0.1"}'))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "holds as a ratio"
    # a paper value far from every judged cell -> fails
    _write(tmp_path / "c", "f.toml", _claim(paper=3.0))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "fails"
    # at_least: 1.10 and 1.30 >= 1.0 -> holds
    _write(tmp_path / "c", "f.toml", _claim(paper=1.0, tol=0.0, compare="at_least"))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "holds as a ratio"
    # a failed point that is judged makes the claim untestable, never a silent verdict
    _write(tmp_path / "c", "f.toml", _claim(judge_on='{liberty = "b"}'))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "untestable here" and "missing or failed" in c.reason


def test_rows_matching_two_points_are_an_error(tmp_path):
    """A claim's rows must name one point per liberty and activity: a sweep that measures a
    point twice (two ABC fraig limits, two synthesis modes) is refused, naming the column."""
    rows = [dict(ROWS[0], fraig_conflicts="default"), dict(ROWS[0], fraig_conflicts="1000")]
    _write(tmp_path / "res", "s.json", json.dumps({"rows": rows}))
    _write(tmp_path / "c", "f.toml", _claim())
    with pytest.raises(ClaimError, match=r"match 2 rows of s.json on a vectorless@0.1; name "
                                         r"fraig_conflicts in the rows' where"):
        judge(load(tmp_path / "c"), tmp_path / "res")
    _write(tmp_path / "c", "f.toml", _claim().replace('{group = "new"}',
                                                      '{group = "new", fraig_conflicts = 1000}'))
    c, = judge(load(tmp_path / "c"), tmp_path / "res")
    assert c.cells[0][1] == pytest.approx(1.30)


def test_expressions_over_rows_and_models(tmp_path, results):
    _write(tmp_path / "c", "f.toml", _claim(value="100 * (r.ratio - 1)", paper=30, tol=0.01,
                                            judge_on='{liberty = "a", activity = "vectorless@0.1"}'))
    c, = judge(load(tmp_path / "c"), results)
    assert c.cells[0][1] == pytest.approx(30.0) and c.verdict == "holds as a ratio"
    _write(tmp_path / "c", "f.toml", """
[[claim]]
id = "m"
where = "counting"
claim = "popcount-128 needs >= 120 full adders"
paper_value = 120
kind = "bound"
compare = "at_least"
tolerance = 0.0
source = "model"
call = "tcgen.units.bmma.rtl:popcount_census"
args = {n = 128}
value = "x.fa"
""")
    c, = judge(load(tmp_path / "c"), results)
    assert c.cells[0][1] == 120 and c.verdict == "holds"


@pytest.mark.parametrize("text,msg", [
    ("[[claim]]\nid = 'x'\n", "where missing"),
    (_claim(value="__import__('os')"), "only min, max, abs may be called"),
    (_claim(value="q.ratio"), "uses 'q'"),
    (_claim(extra="bogus = 1"), "unknown key bogus"),
    (_claim(compare="about"), "compare 'about'"),
    ("[[claim]]\nid = 'u'\nwhere = 'w'\nclaim = 'c'\nstatus = 'untestable'\n", "says why"),
    ("not toml = = 1", "not valid TOML"),
])
def test_bad_ledgers_are_one_line_errors(tmp_path, text, msg):
    _write(tmp_path / "c", "f.toml", text)
    with pytest.raises(ClaimError, match=msg):
        load(tmp_path / "c")


def test_missing_results_name_the_command(tmp_path):
    _write(tmp_path / "c", "f.toml", _claim())
    with pytest.raises(ClaimError, match=r"tcgen sweep studies/s.toml"):
        judge(load(tmp_path / "c"), tmp_path / "nothing")


def test_pending_and_untestable_render(tmp_path, results):
    _write(tmp_path / "c", "f.toml", """
[claims]
family = "fam"
[[claim]]
id = "p"
where = "Table 1"
claim = "pending | with a bar"
status = "pending"
[[claim]]
id = "u"
where = "Fig. 2"
claim = "a GPU timing"
status = "untestable"
why = "GPU software"
""")
    claims = judge(load(tmp_path / "c"), results)
    assert [c.verdict for c in claims] == ["pending", "untestable here"]
    md = render(claims, "tcgen claims")
    assert "pending \\| with a bar" in md and "**2 claims**" in md and "GPU software" in md


def test_shipped_ledger_has_every_built_claim_judged():
    """The repository's ledger: >= 25 claims; every claim of a built family (PacQ, BTC-BNN, the
    LUT Tensor Core, the Sparse Tensor Core, the bounds, Winograd) has a verdict other than
    pending (from the committed sweep results in reports/ and the families' models)."""
    claims = judge(load(ROOT / "claims"), ROOT / "reports")
    assert len(claims) >= 25
    built = [c for c in claims if c.family in ("pacq", "bmma", "lut", "sparse", "bounds",
                                                   "winograd")]
    assert built and all(c.verdict not in ("", "pending") for c in built)
    assert not [c.id for c in claims if c.verdict == "pending"]


def test_cli_contract(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "claims", "--claims",
                        str(tmp_path / "none")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no folder" in r.stderr
    out = tmp_path / "claims.md"
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "claims", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("# Claims ledger")
