"""The cache and sweeps under faults and concurrent use (issue 16, §4; docs/sweep.md, "Crashes
and concurrent use").

- ``kill -9`` of ``tcgen sweep`` at points chosen by a fixed-seed schedule (while Yosys runs,
  while OpenSTA runs, just after a record appears; ``-j 1`` and ``-j 2``), then a resume: the
  CSV and JSON equal those of an uninterrupted run byte for byte apart from the documented
  runtimes and this run's counts; after every kill no process of the run survives, no lock
  blocks the next run, and every cache entry (sweep records, flow results, netlists) is whole.
- Two sweeps and a ``tcgen ppa`` started together on one cache: every synthesis key is
  synthesized exactly once and every result key timed by one process, every point measured
  once across the sweeps, and all three agree.
- SIGTERM to ``tcgen ppa`` and to ``tcgen sweep -j 2`` while a tool runs: exit 143, one line
  ``tcgen: terminated``, no tool, worker or tool child left, no partial entry; ``kill -9`` of
  a ``-j 2`` sweep: its workers stop their tools and leave no partial entry either.
- Corrupt entries (a truncated result, a record of another key, a ``synth.json`` without its
  netlist) are measured again, never read; a lock whose holder was killed is free at once.

Every test has a private flow cache (``TCGEN_PPA_CACHE``) and sweep cache under ``tmp_path``,
never ``build/``.  The processes a test starts carry ``TCGEN_FAULT_TAG=<unique>`` in their
environment (inherited by workers and tools), which is how survivors are found in ``/proc``;
``yosys`` and ``sta`` are reached through logging wrappers first on ``PATH`` (which tool, its
pid, its parent's pid, its folder), which is how work is counted.  The ``slow`` test runs a
longer kill schedule on a bigger spec (``make test-slow``; reports/faults.md).
"""
from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tcgen.sweep.store import Store

ROOT = Path(__file__).resolve().parent.parent
TCGEN = [sys.executable, "-m", "tcgen.cli"]

SPEC = """
[sweep]
name = "faults"
liberties = ["osu018"]
clock_ns = [10.0]
activity = ["vectorless"]
metrics = ["synth__area__um2", "timing__crit_path__ns", "power__total__mw"]

[[group]]
name = "lzc"
unit = "lzc"
label = "lzc w={width}"
grid = {width = WIDTHS}

[[derived]]
name = "area_vs_first"
expr = "synth__area__um2 / ref.synth__area__um2"
ref = {group = "lzc", params = {width = FIRST}}
"""

WRAPPER = """#!/bin/sh
echo "{tool} $$ $PPID $PWD $*" >> "$TCGEN_TOOL_LOG"
case "$1" in
  -V|-version) ;;
  *) if [ -n "$TCGEN_TOOL_DELAY" ]; then sleep "$TCGEN_TOOL_DELAY"; fi ;;
esac
exec {real} "$@"
"""

#: the documented per-run fields: left out when outputs are compared (docs/sweep.md)
RUNTIME_COLUMNS = ("runtime__flow__s",)
RUN_FIELDS = ("wall_s", "compute_s", "counts")


def _spec_text(widths) -> str:
    return textwrap.dedent(SPEC).replace("WIDTHS", str(list(widths))) \
        .replace("FIRST", str(widths[0]))


