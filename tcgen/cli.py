"""The ``tcgen`` command line.

    tcgen list [UNIT] [--family NAME] [--brief] [--json]
    tcgen generate UNIT [-p name=value ...] [-o FILE] [--top NAME] [--flat]
    tcgen generate --all -o DIR [--flat]
    tcgen lint FILE.v | UNIT [-p name=value ...] [--top NAME] [--wall]
    tcgen verify UNIT [-p name=value ...] [--vectors N] [--seed S] [--sim icarus|verilator]
                   [--bench auto|batch|fixed_latency|stream]      (docs/plugins.md)
    tcgen ppa UNIT [-p name=value ...] [--liberty NAME|PATH] [--clock-ns T]
                   [--activity vectorless|sim|sim-timed] [--toggle-rate R] [--cycles N] [--seed S]
                   [--simulator auto|levelized|icarus|verilator] [--hierarchical]
                   [--fraig-conflicts N] [--noise N] [--json FILE] [--no-cache]
                                                                  (docs/ppa.md)
    tcgen sweep SPEC.toml [-j N] [--executor local|dask] [--scheduler ADDR] [-o DIR]
                   [--cache DIR] [--retry-failed] [--no-flow-cache] [--strict]
                                                                  (docs/sweep.md)
    tcgen claims [--claims DIR] [--results DIR] [-o FILE] [--strict] (docs/claims.md)

``generate``, ``ppa`` and ``sweep`` refuse a configuration whose estimated size is over the limit
before elaborating it (tcgen.generate.check_size); ``--force`` (or ``TCGEN_FORCE=1``) lifts the
limit (docs/robustness.md).

Errors (tcgen.errors): bad input -- a usage error, a parameter (``ParamError``), a liberty or a
flow option (``FlowInputError``) -- prints one line on stderr and exits with status 2, writing
nothing; a failing external tool (``ToolError``) prints one line and exits with 1; Ctrl-C
prints one line and exits with 130 (SIGTERM, SIGHUP: 128 + the signal, 143 for SIGTERM), leaving
no temporary file or child process.  Any other exception is a bug: it propagates with its
traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

from amaranth.hdl import UnusedElaboratable

from tcgen.hw import files
from tcgen.hw.files import PATH_REFUSALS, StorageError, check_writable, io_failure, usable_dir
from tcgen.hw.generate import check_module_name
from tcgen.hw.params import ParamError, describe_field, parse_seed, parse_value
from tcgen.hw.pipeline import AUTO, CutPoints
from tcgen.synth.liberty import cache_root
from tcgen.synth.noise import MAX_NOISE
from tcgen.synth.ppa import ACTIVITIES, SIMULATORS
from tcgen.synth.tools import FlowInputError, Terminated, ToolError, signals_raise
from tcgen.study import ScriptParser

from .errors import UsageError
from .generate import ENV_FORCE, check_size, verilog
from .measure import measure
from .pipelining import resolve_cuts
from .registry import all_units, broken, get_unit

__all__ = ["main", "build_parser", "parse_params", "write_atomic", "format_table"]

EXIT_USAGE = 2
EXIT_TOOL = 1
EXIT_INTERRUPTED = 130
MAX_JOBS = 1024


class _Parser(ScriptParser):
    """The scripts' one-line parser, raising instead of exiting: ``main`` turns a
    :class:`UsageError` into its one line and exit 2 with every other bad input."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")


