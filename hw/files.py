"""File helpers shared by the CLI, the simulation harness and the PPA flow."""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path

__all__ = ["locked", "write_atomic"]


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive advisory lock on ``path`` (safe across processes and pytest-xdist workers)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def write_atomic(path: Path, data: str | bytes, *, make_parents: bool = True):
    """Write ``data`` through a temporary file in the same folder, then rename: readers see the
    old file or the whole new one, never a partial one.  Raises ``OSError`` on failure."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if make_parents:
        parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
