"""Bad input and hostile conditions (issue 16 §4; docs/robustness.md): property-based fuzzing of
every unit parameter, the command line, sweep specs, claim files and liberty files, unwritable
and full output folders, and the rule that no user string reaches a shell.

Every case holds the error contract of tcgen/errors.py: bad input is one plain line on stderr,
exit status 2, nothing written (the output folder holds no new file), no traceback; anything
else is a bug and fails the test with its traceback.

Most cases run in-process (``tcgen.cli.main([...])``) so that Hypothesis can try many of them
cheaply; a few run the console script end to end.  Each property runs under two profiles:
``ci`` (make test: derandomized, a modest number of examples, so the run is deterministic) and
``long`` (``make test-slow``: many more, randomized; a failure prints the example to reproduce).
"""
from __future__ import annotations

import ast
import contextlib
import copy
import errno
import gzip
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tcgen import cli
from tcgen.claims import ClaimError
from tcgen.claims import load as load_claims
from tcgen.hw.params import ParamError
from tcgen.registry import all_units, get_unit
from tcgen.sweep.spec import SpecError, load as load_spec, parse as parse_spec
from tcgen.synth.liberty import LibertyError
from tcgen.synth.liberty import parse as parse_liberty

from cli_checks import assert_bad_input, files_in, run_main

ROOT = Path(__file__).resolve().parent.parent
OSU018 = Path("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")

_HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
           HealthCheck.filter_too_much, HealthCheck.data_too_large]
#: make test: deterministic (derandomized: the same examples every run), modest counts
CI = settings(derandomize=True, deadline=None, database=None, max_examples=60,
              suppress_health_check=_HEALTH, print_blob=True)
#: make test-slow: many more examples, a fresh random seed each run
LONG = settings(CI, derandomize=False, max_examples=1500)
PROFILES = [pytest.param(CI, id="ci"), pytest.param(LONG, id="long", marks=pytest.mark.slow)]