def parse_params(pairs: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in pairs or []:
        if "=" not in item:
            raise UsageError(f"-p takes name=value, got {item!r}")
        k, v = item.split("=", 1)
        if k in values:
            raise UsageError(f"parameter {k!r} given twice")
        values[k] = v           # as typed: ' 3' is not an integer (ParamError)
    return values


def write_atomic(path: str | Path, text: str):
    """Write an output file the user named: no partial files; failures are usage errors."""
    shown = str(path)
    if shown == "":
        raise UsageError("an output file name is empty")
    if shown.endswith(("/", os.sep)):
        raise UsageError(f"cannot write {shown}: that names a folder; give a file name")
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: folder {parent} does not exist")
    try:
        # an atomic write replaces the name: a device or FIFO (/dev/full, /dev/stdout) would
        # be replaced by a regular file, so only regular files (or new names) are written
        if path.exists() and not path.is_file() and not path.is_dir():
            raise UsageError(f"cannot write {path}: not a regular file (a device, FIFO or "
                             "socket); write to a file, or use '-' for stdout where offered")
        files.write_atomic(path, text, make_parents=False)
    except OSError as e:
        if io_failure(e):              # a full disk: an I/O failure (exit 1), not bad input
            raise
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def _write_into(folder: Path, write):
    """Make ``folder`` (and its missing parents), then ``write()`` (all outputs as one,
    tcgen.hw.files.write_all).  A failure removes the folders this made: nothing is left, not
    even an empty folder; a full disk stays an I/O failure (exit 1), anything else refusing the
    write is bad input (exit 2)."""
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return write()
    except OSError as e:               # e.g. the disk filled up: no file replaced or added
        for p in made:                 # innermost first
            with contextlib.suppress(OSError):
                p.rmdir()
        if io_failure(e):
            raise
        raise UsageError(f"cannot write into {folder}: {e.strerror or e}") from None


# -- list -----------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    units = all_units()
    if args.unit is not None:
        units = [get_unit(args.unit)]
    if args.family is not None:
        known = sorted({u.family for u in all_units()})
        if args.family not in known:
            raise UsageError(f"list: unknown family {args.family!r}; families are: "
                             f"{', '.join(known)}")
        units = [u for u in units if u.family == args.family]
    if args.json:
        out = []
        for u in units:
            out.append({"unit": u.name, "family": u.family, "summary": u.summary,
                        "ops_unit": u.ops_unit,
                        "params": [{"name": f.name, "type": _tname(f), "default": f.default,
                                    "allowed": describe_field(f),
                                    "doc": f.metadata.get("doc", "")}
                                   for f in u.params.fields()],
                        "workloads": {k: w.doc for k, w in sorted(u.workloads.items())},
                        "cut_points": _cut_points(u)})
        print(json.dumps(out, indent=2))
        return 1 if broken() else 0
    if args.brief:
        width = max((len(u.name) for u in units), default=0)
        for u in units:
            print(f"{u.name:<{width}}  [{u.family}]  {u.summary}")
        return 1 if broken() else 0
    for u in units:
        print(f"{u.name}  [{u.family}]  {u.summary}")
        for f in u.params.fields():
            default = f.default if not isinstance(f.default, bool) else str(f.default).lower()
            doc = f.metadata.get("doc", "")
            print(f"    {f.name}: {_tname(f)} = {default}  ({describe_field(f)})"
                  + (f"  {doc}" if doc else ""))
        points = _cut_points(u)
        if points:
            print(f"    cut points (datapath order, defaults): {', '.join(points)}")
        for name, w in sorted(u.workloads.items()):
            print(f"    workload {name}: {w.doc}")
    return 1 if broken() else 0     # an installation check: a broken plug-in family fails it


def _cut_points(u) -> list[str]:
    """The unit's pipeline cut points at its default parameters (``-p cuts=``)."""
    p = u.params()
    return [name for name, _ in p.cut_points()] if isinstance(p, CutPoints) else []


def _tname(f):
    return f.type if isinstance(f.type, str) else f.type.__name__


# -- generate ------------------------------------------------------------------------------------
def cmd_generate(args) -> int:
    if args.all:
        if args.unit or args.param or args.top is not None:
            raise UsageError("generate --all takes no UNIT, -p or --top")
        if not args.output:
            raise UsageError("generate --all needs -o DIR")
        out_dir = Path(args.output)
        check_writable(out_dir, folder=True)         # before ~100 s of generating
        for u in all_units():
            if out_dir.is_dir():
                check_writable(out_dir / f"{u.name}.v")
        texts = {u.name: verilog(u.name, flat=args.flat, force=args.force)   # all first:
                 for u in all_units()}                                      # nothing partial
        _write_into(out_dir, lambda: files.write_all(
            {out_dir / f"{name}.v": text for name, text in texts.items()}))
        print(f"wrote {len(texts)} units to {out_dir}")
        return 0
    if not args.unit:
        raise UsageError("generate needs a UNIT (see `tcgen list`) or --all -o DIR")
    if args.output == "":
        raise UsageError("generate: -o needs a file name ('-' for stdout)")
    if args.output and args.output != "-":
        check_writable(args.output)    # before anything is built
    if args.top is not None:
        check_module_name(args.top)       # before any component is built
    unit = get_unit(args.unit)
    params = unit.make_params(parse_params(args.param))
    if getattr(params, "cuts", None) == AUTO:
        if args.clock_ns is None:
            raise UsageError("generate: -p cuts=auto needs --clock-ns T (and --liberty, "
                             "default osu018): the cuts are chosen for that clock")
        params, planned = resolve_cuts(unit.name, params, liberty=args.liberty or "osu018",
                                       clock_ns=args.clock_ns,
                                       fraig_conflicts=args.fraig_conflicts)
    elif args.clock_ns is not None or args.liberty is not None \
            or args.fraig_conflicts is not None:
        raise UsageError("generate: --clock-ns, --liberty and --fraig-conflicts choose the cuts "
                         "of -p cuts=auto; without it they do nothing")
    else:
        planned = None
    text = verilog(unit.name, params, top=args.top, flat=args.flat, force=args.force)
    if args.output and args.output != "-":
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    if planned is not None:
        print(planned.summary(), file=sys.stderr)
    return 0


# -- lint -----------------------------------------------------------------------------------------
def cmd_lint(args) -> int:
    from tcgen.synth.lint import lint
    target = args.target
    as_file = target.endswith((".v", ".sv")) or os.sep in target or Path(target).is_file()
    if as_file:
        if args.param:
            raise UsageError("lint: -p goes with a UNIT, not with a Verilog file")
        if not Path(target).is_file():
            raise UsageError(f"lint: no file {target}")
        res = lint(target, args.top, wall=args.wall)
        shown = target
    else:
        if args.top is not None:
            check_module_name(args.top)
        unit = get_unit(target)
        params = unit.make_params(parse_params(args.param))
        text = verilog(unit.name, params, top=args.top, force=args.force)
        with tempfile.TemporaryDirectory(prefix="tcgen-lint-") as d:
            path = Path(d) / f"{args.top or unit.name}.v"
            path.write_text(text)
            res = lint(path, wall=args.wall)
        shown = f"{unit.name} {params.key()}"
    for line in res.errors + res.warnings:
        print(_printable(line))
    print(f"{shown}: {res.summary()} ({res.version}, {' '.join(res.flags)})")
    return 0 if res.clean else 1


# -- ppa ------------------------------------------------------------------------------------------


def _add_ppa_parser(sub):
    p = sub.add_parser("ppa", help="area, timing and power from Yosys + OpenSTA")
    p.add_argument("unit", help="unit name (see `tcgen list`)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter (repeatable)")
    p.add_argument("--liberty", default="osu018", metavar="NAME|PATH",
                   help="osu018 (default), nangate45, sky130hd, or a .lib/.lib.gz path")
    p.add_argument("--clock-ns", type=_float, default=10.0, metavar="T",
                   help="target clock period in ns (default 10)")
    p.add_argument("--activity", default="vectorless", metavar="MODE",
                   help="vectorless (default; one global toggle rate), sim (zero-delay "
                        "gate-level simulation of the workload) or sim-timed (the same with "
                        "the cells' delays from OpenSTA: glitches counted; docs/ppa.md)")
    p.add_argument("--toggle-rate", type=_float, default=0.1, metavar="R",
                   help="vectorless toggles per cycle on every net (default 0.1)")
    p.add_argument("--cycles", type=_int, default=2000, metavar="N",
                   help="sim: workload cycles (default 2000)")
    p.add_argument("--seed", type=_int, default=None, metavar="S",
                   help="sim: workload seed (default: TCGEN_SEED, else 1)")
    p.add_argument("--workload", default=None, metavar="NAME",
                   help="one of the unit's named workloads (`tcgen list`): its stimulus "
                        "for sim and its ops per cycle (default: the unit's default workload)")
    p.add_argument("--simulator", default="auto", metavar="SIM",
                   help="sim: gate-level engine: auto (default; levelized, Icarus for a netlist "
                        "it refuses), levelized, icarus or verilator; sim-timed: auto or "
                        "levelized (the timed engine) or icarus (vendor models + SDF) "
                        "(docs/ppa.md)")
    p.add_argument("--hierarchical", action="store_true",
                   help="synthesize with hierarchy kept: each distinct module mapped once, "
                        "totals summed over the instances; sim/sim-timed simulate the mapped "
                        "netlist flattened (docs/ppa.md)")
    p.add_argument("--fraig-conflicts", type=_int, default=None, metavar="N",
                   help="conflict limit of ABC's SAT sweeping (&fraig -x -C N, 1..1000000): "
                        "minutes instead of an hour on some large designs; a different, "
                        "equally correct netlist, figures moved by -2..+6 %% where they move "
                        "(reports/abc_fraig.md; default: Yosys's own ABC script; docs/ppa.md)")
    p.add_argument("--noise", type=_int, default=0, metavar="N",
                   help=f"also measure N semantically neutral perturbations of the design "
                        f"(module and declaration order, an unused module, ABC's &fraig "
                        f"limit; 0..{MAX_NOISE}) and report min / median / max of every "
                        f"figure over the N+1 runs (docs/ppa.md, 'Noise')")
    p.add_argument("--json", metavar="FILE", help="write every figure as JSON ('-' = stdout)")
    p.add_argument("--no-cache", action="store_true", help="re-run the tools")
    p.add_argument("--progress", default="auto", choices=("auto", "on", "off"),
                   help="stage lines on stderr (elaborate, yosys + ABC, simulation, OpenSTA) "
                        "with the size estimate and elapsed time: auto (default) = on a "
                        "terminal outside CI")
    _add_force(p)
    p.set_defaults(func=cmd_ppa)
    return p


def _float(text):
    try:
        return parse_value(float, text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None


def _int(text):
    try:
        return parse_value(int, text)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None


_float.__name__ = "number"
_int.__name__ = "integer"


ENV_SEED = "TCGEN_SEED"


def env_seed(default: int = 1) -> int:
    """The seed ``TCGEN_SEED`` names (the variable the verification harness reads too), or
    ``default`` where it is unset; a bad one is one line, exit 2 (hw.params.parse_seed)."""
    text = os.environ.get(ENV_SEED)
    return default if text is None or text == "" else parse_seed(text, ENV_SEED)


def cmd_ppa(args) -> int:
    if args.seed is None:
        args.seed = env_seed()
    if not 0 <= args.noise <= MAX_NOISE:           # before anything is read or built
        raise UsageError(f"ppa: --noise must be an integer in 0..{MAX_NOISE}, got {args.noise}")
    unit = get_unit(args.unit)
    params = unit.make_params(parse_params(args.param))
    check_size(unit, params, force=args.force)      # before the flow's inputs are read
    if args.activity not in ACTIVITIES:
        raise UsageError(f"--activity must be one of {', '.join(ACTIVITIES)}, "
                         f"got {args.activity!r}")
    if args.simulator not in SIMULATORS:
        raise UsageError(f"--simulator must be one of {', '.join(SIMULATORS)}, "
                         f"got {args.simulator!r}")
    if args.json == "":
        raise UsageError("ppa: --json needs a file name ('-' for stdout)")
    if args.json and args.json != "-":
        check_writable(args.json)      # before the flow runs or writes into its cache
    cache_root()                       # the flow cache (TCGEN_PPA_CACHE) usable, or one line
    with _progress(args.progress):
        res = _measure_cli(args, unit, params)
    text = json.dumps(res, indent=1, sort_keys=True, allow_nan=False) + "\n"
    if args.json == "-":
        sys.stdout.write(text)
        return 0
    if args.json:
        write_atomic(args.json, text)
    sys.stdout.write(format_table(res))
    return 0


@contextlib.contextmanager
def _progress(mode: str):
    """Stage lines of the flow on stderr (logger ``tcgen.flow``: elaborate, yosys + ABC,
    simulation, OpenSTA, with the size estimate and elapsed time): ``auto`` on a terminal
    outside CI, ``on``, ``off``."""
    show = mode == "on" or (mode == "auto" and sys.stderr.isatty() and not os.environ.get("CI"))
    if not show:
        yield
        return
    import logging
    import time
    t0 = time.monotonic()

    class _Elapsed(logging.Formatter):
        def format(self, record):
            return f"[tcgen ppa {time.monotonic() - t0:6.1f} s] {record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Elapsed())
    logger = logging.getLogger("tcgen.flow")
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def _measure_cli(args, unit, params) -> dict:
    return measure(unit.name, params, liberty=args.liberty, clock_ns=args.clock_ns,
                  activity=args.activity, toggle_rate=args.toggle_rate,
                  workload_cycles=args.cycles, seed=args.seed, cache=not args.no_cache,
                  simulator=args.simulator, workload=args.workload,
                  hierarchical=args.hierarchical, fraig_conflicts=args.fraig_conflicts,
                  noise=args.noise)


# -- sweep ----------------------------------------------------------------------------------------
def cmd_sweep(args) -> int:
    from .sweep import EXECUTORS, default_cache, load, run, write_outputs
    from .sweep.output import planned_outputs
    if args.jobs < 1:
        raise UsageError(f"-j must be at least 1, got {args.jobs}")
    if args.jobs > MAX_JOBS:
        raise UsageError(f"-j must be at most {MAX_JOBS}, got {args.jobs}")
    if args.executor not in EXECUTORS:
        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}, "
                         f"got {args.executor!r}")
    if args.scheduler and args.executor != "dask":
        raise UsageError("--scheduler needs --executor dask")
    for opt, value in (("-o", args.output), ("--cache", args.cache)):
        if value == "":
            raise UsageError(f"sweep: {opt} needs a folder, got ''")
    spec = load(args.spec)
    if args.executor == "dask":                 # the import and the scheduler, before any work
        from .sweep.engine import dask_client
        if args.scheduler:
            _check_tls(args.scheduler)
            client, _ = dask_client(args.jobs, args.scheduler)
            client.close()
        else:
            try:
                import dask.distributed  # noqa: F401
            except ImportError:
                raise UsageError("--executor dask needs dask[distributed]: pip install "
                                 "'tcgen-hdl[dask]'") from None
    out = Path(args.output)
    # every check before any work, and nothing made in -o until the outputs are written
    check_writable(out, folder=True)
    if out.is_dir():
        for path in planned_outputs(spec, out):
            check_writable(path)
    cache = Path(args.cache) if args.cache else default_cache()
    usable_dir(cache, "the sweep cache" + ("" if args.cache else
                                           " (TCGEN_SWEEP_CACHE)" if os.environ.get(
                                               "TCGEN_SWEEP_CACHE") else ""))
    cache_root()
    result = run(spec, jobs=args.jobs, executor=args.executor, scheduler=args.scheduler,
                 cache=cache, retry_failed=args.retry_failed,
                 flow_cache=not args.no_flow_cache)
    cmd = f"tcgen sweep {args.spec} -o {args.output}" + (
        f" -j {args.jobs}" if args.jobs != 1 else "") + (
        f" --executor {args.executor}" if args.executor != "local" else "")
    paths = _write_into(out, lambda: write_outputs(result, out, cmd))   # all or none
    for path in paths:
        print(path)
    return 1 if result.counts.get("failed") and args.strict else 0