class Rig:
    """One test's private world: caches, tool wrappers, a tag for its processes."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.tag = uuid.uuid4().hex
        self.ppa = tmp_path / "ppa"
        self.sweep = tmp_path / "sweep"
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for tool in ("yosys", "sta"):
            real = shutil.which(tool)
            if real is None:
                pytest.skip(f"{tool} is not installed")
            w = self.bin / tool
            w.write_text(WRAPPER.format(tool=tool, real=real))
            w.chmod(0o755)
        self.procs: list[subprocess.Popen] = []

    def env(self, log: str = "tools.log", **extra) -> dict:
        return {**os.environ, "TCGEN_PPA_CACHE": str(self.ppa),
                "TCGEN_SWEEP_CACHE": str(self.sweep), "TCGEN_FAULT_TAG": self.tag,
                "TCGEN_TOOL_LOG": str(self.tmp / log), "CI": "1",
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}", **extra}

    def start(self, args: list[str], cwd: Path, name: str, **env) -> subprocess.Popen:
        err = open(self.tmp / f"{name}.err", "w")
        out = open(self.tmp / f"{name}.out", "w")
        p = subprocess.Popen(TCGEN + args, cwd=cwd, stdout=out, stderr=err, env=self.env(**env))
        err.close()
        out.close()
        p.name = name
        self.procs.append(p)
        return p

    def text(self, name: str, kind: str = "err") -> str:
        return (self.tmp / f"{name}.{kind}").read_text()

    def tools(self, log: str = "tools.log") -> list[dict]:
        """The wrappers' log: one dict per tool run (version queries left out)."""
        path = self.tmp / log
        rows = []
        for ln in path.read_text().splitlines() if path.exists() else []:
            tool, pid, ppid, cwd, *args = ln.split(" ")
            if args and args[0] in ("-V", "-version"):
                continue
            rows.append({"tool": tool, "pid": int(pid), "ppid": int(ppid), "cwd": cwd,
                         "args": args})
        return rows

    def tagged(self) -> list[tuple[int, str]]:
        """Live processes (not zombies) that carry this rig's tag."""
        needle = f"TCGEN_FAULT_TAG={self.tag}".encode()
        found = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if needle in (d / "environ").read_bytes().split(b"\0"):
                    found.append((int(d.name), (d / "comm").read_text().strip()))
            except OSError:
                pass
        return found

    def assert_no_survivors(self, within_s: float = 15.0):
        """No process of this rig is left (after ``within_s`` for the kernel's clean-up);
        any that is gets SIGKILL here and fails the test."""
        t0 = time.monotonic()
        while (left := self.tagged()) and time.monotonic() - t0 < within_s:
            time.sleep(0.05)
        self._kill_tagged()
        assert not left, f"processes left running: {left}"

    def _kill_tagged(self):
        """SIGKILL every process of this rig, until none is left (one killed may have started
        another)."""
        for _ in range(50):
            found = self.tagged()
            if not found:
                return
            for pid, _ in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self._kill_tagged()

    # -- the caches --------------------------------------------------------------------------
    def check_cache(self) -> dict:
        """Every entry whole: each sweep record reads back, each flow result parses and names
        its key, each synthesis entry with a ``synth.json`` has its netlist.  Returns counts
        (records, results, netlists, stale temporary folders)."""
        from tcgen.synth.ppa import _cached_result, _cached_synth
        store = Store(self.sweep)
        records = sorted(self.sweep.glob("*.json")) if self.sweep.is_dir() else []
        for p in records:
            assert store.get(p.stem) is not None, f"record {p.name} is not whole"
        results = sorted((self.ppa / "results").glob("*.json"))
        for p in results:
            assert _cached_result(p, p.stem) is not None, f"flow result {p.name} is not whole"
        netlists, stale = 0, []
        for d in sorted((self.ppa / "synth").glob("*")) if (self.ppa / "synth").is_dir() else []:
            if ".tmp" in d.name:
                stale.append(d.name)
            elif (d / "synth.json").exists():
                assert _cached_synth(d, d / "synth.json") is not None, f"synth entry {d.name}"
                netlists += 1
        return {"records": len(records), "results": len(results), "netlists": netlists,
                "stale_tmp": stale}


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    yield r
    r.close()