def _scaled(profile: settings, n: int) -> settings:
    """``profile`` with ``n`` examples in ci (the long profile keeps its count x n / 60)."""
    return settings(profile, max_examples=n if profile.derandomize else
                    profile.max_examples * n // 60)


# -- the contract -------------------------------------------------------------------------------
@contextlib.contextmanager
def workdir():
    """A fresh temporary folder as the current directory (inside a Hypothesis example: a
    pytest fixture would be shared by all examples)."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="tcgen-fuzz-") as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


# -- strategies ---------------------------------------------------------------------------------
HOSTILE_TEXT = ["", " ", "x", "\u0661", "1e400", "nan", "inf", "-0", "0x10", "1_0", "+1", " 3",
                "3 ", "é", "日本", "..", "../x", "a b", "$(rm -rf /)", "`id`", "; rm -rf /",
                "| cat", "--foo=$(rm -rf /)", "-p", "--all", "\x00", "\x1b[31m", "{fmt}",
                "%s%n", "true", "false", "yes", "999999999999999999999999", "-1", "0", "1"]
hostile_text = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=12))
hostile_value = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.sampled_from([2 ** 63, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True), hostile_text, st.binary(max_size=4),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                         max_size=1))
UNITS = [u.name for u in all_units()]


def _field_values(f) -> list:
    md = f.metadata
    if md.get("choices"):
        return list(md["choices"])
    if md.get("range"):
        lo, hi = md["range"]
        return [lo, hi, lo - 1, hi + 1]
    return [True, False]


# -- 1. unit parameters ------------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
def test_every_parameter_takes_only_its_values(profile):
    """Any Python value or CLI text for any field of any unit: a valid Params whose field holds
    an allowed value of the right type, or a one-line ParamError naming unit and field."""
    @_scaled(profile, 400)
    @given(st.sampled_from(UNITS), st.data())
    def prop(name, data):
        unit = get_unit(name)
        fields = unit.params.fields()
        assume(fields)
        f = data.draw(st.sampled_from(fields))
        value = data.draw(st.one_of(hostile_value, st.sampled_from(_field_values(f))))
        try:
            p = unit.params(**{f.name: value})
        except ParamError as e:
            msg = str(e)
            assert "\n" not in msg and msg.startswith(f"{unit.name}:"), msg
        else:
            v = getattr(p, f.name)
            md = f.metadata
            if md.get("choices"):
                assert v in md["choices"]
            if md.get("range"):
                assert type(v) is int and md["range"][0] <= v <= md["range"][1]
        text = data.draw(hostile_text)
        try:
            p = unit.make_params({f.name: text})
        except ParamError as e:
            assert "\n" not in str(e) and str(e).startswith(f"{unit.name}:")
        else:                                  # accepted text is canonical ASCII, no spaces;
            assert text == text.strip() and text.isascii()     # empty only where it is a value
            assert text or getattr(p, f.name) == "" and not f.metadata.get("choices"), f.name
        with pytest.raises(ParamError, match="unknown parameter"):
            unit.params.from_dict({data.draw(hostile_text.filter(
                lambda t: t not in {x.name for x in fields})): 1})
    prop()


@pytest.mark.parametrize("profile", PROFILES)
def test_cli_bad_parameter_is_one_line_and_writes_nothing(profile):
    """``tcgen generate UNIT -p name=value -o FILE`` with a value the unit refuses: exit 2, one
    line naming the unit, and no FILE (nor anything else) written."""
    @_scaled(profile, 60)
    @given(st.sampled_from(UNITS), st.data())
    def prop(name, data):
        unit = get_unit(name)
        names = [f.name for f in unit.params.fields()] + ["bogus", "", "=", "a b"]
        key = data.draw(st.sampled_from(names))
        text = data.draw(hostile_text)
        try:
            unit.make_params({key: text})
            assume(False)                      # a valid value would elaborate: not this test
        except ParamError:
            pass
        with workdir() as d:
            rc, out, err = run_main(["generate", name, "-p", f"{key}={text}", "-o", "out v.v"])
            assert_bad_input(rc, err)
            assert out == "" and files_in(d) == set()
    prop()


# -- 2. the command line -----------------------------------------------------------------------
_OPTS = {
    "generate": ["-p", "-o", "--top", "--all", "--flat", "--force"],
    "ppa": ["-p", "--liberty", "--clock-ns", "--activity", "--toggle-rate", "--cycles", "--seed",
            "--workload", "--simulator", "--hierarchical", "--json", "--no-cache", "--force"],
    "sweep": ["-j", "--executor", "--scheduler", "-o", "--cache", "--retry-failed",
              "--no-flow-cache", "--strict", "--force"],
    "claims": ["--claims", "--results", "-o"],
    "list": ["--json"],
}


@pytest.mark.parametrize("profile", PROFILES)
def test_cli_arguments_never_crash(profile, monkeypatch):
    """Random command lines (every subcommand, its options with hostile values, unicode,
    spaces, ``..``, shell metacharacters, option injection): status 0 or bad input (2, one
    line, nothing written).  The back ends (elaboration, the flow, the sweep engine) are
    stubbed: this is about argument handling, and a valid command would run for minutes."""
    _stub_backends(monkeypatch)
    token = st.one_of(hostile_text, st.sampled_from(UNITS + ["fp_mul", "lzc", "-", "x.toml",
                                                             "out/x.v", "osu018", "x.lib"]))

    @_scaled(profile, 150)
    @given(st.sampled_from(sorted(_OPTS) + ["bogus", ""]), st.data())
    def prop(cmd, data):
        argv = [cmd] if cmd else []
        opts = _OPTS.get(cmd, ["--help"])
        for _ in range(data.draw(st.integers(0, 4))):
            opt = data.draw(st.sampled_from(opts + ["--bogus", "--foo=$(rm -rf /)"]))
            argv.append(opt)
            if data.draw(st.booleans()):
                argv.append(data.draw(token))
        if data.draw(st.booleans()):
            argv.insert(1 if cmd else 0, data.draw(token))
        assume("--help" not in argv and "-h" not in argv)
        if cmd == "sweep":
            argv += ["--cache", "cache dir"]
        with workdir() as d:
            Path("x.toml").write_text("[sweep]\nname = 'x'\n")    # a spec with no group
            before = files_in(d)
            rc, out, err = run_main(argv)
            if rc != 0:
                assert_bad_input(rc, err)
                new = files_in(d) - before - {"cache dir"}
                assert not new, (argv, new)
    prop()


def test_cli_parameters_with_shell_metacharacters_end_to_end(tmp_path):
    """The console script, end to end: a file name with spaces, quotes and ``$(...)``, and a
    parameter value made of shell syntax, are data: the Verilog lands exactly at the name given,
    and the refused value is one line."""
    tricky = tmp_path / "a b 'c' $(touch PWNED) ; ..é.v"
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "generate", "lzc", "-p", "width=4",
                        "-o", str(tricky)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert tricky.is_file() and "module lzc" in tricky.read_text()
    r = subprocess.run([sys.executable, "-m", "tcgen.cli", "generate", "lzc", "-p",
                        "width=$(touch PWNED)", "-o", str(tmp_path / "y.v")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [tricky.name]


# -- 3. no user string reaches a shell -----------------------------------------------------------
_SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"),
                ("subprocess", "getstatusoutput"), ("os", "execl"), ("os", "execlp"),
                ("os", "spawnl"), ("os", "spawnlp"), ("asyncio", "create_subprocess_shell")}


def test_no_subprocess_call_uses_a_shell():
    """Every external program in the code base (tcgen, its tests and scripts) is started with an
    argument list: no ``shell=True``, no ``os.system``/``os.popen``, no string command."""
    bad = []
    for path in sorted(p for d in ("tcgen", "hw", "units", "synth", "tb", "scripts")
                       for p in (ROOT / d).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant)
                                              and kw.value.value is False):
                    bad.append(f"{where}: shell=")
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                    and (f.value.id, f.attr) in _SHELL_CALLS:
                bad.append(f"{where}: {f.value.id}.{f.attr}")
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                    and f.value.id == "subprocess" and node.args \
                    and (isinstance(node.args[0], ast.JoinedStr) or (
                        isinstance(node.args[0], ast.Constant)
                        and isinstance(node.args[0].value, str))):
                bad.append(f"{where}: subprocess.{f.attr} with a string command")
    assert not bad, bad


def test_every_script_parses_its_arguments_with_the_one_line_parser(tmp_path):
    """scripts/ build no ``argparse.ArgumentParser`` of their own (whose usage block is several
    lines on a bad argument): they use ``tcgen.study.ScriptParser`` -- one line, exit 2 -- and
    reports go through ``write_report``, which refuses a device, a folder or an empty name
    before writing (``check_report``), never replacing /dev/null with a file."""
    import io
    import os
    import stat
    from contextlib import redirect_stderr

    from tcgen.hw.files import StorageError
    from tcgen.study import ScriptParser, check_report, write_report
    #: scripts that run where tcgen is not installed: the GPU probes (docs/silicon.md)
    standalone = {"scripts/silicon/run_probes.py"}
    bad = []
    for path in sorted((ROOT / "scripts").rglob("*.py")):
        if str(path.relative_to(ROOT)) in standalone:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            f = node.func if isinstance(node, ast.Call) else None
            if (isinstance(f, ast.Attribute) and f.attr == "ArgumentParser"
                    and isinstance(f.value, ast.Name) and f.value.id == "argparse") \
                    or (isinstance(f, ast.Name) and f.id == "ArgumentParser"):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Attribute) and b.attr == "ArgumentParser")
                    or (isinstance(b, ast.Name) and b.id == "ArgumentParser")
                    for b in node.bases):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: a parser class of its own")
    assert not bad, bad
    ap = ScriptParser(prog="x")
    ap.add_argument("--n", type=int)
    err = io.StringIO()
    with redirect_stderr(err), pytest.raises(SystemExit) as e:
        ap.parse_args(["--n", "abc"])
    assert e.value.code == 2 and err.getvalue() == "x: argument --n: invalid int value: 'abc'\n"
    (tmp_path / "f").write_text("")
    for out, words in (("/dev/null", "not a regular file"), (str(tmp_path), "names a folder"),
                       ("", "names a folder"), (str(tmp_path / "f" / "r.md"), "not a folder")):
        with pytest.raises(StorageError, match=words):
            write_report(out, "text\n", {"a": 1})
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and not os.path.exists("/dev/null.json")
    assert check_report(tmp_path / "new" / "r.md") == [tmp_path / "new" / "r.md",
                                                      tmp_path / "new" / "r.json"]
    assert write_report(tmp_path / "new" / "r.md", "t\n", {"a": 1})[1].read_text() \
        == '{\n "a": 1\n}\n'


def test_liberty_path_with_tcl_and_shell_syntax_reaches_no_interpreter(tmp_path, monkeypatch):
    """A liberty whose file name is Tcl and shell syntax (``}; puts ...; {``, ``$(...)``,
    spaces, quotes) is measured like any other: the tools see a sanitized copy's name, every
    tool is started with an argument list (checked on each start), and nothing is executed."""
    import tcgen.synth.tools as tools
    real = tools.subprocess.Popen
    started = []

    class Checked(real):
        def __init__(self, args, *a, **k):
            assert isinstance(args, list) and not k.get("shell"), args
            started.append(args)
            super().__init__(args, *a, **k)
    monkeypatch.setattr(tools.subprocess, "Popen", Checked)
    name = "my lib}; puts PWNED; exec touch PWNED; {$(touch PWNED) 'q'.lib"
    shutil.copy(OSU018, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_main(["ppa", "lzc", "-p", "width=4", "--liberty", name, "--no-cache"])
    assert rc == 0, err
    assert "area" in out and not list(tmp_path.glob("PWNED*")) and not Path("PWNED").exists()
    assert started and all("PWNED" not in " ".join(map(str, a)) for a in started)


# -- 4. sweep specs ----------------------------------------------------------------------------
_BASE_SPEC = tomllib.loads((ROOT / "studies" / "example.toml").read_text())
_BASE_SPEC["group"].append({"name": "lz", "unit": "lzc", "zip": {"width": [8, 16]},
                            "label": "lzc {width:>3}",
                            "override": [{"where": {"width": 8}, "liberties": ["osu018"]}]})
_BASE_SPEC["sweep"]["activity"].append({"mode": "sim", "cycles": 100, "seed": 2})


def _paths(o, pre=()):
    yield pre
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _paths(v, pre + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _paths(v, pre + (i,))


_SPEC_PATHS = list(_paths(_BASE_SPEC))[1:]
_SPEC_WORDS = ["*", "fp_mul", "lzc", "osu018", "x.lib", "../../etc/passwd.lib", "{fmt}",
               "{m:99999999}", "{0.__class__}", "{fmt!r:>5}", "9**9**9**9", "(" * 300 + ")",
               "-" * 3000 + "1", "ref.synth__area__um2", "synth__area__um2", "min(1)",
               "abs(1, 2)", "__import__('os').system('id')", "sim", "hierarchical", "flat",
               "line", "scatter", "1e400"]
spec_value = st.one_of(hostile_value, st.sampled_from(_SPEC_WORDS),
                       st.lists(st.sampled_from([1, "x", True, 1.5, "fp16", "osu018", {}, []]),
                                max_size=3),
                       st.dictionaries(st.sampled_from(["mode", "fmt", "group", "params", "x",
                                                        "cycles", "seed", "width", "where"]),
                                       st.sampled_from([1, "x", True, -1, 10 ** 30, "sim",
                                                        {}, [], float("nan")]), max_size=3))


def _mutate(base, muts):
    raw = copy.deepcopy(base)
    for path, op, value in muts:
        try:
            o = raw
            for k in path[:-1]:
                o = o[k]
            if op == "set":
                o[path[-1]] = value
            elif op == "del":
                del o[path[-1]]
            elif isinstance(o[path[-1]], dict):
                o[path[-1]]["bogus_key"] = value
        except (KeyError, IndexError, TypeError):
            pass
    return raw


@pytest.mark.parametrize("profile", PROFILES)
def test_sweep_spec_mutations_are_checked(profile):
    """A valid spec with 1-3 of its keys set to hostile values, deleted or joined by an unknown
    key: it parses, or it is one SpecError line naming the file and key.  Checked in-process
    (``parse``); the refused ones again through ``tcgen sweep`` (exit 2, nothing written)."""
    @_scaled(profile, 250)
    @given(st.lists(st.tuples(st.sampled_from(_SPEC_PATHS), st.sampled_from(["set", "del", "key"]),
                              spec_value), min_size=1, max_size=3), st.booleans())
    def prop(muts, via_cli):
        raw = _mutate(_BASE_SPEC, muts)
        try:
            spec = parse_spec(raw, Path("s.toml"))      # as `tcgen sweep s.toml` reads it
        except SpecError as e:
            assert "\n" not in str(e) and str(e).startswith("sweep: s.toml: "), str(e)
            if via_cli:
                _cli_refuses_spec(tomllib_dumps(raw))
        else:
            assert 0 < len(spec.points) and all(p.label for p in spec.points)
    prop()


def tomllib_dumps(raw) -> str | None:
    """A TOML text of ``raw`` (JSON-like values only; None if it holds what TOML cannot)."""
    import json

    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v) if -2 ** 63 <= v < 2 ** 63 else None
        if isinstance(v, float):
            return "nan" if v != v else ("inf" if v == float("inf") else
                                         "-inf" if v == -float("inf") else repr(v))
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            items = [val(x) for x in v]
            return None if None in items else "[" + ", ".join(items) + "]"
        if isinstance(v, dict):
            items = [(json.dumps(str(k)), val(x)) for k, x in v.items()]
            return None if any(x is None for _, x in items) else \
                "{" + ", ".join(f"{k} = {x}" for k, x in items) + "}"
        return None
    if not isinstance(raw, dict):
        return None
    body = val(raw)
    if body is None:
        return None
    # an inline table at the top is not TOML; write each top key as `key = value`
    return "".join(f"{json.dumps(str(k))} = {val(v)}\n" for k, v in raw.items())


def _cli_refuses_spec(text: str | None):
    if text is None:
        return
    from unittest import mock
    with workdir() as d, mock.patch("tcgen.sweep.run", side_effect=AssertionError("ran")):
        Path("s.toml").write_text(text)
        rc, out, err = run_main(["sweep", "s.toml", "-o", "out", "--cache", "cache"])
        assert_bad_input(rc, err)
        assert not (d / "out").exists() or not files_in(d / "out")


@pytest.mark.parametrize("profile", PROFILES)
def test_sweep_spec_files_corrupt_or_binary(profile):
    """The bytes of a spec file truncated, with bytes replaced, or binary: ``load`` parses it or
    raises one SpecError line (never a UnicodeDecodeError or a TOML traceback)."""
    text = (ROOT / "studies" / "example.toml").read_bytes()

    @_scaled(profile, 60)
    @given(st.integers(0, len(text)), st.binary(max_size=8), st.sampled_from(["cut", "put"]))
    def prop(at, junk, how):
        data = text[:at] if how == "cut" else text[:at] + junk + text[at + len(junk):]
        with workdir() as d:
            (d / "s.toml").write_bytes(data)
            try:
                load_spec(d / "s.toml")
            except SpecError as e:
                assert "\n" not in str(e)
    prop()


@pytest.mark.parametrize("text,needle", [
    ("[sweep]\nname='x'\n[[group]]\nunit='bmma_array'\ngrid={m=[1,2,3,4,5,6,7,8,9,10], "
     "n=[1,2,3,4,5,6,7,8,9,10], k=[1,2,3,4,5,6,7,8,9,10], acc_width=[8,9,10,11,12,13,14,15,16,"
     "17,18]}\n", "at most 10,000"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\nlabel='{width:999999999}'\n", "short spec"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[derived]]\nname='d'\nexpr='" + "-" * 3000
     + "1'\n", "nested too deeply"),
    ("[sweep]\nname='x'\nactivity=[{mode='sim', cycles=10000000000}]\n[[group]]\nunit='lzc'\n",
     "workload_cycles must be an integer in 16..1000000"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\noverride=true\n", "array of tables"),
    ("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[plot]]\nname='p'\ny=[1]\n", "is not a name"),
    ("[sweep]\nname='x'\n[[group]]\nunit='int8_mac_array'\nparams={m=16, n=16, k=64}\n",
     "over the limit of 4,000,000 estimated cells"),
])
def test_sweep_spec_directed(tmp_path, text, needle):
    (tmp_path / "s.toml").write_text(text)
    rc, out, err = run_main(["sweep", str(tmp_path / "s.toml"), "-o", str(tmp_path / "o"),
                             "--cache", str(tmp_path / "c")])
    assert_bad_input(rc, err, needle=needle)
    assert not (tmp_path / "o").exists()


# -- 5. claim files ------------------------------------------------------------------------------
_CLAIM_OK = {"claims": {"family": "bmma"}, "claim": [
    {"id": "a", "where": "w", "claim": "c", "paper_value": 120, "kind": "bound",
     "compare": "at_least", "tolerance": 0.0, "source": "model",
     "call": "tcgen.units.bmma.rtl:popcount_census", "args": {"n": 128}, "value": "x.fa",
     "fmt": "{:g}"},
    {"id": "b", "where": "w", "claim": "c", "paper_value": 2, "source": "sweep",
     "sweep": "bmma", "rows": {"r": {"group": "g"}}, "value": "r.synth__area__um2",
     "judge_on": {"activity": "vectorless@0.1"}},
    {"id": "c", "where": "w", "claim": "c", "status": "untestable", "why": "GPU timing"}]}
_CLAIM_PATHS = list(_paths(_CLAIM_OK))[1:]
claim_value = st.one_of(spec_value, st.sampled_from([
    "os:system", "builtins:eval", "tcgen.units.bmma.rtl:_private", "tcgen.units.bmma.rtl:nope",
    "tcgen.units..rtl:f", "tcgen.units.bmma.rtl:popcount_census:x", "../../etc/passwd",
    "{0.__class__}", "{:{}}", "{:999999999}", "{}{}", "x.fa ** 9 ** 9 ** 9"]))


@pytest.mark.parametrize("profile", PROFILES)
def test_claim_file_mutations_are_checked(profile):
    """A valid ledger with hostile keys: ``load`` accepts it or raises one ClaimError line; the
    refused ones again through ``tcgen claims`` (exit 2, the ledger not written)."""
    @_scaled(profile, 200)
    @given(st.lists(st.tuples(st.sampled_from(_CLAIM_PATHS),
                              st.sampled_from(["set", "del", "key"]), claim_value),
                    min_size=1, max_size=3), st.booleans())
    def prop(muts, via_cli):
        raw = _mutate(_CLAIM_OK, muts)
        text = tomllib_dumps(raw)
        assume(text is not None)
        with workdir() as d:
            (d / "claims").mkdir()
            (d / "claims" / "x.toml").write_text(text)
            try:
                claims = load_claims(d / "claims")
            except ClaimError as e:
                assert "\n" not in str(e) and str(e).startswith("claims: ")
                if via_cli:
                    rc, out, err = run_main(["claims", "--claims", "claims", "--results", ".",
                                             "-o", "ledger.md"])
                    assert_bad_input(rc, err)
                    assert not (d / "ledger.md").exists()
            else:
                for c in claims:            # what was accepted is what the renderer needs
                    assert isinstance(c.fmt, str) and isinstance(c.tolerance, (int, float))
                    if c.source == "model" and c.status == "measured":
                        assert c.call.startswith("tcgen.units.")
    prop()


@pytest.mark.parametrize("change,needle", [
    ({"call": "os:system", "args": {"command": "touch PWNED"}}, "a function of a family"),
    ({"call": "tcgen.units.bmma.rtl:popcount_census", "args": {"bogus": 1}},
     "cannot call tcgen.units.bmma.rtl:popcount_census"),
    ({"fmt": "{0.__class__}"}, "must format one number"),
    ({"tolerance": "big"}, "tolerance must be a finite number"),
    ({"value": "x.fa" + " + 1" * 3000}, "longer than"),
])
def test_claim_directed(tmp_path, change, needle):
    d = copy.deepcopy(_CLAIM_OK["claim"][0])
    d.update(change)
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "x.toml").write_text(tomllib_dumps({"claim": [d]}))
    rc, out, err = run_main(["claims", "--claims", str(tmp_path / "claims"), "--results",
                             str(tmp_path), "-o", str(tmp_path / "ledger.md")])
    assert_bad_input(rc, err, needle=needle)
    assert not (tmp_path / "ledger.md").exists() and not Path("PWNED").exists()


@pytest.mark.parametrize("results,needle", [
    (b"\xff\xfe binary", "cannot read results"),
    (b"{\"rows\": 3}", "is not a sweep's results"),
    (b"[" * 100000, "cannot read results"),
])
def test_claims_corrupt_results(tmp_path, results, needle):
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "x.toml").write_text(tomllib_dumps({"claim": [_CLAIM_OK["claim"][1]]}))
    (tmp_path / "bmma.json").write_bytes(results)
    rc, out, err = run_main(["claims", "--claims", str(tmp_path / "claims"), "--results",
                             str(tmp_path), "-o", str(tmp_path / "ledger.md")])
    assert_bad_input(rc, err, needle=needle)
    assert not (tmp_path / "ledger.md").exists()


# -- 6. liberty files ----------------------------------------------------------------------------
_LIB = OSU018.read_text() if OSU018.is_file() else ""
_LIB_JUNK = ["{", "}", ";", ":", "(", ")", '"', "\\\n", "/*", "*/", "\x00", "é", "library(x){",
             "cell(", "area : x;", "area : nan;", "area : -1;", "capacitive_load_unit(0,ff);",
             "capacitive_load_unit(1,xf);", 'time_unit : "1furlong";', "pin(A){", "ff(IQ,IQN){"]


@pytest.mark.skipif(not _LIB, reason="osu018 not installed")
@pytest.mark.parametrize("profile", PROFILES)
def test_liberty_corrupt_truncated_binary(profile):
    """osu018 truncated, with tokens inserted or removed, or replaced by binary junk: the
    scanner returns a library or raises one LibertyError line; never another exception."""
    @_scaled(profile, 150)
    @given(st.integers(0, len(_LIB)), st.sampled_from(["cut", "insert", "delete", "binary"]),
           st.one_of(st.sampled_from(_LIB_JUNK), st.text(max_size=6)), st.integers(1, 400))
    def prop(at, how, junk, span):
        text = {"cut": lambda: _LIB[:at], "insert": lambda: _LIB[:at] + junk + _LIB[at:],
                "delete": lambda: _LIB[:at] + _LIB[at + span:],
                "binary": lambda: bytes(range(256)).decode("latin-1") * span}[how]()
        try:
            library, time_unit, cells, cap = parse_liberty(text, "x.lib")
        except LibertyError as e:
            assert "\n" not in str(e) and str(e).startswith("liberty x.lib")
        else:
            assert cells and cap > 0 and all(c.area >= 0 for c in cells.values())
    prop()


@pytest.mark.skipif(not _LIB, reason="osu018 not installed")
@pytest.mark.parametrize("content,needle", [
    (b"", "no 'library (...) {' group"),
    (bytes(range(256)) * 4, "not a liberty file"),
    (b"\x1f\x8b\x08\x00garbage", "cannot be read"),
    (gzip.compress(_LIB[: len(_LIB) // 2].encode()), "not closed at end of file"),
    (_LIB.replace('time_unit : "1ns"', 'time_unit : "1furlong"').encode(), "is not a time unit"),
    (_LIB.replace("capacitive_load_unit (1,pf)", "capacitive_load_unit (0,pf)").encode(),
     "is not a positive number"),
    (re.sub(r"area : [0-9.]+;", "area : -4;", _LIB, count=1).encode(), "non-negative number"),
])
def test_cli_broken_liberty_is_one_line(tmp_path, content, needle):
    """``tcgen ppa --liberty FILE`` on broken files: exit 2, one line naming the file as given,
    before any tool runs and with nothing written into the flow's folders."""
    name = "lib.lib.gz" if content[:2] == b"\x1f\x8b" else "lib.lib"
    (tmp_path / name).write_bytes(content)
    import tcgen.synth.liberty as liberty
    lib_dir = liberty.BUILD / "lib"
    before = files_in(lib_dir)
    rc, out, err = run_main(["ppa", "lzc", "--liberty", str(tmp_path / name)])
    assert_bad_input(rc, err, needle=needle)
    assert files_in(lib_dir) - before == set()


# -- 7. unwritable and full output folders -------------------------------------------------------
def _stub_backends(monkeypatch):
    monkeypatch.setattr(cli, "verilog", lambda *a, **k: "// stub\n" * 1000)
    monkeypatch.setattr(cli, "measure", lambda *a, **k: {"stub": True})
    monkeypatch.setattr(cli, "format_table", lambda r: "table\n")


def _commands(out: Path, claims: Path) -> list[list[str]]:
    """A command per kind of output: a Verilog file, a folder of them, a JSON file, a ledger."""
    claims.mkdir(exist_ok=True)
    (claims / "x.toml").write_text(tomllib_dumps({"claim": [_CLAIM_OK["claim"][2]]}))
    return [["generate", "lzc", "-o", str(out / "x.v")],
            ["generate", "--all", "-o", str(out / "all")],
            ["ppa", "lzc", "--json", str(out / "r.json")],
            ["claims", "--claims", str(claims), "--results", str(claims), "-o",
             str(out / "claims.md")]]


@pytest.mark.parametrize("fault", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT])
def test_write_faults_are_one_line_and_leave_nothing(tmp_path, monkeypatch, fault):
    """Every output a command writes goes through one atomic writer (tcgen.hw.files); when the
    file system refuses it -- full (ENOSPC), read-only, no permission, over quota -- simulated
    in-process (as root, permissions do not stop writes): exit 2, one line naming the file and
    the reason, and no file (no temporary either) left in the output folder."""
    import tcgen.hw.files as files
    _stub_backends(monkeypatch)
    real_fdopen = os.fdopen

    class Failing(io.StringIO):
        def __init__(self, fh):
            super().__init__()
            self.fh = fh

        def write(self, s):
            raise OSError(fault, os.strerror(fault))

        def close(self):
            self.fh.close()
            super().close()

        def __exit__(self, *a):
            self.close()

    monkeypatch.setattr(files.os, "fdopen", lambda fd, *a, **k: Failing(real_fdopen(fd, *a, **k)))
    (tmp_path / "out").mkdir()
    for argv in _commands(tmp_path / "out", tmp_path / "claims"):
        rc, out, err = run_main(argv)
        if fault in files.IO_FAILURES:      # the storage failed (issue 41): exit 1, one line
            assert rc == 1 and len(err.splitlines()) == 1 and "I/O failure" in err, (rc, err)
            assert os.strerror(fault) in err and "Traceback" not in err
        else:                               # the place refuses writes: bad input, exit 2
            assert_bad_input(rc, err, needle=os.strerror(fault))
        assert files_in(tmp_path / "out") == set(), argv