def _check_tls(scheduler: str):
    """A ``tls://`` or ``wss://`` scheduler needs Dask's TLS settings (else dask raises a
    TypeError from deep inside the client)."""
    if scheduler.split("://", 1)[0].lower() not in ("tls", "wss"):
        return
    try:
        from distributed.security import Security
    except ImportError:
        return                                 # dask_client says what is missing
    sec = Security()
    if not (sec.tls_ca_file and sec.tls_client_cert):
        raise UsageError(f"--scheduler {scheduler}: a TLS scheduler needs Dask's TLS settings "
                         "(distributed.comm.tls.ca-file and client cert/key in the Dask "
                         "configuration)")


# -- claims ---------------------------------------------------------------------------------------
def cmd_claims(args) -> int:
    from .claims import ClaimError, history, judge, load_ledger, render, strict_problems
    if args.output == "" or args.output.endswith(("/", os.sep)):
        raise UsageError(f"claims: -o needs a file name, got {args.output!r}")
    for opt, value in (("--claims", args.claims), ("--results", args.results)):
        if value == "":
            raise UsageError(f"claims: {opt} needs a folder, got ''")
    out = Path(args.output)
    if not out.parent.is_dir():
        raise UsageError(f"cannot write {out}: folder {out.parent} does not exist")
    ledger = load_ledger(args.claims)
    claims = judge(ledger.claims, args.results)
    # the history is read from the ledger the report of record (reports/claims.md) shows,
    # whatever -o names
    report = Path(args.results) / "claims.md"
    try:
        changes = history(args.claims, report, claims)
        skipped = ""
    except ClaimError as e:
        if args.strict:
            raise
        changes, skipped = None, str(e)
    cmd = "tcgen claims" + (f" --claims {args.claims}" if args.claims != "claims" else "") + (
        f" --results {args.results}" if args.results != "reports" else "") + (
        f" -o {args.output}" if args.output != "reports/claims.md" else "")
    problems = strict_problems(ledger, changes or []) if args.strict else []
    if problems:
        for p in problems:
            print(f"tcgen: claims --strict: {p}", file=sys.stderr)
        print(f"tcgen: claims --strict: {len(problems)} problem(s); nothing written",
              file=sys.stderr)
        return 1
    write_atomic(args.output, render(claims, cmd, ledger, changes))
    counts: dict[str, int] = {}
    for c in claims:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    print(f"{out}: {len(claims)} claims: " + ", ".join(f"{n} {v}" for v, n in counts.items())
          + (f"; pre-registration not checked: {skipped}" if skipped else ""))
    return 0


