"""``tcgen verify UNIT [-p name=value ...] [--vectors N] [--seed S] [--sim icarus|verilator]
[--bench auto|batch|fixed_latency|stream]``: the harness from the command line (docs/plugins.md).

Any configuration of any unit -- built-in or a plug-in's -- is simulated against its golden
model (``UnitSpec.model``):

* **fixed-latency units** (plain ports): directed vectors (every input port at 0, 1, its
  largest value, its sign bit and its sign bit - 1, crossed over the ports while that stays
  small, else side by side) then random ones (the unit's ``workload``; without one, uniform over
  each port's width), checked inside the simulation on the batch path (``harness.run_batch``);
* **stream units** (``amaranth.lib.stream`` ports): the workload's payloads on the batch path
  (back to back), then the stream bench's scenarios (``back_to_back``, ``backpressure`` with
  idle inputs and stalled outputs, ``reset_mid_operation``) on the first :data:`STREAM_OPS` of
  them (``bench_config.run_stream``; a cocotb coroutine per cycle, so fewer).

``--bench``: ``auto`` (the above), ``batch`` (the batch path only), ``fixed_latency`` (the
per-vector cocotb bench, which also checks the declared latency; slower) or ``stream`` (the
scenarios only).  Output: one line per result, ``PASS``/``FAIL``, the bench, the vectors and
mismatches, the simulator and the wall time; for a failure the first mismatches with their
inputs.  Exit 0: every result passed; 1: a mismatch or a simulator failure; 2: bad input
(unknown unit, bad ``-p``, ``--seed``/``TCGEN_SEED``, ``--vectors``; the verify extra missing).
The builds go to :func:`tcgen.verify.build_dir` (``TCGEN_BUILD_DIR``).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import time

import numpy as np

from tcgen.errors import UsageError
from tcgen.hw.params import parse_seed

__all__ = ["verify", "BENCHES", "EXTRA_HINT", "STREAM_OPS", "MAX_VECTORS", "directed_inputs",
           "random_inputs", "require_extra"]

BENCHES = ("auto", "batch", "fixed_latency", "stream")
EXTRA_HINT = "tcgen verify needs the verify extra: pip install 'tcgen-hdl[verify]'"
#: inputs of the stream bench's scenarios (each a per-cycle cocotb coroutine)
STREAM_OPS = 32
#: the per-vector fixed-latency bench's most vectors (a cocotb coroutine per cycle: ~2 ms each)
FIXED_LATENCY_MAX = 4096
MAX_VECTORS = 1 << 26
#: mismatches printed per result
SHOWN = 5


_find_spec = importlib.util.find_spec          # (a test stands in for a missing extra here)


def require_extra():
    """The verify extra's packages, or a one-line UsageError (exit 2) naming the extra."""
    missing = [m for m in ("cocotb", "cocotb_tools", "cocotb_coverage") if _find_spec(m) is None]
    if missing:
        raise UsageError(f"{EXTRA_HINT} ({', '.join(missing)} not installed)")


