"""The claims ledger (tcgen.claims): loading and its errors, expressions, verdicts from sweep
rows and models, and the CLI's exit-status contract."""
from __future__ import annotations

import json
import re
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
           compare="within", extra="", evidence="hardware"):
    ev = f'evidence = "{evidence}"' if evidence else ""
    return f"""
[[claim]]
id = "x"
{ev}
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
    (_claim(value="__import__('os')"), "value .*: only above, abs, argmax, below, max, min "
                                       "may be called"),
    (_claim(evidence="vibes"), "evidence 'vibes'"),
    (_claim(extra='views = {a = "r.ratio +"}'), "views.a 'r.ratio \\+' is not an expression"),
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


def test_cli_contract(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "claims", "--claims",
                        str(tmp_path / "none")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no folder" in r.stderr


# -- issue 39: margins, noise, siblings, pre-registration, --strict ----------------------------
def test_verdict_text_states_the_margin(tmp_path, results):
    """at_least with slack: 'holds within X % slack' names ours, the paper's and the
    tolerance; a fail names the criterion and the outcome, never 'ours at least'."""
    _write(tmp_path / "c", "f.toml", _claim(paper=1.35, tol=0.1, compare="at_least",
                                            judge_on='{liberty = "a", activity = "vectorless@0.1"}'))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "holds as a ratio"
    assert "criterion ≥ 1.35 with 10 % tolerance (≥ 1.22)" in c.reason
    assert "ours 1.30 vs ≥ 1.35: holds within 3.7 % (relative) slack (tolerance 10 %)" in c.reason
    _write(tmp_path / "c", "f.toml", _claim(paper=1.2, tol=0.0, compare="at_least",
                                            judge_on='{liberty = "a", activity = "vectorless@0.1"}'))
    c, = judge(load(tmp_path / "c"), results)
    assert "ours 1.30 ≥ 1.20: holds" in c.reason and "slack" not in c.reason
    _write(tmp_path / "c", "f.toml", _claim(paper=3.0, tol=0.25))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "fails"
    assert c.reason.startswith("criterion within ±25 % of 3.00 (2.25...3.75)")
    assert "a vectorless: ours 1.30 vs 3.00 (-56.7 %): fails" in c.reason


def test_holds_as_a_ratio_only_for_measured_hardware(tmp_path, results):
    for evidence, verdict in (("hardware", "holds as a ratio"), ("proxy", "holds"),
                              ("note", "holds"), ("", "holds")):
        _write(tmp_path / "c", "f.toml", _claim(
            judge_on='{liberty = "a", activity = "vectorless@0.1"}', evidence=evidence))
        c, = judge(load(tmp_path / "c"), results)
        assert c.verdict == verdict, evidence


def _noise(folder: Path, spread: float):
    rows = [{"unit": u, "params": "", "liberty": "a", "n": 9, "area_min": 100.0,
             "area_median": 100.0, "area_max": 100.0 * (1 + spread)}
            for u in ("fp_mul", "fp_add")]
    _write(folder, "noise.json", json.dumps({"rows": rows}))


def test_a_margin_inside_the_noise_band_is_within_noise(tmp_path, results):
    """1.30 against >= 1.33 with 0 tolerance fails by 2.3 %; with two designs of 1 % area
    spread each (band 2 %) it still fails, with 1.5 % each (band 3 %) it is within noise, and
    the headline counts it; a design without a band is named, never guessed."""
    noisy = _claim(paper=1.33, tol=0.0, compare="at_least",
                   judge_on='{liberty = "a", activity = "vectorless@0.1"}',
                   extra='noise = ["area"]\nnoise_units = ["fp_mul", "fp_add"]')
    _write(tmp_path / "c", "f.toml", noisy)
    _noise(results, 0.01)
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "fails" and c.cells[0].band == pytest.approx(0.02)
    _noise(results, 0.015)
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "within noise" and c.decided == "fails"
    assert "margin 2.3 % inside the noise band 3.0 %" in c.reason
    md = render([c], "tcgen claims")
    assert "1 within noise" in md and "x: fails without noise" in md
    _write(tmp_path / "c", "f.toml", noisy.replace('"fp_add"]', '"lzc"]'))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "fails" and c.cells[0].band is None
    assert c.cells[0].band_text == "not measured: lzc area"


def test_views_show_other_flow_choices_and_crossings(tmp_path, results):
    _write(tmp_path / "c", "f.toml", _claim(
        paper=2.0, tol=0.1, judge_on='{liberty = "a", activity = "vectorless@0.1"}',
        extra='views = {"at each fmax" = "r.ratio * 1.6", "another design" = "r.ratio * 1.5"}'
              '\nflow_views = ["at each fmax"]'))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "fails"
    assert c.cells[0].views == (("at each fmax", pytest.approx(2.08)),
                                ("another design", pytest.approx(1.95)))
    # only the flow choice counts: a different design meeting the criterion is no crossing
    assert c.crossing.startswith("a vectorless at each fmax 2.08; the paper's 2.00 lies "
                                 "between ours 0.90 (a sim600s1) and 2.08 (a vectorless at "
                                 "each fmax)")
    assert "another design" not in c.crossing


@pytest.mark.parametrize("extra,msg", [
    ('method = "m1"', "method 'm1' is not declared"),
    ('method = "m1"\n[[method]]\nid = "m1"\nwhat = "a proxy"\njudges = ["y"]',
     "x: uses method m1 but is not in its judges"),
    ('method = "m1"\n[[method]]\nid = "m1"\nwhat = "a proxy"\njudges = ["x", "y"]',
     "judges y, which is not a claim"),
    ('[[method]]\nid = "m1"\nwhat = "a proxy"\njudges = ["x"]', "x does not say method"),
    ('method = "m1"\n[[method]]\nid = "m2"\nwhat = "a proxy"\njudges = ["x"]',
     "method 'm1' is not declared"),
    ('[[left_out]]\nwhat = "Conv3 5-15 % faster"\nwhere = "Fig. 13"\nwhy = "proxy"\n'
     'method = "m9"', "method 'm9' is not declared"),
    ('[[left_out]]\nwhat = "x"\nwhere = "y"', "why missing"),
    ('evidence = "vibes"', "not valid TOML"),     # given twice: the helper's and this one
    ('cause = "design"', "cause and why_fails go together"),
    ('noise = ["area"]', "noise and noise_units go together"),
    ('noise = ["heat"]\nnoise_units = ["p"]', "noise 'heat'"),
    ('noise = ["area"]\nnoise_units = ["fp_mull"]', "noise_units: 'fp_mull' is not a unit"),
    ('[[claim.revision]]\nfield = "where"\nnew = 1', "revision: field 'where'"),
])
def test_sibling_rule_and_new_keys_are_checked(tmp_path, extra, msg):
    _write(tmp_path / "c", "f.toml", _claim(extra=extra))
    with pytest.raises(ClaimError, match=msg):
        load(tmp_path / "c")


def test_sibling_rule_accepts_a_declared_method(tmp_path, results):
    from tcgen.claims import load_ledger
    _write(tmp_path / "c", "f.toml", _claim(extra='method = "m1"') + """