def _g(v, fmt="{:.4g}"):
    return "-" if v is None else fmt.format(v)


def format_table(r: dict) -> str:
    p = r["power_mw"]
    params = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                      for k, v in r["params"].items())
    lines = [
        f"{r['unit']}  {params}",
        f"  liberty     {r['liberty']['name']} ({r['liberty']['library']})   "
        f"clock {r['clock_ns']:g} ns   activity {r['activity']}"
        + (f" {r['toggle_rate']:g}/cycle" if r["activity"] == "vectorless"
           else f" ({r['workload']['cycles']} cycles on {r['sim'].get('simulator', 'icarus')}, "
                f"mean net toggle rate {r['sim']['mean_toggle_rate']:.3f}/cycle)"),
        f"  area        {r['area_um2']:.1f} um^2   {r['cell_count']} cells"
        + ("   (hierarchical synthesis)" if r.get("hierarchical") else "")
        + (f"   (ABC &fraig -C {r['fraig_conflicts']})" if r.get("fraig_conflicts") else ""),
        f"  timing      critical path {_g(r['crit_path_ns'])} ns   fmax "
        f"{_g(r['fmax_mhz'], '{:.1f}')} MHz   slack {_g(r['slack_ns'])} ns   "
        f"{r['startpoint']} -> {r['endpoint']}",
        f"  power (mW)  total {p['total']:.4g}   internal {p['internal']:.4g}   switching "
        f"{p['switching']:.4g}   leakage {p['leakage']:.3g}",
    ]
    if r.get("ops_per_cycle"):
        lines.append(
            f"  per op      {r['ops_per_cycle']:g} {r['ops_unit']}/cycle   "
            f"{_g(r['energy_pj_per_op'])} pJ/{r['ops_unit']}   "
            f"{_g(r['gops_per_mm2'])} GOPS/mm^2   {_g(r['gops_per_w'])} GOPS/W at clock;  "
            f"{_g(r['gops_per_mm2_fmax'])} GOPS/mm^2   {_g(r['gops_per_w_fmax'])} GOPS/W at fmax")
    if r.get("pipelining"):
        pl = r["pipelining"]
        lines.append(f"  pipelined   cuts={pl['cuts'] or '(none)'} for {pl['clock_ns']:g} ns: "
                     f"latency {pl['latency']}, {pl['registers']} register bits "
                     f"({len(pl['designs'])} designs measured, {pl['search']} search, "
                     f"{pl['runtime_s']:.1f} s)")
    if r["activity"] in ("sim", "sim-timed"):
        q = r["sim"]["power_mw_opensta_propagated"]
        lines.append(f"  (OpenSTA's own propagation from the simulated input activity: "
                     f"{q['total']:.4g} mW)" if q else
                     "  (OpenSTA's own propagation from the simulated input activity: none -- "
                     "it crashed on this netlist, a bug of its 2019 build; leakage at duty 0.5)")
    timed = r.get("sim", {}).get("timed") if r["activity"] == "sim-timed" else None
    if timed:
        z = timed["power_mw_zero_delay"]
        ratio = timed.get("toggles_timed_over_zero_delay")
        lines.append(f"  glitches    {timed['glitch_share']:.1%} of dynamic power (zero-delay "
                     f"total {z['total']:.4g} mW; {_g(ratio, '{:.2f}')}x the transitions"
                     + (f"; {timed['late_share']:.1%} after their cycle's end"
                        if timed.get("late_share") else "") + ")")
    if len(r["breakdown"]) > 1:
        lines += _breakdown_lines(r)
    if r.get("noise"):
        lines += _noise_lines(r["noise"])
    rt = r["runtime_s"]
    lines.append(f"  flow        {rt.get('total_s', 0):.1f} s" + ("  (cached)" if r.get("cached")
                                                                    else ""))
    lines.append(f"  command     {r['command']}")
    return "\n".join(lines) + "\n"


