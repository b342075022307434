"""Issue 41's classes of failure, each as a regression (docs/robustness.md): one line on stderr,
exit 2 for bad input or 1 for an I/O or tool failure, nothing partial written, no temporary
folder left -- for

1. storage that cannot be used or fills up (the flow cache, the sweep cache),
2. outputs checked before any work, written all or nothing,
3. temporary files after a failure (the flow's ``.tmp-*``, Yosys's ``yosys-abc-*``, a refused
   liberty's copy),
4. tool errors that name their cause and their log,
5. values the README excludes (integer spellings, clocks, seeds; Hypothesis),
6. broken plug-in families, isolated from the rest (tcgen.registry).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcgen import cli, registry
from tcgen.hw import files
from tcgen.hw.params import ParamError, parse_seed, parse_value
from tcgen.registry import get_unit

from cli_checks import assert_bad_input, files_in, run_main

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
OSU018 = Path("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")


def tcgen(*args, env=None, cwd=None, tmp=None):
    """``tcgen ARGS`` in a process of its own; ``tmp``: its TMPDIR (to see what it leaves)."""
    e = dict(os.environ, **(env or {}))
    if tmp is not None:
        e["TMPDIR"] = str(tmp)
    return subprocess.run([PY, "-m", "tcgen.cli", *args], capture_output=True, text=True,
                          env=e, cwd=cwd or ROOT)


def one_line(r, status: int, needle: str = ""):
    assert r.returncode == status, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcgen") and "Traceback" not in r.stderr, \
        r.stderr[-2000:]
    assert needle in lines[0], lines[0]


def _mount(target: Path, options: str) -> bool:
    target.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tcgen-rob", str(target)],
                       capture_output=True)
    return r.returncode == 0


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs filled to the brim (root only)."""
    target = tmp_path / "full"
    if not _mount(target, "size=64k"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        try:
            with open(target / "filler", "wb") as fh:
                while True:
                    fh.write(b"\0" * 4096)
                    fh.flush()
        except OSError:
            pass
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


# -- 1. storage ---------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["/proc/nope", "file", "file/below"])
def test_unusable_flow_cache_is_one_line_exit_2(tmp_path, where):
    (tmp_path / "file").write_text("x")
    cache = where if where.startswith("/") else str(tmp_path / where)
    r = tcgen("ppa", "lzc", "-p", "width=4", env={"TCGEN_PPA_CACHE": cache}, tmp=tmp_path)
    one_line(r, 2, "cannot use the flow cache (TCGEN_PPA_CACHE)")


def test_full_flow_cache_is_one_line_exit_1(tmp_path, full_disk):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = tcgen("ppa", "lzc", "-p", "width=4", "--json", str(tmp_path / "r.json"),
              env={"TCGEN_PPA_CACHE": str(full_disk / "cache")}, tmp=tmp)
    one_line(r, 1, "I/O failure: No space left on device")
    assert not (tmp_path / "r.json").exists() and files_in(tmp) == set()


def test_sweep_cache_that_is_a_file_refuses_before_anything(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text("[sweep]\nname = 's'\n[[group]]\nunit = 'lzc'\n")
    (tmp_path / "cache").write_text("")
    rc, out, err = run_main(["sweep", str(spec), "-o", str(tmp_path / "o"), "--cache",
                             str(tmp_path / "cache")])
    assert_bad_input(rc, err, needle="cannot use the sweep cache")
    assert not (tmp_path / "o").exists()


def test_full_sweep_cache_is_exit_1_and_writes_no_output(tmp_path, full_disk, monkeypatch):
    from tcgen.sweep import engine
    monkeypatch.setattr(engine, "measure_point", lambda job: {"area_um2": 1.0})
    spec = tmp_path / "s.toml"
    spec.write_text("[sweep]\nname = 's'\n[[group]]\nunit = 'lzc'\n")
    rc, out, err = run_main(["sweep", str(spec), "-o", str(tmp_path / "o"), "--cache",
                             str(full_disk / "cache")])
    last = err.strip().splitlines()[-1]
    assert rc == 1 and "I/O failure: No space left on device" in last and "Traceback" not in err
    assert not (tmp_path / "o").exists()


# -- 2. outputs checked before any work, written all or nothing ---------------------------------
def _no_work(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("work was done before the output was checked")
    for name in ("verilog", "measure"):
        monkeypatch.setattr(cli, name, boom)


@pytest.mark.parametrize("argv", [
    ["ppa", "lzc", "--json", "{ro}/r.json"],
    ["ppa", "lzc", "--json", "{dir}"],
    ["generate", "lzc", "-o", "{ro}/x.v"],
    ["generate", "--all", "-o", "{ro}/all"],
    ["generate", "--all", "-o", "{file}/all"],
    ["sweep", "{spec}", "-o", "{ro}/out"],
    ["sweep", "{spec}", "-o", "{file}"],
])
def test_outputs_are_checked_before_any_work(tmp_path, monkeypatch, argv):
    """An output that cannot be written refuses the command before anything is generated,
    measured or made (the folder -o names included); as root a read-only mount is the only
    place permissions cannot override."""
    ro = tmp_path / "ro"
    if not _mount(ro, "ro,size=64k"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (tmp_path / "file").write_text("")
        (tmp_path / "spec.toml").write_text("[sweep]\nname = 's'\n[[group]]\nunit = 'lzc'\n")
        _no_work(monkeypatch)
        from tcgen.sweep import engine
        monkeypatch.setattr(engine, "measure_point", lambda job: pytest.fail("measured"))
        args = [a.format(ro=ro, dir=tmp_path, file=tmp_path / "file",
                         spec=tmp_path / "spec.toml") for a in argv]
        before = files_in(tmp_path)
        rc, out, err = run_main(args)
        assert_bad_input(rc, err, needle="cannot write")
        assert files_in(tmp_path) == before
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)


def test_write_all_is_all_or_nothing(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("old a")
    calls = []

    def write_fails_on_second(fd, *a, **k):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_fdopen(fd, *a, **k)

    real_fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", write_fails_on_second)
    with pytest.raises(OSError) as e:
        files.write_all({tmp_path / "a.txt": "new a", tmp_path / "b.txt": "new b"})
    assert files.io_failure(e.value) and e.value.filename == str(tmp_path / "b.txt")
    assert (tmp_path / "a.txt").read_text() == "old a"          # not replaced
    assert files_in(tmp_path) == {"a.txt"}                      # b never appears, no temporary
    monkeypatch.setattr(files.os, "fdopen", real_fdopen)
    files.write_all({tmp_path / "a.txt": "new a", tmp_path / "b.txt": "new b"})
    assert (tmp_path / "a.txt").read_text() == "new a" and (tmp_path / "b.txt").is_file()


# -- 3 and 4. temporary files, and tool errors that say why --------------------------------------
def _liberty_without(tmp_path: Path, keep: set[str]) -> Path:
    """osu018 with ``function`` removed from every cell not in ``keep``."""
    out, cell = [], None
    for line in OSU018.read_text().splitlines(True):
        m = re.match(r'\s*cell\s*\(\s*"?(\w+)', line)
        if m:
            cell = m.group(1)
        if "function" in line and cell not in keep:
            continue
        out.append(line)
    path = tmp_path / "partial.lib"
    path.write_text("".join(out))
    return path


@pytest.mark.skipif(not OSU018.is_file(), reason="osu018 not installed")
def test_a_liberty_abc_cannot_use_is_refused_before_it_is_copied(tmp_path):
    lib = _liberty_without(tmp_path, {"BUFX2", "INVX1"})
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    r = tcgen("ppa", "lzc", "-p", "width=8", "--liberty", str(lib),
              env={"TCGEN_PPA_CACHE": str(cache)}, tmp=tmp)
    one_line(r, 2, "liberty 'partial': ABC cannot map logic onto it: it has no gate of two "
                   "or more inputs")
    assert "lack a `function` (AND2X1" in r.stderr
    assert not (cache / "lib").exists() or files_in(cache / "lib") == set()
    assert not list(cache.rglob("*.tmp-*")) and files_in(tmp) == set()


@pytest.mark.skipif(not OSU018.is_file(), reason="osu018 not installed")
def test_a_failed_synthesis_names_the_cause_and_keeps_its_log_not_its_temporaries(
        tmp_path, monkeypatch):
    """ABC fails on a liberty the up-front check would refuse (switched off here): the error
    is one line with ABC's own reason and the log's path; the log is kept under
    failed/<key>/; no ``<key>.tmp-*`` folder and no ``yosys-abc-*`` folder is left."""
    from tcgen.synth import liberty, ppa
    monkeypatch.setattr(liberty, "check_mappable", lambda *a, **k: None)
    monkeypatch.setattr(liberty, "BUILD", tmp_path / "cache")
    monkeypatch.setattr(ppa, "BUILD", tmp_path / "cache")
    monkeypatch.setattr(liberty, "_memo", {})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    lib = _liberty_without(tmp_path, {"BUFX2", "INVX1", "BUFX4", "INVX2"})
    rc, out, err = run_main(["ppa", "lzc", "-p", "width=8", "--liberty", str(lib)])
    assert rc == 1 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "ABC: Library with only 2 cell classes cannot be used" in err, err
    assert "skipped" in err and "without a logic function" in err
    log = Path(re.search(r"\(log: ([^)]+)\)", err).group(1))
    assert log.is_file() and log.parent.parent.name == "failed" and "ABC" in log.read_text()
    assert not list((tmp_path / "cache").rglob("*.tmp-*"))
    assert files_in(tmp) == set(), files_in(tmp)


# -- 5. values the README excludes ---------------------------------------------------------------
@pytest.mark.parametrize("text", ["0x8", "+8", "0o10", "0b1000", "1_0", "08", " 8", "8 ",
                                  "\u0668", "8.0", "1e1", ""])
def test_integer_spellings_other_than_decimal_are_refused(text):
    with pytest.raises(ValueError):
        parse_value(int, text)
    with pytest.raises(ParamError, match="lzc: width must be an integer in 1..128"):
        get_unit("lzc").make_params({"width": text})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789+-_xobXOB .e", min_size=1, max_size=8))
def test_integers_are_plain_decimal(text):
    """Hypothesis: a text is an integer exactly when it is ``-?(0|[1-9][0-9]*)``, and then it
    means what it says in base 10."""
    plain = re.fullmatch(r"-?(0|[1-9][0-9]*)", text) is not None
    try:
        value = parse_value(int, text)
    except ValueError:
        assert not plain
    else:
        assert plain and value == int(text)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                 st.sampled_from(["1e400", "-1e400", "inf", "nan", "Infinity", "1e-300"])))
def test_numbers_are_finite(text):
    try:
        value = parse_value(float, text)
    except ValueError:
        return
    assert value == value and abs(value) != float("inf")


@pytest.mark.parametrize("clock", ["1e-300", "0", "-1", "1e7", "0.0009"])
def test_clock_outside_1ps_to_1ms_is_refused(clock, tmp_path):
    rc, out, err = run_main(["ppa", "lzc", "--clock-ns", clock, "--json", str(tmp_path / "r")])
    assert rc == 2 and len(err.splitlines()) == 1 and "clock" in err, err
    assert not (tmp_path / "r").exists()


def test_ppa_json_is_strict_json(tmp_path):
    """No ``Infinity``/``NaN`` in what tcgen writes: the fastest clock still gives numbers."""
    r = tcgen("ppa", "lzc", "-p", "width=4", "--clock-ns", "0.001", "--json", "-")
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


@pytest.mark.parametrize("seed", ["-1", "abc", "4294967296", "0x10", " 1"])
def test_bad_tcgen_seed_is_one_line(seed, monkeypatch):
    _no_work(monkeypatch)
    monkeypatch.setenv("TCGEN_SEED", seed)
    rc, out, err = run_main(["ppa", "lzc", "--activity", "sim"])
    assert_bad_input(rc, err, needle="TCGEN_SEED must be an integer in 0..4294967295")
    with pytest.raises(ParamError):
        parse_seed(seed)


def test_good_tcgen_seed_is_the_default_seed(monkeypatch):
    seen = {}
    monkeypatch.setattr(cli, "measure", lambda *a, **k: seen.update(k) or pytest.skip("seen"))
    monkeypatch.setenv("TCGEN_SEED", "7")
    try:
        run_main(["ppa", "lzc", "--activity", "sim"])
    except pytest.skip.Exception:
        pass
    assert seen["seed"] == 7


# -- 6. broken plug-in families ------------------------------------------------------------------
class _EP:
    """A stand-in entry point."""

    def __init__(self, name, load, dist="tcgen-demo"):
        self.name, self.value, self._load = name, f"tcgen_{name}:UNITS", load
        self.dist = type("D", (), {"name": dist})()

    def load(self):
        return self._load()


def _raise(e):
    def load():
        raise e
    return load


@pytest.fixture
def plugins(monkeypatch):
    """Install stand-in plug-in entry points beside the real ones."""
    real = registry.metadata.entry_points(group=registry.GROUP)

    def install(*eps):
        monkeypatch.setattr(registry.metadata, "entry_points",
                            lambda group: [*real, *eps] if group == registry.GROUP else [])
        registry._catalog.cache_clear()
    yield install
    registry._catalog.cache_clear()


_LZC = get_unit("lzc")


@pytest.mark.parametrize("load, reason", [
    (_raise(SyntaxError("invalid syntax")), "failed to load: SyntaxError: invalid syntax"),
    (_raise(ImportError("No module named 'x'")), "failed to load: ImportError"),
    (_raise(SystemExit(0)), "raised SystemExit(0) while importing"),
    (lambda: "not a tuple", "must name a tuple of tcgen.hw.spec.UnitSpec, got str"),
    (lambda: (_LZC,), "unit 'lzc' is declared twice"),
    (lambda: (object(),), "holds object, not a tcgen.hw.spec.UnitSpec"),
])
def test_a_broken_plugin_is_isolated(plugins, load, reason):
    plugins(_EP("bad", load))
    rc, out, err = run_main(["list", "--brief"])
    assert rc == 1 and "Traceback" not in err
    assert err.count("\n") == 1 and reason in err and "tcgen: warning: plug-in family bad" in err
    assert "lzc" in out and "fp_add" in out and get_unit("lzc") is _LZC   # built-ins unharmed
    rc, out, err = run_main(["generate", "lzc", "-p", "width=4"])
    assert rc == 0 and "module lzc(" in out and reason in err
    rc, out, err = run_main(["generate", "bad_unit"])
    warning, error = err.splitlines(keepends=True)
    assert reason in warning
    assert_bad_input(rc, error, needle="unknown unit 'bad_unit' (1 broken plug-in family "
                                       "skipped: see the warnings)")


def test_one_broken_plugin_does_not_hide_a_good_one(plugins):
    import dataclasses
    good = dataclasses.replace(_LZC, name="good_lzc", family="good")
    plugins(_EP("bad", _raise(SystemExit(3))), _EP("good", lambda: (good,)))
    assert get_unit("good_lzc") is good and [b.entry_point for b in registry.broken()] == \
        ["bad = tcgen_bad:UNITS"]
