"""Run a sweep: every point of a spec measured once (cached by content key), on a local process
pool or a Dask cluster, with a progress display; failures are recorded and do not stop the rest.

    from tcgen.sweep import load, run
    result = run(load("studies/example.toml"), jobs=2)
    result.rows            # one dict per point, in spec order: identity, metrics, derived, status

The worker function :func:`measure_point` is the only thing an executor runs; it takes and
returns plain data (picklable, JSON-able).  The local executor runs it through
:func:`measure_and_record`: under the point's lock in the store, the record another sweep wrote
meanwhile, else measure and write the record before the lock is released -- so sweeps sharing
a cache measure each point once.  With Dask the records are written by the calling process, so
the cache ends up on the client whichever executor did the work.

Stopping: on any exception in the calling process (Ctrl-C, ``Terminated`` from SIGTERM, a bug)
the local pool's workers are sent SIGTERM, which stops the point they measure (the tool's
process group killed, no partial cache entry) and ends them; a worker whose parent dies
(``kill -9``) gets SIGTERM from the kernel and does the same (:func:`_worker_init`).
"""
from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .metrics import flatten
from .spec import SELF, Point, Spec, evaluate
from .store import Store, point_key

__all__ = ["run", "SweepResult", "measure_point", "measure_and_record", "point_errors",
           "dask_client", "EXECUTORS", "default_cache"]

EXECUTORS = ("local", "dask")


def default_cache() -> Path:
    """``TCGEN_SWEEP_CACHE``, else ``build/sweep`` of the current folder."""
    return Path(os.environ.get("TCGEN_SWEEP_CACHE") or Path.cwd() / "build" / "sweep")


def point_errors() -> tuple[type, ...]:
    """What a point may fail with and be recorded as failed: the flow's input errors, a
    failing tool, a parameter the flow rejects, the levelized engine's refusal.  Anything else
    is a bug in tcgen and stops the sweep with its traceback."""
    from tcgen.hw.params import ParamError
    from tcgen.synth.gatesim import GateSimError
    from tcgen.synth.tools import FlowInputError, ToolError
    return (FlowInputError, ToolError, ParamError, GateSimError)


def measure_point(p: dict) -> dict:
    """Measure one point (a :func:`_job` dict) and return its record; a point failing with one
    of :func:`point_errors` gives a record with ``status = "failed"`` and the error."""
    from tcgen.measure import measure
    t0 = time.time()
    act = p["activity"]
    try:
        r = measure(p["unit"], p["params"], liberty=p["liberty"], clock_ns=p["clock_ns"],
                    activity=act["mode"], toggle_rate=act.get("toggle_rate", 0.1),
                    workload_cycles=act.get("cycles", 2000), seed=act.get("seed", 1),
                    simulator=act.get("simulator", "auto"), cache=p.get("flow_cache", True),
                    workload=p.get("workload"), hierarchical=p.get("hierarchical", False),
                    fraig_conflicts=p.get("fraig_conflicts"), noise=p.get("noise", 0))
    except point_errors() as e:                    # recorded; the sweep goes on
        return _failed(e, t0)
    return {"status": "ok", "result": r, "seconds": time.time() - t0}


def measure_and_record(job: dict) -> tuple[dict, str]:
    """(record, ``"done"`` or ``"cached"``): under the lock of ``job["key"]`` in the store at
    ``job["store"]``, the record already there (another sweep measured the point while this
    one waited; a failed record only unless ``job["retry_failed"]``), else the point measured
    now and its record written (``key`` and ``point`` added) before the lock is released."""
    store, key = Store(job["store"]), job["key"]
    with store.lock(key):
        rec = store.get(key)
        if rec is not None and not (job.get("retry_failed") and rec["status"] == "failed"):
            return rec, "cached"
        rec = dict(measure_point(job), key=key, point=job["point"])
        store.put(key, rec)
        return rec, "done"


# -- the local pool's worker processes ----------------------------------------------------------
_busy = False           # a worker is measuring a point (not waiting for one)