def _mount(target: Path, options: str) -> bool:
    target.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tcgen-fuzz", str(target)],
                       capture_output=True)
    return r.returncode == 0


@pytest.mark.parametrize("options", ["size=64k", "ro,size=64k"])
def test_real_full_and_read_only_file_systems(tmp_path, monkeypatch, options):
    """The same with a real small tmpfs, filled up or mounted read-only (root only; skipped
    where mounting is not allowed)."""
    target = tmp_path / "fs"
    if not _mount(target, options):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        if "ro" not in options.split(","):
            with contextlib.suppress(OSError):
                with open(target / "filler", "wb") as fh:
                    while True:
                        fh.write(b"\0" * 4096)
                        fh.flush()
        full = "ro" not in options.split(",")
        _stub_backends(monkeypatch)

        def assert_refused(rc, err, needle=None):
            if full:     # the storage failed (issue 41): an I/O failure, exit 1, one line
                assert rc == 1 and len(err.splitlines()) == 1, (rc, err)
                assert "I/O failure: No space left on device" in err, err
            else:        # a read-only place: bad input, found before any work, exit 2
                assert_bad_input(rc, err, needle=needle)

        for argv in _commands(target, tmp_path / "claims"):
            before = files_in(target)
            rc, out, err = run_main(argv)
            assert_refused(rc, err)
            assert files_in(target) == before, (argv, files_in(target) - before)
        (tmp_path / "spec.toml").write_text("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n")
        rc, out, err = run_main(["sweep", str(tmp_path / "spec.toml"), "-o", str(target / "o"),
                                 "--cache", str(tmp_path / "cache")])
        # a full disk shows only when the outputs are written, after the sweep's progress lines;
        # a read-only one before the sweep starts
        last = err.splitlines(keepends=True)[-1]
        assert_refused(rc, last, needle="cannot write into")
        assert "Traceback" not in err and not (target / "o").exists()
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