[[method]]
id = "m1"
what = "a cycle model in place of the GPU timing"
judges = ["x"]

[[left_out]]
what = "Conv3: 5-15 % faster"
where = "Fig. 13"
why = "the proxy cannot see the GPU's cache"
method = "m1"
""")
    ledger = load_ledger(tmp_path / "c")
    claims = judge(ledger.claims, results)
    md = render(claims, "tcgen claims", ledger)
    assert "| m1 | a cycle model in place of the GPU timing | x | Conv3: 5-15 % faster |" in md
    assert "| Fig. 13 | Conv3: 5-15 % faster | the proxy cannot see the GPU's cache " \
           "(method m1) |" in md


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "HOME": str(cwd),
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                        "GIT_AUTHOR_DATE": "2026-01-02T00:00:00", "PATH": "/usr/bin:/bin",
                        "GIT_COMMITTER_DATE": "2026-01-02T00:00:00"})


def _cli(*args, cwd=ROOT):
    """``tcgen claims ARGS`` in this process (the CLI's own entry point, its exit status and
    output): a subprocess per call would cost a second of imports each."""
    import contextlib
    import io
    import os

    from tcgen.cli import main
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["claims", *args])
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


def test_a_post_hoc_tolerance_change_is_caught(tmp_path):
    """A ledger in a git repository: the claim is registered pending (tolerance 0), then
    measured (the report shows 1.30 failing >= 1.33), then its tolerance is loosened to 0.05
    so that it holds.  The history lists the change with the value at the time; --strict
    refuses it until a [[claim.revision]] gives a reason."""
    repo = tmp_path / "repo"
    res = repo / "reports"
    _write(res, "s.json", json.dumps({"rows": ROWS}))
    _write(repo / "claims", "f.toml", _claim(paper=1.33, tol=0.0, compare="at_least",
                                             judge_on='{liberty = "a", activity = "vectorless@0.1"}',
                                             extra='status = "pending"'))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "registered")
    measured = _claim(paper=1.33, tol=0.0, compare="at_least",
                      judge_on='{liberty = "a", activity = "vectorless@0.1"}',
                      extra='cause = "open"\nwhy_fails = "a test"')
    _write(repo / "claims", "f.toml", measured)
    r = _cli("--claims", "claims", "--results", "reports", "-o", "reports/claims.md", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "No tolerance, comparison" in (res / "claims.md").read_text()
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "measured: fails")
    # the working tree loosens the tolerance: caught before it is even committed
    _write(repo / "claims", "f.toml", measured.replace("tolerance = 0.0", "tolerance = 0.05"))
    r = _cli("--claims", "claims", "--results", "reports", "--strict", cwd=repo)
    assert r.returncode == 1
    assert "x: tolerance changed 0.0 -> 0.05 at working tree" in r.stderr
    assert "without a [[claim.revision]] justification" in r.stderr
    r = _cli("--claims", "claims", "--results", "reports", "-o", "reports/claims.md", cwd=repo)
    assert r.returncode == 0, r.stderr
    md = (res / "claims.md").read_text()
    assert "| x | working tree |" in md and "| tolerance | 0 → 0.05 | a vectorless 1.30; a " \
        "sim600s1 0.90; b vectorless 1.10 | in force | **none** |" in md
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "loosened")          # committed: still caught, by its commit
    r = _cli("--claims", "claims", "--results", "reports", "--strict", cwd=repo)
    assert r.returncode == 1 and "(2026-01-02) after it was measured" in r.stderr
    # a written justification lets --strict pass and is shown in the report
    _write(repo / "claims", "f.toml", measured.replace("tolerance = 0.0", "tolerance = 0.05")
           + '\n[[claim.revision]]\nfield = "tolerance"\nold = 0.0\nnew = 0.05\n'
             'date = "2026-01-02"\nwhy = "the flow\'s measured noise band is 5 %"\n')
    r = _cli("--claims", "claims", "--results", "reports", "--strict", "-o",
             "reports/claims.md", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert "the flow's measured noise band is 5 %" in (res / "claims.md").read_text()
    # reverting to the registered tolerance needs no reason; the history still shows both
    _write(repo / "claims", "f.toml", measured)
    r = _cli("--claims", "claims", "--results", "reports", "--strict", "-o",
             "reports/claims.md", cwd=repo)
    assert r.returncode == 0, r.stderr
    md = (res / "claims.md").read_text()
    assert "| tolerance | 0 → 0.05 |" in md and "| tolerance | 0.05 → 0 |" in md
    assert md.count("| reverted |") == 2


def test_strict_needs_evidence_and_a_cause_for_every_fail(tmp_path, results):
    from tcgen.claims import load_ledger, strict_problems
    _write(tmp_path / "c", "f.toml", _claim(paper=3.0, evidence=""))
    ledger = load_ledger(tmp_path / "c")
    judge(ledger.claims, results)
    assert strict_problems(ledger, []) == [
        "f.toml: x: evidence missing (hardware, conformance, arithmetic, proxy, note)",
        "f.toml: x: fails without cause and why_fails"]
    _write(tmp_path / "c", "f.toml", _claim(paper=3.0, extra=''
                                            'cause = "flow"\nwhy_fails = "10 ns basis"'))
    ledger = load_ledger(tmp_path / "c")
    judge(ledger.claims, results)
    assert strict_problems(ledger, []) == []


def test_strict_without_history_is_a_one_line_error(tmp_path, results):
    _write(tmp_path / "c", "f.toml", _claim())
    r = _cli("--claims", str(tmp_path / "c"), "--results", str(results), "--strict", "-o",
             str(tmp_path / "out.md"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no git history" in r.stderr
    assert not (tmp_path / "out.md").exists()
    r = _cli("--claims", str(tmp_path / "c"), "--results", str(results), "-o",
             str(tmp_path / "out.md"), cwd=tmp_path)         # without --strict: says so
    assert r.returncode == 0 and "pre-registration not checked" in r.stdout
    assert "Not checked (no git history given)" in (tmp_path / "out.md").read_text()


def test_shipped_ledger_passes_strict_and_its_report_is_current(tmp_path):
    """`tcgen claims --strict` on the repository's ledger: every measured claim says its kind of
    evidence, every fail its cause, every post-measurement change of a criterion its written
    reason; no claim is pending (every family is built: every claim is judged from the
    committed sweep results and the families' models, or untestable with why); and
    reports/claims.md is exactly what the command writes (but for the date)."""
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True)
    if shallow.returncode or shallow.stdout.strip() != "false":
        pytest.skip("needs the ledger's whole git history (not a shallow clone)")
    out = tmp_path / "claims.md"
    r = _cli("--strict", "-o", str(out))
    assert r.returncode == 0, r.stderr
    # >= 25 claims; every claim of a built family has a verdict other than pending
    counts = re.search(r"\*\*(\d+) claims\*\*: ([^\n]*)", out.read_text())
    assert int(counts.group(1)) >= 25 and "pending" not in counts.group(2)

    def norm(text):
        text = text.replace(f" -o {out}", "")
        return re.sub(r"Date \d{4}-\d{2}-\d{2}\.", "Date -.", text)
    assert norm(out.read_text()) == norm((ROOT / "reports" / "claims.md").read_text()), \
        "reports/claims.md is stale: run .venv/bin/tcgen claims (after committing claims/)"


def test_a_margin_expression_judges_discrete_values_against_the_band(tmp_path, results):
    """An argmax (the K of the best density) has no continuous distance to the criterion: the
    claim's `margin` says how far the figures must move to change it (here 1.30 against 1.28:
    1.6 %).  Inside a 2 % band: within noise; outside a 1 % band: holds."""
    claim = _claim(value="argmax(1, r.ratio, 2, 1.28)", paper=1, tol=0.0,
                   judge_on='{liberty = "a", activity = "vectorless@0.1"}',
                   extra='noise = ["area"]\nnoise_units = ["fp_mul", "fp_add"]\n'
                         'margin = "r.ratio / 1.28 - 1"')
    _write(tmp_path / "c", "f.toml", claim)
    _noise(results, 0.01)
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "within noise" and "margin 1.6 % inside the noise band 2.0 %" in c.reason
    _noise(results, 0.005)
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "holds as a ratio" and "margin 1.6 % outside the noise band 1.0 %" \
        in c.reason
    _write(tmp_path / "c", "f.toml", claim.replace("noise = [\"area\"]\nnoise_units = "
                                                   "[\"fp_mul\", \"fp_add\"]\n", ""))
    with pytest.raises(ClaimError, match="margin is the distance the noise band is compared"):
        load(tmp_path / "c")


def test_a_discrete_value_without_margin_is_not_judged_against_noise(tmp_path, results):
    from tcgen.claims import load_ledger, strict_problems
    _write(tmp_path / "c", "f.toml", _claim(
        value="argmax(1, r.ratio, 2, 1.28)", paper=1, tol=0.0,
        judge_on='{liberty = "a", activity = "vectorless@0.1"}',
        extra='noise = ["area"]\nnoise_units = ["fp_mul", "fp_add"]'))
    _noise(results, 0.01)
    ledger = load_ledger(tmp_path / "c")
    c, = judge(ledger.claims, results)
    assert c.verdict == "holds as a ratio" and "margin" not in c.reason
    assert c.cells[0].band_text.endswith("(a discrete value without a margin expression: not "
                                         "applied)")
    assert strict_problems(ledger, []) == [
        "f.toml: x: a discrete value (argmax/above/below, or an exact criterion) with noise "
        "needs a margin expression (how far the figures must move to change it)"]


def _history_of(tmp_path, versions, measured_at=0):
    """Commit each ledger text of ``versions`` in turn (a report showing the claim's figure from
    version ``measured_at`` on), then judge the last and return its history's changes."""
    from tcgen.claims import history
    repo = tmp_path / "repo"
    _write(repo / "reports", "s.json", json.dumps({"rows": ROWS}))
    _git(repo, "init", "-q")
    for i, text in enumerate(versions):
        _write(repo / "claims", "f.toml", text)
        ids = re.findall(r'^id = "([^"]+)"', text, flags=re.M)
        rows = "".join(f"| {cid} | 1.30 | **fails** |\n" for cid in ids) if i >= measured_at \
            else ""
        _write(repo / "reports", "claims.md", "| id | ours | verdict |\n|---|---|---|\n" + rows)
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", f"v{i}")
    claims = judge(load(repo / "claims"), repo / "reports")
    return [(ch.id, ch.field, ch.old, ch.new, ch.status) for ch in
            history(repo / "claims", repo / "reports" / "claims.md", claims)], claims