def _breakdown_lines(r: dict) -> list[str]:
    """The per-module breakdown, saying what it is: each distinct module's own cells (its
    submodules excluded) for one instance, times its instances.  It comes from a hierarchical
    synthesis (the flow's second run, or the run itself with --hierarchical), which keeps logic
    across module boundaries, so it need not add up to a flat total.  Modules with no cells of
    their own (wrappers that only instantiate) are counted, not listed."""
    rows = [b for b in r["breakdown"] if b["area_um2"] > 0]
    wrappers = len(r["breakdown"]) - len(rows)
    total = sum(b["area_um2"] * b["instances"] for b in rows)
    flat = not r.get("hierarchical")
    width = max(len(b["module"]) for b in rows) if rows else 6
    out = [f"  breakdown   per module, from a hierarchical synthesis: own cells of one instance "
           f"(submodules excluded) x instances = {total:.1f} um^2"
           + (f" ({total / r['area_um2']:.2f}x the flat {r['area_um2']:.1f} um^2 above: "
              "hierarchy keeps logic across module boundaries, flat synthesis optimises "
              "through them)" if flat and r["area_um2"] else "")]
    out.append(f"    {'module':<{width}}  {'instances':>9}  {'um^2 each':>10}  {'um^2 all':>10}  "
               f"{'cells each':>10}")
    for b in sorted(rows, key=lambda b: -b["area_um2"] * b["instances"]):
        out.append(f"    {b['module']:<{width}}  {b['instances']:>9,}  {b['area_um2']:>10.1f}  "
                   f"{b['area_um2'] * b['instances']:>10.1f}  {b.get('cell_count', 0):>10,}")
    if wrappers:
        out.append(f"    ({wrappers} wrapper module(s) with no cells of their own not listed)")
    return out