def test_outputs_that_are_not_regular_files_are_refused(tmp_path, monkeypatch):
    """``-o`` naming a FIFO (or a device: /dev/null, /dev/full) is refused: an atomic write
    replaces the name, and as root it would have replaced the device node with a file.  A
    trailing ``/`` names a folder, not a file."""
    _stub_backends(monkeypatch)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for argv in (["generate", "lzc", "-o", str(fifo)], ["ppa", "lzc", "--json", str(fifo)]):
        rc, out, err = run_main(argv)
        assert_bad_input(rc, err, needle="not a regular file")
        assert fifo.is_fifo()
    for argv in (["generate", "lzc", "-o", str(tmp_path / "new") + "/"],
                 ["claims", "-o", str(tmp_path / "new") + "/"]):
        rc, out, err = run_main(argv)
        assert_bad_input(rc, err)
        assert not (tmp_path / "new").exists()
    # and inputs: a FIFO spec or ledger would block the read forever
    (tmp_path / "c").mkdir()
    os.mkfifo(tmp_path / "c" / "x.toml")
    for argv in (["sweep", str(tmp_path / "c" / "x.toml"), "-o", str(tmp_path / "o")],
                 ["claims", "--claims", str(tmp_path / "c"), "-o", str(tmp_path / "l.md")]):
        rc, out, err = run_main(argv)
        assert_bad_input(rc, err, needle="not a regular file")