def test_history_sees_through_pending_renames_and_status(tmp_path):
    judged = '{liberty = "a", activity = "vectorless@0.1"}'
    base = _claim(paper=1.33, judge_on=judged)                 # tolerance 0.1, measured
    # measured, then pending (tolerance line dropped), then measured with 0.5: caught
    pending = base.replace("tolerance = 0.1", 'status = "pending"')
    got, _ = _history_of(tmp_path / "a", [base, pending, base.replace("tolerance = 0.1", "tolerance = 0.5")])
    assert ("x", "tolerance", 0.1, 0.5, "in force") in got
    # a measured claim turned untestable: its status change is listed
    untestable = base + '\nstatus = "untestable"\nwhy = "inconvenient"'
    got, _ = _history_of(tmp_path / "b", [base, untestable])
    assert got == [("x", "status", "measured", "untestable", "in force")]
    # renamed with renamed_from: the history follows; without it, the old id's change is
    # listed as removed (never refused: no revision could match it)
    renamed = base.replace('id = "x"', 'id = "x2"\nrenamed_from = "x"')
    got, _ = _history_of(tmp_path / "c", [base, renamed.replace("tolerance = 0.1", "tolerance = 0.5")])
    assert got == [("x2", "tolerance", 0.1, 0.5, "in force")]
    got, _ = _history_of(tmp_path / "d", [base, base.replace("tolerance = 0.1", "tolerance = 0.5"),
                                          base.replace('id = "x"', 'id = "x2"')])
    assert got == [("x", "tolerance", 0.1, 0.5, "removed")]
    # a pending claim that never showed a figure setting its default: registration
    got, _ = _history_of(tmp_path / "e", [_claim(paper=1.33, judge_on=judged, extra='status = '
                                                 '"pending"').replace("tolerance = 0.1\n", ""),
                                          base.replace("tolerance = 0.1", "tolerance = 0.3")], measured_at=1)
    assert got == []