_NOISE_ROWS = (("area_um2", "area um^2", "{:.1f}"), ("crit_path_ns", "crit path ns", "{:.4g}"),
               ("fmax_mhz", "fmax MHz", "{:.1f}"), ("power_mw", "power mW", "{:.4g}"),
               ("energy_pj_per_op", "energy pJ/op", "{:.4g}"))


def _noise_lines(nz: dict) -> list[str]:
    kinds = ", ".join(dict.fromkeys(p["kind"] for p in nz["perturbations"][1:]))
    lines = [f"  noise       {nz['runs']} runs: unperturbed + {nz['n']} perturbations ({kinds}; "
             f"{nz['distinct']} distinct designs)   min / median / max (spread)"]
    for key, name, fmt in _NOISE_ROWS:
        b = nz["band"][key]
        if b["median"] is None:
            continue
        spread = None if b["spread"] is None else 100 * b["spread"]
        lines.append(f"    {name:<14}{_g(b['min'], fmt)} / {_g(b['median'], fmt)} / "
                     f"{_g(b['max'], fmt)}   ({_g(spread, '{:.1f}')} %)")
    return lines


# -- the parser ---------------------------------------------------------------------------------
# -- verify ---------------------------------------------------------------------------------------
def _add_verify_parser(sub):
    p = sub.add_parser("verify", help="simulate a configuration against its golden model "
                                      "(cocotb; needs the verify extra; docs/plugins.md)")
    p.add_argument("unit", help="unit name (see `tcgen list`)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter (repeatable)")
    p.add_argument("--vectors", type=_int, default=4096, metavar="N",
                   help="vectors (stream units: inputs) to check (default 4096)")
    p.add_argument("--seed", default=None, metavar="S",
                   help="random seed, 0..2**32-1 (default TCGEN_SEED, else 1)")
    p.add_argument("--sim", choices=("icarus", "verilator"), default=None,
                   help="the simulator (default: SIM, else the faster for the size)")
    p.add_argument("--bench", default="auto",
                   choices=("auto", "batch", "fixed_latency", "stream"),
                   help="auto: batch path, plus the stream scenarios for a stream unit")
    _add_force(p)
    p.set_defaults(func=cmd_verify)


