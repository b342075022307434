"""The shared cocotb harness (docs/architecture.md, "Verification").

``run(unit, params, bench, ...)``:

1. elaborates the unit and writes its Verilog into a build cache
   ``build/sim/<unit>/<params>-<hash>/`` keyed by the params, the source hash of hw/, units/ and tcgen/
   and the simulator;
2. compiles it once per configuration (a file lock makes this safe under ``pytest -n auto``);
3. runs a cocotb test module from ``tb/benches`` with Icarus (default) or ``SIM=verilator``,
   handing it the unit name, params, stimulus file and seed through the environment;
4. reads the results file and fails the calling pytest test if any cocotb test failed.

``WAVES=1`` dumps waveforms (``dump.fst`` for Icarus, ``dump.vcd``/``.fst`` for Verilator) in
the run directory, which is printed.  ``TCGEN_SEED`` overrides the random seed of every test.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tcgen.generate import verilog
from tcgen.hw.files import locked
from tcgen.registry import get_unit

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "sim"
SIMULATORS = ("icarus", "verilator")

__all__ = ["run", "seed", "source_hash", "sim_name", "verilog_file", "save_stimulus",
           "load_stimulus", "ROOT"]


VERILATOR_MIN = (5, 36)        # cocotb 2.x's VPI glue needs Verilator >= 5.036


def verilator_version() -> tuple[int, int] | None:
    exe = shutil.which("verilator")
    if not exe:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"Verilator (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def sim_name() -> str:
    """The simulator named by ``SIM`` (default icarus), checked to be usable with cocotb."""
    sim = os.environ.get("SIM", "icarus").lower()
    if sim not in SIMULATORS:
        raise ValueError(f"tb: SIM must be one of {', '.join(SIMULATORS)}, got {sim!r}")
    if sim == "verilator":
        v = verilator_version()
        if v is None or v < VERILATOR_MIN:
            have = "not installed" if v is None else f"{v[0]}.{v[1]:03d}"
            raise ValueError(
                f"tb: SIM=verilator needs Verilator >= {VERILATOR_MIN[0]}.{VERILATOR_MIN[1]:03d} "
                f"for cocotb 2.x (this machine: {have}); use SIM=icarus (the default) or put a "
                f"newer verilator on PATH")
    elif not shutil.which("iverilog"):
        raise ValueError("tb: SIM=icarus needs iverilog on PATH (run scripts/setup.sh)")
    return sim


def seed(default: int) -> int:
    """The seed to use: ``TCGEN_SEED`` if set, else ``default`` (printed either way)."""
    s = int(os.environ.get("TCGEN_SEED", default))
    print(f"[tcgen] seed = {s} (set TCGEN_SEED to override)")
    return s


def source_hash() -> str:
    h = hashlib.sha256()
    for pkg in ("hw", "units", "tcgen"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _config_dir(unit_name: str, params, sim: str) -> Path:
    key = json.dumps({"unit": unit_name, "params": params.as_dict(), "sim": sim,
                      "src": source_hash()}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    short = params.key()
    if len(short) > 60:
        short = short[:60]
    return BUILD / unit_name / f"{short}-{digest}"


def verilog_file(unit_name: str, params, top: str | None = None, directory: Path | None = None):
    """Write (once) and return the path of the unit's Verilog in the build cache."""
    from tcgen.generate import verilog
    d = directory or _config_dir(unit_name, params, "rtl")
    top = top or unit_name
    path = d / f"{top}.v"
    with locked(d / ".lock"):
        if not path.exists():
            tmp = path.with_suffix(".v.tmp")
            tmp.write_text(verilog(unit_name, params, top=top))
            tmp.replace(path)
    return path


def _build(unit_name: str, params, sim: str, waves: bool) -> tuple[Path, str]:
    from cocotb_tools.runner import get_runner
    d = _config_dir(unit_name, params, sim + ("-waves" if waves else ""))
    top = unit_name
    src = verilog_file(unit_name, params, top=top)      # one generation per configuration
    with locked(d / ".build.lock"):
        stamp = d / ".built"
        if not stamp.exists():
            runner = get_runner(sim)
            build_args = []
            if sim == "verilator":
                build_args = ["-Wno-fatal", "-O2"] + (["--trace-fst"] if waves else [])
            runner.build(sources=[src], hdl_toplevel=top, build_dir=d / "sim_build",
                         always=True, waves=waves, build_args=build_args,
                         timescale=("1ns", "1ps"), log_file=d / "build.log")
            stamp.write_text("ok\n")
    return d, top