def test_a_revision_must_match_old_and_new(tmp_path):
    from tcgen.claims import strict_problems
    judged = '{liberty = "a", activity = "vectorless@0.1"}'
    base = _claim(paper=1.33, judge_on=judged)
    wrong_old = base.replace("tolerance = 0.1", "tolerance = 0.5") + ('\n[[claim.revision]]\nfield = "tolerance"\n'
                                              'old = 0.2\nnew = 0.5\nwhy = "a reason"\n')
    _history_of(tmp_path, [base, wrong_old])
    from tcgen.claims import history, load_ledger
    repo = tmp_path / "repo"
    ledger = load_ledger(repo / "claims")
    judge(ledger.claims, repo / "reports")
    changes = history(repo / "claims", repo / "reports" / "claims.md", ledger.claims)
    assert [p for p in strict_problems(ledger, changes) if "tolerance changed" in p]
    ledger = load_ledger(repo / "claims")          # the right old value: justified
    _write(repo / "claims", "f.toml", wrong_old.replace("old = 0.2", "old = 0.1"))
    ledger = load_ledger(repo / "claims")
    judge(ledger.claims, repo / "reports")
    changes = history(repo / "claims", repo / "reports" / "claims.md", ledger.claims)
    assert not strict_problems(ledger, changes)