def cmd_verify(args) -> int:
    from tcgen.verify.cli import verify    # lazily: the one command that needs cocotb
    return verify(args.unit, parse_params(args.param), vectors=args.vectors, seed=args.seed,
                  sim=args.sim, bench=args.bench)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="tcgen", description="Generate, verify and measure tensor-core arithmetic "
                                            "units.")
    sub = ap.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("list", help="every unit with its parameters (exit 1 if a plug-in "
                                    "family is broken)")
    p.add_argument("unit", nargs="?", help="only this unit")
    p.add_argument("--family", metavar="NAME", help="only this family's units (hw, pacq, "
                                                    "bmma, lut, sparse, winograd, plug-ins)")
    p.add_argument("--brief", action="store_true", help="one line per unit")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("generate", help="write synthesizable Verilog")
    p.add_argument("unit", nargs="?", help="unit name (see `tcgen list`)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter (repeatable)")
    p.add_argument("-o", "--output", help="output file (default stdout); a folder with --all")
    p.add_argument("--top", help="top module name (default: the unit name)")
    p.add_argument("--clock-ns", type=_float, default=None, metavar="T",
                   help="with -p cuts=auto: pipeline to this clock period (docs/pipelining.md)")
    p.add_argument("--liberty", default=None, metavar="NAME|PATH",
                   help="with -p cuts=auto: the liberty timing the cuts (default osu018)")
    p.add_argument("--fraig-conflicts", type=_int, default=None, metavar="N",
                   help="with -p cuts=auto: ABC's SAT-sweeping conflict limit of the "
                        "syntheses that time the cuts (as tcgen ppa --fraig-conflicts)")
    p.add_argument("--all", action="store_true", help="every unit at its defaults into -o DIR")
    p.add_argument("--flat", action="store_true",
                   help="elaborate every instance of a sub-component in place (default: each "
                        "distinct module once, instantiated)")
    _add_force(p)
    p.set_defaults(func=cmd_generate)
    p = sub.add_parser("lint", help="lint Verilog with the project's Verilator")
    p.add_argument("target", help="a Verilog file, or a unit name (generated, then linted)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="with a UNIT: set a parameter (repeatable)")
    p.add_argument("--top", help="the top module (a file: where it holds several roots; a "
                                 "unit: the name to generate it under)")
    p.add_argument("--wall", action="store_true", help="Verilator's -Wall (style warnings too)")
    _add_force(p)
    p.set_defaults(func=cmd_lint)
    _add_ppa_parser(sub)
    _add_verify_parser(sub)
    p = sub.add_parser("sweep", help="measure a design-space sweep (docs/sweep.md)")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("-j", "--jobs", type=_int, default=1, help="points measured at once")
    p.add_argument("--executor", default="local", help="local (process pool) or dask")
    p.add_argument("--scheduler", help="a Dask scheduler address (tcp://host:8786); default: a "
                                       "LocalCluster of -j workers")
    p.add_argument("-o", "--output", default="build/sweep-out",
                   help="folder for <name>.csv/.json/.md and the plots")
    p.add_argument("--cache", help="point cache folder (default build/sweep, or "
                                   "TCGEN_SWEEP_CACHE)")
    p.add_argument("--retry-failed", action="store_true",
                   help="measure again the points whose cached record is a failure")
    q = sub.add_parser("claims", help="judge the papers' claims against the measured results "
                                      "(reports/claims.md, docs/claims.md)")
    q.add_argument("--claims", default="claims", help="folder of <family>.toml (default claims)")
    q.add_argument("--results", default="reports",
                   help="folder of the sweeps' <name>.json (default reports)")
    q.add_argument("-o", "--output", default="reports/claims.md", help="the ledger (markdown)")
    q.add_argument("--strict", action="store_true",
                   help="refuse (exit 1, nothing written) a measured claim without its kind of "
                        "evidence, a failing claim without its cause, or a tolerance / "
                        "comparison / paper value / judged cell changed after measurement "
                        "without a written [[claim.revision]] (docs/claims.md)")
    q.set_defaults(func=cmd_claims)
    p.add_argument("--no-flow-cache", action="store_true",
                   help="measure again instead of reading the flow's results cache (build/ppa)")
    p.add_argument("--strict", action="store_true", help="exit 1 if any point failed")
    _add_force(p)
    p.set_defaults(func=cmd_sweep)
    return ap


def _add_force(p):
    p.add_argument("--force", action="store_true",
                   help="build even if the estimated size is over the limit (default 4,000,000 "
                        "cells, TCGEN_MAX_CELLS; docs/robustness.md)")


@contextlib.contextmanager
def _forcing(force: bool):
    """``TCGEN_FORCE=1`` while the command runs when ``--force`` is given (so that the sweep's
    worker processes and the flow's own generation see it), restored afterwards."""
    if not force:
        yield
        return
    old = os.environ.get(ENV_FORCE)
    os.environ[ENV_FORCE] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV_FORCE, None)
        else:
            os.environ[ENV_FORCE] = old


