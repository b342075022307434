"""The sweep engine (tcgen.sweep, ``tcgen sweep``): spec expansion and its errors, content keys,
the cache (rerun = nothing measured; resume after ``kill -9``), failure isolation, outputs, the
CLI's error contract, and the Dask executor against the local pool."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tcgen.sweep import SpecError, load, parse, run, write_outputs
from tcgen.sweep.spec import Activity, evaluate
from tcgen.sweep.store import Store, point_key
from tcgen.synth.liberty import shared_liberty_available

ROOT = Path(__file__).resolve().parent.parent

SMALL = """
[sweep]
name = "small"
liberties = ["osu018"]
clock_ns = [10.0]
activity = ["vectorless"]

[[group]]
name = "pc"
unit = "popcount"
label = "popcount n={n}"
grid = {n = [4, 6, 8]}

[[derived]]
name = "area_vs_n4"
expr = "synth__area__um2 / ref.synth__area__um2"
ref = {group = "pc", params = {n = 4}}
"""


def _alt_liberty(tmp_path: Path) -> str:
    """A second liberty that is always there (the project runs without ../shared): osu018's
    text with a comment appended (its own name and sha256), as a path."""
    from tcgen.synth.liberty import resolve
    alt = tmp_path / "alt.lib"
    alt.write_text(resolve("osu018").source.read_text() + "\n/* tcgen test copy */\n")
    return str(alt)


def _spec(text: str, tmp_path: Path, name="s.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return load(p)


# -- the spec ------------------------------------------------------------------------------------
def test_grid_zip_points_and_overrides_expand_in_order(tmp_path):
    alt = _alt_liberty(tmp_path)
    s = _spec("""
        [sweep]
        name = "x"
        liberties = ["osu018", "ALT"]
        clock_ns = [10, 5]
        activity = ["vectorless", {mode = "sim", cycles = 100}]

        [[group]]
        unit = "bmma_array"
        params = {k = 32}
        grid = {fold = [1, 2]}
        zip = {m = [1, 2], n = [1, 2]}
        points = [{m = 4, n = 4, fold = 4}]
        liberties = ["osu018"]
        clock_ns = [10]
        activity = ["vectorless"]

        [[group.override]]
        where = {fold = 4}
        liberties = ["osu018", "ALT"]

        [[group]]
        name = "lzc"
        unit = "lzc"
        grid = {width = [8]}

        [[group.override]]
        where = {width = 8}
        skip = false
        clock_ns = [3]
    """.replace("ALT", alt), tmp_path)
    bm = [p for p in s.points if p.group == "bmma_array"]
    got = [(p.params_dict["fold"], p.params_dict["m"], p.params_dict["n"], p.liberty) for p in bm]
    assert got == [(1, 1, 1, "osu018"), (1, 2, 2, "osu018"), (2, 1, 1, "osu018"),
                   (2, 2, 2, "osu018"), (4, 4, 4, "osu018"), (4, 4, 4, alt)]
    assert all(p.params_dict["k"] == 32 and p.params_dict["acc_width"] == 32 for p in bm)
    lz = [p for p in s.points if p.group == "lzc"]
    assert len(lz) == 2 * 1 * 2 and {p.clock_ns for p in lz} == {3.0}
    assert {p.activity for p in lz} == {Activity("vectorless"), Activity("sim", cycles=100)}
    assert [p.index for p in s.points] == list(range(len(s.points)))
    assert bm[0].label == "bmma_array fold=1 m=1 n=1"


@pytest.mark.parametrize("text,msg", [
    ("[sweep]\nname='x'\nbogus=1\n[[group]]\nunit='lzc'\n", "sweep.bogus: unknown key"),
    ("[sweep]\nname='x'\n[[group]]\nunit='nope'\n", "unknown unit"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\ngrid={width=[8, 999]}\n", "width"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\ngrid={nope=[1]}\n", "nope"),
    ("[sweep]\nname='x'\n[[group]]\nunit='bmma_array'\nzip={m=[1,2], n=[1]}\n",
     "unequal length"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[group]]\nunit='lzc'\n", "named twice"),
    ("[sweep]\nname='x'\n[[group]]\nname='a'\nunit='lzc'\n[[group]]\nname='b'\nunit='lzc'\n",
     "also comes from group a"),
    ("[sweep]\nname='x'\nliberties=['no_such_lib']\n[[group]]\nunit='lzc'\n", "liberties"),
    ("[sweep]\nname='x'\nclock_ns=[0]\n[[group]]\nunit='lzc'\n", "positive, finite clock"),
    ("[sweep]\nname='x'\nclock_ns=[inf]\n[[group]]\nunit='lzc'\n", "positive, finite clock"),
    ("[sweep]\nname='x'\nactivity=['psychic']\n[[group]]\nunit='lzc'\n", "mode 'psychic'"),
    ("[sweep]\nname='x'\nmetrics=['area']\n[[group]]\nunit='lzc'\n", "unknown metric 'area'"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[derived]]\nname='d'\n"
     "expr='__import__(\"os\")'\n", "unknown function"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[derived]]\nname='d'\n"
     "expr='synth__area__um2 / ref.synth__area__um2'\n", "names no reference"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='x.y'\n",
     "only numbers"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\nlabel='{nope}'\n", "label"),
    ("[sweep\n", "not valid TOML"),
    ("[sweep]\nname='x'\nmetrics=5\n[[group]]\nunit='lzc'\n", "list of metric names"),
    ("[sweep]\nname='x'\n[[group]]\nname=3\nunit='lzc'\n", "not a group name"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\nlabel=3\n", "must be a string"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\nlabel=' '\n", "label: must not be empty"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\nlabel='{width.x}'\n", "label"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[derived]]\nname='d'\n"
     "expr='min(synth__area__um2)'\n", "min\\(x, y"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[derived]]\nname='d'\n"
     "expr='synth__area__um2'\ngroups=[['lzc']]\n", "no group"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\ngrid={width=[8, 9]}\n"
     "[[group.override]]\nwhere={width=10}\nskip=true\n", "matches no point"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\ngrid={width=[8, 9]}\n[[derived]]\n"
     "name='d'\nexpr='synth__area__um2 / ref.synth__area__um2'\n"
     "ref={group='lzc', params={}}\n", "has 2 points"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[plot]]\nname='p'\n"
     "x='synth__area__um2'\ny='power__total__mw'\nwhere={activity='vectorless'}\n",
     "matches no point"),
    ("[sweep]\nname='x'\nactivity=[{mode='sim-timed', simulator='verilator'}]\n[[group]]\n"
     "unit='lzc'\n", "sim-timed needs cell delays, which the Verilator engine does not"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n"
     "activity=[{mode='sim-timed', simulator='verilator'}]\n", "Verilator engine does not"),
])
def test_bad_specs_are_one_line_errors(text, msg, tmp_path):
    with pytest.raises(SpecError, match=msg) as e:
        _spec(text, tmp_path)
    assert "\n" not in str(e.value) and "s.toml" in str(e.value)


def test_derived_columns_limited_to_groups(tmp_path):
    s = _spec(SMALL.replace('ref = {group = "pc", params = {n = 4}}',
                            'ref = {group = "pc", params = {n = 4}}\ngroups = ["other"]')
              + '\n[[group]]\nname = "other"\nunit = "popcount"\nlabel = "o{n}"\n'
                'grid = {n = [5]}\n', tmp_path)
    r = run(s, cache=tmp_path / "cache")
    by = {x["label"]: x["area_vs_n4"] for x in r.rows}
    assert by["popcount n=4"] is None and by["popcount n=8"] is None
    assert by["o5"] == pytest.approx(r.rows[3]["synth__area__um2"] / r.rows[0]["synth__area__um2"])
    with pytest.raises(SpecError, match="no group 'zz'"):
        _spec(SMALL.replace('ref = {group = "pc", params = {n = 4}}',
                            'ref = {group = "pc", params = {n = 4}}\ngroups = ["zz"]'), tmp_path)


def test_a_derived_column_defined_piecewise(tmp_path):
    """Several ``[[derived]]`` of one name, each on its own groups, are one column: each row
    is computed by the piece of its group (e.g. each LUT group over the baseline of its own
    format); rows of no piece stay empty; the pieces' groups must be disjoint."""
    text = SMALL.replace("[[derived]]", "[[derived]]\ngroups = [\"pc\"]") + """
[[group]]
name = "other"
unit = "popcount"
label = "o{n}"
grid = {n = [5, 7]}

[[group]]
name = "third"
unit = "popcount"
label = "t{n}"
grid = {n = [9]}

[[derived]]
name = "area_vs_n4"
expr = "synth__area__um2 / ref.synth__area__um2"
ref = {group = "other", params = {n = 5}}
groups = ["other"]
"""
    s = _spec(text, tmp_path)
    r = run(s, cache=tmp_path / "cache")
    area = {x["label"]: x["synth__area__um2"] for x in r.rows}
    col = {x["label"]: x["area_vs_n4"] for x in r.rows}
    assert col["popcount n=8"] == pytest.approx(area["popcount n=8"] / area["popcount n=4"])
    assert col["o7"] == pytest.approx(area["o7"] / area["o5"])
    assert col["t9"] is None
    paths = write_outputs(r, tmp_path / "out", "tcgen sweep s.toml")
    header = next(ln for ln in paths[0].read_text().splitlines() if ln.startswith("group,"))
    assert header.split(",").count("area_vs_n4") == 1
    md = paths[2].read_text()
    table_head = next(ln for ln in md.splitlines() if ln.startswith("| point |"))
    assert table_head.count("area_vs_n4") == 1 and "[groups other]" in md
    for bad, msg in [(text.replace('groups = ["other"]', 'groups = ["other", "pc"]'),
                      "group 'pc' is in two pieces"),
                     (text.replace('groups = ["other"]\n', ''), "needs groups"),
                     (SMALL.replace('name = "area_vs_n4"', 'name = "synth__area__um2"'),
                      "a metric of that name")]:
        with pytest.raises(SpecError, match=msg):
            _spec(bad, tmp_path, "bad.toml")


