"""Run a sweep: every point of a spec measured once (cached by content key), on a local process
pool or a Dask cluster, with a progress display; failures are recorded and do not stop the rest.

    from tcgen.sweep import load, run
    result = run(load("studies/example.toml"), jobs=2)
    result.rows            # one dict per point, in spec order: identity, metrics, derived, status

The worker function :func:`measure_point` is the only thing an executor runs; it takes and
returns plain data (picklable, JSON-able), and the records are written by the calling process
-- so the cache ends up on the client whichever executor did the work.
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .metrics import flatten
from .spec import Point, Spec, evaluate
from .store import Store, point_key

__all__ = ["run", "SweepResult", "measure_point", "EXECUTORS", "default_cache"]

EXECUTORS = ("local", "dask")


def default_cache() -> Path:
    """``TCGEN_SWEEP_CACHE``, else ``build/sweep`` of the current folder."""
    return Path(os.environ.get("TCGEN_SWEEP_CACHE") or Path.cwd() / "build" / "sweep")


def measure_point(p: dict) -> dict:
    """Measure one point (a :func:`_job` dict) and return its record; never raises for a
    failing point: the record then has ``status = "failed"`` and the error."""
    from tcgen.measure import measure
    t0 = time.time()
    act = p["activity"]
    try:
        r = measure(p["unit"], p["params"], liberty=p["liberty"], clock_ns=p["clock_ns"],
                    activity=act["mode"], toggle_rate=act.get("toggle_rate", 0.1),
                    workload_cycles=act.get("cycles", 2000), seed=act.get("seed", 1),
                    simulator=act.get("simulator", "auto"))
    except KeyboardInterrupt:
        raise
    except Exception as e:                          # recorded; the sweep goes on
        return {"status": "failed", "error": f"{type(e).__name__}: {e}".splitlines()[0],
                "traceback": traceback.format_exc()[-4000:], "seconds": time.time() - t0}
    return {"status": "ok", "metrics": flatten(r), "result": r, "seconds": time.time() - t0}


def _job(p: Point) -> dict:
    return {"unit": p.unit, "params": p.params_dict, "liberty": p.liberty,
            "clock_ns": p.clock_ns, "activity": p.activity.as_dict()}


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
        self.counts = {"done": 0, "cached": 0, "failed": 0}
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
        self.counts[kind] += 1
        n = sum(self.counts.values())
        if self.live is not None:
            self.live.update(self.task, completed=n, counts=self._text())
        elif kind != "cached":
            state = "FAILED " + rec.get("error", "") if kind == "failed" else \
                f"{rec.get('seconds', 0):.0f} s"
            print(f"[sweep {self.name}] {n}/{self.total} {p.label} {p.liberty} "
                  f"{p.clock_ns:g}ns {p.activity.tag}: {state}", file=self.stream, flush=True)

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
                done(p, measure_point(job))
            return
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futs = {pool.submit(measure_point, job): p for p, job in items}
            while futs:
                finished, _ = wait(futs, return_when=FIRST_COMPLETED)
                for f in finished:
                    done(futs.pop(f), f.result())
    return submit_all


def _dask(jobs: int, scheduler: str | None) -> Callable:
    def submit_all(items: list[tuple[Point, dict]], done: Callable):
        from dask.distributed import Client, LocalCluster, as_completed
        cluster = None
        if scheduler:
            client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            client = Client(cluster)
        try:
            futs = {}
            for p, job in items:
                f = client.submit(measure_point, job, pure=False)
                futs[f] = p
            for f in as_completed(list(futs)):
                done(futs[f], f.result())
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    return submit_all


def run(spec: Spec, *, jobs: int = 1, executor: str = "local", scheduler: str | None = None,
        cache: str | Path | None = None, retry_failed: bool = False,
        stream=None) -> SweepResult:
    """Measure every point of ``spec`` that the cache does not hold; return all rows."""
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
                todo.append((p, _job(p)))

        def done(p: Point, rec: dict):
            rec = dict(rec, key=keys[p], point=_job(p))
            store.put(keys[p], rec)
            records[p] = rec
            prog.update("failed" if rec["status"] == "failed" else "done", p, rec)

        if todo:
            (_local(jobs) if executor == "local" else _dask(jobs, scheduler))(todo, done)
    finally:
        prog.close()
    rows = [_row(spec, p, records[p], keys[p], records) for p in spec.points]
    counts = dict(prog.counts)
    compute = sum((records[p].get("seconds") or 0.0) for p in spec.points)
    return SweepResult(spec, rows, counts, time.time() - t0, compute)


def _row(spec: Spec, p: Point, rec: dict, key: str, records: dict) -> dict:
    row = {"group": p.group, "label": p.label, "unit": p.unit, **p.params_dict,
           "liberty": p.liberty, "clock_ns": p.clock_ns, "activity": p.activity.tag,
           "status": rec.get("status"), "error": rec.get("error"), "key": key}
    metrics = rec.get("metrics") or {}
    row.update(metrics)
    for d in spec.derived:
        if d.groups and p.group not in d.groups:
            row[d.name] = None
            continue
        ref = None
        if d.ref_group is not None:
            rp = spec.point(d.ref_group, dict(d.ref_params), p)
            ref = (records.get(rp) or {}).get("metrics") if rp is not None else None
        row[d.name] = evaluate(d.expr, metrics, ref) if rec.get("status") == "ok" else None
    row["_result"] = rec.get("result")
    return row


def params_of(rows: Iterable[dict], spec: Spec) -> list[str]:
    """The parameter columns of the rows (union over the groups' units, in first-seen order)."""
    from tcgen.registry import get_unit
    out: list[str] = []
    for g in spec.groups:
        for k in get_unit(g.unit).params().as_dict():
            if k not in out:
                out.append(k)
    return out