# -- entry point --------------------------------------------------------------------------------
def main(argv=None) -> int:
    with signals_raise():       # Ctrl-C, SIGTERM, SIGHUP: unwound, exit status 130 / 128 + signal
        return _main(argv)


def _main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "func", None):
            raise UsageError("tcgen: a command is needed: list, generate, ppa, verify, sweep, claims")
        if args.command in _UNIT_COMMANDS:
            _warn_broken()
        with _forcing(getattr(args, "force", False)):
            return args.func(args)
    except (UsageError, ParamError, FlowInputError, StorageError) as e:
        return _fail(e, EXIT_USAGE)
    except ToolError as e:
        return _fail(e, EXIT_TOOL)
    except BrokenPipeError:
        return 0
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        if io_failure(e):              # a full disk, a failing device: exit 1
            return _fail(UsageError(f"I/O failure: {e.strerror or e}{where}"), EXIT_TOOL)
        if e.errno in PATH_REFUSALS:   # a read-only or forbidden place: bad input, exit 2
            return _fail(UsageError(f"cannot write{where.replace('(', '').replace(')', '')}: "
                                    f"{e.strerror or e}"), EXIT_USAGE)
        raise                          # anything else is a bug: its traceback
    except KeyboardInterrupt as e:
        # Components built before the interrupt were never elaborated: Amaranth would warn about
        # each at exit.  Nothing partial remains (atomic writes, .tmp folders removed, tool
        # process groups killed).
        warnings.filterwarnings("ignore", category=UnusedElaboratable)
        term = isinstance(e, Terminated)
        print(f"tcgen: {'terminated' if term else 'interrupted'}", file=sys.stderr)
        return e.exit_status if term else EXIT_INTERRUPTED


#: the commands that read the unit catalog: each warns of a broken plug-in family first
_UNIT_COMMANDS = {"list", "generate", "ppa", "sweep", "verify", "lint"}


def _warn_broken():
    """One line on stderr per broken plug-in family (tcgen.registry: skipped, the rest work)."""
    for b in broken():
        print(f"tcgen: warning: {_printable(b.line())}", file=sys.stderr)


def _fail(e: Exception, status: int) -> int:
    msg = " ".join(_printable(str(e)).split())
    print(f"tcgen: error: {msg}" if not msg.startswith("tcgen") else msg, file=sys.stderr)
    return status


def _printable(text: str) -> str:
    """``text`` with control and other non-printable characters (a NUL or an escape sequence
    in a user's argument) written as escapes, so that the error stays one plain line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in " \t\n" else repr(c)[1:-1] for c in text)


if __name__ == "__main__":
    sys.exit(main())
