"""File helpers shared by the CLI, the simulation harness and the PPA flow."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from pathlib import Path

__all__ = ["locked", "write_atomic", "write_all", "usable_dir", "check_writable",
           "StorageError", "IO_FAILURES", "PATH_REFUSALS", "io_failure", "build_root",
           "ENV_BUILD_DIR", "checkout"]

#: the environment variable that moves every build and cache folder of tcgen
ENV_BUILD_DIR = "TCGEN_BUILD_DIR"


def checkout() -> Path | None:
    """tcgen's own source checkout when tcgen runs from one (an editable install), else None
    (an installed wheel)."""
    root = Path(__file__).resolve().parents[1]           # <checkout>/hw/files.py
    pyproject = root / "pyproject.toml"
    if (root / "hw" / "spec.py").is_file() and pyproject.is_file() and \
            'name = "tcgen-hdl"' in pyproject.read_text(errors="replace"):
        return root
    return None


def build_root() -> Path:
    """The folder tcgen builds and caches in (absolute): ``TCGEN_BUILD_DIR`` if set; else the
    checkout's ``build/`` when tcgen runs from its checkout; else ``./build/tcgen`` under the
    current folder -- the user's project, never inside the installed package.  The harness's
    simulations (``sim/``), the flow cache (``ppa/``, unless ``TCGEN_PPA_CACHE``), Verilator's
    ccache (``ccache/``) live under it."""
    env = os.environ.get(ENV_BUILD_DIR)
    if env:
        return Path(env).absolute()
    root = checkout()
    return root / "build" if root is not None else Path.cwd().absolute() / "build" / "tcgen"

#: errors of the storage itself, never of the program: a full disk or quota, a failing device,
#: a file over the size limit.  The command line reports one as one line with exit status 1
#: (an I/O failure; tcgen.cli), wherever it happens.
IO_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})
#: a place the user chose that refuses writes (read-only, no permission): bad input, one line
#: with exit status 2 -- normally found before any work (:func:`check_writable`,
#: :func:`usable_dir`), and reported the same way where it is found only while writing
PATH_REFUSALS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


class StorageError(OSError):
    """A folder the user chose (or an environment variable names) that cannot be used: not a
    folder, not creatable, not writable.  Bad input: one line, exit status 2 (tcgen.cli)."""


def io_failure(e: BaseException) -> bool:
    """``e`` is a failure of the storage (:data:`IO_FAILURES`), not of the program."""
    return isinstance(e, OSError) and e.errno in IO_FAILURES


def usable_dir(path, what: str) -> Path:
    """``path`` as a folder this process can create files in, made if absent (with its parents);
    :class:`StorageError` naming ``what`` and the reason otherwise.  A probe file is written
    and removed: permissions alone do not tell a read-only mount or a full disk."""
    path = Path(path)
    shown = str(path)
    if path.exists() and not path.is_dir():
        raise StorageError(f"cannot use {what} {shown}: it is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".tcgen-write-test-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise StorageError(f"cannot use {what} {shown}: {e.strerror or e}") from None
    return path


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
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None:     # say which file (a full disk)
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def check_writable(path, what: str = "", *, folder: bool = False) -> Path:
    """Refuse, before any work and without creating anything, an output that could not be
    written (:class:`StorageError`): ``folder=False``, a file -- not an existing folder, device or
    FIFO, in an existing, writable folder; ``folder=True``, a folder -- an existing writable
    folder, or a name whose nearest existing ancestor is a writable folder."""
    path = Path(path)
    shown = f"{what} {path}" if what else str(path)
    if str(path) == "":
        raise StorageError(f"cannot write {what or 'an output'}: the name is empty")
    if folder:
        if path.exists():
            if not path.is_dir():
                raise StorageError(f"cannot write into {shown}: it is a file, not a folder")
            base = path
        else:
            base = next((a for a in path.absolute().parents if a.exists()), Path("/"))
            if not base.is_dir():
                raise StorageError(f"cannot write into {shown}: {base} is a file, not a folder")
    else:
        if str(path).endswith(("/", os.sep)) or path.is_dir():
            raise StorageError(f"cannot write {shown}: that names a folder; give a file name")
        if path.exists() and not path.is_file():
            raise StorageError(f"cannot write {shown}: not a regular file (a device, FIFO or "
                               "socket); write to a file, or use '-' for stdout where offered")
        base = path.parent if str(path.parent) else Path(".")
        if not base.is_dir():
            raise StorageError(f"cannot write {shown}: folder {base} does not exist")
    if not os.access(base, os.W_OK | os.X_OK):
        try:                             # the reason in the system's words (read-only, denied)
            os.close(os.open(base, os.O_RDONLY))
            reason = ("read-only file system" if os.statvfs(base).f_flag & os.ST_RDONLY
                      else "permission denied")
        except OSError as e:
            reason = e.strerror or str(e)
        raise StorageError(f"cannot write {'into ' if folder else ''}{shown}: {base}: {reason}")
    return path


def write_all(items) -> list[Path]:
    """Write several files as one: ``items`` is ``{path: str | bytes}`` (or pairs).  Every file
    is first written in full to a temporary name in its own folder; only when all are written
    are they renamed into place.  A failure (a full disk) removes the temporaries and raises:
    the previous files, and their absence, stay as they were -- all or nothing.  Folders must
    exist.  Returns the paths."""
    items = list(items.items() if isinstance(items, dict) else items)
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in items:
            path = Path(path)
            parent = path.parent if str(path.parent) else Path(".")
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as fh:
                fh.write(data)
            os.chmod(tmp, 0o644)
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException as e:
        for tmp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None and temps:
            raise OSError(e.errno, e.strerror, str(temps[-1][1])) from e
        raise
    return [Path(p) for p, _ in items]