def save_stimulus(path: Path, inputs: dict[str, np.ndarray]):
    """Stimulus file: one array per input port (object arrays of wide ints as decimal text)."""
    arrays = {}
    for k, v in inputs.items():
        v = np.asarray(v)
        arrays[k] = v.astype(str) if v.dtype == object else v.astype(np.uint64)
    np.savez(path, **arrays)


def load_stimulus(path) -> dict[str, np.ndarray]:
    data = np.load(path)
    out = {}
    for k in data.files:
        v = data[k]
        out[k] = np.array([int(x) for x in v], dtype=object) if v.dtype.kind == "U" else v
    return out


def _python_path():
    """The simulator's embedded Python must find tb/ (benches, drivers); tcgen is installed."""
    p = str(ROOT / "tb")                          # the runner passes sys.path on as PYTHONPATH
    if p not in sys.path:
        sys.path.insert(0, p)


def run(unit_name: str, params=None, bench: str = "fixed_latency", *, stimulus=None,
        testcase: str | None = None, seed_value: int | None = None, name: str = "run",
        extra_env: dict[str, str] | None = None) -> dict:
    """Simulate ``unit_name`` at ``params`` with cocotb module ``tb/benches/<bench>.py``.

    ``stimulus``: {input port: array} streamed by the bench (saved beside the run).
    Returns the summary dict the bench wrote (vectors, mismatches, ...); raises
    ``AssertionError`` if a cocotb test failed.
    """
    from cocotb_tools.runner import get_results, get_runner
    unit = get_unit(unit_name)
    params = params if params is not None else unit.params()
    sim = sim_name()
    waves = os.environ.get("WAVES", "0") not in ("", "0")
    d, top = _build(unit_name, params, sim, waves)
    run_dir = d / "runs" / f"{name}-{os.getpid()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    env = {"TCGEN_UNIT": unit_name, "TCGEN_PARAMS": json.dumps(params.as_dict()),
           "TCGEN_RUN_DIR": str(run_dir)}
    _python_path()
    if stimulus is not None:
        save_stimulus(run_dir / "stimulus.npz", stimulus)
        env["TCGEN_STIMULUS"] = str(run_dir / "stimulus.npz")
    env.update(extra_env or {})
    runner = get_runner(sim)
    t0 = time.time()
    results = runner.test(test_module=f"benches.{bench}", hdl_toplevel=top,
                          hdl_toplevel_lang="verilog",
                          testcase=testcase, seed=seed_value if seed_value is not None else 1,
                          extra_env=env, waves=waves, build_dir=d / "sim_build",
                          test_dir=run_dir, results_xml=str(run_dir / "results.xml"),
                          log_file=run_dir / "sim.log", timescale=("1ns", "1ps"))
    wall = time.time() - t0
    n_tests, n_fail = get_results(results)
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary["wall_s"] = round(wall, 2)
    print(f"[tcgen] {unit_name} {params.key()} {bench}: {json.dumps(summary)} "
          f"(sim={sim}, dir={run_dir.relative_to(ROOT)})")
    if waves:                  # cocotb's Icarus runner dumps into the build folder: move it
        dumps = [p for p in list((d / "sim_build").glob("*.fst")) + list((d / "sim_build")
                 .glob("*.vcd")) + list(run_dir.glob("*.fst")) + list(run_dir.glob("*.vcd"))
                 if p.stat().st_mtime >= t0 - 1]
        for p in dumps:
            target = run_dir / f"dump{p.suffix}"
            if p != target:
                shutil.move(str(p), target)
            print(f"[tcgen] waves: {target.relative_to(ROOT)}")
        if not dumps:
            print("[tcgen] WAVES=1 but the simulator wrote no waveform file")
    log = (run_dir / "sim.log").read_text(errors="replace") if (run_dir / "sim.log").exists() \
        else ""
    assert n_tests > 0, f"no cocotb test ran for {unit_name}; log:\n{log[-3000:]}"
    assert n_fail == 0, f"{n_fail} of {n_tests} cocotb tests failed for {unit_name} " \
                        f"{params.key()}; log tail:\n{log[-3000:]}"
    return summary