def test_derived_expressions():
    own = {"a": 6.0, "b": 3.0, "z": 0.0, "n": None}
    assert evaluate("a / b + 2 ** 2 - -1", own, None) == 7.0
    assert evaluate("max(a, b) * abs(-2)", own, None) == 12.0
    assert evaluate("1 + above(a, 5) + above(b, 5) + below(z, 1)", own, None) == 3.0
    assert evaluate("above(n, 1)", own, None) is None             # a missing value stays missing
    assert evaluate("argmax(2, b, 3, a, 4, a)", own, None) == 3       # first of the largest
    assert evaluate("argmax(2, n, 3, a)", own, None) is None
    assert evaluate("argmax(2, a, 3)", own, None) is None
    assert evaluate("a / ref.a", own, {"a": 2.0}) == 3.0
    assert evaluate("a / z", own, None) is None                 # never a made-up number
    assert evaluate("a * n", own, None) is None
    assert evaluate("a / ref.a", own, None) is None
    assert evaluate("z ** -1", own, None) is None and evaluate("10 ** 400", own, None) is None
    assert evaluate("(0 - b) ** 0.5", own, None) is None          # complex: no number


def test_override_where_and_ref_compare_against_the_groups_points(tmp_path):
    """acc_width 8 is legal only with a small k: checked against the group's own points, not
    against the unit's defaults."""
    s = _spec("""
        [sweep]
        name = "w"
        [[group]]
        unit = "bmma_array"
        params = {m = 1, n = 1, k = 32}
        grid = {acc_width = [8, 16]}
        [[group.override]]
        where = {acc_width = 8}
        skip = true
        [[derived]]
        name = "d"
        expr = "synth__area__um2 / ref.synth__area__um2"
        ref = {group = "bmma_array", params = {acc_width = 16}}
    """, tmp_path)
    assert [p.params_dict["acc_width"] for p in s.points] == [16]


