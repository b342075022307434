"""Packaging and structure: one import package `tcgen`, the layers, families by entry point,
Ctrl-C.

* a built wheel holds exactly one top-level package, ``tcgen`` (tb/test_plugin_wheel.py);
* ``import hw`` (or ``units``, ``synth``) from outside the checkout fails;
* importing the hardware library loads nothing above it, and golden models load no Amaranth;
* every package folder is listed in pyproject.toml and every family has an entry point;
* an out-of-tree family, pip-installed into a separate folder, is seen by ``tcgen list``,
  ``generate`` and ``ppa`` with no edit to tcgen; broken or duplicate declarations fail loudly;
* Ctrl-C leaves exit status 130, one line, no temporary folder and no tool process.

The layer contract itself is checked by import-linter (scripts/lint_imports.sh, `make test`).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _py(code: str, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=cwd, env=env)


# -- one import package ----------------------------------------------------------------------------
# (the built wheel's contents -- one top-level package, tcgen, the harness inside -- are checked
# in tb/test_plugin_wheel.py, which builds the wheel once and installs the example plug-in from it)
@pytest.mark.parametrize("name", ["hw", "units", "synth", "tb"])
def test_old_top_level_names_do_not_import_outside_the_checkout(name, tmp_path):
    r = _py(f"import {name}", cwd=tmp_path)
    assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr


def test_hardware_library_loads_nothing_above_it(tmp_path):
    r = _py("""
        import sys
        import tcgen.hw.fparith, tcgen.hw.intarith, tcgen.hw.generate, tcgen.hw.library
        print(sorted(m for m in sys.modules if m.startswith("tcgen")))
        """, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    mods = eval(r.stdout)
    assert mods and all(m == "tcgen" or m.startswith("tcgen.hw") for m in mods), mods


@pytest.mark.parametrize("model", ["tcgen.units.pacq.model", "tcgen.units.bmma.model",
                                   "tcgen.units.lut.model", "tcgen.units.sparse.model",
                                   "tcgen.units.winograd.model", "tcgen.hw.numeric"])
def test_golden_models_load_no_amaranth(model, tmp_path):
    r = _py(f"""
        import sys
        import {model}
        print([m for m in sys.modules if m.split(".")[0] == "amaranth"])
        """, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_every_package_folder_is_listed_and_every_family_declared():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    st = cfg["tool"]["setuptools"]
    found = set()
    for pkg, folder in st["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([pkg, *rel.parts]))
    assert sorted(found) == sorted(st["packages"])
    eps = cfg["project"]["entry-points"]["tcgen.families"]
    families = {p.parent.name for p in (ROOT / "units").glob("*/family.py")}
    assert families <= set(eps) and eps["hw"] == "tcgen.hw.library:UNITS"


# -- families by entry point ---------------------------------------------------------------------
DEMO = '''
"""An out-of-tree tcgen family: one unit, a 4-bit XOR."""
from dataclasses import dataclass

import numpy as np
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tcgen.hw.params import Params, param
from tcgen.hw.spec import UnitSpec


@dataclass(frozen=True)
class XorParams(Params):
    UNIT = "demo_xor"
    width: int = param(4, range=(1, 16), doc="bits")


class Xor(wiring.Component):
    def __init__(self, p):
        self.latency = 0
        super().__init__({"a": In(p.width), "b": In(p.width), "y": Out(p.width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a ^ self.b)
        return m


UNITS = (UnitSpec(
    name="demo_xor", family="demo", summary="out-of-tree demo: y = a xor b",
    params=XorParams, build=Xor,
    model=lambda p, a, b: {"y": np.asarray(a, np.uint64) ^ np.asarray(b, np.uint64)},
    ops_per_cycle=lambda p: float(p.width), ops_unit="bit-op",
    workload=lambda p, rng, n: {"a": rng.integers(0, 1 << p.width, n, dtype=np.uint64),
                                "b": rng.integers(0, 1 << p.width, n, dtype=np.uint64)}),)
DUPLICATE = (UNITS[0].__class__(**{**UNITS[0].__dict__, "name": "fp_add"}),)
'''


def _install_family(tmp_path, ep_value="tcgen_demo:UNITS", name="tcgen-demo") -> dict:
    """pip-install a one-unit family into a folder of its own; the environment that sees it."""
    src = tmp_path / "src"
    (src / "tcgen_demo").mkdir(parents=True)
    (src / "tcgen_demo" / "__init__.py").write_text(DEMO)
    (src / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "1.0"
        [tool.setuptools]
        packages = ["tcgen_demo"]
        [project.entry-points."tcgen.families"]
        demo = "{ep_value}"
        """))
    site = tmp_path / "site"
    r = subprocess.run([PY, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(site), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(os.environ, PYTHONPATH=str(site))


def _tcgen(*args, env, cwd):
    return subprocess.run([PY, "-m", "tcgen.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_out_of_tree_family_by_entry_point(tmp_path):
    env = _install_family(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    r = _tcgen("list", "--json", env=env, cwd=work)
    assert r.returncode == 0, r.stderr
    units = {u["unit"]: u for u in json.loads(r.stdout)}
    assert units["demo_xor"]["family"] == "demo" and "fp_add" in units and "dp4_pacq" in units
    r = _tcgen("generate", "demo_xor", "-p", "width=8", "-o", str(work / "x.v"), env=env,
               cwd=work)
    assert r.returncode == 0, r.stderr
    text = (work / "x.v").read_text()
    assert "unit demo_xor; params width=8" in text and "module demo_xor(" in text
    r = _tcgen("ppa", "demo_xor", "--json", "-", env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["unit"] == "demo_xor" and res["area_um2"] > 0 and res["ops_per_cycle"] == 4
    # and without the folder on the path, tcgen does not know it
    r = _tcgen("generate", "demo_xor", env=dict(os.environ, PYTHONPATH=""), cwd=work)
    assert r.returncode == 2 and "unknown unit 'demo_xor'" in r.stderr


def test_an_interrupt_while_a_family_imports_is_an_interrupt(monkeypatch):
    """Ctrl-C while a family's module is imported can surface wrapped (Python turns it into
    the cause of a RuntimeError when it lands in a dataclass field's ``__set_name__``): the
    registry re-raises it as KeyboardInterrupt (the CLI: "tcgen: interrupted", exit 130), not as
    a broken family."""
    from tcgen import registry

    class EntryPoint:
        name, value, dist = "demo", "tcgen_demo:UNITS", None

        def load(self):
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as k:
                raise RuntimeError("Error calling __set_name__ on 'Field' instance") from k

    monkeypatch.setattr(registry.metadata, "entry_points", lambda group: [EntryPoint()])
    registry._catalog.cache_clear()
    try:
        with pytest.raises(KeyboardInterrupt):
            registry._catalog()
    finally:
        registry._catalog.cache_clear()


@pytest.mark.parametrize("ep_value,needle", [
    ("tcgen_demo:DUPLICATE", "unit 'fp_add' is declared twice"),
    ("tcgen_demo:Xor", "must name a tuple of tcgen.hw.spec.UnitSpec"),
    ("tcgen_demo_missing:UNITS", "failed to load: ModuleNotFoundError"),
])
def test_broken_family_declarations_fail_loudly(tmp_path, ep_value, needle):
    """A broken plug-in family is isolated (tcgen.registry, docs/plugins.md): `tcgen list`
    lists every working unit, warns in one line and exits 1; other commands warn and work."""
    env = _install_family(tmp_path, ep_value)
    r = _tcgen("list", "--brief", env=env, cwd=tmp_path)
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("tcgen: warning: plug-in family")]
    assert r.returncode == 1 and len(warn) == 1 and needle in warn[0], r.stderr
    assert "Traceback" not in r.stderr and "fp_add" in r.stdout and "demo_xor" not in r.stdout
    r = _tcgen("generate", "lzc", "-p", "width=8", env=env, cwd=tmp_path)
    assert r.returncode == 0 and "module lzc(" in r.stdout and needle in r.stderr, r.stderr


# -- Ctrl-C ----------------------------------------------------------------------------------------
def _processes_in(folder: Path) -> list[str]:
    """Processes whose working folder is inside ``folder``."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(folder)):
            out.append(f"{proc.name} {cwd}")
    return out


def _ppid(pid: str) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _start_time(pid: str) -> str | None:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22): with the
    pid, it names one process even after the pid is reused (pid_max is 32768 here, and a
    regression spawns that many processes in minutes)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: str, start: str | None = None) -> bool:
    """The process exists, is not a zombie (exited, waiting to be reaped) and, given
    ``start``, is the same process (not a new one under a reused pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and (start is None or fields[19] == start)


def _descends_from(pid: str, ancestor: int) -> bool:
    for _ in range(16):
        parent = _ppid(pid)
        if parent is None or parent <= 1:
            return False
        if parent == ancestor:
            return True
        pid = str(parent)
    return False


def _interrupt(args, wait_for, timeout=120):
    """Start ``tcgen args``, wait until ``wait_for(pid)`` is true, send SIGINT, collect."""
    # SIGINT's default action restored in the child: a shell running pytest in the background
    # (``cmd &``, no job control) makes it ignored, and Python keeps an inherited SIG_IGN
    p = subprocess.Popen([PY, "-m", "tcgen.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.monotonic()
    while not wait_for(p.pid):
        assert p.poll() is None, f"finished before the interrupt: {p.communicate()}"
        assert time.monotonic() - t0 < timeout, "the awaited state never came"
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def test_ctrl_c_during_synthesis_leaves_nothing_behind():
    synth = ROOT / "build" / "ppa" / "synth"
    before = set(synth.glob("*")) if synth.is_dir() else set()

    ours: dict[str, tuple] = {}        # tool processes of our command -> (folder, start time) (another
                                       # flow may be running in build/ppa/synth at the same time)

    def yosys_running(pid):
        for line in _processes_in(synth):
            tool, cwd = line.split(maxsplit=1)
            if ".tmp" in cwd and _descends_from(tool, pid):
                ours.setdefault(tool, (cwd, _start_time(tool)))
        return bool(ours)
    code, _, err = _interrupt(["ppa", "fp_mul", "-p", "fmt=fp32", "--no-cache"], yosys_running)
    assert code == 130 and err.strip() == "tcgen: interrupted", err
    # the group was SIGKILLed; a grandchild (ABC) is reparented to init, which may take a
    # moment to reap it under load: a zombie is dead, a running process is the failure
    deadline = time.monotonic() + 5
    while [p for p, (_, t) in ours.items() if _alive(p, t)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p, (_, t) in ours.items() if _alive(p, t)], \
        "a tool process outlived the command"
    tmp_dirs = {synth / Path(cwd).relative_to(synth).parts[0] for cwd, _ in ours.values()}
    assert not [d for d in tmp_dirs if d.exists()], "a temporary synthesis folder remains"
    new = set(synth.glob("*")) - before
    assert all((p / "synth.json").is_file() for p in new), "an incomplete cache entry"


def test_ctrl_c_during_generate_prints_one_line(tmp_path):
    out = tmp_path / "v"
    started = time.monotonic()
    code, _, err = _interrupt(["generate", "--all", "-o", str(out)],
                              lambda pid: time.monotonic() - started > 4)
    assert code == 130 and err.strip() == "tcgen: interrupted", err
    assert not out.exists()