def _worker_init(parent: int):
    """Set up a pool worker: SIGTERM and SIGHUP stop the point it measures (``Terminated``
    unwinds it: the tool's process group killed, no partial entry) and then end the worker; an
    idle worker just exits.  The kernel sends it SIGTERM when its parent dies (``kill -9``);
    Ctrl-C at the terminal is left to the parent, which stops the workers."""
    from tcgen.synth.tools import (TERMINATING_SIGNALS, Terminated, die_with_parent,
                                   in_finalizer, redeliver)

    def handler(signum, frame):
        if _busy:
            if in_finalizer(frame):
                # raised inside a __del__ (the garbage collector runs Amaranth's checks of
                # unused elaboratables anywhere), the exception would be printed and dropped
                # and the worker would measure on to the point's end: sent again shortly, as
                # signals_raise does for the main process
                redeliver(signum)
                return
            raise Terminated(signum)
        os._exit(128 + signum)
    for s in TERMINATING_SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:       # nohup's SIGHUP stays ignored
            signal.signal(s, handler)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(signal.SIGTERM, parent)


def _pool_task(job: dict) -> tuple[dict, str]:
    """What a pool worker runs: :func:`measure_and_record`; a worker that was told to stop
    exits once the point has unwound (it never takes another)."""
    global _busy
    from tcgen.synth.tools import Terminated
    _busy = True
    try:
        return measure_and_record(job)
    except Terminated as e:
        os._exit(e.exit_status)
    finally:
        _busy = False


