"""Helpers of the command-line tests (tb/test_fuzz.py, tb/test_robustness.py,
tb/test_front_door.py): ``tcgen.cli.main`` in this process, and the error contract's checks."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

from tcgen import cli

__all__ = ["run_main", "assert_bad_input", "files_in"]


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """``tcgen.cli.main(argv)`` in this process: (status, stdout, stderr).  An exception that is
    not bad input propagates (a bug: the test fails with its traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as e:          # --help, --version: argparse's own exit
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def assert_bad_input(rc: int, err: str, *, needle: str | None = None):
    """Exit 2, one plain line on stderr (``tcgen...``), no traceback."""
    assert rc == 2, (rc, err)
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    line = err[:-1]
    assert line.startswith("tcgen") and "Traceback" not in line, line
    assert line.isprintable(), repr(line)
    if needle is not None:
        assert needle in line, line


def files_in(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()