def test_margin_text_at_most_negative_and_mixed_noise(tmp_path, results):
    judged = '{liberty = "a", activity = "vectorless@0.1"}'
    _write(tmp_path / "c", "f.toml", _claim(paper=1.25, tol=0.1, compare="at_most",
                                            judge_on=judged))
    c, = judge(load(tmp_path / "c"), results)
    assert "criterion ≤ 1.25 with 10 % tolerance (≤ 1.38)" in c.reason
    assert "ours 1.30 vs ≤ 1.25: holds within 4.0 % (relative) slack" in c.reason
    _write(tmp_path / "c", "f.toml", _claim(paper=1.1, tol=0.1, compare="at_most",
                                            judge_on=judged))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "fails" and "ours 1.30 vs ≤ 1.10 (+18.2 %): fails" in c.reason
    # a negative paper value: at_least -10 with 10 % tolerance is >= -11, not >= -9
    _write(tmp_path / "c", "f.toml", _claim(value="r.ratio - 11.5", paper=-10, tol=0.1,
                                            compare="at_least", judge_on=judged))
    c, = judge(load(tmp_path / "c"), results)
    assert c.verdict == "holds as a ratio" and "(≥ -11.00)" in c.reason
    # two libraries, one holding and one failing clearly, a third inside the band: mixed
    rows = ROWS[:3] + [dict(ROWS[0], liberty="c", ratio=1.205)]
    _write(tmp_path / "r2", "s.json", json.dumps({"rows": rows}))
    _write(tmp_path / "r2", "noise.json", json.dumps({"rows": [
        {"unit": "fp_mul", "liberty": lib, "area_min": 100, "area_median": 100,
         "area_max": 101} for lib in "abc"]}))
    _write(tmp_path / "c", "f.toml", _claim(paper=1.33, extra='noise = ["area"]\n'
                                            'noise_units = ["fp_mul"]'))
    c, = judge(load(tmp_path / "c"), tmp_path / "r2")
    assert [x.state for x in c.cells if x.judged] == ["holds", "fails", "noise"]
    assert c.verdict == "mixed"
