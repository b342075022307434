"""The plug-in path from a built wheel alone (issue 41; docs/plugins.md): a tcgen wheel and the
example family examples/plugin/ installed into a scratch venv, then the family's own tests run
there -- list, generate, ppa, a tiny sweep, RTL against the model through the installed
``tcgen.verify`` -- with no tcgen checkout on the path.

Nothing is downloaded: the scratch venv sees this project's .venv's third-party packages
through a ``.pth`` file naming a folder of links to them (every entry of .venv's site-packages
except tcgen's own editable install, so the wheel's tcgen is the only tcgen), and the wheel and
the plug-in are installed with ``pip --no-deps --no-index``.

Also checked on the same wheel (built once): it holds exactly one top-level package, ``tcgen``,
with the verification harness and its benches inside.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = _run([PY, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out,
              ROOT])
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("tcgen_hdl-*.whl")
    return whl


def test_wheel_holds_one_top_level_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (top,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert z.read(top).decode().split() == ["tcgen"]
        eps = z.read(top.replace("top_level.txt", "entry_points.txt")).decode()
        meta = z.read(top.replace("top_level.txt", "METADATA")).decode()
    roots = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert roots == {"tcgen"}
    for module in ("tcgen/hw/fparith.py", "tcgen/units/pacq/rtl.py", "tcgen/synth/ppa.py",
                   "tcgen/cli.py", "tcgen/verify/harness.py", "tcgen/verify/cli.py",
                   "tcgen/verify/benches/stream.py", "tcgen/verify/benches/batch.py"):
        assert module in names
    assert "[tcgen.families]" in eps and "tcgen = tcgen.cli:main" in eps
    assert "Provides-Extra: verify" in meta and "cocotb" in meta


def _scratch_venv(where: Path) -> Path:
    """A venv whose third-party packages are .venv's (linked, not copied), without tcgen."""
    r = _run([PY, "-m", "venv", "--without-pip", where / "venv"])
    assert r.returncode == 0, r.stderr
    site = Path(sysconfig.get_path("purelib"))            # .venv's site-packages
    farm = where / "deps"
    farm.mkdir()
    for entry in site.iterdir():
        name = entry.name
        if name.startswith(("__editable__", "tcgen_hdl-", "__pycache__")) or \
                name.endswith(".pth"):
            continue
        (farm / name).symlink_to(entry)
    py = where / "venv" / "bin" / "python"
    r = _run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    (Path(r.stdout.strip()) / "tcgen-test-deps.pth").write_text(f"{farm}\n")
    return py


@pytest.mark.slow     # 11 s: make test's budget (issue 42); the wheel's contents stay in make test
def test_plugin_from_the_wheel(wheel, tmp_path):
    py = _scratch_venv(tmp_path)
    plugin = tmp_path / "plugin"                          # built outside the checkout
    shutil.copytree(ROOT / "examples" / "plugin", plugin,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TCGEN_BUILD_DIR", "VIRTUAL_ENV", "SIM")}
    pip = [py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation"]
    r = _run([*pip, wheel], env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    r = _run([*pip, plugin], env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    work = tmp_path / "work"
    work.mkdir()
    # the installed tcgen, not the checkout's; its builds go to the user's folder
    r = _run([py, "-c", "import tcgen, tcgen_satadd; from tcgen.verify import build_dir; "
              "print(tcgen.__file__); print(build_dir())"], env=env, cwd=work)
    assert r.returncode == 0, r.stderr
    where, build = r.stdout.split()
    assert not Path(where).is_relative_to(ROOT) and Path(build) == work / "build" / "tcgen"
    tcgen = py.parent / "tcgen"                           # the console script
    r = _run([tcgen, "list", "--json"], env=env, cwd=work)
    assert r.returncode == 0 and '"sat_add"' in r.stdout, r.stderr
    # the plug-in's own tests, against the installed tcgen
    r = _run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
              plugin / "tests"], env=env, cwd=work)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout
    # the simulations were built in the user's folder, none in the installed package's
    site = Path(where).parent.parent
    assert (work / "build" / "tcgen" / "sim" / "sat_add").is_dir()
    assert not list(site.glob("**/sim_build"))