def test_tls_scheduler_without_tls_settings_is_bad_input(tmp_path):
    pytest.importorskip("dask.distributed")
    (tmp_path / "s.toml").write_text("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n")
    rc, out, err = run_main(["sweep", str(tmp_path / "s.toml"), "--executor", "dask",
                             "--scheduler", "tls://127.0.0.1:9", "-o", str(tmp_path / "o")])
    assert_bad_input(rc, err, needle="a TLS scheduler needs Dask's TLS settings")


def test_report_templates_and_contexts_run_no_code(tmp_path):
    """A spec's report template is sandboxed (no way from a template to Python's internals and
    on to a shell), and its ``context`` names a family's module only."""
    from tcgen.sweep.report import Report, ReportError, render
    (tmp_path / "t.j2").write_text("{{ cycler.__init__.__globals__.os.popen('touch "
                                   + str(tmp_path / "PWNED") + "').read() }}")
    with pytest.raises(ReportError, match="unsafe"):
        render(Report(tmp_path / "t.j2", "o.md", None), [], header="", flow_notes=[])
    assert not (tmp_path / "PWNED").exists()
    (tmp_path / "s.toml").write_text("[sweep]\nname='x'\n[[group]]\nunit='lzc'\n[[report]]\n"
                                     "template='t.j2'\noutput='o.md'\ncontext='antigravity'\n")
    rc, out, err = run_main(["sweep", str(tmp_path / "s.toml"), "-o", str(tmp_path / "o")])
    assert_bad_input(rc, err, needle="a family's module")