def _wait(pred, proc: subprocess.Popen | None = None, timeout: float = 120.0) -> bool:
    """Poll ``pred`` until it holds (True) or ``proc`` ends / the time is up (False)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(pred())
        time.sleep(0.01)
    return False


def _outputs(folder: Path, name: str = "faults") -> tuple[list[str], dict]:
    """The CSV (comment lines, then rows without the runtime columns) and the JSON (without
    the per-run fields and the runtime columns)."""
    text = (folder / f"{name}.csv").read_text()
    lines = text.splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(ln for ln in lines
                                                       if not ln.startswith("#")))))
    body = [json.dumps({k: v for k, v in r.items() if k not in RUNTIME_COLUMNS}, sort_keys=True)
            for r in rows]
    meta = json.loads((folder / f"{name}.json").read_text())
    for k in RUN_FIELDS:
        meta.pop(k)
    for r in meta["rows"]:
        for k in RUNTIME_COLUMNS:
            r.pop(k)
    return comments + body, meta


def _reference(rig: Rig, widths) -> tuple[list[str], dict]:
    """An uninterrupted run, in the folder and with the cache paths the faulted runs will use
    (outputs name the liberty's copies in the flow cache); its caches are then moved aside."""
    work = rig.tmp / "run"
    work.mkdir()
    (work / "s.toml").write_text(_spec_text(widths))
    p = rig.start(["sweep", "s.toml", "-o", "out"], work, "ref", log="tools-ref.log")
    assert p.wait(timeout=300) == 0, rig.text("ref")
    ref = _outputs(work / "out")
    for d in (work / "out", rig.ppa, rig.sweep):
        d.rename(rig.tmp / f"ref-{d.name}")
    return ref


# -- kill -9 at random points, then resume -------------------------------------------------------
def _event(rig: Rig, log: str, what: str, n: int):
    """A predicate: the ``n``-th Yosys synthesis started / OpenSTA run started / sweep record
    written, in this run."""
    def yosys():
        return sum(t["tool"] == "yosys" for t in rig.tools(log)) >= n

    def sta():
        return sum(t["tool"] == "sta" for t in rig.tools(log)) >= n
    base = len(list(rig.sweep.glob("*.json"))) if rig.sweep.is_dir() else 0

    def record():
        return len(list(rig.sweep.glob("*.json"))) - base >= n
    return {"yosys": yosys, "sta": sta, "record": record}[what]


def _kill_schedule_then_resume(rig: Rig, widths, schedule, seed: int) -> dict:
    """Run the sweep once per schedule entry ``(event, n, jobs)`` -- a list, or a function
    (rng, points without a record) -> entry -- and kill -9 its main process a random delay
    (fixed seed) after the event; check that nothing survives and the cache is whole; finally
    resume without a kill and return the outputs and figures."""
    rng = random.Random(seed)
    work = rig.tmp / "run"                    # made by _reference
    kills = []
    steps = schedule if isinstance(schedule, list) else [None] * 10
    for i, step in enumerate(steps):
        left = len(widths) - (len(list(rig.sweep.glob("*.json"))) if rig.sweep.is_dir() else 0)
        if left == 0:
            break
        what, n, jobs = step if step is not None else schedule(rng, left)
        log = f"tools-{i}.log"
        (rig.tmp / log).touch()
        pred = _event(rig, log, what, n)
        p = rig.start(["sweep", "s.toml", "-o", "out", "-j", str(jobs)], work, f"kill{i}",
                      log=log)
        hit = _wait(pred, p, timeout=300)
        delay = rng.uniform(0.0, 0.25)
        time.sleep(delay)
        finished = p.poll() is not None
        if not finished:
            p.send_signal(signal.SIGKILL)          # the main process only, as `kill -9 PID`
        rc = p.wait(timeout=60)
        assert finished or rc == -signal.SIGKILL
        assert finished or hit, f"kill {i}: event {what} {n} never came: {rig.text(f'kill{i}')}"
        rig.assert_no_survivors()
        state = rig.check_cache()
        kills.append({"event": f"{what} {n}", "jobs": jobs, "delay_s": round(delay, 3),
                      "killed": not finished, **{k: (v if k != "stale_tmp" else len(v))
                                                 for k, v in state.items()}})
    # the resume: no lock left by a killed run may block it (it would time out here)
    p = rig.start(["sweep", "s.toml", "-o", "out"], work, "resume", log="tools-resume.log")
    assert p.wait(timeout=300) == 0, rig.text("resume")
    state = rig.check_cache()
    assert state["records"] == len(widths) and not state["stale_tmp"], state
    summary = [ln for ln in rig.text("resume").splitlines() if " points: " in ln][-1]
    return {"kills": kills, "outputs": _outputs(work / "out"), "resume": summary,
            "resume_tools": Counter(t["tool"] for t in rig.tools("tools-resume.log"))}


def test_sweep_killed_at_random_points_resumes_to_identical_outputs(rig):
    widths = [5, 7, 9, 12]
    ref = _reference(rig, widths)
    schedule = [("yosys", 1, 1), ("sta", 2, 2), ("record", 1, 1)]
    got = _kill_schedule_then_resume(rig, widths, schedule, seed=16)
    assert sum(k["killed"] for k in got["kills"]) >= 2, got["kills"]
    assert got["outputs"][0] == ref[0]            # CSV: comments and rows, runtimes aside
    assert got["outputs"][1] == ref[1]            # JSON: everything but runtimes and counts
    # the resume measured only what the killed runs had not recorded
    done = int(got["resume"].split(" points: ")[1].split(" measured")[0])
    assert done == len(widths) - got["kills"][-1]["records"], got
    print(json.dumps({"kills": got["kills"], "resume": got["resume"]}, indent=1))


# -- concurrent use ----------------------------------------------------------------------------
def test_two_sweeps_and_a_ppa_share_one_cache(rig):
    """Started together on one flow cache and one sweep cache: each synthesis key synthesized
    exactly once, each result key's OpenSTA runs all from one process, each point measured
    once across the two sweeps, and the three processes agree."""
    work = rig.tmp / "w"
    work.mkdir()
    a, b = [5, 7, 9], [7, 9, 12]
    (work / "a.toml").write_text(_spec_text(a).replace('name = "faults"', 'name = "a"'))
    (work / "b.toml").write_text(_spec_text(b).replace('name = "faults"', 'name = "b"'))
    procs = [rig.start(["sweep", "a.toml", "-o", "oa"], work, "sa"),
             rig.start(["sweep", "b.toml", "-o", "ob", "-j", "2"], work, "sb"),
             rig.start(["ppa", "lzc", "-p", "width=9", "--json", "p.json"], work, "pp")]
    for p in procs:
        assert p.wait(timeout=300) == 0, rig.text(p.name)
    rig.assert_no_survivors()
    runs = rig.tools()
    synth = Counter(Path(t["cwd"]).name.split(".tmp")[0] for t in runs if t["tool"] == "yosys")
    points = sorted(set(a) | set(b))
    assert len(synth) == len(points) and set(synth.values()) == {1}, synth   # once per key
    sta = defaultdict(set)
    for t in runs:
        if t["tool"] == "sta":
            sta[Path(t["cwd"]).name].add(t["ppid"])
    assert len(sta) == len(points) and all(len(v) == 1 for v in sta.values()), dict(sta)
    measured = 0
    for name in ("sa", "sb"):
        line = [ln for ln in rig.text(name).splitlines() if " points: " in ln][-1]
        measured += int(line.split(" points: ")[1].split(" measured")[0])
    assert measured == len(points)                # a point measured by one sweep only
    state = rig.check_cache()
    assert state["records"] == len(points) and not state["stale_tmp"], state
    rows = {}
    for out, name in (("oa", "a"), ("ob", "b")):
        for r in json.loads((work / out / f"{name}.json").read_text())["rows"]:
            assert r["status"] == "ok"
            rows.setdefault(r["width"], []).append(r["synth__area__um2"])
    assert all(len(set(v)) == 1 for v in rows.values()), rows
    ppa = json.loads((work / "p.json").read_text())
    assert ppa["area_um2"] == rows[9][0]
    print(json.dumps({"points": len(points), "yosys_runs": sum(synth.values()),
                      "sta_runs": sum(t["tool"] == "sta" for t in runs),
                      "sta_processes_per_key": sorted(len(v) for v in sta.values()),
                      "measured_by_sweeps": measured}))


# -- SIGTERM and kill -9 while a tool runs ------------------------------------------------------
def _started(rig: Rig, n: int):
    return lambda: sum(t["tool"] == "yosys" for t in rig.tools()) >= n


def _no_partial_entries(rig: Rig):
    state = rig.check_cache()
    assert state["records"] == 0 and state["results"] == 0 and state["netlists"] == 0, state
    return state


def test_sigterm_to_ppa_kills_the_tool_and_leaves_nothing(rig):
    """SIGTERM while Yosys runs (the wrapper holds it in a ``sleep``: a tool with a child):
    exit 143 with one line, the tool's whole process group gone, no entry or run folder."""
    p = rig.start(["ppa", "lzc", "-p", "width=6"], rig.tmp, "ppa", TCGEN_TOOL_DELAY="60")
    assert _wait(_started(rig, 1), p), rig.text("ppa")
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    assert rig.text("ppa") == "tcgen: terminated\n"
    rig.assert_no_survivors(within_s=2.0)
    state = _no_partial_entries(rig)
    assert not state["stale_tmp"] and not list((rig.ppa / "runs").glob("*")), state


def test_sigterm_and_kill_9_to_a_parallel_sweep(rig):
    """``-j 2`` with both workers inside a tool.  SIGTERM to the main process: exit 143, one
    line, workers and tools gone, nothing recorded.  ``kill -9`` of the main process: the
    kernel tells the workers (SIGTERM), which stop their tools the same way."""
    (rig.tmp / "s.toml").write_text(_spec_text([5, 6, 7]))
    for i, sig in enumerate((signal.SIGTERM, signal.SIGKILL)):
        p = rig.start(["sweep", "s.toml", "-o", "out", "-j", "2"], rig.tmp, f"sw{i}",
                      TCGEN_TOOL_DELAY="60")
        assert _wait(_started(rig, 2 * (i + 1)), p), rig.text(f"sw{i}")
        p.send_signal(sig)
        rc = p.wait(timeout=30)
        err = rig.text(f"sw{i}")
        if sig == signal.SIGTERM:
            assert rc == 128 + signal.SIGTERM and err.splitlines()[-1] == "tcgen: terminated"
            assert "Traceback" not in err, err
        else:
            assert rc == -signal.SIGKILL
        rig.assert_no_survivors(within_s=10.0)
        state = _no_partial_entries(rig)
        assert not state["stale_tmp"], state             # the workers cleaned up
    assert not list((rig.tmp / "out").glob("*"))          # no output written


def test_stopping_the_workers_ends_the_pool_thread_before_exit():
    """After the workers are stopped, the pool's manager thread has ended (its pipes closed):
    left running, it raced Python's exit hook and printed ``OSError: [Errno 9] Bad file
    descriptor`` after "tcgen: terminated" (a CI run of the test above; CPython gh-125451)."""
    from concurrent.futures import ProcessPoolExecutor

    from tcgen.sweep.engine import _stop_workers
    pool = ProcessPoolExecutor(max_workers=2)
    futs = [pool.submit(time.sleep, 30) for _ in range(3)]
    while not any(f.running() for f in futs):
        time.sleep(0.01)
    manager = pool._executor_manager_thread
    t0 = time.monotonic()
    _stop_workers(pool, grace_s=5.0)
    assert time.monotonic() - t0 < 10.0
    assert not manager.is_alive()


# -- corrupt entries and stale locks (in-process) -------------------------------------------------
@pytest.fixture
def private_flow_cache(tmp_path, monkeypatch):
    import tcgen.synth.liberty as liberty
    import tcgen.synth.ppa as ppa
    monkeypatch.setattr(ppa, "BUILD", tmp_path / "ppa")
    monkeypatch.setattr(liberty, "BUILD", tmp_path / "ppa")
    return tmp_path / "ppa"


def test_corrupt_flow_entries_are_measured_again(private_flow_cache):
    from tcgen.generate import verilog
    from tcgen.registry import get_unit
    from tcgen.synth.ppa import measure_verilog
    text = verilog("lzc", get_unit("lzc").params(width=5))
    r0 = measure_verilog(text, "lzc")
    key = r0["cache_key"]
    result = private_flow_cache / "results" / f"{key}.json"
    whole = result.read_text()
    synth_dir = Path(r0["netlist"]).parent
    for damage in ("truncate", "other key", "synth.json", "netlist"):
        if damage == "truncate":
            result.write_text(whole[: len(whole) // 2])
        elif damage == "other key":
            result.write_text(whole.replace(key, "0" * len(key)))
        else:
            result.unlink()
            if damage == "synth.json":
                meta = synth_dir / "synth.json"
                meta.write_text(meta.read_text()[:40])
            else:
                (synth_dir / "netlist.v").unlink()
        r = measure_verilog(text, "lzc")
        assert r["cached"] is False, damage                      # not read: measured again
        assert r["area_um2"] == r0["area_um2"] and r["cache_key"] == key
        assert r["runtime_s"]["synth_cached"] is (damage in ("truncate", "other key"))
        assert measure_verilog(text, "lzc")["cached"] is True    # and whole again
    assert not [d for d in synth_dir.parent.iterdir() if ".tmp" in d.name]


def test_store_reads_only_whole_records_of_its_key(tmp_path):
    store = Store(tmp_path)
    key = "a" * 24
    good = {"key": key, "status": "ok", "result": {"area_um2": 1.0}}
    store.put(key, good)
    assert store.get(key) == good
    failed = {"key": key, "status": "failed", "error": "ToolError: x"}
    store.put(key, failed)
    assert store.get(key) == failed
    text = json.dumps(good)
    for bad in (text[:-5], "", "[1, 2]", json.dumps({**good, "key": "b" * 24}),
                json.dumps({k: v for k, v in good.items() if k != "result"}),
                json.dumps({**good, "status": "running"}), "\0\0\0"):
        store.path(key).write_text(bad)
        assert store.get(key) is None, bad


def test_a_corrupt_record_is_measured_again_by_the_sweep(tmp_path, private_flow_cache):
    from tcgen.sweep import load, run
    spec = tmp_path / "s.toml"
    spec.write_text(_spec_text([5, 6]))
    s = load(spec)
    r1 = run(s, cache=tmp_path / "sweep")
    assert r1.counts == {"done": 2, "cached": 0, "failed": 0}
    victim = Store(tmp_path / "sweep").path(r1.rows[1]["key"])
    victim.write_text(victim.read_text()[:100])
    r2 = run(s, cache=tmp_path / "sweep")
    assert r2.counts == {"done": 1, "cached": 1, "failed": 0}
    assert [r["synth__area__um2"] for r in r2.rows] == [r["synth__area__um2"] for r in r1.rows]
    assert Store(tmp_path / "sweep").get(r1.rows[1]["key"]) is not None


def test_a_lock_whose_holder_was_killed_is_free(tmp_path):
    """``flock``: the kernel drops a lock when its holder dies, whatever it was doing."""
    path = tmp_path / "locks" / "k.lock"
    code = ("import sys, time; from tcgen.hw.files import locked\n"
            f"with locked({str(path)!r}):\n    print('held', flush=True); time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        with open(path, "a") as fh:            # held: a non-blocking attempt fails
            with pytest.raises(BlockingIOError):
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p.kill()
        p.wait()
        with open(path, "a") as fh:            # the holder killed: free at once
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()


# -- slow: a longer schedule on a bigger spec ---------------------------------------------------
@pytest.mark.slow
def test_slow_many_kills_and_concurrency(rig):
    """Ten kills (events, delays and -j 1 / 2 from a fixed seed) over ten points, then the
    resume compared with an uninterrupted run; figures printed for reports/faults.md."""
    widths = [4, 5, 6, 7, 9, 11, 13, 16, 20, 24]
    ref = _reference(rig, widths)

    def schedule(rng, left):             # an event that still comes: n within what is left
        what = rng.choice(("yosys", "sta", "record"))
        n = 1 if what == "record" else rng.randint(1, min(2, left))
        return what, n, rng.choice((1, 2))
    t0 = time.monotonic()
    got = _kill_schedule_then_resume(rig, widths, schedule, seed=1616)
    assert sum(k["killed"] for k in got["kills"]) >= 8, got["kills"]
    assert got["outputs"] == ref
    print(json.dumps({"schedule": got["kills"], "resume": got["resume"],
                      "resume_tools": got["resume_tools"],
                      "wall_s": round(time.monotonic() - t0, 1)}, indent=1))


#: a signal that arrives while a finalizer runs: Python would print "Exception ignored in
#: __del__" and drop the KeyboardInterrupt, and the command would run on to the end (seen in
#: `make test`: Ctrl-C during `tcgen generate --all` landed in Amaranth's MustUse.__del__).
#: ``worker``: the same for a sweep's pool worker, whose own handler turns its parent-death
#: SIGTERM into Terminated while it measures a point: dropped there, the worker measured on to
#: the point's end (a worker alive 15 s after its parent's kill -9, once in a full `make test`)
_FINALIZER_SCRIPT = textwrap.dedent("""
    import contextlib, os, signal, sys, time
    from tcgen.sweep import engine
    from tcgen.synth.tools import Terminated, signals_raise

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), int(sys.argv[1]))    # delivered inside this finalizer
            for _ in range(1000):
                pass

    if sys.argv[2] == "worker":
        engine._worker_init(os.getppid())
        engine._busy = True                           # measuring a point
        scope = contextlib.nullcontext()
    else:
        # a background job inherits SIGINT ignored (and signals_raise keeps it so): not here
        signal.signal(signal.SIGINT, signal.default_int_handler)
        scope = signals_raise()
    with scope:
        try:
            Finalized()
            time.sleep(2)
            print("carried on")
        except Terminated as e:
            print("terminated", e.exit_status)
        except KeyboardInterrupt:
            print("interrupted")
""")


def _finalizer_run(sig: int, where: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _FINALIZER_SCRIPT, str(int(sig)), where],
                          capture_output=True, text=True, timeout=60)


def test_a_pool_workers_sigterm_inside_a_finalizer_is_not_lost():
    p = _finalizer_run(signal.SIGTERM, "worker")
    assert p.stdout.strip() == "terminated 143", (p.stdout, p.stderr)
    assert "Exception ignored" not in p.stderr, p.stderr


@pytest.mark.parametrize("sig,want", [(signal.SIGINT, "interrupted"),
                                      (signal.SIGTERM, "terminated 143")])
def test_a_signal_inside_a_finalizer_is_not_lost(sig, want):
    p = _finalizer_run(sig, "main")
    assert p.stdout.strip() == want, (p.stdout, p.stderr)
    assert "Exception ignored" not in p.stderr, p.stderr