# -- content keys --------------------------------------------------------------------------------
def test_point_key_changes_with_what_the_result_depends_on(tmp_path):
    s = _spec("""
        [sweep]
        name = "k"
        liberties = ["osu018", "ALT"]
        clock_ns = [10, 5]
        activity = ["vectorless", {mode = "vectorless", toggle_rate = 0.2}]
        [[group]]
        unit = "lzc"
        grid = {width = [8, 16]}
    """.replace("ALT", _alt_liberty(tmp_path)), tmp_path)
    keys = [point_key(p) for p in s.points]
    assert len(set(keys)) == len(keys) == 2 * 2 * 2 * 2
    # the generator's sources are tcgen.hw's and the family's, found through the packages
    from tcgen.sweep.store import source_files
    names = {f"{f.parent.name}/{f.name}" for f in source_files("bmma_array")}
    assert {"hw/fparith.py", "hw/intarith.py", "bmma/rtl.py", "tcgen/measure.py"} <= names
    assert "pacq/rtl.py" not in names
    # the key does not depend on the process (hash seed) or on the group's name and label
    code = ("import sys; from tcgen.sweep import load; from tcgen.sweep.store import point_key;"
            f"print(' '.join(point_key(p) for p in load({str(tmp_path / 's.toml')!r}).points))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "777"}, check=True).stdout.split()
    assert out == keys
    renamed = parse({"sweep": {"name": "k2"}, "group": [
        {"name": "other", "label": "x{width}", "unit": "lzc", "grid": {"width": [8]}}]})
    assert point_key(renamed.points[0]) == keys[0]


# -- running ------------------------------------------------------------------------------------
def test_rerun_measures_nothing_and_outputs_are_written(tmp_path):
    s = _spec(SMALL, tmp_path)
    r1 = run(s, cache=tmp_path / "cache")
    assert r1.counts == {"done": 3, "cached": 0, "failed": 0}
    r2 = run(s, cache=tmp_path / "cache")
    assert r2.counts == {"done": 0, "cached": 3, "failed": 0}
    strip = lambda rows: [{k: v for k, v in r.items() if k != "_result"} for r in rows]  # noqa
    assert strip(r1.rows) == strip(r2.rows)
    areas = [r["synth__area__um2"] for r in r2.rows]
    assert areas[0] < areas[1] < areas[2]
    assert [r["area_vs_n4"] for r in r2.rows] == pytest.approx([1.0, areas[1] / areas[0],
                                                                areas[2] / areas[0]])
    paths = write_outputs(r2, tmp_path / "out", "tcgen sweep s.toml")
    lines = paths[0].read_text().splitlines()
    head = [ln for ln in lines if ln.startswith("#")]
    csv_text = [ln for ln in lines if not ln.startswith("#")]
    assert csv_text[0].startswith("group,label,unit,n,liberty") and len(csv_text) == 4
    assert "tcgen sweep s.toml" in head[0] and "osu018" in head[0] and "yosys" in head[1]
    meta = json.loads(paths[1].read_text())
    assert meta["command"] == "tcgen sweep s.toml" and len(meta["rows"]) == 3
    assert "ABC" in " ".join(meta["flow_notes"]) and "yosys" in meta["tools"]
    md = paths[2].read_text()
    assert "popcount n=8" in md and "Regenerate: `.venv/bin/tcgen sweep s.toml`" in md


@pytest.mark.skipif(not shared_liberty_available(),
                    reason="needs nangate45 (../shared/liberty/): a library without Verilog "
                           "cell models")
def test_a_failing_point_is_recorded_and_the_others_run(tmp_path):
    """Icarus gate-level simulation needs the library's Verilog cell models; nangate45 has
    none, so that point fails -- alone."""
    s = _spec("""
        [sweep]
        name = "f"
        clock_ns = [10]
        [[group]]
        unit = "popcount"
        grid = {n = [4]}
        liberties = ["osu018", "nangate45"]
        activity = [{mode = "sim", cycles = 50, simulator = "icarus"}]
    """, tmp_path)
    r = run(s, cache=tmp_path / "cache")
    assert r.counts == {"done": 2, "cached": 0, "failed": 1}
    bad = [x for x in r.rows if x["status"] == "failed"]
    assert len(bad) == 1 and bad[0]["liberty"] == "nangate45" and "model" in bad[0]["error"]
    assert [x for x in r.rows if x["status"] == "ok"][0]["power__total__mw"] > 0
    # a rerun does not repeat the failure unless asked, and still counts it as failed
    assert run(s, cache=tmp_path / "cache").counts == {"done": 0, "cached": 2, "failed": 1}
    assert run(s, cache=tmp_path / "cache", retry_failed=True).counts == \
        {"done": 1, "cached": 1, "failed": 1}
    # the CLI: --strict turns a failed point into exit status 1
    cmd = [sys.executable, "-m", "tcgen.cli", "sweep", str(tmp_path / "s.toml"), "-o",
           str(tmp_path / "o"), "--cache", str(tmp_path / "cache")]
    assert subprocess.run(cmd, capture_output=True, cwd=tmp_path).returncode == 0
    assert subprocess.run(cmd + ["--strict"], capture_output=True, cwd=tmp_path).returncode == 1


def test_a_bug_is_not_recorded_as_a_failed_point(tmp_path, monkeypatch):
    """Only the flow's and the parameters' errors are point failures; anything else is a bug
    in tcgen and stops the sweep with its traceback (and caches nothing for that point)."""
    import tcgen.measure
    s = _spec(SMALL, tmp_path)

    def broken(*a, **k):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(tcgen.measure, "measure", broken)
    with pytest.raises(ZeroDivisionError):
        run(s, cache=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*.json"))


def test_resume_after_kill_9(tmp_path):
    """A sweep killed mid-run leaves only whole records; the rerun measures the rest."""
    spec = tmp_path / "s.toml"                # every point synthesized: seconds each
    spec.write_text(SMALL.replace("[4, 6, 8]", "[4, 5, 7, 9, 10, 11]"))
    cache = tmp_path / "cache"
    cmd = [sys.executable, "-m", "tcgen.cli", "sweep", str(spec), "-o", str(tmp_path / "o"),
           "--cache", str(cache), "--no-flow-cache"]
    with open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        t0 = time.time()
        while time.time() - t0 < 120 and len(list(cache.glob("*.json"))) < 2 \
                and proc.poll() is None:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    first = list(cache.glob("*.json"))
    assert 2 <= len(first) < 6, (tmp_path / "err").read_text()
    store = Store(cache)
    assert all(store.get(p.stem) for p in first)                 # every record whole
    assert all(p.name.startswith(".") for p in cache.iterdir() if p.suffix != ".json")
    r = run(load(spec), cache=cache)
    assert r.counts["cached"] >= len(first) and r.counts["failed"] == 0
    assert r.counts["done"] + r.counts["cached"] == 6


def test_cli_bad_spec_is_one_line_exit_2_nothing_written(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "bad.toml"
    spec.write_text("[sweep]\nname='x'\n[[group]]\nunit='lzc'\ngrid={width=[0]}\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "sweep", str(spec), "-o", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "width" in r.stderr
    assert not out.exists()
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "sweep", str(tmp_path / "none.toml")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "cannot read spec" in r.stderr
    good = tmp_path / "good.toml"
    good.write_text(SMALL)
    (tmp_path / "afile").write_text("")
    from tcgen.cli import main                  # the same entry point, in this process
    monkeypatch.setenv("TCGEN_DASK_TIMEOUT", "2")
    for extra, msg in ((["--cache", str(tmp_path / "afile")], "cannot use the sweep cache"),
                       (["-o", str(tmp_path / "afile")], "cannot write into"),
                       (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:9"],
                        "cannot reach the Dask scheduler"),
                       (["--scheduler", "tcp://127.0.0.1:9"], "needs --executor dask"),
                       (["-j", "0"], "at least 1")):
        capsys.readouterr()
        assert main(["sweep", str(good), *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and msg in err, (extra, err)


def test_dask_executor_equals_local_pool(tmp_path):
    pytest.importorskip("dask.distributed")
    s = _spec(SMALL, tmp_path)          # both measure every point (not the flow's cache)
    local = run(s, jobs=2, cache=tmp_path / "local", flow_cache=False)
    dask = run(s, jobs=2, executor="dask", cache=tmp_path / "dask", flow_cache=False)
    assert dask.counts == {"done": 3, "cached": 0, "failed": 0}
    keep = lambda rows: [{k: v for k, v in r.items() if not k.startswith(("_", "runtime"))}  # noqa
                         for r in rows]
    assert all(not r["_result"]["cached"] for r in dask.rows + local.rows)
    assert keep(dask.rows) == keep(local.rows)
    assert sorted(p.name for p in (tmp_path / "dask").glob("*.json")) == \
        sorted(p.name for p in (tmp_path / "local").glob("*.json"))


def test_plots_are_written_deterministically_and_listed(tmp_path):
    s = _spec(SMALL + """
[[plot]]
name = "area_power"
x = "synth__area__um2"
y = "power__total__mw"
series = "n"
pareto = true
baseline = ["pc"]

[[plot]]
name = "area_by_n"
kind = "line"
x = "n"
y = "area_vs_n4"
series = "liberty"
""", tmp_path)
    r = run(s, cache=tmp_path / "cache")
    p1 = write_outputs(r, tmp_path / "o1", "tcgen sweep s.toml")
    p2 = write_outputs(r, tmp_path / "o2", "tcgen sweep s.toml")
    svgs = [p for p in p1 if p.suffix == ".svg"]
    assert [p.name for p in svgs] == ["small-area_power.svg", "small-area_by_n.svg"]
    for p, inside in zip(svgs, ["popcount n=8", "area_vs_n4"]):   # a point label, an axis
        text = p.read_text()
        assert text.startswith("<?xml") and inside in text and "Pareto" in svgs[0].read_text()
        assert text == (tmp_path / "o2" / p.name).read_text()       # byte-identical
    assert "![" in p1[2].read_text() and "small-area_power.svg" in p1[2].read_text()


def test_pareto_front():
    from tcgen.sweep.output import pareto_front
    pts = [(1, 5), (2, 3), (3, 4), (4, 1), (2, 6), (5, 1)]
    assert pareto_front(pts) == [(1, 5), (2, 3), (4, 1)]


@pytest.mark.parametrize("plot,msg", [
    ("name='p'\nx='synth__area__um2'\ny='nope'", "not a metric"),
    ("name='p'\nkind='line'\nx='synth__area__um2'\ny='power__total__mw'", "not a parameter"),
    ("name='p'\nkind='pie'\nx='n'\ny='power__total__mw'", "one of scatter, line"),
    ("name='p'\nx='synth__area__um2'\ny='power__total__mw'\nbaseline=['zz']", "no group 'zz'"),
    ("name='p'\nx='synth__area__um2'\ny='power__total__mw'\nseries='color'", "series"),
])
def test_bad_plots(plot, msg, tmp_path):
    with pytest.raises(SpecError, match=msg):
        _spec(SMALL + "\n[[plot]]\n" + plot + "\n", tmp_path)


def test_shipped_specs_load():
    """Every shipped spec loads -- or, without ../shared/liberty/ (the project runs without
    it), a spec naming its libraries fails with the one clear line that says so."""
    import tomllib

    def libraries(raw: dict) -> set[str]:
        groups = raw.get("group", [])
        found = set(raw.get("sweep", {}).get("liberties", []))
        for g in groups:
            found |= set(g.get("liberties", []))
            for ov in g.get("override", []):
                found |= set(ov.get("liberties", []))
        return found

    for path in sorted((ROOT / "studies").glob("*.toml")):
        names = libraries(tomllib.loads(path.read_text()))
        if not shared_liberty_available() and names & {"nangate45", "sky130hd"}:
            with pytest.raises(SpecError, match="is not available: expected .*the folder "
                                                r"\.\./shared/liberty/ next to the "
                                                "repository is not present"):
                load(path)
            continue
        s = load(path)
        assert s.points, path


def test_docs_list_every_metric():
    from tcgen.sweep.metrics import METRICS
    doc = (ROOT / "docs" / "sweep.md").read_text()
    assert all(f"`{k}`" in doc for k in METRICS)


# -- named workloads ---------------------------------------------------------------------------
WL = """
[sweep]
name = "wl"
liberties = ["osu018"]
activity = ["vectorless"]

[[group]]
name = "mul"
unit = "pacq_mul"
label = "pacq_mul {workload}"
grid = {workload = ["int4", "int2"]}

[[group]]
name = "dp"
unit = "dp4_pacq"
label = "dp4 D{D} {workload}"
grid = {D = [1, 2], workload = ["int4", "int2"]}

[[derived]]
name = "vs_D1"
expr = "perf__per_watt__gops_per_w / ref.perf__per_watt__gops_per_w"
ref = {group = "dp", params = {D = 1}}
groups = ["dp"]
"""


def test_workload_axis_expands_and_references_follow_the_row(tmp_path):
    s = _spec(WL, tmp_path)
    assert [p.label for p in s.points] == ["pacq_mul int4", "pacq_mul int2", "dp4 D1 int4",
                                           "dp4 D1 int2", "dp4 D2 int4", "dp4 D2 int2"]
    assert all(p.workload in ("int4", "int2") and "workload" not in p.params_dict
               for p in s.points)
    assert json.loads(s.points[0].ident)["workload"] == "int4"
    d2_int2 = s.points[5]
    ref = s.point("dp", {"D": 1}, d2_int2)
    assert ref.workload == "int2" and ref.params_dict["D"] == 1
    # a point without a named workload keeps the key it had before workloads existed
    plain = _spec(SMALL, tmp_path, "p.toml").points[0]
    assert "workload" not in json.loads(plain.ident)


@pytest.mark.parametrize("grid,msg", [
    ('{workload = ["int8"]}', "no workload 'int8'"),
    ('{wbits = ["4"], workload = ["int2"]}', "built for INT4 weights only"),
])
def test_bad_workloads(grid, msg, tmp_path):
    with pytest.raises(SpecError, match=msg):
        _spec(f"[sweep]\nname='x'\n[[group]]\nunit='pacq_mul'\ngrid={grid}\n", tmp_path)
    with pytest.raises(SpecError, match="no workload"):      # a unit with none
        _spec("[sweep]\nname='x'\n[[group]]\nunit='lzc'\nparams={workload='int4'}\n", tmp_path)


def test_named_workload_sets_stimulus_and_ops(monkeypatch):
    """measure(workload=...) hands the flow the named stimulus and its ops per cycle (the flow
    itself is replaced: this checks what tcgen.measure passes, not the tools)."""
    import numpy as np

    import tcgen.measure as m
    seen = {}

    def fake_flow(text, top, **kw):
        seen.update(kw)
        return {"runtime_s": {}}
    monkeypatch.setattr(m, "measure_verilog", fake_flow)
    monkeypatch.setattr(m, "verilog", lambda name, params: "module pacq_mul; endmodule")
    r = m.measure("pacq_mul", None, activity="sim", workload="int2", workload_cycles=50)
    assert seen["ops_per_cycle"] == 8.0 and (np.asarray(seen["workload"]["int2"]) == 1).all()
    assert r["workload_name"] == "int2" and "--workload int2" in r["command"]
    m.measure("pacq_mul", None, workload="int4")
    assert seen["ops_per_cycle"] == 4.0 and seen["workload"] is None     # vectorless
    m.measure("pacq_mul", None)
    assert seen["ops_per_cycle"] == 8.0                                   # the unit's own


def test_every_unit_group(tmp_path):
    from tcgen.registry import all_units
    s = _spec("[sweep]\nname='all'\n[[group]]\nunit='*'\n", tmp_path)
    assert [g.unit for g in s.groups] == [u.name for u in all_units()]
    with pytest.raises(SpecError, match="every unit at its defaults"):
        _spec("[sweep]\nname='all'\n[[group]]\nunit='*'\ngrid={n=[1]}\n", tmp_path)
    # per-unit overrides: where = {unit = ...} sets that unit's flow options or skips it
    ov = ("[[group.override]]\nwhere={unit='lzc'}\nsynthesis='hierarchical'\nclock_ns=5.0\n"
          "[[group.override]]\nwhere={unit='fp_add'}\nskip=true\n")
    s = _spec("[sweep]\nname='all'\n[[group]]\nunit='*'\n" + ov, tmp_path)
    assert [g.unit for g in s.groups] == [u.name for u in all_units() if u.name != "fp_add"]
    lzc = [p for p in s.points if p.unit == "lzc"]
    assert [(p.synthesis, p.clock_ns) for p in lzc] == [("hierarchical", 5.0)]
    assert {(p.synthesis, p.clock_ns) for p in s.points if p.unit != "lzc"} == {("flat", 10.0)}
    for where, msg in (("{n=1}", "naming one registered unit"),
                       ("{unit='nope'}", "nope"),
                       ("{unit='lzc'}\nskip=1", "true or false"),
                       ("{unit='lzc'}\nsynthesis='round'", r"override\[0\]\.synthesis"),
                       ("{unit='lzc'}\nfraig_conflicts=0", r"override\[0\]\.fraig_conflicts"),
                       ("{unit='lzc'}\nclock_ns=-1", r"override\[0\]\.clock_ns")):
        with pytest.raises(SpecError, match=msg):
            _spec(f"[sweep]\nname='all'\n[[group]]\nunit='*'\n[[group.override]]\n"
                  f"where={where}\n", tmp_path)
    with pytest.raises(SpecError, match="two overrides"):
        _spec("[sweep]\nname='all'\n[[group]]\nunit='*'\n" + ov.replace("fp_add", "lzc"),
              tmp_path)


def test_fraig_conflicts_axis(tmp_path):
    """``fraig_conflicts``: a flow axis like synthesis (sweep, group, override levels);
    ``default`` is Yosys's own ABC script and keeps a point's identity as it was; a derived
    ``ref = {fraig_conflicts = ...}`` without a group is the row itself at that limit."""
    base = "[sweep]\nname='f'\nfraig_conflicts=['default', 1000]\n"
    s = _spec(base + "[[group]]\nunit='lzc'\ngrid={width=[8, 9]}\n"
              "[[group.override]]\nwhere={width=9}\nfraig_conflicts=50\n"
              "[[group]]\nunit='popcount'\nfraig_conflicts='default'\n", tmp_path)
    got = [(p.unit, p.params_dict.get("width"), p.fraig_conflicts) for p in s.points]
    assert got == [("lzc", 8, None), ("lzc", 8, 1000), ("lzc", 9, 50), ("popcount", None, None)]
    plain = _spec("[sweep]\nname='f'\n[[group]]\nunit='popcount'\n", tmp_path)
    assert plain.points[0].ident == s.points[3].ident           # default: the old identity
    assert set(json.loads(plain.points[0].ident)) == {"unit", "params", "liberty", "clock_ns",
                                                       "activity"}
    assert json.loads(s.points[1].ident)["fraig_conflicts"] == 1000
    # a reference at another limit: the row's own group and params at that limit
    assert s.point("lzc", s.points[1].axes, s.points[1], (None,)) is s.points[0]
    assert s.point("lzc", s.points[1].axes, s.points[1]) is s.points[1]
    assert s.point("lzc", s.points[2].axes, s.points[2], (1000,)) is None   # width 9: 50 only
    for text, msg in (
            (base.replace("1000", "0"), r"sweep.fraig_conflicts: 0 \(\"default\" or an integer"),
            (base.replace("1000", "'none'"), "'none'"),
            (base.replace("['default', 1000]", "[]"), "empty"),
            (base + "[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='synth__area__um2'\n"
             "ref={fraig_conflicts=[1, 2]}\n", "one limit, not a list"),
            (base + "[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='synth__area__um2'\n"
             "ref={fraig_conflicts='default', params={}}\n", "the row itself"),
            (base + "[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='synth__area__um2'\n"
             "ref={params={}}\n", "ref.group: missing"),
            (base + "[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='synth__area__um2'\n"
             "ref={fraig_conflicts=7}\n", "no point of the sweep runs at 7"),
            (base + "[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='synth__area__um2'\n"
             "ref={group='lzc', fraig_conflicts=7}\n", "no point of group lzc runs at 7"),
            (base + "[[group]]\nname=''\nunit='lzc'\n", "is not a group name")):
        with pytest.raises(SpecError, match=msg) as e:
            _spec(text + ("" if "[[group]]" in text else "[[group]]\nunit='lzc'\n"), tmp_path)
        assert "\n" not in str(e.value)


def test_fraig_conflicts_rows_and_self_reference(tmp_path):
    s = _spec("[sweep]\nname='f'\nfraig_conflicts=['default', 7]\n"
              "metrics=['synth__area__um2']\n[[group]]\nunit='fp_mul'\n"
              "[[derived]]\nname='vs'\nexpr='synth__area__um2 / ref.synth__area__um2'\n"
              "ref={fraig_conflicts='default'}\n", tmp_path)
    res = run(s, cache=tmp_path / "cache")
    d, c = res.rows
    assert (d["fraig_conflicts"], c["fraig_conflicts"]) == ("default", "7")
    assert d["vs"] == 1.0 and c["vs"] == pytest.approx(c["synth__area__um2"]
                                                      / d["synth__area__um2"])
    write_outputs(res, tmp_path / "out", "tcgen sweep s.toml")
    md = (tmp_path / "out" / "f.md").read_text()
    assert "| fraig |" in md and "&fraig -x -C N" in md and "ref: the row itself" in md
    # a plot may select a limit by its number (the rows hold it as text)
    from tcgen.sweep.output import plot_svg
    from tcgen.sweep.spec import Plot
    def plot(limit):
        return plot_svg(res, Plot("p", "scatter", "synth__area__um2", "synth__area__um2",
                                  where=(("fraig_conflicts", limit),)), "c")
    assert "group=fp_mul" in plot(7) and "group=fp_mul" not in plot(8)   # the legend
    header = next(x for x in (tmp_path / "out" / "f.csv").read_text().splitlines()
                  if x.startswith("group,"))
    assert "fraig_conflicts" in header.split(",")


# -- report templates --------------------------------------------------------------------------
def test_report_template_renders_rows_and_derived(tmp_path):
    (tmp_path / "r.md.j2").write_text(
        "{{ header[:11] }}\n"
        "{% for r in rows(group='pc') %}{{ r.label }}={{ r.area_vs_n4 | fmt('{:.2f}') }};"
        "{% endfor %}\n\n{{ row(n=8).synth__cells__count | fmt('{:g}') }} "
        "{{ value('area_vs_n4', n=99) | fmt }} {{ spread(values('area_vs_n4')) }}\n")
    s = _spec(SMALL + '\n[[report]]\ntemplate = "r.md.j2"\noutput = "r.md"\n', tmp_path)
    res = run(s, cache=tmp_path / "cache")
    paths = write_outputs(res, tmp_path / "out", "tcgen sweep s.toml")
    text = (tmp_path / "out" / "r.md").read_text()
    assert tmp_path / "out" / "r.md" in paths
    a = {r["n"]: r for r in res.rows}
    lines = text.splitlines()
    assert lines[0] == "Regenerate:"
    assert lines[1] == "".join(f"popcount n={n}={a[n]['area_vs_n4']:.2f};" for n in (4, 6, 8))
    assert lines[2].startswith(f"{a[8]['synth__cells__count']:g} – 1.00–")


@pytest.mark.parametrize("template,msg", [
    ("{{ row(group='nope') }}", r"matches 0 rows"),
    ("{{ row(group='pc') }}", r"matches 3 rows"),
    ("{{ undefined_name }}", "undefined"),
    ("{% for %}", r"r.md.j2:1"),
])
def test_report_errors_write_nothing(template, msg, tmp_path):
    from tcgen.sweep.report import ReportError
    (tmp_path / "r.md.j2").write_text(template)
    s = _spec(SMALL + '\n[[report]]\ntemplate = "r.md.j2"\noutput = "r.md"\n', tmp_path)
    res = run(s, cache=tmp_path / "cache")
    with pytest.raises(ReportError, match=msg):
        write_outputs(res, tmp_path / "out", "tcgen sweep s.toml")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@pytest.mark.parametrize("rep,msg", [
    ('template = "missing.j2"\noutput = "r.md"', "no file"),
    ('template = "r.md.j2"\noutput = "../r.md"', "a file name"),
    ('template = "r.md.j2"\noutput = "r.md"\ncontext = "tcgen.units.no_such.module"',
     "cannot import"),
    ('template = "r.md.j2"\noutput = "r.md"\ncontext = "tcgen.units.bmma.params"', "no context"),
    ('template = "r.md.j2"\noutput = "r.md"\ncontext = "json"', "a family's module"),
])
def test_bad_report_entries(rep, msg, tmp_path):
    (tmp_path / "r.md.j2").write_text("x")
    with pytest.raises(SpecError, match=msg):
        _spec(SMALL + "\n[[report]]\n" + rep + "\n", tmp_path)


def test_derived_ref_matches_the_rows_parameters(tmp_path):
    """``ref.match``: the reference point takes the listed parameters from the row (a LUT
    array against the MAC array of the same n and w_bits)."""
    s = _spec("""
        [sweep]
        name = "m"
        [[group]]
        name = "a"
        unit = "popcount"
        grid = {n = [4, 8]}
        [[group]]
        name = "b"
        unit = "csa_tree"
        grid = {n = [4, 8], width = [8, 16]}
        [[derived]]
        name = "r"
        expr = "synth__area__um2 / ref.synth__area__um2"
        ref = {group = "b", params = {width = 8}, match = ["n"]}
        groups = ["a"]
        """, tmp_path)
    d = s.derived[0]
    assert d.ref_match == ("n",) and dict(d.ref_params) == {"width": 8}
    a8 = next(p for p in s.points if p.group == "a" and p.params_dict["n"] == 8)
    want = dict(d.ref_params) | {"n": 8}
    ref = s.point("b", want, a8)
    assert ref.params_dict["n"] == 8 and ref.params_dict["width"] == 8
    with pytest.raises(SpecError, match="has no parameter"):
        _spec(SMALL + '\n[[derived]]\nname="q"\nexpr="synth__area__um2"\n'
              'ref={group="pc", match=["nope"]}\n', tmp_path, "q.toml")