# -- stimulus ---------------------------------------------------------------------------------
def _uniform(rng, width: int, n: int) -> np.ndarray:
    """``n`` values uniform over ``width`` bits (uint64, or Python ints above 64 bits)."""
    if width <= 64:
        return rng.integers(0, 1 << width, n, dtype=np.uint64, endpoint=False) if width < 64 \
            else rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)
    words = [rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)
             for _ in range((width + 63) // 64)]
    mask = (1 << width) - 1
    out = np.empty(n, dtype=object)
    for i in range(n):
        v = 0
        for w in words:
            v = (v << 64) | int(w[i])
        out[i] = v & mask
    return out


def _column(values, width: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64) if width <= 64 else np.array(values, dtype=object)


def _corners(width: int) -> list[int]:
    top = (1 << width) - 1
    return sorted({0, 1 & top, top, 1 << (width - 1), (1 << (width - 1)) - 1})


def directed_inputs(shape, limit: int = 1024) -> dict[str, np.ndarray]:
    """Corner vectors of a fixed-latency unit's input ports (:func:`_corners` each): every
    combination while there are at most ``limit``, else the corners side by side (port ``i``
    at corner ``j`` with the others at corner ``j + i``)."""
    ins = shape.inputs()
    corners = [_corners(p.width) for p in ins]
    total = 1
    for c in corners:
        total *= len(c)
    if total <= limit:
        grids = np.meshgrid(*[np.arange(len(c)) for c in corners], indexing="ij")
        return {p.name: _column([c[i] for i in g.reshape(-1)], p.width)
                for p, c, g in zip(ins, corners, grids)}
    k = max(len(c) for c in corners)
    return {p.name: _column([c[(j + i) % len(c)] for j in range(k * k)], p.width)
            for i, (p, c) in enumerate(zip(ins, corners))}


def random_inputs(unit, params, shape, rng, n: int) -> dict[str, np.ndarray]:
    """``n`` random vectors: the unit's ``workload`` (stream units: ``<stream>__payload`` only),
    else uniform over each input port's (payload's) width."""
    if unit.workload is not None:
        stim = unit.workload(params, rng, n)
        return {k: np.asarray(v) for k, v in stim.items()
                if not k.endswith(("__valid", "__ready"))}
    if shape.is_stream:
        return {f"{s.name}__payload": _uniform(rng, s.width, n) for s in shape.streams
                if s.flow == "In"}
    return {p.name: _uniform(rng, p.width, n) for p in shape.inputs()}


def _concat(a: dict, b: dict) -> dict:
    out = {}
    for k in b:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        out[k] = np.concatenate([x.astype(object), y.astype(object)]) \
            if object in (x.dtype, y.dtype) else np.concatenate([x, y]).astype(np.uint64)
    return out


def _take(stim: dict, n: int) -> dict:
    return {k: np.asarray(v)[:n] for k, v in stim.items()}


def _size(stim: dict) -> int:
    return len(next(iter(stim.values()))) if stim else 0


# -- reporting --------------------------------------------------------------------------------
def _fmt(v) -> str:
    return hex(int(v)) if isinstance(v, (int, np.integer)) else str(v)


def _mismatch_line(m) -> str:
    if isinstance(m, str):
        return f"  mismatch: {' '.join(m.split())}"
    ins = " ".join(f"{k}={v}" for k, v in (m.get("inputs") or {}).items())
    where = f"#{m['index']}" if "index" in m else ""
    return (f"  mismatch {where}: {ins + ' -> ' if ins else ''}{m.get('output')}="
            f"{m.get('got')}, expected {m.get('expected')}")


def _line(ok: bool, what: str, detail: str, sim: str, wall: float | None) -> str:
    t = f", {wall:.1f} s" if wall is not None else ""
    return f"{'PASS' if ok else 'FAIL'} {what} {detail} ({sim}{t})"


@contextlib.contextmanager
def _quiet():
    """The harness's own ``[tcgen] ...`` progress lines kept off the command's output, and no
    functional-coverage database written per run (``TCGEN_COVERAGE=0`` unless set; restored)."""
    buf = io.StringIO()
    old = os.environ.get("TCGEN_COVERAGE")
    os.environ.setdefault("TCGEN_COVERAGE", "0")
    try:
        with contextlib.redirect_stdout(buf):
            yield buf
    finally:
        if old is None:
            os.environ.pop("TCGEN_COVERAGE", None)


def _call(fn, *args, **kwargs):
    """``fn`` (a harness run): (summary, None) or, on a failed run, (summary or {}, error)."""
    from .harness import SimulationFailed
    try:
        with _quiet():
            return fn(*args, **kwargs), None
    except SimulationFailed as e:
        return e.summary, e
    except (subprocess.CalledProcessError, SystemExit) as e:   # the simulator's build failed
        return {}, e


def _log_hint(e) -> str:
    """Where the failure is logged (the run's sim.log, or the build log), one line."""
    text = str(e)
    tail = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = tail[0] if tail else type(e).__name__
    return " ".join(first.split())[:300]


# -- the command ------------------------------------------------------------------------------
def verify(unit_name: str, param_values: dict[str, str] | None = None, *, vectors: int = 4096,
           seed: str | int | None = None, sim: str | None = None, bench: str = "auto",
           out=None) -> int:
    """``tcgen verify``: simulate ``unit_name`` at ``param_values`` (CLI text) against its golden
    model; one line per result on ``out`` (stdout).  Returns the exit status (0 pass, 1 fail);
    bad input raises UsageError / ParamError (exit 2)."""
    out = out or sys.stdout
    from tcgen.generate import check_size
    from tcgen.registry import get_unit
    if bench not in BENCHES:
        raise UsageError(f"--bench must be one of {', '.join(BENCHES)}, got {bench!r}")
    if not 1 <= int(vectors) <= MAX_VECTORS:
        raise UsageError(f"--vectors must be in 1..{MAX_VECTORS}, got {vectors}")
    if seed is None:
        env = os.environ.get("TCGEN_SEED")
        seed = parse_seed(env, "TCGEN_SEED") if env not in (None, "") else 1
    else:
        seed = parse_seed(str(seed), "--seed")
    unit = get_unit(unit_name)
    params = unit.make_params(param_values or {})
    if sim is not None and sim not in ("icarus", "verilator"):
        raise UsageError(f"--sim must be icarus or verilator, got {sim!r}")
    require_extra()
    check_size(unit, params)
    from . import harness
    from .batch import shape_of
    from .bench_config import SCENARIOS, run_stream
    try:
        harness.sim_name(sim)                     # the simulator is usable (else one line)
    except ValueError as e:
        raise UsageError(str(e).removeprefix("tb: ")) from None
    shape = shape_of(unit.interface(params))
    if bench == "fixed_latency" and shape.is_stream:
        raise UsageError(f"{unit.name} is a stream unit: use --bench stream or batch")
    if bench == "stream" and not shape.is_stream:
        raise UsageError(f"{unit.name} has plain ports, not streams: use --bench batch or "
                         f"fixed_latency")
    if bench == "fixed_latency" and vectors > FIXED_LATENCY_MAX:
        raise UsageError(f"--bench fixed_latency simulates one vector per cycle in Python: at "
                         f"most {FIXED_LATENCY_MAX} vectors (the batch bench takes millions)")
    rng = np.random.default_rng(seed)
    n = int(vectors)
    if shape.is_stream:
        stim, n_dir = random_inputs(unit, params, shape, rng, n), 0
    else:
        stim = _take(directed_inputs(shape), n)
        n_dir = _size(stim)
        if n > n_dir:
            stim = _concat(stim, random_inputs(unit, params, shape, rng, n - n_dir))
    shown = " ".join(f"{k}={v}" for k, v in params.as_dict().items())
    print(f"verify {unit.name} {shown}: seed {seed}, build "
          f"{harness._shown(harness.BUILD / unit.name)}", file=out, flush=True)
    failed = False

    def report(ok, what, detail, summary, err, simulator, wall, firsts):
        nonlocal failed
        failed |= not ok
        print(_line(ok, what, detail, simulator, wall), file=out, flush=True)
        if not ok:
            for m in list(firsts)[:SHOWN]:
                print(_mismatch_line(m), file=out)
            if err is not None and not firsts:
                print(f"  {_log_hint(err)}", file=out)
            run_dirs = sorted((harness.BUILD / unit.name).glob(f"*/runs/{what.split()[0]}-"
                                                                f"{os.getpid()}"))
            if run_dirs:
                print(f"  log: {harness._shown(run_dirs[-1] / 'sim.log')}", file=out)
            out.flush()

    if bench in ("auto", "batch"):
        t0 = time.monotonic()
        s, err = _call(harness.run_batch, unit.name, params, stimulus=stim, sim=sim,
                       seed_value=seed, name="batch", max_report=SHOWN)
        simulator = _used_sim(harness, unit.name, params, sim, n)
        mism = int(s.get("mismatches", 0))
        ok = err is None and mism == 0      # (mismatches count outputs left unchecked too)
        if shape.is_stream:
            detail = (f"{s.get('vectors', n)} inputs (random), {s.get('checked', 0)} outputs "
                      f"checked, {mism} mismatches")
        else:
            checked = s.get("checked", 0)
            detail = (f"{checked} vectors ({n_dir} directed, {n - n_dir} random), {mism} "
                      f"mismatches" + (f" ({n} given)" if checked != n else ""))
        report(ok, "batch", detail, s, err, simulator, time.monotonic() - t0,
               s.get("first_mismatches") or [])
    if bench == "fixed_latency":
        t0 = time.monotonic()
        s, err = _call(harness.run, unit.name, params, "fixed_latency", stimulus=stim, sim=sim,
                       seed_value=seed, name="fixed_latency")
        mism = int(s.get("mismatches", 0))
        ok = err is None and mism == 0
        detail = (f"{s.get('vectors', 0)} vectors ({n_dir} directed, {n - n_dir} random), "
                  f"latency {s.get('latency', '?')}, {mism} mismatches")
        report(ok, "fixed_latency", detail, s, err, harness.sim_name(sim),
               time.monotonic() - t0, s.get("first_mismatches") or [])
    if shape.is_stream and bench in ("auto", "stream"):
        ops = min(n, STREAM_OPS)
        t0 = time.monotonic()
        s, err = _call(run_stream, unit.name, params, _take(stim, ops), name="stream", sim=sim,
                       scenarios=SCENARIOS, seed=seed, max_report=SHOWN)
        wall = time.monotonic() - t0
        simulator = harness.sim_name(sim)
        for i, sc in enumerate(SCENARIOS):
            mism = int(s.get(f"{sc}_mismatches", 0))
            ran = f"{sc}_vectors" in s
            ok = ran and mism == 0 and (err is None or _only_others_failed(s, sc))
            detail = (f"{s.get(f'{sc}_inputs', 0)} inputs, {s.get(f'{sc}_vectors', 0)} outputs, "
                      f"{mism} mismatches" + ("" if ran else ", did not run"))
            if sc == "reset_mid_operation" and s.get("reset_leaked"):
                detail += f", {s['reset_leaked']} output-valid cycles after the reset"
                ok = False
            last = i == len(SCENARIOS) - 1
            report(ok, f"stream {sc}", detail, s, err, simulator, wall if last else None,
                   s.get(f"{sc}_first_mismatches") or [])
    return 1 if failed else 0


def _only_others_failed(summary: dict, scenario: str) -> bool:
    """A failed stream run where ``scenario`` itself was scored clean."""
    return summary.get(f"{scenario}_mismatches", 1) == 0 and f"{scenario}_vectors" in summary


def _used_sim(harness, unit_name, params, sim, n) -> str:
    """The batch path's simulator (``--sim``, ``SIM``, else the faster one for the size)."""
    if sim or os.environ.get("SIM"):
        return harness.sim_name(sim)
    size = harness.elaborated_bytes(harness.verilog_file(unit_name, params).read_text(),
                                    unit_name)
    return harness.batch_default_sim(n, size)
