"""The docs are tested like code: the golden-model snippets of docs/models.md run and give the
numbers they state, every `unit name=value` span of docs/notation.md (and every `tcgen
generate|ppa|verify|lint UNIT -p ...` line of the README and docs/cli.md) is a configuration the
units accept, every relative link of README.md and docs/*.md resolves, docs/index.md lists every
doc, and the README stays short.  Cheap: well under 5 s."""
from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from tcgen.hw.params import ParamError
from tcgen.registry import all_units, get_unit

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

README_MAX_LINES = 150


def _md_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


# -- docs/models.md: python blocks ------------------------------------------------------------
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_ARROW = re.compile(r"^(?P<indent>\s*)(?P<expr>\S.*?)\s+# -> (?P<value>.+?)\s*$")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(first line number, code) of every ```python block of ``path``."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def same(actual, expected) -> bool:
    """``actual`` equals ``expected`` exactly: same shape, same values (numpy arrays and
    scalars compared through ``tolist``; ints and floats of equal value are equal)."""
    if isinstance(expected, str):
        return actual == expected
    a, e = np.asarray(actual), np.asarray(expected)
    return a.shape == e.shape and a.tolist() == e.tolist()


def checked_source(code: str) -> tuple[str, int]:
    """``code`` with every ``expr  # -> value`` line turned into a check; the number of checks."""
    out, n = [], 0
    for line in code.splitlines():
        m = _ARROW.match(line)
        if m:
            expr, value = m["expr"], m["value"]
            ast.parse(expr, mode="eval")           # a statement with '# ->' is a doc error
            ast.literal_eval(value)                 # the stated value is a plain literal
            line = (f"{m['indent']}assert __same(({expr}), {value}), "
                    f"({expr!r}, 'gives', ({expr}), 'not', {value!r})")
            n += 1
        out.append(line)
    return "\n".join(out) + "\n", n


MODEL_BLOCKS = python_blocks(DOCS / "models.md")


def test_models_md_has_a_checked_snippet_per_family():
    text = (DOCS / "models.md").read_text()
    for module in ("tcgen.units.lut", "tcgen.units.pacq", "tcgen.units.bmma",
                   "tcgen.units.sparse", "tcgen.units.winograd", "tcgen.hw"):
        assert f"from {module}" in text, f"docs/models.md has no snippet importing {module}"
    assert len(MODEL_BLOCKS) >= 7
    assert all(checked_source(code)[1] >= 1 for _, code in MODEL_BLOCKS), \
        "every block states at least one worked number ('# -> value')"


@pytest.mark.parametrize("line,code", MODEL_BLOCKS, ids=[f"line{n}" for n, _ in MODEL_BLOCKS])
def test_models_md_snippet(line, code):
    src, _ = checked_source(code)
    exec(compile(src, f"docs/models.md:{line}", "exec"), {"__same": same})


def test_the_snippet_checker_fails_on_a_wrong_number():
    src, n = checked_source("x = 2 + 2\nx  # -> 5\n")
    assert n == 1
    with pytest.raises(AssertionError):
        exec(src, {"__same": same})
    assert not same(np.array([1.0, 2.0]), [1.0, 2.0, 3.0])
    assert not same(np.array([[1]]), [1])             # shape matters
    assert same(np.uint64(0x3C00), 0x3C00)


# -- parameter spans --------------------------------------------------------------------------
_UNITS = {u.name for u in all_units()}
_SPAN = re.compile(r"`([a-z][a-z0-9_]*(?: [A-Za-z_][A-Za-z_0-9]*=[^`\s]*)*)`")
_CMD = re.compile(r"tcgen (?:generate|ppa|verify|lint) ([a-z][a-z0-9_]*)((?: +-p +[^\s`)]+)*)")


def notation_spans(text: str) -> list[tuple[str, dict[str, str]]]:
    spans = []
    for span in _SPAN.findall(text):
        unit, *pairs = span.split()
        if unit in _UNITS:
            spans.append((unit, dict(p.split("=", 1) for p in pairs)))
    return spans


def command_configs(text: str) -> list[tuple[str, dict[str, str], str | None]]:
    """(unit, -p values, the error line shown right below the command or None)."""
    out = []
    lines = text.splitlines() + [""]
    for i, line in enumerate(lines[:-1]):
        for unit, rest in _CMD.findall(line):
            if unit not in _UNITS:   # `tcgen lint build/lzc.v`, `generate --all`: no unit here
                continue
            words = shlex.split(rest)
            error = lines[i + 1] if lines[i + 1].startswith("tcgen: error:") else None
            out.append((unit, dict(w.split("=", 1) for w in words if w != "-p"), error))
    return out


def test_notation_md_parameters_are_accepted():
    spans = notation_spans((DOCS / "notation.md").read_text())
    assert len(spans) >= 60, "docs/notation.md lost its mappings"
    families = {get_unit(u).family for u, _ in spans}
    assert {"lut", "pacq", "bmma", "sparse", "winograd", "hw"} <= families
    for unit, values in spans:
        get_unit(unit).make_params(values)         # ParamError names the bad span


def test_commands_in_readme_and_cli_md_are_accepted():
    n = 0
    for path in (README, DOCS / "cli.md", DOCS / "notation.md"):
        for unit, values, error in command_configs(path.read_text()):
            if error is None:
                get_unit(unit).make_params(values)
            elif error.startswith(f"tcgen: error: {unit}:"):   # a documented parameter error
                with pytest.raises(ParamError) as e:
                    get_unit(unit).make_params(values)
                assert error == f"tcgen: error: {e.value}"
            n += 1
    assert n >= 10


def test_the_span_checker_catches_a_bad_value():
    (unit, values), = notation_spans("`lut_array entry=int12 acc=int32`")
    with pytest.raises(ParamError):
        get_unit(unit).make_params(values)


# -- links ------------------------------------------------------------------------------------
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return [a or b for a, b in _LINK.findall(text)
            if not re.match(r"[a-z]+:", a or b) and not (a or b).startswith("#")]


def broken_links(path: Path) -> list[str]:
    bad = []
    for link in relative_links(path):
        target, _, anchor = link.partition("#")
        dest = (path.parent / target).resolve()
        if not dest.exists():
            bad.append(link)
        elif anchor and dest.suffix == ".md":
            anchors = {_anchor(m) for m in re.findall(r"^#+ (.*)$", dest.read_text(), re.M)}
            if anchor not in anchors:
                bad.append(link)
    return bad


@pytest.mark.parametrize("path", _md_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_the_link_checker_finds_a_broken_link(tmp_path):
    doc = tmp_path / "x.md"
    (tmp_path / "y.md").write_text("# Real heading\n")
    doc.write_text("[a](y.md) [b](nope.md) [c](y.md#real-heading) [d](y.md#nope) "
                   "[e](https://example.org) ![p](y.md)\n```\n[f](inside-code.md)\n```\n")
    assert broken_links(doc) == ["nope.md", "y.md#nope"]


def test_index_lists_every_doc():
    index = DOCS / "index.md"
    linked = {(DOCS / link.partition("#")[0]).resolve() for link in relative_links(index)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p != index and p.resolve() not in linked]
    assert missing == [], f"docs/index.md does not list {missing}"
    assert "docs/index.md" in README.read_text()


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES})"


# -- the README's figures come from the reports -----------------------------------------------
_VERDICTS = [("holds", "holds", "hold"), ("holds as a ratio", "holds as a ratio", "hold as a ratio"),
             ("within noise", "within noise", "within noise"), ("mixed", "mixed", "mixed"),
             ("fails", "fails", "fail"), ("untestable here", "untestable here", "untestable here"),
             ("pending", "pending", "pending")]


def ledger_by_family() -> dict[str, str]:
    """family -> the README's phrase for its row of reports/claims.md's "By family" table."""
    text = (ROOT / "reports" / "claims.md").read_text()
    lines = text[text.index("By family:"):].splitlines()
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    out = {}
    for line in lines[4:]:
        if not line.startswith("|"):
            break
        row = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
        parts = []
        for column, one, many in _VERDICTS:
            n = int(row.get(column, "0") or 0)
            if n:
                parts.append(f"{n} {one if n == 1 else many}")
        out[row["family"]] = f"{row['claims']} claims: " + ", ".join(parts)
    return out


def test_readme_ledger_counts_are_the_reports():
    readme = README.read_text()
    rows = ledger_by_family()
    assert {"pacq", "bmma", "lut", "sparse", "winograd"} <= set(rows)
    for family in ("pacq", "bmma", "lut", "sparse", "winograd"):
        assert rows[family] in readme, f"README's {family} row is not {rows[family]!r}"


def test_readme_quoted_figures_are_in_their_reports():
    fig13 = (ROOT / "reports" / "lut_baselines_ppa.md").read_text()
    assert "| 1 | 157,218 |" in fig13 and "6.23×" in fig13 and "1.32×" in fig13 and "0.73×" in fig13
    summary = (ROOT / "reports" / "ppa_summary.md").read_text()
    assert "| lzc | osu018 | 10 | vectorless@0.1 | flat | 1000 | 980 | 40 | 0.581 | 1,721.953 |" \
        in summary
    assert "27,262,976" in (ROOT / "reports" / "silicon.md").read_text()
    readme = README.read_text()
    m = re.search(r"ran ([\d,]+) tests in (\d+) min (\d+) s", readme)
    assert m, "the README quotes make test's count and time"
    profile = (ROOT / "reports" / "make_test_profile.md").read_text()
    row = f"| {m[1]} ("
    assert any(row in line and f"| {int(m[2])}:{int(m[3]):02d} |" in line
               for line in profile.splitlines()), "make test's figures are not a profile row"