def _stop_workers(pool: ProcessPoolExecutor, grace_s: float = 10.0):
    """Cancel what has not started, send each worker SIGTERM (the points they measure stop
    and clean up), wait up to ``grace_s`` for them, then SIGKILL what is left; then wait for the
    pool's manager thread, which sees the workers gone and closes its pipes.  Left running, it
    races the interpreter's exit: CPython 3.11's ``_python_exit`` writes to the thread's wakeup
    pipe while the thread closes it (checked, then closed: ``OSError: [Errno 9] Bad file
    descriptor`` printed after "tcgen: terminated"; CPython gh-125451 adds the lock in 3.12)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() drops it
    manager = getattr(pool, "_executor_manager_thread", None)        # and this
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    if manager is not None:
        manager.join(grace_s)


def _failed(e: BaseException, t0: float, tb: str | None = None) -> dict:
    return {"status": "failed", "error": " ".join(f"{type(e).__name__}: {e}".split())[:500],
            "traceback": (tb or traceback.format_exc())[-4000:], "seconds": time.time() - t0}


def _job(p: Point, flow_cache: bool = True) -> dict:
    job = {"unit": p.unit, "params": p.params_dict, "liberty": p.liberty,
           "clock_ns": p.clock_ns, "activity": p.activity.as_dict()}
    if p.workload is not None:
        job["workload"] = p.workload
    if p.synthesis == "hierarchical":
        job["hierarchical"] = True
    if p.fraig_conflicts is not None:
        job["fraig_conflicts"] = p.fraig_conflicts
    if p.noise:
        job["noise"] = p.noise
    if not flow_cache:
        job["flow_cache"] = False
    return job


@dataclass
class SweepResult:
    spec: Spec
    rows: list[dict]
    counts: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    compute_s: float = 0.0           # seconds the points took when first measured


class _Progress:
    """A live bar on a terminal (rich), one quiet line per point otherwise (CI, pipes)."""

    def __init__(self, total: int, name: str, stream=None):
        self.stream = stream or sys.stderr
        self.total, self.name = total, name
        self.counts = {"done": 0, "cached": 0, "failed": 0}    # failed: of either kind
        self.t0 = time.time()
        self.live = None
        if self.stream.isatty() and not os.environ.get("CI"):
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            from rich.console import Console
            self.live = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("{task.fields[counts]}"),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 console=Console(file=self.stream), transient=False)
            self.task = self.live.add_task(name, total=total, counts=self._text())
            self.live.start()

    def _text(self) -> str:
        c = self.counts
        return f"measured {c['done']} · cached {c['cached']} · failed {c['failed']}"

    def update(self, kind: str, p: Point, rec: dict):
        """``kind``: done (measured now) or cached; a failed record also counts as failed."""
        self.counts[kind] += 1
        if rec.get("status") == "failed":
            self.counts["failed"] += 1
        n = self.counts["done"] + self.counts["cached"]
        if self.live is not None:
            self.live.update(self.task, completed=n, counts=self._text())
        elif kind != "cached":
            state = "FAILED " + rec.get("error", "") if rec.get("status") == "failed" else \
                f"{rec.get('seconds', 0):.0f} s"
            print(f"[sweep {self.name}] {n}/{self.total} {p.label} {p.liberty} "
                  f"{p.clock_ns:g}ns {p.activity.tag}"
                  + ("" if p.synthesis == "flat" else f" {p.synthesis}")
                  + ("" if p.fraig_conflicts is None else f" fraig {p.fraig}")
                  + (f" noise {p.noise}" if p.noise else "") + f": {state}",
                  file=self.stream, flush=True)

    def close(self):
        if self.live is not None:
            self.live.stop()
        c = self.counts
        print(f"[sweep {self.name}] {self.total} points: {c['done']} measured, {c['cached']} "
              f"cached, {c['failed']} failed in {time.time() - self.t0:.0f} s",
              file=self.stream, flush=True)


def _local(jobs: int) -> Callable:
    def submit_all(items: list[tuple[Point, dict]], done: Callable):
        if jobs <= 1:
            for p, job in items:
                done(p, *measure_and_record(job))
            return
        pending, isolate = list(items), False
        while pending:
            # a worker that dies (a crash, the OOM killer) breaks the whole pool and every
            # running point with it; the points left are then run one pool per point, so the
            # one that kills its worker is recorded as failed and the rest go on
            batch, pending = (pending[:1], pending[1:]) if isolate else (pending, [])
            pool = ProcessPoolExecutor(max_workers=1 if isolate else jobs,
                                       initializer=_worker_init, initargs=(os.getpid(),))
            try:
                futs = {pool.submit(_pool_task, job): (p, job) for p, job in batch}
                while futs:
                    finished, _ = wait(futs, return_when=FIRST_COMPLETED)
                    broken = False
                    for f in finished:
                        p, job = futs.pop(f)
                        try:
                            rec, kind = f.result()
                        except BrokenProcessPool as e:
                            if not isolate:
                                pending, broken = [(p, job), *futs.values(), *pending], True
                                break
                            rec, kind = _failed(e, time.time(), "its worker process died"), None
                        done(p, rec, kind)
                    if broken:
                        isolate, futs = True, {}
            except BaseException:          # Ctrl-C, SIGTERM, a bug: stop the running points
                _stop_workers(pool)
                raise
            pool.shutdown(wait=True, cancel_futures=True)    # idle workers: they exit at once
    return submit_all


def dask_client(jobs: int, scheduler: str | None):
    """(client, cluster or None): a Client of ``scheduler``, or of a new LocalCluster of
    ``jobs`` single-threaded worker processes.  UsageError when dask is not installed or the
    scheduler cannot be reached within ``TCGEN_DASK_TIMEOUT`` seconds (default 20)."""
    from tcgen.errors import UsageError
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--executor dask needs dask[distributed]: pip install "
                         "'tcgen-hdl[dask]'") from None
    if scheduler:
        try:
            timeout = os.environ.get("TCGEN_DASK_TIMEOUT", "20")
            return Client(scheduler, timeout=f"{float(timeout):g}s"), None
        except (OSError, TimeoutError, ValueError) as e:
            raise UsageError(f"cannot reach the Dask scheduler {scheduler}: "
                             f"{' '.join(str(e).split()) or type(e).__name__}") from None
    cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster


def _dask(jobs: int, scheduler: str | None) -> Callable:
    def submit_all(items: list[tuple[Point, dict]], done: Callable):
        from dask.distributed import as_completed
        client, cluster = dask_client(jobs, scheduler)
        try:
            futs = {client.submit(measure_point, job, pure=False): p for p, job in items}
            for f in as_completed(list(futs)):
                try:
                    rec = f.result()
                except point_errors():
                    raise
                except Exception as e:          # the worker died (KilledWorker) or the task
                    if type(e).__name__ != "KilledWorker":     # raised a bug: a bug stops
                        raise                                  # the sweep
                    rec = _failed(e, time.time(), "worker process died")
                done(futs[f], rec, None)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    return submit_all


def run(spec: Spec, *, jobs: int = 1, executor: str = "local", scheduler: str | None = None,
        cache: str | Path | None = None, retry_failed: bool = False, flow_cache: bool = True,
        stream=None) -> SweepResult:
    """Measure every point of ``spec`` that the cache does not hold; return all rows.
    ``flow_cache=False``: the flow measures again instead of reading its own results cache
    (build/ppa/) -- for a from-scratch run or to compare executors honestly."""
    if executor not in EXECUTORS:
        raise ValueError(f"sweep: executor must be one of {', '.join(EXECUTORS)}")
    store = Store(cache or default_cache())
    t0 = time.time()
    keys = {p: point_key(p) for p in spec.points}
    records: dict[Point, dict] = {}
    todo: list[tuple[Point, dict]] = []
    prog = _Progress(len(spec.points), spec.name, stream)
    try:
        for p in spec.points:
            rec = store.get(keys[p])
            if rec is not None and not (retry_failed and rec.get("status") == "failed"):
                records[p] = rec
                prog.update("cached", p, rec)
            else:
                job = _job(p, flow_cache)
                if executor == "local":       # measure_and_record: under the point's lock
                    job.update(key=keys[p], store=str(store.root), point=_job(p),
                               retry_failed=retry_failed)
                todo.append((p, job))

        def done(p: Point, rec: dict, kind: str | None):
            """``kind``: done (measured and recorded by the worker), cached (recorded by
            another sweep meanwhile) or None (to be recorded here)."""
            if kind is None:
                rec = dict(rec, key=keys[p], point=_job(p))
                store.put(keys[p], rec)
            records[p] = rec
            prog.update(kind or "done", p, rec)

        if todo:
            (_local(jobs) if executor == "local" else _dask(jobs, scheduler))(todo, done)
    finally:
        prog.close()
    metrics = {p: flatten(r["result"]) if r.get("status") == "ok" else {}
               for p, r in records.items()}        # from the stored result: never stale
    rows = [_row(spec, p, records[p], keys[p], metrics) for p in spec.points]
    counts = dict(prog.counts)
    from tcgen.study import compute_min
    compute = 60 * compute_min(r.get("result") for r in records.values())
    return SweepResult(spec, rows, counts, time.time() - t0, compute)


def _row(spec: Spec, p: Point, rec: dict, key: str, all_metrics: dict) -> dict:
    row = {"group": p.group, "label": p.label, "unit": p.unit, **p.axes,
           "liberty": p.liberty, "clock_ns": p.clock_ns, "activity": p.activity.tag,
           "synthesis": p.synthesis, "fraig_conflicts": p.fraig, "noise": p.noise,
           "workload": p.workload,
           "status": rec.get("status"), "error": rec.get("error"), "key": key}
    metrics = all_metrics.get(p) or {}
    row.update(metrics)
    for d in spec.derived:
        if d.groups and p.group not in d.groups:
            row.setdefault(d.name, None)          # another piece of the column may apply
            continue
        ref = None
        if d.ref_group == SELF:                  # the row itself at another fraig limit
            rp = spec.point(p.group, p.axes, p, d.ref_fraig)
            ref = all_metrics.get(rp) if rp is not None else None
        elif d.ref_group is not None:
            want = dict(d.ref_params)
            want.update({k: p.axes[k] for k in d.ref_match if k in p.axes})
            rp = spec.point(d.ref_group, want, p, d.ref_fraig)
            ref = all_metrics.get(rp) if rp is not None else None
        row[d.name] = evaluate(d.expr, metrics, ref) if rec.get("status") == "ok" else None
    row["_result"] = rec.get("result")
    return row


def params_of(spec: Spec) -> list[str]:
    """The parameter columns of a sweep (union over the groups' units, in first-seen order),
    then ``workload`` if a point names one."""
    from tcgen.registry import get_unit
    out: list[str] = []
    for g in spec.groups:
        for k in get_unit(g.unit).params().as_dict():
            if k not in out:
                out.append(k)
    if any(p.workload for p in spec.points):
        out.append("workload")
    return out
